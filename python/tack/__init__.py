"""Tack: compute kernels written as decorated Python functions.

The work is done by the C extension ``tack._tack`` (a client of libtack's C
API); this file only re-exports it and adds decorator sugar.
"""
import itertools as _itertools
import math as _pymath
import sys as _sys
import types as _types

from . import _tack
from . import cache  # noqa: F401  (tack.cache.load_bundle)
from . import cuda, hip, level_zero, metal, opencl  # noqa: F401  (tack.cuda.compile, ...)
from ._tack import (  # noqa: F401
    Array, CompileError, Device, Kernel, Texture3D, dtype,
    bool_, i8, i16, i32, i64, u8, u16, u32, u64, f32, f64, f16,
    vec2f, vec3f, vec4f, vec2d, vec3d, vec4d, vec2i, vec3i, vec4i,
    array, asarray, copyto, empty, from_dlpack, zeros,
    device, get_default_device, set_default_device, get_num_threads, set_num_threads,
    constant, device_class, func, stats, get_debug, set_debug, seed,
    __version__,
)

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


def kernel(fn=None, **options):
    """Compiles ``fn`` as a kernel; use as ``@tack.kernel`` or ``@tack.kernel()``."""
    if options:
        raise TypeError("tack.kernel() takes no options: %s" % ", ".join(sorted(options)))
    if fn is None:
        return _tack.kernel
    return _tack.kernel(fn)


def ndindex(*extents):
    """A 2-D or 3-D launch inside kernels; all index tuples outside them."""
    return _itertools.product(*(range(e) for e in extents))


# tack.math.*: intrinsics inside kernels, Python's math outside them.
math = _types.ModuleType("tack.math", "Math intrinsics (Python's math outside kernels).")
math.__dict__.update({k: v for k, v in vars(_pymath).items() if not k.startswith("_")})
_sys.modules.setdefault("tack.math", math)

__all__ = [
    "Array", "CompileError", "Device", "Kernel", "Texture3D", "dtype",
    "bool_", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "f32", "f64", "f16",
    "vec2f", "vec3f", "vec4f", "vec2d", "vec3d", "vec4d", "vec2i", "vec3i", "vec4i",
    "array", "asarray", "copyto", "empty", "from_dlpack", "zeros",
    "device", "get_default_device", "set_default_device", "get_num_threads", "set_num_threads",
    "kernel", "ndindex", "func", "device_class", "constant", "math", "stats",
    "get_debug", "set_debug", "seed",
    "WORKGROUP", "shared", "local", "barrier", "local_index", "group_index",
    "rng", "uniform", "normal", "randint",
]
