"""Calls from several threads at once, refused calls, and arrays that share
storage: every result equals NumPy's (or the same call on fresh copies), and
each call's variant carries the right disjoint bit."""
import threading

import numpy as np
import pytest

import tack
from conftest import assert_bitwise_equal, name_in_message, random_values

F32 = ("f32", True, False, None)


def run_threads(count, target, timeout=120):
    """Runs target(index) on `count` threads; re-raises the first failure."""
    errors = []

    def wrap(index):
        try:
            target(index)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=wrap, args=(i,)) for i in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout)
        assert not t.is_alive(), "a thread did not finish (deadlock?)"
    if errors:
        raise errors[0]


# ---- two threads miss on one key at once ---------------------------------------

def make_affine():
    @tack.kernel
    def affine(x, out, a):
        for i in range(x.shape[0]):
            out[i] = x[i] * a + 1.0
    return affine


def test_two_threads_miss_on_one_key():
    n = 100_000
    x = random_values(np.float32, n, seed=11)
    expected = x * np.float32(1.5) + np.float32(1.0)
    key = ((F32, F32, ("f32", False, False, None)), (), (), (), True)
    for _ in range(20):
        kernel = make_affine()
        outs = [np.zeros(n, np.float32) for _ in range(2)]
        barrier = threading.Barrier(2)
        compiles = tack.stats()["compiles"]

        def call(index):
            barrier.wait()
            kernel(x, outs[index], 1.5)

        run_threads(2, call)
        for out in outs:
            assert_bitwise_equal(out, expected)
        # both threads may compile, but only that one key is published
        assert 1 <= tack.stats()["compiles"] - compiles <= 2
        keys = kernel.variants()
        assert keys and all(k == key for k in keys), keys
        assert len(kernel.ir_templates()) == 1

        # later calls are hits and still right
        compiles = tack.stats()["compiles"]
        out = np.zeros(n, np.float32)
        kernel(x, out, 1.5)
        assert_bitwise_equal(out, expected)
        assert tack.stats()["compiles"] == compiles


# ---- eight threads, eight dtypes ---------------------------------------------------

@tack.kernel
def add_mixed(x, y, out):
    for i in range(x.shape[0]):
        out[i] = x[i] + y[i]


MIXED = [np.float32, np.float64, np.int32, np.int64, np.uint8, np.int16,
         np.uint32, np.uint64]


def test_eight_threads_dispatch_mixed_dtypes():
    n = 200_000
    iterations = 60
    data = []
    for index, dtype in enumerate(MIXED):
        x = random_values(dtype, n + index, seed=100 + index)
        y = random_values(dtype, n + index, seed=200 + index)
        with np.errstate(all="ignore"):
            data.append((x, y, x + y))
    barrier = threading.Barrier(len(MIXED))

    def worker(index):
        x, y, expected = data[index]
        barrier.wait()
        for it in range(iterations):
            out = np.zeros_like(x)
            add_mixed(x, y, out)
            assert_bitwise_equal(out, expected)
            # a shorter launch now and then: same variant, new length
            if it % 5 == 4:
                m = n // 3 + it
                short = np.zeros(m, dtype=x.dtype)
                add_mixed(x[:m], y[:m], short)
                assert_bitwise_equal(short, expected[:m])

    run_threads(len(MIXED), worker)
    types = sorted(k[0][0][0] for k in add_mixed.variants())
    assert types == sorted(["f32", "f64", "i32", "i64", "u8", "i16", "u32", "u64"])
    for k in add_mixed.variants():
        t = k[0][0][0]
        assert k[0] == ((t, True, False, None),) * 3
        assert k[3] == () and k[4] is True


# ---- read-only arrays --------------------------------------------------------

@tack.kernel
def split_write(x, out, y):
    for i in range(x.shape[0]):
        out[i] = x[i] + 1.0
        y[i] = x[i] * 2.0


def test_written_read_only_array_is_refused_and_nothing_written():
    n = 4096
    x = random_values(np.float32, n, seed=31)
    # warm the variant, so the refusal is also checked on the fast path
    out = np.zeros(n, np.float32)
    y = np.zeros(n, np.float32)
    split_write(x, out, y)
    assert_bitwise_equal(out, x + np.float32(1.0))
    assert_bitwise_equal(y, x * np.float32(2.0))

    for _ in range(3):
        out = np.full(n, -5.0, np.float32)
        y = np.full(n, -7.0, np.float32)
        y.flags.writeable = False
        x_before = x.copy()
        with pytest.raises(ValueError) as ei:
            split_write(x, out, y)
        assert name_in_message(ei, "y"), str(ei.value)
        assert_bitwise_equal(out, np.full(n, -5.0, np.float32))
        assert_bitwise_equal(y, np.full(n, -7.0, np.float32))
        assert_bitwise_equal(x, x_before)


def test_read_only_refusal_from_many_threads():
    n = 50_000
    x = random_values(np.float32, n, seed=32)

    def worker(index):
        for _ in range(20):
            out = np.zeros(n, np.float32)
            y = np.zeros(n, np.float32)
            if index % 2:
                y.flags.writeable = False
                with pytest.raises(ValueError) as ei:
                    split_write(x, out, y)
                assert name_in_message(ei, "y"), str(ei.value)
                assert not out.any() and not y.any()
            else:
                split_write(x, out, y)
                assert_bitwise_equal(out, x + np.float32(1.0))
                assert_bitwise_equal(y, x * np.float32(2.0))

    run_threads(4, worker)


# ---- arrays that share storage -------------------------------------------------

def make_double():
    @tack.kernel
    def double(x, out):
        for i in range(x.shape[0]):
            out[i] = x[i] * 2.0
    return double


