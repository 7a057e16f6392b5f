"""Chunk-private copies for atomic updates on the CPU (issue 20, item 3).

An array written only through atomics whose old value is unused, all of one
combining kind, is updated by each chunk in a private copy and combined at
the chunk's end.  The results must be those of the plain atomics: exact for
integers, -0.0 and NaN kept for floats, on one thread and on two, for
arrays small enough to copy and for ones too large, and not at all when the
array is also read or mixes kinds."""
import numpy as np
import pytest

import tack

RNG = np.random.default_rng(5)
KEYS = RNG.integers(0, 64, 200_000).astype(np.int64)
VALS = RNG.integers(-1000, 1000, 200_000).astype(np.int64)


@tack.kernel
def add_hist(keys, vals, grid):
    for i in range(keys.shape[0]):
        tack.atomic_add(grid, keys[i], vals[i])


@tack.kernel
def sub_hist(keys, vals, grid):
    for i in range(keys.shape[0]):
        tack.atomic_sub(grid, keys[i], vals[i])


@tack.kernel
def add_and_sub(keys, vals, grid):
    for i in range(keys.shape[0]):
        grid[keys[i]] += vals[i]
        grid[keys[i] // 2] -= 1


@tack.kernel
def bit_ops(keys, vals, g_or, g_and, g_xor):
    for i in range(keys.shape[0]):
        tack.atomic_or(g_or, keys[i], vals[i])
        tack.atomic_and(g_and, keys[i], vals[i])
        tack.atomic_xor(g_xor, keys[i], vals[i])


@tack.kernel
def min_max(keys, vals, g_min, g_max):
    for i in range(keys.shape[0]):
        tack.atomic_min(g_min, keys[i], vals[i])
        tack.atomic_max(g_max, keys[i], vals[i])


@tack.kernel
def hist_2d(keys, grid):
    for i in range(keys.shape[0]):
        grid[keys[i] % 8, keys[i] // 8] += 1.0


@tack.kernel
def mixed_kinds(keys, vals, grid):
    for i in range(keys.shape[0]):
        tack.atomic_add(grid, keys[i], vals[i])
        tack.atomic_or(grid, keys[i], 1)


@tack.kernel
def read_and_add(keys, grid, seen):
    for i in range(keys.shape[0]):
        tack.atomic_add(grid, keys[i], 1)
        seen[i] = grid[0] * 0


@pytest.fixture(params=[1, 2], ids=["1thread", "2threads"])
def threads(request):
    before = tack.get_default_device()
    tack.set_default_device(tack.device("cpu", num_threads=request.param))
    yield request.param
    tack.set_default_device(before)


def expect_add(keys, vals, n, dtype=np.int64):
    out = np.zeros(n, dtype)
    np.add.at(out, keys, vals.astype(dtype))
    return out


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.uint32, np.uint64])
def test_integer_add_and_sub_exact(threads, dtype):
    vals = VALS.astype(dtype)
    grid = np.zeros(64, dtype)
    add_hist(KEYS, vals, grid)
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(grid, expect_add(KEYS, vals, 64, dtype))
        grid = np.zeros(64, dtype)
        sub_hist(KEYS, vals, grid)
        np.testing.assert_array_equal(grid, -expect_add(KEYS, vals, 64, dtype))


