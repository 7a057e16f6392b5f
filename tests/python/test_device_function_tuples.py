"""Device functions returning tuples that mix scalars, vectors and matrices
(`return t, normal, colour`), received as a tuple, and one vector result
unpacked into its components, on every device against NumPy."""
import numpy as np
import pytest

import tack

pytestmark = pytest.mark.every_device


@tack.func
def spread(x):
    return tack.vec3f(x, 2.0 * x, 3.0 * x)


@tack.func
def hit(x):
    if x > 1.0:
        return tack.vec2f(x, x), x * 2.0, tack.mat22f(1.0, 2.0, 3.0, 4.0)
    return tack.vec2f(0.0, 1.0), -1.0, tack.identity(2)


@tack.kernel
def use_results(x, out, moved):
    for i in range(x.shape[0]):
        a, b, c = spread(x[i])
        p, s, m = hit(x[i])
        out[i] = a + b + c + s + tack.dot(p, p)
        moved[i] = m @ p


def test_mixed_tuple_results(device):
    x = np.array([0.5, 2.0, 3.0, -4.0], np.float32)
    out = tack.zeros(4, dtype=tack.f32, device=device)
    moved = tack.zeros(4, dtype=tack.vec2f, device=device)
    use_results(tack.array(x, device=device), out, moved)
    big = x > 1
    p = np.where(big[:, None], x[:, None], [0.0, 1.0])
    m = np.where(big[:, None, None], [[1.0, 2.0], [3.0, 4.0]], np.eye(2))
    want = 6 * x + np.where(big, 2 * x, -1.0) + (p * p).sum(1)
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-6)
    np.testing.assert_allclose(moved.numpy(), np.einsum("nij,nj->ni", m, p), rtol=1e-6)


def test_a_value_of_another_shape_elsewhere_is_refused(device):
    @tack.func
    def uneven(x):
        if x > 0.0:
            return x, tack.vec2f(x, x)
        return x, x

    @tack.kernel
    def k(x, out):
        for i in range(x.shape[0]):
            a, b = uneven(x[i])
            out[i] = a

    with pytest.raises(tack.CompileError, match="returns value 2 with another shape"):
        k(tack.zeros(2, dtype=tack.f32, device=device), tack.zeros(2, dtype=tack.f32, device=device))
