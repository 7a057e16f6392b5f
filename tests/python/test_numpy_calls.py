"""Local arrays and NumPy calls written as Python writes them: [0.0] * n,
[a, b, c], np.zeros/empty/ones/full with constant shapes, keyword arguments
of built-in and NumPy calls, np.searchsorted and the scalar NumPy functions
Numba users call in prange loops; on every device."""
import numpy as np
import pytest

import tack

pytestmark = pytest.mark.every_device


@tack.kernel
def local_arrays(x, out):
    for i in range(x.shape[0]):
        acc = [0.0] * 4
        w = [x[i], 2.0 * x[i], 3.0]
        h = np.zeros(4)
        m = np.empty((3, 3), dtype=np.uint8)
        o = np.ones(3, dtype=np.int32)
        f = np.full(2, 0.5)
        for k in range(4):
            acc[k] += x[i] * k
            h[k] = acc[k] + 1.0
        for r in range(3):
            for c in range(3):
                m[r, c] = r * 3 + c
        out[i, 0] = acc[3]
        out[i, 1] = w[0] + w[1] + w[2]
        out[i, 2] = h[2]
        out[i, 3] = m[2, 1] + len(o) + o[0]
        out[i, 4] = f[0] + f[1]


def test_local_arrays_from_lists_and_numpy_makers(device):
    x = np.linspace(-1.0, 2.0, 9)
    out = np.zeros((9, 5))
    local_arrays(x, out)
    want = np.stack([3 * x, 3 * x + 3.0, 2 * x + 1.0, np.full(9, 7 + 3 + 1.0), np.ones(9)], 1)
    np.testing.assert_allclose(out, want, rtol=1e-12)


@tack.kernel
def histogram(x, edges, counts, pos):
    for i in range(x.shape[0]):
        k = np.searchsorted(edges, x[i], side='right')
        pos[i, 0] = k
        pos[i, 1] = np.searchsorted(edges, x[i])
        pos[i, 2] = np.searchsorted(edges, x[i], 'left')
        if k > 0 and k < edges.shape[0]:
            counts[k - 1] += 1


def test_searchsorted_with_side_keyword(device):
    edges = np.array([0.0, 0.5, 1.0, 1.5, 2.0])
    x = np.array([-1.0, 0.0, 0.25, 0.5, 0.5, 1.2, 2.0, 3.0, 1.5, 0.99])
    counts = np.zeros(4, np.int64)
    pos = np.zeros((x.size, 3), np.int64)
    histogram(x, edges, counts, pos)
    np.testing.assert_array_equal(pos[:, 0], np.searchsorted(edges, x, side='right'))
    np.testing.assert_array_equal(pos[:, 1], np.searchsorted(edges, x))
    np.testing.assert_array_equal(pos[:, 2], np.searchsorted(edges, x, side='left'))
    k = np.searchsorted(edges, x, side='right')
    want = np.bincount(k[(k > 0) & (k < 5)] - 1, minlength=4)
    np.testing.assert_array_equal(counts, want)


@tack.kernel
def scalar_funcs(x, y, out):
    for i in range(x.shape[0]):
        out[i, 0] = np.clip(x[i], -1.0, 1.0)
        out[i, 1] = np.clip(x[i], a_min=-0.5, a_max=0.5)
        out[i, 2] = np.sign(x[i])
        out[i, 3] = np.floor(x[i])
        out[i, 4] = np.square(x[i])
        out[i, 5] = np.minimum(x[i], y[i])
        out[i, 6] = np.maximum(x[i], y[i])
        out[i, 7] = np.heaviside(x[i], 0.5)
        out[i, 8] = np.where(x[i] > y[i], x[i], y[i])
        out[i, 9] = np.logaddexp(x[i], y[i])
        out[i, 10] = np.sinc(x[i])
        out[i, 11] = np.rint(x[i])
        out[i, 12] = np.fix(x[i])
        out[i, 13] = np.reciprocal(y[i])
        out[i, 14] = np.negative(x[i])
        out[i, 15] = float(np.signbit(x[i]))
        out[i, 16] = complex(real=x[i], imag=y[i]).imag
        out[i, 17] = np.round(x[i]) + np.around(-x[i]) * 10
        out[i, 18] = np.true_divide(x[i], y[i])


def test_scalar_numpy_functions_match_numpy(device):
    x = np.array([-2.5, -1.0, -0.5, 0.0, 0.3, 0.5, 1.5, 2.5, 3.7])
    y = np.array([1.0, -2.0, 0.25, 0.0, 2.0, -0.5, 1.5, 4.0, -3.0])
    y[3] = 0.75
    out = np.zeros((x.size, 19))
    scalar_funcs(x, y, out)
    want = [np.clip(x, -1, 1), np.clip(x, -0.5, 0.5), np.sign(x), np.floor(x), np.square(x),
            np.minimum(x, y), np.maximum(x, y), np.heaviside(x, 0.5), np.where(x > y, x, y),
            np.logaddexp(x, y), np.sinc(x), np.rint(x), np.fix(x), np.reciprocal(y),
            np.negative(x), np.signbit(x).astype(float), y, np.round(x) + np.around(-x) * 10,
            np.true_divide(x, y)]
    np.testing.assert_allclose(out, np.stack(want, 1), rtol=1e-12, atol=1e-15)


