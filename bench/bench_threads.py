"""Launches from several Python threads (issue 22, item 2), with the warm
dispatch cost of a tiny kernel beside it, in one run:

    .venv/bin/python bench/bench_threads.py

1. warm dispatch of scale(x, out, 2.0) on two length-8 f32 arrays (NumPy
   arrays, then tack.Array arguments): what a launch that keeps the GIL
   costs, the figure that letting go of the GIL must not raise.
2. two Python threads each launching a 4096-element kernel whose elements
   loop 200 times, against the same launches one after the other on one
   thread: the speedup (sequential / two threads; 2.0 is perfect overlap,
   1.0 none).  On a device with one thread per launch (num_threads=1) the
   launches can overlap only while the GIL is let go; on the default
   device each launch already runs on every pool thread, so two threads'
   launches take turns on the pool and ~1.0 is the expected figure there.
"""
import os
import sys
import threading
import time

os.environ.setdefault("TACK_CACHE", "off")

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import Report, interleaved, per_call_us  # noqa: E402

import tack  # noqa: E402

R = Report()
N = 4096
TRIPS = 200
LAUNCHES = 20          # per thread


@tack.kernel
def scale(x, out, a):
    for i in range(x.shape[0]):
        out[i] = x[i] * a


@tack.kernel
def spin(x, out, trips):
    for i in range(x.shape[0]):
        acc = x[i]
        for j in range(trips):
            acc = acc * 0.999 + 1.0
        out[i] = acc


def bench_dispatch():
    x8 = np.arange(8, dtype=np.float32)
    o8 = np.zeros(8, dtype=np.float32)
    t_np = per_call_us(scale, x8, o8, 2.0)
    R.line("dispatch scale len8 numpy-args", t_np, target="<= 0.5 us", ok=t_np <= 0.5)
    xa, oa = tack.asarray(x8), tack.asarray(o8)
    t_ta = per_call_us(scale, xa, oa, 2.0)
    R.line("dispatch scale len8 tack.Array-args", t_ta, target="<= 0.5 us", ok=t_ta <= 0.5)


def sequential_s(x, outs):
    t = time.perf_counter()
    for _ in range(LAUNCHES):
        for out in outs:
            spin(x, out, TRIPS)
    return time.perf_counter() - t


def two_threads_s(x, outs):
    barrier = threading.Barrier(len(outs) + 1)

    def work(out):
        barrier.wait()
        for _ in range(LAUNCHES):
            spin(x, out, TRIPS)

    threads = [threading.Thread(target=work, args=(out,)) for out in outs]
    for th in threads:
        th.start()
    barrier.wait()
    t = time.perf_counter()
    for th in threads:
        th.join()
    return time.perf_counter() - t


def bench_two_threads(label, device):
    x = tack.asarray(np.linspace(0, 1, N, dtype=np.float32), device=device)
    outs = [tack.zeros((N,), device=device) for _ in range(2)]
    spin(x, outs[0], TRIPS)  # compile, and the variant's first run time
    ref = outs[0].numpy().copy()
    best = interleaved({"seq": lambda: sequential_s(x, outs),
                        "threads": lambda: two_threads_s(x, outs)}, rounds=5)
    for out in outs:
        assert np.array_equal(out.numpy(), ref), "spin gave different results"
    one_ms = best["seq"] / (2 * LAUNCHES) * 1e3
    ratio = best["seq"] / best["threads"]
    target = "speedup >= 1.5" if label.endswith("num_threads=1") else None
    R.line(f"2 threads spin 4096x200 {label}", best["threads"] * 1e6 / (2 * LAUNCHES),
           [("one-after-the-other", best["seq"] * 1e6 / (2 * LAUNCHES), None)],
           target=target, ok=ratio >= 1.5,
           note=f"[per launch; speedup {ratio:.2f}x; one launch {one_ms:.2f} ms]")


def main():
    print(f"cores: {os.cpu_count()}; default device threads: {tack.get_num_threads()}")
    bench_dispatch()
    bench_two_threads("cpu num_threads=1", tack.device("cpu", num_threads=1))
    bench_two_threads("cpu default pool", tack.device("cpu"))
    bench_dispatch()  # again: dispatch after the threads ran
    R.summary()


if __name__ == "__main__":
    main()
