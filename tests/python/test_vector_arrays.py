"""Vector element dtypes (tack.vec2f ... tack.vec4i) and tack.Array of vectors:
the Python side only (no kernels)."""
import pickle

import numpy as np
import pytest

import tack

# The conformance suite: every test runs on each device (conftest.py).
pytestmark = pytest.mark.every_device

# name -> (component dtype, NumPy component dtype, width)
VECTORS = {
    "vec2f": (tack.f32, np.float32, 2), "vec3f": (tack.f32, np.float32, 3),
    "vec4f": (tack.f32, np.float32, 4),
    "vec2d": (tack.f64, np.float64, 2), "vec3d": (tack.f64, np.float64, 3),
    "vec4d": (tack.f64, np.float64, 4),
    "vec2i": (tack.i32, np.int32, 2), "vec3i": (tack.i32, np.int32, 3),
    "vec4i": (tack.i32, np.int32, 4),
}


# ---- dtypes ---------------------------------------------------------------

@pytest.mark.parametrize("name", VECTORS)
def test_vector_dtype_attributes(name):
    comp, np_comp, width = VECTORS[name]
    dt = getattr(tack, name)
    assert isinstance(dt, tack.dtype)
    assert dt.width == width
    assert dt.component is comp
    assert dt.name == name
    assert str(dt) == name
    assert repr(dt) == "tack." + name
    assert dt.itemsize == width * np.dtype(np_comp).itemsize
    assert dt.numpy == np.dtype((np_comp, (width,)))
    assert name in tack.__all__


@pytest.mark.parametrize("name", ["f32", "f64", "i32", "i64", "u8", "bool_"])
def test_scalar_dtypes_unchanged(name):
    dt = getattr(tack, name)
    assert dt.width == 1
    assert dt.component is dt
    assert dt.itemsize == np.dtype(dt.numpy).itemsize
    assert repr(dt) == "tack." + name


def test_vector_dtype_equality_hash_pickle():
    assert tack.vec3f == tack.vec3f
    assert tack.vec3f != tack.f32
    assert tack.vec3f != tack.vec4f
    assert tack.vec3f != tack.vec3d
    assert len({tack.vec3f, tack.vec4f, tack.f32, tack.vec3f}) == 3
    for name in VECTORS:
        dt = getattr(tack, name)
        assert pickle.loads(pickle.dumps(dt)) is dt


def test_vector_dtype_from_string():
    a = tack.empty((4,), dtype="vec3f")
    assert a.dtype is tack.vec3f
    b = tack.zeros((2,), dtype="vec2i")
    assert b.dtype is tack.vec2i
    c = tack.empty((2,), dtype="vec5f")       # 2 to 16 components (tack.vector)
    assert c.dtype is tack.vector(5, tack.f32) and c.numpy().shape == (2, 5)
    with pytest.raises(TypeError, match="vec17f"):
        tack.empty((2,), dtype="vec17f")


def test_vector_dtype_call_outside_kernels():
    v = tack.vec3f(1, 2, 3)
    assert v.dtype == np.float32
    np.testing.assert_array_equal(v, [1, 2, 3])
    np.testing.assert_array_equal(tack.vec2i([4, 5]), np.array([4, 5], np.int32))
    with pytest.raises(TypeError, match="vec3f"):
        tack.vec3f(1, 2)
    # scalar casts still give NumPy scalars
    assert type(tack.f32(3.5)) is np.float32


# ---- arrays ---------------------------------------------------------------

@pytest.mark.parametrize("name", VECTORS)
def test_empty_and_zeros(name):
    comp, np_comp, width = VECTORS[name]
    dt = getattr(tack, name)
    a = tack.zeros((5,), dtype=dt)
    assert a.shape == (5,)
    assert a.ndim == 1
    assert a.size == 5
    assert len(a) == 5
    assert a.dtype is dt
    assert a.nbytes == 5 * dt.itemsize
    assert a.strides == (dt.itemsize,)
    n = a.numpy()
    assert n.shape == (5, width)
    assert n.dtype == np_comp
    assert not n.any()
    e = tack.empty((2, 3), dtype=dt)
    assert e.shape == (2, 3)
    assert e.size == 6
    assert e.numpy().shape == (2, 3, width)
    assert "vec" in repr(e) and "shape=(2, 3)" in repr(e)


def test_zero_dim_and_three_dim_vector_arrays():
    a = tack.zeros((), dtype=tack.vec4d)
    assert a.shape == () and a.ndim == 0 and a.size == 1
    assert a.numpy().shape == (4,)
    b = tack.zeros((2, 3, 4), dtype=tack.vec2f)
    assert b.shape == (2, 3, 4)
    assert b.numpy().shape == (2, 3, 4, 2)


def test_too_many_dims():
    # Arrays have up to 8 storage dimensions (issue 19): 7 of vectors.
    with pytest.raises(ValueError, match="at most 7"):
        tack.empty((1,) * 8, dtype=tack.vec3f)
    with pytest.raises(ValueError, match="at most 7"):
        tack.zeros((1,) * 8, dtype=tack.vec2i)
    with pytest.raises(ValueError, match="at most 7"):
        tack.array(np.zeros((1,) * 8 + (3,), np.float32), dtype=tack.vec3f)
    # scalar arrays have eight dimensions, vectors seven
    assert tack.empty((1,) * 8).ndim == 8
    assert tack.empty((1,) * 7, dtype=tack.vec3f).ndim == 7


