"""The warm path (python/tack/_ext/warm.c, src/runtime/prepared.c): a
kernel called again with arguments of its last call's layout skips
conversion and classification.  Whatever changes between calls (data,
values, shapes, strides, dtypes, flags, aliasing, the default device, debug
mode, freed variants), the results and refusals must be the ordinary
path's."""
import threading

import numpy as np
import pytest

import tack

pytestmark = pytest.mark.every_device


@tack.kernel
def scale(x, out, a):
    for i in range(x.shape[0]):
        out[i] = x[i] * a


@tack.kernel
def shifted(x, out, k):
    for i in range(out.shape[0]):
        out[i] = x[i + k]


@tack.kernel
def pick(x, out, flag):
    for i in range(x.shape[0]):
        if flag:
            out[i] = x[i]
        else:
            out[i] = -x[i]


def test_new_data_and_values_each_call():
    rng = np.random.default_rng(0)
    for step in range(50):
        x = rng.standard_normal(37).astype(np.float32)
        out = np.full_like(x, np.nan)
        a = float(step) - 20.5
        scale(x, out, a)
        np.testing.assert_array_equal(out, x * np.float32(a))


def test_int_and_bool_values():
    x = np.arange(10, dtype=np.int64)
    out = np.zeros_like(x)
    for a in (3, -7, 0, 2**31 - 1, 5, -2**31, 2**40, 9):
        scale(x, out, a)
        np.testing.assert_array_equal(out, x * a)
    for flag in (True, False, True, True, False):
        pick(x, out, flag)
        np.testing.assert_array_equal(out, x if flag else -x)


def test_shapes_dtypes_and_strides_change_between_calls():
    for n in (8, 8, 8, 9, 0, 1, 8, 1000, 8, 8):
        for dtype in (np.float32, np.float64, np.int32, np.float32):
            x = np.arange(n, dtype=dtype)
            out = np.zeros(n, dtype=dtype)
            scale(x, out, 2)
            np.testing.assert_array_equal(out, x * 2)
    base = np.arange(40, dtype=np.float64)
    for step in (1, 2, 1, 3, 1, 1):
        x = base[::step][:8]
        out = np.zeros(8)
        scale(x, out, 0.5)
        np.testing.assert_array_equal(out, x * 0.5)


def test_aliasing_changes_between_calls():
    x = np.arange(16, dtype=np.float64)
    out = np.zeros(16)
    for _ in range(3):
        scale(x, out, 2.0)
    y = x.copy()
    scale(y, y, 2.0)                      # in place: the other variant
    np.testing.assert_array_equal(y, x * 2)
    scale(y[1:], y[:-1], 1.0)             # overlapping views
    np.testing.assert_array_equal(y[:-1], (x * 2)[1:])
    scale(x, out, 3.0)
    np.testing.assert_array_equal(out, x * 3)


@pytest.mark.cpu_only
def test_read_only_and_misaligned_arrays_are_refused_after_warm_calls():
    x = np.arange(8, dtype=np.float32)
    out = np.zeros(8, dtype=np.float32)
    for _ in range(3):
        scale(x, out, 1.0)
    ro = np.zeros(8, dtype=np.float32)
    ro.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        scale(x, ro, 1.0)
    assert not ro.any()
    raw = np.zeros(8 * 4 + 1, dtype=np.uint8)
    odd = raw[1:].view(np.float32)        # not aligned to 4 bytes
    assert not odd.flags.aligned
    with pytest.raises(ValueError, match="aligned"):
        scale(x, odd, 1.0)
    assert not raw.any()
    scale(x, out, 4.0)
    np.testing.assert_array_equal(out, x * 4)


def test_the_launch_checks_read_this_calls_values():
    x = np.arange(12, dtype=np.float64)
    out = np.full(8, -1.0)
    for k in (0, 1, 2, 4, 0):
        shifted(x, out, k)
        np.testing.assert_array_equal(out, x[k:k + 8])
    out[:] = -1.0
    with pytest.raises(IndexError, match="'x'"):
        shifted(x, out, 5)                # x[i + 5] reaches 12
    np.testing.assert_array_equal(out, -1.0)
    shifted(x, out, 3)
    np.testing.assert_array_equal(out, x[3:11])


@pytest.mark.cpu_only
def test_the_default_device_is_read_each_call():
    x = np.arange(8, dtype=np.float32)
    out = np.zeros(8, dtype=np.float32)
    for _ in range(3):
        scale(x, out, 2.0)
    try:
        other = tack.device("opencl")
    except (RuntimeError, ValueError) as e:
        pytest.skip(f"no OpenCL device: {e}")
    before = tack.get_default_device()
    tack.set_default_device(other)
    try:
        with pytest.raises(TypeError, match="host array"):
            scale(x, out, 2.0)            # NumPy memory cannot go to OpenCL
    finally:
        tack.set_default_device(before)
    scale(x, out, 5.0)
    np.testing.assert_array_equal(out, x * 5)


@pytest.mark.cpu_only
def test_debug_mode_turned_on_after_warm_calls():
    x = np.arange(12, dtype=np.float64)
    out = np.zeros(8)
    for _ in range(3):
        shifted(x, out, 0)
    tack.set_debug(True)
    try:
        before = tack.stats()["fast_path_hits"]
        for k in (1, 1, 1):
            shifted(x, out, k)            # debug launches take the slow path
            np.testing.assert_array_equal(out, x[1:9])
        assert tack.stats()["fast_path_hits"] == before
    finally:
        tack.set_debug(False)
    shifted(x, out, 2)
    np.testing.assert_array_equal(out, x[2:10])


