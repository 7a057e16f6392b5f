"""The variant cache: the reference's worked examples (variant counts and key
elements, call by call, from an empty cache), per-device caches, the lifetime
of a kernel's slot, and the compile log that explains each new variant.

Each test makes its own kernel objects (defined in the test body or by a
factory), so every count starts from an empty slot."""
import gc
import logging
import os
import re
import subprocess
import sys
import textwrap
import weakref

import numpy as np
import pytest

import tack

# The conformance suite: every test runs on each device (conftest.py).
pytestmark = pytest.mark.every_device
from conftest import SANITIZED, assert_bitwise_equal, random_values

F32 = ("f32", True, False, None)
F64 = ("f64", True, False, None)


def arr(n, dtype=np.float32, seed=0):
    return random_values(dtype, n, seed=seed + n)


def new_work():
    """Compiles (from memory or from disk) so far."""
    s = tack.stats()
    return s["compiles"] + s["disk_hits"]


class Counter:
    """Checks after each call that exactly the new variants were compiled."""

    def __init__(self, kernel, device=None):
        self.kernel = kernel
        self.device = device
        self.work = new_work()
        self.count = len(self.variants())
        assert self.count == 0, "a fresh kernel starts with an empty slot"

    def variants(self):
        if self.device is None:
            return self.kernel.variants()
        return self.kernel.variants(device=self.device)

    def expect(self, n):
        keys = self.variants()
        assert len(keys) == n, keys
        assert len(set(keys)) == n, f"duplicate keys: {keys}"
        grown = new_work() - self.work
        assert grown == n - self.count, (
            f"{grown} compiles for {n - self.count} new variants")
        self.work += grown
        self.count = n
        return keys


def check_key(key):
    assert isinstance(key, tuple) and len(key) == 5, key
    param_sig, vec_sig, tmpl_key, shape_sig, disjoint = key
    strided_sig = key.strided_sig  # beyond the five, by name
    assert isinstance(param_sig, tuple)
    for entry in param_sig:
        assert isinstance(entry, tuple) and len(entry) == 4, entry
    assert vec_sig == ()
    assert tmpl_key == ()
    assert isinstance(shape_sig, tuple)
    assert disjoint is True or disjoint is False
    assert strided_sig == ()  # these tables pass C-contiguous arrays
    return key


# ---- the scale table -----------------------------------------------------------

def test_scale_table_row_by_row():
    @tack.kernel
    def scale(x, out, a):
        for i in range(x.shape[0]):
            out[i] = x[i] * a

    c = Counter(scale)
    for n in (8, 16, 32):
        x = arr(n)
        out = np.zeros(n, np.float32)
        scale(x, out, 2.0)
        assert_bitwise_equal(out, x * np.float32(2.0))
        (key,) = c.expect(1)
    assert check_key(key) == ((F32, F32, ("f32", False, False, None)), (), (), (), True)
    assert scale.ir_templates() and len(scale.ir_templates()) == 1

    x8 = arr(8)
    out = np.zeros(8, np.float32)
    scale(x8, out, 3.5)
    assert_bitwise_equal(out, x8 * np.float32(3.5))
    c.expect(1)

    # int 3 infers i32: f32 * i32 computes in f64, stored back as f32
    scale(x8, out, 3)
    assert_bitwise_equal(out, (x8.astype(np.float64) * 3).astype(np.float32))
    keys = c.expect(2)
    assert ((F32, F32, ("i32", False, False, None)), (), (), (), True) in keys

    scale(x8, out, 2**40)
    assert_bitwise_equal(out, (x8.astype(np.float64) * 2.0**40).astype(np.float32))
    keys = c.expect(3)
    assert ((F32, F32, ("i64", False, False, None)), (), (), (), True) in keys

    # f64 arrays: the float scalar follows them to f64
    x64 = arr(8, np.float64)
    out64 = np.zeros(8)
    scale(x64, out64, 2.0)
    assert_bitwise_equal(out64, x64 * 2.0)
    keys = c.expect(4)
    assert ((F64, F64, ("f64", False, False, None)), (), (), (), True) in keys

    # the written array is the read one: the disjoint bit is False
    x = arr(8)
    expected = x * np.float32(2.0)
    scale(x, x, 2.0)
    assert_bitwise_equal(x, expected)
    keys = c.expect(5)
    assert ((F32, F32, ("f32", False, False, None)), (), (), (), False) in keys
    assert sorted(k[4] for k in keys) == [False, True, True, True, True]
    for k in keys:
        check_key(k)
        assert k[3] == ()

    # every earlier signature is a hit now
    for n in (8, 16, 32):
        scale(arr(n), np.zeros(n, np.float32), 2.0)
    scale(x8, out, 7)
    scale(x8, out, -2**40)
    scale(x64, out64, 0.5)
    assert_bitwise_equal(out64, x64 * 0.5)
    c.expect(5)
    assert len(scale.ir_templates()) == 1


