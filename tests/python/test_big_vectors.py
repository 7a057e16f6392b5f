"""Vectors of 5-16 components (tack.vector(n, dtype)) on every device,
against NumPy: arrays of them from NumPy data with a trailing dimension,
constructors, arithmetic with scalars broadcast, dot, length, normalize,
indexing with constant and loop indices, unpacking, element-wise built-ins,
and a module-level alias of the dtype used as a constructor in kernels."""
import numpy as np
import pytest

import tack

pytestmark = pytest.mark.every_device

V8F = tack.vector(8, tack.f32)


@tack.kernel
def arith(a, b, s, total, dots, lens, unit, scaled):
    for i in range(a.shape[0]):
        u = a[i]
        v = b[i]
        total[i] = u + v * s[i] - u / 2.0
        dots[i] = tack.dot(u, v)
        lens[i] = tack.length(u) + u.length() * 0.0
        unit[i] = tack.normalize(u)
        w = tack.max(u, v) - abs(v)
        w[0] = 0.5 * w[0]
        scaled[i] = w


@pytest.mark.parametrize("n", [5, 7, 12, 16])
@pytest.mark.parametrize("dt,tol", [(np.float32, 2e-5), (np.float64, 1e-12)])
def test_arithmetic_matches_numpy(device, n, dt, tol):
    rng = np.random.default_rng(n)
    m = 9
    a = rng.normal(size=(m, n)).astype(dt)
    b = rng.normal(size=(m, n)).astype(dt)
    a[0] = 0                      # the zero vector normalizes to zero (as in Warp)
    s = rng.normal(size=m).astype(dt)
    vt = tack.vector(n, dt)
    assert vt.width == n
    outs = [tack.zeros(m, dtype=d, device=device) for d in (vt, dt, dt, vt, vt)]
    arith(tack.array(a, dtype=vt, device=device), tack.array(b, dtype=vt, device=device),
          tack.array(s, device=device), *outs)
    total, dots, lens, unit, scaled = (o.numpy() for o in outs)
    assert total.shape == (m, n) and total.dtype == dt
    np.testing.assert_allclose(total, a + b * s[:, None] - a / 2, rtol=tol, atol=tol)
    np.testing.assert_allclose(dots, (a * b).sum(1), rtol=tol * 10, atol=tol * 10)
    norms = np.linalg.norm(a.astype(np.float64), axis=1)
    np.testing.assert_allclose(lens, norms, rtol=tol * 10, atol=tol)
    want = np.divide(a, norms[:, None], out=np.zeros_like(a, dtype=np.float64),
                     where=norms[:, None] > 0)
    np.testing.assert_allclose(unit, want, rtol=tol * 10, atol=tol * 10)
    w = np.maximum(a, b) - np.abs(b)
    w[:, 0] *= 0.5
    np.testing.assert_allclose(scaled, w, rtol=tol, atol=tol)


@tack.kernel
def components(a, nk, out, sums, firsts):
    for i in range(a.shape[0]):
        v = a[i]
        acc = 0.0
        for k in range(nk):                   # a run-time bound: selects
            acc += v[k] * (k + 1)
        sums[i] = acc
        c0, c1, c2, c3, c4, c5, c6 = v
        firsts[i] = c6 - c0 + v[-1] + v.x + v.w + c4
        r = V8F()
        for k in range(7):                    # a static bound: unrolled
            r[k + 1] = v[k] * 2.0
        out[i] = r


def test_components_and_unpacking(device):
    rng = np.random.default_rng(3)
    m = 6
    a = rng.normal(size=(m, 7)).astype(np.float32)
    out = tack.zeros(m, dtype=V8F, device=device)
    sums = tack.zeros(m, device=device)
    firsts = tack.zeros(m, device=device)
    components(tack.array(a, dtype=tack.vector(7, tack.f32), device=device), 7, out, sums, firsts)
    np.testing.assert_allclose(sums.numpy(), (a * np.arange(1, 8)).sum(1), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(firsts.numpy(), 2 * a[:, 6] - a[:, 0] + a[:, 0] + a[:, 3] + a[:, 4],
                               rtol=1e-5, atol=1e-5)
    want = np.zeros((m, 8), np.float32)
    want[:, 1:] = 2 * a
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-6)


@tack.kernel
def build(x, out, ints):
    for i in range(x.shape[0]):
        s = x[i]
        out[i] = V8F(s, s + 1.0, s + 2.0, s + 3.0, s + 4.0, s + 5.0, s + 6.0, s + 7.0)
        ints[i] = tack.vector(i, i + 1, i + 2, i + 3, i + 4, i + 5) + tack.vector(
            1, 1, 1, 1, 1, 1)


def test_constructors(device):
    m = 5
    x = np.arange(m, dtype=np.float32) * 0.5
    out = tack.zeros(m, dtype=V8F, device=device)
    ints = tack.zeros(m, dtype=tack.vector(6, tack.i32), device=device)
    build(tack.array(x, device=device), out, ints)
    np.testing.assert_allclose(out.numpy(), x[:, None] + np.arange(8))
    np.testing.assert_array_equal(ints.numpy(), np.arange(m)[:, None] + np.arange(6) + 1)


@tack.kernel
def grid_sum(a, out):
    for i, j in tack.ndindex(a.shape[0], a.shape[1]):
        out[i, j] = a[i, j] * 2.0 + 1.0


def test_2d_array_of_big_vectors(device):
    rng = np.random.default_rng(4)
    a = rng.normal(size=(3, 4, 10))
    vt = tack.vector(10, tack.f64)
    out = tack.zeros((3, 4), dtype=vt, device=device)
    grid_sum(tack.array(a, dtype=vt, device=device), out)
    assert out.shape == (3, 4) and out.numpy().shape == (3, 4, 10)
    np.testing.assert_allclose(out.numpy(), a * 2 + 1)


def test_vector_dtypes_and_refusals():
    assert tack.vector(3, tack.f32) is tack.vec3f
    assert tack.vector(16, np.float64) is tack.vector(16, tack.f64)
    assert tack.vector(9, tack.i32).name == "vec9i"
    for bad in (1, 17):
        with pytest.raises(ValueError):
            tack.vector(bad, tack.f32)
    with pytest.raises(TypeError):
        tack.vector(5, tack.i64)


@tack.kernel
def double(a, out):
    for i in range(a.shape[0]):
        out[i] = a[i] * 2.0


def test_width_is_in_the_variant_key(device):
    # One kernel over 7- and 8-component vectors: two variants, each right.
    for n in (7, 8, 7):
        vt = tack.vector(n, tack.f64)
        a = np.arange(3 * n, dtype=np.float64).reshape(3, n)
        out = tack.zeros(3, dtype=vt, device=device)
        double(tack.array(a, dtype=vt, device=device), out)
        np.testing.assert_array_equal(out.numpy(), 2 * a)
    if device.name == "cpu":
        sigs = {dict(k.vec_sig).get(0) for k in double.variants()}
        assert {7, 8} <= sigs


def test_wide_dtype_repr_and_strings():
    vt = tack.vector(7, tack.f32)
    assert repr(vt) == "tack.vector(7, tack.f32)" and str(vt) == "vec7f"
    assert tack.empty((2,), dtype="vec9d").numpy().shape == (2, 9)
    np.testing.assert_array_equal(vt(*range(7)), np.arange(7, dtype=np.float32))
