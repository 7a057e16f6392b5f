"""Arrays shared with other libraries without copies: DLPack (both capsule
kinds), __array_interface__, __cuda_array_interface__, tack.asarray,
tack.from_dlpack, Array.numpy() views, and foreign objects passed to kernels
directly.  CUDA producers are faked (a dict, or a DLPack capsule built here
with ctypes) so their parsing is checked without a GPU."""
import ctypes
import gc
import weakref

import numpy as np
import pytest

import tack
from conftest import DTYPES, device_or_skip, needs_numpy_dlpack_1, random_values, tack_dtype

VECTORS = {"vec2f": (np.float32, 2), "vec3f": (np.float32, 3), "vec4f": (np.float32, 4),
           "vec2d": (np.float64, 2), "vec3d": (np.float64, 3), "vec4d": (np.float64, 4),
           "vec2i": (np.int32, 2), "vec3i": (np.int32, 3), "vec4i": (np.int32, 4)}


@tack.kernel
def scale(x, out, a):
    for i in range(x.shape[0]):
        out[i] = x[i] * a


@tack.kernel
def copy(x, out):
    for i in range(x.shape[0]):
        out[i] = x[i]


@tack.kernel
def fill(out, v):
    for i in range(out.shape[0]):
        out[i] = v


def cuda_available():
    try:
        tack.device("cuda")
        return True
    except (RuntimeError, ValueError):
        return False


def ptr(a):
    """Address of a host array's first element, through the buffer protocol."""
    return np.asarray(a).ctypes.data


# ---- foreign producers, as small as the protocols allow ------------------

class ArrayInterface:
    """Exposes a NumPy array's memory through __array_interface__ only."""

    def __init__(self, a, readonly=False, strides=None):
        self._keep = a
        self.__array_interface__ = {
            "shape": a.shape, "typestr": a.dtype.str, "version": 3,
            "data": (a.ctypes.data, readonly),
            "strides": strides,
        }


class DLPackOnly:
    """Exposes a NumPy array's memory through DLPack only."""

    def __init__(self, a, legacy=False):
        self._a = a
        self._legacy = legacy
        self.calls = []

    def __dlpack__(self, **kwargs):
        self.calls.append(kwargs)
        if self._legacy and "max_version" in kwargs:
            raise TypeError("__dlpack__() got an unexpected keyword argument 'max_version'")
        return self._a.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self._a.__dlpack_device__()


class FakeCuda:
    """A CUDA producer: a __cuda_array_interface__ dict, no memory behind it."""

    def __init__(self, **fields):
        d = {"shape": (4,), "typestr": "<f4", "data": (0x7F0000001000, False),
             "version": 3, "strides": None}
        d.update(fields)
        self.__cuda_array_interface__ = d


# DLPack's structs, for capsules made here (the ABI, as the spec lays it out).
class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


DELETER = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


class DLManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", DELETER)]


class DLPackVersion(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32)]


class DLManagedTensorVersioned(ctypes.Structure):
    _fields_ = [("version", DLPackVersion), ("manager_ctx", ctypes.c_void_p),
                ("deleter", DELETER), ("flags", ctypes.c_uint64), ("dl_tensor", DLTensor)]


_capsule_new = ctypes.pythonapi.PyCapsule_New
_capsule_new.restype = ctypes.py_object
_capsule_new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
_capsule_name = ctypes.pythonapi.PyCapsule_GetName
_capsule_name.restype = ctypes.c_char_p
_capsule_name.argtypes = [ctypes.py_object]

KDL_CPU, KDL_CUDA, KDL_METAL = 1, 2, 8
KDL_INT, KDL_UINT, KDL_FLOAT, KDL_BOOL = 0, 1, 2, 6


class FakeDLPack:
    """A DLPack producer whose tensor is built here: any device, address,
    dtype, shape and strides; counts its deleter's calls."""

    def __init__(self, device=(KDL_CUDA, 1), data=0x7F0000002000, shape=(3, 5),
                 strides=None, dtype=(KDL_FLOAT, 32, 1), byte_offset=0, versioned=True,
                 version=(1, 0), flags=0):
        self.deleted = 0
        self.versioned = versioned
        self._shape = (ctypes.c_int64 * max(len(shape), 1))(*shape)
        self._strides = None if strides is None else (ctypes.c_int64 * len(strides))(*strides)
        self._deleter = DELETER(self._delete)
        t = DLTensor(data=data, device=DLDevice(*device), ndim=len(shape),
                     dtype=DLDataType(*dtype), shape=self._shape,
                     strides=self._strides, byte_offset=byte_offset)
        if versioned:
            self.managed = DLManagedTensorVersioned(
                version=DLPackVersion(*version), manager_ctx=None, deleter=self._deleter,
                flags=flags, dl_tensor=t)
        else:
            self.managed = DLManagedTensor(dl_tensor=t, manager_ctx=None, deleter=self._deleter)
        self._device = device

    def _delete(self, p):
        assert p == ctypes.addressof(self.managed)
        self.deleted += 1

    def capsule(self):
        name = b"dltensor_versioned" if self.versioned else b"dltensor"
        return _capsule_new(ctypes.addressof(self.managed), name, None)

    def __dlpack__(self, **kwargs):
        return self.capsule()

    def __dlpack_device__(self):
        return self._device


