"""Devices and their arrays: tack.device specs, arrays that live in a
device's memory (empty/zeros/array/copyto/numpy), arrays running on their
own device, and what a GPU device refuses (host arrays, another device's
arrays, allocations past its limit), each with nothing written.  The
OpenCL tests run for real on whatever platform is installed (PoCL here) and
skip, saying why, where none is found."""
import os
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
def scale(x, out, a):
    for i in range(x.shape[0]):
        out[i] = x[i] * a


@tack.kernel
def grid(a, out):
    for i, j in tack.ndindex(a.shape[0], a.shape[1]):
        out[i, j] = a[i, j] * 2 + i - j


@tack.kernel
def gather(x, idx, out):
    for i in range(idx.shape[0]):
        out[i] = x[idx[i]]


def test_cpu_specs():
    cpu = tack.device("cpu")
    assert tack.device("cpu:0") is cpu
    assert cpu.host_memory and cpu.name == "cpu"
    # Its textures are filtered exactly, in software.
    assert cpu.hardware_texture_filtering is False
    assert "CPU" in cpu.description
    with pytest.raises(ValueError, match="one CPU device"):
        tack.device("cpu:1")
    with pytest.raises(ValueError, match="unknown device 'vulkan'.*\"cpu\".*\"opencl\""):
        tack.device("vulkan")
    with pytest.raises(ValueError, match="index after ':'"):
        tack.device("opencl:x")


@pytest.mark.parametrize("spec", ["opencl\x00garbage", "cpu\x00", "cpu\x00:1", "opencl: 0",
                                  "opencl:+0", "opencl:-0", "opencl:0 ", "cpu:0x"])
def test_device_specs_with_garbage_refused(spec):
    # The library reads a C string: a NUL ended it early ('opencl\0garbage'
    # was opencl:0), and strtol took spaces and signs before the index.
    with pytest.raises(ValueError, match="NUL character|index after ':'"):
        tack.device(spec)
    with pytest.raises(ValueError, match="NUL character|index after ':'"):
        tack.device(spec, num_threads=1)
    with pytest.raises(ValueError, match="NUL character|index after ':'"):
        tack.zeros((2,), device=spec)


@pytest.mark.parametrize("spec", ["opencl", "opencl:0", "cuda", "cuda:1"])
def test_num_threads_refused_off_the_cpu(spec):
    # Refused from the spec alone (before any driver is opened): a thread
    # count for a device without a thread pool used to be dropped.
    for n in (1, 2, 256):
        with pytest.raises(ValueError, match="has no thread pool: num_threads applies to the "
                                             "CPU"):
            tack.device(spec, num_threads=n)


def test_num_threads_limit_is_said_one_way():
    # 257..65536 were let through to the library's "at most 256", larger
    # counts said "between 0 and 65536": both are the one limit now.
    for n in (-1, 257, 300, 65536, 70000, 2**70):
        with pytest.raises(ValueError, match=r"num_threads must be from 1 to 256 \(0: one "
                                             r"per core\), not " + str(n)):
            tack.device("cpu", num_threads=n)
    with pytest.raises(ValueError, match="from 1 to 256, not 257"):
        tack.set_num_threads(257)
    with pytest.raises(TypeError, match="num_threads takes an int"):
        tack.device("cpu", num_threads=True)
    assert tack.device("cpu", num_threads=256).num_threads == 256
    assert tack.device("cpu", num_threads=0).num_threads >= 1   # one per core


def test_opencl_device(gpu):
    assert tack.device("opencl") is gpu and tack.device("opencl:0") is gpu
    assert gpu.name == "opencl:0" and not gpu.host_memory
    assert gpu.hardware_texture_filtering is False
    assert "OpenCL C" in gpu.description
    with pytest.raises(ValueError, match="no OpenCL device 99"):
        tack.device("opencl:99")


@pytest.mark.parametrize("dtype", [np.bool_, np.int8, np.uint16, np.int32, np.int64, np.uint64,
                                   np.float32, np.float64])
