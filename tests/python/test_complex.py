"""Complex numbers in kernels (complex(a, b), 1j, .real, .imag, .conjugate(),
abs, arithmetic, ==, cmath), against NumPy's complex128 on every device."""
import cmath

import numpy as np
import pytest

import tack

pytestmark = pytest.mark.every_device

SPECIAL = [0.0, -0.0, 1.5, -2.25, 3.0e-3, 7.0, np.inf, -np.inf, np.nan]


def _grid(dtype=np.float64):
    re, im = np.meshgrid(np.array(SPECIAL), np.array(SPECIAL))
    return re.ravel().astype(dtype), im.ravel().astype(dtype)


@tack.kernel
def arith(ar, ai, br, bi, out):
    for i in range(ar.shape[0]):
        a = complex(ar[i], ai[i])
        b = complex(br[i], bi[i])
        s = a + b
        d = a - b
        p = a * b
        q = a / b
        out[i, 0] = s.real
        out[i, 1] = s.imag
        out[i, 2] = d.real
        out[i, 3] = d.imag
        out[i, 4] = p.real
        out[i, 5] = p.imag
        out[i, 6] = q.real
        out[i, 7] = q.imag
        out[i, 8] = abs(a)
        out[i, 9] = a.conjugate().imag
        out[i, 10] = (-a).real
        out[i, 11] = float(a == b)
        out[i, 12] = float(a != b)


def _close(got, want):
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-300, equal_nan=True)


def test_arithmetic_matches_numpy(device):
    rng = np.random.default_rng(1)
    n = 64
    ar, ai, br, bi = (rng.uniform(-4, 4, n) for _ in range(4))
    br[0] = bi[0] = 0.0  # 0/0 -> nan, as NumPy
    br[1], bi[1] = 3.0, 0.0
    ar[2], ai[2] = br[2], bi[2] = 1.0, -2.0  # equal
    out = np.zeros((n, 13))
    with np.errstate(all="ignore"):
        arith(ar, ai, br, bi, out)
        a, b = ar + 1j * ai, br + 1j * bi
        want = [(a + b).real, (a + b).imag, (a - b).real, (a - b).imag, (a * b).real,
                (a * b).imag, (a / b).real, (a / b).imag, abs(a), np.conj(a).imag, (-a).real,
                (a == b).astype(float), (a != b).astype(float)]
    for k, w in enumerate(want):
        if k in (6, 7):
            _close(out[1:, k], w[1:])
            assert np.isnan(out[0, k]) or np.isinf(out[0, k])
        else:
            _close(out[:, k], w)


def test_special_values_add_mul_abs(device):
    ar, ai = _grid()
    br, bi = ai.copy(), ar.copy()
    out = np.zeros((ar.size, 13))
    with np.errstate(all="ignore"):
        arith(ar, ai, br, bi, out)
        a, b = ar + 1j * ai, br + 1j * bi
    # Sums, differences, abs, conjugate and negation are exact, NaN and inf included.
    a = ar.astype(complex); a.imag = ai
    b = br.astype(complex); b.imag = bi
    with np.errstate(all="ignore"):
        for k, w in ((0, (a + b).real), (1, (a + b).imag), (2, (a - b).real), (3, (a - b).imag),
                     (10, (-a).real)):
            np.testing.assert_array_equal(out[:, k], w)
    # abs is hypot: inf wins over NaN, and finite values agree to an ulp.
    np.testing.assert_allclose(out[:, 8], np.abs(a), rtol=4e-16, equal_nan=True)
    # -0.0 keeps its sign through conjugation and negation.
    np.testing.assert_array_equal(np.signbit(out[:, 9]), np.signbit(np.conj(a).imag))
    np.testing.assert_array_equal(np.signbit(out[:, 10]), np.signbit((-a).real))


