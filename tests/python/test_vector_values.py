"""Vectors and matrices as values (issue 27 item 1, issue 26 item 6): the
elements of arrays of vectors and matrices index as values, checked against
NumPy on every device.

An element x[i] of an array of vectors or matrices is the vector or matrix;
a subscript after it picks components.  The row rule (x[i] a row, x[i][j]
the element (i, j)) holds only where the kernel also indexes x with as many
indices at once (x[i, j])."""
import numpy as np
import pytest

import tack

pytestmark = pytest.mark.every_device

VECS = {(2, np.float32): tack.vec2f, (3, np.float32): tack.vec3f, (4, np.float32): tack.vec4f,
        (2, np.float64): tack.vec2d, (3, np.float64): tack.vec3d, (4, np.float64): tack.vec4d}
MATS = {(2, np.float32): tack.mat22f, (3, np.float32): tack.mat33f,
        (2, np.float64): tack.mat22d, (3, np.float64): tack.mat33d}


@tack.kernel
def local_component(x, out):
    for i in range(x.shape[0]):
        v = x[i]
        out[i] = v[1]


@tack.kernel
def element_component(x, out):
    for i in range(x.shape[0]):
        out[i] = x[i][2] - x[i][0]


@tack.kernel
def matrix_local_component(F, out):
    for i in range(F.shape[0]):
        m = F[i]
        out[i] = m[1, 0] + m[0, 1] * 10.0


@tack.kernel
def element_component_store(x, y):
    for i in range(x.shape[0]):
        x[i][1] = y[i]
        x[i][0] += 2.0


@tack.kernel
def rows_beside_elements(g, out):
    for i in range(g.shape[0]):
        for j in range(g.shape[1]):
            r = g[i]
            out[i, j] = r[j][1] + g[i, j][0]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n", [3, 4])
def test_a_vector_element_is_a_value(device, n, dtype):
    host = np.random.default_rng(n).random((7, n)).astype(dtype)
    x = tack.array(host, dtype=VECS[n, dtype], device=device)
    out = tack.zeros((7,), dtype=tack.f64 if dtype == np.float64 else tack.f32, device=device)
    local_component(x, out)
    np.testing.assert_array_equal(out.numpy(), host[:, 1])
    element_component(x, out)
    np.testing.assert_array_equal(out.numpy(), host[:, 2] - host[:, 0])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n", [2, 3])
def test_a_matrix_element_is_a_value(device, n, dtype):
    host = np.random.default_rng(n).random((5, n, n)).astype(dtype)
    F = tack.array(host, dtype=MATS[n, dtype], device=device)
    out = tack.zeros((5,), dtype=tack.f64 if dtype == np.float64 else tack.f32, device=device)
    matrix_local_component(F, out)
    want = host[:, 1, 0] + host[:, 0, 1] * dtype(10.0)
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-6)


def test_a_component_of_an_element_is_stored(device):
    host = np.arange(12, dtype=np.float32).reshape(4, 3)
    x = tack.array(host, dtype=tack.vec3f, device=device)
    y = tack.array(np.array([5, 6, 7, 8], np.float32), device=device)
    element_component_store(x, y)
    want = host.copy()
    want[:, 1] = [5, 6, 7, 8]
    want[:, 0] += 2
    np.testing.assert_array_equal(x.numpy().reshape(4, 3), want)


def test_rows_stay_rows_where_the_array_is_indexed_with_more_indices(device):
    host = np.random.default_rng(1).random((3, 4, 2)).astype(np.float32)
    g = tack.array(host, dtype=tack.vec2f, device=device)
    out = tack.zeros((3, 4), device=device)
    rows_beside_elements(g, out)
    np.testing.assert_allclose(out.numpy(), host[:, :, 1] + host[:, :, 0], rtol=1e-6)
