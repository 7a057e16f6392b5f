"""CUDA benchmarks for a machine with an NVIDIA GPU (run by bench/gpu/check.sh).

  dispatch  a warm call of `scale` over 8 elements with tack.synchronize
            after it (launch + wait), beside the driver API's floor
            (cuda_floor.c: the same PTX, cuLaunchKernel + cuStreamSynchronize)
            and Warp's wp.launch + wp.synchronize
  launch_queue  1000 back-to-back calls of `scale` on device arrays, in
            us/call: queued (each call returns once its launch is queued;
            also with the final synchronize) and waited (TACK_LAUNCH_WAIT=1,
            a child process), each the median of 7 rounds, beside the
            driver's floors for both (cuda_floor launch ... [queued])
  triad     a[i] = b[i] + s * c[i] over 2**27 f32, in GB/s (3 arrays moved),
            beside a device-to-device copy (cuMemcpyDtoD, counting read +
            write) and CuPy's ElementwiseKernel
  nbody     one O(n^2) step over 16384 bodies, beside Warp
  reduction block sums of 2**26 f32 through a workgroup's shared array and
            barriers (tack.shared, tack.barrier), in GB/s read, beside the
            device-to-device copy and CuPy's sum

Prints one `RESULT name value unit` line per figure (check.sh collects them)
and skips, saying why, what is not installed.  Usage:
    python bench/gpu/bench_cuda.py [FLOOR_EXE]
"""
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

import tack

HERE = os.path.dirname(os.path.abspath(__file__))


def result(name, value, unit, note=""):
    print(f"RESULT {name} {value:.3f} {unit}{'  # ' + note if note else ''}", flush=True)


def skip(name, why):
    print(f"SKIP {name}: {why}", flush=True)


def per_call_us(fn, batch=200, batches=50, warmup=500):
    for _ in range(warmup):
        fn()
    samples = []
    for _ in range(batches):
        t = time.perf_counter_ns()
        for _ in range(batch):
            fn()
        samples.append((time.perf_counter_ns() - t) / batch / 1e3)
    return statistics.median(samples)


def best_s(fn, reps=10, warmup=2):
    for _ in range(warmup):
        fn()
    best = float("inf")
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


@tack.kernel
def scale(x, out, a):
    for i in range(x.shape[0]):
        out[i] = x[i] * a


@tack.kernel
def triad(a, b, c, s):
    for i in range(a.shape[0]):
        a[i] = b[i] + s * c[i]


@tack.kernel
def nbody_step(pos, vel, mass, new_pos, new_vel, dt):
    for i in range(pos.shape[0]):
        ax = 0.0
        ay = 0.0
        az = 0.0
        for j in range(pos.shape[0]):
            dx = pos[j, 0] - pos[i, 0]
            dy = pos[j, 1] - pos[i, 1]
            dz = pos[j, 2] - pos[i, 2]
            r2 = dx * dx + dy * dy + dz * dz + 0.01
            inv = 1.0 / (r2 * tack.math.sqrt(r2))
            ax += mass[j] * dx * inv
            ay += mass[j] * dy * inv
            az += mass[j] * dz * inv
        new_vel[i, 0] = vel[i, 0] + ax * dt
        new_vel[i, 1] = vel[i, 1] + ay * dt
        new_vel[i, 2] = vel[i, 2] + az * dt
        new_pos[i, 0] = pos[i, 0] + new_vel[i, 0] * dt
        new_pos[i, 1] = pos[i, 1] + new_vel[i, 1] * dt
        new_pos[i, 2] = pos[i, 2] + new_vel[i, 2] * dt


def import_warp():
    try:
        import warp as wp
        wp.config.quiet = True
        wp.init()
        if not wp.is_cuda_available():
            return None, "Warp finds no CUDA device"
        return wp, None
    except Exception as e:  # ImportError, or a Warp/driver mismatch
        return None, f"{type(e).__name__}: {e}".splitlines()[0][:160]


