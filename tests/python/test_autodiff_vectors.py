"""Autodiff of vector and matrix arrays (src/passes/adjoint.c: vectors and
matrices are scalarized before the adjoint, so each built-in's gradient is
the chain rule over its components), and of atomic_min / atomic_max:
gradients against central finite differences in f64, on cpu and opencl."""
import numpy as np
import pytest

import tack
from tack import autodiff as ad

pytestmark = pytest.mark.every_device


def fd(F, args, i, h=1e-6):
    """d sum(F(*args) * 1) / d args[i], element by element (central)."""
    g = np.zeros(args[i].size)
    for k in range(args[i].size):
        p = [a.copy() for a in args]
        m = [a.copy() for a in args]
        p[i].reshape(-1)[k] += h
        m[i].reshape(-1)[k] -= h
        g[k] = (np.sum(F(*p)) - np.sum(F(*m))) / (2 * h)
    return g.reshape(args[i].shape)


def check(kern, F, values, dtypes, device, out_dtype=tack.f64, out_shape=None, rtol=1e-6):
    """Runs kern(inputs..., out) on a tape, seeds out.grad with ones and
    compares each input's gradient with fd(F)."""
    ins = [ad.array(v, dtype=dt, device=device, requires_grad=True) for v, dt in zip(values, dtypes)]
    want = F(*values)
    shape = out_shape or (len(values[0]),)
    out = ad.zeros(shape, dtype=out_dtype, device=device, requires_grad=True)
    tape = ad.Tape()
    with tape:
        kern(*ins, out)
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-12, atol=1e-12)
    tape.backward(grads={out: np.ones(want.shape)})
    for i, a in enumerate(ins):
        assert a.grad.dtype == a.dtype
        np.testing.assert_allclose(a.grad.numpy(), fd(F, values, i), rtol=rtol, atol=1e-8,
                                   err_msg="gradient of argument %d" % i)
    return ins


# ---- vectors: component reads, the vector built-ins ----

@tack.kernel
def vec_builtins(p, q, s, out):
    for i in range(p.shape[0]):
        a = p[i]
        b = q[i]
        c = tack.cross(a, b)
        n = tack.normalize(a + b)
        m = tack.max(a, b)
        out[i] = (tack.dot(c, n) + tack.length(b) * s[i] + tack.length_sq(a) * 0.5
                  + tack.lerp(a, b, s[i]).y + tack.cw_mul(a, m).z + a.x * b.z)


def vec_builtins_np(p, q, s):
    c = np.cross(p, q)
    n = (p + q) / np.linalg.norm(p + q, axis=1, keepdims=True)
    m = np.maximum(p, q)
    lerp = p + s[:, None] * (q - p)
    return (np.sum(c * n, 1) + np.linalg.norm(q, axis=1) * s + 0.5 * np.sum(p * p, 1)
            + lerp[:, 1] + (p * m)[:, 2] + p[:, 0] * q[:, 2])


def test_vector_builtins(device):
    rng = np.random.default_rng(3)
    p, q = rng.normal(size=(6, 3)), rng.normal(size=(6, 3))
    s = rng.uniform(0.1, 0.9, 6)
    check(vec_builtins, vec_builtins_np, [p, q, s], [tack.vec3d, tack.vec3d, tack.f64], device)


@tack.kernel
def vec_out(p, w, out):
    for i in range(p.shape[0]):
        out[i] = p[i] * w[i].x + tack.vec3d(p[i].y * p[i].y, 1.0, w[i].y)


def vec_out_np(p, w):
    return p * w[:, :1] + np.stack([p[:, 1] ** 2, np.ones(len(p)), w[:, 1]], 1)


def test_vector_outputs_and_other_widths(device):
    rng = np.random.default_rng(4)
    p, w = rng.normal(size=(5, 3)), rng.normal(size=(5, 2))
    check(vec_out, vec_out_np, [p, w], [tack.vec3d, tack.vec2d], device, out_dtype=tack.vec3d,
          out_shape=(5,))


@tack.kernel
def wide(v, out):
    for i in range(v.shape[0]):
        out[i] = tack.length(v[i]) + tack.dot(v[i], v[i]) * v[i][5]


def test_long_vectors(device):
    v = np.random.default_rng(5).normal(size=(4, 6))
    check(wide, lambda v: np.linalg.norm(v, axis=1) + np.sum(v * v, 1) * v[:, 5], [v],
          [tack.vector(6, tack.f64)], device)


@tack.kernel
def vec4_ops(v, out):
    for i in range(v.shape[0]):
        a = v[i]
        out[i] = tack.normalize(a).w * a.x + tack.length(a)


