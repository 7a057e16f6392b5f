"""Bounds that follow from the launch range, checked outside debug mode.

An access whose index is a launch variable plus constants (and perhaps one
scalar parameter), run by every iteration, is checked once per call against
the evaluated launch range before anything runs: a launch that would leave
an array raises IndexError naming the kernel, the array, the indices and
the shape, and writes nothing.  Accesses under an `if`, in an inner loop or
with data-dependent indices stay unchecked outside debug mode.

The arrays a refused launch would overrun are views at the front of larger
buffers, so that a Tack without the check (whose overrun lands in the rest
of the buffer) fails these tests instead of corrupting memory; the cases
that need an exact-size allocation run in a subprocess.
"""
import os
import re
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import tack

SENTINEL = -7.0


@pytest.fixture(autouse=True)
def plain():
    """The check is what plain (non-debug) launches do."""
    before = tack.get_debug()
    tack.set_debug(False)
    yield
    tack.set_debug(before)


def guarded(shape, room=64, fill=SENTINEL, dtype=np.float32):
    """A C-contiguous array of `shape` at the front of a larger buffer filled
    with `fill`; returns (array, buffer)."""
    n = int(np.prod(shape))
    buf = np.full(n + room, fill, dtype=dtype)
    return buf[:n].reshape(shape), buf


def refused(fn, *args, message):
    """fn(*args) raises IndexError with exactly `message`."""
    with pytest.raises(IndexError) as e:
        fn(*args)
    assert str(e.value) == message
    return e


@tack.kernel
def add(x, y, out):
    for i in range(x.shape[0]):
        out[i] = x[i] + y[i]


def test_output_shorter_than_the_launch():
    x = np.arange(16, dtype=np.float32)
    y = np.ones(16, dtype=np.float32)
    out, buf = guarded((4,))
    x0, y0 = x.copy(), y.copy()
    # Twice: the second call goes through the dispatch fast path.
    for _ in range(2):
        refused(add, x, y, out,
                message="kernel 'add': the launch writes out[0..15] but 'out' has shape (4,)")
        assert (buf == SENTINEL).all(), "nothing may be written"
        assert (x == x0).all() and (y == y0).all()


def test_input_shorter_than_the_launch():
    @tack.kernel
    def add_out(x, y, out):
        for i in range(out.shape[0]):
            out[i] = x[i] + y[i]

    x = np.arange(16, dtype=np.float32)
    y, _ = guarded((8,), fill=1.0)
    out = np.full(16, SENTINEL, dtype=np.float32)
    refused(add_out, x, y, out,
            message="kernel 'add_out': the launch reads y[0..15] but 'y' has shape (8,)")
    assert (out == SENTINEL).all()


def test_in_bounds_calls_run_and_match_numpy():
    x = np.arange(16, dtype=np.float32)
    y = np.full(16, 0.5, dtype=np.float32)
    out = np.zeros(16, dtype=np.float32)
    add(x, y, out)
    np.testing.assert_array_equal(out, x + y)
    # Longer outputs are fine: only the launch's indices must fit.
    longer = np.zeros(20, dtype=np.float32)
    add(x, y, longer)
    np.testing.assert_array_equal(longer[:16], x + y)
    assert (longer[16:] == 0).all()
    # tack.Array arguments.
    tx, ty, to = tack.array(x), tack.array(y), tack.zeros((16,))
    add(tx, ty, to)
    np.testing.assert_array_equal(to.numpy(), x + y)


def test_2d_ndindex_one_array_too_small_in_one_dimension():
    @tack.kernel
    def scale2(a, out):
        for i, j in tack.ndindex(out.shape[0], out.shape[1]):
            out[i, j] = a[i, j] * 2.0

    a, _ = guarded((16, 4), fill=1.0)
    out = np.full((16, 8), SENTINEL, dtype=np.float32)
    refused(scale2, a, out,
            message="kernel 'scale2': the launch reads a[:, 0..7] but 'a' has shape (16, 4)")
    assert (out == SENTINEL).all()
    tall, _ = guarded((8, 8), fill=1.0)
    refused(scale2, tall, out,
            message="kernel 'scale2': the launch reads a[0..15, :] but 'a' has shape (8, 8)")
    # Fitting shapes run and match NumPy.
    a = np.arange(16 * 8, dtype=np.float32).reshape(16, 8)
    scale2(a, out)
    np.testing.assert_array_equal(out, a * 2.0)


