"""Warp's 6x6 spatial matrices and the frame changes of spatial vectors:
tack.spatial_matrixf/d (arrays of 6x6 matrices), spatial_adjoint(r, s)
(the block matrix [[r, 0], [s, r]]), transform_twist and transform_wrench,
each against NumPy on every device, f32 and f64."""
import numpy as np
import pytest

import tack

pytestmark = pytest.mark.every_device


def quat_matrix(q):
    """The rotation matrices of unit quaternions (x, y, z, w), row by row."""
    x, y, z, w = q.T
    return np.stack([
        np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)], -1),
        np.stack([2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)], -1),
        np.stack([2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)], -1)], 1)


def skew(p):
    z = np.zeros(len(p))
    return np.stack([np.stack([z, -p[:, 2], p[:, 1]], -1),
                     np.stack([p[:, 2], z, -p[:, 0]], -1),
                     np.stack([-p[:, 1], p[:, 0], z], -1)], 1)


def transforms(n, seed):
    r = np.random.default_rng(seed)
    q = r.normal(size=(n, 4))
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    p = r.normal(size=(n, 3))
    return np.concatenate([p, q], 1), p, quat_matrix(q)


DTYPES = [(np.float32, tack.f32, 2e-5), (np.float64, tack.f64, 1e-12)]


@tack.kernel
def frame_change(t, x, twist, wrench, adj_twist, rot, off):
    for i in range(t.shape[0]):
        twist[i] = tack.transform_twist(t[i], x[i])
        wrench[i] = tack.transform_wrench(t[i], x[i])
        A = tack.spatial_adjoint(rot[i], off[i])
        adj_twist[i] = A @ x[i]


@pytest.mark.parametrize("np_t,dt,tol", DTYPES)
def test_twists_and_wrenches_change_frame(device, np_t, dt, tol):
    n = 9
    t, p, R = transforms(n, 1)
    x = np.random.default_rng(2).normal(size=(n, 6))
    S = skew(p) @ R
    v6, v7, m33 = tack.vector(6, dt), tack.vector(7, dt), tack.matrix(3, 3, dt)
    arr = lambda a, d: tack.array(a.astype(np_t), dtype=d, device=device)  # noqa: E731
    outs = [tack.zeros(n, dtype=v6, device=device) for _ in range(3)]
    frame_change(arr(t, v7), arr(x, v6), *outs, arr(R, m33), arr(S, m33))
    w, v = x[:, :3], x[:, 3:]
    Rw = np.einsum("nij,nj->ni", R, w)
    Rv = np.einsum("nij,nj->ni", R, v)
    twist = np.concatenate([Rw, Rv + np.cross(p, Rw)], 1)
    wrench = np.concatenate([Rw + np.cross(p, Rv), Rv], 1)
    np.testing.assert_allclose(outs[0].numpy(), twist, rtol=tol, atol=tol)
    np.testing.assert_allclose(outs[1].numpy(), wrench, rtol=tol, atol=tol)
    # Warp's rule: spatial_adjoint(R, skew(p) R) maps twists as transform_twist does.
    np.testing.assert_allclose(outs[2].numpy(), twist, rtol=tol * 10, atol=tol * 10)


@tack.kernel
def spatial_inertia(I, x, out, blocks, r, s):
    for i in range(I.shape[0]):
        M = I[i]
        out[i] = M @ x[i] + tack.transpose(M) @ x[i] + M[5, 0] * x[i]
        blocks[i] = tack.spatial_adjoint(r[i], s[i]) @ M


@pytest.mark.parametrize("np_t,dt,tol", DTYPES)
def test_spatial_matrix_arrays(device, np_t, dt, tol):
    n = 5
    g = np.random.default_rng(3)
    I, x = g.random((n, 6, 6)), g.random((n, 6))
    r, s = g.random((n, 3, 3)), g.random((n, 3, 3))
    mt = tack.spatial_matrixf if dt == tack.f32 else tack.spatial_matrixd
    assert mt is tack.matrix(6, 6, dt)
    vt = tack.spatial_vectorf if dt == tack.f32 else tack.spatial_vectord
    m33 = tack.matrix(3, 3, dt)
    arr = lambda a, d: tack.array(a.astype(np_t), dtype=d, device=device)  # noqa: E731
    out = tack.zeros(n, dtype=vt, device=device)
    blocks = tack.zeros(n, dtype=mt, device=device)
    spatial_inertia(arr(I, mt), arr(x, vt), out, blocks, arr(r, m33), arr(s, m33))
    I, x, r, s = (a.astype(np_t).astype(np.float64) for a in (I, x, r, s))
    want = (np.einsum("nij,nj->ni", I, x) + np.einsum("nji,nj->ni", I, x) + I[:, 5, 0:1] * x)
    np.testing.assert_allclose(out.numpy(), want, rtol=tol * 10, atol=tol * 10)
    A = np.zeros((n, 6, 6))
    A[:, :3, :3] = A[:, 3:, 3:] = r
    A[:, 3:, :3] = s
    np.testing.assert_allclose(blocks.numpy(), A @ I, rtol=tol * 10, atol=tol * 10)
    assert out.numpy().dtype == np_t


@tack.kernel
def rows_of_eight(a, out):
    for i in range(a.shape[0]):
        v = a[i]
        M = tack.matrix_from_rows(v, 2.0 * v, v, v, v, v, v, -v)
        C = tack.matrix_from_cols(v, v, v, v, v, v, v, v)
        out[i] = M[1, 2] + 5.0 * C[3, 0] + (C @ M)[2, 6] + tack.trace(C @ M)


def test_matrix_from_rows_of_any_count(device):
    a = np.random.default_rng(4).random((6, 8))
    out = np.zeros(6)
    rows_of_eight(tack.array(a, dtype=tack.vector(8, tack.f64), device=device), out)
    coef = np.array([1, 2, 1, 1, 1, 1, 1, -1.0])
    M = coef[None, :, None] * a[:, None, :]   # row k: coef[k] * v
    C = np.repeat(a[:, :, None], 8, axis=2)   # every column v
    CM = C @ M
    want = M[:, 1, 2] + 5 * C[:, 3, 0] + CM[:, 2, 6] + np.trace(CM, axis1=1, axis2=2)
    np.testing.assert_allclose(out, want, rtol=1e-12)
