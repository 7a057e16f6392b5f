"""Taichi's ti.math functions of GLSL (mix, fract, distance, reflect,
refract), its 2-D rotation and its complex numbers held in 2-vectors
(cmul, cdiv, cconj, cinv, cexp, clog, csqrt, cpow: x the real part, y the
imaginary one), for kernels: device functions written in the kernel
language, on scalars or vectors component by component where that has a
meaning, of the arguments' type."""
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


@_device
def rotation2d(ang):
    """The 2x2 matrix rotating by ang radians counterclockwise."""
    c = math.cos(ang)
    s = math.sin(ang)
    return tack.matrix_from_rows(tack.vec2(c, -s), tack.vec2(s, c))


@_device
def cmul(a, b):
    """The complex product of 2-vectors (real, imaginary)."""
    return tack.vec2(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x)


@_device
def cconj(a):
    """The complex conjugate of a 2-vector (real, imaginary)."""
    return tack.vec2(a.x, -a.y)


@_device
def cdiv(a, b):
    """The complex quotient a / b of 2-vectors (real, imaginary)."""
    d = b.x * b.x + b.y * b.y
    return tack.vec2((a.x * b.x + a.y * b.y) / d, (a.y * b.x - a.x * b.y) / d)


@_device
def cinv(a):
    """The complex inverse 1 / a of a 2-vector (real, imaginary)."""
    d = a.x * a.x + a.y * a.y
    return tack.vec2(a.x / d, -a.y / d)


@_device
def cexp(a):
    """The complex exponential of a 2-vector (real, imaginary)."""
    r = math.exp(a.x)
    return tack.vec2(r * math.cos(a.y), r * math.sin(a.y))


@_device
def clog(a):
    """The principal complex logarithm of a 2-vector (real, imaginary)."""
    return tack.vec2(math.log(math.hypot(a.x, a.y)), math.atan2(a.y, a.x))


@_device
def csqrt(a):
    """The principal complex square root of a 2-vector (real, imaginary)."""
    r = math.sqrt(math.hypot(a.x, a.y))
    t = 0.5 * math.atan2(a.y, a.x)
    return tack.vec2(r * math.cos(t), r * math.sin(t))


@_device
def cpow(a, n):
    """a ** n of a 2-vector (real, imaginary) and a real n: exp(n log a)."""
    r = math.pow(math.hypot(a.x, a.y), n)
    t = n * math.atan2(a.y, a.x)
    return tack.vec2(r * math.cos(t), r * math.sin(t))


SHADING_FUNCTIONS = ("mix", "fract", "distance", "reflect", "refract", "rotation2d", "cmul",
                     "cconj", "cdiv", "cinv", "cexp", "clog", "csqrt", "cpow")

import tack  # noqa: E402  (the functions' bodies name tack.*; resolved when a kernel inlines them)
