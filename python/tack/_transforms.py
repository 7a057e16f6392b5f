"""Transforms as Warp spells them, for kernels: a rigid transform is a
7-vector (px, py, pz, qx, qy, qz, qw), the translation p then the rotation
quaternion q (w last), so `tack.transformf` is `tack.vector(7, tack.f32)`
and an array of transforms is an array of 7-vectors (NumPy shape (n, 7)).
Applying t = (p, q) to a point x gives rotate(q, x) + p.  Each function is
a device function written in the kernel language; the type-generic
constructors keep f32 transforms f32 and f64 ones f64."""
from ._tack import func as _device, vector as _vector, f32 as _f32, f64 as _f64

transformf = _vector(7, _f32)
transformd = _vector(7, _f64)


@_device
def transform(p, q):
    """The transform that rotates by the quaternion q, then moves by p."""
    return tack.vector(p.x, p.y, p.z, q.x, q.y, q.z, q.w)


@_device
def transform_identity():
    """No move and no rotation, of the kernel's float type."""
    return tack.vector(0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0)


@_device
def transform_get_translation(t):
    """t's translation p, a 3-vector."""
    return tack.vec3(t[0], t[1], t[2])


@_device
def transform_get_rotation(t):
    """t's rotation q, a quaternion (w last)."""
    return tack.quat(t[3], t[4], t[5], t[6])


@_device
def transform_point(t, x):
    """The point x moved by t: rotated, then translated."""
    return tack.quat_rotate(tack.quat(t[3], t[4], t[5], t[6]), x) + tack.vec3(t[0], t[1], t[2])


@_device
def transform_vector(t, v):
    """The direction v rotated by t (no translation)."""
    return tack.quat_rotate(tack.quat(t[3], t[4], t[5], t[6]), v)


@_device
def transform_multiply(a, b):
    """b, then a: (a.p + rotate(a.q, b.p), a.q b.q)."""
    qa = tack.quat(a[3], a[4], a[5], a[6])
    p = tack.vec3(a[0], a[1], a[2]) + tack.quat_rotate(qa, tack.vec3(b[0], b[1], b[2]))
    q = tack.quat_mul(qa, tack.quat(b[3], b[4], b[5], b[6]))
    return tack.vector(p.x, p.y, p.z, q.x, q.y, q.z, q.w)


@_device
def transform_inverse(t):
    """The transform undoing t: (-rotate(q^-1, p), q^-1)."""
    qi = tack.quat_inverse(tack.quat(t[3], t[4], t[5], t[6]))
    p = -tack.quat_rotate(qi, tack.vec3(t[0], t[1], t[2]))
    return tack.vector(p.x, p.y, p.z, qi.x, qi.y, qi.z, qi.w)


TRANSFORM_FUNCTIONS = ("transform", "transform_identity", "transform_get_translation",
                       "transform_get_rotation", "transform_point", "transform_vector",
                       "transform_multiply", "transform_inverse")

import tack  # noqa: E402  (the functions' bodies name tack.*; resolved when a kernel inlines them)
