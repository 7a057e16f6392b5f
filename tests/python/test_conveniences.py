"""Issue 14's conveniences: tack.set_num_threads / TACK_NUM_THREADS, keyword
arguments in kernel calls, kernel.inspect_ir/llvm/asm, `python -m tack info`
and compile errors that say the fix."""
import os
import subprocess
import sys
import threading

import numpy as np
import pytest

import tack
from conftest import DTYPES, device_or_skip, line_of, random_values, store_cast


@tack.kernel
def scale(x, out, a):
    for i in range(x.shape[0]):
        out[i] = x[i] * a


@tack.kernel
def axpy(x, y, out, a):
    for i in range(x.shape[0]):
        out[i] = a * x[i] + y[i]


def run_python(code, **env):
    """Runs `code` in a fresh interpreter with env added; (rc, stdout, stderr)."""
    full = dict(os.environ)
    full.update(env)
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=full,
                       timeout=300)
    return p.returncode, p.stdout, p.stderr


# ---------------------------------------------------------------------------
# 1. tack.set_num_threads / TACK_NUM_THREADS
# ---------------------------------------------------------------------------

# Iteration i counts itself in, then spins until `need` iterations have
# counted in or `limit` rounds pass; an iteration that gave up counts a
# failure.  A chunk runs its iterations one after another, so at most one
# iteration per thread spins at a time: every iteration gets through only
# when `need` threads run the launch at once, and some give up when fewer
# can.
@tack.kernel
def rendezvous(arrived, failed, need, limit):
    for i in range(arrived.shape[0] - 1):
        tack.atomic_add(arrived, 0, 1)
        k = 0
        while tack.atomic_add(arrived, 0, 0) < need and k < limit:
            k += 1
        if k >= limit:
            tack.atomic_add(failed, 0, 1)


def rendezvous_failures(need, limit):
    # Enough iterations that the launch is split across the pool, few enough
    # per chunk that every thread's first chunk starts at once.
    iters = 64 * need
    arrived = np.zeros(iters + 1, np.int64)
    failed = np.zeros(1, np.int64)
    rendezvous(arrived, failed, need, limit)  # on the shared CPU device
    assert arrived[0] == iters
    return int(failed[0])


@pytest.fixture
def restore_threads():
    before = tack.get_num_threads()
    yield before
    tack.set_num_threads(before)


def test_set_num_threads_keeps_variants_and_results(restore_threads):
    x = np.arange(1 << 17, dtype=np.float32)
    out = np.zeros_like(x)
    scale(x, out, 2.0)
    scale(x.astype(np.float64), out.astype(np.float64), 2.0)
    keys = scale.variants()
    compiles = tack.stats()["compiles"]
    for n in (1, 3, 2, 5, restore_threads):
        tack.set_num_threads(n)
        assert tack.get_num_threads() == n
        assert tack.device("cpu").num_threads == n
        assert "%d threads" % n in tack.device("cpu").description
        out[:] = 0
        scale(x, out, 3.0)
        np.testing.assert_array_equal(out, x * np.float32(3.0))
        assert scale.variants() == keys
        assert tack.stats()["compiles"] == compiles
    # The device object is the same one: its cache was never dropped.
    assert tack.device("cpu") is tack.device("cpu")


def test_pool_really_runs_n_threads(restore_threads):
    for n in (2, 3, 4):
        tack.set_num_threads(n)
        # n threads meet: nobody gives up, however long they wait.
        assert rendezvous_failures(n, 2_000_000_000) == 0
        # n + 1 never meet at once: someone gives up (a short wait).
        assert rendezvous_failures(n + 1, 200_000) > 0
    tack.set_num_threads(1)
    assert rendezvous_failures(2, 200_000) > 0


def test_resize_while_another_thread_launches(restore_threads):
    x = np.arange(1 << 18, dtype=np.float32)  # large: the launch lets go of the GIL
    wrong = []
    stop = threading.Event()

    def launcher():
        out = np.zeros_like(x)
        while not stop.is_set():
            out[:] = 0
            scale(x, out, 2.0)
            if not np.array_equal(out, x * np.float32(2.0)):
                wrong.append(1)

    scale(x, np.zeros_like(x), 2.0)
    threads = [threading.Thread(target=launcher) for _ in range(2)]
    for t in threads:
        t.start()
    try:
        for n in [1, 4, 2, 3, 1, 2] * 5:
            tack.set_num_threads(n)
    finally:
        stop.set()
        for t in threads:
            t.join(60)
    assert not any(t.is_alive() for t in threads)
    assert not wrong


