"""The performance suite of issue 7: every figure for Tack beside Numba
(`njit` and `njit(parallel=True)` with prange) and C (gcc -O3 -march=native
-fopenmp -ffp-contract=off, built at run time in the temp directory, run
with OMP_NUM_THREADS=2), in one run, with each target marked ok or MISSED.

    .venv/bin/python bench/suite.py

Each line is one figure: Tack's value, then each peer's value and the ratio
Tack/peer (for times below 1.00x means Tack is faster; for GB/s above 1.00x
means Tack is faster).  Numba and C are skipped, with the reason, when
Numba does not import or gcc is missing.  Takes about half a minute.

Figures:
  1. warm dispatch of scale(x, out, 2.0), two length-8 f32 arrays
     (NumPy arrays, then tack.Array arguments)
  2. warm dispatch with eight length-8 array arguments
  3. a parallel launch of 2^16 elements on 2 threads, and its cost above
     its arithmetic (the 1-thread time / 2)
  4. triad a[i] = b[i] + s*c[i], 2^25 f64, GB/s
  5. Mandelbrot 2048x2048, escape 256, f32
  6. n-body step, 4096 bodies, f32
  7. cold compile and `import tack` (in fresh subprocesses)
"""
import json
import math
import os
import subprocess
import sys
import tempfile
import time

# The disk cache would turn the cold-compile figures into cache loads.
os.environ.setdefault("TACK_CACHE", "off")

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import (CProgram, Report, best_s, fmt_us, import_numba,  # noqa: E402
                     interleaved, per_call_us)

import tack  # noqa: E402

numba, NUMBA_WHY = import_numba()
R = Report()

# ===========================================================================
# Kernels.  The Tack, Numba and C versions of each benchmark do the same
# arithmetic in the same order and the same types, so results agree.
# ===========================================================================


@tack.kernel
def scale(x, out, a):
    for i in range(x.shape[0]):
        out[i] = x[i] * a


@tack.kernel
def sum8(a, b, c, d, e, f, g, out):
    for i in range(out.shape[0]):
        out[i] = a[i] + b[i] + c[i] + d[i] + e[i] + f[i] + g[i]


@tack.kernel
def triad(a, b, c, s):
    for i in range(a.shape[0]):
        a[i] = b[i] + s * c[i]


MAXIT = 256  # a module constant: inlined into the kernels


@tack.kernel
def mandel_ndindex(out, xmin, ymin, dx, dy):
    """One pixel per iteration of a 2-D launch."""
    for i, j in tack.ndindex(out.shape[0], out.shape[1]):
        x0 = xmin + tack.f32(j) * dx
        y0 = ymin + tack.f32(i) * dy
        zr = 0.0
        zi = 0.0
        k = 0
        while k < MAXIT and zr * zr + zi * zi <= 4.0:
            t = zr * zr - zi * zi + x0
            zi = 2.0 * zr * zi + y0
            zr = t
            k += 1
        out[i, j] = k


@tack.kernel
def mandel_rows(out, xmin, ymin, dx, dy):
    """One row per iteration of the launch, columns in an inner loop."""
    for i in range(out.shape[0]):
        y0 = ymin + tack.f32(i) * dy
        for j in range(out.shape[1]):
            x0 = xmin + tack.f32(j) * dx
            zr = 0.0
            zi = 0.0
            k = 0
            while k < MAXIT and zr * zr + zi * zi <= 4.0:
                t = zr * zr - zi * zi + x0
                zi = 2.0 * zr * zi + y0
                zr = t
                k += 1
            out[i, j] = k


EPS2 = 1e-4  # softening 1e-2, squared


