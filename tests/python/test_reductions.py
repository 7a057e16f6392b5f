"""Reductions and statements around the parallel loop (issue 19 item 2):
scalars assigned before the loop, reductions combined inside it, and
`return s[, t]` giving Python scalars, on every device."""
import math
import re
import threading

import numpy as np
import pytest

import tack

pytestmark = pytest.mark.every_device


@tack.kernel
def total(x):
    s = 0.0
    for i in range(x.shape[0]):
        s += x[i]
    return s


@tack.kernel
def int_total(x):
    s = 0
    for i in range(x.shape[0]):
        s += x[i]
    return s


@tack.kernel
def i32_total(x):
    s = np.int32(0)
    for i in range(x.shape[0]):
        s += x[i]
    return s


@tack.kernel
def dot(x, y):
    s = 0.0
    for i in range(x.shape[0]):
        s += x[i] * y[i]
    return s


@tack.kernel
def extremes(x):
    lo = math.inf
    hi = -math.inf
    for i in range(x.shape[0]):
        lo = min(lo, x[i])
        hi = max(hi, x[i])
    return lo, hi


@tack.kernel
def int_extremes(x):
    lo = 2**62
    hi = -(2**62)
    for i in range(x.shape[0]):
        lo = min(lo, x[i])
        hi = max(hi, x[i])
    return lo, hi


@tack.kernel
def nan_start(x):
    m = math.nan
    for i in range(x.shape[0]):
        m = min(m, x[i])
    return m


@tack.kernel
def neg_zero_sum(x):
    s = -0.0
    for i in range(x.shape[0]):
        s += x[i]
    return s


@tack.kernel
def bits(x):
    o = 0
    a = -1
    e = 0
    for i in range(x.shape[0]):
        o |= x[i]
        a &= x[i]
        e ^= x[i]
    return o, a, e


@tack.kernel
def countdown(x):
    s = 100
    for i in range(x.shape[0]):
        s -= x[i]
    return s


@tack.kernel
def moments(x):
    s = 0.0
    q = 0.0
    n = 0
    for i in range(x.shape[0]):
        s += x[i]
        q += x[i] * x[i]
        n += 1
    return s, q, n


@tack.kernel
def half_scaled(x, a, out):
    n2 = x.shape[0] // 2
    k = a * 2.0
    s = 0.0
    for i in range(n2):
        out[i] = x[i] * k
        s += out[i]
    return s


@tack.kernel
def positives(x, out):
    c = 0
    for i in range(x.shape[0]):
        if x[i] <= 0:
            continue
        out[i] = x[i]
        c += 1
    return c


@tack.kernel
def no_result(x, out):
    for i in range(x.shape[0]):
        out[i] = x[i]
    return


@tack.kernel
def product(x):
    p = 1.0
    for i in range(x.shape[0]):
        p *= x[i]
    return p


@tack.kernel
def int_product(x):
    p = 1
    for i in range(x.shape[0]):
        p *= x[i]
    return p


@tack.kernel
def i32_product(x):
    p = np.int32(1)
    for i in range(x.shape[0]):
        p *= x[i]
    return p


@tack.kernel
def scaled_nonzero_product(x):
    p = 3.0                       # not the identity: the result is 3 * prod
    q = -0.0
    k = 5
    for i in range(x.shape[0]):
        if x[i] != 0.0:
            p *= x[i]
        q *= x[i]
        k *= 2
    return p, q, k


def _f64_sum(x):
    return float(np.sum(x.astype(np.float64)))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("n", [0, 1, 2, 1000, 1 << 20])
def test_float_sums(dtype, n):
    x = np.random.default_rng(n).standard_normal(n).astype(dtype)
    got = total(x)
    assert type(got) is float
    if n == 0:
        assert got == 0.0 and math.copysign(1, got) == 1
        return
    # Order-dependent within rounding: the accumulator has x's type.
    eps = np.finfo(dtype).eps
    bound = 4 * eps * max(n, 16) ** 0.5 * float(np.sum(np.abs(x.astype(np.float64)))) + 1e-300
    assert abs(got - _f64_sum(x)) <= bound
    if n <= 2:
        # One or two elements: exact in x's type.
        assert got == float(np.sum(x, dtype=dtype))


