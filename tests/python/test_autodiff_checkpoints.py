"""Loops that carry values, reversed from checkpoints (adjoint.c keeps the
carried values at every stride-th iteration's entry, stride =
ceil(n / kept), so the reverse sweep replays at most stride - 1
iterations per iteration): trip counts below, at and past the number
kept, bool and int carried values (a `break`'s flag, a counter), nested
loops, negative steps.  Gradients against central finite differences in
f64 on cpu and opencl."""
import math

import numpy as np
import pytest

import tack

pytestmark = pytest.mark.every_device


@tack.kernel
def drift(x, out, n):
    for i in range(x.shape[0]):
        v = x[i]
        w = 0.5 * x[i]
        hits = 0
        for k in range(n):
            if w > 0.8:
                break  # a carried bool: the loop's stop flag
            v = v * 0.999 + 0.01 * math.sin(w + k * 0.001)
            w = w + 0.002 * math.cos(v)
            if v > 0.3:
                hits += 1  # a carried int
        out[i] = v * w + hits * 0.125


def drift_np(xv, n):
    out = []
    for x in xv:
        v, w, hits = x, 0.5 * x, 0
        for k in range(n):
            if w > 0.8:
                break
            v = v * 0.999 + 0.01 * math.sin(w + k * 0.001)
            w = w + 0.002 * math.cos(v)
            if v > 0.3:
                hits += 1
        out.append(v * w + hits * 0.125)
    return np.array(out)


XV = np.array([-0.9, -0.2, 0.27, 0.55, 1.3, 1.9])


@pytest.mark.parametrize("n", [0, 1, 7, 340, 341, 342, 2500])
def test_carried_values_from_checkpoints_match_finite_differences(device, n):
    # 4 carried locals (v, w, hits, the break's flag): 256 kept, so 2500
    # iterations take a stride of 10
    x = tack.array(XV, device=device, requires_grad=True)
    out = tack.zeros(XV.size, dtype=tack.f64, device=device)
    drift(x, out, n)
    np.testing.assert_allclose(out.numpy(), drift_np(XV, n), rtol=1e-12)
    g = np.linspace(0.5, 1.5, XV.size)
    drift.backward(x, out, n, adj={out: tack.array(g, device=device)})
    h = 1e-6
    fd = g * (drift_np(XV + h, n) - drift_np(XV - h, n)) / (2 * h)
    np.testing.assert_allclose(x.grad.numpy(), fd, rtol=1e-6, atol=1e-12)
    if n == 2500:  # some rows break part way, some run every iteration
        stops = [_stop(v, n) for v in XV]
        assert any(s is None for s in stops) and any(s is not None and s > 10 for s in stops)


def _stop(x, n):
    """The iteration drift's loop breaks at for x, or None."""
    v, w = x, 0.5 * x
    for k in range(n):
        if w > 0.8:
            return k
        v = v * 0.999 + 0.01 * math.sin(w + k * 0.001)
        w = w + 0.002 * math.cos(v)
    return None


@tack.kernel
def nested(x, out, n):
    for i in range(x.shape[0]):
        a = x[i]
        b = 1.0
        for t in range(n, 0, -3):  # a negative step
            for s in range(40):  # literal bounds, carried too
                b = b * 0.99 + 0.02 * math.tanh(a * b + s * 0.01)
            a = a + 0.001 * t * b
        out[i] = a * b


def nested_np(xv, n):
    out = []
    for x in xv:
        a, b = x, 1.0
        for t in range(n, 0, -3):
            for s in range(40):
                b = b * 0.99 + 0.02 * math.tanh(a * b + s * 0.01)
            a = a + 0.001 * t * b
        out.append(a * b)
    return np.array(out)


@pytest.mark.parametrize("n", [2, 60, 1800])
def test_nested_loops_with_checkpoints(device, n):
    x = tack.array(XV[:5], device=device, requires_grad=True)
    out = tack.zeros(5, dtype=tack.f64, device=device)
    nested(x, out, n)
    np.testing.assert_allclose(out.numpy(), nested_np(XV[:5], n), rtol=1e-12)
    g = np.linspace(1.0, 2.0, 5)
    nested.backward(x, out, n, adj={out: tack.array(g, device=device)})
    h = 1e-6
    fd = g * (nested_np(XV[:5] + h, n) - nested_np(XV[:5] - h, n)) / (2 * h)
    np.testing.assert_allclose(x.grad.numpy(), fd, rtol=1e-6)


@tack.kernel
def settle(x, out, tol):
    for i in range(x.shape[0]):
        v = x[i]
        u = 1.0
        while u > tol:  # a trip count known only when the loop ends
            v = v + 0.001 * math.sin(v * u)
            u = u * 0.995
        out[i] = v * v


def settle_np(xv, tol):
    out = []
    for x in xv:
        v, u = x, 1.0
        while u > tol:
            v = v + 0.001 * math.sin(v * u)
            u = u * 0.995
        out.append(v * v)
    return np.array(out)


@pytest.mark.parametrize("tol", [0.9, 0.3, 1e-3, 1e-9])
def test_while_loops_halve_their_checkpoints(device, tol):
    # 2 carried locals: 512 kept; 1e-3 takes 1379 iterations (stride 4),
    # 1e-9 takes 4135 (stride 16)
    x = tack.array(XV, device=device, requires_grad=True)
    out = tack.zeros(XV.size, dtype=tack.f64, device=device)
    settle(x, out, tol)
    np.testing.assert_allclose(out.numpy(), settle_np(XV, tol), rtol=1e-12)
    g = np.linspace(0.5, 1.5, XV.size)
    settle.backward(x, out, tol, adj={out: tack.array(g, device=device)})
    h = 1e-6
    fd = g * (settle_np(XV + h, tol) - settle_np(XV - h, tol)) / (2 * h)
    np.testing.assert_allclose(x.grad.numpy(), fd, rtol=1e-6)
