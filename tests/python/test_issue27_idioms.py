"""Issue 27 idioms as Warp, Taichi and Numba users first write them: NumPy
structured arrays of a @tack.struct's layout passed without a copy,
keyword-only parameters of device functions, and Taichi's spellings
(integer vectors as indices, tack.static loops, tack.sum, lists of vectors
as tables), each against NumPy."""
import numpy as np
import pytest

import tack
from conftest import line_of

pytestmark = pytest.mark.every_device


# ---- NumPy structured arrays without a copy ---------------------------------

@tack.struct
class Inner:
    a: tack.f64
    k: tack.i32


@tack.struct
class Particle:  # id is i64: other test files' Particle has this layout with an i32
    pos: tack.vec3f
    vel: tack.vec3f
    mass: tack.f32
    id: tack.i64
    inner: Inner
    rot: tack.mat22f


def records(shape, seed=0):
    rng = np.random.default_rng(seed)
    r = np.zeros(shape, dtype=Particle.numpy)
    r["pos"] = rng.standard_normal(r.shape + (3,))
    r["vel"] = rng.standard_normal(r.shape + (3,))
    r["mass"] = rng.uniform(1, 2, r.shape)
    r["id"] = rng.integers(-9, 9, r.shape)
    r["inner"]["a"] = rng.standard_normal(r.shape)
    r["inner"]["k"] = rng.integers(-9, 9, r.shape)
    r["rot"] = rng.standard_normal(r.shape + (2, 2))
    return r


@tack.kernel
def advance(ps, dt):
    for i in range(ps.shape[0]):
        ps[i].vel += dt * ps[i].mass
        ps[i].pos = ps[i].pos + dt * ps[i].vel
        ps[i].inner.a += 1.0
        ps[i].rot[0, 1] = ps[i].rot[1, 0] * 2.0
        ps[i].id = ps[i].id + ps[i].inner.k


def advance_reference(r, dt):
    r = r.copy()
    r["vel"] += np.float32(dt) * r["mass"][..., None]
    r["pos"] = r["pos"] + np.float32(dt) * r["vel"]
    r["inner"]["a"] += 1.0
    r["rot"][..., 0, 1] = r["rot"][..., 1, 0] * np.float32(2.0)
    r["id"] = r["id"] + r["inner"]["k"]
    return r


def same_bytes(a, b):
    """Every field equal bit for bit (padding bytes aside)."""
    assert a.dtype == b.dtype and a.shape == b.shape
    if a.dtype.names is None:
        return np.array_equal(np.ascontiguousarray(a).view(np.uint8),
                              np.ascontiguousarray(b).view(np.uint8))
    return all(same_bytes(a[n], b[n]) for n in a.dtype.names)