@pytest.mark.parametrize("bad, exc, phrase", [
    (0, ValueError, "from 1 to 256, not 0"),
    (-2, ValueError, "from 1 to 256, not -2"),
    (257, ValueError, "from 1 to 256, not 257"),
    (10 ** 40, ValueError, "from 1 to 256"),
    (2.0, TypeError, "takes an int"),
    ("4", TypeError, "takes an int"),
    (None, TypeError, "takes an int"),
    (True, TypeError, "takes an int"),
])
def test_set_num_threads_refuses(restore_threads, bad, exc, phrase):
    with pytest.raises(exc, match=phrase):
        tack.set_num_threads(bad)
    assert tack.get_num_threads() == restore_threads


def test_set_num_threads_takes_numpy_ints(restore_threads):
    tack.set_num_threads(np.int64(2))
    assert tack.get_num_threads() == 2


def test_private_devices_are_not_changed(restore_threads):
    one = tack.device("cpu", num_threads=1)
    tack.set_num_threads(3)
    assert one.num_threads == 1
    assert tack.device("cpu").num_threads == 3


def test_num_threads_env_var():
    code = ("import numpy as np, tack\n"
            "print(tack.get_num_threads(), tack.device('cpu').num_threads)\n"
            "print(tack.device('cpu', num_threads=1).num_threads)\n")
    rc, out, err = run_python(code, TACK_NUM_THREADS="3")
    assert rc == 0, err
    assert out.split() == ["3", "3", "1"]
    # The pool really has 3 threads.
    code = ("import sys; sys.path.insert(0, %r)\n"
            "import test_conveniences as t\n"
            "print(t.rendezvous_failures(3, 2_000_000_000), t.rendezvous_failures(4, 200_000) > 0)\n"
            % os.path.dirname(os.path.abspath(__file__)))
    rc, out, err = run_python(code, TACK_NUM_THREADS="3")
    assert rc == 0, err
    assert out.split() == ["0", "True"]


@pytest.mark.parametrize("value", ["0", "-1", "abc", "2.5", "100000"])
def test_num_threads_env_var_refused(value):
    rc, out, err = run_python("import tack; tack.get_num_threads()", TACK_NUM_THREADS=value)
    assert rc != 0
    assert "ValueError: TACK_NUM_THREADS must be a number of threads from 1 to 256, got '%s'" \
        % value in err


def test_set_num_threads_only_for_the_cpu():
    dev = device_or_skip("opencl")
    assert dev.num_threads >= 1  # compute units; nothing to resize


# ---------------------------------------------------------------------------
# 2. Keyword arguments
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["i8", "i32", "u16", "i64", "f32", "f64"])
def test_keyword_calls_match_positional(name):
    dt = DTYPES[name]
    n = 257
    x = random_values(dt, n, 1)
    y = random_values(dt, n, 2)
    a = 3 if np.dtype(dt).kind in "iu" else 0.5
    ref = np.zeros(n, dt)
    axpy(x, y, ref, a)
    keys = axpy.variants()
    compiles = tack.stats()["compiles"]
    calls = [
        lambda o: axpy(x, y, out=o, a=a),
        lambda o: axpy(x=x, y=y, out=o, a=a),
        lambda o: axpy(a=a, out=o, y=y, x=x),
        lambda o: axpy(x, a=a, y=y, out=o),
        lambda o: axpy(*(x, y), **{"out": o, "a": a}),
    ]
    for call in calls:
        out = np.zeros(n, dt)
        assert call(out) is None
        np.testing.assert_array_equal(out, ref)
    # The same variant: nothing new was compiled.
    assert axpy.variants() == keys
    assert tack.stats()["compiles"] == compiles
    # And the reference itself is right.
    if np.dtype(dt).kind == "f":
        np.testing.assert_allclose(ref, store_cast(a * x.astype(np.float64) + y, dt), rtol=1e-6)