@pytest.mark.parametrize("dtype", ["int32", "int64", "uint8", "int16"])
@pytest.mark.parametrize("n", [0, 1, 2, 1000, 1 << 20])
def test_integer_sums_are_exact(dtype, n):
    info = np.iinfo(dtype)
    rng = np.random.default_rng(n + 7)
    x = rng.integers(max(info.min, -10**6), min(info.max, 10**6), size=n, dtype=dtype)
    got = int_total(x)
    assert type(got) is int
    assert got == int(np.sum(x.astype(np.int64)))


def test_integer_wraparound_matches_numpy():
    big = np.full(8, 2**62, dtype=np.int64)
    assert int_total(big) == int(np.sum(big))  # both wrap in i64
    assert int_total(big) == 0
    edge = np.array([np.iinfo(np.int64).max, 1], dtype=np.int64)
    assert int_total(edge) == int(np.sum(edge)) == np.iinfo(np.int64).min
    x = np.array([2**31 - 1, 1, 5, 2**31 - 1], dtype=np.int32)
    # An i32 accumulator (s = np.int32(0)) wraps as NumPy's i32 sum does.
    assert i32_total(x) == int(np.sum(x, dtype=np.int32))
    # The default one is i64: no wrap.
    assert int_total(x) == int(np.sum(x, dtype=np.int64))


def test_dot_product():
    rng = np.random.default_rng(3)
    x = rng.standard_normal(100_000)
    y = rng.standard_normal(100_000)
    got = dot(x, y)
    assert abs(got - float(np.dot(x, y))) <= 1e-9 * float(np.sum(np.abs(x * y)))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_min_max(dtype):
    x = np.random.default_rng(5).standard_normal(50_000).astype(dtype)
    assert extremes(x) == (float(x.min()), float(x.max()))
    # Empty: the initial values.
    assert extremes(np.zeros(0, dtype)) == (math.inf, -math.inf)
    # Infinities are values like any other.
    y = np.array([1.0, -np.inf, 3.0, np.inf], dtype)
    assert extremes(y) == (-math.inf, math.inf)


def test_min_max_skip_nan():
    # s = min(s, v) keeps s unless v < s: a NaN element is skipped, like
    # Python's min(s, v) and np.nanmin (NumPy's np.min would give NaN).
    x = np.array([3.0, np.nan, -2.0, np.nan, 7.0], np.float32)
    assert extremes(x) == (float(np.nanmin(x)), float(np.nanmax(x))) == (-2.0, 7.0)
    lo, hi = extremes(np.full(5, np.nan, np.float64))
    assert lo == math.inf and hi == -math.inf
    # A NaN initial value stays: nothing is less than NaN.
    assert math.isnan(nan_start(np.array([1.0, 2.0], np.float64)))


def test_int_min_max():
    x = np.random.default_rng(9).integers(-2**40, 2**40, size=10_000, dtype=np.int64)
    assert int_extremes(x) == (int(x.min()), int(x.max()))
    assert int_extremes(np.zeros(0, np.int64)) == (2**62, -(2**62))


def test_negative_zero():
    r = neg_zero_sum(np.full(1000, -0.0, np.float64))
    assert r == 0.0 and math.copysign(1, r) == -1  # -0.0 + -0.0 == -0.0
    r = neg_zero_sum(np.zeros(0, np.float64))
    assert math.copysign(1, r) == -1  # empty: the initial -0.0
    r = total(np.full(10, -0.0, np.float64))
    assert math.copysign(1, r) == 1  # 0.0 + -0.0 == 0.0, as Python's sum


def test_bitwise_and_subtract():
    x = np.random.default_rng(11).integers(0, 2**40, size=4096, dtype=np.int64)
    o, a, e = bits(x)
    assert o == int(np.bitwise_or.reduce(x))
    assert a == int(np.bitwise_and.reduce(x))
    assert e == int(np.bitwise_xor.reduce(x))
    assert bits(np.zeros(0, np.int64)) == (0, -1, 0)
    y = np.arange(50, dtype=np.int32)
    assert countdown(y) == 100 - int(y.sum())