@tack.kernel
def shift_up(a, out, n):
    for i in range(n):
        out[i] = a[i + 1] - a[i]


def test_offset_past_the_end_raises():
    a, _ = guarded((8,), fill=1.0)
    out, buf = guarded((8,))
    refused(shift_up, a, out, 8,
            message="kernel 'shift_up': the launch reads a[0..8] but 'a' has shape (8,)")
    assert (buf == SENTINEL).all()


def test_offset_within_a_shorter_launch_matches_numpy():
    a = (np.arange(8, dtype=np.float32) ** 2)
    out = np.full(8, SENTINEL, dtype=np.float32)
    shift_up(a, out, 7)
    np.testing.assert_array_equal(out[:7], np.diff(a))
    assert out[7] == SENTINEL

    @tack.kernel
    def backward(a, out):
        for i in range(1, a.shape[0]):
            out[i] = a[i] - a[i - 1]

    out = np.zeros(8, dtype=np.float32)
    backward(a, out)
    np.testing.assert_array_equal(out[1:], np.diff(a))


def test_negative_index_is_out_of_bounds():
    @tack.kernel
    def back(a, out):
        for i in range(out.shape[0]):
            out[i] = a[i - 1]

    buf = np.full(9, 3.0, dtype=np.float32)
    a = buf[1:]  # a[-1] would read buf[0]: kernels never wrap indices
    out = np.full(8, SENTINEL, dtype=np.float32)
    refused(back, a, out,
            message="kernel 'back': the launch reads a[-1..6] but 'a' has shape (8,)")
    assert (out == SENTINEL).all()


@tack.kernel
def fill(out, start, stop, step):
    for i in range(start, stop, step):
        out[i] = i


def test_range_with_start_and_step():
    out = np.zeros(16, dtype=np.float32)
    fill(out, 2, 16, 3)
    expect = np.zeros(16, dtype=np.float32)
    expect[2:16:3] = np.arange(2, 16, 3)
    np.testing.assert_array_equal(out, expect)
    # The last index is start + (trips - 1) * step, not stop - 1.
    out, buf = guarded((15,), fill=0.0)
    fill(out, 2, 17, 3)
    assert out[14] == 14
    out, buf = guarded((14,))
    refused(fill, out, 2, 17, 3,
            message="kernel 'fill': the launch writes out[2..14] but 'out' has shape (14,)")
    assert (buf == SENTINEL).all()
    # A negative step.
    out = np.zeros(8, dtype=np.float32)
    fill(out, 7, -1, -2)
    np.testing.assert_array_equal(out, [0, 1, 0, 3, 0, 5, 0, 7])
    buf = np.full(9, SENTINEL, dtype=np.float32)
    refused(fill, buf[1:], 7, -2, -1,
            message="kernel 'fill': the launch writes out[-1..7] but 'out' has shape (8,)")
    assert (buf == SENTINEL).all()


def test_empty_launch_checks_nothing():
    empty = np.empty(0, dtype=np.float32)
    add(empty, empty, empty)
    out = np.empty(0, dtype=np.float32)
    shift_up(empty, out, 0)
    fill(out, 5, 5, 1)
    fill(out, 0, 10, -1)

    @tack.kernel
    def grid(a, out):
        for i, j in tack.ndindex(out.shape[0], out.shape[1]):
            out[i, j] = a[i + 1, j + 5]

    grid(np.empty((0, 0), dtype=np.float32), np.empty((4, 0), dtype=np.float32))


@tack.kernel
def offset_by(a, out, k):
    for i in range(out.shape[0]):
        out[i] = a[i + k]


def test_scalar_offset():
    a = np.arange(12, dtype=np.float32)
    out = np.zeros(8, dtype=np.float32)
    offset_by(a, out, 4)
    np.testing.assert_array_equal(out, a[4:12])
    out[:] = SENTINEL
    refused(offset_by, a, out, 5,
            message="kernel 'offset_by': the launch reads a[5..12] but 'a' has shape (12,)")
    refused(offset_by, a, out, -1,
            message="kernel 'offset_by': the launch reads a[-1..6] but 'a' has shape (12,)")
    assert (out == SENTINEL).all()


