"""Vector values in kernels (vec2f ... vec4i arrays as arguments), checked
against NumPy on the .numpy() views (shape logical + (width,))."""
import numpy as np
import pytest

import tack

# The conformance suite: every test runs on each device (conftest.py).
pytestmark = pytest.mark.every_device


def rand(shape, seed, dtype=np.float32):
    return (np.random.default_rng(seed).random(shape) * 4 - 2).astype(dtype)


def close(got, want, dtype=np.float32):
    rtol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol)


def test_dot_two_widths_two_variants():
    @tack.kernel
    def dot(v, w, out):
        for i in range(out.shape[0]):
            out[i] = v[i].dot(w[i])

    n = 33
    for width, vt in ((2, tack.vec2f), (3, tack.vec3f)):
        v_np, w_np = rand((n, width), 1), rand((n, width), 2)
        v = tack.array(v_np, dtype=vt)
        w = tack.array(w_np, dtype=vt)
        out = tack.zeros((n,))
        dot(v, w, out)
        close(out.numpy(), (v_np * w_np).sum(axis=1))
    keys = dot.variants()
    assert len(keys) == 2
    assert len(dot.ir_templates()) == 2
    assert [k[1] for k in keys] == [((0, 2), (1, 2)), ((0, 3), (1, 3))]
    # the parameter types are the components
    assert keys[0][0][0][:2] == ("f32", True)


def test_components_xyzw():
    @tack.kernel
    def comps(v, out):
        for i in range(v.shape[0]):
            out[i, 0] = v[i].x
            out[i, 1] = v[i].y
            out[i, 2] = v[i].z
            out[i, 3] = v[i].w

    v_np = rand((17, 4), 3)
    out = tack.zeros((17, 4))
    comps(tack.array(v_np, dtype=tack.vec4f), out)
    np.testing.assert_array_equal(out.numpy(), v_np)


def test_length():
    @tack.kernel
    def length(v, out):
        for i in range(out.shape[0]):
            out[i] = v[i].length()

    v_np = rand((21, 3), 4)
    out = tack.zeros((21,))
    length(tack.array(v_np, dtype=tack.vec3f), out)
    close(out.numpy(), np.linalg.norm(v_np, axis=1))


def test_normalized():
    @tack.kernel
    def normalize(v, out):
        for i in range(v.shape[0]):
            out[i] = v[i].normalized()

    v_np = rand((19, 3), 5) + 3.0     # away from zero length
    out = tack.zeros((19,), dtype=tack.vec3f)
    normalize(tack.array(v_np, dtype=tack.vec3f), out)
    close(out.numpy(), v_np / np.linalg.norm(v_np, axis=1, keepdims=True))


def test_componentwise_arithmetic_store_vector():
    @tack.kernel
    def axpy(a, b, out):
        for i in range(a.shape[0]):
            out[i] = a[i] + b[i] * 2.0

    for vt, np_t in ((tack.vec3f, np.float32), (tack.vec4d, np.float64)):
        w = vt.width
        a_np, b_np = rand((25, w), 6, np_t), rand((25, w), 7, np_t)
        out = tack.zeros((25,), dtype=vt)
        axpy(tack.array(a_np, dtype=vt), tack.array(b_np, dtype=vt), out)
        close(out.numpy(), a_np + b_np * 2.0, np_t)


def test_construct_vec3f_in_kernel():
    @tack.kernel
    def build(x, y, z, out):
        for i in range(x.shape[0]):
            out[i] = tack.vec3f(x[i], y[i], z[i] * 2.0)

    x, y, z = rand(11, 8), rand(11, 9), rand(11, 10)
    out = tack.zeros((11,), dtype=tack.vec3f)
    build(x, y, z, out)
    close(out.numpy(), np.stack([x, y, z * 2], axis=1))


def test_vector_local_accumulates_in_loop():
    @tack.kernel
    def rowsum(v, out):
        for i in range(v.shape[0]):
            acc = tack.vec3f(0.0, 0.0, 0.0)
            for j in range(v.shape[1]):
                acc = acc + v[i, j]
            out[i] = acc

    v_np = rand((9, 6, 3), 11)
    out = tack.zeros((9,), dtype=tack.vec3f)
    rowsum(tack.array(v_np, dtype=tack.vec3f), out)
    close(out.numpy(), v_np.sum(axis=1))


def test_conditional_expression_on_vectors():
    @tack.kernel
    def pick(c, p, q, out):
        for i in range(c.shape[0]):
            out[i] = p[i] if c[i] > 0.0 else q[i]

    c = rand(15, 12)
    p_np, q_np = rand((15, 2), 13), rand((15, 2), 14)
    out = tack.zeros((15,), dtype=tack.vec2f)
    pick(c, tack.array(p_np, dtype=tack.vec2f), tack.array(q_np, dtype=tack.vec2f), out)
    np.testing.assert_array_equal(out.numpy(), np.where((c > 0)[:, None], p_np, q_np))


def test_abs_and_min_per_component():
    @tack.kernel
    def absmin(v, w, a, m):
        for i in range(v.shape[0]):
            a[i] = abs(v[i])
            m[i] = min(v[i], w[i])

    v_np, w_np = rand((13, 3), 15), rand((13, 3), 16)
    a = tack.zeros((13,), dtype=tack.vec3f)
    m = tack.zeros((13,), dtype=tack.vec3f)
    absmin(tack.array(v_np, dtype=tack.vec3f), tack.array(w_np, dtype=tack.vec3f), a, m)
    np.testing.assert_array_equal(a.numpy(), np.abs(v_np))
    np.testing.assert_array_equal(m.numpy(), np.minimum(v_np, w_np))


def test_integer_vectors():
    @tack.kernel
    def add(a, b, out):
        for i in range(a.shape[0]):
            out[i] = a[i] + b[i]

    a_np = np.arange(24, dtype=np.int32).reshape(8, 3)
    b_np = (a_np * 7 - 5).astype(np.int32)
    out = tack.zeros((8,), dtype=tack.vec3i)
    add(tack.array(a_np, dtype=tack.vec3i), tack.array(b_np, dtype=tack.vec3i), out)
    np.testing.assert_array_equal(out.numpy(), a_np + b_np)


def test_numpy_n_by_3_stays_a_plain_array():
    @tack.kernel
    def scale(x, out):
        for i in range(x.shape[0]):
            for j in range(x.shape[1]):
                out[i, j] = x[i, j] * 2.0

    x = rand((5, 3), 17)
    out = np.zeros((5, 3), np.float32)
    scale(x, out)
    close(out, x * 2)
    assert all(k[1] == () for k in scale.variants())
