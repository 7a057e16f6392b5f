"""Vector and matrix components picked by run-time indices (`v[k]`, `m[a, b]`,
`m[r]` with loop variables or parameters, reads and stores of locals) and
module-level tables of vectors (`DIRS[k]` is a vector), on every device
against NumPy."""
import numpy as np
import pytest

import tack

pytestmark = pytest.mark.every_device

DIRS = ((1.0, 0.0), (0.0, 1.0), (-1.0, 0.0), (0.0, -1.0))
OFFSETS = ((1, 0, 0), (0, 2, 0), (0, 0, 3))


@tack.kernel
def frobenius_and_rows(F, out, rowsum, n):
    for i in range(F.shape[0]):
        m = F[i]
        s = 0.0
        for a in range(3):              # static trip counts
            for b in range(3):
                s += m[a, b] * m[a, b]
        r = tack.vec3f()
        for a in range(n):              # a dynamic one; m[a] is a row
            r += m[a]
        out[i] = s
        rowsum[i] = r


@tack.kernel
def component_stores(x, out, k):
    for i in range(x.shape[0]):
        v = tack.vec4f()
        for j in range(4):
            v[j] = x[i] * (j + 1)
        v[k] = -1.0                     # a parameter index; negative counts from the end
        m = tack.mat22f()
        for a in range(2):
            m[a, 1 - a] = x[i] + a
        m[k % 2] = tack.vec2f(7.0, 8.0)  # a whole row
        out[i] = v + tack.vec4f(m[0, 0], m[0, 1], m[1, 0], m[1, 1])


@tack.kernel
def outside(x, out, k):
    for i in range(x.shape[0]):
        v = x[i]
        out[i] = v[k]                   # outside the vector: 0


@tack.kernel
def tables(out, ints):
    for i in range(out.shape[0]):
        d = DIRS[i % 4]                 # a row of a table is a vector
        e = tack.vec2f(DIRS[(i + 1) % 4])
        out[i] = d.x + 2.0 * d.y + 10.0 * tack.dot(d, e) + 100.0 * DIRS[i % 4][1]
        o = OFFSETS[i % 3]
        ints[i] = o[0] + o[1] + o[2]


def test_static_and_dynamic_indices_read_like_numpy(device):
    rng = np.random.default_rng(2)
    F = rng.random((6, 3, 3)).astype(np.float32)
    out = tack.zeros(6, dtype=tack.f32, device=device)
    rowsum = tack.zeros(6, dtype=tack.vec3f, device=device)
    frobenius_and_rows(tack.array(F, dtype=tack.mat33f, device=device), out, rowsum, 2)
    np.testing.assert_allclose(out.numpy(), (F * F).sum((1, 2)), rtol=1e-5)
    np.testing.assert_allclose(rowsum.numpy(), F[:, 0] + F[:, 1], rtol=1e-5)


@pytest.mark.parametrize("k", [0, 2, -1, -4])
def test_component_stores_by_run_time_index(device, k):
    x = np.arange(1, 6, dtype=np.float32)
    out = tack.zeros(5, dtype=tack.vec4f, device=device)
    component_stores(tack.array(x, device=device), out, k)
    v = x[:, None] * np.arange(1, 5, dtype=np.float32)
    v[:, k] = -1.0
    m = np.zeros((5, 2, 2), np.float32)
    m[:, 0, 1] = x
    m[:, 1, 0] = x + 1
    m[:, k % 2] = (7.0, 8.0)
    np.testing.assert_array_equal(out.numpy(), v + m.reshape(5, 4))


@pytest.mark.parametrize("k", [3, -4, 1 << 40])
def test_an_index_outside_the_vector_reads_zero(device, k):
    x = np.arange(9, dtype=np.float32).reshape(3, 3) + 1
    out = tack.zeros(3, dtype=tack.f32, device=device)
    outside(tack.array(x, dtype=tack.vec3f, device=device), out, k)
    assert not out.numpy().any()
    outside(tack.array(x, dtype=tack.vec3f, device=device), out, -3)
    np.testing.assert_array_equal(out.numpy(), x[:, 0])


def test_tables_of_vectors(device):
    out = tack.zeros(8, dtype=tack.f32, device=device)
    ints = tack.zeros(8, dtype=tack.i64, device=device)
    tables(out, ints)
    d = np.array(DIRS)[np.arange(8) % 4]
    e = np.array(DIRS)[(np.arange(8) + 1) % 4]
    want = d[:, 0] + 2 * d[:, 1] + 10 * (d * e).sum(1) + 100 * d[:, 1]
    np.testing.assert_allclose(out.numpy(), want)
    np.testing.assert_array_equal(ints.numpy(), [1, 2, 3, 1, 2, 3, 1, 2])


def test_a_vector_index_must_be_a_scalar(device):
    @tack.kernel
    def bad(x, out):
        for i in range(x.shape[0]):
            v = x[i]
            out[i] = v[v]

    x = tack.zeros(2, dtype=tack.vec2f, device=device)
    with pytest.raises(tack.CompileError, match="index must be an integer"):
        bad(x, tack.zeros(2, dtype=tack.f32, device=device))


@tack.kernel
def element_component_stores(v, m, ks):
    for i in range(v.shape[0]):
        for c in range(3):
            v[i][c] = float(c + 10 * i)
        v[i][ks[i]] = -1.0
        for r in range(2):
            for c in range(2):
                m[i][r, c] = float(r * 2 + c)
        m[i][ks[i], -1] = 100.0


def test_stores_into_array_elements_by_run_time_index(device):
    ks_host = np.array([0, -1, 5, 1, -3, -4], np.int32)   # 5 and -4: outside, nothing stored
    n = len(ks_host)
    v = tack.zeros(n, dtype=tack.vec3f, device=device)
    m = tack.zeros(n, dtype=tack.mat22f, device=device)
    element_component_stores(v, m, tack.array(ks_host, device=device))
    ref_v = np.arange(3, dtype=np.float32)[None, :] + 10 * np.arange(n, dtype=np.float32)[:, None]
    ref_m = np.tile(np.arange(4, dtype=np.float32).reshape(2, 2), (n, 1, 1))
    for i, k in enumerate(ks_host):
        if -3 <= k < 3:
            ref_v[i, k] = -1.0
        if -2 <= k < 2:
            ref_m[i, k, -1] = 100.0
    np.testing.assert_array_equal(v.numpy(), ref_v)
    np.testing.assert_array_equal(m.numpy(), ref_m)