def test_a_freed_kernel_does_not_break_another_kernels_warm_calls():
    x = np.arange(8, dtype=np.float64)
    out = np.zeros(8)
    for i in range(20):
        scale(x, out, float(i))
        np.testing.assert_array_equal(out, x * i)

        @tack.kernel
        def temporary(y):               # freed each turn: the epoch moves on
            for j in range(y.shape[0]):
                y[j] = 1.0
        temporary(np.zeros(2))
        del temporary


@pytest.mark.cpu_only
def test_threads_calling_one_kernel_with_their_own_arrays():
    errors = []

    def worker(seed):
        rng = np.random.default_rng(seed)
        x = rng.standard_normal(64 + seed)
        out = np.zeros_like(x)
        for step in range(300):
            a = float(step % 7)
            scale(x, out, a)
            if not np.array_equal(out, x * a):
                errors.append((seed, step))
                return

    threads = [threading.Thread(target=worker, args=(s,)) for s in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


@pytest.mark.cpu_only
def test_warm_calls_are_counted_and_keep_one_variant():
    @tack.kernel
    def add(x, out):
        for i in range(x.shape[0]):
            out[i] = x[i] + 1.0
    x = np.arange(8.0)
    out = np.zeros(8)
    add(x, out)
    before = tack.stats()["fast_path_hits"]
    for _ in range(10):
        add(x, out)
    assert tack.stats()["fast_path_hits"] == before + 10
    assert len(add.variants()) == 1
    np.testing.assert_array_equal(out, x + 1.0)


class DLPackOnly:
    """Another library's array, seen only through DLPack."""

    def __init__(self, a):
        self._a = a

    def __dlpack__(self, **kwargs):
        return self._a.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self._a.__dlpack_device__()


@pytest.mark.cpu_only
def test_foreign_arrays_with_new_memory_each_call():
    rng = np.random.default_rng(1)
    for step in range(30):
        n = 16 if step % 10 else 9        # the layout changes now and then
        x = rng.standard_normal(n)
        out = np.zeros(n)
        scale(DLPackOnly(x), DLPackOnly(out), 1.5)
        np.testing.assert_array_equal(out, x * 1.5)
        out2 = np.zeros(n)
        scale(x, DLPackOnly(out2), -2.0)   # NumPy and foreign mixed
        np.testing.assert_array_equal(out2, x * -2.0)


@pytest.mark.cpu_only
def test_a_producer_class_that_changes_is_asked_afresh():
    class Producer:
        def __init__(self, a):
            self._a = a

        def __dlpack__(self, **kwargs):
            return self._a.__dlpack__(**kwargs)

        def __dlpack_device__(self):
            return self._a.__dlpack_device__()

    x = np.arange(8.0)
    out = np.zeros(8)
    for _ in range(4):
        scale(Producer(x), Producer(out), 2.0)
    np.testing.assert_array_equal(out, x * 2)
    # The class stops being an array: a float-like value now, refused.
    del Producer.__dlpack__
    del Producer.__dlpack_device__
    with pytest.raises(TypeError):
        scale(Producer(x), out, 2.0)
    # And becomes one again, through the array interface.
    Producer.__array_interface__ = property(lambda self: self._a.__array_interface__)
    out[:] = 0
    scale(Producer(x), Producer(out), 3.0)
    np.testing.assert_array_equal(out, x * 3)


@pytest.mark.cpu_only
def test_a_foreign_read_only_array_is_refused_after_warm_calls():
    x = np.arange(8.0)
    out = np.zeros(8)
    for _ in range(3):
        scale(DLPackOnly(x), DLPackOnly(out), 1.0)
    ro = np.zeros(8)
    ro.flags.writeable = False
    if not hasattr(np, "from_dlpack") or np.lib.NumpyVersion(np.__version__) < "2.1.0":
        pytest.skip("NumPy < 2.1 exports no read-only flag over DLPack")
    with pytest.raises(ValueError, match="read-only"):
        scale(DLPackOnly(x), DLPackOnly(ro), 1.0)
    assert not ro.any()


@tack.kernel
def total(x):
    s = 0.0
    for i in range(x.shape[0]):
        s += x[i]
    return s


@tack.kernel
def extremes(x):
    lo = np.inf
    hi = -np.inf
    for i in range(x.shape[0]):
        lo = min(lo, x[i])
        hi = max(hi, x[i])
    return lo, hi


@tack.kernel
def draws(out):
    for i in range(out.shape[0]):
        out[i] = np.random.random()


def test_returned_values_each_call():
    for k in range(20):
        x = np.arange(100, dtype=np.float64) * (k - 7.5)   # sums exact in f64
        assert total(x) == x.sum()
        assert extremes(x) == (x.min(), x.max())
    assert total(np.arange(100, dtype=np.float64)[:0]) == 0.0   # another layout: empty
    # Rounded sums: a warm call gives the first call's bits.
    y = np.random.default_rng(2).standard_normal(1000)
    first = total(y)
    for _ in range(5):
        assert total(y.copy()) == first


def test_random_draws_differ_between_warm_calls():
    seen = []
    for _ in range(5):
        out = np.zeros(256)
        draws(out)
        assert ((out >= 0) & (out < 1)).all()
        seen.append(out)
    for a in seen[1:]:
        assert not np.array_equal(seen[0], a)
