"""Issue 27, more of Warp's and Taichi's vocabulary: arrays of scalars of
shape (..., n, n) read as arrays of matrices where the kernel uses their
elements as matrices; checked against NumPy on every device (off the host
the NumPy arguments are copied to scalar device arrays of the same shape,
which the same rule reads as matrices)."""
import numpy as np
import pytest

import tack
from conftest import line_of

pytestmark = pytest.mark.every_device

FLOATS = (np.float32, np.float64)


def tol(dtype):
    return 1e-5 if dtype == np.float32 else 1e-12


def rand(shape, seed, dtype):
    return (np.random.default_rng(seed).random(shape) * 2 - 1).astype(dtype)


# ---- NumPy arrays of shape (n, R, R) as arrays of matrices ----

@tack.kernel
def mpm_update(F, C, dt):
    for p in range(F.shape[0]):
        F[p] = (tack.identity(3) + dt * C[p]) @ F[p]


@tack.kernel
def mpm_update2(F, C, dt):
    for p in range(F.shape[0]):
        F[p] = (tack.identity(2) + dt * C[p]) @ F[p]


@tack.kernel
def component(F, out):
    for p in range(F.shape[0]):
        m = F[p]
        out[p] = m[0, 1] + tack.determinant(m)


@tack.kernel
def matvec(A, x, y):
    for i in range(A.shape[0]):
        y[i] = (A[i] @ A[i].T)[1, 0] + A[i][0, 1] * x[i]


@tack.kernel
def grid_inverse(A, out):
    for i, j in tack.ndindex(A.shape[0], A.shape[1]):
        out[i, j] = tack.inverse(A[i, j])


@tack.kernel
def row_view(F, out):
    for p in range(F.shape[0]):
        row = F[p]
        row[0, 1] = 7.0          # a view of the scalars: writes F
        out[p] = row[1, 1]


@tack.kernel
def row_sums(F, out):
    for p in range(F.shape[0]):
        s = 0.0
        for row in F[p]:          # rows of the scalars, as before
            s += row[0] + row[1]
        out[p] = s


@tack.kernel
def full_index(F, out):
    for p in range(F.shape[0]):
        out[p] = F[p, 0, 1] + F[p, 1, 0]


@pytest.mark.parametrize("dtype", FLOATS)
def test_numpy_matrices_matmul(dtype):
    F, C = rand((37, 3, 3), 1, dtype), rand((37, 3, 3), 2, dtype)
    want = np.matmul(np.eye(3, dtype=dtype) + dtype(0.1) * C, F)
    mpm_update(F, C, 0.1)
    np.testing.assert_allclose(F, want, rtol=tol(dtype), atol=tol(dtype))
    F2, C2 = rand((5, 2, 2), 3, dtype), rand((5, 2, 2), 4, dtype)
    want2 = np.matmul(np.eye(2, dtype=dtype) + dtype(0.5) * C2, F2)
    mpm_update2(F2, C2, 0.5)
    np.testing.assert_allclose(F2, want2, rtol=tol(dtype), atol=tol(dtype))


@pytest.mark.parametrize("dtype", FLOATS)
def test_numpy_matrices_as_values(dtype, device):
    F = rand((9, 3, 3), 5, dtype) + 3 * np.eye(3, dtype=dtype)
    out = np.zeros(9, dtype)
    component(F, out)
    np.testing.assert_allclose(out, F[:, 0, 1] + np.linalg.det(F), rtol=1e-4, atol=1e-4)
    A, x, y = rand((6, 4, 4), 6, dtype), rand(6, 7, dtype), np.zeros(6, dtype)
    matvec(A, x, y)
    want = np.matmul(A, A.transpose(0, 2, 1))[:, 1, 0] + A[:, 0, 1] * x
    np.testing.assert_allclose(y, want, rtol=tol(dtype) * 10, atol=tol(dtype) * 10)


@pytest.mark.parametrize("dtype", FLOATS)
def test_numpy_matrices_two_dimensional_grid(dtype):
    A = rand((3, 4, 2, 2), 8, dtype) + 2 * np.eye(2, dtype=dtype)
    out = np.zeros_like(A)
    grid_inverse(A, out)
    np.testing.assert_allclose(out, np.linalg.inv(A), rtol=1e-4, atol=1e-4)


