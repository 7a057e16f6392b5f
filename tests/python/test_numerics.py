"""The language's numeric rules, each checked against NumPy."""
import math

import numpy as np
import pytest

import tack

# The conformance suite: every test runs on each device (conftest.py).
pytestmark = pytest.mark.every_device
from conftest import assert_bitwise_equal, random_values, store_cast

I32_MIN, I32_MAX = -2**31, 2**31 - 1
I64_MIN, I64_MAX = -2**63, 2**63 - 1
U64_MAX = 2**64 - 1


def arr(values, dtype=np.float64):
    with np.errstate(over="ignore"):  # 1e308 as f32 is inf, as intended
        return np.array(values, dtype=dtype)


# ---- kernels ---------------------------------------------------------------

@tack.kernel
def k_add(x, y, out):
    for i in range(out.shape[0]):
        out[i] = x[i] + y[i]


@tack.kernel
def k_sub(x, y, out):
    for i in range(out.shape[0]):
        out[i] = x[i] - y[i]


@tack.kernel
def k_mul(x, y, out):
    for i in range(out.shape[0]):
        out[i] = x[i] * y[i]


@tack.kernel
def k_truediv(x, y, out):
    for i in range(out.shape[0]):
        out[i] = x[i] / y[i]


@tack.kernel
def k_floordiv(x, y, out):
    for i in range(out.shape[0]):
        out[i] = x[i] // y[i]


@tack.kernel
def k_mod(x, y, out):
    for i in range(out.shape[0]):
        out[i] = x[i] % y[i]


@tack.kernel
def k_pow(x, y, out):
    for i in range(out.shape[0]):
        out[i] = x[i] ** y[i]


@tack.kernel
def k_lshift(x, y, out):
    for i in range(out.shape[0]):
        out[i] = x[i] << y[i]


@tack.kernel
def k_rshift(x, y, out):
    for i in range(out.shape[0]):
        out[i] = x[i] >> y[i]


@tack.kernel
def k_bitops(x, y, o_and, o_or, o_xor, o_inv):
    for i in range(x.shape[0]):
        o_and[i] = x[i] & y[i]
        o_or[i] = x[i] | y[i]
        o_xor[i] = x[i] ^ y[i]
        o_inv[i] = ~x[i]


@tack.kernel
def k_neg(x, out):
    for i in range(x.shape[0]):
        out[i] = -x[i]


@tack.kernel
def k_copy(x, out):
    for i in range(x.shape[0]):
        out[i] = x[i]


@tack.kernel
def k_fma_shape(x, y, z, out):
    for i in range(out.shape[0]):
        out[i] = x[i] * y[i] + z[i]


@tack.kernel
def k_assoc(x, y, z, out):
    for i in range(out.shape[0]):
        out[i] = (x[i] + y[i]) - y[i] + z[i] * 0.0


# ---- integer wrapping --------------------------------------------------------

WRAP_CASES = {
    np.int8: ([127, -128, -1, 100, -100], [1, -1, 127, 100, -100]),
    np.uint8: ([255, 0, 200, 1, 128], [1, 1, 100, 255, 128]),
    np.int16: ([32767, -32768, 300, -1, 2], [1, -1, 300, -1, 2]),
    np.int32: ([I32_MAX, I32_MIN, -1, 65536, 123456789], [1, -1, I32_MIN, 65536, 987654321]),
    np.uint32: ([2**32 - 1, 0, 65536, 3, 2**31], [1, 1, 65536, 2**32 - 1, 2]),
    np.int64: ([I64_MAX, I64_MIN, -1, 2**32, 3037000500], [1, -1, I64_MIN, 2**32, 3037000500]),
    np.uint64: ([U64_MAX, 0, 2**32, 2**63, 7], [1, 1, 2**32, 2, U64_MAX]),
}


@pytest.mark.parametrize("dt", list(WRAP_CASES), ids=lambda d: np.dtype(d).name)
def test_integer_arithmetic_wraps(dt):
    xs, ys = WRAP_CASES[dt]
    x, y = arr(xs, dt), arr(ys, dt)
    for kern, op in ((k_add, np.add), (k_sub, np.subtract), (k_mul, np.multiply)):
        out = np.zeros(len(xs), dtype=dt)
        kern(x, y, out)
        with np.errstate(all="ignore"):
            np.testing.assert_array_equal(out, op(x, y), err_msg=op.__name__)


@pytest.mark.parametrize("dt", [np.int8, np.int32, np.int64, np.uint8, np.uint64],
                         ids=lambda d: np.dtype(d).name)
def test_negation_wraps(dt):
    info = np.iinfo(dt)
    x = arr([info.min, info.max, 0, 1], dt)
    out = np.zeros(4, dtype=dt)
    k_neg(x, out)
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(out, -x)


# ---- promotion between typed values ----------------------------------------

def test_promotion_i8_u8_is_i16():
    x, y = arr([127, -128, -1], np.int8), arr([255, 255, 0], np.uint8)
    out = np.zeros(3, dtype=np.int16)
    k_add(x, y, out)
    np.testing.assert_array_equal(out, arr([382, 127, -1], np.int16))
    assert (x + y).dtype == np.int16


def test_promotion_i32_u32_is_i64():
    x, y = arr([I32_MAX, -1], np.int32), arr([2**32 - 1, 0], np.uint32)
    out = np.zeros(2, dtype=np.int64)
    k_add(x, y, out)
    np.testing.assert_array_equal(out, arr([I32_MAX + 2**32 - 1, -1], np.int64))
    out2 = np.zeros(2, dtype=np.int64)
    k_mul(arr([-2, 3], np.int32), arr([2**31, 2**31], np.uint32), out2)
    np.testing.assert_array_equal(out2, arr([-2**32, 3 * 2**31], np.int64))


