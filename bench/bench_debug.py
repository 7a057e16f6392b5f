"""Debug mode's cost: the same kernels with bounds checks off and on.

    python bench/bench_debug.py

One line per kernel: "NAME plain X ms debug Y ms slowdown Z.Zx", each time
the best of several launches after a warm-up (compiles excluded), the plain
and debug launches interleaved so both see the same machine state.  The
results of both modes are checked against NumPy.  The disk cache is off
(unless TACK_CACHE is set).
"""
import os
import sys
import time

os.environ.setdefault("TACK_CACHE", "off")

import numpy as np  # noqa: E402

import tack  # noqa: E402

TRIAD_N = 1 << 24
STENCIL_N = 1 << 24
MATMUL_N = 256
ROUNDS = 5       # interleaved rounds; each times REPS launches per mode
REPS = 3


@tack.kernel
def triad(a, b, c, s):
    for i in range(a.shape[0]):
        a[i] = b[i] + s * c[i]


@tack.kernel
def stencil3(x, out, w0, w1):
    for i in range(out.shape[0]):
        out[i] = w0 * x[i + 1] + w1 * (x[i] + x[i + 2])


@tack.kernel
def matmul(a, b, c):
    for i, j in tack.ndindex(c.shape[0], c.shape[1]):
        acc = 0.0
        for k in range(a.shape[1]):
            acc += a[i, k] * b[k, j]
        c[i, j] = acc


def best_pair(fn, args):
    """Best times (s) of fn(*args) with debug mode off and on, interleaved."""
    best = {False: float("inf"), True: float("inf")}
    for mode in (False, True):             # warm-up: compile both variants
        tack.set_debug(mode)
        fn(*args)
    for _ in range(ROUNDS):
        for mode in (False, True):
            tack.set_debug(mode)
            for _ in range(REPS):
                t = time.perf_counter()
                fn(*args)
                best[mode] = min(best[mode], time.perf_counter() - t)
    tack.set_debug(False)
    return best[False], best[True]


def check(name, mode, got, expected, exact=True):
    ok = np.array_equal(got, expected) if exact else np.allclose(got, expected, rtol=1e-12)
    if not ok:
        print(f"{name}: wrong results with debug mode {'on' if mode else 'off'}")
        sys.exit(1)


def checked(name, fn, args, out, expected, exact=True):
    for mode in (False, True):
        tack.set_debug(mode)
        out[...] = 0
        fn(*args)
        check(name, mode, out, expected, exact)
    tack.set_debug(False)


def report(name, plain_s, debug_s):
    print(f"{name} plain {plain_s * 1e3:.2f} ms debug {debug_s * 1e3:.2f} ms "
          f"slowdown {debug_s / plain_s:.1f}x", flush=True)


def main():
    print(f"tack {tack.__version__}, numpy {np.__version__}, {os.cpu_count()} cpus, "
          f"TACK_CACHE={os.environ.get('TACK_CACHE')}")

    a = np.zeros(TRIAD_N)
    b = np.arange(TRIAD_N, dtype=np.float64)
    c = np.full(TRIAD_N, 2.0)
    checked("triad", triad, (a, b, c, 3.0), a, b + 3.0 * c)
    report("triad", *best_pair(triad, (a, b, c, 3.0)))

    x = np.random.default_rng(0).standard_normal(STENCIL_N + 2)
    out = np.zeros(STENCIL_N)
    expected = 0.5 * x[1:-1] + 0.25 * (x[:-2] + x[2:])
    checked("stencil3", stencil3, (x, out, 0.5, 0.25), out, expected)
    report("stencil3", *best_pair(stencil3, (x, out, 0.5, 0.25)))

    rng = np.random.default_rng(1)
    ma = rng.standard_normal((MATMUL_N, MATMUL_N))
    mb = rng.standard_normal((MATMUL_N, MATMUL_N))
    mc = np.zeros((MATMUL_N, MATMUL_N))
    checked("matmul", matmul, (ma, mb, mc), mc, ma @ mb, exact=False)
    report(f"matmul{MATMUL_N}", *best_pair(matmul, (ma, mb, mc)))


if __name__ == "__main__":
    main()
