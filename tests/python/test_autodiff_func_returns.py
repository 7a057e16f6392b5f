"""Autodiff through a device function's `return` inside a loop (`for`,
`while`, nested loops, a loop inside an `if`): adjoint_jumps.c makes each
such return a flag and a `break`.  Gradients against central finite
differences in f64 on cpu and opencl (the NumPy twins below are the same
functions run on Python floats)."""
import math

import numpy as np
import pytest

import tack

pytestmark = pytest.mark.every_device


@tack.func
def first_big(x, n):
    acc = 0.0
    for k in range(n):
        acc = acc * 0.5 + math.sin(x * (k + 1))
        if acc > 0.8:
            return acc * x
    return acc + x


@tack.func
def halve_until(x):
    v = x * x + 1.0
    while v > 0.1:
        v = v * 0.5 + 0.01 * math.cos(x)
        if v < 0.3:
            return v * math.exp(x)
    return v


@tack.func
def nested_hit(x, n):
    s = 0.0
    for a in range(n):
        for b in range(3):
            s = s + math.sin(x * (a + 1) + b) * 0.4
            if s > 0.9:
                return s * s
        s = s * 0.9
    return -s


@tack.func
def in_branch(x, n):
    t = x
    if x > -0.5:
        for k in range(n):
            t = t * 1.1 + 0.2 * math.tanh(t)
            if t > 1.0:
                return 2.0 * t
        t = t - 1.0
    return t * x


@tack.kernel
def returns_in_loops(x, out, n):
    for i in range(x.shape[0]):
        out[i, 0] = first_big(x[i], n)
        out[i, 1] = halve_until(x[i])
        out[i, 2] = nested_hit(x[i], n)
        out[i, 3] = in_branch(x[i], n) + first_big(0.5 * x[i], n)  # a second call: its flag starts False


def first_big_np(x, n):
    acc = 0.0
    for k in range(n):
        acc = acc * 0.5 + math.sin(x * (k + 1))
        if acc > 0.8:
            return acc * x
    return acc + x


def halve_until_np(x):
    v = x * x + 1.0
    while v > 0.1:
        v = v * 0.5 + 0.01 * math.cos(x)
        if v < 0.3:
            return v * math.exp(x)
    return v


def nested_hit_np(x, n):
    s = 0.0
    for a in range(n):
        for b in range(3):
            s = s + math.sin(x * (a + 1) + b) * 0.4
            if s > 0.9:
                return s * s
        s = s * 0.9
    return -s


def in_branch_np(x, n):
    t = x
    if x > -0.5:
        for k in range(n):
            t = t * 1.1 + 0.2 * math.tanh(t)
            if t > 1.0:
                return 2.0 * t
        t = t - 1.0
    return t * x


def returns_np(xv, n):
    return np.array([[first_big_np(x, n), halve_until_np(x), nested_hit_np(x, n),
                      in_branch_np(x, n) + first_big_np(0.5 * x, n)] for x in xv])


XV = np.array([-1.3, -0.6, -0.2, 0.15, 0.45, 0.8, 1.2, 1.9, 2.6, 3.1])


@pytest.mark.parametrize("n", [1, 4, 9])
def test_returns_inside_loops_match_finite_differences(device, n):
    x = tack.array(XV, device=device, requires_grad=True)
    out = tack.zeros((XV.size, 4), dtype=tack.f64, device=device)
    returns_in_loops(x, out, n)
    np.testing.assert_allclose(out.numpy(), returns_np(XV, n), rtol=1e-12)
    g = np.linspace(0.5, 1.5, out.size).reshape(out.shape)
    returns_in_loops.backward(x, out, n, adj={out: tack.array(g, device=device)})
    h = 1e-6
    fd = np.array([(g[i] * (returns_np([x + h], n)[0] - returns_np([x - h], n)[0])).sum() / (2 * h)
                   for i, x in enumerate(XV)])
    np.testing.assert_allclose(x.grad.numpy(), fd, rtol=1e-6)
    if n > 1:  # both paths are taken: some rows return inside the loop, some after it
        early = [any(_partial(v, k) > 0.8 for k in range(1, n + 1)) for v in XV]
        assert any(early) and not all(early)


def _partial(x, k):
    """first_big's acc after k iterations."""
    acc = 0.0
    for j in range(k):
        acc = acc * 0.5 + math.sin(x * (j + 1))
    return acc
