"""Other libraries' arrays as kernel arguments, read on every call (issue 22,
item 3): what Tack remembers about a producer (its memory was on the host,
it predates max_version, its type is immutable) never hides a change, and
PyTorch tensors read through torch's C exchange API give what DLPack
gives, refusals included (and a lazily negated tensor is refused)."""
import gc

import numpy as np
import pytest

import tack
from conftest import SANITIZED, needs_numpy_dlpack_1
from test_interop import KDL_CPU, KDL_CUDA, DLPackOnly, FakeDLPack, scale


class CountingDLPack(DLPackOnly):
    """DLPackOnly that also counts __dlpack_device__ calls and may swap the
    array it hands out."""

    def __init__(self, a, legacy=False):
        super().__init__(a, legacy)
        self.device_calls = 0

    def __dlpack_device__(self):
        self.device_calls += 1
        return super().__dlpack_device__()


class MovingDLPack(FakeDLPack):
    """A producer whose memory may move to another device between calls."""

    def __init__(self, a):
        super().__init__(device=(KDL_CPU, 0), data=a.ctypes.data, shape=a.shape)
        self.calls = []
        self.device_calls = 0

    def move_to_cuda(self):
        self._device = (KDL_CUDA, 0)
        self.managed.dl_tensor.device.device_type = KDL_CUDA

    def __dlpack__(self, **kwargs):
        self.calls.append(kwargs)
        return self.capsule()

    def __dlpack_device__(self):
        self.device_calls += 1
        return self._device


class NoWeakref:
    """A DLPack producer that takes no weak reference (no __weakref__)."""
    __slots__ = ("_a", "device_calls")

    def __init__(self, a):
        self._a = a
        self.device_calls = 0

    def __dlpack__(self, **kwargs):
        return self._a.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        self.device_calls += 1
        return self._a.__dlpack_device__()


@needs_numpy_dlpack_1
def test_a_host_producer_is_not_asked_its_device_again():
    x = np.arange(8, dtype=np.float32)
    out = np.zeros(8, np.float32)
    px, po = CountingDLPack(x), CountingDLPack(out)
    for k in range(1, 6):
        scale(px, po, float(k))
        np.testing.assert_array_equal(out, x * k)
    assert px.device_calls == 1 and po.device_calls == 1
    # Each call still asks __dlpack__, as the standard says, with max_version.
    assert len(px.calls) == 5 and all(c.get("max_version") == (1, 0) for c in px.calls)
    assert all("stream" not in c for c in px.calls)


@needs_numpy_dlpack_1
def test_a_producer_whose_memory_changes_is_seen():
    x = np.arange(8, dtype=np.float32)
    out = np.zeros(8, np.float32)
    px, po = CountingDLPack(x), CountingDLPack(out)
    scale(px, po, 2.0)
    # New memory, new shape, new dtype: the next call reads what it is now.
    x2 = np.arange(20, dtype=np.float64) - 5
    out2 = np.zeros(20, np.float64)
    px._a, po._a = x2, out2
    scale(px, po, 3.0)
    np.testing.assert_array_equal(out2, x2 * 3)
    np.testing.assert_array_equal(out, x * 2)  # the old memory was left alone
    assert (px.calls[-1]["max_version"], px.device_calls) == ((1, 0), 1)
    # A strided view of a 2-D array.
    m = np.arange(24, dtype=np.float64).reshape(4, 6)
    px._a, po._a = m[:, 1], np.zeros(4)
    scale(px, po, 1.0)
    np.testing.assert_array_equal(po._a, m[:, 1])


def test_two_producers_whose_addresses_share_a_memo_set_are_both_remembered():
    # The memo of producers is hashed by address: the two of one call once
    # pushed each other out when their addresses met (a flaky count above).
    x = np.arange(8, dtype=np.float32)
    out = np.zeros(8, np.float32)
    px = CountingDLPack(x)
    keep = []
    while True:  # a second producer in px's set (32 sets, by address >> 4)
        po = CountingDLPack(out)
        if (id(po) >> 4) % 32 == (id(px) >> 4) % 32:
            break
        keep.append(po)
    for k in (2.0, 3.0, 4.0):
        scale(px, po, k)
        np.testing.assert_array_equal(out, x * k)
    assert (px.device_calls, po.device_calls) == (1, 1)


def test_memory_that_left_the_host_is_asked_again_with_a_stream():
    x = np.arange(4, dtype=np.float32)
    out = np.zeros(4, np.float32)
    p = MovingDLPack(x)
    scale(p, out, 2.0)
    np.testing.assert_array_equal(out, x * 2)
    assert (p.device_calls, p.deleted) == (1, 1)
    scale(p, out, 3.0)
    assert (p.device_calls, p.deleted) == (1, 2)  # remembered: not asked
    p.move_to_cuda()
    out[:] = 0
    with pytest.raises(RuntimeError, match="parameter 'x'.*CUDA"):
        scale(p, out, 4.0)
    # The capsule that came back off the host was given back unused, and
    # the producer was asked as a new one: its device, then the stream.
    assert p.device_calls == 2 and p.deleted == 4
    assert "stream" not in p.calls[2] and p.calls[3].get("stream") == 1
    assert not out.any()
    # Forgotten: asked its device again next time.
    with pytest.raises(RuntimeError, match="CUDA"):
        scale(p, out, 4.0)
    assert p.device_calls == 3


