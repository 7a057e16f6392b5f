"""Taichi's `for I in ti.grouped(x)` as `for I in tack.grouped(x)`: a launch
over every index of x with I an integer vector of x's dimension count (a
plain index for a 1-D x), also over tack.ndindex(...) extents; each against
NumPy on every device.  x's ndim is in the template key, so one kernel
called with 2-D and 3-D arrays compiles one template per ndim."""
import numpy as np
import pytest

import tack

pytestmark = pytest.mark.every_device


@tack.kernel
def shifted(x, out):
    for I in tack.grouped(x):
        out[I] = 2.0 * x[I] + I[0] * 100 + I[-1]


@pytest.mark.parametrize("shape", [(7,), (4, 5), (2, 3, 4), (0, 3), (1, 1, 1)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_every_index_once(device, shape, dtype):
    x = np.random.default_rng(1).random(shape).astype(dtype)
    out = np.full(shape, -1, dtype)
    if len(shape) == 1:
        # A 1-D x gives a plain index, and I[0] of it is refused.
        with pytest.raises(tack.CompileError, match="line|I"):
            shifted(x, out)
        return
    shifted(x, out)
    idx = np.indices(shape)
    want = (2 * x.astype(np.float64) + idx[0] * 100 + idx[-1]).astype(dtype)
    np.testing.assert_allclose(out, want, rtol=1e-6)


@tack.kernel
def plain(x, out):
    for I in tack.grouped(x):
        out[I] = x[I] * I


def test_one_dimension_is_a_plain_index(device):
    x = np.arange(9, dtype=np.int64)
    out = np.zeros(9, np.int64)
    plain(x, out)
    np.testing.assert_array_equal(out, x * np.arange(9))


@tack.kernel
def speeds(v, out):
    # An array of vectors: I runs over its elements, not their components.
    for I in tack.grouped(v):
        out[I] = tack.length(v[I]) + tack.dot(tack.vec2(I), tack.vec2(1.0, 0.5))


def test_arrays_of_vectors(device):
    v = np.random.default_rng(2).random((3, 4, 3))
    out = np.zeros((3, 4))
    speeds(tack.array(v, dtype=tack.vec3d, device=device), out)
    i, j = np.indices((3, 4))
    np.testing.assert_allclose(out, np.linalg.norm(v, axis=-1) + i + 0.5 * j, rtol=1e-12)


@tack.kernel
def checker(out, n, m):
    for I in tack.grouped(tack.ndindex(n, m)):
        out[I] = (I[0] + I[1]) % 2


def test_grouped_ndindex_extents(device):
    out = np.full((5, 6), 7, np.int32)
    checker(out, 4, 3)  # only the 4x3 corner
    want = np.full((5, 6), 7, np.int32)
    want[:4, :3] = np.indices((4, 3)).sum(0) % 2
    np.testing.assert_array_equal(out, want)


def test_one_kernel_two_ndims(device):
    a2, a3 = np.ones((3, 4)), np.ones((2, 2, 2))
    o2, o3 = np.zeros_like(a2), np.zeros_like(a3)
    shifted(a2, o2)
    shifted(a3, o3)
    shifted(a2, o2)
    idx2, idx3 = np.indices(a2.shape), np.indices(a3.shape)
    np.testing.assert_array_equal(o2, 2 + idx2[0] * 100 + idx2[-1])
    np.testing.assert_array_equal(o3, 2 + idx3[0] * 100 + idx3[-1])


@tack.kernel
def inner_grouped(x, out):
    for i in range(x.shape[0]):
        for J in tack.grouped(x):
            out[i] = x[J]


@tack.kernel
def grouped_of_scalar(x, out, n):
    for I in tack.grouped(n):
        out[I] = x[I]


@tack.kernel
def grouped_two_names(x, out):
    for i, j in tack.grouped(x):
        out[i, j] = x[i, j]


@pytest.mark.parametrize("kernel,extra,match", [
    (inner_grouped, (), "outermost loop"),
    (grouped_of_scalar, (3,), "one array argument"),
    (grouped_two_names, (), "binds one name"),
])
def test_refusals_name_the_line(device, kernel, extra, match):
    x = np.ones((3, 3))
    out = np.zeros((3, 3))
    with pytest.raises(tack.CompileError, match=match) as e:
        kernel(x, out, *extra)
    assert "test_grouped.py" in str(e.value)
    assert (out == 0).all()


def test_arrays_of_matrices_are_refused(device):
    m = tack.zeros((4,), dtype=tack.mat22d, device=device)
    out = np.zeros(4)

    @tack.kernel
    def traces(m, out):
        for I in tack.grouped(m):
            out[I] = tack.trace(m[I])

    with pytest.raises(tack.CompileError, match="one array argument"):
        traces(m, out)