# ---- tack.Array as a producer ---------------------------------------------

@needs_numpy_dlpack_1
@pytest.mark.parametrize("name", list(DTYPES))
def test_numpy_from_dlpack_shares_memory(name):
    src = random_values(DTYPES[name], 33, seed=3)
    a = tack.array(src, dtype=tack_dtype(name))
    n = np.from_dlpack(a)
    assert n.dtype == np.dtype(DTYPES[name]) and n.shape == (33,)
    np.testing.assert_array_equal(n, src)
    assert np.shares_memory(n, a.numpy())
    n[5] = src[6]
    assert a.numpy()[5] == src[6]
    fill(a, 1)
    assert n[0] == np.array(1).astype(DTYPES[name]) and n[32] == n[0]


@pytest.mark.parametrize("name", list(DTYPES))
def test_array_interface_is_a_view(name):
    a = tack.zeros((4, 3), dtype=tack_dtype(name))
    ai = a.__array_interface__
    assert ai["version"] == 3 and ai["strides"] is None and ai["shape"] == (4, 3)
    assert np.dtype(ai["typestr"]) == np.dtype(DTYPES[name])
    assert ai["typestr"] == np.dtype(DTYPES[name]).str
    assert ai["data"] == (ptr(a), False)
    n = np.asarray(ArrayInterface(np.asarray(a)))  # through the dict only
    assert n.ctypes.data == ai["data"][0]
    n[1, 2] = 1
    assert a.numpy()[1, 2] == 1


def test_numpy_method_views_host_memory_and_keeps_the_array():
    a = tack.array(np.arange(6, dtype=np.int32))
    alive = weakref.ref(a)
    n = a.numpy()
    assert n.base is a or np.shares_memory(n, np.asarray(a))
    del a
    gc.collect()
    assert alive() is not None  # the view keeps it
    np.testing.assert_array_equal(n, np.arange(6))
    del n
    gc.collect()
    assert alive() is None


@needs_numpy_dlpack_1
def test_numpy_method_copies_device_memory():
    dev = device_or_skip("opencl")
    a = tack.array(np.arange(5, dtype=np.float32), device=dev)
    n = a.numpy()
    n[0] = 7
    assert a.numpy()[0] == 0
    assert not hasattr(a, "__array_interface__")
    assert not hasattr(a, "__cuda_array_interface__")
    assert a.__dlpack_device__()[0] == 4  # kDLOpenCL
    with pytest.raises(BufferError, match="dl_device"):
        a.__dlpack__()
    host = np.from_dlpack(a, device="cpu")  # asks for a copy on the CPU
    np.testing.assert_array_equal(host, np.arange(5))
    host[1] = 9
    assert a.numpy()[1] == 1


@pytest.mark.parametrize("name", list(VECTORS))
def test_vectors_export_with_their_components(name):
    comp, width = VECTORS[name]
    src = (np.arange(5 * width) - 3).reshape(5, width).astype(comp)
    a = tack.array(src, dtype=getattr(tack, name))
    n = np.from_dlpack(a)
    assert n.shape == (5, width) and n.dtype == comp
    np.testing.assert_array_equal(n, src)
    assert np.shares_memory(n, np.asarray(a))
    assert a.__array_interface__["shape"] == (5, width)
    back = tack.asarray(src, dtype=getattr(tack, name))  # a view as vectors
    assert back.shape == (5,) and back.dtype is getattr(tack, name)
    assert ptr(back) == src.ctypes.data
    comps = tack.asarray(a, dtype=tack_dtype({np.float32: "f32", np.float64: "f64",
                                              np.int32: "i32"}[comp]))
    assert comps.shape == (5, width) and ptr(comps) == ptr(a)


def test_legacy_and_versioned_capsules():
    a = tack.array(np.arange(4, dtype=np.float64))
    legacy = a.__dlpack__()
    assert _capsule_name(legacy) == b"dltensor"
    versioned = a.__dlpack__(max_version=(1, 0))
    assert _capsule_name(versioned) == b"dltensor_versioned"
    assert _capsule_name(a.__dlpack__(max_version=(0, 8))) == b"dltensor"
    for cap, kind in ((legacy, "dlpack"), (versioned, "dlpack_versioned")):
        d = tack._tack._describe_foreign(cap)
        assert d["protocol"] == kind
        assert d["ptr"] == ptr(a) and d["shape"] == (4,) and d["strides"] == (8,)
        assert d["dtype"] is tack.f64 and d["device_type"] == 1 and not d["readonly"]
        assert _capsule_name(cap) == b"used_" + (b"dltensor" if kind == "dlpack"
                                                 else b"dltensor_versioned")
        with pytest.raises(ValueError, match="already consumed"):
            tack.from_dlpack(cap)
    assert a.__dlpack_device__() == (1, 0)


