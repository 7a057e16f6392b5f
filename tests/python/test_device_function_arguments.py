"""Device functions called as Python calls them: default parameter values,
keyword arguments, and the errors for a missing, unknown or doubled
argument, naming the function and the parameter."""
import numpy as np
import pytest

import tack

pytestmark = pytest.mark.every_device


@tack.func
def affine(x, scale=2.0, shift=0.0, flip=False):
    y = x * scale + shift
    if flip:
        y = -y
    return y


@tack.kernel
def calls(x, out):
    for i in range(x.shape[0]):
        out[i] = (affine(x[i]) + affine(x[i], 3.0) + affine(x[i], shift=1.0)
                  + affine(shift=-1.0, x=x[i], scale=-0.5) + affine(x[i], 1.0, 2.0, True))


def test_defaults_and_keywords(device):
    x = np.arange(5, dtype=np.float64)
    out = tack.zeros(5, dtype=tack.f64, device=device)
    calls(tack.array(x, device=device), out)
    want = 2 * x + 3 * x + (2 * x + 1) + (-0.5 * x - 1) - (x + 2)
    np.testing.assert_allclose(out.numpy(), want)


@pytest.mark.parametrize("call,message", [
    ("affine()", "is missing its argument 'x'"),
    ("affine(x[i], bias=1.0)", "has no parameter 'bias'"),
    ("affine(x[i], x=1.0)", "got two values for 'x'"),
    ("affine(x[i], 1.0, 2.0, True, 5.0)", "takes 4 arguments, got 5"),
])
def test_argument_errors_name_the_parameter(device, call, message):
    src = f"def bad(x, out):\n    for i in range(x.shape[0]):\n        out[i] = {call}\n"
    scope = {"affine": affine, "tack": tack}
    exec(compile(src, "<bad>", "exec"), scope)
    k = tack.kernel(scope["bad"], source=src)
    with pytest.raises(tack.CompileError, match=message) as info:
        k(tack.zeros(2, dtype=tack.f64, device=device), tack.zeros(2, dtype=tack.f64, device=device))
    assert "affine" in str(info.value)


def test_kernels_still_refuse_defaults():
    with pytest.raises(tack.CompileError, match="default parameter values are not supported in kernels"):
        @tack.kernel
        def k(x, scale=2.0):
            for i in range(x.shape[0]):
                x[i] *= scale


def test_a_default_must_be_a_literal(device):
    @tack.func
    def shifted(x, by=np.pi):
        return x + by

    @tack.kernel
    def k(x):
        for i in range(x.shape[0]):
            x[i] = shifted(x[i])

    with pytest.raises(tack.CompileError, match="the default of 'by' must be a number"):
        k(tack.zeros(2, dtype=tack.f64, device=device))


@tack.func
def distance(a, b):
    s = 0.0
    for k in range(a.shape[0]):
        d = a[k] - b[k]
        s += d * d
    return s ** 0.5


@tack.func
def fill_and_sum(w, x):
    for k in range(len(w)):
        w[k] = x * k
    s = 0.0
    for v in w:
        s += v
    return s


@tack.kernel
def rows_and_locals(c, out, sums):
    for i in range(c.shape[0]):
        r = c[i]
        out[i] = distance(c[i], c[0]) + 10.0 * distance(r, c[c.shape[0] - 1]) + 0.0 * r[0]
        wl = tack.local((4,), tack.f64)
        sums[i] = fill_and_sum(wl, c[i, 0]) + wl[3]


def test_rows_and_local_arrays_as_arguments(device):
    c = np.random.default_rng(3).random((5, 4))
    out = tack.zeros(5, dtype=tack.f64, device=device)
    sums = tack.zeros(5, dtype=tack.f64, device=device)
    rows_and_locals(tack.array(c, device=device), out, sums)
    want = np.linalg.norm(c - c[0], axis=1) + 10 * np.linalg.norm(c - c[-1], axis=1)
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-12)
    np.testing.assert_allclose(sums.numpy(), 6 * c[:, 0] + 3 * c[:, 0], rtol=1e-12)
