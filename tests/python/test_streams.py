"""Launches that do not wait, streams and events (issue 30, sections 2-3).

On OpenCL (PoCL here) a launch on device arrays returns once queued: a long
kernel's call returns well before the kernel ends, and every path that
reads a result waits for it (.numpy(), tack.copyto both ways, a DLPack
copy, a reduction's value, tack.synchronize).  Streams are queues
of their own; an event orders a dependent kernel after another stream's.
The CPU accepts the same program.  Every check compares computed values:
`churn` is xorshift32 run n times per element, which the compilers cannot
fold, checked against the same steps in Python."""
import time

import numpy as np
import pytest

import tack
from conftest import device_or_skip, needs_numpy_dlpack_1


@tack.kernel
def churn(x, out, n):
    for i in range(x.shape[0]):
        v = x[i]
        for j in range(n):
            v = v ^ (v << 13)
            v = v ^ (v >> 17)
            v = v ^ (v << 5)
        out[i] = v


@tack.kernel
def add(x, a):
    for i in range(x.shape[0]):
        x[i] = x[i] + a


@tack.kernel
def churn_total(x, n):
    s = 0
    for i in range(x.shape[0]):
        v = x[i]
        for j in range(n):
            v = v ^ (v << 13)
            v = v ^ (v >> 17)
            v = v ^ (v << 5)
        s += v & 255
    return s


