"""Statements with effects around the parallel loops (issue 27 item 4):
each runs once, in order, as Taichi runs top-level statements.  Results
against NumPy, on every device."""
import os

import numpy as np
import pytest

import tack

HERE = os.path.abspath(__file__)
pytestmark = pytest.mark.every_device


@tack.kernel
def total_into(x, out):
    s = 0.0
    for i in range(x.shape[0]):
        s += x[i]
    out[0] = s
    out[1] = s * 2.0


@tack.kernel
def store_before(x, n, pos):
    x[n] = pos
    for i in range(n):
        x[i] = x[i] + x[n]


@tack.func
def put(a, k, v):
    a[k] = v


@tack.kernel
def calls_and_atomics(x, out):
    put(out, 0, 7.0)
    tack.atomic_add(out, 1, 2.0)
    for i in range(x.shape[0]):
        tack.atomic_add(out, 2, x[i])
    if out[2] > 0.0:
        out[3] = 1.0
    else:
        out[3] = -1.0


@tack.kernel
def between(x, out):
    s = 0.0
    for i in range(x.shape[0]):
        s += x[i]
    out[0] = s
    for i in range(x.shape[0]):
        x[i] = x[i] - out[0]
    out[1] = x[0]


@tack.kernel
def normalize_then_report(x, out):
    m = 0.0
    for i in range(x.shape[0]):
        m = max(m, x[i])
    for i in range(x.shape[0]):
        x[i] = x[i] / m
    out[0] = m
    return m


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n", [1, 7, 1000])
def test_store_after_a_reduction(dtype, n):
    x = np.random.default_rng(n).random(n).astype(dtype)
    out = np.zeros(2, dtype)
    total_into(x, out)
    np.testing.assert_allclose(out, [x.sum(), 2 * x.sum()], rtol=1e-5)


def test_store_after_an_empty_loop():
    out = np.full(2, 5.0, np.float32)
    total_into(np.zeros(0, np.float32), out)
    np.testing.assert_array_equal(out, [0.0, 0.0])


@pytest.mark.parametrize("n", [0, 1, 5])
def test_store_before_the_loop(n):
    x = np.ones(n + 1, np.float32)
    store_before(x, n, 3.0)
    ref = np.ones(n + 1, np.float32)
    ref[n] = 3.0
    ref[:n] += 3.0
    np.testing.assert_array_equal(x, ref)


def test_calls_atomics_and_ifs_run_once():
    x = np.arange(5, dtype=np.float32)
    out = np.zeros(4, np.float32)
    calls_and_atomics(x, out)
    np.testing.assert_array_equal(out, [7.0, 2.0, 10.0, 1.0])
    out = np.zeros(4, np.float32)
    calls_and_atomics(-x, out)
    np.testing.assert_array_equal(out, [7.0, 2.0, -10.0, -1.0])


def test_statements_between_loops_run_in_order():
    x = np.arange(1, 6, dtype=np.float64)
    out = np.zeros(2)
    between(x, out)
    assert out[0] == 15.0
    np.testing.assert_array_equal(x, np.arange(1, 6) - 15.0)
    assert out[1] == 1.0 - 15.0


def test_statement_after_the_last_loop_and_a_return():
    x = np.array([1.0, 4.0, 2.0], np.float32)
    out = np.zeros(1, np.float32)
    assert normalize_then_report(x, out) == 4.0
    np.testing.assert_allclose(x, [0.25, 1.0, 0.5])
    assert out[0] == 4.0


def test_effects_in_a_scalar_assignment_are_still_refused():
    from conftest import line_of

    def build():
        @tack.kernel
        def draws_first(x, out):
            r = np.random.random()  #@draw
            for i in range(x.shape[0]):
                out[i] = x[i] * r
        draws_first(np.ones(4, np.float32), np.zeros(4, np.float32))
    with pytest.raises(tack.CompileError) as e:
        build()
    assert "without effects" in str(e.value)
    assert e.value.lineno == line_of(HERE, "#@" + "draw")
