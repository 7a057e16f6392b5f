"""N-body gravity in f32: every body sums the pull of every other body in a
sequential inner loop, with a softening term so close pairs stay finite.
The pairwise interaction is a @tack.func device function returning a tuple.
The bodies are two disk galaxies (a heavy core and light stars on circular
orbits each) falling past each other.  The first steps are checked against
a vectorized NumPy reference; the run goes on for the picture: four
moments of the encounter, each star drawn with a short trail of its last
steps and each core with its whole path.

    python examples/nbody.py [--bodies N] [--steps CHECKED] [--film STEPS] [--png PATH]
"""
import argparse
import math
import sys
import time

import numpy as np

import tack
from _image import canvas, default_path, paste, save_png

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


def galaxies(n, rng):
    """Two disks of n // 2 bodies: each a core of mass 1 and stars of total
    mass 0.05 on circular orbits (radius 0.2 to 0.9) around it, turning the
    same way, the disks moving toward each other on parallel tracks."""
    pos = np.zeros((n, 3))
    vel = np.zeros((n, 3))
    mass = np.zeros(n)
    for lo, hi, cx, cy, vx in ((0, n // 2, -2.2, -1.6, 0.3), (n // 2, n, 2.2, 1.6, -0.3)):
        k = hi - lo - 1                          # stars after the core
        pos[lo] = cx, cy, 0.0
        vel[lo] = vx, 0.0, 0.0
        mass[lo] = 1.0
        r = np.sqrt(rng.uniform(0.2 ** 2, 0.9 ** 2, k))   # even over the disk's area
        theta = rng.uniform(0.0, 2.0 * np.pi, k)
        v = np.sqrt(G * 1.0 / r)                 # circular speed around the core
        pos[lo + 1:hi] = np.stack([cx + r * np.cos(theta), cy + r * np.sin(theta),
                                   0.02 * rng.standard_normal(k)], axis=1)
        vel[lo + 1:hi] = np.stack([vx - v * np.sin(theta), v * np.cos(theta), np.zeros(k)], axis=1)
        mass[lo + 1:hi] = 0.05 / k
    return pos.astype(np.float32), vel.astype(np.float32), mass.astype(np.float32)


class Film:
    """Four panels of the x-y plane: the start, and three later moments at
    which each star shows its last TRAIL positions (brighter when recent);
    the two cores' paths are drawn whole.  Galaxy one is orange, two blue."""
    SIZE, EXTENT, TRAIL, GAP = 300, 3.6, 30, 8
    COLORS = np.array([[255, 140, 50], [80, 160, 255]], dtype=np.float64)

    def __init__(self, n, steps):
        self.n, self.marks = n, [0, steps // 3, 2 * steps // 3, steps]
        self.light = np.zeros((4, 2, self.SIZE, self.SIZE))
        self.cores = []

    def pixels(self, xy):
        px = np.floor((xy + self.EXTENT) / (2 * self.EXTENT) * self.SIZE).astype(np.int64)
        inside = (px >= 0).all(axis=1) & (px < self.SIZE).all(axis=1)
        return self.SIZE - 1 - px[inside, 1], px[inside, 0]

    def record(self, step, pos):
        """Called with the positions after each step (and step 0)."""
        half = self.n // 2
        self.cores.append(pos[[0, half], :2].astype(np.float64))
        for k, mark in enumerate(self.marks):
            if mark - self.TRAIL < step <= mark:
                age = (mark - step) / self.TRAIL
                weight = 2.0 if mark == 0 else 0.1 + 0.9 * (1 - age) ** 2   # no trail at the start
                for g, stars in enumerate((pos[1:half], pos[half + 1:])):
                    np.add.at(self.light[k, g], self.pixels(stars[:, :2]), weight)

    def image(self):
        s, gap = self.SIZE, self.GAP
        rgb = canvas(2 * s + 3 * gap, 2 * s + 3 * gap)
        cores = np.array(self.cores)             # (steps + 1, 2 cores, 2)
        labels = []
        for k, mark in enumerate(self.marks):
            light = np.minimum(self.light[k], 2.5) / 2.0
            panel = np.minimum(np.tensordot(light, self.COLORS, axes=(0, 0)), 255)
            for g in range(2):                    # the path, 4 points per step
                a, b = cores[:mark, g], cores[1:mark + 1, g]
                f = np.linspace(0.0, 1.0, 4)[None, :, None]
                pts = (a[:, None] + (b - a)[:, None] * f).reshape(-1, 2)
                panel[self.pixels(np.concatenate([cores[:1, g], pts]))] = 235
            y, x = gap + (k // 2) * (s + gap), gap + (k % 2) * (s + gap)
            paste(rgb, panel.astype(np.uint8), y, x)
            labels.append((x + 6, y + 4, "step %d" % mark))
        return rgb, labels


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bodies", type=int, default=1024)
    ap.add_argument("--steps", type=int, default=5, help="steps checked against NumPy")
    ap.add_argument("--film", type=int, default=750, help="steps run in all, for the picture")
    ap.add_argument("--png", default=default_path("nbody"))
    args = ap.parse_args()
    n, steps, dt = args.bodies, args.steps, 1e-2
    pos, vel, mass = galaxies(n, np.random.default_rng(0))

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
    if not (pos_err < 1e-4 and vel_err < 1e-4):
        print("MISMATCH against the NumPy reference")
        return 1

    # The encounter, from the start again, for the picture: only when it can
    # be written.
    try:
        import PIL  # noqa: F401
    except ImportError:
        print("(no picture: `pip install pillow` to write %s)" % args.png)
        print("nbody: ok")
        return 0
    film = Film(n, args.film)
    p, v = pos.copy(), vel.copy()
    film.record(0, p)
    t4 = time.perf_counter()
    for step in range(1, args.film + 1):
        nbody_step(p, v, mass, p2, v2, dt)
        p, v, p2, v2 = p2, v2, p, v
        film.record(step, p)
        if step % 50 == 0 or step == args.film:
            # One line redrawn in place: the film takes a few seconds.
            print(f"\rfilming: step {step}/{args.film}", end="" if step < args.film else "\n",
                  flush=True)
    print(f"{args.film} steps for the picture: {time.perf_counter() - t4:.2f}s")
    save_png(args.png, *film.image())
    print("nbody: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
