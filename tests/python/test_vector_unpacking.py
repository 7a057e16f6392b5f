"""Vectors and matrices in tuple assignments: `a, b, c = v` (a matrix's
rows), `ia, ib, ic = f2v[i]` on an array of integer vectors, and swaps of
vectors `a, b = b, a`, on every device against NumPy."""
import numpy as np
import pytest

import tack

pytestmark = pytest.mark.every_device


@tack.kernel
def unpack(f2v, x, m, out, rows):
    for i in range(f2v.shape[0]):
        ia, ib, ic = f2v[i]                      # integer components
        a, b, c = x[ia] + x[ib]                  # arithmetic on vectors
        r0, r1 = m[i]                            # a 2x2 matrix's rows
        p, q = r0
        out[i] = (a + 10 * b + 100 * c) * ic + p - q
        rows[i] = r1 * 2.0


@tack.kernel
def swaps(u, v, out_u, out_v, k):
    for i in range(u.shape[0]):
        a = u[i]
        b = v[i]
        for _ in range(k):
            a, b = b, a + b                      # both sides read before either is written
        s, t = tack.vec2f(1.0, 2.0), a.x     # a vector beside a scalar
        out_u[i] = a + s.y
        out_v[i] = b * t


def test_unpack_vectors_like_numpy(device):
    n = 7
    rng = np.random.default_rng(1)
    f2v_np = rng.integers(0, 5, (n, 3)).astype(np.int32)
    x_np = rng.random((5, 3)).astype(np.float32)
    m_np = rng.random((n, 2, 2)).astype(np.float32)
    f2v = tack.array(f2v_np, dtype=tack.vec3i, device=device)
    x = tack.array(x_np, dtype=tack.vec3f, device=device)
    m = tack.array(m_np, dtype=tack.mat22f, device=device)
    out = tack.zeros((n,), device=device)
    rows = tack.zeros((n,), dtype=tack.vec2f, device=device)
    unpack(f2v, x, m, out, rows)
    s = x_np[f2v_np[:, 0]] + x_np[f2v_np[:, 1]]
    want = (s[:, 0] + 10 * s[:, 1] + 100 * s[:, 2]) * f2v_np[:, 2] + m_np[:, 0, 0] - m_np[:, 0, 1]
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-5)
    np.testing.assert_allclose(rows.numpy(), m_np[:, 1] * 2, rtol=1e-6)


@pytest.mark.parametrize("k", [0, 1, 5])
def test_swaps_of_vectors(k, device):
    n = 4
    u_np = np.arange(n * 3, dtype=np.float64).reshape(n, 3)
    v_np = 1 - u_np
    u = tack.array(u_np, dtype=tack.vec3d, device=device)
    v = tack.array(v_np, dtype=tack.vec3d, device=device)
    ou = tack.zeros((n,), dtype=tack.vec3d, device=device)
    ov = tack.zeros((n,), dtype=tack.vec3d, device=device)
    swaps(u, v, ou, ov, k)
    a, b = u_np.copy(), v_np.copy()
    for _ in range(k):
        a, b = b, a + b
    np.testing.assert_array_equal(ou.numpy(), a + 2)
    np.testing.assert_array_equal(ov.numpy(), b * a[:, :1])


def test_unpack_count_must_match(device):
    def three_from_two(x, out):
        for i in range(x.shape[0]):
            a, b, c = x[i]
            out[i] = a + b + c
    with pytest.raises(tack.CompileError, match="a 2-component vector unpacks into 2 names, not 3"):
        tack.kernel(three_from_two)(tack.zeros((2,), dtype=tack.vec2f), np.zeros(2, np.float32))