def test_keyword_scalar_types_select_the_same_variant():
    @tack.kernel
    def scale_fresh(x, out, a):
        for i in range(x.shape[0]):
            out[i] = x[i] * a
    x = np.arange(16, dtype=np.float64)
    out = np.zeros_like(x)
    scale_fresh(x, out, 2)        # an int scalar
    keys = scale_fresh.variants()
    assert len(keys) == 1 and keys[0][0][2][0] == "i32"
    scale_fresh(x, out=out, a=2)
    scale_fresh(a=2, out=out, x=x)
    assert scale_fresh.variants() == keys
    scale_fresh(x, out, a=2.0)    # a float scalar: its own variant, as positionally
    keys = scale_fresh.variants()
    assert len(keys) == 2 and keys[1][0][2][0] == "f64"
    np.testing.assert_array_equal(out, x * 2.0)
    out[:] = 0
    scale_fresh(x, out, 2.0)
    assert scale_fresh.variants() == keys
    np.testing.assert_array_equal(out, x * 2.0)


def test_keyword_call_on_opencl():
    dev = device_or_skip("opencl")
    x = tack.array(np.arange(64, dtype=np.float32), device=dev)
    out = tack.zeros((64,), device=dev)
    scale(x, out=out, a=4.0)
    np.testing.assert_array_equal(out.numpy(), np.arange(64, dtype=np.float32) * 4)
    before = len(scale.variants(device=dev))
    scale(a=4.0, x=x, out=out)
    scale(x, out, 4.0)
    assert len(scale.variants(device=dev)) == before


@pytest.mark.parametrize("call, message", [
    (lambda x, o: scale(x, o, 2.0, a=1.0), "kernel 'scale' got multiple values for argument 'a'"),
    (lambda x, o: scale(x, o, b=1.0), "kernel 'scale' got an unexpected keyword argument 'b'"),
    (lambda x, o: scale(x, out=o), "kernel 'scale' missing 1 required positional argument: 'a'"),
    (lambda x, o: scale(a=1.0), "kernel 'scale' missing 2 required positional arguments: "
                                "'x' and 'out'"),
    (lambda x, o: axpy(out=o), "kernel 'axpy' missing 3 required positional arguments: "
                               "'x', 'y', and 'a'"),
    (lambda x, o: scale(x, o), "kernel 'scale' missing 1 required positional argument: 'a'"),
    (lambda x, o: scale(x, o, 1.0, 2.0), "kernel 'scale' takes 3 arguments (x, out, a) "
                                         "but 4 were given"),
    (lambda x, o: scale(x, o, 1.0, 2.0, a=1), "takes 3 arguments"),
])
def test_keyword_errors(call, message):
    x = np.arange(8, dtype=np.float32)
    out = np.full(8, 7, np.float32)
    with pytest.raises(TypeError) as e:
        call(x, out)
    assert message in str(e.value)
    np.testing.assert_array_equal(out, 7)  # nothing was written


def test_keyword_bad_value_names_the_parameter():
    x = np.arange(8, dtype=np.float32)
    with pytest.raises(TypeError, match="'out'"):
        scale(x, a=2.0, out="not an array")


# ---------------------------------------------------------------------------
# 3. Introspection
# ---------------------------------------------------------------------------

@tack.kernel
def add_into(left, right, total):
    for i in range(left.shape[0]):
        total[i] = left[i] + right[i]


