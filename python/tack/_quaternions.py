"""Quaternions as Warp spells them, for kernels: four components (x, y, z,
w) with w the real part; `tack.quatf` and `tack.quatd` are their dtypes
(arrays of rotations), and in kernels `q * r` of two quaternions is
Hamilton's product (src/lower/quaternions.c).  Each function is a device
function written in the kernel language (`tack.quat_rotate(q, v)` inlines
it); the type-generic constructor tack.quat keeps f32 quaternions f32 and
f64 ones f64."""
import math

from ._tack import func as _device, quatd, quatf  # noqa: F401  (tack.quatf, tack.quatd)


@_device
def quat_identity():
    """The rotation by nothing, (0, 0, 0, 1), of the kernel's float type."""
    return tack.quat(0.0, 0.0, 0.0, 1.0)


@_device
def quat_from_axis_angle(axis, angle):
    """The rotation by angle (radians) about axis (any length but zero)."""
    n = tack.normalize(axis) * math.sin(angle * 0.5)
    return tack.quat(n.x, n.y, n.z, math.cos(angle * 0.5))


@_device
def quat_to_axis_angle(q):
    """(axis, angle) of the unit quaternion q; the axis is x for no rotation."""
    s = math.sqrt(q.x * q.x + q.y * q.y + q.z * q.z)
    angle = 2.0 * math.atan2(s, q.w)
    if s > 0.0:
        return tack.vec3(q.x / s, q.y / s, q.z / s), angle
    return tack.vec3(q.w * 0.0 + 1.0, q.w * 0.0, q.w * 0.0), angle


@_device
def quat_rpy(roll, pitch, yaw):
    """The rotation by roll about x, then pitch about y, then yaw about z."""
    cr = math.cos(roll * 0.5)
    sr = math.sin(roll * 0.5)
    cp = math.cos(pitch * 0.5)
    sp = math.sin(pitch * 0.5)
    cy = math.cos(yaw * 0.5)
    sy = math.sin(yaw * 0.5)
    return tack.quat(sr * cp * cy - cr * sp * sy, cr * sp * cy + sr * cp * sy,
                    cr * cp * sy - sr * sp * cy, cr * cp * cy + sr * sp * sy)


@_device
def quat_mul(a, b):
    """The rotation b, then a (Hamilton's product a b)."""
    return tack.quat(a.w * b.x + b.w * a.x + a.y * b.z - a.z * b.y,
                    a.w * b.y + b.w * a.y + a.z * b.x - a.x * b.z,
                    a.w * b.z + b.w * a.z + a.x * b.y - a.y * b.x,
                    a.w * b.w - a.x * b.x - a.y * b.y - a.z * b.z)


@_device
def quat_inverse(q):
    """q's inverse: its conjugate over its squared length (the conjugate
    itself for a unit quaternion)."""
    s = 1.0 / (q.x * q.x + q.y * q.y + q.z * q.z + q.w * q.w)
    return tack.quat(-q.x * s, -q.y * s, -q.z * s, q.w * s)


@_device
def quat_rotate(q, v):
    """v rotated by the unit quaternion q."""
    u = tack.vec3(q.x, q.y, q.z)
    return (2.0 * tack.dot(u, v)) * u + (q.w * q.w - tack.dot(u, u)) * v + (2.0 * q.w) * tack.cross(u, v)


@_device
def quat_rotate_inv(q, v):
    """v rotated by the inverse of the unit quaternion q."""
    u = tack.vec3(-q.x, -q.y, -q.z)
    return (2.0 * tack.dot(u, v)) * u + (q.w * q.w - tack.dot(u, u)) * v + (2.0 * q.w) * tack.cross(u, v)


@_device
def quat_to_matrix(q):
    """The 3x3 rotation matrix of the unit quaternion q."""
    x = q.x
    y = q.y
    z = q.z
    w = q.w
    return tack.matrix_from_rows(
        tack.vec3(1.0 - 2.0 * (y * y + z * z), 2.0 * (x * y - z * w), 2.0 * (x * z + y * w)),
        tack.vec3(2.0 * (x * y + z * w), 1.0 - 2.0 * (x * x + z * z), 2.0 * (y * z - x * w)),
        tack.vec3(2.0 * (x * z - y * w), 2.0 * (y * z + x * w), 1.0 - 2.0 * (x * x + y * y)))


@_device
def quat_from_matrix(m):
    """The unit quaternion of the 3x3 rotation matrix m (Shepperd's method:
    the largest of w, x, y, z is found first, for accuracy)."""
    t = m[0, 0] + m[1, 1] + m[2, 2]
    if t > 0.0:
        s = math.sqrt(t + 1.0) * 2.0
        return tack.quat((m[2, 1] - m[1, 2]) / s, (m[0, 2] - m[2, 0]) / s,
                        (m[1, 0] - m[0, 1]) / s, 0.25 * s)
    if m[0, 0] > m[1, 1] and m[0, 0] > m[2, 2]:
        s = math.sqrt(1.0 + m[0, 0] - m[1, 1] - m[2, 2]) * 2.0
        return tack.quat(0.25 * s, (m[0, 1] + m[1, 0]) / s, (m[0, 2] + m[2, 0]) / s,
                        (m[2, 1] - m[1, 2]) / s)
    if m[1, 1] > m[2, 2]:
        s = math.sqrt(1.0 + m[1, 1] - m[0, 0] - m[2, 2]) * 2.0
        return tack.quat((m[0, 1] + m[1, 0]) / s, 0.25 * s, (m[1, 2] + m[2, 1]) / s,
                        (m[0, 2] - m[2, 0]) / s)
    s = math.sqrt(1.0 + m[2, 2] - m[0, 0] - m[1, 1]) * 2.0
    return tack.quat((m[0, 2] + m[2, 0]) / s, (m[1, 2] + m[2, 1]) / s, 0.25 * s,
                    (m[1, 0] - m[0, 1]) / s)


@_device
def quat_slerp(a, b, t):
    """The rotation a fraction t of the way from a to b along the shorter
    arc (unit quaternions; nearly equal ones are interpolated linearly)."""
    d = a.x * b.x + a.y * b.y + a.z * b.z + a.w * b.w
    c = b
    if d < 0.0:
        c = -b
        d = -d
    if d > 0.9995:
        r = a + t * (c - a)
        return r / math.sqrt(r.x * r.x + r.y * r.y + r.z * r.z + r.w * r.w)
    theta = math.acos(d)
    s = math.sin(theta)
    return (math.sin((1.0 - t) * theta) / s) * a + (math.sin(t * theta) / s) * c


QUATERNION_FUNCTIONS = ("quat_identity", "quat_from_axis_angle", "quat_to_axis_angle", "quat_rpy",
                        "quat_mul", "quat_inverse", "quat_rotate", "quat_rotate_inv",
                        "quat_to_matrix", "quat_from_matrix", "quat_slerp")

import tack  # noqa: E402  (the functions' bodies name tack.*; resolved when a kernel inlines them)
