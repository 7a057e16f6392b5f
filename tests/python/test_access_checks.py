"""Accesses the launch check cannot prove are checked where they happen.

Outside debug mode, an index read from an array (a gather, a scatter, a
histogram's bin), computed by multiplication, taken under an `if` into an
array other than the one the launch ranges over, or into a `tack.local`
array, is checked per access (issue 26, item 15): a bad one reads 0 or
writes nothing, and the launch raises IndexError naming the kernel, the
line, the array and its shape.  Good accesses of the same launch run.

Arrays that a bad access could overrun sit inside larger buffers of
sentinels, so an unchecked Tack would read the sentinel or write over it.
"""
import numpy as np
import pytest

import tack

pytestmark = pytest.mark.every_device

SENTINEL = -7


@pytest.fixture(autouse=True)
def plain():
    before = tack.get_debug()
    tack.set_debug(False)
    yield
    tack.set_debug(before)


def inside(n, dtype=np.float32, room=64):
    """An array of n elements in the middle of a buffer of sentinels."""
    buf = np.full(n + 2 * room, SENTINEL, dtype=dtype)
    return buf[room:room + n], buf


def untouched(buf, room=64):
    return (buf[:room] == SENTINEL).all() and (buf[-room:] == SENTINEL).all()


def message(kernel, array, shape):
    return (rf"kernel '{kernel}', .*test_access_checks.py:\d+: an index is out of bounds for "
            rf"'{array}' with shape \({shape}\); nothing was read or written there")


@tack.kernel
def gather(x, idx, out):
    for i in range(out.shape[0]):
        out[i] = x[idx[i]]


@tack.kernel
def scatter(idx, v, out):
    for i in range(idx.shape[0]):
        out[idx[i]] = v[i]


@tack.kernel
def histogram(bins, h):
    for i in range(bins.shape[0]):
        h[bins[i]] += 1


@tack.kernel
def fetch_add(bins, h, old):
    for i in range(bins.shape[0]):
        old[i] = tack.atomic_add(h, bins[i], 1)


@tack.kernel
def copy_if(x, out):
    for i in range(x.shape[0]):
        if x[i] > 0:
            out[i] = x[i]


@tack.kernel
def strided(x, k, out):
    for i in range(out.shape[0]):
        out[i] = x[i * k]


@tack.kernel
def csr_matvec(rowptr, col, val, x, y):
    for i in range(y.shape[0]):
        s = 0.0
        for k in range(rowptr[i], rowptr[i + 1]):
            s += val[k] * x[col[k]]
        y[i] = s


@tack.kernel
def periodic(u, n, out):
    for i in range(u.shape[0]):
        for j in range(u.shape[1]):
            out[i, j] = u[(i + 1) % n, j] - u[i, j]


@tack.kernel
def rows_gather(u, rows, out):
    for i in range(out.shape[0]):
        for j in range(out.shape[1]):
            out[i, j] = u[rows[i], j]


@tack.kernel
def local_lookup(keys, out):
    for i in range(out.shape[0]):
        table = tack.local((4,), tack.f32)
        for k in range(4):
            table[k] = k * 10.0
        out[i] = table[keys[i]]


@pytest.mark.parametrize("xt", [np.float32, np.float64, np.int32, np.int64, np.uint8])
@pytest.mark.parametrize("it", [np.int32, np.int64, np.uint32, np.int16])
def test_gathers_in_bounds_match_numpy(device, xt, it):
    rng = np.random.default_rng(1)
    x = (rng.random(50) * 100).astype(xt)
    idx = rng.integers(0, 50, 37).astype(it)
    out = np.zeros(37, xt)
    gather(x, idx, out)
    np.testing.assert_array_equal(out, x[idx])


@pytest.mark.parametrize("bad", [-1, 8, 2**31 - 1, -2**31, 2**40, -2**63, 2**63 - 1])
def test_gather_out_of_bounds_reads_nothing(device, bad):
    x, buf = inside(8)
    x[...] = np.arange(8)
    idx = np.array([3, bad, 5], np.int64)
    out = np.full(3, 99, np.float32)
    with pytest.raises(IndexError, match=message("gather", "x", "8,")):
        gather(x, idx, out)
    # The good reads ran; the bad one gave 0, not a sentinel.
    np.testing.assert_array_equal(out, [3, 0, 5])
    assert untouched(buf)


@pytest.mark.parametrize("bad", [-1, 4, 1000, -2**31])
def test_scatter_out_of_bounds_writes_nothing(device, bad):
    out, buf = inside(4)
    out[...] = 0
    with pytest.raises(IndexError, match=message("scatter", "out", "4,")):
        scatter(np.array([0, bad, 3], np.int32), np.array([1, 2, 3], np.float32), out)
    np.testing.assert_array_equal(out, [1, 0, 0, 3])
    assert untouched(buf)


