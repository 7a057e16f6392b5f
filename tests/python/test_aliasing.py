"""Arrays that share storage: race-free programs give the sequential result,
and the CPU's disjoint bit splits variants."""
import numpy as np
import pytest

import tack

# The conformance suite: every test runs on each device (conftest.py).
pytestmark = pytest.mark.every_device
from conftest import assert_bitwise_equal, random_values


@tack.kernel
def double(x, out):
    for i in range(x.shape[0]):
        out[i] = x[i] * 2.0


@tack.kernel
def add3(a, b, out):
    for i in range(out.shape[0]):
        out[i] = a[i] + b[i]


@tack.kernel
def repeat_add(x, out, m):
    # With out and x distinct this is out += m * x; with out is x each step
    # sees the last one's store: x * 2**m.  A variant that promised noalias
    # may keep x[i] in a register and give the first answer for the second.
    for i in range(out.shape[0]):
        for j in range(m):
            out[i] = out[i] + x[i]


def seq_repeat_add(x, out, m):
    """Sequential NumPy reference for repeat_add with any aliasing."""
    for _ in range(m):
        out[:] = out + x  # each element only reads its own index
    return out


def test_out_is_x():
    x = random_values(np.float64, 10_001, seed=1)
    expected = x * 2.0
    double(x, x)
    assert_bitwise_equal(x, expected)


def test_out_is_x_tack_array():
    x_np = random_values(np.float32, 999, seed=2)
    x = tack.array(x_np)
    double(x, x)
    assert_bitwise_equal(x.numpy(), x_np * np.float32(2.0))


def test_same_region_through_two_views():
    base = random_values(np.float64, 1000, seed=3)
    expected = base.copy()
    expected[2:] = base[2:] * 2.0
    double(base[2:], base[2:])
    assert_bitwise_equal(base, expected)


@pytest.mark.cpu_only  # views of one host buffer and the CPU's disjoint bit
def test_read_only_overlap_is_disjoint():
    base = random_values(np.float32, 1001, seed=4)
    out = np.zeros(1000, dtype=np.float32)
    add3(base[1:], base[:-1], out)
    assert_bitwise_equal(out, base[1:] + base[:-1])
    x = random_values(np.float32, 1000, seed=5)
    add3(x, x, out)
    assert_bitwise_equal(out, x + x)
    # reading overlaps do not clear the disjoint bit
    assert [k[4] for k in add3.variants()] == [True]


def test_halves_of_one_buffer_are_disjoint():
    base = random_values(np.float64, 2000, seed=6)
    expected = base.copy()
    expected[:1000] = base[1000:] * 2.0
    double(base[1000:], base[:1000])
    assert_bitwise_equal(base, expected)


def test_output_aliases_one_input():
    base = random_values(np.float64, 1001, seed=7)
    other = random_values(np.float64, 1000, seed=8)
    expected = base.copy()
    expected[:-1] = base[:-1] + other
    add3(base[:-1], other, base[:-1])
    assert_bitwise_equal(base, expected)
    expected2 = base.copy()
    expected2[1:] = other + base[1:]
    add3(other, base[1:], base[1:])
    assert_bitwise_equal(base, expected2)


@pytest.mark.cpu_only  # views of one host buffer and the CPU's disjoint bit
def test_disjoint_then_aliased_call_gives_two_variants():
    n, m = 4099, 5
    x = random_values(np.float64, n, seed=9)
    out = random_values(np.float64, n, seed=10)
    expected = seq_repeat_add(x, out.copy(), m)
    repeat_add(x, out, m)
    assert_bitwise_equal(out, expected)
    assert [k[4] for k in repeat_add.variants()] == [True]

    y = random_values(np.float64, n, seed=11)
    expected_alias = y * 2.0**m  # exact: each step doubles
    repeat_add(y, y, m)
    assert_bitwise_equal(y, expected_alias)
    keys = repeat_add.variants()
    assert len(keys) == 2
    assert sorted(k[4] for k in keys) == [False, True]
    # apart from the disjoint bit the two keys are the same
    a, b = keys
    assert a[:4] == b[:4]

    # both variants stay right when calls alternate
    for round_ in range(3):
        x = random_values(np.float64, n, seed=20 + round_)
        out = random_values(np.float64, n, seed=30 + round_)
        expected = seq_repeat_add(x, out.copy(), m)
        repeat_add(x, out, m)
        assert_bitwise_equal(out, expected)
        z = random_values(np.float64, n, seed=40 + round_)
        expected_z = z * 2.0**m
        repeat_add(z, z, m)
        assert_bitwise_equal(z, expected_z)
    assert len(repeat_add.variants()) == 2


@tack.kernel
def repeat_add32(x, out, m):
    for i in range(out.shape[0]):
        for j in range(m):
            out[i] = out[i] + x[i]


@pytest.mark.cpu_only  # views of one host buffer and the CPU's disjoint bit
def test_aliased_first_then_disjoint():
    n, m = 1000, 3
    z = random_values(np.float32, n, seed=50)
    expected = z * np.float32(2.0**m)
    repeat_add32(z, z, m)
    assert_bitwise_equal(z, expected)
    assert [k[4] for k in repeat_add32.variants()] == [False]
    x = random_values(np.float32, n, seed=51)
    out = random_values(np.float32, n, seed=52)
    expected = seq_repeat_add(x, out.copy(), m)
    repeat_add32(x, out, m)
    assert_bitwise_equal(out, expected)
    assert sorted(k[4] for k in repeat_add32.variants()) == [False, True]


@tack.kernel
def double_shift(x, out):
    for i in range(x.shape[0]):
        out[i] = x[i] * 2.0


@pytest.mark.cpu_only  # views of one host buffer and the CPU's disjoint bit
def test_partial_overlap_of_output_with_shifted_input():
    # out = base[:-1] and x = base[1:] share base[1], so the call is not
    # disjoint.  A launch this short runs in order on one thread, so the
    # result is the sequential one: iteration 0 reads base[1] before
    # iteration 1 overwrites it.
    base = np.array([1.0, 2.0, 3.0], dtype=np.float64)
    double_shift(base[1:], base[:-1])
    np.testing.assert_array_equal(base, [4.0, 6.0, 3.0])
    assert [k[4] for k in double_shift.variants()] == [False]
    a = np.array([1.0, 2.0, 3.0])
    b = np.zeros(3)
    double_shift(a, b)
    assert sorted(k[4] for k in double_shift.variants()) == [False, True]
