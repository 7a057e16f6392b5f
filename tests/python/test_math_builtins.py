"""Python's math module, pow(), divmod() and round() in kernels, and NumPy's
spellings of them (issue 19, item 7), on every device and as PTX.

References: Python's math computed in f64 (rounded to f32 for f32 kernels),
where Python raises the C99 / NumPy value instead (math.log1p(-1) raises,
the kernel gives -inf).  Tolerances, in units in the last place of the
expected value:

- CPU: glibc's libm, f32 functions in f32 (log1pf, ...).  f64 results equal
  Python's (the same libm), except gamma and lgamma, which Python computes
  itself; f32 results within 1-4 ulp of the correctly rounded value.
- GPU (OpenCL here; CUDA's builtins have bounds as tight or tighter): the
  OpenCL 1.2 bounds for each builtin (erf, erfc and tgamma 16 ulp, log1p and
  cbrt 2, ...).  OpenCL may flush f32 subnormal results to zero, so those
  are held to within the smallest normal.
- lgamma: also an absolute error of a few epsilons, since near its zeros
  (x = 1, 2, -2.457...) only absolute accuracy means anything.
- Exact (bitwise, every device): degrees, radians, ldexp, frexp, modf,
  remainder, nextafter, fma, ulp, copysign, divmod, gcd, lcm, pow of
  integers.
"""
import ctypes
import ctypes.util
import json
import math
import os
import subprocess
import sys
from fractions import Fraction
from math import log1p as imported_log1p

import numpy as np
import pytest
from numpy import arcsinh as imported_arcsinh
from numpy import maximum as imported_maximum

import tack
from conftest import assert_bitwise_equal
from test_cuda import check_ptx, needs_nvrtc

pytestmark = pytest.mark.every_device

FLOATS = [np.float32, np.float64]

# ---- one-argument float functions --------------------------------------------

UNARY = ["asinh", "acosh", "atanh", "exp2", "expm1", "log1p", "cbrt", "erf", "erfc", "gamma",
         "lgamma"]


@tack.kernel
def unary_all(x, o):
    for i in range(x.shape[0]):
        o[0, i] = math.asinh(x[i])
        o[1, i] = math.acosh(x[i])
        o[2, i] = tack.math.atanh(x[i])
        o[3, i] = math.exp2(x[i])
        o[4, i] = math.expm1(x[i])
        o[5, i] = math.log1p(x[i])
        o[6, i] = tack.math.cbrt(x[i])
        o[7, i] = math.erf(x[i])
        o[8, i] = math.erfc(x[i])
        o[9, i] = math.gamma(x[i])
        o[10, i] = math.lgamma(x[i])


# (cpu f32, cpu f64, gpu) ulp bounds; the GPU's are OpenCL 1.2's (lgamma has
# none there: 16, with the absolute term).
TOL = {
    "asinh": (2, 0, 4), "acosh": (2, 0, 4), "atanh": (2, 0, 5), "exp2": (1, 0, 3),
    "expm1": (1, 0, 3), "log1p": (1, 0, 2), "cbrt": (1, 0, 2), "erf": (1, 0, 16),
    "erfc": (3, 0, 16), "gamma": (4, 8, 16), "lgamma": (3, 4, 16),
}
# Functions NumPy has, for a second check against NumPy itself (whose SIMD
# loops are within 4 ulp of libm).
NUMPY_OF = {"asinh": np.arcsinh, "acosh": np.arccosh, "atanh": np.arctanh, "exp2": np.exp2,
            "expm1": np.expm1, "log1p": np.log1p, "cbrt": np.cbrt}


def libm(name):
    """math.<name>, or the C library's function where this Python's math
    lacks it (exp2 and cbrt came in Python 3.11; math calls libm's)."""
    if hasattr(math, name):
        return getattr(math, name)
    fn = getattr(ctypes.CDLL(ctypes.util.find_library("m")), name)
    fn.restype, fn.argtypes = ctypes.c_double, [ctypes.c_double]
    return fn


def c99(name, v):
    """math.<name>(v), or the C99 value where Python raises."""
    try:
        return libm(name)(v)
    except OverflowError:  # gamma(-1e-320) is -inf; every other overflow here +inf
        return -math.inf if name == "gamma" and v < 0 else math.inf
    except ValueError:
        if name == "atanh" and abs(v) == 1:
            return math.copysign(math.inf, v)
        if name == "log1p" and v == -1:
            return -math.inf
        if name == "gamma" and v == 0:
            return math.copysign(math.inf, v)
        if name == "lgamma":
            return math.inf
        return math.nan