def test_shape_read_in_body_is_keyed():
    @tack.kernel
    def rev(x, out):
        for i in range(x.shape[0]):
            out[i] = x[x.shape[0] - 1 - i]

    c = Counter(rev)
    for count, n in enumerate((8, 16, 32), 1):
        x = arr(n)
        out = np.zeros(n, np.float32)
        rev(x, out)
        assert_bitwise_equal(out, x[::-1].copy())
        keys = c.expect(count)
    assert sorted(k[3] for k in keys) == [(8,), (16,), (32,)]
    for k in keys:
        check_key(k)
        assert k[0] == (F32, F32)
        assert k[4] is True
    # a length seen before reuses its variant and still reverses correctly
    x = arr(16, seed=5)
    out = np.zeros(16, np.float32)
    rev(x, out)
    assert_bitwise_equal(out, x[::-1].copy())
    c.expect(3)
    assert len(rev.ir_templates()) == 1


def test_length_as_scalar_is_not_keyed():
    @tack.kernel
    def rev_n(x, out, n):
        for i in range(x.shape[0]):
            out[i] = x[n - 1 - i]

    c = Counter(rev_n)
    for n in (8, 16, 32):
        x = arr(n)
        out = np.zeros(n, np.float32)
        rev_n(x, out, n)
        assert_bitwise_equal(out, x[::-1].copy())
        (key,) = c.expect(1)
    assert check_key(key) == ((F32, F32, ("i32", False, False, None)), (), (), (), True)
    assert len(rev_n.ir_templates()) == 1


def test_stencil_range_start_is_not_keyed():
    @tack.kernel
    def stencil(x, out):
        for i in range(1, x.shape[0] - 1):
            out[i] = x[i - 1] + x[i + 1]

    c = Counter(stencil)
    for n in (8, 16, 32):
        x = arr(n)
        out = np.zeros(n, np.float32)
        stencil(x, out)
        expected = np.zeros(n, np.float32)
        expected[1:-1] = x[:-2] + x[2:]
        assert_bitwise_equal(out, expected)
        (key,) = c.expect(1)
    assert check_key(key) == ((F32, F32), (), (), (), True)
    assert len(stencil.ir_templates()) == 1


@pytest.mark.skipif(not hasattr(tack, "ndindex"), reason="tack.ndindex not built yet")
def test_ndindex_keys_row_length_only():
    @tack.kernel
    def copy2d(a, out):
        for i, j in tack.ndindex(a.shape[0], a.shape[1]):
            out[i, j] = a[i, j]

    c = Counter(copy2d)
    for count, shape in ((1, (4, 8)), (1, (16, 8)), (2, (4, 9))):
        a = arr(shape[0] * shape[1]).reshape(shape)
        out = np.zeros(shape, np.float32)
        copy2d(a, out)
        assert_bitwise_equal(out, a)
        keys = c.expect(count)
    # a.shape[1] and out.shape[1] are baked in; the row count is the launch
    assert sorted(k[3] for k in keys) == [(8, 8), (9, 9)]
    for k in keys:
        check_key(k)
        assert k[0] == (F32, F32)
        assert k[4] is True
    assert len(copy2d.ir_templates()) == 1


# ---- devices ---------------------------------------------------------------------

def test_device_with_options_has_its_own_cache(restore_default_device):
    @tack.kernel
    def add1(x, out):
        for i in range(x.shape[0]):
            out[i] = x[i] + 1.0

    shared = tack.device("cpu")
    assert shared is tack.device("cpu")
    one = tack.device("cpu", num_threads=1)
    assert one is not shared

    tack.set_default_device(shared)
    x = arr(1000)
    out = np.zeros(1000, np.float32)
    add1(x, out)
    assert_bitwise_equal(out, x + np.float32(1.0))
    assert len(add1.variants(device=shared)) == 1
    assert add1.variants() == add1.variants(device=shared)
    assert add1.variants(device=one) == []

    work = new_work()
    tack.set_default_device(one)
    out1 = np.zeros(1000, np.float32)
    add1(x, out1)
    assert_bitwise_equal(out1, x + np.float32(1.0))
    assert new_work() == work + 1, "the new device compiles its own variant"
    assert len(add1.variants(device=one)) == 1
    assert len(add1.variants(device=shared)) == 1
    assert add1.variants(device=one) == add1.variants(device=shared)

    # an f64 call on `one` only grows `one`'s cache
    x64 = arr(50, np.float64)
    out64 = np.zeros(50)
    add1(x64, out64)
    assert_bitwise_equal(out64, x64 + 1.0)
    assert len(add1.variants(device=one)) == 2
    assert len(add1.variants(device=shared)) == 1

    # a second device with the same options starts empty too
    other = tack.device("cpu", num_threads=1)
    assert add1.variants(device=other) == []

    tack.set_default_device("cpu")
    work = new_work()
    add1(x, out)
    assert new_work() == work, "back on the shared device: a hit"
    assert len(add1.variants()) == 1


