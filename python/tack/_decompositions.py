"""Matrix decompositions for kernels, as MPM and FEM codes call them (Warp's
svd3/qr3/eig3, Taichi's ti.svd/ti.polar_decompose/ti.sym_eig), for 2x2 and
3x3 matrices.  Each is a device function written in the kernel language
and inlined where it is called.

Conventions (docs/language.md, "Decompositions"):
- eig2/eig3(A) of a symmetric A: (d, Q), eigenvalues ascending in the
  vector d, the matching unit eigenvectors in Q's columns: A = Q diag(d) Q^T.
  3x3 by cyclic Jacobi rotations (a fixed number of sweeps).
- svd2/svd3(A): (U, s, V) with A = U diag(s) V^T, U and V rotations
  (determinant +1), |s| descending; the last singular value carries the
  sign of det(A) (the rotation-variant SVD that physics codes want).
- polar2/polar3(A): (R, S) with A = R S, R a rotation, S symmetric.
- qr3(A): (Q, R) with A = Q R, Q orthonormal columns (Gram-Schmidt), R
  upper triangular."""
import math

from ._tack import func as _device


@_device
def eig2(A):
    """(d, Q) of the symmetric 2x2 A: eigenvalues ascending, eigenvectors in Q's columns."""
    m = 0.5 * (A[0, 0] + A[1, 1])
    h = 0.5 * (A[0, 0] - A[1, 1])
    r = math.sqrt(h * h + A[0, 1] * A[0, 1])
    theta = 0.5 * math.atan2(A[0, 1], h)
    c = math.cos(theta)
    s = math.sin(theta)
    return tack.vec2(m - r, m + r), tack.matrix_from_cols(tack.vec2(s, -c), tack.vec2(c, s))  # a rotation


@_device
def _jacobi(app, aqq, apq, arp, arq, vp, vq):
    """One Jacobi rotation in the (p, q) plane of a symmetric 3x3 matrix that
    zeroes its (p, q) entry (r is the third index); vp, vq are the columns p
    and q of the accumulated eigenvectors.  Written on the entries, not by
    indexing, so each call is straight-line code."""
    if apq == 0.0:
        return app, aqq, arp, arq, vp, vq
    theta = (aqq - app) / (2.0 * apq)
    t = 1.0 / (abs(theta) + math.sqrt(theta * theta + 1.0))
    if theta < 0.0:
        t = -t
    c = 1.0 / math.sqrt(t * t + 1.0)
    s = t * c
    return app - t * apq, aqq + t * apq, c * arp - s * arq, s * arp + c * arq, c * vp - s * vq, s * vp + c * vq


@_device
def eig3(A):
    """(d, Q) of the symmetric 3x3 A: eigenvalues ascending, eigenvectors in Q's columns."""
    a00 = A[0, 0]
    a11 = A[1, 1]
    a22 = A[2, 2]
    a01 = A[0, 1]
    a02 = A[0, 2]
    a12 = A[1, 2]
    z = a00 * 0.0
    c0 = tack.vec3(z + 1.0, z, z)
    c1 = tack.vec3(z, z + 1.0, z)
    c2 = tack.vec3(z, z, z + 1.0)
    for sweep in range(6):  # cyclic sweeps: quadratic convergence, f64-exact by 5
        a00, a11, a02, a12, c0, c1 = _jacobi(a00, a11, a01, a02, a12, c0, c1)
        a01 = z
        a00, a22, a01, a12, c0, c2 = _jacobi(a00, a22, a02, a01, a12, c0, c2)
        a02 = z
        a11, a22, a01, a02, c1, c2 = _jacobi(a11, a22, a12, a01, a02, c1, c2)
        a12 = z
    d0 = a00
    d1 = a11
    d2 = a22
    # a sorting network of three exchanges
    if d1 < d0:
        d0, d1 = d1, d0
        c0, c1 = c1, c0
    if d2 < d1:
        d1, d2 = d2, d1
        c1, c2 = c2, c1
    if d1 < d0:
        d0, d1 = d1, d0
        c0, c1 = c1, c0
    return tack.vec3(d0, d1, d2), tack.matrix_from_cols(c0, c1, c2)