def sample(dt, seed=0):
    """Edge values (zeros, infinities, NaN, subnormals, the extremes) and
    random ones at several scales, both signs."""
    fi = np.finfo(dt)
    edges = [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 0.5, -0.5, 2.0, -2.0, 3.0, -3.0,
             -2.5, 10.0, -10.0, 100.0, -100.0, 1e-30, -1e-30, float(fi.smallest_subnormal),
             -float(fi.smallest_subnormal), float(fi.tiny), float(fi.max), -float(fi.max),
             0.999, 1.001, -0.999, -1.001, 1e30, -1e30]
    rng = np.random.default_rng(seed)
    rand = np.concatenate([rng.uniform(-5, 5, 300), rng.uniform(-40, 40, 200),
                           np.exp(rng.uniform(-30, 6, 200)), -np.exp(rng.uniform(-30, 6, 100)),
                           rng.uniform(0.99, 1.01, 50), rng.uniform(1.99, 2.01, 50)])
    with np.errstate(over="ignore"):
        return np.concatenate([np.array(edges), rand]).astype(dt)


def ulp_errors(got, want64, dt):
    """|got - want| in ulps of want rounded to dt (want given in f64)."""
    want = want64.astype(dt)
    spacing = np.spacing(np.abs(want)).astype(np.float64)
    return np.abs(got.astype(np.float64) - want64) / spacing


def check_close(got, want64, dt, ulps, gpu, abs_eps=0.0, what=""):
    """got (dt) against the f64 reference: NaN where NaN, infinities and
    zeros exactly (the sign of zero too), the rest within `ulps` ulp
    (plus abs_eps machine epsilons absolute)."""
    with np.errstate(over="ignore", invalid="ignore"):
        want = want64.astype(dt)
    assert got.dtype == dt
    nan = np.isnan(want)
    assert np.array_equal(np.isnan(got), nan), f"{what}: NaN at {np.nonzero(np.isnan(got) != nan)}"
    rest = ~nan
    special = rest & (np.isinf(want) | (want == 0))
    if gpu and dt == np.float32:
        # OpenCL may flush f32 subnormals: 0 or within the smallest normal.
        tiny = rest & (np.abs(want64) < np.finfo(dt).tiny)
        with np.errstate(invalid="ignore"):
            bad = tiny & (np.abs(got.astype(np.float64) - want64) > np.finfo(dt).tiny)
        assert not bad.any(), f"{what}: subnormal results {got[bad][:4]} for {want[bad][:4]}"
        special &= ~tiny
        rest &= ~tiny
    same = (got[special] == want[special]) & (np.signbit(got[special]) == np.signbit(want[special]))
    assert same.all(), f"{what}: got {got[special][~same][:4]}, want {want[special][~same][:4]}"
    fin = rest & ~special
    err = ulp_errors(got[fin], want64[fin], dt)
    if abs_eps:
        err = np.minimum(err, np.abs(got[fin] - want64[fin]) / (abs_eps * np.finfo(dt).eps))
    worst = int(np.argmax(err)) if err.size else 0
    assert err.size == 0 or err[worst] <= ulps, (
        f"{what}: {err[worst]:.2f} ulp at x index {np.nonzero(fin)[0][worst]}: "
        f"got {got[fin][worst]!r}, want {want64[fin][worst]!r} (bound {ulps})")


def assert_same_values(got, want):
    """Bitwise equal, except that any NaN matches any NaN (C leaves the
    sign and payload of a NaN result open)."""
    got, want = np.asarray(got), np.asarray(want)
    both = np.isnan(got) & np.isnan(want)
    assert_bitwise_equal(np.where(both, 0, got).astype(got.dtype),
                         np.where(both, 0, want).astype(want.dtype))


def gpu_device(device):
    return device.name != "cpu"


def cpu_only_source(device):
    """Source and PTX are generated once, from the CPU run."""
    if device.name != "cpu":
        pytest.skip("generated once, from the CPU run")