def test_promotion_u64_i64_is_f64():
    x, y = arr([U64_MAX, 5], np.uint64), arr([1, -7], np.int64)
    out = np.zeros(2, dtype=np.float64)
    k_add(x, y, out)
    assert_bitwise_equal(out, x + y)
    assert (x + y).dtype == np.float64
    assert out[0] == 2.0**64


def test_promotion_i32_f32_is_f64():
    x, y = arr([2**24 + 1, 3], np.int32), arr([0.0, 0.1], np.float32)
    out = np.zeros(2, dtype=np.float64)
    k_add(x, y, out)
    assert_bitwise_equal(out, x + y)
    assert out[0] == 16777217.0


def test_promotion_i16_f32_is_f32():
    x, y = arr([3, 2**14 + 1], np.int16), arr([0.1, 1024.3], np.float32)
    out = np.zeros(2, dtype=np.float64)
    k_add(x, y, out)
    assert (x + y).dtype == np.float32
    assert_bitwise_equal(out, (x + y).astype(np.float64))


def test_promotion_anything_f64_is_f64():
    cases = {np.int64: [2**53 + 1, -3, 7], np.uint64: [2**53 + 1, 3, 7],
             np.int8: [-128, 1, 2], np.float32: [0.1, 1e-30, 3.0], np.bool_: [True, False, True]}
    for dt, xs in cases.items():
        x = arr(xs, dt)
        y = arr([0.1, 0.2, 0.3], np.float64)
        out = np.zeros(3, dtype=np.float64)
        k_add(x, y, out)
        assert_bitwise_equal(out, x + y)


def test_bool_plus_bool_is_logical_or():
    x, y = arr([True, True, False, False], np.bool_), arr([True, False, True, False], np.bool_)
    out = np.zeros(4, dtype=np.int8)
    k_add(x, y, out)
    np.testing.assert_array_equal(out, (x + y).astype(np.int8))
    out2 = np.zeros(4, dtype=np.int8)
    k_mul(x, y, out2)
    np.testing.assert_array_equal(out2, (x * y).astype(np.int8))


# ---- weak literals -----------------------------------------------------------

@tack.kernel
def k_times_point_one(x, out):
    for i in range(x.shape[0]):
        out[i] = x[i] * 0.1


@tack.kernel
def k_plus_one(x, out):
    for i in range(x.shape[0]):
        out[i] = x[i] + 1


@tack.kernel
def k_times_half(x, out):
    for i in range(x.shape[0]):
        out[i] = x[i] * 0.5


@tack.kernel
def k_big_literal(x, out):
    for i in range(x.shape[0]):
        out[i] = x[i] * 3000000000


def test_float_literal_takes_f32_operand_type():
    x = random_values(np.float32, 101, seed=3)
    out = np.zeros(101, dtype=np.float64)  # an f64 array does not widen it
    k_times_point_one(x, out)
    assert_bitwise_equal(out, (x * np.float32(0.1)).astype(np.float64))


def test_int_literal_takes_i8_operand_type_and_wraps():
    x = arr([127, -128, 0, -1, 126], np.int8)
    out = np.zeros(5, dtype=np.int16)
    k_plus_one(x, out)
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(out, (x + np.int8(1)).astype(np.int16))
    assert out[0] == -128


def test_int_literal_with_u8():
    x = arr([255, 0, 7], np.uint8)
    out = np.zeros(3, dtype=np.int32)
    k_plus_one(x, out)
    np.testing.assert_array_equal(out, arr([0, 1, 8], np.int32))


def test_float_literal_with_int_operand_is_f32_without_f64_arrays():
    x = arr([2**24 + 1, 3, -7], np.int32)
    out = np.zeros(3, dtype=np.float32)
    k_times_half(x, out)
    assert_bitwise_equal(out, x.astype(np.float32) * np.float32(0.5))
    assert out[0] == 8388608.0  # 2**24 + 1 rounded to f32 first


def test_float_literal_with_int_operand_is_f64_with_f64_array():
    x = arr([2**24 + 1, 3, -7], np.int32)
    out = np.zeros(3, dtype=np.float64)
    k_times_half(x, out)
    assert_bitwise_equal(out, x.astype(np.float64) * 0.5)
    assert out[0] == 8388608.5


def test_int_literal_beyond_i32_with_i64_operand():
    x = arr([1, -2, 3_000_000_000], np.int64)
    out = np.zeros(3, dtype=np.int64)
    k_big_literal(x, out)
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(out, x * np.int64(3000000000))


# ---- true division ---------------------------------------------------------

def test_int_true_division_is_f64():
    x = arr([1, -1, 0, 7, I32_MIN, 2], np.int32)
    y = arr([3, 0, 0, -2, -1, 0], np.int32)
    out = np.zeros(6, dtype=np.float64)
    k_truediv(x, y, out)
    with np.errstate(all="ignore"):
        expected = x / y
    assert expected.dtype == np.float64
    assert_bitwise_equal(out[~np.isnan(expected)], expected[~np.isnan(expected)])
    assert np.isnan(out[2])
    # stored into an f32 array it is still computed in f64 and then rounded
    out32 = np.zeros(6, dtype=np.float32)
    k_truediv(x, y, out32)
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(out32, expected.astype(np.float32))


# ---- strict IEEE ---------------------------------------------------------------