def test_numpy_matrices_keyed():
    F, C = rand((4, 3, 3), 1, np.float32), rand((4, 3, 3), 2, np.float32)
    mpm_update(F, C, 0.1)
    F2, C2 = rand((4, 2, 2), 1, np.float32), rand((4, 2, 2), 2, np.float32)
    with pytest.raises(tack.CompileError):  # identity(3) @ a 2x2: the shape is keyed
        mpm_update(F2, C2, 0.1)
    vec_sigs = {v[1] for v in mpm_update.variants()}
    assert ((0, 0x33), (1, 0x33)) in vec_sigs


@pytest.mark.parametrize("dtype", FLOATS)
def test_numpy_matrices_empty(dtype):
    F, C = np.zeros((0, 3, 3), dtype), np.zeros((0, 3, 3), dtype)
    mpm_update(F, C, 0.1)
    assert F.shape == (0, 3, 3)


@pytest.mark.cpu_only
def test_numpy_matrices_strided_rows_and_refused_layouts():
    base = rand((10, 3, 3), 9, np.float32)
    F = base[::2]                                # strided along n: in place
    C = rand((5, 3, 3), 10, np.float32)
    want = np.matmul(np.eye(3, dtype=np.float32) + np.float32(0.1) * C, F)
    mpm_update(F, C, 0.1)
    np.testing.assert_allclose(base[::2], want, rtol=1e-5, atol=1e-5)
    T = rand((5, 3, 3), 11, np.float32).transpose(0, 2, 1)   # components not row by row
    before = T.copy()
    with pytest.raises(ValueError, match=r"parameter 'F'.*3x3 matrices.*ascontiguousarray"):
        mpm_update(T, C, 0.1)
    np.testing.assert_array_equal(T, before)     # nothing ran


def test_scalar_uses_stay_scalar():
    F = rand((4, 3, 3), 12, np.float32)
    out = np.zeros(4, np.float32)
    full_index(F, out)
    np.testing.assert_allclose(out, F[:, 0, 1] + F[:, 1, 0], rtol=1e-6)
    out2 = np.zeros(4, np.float32)
    row_view(F, out2)                             # the row view writes the array
    assert (F[:, 0, 1] == 7.0).all()
    np.testing.assert_array_equal(out2, F[:, 1, 1])
    assert all(v[1] == () for v in row_view.variants())
    out3 = np.zeros(4, np.float32)
    row_sums(F, out3)
    np.testing.assert_allclose(out3, F[:, :, :2].sum(axis=(1, 2)), rtol=1e-6)


def test_non_square_and_ints_not_matrices():
    with pytest.raises(tack.CompileError):       # (n, 2, 3): not a matrix dtype
        mpm_update2(np.zeros((2, 2, 3), np.float32), np.zeros((2, 2, 3), np.float32), 0.1)


# ---- augmented updates at run-time component indices ----

VEC3 = {np.float32: tack.vec3f, np.float64: tack.vec3d}
MAT3 = {np.float32: tack.mat33f, np.float64: tack.mat33d}


@tack.kernel
def vec_own(x, k, s):
    for i in range(x.shape[0]):
        x[i][k[i]] += s[i]
        x[i][k[i] - 3] -= 0.5 * s[i]     # negative: from the end


@tack.kernel
def vec_shared(acc, k, s):
    for i in range(k.shape[0]):
        acc[i % 2][k[i]] += s[i]


@tack.kernel
def mat_shared(acc, r, c, s):
    for i in range(r.shape[0]):
        acc[0][r[i], c[i]] += s[i]
        acc[1][r[i], 2 - c[i]] -= s[i]


@tack.kernel
def mat_own_loops(m, s):
    for i in range(m.shape[0]):
        for a in range(3):
            for b in range(3):
                m[i][a, b] += s * (a * 3 + b)


@tack.kernel
def locals_dynamic(out, k, s):
    for i in range(out.shape[0]):
        v = tack.vec3f(1.0, 2.0, 3.0)
        v[k] += s
        v[k - 1] *= 2.0
        m = tack.mat22f(1.0, 2.0, 3.0, 4.0)
        m[k % 2, 1] += s
        out[i] = v + tack.vec3f(m[0, 1], m[1, 1], 0.0)


@tack.kernel
def vec_outside(x, k):
    for i in range(x.shape[0]):
        x[i][k] += 1.0                   # k outside the vector: nothing changes


