"""Debug mode: bounds-checked kernels (tack.set_debug / TACK_DEBUG=1).

Every array access is checked against extents read at run time; a failed
access is skipped (a load gives 0, a store or atomic does nothing) and the
first failure of a launch -- the lowest launch index, then the first access
in it -- raises IndexError naming the kernel, this file and the line of the
access (found by its marker comment), the array, the index and the shape.

With debug mode off the kernels compile exactly as before: checked through
the disk cache's entries (object code and post-pass IR) of a process that
never turned debug mode on against one that toggled it.
"""
import os
import re
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import tack
from conftest import random_values

HIDDEN = ("i64", True, False, None)  # param_sig entry of each hidden array

MESSAGE = re.compile(
    r"kernel '(?P<kernel>[^']+)', (?P<file>.+):(?P<line>\d+): "
    r"index \((?P<index>[^()]*)\) is out of bounds for '(?P<array>[^']+)' "
    r"with shape \((?P<shape>[^()]*)\) \(launch index (?P<launch>-?\d+)\)")


@pytest.fixture
def debug():
    """Debug mode on for one test; the previous setting restored after."""
    before = tack.get_debug()
    tack.set_debug(True)
    yield
    tack.set_debug(before)


@pytest.fixture
def plain():
    before = tack.get_debug()
    tack.set_debug(False)
    yield
    tack.set_debug(before)


def check_message(exc_info, kernel, marker, array, index, shape, launch=None):
    """Every field of the IndexError's message, as the reference spells it."""
    msg = str(exc_info.value)
    m = MESSAGE.fullmatch(msg)
    assert m, f"message not in the expected format: {msg!r}"
    assert m["kernel"] == kernel, msg
    assert m["file"] == __file__, msg
    assert int(m["line"]) == here(marker), msg
    assert m["array"] == array, msg
    # "(8,)" for one dimension, "(0, 4)" for two: Python's tuple syntax.
    assert "(" + m["index"] + ")" == repr(tuple(index)), msg
    assert "(" + m["shape"] + ")" == repr(tuple(shape)), msg
    if launch is not None:
        assert int(m["launch"]) == launch, msg
    return m


def here(tag):
    """The line of this file that ends with the marker comment `#@<tag>`."""
    marker = "#@" + tag
    with open(__file__, encoding="utf-8") as f:
        hits = [n for n, text in enumerate(f, 1) if text.rstrip().endswith(marker)]
    assert len(hits) == 1, (marker, hits)
    return hits[0]


def f64(n, seed=0):
    return random_values(np.float64, int(np.prod(n)), seed=seed).reshape(n)


# ---- off-by-one reads and writes ---------------------------------------------

def test_read_past_end_1d(debug):
    @tack.kernel
    def shift_read(x, out):
        for i in range(x.shape[0]):
            out[i] = x[i + 1]  #@read1d

    x = f64(100)
    out = np.full(100, -1.0)
    with pytest.raises(IndexError) as e:
        shift_read(x, out)
    check_message(e, "shift_read", "read1d", "x", (100,), (100,), launch=99)
    np.testing.assert_array_equal(out[:-1], x[1:])


def test_write_past_end_1d(debug):
    @tack.kernel
    def shift_write(x, out):
        for i in range(x.shape[0]):
            out[i + 1] = x[i] * 2.0  #@write1d

    x = f64(77, seed=1)
    out = np.full(77, -1.0)
    with pytest.raises(IndexError) as e:
        shift_write(x, out)
    check_message(e, "shift_write", "write1d", "out", (77,), (77,), launch=76)
    np.testing.assert_array_equal(out[1:], x[:-1] * 2.0)
    assert out[0] == -1.0


