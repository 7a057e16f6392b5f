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
    with pytest.raises(tack.CompileError,
                       match=r"test_autodiff_returns.py:\d+:\d+: .*product reduction") as info:
        prod.backward(x, adj={"return": 1.0})
    assert "kernel 'prod'" in str(info.value) and "p *= x[i]" in str(info.value)


@tack.kernel
def extremes(x, w, k):
    lo = 1e30
    hi = -1e30
    s = 0.0
    for i in range(x.shape[0]):
        e = k * math.sin(x[i]) * w[i] + 0.5 * x[i] * x[i]
        lo = min(lo, e)
        hi = max(hi, e * w[i])
        s += e
    return lo, hi, s


def extremes_np(x, w, k):
    e = k * np.sin(x) * w + 0.5 * x * x
    return e.min(), (e * w).max(), e.sum()


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_min_max_reductions_send_the_gradient_to_the_extreme(device, dtype):
    """The gradient of a returned min (max) flows to the element that
    attained it, and nowhere else; against NumPy's argmin/argmax and central
    differences (f64)."""
    xv, wv = XV.astype(dtype), (WV + 0.05).astype(dtype)
    x = tack.array(xv, device=device, requires_grad=True)
    w = tack.array(wv, device=device, requires_grad=True)
    tape = tack.Tape()
    with tape:
        lo, hi, s = extremes(x, w, 1.5)
    want = extremes_np(xv.astype(np.float64), wv.astype(np.float64), 1.5)
    tol = 1e-12 if dtype == np.float64 else 1e-5
    np.testing.assert_allclose([lo, hi, s], want, rtol=tol)
    tape.backward(grads={lo: 2.0, hi: -0.5, s: 0.25})
    xd, wd = xv.astype(np.float64), wv.astype(np.float64)
    e = 1.5 * np.sin(xd) * wd + 0.5 * xd * xd
    de_dx, de_dw = 1.5 * np.cos(xd) * wd + xd, 1.5 * np.sin(xd)
    gx, gw = 0.25 * de_dx, 0.25 * de_dw
    a, b = np.argmin(e), np.argmax(e * wd)
    gx[a] += 2.0 * de_dx[a]
    gw[a] += 2.0 * de_dw[a]
    gx[b] += -0.5 * de_dx[b] * wd[b]
    gw[b] += -0.5 * (de_dw[b] * wd[b] + e[b])
    rtol = 1e-10 if dtype == np.float64 else 1e-4
    np.testing.assert_allclose(x.grad.numpy(), gx, rtol=rtol, atol=1e-12 if dtype == np.float64 else 1e-5)
    np.testing.assert_allclose(w.grad.numpy(), gw, rtol=rtol, atol=1e-12 if dtype == np.float64 else 1e-5)
    if dtype == np.float64:
        # and against central differences of the returned values
        h = 1e-6
        for i in range(len(xd)):
            d = np.zeros_like(xd)
            d[i] = h
            f = lambda xx: np.dot([2.0, -0.5, 0.25], extremes_np(xx, wd, 1.5))
            assert abs((f(xd + d) - f(xd - d)) / (2 * h) - x.grad.numpy()[i]) <= 1e-6 * max(1, abs(gx[i]))


def test_min_reduction_without_a_tape_needs_the_returned_value(device):
    x = tack.array(XV, device=device, requires_grad=True)
    w = tack.array(WV + 0.05, device=device, requires_grad=True)
    with pytest.raises(ValueError, match="min or max reduction.*'returned'"):
        extremes.backward(x, w, 1.5, adj={"return": [1.0, 0.0, 0.0]})
    lo, hi, s = extremes(x, w, 1.5)
    extremes.backward(x, w, 1.5, adj={"return": [1.0, 0.0, 0.0], "returned": [lo, hi, s]})
    e = 1.5 * np.sin(XV) * (WV + 0.05) + 0.5 * XV * XV
    want = np.zeros(6)
    a = np.argmin(e)
    want[a] = 1.5 * np.cos(XV[a]) * (WV[a] + 0.05) + XV[a]
    np.testing.assert_allclose(x.grad.numpy(), want, rtol=1e-12)


# ---- returned vectors, matrices and complex numbers ---------------------------

@tack.kernel
def moments(p, w):
    s = tack.vec3d(0.0)
    m = tack.mat22d(0.0)
    z = 0j
    t = 0.0
    for i in range(p.shape[0]):
        s += p[i] * w[i]
        m += tack.mat22d(p[i].x * p[i].y, w[i] * w[i], math.sin(p[i].z), p[i].x * w[i])
        z += complex(math.cos(w[i] * p[i].y), p[i].x * w[i])
        t += w[i] * p[i].z
    return s, m, z, t


