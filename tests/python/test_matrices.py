"""Matrices (tack.mat22f ... mat44d) as kernel values and array element
dtypes, checked against NumPy (``*`` element-wise, ``@`` np.matmul), and
component stores into vectors and matrices.

Tolerances: f32 rtol/atol 1e-5 for arithmetic and products, 1e-4 for the
determinant and inverse (of well-conditioned matrices: random + n*I);
f64 1e-12 and 1e-10."""
import numpy as np
import pytest

import tack
from test_cuda import check_ptx, needs_nvrtc

# The conformance suite: every test runs on each device (conftest.py).
pytestmark = pytest.mark.every_device

MATS = {(2, np.float32): tack.mat22f, (3, np.float32): tack.mat33f, (4, np.float32): tack.mat44f,
        (2, np.float64): tack.mat22d, (3, np.float64): tack.mat33d, (4, np.float64): tack.mat44d}
VECS = {(2, np.float32): tack.vec2f, (3, np.float32): tack.vec3f, (4, np.float32): tack.vec4f,
        (2, np.float64): tack.vec2d, (3, np.float64): tack.vec3d, (4, np.float64): tack.vec4d}
CASES = [(n, t) for t in (np.float32, np.float64) for n in (2, 3, 4)]


def tol(dtype, hard=False):
    if dtype == np.float32:
        return 1e-4 if hard else 1e-5
    return 1e-10 if hard else 1e-12


def rand(shape, seed, dtype):
    return (np.random.default_rng(seed).random(shape) * 4 - 2).astype(dtype)


def well_conditioned(count, n, seed, dtype):
    return (rand((count, n, n), seed, np.float64) + n * np.eye(n)).astype(dtype)


def mats(x, n, dtype, device):
    return tack.array(np.asarray(x, dtype), dtype=MATS[n, dtype], device=device)


def vecs(x, n, dtype, device):
    return tack.array(np.asarray(x, dtype), dtype=VECS[n, dtype], device=device)


def close(got, want, dtype, hard=False):
    r = tol(dtype, hard)
    np.testing.assert_allclose(got, want, rtol=r, atol=r)


# ---- dtypes and arrays ----------------------------------------------------

@pytest.mark.parametrize("n,dtype", CASES)
def test_matrix_dtype_and_array_round_trip(n, dtype, device):
    dt = MATS[n, dtype]
    name = f"mat{n}{n}{'f' if dtype == np.float32 else 'd'}"
    assert dt is getattr(tack, name) and name in tack.__all__
    assert dt.name == name and repr(dt) == "tack." + name
    assert dt.width == n * n
    assert dt.itemsize == n * n * np.dtype(dtype).itemsize
    assert dt.numpy == np.dtype((dtype, (n, n)))
    x = rand((5, n, n), 1, dtype)
    a = tack.array(x, dtype=dt, device=device)
    assert a.shape == (5,) and a.dtype is dt
    np.testing.assert_array_equal(a.numpy(), x)
    z = tack.zeros((3, 2), dtype=dt, device=device)
    assert z.shape == (3, 2) and z.numpy().shape == (3, 2, n, n)
    tack.copyto(z, np.ones((3, 2, n, n), dtype))
    np.testing.assert_array_equal(z.numpy(), np.ones((3, 2, n, n)))


def test_matrix_dtypes_pickle_and_compare():
    import pickle
    for dt in MATS.values():
        assert pickle.loads(pickle.dumps(dt)) is dt
    assert tack.mat22f != tack.vec4f and tack.mat22f != tack.mat22d
    assert len({tack.mat22f, tack.vec4f, tack.mat22f}) == 2
    assert tack.array(np.zeros((2, 2, 2)), dtype="mat22d").dtype is tack.mat22d


def test_matrix_array_needs_its_shape():
    with pytest.raises(ValueError, match=r"\(\.\.\., 3, 3\)"):
        tack.array(np.zeros((4, 9), np.float32), dtype=tack.mat33f)
    with pytest.raises(ValueError, match=r"\(\.\.\., 2, 2\)"):
        tack.array(np.zeros((4, 2, 3)), dtype=tack.mat22d)