def test_exported_capsule_lifetimes():
    a = tack.array(np.arange(3, dtype=np.int16))
    alive = weakref.ref(a)
    cap = a.__dlpack__(max_version=(1, 0))
    del a
    gc.collect()
    assert alive() is not None      # the capsule holds the array
    del cap
    gc.collect()
    assert alive() is None          # never consumed: it freed itself

    a = tack.array(np.arange(3, dtype=np.int16))
    alive = weakref.ref(a)
    n = np.from_dlpack(a)
    del a
    gc.collect()
    assert alive() is not None      # the consumer holds it
    np.testing.assert_array_equal(n, [0, 1, 2])
    del n
    gc.collect()
    assert alive() is None          # the consumer's deleter let it go


@needs_numpy_dlpack_1
def test_dlpack_copy_and_device_requests():
    a = tack.array(np.arange(4, dtype=np.float32))
    c = np.from_dlpack(a, copy=True)
    np.testing.assert_array_equal(c, [0, 1, 2, 3])
    assert not np.shares_memory(c, np.asarray(a))
    same = np.from_dlpack(a, copy=False, device="cpu")
    assert np.shares_memory(same, np.asarray(a))
    with pytest.raises(BufferError):
        a.__dlpack__(dl_device=(KDL_CUDA, 0))
    with pytest.raises(TypeError, match="max_version"):
        a.__dlpack__(max_version=1)
    with pytest.raises(TypeError):
        a.__dlpack__(stream="now")


def test_zero_d_and_empty_arrays():
    z = tack.array(np.array(2.5, dtype=np.float32))
    n = np.from_dlpack(z)
    assert n.shape == () and n == 2.5 and np.shares_memory(n, np.asarray(z))
    back = tack.from_dlpack(np.array(7, dtype=np.int64))
    assert back.shape == () and back.numpy() == 7

    e = tack.zeros((0, 3), dtype=tack.i32)
    ne = np.from_dlpack(e)
    assert ne.shape == (0, 3) and ne.dtype == np.int32
    te = tack.from_dlpack(np.empty((0, 2), dtype=np.float64))
    assert te.shape == (0, 2) and te.dtype is tack.f64 and te.numpy().size == 0
    ai = tack.asarray(ArrayInterface(np.empty(0, dtype=np.uint8)))
    assert ai.shape == (0,) and ai.dtype is tack.u8


# ---- other libraries' arrays in Tack --------------------------------------

@pytest.mark.parametrize("name", list(DTYPES))
def test_from_dlpack_numpy_shares_memory(name):
    src = random_values(DTYPES[name], 21, seed=4)
    t = tack.from_dlpack(src)
    assert t.dtype == tack_dtype(name) and t.shape == (21,)
    assert ptr(t) == src.ctypes.data
    np.testing.assert_array_equal(t.numpy(), src)
    fill(t, 0)
    assert not src.any()
    src[3] = 1
    assert t.numpy()[3] == 1


def test_from_dlpack_lifetime_and_deleter():
    src = np.arange(10, dtype=np.float32)
    t = tack.from_dlpack(src)
    del src
    gc.collect()
    np.testing.assert_array_equal(t.numpy(), np.arange(10, dtype=np.float32))

    buf = np.arange(6, dtype=np.int32)
    prod = FakeDLPack(device=(KDL_CPU, 0), data=buf.ctypes.data, shape=(6,),
                      dtype=(KDL_INT, 32, 1))
    t = tack.from_dlpack(prod)
    assert prod.deleted == 0
    np.testing.assert_array_equal(t.numpy(), buf)
    view = t.numpy()
    del t
    gc.collect()
    assert prod.deleted == 0        # the NumPy view keeps the array
    del view
    gc.collect()
    assert prod.deleted == 1        # exactly once, when the last user went


def test_from_dlpack_refusals():
    with pytest.raises(TypeError, match="__dlpack__"):
        tack.from_dlpack([1, 2, 3])
    strided = np.arange(10, dtype=np.float32)[::2]
    with pytest.raises(ValueError, match="not C-contiguous"):
        tack.from_dlpack(strided)
    newer = FakeDLPack(device=(KDL_CPU, 0), version=(2, 0))
    cap = newer.capsule()
    with pytest.raises(BufferError, match="version 2.0"):
        tack.from_dlpack(cap)
    assert _capsule_name(cap) == b"dltensor_versioned"  # left to its producer
    assert newer.deleted == 0
    for dtype in ((KDL_FLOAT, 128, 1), (KDL_FLOAT, 32, 4), (5, 64, 1)):
        bad = FakeDLPack(device=(KDL_CPU, 0), dtype=dtype)
        with pytest.raises(TypeError, match="not supported"):
            tack.from_dlpack(bad)
        assert bad.deleted == 1     # refused after taking it: given back at once
    metal = FakeDLPack(device=(KDL_METAL, 0))
    with pytest.raises(RuntimeError, match="Metal"):
        tack.from_dlpack(metal)
    assert metal.deleted == 1
    deep = FakeDLPack(device=(KDL_CPU, 0), shape=(1,) * 9)
    with pytest.raises(ValueError, match="at most 8"):
        tack.from_dlpack(deep)


