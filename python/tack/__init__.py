"""Tack: compute kernels written as decorated Python functions.

The work is done by the C extension ``tack._tack`` (a client of libtack's C
API); this file only re-exports it and adds decorator sugar.
"""
import atexit as _atexit
import builtins as _builtins
import itertools as _itertools
import math as _pymath
import sys as _sys
import time as _time
import types as _types

from . import _tack
from . import cache  # noqa: F401  (tack.cache.load_bundle)
from . import autodiff  # noqa: F401  (tack.Tape, requires_grad)
from .autodiff import Scalar, Tape, ones, stop_gradient  # noqa: F401
from . import cuda, hip, level_zero, metal, opencl  # noqa: F401  (tack.cuda.compile, ...)
from ._vectorize import vectorize  # noqa: F401  (@tack.vectorize, Numba's ufunc builder)
from ._tack import (  # noqa: F401
    Array, CompileError, Device, Kernel, Texture3D, dtype, Stream, Event,
    bool_, i8, i16, i32, i64, u8, u16, u32, u64, f32, f64, f16,
    vector, matrix, vec2f, vec3f, vec4f, vec2d, vec3d, vec4d, vec2i, vec3i, vec4i,
    mat22f, mat33f, mat44f, mat22d, mat33d, mat44d,
    complex64, complex128,
    array, asarray, copyto, empty, from_dlpack, zeros,
    device, get_default_device, set_default_device, get_num_threads, set_num_threads,
    constant, device_class, stats, get_debug, set_debug, synchronize, seed, precompile,
    __version__,
)

# @tack.struct record types; zeros/empty/array/asarray/copyto take them.
from ._structs import struct  # noqa: E402
from . import _structs  # noqa: E402
_structs.wrap_creators(globals())

# Disk-cache entries still being made (OpenCL binaries) are written before
# the interpreter's finalization frees what drivers hold.
_atexit.register(_tack._disk_cache_flush)

# The tiered JIT (TACK_JIT): waits until the optimized builds are swapped in.
_jit_wait = _tack._jit_wait

# Lanes in a workgroup (tack.shared, tack.barrier(), tack.local_index()).
WORKGROUP = 256


def _in_kernels_only(name, doc):
    def f(*args):
        raise RuntimeError("tack.%s() works inside kernels only (docs/language.md)" % name)
    f.__name__ = f.__qualname__ = name
    f.__doc__ = doc + "  Inside kernels only."
    return f


shared = _in_kernels_only("shared", "tack.shared(shape, dtype): an array one workgroup shares.")
local = _in_kernels_only("local", "tack.local(shape, dtype): a zeroed array of the iteration's own.")
barrier = _in_kernels_only("barrier", "tack.barrier(): waits for every lane of the workgroup.")
local_index = _in_kernels_only("local_index", "tack.local_index(): the lane in its workgroup.")
group_index = _in_kernels_only("group_index", "tack.group_index(): the workgroup's index.")
rng = _in_kernels_only("rng", "tack.rng(seed, i): a random generator state for iteration i.")
uniform = _in_kernels_only("uniform", "tack.uniform(rng): a number in [0, 1); advances rng.")
normal = _in_kernels_only("normal", "tack.normal(rng): a standard normal number; advances rng.")
randint = _in_kernels_only("randint", "tack.randint(rng, lo, hi): an integer in [lo, hi); "
                           "advances rng.")
# Warp's spellings of the same generator
rand_init = _in_kernels_only("rand_init", "tack.rand_init(seed[, offset]): Warp's wp.rand_init, "
                             "a generator state as tack.rng(seed, offset).")
randf = _in_kernels_only("randf", "tack.randf(rng[, lo, hi]): Warp's wp.randf, a number in "
                         "[0, 1) (or [lo, hi)); advances rng.")
randn = _in_kernels_only("randn", "tack.randn(rng): Warp's wp.randn, a standard normal number; "
                         "advances rng.")