def test_constant_index():
    @tack.kernel
    def column(a, out):
        for i in range(out.shape[0]):
            out[i] = a[i, 3]

    a, _ = guarded((8, 3), fill=1.0)
    out = np.full(8, SENTINEL, dtype=np.float32)
    refused(column, a, out,
            message="kernel 'column': the launch reads a[:, 3] but 'a' has shape (8, 3)")
    assert (out == SENTINEL).all()
    a = np.arange(32, dtype=np.float32).reshape(8, 4)
    column(a, out)
    np.testing.assert_array_equal(out, a[:, 3])


def test_atomic_index():
    @tack.kernel
    def bump(counts, n):
        for i in range(n):
            tack.atomic_add(counts, i + 1, 1)

    counts, buf = guarded((4,), fill=0, dtype=np.int32)
    refused(bump, counts, 4,
            message="kernel 'bump': the launch writes counts[1..4] but 'counts' has shape (4,)")
    assert (buf == 0).all()
    bump(counts, 3)
    np.testing.assert_array_equal(counts, [0, 1, 1, 1])


@tack.device_class
class Field:
    def __init__(self, data, offset):
        self.data = data
        self.offset = offset

    @tack.func
    def at(self, i):
        return self.data[i] + self.offset


@tack.kernel
def sample(f, out):
    for i in range(out.shape[0]):
        out[i] = f.at(i)


@tack.kernel
def sample_direct(f, out):
    for i in range(out.shape[0]):
        out[i] = f.data[i + 1] * 2.0


def test_template_array_fields():
    data, _ = guarded((4,), fill=1.0)
    out = np.full(8, SENTINEL, dtype=np.float32)
    refused(sample, Field(data, 0.5), out,
            message="kernel 'sample': the launch reads f.data[0..7] but 'f.data' has shape (4,)")
    refused(sample_direct, Field(data, 0.5), out,
            message="kernel 'sample_direct': the launch reads f.data[1..8] but 'f.data' has "
                    "shape (4,)")
    assert (out == SENTINEL).all()
    data = np.arange(9, dtype=np.float32)
    sample(Field(data, 0.5), out)
    np.testing.assert_array_equal(out, data[:8] + np.float32(0.5))
    sample_direct(Field(data, 0.5), out)
    np.testing.assert_array_equal(out, data[1:] * 2)


def test_vector_arrays_match_numpy():
    @tack.kernel
    def norms(p, out):
        for i in range(out.shape[0]):
            out[i] = p[i].length()

    @tack.kernel
    def fill(out, start, stop, step):
        for i in range(start, stop, step):
            out[i] = i

    @tack.kernel
    def offset_by(a, out, k):
        for i in range(out.shape[0]):
            out[i] = a[i + k]

    pts = np.arange(24, dtype=np.float32).reshape(8, 3)
    p = tack.array(pts, dtype=tack.vec3f)
    out = np.zeros(8, dtype=np.float32)
    norms(p, out)
    np.testing.assert_allclose(out, np.sqrt((pts.astype(np.float64) ** 2).sum(1)), rtol=1e-6)


def test_guarded_accesses_are_not_refused():
    """A stencil's boundary guard keeps its accesses in bounds: the launch
    must run even though a[i - 1] and a[i + 1] would leave the array at the
    ends of the range."""
    @tack.kernel
    def smooth(a, out):
        for i in range(a.shape[0]):
            if i > 0 and i < a.shape[0] - 1:
                out[i] = (a[i - 1] + a[i] + a[i + 1]) / 3.0
            else:
                out[i] = a[i]

    a = np.arange(10, dtype=np.float32) ** 2
    out = np.zeros(10, dtype=np.float32)
    smooth(a, out)
    expect = a.copy()
    expect[1:-1] = (a[:-2] + a[1:-1] + a[2:]) / np.float32(3.0)
    np.testing.assert_array_equal(out, expect)

    @tack.func
    def at_or_zero(a, i):
        if i >= a.shape[0]:
            return 0.0
        return a[i]

    @tack.kernel
    def padded(a, out):
        for i in range(out.shape[0]):
            out[i] = at_or_zero(a, i)

    out = np.full(6, SENTINEL, dtype=np.float32)
    padded(np.ones(4, dtype=np.float32), out)
    np.testing.assert_array_equal(out, [1, 1, 1, 1, 0, 0])


