"""Idioms of Numba, Warp and Taichi programs as their users first write them
(a held-out sweep of this stop): Numba's `prange` kept as imported,
`n, m = x.shape` and `h, w = a, b` before the loop, each against NumPy on
every device."""
import sys
import types

import numpy as np
import pytest

import tack

pytestmark = pytest.mark.every_device


def _fake_numba_prange():
    """A stand-in for numba.prange where Numba is not installed: a class
    named prange in a module of numba's, as numba.misc.special defines it."""
    try:
        from numba import prange
        return prange
    except ImportError:
        return types.new_class("prange", exec_body=lambda ns: ns.update(__module__="numba.misc.special"))


prange = _fake_numba_prange()


@tack.kernel
def roots(x, out):
    for i in prange(x.shape[0]):
        out[i] = np.sqrt(x[i])


def test_numba_prange_is_a_range(device):
    x = np.arange(11.0)
    out = np.zeros(11)
    roots(x, out)
    np.testing.assert_allclose(out, np.sqrt(x))


class NotNumba:
    pass


NotNumba.__name__ = "prange"
other_prange = NotNumba


@tack.kernel
def other(x, out):
    for i in other_prange(x.shape[0]):
        out[i] = x[i]


def test_another_prange_class_is_refused(device):
    with pytest.raises(tack.CompileError, match="other_prange"):
        other(np.zeros(3), np.zeros(3))


@tack.kernel
def row_sums(x, out):
    n, m = x.shape
    for i in range(n):
        s = 0.0
        for j in range(m):
            s += x[i, j]
        out[i] = s


@pytest.mark.parametrize("shape", [(4, 5), (1, 7), (0, 3), (6, 0)])
def test_shape_unpacked_before_the_loop(device, shape):
    x = np.random.default_rng(1).random(shape)
    out = np.full(shape[0], -1.0)
    row_sums(x, out)
    np.testing.assert_allclose(out, x.sum(1))


@tack.kernel
def blur(img, out):
    h, w = img.shape[0], img.shape[1]
    for y, x in tack.ndindex(h, w):
        acc = 0.0
        cnt = 0
        for dy in range(-1, 2):
            for dx in range(-1, 2):
                yy = y + dy
                xx = x + dx
                if 0 <= yy < h and 0 <= xx < w:
                    acc += img[yy, xx]
                    cnt += 1
        out[y, x] = acc / cnt


def test_tuple_of_values_unpacked_before_the_loop(device):
    img = np.random.default_rng(2).random((6, 5))
    out = np.zeros_like(img)
    blur(img, out)
    want = np.zeros_like(img)
    for y in range(6):
        for x in range(5):
            want[y, x] = img[max(y - 1, 0):y + 2, max(x - 1, 0):x + 2].mean()
    np.testing.assert_allclose(out, want, rtol=1e-12)


@tack.kernel
def swapped(x, out, a):
    # Python reads s before assigning it (a NameError there); one statement
    # per name would read the new s: not split, refused as before.
    s, t = a, s
    for i in range(x.shape[0]):
        out[i] = x[i] * s + t


def test_unpacking_that_reads_its_own_names_is_refused(device):
    out = np.zeros(3)
    with pytest.raises(tack.CompileError, match="test_first_written_idioms.py"):
        swapped(np.ones(3), out, 2.0)
    assert (out == 0).all()


# ---- Taichi: struct-for as the launch, ti.atomic_add(element, v), list
# constructors, ti.cast, ti.math.X ----

@tack.kernel
def doubled(x, out):
    for i in x:
        out[i] = x[i] * 2 + i


@tack.kernel
def grid_op(g, out):
    for i, j in g:
        out[i, j] = g[i, j] * 10 + i - j


@tack.kernel
def grid_vec(g, out):
    for I in g:
        out[I] = tack.length(g[I]) + I[0]


