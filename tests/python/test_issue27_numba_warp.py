"""Issue 27, the vocabulary of Warp and Numba kernels: tack.where and
Warp's older tack.select (value_if_false first) on scalars, vectors and
complex numbers; NumPy's reductions of 1-D local arrays (np.sum a.sum()
np.prod np.max np.min np.dot) as Numba users write them; on every device."""
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
