"""Language conformance: device functions, n-d launches, module constants,
math, builtins and casts, atomics, sequential control flow, and source outside
the language. Each kernel is checked against NumPy or a direct Python loop
under the rules of docs/language.md."""
import importlib
import math
import sys
import textwrap

import numpy as np
import pytest

import tack

# The conformance suite: every test runs on each device (conftest.py).
pytestmark = pytest.mark.every_device
from conftest import assert_bitwise_equal, random_values, store_cast

FLOATS = ["f32", "f64"]
INTS = ["i32", "i64", "u32", "u64"]
SIGNED = ["i8", "i16", "i32", "i64"]
ATOMIC_DTYPES = ["i32", "u32", "i64", "u64", "f32", "f64"]
NP = {"i8": np.int8, "i16": np.int16, "i32": np.int32, "i64": np.int64,
      "u8": np.uint8, "u16": np.uint16, "u32": np.uint32, "u64": np.uint64,
      "f32": np.float32, "f64": np.float64}
RTOL = {"f32": 2e-6, "f64": 1e-14}


def here(tag):
    """The line of this file that ends with the marker comment `#@<tag>`."""
    marker = "#@" + tag
    with open(__file__, encoding="utf-8") as f:
        hits = [n for n, text in enumerate(f, 1) if text.rstrip().endswith(marker)]
    assert len(hits) == 1, (marker, hits)
    return hits[0]


def values(name, n=257, seed=0):
    """Deterministic test values: ints over a modest range (so sums do not
    overflow unless a test means them to), floats around +-100."""
    dt = NP[name]
    if np.dtype(dt).kind == "f":
        return random_values(dt, n, seed)
    rng = np.random.default_rng(seed)
    lo = 0 if np.dtype(dt).kind == "u" else -1000
    return rng.integers(lo, 1000, n).astype(dt)


# =============================================================================
# 1. @tack.func device functions
# =============================================================================

@tack.func
def sq(v):
    return v * v


@tack.func
def poly(v):
    # calls other device functions, one of them defined further down
    return sq(v) + cube(v) + 1


@tack.func
def cube(v):
    return v * v * v


@tack.func
def inc_and_double(v):
    return v + 1, v * 2


@tack.func
def clamp(v, lo, hi):
    if v < lo:
        return lo
    if v > hi:
        return hi
    return v


@tack.func
def first_above(m, row, t):
    for j in range(m.shape[1]):
        if m[row, j] > t:
            return j
    return -1


@tack.func
def put(arr, k, v):
    arr[k] = v


@tack.func
def bump(v):
    v = v + 1
    return v


@tack.func
def row_sum(m, row):
    s = 0
    for j in range(m.shape[1]):  #@row-sum-shape
        s += m[row, j]  #@row-sum-index
    return s


@tack.func
def mark(flags, k):
    flags[k] = 1
    return 1


@tack.kernel
def k_func_sq(x, out):
    for i in range(x.shape[0]):
        out[i] = sq(x[i])


@tack.kernel
def k_func_poly(x, out):
    for i in range(x.shape[0]):
        out[i] = poly(x[i])


@tack.kernel
def k_func_tuple(x, out_a, out_b):
    for i in range(x.shape[0]):
        a, b = inc_and_double(x[i])
        out_a[i] = a
        out_b[i] = b


@tack.kernel
def k_func_clamp(x, out):
    for i in range(x.shape[0]):
        out[i] = clamp(x[i], -50, 50)


@tack.kernel
def k_func_first_above(m, out, t):
    for i in range(m.shape[0]):
        out[i] = first_above(m, i, t)


@tack.kernel
def k_func_put(x, out):
    for i in range(x.shape[0]):
        put(out, i, x[i] + 3)


@tack.kernel
def k_func_by_value(x, out_t, out_u):
    for i in range(x.shape[0]):
        t = x[i]
        u = bump(t)
        out_t[i] = t
        out_u[i] = u


@tack.kernel
def k_func_row_sum(m, out):
    for i in range(m.shape[0]):
        out[i] = row_sum(m, i)


@pytest.mark.parametrize("dt", FLOATS + INTS)
def test_func_scalar_return(dt):
    x = values(dt)
    out = np.zeros_like(x)
    k_func_sq(x, out)
    with np.errstate(over="ignore"):
        assert_bitwise_equal(out, x * x)


@pytest.mark.parametrize("dt", FLOATS + INTS)
def test_func_calls_func(dt):
    x = values(dt, seed=1)
    out = np.zeros_like(x)
    k_func_poly(x, out)
    with np.errstate(over="ignore"):
        expected = (x * x + x * x * x) + NP[dt](1)
    assert_bitwise_equal(out, expected)


@pytest.mark.parametrize("dt", FLOATS + INTS)
def test_func_tuple_return(dt):
    x = values(dt, seed=2)
    a = np.zeros_like(x)
    b = np.zeros_like(x)
    k_func_tuple(x, a, b)
    with np.errstate(over="ignore"):
        assert_bitwise_equal(a, x + NP[dt](1))
        assert_bitwise_equal(b, x * NP[dt](2))


@pytest.mark.parametrize("dt", FLOATS + ["i32", "i64"])
def test_func_early_return_in_if(dt):
    x = values(dt, seed=3)
    out = np.zeros_like(x)
    k_func_clamp(x, out)
    assert_bitwise_equal(out, np.clip(x, -50, 50).astype(x.dtype))


@pytest.mark.parametrize("dt", FLOATS + ["i32", "i64"])
def test_func_early_return_in_loop(dt):
    m = values(dt, n=40 * 13, seed=4).reshape(40, 13)
    out = np.zeros(40, dtype=np.int64)
    k_func_first_above(m, out, 900)
    expected = [next((j for j in range(13) if m[r, j] > 900), -1) for r in range(40)]
    np.testing.assert_array_equal(out, expected)


@pytest.mark.parametrize("dt", FLOATS + INTS)
def test_func_array_parameter_by_reference(dt):
    x = values(dt, seed=5)
    out = np.zeros_like(x)
    k_func_put(x, out)
    assert_bitwise_equal(out, x + NP[dt](3))


@pytest.mark.cpu_only  # read-only NumPy storage is a host-memory fact
def test_func_store_counts_as_a_write():
    # out is written only through the device function: a read-only out is
    # refused like one the kernel writes itself
    x = values("f32")
    out = np.full_like(x, 7.0)
    out.flags.writeable = False
    with pytest.raises(ValueError):
        k_func_put(x, out)
    assert (out == 7.0).all()


@pytest.mark.parametrize("dt", FLOATS + INTS)
def test_func_scalar_parameter_by_value(dt):
    x = values(dt, seed=6)
    t = np.zeros_like(x)
    u = np.zeros_like(x)
    k_func_by_value(x, t, u)
    assert_bitwise_equal(t, x)
    assert_bitwise_equal(u, x + NP[dt](1))


@pytest.mark.parametrize("dt", FLOATS + ["i32", "i64"])
def test_func_loop_over_array_row(dt):
    m = values(dt, n=30 * 17, seed=7).reshape(30, 17)
    out = np.zeros(30, dtype=m.dtype)
    k_func_row_sum(m, out)
    expected = np.zeros(30, dtype=m.dtype)
    for j in range(17):  # the same order of additions
        expected = expected + m[:, j]
    assert_bitwise_equal(out, expected)


