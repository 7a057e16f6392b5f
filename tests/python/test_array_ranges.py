"""Launch lengths read from array elements (issue 19, item 8): `range(n[0])`,
`range(n[1], n[2])`, ndindex extents.  On the CPU the range is compiled
code; on GPU devices the host reads the elements from device memory when
each call's range is evaluated (the backend's blocking mem_read), so a
changed element is seen by the next call without a recompile.  A negative
length launches nothing, as Python's range; an element index outside its
array is refused on GPU devices before anything runs; the launch-bounds
check still refuses a range that would write past `out`."""
import numpy as np
import pytest

import tack

pytestmark = pytest.mark.every_device

INTS = [np.int32, np.int64]


@tack.kernel
def first_n(n, out):
    for i in range(n[0]):
        out[i] = i + 1


@tack.kernel
def between(n, out):
    for i in range(n[1], n[2]):
        out[i] = i * 10


@tack.kernel
def from_float(n, out):
    for i in range(int(n[0] * 2.0)):
        out[i] = i + 1


@tack.kernel
def grid_from_elements(n, out):
    for i, j in tack.ndindex(n[0], n[1]):
        out[i, j] = i * 100 + j


@tack.kernel
def past_the_end(n, out):
    for i in range(n[5]):
        out[i] = 1


def expected_first(length, size=8):
    e = np.zeros(size, np.int64)
    k = max(0, min(length, size))
    e[:k] = np.arange(1, k + 1)
    return e


@pytest.mark.parametrize("dt", INTS)
def test_length_from_the_first_element(device, dt):
    n = np.array([5, 0, 0], dt)
    out = np.zeros(8, np.int64)
    first_n(n, out)
    np.testing.assert_array_equal(out, expected_first(5))


@pytest.mark.parametrize("dt", INTS)
def test_start_and_stop_from_elements(device, dt):
    n = np.array([0, 2, 6], dt)
    out = np.zeros(8, np.int64)
    between(n, out)
    e = np.zeros(8, np.int64)
    e[2:6] = np.arange(2, 6) * 10
    np.testing.assert_array_equal(out, e)


@pytest.mark.parametrize("dt", INTS)
def test_changed_element_is_seen_by_the_next_call(device, dt):
    for length in (3, 7, 1, 8):
        n = np.array([length], dt)
        out = np.zeros(8, np.int64)
        first_n(n, out)
        np.testing.assert_array_equal(out, expected_first(length))
    # one variant: the length is never baked into code
    assert len([v for v in first_n.variants() if v[0][0][0] == np.dtype(dt).name.replace("int", "i")]) == 1


@pytest.mark.parametrize("dt", INTS)
@pytest.mark.parametrize("length", [0, -1, -5, np.iinfo(np.int32).min])
def test_zero_and_negative_lengths_launch_nothing(device, dt, length):
    n = np.array([length, 0, length], dt)
    out = np.full(8, -7, np.int64)
    first_n(n, out)
    between(n, out)  # range(0, length): empty too
    np.testing.assert_array_equal(out, np.full(8, -7))


def test_i64_element_beyond_i32(device):
    # 2**32 + 3 truncated to 32 bits would be 3: the read keeps all 64
    n = np.array([2**32 + 3], np.int64)
    out = np.zeros(8, np.int64)
    with pytest.raises(IndexError, match="out"):
        first_n(n, out)
    np.testing.assert_array_equal(out, np.zeros(8))


@pytest.mark.parametrize("dt", [np.float32, np.float64, np.float16])
def test_float_element_in_the_range(device, dt):
    n = np.array([2.5], dt)
    out = np.zeros(8, np.int64)
    from_float(n, out)
    np.testing.assert_array_equal(out, expected_first(5))


def test_ndindex_extents_from_elements(device):
    n = np.array([3, 4], np.int32)
    out = np.zeros((3, 4), np.int64)
    grid_from_elements(n, out)
    np.testing.assert_array_equal(out, np.arange(3)[:, None] * 100 + np.arange(4))


def test_launch_bounds_check_still_refuses_writes_past_the_end(device):
    n = np.array([9], np.int32)
    out = np.zeros(8, np.int64)
    with pytest.raises(IndexError, match="'out'"):
        first_n(n, out)
    np.testing.assert_array_equal(out, np.zeros(8))


def test_element_index_outside_its_array_is_refused(device):
    if device.host_memory:
        pytest.skip("the CPU's range is compiled code, unchecked outside debug mode")
    n = np.array([1, 2, 3], np.int32)
    out = np.zeros(8, np.int64)
    with pytest.raises(IndexError) as e:
        past_the_end(n, out)
    assert "element 5 of 'n', which has 3" in str(e.value)
    assert "range(n[5])" in str(e.value)  # the line
    np.testing.assert_array_equal(out, np.zeros(8))


@tack.kernel
def set_length(n, v):
    for i in range(1):
        n[0] = v


def test_device_array_changed_in_place_and_by_a_kernel(device):
    n = tack.array(np.array([2], np.int32), device=device)
    out = tack.zeros((8,), dtype=tack.i64, device=device)
    first_n(n, out)
    np.testing.assert_array_equal(out.numpy(), expected_first(2))
    tack.copyto(n, np.array([6], np.int32))
    first_n(n, out)
    np.testing.assert_array_equal(out.numpy(), expected_first(6))
    set_length(n, 8)  # written on the device, read back for the next range
    first_n(n, out)
    np.testing.assert_array_equal(out.numpy(), expected_first(8))


@pytest.fixture
def debug():
    before = tack.get_debug()
    tack.set_debug(True)
    yield
    tack.set_debug(before)


@pytest.mark.parametrize("dt", INTS)
def test_debug_mode_reads_and_checks_the_elements(device, debug, dt):
    n = np.array([0, 2, 6], dt)
    out = np.zeros(8, np.int64)
    between(n, out)
    e = np.zeros(8, np.int64)
    e[2:6] = np.arange(2, 6) * 10
    np.testing.assert_array_equal(out, e)
    out[:] = 0
    with pytest.raises(IndexError) as err:
        past_the_end(np.array([1, 2, 3], dt), out)
    line = open(__file__).read().splitlines().index("    for i in range(n[5]):") + 1
    msg = str(err.value)
    assert "'n'" in msg and "(3,)" in msg and f"test_array_ranges.py:{line}" in msg, msg
    np.testing.assert_array_equal(out, np.zeros(8))