def test_inspect_contents():
    x = np.ones(32, np.float32)
    out = np.zeros(32, np.float32)
    ir = add_into.inspect_ir(x, x, out)
    assert "kernel add_into(" in ir
    for name in ("left", "right", "total"):
        assert name in ir
    assert "left: array f32" in ir and "+" in ir
    llvm = add_into.inspect_llvm(x, x, out)
    assert "ModuleID = 'add_into'" in llvm
    for name in ("%left", "%right", "%total"):
        assert name in llvm
    assert "fadd" in llvm
    asm = add_into.inspect_asm(x, x, out)
    assert '.file\t"add_into"' in asm
    assert any(op in asm for op in ("addss", "addps", "vaddss", "vaddps", "fadd"))
    # f64: double arithmetic.
    d = np.ones(32, np.float64)
    assert "fadd" in add_into.inspect_llvm(d, d, np.zeros(32))
    assert "double" in add_into.inspect_llvm(d, d, np.zeros(32))
    asm = add_into.inspect_asm(d, d, np.zeros(32))
    assert any(op in asm for op in ("addsd", "addpd", "vaddsd", "vaddpd", "fadd"))
    # Integers: an integer add.
    i = np.ones(32, np.int32)
    assert " add " in add_into.inspect_llvm(i, i, np.zeros(32, np.int32))


@tack.kernel
def fresh_for_inspect(src, dst, k):
    for i in range(src.shape[0]):
        dst[i] = src[i] * k + 1


def test_inspect_compiles_new_variants_and_reuses_them():
    kern = fresh_for_inspect
    x = np.ones(16, np.float32)
    assert kern.variants() == []
    c0 = tack.stats()["compiles"]
    kern.inspect_ir(x, np.zeros(16, np.float32), 2.0)
    assert len(kern.variants()) == 1
    assert tack.stats()["compiles"] == c0 + 1
    # The same argument types: the same variant, for each kind of text, and
    # for the call itself.
    kern.inspect_llvm(x, np.zeros(16, np.float32), 3.0)
    kern.inspect_asm(x, dst=np.zeros(16, np.float32), k=4.0)
    out = np.zeros(16, np.float32)
    kern(x, out, 2.0)
    np.testing.assert_array_equal(out, 3.0)
    assert len(kern.variants()) == 1
    assert tack.stats()["compiles"] == c0 + 1
    # New types: a new variant, which the call then finds.
    kern.inspect_asm(np.ones(16, np.int64), np.zeros(16, np.int64), 2)
    assert len(kern.variants()) == 2
    assert tack.stats()["compiles"] == c0 + 2
    o64 = np.zeros(16, np.int64)
    kern(np.ones(16, np.int64), o64, 2)
    np.testing.assert_array_equal(o64, 3)
    assert tack.stats()["compiles"] == c0 + 2
    # Nothing ran: inspect writes no array.
    dst = np.full(16, 9, np.float32)
    kern.inspect_ir(x, dst, 2.0)
    np.testing.assert_array_equal(dst, 9)


def test_inspect_device_keyword_and_errors():
    x = np.ones(8, np.float32)
    one = tack.device("cpu", num_threads=1)
    text = scale.inspect_llvm(x, x.copy(), 2.0, device=one)
    assert "fmul" in text
    assert len(scale.variants(device=one)) == 1
    assert "fmul" in scale.inspect_llvm(x, x.copy(), 2.0, device="cpu")
    with pytest.raises(TypeError, match="missing 1 required positional argument: 'a'"):
        scale.inspect_ir(x, x)
    with pytest.raises(TypeError, match="unexpected keyword argument 'devise'"):
        scale.inspect_ir(x, x, 2.0, devise="cpu")
    with pytest.raises(ValueError, match="unknown device"):
        scale.inspect_ir(x, x, 2.0, device="nope")


@tack.kernel
def uses_device_name(device, out):
    for i in range(out.shape[0]):
        out[i] = device[i]


def test_inspect_kernel_parameter_named_device():
    x = np.ones(8, np.float32)
    text = uses_device_name.inspect_ir(device=x, out=x.copy())
    assert "device: array f32" in text


def test_inspect_debug_variant():
    x = np.ones(8, np.float32)
    tack.set_debug(True)
    try:
        ir = scale.inspect_ir(x, x.copy(), 2.0)
    finally:
        tack.set_debug(False)
    assert "kernel scale(" in ir
    assert ir != scale.inspect_ir(x, x.copy(), 2.0)  # bounds checks in the debug one


