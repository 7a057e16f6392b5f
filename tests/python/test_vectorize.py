"""@tack.vectorize against NumPy's ufuncs: broadcasting (scalars, size-1
dimensions, fewer dimensions, more than a launch's three), out=, result
dtypes from the kernel's typing rules, empty arrays, @tack.func calls, on
the CPU and OpenCL (device arrays in, a device array out)."""
import numpy as np
import pytest

import tack

pytestmark = pytest.mark.every_device


@tack.func
def sq(x):
    return x * x


@tack.vectorize
def sq_plus(a, b):
    return sq(a) + b


@tack.vectorize
def less(a, b):
    return a < b


@tack.vectorize
def axpb(a, x, b):
    return a * x + b


@tack.vectorize(dtype=tack.f64)
def half(a):
    return a / 2


def on(dev, x):
    """x where the device runs it: NumPy on the CPU, else a device copy."""
    return x if dev.host_memory or not isinstance(x, np.ndarray) else tack.asarray(x, device=dev)


def host(r):
    return r.numpy() if isinstance(r, tack.Array) else r


@pytest.mark.parametrize("sa, sb", [((4, 3), (3,)), ((2, 1, 5), (3, 1)), ((1, 6), (5, 1)),
                                    ((2, 3, 1, 4, 2), (3, 5, 1, 1))])
def test_broadcasting_matches_numpy(device, sa, sb):
    rng = np.random.default_rng(len(sa) * 10 + len(sb))
    a = rng.standard_normal(sa).astype(np.float32)
    b = rng.standard_normal(sb).astype(np.float32)
    r = sq_plus(on(device, a), on(device, b))
    if not device.host_memory:
        assert isinstance(r, tack.Array) and r.device is device
    expect = np.add(np.multiply(a, a), b)
    assert r.shape == expect.shape and host(r).dtype == np.float32
    np.testing.assert_array_equal(host(r), expect)


def test_scalars_broadcast_and_dtypes_follow_the_kernel_rules(device):
    i = np.arange(-6, 6, dtype=np.int32).reshape(3, 4)
    j = np.arange(4, dtype=np.int32)
    r = sq_plus(on(device, i), on(device, j))          # i32 stays i32
    assert host(r).dtype == np.int32
    np.testing.assert_array_equal(host(r), i * i + j)
    r = sq_plus(on(device, i), j)      # a NumPy array beside a device array goes there
    assert isinstance(r, np.ndarray) == device.host_memory
    np.testing.assert_array_equal(host(r), i * i + j)
    r = axpb(np.int32(3), on(device, i), np.int32(-1))   # typed scalars
    assert host(r).dtype == np.int32
    np.testing.assert_array_equal(host(r), 3 * i - 1)
    x = np.linspace(-1, 1, 12).reshape(3, 4)
    r = axpb(2.5, on(device, x), 1.0)                  # f64 array, Python floats
    assert host(r).dtype == np.float64
    np.testing.assert_array_equal(host(r), np.add(np.multiply(2.5, x), 1.0))
    r = less(on(device, x), 0.25)                      # a comparison gives bool
    assert host(r).dtype == np.bool_
    np.testing.assert_array_equal(host(r), np.less(x, 0.25))
    r = half(on(device, i))                            # dtype= in the decorator
    assert host(r).dtype == np.float64


def test_out_is_written_and_returned(device):
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    b = np.float32(0.5)
    if device.host_memory:
        o = np.full((3, 4), -1.0, dtype=np.float64)    # the store converts
        assert sq_plus(a, b, out=o) is o
        np.testing.assert_array_equal(o, (a * a + b).astype(np.float64))
        strided = np.zeros((3, 8), np.float32)[:, ::2]   # a view, written in place
        sq_plus(a, b, out=strided)
        np.testing.assert_array_equal(strided, a * a + b)
    else:
        o = tack.zeros((3, 4), dtype=tack.f32, device=device)
        assert sq_plus(on(device, a), b, out=o) is o
        np.testing.assert_array_equal(o.numpy(), a * a + b)
    # Refused calls write nothing.
    keep = np.full((4, 3), 7.0, dtype=np.float32)
    with pytest.raises(ValueError, match="out has shape"):
        sq_plus(a, b, out=on(device, keep))
    np.testing.assert_array_equal(host(on(device, keep)), 7.0)
    with pytest.raises(ValueError, match="do not broadcast"):
        sq_plus(on(device, a), on(device, np.ones(3, np.float32)))
    with pytest.raises(TypeError, match="takes 2 arguments"):
        sq_plus(a)
    with pytest.raises(TypeError, match="out must be"):
        sq_plus(a, b, out=[0.0])


def test_empty_arrays(device):
    a = np.empty((0, 3), np.float32)
    r = sq_plus(on(device, a), on(device, np.ones(3, np.float32)))
    assert r.shape == (0, 3) and host(r).dtype == np.float32


def test_zero_dimensional_and_warm_calls_reuse_the_kernel(device):
    r = sq_plus(np.int32(3), np.int32(1))         # scalars only: a NumPy scalar
    assert r == 10 and np.asarray(r).dtype == np.int32 and np.ndim(r) == 0
    r = sq_plus(np.array(2.0), 0.5)               # a 0-d array counts as its value
    assert r == 4.5 and np.ndim(r) == 0
    a, b = np.ones((5, 2), np.float32), np.ones(2, np.float32)
    sq_plus(on(device, a), on(device, b))
    compiles = tack.stats()["compiles"]
    for _ in range(3):
        r = sq_plus(on(device, a), on(device, b))
    assert tack.stats()["compiles"] == compiles
    np.testing.assert_array_equal(host(r), 2.0)