def test_func_closure():
    # a kernel defined inside a function calls a device function (and reads a
    # value) captured from that function's locals
    offset = 7

    @tack.func
    def add_offset(v):
        return v + offset

    @tack.kernel
    def k_closure(x, out):
        for i in range(x.shape[0]):
            out[i] = add_offset(x[i]) * 2

    x = np.arange(20, dtype=np.int64)
    out = np.zeros_like(x)
    k_closure(x, out)
    np.testing.assert_array_equal(out, (x + 7) * 2)


def test_func_names_resolve_in_its_own_module(tmp_path, monkeypatch):
    # OFFSET inside the device function is the other module's, not ours
    (tmp_path / "tack_lang_devmod.py").write_text(textwrap.dedent("""\
        import math
        import tack

        OFFSET = 5

        @tack.func
        def shifted_sqrt(v):
            return math.sqrt(v) + OFFSET
        """))
    monkeypatch.syspath_prepend(str(tmp_path))
    mod = importlib.import_module("tack_lang_devmod")
    try:
        shifted_sqrt = mod.shifted_sqrt
        OFFSET = 1000  # noqa: F841  (a different value in this scope)

        @tack.kernel
        def k_other_module(x, out):
            for i in range(x.shape[0]):
                out[i] = shifted_sqrt(x[i])

        x = np.arange(10, dtype=np.float64)
        out = np.zeros_like(x)
        k_other_module(x, out)
        assert_bitwise_equal(out, np.sqrt(x) + 5.0)
    finally:
        sys.modules.pop("tack_lang_devmod", None)


@tack.kernel
def k_func_in_conditional(x, flags, out):
    for i in range(x.shape[0]):
        out[i] = mark(flags, i) if x[i] > 0 else 0


@tack.kernel
def k_func_short_circuit(x, flags, out):
    for i in range(x.shape[0]):
        out[i] = x[i] > 0 and mark(flags, i) == 1


def test_conditional_expression_evaluates_only_chosen_side():
    x = values("i32", seed=8)
    flags = np.zeros(x.shape, dtype=np.int32)
    out = np.full(x.shape, 9, dtype=np.int32)
    k_func_in_conditional(x, flags, out)
    np.testing.assert_array_equal(flags, (x > 0).astype(np.int32))
    np.testing.assert_array_equal(out, (x > 0).astype(np.int32))


def test_and_short_circuits():
    x = values("f64", seed=9)
    flags = np.zeros(x.shape, dtype=np.int32)
    out = np.zeros(x.shape, dtype=np.bool_)
    k_func_short_circuit(x, flags, out)
    np.testing.assert_array_equal(flags, (x > 0).astype(np.int32))
    np.testing.assert_array_equal(out, x > 0)


# =============================================================================
# 2. tack.ndindex launches
# =============================================================================

@tack.kernel
def k_nd2(x, out):
    for i, j in tack.ndindex(x.shape[0], x.shape[1]):
        out[i, j] = x[i, j] * 2 + (i - j)


@tack.kernel
def k_nd3(x, out):
    for i, j, k in tack.ndindex(x.shape[0], x.shape[1], x.shape[2]):
        out[i, j, k] = x[i, j, k] + i * 100 + j * 10 + k


@tack.kernel
def k_nd_scalar_extents(out, n, m):
    for i, j in tack.ndindex(n, m):
        out[i, j] = i * m + j


@tack.kernel
def k_nd_interior(x, out):
    for i, j in tack.ndindex(x.shape[0] - 2, x.shape[1] - 2):
        out[i + 1, j + 1] = x[i, j + 1] + x[i + 2, j + 1] + x[i + 1, j] + x[i + 1, j + 2]


@tack.kernel
def k_nd_matmul(a, b, c):
    for i, j in tack.ndindex(c.shape[0], c.shape[1]):
        s = 0
        for k in range(a.shape[1]):
            s += a[i, k] * b[k, j]
        c[i, j] = s


@tack.kernel
def k_nd_count_rows(x, out):
    for i, j in tack.ndindex(x.shape[0], x.shape[1]):
        out[i, j] = x[i, j] + 1


@pytest.mark.parametrize("dt", FLOATS + INTS + ["i8", "u16"])
def test_ndindex_2d(dt):
    x = values(dt, n=37 * 23, seed=10).reshape(37, 23)
    out = np.zeros_like(x)
    k_nd2(x, out)
    i, j = np.indices(x.shape)
    # x * 2 keeps x's type (weak literal); adding the i64 (i - j) promotes as NumPy
    with np.errstate(over="ignore"):
        twice = x * NP[dt](2)
        v = twice.astype(np.result_type(twice.dtype, np.int64)) + (i - j).astype(np.int64)
    assert_bitwise_equal(out, store_cast(v, x.dtype))


@pytest.mark.parametrize("dt", FLOATS + ["i32", "i64"])
def test_ndindex_3d(dt):
    x = values(dt, n=5 * 7 * 9, seed=11).reshape(5, 7, 9)
    out = np.zeros_like(x)
    k_nd3(x, out)
    i, j, k = np.indices(x.shape)
    expected = (x.astype(np.float64 if dt[0] == "f" else np.int64) + i * 100 + j * 10 + k).astype(x.dtype)
    assert_bitwise_equal(out, expected)


def test_ndindex_scalar_extents():
    out = np.full((9, 11), -1, dtype=np.int64)
    k_nd_scalar_extents(out, 6, 11)
    expected = np.full((9, 11), -1, dtype=np.int64)
    expected[:6] = np.arange(66).reshape(6, 11)
    np.testing.assert_array_equal(out, expected)


@pytest.mark.parametrize("dt", FLOATS + ["i32"])
def test_ndindex_interior_stencil(dt):
    x = values(dt, n=20 * 30, seed=12).reshape(20, 30)
    out = np.zeros_like(x)
    k_nd_interior(x, out)
    expected = np.zeros_like(x)
    expected[1:-1, 1:-1] = ((x[:-2, 1:-1] + x[2:, 1:-1]) + x[1:-1, :-2]) + x[1:-1, 2:]
    assert_bitwise_equal(out, expected)


@pytest.mark.parametrize("dt", FLOATS + ["i32", "i64"])
def test_ndindex_matmul_with_inner_loop(dt):
    a = values(dt, n=12 * 8, seed=13).reshape(12, 8)
    b = values(dt, n=8 * 10, seed=14).reshape(8, 10)
    c = np.zeros((12, 10), dtype=a.dtype)
    k_nd_matmul(a, b, c)
    ref = np.zeros_like(c)
    for k in range(8):  # the kernel's order of additions
        ref = ref + a[:, k:k + 1] * b[k:k + 1, :]
    assert_bitwise_equal(c, ref)


def test_ndindex_extents_are_runtime_values():
    for rows in (3, 17, 1, 64):
        x = np.arange(rows * 8, dtype=np.float32).reshape(rows, 8)
        out = np.zeros_like(x)
        k_nd_count_rows(x, out)
        assert_bitwise_equal(out, x + np.float32(1))
    assert len(k_nd_count_rows.variants()) == 1
    x = np.arange(3 * 5, dtype=np.float32).reshape(3, 5)  # a new row length
    out = np.zeros_like(x)
    k_nd_count_rows(x, out)
    assert_bitwise_equal(out, x + np.float32(1))
    assert len(k_nd_count_rows.variants()) == 2


