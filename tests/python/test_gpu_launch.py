"""How GPU dialects map a launch onto work items: the innermost ndindex
index on the fastest-varying dimension (OpenCL's get_global_id(0), CUDA's
x), the loop body emitted once, and OpenCL launches that cover the range
(one iteration per work item).  Runs for real on the installed OpenCL
platform (PoCL here), each result against NumPy, every iteration counted
so that one run twice or never shows; the CUDA source is checked as text
(its PTX goes through ptxas in test_cuda.py)."""
import os
import re
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import tack
from conftest import device_or_skip


@pytest.fixture
def gpu():
    return device_or_skip("opencl")


@tack.kernel
def visit2(hits, n, m):
    for i, j in tack.ndindex(n, m):
        tack.atomic_add(hits, (i, j), i * 1000 + j + 1)


@tack.kernel
def visit3(hits, n, m, p):
    for i, j, l in tack.ndindex(n, m, p):
        tack.atomic_add(hits, (i, j, l), i * 100000 + j * 1000 + l + 1)


@tack.kernel
def stencil(u, out):
    for i, j in tack.ndindex(u.shape[0] - 2, u.shape[1] - 2):
        out[i + 1, j + 1] = 0.25 * (u[i, j + 1] + u[i + 2, j + 1] + u[i + 1, j] + u[i + 1, j + 2])


@tack.kernel
def fill3(a):
    for i, j, l in tack.ndindex(a.shape[0], a.shape[1], a.shape[2]):
        a[i, j, l] = i * 10000 + j * 100 + l


@tack.kernel
def strided(x, out, start, step):
    for i in range(start, x.shape[0], step):
        out[i] = x[i] * 2 + 1


# Non-square, prime, one-wide, below and above 64 (the rounding unit), and
# empty extents: one variant each (the extents are scalars).
SHAPES_2D = [(1, 1), (37, 45), (45, 37), (1, 130), (130, 1), (3, 97), (97, 3), (64, 64),
             (65, 129), (0, 5), (5, 0), (0, 0)]
SHAPES_3D = [(1, 1, 1), (5, 7, 9), (2, 3, 130), (130, 2, 3), (4, 65, 3), (3, 0, 4), (0, 2, 2),
             (2, 2, 0)]


def test_ndindex_2d_every_iteration_once(gpu):
    for n, m in SHAPES_2D:
        hits = tack.zeros((140, 140), dtype=tack.i32, device=gpu)
        visit2(hits, n, m)
        want = np.zeros((140, 140), np.int32)
        i, j = np.indices((n, m))
        want[:n, :m] = i * 1000 + j + 1
        np.testing.assert_array_equal(hits.numpy(), want, err_msg=f"ndindex({n}, {m})")
    assert len(visit2.variants(device=gpu)) == 1


def test_ndindex_3d_every_iteration_once(gpu):
    for n, m, p in SHAPES_3D:
        hits = tack.zeros((132, 66, 132), dtype=tack.i32, device=gpu)
        visit3(hits, n, m, p)
        want = np.zeros((132, 66, 132), np.int32)
        i, j, l = np.indices((n, m, p))
        want[:n, :m, :p] = i * 100000 + j * 1000 + l + 1
        np.testing.assert_array_equal(hits.numpy(), want, err_msg=f"ndindex({n}, {m}, {p})")


@pytest.mark.parametrize("shape", [(67, 130), (130, 67), (3, 200), (200, 3)])
def test_stencil_matches_numpy(gpu, shape):
    rng = np.random.default_rng(sum(shape))
    uh = rng.random(shape, dtype=np.float32)
    u = tack.array(uh, device=gpu)
    out = tack.zeros(shape, device=gpu)
    stencil(u, out)
    want = np.zeros(shape, np.float32)
    want[1:-1, 1:-1] = np.float32(0.25) * (uh[:-2, 1:-1] + uh[2:, 1:-1] + uh[1:-1, :-2]
                                           + uh[1:-1, 2:])
    np.testing.assert_array_equal(out.numpy(), want)


@pytest.mark.parametrize("shape", [(5, 7, 9), (2, 3, 70), (70, 3, 2)])
def test_fill3_matches_numpy(gpu, shape):
    a = tack.zeros(shape, dtype=tack.i64, device=gpu)
    fill3(a)
    i, j, l = np.indices(shape)
    np.testing.assert_array_equal(a.numpy(), i * 10000 + j * 100 + l)


def test_outer_range_with_start_and_step(gpu):
    xh = np.arange(1001, dtype=np.float32)
    x = tack.array(xh, device=gpu)
    for start, step in ((0, 1), (3, 2), (5, 7), (1000, 1), (1001, 3)):
        out = tack.zeros((1001,), device=gpu)
        strided(x, out, start, step)
        want = np.zeros(1001, np.float32)
        want[start::step] = xh[start::step] * 2 + 1
        np.testing.assert_array_equal(out.numpy(), want, err_msg=f"range({start}, n, {step})")


# ---- the generated source ----------------------------------------------------

def entry_of(src):
    """The kernel function's text (after the helpers)."""
    return src[src.index("__global__" if "__global__ void" in src else "__kernel"):]


