"""Reverse-mode automatic differentiation (src/passes/adjoint.c): gradients
against central finite differences in f64, on cpu and opencl."""
import math

import numpy as np
import pytest

import tack
from tack import autodiff as ad

pytestmark = pytest.mark.every_device


def fd(F, args, i, h=1e-6):
    out = []
    for k in range(args[i].size):
        p = [a.copy() for a in args]
        m = [a.copy() for a in args]
        p[i][k] += h
        m[i][k] -= h
        out.append(((F(*p) - F(*m)) / (2 * h)).sum())
    return np.array(out)


@tack.kernel
def smooth(x, y, out):
    for i in range(x.shape[0]):
        t = math.sin(x[i]) * y[i] + math.exp(x[i] / 3.0)
        t = t * t
        out[i] = math.sqrt(t + 1.0) + math.tanh(y[i]) + math.atan2(x[i], y[i]) \
            + math.hypot(x[i], y[i]) + x[i] ** 3 + math.erf(y[i]) + math.log(x[i]) / y[i]


def smooth_np(x, y):
    from math import erf
    t = (np.sin(x) * y + np.exp(x / 3)) ** 2
    return (np.sqrt(t + 1) + np.tanh(y) + np.arctan2(x, y) + np.hypot(x, y) + x ** 3
            + np.vectorize(erf)(y) + np.log(x) / y)


@tack.kernel
def piecewise(x, y, out):
    for i in range(x.shape[0]):
        out[i] = abs(x[i]) * min(x[i], y[i]) + max(x[i], y[i]) + math.floor(y[i]) \
            + (x[i] if x[i] > y[i] else 2.0 * y[i])


def piecewise_np(x, y):
    return np.abs(x) * np.minimum(x, y) + np.maximum(x, y) + np.floor(y) + np.where(x > y, x, 2 * y)


@tack.kernel
def gather(x, idx, out):
    for i in range(out.shape[0]):
        out[i] += x[idx[i]] * x[idx[i]]


@pytest.mark.parametrize("kern,F", [(smooth, smooth_np), (piecewise, piecewise_np)])
def test_elementwise_matches_finite_differences(device, kern, F):
    rng = np.random.default_rng(1)
    xv = rng.uniform(0.2, 2.0, 16)
    yv = rng.uniform(0.3, 1.7, 16) * np.where(np.arange(16) % 2, 1, -1) if F is piecewise_np \
        else rng.uniform(0.3, 1.7, 16)
    x = ad.array(xv, device=device, requires_grad=True)
    y = ad.array(yv, device=device, requires_grad=True)
    out = ad.zeros(16, dtype=tack.f64, device=device, requires_grad=True)
    tape = ad.Tape()
    with tape:
        kern(x, y, out)
    np.testing.assert_allclose(out.numpy(), F(xv, yv), rtol=1e-12)
    tape.backward(grads={out: np.ones(16)})
    np.testing.assert_allclose(x.grad.numpy(), fd(F, [xv, yv], 0), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(y.grad.numpy(), fd(F, [xv, yv], 1), rtol=1e-6, atol=1e-8)
    tape.zero()
    assert not x.grad.numpy().any() and not out.grad.numpy().any()


def test_shared_reads_accumulate_and_update(device):
    xv = np.array([0.5, -1.25, 2.0])
    idx = np.array([0, 2, 2, 1, 0, 2], dtype=np.int32)
    x = ad.array(xv, device=device, requires_grad=True)
    out = ad.zeros(6, dtype=tack.f64, device=device, requires_grad=True)
    i = tack.array(idx, device=device)
    gather(x, i, out)
    g = np.arange(1.0, 7.0)
    gather.backward(x, i, out, adj={out: ad.array(g, device=device)})
    want = np.zeros(3)
    np.add.at(want, idx, 2 * xv[idx] * g)
    np.testing.assert_allclose(x.grad.numpy(), want, rtol=1e-12)


def test_chain_of_kernels_with_loss_seed(device):
    xv = np.linspace(0.1, 1.0, 5)
    x = ad.array(xv, device=device, requires_grad=True)
    y = ad.zeros(5, dtype=tack.f64, device=device, requires_grad=True)
    loss = ad.zeros(1, dtype=tack.f64, device=device, requires_grad=True)

    @tack.kernel
    def sq(x, y):
        for i in range(x.shape[0]):
            y[i] = math.cos(x[i]) * x[i]

    @tack.kernel
    def total(y, loss):
        for i in range(y.shape[0]):
            tack.atomic_add(loss, 0, y[i] * y[i])

    tape = ad.Tape()
    with tape:
        sq(x, y)
        total(y, loss)
    assert len(tape.launches) == 2
    tape.backward(loss)
    yv = np.cos(xv) * xv
    np.testing.assert_allclose(x.grad.numpy(), 2 * yv * (np.cos(xv) - xv * np.sin(xv)), rtol=1e-12)
    tape.reset()
    assert tape.launches == []


def test_overwrite_of_a_read_array_is_a_compile_error(device):
    @tack.kernel
    def inplace(x):
        for i in range(x.shape[0]):
            x[i] = math.sin(x[i])

    x = ad.array(np.ones(4), device=device, requires_grad=True)
    inplace(x)
    with pytest.raises(tack.CompileError, match="'x' is overwritten"):
        inplace.backward(x)


def test_grad_attribute():
    a = ad.zeros(3, dtype=tack.f64, requires_grad=True)
    assert a.requires_grad and a.grad.shape == (3,) and not a.grad.numpy().any()
    b = tack.zeros(3)
    assert not b.requires_grad and b.grad is None
    with pytest.raises(ValueError):
        b.grad = tack.zeros(4)


@tack.kernel
def scaled(x, y, a, b, k):
    for i in range(x.shape[0]):
        y[i] = x[i] * a + math.sin(a * b) * x[i] * x[i] + k


def test_scalar_gradients_opt_in(device):
    xv = np.linspace(-1.0, 1.5, 7)
    g = np.arange(1.0, 8.0)
    x = ad.array(xv, device=device, requires_grad=True)
    y = ad.zeros(7, dtype=tack.f64, device=device, requires_grad=True)
    ga, gb = ad.zeros(1, dtype=tack.f64, device=device), ad.zeros(3, dtype=tack.f64, device=device)
    a, b = 0.7, -1.3
    scaled(x, y, a, b, 2)
    scaled.backward(x, y, a, b, 2, adj={"a": ga, "b": gb, y: ad.array(g, device=device)})

    def F(av, bv):
        return np.sum(g * (xv * av + np.sin(av * bv) * xv * xv))

    h = 1e-6
    np.testing.assert_allclose(ga.numpy()[0], (F(a + h, b) - F(a - h, b)) / (2 * h), rtol=1e-6)
    np.testing.assert_allclose(gb.numpy(), [(F(a, b + h) - F(a, b - h)) / (2 * h), 0, 0], rtol=1e-6)
    # without the opt-in a scalar has no gradient, and nothing else changes
    x2 = ad.array(xv, device=device, requires_grad=True)
    scaled.backward(x2, y, a, b, 2, adj={y: ad.array(g, device=device)})
    np.testing.assert_allclose(x2.grad.numpy(), x.grad.numpy(), rtol=1e-12)
    with pytest.raises(ValueError, match="'k' is not a Python float"):
        scaled.backward(x, y, a, b, 2, adj={"k": ga})
    with pytest.raises(ValueError, match="gradient of scalar 'a' is a float array"):
        scaled.backward(x, y, a, b, 2, adj={"a": ad.zeros(1, dtype=tack.i32, device=device)})