@tack.kernel
def nbody_step(pos, vel, mass, new_pos, new_vel, dt):
    for i in range(pos.shape[0]):
        xi = pos[i, 0]
        yi = pos[i, 1]
        zi = pos[i, 2]
        ax = 0.0
        ay = 0.0
        az = 0.0
        for j in range(pos.shape[0]):
            dx = pos[j, 0] - xi
            dy = pos[j, 1] - yi
            dz = pos[j, 2] - zi
            r2 = dx * dx + dy * dy + dz * dz + EPS2
            inv_r = 1.0 / math.sqrt(r2)
            s = mass[j] * inv_r * inv_r * inv_r
            ax += dx * s
            ay += dy * s
            az += dz * s
        vx = vel[i, 0] + ax * dt
        vy = vel[i, 1] + ay * dt
        vz = vel[i, 2] + az * dt
        new_vel[i, 0] = vx
        new_vel[i, 1] = vy
        new_vel[i, 2] = vz
        new_pos[i, 0] = xi + vx * dt
        new_pos[i, 1] = yi + vy * dt
        new_pos[i, 2] = zi + vz * dt


def numba_kernels():
    """The Numba versions, or None.  Float constants are np.float32 so the
    arithmetic stays in f32 as in Tack and C (a bare 2.0 would be f64)."""
    if numba is None:
        return None
    njit, prange = numba.njit, numba.prange
    f32 = np.float32
    F0, F2, F4, FEPS2, F1 = f32(0.0), f32(2.0), f32(4.0), f32(EPS2), f32(1.0)

    def scale_(x, out, a):
        for i in prange(x.shape[0]):
            out[i] = x[i] * a

    def sum8_(a, b, c, d, e, f, g, out):
        for i in prange(out.shape[0]):
            out[i] = a[i] + b[i] + c[i] + d[i] + e[i] + f[i] + g[i]

    def triad_(a, b, c, s):
        for i in prange(a.shape[0]):
            a[i] = b[i] + s * c[i]

    def mandel_(out, xmin, ymin, dx, dy):
        for i in prange(out.shape[0]):
            y0 = ymin + f32(i) * dy
            for j in range(out.shape[1]):
                x0 = xmin + f32(j) * dx
                zr = F0
                zi = F0
                k = 0
                while k < MAXIT and zr * zr + zi * zi <= F4:
                    t = zr * zr - zi * zi + x0
                    zi = F2 * zr * zi + y0
                    zr = t
                    k += 1
                out[i, j] = k

    def nbody_(pos, vel, mass, new_pos, new_vel, dt):
        for i in prange(pos.shape[0]):
            xi = pos[i, 0]
            yi = pos[i, 1]
            zi = pos[i, 2]
            ax = F0
            ay = F0
            az = F0
            for j in range(pos.shape[0]):
                dx = pos[j, 0] - xi
                dy = pos[j, 1] - yi
                dz = pos[j, 2] - zi
                r2 = dx * dx + dy * dy + dz * dz + FEPS2
                inv_r = F1 / np.sqrt(r2)
                s = mass[j] * inv_r * inv_r * inv_r
                ax += dx * s
                ay += dy * s
                az += dz * s
            vx = vel[i, 0] + ax * dt
            vy = vel[i, 1] + ay * dt
            vz = vel[i, 2] + az * dt
            new_vel[i, 0] = vx
            new_vel[i, 1] = vy
            new_vel[i, 2] = vz
            new_pos[i, 0] = xi + vx * dt
            new_pos[i, 1] = yi + vy * dt
            new_pos[i, 2] = zi + vz * dt

    fns = {"scale": scale_, "sum8": sum8_, "triad": triad_,
           "mandel": mandel_, "nbody": nbody_}
    # prange is range under plain njit, so one source serves both.
    return {name: (njit(fn), njit(parallel=True)(fn)) for name, fn in fns.items()}


NB = numba_kernels()


def peer_times(name, measure, *args):
    """[("njit", t, why), ("njit-par", t, why)] for Numba kernel `name`,
    each timed by measure(fn, *args)."""
    if NB is None:
        return [("njit", None, NUMBA_WHY), ("njit-par", None, NUMBA_WHY)]
    serial, par = NB[name]
    return [("njit", measure(serial, *args), None), ("njit-par", measure(par, *args), None)]


