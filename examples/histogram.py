"""Particle-in-grid deposit: each particle adds its weight (and a count) to
the grid cell under it. Particles run in parallel and many land in the same
cell, so the adds are atomic: tack.atomic_add with a tuple index for the 2-D
grid. Checked against np.add.at and np.histogram2d.  The picture is the
count per cell with the totals per column and per row as bar charts.

    python examples/histogram.py [--particles N] [--png PATH]
"""
import argparse
import sys
import time

import numpy as np

import tack
from _image import INFERNO, bar_chart, canvas, colorbar, colorize, default_path, enlarge, paste, save_png


@tack.kernel
def deposit(px, py, w, counts, mass):
    for p in range(px.shape[0]):             # the parallel launch: one particle each
        # nearest grid point; particles outside [0, 1) x [0, 1) are dropped
        i = int(px[p] * counts.shape[0])
        j = int(py[p] * counts.shape[1])
        if 0.0 <= px[p] < 1.0 and 0.0 <= py[p] < 1.0:
            tack.atomic_add(counts, (i, j), 1)
            tack.atomic_add(mass, (i, j), w[p])


def counts_image(counts, n):
    """The grid (x to the right, y up) enlarged 4x, colored by count, with
    bar charts of the column totals above it and the row totals to its
    right, and a colorbar."""
    nx, ny = counts.shape
    k, pad, bars = 4, 12, 90
    grid = enlarge(colorize(counts.T[::-1], 0.0, None, INFERNO), k)
    h, w = grid.shape[:2]
    rgb = canvas(2 * pad + 20 + bars + 6 + h + 22, 2 * pad + w + 6 + bars + 12 + 16 + 60)
    top, left = pad + 20, pad
    orange = tuple(INFERNO[5].astype(int))
    paste(rgb, bar_chart(counts.sum(axis=1), bars, k - 1, 1, orange), top, left)
    paste(rgb, grid, top + bars + 6, left)
    paste(rgb, bar_chart(counts.sum(axis=0)[::-1], bars, k - 1, 1, orange, vertical=False),
          top + bars + 6, left + w + 6)
    cx = left + w + 6 + bars + 12
    paste(rgb, colorbar(h, 16), top + bars + 6, cx)
    labels = [(left, pad - 2, "{:,} particles in {} x {} cells".format(n, nx, ny)),
              (cx + 20, top + bars + 2, "%d" % counts.max()),
              (cx + 20, top + bars + h - 10, "0"),
              (left + w // 2, top + bars + 6 + h + 4, "x"),
              (left + w + 6 + bars // 2, top + bars - 12, "y")]
    return rgb, labels


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--particles", type=int, default=4_000_000)
    ap.add_argument("--png", default=default_path("histogram"))
    args = ap.parse_args()
    n, nx, ny = args.particles, 128, 96
    rng = np.random.default_rng(0)
    # a Gaussian blob on a uniform background; some particles fall outside
    px = np.concatenate([rng.normal(0.4, 0.15, n // 2), rng.uniform(-0.05, 1.05, n - n // 2)])
    py = np.concatenate([rng.normal(0.6, 0.10, n // 2), rng.uniform(-0.05, 1.05, n - n // 2)])
    w = rng.uniform(0.5, 2.0, n)

    counts = np.zeros((nx, ny), dtype=np.int64)
    mass = np.zeros((nx, ny), dtype=np.float64)
    t0 = time.perf_counter()
    deposit(px, py, w, counts, mass)         # first call compiles
    t1 = time.perf_counter()
    counts[:] = 0
    mass[:] = 0
    deposit(px, py, w, counts, mass)
    t2 = time.perf_counter()

    # reference: the same cells, accumulated with np.add.at
    inside = (px >= 0) & (px < 1) & (py >= 0) & (py < 1)
    ix = (px[inside] * nx).astype(np.int64)
    iy = (py[inside] * ny).astype(np.int64)
    ref_counts = np.zeros((nx, ny), dtype=np.int64)
    ref_mass = np.zeros((nx, ny), dtype=np.float64)
    np.add.at(ref_counts, (ix, iy), 1)
    np.add.at(ref_mass, (ix, iy), w[inside])
    t3 = time.perf_counter()
    hist, _, _ = np.histogram2d(px, py, bins=(nx, ny), range=((0, 1), (0, 1)))

    print(f"{n} particles into {nx}x{ny}: tack first call {t1 - t0:.3f}s (with compile), "
          f"warm {(t2 - t1) * 1e3:.1f} ms; np.add.at {(t3 - t2) * 1e3:.1f} ms")
    counts_ok = np.array_equal(counts, ref_counts)
    # float sums arrive in a different order, so compare to rounding error
    mass_ok = np.allclose(mass, ref_mass, rtol=1e-12, atol=0)
    # histogram2d finds bins by its own edge arithmetic: a particle exactly
    # on an edge may land one cell over, but the totals agree
    hist_ok = hist.sum() == counts.sum() and np.abs(hist - counts).sum() <= 2e-6 * n
    print(f"deposited {counts.sum()} of {n} particles, total weight {mass.sum():.3f}")
    print(f"counts == np.add.at: {counts_ok}; weights ~ np.add.at: {mass_ok}; "
          f"counts ~ np.histogram2d: {hist_ok}")
    save_png(args.png, *counts_image(counts, n))
    if not (counts_ok and mass_ok and hist_ok):
        print("MISMATCH against the NumPy reference")
        return 1
    print("histogram: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
