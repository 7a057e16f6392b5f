"""Whole @tack.struct records as values in kernels (Warp's
`p = particles[i]; ...; particles[i] = p`): struct locals, copies between
locals and array elements, nested records, records passed to device
functions by value; against NumPy structured arrays."""
import numpy as np
import pytest

import tack
from conftest import line_of

pytestmark = pytest.mark.every_device


@tack.struct
class Inner:
    h: tack.f64
    k: tack.i32


@tack.struct
class Body:
    pos: tack.vec3f
    vel: tack.vec3f
    mass: tack.f32
    inner: Inner
    rot: tack.mat22f


@tack.struct
class Other:
    pos: tack.vec3f


def records(n, seed=0):
    rng = np.random.default_rng(seed)
    r = np.zeros(n, dtype=Body.numpy)
    r["pos"] = rng.standard_normal((n, 3))
    r["vel"] = rng.standard_normal((n, 3))
    r["mass"] = rng.uniform(1, 2, n)
    r["inner"]["h"] = rng.standard_normal(n)
    r["inner"]["k"] = rng.integers(-9, 9, n)
    r["rot"] = rng.standard_normal((n, 2, 2))
    return r


@tack.kernel
def integrate(bodies, out, dt):
    for i in range(bodies.shape[0]):
        b = bodies[i]
        b.vel += tack.vec3f(0.0, -9.8, 0.0) * dt
        b.pos = b.pos + dt * b.vel
        b.pos.x = -b.pos.x
        b.inner.h += 1.0
        b.inner.k = b.inner.k * 2
        b.rot[0, 1] = b.mass
        out[i] = b


