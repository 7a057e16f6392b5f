"""float16 arrays (tack.f16): a storage type with arithmetic in f32.

Reading an element of an f16 array gives its f32 value; storing rounds to
the nearest half, ties to even, once (an f64 value is never rounded to f32
first), with overflow to inf, -0.0, subnormals and NaN kept.  Results are
compared bit for bit with NumPy's float16 conversions (NaNs by NaN-ness and
sign: a device may choose another payload).  tack.f16(x) in a kernel is x
rounded to half, held as an f32.  Atomics on f16 arrays are refused.
"""
import os
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest

import tack
from conftest import name_in_message

pytestmark = [pytest.mark.every_device,
              # EDGES hold values past f32's and f16's range on purpose.
              pytest.mark.filterwarnings("ignore:overflow encountered in cast:RuntimeWarning")]

# Values around every rounding rule: the largest half, the tie past it that
# overflows, subnormals and their ties, signed zeros, NaN and inf, and
# 1 + 2**-11 + 2**-40, which an f64 -> f32 -> f16 double rounding gets wrong.
EDGES = [65504.0, 65519.99, 65520.0, -65520.0, 1e6, -1e300, 2.0**-24, 2.0**-25,
         2.0**-25 * (1 + 2.0**-20), 3 * 2.0**-25, 2.0**-14 - 2.0**-25, 2.0**-14, 1e-8,
         -1e-8, 0.0, -0.0, np.nan, -np.nan, np.inf, -np.inf, 1.0 + 2.0**-11,
         1.0 + 3 * 2.0**-11, 1.0 + 2.0**-11 + 2.0**-40, -(1.0 + 2.0**-11 + 2.0**-40),
         0.1, -2.5, 1024.5, 2049.0, 4097.0, 65503.0]


