"""Warp's transforms in kernels (tack.transform_* device functions on
7-vectors: translation p, then rotation quaternion q with w last), on every
device, against NumPy formulas in f32 and f64: construction, the parts,
points and vectors moved, products, inverses, the identity, and arrays of
transforms from NumPy (n, 7) data."""
import numpy as np
import pytest

import tack

pytestmark = pytest.mark.every_device


def np_quat(rng, n):
    q = rng.normal(size=(n, 4))
    return q / np.linalg.norm(q, axis=1, keepdims=True)


def np_matrix(q):
    x, y, z, w = q.T
    return np.stack([
        np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)], -1),
        np.stack([2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)], -1),
        np.stack([2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)], -1)], -2)


def np_qmul(a, b):
    av, aw, bv, bw = a[:, :3], a[:, 3:], b[:, :3], b[:, 3:]
    return np.concatenate([aw * bv + bw * av + np.cross(av, bv),
                           aw * bw - (av * bv).sum(1, keepdims=True)], 1)


def np_rotate(q, v):
    return np.einsum("nij,nj->ni", np_matrix(q), v)


@tack.kernel
def apply(p, q, t, x, made, moved, dirs, prod, inv, undone, parts, ident):
    for i in range(t.shape[0]):
        made[i] = tack.transform(p[i], q[i])
        moved[i] = tack.transform_point(t[i], x[i])
        dirs[i] = tack.transform_vector(t[i], x[i])
        j = (i + 1) % t.shape[0]
        prod[i] = tack.transform_multiply(t[i], t[j])
        ti = tack.transform_inverse(t[i])
        inv[i] = ti
        undone[i] = tack.transform_point(ti, tack.transform_point(t[i], x[i]))
        parts[i] = tack.transform_get_translation(t[i]) + 2.0 * tack.vec3(
            tack.transform_get_rotation(t[i]).x, tack.transform_get_rotation(t[i]).w, 0.0)
        ident[i] = tack.transform_multiply(tack.transform_identity(), t[i])


@pytest.mark.parametrize("dt,tol", [(np.float32, 3e-5), (np.float64, 1e-12)])
def test_transforms_match_numpy(device, dt, tol):
    rng = np.random.default_rng(7)
    n = 11
    p = rng.normal(size=(n, 3))
    q = np_quat(rng, n)
    q[0] = [0, 0, 0, 1]          # the identity rotation
    q[1] = [1, 0, 0, 0]          # a half turn
    p[2] = 0                     # a pure rotation
    t = np.concatenate([p, q], 1).astype(dt)
    x = rng.normal(size=(n, 3)).astype(dt)
    vec = tack.vec3f if dt == np.float32 else tack.vec3d
    quat = tack.quatf if dt == np.float32 else tack.quatd
    tf = tack.transformf if dt == np.float32 else tack.transformd
    outs = [tack.zeros(n, dtype=d, device=device) for d in (tf, vec, vec, tf, tf, vec, vec, tf)]
    apply(tack.array(p.astype(dt), dtype=vec, device=device),
          tack.array(q.astype(dt), dtype=quat, device=device),
          tack.array(t, dtype=tf, device=device), tack.array(x, dtype=vec, device=device), *outs)
    made, moved, dirs, prod, inv, undone, parts, ident = (o.numpy() for o in outs)
    assert made.shape == (n, 7) and made.dtype == dt
    t64, x64 = t.astype(np.float64), x.astype(np.float64)
    p64, q64 = t64[:, :3], t64[:, 3:]
    np.testing.assert_allclose(made, t64, atol=tol)
    np.testing.assert_allclose(moved, np_rotate(q64, x64) + p64, atol=tol * 10)
    np.testing.assert_allclose(dirs, np_rotate(q64, x64), atol=tol * 10)
    b = np.roll(t64, -1, axis=0)
    want = np.concatenate([p64 + np_rotate(q64, b[:, :3]), np_qmul(q64, b[:, 3:])], 1)
    np.testing.assert_allclose(prod, want, atol=tol * 10)
    qi = q64 * [-1, -1, -1, 1]
    np.testing.assert_allclose(inv, np.concatenate([-np_rotate(qi, p64), qi], 1), atol=tol * 10)
    np.testing.assert_allclose(undone, x64, atol=tol * 20)
    np.testing.assert_allclose(parts, p64 + 2 * np.stack([q64[:, 0], q64[:, 3], 0 * q64[:, 0]], 1),
                               atol=tol)
    np.testing.assert_allclose(ident, t64, atol=tol * 4)


@tack.kernel
def compose(ts, out):
    for i in range(ts.shape[0]):
        acc = tack.transform_identity()
        for k in range(ts.shape[1]):
            acc = tack.transform_multiply(acc, ts[i, k])
        out[i] = acc


def test_chains_of_transforms_2d_array(device):
    # A 2-D array of transforms (NumPy (n, m, 7)): a chain composed per row,
    # against the 4x4 homogeneous matrices' product.
    rng = np.random.default_rng(8)
    n, m = 5, 4
    q = np_quat(rng, n * m)
    t = np.concatenate([rng.normal(size=(n * m, 3)), q], 1).reshape(n, m, 7)
    out = tack.zeros(n, dtype=tack.transformd, device=device)
    compose(tack.array(t, dtype=tack.transformd, device=device), out)

    def hom(tr):
        h = np.eye(4)
        h[:3, :3] = np_matrix(tr[None, 3:])[0]
        h[:3, 3] = tr[:3]
        return h
    got = out.numpy()
    for i in range(n):
        want = np.eye(4)
        for k in range(m):
            want = want @ hom(t[i, k])
        np.testing.assert_allclose(hom(got[i]), want, atol=1e-12)


def test_transform_dtypes():
    assert tack.transformf is tack.vector(7, tack.f32)
    assert tack.transformd is tack.vector(7, tack.f64)
    assert tack.transformf.width == 7
    a = tack.array(np.zeros((3, 7), np.float32), dtype=tack.transformf)
    assert a.shape == (3,) and a.numpy().shape == (3, 7)
