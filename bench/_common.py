"""Shared helpers for the benchmark scripts in bench/: timing loops, the
optional peers (Numba, gcc), and the one-line-per-figure report format.

Nothing here imports tack, so a script can time `import tack` itself.
"""
import os
import shutil
import statistics
import subprocess
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))

# gcc flags for the C peers.  -ffp-contract=off keeps gcc from fusing a*b+c
# into an FMA (GNU C does that by default with -march=native): Tack and Numba
# are strict IEEE without contraction, so the C code computes the same thing.
C_FLAGS = ["-O3", "-march=native", "-fopenmp", "-ffp-contract=off"]
C_THREADS = "2"


# ---- timing ---------------------------------------------------------------

def settle():
    """Waits for Tack's optimized builds, when tack is loaded: the tiered
    JIT runs a new variant's tier-0 code until its O3 build is swapped in,
    and a figure is meant to time the optimized code."""
    import sys
    tack = sys.modules.get("tack")
    if tack is not None and hasattr(tack, "_jit_wait"):
        tack._jit_wait()


def per_call_us(fn, *args, batch=200, batches=300, warmup=1000):
    """Median over `batches` of the mean time of one call in a batch of
    `batch` calls, in microseconds.  For calls of a microsecond or less,
    where one perf_counter read would be a large part of the figure."""
    for _ in range(warmup):
        fn(*args)
    settle()
    samples = []
    for _ in range(batches):
        t = time.perf_counter_ns()
        for _ in range(batch):
            fn(*args)
        samples.append((time.perf_counter_ns() - t) / batch / 1e3)
    return statistics.median(samples)


def single_call_us(fn, *args, reps=2000, warmup=200):
    """Median of `reps` individually timed calls, in microseconds (for calls
    long enough that the timer's own cost, ~0.05 us, does not matter)."""
    for _ in range(warmup):
        fn(*args)
    settle()
    samples = []
    for _ in range(reps):
        t = time.perf_counter_ns()
        fn(*args)
        samples.append((time.perf_counter_ns() - t) / 1e3)
    return statistics.median(samples)


def best_s(fn, *args, reps=5, warmup=1):
    """Best of `reps` timed calls, in seconds, after `warmup` untimed ones."""
    for _ in range(warmup):
        fn(*args)
    settle()
    best = float("inf")
    for _ in range(reps):
        t = time.perf_counter()
        fn(*args)
        best = min(best, time.perf_counter() - t)
    return best


def interleaved(measures, rounds=3, better=min):
    """Runs each of `measures` ({label: fn() -> value}) once per round,
    in turn, for `rounds` rounds, and returns {label: best value}.  On a
    shared 2-core machine a burst of outside load then hurts one round of
    every peer rather than every run of one of them."""
    best = {}
    for _ in range(rounds):
        for label, fn in measures.items():
            if fn is None:
                continue
            v = fn()
            best[label] = v if label not in best else better(best[label], v)
    return best


# ---- peers ----------------------------------------------------------------

def import_numba():
    """(numba module, None) or (None, why it is skipped)."""
    try:
        import numba
        return numba, None
    except Exception as e:  # ImportError, or a Numba/NumPy version clash
        return None, f"{type(e).__name__}: {e}".splitlines()[0][:120]


class CProgram:
    """A C file in bench/ compiled at run time into the temp directory with
    gcc C_FLAGS (plus `extra`); `ok` is False, with `why`, when gcc is
    missing or the build fails."""

    def __init__(self, name, extra=()):
        self.name = name
        self.exe = None
        self.why = None
        gcc = shutil.which("gcc")
        if gcc is None:
            self.why = "gcc not found"
            return
        exe = os.path.join(tempfile.gettempdir(),
                           f"tack_bench_{os.path.splitext(name)[0]}_{os.getpid()}")
        r = subprocess.run([gcc, *C_FLAGS, *extra, os.path.join(HERE, name), "-o", exe, "-lm"],
                           capture_output=True, text=True)
        if r.returncode != 0:
            self.why = f"gcc failed: {r.stderr.strip()[:200]}"
            return
        self.exe = exe

    @property
    def ok(self):
        return self.exe is not None

    def run(self, *argv, threads=C_THREADS):
        """Runs the program with OMP_NUM_THREADS=threads; returns its stdout."""
        env = dict(os.environ, OMP_NUM_THREADS=str(threads), OMP_PROC_BIND="false")
        r = subprocess.run([self.exe, *map(str, argv)], capture_output=True, text=True, env=env)
        if r.returncode != 0:
            raise RuntimeError(f"{self.name} failed: {r.stderr.strip()[:200]}")
        return r.stdout

    def close(self):
        if self.exe and os.path.exists(self.exe):
            os.remove(self.exe)


# ---- report ---------------------------------------------------------------

def fmt_us(us):
    """A time in microseconds with a sensible unit."""
    if us is None:
        return "n/a"
    if us < 10:
        return f"{us:.3f} us"
    if us < 10_000:
        return f"{us:.1f} us"
    return f"{us / 1e3:.2f} ms"


class Report:
    """Prints one line per figure and keeps the target verdicts for a summary.

    A figure is a Tack value plus peers; each peer shows its value and the
    ratio Tack/peer (for times: below 1 means Tack is faster; for rates
    such as GB/s: above 1 means Tack is faster)."""

    def __init__(self):
        self.verdicts = []

    def line(self, name, tack, peers=(), target=None, ok=None, fmt=fmt_us, note=""):
        """`peers`: (label, value or None, why-skipped) triples."""
        parts = [f"{name:<34}", f"tack {fmt(tack)}"]
        for label, value, why in peers:
            if value is None:
                parts.append(f"{label} skipped ({why})" if why else f"{label} n/a")
            else:
                r = tack / value if value and tack is not None else float("nan")
                parts.append(f"{label} {fmt(value)} ({r:.2f}x)")
        if target is not None:
            verdict = "ok" if ok else "MISSED"
            parts.append(f"target {target}: {verdict}")
            self.verdicts.append((name, verdict))
        if note:
            parts.append(note)
        print("  ".join(parts), flush=True)

    def summary(self):
        missed = [n for n, v in self.verdicts if v != "ok"]
        print(f"targets: {len(self.verdicts) - len(missed)} ok, {len(missed)} missed"
              + (f" ({', '.join(missed)})" if missed else ""))
