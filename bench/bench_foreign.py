"""Other libraries' arrays as kernel arguments (issue 22, item 3): the
warm cost of scale(x, out, 2.0) when x and out are NumPy arrays, PyTorch
CPU tensors (when torch imports), an object that speaks only DLPack (its
__dlpack__ and __dlpack_device__ hand on NumPy's own, so the capsules are
real), and objects that speak only __array_interface__ (a dict attribute,
and a property that builds the dict per call, as most producers do).

    .venv/bin/python bench/bench_foreign.py

Each line: the call's time, NumPy's, the ratio, and the difference; the
target is within 1 us of NumPy per call (two foreign arrays in the call).
For the DLPack-only producer a second line takes its own cost out: the
two __dlpack__(max_version=...) calls Tack makes, timed alone; what Tack
adds beyond NumPy's call and them should stay within 0.5 us (issue 29).
"""
import os
import sys

os.environ.setdefault("TACK_CACHE", "off")

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import Report, interleaved, per_call_us  # noqa: E402

import tack  # noqa: E402

R = Report()
N = 8


@tack.kernel
def scale(x, out, a):
    for i in range(x.shape[0]):
        out[i] = x[i] * a


class DLPackOnly:
    """DLPack only, through NumPy's own producer."""

    def __init__(self, a):
        self._a = a

    def __dlpack__(self, **kwargs):
        return self._a.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self._a.__dlpack_device__()


class InterfaceDict:
    """__array_interface__ as an instance attribute (a dict made once)."""

    def __init__(self, a):
        self._a = a
        self.__array_interface__ = {"shape": a.shape, "typestr": a.dtype.str, "version": 3,
                                    "data": (a.ctypes.data, False), "strides": None}


class InterfaceProperty:
    """__array_interface__ built on every read, as a property (from fields
    kept by the object: NumPy's a.ctypes alone would cost 1 us a read)."""

    def __init__(self, a):
        self._shape, self._typestr, self._ptr = a.shape, a.dtype.str, a.ctypes.data
        self._a = a

    @property
    def __array_interface__(self):
        return {"shape": self._shape, "typestr": self._typestr, "version": 3,
                "data": (self._ptr, False), "strides": None}


def measure(x, out):
    scale(x, out, 2.0)
    return lambda: per_call_us(scale, x, out, 2.0, batch=100, batches=100, warmup=200)


def main():
    x = np.arange(N, dtype=np.float32)
    out = np.zeros(N, dtype=np.float32)
    cases = {"numpy": measure(x, out)}
    try:
        import torch
        tx = torch.arange(N, dtype=torch.float32)
        tout = torch.zeros(N, dtype=torch.float32)
        cases[f"torch {torch.__version__}"] = measure(tx, tout)
        why_torch = None
    except ImportError as e:
        why_torch = str(e)
    dx, dout = DLPackOnly(x), DLPackOnly(out)
    cases["dlpack-only"] = measure(dx, dout)

    def producers_own():
        version = (1, 0)

        def both():
            dx.__dlpack__(max_version=version)
            dout.__dlpack__(max_version=version)
        return per_call_us(both, batch=100, batches=100, warmup=200)
    cases["dlpack producers alone"] = producers_own
    cases["array-interface dict"] = measure(InterfaceDict(x), InterfaceDict(out))
    cases["array-interface property"] = measure(InterfaceProperty(x), InterfaceProperty(out))
    best = interleaved(cases, rounds=3)
    t_np = best.pop("numpy")
    R.line("foreign args numpy", t_np)
    if why_torch:
        print(f"torch skipped: {why_torch}")
    t_own = best.pop("dlpack producers alone")
    for label, t in best.items():
        d = t - t_np
        R.line(f"foreign args {label}", t, [("numpy", t_np, None)],
               target="<= numpy + 1 us", ok=d <= 1.0, note=f"[+{d:.3f} us a call]")
    extra = best["dlpack-only"] - t_np - t_own
    R.line("foreign args dlpack-only beyond its producer", extra + t_np, [("numpy", t_np, None)],
           target="<= numpy + producer + 0.5 us", ok=extra <= 0.5,
           note=f"[producer's own __dlpack__ x2 {t_own:.3f} us; Tack adds {extra:.3f} us]")
    np.testing.assert_array_equal(out, x * 2)
    R.summary()


if __name__ == "__main__":
    main()