def test_opencl_source_innermost_on_dimension_0():
    hits = np.zeros((4, 4), np.int32)
    src = entry_of(tack.opencl.source(visit2, hits, 4, 4))
    assert "const long k0 = (long)get_global_id(1);" in src
    assert "const long k1 = (long)get_global_id(0);" in src
    # One iteration per work item: a bound check, no loop, the body once.
    assert "if (k0 < count && k1 < inner0) {" in src
    assert "for (" not in src and "get_global_size" not in src
    assert src.count("tk_atomic_add_i32(") == 1
    src3 = entry_of(tack.opencl.source(visit3, np.zeros((2, 2, 2), np.int32), 2, 2, 2))
    for k, dim in ((0, 2), (1, 1), (2, 0)):
        assert f"const long k{k} = (long)get_global_id({dim});" in src3
    assert src3.count("tk_atomic_add_i32(") == 1


def test_cuda_source_innermost_on_x():
    src = entry_of(tack.cuda.source(visit2, np.zeros((4, 4), np.int32), 4, 4))
    # Grid-stride loops, the innermost index on x, the body once.
    assert re.search(r"for \(long long k0 = \(\(long long\)blockIdx\.y \* blockDim\.y "
                     r"\+ threadIdx\.y\); k0 < count; k0 \+= \(\(long long\)gridDim\.y", src)
    assert re.search(r"for \(long long k1 = \(\(long long\)blockIdx\.x \* blockDim\.x "
                     r"\+ threadIdx\.x\); k1 < inner0; k1 \+= \(\(long long\)gridDim\.x", src)
    assert src.count("for (") == 2 and src.count("tk_atomic_add_i32(") == 1
    src3 = entry_of(tack.cuda.source(visit3, np.zeros((2, 2, 2), np.int32), 2, 2, 2))
    for k, axis in ((0, "z"), (1, "y"), (2, "x")):
        assert f"k{k} = ((long long)blockIdx.{axis} * blockDim.{axis} + threadIdx.{axis})" in src3
    assert src3.count("tk_atomic_add_i32(") == 1


# ---- the disk cache's writer thread ----------------------------------------------

WRITER_SCRIPT = textwrap.dedent("""
    import json, os, sys
    import numpy as np
    import tack

    @tack.kernel
    def axpy(x, y, out, a):
        for i in range(x.shape[0]):
            out[i] = a * x[i] + y[i]

    @tack.kernel
    def grid(out, n, m):
        for i, j in tack.ndindex(n, m):
            out[i, j] = i * m + j

    dev = tack.device("opencl")
    x = tack.array(np.arange(16, dtype=np.float64), device=dev)
    y = tack.array(np.ones(16), device=dev)
    out = tack.zeros((16,), dtype=tack.f64, device=dev)
    axpy(x, y, out, 3.0)
    assert (out.numpy() == np.arange(16) * 3.0 + 1).all()
    g = tack.zeros((5, 7), dtype=tack.i64, device=dev)
    grid(g, 5, 7)
    assert (g.numpy() == np.arange(35).reshape(5, 7)).all()
    if sys.argv[1] == "fork":
        # A child that exits (running its atexit handlers) while the
        # parent's entries may still be queued: it neither waits for nor
        # writes them, and the parent still does.
        pid = os.fork()
        if pid == 0:
            sys.stdout.flush()
            sys.exit(0)
        _, status = os.waitpid(pid, 0)
        assert status == 0, status
    print(json.dumps(tack.stats()))
""")


def run_writer(tmp_path, mode, cache):
    script = tmp_path / "run.py"
    script.write_text(WRITER_SCRIPT)
    env = dict(os.environ, TACK_CACHE="write", TACK_CACHE_DIR=str(cache))
    p = subprocess.run([sys.executable, str(script), mode, str(cache)], env=env,
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    import json
    return json.loads(p.stdout.strip().splitlines()[-1])


def test_entries_written_by_exit_and_loaded_as_binaries(tmp_path, gpu):
    """The program binaries are fetched on the writer thread, and a process
    that ends right after its calls still leaves every entry: a second
    process loads both kernels' binaries, compiling nothing."""
    cache = tmp_path / "cache"
    first = run_writer(tmp_path, "plain", cache)
    assert first["compiles"] == 2 and first["disk_misses"] == 2
    second = run_writer(tmp_path, "plain", cache)
    assert second["compiles"] == 0 and second["disk_hits"] == 2
    assert second["driver_binary_loads"] == 2 and second["driver_source_builds"] == 0


def test_forked_child_leaves_parents_entries(tmp_path, gpu):
    cache = tmp_path / "cache"
    first = run_writer(tmp_path, "fork", cache)
    assert first["compiles"] == 2
    second = run_writer(tmp_path, "plain", cache)
    assert second["compiles"] == 0 and second["driver_binary_loads"] == 2


def test_concurrent_writers_one_cache(tmp_path, gpu):
    """Four processes compiling the same kernels into one empty cache at
    once: each runs correctly, and a fifth loads every entry whole."""
    cache = tmp_path / "cache"
    script = tmp_path / "run.py"
    script.write_text(WRITER_SCRIPT)
    env = dict(os.environ, TACK_CACHE="write", TACK_CACHE_DIR=str(cache))
    procs = [subprocess.Popen([sys.executable, str(script), "plain", str(cache)], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(4)]
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
    last = run_writer(tmp_path, "plain", cache)
    assert last["compiles"] == 0 and last["disk_bad_entries"] == 0
    assert last["driver_binary_loads"] == 2
