"""Issue 27, the vocabulary of Warp and Numba kernels: tack.where and
Warp's older tack.select (value_if_false first) on scalars, vectors and
complex numbers; NumPy's reductions of 1-D local arrays (np.sum a.sum()
np.prod np.max np.min np.dot) as Numba users write them; on every device."""
import cmath
import math

import numpy as np
import pytest

import tack

pytestmark = pytest.mark.every_device


@tack.kernel
def choose(x, out, vout):
    for i in range(x.shape[0]):
        c = x[i] > 0.0
        out[i, 0] = tack.where(c, x[i], -2.0 * x[i])
        out[i, 1] = tack.select(c, x[i], -2.0 * x[i])  # Warp < 1.10: value_if_false first
        out[i, 2] = tack.where(x[i] > 0.5, 1, 0)
        z = tack.where(c, complex(x[i], 1.0), 0.5)
        out[i, 3] = z.real + 10.0 * z.imag
        vout[i] = tack.where(c, tack.vec3f(x[i], 1.0, 2.0), tack.vec3f(0.0, x[i], 3.0)) + \
            tack.select(c, tack.vec3f(1.0, 1.0, 1.0), tack.vec3f(4.0, 4.0, 4.0))


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_where_and_select_on_scalars_vectors_and_complex(device, dt):
    x = np.linspace(-1.0, 1.0, 11).astype(dt)
    out = np.zeros((11, 4), dt)
    vout = tack.zeros((11,), dtype=tack.vec3f, device=device)
    choose(x, out, vout)
    c = x > 0
    want = np.stack([np.where(c, x, -2 * x), np.where(c, -2 * x, x), (x > 0.5).astype(dt),
                     np.where(c, x + 10.0, 0.5)], 1)
    np.testing.assert_allclose(out, want, rtol=1e-6)
    vw = np.where(c[:, None], np.stack([x, np.ones_like(x), 2 * np.ones_like(x)], 1),
                  np.stack([0 * x, x, 3 * np.ones_like(x)], 1)) + np.where(c[:, None], 4.0, 1.0)
    np.testing.assert_allclose(vout.numpy(), vw, rtol=1e-6)


def test_where_and_select_outside_kernels_follow_numpy():
    c = np.array([True, False])
    np.testing.assert_array_equal(tack.where(c, 1, 2), [1, 2])
    np.testing.assert_array_equal(tack.select(c, 1, 2), [2, 1])


@tack.func
def _reductions(a, b, xi, out, i):
    for j in range(5):
        a[j] = xi - j
        b[j] = xi * j + 1
    out[i, 0] = np.sum(a)
    out[i, 1] = a.sum() + b.sum()
    out[i, 2] = np.dot(a, b)
    out[i, 3] = a.dot(b)
    out[i, 4] = np.max(a) + 10 * a.min()
    out[i, 5] = np.amin(b) - a.max()
    out[i, 6] = np.prod(b)
    out[i, 7] = a.prod()


@tack.kernel
def reduce_locals(x, out):
    for i in range(x.shape[0]):
        a = tack.local((5,), tack.f32)
        b = np.zeros(5, dtype=np.float32)
        _reductions(a, b, x[i], out, i)


@tack.kernel
def reduce_locals_f64(x, out):
    for i in range(x.shape[0]):
        a = np.zeros(5)
        b = tack.local((5,), tack.f64)
        _reductions(a, b, x[i], out, i)


@tack.kernel
def reduce_locals_i32(x, out):
    for i in range(x.shape[0]):
        a = tack.local((5,), tack.i32)
        b = np.zeros(5, dtype=np.int32)
        _reductions(a, b, x[i], out, i)


@tack.kernel
def reduce_locals_i64(x, out):
    for i in range(x.shape[0]):
        a = np.zeros(5, dtype=np.int64)
        b = tack.local((5,), tack.i64)
        _reductions(a, b, x[i], out, i)


REDUCE = {np.float32: reduce_locals, np.float64: reduce_locals_f64, np.int32: reduce_locals_i32,
          np.int64: reduce_locals_i64}


@pytest.mark.parametrize("dt", [np.float32, np.float64, np.int32, np.int64])
def test_numpy_reductions_of_local_arrays(device, dt):
    x = np.arange(-3, 5).astype(dt)
    out = np.zeros((8, 8), dt)
    REDUCE[dt](x, out)
    a = x[:, None] - np.arange(5).astype(dt)
    b = x[:, None] * np.arange(5).astype(dt) + 1
    want = np.stack([a.sum(1), a.sum(1) + b.sum(1), (a * b).sum(1), (a * b).sum(1),
                     a.max(1) + 10 * a.min(1), b.min(1) - a.max(1), b.prod(1), a.prod(1)], 1)
    np.testing.assert_allclose(out, want.astype(dt), rtol=1e-6)


