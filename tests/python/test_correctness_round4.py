"""Issue 26 (fourth correctness round), items 3, 7, 11, 12 and 14: randint
over spans of 2**63 and more, a kernel called from a kernel, seeds outside
0..2**64-1 or not integers, reduction starts of every type, and integer
literals that do not fit the type they meet (NEP 50), on cpu and opencl."""
import numpy as np
import pytest

import tack

pytestmark = pytest.mark.every_device


# ---- item 3: randint over the whole span -----------------------------------

@tack.kernel
def wide_randints(out, seed, lo, hi):
    for i in range(out.shape[0]):
        rng = tack.rng(seed, i)
        out[i] = tack.randint(rng, lo, hi)


@pytest.mark.parametrize("lo,hi", [(-2**62, 2**62), (-2**63, 2**63 - 1), (-2**63, 0),
                                   (-5, 2**63 - 1)])
def test_randint_spans_of_2_63_and_more_are_uniform(lo, hi):
    out = np.zeros(20000, dtype=np.int64)
    wide_randints(out, 7, lo, hi)
    assert out.min() >= lo and out.max() < hi
    assert len(np.unique(out)) > 19990  # not lo on every draw
    # Uniform: each quarter of the span holds about a quarter of the draws.
    edges = [lo + (hi - lo) * k // 4 for k in range(5)]
    counts = [np.count_nonzero((out >= np.int64(edges[k])) & (out < np.int64(edges[k + 1])))
              if edges[k + 1] <= 2**63 - 1 else np.count_nonzero(out >= np.int64(edges[k]))
              for k in range(4)]
    for c in counts:
        assert abs(c - 5000) < 400, counts


def test_randint_small_spans_unchanged():
    out = np.zeros(20000, dtype=np.int64)
    wide_randints(out, 3, -3, 4)
    assert set(np.unique(out)) == set(range(-3, 4))
    wide_randints(out, 3, 5, 5)
    assert (out == 5).all()  # an empty span gives lo, as before


# ---- item 7: a kernel called from a kernel ---------------------------------

@tack.kernel
def inner_scale(x, out):
    for i in range(x.shape[0]):
        out[i] = x[i] * 2.0


@tack.kernel
def outer_calls_kernel(x, out):
    for i in range(x.shape[0]):
        inner_scale(x, out)


# The refusal is made while lowering, the same for every device; off the CPU
# conftest replaces this module's kernels with wrappers, hiding the inner one.
@pytest.mark.cpu_only
def test_kernel_called_from_a_kernel_is_refused():
    x = np.ones(8, dtype=np.float32)
    out = np.zeros(8, dtype=np.float32)
    with pytest.raises(tack.CompileError) as e:
        outer_calls_kernel(x, out)
    msg = str(e.value)
    assert "inner_scale" in msg and "outer_calls_kernel" in msg and "@tack.func" in msg
    assert (out == 0).all()


# ---- item 11: seeds ----------------------------------------------------------

@pytest.mark.parametrize("bad", [2**64, 2**70, -1, -2**63])
def test_seed_outside_u64_is_refused(bad):
    with pytest.raises(ValueError, match="seed"):
        tack.seed(bad)


@pytest.mark.parametrize("bad", [1.5, 2.0, "3", np.float64(1.0)])
def test_seed_not_an_integer_is_refused(bad):
    with pytest.raises(TypeError, match="seed"):
        tack.seed(bad)


def test_seed_extremes_accepted():
    tack.seed(0)
    tack.seed(2**64 - 1)
    tack.seed(np.uint64(2**64 - 1))
    tack.seed(0)


@tack.kernel
def float_literal_seed(out):
    for i in range(out.shape[0]):
        rng = tack.rng(1.5, i)
        out[i] = tack.uniform(rng)


@tack.kernel
def param_seed(out, seed):
    for i in range(out.shape[0]):
        rng = tack.rng(seed, i)
        out[i] = tack.uniform(rng)


def test_in_kernel_float_seed_is_a_compile_error():
    out = np.zeros(4, dtype=np.float32)
    with pytest.raises(tack.CompileError, match="seed"):
        float_literal_seed(out)
    with pytest.raises(tack.CompileError, match="seed"):
        param_seed(out, 1.5)
    assert (out == 0).all()
    param_seed(out, 2**64 - 1)  # an integer seed of any u64 value is fine
    assert (out > 0).any()


# ---- item 12: reduction starts ---------------------------------------------

@tack.kernel
def f16_start_sum(x):
    s = np.float16(0)
    for i in range(x.shape[0]):
        s += x[i]
    return s


@tack.kernel
def u64_max_start(x):
    s = 2**64 - 1
    for i in range(x.shape[0]):
        s += x[i]
    return s


@tack.kernel
def u64_min(x):
    s = 2**64 - 1
    for i in range(x.shape[0]):
        s = min(s, x[i])
    return s


@tack.kernel
def too_big_start(x):
    s = 2**64
    for i in range(x.shape[0]):
        s += x[i]
    return s


def test_f16_reduction_start():
    x = np.arange(10, dtype=np.float16)
    assert f16_start_sum(x) == 45.0


def test_u64_reduction_starts_at_2_64_minus_1():
    x = np.array([1, 2, 3], dtype=np.uint64)
    assert u64_max_start(x) == 5  # wraps as NumPy's u64 sum does
    y = np.array([2**63 + 5, 2**64 - 2, 2**63 + 1], dtype=np.uint64)
    assert u64_min(y) == 2**63 + 1
    assert u64_min(np.zeros(0, dtype=np.uint64)) == 2**64 - 1


def test_reduction_start_no_type_holds_is_worded():
    with pytest.raises(tack.CompileError) as e:
        too_big_start(np.zeros(3, dtype=np.uint64))
    msg = str(e.value)
    assert "18446744073709551616" in msg and "must be a constant" not in msg


# ---- item 14: integer literals that do not fit ------------------------------

@tack.kernel
def big_literal_plus_i32(a, seed):
    for i in range(1):
        a[1] = 0x5c721fd808f616b6 + seed


@tack.kernel
def i8_plus_300(x, out):
    for i in range(x.shape[0]):
        out[i] = x[i] + 300


@tack.kernel
def u32_times_2_32(x, out):
    for i in range(x.shape[0]):
        out[i] = x[i] * 2**32


@tack.kernel
def big_literal_plus_i64(a):
    for i in range(1):
        a[1] = 0x5c721fd808f616b6 + a[0]


@tack.kernel
def i8_plus_127(x, out):
    for i in range(x.shape[0]):
        out[i] = x[i] + 127 - (-128)


def _refused(kernel, *args, literal, type_):
    with pytest.raises(tack.CompileError) as e:
        kernel(*args)
    msg = str(e.value)
    assert literal in msg and type_ in msg, msg
    assert e.value.lineno is not None


def test_literal_that_does_not_fit_is_a_compile_error():
    a = np.zeros(2, dtype=np.int64)
    _refused(big_literal_plus_i32, a, np.int32(3), literal=str(0x5c721fd808f616b6), type_="i32")
    assert (a == 0).all()
    x8 = np.ones(4, dtype=np.int8)
    out8 = np.zeros(4, dtype=np.int8)
    _refused(i8_plus_300, x8, out8, literal="300", type_="i8")
    x32 = np.ones(4, dtype=np.uint32)
    _refused(u32_times_2_32, x32, x32.copy(), literal=str(2**32), type_="u32")
    assert (out8 == 0).all()


def test_literals_that_fit_still_work():
    a = np.array([3, 0], dtype=np.int64)
    big_literal_plus_i64(a)  # an i64 holds it
    assert a[1] == 0x5c721fd808f616b6 + 3
    x8 = np.full(4, -100, dtype=np.int8)
    out8 = np.zeros(4, dtype=np.int8)
    i8_plus_127(x8, out8)  # -128 fits an i8; the sum wraps as NumPy's i8 does
    assert (out8 == (x8 + np.int8(127) - np.int8(-128))).all()
    x64 = np.full(4, 3, dtype=np.uint64)
    out64 = np.zeros(4, dtype=np.uint64)
    u32_times_2_32(x64, out64)  # a u64 holds 2**32
    assert (out64 == 3 * 2**32).all()
