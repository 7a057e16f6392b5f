"""Arrays a kernel's body reads by name from its module or an enclosing
function (Numba's global arrays, Taichi's fields), against NumPy on every
device: the array the name holds at each call, written in place, and the
refusals of names a kernel cannot read."""
import numpy as np
import pytest

import tack

pytestmark = pytest.mark.every_device

TABLE = np.array([0.5, 1.5, 2.5, 3.5])  # read only
field = np.zeros(6)                      # written: Taichi's ti.field, by hand


@tack.kernel
def lookup(idx, out):
    for i in range(idx.shape[0]):
        out[i] = TABLE[idx[i]]


@tack.kernel
def fill(scale):
    for i in field:
        field[i] = scale * i


@tack.kernel
def field_sum():
    s = 0.0
    for i in range(field.shape[0]):
        s += field[i]
    return s


def host(a):
    return a.numpy() if isinstance(a, tack.Array) else a


def test_module_arrays(device):
    global field
    idx = np.array([3, 0, 2, 2], np.int64)
    out = tack.zeros(4, dtype=tack.f64, device=device)
    if device.host_memory:
        lookup(tack.array(idx, device=device), out)
        np.testing.assert_array_equal(host(out), TABLE[idx])
    else:  # a NumPy array is on the host: refused where the kernel runs elsewhere, named
        with pytest.raises(TypeError, match="parameter 'TABLE' is a host array"):
            lookup(tack.array(idx, device=device), out)
    saved = field
    try:
        field = tack.zeros(6, dtype=tack.f64, device=device)
        fill(2.0)  # writes the array the name holds now
        np.testing.assert_array_equal(host(field), 2.0 * np.arange(6))
        assert field_sum() == 30.0
        field = tack.array(np.ones(3), device=device)  # another array under the name
        assert field_sum() == 3.0
    finally:
        field = saved


def test_enclosing_function_arrays(device):
    weights = tack.array(np.arange(4.0), device=device)

    @tack.kernel
    def weigh(x):
        for i in range(x.shape[0]):
            x[i] *= weights[i]

    x = tack.array(np.full(4, 2.0), device=device)
    weigh(x)
    np.testing.assert_array_equal(host(x), 2.0 * np.arange(4))


def test_names_a_kernel_cannot_read(device):
    @tack.func
    def helper(i):
        return LATER[i]

    @tack.kernel
    def through_a_function(out):
        for i in range(out.shape[0]):
            out[i] = helper(i)

    globals()["LATER"] = np.ones(3)
    try:
        with pytest.raises(tack.CompileError, match="cannot read by name"):
            through_a_function(tack.zeros(3, dtype=tack.f64, device=device))
    finally:
        del globals()["LATER"]


def test_gradients_reach_arrays_read_by_name(device):
    w = tack.array(np.array([1.0, 2.0, 3.0]), device=device, requires_grad=True)

    @tack.kernel
    def weighted(x, loss):
        for i in range(x.shape[0]):
            loss[0] += w[i] * x[i] * x[i]

    xv = np.array([0.5, -1.0, 2.0])
    x = tack.array(xv, device=device, requires_grad=True)
    loss = tack.zeros(1, dtype=tack.f64, device=device, requires_grad=True)
    tape = tack.Tape()
    with tape:
        weighted(x, loss)
    tape.backward(loss)
    np.testing.assert_allclose(x.grad.numpy(), 2.0 * np.array([1.0, 2.0, 3.0]) * xv)
    np.testing.assert_allclose(w.grad.numpy(), xv * xv)
    g = tack.zeros(3, dtype=tack.f64, device=device)
    weighted.backward(x, loss, adj={"x": g})  # without a tape: the name's array is put in
    np.testing.assert_allclose(g.numpy(), 2.0 * np.array([1.0, 2.0, 3.0]) * xv)