def test_device_array_round_trip(gpu, dtype):
    host = (np.arange(-20, 40) % 7).astype(dtype)
    a = tack.array(host, device=gpu)
    assert a.device is gpu and a.shape == host.shape and a.numpy().dtype == host.dtype
    np.testing.assert_array_equal(a.numpy(), host)
    z = tack.zeros((3, 5), dtype=tack.f64, device=gpu)
    np.testing.assert_array_equal(z.numpy(), np.zeros((3, 5)))
    e = tack.empty((0,), device=gpu)
    assert e.numpy().shape == (0,)


def test_copyto_both_ways(gpu):
    a = tack.empty((4, 3), dtype=tack.i32, device=gpu)
    tack.copyto(a, np.arange(12).reshape(4, 3))            # int64 -> i32, same kind
    back = np.full((4, 3), -1, np.int32)
    tack.copyto(back, a)                                    # device -> NumPy
    np.testing.assert_array_equal(back, np.arange(12).reshape(4, 3))
    with pytest.raises(TypeError, match="same_kind"):
        tack.copyto(a, np.ones((4, 3)))                     # float into int refused
    with pytest.raises(ValueError):
        tack.copyto(a, np.ones((3, 4), np.int32))           # wrong shape
    np.testing.assert_array_equal(a.numpy(), np.arange(12).reshape(4, 3))


def test_vector_device_arrays(gpu):
    v = tack.array(np.arange(12, dtype=np.float32).reshape(4, 3), dtype=tack.vec3f, device=gpu)
    assert v.shape == (4,)
    np.testing.assert_array_equal(v.numpy(), np.arange(12, dtype=np.float32).reshape(4, 3))


def test_device_array_has_no_host_buffer(gpu):
    a = tack.zeros((4,), device=gpu)
    with pytest.raises(BufferError, match="opencl:0.*numpy"):
        memoryview(a)
    # A copy to another device goes through the host.
    c = tack.array(a, device="cpu")
    assert c.device is tack.device("cpu")
    np.testing.assert_array_equal(np.asarray(c), np.zeros(4, np.float32))


def test_kernels_run_on_their_arrays_device(gpu, restore_default_device):
    x = tack.array(np.arange(10, dtype=np.float32), device=gpu)
    out = tack.zeros((10,), device=gpu)
    tack.set_default_device("cpu")          # arrays made before a switch run on their own device
    scale(x, out, 2.0)
    np.testing.assert_array_equal(out.numpy(), np.arange(10, dtype=np.float32) * 2)
    assert len(scale.variants(device=gpu)) == 1
    assert scale.variants(device=gpu)[0][4] is False     # never disjoint off the CPU
    a = np.arange(12, dtype=np.int32).reshape(3, 4)
    da = tack.array(a, device=gpu)
    do = tack.zeros((3, 4), dtype=tack.i32, device=gpu)
    grid(da, do)
    i, j = np.indices((3, 4))
    np.testing.assert_array_equal(do.numpy(), a * 2 + i - j)


def test_host_arrays_refused_on_gpu(gpu, restore_default_device):
    out = tack.array(np.full(4, 7, np.float32), device=gpu)
    with pytest.raises(TypeError, match=r"kernel 'scale': parameter 'x' is a host array.*"
                                        r"tack.array\(x, device=\"opencl:0\"\)"):
        scale(np.ones(4, np.float32), out, 2.0)
    # A CPU tack.Array passed with GPU arrays: the first array's device is
    # the launch's, and the other is refused naming its parameter.
    with pytest.raises(TypeError, match="parameter 'out'.*device 'opencl:0'.*earlier.*'cpu'.*"
                                        "tack.array"):
        scale(tack.zeros((4,)), out, 2.0)
    # A GPU array on the CPU's default device, NumPy alongside it.
    tack.set_default_device(gpu)
    with pytest.raises(TypeError, match="parameter 'out' is a host array"):
        scale(tack.array(np.ones(4, np.float32), device=gpu), np.zeros(4, np.float32), 1.0)
    np.testing.assert_array_equal(out.numpy(), np.full(4, 7, np.float32))


def test_allocation_past_the_device_limit(gpu):
    with pytest.raises(MemoryError, match="largest allocation"):
        tack.empty((1 << 40,), dtype=tack.f64, device=gpu)


@tack.kernel
def fill3(out, v):
    for i, j, k in tack.ndindex(out.shape[0], out.shape[1], out.shape[2]):
        out[i, j, k] = v