@tack.kernel
def cmath_plain(xr, xi, out):
    for i in range(xr.shape[0]):
        z = complex(xr[i], xi[i])
        e = cmath.exp(z)
        out[i, 0] = e.real
        out[i, 1] = e.imag
        l = cmath.log(z)
        out[i, 2] = l.real
        out[i, 3] = l.imag
        s = cmath.sqrt(z)
        out[i, 4] = s.real
        out[i, 5] = s.imag
        t = cmath.sin(z)
        out[i, 6] = t.real
        out[i, 7] = t.imag
        t = cmath.cos(z)
        out[i, 8] = t.real
        out[i, 9] = t.imag
        t = cmath.tan(z)
        out[i, 10] = t.real
        out[i, 11] = t.imag
        t = cmath.sinh(z)
        out[i, 12] = t.real
        out[i, 13] = t.imag
        t = cmath.cosh(z)
        out[i, 14] = t.real
        out[i, 15] = t.imag
        t = cmath.tanh(z)
        out[i, 16] = t.real
        out[i, 17] = t.imag
        t = cmath.log10(z)
        out[i, 18] = t.real
        out[i, 19] = t.imag
        out[i, 20] = cmath.phase(z)
        w = cmath.rect(abs(z), cmath.phase(z))
        out[i, 21] = w.real
        out[i, 22] = w.imag
        out[i, 23] = float(cmath.isnan(z))
        out[i, 24] = float(cmath.isinf(z))
        out[i, 25] = float(cmath.isfinite(z))


def test_cmath_functions_match(device):
    rng = np.random.default_rng(2)
    n = 50
    xr, xi = rng.uniform(-3, 3, n), rng.uniform(-3, 3, n)
    xr[0] = 0.0
    xi[0] = 0.0
    xr[1], xi[1] = -4.0, 0.0  # sqrt and log on the branch cut
    xr[2], xi[2] = -4.0, -0.0
    xr[3], xi[3] = np.nan, 1.0
    xr[4], xi[4] = np.inf, 0.0
    out = np.zeros((n, 26))
    cmath_plain(xr, xi, out)
    want = np.zeros_like(out)
    for i in range(n):
        z = complex(xr[i], xi[i])
        vals = []
        for f in (cmath.exp, cmath.log, cmath.sqrt, cmath.sin, cmath.cos, cmath.tan, cmath.sinh,
                  cmath.cosh, cmath.tanh, cmath.log10):
            try:
                v = f(z)
            except (ValueError, OverflowError):
                v = complex(np.nan, np.nan)
            vals += [v.real, v.imag]
        w = cmath.rect(abs(z), cmath.phase(z)) if np.isfinite(abs(z)) else complex(np.nan, np.nan)
        vals += [cmath.phase(z), w.real, w.imag, cmath.isnan(z), cmath.isinf(z), cmath.isfinite(z)]
        want[i] = vals
    # Finite rows: close to Python's cmath.
    np.testing.assert_allclose(out[5:], want[5:], rtol=1e-9, atol=1e-12)
    # Zero, the branch cut with both signs of zero, NaN and inf.
    np.testing.assert_allclose(out[0, [0, 1, 4, 5, 20]], want[0, [0, 1, 4, 5, 20]])
    np.testing.assert_allclose(out[1:3, :6], want[1:3, :6], rtol=1e-12)
    assert np.isnan(out[3, 0]) and out[3, 23] == 1 and out[3, 25] == 0
    assert out[4, 24] == 1 and out[4, 25] == 0 and out[4, 23] == 0


@tack.kernel
def mandelbrot(cr, ci, count, limit):
    for i in range(cr.shape[0]):
        c = complex(cr[i], ci[i])
        z = 0j
        n = 0
        while n < limit and abs(z) <= 2.0:
            z = z * z + c
            n += 1
        count[i] = n


def test_mandelbrot_matches_numpy(device):
    xs = np.linspace(-2.0, 0.6, 40)
    ys = np.linspace(-1.2, 1.2, 30)
    cr, ci = (a.ravel() for a in np.meshgrid(xs, ys))
    count = np.zeros(cr.size, np.int32)
    mandelbrot(cr, ci, count, 50)
    want = np.zeros(cr.size, np.int32)
    for i in range(cr.size):
        c = complex(cr[i], ci[i])
        z, n = 0j, 0
        while n < 50 and abs(z) <= 2.0:
            z = z * z + c
            n += 1
        want[i] = n
    np.testing.assert_array_equal(count, want)


