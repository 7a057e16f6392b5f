"""Twenty new kernels on OpenCL: Tack's first calls beside PyOpenCL building
and running the same OpenCL C, on the first OpenCL device (PoCL here):

    .venv/bin/python bench/bench_opencl_compile.py

Each figure is one fresh process timing its 20 first calls (compile and one
launch each, on 1000-element f32 device arrays); the kernels get new
constants every run, and every cache is off (TACK_CACHE=off,
POCL_KERNEL_CACHE=0, PYOPENCL_NO_CACHE=1) except the one a line is about:

  tack cold        TACK_CACHE=off
  tack writing     TACK_CACHE=write into an empty directory: the calls, and
                   the process's whole run to exit (the program binaries
                   are fetched on Tack's writer thread and written by exit)
  tack warm        a second process reading what `writing` stored
  tack batch cold  tack.precompile of the 20 calls first (one OpenCL
                   program for all), then the 20 calls; TACK_CACHE=off
  tack batch writing  the same, TACK_CACHE=write into an empty directory
  tack batch warm  a second process calling one at a time, reading what
                   `batch writing` stored
  pyopencl 1 prog  the same 20 kernels' OpenCL C (Tack's, from
                   inspect_llvm) in one program: one build, 20 launches
  pyopencl 20 prog one program per kernel, as Tack builds them

PoCL pays a fixed cost per program build (it parses its whole OpenCL C
header each time), so `1 prog` is the floor a per-kernel compiler cannot
reach; targets: tack cold within 1.5x of it, tack writing within 2x.  The
batch lines are the way to build many kernels as one program, as `1 prog`
does: their ratios are against it.
Configurations run in turn, 3 rounds, each keeping its best (the machine is
shared).  Ratios are tack/peer (below 1.00x: Tack is faster).
"""
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import Report  # noqa: E402

N = 20
R = Report()

# The kernels: distinct sources (a new constant per kernel and run), the
# shape of a small elementwise kernel with a gather.
KERNELS = """
import tack
{defs}
"""
DEF = """
@tack.kernel
def k{k}(x, out, a):
    for i in range(x.shape[0]):
        out[i] = x[i] * a + {c} * x[(i + {k}) % x.shape[0]]
"""

TACK_RUN = """
import json, os, sys, time
import numpy as np
t0 = time.perf_counter()
import tack
sys.path.insert(0, {dir!r})
import kernels
dev = tack.device("opencl")
x = tack.array(np.arange(1000, dtype=np.float32), device=dev)
out = tack.zeros((1000,), device=dev)
xh = np.arange(1000, dtype=np.float32)
t = time.perf_counter()
if {batch}:
    tack.precompile([(getattr(kernels, f"k{{k}}"), (x, out, 2.0)) for k in range({n})],
                    device=dev)
for k in range({n}):
    getattr(kernels, f"k{{k}}")(x, out, 2.0)
tack.synchronize(dev)  # the last launches are only queued
calls = time.perf_counter() - t
c = {consts}[k]
want = xh * np.float32(2.0) + np.float32(c) * np.roll(xh, -k)
ok = bool(np.array_equal(out.numpy(), want))
s = tack.stats()
print(json.dumps({{"calls": calls, "ok": ok, "compiles": s["compiles"],
                  "binary_loads": s["driver_binary_loads"], "disk_hits": s["disk_hits"],
                  "programs": s["driver_program_builds"]}}))
"""

SOURCES = """
import json, sys
import numpy as np
import tack
sys.path.insert(0, {dir!r})
import kernels
dev = tack.device("opencl")
x = tack.array(np.arange(1000, dtype=np.float32), device=dev)
out = tack.zeros((1000,), device=dev)
print(json.dumps([getattr(kernels, f"k{{k}}").inspect_llvm(x, out, 2.0, device=dev)
                  for k in range({n})]))
"""