def test_inspect_on_opencl():
    dev = device_or_skip("opencl")
    x = tack.array(np.ones(16, np.float32), device=dev)
    out = tack.zeros((16,), device=dev)
    before = len(add_into.variants(device=dev))
    src = add_into.inspect_llvm(x, x, out)
    assert "__kernel" in src and "+" in src
    assert len(add_into.variants(device=dev)) == before + 1
    assert "kernel add_into(" in add_into.inspect_ir(x, x, out)
    with pytest.raises(ValueError, match="OpenCL driver gives no assembly"):
        add_into.inspect_asm(x, x, out)
    # The arguments are what a call on the device takes: host arrays are
    # refused as a call refuses them (tack.opencl.source takes any).
    h = np.ones(16, np.float32)
    with pytest.raises(TypeError, match="host array"):
        add_into.inspect_llvm(h, h, np.zeros(16, np.float32), device=dev)
    assert add_into.inspect_llvm(x, x, out, device=dev) == src
    assert len(add_into.variants(device=dev)) == before + 1


# ---------------------------------------------------------------------------
# 4. python -m tack info
# ---------------------------------------------------------------------------

def test_info_command():
    env = dict(os.environ, TACK_NUM_THREADS="2", TACK_DEBUG="0", TACK_CACHE="read")
    env.pop("TACK_LOG", None)
    p = subprocess.run([sys.executable, "-m", "tack", "info"], capture_output=True, text=True,
                       env=env, timeout=300)
    assert p.returncode == 0, p.stderr
    out = p.stdout
    lines = {line.split(":", 1)[0].strip(): line.split(":", 1)[1].strip()
             for line in out.splitlines() if ":" in line and not line.startswith(" ")}
    assert lines["tack"] == tack.__version__
    assert lines["llvm"].startswith(tack._tack._build_info()["llvm_version"])
    assert lines["llvm"].split(".")[0].isdigit()
    triple, cpu, features = tack.device("cpu").target.split(":", 2)
    assert lines["cpu target"] == triple
    assert lines["cpu name"] == cpu
    enabled = [f[1:] for f in features.split(",") if f.startswith("+")]
    assert enabled and lines["cpu features"].split() == enabled
    assert "  cpu: CPU, 2 threads" in out.splitlines()
    assert "opencl" in out and "cuda" in out
    # Every backend of the reference's table has a line, available or not.
    assert any(ln.startswith("  level_zero") for ln in out.splitlines())
    if sys.platform != "darwin":
        assert ('  metal: not available (tack.device("metal"): no Metal: the Objective-C runtime '
                "(/usr/lib/libobjc.A.dylib) could not be loaded; Metal needs macOS") in out
    else:  # pragma: no cover - a Mac: its GPU, or why not
        assert any(ln.startswith("  metal") for ln in out.splitlines())
    assert "ocloc" in lines and "TACK_OCLOC" in out
    assert "cache directory" in lines and "cache size" in lines
    assert "TACK_NUM_THREADS=2" in out
    assert "TACK_DEBUG=0" in out
    assert "TACK_CACHE=read" in out
    assert "TACK_LOG (unset" in out


# ---------------------------------------------------------------------------
# 5. Compile errors that say the fix
# ---------------------------------------------------------------------------

HERE = os.path.abspath(__file__)


def here(tag):
    """The line of this file marked with `#@tag`."""
    return line_of(HERE, "#@" + tag)


def compile_error(build):
    with pytest.raises(tack.CompileError) as e:
        build()
    return e.value


def plain_helper(v):
    return v * 2


def test_error_indexing_unknown_name():
    def build():
        @tack.kernel
        def reads_typo(x, out):
            for i in range(x.shape[0]):
                out[i] = xs[i]  # noqa: F821  #@typo-read
        reads_typo(np.ones(4, np.float32), np.zeros(4, np.float32))
    err = compile_error(build)
    assert "kernel 'reads_typo'" in str(err)
    assert "name 'xs' is not defined" in str(err)
    assert "only array parameters" not in str(err)
    assert err.lineno == here("typo-read")

    def build_store():
        @tack.kernel
        def writes_typo(x, out):
            for i in range(x.shape[0]):
                result[i] = x[i]  # noqa: F821  #@typo-write
        writes_typo(np.ones(4, np.float32), np.zeros(4, np.float32))
    err = compile_error(build_store)
    assert "kernel 'writes_typo'" in str(err)
    assert "name 'result' is not defined" in str(err)
    assert err.lineno == here("typo-write")


