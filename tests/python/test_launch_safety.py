"""Launch-time safety checks (issue 26): a launch length read from an array
element is checked on every device before anything runs, a u64 length of
2**63 or more is refused, and assigning a launch variable is a CompileError."""
import numpy as np
import pytest

import tack

pytestmark = pytest.mark.every_device


@pytest.fixture(autouse=True)
def plain():
    before = tack.get_debug()
    tack.set_debug(False)
    yield
    tack.set_debug(before)


@tack.kernel
def fill_n1(n, out):
    for i in range(n[1]):
        out[i] = 1.0


@tack.kernel
def fill_nk(n, out, k):
    for i in range(n[k]):
        out[i] = 1.0


@tack.kernel
def fill_u64(n, out):
    for i in range(n):
        out[0] = 1.0


@tack.kernel
def fill_u64_elem(n, out):
    for i in range(n[0]):
        out[0] = 1.0


@tack.kernel
def shifted(x, out):
    for i in range(x.shape[0]):
        i = i + 1
        out[i] = x[i]


def test_range_element_past_the_end_is_refused():
    n = np.array([3], dtype=np.int64)
    out = np.zeros(4, np.float32)
    with pytest.raises(IndexError, match=r"fill_n1.*element 1 of 'n', which has 1"):
        fill_n1(n, out)
    assert not out.any()


@pytest.mark.parametrize("k", [1, 5, -2, 2**40])
def test_range_element_index_parameter_is_checked(k):
    n = np.array([3], dtype=np.int64)
    out = np.zeros(4, np.float32)
    with pytest.raises(IndexError, match=r"fill_nk.*reads element .* of 'n'"):
        fill_nk(n, out, k)
    assert not out.any()


def test_range_element_in_bounds_still_runs():
    n = np.array([2, 3], dtype=np.int64)
    out = np.zeros(4, np.float32)
    fill_nk(n, out, 1)
    np.testing.assert_array_equal(out, [1, 1, 1, 0])


@pytest.mark.parametrize("n", [2**63, 2**64 - 1])
def test_u64_length_of_2_63_or_more_is_refused(n):
    out = np.zeros(1, np.float32)
    with pytest.raises(ValueError, match=r"fill_u64.*length %d" % n):
        fill_u64(np.uint64(n), out)
    with pytest.raises(ValueError, match=r"fill_u64_elem.*length %d" % n):
        fill_u64_elem(np.array([n], np.uint64), out)
    assert not out.any()


def test_u64_length_below_2_63_runs():
    out = np.zeros(1, np.float32)
    fill_u64(np.uint64(3), out)
    assert out[0] == 1.0


def test_assigning_the_launch_variable_is_a_compile_error():
    x = np.arange(8, dtype=np.float32)
    buf = np.zeros(16, np.float32)
    with pytest.raises(tack.CompileError, match=r"parallel loop variable 'i'") as e:
        shifted(x, buf[:8])
    assert e.value.lineno is not None
    assert not buf.any()