def test_matrix_constructor_outside_kernels():
    np.testing.assert_array_equal(tack.mat22f(1, 2, 3, 4), [[1, 2], [3, 4]])
    np.testing.assert_array_equal(tack.mat22d(), np.zeros((2, 2)))
    assert tack.mat33d([[1, 2, 3], [4, 5, 6], [7, 8, 9]]).dtype == np.float64
    np.testing.assert_array_equal(tack.identity(3, tack.f64), np.eye(3))
    with pytest.raises(TypeError, match="mat22f"):
        tack.mat22f(1, 2, 3)


# ---- arithmetic -----------------------------------------------------------

@tack.kernel
def elementwise(a, b, s, add, sub, mul, scaled, neg, div):
    for i in range(a.shape[0]):
        add[i] = a[i] + b[i]
        sub[i] = a[i] - b[i]
        mul[i] = a[i] * b[i]
        scaled[i] = s * a[i] * 2.0 + 1.0
        neg[i] = -a[i]
        div[i] = a[i] / s


@pytest.mark.parametrize("n,dtype", CASES)
def test_elementwise_like_numpy(n, dtype, device):
    count = 17
    a_np, b_np = rand((count, n, n), 2, dtype), rand((count, n, n), 3, dtype)
    s = 1.75
    a, b = mats(a_np, n, dtype, device), mats(b_np, n, dtype, device)
    outs = [tack.zeros((count,), dtype=MATS[n, dtype], device=device) for _ in range(6)]
    elementwise(a, b, s, *outs)
    s_t = dtype(s)
    want = [a_np + b_np, a_np - b_np, a_np * b_np, s_t * a_np * dtype(2) + dtype(1), -a_np,
            a_np / s_t]
    for got, w in zip(outs, want):
        close(got.numpy(), w, dtype)


@tack.kernel
def products(a, b, v, mm, mv, vm, at, vv):
    for i in range(a.shape[0]):
        mm[i] = a[i] @ b[i]
        mv[i] = a[i] @ v[i]
        vm[i] = v[i] @ b[i]
        at[i] = a[i].T
        vv[i] = v[i] @ v[i]


@pytest.mark.parametrize("n,dtype", CASES)
def test_matmul_and_transpose_like_numpy(n, dtype, device):
    count = 9
    a_np, b_np = rand((count, n, n), 4, dtype), rand((count, n, n), 5, dtype)
    v_np = rand((count, n), 6, dtype)
    a, b, v = mats(a_np, n, dtype, device), mats(b_np, n, dtype, device), vecs(v_np, n, dtype, device)
    mm = tack.zeros((count,), dtype=MATS[n, dtype], device=device)
    at = tack.zeros((count,), dtype=MATS[n, dtype], device=device)
    mv = tack.zeros((count,), dtype=VECS[n, dtype], device=device)
    vm = tack.zeros((count,), dtype=VECS[n, dtype], device=device)
    vv = tack.zeros((count,), dtype=tack.f32 if dtype == np.float32 else tack.f64, device=device)
    products(a, b, v, mm, mv, vm, at, vv)
    close(mm.numpy(), a_np @ b_np, dtype)
    close(mv.numpy(), np.einsum("nij,nj->ni", a_np, v_np), dtype)
    close(vm.numpy(), np.einsum("ni,nij->nj", v_np, b_np), dtype)
    close(at.numpy(), np.swapaxes(a_np, 1, 2), dtype)
    close(vv.numpy(), np.einsum("ni,ni->n", v_np, v_np), dtype)


@tack.kernel
def det_inv(a, det, inv):
    for i in range(a.shape[0]):
        det[i] = tack.determinant(a[i])
        inv[i] = tack.inverse(a[i])


