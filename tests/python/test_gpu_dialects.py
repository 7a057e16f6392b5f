"""One conformance suite for the GPU dialects without their GPUs: every
kernel test_cuda.py compiles (every dtype, conversions, math, f16, control
flow and device functions, vectors, ndindex, atomics of every op and dtype,
template classes, textures, debug mode) also becomes, for each other
dialect, what its vendor's offline compiler accepts:

- HIP: an AMDGPU code object from hipRTC for gfx90a and for gfx1030 (an ELF
  for that ISA holding the kernel's symbol);

Each dialect's check runs over the whole list in one test and names every
kernel it refused, so the cost is one pass of its compiler per kernel.
Skipped, saying so, where the compiler is absent.

hipRTC runs in a child process: ROCm 5's code object manager (LLVM 15) and
PoCL (LLVM 14) abort on LLVM's duplicate command-line options once both
have compiled in one process, and the rest of the suite runs on PoCL."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

import tack
from test_cuda import (ALL, INTS, Field, Pair, arith, atomics_float, atomics_int, compare,
                       convert, farith, fill2, fill3, gather, half_round, histogram, ivec,
                       np_of, sample_points, scale, shade, stencil, steps, transcendental,
                       use_field, use_pair)


def _cases():
    """(label, kernel, args, debug) for every kernel kind."""
    z = np.zeros
    out = []
    for t in INTS:
        a = z(64, np_of(t))
        out.append((f"arith_{t}", arith, (a, a, a.copy()), False))
        out.append((f"atomics_{t}", atomics_int,
                    (z(8, np_of(t)), z(16, np.int32), z(16, np_of(t)), z((16, 9), np_of(t))), False))
    for t in ("f32", "f64"):
        a = z(64, np_of(t))
        out.append((f"farith_{t}", farith, (a, a, a.copy(), 1.5), False))
        out.append((f"math_{t}", transcendental, (a, a.copy()), False))
        out.append((f"atomics_{t}", atomics_float,
                    (z(8, np_of(t)), z(16, np.int32), z(16, np_of(t)), z((16, 6), np_of(t))), False))
        tex = tack.Texture3D(z((4, 5, 6), np_of(t)))
        out.append((f"texture_{t}", sample_points, (tex, z((10, 3), np_of(t)), z(10, np_of(t))),
                    False))
    for t in ALL:
        out.append((f"compare_{t}", compare, (z(16, np_of(t)), z(16, np_of(t)), z(16, np.bool_)),
                    False))
    for src in ALL:
        for dst in ("bool", "i8", "u16", "i64", "u64", "f32", "f64"):
            out.append((f"convert_{src}_{dst}", convert, (z(8, np_of(src)), z(8, np_of(dst))),
                        False))
    for other in ALL:
        out.append((f"convert_f16_{other}", convert, (z(8, np.float16), z(8, np_of(other))), False))
        out.append((f"convert_{other}_f16", convert, (z(8, np_of(other)), z(8, np.float16)), False))
    h = z(64, np.float16)
    out.append(("farith_f16", farith, (h, h, h.copy(), 1.5), False))
    for src in (np.float32, np.float64):
        out.append((f"half_round_{src.__name__}", half_round, (z(8, src), z(8, np.float16)), False))
    out.append(("steps", steps, (z(100, np.int64), 90, 2, -3, True), False))
    out.append(("steps_i64", steps, (z(100, np.int64), 1 << 40, 2, 7, False), False))
    for vt in ("vec2f", "vec3f", "vec4f", "vec2d", "vec3d", "vec4d"):
        dt = getattr(tack, vt)
        s = np.float64 if vt.endswith("d") else np.float32
        out.append((f"shade_{vt}", shade, (tack.zeros((32,), dtype=dt), tack.zeros((32,), dtype=dt),
                                           tack.zeros((1,), dtype=dt), z(32, s),
                                           tack.zeros((32,), dtype=dt)), False))
    out.append(("ivec", ivec, (tack.zeros((8,), dtype=tack.vec3i),
                               tack.zeros((8,), dtype=tack.vec3i)), False))
    out.append(("fill2", fill2, (z((13, 11), np.int32), 7), False))
    out.append(("fill3", fill3, (z((5, 7, 9), np.int64),), False))
    out.append(("stencil", stencil, (z((64, 64), np.float32), z((64, 64), np.float32)), False))
    for t in ("i32", "u64", "f32", "f64"):
        out.append((f"histogram_{t}", histogram, (z(100, np.int64), z((10, 1), np_of(t))), False))
    for t in ("f32", "f64", "i32"):
        d = np_of(t)
        f = Field(z(16, d), 1)
        out.append((f"field_{t}", use_field, (f, z(16, d)), False))
        out.append((f"pair_{t}", use_pair, (Pair(f, Field(z(16, d), 2.5)), z(16, np.float64)),
                    False))
    g = (z(10, np.float32), z(5, np.int32), z(5, np.float32))
    out.append(("gather", gather, g, False))
    out.append(("gather_debug", gather, g, True))
    out.append(("arith_debug", arith, (z(4, np.int16),) * 3, True))
    out.append(("fill3_debug", fill3, (z((2, 3, 4), np.int64),), True))
    out.append(("scale", scale, (z(16, np.float32), z(16, np.float32), 2.0), False))
    return out


CASES = _cases()


def _generate(fn, kernel, args, debug):
    tack.set_debug(debug)
    try:
        return fn(kernel, *args)
    finally:
        tack.set_debug(False)


# ---- HIP ------------------------------------------------------------------------

# e_flags' low byte: the ISA (EF_AMDGPU_MACH_AMDGCN_*).
AMDGPU_MACH = {"gfx90a": 0x3F, "gfx1030": 0x36}


def _hip_batch(arch):
    """In the child: every case as a code object for arch; prints a JSON
    {"missing": why or None, "refused": [...]}."""
    x = np.zeros(4, np.float32)
    try:
        tack.hip.compile(scale, x, x, 2.0, arch=arch)
    except RuntimeError as e:
        print(json.dumps({"missing": str(e), "refused": []}))
        return
    refused = []
    for label, kernel, args, debug in CASES:
        try:
            obj = _generate(lambda k, *a: tack.hip.compile(k, *a, arch=arch), kernel, args, debug)
        except (RuntimeError, tack.CompileError) as e:
            refused.append(f"{label}: {e}")
            continue
        symbol = b"tack_" + kernel.__name__.encode() + b"\0"
        if not (isinstance(obj, bytes) and obj[:4] == b"\x7fELF" and obj[4] == 2
                and int.from_bytes(obj[18:20], "little") == 224 and obj[48] == AMDGPU_MACH[arch]
                and symbol in obj):
            refused.append(f"{label}: not an AMDGPU code object for {arch}")
    print(json.dumps({"missing": None, "refused": refused}))


def _in_child(fn, *args):
    here = os.path.dirname(os.path.abspath(__file__))
    code = (f"import sys; sys.path.insert(0, {here!r}); import test_gpu_dialects as t; "
            f"t.{fn}(*{args!r})")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, f"{fn}{args} failed:\n{r.stdout}\n{r.stderr}"
    return json.loads(r.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("arch", sorted(AMDGPU_MACH))
def test_hip_code_objects_for_every_kernel(arch):
    r = _in_child("_hip_batch", arch)
    if r["missing"]:
        pytest.skip(f"hipRTC absent: {r['missing']}")
    assert not r["refused"], f"{len(r['refused'])} of {len(CASES)} kernels refused for {arch}:\n" + \
        "\n".join(r["refused"])


def test_hip_source_for_every_kernel():
    for label, kernel, args, debug in CASES:
        src = _generate(tack.hip.source, kernel, args, debug)
        assert f'extern "C" __global__ void tack_{kernel.__name__}(' in src, label
        # No PTX, no CUDA-only rounding intrinsics, no restrict variant.
        assert "asm(" not in src and "__fadd_rn" not in src and "__restrict__" not in src, label


def test_hip_refusals():
    x = np.zeros(16, np.float32)
    with pytest.raises(ValueError, match="'sm_90' is not an AMD GPU architecture"):
        tack.hip.compile(scale, x, x, 2.0, arch="sm_90")
    with pytest.raises(TypeError, match="takes 3 arguments"):
        tack.hip.compile(scale, x, x)
    with pytest.raises(ValueError, match="binary code, which is not text"):
        tack._tack._generate(scale, "hip:gfx90a", (x, x, 2.0))
    # An ISA ROCm does not know is refused before hipRTC runs (test_hip.c
    # checks the message where hipRTC is installed).


def test_hip_device_without_runtime_or_gpu_is_named():
    try:
        dev = tack.device("hip")
    except RuntimeError as e:
        assert "HIP" in str(e)
    else:  # pragma: no cover - an AMD GPU is present
        assert "HIP" in dev.description
