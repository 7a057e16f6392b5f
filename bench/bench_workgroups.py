"""Workgroup kernels on the CPU against the same algorithm without
workgroups (issue 27, item 7): prints each time and the ratio
workgroup / plain (below 1 means the workgroup form is faster)."""
import sys
import time
from pathlib import Path

import numpy as np

import tack

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "python"))
from test_workgroups import block_sum, tiled_matmul  # noqa: E402

TILE = 16


@tack.kernel
def plain_block_sum(x, out):
    for g in range(out.shape[0]):
        s = 0.0
        for k in range(256):
            s += x[g * 256 + k]
        out[g] = s


@tack.kernel
def plain_tiled_matmul(a, b, c, n):
    # The same 16x16 tiling, one tile of c per iteration, no shared memory.
    for t in range((n // TILE) * (n // TILE)):
        r0 = (t // (n // TILE)) * TILE
        c0 = (t % (n // TILE)) * TILE
        for ty in range(TILE):
            for tx in range(TILE):
                acc = 0.0
                for k in range(n):
                    acc += a[r0 + ty, k] * b[k, c0 + tx]
                c[r0 + ty, c0 + tx] = acc


def best(f, reps=5):
    f()
    t = []
    for _ in range(reps):
        t0 = time.perf_counter()
        f()
        t.append(time.perf_counter() - t0)
    return min(t)


def main():
    x = np.random.default_rng(0).random(256 * 4096).astype(np.float32)
    out = np.zeros(4096, np.float32)
    wg = best(lambda: block_sum(x, out))
    plain = best(lambda: plain_block_sum(x, out))
    print(f"block reduction n={x.size}: workgroups {wg*1e3:.3f} ms, plain {plain*1e3:.3f} ms, "
          f"ratio {wg/plain:.2f}")
    n = 256
    a, b = np.random.default_rng(1).random((n, n)), np.random.default_rng(2).random((n, n))
    c = np.zeros((n, n))
    wg = best(lambda: tiled_matmul(a, b, c, n))
    plain = best(lambda: plain_tiled_matmul(a, b, c, n))
    print(f"tiled matmul n={n}: workgroups {wg*1e3:.3f} ms, plain {plain*1e3:.3f} ms, "
          f"ratio {wg/plain:.2f}")


if __name__ == "__main__":
    main()
