"""Quaternions as values (Warp's wp.quat): arrays of tack.quatf / quatd,
tack.quat(...) and tack.quatf(...), the tack.quat_* functions' results and
struct fields are quaternions, and `q * r` of two is Hamilton's product (the
rotation r, then q), against NumPy on every device, in f32 and f64.  A
4-vector stays a 4-vector (its `*` is component by component), and a
quaternion times a 4-vector is refused rather than guessed."""
import numpy as np
import pytest

import tack

pytestmark = pytest.mark.every_device


def np_mul(a, b):
    av, aw, bv, bw = a[..., :3], a[..., 3:], b[..., :3], b[..., 3:]
    v = aw * bv + bw * av + np.cross(av, bv)
    w = aw * bw - (av * bv).sum(-1, keepdims=True)
    return np.concatenate([v, w], -1)


def unit(rng, n):
    q = rng.normal(size=(n, 4))
    return q / np.linalg.norm(q, axis=1, keepdims=True)


@tack.func
def compose(a, b):
    return a * b  # quaternions in, a quaternion out


@tack.kernel
def products(a, b, s, out):
    for i in range(a.shape[0]):
        q = a[i]
        r = b[i]
        out[i, 0] = q * r                           # Hamilton's product
        out[i, 1] = tack.mul(q, r)                  # Warp's wp.mul
        out[i, 2] = compose(q, r) * q               # through a device function
        p = q
        p = p * r                                   # a local keeps its kind
        out[i, 3] = p
        out[i, 4] = -q * 2.0 + r / 4.0 - 0.5 * q    # scaling, sums: component by component
        out[i, 5] = tack.normalize(q * 3.0) * r     # normalize keeps a quaternion
        out[i, 6] = (q if s[i] > 0.0 else r) * r    # a choice of two
        out[i, 7] = tack.quat(q.x, q.y, q.z, q.w) * tack.quat_inverse(q)
        out[i, 8] = tack.quat_from_axis_angle(tack.vec3(0.0, 0.0, 1.0), s[i]) * r
        out[i, 9] = tack.vec4(q) * tack.vec4(r)     # 4-vectors: component by component


@pytest.mark.parametrize("dtype,qtype,tol", [(np.float32, tack.quatf, 2e-6),
                                             (np.float64, tack.quatd, 1e-14)])
def test_products_match_numpy(device, dtype, qtype, tol):
    rng = np.random.default_rng(3)
    n = 7
    a, b = unit(rng, n), unit(rng, n)
    s = rng.uniform(-1, 1, n)
    out = tack.zeros((n, 10), dtype=qtype, device=device)
    products(tack.array(a.astype(dtype), dtype=qtype, device=device),
             tack.array(b.astype(dtype), dtype=qtype, device=device),
             tack.array(s.astype(dtype), device=device), out)
    got = out.numpy()
    a, b = a.astype(dtype).astype(np.float64), b.astype(dtype).astype(np.float64)
    ab = np_mul(a, b)
    z = np.stack([np.zeros(n), np.zeros(n), np.sin(s.astype(dtype) / 2), np.cos(s.astype(dtype) / 2)], 1)
    want = [ab, ab, np_mul(ab, a), ab, -a * 2 + b / 4 - 0.5 * a, ab,
            np_mul(np.where(s[:, None].astype(dtype) > 0, a, b), b),
            np.tile([0, 0, 0, 1.0], (n, 1)), np_mul(z, b), a * b]
    for k, w in enumerate(want):
        np.testing.assert_allclose(got[:, k], w, atol=tol * 8, err_msg="column %d" % k)


@tack.struct
class Body:
    q: tack.quatf
    spin: tack.quatf
    w: tack.vec4f


@tack.kernel
def advance(bodies):
    for i in range(bodies.shape[0]):
        b = bodies[i]
        b.q = b.spin * b.q                      # fields of a record value
        bodies[i] = b
        bodies[i].spin = bodies[i].spin * bodies[i].spin
        bodies[i].w = bodies[i].w * bodies[i].w  # a vec4f field: component by component


