"""Foundation benchmark: compile cost, warm dispatch cost and memory bandwidth,
with C (OpenMP) and Numba beside Tack where they are available.

    python bench/bench_foundation.py

Prints one line per figure.  The disk cache is off (unless TACK_CACHE is set)
so the compile figures are cold compiles.
"""
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

os.environ.setdefault("TACK_CACHE", "off")

import numpy as np  # noqa: E402

t0 = time.perf_counter()
import tack  # noqa: E402
IMPORT_S = time.perf_counter() - t0

HERE = os.path.dirname(os.path.abspath(__file__))
TRIAD_N = 1 << 25
TRIAD_REPS = 10
DISPATCH_BATCH = 200
DISPATCH_BATCHES = 300


@tack.kernel
def scale(x, out, a):
    for i in range(x.shape[0]):
        out[i] = x[i] * a


@tack.kernel
def no_arrays(a, n):
    for i in range(n):
        pass


@tack.kernel
def saxpy(a, x, y, out):
    for i in range(out.shape[0]):
        out[i] = a * x[i] + y[i]


@tack.kernel
def triad(a, b, c, s):
    for i in range(a.shape[0]):
        a[i] = b[i] + s * c[i]


def first_call_cost(fn, *args):
    """First call (compile + run) minus a warm call, in seconds."""
    t = time.perf_counter()
    fn(*args)
    first = time.perf_counter() - t
    warm = min(timed(fn, *args) for _ in range(5))
    return first - warm, first


def timed(fn, *args):
    t = time.perf_counter()
    fn(*args)
    return time.perf_counter() - t


def dispatch_median_us(fn, *args):
    """Median over batches of the mean time of one call, in microseconds."""
    for _ in range(1000):
        fn(*args)
    tack._jit_wait()
    per_call = []
    for _ in range(DISPATCH_BATCHES):
        t = time.perf_counter_ns()
        for _ in range(DISPATCH_BATCH):
            fn(*args)
        per_call.append((time.perf_counter_ns() - t) / DISPATCH_BATCH / 1000.0)
    return statistics.median(per_call)


def gbps(seconds, n=TRIAD_N):
    return 24.0 * n / seconds / 1e9


def best_of(fn, *args, reps=TRIAD_REPS):
    fn(*args)  # warm (compile, first touch)
    tack._jit_wait()  # time the optimized code, not tier 0
    return min(timed(fn, *args) for _ in range(reps))


def c_triad():
    """GB/s of bench/triad.c built with gcc -O3 -march=native -fopenmp, or None."""
    gcc = shutil.which("gcc")
    if gcc is None:
        return None, "gcc not found"
    exe = os.path.join(tempfile.gettempdir(), f"tack_triad_{os.getpid()}")
    try:
        subprocess.run([gcc, "-O3", "-march=native", "-fopenmp",
                        os.path.join(HERE, "triad.c"), "-o", exe],
                       check=True, capture_output=True, text=True)
        out = subprocess.run([exe], check=True, capture_output=True, text=True)
        return float(out.stdout.strip()), None
    except (subprocess.CalledProcessError, ValueError) as e:
        return None, str(getattr(e, "stderr", e)).strip()[:200]
    finally:
        if os.path.exists(exe):
            os.remove(exe)


def numba_peers():
    """(njit scale, njit(parallel) scale, parallel triad, njit no_arrays) or
    None if no Numba."""
    try:
        import numba
    except Exception as e:  # ImportError, or a Numba/NumPy version clash
        return None, f"{type(e).__name__}: {e}"

    @numba.njit
    def nb_scale(x, out, a):
        for i in range(x.shape[0]):
            out[i] = x[i] * a

    @numba.njit(parallel=True)
    def nb_scale_par(x, out, a):
        for i in numba.prange(x.shape[0]):
            out[i] = x[i] * a

    @numba.njit(parallel=True)
    def nb_triad(a, b, c, s):
        for i in numba.prange(a.shape[0]):
            a[i] = b[i] + s * c[i]

    @numba.njit
    def nb_no_arrays(a, n):
        for i in range(n):
            pass

    return (nb_scale, nb_scale_par, nb_triad, nb_no_arrays), None


