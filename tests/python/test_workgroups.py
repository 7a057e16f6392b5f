"""Collective kernels (issue 20, item 1): tack.shared arrays, tack.barrier(),
tack.local_index(), tack.group_index() and tack.WORKGROUP (256 lanes).

Each kernel (a block reduction, a prefix scan, a tiled matrix multiply with
shared tiles, a shared-memory stencil) is checked against NumPy on the CPU
(lane loops split at the barriers) and OpenCL (PoCL runs it for real here)
and as PTX for sm_80 and sm_90; launches
that are not whole workgroups and barriers that some lanes may miss are
refused before anything runs."""
import numpy as np
import pytest

import tack
from conftest import device_or_skip
from test_cuda import check_ptx, needs_nvrtc

WG = 256


@tack.kernel
def block_sum(x, out):
    for i in range(x.shape[0]):
        buf = tack.shared((tack.WORKGROUP,), tack.f32)
        lane = tack.local_index()
        buf[lane] = x[i]
        tack.barrier()
        half = tack.WORKGROUP // 2
        while half > 0:
            if lane < half:
                buf[lane] += buf[lane + half]
            tack.barrier()
            half = half // 2
        if lane == 0:
            out[tack.group_index()] = buf[0]


@tack.kernel
def block_scan(x, out):
    # Inclusive prefix sums within each workgroup (Hillis and Steele).
    for i in range(x.shape[0]):
        buf = tack.shared((256,), tack.i64)
        lane = tack.local_index()
        buf[lane] = x[i]
        tack.barrier()
        step = 1
        while step < 256:
            v = buf[lane]
            if lane >= step:
                v += buf[lane - step]
            tack.barrier()
            buf[lane] = v
            tack.barrier()
            step = step * 2
        out[i] = buf[lane]


TILE = 16


