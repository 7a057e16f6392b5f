"""Warp's and Taichi's vector and matrix functions as tack.X (cross, length,
normalize, ddot, trace, diag, skew, sign, clamp, lerp, smoothstep, step,
min/max/abs, ...), Taichi's method spellings (v.norm(), v.cross(u),
m.transpose(), m.trace(), v.sum(), ...), zero and converting constructors
and the type-generic tack.vec3(...), against NumPy on every device."""
import numpy as np
import pytest

import tack

pytestmark = pytest.mark.every_device

V3 = {np.float32: tack.vec3f, np.float64: tack.vec3d}
M3 = {np.float32: tack.mat33f, np.float64: tack.mat33d}


def tol(dtype):
    return 2e-5 if dtype == np.float32 else 1e-12


def rand(shape, seed, dtype):
    return (np.random.default_rng(seed).random(shape) * 4 - 2).astype(dtype)


def close(got, want, dtype):
    np.testing.assert_allclose(got, want, rtol=tol(dtype), atol=tol(dtype))


@tack.kernel
def vector_functions(a, b, t, cr, ln, lsq, nrm, dt, sg, cl, lp, sm, st, st2, mn, mx, ab):
    for i in range(a.shape[0]):
        cr[i] = tack.cross(a[i], b[i])
        ln[i] = tack.length(a[i])
        lsq[i] = tack.length_sq(a[i])
        nrm[i] = tack.normalize(a[i])
        dt[i] = tack.dot(a[i], b[i])
        sg[i] = tack.sign(a[i])
        cl[i] = tack.clamp(a[i], -0.5, b[i])
        lp[i] = tack.lerp(a[i], b[i], t[i])
        sm[i] = tack.smoothstep(-1.0, 1.0, a[i])
        st[i] = tack.step(a[i])
        st2[i] = tack.step(b[i], a[i])
        mn[i] = tack.min(a[i], b[i]) + tack.min(a[i])
        mx[i] = tack.max(a[i], b[i], 0.25) + tack.max(b[i])
        ab[i] = tack.abs(a[i]) + tack.cw_mul(a[i], b[i]) - tack.cw_div(a[i], b[i] + 5.0)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_vector_functions_like_numpy(dtype, device):
    n = 33
    a_np, b_np, t_np = rand((n, 3), 1, dtype), rand((n, 3), 2, dtype), rand(n, 3, dtype)
    a_np[0] = 0  # normalize keeps zero; sign(0) is 1; step(0) is 0
    a_np[1, 0] = b_np[1, 0]  # step(edge, x) with x == edge is 1
    V = V3[dtype]
    a, b = tack.array(a_np, dtype=V, device=device), tack.array(b_np, dtype=V, device=device)
    t = tack.array(t_np, device=device)
    vec_outs = {k: tack.zeros((n,), dtype=V, device=device)
                for k in ("cr", "nrm", "sg", "cl", "lp", "sm", "st", "st2", "mn", "mx", "ab")}
    sc_outs = {k: tack.zeros((n,), dtype=tack.f32 if dtype == np.float32 else tack.f64,
                             device=device) for k in ("ln", "lsq", "dt")}
    o = {**vec_outs, **sc_outs}
    vector_functions(a, b, t, o["cr"], o["ln"], o["lsq"], o["nrm"], o["dt"], o["sg"], o["cl"],
                     o["lp"], o["sm"], o["st"], o["st2"], o["mn"], o["mx"], o["ab"])
    length = np.sqrt((a_np.astype(np.float64) ** 2).sum(1))
    safe = np.where(length > 0, length, 1)[:, None]
    q = np.clip((a_np + 1) / 2, 0, 1)
    want = {
        "cr": np.cross(a_np, b_np), "ln": length, "lsq": (a_np ** 2).sum(1),
        "nrm": np.where(length[:, None] > 0, a_np / safe, 0), "dt": (a_np * b_np).sum(1),
        "sg": np.where(a_np < 0, -1, 1), "cl": np.minimum(np.maximum(a_np, -0.5), b_np),
        "lp": a_np + t_np[:, None] * (b_np - a_np), "sm": q * q * (3 - 2 * q),
        "st": np.where(a_np < 0, 1, 0), "st2": np.where(a_np < b_np, 0, 1),
        "mn": np.minimum(a_np, b_np) + a_np.min(1)[:, None],
        "mx": np.maximum(np.maximum(a_np, b_np), 0.25) + b_np.max(1)[:, None],
        "ab": np.abs(a_np) + a_np * b_np - a_np / (b_np + 5),
    }
    for k, w in want.items():
        close(o[k].numpy(), w, dtype)
    assert o["sg"].numpy()[0].tolist() == [1, 1, 1] and o["st"].numpy()[0].tolist() == [0, 0, 0]
    assert o["st2"].numpy()[1, 0] == 1 and o["nrm"].numpy()[0].tolist() == [0, 0, 0]


