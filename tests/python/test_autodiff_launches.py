"""Autodiff of launch shapes and generators: tack.ndindex launches (two and
three dimensions), random numbers from tack.rng(seed, i) (replayed by the
backward pass; they carry no gradient), and the refusals of workgroups and
of the hidden random stream at the line that uses them.  Gradients against
central finite differences in f64 on cpu and opencl."""
import inspect
import math

import numpy as np
import pytest

import tack

pytestmark = pytest.mark.every_device

H = 1e-6


def central(f, x, gout):
    """d sum(gout * f(x)) / dx by central differences, element by element."""
    d = np.zeros_like(x)
    for k in range(x.size):
        e = np.zeros_like(x)
        e.reshape(-1)[k] = H
        d.reshape(-1)[k] = ((gout * (f(x + e) - f(x - e))).sum()) / (2 * H)
    return d


def line_of(fn, text):
    """The file line of `text` in fn's source (the refusal must name it)."""
    lines, first = inspect.getsourcelines(fn)
    return first + next(k for k, s in enumerate(lines) if text in s)


@tack.kernel
def grid(u, w, out, rows):
    for i, j in tack.ndindex(u.shape[0], u.shape[1]):
        a = math.sin(u[i, j]) * w[j] + u[i, j] * u[i, j] * w[j]
        out[i, j] = a * math.exp(0.1 * w[j])
        rows[i] += a * u[i, j]  # iterations (i, 0), (i, 1)... share rows[i]


def grid_np(u, w):
    a = np.sin(u) * w + u * u * w
    return a * np.exp(0.1 * w), (a * u).sum(axis=1)


U = np.array([[0.3, -0.7, 1.4, 0.2], [0.9, -2.0, 1.1, 0.5], [-0.4, 0.8, 0.6, -1.3]])
W = np.array([0.5, -1.2, 0.7, 1.9])


def test_ndindex_launch_is_differentiated(device):
    u = tack.array(U, device=device, requires_grad=True)
    w = tack.array(W, device=device, requires_grad=True)
    out = tack.zeros(U.shape, dtype=tack.f64, device=device, requires_grad=True)
    rows = tack.zeros(3, dtype=tack.f64, device=device, requires_grad=True)
    go = np.linspace(-1.0, 2.0, U.size).reshape(U.shape)
    gr = np.array([0.7, -1.1, 1.6])
    tape = tack.Tape()
    with tape:
        grid(u, w, out, rows)
    o0, r0 = grid_np(U, W)
    np.testing.assert_allclose(out.numpy(), o0, rtol=1e-12)
    np.testing.assert_allclose(rows.numpy(), r0, rtol=1e-12)
    tape.backward(grads={out: go, rows: gr})

    def loss_u(uv):
        o, r = grid_np(uv, W)
        return (go * o).sum() + (gr * r).sum()

    def loss_w(wv):
        o, r = grid_np(U, wv)
        return (go * o).sum() + (gr * r).sum()
    np.testing.assert_allclose(u.grad.numpy(), central(loss_u, U, 1.0), rtol=1e-6)
    np.testing.assert_allclose(w.grad.numpy(), central(loss_w, W, 1.0), rtol=1e-6)


@tack.kernel
def cube(u, c, out):
    for i, j, k in tack.ndindex(u.shape[0], u.shape[1], u.shape[2]):
        # c[i]: the launch's first index, shared by every (j, k)
        out[i, j, k] = math.tanh(u[i, j, k] * c[k]) + c[j] * u[i, j, k] + c[i] * c[i]


def test_three_dimensional_ndindex_launch_is_differentiated(device):
    rng = np.random.default_rng(3)
    uv = rng.uniform(-1.0, 1.0, (2, 3, 3))
    cv = rng.uniform(-1.0, 1.0, 3)
    g = rng.uniform(-1.0, 1.0, uv.shape)
    u = tack.array(uv, device=device, requires_grad=True)
    c = tack.array(cv, device=device, requires_grad=True)
    out = tack.zeros(uv.shape, dtype=tack.f64, device=device)
    cube.backward(u, c, out, adj={out: tack.array(g, device=device)})

    def f_u(x):
        return np.tanh(x * cv) + cv[None, :, None] * x + (cv[:2] ** 2)[:, None, None]

    def f_c(x):
        return np.tanh(uv * x) + x[None, :, None] * uv + (x[:2] ** 2)[:, None, None]
    np.testing.assert_allclose(u.grad.numpy(), central(f_u, uv, g), rtol=1e-6)
    np.testing.assert_allclose(c.grad.numpy(), central(f_c, cv, g), rtol=1e-6)


@tack.kernel
def noisy(x, out, seed):
    for i in range(x.shape[0]):
        rng = tack.rng(seed, i)
        a = tack.uniform(rng)
        b = tack.normal(rng)
        out[i] = x[i] * a + b * x[i] * x[i] + math.sin(a * x[i])


