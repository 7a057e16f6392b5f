"""Device functions (issue 27 items 6 and 8, part): `return None` and a bare
`return` in a function without a value, on every device; refusals inside
a device function say "device function" and name its line."""
import os

import numpy as np
import pytest

import tack

HERE = os.path.abspath(__file__)
pytestmark = pytest.mark.every_device


@tack.func
def put(a, i, v):
    a[i] = v
    return None


@tack.func
def put_positive(a, i, v):
    if v < 0.0:
        return None
    a[i] = v


@tack.func
def put_even(a, i, v):
    if i % 2 == 1:
        return
    a[i] = v


@tack.kernel
def fill(x, v):
    for i in range(x.shape[0]):
        put(x, i, v)
        put_positive(x, i, -v)
        put_even(x, i, v + 1.0)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_return_none_and_bare_return(device, dtype):
    x = np.zeros(7, dtype)
    fill(x, 2.0)
    ref = np.full(7, 2.0, dtype)
    ref[::2] = 3.0
    np.testing.assert_array_equal(x, ref)
    x = np.zeros(7, dtype)
    fill(x, -2.0)
    ref = np.full(7, 2.0, dtype)
    ref[::2] = -1.0
    np.testing.assert_array_equal(x, ref)


def test_a_device_function_s_parse_error_says_device_function():
    from conftest import line_of

    @tack.func
    def scaled(v, *k):  #@starargs
        return v * k[0]

    @tack.kernel
    def uses(x):
        for i in range(x.shape[0]):
            x[i] = scaled(x[i], 2.0)
    with pytest.raises(tack.CompileError) as e:
        uses(np.ones(3))
    assert "device function 'scaled'" in str(e.value)
    assert "kernel 'scaled'" not in str(e.value)
    assert e.value.lineno == line_of(HERE, "#@" + "starargs")


def test_recursion_is_refused_by_name():
    from conftest import line_of

    @tack.func
    def fact(n):
        if n <= 1:
            return 1
        return n * fact(n - 1)  #@recursion

    @tack.kernel
    def uses(x):
        for i in range(x.shape[0]):
            x[i] = fact(3)
    with pytest.raises(tack.CompileError) as e:
        uses(np.ones(3))
    assert "'fact' calls itself" in str(e.value)
    assert e.value.lineno == line_of(HERE, "#@" + "recursion")