@pytest.mark.parametrize("n,dtype", CASES)
def test_determinant_and_inverse(n, dtype, device):
    count = 12
    a_np = well_conditioned(count, n, 7 + n, dtype)
    det = tack.zeros((count,), dtype=tack.f32 if dtype == np.float32 else tack.f64, device=device)
    inv = tack.zeros((count,), dtype=MATS[n, dtype], device=device)
    det_inv(mats(a_np, n, dtype, device), det, inv)
    want_det = np.linalg.det(a_np.astype(np.float64))
    close(det.numpy() / want_det, np.ones(count), dtype, hard=True)
    close(inv.numpy(), np.linalg.inv(a_np.astype(np.float64)), dtype, hard=True)
    # The inverse really inverts: A @ inv(A) = I.
    close(a_np.astype(np.float64) @ inv.numpy(), np.broadcast_to(np.eye(n), (count, n, n)), dtype,
          hard=True)


@pytest.mark.parametrize("n", [2, 3, 4])
def test_singular_inverse_gives_inf_or_nan(n, device):
    a_np = np.ones((2, n, n), np.float32)  # rank 1: determinant 0
    det = tack.zeros((2,), device=device)
    inv = tack.zeros((2,), dtype=MATS[n, np.float32], device=device)
    det_inv(mats(a_np, n, np.float32, device), det, inv)
    assert np.all(det.numpy() == 0)
    assert not np.isfinite(inv.numpy()).any()


@tack.kernel
def builders(x, out2, out3, outer_out, det_out):
    for i in range(out2.shape[0]):
        s = x[i]
        z = tack.mat22f()
        a = tack.mat22f(s, 2.0, 3.0, s * s)
        b = tack.mat22f(tack.vec2f(1.0, s), tack.vec2f(-s, 4.0))
        out2[i] = a + b + z + tack.identity(2)
        out3[i] = tack.identity(3, tack.f64) * s
        u = tack.vec2d(s, 1.0)
        outer_out[i] = tack.outer(u, tack.vec2d(2.0, s))
        det_out[i] = tack.determinant(tack.mat33d(1.0, 2.0, 3.0, 0.0, s, 5.0, 1.0, 0.0, 6.0))


def test_constructors_identity_outer(device):
    x_np = rand((11,), 8, np.float32)
    out2 = tack.zeros((11,), dtype=tack.mat22f, device=device)
    out3 = tack.zeros((11,), dtype=tack.mat33d, device=device)
    outer_out = tack.zeros((11,), dtype=tack.mat22d, device=device)
    det_out = tack.zeros((11,), dtype=tack.f64, device=device)
    builders(tack.array(x_np, device=device), out2, out3, outer_out, det_out)
    s = x_np
    want2 = np.stack([np.array([[v, 2], [3, v * v]], np.float32) +
                      np.array([[1, v], [-v, 4]], np.float32) + np.eye(2, dtype=np.float32)
                      for v in s])
    close(out2.numpy(), want2, np.float32)
    close(out3.numpy(), s.astype(np.float64)[:, None, None] * np.eye(3), np.float64)
    s64 = s.astype(np.float64)
    close(outer_out.numpy(), np.stack([np.outer([v, 1.0], [2.0, v]) for v in s64]), np.float64)
    close(det_out.numpy(), [np.linalg.det([[1, 2, 3], [0, v, 5], [1, 0, 6]]) for v in s64],
          np.float64, hard=True)


@tack.kernel
def mixed(a, b, out):
    for i in range(a.shape[0]):
        out[i] = a[i] + b[i] @ a[i]


def test_f32_and_f64_matrices_promote_as_vectors_do(device):
    a_np, b_np = rand((6, 3, 3), 9, np.float32), rand((6, 3, 3), 10, np.float64)
    out = tack.zeros((6,), dtype=tack.mat33d, device=device)
    mixed(mats(a_np, 3, np.float32, device), mats(b_np, 3, np.float64, device), out)
    a64 = a_np.astype(np.float64)
    close(out.numpy(), a64 + b_np @ a64, np.float64)


# ---- an MPM-like update ------------------------------------------------------

@tack.kernel
def mpm_update(F, C, dt):
    for p in range(F.shape[0]):
        F[p] = (tack.identity(2) + dt * C[p]) @ F[p]