def test_failed_load_gives_zero(debug):
    """A failed load is 0, not the value an earlier iteration loaded."""
    @tack.kernel
    def shift_read2(x, out):
        for i in range(out.shape[0]):
            out[i] = x[i + 2] + 100.0  #@zero

    x = np.arange(10.0, 18.0)
    out = np.full(8, -1.0)
    with pytest.raises(IndexError) as e:
        shift_read2(x, out)
    check_message(e, "shift_read2", "zero", "x", (8,), (8,), launch=6)
    np.testing.assert_array_equal(out, np.r_[x[2:] + 100.0, 100.0, 100.0])


def test_failed_atomic_does_nothing_and_gives_zero(debug):
    @tack.kernel
    def bump_next(h, old):
        for i in range(old.shape[0]):
            old[i] = tack.atomic_add(h, i + 1, 1)  #@atomic_old

    h = np.arange(10, 16, dtype=np.int64)
    old = np.full(6, -1, dtype=np.int64)
    with pytest.raises(IndexError) as e:
        bump_next(h, old)
    check_message(e, "bump_next", "atomic_old", "h", (6,), (6,), launch=5)
    np.testing.assert_array_equal(h, [10, 12, 13, 14, 15, 16])
    np.testing.assert_array_equal(old, [11, 12, 13, 14, 15, 0])


def test_read_2d_ndindex(debug):
    @tack.kernel
    def read2d(a, out):
        for i, j in tack.ndindex(a.shape[0], a.shape[1]):
            out[i, j] = a[i, j + 1]  #@read2d

    a = f64((6, 5), seed=2)
    out = np.full((6, 5), -1.0)
    with pytest.raises(IndexError) as e:
        read2d(a, out)
    # (0, 5) is inside the buffer (it is a[1, 0]) but outside the array.
    check_message(e, "read2d", "read2d", "a", (0, 5), (6, 5), launch=0)
    np.testing.assert_array_equal(out[:, :-1], a[:, 1:])


def test_write_2d_nested_range(debug):
    @tack.kernel
    def write2d(a, out):
        for i in range(a.shape[0]):
            for j in range(a.shape[1]):
                out[i + 1, j] = a[i, j]  #@write2d

    a = f64((4, 7), seed=3)
    out = np.full((4, 7), -1.0)
    with pytest.raises(IndexError) as e:
        write2d(a, out)
    check_message(e, "write2d", "write2d", "out", (4, 0), (4, 7), launch=3)
    np.testing.assert_array_equal(out[1:], a[:-1])
    assert (out[0] == -1.0).all()


def test_read_3d_ndindex(debug):
    @tack.kernel
    def read3d(a, out):
        for i, j, k in tack.ndindex(a.shape[0], a.shape[1], a.shape[2]):
            out[i, j, k] = a[i, j, k + 1]  #@read3d

    a = f64((3, 4, 5), seed=4)
    out = np.full((3, 4, 5), -1.0)
    with pytest.raises(IndexError) as e:
        read3d(a, out)
    check_message(e, "read3d", "read3d", "a", (0, 0, 5), (3, 4, 5), launch=0)
    np.testing.assert_array_equal(out[:, :, :-1], a[:, :, 1:])


def test_write_3d_nested_range(debug):
    @tack.kernel
    def write3d(a, out):
        for i in range(a.shape[0]):
            for j in range(a.shape[1]):
                for k in range(a.shape[2]):
                    out[i, j + 1, k] = a[i, j, k]  #@write3d

    a = f64((3, 4, 5), seed=5)
    out = np.full((3, 4, 5), -1.0)
    with pytest.raises(IndexError) as e:
        write3d(a, out)
    check_message(e, "write3d", "write3d", "out", (0, 4, 0), (3, 4, 5), launch=0)
    np.testing.assert_array_equal(out[:, 1:, :], a[:, :-1, :])
    # The row-wrapping stores (into out[i + 1, 0, k]) were skipped.
    assert (out[:, 0, :] == -1.0).all()


@tack.func
def next_of(arr, i):
    return arr[i + 1]  #@func_read


@tack.func
def put_next(arr, i, v):
    arr[i + 1] = v  #@func_write