@tack.kernel
def tiled_matmul(a, b, c, n):
    # One workgroup computes one 16x16 tile of c; n is a multiple of 16.
    for i in range(c.shape[0] * c.shape[1]):
        ta = tack.shared((TILE, TILE), tack.f64)
        tb = tack.shared((TILE, TILE), tack.f64)
        lane = tack.local_index()
        ty = lane // TILE
        tx = lane % TILE
        tiles = n // TILE
        g = tack.group_index()
        row = (g // tiles) * TILE + ty
        col = (g % tiles) * TILE + tx
        acc = 0.0
        for t in range(tiles):
            ta[ty, tx] = a[row, t * TILE + tx]
            tb[ty, tx] = b[t * TILE + ty, col]
            tack.barrier()
            for k in range(TILE):
                acc += ta[ty, k] * tb[k, tx]
            tack.barrier()
        c[row, col] = acc


@tack.kernel
def stencil(x, out):
    # out[i] = x[i-1] + x[i] + x[i+1] (zero outside), through a shared tile
    # with one halo element on each side.
    for i in range(x.shape[0]):
        tile = tack.shared((WG + 2,), tack.f32)
        lane = tack.local_index()
        tile[lane + 1] = x[i]
        if lane == 0:
            tile[0] = x[i - 1] if i > 0 else 0.0
        if lane == WG - 1:
            tile[WG + 1] = x[i + 1] if i + 1 < x.shape[0] else 0.0
        tack.barrier()
        out[i] = tile[lane] + tile[lane + 1] + tile[lane + 2]


# The CPU runs them as lane loops (passes/workgroup_loops.c); PoCL runs them
# here; a CUDA device where there is one (bench/gpu/check.sh).
@pytest.fixture(scope="module", params=["cpu", "opencl", "cuda"])
def gpu(request):
    return device_or_skip(request.param)


def test_block_reduction(gpu):
    x = np.random.default_rng(0).random(WG * 40).astype(np.float32)
    out = tack.zeros((40,), device=gpu)
    block_sum(tack.array(x, device=gpu), out)
    np.testing.assert_allclose(out.numpy(), x.reshape(40, WG).sum(axis=1), rtol=2e-6)


def test_prefix_scan(gpu):
    x = np.random.default_rng(1).integers(-1000, 1000, WG * 7).astype(np.int64)
    out = tack.zeros((x.size,), dtype=tack.i64, device=gpu)
    block_scan(tack.array(x, device=gpu), out)
    np.testing.assert_array_equal(out.numpy(), np.cumsum(x.reshape(7, WG), axis=1).ravel())


@pytest.mark.parametrize("n", [16, 64])
def test_tiled_matmul(gpu, n):
    rng = np.random.default_rng(n)
    a, b = rng.random((n, n)), rng.random((n, n))
    c = tack.zeros((n, n), dtype=tack.f64, device=gpu)
    tiled_matmul(tack.array(a, device=gpu), tack.array(b, device=gpu), c, n)
    np.testing.assert_allclose(c.numpy(), a @ b, rtol=1e-12)


def test_shared_memory_stencil(gpu):
    x = np.random.default_rng(2).random(WG * 5).astype(np.float32)
    out = tack.zeros((x.size,), device=gpu)
    stencil(tack.array(x, device=gpu), out)
    padded = np.concatenate([[0], x, [0]]).astype(np.float32)
    np.testing.assert_allclose(out.numpy(), padded[:-2] + padded[1:-1] + padded[2:], rtol=1e-6)


def test_launch_must_be_whole_workgroups(gpu):
    x = tack.array(np.ones(300, np.float32), device=gpu)
    out = tack.array(np.full(2, 7.0, np.float32), device=gpu)
    with pytest.raises(ValueError) as e:
        block_sum(x, out)
    assert "block_sum" in str(e.value) and "300" in str(e.value) and "256" in str(e.value)
    np.testing.assert_array_equal(out.numpy(), 7.0)


def test_the_cpu_runs_numpy_arrays_directly():
    x = np.arange(WG * 2, dtype=np.float32)
    out = np.full(2, 7.0, np.float32)
    block_sum(x, out)
    np.testing.assert_array_equal(out, x.reshape(2, WG).sum(axis=1))


def test_divergent_barriers_are_compile_errors(gpu):
    @tack.kernel
    def under_lane_condition(x):
        for i in range(x.shape[0]):
            if tack.local_index() < 128:
                tack.barrier()

    @tack.kernel
    def after_early_return(x):
        for i in range(x.shape[0]):
            if x[i] > 0:
                return
            tack.barrier()

    @tack.kernel
    def in_data_loop(x):
        for i in range(x.shape[0]):
            for k in range(int(x[i])):
                tack.barrier()

    for k in (under_lane_condition, after_early_return, in_data_loop):
        with pytest.raises(tack.CompileError) as e:
            k(tack.array(np.ones(WG, np.float32), device=gpu))
        assert "barrier" in str(e.value) and e.value.lineno is not None


def test_uniform_control_flow_around_barriers_is_accepted(gpu):
    @tack.kernel
    def uniform_flow(x, out, n):
        for i in range(x.shape[0]):
            buf = tack.shared((256,), tack.f32)
            buf[tack.local_index()] = x[i]
            if n > 0:
                tack.barrier()
            for r in range(n):
                tack.barrier()
            out[i] = buf[255 - tack.local_index()]

    x = np.arange(WG * 2, dtype=np.float32)
    out = tack.zeros((WG * 2,), device=gpu)
    uniform_flow(tack.array(x, device=gpu), out, 3)
    np.testing.assert_array_equal(out.numpy(), x.reshape(2, WG)[:, ::-1].ravel())


def test_collective_kernels_launch_over_a_plain_range(gpu):
    @tack.kernel
    def two_d(x):
        for i, j in tack.ndindex(x.shape[0], x.shape[1]):
            x[i, j] = tack.local_index()

    with pytest.raises(tack.CompileError) as e:
        two_d(tack.zeros((256, 2), device=gpu))
    assert "range(n)" in str(e.value)


def test_too_much_shared_memory_is_refused(gpu):
    @tack.kernel
    def huge(x):
        for i in range(x.shape[0]):
            t = tack.shared((1 << 20,), tack.f64)
            t[tack.local_index()] = 1.0
            tack.barrier()
            x[i] = t[0]

    limit = gpu.local_mem_bytes if hasattr(gpu, "local_mem_bytes") else None
    with pytest.raises(ValueError) as e:
        huge(tack.zeros((WG,), dtype=tack.f64, device=gpu))
    assert "huge" in str(e.value) and str(8 << 20) in str(e.value), (str(e.value), limit)


@needs_nvrtc
def test_workgroup_kernels_as_ptx():
    f32 = np.zeros(WG, np.float32)
    check_ptx(block_sum, f32, np.zeros(1, np.float32))
    check_ptx(block_scan, np.zeros(WG, np.int64), np.zeros(WG, np.int64))
    check_ptx(tiled_matmul, np.zeros((16, 16)), np.zeros((16, 16)), np.zeros((16, 16)), 16)
    check_ptx(stencil, f32, f32.copy())
    ptx = tack.cuda.compile(block_sum, f32, np.zeros(1, np.float32), arch="sm_90")
    assert "bar.sync" in ptx and ".shared" in ptx