@pytest.mark.parametrize("count", [0, 1, 1000])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_mpm_deformation_gradient_update(count, dtype, device):
    F_np = rand((count, 2, 2), 11, dtype) + np.eye(2, dtype=dtype)
    C_np = rand((count, 2, 2), 12, dtype)
    F, C = mats(F_np, 2, dtype, device), mats(C_np, 2, dtype, device)
    dt = 1e-2
    want = F_np
    for _ in range(3):
        mpm_update(F, C, dt)
        want = (np.eye(2, dtype=dtype) + dtype(dt) * C_np) @ want
    close(F.numpy(), want, dtype)


# ---- element and component stores ------------------------------------------------

@tack.kernel
def element_writes(x, m_out, r_out, arr):
    for i in range(x.shape[0]):
        m = tack.mat33f()
        m[0, 1] = x[i]
        m[2, 2] = x[i] * 2.0
        m[-1, 0] = 5.0
        m[1] = tack.vec3f(7.0, 8.0, x[i])
        m[0, 0] += 1.5
        m_out[i] = m
        r_out[i] = m[1] + m.T[2]
        arr[i][0, 1] = x[i]
        arr[i][1, 0] += 3.0
        arr[i][1, 1] = arr[i][0, 0] + m[2, 2]


def test_matrix_element_reads_and_writes(device):
    x_np = rand((13,), 13, np.float32)
    arr_np = rand((13, 2, 2), 14, np.float32)
    m_out = tack.zeros((13,), dtype=tack.mat33f, device=device)
    r_out = tack.zeros((13,), dtype=tack.vec3f, device=device)
    arr = mats(arr_np, 2, np.float32, device)
    element_writes(tack.array(x_np, device=device), m_out, r_out, arr)
    want = np.zeros((13, 3, 3), np.float32)
    want[:, 0, 1] = x_np
    want[:, 2, 2] = x_np * 2
    want[:, 2, 0] = 5
    want[:, 1] = np.stack([np.full(13, 7.0), np.full(13, 8.0), x_np], axis=1)
    want[:, 0, 0] += 1.5
    close(m_out.numpy(), want, np.float32)
    close(r_out.numpy(), want[:, 1] + np.swapaxes(want, 1, 2)[:, 2], np.float32)
    want_arr = arr_np.copy()
    want_arr[:, 0, 1] = x_np
    want_arr[:, 1, 0] += 3
    want_arr[:, 1, 1] = want_arr[:, 0, 0] + want[:, 2, 2]
    close(arr.numpy(), want_arr, np.float32)


@tack.kernel
def component_stores(x, pts, counts, out):
    for i in range(x.shape[0]):
        v = tack.vec3f(1.0, 2.0, 3.0)
        v.x = x[i]
        v.z += 10.0
        out[i] = v
        pts[i].y = x[i] * 2.0
        pts[i].z += 1.0
        counts[0].x += 1.0  # every iteration: the atomic form


def test_vector_component_stores(device):
    n = 257
    x_np = rand((n,), 15, np.float32)
    pts_np = rand((n, 3), 16, np.float32)
    pts = vecs(pts_np, 3, np.float32, device)
    counts = tack.zeros((1,), dtype=tack.vec2f, device=device)
    out = tack.zeros((n,), dtype=tack.vec3f, device=device)
    component_stores(tack.array(x_np, device=device), pts, counts, out)
    close(out.numpy(), np.stack([x_np, np.full(n, 2.0), np.full(n, 13.0)], axis=1), np.float32)
    want = pts_np.copy()
    want[:, 1] = x_np * 2
    want[:, 2] += 1
    close(pts.numpy(), want, np.float32)
    np.testing.assert_array_equal(counts.numpy(), [[n, 0]])


@tack.func
def rotate(theta):
    c = tack.math.cos(theta)
    s = tack.math.sin(theta)
    return tack.mat22d(c, -s, s, c)


@tack.func
def trace_of(m):
    return m[0, 0] + m[1, 1]


@tack.kernel
def rotations(theta, out, traces):
    for i in range(theta.shape[0]):
        r = rotate(theta[i])
        out[i] = r @ r.T
        traces[i] = trace_of(r)