@pytest.mark.parametrize("dt", FLOATS)
@pytest.mark.parametrize("name", UNARY)
def test_unary_functions(device, name, dt):
    x = sample(dt)
    if name == "gamma":
        x = x[(np.abs(x) < (30 if dt == np.float32 else 170)) | ~np.isfinite(x)]
    o = np.zeros((len(UNARY), x.size), dt)
    unary_all(x, o)
    got = o[UNARY.index(name)]
    want = np.array([c99(name, float(v)) for v in x])
    cpu32, cpu64, gpu = TOL[name]
    ulps = gpu if gpu_device(device) else cpu32 if dt == np.float32 else cpu64
    check_close(got, want, dt, ulps, gpu_device(device), abs_eps=4 if name == "lgamma" else 0,
                what=f"{name} {np.dtype(dt).name}")
    if name in NUMPY_OF:
        with np.errstate(all="ignore"):
            ref = NUMPY_OF[name](x)
        check_close(got, ref.astype(np.float64), dt, max(ulps, 1) + 4, gpu_device(device),
                    what=f"{name} vs NumPy")


@pytest.mark.parametrize("dt", FLOATS)
def test_unary_special_values(device, dt):
    """C99's special cases, where Python raises instead."""
    x = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 2.0, -3.0], dt)
    o = np.zeros((len(UNARY), x.size), dt)
    unary_all(x, o)
    inf, nan = np.inf, np.nan
    expect = {
        "asinh": [0.0, -0.0, inf, -inf, nan], "acosh": [nan, nan, inf, nan, nan, 0.0, nan],
        "atanh": [0.0, -0.0, nan, nan, nan, inf, -inf, nan], "exp2": [1.0, 1.0, inf, 0.0, nan],
        "expm1": [0.0, -0.0, inf, -1.0, nan], "log1p": [0.0, -0.0, inf, nan, nan, None, -inf],
        "cbrt": [0.0, -0.0, inf, -inf, nan], "erf": [0.0, -0.0, 1.0, -1.0, nan],
        "erfc": [1.0, 1.0, 0.0, 2.0, nan],
        "gamma": [inf, -inf, inf, nan, nan, 1.0, nan, 1.0, nan],
        "lgamma": [inf, inf, inf, inf, nan, 0.0, inf, 0.0, inf],
    }
    for name, want in expect.items():
        got = o[UNARY.index(name)]
        for k, w in enumerate(want):
            if w is None:
                continue
            g = got[k]
            ok = np.isnan(g) if np.isnan(w) else (g == w and np.signbit(g) == np.signbit(w))
            assert ok, f"{name}({x[k]!r}) gave {g!r}, want {w!r}"


# ---- exact functions ------------------------------------------------------------


@tack.kernel
def angles(x, deg, rad):
    for i in range(x.shape[0]):
        deg[i] = math.degrees(x[i])
        rad[i] = tack.math.radians(x[i])


@pytest.mark.parametrize("dt", FLOATS)
def test_degrees_radians_equal_numpy(device, dt):
    x = sample(dt)
    deg, rad = np.zeros_like(x), np.zeros_like(x)
    angles(x, deg, rad)
    with np.errstate(over="ignore"):
        assert_same_values(deg, np.degrees(x))
        assert_same_values(rad, np.radians(x))


@tack.kernel
def ldexp_k(x, n, out):
    for i in range(x.shape[0]):
        out[i] = math.ldexp(x[i], n[i])


@pytest.mark.parametrize("ndt", [np.int32, np.int64])
@pytest.mark.parametrize("dt", FLOATS)
def test_ldexp_equals_numpy(device, dt, ndt):
    x = sample(dt)[:200]
    rng = np.random.default_rng(3)
    n = rng.integers(-1200, 1200, x.size).astype(ndt)
    n[:8] = [0, 1, -1, 2**31 - 1, -2**31, 300, -300, 5]
    if ndt == np.int64:
        n[8:12] = [2**40, -2**40, 2**62, -2**62]  # clamped to int's range, as NumPy
    out = np.zeros_like(x)
    ldexp_k(x, n, out)
    with np.errstate(over="ignore", under="ignore"):
        assert_same_values(out, np.ldexp(x, n))


@tack.kernel
def frexp_modf(x, m, e, frac, whole):
    for i in range(x.shape[0]):
        mm, ee = math.frexp(x[i])
        m[i] = mm
        e[i] = ee
        f, w = math.modf(x[i])
        frac[i] = f
        whole[i] = w


