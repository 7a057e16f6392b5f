"""Idioms of Numba, Warp and Taichi programs as their users first write them
(a held-out sweep of this stop): Numba's `prange` kept as imported,
`n, m = x.shape` and `h, w = a, b` before the loop, each against NumPy on
every device."""
import sys
import types

import numpy as np
import pytest

import tack

pytestmark = pytest.mark.every_device


def _fake_numba_prange():
    """A stand-in for numba.prange where Numba is not installed: a class
    named prange in a module of numba's, as numba.misc.special defines it."""
    try:
        from numba import prange
        return prange
    except ImportError:
        return types.new_class("prange", exec_body=lambda ns: ns.update(__module__="numba.misc.special"))


prange = _fake_numba_prange()


@tack.kernel
def roots(x, out):
    for i in prange(x.shape[0]):
        out[i] = np.sqrt(x[i])


def test_numba_prange_is_a_range(device):
    x = np.arange(11.0)
    out = np.zeros(11)
    roots(x, out)
    np.testing.assert_allclose(out, np.sqrt(x))


class NotNumba:
    pass


NotNumba.__name__ = "prange"
other_prange = NotNumba


@tack.kernel
def other(x, out):
    for i in other_prange(x.shape[0]):
        out[i] = x[i]


def test_another_prange_class_is_refused(device):
    with pytest.raises(tack.CompileError, match="other_prange"):
        other(np.zeros(3), np.zeros(3))


@tack.kernel
def row_sums(x, out):
    n, m = x.shape
    for i in range(n):
        s = 0.0
        for j in range(m):
            s += x[i, j]
        out[i] = s


@pytest.mark.parametrize("shape", [(4, 5), (1, 7), (0, 3), (6, 0)])
def test_shape_unpacked_before_the_loop(device, shape):
    x = np.random.default_rng(1).random(shape)
    out = np.full(shape[0], -1.0)
    row_sums(x, out)
    np.testing.assert_allclose(out, x.sum(1))


@tack.kernel
def blur(img, out):
    h, w = img.shape[0], img.shape[1]
    for y, x in tack.ndindex(h, w):
        acc = 0.0
        cnt = 0
        for dy in range(-1, 2):
            for dx in range(-1, 2):
                yy = y + dy
                xx = x + dx
                if 0 <= yy < h and 0 <= xx < w:
                    acc += img[yy, xx]
                    cnt += 1
        out[y, x] = acc / cnt


def test_tuple_of_values_unpacked_before_the_loop(device):
    img = np.random.default_rng(2).random((6, 5))
    out = np.zeros_like(img)
    blur(img, out)
    want = np.zeros_like(img)
    for y in range(6):
        for x in range(5):
            want[y, x] = img[max(y - 1, 0):y + 2, max(x - 1, 0):x + 2].mean()
    np.testing.assert_allclose(out, want, rtol=1e-12)


@tack.kernel
def swapped(x, out, a):
    # Python reads s before assigning it (a NameError there); one statement
    # per name would read the new s: not split, refused as before.
    s, t = a, s
    for i in range(x.shape[0]):
        out[i] = x[i] * s + t


def test_unpacking_that_reads_its_own_names_is_refused(device):
    out = np.zeros(3)
    with pytest.raises(tack.CompileError, match="test_first_written_idioms.py"):
        swapped(np.ones(3), out, 2.0)
    assert (out == 0).all()


# ---- Taichi: struct-for as the launch, ti.atomic_add(element, v), list
# constructors, ti.cast, ti.math.X ----

@tack.kernel
def doubled(x, out):
    for i in x:
        out[i] = x[i] * 2 + i


@tack.kernel
def grid_op(g, out):
    for i, j in g:
        out[i, j] = g[i, j] * 10 + i - j


@tack.kernel
def grid_vec(g, out):
    for I in g:
        out[I] = tack.length(g[I]) + I[0]