@tack.kernel
def scalar_functions(x, y, out):
    for i in range(x.shape[0]):
        out[i, 0] = tack.sign(x[i])
        out[i, 1] = tack.clamp(x[i], y[i] - 1, y[i] + 1)
        out[i, 2] = tack.lerp(x[i], y[i], 0.25)
        out[i, 3] = tack.smoothstep(0.0, 2.0, x[i])
        out[i, 4] = tack.step(x[i])
        out[i, 5] = tack.step(y[i], x[i])
        out[i, 6] = tack.min(x[i], y[i], 0) + tack.max(x[i], y[i]) + tack.abs(x[i])


@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_scalar_functions_like_numpy(dtype, device):
    x_np = np.array([-3, -1, 0, 1, 2, 5, 0], dtype)
    y_np = np.array([0, -1, 2, 3, -2, 1, 0], dtype)
    if dtype == np.float32:
        x_np = x_np * np.float32(0.75)
    out = np.zeros((7, 7), np.float64)
    scalar_functions(x_np, y_np, out)
    x, y = x_np.astype(np.float64), y_np.astype(np.float64)
    q = np.clip(x / 2, 0, 1)
    lerp = x + 0.25 * (y - x)
    if dtype == np.int32:
        lerp = x + (0.25 * (y - x))
    want = np.stack([np.where(x < 0, -1, 1), np.clip(x, y - 1, y + 1), lerp,
                     q * q * (3 - 2 * q), np.where(x < 0, 1, 0), np.where(x < y, 0, 1),
                     np.minimum(np.minimum(x, y), 0) + np.maximum(x, y) + np.abs(x)], 1)
    close(out, want, np.float32)


@tack.kernel
def matrix_functions(m, p, v, u, sc, mats, vecs):
    for i in range(m.shape[0]):
        sc[i, 0] = tack.ddot(m[i], p[i])
        sc[i, 1] = tack.trace(m[i]) + m[i].trace()
        sc[i, 2] = m[i].determinant() - tack.determinant(m[i])
        sc[i, 3] = v[i].norm() + v[i].norm_sqr() + v[i].norm(1.0)
        sc[i, 4] = v[i].sum() + v[i].max() * 10.0 + v[i].min() * 100.0 + m[i].sum()
        sc[i, 5] = v[i].dot(u[i]) + tack.argmax(v[i]) * 1000 + tack.argmin(v[i]) * 10000
        sc[i, 6] = (v[i] - v[i]).any() + v[i].all() * 2
        mats[i, 0] = tack.diag(v[i]) + tack.skew(u[i])
        mats[i, 1] = tack.transpose(m[i]) + m[i].transpose() + m[i].inverse() @ m[i]
        mats[i, 2] = v[i].outer_product(u[i])
        mats[i, 3] = tack.matrix_from_rows(v[i], u[i], v[i]) - tack.matrix_from_cols(u[i], v[i], u[i])
        vecs[i, 0] = v[i].cross(u[i]) + tack.skew(v[i]) @ u[i]
        vecs[i, 1] = tack.get_diag(m[i]) + v[i].normalized() + u[i].normalized(1.0)
        vecs[i, 2] = tack.vec3f(m[i][1]) + tack.vec3f(m[i].T[2]) + tack.vec3f()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_matrix_functions_and_methods_like_numpy(dtype, device):
    n = 9
    m_np = rand((n, 3, 3), 4, dtype) + 3 * np.eye(3, dtype=dtype)
    p_np, v_np, u_np = rand((n, 3, 3), 5, dtype), rand((n, 3), 6, dtype), rand((n, 3), 7, dtype)
    v_np[0] = [1, 2, 0]
    m = tack.array(m_np, dtype=M3[dtype], device=device)
    p = tack.array(p_np, dtype=M3[dtype], device=device)
    v = tack.array(v_np, dtype=V3[dtype], device=device)
    u = tack.array(u_np, dtype=V3[dtype], device=device)
    sc = tack.zeros((n, 7), dtype=tack.f64, device=device)
    mats = tack.zeros((n, 4), dtype=M3[dtype], device=device)
    vecs = tack.zeros((n, 3), dtype=tack.vec3f, device=device)
    matrix_functions(m, p, v, u, sc, mats, vecs)
    skew = lambda w: np.array([[0, -w[2], w[1]], [w[2], 0, -w[0]], [-w[1], w[0], 0]])
    norm = np.sqrt((v_np.astype(np.float64) ** 2).sum(1))
    want_sc = np.stack([
        (m_np * p_np).sum((1, 2)), 2 * np.trace(m_np, axis1=1, axis2=2), np.zeros(n),
        norm + norm ** 2 + np.sqrt(norm ** 2 + 1),
        v_np.sum(1) + v_np.max(1) * 10 + v_np.min(1) * 100 + m_np.sum((1, 2)),
        (v_np * u_np).sum(1) + v_np.argmax(1) * 1000 + v_np.argmin(1) * 10000,
        np.zeros(n) + (v_np != 0).all(1) * 2], 1)
    close(sc.numpy(), want_sc, np.float32 if dtype == np.float32 else np.float64)
    assert sc.numpy()[0, 6] == 0  # v[0] has a zero component: all() is 0
    want_m = np.stack([
        np.stack([np.diag(v_np[i]) + skew(u_np[i]) for i in range(n)]),
        2 * m_np.transpose(0, 2, 1) + np.eye(3),
        v_np[:, :, None] * u_np[:, None, :],
        np.stack([v_np, u_np, v_np], 1) - np.stack([u_np, v_np, u_np], 2)], 1)
    close(mats.numpy(), want_m, dtype if dtype == np.float64 else np.float32)
    want_v = np.stack([
        2 * np.cross(v_np, u_np),
        np.diagonal(m_np, axis1=1, axis2=2) + v_np / norm[:, None]
        + u_np / np.sqrt((u_np ** 2).sum(1) + 1)[:, None],
        m_np[:, 1] + m_np[:, :, 2]], 1)
    close(vecs.numpy(), want_v, np.float32)


