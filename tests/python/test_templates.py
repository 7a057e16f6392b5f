"""Template classes (@tack.device_class): conversion, keys, retirement.

The reference's template table is reproduced row by row, with the number of
variants and IR templates checked after each call and every result checked
against NumPy.
"""
import gc
import logging
import math
import os

import numpy as np
import pytest

import tack
from conftest import SANITIZED

# The conformance suite: every test runs on each device (conftest.py).
pytestmark = pytest.mark.every_device


def counts(kernel):
    """(variants, IR templates) of a kernel on the default device."""
    return len(kernel.variants()), len(kernel.ir_templates())


@tack.device_class
class Field:
    factor = 2.0                      # class constant: baked into code

    def __init__(self, data, offset):
        self.data = data              # array attribute: dtype, full shape, width keyed
        self.offset = offset          # instance scalar: a runtime parameter

    @tack.func
    def at(self, i):
        return self.data[i] * self.factor + self.offset


def make_field_class():
    """A class equivalent to Field, but a new one on every call."""
    @tack.device_class
    class LocalField:
        factor = 2.0

        def __init__(self, data, offset):
            self.data = data
            self.offset = offset

        @tack.func
        def at(self, i):
            return self.data[i] * self.factor + self.offset

    return LocalField


def make_sample():
    @tack.kernel
    def sample(f, out):
        for i in range(out.shape[0]):
            out[i] = f.at(i)
    return sample


def check_sample(kernel, f, factor):
    out = np.zeros(f.data.shape[0], np.float32)
    kernel(f, out)
    expected = (f.data.astype(np.float64) * factor + f.offset).astype(np.float32)
    np.testing.assert_allclose(out, expected, rtol=1e-6)


def test_reference_table():
    sample = make_sample()
    x16 = np.arange(16, dtype=np.float32)
    s = Field(x16, 1.0)

    check_sample(sample, s, 2.0)                        # first call
    assert counts(sample) == (1, 1)

    s.offset = 5.0                                      # a new offset value
    check_sample(sample, s, 2.0)
    assert counts(sample) == (1, 1)

    s.data = np.arange(32, dtype=np.float32) * 0.5      # data of another length
    check_sample(sample, s, 2.0)
    assert counts(sample) == (2, 2)

    s.factor = 3.0                                      # shadows the constant
    check_sample(sample, s, 3.0)
    assert counts(sample) == (3, 3)

    Local = make_field_class()                          # another class identity
    t = Local(s.data, 5.0)
    check_sample(sample, t, 2.0)
    assert counts(sample) == (4, 4)

    del t, Local                                        # ... collected
    gc.collect()
    assert counts(sample) == (3, 3)

    # What is left still runs, and the dropped key compiles afresh.
    check_sample(sample, s, 3.0)
    assert counts(sample) == (3, 3)
    Local = make_field_class()
    check_sample(sample, Local(s.data, -1.0), 2.0)
    assert counts(sample) == (4, 4)


def test_variant_keys_describe_templates():
    sample = make_sample()
    check_sample(sample, Field(np.arange(8, dtype=np.float32), 1.0), 2.0)
    (params, vec, tmpl, shape, disjoint), = sample.variants()
    assert params[0] == ("template", False, False, None)
    assert len(tmpl) == 1 and isinstance(tmpl[0], str)
    assert "factor" in tmpl[0] and "offset" in tmpl[0] and "data" in tmpl[0]


def test_plain_kernels_have_empty_template_key():
    @tack.kernel
    def double(x, out):
        for i in range(x.shape[0]):
            out[i] = x[i] * 2.0

    x = np.arange(4, dtype=np.float32)
    out = np.zeros_like(x)
    double(x, out)
    np.testing.assert_array_equal(out, x * 2)
    assert double.variants()[0][2] == ()


@tack.device_class
class Const:
    c = 1

    def __init__(self, data):
        self.data = data

    @tack.func
    def get(self, i):
        return self.data[i] + self.c


@tack.device_class
class Sign:
    c = 0.0

    def __init__(self, n):
        self.n = n

    @tack.func
    def sign(self):
        return tack.math.copysign(1.0, self.c)


def test_int_and_float_constants_are_keyed_apart():
    @tack.kernel
    def add(t, out):
        for i in range(out.shape[0]):
            out[i] = t.get(i)

    x = np.arange(8, dtype=np.float64)
    try:
        for c in (1, 1.0, 1):
            Const.c = c
            out = np.zeros(8)
            add(Const(x), out)
            np.testing.assert_array_equal(out, x + 1)
    finally:
        Const.c = 1
    keys = [v[2] for v in add.variants()]
    assert len(keys) == 2 and keys[0] != keys[1]


