"""Arrays a kernel allocates for each iteration: tack.local(shape, dtype)
(issue 19, item 3, in part).  Zeroed where the line runs, indexed with
runtime integers, one index per dimension, shape and len() known; every
device gives NumPy's results, and the CUDA dialect's PTX passes ptxas."""
import numpy as np
import pytest

import tack
from test_cuda import check_ptx, needs_nvrtc

pytestmark = pytest.mark.every_device

N = 3


@tack.kernel
def small_matmul(a, b, out):
    # Each iteration multiplies its own 3x3 matrices, held in local arrays.
    for i in range(a.shape[0]):
        m = tack.local((N, N), tack.f64)
        for r in range(N):
            for c in range(N):
                acc = 0.0
                for k in range(N):
                    acc += a[i, r, k] * b[i, k, c]
                m[r, c] = acc
        for r in range(N):
            for c in range(N):
                out[i, r, c] = m[r, c]


@tack.kernel
def histogram_per_row(x, out):
    # A private 4-bin histogram per row, indexed by data; zero each time.
    for i in range(x.shape[0]):
        h = tack.local(4, tack.i32)
        for j in range(x.shape[1]):
            h[x[i, j] % 4] += 1
        for k in range(len(h)):
            out[i, k] = h[k]


@tack.kernel
def zeroed_each_trip(out):
    for i in range(out.shape[0]):
        total = 0.0
        for trip in range(3):
            t = tack.local((2, 2))       # f32 by default
            t[trip % 2, 1] += 1.0
            total += t[0, 1] + t[1, 1]
        out[i] = total + t.shape[0] * 10


@tack.kernel
def three_d(out):
    for i in range(out.shape[0]):
        c = tack.local((2, 3, 4), tack.i64)
        for p in range(2):
            for q in range(3):
                for r in range(4):
                    c[p, q, r] = p * 100 + q * 10 + r + i
        out[i] = c[1, 2, 3] - c[0, 0, 0]


def test_matrices_in_local_arrays(device):
    rng = np.random.default_rng(0)
    a, b = rng.random((20, N, N)), rng.random((20, N, N))
    out = np.zeros((20, N, N))
    small_matmul(a, b, out)
    np.testing.assert_allclose(out, a @ b, rtol=1e-13)


def test_runtime_indices_and_len(device):
    x = np.random.default_rng(1).integers(0, 100, (50, 37)).astype(np.int64)
    out = np.zeros((50, 4), np.int32)
    histogram_per_row(x, out)
    expected = np.stack([np.bincount(row % 4, minlength=4) for row in x]).astype(np.int32)
    np.testing.assert_array_equal(out, expected)


def test_zeroed_where_the_line_runs(device):
    out = np.zeros(5, np.float32)
    zeroed_each_trip(out)
    np.testing.assert_array_equal(out, np.full(5, 3.0 + 20.0, np.float32))


def test_three_dimensions(device):
    out = np.zeros(6, np.int64)
    three_d(out)
    np.testing.assert_array_equal(out, np.full(6, 123))


def test_errors_name_the_line(device):
    @tack.kernel
    def wrong_indices(out):
        for i in range(out.shape[0]):
            m = tack.local((2, 2))
            out[i] = m[i]

    @tack.kernel
    def runtime_shape(out, n):
        for i in range(out.shape[0]):
            m = tack.local(n)
            out[i] = m[0]

    @tack.kernel
    def bad_dtype(out):
        for i in range(out.shape[0]):
            m = tack.local(4, tack.vec3f)
            out[i] = m[0]

    # A scalar assigned over an own array's name (this crashed the
    # compiler: the fuzzer's tests/fuzz/regress_kernel/scalar_over_shared_array).
    @tack.kernel
    def scalar_over_array(x, out):
        for i in range(out.shape[0]):
            m = tack.local((4,), tack.f32)
            m = x[i]
            out[i] = m

    for kernel, args, words in ((wrong_indices, (np.zeros(2),), "2 dimensions"),
                                (runtime_shape, (np.zeros(2), 3), "known when the kernel is compiled"),
                                (bad_dtype, (np.zeros(2),), "dtype"),
                                (scalar_over_array, (np.ones(2, np.float32), np.zeros(2, np.float32)),
                                 "'m' holds an array elsewhere")):
        with pytest.raises(tack.CompileError) as e:
            kernel(*args)
        assert words in str(e.value) and e.value.lineno is not None, str(e.value)


@needs_nvrtc
def test_local_arrays_as_ptx(device):
    if device.name != "cpu":
        pytest.skip("PTX is generated once, from the CPU run")
    check_ptx(small_matmul, np.zeros((2, N, N)), np.zeros((2, N, N)), np.zeros((2, N, N)))
    check_ptx(histogram_per_row, np.zeros((2, 5), np.int64), np.zeros((2, 4), np.int32))


@tack.kernel
def out_of_range(out, k):
    for i in range(out.shape[0]):
        m = tack.local((2, 3), tack.i32)
        m[1, k] = 5
        out[i] = m[1, 2]


def test_debug_mode_checks_local_arrays(device):
    tack.set_debug(True)
    try:
        out = np.zeros(3, np.int32)
        out_of_range(out, 2)
        np.testing.assert_array_equal(out, 5)
        with pytest.raises(IndexError) as e:
            out_of_range(out, 3)
        msg = str(e.value)
        assert "'m'" in msg and "(1, 3)" in msg and "(2, 3)" in msg, msg
    finally:
        tack.set_debug(False)