def test_inside_device_function(debug):
    @tack.kernel
    def via_func(x, out):
        for i in range(x.shape[0]):
            out[i] = next_of(x, i)

    x = f64(50, seed=6)
    out = np.full(50, -1.0)
    with pytest.raises(IndexError) as e:
        via_func(x, out)
    # The array is named as the kernel's parameter.
    check_message(e, "via_func", "func_read", "x", (50,), (50,), launch=49)
    np.testing.assert_array_equal(out[:-1], x[1:])

    @tack.kernel
    def via_func_store(x, out):
        for i in range(x.shape[0]):
            put_next(out, i, x[i])

    out = np.full(50, -1.0)
    with pytest.raises(IndexError) as e:
        via_func_store(x, out)
    check_message(e, "via_func_store", "func_write", "out", (50,), (50,), launch=49)
    np.testing.assert_array_equal(out[1:], x[:-1])
    assert out[0] == -1.0


def test_inside_template_method(debug):
    if not hasattr(tack, "device_class"):
        pytest.skip("tack.device_class is not available in this build")
    try:
        @tack.device_class
        class Field:
            def __init__(self, data, offset):
                self.data = data
                self.offset = offset

            @tack.func
            def at(self, i):
                return self.data[i + 1] + self.offset  #@method

        @tack.kernel
        def via_method(f, out):
            for i in range(out.shape[0]):
                out[i] = f.at(i)

        data = f64(40, seed=7)
        f = Field(data, 0.5)
        out = np.full(40, -1.0)
    except Exception as exc:  # template classes may still be landing
        pytest.skip(f"template classes unavailable: {exc!r}")
    # Template classes must work without debug mode before debug mode is judged.
    tack.set_debug(False)
    try:
        probe = np.zeros(3)
        small = f64(4, seed=8)
        via_method(Field(small, 0.5), probe)
        np.testing.assert_array_equal(probe, small[1:] + 0.5)
    except Exception as exc:
        pytest.skip(f"template classes fail without debug mode: {exc!r}")
    finally:
        tack.set_debug(True)
    with pytest.raises(IndexError) as e:
        via_method(f, out)
    check_message(e, "via_method", "method", "f.data", (40,), (40,), launch=39)
    np.testing.assert_array_equal(out[:-1], data[1:] + 0.5)


def test_atomic_past_end(debug):
    @tack.kernel
    def histogram(idx, hist):
        for i in range(idx.shape[0]):
            tack.atomic_add(hist, idx[i], 1)  #@atomic

    idx = np.array([0, 1, 3, 8, 2, 9, 3, 7], dtype=np.int64)
    hist = np.zeros(8, dtype=np.int32)
    with pytest.raises(IndexError) as e:
        histogram(idx, hist)
    check_message(e, "histogram", "atomic", "hist", (8,), (8,), launch=3)
    good = idx[idx < 8]
    np.testing.assert_array_equal(hist, np.bincount(good, minlength=8))


def test_atomic_2d_tuple_index(debug):
    @tack.kernel
    def count2d(rows, cols, grid):
        for i in range(rows.shape[0]):
            tack.atomic_add(grid, (rows[i], cols[i]), 1.0)  #@atomic2d

    rows = np.array([0, 1, 2, 1, 0], dtype=np.int64)
    cols = np.array([0, 2, 1, 3, 1], dtype=np.int64)
    grid = np.zeros((3, 3))
    with pytest.raises(IndexError) as e:
        count2d(rows, cols, grid)
    check_message(e, "count2d", "atomic2d", "grid", (1, 3), (3, 3), launch=3)
    expected = np.zeros((3, 3))
    for r, c in zip(rows, cols):
        if c < 3:
            expected[r, c] += 1.0
    np.testing.assert_array_equal(grid, expected)


def test_negative_index_is_an_error(debug):
    @tack.kernel
    def prev(x, out):
        for i in range(x.shape[0]):
            out[i] = x[i - 1]  #@negative

    x = f64(30, seed=8)
    out = np.full(30, -1.0)
    with pytest.raises(IndexError) as e:
        prev(x, out)
    # No wraparound: x[-1] is not x[29].
    check_message(e, "prev", "negative", "x", (-1,), (30,), launch=0)
    np.testing.assert_array_equal(out[1:], x[:-1])


