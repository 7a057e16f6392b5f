"""Issue 27, a held-out sweep: small kernels in the vocabulary of Warp's,
Taichi's and Numba's language references (vector, matrix, quaternion,
transform and spatial-vector built-ins; Taichi's methods and ti.math;
complex numbers and cmath; math/NumPy functions in prange loops; statements
around the loops; CPU workgroups), written as a user porting them after
reading docs/*.md would first write them, each checked against NumPy on
every device."""
import cmath
import math

import numpy as np
import pytest

import tack
from conftest import line_of

pytestmark = pytest.mark.every_device


def rng(seed):
    return np.random.default_rng(seed)


def varr(x, dtype, device):
    """A Tack array of vectors/matrices of `dtype` on the test's device."""
    return tack.array(np.ascontiguousarray(x), dtype=dtype, device=device)


# ---- Warp: SPH density with length() over all pairs ----

@tack.kernel
def sph_density(x, rho, h):
    for i in range(x.shape[0]):
        s = 0.0
        for j in range(x.shape[0]):
            r = tack.length(x[i] - x[j])
            if r < h:
                q = h * h - r * r
                s += q * q * q
        rho[i] = s


def test_warp_sph_density(device):
    p = rng(1).random((40, 3)).astype(np.float32)
    rho = np.zeros(40, np.float32)
    sph_density(varr(p, tack.vec3f, device), rho, 0.4)
    d = np.linalg.norm(p[:, None] - p[None], axis=-1)
    want = np.where(d < 0.4, (0.16 - d * d) ** 3, 0).sum(1)
    np.testing.assert_allclose(rho, want, rtol=1e-4, atol=1e-7)


# ---- Warp: springs with normalize() and vector atomics ----

@tack.kernel
def spring_forces(x, springs, rest, f, k):
    for s in range(springs.shape[0]):
        a = springs[s, 0]
        b = springs[s, 1]
        d = x[b] - x[a]
        l = tack.length(d)
        fs = tack.normalize(d) * (k * (l - rest[s]))
        tack.atomic_add(f, a, fs)
        tack.atomic_sub(f, b, fs)


def test_warp_spring_forces(device):
    n = 12
    p = rng(2).random((n, 3))
    sp = np.array([[i, (i + 1) % n] for i in range(n)] + [[i, (i + 5) % n] for i in range(n)],
                  np.int32)
    rest = rng(3).random(len(sp)) * 0.3
    f = varr(np.zeros((n, 3)), tack.vec3d, device)
    spring_forces(varr(p, tack.vec3d, device), sp, rest, f, 2.5)
    want = np.zeros((n, 3))
    for (a, b), r in zip(sp, rest):
        d = p[b] - p[a]
        l = np.linalg.norm(d)
        fs = d / l * 2.5 * (l - r)
        want[a] += fs
        want[b] -= fs
    np.testing.assert_allclose(f.numpy(), want, rtol=1e-12, atol=1e-12)


# ---- Warp: triangle normals, unpacking an integer-vector element ----

@tack.kernel
def tri_normals(x, tris, n_out, area):
    for t in range(tris.shape[0]):
        ia, ib, ic = tris[t]
        nrm = tack.cross(x[ib] - x[ia], x[ic] - x[ia])
        area[t] = 0.5 * tack.length(nrm)
        n_out[t] = tack.normalize(nrm)


def test_warp_triangle_normals(device):
    p = rng(4).random((10, 3)).astype(np.float32)
    tri = rng(5).integers(0, 10, (16, 3)).astype(np.int32)
    tri[:, 1] = (tri[:, 0] + 1) % 10
    tri[:, 2] = (tri[:, 0] + 3) % 10
    nout = varr(np.zeros((16, 3), np.float32), tack.vec3f, device)
    area = np.zeros(16, np.float32)
    tri_normals(varr(p, tack.vec3f, device), varr(tri, tack.vec3i, device), nout, area)
    c = np.cross(p[tri[:, 1]] - p[tri[:, 0]], p[tri[:, 2]] - p[tri[:, 0]])
    ln = np.linalg.norm(c, axis=1)
    np.testing.assert_allclose(area, 0.5 * ln, rtol=1e-5)
    np.testing.assert_allclose(nout.numpy(), c / ln[:, None], rtol=1e-5, atol=1e-6)


# ---- Warp: outer, trace, ddot, skew, diag, transpose ----

@tack.kernel
def matrix_builtins(a, b, out):
    for i in range(a.shape[0]):
        m = tack.outer(a[i], b[i]) + tack.diag(b[i])
        s = tack.trace(m) + tack.ddot(m, tack.transpose(m))
        w = tack.skew(a[i]) @ b[i]
        out[i] = s + tack.dot(w, tack.cross(a[i], b[i]))


def test_warp_matrix_builtins(device):
    a, b = rng(6).random((8, 3)), rng(7).random((8, 3))
    out = np.zeros(8)
    matrix_builtins(varr(a, tack.vec3d, device), varr(b, tack.vec3d, device), out)
    m = np.einsum("ni,nj->nij", a, b) + b[:, :, None] * np.eye(3)
    c = np.cross(a, b)
    want = np.trace(m, axis1=1, axis2=2) + (m * m.transpose(0, 2, 1)).sum((1, 2)) + (c * c).sum(1)
    np.testing.assert_allclose(out, want, rtol=1e-12)


# ---- Warp: quaternion from axis-angle rotating vectors, vs. its matrix ----

@tack.kernel
def quat_spin(axis, ang, v, out, err):
    for i in range(v.shape[0]):
        q = tack.quat_from_axis_angle(tack.normalize(axis[0]), ang[i])
        r = tack.quat_rotate(q, v[i])
        out[i] = r
        err[i] = tack.length(tack.quat_to_matrix(q) @ v[i] - r)


