"""CPU atomics and augmented updates beside Numba (issue 20, item 3).

A 256-bin histogram of 2^22 values, written three ways in Tack
(`tack.atomic_add`, `grid[k] += 1.0`, and on one thread) against Numba's
plain serial loop, and a sum into one element (`acc[0] += x[i]`) against
Numba's serial reduction.  Ratios are Tack/Numba times: below 1 is faster.
Targets: histogram within 1.5x of Numba's serial one, and faster than it
with 2 threads.
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import Report, best_s, import_numba, interleaved  # noqa: E402

import tack  # noqa: E402

N = 1 << 22
BINS = 256


@tack.kernel
def hist_atomic(keys, grid):
    for i in range(keys.shape[0]):
        tack.atomic_add(grid, keys[i], 1.0)


@tack.kernel
def hist_update(keys, grid):
    for i in range(keys.shape[0]):
        grid[keys[i]] += 1.0


@tack.kernel
def hist_int(keys, grid):
    for i in range(keys.shape[0]):
        grid[keys[i]] += 1


@tack.kernel
def total(x, acc):
    for i in range(x.shape[0]):
        acc[0] += x[i]


def main():
    rep = Report()
    keys = np.random.default_rng(0).integers(0, BINS, N).astype(np.int32)
    x = np.random.default_rng(1).random(N)
    grid = np.zeros(BINS)
    igrid = np.zeros(BINS, np.int64)
    acc = np.zeros(1)
    expect = np.bincount(keys, minlength=BINS)

    numba, why = import_numba()
    nb_hist = nb_sum = None
    if numba:
        @numba.njit
        def nb_hist_fn(keys, grid):
            for i in range(keys.shape[0]):
                grid[keys[i]] += 1.0

        @numba.njit
        def nb_sum_fn(x):
            s = 0.0
            for i in range(x.shape[0]):
                s += x[i]
            return s

        nb_hist = lambda: best_s(lambda: (grid.fill(0), nb_hist_fn(keys, grid)))  # noqa: E731
        nb_sum = lambda: best_s(nb_sum_fn, x)  # noqa: E731

    one = tack.device("cpu", num_threads=1)

    def run(kernel, out):
        def go():
            out.fill(0)
            kernel(keys, out)
        return best_s(go)

    def on_one(kernel, out):
        def go():
            out.fill(0)
            tack.set_default_device(one)
            try:
                kernel(keys, out)
            finally:
                tack.set_default_device("cpu")
        return best_s(go)

    measures = {
        "atomic": lambda: run(hist_atomic, grid),
        "update": lambda: run(hist_update, grid),
        "int": lambda: run(hist_int, igrid),
        "one": lambda: on_one(hist_update, grid),
        "sum": lambda: best_s(lambda: (acc.fill(0), total(x, acc))),
        "nb_hist": nb_hist,
        "nb_sum": nb_sum,
    }
    best = interleaved(measures)
    hist_update(keys, grid := np.zeros(BINS))
    assert np.array_equal(grid, expect)
    us = {k: v * 1e6 for k, v in best.items()}
    peer = lambda k: [("numba serial", us.get(k), why)]  # noqa: E731
    ok = lambda k, r: k in us and "nb_hist" in us and us[k] <= r * us["nb_hist"]  # noqa: E731
    rep.line("histogram tack.atomic_add", us["atomic"], peer("nb_hist"), "<= 1.0x",
             ok("atomic", 1.0))
    rep.line("histogram grid[k] += 1.0", us["update"], peer("nb_hist"), "<= 1.0x",
             ok("update", 1.0))
    rep.line("histogram i64 grid[k] += 1", us["int"], peer("nb_hist"))
    rep.line("histogram, 1 thread", us["one"], peer("nb_hist"), "<= 1.5x", ok("one", 1.5))
    rep.line("sum acc[0] += x[i]", us["sum"], [("numba serial", us.get("nb_sum"), why)])
    rep.summary()


if __name__ == "__main__":
    main()