M = 1 << 16
SAMPLE = (0, 1, 777, M // 2, M - 1)


def xorshift(seed, n):
    v = seed
    for _ in range(n):
        v ^= (v << 13) & 0xFFFFFFFF
        v ^= v >> 17
        v ^= (v << 5) & 0xFFFFFFFF
    return v


def check_churn(got, n, seeds=None):
    for i in SAMPLE:
        seed = i + 1 if seeds is None else int(seeds[i])
        assert int(got[i]) == xorshift(seed, n), i


@pytest.fixture
def gpu():
    return device_or_skip("opencl")


def setup(dev, n_warm=1):
    x = tack.array(np.arange(1, M + 1, dtype=np.uint32), device=dev)
    out = tack.zeros((M,), dtype=tack.u32, device=dev)
    churn(x, out, n_warm)  # compiled (PoCL also builds at the first launch)
    tack.synchronize(dev)
    return x, out


def test_long_kernel_returns_before_it_ends(gpu):
    x, out = setup(gpu)
    # The kernel takes about 0.2 s per 1000 steps here; a queued call
    # takes microseconds.  Repeated with more work while the kernel is
    # too quick to tell the two apart (a faster machine).
    for n in (2000, 8000, 32000):
        t0 = time.perf_counter()
        churn(x, out, n)
        t1 = time.perf_counter()
        tack.synchronize()
        t2 = time.perf_counter()
        call, wait = t1 - t0, t2 - t1
        if wait > 0.2:
            break
    assert wait > 0.2, (call, wait)
    assert call < wait / 5, (call, wait)
    check_churn(out.numpy(), n)


def queue_long(dev, n=1500):
    x, out = setup(dev)
    churn(x, out, n)
    return x, out, n


def test_numpy_waits(gpu):
    x, out, n = queue_long(gpu)
    check_churn(out.numpy(), n)


def test_copyto_from_device_waits(gpu):
    x, out, n = queue_long(gpu)
    host = np.zeros(M, dtype=np.uint32)
    tack.copyto(host, out)
    check_churn(host, n)


def test_copyto_into_an_array_a_queued_kernel_reads_waits(gpu):
    # The kernel still reading x must see the old values, not the copy's.
    x, out, n = queue_long(gpu)
    tack.copyto(x, np.full(M, 5, dtype=np.uint32))
    check_churn(out.numpy(), n)
    assert (x.numpy() == 5).all()


@needs_numpy_dlpack_1
def test_dlpack_copy_waits(gpu):
    x, out, n = queue_long(gpu)
    check_churn(np.from_dlpack(out, device="cpu"), n)


def test_reduction_value_waits(gpu):
    x, out = setup(gpu)
    churn_total(x, 1)
    churn(x, out, 1500)  # queued ahead of the reduction on the same queue
    n = 300
    got = churn_total(out, n)
    seeds = out.numpy()
    check_churn(seeds, 1500)
    assert got == sum(int(v) & 255 for v in _churn_all(seeds, n))


def _churn_all(seeds, n):
    v = seeds.astype(np.uint64)
    for _ in range(n):
        v ^= (v << np.uint64(13)) & np.uint64(0xFFFFFFFF)
        v ^= v >> np.uint64(17)
        v ^= (v << np.uint64(5)) & np.uint64(0xFFFFFFFF)
    return v


def test_launches_and_copies_stay_in_order(gpu):
    x = tack.zeros((1000,), device=gpu)
    for _ in range(50):
        add(x, 1.0)
    tack.copyto(x, np.full(1000, 10, dtype=np.float32))
    for _ in range(25):
        add(x, 2.0)
    np.testing.assert_array_equal(x.numpy(), np.full(1000, 60, dtype=np.float32))


def test_streams_and_an_event(gpu):
    x, out = setup(gpu)
    y = tack.zeros((M,), dtype=tack.u32, device=gpu)
    other = tack.zeros((M,), dtype=tack.u32, device=gpu)
    s1, s2 = tack.Stream(gpu), tack.Stream(gpu)
    assert s1.device is gpu or s1.device.name == gpu.name
    with s1:
        start = s1.record()
        churn(x, out, 1000)
        done = s1.record()
    with s2:
        churn(x, other, 700)  # independent of s1
        s2.wait(done)         # then after s1's kernel
        churn(out, y, 300)    # reads what s1's kernel wrote
    s2.synchronize()
    done.synchronize()
    ms = start.elapsed(done)
    assert ms > 0
    check_churn(other.numpy(), 700)
    mid = out.numpy()
    check_churn(mid, 1000)
    check_churn(y.numpy(), 300, seeds=mid)
    tack.synchronize(gpu)


def test_stream_is_current_only_inside_with(gpu):
    x = tack.zeros((256,), device=gpu)
    s = tack.Stream(gpu)
    with s:
        add(x, 1.0)
        with tack.Stream(gpu) as inner:
            add(x, 0.0)
            inner.synchronize()
        add(x, 2.0)
    s.synchronize()
    add(x, 4.0)
    np.testing.assert_array_equal(x.numpy(), np.full(256, 7, dtype=np.float32))


def test_copies_under_a_stream_follow_its_launches(gpu):
    # Under `with s:` copies go on s itself, in order with s's launches
    # (not on the device's own queue): each sees what the kernel before it
    # on s wrote, and a kernel still reading an array sees the old values.
    x, out = setup(gpu)
    s = tack.Stream(gpu)
    n = 1500
    with s:
        churn(x, out, n)
        check_churn(out.numpy(), n)
        churn(x, out, n + 1)
        host = np.zeros(M, dtype=np.uint32)
        tack.copyto(host, out)
        check_churn(host, n + 1)
        churn(x, out, n)
        tack.copyto(x, np.full(M, 5, dtype=np.uint32))
        check_churn(out.numpy(), n)
        assert (x.numpy() == 5).all()
        churn(out, x, n)  # reads out before the kernel below rewrites it
        seeds = np.arange(7, M + 7, dtype=np.uint32)
        y = tack.array(seeds, device=gpu)  # written from the host on s
        churn(y, out, 300)
        check_churn(out.numpy(), 300, seeds=seeds)
        check_churn(x.numpy(), 2 * n)


def test_copies_on_another_stream_leave_a_running_kernel_alone(gpu):
    # A copy under `with s2:` waits for s2's work alone; s1's long kernel
    # goes on, and its result is read on s1 afterwards.  (PoCL runs one
    # command at a time, so there the copy still waits for the kernel; the
    # stand-in CUDA and HIP tests check that such a copy syncs s2 alone.)
    x, out = setup(gpu)
    s1, s2 = tack.Stream(gpu), tack.Stream(gpu)
    small = tack.zeros((64,), dtype=tack.u32, device=gpu)
    n = 1500
    with s1:
        churn(x, out, n)
    with s2:
        tack.copyto(small, np.arange(64, dtype=np.uint32) * 3)
        z = tack.zeros((64,), dtype=tack.u32, device=gpu)
        np.testing.assert_array_equal(small.numpy(), np.arange(64, dtype=np.uint32) * 3)
        np.testing.assert_array_equal(z.numpy(), np.zeros(64, dtype=np.uint32))
    with s1:
        check_churn(out.numpy(), n)
    tack.synchronize(gpu)


def test_debug_launches_wait_and_report_at_the_line(gpu):
    @tack.kernel
    def past_end(x):
        for i in range(x.shape[0] + 1):
            x[i] = 1.0

    x = tack.zeros((8,), device=gpu)
    tack.set_debug(True)
    try:
        with pytest.raises(IndexError, match="past_end"):
            past_end(x)
    finally:
        tack.set_debug(False)


def test_cpu_accepts_streams():
    cpu = tack.device("cpu")
    x = tack.zeros((1000,), device=cpu)
    s, t = tack.Stream(cpu), tack.Stream(cpu)
    with s:
        a = s.record()
        add(x, 1.0)
        time.sleep(0.02)
        b = s.record()
    t.wait(b)
    with t:
        add(x, 2.0)
    t.synchronize()
    b.synchronize()
    np.testing.assert_array_equal(x.numpy(), np.full(1000, 3, dtype=np.float32))
    assert 15 <= a.elapsed(b) < 5000  # the host's clock on the CPU
    tack.synchronize()


def test_stream_handles_exist_only_where_streams_are_shared(gpu):
    # cuda_stream is the driver's handle on CUDA and HIP (the stand-in
    # driver tests check those: tests/c/test_cuda.c); OpenCL queues and the
    # CPU have none to share, and refuse another library's.
    for dev in (gpu, "cpu"):
        assert tack.Stream(dev).cuda_stream == 0
        with pytest.raises(ValueError, match="has no streams of other libraries"):
            tack.Stream(dev, handle=0x1234)
    with pytest.raises(TypeError, match="expected an int"):
        tack.Stream("cpu", handle="0x1234")


def test_event_from_another_device_is_refused(gpu):
    e = tack.Stream("cpu").record()
    with pytest.raises(ValueError, match="recorded on device"):
        tack.Stream(gpu).wait(e)


def test_launch_wait_env_makes_the_call_wait(gpu):
    # TACK_LAUNCH_WAIT=1 (the synchronous path the bench compares with):
    # the call itself takes the kernel's time.
    import subprocess
    import sys
    import textwrap
    code = textwrap.dedent("""
        import time, numpy as np, tack, test_streams as t
        d = tack.device("opencl")
        x, out = t.setup(d)
        for n in (2000, 8000, 32000):  # more work while the kernel is too quick to time
            t0 = time.perf_counter(); t.churn(x, out, n); call = time.perf_counter() - t0
            t0 = time.perf_counter(); tack.synchronize(); wait = time.perf_counter() - t0
            if call > 0.2:
                break
        t.check_churn(out.numpy(), n)
        print(call > 0.2 and wait < call / 5, call, wait)
    """)
    import os
    env = dict(os.environ, TACK_LAUNCH_WAIT="1")
    env["PYTHONPATH"] = os.pathsep.join([os.path.dirname(__file__), env.get("PYTHONPATH", "")])
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                       timeout=300, cwd=os.path.dirname(__file__))
    assert r.returncode == 0, r.stderr
    assert r.stdout.split()[0] == "True", r.stdout
