"""Arrays a kernel makes before its launch and returns, as Numba's
functions do (`out = np.empty_like(x)` ... `return out`): shape and dtype
as NumPy gives them, on the call's device, returned beside the kernel's own
values; against NumPy on every device."""
import numpy as np
import pytest

import tack

pytestmark = pytest.mark.every_device


def host(a):
    return a.numpy() if isinstance(a, tack.Array) else a


@tack.kernel
def double(x):
    n = x.shape[0]
    out = np.empty(n)
    for i in range(n):
        out[i] = 2.0 * x[i]
    return out


@tack.kernel
def moments(x, scale):
    n, m = x.shape[0], x.shape[1]
    centered = np.empty_like(x)
    counts = np.zeros((n,), dtype=np.int32)
    flags = np.full(n, 7, dtype=np.int64)
    s = 0.0
    for i in range(n):
        for j in range(m):
            centered[i, j] = x[i, j] * scale
            s += x[i, j]
            if x[i, j] > 0.5:
                counts[i] += 1
        flags[i] -= 1
    return centered, s, counts, flags


def test_numba_style_allocation(device):
    x = np.linspace(-1, 1, 9)
    out = host(double(tack.array(x, device=device)))
    assert out.dtype == np.float64
    np.testing.assert_array_equal(out, 2.0 * x)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_several_arrays_and_a_sum(device, dtype):
    x = np.random.default_rng(0).random((5, 4)).astype(dtype)
    centered, s, counts, flags = moments(tack.array(x, device=device), 3.0)
    assert host(centered).dtype == dtype and host(counts).dtype == np.int32
    np.testing.assert_allclose(host(centered), x * 3.0, rtol=1e-6)
    assert s == pytest.approx(float(x.astype(np.float64).sum()), rel=1e-6)
    np.testing.assert_array_equal(host(counts), (x > 0.5).sum(1))
    np.testing.assert_array_equal(host(flags), np.full(5, 6))
    kernel = getattr(moments, "kernel", moments)  # the test harness's wrapper takes no keywords
    again = kernel(x=tack.array(x, device=device), scale=3.0)
    np.testing.assert_array_equal(host(again[2]), host(counts))


def test_empty_input_and_errors(device):
    assert host(double(tack.array(np.zeros(0), device=device))).shape == (0,)

    @tack.kernel
    def bad_shape(x):
        out = np.empty(x.shape[0] - 10)
        for i in range(x.shape[0]):
            out[i] = x[i]
        return out

    with pytest.raises(TypeError, match="'out' = np.empty"):
        bad_shape(tack.array(np.zeros(3), device=device))
    with pytest.raises(TypeError, match="missing required argument 'x'"):
        double()