def test_read_only_storage_refused_before_running(gpu):
    tex = tack.Texture3D(tack.array(np.ones((2, 2, 2), np.float32), device=gpu))
    assert tex.data.device is gpu
    with pytest.raises(ValueError, match="kernel 'fill3' writes to parameter 'out'.*read-only"):
        fill3(tex, 5.0)                          # a texture is read-only storage
    np.testing.assert_array_equal(tex.numpy(), np.ones((2, 2, 2), np.float32))


def test_debug_mode_on_gpu(gpu):
    x = tack.array(np.arange(8, dtype=np.float32), device=gpu)
    idx = tack.array(np.array([0, 3, 9, 1], np.int64), device=gpu)
    out = tack.zeros((4,), device=gpu)
    tack.set_debug(True)
    try:
        with pytest.raises(IndexError, match=r"kernel 'gather'.*index \(9,\) is out of bounds "
                                             r"for 'x' with shape \(8,\)"):
            gather(x, idx, out)
    finally:
        tack.set_debug(False)
    idx_ok = tack.array(np.array([0, 3, 7, 1], np.int64), device=gpu)
    gather(x, idx_ok, out)
    np.testing.assert_array_equal(out.numpy(), [0, 3, 7, 1])


def test_disk_cache_second_process_loads_the_binary(tmp_path, gpu):
    """A second process loads the OpenCL program binary from the disk cache:
    no lowering, no compile, the driver's binary accepted."""
    script = tmp_path / "run.py"
    script.write_text(textwrap.dedent("""
        import json, sys
        import numpy as np
        import tack

        @tack.kernel
        def axpy(x, y, out, a):
            for i in range(x.shape[0]):
                out[i] = a * x[i] + y[i]

        dev = tack.device("opencl")
        x = tack.array(np.arange(16, dtype=np.float64), device=dev)
        y = tack.array(np.ones(16), device=dev)
        out = tack.zeros((16,), dtype=tack.f64, device=dev)
        axpy(x, y, out, 3.0)
        assert (out.numpy() == np.arange(16) * 3.0 + 1).all()
        print(json.dumps(tack.stats()))
    """))
    env = dict(os.environ, TACK_CACHE="write", TACK_CACHE_DIR=str(tmp_path / "cache"))
    runs = []
    for _ in range(2):
        p = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True,
                           timeout=300)
        assert p.returncode == 0, p.stderr
        import json
        runs.append(json.loads(p.stdout.strip().splitlines()[-1]))
    first, second = runs
    assert first["compiles"] == 1 and first["disk_misses"] == 1
    assert second["compiles"] == 0 and second["lowerings"] == 0
    assert second["disk_hits"] == 1 and second["driver_binary_loads"] == 1
    assert second["driver_source_builds"] == 0


@tack.kernel
def repeat_double(x, out, m):
    for i in range(x.shape[0]):
        for _ in range(m):
            out[i] = out[i] + x[i]


def test_in_place_on_gpu_is_one_variant(gpu):
    """The same device array as input and output gives the sequential
    result per element; off the CPU there is one variant whether or not the
    arrays overlap (disjoint is always False)."""
    y = np.linspace(-3, 3, 1001)
    d = tack.array(y, device=gpu)
    repeat_double(d, d, 3)
    np.testing.assert_array_equal(d.numpy(), y * 8.0)        # doubled three times, exactly
    a = tack.array(y, device=gpu)
    b = tack.zeros((1001,), dtype=tack.f64, device=gpu)
    repeat_double(a, b, 2)
    np.testing.assert_array_equal(b.numpy(), y * 2.0)
    assert [k[4] for k in repeat_double.variants(device=gpu)] == [False]


@tack.kernel
def add(x, y, out):
    for i in range(x.shape[0]):
        out[i] = x[i] + y[i]


def test_short_output_refused_on_gpu(gpu):
    """The launch-range check runs on every device, before anything runs."""
    x = tack.array(np.arange(16, dtype=np.float32), device=gpu)
    out = tack.array(np.full(4, -1, np.float32), device=gpu)
    with pytest.raises(IndexError, match=r"kernel 'add': the launch writes out\[0..15\] but 'out' "
                                         r"has shape \(4,\)"):
        add(x, x, out)
    np.testing.assert_array_equal(out.numpy(), np.full(4, -1, np.float32))