randi = _in_kernels_only("randi", "tack.randi(rng[, lo, hi]): Warp's wp.randi, an int32 (or an "
                         "integer in [lo, hi)); advances rng.")
tid = _in_kernels_only("tid", "i = tack.tid() (i, j = tack.tid()): this thread's index in a launch "
                       "made by tack.launch(k, dim=...), Warp's wp.tid(); the kernel then has no "
                       "launch loop.")


_KERNEL_OPTIONS = ("source", "cache", "debug")


def _refuse_unknown(what, options, known):
    unknown = sorted(set(options) - set(known))
    if unknown:
        raise TypeError("%s() got unknown option%s %s (it takes %s)" % (
            what, "s" if len(unknown) > 1 else "", ", ".join(repr(u) for u in unknown),
            ", ".join(k + "=" for k in known)))


def kernel(fn=None, **options):
    """Compiles ``fn`` as a kernel: ``@tack.kernel``, or with options
    ``@tack.kernel(cache=False, debug=True, source=text)``.

    source: the function's text when Python keeps none (``exec``,
    ``python -c``); errors then name lines of that text.  cache=False keeps
    this kernel out of the disk cache.  debug=True bounds-checks this kernel
    (False: never), whatever ``tack.set_debug`` says."""
    _refuse_unknown("tack.kernel", options, _KERNEL_OPTIONS)
    if fn is None:
        return lambda f: _tack.kernel(f, **options)
    return _tack.kernel(fn, **options)


def func(f=None, **options):
    """Marks ``f`` as a device function kernels may call: ``@tack.func``,
    or ``@tack.func(source=text)`` when Python keeps no text for it."""
    _refuse_unknown("tack.func", options, ("source",))
    if f is None:
        return lambda g: _tack.func(g, **options)
    return _tack.func(f, **options)


def launch(kernel, dim, inputs=(), outputs=(), device=None):
    """Warp's launch: ``tack.launch(k, dim=n, inputs=[x, y], outputs=[out])``
    runs a kernel whose body assigns ``i = tack.tid()`` (``i, j =
    tack.tid()`` with ``dim=(n, m)``, up to three) over that many threads,
    the arguments being ``inputs`` then ``outputs`` in the kernel's
    parameter order; it returns what the kernel returns.  ``device``, when
    given, must be where the call runs: the device of its ``tack.Array``
    arguments, or with NumPy arrays only the default device."""
    try:
        dims = kernel._thread_dims()
    except AttributeError:
        raise TypeError("tack.launch: the first argument is a @tack.kernel, not %s"
                        % type(kernel).__name__) from None
    # the common case first, cheaply: one int extent for a 1-D launch
    if type(dim) is int and dims == 1 and dim >= 0 and device is None:
        return kernel(*inputs, *outputs, dim)
    if not dims:
        raise TypeError("tack.launch: kernel '%s' loops over its own launch (for i in range(...)); "
                        "call it as %s(...), or assign i = tack.tid() instead of the loop"
                        % (kernel.__name__, kernel.__name__))
    extents = tuple(dim) if isinstance(dim, (tuple, list)) else (dim,)
    if len(extents) != dims or not all(hasattr(n, "__index__") for n in extents):
        raise ValueError("tack.launch: kernel '%s' assigns tack.tid() to %d name%s, so dim is %s "
                         "(integers), not %r" % (kernel.__name__, dims, "" if dims == 1 else "s",
                                                 "n" if dims == 1 else "a tuple of %d" % dims, dim))
    extents = tuple(n.__index__() for n in extents)
    if any(n < 0 for n in extents):
        raise ValueError("tack.launch: kernel '%s': dim %r has a negative extent"
                         % (kernel.__name__, dim))
    args = (*inputs, *outputs)
    if device is not None:
        want = _tack.device(device) if isinstance(device, str) else device
        on = [a.device for a in args if isinstance(a, Array)] or [_tack.get_default_device()]
        if any(d != want for d in on):
            raise TypeError("tack.launch: kernel '%s' would run on %s, not on device=%r: pass "
                            "tack arrays made there (tack.array(x, device=%r))"
                            % (kernel.__name__, on[0].name, want.name, want.name))
    return kernel(*args, *extents)