def test_negative_index_2d_store(debug):
    @tack.kernel
    def up(a, out):
        for i, j in tack.ndindex(a.shape[0], a.shape[1]):
            out[i, j - 1] = a[i, j]  #@negative2d

    a = f64((5, 4), seed=9)
    out = np.full((5, 4), -1.0)
    with pytest.raises(IndexError) as e:
        up(a, out)
    check_message(e, "up", "negative2d", "out", (0, -1), (5, 4), launch=0)
    np.testing.assert_array_equal(out[:, :-1], a[:, 1:])
    assert (out[:, -1] == -1.0).all()


def test_vector_array_access(debug):
    @tack.kernel
    def next_x(p, out):
        for i in range(out.shape[0]):
            out[i] = p[i + 1].x  #@vector

    p = tack.zeros((6,), dtype=tack.vec3f)
    out = np.full(6, -1.0, dtype=np.float32)
    with pytest.raises(IndexError) as e:
        next_x(p, out)
    msg = str(e.value)
    m = MESSAGE.fullmatch(msg)
    assert m, msg
    assert m["kernel"] == "next_x" and m["array"] == "p", msg
    assert int(m["line"]) == here("vector"), msg
    assert int(m["launch"]) == 5, msg
    # The vector index leads; the component (if shown) follows.
    assert m["index"].split(",")[0].strip() == "6", msg
    assert m["shape"].split(",")[0].strip() == "6", msg


def test_first_access_of_the_lowest_iteration(debug):
    """Iteration 3 fails on the later line, iteration 5 on the earlier one:
    the lowest iteration wins.  Within it, the first failing access."""
    @tack.kernel
    def two_sites(x, y, out):
        for i in range(out.shape[0]):
            a = 0.0
            b = 0.0
            if i == 5:
                a = x[i + 100]  #@site_a
            if i == 3:
                b = y[i + 200] + x[i + 300]  #@site_b
            out[i] = a + b

    x = f64(10, seed=10)
    y = f64(10, seed=11)
    out = np.zeros(10)
    with pytest.raises(IndexError) as e:
        two_sites(x, y, out)
    check_message(e, "two_sites", "site_b", "y", (203,), (10,), launch=3)


# ---- determinism ---------------------------------------------------------------

def test_lowest_failing_iteration_every_time(debug):
    @tack.kernel
    def ahead3(x, out):
        for i in range(x.shape[0]):
            out[i] = x[i + 3]  #@ahead3

    n = 5000
    x = f64(n, seed=12)
    for _ in range(5):
        out = np.full(n, -1.0)
        with pytest.raises(IndexError) as e:
            ahead3(x, out)
        check_message(e, "ahead3", "ahead3", "x", (n,), (n,), launch=n - 3)
        np.testing.assert_array_equal(out[:-3], x[3:])


def test_lowest_failing_iteration_parallel(debug, restore_default_device):
    tack.set_default_device(tack.device("cpu", num_threads=2))

    @tack.kernel
    def ahead3p(x, out):
        for i in range(x.shape[0]):
            out[i] = x[i + 3]  #@ahead3p

    @tack.kernel
    def scattered(x, out, n):
        for i in range(x.shape[0]):
            j = i
            if i % 4099 == 4000:
                j = i + n  # fails in every chunk of the launch
            out[i] = x[j]  #@scattered

    n = 1 << 20
    x = f64(n, seed=13)
    for _ in range(4):
        out = np.full(n, -1.0)
        with pytest.raises(IndexError) as e:
            ahead3p(x, out)
        check_message(e, "ahead3p", "ahead3p", "x", (n,), (n,), launch=n - 3)
        np.testing.assert_array_equal(out[:-3], x[3:])

        out = np.full(n, -1.0)
        with pytest.raises(IndexError) as e:
            scattered(x, out, n)
        check_message(e, "scattered", "scattered", "x", (4000 + n,), (n,), launch=4000)
        ok = np.arange(n) % 4099 != 4000
        np.testing.assert_array_equal(out[ok], x[ok])


