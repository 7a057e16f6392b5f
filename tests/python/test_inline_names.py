"""Inlining never lets a callee's names capture or clobber the caller's
(issue 18, item 1).

A device function's vector parameter used to be given component locals
named after the *caller's* scope, so `g(p + p)` in a kernel with its own
vector local `p` overwrote that local.  Each test below gives the caller and
the callee the same names (vector and scalar, parameters and locals, through
nested calls, template methods and texture sampling) and checks the caller's
values survive the call.
"""
import numpy as np
import pytest

import tack

pytestmark = pytest.mark.every_device


@tack.func
def doubled(p):
    return p * 2.0


@tack.kernel
def keeps_vector_local(x, out, got):
    for i in range(x.shape[0]):
        p = x[i]
        v = doubled(p + p)
        out[i] = p
        got[i] = v


def vec2(rows):
    return np.asarray(rows, dtype=np.float64)


def test_vector_parameter_keeps_callers_local(device):
    x = vec2([[1.0, 1.0], [2.0, -3.0], [0.5, 4.0]])
    out = np.zeros_like(x)
    got = np.zeros_like(x)
    out_v = tack.array(out, dtype=tack.vec2d, device=device)
    got_v = tack.array(got, dtype=tack.vec2d, device=device)
    keeps_vector_local(tack.array(x, dtype=tack.vec2d, device=device), out_v, got_v)
    np.testing.assert_array_equal(out_v.numpy(), x)
    np.testing.assert_array_equal(got_v.numpy(), x * 4.0)


@tack.func
def summed_over(a, p):
    u = p * 0.0
    for k in range(a.shape[0]):
        u += p
    return u


@tack.kernel
def keeps_local_through_loop(x, a, out, got):
    for i in range(x.shape[0]):
        p = x[i]
        u = summed_over(a, p * 3.0)
        out[i] = p
        got[i] = u


def test_vector_parameter_in_a_looping_callee(device):
    x = vec2([[1.0, 2.0], [-1.0, 0.25]])
    a = np.zeros(5)
    out = tack.array(np.zeros_like(x), dtype=tack.vec2d, device=device)
    got = tack.array(np.zeros_like(x), dtype=tack.vec2d, device=device)
    keeps_local_through_loop(tack.array(x, dtype=tack.vec2d, device=device), tack.array(a, device=device), out, got)
    np.testing.assert_array_equal(out.numpy(), x)
    np.testing.assert_array_equal(got.numpy(), x * 3.0 * 5)


# Nested: the middle function has a vector local named like the inner
# function's parameter, and the kernel one named like both.
@tack.func
def inner(q):
    q = q + q
    return q


@tack.func
def middle(q):
    p = q * 10.0
    r = inner(p * 0.5)
    return p + r


@tack.kernel
def keeps_through_nesting(x, out_p, out_q, got):
    for i in range(x.shape[0]):
        p = x[i]
        q = x[i] * -1.0
        got[i] = middle(q)
        out_p[i] = p
        out_q[i] = q


def test_nested_device_functions_keep_every_scope(device):
    x = vec2([[1.0, 2.0], [3.0, -4.0], [0.0, 0.5]])
    arrays = [tack.array(np.zeros_like(x), dtype=tack.vec2d, device=device) for _ in range(3)]
    keeps_through_nesting(tack.array(x, dtype=tack.vec2d, device=device), *arrays)
    out_p, out_q, got = (a.numpy() for a in arrays)
    np.testing.assert_array_equal(out_p, x)
    np.testing.assert_array_equal(out_q, -x)
    # middle(q): p = 10 q; inner(5 q) = 10 q; result 20 q
    np.testing.assert_array_equal(got, -x * 20.0)


# Scalars and vectors side by side, the callee reassigning its parameter.
@tack.func
def bump(s, v):
    s = s + 1.0
    v = v * s
    return v


@tack.kernel
def keeps_scalar_and_vector(x, out_v, out_s, got):
    for i in range(x.shape[0]):
        s = 2.0
        v = x[i]
        got[i] = bump(s, v)
        out_v[i] = v
        out_s[i] = s


def test_reassigned_parameters_stay_the_callees(device):
    x = vec2([[1.0, -1.0], [0.5, 2.0]])
    out_v = tack.array(np.zeros_like(x), dtype=tack.vec2d, device=device)
    got = tack.array(np.zeros_like(x), dtype=tack.vec2d, device=device)
    out_s = tack.zeros((2,), dtype=tack.f64, device=device)
    keeps_scalar_and_vector(tack.array(x, dtype=tack.vec2d, device=device), out_v, out_s, got)
    np.testing.assert_array_equal(out_v.numpy(), x)
    np.testing.assert_array_equal(out_s.numpy(), [2.0, 2.0])
    np.testing.assert_array_equal(got.numpy(), x * 3.0)


@tack.device_class
class Scaler:
    def __init__(self, factor):
        self.factor = factor

    @tack.func
    def apply(self, p):
        p = p * self.factor
        return p


@tack.kernel
def keeps_through_method(sc, x, out, got):
    for i in range(x.shape[0]):
        p = x[i]
        got[i] = sc.apply(p + p)
        out[i] = p


def test_template_method_vector_parameter(device):
    x = vec2([[1.0, 1.0], [2.0, 5.0]])
    out = tack.array(np.zeros_like(x), dtype=tack.vec2d, device=device)
    got = tack.array(np.zeros_like(x), dtype=tack.vec2d, device=device)
    keeps_through_method(Scaler(3.0), tack.array(x, dtype=tack.vec2d, device=device), out, got)
    np.testing.assert_array_equal(out.numpy(), x)
    np.testing.assert_array_equal(got.numpy(), x * 6.0)


@tack.func
def sample_at(tex, u):
    v = u * 0.5
    return tex.sample(v, v, v)


@tack.kernel
def keeps_through_texture(tex, uvw, out, got):
    for i in range(uvw.shape[0]):
        u = uvw[i]
        v = u * 0.0 + 0.25
        got[i] = sample_at(tex, u)
        out[i] = v


def test_texture_sampling_in_a_callee(device):
    data = np.full((2, 2, 2), 7.0, np.float32)
    tex = tack.Texture3D(data)
    uvw = np.array([0.1, 0.5, 0.9], np.float32)
    out = np.zeros(3, np.float32)
    got = np.zeros(3, np.float32)
    keeps_through_texture(tex, uvw, out, got)
    np.testing.assert_array_equal(out, np.full(3, 0.25, np.float32))
    np.testing.assert_allclose(got, np.full(3, 7.0, np.float32), rtol=0, atol=3 * 2.0 ** -8)
