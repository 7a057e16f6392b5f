"""The gather form of stencil adjoints (src/passes/adjoint_gather.c): reads
x[i + a, ...] at constant offsets of the launch variable make adjoints that
add into each gradient element from the iterations that read it, without
atomics.  Gradients against central finite differences in f64 (f32 runs
compared with the f64 differences at f32's precision), on cpu and opencl,
and a fallback (an indirect read) that keeps the scatter form."""
import math

import numpy as np
import pytest

import tack
from tack import autodiff as ad

pytestmark = pytest.mark.every_device


def fd(F, args, i, seed, h=1e-6):
    """d sum(seed * F(args)) / d args[i], central differences."""
    out = np.zeros(args[i].size)
    for k in range(args[i].size):
        p = [a.copy() for a in args]
        m = [a.copy() for a in args]
        p[i].flat[k] += h
        m[i].flat[k] -= h
        out[k] = (seed * (F(*p) - F(*m))).sum() / (2 * h)
    return out.reshape(args[i].shape)


def check(device, kern, F, inputs, out_shape, dtype=np.float64, extra=(), scalars=()):
    """Runs kern(*inputs, out, *extra, *scalars) and its backward seeded
    with a random out.grad; every float input's gradient against F's
    central differences (F(*inputs, *scalars) -> out)."""
    rng = np.random.default_rng(7)
    seed = rng.uniform(-1, 1, out_shape)
    xs = [ad.array(v.astype(dtype), device=device, requires_grad=True) for v in inputs]
    out = ad.zeros(out_shape, dtype=tack.f64 if dtype == np.float64 else tack.f32, device=device,
                   requires_grad=True)
    args = (*xs, out, *extra, *scalars)
    kern(*args)
    vals = [v.astype(dtype).astype(np.float64) for v in inputs]
    want = F(*vals, *scalars)
    rtol = 1e-12 if dtype == np.float64 else 1e-5
    np.testing.assert_allclose(out.numpy(), want, rtol=rtol, atol=rtol)
    kern.backward(*args, adj={out: ad.array(seed.astype(dtype), device=device)})
    for i, x in enumerate(xs):
        g = fd(lambda *a: F(*a, *scalars), vals, i, seed.astype(dtype).astype(np.float64))
        tol = 1e-6 if dtype == np.float64 else 2e-4
        np.testing.assert_allclose(x.grad.numpy(), g, rtol=tol, atol=tol * max(1.0, np.abs(g).max()))


@tack.kernel
def stencil3(x, y):
    for i in range(1, x.shape[0] - 1):
        y[i] = 0.2 * x[i - 1] + 0.5 * x[i] - 0.3 * x[i + 1]


def stencil3_np(x):
    y = np.zeros_like(x)
    y[1:-1] = 0.2 * x[:-2] + 0.5 * x[1:-1] - 0.3 * x[2:]
    return y


@tack.kernel
def stencil5(x, w, y):
    # w[i] is the iteration's own element: its gradient is added once
    for i in range(2, x.shape[0] - 2):
        y[i] = w[i] * (0.1 * x[i - 2] - 0.4 * x[i - 1] + 0.7 * x[i] + 0.25 * x[i + 1] - 0.05 * x[i + 2])


def stencil5_np(x, w):
    y = np.zeros_like(x)
    y[2:-2] = w[2:-2] * (0.1 * x[:-4] - 0.4 * x[1:-3] + 0.7 * x[2:-2] + 0.25 * x[3:-1] - 0.05 * x[4:])
    return y


@tack.kernel
def nonlinear(x, y):
    for i in range(2, x.shape[0] - 1):
        y[i] = math.sin(x[i - 1]) * x[i + 1] + x[i] * x[i] - math.exp(0.3 * x[i - 2])


def nonlinear_np(x):
    y = np.zeros_like(x)
    i = np.arange(2, x.size - 1)
    y[i] = np.sin(x[i - 1]) * x[i + 1] + x[i] ** 2 - np.exp(0.3 * x[i - 2])
    return y


@tack.kernel
def ahead(x, y):
    # offsets 1 and 2 only: the adjoint's launch starts past 0
    for i in range(x.shape[0] - 2):
        y[i] = x[i + 1] * x[i + 2]


def ahead_np(x):
    y = np.zeros_like(x)
    y[:-2] = x[1:-1] * x[2:]
    return y


@tack.kernel
def two_arrays(a, b, y):
    for i in range(1, a.shape[0] - 1):
        y[i] = a[i - 1] * b[i + 1] + b[i] * math.cos(a[i + 1])


def two_arrays_np(a, b):
    y = np.zeros_like(a)
    y[1:-1] = a[:-2] * b[2:] + b[1:-1] * np.cos(a[2:])
    return y


@tack.kernel
def branchy(x, y):
    for i in range(1, x.shape[0] - 1):
        if x[i] > 0.0:
            y[i] = x[i - 1] * 3.0
        else:
            y[i] = x[i + 1] * x[i]


def branchy_np(x):
    y = np.zeros_like(x)
    i = np.arange(1, x.size - 1)
    y[i] = np.where(x[i] > 0, 3 * x[i - 1], x[i + 1] * x[i])
    return y


@tack.kernel
def scaled(x, y, a):
    for i in range(1, x.shape[0] - 1):
        y[i] = a * (x[i + 1] - x[i - 1])


@tack.kernel
def stencil2d(u, v):
    for i in range(1, u.shape[0] - 1):
        for j in range(1, u.shape[1] - 1):
            v[i, j] = 0.3 * u[i - 1, j] + 0.2 * u[i + 1, j] + 0.15 * u[i, j - 1] + 0.1 * u[i, j + 1] \
                - u[i, j] * u[i, j] + math.sin(u[i + 1, j + 1])