@tack.kernel
def literals(x, out):
    for i in range(x.shape[0]):
        z = x[i] + 2.5j  # a real and an imaginary literal
        w = z * 1j - 3  # times i: (-im, re)
        w = w ** 3
        w += 1j
        out[i, 0] = w.real
        out[i, 1] = w.imag
        out[i, 2] = (1j * 1j).real
        out[i, 3] = np.real(z) + np.imag(z)
        out[i, 4] = np.conj(z).imag
        out[i, 5] = np.abs(z)
        e = np.exp(z)
        out[i, 6] = e.real
        out[i, 7] = x[i].imag
        out[i, 8] = (x[i] / z).imag


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_literals_and_numpy_spellings(device, dtype):
    x = np.array([0.0, -0.0, 1.0, -2.5, 0.125, 3.0], dtype)
    out = np.zeros((x.size, 9), dtype)
    literals(x, out)
    z = x.astype(np.complex128) + 2.5j
    w = (z * 1j - 3) ** 3 + 1j
    want = np.stack([w.real, w.imag, np.full(x.size, -1.0), z.real + z.imag, np.conj(z).imag,
                     np.abs(z), np.exp(z).real, np.zeros(x.size), (x / z).imag], axis=1)
    rtol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(out, want, rtol=rtol, atol=1e-6 if dtype == np.float32 else 1e-12)


def test_f32_parts_stay_f32(device):
    # complex64-like arithmetic: an f32 operand times a weak literal stays f32.
    x = np.array([1.0, 2.0], np.float32)
    out = np.zeros((2, 9), np.float32)
    literals(x, out)
    keys = [k[0] for k in literals.variants()]
    assert any(entry[0] == "f32" for sig in keys for entry in sig)


@tack.kernel
def empty_case(xr, out):
    for i in range(xr.shape[0]):
        out[i] = abs(complex(xr[i], 1.0) * 2j)


def test_empty_arrays(device):
    out = np.zeros(0)
    empty_case(np.zeros(0), out)
    assert out.size == 0


def test_refusals_name_the_line(device):
    @tack.kernel
    def ordered(x, out):
        for i in range(x.shape[0]):
            z = complex(x[i], 1.0)
            out[i] = float(z < 1j)

    with pytest.raises(tack.CompileError, match="only == and !="):
        ordered(np.zeros(2), np.zeros(2))

    @tack.kernel
    def stored(x, out):
        for i in range(x.shape[0]):
            out[i] = complex(x[i], 1.0)

    with pytest.raises(tack.CompileError):
        stored(np.zeros(2), np.zeros(2))

    @tack.kernel
    def polar(x, out):
        for i in range(x.shape[0]):
            out[i] = cmath.polarx(x[i])

    with pytest.raises(tack.CompileError, match="cmath"):
        polar(np.zeros(2), np.zeros(2))

    @tack.kernel
    def mixed_kinds(x, out):
        for i in range(x.shape[0]):
            z = tack.vec2f(1.0, 2.0)
            z = complex(x[i], 1.0)
            out[i] = z.real

    with pytest.raises(tack.CompileError, match="one kind of value"):
        mixed_kinds(np.zeros(2), np.zeros(2))


@pytest.mark.parametrize("depth", [1, 70, 95])
def test_deeply_nested_operators(device, depth):
    # Each complex operator lowers to an inlined block; nesting past 64 once
    # failed the IR verifier (a fuzzer finding) instead of compiling.
    signs = "-" * depth
    src = ("def nested(x, out):\n"
           "    for i in range(x.shape[0]):\n"
           f"        z = 1 + {signs} complex(x[i], 2.0) * -40\n"
           "        out[i, 0] = z.real\n"
           "        out[i, 1] = z.imag\n")
    scope = {}
    exec(src, scope)
    kernel = tack.kernel(scope["nested"], source=src)
    x = np.array([0.5, -1.25, 3.0])
    out = np.zeros((3, 2))
    kernel(x, out)
    want = 1 + (-1) ** depth * ((x + 2j) * -40)
    np.testing.assert_array_equal(out[:, 0], want.real)
    np.testing.assert_array_equal(out[:, 1], want.imag)
