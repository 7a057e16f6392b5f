"""Reductions kept in interleaved lanes on the CPU (issue 29, item 1).

In a one-dimensional launch whose body has no loops, each CPU chunk keeps
32 partials of a reduction (16 for 8-byte types): the chunk's j-th
iteration updates lane j mod K, the lanes are combined in a fixed pairwise
tree, then the chunks in chunk order (docs/threads.md).  `lane_model`
computes that order in NumPy, so the CPU's float results are checked bit
for bit, per thread count; every device is checked against NumPy and
math.fsum within rounding, integers exactly."""
import math

import numpy as np
import pytest

import tack
from conftest import assert_bitwise_equal

GRAIN = 32768  # launches without inner loops below this run as one chunk


@tack.kernel
def total(x):
    s = 0.0
    for i in range(x.shape[0]):
        s += x[i]
    return s


@tack.kernel
def total_from_neg_zero(x):
    s = -0.0
    for i in range(x.shape[0]):
        s += x[i]
    return s


@tack.kernel
def lowest(x):
    lo = math.inf
    for i in range(x.shape[0]):
        lo = min(lo, x[i])
    return lo


@tack.kernel
def highest(x):
    hi = -math.inf
    for i in range(x.shape[0]):
        hi = max(hi, x[i])
    return hi


@tack.kernel
def product(x):
    p = 1.0
    for i in range(x.shape[0]):
        p *= x[i]
    return p


@tack.kernel
def int_total(x):
    s = 0
    for i in range(x.shape[0]):
        s += x[i]
    return s


@tack.kernel
def i32_stats(x):
    s = np.int32(0)
    p = np.int32(1)
    lo = np.int32(2147483647)
    hi = np.int32(-2147483648)
    b = np.int32(0)
    for i in range(x.shape[0]):
        s += x[i]
        p *= x[i]
        lo = min(lo, x[i])
        hi = max(hi, x[i])
        b ^= x[i]
    return s, p, lo, hi, b


@tack.kernel
def mixed(x, y):
    s = 0.0               # f64 (y is f64): 16 lanes
    t = np.float32(0)     # f32: 32 lanes
    c = np.int32(0)
    for i in range(x.shape[0]):
        if x[i] < 0:
            continue      # the lane is left as it was
        s -= y[i]
        t += x[i]
        t += x[i] * x[i]  # a second update of the same lane
        c += 1
    return s, t, c


@tack.kernel
def ranged_total(x, a, b, c):
    s = 0.0
    for i in range(a, b, c):
        s += x[i]
    return s


@tack.kernel
def rows_total(x):
    s = 0.0
    for i in range(x.shape[0]):
        for j in range(x.shape[1]):  # an inner loop: no lanes, in order
            s += x[i, j]
    return s


# ---- the documented order, in NumPy ------------------------------------------

def _min(old, v):
    return np.where(v < old, v, old)


def _max(old, v):
    return np.where(v > old, v, old)


OPS = {"add": (np.add, -0.0), "min": (_min, np.inf), "max": (_max, -np.inf),
       "mul": (np.multiply, 1.0)}


