"""A Warp program as written, timed beside Warp (warp-lang's CPU device when
it is importable): the same `i = tid()` kernel launched with
tack.launch(k, dim=n, inputs=[...]) and with wp.launch, on 8 elements (the
cost of a launch) and on 1 << 22 (the kernel's speed).  Tack runs on its
CPU thread pool; Warp's CPU device runs one thread.  Prints one line per
figure with the Tack / Warp ratio, each the best of 3 rounds taken in turn.

    python bench/bench_warp_launch.py"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import interleaved, per_call_us, single_call_us  # noqa: E402

import tack  # noqa: E402


@tack.kernel
def saxpy(x: tack.array(dtype=tack.float32), y: tack.array(dtype=tack.float32), a: float,
          out: tack.array(dtype=tack.float32)):
    i = tack.tid()
    out[i] = a * x[i] + y[i]


def warp_case():
    """(wp, the same kernel in Warp), or (None, why not)."""
    try:
        import warp as wp
    except Exception as e:  # not installed, or a CUDA/driver complaint
        return None, f"{type(e).__name__}: {e}".splitlines()[0][:100]
    wp.config.quiet = True
    wp.init()

    @wp.kernel
    def wsaxpy(x: wp.array(dtype=wp.float32), y: wp.array(dtype=wp.float32), a: float,
               out: wp.array(dtype=wp.float32)):
        i = wp.tid()
        out[i] = a * x[i] + y[i]

    return wp, wsaxpy


def main():
    wp, wsaxpy = warp_case()
    for n in (8, 1 << 22):
        x = np.linspace(0, 1, n, dtype=np.float32)
        y = np.ones(n, np.float32)
        out = np.zeros(n, np.float32)
        measures = {"tack": None, "warp": None}
        timer = per_call_us if n <= 64 else (lambda f: single_call_us(f, reps=50, warmup=5))
        measures["tack"] = lambda: timer(lambda: tack.launch(saxpy, dim=n, inputs=[x, y, 2.0],
                                                             outputs=[out]))
        if wp is not None:
            wx, wy = wp.array(x, device="cpu"), wp.array(y, device="cpu")
            wout = wp.zeros(n, dtype=wp.float32, device="cpu")
            measures["warp"] = lambda: timer(lambda: wp.launch(wsaxpy, dim=n, inputs=[wx, wy, 2.0],
                                                               outputs=[wout], device="cpu"))
        best = interleaved(measures)
        assert np.allclose(out, 2 * x + y), "wrong result"
        line = f"warp-style launch n={n:<8d} tack {best['tack']:9.3f} us"
        if wp is not None:
            assert np.allclose(wout.numpy(), 2 * x + y), "wrong result (warp)"
            line += f"   warp {best['warp']:9.3f} us   tack/warp {best['tack'] / best['warp']:.3f}"
        else:
            line += f"   (warp skipped: {wsaxpy})"
        print(line)


if __name__ == "__main__":
    main()