def import_cupy():
    try:
        import cupy as cp
        cp.zeros(1).sum()
        return cp, None
    except Exception as e:
        return None, f"{type(e).__name__}: {e}".splitlines()[0][:160]


def bench_dispatch(dev, floor_exe, wp):
    x = tack.array(np.arange(8, dtype=np.float32), device=dev)
    out = tack.zeros((8,), device=dev)
    scale(x, out, 2.0)
    assert np.array_equal(out.numpy(), np.arange(8, dtype=np.float32) * 2), "scale: wrong results"
    # Launches return queued: the wait is tack.synchronize's.
    us = per_call_us(lambda: (scale(x, out, 2.0), tack.synchronize(dev)))
    result("dispatch.tack", us, "us", "scale over 8 f32, launch + tack.synchronize")
    floor = None
    if floor_exe:
        with tempfile.TemporaryDirectory() as d:
            ptx = os.path.join(d, "scale.ptx")
            with open(ptx, "w") as f:
                f.write(tack.cuda.compile(scale, np.zeros(8, np.float32), np.zeros(8, np.float32),
                                          2.0, arch=_arch(dev)))
            r = subprocess.run([floor_exe, "launch", ptx, "tack_scale", "20000"],
                               capture_output=True, text=True)
            if r.returncode == 0:
                floor = float(r.stdout.strip())
                result("dispatch.driver_floor", floor, "us", "cuLaunchKernel + cuStreamSynchronize")
                result("dispatch.tack_minus_floor", us - floor, "us", "target: <= 3")
            else:
                skip("dispatch.driver_floor", r.stderr.strip()[:200])
    else:
        skip("dispatch.driver_floor", "cuda_floor was not built")
    if wp is None:
        return
    @wp.kernel
    def wscale(x: wp.array(dtype=wp.float32), out: wp.array(dtype=wp.float32), a: float):
        i = wp.tid()
        out[i] = x[i] * a
    wx = wp.array(np.arange(8, dtype=np.float32), dtype=wp.float32)
    wo = wp.zeros(8, dtype=wp.float32)

    def wcall():
        wp.launch(wscale, dim=8, inputs=[wx, wo, 2.0])
        wp.synchronize()
    wcall()
    wus = per_call_us(wcall)
    result("dispatch.warp", wus, "us", "wp.launch + wp.synchronize")
    result("dispatch.warp_over_tack", wus / us, "x", "target: >= 2")


LAUNCHES, ROUNDS = 1000, 7


def launch_rounds(dev):
    """Median us/call of ROUNDS rounds of LAUNCHES calls, without and with
    the final synchronize; checks the result."""
    x = tack.array(np.arange(8, dtype=np.float32), device=dev)
    out = tack.zeros((8,), device=dev)
    for _ in range(200):  # compiled, and the driver warm
        scale(x, out, 2.0)
    tack.synchronize(dev)
    calls, totals = [], []
    for _ in range(ROUNDS):
        t0 = time.perf_counter()
        for _ in range(LAUNCHES):
            scale(x, out, 2.0)
        t1 = time.perf_counter()
        tack.synchronize(dev)
        t2 = time.perf_counter()
        calls.append((t1 - t0) / LAUNCHES * 1e6)
        totals.append((t2 - t0) / LAUNCHES * 1e6)
    assert np.array_equal(out.numpy(), np.arange(8, dtype=np.float32) * 2), "scale: wrong results"
    return statistics.median(calls), statistics.median(totals)