def test_ndindex_empty_extent():
    x = np.zeros((0, 5), dtype=np.float32)
    out = np.zeros_like(x)
    k_nd2(x, out)
    x = np.ones((4, 0), dtype=np.float32)
    k_nd2(x, np.zeros_like(x))


# =============================================================================
# 3. module-level constants
# =============================================================================

SCALE_I = 3
SCALE_F = 0.5
FLAG_B = True
TC = tack.constant(2.5)
TC_INT = tack.constant(11)
LATE = 10


@tack.kernel
def k_module_constants(x, out):
    for i in range(x.shape[0]):
        v = x[i] * SCALE_I + SCALE_F
        if FLAG_B:
            v = v + TC
        out[i] = v + TC_INT


@tack.kernel
def k_late_constant(out):
    for i in range(out.shape[0]):
        out[i] = LATE + i


def test_tack_constant_returns_its_value():
    assert tack.constant(2.5) == 2.5
    assert tack.constant(7) == 7
    assert TC == 2.5 and TC_INT == 11


@pytest.mark.parametrize("dt", FLOATS)
def test_module_constants_are_inlined_weakly(dt):
    x = values(dt, seed=15)
    out = np.zeros_like(x)
    k_module_constants(x, out)
    f = NP[dt]
    expected = ((x * f(3) + f(0.5)) + f(2.5)) + f(11)  # weak: stays dt
    assert_bitwise_equal(out, expected)


def test_module_constant_read_at_first_compile():
    global LATE
    out = np.zeros(5, dtype=np.int64)
    k_late_constant(out)
    np.testing.assert_array_equal(out, 10 + np.arange(5))
    try:
        LATE = 99
        k_late_constant(out)  # the compiled variant keeps the old value
        np.testing.assert_array_equal(out, 10 + np.arange(5))
    finally:
        LATE = 10


# =============================================================================
# 4. math, builtins and casts
# =============================================================================

@tack.kernel
def m_sqrt(x, out):
    for i in range(x.shape[0]):
        out[i] = math.sqrt(x[i])


@tack.kernel
def m_exp(x, out):
    for i in range(x.shape[0]):
        out[i] = tack.math.exp(x[i])


@tack.kernel
def m_log(x, out):
    for i in range(x.shape[0]):
        out[i] = np.log(x[i])


@tack.kernel
def m_log2(x, out):
    for i in range(x.shape[0]):
        out[i] = math.log2(x[i])


@tack.kernel
def m_log10(x, out):
    for i in range(x.shape[0]):
        out[i] = tack.math.log10(x[i])


@tack.kernel
def m_sin(x, out):
    for i in range(x.shape[0]):
        out[i] = np.sin(x[i])


@tack.kernel
def m_cos(x, out):
    for i in range(x.shape[0]):
        out[i] = math.cos(x[i])


@tack.kernel
def m_tan(x, out):
    for i in range(x.shape[0]):
        out[i] = tack.math.tan(x[i])


@tack.kernel
def m_asin(x, out):
    for i in range(x.shape[0]):
        out[i] = math.asin(x[i])


@tack.kernel
def m_acos(x, out):
    for i in range(x.shape[0]):
        out[i] = math.acos(x[i])


@tack.kernel
def m_atan(x, out):
    for i in range(x.shape[0]):
        out[i] = tack.math.atan(x[i])


@tack.kernel
def m_sinh(x, out):
    for i in range(x.shape[0]):
        out[i] = math.sinh(x[i])


@tack.kernel
def m_cosh(x, out):
    for i in range(x.shape[0]):
        out[i] = np.cosh(x[i])


@tack.kernel
def m_tanh(x, out):
    for i in range(x.shape[0]):
        out[i] = tack.math.tanh(x[i])


@tack.kernel
def m_floor(x, out):
    for i in range(x.shape[0]):
        out[i] = math.floor(x[i])


@tack.kernel
def m_ceil(x, out):
    for i in range(x.shape[0]):
        out[i] = np.ceil(x[i])


@tack.kernel
def m_trunc(x, out):
    for i in range(x.shape[0]):
        out[i] = tack.math.trunc(x[i])


@tack.kernel
def m_fabs(x, out):
    for i in range(x.shape[0]):
        out[i] = math.fabs(x[i])


@tack.kernel
def m_atan2(x, y, out):
    for i in range(x.shape[0]):
        out[i] = math.atan2(x[i], y[i])


@tack.kernel
def m_pow(x, y, out):
    for i in range(x.shape[0]):
        out[i] = tack.math.pow(x[i], y[i])


@tack.kernel
def m_copysign(x, y, out):
    for i in range(x.shape[0]):
        out[i] = np.copysign(x[i], y[i])


@tack.kernel
def m_fmod(x, y, out):
    for i in range(x.shape[0]):
        out[i] = math.fmod(x[i], y[i])


@tack.kernel
def m_hypot(x, y, out):
    for i in range(x.shape[0]):
        out[i] = tack.math.hypot(x[i], y[i])


@tack.kernel
def m_predicates(x, o_nan, o_inf, o_fin):
    for i in range(x.shape[0]):
        o_nan[i] = math.isnan(x[i])
        o_inf[i] = tack.math.isinf(x[i])
        o_fin[i] = np.isfinite(x[i])


@tack.kernel
def m_constants(out):
    for i in range(out.shape[0]):
        c = 0.0
        if i == 0:
            c = math.pi
        elif i == 1:
            c = math.e
        elif i == 2:
            c = math.tau
        elif i == 3:
            c = math.inf
        elif i == 4:
            c = -tack.math.inf
        elif i == 5:
            c = np.pi
        else:
            c = math.nan
        out[i] = c


@tack.kernel
def m_weak_pi(x, out):
    for i in range(x.shape[0]):
        out[i] = x[i] * math.pi


# name -> (kernel, numpy reference, domain, exact)
UNARY = {
    "sqrt": (m_sqrt, np.sqrt, "pos", True),
    "exp": (m_exp, np.exp, "any", False),
    "log": (m_log, np.log, "pos", False),
    "log2": (m_log2, np.log2, "pos", False),
    "log10": (m_log10, np.log10, "pos", False),
    "sin": (m_sin, np.sin, "any", False),
    "cos": (m_cos, np.cos, "any", False),
    "tan": (m_tan, np.tan, "any", False),
    "asin": (m_asin, np.arcsin, "unit", False),
    "acos": (m_acos, np.arccos, "unit", False),
    "atan": (m_atan, np.arctan, "any", False),
    "sinh": (m_sinh, np.sinh, "any", False),
    "cosh": (m_cosh, np.cosh, "any", False),
    "tanh": (m_tanh, np.tanh, "any", False),
    "floor": (m_floor, np.floor, "any", True),
    "ceil": (m_ceil, np.ceil, "any", True),
    "trunc": (m_trunc, np.trunc, "any", True),
    "fabs": (m_fabs, np.fabs, "any", True),
}