@pytest.mark.parametrize("name", VECTORS)
def test_array_round_trip(name):
    comp, np_comp, width = VECTORS[name]
    dt = getattr(tack, name)
    src = (np.arange(7 * width) - 5).reshape(7, width).astype(np_comp)
    a = tack.array(src, dtype=dt)
    assert a.shape == (7,)
    assert a.dtype is dt
    back = a.numpy()
    assert back.dtype == np_comp
    np.testing.assert_array_equal(back, src)
    # numpy() views host memory (writes are shared) and copies device memory
    back[0, 0] = 99
    if a.device.host_memory:
        assert a.numpy()[0, 0] == 99
        assert np.shares_memory(back, a.numpy())
    else:
        assert a.numpy()[0, 0] == src[0, 0]


def test_array_from_list_and_cast():
    a = tack.array([[1, 2, 3], [4, 5, 6]], dtype=tack.vec3f)
    assert a.shape == (2,)
    np.testing.assert_array_equal(a.numpy(), np.array([[1, 2, 3], [4, 5, 6]], np.float32))
    # float64 data into a vec3d / int data into vec2i
    d = tack.array(np.ones((3, 3)), dtype=tack.vec3d)
    assert d.numpy().dtype == np.float64
    i = tack.array(np.arange(4, dtype=np.int64).reshape(2, 2), dtype="vec2i")
    np.testing.assert_array_equal(i.numpy(), np.arange(4, dtype=np.int32).reshape(2, 2))
    # 2-D logical
    src = np.random.default_rng(0).random((3, 4, 2)).astype(np.float32)
    m = tack.array(src, dtype=tack.vec2f)
    assert m.shape == (3, 4)
    np.testing.assert_array_equal(m.numpy(), src)
    # a single vector: logical shape ()
    s = tack.array([1.0, 2.0, 3.0, 4.0], dtype=tack.vec4f)
    assert s.shape == ()
    np.testing.assert_array_equal(s.numpy(), [1, 2, 3, 4])


def test_array_wrong_last_dimension():
    with pytest.raises(ValueError, match=r"\(\.\.\., 3\)"):
        tack.array(np.zeros((5, 4), np.float32), dtype=tack.vec3f)
    with pytest.raises(ValueError, match="vec2f"):
        tack.array(np.zeros((5,), np.float32), dtype=tack.vec2f)
    with pytest.raises(ValueError):
        tack.array(3.0, dtype=tack.vec3f)


def test_array_copy_of_vector_array():
    src = np.arange(12, dtype=np.float32).reshape(4, 3)
    a = tack.array(src, dtype=tack.vec3f)
    b = tack.array(a)                      # stays an array of vectors
    assert b.dtype is tack.vec3f and b.shape == (4,)
    np.testing.assert_array_equal(b.numpy(), src)
    c = tack.array(a, dtype=tack.vec3d)    # converts the components
    assert c.dtype is tack.vec3d
    np.testing.assert_array_equal(c.numpy(), src.astype(np.float64))
    d = tack.array(a, dtype=tack.f32)      # the storage as a scalar array
    assert d.dtype is tack.f32 and d.shape == (4, 3)


def test_numpy_arrays_are_never_vector_arrays():
    a = tack.array(np.zeros((5, 3), np.float32))
    assert a.dtype is tack.f32
    assert a.shape == (5, 3)


def test_copyto():
    a = tack.zeros((4,), dtype=tack.vec3f)
    src = np.arange(12, dtype=np.float32).reshape(4, 3)
    tack.copyto(a, src)
    np.testing.assert_array_equal(a.numpy(), src)
    tack.copyto(a, src.tolist())
    np.testing.assert_array_equal(a.numpy(), src)
    # int data into a float vector array is fine under same_kind
    tack.copyto(a, np.ones((4, 3), np.int64))
    np.testing.assert_array_equal(a.numpy(), np.ones((4, 3)))
    # a vector array as the source
    b = tack.zeros((4,), dtype=tack.vec3f)
    tack.copyto(b, tack.array(src, dtype=tack.vec3f))
    np.testing.assert_array_equal(b.numpy(), src)


def test_copyto_shape_mismatch():
    a = tack.zeros((4,), dtype=tack.vec3f)
    with pytest.raises(ValueError, match=r"shape \(4, 3\).*\(4, 2\)"):
        tack.copyto(a, np.zeros((4, 2), np.float32))
    with pytest.raises(ValueError, match="shapes differ"):
        tack.copyto(a, np.zeros((4,), np.float32))
    with pytest.raises(ValueError, match="shapes differ"):
        tack.copyto(a, np.zeros((3, 3), np.float32))
    with pytest.raises(TypeError, match="vec3i"):
        tack.copyto(tack.zeros((2,), dtype=tack.vec3i), np.zeros((2, 3), np.float32))
    assert not a.numpy().any()


def test_buffer_protocol_exposes_storage():
    src = np.arange(10, dtype=np.float64).reshape(5, 2)
    a = tack.array(src, dtype=tack.vec2d)
    m = memoryview(a)
    assert m.shape == (5, 2)
    assert m.format == "d"
    assert m.itemsize == 8
    assert m.strides == (16, 8)
    v = np.asarray(a)                       # a view, not a copy
    assert v.shape == (5, 2) and v.dtype == np.float64
    v[1, 1] = -1.0
    assert a.numpy()[1, 1] == -1.0