@pytest.mark.parametrize("dtype", FLOATS)
def test_dynamic_component_updates_own(dtype, device):
    n = 11
    k = (np.arange(n) % 3).astype(np.int32)
    s = rand(n, 20, dtype)
    x = rand((n, 3), 21, dtype)
    want = x.copy()
    want[np.arange(n), k] += s
    want[np.arange(n), k] -= dtype(0.5) * s
    xa = tack.array(x, dtype=VEC3[dtype], device=device)
    vec_own(xa, k, s)
    np.testing.assert_allclose(xa.numpy(), want, rtol=tol(dtype), atol=tol(dtype))
    m = rand((4, 3, 3), 22, dtype)
    want = m + dtype(0.25) * np.arange(9, dtype=dtype).reshape(3, 3)
    ma = tack.array(m, dtype=MAT3[dtype], device=device)
    mat_own_loops(ma, 0.25)
    np.testing.assert_allclose(ma.numpy(), want, rtol=tol(dtype), atol=tol(dtype))


@pytest.mark.parametrize("dtype", FLOATS)
def test_dynamic_component_updates_shared_are_atomic(dtype, device):
    n = 3000
    rng = np.random.default_rng(23)
    k = rng.integers(0, 3, n).astype(np.int32)
    s = np.ones(n, dtype)
    acc = tack.zeros((2,), dtype=VEC3[dtype], device=device)
    vec_shared(acc, k, s)
    want = np.zeros((2, 3))
    np.add.at(want, (np.arange(n) % 2, k), 1.0)
    np.testing.assert_array_equal(acc.numpy(), want)    # exact counts: atomic
    r, c = rng.integers(0, 3, n).astype(np.int32), rng.integers(0, 3, n).astype(np.int32)
    macc = tack.zeros((2,), dtype=MAT3[dtype], device=device)
    mat_shared(macc, r, c, s)
    want = np.zeros((2, 3, 3))
    np.add.at(want[0], (r, c), 1.0)
    np.subtract.at(want[1], (r, 2 - c), 1.0)
    np.testing.assert_array_equal(macc.numpy(), want)


def test_dynamic_component_updates_of_locals_and_outside(device):
    out = tack.zeros((2,), dtype=tack.vec3f, device=device)
    locals_dynamic(out, 1, 10.0)
    v = np.array([1.0, 12.0, 3.0])
    v[0] *= 2.0
    np.testing.assert_allclose(out.numpy()[0], v + [2.0, 14.0, 0.0])
    x = tack.zeros((3,), dtype=tack.vec3f, device=device)
    vec_outside(x, 3)
    vec_outside(x, -4)
    assert not x.numpy().any()


def test_dynamic_row_update(device):
    # Once refused; a row at a run-time index is now updated per component
    # (test_issue27_values.py has the stores, atomics and wrong widths).
    @tack.kernel
    def row_update(m, r):
        for i in range(m.shape[0]):
            m[i][r] += tack.vec3f(1.0)   # marker: row update
    m = tack.zeros((2,), dtype=tack.mat33f, device=device)
    row_update(m, 1)
    want = np.zeros((2, 3, 3), np.float32)
    want[:, 1] = 1.0
    np.testing.assert_array_equal(m.numpy(), want)

    @tack.kernel
    def row_update_wrong(m, r):
        for i in range(m.shape[0]):
            m[i][r] += tack.vec2f(1.0)   # marker: wrong row
    with pytest.raises(tack.CompileError, match="row") as e:
        row_update_wrong(tack.zeros((2,), dtype=tack.mat33f, device=device), 1)
    assert e.value.lineno == line_of(__file__, "# marker: wrong" " row")
    assert "m[i][r]" in str(e.value)


def test_dynamic_component_update_shared_without_atomic_form_refused(device):
    @tack.kernel
    def scale_shared(x, k):
        for i in range(x.shape[0]):
            x[0][k] *= 2.0   # marker: shared scale
    x = tack.ones((3,), dtype=tack.vec3f, device=device)
    with pytest.raises(tack.CompileError, match="no atomic form") as e:
        scale_shared(x, 1)
    assert e.value.lineno == line_of(__file__, "# marker: shared" " scale")
    assert (x.numpy() == 1).all()


@pytest.mark.cpu_only
def test_dynamic_component_update_shared_is_atomic_in_ir():
    acc = tack.zeros((2,), dtype=tack.vec3f)
    ir = vec_shared.inspect_ir(acc, np.zeros(4, np.int32), np.ones(4, np.float32))
    assert ir.count("atomic_add") == 3


# ---- records returned from device functions ----

@tack.struct
class Inner27:
    h: tack.f64
    k: tack.i32


