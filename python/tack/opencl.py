"""OpenCL C of the variant a call would select, without a device."""
from . import _tack


def source(kernel, *args):
    """The OpenCL C an OpenCL device builds for this call's variant."""
    return _tack._generate(kernel, "opencl-source", args)