def bench_launch_queue(dev, floor_exe):
    queued, queued_total = launch_rounds(dev)
    result("launch_queue.queued", queued, "us", f"{LAUNCHES} calls of scale, each returns queued")
    result("launch_queue.queued_with_sync", queued_total, "us", "the same, the final synchronize included")
    env = dict(os.environ, TACK_LAUNCH_WAIT="1", _TACK_LAUNCH_QUEUE_CHILD="1")
    r = subprocess.run([sys.executable, os.path.abspath(__file__)], env=env,
                       capture_output=True, text=True, timeout=120)
    if r.returncode == 0 and len(r.stdout.split()) == 2:
        waited = float(r.stdout.split()[0])
        result("launch_queue.waited", waited, "us", "TACK_LAUNCH_WAIT=1: each call waits")
        result("launch_queue.waited_over_queued", waited / queued, "x")
    else:
        skip("launch_queue.waited", (r.stderr or r.stdout).strip()[-200:])
    if not floor_exe:
        skip("launch_queue.driver_floor", "cuda_floor was not built")
        return
    with tempfile.TemporaryDirectory() as d:
        ptx = os.path.join(d, "scale.ptx")
        with open(ptx, "w") as f:
            f.write(tack.cuda.compile(scale, np.zeros(8, np.float32), np.zeros(8, np.float32),
                                      2.0, arch=_arch(dev)))
        for mode, name in (("queued", "driver_floor_queued"), ("", "driver_floor_waited")):
            r = subprocess.run([floor_exe, "launch", ptx, "tack_scale", str(LAUNCHES)] +
                               ([mode] if mode else []), capture_output=True, text=True)
            if r.returncode == 0:
                floor = float(r.stdout.strip())
                result(f"launch_queue.{name}", floor, "us",
                       "cuLaunchKernel" + (", one sync per round" if mode else
                                           " + cuStreamSynchronize"))
                if mode:
                    result("launch_queue.tack_minus_floor", queued_total - floor, "us",
                           "queued, final synchronize included")
            else:
                skip(f"launch_queue.{name}", r.stderr.strip()[:200])


def _arch(dev):
    # "NAME (CUDA, compute capability 9.0, ...)" -> "sm_90"
    d = dev.description
    at = d.find("compute capability ")
    cc = d[at + 19:].split(",")[0].split(")")[0]
    return "sm_" + cc.replace(".", "")


def bench_triad(dev, floor_exe, cp):
    n = 1 << 27
    b = tack.array(np.ones(n, np.float32), device=dev)
    c = tack.array(np.full(n, 2.0, np.float32), device=dev)
    a = tack.zeros((n,), device=dev)
    triad(a, b, c, 3.0)
    got = a.numpy()
    assert got[0] == 7.0 and got[-1] == 7.0, "triad: wrong results"
    t = best_s(lambda: triad(a, b, c, 3.0))
    gbs = 3 * n * 4 / t / 1e9
    result("triad.tack", gbs, "GB/s", f"2**27 f32, {t * 1e3:.2f} ms")
    if floor_exe:
        r = subprocess.run([floor_exe, "copy", str(n), "20"], capture_output=True, text=True)
        if r.returncode == 0:
            copy = float(r.stdout.strip())
            COPY_GBS["copy"] = copy
            result("triad.d2d_copy", copy, "GB/s", "cuMemcpyDtoD, read + write")
            result("triad.tack_over_copy", gbs / copy, "x", "target: >= 0.9")
        else:
            skip("triad.d2d_copy", r.stderr.strip()[:200])
    if cp is None:
        return
    k = cp.ElementwiseKernel("float32 b, float32 c, float32 s", "float32 a", "a = b + s * c",
                             "triad")
    cb = cp.ones(n, cp.float32)
    cc = cp.full(n, 2.0, cp.float32)
    ca = cp.zeros(n, cp.float32)

    def ccall():
        k(cb, cc, cp.float32(3.0), ca)
        cp.cuda.Device().synchronize()
    ct = best_s(ccall)
    result("triad.cupy", 3 * n * 4 / ct / 1e9, "GB/s", "ElementwiseKernel")


