"""Rows, sequences, shapes and tuples as Python code writes them (issue 19,
items 3 and 8, in part): `b[i][j]`, `row = b[i]` then `row[j]`, `for v in
seq` over arrays, rows and tuples, `n, m = a.shape`, tuple literals held in
names (constant tables such as the four directions of a grid), `len()` of
all of them.  Each kernel runs on every device against NumPy, and as PTX."""
import numpy as np
import pytest

import tack
from test_cuda import check_ptx, needs_nvrtc

pytestmark = pytest.mark.every_device


@tack.kernel
def neighbours(x, out):
    for i, j in tack.ndindex(x.shape[0], x.shape[1]):
        dirs = ((1, 0), (-1, 0), (0, 1), (0, -1))
        n, m = x.shape
        s = 0.0
        for d in dirs:
            a = i + d[0]
            b = j + d[1]
            if a >= 0 and a < n and b >= 0 and b < m:
                s += x[a, b]
        out[i, j] = s


@tack.kernel
def row_dot(b, out):
    for i in range(b.shape[0]):
        row = b[i]
        t = 0.0
        for j in range(len(row)):
            t += row[j] * b[i][j]
        out[i] = t


@tack.kernel
def row_writes(b, scale):
    for i in range(b.shape[0]):
        row = b[i]
        for j in range(row.shape[0]):
            row[j] = row[j] * scale + i


@tack.kernel
def sum_rows_by_iteration(b, out):
    for i in range(b.shape[0]):
        t = 0.0
        for v in b[i]:
            t += v
        out[i] = t


@tack.kernel
def weights(f, out):
    # A lattice-Boltzmann style table of weights and velocities.
    for i in range(f.shape[0]):
        w = (4.0 / 9.0, 1.0 / 9.0, 1.0 / 9.0)
        c = (0.0, 1.0, -1.0)  # float literals: the kernel's float type
        rho = 0.0
        mom = 0.0
        for k in range(len(w)):
            rho += w[k] * f[i, k]
            mom += w[k] * f[i, k] * c[k]
        out[i, 0] = rho
        out[i, 1] = mom


@tack.kernel
def pairs(out):
    for i in range(out.shape[0]):
        t = 0
        for a, b in ((1, 2), (3, 4), (5, 6)):
            t += a * b + i
        out[i] = t


@tack.kernel
def table_3x3(out):
    for i in range(out.shape[0]):
        m = ((1, 2, 3), (4, 5, 6), (7, 8, 9))
        out[i] = m[i % 3][(i + 1) % 3] + m[2, 2] + len(m) * 100 + len(m[0]) * 1000


def test_direction_table_and_shape_tuple(device):
    x = np.random.default_rng(0).random((5, 7))
    out = np.zeros_like(x)
    neighbours(x, out)
    p = np.pad(x, 1)
    np.testing.assert_allclose(out, p[:-2, 1:-1] + p[2:, 1:-1] + p[1:-1, :-2] + p[1:-1, 2:],
                               rtol=1e-15)


def test_rows_read_through_a_name_and_chained_indices(device):
    b = np.random.default_rng(1).random((6, 4))
    out = np.zeros(6)
    row_dot(b, out)
    np.testing.assert_allclose(out, (b * b).sum(axis=1), rtol=1e-15)


def test_rows_write_through(device):
    b = np.arange(12.0).reshape(3, 4)
    expected = b * 2 + np.arange(3)[:, None]
    row_writes(b, 2.0)
    np.testing.assert_array_equal(b, expected)


def test_iterating_an_array_row(device):
    b = np.random.default_rng(2).random((5, 3))
    out = np.zeros(5)
    sum_rows_by_iteration(b, out)
    np.testing.assert_allclose(out, b.sum(axis=1), rtol=1e-15)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_float_tuples_take_the_kernels_float_type(device, dtype):
    f = np.random.default_rng(3).random((8, 3)).astype(dtype)
    out = np.zeros((8, 2), dtype)
    weights(f, out)
    w = np.array([4 / 9, 1 / 9, 1 / 9], dtype)
    c = np.array([0, 1, -1], dtype)
    np.testing.assert_allclose(out[:, 0], (f * w).sum(axis=1), rtol=1e-6 if dtype == np.float32 else 1e-15)
    np.testing.assert_allclose(out[:, 1], (f * w * c).sum(axis=1), rtol=1e-6 if dtype == np.float32 else 1e-15,
                               atol=1e-7)
    assert "f64" not in weights.inspect_ir(f, out) if dtype == np.float32 else True


def test_unpacking_pairs_of_a_tuple(device):
    out = np.zeros(4, np.int64)
    pairs(out)
    np.testing.assert_array_equal(out, 2 + 12 + 30 + 3 * np.arange(4))


def test_two_dimensional_table(device):
    out = np.zeros(6, np.int64)
    table_3x3(out)
    m = np.arange(1, 10).reshape(3, 3)
    i = np.arange(6)
    np.testing.assert_array_equal(out, m[i % 3, (i + 1) % 3] + 9 + 3300)


def test_ragged_tuple_is_refused(device):
    @tack.kernel
    def ragged(out):
        for i in range(out.shape[0]):
            t = ((1, 2), (3,))
            out[i] = t[0][0]

    with pytest.raises(tack.CompileError) as e:
        ragged(np.zeros(2))
    assert "tuple" in str(e.value) and e.value.lineno is not None


@needs_nvrtc
def test_views_as_ptx(device):
    if device.name != "cpu":
        pytest.skip("PTX is generated once, from the CPU run")
    check_ptx(neighbours, np.zeros((3, 3)), np.zeros((3, 3)))
    check_ptx(row_dot, np.zeros((3, 3)), np.zeros(3))
    check_ptx(weights, np.zeros((3, 3), np.float32), np.zeros((3, 2), np.float32))
    check_ptx(pairs, np.zeros(3, np.int64))