def test_histogram_bad_bin(device):
    h, buf = inside(4, np.int64)
    h[...] = 0
    bins = np.array([0, 1, 1, 7, 3, 3, 3, -2], np.int32)
    with pytest.raises(IndexError, match=message("histogram", "h", "4,")):
        histogram(bins, h)
    np.testing.assert_array_equal(h, [1, 2, 0, 3])
    assert untouched(buf)
    h[...] = 0
    good = np.random.default_rng(2).integers(0, 4, 10000).astype(np.int32)
    histogram(good, h)
    np.testing.assert_array_equal(h, np.bincount(good, minlength=4))


def test_atomic_whose_value_is_used(device):
    h, buf = inside(2, np.int32)
    h[...] = 0
    old = np.full(3, -1, np.int32)
    with pytest.raises(IndexError, match=message("fetch_add", "h", "2,")):
        fetch_add(np.array([1, 5, 1], np.int32), h, old)
    assert sorted(old[[0, 2]]) == [0, 1] and old[1] == 0
    np.testing.assert_array_equal(h, [0, 2])
    assert untouched(buf)


def test_conditional_store_into_a_shorter_array(device):
    x = np.array([1, -1, 2, -2, 3, 4], np.float32)
    out, buf = inside(4)
    out[...] = 0
    with pytest.raises(IndexError, match=message("copy_if", "out", "4,")):
        copy_if(x, out)
    np.testing.assert_array_equal(out, [1, 0, 2, 0])
    assert untouched(buf)
    out = np.zeros(6, np.float32)
    copy_if(x, out)
    np.testing.assert_array_equal(out, np.where(x > 0, x, 0))


def test_multiplied_index(device):
    x, buf = inside(10)
    x[...] = np.arange(10)
    out = np.zeros(5, np.float32)
    strided(x, 2, out)
    np.testing.assert_array_equal(out, x[::2])
    out = np.full(5, 99, np.float32)
    with pytest.raises(IndexError, match=message("strided", "x", "10,")):
        strided(x, 3, out)  # x[12] at i = 4
    np.testing.assert_array_equal(out, [0, 3, 6, 9, 0])
    assert untouched(buf)


