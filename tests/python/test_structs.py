"""@tack.struct records: arrays of structs (tack.zeros(n, dtype=P)), their
fields read, written and updated in kernels (x[i].vel += dv atomic where
iterations share the element), nested structs, against NumPy structured
arrays of the same layout."""
import numpy as np
import pytest

import tack
from conftest import line_of

pytestmark = pytest.mark.every_device


@tack.struct
class Inner:
    a: tack.f64
    k: tack.i32


@tack.struct
class Particle:
    pos: tack.vec3f
    vel: tack.vec3f
    mass: tack.f32
    id: tack.i32
    inner: Inner
    rot: tack.mat22f


def records(n, seed=0):
    rng = np.random.default_rng(seed)
    r = np.zeros(n, dtype=Particle.numpy)
    r["pos"] = rng.standard_normal((n, 3))
    r["vel"] = rng.standard_normal((n, 3))
    r["mass"] = rng.uniform(1, 2, n)
    r["id"] = np.arange(n) * 3 - 5
    r["inner"]["a"] = rng.standard_normal(n)
    r["inner"]["k"] = rng.integers(-9, 9, n)
    r["rot"] = rng.standard_normal((n, 2, 2))
    return r


def test_layout_is_c_aligned_as_numpy_align_true():
    ref = np.dtype([("pos", "<f4", (3,)), ("vel", "<f4", (3,)), ("mass", "<f4"), ("id", "<i4"),
                    ("inner", np.dtype([("a", "<f8"), ("k", "<i4")], align=True)),
                    ("rot", "<f4", (2, 2))], align=True)
    assert Particle.numpy == ref
    assert Particle.itemsize == ref.itemsize == 64
    assert Inner.itemsize == 16
    assert [n for n, _ in Particle.fields] == ["pos", "vel", "mass", "id", "inner", "rot"]


def test_array_of_structs_round_trip(device):
    r = records(7)
    x = tack.array(r, dtype=Particle, device=device)
    assert x.shape == (7,) and len(x) == 7 and x.dtype is Particle
    back = x.numpy()
    assert back.dtype == Particle.numpy
    for f in Particle.numpy.names:
        np.testing.assert_array_equal(back[f], r[f])
    z = tack.zeros((2, 3), dtype=Particle, device=device)
    assert z.shape == (2, 3) and z.numpy().dtype == Particle.numpy
    assert not z.numpy()["pos"].any()
    tack.copyto(z, np.ones((2, 3), dtype=Particle.numpy))
    assert (z.numpy()["inner"]["k"] == 1).all()


@tack.kernel
def integrate(ps, dt, out_e):
    for i in range(ps.shape[0]):
        ps[i].vel += dt * ps[i].rot[0, 0]
        ps[i].pos = ps[i].pos + dt * ps[i].vel
        ps[i].pos.x += 1.0
        ps[i].inner.a = ps[i].inner.a * 2.0 + ps[i].inner.k
        ps[i].rot[1, 0] = ps[i].mass
        out_e[i] = 0.5 * ps[i].mass * ps[i].vel.dot(ps[i].vel) + ps[i].id


def test_fields_read_and_written_like_numpy(device):
    n = 33
    r = records(n)
    x = tack.array(r, dtype=Particle, device=device)
    e = np.zeros(n, np.float32)
    integrate(x, np.float32(0.25), e)
    dt = np.float32(0.25)
    vel = r["vel"] + dt * r["rot"][:, 0, 0][:, None]
    pos = r["pos"] + dt * vel
    pos[:, 0] += 1
    got = x.numpy()
    np.testing.assert_allclose(got["vel"], vel, rtol=1e-6)
    np.testing.assert_allclose(got["pos"], pos, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got["inner"]["a"], r["inner"]["a"] * 2 + r["inner"]["k"], rtol=1e-12)
    np.testing.assert_array_equal(got["rot"][:, 1, 0], r["mass"])
    np.testing.assert_array_equal(got["id"], r["id"])
    want = 0.5 * r["mass"] * (vel * vel).sum(1) + r["id"]
    np.testing.assert_allclose(e, want, rtol=1e-5)


@tack.kernel
def scatter(ps, cell, dv):
    for i in range(cell.shape[0]):
        ps[cell[i]].vel += dv[i]
        ps[cell[i]].mass += 1.0
        ps[cell[i]].inner.k += 1