BINARY = {
    "atan2": (m_atan2, np.arctan2, "any", False),
    "pow": (m_pow, np.power, "pos", False),
    "copysign": (m_copysign, np.copysign, "any", True),
    "fmod": (m_fmod, np.fmod, "any", True),
    "hypot": (m_hypot, np.hypot, "any", False),
}


def domain(kind, dt, n=1000, seed=0):
    rng = np.random.default_rng(seed)
    if kind == "pos":
        v = np.exp(rng.uniform(-6, 6, n))
    elif kind == "unit":
        v = rng.uniform(-0.999, 0.999, n)
    else:
        v = rng.uniform(-10, 10, n)
    return v.astype(NP[dt])


def check_math(out, expected, dt, exact):
    if exact:
        assert_bitwise_equal(out, expected)
    else:
        assert out.dtype == expected.dtype
        np.testing.assert_allclose(out, expected, rtol=RTOL[dt], atol=0)


@pytest.mark.parametrize("dt", FLOATS)
@pytest.mark.parametrize("name", list(UNARY))
def test_math_unary(name, dt):
    kern, ref, dom, exact = UNARY[name]
    x = domain(dom, dt)
    if dom == "any":
        x[:4] = [0.0, -0.0, 0.5, -2.5]
    out = np.zeros_like(x)
    kern(x, out)
    check_math(out, ref(x), dt, exact)


@pytest.mark.parametrize("dt", FLOATS)
@pytest.mark.parametrize("name", list(BINARY))
def test_math_binary(name, dt):
    kern, ref, dom, exact = BINARY[name]
    x = domain(dom, dt, seed=1)
    y = domain("any" if name == "pow" else dom, dt, seed=2) / NP[dt](3 if name == "pow" else 1)
    if name in ("copysign", "fmod", "atan2"):
        x[:4] = [0.0, -0.0, 3.5, -3.5]
        y[:4] = [-1.0, 1.0, -0.0, 2.0]
    out = np.zeros_like(x)
    kern(x, y, out)
    with np.errstate(invalid="ignore"):
        expected = ref(x, y)
    check_math(out, expected, dt, exact)


@pytest.mark.parametrize("dt", FLOATS)
def test_math_special_values(dt):
    f = NP[dt]
    x = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0], dtype=f)
    for kern, ref in ((m_sqrt, np.sqrt), (m_floor, np.floor), (m_fabs, np.fabs),
                      (m_trunc, np.trunc)):
        out = np.zeros_like(x)
        kern(x, out)
        with np.errstate(invalid="ignore"):
            np.testing.assert_array_equal(out, ref(x))
    o_nan = np.zeros(x.shape, np.bool_)
    o_inf = np.zeros(x.shape, np.bool_)
    o_fin = np.zeros(x.shape, np.bool_)
    m_predicates(x, o_nan, o_inf, o_fin)
    np.testing.assert_array_equal(o_nan, np.isnan(x))
    np.testing.assert_array_equal(o_inf, np.isinf(x))
    np.testing.assert_array_equal(o_fin, np.isfinite(x))


@pytest.mark.parametrize("dt", FLOATS)
def test_math_constants(dt):
    out = np.zeros(7, dtype=NP[dt])
    m_constants(out)
    expected = np.array([math.pi, math.e, math.tau, math.inf, -math.inf, np.pi, math.nan],
                        dtype=NP[dt])
    assert_bitwise_equal(out[:6], expected[:6])
    assert np.isnan(out[6])


def test_math_constant_is_weak():
    x = np.arange(10, dtype=np.float32)
    out = np.zeros(10, dtype=np.float64)
    m_weak_pi(x, out)  # f32 * pi stays f32, then is stored into f64
    assert_bitwise_equal(out, (x * np.float32(math.pi)).astype(np.float64))


@pytest.mark.parametrize("kern,ref", [(m_exp, np.exp), (m_sin, np.sin), (m_sqrt, np.sqrt),
                                      (m_tanh, np.tanh)], ids=["exp", "sin", "sqrt", "tanh"])
def test_f32_math_stays_f32(kern, ref):
    x = domain("pos", "f32")[:200] / np.float32(100)
    out = np.zeros(x.shape, dtype=np.float64)
    kern(x, out)
    # every result is an f32 value: no silent promotion to f64 math
    assert_bitwise_equal(out, out.astype(np.float32).astype(np.float64))
    np.testing.assert_allclose(out, ref(x).astype(np.float64), rtol=RTOL["f32"])


@pytest.mark.parametrize("dt", ["i32", "i64", "u32"])
def test_math_of_integer_gives_f64(dt):
    x = np.arange(1, 300, dtype=NP[dt])
    out = np.zeros(x.shape, dtype=np.float64)
    m_sqrt(x, out)
    assert_bitwise_equal(out, np.sqrt(x.astype(np.float64)))
    out = np.zeros(x.shape, dtype=np.float64)
    m_log(x, out)
    np.testing.assert_allclose(out, np.log(x.astype(np.float64)), rtol=RTOL["f64"])


# ---- builtins ----------------------------------------------------------------

@tack.kernel
def b_abs(x, out):
    for i in range(x.shape[0]):
        out[i] = abs(x[i])


@tack.kernel
def b_minmax(x, y, o_min, o_max):
    for i in range(x.shape[0]):
        o_min[i] = min(x[i], y[i])
        o_max[i] = max(x[i], y[i])


@tack.kernel
def b_round(x, out):
    for i in range(x.shape[0]):
        out[i] = round(x[i])


@tack.kernel
def b_int(x, out):
    for i in range(x.shape[0]):
        out[i] = int(x[i])


@tack.kernel
def b_float_third(x, out):
    for i in range(x.shape[0]):
        out[i] = float(x[i]) / 3


@tack.kernel
def b_bool(x, out):
    for i in range(x.shape[0]):
        out[i] = bool(x[i])


@tack.kernel
def b_len(x, m, out):
    for i in range(out.shape[0]):
        out[i] = len(x) * 1000 + len(m) + i


@pytest.mark.parametrize("dt", FLOATS + SIGNED)
def test_builtin_abs(dt):
    x = values(dt, seed=20)
    if dt[0] == "i":
        x[:2] = [np.iinfo(NP[dt]).min, np.iinfo(NP[dt]).max]  # abs(MIN) wraps
    else:
        x[:3] = [-0.0, -np.inf, np.nan]
    out = np.zeros_like(x)
    b_abs(x, out)
    assert_bitwise_equal(out, np.abs(x))


@pytest.mark.parametrize("dt", FLOATS + INTS)
def test_builtin_min_max(dt):
    x = values(dt, seed=21)
    y = values(dt, seed=22)
    y[:5] = x[:5]
    if dt[0] == "f":
        x[5], y[6], x[7], y[7] = np.nan, np.nan, 0.0, -0.0
    o_min = np.zeros_like(x)
    o_max = np.zeros_like(x)
    b_minmax(x, y, o_min, o_max)
    with np.errstate(invalid="ignore"):
        assert_bitwise_equal(o_min, np.where(y < x, y, x))  # Python's min
        assert_bitwise_equal(o_max, np.where(y > x, y, x))


@pytest.mark.parametrize("dt", FLOATS)
def test_builtin_round_half_even(dt):
    x = np.concatenate([np.array([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 3.49, -3.51, 0.0]),
                        np.random.default_rng(23).uniform(-1e6, 1e6, 100)]).astype(NP[dt])
    out = np.zeros(x.shape, dtype=np.int64)
    b_round(x, out)
    np.testing.assert_array_equal(out, np.rint(x).astype(np.int64))