@_device
def polar2(A):
    """(R, S) with A = R S: R a rotation, S symmetric (2x2)."""
    theta = math.atan2(A[1, 0] - A[0, 1], A[0, 0] + A[1, 1])
    c = math.cos(theta)
    s = math.sin(theta)
    R = tack.matrix_from_rows(tack.vec2(c, -s), tack.vec2(s, c))
    return R, R.T @ A


@_device
def svd2(A):
    """(U, s, V) with A = U diag(s) V^T (2x2; U, V rotations, |s| descending)."""
    R, S = polar2(A)
    d, W = eig2(S)
    # descending magnitude; swapping the columns of W keeps it a rotation
    # when one column changes sign
    if abs(d[0]) > abs(d[1]):
        return R @ W, d, W
    W2 = tack.matrix_from_cols(tack.vec2(W[0, 1], W[1, 1]), tack.vec2(-W[0, 0], -W[1, 0]))
    return R @ W2, tack.vec2(d[1], d[0]), W2


@_device
def _unit_orthogonal(u):
    """A unit vector orthogonal to the unit vector u."""
    a = tack.vec3(u.x * 0.0 + 1.0, u.x * 0.0, u.x * 0.0)
    if abs(u.x) > 0.9:
        a = tack.vec3(u.x * 0.0, u.x * 0.0 + 1.0, u.x * 0.0)
    return tack.normalize(tack.cross(u, a))


@_device
def svd3(A):
    """(U, s, V) with A = U diag(s) V^T (3x3; U, V rotations, |s| descending,
    s[2] negative when det(A) is)."""
    lam, V = eig3(A.T @ A)
    v0 = tack.vec3(V[0, 2], V[1, 2], V[2, 2])  # descending: the largest first
    v1 = tack.vec3(V[0, 1], V[1, 1], V[2, 1])
    v2 = tack.cross(v0, v1)                    # det(V) = +1
    a0 = A @ v0
    a1 = A @ v1
    s0 = tack.length(a0)
    u0 = tack.vec3(a0.x * 0.0 + 1.0, a0.x * 0.0, a0.x * 0.0)
    if s0 > 0.0:
        u0 = a0 / s0
    u1 = a1 - tack.dot(u0, a1) * u0
    s1 = tack.length(u1)
    if s1 > s0 * 1e-12 and s1 > 0.0:
        u1 = u1 / s1
    else:
        u1 = _unit_orthogonal(u0)
    u2 = tack.cross(u0, u1)                    # det(U) = +1
    s1 = tack.dot(u1, a1)
    s2 = tack.dot(u2, A @ v2)
    return (tack.matrix_from_cols(u0, u1, u2), tack.vec3(s0, s1, s2),
            tack.matrix_from_cols(v0, v1, v2))


@_device
def polar3(A):
    """(R, S) with A = R S: R a rotation, S symmetric (3x3)."""
    U, s, V = svd3(A)
    return U @ V.T, V @ tack.diag(s) @ V.T


@_device
def qr3(A):
    """(Q, R) with A = Q R: Q's columns orthonormal, R upper triangular (3x3)."""
    a0 = tack.vec3(A[0, 0], A[1, 0], A[2, 0])
    a1 = tack.vec3(A[0, 1], A[1, 1], A[2, 1])
    a2 = tack.vec3(A[0, 2], A[1, 2], A[2, 2])
    r00 = tack.length(a0)
    q0 = a0 / r00
    r01 = tack.dot(q0, a1)
    w1 = a1 - r01 * q0
    r11 = tack.length(w1)
    q1 = w1 / r11
    r02 = tack.dot(q0, a2)
    r12 = tack.dot(q1, a2)
    w2 = a2 - r02 * q0 - r12 * q1
    r22 = tack.length(w2)
    q2 = w2 / r22
    z = r00 * 0.0
    return (tack.matrix_from_cols(q0, q1, q2),
            tack.matrix_from_rows(tack.vec3(r00, r01, r02), tack.vec3(z, r11, r12),
                                  tack.vec3(z, z, r22)))


DECOMPOSITION_FUNCTIONS = ("eig2", "eig3", "svd2", "svd3", "polar2", "polar3", "qr3")

import tack  # noqa: E402  (the bodies name tack.*; resolved when a kernel inlines them)