def test_warp_quaternion_spin(device):
    n = 10
    ax = np.array([[0.0, 0.0, 2.0]], np.float32)
    ang = np.linspace(0, 3, n).astype(np.float32)
    v = rng(8).random((n, 3)).astype(np.float32)
    out = varr(np.zeros((n, 3), np.float32), tack.vec3f, device)
    err = np.ones(n, np.float32)
    quat_spin(varr(ax, tack.vec3f, device), ang, varr(v, tack.vec3f, device), out, err)
    c, s = np.cos(ang), np.sin(ang)
    want = np.stack([c * v[:, 0] - s * v[:, 1], s * v[:, 0] + c * v[:, 1], v[:, 2]], 1)
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-5, atol=1e-5)
    assert err.max() < 1e-5


# ---- Warp: transforms, inverse applied to a point ----

@tack.kernel
def to_local(body, pts, out):
    for i in range(pts.shape[0]):
        t = tack.transform(body[0], tack.quat_from_axis_angle(tack.vec3f(0.0, 1.0, 0.0), 0.5))
        out[i] = tack.transform_point(tack.transform_inverse(t), pts[i])


def test_warp_transform_inverse_point(device):
    pos = np.array([[1.0, 2.0, 3.0]], np.float32)
    pts = rng(9).random((6, 3)).astype(np.float32)
    out = varr(np.zeros((6, 3), np.float32), tack.vec3f, device)
    to_local(varr(pos, tack.vec3f, device), varr(pts, tack.vec3f, device), out)
    c, s = math.cos(0.5), math.sin(0.5)
    R = np.array([[c, 0, s], [0, 1, 0], [-s, 0, c]])
    want = (pts - pos) @ R          # R^T (p - pos), row by row
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-5, atol=1e-5)


# ---- Warp: spatial vectors (Featherstone), top/bottom/dot/cross ----

@tack.kernel
def spatial_ops(w, v, out, d):
    for i in range(w.shape[0]):
        a = tack.spatial_vector(w[i], v[i])
        b = tack.spatial_vector(v[i], w[i])
        c = tack.spatial_cross(a, b)
        out[i] = tack.spatial_top(c) + 2.0 * tack.spatial_bottom(c)
        e = tack.spatial_vectorf(1.0, 2.0, 3.0, 4.0, 5.0, 6.0)
        d[i] = tack.spatial_dot(a, tack.spatial_cross_dual(a, b)) + tack.spatial_dot(e, b)


def np_spatial_cross(a, b):
    wa, va, wb, vb = a[:, :3], a[:, 3:], b[:, :3], b[:, 3:]
    return np.concatenate([np.cross(wa, wb), np.cross(wa, vb) + np.cross(va, wb)], 1)


def np_spatial_cross_dual(a, b):
    wa, va, wb, vb = a[:, :3], a[:, 3:], b[:, :3], b[:, 3:]
    return np.concatenate([np.cross(wa, wb) + np.cross(va, vb), np.cross(wa, vb)], 1)


def test_warp_spatial_vectors(device):
    w, v = rng(10).random((7, 3)), rng(11).random((7, 3))
    out = varr(np.zeros((7, 3)), tack.vec3d, device)
    d = np.zeros(7)
    spatial_ops(varr(w, tack.vec3d, device), varr(v, tack.vec3d, device), out, d)
    a, b = np.concatenate([w, v], 1), np.concatenate([v, w], 1)
    c = np_spatial_cross(a, b)
    np.testing.assert_allclose(out.numpy(), c[:, :3] + 2 * c[:, 3:], rtol=1e-12)
    want = (a * np_spatial_cross_dual(a, b)).sum(1) + (b * np.arange(1, 7)).sum(1)
    np.testing.assert_allclose(d, want, rtol=1e-10, atol=1e-12)


# ---- Warp: zero constructor, accumulation, unpacking, clamp/lerp on vectors ----

@tack.kernel
def centroid_blend(x, idx, out):
    for i in range(idx.shape[0]):
        acc = tack.vec3f()
        for k in range(4):
            acc += x[idx[i, k]]
        c = acc * 0.25
        a, b, e = tack.clamp(tack.lerp(x[i], c, 0.5), 0.2, 0.8)
        out[i] = tack.vec3f(e, b, a)


def test_warp_zero_vector_lerp_clamp(device):
    p = rng(12).random((20, 3)).astype(np.float32)
    idx = rng(13).integers(0, 20, (20, 4)).astype(np.int32)
    out = varr(np.zeros((20, 3), np.float32), tack.vec3f, device)
    centroid_blend(varr(p, tack.vec3f, device), idx, out)
    c = p[idx].mean(1)
    want = np.clip(p + 0.5 * (c - p), 0.2, 0.8)[:, ::-1]
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-5, atol=1e-6)


# ---- Warp: deformation gradient, determinant and stored matrices ----

@tack.kernel
def neo_hookean(x, tets, Dm_inv, F_out, J_out):
    for t in range(tets.shape[0]):
        i, j, k, l = tets[t, 0], tets[t, 1], tets[t, 2], tets[t, 3]
        x0 = x[i]
        Ds = tack.matrix_from_cols(x[j] - x0, x[k] - x0, x[l] - x0)
        F = Ds @ Dm_inv[t]
        F_out[t] = F
        J_out[t] = tack.determinant(F)


