"""Autodiff through control flow (src/passes/adjoint.c): if/else, device
functions with early returns, sequential loops with static and dynamic trip
counts carrying values, tack.stop_gradient, the top-level API
(tack.Tape, requires_grad=); gradients against central finite differences
in f64 on cpu and opencl."""
import math

import numpy as np
import pytest

import tack

pytestmark = pytest.mark.every_device


@tack.func
def bend(a):
    if a > 0.0:
        return a * a
    return -math.sin(a)


@tack.kernel
def flow(x, y, n):
    for i in range(x.shape[0]):
        v = x[i]
        if v > 1.0:
            v = v * 2.0
        else:
            v = v - 0.25 * v * v
        s = 0.5
        for j in range(n):  # dynamic trip count, s carried
            s = s * v + math.sin(s) + 0.1 * j
        t = 0.0
        for j in range(3):  # static
            t = t + math.exp(-t) * v
        y[i] = bend(v) + s + t + tack.stop_gradient(v) * v


def flow_np(x, xs, n):
    """flow with the stop_gradient'ed values taken from xs."""
    def pre(v):
        return v * 2.0 if v > 1.0 else v - 0.25 * v * v
    out = np.zeros_like(x)
    for i in range(len(x)):
        v, vs = pre(x[i]), pre(xs[i])
        s = 0.5
        for j in range(n):
            s = s * v + math.sin(s) + 0.1 * j
        t = 0.0
        for j in range(3):
            t = t + math.exp(-t) * v
        out[i] = (v * v if v > 0 else -math.sin(v)) + s + t + vs * v
    return out


@pytest.mark.parametrize("n", [0, 5])
def test_control_flow_matches_finite_differences(device, n):
    xv = np.array([0.3, -0.7, 1.4, 0.9, -2.0, 1.1])
    x = tack.array(xv, device=device, requires_grad=True)
    y = tack.zeros(6, dtype=tack.f64, device=device, requires_grad=True)
    tape = tack.Tape()
    with tape:
        flow(x, y, n)
    np.testing.assert_allclose(y.numpy(), flow_np(xv, xv, n), rtol=1e-12)
    g = np.linspace(0.5, 1.5, 6)
    tape.backward(grads={y: g})
    h = 1e-6
    want = (flow_np(xv + h, xv, n) - flow_np(xv - h, xv, n)) / (2 * h) * g
    np.testing.assert_allclose(x.grad.numpy(), want, rtol=1e-6, atol=1e-8)
    tape.zero()
    assert not x.grad.numpy().any()


@tack.kernel
def simulate(x0, v0, g, out, steps):
    # a ball under gravity bouncing off y = 0, explicit Euler
    for i in range(x0.shape[0]):
        y = x0[i]
        v = v0[i]
        for k in range(steps):
            v = v - g[0] * 0.01
            y = y + v * 0.01
            if y < 0.0:
                y = -y
                v = -v
        out[i] = y * y


def test_loss_through_a_bouncing_loop(device):
    v0v = np.array([0.5, 2.0, -1.0])
    x0 = tack.array(np.array([1.0, 0.2, 0.3]), device=device, requires_grad=True)
    v0 = tack.array(v0v, device=device, requires_grad=True)
    g = tack.array(np.array([9.8]), device=device, requires_grad=True)
    out = tack.zeros(3, dtype=tack.f64, device=device, requires_grad=True)
    simulate(x0, v0, g, out, 60)
    simulate.backward(x0, v0, g, out, 60, adj={out: tack.array(np.ones(3), device=device)})

    def F(x, v, gg):
        res = []
        for a, b in zip(x, v):
            for _ in range(60):
                b = b - gg * 0.01
                a = a + b * 0.01
                if a < 0:
                    a, b = -a, -b
            res.append(a * a)
        return np.array(res)
    h = 1e-7
    x0v = np.array([1.0, 0.2, 0.3])
    want_v = np.array([((F(x0v, v0v + h * e, 9.8) - F(x0v, v0v - h * e, 9.8)) / (2 * h)).sum()
                       for e in np.eye(3)])
    want_g = ((F(x0v, v0v, 9.8 + h) - F(x0v, v0v, 9.8 - h)) / (2 * h)).sum()
    np.testing.assert_allclose(v0.grad.numpy(), want_v, rtol=1e-6)
    np.testing.assert_allclose(g.grad.numpy(), [want_g], rtol=1e-6)


def test_requires_grad_on_constructors(device):
    for a in (tack.zeros(3, dtype=tack.f64, device=device, requires_grad=True),
              tack.empty((2, 2), dtype=tack.f32, device=device, requires_grad=True),
              tack.array(np.ones(3), device=device, requires_grad=True),
              tack.ones(4, dtype=tack.f64, device=device, requires_grad=True)):
        assert a.requires_grad and a.grad.shape == a.shape and a.grad.device == a.device
        assert not a.grad.numpy().any()
    assert tack.ones(2, device=device).numpy().tolist() == [1.0, 1.0]
    assert not tack.zeros(2, device=device).requires_grad
    assert tack.stop_gradient(3.0) == 3.0


