"""Tack in five minutes: write a kernel as a Python function, call it on Tack
arrays or NumPy arrays, and check the answers against NumPy.

    python examples/quickstart.py
"""
import sys

import numpy as np

import tack

tack.set_default_device("cpu")


# A kernel's body is one outermost `for` loop: its iterations run in parallel.
@tack.kernel
def vector_add(a, b, out):
    for i in range(out.shape[0]):
        out[i] = a[i] + b[i]


# Inner loops run sequentially inside each parallel iteration.
@tack.kernel
def scale_rows(m, factors, out):
    for i in range(m.shape[0]):
        for j in range(m.shape[1]):
            out[i, j] = m[i, j] * factors[i]


failures = 0


def check(label, got, expected):
    global failures
    ok = got.shape == expected.shape and np.array_equal(got, expected)
    print(f"{label:<28} {'ok' if ok else 'MISMATCH'}   {got.ravel()[:4]} ...")
    failures += not ok


n = 1_000_000

# 1. Tack arrays: allocate, fill from NumPy, run, read back.
a = tack.empty((n,))                      # f32 unless dtype= is given
b = tack.empty((n,))
tack.copyto(a, np.arange(n, dtype=np.float32))
tack.copyto(b, np.full(n, 0.5, dtype=np.float32))
out = tack.zeros((n,))
vector_add(a, b, out)                     # the first call compiles
print(f"out: shape={out.shape} dtype={out.dtype} ndim={out.ndim} size={out.size} device={out.device}")
check("vector_add (tack arrays)", out.numpy(), a.numpy() + b.numpy())

# 2. NumPy arrays run directly on the CPU, without copies.
x = np.linspace(0.0, 1.0, n)              # f64: a new variant is compiled
y = np.sqrt(x)
z = np.empty_like(x)
vector_add(x, y, z)
check("vector_add (NumPy f64)", z, x + y)

# 3. A 2-D kernel.
m = np.arange(12, dtype=np.float32).reshape(3, 4)
factors = np.array([1.0, 10.0, 100.0], dtype=np.float32)
scaled = np.zeros_like(m)
scale_rows(m, factors, scaled)
check("scale_rows (2-D)", scaled, m * factors[:, None])
print(scaled)

# Warm calls reuse the compiled variant: lengths alone never recompile.
vector_add(x[:10], y[:10], z[:10])
print("variants of vector_add:", len(vector_add.variants()))

# 4. The same kernel on an OpenCL device, where one is installed: arrays
#    live in the device's memory and the call runs where they are.
try:
    gpu = tack.device("opencl")
except RuntimeError as e:
    print("OpenCL skipped:", e)
else:
    gx = tack.array(x, device=gpu)
    gy = tack.array(y, device=gpu)
    gz = tack.empty(x.shape, dtype=tack.f64, device=gpu)
    vector_add(gx, gy, gz)
    check(f"vector_add on {gpu.name}", gz.numpy(), x + y)
    print("ran on", gpu.description)
print("stats:", tack.stats())

if failures:
    print(f"{failures} check(s) failed")
    sys.exit(1)
print("all checks passed")