PYOPENCL_RUN = """
import json, re, sys, time
import numpy as np
import pyopencl as cl
srcs = json.load(open({srcs!r}))
one = {one}
ctx = cl.Context([cl.get_platforms()[0].get_devices()[0]])
q = cl.CommandQueue(ctx)
mf = cl.mem_flags
xh = np.arange(1000, dtype=np.float32)
xb = cl.Buffer(ctx, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=xh)
ob = cl.Buffer(ctx, mf.READ_WRITE, xh.nbytes)
names = [re.search(r"__kernel void (\\w+)\\(", s).group(1) for s in srcs]
opts = "-cl-std=CL1.2 -cl-fp32-correctly-rounded-divide-sqrt"
t = time.perf_counter()
if one:
    # Each source's helpers renamed, so that they can share one program.
    prg = cl.Program(ctx, "\\n".join(re.sub(r"\\btk_", f"tk{{k}}_", s)
                                      for k, s in enumerate(srcs))).build(options=opts)
    progs = [prg] * len(srcs)
for k, name in enumerate(names):
    p = progs[k] if one else cl.Program(ctx, srcs[k]).build(options=opts)
    # Tack's pack: start, step, count, two inner extents, then a word per
    # parameter (x, out, a): a's bits in the last.
    pack = np.zeros(8, np.int64)
    pack[:5] = (0, 1, 1000, 1, 1)
    pack[7] = np.float32(2.0).view(np.uint32)
    getattr(p, name)(q, (1024,), None, pack, xb, ob)
    q.finish()
calls = time.perf_counter() - t
print(json.dumps({{"calls": calls}}))
"""


def run(code, env):
    t = time.perf_counter()
    p = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                       timeout=600)
    wall = time.perf_counter() - t
    if p.returncode != 0:
        raise RuntimeError(p.stderr.strip()[-800:])
    r = json.loads(p.stdout.strip().splitlines()[-1])
    r["wall"] = wall
    return r


