"""Backward (the adjoint kernel) against forward for an element-wise
kernel, a stencil and a particle step (docs/autodiff.md), on one device;
prints each median and the ratio backward / forward.  When warp-lang is
importable, the same four kernels written in Warp (CPU device) are timed in
the same process, forward and backward (wp.Tape), and each line adds Warp's
backward / forward ratio and Tack's time over Warp's (forward and backward);
otherwise the Warp column is skipped with a note.  Warp runs its CPU
kernels on one thread; Tack's CPU backend uses every core.

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


def warp_cases(n, side, rng):
    """The four kernels in Warp, each as (name, forward, backward): forward
    launches once, backward runs a wp.Tape that recorded that launch (the
    outputs' gradients seeded with ones, as Tack's are whatever .grad holds;
    both accumulate across repetitions, which changes no work).  None when
    warp is not importable."""
    try:
        import warp as wp
    except ImportError:
        return None
    wp.config.quiet = True
    wp.init()

    @wp.kernel
    def w_elementwise(x: wp.array(dtype=float), y: wp.array(dtype=float)):
        i = wp.tid()
        y[i] = wp.sin(x[i]) * wp.exp(-x[i] * x[i]) + wp.sqrt(x[i] * x[i] + 1.0)

    @wp.kernel
    def w_stencil(x: wp.array(dtype=float), y: wp.array(dtype=float)):
        i = wp.tid() + 1
        y[i] = 0.25 * x[i - 1] + 0.5 * x[i] + 0.25 * x[i + 1]

    @wp.kernel
    def w_stencil2d(u: wp.array2d(dtype=float), v: wp.array2d(dtype=float)):
        i, j = wp.tid()
        i += 1
        j += 1
        v[i, j] = 0.25 * (u[i - 1, j] + u[i + 1, j] + u[i, j - 1] + u[i, j + 1]) - u[i, j]

    @wp.kernel
    def w_particles(p: wp.array(dtype=float), v: wp.array(dtype=float), f: wp.array(dtype=float),
                    dt: float, p2: wp.array(dtype=float), v2: wp.array(dtype=float)):
        i = wp.tid()
        a = f[i] - 0.1 * v[i]
        w = v[i] + a * dt
        v2[i] = w
        p2[i] = p[i] + w * dt

    def arr(shape):
        return wp.array(rng.uniform(0.1, 1.0, shape).astype(np.float32), dtype=float, device="cpu",
                        requires_grad=True)

    def case(kernel, dim, inputs, outputs):
        def fwd():
            wp.launch(kernel, dim=dim, inputs=inputs, outputs=outputs, device="cpu")
            wp.synchronize_device("cpu")
        tape = wp.Tape()
        with tape:
            wp.launch(kernel, dim=dim, inputs=inputs, outputs=outputs, device="cpu")
        for o in outputs:
            o.grad.fill_(1.0)

        def bwd():
            tape.backward()
            wp.synchronize_device("cpu")
        return fwd, bwd

    x, y = arr(n), arr(n)
    u, v = arr((side, side)), arr((side, side))
    p, vv, f, p2, v2 = arr(n), arr(n), arr(n), arr(n), arr(n)
    return {"elementwise": case(w_elementwise, n, [x], [y]),
            "stencil": case(w_stencil, n - 2, [x], [y]),
            "stencil 2-D": case(w_stencil2d, (side - 2, side - 2), [u], [v]),
            "particle step": case(w_particles, n, [p, vv, f, 0.01], [p2, v2])}


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
    warp = warp_cases(n, side, rng) if args.device == "cpu" else None
    if warp is not None:
        import warp as wp
        warp_note = f"Warp {wp.config.version} cpu (one thread)"
    else:
        warp_note = ("Warp column skipped (warp-lang not importable)" if args.device == "cpu"
                     else "Warp column skipped (its CPU backend is compared on --device cpu only)")
    print(f"device {dev}, n = {n} ({side} x {side} for 2-D), f32; {warp_note}")
    for name, k, a in cases:
        fwd = median_time(lambda: k(*a), args.reps)
        bwd = median_time(lambda: k.backward(*a), args.reps)
        line = (f"{name:14s} forward {fwd * 1e3:8.3f} ms  backward {bwd * 1e3:8.3f} ms  "
                f"ratio {bwd / fwd:5.2f}")
        if warp is not None:
            wf, wb = warp[name]
            wfwd, wbwd = median_time(wf, args.reps), median_time(wb, args.reps)
            line += (f"  | Warp forward {wfwd * 1e3:8.3f} ms  backward {wbwd * 1e3:8.3f} ms  "
                     f"ratio {wbwd / wfwd:5.2f}  | Tack/Warp forward {fwd / wfwd:5.2f} "
                     f"backward {bwd / wbwd:5.2f}")
        print(line)


if __name__ == "__main__":
    main()