def test_new_producers_at_reused_addresses_are_asked_afresh():
    x = np.arange(8, dtype=np.float32)
    out = np.zeros(8, np.float32)
    seen = set()
    for k in range(300):
        p = CountingDLPack(x)
        seen.add(id(p))
        scale(p, out, float(k))
        assert p.device_calls == 1
        np.testing.assert_array_equal(out, x * k)
        del p
        gc.collect(0)
    # Addresses were reused (not under ASan, whose quarantine holds freed
    # memory back), and none was taken for another.
    assert SANITIZED or len(seen) < 300


def test_a_legacy_producer_is_asked_without_max_version_once_known():
    x = np.arange(8, dtype=np.float32)
    out = np.zeros(8, np.float32)
    p = CountingDLPack(x, legacy=True)
    scale(p, out, 2.0)
    assert len(p.calls) == 2 and "max_version" not in p.calls[1]
    scale(p, out, 3.0)
    assert len(p.calls) == 3 and "max_version" not in p.calls[2]
    np.testing.assert_array_equal(out, x * 3)


def test_producers_without_weak_references_work_unremembered():
    x = np.arange(8, dtype=np.float32)
    out = np.zeros(8, np.float32)
    p = NoWeakref(x)
    for k in range(3):
        scale(p, out, float(k))
    np.testing.assert_array_equal(out, x * 2)
    assert p.device_calls == 3


def test_a_class_that_becomes_immutable_is_seen():
    class Producer(DLPackOnly):
        pass

    n = np.arange(4, dtype=np.float32)
    assert not tack._tack._describe_foreign(Producer(n))["readonly"]
    Producer.__module__ = "jax.numpy"
    assert tack._tack._describe_foreign(Producer(n))["readonly"]
    out = Producer(np.zeros(4, np.float32))
    with pytest.raises(ValueError, match="read-only"):
        scale(n, out, 1.0)


def test_capsules_are_still_taken_once():
    x = np.arange(4, dtype=np.float32)
    out = np.zeros(4, np.float32)
    cap = x.__dlpack__()
    scale(cap, out, 2.0)
    np.testing.assert_array_equal(out, x * 2)
    with pytest.raises(ValueError, match="already consumed"):
        scale(cap, out, 2.0)


# ---- PyTorch ----------------------------------------------------------------

def torch_or_skip():
    return pytest.importorskip("torch")


def test_torch_tensors_every_dtype_and_layout():
    torch = torch_or_skip()
    for dt in (torch.bool, torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8,
               torch.float16, torch.float32, torch.float64):
        x = torch.arange(10).to(dt)
        out = torch.zeros(10, dtype=dt)

        @tack.kernel
        def copy(a, b):
            for i in range(a.shape[0]):
                b[i] = a[i]

        copy(x, out)
        assert torch.equal(out, x), dt
    m = torch.arange(24, dtype=torch.float32).reshape(4, 6)
    out = torch.zeros(4)
    scale(m[:, 2], out, 2.0)            # strided, with a storage offset
    assert torch.equal(out, m[:, 2] * 2)
    scale(m.t()[3], out, 1.0)
    assert torch.equal(out, m[:, 3])
    scale(torch.zeros(0), torch.zeros(0), 1.0)   # empty: no data pointer


def test_torch_tensors_changed_in_place_are_seen():
    torch = torch_or_skip()
    x = torch.arange(8, dtype=torch.float32)
    out = torch.zeros(8)
    scale(x, out, 2.0)
    assert torch.equal(out, x * 2)
    x.resize_(32).copy_(torch.arange(32, dtype=torch.float32))  # new storage
    out.resize_(32)
    scale(x, out, 3.0)
    assert torch.equal(out, torch.arange(32, dtype=torch.float32) * 3)
    y = torch.arange(12, dtype=torch.float32).reshape(3, 4)
    o = torch.zeros(4)
    scale(y[0], o, 1.0)
    y.t_()                               # same memory, new shape and strides
    o3 = torch.zeros(4)

    @tack.kernel
    def first_row(a, out):
        for j in range(a.shape[1]):
            out[j] = a[0, j]

    first_row(y, o3[:3])
    assert o3[:3].tolist() == [0.0, 4.0, 8.0]
    z = torch.arange(8, dtype=torch.float32)
    z.data = torch.arange(8, dtype=torch.float64) * 10   # new dtype behind the object
    oz = torch.zeros(8, dtype=torch.float64)
    scale(z, oz, 1.0)
    assert oz.tolist() == [10.0 * i for i in range(8)]


def test_torch_refusals():
    torch = torch_or_skip()
    out = torch.zeros(2)
    with pytest.raises(Exception, match="parameter 'x'.*(grad|detach)"):
        scale(torch.ones(2, requires_grad=True), out, 1.0)
    # A lazy negation: its memory holds the values negated (torch's own
    # __dlpack__ hands that memory over as if it were the values).
    z = torch.tensor([1 + 2j, 3 - 1j])
    neg = z.conj().imag
    assert neg.is_neg()
    with pytest.raises(ValueError, match="parameter 'x'.*negative bit.*resolve_neg"):
        scale(neg, out, 1.0)
    with pytest.raises(ValueError, match="parameter 'out'.*negative bit"):
        scale(torch.ones(2), neg, 1.0)
    assert not out.any() and neg.tolist() == [-2.0, 1.0]
    scale(neg.resolve_neg(), out, 1.0)
    assert out.tolist() == [-2.0, 1.0]
    with pytest.raises(TypeError, match="parameter 'x'.*not supported"):
        scale(torch.ones(2, dtype=torch.bfloat16), out, 1.0)


def test_torch_tensor_kept_alive_for_the_launch():
    torch = torch_or_skip()
    out = torch.zeros(1000)
    scale(torch.arange(1000, dtype=torch.float32), out, 2.0)  # the only reference
    assert torch.equal(out, torch.arange(1000, dtype=torch.float32) * 2)
