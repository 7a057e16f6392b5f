"""Issue 27, the rest: determinant and inverse of 5x5..16x16 matrices
(pivoted elimination) against NumPy, singular ones included; whole integer
vector expressions returned after a reduction loop with NumPy's //, % and
true division; reductions of more than 16 components; rows of a 2-D array
passed to device functions, keyed by the array's ndim."""
import numpy as np
import pytest

import tack

pytestmark = pytest.mark.every_device


# ---- determinant and inverse beyond 4x4 ------------------------------------

@tack.kernel
def big_det(a, det, det_m):
    for i in range(a.shape[0]):
        m = a[i]
        det[i] = tack.determinant(m)
        det_m[i] = m.determinant()        # Taichi's spelling


@tack.kernel
def big_inv(a, inv):
    for i in range(a.shape[0]):
        inv[i] = tack.inverse(a[i])


@tack.kernel
def big_inv_method(a, inv):
    for i in range(a.shape[0]):
        m = a[i]
        inv[i] = m.inverse() @ m          # Taichi's spelling: the identity


def _det(a, n, dt, device):
    MT = tack.matrix(n, n, dt)
    det, det_m = (tack.zeros(a.shape[0], dtype=dt, device=device) for _ in range(2))
    big_det(tack.array(a, dtype=MT, device=device), det, det_m)
    np.testing.assert_array_equal(det_m.numpy(), det.numpy())
    return det.numpy()


def _inv(a, n, dt, device, kernel=big_inv):
    MT = tack.matrix(n, n, dt)
    inv = tack.zeros(a.shape[0], dtype=MT, device=device)
    kernel(tack.array(a, dtype=MT, device=device), inv)
    return inv.numpy()


def _matrices(n, dt, count=5):
    """Random matrices (pivoting matters: no diagonal dominance), one with
    a zero leading entry, one a row permutation of a well-conditioned one."""
    rng = np.random.default_rng(100 + n)
    a = rng.normal(size=(count, n, n))
    a[1, 0, 0] = 0.0
    a[2] = (np.eye(n) * 3 + rng.normal(size=(n, n)) * 0.1)[rng.permutation(n)]
    return a.astype(dt)


# The 16x16 f64 inverse is left out: PoCL takes about half a minute to
# compile each 16x16 inverse, and f32 checks the same unrolled code.
SIZES = [(5, np.float64, 1e-10), (8, np.float64, 1e-10), (5, np.float32, 2e-3),
         (8, np.float32, 2e-3), (16, np.float32, 2e-3)]


@pytest.mark.parametrize("n,dt,tol", SIZES)
def test_big_determinant(device, n, dt, tol):
    a = _matrices(n, dt)
    det = _det(a, n, dt, device)
    np.testing.assert_allclose(det, np.linalg.det(a.astype(np.float64)), rtol=tol * n, atol=0)


@pytest.mark.parametrize("n,dt,tol", SIZES)
def test_big_inverse(device, n, dt, tol):
    a = _matrices(n, dt)
    inv = _inv(a, n, dt, device)
    want = np.linalg.inv(a.astype(np.float64))
    scale = np.abs(want).max(axis=(1, 2), keepdims=True)
    np.testing.assert_allclose(inv / scale, want / scale, rtol=0, atol=tol * n)


def test_big_inverse_method(device):
    n = 6
    a = _matrices(n, np.float64)
    got = _inv(a, n, np.float64, device, big_inv_method)
    np.testing.assert_allclose(got, np.broadcast_to(np.eye(n), got.shape), rtol=0, atol=1e-10)