def test_sparse_matrix_vector_product(device):
    rng = np.random.default_rng(3)
    m, n = 40, 30
    dense = np.where(rng.random((m, n)) < 0.2, rng.random((m, n)), 0).astype(np.float32)
    rowptr = np.concatenate([[0], np.cumsum((dense != 0).sum(1))]).astype(np.int64)
    col = np.nonzero(dense)[1].astype(np.int32)
    val = dense[dense != 0]
    x = rng.random(n, dtype=np.float32)
    y = np.zeros(m, np.float32)
    csr_matvec(rowptr, col, val, x, y)
    np.testing.assert_allclose(y, dense @ x, rtol=1e-5)
    col[len(col) // 2] = n  # one column past x
    with pytest.raises(IndexError, match=message("csr_matvec", "x", f"{n},")):
        csr_matvec(rowptr, col, val, x, y)


def test_periodic_wrap_by_a_parameter(device):
    u = np.arange(20, dtype=np.float32).reshape(5, 4)
    out = np.zeros_like(u)
    periodic(u, 5, out)
    np.testing.assert_array_equal(out, np.roll(u, -1, 0) - u)
    # A modulus past the rows reads row 5 of 5 at i = 4.
    with pytest.raises(IndexError, match=message("periodic", "u", "5, 4")):
        periodic(u, 6, out)


def test_rows_of_a_two_dimensional_array(device):
    u = np.arange(12, dtype=np.float32).reshape(3, 4)
    out = np.zeros((2, 4), np.float32)
    rows_gather(u, np.array([2, 0], np.int32), out)
    np.testing.assert_array_equal(out, u[[2, 0]])
    with pytest.raises(IndexError, match=message("rows_gather", "u", "3, 4")):
        rows_gather(u, np.array([2, 3], np.int32), out)


def test_empty_source_array(device):
    out = np.full(2, 5, np.float32)
    with pytest.raises(IndexError, match=message("gather", "x", "0,")):
        gather(np.zeros(0, np.float32), np.array([0, 0], np.int32), out)
    np.testing.assert_array_equal(out, [0, 0])
    # No iterations, nothing to check.
    gather(np.zeros(0, np.float32), np.zeros(0, np.int32), np.zeros(0, np.float32))


def test_local_array_index(device):
    out = np.zeros(3, np.float32)
    local_lookup(np.array([3, 0, 2], np.int32), out)
    np.testing.assert_array_equal(out, [30, 0, 20])
    with pytest.raises(IndexError, match=message("local_lookup", "table", "4,")):
        local_lookup(np.array([3, 4, 2], np.int32), out)
    np.testing.assert_array_equal(out, [30, 0, 20])


def test_checks_are_per_call(device):
    """A failed launch leaves nothing behind for the next one."""
    x = np.arange(8, dtype=np.float32)
    out = np.zeros(2, np.float32)
    with pytest.raises(IndexError):
        gather(x, np.array([0, 9], np.int32), out)
    gather(x, np.array([7, 1], np.int32), out)
    np.testing.assert_array_equal(out, [7, 1])


def test_debug_mode_still_names_the_index(device):
    tack.set_debug(True)
    with pytest.raises(IndexError, match=r"index \(9,\) is out of bounds for 'x' with shape \(8,\)"):
        gather(np.arange(8, dtype=np.float32), np.array([0, 9], np.int32), np.zeros(2, np.float32))


@tack.kernel
def periodic_rows(u, n, m, out):
    for i in range(out.shape[0]):
        for j in range(m):
            # The row does not change along j: its check runs once per row.
            out[i, j] = u[(i - 1) % n, j] + u[(i + 1) % n, j]


def test_loop_invariant_index_checked_before_its_loop(device):
    u = np.arange(30, dtype=np.float64).reshape(6, 5)
    out = np.zeros_like(u)
    periodic_rows(u, 6, 5, out)
    np.testing.assert_array_equal(out, np.roll(u, 1, 0) + np.roll(u, -1, 0))
    # n = 7 reads row 6 of 6 at i = 5 (and i = 0 reads row 6 too).
    out[:] = 0
    with pytest.raises(IndexError, match=message("periodic_rows", "u", "6, 5")):
        periodic_rows(u, 7, 5, out)
    # The good rows were written; the stores that read the bad row were not.
    np.testing.assert_array_equal(out[1:5], (np.roll(u, 1, 0) + np.roll(u, -1, 0))[1:5])


def test_loop_invariant_bad_index_in_a_loop_that_never_runs(device):
    """The check before the loop only tests; only iterations report."""
    u = np.arange(30, dtype=np.float64).reshape(6, 5)
    out = np.full((6, 5), 3.0)
    periodic_rows(u, 7, 0, out)  # no column: nothing is read, nothing to report
    np.testing.assert_array_equal(out, 3.0)


@tack.kernel
def walking(x, start, out):
    for i in range(out.shape[0]):
        k = start
        s = 0.0
        for j in range(4):
            s += x[k]  # k changes inside the loop: checked at each access
            k = k + i
        out[i] = s


def test_index_changed_inside_the_loop_is_checked_per_access(device):
    x, buf = inside(10, np.float64)
    x[:] = np.arange(10)
    out = np.zeros(3)
    walking(x, 1, out)
    np.testing.assert_array_equal(out, [sum(x[1 + i * j] for j in range(4)) for i in range(3)])
    out = np.zeros(4)
    with pytest.raises(IndexError, match=message("walking", "x", "10,")):
        walking(x, 2, out)  # i = 3 reads x[11]
    assert untouched(buf)


def test_extents_of_each_call_are_checked_by_one_variant(device):
    """One compiled variant, different extents per call: each call's own."""
    out = np.zeros((6, 5))
    for rows in (6, 4, 6, 3):
        u = np.arange(rows * 5, dtype=np.float64).reshape(rows, 5)
        o = out[:rows]
        periodic_rows(u, rows, 5, o)
        np.testing.assert_array_equal(o, np.roll(u, 1, 0) + np.roll(u, -1, 0))
        with pytest.raises(IndexError, match=message("periodic_rows", "u", f"{rows}, 5")):
            periodic_rows(u, rows + 1, 5, o)


def test_checked_launches_on_a_stream(device):
    """On a stream's queue the checked launch is waited for before its
    record is read back; results and reports match the default queue."""
    idx = np.array([3, 0, 2], np.int32)
    x = tack.array(np.arange(8, dtype=np.float32), device=device)
    out = tack.zeros((3,), device=device)
    with tack.Stream(device):
        for _ in range(3):
            gather(x, idx, out)
            np.testing.assert_array_equal(out.numpy(), [3, 0, 2])
            with pytest.raises(IndexError, match=message("gather", "x", "8,")):
                gather(x, np.array([3, 8, 2], np.int32), out)
    gather(x, idx, out)
    np.testing.assert_array_equal(out.numpy(), [3, 0, 2])
