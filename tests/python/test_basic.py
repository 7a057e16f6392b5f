"""The quickstart flow, every dtype and length, 2-D kernels, devices and the
variant keys of a plain kernel."""
import numpy as np
import pytest

import tack
from conftest import DTYPES, random_values, store_cast, tack_dtype, assert_bitwise_equal


@tack.kernel
def vector_add(a, b, out):
    for i in range(out.shape[0]):
        out[i] = a[i] + b[i]


@tack.kernel
def scale(x, out, a):
    for i in range(x.shape[0]):
        out[i] = x[i] * a


@tack.kernel
def add_scalar(x, out, a):
    for i in range(x.shape[0]):
        out[i] = x[i] + a


@tack.kernel
def mul_scalar(x, out, a):
    for i in range(x.shape[0]):
        out[i] = x[i] * a


@tack.kernel
def add_scalar_2d(x, out, a):
    for i in range(x.shape[0]):
        for j in range(x.shape[1]):
            out[i, j] = x[i, j] + a


@tack.kernel
def mul_scalar_2d(x, out, a):
    for i in range(x.shape[0]):
        for j in range(x.shape[1]):
            out[i, j] = x[i, j] * a


# ---- arrays and the quickstart ---------------------------------------------

def test_dtype_names_exist():
    for name in ("bool_", "i8", "i16", "i32", "i64", "u8", "u16", "u32",
                 "u64", "f32", "f64"):
        assert hasattr(tack, name), name


def test_empty_defaults_to_f32_and_attributes():
    x = tack.empty((1024,))
    assert x.shape == (1024,)
    assert x.dtype == tack.f32
    assert x.ndim == 1
    assert x.size == 1024
    assert x.device == tack.get_default_device()
    assert x.numpy().dtype == np.float32
    assert x.numpy().shape == (1024,)


def test_zeros_2d_attributes():
    z = tack.zeros((3, 5), dtype=tack.i64)
    assert z.shape == (3, 5)
    assert z.dtype == tack.i64
    assert z.ndim == 2
    assert z.size == 15
    n = z.numpy()
    assert n.dtype == np.int64
    assert n.shape == (3, 5)
    assert (n == 0).all()


@pytest.mark.parametrize("name", list(DTYPES))
def test_array_roundtrip_every_dtype(name):
    src = random_values(DTYPES[name], 37, seed=1)
    t = tack.array(src, dtype=tack_dtype(name))
    assert t.dtype == tack_dtype(name)
    assert t.shape == (37,)
    back = t.numpy()
    assert back.dtype == np.dtype(DTYPES[name])
    np.testing.assert_array_equal(back, src)


def test_array_infers_dtype_from_numpy():
    t = tack.array(np.arange(6, dtype=np.int16).reshape(2, 3))
    assert t.dtype == tack.i16
    assert t.shape == (2, 3)
    np.testing.assert_array_equal(t.numpy(), np.arange(6, dtype=np.int16).reshape(2, 3))


def test_copyto_and_numpy():
    x = tack.empty((1024,))
    src = np.arange(1024, dtype=np.float32)
    tack.copyto(x, src)
    np.testing.assert_array_equal(x.numpy(), src)
    # numpy() gives the data as it is now, not a stale snapshot
    tack.copyto(x, src * 3)
    np.testing.assert_array_equal(x.numpy(), src * 3)


def test_quickstart_scale_on_tack_arrays():
    x = tack.empty((1024,))
    tack.copyto(x, np.arange(1024, dtype=np.float32))
    out = tack.zeros((1024,))
    scale(x, out, 2.0)
    expected = np.arange(1024, dtype=np.float32) * np.float32(2.0)
    assert_bitwise_equal(out.numpy(), expected)


def test_vector_add_tack_arrays():
    n = 1000
    a_np = random_values(np.float32, n, seed=2)
    b_np = random_values(np.float32, n, seed=3)
    a, b = tack.array(a_np), tack.array(b_np)
    out = tack.zeros((n,))
    vector_add(a, b, out)
    assert_bitwise_equal(out.numpy(), a_np + b_np)