@needs_numpy_dlpack_1
def test_read_only_memory_stays_read_only():
    src = np.arange(8, dtype=np.float32)
    src.flags.writeable = False
    t = tack.from_dlpack(src)       # NumPy says read-only in a DLPack 1.0 flag
    assert ptr(t) == src.ctypes.data
    assert not t.numpy().flags.writeable
    with pytest.raises(ValueError, match="read-only"):
        tack.copyto(t, np.zeros(8, np.float32))
    with pytest.raises(ValueError, match="read-only"):
        fill(t, 1.0)
    assert memoryview(t).readonly
    assert t.__array_interface__["data"][1] is True
    out = np.zeros(8, np.float32)
    scale(t, out, 2.0)              # reading is fine
    np.testing.assert_array_equal(out, src * 2)
    back = np.from_dlpack(t)        # versioned export carries the flag
    assert not back.flags.writeable and np.shares_memory(back, src)
    with pytest.raises(BufferError, match="read-only"):
        t.__dlpack__()              # DLPack 0.x cannot say read-only
    ro = tack.asarray(ArrayInterface(np.zeros(3, np.int8), readonly=True))
    with pytest.raises(ValueError, match="read-only"):
        fill(ro, 1)
    flagged = FakeDLPack(device=(KDL_CPU, 0), data=np.zeros(15, np.float32).ctypes.data,
                         flags=1)
    assert tack._tack._describe_foreign(flagged)["readonly"] is True


def test_asarray_shares_or_copies_only_when_asked():
    a = tack.zeros((4,))
    assert tack.asarray(a) is a
    assert tack.asarray(a, dtype=tack.f32, device="cpu") is a
    c = tack.asarray(a, dtype=tack.f64)
    assert c.dtype is tack.f64 and ptr(c) != ptr(a)

    n = np.arange(12, dtype=np.int64).reshape(3, 4)
    t = tack.asarray(n)
    assert t.dtype is tack.i64 and t.shape == (3, 4) and ptr(t) == n.ctypes.data
    assert tack.asarray(n, dtype=tack.i64).shape == (3, 4)
    f = tack.asarray(n, dtype=tack.f32)
    np.testing.assert_array_equal(f.numpy(), n.astype(np.float32))
    assert ptr(f) != n.ctypes.data

    cols = tack.asarray(n[:, 1])    # not contiguous: a copy
    np.testing.assert_array_equal(cols.numpy(), n[:, 1])
    assert not np.shares_memory(cols.numpy(), n)

    b = bytearray(np.arange(4, dtype=np.float32).tobytes())
    mv = memoryview(b).cast("f")
    tb = tack.asarray(mv)
    assert tb.dtype is tack.f32 and ptr(tb) == np.frombuffer(b, np.float32).ctypes.data

    lst = tack.asarray([1.5, 2.5])  # a new array, as tack.array makes it
    assert lst.dtype is tack.f32
    np.testing.assert_array_equal(lst.numpy(), [1.5, 2.5])

    dl = tack.asarray(DLPackOnly(n))
    assert ptr(dl) == n.ctypes.data

    own = tack.device("cpu", num_threads=1)
    other = tack.asarray(n, device=own)  # another host-memory device: same memory
    assert other.device is own and ptr(other) == n.ctypes.data

    # an element type Tack lacks (long double): refused, converted when asked
    with pytest.raises(TypeError, match="not supported"):
        tack.asarray(np.zeros(3, np.longdouble))
    np.testing.assert_array_equal(tack.asarray(np.arange(3, dtype=np.longdouble),
                                               dtype=tack.f32).numpy(), [0, 1, 2])
    wide = memoryview(np.arange(3, dtype=np.longdouble))
    np.testing.assert_array_equal(tack.asarray(wide, dtype=tack.f64).numpy(), [0, 1, 2])
    h = np.arange(3, dtype=np.float16)
    for half in (tack.asarray(h), tack.from_dlpack(h), tack.asarray(ArrayInterface(h))):
        assert half.dtype is tack.f16 and ptr(half) == h.ctypes.data   # shared, not copied
    back = np.from_dlpack(tack.asarray(h))
    assert back.dtype == np.float16 and np.shares_memory(back, h)
    s = tack.asarray(np.float64(2.5))  # NumPy scalars: a new 0-d array
    assert s.shape == () and s.dtype is tack.f64 and s.numpy() == 2.5


def test_asarray_to_a_device_copies():
    dev = device_or_skip("opencl")
    n = np.arange(6, dtype=np.float32)
    d = tack.asarray(n, device=dev)
    assert d.device is dev
    np.testing.assert_array_equal(d.numpy(), n)
    back = tack.asarray(d, device="cpu")
    np.testing.assert_array_equal(back.numpy(), n)


def test_array_copies_dlpack_only_producers():
    n = np.arange(5, dtype=np.uint16)
    p = DLPackOnly(n)
    t = tack.array(p)
    assert t.dtype is tack.u16
    np.testing.assert_array_equal(t.numpy(), n)
    assert not np.shares_memory(t.numpy(), n)


