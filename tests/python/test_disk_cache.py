"""The disk cache (issue 8), each acceptance point in fresh processes.

Every test writes small scripts into a temporary directory and runs them with
`subprocess` against a private cache directory (mode 0700) and TACK_CACHE set
explicitly; a child prints one JSON line: tack.stats(), each result's bytes
(hex) and whether it equals NumPy's.  The parent asserts on the counters, on
the files in the cache directory and on the results, compared bitwise across
processes.  Administration (list, verify, bundle) is done either through
`python -m tack cache ...` or in this process through tack._tack._cache_*
with the environment pointed at the test's cache directory.
"""
import contextlib
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
import time

import pytest

import tack

PY = sys.executable
HEX64 = re.compile(r"^[0-9a-f]{64}$")
T0 = 1_700_000_000  # TACK_CACHE_NOW base for the clock tests
HOUR = 3600

# Written at the top of every child script.
PRELUDE = '''\
import json, math, os, sys
import numpy as np
import tack

_results = {}

def record(name, got, expected):
    got = np.asarray(got)
    expected = np.asarray(expected, dtype=got.dtype)
    _results[name] = {"hex": got.tobytes().hex(),
                      "ok": bool(got.shape == expected.shape
                                 and got.tobytes() == expected.tobytes())}

def done(**extra):
    out = json.dumps({"stats": tack.stats(), "results": _results, **extra})
    if os.environ.get("DONE_DIR"):  # one file per process: MPI ranks share stdout
        with open(os.path.join(os.environ["DONE_DIR"], "%d.json" % os.getpid()), "w") as f:
            f.write(out)
    else:
        print(out)
'''

# Environment variables a child must not inherit from whoever runs pytest.
_STRIP = ("TACK_", "OMPI_", "PMI_", "PMIX_", "MV2_", "SLURM_")


def child_env(cache, **extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith(_STRIP)}
    env.update(TACK_CACHE="write", TACK_CACHE_DIR=str(cache), PYTHONDONTWRITEBYTECODE="1")
    for k, v in extra.items():
        if v is None:
            env.pop(k, None)
        else:
            env[k] = str(v)
    return env


def write(path, text):
    path.write_text(textwrap.dedent(text))
    return path


def script(path, *parts):
    """A child script: PRELUDE, then the parts, each dedented."""
    path.write_text(PRELUDE + "".join(textwrap.dedent(p) for p in parts))
    return path


def parse(proc, what):
    assert proc.returncode == 0, f"{what} failed ({proc.returncode}):\n{proc.stderr}"
    lines = proc.stdout.strip().splitlines()
    assert lines, f"{what} printed nothing:\n{proc.stderr}"
    out = json.loads(lines[-1])
    out["stderr"] = proc.stderr
    return out


def run(path, env, timeout=120):
    """Runs a child script; returns its JSON (with "stderr" added)."""
    p = subprocess.run([PY, str(path)], env=env, cwd=str(path.parent),
                       capture_output=True, text=True, timeout=timeout)
    return parse(p, path.name)


def cli(env, *args, cwd=None):
    """`python -m tack cache ARGS...`: (returncode, stdout, stderr)."""
    p = subprocess.run([PY, "-m", "tack", "cache", *args], env=env, cwd=cwd,
                       capture_output=True, text=True, timeout=60)
    return p.returncode, p.stdout, p.stderr


def all_ok(out):
    bad = {k: v for k, v in out["results"].items() if not v["ok"]}
    assert not bad, f"wrong results: {sorted(bad)}"
    return True


def hexes(out):
    return {k: v["hex"] for k, v in out["results"].items()}


def new_cache(tmp_path, name="cache"):
    d = tmp_path / name
    d.mkdir()
    os.chmod(d, 0o700)
    return d


def all_entry_files(cache):
    """{file name: path} of every entry (64-hex name) under every fingerprint."""
    found = {}
    for sub in sorted(cache.iterdir()) if cache.is_dir() else ():
        if sub.is_dir():
            for f in sub.iterdir():
                if HEX64.match(f.name):
                    found[f.name] = f
    return found


def is_ir_entry(path):
    """The cache's first level (lowered IR templates) keys its entries with
    this tag; the second (compiled variants) with tack-variant."""
    return b"tack-ir-5" in path.read_bytes()[:96]


def entry_files(cache):
    """{file name: path} of the variant entries."""
    return {n: p for n, p in all_entry_files(cache).items() if not is_ir_entry(p)}


def ir_entry_files(cache):
    """{file name: path} of the IR-template entries."""
    return {n: p for n, p in all_entry_files(cache).items() if is_ir_entry(p)}


def snapshot(path):
    """Every file and directory under path, with file contents."""
    snap = {}
    for root, dirs, files in os.walk(path):
        for d in dirs:
            snap[os.path.relpath(os.path.join(root, d), path) + "/"] = None
        for f in files:
            p = os.path.join(root, f)
            with open(p, "rb") as fh:
                snap[os.path.relpath(p, path)] = fh.read()
    return snap


@contextlib.contextmanager
def admin(cache, **extra):
    """This process's environment pointed at `cache`, for tack._tack._cache_*
    (they open their own cache object from the environment each call)."""
    saved = dict(os.environ)
    try:
        os.environ.update({"TACK_CACHE": "write", "TACK_CACHE_DIR": str(cache)})
        for k, v in extra.items():
            os.environ[k] = str(v)
        yield tack._tack
    finally:
        os.environ.clear()
        os.environ.update(saved)


