"""The Mandelbrot set: one kernel thread per pixel iterates z = z*z + c in
f64 until |z| > 2 or the iteration budget runs out, launched in 2-D with
tack.ndindex.  The escape counts equal a vectorized NumPy reference's
exactly (Tack's floats are strict IEEE, with the same order of operations),
and the picture is written as a PNG.

    python examples/mandelbrot.py [--size W H] [--png PATH] [--device NAME]
"""
import argparse
import sys
import time

import numpy as np

import tack
from _image import colorize, default_path, save_png


@tack.kernel
def escape_counts(counts, xs, ys, max_iter):
    # xs and ys are f64, so the float literals and locals are f64 too
    for row, col in tack.ndindex(counts.shape[0], counts.shape[1]):
        cr = xs[col]
        ci = ys[row]
        zr = 0.0
        zi = 0.0
        n = 0
        while n < max_iter:
            zr2 = zr * zr
            zi2 = zi * zi
            if zr2 + zi2 > 4.0:
                break
            zi = 2.0 * zr * zi + ci
            zr = zr2 - zi2 + cr
            n += 1
        counts[row, col] = n


def reference_counts(xs, ys, max_iter):
    """The same iteration over the whole grid at once with NumPy."""
    h, w = len(ys), len(xs)
    cr = np.broadcast_to(xs[None, :], (h, w))
    ci = np.broadcast_to(ys[:, None], (h, w))
    zr = np.zeros((h, w))
    zi = np.zeros((h, w))
    counts = np.zeros((h, w), dtype=np.int32)
    live = np.ones((h, w), dtype=bool)
    for _ in range(max_iter):
        zr2 = zr * zr
        zi2 = zi * zi
        live &= ~(zr2 + zi2 > 4.0)
        if not live.any():
            break
        zi = np.where(live, 2.0 * zr * zi + ci, zi)
        zr = np.where(live, zr2 - zi2 + cr, zr)
        counts += live
    return counts


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", nargs=2, type=int, default=(960, 640), metavar=("W", "H"))
    ap.add_argument("--png", default=default_path("mandelbrot"))
    ap.add_argument("--device", default="cpu")
    args = ap.parse_args()
    w, h = args.size
    max_iter = 256
    step = 3.0 / w                                      # x from -2.2 to 0.8
    xs = -2.2 + step * np.arange(w)
    ys = step * (np.arange(h) - h / 2)

    counts = tack.zeros((h, w), dtype=tack.i32, device=args.device)
    xs_dev = tack.array(xs, device=args.device)
    ys_dev = tack.array(ys, device=args.device)
    t0 = time.perf_counter()
    escape_counts(counts, xs_dev, ys_dev, max_iter)    # first call compiles
    t1 = time.perf_counter()
    escape_counts(counts, xs_dev, ys_dev, max_iter)
    t2 = time.perf_counter()
    got = counts.numpy()
    ref = reference_counts(xs, ys, max_iter)
    t3 = time.perf_counter()
    print(f"{w}x{h}, up to {max_iter} iterations on {args.device}: tack first call "
          f"{t1 - t0:.3f}s (with compile), then {(t2 - t1) * 1e3:.1f} ms; numpy {(t3 - t2) * 1e3:.0f} ms")
    wrong = int(np.count_nonzero(got != ref))
    print(f"pixels differing from the NumPy reference: {wrong} of {w * h}")
    # Log of the count spreads the detail near the set's edge over the ramp;
    # points inside the set (the full budget) are drawn black.
    shade = np.log1p(got.astype(np.float64))
    rgb = colorize(shade)
    rgb[got == max_iter] = 0
    save_png(args.png, rgb)
    if wrong:
        print("MISMATCH against the NumPy reference")
        return 1
    print("mandelbrot: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