@pytest.mark.parametrize("dt", FLOATS)
def test_builtin_int_truncates(dt):
    x = values(dt, seed=24)
    x[:4] = [2.9, -2.9, 0.5, -0.5]
    out = np.zeros(x.shape, dtype=np.int64)
    b_int(x, out)
    np.testing.assert_array_equal(out, np.trunc(x).astype(np.int64))


@pytest.mark.parametrize("dt", ["f32", "i32", "i64", "u8"])
def test_builtin_float_is_f64(dt):
    x = values(dt, seed=25) if dt != "u8" else np.arange(256, dtype=np.uint8)
    if dt == "i64":
        x[:2] = [2**53 + 1, -(2**62) - 1]
    out = np.zeros(x.shape, dtype=np.float64)
    b_float_third(x, out)
    assert_bitwise_equal(out, x.astype(np.float64) / 3.0)


@pytest.mark.parametrize("dt", FLOATS + ["i32", "u8"])
def test_builtin_bool(dt):
    x = values(dt, seed=26) if dt != "u8" else np.arange(256, dtype=np.uint8)
    x[:3] = 0
    if dt[0] == "f":
        x[3], x[4] = np.nan, -0.0  # NaN is true, -0.0 false
    out = np.zeros(x.shape, dtype=np.bool_)
    b_bool(x, out)
    np.testing.assert_array_equal(out, x != 0)


def test_builtin_len():
    x = np.zeros(7, dtype=np.float32)
    m = np.zeros((5, 3), dtype=np.int32)
    out = np.zeros(4, dtype=np.int64)
    b_len(x, m, out)
    np.testing.assert_array_equal(out, 7005 + np.arange(4))


# ---- casts -------------------------------------------------------------------

@tack.kernel
def c_to_f32(x, out):
    for i in range(x.shape[0]):
        out[i] = tack.f32(x[i])


@tack.kernel
def c_np_float32(x, out):
    for i in range(x.shape[0]):
        out[i] = np.float32(x[i])


@tack.kernel
def c_to_i64(x, out):
    for i in range(x.shape[0]):
        out[i] = tack.i64(x[i])


@tack.kernel
def c_to_u8_then_add(x, out):
    for i in range(x.shape[0]):
        out[i] = tack.u8(x[i]) + 1  # u8 arithmetic wraps, then stored as i64


@tack.kernel
def c_np_int16(x, out):
    for i in range(x.shape[0]):
        out[i] = np.int16(x[i])


@pytest.mark.parametrize("kern", [c_to_f32, c_np_float32], ids=["tack.f32", "np.float32"])
@pytest.mark.parametrize("dt", ["f64", "i64", "i32"])
def test_cast_to_f32(kern, dt):
    x = values(dt, seed=30) * (NP[dt](12345) if dt[0] == "i" else NP[dt](1.000001))
    out = np.zeros(x.shape, dtype=np.float64)
    kern(x, out)
    assert_bitwise_equal(out, x.astype(np.float32).astype(np.float64))


@pytest.mark.parametrize("dt", FLOATS)
def test_cast_float_to_i64_saturates(dt):
    x = values(dt, seed=31) * NP[dt](1e3)
    x[:5] = [np.nan, np.inf, -np.inf, 1e30, -1e30]
    out = np.zeros(x.shape, dtype=np.int64)
    c_to_i64(x, out)
    np.testing.assert_array_equal(out, store_cast(x, np.int64))


@pytest.mark.parametrize("dt", ["i32", "i64", "u32"])
def test_cast_integer_wraps(dt):
    x = random_values(NP[dt], 300, 32)
    out = np.zeros(x.shape, dtype=np.int64)
    c_to_u8_then_add(x, out)
    np.testing.assert_array_equal(out, (x.astype(np.uint8) + np.uint8(1)).astype(np.int64))
    out = np.zeros(x.shape, dtype=np.int64)
    c_np_int16(x, out)
    np.testing.assert_array_equal(out, x.astype(np.int16).astype(np.int64))


# =============================================================================
# 5. atomics
# =============================================================================

@tack.kernel
def a_histogram(bins, h):
    for i in range(bins.shape[0]):
        tack.atomic_add(h, bins[i], 1)


@tack.kernel
def a_weighted_histogram(bins, w, h):
    for i in range(bins.shape[0]):
        tack.atomic_add(h, bins[i], w[i])


@tack.kernel
def a_ticket(counter, out):
    for i in range(out.shape[0]):
        old = tack.atomic_add(counter, 0, 1)
        out[i] = old


@tack.kernel
def a_countdown(counter, out):
    for i in range(out.shape[0]):
        out[i] = tack.atomic_sub(counter, 0, 1)


@tack.kernel
def a_minmax(x, lo, hi):
    for i in range(x.shape[0]):
        tack.atomic_min(lo, 0, x[i])
        tack.atomic_max(hi, 0, x[i])


@tack.kernel
def a_bits(x, acc):
    for i in range(x.shape[0]):
        tack.atomic_and(acc, 0, x[i])
        tack.atomic_or(acc, 1, x[i])
        tack.atomic_xor(acc, 2, x[i])


@tack.kernel
def a_exchange(slot, out):
    for i in range(out.shape[0]):
        out[i] = tack.atomic_exchange(slot, 0, i)


@tack.kernel
def a_claim(flags, out):
    for i in range(out.shape[0]):
        out[i] = tack.atomic_compare_exchange(flags, i % flags.shape[0], 0, i + 1)


@tack.kernel
def a_hist2d(a, b, h):
    for i in range(a.shape[0]):
        tack.atomic_add(h, (a[i], b[i]), 1)


@tack.func
def deposit(h, k, w):
    return tack.atomic_add(h, k, w)


@tack.kernel
def a_via_func(bins, h):
    for i in range(bins.shape[0]):
        deposit(h, bins[i], 2)


@tack.kernel
def a_cas_add(total, x):
    for i in range(x.shape[0]):
        done = False
        while not done:
            old = total[0]
            done = tack.atomic_compare_exchange(total, 0, old, old + x[i]) == old


@pytest.mark.parametrize("dt", ATOMIC_DTYPES)
def test_atomic_add_histogram(dt):
    rng = np.random.default_rng(40)
    bins = rng.integers(0, 16, 10**6).astype(np.int32)
    h = np.zeros(16, dtype=NP[dt])
    a_histogram(bins, h)
    assert_bitwise_equal(h, np.bincount(bins, minlength=16).astype(NP[dt]))


@pytest.mark.parametrize("dt", ["f32", "f64", "i64"])
def test_atomic_add_weighted(dt):
    rng = np.random.default_rng(41)
    bins = rng.integers(0, 10, 200_000).astype(np.int64)
    w = rng.integers(1, 8, bins.size).astype(NP[dt])  # sums stay exact in f32
    h = np.zeros(10, dtype=NP[dt])
    a_weighted_histogram(bins, w, h)
    expected = np.zeros(10, dtype=NP[dt])
    np.add.at(expected, bins, w)
    assert_bitwise_equal(h, expected)


