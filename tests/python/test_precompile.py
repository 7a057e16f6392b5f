"""tack.precompile: several calls' variants compiled ahead of their launches
and together (on OpenCL, the new ones of a batch in one program).

Each test runs on the CPU and on OpenCL (PoCL here).  A batched variant
must behave exactly as one compiled alone: the same results (bitwise, on
edge values), the same variant keys, the same error messages, and disk
entries that a fresh process calling the kernels one at a time loads.
"""
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import tack
from conftest import assert_bitwise_equal, device_or_skip, store_cast

SPECS = ["cpu", "opencl"]


# Two kernels that need the same emitted helpers (floor division and
# modulo of each dtype, float -> int conversion), so that one OpenCL
# program defines each helper once for both.
def _floor_mod(x, out, a):
    for i in range(x.shape[0]):
        out[i] = x[i] // a + x[i] % a


def _floor_mod_shifted(x, out, a):
    for i in range(x.shape[0]):
        out[i] = x[(i + 1) % x.shape[0]] % a - x[i] // a


def _to_int(x, out):
    for i in range(x.shape[0]):
        out[i] = int(x[i])


def fresh(fn):
    """A new kernel object of fn: its own variant cache (as compiled alone)."""
    return tack.kernel(fn)


def ref_floor_mod(x, a):
    with np.errstate(all="ignore"):
        return (np.floor_divide(x, a) + np.remainder(x, a)).astype(x.dtype)


def ref_floor_mod_shifted(x, a):
    with np.errstate(all="ignore"):
        return (np.remainder(np.roll(x, -1), a) - np.floor_divide(x, a)).astype(x.dtype)


def edge_values(dt):
    dt = np.dtype(dt)
    if dt.kind == "f":
        v = [0.0, -0.0, 1.5, -1.5, 7.0, -7.0, np.inf, -np.inf, np.nan, 1e30, -1e-30, 3.0]
    else:
        info = np.iinfo(dt)
        v = [0, 1, -1, 7, -7, 3, -3, 100, info.min, info.max, info.min + 1, info.max - 1]
        if dt.kind == "u":
            v = [x % (int(info.max) + 1) for x in v]
    return np.array(v, dtype=dt)


def assert_matches_numpy(got, want):
    """Equal values, zeros' signs included; any NaN matches a NaN (NumPy's
    payloads and signs of NaN are not what is checked)."""
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)
    if got.dtype.kind == "f":
        real = ~np.isnan(want)
        assert np.array_equal(np.signbit(got[real]), np.signbit(want[real]))


def on(dev, a):
    return tack.array(a, device=dev)


CASES = [(np.int32, -3), (np.int64, 5), (np.float32, -2.5), (np.float64, 3.0), (np.uint8, 3)]


def batch_calls(kernels, dev):
    """(kernel, args) for every kernel and dtype case, with their outputs and
    NumPy references."""
    k1, k2 = kernels
    calls, checks = [], []
    for dt, a in CASES:
        x = edge_values(dt)
        for k, ref in ((k1, ref_floor_mod), (k2, ref_floor_mod_shifted)):
            out = on(dev, np.zeros_like(x))
            calls.append((k, (on(dev, x), out, a)))
            checks.append((out, ref(x, x.dtype.type(a))))
    return calls, checks