def test_tuple_results_and_types():
    x = np.arange(10, dtype=np.float64)
    s, q, n = moments(x)
    assert (s, q, n) == (45.0, 285.0, 10)
    assert type(s) is float and type(n) is int
    # Mean and variance from the moments.
    x = np.random.default_rng(2).standard_normal(20_000)
    s, q, n = moments(x)
    mean = s / n
    assert abs(mean - x.mean()) <= 1e-12
    assert abs(q / n - mean * mean - x.var()) <= 1e-9


def test_statements_before_the_loop():
    x = np.arange(10, dtype=np.float32)
    out = np.zeros(10, np.float32)
    s = half_scaled(x, 1.5, out)
    np.testing.assert_array_equal(out[:5], x[:5] * 3.0)
    np.testing.assert_array_equal(out[5:], 0)
    assert s == float(np.sum(x[:5] * 3.0))


def test_continue_and_no_result():
    x = np.array([1, -2, 3, 0, 5], np.int32)
    out = np.zeros(5, np.int32)
    assert positives(x, out) == 3
    np.testing.assert_array_equal(out, [1, 0, 3, 0, 5])
    assert no_result(x, out) is None


def test_fresh_results_each_call():
    x = np.ones(1000, np.float64)
    assert total(x) == 1000.0
    assert total(x) == 1000.0  # not 2000: the initial value is written per call
    assert total(x[:10]) == 10.0
    assert int_total(np.arange(5, dtype=np.int64)) == 10
    assert int_total(np.arange(5, dtype=np.int64)) == 10


def test_reduction_type_follows_the_arguments(device):
    # s = 0.0 accumulates in the kernel's float type: f32 arrays give f32
    # sums (a different variant from f64 arrays).
    x32 = np.full(3, 0.1, np.float32)
    assert total(x32) == float(np.float32(0.1) + np.float32(0.1) + np.float32(0.1))
    x64 = np.full(3, 0.1, np.float64)
    assert total(x64) == 0.1 + 0.1 + 0.1
    keys = total.variants(device=device)
    types = {tuple(p[0] for p in key[0]) for key in keys}
    assert ("f32", "f32") in types and ("f64", "f64") in types


def test_cpu_sum_is_deterministic(device):
    if not device.host_memory:
        pytest.skip("the CPU's chunk order; GPU float sums are order-dependent")
    dev = tack.device("cpu", num_threads=4)
    x = np.random.default_rng(1).standard_normal(1 << 20).astype(np.float32)
    before = tack.get_default_device()
    tack.set_default_device(dev)
    try:
        results = {total(x) for _ in range(20)}
    finally:
        tack.set_default_device(before)
    assert len(results) == 1


def test_threads_at_once():
    xs = [np.random.default_rng(t).integers(0, 1000, size=200_000, dtype=np.int64) for t in range(4)]
    want = [int(x.sum()) for x in xs]
    got = [None] * 4
    errors = []

    def run(t):
        try:
            got[t] = [int_total(xs[t]) for _ in range(5)]
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=run, args=(t,)) for t in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors
    for t in range(4):
        assert got[t] == [want[t]] * 5


# ---- products (s *= v) -------------------------------------------------------

@pytest.mark.parametrize("dtype", ["int64", "int32", "uint8", "int16"])
@pytest.mark.parametrize("n", [0, 1, 2, 40, 1000, 100_000])
def test_integer_products_are_exact(dtype, n):
    # Small factors whose product overflows i64 for long inputs: the i64
    # accumulator wraps as np.prod(x, dtype=np.int64) does.
    lo = 0 if dtype == "uint8" else -3
    x = np.random.default_rng(n + 3).integers(lo, 4, size=n).astype(dtype)
    x[x == 0] = 1 if n < 1000 else x[x == 0]  # long inputs keep their zeros
    got = int_product(x)
    assert type(got) is int
    assert got == int(np.prod(x, dtype=np.int64))


