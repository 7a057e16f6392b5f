"""Vector and matrix functions (Warp's and Taichi's spellings): unrolled
scalar code inside kernels (src/lower/vector_builtins.c), NumPy outside
them, on arrays whose last axis (two for matrices) holds the components."""
import numpy as _np

_NAMES = ("cross", "length", "length_sq", "normalize", "dot", "ddot", "trace", "diag",
          "get_diag", "skew", "transpose", "sign", "clamp", "lerp", "smoothstep", "step",
          "min", "max", "abs", "cw_mul", "cw_div", "matrix_from_rows", "matrix_from_cols",
          "argmin", "argmax", "vec2", "vec3", "vec4", "quat", "sum", "where", "select")


def cross(a, b):
    """The cross product of two 3-vectors (of two 2-vectors: the scalar a.x*b.y - a.y*b.x)."""
    return _np.cross(a, b)


def length(v):
    """The Euclidean length of a vector."""
    return _np.sqrt(_np.sum(_np.square(v), axis=-1))


def length_sq(v):
    """The squared length of a vector."""
    return _np.sum(_np.square(v), axis=-1)


def normalize(v):
    """v / length(v); the zero vector stays zero (as Warp's wp.normalize)."""
    v = _np.asarray(v)
    n = length(v)[..., None]
    with _np.errstate(invalid="ignore", divide="ignore"):
        return _np.where(n > 0, v / _np.where(n > 0, n, 1), v * 0)


def dot(a, b):
    """The dot product of two vectors."""
    return _np.sum(_np.multiply(a, b), axis=-1)


def ddot(a, b):
    """The double dot product of two matrices: the sum of a[i, j] * b[i, j]."""
    return _np.sum(_np.multiply(a, b), axis=(-2, -1))


def trace(m):
    """The sum of a square matrix's diagonal."""
    return _np.trace(m, axis1=-2, axis2=-1)


def diag(v):
    """The square matrix with v on its diagonal."""
    v = _np.asarray(v)
    return v[..., :, None] * _np.eye(v.shape[-1], dtype=v.dtype)


def get_diag(m):
    """The diagonal of a square matrix, as a vector."""
    return _np.diagonal(m, axis1=-2, axis2=-1).copy()


def skew(v):
    """The 3x3 matrix s with s @ u == cross(v, u)."""
    x, y, z = (_np.asarray(v)[..., k] for k in range(3))
    o = _np.zeros_like(x)
    return _np.stack([_np.stack([o, -z, y], -1), _np.stack([z, o, -x], -1),
                      _np.stack([-y, x, o], -1)], -2)


def transpose(m):
    """The transpose of a matrix."""
    return _np.swapaxes(m, -2, -1)


def sign(x):
    """-1 where x < 0, else 1 (Warp's wp.sign: 0 gives 1), element-wise."""
    x = _np.asarray(x)
    return _np.where(x < 0, -1, 1).astype(x.dtype)


def clamp(x, lo, hi):
    """min(max(x, lo), hi), element-wise."""
    return _np.minimum(_np.maximum(x, lo), hi)


def lerp(a, b, t):
    """a + t * (b - a), element-wise."""
    return _np.add(a, _np.multiply(t, _np.subtract(b, a)))


def smoothstep(e0, e1, x):
    """The cubic Hermite step from 0 at e0 to 1 at e1, clamped, element-wise."""
    t = _np.clip((_np.subtract(x, e0)) / _np.subtract(e1, e0), 0, 1)
    return t * t * (3 - 2 * t)


def step(*args):
    """step(x): 1 where x < 0, else 0 (Warp); step(edge, x): 0 where x < edge, else 1 (Taichi)."""
    if len(args) == 1:
        x = _np.asarray(args[0])
        return _np.where(x < 0, 1, 0).astype(x.dtype)
    edge, x = args
    x = _np.asarray(x)
    return _np.where(x < edge, 0, 1).astype(x.dtype)


def min(*args):
    """The element-wise minimum of several values; of one vector, its least component."""
    if len(args) == 1:
        return _np.min(args[0])
    out = args[0]
    for a in args[1:]:
        out = _np.minimum(out, a)
    return out


def max(*args):
    """The element-wise maximum of several values; of one vector, its greatest component."""
    if len(args) == 1:
        return _np.max(args[0])
    out = args[0]
    for a in args[1:]:
        out = _np.maximum(out, a)
    return out


def abs(x):
    """The element-wise absolute value."""
    return _np.abs(x)


def cw_mul(a, b):
    """The element-wise product."""
    return _np.multiply(a, b)


def cw_div(a, b):
    """The element-wise quotient."""
    return _np.divide(a, b)


def matrix_from_rows(*rows):
    """The matrix whose rows are the given vectors."""
    return _np.stack(rows, -2)


def matrix_from_cols(*cols):
    """The matrix whose columns are the given vectors."""
    return _np.stack(cols, -1)


def argmin(v):
    """The index of a vector's least component (the first of equals)."""
    return int(_np.argmin(v))


def argmax(v):
    """The index of a vector's greatest component (the first of equals)."""
    return int(_np.argmax(v))


def _generic(n):
    def make(*args):
        if not args:
            return _np.zeros(n)
        if len(args) == 1:
            a = _np.asarray(args[0])
            return a.copy() if a.ndim == 1 else _np.full(n, a)
        return _np.array(args)
    make.__name__ = make.__qualname__ = "vec%d" % n
    make.__doc__ = ("A %d-component vector whose type follows its arguments' (tack.vec%d(a, ...),"
                    " tack.vec%d(s), tack.vec%d()), as Taichi's ti.Vector." % (n, n, n, n))
    return make


vec2, vec3, vec4 = _generic(2), _generic(3), _generic(4)
quat = _generic(4)
quat.__name__ = quat.__qualname__ = "quat"
quat.__doc__ = ("A quaternion (x, y, z, w), w the real part, whose type follows its arguments' "
                "(Warp's wp.quat); in kernels two multiply as Hamilton's product.")


def sum(v):
    """The sum of a vector's (a matrix's) components."""
    return _np.sum(v)


def where(cond, value_if_true, value_if_false):
    """value_if_true where cond holds, else value_if_false (Warp's wp.where; NumPy's np.where)."""
    return _np.where(cond, value_if_true, value_if_false)


def select(cond, value_if_false, value_if_true):
    """Warp's older wp.select: value_if_FALSE comes first (tack.where is the other order)."""
    return _np.where(cond, value_if_true, value_if_false)
