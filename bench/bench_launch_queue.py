"""1,000 back-to-back launches of a tiny kernel on OpenCL device arrays
(PoCL here): microseconds per launch queued (the call returns once the
launch is queued, issue 30.2: target <= 5 us) beside the synchronous path
(TACK_LAUNCH_WAIT=1 waits for each launch, as every launch did before).
Both figures come from one run: the script runs itself once more with
TACK_LAUNCH_WAIT=1.  Each figure is the median of 7 rounds of 1,000
launches, the round's time including the final synchronize, and the
result is checked.

    python bench/bench_launch_queue.py"""
import os
import statistics
import subprocess
import sys
import time

# NumPy's OpenBLAS threads spin after start-up and took 15% of the samples
# on this 2-core machine, beside PoCL's own worker threads; none is needed.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
import numpy as np  # noqa: E402

import tack  # noqa: E402

LAUNCHES = 1000
ROUNDS = 7


@tack.kernel
def bump(x):
    for i in range(x.shape[0]):
        x[i] = x[i] + 1.0


def measure():
    dev = tack.device("opencl")
    x = tack.zeros((64,), device=dev)
    for _ in range(200):  # compiled, and the driver warm
        bump(x)
    tack.synchronize(dev)
    calls, totals = [], []
    for _ in range(ROUNDS):
        t0 = time.perf_counter()
        for _ in range(LAUNCHES):
            bump(x)
        t1 = time.perf_counter()
        tack.synchronize(dev)
        t2 = time.perf_counter()
        calls.append((t1 - t0) / LAUNCHES * 1e6)
        totals.append((t2 - t0) / LAUNCHES * 1e6)
    want = 200 + ROUNDS * LAUNCHES
    assert (x.numpy() == want).all(), "wrong result"
    return statistics.median(calls), statistics.median(totals)


if __name__ == "__main__":
    if os.environ.get("_BENCH_CHILD"):
        print("%.3f %.3f" % measure())
        sys.exit(0)
    env = dict(os.environ, _BENCH_CHILD="1")
    queued = measure()
    out = subprocess.run([sys.executable, __file__], env=dict(env, TACK_LAUNCH_WAIT="1"),
                         check=True, capture_output=True, text=True).stdout.split()
    waited = (float(out[0]), float(out[1]))
    print(f"launch queue opencl: {LAUNCHES} launches of a 64-element kernel, per launch: "
          f"queued {queued[0]:.2f} us/call ({queued[1]:.2f} us with the final synchronize)  "
          f"waited (TACK_LAUNCH_WAIT=1) {waited[0]:.2f} us/call  "
          f"({waited[0] / queued[0]:.1f}x)")