@pytest.mark.parametrize("dt", ATOMIC_DTYPES)
def test_atomic_add_returns_old_value(dt):
    n = 100_000 if dt != "f32" else 10_000
    counter = np.zeros(1, dtype=NP[dt])
    out = np.zeros(n, dtype=np.int64)
    a_ticket(counter, out)
    assert counter[0] == n
    np.testing.assert_array_equal(np.sort(out), np.arange(n))


@pytest.mark.parametrize("dt", ATOMIC_DTYPES)
def test_atomic_sub_returns_old_value(dt):
    n = 50_000
    counter = np.full(1, n, dtype=NP[dt])
    out = np.zeros(n, dtype=np.int64)
    a_countdown(counter, out)
    assert counter[0] == 0
    np.testing.assert_array_equal(np.sort(out), np.arange(1, n + 1))


@pytest.mark.parametrize("dt", ATOMIC_DTYPES)
def test_atomic_min_max(dt):
    x = random_values(NP[dt], 10**6, 42)
    if dt[0] == "f":
        lo = np.full(1, np.inf, dtype=NP[dt])
        hi = np.full(1, -np.inf, dtype=NP[dt])
    else:
        info = np.iinfo(NP[dt])
        lo = np.full(1, info.max, dtype=NP[dt])
        hi = np.full(1, info.min, dtype=NP[dt])
    a_minmax(x, lo, hi)
    assert lo[0] == x.min()
    assert hi[0] == x.max()


@pytest.mark.parametrize("dt", INTS)
def test_atomic_and_or_xor(dt):
    t = NP[dt]
    bits = np.dtype(t).itemsize * 8
    rng = np.random.default_rng(43)
    ones = np.array(-1).astype(t) if dt[0] == "i" else np.iinfo(t).max
    ones = t(ones)
    k = rng.integers(0, bits, 200_000)
    x = (ones ^ (np.ones(k.size, dtype=t) << k.astype(t))).astype(t)
    x[::7] = random_values(t, x[::7].size, 44)
    acc = np.array([ones, 0, 0], dtype=t)
    a_bits(x, acc)
    assert acc[0] == np.bitwise_and.reduce(x)
    assert acc[1] == np.bitwise_or.reduce(x)
    assert acc[2] == np.bitwise_xor.reduce(x)


@pytest.mark.parametrize("dt", ["i32", "i64", "u64", "f64"])
def test_atomic_exchange(dt):
    n = 100_000
    slot = np.full(1, 123456789 if dt[0] == "u" else -1, dtype=NP[dt])
    initial = slot[0]
    out = np.zeros(n, dtype=np.int64)
    a_exchange(slot, out)
    seen = np.sort(np.concatenate([out, [np.int64(slot[0])]]))
    np.testing.assert_array_equal(seen, np.sort(np.concatenate([np.arange(n), [np.int64(initial)]])))


@pytest.mark.parametrize("dt", ATOMIC_DTYPES)
def test_atomic_compare_exchange_claims_once(dt):
    n, m = 20_000, 37
    flags = np.zeros(m, dtype=NP[dt])
    out = np.full(n, -5, dtype=np.int64)
    a_claim(flags, out)
    winners = flags.astype(np.int64) - 1
    assert (winners % m == np.arange(m)).all()
    for s in range(m):
        mine = np.arange(s, n, m)
        assert out[winners[s]] == 0
        others = mine[mine != winners[s]]
        assert (out[others] == winners[s] + 1).all()


@pytest.mark.parametrize("dt", ["i32", "i64", "f64"])
def test_atomic_compare_exchange_loop(dt):
    x = np.arange(1, 50_001).astype(NP[dt])
    total = np.zeros(1, dtype=NP[dt])
    a_cas_add(total, x)
    assert total[0] == x.sum()


@pytest.mark.parametrize("dt", ["i32", "u64", "f32"])
def test_atomic_2d_tuple_index(dt):
    rng = np.random.default_rng(45)
    a = rng.integers(0, 8, 300_000).astype(np.int32)
    b = rng.integers(0, 5, a.size).astype(np.int64)
    h = np.zeros((8, 5), dtype=NP[dt])
    a_hist2d(a, b, h)
    expected = np.zeros((8, 5), dtype=NP[dt])
    np.add.at(expected, (a, b), 1)
    assert_bitwise_equal(h, expected)


def test_atomic_through_device_function():
    bins = np.random.default_rng(46).integers(0, 16, 200_000).astype(np.int32)
    h = np.zeros(16, dtype=np.int64)
    a_via_func(bins, h)
    np.testing.assert_array_equal(h, 2 * np.bincount(bins, minlength=16))


# =============================================================================
# 6. sequential loops, locals, conditionals, comparisons
# =============================================================================

@tack.kernel
def s_range_forms(out1, out2, out3, out4, out5):
    for i in range(out1.shape[0]):
        s = 0
        for j in range(i):
            s += j
        out1[i] = s
        s = 0
        for j in range(3, i):
            s += j * j
        out2[i] = s
        s = 0
        for j in range(i, -1, -1):
            s = s * 3 + j
        out3[i] = s
        s = 0
        for j in range(20, i, -3):
            s += j
        out4[i] = s
        s = 0
        for j in range(-i, i, 4):
            s += j + 100
        out5[i] = s


@tack.kernel
def s_break_continue(out):
    for i in range(out.shape[0]):
        count = 0
        for j in range(i):
            if j % 3 == 0:
                continue
            for k in range(j):
                if k * k > i:
                    break
                if (j + k) % 2 == 1:
                    continue
                count += 1
            if count > 50:
                break
        out[i] = count


@tack.kernel
def s_collatz(out):
    for i in range(out.shape[0]):
        v = i + 1
        steps = 0
        while v != 1:
            if v % 2 == 0:
                v = v // 2
            else:
                v = 3 * v + 1
            steps += 1
        out[i] = steps


@tack.kernel
def s_promoted_local(x, out):
    for i in range(x.shape[0]):
        s = 0
        s += x[i]
        s = s / 3
        out[i] = s


@tack.kernel
def s_mixed_local(a, b, out):
    for i in range(a.shape[0]):
        t = a[i]
        t = t + b[i]
        out[i] = t / 7


@tack.kernel
def s_conditional_expr(x, out):
    for i in range(x.shape[0]):
        out[i] = x[i] * 2 if x[i] > 0 else -x[i] if x[i] < -500 else 0


@tack.kernel
def s_chained(x, lo, hi, out_in, out_desc):
    for i in range(x.shape[0]):
        out_in[i] = lo < x[i] <= hi
        out_desc[i] = x[i] > lo > -hi >= x[i] - 2000


@tack.kernel
def s_or_value(x, y, out):
    for i in range(x.shape[0]):
        out[i] = x[i] or y[i]


def py_range_forms(i):
    s1 = sum(range(i))
    s2 = sum(j * j for j in range(3, i))
    s3 = 0
    for j in range(i, -1, -1):
        s3 = s3 * 3 + j
    s4 = sum(range(20, i, -3))
    s5 = sum(j + 100 for j in range(-i, i, 4))
    return s1, s2, s3, s4, s5