def moments_np(P, W):
    s = (P * W[:, None]).sum(axis=0)
    m = np.array([[(P[:, 0] * P[:, 1]).sum(), (W * W).sum()],
                  [np.sin(P[:, 2]).sum(), (P[:, 0] * W).sum()]])
    z = complex(np.cos(W * P[:, 1]).sum(), (P[:, 0] * W).sum())
    return s, m, z, (W * P[:, 2]).sum()


PV = np.random.default_rng(5).uniform(-1.0, 1.0, (5, 3))
GS, GM, GZ, GT = np.array([0.5, -2.0, 1.5]), np.array([[1.0, -0.5], [0.25, 2.0]]), 0.75 - 1.25j, 0.5


def moments_loss(P, W):
    """The real loss whose gradient the seeds above give: a complex seed g
    is dL/d(real) + 1j dL/d(imag)."""
    s, m, z, t = moments_np(P, W)
    return (GS * s).sum() + (GM * m).sum() + GZ.real * z.real + GZ.imag * z.imag + GT * t


def moments_fd(P, W):
    h = 1e-6
    dp = np.zeros_like(P)
    for k in range(P.size):
        e = np.zeros_like(P)
        e.reshape(-1)[k] = h
        dp.reshape(-1)[k] = (moments_loss(P + e, W) - moments_loss(P - e, W)) / (2 * h)
    dw = np.array([(moments_loss(P, W + h * e) - moments_loss(P, W - h * e)) / (2 * h)
                   for e in np.eye(W.size)])
    return dp, dw


def test_returned_vectors_matrices_and_complex_seed_the_tape(device):
    p = tack.array(PV, dtype=tack.vec3d, device=device, requires_grad=True)
    w = tack.array(WV[:5], device=device, requires_grad=True)
    tape = tack.Tape()
    with tape:
        s, m, z, t = moments(p, w)
    s0, m0, z0, t0 = moments_np(PV, WV[:5])
    np.testing.assert_allclose(s, s0, rtol=1e-12)
    np.testing.assert_allclose(m, m0, rtol=1e-12)
    assert z == pytest.approx(z0, rel=1e-12) and t == pytest.approx(t0, rel=1e-12)
    assert m.shape == (2, 2) and isinstance(z, complex)
    tape.backward(grads={s: GS, m: GM, z: GZ, t: GT})
    dp, dw = moments_fd(PV, WV[:5])
    np.testing.assert_allclose(p.grad.numpy(), dp, rtol=1e-6)
    np.testing.assert_allclose(w.grad.numpy(), dw, rtol=1e-6)

    # one value seeded alone: the others' gradients are 0
    tape.zero()
    tape.backward(grads={z: 1j})
    np.testing.assert_allclose(p.grad.numpy()[:, 0], WV[:5], rtol=1e-12)
    np.testing.assert_allclose(w.grad.numpy(), PV[:, 0], rtol=1e-12)

    with pytest.raises(ValueError, match="shape"):
        tape.backward(grads={m: GS})
    with pytest.raises(ValueError, match="computed from a returned value"):
        tape.backward(grads={s * 2.0: GS})
    with pytest.raises(ValueError, match="not a loss"):
        tape.backward(s)


def test_kernel_backward_takes_returned_vectors_and_complex_gradients(device):
    p = tack.array(PV, dtype=tack.vec3d, device=device, requires_grad=True)
    w = tack.array(WV[:5], device=device, requires_grad=True)
    # one gradient per returned value, each as the value is shaped
    moments.backward(p, w, adj={"return": [GS, GM, GZ, GT]})
    dp, dw = moments_fd(PV, WV[:5])
    np.testing.assert_allclose(p.grad.numpy(), dp, rtol=1e-6)
    np.testing.assert_allclose(w.grad.numpy(), dw, rtol=1e-6)


@tack.kernel
def centroid(p):
    c = tack.vec2f(0.0)
    for i in range(p.shape[0]):
        c += p[i] * p[i].x
    return c


def test_a_returned_f32_vector_alone(device):
    pv = np.array([[0.5, -1.0], [1.5, 2.0], [-0.25, 0.75]], dtype=np.float32)
    p = tack.array(pv, dtype=tack.vec2f, device=device, requires_grad=True)
    tape = tack.Tape()
    with tape:
        c = centroid(p)
    assert c.dtype == np.float32 and c.shape == (2,)
    g = np.array([2.0, -3.0])
    tape.backward(grads={c: g})
    # d (g . sum p_i p_i.x) / d p_i = (2 g0 x + g1 y, g1 x)
    x, y = pv[:, 0].astype(np.float64), pv[:, 1].astype(np.float64)
    want = np.stack([2 * g[0] * x + g[1] * y, g[1] * x], axis=1)
    np.testing.assert_allclose(p.grad.numpy(), want, rtol=1e-6)
