"""Autodiff through `break` and `continue` (src/passes/adjoint_jumps.c makes
them flags before src/passes/adjoint.c): `for` and `while` loops, carried
values, nested loops, device functions; gradients against central finite
differences in f64 on cpu and opencl."""
import math

import numpy as np
import pytest

import tack

pytestmark = pytest.mark.every_device


@tack.func
def settle(a):
    # a device function's own loop, left by `break`
    for k in range(8):
        a = a * 0.75 + 0.1 * math.cos(a)
        if abs(a) < 0.05:
            break
    return a


@tack.kernel
def jumpy(x, y, n):
    for i in range(x.shape[0]):
        s = x[i]
        t = 0.0
        for k in range(n):  # dynamic trip count, s and t carried
            if k % 3 == 1:
                continue
            s = s * 1.1 + math.sin(s) * 0.3
            if s > 4.0:
                break
            t = t + s * 0.5
        j = 0
        u = x[i]
        while j < 20:  # a while with both jumps
            j += 1
            if u < 0.0:
                u = u * 0.5 - 0.1
                continue
            u = u * 1.5 + 0.2
            if u > 3.0:
                break
        w = 0.0
        for a in range(4):  # the outer loop continues, the inner one breaks
            if a == 2:
                continue
            q = x[i] * (a + 1)
            for b in range(6):
                q = q * 0.9 + math.exp(-q * q)
                if q > 2.5 + a:
                    break
            w = w + q
        r = 0.0
        for k in range(5):  # carries nothing but r; a continue only
            if x[i] * k > 1.5:
                continue
            r = r + math.tanh(x[i] * k)
        y[i] = s + t + u + w + r + settle(x[i] * 3.0)


def settle_np(a):
    for _ in range(8):
        a = a * 0.75 + 0.1 * math.cos(a)
        if abs(a) < 0.05:
            break
    return a


def jumpy_np(xv, n):
    out = np.zeros_like(xv)
    for i, x in enumerate(xv):
        s, t = x, 0.0
        for k in range(n):
            if k % 3 == 1:
                continue
            s = s * 1.1 + math.sin(s) * 0.3
            if s > 4.0:
                break
            t = t + s * 0.5
        j, u = 0, x
        while j < 20:
            j += 1
            if u < 0.0:
                u = u * 0.5 - 0.1
                continue
            u = u * 1.5 + 0.2
            if u > 3.0:
                break
        w = 0.0
        for a in range(4):
            if a == 2:
                continue
            q = x * (a + 1)
            for b in range(6):
                q = q * 0.9 + math.exp(-q * q)
                if q > 2.5 + a:
                    break
            w = w + q
        r = 0.0
        for k in range(5):
            if x * k > 1.5:
                continue
            r = r + math.tanh(x * k)
        out[i] = s + t + u + w + r + settle_np(x * 3.0)
    return out


@pytest.mark.parametrize("n", [0, 4, 12])
def test_break_and_continue_match_finite_differences(device, n):
    xv = np.array([0.3, -0.7, 1.4, 0.9, -2.0, 1.1, 0.05, 2.6, -0.2])
    x = tack.array(xv, device=device, requires_grad=True)
    y = tack.zeros(len(xv), dtype=tack.f64, device=device, requires_grad=True)
    tape = tack.Tape()
    with tape:
        jumpy(x, y, n)
    np.testing.assert_allclose(y.numpy(), jumpy_np(xv, n), rtol=1e-12)
    g = np.linspace(0.5, 1.5, len(xv))
    tape.backward(grads={y: g})
    h = 1e-6
    want = (jumpy_np(xv + h, n) - jumpy_np(xv - h, n)) / (2 * h) * g
    np.testing.assert_allclose(x.grad.numpy(), want, rtol=1e-6, atol=1e-8)


@tack.kernel
def search(x, y):
    # a while that breaks as soon as it finds its value, and the loop's
    # result stored after it
    for i in range(x.shape[0]):
        v = x[i]
        k = 0
        while True:
            v = v * v + 0.25
            k += 1
            if v > 2.0 or k >= 30:
                break
        y[i] = v * k


def test_while_true_with_break_f32_and_f64(device):
    for dt, rtol in ((np.float64, 1e-6), (np.float32, 2e-2)):
        xv = np.array([0.1, 0.6, 1.2, -0.9, 0.45], dtype=dt)
        x = tack.array(xv, device=device, requires_grad=True)
        y = tack.zeros(5, dtype=tack.f64 if dt == np.float64 else tack.f32, device=device,
                       requires_grad=True)

        def F(xs):
            res = []
            for v in xs.astype(np.float64):
                k = 0
                while True:
                    v = v * v + 0.25
                    k += 1
                    if v > 2.0 or k >= 30:
                        break
                res.append(v * k)
            return np.array(res)
        search.backward(x, y, adj={y: tack.array(np.ones(5, dtype=dt), device=device)})
        xd = xv.astype(np.float64)
        h = 1e-6
        want = (F(xd + h) - F(xd - h)) / (2 * h)
        np.testing.assert_allclose(x.grad.numpy(), want, rtol=rtol)


def test_break_with_the_variable_read_after_is_refused(device):
    @tack.kernel
    def reads_k(x, y):
        for i in range(x.shape[0]):
            s = x[i]
            for k in range(10):
                if s > 10.0:
                    break
                s = s * 2.0
            y[i] = s + k

    x = tack.array(np.ones(2), device=device, requires_grad=True)
    y = tack.zeros(2, dtype=tack.f64, device=device, requires_grad=True)
    reads_k(x, y)
    with pytest.raises(tack.CompileError,
                       match=r"test_autodiff_jumps.py:\d+:\d+: .*`break`.*read after") as info:
        reads_k.backward(x, y)
    assert "kernel 'reads_k'" in str(info.value)
    assert not x.grad.numpy().any()


@tack.kernel
def skips(x, y):
    # nothing carried: z is assigned after the continue, in the branch the
    # flags make, and read nowhere else (the loop is reversed iteration by
    # iteration, with no replay)
    for i in range(x.shape[0]):
        for k in range(6):
            if (k + i) % 2 == 1:
                continue
            z = math.sin(x[i] * k) * x[i]
            y[i * 6 + k] = z


def test_continue_in_a_loop_that_carries_nothing(device):
    xv = np.array([0.3, -0.7, 1.4, 0.9])
    x = tack.array(xv, device=device, requires_grad=True)
    y = tack.zeros(24, dtype=tack.f64, device=device, requires_grad=True)
    g = np.linspace(-1.0, 2.0, 24)
    skips(x, y)
    skips.backward(x, y, adj={y: tack.array(g, device=device)})

    def F(xs):
        out = np.zeros(24)
        for i, v in enumerate(xs):
            for k in range(6):
                if (k + i) % 2 == 0:
                    out[i * 6 + k] = math.sin(v * k) * v
        return out
    np.testing.assert_allclose(y.numpy(), F(xv), rtol=1e-12)
    h = 1e-6
    want = [np.dot(g, (F(xv + h * e) - F(xv - h * e)) / (2 * h)) for e in np.eye(4)]
    np.testing.assert_allclose(x.grad.numpy(), want, rtol=1e-6, atol=1e-9)
