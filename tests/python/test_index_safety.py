"""Indices that must never reach memory (issue 18, items 4 and 5).

A float index is refused at compile time for stores as it is for loads and
atomics (a store used to truncate `out[1.7]` to `out[1]` and wrap
`out[1e300]` to `out[-1]`).  An integer scalar index the launch check cannot
prove in bounds is refused before anything runs: a u64 past 2**63 (which
the kernel's i64 arithmetic would see as negative) used to pass unseen.
"""
import numpy as np
import pytest

import tack

pytestmark = pytest.mark.every_device


@tack.kernel
def store_literal(out):
    for i in range(1):
        out[1.7] = 5.0


@tack.kernel
def store_huge_literal(out):
    for i in range(1):
        out[1e300] = 5.0


@tack.kernel
def store_at(out, k):
    for i in range(1):
        out[k] = 5.0


@tack.kernel
def store_at_local(out, k):
    for i in range(1):
        j = k * 0.5
        out[j] = 5.0


@tack.kernel
def store_2d(out, k):
    for i in range(out.shape[0]):
        out[i, k] = 1.0


@tack.kernel
def store_offset(out, k):
    for i in range(out.shape[0]):
        out[i + k] = 1.0


@tack.kernel
def load_at(x, out, k):
    for i in range(1):
        out[0] = x[k]


def refused_at_compile(kernel, *args):
    with pytest.raises(tack.CompileError) as e:
        kernel(*args)
    assert "array indices must be integers" in str(e.value)
    return e.value


@pytest.mark.parametrize("kernel", [store_literal, store_huge_literal])
def test_float_literal_store_index_refused(kernel, device):
    out = np.zeros(4)
    refused_at_compile(kernel, out)
    np.testing.assert_array_equal(out, 0.0)


@pytest.mark.parametrize("k", [2.5, np.float32(1.0), 1e300, -0.0])
def test_float_scalar_store_index_refused(k, device):
    out = np.zeros(4)
    refused_at_compile(store_at, out, k)
    refused_at_compile(store_2d, np.zeros((2, 3)), k)
    np.testing.assert_array_equal(out, 0.0)


def test_float_local_store_index_refused(device):
    out = np.zeros(4)
    err = refused_at_compile(store_at_local, out, 2)
    assert err.lineno is not None
    np.testing.assert_array_equal(out, 0.0)


@pytest.mark.parametrize("k", [2**64 - 1, 2**63, 2**63 + 5])
def test_u64_index_past_i64_refused(k, device):
    out = np.zeros(4)
    with pytest.raises(IndexError) as e:
        store_at(out, k)
    assert "out" in str(e.value) and str(k) in str(e.value)
    np.testing.assert_array_equal(out, 0.0)
    x = np.arange(4.0)
    res = np.zeros(1)
    with pytest.raises(IndexError):
        load_at(x, res, k)
    np.testing.assert_array_equal(res, 0.0)
    with pytest.raises(IndexError):
        store_2d(np.zeros((2, 3)), k)


@pytest.mark.parametrize("k", [2**63, 2**64 - 1])
def test_u64_offset_from_launch_index_refused(k, device):
    # i + u64 is f64 under the promotion rules: a float index, refused.
    out = np.zeros(4)
    refused_at_compile(store_offset, out, k)
    np.testing.assert_array_equal(out, 0.0)


@pytest.mark.parametrize("k, ok", [(-1, False), (3, True), (4, False), (2**31, False),
                                   (2**31 - 1, False), (-2**31, False), (2**63 - 1, False),
                                   (-2**63, False)])
def test_integer_index_boundaries(k, ok, device):
    out = np.zeros(4)
    if ok:
        store_at(out, k)
        expected = np.zeros(4)
        expected[k] = 5.0
        np.testing.assert_array_equal(out, expected)
    else:
        with pytest.raises(IndexError):
            store_at(out, k)
        np.testing.assert_array_equal(out, 0.0)


@tack.kernel
def load_2d(x, out, k):
    for i in range(out.shape[0]):
        out[i] = x[i, k]


@tack.kernel
def atomic_2d(out, k):
    for i in range(out.shape[0]):
        tack.atomic_add(out, (i, k), 1.0)


def test_float_index_in_a_2d_load_or_atomic_refused(device):
    # The second index of a 2-D access went through the address arithmetic's
    # conversion to i64 before inference could see it was a float.
    out = np.zeros(2)
    refused_at_compile(load_2d, np.ones((2, 3)), out, 1.5)
    np.testing.assert_array_equal(out, 0.0)
    grid = np.zeros((2, 3))
    refused_at_compile(atomic_2d, grid, 0.5)
    np.testing.assert_array_equal(grid, 0.0)
    load_2d(np.arange(6.0).reshape(2, 3), out, 2)
    np.testing.assert_array_equal(out, [2.0, 5.0])