def test_integer_product_wraparound_matches_numpy():
    x = np.array([3] * 50 + [-1, 7], dtype=np.int64)  # 3**50 * -7 wraps in i64
    assert int_product(x) == int(np.prod(x))
    assert int_product(np.full(64, 2, np.int64)) == 0  # 2**64 wraps to 0
    assert int_product(np.array([2**62, 2], np.int64)) == int(np.prod(np.array([2**62, 2], np.int64)))
    y = np.array([65537, 65537, 3, -5, 2**31 - 1], dtype=np.int32)
    # An i32 accumulator (p = np.int32(1)) wraps as np.prod with int32.
    assert i32_product(y) == int(np.prod(y, dtype=np.int32))
    assert int_product(y) == int(np.prod(y, dtype=np.int64))
    z = np.random.default_rng(4).integers(-9, 10, size=5000, dtype=np.int32)
    z[z == 0] = 1
    assert i32_product(z) == int(np.prod(z, dtype=np.int32))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("n", [0, 1, 2, 1000, 1 << 16])
def test_float_products(dtype, n):
    # Factors near 1 so the product stays finite; each multiplication
    # rounds once, in any order, so n rounding errors bound the result.
    rng = np.random.default_rng(n + 1)
    x = (1.0 + 0.01 * rng.standard_normal(n)).astype(dtype)
    got = product(x)
    assert type(got) is float
    want = float(np.prod(x.astype(np.float64)))
    if n == 0:
        assert got == 1.0
        return
    eps = float(np.finfo(dtype).eps)
    assert abs(got - want) <= (n + 2) * eps * abs(want)
    if n <= 2:
        assert got == float(np.prod(x, dtype=dtype))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # NumPy's overflow and inf * 0 notes
def test_product_zeros_infinities_nans(dtype):
    def prod_of(values):
        return product(np.array(values, dtype))

    def same(a, b):
        return (math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1, a) == math.copysign(1, b))

    cases = [[2.0, 0.0, 5.0], [-1.0, 0.0], [-0.0, -0.0, -0.0], [-0.0] * 1001,
             [2.0, math.inf], [-math.inf, 3.0], [-math.inf, -1.0], [0.0, math.inf],
             [math.nan, 1.0], [1.0, 2.0, math.nan, 0.0], [1e30, 1e30, 1e30, 1e300]]
    for values in cases:
        want = float(np.prod(np.array(values, dtype)))
        assert same(prod_of(values), want), (values, prod_of(values), want)
    # Long inputs split across threads and work items: the sign of a zero
    # is the parity of negative factors, whatever the order.
    x = np.where(np.arange(3001) % 3 == 0, -1.0, 1.0).astype(dtype)
    x[1500] = 0.0
    assert same(product(x), float(np.prod(x)))
    x[1500] = math.nan
    assert math.isnan(product(x))


def test_product_start_and_empty_range():
    x = np.array([2.0, 0.0, -4.0, 0.5], np.float64)
    p, q, k = scaled_nonzero_product(x)
    assert p == 3.0 * 2.0 * -4.0 * 0.5
    assert q == 0.0 and math.copysign(1, q) == 1  # -0.0 * 2 * 0 * -4 * 0.5 = +0.0
    assert k == 5 * 2**4 and type(k) is int
    # An empty launch returns the start values, -0.0 included.
    p, q, k = scaled_nonzero_product(np.zeros(0, np.float64))
    assert (p, k) == (3.0, 5) and q == 0.0 and math.copysign(1, q) == -1
    assert int_product(np.zeros(0, np.int64)) == 1
    assert product(np.zeros(0, np.float32)) == 1.0
    # 5 * 2**70 wraps in i64 like NumPy's.
    _, _, k = scaled_nonzero_product(np.ones(70, np.float64))
    assert k == int(np.prod(np.array([5] + [2] * 70, np.int64)))