def test_dlpack_producers_asked_by_the_standard():
    n = np.arange(4, dtype=np.float32)
    p = DLPackOnly(n)
    tack.from_dlpack(p)
    assert p.calls[0].get("max_version") == (1, 0)
    assert "stream" not in p.calls[0]            # host memory: no stream
    old = DLPackOnly(n, legacy=True)           # a producer before DLPack 1.0
    t = tack.from_dlpack(old)
    assert len(old.calls) == 2 and "max_version" not in old.calls[1]
    assert ptr(t) == n.ctypes.data
    assert tack._tack._describe_foreign(old)["protocol"] == "dlpack"


# ---- kernels take foreign objects directly --------------------------------

def test_kernels_take_foreign_objects():
    x = np.arange(16, dtype=np.float32)
    out = np.zeros(16, np.float32)
    scale(ArrayInterface(x), ArrayInterface(out), 2.0)
    np.testing.assert_array_equal(out, x * 2)
    scale(DLPackOnly(x), DLPackOnly(out), 3.0)
    np.testing.assert_array_equal(out, x * 3)
    cap = x.__dlpack__()
    scale(cap, out, 4.0)
    np.testing.assert_array_equal(out, x * 4)
    with pytest.raises(ValueError, match="already consumed"):
        scale(cap, out, 5.0)

    # The producer's tensor is given back after the launch.
    prod = FakeDLPack(device=(KDL_CPU, 0), data=out.ctypes.data, shape=(16,))
    scale(x, prod, 5.0)
    assert prod.deleted == 1
    np.testing.assert_array_equal(out, x * 5)


@pytest.mark.parametrize("name", list(DTYPES))
def test_kernels_take_foreign_objects_of_every_dtype(name):
    x = random_values(DTYPES[name], 9, seed=5)
    out = np.zeros(9, DTYPES[name])
    copy(DLPackOnly(x), ArrayInterface(out))
    np.testing.assert_array_equal(out, x)


def test_kernel_foreign_refusals_name_the_parameter():
    x = np.arange(8, dtype=np.float32)
    out = np.zeros(8, np.float32)
    with pytest.raises(ValueError, match="parameter 'out'.*read-only|'out'.*read-only"):
        scale(x, ArrayInterface(out, readonly=True), 2.0)
    assert not out.any()
    with pytest.raises(TypeError, match="parameter 'x'.*not supported"):
        scale(ArrayInterface(np.zeros(8, np.longdouble)), out, 2.0)
    # Strides are carried as given: a strided producer meets the kernel's
    # layout rule (until strided kernels land, "not C-contiguous").
    strided = ArrayInterface(np.arange(16, dtype=np.float32), strides=(8,))
    strided.__array_interface__["shape"] = (8,)
    try:
        scale(strided, out, 1.0)
    except ValueError as e:
        assert "contiguous" in str(e) and "'x'" in str(e)
    else:
        np.testing.assert_array_equal(out, np.arange(0, 16, 2, dtype=np.float32))
    d = tack._tack._describe_foreign(strided)
    assert d["strides"] == (8,) and d["strides_given"] and not d["contiguous"]


# ---- issue 18: what a producer says is checked before it is used ----------

class BufferInterface:
    """__array_interface__ in NumPy's other form: 'data' is a buffer object
    (its memory), with an optional 'offset' into it."""

    def __init__(self, buf, shape, typestr="<f4", strides=None, offset=None):
        self._buf = buf
        self.__array_interface__ = {"shape": shape, "typestr": typestr, "data": buf,
                                    "version": 3, "strides": strides}
        if offset is not None:
            self.__array_interface__["offset"] = offset


@pytest.mark.parametrize("shape, strides, offset, reach", [
    ((5,), None, None, "0 to 20"),      # one element past the buffer
    ((100,), None, None, "0 to 400"),
    ((2, 2), (12, 4), None, "0 to 20"),  # the last row ends past it
    ((4,), (8,), None, "0 to 28"),
    ((4,), None, 4, "4 to 20"),          # shifted by 'offset'
    ((2,), (-4,), 0, "-4 to 4"),         # the second element lies before it
])
def test_array_interface_buffer_shorter_than_its_shape_refused(shape, strides, offset, reach):
    big = bytearray(64)
    data = memoryview(big)[:16]          # 16 bytes, with 48 more after them
    src = BufferInterface(data, shape, strides=strides, offset=offset)
    words = f"the elements reach bytes {reach} of the 'data' buffer, which holds 16 bytes"
    with pytest.raises(ValueError, match=r"tack\.asarray\(\): __array_interface__: " + words):
        tack.asarray(src)
    with pytest.raises(ValueError, match="tack.array().*" + words):
        tack.array(src)
    with pytest.raises(ValueError, match="kernel 'fill': parameter 'out'.*" + words):
        fill(src, 1.0)
    assert not any(big)                  # nothing written, inside or past it
    if len(shape) == 1:
        out = np.zeros(shape, np.float32)
        with pytest.raises(ValueError, match="kernel 'copy': parameter 'x'.*" + words):
            copy(src, out)
        assert not out.any()