@pytest.mark.parametrize("spec", SPECS)
def test_batch_gives_the_results_and_keys_of_single_builds(spec):
    dev = device_or_skip(spec)
    batched = (fresh(_floor_mod), fresh(_floor_mod_shifted))
    single = (fresh(_floor_mod), fresh(_floor_mod_shifted))
    calls, checks = batch_calls(batched, dev)
    s0 = tack.stats()
    assert tack.precompile(calls, device=dev) is None
    s1 = tack.stats()
    assert s1["compiles"] - s0["compiles"] == len(calls)
    if spec == "opencl":
        # The new variants are one program: one driver build for all.
        assert s1["driver_program_builds"] - s0["driver_program_builds"] == 1
    # The launches compile nothing more.
    for k, args in calls:
        k(*args)
    assert tack.stats()["compiles"] == s1["compiles"]
    for out, want in checks:
        assert_matches_numpy(out.numpy(), want)
    # The same calls on kernels compiled one call at a time.
    calls1, checks1 = batch_calls(single, dev)
    for k, args in calls1:
        k(*args)
    for (out, _), (out1, _) in zip(checks, checks1):
        assert_bitwise_equal(out.numpy(), out1.numpy())
    for kb, ks in zip(batched, single):
        assert sorted(kb.variants(dev)) == sorted(ks.variants(dev))
        assert len(kb.variants(dev)) == len(CASES)


@pytest.mark.parametrize("spec", SPECS)
def test_conversions_and_keywords(spec):
    """Float -> int helpers for several targets in one batch, and a call
    given as (kernel, args, kwargs)."""
    dev = device_or_skip(spec)
    k = fresh(_to_int)
    x = np.array([0.0, -0.0, 2.9, -2.9, np.nan, np.inf, -np.inf, 3e9, -3e9, 1e20], np.float64)
    outs = {dt: on(dev, np.zeros(x.size, dt)) for dt in (np.int8, np.int32, np.uint16, np.int64)}
    calls = [(k, (on(dev, x),), {"out": o}) for o in outs.values()]
    tack.precompile(calls, device=dev)
    n = tack.stats()["compiles"]
    for dt, o in outs.items():
        k(on(dev, x), out=o)
        # int() saturates to i64 (NaN: 0); the store wraps to the dtype.
        want = store_cast(store_cast(x, np.int64), dt)
        assert_bitwise_equal(o.numpy(), want)
    assert tack.stats()["compiles"] == n


@pytest.mark.parametrize("spec", SPECS)
def test_empty_batch_compiles_nothing(spec):
    dev = device_or_skip(spec)
    n = tack.stats()["compiles"]
    assert tack.precompile([], device=dev) is None
    assert tack.precompile(iter(()), device=dev) is None
    assert tack.stats()["compiles"] == n


@pytest.mark.parametrize("spec", SPECS)
def test_compiled_and_repeated_calls_are_compiled_once(spec):
    dev = device_or_skip(spec)
    k1, k2 = fresh(_floor_mod), fresh(_floor_mod_shifted)
    x = on(dev, np.arange(-8, 8, dtype=np.int32))
    out = on(dev, np.zeros(16, np.int32))
    k1(x, out, 3)  # already compiled before the batch
    assert len(k1.variants(dev)) == 1
    n = tack.stats()["compiles"]
    # k1's variant again, k2's twice (one variant: values don't key it).
    tack.precompile([(k1, (x, out, 3)), (k2, (x, out, 3)), (k2, (x, out, -7)),
                     (k1, [x, out, 5])], device=dev)
    assert tack.stats()["compiles"] == n + 1
    assert len(k1.variants(dev)) == 1 and len(k2.variants(dev)) == 1
    # Precompiling what is compiled compiles nothing.
    tack.precompile([(k1, (x, out, 3)), (k2, (x, out, 3))], device=dev)
    assert tack.stats()["compiles"] == n + 1
    k2(x, out, -7)
    assert_bitwise_equal(out.numpy(), ref_floor_mod_shifted(np.arange(-8, 8, dtype=np.int32),
                                                            np.int32(-7)))
    assert tack.stats()["compiles"] == n + 1


def _good(x, out):
    for i in range(x.shape[0]):
        out[i] = x[i] + 1


def _bad(x, out):
    for i in range(x.shape[0]):
        out[i] = x[i] << 2  # BAD: floats have no shifts


