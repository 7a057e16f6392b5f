"""print() on GPU devices goes through a record buffer (issue 26 item 5):
each print reserves a record in a device buffer with one atomic add, and
the host formats the records after the launch with the CPU's formatter
(src/backend/gpu/print_buf.c).  PoCL's printf mixed the text of different
work items inside one line; records come out as whole lines, print the same
text as the CPU, a full buffer says how many lines it dropped, and every
dialect (Metal included, which has no printf) compiles a printing kernel."""
import os
import subprocess

import numpy as np
import pytest

import tack
from test_cuda import check_ptx, needs_nvrtc
from test_print import lines_of, py_float


@tack.kernel
def chatty(x, flags):
    for i in range(x.shape[0]):
        print("item", i, "of a long line with its value", x[i], "flag", flags[i],
              "and the same value once more", x[i], "then the end of item", i, "done")


@tack.kernel
def values(x, y, b, u, s, n):
    for i in range(x.shape[0]):
        print(i, x[i], y[i], b[i], u[i], s[i], -i, n, sep=" | ")


def _chatty_line(i, x, flags):
    v = py_float(x[i], 32)
    return (f"item {i} of a long line with its value {v} flag {bool(flags[i])} "
            f"and the same value once more {v} then the end of item {i} done")


@pytest.mark.every_device
def test_many_long_lines_come_out_whole(capfd, device):
    n = 60000
    x = (np.arange(n, dtype=np.float32) * np.float32(0.37) - 5000).astype(np.float32)
    flags = (np.arange(n) % 3 == 0)
    chatty(x, flags)
    got = lines_of(capfd)
    assert len(got) == n
    want = {_chatty_line(i, x, flags) for i in range(n)}
    assert set(got) == want  # every line whole: none mixed with another's text


@pytest.mark.every_device
def test_values_print_as_on_the_cpu(capfd, device):
    x = np.array([0.0, -0.0, np.nan, -np.nan, np.inf, -np.inf, 0.1, 3.0, 1e9, 16777216.0],
                 np.float32)
    y = np.array([0.0, -0.0, np.nan, -np.nan, np.inf, -np.inf, 0.1, 3.0, 1e17, 2.0**53],
                 np.float64)
    b = np.array([True, False] * 5)
    u = np.array([2**64 - 1, 0, 2**63, 1, 2**32, 7, 8, 9, 10, 11], np.uint64)
    s = np.array([-128, 127, -1, 0, 5, -5, 100, -100, 1, 2], np.int8)
    n = np.int64(-2**63)
    values(x, y, b, u, s, n)
    got = sorted(lines_of(capfd))
    want = sorted(" | ".join([str(i), py_float(x[i], 32), py_float(y[i], 64), str(bool(b[i])),
                              str(int(u[i])), str(int(s[i])), str(-i), str(n)])
                  for i in range(len(x)))
    assert got == want


def test_a_full_buffer_reports_the_dropped_lines(capfd, monkeypatch):
    dev = tack.device("opencl") if _has_opencl() else pytest.skip("no OpenCL device")
    n = 500
    x = np.arange(n, dtype=np.float32)
    flags = np.zeros(n, np.bool_)
    # Room for exactly 100 records: 1 id word + 5 values of 2 words each.
    words = 4 + 100 * 11
    monkeypatch.setenv("TACK_PRINT_BUFFER", str(4 * words))
    xd, fd = tack.array(x, device=dev), tack.array(flags, device=dev)
    chatty(xd, fd)
    out, err = capfd.readouterr()
    lines = out.splitlines()
    assert len(lines) == 100
    assert set(lines) <= {_chatty_line(i, x, flags) for i in range(n)}
    assert "400 lines dropped" in err and "'chatty'" in err, err
    # A buffer large enough again: nothing dropped, nothing said.
    monkeypatch.delenv("TACK_PRINT_BUFFER")
    chatty(xd, fd)
    out, err = capfd.readouterr()
    assert len(out.splitlines()) == n and "dropped" not in err


def _has_opencl():
    try:
        tack.device("opencl")
        return True
    except (RuntimeError, ValueError):
        return False


def test_kernels_without_print_take_no_print_buffer():
    x = np.zeros(4, np.float32)
    src = tack.opencl.source(tack.kernel(_plain), x)
    assert "tk_print" not in src
    src = tack.opencl.source(values, x, x.astype(np.float64), np.zeros(4, np.bool_),
                             np.zeros(4, np.uint64), np.zeros(4, np.int8), 1)
    assert "tk_print_at(tk_print, 17u)" in src and "printf" not in src


def _plain(x):
    for i in range(x.shape[0]):
        x[i] = x[i] + 1


ARGS32 = (np.zeros(64, np.float32), np.zeros(64, np.bool_))


@needs_nvrtc
def test_cuda_ptx_of_a_printing_kernel_passes_ptxas():
    check_ptx(chatty, *ARGS32)
    ptx = tack.cuda.compile(chatty, *ARGS32, arch="sm_80")
    assert "vprintf" not in ptx and "atom.global.add.u32" in ptx


def _hip_child():
    """In a child process (hipRTC's LLVM and PoCL's abort together, see
    test_gpu_dialects.py): prints "missing: why", or the code object's check."""
    import json
    try:
        obj = tack.hip.compile(chatty, *ARGS32, arch="gfx90a")
    except RuntimeError as e:
        print(json.dumps({"missing": str(e)}))
        return
    print(json.dumps({"missing": None,
                      "ok": obj[:4] == b"\x7fELF" and b"tack_chatty\0" in obj}))


def test_hip_code_object_of_a_printing_kernel():
    import json
    import sys
    here = os.path.dirname(os.path.abspath(__file__))
    code = (f"import sys; sys.path.insert(0, {here!r}); import test_print_gpu_buffer as t; "
            "t._hip_child()")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    got = json.loads(r.stdout.strip().splitlines()[-1])
    if got["missing"]:
        pytest.skip(f"hipRTC absent: {got['missing']}")
    assert got["ok"]


def test_level_zero_spirv_of_a_printing_kernel(tmp_path):
    try:
        spv = tack.level_zero.spirv(chatty, *ARGS32)
    except RuntimeError as e:
        pytest.skip(f"ocloc absent: {e}")
    path = tmp_path / "p.spv"
    path.write_bytes(spv)
    r = subprocess.run(["spirv-val", str(path)], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr


def test_metal_compiles_a_printing_kernel(tmp_path):
    from test_gpu_dialects import METAL_HEADER, _clang
    src = tack.metal.source(chatty, *ARGS32)
    assert "device uint *tk_print [[buffer(3)]]" in src, src
    clang = _clang()
    if not clang:
        pytest.skip("no clang++ to check the MSL as C++")
    unit = tmp_path / "p.metal.cpp"
    unit.write_text(src)
    r = subprocess.run([clang, "--target=arm64-apple-macos13", "-std=c++17", "-fsyntax-only",
                        "-Wno-unknown-attributes", "-I", METAL_HEADER, "-x", "c++", str(unit)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-3000:]
