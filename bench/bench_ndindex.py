"""2-D and 3-D launches on OpenCL: a Jacobi (5-point) step on a 2048x2048
f32 grid written with tack.ndindex, beside the same stencil launched 1-D
over rows*cols (a flat index split with // and %) and beside PyOpenCL
running hand-written OpenCL C of both (get_global_id(0) on the column):

    .venv/bin/python bench/bench_ndindex.py

Also a 7-point stencil on a 160^3 grid, ndindex(3) beside 1-D flat.
Target: the 2-D ndindex step within 1.2x of Tack's 1-D launch.  Each
figure is the best single step over rounds that alternate the peers (the
machine is shared); results are checked against NumPy.  Ratios are
tack/peer: below 1.00x means the ndindex launch is faster.
"""
import os
import sys
import time

os.environ.setdefault("TACK_CACHE", "off")

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import Report, interleaved  # noqa: E402

import tack  # noqa: E402

R = Report()


@tack.kernel
def jacobi2(u, v):
    for i, j in tack.ndindex(u.shape[0] - 2, u.shape[1] - 2):
        v[i + 1, j + 1] = 0.25 * (u[i, j + 1] + u[i + 2, j + 1] + u[i + 1, j] + u[i + 1, j + 2])


@tack.kernel
def jacobi_rows(u, v):
    for i in range(1, u.shape[0] - 1):  # parallel rows, a sequential loop along each
        for j in range(1, u.shape[1] - 1):
            v[i, j] = 0.25 * (u[i - 1, j] + u[i + 1, j] + u[i, j - 1] + u[i, j + 1])


@tack.kernel
def jacobi_flat(u, v, rows, cols):
    for k in range((rows - 2) * (cols - 2)):
        i = k // (cols - 2) + 1
        j = k % (cols - 2) + 1
        c = i * cols + j
        v[c] = 0.25 * (u[c - cols] + u[c + cols] + u[c - 1] + u[c + 1])


@tack.kernel
def jacobi3(u, v):
    for i, j, k in tack.ndindex(u.shape[0] - 2, u.shape[1] - 2, u.shape[2] - 2):
        v[i + 1, j + 1, k + 1] = (u[i, j + 1, k + 1] + u[i + 2, j + 1, k + 1]
                                  + u[i + 1, j, k + 1] + u[i + 1, j + 2, k + 1]
                                  + u[i + 1, j + 1, k] + u[i + 1, j + 1, k + 2]) / 6.0


@tack.kernel
def jacobi3_flat(u, v, n):
    for t in range((n - 2) * (n - 2) * (n - 2)):
        i = t // ((n - 2) * (n - 2)) + 1
        j = t // (n - 2) % (n - 2) + 1
        k = t % (n - 2) + 1
        c = (i * n + j) * n + k
        v[c] = (u[c - n * n] + u[c + n * n] + u[c - n] + u[c + n] + u[c - 1] + u[c + 1]) / 6.0


CL_SRC = """
#pragma OPENCL FP_CONTRACT OFF
__kernel void jacobi2(__global const float *u, __global float *v, int rows, int cols) {
    int j = get_global_id(0) + 1, i = get_global_id(1) + 1;
    if (i < rows - 1 && j < cols - 1) {
        int c = i * cols + j;
        v[c] = 0.25f * (u[c - cols] + u[c + cols] + u[c - 1] + u[c + 1]);
    }
}
__kernel void jacobi_flat(__global const float *u, __global float *v, int rows, int cols) {
    int k = get_global_id(0);
    if (k < (rows - 2) * (cols - 2)) {
        int c = (k / (cols - 2) + 1) * cols + k % (cols - 2) + 1;
        v[c] = 0.25f * (u[c - cols] + u[c + cols] + u[c - 1] + u[c + 1]);
    }
}
"""


def timed(fn):
    """Microseconds of one step to its end: a launch on device arrays
    returns once queued, so the step is waited for inside the timing."""
    t = time.perf_counter()
    fn()
    tack.synchronize()
    return (time.perf_counter() - t) * 1e6


def open_pyopencl(dev):
    try:
        import pyopencl as cl
    except Exception as e:
        return None, None, None, f"{type(e).__name__}: {e}".splitlines()[0][:120]
    try:
        devices = [d for p in cl.get_platforms() for d in p.get_devices()]
        match = [d for d in devices if d.name in dev.description] or devices[:1]
        ctx = cl.Context(match[:1])
        return cl, ctx, cl.CommandQueue(ctx), None
    except Exception as e:
        return None, None, None, f"{type(e).__name__}: {e}".splitlines()[0][:120]


