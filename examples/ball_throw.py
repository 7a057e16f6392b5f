"""A ball thrown under gravity bounces off the ground; gradient descent on
its initial velocity makes it land on a target (Warp's classic), with the
gradient from tack.Tape (docs/autodiff.md).  Writes the trajectories of the
first and last throws to build/examples/ball_throw.png.

    python examples/ball_throw.py [--device opencl] [--png PATH]"""
import argparse
import sys

import numpy as np

import tack
from _image import canvas, default_path, save_png

STEPS, DT, G = 60, 0.02, 9.8
TX, TY = 2.5, 1.0
TARGET = (TX, TY)


@tack.kernel
def throw(v0, traj, loss):
    for i in range(v0.shape[0]):
        x = 0.0
        y = 1.0
        vx = v0[i, 0]
        vy = v0[i, 1]
        for k in range(STEPS):
            vy = vy - G * DT
            x = x + vx * DT
            y = y + vy * DT
            if y < 0.0:  # the bounce: a mirror, losing 10% of its speed
                y = -y
                vy = -0.9 * vy
            traj[k, 0] = x
            traj[k, 1] = y
        loss[i] = (x - TX) ** 2 + (y - TY) ** 2


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--png", default=default_path("ball_throw"))
    ap.add_argument("--iters", type=int, default=100)
    args = ap.parse_args()
    dev = tack.device(args.device)
    v0 = tack.array(np.array([[1.5, 2.0]]), device=dev, requires_grad=True)
    traj = tack.zeros((STEPS, 2), dtype=tack.f64, device=dev)
    loss = tack.zeros(1, dtype=tack.f64, device=dev, requires_grad=True)
    paths = []
    tape = tack.Tape()
    for it in range(args.iters):
        with tape:
            throw(v0, traj, loss)
        if it == 0:
            paths.append(traj.numpy().copy())
        tape.backward(loss)
        v = v0.numpy() - 0.1 * v0.grad.numpy()
        tack.copyto(v0, v)
        tape.zero()
        tape.reset()
        if it % 10 == 0:
            print(f"iter {it:3d}: loss {loss.numpy()[0]:.6f}, v0 {v[0]}")
    throw(v0, traj, loss)
    paths.append(traj.numpy().copy())
    print(f"final loss {loss.numpy()[0]:.3g}, v0 {v0.numpy()[0]}")
    img = canvas(300, 400)
    for path, color in zip(paths, ((120, 120, 120), (230, 90, 40))):
        for x, y in path:
            px, py = int(x / 3.5 * 399), int(299 - y / 2.5 * 299)
            if 0 <= px < 400 and 0 <= py < 300:
                img[max(py - 1, 0):py + 2, max(px - 1, 0):px + 2] = color
    tx, ty = int(TARGET[0] / 3.5 * 399), int(299 - TARGET[1] / 2.5 * 299)
    img[ty - 4:ty + 5, tx - 4:tx + 5] = (40, 200, 80)
    save_png(args.png, img, [(8, 8, "first throw (grey), last (orange), target (green)")])
    if loss.numpy()[0] < 1e-6:
        print("ball_throw: ok")
        return 0
    print("ball_throw: the optimization did not reach the target")
    return 1


if __name__ == "__main__":
    sys.exit(main())