def test_array_interface_buffer_that_fits_is_used():
    src = np.arange(16, dtype=np.float32)
    big = bytearray(src.tobytes())
    whole = tack.asarray(BufferInterface(memoryview(big), (16,)))
    np.testing.assert_array_equal(whole.numpy(), src)
    assert ptr(whole) == np.frombuffer(big, np.float32).ctypes.data    # shared
    corner = tack.asarray(BufferInterface(memoryview(big), (2, 2), offset=48))
    np.testing.assert_array_equal(corner.numpy(), [[12, 13], [14, 15]])
    # Strided reads up to the buffer's last byte, forward and backward.
    for strides, offset, expect in (((16,), None, [0, 4, 8, 12]),
                                    ((-4,), 60, [15, 14, 13, 12]),
                                    ((-16,), 60, [15, 11, 7, 3])):
        out = np.zeros(4, np.float32)
        copy(BufferInterface(memoryview(big), (4,), strides=strides, offset=offset), out)
        np.testing.assert_array_equal(out, expect)
    fill(BufferInterface(memoryview(big), (4,), offset=48), -1.0)
    np.testing.assert_array_equal(np.frombuffer(big, np.float32), [*range(12), -1, -1, -1, -1])
    # A dtype Tack lacks still converts through NumPy, after the same check.
    wide = np.arange(3, dtype=np.longdouble)
    raw = bytearray(wide.tobytes())
    conv = tack.array(BufferInterface(memoryview(raw), (3,), typestr=wide.dtype.str),
                      dtype=tack.f64)
    np.testing.assert_array_equal(conv.numpy(), [0, 1, 2])
    with pytest.raises(ValueError, match="tack.array().*'data' buffer, which holds"):
        tack.array(BufferInterface(memoryview(raw), (4,), typestr=wide.dtype.str),
                   dtype=tack.f64)


WRAPPING_STRIDES = [
    ((2**62 + 1,), (KDL_FLOAT, 32, 1)),  # * 4 bytes wraps to 4: looked contiguous
    ((-2**62,), (KDL_FLOAT, 32, 1)),     # * 4 wraps to 0: looked like a broadcast
    ((2**61,), (KDL_FLOAT, 64, 1)),      # * 8 wraps to 0
    ((2**63 - 1,), (KDL_INT, 16, 1)),
]


@pytest.mark.parametrize("strides, dtype", WRAPPING_STRIDES)
def test_dlpack_strides_that_wrap_as_bytes_refused(strides, dtype):
    x = np.arange(2, dtype=np.float64)   # room for two elements of any dtype
    out = np.zeros(2, x.dtype)

    def make():
        return FakeDLPack(device=(KDL_CPU, 0), data=x.ctypes.data, shape=(2,),
                          strides=strides, dtype=dtype)
    words = f"stride {strides[0]} \\(elements\\) of dimension 0 does not fit"
    p = make()
    with pytest.raises(ValueError, match=r"tack\.from_dlpack\(\): DLPack tensor: " + words):
        tack.from_dlpack(p)
    assert p.deleted == 1                # taken, refused, given back
    with pytest.raises(ValueError, match=r"tack\.asarray\(\).*" + words):
        tack.asarray(make())
    p = make()
    with pytest.raises(ValueError, match="kernel 'copy': parameter 'x'.*" + words):
        copy(p, out)
    assert p.deleted == 1 and not out.any()
    with pytest.raises(ValueError, match="kernel 'fill': parameter 'out'.*" + words):
        fill(make(), 1)
    np.testing.assert_array_equal(x, [0, 1])


def test_dlpack_strides_whose_reach_wraps_refused():
    x = np.zeros(4, np.float32)
    # 2**60 elements are 2**62 bytes (fits); three of them do not.
    p = FakeDLPack(device=(KDL_CPU, 0), data=x.ctypes.data, shape=(4,), strides=(2**60,))
    with pytest.raises(ValueError, match="parameter 'out'.*strides reach beyond the address"):
        fill(p, 1.0)
    assert p.deleted == 1 and not x.any()
    # Backwards past address 0.
    back = FakeDLPack(device=(KDL_CPU, 0), data=x.ctypes.data, shape=(2,), strides=(-2**61,))
    with pytest.raises(ValueError, match="strides reach beyond the address space"):
        tack._tack._describe_foreign(back)
    # Large strides that stay addresses are described as given.
    far = FakeDLPack(device=(KDL_CPU, 0), data=x.ctypes.data, shape=(2, 3), strides=(2**40, 1))
    assert tack._tack._describe_foreign(far)["strides"] == (2**42, 4)


class ArrayImpl(DLPackOnly):
    """A JAX array as the protocols see it: its class lives in jaxlib."""
    __module__ = "jaxlib.xla_extension"


class JaxSubclass(ArrayImpl):
    __module__ = "mylib.arrays"          # a subclass counts through its MRO


class NotJax(DLPackOnly):
    __module__ = "jaxtyping"             # a name that only starts like it