def test_vector_add_numpy_arrays():
    n = 1000
    a = random_values(np.float64, n, seed=4)
    b = random_values(np.float64, n, seed=5)
    out = np.zeros(n)
    vector_add(a, b, out)
    assert_bitwise_equal(out, a + b)
    # the inputs are untouched
    assert_bitwise_equal(a, random_values(np.float64, n, seed=4))


def test_vector_add_mixed_tack_and_numpy():
    n = 257
    a_np = random_values(np.float32, n, seed=6)
    b_np = random_values(np.float32, n, seed=7)
    out = np.zeros(n, dtype=np.float32)
    vector_add(tack.array(a_np), b_np, out)
    assert_bitwise_equal(out, a_np + b_np)


def test_repeated_calls_reuse_and_stay_correct():
    x = np.arange(100, dtype=np.float32)
    out = np.zeros(100, dtype=np.float32)
    for k in range(20):
        scale(x, out, float(k))
        assert_bitwise_equal(out, x * np.float32(k))


# ---- every dtype, every length ----------------------------------------------

LENGTHS = [0, 1, 7, 1000, 10**6]


def scalar_for(name):
    """The scalar each dtype is combined with and the NumPy scalar of the type
    Tack gives it (Python int -> i32, float -> f32/f64 following the arrays)."""
    if name == "bool":
        return -1, np.int32(-1)
    if name == "f32":
        return 2.5, np.float32(2.5)
    if name == "f64":
        return 2.5, np.float64(2.5)
    return 3, np.int32(3)


def expected_binop(op, x, scalar_np, out_dtype):
    with np.errstate(all="ignore"):
        value = x + scalar_np if op == "add" else x * scalar_np
    return store_cast(value, out_dtype)


@pytest.mark.parametrize("name", list(DTYPES))
@pytest.mark.parametrize("op", ["add", "mul"])
def test_every_dtype_every_length_1d(name, op):
    dt = DTYPES[name]
    scalar, scalar_np = scalar_for(name)
    kern = add_scalar if op == "add" else mul_scalar
    for n in LENGTHS:
        x = random_values(dt, n, seed=n + 11)
        out = np.zeros(n, dtype=dt)
        kern(x, out, scalar)
        expected = expected_binop(op, x, scalar_np, dt)
        assert_bitwise_equal(out, expected)


@pytest.mark.parametrize("name", list(DTYPES))
def test_every_dtype_tack_arrays(name):
    dt = DTYPES[name]
    scalar, scalar_np = scalar_for(name)
    for n in (0, 1, 7, 1000):
        x_np = random_values(dt, n, seed=n + 21)
        x = tack.array(x_np, dtype=tack_dtype(name))
        out = tack.zeros((n,), dtype=tack_dtype(name))
        add_scalar(x, out, scalar)
        assert_bitwise_equal(out.numpy(), expected_binop("add", x_np, scalar_np, dt))


SHAPES_2D = [(0, 5), (5, 0), (1, 1), (3, 7), (64, 33), (300, 301)]


@pytest.mark.parametrize("name", list(DTYPES))
@pytest.mark.parametrize("op", ["add", "mul"])
def test_every_dtype_2d(name, op):
    dt = DTYPES[name]
    scalar, scalar_np = scalar_for(name)
    kern = add_scalar_2d if op == "add" else mul_scalar_2d
    for shape in SHAPES_2D:
        size = shape[0] * shape[1]
        x = random_values(dt, size, seed=size + 31).reshape(shape)
        out = np.zeros(shape, dtype=dt)
        kern(x, out, scalar)
        assert_bitwise_equal(out.reshape(-1),
                             expected_binop(op, x, scalar_np, dt).reshape(-1))


def test_2d_tack_arrays():
    x_np = random_values(np.float32, 12 * 9, seed=41).reshape(12, 9)
    x = tack.array(x_np)
    out = tack.zeros((12, 9))
    mul_scalar_2d(x, out, 0.5)
    assert out.numpy().shape == (12, 9)
    assert_bitwise_equal(out.numpy().reshape(-1),
                         (x_np * np.float32(0.5)).reshape(-1))


# ---- devices ---------------------------------------------------------------

def test_device_identity():
    assert tack.device("cpu") is tack.device("cpu")


