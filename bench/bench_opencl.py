"""Tack's OpenCL backend beside the floor under it and beside pyopencl, on
the first OpenCL device (PoCL, OpenCL on the CPU, where `make test` runs):

    .venv/bin/python bench/bench_opencl.py

  1. warm dispatch of scale(x, out, 2.0), two length-8 f32 device arrays,
     beside a C floor (bench/opencl_floor.c, built at run time with
     `cc -O2 ... -lOpenCL`: clSetKernelArg + clEnqueueNDRangeKernel +
     clFinish on the same kernel and device) and beside pyopencl's
     `kernel(queue, (8,), None, ...)` + `queue.finish()` on the same
     OpenCL C.  Target: Tack within 2 us of the floor.
  2. triad a[i] = b[i] + s*c[i], 2^24 elements, f32 and f64, in GB/s
     (3 * n * itemsize / time), beside pyopencl running a plain
     one-work-item-per-element kernel; the CPU backend's triad on NumPy
     arrays is on the same line for reference.  Target: Tack within 10% of
     pyopencl.

The peers run in turn, round after round, and each keeps its best figure
(the machine is shared and noisy).  Ratios are tack/peer: for times below
1.00x means Tack is faster, for GB/s above 1.00x.  pyopencl and the C floor
are skipped, with the reason, when pyopencl does not import or the floor
does not build.  Takes about a minute.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

os.environ.setdefault("TACK_CACHE", "off")

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import HERE, Report, interleaved  # noqa: E402

import tack  # noqa: E402

R = Report()

# The OpenCL C of bench/opencl_floor.c: the shape of Tack's generated
# kernels (a pack of 64-bit words by value, then one buffer per array, a
# grid-stride loop), so the floor and pyopencl run what Tack runs.
SCALE_SRC = """
typedef struct { long w[8]; } tack_pack;
__kernel void tack_scale(tack_pack p, __global const float *x, __global float *out) {
    long start = p.w[0], step = p.w[1], count = p.w[2];
    float a = as_float((uint)p.w[7]);
    for (long k = get_global_id(0); k < count; k += get_global_size(0)) {
        long i = start + k * step;
        out[i] = x[i] * a;
    }
}
"""

# The hand-written triad: one work item per element, no bound check (the
# launches below are exactly n items).  FP_CONTRACT OFF as in Tack's code:
# both compute b + s*c rounded twice, as NumPy does.
TRIAD_SRC = """
#pragma OPENCL FP_CONTRACT OFF
__kernel void triad_f32(__global float *a, __global const float *b,
                        __global const float *c, float s) {
    size_t i = get_global_id(0);
    a[i] = b[i] + s * c[i];
}
#ifdef TACK_FP64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
__kernel void triad_f64(__global double *a, __global const double *b,
                        __global const double *c, double s) {
    size_t i = get_global_id(0);
    a[i] = b[i] + s * c[i];
}
#endif
"""


@tack.kernel
def scale(x, out, a):
    for i in range(x.shape[0]):
        out[i] = x[i] * a


@tack.kernel
def triad(a, b, c, s):
    for i in range(a.shape[0]):
        a[i] = b[i] + s * c[i]


# ===========================================================================
# Peers
# ===========================================================================

def open_pyopencl(dev):
    """(pyopencl module, context, queue, why): the pyopencl device whose name
    is in Tack's device description, or why pyopencl is skipped."""
    try:
        import pyopencl as cl
    except Exception as e:  # ImportError, or no ICD for it
        return None, None, None, f"{type(e).__name__}: {e}".splitlines()[0][:120]
    try:
        devices = [d for p in cl.get_platforms() for d in p.get_devices()]
        match = [d for d in devices if d.name in dev.description] or devices[:1]
        if not match:
            return None, None, None, "pyopencl finds no OpenCL device"
        ctx = cl.Context([match[0]])
        return cl, ctx, cl.CommandQueue(ctx), None
    except Exception as e:
        return None, None, None, f"{type(e).__name__}: {e}".splitlines()[0][:120]