class timer:
    """``with tack.timer("step"):`` times its block: every device is
    synchronized at entry and exit, and ``step: 1.234 ms`` is printed at
    exit (``print=False``: nothing printed).  ``.elapsed`` is the time in
    seconds once the block has run (printed only when it did not raise).
    Inside a timer each kernel's launches are timed too:
    ``tack.stats()["kernels"][name]["launch_ms"]``.  See docs/timing.md."""

    def __init__(self, name="timer", print=True):
        self.name = name
        self.print = print
        self.elapsed = None
        self._start = None

    def __enter__(self):
        _tack.synchronize()
        _tack._launch_timing(True)
        self._start = _time.perf_counter()
        return self

    def __exit__(self, *exc):
        try:
            _tack.synchronize()
        finally:
            self.elapsed = _time.perf_counter() - self._start
            _tack._launch_timing(False)
        if self.print and exc[0] is None:
            _builtins.print("%s: %.3f ms" % (self.name, self.elapsed * 1e3))
        return False


def ndindex(*extents):
    """A 2-D or 3-D launch inside kernels; all index tuples outside them."""
    return _itertools.product(*(range(e) for e in extents))


def grouped(x):
    """Taichi's ti.grouped: inside kernels, ``for I in tack.grouped(x)``
    launches over every index of x with I an index vector; outside them,
    every index tuple of x (or of the tack.ndindex(...) given)."""
    if hasattr(x, "shape"):
        return _itertools.product(*(range(e) for e in x.shape))
    return iter(x)


def static(x):
    """Taichi's ti.static: inside kernels, ``for k in tack.static(range(3))``
    unrolls the loop while compiling (each copy sees k as a constant) and
    ``tack.static(v)`` of a value is that value; outside kernels, x itself."""
    return x


# Matrix functions: unrolled scalar code inside kernels, NumPy outside them.
def identity(n, dtype=f32):
    """The n x n identity matrix (n 2-4) of dtype tack.f32 or tack.f64."""
    import numpy as np
    return np.identity(n, dtype=dtype.numpy)


def outer(u, v):
    """The outer product of two vectors: a len(u) x len(v) matrix."""
    import numpy as np
    return np.outer(u, v)


def determinant(m):
    """The determinant of a square matrix."""
    import numpy as np
    return np.linalg.det(m)


def inverse(m):
    """The inverse of a square matrix (in kernels a singular one gives inf and nan)."""
    import numpy as np
    return np.linalg.inv(m)


from ._vector_functions import (  # noqa: E402,F401  (tack.cross, tack.lerp, ...)
    abs, argmax, argmin, clamp, cross, cw_div, cw_mul, ddot, diag, dot, get_diag, length,
    length_sq, lerp, matrix_from_cols, matrix_from_rows, max, min, normalize, sign, skew,
    smoothstep, step, sum, trace, transpose, vec2, vec3, vec4, quat, where, select,
)
from ._vector_functions import _NAMES as _VECTOR_FUNCTION_NAMES  # noqa: E402
from ._annotations import array1d, array2d, array3d, array4d  # noqa: E402,F401  (Warp's annotations)