def test_random_draws_from_tack_rng_are_replayed(device):
    xv = np.array([0.3, -0.7, 1.4, 0.9, -2.0, 1.1])
    g = np.linspace(0.5, 1.5, 6)
    x = tack.array(xv, device=device, requires_grad=True)
    out = tack.zeros(6, dtype=tack.f64, device=device)

    def f(v):
        o = tack.zeros(6, dtype=tack.f64, device=device)
        noisy(tack.array(v, device=device), o, 7)
        return o.numpy()
    assert np.ptp(f(np.ones(6)) - f(np.zeros(6))) > 0.1  # the draws differ by iteration
    noisy.backward(x, out, 7, adj={out: tack.array(g, device=device)})
    np.testing.assert_allclose(x.grad.numpy(), central(f, xv, g), rtol=1e-6)


def test_hidden_random_stream_is_refused_at_the_draw(device):
    @tack.kernel
    def jitter(x, out):
        for i in range(x.shape[0]):
            a = x[i] * 2.0
            out[i] = a + np.random.random()

    x = tack.array(np.ones(4), device=device, requires_grad=True)
    out = tack.zeros(4, dtype=tack.f64, device=device)
    with pytest.raises(tack.CompileError, match=r"random numbers from the hidden stream") as info:
        jitter.backward(x, out, adj={out: tack.ones(4, dtype=tack.f64, device=device)})
    msg = str(info.value)
    assert "kernel 'jitter'" in msg and ":%d:" % line_of(jitter.func, "np.random.random()") in msg
    assert "tack.rng(seed, i)" in msg


def test_workgroups_are_refused_at_their_first_use(device):
    @tack.kernel
    def group_scale(x, out):
        for i in range(x.shape[0]):
            a = x[i] * 2.0
            out[i] = a + tack.local_index()

    x = tack.array(np.ones(256), device=device, requires_grad=True)
    out = tack.zeros(256, dtype=tack.f64, device=device)
    with pytest.raises(tack.CompileError, match=r"workgroups") as info:
        group_scale.backward(x, out, adj={out: tack.ones(256, dtype=tack.f64, device=device)})
    msg = str(info.value)
    assert "kernel 'group_scale'" in msg
    assert ":%d:" % line_of(group_scale.func, "tack.local_index()") in msg


def test_a_barrier_is_refused_at_its_line(device):
    @tack.kernel
    def staged(x, out):
        for i in range(x.shape[0]):
            a = x[i] * 2.0
            tack.barrier()
            out[i] = a

    x = tack.array(np.ones(256), device=device, requires_grad=True)
    out = tack.zeros(256, dtype=tack.f64, device=device)
    with pytest.raises(tack.CompileError, match=r"workgroups") as info:
        staged.backward(x, out, adj={out: tack.ones(256, dtype=tack.f64, device=device)})
    msg = str(info.value)
    assert "kernel 'staged'" in msg and ":%d:" % line_of(staged.func, "tack.barrier()") in msg


@tack.kernel
def stencil2d(u, out):
    for i, j in tack.ndindex(u.shape[0] - 2, u.shape[1] - 2):
        out[i + 1, j + 1] = math.sin(u[i + 2, j + 1]) * u[i + 1, j] + 0.25 * (
            u[i, j + 1] + u[i + 1, j + 2]) - u[i + 1, j + 1] * u[i + 1, j + 1]


def test_ndindex_stencil_across_threads(device):
    # neighbours' gradients from many iterations, on every worker thread:
    # the chain rule written out with NumPy's unbuffered adds
    rng = np.random.default_rng(11)
    uv = rng.uniform(-1.0, 1.0, (203, 61))
    g = rng.uniform(-1.0, 1.0, uv.shape)
    g[0, :] = g[-1, :] = g[:, 0] = g[:, -1] = 0.0  # never written: no gradient read there
    u = tack.array(uv, device=device, requires_grad=True)
    out = tack.zeros(uv.shape, dtype=tack.f64, device=device)
    stencil2d.backward(u, out, adj={out: tack.array(g, device=device)})
    want = np.zeros_like(uv)
    i, j = np.meshgrid(np.arange(uv.shape[0] - 2), np.arange(uv.shape[1] - 2), indexing="ij")
    gi = g[i + 1, j + 1]
    np.add.at(want, (i + 2, j + 1), gi * np.cos(uv[i + 2, j + 1]) * uv[i + 1, j])
    np.add.at(want, (i + 1, j), gi * np.sin(uv[i + 2, j + 1]))
    np.add.at(want, (i, j + 1), 0.25 * gi)
    np.add.at(want, (i + 1, j + 2), 0.25 * gi)
    np.add.at(want, (i + 1, j + 1), -2.0 * gi * uv[i + 1, j + 1])
    np.testing.assert_allclose(u.grad.numpy(), want, rtol=1e-12, atol=1e-12)