@pytest.mark.parametrize("legacy", [True, False], ids=["dlpack0", "dlpack1"])
def test_immutable_producers_give_read_only_arrays(legacy):
    for cls in (ArrayImpl, JaxSubclass):
        src = np.arange(8, dtype=np.float32)     # writable memory: only the producer says
        for t in (tack.asarray(cls(src, legacy=legacy)), tack.from_dlpack(cls(src, legacy))):
            assert ptr(t) == src.ctypes.data    # shared, not copied
            assert not t.numpy().flags.writeable
            with pytest.raises(ValueError, match="read-only"):
                fill(t, 1.0)
            with pytest.raises(ValueError, match="read-only"):
                tack.copyto(t, np.ones(8, np.float32))
        d = tack._tack._describe_foreign(cls(src, legacy=legacy))
        assert d["readonly"] is True
        with pytest.raises(ValueError, match="parameter 'out'.*read-only"):
            fill(cls(src, legacy=legacy), 1.0)   # a kernel argument, refused before running
        out = np.zeros(8, np.float32)
        scale(cls(src, legacy=legacy), out, 2.0)  # reading is fine
        np.testing.assert_array_equal(out, src * 2)
        np.testing.assert_array_equal(src, np.arange(8))
    src = np.arange(8, dtype=np.float32)
    fill(NotJax(src, legacy=legacy), 3.0)
    np.testing.assert_array_equal(src, np.full(8, 3.0))
    assert not tack._tack._describe_foreign(NotJax(src, legacy=legacy))["readonly"]


def test_read_only_flag_of_dlpack_1_is_kept_everywhere():
    src = np.arange(6, dtype=np.int32)
    keep = []

    def flagged():
        keep.append(FakeDLPack(device=(KDL_CPU, 0), data=src.ctypes.data, shape=(6,),
                               dtype=(KDL_INT, 32, 1), flags=1))
        return keep[-1]
    for t in (tack.asarray(flagged()), tack.from_dlpack(flagged())):
        assert ptr(t) == src.ctypes.data and not t.numpy().flags.writeable
        with pytest.raises(ValueError, match="read-only"):
            fill(t, 1)
    with pytest.raises(ValueError, match="parameter 'out'.*read-only"):
        fill(flagged(), 1)
    np.testing.assert_array_equal(src, np.arange(6))
    del t
    gc.collect()
    assert all(p.deleted == 1 for p in keep)


def test_asarray_refuses_strided_foreign_memory_instead_of_copying():
    n = np.zeros((3, 4), np.float32)
    for producer in (DLPackOnly(n[:, 1]), DLPackOnly(n[:, 1], legacy=True),
                     ArrayInterface(n[:, 1], strides=(16,))):
        with pytest.raises(ValueError, match=r"tack\.asarray\(\): the array is not "
                                             r"C-contiguous \(shape \(3,\), strides \(16,\)"):
            tack.asarray(producer)
    # Kernels take it in place, strides and all, so their writes reach it.
    fill(DLPackOnly(n[:, 1]), 7.0)
    expect = np.zeros((3, 4), np.float32)
    expect[:, 1] = 7
    np.testing.assert_array_equal(n, expect)
    # A copy is one call away, and NumPy's own arrays still copy (NumPy's rule).
    c = tack.array(DLPackOnly(n[:, 1]))
    np.testing.assert_array_equal(c.numpy(), [7, 7, 7])
    assert not np.shares_memory(tack.asarray(n[:, 1]).numpy(), n)


def test_asarray_of_none_says_so():
    with pytest.raises(TypeError, match=r"^tack\.asarray\(\): None is not an array$"):
        tack.asarray(None)
    with pytest.raises(TypeError, match=r"^tack\.array\(\): None is not an array$"):
        tack.array(None)
    with pytest.raises(TypeError, match="None is not an array"):
        tack.array(None, dtype=tack.f32)


def test_torch_cpu_tensors():
    torch = pytest.importorskip("torch")
    x = torch.arange(12, dtype=torch.float32)
    out = torch.zeros(12, dtype=torch.float32)
    scale(x, out, 2.0)
    assert torch.equal(out, x * 2)
    t = tack.from_dlpack(x)
    assert ptr(t) == x.data_ptr()
    back = torch.from_dlpack(tack.array(np.arange(3, dtype=np.int64)))
    assert back.tolist() == [0, 1, 2]


# ---- CUDA producers, parsed without a GPU ---------------------------------

def test_cuda_array_interface_parsing():
    d = tack._tack._describe_foreign(FakeCuda())
    assert d == {"protocol": "cuda_array_interface", "device_type": KDL_CUDA,
                 "device_id": None, "ptr": 0x7F0000001000, "shape": (4,), "strides": (4,),
                 "dtype": tack.f32, "readonly": False, "strides_given": False,
                 "contiguous": True, "stream": None}
    d = tack._tack._describe_foreign(FakeCuda(
        shape=(2, 3), typestr="<i8", data=(0x1000, True), strides=(48, 16), stream=7))
    assert d["shape"] == (2, 3) and d["strides"] == (48, 16) and d["dtype"] is tack.i64
    assert d["readonly"] is True and d["stream"] == 7 and not d["contiguous"]
    for typestr, dt in (("|b1", tack.bool_), ("|u1", tack.u8), ("|i1", tack.i8),
                        ("<u4", tack.u32), ("<f8", tack.f64)):
        assert tack._tack._describe_foreign(FakeCuda(typestr=typestr))["dtype"] is dt
    empty = tack._tack._describe_foreign(FakeCuda(shape=(0,), data=(0, False)))
    assert empty["ptr"] == 0 and empty["shape"] == (0,)


