"""Workgroup kernels on the CPU (issue 27, item 7): tack.shared,
tack.barrier(), tack.local_index() and tack.group_index() run as lane loops
split at the barriers (src/passes/workgroup_loops.c).  Each kernel is
checked on cpu and opencl against NumPy, and the CPU's results against
OpenCL's where both run."""
import numpy as np
import pytest

import tack
from conftest import device_or_skip
from test_workgroups import WG, block_scan, block_sum, stencil, tiled_matmul


@pytest.fixture(scope="module", params=["cpu", "opencl"])
def dev(request):
    return device_or_skip(request.param)


def run(kernel, dev, *args):
    """Runs kernel on dev with NumPy inputs; returns the arrays' contents."""
    arrs = [tack.array(a, device=dev) if isinstance(a, np.ndarray) else a for a in args]
    kernel(*arrs)
    return [a.numpy() if not isinstance(a, (int, float)) else a for a in arrs]


def on_both(kernel, *args):
    """The CPU's results, checked equal to OpenCL's where OpenCL runs."""
    cpu = run(kernel, tack.device("cpu"), *[a.copy() if isinstance(a, np.ndarray) else a for a in args])
    try:
        ocl = tack.device("opencl")
    except Exception:
        return cpu
    other = run(kernel, ocl, *[a.copy() if isinstance(a, np.ndarray) else a for a in args])
    for c, o in zip(cpu, other):
        if isinstance(c, np.ndarray):
            np.testing.assert_allclose(c, o, rtol=1e-6)
    return cpu


@pytest.mark.parametrize("groups", [1, 3, 40])
def test_block_reduction(dev, groups):
    x = np.random.default_rng(groups).random(WG * groups).astype(np.float32)
    out = run(block_sum, dev, x, np.zeros(groups, np.float32))[1]
    np.testing.assert_allclose(out, x.reshape(groups, WG).sum(axis=1), rtol=2e-6)


@pytest.mark.parametrize("dtype", [np.int64])
def test_prefix_scan(dev, dtype):
    x = np.random.default_rng(1).integers(-1000, 1000, WG * 7).astype(dtype)
    out = run(block_scan, dev, x, np.zeros(x.size, dtype))[1]
    np.testing.assert_array_equal(out, np.cumsum(x.reshape(7, WG), axis=1).ravel())


@pytest.mark.parametrize("n", [16, 48, 64])
def test_tiled_matmul(dev, n):
    rng = np.random.default_rng(n)
    a, b = rng.random((n, n)), rng.random((n, n))
    c = run(tiled_matmul, dev, a, b, np.zeros((n, n)), n)[2]
    np.testing.assert_allclose(c, a @ b, rtol=1e-12)


def test_stencil(dev):
    x = np.random.default_rng(2).random(WG * 5).astype(np.float32)
    out = run(stencil, dev, x, np.zeros(x.size, np.float32))[1]
    padded = np.concatenate([[0], x, [0]]).astype(np.float32)
    np.testing.assert_allclose(out, padded[:-2] + padded[1:-1] + padded[2:], rtol=1e-6)


def test_cpu_equals_opencl():
    rng = np.random.default_rng(5)
    x = rng.random(WG * 9).astype(np.float32)
    on_both(block_sum, x, np.zeros(9, np.float32))
    on_both(stencil, x, np.zeros(x.size, np.float32))
    a, b = rng.random((32, 32)), rng.random((32, 32))
    on_both(tiled_matmul, a, b, np.zeros((32, 32)), 32)


@tack.kernel
def lane_state(x, out, n):
    # Locals live across barriers and uniform loops: each lane keeps its own.
    for i in range(x.shape[0]):
        buf = tack.shared((256,), tack.f64)
        lane = tack.local_index()
        mine = x[i]
        count = 0
        for r in range(n):
            buf[lane] = mine
            tack.barrier()
            mine = mine + buf[(lane + 1) % 256]
            count += 1
            tack.barrier()
        k = 0
        while k < n:
            k += 1
            tack.barrier()
        out[i] = mine * 10.0 + count + k


def lane_state_ref(x, n):
    g = x.reshape(-1, WG).copy()
    for _ in range(n):
        g = g + np.roll(g, -1, axis=1)
    return (g * 10.0 + 2 * n).ravel()