def test_cpu_product_is_deterministic(device):
    if not device.host_memory:
        pytest.skip("the CPU's chunk order; GPU float products are order-dependent")
    dev = tack.device("cpu", num_threads=4)
    x = (1.0 + 0.01 * np.random.default_rng(8).standard_normal(1 << 20)).astype(np.float32)
    before = tack.get_default_device()
    tack.set_default_device(dev)
    try:
        results = {product(x) for _ in range(20)}
    finally:
        tack.set_default_device(before)
    assert len(results) == 1


# ---- refusals ----------------------------------------------------------------

HERE = __file__


def _refused(build, *words, marker):
    from conftest import line_of
    with pytest.raises(tack.CompileError) as e:
        build()
    for w in words:
        assert w in str(e.value), str(e.value)
    assert e.value.lineno == line_of(HERE, "#@" + marker)
    return e.value


def test_refuses_plain_write_of_a_scalar_from_before_the_loop():
    def build():
        @tack.kernel
        def last(x):
            s = 0.0
            for i in range(x.shape[0]):
                s = x[i]  #@plain-write
            return s
        last(np.ones(4, np.float32))
    _refused(build, "kernel 'last'", "'s' is assigned before the parallel loop", "not a reduction",
             marker="plain-write")


def test_refuses_mixed_operators():
    def build():
        @tack.kernel
        def mixed(x):
            s = 0
            for i in range(x.shape[0]):
                s += x[i]
                s = max(s, x[i])  #@mixed
            return s
        mixed(np.ones(4, np.int32))
    _refused(build, "kernel 'mixed'", "reduction 's' is combined with 'max' here but with '+'",
             marker="mixed")


def test_refuses_reduction_plus_assignment():
    def build():
        @tack.kernel
        def reset(x):
            s = 0
            for i in range(x.shape[0]):
                s += 1
                if x[i] > 2:
                    s = 2  #@reset
            return s
        reset(np.ones(4, np.int32))
    _refused(build, "'s' is assigned before the parallel loop", marker="reset")


def test_refuses_reading_a_reduction_in_the_loop():
    def build():
        @tack.kernel
        def peek(x, out):
            s = 0.0
            for i in range(x.shape[0]):
                s += x[i]
                out[i] = s  #@peek
            return s
        peek(np.ones(4, np.float32), np.zeros(4, np.float32))
    _refused(build, "'s' is a reduction", "known only after the parallel loop", marker="peek")


def test_refuses_non_constant_initial_value():
    def build():
        @tack.kernel
        def from_arg(x, a):
            s = a  #@init
            for i in range(x.shape[0]):
                s += x[i]
            return s
        from_arg(np.ones(4, np.float32), 1.0)
    _refused(build, "initial value of reduction 's' must be a constant", marker="init")


def test_refuses_tack_atomic_mul():
    # Products are reductions only: there is no tack.atomic_mul to call.
    def build():
        @tack.kernel
        def atomic_product(x, out):
            for i in range(x.shape[0]):
                tack.atomic_mul(out, 0, x[i])  #@atomic_mul
        atomic_product(np.ones(4, np.float32), np.ones(1, np.float32))
    _refused(build, "atomic_mul", marker="atomic_mul")


def test_refuses_product_mixed_with_sum():
    def build():
        @tack.kernel
        def mixed_product(x):
            p = 1.0
            for i in range(x.shape[0]):
                p *= x[i]
                p += 1.0  #@product_then_sum
            return p
        mixed_product(np.ones(4, np.float32))
    _refused(build, "reduction 'p' is combined with '+'", "'*'", marker="product_then_sum")


def test_refuses_float_into_an_integer_product():
    def build():
        @tack.kernel
        def int_by_float(x):
            p = 1
            for i in range(x.shape[0]):
                p *= x[i]  #@int_by_float
            return p
        int_by_float(np.ones(4, np.float32))
    _refused(build, "reduction 'p' is an integer", marker="int_by_float")