def bench_2d(dev, cl, ctx, q, cl_why, n=2048, rounds=10):
    rng = np.random.default_rng(0)
    uh = rng.random((n, n), dtype=np.float32)
    want = np.zeros_like(uh)
    want[1:-1, 1:-1] = np.float32(0.25) * (uh[:-2, 1:-1] + uh[2:, 1:-1] + uh[1:-1, :-2]
                                           + uh[1:-1, 2:])
    u, v = tack.array(uh, device=dev), tack.zeros((n, n), device=dev)
    uf, vf = tack.array(uh.ravel(), device=dev), tack.zeros((n * n,), device=dev)
    vr = tack.zeros((n, n), device=dev)
    nd = lambda: jacobi2(u, v)  # noqa: E731
    flat = lambda: jacobi_flat(uf, vf, n, n)  # noqa: E731
    rows = lambda: jacobi_rows(u, vr)  # noqa: E731
    nd()
    flat()
    rows()
    ok = (np.array_equal(v.numpy(), want) and np.array_equal(vf.numpy().reshape(n, n), want)
          and np.array_equal(vr.numpy(), want))
    measures = {"nd": lambda: timed(nd), "flat": lambda: timed(flat), "rows": lambda: timed(rows)}
    if cl is not None:
        prg = cl.Program(ctx, CL_SRC).build(options="-cl-std=CL1.2")
        mf = cl.mem_flags
        ub = cl.Buffer(ctx, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=uh)
        vb = cl.Buffer(ctx, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=np.zeros_like(uh))
        r, c = np.int32(n), np.int32(n)
        g2 = ((n - 2 + 63) // 64 * 64, n - 2)
        k_nd, k_flat = cl.Kernel(prg, "jacobi2"), cl.Kernel(prg, "jacobi_flat")

        def cl_nd():
            k_nd(q, g2, None, ub, vb, r, c)
            q.finish()

        def cl_flat():
            k_flat(q, ((n - 2) * (n - 2),), None, ub, vb, r, c)
            q.finish()
        for fn in (cl_nd, cl_flat):
            fn()
            res = np.empty_like(uh)
            cl.enqueue_copy(q, res, vb)
            ok = ok and np.array_equal(res, want)
        measures["cl nd"] = lambda: timed(cl_nd)
        measures["cl flat"] = lambda: timed(cl_flat)
    for fn in measures.values():
        fn()  # warm (PoCL builds a work-group function per local size)
    best = interleaved(measures, rounds=rounds)
    t = best["nd"]
    R.line(f"jacobi {n}x{n} ndindex(2) opencl", t,
           [("tack 1-D flat", best["flat"], None),
            ("tack rows", best["rows"], None),
            ("pyopencl 2-D", best.get("cl nd"), cl_why),
            ("pyopencl 1-D", best.get("cl flat"), cl_why)],
           "<= 1.2x tack 1-D, <= 1.5x tack rows, <= 1.0x pyopencl 2-D",
           t <= 1.2 * best["flat"] and t <= 1.5 * best["rows"] and
           ("cl nd" not in best or t <= best["cl nd"]),
           note="[best step of %d%s]" % (rounds, "" if ok else "; WRONG RESULTS"))


def bench_3d(dev, n=160, rounds=10):
    rng = np.random.default_rng(1)
    uh = rng.random((n, n, n), dtype=np.float32)
    want = np.zeros_like(uh)
    want[1:-1, 1:-1, 1:-1] = (uh[:-2, 1:-1, 1:-1] + uh[2:, 1:-1, 1:-1] + uh[1:-1, :-2, 1:-1]
                              + uh[1:-1, 2:, 1:-1] + uh[1:-1, 1:-1, :-2]
                              + uh[1:-1, 1:-1, 2:]) / np.float32(6.0)
    u, v = tack.array(uh, device=dev), tack.zeros((n, n, n), device=dev)
    uf, vf = tack.array(uh.ravel(), device=dev), tack.zeros((n ** 3,), device=dev)
    nd = lambda: jacobi3(u, v)  # noqa: E731
    flat = lambda: jacobi3_flat(uf, vf, n)  # noqa: E731
    nd()
    flat()
    ok = np.array_equal(v.numpy(), want) and np.array_equal(vf.numpy().reshape(uh.shape), want)
    best = interleaved({"nd": lambda: timed(nd), "flat": lambda: timed(flat)}, rounds=rounds)
    R.line(f"jacobi {n}^3 ndindex(3) opencl", best["nd"], [("tack 1-D flat", best["flat"], None)],
           note="[best step of %d%s]" % (rounds, "" if ok else "; WRONG RESULTS"))


def main():
    t0 = time.perf_counter()
    try:
        dev = tack.device("opencl")
    except Exception as e:
        print(f"bench_ndindex: skipped, no OpenCL device ({type(e).__name__}: {e})")
        return
    cl, ctx, q, cl_why = open_pyopencl(dev)
    print(f"tack {tack.__version__}, {os.cpu_count()} cpus, device {dev.description}, "
          f"pyopencl {'skipped (' + cl_why + ')' if cl_why else cl.VERSION_TEXT}")
    bench_2d(dev, cl, ctx, q, cl_why)
    bench_3d(dev)
    R.summary()
    print(f"bench_ndindex took {time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
