"""Matrix decompositions in kernels (tack.svd2/svd3, polar2/polar3, eig2/eig3,
qr3) on every device against NumPy: reconstruction, orthogonality, rotations
(determinant +1), sorted values, and the edge cases MPM codes meet (diagonal,
repeated eigenvalues, rank-deficient, zero, negative determinant)."""
import numpy as np
import pytest

import tack

pytestmark = pytest.mark.every_device


@tack.kernel
def decompose3(A, U, s, V, R, S, d, Q, QQ, RR):
    for i in range(A.shape[0]):
        u, sv, v = tack.svd3(A[i])
        U[i] = u
        s[i] = sv
        V[i] = v
        r, sym = tack.polar3(A[i])
        R[i] = r
        S[i] = sym
        dd, q = tack.eig3(0.5 * (A[i] + A[i].T))
        d[i] = dd
        Q[i] = q
        qq, rr = tack.qr3(A[i])
        QQ[i] = qq
        RR[i] = rr


@tack.kernel
def decompose2(A, U, s, V, R, S, d, Q):
    for i in range(A.shape[0]):
        u, sv, v = tack.svd2(A[i])
        U[i] = u
        s[i] = sv
        V[i] = v
        r, sym = tack.polar2(A[i])
        R[i] = r
        S[i] = sym
        dd, q = tack.eig2(0.5 * (A[i] + A[i].T))
        d[i] = dd
        Q[i] = q


def matrices(k):
    rng = np.random.default_rng(11)
    A = list(rng.normal(size=(6, k, k)))
    A.append(np.diag(np.arange(1.0, k + 1)))                  # diagonal: no rotation needed
    A.append(np.eye(k) * 2.0)                                 # repeated eigenvalues
    A.append(np.zeros((k, k)))                                # zero
    B = rng.normal(size=(k, k))
    B[-1] = B[0]                                              # rank deficient
    A.append(B)
    C = rng.normal(size=(k, k))
    if np.linalg.det(C) > 0:
        C[0] = -C[0]                                          # a reflection: det < 0
    A.append(C)
    return np.array(A)


def check_rotation(M, tol):
    n = M.shape[-1]
    np.testing.assert_allclose(M @ np.swapaxes(M, 1, 2), np.broadcast_to(np.eye(n), M.shape), atol=tol)
    np.testing.assert_allclose(np.linalg.det(M), 1.0, atol=tol)


@pytest.mark.parametrize("prec", ["f", "d"])
def test_decompositions_3x3(device, prec):
    tol = 2e-5 if prec == "f" else 1e-11
    M, Vt = getattr(tack, "mat33" + prec), getattr(tack, "vec3" + prec)
    A = matrices(3)
    n = len(A)
    kinds = (M, Vt, M, M, M, Vt, M, M, M)
    outs = [tack.zeros(n, dtype=t, device=device) for t in kinds]
    decompose3(tack.array(A, dtype=M, device=device), *outs)
    U, s, V, R, S, d, Q, QQ, RR = (o.numpy().astype(np.float64) for o in outs)
    scale = 1 + np.abs(A).max()
    np.testing.assert_allclose(np.einsum("nij,nj,nkj->nik", U, s, V), A, atol=tol * scale * 10)
    check_rotation(U, tol * 10)
    check_rotation(V, tol * 10)
    np.testing.assert_allclose(np.abs(s), np.linalg.svd(A)[1], atol=tol * scale * 10)
    assert (np.sign(s[:, 2]) * np.sign(np.linalg.det(A)) >= 0).all()  # the sign of det(A)
    np.testing.assert_allclose(R @ S, A, atol=tol * scale * 10)
    np.testing.assert_allclose(S, np.swapaxes(S, 1, 2), atol=tol * scale * 10)
    check_rotation(R, tol * 10)
    sym = 0.5 * (A + np.swapaxes(A, 1, 2))
    np.testing.assert_allclose(d, np.linalg.eigvalsh(sym), atol=tol * scale * 10)
    np.testing.assert_allclose(np.einsum("nij,nj,nkj->nik", Q, d, Q), sym, atol=tol * scale * 10)
    full = np.abs(np.linalg.det(A)) > 1e-6  # Gram-Schmidt needs independent columns
    np.testing.assert_allclose((QQ @ RR)[full], A[full], atol=tol * scale * 10)
    np.testing.assert_array_equal(np.tril(RR[full], -1), 0)


@pytest.mark.parametrize("prec", ["f", "d"])
def test_decompositions_2x2(device, prec):
    tol = 2e-5 if prec == "f" else 1e-12
    M, Vt = getattr(tack, "mat22" + prec), getattr(tack, "vec2" + prec)
    A = matrices(2)
    n = len(A)
    outs = [tack.zeros(n, dtype=t, device=device) for t in (M, Vt, M, M, M, Vt, M)]
    decompose2(tack.array(A, dtype=M, device=device), *outs)
    U, s, V, R, S, d, Q = (o.numpy().astype(np.float64) for o in outs)
    scale = 1 + np.abs(A).max()
    np.testing.assert_allclose(np.einsum("nij,nj,nkj->nik", U, s, V), A, atol=tol * scale * 10)
    check_rotation(U, tol * 10)
    check_rotation(V, tol * 10)
    np.testing.assert_allclose(np.abs(s), np.linalg.svd(A)[1], atol=tol * scale * 10)
    np.testing.assert_allclose(R @ S, A, atol=tol * scale * 10)
    check_rotation(R, tol * 10)
    sym = 0.5 * (A + np.swapaxes(A, 1, 2))
    np.testing.assert_allclose(d, np.linalg.eigvalsh(sym), atol=tol * scale * 10)
    np.testing.assert_allclose(np.einsum("nij,nj,nkj->nik", Q, d, Q), sym, atol=tol * scale * 10)
