"""CUDA without a GPU: the PTX (or CUDA C) of the variant a call would select.

``tack.cuda.compile(kernel, *args, arch="sm_90")`` runs the whole pipeline
to PTX with NVRTC (found through TACK_NVRTC, $CUDA_PATH, $CUDA_HOME,
/usr/local/cuda or the loader path); no driver or device is needed.  Arrays
may be NumPy arrays or tack.Arrays on any device: only their dtype, shape
and vector width matter.  The kernel function in the PTX is named
``tack_<kernel name>``.
"""
from . import _tack


def compile(kernel, *args, arch="sm_90"):  # noqa: A001  (the verb users expect)
    """PTX for ``arch`` ("sm_80", "sm_90", "sm_90a", ...) as a string."""
    return _tack._generate(kernel, "cuda:" + arch, args)


def source(kernel, *args):
    """The CUDA C that NVRTC compiles for this call's variant."""
    return _tack._generate(kernel, "cuda-source", args)
