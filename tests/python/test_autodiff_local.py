"""Autodiff of local arrays (tack.local) and `while` loops
(src/passes/adjoint.c): gradients against central finite differences in
f64 on cpu and opencl."""
import math

import numpy as np
import pytest

import tack

pytestmark = pytest.mark.every_device


@tack.kernel
def buffers(x, y, n):
    for i in range(x.shape[0]):
        v = x[i]
        c = tack.local(4, tack.f64)
        c[0] = v
        c[1] = v * v
        c[0] = c[0] * 2.0 + c[1] * c[0]  # reads the element it overwrites
        for k in range(2, 4):  # stores in a loop, and reads
            c[k] = math.sin(v * k) + v * c[1] + c[k - 1]
        s = 0.0
        for k in range(4):  # read in a later loop, carried sum
            s = s + c[k] * (k + 1)
        acc = tack.local((2, 2), tack.f64)
        for k in range(n):  # updates in a loop, dynamic trip count
            acc[k % 2, 1] += v * k
            acc[1, k % 2] -= math.exp(0.1 * v * k)
        y[i] = s + acc[0, 1] * acc[1, 1] + acc[1, 0]


def buffers_np(x, n):
    out = np.zeros_like(x)
    for i, v in enumerate(x):
        c = [v, v * v, 0.0, 0.0]
        c[0] = c[0] * 2.0 + c[1] * c[0]
        for k in range(2, 4):
            c[k] = math.sin(v * k) + v * c[1] + c[k - 1]
        s = 0.0
        for k in range(4):
            s = s + c[k] * (k + 1)
        acc = np.zeros((2, 2))
        for k in range(n):
            acc[k % 2, 1] += v * k
            acc[1, k % 2] -= math.exp(0.1 * v * k)
        out[i] = s + acc[0, 1] * acc[1, 1] + acc[1, 0]
    return out


@pytest.mark.parametrize("n", [0, 5])
def test_local_arrays_match_finite_differences(device, n):
    xv = np.array([0.3, -0.7, 1.4, 0.9, -2.0, 1.1])
    x = tack.array(xv, device=device, requires_grad=True)
    y = tack.zeros(6, dtype=tack.f64, device=device, requires_grad=True)
    tape = tack.Tape()
    with tape:
        buffers(x, y, n)
    np.testing.assert_allclose(y.numpy(), buffers_np(xv, n), rtol=1e-12)
    g = np.linspace(0.5, 1.5, 6)
    tape.backward(grads={y: g})
    h = 1e-6
    want = (buffers_np(xv + h, n) - buffers_np(xv - h, n)) / (2 * h) * g
    np.testing.assert_allclose(x.grad.numpy(), want, rtol=1e-6, atol=1e-8)


@tack.func
def smooth(c, k):
    return c[k] * c[k] + 0.5 * c[k]


@tack.kernel
def local_in_func(x, w, y):
    for i in range(x.shape[0]):
        c = tack.local(3, tack.f64)
        for k in range(3):
            c[k] = x[i] * w[k]
        t = 0.0
        for k in range(3):
            t = t + smooth(c, k)
        y[i] = t


def test_local_array_read_in_a_device_function(device):
    xv, wv = np.array([0.5, -1.25, 2.0]), np.array([1.0, -0.5, 0.25])
    x = tack.array(xv, device=device, requires_grad=True)
    w = tack.array(wv, device=device, requires_grad=True)
    y = tack.zeros(3, dtype=tack.f64, device=device, requires_grad=True)
    tape = tack.Tape()
    with tape:
        local_in_func(x, w, y)
    tape.backward(grads={y: np.ones(3)})
    c = xv[:, None] * wv[None, :]
    np.testing.assert_allclose(y.numpy(), (c * c + 0.5 * c).sum(1), rtol=1e-12)
    d = 2 * c + 0.5  # dy_i / dc_ik
    np.testing.assert_allclose(x.grad.numpy(), (d * wv).sum(1), rtol=1e-12)
    np.testing.assert_allclose(w.grad.numpy(), (d * xv[:, None]).sum(0), rtol=1e-12)


def test_local_array_read_in_the_loop_that_writes_it(device):
    @tack.kernel
    def rewrite(x, y, n):
        for i in range(x.shape[0]):
            a = tack.local(2, tack.f64)
            a[0] = 1.0
            for k in range(n):  # each trip reads what the last one stored
                a[0] = a[0] * x[i] + 0.5 * a[1]
                a[1] = math.sin(a[0])
            t = 0.0
            for k in range(2):
                a[k] = a[k] * t + a[k]  # overwritten after the reads above
                t = t + a[k]
            y[i] = t

    def F(x, n):
        out = []
        for v in x:
            a = [1.0, 0.0]
            for _ in range(n):
                a[0] = a[0] * v + 0.5 * a[1]
                a[1] = math.sin(a[0])
            t = 0.0
            for k in range(2):
                a[k] = a[k] * t + a[k]
                t = t + a[k]
            out.append(t)
        return np.array(out)

    xv = np.array([0.9, -1.1, 1.3])
    x = tack.array(xv, device=device, requires_grad=True)
    y = tack.zeros(3, dtype=tack.f64, device=device, requires_grad=True)
    rewrite(x, y, 4)
    np.testing.assert_allclose(y.numpy(), F(xv, 4), rtol=1e-12)
    rewrite.backward(x, y, 4, adj={y: tack.array(np.ones(3), device=device)})
    h = 1e-6
    np.testing.assert_allclose(x.grad.numpy(), (F(xv + h, 4) - F(xv - h, 4)) / (2 * h), rtol=1e-6)