def test_local_record_read_modified_and_stored(device):
    r = records(9)
    bodies = tack.array(r, dtype=Body, device=device)
    out = tack.zeros(9, dtype=Body, device=device)
    integrate(bodies, out, 0.125)
    o = out.numpy()
    vel = r["vel"].copy()
    vel[:, 1] -= np.float32(9.8) * np.float32(0.125)
    pos = r["pos"] + np.float32(0.125) * vel
    pos[:, 0] *= -1
    np.testing.assert_allclose(o["vel"], vel, rtol=1e-6)
    np.testing.assert_allclose(o["pos"], pos, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(o["inner"]["h"], r["inner"]["h"] + 1.0)
    np.testing.assert_array_equal(o["inner"]["k"], r["inner"]["k"] * 2)
    rot = r["rot"].copy()
    rot[:, 0, 1] = r["mass"]
    np.testing.assert_array_equal(o["rot"], rot)
    np.testing.assert_array_equal(o["mass"], r["mass"])
    # the local was a copy: the source array is untouched
    np.testing.assert_array_equal(bodies.numpy()["vel"], r["vel"])


@tack.kernel
def shuffle(src, dst, perm):
    for i in range(dst.shape[0]):
        dst[i] = src[perm[i]]          # element to element
        dst[i].inner = src[i].inner    # a nested record alone


@tack.kernel
def copies(src, out):
    for i in range(src.shape[0]):
        a = src[i]
        b = a                          # a copy, not an alias
        b.mass = -1.0
        c = src[(i + 1) % src.shape[0]]
        a.inner = c.inner
        out[i] = a


def test_element_to_element_and_local_copies(device):
    n = 11
    r = records(n, seed=1)
    perm = np.random.default_rng(2).permutation(n).astype(np.int32)
    src = tack.array(r, dtype=Body, device=device)
    dst = tack.zeros(n, dtype=Body, device=device)
    shuffle(src, dst, perm)
    d = dst.numpy()
    for f in ("pos", "vel", "mass", "rot"):
        np.testing.assert_array_equal(d[f], r[f][perm])
    np.testing.assert_array_equal(d["inner"], r["inner"])
    out = tack.zeros(n, dtype=Body, device=device)
    copies(src, out)
    o = out.numpy()
    np.testing.assert_array_equal(o["mass"], r["mass"])
    np.testing.assert_array_equal(o["inner"], np.roll(r["inner"], -1))
    np.testing.assert_array_equal(o["pos"], r["pos"])


@tack.func
def kinetic(b):
    return 0.5 * b.mass * tack.dot(b.vel, b.vel)


@tack.func
def pushed_x(b, dv):
    b.vel = b.vel + dv                 # the callee's own copy
    return b.vel[0] + b.inner.h


@tack.kernel
def energies(bodies, out):
    for i in range(bodies.shape[0]):
        b = bodies[i]
        out[i] = kinetic(b) + kinetic(bodies[i]) + pushed_x(b, tack.vec3f(1.0, 0.0, 0.0)) - b.vel[0]


def test_records_passed_to_device_functions_by_value(device):
    r = records(6, seed=3)
    bodies = tack.array(r, dtype=Body, device=device)
    out = np.zeros(6, np.float64)
    energies(bodies, out)
    ke = 0.5 * r["mass"].astype(np.float64) * (r["vel"].astype(np.float64) ** 2).sum(1)
    np.testing.assert_allclose(out, 2 * ke + 1.0 + r["inner"]["h"], rtol=1e-5)


@tack.kernel
def into_scalars(bodies, out):
    for i in range(bodies.shape[0]):
        out[i] = bodies[i]  # marker: record into scalars


@tack.kernel
def wrong_struct(bodies, others):
    for i in range(bodies.shape[0]):
        others[i] = bodies[i]  # marker: other struct


@tack.kernel
def scalar_then_record(bodies, out):
    for i in range(bodies.shape[0]):
        b = 1.0
        b = bodies[i]  # marker: name held a scalar
        out[i] = b.mass


@tack.kernel
def whole_in_arithmetic(bodies, out):
    for i in range(bodies.shape[0]):
        b = bodies[i]
        out[i] = b * 2.0  # marker: whole in arithmetic


@tack.kernel
def record_missing_field(bodies, out):
    for i in range(bodies.shape[0]):
        b = bodies[i]
        out[i] = b.charge  # marker: missing field


@pytest.mark.parametrize("kern, marker, words", [
    (into_scalars, "record into scalars", "struct 'Body'"),
    (wrong_struct, "other struct", "struct 'Body' cannot be assigned to one of struct 'Other'"),
    (scalar_then_record, "name held a scalar", "'b' already holds a value that is not a record"),
    (whole_in_arithmetic, "whole in arithmetic", "'b' is a whole record here"),
    (record_missing_field, "missing field", "struct 'Body' has no field 'charge'"),
])
def test_refusals_name_the_struct_and_the_line(device, kern, marker, words):
    bodies = tack.zeros(3, dtype=Body, device=device)
    out = tack.zeros(3, dtype=Other, device=device) if marker == "other struct" else np.zeros(3, np.float32)
    with pytest.raises(tack.CompileError) as e:
        kern(bodies, out)
    assert words in str(e.value)
    assert e.value.lineno == line_of(__file__, "marker: " + marker)


def test_empty_array_of_records(device):
    bodies = tack.zeros(0, dtype=Body, device=device)
    out = tack.zeros(0, dtype=Body, device=device)
    integrate(bodies, out, 0.5)
    assert out.numpy().shape == (0,)


@tack.struct
class Scale:
    factor: tack.f32


@tack.struct
class Params:
    dt: tack.f32
    gravity: tack.vec3f
    steps: tack.i32
    scale: Scale


@tack.func
def fall(prm, v):
    return v + prm.gravity * prm.dt


@tack.kernel
def with_params(params, v, out):
    for i in range(v.shape[0]):
        p = params                     # a local copy of the whole record
        p.dt = p.dt * 2.0
        out[i] = fall(params, v[i]) * params.scale.factor + tack.vec3f(float(params.steps), 0.0, p.dt)


def test_records_passed_to_kernels_by_value(device):
    rng = np.random.default_rng(4)
    v0 = rng.standard_normal((5, 3)).astype(np.float32)
    v = tack.array(v0, dtype=tack.vec3f, device=device)
    out = tack.zeros(5, dtype=tack.vec3f, device=device)
    for dt, g, steps, factor in [(0.5, (0.0, -10.0, 0.0), 3, 2.0), (0.25, (1.0, 2.0, -3.0), -7, 0.5)]:
        prm = Params(dt=dt, gravity=g, steps=steps, scale=(factor,))
        with_params(prm, v, out)
        ref = (v0 + np.float32(dt) * np.array(g, np.float32)) * np.float32(factor)
        ref[:, 0] += steps
        ref[:, 2] += 2 * dt
        np.testing.assert_allclose(out.numpy(), ref, rtol=1e-6)
        assert prm["dt"] == np.float32(dt)   # the caller's record is untouched
    # values are run-time data: both calls share one variant
    assert len(with_params.variants(device=device)) == 1


def test_a_record_of_another_dtype_is_refused(device):
    v = tack.zeros(2, dtype=tack.vec3f, device=device)
    out = tack.zeros(2, dtype=tack.vec3f, device=device)
    foreign = np.zeros((), dtype=[("dt", "<f4")])[()]
    with pytest.raises(TypeError, match="parameter 'params'.*not a @tack.struct"):
        with_params(foreign, v, out)


@tack.struct
class Flagged:
    pos: tack.vec3f
    count: tack.i64
    alive: tack.bool_
    inner: Inner
    rot: tack.mat22f


@tack.kernel
def construct(out, q):
    for i in range(out.shape[0]):
        p = Flagged(pos=tack.vec3f(1.0, 2.0, float(i)), count=2**40 + i)
        p.inner.k = -i
        out[i] = p
        q[i] = Flagged(tack.vec3f(0.5), inner=Inner(h=1.5), alive=True,
                       rot=tack.mat22f(1.0, 2.0, 3.0, 4.0))
        z = Flagged()                 # every field zero
        q[i].pos = q[i].pos + tack.vec3f(float(z.count), float(z.inner.h), -0.0)


def test_records_constructed_in_kernels(device):
    n = 4
    out = tack.zeros(n, dtype=Flagged, device=device)
    q = tack.zeros(n, dtype=Flagged, device=device)
    construct(out, q)
    o, r = out.numpy(), q.numpy()
    ref = np.zeros(n, dtype=Flagged.numpy)
    ref["pos"] = np.stack([np.ones(n), 2 * np.ones(n), np.arange(n)], axis=1)
    ref["count"] = 2**40 + np.arange(n)
    ref["inner"]["k"] = -np.arange(n)
    np.testing.assert_array_equal(o, ref)
    ref = np.zeros(n, dtype=Flagged.numpy)
    ref["pos"] = 0.5
    ref["alive"] = True
    ref["inner"]["h"] = 1.5
    ref["rot"] = [[1, 2], [3, 4]]
    np.testing.assert_array_equal(r, ref)


@tack.kernel
def ctor_no_field(out):
    for i in range(out.shape[0]):
        out[i] = Flagged(charge=1.0)  # marker: ctor no field


@tack.kernel
def ctor_too_many(out):
    for i in range(out.shape[0]):
        out[i] = Flagged(tack.vec3f(), 1, True, Inner(), tack.mat22f(), 5)  # marker: ctor too many


@tack.kernel
def ctor_wrong_nested(out):
    for i in range(out.shape[0]):
        out[i] = Flagged(inner=Scale(factor=1.0))  # marker: ctor wrong nested


@tack.kernel
def struct_type_as_value(out):
    for i in range(out.shape[0]):
        t = Flagged  # marker: type as value
        out[i] = Flagged()


@pytest.mark.parametrize("kern, marker, words", [
    (ctor_no_field, "ctor no field", "struct 'Flagged' has no field 'charge'"),
    (ctor_too_many, "ctor too many", "struct 'Flagged' has 5 fields; 6 values given"),
    (ctor_wrong_nested, "ctor wrong nested", "field 'inner' of struct 'Flagged' takes a record of struct 'Inner'"),
    (struct_type_as_value, "type as value", "'Flagged' is a struct type"),
])
def test_constructor_refusals_name_the_struct_and_the_line(device, kern, marker, words):
    out = tack.zeros(2, dtype=Flagged, device=device)
    with pytest.raises(tack.CompileError) as e:
        kern(out)
    assert words in str(e.value)
    assert e.value.lineno == line_of(__file__, "marker: " + marker)