def test_device_with_options_is_new():
    one = tack.device("cpu", num_threads=1)
    assert one is not tack.device("cpu")
    assert tack.device("cpu", num_threads=1) is not one


def test_set_get_default_device(restore_default_device):
    tack.set_default_device("cpu")
    assert tack.get_default_device() is tack.device("cpu")
    one = tack.device("cpu", num_threads=1)
    tack.set_default_device(one)
    assert tack.get_default_device() is one
    tack.set_default_device("cpu")
    assert tack.get_default_device() is tack.device("cpu")


@tack.kernel
def one_thread_kernel(x, out, a):
    for i in range(x.shape[0]):
        out[i] = x[i] * a + 1.0


def test_single_thread_device_same_results(restore_default_device):
    n = 100_003
    x = random_values(np.float32, n, seed=51)
    out_default = np.zeros(n, dtype=np.float32)
    one_thread_kernel(x, out_default, 1.5)

    one = tack.device("cpu", num_threads=1)
    tack.set_default_device(one)
    out_one = np.zeros(n, dtype=np.float32)
    one_thread_kernel(x, out_one, 1.5)
    tack.set_default_device("cpu")

    expected = x * np.float32(1.5) + np.float32(1.0)
    assert_bitwise_equal(out_default, expected)
    assert_bitwise_equal(out_one, expected)
    # the new device compiled its own variant; the shared one kept its own
    assert len(one_thread_kernel.variants(device=one)) == 1
    assert len(one_thread_kernel.variants(device=tack.device("cpu"))) == 1


def test_switching_default_device_keeps_variants(restore_default_device):
    x = np.arange(16, dtype=np.float32)
    out = np.zeros(16, dtype=np.float32)
    tack.set_default_device("cpu")
    scale(x, out, 2.0)
    before_variants = scale.variants()
    compiles = tack.stats()["compiles"]
    tack.set_default_device(tack.device("cpu", num_threads=1))
    tack.set_default_device("cpu")
    scale(x, out, 2.0)
    assert tack.stats()["compiles"] == compiles
    assert scale.variants() == before_variants


# ---- stats and variant keys -------------------------------------------------

@tack.kernel
def keyed_scale(x, out, a):
    for i in range(x.shape[0]):
        out[i] = x[i] * a


def check_key_shape(key):
    assert isinstance(key, tuple) and len(key) == 5
    param_sig, vec_sig, tmpl_key, shape_sig, disjoint = key
    strided_sig = key.strided_sig  # beyond the five, by name
    assert isinstance(param_sig, tuple)
    for entry in param_sig:
        assert isinstance(entry, tuple) and len(entry) == 4
        assert isinstance(entry[0], str)
    assert disjoint in (True, False)
    assert isinstance(strided_sig, tuple)
    return key


def test_stats_counts_compiles():
    s = tack.stats()
    assert isinstance(s, dict)
    assert "compiles" in s
    before = s["compiles"]

    @tack.kernel
    def fresh(x, out):
        for i in range(x.shape[0]):
            out[i] = x[i] + 1.0

    x = np.zeros(4, dtype=np.float32)
    out = np.zeros(4, dtype=np.float32)
    fresh(x, out)
    assert tack.stats()["compiles"] == before + 1
    fresh(x, out)
    fresh(np.zeros(9, dtype=np.float32), np.zeros(9, dtype=np.float32))
    assert tack.stats()["compiles"] == before + 1
    np.testing.assert_array_equal(out, np.ones(4, dtype=np.float32))