@pytest.mark.parametrize("dt", FLOATS)
def test_frexp_modf_equal_numpy(device, dt):
    x = sample(dt)
    m, frac, whole = np.zeros_like(x), np.zeros_like(x), np.zeros_like(x)
    e = np.zeros(x.size, np.int32)
    frexp_modf(x, m, e, frac, whole)
    m_ref, e_ref = np.frexp(x)
    assert_same_values(m, m_ref)
    assert_same_values(e, e_ref)  # an i32, 0 for 0, inf and NaN
    f_ref, w_ref = np.modf(x)
    assert_same_values(frac, f_ref)
    assert_same_values(whole, w_ref)


@tack.kernel
def binary_exact(x, y, rem, nxt):
    for i in range(x.shape[0]):
        rem[i] = math.remainder(x[i], y[i])
        nxt[i] = math.nextafter(x[i], y[i])


@pytest.mark.parametrize("dt", FLOATS)
def test_remainder_nextafter_exact(device, dt):
    x = sample(dt, seed=1)
    y = np.roll(sample(dt, seed=2), 7)
    rem, nxt = np.zeros_like(x), np.zeros_like(x)
    binary_exact(x, y, rem, nxt)
    # IEEE remainder is exact: Python's value, in f32 too.
    want = []
    for a, b in zip(x.astype(np.float64), y.astype(np.float64)):
        try:
            want.append(math.remainder(a, b))
        except ValueError:  # remainder(x, 0), remainder(inf, y): NaN in C
            want.append(math.nan)
    assert_same_values(rem, np.array(want).astype(dt))
    assert_same_values(nxt, np.nextafter(x, y))


@tack.kernel
def fma_k(x, y, z, out):
    for i in range(x.shape[0]):
        out[i] = math.fma(x[i], y[i], z[i])


def round_exact(q, dt):
    """The dt nearest the rational q, ties to even."""
    c = dt(float(q))
    best = c
    for n in (np.nextafter(c, dt(np.inf)), np.nextafter(c, dt(-np.inf))):
        if not np.isfinite(n):
            continue
        d, db = abs(Fraction(float(n)) - q), abs(Fraction(float(best)) - q)
        if d < db or (d == db and int(n.view({4: np.uint32, 8: np.uint64}[n.itemsize])) % 2 == 0):
            best = n
    return best


@pytest.mark.parametrize("dt", FLOATS)
def test_fma_rounds_once(device, dt):
    rng = np.random.default_rng(4)
    x = (rng.standard_normal(300) * 10).astype(dt)
    y = (rng.standard_normal(300) * 10).astype(dt)
    z = -(x.astype(np.float64) * y).astype(dt)  # cancellation: x*y's low bits decide
    z[::3] = rng.standard_normal(100).astype(dt)
    out = np.zeros_like(x)
    fma_k(x, y, z, out)
    want = np.array([round_exact(Fraction(float(a)) * Fraction(float(b)) + Fraction(float(c)), dt)
                     for a, b, c in zip(x, y, z)], dt)
    assert_same_values(out, want)


@tack.kernel
def ulp_k(x, out):
    for i in range(x.shape[0]):
        out[i] = math.ulp(x[i])


@pytest.mark.parametrize("dt", FLOATS)
def test_ulp(device, dt):
    x = sample(dt)
    out = np.zeros_like(x)
    ulp_k(x, out)
    if dt == np.float64:
        want = np.array([math.ulp(float(v)) for v in x])
    else:  # Python's definition, in f32
        a = np.abs(x)
        with np.errstate(invalid="ignore", over="ignore"):
            up = np.nextafter(a, np.float32(np.inf))
            want = np.where(np.isfinite(up), up - a,
                            np.where(np.isinf(a), a, a - np.nextafter(a, np.float32(0))))
    assert_same_values(out, want.astype(dt))


# ---- integers: gcd, lcm, divmod, pow ---------------------------------------------


@tack.kernel
def gcd_lcm(a, b, g, m, g3):
    for i in range(a.shape[0]):
        g[i] = math.gcd(a[i], b[i])
        m[i] = math.lcm(a[i], b[i])
        g3[i] = math.gcd(a[i], b[i], 12)