def tack_array(a):
    """A tack.Array copy of the NumPy array a."""
    t = tack.empty(a.shape, a.dtype)
    tack.copyto(t, a)
    return t


def fast_hits():
    return tack.stats().get("fast_path_hits", 0)


# ===========================================================================
# 1, 2. Warm dispatch
# ===========================================================================

def bench_dispatch():
    x8 = np.arange(8, dtype=np.float32)
    o8 = np.zeros(8, dtype=np.float32)
    peers = peer_times("scale", per_call_us, x8, o8.copy(), 2.0)
    npar = peers[1][1]

    h0 = fast_hits()
    t_np = per_call_us(scale, x8, o8, 2.0)
    h_np = fast_hits() - h0
    R.line("dispatch scale len8 numpy-args", t_np, peers,
           "<= 0.5 us and <= njit-par", t_np <= 0.5 and (npar is None or t_np <= npar),
           note=f"[fast-path hits {h_np}]")

    xa, oa = tack_array(x8), tack_array(o8)
    h0 = fast_hits()
    t_ta = per_call_us(scale, xa, oa, 2.0)
    h_ta = fast_hits() - h0
    # The issue asks tack.Array arguments to be "the same or better" than NumPy's.
    R.line("dispatch scale len8 tack.Array-args", t_ta,
           peers + [("tack-numpy-args", t_np, None)],
           "<= 0.5 us, <= njit-par, <= numpy-args",
           t_ta <= 0.5 and (npar is None or t_ta <= npar) and t_ta <= t_np,
           note=f"[fast-path hits {h_ta}]")

    ins = [np.full(8, k, dtype=np.float32) for k in range(7)]
    out = np.zeros(8, dtype=np.float32)
    peers8 = peer_times("sum8", per_call_us, *ins, out.copy())
    h0 = fast_hits()
    t8 = per_call_us(sum8, *ins, out)
    h8 = fast_hits() - h0
    if not np.all(out == 21.0):
        print("sum8: tack gave wrong results")
    R.line("dispatch 8 arrays len8 numpy-args", t8, peers8, "<= 1 us", t8 <= 1.0,
           note=f"[fast-path hits {h8}]")

    ins_t = [tack_array(a) for a in ins]
    out_t = tack_array(out)
    t8t = per_call_us(sum8, *ins_t, out_t)
    R.line("dispatch 8 arrays len8 tack.Array", t8t,
           peers8 + [("tack-numpy-args", t8, None)], "<= 1 us, <= numpy-args",
           t8t <= 1.0 and t8t <= t8)


# ===========================================================================
# 3. A parallel launch of 2^16 elements
# ===========================================================================

def bench_launch():
    n = 1 << 16
    x = np.arange(n, dtype=np.float32)
    out = np.zeros(n, dtype=np.float32)

    def launch_us(fn):
        return per_call_us(fn, x, out, 2.0, batch=20, batches=300, warmup=200)

    t2 = launch_us(scale)                       # default device: 2 threads
    dev1 = tack.device("cpu", num_threads=1)    # its own variant cache
    default = tack.get_default_device()
    tack.set_default_device(dev1)
    try:
        t1 = launch_us(scale)
    finally:
        tack.set_default_device(default)
    if not np.array_equal(out, x * 2):
        print("launch: tack gave wrong results")

    # The peers' 2-thread and serial times.
    nb_par = nb_ser = c_par = c_ser = None
    if NB is not None:
        nb_ser, nb_par = (launch_us(f) for f in NB["scale"])
    c = CProgram("scale.c")
    if c.ok:
        c_ser, c_par = map(float, c.run().split())
        c.close()

    def above(par, ser):
        return None if par is None else par - ser / 2

    R.line("launch 2^16 f32 scale, 2 threads", t2,
           [("njit-par", nb_par, NUMBA_WHY), ("c-openmp", c_par, c.why)],
           note=f"[tack 1 thread {fmt_us(t1)}; njit serial {fmt_us(nb_ser)}; "
                f"c serial {fmt_us(c_ser)}]")
    over = above(t2, t1)
    R.line("launch 2^16 above arithmetic", over,
           [("njit-par", above(nb_par, nb_ser), NUMBA_WHY),
            ("c-openmp", above(c_par, c_ser), c.why)],
           "<= 5 us above", over <= 5.0,
           note="[2-thread time minus 1-thread time / 2, each against its own serial]")