@pytest.mark.parametrize("spec", SPECS)
def test_a_failing_kernel_is_named_and_the_others_are_built(spec):
    dev = device_or_skip(spec)
    good, bad = fresh(_good), fresh(_bad)
    xf = on(dev, np.arange(4, dtype=np.float32))
    of = on(dev, np.zeros(4, np.float32))
    xi = on(dev, np.arange(4, dtype=np.int32))
    oi = on(dev, np.zeros(4, np.int32))
    n = tack.stats()["compiles"]
    with pytest.raises(tack.CompileError) as batch_err:
        tack.precompile([(good, (xf, of)), (bad, (xf, of)), (bad, (xi, oi)), (good, (xi, oi))],
                        device=dev)
    # The others were built: their launches compile nothing.
    assert tack.stats()["compiles"] == n + 3
    assert len(good.variants(dev)) == 2 and len(bad.variants(dev)) == 1
    bad(xi, oi)
    good(xf, of)
    assert tack.stats()["compiles"] == n + 3
    assert_bitwise_equal(oi.numpy(), np.arange(4, dtype=np.int32) << 2)
    assert_bitwise_equal(of.numpy(), np.arange(1, 5, dtype=np.float32))
    # The error is the one the call itself raises.
    with pytest.raises(tack.CompileError) as call_err:
        bad(xf, of)
    assert str(batch_err.value) == str(call_err.value)
    assert batch_err.value.lineno == call_err.value.lineno
    assert "kernel 'bad'" in str(batch_err.value) or "'_bad'" in str(batch_err.value)


@pytest.mark.parametrize("spec", SPECS)
def test_a_refused_call_compiles_nothing(spec):
    dev = device_or_skip(spec)
    good, other = fresh(_good), fresh(_floor_mod)
    x = on(dev, np.arange(4, dtype=np.float32))
    out = on(dev, np.zeros(4, np.float32))
    n = tack.stats()["compiles"]
    with pytest.raises(TypeError, match=r"kernel '_good' missing 1 required positional"):
        tack.precompile([(other, (x, out, 2.0)), (good, (x,))], device=dev)
    with pytest.raises(TypeError, match=r"parameter 'out'"):
        tack.precompile([(other, (x, out, 2.0)), (good, (x, "no"))], device=dev)
    with pytest.raises(TypeError, match=r"unexpected keyword argument 'y'"):
        tack.precompile([(good, (x,), {"y": out})], device=dev)
    assert tack.stats()["compiles"] == n
    assert other.variants(dev) == [] and good.variants(dev) == []


def test_malformed_calls_are_refused():
    good = fresh(_good)
    x = np.zeros(4, np.float32)
    with pytest.raises(TypeError, match=r"calls\[0\] must be a tuple \(kernel, args\)"):
        tack.precompile([good])
    with pytest.raises(TypeError, match=r"calls\[1\]\[0\] must be a tack kernel"):
        tack.precompile([(good, (x, x)), (_good, (x, x))])
    with pytest.raises(TypeError, match=r"calls\[0\]\[1\] must be a tuple or list"):
        tack.precompile([(good, x)])
    with pytest.raises(TypeError, match=r"calls\[0\]\[2\] must be a dict"):
        tack.precompile([(good, (x,), [x])])
    with pytest.raises(TypeError):
        tack.precompile(5)
    assert good.variants("cpu") == []


CHILD = '''
import json, os, sys
import numpy as np
import tack
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kernels_mod as m
dev = tack.device(sys.argv[1])
calls, outs = [], []
for dt, a in ((np.int32, -3), (np.float32, 2.5), (np.float64, -1.5), (np.int64, 7)):
    x = np.arange(-10, 10).astype(dt)
    for k in (m.k_floor_mod, m.k_floor_mod_shifted):
        out = tack.array(np.zeros_like(x), device=dev)
        calls.append((k, (tack.array(x, device=dev), out, a)))
        outs.append(out)
if sys.argv[2] == "batch":
    tack.precompile(calls, device=dev)
for (k, args), out in zip(calls, outs):  # one at a time
    k(*args)
s = tack.stats()
print(json.dumps({"compiles": s["compiles"], "disk_hits": s["disk_hits"],
                  "programs": s["driver_program_builds"],
                  "results": [o.numpy().tobytes().hex() for o in outs]}))
'''

