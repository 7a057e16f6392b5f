"""Warp's spatial vectors, for kernels: a 6-vector (w, v), its angular part
w (the top three components) then its linear part v (the bottom three), as
Featherstone's articulated-body codes use them (warp.sim).  So
`tack.spatial_vectorf` is `tack.vector(6, tack.f32)` and an array of them is
an array of 6-vectors (NumPy shape (n, 6)); `tack.spatial_matrixf` is
`tack.matrix(6, 6, tack.f32)`.  Each function is a device
function written in the kernel language, f32 or f64 as its arguments are."""
from ._tack import func as _device, vector as _vector, matrix as _matrix, f32 as _f32, f64 as _f64

spatial_vectorf = _vector(6, _f32)
spatial_vectord = _vector(6, _f64)
spatial_matrixf = _matrix(6, 6, _f32)
spatial_matrixd = _matrix(6, 6, _f64)


@_device
def spatial_vector(w, v):
    """The spatial vector of the 3-vectors w (top) and v (bottom)."""
    return tack.vector(w.x, w.y, w.z, v.x, v.y, v.z)


@_device
def spatial_top(a):
    """The top (angular) 3-vector of a spatial vector."""
    return tack.vec3(a[0], a[1], a[2])


@_device
def spatial_bottom(a):
    """The bottom (linear) 3-vector of a spatial vector."""
    return tack.vec3(a[3], a[4], a[5])


@_device
def spatial_dot(a, b):
    """The dot product of two spatial vectors (all six components)."""
    return tack.dot(a, b)


@_device
def spatial_cross(a, b):
    """The motion cross product: (wa x wb, va x wb + wa x vb)."""
    wa = tack.vec3(a[0], a[1], a[2])
    va = tack.vec3(a[3], a[4], a[5])
    wb = tack.vec3(b[0], b[1], b[2])
    vb = tack.vec3(b[3], b[4], b[5])
    w = tack.cross(wa, wb)
    v = tack.cross(va, wb) + tack.cross(wa, vb)
    return tack.vector(w.x, w.y, w.z, v.x, v.y, v.z)


@_device
def spatial_cross_dual(a, b):
    """The force cross product: (wa x wb + va x vb, wa x vb)."""
    wa = tack.vec3(a[0], a[1], a[2])
    va = tack.vec3(a[3], a[4], a[5])
    wb = tack.vec3(b[0], b[1], b[2])
    vb = tack.vec3(b[3], b[4], b[5])
    w = tack.cross(wa, wb) + tack.cross(va, vb)
    v = tack.cross(wa, vb)
    return tack.vector(w.x, w.y, w.z, v.x, v.y, v.z)


@_device
def spatial_adjoint(r, s):
    """The 6x6 block matrix [[r, 0], [s, r]] of two 3x3 matrices: with
    r = R and s = skew(p) R of a transform (R, p) it maps twists."""
    return tack.matrix_from_rows(
        tack.vector(r[0, 0], r[0, 1], r[0, 2], 0.0, 0.0, 0.0),
        tack.vector(r[1, 0], r[1, 1], r[1, 2], 0.0, 0.0, 0.0),
        tack.vector(r[2, 0], r[2, 1], r[2, 2], 0.0, 0.0, 0.0),
        tack.vector(s[0, 0], s[0, 1], s[0, 2], r[0, 0], r[0, 1], r[0, 2]),
        tack.vector(s[1, 0], s[1, 1], s[1, 2], r[1, 0], r[1, 1], r[1, 2]),
        tack.vector(s[2, 0], s[2, 1], s[2, 2], r[2, 0], r[2, 1], r[2, 2]))


@_device
def transform_twist(t, x):
    """The twist x = (w, v) seen from the frame of t = (p, q):
    (rotate(q, w), rotate(q, v) + p x rotate(q, w))."""
    q = tack.quat(t[3], t[4], t[5], t[6])
    w = tack.quat_rotate(q, tack.vec3(x[0], x[1], x[2]))
    v = tack.quat_rotate(q, tack.vec3(x[3], x[4], x[5])) + tack.cross(tack.vec3(t[0], t[1], t[2]), w)
    return tack.vector(w.x, w.y, w.z, v.x, v.y, v.z)


@_device
def transform_wrench(t, x):
    """The wrench x = (tau, f) seen from the frame of t = (p, q):
    (rotate(q, tau) + p x rotate(q, f), rotate(q, f))."""
    q = tack.quat(t[3], t[4], t[5], t[6])
    f = tack.quat_rotate(q, tack.vec3(x[3], x[4], x[5]))
    tau = tack.quat_rotate(q, tack.vec3(x[0], x[1], x[2])) + tack.cross(tack.vec3(t[0], t[1], t[2]), f)
    return tack.vector(tau.x, tau.y, tau.z, f.x, f.y, f.z)


SPATIAL_FUNCTIONS = ("spatial_vector", "spatial_top", "spatial_bottom", "spatial_dot",
                     "spatial_cross", "spatial_cross_dual", "spatial_adjoint", "transform_twist",
                     "transform_wrench")

import tack  # noqa: E402  (the functions' bodies name tack.*; resolved when a kernel inlines them)