@pytest.mark.parametrize("n", [0, 1, 4])
def test_locals_across_barriers_are_per_lane(dev, n):
    x = np.random.default_rng(n).random(WG * 3)
    out = run(lane_state, dev, x, np.zeros(x.size), n)[1]
    np.testing.assert_allclose(out, lane_state_ref(x, n), rtol=1e-12)


@tack.kernel
def group_histogram(x, out):
    # Each group reduces in shared memory, then lane 0 adds the group's
    # total atomically (atomics on shared arrays are not in the language).
    for i in range(x.shape[0]):
        buf = tack.shared((256,), tack.i32)
        lane = tack.local_index()
        buf[lane] = x[i]
        tack.barrier()
        if lane == 0:
            s = 0
            for k in range(256):
                s += buf[k]
            tack.atomic_add(out, 0, s)


def test_atomics_combine_groups(dev):
    x = np.random.default_rng(3).integers(0, 1000, WG * 6).astype(np.int32)
    out = run(group_histogram, dev, x, np.zeros(1, np.int32))[1]
    assert out[0] == x.sum()


@tack.kernel
def lane_exit(x, out):
    # A lane may leave after the last barrier.
    for i in range(x.shape[0]):
        buf = tack.shared((256,), tack.f32)
        lane = tack.local_index()
        buf[lane] = x[i]
        tack.barrier()
        if buf[255 - lane] < 0.5:
            continue
        out[i] = buf[255 - lane]


def test_early_exit_after_the_last_barrier(dev):
    x = np.random.default_rng(4).random(WG * 2).astype(np.float32)
    if dev.name == "cpu":
        # Not split on the CPU yet: refused, never a wrong number.
        out = np.full(x.size, -1.0, np.float32)
        with pytest.raises(tack.CompileError) as e:
            lane_exit(x, out)
        assert "lane_exit" in str(e.value) and "cpu" in str(e.value)
        assert (out == -1.0).all()
        return
    out = run(lane_exit, dev, x, np.full(x.size, -1.0, np.float32))[1]
    rev = x.reshape(2, WG)[:, ::-1].ravel()
    np.testing.assert_array_equal(out, np.where(rev < 0.5, -1.0, rev).astype(np.float32))


@tack.kernel
def local_array_across_barrier(x, out):
    for i in range(x.shape[0]):
        buf = tack.shared((256,), tack.f32)
        lane = tack.local_index()
        mine = tack.local((3,), tack.f32)
        for k in range(3):
            mine[k] = x[i] * (k + 1)
        buf[lane] = x[i]
        tack.barrier()
        out[i] = mine[0] + mine[1] + mine[2] + buf[0]


def test_local_arrays_across_barriers_are_per_lane(dev):
    x = np.random.default_rng(6).random(WG * 2).astype(np.float32)
    out = run(local_array_across_barrier, dev, x, np.zeros(x.size, np.float32))[1]
    first = np.repeat(x.reshape(2, WG)[:, 0], WG)
    np.testing.assert_allclose(out, 6 * x + first, rtol=1e-6)


def test_launch_not_whole_groups_is_refused_on_cpu():
    x = np.ones(300, np.float32)
    out = np.full(2, 7.0, np.float32)
    with pytest.raises(ValueError) as e:
        block_sum(x, out)
    assert "block_sum" in str(e.value) and "300" in str(e.value)
    np.testing.assert_array_equal(out, 7.0)


def test_too_much_shared_memory_is_refused_on_cpu():
    @tack.kernel
    def huge(x):
        for i in range(x.shape[0]):
            t = tack.shared((1 << 20,), tack.f64)
            t[tack.local_index()] = 1.0
            tack.barrier()
            x[i] = t[0]

    x = np.zeros(WG)
    with pytest.raises(ValueError) as e:
        huge(x)
    assert "huge" in str(e.value) and str(8 << 20) in str(e.value)


def test_one_thread_and_many_threads_agree():
    x = np.random.default_rng(7).random(WG * 33).astype(np.float32)
    one = tack.device("cpu", num_threads=1)
    a = run(block_sum, one, x, np.zeros(33, np.float32))[1]
    b = run(block_sum, tack.device("cpu"), x, np.zeros(33, np.float32))[1]
    np.testing.assert_array_equal(a, b)
