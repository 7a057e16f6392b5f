"""Bounds of accesses inside inner sequential loops, checked at launch.

An inner `for` loop whose range is made of literals, scalar parameters and
shapes (`range(u.shape[1])`, `range(1, m - 1)`, `range(n - 1, -1, -1)`)
has a range known when the call is made, so an access in its body indexed
by its variable (and the launch variable) plus constants is checked once
per call, before anything runs, like the launch's own accesses
(docs/language.md, "Bounds checked outside debug mode").  Numba's periodic
stencil idiom `u[i - 1, j]`, which NumPy wraps at i = 0, is refused with
IndexError instead of reading before the array.

Arrays a refused launch would overrun sit inside larger buffers filled with
a sentinel, so a Tack without the check reads the sentinel (or writes over
it) instead of corrupting memory.
"""
import numpy as np
import pytest

import tack

pytestmark = pytest.mark.every_device

SENTINEL = np.float32(-7.0)


@pytest.fixture(autouse=True)
def plain():
    before = tack.get_debug()
    tack.set_debug(False)
    yield
    tack.set_debug(before)


def inside(shape, room=64):
    """An array of `shape` in the middle of a buffer of sentinels."""
    n = int(np.prod(shape))
    buf = np.full(n + 2 * room, SENTINEL, dtype=np.float32)
    return buf[room:room + n].reshape(shape), buf


def refused(fn, *args, match):
    with pytest.raises(IndexError, match=match):
        fn(*args)


@tack.kernel
def periodic_rows(u, out):
    # Numba's periodic stencil: NumPy's u[i - 1] wraps at i = 0; here it
    # must not read before the array.
    for i in range(u.shape[0]):
        for j in range(u.shape[1]):
            out[i, j] = u[i - 1, j] + u[i, j]


@tack.kernel
def interior_rows(u, out):
    for i in range(1, u.shape[0] - 1):
        for j in range(1, u.shape[1] - 1):
            out[i, j] = 0.25 * (u[i - 1, j] + u[i + 1, j] + u[i, j - 1] + u[i, j + 1])


@tack.kernel
def column_shift(u, out, m):
    for i in range(u.shape[0]):
        for j in range(1, m - 1):
            out[i, j] = u[i, j + 1] - u[i, j - 1]


@tack.kernel
def sum_shifted(x, out, shift):
    for i in range(out.shape[0]):
        s = 0.0
        for k in range(x.shape[0]):
            s += x[k + shift]
        out[i] = s


@tack.kernel
def write_row(out, m):
    for i in range(out.shape[0]):
        for j in range(m):
            out[i, j] = 1.0


@tack.kernel
def stepped(x, out, stop, step):
    for i in range(out.shape[0]):
        s = 0.0
        for k in range(0, stop, step):
            s += x[k]
        out[i] = s


@tack.kernel
def reversed_sum(x, out, last):
    for i in range(out.shape[0]):
        s = 0.0
        for k in range(x.shape[0] - 1, last, -1):
            s += x[k] * (i + 1)
        out[i] = s


@tack.kernel
def nested(w, out, rows, cols):
    for i in range(out.shape[0]):
        s = 0.0
        for a in range(rows):
            for b in range(cols):
                s += w[a, b] * (i + 1)
        out[i] = s


@tack.kernel
def local_index(u, out):
    for i in range(u.shape[0]):
        k = i - 1
        for j in range(u.shape[1]):
            out[i, j] = u[k, j]


def test_periodic_stencil_read_before_the_array(device):
    u, _ = inside((8, 5))
    u[...] = np.arange(40, dtype=np.float32).reshape(8, 5)
    out = np.zeros((8, 5), np.float32)
    refused(periodic_rows, u, out,
            match=r"kernel 'periodic_rows': the launch reads u\[-1\.\.6, :\] but 'u' has shape \(8, 5\)")
    assert not out.any()  # nothing written


