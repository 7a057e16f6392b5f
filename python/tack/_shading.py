"""Taichi's ti.math functions of GLSL (mix, fract, distance, reflect,
refract), for kernels: device functions written in the kernel language, on
scalars or vectors component by component where that has a meaning, of the
arguments' type."""
import math

from ._tack import func as _device


@_device
def mix(x, y, a):
    """x * (1 - a) + y * a (GLSL's and Taichi's mix; tack.lerp is x + a * (y - x))."""
    return x * (1.0 - a) + y * a


@_device
def fract(x):
    """x - floor(x), component by component: in [0, 1) (GLSL's and Taichi's fract)."""
    return x - math.floor(x)


@_device
def distance(a, b):
    """The Euclidean distance between two points (vectors): length(a - b)."""
    return tack.length(a - b)


@_device
def reflect(x, n):
    """x reflected about the plane of unit normal n: x - 2 dot(n, x) n."""
    return x - 2.0 * tack.dot(n, x) * n


@_device
def refract(x, n, eta):
    """The refraction of the unit direction x at the unit normal n for the ratio
    of indices eta (GLSL's refract); the zero vector on total internal reflection."""
    d = tack.dot(n, x)
    k = 1.0 - eta * eta * (1.0 - d * d)
    r = x * 0.0
    if k >= 0.0:
        r = eta * x - (eta * d + math.sqrt(k)) * n
    return r


SHADING_FUNCTIONS = ("mix", "fract", "distance", "reflect", "refract")

import tack  # noqa: E402  (the functions' bodies name tack.*; resolved when a kernel inlines them)