def test_add_and_subtract_together(threads):
    grid = np.zeros(64, np.int64)
    add_and_sub(KEYS, VALS, grid)
    expected = expect_add(KEYS, VALS, 64)
    np.subtract.at(expected, KEYS // 2, 1)
    np.testing.assert_array_equal(grid, expected)


def test_bitwise_kinds(threads):
    vals = VALS & 0xFFFF
    g_or = np.zeros(64, np.int64)
    g_and = np.full(64, -1, np.int64)
    g_xor = np.zeros(64, np.int64)
    bit_ops(KEYS, vals, g_or, g_and, g_xor)
    for k in range(64):
        v = vals[KEYS == k]
        assert g_or[k] == np.bitwise_or.reduce(v)
        assert g_and[k] == np.bitwise_and.reduce(v)
        assert g_xor[k] == np.bitwise_xor.reduce(v)


@pytest.mark.parametrize("dtype", [np.int32, np.uint64])
def test_integer_min_max(threads, dtype):
    vals = (VALS + 1000).astype(dtype)
    info = np.iinfo(dtype)
    g_min = np.full(64, info.max, dtype)
    g_max = np.full(64, info.min, dtype)
    g_min[3] = 0                      # an initial value beats every update
    min_max(KEYS, vals, g_min, g_max)
    for k in range(64):
        v = vals[KEYS == k]
        assert g_min[k] == (0 if k == 3 else v.min())
        assert g_max[k] == v.max()


def test_float_sums_keep_signed_zero_and_nan(threads):
    keys = np.array([0, 1, 1, 2, 2] * 1000, np.int64)
    vals = np.array([-0.0, -0.0, -0.0, 1.5, np.nan] * 1000)
    grid = np.array([-0.0, 0.0, -0.0, 0.0])
    add_hist(keys, vals, grid)
    assert np.signbit(grid[0]) and grid[0] == 0     # -0.0 + -0.0 ...
    assert not np.signbit(grid[1]) and grid[1] == 0  # 0.0 + -0.0 is 0.0
    assert np.isnan(grid[2])
    assert np.signbit(grid[3]) is np.False_ and grid[3] == 0.0  # untouched


def test_float_histogram_counts(threads):
    grid = np.zeros((8, 8))
    hist_2d(KEYS, grid)
    expected = np.zeros((8, 8))
    np.add.at(expected, (KEYS % 8, KEYS // 8), 1.0)
    np.testing.assert_array_equal(grid, expected)


def test_large_target_uses_plain_atomics(threads):
    n = 100_000                       # past the private copy's limit
    keys = RNG.integers(0, n, 300_000).astype(np.int64)
    grid = np.zeros(n, np.int64)
    add_hist(keys, np.ones_like(keys), grid)
    np.testing.assert_array_equal(grid, np.bincount(keys, minlength=n))


def test_short_launch_into_a_larger_array(threads):
    # Fewer iterations than elements: no copy pays off, the atomics run.
    grid = np.zeros(2000, np.int64)
    add_hist(KEYS[:50], VALS[:50], grid)
    np.testing.assert_array_equal(grid, expect_add(KEYS[:50], VALS[:50], 2000))


def test_mixed_kinds_and_reads_are_not_privatized(threads):
    grid = np.zeros(64, np.int64)
    mixed_kinds(KEYS[:5000], np.full(5000, 2, np.int64), grid)
    # Every bin that was hit ends odd (or 1), and the adds all landed.
    hit = np.bincount(KEYS[:5000], minlength=64) > 0
    assert (grid[hit] % 2 == 1).all() and (grid[~hit] == 0).all()
    grid = np.zeros(64, np.int64)
    seen = np.ones(5000, np.int64)
    read_and_add(KEYS[:5000], grid, seen)
    np.testing.assert_array_equal(grid, np.bincount(KEYS[:5000], minlength=64))
    assert (seen == 0).all()


def test_the_private_path_is_generated():
    ir = add_hist.inspect_llvm(KEYS, VALS, np.zeros(64, np.int64))
    assert "priv" in ir
    ir = read_and_add.inspect_llvm(KEYS, np.zeros(64, np.int64), np.zeros(len(KEYS), np.int64))
    assert "priv" not in ir


# ---- atomic updates at offsets of the launch variable (cpu_offset_atomics) ----
# Inside a chunk they are plain adds; the chunk's edges (and every other
# index) keep the atomics.  The results must be the atomics' exactly for
# integers, and within float rounding for floats (a plain add is one of the
# orders the atomics could take).

@tack.kernel
def three_point(x, out):
    for i in range(1, x.shape[0] - 1):
        tack.atomic_add(out, i - 1, x[i])
        tack.atomic_add(out, i, 2 * x[i])
        out[i + 1] += x[i]


@tack.kernel
def offsets_by_step(x, out, step):
    for i in range(x.shape[0] - 1, 1, step):
        tack.atomic_add(out, i - 2, x[i])
        tack.atomic_sub(out, i + 1 - 2, x[i] * 3)


@tack.kernel
def offsets_and_gather(x, idx, out, g):
    for i in range(2, x.shape[0]):
        tack.atomic_add(out, i - 2, x[i])
        tack.atomic_add(g, idx[i], x[i])
        tack.atomic_add(g, i - 1, x[i])  # g is also updated at idx[i]: atomics throughout


@tack.kernel
def two_views(x, a, b):
    for i in range(1, x.shape[0] - 1):
        tack.atomic_add(a, i - 1, x[i])
        tack.atomic_add(b, i + 1, x[i])


@tack.kernel
def strided_offsets(x, out):
    for i in range(x.shape[0]):
        tack.atomic_add(out, 2 * i + 1, x[i])
        tack.atomic_add(out, 2 * i + 4, x[i])


def three_point_np(x):
    n = len(x)
    out = np.zeros(n, x.dtype)
    for c, w in ((-1, 1), (0, 2), (1, 1)):
        np.add.at(out, np.arange(1, n - 1) + c, (w * x[1:n - 1]).astype(x.dtype))
    return out


@pytest.mark.parametrize("n", [3, 4, 5, 17, 1000, 300001])
@pytest.mark.parametrize("dtype", [np.int64, np.float64, np.float32])
def test_updates_at_offsets_of_the_launch_variable(threads, n, dtype):
    rng = np.random.default_rng(n)
    x = (rng.integers(-50, 50, n) if dtype == np.int64 else rng.uniform(-1, 1, n)).astype(dtype)
    out = np.zeros(n, dtype)
    three_point(x, out)
    want = three_point_np(x)
    if dtype == np.int64:
        np.testing.assert_array_equal(out, want)
    else:
        np.testing.assert_allclose(out, want, rtol=1e-5 if dtype == np.float32 else 1e-13, atol=1e-6)


@pytest.mark.parametrize("n", [4, 9, 100001])
@pytest.mark.parametrize("step", [-1, -3, 2])
def test_offsets_with_other_steps(threads, n, step):
    x = np.arange(n, dtype=np.int64) % 11 - 5
    out = np.zeros(n + 2, np.int64)
    offsets_by_step(x, out, step)
    want = np.zeros(n + 2, np.int64)
    i = np.arange(n - 1, 1, step)
    np.add.at(want, i - 2, x[i])
    np.add.at(want, i - 1, -3 * x[i])
    np.testing.assert_array_equal(out, want)


def test_offsets_beside_a_gather(threads):
    n = 50001
    rng = np.random.default_rng(2)
    x = rng.integers(-9, 9, n).astype(np.int64)
    idx = rng.integers(0, n, n).astype(np.int64)
    out, g = np.zeros(n, np.int64), np.zeros(n, np.int64)
    offsets_and_gather(x, idx, out, g)
    want_out, want_g = np.zeros(n, np.int64), np.zeros(n, np.int64)
    i = np.arange(2, n)
    np.add.at(want_out, i - 2, x[i])
    np.add.at(want_g, idx[i], x[i])
    np.add.at(want_g, i - 1, x[i])
    np.testing.assert_array_equal(out, want_out)
    np.testing.assert_array_equal(g, want_g)


@pytest.mark.parametrize("shift", [0, 1, 2, 5])
def test_offsets_into_overlapping_views(threads, shift):
    n = 40001
    x = (np.arange(n) % 7 - 3).astype(np.int64)
    base = np.zeros(n + 8, np.int64)
    two_views(x, base[:n + 2], base[shift:shift + n + 2])
    want = np.zeros(n + 8, np.int64)
    i = np.arange(1, n - 1)
    np.add.at(want, i - 1, x[i])
    np.add.at(want, shift + i + 1, x[i])
    np.testing.assert_array_equal(base, want)


def test_offsets_with_a_coefficient(threads):
    n = 30001
    x = (np.arange(n) % 5).astype(np.int64)
    out = np.zeros(2 * n + 4, np.int64)
    strided_offsets(x, out)
    want = np.zeros(2 * n + 4, np.int64)
    np.add.at(want, 2 * np.arange(n) + 1, x)
    np.add.at(want, 2 * np.arange(n) + 4, x)
    np.testing.assert_array_equal(out, want)


def test_offset_updates_are_plain_inside_a_chunk():
    x = np.zeros(100)
    ir = three_point.inspect_llvm(x, np.zeros(100))
    assert "edge_lo" in ir and "atomicrmw" in ir
    # a gathered index keeps the array's atomics everywhere
    ir = offsets_and_gather.inspect_llvm(x, np.zeros(100, np.int64), np.zeros(100), np.zeros(100))
    assert "edge_lo" in ir  # out still qualifies
    ir = two_views.inspect_llvm(x, x[:50], x[10:60])
    assert "edge_lo" not in ir  # the views overlap x: no disjoint variant


# An inner `for` over literal bounds (after resolve_dims) adds a range to
# the offset: row i of a 2-D array updates rows i - 1 .. i + 1 (its
# neighbours' elements), so only rows near a chunk's ends keep atomics.
@tack.kernel
def five_point_scatter(x, out):
    for i in range(1, x.shape[0] - 1):
        for j in range(1, x.shape[1] - 1):
            v = x[i, j]
            tack.atomic_add(out, (i - 1, j), v)
            tack.atomic_add(out, (i + 1, j), 2 * v)
            tack.atomic_add(out, (i, j - 1), 3 * v)
            tack.atomic_sub(out, (i, j + 1), v)
            tack.atomic_add(out, (i, j), 5 * v)


@pytest.mark.parametrize("shape", [(3, 3), (5, 7), (301, 257), (2000, 40)])
def test_offsets_with_an_inner_loop_range(threads, shape):
    rng = np.random.default_rng(shape[0])
    x = rng.integers(-50, 50, shape).astype(np.int64)
    out = np.zeros(shape, np.int64)
    five_point_scatter(x, out)
    want = np.zeros(shape, np.int64)
    r, c = shape
    v = x[1:r - 1, 1:c - 1]
    want[0:r - 2, 1:c - 1] += v
    want[2:r, 1:c - 1] += 2 * v
    want[1:r - 1, 0:c - 2] += 3 * v
    want[1:r - 1, 2:c] -= v
    want[1:r - 1, 1:c - 1] += 5 * v
    np.testing.assert_array_equal(out, want)
    assert "edge_lo" in five_point_scatter.inspect_llvm(x, out)


@tack.kernel
def ranged_rows(x, out):
    for i in range(1, x.shape[0] - 1):
        for j in range(x.shape[1]):
            tack.atomic_add(out, (i - 1, j), x[i, j])
            tack.atomic_add(out, (i + 1, j), x[i, j])


@tack.kernel
def unranged_rows(x, out):
    for i in range(1, x.shape[0] - 1):
        for j in range(x.shape[1]):
            tack.atomic_add(out, (i - 1, j), x[i, j])
        j = x.shape[1] + 5  # assigned otherwise than by its loop: j has no range
        tack.atomic_add(out, (i - 1, 0), x[i, j - 6])


def test_an_inner_loop_range_makes_plain_updates(threads):
    x = np.arange(64 * 16, dtype=np.int64).reshape(64, 16)
    out = np.zeros((64, 16), np.int64)
    assert "edge_lo" in ranged_rows.inspect_llvm(x, out)
    assert "edge_lo" not in unranged_rows.inspect_llvm(x, out)
    unranged_rows(x, out)
    want = np.zeros((64, 16), np.int64)
    want[0:62] += x[1:63]
    want[0:62, 0] += x[1:63, 15]
    np.testing.assert_array_equal(out, want)