def test_warp_tet_deformation(device):
    n = 8
    x = rng(14).random((n, 3))
    tets = np.array([[0, 1, 2, 3], [4, 5, 6, 7], [1, 3, 5, 7]], np.int32)
    Dm = rng(15).random((3, 3, 3)) + 2 * np.eye(3)
    Dm_inv = np.linalg.inv(Dm)
    F = varr(np.zeros((3, 3, 3)), tack.mat33d, device)
    J = np.zeros(3)
    neo_hookean(varr(x, tack.vec3d, device), tets, varr(Dm_inv, tack.mat33d, device), F, J)
    Ds = np.stack([x[tets[:, 1]] - x[tets[:, 0]], x[tets[:, 2]] - x[tets[:, 0]],
                   x[tets[:, 3]] - x[tets[:, 0]]], 2)
    want = Ds @ Dm_inv
    np.testing.assert_allclose(F.numpy(), want, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(J, np.linalg.det(want), rtol=1e-10, atol=1e-12)


# ---- Warp: identity with keywords, as wp.identity(n=3, dtype=float) ----

@tack.kernel
def identity_kw(a, out):
    for i in range(a.shape[0]):
        m = tack.identity(n=3, dtype=tack.f64) * a[i]
        out[i] = m[1, 1] + m[0, 1]


def test_warp_identity_keywords(device):
    a = rng(16).random(5)
    out = np.zeros(5)
    identity_kw(a, out)
    np.testing.assert_allclose(out, a)


# ---- Taichi: methods on vectors and matrices ----

@tack.kernel
def taichi_methods(u, v, out):
    for i in range(u.shape[0]):
        a = u[i]
        b = v[i]
        m = a.outer_product(b)
        n = a.cross(b).normalized()
        out[i] = a.norm() + b.norm_sqr() + a.dot(n) + m.transpose().trace() + m.determinant() \
            + (m + tack.identity(3, tack.f64)).inverse()[0, 0] + a.max() + b.sum()


def test_taichi_methods(device):
    u, v = rng(17).random((6, 3)), rng(18).random((6, 3))
    out = np.zeros(6)
    taichi_methods(varr(u, tack.vec3d, device), varr(v, tack.vec3d, device), out)
    m = np.einsum("ni,nj->nij", u, v)
    n = np.cross(u, v)
    n /= np.linalg.norm(n, axis=1)[:, None]
    want = (np.linalg.norm(u, axis=1) + (v * v).sum(1) + (u * n).sum(1)
            + np.trace(m, axis1=1, axis2=2) + np.linalg.det(m)
            + np.linalg.inv(m + np.eye(3))[:, 0, 0] + u.max(1) + v.sum(1))
    np.testing.assert_allclose(out, want, rtol=1e-10, atol=1e-12)


# ---- Taichi: ti.math's GLSL functions (mix, fract, distance, reflect, refract) ----

@tack.kernel
def glsl_funcs(d, nrm, out, dist, f):
    for i in range(d.shape[0]):
        r = tack.reflect(d[i], nrm[i])
        t = tack.refract(d[i], nrm[i], 0.8)
        out[i] = tack.mix(r, t, 0.25)
        dist[i] = tack.distance(d[i], nrm[i])
        f[i] = tack.fract(dist[i] * 3.0) + tack.fract(d[i] * -2.5).y


def np_refract(I, N, eta):
    k = 1.0 - eta * eta * (1.0 - (N * I).sum(1) ** 2)
    t = eta * I - (eta * (N * I).sum(1) + np.sqrt(np.maximum(k, 0)))[:, None] * N
    return np.where((k < 0)[:, None], 0.0, t)


def test_taichi_glsl_functions(device):
    d = rng(19).normal(size=(9, 3))
    d /= np.linalg.norm(d, axis=1)[:, None]
    nrm = rng(20).normal(size=(9, 3))
    nrm /= np.linalg.norm(nrm, axis=1)[:, None]
    out = varr(np.zeros((9, 3)), tack.vec3d, device)
    dist, f = np.zeros(9), np.zeros(9)
    glsl_funcs(varr(d, tack.vec3d, device), varr(nrm, tack.vec3d, device), out, dist, f)
    r = d - 2 * (d * nrm).sum(1)[:, None] * nrm
    t = np_refract(d, nrm, 0.8)
    np.testing.assert_allclose(out.numpy(), r + 0.25 * (t - r), rtol=1e-10, atol=1e-12)
    want = np.linalg.norm(d - nrm, axis=1)
    np.testing.assert_allclose(dist, want, rtol=1e-12)
    fr = want * 3 - np.floor(want * 3) + (d[:, 1] * -2.5 - np.floor(d[:, 1] * -2.5))
    np.testing.assert_allclose(f, fr, rtol=1e-9, atol=1e-12)


# ---- Taichi: mpm-style static loops over a weights list, matrix indices ----

@tack.kernel
def p2g_weights(xp, Cp, grid, inv_dx):
    for p in range(xp.shape[0]):
        base = tack.vec2i(xp[p] * inv_dx - 0.5)
        fx = xp[p] * inv_dx - tack.vec2f(base)
        w = [0.5 * (1.5 - fx) ** 2, 0.75 - (fx - 1.0) ** 2, 0.5 * (fx - 0.5) ** 2]
        for i in tack.static(range(3)):
            for j in tack.static(range(3)):
                offset = tack.vec2i(i, j)
                dpos = (tack.vec2f(offset) - fx) / inv_dx
                weight = w[i].x * w[j].y
                grid[base + offset] += weight * (1.0 + Cp[p][0, 1] * dpos[0] + Cp[p][i % 2, j % 2])


def test_taichi_p2g_static_weights(device):
    n, g = 30, 16
    xp = (rng(21).random((n, 2)) * 0.6 + 0.2).astype(np.float32)
    C = rng(22).random((n, 2, 2)).astype(np.float32)
    grid = np.zeros((g, g), np.float32)
    p2g_weights(varr(xp, tack.vec2f, device), varr(C, tack.mat22f, device), grid, float(g))
    want = np.zeros((g, g))
    for p in range(n):
        X = xp[p].astype(np.float64) * g
        base = (X - 0.5).astype(int)
        fx = X - base
        w = [0.5 * (1.5 - fx) ** 2, 0.75 - (fx - 1) ** 2, 0.5 * (fx - 0.5) ** 2]
        for i in range(3):
            for j in range(3):
                dpos = (np.array([i, j]) - fx) / g
                want[base[0] + i, base[1] + j] += w[i][0] * w[j][1] * (
                    1 + C[p][0, 1] * dpos[0] + C[p][i % 2, j % 2])
    np.testing.assert_allclose(grid, want, rtol=1e-4, atol=1e-5)


# ---- Taichi: ti.grouped, and the same stencil written with ndindex ----

@tack.kernel
def grouped_laplace(u, out):
    for I in tack.grouped(out):
        c = I + tack.vec2i(1, 1)
        s = 0.0
        for d in tack.static(range(2)):
            e = tack.vec2i(0, 0)
            e[d] = 1
            s += u[c + e] + u[c - e] - 2.0 * u[c]
        out[I] = s


@tack.kernel
def ndindex_laplace(u, out):
    for i, j in tack.ndindex(out.shape[0], out.shape[1]):
        I = tack.vec2i(i, j)
        c = I + tack.vec2i(1, 1)
        s = 0.0
        for d in tack.static(range(2)):
            e = tack.vec2i(0, 0)
            e[d] = 1
            s += u[c + e] + u[c - e] - 2.0 * u[c]
        out[I] = s


def test_taichi_grouped(device):
    u = rng(23).random((12, 10))
    want = (u[2:, 1:-1] + u[:-2, 1:-1] + u[1:-1, 2:] + u[1:-1, :-2] - 4 * u[1:-1, 1:-1])
    for k in (grouped_laplace, ndindex_laplace):
        out = np.zeros((10, 8))
        k(u, out)
        np.testing.assert_allclose(out, want, rtol=1e-12, atol=1e-12)


# ---- Taichi: multi-argument max/min, casts, ti.math.clamp on scalars ----

@tack.kernel
def multi_minmax(a, b, c, out):
    for i in range(a.shape[0]):
        hi = max(a[i], b[i], c[i])
        lo = min(a[i], b[i], c[i], 0.5)
        out[i] = tack.clamp(hi - lo, 0.1, 0.7) + tack.f32(tack.i32(hi * 10.0))


def test_taichi_multi_minmax(device):
    a, b, c = (rng(s).random(11).astype(np.float32) for s in (24, 25, 26))
    out = np.zeros(11, np.float32)
    multi_minmax(a, b, c, out)
    hi = np.maximum(np.maximum(a, b), c)
    lo = np.minimum(np.minimum(np.minimum(a, b), c), 0.5)
    want = np.clip(hi - lo, 0.1, 0.7) + np.trunc(hi * np.float32(10.0))
    np.testing.assert_allclose(out, want, rtol=1e-6)


# ---- Taichi: a dataclass local, built with keywords, updated and stored ----

@tack.struct
class Ball:
    pos: tack.vec2f
    vel: tack.vec2f
    r: tack.f32


@tack.kernel
def bounce(balls, dt):
    for i in range(balls.shape[0]):
        b = balls[i]
        b.vel.y -= 9.8 * dt
        b.pos += b.vel * dt
        if b.pos.y < b.r:
            b.pos.y = b.r
            b.vel.y = -b.vel.y
        balls[i] = Ball(pos=b.pos, vel=b.vel * 0.99, r=b.r)


def test_taichi_dataclass_bounce(device):
    n = 9
    recs = np.zeros(n, dtype=Ball.numpy)
    recs["pos"] = rng(27).random((n, 2))
    recs["vel"] = rng(28).normal(size=(n, 2))
    recs["r"] = 0.3
    want = recs.copy()
    arr = tack.array(recs, device=device)
    bounce(arr, 0.1)
    got = arr.numpy()
    dt = np.float32(0.1)
    v = want["vel"].copy()
    v[:, 1] -= np.float32(9.8) * dt
    p = want["pos"] + v * dt
    low = p[:, 1] < want["r"]
    p[low, 1] = want["r"][low]
    v[low, 1] = -v[low, 1]
    np.testing.assert_allclose(got["pos"], p, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got["vel"], v * np.float32(0.99), rtol=1e-5, atol=1e-6)


# ---- Taichi: svd and polar decomposition in an MPM stress ----

@tack.kernel
def fixed_corotated(F, P, mu, la):
    for p in range(F.shape[0]):
        U, sig, V = tack.svd3(F[p])
        R = U @ V.T
        J = sig[0] * sig[1] * sig[2]
        P[p] = 2.0 * mu * (F[p] - R) + la * J * (J - 1.0) * tack.inverse(F[p]).T
        R2, S = tack.polar3(F[p])
        P[p] += (R2 - R) * 1000.0


def test_taichi_svd_polar(device):
    F = rng(29).random((5, 3, 3)) * 0.2 + np.eye(3)
    P = np.zeros_like(F)
    fixed_corotated(F, P, 2.0, 3.0)
    U, s, Vt = np.linalg.svd(F)
    R = U @ Vt
    J = np.linalg.det(F)
    want = 4.0 * (F - R) + 3.0 * (J * (J - 1))[:, None, None] * np.linalg.inv(F).transpose(0, 2, 1)
    np.testing.assert_allclose(P, want, rtol=1e-7, atol=1e-7)


# ---- Numba: a prange reduction, stored and returned, then normalized ----

@tack.kernel
def mean_std(x, out):
    n = x.shape[0]
    s = 0.0
    for i in range(n):
        s += x[i]
    mean = s / n
    q = 0.0
    for i in range(n):
        q += (x[i] - mean) ** 2
    out[0] = mean
    out[1] = math.sqrt(q / n)
    return math.sqrt(q / n)


def test_numba_mean_std(device):
    x = rng(30).random(1000)
    out = np.zeros(2)
    r = mean_std(x, out)
    np.testing.assert_allclose(out, [x.mean(), x.std()], rtol=1e-12)
    assert abs(r - x.std()) < 1e-12


# ---- Numba: an augmented assignment after the prange loop ----

@tack.kernel
def mean_after(x):
    s = 0.0
    for i in range(x.shape[0]):
        s += x[i]
    s /= x.shape[0]
    return s


@tack.kernel
def normalized_stats(x, out):
    s = 0.0
    q = 0.0
    for i in range(x.shape[0]):
        s += x[i]
        q += x[i] * x[i]
    s /= x.shape[0]
    q = q / x.shape[0] - s * s
    out[0] = s
    if q > 0.0:
        out[1] = math.sqrt(q)
    std = math.sqrt(q)
    cv = std / s
    return s, cv


def test_numba_reduction_updated_after_loop(device):
    x = rng(31).random(500)
    assert abs(mean_after(x) - x.mean()) < 1e-12
    out = np.zeros(2)
    m, cv = normalized_stats(x, out)
    np.testing.assert_allclose(out, [x.mean(), x.std()], rtol=1e-10)
    assert abs(m - x.mean()) < 1e-12 and abs(cv - x.std() / x.mean()) < 1e-10


# ---- Numba: math functions in prange ----

@tack.kernel
def math_soup(x, y, out):
    for i in range(x.shape[0]):
        a = math.hypot(x[i], y[i]) + math.atan2(y[i], x[i]) + math.copysign(1.0, y[i])
        b = math.fmod(x[i] * 7.0, 1.5) + math.erf(x[i]) + math.erfc(y[i]) + math.lgamma(x[i] + 1.0)
        c = math.log1p(x[i]) + math.expm1(y[i]) + math.degrees(x[i]) + math.radians(y[i])
        d = math.gamma(x[i] + 0.5) + math.trunc(y[i] * 5.0) + math.ldexp(x[i], 3)
        e = 1.0 if math.isnan(x[i]) or math.isinf(y[i]) else 0.0
        out[i] = a + b + c + d + e + math.cosh(x[i]) + math.asinh(y[i]) + math.pi


def test_numba_math_functions(device):
    x, y = rng(32).random(50) * 2 - 0.5, rng(33).random(50) * 2 - 1
    x = np.abs(x)
    out = np.zeros(50)
    math_soup(x, y, out)
    want = []
    for a_, b_ in zip(x, y):
        want.append(math.hypot(a_, b_) + math.atan2(b_, a_) + math.copysign(1.0, b_)
                    + math.fmod(a_ * 7, 1.5) + math.erf(a_) + math.erfc(b_) + math.lgamma(a_ + 1)
                    + math.log1p(a_) + math.expm1(b_) + math.degrees(a_) + math.radians(b_)
                    + math.gamma(a_ + 0.5) + math.trunc(b_ * 5) + math.ldexp(a_, 3)
                    + math.cosh(a_) + math.asinh(b_) + math.pi)
    np.testing.assert_allclose(out, want, rtol=1e-12)


# ---- Numba: NumPy ufuncs in prange ----

@tack.kernel
def numpy_soup(x, y, out):
    for i in range(x.shape[0]):
        a = np.sqrt(np.abs(x[i])) + np.arctan2(y[i], x[i]) + np.hypot(x[i], y[i])
        b = np.power(np.abs(y[i]), 1.5) + np.floor(x[i] * 3.0) + np.clip(y[i], -0.2, 0.3)
        c = np.maximum(x[i], y[i]) + np.where(x[i] > y[i], 1.0, -1.0) + np.log10(1.0 + x[i] * x[i])
        d = np.cbrt(x[i]) + np.deg2rad(y[i]) + np.tanh(x[i]) + np.exp2(y[i]) + np.sign(y[i])
        out[i] = a + b + c + d + np.pi


def test_numba_numpy_functions(device):
    x, y = rng(34).random(40) * 2 - 1, rng(35).random(40) * 2 - 1
    out = np.zeros(40)
    numpy_soup(x, y, out)
    want = (np.sqrt(np.abs(x)) + np.arctan2(y, x) + np.hypot(x, y) + np.power(np.abs(y), 1.5)
            + np.floor(x * 3) + np.clip(y, -0.2, 0.3) + np.maximum(x, y) + np.where(x > y, 1.0, -1.0)
            + np.log10(1 + x * x) + np.cbrt(x) + np.deg2rad(y) + np.tanh(x) + np.exp2(y)
            + np.sign(y) + np.pi)
    np.testing.assert_allclose(out, want, rtol=1e-12)


# ---- Numba: Julia set with a complex scalar argument, and with its parts ----

@tack.kernel
def julia(zr, zi, c, count, limit):
    for i in range(zr.shape[0]):
        z = complex(zr[i], zi[i])
        n = 0
        while n < limit and abs(z) < 2.0:
            z = z * z + c
            n += 1
        count[i] = n


@tack.kernel
def julia_parts(zr, zi, cr, ci, count, limit):
    for i in range(zr.shape[0]):
        z = complex(zr[i], zi[i])
        c = complex(cr, ci)
        n = 0
        while n < limit and abs(z) < 2.0:
            z = z * z + c
            n += 1
        count[i] = n


def test_numba_julia_complex_argument(device):
    zr = np.linspace(-1.5, 1.5, 64)
    zi = np.linspace(-1.0, 1.0, 64)[::-1].copy()
    c = complex(-0.8, 0.156)
    count = np.zeros(64, np.int32)
    want = []
    for a, b in zip(zr, zi):
        z, n = complex(a, b), 0
        while n < 50 and abs(z) < 2.0:
            z = z * z + c
            n += 1
        want.append(n)
    julia_parts(zr, zi, c.real, c.imag, count, 50)
    np.testing.assert_array_equal(count, want)
    # a complex scalar argument, as Numba passes one (complex128, and
    # complex64's f32 parts giving the same counts as its parts do)
    count[:] = 0
    julia(zr, zi, c, count, 50)
    np.testing.assert_array_equal(count, want)
    c64 = np.complex64(c)
    parts = np.zeros(64, np.int32)
    julia_parts(zr, zi, np.float32(c64.real), np.float32(c64.imag), parts, 50)
    julia(zr, zi, c64, count, 50)
    np.testing.assert_array_equal(count, parts)


# ---- Numba: a complex device function ----

@tack.func
def step_z(z, c):
    return z * z + c


@tack.func
def escaped(z):
    return z.real * z.real + z.imag * z.imag > 4.0


@tack.func
def doubled_and_size(z):
    return z * 2.0, abs(z)


@tack.kernel
def mandel_func(cr, ci, count, last):
    for i in range(cr.shape[0]):
        c = complex(cr[i], ci[i])
        z = 0j
        n = 0
        for k in range(40):
            if escaped(z):
                break
            z = step_z(z, c)
            n += 1
        count[i] = n
        w, r = doubled_and_size(c)
        last[i] = w + r


def test_numba_complex_device_function(device):
    cr = np.linspace(-2, 0.5, 50)
    ci = np.linspace(-1, 1, 50)
    count = np.zeros(50, np.int64)
    last = np.zeros(50, np.complex128)
    mandel_func(cr, ci, count, last)
    c = cr + 1j * ci
    np.testing.assert_allclose(last, 2 * c + np.abs(c), rtol=1e-14)
    want = []
    for a, b in zip(cr, ci):
        c, z, n = complex(a, b), 0j, 0
        for _ in range(40):
            if z.real ** 2 + z.imag ** 2 > 4:
                break
            z = z * z + c
            n += 1
        want.append(n)
    np.testing.assert_array_equal(count, want)


# ---- Numba: cmath's inverse functions and polar ----

@tack.kernel
def cmath_inverse(z, out, r, phi):
    for i in range(z.shape[0]):
        w = z[i]
        out[i] = cmath.asin(w) + cmath.acos(w) * 0.5 + cmath.atan(w) + cmath.asinh(w) \
            + cmath.acosh(w) * 0.25 + cmath.atanh(w)
        r[i], phi[i] = cmath.polar(w)


def test_numba_cmath_inverse_and_polar(device):
    z = (rng(36).normal(size=20) + 1j * rng(37).normal(size=20)) * 0.7
    out = np.zeros(20, np.complex128)
    r, phi = np.zeros(20), np.zeros(20)
    cmath_inverse(z, out, r, phi)
    want = [cmath.asin(w) + cmath.acos(w) * 0.5 + cmath.atan(w) + cmath.asinh(w)
            + cmath.acosh(w) * 0.25 + cmath.atanh(w) for w in z]
    np.testing.assert_allclose(out, want, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(r, np.abs(z), rtol=1e-14)
    np.testing.assert_allclose(phi, np.angle(z), rtol=1e-14)


# ---- Numba: radix-2 FFT stage on a complex128 array ----

@tack.kernel
def fft_stage(a, out, half):
    for t in range(a.shape[0] // 2):
        k = t % half
        blk = t // half
        i = blk * 2 * half + k
        w = cmath.exp(-2j * math.pi * k / (2 * half))
        u = a[i]
        v = a[i + half] * w
        out[i] = u + v
        out[i + half] = u - v


def test_numba_fft_butterflies(device):
    n = 64
    x = rng(38).normal(size=n) + 1j * rng(39).normal(size=n)
    bits = int(math.log2(n))
    rev = [int(format(i, f"0{bits}b")[::-1], 2) for i in range(n)]
    a = x[rev].copy()
    half = 1
    while half < n:
        out = np.zeros(n, np.complex128)
        fft_stage(a, out, half)
        a = out
        half *= 2
    np.testing.assert_allclose(a, np.fft.fft(x), rtol=1e-10, atol=1e-10)


# ---- Numba: complex arithmetic stored into complex64 ----

@tack.kernel
def wave(theta, amp, out):
    for i in range(theta.shape[0]):
        z = amp[i] * cmath.exp(1j * theta[i])
        out[i] = z.conjugate() * (1 + 2j) + abs(z) ** 2 + cmath.sqrt(z) * cmath.phase(z)


def test_numba_complex64_wave(device):
    th = rng(40).random(30).astype(np.float32) * 3
    amp = rng(41).random(30).astype(np.float32) + 0.5
    out = np.zeros(30, np.complex64)
    wave(th, amp, out)
    z = amp.astype(np.float64) * np.exp(1j * th.astype(np.float64))
    want = np.conj(z) * (1 + 2j) + np.abs(z) ** 2 + np.sqrt(z) * np.angle(z)
    np.testing.assert_allclose(out, want, rtol=2e-5, atol=2e-5)


# ---- Numba: local histogram with np.zeros, statement after the loop ----

@tack.kernel
def row_hist(x, counts, total):
    acc = 0
    for i in range(x.shape[0]):
        h = np.zeros(4, dtype=np.int64)
        for j in range(x.shape[1]):
            b = min(int(x[i, j] * 4.0), 3)
            h[b] += 1
        for b in range(4):
            counts[i, b] = h[b]
        acc += h[3]
    total[0] = acc


def test_numba_local_histogram(device):
    x = rng(42).random((20, 17))
    counts = np.zeros((20, 4), np.int64)
    total = np.zeros(1, np.int64)
    row_hist(x, counts, total)
    want = np.stack([np.bincount(np.minimum((r * 4).astype(int), 3), minlength=4) for r in x])
    np.testing.assert_array_equal(counts, want)
    assert total[0] == want[:, 3].sum()


# ---- Numba: searchsorted histogram in prange ----

@tack.kernel
def bin_counts(x, edges, hist):
    for i in range(x.shape[0]):
        b = np.searchsorted(edges, x[i], side="right") - 1
        if b >= 0 and b < hist.shape[0]:
            hist[b] += 1


def test_numba_searchsorted_histogram(device):
    x = rng(43).normal(size=2000)
    edges = np.linspace(-2, 2, 11)
    hist = np.zeros(10, np.int64)
    bin_counts(x, edges, hist)
    want = np.histogram(x[(x >= -2) & (x < 2)], edges)[0]
    np.testing.assert_array_equal(hist, want)


# ---- Numba: Lennard-Jones energy with a reduction and a store after it ----

@tack.kernel
def lj_energy(pos, eps, sigma, out):
    e = 0.0
    n = pos.shape[0]
    for i in range(n):
        for j in range(i + 1, n):
            dx = pos[i, 0] - pos[j, 0]
            dy = pos[i, 1] - pos[j, 1]
            dz = pos[i, 2] - pos[j, 2]
            r2 = dx * dx + dy * dy + dz * dz
            sr6 = (sigma * sigma / r2) ** 3
            e += 4.0 * eps * (sr6 * sr6 - sr6)
    out[0] = e
    return e / n


def test_numba_lennard_jones(device):
    p = rng(44).random((30, 3)) * 4
    out = np.zeros(1)
    r = lj_energy(p, 1.0, 0.5, out)
    d = np.linalg.norm(p[:, None] - p[None], axis=-1)
    iu = np.triu_indices(30, 1)
    sr6 = (0.25 / d[iu] ** 2) ** 3
    want = (4 * (sr6 * sr6 - sr6)).sum()
    np.testing.assert_allclose(out[0], want, rtol=1e-10)
    np.testing.assert_allclose(r, want / 30, rtol=1e-10)


# ---- CPU workgroups: a block prefix scan in shared memory ----

@tack.kernel
def block_scan(x, out):
    for i in range(x.shape[0]):
        buf = tack.shared((tack.WORKGROUP,), tack.f64)
        lane = tack.local_index()
        buf[lane] = x[i]
        tack.barrier()
        for d in tack.static(range(8)):
            off = 1 << d
            v = buf[lane]
            if lane >= off:
                v += buf[lane - off]
            tack.barrier()
            buf[lane] = v
            tack.barrier()
        out[i] = buf[lane]


def test_workgroup_block_scan(device):
    x = rng(45).random(1024)
    out = np.zeros(1024)
    block_scan(x, out)
    want = np.cumsum(x.reshape(4, 256), axis=1).ravel()
    np.testing.assert_allclose(out, want, rtol=1e-12)


# ---- CPU workgroups: tiled matrix product, tiles of 16 x 16 ----

@tack.kernel
def tiled_matmul(A, B, C, n):
    for g in range(C.shape[0] * C.shape[1]):
        ta = tack.shared((16, 16), tack.f32)
        tb = tack.shared((16, 16), tack.f32)
        lane = tack.local_index()
        ty = lane // 16
        tx = lane % 16
        tiles_x = n // 16
        grp = tack.group_index()
        row = (grp // tiles_x) * 16 + ty
        col = (grp % tiles_x) * 16 + tx
        acc = 0.0
        for t in range(n // 16):
            ta[ty, tx] = A[row, t * 16 + tx]
            tb[ty, tx] = B[t * 16 + ty, col]
            tack.barrier()
            for k in range(16):
                acc += ta[ty, k] * tb[k, tx]
            tack.barrier()
        C[row, col] = acc


def test_workgroup_tiled_matmul(device):
    n = 48
    A = rng(46).random((n, n)).astype(np.float32)
    B = rng(47).random((n, n)).astype(np.float32)
    C = np.zeros((n, n), np.float32)
    tiled_matmul(A, B, C, n)
    np.testing.assert_allclose(C, A @ B, rtol=1e-4)


# ---- Warp: vector components from a 2-D array of vectors, in place ----

@tack.kernel
def advect_velocity(u, dt):
    for i, j in tack.ndindex(u.shape[0], u.shape[1]):
        v = u[i, j]
        u[i, j][1] = v[1] - 9.8 * dt
        u[i, j].x *= 0.5


def test_warp_grid_vector_components(device):
    u = rng(48).random((5, 6, 2)).astype(np.float32)
    ua = varr(u, tack.vec2f, device)
    advect_velocity(ua, 0.1)
    want = u.copy()
    want[..., 1] -= np.float32(9.8) * np.float32(0.1)
    want[..., 0] *= 0.5
    np.testing.assert_allclose(ua.numpy(), want, rtol=1e-6)


# ---- Warp: a device function returning a tuple of scalar, vector, matrix ----

@tack.func
def contact(p, c, r):
    d = p - c
    dist = tack.length(d)
    nrm = d / dist
    return dist - r, nrm, tack.outer(nrm, nrm)


@tack.kernel
def contacts(p, c, out_d, out_n, out_m):
    for i in range(p.shape[0]):
        depth, n, nn = contact(p[i], c[0], 0.5)
        out_d[i] = depth
        out_n[i] = n
        out_m[i] = nn


def test_warp_tuple_return(device):
    p = rng(49).random((7, 3)).astype(np.float32)
    c = np.array([[0.2, 0.1, 0.3]], np.float32)
    d = np.zeros(7, np.float32)
    nrm = varr(np.zeros((7, 3), np.float32), tack.vec3f, device)
    mm = varr(np.zeros((7, 3, 3), np.float32), tack.mat33f, device)
    contacts(varr(p, tack.vec3f, device), varr(c, tack.vec3f, device), d, nrm, mm)
    dd = p - c
    ln = np.linalg.norm(dd, axis=1)
    n = dd / ln[:, None]
    np.testing.assert_allclose(d, ln - 0.5, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(nrm.numpy(), n, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(mm.numpy(), np.einsum("ni,nj->nij", n, n), rtol=1e-5, atol=1e-6)


# ---- Numba: a local array passed to a helper function ----

@tack.func
def insertion_sort(a, n):
    for i in range(1, n):
        v = a[i]
        j = i - 1
        while j >= 0 and a[j] > v:
            a[j + 1] = a[j]
            j -= 1
        a[j + 1] = v


@tack.kernel
def row_medians(x, out):
    for i in range(x.shape[0]):
        buf = np.empty(9)
        for j in range(9):
            buf[j] = x[i, j]
        insertion_sort(buf, 9)
        out[i] = buf[4]


def test_numba_local_array_to_function(device):
    x = rng(50).random((15, 9))
    out = np.zeros(15)
    row_medians(x, out)
    np.testing.assert_array_equal(out, np.median(x, axis=1))


# ---- Taichi: an MPM particle struct with a matrix field ----

@tack.struct
class MPMParticle:
    x: tack.vec2f
    v: tack.vec2f
    C: tack.mat22f
    J: tack.f32


@tack.kernel
def advect_particles(ps, dt):
    for p in range(ps.shape[0]):
        q = ps[p]
        q.v += q.C @ tack.vec2f(1.0, -1.0) * dt
        q.x += dt * q.v
        q.J *= 1.0 + dt * tack.trace(q.C)
        ps[p] = q


def test_taichi_struct_matrix_field(device):
    n = 10
    recs = np.zeros(n, dtype=MPMParticle.numpy)
    recs["x"] = rng(51).random((n, 2))
    recs["v"] = rng(52).random((n, 2))
    recs["C"] = rng(53).random((n, 2, 2))
    recs["J"] = 1.0
    arr = tack.array(recs, device=device)
    advect_particles(arr, 0.1)
    got = arr.numpy()
    dt = np.float32(0.1)
    v = recs["v"] + np.einsum("nij,j->ni", recs["C"], np.array([1, -1], np.float32)) * dt
    np.testing.assert_allclose(got["v"], v, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got["x"], recs["x"] + dt * v, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got["J"], 1 + dt * np.trace(recs["C"], axis1=1, axis2=2), rtol=1e-5)


# ---- Warp: a centre of mass as a vector reduction, divided on return ----

@tack.kernel
def centre_of_mass(x, m):
    c = tack.vec3d()
    total = 0.0
    for i in range(x.shape[0]):
        c += x[i] * m[i]
        total += m[i]
    return c / total


def test_warp_vector_reduction_return(device):
    x = rng(54).random((100, 3))
    m = rng(55).random(100)
    got = centre_of_mass(varr(x, tack.vec3d, device), m)
    np.testing.assert_allclose(got, (x * m[:, None]).sum(0) / m.sum(), rtol=1e-12)


# ---- Taichi: ti.math's complex numbers in 2-vectors, and rotation2d ----

@tack.kernel
def taichi_fractal(c, z0, out, rot):
    for i in range(c.shape[0]):
        z = z0[i]
        for k in range(3):
            z = tack.cmul(z, z) + c[i]
        w = tack.cdiv(z, c[i]) + tack.cconj(z) + tack.cinv(c[i]) + tack.cexp(c[i]) \
            + tack.clog(c[i]) + tack.csqrt(c[i]) + tack.cpow(c[i], 1.5)
        out[i] = w
        rot[i] = tack.rotation2d(0.3 * i) @ c[i]


def test_taichi_complex_vec2(device):
    n = 12
    c = rng(56).normal(size=(n, 2)) * 0.5
    z0 = rng(57).normal(size=(n, 2)) * 0.5
    out = varr(np.zeros((n, 2)), tack.vec2d, device)
    rot = varr(np.zeros((n, 2)), tack.vec2d, device)
    taichi_fractal(varr(c, tack.vec2d, device), varr(z0, tack.vec2d, device), out, rot)
    cc = c[:, 0] + 1j * c[:, 1]
    z = z0[:, 0] + 1j * z0[:, 1]
    for _ in range(3):
        z = z * z + cc
    w = z / cc + np.conj(z) + 1 / cc + np.exp(cc) + np.log(cc) + np.sqrt(cc) + cc ** 1.5
    np.testing.assert_allclose(out.numpy(), np.stack([w.real, w.imag], 1), rtol=1e-11, atol=1e-12)
    ang = 0.3 * np.arange(n)
    want = np.stack([np.cos(ang) * c[:, 0] - np.sin(ang) * c[:, 1],
                     np.sin(ang) * c[:, 0] + np.cos(ang) * c[:, 1]], 1)
    np.testing.assert_allclose(rot.numpy(), want, rtol=1e-12, atol=1e-14)


# ---- Numba: NumPy's and cmath's other spellings of complex functions ----

@tack.kernel
def complex_spellings(z, out, ang):
    for i in range(z.shape[0]):
        w = z[i]
        out[i] = w.conj() * cmath.pi + np.absolute(w) * cmath.e
        ang[i] = np.angle(w) + (1.0 if cmath.inf > 1e308 else 0.0)


@tack.kernel
def local_method(x, out):
    for i in range(x.shape[0]):
        b = np.zeros(4)
        b[0] = x[i]
        out[i] = b.sum()


@tack.kernel
def local_mean(x, out):
    for i in range(x.shape[0]):
        b = np.zeros(4)
        b[0] = x[i]
        out[i] = b.mean()  # local mean


def test_numba_complex_spellings(device):
    z = rng(58).normal(size=9) + 1j * rng(59).normal(size=9)
    out = np.zeros(9, np.complex128)
    ang = np.zeros(9)
    complex_spellings(z, out, ang)
    np.testing.assert_allclose(out, np.conj(z) * np.pi + np.abs(z) * np.e, rtol=1e-14)
    np.testing.assert_allclose(ang, np.angle(z) + 1.0, rtol=1e-14)
    # a.sum() of a local array is a loop now (test_issue27_numba_warp.py);
    # a method kernels lack is still named with its line
    out2 = np.zeros(2)
    local_method(np.array([1.5, -2.0]), out2)
    np.testing.assert_array_equal(out2, [1.5, -2.0])
    with pytest.raises(tack.CompileError, match=r"(?s)heldout.py:%d:.*'b' is a local array: its "
                       r"method mean\(\) is not available" % line_of(__file__, "# local" + " mean")):
        local_mean(np.ones(2), np.zeros(2))


# ---- refusals of the new complex forms name the line ----

@tack.kernel
def polar_unpacked_wrong(z, out):
    for i in range(z.shape[0]):
        out[i] = cmath.polar(z[i])  # polar as a value


@tack.func
def complex_or_vector(z, flag):
    if flag > 0:
        return z * 2.0
    return tack.vec2d(1.0, 2.0)  # a vector elsewhere


@tack.kernel
def mixed_results(z, out, flag):
    for i in range(z.shape[0]):
        out[i] = complex_or_vector(z[i], flag)


def test_complex_refusals_name_the_line(device):
    z = np.ones(2, np.complex128)
    with pytest.raises(tack.CompileError, match=r"(?s)heldout.py:%d:.*returns 2 values; unpack them, "
                       r"as in 'r, phi = cmath.polar\(z\)'" % line_of(__file__, "# polar as" + " a value")):
        polar_unpacked_wrong(z, np.zeros(2))
    with pytest.raises(tack.CompileError, match=r"(?s)heldout.py:%d:.*'complex_or_vector' returns a "
                       r"2-component vector here but not elsewhere" % line_of(__file__, "# a vector" + " elsewhere")):
        mixed_results(z, np.zeros(2, np.complex128), 1)