SPECIALS = [0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, 1e-310, -1e-310, 3.0, 1e308]


@pytest.mark.parametrize("dt", [np.float32, np.float64], ids=["f32", "f64"])
def test_float_ops_bitwise_equal_numpy(dt):
    n = 20000
    x = random_values(dt, n, seed=7) * random_values(dt, n, seed=8)
    y = random_values(dt, n, seed=9)
    sx = arr([a for a in SPECIALS for _ in SPECIALS], dt)
    sy = arr([b for _ in SPECIALS for b in SPECIALS], dt)
    x, y = np.concatenate([x, sx]), np.concatenate([y, sy])
    for kern, op in ((k_add, np.add), (k_sub, np.subtract),
                     (k_mul, np.multiply), (k_truediv, np.true_divide)):
        out = np.zeros(x.shape[0], dtype=dt)
        kern(x, y, out)
        with np.errstate(all="ignore"):
            expected = op(x, y)
        nan = np.isnan(expected)
        assert_bitwise_equal(out[~nan], expected[~nan])
        assert np.isnan(out[nan]).all()


@pytest.mark.parametrize("dt", [np.float32, np.float64], ids=["f32", "f64"])
def test_no_fma_contraction(dt):
    n = 50000
    x = random_values(dt, n, seed=10)
    y = random_values(dt, n, seed=11)
    z = -(x * y) + random_values(dt, n, seed=12) * dt(1e-3)
    out = np.zeros(n, dtype=dt)
    k_fma_shape(x, y, z, out)
    assert_bitwise_equal(out, x * y + z)


@pytest.mark.parametrize("dt", [np.float32, np.float64], ids=["f32", "f64"])
def test_no_reassociation(dt):
    x = arr([1e-8, 1.0, -0.0, 3.5, 1e30], dt)
    y = arr([1.0, 1e20, 0.0, np.inf, -1e30], dt)
    z = arr([1.0, 2.0, 3.0, 4.0, 5.0], dt)
    out = np.zeros(5, dtype=dt)
    k_assoc(x, y, z, out)
    with np.errstate(all="ignore"):
        expected = (x + y) - y + z * dt(0.0)
    nan = np.isnan(expected)
    assert_bitwise_equal(out[~nan], expected[~nan])
    assert np.isnan(out[nan]).all()
    assert out[0] != x[0]  # (1e-8 + 1) - 1 is not 1e-8 without reassociation


@pytest.mark.parametrize("dt", [np.float32, np.float64], ids=["f32", "f64"])
def test_negative_zero_preserved(dt):
    x = arr([-0.0, 0.0, -0.0], dt)
    out = np.zeros(3, dtype=dt)
    k_copy(x, out)
    assert list(np.signbit(out)) == [True, False, True]
    k_neg(x, out)
    assert list(np.signbit(out)) == [False, True, False]
    y = arr([1.0, -1.0, 0.0], dt)
    k_mul(x, y, out)
    assert_bitwise_equal(out, x * y)
    assert list(np.signbit(out)) == [True, True, True]
    k_sub(x, arr([0.0, 0.0, 0.0], dt), out)
    assert list(np.signbit(out)) == [True, False, True]
    k_add(x, arr([0.0, -0.0, -0.0], dt), out)
    assert list(np.signbit(out)) == [False, False, True]


def test_nan_and_inf_propagate():
    x = arr([np.nan, np.inf, np.inf, -np.inf, 1.0, np.nan], np.float64)
    y = arr([1.0, 1.0, -np.inf, -np.inf, np.inf, np.inf], np.float64)
    out = np.zeros(6)
    k_add(x, y, out)
    with np.errstate(all="ignore"):
        exp = x + y
    np.testing.assert_array_equal(out, exp)  # NaN == NaN here
    k_mul(x, arr([0.0, 0.0, 2.0, -2.0, -np.inf, 0.0]), out)
    with np.errstate(all="ignore"):
        exp = x * arr([0.0, 0.0, 2.0, -2.0, -np.inf, 0.0])
    np.testing.assert_array_equal(out, exp)
    k_truediv(arr([1.0, -1.0, 0.0, np.inf, 1.0, -0.0]), arr([0.0, 0.0, 0.0, np.inf, -np.inf, 5.0]), out)
    with np.errstate(all="ignore"):
        exp = arr([1.0, -1.0, 0.0, np.inf, 1.0, -0.0]) / arr([0.0, 0.0, 0.0, np.inf, -np.inf, 5.0])
    np.testing.assert_array_equal(out, exp)
    assert np.signbit(out[4]) and np.signbit(out[5])


# ---- floor division and modulo ---------------------------------------------

@pytest.mark.parametrize("dt", [np.int8, np.int32, np.int64], ids=lambda d: np.dtype(d).name)
def test_int_floordiv_mod_signs_and_zero(dt):
    vals = np.arange(-7, 8)
    divs = np.array([-3, -2, -1, 0, 1, 2, 3])
    x = arr(np.repeat(vals, divs.size), dt)
    y = arr(np.tile(divs, vals.size), dt)
    info = np.iinfo(dt)
    x = np.concatenate([x, arr([info.min, info.min, info.max, info.min, 0], dt)])
    y = np.concatenate([y, arr([-1, 0, -1, info.min, info.min], dt)])
    q = np.full(x.size, 99, dtype=dt)
    r = np.full(x.size, 99, dtype=dt)
    k_floordiv(x, y, q)
    k_mod(x, y, r)
    with np.errstate(all="ignore"):
        eq, er = np.floor_divide(x, y), np.remainder(x, y)
    np.testing.assert_array_equal(q, eq)
    np.testing.assert_array_equal(r, er)
    assert (q[y == 0] == 0).all() and (r[y == 0] == 0).all()
    assert q[-5] == info.min  # INT_MIN // -1 wraps