def test_refuses_effects_before_the_loop():
    def build_store():
        @tack.kernel
        def store_first(x, out):
            out[0] = 1.0
            for i in range(x.shape[0]):
                out[i] += x[i]
        return store_first
    # A store before the loop runs once, first (issue 27 item 4).
    x, out = np.ones(4, np.float32), np.zeros(4, np.float32)
    build_store()(x, out)
    np.testing.assert_array_equal(out, [2.0, 1.0, 1.0, 1.0])

    def build_call():
        @tack.kernel
        def draws_first(x, out):
            r = np.random.random()  #@draw
            for i in range(x.shape[0]):
                out[i] = x[i] * r
        draws_first(np.ones(4, np.float32), np.zeros(4, np.float32))
    _refused(build_call, "without effects", marker="draw")


def test_refuses_statements_after_the_loop():
    def build():
        @tack.kernel
        def store_after(x, out):
            for i in range(x.shape[0]):
                out[i] = x[i]
            out[0] = 1.0
        return store_after
    # A store after the loop runs once, last (issue 27 item 4).
    out = np.zeros(4, np.float32)
    build()(np.full(4, 3.0, np.float32), out)
    np.testing.assert_array_equal(out, [1.0, 3.0, 3.0, 3.0])

    def build_return():
        @tack.kernel
        def returns_local(x):
            t = 1.0
            for i in range(x.shape[0]):
                x[i] = t
            return t
        return returns_local
    # A scalar from before the loop is returned too (issue 27 item 4).
    x = np.zeros(4, np.float32)
    assert build_return()(x) == 1.0
    np.testing.assert_array_equal(x, [1.0] * 4)


def test_refuses_use_before_assignment():
    def build():
        @tack.kernel
        def early(x, out):
            a = b + 1.0  #@early
            b = 2.0
            for i in range(x.shape[0]):
                out[i] = a
        early(np.ones(4, np.float32), np.zeros(4, np.float32))
    _refused(build, "'b' is used before it is assigned", marker="early")


# ---- CUDA: the reductions' atomics compile to PTX ---------------------------

def test_cuda_ptx(device):
    if not device.host_memory:
        pytest.skip("a code check, once")
    from test_cuda import check_ptx, NVRTC_MISSING
    if NVRTC_MISSING is not None:
        pytest.skip(f"NVRTC absent: {NVRTC_MISSING}")
    for dt in (np.float32, np.float64):
        check_ptx(total, np.ones(8, dt))
        check_ptx(extremes, np.ones(8, dt))
    check_ptx(int_total, np.ones(8, np.int32))
    check_ptx(bits, np.ones(8, np.int64))
    check_ptx(moments, np.ones(8, np.float64))
    for dt in (np.float32, np.float64):
        check_ptx(product, np.ones(8, dt))
    check_ptx(int_product, np.ones(8, np.int64))
    check_ptx(i32_product, np.ones(8, np.int32))
    check_ptx(scaled_nonzero_product, np.ones(8, np.float64))


def test_gpu_grid_stride_accumulates_in_registers(device):
    if not device.host_memory:
        pytest.skip("a code check, once")
    # CUDA's grid-stride loop: the sum stays in a register across the work
    # item's iterations and reaches memory in one atomic after the loop.
    src = tack.cuda.source(total, np.ones(8, np.float32))
    body = src[src.index("__global__"):]
    loop_end = body.rindex("}\n    (void)tk_atomic_add_f32")
    assert "tk_atomic" not in body[:loop_end]
    assert body.count("tk_atomic_add_f32(") == 1
    # Subtraction accumulates -(sum) and adds it; min starts from +inf.
    src = tack.hip.source(countdown, np.ones(8, np.int32))
    assert "tk_atomic_add_i64(&p1[" in src and "tk_atomic_sub" not in src
    src = tack.cuda.source(extremes, np.ones(8, np.float64))
    assert src.count("tk_atomic_min_f64(") == 2 and src.count("tk_atomic_max_f64(") == 2
    # A product: one compare-and-swap multiply after the loop, from 1.0.
    src = tack.cuda.source(product, np.ones(8, np.float32))
    body = src[src.index("__global__"):]
    assert body.count("tk_atomic_mul_f32(") == 1 and re.search(r"float r\d+ = 0x1p\+0f;", body)
    assert "atomicCAS(" in src[:src.index("__global__")]


