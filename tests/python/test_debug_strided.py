"""Debug mode with strided arrays of two and three dimensions (issue 18,
item 2).

The bounds checks used to flatten `m[i, j]` into one row-major offset and
hand that to the access, which a strided array then multiplied by its first
stride: reads came from the wrong elements and stores landed outside the
array.  Every view below (transposes, Fortran order, steps along either
axis, negative steps, 3-D permutations) is read and written under
`tack.set_debug(True)` and compared with NumPy; out-of-range indices must
still be reported, with the logical index, for strided arrays too.
"""
import threading

import numpy as np
import pytest

import tack

pytestmark = pytest.mark.every_device


@pytest.fixture(autouse=True)
def debug_on():
    tack.set_debug(True)
    yield
    tack.set_debug(False)


@tack.kernel
def copy2(src, dst):
    for i, j in tack.ndindex(dst.shape[0], dst.shape[1]):
        dst[i, j] = src[i, j] * 2.0 + 1.0


@tack.kernel
def copy3(src, dst):
    for i, j, k in tack.ndindex(dst.shape[0], dst.shape[1], dst.shape[2]):
        dst[i, j, k] = src[i, j, k] - 0.5


@tack.kernel
def poke(m, r, c):
    for i in range(1):
        m[r, c] = 9.0


def base(shape, seed):
    return np.random.default_rng(seed).standard_normal(shape)


# Each view: (the whole array's shape and seed, how the view is taken).
VIEWS_2D = {
    "transpose": ((6, 5), lambda a: a.T),
    "fortran": ((5, 6), None),  # view_2d makes the whole array Fortran-ordered
    "every_other_column": ((5, 12), lambda a: a[:, ::2]),
    "every_other_row": ((10, 6), lambda a: a[::2, :]),
    "reversed_both": ((5, 6), lambda a: a[::-1, ::-1]),
    "window": ((9, 9), lambda a: a[2:7, 1:7]),
}


def view_2d(name, seed):
    shape, take = VIEWS_2D[name]
    whole = base(shape, seed)
    if name == "fortran":
        whole = np.asfortranarray(whole)
        return whole, whole
    return whole, take(whole)


@pytest.mark.parametrize("view", sorted(VIEWS_2D))
def test_2d_views_read(view, device):
    _, src = view_2d(view, 1)
    dst = np.zeros(src.shape)
    copy2(src, dst)
    np.testing.assert_array_equal(dst, src * 2.0 + 1.0)


@pytest.mark.parametrize("view", sorted(VIEWS_2D))
def test_2d_views_written(view, device):
    whole, dst = view_2d(view, 2)
    expected_whole, expected_view = view_2d(view, 2)
    src = base(dst.shape, 99)
    copy2(src, dst)
    expected_view[...] = src * 2.0 + 1.0
    # The view holds the results and nothing else in its array changed.
    np.testing.assert_array_equal(dst, src * 2.0 + 1.0)
    np.testing.assert_array_equal(whole, expected_whole)


VIEWS_3D = {
    "permuted": lambda: base((4, 5, 6), 7).transpose(2, 0, 1),
    "fortran": lambda: np.asfortranarray(base((3, 4, 5), 8)),
    "stepped": lambda: base((6, 8, 10), 9)[::2, 1::3, ::-2],
}


@pytest.mark.parametrize("view", sorted(VIEWS_3D))
def test_3d_views_in_and_out(view, device):
    src = VIEWS_3D[view]()
    dst = VIEWS_3D[view]() * 0.0
    copy3(src, dst)
    np.testing.assert_array_equal(dst, src - 0.5)
    back = np.zeros(src.shape)
    copy3(dst, back)
    np.testing.assert_array_equal(back, (src - 0.5) - 0.5)


def test_out_of_range_on_a_strided_view_is_reported(device):
    whole = np.zeros((6, 8))
    view = whole[:, ::2]                  # shape (6, 4)
    with pytest.raises(IndexError) as e:
        poke(view, 2, 4)                  # column 4 is past the view's 4
    assert "m" in str(e.value) and "4" in str(e.value)
    np.testing.assert_array_equal(whole, 0.0)
    poke(view, 5, 3)
    expected = np.zeros((6, 8))
    expected[5, 6] = 9.0
    np.testing.assert_array_equal(whole, expected)


@pytest.mark.cpu_only
def test_threads_stress_strided_debug(device):
    """Eight Python threads launching debug kernels on transposed views (this
    used to write outside the arrays and crash)."""
    errors = []

    def work(seed):
        try:
            for _ in range(20):
                src = base((40, 30), seed).T
                dst = np.zeros((80, 30)).T[:, ::2]
                copy2(src, dst)
                np.testing.assert_array_equal(dst, src * 2.0 + 1.0)
        except Exception as exc:  # reported below, in the main thread
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(s,)) for s in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[0]