# ===========================================================================
# 4. Triad
# ===========================================================================

def bench_triad():
    n = 1 << 25
    # NumPy's large allocations are touched here, by one thread: on this
    # one-socket machine page placement does not matter, and the warm-up
    # call of each timed function absorbs the remaining page faults.
    # (bench/triad.c allocates its own arrays and touches them in parallel.)
    a = np.zeros(n)
    b = np.arange(n, dtype=np.float64)
    c = np.full(n, 2.0)

    def gbps(fn):
        return lambda: 24.0 * n / best_s(fn, a, b, c, 3.0, reps=5) / 1e9

    cp = CProgram("triad.c")
    best = interleaved({
        "tack": gbps(triad),
        "njit-par": gbps(NB["triad"][1]) if NB else None,
        "c-openmp": (lambda: float(cp.run())) if cp.ok else None,
    }, rounds=3, better=max)
    cp.close()
    a[:] = 0.0
    triad(a, b, c, 3.0)
    if not np.array_equal(a[:: n // 7], b[:: n // 7] + 6.0):
        print("triad: tack gave wrong results")
    fmt = lambda v: "n/a" if v is None else f"{v:.1f} GB/s"  # noqa: E731
    t, cgb = best["tack"], best.get("c-openmp")
    R.line("triad 2^25 f64 (best of 15)", t,
           [("njit-par", best.get("njit-par"), NUMBA_WHY), ("c-openmp", cgb, cp.why)],
           ">= 95% of C", cgb is None or t >= 0.95 * cgb, fmt=fmt)


# ===========================================================================
# 5. Mandelbrot
# ===========================================================================

def bench_mandelbrot():
    w = h = 2048
    xmin, ymin, dx, dy = -2.0, -1.25, 2.5 / w, 2.5 / h   # exact in f32
    args32 = tuple(np.float32(v) for v in (xmin, ymin, dx, dy))
    outs = {}

    def run(label, fn, scalars, reps=2):
        def measure():
            out = np.zeros((h, w), dtype=np.int32)
            t = best_s(fn, out, *scalars, reps=reps)
            outs[label] = out
            return t
        return measure

    cp = CProgram("mandelbrot.c")
    cpath = os.path.join(tempfile.gettempdir(), f"tack_bench_mandel_{os.getpid()}.bin")

    def run_c():
        t = float(cp.run(2, cpath))
        outs["c"] = np.fromfile(cpath, dtype=np.int32).reshape(h, w)
        os.remove(cpath)
        return t

    best = interleaved({
        "ndindex": run("ndindex", mandel_ndindex, (xmin, ymin, dx, dy)),
        "rows": run("rows", mandel_rows, (xmin, ymin, dx, dy)),
        "njit-par": run("njit-par", NB["mandel"][1], args32) if NB else None,
        "c": run_c if cp.ok else None,
    }, rounds=3)
    cp.close()
    if NB:   # serial Numba: a reference only, once
        best["njit"] = run("njit", NB["mandel"][0], args32, reps=1)()

    ref = outs["ndindex"]
    agree = {k: np.mean(v == ref) for k, v in outs.items() if k != "ndindex"}
    t_par, t_c = best.get("njit-par"), best.get("c")
    peers = [("njit", best.get("njit"), NUMBA_WHY), ("njit-par", t_par, NUMBA_WHY),
             ("c-openmp", t_c, cp.why)]

    def ok(t):
        return (t_c is None or t <= 1.10 * t_c) and (t_par is None or t <= t_par)

    fmt = lambda v: "n/a" if v is None else f"{v * 1e3:.1f} ms"  # noqa: E731
    target = "<= 1.10x C and <= njit-par"
    agree_s = ", ".join(f"{k} {v * 100:.3f}%" for k, v in agree.items())
    R.line("mandelbrot 2048^2 ndindex", best["ndindex"], peers, target, ok(best["ndindex"]),
           fmt=fmt, note=f"[pixels equal to tack-ndindex's: {agree_s}]")
    R.line("mandelbrot 2048^2 rows+inner loop", best["rows"], peers, target, ok(best["rows"]),
           fmt=fmt)
    if agree and min(agree.values()) < 0.999:
        print("mandelbrot: results disagree on more than 0.1% of pixels")


# ===========================================================================
# 6. N-body
# ===========================================================================

def bench_nbody():
    n, dt = 4096, 1e-3
    rng = np.random.default_rng(0)
    pos = rng.standard_normal((n, 3)).astype(np.float32)
    vel = (0.1 * rng.standard_normal((n, 3))).astype(np.float32)
    mass = (rng.uniform(0.5, 1.5, n) / n).astype(np.float32)
    outs = {}

    def run(label, fn, dt_arg, reps=5):
        def measure():
            new_pos, new_vel = np.empty_like(pos), np.empty_like(vel)
            t = best_s(fn, pos, vel, mass, new_pos, new_vel, dt_arg, reps=reps)
            outs[label] = np.concatenate([new_pos.ravel(), new_vel.ravel()])
            return t
        return measure

    cp = CProgram("nbody.c")
    d = tempfile.gettempdir()
    fin = os.path.join(d, f"tack_bench_nbody_in_{os.getpid()}.bin")
    fout = os.path.join(d, f"tack_bench_nbody_out_{os.getpid()}.bin")
    np.concatenate([pos.ravel(), vel.ravel(), mass]).astype(np.float32).tofile(fin)

    def run_c():
        t = float(cp.run(n, repr(dt), 5, fin, fout))
        outs["c"] = np.fromfile(fout, dtype=np.float32)
        return t

    try:
        best = interleaved({
            "tack": run("tack", nbody_step, dt),
            "njit-par": run("njit-par", NB["nbody"][1], np.float32(dt)) if NB else None,
            "c": run_c if cp.ok else None,
        }, rounds=3)
    finally:
        for f in (fin, fout):
            if os.path.exists(f):
                os.remove(f)
        cp.close()
    if NB:
        best["njit"] = run("njit", NB["nbody"][0], np.float32(dt), reps=2)()

    def rel_err(a, b):
        """Largest difference relative to each half's (positions, velocities)
        largest magnitude: velocities pass through zero, so an elementwise
        rtol says little about them."""
        h = a.size // 2
        return max(np.max(np.abs(a[:h] - b[:h])) / np.max(np.abs(b[:h])),
                   np.max(np.abs(a[h:] - b[h:])) / np.max(np.abs(b[h:])))

    ref = outs["tack"]
    errs = {k: rel_err(v, ref) for k, v in outs.items() if k != "tack"}
    t, t_par, t_c = best["tack"], best.get("njit-par"), best.get("c")
    ok = (t_c is None or t <= 1.10 * t_c) and (t_par is None or t <= t_par)
    fmt = lambda v: "n/a" if v is None else f"{v * 1e3:.2f} ms"  # noqa: E731
    err_s = ", ".join(f"{k} {v:.1e}" for k, v in errs.items())
    R.line("nbody 4096 f32 step", t,
           [("njit", best.get("njit"), NUMBA_WHY), ("njit-par", t_par, NUMBA_WHY),
            ("c-openmp", t_c, cp.why)],
           "<= 1.10x C and <= njit-par", ok, fmt=fmt,
           note=f"[max diff vs tack, relative to magnitude: {err_s}]")
    if errs and max(errs.values()) > 1e-4:
        print("nbody: results disagree beyond 1e-4")


# ===========================================================================
# 7. Cold compile and import
# ===========================================================================

COLD_SCRIPT = r'''
import json, os, sys, time
t0 = time.perf_counter()
import numpy as np
t1 = time.perf_counter()
import tack
t2 = time.perf_counter()

@tack.kernel
def first(x, out, a):
    for i in range(x.shape[0]):
        out[i] = x[i] * a

@tack.kernel
def second(x, y, out, a):
    for i in range(out.shape[0]):
        out[i] = a * x[i] + y[i]

t3 = time.perf_counter()
x = np.arange(8, dtype=np.float32)
y = np.ones(8, dtype=np.float32)
out = np.zeros(8, dtype=np.float32)

def call(fn, *args):
    t = time.perf_counter()
    fn(*args)
    return time.perf_counter() - t

f1 = call(first, x, out, 2.0)
w1 = min(call(first, x, out, 2.0) for _ in range(20))
f2 = call(second, x, y, out, 2.0)
w2 = min(call(second, x, y, out, 2.0) for _ in range(20))
print(json.dumps(dict(numpy=t1 - t0, tack=t2 - t1, decorate=t3 - t2,
                      first=f1 - w1, second=f2 - w2, total=t3 - t1 + f1,
                      stats=tack.stats())))
'''


def bench_cold():
    env = dict(os.environ, TACK_CACHE="off")
    fmt = lambda v: f"{v * 1e3:.1f} ms"  # noqa: E731
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
        f.write(COLD_SCRIPT)
        script = f.name
    try:
        runs = []
        for _ in range(5):
            r = subprocess.run([sys.executable, script], capture_output=True, text=True, env=env)
            if r.returncode != 0:
                print("cold compile: subprocess failed:", r.stderr.strip()[-300:])
                return
            runs.append(json.loads(r.stdout))
    finally:
        os.remove(script)
    best = {k: min(r[k] for r in runs) for k in ("numpy", "tack", "decorate", "first", "second", "total")}
    R.line("import tack (after numpy, best of 5)", best["tack"], (), "<= 50 ms",
           best["tack"] <= 0.050, fmt=fmt,
           note=f"[import numpy itself {fmt(best['numpy'])}; decorating two kernels "
                f"{fmt(best['decorate'])}]")
    R.line("compile first kernel of a process", best["first"], (), "<= 40 ms",
           best["first"] <= 0.040, fmt=fmt,
           note=f"[first call minus warm call, best of 5 processes; import tack + "
                f"decorate + first call {fmt(best['total'])}]")
    R.line("compile second kernel", best["second"], (), None, None, fmt=fmt,
           note="[target: <= 2 ms beyond LLVM's own optimize+emit time, "
                "which Python cannot see; MEASURED.md puts LLVM 14's at ~14 ms]")
    if NB is not None:
        code = ("import time; t = time.perf_counter(); import numba\n"
                "@numba.njit\ndef f(x, o, a):\n    for i in range(x.shape[0]): o[i] = x[i] * a\n"
                "import numpy as np; x = np.ones(8, np.float32); t1 = time.perf_counter()\n"
                "f(x, x.copy(), 2.0); t2 = time.perf_counter(); print(t1 - t, t2 - t1)")
        r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
        if r.returncode == 0:
            imp, first = map(float, r.stdout.split())
            print(f"{'  (numba for comparison)':<34}  import numba {fmt(imp)}  "
                  f"first njit call {fmt(first)}")


def main():
    t0 = time.perf_counter()
    nb = f"numba {numba.__version__}" if numba else f"numba skipped ({NUMBA_WHY})"
    print(f"tack {tack.__version__}, numpy {np.__version__}, {nb}, python "
          f"{sys.version.split()[0]}, {os.cpu_count()} cpus, default device "
          f"{tack.get_default_device()}, TACK_CACHE={os.environ.get('TACK_CACHE')}")
    print("ratios are tack/peer: for times < 1.00x means tack is faster, for GB/s > 1.00x")
    bench_dispatch()
    bench_launch()
    bench_triad()
    bench_mandelbrot()
    bench_nbody()
    bench_cold()
    R.summary()
    print(f"stats {tack.stats()}")
    print(f"suite took {time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