LIMIT = 4


def test_error_indexing_a_global_value():
    def build():
        @tack.kernel
        def reads_global(x, out):
            for i in range(x.shape[0]):
                out[i] = LIMIT[i]  #@global-index
        reads_global(np.ones(4, np.float32), np.zeros(4, np.float32))
    err = compile_error(build)
    assert "'LIMIT' is not an array parameter of the kernel" in str(err)
    assert "pass 'LIMIT' as an argument" in str(err)
    assert err.lineno == here("global-index")


def test_error_calling_plain_function():
    def build():
        @tack.kernel
        def calls_plain(x, out):
            for i in range(x.shape[0]):
                out[i] = plain_helper(x[i])  #@plain-call
        calls_plain(np.ones(4, np.float32), np.zeros(4, np.float32))
    err = compile_error(build)
    assert "kernel 'calls_plain'" in str(err)
    assert "decorate it with @tack.func" in str(err)
    assert err.lineno == here("plain-call")


def test_error_return_value_in_kernel():
    def build_inside():
        @tack.kernel
        def returns_inside(x, out):
            for i in range(x.shape[0]):
                return x[i]  #@return-inside
        returns_inside(np.ones(4, np.float32), np.zeros(4, np.float32))
    err = compile_error(build_inside)
    assert "kernel 'returns_inside'" in str(err)
    assert "write the result into an output array passed as an argument" in str(err)
    assert err.lineno == here("return-inside")

    def build_after():
        @tack.kernel
        def returns_after(x, out):
            for i in range(x.shape[0]):
                out[i] = x[i]
            return out  #@return-after
        returns_after(np.ones(4, np.float32), np.zeros(4, np.float32))
    err = compile_error(build_after)
    assert "kernel 'returns_after'" in str(err)
    assert "write the result into an output array passed as an argument" in str(err)
    assert err.lineno == here("return-after")

    # A bare return ends the iteration (issue 19: Warp's `if i >= n: return`).
    @tack.kernel
    def returns_bare(x, out):
        for i in range(x.shape[0]):
            if x[i] > 0:
                return
            out[i] = x[i]
    x = np.array([1.0, -2.0, 3.0, -4.0], np.float32)
    out = np.zeros(4, np.float32)
    returns_bare(x, out)
    np.testing.assert_array_equal(out, [0.0, -2.0, 0.0, -4.0])


def test_return_in_device_function_still_allowed():
    @tack.func
    def twice(v):
        return v * 2

    @tack.kernel
    def uses_twice(x, out):
        for i in range(x.shape[0]):
            out[i] = twice(x[i])
    x = np.arange(4, dtype=np.float32)
    out = np.zeros_like(x)
    uses_twice(x, out)
    np.testing.assert_array_equal(out, x * 2)


@pytest.mark.parametrize("spec", ["cpu", "opencl"])
def test_oversized_array_names_bytes_and_device(spec):
    """Issue 22 item 7: how many bytes were asked for, where, for what."""
    dev = device_or_skip(spec)
    n = 1 << 40  # 4 TiB of f32: more than any machine here gives
    for make in (tack.empty, tack.zeros):
        with pytest.raises(MemoryError) as info:
            make((n,), device=dev)
        msg = str(info.value)
        assert msg.startswith("cannot allocate %d bytes (4.0 TiB) on device '%s' for an array "
                              "of shape (%d,) and dtype f32" % (4 * n, dev.name, n)), msg
    with pytest.raises(MemoryError, match=r"cannot allocate %d bytes \(6\.0 TiB\) on device "
                                          r"'%s' for an array of shape \(%d, 2\) and dtype "
                                          r"vec3f" % (24 * (n // 4), dev.name, n // 4)):
        tack.empty((n // 4, 2), dtype=tack.vec3f, device=dev)
    with pytest.raises(ValueError, match=r"an array of shape \(4611686018427387904, 4\) and "
                                         r"dtype f64 is too big: its size in bytes is more than "
                                         r"9223372036854775807"):
        tack.empty((1 << 62, 4), dtype=tack.f64, device=dev)