def bench_nbody(dev, wp):
    n = 16384
    rng = np.random.default_rng(1)
    pos = tack.array(rng.random((n, 3), dtype=np.float32), device=dev)
    vel = tack.zeros((n, 3), device=dev)
    mass = tack.array(rng.random(n, dtype=np.float32), device=dev)
    npos = tack.zeros((n, 3), device=dev)
    nvel = tack.zeros((n, 3), device=dev)
    t = best_s(lambda: nbody_step(pos, vel, mass, npos, nvel, 0.01), reps=5)
    result("nbody.tack", t * 1e3, "ms", f"{n} bodies, one step")
    if wp is None:
        return

    @wp.kernel
    def wstep(pos: wp.array(dtype=wp.vec3), vel: wp.array(dtype=wp.vec3),
              mass: wp.array(dtype=float), npos: wp.array(dtype=wp.vec3),
              nvel: wp.array(dtype=wp.vec3), dt: float):
        i = wp.tid()
        acc = wp.vec3()
        for j in range(pos.shape[0]):
            d = pos[j] - pos[i]
            r2 = wp.dot(d, d) + 0.01
            acc = acc + mass[j] * d / (r2 * wp.sqrt(r2))
        nvel[i] = vel[i] + acc * dt
        npos[i] = pos[i] + nvel[i] * dt
    wpos = wp.array(pos.numpy(), dtype=wp.vec3)
    wvel = wp.zeros(n, dtype=wp.vec3)
    wmass = wp.array(mass.numpy(), dtype=float)
    wnp = wp.zeros(n, dtype=wp.vec3)
    wnv = wp.zeros(n, dtype=wp.vec3)

    def wcall():
        wp.launch(wstep, dim=n, inputs=[wpos, wvel, wmass, wnp, wnv, 0.01])
        wp.synchronize()
    wt = best_s(wcall, reps=5)
    result("nbody.warp", wt * 1e3, "ms", f"{n} bodies, one step")


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


COPY_GBS = {}  # triad's device-to-device copy, for the reduction's ratio


def bench_reduction(dev, cp):
    n = 1 << 26
    rng = np.random.default_rng(2)
    host = rng.integers(0, 8, n).astype(np.float32)  # sums of small integers: exact
    x = tack.array(host, device=dev)
    out = tack.zeros((n // 256,), device=dev)
    block_sum(x, out)
    want = host.reshape(-1, 256).sum(axis=1)
    assert np.array_equal(out.numpy(), want), "block_sum: wrong results"
    t = best_s(lambda: block_sum(x, out))
    gbs = n * 4 / t / 1e9
    result("reduction.tack", gbs, "GB/s", f"block sums of 2**26 f32 (shared + barrier), {t * 1e3:.2f} ms")
    if "copy" in COPY_GBS:
        result("reduction.tack_over_copy", gbs / COPY_GBS["copy"], "x",
               "read bandwidth over cuMemcpyDtoD's read + write")
    if cp is None:
        return
    cx = cp.asarray(host)

    def ccall():
        cx.reshape(-1, 256).sum(axis=1)
        cp.cuda.Device().synchronize()
    ct = best_s(ccall)
    result("reduction.cupy", n * 4 / ct / 1e9, "GB/s", "cupy sum over axis 1 of (n/256, 256)")


def main():
    floor_exe = sys.argv[1] if len(sys.argv) > 1 and os.path.exists(sys.argv[1]) else None
    dev = tack.device("cuda")
    print(f"device: {dev.description}", flush=True)
    wp, why = import_warp()
    if wp is None:
        skip("warp", why)
    cp, why = import_cupy()
    if cp is None:
        skip("cupy", why)
    for name, fn in (("dispatch", lambda: bench_dispatch(dev, floor_exe, wp)),
                     ("launch_queue", lambda: bench_launch_queue(dev, floor_exe)),
                     ("triad", lambda: bench_triad(dev, floor_exe, cp)),
                     ("nbody", lambda: bench_nbody(dev, wp)),
                     ("reduction", lambda: bench_reduction(dev, cp))):
        try:
            fn()
        except Exception as e:  # one benchmark's failure leaves the others
            print(f"FAIL {name}: {type(e).__name__}: {e}".splitlines()[0][:300], flush=True)


if __name__ == "__main__":
    if os.environ.get("_TACK_LAUNCH_QUEUE_CHILD"):  # bench_launch_queue's waited run
        print("%.3f %.3f" % launch_rounds(tack.device("cuda")))
    else:
        main()