@pytest.mark.parametrize("it", [np.int32, np.int64, np.uint8, np.int16, np.uint64])
def test_gcd_lcm_equal_numpy(device, it):
    rng = np.random.default_rng(5)
    hi = 1000 if np.iinfo(it).max > 1000 else 100
    lo = 0 if np.iinfo(it).min == 0 else -hi
    a = rng.integers(lo, hi, 200).astype(it)
    b = rng.integers(lo, hi, 200).astype(it)
    a[:4] = [0, 0, 7, 12]
    b[:4] = [0, 5, 0, 18]
    g, m, g3 = np.zeros_like(a), np.zeros_like(a), np.zeros_like(a)
    gcd_lcm(a, b, g, m, g3)
    assert_same_values(g, np.gcd(a, b))
    assert_same_values(m, np.lcm(a, b))
    assert_same_values(g3, np.gcd(np.gcd(a, b), it(12)))


@tack.kernel
def divmod_k(a, b, q, r, q2, r2):
    for i in range(a.shape[0]):
        qq, rr = divmod(a[i], b[i])
        q[i] = qq
        r[i] = rr
        q2[i] = a[i] // b[i]
        r2[i] = a[i] % b[i]


@pytest.mark.parametrize("dt", [np.int32, np.int64, np.uint16, np.float32, np.float64])
def test_divmod_matches_floor_division_and_numpy(device, dt):
    rng = np.random.default_rng(6)
    if np.dtype(dt).kind == "f":
        a = sample(dt, seed=3)
        b = np.roll(sample(dt, seed=4), 3)
    else:
        lo = 0 if np.iinfo(dt).min == 0 else -50
        a = rng.integers(lo, 50, 300).astype(dt)
        b = rng.integers(lo, 50, 300).astype(dt)
        b[:3] = 0  # 0, as NumPy (Python raises)
    q, r, q2, r2 = (np.zeros_like(a) for _ in range(4))
    divmod_k(a, b, q, r, q2, r2)
    assert_same_values(q, q2)
    assert_same_values(r, r2)
    with np.errstate(all="ignore"):
        q_ref, r_ref = np.divmod(a, b)
    assert_same_values(q, q_ref)
    assert_same_values(r, r_ref)


@tack.kernel
def pow_k(a, b, p, p2):
    for i in range(a.shape[0]):
        p[i] = pow(a[i], b[i])
        p2[i] = a[i] ** b[i]


@pytest.mark.parametrize("dt", [np.int32, np.int64, np.float32, np.float64])
def test_builtin_pow_is_the_operator(device, dt):
    rng = np.random.default_rng(8)
    if np.dtype(dt).kind == "f":
        a = np.abs(sample(dt))
        b = rng.uniform(-4, 4, a.size).astype(dt)
    else:
        a = rng.integers(-9, 9, 200).astype(dt)
        b = rng.integers(-2, 12, 200).astype(dt)  # a negative exponent: 0 unless |a| == 1
    p, p2 = np.zeros_like(a), np.zeros_like(a)
    pow_k(a, b, p, p2)
    assert_same_values(p, p2)
    if np.dtype(dt).kind == "i":
        want = np.where(b >= 0, np.power(a, np.maximum(b, 0)),
                        np.where(a == 1, 1, np.where(a == -1, np.where(b % 2 == 0, 1, -1), 0)))
        assert_same_values(p, want.astype(dt))


# ---- log with a base, round, predicates -------------------------------------------


@tack.kernel
def log_base(x, b, out):
    for i in range(x.shape[0]):
        out[i] = math.log(x[i], b[i])


@pytest.mark.parametrize("dt", FLOATS)
def test_log_with_base(device, dt):
    rng = np.random.default_rng(9)
    x = np.exp(rng.uniform(-20, 20, 300)).astype(dt)
    b = rng.choice(np.array([2.0, 10.0, 0.5, 3.0, 7.5], dt), 300)
    out = np.zeros_like(x)
    log_base(x, b, out)
    # Python's math.log(x, b) is log(x) / log(b): on the CPU in f64 that is
    # bitwise Python's; f32 and the GPU's log (3 ulp each) round twice more.
    want = np.array([math.log(float(v), float(w)) for v, w in zip(x, b)])
    exact = not gpu_device(device) and dt == np.float64
    check_close(out, want, dt, 0 if exact else 8, gpu_device(device), what="log(x, base)")


@tack.kernel
def predicates_of_ints(n, o):
    for i in range(n.shape[0]):
        o[0, i] = math.isnan(n[i])
        o[1, i] = math.isinf(n[i])
        o[2, i] = math.isfinite(n[i])


