"""Where time goes (issue 22 item 5): per-kernel counters in tack.stats()
and Kernel.stats(), tack.timer (devices synchronized, printed or kept in
.elapsed, kernels' launch times taken meanwhile), tack.synchronize, and the
per-kernel options @tack.kernel(cache=False) and @tack.kernel(debug=...)."""
import json
import os
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import tack

PY = sys.executable

# What tack.stats() said before per-kernel counters: these keys stay.
OLD_KEYS = {"compiles", "lowerings", "launches", "variant_hits", "fast_path_hits",
            "disk_hits", "disk_misses", "disk_bad_entries", "disk_ir_hits", "disk_ir_misses",
            "compile_ms", "llvm_ms", "driver_binary_loads", "driver_source_builds"}
PER_KERNEL = {"launches", "compiles", "lowerings", "compile_ms", "launch_ms"}


def make_kernel(name, body="out[i] = x[i] * 2.0", **options):
    """A kernel of a name no other test uses, from a text of its own."""
    src = "def %s(x, out):\n    for i in range(x.shape[0]):\n        %s\n" % (name, body)
    g = {}
    exec(src, g)
    return tack.kernel(g[name], source=src, **options)


def test_stats_keys_unchanged_and_kernels_added():
    s = tack.stats()
    assert OLD_KEYS <= set(s)
    assert set(s) - OLD_KEYS == {"kernels", "driver_program_builds"}
    for entry in s["kernels"].values():
        assert set(entry) == PER_KERNEL


def test_per_kernel_counters():
    k = make_kernel("timing_counted_kernel")
    x = np.arange(16.0)
    out = np.zeros_like(x)
    assert k.stats() == {"launches": 0, "compiles": 0, "lowerings": 0,
                         "compile_ms": 0.0, "launch_ms": 0.0}
    before = tack.stats()
    for _ in range(5):
        k(x, out)
    k(x.astype(np.float32), out.astype(np.float32))  # a second variant
    after = tack.stats()
    mine = after["kernels"]["timing_counted_kernel"]
    assert mine == k.stats()
    assert mine["launches"] == 6
    assert mine["compiles"] == 2 and mine["lowerings"] == 1
    assert mine["compile_ms"] > 0.0
    assert mine["launch_ms"] == 0.0  # launches are timed inside tack.timer only
    # the process-wide counters still count every launch and compile
    assert after["launches"] - before["launches"] == 6
    assert after["compiles"] - before["compiles"] == 2
    np.testing.assert_array_equal(out, x * 2.0)


def test_freed_kernels_launches_stay_counted():
    k = make_kernel("timing_freed_kernel")
    k(np.ones(4), np.zeros(4))
    k(np.ones(4), np.zeros(4))
    before = tack.stats()
    assert before["kernels"]["timing_freed_kernel"]["launches"] == 2
    del k
    import gc
    gc.collect()
    after = tack.stats()
    assert "timing_freed_kernel" not in after["kernels"]
    assert after["launches"] == before["launches"]


def test_kernels_of_one_name_are_reported_together():
    a = make_kernel("timing_twin", "out[i] = x[i] + 1.0")
    b = make_kernel("timing_twin", "out[i] = x[i] + 2.0")
    x = np.zeros(3)
    out = np.zeros(3)
    a(x, out)
    np.testing.assert_array_equal(out, 1.0)
    b(x, out)
    b(x, out)
    np.testing.assert_array_equal(out, 2.0)
    assert (a.stats()["launches"], b.stats()["launches"]) == (1, 2)
    assert tack.stats()["kernels"]["timing_twin"]["launches"] == 3


def test_timer_prints_and_keeps_elapsed(capsys):
    with tack.timer("step") as t:
        time.sleep(0.02)
    out = capsys.readouterr().out
    assert t.elapsed >= 0.02
    assert out.startswith("step: ") and out.endswith(" ms\n")
    assert abs(float(out[len("step: "):-len(" ms\n")]) - t.elapsed * 1e3) < 0.001
    quiet = tack.timer("quiet", print=False)
    with quiet:
        time.sleep(0.01)
    assert capsys.readouterr().out == ""
    assert quiet.elapsed >= 0.01
    with quiet:  # reusable: each block measures afresh
        pass
    assert quiet.elapsed < 0.01


def test_timer_times_kernel_launches():
    k = make_kernel("timing_busy_kernel",
                    "out[i] = x[i]\n        for j in range(2000):\n"
                    "            out[i] = out[i] * 0.999 + 0.001")
    x = np.ones(4096)
    out = np.zeros_like(x)
    k(x, out)  # compiled outside the timer
    assert k.stats()["launch_ms"] == 0.0
    with tack.timer("busy", print=False) as t:
        for _ in range(3):
            k(x, out)
    s = k.stats()
    assert s["launches"] == 4
    assert 0.0 < s["launch_ms"] <= t.elapsed * 1e3
    k(x, out)  # outside a timer again: not timed
    assert k.stats()["launch_ms"] == s["launch_ms"]


def test_timer_when_the_block_raises(capsys):
    k = make_kernel("timing_raise_kernel")
    t = tack.timer("boom")
    with pytest.raises(ZeroDivisionError):
        with t:
            1 / 0
    assert t.elapsed is not None and t.elapsed >= 0.0
    assert capsys.readouterr().out == ""  # no time printed for a block that failed
    k(np.ones(2), np.zeros(2))  # timing was switched off again
    assert k.stats()["launch_ms"] == 0.0


