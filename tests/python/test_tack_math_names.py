"""math's functions and constants spelled under tack (tack.sqrt, tack.floor,
tack.atan2, tack.pi ...), as Warp's wp.sqrt and Taichi's ti.sqrt are: the
same intrinsics as math.X, on scalars and per component on vectors; each
against NumPy on every device."""
import math

import numpy as np
import pytest

import tack

pytestmark = pytest.mark.every_device


@tack.kernel
def warp_spelled(x, y, out):
    for i in range(x.shape[0]):
        a = tack.sqrt(tack.abs(x[i])) + tack.floor(x[i]) + tack.ceil(y[i])
        b = tack.atan2(y[i], x[i]) + tack.exp(-tack.abs(y[i])) + tack.log(1.0 + tack.abs(x[i]))
        c = tack.sin(tack.pi * x[i]) * tack.cos(y[i]) + tack.tanh(x[i]) + tack.pow(tack.abs(y[i]), 1.5)
        out[i] = a + b + c + tack.trunc(y[i]) + (0.0 if x[i] < tack.inf else 1.0) + tack.e - math.e


@tack.kernel
def per_component(p, out):
    for i in range(p.shape[0]):
        base = tack.floor(p[i] * 0.5)
        out[i] = tack.sqrt(tack.abs(p[i])) + base


@pytest.mark.parametrize("dtype,tol", [(np.float32, 2e-5), (np.float64, 1e-13)])
def test_math_names_under_tack(device, dtype, tol):
    g = np.random.default_rng(5)
    x = (g.random(40) * 8 - 4).astype(dtype)
    y = (g.random(40) * 8 - 4).astype(dtype)
    out = np.zeros(40, dtype)
    warp_spelled(x, y, out)
    X, Y = x.astype(np.float64), y.astype(np.float64)
    want = (np.sqrt(abs(X)) + np.floor(X) + np.ceil(Y) + np.arctan2(Y, X) + np.exp(-abs(Y)) +
            np.log(1 + abs(X)) + np.sin(np.pi * X) * np.cos(Y) + np.tanh(X) + abs(Y) ** 1.5 +
            np.trunc(Y))
    np.testing.assert_allclose(out, want, rtol=tol * 10, atol=tol * 10)


def test_math_names_per_component(device):
    p = np.random.default_rng(6).random((9, 3)) * 10 - 5
    out = tack.zeros(9, dtype=tack.vec3d, device=device)
    per_component(tack.array(p, dtype=tack.vec3d, device=device), out)
    np.testing.assert_allclose(out.numpy(), np.sqrt(abs(p)) + np.floor(p * 0.5), rtol=1e-13)


# Warp's operators as functions: wp.add, wp.sub, wp.mul (a matrix product
# where a matrix meets a vector or matrix), wp.neg, bit operations; rsqrt.

@tack.kernel
def operators(x, y, m, v, out, mv, bits):
    for i in range(x.shape[0]):
        out[i] = tack.add(x[i], tack.mul(2.0, y[i])) - tack.sub(y[i], x[i]) + tack.neg(tack.rsqrt(y[i]))
        mv[i] = tack.mul(m[i], v[i]) + tack.mul(v[i], 0.5) + tack.pos(v[i])
        k = i + 5
        bits[i] = tack.bit_and(k, 6) + tack.bit_or(k, 8) * 100 + tack.bit_xor(k, 3) * 10000 + \
            tack.lshift(k, 2) * 1000000 + tack.rshift(k, 1) + tack.invert(k)


def test_warp_operator_functions(device):
    g = np.random.default_rng(7)
    n = 6
    x, y = g.random(n), g.random(n) + 0.5
    m, v = g.random((n, 3, 3)), g.random((n, 3))
    out, bits = np.zeros(n), np.zeros(n, np.int64)
    mv = tack.zeros(n, dtype=tack.vec3d, device=device)
    operators(x, y, tack.array(m, dtype=tack.mat33d, device=device),
              tack.array(v, dtype=tack.vec3d, device=device), out, mv, bits)
    np.testing.assert_allclose(out, x + 2 * y - (y - x) - 1 / np.sqrt(y), rtol=1e-13)
    np.testing.assert_allclose(mv.numpy(), np.einsum("nij,nj->ni", m, v) + 1.5 * v, rtol=1e-13)
    k = np.arange(n) + 5
    want = (k & 6) + (k | 8) * 100 + (k ^ 3) * 10000 + (k << 2) * 1000000 + (k >> 1) + ~k
    np.testing.assert_array_equal(bits, want)