@tack.kernel
def reduce_list(x, out):
    for i in range(x.shape[0]):
        w = [x[i], 2.0 * x[i], 0.5]
        acc = [0.0] * 3
        for k in range(3):
            acc[k] = w[k] * w[k]
        out[i] = np.sum(acc) + np.max(w)


def test_reductions_of_lists(device):
    x = np.linspace(-2.0, 2.0, 9)
    out = np.zeros(9)
    reduce_list(x, out)
    w = np.stack([x, 2 * x, np.full_like(x, 0.5)], 1)
    np.testing.assert_allclose(out, (w * w).sum(1) + w.max(1), rtol=1e-12)


def _compile_error(src_kernel, *args):
    with pytest.raises(tack.CompileError) as e:
        src_kernel(*args)
    return e.value


def test_reduction_refusals_name_the_line():
    @tack.kernel
    def two_d(x, out):
        for i in range(x.shape[0]):
            a = tack.local((2, 2), tack.f32)
            out[i] = np.sum(a)

    @tack.kernel
    def lengths(x, out):
        for i in range(x.shape[0]):
            a = tack.local((2,), tack.f32)
            b = tack.local((3,), tack.f32)
            out[i] = np.dot(a, b)

    @tack.kernel
    def axis(x, out):
        for i in range(x.shape[0]):
            a = tack.local((2,), tack.f32)
            out[i] = np.sum(a, axis=0)

    @tack.kernel
    def not_local(x, out):
        for i in range(x.shape[0]):
            out[i] = np.sum(x[i])

    x, out = np.zeros(2, np.float32), np.zeros(2, np.float32)
    for k, words in ((two_d, "not 1-D"), (lengths, "2 and 3 elements"), (axis, "axis="),
                     (not_local, "not one")):
        err = _compile_error(k, x, out)
        assert words in str(err)
        assert err.lineno is not None and ("sum" in str(err) or "dot" in str(err))


# ---- complex local arrays ----

@tack.kernel
def local_dft(x, out):
    for i in range(x.shape[0]):
        a = tack.local((8,), tack.complex64)
        f = np.zeros(8, dtype=np.complex128)
        for j in range(8):
            a[j] = x[i, j]
        for k in range(8):
            s = 0j
            for j in range(len(a)):
                s += a[j] * cmath.exp(-2j * math.pi * j * k / 8)
            f[k] = s
        for k in range(f.shape[0]):
            out[i, k] = f[k]


def test_complex_local_arrays_hold_a_dft(device):
    rng = np.random.default_rng(1)
    x = (rng.standard_normal((5, 8)) + 1j * rng.standard_normal((5, 8))).astype(np.complex64)
    out = np.zeros((5, 8), np.complex128)
    local_dft(x, out)
    np.testing.assert_allclose(out, np.fft.fft(x.astype(np.complex128), axis=1), atol=1e-5)


@tack.kernel
def local_complex_updates(x, out, parts):
    for i in range(x.shape[0]):
        m = tack.local((2, 3), tack.complex128)
        for r in range(2):
            for c in range(3):
                m[r, c] = complex(x[i] * r, c)
        m[1, 2] += 1j * x[i]
        m[0, 1] *= 2.0
        m[0, 0] = 1.5          # a real value: zero imaginary part
        m[1, 0] -= m[0, 1].conjugate()
        for r in range(2):
            for c in range(3):
                out[i, r, c] = m[r, c]
        parts[i, 0] = m[1, 2].real
        parts[i, 1] = m[1, 2].imag