def test_in_bounds_stencil_matches_numpy(device):
    rng = np.random.default_rng(1)
    u = rng.random((9, 7), dtype=np.float32)
    out = np.zeros_like(u)
    interior_rows(u, out)
    want = np.zeros_like(u)
    want[1:-1, 1:-1] = np.float32(0.25) * (u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2]
                                           + u[1:-1, 2:])
    np.testing.assert_allclose(out, want, rtol=1e-6)


def test_scalar_bound_past_the_end(device):
    u, _ = inside((4, 6))
    u[...] = 1
    out = np.zeros((4, 6), np.float32)
    column_shift(u, out, 6)  # j + 1 <= 5: inside
    assert not out.any()
    refused(column_shift, u, out, 7,
            match=r"reads u\[:, 0\.\.6\] but 'u' has shape \(4, 6\)")


def test_scalar_in_index_both_ends(device):
    x, _ = inside((5,))
    x[...] = np.arange(5)
    out = np.zeros(3, np.float32)
    sum_shifted(x, out, 0)
    assert (out == 10).all()
    refused(sum_shifted, x, out, 1, match=r"reads x\[1\.\.5\] but 'x' has shape \(5,\)")
    refused(sum_shifted, x, out, -1, match=r"reads x\[-1\.\.3\]")


def test_write_past_the_end_writes_nothing(device):
    out, buf = inside((3, 4))
    out[...] = 0
    write_row(out, 4)
    assert (out == 1).all()
    out[...] = 0
    refused(write_row, out, 5, match=r"kernel 'write_row': the launch writes out\[:, 0\.\.4\] "
                                     r"but 'out' has shape \(3, 4\)")
    assert not out.any()
    assert (buf[:64] == SENTINEL).all() and (buf[-64:] == SENTINEL).all()


def test_zero_trip_inner_loop_checks_nothing(device):
    out = np.zeros((3, 4), np.float32)
    write_row(out, 0)
    write_row(out, -3)
    assert not out.any()


def test_steps_take_the_last_value_taken(device):
    x, _ = inside((9,))
    x[...] = np.arange(9)
    out = np.zeros(2, np.float32)
    stepped(x, out, 9, 4)  # 0, 4, 8: stop 9 is not taken
    assert (out == 12).all()
    stepped(x, out, 12, 4)  # 0, 4, 8 again
    assert (out == 12).all()


def test_step_past_the_end_refused(device):
    x, _ = inside((9,))
    out = np.zeros(2, np.float32)
    refused(stepped, x, out, 11, 5, match=r"reads x\[0\.\.10\] but 'x' has shape \(9,\)")
    stepped(x, out, 0, -1)  # no trips


def test_negative_step(device):
    x, _ = inside((6,))
    x[...] = np.arange(6)
    out = np.zeros(3, np.float32)
    reversed_sum(x, out, -1)  # 5 .. 0
    np.testing.assert_array_equal(out, 15 * np.arange(1, 4, dtype=np.float32))
    refused(reversed_sum, x, out, -2, match=r"reads x\[-1\.\.5\]")


def test_nested_inner_loops(device):
    w, _ = inside((3, 4))
    w[...] = np.arange(12).reshape(3, 4)
    out = np.zeros(2, np.float32)
    nested(w, out, 3, 4)
    np.testing.assert_array_equal(out, [66, 132])
    refused(nested, w, out, 3, 5, match=r"reads w\[:, 0\.\.4\] but 'w' has shape \(3, 4\)")
    refused(nested, w, out, 4, 4, match=r"reads w\[0\.\.3, :\]")
    nested(w, out, 0, 9)  # the inner loop never runs
    assert not out.any()


def test_local_assigned_before_the_loop(device):
    u, _ = inside((4, 3))
    out = np.zeros((4, 3), np.float32)
    refused(local_index, u, out, match=r"reads u\[-1\.\.2, :\]")
    assert not out.any()


# Accesses in inner loops that the launch cannot prove are checked per
# access: a failed one raises IndexError naming the line (as debug mode).

