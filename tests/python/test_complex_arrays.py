"""Arrays of complex numbers: NumPy's complex64 and complex128 arrays passed
without a copy (x[i] reads a complex value, x[i] = z and x[i] += z write
one), tack arrays of tack.complex64/complex128, and the variant key naming
the complex dtype; on every device."""
import cmath

import numpy as np
import pytest

import tack

pytestmark = pytest.mark.every_device


@tack.kernel
def axpy(a, x, y, out):
    for i in range(x.shape[0]):
        out[i] = a * x[i] + y[i] * y[i].conjugate() - 1j * x[i]


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_elementwise_matches_numpy(device, dtype):
    rng = np.random.default_rng(3)
    n = 37
    x = (rng.uniform(-2, 2, n) + 1j * rng.uniform(-2, 2, n)).astype(dtype)
    y = (rng.uniform(-2, 2, n) + 1j * rng.uniform(-2, 2, n)).astype(dtype)
    out = np.zeros(n, dtype)
    axpy(1.5, x, y, out)
    want = 1.5 * x + y * np.conj(y) - 1j * x
    tol = 1e-5 if dtype == np.complex64 else 1e-13
    np.testing.assert_allclose(out, want, rtol=tol, atol=tol)


@tack.kernel
def mandelbrot(c, count, limit):
    for i in range(c.shape[0]):
        z = 0j
        n = 0
        while n < limit and abs(z) <= 2.0:
            z = z * z + c[i]
            n += 1
        count[i] = n


def _mandel_ref(c, limit):
    out = np.zeros(c.shape, np.int32)
    for i, ci in enumerate(c):
        z, n = 0j, 0
        while n < limit and abs(z) <= 2.0:
            z = z * z + complex(ci)
            n += 1
        out[i] = n
    return out


def test_mandelbrot_on_a_complex_grid(device):
    xs = np.linspace(-2.0, 0.6, 24)
    ys = np.linspace(-1.2, 1.2, 16)
    c = (xs[None, :] + 1j * ys[:, None]).ravel()  # complex128
    count = np.zeros(c.shape, np.int32)
    mandelbrot(c, count, 60)
    np.testing.assert_array_equal(count, _mandel_ref(c, 60))


def test_julia_writes_a_2d_complex64_array(device):
    xs = np.linspace(-1.5, 1.5, 12, dtype=np.float32)
    z0 = (xs[None, :] + 1j * xs[:, None]).astype(np.complex64)
    out = np.zeros_like(z0)
    c = -0.8 + 0.156j
    julia2(z0, out, 8)
    want = z0.astype(np.complex128).copy()
    for _ in range(8):
        live = np.abs(want) <= 2.0
        want[live] = want[live] ** 2 + c
    np.testing.assert_allclose(out, want.astype(np.complex64), rtol=2e-4, atol=2e-4)


JC = complex(-0.8, 0.156)


@tack.kernel
def julia2(z0, out, limit):
    for i, j in tack.ndindex(z0.shape[0], z0.shape[1]):
        z = z0[i, j]
        for _ in range(limit):
            if abs(z) > 2.0:
                break
            z = z ** 2 + complex(-0.8, 0.156)
        out[i, j] = z


@tack.kernel
def updates(x, z, r, idx):
    for i in range(idx.shape[0]):
        x[idx[i]] += z[i]      # shared elements: an atomic add per part
        x[idx[i]] -= r[i]      # a real value changes only the real part


@tack.kernel
def own_updates(x, z):
    for i in range(x.shape[0]):
        x[i] *= z[i]           # the iteration's own element: plain
        x[i] += 2.0
        x[i] /= z[i]


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_augmented_updates(device, dtype):
    n = 40
    idx = (np.arange(n) % 5).astype(np.int32)
    z = (np.arange(n) * 0.25 + 1j * np.arange(n) * 0.5).astype(dtype)
    r = np.arange(n, dtype=np.float64) * 0.125
    x = np.zeros(5, dtype)
    updates(x, z, r, idx)
    want = np.zeros(5, np.complex128)
    np.add.at(want, idx, z.astype(np.complex128) - r)
    np.testing.assert_allclose(x, want, rtol=1e-6)
    y = (1 + np.arange(8) + 1j).astype(dtype)
    w = (2 - 1j * np.arange(8)).astype(dtype)
    want = (y * w + 2.0) / w
    own_updates(y, w)
    np.testing.assert_allclose(y, want, rtol=1e-5)


@tack.kernel
def store_parts(x, re, out):
    for i in range(x.shape[0]):
        out[i] = re[i]                       # a real value stores as (v, 0)
        x[i] = complex(x[i].imag, x[i].real)


def test_real_store_and_swap_on_strided_views(device):
    base = (np.arange(12) + 1j * (100 + np.arange(12))).astype(np.complex128)
    x = base[::3]  # a strided complex view, written in place
    re = np.array([1.5, -2.0, 3.25, 4.0])
    out = np.full(4, 9 + 9j, np.complex64)
    store_parts(x, re, out)
    np.testing.assert_array_equal(out, re.astype(np.complex64))
    want = np.arange(12) + 1j * (100 + np.arange(12))
    want[::3] = want[::3].imag + 1j * want[::3].real
    np.testing.assert_array_equal(base, want)


def test_variant_key_names_the_complex_dtype(device):
    x = np.ones(4, np.complex64)
    out = np.zeros(4, np.complex64)
    axpy(2.0, x, x, out)
    axpy(2.0, x.astype(np.complex128), x.astype(np.complex128), out.astype(np.complex128))
    types = {tuple(p[0] for p in k[0][1:]) for k in axpy.variants()}
    assert ("complex64", "complex64", "complex64") in types
    assert ("complex128", "complex128", "complex128") in types
    assert all(k[1] == () for k in axpy.variants())


def test_tack_arrays_of_complex_dtypes(device):
    x = tack.zeros((3, 2), dtype=tack.complex64, device=device)
    assert x.dtype == tack.complex64 and x.shape == (3, 2)
    assert x.numpy().dtype == np.complex64 and x.numpy().shape == (3, 2)
    y = tack.array(np.array([1 + 2j, 3 - 4j]), device=device)
    assert y.dtype == tack.complex128
    np.testing.assert_array_equal(y.numpy(), [1 + 2j, 3 - 4j])
    z = tack.empty(2, dtype=np.complex128, device=device)
    axpy(0.0, y, y, z)
    np.testing.assert_allclose(z.numpy(), [5 - 1j * (1 + 2j), 25 - 1j * (3 - 4j)])
    assert tack.complex128.numpy == np.dtype(np.complex128)


@tack.kernel
def bad_vector_store(x, v):
    for i in range(x.shape[0]):
        x[i] = v[i]


@tack.kernel
def bad_complex_into_real(x, out):
    for i in range(x.shape[0]):
        out[i] = x[i]


def test_mistakes_are_compile_errors(device):
    x = np.zeros(3, np.complex64)
    v = tack.zeros(3, dtype=tack.vec2f, device=device)
    with pytest.raises(tack.CompileError, match="complex"):
        bad_vector_store(x if device.host_memory else tack.array(x, device=device), v)
    with pytest.raises(tack.CompileError, match="not an array of complex numbers"):
        bad_complex_into_real(x, np.zeros(3, np.float32))