# ---- lifetime ----------------------------------------------------------------

def make_triple():
    @tack.kernel
    def k(x, out):
        for i in range(x.shape[0]):
            out[i] = x[i] * 3.0
    return k


def make_plus_seven():
    @tack.kernel
    def k(x, out):
        for i in range(x.shape[0]):
            out[i] = x[i] + 7.0
    return k


def test_collected_kernel_releases_its_slot():
    k = make_triple()
    x = arr(64)
    out = np.zeros(64, np.float32)
    k(x, out)
    assert_bitwise_equal(out, x * np.float32(3.0))
    ref = weakref.ref(k)
    del k
    gc.collect()
    assert ref() is None, "the cache must not keep its kernel alive"


def test_new_kernel_never_runs_a_collected_kernels_code():
    x = arr(257)
    for round_ in range(40):
        k = make_triple() if round_ % 2 == 0 else make_plus_seven()
        out = np.zeros(257, np.float32)
        k(x, out)
        if round_ % 2 == 0:
            expected = x * np.float32(3.0)
        else:
            expected = x + np.float32(7.0)
        assert_bitwise_equal(out, expected)
        assert len(k.variants()) == 1
        del k
        gc.collect()


def rss_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def test_collected_kernels_free_their_code():
    x = arr(16)
    out = np.zeros(16, np.float32)

    def batch(count):
        gc.collect()
        before = rss_bytes()
        for _ in range(count):
            k = make_triple()
            k(x, out)
            del k
        gc.collect()
        return rss_bytes() - before

    batch(50)  # warm-up: the JIT's and the allocator's first growth
    first = batch(250)
    second = batch(250)
    assert_bitwise_equal(out, x * np.float32(3.0))
    if SANITIZED:
        pytest.skip("RSS is not measurable under AddressSanitizer (its quarantine); "
                    "the kernels' results were checked")
    mb = 1 << 20
    assert second < 3 * mb or second < first / 2, (
        f"RSS grew {first / mb:.1f} MB, then {second / mb:.1f} MB per 250 "
        "collected kernels")


# ---- the compile log ---------------------------------------------------------------

@pytest.fixture
def info_log(caplog):
    caplog.set_level(logging.INFO, logger="tack")
    return caplog


def tack_messages(caplog, level=None):
    return [r.getMessage() for r in caplog.records
            if (r.name == "tack" or r.name.startswith("tack."))
            and (level is None or r.levelno == level)]


def one_new_message(caplog, before):
    msgs = tack_messages(caplog)[before:]
    assert len(msgs) == 1, msgs
    return msgs[0]


def test_compile_log_explains_each_scale_variant(info_log):
    @tack.kernel
    def scale(x, out, a):
        for i in range(x.shape[0]):
            out[i] = x[i] * a

    x8 = arr(8)
    out = np.zeros(8, np.float32)
    seen = len(tack_messages(info_log))

    scale(x8, out, 2.0)
    msg = one_new_message(info_log, seen)
    assert "'scale'" in msg and "first variant" in msg, msg
    seen += 1

    # hits log nothing
    scale(arr(16), np.zeros(16, np.float32), 3.5)
    assert tack_messages(info_log)[seen:] == []

    scale(x8, out, 3)
    msg = one_new_message(info_log, seen)
    assert "'scale'" in msg and re.search(r"\bvariant 2\b", msg), msg
    assert re.search(r"\ba\b", msg) and "f32 -> i32" in msg, msg
    seen += 1

    scale(x8, out, 2**40)
    msg = one_new_message(info_log, seen)
    assert "'scale'" in msg and re.search(r"\bvariant 3\b", msg), msg
    assert re.search(r"\bparameter a\b", msg), msg
    assert "i32 -> i64" in msg and "1099511627776" in msg, msg
    seen += 1

    scale(arr(8, np.float64), np.zeros(8), 2.0)
    msg = one_new_message(info_log, seen)
    assert "'scale'" in msg and re.search(r"\bvariant 4\b", msg), msg
    assert "f32 -> f64" in msg and re.search(r"\bparameter x\b", msg), msg
    seen += 1

    x = arr(8)
    scale(x, x, 2.0)
    msg = one_new_message(info_log, seen)
    assert "'scale'" in msg and re.search(r"\bvariant 5\b", msg), msg
    assert "disjoint" in msg and "True -> False" in msg, msg
    assert re.search(r"\bout\b", msg) and re.search(r"\bx\b", msg), msg


