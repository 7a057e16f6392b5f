"""A chain of masses on springs, pinned at one end, falls under gravity;
gradient descent on the springs' rest lengths makes its free end reach a
goal after STEPS time steps.  The gradient flows back through every step
(each step a launch recorded by tack.Tape, docs/autodiff.md).  Writes the
loss curve and the first and last chains to build/examples/spring_fit.png.

    python examples/spring_fit.py [--device opencl] [--png PATH]"""
import argparse
import math
import sys

import numpy as np

import tack
from _image import canvas, default_path, save_png

N, STEPS, DT, G, K, DAMPING = 8, 40, 0.01, 9.8, 400.0, 0.98


@tack.kernel
def step(x, y, vx, vy, rest, x1, y1, vx1, vy1):
    for i in range(x.shape[0]):
        if i == 0:  # the pinned mass
            x1[i] = x[i]
            y1[i] = y[i]
            vx1[i] = 0.0
            vy1[i] = 0.0
        else:
            dx = x[i] - x[i - 1]
            dy = y[i] - y[i - 1]
            d = math.sqrt(dx * dx + dy * dy)
            f = K * (d - rest[i - 1]) / d
            fx = -f * dx
            fy = -f * dy - G
            if i + 1 < x.shape[0]:
                ex = x[i + 1] - x[i]
                ey = y[i + 1] - y[i]
                e = math.sqrt(ex * ex + ey * ey)
                h = K * (e - rest[i]) / e
                fx = fx + h * ex
                fy = fy + h * ey
            u = (vx[i] + DT * fx) * DAMPING
            w = (vy[i] + DT * fy) * DAMPING
            vx1[i] = u
            vy1[i] = w
            x1[i] = x[i] + DT * u
            y1[i] = y[i] + DT * w


@tack.kernel
def miss(x, y, goal, loss):
    for i in range(1):
        n = x.shape[0] - 1
        loss[i] = (x[n] - goal[0]) ** 2 + (y[n] - goal[1]) ** 2


def simulate(rest, dev, tape=None):
    """The chain's states, one set of arrays per step (a kernel may not
    overwrite what it reads: the reverse sweep needs the old values)."""
    def state():
        return [tack.zeros(N, dtype=tack.f64, device=dev, requires_grad=True) for _ in range(4)]
    states = [state() for _ in range(STEPS + 1)]
    tack.copyto(states[0][0], np.arange(N) * 0.2)  # horizontal, at rest
    for t in range(STEPS):
        if tape is not None:
            with tape:
                step(*states[t], rest, *states[t + 1])
        else:
            step(*states[t], rest, *states[t + 1])
    return states


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--png", default=default_path("spring_fit"))
    ap.add_argument("--iters", type=int, default=60)
    args = ap.parse_args()
    dev = tack.device(args.device)
    # The goal: where the end lands with rest lengths 0.25, so it is reachable.
    target = simulate(tack.array(np.full(N - 1, 0.25), device=dev), dev)[-1]
    goal = tack.array(np.array([target[0].numpy()[-1], target[1].numpy()[-1]]), device=dev)
    rest = tack.array(np.full(N - 1, 0.2), device=dev, requires_grad=True)
    loss = tack.zeros(1, dtype=tack.f64, device=dev, requires_grad=True)
    losses, chains = [], []
    tape = tack.Tape()
    for it in range(args.iters):
        states = simulate(rest, dev, tape)
        with tape:
            miss(states[-1][0], states[-1][1], goal, loss)
        losses.append(loss.numpy()[0])
        if it == 0:
            chains.append((states[-1][0].numpy(), states[-1][1].numpy()))
        tape.backward(loss)
        g = rest.grad.numpy()
        tack.copyto(rest, rest.numpy() - 0.1 * g / max(1.0, np.abs(g).max()))  # a clipped step
        tape.zero()
        tape.reset()
        if it % 10 == 0:
            print(f"iter {it:3d}: loss {losses[-1]:.3e}")
    final = simulate(rest, dev)[-1]
    miss(final[0], final[1], goal, loss)
    losses.append(loss.numpy()[0])
    chains.append((final[0].numpy(), final[1].numpy()))
    print(f"final loss {losses[-1]:.3g} (first {losses[0]:.3g}), rest lengths {rest.numpy().round(3)}")

    img = canvas(300, 640)
    for (xs, ys), color in zip(chains, ((120, 120, 120), (230, 90, 40))):  # left: the chains
        for k in range(N - 1):  # each spring as a dotted segment, each mass as a square
            for f in np.linspace(0.0, 1.0, 24):
                x, y = xs[k] + f * (xs[k + 1] - xs[k]), ys[k] + f * (ys[k + 1] - ys[k])
                px, py = int(20 + x * 170), int(40 - y * 170)
                if 0 <= px < 320 and 0 <= py < 300:
                    img[py, px] = color
        for x, y in zip(xs, ys):
            px, py = int(20 + x * 170), int(40 - y * 170)
            if 0 <= px < 320 and 0 <= py < 300:
                img[max(py - 2, 0):py + 3, max(px - 2, 0):px + 3] = color
    gx, gy = goal.numpy()
    px, py = int(20 + gx * 170), int(40 - gy * 170)
    if 0 <= px < 320 and 0 <= py < 300:
        img[max(py - 4, 0):py + 5, max(px - 4, 0):px + 5] = (40, 200, 80)
    logs = np.log10(np.maximum(losses, 1e-12))  # right: log10 of the loss per iteration
    lo, hi = logs.min(), logs.max()
    for k, v in enumerate(logs):
        px = 340 + int(k / max(len(logs) - 1, 1) * 280)
        py = 280 - int((v - lo) / max(hi - lo, 1e-9) * 240)
        img[py - 1:py + 2, px - 1:px + 2] = (60, 110, 220)
    save_png(args.png, img, [(8, 8, "first chain (grey), last (orange), goal (green)"),
                             (340, 8, "log10 loss per iteration")])
    if losses[-1] < 1e-3 * losses[0]:
        print("spring_fit: ok")
        return 0
    print("spring_fit: the optimization did not reach the goal")
    return 1


if __name__ == "__main__":
    sys.exit(main())