def test_struct_fields(device):
    rng = np.random.default_rng(4)
    n = 5
    q, spin, w = unit(rng, n), unit(rng, n), rng.normal(size=(n, 4))
    if device == "cpu":  # a NumPy structured array, updated in place
        recs = np.zeros(n, dtype=Body.numpy)
        recs["q"], recs["spin"], recs["w"] = q, spin, w
        advance(recs)
        got_q, got_spin, got_w = recs["q"], recs["spin"], recs["w"]
    else:
        bodies = tack.zeros(n, dtype=Body, device=device)
        recs = np.zeros(n, dtype=Body.numpy)
        recs["q"], recs["spin"], recs["w"] = q, spin, w
        bodies = tack.array(recs, dtype=Body, device=device)
        advance(bodies)
        out = bodies.numpy()
        got_q, got_spin, got_w = out["q"], out["spin"], out["w"]
    f = lambda x: x.astype(np.float32).astype(np.float64)
    np.testing.assert_allclose(got_q, np_mul(f(spin), f(q)), atol=1e-5)
    np.testing.assert_allclose(got_spin, np_mul(f(spin), f(spin)), atol=1e-5)
    np.testing.assert_allclose(got_w, f(w) * f(w), rtol=1e-6)


def test_refusals_name_the_line(device):
    @tack.kernel
    def mixed(a, v, out):
        for i in range(a.shape[0]):
            out[i] = a[i] * v[i]

    a = tack.zeros(2, dtype=tack.quatf, device=device)
    v = tack.zeros(2, dtype=tack.vec4f, device=device)
    with pytest.raises(tack.CompileError, match="a quaternion and a vector cannot be multiplied") as e:
        mixed(a, v, tack.zeros(2, dtype=tack.quatf, device=device))
    assert ":%d:" % (mixed.func.__code__.co_firstlineno + 3) in str(e.value)

    @tack.kernel
    def power(a, out):
        for i in range(a.shape[0]):
            out[i] = a[i] ** 2.0

    with pytest.raises(tack.CompileError, match="does not apply to quaternions"):
        power(a, tack.zeros(2, dtype=tack.quatf, device=device))


def test_dtypes_outside_kernels():
    assert tack.quatf is not tack.vec4f and tack.quatd is not tack.vec4d
    assert tack.quatf.numpy == np.dtype((np.float32, (4,)))
    assert repr(tack.quatd) == "tack.quatd"
    np.testing.assert_array_equal(tack.quatf(0, 0, 0, 1), np.array([0, 0, 0, 1], np.float32))
    a = tack.zeros(3, dtype=tack.quatd)
    assert a.dtype is tack.quatd and a.numpy().shape == (3, 4)
    with pytest.raises(ValueError, match=r"\(\.\.\., 4\)"):
        tack.array(np.zeros((3, 3)), dtype=tack.quatf)
    assert tack.zeros(2, dtype="quatf").dtype is tack.quatf  # by name, as "vec4f"


@tack.kernel
def rotation_loss(q, v, loss):
    for i in range(q.shape[0]):
        u = tack.normalize(q[i])
        p = tack.quat_rotate(u * u, v[i])
        loss[0] += p.x + 2.0 * p.y


def test_gradient_through_products(device):
    rng = np.random.default_rng(8)
    qn, vn = rng.normal(size=(3, 4)), rng.normal(size=(3, 3))

    def run(qv):
        q = tack.array(qv, dtype=tack.quatd, device=device, requires_grad=True)
        loss = tack.zeros(1, dtype=tack.f64, device=device, requires_grad=True)
        tape = tack.Tape()
        with tape:
            rotation_loss(q, tack.array(vn, dtype=tack.vec3d, device=device), loss)
        return loss.numpy()[0], tape, q, loss

    _, tape, q, loss = run(qn)
    tape.backward(loss)
    h = 1e-6
    fd = np.zeros_like(qn)
    for k in np.ndindex(qn.shape):
        e = np.zeros_like(qn)
        e[k] = h
        fd[k] = (run(qn + e)[0] - run(qn - e)[0]) / (2 * h)
    np.testing.assert_allclose(q.grad.numpy(), fd, rtol=1e-6, atol=1e-8)