def test_shared_field_updates_are_atomic(device):
    m, n = 3, 3000
    cell = (np.arange(n) % m).astype(np.int32)
    dv = tack.array(np.ones((n, 3), np.float32), dtype=tack.vec3f, device=device)
    x = tack.zeros(m, dtype=Particle, device=device)
    scatter(x, cell, dv)
    got = x.numpy()
    np.testing.assert_array_equal(got["vel"], np.full((m, 3), n // m, np.float32))
    np.testing.assert_array_equal(got["mass"], np.full(m, n // m, np.float32))
    np.testing.assert_array_equal(got["inner"]["k"], np.full(m, n // m))


@tack.func
def kinetic(ps, i):
    return 0.5 * ps[i].mass * ps[i].vel.dot(ps[i].vel)


@tack.kernel
def energies(ps, out):
    for i in range(len(ps)):
        out[i] = kinetic(ps, i)


def test_device_function_takes_an_array_of_structs(device):
    r = records(10)
    x = tack.array(r, dtype=Particle, device=device)
    out = np.zeros(10, np.float32)
    energies(x, out)
    np.testing.assert_allclose(out, 0.5 * r["mass"] * (r["vel"] ** 2).sum(1), rtol=1e-5)


@tack.kernel
def two_d(grid, out):
    for i, j in tack.ndindex(grid.shape[0], grid.shape[1]):
        out[i, j] = grid[i, j].mass + grid[i, j].pos.y
        grid[i, j].id = i * 10 + j


def test_two_dimensional_array_of_structs(device):
    r = records(12).reshape(3, 4)
    x = tack.array(r, dtype=Particle, device=device)
    out = np.zeros((3, 4), np.float32)
    two_d(x, out)
    np.testing.assert_allclose(out, r["mass"] + r["pos"][..., 1], rtol=1e-6)
    np.testing.assert_array_equal(x.numpy()["id"], np.arange(3)[:, None] * 10 + np.arange(4))


@tack.kernel
def no_such_field(ps, out):
    for i in range(ps.shape[0]):
        out[i] = ps[i].charge  # marker: no field


@tack.kernel
def whole_element(ps, out):
    for i in range(ps.shape[0]):
        out[i] = ps[i]  # marker: whole


def test_refusals_name_struct_field_and_line(device):
    x = tack.zeros(4, dtype=Particle, device=device)
    out = np.zeros(4, np.float32)
    with pytest.raises(tack.CompileError) as e:
        no_such_field(x, out)
    assert "struct 'Particle' has no field 'charge'" in str(e.value)
    assert e.value.lineno == line_of(__file__, "marker: " + "no field")
    with pytest.raises(tack.CompileError) as e:
        whole_element(x, out)
    assert "struct 'Particle'" in str(e.value)
    assert e.value.lineno == line_of(__file__, "marker: " + "whole")


def test_bad_struct_definitions():
    with pytest.raises(TypeError, match="field 'x' of struct 'Bad' must be"):
        @tack.struct
        class Bad:
            x: int
    with pytest.raises(TypeError, match="no annotated fields"):
        @tack.struct
        class Empty:
            pass


def test_variant_key_holds_the_layout(device):
    @tack.struct
    class A:
        v: tack.f32

    @tack.struct
    class B:
        v: tack.f64

    @tack.kernel
    def double(ps):
        for i in range(ps.shape[0]):
            ps[i].v = ps[i].v * 2.0

    a = tack.array(np.array([(1.0,), (2.0,)], dtype=A.numpy), dtype=A, device=device)
    b = tack.array(np.array([(1.5,), (2.5,)], dtype=B.numpy), dtype=B, device=device)
    double(a)
    double(b)
    np.testing.assert_array_equal(a.numpy()["v"], [2.0, 4.0])
    np.testing.assert_array_equal(b.numpy()["v"], [3.0, 5.0])
    assert len(double.variants(device=device)) == 2


@tack.struct
class Tag:
    w: tack.f32
    n: tack.i32


@tack.struct
class Body:
    x: tack.vec3f
    m: tack.mat22f
    tag: Tag


@tack.kernel
def push(bs, cell, f):
    for i in range(cell.shape[0]):
        bs[cell[i]].x += f[i]               # shared: atomic per component
        bs[cell[i]].tag.n += 1
        if i < bs.shape[0]:
            bs[i].m[0, 1] = bs[i].tag.w * 2.0
            bs[i].tag.w = bs[i].x.y


def test_f32_structs_with_nested_and_matrix_fields(device):
    # The kernel the GPU dialect checks compile (test_gpu_dialects.py).
    n = 5
    r = np.zeros(n, dtype=Body.numpy)
    r["tag"]["w"] = np.arange(n) + 0.5
    b = tack.array(r, dtype=Body, device=device)
    cell = np.array([0, 1, 1, 4, 4, 4, 2], np.int32)
    f = tack.array(np.ones((7, 3), np.float32), dtype=tack.vec3f, device=device)
    push(b, cell, f)
    got = b.numpy()
    counts = np.bincount(cell, minlength=n)
    np.testing.assert_array_equal(got["x"], np.repeat(counts[:, None], 3, 1))
    np.testing.assert_array_equal(got["tag"]["n"], counts)
    np.testing.assert_array_equal(got["m"][:, 0, 1], (np.arange(n) + 0.5) * 2)
