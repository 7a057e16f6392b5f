"""2-D heat diffusion: an explicit five-point stencil over the interior of a
grid, launched in 2-D with tack.ndindex, ping-ponging two arrays for several
time steps while the boundary stays fixed. Tack's floats are strict IEEE
(no fused multiply-add, no reassociation), so the result equals NumPy's
slicing with the same order of operations bit for bit.  The picture shows
the plate at four moments, cold blue to hot red.

    python examples/heat.py [--png PATH]
"""
import argparse
import sys
import time

import numpy as np

import tack
from _image import THERMAL, canvas, colorbar, colorize, default_path, paste, save_png


@tack.kernel
def heat_step(u, out, alpha):
    # (i, j) runs over the interior; the boundary rows and columns are not written
    for i, j in tack.ndindex(u.shape[0] - 2, u.shape[1] - 2):
        c = u[i + 1, j + 1]
        lap = u[i, j + 1] + u[i + 2, j + 1] + u[i + 1, j] + u[i + 1, j + 2] - 4 * c
        out[i + 1, j + 1] = c + alpha * lap


def reference_step(u, out, alpha):
    """The same update with NumPy slices, in the same order of operations."""
    c = u[1:-1, 1:-1]
    lap = u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:] - np.float32(4) * c
    out[1:-1, 1:-1] = c + alpha * lap


def initial(ny, nx):
    """A cold plate with a hot left edge, a hot square and a warm disk."""
    u = np.zeros((ny, nx), dtype=np.float32)
    u[:, 0] = 100.0
    r = max(min(ny, nx) // 10, 1)               # the square's half side, the disk's radius
    cy, cx = ny // 2, int(nx * 0.4)
    u[cy - r:cy + r, cx - r:cx + r] = 100.0
    y, x = np.ogrid[:ny, :nx]
    disk = (y - ny * 0.3) ** 2 + (x - nx * 0.75) ** 2 < (1.3 * r) ** 2
    u[1:-1, 1:-1][disk[1:-1, 1:-1]] = 70.0      # inside the boundary
    return u


def snapshots_image(frames):
    """The (step, plate) frames in a 2 x 2 grid on one temperature scale
    (0 to 100), each titled with its step, and a colorbar on the right."""
    ny, nx = frames[0][1].shape
    gap, top, bar_w = 12, 24, 16
    h = 2 * (ny + top) + 2 * gap
    w = 2 * nx + 3 * gap + bar_w + 44
    rgb = canvas(h, w)
    labels = []
    for k, (step, u) in enumerate(frames[:4]):
        y = gap + (k // 2) * (ny + top + gap) + top
        x = gap + (k % 2) * (nx + gap)
        paste(rgb, colorize(u, 0.0, 100.0, THERMAL), y, x)
        labels.append((x, y - top + 4, "step %d" % step))
    bx, by = 2 * nx + 3 * gap, gap + top
    paste(rgb, colorbar(h - by - gap, bar_w, THERMAL), by, bx)
    labels += [(bx + bar_w + 4, by - 2, "100"), (bx + bar_w + 4, h - gap - 14, "0"),
               (bx, 8, "T")]
    return rgb, labels


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", nargs=2, type=int, default=(192, 256), metavar=("NY", "NX"))
    ap.add_argument("--steps", type=int, default=3000)
    ap.add_argument("--png", default=default_path("heat"))
    args = ap.parse_args()
    (ny, nx), steps = args.size, args.steps
    alpha = 0.2                                 # stable for alpha <= 0.25

    # Tack: both buffers start with the same boundary, so it stays fixed
    a = initial(ny, nx)
    b = a.copy()
    shots = {steps // 10, steps // 3}           # with the first and last: the picture
    frames = [(0, a.copy())]
    t0 = time.perf_counter()
    heat_step(a, b, alpha)                      # first call compiles
    t1 = time.perf_counter()
    a, b = b, a
    for step in range(2, steps + 1):
        heat_step(a, b, alpha)
        a, b = b, a
        if step in shots:
            frames.append((step, a.copy()))
    t2 = time.perf_counter()
    frames.append((steps, a.copy()))

    ra = initial(ny, nx)
    rb = ra.copy()
    f_alpha = np.float32(alpha)                 # the kernel's alpha is f32
    for _ in range(steps):
        reference_step(ra, rb, f_alpha)
        ra, rb = rb, ra
    t3 = time.perf_counter()

    print(f"{ny}x{nx}, {steps} steps: tack first call {t1 - t0:.3f}s (with compile), "
          f"{(t2 - t1) / (steps - 1) * 1e3:.2f} ms/step; numpy {(t3 - t2) / steps * 1e3:.2f} ms/step")
    err = float(np.max(np.abs(a - ra)))
    exact = np.array_equal(a.view(np.uint32), ra.view(np.uint32))
    boundary_ok = (np.array_equal(a[:, 0], np.full(ny, 100, np.float32))
                   and not a[0, 1:].any() and not a[-1, 1:].any() and not a[:, -1].any())
    print(f"max abs difference {err:.3g}, bitwise equal: {exact}, boundary fixed: {boundary_ok}")
    print(f"heat in the plate: {a.sum():.1f} (started at {initial(ny, nx).sum():.1f})")
    save_png(args.png, *snapshots_image(frames))
    if err > 1e-6 or not boundary_ok:
        print("MISMATCH against the NumPy reference")
        return 1
    print("heat: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