def ratio(a, b):
    return f"{a / b:.2f}" if a and b else "n/a"


def main():
    print(f"tack {tack.__version__}, numpy {np.__version__}, python {sys.version.split()[0]}, "
          f"{os.cpu_count()} cpus, TACK_CACHE={os.environ.get('TACK_CACHE')}")
    print(f"import tack             {IMPORT_S * 1e3:8.1f} ms")

    # (a) cold compiles
    x8 = np.arange(8, dtype=np.float32)
    o8 = np.zeros(8, dtype=np.float32)
    c0 = tack.stats()["compiles"]
    first_kernel, first_total = first_call_cost(scale, x8, o8, 2.0)
    second_kernel, second_total = first_call_cost(saxpy, 2.0, x8, x8, o8)
    compiles = tack.stats()["compiles"] - c0
    print(f"compile first kernel    {first_kernel * 1e3:8.1f} ms   (first call {first_total * 1e3:.1f} ms)")
    print(f"compile second kernel   {second_kernel * 1e3:8.1f} ms   (first call {second_total * 1e3:.1f} ms, "
          f"{compiles} compiles)")

    # (b) warm dispatch, length 8, and of a kernel without arrays: Tack and
    # njit alternate, best of three each, since this machine's speed
    # drifts between runs by more than the difference measured.
    peers, why = numba_peers()
    if not peers:
        print(f"dispatch len 8 tack     {dispatch_median_us(scale, x8, o8, 2.0):8.3f} us"
              f"   numba: skipped ({why})")
    else:
        nb_scale, nb_scale_par, nb_triad, nb_no_arrays = peers
        x8d, o8d = x8.copy(), o8.copy()
        rounds = [(dispatch_median_us(scale, x8, o8, 2.0), dispatch_median_us(nb_scale, x8d, o8d, 2.0),
                   dispatch_median_us(no_arrays, 1.5, 1), dispatch_median_us(nb_no_arrays, 1.5, 1))
                  for _ in range(3)]
        tack_us, nb_us, tack_none, nb_none = (min(r[i] for r in rounds) for i in range(4))
        nbp_us = dispatch_median_us(nb_scale_par, x8d, o8d, 2.0)
        print(f"dispatch len 8 tack     {tack_us:8.3f} us   numba-njit {nb_us:.3f} us  "
              f"ratio {ratio(tack_us, nb_us)}   numba-parallel {nbp_us:.3f} us  "
              f"ratio {ratio(tack_us, nbp_us)}   (target njit <= 0.8)")
        print(f"dispatch no arrays tack {tack_none:8.3f} us   numba-njit {nb_none:.3f} us  "
              f"ratio {ratio(tack_none, nb_none)}   (target <= 0.8)")

    # (c) triad bandwidth
    a = np.zeros(TRIAD_N)
    b = np.arange(TRIAD_N, dtype=np.float64)
    c = np.full(TRIAD_N, 2.0)
    tack_gbps = gbps(best_of(triad, a, b, c, 3.0))
    if not np.array_equal(a[:: TRIAD_N // 7], b[:: TRIAD_N // 7] + 6.0):
        print("triad: tack gave wrong results")
        sys.exit(1)
    parts = [f"triad tack {tack_gbps:.1f} GB/s"]
    c_gbps, why_c = c_triad()
    parts.append(f"c-openmp {c_gbps:.1f} GB/s  ratio {ratio(tack_gbps, c_gbps)}"
                 if c_gbps else f"c-openmp skipped ({why_c})")
    if peers:
        a[:] = 0.0
        nb_gbps = gbps(best_of(nb_triad, a, b, c, 3.0))
        parts.append(f"numba-parallel {nb_gbps:.1f} GB/s  ratio {ratio(tack_gbps, nb_gbps)}")
    else:
        parts.append(f"numba skipped ({why})")
    print("   ".join(parts))
    print("stats", tack.stats())


if __name__ == "__main__":
    main()