def by_kernel(cache, **extra):
    """{kernel name: (entry path, size, mtime)} via _cache_list (one entry each)."""
    with admin(cache, **extra) as t:
        info = t._cache_info()
        lst = t._cache_list()
    out = {}
    for e in lst:
        assert e["kernel"] not in out, f"two entries for kernel {e['kernel']}"
        p = os.path.join(info["dir"], e["name"])
        out[e["kernel"]] = (p, os.path.getsize(p), int(os.stat(p).st_mtime))
    return out


# A few kernels over several dtypes, a device function and math; results are
# exact (no rounding), so they must equal NumPy's bit for bit.
BASIC = '''
@tack.func
def twice_plus(v, c):
    return v * 2 + c

@tack.kernel
def k_affine(x, out):
    for i in range(x.shape[0]):
        out[i] = x[i] * 3.0 + 1.0

@tack.kernel
def k_int(x, out):
    for i in range(x.shape[0]):
        out[i] = twice_plus(x[i] % 13, i)

@tack.kernel
def k_sqrt(x, out):
    for i in range(x.shape[0]):
        out[i] = math.sqrt(x[i])

x64 = np.arange(1000, dtype=np.float64)
x32 = np.arange(1000, dtype=np.float32)
xi = np.arange(-500, 500, dtype=np.int64)
for name, x in (("affine_f64", x64), ("affine_f32", x32)):
    out = np.zeros_like(x)
    k_affine(x, out)
    record(name, out, x * x.dtype.type(3) + x.dtype.type(1))
out = np.zeros_like(xi)
k_int(xi, out)
record("int", out, (xi % 13) * 2 + np.arange(1000))
out = np.zeros_like(x64)
k_sqrt(x64, out)
record("sqrt", out, np.sqrt(x64))
'''
BASIC_VARIANTS = 4
BASIC_TEMPLATES = 3  # IR templates: one per kernel
BASIC_ENTRIES = BASIC_VARIANTS + BASIC_TEMPLATES


def basic_script(tmp_path):
    return script(tmp_path / "basic.py", BASIC + "done()\n")


# =============================================================================
# 1. a second process loads what the first compiled
# =============================================================================

def test_second_process_loads_instead_of_compiling(tmp_path):
    cache = new_cache(tmp_path)
    s = basic_script(tmp_path)
    env = child_env(cache)
    first = run(s, env)
    assert all_ok(first)
    st = first["stats"]
    assert st["compiles"] == BASIC_VARIANTS, st
    assert st["disk_misses"] == BASIC_VARIANTS and st["disk_hits"] == 0, st
    assert st["disk_bad_entries"] == 0, st
    files = entry_files(cache)
    assert len(files) == BASIC_VARIANTS, sorted(files)
    assert st["lowerings"] == BASIC_TEMPLATES and st["disk_ir_misses"] == BASIC_TEMPLATES, st
    assert len(ir_entry_files(cache)) == BASIC_TEMPLATES
    for f in all_entry_files(cache).values():
        assert os.stat(f).st_mode & 0o077 == 0, oct(os.stat(f).st_mode)
    for sub in cache.iterdir():
        if sub.is_dir():
            assert os.stat(sub).st_mode & 0o777 == 0o700, oct(os.stat(sub).st_mode)

    second = run(s, env)
    assert all_ok(second)
    st = second["stats"]
    assert st["compiles"] == 0, st
    assert st["disk_hits"] == BASIC_VARIANTS and st["disk_misses"] == 0, st
    # the first level too: the IR templates load, nothing is lowered
    assert st["lowerings"] == 0 and st["disk_ir_hits"] == BASIC_TEMPLATES, st
    assert st["disk_bad_entries"] == 0, st
    assert hexes(second) == hexes(first)
    assert sorted(entry_files(cache)) == sorted(files)


# =============================================================================
# 2. whatever a kernel depends on, changed, recompiles it
# =============================================================================

MOD_V1 = '''\
import os
import tack

SCALE = 2.0
OFFSET = int(os.environ.get("OFF", "0"))


@tack.func
def inner(v):
    return v + 1.0 + OFFSET


@tack.func
def outer(v):
    return inner(v) * 2.0
'''