def test_compile_log_names_the_shape_read_in_the_body(info_log):
    @tack.kernel
    def rev(x, out):
        for i in range(x.shape[0]):
            out[i] = x[x.shape[0] - 1 - i]

    seen = len(tack_messages(info_log))
    rev(arr(8), np.zeros(8, np.float32))
    msg = one_new_message(info_log, seen)
    assert "'rev'" in msg and "first variant" in msg, msg
    seen += 1
    x = arr(16)
    out = np.zeros(16, np.float32)
    rev(x, out)
    assert_bitwise_equal(out, x[::-1].copy())
    msg = one_new_message(info_log, seen)
    assert "'rev'" in msg and re.search(r"\bvariant 2\b", msg), msg
    assert "x.shape[0]" in msg and "8 -> 16" in msg, msg


def test_compile_log_warns_once_past_32_variants(info_log):
    @tack.kernel
    def rev_many(x, out):
        for i in range(x.shape[0]):
            out[i] = x[x.shape[0] - 1 - i]

    def warnings_():
        return [m for m in tack_messages(info_log, logging.WARNING)
                if "rev_many" in m]

    for n in range(1, 33):
        x = arr(n)
        out = np.zeros(n, np.float32)
        rev_many(x, out)
        assert_bitwise_equal(out, x[::-1].copy())
    assert len(rev_many.variants()) == 32
    assert warnings_() == [], "32 variants is not past 32"
    for n in range(33, 36):
        x = arr(n)
        out = np.zeros(n, np.float32)
        rev_many(x, out)
        assert_bitwise_equal(out, x[::-1].copy())
    assert len(rev_many.variants()) == 35
    found = warnings_()
    assert len(found) == 1, found
    assert "32 variants" in found[0] and "x.shape[0]" in found[0], found[0]
    assert "pass it as a scalar argument" in found[0], found[0]


def test_churn_warning_advice_fits_what_changed(info_log):
    # The 33rd variant differs from its nearest only in x's layout: the
    # advice is about layouts, not about scalars (issue 18, minor).
    @tack.kernel
    def rev_layout(x, out):
        for i in range(x.shape[0]):
            out[i] = x[x.shape[0] - 1 - i]

    for n in range(1, 33):
        rev_layout(arr(n), np.zeros(n, np.float32))
    x = arr(10)[::2]
    out = np.zeros(5, np.float32)
    rev_layout(x, out)
    assert_bitwise_equal(out, x[::-1].copy())
    found = [m for m in tack_messages(info_log, logging.WARNING) if "rev_layout" in m]
    assert len(found) == 1, found
    assert "whether x is C-contiguous" in found[0], found[0]
    assert "ascontiguousarray" in found[0] and "as a scalar" not in found[0], found[0]


LOG_SCRIPT = textwrap.dedent("""\
    import numpy as np
    import tack

    @tack.kernel
    def logged_scale(x, out, a):
        for i in range(x.shape[0]):
            out[i] = x[i] * a

    x = np.arange(8, dtype=np.float32)
    out = np.zeros(8, dtype=np.float32)
    logged_scale(x, out, 2.0)
    logged_scale(x, out, 2**40)
    assert (out == x * np.float32(2.0 ** 40)).all()
    print("done")
    """)


def run_script(tmp_path, **env_changes):
    path = tmp_path / "logged.py"
    path.write_text(LOG_SCRIPT)
    env = dict(os.environ)
    env.pop("TACK_LOG", None)
    env.update(env_changes)
    env["TACK_CACHE"] = "off"
    return subprocess.run([sys.executable, str(path)], env=env, capture_output=True,
                          text=True, timeout=60)


def test_tack_log_compile_prints_to_stderr(tmp_path):
    proc = run_script(tmp_path, TACK_LOG="compile")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "done"
    lines = [ln for ln in proc.stderr.splitlines() if "logged_scale" in ln]
    assert len(lines) == 2, proc.stderr
    assert "first variant" in lines[0], lines
    assert "f32 -> i64" in lines[1], lines


def test_no_compile_log_on_stderr_by_default(tmp_path):
    proc = run_script(tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "first variant" not in proc.stderr
    assert "logged_scale" not in proc.stderr, proc.stderr