def test_variant_table_of_scale():
    """The reference's worked example, call by call."""
    def f32(n):
        return np.arange(n, dtype=np.float32)

    def f64(n):
        return np.arange(n, dtype=np.float64)

    compiles0 = tack.stats()["compiles"]
    keyed_scale(f32(8), np.zeros(8, np.float32), 2.0)
    keyed_scale(f32(16), np.zeros(16, np.float32), 2.0)
    keyed_scale(f32(32), np.zeros(32, np.float32), 2.0)
    assert len(keyed_scale.variants()) == 1
    keyed_scale(f32(8), np.zeros(8, np.float32), 3.5)
    assert len(keyed_scale.variants()) == 1
    assert tack.stats()["compiles"] == compiles0 + 1

    (key,) = keyed_scale.variants()
    param_sig, vec_sig, tmpl_key, shape_sig, disjoint = check_key_shape(key)
    strided_sig = key.strided_sig
    assert [p[:3] for p in param_sig] == [("f32", True, False), ("f32", True, False),
                                          ("f32", False, False)]
    assert shape_sig == ()
    assert disjoint is True
    assert strided_sig == ()

    def scalar_types():
        return {tuple(p[0] for p in k[0]) for k in keyed_scale.variants()}

    out = np.zeros(8, np.float32)
    keyed_scale(f32(8), out, 3)
    assert len(keyed_scale.variants()) == 2
    assert ("f32", "f32", "i32") in scalar_types()
    # f32 * i32 -> f64, stored back as f32
    assert_bitwise_equal(out, (f32(8).astype(np.float64) * 3).astype(np.float32))

    keyed_scale(f32(8), out, 2**40)
    assert len(keyed_scale.variants()) == 3
    assert ("f32", "f32", "i64") in scalar_types()

    out64 = np.zeros(8)
    keyed_scale(f64(8), out64, 2.0)
    assert len(keyed_scale.variants()) == 4
    assert ("f64", "f64", "f64") in scalar_types()
    assert_bitwise_equal(out64, f64(8) * 2.0)

    x = f32(8)
    keyed_scale(x, x, 2.0)
    assert len(keyed_scale.variants()) == 5
    assert sorted(k[4] for k in keyed_scale.variants()) == [False, True, True, True, True]
    assert_bitwise_equal(x, f32(8) * np.float32(2.0))

    keyed_scale(f32(8), out, 2**63)
    assert ("f32", "f32", "u64") in scalar_types()
    keyed_scale(f32(8), out, -2**63)
    assert ("f32", "f32", "i64") in scalar_types()
    keyed_scale(f32(8), out, True)
    assert ("f32", "f32", "bool") in scalar_types()
    assert_bitwise_equal(out, f32(8))
    for k in keyed_scale.variants():
        check_key_shape(k)


@tack.kernel
def scale_no_respecialize(x, out, a):
    for i in range(x.shape[0]):
        out[i] = x[i] * a


def test_lengths_do_not_add_variants():
    for n in (1, 2, 3, 8, 100, 1000, 4097):
        x = np.arange(n, dtype=np.float64)
        out = np.zeros(n)
        scale_no_respecialize(x, out, 0.25)
        assert_bitwise_equal(out, x * 0.25)
    assert len(scale_no_respecialize.variants()) == 1


@tack.kernel
def reverse_baked(x, out):
    for i in range(x.shape[0]):
        out[i] = x[x.shape[0] - 1 - i]


@tack.kernel
def reverse_scalar(x, out, n):
    for i in range(n):
        out[i] = x[n - 1 - i]


def test_baked_dimension_variants():
    for n in (8, 16, 32):
        x = np.arange(n, dtype=np.float32)
        out = np.zeros(n, dtype=np.float32)
        reverse_baked(x, out)
        np.testing.assert_array_equal(out, x[::-1])
        out2 = np.zeros(n, dtype=np.float32)
        reverse_scalar(x, out2, n)
        np.testing.assert_array_equal(out2, x[::-1])
    assert len(reverse_baked.variants()) == 3
    assert sorted(k[3] for k in reverse_baked.variants()) == [(8,), (16,), (32,)]
    assert len(reverse_scalar.variants()) == 1


@tack.kernel
def copy_2d(a, out):
    for i in range(a.shape[0]):
        for j in range(a.shape[1]):
            out[i, j] = a[i, j]


def test_2d_row_length_is_keyed():
    """a[i, j] bakes the row stride: a new row length is a new variant, a new
    row count is not."""
    for shape in ((4, 8), (16, 8), (4, 9)):
        a = random_values(np.float32, shape[0] * shape[1], seed=61).reshape(shape)
        out = np.zeros(shape, dtype=np.float32)
        copy_2d(a, out)
        np.testing.assert_array_equal(out, a)
    assert len(copy_2d.variants()) == 2