KERNELS_MOD = '''
import tack

@tack.kernel
def k_floor_mod(x, out, a):
    for i in range(x.shape[0]):
        out[i] = x[i] // a + x[i] % a

@tack.kernel
def k_floor_mod_shifted(x, out, a):
    for i in range(x.shape[0]):
        out[i] = x[(i + 1) % x.shape[0]] % a - x[i] // a
'''


@pytest.mark.parametrize("spec", SPECS)
def test_batch_entries_are_hit_by_a_fresh_process(tmp_path, spec):
    device_or_skip(spec)
    (tmp_path / "kernels_mod.py").write_text(textwrap.dedent(KERNELS_MOD))
    (tmp_path / "child.py").write_text(CHILD)
    cache = tmp_path / "cache"
    cache.mkdir(mode=0o700)
    env = {k: v for k, v in os.environ.items() if not k.startswith("TACK_")}
    env.update(TACK_CACHE="write", TACK_CACHE_DIR=str(cache), PYTHONDONTWRITEBYTECODE="1")

    def run(mode):
        p = subprocess.run([sys.executable, str(tmp_path / "child.py"), spec, mode], env=env,
                           capture_output=True, text=True, timeout=300)
        assert p.returncode == 0, p.stderr
        return json.loads(p.stdout.strip().splitlines()[-1])

    first = run("batch")
    assert first["compiles"] == 8 and first["disk_hits"] == 0
    if spec == "opencl":
        assert first["programs"] == 1
    # A fresh process calling the kernels one at a time loads all eight.
    second = run("single")
    assert second["compiles"] == 0 and second["disk_hits"] == 8
    if spec == "opencl":
        assert second["programs"] == 0
    assert second["results"] == first["results"]
    # And they are what a process without the cache computes.
    env["TACK_CACHE"] = "off"
    third = run("single")
    assert third["compiles"] == 8 and third["results"] == first["results"]


PAUSE_CHILD = '''
import json, os, sys, time
import numpy as np
import tack
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kernels_mod as m
dev = tack.device("opencl")
x = tack.array(np.arange(8, dtype=np.float32), device=dev)
out = tack.zeros((8,), device=dev)
m.k_floor_mod(x, out, 3.0)

def entries():
    return sorted(f for d, _, fs in os.walk(os.environ["TACK_CACHE_DIR"]) for f in fs
                  if len(f) == 64)

time.sleep(3)  # a pause in compiling: the writer thread stores the binary now
print(json.dumps({"paused": entries()}))
'''


def test_opencl_entries_are_written_when_compiling_pauses(tmp_path):
    """The writer thread makes OpenCL entries once compiles pause, not only
    at exit: after a pause the variant's entry is on disk (beside its IR
    template's), and exit adds nothing."""
    device_or_skip("opencl")
    (tmp_path / "kernels_mod.py").write_text(textwrap.dedent(KERNELS_MOD))
    (tmp_path / "child.py").write_text(PAUSE_CHILD)
    cache = tmp_path / "cache"
    cache.mkdir(mode=0o700)
    env = {k: v for k, v in os.environ.items() if not k.startswith("TACK_")}
    env.update(TACK_CACHE="write", TACK_CACHE_DIR=str(cache), PYTHONDONTWRITEBYTECODE="1")
    p = subprocess.run([sys.executable, str(tmp_path / "child.py")], env=env,
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    paused = json.loads(p.stdout.strip().splitlines()[-1])["paused"]
    at_exit = sorted(f for d, _, fs in os.walk(cache) for f in fs if len(f) == 64)
    assert len(paused) == 2 and paused == at_exit
