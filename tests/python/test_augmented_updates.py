"""`a[k] op= v` on array elements (issue 18, item 3).

An augmented assignment whose element another iteration may also update
compiles as the atomic update (Warp's and Taichi's rule for this very
line); one whose index is provably the iteration's own stays a plain load
and store.  Sums and histograms that used to lose updates on OpenCL must
now be exact, on every device.
"""
import numpy as np
import pytest

import tack

pytestmark = pytest.mark.every_device


@tack.kernel
def total(x, acc):
    for i in range(x.shape[0]):
        acc[0] += x[i]


@tack.kernel
def histogram(keys, grid):
    for i in range(keys.shape[0]):
        grid[keys[i]] += 1.0


@tack.kernel
def int_histogram(keys, grid):
    for i in range(keys.shape[0]):
        grid[keys[i] % grid.shape[0]] += 1


@tack.kernel
def own_element(x, out):
    for i in range(x.shape[0]):
        out[i] += x[i]


@tack.kernel
def shifted_own(x, out):
    for i in range(x.shape[0]):
        out[i + 1] += x[i]


@tack.kernel
def neighbours(out):
    for i in range(out.shape[0] - 1):
        out[i] += 1.0
        out[i + 1] += 1.0


@tack.kernel
def row_sums_2d(x, out):
    for i, j in tack.ndindex(x.shape[0], x.shape[1]):
        out[i, 0] += x[i, j]


@tack.kernel
def own_2d(x, out):
    for i, j in tack.ndindex(x.shape[0], x.shape[1]):
        out[i, j] += x[i, j]


@tack.kernel
def row_loop(x, out):
    for i in range(x.shape[0]):
        for j in range(x.shape[1]):
            out[i, j] += x[i, j]


@tack.kernel
def bits(x, acc_or, acc_and, acc_xor, acc_sub):
    for i in range(x.shape[0]):
        acc_or[0] |= x[i]
        acc_and[0] &= x[i]
        acc_xor[0] ^= x[i]
        acc_sub[0] -= x[i]


@tack.func
def add_to(a, k, v):
    a[k] += v


@tack.kernel
def histogram_in_func(keys, grid):
    for i in range(keys.shape[0]):
        add_to(grid, keys[i], 1.0)


@tack.kernel
def scatter_vectors(k, f, out):
    for i in range(k.shape[0]):
        out[k[i]] += f[i]


@tack.kernel
def scale_shared(keys, grid):
    for i in range(keys.shape[0]):
        grid[keys[i]] *= 2.0


@tack.kernel
def scale_own(x):
    for i in range(x.shape[0]):
        x[i] *= 2.0


@tack.kernel
def flags_shared(keys, flags):
    for i in range(keys.shape[0]):
        flags[keys[i]] |= True


@tack.kernel
def under_if_local(x, out):
    for i in range(x.shape[0]):
        k = i
        if x[i] > 0.0:
            k = 0
        out[k] += 1.0