@pytest.mark.parametrize("n", [5, 9])
def test_big_singular_matrices(device, n):
    """NumPy's det of an exactly singular matrix is 0 (a zero pivot skips
    its column, as LAPACK does); the inverse has non-finite entries where
    NumPy raises LinAlgError."""
    rng = np.random.default_rng(7)
    a = rng.normal(size=(3, n, n))
    a[0] = 0.0                               # all zero
    a[1] = np.round(a[1] * 4) / 4            # exactly representable ...
    a[1, 2] = a[1, 0] * 2.0                  # ... so two rows are exactly proportional
    a[2, :, 3] = 0.0                         # a zero column
    det = _det(a, n, np.float64, device)
    inv = _inv(a, n, np.float64, device)
    for k in range(3):
        assert np.linalg.matrix_rank(a[k]) < n
    assert det[0] == 0.0 == np.linalg.det(a[0]) and det[2] == 0.0 == np.linalg.det(a[2])
    assert abs(det[1]) <= 1e-12 * np.prod(np.linalg.norm(a[1], axis=1))
    assert not np.isfinite(inv[0]).any() and not np.isfinite(inv[2]).all()
    with pytest.raises(np.linalg.LinAlgError):
        np.linalg.inv(a[2])


def test_big_pivoting_needs_row_swaps(device):
    """Permutation matrices: no elimination works without swaps, and each
    swap's sign must be kept (det = the permutation's sign)."""
    n = 7
    perms = ([1, 0, 2, 3, 4, 5, 6], [6, 5, 4, 3, 2, 1, 0], [1, 2, 3, 4, 5, 6, 0])
    a = np.stack([np.eye(n)[p] for p in perms])
    det = _det(a, n, np.float64, device)
    inv = _inv(a, n, np.float64, device)
    np.testing.assert_array_equal(det, np.linalg.det(a).round())
    np.testing.assert_array_equal(inv, a.transpose(0, 2, 1))


# ---- whole integer (and float) vector expressions after the loop -----------

@tack.kernel
def int_vec_exprs(p):
    c = tack.vec3i()
    for i in range(p.shape[0]):
        c += p[i]
    return c // 4, c % 4, c * 2, c / p.shape[0], c


@tack.kernel
def int_vec_more(p):
    c = tack.vec3i()
    for i in range(p.shape[0]):
        c += p[i]
    return -c + 1, c * 0.5, c // -3 - c % -3, abs(c)


@tack.kernel
def float_vec_floor(p):
    c = tack.vec3d()
    for i in range(p.shape[0]):
        c += p[i]
    return c // 4.0, c % 4.0, c // -3, c % -3