def test_structured_array_updated_in_place(device):
    r = records(37)
    expect = advance_reference(r, 0.25)
    advance(r, 0.25)
    for f in ("pos", "vel", "mass", "id", "rot"):
        np.testing.assert_allclose(r[f], expect[f], rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(r["inner"]["a"], expect["inner"]["a"])
    np.testing.assert_array_equal(r["inner"]["k"], expect["inner"]["k"])


def test_structured_array_bit_identical_to_tack_array_path(device):
    r = records(50, seed=3)
    x = tack.array(r, dtype=Particle, device=device)
    advance(x, 0.1)
    advance(r, 0.1)
    assert same_bytes(r, x.numpy())


@pytest.mark.cpu_only
def test_structured_array_is_not_copied():
    r = records(8)
    base = r.__array_interface__["data"][0]
    advance(r, 0.5)
    assert r.__array_interface__["data"][0] == base
    # a read-only view refuses the store, naming the parameter
    ro = records(4)
    ro.flags.writeable = False
    with pytest.raises((ValueError, TypeError)) as e:
        advance(ro, 0.5)
    assert "ps" in str(e.value)


@tack.struct
class Probe27:  # a layout no other struct of the test suite has
    where: tack.vec2d
    count: tack.i16
    weight: tack.f32


def test_tack_array_takes_a_structured_array_without_dtype(device):
    r = np.zeros(5, dtype=Probe27.numpy)
    r["where"] = np.arange(10).reshape(5, 2)
    r["count"] = [3, -1, 0, 7, 2]
    r["weight"] = 0.5
    x = tack.array(r, device=device)
    assert x.dtype is Probe27
    assert same_bytes(x.numpy(), r)


def test_records_of_a_layout_two_structs_share_need_dtype(device):
    @tack.struct
    class Twin:
        where: tack.vec2d
        count: tack.i16
        weight: tack.f32

    r = np.zeros(2, dtype=Probe27.numpy)
    with pytest.raises(TypeError, match=r"several @tack.struct classes \(Probe27, .*Twin\): "
                                        r"pass dtype="):
        tack.array(r, device=device)
    assert tack.array(r, dtype=Twin, device=device).dtype is Twin


@tack.kernel
def advance_2d(ps, dt):
    for i, j in tack.ndindex(ps.shape[0], ps.shape[1]):
        ps[i, j].vel += dt * ps[i, j].mass
        ps[i, j].pos = ps[i, j].pos + dt * ps[i, j].vel
        ps[i, j].rot[0, 1] = ps[i, j].rot[1, 0] * 2.0


def test_structured_array_2d(device):
    r = records((5, 7), seed=4)
    expect = r.copy()
    expect["vel"] += np.float32(0.5) * expect["mass"][..., None]
    expect["pos"] = expect["pos"] + np.float32(0.5) * expect["vel"]
    expect["rot"][..., 0, 1] = expect["rot"][..., 1, 0] * np.float32(2.0)
    advance_2d(r, 0.5)
    assert same_bytes(r, expect)


@pytest.mark.cpu_only
@pytest.mark.parametrize("view", ["step3", "reversed", "column"])
def test_structured_array_strided_views(view):
    r = records((12, 4), seed=5)
    expect = r.copy()
    pick = {"step3": (slice(None, None, 3), 1), "reversed": (slice(None, None, -1), 2),
            "column": (slice(None), 3)}[view]
    expect[pick] = advance_reference(expect[pick], 0.5)
    advance(r[pick], 0.5)
    for f in ("pos", "vel", "id", "rot"):
        np.testing.assert_allclose(r[f], expect[f], rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(r["inner"]["a"], expect["inner"]["a"])


@tack.kernel
def scatter(ps, idx, dv):
    for i in range(idx.shape[0]):
        ps[idx[i]].vel += dv
        ps[idx[i]].mass += 1.0
        ps[idx[i]].inner.k += 1


def test_structured_array_shared_updates_are_atomic(device):
    idx = np.tile(np.array([0, 1, 1, 2, 2, 2, 5], np.int32), 3000)
    r = np.zeros(6, dtype=Particle.numpy)
    scatter(r, idx, 0.5)
    counts = np.bincount(idx, minlength=6)
    np.testing.assert_array_equal(r["vel"], np.repeat(counts[:, None] * 0.5, 3, 1))
    np.testing.assert_array_equal(r["mass"], counts.astype(np.float32))
    np.testing.assert_array_equal(r["inner"]["k"], counts)


@pytest.mark.cpu_only
def test_structured_array_of_another_layout_is_refused():
    bad = np.zeros(3, dtype=[("pos", "<f4", (3,)), ("vel", "<f4", (3,))])
    with pytest.raises(TypeError) as e:
        advance(bad, 0.5)
    msg = str(e.value)
    assert "advance" in msg and "'ps'" in msg and "@tack.struct" in msg
    # the same fields in another order: other offsets
    packed = np.zeros(3, dtype=np.dtype([(n, Particle.numpy.fields[n][0])
                                         for n in reversed(Particle.numpy.names)], align=True))
    assert packed.dtype != Particle.numpy
    with pytest.raises(TypeError) as e:
        advance(packed, 0.5)
    assert "'ps'" in str(e.value)
    np.testing.assert_array_equal(packed["pos"], 0)


# ---- keyword-only parameters of device functions ----------------------------

@tack.func
def shaped(x, k=2.0, *, off=1.0, power):
    return k * x ** power + off


@tack.func
def scaled(x, *, by):
    return x * by


@tack.kernel
def keyword_only(x, out):
    for i in range(x.shape[0]):
        out[i, 0] = shaped(x[i], power=2)
        out[i, 1] = shaped(x[i], 3.0, off=0.0, power=1)
        out[i, 2] = shaped(power=3, x=x[i], k=0.5)
        out[i, 3] = scaled(x[i], by=-2.0)


def test_keyword_only_parameters(device):
    x = np.linspace(-2, 2, 33).astype(np.float32)
    out = np.zeros((33, 4), np.float32)
    keyword_only(x, out)
    f = np.float32
    np.testing.assert_allclose(out[:, 0], f(2) * x ** 2 + f(1), rtol=1e-6)
    np.testing.assert_allclose(out[:, 1], f(3) * x, rtol=1e-6)
    np.testing.assert_allclose(out[:, 2], f(0.5) * x ** 3 + f(1), rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal(out[:, 3], x * f(-2))


def test_keyword_only_passed_by_position_is_refused(device):
    @tack.kernel
    def too_many(x, out):
        for i in range(x.shape[0]):
            out[i] = shaped(x[i], 2.0, 1.0, 2)  # marker: too many positional

    with pytest.raises(tack.CompileError) as e:
        too_many(np.ones(3, np.float32), np.zeros(3, np.float32))
    assert e.value.lineno == line_of(__file__, "# marker: " + "too many positional")
    assert "'shaped'" in str(e.value) and "keyword-only" in str(e.value)


def test_keyword_only_missing_is_refused(device):
    @tack.kernel
    def missing(x, out):
        for i in range(x.shape[0]):
            out[i] = shaped(x[i])  # marker: missing keyword-only

    with pytest.raises(tack.CompileError) as e:
        missing(np.ones(3, np.float32), np.zeros(3, np.float32))
    assert e.value.lineno == line_of(__file__, "# marker: " + "missing keyword-only")
    assert "'shaped'" in str(e.value) and "'power'" in str(e.value)


def test_kernels_still_refuse_keyword_only(device):
    with pytest.raises(tack.CompileError) as e:
        @tack.kernel
        def star(x, *, out):  # marker: kernel star
            for i in range(x.shape[0]):
                out[i] = x[i]

        star(np.ones(3, np.float32), out=np.zeros(3, np.float32))
    assert e.value.lineno == line_of(__file__, "# marker: " + "kernel star")
    assert "keyword-only" in str(e.value)


# ---- Taichi's spellings -----------------------------------------------------

@tack.kernel
def vector_index_2d(grid, pos, out):
    for p in range(pos.shape[0]):
        base = tack.vec2i(int(pos[p, 0]), int(pos[p, 1]))
        s = 0.0
        for i in range(2):
            for j in range(2):
                offset = tack.vec2i(i, j)
                s += grid[base + offset]
        out[p] = s + grid[base]


@tack.kernel
def vector_index_scatter(grid, pos):
    for p in range(pos.shape[0]):
        base = tack.vec3i(int(pos[p, 0]), int(pos[p, 1]), int(pos[p, 2]))
        for k in tack.static(range(2)):
            grid[base + tack.vec3i(k, 0, 0)] += 1.0


def test_integer_vector_as_index(device):
    rng = np.random.default_rng(7)
    grid = rng.standard_normal((9, 8)).astype(np.float32)
    pos = rng.uniform(0, 7, (100, 2)).astype(np.float32)
    out = np.zeros(100, np.float32)
    vector_index_2d(grid, pos, out)
    b = pos.astype(np.int64)
    expect = (grid[b[:, 0], b[:, 1]] + grid[b[:, 0] + 1, b[:, 1]] + grid[b[:, 0], b[:, 1] + 1] +
              grid[b[:, 0] + 1, b[:, 1] + 1]) + grid[b[:, 0], b[:, 1]]
    np.testing.assert_allclose(out, expect, rtol=1e-5, atol=1e-5)


def test_integer_vector_index_shared_updates(device):
    rng = np.random.default_rng(8)
    pos = rng.uniform(0, 4, (5000, 3)).astype(np.float32)
    grid = np.zeros((6, 5, 5), np.float32)
    vector_index_scatter(grid, pos)
    b = pos.astype(np.int64)
    expect = np.zeros_like(grid)
    for k in range(2):
        np.add.at(expect, (b[:, 0] + k, b[:, 1], b[:, 2]), 1.0)
    np.testing.assert_array_equal(grid, expect)


def test_vector_index_of_wrong_length_names_the_line(device):
    @tack.kernel
    def wrong(grid, out):
        for p in range(out.shape[0]):
            out[p] = grid[tack.vec2i(p, 0)]  # marker: wrong vector index

    with pytest.raises(tack.CompileError) as e:
        wrong(np.zeros((4, 5, 6), np.float32), np.zeros(3, np.float32))
    assert e.value.lineno == line_of(__file__, "# marker: " + "wrong vector index")
    assert "'grid'" in str(e.value) and "3 dimensions" in str(e.value)


@tack.kernel
def static_loops(x, out):
    for i in range(x.shape[0]):
        v = tack.vec3f(x[i], 2.0 * x[i], -x[i])
        s = 0.0
        for k in tack.static(range(3)):
            s += v[k] * (k + 1)
        t = 0.0
        for k in static(range(4, -2, -3)):   # 4, 1
            t += x[i] * k
        n = 0.0
        for k in tack.static(range(out.shape[1] - 2)):   # not constant: the loop
            n += 1.0
        out[i, 0] = s
        out[i, 1] = t
        out[i, 2] = n
        out[i, 3] = tack.static(7)


from tack import static  # noqa: E402  (imported by name, as Taichi users write it)


def test_static_loops(device):
    x = np.linspace(-1, 1, 21).astype(np.float32)
    out = np.zeros((21, 4), np.float32)
    static_loops(x, out)
    f = np.float32
    np.testing.assert_allclose(out[:, 0], x * f(1) + f(2) * x * f(2) + (-x) * f(3), rtol=1e-6,
                               atol=1e-6)
    np.testing.assert_allclose(out[:, 1], x * f(4) + x * f(1), rtol=1e-6)
    np.testing.assert_array_equal(out[:, 2], 2.0)
    np.testing.assert_array_equal(out[:, 3], 7.0)


@tack.kernel
def static_with_break(x, out):
    for i in range(x.shape[0]):
        s = 0.0
        for k in tack.static(range(10)):
            if k == 3:
                break
            s += x[i]
        out[i] = s


def test_static_loop_with_break_runs_as_the_loop(device):
    x = np.arange(5, dtype=np.float32)
    out = np.zeros(5, np.float32)
    static_with_break(x, out)
    np.testing.assert_array_equal(out, 3 * x)


@tack.kernel
def sums(x, out):
    for i in range(x.shape[0]):
        v = tack.vec3f(x[i], 1.0, 2.0)
        m = tack.mat22f(x[i], 1.0, 2.0, 3.0)
        out[i, 0] = tack.sum(v)
        out[i, 1] = tack.sum(m)
        out[i, 2] = tack.sum(tack.vec4i(1, 2, 3, 4))


def test_tack_sum(device):
    x = np.linspace(-3, 3, 13).astype(np.float32)
    out = np.zeros((13, 3), np.float32)
    sums(x, out)
    np.testing.assert_allclose(out[:, 0], x + 3, rtol=1e-6)
    np.testing.assert_allclose(out[:, 1], x + 6, rtol=1e-6)
    np.testing.assert_array_equal(out[:, 2], 10)
    assert tack.sum(np.array([1.0, 2.0, 3.0])) == 6.0


def test_tack_sum_of_a_scalar_is_refused(device):
    @tack.kernel
    def scalar_sum(x, out):
        for i in range(x.shape[0]):
            out[i] = tack.sum(x[i])  # marker: sum of scalar

    with pytest.raises(tack.CompileError) as e:
        scalar_sum(np.ones(3, np.float32), np.zeros(3, np.float32))
    assert e.value.lineno == line_of(__file__, "# marker: " + "sum of scalar")


@tack.kernel
def mpm_weights(xp, inv_dx, w_out, table_out):
    for p in range(xp.shape[0]):
        Xp = tack.vec2f(xp[p, 0], xp[p, 1]) * inv_dx
        base = tack.vec2i(int(Xp.x - 0.5), int(Xp.y - 0.5))
        fx = Xp - tack.vec2f(float(base.x), float(base.y))
        w = [0.5 * (1.5 - fx) ** 2, 0.75 - (fx - 1) ** 2, 0.5 * (fx - 0.5) ** 2]
        for i in tack.static(range(3)):
            w_out[p, i, 0] = w[i][0]
            w_out[p, i, 1] = w[i].y
            for j in tack.static(range(3)):
                table_out[p, i, j] = w[i][0] * w[j][1]
        # the same table read by a run-time index
        for i in range(3):
            wi = w[i]
            table_out[p, 3, i] = wi.x + wi.y


def test_list_of_vectors_as_a_table(device):
    rng = np.random.default_rng(9)
    n = 257
    xp = rng.uniform(0.1, 0.9, (n, 2)).astype(np.float32)
    inv_dx = 32.0
    w_out = np.zeros((n, 3, 2), np.float32)
    table = np.zeros((n, 4, 3), np.float32)
    mpm_weights(xp, inv_dx, w_out, table)
    Xp = xp * np.float32(inv_dx)
    base = (Xp - np.float32(0.5)).astype(np.int32)
    fx = Xp - base.astype(np.float32)
    f = np.float32
    w = np.stack([f(0.5) * (f(1.5) - fx) ** 2, f(0.75) - (fx - f(1)) ** 2,
                  f(0.5) * (fx - f(0.5)) ** 2], axis=1)
    np.testing.assert_allclose(w_out, w, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(table[:, :3, :], w[:, :, None, 0] * w[:, None, :, 1], rtol=1e-5,
                               atol=1e-6)
    np.testing.assert_allclose(table[:, :3, :].sum(axis=(1, 2)), 1.0, rtol=1e-5)
    np.testing.assert_allclose(w_out.sum(axis=1), 1.0, rtol=1e-5)
    np.testing.assert_allclose(table[:, 3, :], w[:, :, 0] + w[:, :, 1], rtol=1e-5)


@tack.kernel
def int_vector_table(grid, out):
    for p in range(out.shape[0]):
        offs = [tack.vec2i(0, 1), tack.vec2i(1, 0), tack.vec2i(1, 1)]
        s = 0.0
        for k in range(3):
            s += grid[tack.vec2i(p, p) + offs[k]]
        out[p] = s


def test_list_of_integer_vectors_indexes_arrays(device):
    grid = np.arange(36, dtype=np.float32).reshape(6, 6)
    out = np.zeros(5, np.float32)
    int_vector_table(grid, out)
    p = np.arange(5)
    np.testing.assert_array_equal(out, grid[p, p + 1] + grid[p + 1, p] + grid[p + 1, p + 1])


def test_list_of_vectors_of_other_lengths_is_refused(device):
    @tack.kernel
    def ragged(x, out):
        for i in range(x.shape[0]):
            w = [tack.vec2f(1.0, 2.0), tack.vec3f(1.0, 2.0, 3.0)]  # marker: ragged
            out[i] = w[0][0]

    with pytest.raises(tack.CompileError) as e:
        ragged(np.ones(3, np.float32), np.zeros(3, np.float32))
    assert e.value.lineno == line_of(__file__, "# marker: " + "ragged")


# ---- programs ported as first written ---------------------------------------

N_GRID = 32
DX = 1.0 / N_GRID
INV_DX = float(N_GRID)
DT = 2e-4
P_VOL = (DX * 0.5) ** 2
P_MASS = P_VOL * 1.0
E_MOD = 400.0


@tack.kernel
def mpm_p2g(x, v, C, J, grid_v, grid_m):
    for p in range(x.shape[0]):
        Xp = x[p] * INV_DX
        base = tack.vec2i(int(Xp.x - 0.5), int(Xp.y - 0.5))
        fx = Xp - tack.vec2f(float(base.x), float(base.y))
        w = [0.5 * (1.5 - fx) ** 2, 0.75 - (fx - 1) ** 2, 0.5 * (fx - 0.5) ** 2]
        stress = -DT * 4 * E_MOD * P_VOL * (J[p] - 1) * INV_DX * INV_DX
        affine = tack.mat22f(stress, 0.0, 0.0, stress) + P_MASS * C[p]
        for i in tack.static(range(3)):
            for j in tack.static(range(3)):
                offset = tack.vec2i(i, j)
                dpos = (tack.vec2f(float(i), float(j)) - fx) * DX
                weight = w[i].x * w[j].y
                grid_v[base + offset] += weight * (P_MASS * v[p] + affine @ dpos)
                grid_m[base + offset] += weight * P_MASS


@tack.kernel
def mpm_g2p(x, v, C, J, grid_v):
    for p in range(x.shape[0]):
        Xp = x[p] * INV_DX
        base = tack.vec2i(int(Xp.x - 0.5), int(Xp.y - 0.5))
        fx = Xp - tack.vec2f(float(base.x), float(base.y))
        w = [0.5 * (1.5 - fx) ** 2, 0.75 - (fx - 1) ** 2, 0.5 * (fx - 0.5) ** 2]
        new_v = tack.vec2f()
        new_C = tack.mat22f()
        for i, j in tack.static(tack.ndindex(3, 3)):
            dpos = (tack.vec2f(float(i), float(j)) - fx) * DX
            weight = w[i].x * w[j].y
            g_v = grid_v[base + tack.vec2i(i, j)]
            new_v += weight * g_v
            new_C += 4 * weight * tack.outer(g_v, dpos) * INV_DX * INV_DX
        v[p] = new_v
        x[p] += DT * v[p]
        J[p] *= 1 + DT * new_C.trace()
        C[p] = new_C


def mpm_reference(x, v, C, J):
    """Taichi's mpm88 P2G and G2P in NumPy (float64)."""
    x, v, C, J = (a.astype(np.float64) for a in (x, v, C, J))
    Xp = x * INV_DX
    base = (Xp - 0.5).astype(np.int64)
    fx = Xp - base
    w = np.stack([0.5 * (1.5 - fx) ** 2, 0.75 - (fx - 1) ** 2, 0.5 * (fx - 0.5) ** 2], 1)
    stress = -DT * 4 * E_MOD * P_VOL * (J - 1) * INV_DX * INV_DX
    affine = stress[:, None, None] * np.eye(2) + P_MASS * C
    gv = np.zeros((N_GRID, N_GRID, 2))
    gm = np.zeros((N_GRID, N_GRID))
    for i in range(3):
        for j in range(3):
            dpos = (np.array([i, j]) - fx) * DX
            weight = w[:, i, 0] * w[:, j, 1]
            mom = weight[:, None] * (P_MASS * v + np.einsum("pab,pb->pa", affine, dpos))
            np.add.at(gv, (base[:, 0] + i, base[:, 1] + j), mom)
            np.add.at(gm, (base[:, 0] + i, base[:, 1] + j), weight * P_MASS)
    new_v = np.zeros_like(v)
    new_C = np.zeros_like(C)
    for i in range(3):
        for j in range(3):
            dpos = (np.array([i, j]) - fx) * DX
            weight = w[:, i, 0] * w[:, j, 1]
            g = gv[base[:, 0] + i, base[:, 1] + j]
            new_v += weight[:, None] * g
            new_C += 4 * weight[:, None, None] * np.einsum("pa,pb->pab", g, dpos) * INV_DX ** 2
    return gv, gm, new_v, x + DT * new_v, J * (1 + DT * np.trace(new_C, axis1=1, axis2=2)), new_C


def test_taichi_mpm88_p2g_g2p(device):
    rng = np.random.default_rng(11)
    n = 600
    x = (rng.random((n, 2)) * 0.4 + 0.2).astype(np.float32)
    v = rng.standard_normal((n, 2)).astype(np.float32)
    C = (rng.standard_normal((n, 2, 2)) * 0.1).astype(np.float32)
    J = rng.uniform(0.95, 1.05, n).astype(np.float32)
    gv_ref, gm_ref, v_ref, x_ref, J_ref, C_ref = mpm_reference(x, v, C, J)
    X = tack.array(x, dtype=tack.vec2f, device=device)
    V = tack.array(v, dtype=tack.vec2f, device=device)
    CC = tack.array(C, dtype=tack.mat22f, device=device)
    JJ = tack.array(J, device=device)
    gv = tack.zeros((N_GRID, N_GRID), dtype=tack.vec2f, device=device)
    gm = tack.zeros((N_GRID, N_GRID), device=device)
    mpm_p2g(X, V, CC, JJ, gv, gm)
    np.testing.assert_allclose(gm.numpy(), gm_ref, rtol=1e-4, atol=1e-9)
    np.testing.assert_allclose(gm.numpy().sum(), n * P_MASS, rtol=1e-5)  # mass is conserved
    np.testing.assert_allclose(gv.numpy(), gv_ref, rtol=1e-3, atol=1e-7)
    # G2P from the reference grid, so that only this step's arithmetic differs
    gv_in = tack.array(gv_ref.astype(np.float32), dtype=tack.vec2f, device=device)
    mpm_g2p(X, V, CC, JJ, gv_in)
    np.testing.assert_allclose(V.numpy(), v_ref, rtol=1e-3, atol=1e-6)
    np.testing.assert_allclose(X.numpy(), x_ref, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(JJ.numpy(), J_ref, rtol=1e-5)
    np.testing.assert_allclose(CC.numpy(), C_ref, rtol=1e-3, atol=1e-5)


@tack.func
def sph_density_kernel(xyz, smoothing_length):
    distance_sq = tack.dot(xyz, xyz)
    return max(smoothing_length * smoothing_length - distance_sq, 0.0) ** 3.0


@tack.kernel
def sph_density(particle_x, particle_rho, density_normalization, smoothing_length):
    for i in range(particle_x.shape[0]):
        x = particle_x[i]
        rho = float(0.0)
        for index in range(particle_x.shape[0]):
            distance = x - particle_x[index]
            rho += sph_density_kernel(distance, smoothing_length)
        particle_rho[i] = density_normalization * rho


def test_warp_sph_density(device):
    rng = np.random.default_rng(12)
    x = rng.random((300, 3)).astype(np.float32)
    X = tack.array(x, dtype=tack.vec3f, device=device)
    rho = tack.zeros(300, device=device)
    sph_density(X, rho, 2.5, 0.3)
    d = x[:, None, :].astype(np.float64) - x[None, :, :]
    ref = 2.5 * (np.maximum(0.09 - (d ** 2).sum(-1), 0.0) ** 3).sum(1)
    np.testing.assert_allclose(rho.numpy(), ref, rtol=1e-4, atol=1e-9)


@tack.func
def row_distance(a, b):
    s = 0.0
    for k in range(a.shape[0]):
        d = a[k] - b[k]
        s += d * d
    return tack.math.sqrt(s)


def test_scalar_passed_to_device_function_that_indexes_it(device):
    @tack.kernel
    def scalar_rows(c, out):
        for i in range(c.shape[0]):
            out[i] = row_distance(c[i], c[0])

    # a 1-D array's element is a scalar: indexing it in the function is refused
    with pytest.raises(tack.CompileError):
        scalar_rows(np.ones(4, np.float32), np.zeros(4, np.float32))


BOUND = 3


@tack.kernel
def mpm_grid_op(grid_v, grid_m):
    for i, j in tack.ndindex(grid_v.shape[0], grid_v.shape[1]):
        if grid_m[i, j] > 0:
            grid_v[i, j] /= grid_m[i, j]
        grid_v[i, j].y -= DT * 50
        if i < BOUND and grid_v[i, j].x < 0:
            grid_v[i, j].x = 0
        if i > N_GRID - BOUND and grid_v[i, j].x > 0:
            grid_v[i, j].x = 0
        if j < BOUND and grid_v[i, j].y < 0:
            grid_v[i, j].y = 0
        if j > N_GRID - BOUND and grid_v[i, j].y > 0:
            grid_v[i, j].y = 0


def test_taichi_mpm88_grid_op(device):
    rng = np.random.default_rng(14)
    gv = rng.standard_normal((N_GRID, N_GRID, 2)).astype(np.float32)
    gm = rng.uniform(-0.5, 1, (N_GRID, N_GRID)).astype(np.float32)
    ref = gv.copy()
    pos = gm > 0
    ref[pos] /= gm[pos][:, None]
    ref[..., 1] -= np.float32(DT * 50)
    I, J = np.meshgrid(np.arange(N_GRID), np.arange(N_GRID), indexing="ij")
    ref[..., 0][(I < BOUND) & (ref[..., 0] < 0)] = 0
    ref[..., 0][(I > N_GRID - BOUND) & (ref[..., 0] > 0)] = 0
    ref[..., 1][(J < BOUND) & (ref[..., 1] < 0)] = 0
    ref[..., 1][(J > N_GRID - BOUND) & (ref[..., 1] > 0)] = 0
    G = tack.array(gv, dtype=tack.vec2f, device=device)
    M = tack.array(gm, device=device)
    mpm_grid_op(G, M)
    np.testing.assert_array_equal(G.numpy(), ref)