def test_complex_local_arrays_2d_with_updates(device):
    x = np.linspace(-1.0, 1.0, 5)
    out = np.zeros((5, 2, 3), np.complex128)
    parts = np.zeros((5, 2))
    local_complex_updates(x, out, parts)
    m = (x[:, None, None] * np.arange(2)[None, :, None] + 1j * np.arange(3)[None, None, :])
    m = m.astype(np.complex128)
    m[:, 1, 2] += 1j * x
    m[:, 0, 1] *= 2.0
    m[:, 0, 0] = 1.5
    m[:, 1, 0] -= np.conj(m[:, 0, 1])
    np.testing.assert_allclose(out, m, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(parts, np.stack([m[:, 1, 2].real, m[:, 1, 2].imag], 1), rtol=1e-12)


def test_complex_local_array_refusals_name_the_line():
    @tack.kernel
    def ones(x):
        for i in range(x.shape[0]):
            a = np.ones(3, dtype=np.complex64)
            x[i] = a[0].real

    @tack.kernel
    def vector_in(x):
        for i in range(x.shape[0]):
            a = tack.local((3,), tack.complex64)
            a[0] = tack.vec2f(1.0, 2.0)
            x[i] = a[0].real

    x = np.zeros(2, np.float32)
    for k, words in ((ones, "of complex numbers is not available"), (vector_in, "holds complex")):
        err = _compile_error(k, x)
        assert words in str(err) and err.lineno is not None


# ---- complex scalar arguments ----

@tack.func
def _rotate(z, w):
    return z * w


@tack.kernel
def complex_scalar_args(x, out, z, w):
    for i in range(x.shape[0]):
        out[i] = _rotate(z, x[i]) + w.conjugate() * 1j + abs(z)


@pytest.mark.parametrize("zt", [complex, np.complex64, np.complex128])
@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_complex_scalar_arguments_follow_numpy(device, zt, dt):
    x = np.linspace(-1.0, 1.0, 7).astype(dt)
    z, w = zt(0.3 - 1.25j), zt(-2.0 + 0.5j)
    # NumPy's result dtype: complex64 only with complex64 scalars and f32 arrays
    want = x * z + np.conj(w) * 1j + abs(z)
    rdt = np.result_type(x.dtype, np.complex64 if zt is np.complex64 else np.complex128)
    out = np.zeros(7, rdt)
    complex_scalar_args(x, out, z, w)
    tol = 1e-6 if rdt == np.complex64 or dt == np.float32 else 1e-14
    np.testing.assert_allclose(out, want.astype(rdt), rtol=tol, atol=tol)


def test_complex_scalar_precision_is_in_the_variant_key():
    @tack.kernel
    def scale(x, out, z):
        for i in range(x.shape[0]):
            out[i] = x[i] * z

    x = np.full(3, 1.0 / 3.0, np.float32)
    o64 = np.zeros(3, np.complex64)
    o128 = np.zeros(3, np.complex128)
    z = 1.0 / 3.0 + 0.1j
    scale(x, o64, np.complex64(z))
    scale(x, o128, z)  # Python's complex is complex128: a variant of its own
    np.testing.assert_array_equal(o64, x * np.complex64(z))
    np.testing.assert_allclose(o128, x.astype(np.float64) * z, rtol=1e-7)
    types = sorted(v.param_sig[2][0] for v in scale.variants())
    assert types == ["complex128", "complex64"]
    # reusing the compiled variants gives what a fresh compile gives
    scale(x, o64, np.complex64(2.0 - 1.0j))
    np.testing.assert_array_equal(o64, x * np.complex64(2.0 - 1.0j))


def test_complex_scalar_argument_in_debug_mode():
    @tack.kernel
    def shift(x, out, z):
        for i in range(x.shape[0]):
            out[i] = x[i] + z

    tack.set_debug(True)
    try:
        x = np.arange(4.0)
        out = np.zeros(4, np.complex128)
        shift(x, out, 1.5 + 2j)
    finally:
        tack.set_debug(False)
    np.testing.assert_array_equal(out, x + (1.5 + 2j))


def test_complex_scalar_of_an_unsupported_precision_is_named():
    if not hasattr(np, "clongdouble") or np.dtype(np.clongdouble).itemsize <= 16:
        pytest.skip("no extended-precision complex here")

    @tack.kernel
    def use(x, z):
        for i in range(x.shape[0]):
            x[i] = z.real

    with pytest.raises(TypeError, match="'z'.*not supported"):
        use(np.zeros(2), np.clongdouble(1 + 1j))


@tack.kernel
def nan_extremes(x, out):
    for i in range(x.shape[0]):
        a = np.zeros(3)
        a[0] = 1.0
        a[1] = x[i]
        a[2] = -2.0
        out[i, 0] = np.max(a)
        out[i, 1] = a.min()


def test_max_and_min_of_local_arrays_propagate_nan_as_numpy(device):
    x = np.array([np.nan, 5.0, -7.0, 0.0])
    out = np.zeros((4, 2))
    nan_extremes(x, out)
    a = np.stack([np.ones(4), x, np.full(4, -2.0)], 1)
    np.testing.assert_array_equal(out, np.stack([np.max(a, 1), np.min(a, 1)], 1))