def test_debug_mode_keeps_results():
    x = np.arange(10, dtype=np.float64)
    tack.set_debug(True)
    try:
        assert total(x) == 45.0
        assert moments(x) == (45.0, 285.0, 10)
        out = np.zeros(3, np.float32)
        with pytest.raises(IndexError, match="'out'"):
            half_scaled(x.astype(np.float32), 1.0, out)
    finally:
        tack.set_debug(False)
    assert total(x) == 45.0


# ---- OpenCL: partials per workgroup -----------------------------------------

@tack.kernel
def guarded_stats(x, lo_bound):
    s = 0.0
    p = 1.0
    lo = math.inf
    n = np.int32(0)
    bits_or = 0
    for i in range(x.shape[0]):
        if x[i] < lo_bound:
            return                    # an early exit still reaches the group's combine
        if i % 7 == 3:
            continue
        s += x[i]
        p *= 1.0 + x[i] * 0.001
        lo = min(lo, x[i])
        n += 1
        bits_or |= i
    return s, p, lo, n, bits_or


def _guarded_stats_reference(x, lo_bound):
    idx = np.arange(x.shape[0])
    keep = (x >= lo_bound) & (idx % 7 != 3)
    v = x[keep].astype(np.float64)
    ors = int(np.bitwise_or.reduce(idx[keep])) if keep.any() else 0
    return (float(v.sum()), float(np.prod(1.0 + v * 0.001)), float(v.min()) if v.size else math.inf,
            int(keep.sum()), ors)


@pytest.mark.parametrize("n", [0, 1, 255, 256, 257, 1000, 65537])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_early_exits_and_partial_groups(dtype, n):
    # Lengths that leave the last group partial (and groups whose items
    # all leave early): every item reaches the group's barriers.
    x = np.random.default_rng(n).standard_normal(n).astype(dtype)
    s, p, lo, cnt, ors = guarded_stats(x, -1.5)
    ws, wp, wlo, wcnt, wors = _guarded_stats_reference(x, -1.5)
    eps = float(np.finfo(dtype).eps)
    assert cnt == wcnt and type(cnt) is int
    assert ors == wors
    assert lo == (float(np.float32(wlo)) if dtype == "float32" else wlo)
    assert abs(s - ws) <= 4 * eps * max(n, 16) ** 0.5 * float(np.sum(np.abs(x.astype(np.float64)))) + 1e-12
    assert abs(p - wp) <= 2 * (n + 2) * eps * wp


def test_opencl_combines_per_workgroup(device):
    if not device.host_memory:
        pytest.skip("a code check, once")
    # One atomic per group of 256 items, after a tree in local memory; the
    # items' own updates stay in registers.
    src = tack.opencl.source(total, np.ones(8, np.float32))
    body = src[src.index("__kernel"):]
    assert "__local float tk_wg" in body and "[256];" in body
    assert body.count("tk_atomic_add_f32(") == 1
    assert body.index("if (lane == 0)") < body.index("tk_atomic_add_f32(")
    assert body.count("barrier(CLK_LOCAL_MEM_FENCE)") == 2  # before the tree and per level
    src = tack.opencl.source(guarded_stats, np.ones(8, np.float64), 0.0)
    body = src[src.index("__kernel"):]
    for helper in ("tk_atomic_add_f64(", "tk_atomic_mul_f64(", "tk_atomic_min_f64(",
                   "tk_atomic_add_i32(", "tk_atomic_or_i64("):
        assert body.count(helper) == 1, helper
    # A kernel without reductions keeps its launch and code as before.
    src = tack.opencl.source(no_result, np.ones(8, np.float32), np.ones(8, np.float32))
    assert "tk_wg" not in src and "barrier(" not in src


def test_opencl_sum_of_many_groups(device):
    if device.host_memory:
        pytest.skip("the OpenCL device's groups")
    # 2**20 + 3 items: 4097 groups, the last one three items in.
    x = np.random.default_rng(12).integers(-1000, 1000, size=(1 << 20) + 3, dtype=np.int64)
    assert int_total(x) == int(x.sum())
    assert countdown(x.astype(np.int32)) == 100 - int(x.sum())
    y = np.random.default_rng(13).standard_normal((1 << 20) + 3)
    lo, hi = extremes(y)
    assert (lo, hi) == (float(y.min()), float(y.max()))