def test_predicates_of_integers_are_bools(device):
    n = np.array([0, 1, -5, 2**40], np.int64)
    o = np.zeros((3, 4), np.bool_)
    predicates_of_ints(n, o)
    assert not o[0].any() and not o[1].any() and o[2].all()


@tack.kernel
def math_in_the_range(out, n, k):
    for i in range(math.gcd(n, 12) + math.lcm(n, 4) + int(math.ldexp(1.0, k)) +
                   int(math.fma(2.0, 3.0, 0.5)) + int(math.expm1(0.0))):
        out[i] = 1


def test_math_in_the_launch_range(device):
    """GPU launch ranges are evaluated on the host (backend/gpu/range.c)."""
    out = np.zeros(64, np.int64)
    math_in_the_range(out, 18, 3)  # 6 + 36 + 8 + 6 + 0
    assert out.sum() == 56 and out[:56].all()


# ---- spellings: NumPy's names, tack.math, names imported from math ----------------


@tack.kernel
def numpy_spellings(x, a, o):
    for i in range(x.shape[0]):
        o[0, i] = np.arcsinh(x[i])
        o[1, i] = np.deg2rad(x[i])
        o[2, i] = np.rad2deg(x[i])
        o[3, i] = np.log1p(np.abs(x[i]))
        o[4, i] = np.exp2(x[i])
        o[5, i] = np.remainder(x[i], 3.0)  # NumPy's remainder is Python's %
        o[6, i] = np.floor_divide(x[i], 3.0)
        o[7, i] = np.power(np.abs(x[i]), 1.5)
        o[8, i] = np.arctan2(x[i], 2.0)
        o[9, i] = imported_log1p(np.abs(x[i]))
        o[10, i] = imported_arcsinh(x[i])
        o[11, i] = float(np.gcd(a[i], 6) + np.power(a[i], 2))


@pytest.mark.parametrize("dt", FLOATS)
def test_numpy_spellings(device, dt):
    rng = np.random.default_rng(10)
    x = rng.uniform(-50, 50, 200).astype(dt)
    a = rng.integers(-20, 20, 200).astype(np.int64)
    o = np.zeros((12, x.size), dt)
    numpy_spellings(x, a, o)
    gpu = gpu_device(device)
    three, two = dt(3.0), dt(2.0)
    assert_same_values(o[1], np.deg2rad(x))
    assert_same_values(o[2], np.rad2deg(x))
    assert_same_values(o[5], np.remainder(x, three))
    assert_same_values(o[6], np.floor_divide(x, three))
    assert_same_values(o[11], (np.gcd(a, 6) + a ** 2).astype(dt))
    for row, ref, ulps in ((0, np.arcsinh(x), 4), (3, np.log1p(np.abs(x)), 4), (4, np.exp2(x), 4),
                           (7, np.power(np.abs(x), dt(1.5)), 16), (8, np.arctan2(x, two), 6),
                           (9, np.log1p(np.abs(x)), 4), (10, np.arcsinh(x), 4)):
        check_close(o[row], ref.astype(np.float64), dt, ulps + (4 if gpu else 0), gpu,
                    what=f"row {row}")


@tack.kernel
def vector_math(v, out):
    for i in range(v.shape[0]):
        out[i] = math.log1p(v[i]) + tack.math.cbrt(v[i])


def test_vector_components(device):
    x = np.random.default_rng(11).uniform(0, 10, (50, 3)).astype(np.float32)
    v = np.ascontiguousarray(x).view(np.float32)
    vin = tack.array(x, dtype=tack.vec3f, device=device)
    vout = tack.zeros((50,), dtype=tack.vec3f, device=device)
    vector_math(vin, vout)
    got = vout.numpy().reshape(50, 3)
    want = np.log1p(v) + np.cbrt(v)
    np.testing.assert_allclose(got, want, rtol=4e-7)


# ---- what kernels refuse ------------------------------------------------------------


@tack.kernel
def bad_factorial(x, out):
    for i in range(x.shape[0]):
        out[i] = math.factorial(x[i])


@tack.kernel
def bad_gcd_float(x, out):
    for i in range(x.shape[0]):
        out[i] = math.gcd(x[i], 2)


@tack.kernel
def bad_ldexp_float(x, out):
    for i in range(x.shape[0]):
        out[i] = math.ldexp(x[i], 2.0)