def test_data_dependent_indices_are_not_checked():
    """A gather's index comes from data: it stays unchecked outside debug
    mode (only debug mode checks it), so this is a correctness test of an
    in-bounds gather."""
    @tack.kernel
    def gather(a, idx, out):
        for i in range(out.shape[0]):
            out[i] = a[idx[i]]

    a = np.arange(10, dtype=np.float32) * 3
    idx = np.array([9, 0, 4, 4, 2], dtype=np.int64)
    out = np.zeros(5, dtype=np.float32)
    gather(a, idx, out)
    np.testing.assert_array_equal(out, a[idx])


def test_debug_mode_reports_as_before():
    """Debug mode's own checks find the failing access and its line; the
    launch check is not run in front of them."""
    x = np.arange(16, dtype=np.float32)
    out, buf = guarded((4,))
    tack.set_debug(True)
    with pytest.raises(IndexError) as e:
        add(x, x, out)
    msg = str(e.value)
    assert re.fullmatch(r"kernel 'add', .*test_launch_bounds\.py:\d+: index \(4,\) is out of "
                        r"bounds for 'out' with shape \(4,\) \(launch index 4\)", msg), msg
    assert (buf[4:] == SENTINEL).all()


SCRIPT = textwrap.dedent("""
    import numpy as np, tack

    @tack.kernel
    def add(x, y, out):
        for i in range(x.shape[0]):
            out[i] = x[i] + y[i]

    @tack.kernel
    def norms(p, out):
        for i in range(out.shape[0]):
            out[i] = p[i].length()

    @tack.kernel
    def fill(out, start, stop, step):
        for i in range(start, stop, step):
            out[i] = i

    @tack.kernel
    def offset_by(a, out, k):
        for i in range(out.shape[0]):
            out[i] = a[i + k]

    def attempt(name, fn, *args):
        try:
            fn(*args)
            print(name, "ran")
        except IndexError as e:
            print(name, "IndexError:", e)

    x16 = np.arange(16, dtype=np.float32)
    attempt("numpy", add, x16, x16, np.zeros(4, dtype=np.float32))
    attempt("tack", add, tack.array(x16), tack.array(x16), tack.zeros((4,)))
    attempt("vector", norms, tack.empty((4,), dtype=tack.vec3f), tack.zeros((64,)))
    # Indices near the i64 limits, and i + k past it (the check does not wrap).
    attempt("far", fill, np.zeros(8, dtype=np.float32), 2**62, 2**63 - 1, 2**61)
    attempt("wrap", offset_by, np.zeros(8, dtype=np.float32), np.zeros(8, dtype=np.float32),
            2**63 - 1)
    print("done")
""")


def test_exact_size_arrays_in_a_subprocess(tmp_path):
    """The issue's call, add(x16, y16, out4), with arrays of exactly their
    size (an overrun would corrupt the heap), in a fresh process."""
    script = tmp_path / "exact_size.py"
    script.write_text(SCRIPT)
    env = dict(os.environ, TACK_DEBUG="0")
    p = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                       env=env, timeout=300)
    assert p.returncode == 0, p.stderr
    assert p.stdout.splitlines() == [
        "numpy IndexError: kernel 'add': the launch writes out[0..15] but 'out' has shape (4,)",
        "tack IndexError: kernel 'add': the launch writes out[0..15] but 'out' has shape (4,)",
        "vector IndexError: kernel 'norms': the launch reads p[0..63] but 'p' has shape (4,)",
        f"far IndexError: kernel 'fill': the launch writes out[{2**62}..{3 * 2**61}] but 'out' "
        "has shape (8,)",
        f"wrap IndexError: kernel 'offset_by': the launch reads a[{2**63 - 1}..{2**63 + 6}] but "
        "'a' has shape (8,)",
        "done",
    ], p.stdout + p.stderr