@tack.struct
class Body27:
    pos: tack.vec3f
    vel: tack.vec3f
    mass: tack.f32
    inner: Inner27
    rot: tack.mat22f


def body_records(n, seed=0):
    rng = np.random.default_rng(seed)
    r = np.zeros(n, dtype=Body27.numpy)
    r["pos"] = rng.standard_normal((n, 3))
    r["vel"] = rng.standard_normal((n, 3))
    r["mass"] = rng.uniform(1, 2, n)
    r["inner"]["h"] = rng.standard_normal(n)
    r["inner"]["k"] = rng.integers(-9, 9, n)
    r["rot"] = rng.standard_normal((n, 2, 2))
    return r


@tack.func
def make_body(p, m):
    return Body27(pos=p, vel=p * 2.0, mass=m, inner=Inner27(h=1.5, k=3))


@tack.func
def stepped(b, dt):
    q = b                      # a copy of the caller's record
    q.pos = q.pos + dt * q.vel
    q.inner.k = q.inner.k + 1
    return q


@tack.func
def pick(bodies, i, j):
    if bodies[i].mass > bodies[j].mass:
        return bodies[i]
    return bodies[j]


@tack.kernel
def made_in_functions(x, m, out, heavier_of, bodies, dt):
    for i in range(x.shape[0]):
        q = make_body(x[i], m[i])
        out[i] = stepped(q, dt)
        heavier_of[i] = pick(bodies, i, (i + 1) % bodies.shape[0])


@tack.kernel
def fields_of_calls(x, m, pos, k, h, rot01, bodies):
    for i in range(x.shape[0]):
        pos[i] = make_body(x[i], m[i]).pos
        k[i] = stepped(bodies[i], 0.5).inner.k
        h[i] = make_body(x[i], m[i]).inner.h + stepped(bodies[i], 0.0).pos.x
        rot01[i] = stepped(bodies[i], 1.0).rot[0, 1]