@pytest.mark.parametrize("n", [0, 1, 9])
def test_struct_for_one_dimension(device, n):
    x = np.arange(n, dtype=np.float64)
    out = np.full(n, -1.0)
    doubled(x, out)
    np.testing.assert_array_equal(out, x * 2 + np.arange(n))


def test_struct_for_two_dimensions(device):
    g = np.random.default_rng(3).random((4, 5))
    out = np.zeros_like(g)
    grid_op(g, out)
    i, j = np.indices(g.shape)
    np.testing.assert_allclose(out, g * 10 + i - j)


def test_struct_for_over_vectors_with_an_index_vector(device):
    g = np.random.default_rng(4).random((3, 2, 2))
    out = np.zeros((3, 2))
    grid_vec(tack.array(g, dtype=tack.vec2d, device=device), out)
    np.testing.assert_allclose(out, np.linalg.norm(g, axis=-1) + np.arange(3)[:, None])


@tack.kernel
def wrong_names(g, out):
    for i, j, k in g:
        out[i, j] = g[i, j]


def test_struct_for_with_the_wrong_number_of_names(device):
    with pytest.raises(tack.CompileError, match="3 names|2 names"):
        wrong_names(np.ones((2, 2)), np.zeros((2, 2)))


@tack.kernel
def p2g(cell, w, grid, grid2):
    for p in range(cell.shape[0]):
        tack.atomic_add(grid[cell[p]], w[p])
        tack.atomic_max(grid2[cell[p], 1], w[p])


def test_atomic_on_an_element(device):
    cell = np.array([0, 1, 1, 3, 3, 3], np.int64)
    w = np.arange(1.0, 7.0)
    grid, grid2 = np.zeros(4), np.zeros((4, 2))
    p2g(cell, w, grid, grid2)
    np.testing.assert_allclose(grid, np.bincount(cell, w, 4))
    want = np.zeros((4, 2))
    np.maximum.at(want[:, 1], cell, w)
    np.testing.assert_allclose(grid2, want)


@tack.kernel
def list_built(v, out, m_out):
    for i in range(v.shape[0]):
        a = tack.vec3([v[i], 2.0 * v[i], 1.0])
        m = tack.mat22d([[1.0, v[i]], [0.0, 2.0]])
        out[i] = a.sum() + tack.cast(v[i] * 2.9, tack.i32) + tack.cast(i, np.float64) * 0.5
        m_out[i] = m @ tack.vec2d([1.0, 1.0])


def test_list_constructors_and_cast(device):
    v = np.array([0.5, 1.5, -2.0])
    out = np.zeros(3)
    m_out = tack.zeros(3, dtype=tack.vec2d, device=device)
    list_built(v, out, m_out)
    np.testing.assert_allclose(out, 3 * v + 1 + np.trunc(v * 2.9) + 0.5 * np.arange(3))
    np.testing.assert_allclose(m_out.numpy(), np.stack([1 + v, np.full(3, 2.0)], 1))


@tack.kernel
def taichi_math(x, out):
    for i in range(x.shape[0]):
        out[i] = tack.math.clamp(x[i], 0.0, 1.0) + tack.math.fract(x[i]) + tack.math.mix(0.0, 2.0, 0.25)


def test_taichi_math_names(device):
    x = np.array([1.5, -0.25, 0.3])
    out = np.zeros(3)
    taichi_math(x, out)
    np.testing.assert_allclose(out, np.clip(x, 0, 1) + (x - np.floor(x)) + 0.5)


@tack.kernel
def bad_cast(x, out):
    for i in range(x.shape[0]):
        out[i] = tack.cast(x[i], 3)


def test_cast_needs_a_dtype(device):
    with pytest.raises(tack.CompileError, match="scalar dtype"):
        bad_cast(np.ones(2), np.zeros(2))


def test_taichi_none_index_names_the_workaround():
    with pytest.raises(tack.CompileError, match=r"x\[None\].*1-element array.*x\[0\]"):
        @tack.kernel
        def total_of(x, total):
            for i in range(x.shape[0]):
                total[None] += x[i]