@pytest.mark.parametrize("n", [0, 1, 9])
def test_struct_for_one_dimension(device, n):
    x = np.arange(n, dtype=np.float64)
    out = np.full(n, -1.0)
    doubled(x, out)
    np.testing.assert_array_equal(out, x * 2 + np.arange(n))


def test_struct_for_two_dimensions(device):
    g = np.random.default_rng(3).random((4, 5))
    out = np.zeros_like(g)
    grid_op(g, out)
    i, j = np.indices(g.shape)
    np.testing.assert_allclose(out, g * 10 + i - j)


def test_struct_for_over_vectors_with_an_index_vector(device):
    g = np.random.default_rng(4).random((3, 2, 2))
    out = np.zeros((3, 2))
    grid_vec(tack.array(g, dtype=tack.vec2d, device=device), out)
    np.testing.assert_allclose(out, np.linalg.norm(g, axis=-1) + np.arange(3)[:, None])


@tack.kernel
def wrong_names(g, out):
    for i, j, k in g:
        out[i, j] = g[i, j]


def test_struct_for_with_the_wrong_number_of_names(device):
    with pytest.raises(tack.CompileError, match="3 names|2 names"):
        wrong_names(np.ones((2, 2)), np.zeros((2, 2)))


@tack.kernel
def p2g(cell, w, grid, grid2):
    for p in range(cell.shape[0]):
        tack.atomic_add(grid[cell[p]], w[p])
        tack.atomic_max(grid2[cell[p], 1], w[p])


def test_atomic_on_an_element(device):
    cell = np.array([0, 1, 1, 3, 3, 3], np.int64)
    w = np.arange(1.0, 7.0)
    grid, grid2 = np.zeros(4), np.zeros((4, 2))
    p2g(cell, w, grid, grid2)
    np.testing.assert_allclose(grid, np.bincount(cell, w, 4))
    want = np.zeros((4, 2))
    np.maximum.at(want[:, 1], cell, w)
    np.testing.assert_allclose(grid2, want)


@tack.kernel
def list_built(v, out, m_out):
    for i in range(v.shape[0]):
        a = tack.vec3([v[i], 2.0 * v[i], 1.0])
        m = tack.mat22d([[1.0, v[i]], [0.0, 2.0]])
        out[i] = a.sum() + tack.cast(v[i] * 2.9, tack.i32) + tack.cast(i, np.float64) * 0.5
        m_out[i] = m @ tack.vec2d([1.0, 1.0])


def test_list_constructors_and_cast(device):
    v = np.array([0.5, 1.5, -2.0])
    out = np.zeros(3)
    m_out = tack.zeros(3, dtype=tack.vec2d, device=device)
    list_built(v, out, m_out)
    np.testing.assert_allclose(out, 3 * v + 1 + np.trunc(v * 2.9) + 0.5 * np.arange(3))
    np.testing.assert_allclose(m_out.numpy(), np.stack([1 + v, np.full(3, 2.0)], 1))


@tack.kernel
def taichi_math(x, out):
    for i in range(x.shape[0]):
        out[i] = tack.math.clamp(x[i], 0.0, 1.0) + tack.math.fract(x[i]) + tack.math.mix(0.0, 2.0, 0.25)


def test_taichi_math_names(device):
    x = np.array([1.5, -0.25, 0.3])
    out = np.zeros(3)
    taichi_math(x, out)
    np.testing.assert_allclose(out, np.clip(x, 0, 1) + (x - np.floor(x)) + 0.5)


@tack.kernel
def bad_cast(x, out):
    for i in range(x.shape[0]):
        out[i] = tack.cast(x[i], 3)


def test_cast_needs_a_dtype(device):
    with pytest.raises(tack.CompileError, match="scalar dtype"):
        bad_cast(np.ones(2), np.zeros(2))


def test_taichi_none_index_names_the_workaround():
    with pytest.raises(tack.CompileError, match=r"x\[None\].*1-element array.*x\[0\]"):
        @tack.kernel
        def total_of(x, total):
            for i in range(x.shape[0]):
                total[None] += x[i]


