"""Issue 27: a kernel returns a complex, vector or matrix reduction whole
(`return c`), as Numba returns a complex from a prange reduction: a Python
complex, or a NumPy array of the value's shape and dtype; alone or in a
tuple with scalars; against NumPy on every device."""
import numpy as np
import pytest

import tack

pytestmark = pytest.mark.every_device


@tack.kernel
def cx_sum(z):
    c = 0j
    for i in range(z.shape[0]):
        c += z[i]
    return c


@pytest.mark.parametrize("dtype", [np.complex128, np.complex64])
def test_complex_sum(device, dtype):
    rng = np.random.default_rng(1)
    z = (rng.normal(size=300) + 1j * rng.normal(size=300)).astype(dtype)
    got = cx_sum(z)
    assert type(got) is complex
    tol = 1e-12 if dtype == np.complex128 else 1e-3
    assert abs(got - z.astype(np.complex128).sum()) < tol


@tack.kernel
def cx_start(z):
    c = complex(1.5, -2.0)
    for i in range(z.shape[0]):
        c += z[i]
    return c


def test_complex_empty_loop_returns_the_start(device):
    assert cx_start(np.zeros(0, dtype=np.complex128)) == complex(1.5, -2.0)
    z = np.array([1 + 1j, 2 - 3j])
    assert cx_start(z) == complex(1.5, -2.0) + z.sum()


@tack.kernel
def vec_sum(p):
    c = tack.vec3d()
    for i in range(p.shape[0]):
        c += p[i]
    return c


def test_vector_sum(device):
    rng = np.random.default_rng(2)
    p = rng.normal(size=(500, 3))
    got = vec_sum(tack.array(p, dtype=tack.vec3d, device=device))
    assert isinstance(got, np.ndarray) and got.shape == (3,) and got.dtype == np.float64
    np.testing.assert_allclose(got, p.sum(0), rtol=1e-12, atol=1e-12)


@tack.kernel
def vec_start(p):
    c = tack.vec3d(1.0, 2.0, 3.0)
    for i in range(p.shape[0]):
        c += p[i]
    return c


def test_vector_empty_loop_returns_the_start(device):
    got = vec_start(tack.array(np.zeros((0, 3)), dtype=tack.vec3d, device=device))
    np.testing.assert_array_equal(got, [1.0, 2.0, 3.0])


@tack.kernel
def mat_sum(F):
    m = tack.mat22f()
    for i in range(F.shape[0]):
        m += F[i]
    return m


def test_matrix_sum_f32(device):
    rng = np.random.default_rng(3)
    F = rng.normal(size=(256, 2, 2)).astype(np.float32)
    got = mat_sum(tack.array(F, dtype=tack.mat22f, device=device))
    assert isinstance(got, np.ndarray) and got.shape == (2, 2) and got.dtype == np.float32
    np.testing.assert_allclose(got, F.sum(0), rtol=1e-4, atol=1e-4)


M23 = tack.matrix(2, 3, tack.f64)


@tack.kernel
def mat23_sum(F):
    m = M23()
    for i in range(F.shape[0]):
        m += F[i]
    return m


def test_non_square_matrix_keeps_its_shape(device):
    rng = np.random.default_rng(4)
    F = rng.normal(size=(40, 2, 3))
    got = mat23_sum(tack.array(F, dtype=M23, device=device))
    assert got.shape == (2, 3)
    np.testing.assert_allclose(got, F.sum(0), rtol=1e-12, atol=1e-12)


@tack.kernel
def vec_extremes(p):
    lo = tack.vec3f(1e30, 1e30, 1e30)
    hi = tack.vec3f(-1e30, -1e30, -1e30)
    for i in range(p.shape[0]):
        lo = tack.min(lo, p[i])
        hi = max(hi, p[i])
    return lo, hi


def test_vector_min_max(device):
    rng = np.random.default_rng(5)
    p = rng.normal(size=(777, 3)).astype(np.float32)
    lo, hi = vec_extremes(tack.array(p, dtype=tack.vec3f, device=device))
    assert lo.dtype == np.float32 and hi.shape == (3,)
    np.testing.assert_array_equal(lo, p.min(0))
    np.testing.assert_array_equal(hi, p.max(0))


@tack.kernel
def mixed(p, z):
    s = 0.0
    n = 0
    c = tack.vec3d()
    w = 0j
    for i in range(p.shape[0]):
        s += p[i][0] * p[i][1]
        n += 1
        c += p[i]
        w += z[i]
    return s, c, n, w


def test_tuple_mixing_scalars_vectors_and_complex(device):
    rng = np.random.default_rng(6)
    p = rng.normal(size=(64, 3))
    z = rng.normal(size=64) + 1j * rng.normal(size=64)
    s, c, n, w = mixed(tack.array(p, dtype=tack.vec3d, device=device), z)
    assert type(s) is float and type(n) is int and type(w) is complex
    assert abs(s - (p[:, 0] * p[:, 1]).sum()) < 1e-10
    np.testing.assert_allclose(c, p.sum(0), rtol=1e-12, atol=1e-12)
    assert n == 64
    assert abs(w - z.sum()) < 1e-10


