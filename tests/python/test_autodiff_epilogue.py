"""Autodiff of a kernel that returns an expression of its sums (`return s /
n`, `mean = s / n` then `return w * mean + 0.5`): gradients against central
finite differences in f64 on cpu and opencl, and the refusals of what it
cannot do (a value not affine in the sums)."""
import math

import numpy as np
import pytest

import tack

pytestmark = pytest.mark.every_device

SCALE = 3.0  # a module-level number the returned value reads


@tack.kernel
def mean_square(x):
    s = 0.0
    for i in range(x.shape[0]):
        s += x[i] * x[i]
    return s / x.shape[0]


@tack.kernel
def fit(pred, y, w, resid):
    n = pred.shape[0]
    half = 0.5  # a number before the loop that is not a sum
    s = 0.0
    t = 0.0
    for i in range(n):
        d = pred[i] - y[i]
        resid[i] = d  # an array written beside the sums
        s += d * d
        t -= math.sin(pred[i])
    mean = s / n
    return w * mean + half, (t - s) / SCALE, -t * math.pi, s


def fit_np(p, y, w):
    d = p - y
    s, t = (d * d).sum(), -np.sin(p).sum()
    return np.array([w * s / len(p) + 0.5, (t - s) / SCALE, -t * math.pi, s])


P = np.array([0.3, -0.7, 1.4, 0.9, -2.0, 1.1])
Y = np.linspace(-1.0, 1.0, 6)


def central(f, x, h=1e-6):
    return np.array([(f(x + h * e) - f(x - h * e)) / (2 * h) for e in np.eye(len(x))])


def test_mean_on_a_tape(device):
    x = tack.array(P, device=device, requires_grad=True)
    tape = tack.Tape()
    with tape:
        m = mean_square(x)
    assert m == pytest.approx((P * P).mean(), rel=1e-12)
    tape.backward(m)
    np.testing.assert_allclose(x.grad.numpy(), central(lambda v: (v * v).mean(), P), rtol=1e-6)


@pytest.mark.parametrize("seeds", [[1.0, 0.0, 0.0, 0.0], [0.25, -2.0, 0.5, 1.5]])
def test_several_returned_expressions(device, seeds):
    p = tack.array(P, device=device, requires_grad=True)
    resid = tack.zeros(6, dtype=tack.f64, device=device, requires_grad=True)
    tape = tack.Tape()
    with tape:
        values = fit(p, Y, 2.0, resid)
    np.testing.assert_allclose(values, fit_np(P, Y, 2.0), rtol=1e-12)
    np.testing.assert_allclose(resid.numpy(), P - Y, rtol=1e-12)
    tape.backward(grads={v: g for v, g in zip(values, seeds)})
    want = central(lambda v: float(np.dot(seeds, fit_np(v, Y, 2.0))), P)
    np.testing.assert_allclose(p.grad.numpy(), want, rtol=1e-6, atol=1e-9)


def test_without_a_tape(device):
    p = tack.array(P, device=device)
    g = tack.zeros(6, dtype=tack.f64, device=device)
    y = tack.array(Y, device=device)
    fit.backward(p, y, 2.0, tack.zeros(6, dtype=tack.f64, device=device),
                 adj={"pred": g, "return": [0.0, 1.0]})  # the second value only
    np.testing.assert_allclose(g.numpy(), central(lambda v: fit_np(v, Y, 2.0)[1], P),
                               rtol=1e-6, atol=1e-9)


def test_a_loss_chained_through_two_kernels(device):
    # y = 3 x in one kernel, then the mean of y * y: d/dx = 18 x / n
    @tack.kernel
    def triple(x, y):
        for i in range(x.shape[0]):
            y[i] = 3.0 * x[i]

    x = tack.array(P, device=device, requires_grad=True)
    y = tack.zeros(6, dtype=tack.f64, device=device, requires_grad=True)
    tape = tack.Tape()
    with tape:
        triple(x, y)
        loss = mean_square(y)
    tape.backward(loss)
    np.testing.assert_allclose(x.grad.numpy(), 18.0 * P / 6, rtol=1e-12)


def test_empty_input(device):
    x = tack.array(np.zeros(0), device=device, requires_grad=True)
    tape = tack.Tape()
    with tape, np.errstate(invalid="ignore"):
        m = mean_square(x)
    assert math.isnan(m)
    tape.backward(m)
    assert x.grad.numpy().shape == (0,)


def test_refusals_name_the_line(device):
    @tack.kernel
    def root(x):
        s = 0.0
        for i in range(x.shape[0]):
            s += x[i]
        return math.sqrt(s)

    @tack.kernel
    def ratio(x):
        s = 0.0
        t = 0.0
        for i in range(x.shape[0]):
            s += x[i]
            t += 1.0
        return s / t

    @tack.kernel
    def scaled(x, w):
        s = 0.0
        for i in range(x.shape[0]):
            s += x[i]
        return w * s

    x = tack.array(P, device=device, requires_grad=True)
    line = root.func.__code__.co_firstlineno + 5
    for kernel, args, why in [(root, (x,), "math.sqrt of a sum"),
                              (ratio, (x,), "a division by a sum"),
                              (scaled, (x, tack.Scalar(2.0)), "tack.Scalar with a gradient")]:
        tape = tack.Tape()
        with tape:
            r = kernel(*args)
        with pytest.raises(tack.CompileError, match="kernel '%s', line" % kernel.__name__) as e:
            tape.backward(r)
        assert why in str(e.value)
    with pytest.raises(tack.CompileError, match="line %d" % line):
        root.backward(x, adj={"return": 1.0})
    # a Scalar without a gradient is a number the call fixes
    g = np.zeros(6)
    scaled.backward(P, tack.Scalar(2.0, requires_grad=False), adj={"x": g, "return": 1.0})
    np.testing.assert_array_equal(g, np.full(6, 2.0))


def test_vector_and_complex_sums_in_an_expression_are_refused(device):
    @tack.kernel
    def centroid(p):
        c = tack.vec3d()
        for i in range(p.shape[0]):
            c += p[i]
        return c / p.shape[0]

    @tack.kernel
    def mixed(x):
        s = 0.0
        z = 0j
        for i in range(x.shape[0]):
            s += x[i]
            z += complex(x[i], 1.0)
        return s / 2.0, z

    pts = tack.array(np.ones((4, 3)), dtype=tack.vec3d, device=device, requires_grad=True)
    with pytest.raises(tack.CompileError, match="kernel 'centroid', line"):
        centroid.backward(pts, adj={"return": [np.ones(3)]})
    x = tack.array(P, device=device, requires_grad=True)
    tape = tack.Tape()
    with tape:
        half, z = mixed(x)
    with pytest.raises(tack.CompileError, match="kernel 'mixed', line"):
        tape.backward(half)  # z is not dropped silently: refused
