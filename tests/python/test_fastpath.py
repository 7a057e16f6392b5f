"""The dispatch fast path: a call whose signature was seen before reuses
what the slow path resolved.  Its results, refusals and variants must be
exactly the slow path's."""
import gc
import weakref

import numpy as np
import pytest

import tack


def fast_hits():
    return tack.stats()["fast_path_hits"]


def make_scale():
    @tack.kernel
    def scale(x, out, a):
        for i in range(x.shape[0]):
            out[i] = x[i] * a
    return scale


@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16,
                                   np.uint32, np.uint64, np.float32, np.float64, np.bool_])
def test_fast_and_slow_paths_agree_for_each_dtype(dtype):
    scale = make_scale()
    x = (np.arange(50) % 7).astype(dtype)
    first, second = np.zeros_like(x), np.zeros_like(x)
    before = fast_hits()
    scale(x, first, 3)             # slow path: compiles
    scale(x, second, 3)            # fast path
    assert fast_hits() == before + 1
    expected = (x * np.int64(3)).astype(dtype) if dtype != np.bool_ else x * True
    np.testing.assert_array_equal(first, expected)
    np.testing.assert_array_equal(second, first)
    assert len(scale.variants()) == 1


def test_integer_values_crossing_type_boundaries_pick_their_own_variants():
    scale = make_scale()
    x = np.arange(4, dtype=np.float64)
    out = np.zeros(4)
    for a in (3, 2**31 - 1, 2**31, 2**40, 2**63 - 1, 2**63, 2**64 - 1, 5, 2**40):
        scale(x, out, a)
        np.testing.assert_array_equal(out, x * float(a))
    types = sorted({v[0][2][0] for v in scale.variants()})
    assert types == ["i32", "i64", "u64"]
    assert len(scale.variants()) == 3


def test_aliased_calls_take_the_other_variant():
    @tack.kernel
    def double(x, out):
        for i in range(x.shape[0]):
            out[i] = x[i] * 2
    x = np.arange(8.0)
    out = np.zeros(8)
    double(x, out)
    double(x, out)                 # fast, disjoint
    y = x.copy()
    double(y, y)                   # same signature, not disjoint: the other variant
    np.testing.assert_array_equal(y, x * 2)
    z = x.copy()
    before = fast_hits()
    double(z, z)                   # now fast too
    assert fast_hits() == before + 1
    np.testing.assert_array_equal(z, x * 2)
    assert sorted(v[4] for v in double.variants()) == [False, True]


def test_refusals_are_the_same_on_both_paths():
    scale = make_scale()
    x = np.arange(8.0)
    out = np.zeros(8)
    scale(x, out, 2.0)
    scale(x, out, 2.0)
    ro = np.zeros(8)
    ro.flags.writeable = False
    for _ in range(2):             # the second would be a fast-path candidate
        with pytest.raises(ValueError, match="out"):
            scale(x, ro, 2.0)
        assert not ro.any()
        shared = np.lib.stride_tricks.as_strided(np.zeros(1), shape=(8,), strides=(0,))
        with pytest.raises(ValueError, match="same address"):
            scale(x, shared, 2.0)          # a written zero stride
        with pytest.raises(TypeError):
            scale(x, out, "2")
    np.testing.assert_array_equal(out, x * 2)


def test_more_signatures_than_the_table_holds_keep_working():
    @tack.kernel
    def rev(x, out):
        for i in range(x.shape[0]):
            out[i] = x[x.shape[0] - 1 - i]   # a variant per length
    for round_ in range(2):
        for n in range(1, 258):
            x = np.arange(n, dtype=np.float32)
            out = np.zeros(n, np.float32)
            rev(x, out)
            np.testing.assert_array_equal(out, x[::-1])
    assert len(rev.variants()) == 257


def test_a_dropped_kernels_entries_are_gone():
    calls = []
    for value in (2.0, 3.0):
        k = make_scale()
        x = np.arange(8.0)
        out = np.zeros(8)
        k(x, out, value)
        k(x, out, value)
        np.testing.assert_array_equal(out, x * value)
        calls.append(weakref.ref(k))
        del k
        gc.collect()
    assert all(r() is None for r in calls)


def test_per_call_template_classes_are_still_collected():
    @tack.kernel
    def use(f, out):
        for i in range(out.shape[0]):
            out[i] = f.data[i] * f.k

    out = np.zeros(4)
    refs = []
    for value in range(5):
        @tack.device_class
        class Local:
            k = float(value)
            def __init__(self, data):
                self.data = data
        use(Local(np.ones(4)), out)
        np.testing.assert_array_equal(out, np.full(4, float(value)))
        refs.append(weakref.ref(Local))
        del Local
        gc.collect()
    assert all(r() is None for r in refs)
    assert len(use.variants()) == 0 and len(use.ir_templates()) == 0


def test_debug_mode_takes_the_slow_path():
    scale = make_scale()
    x = np.arange(8.0)
    out = np.zeros(8)
    scale(x, out, 2.0)
    tack.set_debug(True)
    try:
        before = fast_hits()
        scale(x, out, 2.0)
        scale(x, out, 2.0)
        assert fast_hits() == before
    finally:
        tack.set_debug(False)
    np.testing.assert_array_equal(out, x * 2)


def test_a_seen_signature_still_checks_each_arrays_place():
    """The warm path (call_classify_warm) trusts the signature for types and
    shapes only: each call's addresses, alignment and device are its own."""
    scale = make_scale()
    x = np.arange(6, dtype=np.float32)
    out = np.zeros(6, np.float32)
    scale(x, out, 2.0)
    scale(x, out, 2.0)
    buf = np.zeros(6 * 4 + 1, np.uint8)
    crooked = buf[1:].view(np.float32)  # same shape and strides, misaligned
    assert crooked.strides == x.strides and crooked.shape == x.shape
    hits = fast_hits()
    with pytest.raises(ValueError, match=r"kernel 'scale': parameter 'out': the array's data is "
                                         r"not aligned to its element size"):
        scale(x, crooked, 2.0)
    assert fast_hits() == hits
    # Scalars are read per call, in the type their signature fixed.
    for a in (0.5, -3.0, 1e30):
        scale(x, out, a)
        np.testing.assert_array_equal(out, x * np.float32(a))
    xd = np.arange(6, dtype=np.float64)
    outd = np.zeros(6)
    scale(xd, outd, 0.1)
    scale(xd, outd, 1 / 3)
    np.testing.assert_array_equal(outd, xd * (1 / 3))  # f64 all the way

