"""Warp's rounding functions, for kernels: device functions written in the
kernel language (inlined where called), plain Python outside kernels.
Python's own round() in a kernel rounds half to even and gives an int, as
Numba's does; these keep the float type, as Warp's do."""
import numpy

from ._tack import func as _device


@_device
def round(x):
    """x to the nearest integer, halfway cases away from zero (C's round,
    Warp's wp.round), as a float: round(2.5) is 3.0, round(-0.3) is -0.0."""
    t = numpy.trunc(x)
    if abs(x - t) >= 0.5:  # x - t is exact: no 0.49999999999999994 + 0.5 rounding up
        t = t + numpy.copysign(1.0, x)
    return t


@_device
def rint(x):
    """x to the nearest integer, halfway cases to even (Warp's wp.rint), as
    a float: rint(2.5) is 2.0."""
    return numpy.rint(x)


@_device
def frac(x):
    """x's fractional part, x - trunc(x), with x's sign (Warp's wp.frac)."""
    return x - numpy.trunc(x)