class Floor:
    """bench/opencl_floor.c built with `cc -O2 ... -lOpenCL` into a temp
    directory; `why` says why not when no compiler or headers."""

    def __init__(self):
        self.exe, self.why, self.dir = None, None, None
        cc = shutil.which("cc") or shutil.which("gcc")
        if cc is None:
            self.why = "no C compiler (cc)"
            return
        self.dir = tempfile.mkdtemp(prefix="tack_bench_opencl_")
        exe = os.path.join(self.dir, "opencl_floor")
        r = subprocess.run([cc, "-O2", os.path.join(HERE, "opencl_floor.c"), "-o", exe,
                            "-lOpenCL"], capture_output=True, text=True)
        if r.returncode != 0:
            err = r.stderr.strip().splitlines()
            self.why = "cc failed (OpenCL headers or libOpenCL missing?): " + (
                err[0][:150] if err else f"exit {r.returncode}")
            return
        self.exe = exe

    def us(self, reps=300):
        """Microseconds per launch over `reps` launches in one run."""
        r = subprocess.run([self.exe, str(reps)], capture_output=True, text=True)
        m = re.search(r"floor: ([0-9.]+) us", r.stdout)
        if r.returncode != 0 or not m:
            raise RuntimeError(f"opencl_floor failed: {(r.stderr or r.stdout).strip()[:200]}")
        return float(m.group(1))

    def close(self):
        if self.dir:
            shutil.rmtree(self.dir, ignore_errors=True)


def block_us(fn, calls=100):
    """Mean microseconds per call over one block of `calls` calls."""
    t = time.perf_counter_ns()
    for _ in range(calls):
        fn()
    return (time.perf_counter_ns() - t) / calls / 1e3


# ===========================================================================
# 1. Warm dispatch
# ===========================================================================

def bench_dispatch(dev, cl, ctx, q, cl_why):
    xh = np.arange(8, dtype=np.float32)
    x = tack.array(xh, device=dev)
    out = tack.zeros((8,), dtype=tack.f32, device=dev)
    scale(x, out, 2.0)
    if not np.array_equal(out.numpy(), xh * np.float32(2.0)):
        print("dispatch: tack gave wrong results")
    # Each call waited for, as PyOpenCL's (q.finish) and the C floor's are:
    # bench_launch_queue.py measures the queued launch.
    tack_fn = lambda: (scale(x, out, 2.0), tack.synchronize(dev))  # noqa: E731
    for _ in range(500):
        tack_fn()

    cl_fn = None
    if cl is not None:
        prg = cl.Program(ctx, SCALE_SRC).build()
        kern = cl.Kernel(prg, "tack_scale")
        mf = cl.mem_flags
        xb = cl.Buffer(ctx, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=xh)
        ob = cl.Buffer(ctx, mf.READ_WRITE, xh.nbytes)
        pack = np.zeros(8, dtype=np.int64)
        pack[:5] = (0, 1, 8, 1, 1)
        pack[7] = np.float32(2.0).view(np.uint32)

        def cl_fn():
            kern(q, (8,), None, pack, xb, ob)
            q.finish()
        for _ in range(500):
            cl_fn()
        res = np.empty(8, np.float32)
        cl.enqueue_copy(q, res, ob)
        if not np.array_equal(res, xh * np.float32(2.0)):
            print("dispatch: pyopencl gave wrong results")

    floor = Floor()
    try:
        best = interleaved({
            "tack": lambda: block_us(tack_fn),
            "floor": floor.us if floor.exe else None,
            "pyopencl": (lambda: block_us(cl_fn)) if cl_fn else None,
        }, rounds=20)
    finally:
        floor.close()
    t, f = best["tack"], best.get("floor")
    peers = [("c-floor", f, floor.why), ("pyopencl", best.get("pyopencl"), cl_why)]
    if f is None:
        R.line("dispatch scale len8 opencl", t, peers,
               note="[no C floor to hold the 2 us target against]")
    else:
        R.line("dispatch scale len8 opencl", t, peers, "<= c-floor + 2 us", t <= f + 2.0,
               note=f"[tack - floor {t - f:+.1f} us; best block of 100 calls / "
                    f"300 launches, 20 rounds]")


# ===========================================================================
# 2. Triad
# ===========================================================================