# ---- several top-level loops: launched in order, reductions carried --------

@tack.kernel
def mean_and_var(x):
    s = 0.0
    for i in range(x.shape[0]):
        s += x[i]
    mean = s / x.shape[0]
    q = 0.0
    for i in range(x.shape[0]):
        d = x[i] - mean
        q += d * d
    return s, q


@tack.kernel
def normalize(x, out):
    hi = -math.inf
    for i in range(x.shape[0]):
        hi = max(hi, x[i])
    for j in range(x.shape[0]):
        out[j] = x[j] / hi


@tack.kernel
def three_stages(x, out):
    c = 0
    for i in range(x.shape[0]):
        if x[i] > 0:
            c += 1
    for i in range(x.shape[0]):
        out[i] = x[i] * c
    t = 0
    for i in range(x.shape[0]):
        t += out[i]
    return c, t


def test_mean_and_variance_in_two_loops():
    x = np.random.default_rng(4).standard_normal(100_000)
    s, q = mean_and_var(x)
    n = x.size
    assert abs(s / n - x.mean()) <= 1e-12
    assert abs(q / n - x.var()) <= 1e-9
    # Empty: the initial values (the second loop's mean is nan, unused).
    assert mean_and_var(np.zeros(0)) == (0.0, 0.0)


def test_a_reduction_feeds_the_next_loop():
    x = np.random.default_rng(6).random(5000).astype(np.float32) + 0.5
    out = np.zeros_like(x)
    assert normalize(x, out) is None
    np.testing.assert_array_equal(out, x / x.max())


def test_three_stages_in_order():
    x = np.array([3, -1, 4, -1, 5, 9], np.int64)
    out = np.zeros_like(x)
    for _ in range(2):  # fresh each call
        assert three_stages(x, out) == (4, int((x * 4).sum()))
    np.testing.assert_array_equal(out, x * 4)


def test_refuses_a_reduction_of_two_loops():
    def build():
        @tack.kernel
        def twice(x):
            s = 0
            for i in range(x.shape[0]):
                s += x[i]
            for i in range(x.shape[0]):
                s += x[i]  #@twice
            return s
        twice(np.ones(4, np.int32))
    _refused(build, "reduction 's' is combined into by two top-level loops", marker="twice")


def test_refuses_reading_a_reduction_before_its_loop_ends():
    def build():
        @tack.kernel
        def early_mean(x, out):
            s = 0.0
            m = s * 2.0  #@mean-too-soon
            for i in range(x.shape[0]):
                s += x[i]
            for i in range(x.shape[0]):
                out[i] = m
        early_mean(np.ones(4, np.float32), np.zeros(4, np.float32))
    _refused(build, "'s' is a reduction", marker="mean-too-soon")

    def build_range():
        @tack.kernel
        def ranged(x, out):
            c = 0
            for i in range(x.shape[0]):
                c += 1
            for i in range(c):  #@ranged
                out[i] = 1.0
        ranged(np.ones(4, np.float32), np.zeros(4, np.float32))
    _refused(build_range, "range of a parallel loop cannot depend on reduction 'c'", marker="ranged")


def test_refuses_floats_into_an_integer_reduction():
    def build():
        @tack.kernel
        def truncating(x):
            s = 0
            for i in range(x.shape[0]):
                s += x[i]  #@truncating
            return s
        truncating(np.array([1.5, 2.5], np.float32))
    _refused(build, "reduction 's' is an integer (i64", "start it as a float (s = 0.0)",
             marker="truncating")
    # A small integer type wraps as NumPy's sum in that type does.
    @tack.kernel
    def small(x):
        s = np.uint8(0)
        for i in range(x.shape[0]):
            s += x[i]
        return s
    x = np.array([200, 100], np.uint8)
    assert small(x) == int(np.sum(x, dtype=np.uint8)) == 44