@tack.kernel
def scalar_and_vector(p):
    s = 0.0
    c = tack.vec3d()
    for i in range(p.shape[0]):
        s += 1.0
        c += p[i]
    return s, c


def test_scalar_then_vector(device):
    p = np.arange(12.0).reshape(4, 3)
    s, c = scalar_and_vector(tack.array(p, dtype=tack.vec3d, device=device))
    assert s == 4.0
    np.testing.assert_array_equal(c, p.sum(0))


@tack.kernel
def too_many_numbers(F):
    m = tack.mat44d()
    for i in range(F.shape[0]):
        m += F[i]
    return m, m


@tack.kernel
def normalized(p):
    c = tack.vec3d()
    for i in range(p.shape[0]):
        c += p[i]
    return tack.normalize(c)


@tack.kernel
def two_shapes(p, F):
    c = tack.vec3d()
    m = tack.mat22d()
    for i in range(p.shape[0]):
        c += p[i]
    for i in range(F.shape[0]):
        m += F[i]
    return c + m


@pytest.mark.cpu_only
def test_refusals(device):
    F = tack.array(np.zeros((2, 4, 4)), dtype=tack.mat44d)
    p = tack.array(np.zeros((2, 3)), dtype=tack.vec3d)
    F2 = tack.array(np.zeros((2, 2, 2)), dtype=tack.mat22d)
    with pytest.raises(tack.CompileError) as e:
        too_many_numbers(F)
    m = str(e.value)
    assert "more than 16 numbers" in m and "'too_many_numbers'" in m
    with pytest.raises(tack.CompileError) as e:
        normalized(p)
    m = str(e.value)
    assert "'normalized'" in m and "this call on one is not supported" in m and "return c" in m
    assert "tack.normalize(c)" in m  # the source line
    with pytest.raises(tack.CompileError) as e:
        two_shapes(p, F2)
    assert "differ in shape" in str(e.value)


# ---- expressions of whole values after the loop --------------------------

@tack.kernel
def mean_vector(p):
    c = tack.vec3d()
    for i in range(p.shape[0]):
        c += p[i]
    return c / p.shape[0]


@tack.kernel
def cx_mean_and_count(z):
    c = 0j
    n = 0
    for i in range(z.shape[0]):
        c += z[i]
        n += 1
    return n, c / n, abs(c)


@tack.kernel
def mat_affine(F):
    m = tack.mat22f()
    for i in range(F.shape[0]):
        m += F[i]
    return m * 0.5 - m / 4.0, m


@tack.kernel
def centre(p):
    lo = tack.vec3f(1e30, 1e30, 1e30)
    hi = tack.vec3f(-1e30, -1e30, -1e30)
    for i in range(p.shape[0]):
        lo = tack.min(lo, p[i])
        hi = tack.max(hi, p[i])
    return (lo + hi) * 0.5, hi - lo


def test_mean_of_a_vector(device):
    rng = np.random.default_rng(8)
    p = rng.normal(size=(300, 3))
    got = mean_vector(tack.array(p, dtype=tack.vec3d, device=device))
    assert got.shape == (3,) and got.dtype == np.float64
    np.testing.assert_allclose(got, p.mean(0), rtol=1e-12, atol=1e-12)


def test_complex_mean_and_modulus(device):
    rng = np.random.default_rng(9)
    z = rng.normal(size=100) + 1j * rng.normal(size=100)
    n, mean, mod = cx_mean_and_count(z)
    assert n == 100 and type(mean) is complex and type(mod) is float
    assert abs(mean - z.mean()) < 1e-12
    assert abs(mod - abs(z.sum())) < 1e-10


def test_matrix_expression_f32(device):
    rng = np.random.default_rng(10)
    F = rng.normal(size=(64, 2, 2)).astype(np.float32)
    got, m = mat_affine(tack.array(F, dtype=tack.mat22f, device=device))
    assert got.shape == (2, 2) and got.dtype == np.float32
    np.testing.assert_allclose(m, F.sum(0), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(got, F.sum(0) * 0.25, rtol=1e-4, atol=1e-4)


def test_centre_and_extent(device):
    rng = np.random.default_rng(11)
    p = rng.normal(size=(200, 3)).astype(np.float32)
    c, ext = centre(tack.array(p, dtype=tack.vec3f, device=device))
    assert c.dtype == np.float32
    np.testing.assert_allclose(c, (p.min(0) + p.max(0)) * 0.5, rtol=1e-6)
    np.testing.assert_allclose(ext, p.max(0) - p.min(0), rtol=1e-6)


@tack.kernel
def int_vec_sum(p):
    c = tack.vec3i()
    for i in range(p.shape[0]):
        c += p[i]
    return c


def test_integer_vector_sum(device):
    p = np.arange(30, dtype=np.int32).reshape(10, 3) - 7
    got = int_vec_sum(tack.array(p, dtype=tack.vec3i, device=device))
    assert got.dtype == np.int32 and got.shape == (3,)
    np.testing.assert_array_equal(got, p.sum(0))
    empty = int_vec_sum(tack.array(np.zeros((0, 3), np.int32), dtype=tack.vec3i, device=device))
    np.testing.assert_array_equal(empty, [0, 0, 0])