def test_integer_vector_expressions(device):
    # negative sums: // and % round toward minus infinity as in NumPy
    p = np.arange(30, dtype=np.int32).reshape(10, 3) - np.array([20, 13, 15], np.int32)
    s = p.sum(0, dtype=np.int32)
    assert (s < 0).any() and (s > 0).any() and (s % 4 != 0).all()
    fl, mod, dbl, mean, c = int_vec_exprs(tack.array(p, dtype=tack.vec3i, device=device))
    for got, want in ((fl, s // 4), (mod, s % 4), (dbl, s * 2), (c, s)):
        assert got.dtype == np.int32 and got.shape == (3,)
        np.testing.assert_array_equal(got, want)
    assert mean.dtype == np.float64                   # true division, as NumPy's
    np.testing.assert_allclose(mean, s / 10, rtol=1e-15)
    neg, half, fm, ab = int_vec_more(tack.array(p, dtype=tack.vec3i, device=device))
    assert neg.dtype == np.int32 and half.dtype == np.float64 and fm.dtype == np.int32
    np.testing.assert_array_equal(neg, -s + 1)
    np.testing.assert_array_equal(half, s * 0.5)
    np.testing.assert_array_equal(fm, s // -3 - s % -3)
    np.testing.assert_array_equal(ab, np.abs(s))


def test_float_vector_floor_and_mod_like_numpy(device):
    p = np.array([[-7.5, 2.25, 9.0], [1.0, -3.0, -4.5]])
    s = p.sum(0)
    got = float_vec_floor(tack.array(p, dtype=tack.vec3d, device=device))
    for g, w in zip(got, (s // 4.0, s % 4.0, s // -3, s % -3)):
        assert g.dtype == np.float64
        np.testing.assert_array_equal(g, w)


# ---- reductions of more than 16 components ----------------------------------

M8D = tack.matrix(8, 8, tack.f64)


@tack.kernel
def wide_reduction(F):
    m = M8D()
    for i in range(F.shape[0]):
        m += F[i]
    return m


@tack.kernel
def wide_into_array(F, out):
    for i in range(F.shape[0]):
        out[0] += F[i]


@tack.kernel
def too_many_results(p):
    c = tack.vec3i()
    for i in range(p.shape[0]):
        c += p[i]
    return c // 4, c % 4, c * 2, c / p.shape[0], c, c + 1


@pytest.mark.cpu_only
def test_wide_reductions_are_refused_naming_line_and_limit(device):
    F = tack.array(np.zeros((3, 8, 8)), dtype=M8D)
    with pytest.raises(tack.CompileError) as e:
        wide_reduction(F)
    m = str(e.value)
    assert "m = M8D()" in m and "64" in m and "16" in m and "out[0] += " in m
    p = tack.array(np.zeros((3, 3), np.int32), dtype=tack.vec3i)
    with pytest.raises(tack.CompileError) as e:
        too_many_results(p)
    m = str(e.value)
    assert "c + 1" in m and "16" in m and "too_many_results" in m


def test_wide_sum_into_an_output_array(device):
    """The form the refusal suggests: an element of an output array,
    updated atomically per component."""
    rng = np.random.default_rng(4)
    F = rng.normal(size=(50, 8, 8))
    out = tack.zeros(1, dtype=M8D, device=device)
    wide_into_array(tack.array(F, dtype=M8D, device=device), out)
    np.testing.assert_allclose(out.numpy()[0], F.sum(0), rtol=1e-12, atol=1e-12)


# ---- rows of a 2-D array passed to a device function, keyed by ndim ---------

@tack.func
def row_total(r):
    s = 0.0
    for j in range(r.shape[0]):
        s = s * 0.5 + r[j]          # order-sensitive, and f32 for f32 rows
    return s


def _row_kernel():
    """A fresh kernel object of one source: it compiles from scratch."""
    @tack.kernel
    def row_sums(c, out):
        for i in range(out.shape[0]):
            out[i] = row_total(c[i])     # c is indexed with one index only
    return row_sums


def _outcome(kernel, c, device):
    out = tack.zeros(c.shape[0], dtype=tack.f64, device=device)
    try:
        kernel(tack.array(c, device=device), out)
    except tack.CompileError as e:
        return "error", str(e)
    return "ok", out.numpy()


@pytest.mark.parametrize("order", [(2, 1, 2), (1, 2, 1)])
def test_row_to_device_function_follows_each_calls_ndim(device, order):
    c2 = np.arange(12.0).reshape(4, 3) - 5
    c1 = np.arange(4.0)
    arrays = {1: c1, 2: c2}
    k = _row_kernel()
    for nd in order:
        kind, got = _outcome(k, arrays[nd], device)
        fresh_kind, fresh = _outcome(_row_kernel(), arrays[nd], device)
        assert kind == fresh_kind
        if nd == 2:
            assert kind == "ok"
            np.testing.assert_array_equal(got, fresh)
            np.testing.assert_array_equal(got, ((c2[:, 0] * 0.5 + c2[:, 1]) * 0.5 + c2[:, 2]))
        else:
            # a 1-D array's element is a scalar: the function's r.shape is refused
            assert kind == "error" and got == fresh and "row_total" in got
    # one variant per ndim that compiled, each reused by the later call
    assert len(k.variants(device=device)) == 1


def test_row_of_vectors_to_device_function(device):
    @tack.func
    def first_plus_last(r):
        return r[0] + r[r.shape[0] - 1]

    @tack.kernel
    def ends(c, out):
        for i in range(out.shape[0]):
            out[i] = first_plus_last(c[i])

    c = np.random.default_rng(5).normal(size=(4, 6, 3)).astype(np.float32)
    out = tack.zeros(4, dtype=tack.vec3f, device=device)
    ends(tack.array(c, dtype=tack.vec3f, device=device), out)
    np.testing.assert_allclose(out.numpy(), c[:, 0] + c[:, -1], rtol=1e-6)