# ---- Taichi's mpm88 as its users write it: struct-for launches, lists
# stored into vector elements, tables of weights, tack.mat22f(0.0) ----

N_PARTICLES, n_grid = 256, 32
dx = 1 / n_grid
dt = 2e-4
p_vol = (dx * 0.5) ** 2
p_mass = p_vol
gravity = 9.8
bound = 3
E = 400


@tack.kernel
def substep(x, v, C, J, grid_v, grid_m):
    for i, j in grid_m:
        grid_v[i, j] = [0, 0]
        grid_m[i, j] = 0
    for p in x:
        Xp = x[p] / dx
        base = int(Xp - 0.5)
        fx = Xp - base
        w = [0.5 * (1.5 - fx) ** 2, 0.75 - (fx - 1) ** 2, 0.5 * (fx - 0.5) ** 2]
        stress = -dt * 4 * E * p_vol * (J[p] - 1) / dx ** 2
        affine = tack.mat22f([[stress, 0], [0, stress]]) + p_mass * C[p]
        for i, j in tack.static(tack.ndindex(3, 3)):
            offset = tack.vec2i(i, j)
            dpos = (offset - fx) * dx
            weight = w[i].x * w[j].y
            grid_v[base + offset] += weight * (p_mass * v[p] + affine @ dpos)
            grid_m[base + offset] += weight * p_mass
    for i, j in grid_m:
        if grid_m[i, j] > 0:
            grid_v[i, j] /= grid_m[i, j]
        grid_v[i, j].y -= dt * gravity
        if i < bound and grid_v[i, j].x < 0:
            grid_v[i, j].x = 0
        if i > n_grid - bound and grid_v[i, j].x > 0:
            grid_v[i, j].x = 0
        if j < bound and grid_v[i, j].y < 0:
            grid_v[i, j].y = 0
        if j > n_grid - bound and grid_v[i, j].y > 0:
            grid_v[i, j].y = 0
    for p in x:
        Xp = x[p] / dx
        base = int(Xp - 0.5)
        fx = Xp - base
        w = [0.5 * (1.5 - fx) ** 2, 0.75 - (fx - 1) ** 2, 0.5 * (fx - 0.5) ** 2]
        new_v = tack.vec2f(0.0)
        new_C = tack.mat22f(0.0)
        for i, j in tack.static(tack.ndindex(3, 3)):
            offset = tack.vec2i(i, j)
            dpos = (offset - fx) * dx
            weight = w[i].x * w[j].y
            g_v = grid_v[base + offset]
            new_v += weight * g_v
            new_C += 4 * weight * tack.outer(g_v, dpos) / dx ** 2
        v[p] = new_v
        x[p] += dt * v[p]
        J[p] *= 1 + dt * new_C.trace()
        C[p] = new_C


