"""kernel.backward and tack.Tape refuse malformed gradients before anything
runs: the adjoint indexes each gradient as its array, so a shorter one, or
one of another element type, would be read and written past its end or
misread (issue 28)."""
import numpy as np
import pytest

import tack


@tack.kernel
def scaled(x, y, a):
    for i in range(x.shape[0]):
        y[i] = x[i] * a


def arrays(n=4):
    x = tack.array(np.arange(n, dtype=np.float32), requires_grad=True)
    y = tack.zeros(n, requires_grad=True)
    return x, y


@pytest.mark.parametrize("bad", [
    lambda: tack.zeros(3),                       # shorter: the adjoint would read y.grad[3]
    lambda: tack.zeros(5),                       # longer
    lambda: tack.zeros((2, 2)),                  # same size, other shape
    lambda: tack.zeros(4, dtype=tack.i32),       # integers
    lambda: tack.zeros(4, dtype=tack.f64),       # another float width
    lambda: np.ones(4),                          # NumPy f64 for an f32 array
    lambda: np.ones(3, dtype=np.float32),
])
def test_a_gradient_unlike_its_array_is_refused(bad):
    x, y = arrays()
    x.grad.numpy()[:] = 0
    with pytest.raises(ValueError, match="gradient of 'y' must have its shape and dtype"):
        scaled.backward(x, y, 2.0, adj={"y": bad()})
    assert (x.grad.numpy() == 0).all()  # nothing ran


def test_a_gradient_like_its_array_is_used():
    x, y = arrays()
    scaled.backward(x, y, 2.0, adj={"y": np.ones(4, dtype=np.float32)})
    np.testing.assert_array_equal(x.grad.numpy(), np.full(4, 2.0, dtype=np.float32))


def test_malformed_backward_calls_are_type_errors():
    x, y = arrays()
    with pytest.raises(TypeError, match="adj is a dict"):
        scaled.backward(x, y, 2.0, adj=5)
    with pytest.raises(TypeError, match="backward takes the kernel's 3 arguments, 2 given"):
        scaled.backward(x, y)
    with pytest.raises(TypeError, match="gradient of array 'y' is not an array"):
        scaled.backward(x, y, 2.0, adj={"y": 1.0})


def test_malformed_tape_backward_calls_are_type_errors():
    x, y = arrays()
    tape = tack.Tape()
    with tape:
        scaled(x, y, 2.0)
    with pytest.raises(TypeError, match="grads is a dict"):
        tape.backward(grads=[y])
    with pytest.raises(TypeError, match="are tack arrays"):
        tape.backward(3)
    with pytest.raises(TypeError, match="are tack arrays"):
        tape.backward(grads={"y": np.ones(4)})
    tape.backward(grads={y: np.ones(4, dtype=np.float32)})
    np.testing.assert_array_equal(x.grad.numpy(), np.full(4, 2.0, dtype=np.float32))
