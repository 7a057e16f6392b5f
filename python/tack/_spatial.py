"""Warp's spatial vectors, for kernels: a 6-vector (w, v), its angular part
w (the top three components) then its linear part v (the bottom three), as
Featherstone's articulated-body codes use them (warp.sim).  So
`tack.spatial_vectorf` is `tack.vector(6, tack.f32)` and an array of them is
an array of 6-vectors (NumPy shape (n, 6)).  Each function is a device
function written in the kernel language, f32 or f64 as its arguments are."""
from ._tack import func as _device, vector as _vector, f32 as _f32, f64 as _f64

spatial_vectorf = _vector(6, _f32)
spatial_vectord = _vector(6, _f64)


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


SPATIAL_FUNCTIONS = ("spatial_vector", "spatial_top", "spatial_bottom", "spatial_dot",
                     "spatial_cross", "spatial_cross_dual")

import tack  # noqa: E402  (the functions' bodies name tack.*; resolved when a kernel inlines them)