def ref_step(x, v, C, J):
    gv = np.zeros((n_grid, n_grid, 2)); gm = np.zeros((n_grid, n_grid))
    Xp = x / dx; base = (Xp - 0.5).astype(int); fx = Xp - base
    w = [0.5 * (1.5 - fx) ** 2, 0.75 - (fx - 1) ** 2, 0.5 * (fx - 0.5) ** 2]
    stress = -dt * 4 * E * p_vol * (J - 1) / dx ** 2
    affine = stress[:, None, None] * np.eye(2) + p_mass * C
    for i in range(3):
        for j in range(3):
            off = np.array([i, j]); dpos = (off - fx) * dx
            weight = w[i][:, 0] * w[j][:, 1]
            idx = base + off
            np.add.at(gv, (idx[:, 0], idx[:, 1]), weight[:, None] * (p_mass * v + np.einsum('nij,nj->ni', affine, dpos)))
            np.add.at(gm, (idx[:, 0], idx[:, 1]), weight * p_mass)
    m = gm > 0
    gv[m] /= gm[m][:, None]
    gv[..., 1] -= dt * gravity
    I, Jj = np.indices((n_grid, n_grid))
    gv[..., 0] = np.where((I < bound) & (gv[..., 0] < 0), 0, gv[..., 0])
    gv[..., 0] = np.where((I > n_grid - bound) & (gv[..., 0] > 0), 0, gv[..., 0])
    gv[..., 1] = np.where((Jj < bound) & (gv[..., 1] < 0), 0, gv[..., 1])
    gv[..., 1] = np.where((Jj > n_grid - bound) & (gv[..., 1] > 0), 0, gv[..., 1])
    nv = np.zeros_like(v); nC = np.zeros_like(C)
    for i in range(3):
        for j in range(3):
            off = np.array([i, j]); dpos = (off - fx) * dx
            weight = w[i][:, 0] * w[j][:, 1]
            idx = base + off
            g = gv[idx[:, 0], idx[:, 1]]
            nv += weight[:, None] * g
            nC += 4 * weight[:, None, None] * np.einsum('ni,nj->nij', g, dpos) / dx ** 2
    x = x + dt * nv
    J = J * (1 + dt * np.trace(nC, axis1=1, axis2=2))
    return x, nv, nC, J


def test_taichi_mpm88_as_written(device):
    g = np.random.default_rng(0)
    x0 = g.random((N_PARTICLES, 2)) * 0.4 + 0.2
    v0 = np.tile([0.3, -1.0], (N_PARTICLES, 1))
    rx, rv, rC, rJ = x0.copy(), v0.copy(), np.zeros((N_PARTICLES, 2, 2)), np.ones(N_PARTICLES)
    x = tack.array(x0.astype(np.float32), dtype=tack.vec2f, device=device)
    v = tack.array(v0.astype(np.float32), dtype=tack.vec2f, device=device)
    C = tack.zeros(N_PARTICLES, dtype=tack.mat22f, device=device)
    J = tack.array(np.ones(N_PARTICLES, np.float32), device=device)
    grid_v = tack.zeros((n_grid, n_grid), dtype=tack.vec2f, device=device)
    grid_m = tack.zeros((n_grid, n_grid), dtype=tack.f32, device=device)
    for _ in range(10):
        substep(x, v, C, J, grid_v, grid_m)
        rx, rv, rC, rJ = ref_step(rx, rv, rC, rJ)
    np.testing.assert_allclose(x.numpy(), rx, atol=1e-5)
    np.testing.assert_allclose(v.numpy(), rv, atol=1e-3)
    np.testing.assert_allclose(C.numpy(), rC, atol=2e-2, rtol=1e-3)
    np.testing.assert_allclose(J.numpy(), rJ, atol=1e-5)


@tack.kernel
def list_stores(v, m, out):
    for i in v:
        v[i] = [i, 2 * i]
        m[i] = [[1.0, i], [i * i, 0.5]]
        out[i] = tack.mat22d(0.25).trace() + tack.mat22d(i)[1, 0]


def test_lists_stored_into_elements_and_scalar_filled_matrices(device):
    n = 5
    v = tack.zeros(n, dtype=tack.vec2d, device=device)
    m = tack.zeros(n, dtype=tack.mat22d, device=device)
    out = np.zeros(n)
    list_stores(v, m, out)
    i = np.arange(n, dtype=np.float64)
    np.testing.assert_array_equal(v.numpy(), np.stack([i, 2 * i], 1))
    np.testing.assert_array_equal(m.numpy(), np.stack([np.stack([np.ones(n), i], 1),
                                                       np.stack([i * i, np.full(n, 0.5)], 1)], 1))
    np.testing.assert_array_equal(out, 0.5 + i)


# ---- Taichi's cloth (fast_mass_spring) as written: ti.grouped launches,
# a static loop over a module-level table of offsets, x[i] - x[j] with
# integer-vector indices, .normalized()/.norm()/.dot(), v[i] *= ... ----