def bench_triad(dev, cl, ctx, q, cl_why):
    n = 1 << 24
    s = 1.5
    rng = np.random.default_rng(0)
    for dt, tdt in ((np.float32, tack.f32), (np.float64, tack.f64)):
        bh = rng.standard_normal(n).astype(dt)
        ch = rng.standard_normal(n).astype(dt)
        want = bh + dt(s) * ch
        gb = 3 * n * np.dtype(dt).itemsize / 1e9
        name = f"triad 2^24 {'f64' if dt is np.float64 else 'f32'} opencl"

        def timed(fn):
            t = time.perf_counter()
            fn()
            tack.synchronize(dev)  # tack's launch returns once queued
            return gb / (time.perf_counter() - t)

        a = tack.zeros((n,), dtype=tdt, device=dev)
        b = tack.array(bh, device=dev)
        c = tack.array(ch, device=dev)
        tack_fn = lambda: triad(a, b, c, s)  # noqa: E731
        tack_fn()
        if not np.array_equal(a.numpy(), want):
            print(f"{name}: tack gave wrong results")

        # The CPU backend on NumPy arrays, for reference.
        ah_cpu = np.zeros(n, dt)
        cpu_fn = lambda: triad(ah_cpu, bh, ch, s)  # noqa: E731
        cpu_fn()
        if not np.array_equal(ah_cpu, want):
            print(f"{name}: tack's CPU backend gave wrong results")

        cl_fn, why = None, cl_why
        if cl is not None:
            fp64 = dt is np.float64
            if fp64 and not ctx.devices[0].double_fp_config:
                why = "the device has no fp64"
            else:
                prg = cl.Program(ctx, TRIAD_SRC).build(options="-DTACK_FP64" if fp64 else "")
                kern = cl.Kernel(prg, "triad_f64" if fp64 else "triad_f32")
                mf = cl.mem_flags
                ab = cl.Buffer(ctx, mf.READ_WRITE, bh.nbytes)
                bb = cl.Buffer(ctx, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=bh)
                cb = cl.Buffer(ctx, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=ch)
                sv = dt(s)

                def cl_fn():
                    kern(q, (n,), None, ab, bb, cb, sv)
                    q.finish()
                cl_fn()
                res = np.empty(n, dt)
                cl.enqueue_copy(q, res, ab)
                if not np.array_equal(res, want):
                    print(f"{name}: pyopencl gave wrong results")

        # Warmed up above; then 10 rounds of one call each, best kept.
        best = interleaved({
            "tack": lambda: timed(tack_fn),
            "pyopencl": (lambda: timed(cl_fn)) if cl_fn else None,
            "cpu": lambda: timed(cpu_fn),
        }, rounds=10, better=max)
        t, p = best["tack"], best.get("pyopencl")
        fmt = lambda v: "n/a" if v is None else f"{v:.1f} GB/s"  # noqa: E731
        peers = [("pyopencl", p, why), ("tack-cpu", best["cpu"], None)]
        if p is None:
            R.line(name, t, peers, fmt=fmt, note="[no pyopencl to hold the 10% target against]")
        else:
            R.line(name, t, peers, ">= 0.90x pyopencl", t >= 0.9 * p, fmt=fmt,
                   note="[best of 10, 3*n*itemsize/time; tack-cpu: NumPy arrays on the CPU device]")
        del a, b, c, ah_cpu
        if cl_fn:
            del ab, bb, cb


def main():
    t0 = time.perf_counter()
    try:
        dev = tack.device("opencl")
    except Exception as e:
        print(f"bench_opencl: skipped, no OpenCL device ({type(e).__name__}: {e})")
        return
    cl, ctx, q, cl_why = open_pyopencl(dev)
    pv = f"pyopencl {cl.VERSION_TEXT}" if cl else f"pyopencl skipped ({cl_why})"
    print(f"tack {tack.__version__}, numpy {np.__version__}, {pv}, {os.cpu_count()} cpus, "
          f"device {dev.description}")
    print("ratios are tack/peer: for times < 1.00x means tack is faster, for GB/s > 1.00x")
    bench_dispatch(dev, cl, ctx, q, cl_why)
    bench_triad(dev, cl, ctx, q, cl_why)
    R.summary()
    print(f"bench_opencl took {time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