def test_sequential_range_forms():
    n = 30
    outs = [np.zeros(n, dtype=np.int64) for _ in range(5)]
    s_range_forms(*outs)
    expected = np.array([py_range_forms(i) for i in range(n)], dtype=np.int64).T
    for got, exp in zip(outs, expected):
        np.testing.assert_array_equal(got, exp)


def test_nested_break_continue():
    def ref(i):
        count = 0
        for j in range(i):
            if j % 3 == 0:
                continue
            for k in range(j):
                if k * k > i:
                    break
                if (j + k) % 2 == 1:
                    continue
                count += 1
            if count > 50:
                break
        return count
    out = np.zeros(80, dtype=np.int32)
    s_break_continue(out)
    np.testing.assert_array_equal(out, [ref(i) for i in range(80)])


def test_while_loop():
    def ref(v):
        steps = 0
        while v != 1:
            v = v // 2 if v % 2 == 0 else 3 * v + 1
            steps += 1
        return steps
    out = np.zeros(1000, dtype=np.int64)
    s_collatz(out)
    np.testing.assert_array_equal(out, [ref(i + 1) for i in range(1000)])


@pytest.mark.parametrize("dt", FLOATS)
def test_local_type_is_promotion_of_assignments(dt):
    x = values(dt, seed=50)
    out = np.zeros(x.shape, dtype=np.float64)
    s_promoted_local(x, out)  # s is dt: the division is done in dt
    assert_bitwise_equal(out, (x / NP[dt](3)).astype(np.float64))


@pytest.mark.parametrize("ta,tb", [("i8", "u8"), ("i32", "f32"), ("i16", "f32"), ("u32", "i32"),
                                   ("f32", "f64"), ("i64", "u64")])
def test_local_promotes_across_types(ta, tb):
    a = random_values(NP[ta], 257, 51)  # integers over their whole range
    b = random_values(NP[tb], 257, 52)
    out = np.zeros(a.shape, dtype=np.float64)
    s_mixed_local(a, b, out)
    with np.errstate(over="ignore"):
        t = a + b  # NumPy's promotion of the two array types
    expected = t / (np.float64(7) if t.dtype.kind in "iu" else t.dtype.type(7))
    assert_bitwise_equal(out, expected.astype(np.float64))


@pytest.mark.parametrize("dt", FLOATS + ["i32", "i64"])
def test_conditional_expression(dt):
    x = values(dt, seed=53)
    out = np.zeros_like(x)
    s_conditional_expr(x, out)
    expected = np.where(x > 0, x * NP[dt](2), np.where(x < -500, -x, NP[dt](0))).astype(x.dtype)
    assert_bitwise_equal(out, expected)


@pytest.mark.parametrize("dt", FLOATS + ["i32", "i64"])
def test_chained_comparisons(dt):
    x = values(dt, seed=54)
    o1 = np.zeros(x.shape, dtype=np.bool_)
    o2 = np.zeros(x.shape, dtype=np.bool_)
    s_chained(x, -100, 400, o1, o2)
    np.testing.assert_array_equal(o1, (-100 < x) & (x <= 400))
    xx = x.astype(np.float64)
    np.testing.assert_array_equal(o2, (xx > -100) & (-100 > -400) & (-400 >= xx - 2000))


@tack.kernel
def s_chained_assign(x, out):
    for i in range(x.shape[0]):
        n = x[i]
        m = n
        n = m = 3
        out[i] = n * x[i] + m


@pytest.mark.parametrize("dt", FLOATS + ["i32"])
def test_chained_assignment_of_a_literal(dt):
    # n and m already hold x's type: the literal joins it, as n = 3 alone
    # would (this ended in an internal error, found by the kernel fuzzer).
    x = values(dt, seed=55)
    out = np.zeros_like(x)
    s_chained_assign(x, out)
    with np.errstate(over="ignore"):
        expected = (NP[dt](3) * x + NP[dt](3)).astype(x.dtype)
    assert_bitwise_equal(out, expected)


@pytest.mark.parametrize("dt", FLOATS + ["i32"])
def test_or_gives_an_operand(dt):
    x = values(dt, seed=55)
    x[::3] = 0
    y = values(dt, seed=56)
    out = np.zeros_like(x)
    s_or_value(x, y, out)
    assert_bitwise_equal(out, np.where(x != 0, x, y))


# =============================================================================
# 7. source outside the language: tack.CompileError with the right line
# =============================================================================

XE = np.arange(8, dtype=np.float32)


def plain_python(v):
    return v + 1


@tack.func
def two_args(a, b):
    return a + b


@tack.func
def ping(v):
    return pong(v)


@tack.func
def pong(v):
    return ping(v)  #@mutual


@tack.func
def fact(v):
    if v <= 1:
        return 1
    return v * fact(v - 1)  #@recursion


@tack.func
def sometimes_returns(v):  #@noreturn-def
    if v > 0:
        return v * 2  #@noreturn-ret


@tack.func
def has_lambda(v):
    g = lambda t: t  #@func-lambda
    return g(v)


def compile_error(build):
    with pytest.raises(tack.CompileError) as ei:
        build()
    err = ei.value
    assert isinstance(err.lineno, int)
    assert str(err.lineno) in str(err)
    return err


def test_error_plain_python_function():
    def build():
        @tack.kernel
        def bad_plain(x, out):
            for i in range(x.shape[0]):
                out[i] = plain_python(x[i])  #@plain
        bad_plain(XE, XE.copy())
    err = compile_error(build)
    assert err.lineno == here("plain")
    assert "plain_python" in str(err)


def test_error_device_function_wrong_argument_count():
    def build():
        @tack.kernel
        def bad_nargs(x, out):
            for i in range(x.shape[0]):
                out[i] = two_args(x[i])  #@nargs
        bad_nargs(XE, XE.copy())
    err = compile_error(build)
    assert err.lineno == here("nargs")
    assert "two_args" in str(err)


def test_error_recursion():
    def build():
        @tack.kernel
        def bad_rec(x, out):
            for i in range(x.shape[0]):
                out[i] = fact(x[i])
        bad_rec(XE, XE.copy())
    err = compile_error(build)
    assert err.lineno == here("recursion")
    assert "fact" in str(err)


def test_error_mutual_recursion():
    def build():
        @tack.kernel
        def bad_mutual(x, out):
            for i in range(x.shape[0]):
                out[i] = ping(x[i])
        bad_mutual(XE, XE.copy())
    err = compile_error(build)
    assert err.lineno == here("mutual")


def test_error_missing_return_on_a_path():
    def build():
        @tack.kernel
        def bad_noreturn(x, out):
            for i in range(x.shape[0]):
                out[i] = sometimes_returns(x[i])
        bad_noreturn(XE, XE.copy())
    err = compile_error(build)
    assert err.lineno in (here("noreturn-def"), here("noreturn-ret")), err.lineno
    assert "sometimes_returns" in str(err)


def test_error_lambda_inside_device_function():
    def build():
        @tack.kernel
        def bad_func_lambda(x, out):
            for i in range(x.shape[0]):
                out[i] = has_lambda(x[i])
        bad_func_lambda(XE, XE.copy())
    err = compile_error(build)
    assert err.lineno == here("func-lambda")