def test_edit_in_another_module_recompiles(tmp_path):
    cache = new_cache(tmp_path)
    mod = tmp_path / "mod.py"
    mod.write_text(MOD_V1)
    main = script(tmp_path / "main.py", '''
        import mod
        from mod import SCALE, outer

        @tack.kernel
        def k_outer(x, out):
            for i in range(x.shape[0]):
                out[i] = outer(x[i])

        @tack.kernel
        def k_scale(x, out):
            for i in range(x.shape[0]):
                out[i] = x[i] * SCALE

        x = np.arange(100, dtype=np.float64)
        inner_add = float(os.environ["INNER_ADD"]) + mod.OFFSET
        outer_mul = float(os.environ["OUTER_MUL"])
        out = np.zeros_like(x)
        k_outer(x, out)
        record("outer", out, (x + inner_add) * outer_mul)
        out = np.zeros_like(x)
        k_scale(x, out)
        record("scale", out, x * mod.SCALE)
        done()
        ''')

    def go(inner_add, outer_mul, compiles, hits, **extra):
        out = run(main, child_env(cache, INNER_ADD=inner_add, OUTER_MUL=outer_mul, **extra))
        assert all_ok(out)
        st = out["stats"]
        assert (st["compiles"], st["disk_hits"], st["disk_bad_entries"]) == (compiles, hits, 0), st
        # a stored IR template is used only while its names resolve the same:
        # whatever recompiles was lowered again, and a run that compiles
        # nothing lowers nothing (the first level keeps each kernel's newest
        # template, the second every variant, so going back to an older
        # version lowers again but loads its variant)
        assert st["lowerings"] >= compiles, st
        if compiles == 0:
            assert st["lowerings"] == 0 and st["disk_ir_hits"] == 2, st
        return out

    go(1, 2, compiles=2, hits=0)
    go(1, 2, compiles=0, hits=2)
    # a device function called by the device function the kernel calls
    mod.write_text(MOD_V1.replace("v + 1.0 + OFFSET", "v + 5.0 + OFFSET"))
    go(5, 2, compiles=1, hits=1)
    # the device function the kernel calls, one line further down
    mod.write_text(MOD_V1.replace("v + 1.0 + OFFSET", "v + 5.0 + OFFSET")
                   .replace("    return inner(v) * 2.0", "    # four\n    return inner(v) * 4.0"))
    go(5, 4, compiles=1, hits=1)
    # a constant of the other module, imported by the kernel's (mod.SCALE is refused)
    mod.write_text(MOD_V1.replace("SCALE = 2.0", "SCALE = 3.0"))
    go(1, 2, compiles=1, hits=1)  # k_outer: back to the first version's entry
    # a global of the other module read inside its device function, the file unchanged
    go(1, 2, compiles=1, hits=1, OFF=7)
    go(1, 2, compiles=0, hits=2, OFF=7)


def test_changed_constants_recompile(tmp_path):
    cache = new_cache(tmp_path)
    main = script(tmp_path / "main.py", '''
        C = tack.constant(float(os.environ["C"]))
        N = int(os.environ["N"])

        @tack.kernel
        def k_const(x, out):
            for i in range(x.shape[0]):
                out[i] = x[i] * C + N

        x = np.arange(100, dtype=np.float64)
        out = np.zeros_like(x)
        k_const(x, out)
        record("const", out, x * C + N)
        done()
        ''')
    seen = {}
    for c, n, compiles in ((2, 1, 1), (2, 1, 0), (3, 1, 1), (3, 5, 1), (2, 1, 0)):
        out = run(main, child_env(cache, C=c, N=n))
        assert all_ok(out), (c, n)
        st = out["stats"]
        assert st["compiles"] == compiles, (c, n, st)
        assert st["disk_hits"] == 1 - compiles, (c, n, st)
        seen.setdefault((c, n), hexes(out))
        assert hexes(out) == seen[(c, n)]
    assert len(entry_files(cache)) == 3


def test_changed_closure_recompiles(tmp_path):
    cache = new_cache(tmp_path)
    main = script(tmp_path / "main.py", '''
        @tack.func
        def double(v):
            return v * 2.0

        @tack.func
        def triple(v):
            return v * 3.0

        def make(fn, offset):
            @tack.kernel
            def k_closure(x, out):
                for i in range(x.shape[0]):
                    out[i] = fn(x[i]) + offset
            return k_closure

        name, offset = os.environ["FN"], int(os.environ["OFFSET"])
        k = make({"double": double, "triple": triple}[name], offset)
        x = np.arange(100, dtype=np.float64)
        out = np.zeros_like(x)
        k(x, out)
        record("closure", out, x * {"double": 2.0, "triple": 3.0}[name] + offset)
        done()
        ''')
    for fn, off, compiles in (("double", 0, 1), ("triple", 0, 1), ("double", 0, 0),
                              ("triple", 4, 1), ("triple", 0, 0)):
        out = run(main, child_env(cache, FN=fn, OFFSET=off))
        assert all_ok(out), (fn, off)
        st = out["stats"]
        assert st["compiles"] == compiles, (fn, off, st)
        assert st["disk_hits"] == 1 - compiles, (fn, off, st)


def test_template_class_constant_change_is_never_stale(tmp_path):
    # template-class kernels are stored keyed by what the class bakes in (its
    # constants' values, its methods' sources), not by its per-process
    # identity: a changed constant recompiles, and going back loads again
    cache = new_cache(tmp_path)
    main = script(tmp_path / "main.py", '''
        @tack.device_class
        class Field:
            factor = float(os.environ["FACTOR"])

            def __init__(self, data):
                self.data = data

            @tack.func
            def at(self, i):
                return self.data[i] * self.factor

        @tack.kernel
        def k_field(f, out):
            for i in range(out.shape[0]):
                out[i] = f.at(i)

        x = np.arange(50, dtype=np.float64)
        out = np.zeros_like(x)
        k_field(Field(x), out)
        record("field", out, x * Field.factor)
        done()
        ''')
    for factor, compiles in ((2, 1), (3, 1), (2, 0)):
        out = run(main, child_env(cache, FACTOR=factor))
        assert all_ok(out), factor
        assert out["stats"]["compiles"] == compiles, (factor, out["stats"])
        assert out["stats"]["disk_hits"] == 1 - compiles, (factor, out["stats"])