def test_lowest_failing_outer_index_parallel_2d(debug, restore_default_device):
    tack.set_default_device(tack.device("cpu", num_threads=2))

    @tack.kernel
    def rows(a, out):
        for i, j in tack.ndindex(a.shape[0], a.shape[1]):
            k = j
            if i % 1000 == 777 and j == 2:
                k = j + i  # fails in many outer iterations
            out[i, j] = a[i, k]  #@rows

    a = f64((1 << 16, 4), seed=14)
    for _ in range(4):
        out = np.full(a.shape, -1.0)
        with pytest.raises(IndexError) as e:
            rows(a, out)
        check_message(e, "rows", "rows", "a", (777, 779), a.shape, launch=777)


# ---- nothing outside the array is touched --------------------------------------

def test_out_of_bounds_stores_touch_nothing_outside(debug):
    @tack.kernel
    def store_next(x, out):
        for i in range(x.shape[0]):
            out[i + 1] = x[i]

    @tack.kernel
    def store_prev(x, out):
        for i in range(x.shape[0]):
            out[i - 1] = x[i]

    @tack.kernel
    def atomic_next(out):
        for i in range(out.shape[0]):
            tack.atomic_add(out, i + 1, 1.0)

    n, pad = 64, 8
    x = f64(n, seed=15)
    for kernel, args in ((store_next, (x,)), (store_prev, (x,)), (atomic_next, ())):
        buf = np.full(n + 2 * pad, -7.0)
        view = buf[pad:pad + n]
        assert view.flags.c_contiguous
        with pytest.raises(IndexError):
            kernel(*args, view)
        assert (buf[:pad] == -7.0).all(), kernel
        assert (buf[pad + n:] == -7.0).all(), kernel
    np.testing.assert_array_equal(view, np.r_[-7.0, np.full(n - 1, -6.0)])


def test_out_of_bounds_2d_store_does_not_wrap_rows(debug):
    @tack.kernel
    def right(a, out):
        for i, j in tack.ndindex(a.shape[0], a.shape[1]):
            out[i, j + 1] = a[i, j]

    buf = np.full((7, 5), -7.0)
    view = buf[1:6]          # rows 1..5: contiguous
    a = f64((5, 5), seed=16)
    with pytest.raises(IndexError):
        right(a, view)
    np.testing.assert_array_equal(view[:, 1:], a[:, :-1])
    assert (view[:, 0] == -7.0).all()   # out[i, 5] would be out[i + 1, 0]
    assert (buf[0] == -7.0).all() and (buf[6] == -7.0).all()


# ---- toggling --------------------------------------------------------------------

def test_toggle_keeps_variants_apart(plain):
    @tack.kernel
    def scale2d(a, out, s):
        for i in range(a.shape[0]):
            for j in range(a.shape[1]):
                out[i, j] = a[i, j] * s

    def run(shape):
        a = f64(shape, seed=shape[0] * 100 + shape[1])
        out = np.zeros(shape)
        scale2d(a, out, 3.0)
        np.testing.assert_array_equal(out, a * 3.0)

    def split():
        keys = scale2d.variants()
        dbg = [k for k in keys if k[0][-2:] == (HIDDEN, HIDDEN)]
        ours = [k for k in keys if k not in dbg]
        return ours, dbg

    compiles = tack.stats()["compiles"]
    run((4, 8))
    ours, dbg = split()
    assert len(ours) == 1 and not dbg
    plain_sig = ours[0][0]
    assert len(plain_sig) == 3 and HIDDEN not in plain_sig
    assert ours[0][3] != (), "a 2-D plain kernel keys its row length"

    tack.set_debug(True)
    for shape in ((4, 8), (5, 16), (7, 3), (1, 1)):
        run(shape)
        ours, dbg = split()
        assert len(ours) == 1 and len(dbg) == 1, scale2d.variants()
    assert dbg[0][0] == plain_sig + (HIDDEN, HIDDEN)
    assert dbg[0][3] == (), "debug mode reads extents at run time"

    tack.set_debug(False)
    run((4, 8))                       # the plain variant, not the debug one
    assert split() == (ours, dbg)
    run((4, 16))                      # a new row length: a new plain variant
    ours, dbg = split()
    assert len(ours) == 2 and len(dbg) == 1
    assert all(len(k[0]) == 3 for k in ours)

    tack.set_debug(True)
    run((9, 16))
    assert len(scale2d.variants()) == 3
    assert tack.stats()["compiles"] - compiles == 3
    assert len(scale2d.ir_templates()) == 2