# Warp's and NumPy's names of the scalar dtypes (wp.float32, wp.int32), as
# annotations and casts name them: the same objects as tack.f32, tack.i32
int8, int16, int32, int64 = i8, i16, i32, i64
uint8, uint16, uint32, uint64 = u8, u16, u32, u64
float16, float32, float64 = f16, f32, f64
from ._quaternions import (  # noqa: E402,F401  (tack.quat_rotate, ... as device functions)
    QUATERNION_FUNCTIONS as _QUATERNION_FUNCTIONS, quat_from_axis_angle, quat_from_matrix,
    quat_identity, quat_inverse, quat_mul, quat_rotate, quat_rotate_inv, quat_rpy, quat_slerp,
    quat_to_axis_angle, quat_to_matrix, quatd, quatf,
)
from ._rounding import frac, rint, round  # noqa: E402,F401,A001  (Warp's, as device functions)
from ._transforms import (  # noqa: E402,F401  (tack.transform_point, ... as device functions)
    TRANSFORM_FUNCTIONS as _TRANSFORM_FUNCTIONS, transform, transform_get_rotation,
    transform_get_translation, transform_identity, transform_inverse, transform_multiply,
    transform_point, transform_vector, transformd, transformf,
)
from ._spatial import (  # noqa: E402,F401  (tack.spatial_cross, ... as device functions)
    SPATIAL_FUNCTIONS as _SPATIAL_FUNCTIONS, spatial_bottom, spatial_cross, spatial_cross_dual,
    spatial_adjoint, spatial_dot, spatial_matrixd, spatial_matrixf, spatial_top, spatial_vector,
    spatial_vectord, spatial_vectorf, transform_twist, transform_wrench,
)
from ._shading import (  # noqa: E402,F401  (tack.mix, tack.reflect, ... as device functions)
    SHADING_FUNCTIONS as _SHADING_FUNCTIONS, cconj, cdiv, cexp, cinv, clog, cmul, cpow, csqrt,
    distance, fract, mix, reflect, refract, rotation2d,
)
from ._decompositions import (  # noqa: E402,F401  (tack.svd3, ... as device functions)
    DECOMPOSITION_FUNCTIONS as _DECOMPOSITION_FUNCTIONS, eig2, eig3, polar2, polar3, qr3, svd2,
    svd3,
)


# tack.math.*: intrinsics inside kernels, Python's math outside them.
math = _types.ModuleType("tack.math", "Math intrinsics (Python's math outside kernels).")
math.__dict__.update({k: v for k, v in vars(_pymath).items() if not k.startswith("_")})
_sys.modules.setdefault("tack.math", math)
# Taichi's ti.math also holds its GLSL-style and complex functions: in
# kernels tack.math.X is tack.X where Python's math has no X.
math.__dict__.update({k: globals()[k] for k in _SHADING_FUNCTIONS if k not in math.__dict__})

__all__ = [
    "launch", "tid", "array1d", "array2d", "array3d", "array4d",
    "Array", "CompileError", "Device", "Kernel", "Texture3D", "dtype", "Stream", "Event",
    "bool_", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "f32", "f64", "f16",
    "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float16", "float32", "float64",
    "vector", "vec2f", "vec3f", "vec4f", "vec2d", "vec3d", "vec4d", "vec2i", "vec3i", "vec4i",
    "mat22f", "mat33f", "mat44f", "mat22d", "mat33d", "mat44d",
    "complex64", "complex128",
    "identity", "outer", "determinant", "inverse",
    "array", "asarray", "copyto", "empty", "from_dlpack", "zeros",
    "device", "get_default_device", "set_default_device", "get_num_threads", "set_num_threads",
    "kernel", "ndindex", "grouped", "static", "func", "device_class", "struct", "constant", "math", "stats",
    "get_debug", "set_debug", "synchronize", "timer", "seed", "precompile",
    "WORKGROUP", "shared", "local", "barrier", "local_index", "group_index",
    "rng", "uniform", "normal", "randint", "rand_init", "randf", "randn", "randi", "vectorize",
    "Tape", "Scalar", "ones", "stop_gradient",
] + [n for n in _VECTOR_FUNCTION_NAMES if n not in ("min", "max", "abs", "sum")] + [  # star imports keep the builtins
    "quatf", "quatd", *_QUATERNION_FUNCTIONS, "transformf", "transformd", *_TRANSFORM_FUNCTIONS,
    *_DECOMPOSITION_FUNCTIONS, "spatial_vectorf", "spatial_vectord", "spatial_matrixf", "spatial_matrixd",
    *_SPATIAL_FUNCTIONS,
    *_SHADING_FUNCTIONS]
