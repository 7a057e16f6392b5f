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