def as_half(values):
    """NumPy's rounding of `values` to float16 (one rounding from their dtype)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return np.asarray(values).astype(np.float16)


def assert_same(actual, expected):
    """Equal bit patterns; NaNs only need to be NaNs of the same sign."""
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert actual.dtype == expected.dtype and actual.shape == expected.shape
    bits = {2: np.uint16, 4: np.uint32, 8: np.uint64}[actual.dtype.itemsize]
    a, e = actual.reshape(-1), expected.reshape(-1)
    nan = np.isnan(e)
    assert np.array_equal(np.isnan(a), nan), np.nonzero(np.isnan(a) != nan)[0][:5]
    assert np.array_equal(np.signbit(a[nan]), np.signbit(e[nan]))
    bad = np.nonzero(a[~nan].view(bits) != e[~nan].view(bits))[0]
    assert bad.size == 0, (f"{bad.size} differ, first {bad[:5]}: got {a[~nan][bad[:5]]!r}, "
                           f"expected {e[~nan][bad[:5]]!r}")


def all_halves():
    return np.arange(1 << 16, dtype=np.uint32).astype(np.uint16).view(np.float16)


def random_halves(n, seed):
    rng = np.random.default_rng(seed)
    return as_half(rng.standard_normal(n) * 300.0)


@tack.kernel
def copy(x, out):
    for i in range(x.shape[0]):
        out[i] = x[i]


@tack.kernel
def fma_like(x, y, z, out):
    for i in range(x.shape[0]):
        out[i] = x[i] * y[i] + z[i]


@tack.kernel
def four_ops(x, y, add, sub, mul, div):
    for i in range(x.shape[0]):
        add[i] = x[i] + y[i]
        sub[i] = x[i] - y[i]
        mul[i] = x[i] * y[i]
        div[i] = x[i] / y[i]


@tack.kernel
def sqrt_of(x, out):
    for i in range(x.shape[0]):
        out[i] = tack.math.sqrt(x[i])


@tack.kernel
def add_arrays(x, y, out):
    for i in range(x.shape[0]):
        out[i] = x[i] + y[i]


@tack.kernel
def scale(x, out, a):
    for i in range(x.shape[0]):
        out[i] = x[i] * a


@tack.kernel
def round_half(x, out):
    for i in range(x.shape[0]):
        out[i] = tack.f16(x[i])


@tack.kernel
def round_half_numpy(x, out):
    for i in range(x.shape[0]):
        out[i] = np.float16(x[i]) + x[i] * 0.0


@tack.kernel
def half_literals(out):
    for i in range(out.shape[0]):
        if i == 0:
            out[i] = tack.f16(0.1)
        elif i == 1:
            out[i] = tack.f16(70000)
        elif i == 2:
            out[i] = tack.f16(1.0004882812509095)  # 1 + 2**-11 + 2**-40
        elif i == 3:
            out[i] = tack.f16(-0.0)
        else:
            out[i] = tack.f16(i) + 0.5


@tack.kernel
def store_literals(out):
    for i in range(out.shape[0]):
        if i == 0:
            out[i] = 0.1
        elif i == 1:
            out[i] = 1.0004882812509095  # 1 + 2**-11 + 2**-40: rounded once, up
        elif i == 2:
            out[i] = 65520
        else:
            out[i] = -0.0


@tack.kernel
def type_of_load(x, out):
    for i in range(x.shape[0]):
        # An f16 element is an f32 value: f32 arithmetic, not f16's.
        out[i] = x[i] * 4096.0 + 1.0 - x[i] * 4096.0


@tack.kernel
def copy_2d(x, out):
    for i in range(x.shape[0]):
        for j in range(x.shape[1]):
            out[i, j] = x[i, j] * 2.0


@tack.kernel
def sum_into_f32(x, acc):
    for i in range(x.shape[0]):
        tack.atomic_add(acc, 0, x[i])


@tack.kernel
def atomic_add_f16(x, acc):
    for i in range(x.shape[0]):
        tack.atomic_add(acc, 0, x[i])


@tack.kernel
def atomic_max_f16(x, acc):
    for i in range(x.shape[0]):
        tack.atomic_max(acc, 0, x[i])


@tack.kernel
def atomic_exchange_f16(x, acc):
    for i in range(x.shape[0]):
        x[i] = tack.atomic_exchange(acc, 0, 1.0)


@tack.kernel
def shifted(x, out):
    for i in range(x.shape[0] - 1):
        out[i] = x[i + 1]


@tack.kernel
def vector_half(v, out):
    for i in range(out.shape[0]):
        out[i] = tack.f16(v[i]).x


@tack.device_class
class HalfField:
    factor = 0.5

    def __init__(self, data, offset):
        self.data = data
        self.offset = offset

    @tack.func
    def at(self, i):
        return self.data[i] * self.factor + self.offset


@tack.kernel
def sample_field(f, out):
    for i in range(out.shape[0]):
        out[i] = f.at(i)


@tack.kernel
def grid(x, out):
    for i, j in tack.ndindex(x.shape[0], x.shape[1]):
        out[i, j] = x[i, j] + x[j, i]


# ---- the dtype --------------------------------------------------------------

def test_dtype_object():
    assert "f16" in tack.__all__
    assert tack.f16.name == "f16" and str(tack.f16) == "f16"
    assert tack.f16.itemsize == 2
    assert tack.f16.numpy == np.dtype(np.float16)
    v = tack.f16(0.1)
    assert isinstance(v, np.float16) and v == np.float16(0.1)


@pytest.mark.parametrize("spelling", [tack.f16, "f16", "float16", np.float16, np.dtype("e")])
def test_empty_zeros_array(device, spelling):
    e = tack.empty((3, 5), dtype=spelling, device=device)
    assert e.dtype == tack.f16 and e.shape == (3, 5) and e.numpy().dtype == np.float16
    z = tack.zeros((7,), dtype=spelling, device=device)
    assert z.numpy().dtype == np.float16
    assert_same(z.numpy(), np.zeros(7, np.float16))
    src = np.array(EDGES)
    a = tack.array(src, dtype=spelling, device=device)
    assert a.dtype == tack.f16
    assert_same(a.numpy(), as_half(src))
    # A float16 NumPy array keeps its dtype; buffers of format 'e' too.
    h = random_halves(33, 1)
    b = tack.array(h, device=device)
    assert b.dtype == tack.f16
    assert_same(b.numpy(), h)
    assert memoryview(b.numpy()).format == "e"


def test_copyto_and_buffer(device):
    h = random_halves(100, 2)
    a = tack.empty((100,), dtype=tack.f16, device=device)
    tack.copyto(a, h)
    assert_same(a.numpy(), h)
    if device.host_memory:
        m = memoryview(a)
        assert m.format == "e" and m.itemsize == 2


# ---- loads and stores -------------------------------------------------------

def test_every_half_loads_exactly_as_f32():
    h = all_halves()
    out = np.zeros(h.size, np.float32)
    copy(h, out)
    assert_same(out, h.astype(np.float32))


def test_every_half_round_trips():
    h = all_halves()
    out = np.full(h.size, 7, np.float16)
    copy(h, out)
    assert_same(out, h)


@pytest.mark.parametrize("src_dtype", [np.float32, np.float64])
def test_store_rounds_once_to_nearest_even(src_dtype):
    rng = np.random.default_rng(3)
    x = np.concatenate([np.array(EDGES), rng.standard_normal(5000) * 20000.0,
                        rng.standard_normal(5000) * 1e-5]).astype(src_dtype)
    out = np.zeros(x.size, np.float16)
    copy(x, out)
    assert_same(out, as_half(x))


def test_f64_ties_are_not_double_rounded():
    # Each value lies 2**-40 (relative) past a tie between two halves: f32
    # would round it onto the tie, and the tie to even the wrong way.
    h = all_halves()
    h = h[np.isfinite(h) & (np.abs(h) < 65504)].astype(np.float64)
    step = np.abs(np.nextafter(h.astype(np.float16), np.float16(np.inf)).astype(np.float64) - h)
    x = (h + step / 2) * (1 + 2.0**-40)
    out = np.zeros(x.size, np.float16)
    copy(x, out)
    assert_same(out, as_half(x))
    assert not np.array_equal(as_half(x.astype(np.float32)), as_half(x))  # the trap is real


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int16, np.int32, np.int64, np.uint64,
                                   np.bool_])
def test_store_integers(dtype):
    rng = np.random.default_rng(4)
    if dtype == np.bool_:
        x = rng.integers(0, 2, 200).astype(np.bool_)
    else:
        info = np.iinfo(dtype)
        x = np.concatenate([rng.integers(info.min, info.max, 100, dtype=dtype, endpoint=True),
                            np.array([min(max(v, int(info.min)), int(info.max))
                                      for v in (0, 1, 2049, 65504, 65519, 65520, 70000)], dtype)])
    out = np.zeros(x.size, np.float16)
    copy(x, out)
    assert_same(out, as_half(x.astype(np.float64)))


def test_literals_stored_round_once():
    out = np.zeros(5, np.float16)
    store_literals(out)
    assert_same(out, as_half([0.1, 1.0 + 2.0**-11 + 2.0**-40, 65520.0, -0.0, -0.0]))


def test_empty_arrays():
    x = np.zeros(0, np.float16)
    out = np.zeros(0, np.float16)
    copy(x, out)
    fma_like(x, x, x, out)
    assert out.size == 0


def test_two_dimensional():
    x = random_halves(7 * 9, 5).reshape(7, 9)
    out = np.zeros((7, 9), np.float16)
    copy_2d(x, out)
    assert_same(out, (x.astype(np.float32) * np.float32(2.0)).astype(np.float16))


# ---- arithmetic in f32 ------------------------------------------------------

def test_arithmetic_in_f32_rounded_on_store():
    x, y, z = random_halves(4000, 6), random_halves(4000, 7), random_halves(4000, 8)
    out = np.zeros(x.size, np.float16)
    fma_like(x, y, z, out)
    f = [a.astype(np.float32) for a in (x, y, z)]
    assert_same(out, as_half(f[0] * f[1] + f[2]))


def test_four_operations_with_edges():
    x = as_half(EDGES * 3)
    y = as_half(np.roll(np.array(EDGES * 3), 7))
    outs = [np.zeros(x.size, np.float16) for _ in range(4)]
    four_ops(x, y, *outs)
    a, b = x.astype(np.float32), y.astype(np.float32)
    with np.errstate(all="ignore"):
        expected = [a + b, a - b, a * b, a / b]
    for got, want in zip(outs, expected):
        assert_same(got, as_half(want))


def test_sqrt():
    x = np.abs(random_halves(3000, 9))
    out = np.zeros(x.size, np.float16)
    sqrt_of(x, out)
    assert_same(out, as_half(np.sqrt(x.astype(np.float32))))


def test_element_value_is_f32():
    # In f16, x*4096 + 1 loses the 1 for |x| >= 2; in f32 it does not.
    x = as_half([3.0, -7.5, 100.0, 0.25])
    out = np.zeros(4, np.float32)
    type_of_load(x, out)
    f = x.astype(np.float32)
    assert_same(out, f * np.float32(4096) + np.float32(1) - f * np.float32(4096))
    assert (out == 1.0).all()


@pytest.mark.parametrize("other, out_dtype", [(np.float16, np.float16), (np.float32, np.float32),
                                              (np.float64, np.float64), (np.int8, np.float32),
                                              (np.int16, np.float32), (np.int32, np.float64),
                                              (np.int64, np.float64), (np.uint8, np.float32)])
def test_mixed_arrays(other, out_dtype):
    x = random_halves(500, 10)
    rng = np.random.default_rng(11)
    if np.dtype(other).kind == "f":
        y = (rng.standard_normal(500) * 50).astype(other)
    else:
        y = rng.integers(-100 if np.dtype(other).kind == "i" else 0, 100, 500).astype(other)
    out = np.zeros(500, out_dtype)
    add_arrays(x, y, out)
    # An f16 element is an f32 value; promotion is NumPy's from there
    # (f32 + i32 is f64, as NumPy's float16 + int32).
    value_type = np.result_type(np.float32, other)
    expected = x.astype(value_type) + y.astype(value_type)
    assert_same(out, as_half(expected) if out_dtype == np.float16 else expected.astype(out_dtype))


def test_python_and_numpy_float_scalars():
    x = random_halves(300, 12)
    out = np.zeros(300, np.float16)
    scale(x, out, 0.1)  # a Python float is f32 here (no f64 array)
    assert_same(out, as_half(x.astype(np.float32) * np.float32(0.1)))
    # A numpy.float16 scalar is a float like any other: f32 in the kernel,
    # its value exact.
    scale(x, out, np.float16(0.1))
    assert_same(out, as_half(x.astype(np.float32) * np.float32(np.float16(0.1))))
    sigs = [v[0] for v in scale.variants()]
    assert (("f16", True, False, None), ("f16", True, False, None), ("f32", False, False, None)) in sigs


def test_variant_key_names_f16():
    x = random_halves(10, 13)
    out32 = np.zeros(10, np.float32)
    copy(x, out32)
    sigs = [v[0] for v in copy.variants()]
    assert (("f16", True, False, None), ("f32", True, False, None)) in sigs


def test_template_class_with_f16_array(device):
    h = random_halves(40, 16)
    out = np.zeros(40, np.float16)
    sample_field(HalfField(tack.array(h, device=device), 0.25), out)
    assert_same(out, as_half(h.astype(np.float32) * np.float32(0.5) + np.float32(0.25)))
    assert any("f16" in t for v in sample_field.variants() for t in v[2])


def test_ndindex_2d():
    x = random_halves(12 * 12, 17).reshape(12, 12)
    out = np.zeros((12, 12), np.float16)
    grid(x, out)
    assert_same(out, as_half(x.astype(np.float32) + x.T.astype(np.float32)))


# ---- tack.f16(x) --------------------------------------------------------------

@pytest.mark.parametrize("src_dtype", [np.float32, np.float64, np.int64])
def test_f16_cast_rounds_and_gives_f32(src_dtype):
    rng = np.random.default_rng(14)
    if src_dtype == np.int64:
        x = np.concatenate([rng.integers(-70000, 70000, 500), [65519, 65520, -65520, 2049]])
    else:
        x = np.concatenate([np.array(EDGES), rng.standard_normal(2000) * 1000])
    x = x.astype(src_dtype)
    out = np.zeros(x.size, np.float32)
    round_half(x, out)
    assert_same(out, as_half(x.astype(np.float64) if src_dtype == np.int64 else x)
                .astype(np.float32))
    # Into an f64 array: the half's value, exactly.
    out64 = np.zeros(x.size, np.float64)
    round_half(x, out64)
    assert_same(out64, out.astype(np.float64))


def test_numpy_float16_spelling():
    x = np.array(EDGES, np.float32)
    out = np.zeros(x.size, np.float32)
    round_half_numpy(x, out)
    with np.errstate(all="ignore"):
        expected = as_half(x).astype(np.float32) + x * np.float32(0.0)
    assert_same(out, expected)


def test_f16_of_literals_folds_exactly():
    out = np.zeros(8, np.float32)
    half_literals(out)
    expected = [np.float16(0.1), np.inf, as_half(1.0 + 2.0**-11 + 2.0**-40), -0.0]
    expected = np.array(expected + [i + 0.5 for i in range(4, 8)], np.float32)
    assert_same(out, expected)


# ---- refusals ------------------------------------------------------------------

@pytest.mark.parametrize("kernel", [atomic_add_f16, atomic_max_f16, atomic_exchange_f16],
                         ids=["add", "max", "exchange"])
def test_atomics_on_f16_are_refused(kernel):
    x = as_half([1.0, 2.0, 3.0])
    acc = as_half([5.0])
    with pytest.raises(tack.CompileError) as ei:
        kernel(x, acc)
    assert name_in_message(ei, "acc"), str(ei.value)
    assert "f16" in str(ei.value)
    assert_same(acc, as_half([5.0]))
    assert_same(x, as_half([1.0, 2.0, 3.0]))


def test_reduction_of_f16_into_f32_atomics():
    x = as_half(np.arange(-200, 300) / 4.0)  # quarters: every partial sum is exact in f32
    acc = np.zeros(1, np.float32)
    sum_into_f32(x, acc)
    assert acc[0] == np.float32(x.astype(np.float64).sum())


def test_no_vectors_of_f16():
    with pytest.raises(tack.CompileError) as ei:
        vector_half(np.zeros((4, 3), np.float32), np.zeros(4, np.float32))
    assert "f16" in str(ei.value)


def test_texture_of_f16_refused():
    # Half data becomes an f32 texture (as integers do); an f16 one is refused.
    with pytest.raises(ValueError):
        tack.Texture3D(np.zeros((2, 2, 2), np.float16), dtype=tack.f16)


def test_debug_mode(device):
    before = tack.get_debug()
    tack.set_debug(True)
    try:
        x = random_halves(50, 15)
        out = np.zeros(50, np.float16)
        shifted(x, out)
        assert_same(out[:-1], x[1:])
        assert out[-1] == 0
    finally:
        tack.set_debug(before)


# ---- the disk cache -------------------------------------------------------------

@pytest.mark.cpu_only
def test_disk_cache_round_trip(tmp_path):
    child = tmp_path / "child.py"
    child.write_text(textwrap.dedent('''\
        import json
        import numpy as np
        import tack

        @tack.kernel
        def halve(x, out):
            for i in range(x.shape[0]):
                out[i] = tack.f16(x[i]) * 0.5

        x = np.array([1.0 + 2.0**-11 + 2.0**-40, 65519.99, 3e-8, -0.0], np.float64)
        out = np.zeros(4, np.float16)
        halve(x, out)
        print(json.dumps({"stats": tack.stats(), "bits": out.view(np.uint16).tolist(),
                          "key": [list(map(list, v[0])) for v in halve.variants()]}))
        '''))
    env = {k: v for k, v in os.environ.items() if not k.startswith("TACK_")}
    env.update(TACK_CACHE="write", TACK_CACHE_DIR=str(tmp_path / "cache"))
    runs = []
    import json
    for _ in range(2):
        p = subprocess.run([sys.executable, str(child)], env=env, cwd=str(tmp_path),
                           capture_output=True, text=True)
        assert p.returncode == 0, p.stderr
        runs.append(json.loads(p.stdout.strip().splitlines()[-1]))
    assert runs[0]["stats"]["compiles"] >= 1 and runs[1]["stats"]["compiles"] == 0
    assert runs[1]["stats"]["disk_hits"] >= 1
    x = np.array([1.0 + 2.0**-11 + 2.0**-40, 65519.99, 3e-8, -0.0])
    expected = as_half(as_half(x).astype(np.float32) * np.float32(0.5))
    assert runs[0]["bits"] == runs[1]["bits"] == expected.view(np.uint16).tolist()
    assert runs[1]["key"] == [[["f64", True, False, None], ["f16", True, False, None]]]
