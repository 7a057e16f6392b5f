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