CLOTH_N = 8
QUAD = 1.0 / CLOTH_N
CLOTH_DT = 4e-2 / 128  # the original's step (n = 128): stable for these springs
SPRING_Y = 3e4
# The original's dashpot reads v[j] while other iterations write v[i] in
# the same launch (a race, in Taichi too): off here, so that the result
# does not depend on the order iterations run in.
DASHPOT = 0.0
DRAG = 1.0
BALL_R = 0.3
SPRING_OFFSETS = tuple((i, j) for i in range(-2, 3) for j in range(-2, 3)
                       if (i, j) != (0, 0) and abs(i) + abs(j) <= 2)


@tack.kernel
def cloth_step(x, v, ball_center):
    for i in tack.grouped(x):
        v[i] += tack.vec3f(0.0, -9.8, 0.0) * CLOTH_DT
    for i in tack.grouped(x):
        force = tack.vec3f([0.0, 0.0, 0.0])
        for spring_offset in tack.static(SPRING_OFFSETS):
            j = i + spring_offset
            if 0 <= j[0] < CLOTH_N and 0 <= j[1] < CLOTH_N:
                x_ij = x[i] - x[j]
                v_ij = v[i] - v[j]
                d = x_ij.normalized()
                current_dist = x_ij.norm()
                original_dist = QUAD * tack.cast(i - j, tack.f32).norm()
                force += -SPRING_Y * d * (current_dist / original_dist - 1)
                force += -v_ij.dot(d) * d * DASHPOT * QUAD
        v[i] += force * CLOTH_DT
    for i in tack.grouped(x):
        v[i] *= tack.exp(-DRAG * CLOTH_DT)
        offset_to_center = x[i] - ball_center[0]
        if offset_to_center.norm() <= BALL_R:
            normal = offset_to_center.normalized()
            v[i] -= min(v[i].dot(normal), 0) * normal
        x[i] += CLOTH_DT * v[i]


def cloth_reference(x, v, c):
    n = CLOTH_N
    v = v + np.array([0.0, -9.8, 0.0]) * CLOTH_DT
    f = np.zeros_like(v)
    for a in range(n):
        for b in range(n):
            for di, dj in SPRING_OFFSETS:
                p, q = a + di, b + dj
                if 0 <= p < n and 0 <= q < n:
                    xij, vij = x[a, b] - x[p, q], v[a, b] - v[p, q]
                    d = xij / np.linalg.norm(xij)
                    orig = QUAD * np.hypot(di, dj)
                    f[a, b] += -SPRING_Y * d * (np.linalg.norm(xij) / orig - 1)
                    f[a, b] += -(vij @ d) * d * DASHPOT * QUAD
    v = (v + f * CLOTH_DT) * np.exp(-DRAG * CLOTH_DT)
    off = x - c
    dist = np.linalg.norm(off, axis=-1)
    normal = off / dist[..., None]
    hit = dist <= BALL_R
    v[hit] -= np.minimum((v * normal).sum(-1), 0)[hit][:, None] * normal[hit]
    return x + CLOTH_DT * v, v


def test_taichi_cloth_as_written(device):
    n = CLOTH_N
    i, j = np.indices((n, n))
    x0 = np.stack([i * QUAD - 0.5, np.full((n, n), 0.2), j * QUAD - 0.5], -1)
    rx, rv = x0.copy(), np.zeros_like(x0)
    x = tack.array(x0.astype(np.float32), dtype=tack.vec3f, device=device)
    v = tack.zeros((n, n), dtype=tack.vec3f, device=device)
    ball = tack.array(np.zeros((1, 3), np.float32), dtype=tack.vec3f, device=device)
    for _ in range(40):
        cloth_step(x, v, ball)
        rx, rv = cloth_reference(rx, rv, np.zeros(3))
    assert np.abs(rx - x0).max() > 5e-4  # it fell, and the ball held its middle
    np.testing.assert_allclose(x.numpy(), rx, atol=1e-6)
    np.testing.assert_allclose(v.numpy(), rv, atol=5e-4)