def test_sum_into_one_element_is_exact(device):
    n = 1 << 22
    acc = np.zeros(1, np.float32)
    total(np.ones(n, np.float32), acc)
    assert acc[0] == n


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.uint32, np.uint64])
def test_integer_sum_is_exact_and_wraps_like_numpy(dtype, device):
    info = np.iinfo(dtype)
    x = np.array([info.max, 1, info.max // 3, 7] * 257, dtype=dtype)
    acc = np.zeros(1, dtype)
    total(x, acc)
    with np.errstate(over="ignore"):
        assert acc[0] == x.sum(dtype=dtype)


def test_histogram_counts_are_exact(device):
    keys = np.random.default_rng(1).integers(0, 256, 1 << 20).astype(np.int32)
    grid = np.zeros(256, np.float32)
    histogram(keys, grid)
    np.testing.assert_array_equal(grid, np.bincount(keys, minlength=256))
    counts = np.zeros(7, np.int64)
    int_histogram(keys, counts)
    np.testing.assert_array_equal(counts, np.bincount(keys % 7, minlength=7))


def test_own_element_stays_plain(device):
    x = np.arange(10, dtype=np.float32)
    out = np.ones(10, np.float32)
    own_element(x, out)
    np.testing.assert_array_equal(out, x + 1)
    ir = own_element.inspect_ir(x, out)
    assert "atomic" not in ir
    assert "atomic" not in own_2d.inspect_ir(np.ones((2, 3)), np.ones((2, 3)))
    assert "atomic" not in row_loop.inspect_ir(np.ones((2, 3)), np.ones((2, 3)))
    assert "atomic" not in shifted_own.inspect_ir(np.ones(3), np.ones(4))
    assert "atomic" not in scale_own.inspect_ir(np.ones(3))


def test_shared_updates_are_atomic(device):
    assert "atomic_add" in total.inspect_ir(np.ones(4), np.ones(1))
    assert "atomic_add" in neighbours.inspect_ir(np.ones(4))
    assert "atomic_add" in row_sums_2d.inspect_ir(np.ones((2, 3)), np.ones((2, 1)))
    assert "atomic_add" in under_if_local.inspect_ir(np.ones(3), np.ones(3))


def test_results_of_each_form(device):
    x = np.arange(12, dtype=np.float64).reshape(3, 4)
    out = np.zeros((3, 1))
    row_sums_2d(x, out)
    np.testing.assert_array_equal(out[:, 0], x.sum(axis=1))
    out = np.ones((3, 4))
    own_2d(x, out)
    np.testing.assert_array_equal(out, x + 1)
    out = np.ones((3, 4))
    row_loop(x, out)
    np.testing.assert_array_equal(out, x + 1)
    out = np.zeros(5)
    shifted_own(np.arange(4.0), out)
    np.testing.assert_array_equal(out, [0, 0, 1, 2, 3])
    out = np.zeros(6)
    neighbours(out)
    np.testing.assert_array_equal(out, [1, 2, 2, 2, 2, 1])
    x = np.array([1.0, -1.0, 2.0, -3.0, 4.0])
    out = np.zeros(5)
    under_if_local(x, out)
    expected = np.zeros(5)
    for i, v in enumerate(x):
        expected[0 if v > 0 else i] += 1
    np.testing.assert_array_equal(out, expected)


def test_bitwise_and_subtract_updates(device):
    x = (np.arange(1, 200, dtype=np.int64) * 2654435761) % (1 << 40)
    acc_or = np.zeros(1, np.int64)
    acc_and = np.full(1, -1, np.int64)
    acc_xor = np.zeros(1, np.int64)
    acc_sub = np.zeros(1, np.int64)
    bits(x, acc_or, acc_and, acc_xor, acc_sub)
    assert acc_or[0] == np.bitwise_or.reduce(x)
    assert acc_and[0] == np.bitwise_and.reduce(x)
    assert acc_xor[0] == np.bitwise_xor.reduce(x)
    assert acc_sub[0] == -x.sum()


def test_update_inside_a_device_function(device):
    keys = np.random.default_rng(2).integers(0, 16, 50000).astype(np.int64)
    grid = np.zeros(16)
    histogram_in_func(keys, grid)
    np.testing.assert_array_equal(grid, np.bincount(keys, minlength=16))


def test_vector_scatter(device):
    rng = np.random.default_rng(3)
    k = rng.integers(0, 5, 4000).astype(np.int32)
    f = rng.integers(-4, 5, (4000, 3)).astype(np.float32)
    out = tack.zeros((5,), dtype=tack.vec3f, device=device)
    scatter_vectors(tack.array(k, device=device), tack.array(f, dtype=tack.vec3f, device=device), out)
    expected = np.zeros((5, 3), np.float32)
    np.add.at(expected, k, f)
    np.testing.assert_array_equal(out.numpy(), expected)


def test_operator_without_atomic_form_refused_when_shared(device):
    grid = np.ones(4)
    with pytest.raises(tack.CompileError) as e:
        scale_shared(np.array([0, 1, 1, 3]), grid)
    assert "grid" in str(e.value) and "atomic" in str(e.value)
    assert e.value.lineno is not None
    np.testing.assert_array_equal(grid, 1.0)
    x = np.arange(5.0)
    scale_own(x)
    np.testing.assert_array_equal(x, np.arange(5.0) * 2)


def test_bool_update_that_must_be_atomic_is_refused(device):
    flags = np.zeros(4, np.bool_)
    with pytest.raises(tack.CompileError) as e:
        flags_shared(np.array([0, 2]), flags)
    assert "flags" in str(e.value) and "bool" in str(e.value)
    assert not flags.any()


def test_atomic_functions_still_return_the_old_value(device):
    @tack.kernel
    def tickets(out, counter):
        for i in range(out.shape[0]):
            out[i] = tack.atomic_add(counter, 0, 1)

    out = tack.zeros((64,), dtype=tack.i32, device=device)
    counter = tack.zeros((1,), dtype=tack.i32, device=device)
    tickets(out, counter)
    assert sorted(out.numpy().tolist()) == list(range(64))
    assert counter.numpy()[0] == 64