def test_signed_zero_constants_are_keyed_apart():
    @tack.kernel
    def signs(t, out):
        for i in range(out.shape[0]):
            out[i] = t.sign()

    try:
        for c in (0.0, -0.0, 0.0):
            Sign.c = c
            out = np.zeros(4)
            signs(Sign(4), out)
            np.testing.assert_array_equal(out, np.full(4, math.copysign(1.0, c)))
        assert len(signs.variants()) == 2
    finally:
        Sign.c = 0.0


def test_nan_constants_share_a_variant():
    @tack.device_class
    class Fill:
        c = float("nan")

        def __init__(self, n):
            self.n = n

    @tack.kernel
    def fill(t, out):
        for i in range(out.shape[0]):
            out[i] = t.c

    for _ in range(2):
        Fill.c = float("nan")       # a new NaN object, not equal to the last
        out = np.zeros(4)
        fill(Fill(4), out)
        assert np.isnan(out).all()
    assert len(fill.variants()) == 1


@tack.device_class
class Inner:
    def __init__(self, data, bias):
        self.data = data
        self.bias = bias


@tack.device_class
class Outer:
    scale = 3.0

    def __init__(self, inner, count):
        self.inner = inner
        self.count = count

    @tack.func
    def at(self, i):
        return self.inner.data[i] * self.scale + self.inner.bias


def test_nested_templates():
    @tack.kernel
    def nested(o, out):
        for i in range(o.count):
            out[i] = o.at(i) + o.inner.data[i]

    x = np.linspace(-1, 1, 10).astype(np.float32)
    out = np.zeros(10, np.float32)
    nested(Outer(Inner(x, 0.5), 10), out)
    np.testing.assert_allclose(out, x * 3.0 + 0.5 + x, rtol=1e-6)
    nested(Outer(Inner(x, -2.0), 7), out)
    np.testing.assert_allclose(out[:7], x[:7] * 3.0 - 2.0 + x[:7], rtol=1e-6)
    assert counts(nested) == (1, 1)


def test_instance_scalars_of_different_int_sizes():
    @tack.device_class
    class Shift:
        def __init__(self, offset):
            self.offset = offset

    @tack.kernel
    def shift(t, x, out):
        for i in range(x.shape[0]):
            out[i] = x[i] + t.offset

    x = np.arange(5, dtype=np.int64)
    out = np.zeros(5, np.int64)
    shift(Shift(1), x, out)
    np.testing.assert_array_equal(out, x + 1)
    shift(Shift(2), x, out)
    np.testing.assert_array_equal(out, x + 2)
    assert len(shift.variants()) == 1
    shift(Shift(2 ** 40), x, out)
    np.testing.assert_array_equal(out, x + 2 ** 40)
    variants = shift.variants()
    assert len(variants) == 2
    # The hidden scalar parameter follows the kernel's own two.
    assert variants[0][0][0] == ("template", False, False, None)
    assert variants[0][0][3][0] != variants[1][0][3][0]


@tack.device_class
class Chain:
    def __init__(self, data):
        self.data = data

    @tack.func
    def base(self, i):
        return self.data[i] + 1.0

    @tack.func
    def twice(self, i):
        return self.base(i) * 2.0


def test_method_calls_method():
    @tack.kernel
    def run(t, out):
        for i in range(out.shape[0]):
            out[i] = t.twice(i)

    x = np.arange(6, dtype=np.float32)
    out = np.zeros(6, np.float32)
    run(Chain(x), out)
    np.testing.assert_array_equal(out, (x + 1) * 2)


def test_arrays_of_every_kind():
    @tack.device_class
    class Pair:
        def __init__(self, a, b):
            self.a = a
            self.b = b

    @tack.kernel
    def add(p, out):
        for i in range(out.shape[0]):
            out[i] = p.a[i] + p.b[i]

    x = np.arange(4, dtype=np.float32)
    out = np.zeros(4, np.float32)
    add(Pair(x, tack.array(x * 10)), out)
    np.testing.assert_array_equal(out, x * 11)
    add(Pair(memoryview(x * 2), x), out)
    np.testing.assert_array_equal(out, x * 3)