@tack.kernel
def grow(x, y):
    for i in range(x.shape[0]):
        s = x[i]
        t = 0.0
        while s < 10.0:  # trip count known only as it runs
            s = s * 1.5 + 0.1 * t
            t = t + math.sin(s)
            m = 0
            while m < 2:  # nested, carrying m and t
                t = t * 0.9 + 0.05 * s
                m += 1
        y[i] = s * t


def grow_np(x):
    out = np.zeros_like(x)
    for i, s in enumerate(x):
        t = 0.0
        while s < 10.0:
            s = s * 1.5 + 0.1 * t
            t = t + math.sin(s)
            for _ in range(2):
                t = t * 0.9 + 0.05 * s
        out[i] = s * t
    return out


def test_while_loops_match_finite_differences(device):
    xv = np.array([0.3, 1.7, 4.2, 9.0, 12.0, 2.5])
    x = tack.array(xv, device=device, requires_grad=True)
    y = tack.zeros(6, dtype=tack.f64, device=device, requires_grad=True)
    tape = tack.Tape()
    with tape:
        grow(x, y)
    np.testing.assert_allclose(y.numpy(), grow_np(xv), rtol=1e-12)
    g = np.linspace(1.5, 0.5, 6)
    tape.backward(grads={y: g})
    h = 1e-7
    want = (grow_np(xv + h) - grow_np(xv - h)) / (2 * h) * g
    np.testing.assert_allclose(x.grad.numpy(), want, rtol=1e-6, atol=1e-8)


def test_while_loop_with_a_local_array(device):
    @tack.kernel
    def halve(x, y):
        for i in range(x.shape[0]):
            a = tack.local(3, tack.f64)
            a[0] = x[i]
            a[1] = x[i] * x[i]
            s = 0.0
            k = 0
            while k < 2:  # reads a, which no store follows
                s = s + a[k] * a[k]
                k += 1
            y[i] = s

    xv = np.array([0.5, -1.5, 3.0])
    x = tack.array(xv, device=device, requires_grad=True)
    y = tack.zeros(3, dtype=tack.f64, device=device, requires_grad=True)
    halve(x, y)
    np.testing.assert_allclose(y.numpy(), xv ** 2 + xv ** 4, rtol=1e-12)
    halve.backward(x, y, adj={y: tack.array(np.ones(3), device=device)})
    np.testing.assert_allclose(x.grad.numpy(), 2 * xv + 4 * xv ** 3, rtol=1e-12)


@tack.kernel
def laplace(u, v):
    for i in range(1, u.shape[0] - 1):
        for j in range(1, u.shape[1] - 1):  # carries nothing: each reverse iteration alone
            v[i, j] = 0.25 * (u[i - 1, j] + u[i + 1, j] + u[i, j - 1] + u[i, j + 1]) - u[i, j] * u[i, j]


@pytest.mark.parametrize("shape", [(3, 4), (40, 33), (600, 70)])
def test_a_loop_that_carries_nothing(device, shape):
    rng = np.random.default_rng(shape[0])
    uv = rng.uniform(-1, 1, shape)
    gv = rng.uniform(-1, 1, shape)
    u = tack.array(uv, device=device, requires_grad=True)
    v = tack.zeros(shape, dtype=tack.f64, device=device, requires_grad=True)
    laplace.backward(u, v, adj={v: tack.array(gv, device=device)})
    g = np.zeros(shape)
    g[1:-1, 1:-1] = gv[1:-1, 1:-1]
    want = np.zeros(shape)
    want[:-2, 1:-1] += 0.25 * g[1:-1, 1:-1]
    want[2:, 1:-1] += 0.25 * g[1:-1, 1:-1]
    want[1:-1, :-2] += 0.25 * g[1:-1, 1:-1]
    want[1:-1, 2:] += 0.25 * g[1:-1, 1:-1]
    want -= 2 * uv * g
    np.testing.assert_allclose(u.grad.numpy(), want, rtol=1e-12, atol=1e-14)


@tack.kernel
def temporaries(u, v, n):
    for i in range(1, u.shape[0] - 1):
        for j in range(1, u.shape[1] - 1):
            t = u[i, j] * u[i, j]  # assigned before any read in each iteration: not carried
            v[i, j] = 0.25 * (u[i - 1, j] + u[i + 1, j] + u[i, j - 1] + u[i, j + 1]) - t
        last = u[i, 0]
        for k in range(n):
            last = u[i, 1] * k  # read after the loop (n = 0 keeps u[i, 0]): carried
        v[i, 0] = last


@pytest.mark.parametrize("n", [0, 3])
def test_loop_temporaries_and_a_value_read_after_the_loop(device, n):
    shape = (7, 5)
    rng = np.random.default_rng(n)
    uv = rng.uniform(-1, 1, shape)
    gv = rng.uniform(-1, 1, shape)
    u = tack.array(uv, device=device, requires_grad=True)
    v = tack.zeros(shape, dtype=tack.f64, device=device, requires_grad=True)
    temporaries.backward(u, v, n, adj={v: tack.array(gv, device=device)})
    g = np.zeros(shape)
    g[1:-1, 1:-1] = gv[1:-1, 1:-1]
    want = np.zeros(shape)
    for di, dj in ((-1, 0), (1, 0), (0, -1), (0, 1)):
        want[1 + di:shape[0] - 1 + di, 1 + dj:shape[1] - 1 + dj] += 0.25 * g[1:-1, 1:-1]
    want -= 2 * uv * g
    if n == 0:
        want[1:-1, 0] += gv[1:-1, 0]
    else:
        want[1:-1, 1] += (n - 1) * gv[1:-1, 0]
    np.testing.assert_allclose(u.grad.numpy(), want, rtol=1e-12, atol=1e-14)