@tack.kernel
def generic_vectors(x, i, out_f, out_i, out_d):
    for k in range(x.shape[0]):
        v = tack.vec3(x[k], 2 * x[k], 1)      # f32 components (x is f32)
        w = tack.vec3(i[k], i[k] + 1, 7)        # integer components
        d = tack.vec2(x[k], tack.f64(0.5))      # f64: one argument is
        out_f[k] = v + tack.vec3(0.25)
        out_i[k] = w // 2
        out_d[k] = tack.vec2(d)


def test_generic_vector_takes_the_arguments_type(device):
    n = 6
    x_np = (np.arange(n, dtype=np.float32) * 1.5 - 3).astype(np.float32)
    i_np = np.arange(n, dtype=np.int32) - 2
    out_f = tack.zeros((n,), dtype=tack.vec3f, device=device)
    out_i = tack.zeros((n,), dtype=tack.vec3i, device=device)
    out_d = tack.zeros((n,), dtype=tack.vec2d, device=device)
    generic_vectors(tack.array(x_np, device=device), tack.array(i_np, device=device),
                    out_f, out_i, out_d)
    np.testing.assert_array_equal(out_f.numpy(), np.stack([x_np, 2 * x_np, np.ones(n)], 1) + 0.25)
    np.testing.assert_array_equal(out_i.numpy(), np.stack([i_np, i_np + 1, np.full(n, 7)], 1) // 2)
    np.testing.assert_array_equal(out_d.numpy(), np.stack([x_np, np.full(n, 0.5)], 1))


def test_functions_outside_kernels_are_numpy():
    a, b = np.array([1.0, 2, 3]), np.array([-1.0, 0.5, 2])
    np.testing.assert_allclose(tack.cross(a, b), np.cross(a, b))
    np.testing.assert_allclose(tack.length(a), np.linalg.norm(a))
    np.testing.assert_array_equal(tack.normalize(np.zeros(3)), np.zeros(3))
    np.testing.assert_allclose(tack.skew(a) @ b, np.cross(a, b))
    np.testing.assert_array_equal(tack.sign(np.array([-2.0, 0.0, 3.0])), [-1, 1, 1])
    np.testing.assert_array_equal(tack.step(np.array([-2.0, 0.0])), [1, 0])
    assert tack.min(a) == 1 and tack.argmax(b) == 2
    np.testing.assert_array_equal(tack.vec3(), np.zeros(3))
    for name in ("cross", "normalize", "ddot", "skew", "smoothstep", "vec3"):
        assert name in tack.__all__
    for name in ("min", "max", "abs"):  # `from tack import *` keeps Python's builtins
        assert name not in tack.__all__


def refused(src_fn, *args, match):
    with pytest.raises(tack.CompileError, match=match):
        tack.kernel(src_fn)(*args)


def test_misuse_is_a_compile_error(device):
    v = tack.zeros((2,), dtype=tack.vec4f)
    m = tack.zeros((2,), dtype=tack.mat22f)
    out = np.zeros(2, np.float32)

    def cross4(v, out):
        for i in range(v.shape[0]):
            out[i] = tack.cross(v[i], v[i]).x
    refused(cross4, v, out, match=r"cross\(\) takes two 3-component")

    def trace_of_vector(v, out):
        for i in range(v.shape[0]):
            out[i] = tack.trace(v[i])
    refused(trace_of_vector, v, out, match=r"trace\(\) needs a square matrix")

    def matrix_dot(m, out):
        for i in range(m.shape[0]):
            out[i] = m[i].dot(m[i])
    refused(matrix_dot, m, out, match=r"tack.ddot\(a, b\)")

    def clamp_two(v, out):
        for i in range(v.shape[0]):
            out[i] = tack.clamp(v[i].x, 1.0)
    refused(clamp_two, v, out, match=r"tack.clamp\(\) takes 3 arguments, got 2")

    def shapes(v, m, out):
        for i in range(v.shape[0]):
            out[i] = tack.lerp(v[i], m[i], 0.5)[0, 0]
    refused(shapes, v, m, out, match=r"lerp\(\) of a 4-component vector and a 2x2 matrix")

    def wrong_vec(v, out):
        for i in range(v.shape[0]):
            out[i] = tack.vec3f(v[i]).x
    refused(wrong_vec, v, out, match="3-component vector cannot be made of a 4-component")