def test_method_that_is_not_a_tack_func():
    @tack.device_class
    class Plain:
        def __init__(self, data):
            self.data = data

        def at(self, i):
            return self.data[i]

    @tack.kernel
    def use(t, out):
        for i in range(out.shape[0]):
            out[i] = t.at(i)

    x = np.arange(3, dtype=np.float32)
    with pytest.raises(tack.CompileError, match="at"):
        use(Plain(x), np.zeros(3, np.float32))


def test_unsupported_attribute_type():
    @tack.device_class
    class Named:
        def __init__(self, data):
            self.data = data
            self.name = "field"

    @tack.kernel
    def use(t, out):
        for i in range(out.shape[0]):
            out[i] = t.data[i]

    x = np.arange(3, dtype=np.float32)
    with pytest.raises(TypeError) as e:
        use(Named(x), np.zeros(3, np.float32))
    assert str(e.value) == ("kernel 'use': parameter 't': attribute 'name' of "
                            "test_unsupported_attribute_type.<locals>.Named has "
                            "unsupported type str")


def test_unsupported_attribute_type_in_nested_template():
    x = np.arange(3, dtype=np.float32)
    inner = Inner(x, "bias")

    @tack.kernel
    def use(o, out):
        for i in range(out.shape[0]):
            out[i] = o.inner.data[i]

    with pytest.raises(TypeError, match=r"attribute 'inner\.bias' of Outer has "
                                        r"unsupported type str"):
        use(Outer(inner, 3), np.zeros(3, np.float32))


def test_integer_constant_out_of_range():
    @tack.device_class
    class Big:
        huge = 2 ** 70

        def __init__(self, data):
            self.data = data

    @tack.kernel
    def use(t, out):
        for i in range(out.shape[0]):
            out[i] = t.data[i]

    with pytest.raises(ValueError, match="attribute 'huge'"):
        use(Big(np.zeros(3, np.float32)), np.zeros(3, np.float32))


def test_template_that_contains_itself():
    @tack.device_class
    class Node:
        def __init__(self, data):
            self.data = data
            self.next = None

    @tack.kernel
    def use(t, out):
        for i in range(out.shape[0]):
            out[i] = t.data[i]

    x = np.arange(3, dtype=np.float32)
    a = Node(x)
    a.next = a
    with pytest.raises(ValueError, match=r"attribute 'next' .*contain itself"):
        use(a, np.zeros(3, np.float32))
    b = Node(x)
    a.next, b.next = b, a
    with pytest.raises(ValueError, match=r"attribute 'next\.next' .*contain itself"):
        use(a, np.zeros(3, np.float32))
    # Sharing one instance twice is no cycle.
    c = Node(x)
    c.next = Inner(x, 1.0)
    c.other = c.next
    out = np.zeros(3, np.float32)
    use(c, out)
    np.testing.assert_array_equal(out, x)


def test_mixed_devices_in_a_template():
    other = tack.device("cpu", num_threads=1)
    a = tack.array(np.arange(3, dtype=np.float32))
    b = tack.array(np.arange(3, dtype=np.float32), device=other)
    pair = Inner(a, 0.0)
    pair.other = b

    @tack.kernel
    def use(t, out):
        for i in range(out.shape[0]):
            out[i] = t.data[i]

    # An array on another device names the parameter and the fix.
    with pytest.raises(TypeError, match="earlier array arguments.*tack.array"):
        use(pair, tack.zeros(3, tack.f32))


def rss_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


@pytest.mark.cpu_only  # its kernel runs on the default device: once is enough
def test_per_call_classes_leave_nothing_behind():
    sample = make_sample()
    x = np.arange(8, dtype=np.float32)
    out = np.zeros(8, np.float32)
    n = int(os.environ.get("TACK_TEST_PER_CALL_CLASSES", "10000"))
    logger = logging.getLogger("tack")
    level = logger.level
    logger.setLevel(logging.ERROR)  # each class passes the 32-variant warning
    try:
        base = None
        for j in range(n):
            Local = make_field_class()
            sample(Local(x, float(j)), out)
            if out[3] != 6.0 + j:
                np.testing.assert_array_equal(out, x * 2.0 + j)
            del Local
            if j == min(500, n // 4):
                gc.collect()
                base = rss_bytes()
    finally:
        logger.setLevel(level)
    gc.collect()
    assert counts(sample) == (0, 0)
    if SANITIZED:
        pytest.skip("RSS is not measurable under AddressSanitizer (its quarantine); "
                    "the loop's results and counts were checked")
    growth = rss_bytes() - base
    assert growth < 20 * 2 ** 20, f"RSS grew by {growth / 2 ** 20:.1f} MiB"
