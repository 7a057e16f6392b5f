"""N-body gravity in f32: every body sums the pull of every other body in a
sequential inner loop, with a softening term so close pairs stay finite.
The pairwise interaction is a @tack.func device function returning a tuple.
Checked against a vectorized NumPy reference.

    python examples/nbody.py [--png PATH]
"""
import argparse
import math
import sys
import time

import numpy as np

import tack
from _image import colorize, default_path, save_png

G = 1.0          # gravitational constant in model units (inlined into the kernel)
SOFTENING = 1e-2


@tack.func
def pair_accel(xi, yi, zi, xj, yj, zj, mj):
    """Acceleration on body i from body j (zero for j == i: dx = dy = dz = 0)."""
    dx = xj - xi
    dy = yj - yi
    dz = zj - zi
    r2 = dx * dx + dy * dy + dz * dz + SOFTENING * SOFTENING
    inv_r = 1.0 / math.sqrt(r2)
    s = G * mj * inv_r * inv_r * inv_r
    return dx * s, dy * s, dz * s


@tack.kernel
def nbody_step(pos, vel, mass, new_pos, new_vel, dt):
    for i in range(pos.shape[0]):            # the parallel launch: one body each
        ax = 0.0                              # f32: all arrays are f32
        ay = 0.0
        az = 0.0
        for j in range(pos.shape[0]):        # sequential sum over all bodies
            fx, fy, fz = pair_accel(pos[i, 0], pos[i, 1], pos[i, 2],
                                    pos[j, 0], pos[j, 1], pos[j, 2], mass[j])
            ax += fx
            ay += fy
            az += fz
        # semi-implicit Euler: new velocity, then position with it
        vx = vel[i, 0] + ax * dt
        vy = vel[i, 1] + ay * dt
        vz = vel[i, 2] + az * dt
        new_vel[i, 0] = vx
        new_vel[i, 1] = vy
        new_vel[i, 2] = vz
        new_pos[i, 0] = pos[i, 0] + vx * dt
        new_pos[i, 1] = pos[i, 1] + vy * dt
        new_pos[i, 2] = pos[i, 2] + vz * dt


def reference_step(pos, vel, mass, dt):
    """The same step with NumPy broadcasting, in f64."""
    d = pos[None, :, :] - pos[:, None, :]                 # d[i, j] = pos[j] - pos[i]
    r2 = (d * d).sum(axis=2) + SOFTENING * SOFTENING
    s = G * mass[None, :] / (r2 * np.sqrt(r2))
    acc = (d * s[:, :, None]).sum(axis=1)
    vel = vel + acc * dt
    return pos + vel * dt, vel


def bodies_image(pos, vel, size=512, extent=3.0):
    """Bodies seen along z, each a 2x2 dot colored by its speed (the
    fastest drawn last, on top)."""
    speed = np.linalg.norm(vel, axis=1)
    colors = colorize(speed[None, :])[0]
    px = ((pos[:, :2] + extent) / (2 * extent) * (size - 1)).astype(np.int64)
    rgb = np.zeros((size, size, 3), dtype=np.uint8)
    for k in np.argsort(speed):
        x, y = px[k]
        if 0 <= x < size - 1 and 0 <= y < size - 1:
            rgb[size - 2 - y:size - y, x:x + 2] = colors[k]
    return rgb


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bodies", type=int, default=2048)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--png", default=default_path("nbody"))
    args = ap.parse_args()
    n, steps, dt = args.bodies, args.steps, 1e-3
    rng = np.random.default_rng(0)
    pos = rng.standard_normal((n, 3)).astype(np.float32)
    vel = (0.1 * rng.standard_normal((n, 3))).astype(np.float32)
    mass = rng.uniform(0.5, 1.5, n).astype(np.float32) / n

    # Tack: ping-pong two pairs of buffers
    p, v = pos.copy(), vel.copy()
    p2, v2 = np.empty_like(p), np.empty_like(v)
    t0 = time.perf_counter()
    nbody_step(p, v, mass, p2, v2, dt)       # first call compiles
    t1 = time.perf_counter()
    p, v, p2, v2 = p2, v2, p, v
    for _ in range(steps - 1):
        nbody_step(p, v, mass, p2, v2, dt)
        p, v, p2, v2 = p2, v2, p, v
    t2 = time.perf_counter()

    rp, rv = pos.astype(np.float64), vel.astype(np.float64)
    for _ in range(steps):
        rp, rv = reference_step(rp, rv, mass.astype(np.float64), dt)
    t3 = time.perf_counter()

    print(f"n={n}, {steps} steps: tack first call {t1 - t0:.3f}s (with compile), "
          f"{(t2 - t1) / max(steps - 1, 1) * 1e3:.1f} ms/step; numpy {(t3 - t2) / steps * 1e3:.1f} ms/step")
    # velocities can be near zero, so compare them relative to their scale
    pos_err = np.max(np.abs(p - rp) / np.maximum(np.abs(rp), 1e-3))
    vel_err = np.max(np.abs(v - rv)) / np.max(np.abs(rv))
    print(f"max relative error: positions {pos_err:.2e}, velocities {vel_err:.2e}")
    save_png(args.png, bodies_image(p, v))
    if not (pos_err < 1e-4 and vel_err < 1e-4):
        print("MISMATCH against the NumPy reference")
        return 1
    print("nbody: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