def test_vec4_and_f32_gradient_dtype(device):
    v = np.random.default_rng(6).normal(size=(4, 4))
    check(vec4_ops, lambda v: v[:, 3] / np.linalg.norm(v, axis=1) * v[:, 0]
          + np.linalg.norm(v, axis=1), [v], [tack.vec4d], device)
    # f32 arrays have f32 gradients; the values are close to the f64 ones
    a = ad.array(v.astype(np.float32), dtype=tack.vec4f, device=device, requires_grad=True)
    out = ad.zeros(4, dtype=tack.f32, device=device, requires_grad=True)
    vec4_ops(a, out)
    vec4_ops.backward(a, out, adj={out: ad.array(np.ones(4, np.float32), device=device)})
    assert a.grad.dtype == tack.vec4f
    b = ad.array(v, dtype=tack.vec4d, device=device, requires_grad=True)
    outd = ad.zeros(4, dtype=tack.f64, device=device, requires_grad=True)
    vec4_ops(b, outd)
    vec4_ops.backward(b, outd, adj={outd: ad.array(np.ones(4), device=device)})
    np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-4, atol=1e-5)


# ---- vectors: stores of components, += and vector atomics ----

@tack.kernel
def scatter(p, idx, acc, comp):
    for i in range(p.shape[0]):
        acc[idx[i]] += p[i] * p[i].x
        tack.atomic_sub(acc, idx[i] + 1, p[i] * 0.5)
        tack.atomic_add(acc, 0, tack.vec3d(p[i].z, 0.0, 1.0))
        comp[i].y = p[i].y * p[i].z
        comp[i].x = 2.0 * p[i].x
        comp[i].z = 0.0


def test_vector_updates_atomics_and_component_stores(device):
    rng = np.random.default_rng(7)
    pv = rng.normal(size=(8, 3))
    idx = np.array([0, 2, 1, 2, 3, 0, 1, 2], np.int32)
    g_acc = rng.normal(size=(5, 3))
    g_comp = rng.normal(size=(8, 3))

    def F(pv):
        acc = np.zeros((5, 3))
        np.add.at(acc, idx, pv * pv[:, :1])
        np.add.at(acc, idx + 1, -0.5 * pv)
        acc[0] += np.sum(np.stack([pv[:, 2], np.zeros(8), np.ones(8)], 1), 0)
        comp = np.stack([2 * pv[:, 0], pv[:, 1] * pv[:, 2], np.zeros(8)], 1)
        return np.concatenate([(acc * g_acc).ravel(), (comp * g_comp).ravel()])

    p = ad.array(pv, dtype=tack.vec3d, device=device, requires_grad=True)
    i = tack.array(idx, device=device)
    acc = ad.zeros(5, dtype=tack.vec3d, device=device, requires_grad=True)
    comp = ad.zeros(8, dtype=tack.vec3d, device=device, requires_grad=True)
    tape = ad.Tape()
    with tape:
        scatter(p, i, acc, comp)
    tape.backward(grads={acc: g_acc, comp: g_comp})
    np.testing.assert_allclose(p.grad.numpy(), fd(F, [pv], 0), rtol=1e-6, atol=1e-8)


@tack.kernel
def int_vectors(p, k, out):
    for i in range(p.shape[0]):
        out[i] = p[i] * tack.f64(k[i].x) + tack.vec3d(tack.f64(k[i].y))


def test_integer_vectors_carry_no_gradient(device):
    pv = np.random.default_rng(8).normal(size=(3, 3))
    kv = np.array([[1, 2, 3], [4, 5, 6], [7, 8, 9]], np.int32)
    p = ad.array(pv, dtype=tack.vec3d, device=device, requires_grad=True)
    k = tack.array(kv, dtype=tack.vec3i, device=device)
    out = ad.zeros(3, dtype=tack.vec3d, device=device, requires_grad=True)
    int_vectors(p, k, out)
    g = np.random.default_rng(9).normal(size=(3, 3))
    int_vectors.backward(p, k, out, adj={out: ad.array(g, dtype=tack.vec3d, device=device)})
    np.testing.assert_allclose(p.grad.numpy(), g * kv[:, :1], rtol=1e-12)
    np.testing.assert_array_equal(k.numpy(), kv)


# ---- matrices ----

@tack.kernel
def mat_builtins(A, B, v, out):
    for i in range(A.shape[0]):
        a = A[i]
        b = B[i]
        m = a @ b + tack.outer(v[i], v[i]) * 0.5
        inv = tack.inverse(m)
        w = inv @ v[i]
        out[i] = (tack.determinant(m) + tack.trace(a.T @ b) + tack.ddot(a, tack.transpose(b))
                  + w.x + (v[i] @ a).z + a[1, 2] * b[2, 0] + tack.dot(a[0], v[i]))