@pytest.mark.parametrize("dt", [np.uint8, np.uint32, np.uint64], ids=lambda d: np.dtype(d).name)
def test_unsigned_floordiv_mod(dt):
    info = np.iinfo(dt)
    x = arr([0, 1, 7, 8, info.max, info.max, 5], dt)
    y = arr([3, 0, 2, 3, 1, 7, info.max], dt)
    q = np.full(7, 99, dtype=dt)
    r = np.full(7, 99, dtype=dt)
    k_floordiv(x, y, q)
    k_mod(x, y, r)
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(q, np.floor_divide(x, y))
        np.testing.assert_array_equal(r, np.remainder(x, y))


def test_mixed_sign_floordiv_promotes():
    # i32 // u32 -> i64: -7 // 2 == -4 (not an unsigned division)
    x, y = arr([-7, 7, -1], np.int32), arr([2, 2, 2**32 - 1], np.uint32)
    q = np.zeros(3, dtype=np.int64)
    r = np.zeros(3, dtype=np.int64)
    k_floordiv(x, y, q)
    k_mod(x, y, r)
    np.testing.assert_array_equal(q, np.floor_divide(x, y))
    np.testing.assert_array_equal(r, np.remainder(x, y))


@pytest.mark.parametrize("dt", [np.float32, np.float64], ids=["f32", "f64"])
def test_float_floordiv_mod_like_numpy(dt):
    vals = [-7.5, -7.0, -3.0, -0.5, -0.0, 0.0, 0.5, 3.0, 7.0, 7.5, 1e10]
    divs = [-3.0, -2.5, -1.0, -0.0, 0.0, 0.5, 2.0, 3.0]
    x = arr([a for a in vals for _ in divs], dt)
    y = arr([b for _ in vals for b in divs], dt)
    q = np.zeros(x.size, dtype=dt)
    r = np.zeros(x.size, dtype=dt)
    k_floordiv(x, y, q)
    k_mod(x, y, r)
    with np.errstate(all="ignore"):
        eq, er = np.floor_divide(x, y), np.remainder(x, y)
    for got, exp, what in ((q, eq, "//"), (r, er, "%")):
        nan = np.isnan(exp)
        assert np.isnan(got[nan]).all(), what
        bad = [(x[k], y[k], got[k], exp[k]) for k in np.nonzero(~nan)[0]
               if got[k] != exp[k] or np.signbit(got[k]) != np.signbit(exp[k])]
        assert not bad, f"{what}: (x, y, got, expected) {bad[:6]}"


# ---- integer power -------------------------------------------------------------

def int_pow_reference(x, y):
    with np.errstate(all="ignore"):
        res = np.power(x, np.maximum(y, 0).astype(y.dtype))
    neg = y < 0
    res = res.copy()
    res[neg] = 0
    res[neg & (x == 1)] = 1
    odd = (np.abs(y.astype(np.int64)) % 2) == 1
    res[neg & (x == -1)] = np.where(odd[neg & (x == -1)], -1, 1).astype(res.dtype)
    return res


@pytest.mark.parametrize("dt", [np.int32, np.int64], ids=["i32", "i64"])
def test_integer_pow(dt):
    bases = np.arange(-3, 4)
    exps = np.array([-3, -2, -1, 0, 1, 2, 3, 10, 31, 40, 63])
    x = arr(np.repeat(bases, exps.size), dt)
    y = arr(np.tile(exps, bases.size), dt)
    x = np.concatenate([x, arr([7, 3, -5], dt)])
    y = np.concatenate([y, arr([25, 41, 17], dt)])  # overflow wraps
    out = np.full(x.size, 99, dtype=dt)
    k_pow(x, y, out)
    np.testing.assert_array_equal(out, int_pow_reference(x, y))


@tack.kernel
def k_square_literal(x, out):
    for i in range(x.shape[0]):
        out[i] = x[i] ** 2


def test_pow_literal_keeps_type():
    x = arr([46341, -3, 7], np.int32)  # 46341**2 overflows i32
    out = np.zeros(3, dtype=np.int64)
    k_square_literal(x, out)
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(out, (x ** np.int32(2)).astype(np.int64))
    xf = random_values(np.float32, 100, seed=13)
    outf = np.zeros(100, dtype=np.float64)
    k_square_literal(xf, outf)
    assert_bitwise_equal(outf, (xf * xf).astype(np.float64))


# ---- shifts and bit operations ---------------------------------------------

@pytest.mark.parametrize("dt", [np.int8, np.int32, np.int64, np.uint8, np.uint32, np.uint64],
                         ids=lambda d: np.dtype(d).name)