def test_records_returned_from_device_functions(device):
    n = 7
    rng = np.random.default_rng(30)
    x = rng.standard_normal((n, 3)).astype(np.float32)
    m = rng.uniform(1, 2, n).astype(np.float32)
    r = body_records(n, 31)
    xa = tack.array(x, dtype=tack.vec3f, device=device)
    bodies = tack.array(r, dtype=Body27, device=device)
    out = tack.zeros(n, dtype=Body27, device=device)
    heavier = tack.zeros(n, dtype=Body27, device=device)
    made_in_functions(xa, m, out, heavier, bodies, 0.25)
    o = out.numpy()
    np.testing.assert_allclose(o["pos"], x + np.float32(0.25) * (2 * x), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(o["vel"], 2 * x, rtol=1e-6)
    np.testing.assert_array_equal(o["mass"], m)
    np.testing.assert_array_equal(o["inner"]["h"], np.full(n, 1.5))
    np.testing.assert_array_equal(o["inner"]["k"], np.full(n, 4))
    np.testing.assert_array_equal(o["rot"], np.zeros((n, 2, 2)))
    j = (np.arange(n) + 1) % n
    want = np.where(r["mass"] > r["mass"][j], np.arange(n), j)
    hv = heavier.numpy()
    for f in ("pos", "vel", "mass", "rot"):
        np.testing.assert_array_equal(hv[f], r[f][want])
    np.testing.assert_array_equal(hv["inner"], r["inner"][want])


def test_fields_of_returned_records(device):
    n = 5
    rng = np.random.default_rng(32)
    x = rng.standard_normal((n, 3)).astype(np.float32)
    m = rng.uniform(1, 2, n).astype(np.float32)
    r = body_records(n, 33)
    pos = tack.zeros(n, dtype=tack.vec3f, device=device)
    k, h, rot01 = np.zeros(n, np.int32), np.zeros(n, np.float64), np.zeros(n, np.float32)
    fields_of_calls(tack.array(x, dtype=tack.vec3f, device=device), m, pos, k, h, rot01,
                    tack.array(r, dtype=Body27, device=device))
    np.testing.assert_array_equal(pos.numpy(), x)
    np.testing.assert_array_equal(k, r["inner"]["k"] + 1)
    np.testing.assert_allclose(h, 1.5 + r["pos"][:, 0], rtol=1e-6)
    np.testing.assert_array_equal(rot01, r["rot"][:, 0, 1])


@tack.func
def mixed_return(b, c):
    if c > 0:
        return b
    return 1.0          # marker: mixed return


@tack.func
def other_struct(b, o):
    if b.mass > 0.0:
        return b
    return o            # marker: other struct


@tack.struct
class Other27:
    pos: tack.vec3f


@tack.kernel
def uses_mixed(bodies, out):
    for i in range(bodies.shape[0]):
        q = mixed_return(bodies[i], i)
        out[i] = q


@tack.kernel
def uses_other(bodies, others, out):
    for i in range(bodies.shape[0]):
        out[i] = other_struct(bodies[i], others[i])


@tack.kernel
def record_as_value(bodies, out):
    for i in range(bodies.shape[0]):
        out[i] = make_body(bodies[i].pos, 1.0) * 2.0   # marker: whole record as a number


@tack.kernel
def uses_mixed_target(bodies, out):
    for i in range(bodies.shape[0]):
        bodies[i] = out[i] + 1.0


@tack.kernel
def missing_field(x, out):
    for i in range(x.shape[0]):
        out[i] = make_body(x[i], 1.0).spin   # marker: missing field


def test_record_return_refusals(device):
    b = tack.zeros(2, dtype=Body27, device=device)
    with pytest.raises(tack.CompileError, match="returns a record of struct 'Body27'") as e:
        uses_mixed(b, tack.zeros(2, dtype=Body27, device=device))
    assert e.value.lineno == line_of(__file__, "# marker: mixed" " return")
    with pytest.raises(tack.CompileError, match="another struct") as e:
        uses_other(b, tack.zeros(2, dtype=Other27, device=device),
                   tack.zeros(2, dtype=Body27, device=device))
    assert e.value.lineno == line_of(__file__, "# marker: other" " struct")
    with pytest.raises(tack.CompileError, match="returns a record") as e:
        record_as_value(b, np.zeros(2, np.float32))
    assert e.value.lineno == line_of(__file__, "# marker: whole record" " as a number")
    with pytest.raises(tack.CompileError, match="only a record can be assigned"):
        uses_mixed_target(b, np.zeros(2, np.float32))
    with pytest.raises(tack.CompileError, match="no field 'spin'") as e:
        missing_field(tack.zeros(2, dtype=tack.vec3f, device=device),
                      tack.zeros(2, dtype=tack.vec3f, device=device))
    assert e.value.lineno == line_of(__file__, "# marker: missing" " field")


@tack.struct
class Params27:
    dt: tack.f32
    gravity: tack.vec3f


@tack.func
def make_inner(h):
    return Inner27(h, 7)


@tack.func
def same_params(p):
    return p


@tack.kernel
def nested_targets(bodies, params, h, g):
    for i in range(bodies.shape[0]):
        bodies[i].inner = make_inner(h[i])
        b = bodies[i]
        b.inner = make_inner(2.0 * h[i])
        b.inner.k += 1
        p = same_params(params)
        g[i] = p.gravity * p.dt + tack.vec3f(b.inner.h, tack.f32(b.inner.k), 0.0)


def test_returned_records_into_fields_and_by_value(device):
    n = 4
    r = body_records(n, 34)
    bodies = tack.array(r, dtype=Body27, device=device)
    h = np.arange(n, dtype=np.float64)
    g = tack.zeros(n, dtype=tack.vec3f, device=device)
    nested_targets(bodies, Params27(dt=0.5, gravity=(0.0, -9.8, 0.0)), h, g)
    got = bodies.numpy()
    np.testing.assert_array_equal(got["inner"]["h"], h)
    np.testing.assert_array_equal(got["inner"]["k"], np.full(n, 7))
    want = np.stack([2.0 * h, np.full(n, 8.0), np.zeros(n)], axis=1) + [0.0, -4.9, 0.0]
    np.testing.assert_allclose(g.numpy(), want, rtol=1e-6)


@tack.func
def forwarded(p, m, flip):
    if flip > 0:
        return make_body(-p, m)
    return make_body(p, m)


@tack.kernel
def forwards(x, m, out):
    for i in range(x.shape[0]):
        out[i] = forwarded(x[i], m[i], i % 2)


def test_returned_record_forwarded(device):
    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    m = np.ones(4, np.float32)
    out = tack.zeros(4, dtype=Body27, device=device)
    forwards(tack.array(x, dtype=tack.vec3f, device=device), m, out)
    want = np.where((np.arange(4) % 2 == 1)[:, None], -x, x)
    np.testing.assert_array_equal(out.numpy()["pos"], want)
    np.testing.assert_array_equal(out.numpy()["inner"]["k"], np.full(4, 3))