def chunks(n, nthreads):
    if nthreads == 1 or n < GRAIN:
        return [(0, n)] if n else []
    size = -(-n // (nthreads * 4))
    return [(b, min(b + size, n)) for b in range(0, n, size)]


def lane_model(x, start, op, nthreads):
    """The CPU's result for a float reduction of x (in the accumulator's
    dtype), one update per iteration."""
    f, ident = OPS[op]
    dt = x.dtype
    k = 16 if dt.itemsize == 8 else 32
    value = dt.type(start)
    with np.errstate(all="ignore"):
        for lo, hi in chunks(len(x), nthreads):
            acc = np.full(k, ident, dt)
            for b in range(lo, hi, k):
                blk = x[b:min(b + k, hi)]
                acc[:len(blk)] = f(acc[:len(blk)], blk)
            w = k // 2
            while w >= 1:
                acc[:w] = f(acc[:w], acc[w:2 * w])
                w //= 2
            value = dt.type(f(value, acc[0]))
    return value


def bits_equal(got, want):
    assert_bitwise_equal(np.array([got], dtype=want.dtype), np.array([want]))


@pytest.fixture
def threads():
    before = tack.get_num_threads()
    yield tack.set_num_threads
    tack.set_num_threads(before)


# ---- bit for bit on the CPU -----------------------------------------------------

@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n", [0, 1, 5, 15, 16, 17, 31, 32, 33, 1000, 4099])
def test_sum_is_the_lane_order(dtype, n, threads):
    """Tiny, empty, not a multiple of the lanes: one chunk, lanes in order."""
    threads(1)
    x = (np.random.default_rng(n).standard_normal(n) * 1e3).astype(dtype)
    bits_equal(dtype(total(x)), lane_model(x, 0.0, "add", 1))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_same_bits_per_thread_count(dtype, threads):
    x = np.random.default_rng(7).standard_normal(100_003).astype(dtype)
    for nt in (1, 2, 3):
        threads(nt)
        got = {dtype(total(x)).tobytes() for _ in range(5)}
        assert len(got) == 1, f"{nt} threads: {got}"
        bits_equal(dtype(total(x)), lane_model(x, 0.0, "add", nt))
        bits_equal(dtype(lowest(x)), lane_model(x, np.inf, "min", nt))
        bits_equal(dtype(product(1 + x / 4e5)), lane_model(1 + x / 4e5, 1.0, "mul", nt))


def test_mixed_widths_skips_and_two_updates(threads):
    rng = np.random.default_rng(3)
    x = rng.standard_normal(70_001).astype(np.float32)
    y = rng.standard_normal(70_001)
    keep = x >= 0
    for nt in (1, 2):
        threads(nt)
        s, t, c = mixed(x, y)
        # A skipped iteration leaves its lane alone: the identity's update.
        bits_equal(np.float64(s), lane_model(np.where(keep, -y, -0.0), 0.0, "add", nt))
        xs = np.where(keep, x, np.float32(-0.0))
        # t += x; t += x*x: two updates of one lane per iteration, in order.
        want = np.float32(0)
        for lo, hi in chunks(len(x), nt):
            acc = np.full(32, -0.0, np.float32)
            for b in range(lo, hi, 32):
                blk = xs[b:min(b + 32, hi)]
                sq = np.where(keep[b:min(b + 32, hi)], blk * blk, np.float32(-0.0))
                acc[:len(blk)] = (acc[:len(blk)] + blk) + sq
            w = 16
            while w:
                acc[:w] = acc[:w] + acc[w:2 * w]
                w //= 2
            want = np.float32(want + acc[0])
        bits_equal(np.float32(t), want)
        assert c == int(keep.sum())


def test_inner_loop_keeps_the_sequential_order(threads):
    threads(1)
    x = np.random.default_rng(5).standard_normal((300, 7)).astype(np.float32)
    bits_equal(np.float32(rows_total(x)), np.add.accumulate(x.ravel())[-1])


@pytest.mark.parametrize("view", ["step", "slice", "column"])
def test_strided_views(view, threads):
    threads(2)
    base = np.random.default_rng(11).standard_normal((40_000, 3))
    x = {"step": base.ravel()[::3], "slice": base.ravel()[10:-7], "column": base[:, 1]}[view]
    bits_equal(np.float64(total(x)), lane_model(np.ascontiguousarray(x), 0.0, "add", 2))


@pytest.mark.parametrize("a,b,c", [(5, 119_990, 3), (119_999, -1, -3)])
def test_range_with_start_and_step(a, b, c, threads):
    """Lanes count iterations, whatever values i takes."""
    x = np.random.default_rng(12).standard_normal(120_000)
    for nt in (1, 2):
        threads(nt)
        want = lane_model(np.ascontiguousarray(x[a:b if b >= 0 else None:c]), 0.0, "add", nt)
        bits_equal(np.float64(ranged_total(x, a, b, c)), want)


def test_more_accurate_than_in_order(threads):
    threads(1)
    x = np.random.default_rng(2).random(1 << 20).astype(np.float32)
    exact = math.fsum(x.tolist())
    lanes = abs(total(x) - exact)
    in_order = abs(float(np.add.accumulate(x)[-1]) - exact)
    assert lanes * 8 < in_order, (lanes, in_order)


# ---- values on every device -------------------------------------------------------

@pytest.mark.every_device
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_sums_match_fsum(dtype):
    for n in (3, 33, 200_001):
        x = np.random.default_rng(n).random(n).astype(dtype)
        exact = math.fsum(x.tolist())
        assert total(x) == pytest.approx(exact, rel=1e-6 if dtype == np.float32 else 1e-14)
        assert lowest(x) == float(x.min()) and highest(x) == float(x.max())


@pytest.mark.every_device
def test_integer_sums_wrap_exactly():
    big = np.full(100_000, 2**62 + 12345, np.int64)
    big[::7] = np.iinfo(np.int64).min
    assert int_total(big) == int(big.sum())  # NumPy's i64 sum wraps too
    x = np.random.default_rng(4).integers(-2**31, 2**31, 70_000, dtype=np.int64).astype(np.int32)
    x[:5] = [2**31 - 1, -2**31, 2**31 - 1, 1, -1]
    s, p, lo, hi, b = i32_stats(x)
    assert s == int(x.sum(dtype=np.int32))
    assert p == int(np.prod(x, dtype=np.int32))
    assert (lo, hi) == (-2**31, 2**31 - 1)
    assert b == int(np.bitwise_xor.reduce(x))
    assert i32_stats(x[:0]) == (0, 1, 2**31 - 1, -2**31, 0)


@pytest.mark.every_device
def test_nan_inf_and_signed_zero():
    x = np.random.default_rng(9).random(1000)
    x[37] = np.nan
    assert math.isnan(total(x)) and math.isnan(product(x))
    # min and max skip NaN (Python's min/max, like np.nanmin), inf counts.
    assert lowest(x) == np.nanmin(x) and highest(x) == np.nanmax(x)
    x[500] = -np.inf
    assert lowest(x) == -math.inf and total(x[38:]) == -math.inf
    x[600] = np.inf
    assert highest(x) == math.inf and math.isnan(total(x[38:]))
    assert lowest(np.full(50, np.nan)) == math.inf  # all NaN: the start
    zeros = np.full(77, -0.0)
    assert math.copysign(1, total_from_neg_zero(zeros)) == -1
    assert math.copysign(1, total(zeros)) == 1  # 0.0 + -0.0
    signs = np.ones(99)
    signs[[3, 50, 90]] = -1
    signs[60] = 0.0
    assert math.copysign(1, product(signs)) == -1  # three negative factors
    signs[70] = np.inf
    assert math.isnan(product(signs))


@pytest.mark.every_device
@pytest.mark.parametrize("n", [0, 1, 31, 33])
def test_tiny_and_empty(n):
    x = np.arange(n, dtype=np.float64) - 10.5
    assert total(x) == (float(x.sum()) if n else 0.0)
    assert lowest(x) == (float(x.min()) if n else math.inf)
    assert highest(x) == (float(x.max()) if n else -math.inf)