def test_device_function_returns_a_matrix(device):
    theta = rand((8,), 17, np.float64)
    out = tack.zeros((8,), dtype=tack.mat22d, device=device)
    traces = tack.zeros((8,), dtype=tack.f64, device=device)
    rotations(tack.array(theta, device=device), out, traces)
    close(out.numpy(), np.broadcast_to(np.eye(2), (8, 2, 2)), np.float64)
    close(traces.numpy(), 2 * np.cos(theta), np.float64)


def test_matrix_width_is_in_the_variant_key(device):
    out = tack.zeros((3,), dtype=tack.mat33f, device=device)
    det_inv(mats(well_conditioned(3, 3, 1, np.float32), 3, np.float32, device),
            tack.zeros((3,), device=device), out)
    keys = det_inv.variants(device=device)
    assert any(dict(k.vec_sig).get(0) == 0x33 for k in keys)


# ---- errors -----------------------------------------------------------------

def compile_error(fn, *args):
    with pytest.raises(tack.CompileError) as e:
        tack.kernel(fn)(*args)
    return e.value


def test_matmul_shape_mismatch_names_the_line(device):
    def k(out):
        for i in range(out.shape[0]):
            m = tack.mat22f()
            out[i] = (m @ tack.vec3f(1.0))[0]  # the line
    e = compile_error(k, np.zeros(2, np.float32))
    assert "'@' of a 2x2 matrix and a 3-component vector" in str(e)
    assert e.lineno == k.__code__.co_firstlineno + 3


def test_constant_index_out_of_range(device):
    def k(out):
        for i in range(out.shape[0]):
            m = tack.mat22f()
            out[i] = m[2, 0]
    e = compile_error(k, np.zeros(2, np.float32))
    assert "out of range" in str(e) and e.lineno == k.__code__.co_firstlineno + 3

    def k2(out):
        for i in range(out.shape[0]):
            m = tack.mat33f()
            m[0, 3] = 1.0
            out[i] = m[0, 0]
    e = compile_error(k2, np.zeros(2, np.float32))
    assert "out of range" in str(e) and e.lineno == k2.__code__.co_firstlineno + 3


def test_variable_index_reads_the_component(device):
    # once refused ("integer constants"); a run-time index picks the component
    # (tests/python/test_dynamic_components.py has the whole family)
    @tack.kernel
    def k(out):
        for i in range(out.shape[0]):
            m = tack.mat22f(1.0, 2.0, 3.0, 4.0)
            out[i] = m[i, 0] + m[1, i - 2]  # i - 2 counts from the end for i < 2

    out = tack.zeros(4, dtype=tack.f32, device=device)
    k(out)
    np.testing.assert_array_equal(out.numpy(), [1.0 + 3.0, 3.0 + 4.0, 0.0 + 3.0, 0.0 + 4.0])


def test_unknown_attribute_and_wrong_kinds(device):
    def k(out):
        for i in range(out.shape[0]):
            m = tack.mat22f()
            out[i] = m.foo
    e = compile_error(k, np.zeros(2, np.float32))
    assert "attribute 'foo'" in str(e) and e.lineno == k.__code__.co_firstlineno + 3

    def k2(out):
        for i in range(out.shape[0]):
            out[i] = tack.mat22f().x
    assert "a matrix's components are m[row, col]" in str(compile_error(k2, np.zeros(2, np.float32)))

    def k3(out):
        for i in range(out.shape[0]):
            m = tack.mat22f() + tack.vec4f(1.0)
            out[i] = m[0, 0]
    assert "'@' multiplies" in str(compile_error(k3, np.zeros(2, np.float32)))

    def k4(out):
        for i in range(out.shape[0]):
            out[i] = tack.mat22f()
    assert "2x2 matrix" in str(compile_error(k4, np.zeros(2, np.float32)))

    def k5(out):
        for i in range(out.shape[0]):
            out[i] = tack.determinant(tack.outer(tack.vec2f(1.0), tack.vec3f(1.0)))
    assert "square matrix" in str(compile_error(k5, np.zeros(2, np.float32)))

    def k6(out):
        for i in range(out.shape[0]):
            out[i] = tack.mat22f(1.0, 2.0, 3.0)[0, 0]
    assert "takes no values" in str(compile_error(k6, np.zeros(2, np.float32)))