def test_error_return_in_kernel():
    # A bare return ends the iteration (issue 19, test_control_flow.py); a
    # return with a value inside the launch has nowhere to go.
    def build():
        @tack.kernel
        def bad_return(x, out):
            for i in range(x.shape[0]):
                out[i] = x[i]
                return x[i]  #@return
        bad_return(XE, XE.copy())
    err = compile_error(build)
    assert err.lineno == here("return")


def test_error_ndindex_variable_count():
    m = np.zeros((3, 4), dtype=np.float32)

    def build():
        @tack.kernel
        def bad_nd_vars(a):
            for i, j in tack.ndindex(a.shape[0], a.shape[1], 2):  #@ndvars
                a[i, j] = 1.0
        bad_nd_vars(m)
    err = compile_error(build)
    assert err.lineno == here("ndvars")


def test_error_ndindex_not_outermost():
    m = np.zeros((3, 4), dtype=np.float32)

    def build():
        @tack.kernel
        def bad_nd_inner(a):
            for i in range(a.shape[0]):
                for j, k in tack.ndindex(2, 2):  #@ndinner
                    a[i, j] = 1.0
        bad_nd_inner(m)
    err = compile_error(build)
    assert err.lineno == here("ndinner")


def test_error_ndindex_as_value():
    def build():
        @tack.kernel
        def bad_nd_value(x, out):
            for i in range(x.shape[0]):
                t = tack.ndindex(3, 3)  #@ndvalue
                out[i] = x[i]
        bad_nd_value(XE, XE.copy())
    err = compile_error(build)
    assert err.lineno == here("ndvalue")


def test_error_atomic_on_bool_array():
    flags = np.zeros(8, dtype=np.bool_)

    def build():
        @tack.kernel
        def bad_atomic_bool(x, f):
            for i in range(x.shape[0]):
                tack.atomic_or(f, i, True)  #@atomic-bool
        bad_atomic_bool(XE, flags)
    err = compile_error(build)
    assert err.lineno == here("atomic-bool")


@pytest.mark.parametrize("dt", FLOATS)
def test_error_atomic_and_on_floats(dt):
    acc = np.zeros(1, dtype=NP[dt])

    def build():
        @tack.kernel
        def bad_atomic_and(x, a):
            for i in range(x.shape[0]):
                tack.atomic_and(a, 0, x[i])  #@atomic-and
        bad_atomic_and(XE.astype(NP[dt]), acc)
    err = compile_error(build)
    assert err.lineno == here("atomic-and")
    assert (acc == 0).all()


def test_error_string_literal():
    def build():
        @tack.kernel
        def bad_str(x, out):
            for i in range(x.shape[0]):
                out[i] = len("abc")  #@str
        bad_str(XE, XE.copy())
    err = compile_error(build)
    assert err.lineno == here("str")


def test_error_list_comprehension():
    def build():
        @tack.kernel
        def bad_listcomp(x, out):
            for i in range(x.shape[0]):
                t = [x[j] for j in range(2)]  #@listcomp
                out[i] = x[i]
        bad_listcomp(XE, XE.copy())
    err = compile_error(build)
    assert err.lineno == here("listcomp")


def test_error_shape_without_index():
    def build():
        @tack.kernel
        def bad_shape(x, out):
            for i in range(x.shape[0]):
                s = x.shape  #@shape
                out[i] = x[i]
        bad_shape(XE, XE.copy())
    err = compile_error(build)
    assert err.lineno == here("shape")


def test_error_assign_to_parameter():
    def build():
        @tack.kernel
        def bad_param_assign(x, out, a):
            for i in range(x.shape[0]):
                a = a + 1.0  #@param
                out[i] = x[i] * a
        bad_param_assign(XE, XE.copy(), 2.0)
    err = compile_error(build)
    assert err.lineno == here("param")


def test_error_tuple_unpack_count_from_device_function():
    def build():
        @tack.kernel
        def bad_unpack(x, out):
            for i in range(x.shape[0]):
                a, b, c = inc_and_double(x[i])  #@unpack
                out[i] = a
        bad_unpack(XE, XE.copy())
    err = compile_error(build)
    assert err.lineno == here("unpack")


def test_error_atomic_on_scalar():
    @tack.kernel
    def bad_atomic_scalar(x, s):
        for i in range(x.shape[0]):
            tack.atomic_add(s, 0, x[i])  #@atomic-scalar
    with pytest.raises((tack.CompileError, TypeError)) as ei:
        bad_atomic_scalar(XE, 1.0)
    if isinstance(ei.value, tack.CompileError):
        assert ei.value.lineno == here("atomic-scalar")


def test_error_tuple_result_used_as_value():
    def build():
        @tack.kernel
        def bad_tuple_value(x, out):
            for i in range(x.shape[0]):
                t = inc_and_double(x[i])  #@tuple-value
                out[i] = t
        bad_tuple_value(XE, XE.copy())
    err = compile_error(build)
    assert err.lineno == here("tuple-value")


def test_error_device_function_as_value():
    def build():
        @tack.kernel
        def bad_func_value(x, out):
            for i in range(x.shape[0]):
                out[i] = sq  #@func-value
        bad_func_value(XE, XE.copy())
    err = compile_error(build)
    assert err.lineno == here("func-value")


def test_error_keyword_argument_to_device_function():
    def build():
        @tack.kernel
        def bad_func_kwarg(x, out):
            for i in range(x.shape[0]):
                out[i] = sq(w=x[i])  #@func-kwarg
        bad_func_kwarg(XE, XE.copy())
    # sq(v=x[i]) is a call like any other now; a keyword sq lacks is refused
    err = compile_error(build)
    assert err.lineno == here("func-kwarg")
    assert "has no parameter 'w'" in str(err)


def test_error_unsupported_math_function():
    def build():
        @tack.kernel
        def bad_factorial(x, out):
            for i in range(x.shape[0]):
                out[i] = math.factorial(x[i])  #@factorial
        bad_factorial(XE, XE.copy())
    err = compile_error(build)
    assert err.lineno == here("factorial")


def test_error_builtin_argument_count():
    def build():
        @tack.kernel
        def bad_min1(x, out):
            for i in range(x.shape[0]):
                out[i] = min(x[i])  #@min1
        bad_min1(XE, XE.copy())
    err = compile_error(build)
    assert err.lineno == here("min1")


def test_error_nested_ndindex():
    m = np.zeros((3, 4), dtype=np.float32)

    def build():
        @tack.kernel
        def bad_nd_nested(a):
            for i, j in tack.ndindex(a.shape[0], a.shape[1]):
                for p, q in tack.ndindex(2, 2):  #@ndnested
                    a[i, j] = 1.0
        bad_nd_nested(m)
    err = compile_error(build)
    assert err.lineno == here("ndnested")


def test_error_indexing_a_scalar_in_device_function():
    def build():
        @tack.kernel
        def bad_scalar_index(x, out):
            for i in range(x.shape[0]):
                out[i] = row_sum(x[i], 0)
        bad_scalar_index(XE, XE.copy())
    err = compile_error(build)
    # a line in row_sum that uses its parameter `m` as an array
    assert err.lineno in (here("row-sum-shape"), here("row-sum-index")), err.lineno


def test_kernel_usable_after_errors():
    # the errors above leave the library in a working state
    x = values("f32")
    out = np.zeros_like(x)
    k_func_sq(x, out)
    assert_bitwise_equal(out, x * x)
