"""HIP (AMD GPUs) without a GPU: the code object (or HIP C++) of the variant
a call would select.

``tack.hip.compile(kernel, *args, arch="gfx90a")`` runs the whole pipeline
to an AMDGPU code object (an ELF, what ``hipModuleLoadData`` loads) with
hipRTC (found through TACK_HIPRTC, libhiprtc.so or ROCm 5's
libamdhip64.so); no runtime or device is needed.  Arrays may be NumPy
arrays or tack.Arrays on any device: only their dtype, shape and vector
width matter.  The kernel function is named ``tack_<kernel name>``.
"""
from . import _tack


def compile(kernel, *args, arch="gfx90a"):  # noqa: A001  (the verb users expect)
    """The code object for ``arch`` ("gfx90a", "gfx1030", "gfx90a:xnack-",
    ...) as bytes."""
    return _tack._generate(kernel, "hip:" + arch, args, True)


def source(kernel, *args):
    """The HIP C++ that hipRTC compiles for this call's variant."""
    return _tack._generate(kernel, "hip-source", args)