@tack.kernel
def conv(x, w, out):
    for i in range(out.shape[0]):
        s = 0.0
        for k in range(w.shape[0]):
            s += x[i + k] * w[k]
        out[i] = s


@tack.kernel
def strided_conv(x, w, out):
    for i in range(out.shape[0]):
        s = 0.0
        for k in range(w.shape[0]):
            s += x[2 * i + k] * w[k]
        out[i] = s


@tack.kernel
def triangle(a, out):
    for i in range(out.shape[0]):
        for j in range(i + 1):
            out[i, j] = a[i - j]


@tack.kernel
def scatter_rows(idx, out):
    for i in range(out.shape[0]):
        k = 0
        while k < idx.shape[0]:
            out[i, idx[k]] = k + 1.0
            k += 1


@tack.kernel
def guarded_rows(u, out):
    for i in range(u.shape[0]):
        for j in range(u.shape[1]):
            if j > 0 and i > 0:
                out[i, j] = u[i - 1, j - 1]
        for j in range(u.shape[1]):
            if j == u.shape[1] - 1:
                break
            out[i, j] += u[i, j + 1]


def test_computed_index_read_past_the_end(device):
    x, _ = inside((10,))
    x[...] = np.arange(10)
    w = np.ones(3, np.float32)
    out = np.zeros(8, np.float32)
    conv(x, w, out)
    np.testing.assert_array_equal(out, np.convolve(x, w, "valid"))
    out = np.zeros(9, np.float32)
    # i + k: both ranges are known, so the launch refuses it.
    refused(conv, x, w, out, match=r"kernel 'conv': the launch reads x\[0\.\.10\] but 'x' has "
                                   r"shape \(10,\)")
    assert not out.any()
    out = np.zeros(4, np.float32)
    strided_conv(x, w, out)
    np.testing.assert_array_equal(out, np.convolve(x, w, "valid")[::2])
    out = np.zeros(5, np.float32)
    # 2 * i + k is computed: checked where it is read.
    refused(strided_conv, x, w, out,
            match=r"kernel 'strided_conv', .*test_inner_loop_bounds.py:\d+: an index is "
                  r"out of bounds for 'x' with shape \(10,\); nothing was read or written there")


def test_range_of_the_launch_variable(device):
    a, _ = inside((4,))
    a[...] = [1, 2, 3, 4]
    out = np.zeros((4, 4), np.float32)
    triangle(a, out)
    want = np.zeros((4, 4), np.float32)
    for i in range(4):
        for j in range(i + 1):
            want[i, j] = a[i - j]
    np.testing.assert_array_equal(out, want)
    out = np.zeros((5, 5), np.float32)
    refused(triangle, a, out, match=r"test_inner_loop_bounds.py:\d+: an index is out of bounds for "
                                    r"'a' with shape \(4,\)")


def test_index_read_from_an_array_in_a_while_loop(device):
    out, buf = inside((2, 3))
    out[...] = 0
    scatter_rows(np.array([2, 0], np.int32), out)
    np.testing.assert_array_equal(out, [[2, 0, 1], [2, 0, 1]])
    for bad in (-1, 3):
        out[...] = 0
        refused(scatter_rows, np.array([0, bad], np.int32), out,
                match=r"an index is out of bounds for 'out' with shape \(2, 3\)")
        # The good stores ran, the bad one was skipped.
        np.testing.assert_array_equal(out, [[1, 0, 0], [1, 0, 0]])
        assert (buf[:64] == SENTINEL).all() and (buf[-64:] == SENTINEL).all()


def test_guarded_accesses_are_not_refused(device):
    u = np.arange(12, dtype=np.float32).reshape(3, 4)
    out = np.zeros_like(u)
    guarded_rows(u, out)
    want = np.zeros_like(u)
    want[1:, 1:] = u[:-1, :-1]
    want[:, :-1] += u[:, 1:]
    np.testing.assert_array_equal(out, want)