def mat_builtins_np(A, B, v):
    m = A @ B + 0.5 * v[:, :, None] * v[:, None, :]
    w = np.linalg.solve(m, v[:, :, None])[:, :, 0]
    return (np.linalg.det(m) + np.trace(np.transpose(A, (0, 2, 1)) @ B, axis1=1, axis2=2)
            + np.sum(A * np.transpose(B, (0, 2, 1)), (1, 2)) + w[:, 0]
            + (v[:, None, :] @ A)[:, 0, 2] + A[:, 1, 2] * B[:, 2, 0] + np.sum(A[:, 0] * v, 1))


def test_matrix_builtins(device):
    rng = np.random.default_rng(10)
    A = rng.normal(size=(4, 3, 3)) + 2 * np.eye(3)
    B = rng.normal(size=(4, 3, 3)) + 2 * np.eye(3)
    v = rng.normal(size=(4, 3))
    check(mat_builtins, mat_builtins_np, [A, B, v], [tack.mat33d, tack.mat33d, tack.vec3d], device,
          rtol=2e-6)


@tack.kernel
def mat_sizes(A, C, out):
    for i in range(A.shape[0]):
        out[i] = tack.determinant(A[i]) + tack.inverse(C[i])[1, 0] + tack.trace(C[i] @ C[i])


@pytest.mark.parametrize("n2,n4", [(2, 4)])
def test_matrix_2x2_and_4x4(device, n2, n4):
    rng = np.random.default_rng(11)
    A = rng.normal(size=(3, n2, n2)) + 2 * np.eye(n2)
    C = rng.normal(size=(3, n4, n4)) + 3 * np.eye(n4)
    check(mat_sizes, lambda A, C: np.linalg.det(A) + np.linalg.inv(C)[:, 1, 0]
          + np.trace(C @ C, axis1=1, axis2=2), [A, C], [tack.mat22d, tack.mat44d], device)


@tack.kernel
def mat_rows(A, out, rows):
    for i in range(A.shape[0]):
        r = A[i][1]
        out[i] = tack.length(r) * A[i][0, 0]
        rows[i] = A[i] @ A[i].T


def test_matrix_rows_and_matrix_outputs(device):
    rng = np.random.default_rng(12)
    Av = rng.normal(size=(4, 3, 3))
    g_rows = rng.normal(size=(4, 3, 3))

    def F(Av):
        out = np.linalg.norm(Av[:, 1], axis=1) * Av[:, 0, 0]
        rows = Av @ np.transpose(Av, (0, 2, 1))
        return np.concatenate([out, (rows * g_rows).ravel()])

    A = ad.array(Av, dtype=tack.mat33d, device=device, requires_grad=True)
    out = ad.zeros(4, dtype=tack.f64, device=device, requires_grad=True)
    rows = ad.zeros(4, dtype=tack.mat33d, device=device, requires_grad=True)
    tape = ad.Tape()
    with tape:
        mat_rows(A, out, rows)
    tape.backward(grads={out: np.ones(4), rows: g_rows})
    assert A.grad.dtype == tack.mat33d
    np.testing.assert_allclose(A.grad.numpy(), fd(F, [Av], 0), rtol=1e-6, atol=1e-8)


@tack.kernel
def mat_update(F, C, dt):
    for p in range(F.shape[0]):
        F[p] += dt * (C[p] @ C[p])


def test_matrix_plus_equals(device):
    rng = np.random.default_rng(13)
    Cv = rng.normal(size=(3, 2, 2))
    g = rng.normal(size=(3, 2, 2))
    F = ad.zeros(3, dtype=tack.mat22d, device=device, requires_grad=True)
    C = ad.array(Cv, dtype=tack.mat22d, device=device, requires_grad=True)
    mat_update(F, C, 0.5)
    mat_update.backward(F, C, 0.5, adj={F: ad.array(g, dtype=tack.mat22d, device=device)})
    want = fd(lambda c: 0.5 * (c @ c) * g, [Cv], 0)
    np.testing.assert_allclose(C.grad.numpy(), want, rtol=1e-6, atol=1e-8)


# ---- atomic_min / atomic_max ----

@tack.kernel
def extremes(x, idx, lo, hi):
    for i in range(x.shape[0]):
        tack.atomic_min(lo, idx[i], x[i] * x[i])
        tack.atomic_max(hi, idx[i], 2.0 * x[i])


