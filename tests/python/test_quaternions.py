"""Warp's quaternions in kernels (tack.quat_* device functions on 4-vectors
x, y, z, w), on every device, against NumPy formulas: rotation of vectors,
products, inverses, matrices both ways, axis-angle both ways, roll-pitch-yaw
and slerp, in f32 and f64."""
import math

import numpy as np
import pytest

import tack

pytestmark = pytest.mark.every_device


def np_axis_angle(axis, angle):
    n = axis / np.linalg.norm(axis, axis=-1, keepdims=True)
    return np.concatenate([n * np.sin(angle / 2)[..., None], np.cos(angle / 2)[..., None]], -1)


def np_matrix(q):
    x, y, z, w = q.T
    return np.stack([
        np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)], -1),
        np.stack([2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)], -1),
        np.stack([2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)], -1)], -2)


def np_mul(a, b):
    av, aw, bv, bw = a[:, :3], a[:, 3:], b[:, :3], b[:, 3:]
    v = aw * bv + bw * av + np.cross(av, bv)
    w = aw * bw - (av * bv).sum(1, keepdims=True)
    return np.concatenate([v, w], 1)


@tack.kernel
def rotations(axis, angle, v, q_out, rotated, back, m_out, q_again, prod, inv_prod, axis_out,
              angle_out):
    for i in range(axis.shape[0]):
        q = tack.quat_from_axis_angle(axis[i], angle[i])
        q_out[i] = q
        rotated[i] = tack.quat_rotate(q, v[i])
        back[i] = tack.quat_rotate_inv(q, tack.quat_rotate(q, v[i]))
        m = tack.quat_to_matrix(q)
        m_out[i] = m
        q_again[i] = tack.quat_from_matrix(m)
        r = tack.quat_from_axis_angle(v[i], angle[i] * 0.5)
        prod[i] = tack.quat_mul(q, r)
        inv_prod[i] = tack.quat_mul(tack.quat_inverse(q), q)
        a, t = tack.quat_to_axis_angle(q)
        axis_out[i] = a
        angle_out[i] = t


@pytest.mark.parametrize("dt,vec,mat,tol", [(np.float32, tack.vec3f, tack.mat33f, 2e-5),
                                            (np.float64, tack.vec3d, tack.mat33d, 1e-12)])
def test_rotations_match_numpy(device, dt, vec, mat, tol):
    rng = np.random.default_rng(5)
    n = 9
    axis = rng.normal(size=(n, 3)).astype(dt)
    angle = rng.uniform(0.1, 3.0, n).astype(dt)
    angle[0] = 3.1  # near pi: quat_from_matrix's diagonal branches
    v = rng.normal(size=(n, 3)).astype(dt)
    quat = tack.quatf if dt == np.float32 else tack.quatd
    outs = [tack.zeros(n, dtype=t, device=device)
            for t in (quat, vec, vec, mat, quat, quat, quat, vec, dt)]
    rotations(tack.array(axis, dtype=vec, device=device), tack.array(angle, device=device),
              tack.array(v, dtype=vec, device=device), *outs)
    q, rotated, back, m, q_again, prod, inv_prod, axis_out, angle_out = (o.numpy() for o in outs)
    want_q = np_axis_angle(axis.astype(np.float64), angle.astype(np.float64))
    np.testing.assert_allclose(q, want_q, atol=tol)
    want_m = np_matrix(want_q)
    np.testing.assert_allclose(m, want_m, atol=tol * 4)
    np.testing.assert_allclose(rotated, np.einsum("nij,nj->ni", want_m, v), atol=tol * 10)
    np.testing.assert_allclose(back, v, atol=tol * 10)
    np.testing.assert_allclose(q_again * np.sign(q_again[:, 3:]), want_q * np.sign(want_q[:, 3:]),
                               atol=tol * 10)
    r = np_axis_angle(v.astype(np.float64), angle.astype(np.float64) * 0.5)
    np.testing.assert_allclose(prod, np_mul(want_q, r), atol=tol * 4)
    np.testing.assert_allclose(inv_prod, np.tile([0, 0, 0, 1.0], (n, 1)), atol=tol * 4)
    np.testing.assert_allclose(axis_out, axis / np.linalg.norm(axis, axis=1, keepdims=True),
                               atol=tol * 10)
    np.testing.assert_allclose(angle_out, angle, atol=tol * 10)


@tack.kernel
def slerp_rpy(a, b, t, out, rpy):
    for i in range(a.shape[0]):
        out[i] = tack.quat_slerp(a[i], b[i], t[i])
        rpy[i] = tack.quat_rpy(t[i], 2.0 * t[i], -t[i])


def test_slerp_and_rpy(device):
    rng = np.random.default_rng(6)
    n = 6
    a = np_axis_angle(rng.normal(size=(n, 3)), rng.uniform(0, 3, n))
    b = np_axis_angle(rng.normal(size=(n, 3)), rng.uniform(0, 3, n))
    b[1] = a[1]            # equal: the linear branch
    b[2] = -a[2] * 0.999 + 0.001  # the other hemisphere: the shorter arc
    b[2] /= np.linalg.norm(b[2])
    t = rng.uniform(0, 1, n)
    out = tack.zeros(n, dtype=tack.quatd, device=device)
    rpy = tack.zeros(n, dtype=tack.quatd, device=device)
    slerp_rpy(tack.array(a, dtype=tack.quatd, device=device),
              tack.array(b, dtype=tack.quatd, device=device), tack.array(t, device=device), out, rpy)
    for i in range(n):
        c = b[i] if a[i] @ b[i] >= 0 else -b[i]
        theta = math.acos(min(1.0, a[i] @ c))
        want = a[i] if theta < 1e-6 else (math.sin((1 - t[i]) * theta) * a[i] + math.sin(t[i] * theta) * c) / math.sin(theta)
        np.testing.assert_allclose(out.numpy()[i], want / np.linalg.norm(want), atol=1e-6)
        roll, pitch, yaw = t[i], 2 * t[i], -t[i]
        ex = np_axis_angle(np.array([1.0, 0, 0]), np.array(roll))
        ey = np_axis_angle(np.array([0, 1.0, 0]), np.array(pitch))
        ez = np_axis_angle(np.array([0, 0, 1.0]), np.array(yaw))
        want_rpy = np_mul(np_mul(ez[None], ey[None]), ex[None])[0]
        np.testing.assert_allclose(rpy.numpy()[i], want_rpy, atol=1e-12)