@tack.kernel
def int_sign(a, out):
    for i in range(a.shape[0]):
        out[i] = np.sign(a[i]) + np.clip(a[i], -2, 2) * 10


def test_integer_sign_and_clip_keep_integers(device):
    a = np.array([-5, -1, 0, 1, 7], np.int32)
    out = np.zeros(5, np.int32)
    int_sign(a, out)
    np.testing.assert_array_equal(out, np.sign(a) + np.clip(a, -2, 2) * 10)


@tack.kernel
def local_with_keyword(x, out):
    for i in range(x.shape[0]):
        t = tack.local(shape=3, dtype=tack.i32)
        t[1] = 5
        out[i] = x[i] + t[1] + t[0]


def test_tack_local_with_keywords(device):
    x = np.arange(4, dtype=np.float32)
    out = np.zeros(4, np.float32)
    local_with_keyword(x, out)
    np.testing.assert_array_equal(out, x + 5)


@tack.kernel
def unknown_numpy(x):
    for i in range(x.shape[0]):
        x[i] = np.nanmean(x[i])


@tack.kernel
def bad_keyword(x):
    for i in range(x.shape[0]):
        x[i] = np.searchsorted(x, 1.0, sorter=x)


@tack.kernel
def keyword_to_math(x):
    for i in range(x.shape[0]):
        x[i] = abs(x=x[i])


@tack.kernel
def bad_side(x):
    for i in range(x.shape[0]):
        x[i] = np.searchsorted(x, 1.0, side='middle')


@tack.kernel
def zeros_not_constant(x, n):
    for i in range(x.shape[0]):
        a = np.zeros(n)
        x[i] = a[0]


def test_refusals_name_the_call(device):
    x = np.zeros(3)
    with pytest.raises(tack.CompileError, match="'numpy.nanmean' is a NumPy function kernels do not support"):
        unknown_numpy(x)
    with pytest.raises(tack.CompileError, match="no keyword argument 'sorter'"):
        bad_keyword(x)
    with pytest.raises(tack.CompileError, match=r"abs\(\) takes no keyword arguments"):
        keyword_to_math(x)
    with pytest.raises(tack.CompileError, match="side is 'left' or 'right'"):
        bad_side(x)
    with pytest.raises(tack.CompileError, match="known when the kernel is compiled"):
        zeros_not_constant(x, 3)


@tack.kernel
def roundings(x, out):
    for i in range(x.shape[0]):
        out[i, 0] = np.rint(x[i])
        out[i, 1] = np.round(x[i])
        out[i, 2] = tack.round(x[i])   # Warp's: half away from zero
        out[i, 3] = tack.rint(x[i])
        out[i, 4] = tack.frac(x[i])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_rounding_edges_match_numpy(device, dtype):
    # np.rint / np.round are floats: nan, inf and -0.0 kept, huge values
    # not pushed through an integer (they had been rounded to i64)
    x = np.array([2.5, -2.5, 3.5, -0.5, -0.3, 0.49999999999999994, 1.5, -7.75, 0.0, -0.0,
                  np.nan, np.inf, -np.inf, 1e20, -3e30, 4503599627370497.0], dtype)
    out = np.zeros((x.size, 5), dtype)
    roundings(x, out)
    with np.errstate(invalid="ignore"):
        t = np.trunc(x)
        away = np.where(np.abs(x - t) >= 0.5, t + np.copysign(1, x), t).astype(dtype)
        want = [np.rint(x), np.round(x), away, np.rint(x), x - t]
    for k, w in enumerate(want):
        np.testing.assert_array_equal(out[:, k], w, err_msg="column %d" % k)
        np.testing.assert_array_equal(np.signbit(out[:, k]), np.signbit(w), err_msg="sign, column %d" % k)


@tack.kernel
def warp_atomics(slots, seen):
    for i in range(seen.shape[0]):
        seen[i] = tack.atomic_exch(slots, 0, i + 1)   # Warp's atomic_exch: the old value
        tack.atomic_cas(slots, 1, 0, i + 1)            # the first thread's i + 1 wins


def test_warp_atomic_names(device):
    slots = np.zeros(2, np.int32)
    seen = np.zeros(64, np.int32)
    warp_atomics(slots, seen)
    # every value but the last written is seen exactly once, with the first 0
    assert sorted(seen.tolist() + [int(slots[0])]) == list(range(65))
    assert 1 <= slots[1] <= 64
