"""Early exits from the parallel loop (issue 19, item 1): a bare `return`
anywhere in the launch body ends that iteration (Warp's `if i >= n:
return`), `continue` in the launch loop skips to the next iteration, and
`break` there is a CompileError saying why.  Each kernel runs on every device
and, where NVRTC is present, as PTX that ptxas accepts."""
import numpy as np
import pytest

import tack
from test_cuda import check_ptx, needs_nvrtc

pytestmark = pytest.mark.every_device


@tack.kernel
def guarded(x, out, n):
    for i in range(x.shape[0]):
        if i >= n:
            return
        out[i] = x[i] * 2.0


@tack.kernel
def skip_negatives(x, out):
    for i in range(x.shape[0]):
        if x[i] < 0.0:
            continue
        out[i] = x[i] + 1.0


@tack.kernel
def exit_from_inner_loop(x, out):
    for i in range(x.shape[0]):
        for j in range(4):
            if j == x[i]:
                return
            out[i] += 1
        out[i] = 100


@tack.kernel
def grid_guard(img, out, w, h):
    for i, j in tack.ndindex(out.shape[0], out.shape[1]):
        if i >= h or j >= w:
            return
        out[i, j] = img[i, j] * 3


@tack.func
def first_positive(x, i):
    if x[i] > 0:
        return 1
    return 0


@tack.kernel
def return_after_call(x, out):
    for i in range(x.shape[0]):
        if first_positive(x, i) == 0:
            return
        out[i] = 7.0


def test_return_ends_the_iteration(device):
    x = np.arange(10, dtype=np.float32)
    out = np.full(10, -1.0, np.float32)
    guarded(x, out, 6)
    expected = np.full(10, -1.0, np.float32)
    expected[:6] = x[:6] * 2
    np.testing.assert_array_equal(out, expected)


def test_continue_skips_to_the_next_iteration(device):
    x = np.array([1.0, -2.0, 3.0, -0.0, -4.0, 5.0])
    out = np.zeros(6)
    skip_negatives(x, out)
    np.testing.assert_array_equal(out, np.where(x < 0, 0.0, x + 1))


def test_return_inside_a_sequential_loop(device):
    x = np.array([0, 1, 2, 3, 9], np.int64)
    out = np.zeros(5, np.int64)
    exit_from_inner_loop(x, out)
    np.testing.assert_array_equal(out, [0, 1, 2, 3, 100])


def test_return_in_an_ndindex_launch(device):
    img = np.arange(20.0).reshape(4, 5)
    out = np.zeros((4, 5))
    grid_guard(img, out, 3, 2)
    expected = np.zeros((4, 5))
    expected[:2, :3] = img[:2, :3] * 3
    np.testing.assert_array_equal(out, expected)


def test_return_after_a_device_call(device):
    x = np.array([1.0, -1.0, 0.0, 2.0])
    out = np.zeros(4)
    return_after_call(x, out)
    np.testing.assert_array_equal(out, [7.0, 0.0, 0.0, 7.0])


def test_break_in_the_launch_is_refused(device):
    @tack.kernel
    def breaks(x):
        for i in range(x.shape[0]):
            if x[i] > 0:
                break

    x = np.ones(3)
    with pytest.raises(tack.CompileError) as e:
        breaks(x)
    assert "'break'" in str(e.value) and "parallel" in str(e.value)
    assert e.value.lineno is not None


def test_return_with_a_value_in_the_loop_is_refused(device):
    @tack.kernel
    def returns(x):
        for i in range(x.shape[0]):
            return x[i]

    with pytest.raises(tack.CompileError) as e:
        returns(np.ones(3))
    assert "output array" in str(e.value)


@needs_nvrtc
def test_early_exits_as_ptx(device):
    if device.name != "cpu":
        pytest.skip("PTX is generated once, from the CPU run")
    check_ptx(guarded, np.ones(4, np.float32), np.ones(4, np.float32), 2)
    check_ptx(skip_negatives, np.ones(4), np.ones(4))
    check_ptx(exit_from_inner_loop, np.ones(4, np.int64), np.ones(4, np.int64))
    check_ptx(grid_guard, np.ones((2, 2)), np.ones((2, 2)), 1, 1)
