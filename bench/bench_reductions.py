"""CPU reductions beside NumPy (issue 29, item 1).

A kernel-scope sum (`s = 0.0; s += x[i]; return s`) of 2^24 f32 and f64
values on a CPU device with 1 and with 2 threads, against NumPy's
single-threaded `x.sum()`; ratios are Tack/NumPy times (below 1: Tack
faster).  Each chunk keeps 32 (f32) or 16 (f64) interleaved partial sums
(docs/threads.md), so the loop vectorizes while the result stays the same
bits for a given thread count.  Also printed: each result's error against
`math.fsum` (relative), beside NumPy's pairwise sum and a strictly
sequential one (`np.add.accumulate`), and min / i64 sum times.
Targets: <= 0.6x NumPy with 2 threads, <= 1.0x with one, f32 and f64.
"""
import math
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import Report, best_s, interleaved  # noqa: E402

import tack  # noqa: E402

N = 1 << 24


@tack.kernel
def ksum(x):
    s = 0.0
    for i in range(x.shape[0]):
        s += x[i]
    return s


@tack.kernel
def kmin(x):
    lo = math.inf
    for i in range(x.shape[0]):
        lo = min(lo, x[i])
    return lo


@tack.kernel
def kisum(x):
    s = 0
    for i in range(x.shape[0]):
        s += x[i]
    return s


def on(dev, kernel, x):
    tack.set_default_device(dev)
    try:
        return kernel(x)
    finally:
        tack.set_default_device("cpu")


def main():
    rep = Report()
    one = tack.device("cpu", num_threads=1)
    two = tack.device("cpu", num_threads=2)
    rng = np.random.default_rng(0)
    data = {"f32": rng.random(N).astype(np.float32), "f64": rng.random(N)}
    xi = rng.integers(-1000, 1000, N).astype(np.int64)
    measures = {}
    for name, x in data.items():
        for label, dev in (("1", one), ("2", two)):
            on(dev, ksum, x)  # compile outside the timing
            measures[f"{name} tack {label}"] = (lambda d, v: lambda: best_s(on, d, ksum, v))(dev, x)
        measures[f"{name} numpy"] = (lambda v: lambda: best_s(v.sum))(x)
    for label, dev in (("1", one), ("2", two)):
        on(dev, kmin, data["f32"])
        on(dev, kisum, xi)
        measures[f"min tack {label}"] = (lambda d: lambda: best_s(on, d, kmin, data["f32"]))(dev)
        measures[f"isum tack {label}"] = (lambda d: lambda: best_s(on, d, kisum, xi))(dev)
    measures["min numpy"] = lambda: best_s(data["f32"].min)
    measures["isum numpy"] = lambda: best_s(xi.sum)
    us = {k: v * 1e6 for k, v in interleaved(measures).items()}

    for name, x in data.items():
        exact = math.fsum(x.tolist())
        np_t = us[f"{name} numpy"]
        for label, dev, target in (("1", one, 1.0), ("2", two, 0.6)):
            t = us[f"{name} tack {label}"]
            rep.line(f"sum {name} 2^24, {label} thread{'s' if label == '2' else ''}", t,
                     [("numpy x.sum()", np_t, None)], f"<= {target}x", t <= target * np_t)
        errs = {
            "tack 1": on(one, ksum, x), "tack 2": on(two, ksum, x),
            "numpy": float(x.sum()), "sequential": float(np.add.accumulate(x)[-1]),
        }
        print(f"  {name} relative error vs math.fsum: "
              + ", ".join(f"{k} {abs(v - exact) / abs(exact):.2e}" for k, v in errs.items()),
              flush=True)
    for what, np_key in (("min", "min numpy"), ("isum", "isum numpy")):
        for label in ("1", "2"):
            rep.line(f"{'min f32' if what == 'min' else 'sum i64'} 2^24, {label} thread(s)",
                     us[f"{what} tack {label}"], [("numpy", us[np_key], None)])
    assert on(two, kmin, data["f32"]) == float(data["f32"].min())
    assert on(two, kisum, xi) == int(xi.sum())
    rep.summary()


if __name__ == "__main__":
    main()