def test_refusals_name_the_construct(device):
    @tack.kernel
    def breaks(x, y):
        for i in range(x.shape[0]):
            s = x[i]
            for k in range(10):
                if s > 10.0:
                    break
                s = s * 2.0
            y[i] = s

    # `break` is differentiated now (test_autodiff_jumps.py): s doubles 4 times
    x = tack.array(np.array([1.0, 0.75]), device=device, requires_grad=True)
    y = tack.zeros(2, dtype=tack.f64, device=device, requires_grad=True)
    breaks(x, y)
    breaks.backward(x, y, adj={y: tack.array(np.ones(2), device=device)})
    np.testing.assert_allclose(x.grad.numpy(), [16.0, 16.0])
    x = tack.array(np.ones(2), device=device, requires_grad=True)

    @tack.kernel
    def inloop(x, n):
        for i in range(x.shape[0]):
            for j in range(n):
                x[i] = x[i] * 0.5

    with pytest.raises(tack.CompileError, match=r"test_autodiff_control.py:\d+:\d+: .*'x' is overwritten"):
        inloop.backward(x, 2)
    assert not x.grad.numpy().any()  # nothing written when refused


def test_a_second_store_of_an_element_is_refused(device):
    @tack.kernel
    def twice(x, y):
        for i in range(x.shape[0]):
            y[i] = x[i] * 2.0
            y[i] = x[i] * 3.0  # the first value is dead: its gradient must not count

    x = tack.array(np.ones(3), device=device, requires_grad=True)
    y = tack.zeros(3, dtype=tack.f64, device=device, requires_grad=True)
    with pytest.raises(tack.CompileError) as info:
        twice.backward(x, y, adj={y: tack.array(np.ones(3), device=device)})
    message = str(info.value)
    assert "'y' may be stored more than once" in message
    assert message.count("kernel 'twice'") == 1  # named once, not once per layer
    assert not x.grad.numpy().any()

    @tack.kernel
    def one_per_path(x, y, rows):
        for i in range(x.shape[0]):
            if x[i] > 0.0:
                y[i] = x[i] * 2.0
            else:
                y[i] = x[i] * 3.0
            for j in range(rows.shape[1]):  # the index moves with j: one store per element
                rows[i, j] = x[i] * j

    xs = np.array([1.0, -2.0, 0.5])
    x = tack.array(xs, device=device, requires_grad=True)
    y = tack.zeros(3, dtype=tack.f64, device=device, requires_grad=True)
    rows = tack.zeros((3, 4), dtype=tack.f64, device=device, requires_grad=True)
    tape = tack.Tape()
    with tape:
        one_per_path(x, y, rows)
    tape.backward(grads={y: tack.array(np.ones(3), device=device),
                         rows: tack.array(np.ones((3, 4)), device=device)})
    np.testing.assert_allclose(x.grad.numpy(), np.where(xs > 0, 2.0, 3.0) + 6.0)


def test_ball_throw_example_converges(device, tmp_path):
    import os
    import subprocess
    import sys
    ex = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples")
    r = subprocess.run([sys.executable, "ball_throw.py", "--device", device.name,
                        "--png", str(tmp_path / "b.png")], cwd=ex, capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0 and "ball_throw: ok" in r.stdout, r.stdout + r.stderr


def test_spring_chain_gradient_matches_finite_differences(device):
    """The gradient of the chain's end position through 40 launches of a
    kernel with neighbour reads and branches, against central differences."""
    import os
    import sys
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                    "examples"))
    import spring_fit as S
    goal = tack.array(np.array([1.0, -0.5]), device=device)

    def loss_of(r):
        end = S.simulate(tack.array(r, device=device), device)[-1]
        loss = tack.zeros(1, dtype=tack.f64, device=device)
        S.miss(end[0], end[1], goal, loss)
        return loss.numpy()[0]

    r0 = np.linspace(0.18, 0.24, S.N - 1)
    rest = tack.array(r0, device=device, requires_grad=True)
    loss = tack.zeros(1, dtype=tack.f64, device=device, requires_grad=True)
    tape = tack.Tape()
    states = S.simulate(rest, device, tape)
    with tape:
        S.miss(states[-1][0], states[-1][1], goal, loss)
    tape.backward(loss)
    h = 1e-6
    fd = [(loss_of(r0 + h * e) - loss_of(r0 - h * e)) / (2 * h) for e in np.eye(S.N - 1)]
    np.testing.assert_allclose(rest.grad.numpy(), fd, rtol=1e-6)


def test_spring_fit_example_converges(device, tmp_path):
    import os
    import subprocess
    import sys
    ex = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples")
    r = subprocess.run([sys.executable, "spring_fit.py", "--device", device.name,
                        "--png", str(tmp_path / "s.png")], cwd=ex, capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0 and "spring_fit: ok" in r.stdout, r.stdout + r.stderr
