"""Metal (Apple GPUs): the Metal Shading Language of the variant a call
would select, on any machine.  On macOS ``tack.device("metal")`` runs it
(the driver opens Metal through the Objective-C runtime); elsewhere that
raises RuntimeError naming the library that is missing.

``tack.metal.source(kernel, *args)`` gives the MSL a Metal device compiles
(with fast math off).  Metal has no f64 and no 64-bit atomics: kernels that
use f64, 64-bit or 8/16-bit atomics, and debug mode's bounds checks, are
refused with an error naming them.  Arrays may be NumPy arrays or
tack.Arrays on any device: only their dtype, shape and vector width matter.
"""
from . import _tack


def source(kernel, *args):
    """The MSL for this call's variant (the kernel function is
    ``tack_<kernel name>``)."""
    return _tack._generate(kernel, "metal-source", args)
