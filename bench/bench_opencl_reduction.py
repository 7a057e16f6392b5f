"""A 2^24 f32 sum on OpenCL (PoCL here): Tack's reduction kernel beside
PyOpenCL's ReductionKernel and beside Tack's own copy kernel over the same
array (issue 29.2: <= 1.0x ReductionKernel, no slower than the copy).
Best of 10 calls each; the sum is checked against NumPy in f64.

    python bench/bench_opencl_reduction.py   (pyopencl and mako for the peer)"""
import time

import numpy as np

import tack


@tack.kernel
def total(x):
    s = 0.0
    for i in range(x.shape[0]):
        s += x[i]
    return s
@tack.kernel
def copy(x, y):
    for i in range(x.shape[0]):
        y[i] = x[i]
dev = tack.device("opencl")
n = 1 << 24
xh = np.random.rand(n).astype(np.float32)
x = tack.array(xh, device=dev); y = tack.zeros(n, dtype=tack.f32, device=dev)
assert abs(total(x) - xh.astype(np.float64).sum()) < 1e-4 * n, "wrong sum"
def best(f, r=10):
    t = []
    for _ in range(r):
        t0 = time.perf_counter(); f(); t.append(time.perf_counter() - t0)
    return min(t) * 1e3
try:
    import pyopencl as cl, pyopencl.reduction as clr, pyopencl.array as cla
    ctx = cl.Context([d for p in cl.get_platforms() for d in p.get_devices() if "Portable" in p.name][:1]); q = cl.CommandQueue(ctx)
    xa = cla.to_device(q, xh)
    rk = clr.ReductionKernel(ctx, np.float32, neutral="0", reduce_expr="a+b", map_expr="x[i]", arguments="__global const float *x")
    rk(xa).get()
    tcl = best(lambda: rk(xa).get())
except Exception as e:
    tcl = float("nan")
    print("pyopencl skipped:", type(e).__name__)
# A reduction's value waits for its kernel; a copy kernel's launch is only
# queued, so it is waited for inside the timing.
tr, tc = best(lambda: total(x)), best(lambda: (copy(x, y), tack.synchronize(dev)))
print(f"sum 2^24 f32 opencl: tack {tr:.2f} ms  ReductionKernel {tcl:.2f} ms ({tr/tcl:.2f}x)  tack copy {tc:.2f} ms ({tr/tc:.2f}x)")