def main():
    t0 = time.perf_counter()
    base = dict(os.environ, POCL_KERNEL_CACHE="0", PYOPENCL_NO_CACHE="1", TACK_CACHE="off")
    base.pop("TACK_CACHE_DIR", None)
    probe = subprocess.run([sys.executable, "-c", "import tack; print(tack.device('opencl'))"],
                           env=base, capture_output=True, text=True)
    if probe.returncode != 0:
        print("bench_opencl_compile: skipped, no OpenCL device "
              f"({probe.stderr.strip().splitlines()[-1] if probe.stderr.strip() else '?'})")
        return
    try:
        import pyopencl  # noqa: F401
        cl_why = None
    except Exception as e:
        cl_why = f"{type(e).__name__}: {e}".splitlines()[0][:120]
    print(f"{N} new kernels on OpenCL, first calls (compile + one launch each); "
          f"{os.cpu_count()} cpus; pyopencl {'skipped: ' + cl_why if cl_why else 'present'}")

    best = {}
    checks = []
    batch_checks = []
    work = tempfile.mkdtemp(prefix="tack_bench_oclc_")
    try:
        for rnd in range(int(os.environ.get("BENCH_ROUNDS", "3"))):
            # New kernels for this round: nothing any cache holds.
            d = os.path.join(work, f"r{rnd}")
            os.makedirs(d)
            consts = [round(random.uniform(1, 2), 6) for _ in range(N)]
            with open(os.path.join(d, "kernels.py"), "w") as f:
                f.write(KERNELS.format(defs="".join(DEF.format(k=k, c=consts[k])
                                                    for k in range(N))))
            code = TACK_RUN.format(dir=d, n=N, consts=consts, batch=False)
            res = {}
            res["tack cold"] = run(code, base)
            cache = os.path.join(d, "cache")
            wenv = dict(base, TACK_CACHE="write", TACK_CACHE_DIR=cache)
            res["tack writing"] = run(code, wenv)
            res["tack warm"] = run(code, wenv)
            checks.append(res["tack warm"])
            # The batch in kernels of its own (a new module: new sources).
            bd = os.path.join(d, "batch")
            os.makedirs(bd)
            shutil.copy(os.path.join(d, "kernels.py"), bd)
            bcode = TACK_RUN.format(dir=bd, n=N, consts=consts, batch=True)
            res["tack batch cold"] = run(bcode, base)
            benv = dict(base, TACK_CACHE="write", TACK_CACHE_DIR=os.path.join(bd, "cache"))
            res["tack batch writing"] = run(bcode, benv)
            res["tack batch warm"] = run(TACK_RUN.format(dir=bd, n=N, consts=consts, batch=False),
                                         benv)
            batch_checks.append((res["tack batch cold"], res["tack batch warm"]))
            for r in res.values():
                if not r["ok"]:
                    print("tack gave wrong results")
            if cl_why is None:
                srcs = os.path.join(d, "srcs.json")
                p = subprocess.run([sys.executable, "-c", SOURCES.format(dir=d, n=N)], env=base,
                                   capture_output=True, text=True, check=True)
                with open(srcs, "w") as f:
                    f.write(p.stdout.strip().splitlines()[-1])
                res["pyopencl 1 prog"] = run(PYOPENCL_RUN.format(srcs=srcs, one=True), base)
                res["pyopencl 20 prog"] = run(PYOPENCL_RUN.format(srcs=srcs, one=False), base)
            for name, r in res.items():
                for f in ("calls", "wall"):
                    key = (name, f)
                    best[key] = min(best.get(key, float("inf")), r[f] * 1e6)
    finally:
        shutil.rmtree(work, ignore_errors=True)

    def peers(field):
        return [(p, best.get((p, field)), cl_why)
                for p in ("pyopencl 1 prog", "pyopencl 20 prog")]

    floor = best.get(("pyopencl 1 prog", "calls"))
    cold = best[("tack cold", "calls")]
    R.line(f"opencl {N} new kernels cold", cold, peers("calls"), "<= 1.5x pyopencl 1 prog",
           floor is not None and cold <= 1.5 * floor, note="[TACK_CACHE=off]")
    wr = best[("tack writing", "calls")]
    R.line(f"opencl {N} new kernels writing", wr, peers("calls"), "<= 2x pyopencl 1 prog",
           floor is not None and wr <= 2 * floor, note="[TACK_CACHE=write, empty directory]")
    R.line(f"opencl {N} kernels writing, process", best[("tack writing", "wall")],
           [("tack cold process", best[("tack cold", "wall")], None)],
           note="[whole process to exit, binaries written]")
    w = checks[-1]
    R.line(f"opencl {N} kernels warm (disk)", best[("tack warm", "calls")],
           [("tack cold", cold, None)],
           note=f"[{w['disk_hits']} disk hits, {w['binary_loads']} binary loads, "
                f"{w['compiles']} compiles]")
    bc = best[("tack batch cold", "calls")]
    one = [("pyopencl 1 prog", floor, cl_why)]
    R.line(f"opencl {N} new kernels batch cold", bc, one, "<= 1.5x pyopencl 1 prog",
           floor is not None and bc <= 1.5 * floor,
           note=f"[tack.precompile then the calls, TACK_CACHE=off; "
                f"{batch_checks[-1][0]['programs']} program builds]")
    bw = best[("tack batch writing", "calls")]
    R.line(f"opencl {N} new kernels batch writing", bw, one, "<= 2x pyopencl 1 prog",
           floor is not None and bw <= 2 * floor, note="[TACK_CACHE=write, empty directory]")
    R.line(f"opencl {N} kernels batch writing, process", best[("tack batch writing", "wall")],
           [("tack batch cold process", best[("tack batch cold", "wall")], None)],
           note="[whole process to exit, binaries written]")
    bwarm = batch_checks[-1][1]
    R.line(f"opencl {N} kernels batch warm (disk), single calls",
           best[("tack batch warm", "calls")], [("tack batch cold", bc, None)],
           note=f"[{bwarm['disk_hits']} disk hits, {bwarm['binary_loads']} binary loads, "
                f"{bwarm['compiles']} compiles]")
    R.summary()
    print(f"bench_opencl_compile took {time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