def test_synchronize():
    assert tack.synchronize() is None
    assert tack.synchronize("cpu") is None
    assert tack.synchronize(tack.device("cpu")) is None
    with pytest.raises(ValueError):
        tack.synchronize("no-such-device")


# ---- per-kernel options ----------------------------------------------------

GATHER = "out[i] = x[idx[i]]"


def make_gather(**options):
    src = "def gather(x, idx, out):\n    for i in range(out.shape[0]):\n        %s\n" % GATHER
    g = {}
    exec(src, g)
    return tack.kernel(g["gather"], source=src, **options)


def test_debug_option_checks_this_kernel_only():
    assert tack.get_debug() is False
    checked = make_gather(debug=True)
    plain = make_gather()
    x = np.arange(5.0)
    out = np.zeros(2)
    checked(x, np.array([4, 0]), out)
    np.testing.assert_array_equal(out, [4.0, 0.0])
    plain(x, np.array([1, 2]), out)
    np.testing.assert_array_equal(out, [1.0, 2.0])
    with pytest.raises(IndexError, match=r"kernel 'gather', <string>:3: index \(5,\) is out of "
                                         r"bounds for 'x' with shape \(5,\)"):
        checked(x, np.array([0, 5]), out)
    assert checked.ir_templates() == [("debug",)]
    assert plain.ir_templates() == [()]


def test_debug_false_overrides_global_debug():
    unchecked = make_gather(debug=False)
    follows = make_gather()
    x = np.arange(5.0)
    out = np.zeros(2)
    tack.set_debug(True)
    try:
        unchecked(x, np.array([3, 1]), out)
        np.testing.assert_array_equal(out, [3.0, 1.0])
        with pytest.raises(IndexError, match="out of bounds"):
            follows(x, np.array([7, 1]), out)
    finally:
        tack.set_debug(False)
    assert unchecked.ir_templates() == [()]
    assert follows.ir_templates() == [("debug",)]


def test_options_on_an_existing_kernel_make_a_new_one():
    k = make_gather()
    assert tack.kernel(k) is k
    d = tack.kernel(k, debug=True)
    assert d is not k and isinstance(d, tack.Kernel)
    with pytest.raises(IndexError):
        d(np.arange(2.0), np.array([2]), np.zeros(1))


def test_unknown_and_bad_options_are_refused():
    with pytest.raises(TypeError, match=r"tack\.kernel\(\) got unknown option 'fast' "
                                        r"\(it takes source=, cache=, debug=\)"):
        tack.kernel(fast=True)
    with pytest.raises(TypeError, match=r"unknown options 'a', 'b'"):
        tack.kernel(lambda: 0, b=1, a=2)
    with pytest.raises(TypeError, match=r"tack\.func\(\) got unknown option 'debug'"):
        tack.func(debug=True)
    with pytest.raises(TypeError, match=r"tack\.kernel\(debug=\.\.\.\) takes True or False, "
                                        r"not str"):
        make_gather(debug="yes")
    with pytest.raises(TypeError, match=r"tack\.kernel\(cache=\.\.\.\) takes True or False, "
                                        r"not int"):
        make_gather(cache=0)


def test_cache_false_keeps_the_kernel_out_of_the_disk_cache(tmp_path):
    child = textwrap.dedent("""\
        import json, numpy as np, tack

        @tack.kernel(cache=False)
        def private(x, out):
            for i in range(x.shape[0]):
                out[i] = x[i] + 1.0

        @tack.kernel
        def shared(x, out):
            for i in range(x.shape[0]):
                out[i] = x[i] + 2.0

        x = np.arange(4.0); a = np.zeros(4); b = np.zeros(4)
        private(x, a)
        s1 = tack.stats()
        shared(x, b)
        s2 = tack.stats()
        print(json.dumps({"a": a.tolist(), "b": b.tolist(),
                          "private": [s1[k] for k in ("disk_hits", "disk_misses", "compiles")],
                          "shared": [s2[k] - s1[k] for k in ("disk_hits", "disk_misses",
                                                             "compiles")]}))
        """)
    path = tmp_path / "child.py"
    path.write_text(child)
    env = {k: v for k, v in os.environ.items() if not k.startswith("TACK_")}
    env.update(TACK_CACHE="write", TACK_CACHE_DIR=str(tmp_path / "cache"),
               PYTHONDONTWRITEBYTECODE="1")
    runs = []
    for _ in range(2):
        p = subprocess.run([PY, str(path)], env=env, capture_output=True, text=True,
                           timeout=120)
        assert p.returncode == 0, p.stderr
        runs.append(json.loads(p.stdout.strip().splitlines()[-1]))
    for r in runs:
        assert r["a"] == [1.0, 2.0, 3.0, 4.0] and r["b"] == [2.0, 3.0, 4.0, 5.0]
        # never looked up, so neither a hit nor a miss; compiled every time
        assert r["private"] == [0, 0, 1]
    assert runs[0]["shared"] == [0, 1, 1]  # stored ...
    assert runs[1]["shared"] == [1, 0, 0]  # ... and found again