def test_debug_after_plain_and_plain_after_debug(plain):
    def make():
        @tack.kernel
        def offset_read(x, out, off):
            for i in range(out.shape[0]):
                out[i] = x[i + off] * 2.0  #@toggle
        return offset_read

    x = f64(32, seed=17)

    def good(k):
        out = np.zeros(32)
        k(x, out, 0)
        np.testing.assert_array_equal(out, x * 2.0)

    def bad(k):
        out = np.zeros(32)
        with pytest.raises(IndexError) as e:
            k(x, out, 1)
        check_message(e, "offset_read", "toggle", "x", (32,), (32,), launch=31)
        np.testing.assert_array_equal(out[:-1], x[1:] * 2.0)

    k = make()                    # plain first, then debug, then plain
    good(k)
    tack.set_debug(True)
    bad(k)
    good(k)
    tack.set_debug(False)
    good(k)
    assert len(k.variants()) == 2 and len(k.ir_templates()) == 2

    k = make()                    # debug first, then plain, then debug
    tack.set_debug(True)
    bad(k)
    tack.set_debug(False)
    good(k)
    tack.set_debug(True)
    bad(k)
    good(k)
    assert len(k.variants()) == 2 and len(k.ir_templates()) == 2


# ---- subprocesses: the disk cache and TACK_DEBUG ----------------------------------

CACHE_SCRIPT = textwrap.dedent("""\
    import sys
    import numpy as np
    import tack

    @tack.func
    def blend(a, i, j, w):
        return a[i, j] * w + a[i, j + 1] * (1.0 - w)

    @tack.kernel
    def smooth(a, out, w):
        for i in range(out.shape[0]):
            for j in range(out.shape[1]):
                out[i, j] = blend(a, i, j, w)  #@script

    a = np.arange(60.0).reshape(6, 10)
    out = np.zeros((6, 9))
    mode = sys.argv[1]

    def plain_run():
        smooth(a, out, 0.25)
        assert (out == a[:, :-1] * 0.25 + a[:, 1:] * 0.75).all()

    if mode == "plain":
        plain_run()
    elif mode == "toggle":
        tack.set_debug(True)
        plain_run()
        tack.set_debug(False)
        plain_run()
    elif mode == "oob":
        tack.set_debug(True)
        try:
            smooth(a, np.zeros((6, 10)), 0.25)
        except IndexError as e:
            print("MSG", e)
    s = tack.stats()
    print("STATS", s["compiles"], s["disk_hits"])
    """)


def run_script(path, *argv, **env_changes):
    env = dict(os.environ)
    env.pop("TACK_DEBUG", None)
    env.update(env_changes)
    return subprocess.run([sys.executable, str(path), *argv], env=env,
                          capture_output=True, text=True, timeout=120)


def cache_dir(tmp_path, name):
    d = tmp_path / name
    d.mkdir()
    os.chmod(d, 0o700)
    return d


def entries(root):
    """{file name: bytes} of the cache's entries (dot files left out)."""
    out = {}
    for dirpath, _, files in os.walk(root):
        for f in files:
            if not f.startswith("."):
                assert f not in out, f"two entries named {f}"
                with open(os.path.join(dirpath, f), "rb") as fh:
                    out[f] = fh.read()
    return out


