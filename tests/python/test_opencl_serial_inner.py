"""Both forms of an ndindex launch on OpenCL give NumPy's results: one work
item per element (a GPU's form) and the innermost index as a loop in each
item (the form a CPU device such as PoCL gets, bench/bench_ndindex.py).
TACK_OPENCL_SERIAL_INNER picks the form; each runs in its own process."""
import os
import subprocess
import sys
import textwrap

import pytest

from conftest import device_or_skip

CHILD = textwrap.dedent("""
    import numpy as np, tack
    d = tack.device("opencl")

    @tack.kernel
    def jacobi(u, v):
        for i, j in tack.ndindex(u.shape[0] - 2, u.shape[1] - 2):
            v[i + 1, j + 1] = 0.25 * (u[i, j + 1] + u[i + 2, j + 1] + u[i + 1, j] + u[i + 1, j + 2])

    @tack.kernel
    def box(u, v):
        for i, j, k in tack.ndindex(u.shape[0], u.shape[1], u.shape[2]):
            v[i, j, k] = u[i, j, k] * (i + 1) + j - k

    @tack.kernel
    def strided_rows(x, out, step):
        for i in range(0, x.shape[0], step):
            for j in range(x.shape[1]):  # a plain inner loop: not an ndindex index
                out[i, j] = x[i, j] + 1.0

    rng = np.random.default_rng(7)
    for shape in [(3, 3), (5, 131), (97, 2), (64, 64), (2, 2)]:
        uh = rng.random(shape, dtype=np.float32)
        want = np.zeros_like(uh)
        want[1:-1, 1:-1] = np.float32(0.25) * (uh[:-2, 1:-1] + uh[2:, 1:-1] + uh[1:-1, :-2] + uh[1:-1, 2:])
        v = tack.zeros(shape, device=d)
        jacobi(tack.array(uh, device=d), v)
        assert np.array_equal(v.numpy(), want), shape
    for shape in [(1, 1, 1), (3, 5, 7), (2, 67, 3), (0, 4, 4), (4, 0, 4)]:
        uh = rng.random(shape)
        i, j, k = np.indices(shape)
        v = tack.zeros(shape, dtype=tack.f64, device=d)
        box(tack.array(uh, device=d), v)
        assert np.array_equal(v.numpy(), uh * (i + 1) + j - k), shape
    xh = rng.random((9, 13))
    out = tack.zeros((9, 13), dtype=tack.f64, device=d)
    strided_rows(tack.array(xh, device=d), out, 2)
    want = np.zeros_like(xh)
    want[::2] = xh[::2] + 1.0
    assert np.array_equal(out.numpy(), want)
    print("ok")
""")


@pytest.mark.parametrize("serial", ["0", "1"])
def test_both_ndindex_forms_match_numpy(serial):
    device_or_skip("opencl")
    env = dict(os.environ, TACK_OPENCL_SERIAL_INNER=serial, TACK_CACHE="off")
    r = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.split()[-1] == "ok"