def test_atomic_min_max_send_the_gradient_to_the_winner(device):
    xv = np.array([0.5, -1.5, 2.0, 0.25, -0.3, 3.0, -2.0])
    idx = np.array([0, 0, 1, 1, 1, 2, 2], np.int32)
    x = ad.array(xv, device=device, requires_grad=True)
    i = tack.array(idx, device=device)
    lo = ad.array(np.full(3, 10.0), device=device, requires_grad=True)
    hi = ad.array(np.full(3, -10.0), device=device, requires_grad=True)
    extremes(x, i, lo, hi)
    np.testing.assert_array_equal(lo.numpy(), [0.25, 0.0625, 4.0])
    np.testing.assert_array_equal(hi.numpy(), [1.0, 4.0, 6.0])
    glo, ghi = np.array([1.0, 2.0, 3.0]), np.array([5.0, 7.0, 11.0])
    extremes.backward(x, i, lo, hi, adj={lo: ad.array(glo, device=device),
                                         hi: ad.array(ghi, device=device)})

    def F(xv):
        lo, hi = np.full(3, 10.0), np.full(3, -10.0)
        np.minimum.at(lo, idx, xv * xv)
        np.maximum.at(hi, idx, 2 * xv)
        return np.concatenate([lo * glo, hi * ghi])

    np.testing.assert_allclose(x.grad.numpy(), fd(F, [xv], 0), rtol=1e-6, atol=1e-8)


def test_atomic_min_ties_each_take_the_gradient(device):
    xv = np.array([0.5, -0.5, 0.75, 0.5])
    idx = np.array([0, 0, 0, 1], np.int32)
    x = ad.array(xv, device=device, requires_grad=True)
    lo = ad.array(np.full(2, 10.0), device=device, requires_grad=True)
    hi = ad.array(np.full(2, -10.0), device=device, requires_grad=True)
    i = tack.array(idx, device=device)
    extremes(x, i, lo, hi)
    extremes.backward(x, i, lo, hi, adj={lo: ad.array(np.array([1.0, 3.0]), device=device),
                                         hi: ad.array(np.zeros(2), device=device)})
    # x = 0.5 and -0.5 both reach lo[0] = 0.25: each takes d(x*x) = 2x times 1
    np.testing.assert_allclose(x.grad.numpy(), [1.0, -1.0, 0.0, 3.0], rtol=1e-12)


@tack.kernel
def vec_extremes(p, lo):
    for i in range(p.shape[0]):
        tack.atomic_min(lo, 0, p[i] * 2.0)


def test_vector_atomic_min_is_per_component(device):
    pv = np.array([[1.0, -2.0, 0.5], [-1.0, 3.0, 0.5], [0.0, -2.5, 4.0]])
    p = ad.array(pv, dtype=tack.vec3d, device=device, requires_grad=True)
    lo = ad.array(np.full((1, 3), 9.0), dtype=tack.vec3d, device=device, requires_grad=True)
    vec_extremes(p, lo)
    np.testing.assert_array_equal(lo.numpy(), [[-2.0, -5.0, 1.0]])
    vec_extremes.backward(p, lo, adj={lo: ad.array([[1.0, 10.0, 100.0]], dtype=tack.vec3d,
                                                   device=device)})
    np.testing.assert_allclose(p.grad.numpy(), [[0, 0, 200.0], [2.0, 0, 200.0], [0, 20.0, 0]])


# ---- refusals ----

def test_reading_an_updated_vector_array_is_refused(device):
    @tack.kernel
    def inplace(p):
        for i in range(p.shape[0]):
            p[i] = p[i] * 2.0

    p = ad.array(np.ones((2, 3)), dtype=tack.vec3d, device=device, requires_grad=True)
    inplace(p)
    with pytest.raises(tack.CompileError, match="'p' is overwritten"):
        inplace.backward(p)


@tack.kernel
def square(x, y):
    for i in range(y.shape[0]):
        y[i] = x[i] * x[i]


@pytest.mark.cpu_only
def test_strided_views_need_gradients_laid_out_alike(device):
    base = np.arange(8.0)
    gbase = np.zeros(8)
    square.backward(base[::2], np.zeros(4), adj={"x": gbase[::2], "y": np.ones(4)})
    np.testing.assert_array_equal(gbase[::2], 2 * base[::2])
    with pytest.raises(ValueError, match="gradient of 'x' is laid out differently"):
        square.backward(base[::2], np.zeros(4), adj={"x": np.zeros(4), "y": np.ones(4)})


@tack.kernel
def vec_old_values(p, acc, olds):
    for i in range(p.shape[0]):
        olds[i] = tack.atomic_add(acc, i, p[i]) * 2.0


def test_vector_atomic_returns_the_old_components(device):
    pv = np.arange(12.0).reshape(4, 3)
    start = -np.arange(12.0).reshape(4, 3) * 0.5
    p = ad.array(pv, dtype=tack.vec3d, device=device, requires_grad=True)
    acc = ad.array(start, dtype=tack.vec3d, device=device, requires_grad=True)
    olds = ad.zeros(4, dtype=tack.vec3d, device=device, requires_grad=True)
    vec_old_values(p, acc, olds)
    np.testing.assert_array_equal(olds.numpy(), 2 * start)
    np.testing.assert_array_equal(acc.numpy(), start + pv)
    # the adjoint does not differentiate an atomic's old value
    with pytest.raises(tack.CompileError, match="not differentiated yet"):
        vec_old_values.backward(p, acc, olds)