def test_shifts_like_numpy(dt):
    bits = np.dtype(dt).itemsize * 8
    info = np.iinfo(dt)
    base = [1, 5, info.max, info.min, -1 if info.min < 0 else info.max // 3, 0x55]
    counts = sorted({0, 1, 3, bits - 1, bits, bits + 1, 2 * bits, 63})
    x = arr([b for b in base for _ in counts], dt)
    y = arr([c for _ in base for c in counts], dt)
    left = np.zeros(x.size, dtype=dt)
    right = np.zeros(x.size, dtype=dt)
    k_lshift(x, y, left)
    k_rshift(x, y, right)
    np.testing.assert_array_equal(left, np.left_shift(x, y))
    np.testing.assert_array_equal(right, np.right_shift(x, y))
    if info.min < 0:
        assert (right[(x < 0) & (y >= bits)] == -1).all()
    assert (left[y >= bits] == 0).all()


@pytest.mark.parametrize("dt", [np.int8, np.int32, np.uint16, np.uint64, np.bool_],
                         ids=lambda d: np.dtype(d).name)
def test_bit_operations(dt):
    x = random_values(dt, 500, seed=14)
    y = random_values(dt, 500, seed=15)
    outs = [np.zeros(500, dtype=dt) for _ in range(4)]
    k_bitops(x, y, *outs)
    np.testing.assert_array_equal(outs[0], x & y)
    np.testing.assert_array_equal(outs[1], x | y)
    np.testing.assert_array_equal(outs[2], x ^ y)
    np.testing.assert_array_equal(outs[3], ~x)


# ---- comparisons and logic -----------------------------------------------------

@tack.kernel
def k_chain(a, b, c, lt, mixed, eq):
    for i in range(a.shape[0]):
        lt[i] = a[i] < b[i] < c[i]
        mixed[i] = a[i] <= b[i] > c[i]
        eq[i] = a[i] == b[i] != c[i]


def test_chained_comparisons():
    a = random_values(np.int8, 3000, seed=16) % 4
    b = random_values(np.int8, 3000, seed=17) % 4
    c = random_values(np.int8, 3000, seed=18) % 4
    lt, mixed, eq = (np.zeros(3000, dtype=np.bool_) for _ in range(3))
    k_chain(a, b, c, lt, mixed, eq)
    np.testing.assert_array_equal(lt, (a < b) & (b < c))
    np.testing.assert_array_equal(mixed, (a <= b) & (b > c))
    np.testing.assert_array_equal(eq, (a == b) & (b != c))


@tack.kernel
def k_less(a, b, out):
    for i in range(a.shape[0]):
        out[i] = a[i] < b[i]


def test_comparison_promotes_signed_unsigned():
    a = arr([-1, 5, I32_MIN], np.int32)
    b = arr([1, 5, 0], np.uint32)
    out = np.zeros(3, dtype=np.bool_)
    k_less(a, b, out)
    np.testing.assert_array_equal(out, a < b)
    assert out[0]  # -1 < 1, not 0xffffffff < 1


def test_float_comparisons_with_nan():
    a = arr([np.nan, 1.0, np.nan, -0.0, -np.inf], np.float64)
    b = arr([1.0, np.nan, np.nan, 0.0, np.inf], np.float64)
    out = np.ones(5, dtype=np.bool_)
    k_less(a, b, out)
    np.testing.assert_array_equal(out, a < b)
    eq = np.zeros(5, dtype=np.bool_)
    ne = np.zeros(5, dtype=np.bool_)
    k_eqne(a, b, eq, ne)
    np.testing.assert_array_equal(eq, a == b)
    np.testing.assert_array_equal(ne, a != b)


@tack.kernel
def k_eqne(a, b, eq, ne):
    for i in range(a.shape[0]):
        eq[i] = a[i] == b[i]
        ne[i] = a[i] != b[i]


@tack.kernel
def k_logic(x, y, z, out):
    for i in range(x.shape[0]):
        out[i] = (x[i] > 0 and y[i] > 0) or not z[i] > 0


def test_and_or_not():
    x = random_values(np.float32, 1000, seed=19)
    y = random_values(np.float32, 1000, seed=20)
    z = random_values(np.float32, 1000, seed=21)
    out = np.zeros(1000, dtype=np.bool_)
    k_logic(x, y, z, out)
    np.testing.assert_array_equal(out, ((x > 0) & (y > 0)) | ~(z > 0))


@tack.kernel
def k_short_circuit(idx, x, n, out):
    for i in range(idx.shape[0]):
        k = idx[i]
        if k >= 0 and k < n and x[k] > 0.0:
            out[i] = 1
        elif k < 0 or x[k] < 0.0:
            out[i] = 2
        else:
            out[i] = 3


def test_and_or_short_circuit():
    # x[k] with k = 2**40 or -2**40 would fault: only short-circuiting keeps it unread.
    x = arr([1.0, -1.0, 0.0], np.float64)
    idx = arr([0, 1, 2, 2**40, -2**40, 0], np.int64)
    out = np.zeros(6, dtype=np.int32)
    # k_short_circuit's elif reads x[k] for any k >= 0, so it gets no k >= n
    k_short_circuit(arr([0, 1, 2, -2**40, -1, 0], np.int64), x, 3, out)
    np.testing.assert_array_equal(out, arr([1, 2, 3, 2, 2, 1], np.int32))
    out2 = np.zeros(6, dtype=np.int32)
    k_guarded_or(idx, x, 3, out2)
    np.testing.assert_array_equal(out2, arr([1, 0, 0, 0, 0, 1], np.int32))


@tack.kernel
def k_guarded_or(idx, x, n, out):
    for i in range(idx.shape[0]):
        k = idx[i]
        if k < 0 or k >= n or not x[k] > 0.0:
            out[i] = 0
        else:
            out[i] = 1


@tack.kernel
def k_select(x, y, out):
    for i in range(x.shape[0]):
        out[i] = x[i] if x[i] > y[i] else y[i] * 2


def test_conditional_expression():
    x = random_values(np.int32, 1000, seed=22) // 4
    y = random_values(np.int32, 1000, seed=23) // 4
    out = np.zeros(1000, dtype=np.int32)
    k_select(x, y, out)
    np.testing.assert_array_equal(out, np.where(x > y, x, y * np.int32(2)))


@tack.kernel
def k_local_promotion(c, out):
    for i in range(c.shape[0]):
        t = 1
        if c[i]:
            t = 2.5
        out[i] = t


def test_local_takes_promoted_type():
    c = arr([True, False, True], np.bool_)
    out = np.zeros(3, dtype=np.float64)
    k_local_promotion(c, out)
    np.testing.assert_array_equal(out, [2.5, 1.0, 2.5])


# ---- loops -----------------------------------------------------------------------

@tack.kernel
def k_collatz(x, out):
    for i in range(x.shape[0]):
        n = x[i]
        steps = 0
        while n != 1:
            if n % 2 == 0:
                n = n // 2
            else:
                n = 3 * n + 1
            steps += 1
        out[i] = steps


def collatz_steps(n):
    steps = 0
    while n != 1:
        n = n // 2 if n % 2 == 0 else 3 * n + 1
        steps += 1
    return steps


def test_while_loop():
    x = np.arange(1, 2001, dtype=np.int64)
    out = np.zeros(2000, dtype=np.int32)
    k_collatz(x, out)
    np.testing.assert_array_equal(out, [collatz_steps(int(v)) for v in x])


@tack.kernel
def k_first_above(a, t, out):
    for i in range(a.shape[0]):
        found = -1
        for j in range(a.shape[1]):
            if a[i, j] > t:
                found = j
                break
        out[i] = found


def test_break_in_nested_loop():
    a = random_values(np.float64, 200 * 50, seed=24).reshape(200, 50)
    out = np.full(200, 7, dtype=np.int64)
    k_first_above(a, 250.0, out)
    above = a > 250.0
    expected = np.where(above.any(axis=1), above.argmax(axis=1), -1)
    np.testing.assert_array_equal(out, expected)
    assert (expected == -1).any() and (expected >= 0).any()


@tack.kernel
def k_sum_positive(a, out):
    for i in range(a.shape[0]):
        s = 0.0
        j = 0
        while j < a.shape[1]:
            v = a[i, j]
            j += 1
            if v <= 0.0:
                continue
            s += v
        out[i] = s


def sequential_row_sums(a, mask=None):
    s = np.zeros(a.shape[0], dtype=a.dtype)
    for j in range(a.shape[1]):
        col = a[:, j] if mask is None else np.where(mask[:, j], a[:, j], a.dtype.type(0))
        s = s + col
    return s


def test_continue():
    a = random_values(np.float64, 100 * 33, seed=25).reshape(100, 33)
    out = np.zeros(100)
    k_sum_positive(a, out)
    assert_bitwise_equal(out, sequential_row_sums(a, a > 0.0))


@tack.kernel
def k_row_sums(a, out):
    for i in range(a.shape[0]):
        s = 0.0
        for j in range(a.shape[1]):
            s += a[i, j]
        out[i] = s


@pytest.mark.parametrize("dt", [np.float32, np.float64], ids=["f32", "f64"])
def test_row_sums_local_accumulator(dt):
    a = random_values(dt, 257 * 61, seed=26).reshape(257, 61)
    out = np.zeros(257, dtype=dt)
    k_row_sums(a, out)
    assert_bitwise_equal(out, sequential_row_sums(a))  # same order, same rounding


@tack.kernel
def k_matvec(m, v, out):
    for i in range(m.shape[0]):
        acc = 0.0
        for j in range(m.shape[1]):
            acc = acc + m[i, j] * v[j]
        out[i] = acc


def test_matvec():
    m = random_values(np.float64, 40 * 30, seed=27).reshape(40, 30)
    v = random_values(np.float64, 30, seed=28)
    out = np.zeros(40)
    k_matvec(m, v, out)
    expected = np.zeros(40)
    for j in range(30):
        expected = expected + m[:, j] * v[j]
    assert_bitwise_equal(out, expected)


@tack.kernel
def k_int_accumulate(a, out):
    for i in range(a.shape[0]):
        s = 0
        for j in range(a.shape[1]):
            s += a[i, j]
        out[i] = s


def test_integer_accumulator_wraps():
    a = np.full((4, 3), I32_MAX, dtype=np.int32)
    out = np.zeros(4, dtype=np.int64)
    k_int_accumulate(a, out)
    with np.errstate(all="ignore"):
        expected = a.sum(axis=1, dtype=np.int32).astype(np.int64)
    np.testing.assert_array_equal(out, expected)


@tack.kernel
def k_strided_range(out, start, stop, step):
    for i in range(start, stop, step):
        out[i] = i * 3000000000


@tack.kernel
def k_range_one_arg(out, n):
    for i in range(n):
        out[i] = i + 1


@tack.kernel
def k_range_two_args(out, a, b):
    for i in range(a, b):
        out[i] = 1


def test_launch_ranges_and_i64_loop_variable():
    out = np.zeros(20, dtype=np.int64)
    k_strided_range(out, 2, 20, 3)
    expected = np.zeros(20, dtype=np.int64)
    expected[2:20:3] = np.arange(2, 20, 3, dtype=np.int64) * 3000000000
    np.testing.assert_array_equal(out, expected)
    out[:] = 0
    k_strided_range(out, 19, 0, -2)
    expected[:] = 0
    expected[19:0:-2] = np.arange(19, 0, -2, dtype=np.int64) * 3000000000
    np.testing.assert_array_equal(out, expected)
    out2 = np.zeros(10, dtype=np.int32)
    k_range_one_arg(out2, 7)
    np.testing.assert_array_equal(out2, [1, 2, 3, 4, 5, 6, 7, 0, 0, 0])
    out3 = np.zeros(10, dtype=np.int32)
    k_range_two_args(out3, 3, 6)
    np.testing.assert_array_equal(out3, [0, 0, 0, 1, 1, 1, 0, 0, 0, 0])
    k_range_two_args(out3, 6, 3)  # empty
    np.testing.assert_array_equal(out3, [0, 0, 0, 1, 1, 1, 0, 0, 0, 0])


@tack.kernel
def k_augmented(x, out):
    for i in range(x.shape[0]):
        out[i] += x[i]
        out[i] *= 2
        out[i] -= 1


def test_augmented_assignment_on_elements():
    x = random_values(np.float64, 100, seed=29)
    out = random_values(np.float64, 100, seed=30)
    expected = (out + x) * 2.0 - 1.0
    k_augmented(x, out)
    assert_bitwise_equal(out, expected)


# ---- storing converts ------------------------------------------------------

def test_store_float_to_int_truncates_and_saturates():
    vals = arr([1.9, -1.9, 0.5, -0.5, 1e20, -1e20, np.nan, np.inf, -np.inf,
                2.5e9, -2.5e9, 300.7, -300.7, 1.9e19, 2.0**63, -2.0**63], np.float64)
    for dt in (np.int8, np.uint8, np.int32, np.uint32, np.int64, np.uint64):
        out = np.full(vals.size, 77, dtype=dt)
        k_copy(vals, out)
        np.testing.assert_array_equal(out, store_cast(vals, dt), err_msg=np.dtype(dt).name)
    out = np.full(vals.size, 77, dtype=np.int32)
    k_copy(vals.astype(np.float32), out)
    np.testing.assert_array_equal(out, store_cast(vals.astype(np.float32), np.int32))
    assert list(out[:9]) == [1, -1, 0, 0, I32_MAX, I32_MIN, 0, I32_MAX, I32_MIN]


def test_store_other_conversions():
    big = arr([2**53 + 1, -(2**53) - 1, I64_MAX, I64_MIN], np.int64)
    out = np.zeros(4, dtype=np.float64)
    k_copy(big, out)
    assert_bitwise_equal(out, big.astype(np.float64))
    out32 = np.zeros(4, dtype=np.float32)
    k_copy(big, out32)
    assert_bitwise_equal(out32, big.astype(np.float32))
    u = arr([U64_MAX, 2**63, 1], np.uint64)
    outu = np.zeros(3, dtype=np.float64)
    k_copy(u, outu)
    assert_bitwise_equal(outu, u.astype(np.float64))
    d = arr([1e300, -1e300, 1e-300, 0.1, -0.0, 3.4028235e38], np.float64)
    outf = np.zeros(6, dtype=np.float32)
    with np.errstate(all="ignore"):
        expected = d.astype(np.float32)
    k_copy(d, outf)
    assert_bitwise_equal(outf, expected)
    b = np.zeros(6, dtype=np.bool_)
    k_copy(arr([0.0, -0.0, 0.5, -3.0, np.inf, 1e-300], np.float64), b)
    np.testing.assert_array_equal(b, [False, False, True, True, True, True])
    bi = np.zeros(4, dtype=np.bool_)
    k_copy(arr([0, 256, -1, 1], np.int32), bi)
    np.testing.assert_array_equal(bi, [False, True, True, True])
    wrap = np.zeros(4, dtype=np.int8)
    k_copy(arr([0, 256, -1, 200], np.int32), wrap)
    np.testing.assert_array_equal(wrap, arr([0, 256, -1, 200], np.int32).astype(np.int8))
    fromb = np.zeros(2, dtype=np.float32)
    k_copy(arr([True, False], np.bool_), fromb)
    np.testing.assert_array_equal(fromb, [1.0, 0.0])


# ---- scalars typed by value ------------------------------------------------------

@tack.kernel
def k_add_scalar(x, out, a):
    for i in range(x.shape[0]):
        out[i] = x[i] + a


def test_scalar_types_by_value():
    x = arr([1, -1, 0], np.int32)
    out = np.zeros(3, dtype=np.int64)
    k_add_scalar(x, out, 2**31 - 1)  # i32: wraps in i32
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(out, (x + np.int32(2**31 - 1)).astype(np.int64))
    k_add_scalar(x, out, 2**31)  # i64
    np.testing.assert_array_equal(out, x.astype(np.int64) + 2**31)
    k_add_scalar(x, out, -2**31 - 1)  # i64
    np.testing.assert_array_equal(out, x.astype(np.int64) - 2**31 - 1)
    outf = np.zeros(3, dtype=np.float64)
    k_add_scalar(x, outf, 2**63)  # u64 + i32 -> f64
    assert_bitwise_equal(outf, x + np.uint64(2**63))
    k_add_scalar(x, outf, 2**64 - 1)
    assert_bitwise_equal(outf, x + np.uint64(2**64 - 1))
    outb = np.zeros(3, dtype=np.int32)
    k_add_scalar(x, outb, True)  # i32 + bool -> i32
    np.testing.assert_array_equal(outb, x + 1)


def test_float_scalar_follows_arrays():
    x32 = random_values(np.float32, 50, seed=31)
    out32 = np.zeros(50, dtype=np.float32)
    k_add_scalar(x32, out32, 0.1)  # f32 scalar
    assert_bitwise_equal(out32, x32 + np.float32(0.1))
    out64 = np.zeros(50, dtype=np.float64)
    k_add_scalar(x32, out64, 0.1)  # an f64 array makes the scalar f64
    assert_bitwise_equal(out64, x32.astype(np.float64) + 0.1)
    xi = arr([1, 2, 3], np.int32)
    outi = np.zeros(3, dtype=np.float64)
    k_add_scalar(xi, outi, 0.1)  # f64: out is f64; i32 + f64 -> f64
    assert_bitwise_equal(outi, xi + 0.1)
    outi32 = np.zeros(3, dtype=np.float32)
    k_add_scalar(xi, outi32, 0.1)  # f32 scalar; i32 + f32 -> f64, stored as f32
    assert_bitwise_equal(outi32, (xi.astype(np.float64) + np.float64(np.float32(0.1))).astype(np.float32))


# ---- math and builtins ---------------------------------------------------------

@tack.kernel
def k_sqrt(x, out):
    for i in range(x.shape[0]):
        out[i] = math.sqrt(x[i])


@tack.kernel
def k_abs(x, out):
    for i in range(x.shape[0]):
        out[i] = abs(x[i])


@tack.kernel
def k_minmax(x, y, z, lo, hi):
    for i in range(x.shape[0]):
        lo[i] = min(x[i], y[i])
        hi[i] = max(x[i], y[i], z[i])


@tack.kernel
def k_transcendental(x, e, l, s, c):
    for i in range(x.shape[0]):
        e[i] = math.exp(x[i])
        l[i] = math.log(x[i])
        s[i] = math.sin(x[i])
        c[i] = math.cos(x[i])


@tack.kernel
def k_casts(x, ti, tf):
    for i in range(x.shape[0]):
        ti[i] = int(x[i])
        tf[i] = float(ti[i]) + 0.5


@pytest.mark.parametrize("dt", [np.float32, np.float64], ids=["f32", "f64"])
def test_math_sqrt(dt):
    x = np.abs(random_values(dt, 1000, seed=32))
    x = np.concatenate([x, arr([0.0, -0.0, np.inf, 2.0, 1e-310], dt)])
    out = np.zeros(x.size, dtype=dt)
    k_sqrt(x, out)
    assert_bitwise_equal(out, np.sqrt(x))
    neg = np.zeros(1, dtype=dt)
    k_sqrt(arr([-1.0], dt), neg)
    assert np.isnan(neg[0])


def test_abs():
    f = arr([-1.5, 1.5, -0.0, -np.inf, 0.0], np.float64)
    out = np.full(5, 9.0)
    k_abs(f, out)
    assert_bitwise_equal(out, np.abs(f))
    i = arr([I32_MIN, -5, 5, 0], np.int32)
    outi = np.zeros(4, dtype=np.int32)
    k_abs(i, outi)
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(outi, np.abs(i))
    f32 = random_values(np.float32, 100, seed=33)
    out32 = np.zeros(100, dtype=np.float32)
    k_abs(f32, out32)
    assert_bitwise_equal(out32, np.abs(f32))


def test_min_max():
    x = random_values(np.float64, 1000, seed=34)
    y = random_values(np.float64, 1000, seed=35)
    z = random_values(np.float64, 1000, seed=36)
    lo, hi = np.zeros(1000), np.zeros(1000)
    k_minmax(x, y, z, lo, hi)
    assert_bitwise_equal(lo, np.minimum(x, y))
    assert_bitwise_equal(hi, np.maximum(np.maximum(x, y), z))
    xi = random_values(np.int64, 1000, seed=37)
    yi = random_values(np.int64, 1000, seed=38)
    zi = random_values(np.int64, 1000, seed=39)
    loi, hii = np.zeros(1000, dtype=np.int64), np.zeros(1000, dtype=np.int64)
    k_minmax(xi, yi, zi, loi, hii)
    np.testing.assert_array_equal(loi, np.minimum(xi, yi))
    np.testing.assert_array_equal(hii, np.maximum(np.maximum(xi, yi), zi))
    # mixed types promote: i32 with u32 compares as i64
    a, b = arr([-1, 3], np.int32), arr([1, 2], np.uint32)
    lom, him = np.zeros(2, dtype=np.int64), np.zeros(2, dtype=np.int64)
    k_minmax(a, b, b, lom, him)
    np.testing.assert_array_equal(lom, [-1, 2])
    np.testing.assert_array_equal(him, [1, 3])


@pytest.mark.parametrize("dt", [np.float32, np.float64], ids=["f32", "f64"])
def test_math_transcendental(dt):
    x = np.abs(random_values(dt, 500, seed=40)) / dt(10.0) + dt(0.01)
    outs = [np.zeros(500, dtype=dt) for _ in range(4)]
    k_transcendental(x, *outs)
    rtol = 1e-6 if dt == np.float32 else 1e-14
    x64 = x.astype(np.float64)
    for got, ref in zip(outs, (np.exp(x64), np.log(x64), np.sin(x64), np.cos(x64))):
        np.testing.assert_allclose(got, ref.astype(dt), rtol=rtol, atol=rtol)


def test_int_and_float_builtins():
    x = arr([-2.7, 2.7, -0.2, 1e3], np.float64)
    ti = np.zeros(4, dtype=np.int64)
    tf = np.zeros(4, dtype=np.float64)
    k_casts(x, ti, tf)
    np.testing.assert_array_equal(ti, [-2, 2, 0, 1000])
    np.testing.assert_array_equal(tf, [-1.5, 2.5, 0.5, 1000.5])