@pytest.mark.parametrize("fields, exc, words", [
    ({"stream": 0}, ValueError, "stream 0"),
    ({"mask": object()}, ValueError, "masked"),
    ({"typestr": "<f16"}, TypeError, "not supported"),
    ({"typestr": ">f4"}, TypeError, "byte order"),
    ({"typestr": 4}, TypeError, "typestr"),
    ({"data": 12}, TypeError, "'data'"),
    ({"data": (0, False)}, ValueError, "NULL"),
    ({"shape": (1,) * 9}, ValueError, "at most 8"),
    ({"shape": (2, -1)}, ValueError, "negative"),
    ({"shape": ("a",)}, TypeError, "'shape'"),
    ({"strides": (4, 4)}, ValueError, "2 strides for 1"),
])
def test_cuda_array_interface_refusals(fields, exc, words):
    with pytest.raises(exc, match=words):
        tack._tack._describe_foreign(FakeCuda(**fields))


def test_cuda_array_interface_not_a_dict():
    class Bad:
        __cuda_array_interface__ = [1, 2]
    with pytest.raises(TypeError, match="not a dict"):
        tack._tack._describe_foreign(Bad())


@pytest.mark.parametrize("versioned", [True, False])
def test_cuda_dlpack_capsule_parsing(versioned):
    p = FakeDLPack(device=(KDL_CUDA, 1), data=0x7F0000002000, shape=(3, 5),
                   strides=(10, 2), dtype=(KDL_FLOAT, 64, 1), byte_offset=256,
                   versioned=versioned, flags=1)
    d = tack._tack._describe_foreign(p)
    assert d["protocol"] == ("dlpack_versioned" if versioned else "dlpack")
    assert (d["device_type"], d["device_id"]) == (KDL_CUDA, 1)
    assert d["ptr"] == 0x7F0000002000 + 256
    assert d["shape"] == (3, 5) and d["strides"] == (80, 16)  # elements -> bytes
    assert d["dtype"] is tack.f64 and d["strides_given"] and not d["contiguous"]
    assert d["readonly"] is versioned  # only DLPack 1.0 has the flag
    assert p.deleted == 1
    bools = FakeDLPack(dtype=(KDL_BOOL, 8, 1), versioned=versioned)
    assert tack._tack._describe_foreign(bools)["dtype"] is tack.bool_
    assert bools.deleted == 1


def test_cuda_producers_without_a_cuda_device():
    if cuda_available():
        pytest.skip("a CUDA device is present: the refusal is for machines without one")
    for make in (lambda: FakeCuda(), lambda: FakeDLPack(device=(KDL_CUDA, 0))):
        with pytest.raises(RuntimeError, match="CUDA"):
            tack.asarray(make())
        with pytest.raises(RuntimeError, match="CUDA"):
            tack.array(make())
        out = np.zeros(4, np.float32)
        with pytest.raises(RuntimeError, match="parameter 'x'.*CUDA"):
            scale(make(), out, 1.0)
    p = FakeDLPack(device=(KDL_CUDA, 0))
    with pytest.raises(RuntimeError, match="cuda:0"):
        tack.from_dlpack(p)
    assert p.deleted == 1


def test_cuda_arrays_export_both_protocols():
    if not cuda_available():
        pytest.skip("no CUDA device here")
    dev = tack.device("cuda")
    a = tack.array(np.arange(6, dtype=np.float32), device=dev)
    cai = a.__cuda_array_interface__
    assert cai["version"] == 3 and cai["stream"] is None and cai["shape"] == (6,)
    assert a.__dlpack_device__()[0] == KDL_CUDA
    shared = tack.asarray(FakeCuda(shape=(6,), data=cai["data"]))
    assert shared.device is dev
    np.testing.assert_array_equal(shared.numpy(), np.arange(6))
    fill(shared, 3.0)
    np.testing.assert_array_equal(a.numpy(), np.full(6, 3.0))
    again = tack.from_dlpack(a)
    np.testing.assert_array_equal(again.numpy(), np.full(6, 3.0))


@pytest.mark.parametrize("dtype, name", [
    ((4, 16, 1), "bfloat16"), ((5, 64, 1), "complex64"), ((5, 128, 1), "complex128"),
    ((KDL_FLOAT, 128, 1), "float128"), ((KDL_FLOAT, 32, 4), "float32 x 4 lanes"),
    ((3, 64, 1), "opaque handle"), ((42, 8, 1), "type code 42, 8 bits"),
])
def test_unsupported_dlpack_dtype_is_named(dtype, name):
    bad = FakeDLPack(device=(KDL_CPU, 0), dtype=dtype)
    with pytest.raises(TypeError) as info:
        tack.from_dlpack(bad)
    # The call is named first (issue 18), then the dtype (issue 22).
    assert str(info.value).startswith("tack.from_dlpack(): DLPack dtype %s is not supported"
                                      % name), str(info.value)
    assert bad.deleted == 1