@tack.kernel
def bad_divmod_value(x, out):
    for i in range(x.shape[0]):
        out[i] = divmod(x[i], 2)


@tack.kernel
def bad_divmod_count(x, out):
    for i in range(x.shape[0]):
        a, b, c = divmod(x[i], 2)
        out[i] = a


@tack.kernel
def bad_pow_modulus(x, out):
    for i in range(x.shape[0]):
        out[i] = pow(x[i], 2, 7)


@tack.kernel
def bad_round_digits(x, out):
    for i in range(x.shape[0]):
        out[i] = round(x[i], 2)


@tack.kernel
def bad_numpy_erf(x, out):
    for i in range(x.shape[0]):
        out[i] = np.erf(x[i])


@tack.kernel
def bad_fsum(x, out):
    for i in range(x.shape[0]):
        out[i] = math.fsum(x)


@tack.kernel
def bad_frexp_vector(v, out):
    for i in range(v.shape[0]):
        m, e = math.frexp(v[i])
        out[i] = e


@tack.kernel
def bad_imported_ufunc(x, out):
    for i in range(x.shape[0]):
        out[i] = imported_maximum(x[i], 1.0)


BAD = [
    (bad_factorial, "math.factorial() is not available in kernels: its results outgrow", np.int64),
    (bad_gcd_float, "gcd() needs integers, not f64", np.float64),
    (bad_ldexp_float, "ldexp() needs an integer exponent, not f64", np.float64),
    (bad_divmod_value, "divmod() returns 2 values; unpack them, as in 'q, r = divmod(a, b)'", np.float64),
    (bad_divmod_count, "divmod() returns 2 values but 3 are expected", np.float64),
    (bad_pow_modulus, "pow() with a modulus", np.int64),
    (bad_round_digits, "round(x, ndigits) is not supported in kernels", np.float64),
    (bad_numpy_erf, "'numpy.erf' is a NumPy function kernels", np.float64),
    (bad_fsum, "math.fsum() is not available in kernels: it takes a sequence", np.float64),
    (bad_imported_ufunc, "'imported_maximum' is numpy.maximum, a NumPy ufunc kernels do not have",
     np.float64),
]


@pytest.mark.parametrize("kernel, message, dt", BAD, ids=[b[0].__name__ for b in BAD])
def test_refused_with_a_reason(device, kernel, message, dt):
    cpu_only_source(device)
    x = np.ones(4, dtype=dt)
    out = np.zeros(4, dtype=np.float64)
    with pytest.raises(tack.CompileError) as info:
        kernel(x, out)
    assert message in str(info.value)
    assert (out == 0).all()


def test_frexp_of_a_vector_is_refused(device):
    cpu_only_source(device)
    v = tack.zeros((4,), dtype=tack.vec3f)
    out = np.zeros(4, dtype=np.int32)
    with pytest.raises(tack.CompileError, match=r"math\.frexp\(\) needs scalars, not vectors"):
        bad_frexp_vector(v, out)


# ---- generated source and PTX ----------------------------------------------------------


@tack.kernel
def all_new(x, n, a, o, e, g):
    for i in range(x.shape[0]):
        o[0, i] = math.asinh(x[i]) + math.acosh(x[i]) + math.atanh(x[i]) + math.exp2(x[i])
        o[1, i] = math.expm1(x[i]) + math.log1p(x[i]) + math.cbrt(x[i]) + math.erf(x[i])
        o[2, i] = math.erfc(x[i]) + math.gamma(x[i]) + math.lgamma(x[i]) + math.degrees(x[i])
        o[3, i] = math.radians(x[i]) + math.remainder(x[i], 2.0) + math.nextafter(x[i], 0.0)
        o[4, i] = math.ldexp(x[i], n[i]) + math.fma(x[i], x[i], 1.0) + math.ulp(x[i])
        m, ee = math.frexp(x[i])
        f, w = math.modf(x[i])
        q, r = divmod(x[i], 3.0)
        o[5, i] = m + f + w + q + r + math.log(x[i], 2.0)
        e[i] = ee
        g[i] = math.gcd(a[i], 6) + math.lcm(a[i], 4) + pow(a[i], 3)


def all_new_args(dt):
    return (np.ones(8, dt), np.ones(8, np.int64), np.ones(8, np.int64), np.zeros((6, 8), dt),
            np.zeros(8, np.int32), np.zeros(8, np.int64))