def test_storing_the_wrong_shape(device):
    def k(out):
        for i in range(out.shape[0]):
            out[i] = tack.mat22f()
    e = compile_error(k, tack.zeros((2,), dtype=tack.mat33f, device=device))
    assert "3x3 matrix" in str(e)


# ---- CUDA -------------------------------------------------------------------------

@needs_nvrtc
def test_matrix_kernel_ptx(device):
    if device.name != "cpu":
        pytest.skip("PTX is generated once")
    F = tack.zeros((4,), dtype=tack.mat22f)
    C = tack.zeros((4,), dtype=tack.mat22f)
    check_ptx(mpm_update, F, C, 0.1)
    a = tack.zeros((4,), dtype=tack.mat44d)
    check_ptx(det_inv, a, tack.zeros((4,), dtype=tack.f64), tack.zeros((4,), dtype=tack.mat44d))


# ---- more shapes and values ---------------------------------------------------------

@tack.kernel
def grid_of_matrices(g, out):
    for i, j in tack.ndindex(g.shape[0], g.shape[1]):
        m = g[i, j]
        out[i, j] = tack.f64(abs(m) + tack.math.sqrt(abs(m)) * 0.5)
        out[i, j][0, 1] = g[i, j][1, 0] + g[i][j][0, 0]


def test_two_dimensional_array_of_matrices_and_math(device):
    g_np = rand((3, 4, 3, 3), 18, np.float32)
    out = tack.zeros((3, 4), dtype=tack.mat33d, device=device)
    grid_of_matrices(mats(g_np, 3, np.float32, device), out)
    a = np.abs(g_np)
    want = (a + np.sqrt(a) * np.float32(0.5)).astype(np.float64)
    want[:, :, 0, 1] = (g_np[:, :, 1, 0] + g_np[:, :, 0, 0]).astype(np.float64)
    close(out.numpy(), want, np.float32)


@tack.kernel
def special_values(a, b, neg, prod):
    for i in range(a.shape[0]):
        neg[i] = -a[i]
        prod[i] = a[i] @ b[i]


def test_nan_inf_and_negative_zero(device):
    a_np = np.zeros((3, 2, 2), np.float64)
    a_np[1, 0, 0] = np.nan
    a_np[2, 1, 1] = np.inf
    b_np = np.ones((3, 2, 2), np.float64)
    neg = tack.zeros((3,), dtype=tack.mat22d, device=device)
    prod = tack.zeros((3,), dtype=tack.mat22d, device=device)
    special_values(mats(a_np, 2, np.float64, device), mats(b_np, 2, np.float64, device), neg, prod)
    got = neg.numpy()
    assert np.signbit(got[0]).all() and (got[0] == 0).all()  # -0.0, as NumPy's -a
    np.testing.assert_array_equal(got, -a_np)
    with np.errstate(invalid="ignore"):
        want = a_np @ b_np
    np.testing.assert_array_equal(prod.numpy(), want)  # nan and inf rows as NumPy's


@tack.kernel
def powers(a, out):
    for i in range(a.shape[0]):
        m = tack.identity(3)
        for _ in range(3):
            m @= a[i]
        out[i] = m


def test_matmul_update(device):
    a_np = rand((5, 3, 3), 19, np.float32)
    out = tack.zeros((5,), dtype=tack.mat33f, device=device)
    powers(mats(a_np, 3, np.float32, device), out)
    close(out.numpy(), a_np @ a_np @ a_np, np.float32, hard=True)


def test_matmul_update_of_an_array_element_is_refused(device):
    def k(a):
        for i in range(a.shape[0]):
            a[i] @= a[i]
    e = compile_error(k, tack.zeros((2,), dtype=tack.mat22f, device=device))
    assert "'@=' updates a matrix or vector local" in str(e)
    assert e.lineno == k.__code__.co_firstlineno + 2
