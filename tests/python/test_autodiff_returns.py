"""Autodiff of what a kernel returns (a sum reduction, `s += f(x[i]);
return s`) and of float scalars on a tape (tack.Scalar): gradients against
central finite differences in f64 on cpu and opencl."""
import math

import numpy as np
import pytest

import tack

pytestmark = pytest.mark.every_device


@tack.kernel
def energy(x, w, y, k):
    s = 0.0
    t = 0.0
    for i in range(x.shape[0]):
        e = k * math.sin(x[i]) * w[i] + 0.5 * x[i] * x[i]
        s += e
        t -= math.exp(0.1 * x[i])
        y[i] = e * e  # an array written beside the sums
    return s, t


def energy_np(x, w, k):
    e = k * np.sin(x) * w + 0.5 * x * x
    return e.sum(), -np.exp(0.1 * x).sum(), e * e


XV = np.array([0.3, -0.7, 1.4, 0.9, -2.0, 1.1])
WV = np.linspace(-1.0, 1.0, 6)


def test_a_returned_sum_seeds_the_tape(device):
    x = tack.array(XV, device=device, requires_grad=True)
    w = tack.array(WV, device=device, requires_grad=True)
    y = tack.zeros(6, dtype=tack.f64, device=device, requires_grad=True)
    k = tack.Scalar(1.5)
    tape = tack.Tape()
    with tape:
        s, t = energy(x, w, y, k)
    s0, t0, _ = energy_np(XV, WV, 1.5)
    assert s == pytest.approx(s0, rel=1e-12) and t == pytest.approx(t0, rel=1e-12)
    tape.backward(s)  # d s / d inputs
    h = 1e-6
    fd = np.array([(energy_np(XV + h * e, WV, 1.5)[0] - energy_np(XV - h * e, WV, 1.5)[0]) / (2 * h)
                   for e in np.eye(6)])
    np.testing.assert_allclose(x.grad.numpy(), fd, rtol=1e-6)
    np.testing.assert_allclose(w.grad.numpy(), 1.5 * np.sin(XV), rtol=1e-12)
    assert k.grad == pytest.approx((energy_np(XV, WV, 1.5 + h)[0] - energy_np(XV, WV, 1.5 - h)[0]) / (2 * h),
                                   rel=1e-6)

    # a vector-Jacobian product over both sums and the array
    tape.zero()
    assert k.grad == 0.0 and not x.grad.numpy().any()
    gy = np.linspace(0.5, 1.0, 6)

    def L(xv, kv):
        a, b, yv = energy_np(xv, WV, kv)
        return 2.0 * a - 3.0 * b + (gy * yv).sum()
    tape.backward(grads={s: 2.0, t: -3.0, y: gy})
    fd = np.array([(L(XV + h * e, 1.5) - L(XV - h * e, 1.5)) / (2 * h) for e in np.eye(6)])
    np.testing.assert_allclose(x.grad.numpy(), fd, rtol=1e-6)
    assert k.grad == pytest.approx((L(XV, 1.5 + h) - L(XV, 1.5 - h)) / (2 * h), rel=1e-6)


def test_kernel_backward_takes_the_return_gradient(device):
    x = tack.array(XV, device=device, requires_grad=True)
    w = tack.array(WV, device=device)
    y = tack.zeros(6, dtype=tack.f64, device=device)
    energy.backward(x, w, y, 1.5, adj={"return": [0.0, 1.0]})  # d t / d x only
    np.testing.assert_allclose(x.grad.numpy(), -0.1 * np.exp(0.1 * XV), rtol=1e-12)
    with pytest.raises(ValueError, match="returns nothing"):
        _scale.backward(x, y, 2.0, adj={"return": 1.0})


@tack.kernel
def _scale(x, y, a):
    for i in range(x.shape[0]):
        y[i] = x[i] * a


def test_scalars_on_a_tape_accumulate_over_launches(device):
    x = tack.array(XV, device=device, requires_grad=True)
    y = tack.zeros(6, dtype=tack.f64, device=device, requires_grad=True)
    z = tack.zeros(6, dtype=tack.f64, device=device, requires_grad=True)
    a = tack.Scalar(0.75)
    assert isinstance(a, float) and a == 0.75 and a.requires_grad and a.grad == 0.0
    tape = tack.Tape()
    with tape:
        _scale(x, y, a)
        _scale(y, z, a)  # z = a^2 x
    np.testing.assert_allclose(z.numpy(), 0.5625 * XV, rtol=1e-12)
    g = np.linspace(1.0, 2.0, 6)
    tape.backward(grads={z: g})
    assert a.grad == pytest.approx(2 * 0.75 * (g * XV).sum(), rel=1e-12)
    np.testing.assert_allclose(x.grad.numpy(), 0.5625 * g, rtol=1e-12)
    frozen = tack.Scalar(0.75, requires_grad=False)
    tape.zero()
    tape.reset()
    with tape:
        _scale(x, y, frozen)
    tape.backward(grads={y: g})
    assert frozen.grad == 0.0 and a.grad == 0.0


def test_product_reductions_are_refused(device):
    @tack.kernel
    def prod(x):
        p = 1.0
        for i in range(x.shape[0]):
            p *= x[i]
        return p

    x = tack.array(XV, device=device, requires_grad=True)
    with pytest.raises(tack.CompileError, match="product reduction"):
        prod.backward(x, adj={"return": 1.0})