F32_CUDA = ["asinhf(", "acoshf(", "atanhf(", "exp2f(", "expm1f(", "log1pf(", "cbrtf(", "erff(",
            "erfcf(", "tgammaf(", "lgammaf(", "remainderf(", "nextafterf(", "ldexpf(", "__fmaf_rn(",
            "ilogbf("]


def test_cuda_source_calls_the_precision_asked_for(device):
    cpu_only_source(device)
    f32 = tack.cuda.source(all_new, *all_new_args(np.float32))
    for name in F32_CUDA:
        assert name in f32, name
    assert "tk_gcd_i64(" in f32 and "tk_lcm_i64(" in f32
    f64 = tack.cuda.source(all_new, *all_new_args(np.float64))
    for name in F32_CUDA:
        double = name.replace("__fmaf_rn", "__fma_rn")[:-2] + "(" if name.endswith("f(") else name
        double = "__fma_rn(" if name == "__fmaf_rn(" else double
        assert double in f64, double
        assert name not in f64, name


def test_opencl_source_uses_the_overloads(device):
    cpu_only_source(device)
    src = tack.opencl.source(all_new, *all_new_args(np.float32))
    for name in ("asinh(", "log1p(", "tgamma(", "lgamma(", "remainder(", "nextafter(", "ldexp(",
                 "fma(", "ilogb(", "erfc("):
        assert name in src, name


@needs_nvrtc
@pytest.mark.parametrize("dt", FLOATS)
def test_ptx(device, dt):
    cpu_only_source(device)
    check_ptx(all_new, *all_new_args(dt))


@tack.kernel
def plain_copy(x, out):
    for i in range(x.shape[0]):
        out[i] = x[i]


def _hip_objects():
    """In a child process (hipRTC's LLVM and PoCL's clash in one, see
    test_gpu_dialects.py): prints {"missing": why or None, "refused": [...]}."""
    x = np.zeros(4, np.float32)
    try:
        tack.hip.compile(plain_copy, x, x, arch="gfx90a")
    except RuntimeError as e:
        print(json.dumps({"missing": str(e), "refused": []}))
        return
    refused = []
    for dt in FLOATS:
        for arch in ("gfx90a", "gfx1030"):
            try:
                obj = tack.hip.compile(all_new, *all_new_args(dt), arch=arch)
            except (RuntimeError, tack.CompileError) as e:
                refused.append(f"{np.dtype(dt).name} {arch}: {e}")
                continue
            if not (isinstance(obj, bytes) and obj[:4] == b"\x7fELF" and b"tack_all_new\0" in obj):
                refused.append(f"{np.dtype(dt).name} {arch}: not a code object")
    print(json.dumps({"missing": None, "refused": refused}))


def test_hip_code_objects(device):
    cpu_only_source(device)
    src = tack.hip.source(all_new, *all_new_args(np.float32))
    assert "log1pf(" in src and "fmaf(" in src and "__fmaf_rn" not in src
    here = os.path.dirname(os.path.abspath(__file__))
    code = f"import sys; sys.path.insert(0, {here!r}); import test_math_builtins as t; t._hip_objects()"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout.strip().splitlines()[-1])
    if out["missing"]:
        pytest.skip(f"hipRTC absent: {out['missing']}")
    assert not out["refused"], out["refused"]


def test_all_new_runs(device):
    """The kernel the PTX test compiles runs, and agrees with the
    separate tests' functions where its values are finite."""
    x = np.array([0.5, 1.5, 2.5, 3.25, 4.0, 7.0, 9.5, 1.0])
    n, a = np.arange(8, dtype=np.int64), np.arange(-3, 5, dtype=np.int64)
    o, e, g = np.zeros((6, 8)), np.zeros(8, np.int32), np.zeros(8, np.int64)
    all_new(x, n, a, o, e, g)
    assert_same_values(e, np.frexp(x)[1])
    assert_same_values(g, np.gcd(a, 6) + np.lcm(a, 4) + a ** 3)
    want4 = np.ldexp(x, n) + np.array([math.fma(v, v, 1.0) if hasattr(math, "fma") else v * v + 1.0
                                       for v in x]) + np.array([math.ulp(v) for v in x])
    np.testing.assert_allclose(o[4], want4, rtol=1e-15)
