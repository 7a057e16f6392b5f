"""Issue 27: vectors, matrices and complex numbers as values the compiler
reduces and stores whole, against NumPy on every device.

- Reductions of vectors, matrices and complex numbers over the parallel
  loop (`c = tack.vec3d(); c += p[i]`): one scalar reduction per component,
  the value read whole after the loop or in a later loop; the forms that
  cannot be reduced refused naming the name and the line.
- Whole matrix rows at run-time indices: `x[i][r] = row`, `x[i][r] += row`
  (stores and atomics per component under the test of r).
- Matrices of 2-16 rows and columns (`tack.matrix(rows, cols, dtype)`):
  @, transpose, +, scalar *, element access, and a variant per shape.
"""
import numpy as np
import pytest

import tack

pytestmark = pytest.mark.every_device


# ---- reductions of vectors, matrices and complex numbers ----------------

@tack.kernel
def vec_sum(p, out, centred):
    c = tack.vec3d()
    d = tack.vec3d(1.0, 2.0, -3.0)
    for i in range(p.shape[0]):
        c += p[i]
        d -= p[i] * 2.0
    out[0] = c
    out[1] = d
    for i in range(p.shape[0]):             # read whole in a later loop
        centred[i] = p[i] - c / p.shape[0]


def test_vector_sum_and_difference(device):
    rng = np.random.default_rng(1)
    p = rng.normal(size=(1000, 3))
    pa = tack.array(p, dtype=tack.vec3d, device=device)
    oa = tack.zeros(2, dtype=tack.vec3d, device=device)
    ca = tack.zeros(1000, dtype=tack.vec3d, device=device)
    vec_sum(pa, oa, ca)
    got = oa.numpy()
    np.testing.assert_allclose(got[0], p.sum(0), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(got[1], np.array([1.0, 2.0, -3.0]) - 2 * p.sum(0), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(ca.numpy(), p - p.mean(0), rtol=1e-12, atol=1e-12)


@tack.kernel
def vec_extremes(p, out):
    lo = tack.vec3f(1e30, 1e30, 1e30)
    hi = tack.vec3f(-1e30, -1e30, -1e30)
    for i in range(p.shape[0]):
        lo = tack.min(lo, p[i])
        hi = max(hi, p[i])
    out[0] = lo
    out[1] = hi


def test_vector_min_max(device):
    rng = np.random.default_rng(2)
    p = rng.normal(size=(777, 3)).astype(np.float32)
    out = tack.zeros(2, dtype=tack.vec3f, device=device)
    vec_extremes(tack.array(p, dtype=tack.vec3f, device=device), out)
    got = out.numpy()
    np.testing.assert_array_equal(got[0], p.min(0))
    np.testing.assert_array_equal(got[1], p.max(0))


@tack.kernel
def int_vec_bits(p, out):
    ors = tack.vec2i()
    count = tack.vec2i(5, 0)
    for i in range(p.shape[0]):
        ors |= p[i]
        count += 1                          # a scalar is added to every component
    out[0] = ors
    out[1] = count


def test_integer_vector_reductions(device):
    rng = np.random.default_rng(3)
    p = rng.integers(0, 1 << 20, size=(300, 2)).astype(np.int32)
    out = tack.zeros(2, dtype=tack.vec2i, device=device)
    int_vec_bits(tack.array(p, dtype=tack.vec2i, device=device), out)
    got = out.numpy()
    np.testing.assert_array_equal(got[0], np.bitwise_or.reduce(p, axis=0))
    np.testing.assert_array_equal(got[1], [305, 300])


@tack.kernel
def complex_sum(z, w, out):
    c = 0j
    d = complex(1.0, -2.0)
    for i in range(z.shape[0]):
        c += z[i] * w[i]
        d -= z[i]
        d -= 0.5                            # a real value, to the real part
    out[0] = c
    out[1] = d


@pytest.mark.parametrize("dt,tol", [(np.complex128, 1e-10), (np.complex64, 1e-3)])
def test_complex_sum(device, dt, tol):
    rng = np.random.default_rng(4)
    n = 500
    z = (rng.normal(size=n) + 1j * rng.normal(size=n)).astype(dt)
    w = (rng.normal(size=n) + 1j * rng.normal(size=n)).astype(dt)
    out = np.zeros(2, dtype=dt)
    complex_sum(z, w, out)
    want = np.array([(z.astype(complex) * w).sum(), 1 - 2j - z.astype(complex).sum() - 0.5 * n])
    np.testing.assert_allclose(out, want, rtol=tol, atol=tol)


@tack.kernel
def mat_sum(F, out, scaled):
    m = tack.mat22d()
    lo = tack.mat22d(9.0, 9.0, 9.0, 9.0)
    for i in range(F.shape[0]):
        m += F[i]
        lo = tack.min(lo, F[i])
    out[0] = m
    out[1] = lo
    for i in range(F.shape[0]):
        scaled[i] = F[i] @ m


def test_matrix_sum(device):
    rng = np.random.default_rng(5)
    F = rng.normal(size=(400, 2, 2))
    out = tack.zeros(2, dtype=tack.mat22d, device=device)
    scaled = tack.zeros(400, dtype=tack.mat22d, device=device)
    mat_sum(tack.array(F, dtype=tack.mat22d, device=device), out, scaled)
    got = out.numpy()
    np.testing.assert_allclose(got[0], F.sum(0), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(got[1], np.minimum(F.min(0), 9.0))
    np.testing.assert_allclose(scaled.numpy(), F @ F.sum(0), rtol=1e-12, atol=1e-12)


@tack.kernel
def mat33_sum(F, out):
    m = tack.mat33f()
    for i in range(F.shape[0]):
        m += F[i].transpose()
    out[0] = m


def test_matrix33_sum_f32(device):
    rng = np.random.default_rng(6)
    F = rng.normal(size=(256, 3, 3)).astype(np.float32)
    out = tack.zeros(1, dtype=tack.mat33f, device=device)
    mat33_sum(tack.array(F, dtype=tack.mat33f, device=device), out)
    np.testing.assert_allclose(out.numpy()[0], F.sum(0).T, rtol=1e-4, atol=1e-4)


@tack.kernel
def vec_parts(p):
    c = tack.vec3d()
    for i in range(p.shape[0]):
        c += p[i]
    return c[0], c.y, float(c[2])


@tack.kernel
def complex_parts(z):
    c = 0j
    for i in range(z.shape[0]):
        c += z[i]
    return c.real, c.imag


def test_returning_components(device):
    rng = np.random.default_rng(7)
    p = rng.normal(size=(50, 3))
    got = vec_parts(tack.array(p, dtype=tack.vec3d, device=device))
    np.testing.assert_allclose(got, p.sum(0), rtol=1e-12)
    z = rng.normal(size=20) + 1j * rng.normal(size=20)
    re, im = complex_parts(z)
    assert abs(complex(re, im) - z.sum()) < 1e-12


@tack.kernel
def empty_range(p, out):
    c = tack.vec3d(1.0, 2.0, 3.0)
    for i in range(p.shape[0]):
        c += p[i]
    out[0] = c


def test_no_iterations_keep_the_start(device):
    p = np.zeros((0, 3))
    out = tack.zeros(1, dtype=tack.vec3d, device=device)
    empty_range(tack.array(p, dtype=tack.vec3d, device=device), out)
    np.testing.assert_array_equal(out.numpy()[0], [1.0, 2.0, 3.0])


def _refused(src_fn, *args):
    with pytest.raises(tack.CompileError) as e:
        src_fn(*args)
    return str(e.value)


@tack.kernel
def start_not_constant(p, out):
    c = tack.vec3d(p.shape[0], 0.0, 0.0)
    for i in range(p.shape[0]):
        c += p[i]
    out[0] = c


@tack.kernel
def cx_min(z, out):
    c = 0j
    for i in range(z.shape[0]):
        c = tack.min(c, z[i])
    out[0] = c


@tack.kernel
def mat_product(F, out):
    m = tack.mat22d(1.0, 0.0, 0.0, 1.0)
    for i in range(F.shape[0]):
        m *= F[i]
    out[0] = m


@tack.kernel
def wrong_shape(p, out):
    c = tack.vec2d()
    for i in range(p.shape[0]):
        c += p[i]
    out[0] = c


@tack.kernel
def part_write(p, out):
    c = tack.vec3d()
    for i in range(p.shape[0]):
        c += p[i]
        c.x = 0.0
    out[0] = c


@tack.kernel
def too_many(F, p, out, outp):
    m = tack.mat44d()
    c = tack.vec3d()
    for i in range(F.shape[0]):
        m += F[i]
        c += p[i]
    out[0] = m
    outp[0] = c


@tack.kernel
def mat_scalar(F, out):
    m = tack.mat22d()
    for i in range(F.shape[0]):
        m += 1.0
    out[0] = m


@pytest.mark.cpu_only
def test_refusals_name_the_reduction_and_line(device):
    p = tack.array(np.zeros((4, 3)), dtype=tack.vec3d)
    o3 = tack.zeros(1, dtype=tack.vec3d)
    z = np.zeros(4, dtype=complex)
    oz = np.zeros(1, dtype=complex)
    F = tack.array(np.zeros((4, 2, 2)), dtype=tack.mat22d)
    o22 = tack.zeros(1, dtype=tack.mat22d)
    # `return c` of a vector or complex reduction was refused here; it now
    # returns an ndarray or a complex (test_kernel_return_values.py).
    m = _refused(start_not_constant, p, o3)
    assert "reduction 'c'" in m and "constant in every component" in m
    m = _refused(cx_min, z, oz)
    assert "complex number" in m and "+= or -=" in m
    m = _refused(mat_product, F, o22)
    assert "'*=' is not reduced" in m
    m = _refused(wrong_shape, p, tack.zeros(1, dtype=tack.vec2d))
    assert "reduction 'c' is a 2-component vector and cannot be combined with a 3-component" in m
    m = _refused(part_write, p, o3)
    assert "a part of it cannot be assigned inside the loop" in m and "c.x = 0.0" in m
    F4 = tack.array(np.zeros((4, 4, 4)), dtype=tack.mat44d)
    m = _refused(too_many, F4, p, tack.zeros(1, dtype=tack.mat44d), o3)
    assert "reduction 'c' is a 3-component vector, which takes 3" in m
    m = _refused(mat_scalar, F, o22)
    assert "2x2 matrix and cannot be combined with a scalar" in m


# ---- whole matrix rows at run-time indices ------------------------------

@tack.kernel
def matrix_rows(x, rows, r, owner, acc):
    for i in range(rows.shape[0]):
        x[i][r] = rows[i]
        x[i][(r + 1) % 3] += rows[i] * 0.5     # the iteration's own element: plain
        acc[owner[i]][r] += rows[i]            # shared elements: atomic per component
        acc[owner[i]][-1] -= rows[i] * 2.0


def _rows_reference(x, rows, r, owner, acc):
    x, acc = x.copy(), acc.copy()
    for i in range(rows.shape[0]):
        if -3 <= r < 3:
            x[i][r] = rows[i]
        x[i][(r + 1) % 3] += rows[i] * 0.5
        if -3 <= r < 3:
            acc[owner[i]][r] += rows[i]
        acc[owner[i]][-1] -= rows[i] * 2.0
    return x, acc


@pytest.mark.parametrize("r", [0, 1, 2, -2, 3])
def test_matrix_rows_at_runtime_indices(device, r):
    rng = np.random.default_rng(10 + r)
    n = 64
    x0 = rng.normal(size=(n, 3, 3)).astype(np.float32)
    rows = rng.normal(size=(n, 3)).astype(np.float32)
    owner = rng.integers(0, 4, size=n).astype(np.int32)
    acc0 = rng.normal(size=(4, 3, 3)).astype(np.float32)
    x = tack.array(x0, dtype=tack.mat33f, device=device)
    acc = tack.array(acc0, dtype=tack.mat33f, device=device)
    matrix_rows(x, tack.array(rows, dtype=tack.vec3f, device=device), r,
                tack.array(owner, device=device), acc)
    want_x, want_acc = _rows_reference(x0, rows, r, owner, acc0)
    np.testing.assert_allclose(x.numpy(), want_x, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(acc.numpy(), want_acc, rtol=1e-4, atol=1e-4)


@tack.kernel
def rows_of_mat44(x, rows, r):
    for i in range(x.shape[0]):
        x[i][r] += rows[i]


def test_matrix44_row_update_f64(device):
    rng = np.random.default_rng(20)
    x0 = rng.normal(size=(9, 4, 4))
    rows = rng.normal(size=(9, 4))
    x = tack.array(x0, dtype=tack.mat44d, device=device)
    rows_of_mat44(x, tack.array(rows, dtype=tack.vec4d, device=device), 3)
    want = x0.copy()
    want[:, 3] += rows
    np.testing.assert_allclose(x.numpy(), want, rtol=1e-12)


@tack.kernel
def row_too_short(x, rows, r):
    for i in range(x.shape[0]):
        x[i][r] = rows[i]


@tack.kernel
def row_update_scalar(x, r):
    for i in range(x.shape[0]):
        x[i][r] += 1.0


@pytest.mark.cpu_only
def test_row_of_the_wrong_width_is_refused(device):
    x = tack.zeros(2, dtype=tack.mat33f)
    with pytest.raises(tack.CompileError) as e:
        row_too_short(x, tack.zeros(2, dtype=tack.vec2f), 1)
    assert "a row of a 3x3 matrix takes a 3-component vector, not a 2-component vector" in str(e.value)
    assert "x[i][r] = rows[i]" in str(e.value)         # names the line
    with pytest.raises(tack.CompileError) as e:
        row_update_scalar(x, 1)
    assert "takes a 3-component vector, not a scalar" in str(e.value)
    assert "x[i][r] += 1.0" in str(e.value)


@pytest.mark.cpu_only
def test_cuda_ptx_of_rows_and_reductions(device):
    """ptxas accepts the CUDA code of run-time rows and of vector, matrix and
    complex reductions (the other dialects: test_gpu_dialects.py)."""
    from test_cuda import NVRTC_MISSING, check_ptx
    if NVRTC_MISSING is not None:
        pytest.skip(NVRTC_MISSING)
    check_ptx(matrix_rows, tack.zeros(4, dtype=tack.mat33f), tack.zeros(4, dtype=tack.vec3f), 1,
              np.zeros(4, np.int32), tack.zeros(4, dtype=tack.mat33f))
    check_ptx(vec_extremes, tack.zeros(4, dtype=tack.vec3f), tack.zeros(2, dtype=tack.vec3f))
    check_ptx(mat_sum, tack.zeros(4, dtype=tack.mat22d), tack.zeros(2, dtype=tack.mat22d),
              tack.zeros(4, dtype=tack.mat22d))
    c = np.zeros(4, np.complex128)
    check_ptx(complex_sum, c, c, np.zeros(2, np.complex128))


# ---- matrices of up to 16 x 16 -------------------------------------------

M16D = tack.matrix(16, 16, tack.f64)
M3x16F = tack.matrix(3, 16, tack.f32)


@tack.kernel
def big_matrix_ops(a, b, v, s, prod, tr, comb, el, mv, r, c):
    for i in range(a.shape[0]):
        x = a[i]
        y = b[i]
        prod[i] = x @ y
        tr[i] = x.transpose()
        comb[i] = x + y * s - 2.0 * x
        el[i] = x[r, c] + y[0, 1] + x[-1, -1]
        mv[i] = x @ v[i]


@pytest.mark.parametrize("n", [5, 8, 16])
@pytest.mark.parametrize("dt,tol", [(np.float64, 1e-11), (np.float32, 1e-4)])
def test_square_matrix_operators(device, n, dt, tol):
    rng = np.random.default_rng(n)
    m = 4
    MT = tack.matrix(n, n, dt)
    VT = tack.vector(n, dt)
    assert MT.width == n * n and MT.numpy == np.dtype((dt, (n, n)))
    a = rng.normal(size=(m, n, n)).astype(dt)
    b = rng.normal(size=(m, n, n)).astype(dt)
    v = rng.normal(size=(m, n)).astype(dt)
    prod, tr, comb = (tack.zeros(m, dtype=MT, device=device) for _ in range(3))
    el = tack.zeros(m, dtype=dt, device=device)
    mv = tack.zeros(m, dtype=VT, device=device)
    r, c = 2, n - 2
    big_matrix_ops(tack.array(a, dtype=MT, device=device), tack.array(b, dtype=MT, device=device),
                   tack.array(v, dtype=VT, device=device), 1.5, prod, tr, comb, el, mv, r, c)
    assert prod.numpy().shape == (m, n, n)
    np.testing.assert_allclose(prod.numpy(), a @ b, rtol=tol, atol=tol * n)
    np.testing.assert_array_equal(tr.numpy(), a.transpose(0, 2, 1))
    np.testing.assert_allclose(comb.numpy(), a + b * 1.5 - 2 * a, rtol=tol, atol=tol)
    np.testing.assert_allclose(el.numpy(), a[:, r, c] + b[:, 0, 1] + a[:, -1, -1], rtol=tol, atol=tol)
    np.testing.assert_allclose(mv.numpy(), np.einsum("mij,mj->mi", a, v), rtol=tol, atol=tol * n)


@tack.kernel
def rect_ops(a, b, out, t, built, k):
    for i in range(a.shape[0]):
        x = a[i]                      # 3 x 16
        out[i] = x @ b[i]             # (3 x 16) @ (16 x 5) = 3 x 5
        t[i] = b[i].transpose() * 0.5  # 5 x 16
        z = M3x16F()
        for j in range(16):           # element stores at loop indices
            z[0, j] = x[0, j] + 1.0
            z[2, j] = float(j)
        z[1, k] = -1.0                # a run-time index
        built[i] = z


def test_rectangular_matrices(device):
    rng = np.random.default_rng(30)
    m = 3
    B = tack.matrix(16, 5, tack.f32)
    a = rng.normal(size=(m, 3, 16)).astype(np.float32)
    b = rng.normal(size=(m, 16, 5)).astype(np.float32)
    out = tack.zeros(m, dtype=tack.matrix(3, 5, tack.f32), device=device)
    t = tack.zeros(m, dtype=tack.matrix(5, 16, tack.f32), device=device)
    built = tack.zeros(m, dtype=M3x16F, device=device)
    rect_ops(tack.array(a, dtype=M3x16F, device=device), tack.array(b, dtype=B, device=device),
             out, t, built, 11)
    np.testing.assert_allclose(out.numpy(), a @ b, rtol=1e-4, atol=1e-4)
    np.testing.assert_array_equal(t.numpy(), b.transpose(0, 2, 1) * 0.5)
    want = np.zeros((m, 3, 16), np.float32)
    want[:, 0] = a[:, 0] + 1
    want[:, 2] = np.arange(16)
    want[:, 1, 11] = -1
    np.testing.assert_array_equal(built.numpy(), want)


@tack.kernel
def copy_matrices(a, out):
    for i in range(a.shape[0]):
        out[i] = a[i] * 1.0


@pytest.mark.cpu_only
def test_matrix_shapes_never_share_a_variant(device):
    """The width code fits the variant key's byte and names the shape: a
    16-column matrix, a 16-row one, 16x16 and the matrices whose codes their
    nibbles could be confused with (and vectors of the same component count)
    each get a variant of their own."""
    shapes = [(2, 16), (16, 2), (16, 16), (4, 8), (8, 4), (3, 16), (16, 3), (2, 2), (16, 12),
              (12, 16), (15, 15), (8, 2)]
    codes = set()
    for r, c in shapes:
        MT = tack.matrix(r, c, tack.f32)
        a = np.arange(2 * r * c, dtype=np.float32).reshape(2, r, c)
        out = tack.zeros(2, dtype=MT)
        copy_matrices(tack.array(a, dtype=MT), out)
        np.testing.assert_array_equal(out.numpy(), a)
        assert out.numpy().shape == (2, r, c)
        assert repr(MT) == ("tack.mat%d%df" % (r, c) if r == c <= 4 else
                            "tack.matrix(%d, %d, tack.f32)" % (r, c))
    keys = copy_matrices.variants()
    for k in keys:
        codes.add(tuple(sorted(dict(k.vec_sig).items())))
    assert len(keys) == len(shapes) and len(codes) == len(shapes)
    # complex numbers keep a code of their own too
    assert tack.matrix(3, 3, tack.f32) is tack.mat33f
    with pytest.raises(ValueError, match="2-16"):
        tack.matrix(17, 2, tack.f32)
    with pytest.raises(ValueError, match="2-16"):
        tack.matrix(4, 1, tack.f64)
    with pytest.raises(TypeError, match="f32 or f64"):
        tack.matrix(4, 4, tack.i32)


V8D = tack.vector(8, tack.f64)


@tack.kernel
def long_vector_sum(p, out):
    c = V8D()
    hi = V8D(-1e300)
    for i in range(p.shape[0]):
        c += p[i]
        hi = tack.max(hi, p[i])
    out[0] = c
    out[1] = hi


def test_long_vector_reductions(device):
    rng = np.random.default_rng(40)
    p = rng.normal(size=(321, 8))
    out = tack.zeros(2, dtype=V8D, device=device)
    long_vector_sum(tack.array(p, dtype=V8D, device=device), out)
    np.testing.assert_allclose(out.numpy()[0], p.sum(0), rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(out.numpy()[1], p.max(0))


@tack.func
def sandwich16(a, b):
    return a.transpose() @ b @ a, b[15]


@tack.kernel
def big_device_function(a, b, out, rows):
    for i in range(a.shape[0]):
        m, r = sandwich16(a[i], b[i])     # a 16x16 matrix and a row back from a function
        out[i] = m
        rows[i] = r


def test_device_function_returns_16x16(device):
    rng = np.random.default_rng(50)
    a = rng.normal(size=(2, 16, 16))
    b = rng.normal(size=(2, 16, 16))
    out = tack.zeros(2, dtype=M16D, device=device)
    rows = tack.zeros(2, dtype=tack.vector(16, tack.f64), device=device)
    big_device_function(tack.array(a, dtype=M16D, device=device),
                        tack.array(b, dtype=M16D, device=device), out, rows)
    np.testing.assert_allclose(out.numpy(), a.transpose(0, 2, 1) @ b @ a, rtol=1e-10, atol=1e-10)
    np.testing.assert_array_equal(rows.numpy(), b[:, 15])


@pytest.mark.cpu_only
def test_matrix_dtypes_pickle_and_call(device):
    import pickle
    for dt in (tack.matrix(3, 16, tack.f32), tack.matrix(16, 16, tack.f64), tack.mat33f,
               tack.vector(8, tack.f32)):
        assert pickle.loads(pickle.dumps(dt)) is dt
    M = tack.matrix(3, 16, tack.f32)
    assert M.name == "mat3x16f" and M.itemsize == 3 * 16 * 4 and M.component is tack.f32
    assert M().shape == (3, 16)