def stats_of(proc):
    assert proc.returncode == 0, proc.stderr
    line = [ln for ln in proc.stdout.splitlines() if ln.startswith("STATS")]
    assert len(line) == 1, proc.stdout
    return tuple(int(v) for v in line[0].split()[1:])


def test_plain_code_identical_to_a_process_without_debug(tmp_path):
    script = tmp_path / "smooth_script.py"
    script.write_text(CACHE_SCRIPT)
    never = cache_dir(tmp_path, "never")
    toggled = cache_dir(tmp_path, "toggled")

    p1 = run_script(script, "plain", TACK_CACHE="write", TACK_CACHE_DIR=str(never))
    assert stats_of(p1) == (1, 0)
    p2 = run_script(script, "toggle", TACK_CACHE="write", TACK_CACHE_DIR=str(toggled))
    assert stats_of(p2) == (2, 0)

    # Each level stores one entry per kernel: its IR template and its variant.
    a, b = entries(never), entries(toggled)
    assert len(a) == 2, sorted(a)
    assert set(a) < set(b), (sorted(a), sorted(b))
    assert len(b) == 4, sorted(b)
    for name, data in a.items():
        assert b[name] == data, f"the plain entry {name} differs after debug mode ran"
    for extra in set(b) - set(a):  # the debug template and variant
        assert b[extra] not in a.values()


def test_debug_message_survives_the_disk_cache(tmp_path):
    script = tmp_path / "smooth_script.py"
    script.write_text(CACHE_SCRIPT)
    d = cache_dir(tmp_path, "cache")
    first = run_script(script, "oob", TACK_CACHE="write", TACK_CACHE_DIR=str(d))
    assert stats_of(first) == (1, 0)
    second = run_script(script, "oob", TACK_CACHE="write", TACK_CACHE_DIR=str(d))
    assert stats_of(second) == (0, 1)
    msgs = [[ln for ln in p.stdout.splitlines() if ln.startswith("MSG ")]
            for p in (first, second)]
    assert len(msgs[0]) == 1 and msgs[0] == msgs[1], (first.stdout, second.stdout)
    m = MESSAGE.fullmatch(msgs[1][0][4:])
    assert m, msgs
    assert m["kernel"] == "smooth" and m["array"] == "a"
    assert m["file"] == str(script)
    assert int(m["line"]) == CACHE_SCRIPT.splitlines().index(
        "    return a[i, j] * w + a[i, j + 1] * (1.0 - w)") + 1
    assert m["index"] == "0, 10" and m["shape"] == "6, 10" and m["launch"] == "0"


ENV_SCRIPT = textwrap.dedent("""\
    import numpy as np
    import tack

    @tack.kernel
    def ahead(x, out):
        for i in range(x.shape[0]):
            out[i] = x[i + 1]

    print("DEBUG", tack.get_debug())
    x = np.arange(4.0)
    if tack.get_debug():
        try:
            ahead(x, np.zeros(4))
        except IndexError as e:
            print("RAISED", e)
    """)


def test_tack_debug_environment_variable(tmp_path):
    script = tmp_path / "env_script.py"
    script.write_text(ENV_SCRIPT)
    on = run_script(script, TACK_DEBUG="1", TACK_CACHE="off")
    assert on.returncode == 0, on.stderr
    assert "DEBUG True" in on.stdout, on.stdout
    raised = [ln for ln in on.stdout.splitlines() if ln.startswith("RAISED ")]
    assert len(raised) == 1, on.stdout
    m = MESSAGE.fullmatch(raised[0][7:])
    assert m and m["kernel"] == "ahead" and m["index"] == "4," and m["line"] == "7", raised

    off = run_script(script, TACK_CACHE="off")
    assert off.returncode == 0, off.stderr
    assert "DEBUG False" in off.stdout, off.stdout