# =============================================================================
# 3. damaged entries: counted bad, recompiled, correct numbers
# =============================================================================

TWO = '''
@tack.kernel
def k_first(x, out):
    for i in range(x.shape[0]):
        out[i] = x[i] * 5 + 3

@tack.kernel
def k_second(x, out):
    for i in range(x.shape[0]):
        out[i] = x[i] * x[i] - 7

x = np.arange(-200, 200, dtype=np.int64)
for name, k, f in (("first", k_first, lambda v: v * 5 + 3),
                   ("second", k_second, lambda v: v * v - 7)):
    out = np.zeros_like(x)
    k(x, out)
    record(name, out, f(x))
done()
'''


@pytest.fixture(scope="module")
def two_kernel_cache(tmp_path_factory):
    """A cache holding k_first and k_second, the script, and its first output."""
    base = tmp_path_factory.mktemp("two")
    cache = new_cache(base)
    s = script(base / "two.py", TWO)
    out = run(s, child_env(cache))
    assert all_ok(out) and out["stats"]["compiles"] == 2
    return cache, s, out, by_kernel(cache)


def _damage(kind, victim, other):
    data = open(victim, "rb").read()
    if kind == "truncated":
        data = data[: len(data) // 2]
    elif kind == "empty":
        data = b""
    elif kind == "flip_middle":
        data = bytearray(data)
        data[len(data) // 2] ^= 0x01
    elif kind == "flip_last":
        data = bytearray(data)
        data[-1] ^= 0x80
    elif kind == "magic":
        data = b"NOTTACK!" + data[8:]
    elif kind == "other_key":
        data = open(other, "rb").read()
    elif kind == "symlink":
        # A link to another (valid) entry: never followed, so bad.
        os.unlink(victim)
        os.symlink(other, victim)
        return
    else:
        raise AssertionError(kind)
    with open(victim, "wb") as f:
        f.write(bytes(data))


@pytest.mark.parametrize("kind", ["truncated", "empty", "flip_middle", "flip_last", "magic",
                                  "other_key", "symlink"])
def test_damaged_entry_is_bad_and_recompiled(tmp_path, two_kernel_cache, kind):
    src_cache, s, first, entries = two_kernel_cache
    cache = tmp_path / "cache"
    shutil.copytree(src_cache, cache)
    os.chmod(cache, 0o700)
    rel = {k: os.path.relpath(v[0], src_cache) for k, v in entries.items()}
    victim, other = cache / rel["k_second"], cache / rel["k_first"]
    original = victim.read_bytes()
    _damage(kind, victim, other)
    assert victim.read_bytes() != original

    with admin(cache) as t:
        v = t._cache_verify()
    assert v["checked"] == 2 * 2, v  # two kernels: an IR entry and a variant entry each
    assert [e["name"] for e in v["bad"]] == [victim.name], v

    out = run(s, child_env(cache))
    assert all_ok(out)
    st = out["stats"]
    assert st["disk_bad_entries"] >= 1, st
    assert st["compiles"] == 1 and st["disk_hits"] == 1, st
    assert hexes(out) == hexes(first)
    # the recompiled entry replaced the damaged one, byte for byte
    assert not victim.is_symlink()
    assert victim.read_bytes() == original
    with admin(cache) as t:
        v = t._cache_verify()
    assert v["checked"] == 2 * 2 and v["bad"] == [], v


# =============================================================================
# 4. eight processes at once on an empty cache
# =============================================================================

def test_eight_processes_at_once(tmp_path):
    cache = new_cache(tmp_path)
    kernels = ["import tack\n"]
    for j in range(20):
        kernels.append(textwrap.dedent(f'''
            @tack.kernel
            def k{j}(x, out):
                for i in range(x.shape[0]):
                    out[i] = x[i] * {j + 2} + {j * 7 - 3}
            '''))
    (tmp_path / "twenty.py").write_text("".join(kernels))
    s = script(tmp_path / "race.py", '''
        import time
        import twenty
        go = sys.argv[1] if len(sys.argv) > 1 else None
        while go and not os.path.exists(go):
            time.sleep(0.002)
        x = np.arange(-300, 300, dtype=np.int64)
        for j in range(20):
            out = np.zeros_like(x)
            getattr(twenty, "k%d" % j)(x, out)
            record("k%d" % j, out, x * (j + 2) + (j * 7 - 3))
        done()
        ''')
    go = tmp_path / "go"
    env = child_env(cache)
    procs = [subprocess.Popen([PY, str(s), str(go)], env=env, cwd=str(tmp_path),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(8)]
    time.sleep(0.5)  # let them import; they start compiling together
    go.write_text("")
    outs = []
    for p in procs:
        stdout, stderr = p.communicate(timeout=120)
        outs.append(parse(subprocess.CompletedProcess(p.args, p.returncode, stdout, stderr),
                          "race.py"))
    for out in outs:
        assert all_ok(out)
        st = out["stats"]
        assert st["disk_bad_entries"] == 0, st
        assert st["compiles"] + st["disk_hits"] == 20, st
        assert len(out["results"]) == 20
    assert len({json.dumps(hexes(o), sort_keys=True) for o in outs}) == 1

    files = entry_files(cache)
    assert len(files) == 20
    # no temporary file left behind
    for sub in cache.iterdir():
        if sub.is_dir():
            assert sorted(os.listdir(sub)) == sorted(all_entry_files(cache)), sorted(os.listdir(sub))
    rc, stdout, stderr = cli(env, "verify")
    assert rc == 0, stdout + stderr
    assert len(ir_entry_files(cache)) == 20
    assert "checked 40, 0 bad" in stdout, stdout  # 20 variant and 20 IR-template entries

    ninth = run(s, env)
    assert all_ok(ninth)
    st = ninth["stats"]
    assert st["compiles"] == 0 and st["disk_hits"] == 20 and st["disk_bad_entries"] == 0, st


# =============================================================================
# 5. a cache directory others could write is refused
# =============================================================================

def _fingerprint_dir(tmp_path):
    """A fresh root with this build's fingerprint directory in it."""
    root = new_cache(tmp_path, "fp_root")
    with admin(root) as t:
        return root, t._cache_info()["dir"]


@pytest.mark.parametrize("case", ["group_writable", "world_writable", "fingerprint_dir_group",
                                  "other_owner"])
def test_unsafe_directory_is_refused(tmp_path, case):
    if case == "other_owner":
        if os.geteuid() != 0:
            pytest.skip("making a directory owned by another user needs root")
        cache = new_cache(tmp_path)
        os.chown(cache, 65534, 65534)
        bad = cache
    elif case == "fingerprint_dir_group":
        cache, bad = _fingerprint_dir(tmp_path)
        os.chmod(bad, 0o770)
    else:
        cache = tmp_path / "cache"
        cache.mkdir()
        bad = cache
        os.chmod(cache, 0o770 if case == "group_writable" else 0o777)
    before = snapshot(cache)
    out = run(basic_script(tmp_path), child_env(cache))
    assert all_ok(out)
    st = out["stats"]
    assert st["compiles"] == BASIC_VARIANTS, st
    assert st["disk_hits"] == 0 and st["disk_misses"] == 0, st
    warnings = [ln for ln in out["stderr"].splitlines() if "warning" in ln.lower()]
    assert len(warnings) == 1, out["stderr"]
    assert str(bad) in warnings[0], warnings
    assert snapshot(cache) == before, "something was written into a refused directory"


# =============================================================================
# 6. the size limit: LRU down to 90%, at most once an hour
# =============================================================================

def test_size_limit_prunes_lru_hourly(tmp_path):
    cache = new_cache(tmp_path)
    n = 16
    src = ["import tack\n"]
    for j in range(n):
        src.append(textwrap.dedent(f'''
            @tack.kernel
            def k{j}(x, out):
                for i in range(x.shape[0]):
                    out[i] = x[i] * {j + 3} - {j}
            '''))
    (tmp_path / "many.py").write_text("".join(src))
    s = script(tmp_path / "some.py", '''
        import many
        x = np.arange(100, dtype=np.int64)
        for j in map(int, os.environ["KERNELS"].split(",")):
            out = np.zeros_like(x)
            getattr(many, "k%d" % j)(x, out)
            record("k%d" % j, out, x * (j + 3) - j)
        done()
        ''')
    mark = cache / ".pruned"

    def go(now, kernels, limit=None):
        out = run(s, child_env(cache, TACK_CACHE_NOW=now, TACK_CACHE_SIZE=limit,
                               KERNELS=",".join(map(str, kernels))))
        assert all_ok(out)
        return out["stats"]

    def both(j):
        """A kernel's two entries: its IR template's and its variant's."""
        return ["k%d" % j, "k%d [ir]" % j]

    st = go(T0, range(10))
    assert st["compiles"] == 10
    ents = by_kernel(cache)
    assert sorted(ents) == sorted(n for j in range(10) for n in both(j))
    assert all(e[2] == T0 for e in ents.values()), "entries take TACK_CACHE_NOW as their time"
    assert int(mark.stat().st_mtime) == T0
    # distinct ages: k0 the least recently used
    for j in range(10):
        for n in both(j):
            os.utime(ents[n][0], (T0 + j, T0 + j))
    # a bundle is neither counted nor deleted
    with admin(cache, TACK_CACHE_NOW=T0) as t:
        assert t._cache_bundle()["entries"] == 20
        bundle = os.path.join(t._cache_info()["dir"], "bundle.tack")
    bundle_bytes = open(bundle, "rb").read()
    size = max(e[1] for e in ents.values())
    limit = 6 * size  # about six entries; the bundle alone is bigger
    keep = limit * 9 // 10

    def check_pruned(before, after, stored_after):
        """after: a least-recently-used prefix of before removed, down to 90%.
        A kernel's IR entry is stored (and prunes) before its variant entry,
        which is written after the prune: stored_after names it."""
        kept = sum(e[1] for k, e in after.items() if k != stored_after)
        assert kept <= keep
        order = sorted(before, key=lambda k: (before[k][2], before[k][0]))
        order = [k for k in order if k != stored_after]
        removed = [k for k in order if k not in after]
        assert removed == order[:len(removed)], (removed, order)
        # minimal: keeping the last removed one would have been over 90%
        assert kept + before[removed[-1]][1] > keep
        return removed

    # ten minutes later a store finds the mark fresh: no scan, although over the limit
    st = go(T0 + 600, [10], limit)
    assert st["compiles"] == 1
    before = by_kernel(cache)
    assert len(before) == 22 and sum(e[1] for e in before.values()) > limit
    assert int(mark.stat().st_mtime) == T0

    # over an hour later: k0's hit refreshes it, k11's store prunes
    now = T0 + HOUR + 100
    st = go(now, [0, 11], limit)
    assert st["disk_hits"] == 1 and st["compiles"] == 1, st
    for n in both(0):
        before[n] = (before[n][0], before[n][1], now)
    after = by_kernel(cache)
    for n in both(11):
        assert n in after, "an entry just stored was pruned"
        before[n] = after[n]
    for n in both(0):
        assert after[n][2] == now, "a hit over an hour old refreshes the entry"
    removed = check_pruned(before, after, "k11")
    assert not set(removed) & set(both(0) + both(11))
    assert int(mark.stat().st_mtime) == now
    assert open(bundle, "rb").read() == bundle_bytes

    # within the hour: stores past the limit delete nothing
    pruned_at = now
    now += 1800
    again = list(dict.fromkeys(int(re.match(r"k(\d+)", n).group(1)) for n in removed))[:2]
    st = go(now, again, limit)
    assert st["compiles"] == 2
    before = by_kernel(cache)
    assert set(before) == set(after) | set(both(again[0]) + both(again[1]))
    assert sum(e[1] for e in before.values()) > limit
    assert int(mark.stat().st_mtime) == pruned_at

    # past the hour again: the next store prunes again
    now = pruned_at + HOUR + 1
    st = go(now, [12], limit)
    assert st["compiles"] == 1
    after = by_kernel(cache)
    for n in both(12):
        assert n in after, "an entry just stored was pruned"
        before[n] = after[n]
    assert check_pruned(before, after, "k12")
    assert int(mark.stat().st_mtime) == now
    assert open(bundle, "rb").read() == bundle_bytes


# =============================================================================
# 7. read mode stores nothing, off touches nothing
# =============================================================================

def test_read_mode_loads_but_stores_nothing(tmp_path):
    cache = new_cache(tmp_path)
    one = script(tmp_path / "one.py", '''
        @tack.kernel
        def k_affine(x, out):
            for i in range(x.shape[0]):
                out[i] = x[i] * 3.0 + 1.0
        x = np.arange(1000, dtype=np.float64)
        out = np.zeros_like(x)
        k_affine(x, out)
        record("affine_f64", out, x * 3.0 + 1.0)
        done()
        ''')
    first = run(one, child_env(cache))
    assert first["stats"]["compiles"] == 1
    before = snapshot(cache)
    # the same kernel source in basic.py is another file: only its own entries hit
    run(basic_script(tmp_path), child_env(cache, TACK_CACHE="read"))
    assert snapshot(cache) == before
    out = run(one, child_env(cache, TACK_CACHE="read"))
    assert all_ok(out)
    st = out["stats"]
    assert st["disk_hits"] == 1 and st["compiles"] == 0, st
    assert hexes(out) == hexes(first)
    assert snapshot(cache) == before


def test_off_mode_touches_nothing(tmp_path):
    cache = new_cache(tmp_path)
    s = basic_script(tmp_path)
    out = run(s, child_env(cache, TACK_CACHE="off"))
    assert all_ok(out)
    st = out["stats"]
    assert st["compiles"] == BASIC_VARIANTS, st
    assert st["disk_hits"] == st["disk_misses"] == st["disk_bad_entries"] == 0, st
    assert os.listdir(cache) == []
    missing = tmp_path / "not_there"
    run(s, child_env(missing, TACK_CACHE="off"))
    assert not missing.exists()
    # a populated cache is not read either
    run(s, child_env(cache))
    out = run(s, child_env(cache, TACK_CACHE="off"))
    assert out["stats"]["compiles"] == BASIC_VARIANTS and out["stats"]["disk_hits"] == 0


# =============================================================================
# 8. python -m tack cache info|list|clear|prune|verify|bundle
# =============================================================================

def test_command_line(tmp_path):
    cache = new_cache(tmp_path)
    s = script(tmp_path / "greek.py", '''
        @tack.kernel
        def alpha_kernel(x, out):
            for i in range(x.shape[0]):
                out[i] = x[i] + 1

        @tack.kernel
        def beta_kernel(x, out):
            for i in range(x.shape[0]):
                out[i] = x[i] * 2

        @tack.kernel
        def gamma_kernel(x, out):
            for i in range(x.shape[0]):
                out[i] = x[i] - 3

        x = np.arange(64, dtype=np.int32)
        for k, f in ((alpha_kernel, lambda v: v + 1), (beta_kernel, lambda v: v * 2),
                     (gamma_kernel, lambda v: v - 3)):
            out = np.zeros_like(x)
            k(x, out)
            record(k.__name__, out, f(x))
        done()
        ''')
    env = child_env(cache)
    first = run(s, env)
    assert all_ok(first) and first["stats"]["compiles"] == 3
    files = entry_files(cache)
    fp = next(iter(files.values())).parent

    rc, out, err = cli(env, "info")
    assert rc == 0, err
    assert str(fp) in out and fp.name in out
    assert re.search(r"entries:\s+6\b", out), out  # three kernels, two levels each
    assert re.search(r"bundle:\s+none", out), out

    rc, out, err = cli(env, "list")
    assert rc == 0, err
    lines = [ln for ln in out.splitlines() if re.match(r"^[0-9a-f]{16}\s", ln)]
    assert len(lines) == 6, out
    for name in ("alpha_kernel", "beta_kernel", "gamma_kernel"):
        assert sum(bool(re.search(rf"\s{name}\s+[0-9]", ln)) for ln in lines) == 1, out
        assert sum(f"{name} [ir]" in ln for ln in lines) == 1, out
    for name in files:
        assert sum(ln.startswith(name[:16]) for ln in lines) == 1, out

    rc, out, err = cli(env, "verify")
    assert (rc, out.strip()) == (0, "checked 6, 0 bad"), out + err
    ents = by_kernel(cache)
    victim = ents["gamma_kernel"][0]
    with open(victim, "r+b") as f:
        f.seek(40)
        b = f.read(1)
        f.seek(40)
        f.write(bytes([b[0] ^ 0xFF]))
    rc, out, err = cli(env, "verify")
    assert rc == 1, out + err
    assert f"bad: {os.path.basename(victim)}" in out and "checked 6, 1 bad" in out, out
    assert os.path.exists(victim)
    rc, out, err = cli(env, "verify", "--remove")
    assert rc == 0, out + err
    assert "(removed)" in out and "checked 6, 1 bad" in out, out
    assert not os.path.exists(victim)
    rc, out, err = cli(env, "verify")
    assert (rc, out.strip()) == (0, "checked 5, 0 bad"), out + err

    rc, out, err = cli(env, "bundle")
    assert rc == 0, err
    assert re.search(r"packed 5 entries", out) and str(fp) in out, out
    rc, out, err = cli(env, "info")
    assert rc == 0 and not re.search(r"bundle:\s+none", out), out
    # bundle mode reads the bundle only: the per-kernel files may go
    for f in all_entry_files(cache).values():
        f.unlink()
    out = run(s, child_env(cache, TACK_CACHE="bundle"))
    assert all_ok(out)
    st = out["stats"]
    assert st["disk_hits"] == 2 and st["compiles"] == 1, st
    assert st["disk_ir_hits"] == 3 and st["lowerings"] == 0, st
    assert hexes(out) == hexes(first)
    assert all_entry_files(cache) == {}, "bundle mode stores nothing"

    run(s, env)  # six entries again
    rc, out, err = cli(child_env(cache, TACK_CACHE_SIZE=1), "prune")
    assert rc == 0, err
    assert "removed 6 entries" in out, out
    assert entry_files(cache) == {}
    assert (fp / "bundle.tack").exists(), "prune keeps the bundle"

    run(s, env)
    rc, out, err = cli(env, "clear")
    assert rc == 0, err
    m = re.search(r"removed (\d+) file", out)
    assert m and int(m.group(1)) >= 7, out  # 6 entries and the bundle (and the mark)
    assert entry_files(cache) == {}
    assert not (fp / "bundle.tack").exists()
    rc, out, err = cli(env, "list")
    assert rc == 0 and "no entries" in out, out

    # a refused directory is an error, not a traceback
    os.chmod(cache, 0o770)
    rc, out, err = cli(env, "info")
    assert rc == 1 and "python -m tack" in err and "Traceback" not in err, err


# =============================================================================
# 9. MPI: rank variables, bundles, load_bundle(comm)
# =============================================================================

@pytest.mark.parametrize("launcher", [
    ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"),
    ("PMI_RANK", "PMI_SIZE"),
    ("SLURM_PROCID", "SLURM_NTASKS"),
])
def test_mpi_write_mode_stores_from_rank_zero_only(tmp_path, launcher):
    rank_var, size_var = launcher
    cache = new_cache(tmp_path)
    s = basic_script(tmp_path)
    out = run(s, child_env(cache, **{rank_var: 1, size_var: 4}))
    assert all_ok(out)
    assert out["stats"]["compiles"] == BASIC_VARIANTS
    assert entry_files(cache) == {}, "rank 1 stored entries"
    out = run(s, child_env(cache, **{rank_var: 0, size_var: 4}))
    assert all_ok(out)
    assert len(entry_files(cache)) == BASIC_VARIANTS, "rank 0 stored nothing"
    # ranks above zero still load
    out = run(s, child_env(cache, **{rank_var: 3, size_var: 4}))
    assert out["stats"]["disk_hits"] == BASIC_VARIANTS and out["stats"]["compiles"] == 0


def test_mpi_default_is_bundle_mode(tmp_path):
    cache = new_cache(tmp_path)
    s = basic_script(tmp_path)
    first = run(s, child_env(cache))
    mpi = dict(TACK_CACHE=None, OMPI_COMM_WORLD_RANK=2, OMPI_COMM_WORLD_SIZE=4)
    before = snapshot(cache)
    # no bundle yet: per-kernel entries exist but are not looked up
    out = run(s, child_env(cache, **mpi))
    assert all_ok(out)
    assert out["stats"]["disk_hits"] == 0 and out["stats"]["compiles"] == BASIC_VARIANTS
    assert snapshot(cache) == before
    with admin(cache) as t:
        assert t._cache_bundle()["entries"] == BASIC_ENTRIES
    for f in all_entry_files(cache).values():
        f.unlink()
    out = run(s, child_env(cache, **mpi))
    assert all_ok(out)
    assert out["stats"]["disk_hits"] == BASIC_VARIANTS and out["stats"]["compiles"] == 0
    assert out["stats"]["disk_ir_hits"] == BASIC_TEMPLATES and out["stats"]["lowerings"] == 0
    assert hexes(out) == hexes(first)
    assert all_entry_files(cache) == {}


def test_load_bundle_broadcasts(tmp_path):
    # load_bundle(comm) with a stand-in communicator (rank and bcast only):
    # rank 0 sends the file's bytes; another rank installs what it receives
    # and reads no file itself (the bundle file is moved away)
    cache = new_cache(tmp_path)
    mpi = script(tmp_path / "mpi_fake.py", '''
        rank = int(os.environ.get("OMPI_COMM_WORLD_RANK", "0"))
        sent = os.environ["SENT"]

        class Comm:
            bcasts = []
            def Get_rank(self):
                return rank
            def bcast(self, obj, root=0):
                assert root == 0
                Comm.bcasts.append(obj)
                if rank == 0:
                    return obj
                assert obj is None
                with open(sent, "rb") as f:
                    return f.read()

        installed = tack.cache.load_bundle(Comm())
        again = tack.cache.load_bundle(Comm())
        rank0_sent = None
        if rank == 0 and os.path.exists(sent):
            with open(sent, "rb") as f:
                rank0_sent = Comm.bcasts[0] == f.read()
        ''', BASIC, '''
        done(installed=installed, again=again, rank0_sent=rank0_sent)
        ''')
    # write mode, no bundle yet: nothing to install, the kernels are stored
    first = run(mpi, child_env(cache, SENT=tmp_path / "sent.bin"))
    assert all_ok(first) and first["installed"] == -1
    assert first["stats"]["compiles"] == BASIC_VARIANTS
    with admin(cache) as t:
        t._cache_bundle()
        bundle = os.path.join(t._cache_info()["dir"], "bundle.tack")
    shutil.copy(bundle, tmp_path / "sent.bin")
    out = run(mpi, child_env(cache, TACK_CACHE=None, OMPI_COMM_WORLD_RANK=0,
                             OMPI_COMM_WORLD_SIZE=4, SENT=tmp_path / "sent.bin"))
    assert all_ok(out)
    assert out["installed"] == BASIC_ENTRIES and out["again"] == -1, out
    assert out["rank0_sent"] is True
    assert out["stats"]["disk_hits"] == BASIC_VARIANTS and out["stats"]["compiles"] == 0
    os.rename(bundle, tmp_path / "away.bin")
    out = run(mpi, child_env(cache, TACK_CACHE=None, OMPI_COMM_WORLD_RANK=1,
                             OMPI_COMM_WORLD_SIZE=4, SENT=tmp_path / "sent.bin"))
    assert all_ok(out)
    assert out["installed"] == BASIC_ENTRIES, out
    assert out["stats"]["disk_hits"] == BASIC_VARIANTS and out["stats"]["compiles"] == 0
    assert hexes(out) == hexes(first)


def _have_mpi():
    if not shutil.which("mpirun"):
        return False
    p = subprocess.run([PY, "-c", "import mpi4py"], capture_output=True)
    return p.returncode == 0


@pytest.mark.skipif(not _have_mpi(), reason="needs mpirun and mpi4py")
def test_mpirun_bundle_mode(tmp_path):
    cache = new_cache(tmp_path)
    ranks = script(tmp_path / "ranks.py", '''
        from mpi4py import MPI
        comm = MPI.COMM_WORLD
        installed = tack.cache.load_bundle(comm) if os.environ.get("BCAST") else None
        ''', BASIC, '''
        done(rank=comm.Get_rank(), installed=installed)
        ''')
    first = run(ranks, child_env(cache))  # a singleton: write mode, no bundle
    with admin(cache) as t:
        t._cache_bundle()
    for f in all_entry_files(cache).values():
        f.unlink()
    mpirun = ["mpirun", "-np", "4", "--allow-run-as-root", "--oversubscribe"]
    for bcast in ("", "1"):
        done_dir = tmp_path / ("done" + bcast)
        done_dir.mkdir()
        env = child_env(cache, TACK_CACHE=None, BCAST=bcast, DONE_DIR=str(done_dir))
        p = subprocess.run(mpirun + [PY, str(ranks)], env=env, cwd=str(tmp_path),
                           capture_output=True, text=True, timeout=300)
        assert p.returncode == 0, p.stderr
        outs = [json.loads(f.read_text()) for f in done_dir.glob("*.json")]
        assert sorted(o["rank"] for o in outs) == [0, 1, 2, 3]
        for o in outs:
            assert all(r["ok"] for r in o["results"].values())
            assert o["stats"]["disk_hits"] == BASIC_VARIANTS and o["stats"]["compiles"] == 0
            assert o["stats"]["disk_ir_hits"] == BASIC_TEMPLATES and o["stats"]["lowerings"] == 0
            assert {k: v["hex"] for k, v in o["results"].items()} == hexes(first)
            if bcast:
                assert o["installed"] == BASIC_ENTRIES
        assert all_entry_files(cache) == {}
