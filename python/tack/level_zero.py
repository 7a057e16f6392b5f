"""Level Zero (Intel GPUs) without a GPU: the SPIR-V or native binary of
the variant a call would select.

The kernel's OpenCL C (``tack.opencl.source``) is compiled by Intel's
``ocloc``, run as a child process (found through TACK_OCLOC or PATH;
Debian's ``intel-opencl-icd`` ships it): not loaded into this process,
whose other LLVMs (PoCL's) would abort it.  Arrays may be NumPy arrays or
tack.Arrays on any device: only their dtype, shape and vector width
matter.  The kernel function is named ``tack_<kernel name>``.
"""
from . import _tack


def spirv(kernel, *args):
    """The SPIR-V module (bytes) that ``zeModuleCreate`` takes on any Intel
    GPU (``ZE_MODULE_FORMAT_IL_SPIRV``)."""
    return _tack._generate(kernel, "level_zero:spirv", args, True)


def compile(kernel, *args, target="dg2"):  # noqa: A001  (the verb users expect)
    """The native binary (bytes: Intel's zebin, an ELF) for ``target``
    ("dg2", "tgllp", "pvc", ... or a PCI device id such as "0x56a0");
    f64 kernels are refused for targets without fp64, naming f64."""
    return _tack._generate(kernel, "level_zero:" + target, args, True)


def source(kernel, *args):
    """The OpenCL C that ocloc compiles for this call's variant."""
    return _tack._generate(kernel, "opencl-source", args)