def stencil2d_np(u):
    v = np.zeros_like(u)
    v[1:-1, 1:-1] = (0.3 * u[:-2, 1:-1] + 0.2 * u[2:, 1:-1] + 0.15 * u[1:-1, :-2] + 0.1 * u[1:-1, 2:]
                     - u[1:-1, 1:-1] ** 2 + np.sin(u[2:, 2:]))
    return v


@tack.kernel
def indirect(x, idx, y):
    # x[idx[i]] may be any element: the scatter form (atomics) stays
    for i in range(1, x.shape[0] - 1):
        y[i] = x[idx[i]] * x[i + 1]


def uniform(n, lo=-1.0, hi=1.0, seed=3):
    return np.random.default_rng(seed).uniform(lo, hi, n)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("kern,F,ninputs", [
    (stencil3, stencil3_np, 1), (stencil5, stencil5_np, 2), (nonlinear, nonlinear_np, 1),
    (ahead, ahead_np, 1), (two_arrays, two_arrays_np, 2), (branchy, branchy_np, 1)])
@pytest.mark.parametrize("n", [23, 200])
def test_1d_stencils_match_finite_differences(device, kern, F, ninputs, dtype, n):
    # n = 200: several blocks of 64 rows (adjoint_gather.c's GATHER_BLOCK), the last one short
    inputs = [uniform(n, seed=s) for s in range(ninputs)]
    check(device, kern, F, inputs, (n,), dtype)


@pytest.mark.parametrize("n", [2, 3, 4])
def test_tiny_arrays(device, n):
    # n = 2: the launch range is empty (no gradient); n = 3: one iteration
    check(device, stencil3, stencil3_np, [uniform(n)], (n,))
    check(device, nonlinear, nonlinear_np, [uniform(n)], (n,))
    check(device, ahead, ahead_np, [uniform(n)], (n,))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("shape", [(7, 9), (3, 3), (2, 5), (5, 2)])
def test_2d_stencil_with_inner_loop(device, shape, dtype):
    u = np.random.default_rng(5).uniform(-1, 1, shape)
    check(device, stencil2d, stencil2d_np, [u], shape, dtype)


def test_scalar_gradient_is_added_once(device):
    # a float scalar's gradient (opted in) comes from one copy only
    xv = uniform(17)
    gv = uniform(17, seed=9)
    x = ad.array(xv, device=device, requires_grad=True)
    y = ad.zeros(17, dtype=tack.f64, device=device)
    ga = ad.zeros(1, dtype=tack.f64, device=device)
    scaled.backward(x, y, 1.7, adj={y: ad.array(gv, device=device), "a": ga})
    d = np.zeros(17)
    d[1:-1] = xv[2:] - xv[:-2]
    np.testing.assert_allclose(ga.numpy()[0], (gv * d).sum(), rtol=1e-12)
    want = np.zeros(17)
    want[2:] += 1.7 * gv[1:-1]
    want[:-2] -= 1.7 * gv[1:-1]
    np.testing.assert_allclose(x.grad.numpy(), want, rtol=1e-12, atol=1e-15)


def test_indirect_read_falls_back_to_scatter(device):
    n = 19
    idx = np.random.default_rng(2).integers(0, n, n).astype(np.int32)

    def F(x):
        y = np.zeros_like(x)
        i = np.arange(1, n - 1)
        y[i] = x[idx[i]] * x[i + 1]
        return y

    xv = uniform(n)
    seed = uniform(n, seed=11)
    x = ad.array(xv, device=device, requires_grad=True)
    y = ad.zeros(n, dtype=tack.f64, device=device)
    indirect.backward(x, tack.array(idx, device=device), y, adj={y: ad.array(seed, device=device)})
    np.testing.assert_allclose(x.grad.numpy(), fd(F, [xv], 0, seed), rtol=1e-6, atol=1e-9)


def adjoint_source(kern, *arrays):
    kern = getattr(kern, "kernel", kern)  # every_device wraps module kernels on opencl
    return tack._tack._generate(kern, "opencl-source", (*arrays, *arrays), False, True)


def test_gather_form_is_chosen_and_needs_no_atomics():
    a = np.zeros(64, dtype=np.float32)
    for kern in (stencil3, nonlinear, ahead):
        assert "atomic" not in adjoint_source(kern, a, a)
    assert "atomic" not in adjoint_source(stencil5, a, a, a)
    u = np.zeros((8, 8), dtype=np.float32)
    assert "atomic" not in adjoint_source(stencil2d, u, u)
    # the indirect read keeps its atomics
    i = np.zeros(64, dtype=np.int32)
    src = tack._tack._generate(getattr(indirect, "kernel", indirect), "opencl-source",
                               (a, i, a, a, i, a), False, True)
    assert "atomic" in src


def test_strided_view_keeps_the_scatter_form(device):
    # a strided view's index is i * stride (not row-major): atomics, right gradients
    if device != "cpu" and getattr(device, "name", device) != "cpu":
        pytest.skip("NumPy views run on the CPU")
    base = uniform(46)
    x = base[::2]
    g = np.zeros(46)
    seed = uniform(23, seed=4)
    y = np.zeros(23)
    stencil3.backward(x, y, adj={"x": g[::2], "y": seed})
    want = fd(stencil3_np, [np.ascontiguousarray(x)], 0, seed)
    np.testing.assert_allclose(g[::2], want, rtol=1e-6, atol=1e-9)
    assert not g[1::2].any()