def disjoint_of_last_call(kernel, before):
    """The disjoint bit of the one variant the last call added."""
    new = [k for k in kernel.variants() if k not in before]
    assert len(new) == 1, new
    return new[0][4]


def test_written_array_overlapping_its_input():
    n = 3001
    for dtype, name in ((np.float32, "f32"), (np.float64, "f64")):
        double = make_double()
        # separate arrays first: the disjoint variant
        x = random_values(dtype, n, seed=41)
        out = np.zeros(n, dtype)
        before = double.variants()
        double(x, out)
        assert_bitwise_equal(out, x * dtype(2.0))
        assert disjoint_of_last_call(double, before) is True

        # the same region through two distinct view objects
        buf = random_values(dtype, n + 5, seed=42)
        fresh = buf.copy()
        fresh_out = np.zeros(n, dtype)
        double(fresh[2:n + 2].copy(), fresh_out)
        before = double.variants()
        double(buf[2:n + 2], buf[2:n + 2])
        assert disjoint_of_last_call(double, before) is False
        expected = fresh.copy()
        expected[2:n + 2] = fresh_out
        assert_bitwise_equal(buf, expected)
        assert sorted(k[4] for k in double.variants()) == [False, True]
        assert all(k[0] == (((name, True, False, None),) * 2)
                   for k in double.variants())


def test_halves_of_one_buffer_stay_disjoint():
    double = make_double()
    n = 2000
    buf = random_values(np.float64, 2 * n, seed=43)
    expected = buf.copy()
    expected[:n] = buf[n:] * 2.0
    fresh_out = np.zeros(n)
    double(buf[n:].copy(), fresh_out)
    assert_bitwise_equal(fresh_out, expected[:n])
    double(buf[n:], buf[:n])  # one buffer, no byte shared
    assert_bitwise_equal(buf, expected)
    assert [k[4] for k in double.variants()] == [True]


def test_ranges_overlap_but_no_element_is_shared():
    # out spans buf[0:n+1] and x spans buf[n:2n]: their byte ranges share
    # buf[n], which the launch (over x) never writes, so the program is
    # race-free, yet the call is not disjoint.
    double = make_double()
    n = 1500
    buf = random_values(np.float32, 2 * n, seed=53)
    fresh = buf.copy()
    fresh_out = np.zeros(n + 1, np.float32)
    fresh_out[n] = fresh[n]
    double(fresh[n:].copy(), fresh_out)
    assert [k[4] for k in double.variants()] == [True]
    before = double.variants()
    double(buf[n:], buf[:n + 1])
    assert disjoint_of_last_call(double, before) is False
    expected = fresh.copy()
    expected[:n + 1] = fresh_out
    assert_bitwise_equal(buf, expected)


def test_read_only_overlap_keeps_the_disjoint_bit():
    @tack.kernel
    def add_ro(a, b, out):
        for i in range(out.shape[0]):
            out[i] = a[i] + b[i]

    n = 1000
    buf = random_values(np.float32, n + 3, seed=44)
    out = np.zeros(n, np.float32)
    add_ro(buf[3:], buf[:n], out)  # overlapping read-only views
    assert_bitwise_equal(out, buf[3:].copy() + buf[:n].copy())
    x = random_values(np.float32, n, seed=45)
    add_ro(x, x, out)  # the same array twice
    assert_bitwise_equal(out, x + x)
    assert [k[4] for k in add_ro.variants()] == [True]

    # out overlapping a read array clears the bit: a second variant
    a = random_values(np.float32, n, seed=46)
    b = random_values(np.float32, n, seed=47)
    expected = a + b
    add_ro(a, b, a)
    assert_bitwise_equal(a, expected)
    assert sorted(k[4] for k in add_ro.variants()) == [False, True]


def test_aliased_accumulate_matches_fresh_copies():
    @tack.kernel
    def acc(x, out, m):
        for i in range(out.shape[0]):
            for j in range(m):
                out[i] = out[i] + x[i]

    n, m = 4099, 5
    # warm the disjoint variant first, so a wrong reuse would show
    x = random_values(np.float64, n, seed=48)
    out = np.ones(n)
    acc(x, out, m)
    expected = np.ones(n)
    for _ in range(m):
        expected = expected + x
    assert_bitwise_equal(out, expected)
    assert [k[4] for k in acc.variants()] == [True]

    buf = random_values(np.float64, n + 1, seed=49)
    view_a, view_b = buf[1:], buf[1:]  # two view objects, one region
    expected = buf.copy()
    for _ in range(m):
        expected[1:] = expected[1:] + expected[1:]
    acc(view_a, view_b, m)
    assert_bitwise_equal(buf, expected)
    assert sorted(k[4] for k in acc.variants()) == [False, True]

    # and back: the disjoint call still gets the disjoint answer
    out = np.zeros(n)
    acc(x, out, m)
    expected = np.zeros(n)
    for _ in range(m):
        expected = expected + x
    assert_bitwise_equal(out, expected)
    assert len(acc.variants()) == 2


def test_aliased_calls_from_threads():
    double = make_double()
    n = 60_000

    def worker(index):
        rng_seed = 60 + index
        for it in range(15):
            if (index + it) % 2:
                buf = random_values(np.float32, n, seed=rng_seed)
                expected = buf * np.float32(2.0)
                double(buf, buf)
                assert_bitwise_equal(buf, expected)
            else:
                x = random_values(np.float32, n, seed=rng_seed)
                out = np.zeros(n, np.float32)
                double(x, out)
                assert_bitwise_equal(out, x * np.float32(2.0))

    run_threads(4, worker)
    f32_bits = sorted(k[4] for k in double.variants() if k[0] == (F32, F32))
    assert f32_bits == [False, True]
