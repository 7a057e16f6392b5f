"""print() in kernels (issue 19, item 6): scalars, vectors and string
literals, formatted as docs/language.md ("Printing") says, on every device;
the lines are written out before the call returns.  Lines of different
iterations come in any order, so most tests compare sorted lines.

Each test reads file descriptor 1 through pytest's `capfd`: the CPU's
printf and the OpenCL driver's both write there."""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import tack
from test_cuda import check_ptx, needs_nvrtc

pytestmark = pytest.mark.every_device


def lines_of(capfd):
    out, _ = capfd.readouterr()
    return out.splitlines()


def py_float(v, bits):
    """The reference: what docs/language.md says a float prints as."""
    v = float(v)
    if v != v:
        return "nan"
    if v in (float("inf"), float("-inf")):
        return "inf" if v > 0 else "-inf"
    s = ("%.9g" if bits == 32 else "%.17g") % v
    if v == int(v) and abs(v) < (1e9 if bits == 32 else 1e17):
        s += ".0"
    return s


# ---- kernels ----------------------------------------------------------------

@tack.kernel
def show_each(x):
    for i in range(x.shape[0]):
        print(x[i])


@tack.kernel
def show_labelled(x):
    for i in range(x.shape[0]):
        print("item", i, "is", x[i])


@tack.kernel
def show_texts(x):
    for i in range(x.shape[0]):
        print("100% done: %d %s %%", i, 'a "quoted" \'word\'', "tab\there", "é→", "back\\slash")


@tack.kernel
def show_sep_end(x):
    for i in range(x.shape[0]):
        print(i, x[i], "z", sep=", ", end=";\n")
        print()
        print("a", end="")
        print("b", sep="-", flush=True)


@tack.kernel
def show_bools(b, x):
    for i in range(x.shape[0]):
        print(b[i], x[i] > 0.5, not b[i], True)


@tack.kernel
def show_scalars(x, n, u, f):
    for i in range(x.shape[0]):
        print(n, u, f, 7, 2.5, False, -3)


@tack.kernel
def show_vectors(v, w):
    for i in range(v.shape[0]):
        print("v", v[i], "w", w[i], v[i] * 2.0)


@tack.func
def report(label, value):
    if value > 0:
        print(label, "positive:", value)
    else:
        print(label, "not positive")


@tack.kernel
def show_from_function(x):
    for i in range(x.shape[0]):
        report(i, x[i])


@tack.kernel
def show_if_negative(x, out):
    for i in range(x.shape[0]):
        out[i] = x[i] * 2.0
        if x[i] < 0:
            print("negative at", i, ":", x[i])


# ---- integers, floats, bools ------------------------------------------------

@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32,
                                   np.int64, np.uint64])
def test_integers_at_their_bounds(capfd, dtype):
    info = np.iinfo(dtype)
    x = np.array([info.min, info.min + 1, -1 if info.min else 0, 0, 1, info.max - 1, info.max],
                 dtype=dtype)
    show_each(x)
    assert sorted(lines_of(capfd)) == sorted(str(int(v)) for v in x)


def test_u64_max_and_i64_min_exactly(capfd):
    show_each(np.array([2**64 - 1], dtype=np.uint64))
    assert lines_of(capfd) == ["18446744073709551615"]
    show_each(np.array([-2**63], dtype=np.int64))
    assert lines_of(capfd) == ["-9223372036854775808"]


FLOATS = [0.0, -0.0, 1.0, -2.5, 3.0, 0.1, 1 / 3, 1e-5, 123456.75, 1e8, 999999936.0, 1e9, 1e15,
          1e16, 1e17, 1e20, 3e38, -1e-30, float("inf"), float("-inf"), float("nan")]


@pytest.mark.parametrize("dtype,bits", [(np.float32, 32), (np.float64, 64)])
def test_floats(capfd, dtype, bits):
    x = np.array(FLOATS, dtype=dtype)
    show_each(x)
    got = lines_of(capfd)
    assert sorted(got) == sorted(py_float(v, bits) for v in x)
    # Every finite value reads back as itself.
    for s in got:
        if s not in ("nan", "inf", "-inf"):
            assert dtype(float(s)) in x, s


def test_float_spellings(capfd):
    x = np.array([3.0, -0.0, 0.1, 1e16, 1e17, float("nan")], dtype=np.float64)
    show_each(x)
    assert sorted(lines_of(capfd)) == sorted(["3.0", "-0.0", "0.10000000000000001",
                                               "10000000000000000.0", "1e+17", "nan"])
    show_each(np.array([0.1, 16777216.0, 1e9, 2.5e-45], dtype=np.float32))
    assert sorted(lines_of(capfd)) == sorted(["0.100000001", "16777216.0", "1e+09",
                                               "2.80259693e-45"])


def test_nan_of_either_sign_prints_as_python_does(capfd):
    x = np.array([np.nan, -np.nan], dtype=np.float64)
    assert np.signbit(x).tolist() == [False, True]
    show_each(x)
    assert lines_of(capfd) == ["nan", "nan"]
    show_each(x.astype(np.float32))
    assert lines_of(capfd) == ["nan", "nan"]


def test_bools(capfd):
    b = np.array([True, False, True], dtype=np.bool_)
    x = np.array([0.0, 1.0, 0.75], dtype=np.float32)
    show_bools(b, x)
    assert sorted(lines_of(capfd)) == sorted(
        f"{bv} {xv > 0.5} {not bv} True" for bv, xv in zip(b.tolist(), x.tolist()))


def test_scalar_arguments_and_literals(capfd):
    x = np.zeros(1, np.float32)
    show_scalars(x, -2**31, 2**64 - 1, 0.5)
    assert lines_of(capfd) == ["-2147483648 18446744073709551615 0.5 7 2.5 False -3"]
    show_scalars(x, 2**40, 3, -1.25)
    assert lines_of(capfd) == ["1099511627776 3 -1.25 7 2.5 False -3"]


def test_empty_launch_prints_nothing(capfd):
    show_each(np.zeros(0, np.float32))
    assert lines_of(capfd) == []


# ---- texts, separators, vectors -----------------------------------------------

def test_string_literals_with_percent_signs_and_escapes(capfd):
    show_texts(np.zeros(2, np.float32))
    expected = ["100% done: %d %s %% " + str(i) + " a \"quoted\" 'word' tab\there é→ back\\slash"
                for i in range(2)]
    assert sorted(lines_of(capfd)) == expected


def test_sep_end_and_empty_print(capfd):
    show_sep_end(np.array([1.5], np.float32))
    assert lines_of(capfd) == ["0, 1.5, z;", "", "ab"]


def test_vectors_print_as_tuples(capfd, device):
    v = tack.empty((2,), dtype=tack.vec3f, device=device)
    tack.copyto(v, np.array([[1, 2, 3], [-0.5, 0.1, 1e10]], np.float32))
    w = tack.empty((2,), dtype=tack.vec2i, device=device)
    tack.copyto(w, np.array([[1, -2], [2**31 - 1, -2**31]], np.int32))
    show_vectors(v, w)
    assert sorted(lines_of(capfd)) == sorted([
        "v (1.0, 2.0, 3.0) w (1, -2) (2.0, 4.0, 6.0)",
        "v (-0.5, 0.100000001, 1e+10) w (2147483647, -2147483648) (-1.0, 0.200000003, 2e+10)"])


# ---- iterations, device functions, conditions ----------------------------------

def test_many_iterations_each_line_whole(capfd):
    n = 2000
    x = (np.arange(n, dtype=np.float64) * 0.25) - 7
    show_labelled(x)
    assert sorted(lines_of(capfd)) == sorted(f"item {i} is {py_float(v, 64)}"
                                            for i, v in enumerate(x))


def test_print_in_a_device_function(capfd):
    x = np.array([2.0, -1.0, 0.0, 0.5], np.float32)
    show_from_function(x)
    assert sorted(lines_of(capfd)) == sorted(["0 positive: 2.0", "1 not positive",
                                               "2 not positive", "3 positive: 0.5"])


def test_print_under_a_condition(capfd):
    x = np.array([1.0, -2.0, 3.0, -4.5], np.float32)
    out = np.zeros_like(x)
    show_if_negative(x, out)
    assert sorted(lines_of(capfd)) == ["negative at 1 : -2.0", "negative at 3 : -4.5"]
    np.testing.assert_array_equal(out, x * 2)


@tack.kernel
def show_warm(x):
    for i in range(x.shape[0]):
        print(x[i])


def test_every_call_prints_warm_calls_too(capfd):
    x = np.array([1, 2], np.int32)
    for _ in range(4):  # the later calls take the dispatch fast path
        show_warm(x)
    assert sorted(lines_of(capfd)) == ["1"] * 4 + ["2"] * 4
    assert len(show_warm.variants()) == 1


def test_debug_mode_kernel_prints(capfd):
    @tack.kernel(debug=True)
    def show_checked(x):
        for i in range(x.shape[0]):
            print("at", i, x[i])
    show_checked(np.array([5, 6], np.int64))
    assert sorted(lines_of(capfd)) == ["at 0 5", "at 1 6"]


# ---- output order and the disk cache, in fresh processes -----------------------

def _child(tmp_path, device, body, **env_extra):
    script = tmp_path / "child.py"
    script.write_text(textwrap.dedent("""\
        import numpy as np
        import tack
        tack.set_default_device(%r)

        @tack.kernel
        def greet(x):
            for i in range(x.shape[0]):
                print("kernel", i, x[i])
        """ % device.name) + textwrap.dedent(body))
    env = {k: v for k, v in os.environ.items() if not k.startswith("TACK_")}
    env.update({k: str(v) for k, v in env_extra.items()})
    # stdout is a pipe: Python's own buffer and C's stdout both hold lines.
    return subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          env=env, timeout=300)


def test_lines_keep_their_order_with_python_prints(tmp_path, device):
    p = _child(tmp_path, device, """\
        x = tack.array(np.array([1.5], np.float32))
        print("before")
        greet(x)
        print("between")
        greet(x)
        print("after")
        """)
    assert p.returncode == 0, p.stderr
    assert p.stdout.splitlines() == ["before", "kernel 0 1.5", "between", "kernel 0 1.5", "after"]


def test_a_disk_cached_variant_prints_the_same(tmp_path, device):
    cache = tmp_path / "cache"
    cache.mkdir(mode=0o700)
    body = """\
        x = tack.array(np.array([1.5, -0.0], np.float64))
        greet(x)
        print("disk_hits", tack.stats()["disk_hits"])
        """
    first = _child(tmp_path, device, body, TACK_CACHE="write", TACK_CACHE_DIR=cache)
    second = _child(tmp_path, device, body, TACK_CACHE="write", TACK_CACHE_DIR=cache)
    assert first.returncode == 0 and second.returncode == 0, first.stderr + second.stderr
    a, b = first.stdout.splitlines(), second.stdout.splitlines()
    assert a[-1] == "disk_hits 0" and b[-1] == "disk_hits 1", (a, b)
    assert sorted(a[:-1]) == sorted(b[:-1]) == ["kernel 0 1.5", "kernel 1 -0.0"]


# ---- refusals -------------------------------------------------------------------

def _compile_error(build, *args):
    with pytest.raises(tack.CompileError) as info:
        build(*args)
    return info.value


def test_printing_an_array_is_refused():
    @tack.kernel
    def print_array(x, out):
        for i in range(x.shape[0]):
            out[i] = x[i]
            print(x)
    err = _compile_error(print_array, np.zeros(2, np.float32), np.zeros(2, np.float32))
    assert "print() cannot print 'x', an array" in str(err) and "print_array" in str(err)

    @tack.kernel
    def print_local_array(out):
        for i in range(out.shape[0]):
            m = tack.local(4, tack.f32)
            print(m)
    err = _compile_error(print_local_array, np.zeros(2, np.float32))
    assert "print() cannot print 'm', an array" in str(err)


@pytest.mark.parametrize("call,message", [
    ("print(x[i], file=x)", "file= is not supported"),
    ("print(x[i], flush=1)", "flush= must be True or False"),
    ("print(x[i], sep=x[i])", "sep= must be a string literal"),
    ("print(x[i], end=1)", "end= must be a string literal"),
    ("print(x[i], color='red')", "unexpected keyword argument 'color'"),
    ("y = print(x[i])", "print() gives no value"),
    ("y = 'text'", "strings are only printed"),
    ("print(f'{x[i]:3}')", "f-string format specifications"),
    ("y = f'{i}'", "strings are only printed"),
    ("print('%d' % i)", "strings are only printed"),
    ("print('a\\0b')", "cannot print a NUL character"),
])
def test_refusals_name_the_line(tmp_path, call, message):
    src = textwrap.dedent("""\
        import tack

        @tack.kernel
        def refused(x):
            for i in range(x.shape[0]):
                %s
        """) % call
    path = tmp_path / "refused_mod.py"
    path.write_text(src)

    def build():
        ns = {}
        exec(compile(src, str(path), "exec"), ns)  # f-strings are refused here
        ns["refused"](np.zeros(2, np.float32))
    err = _compile_error(build)
    assert message in str(err), str(err)
    assert err.lineno == 6, str(err)


# ---- other dialects -------------------------------------------------------------

@needs_nvrtc
def test_cuda_ptx_of_printing_kernels():
    x = np.zeros(4, np.float32)
    check_ptx(show_labelled.kernel if hasattr(show_labelled, "kernel") else show_labelled, x)
    kern = show_bools.kernel if hasattr(show_bools, "kernel") else show_bools
    check_ptx(kern, np.zeros(4, np.bool_), x)
    ptx = tack.cuda.compile(kern, np.zeros(4, np.bool_), x, arch="sm_80")
    assert "vprintf" not in ptx and "atom.global.add.u32" in ptx  # a record, not printf
    scal = show_scalars.kernel if hasattr(show_scalars, "kernel") else show_scalars
    check_ptx(scal, np.zeros(1, np.float64), -1, 2**64 - 1, 0.5)


def test_hip_and_metal_sources_write_print_records():
    kern = show_texts.kernel if hasattr(show_texts, "kernel") else show_texts
    x = np.zeros(2, np.float32)
    for src in (tack.hip.source(kern, x), tack.metal.source(kern, x)):
        assert "tk_print_at(tk_print," in src and "printf" not in src, src


def test_a_device_function_named_print_is_called_not_printed(tmp_path, capfd):
    src = textwrap.dedent("""\
        import tack

        @tack.func
        def print(out, i):
            out[i] = 7

        @tack.kernel
        def calls_it(out):
            for i in range(out.shape[0]):
                print(out, i)

        @tack.kernel
        def with_keyword(out):
            for i in range(out.shape[0]):
                print(out, i=i)
        """)
    path = tmp_path / "shadow_mod.py"
    path.write_text(src)
    ns = {}
    exec(compile(src, str(path), "exec"), ns)
    out = np.zeros(3, np.int32)
    ns["calls_it"](out)
    assert out.tolist() == [7, 7, 7]
    assert lines_of(capfd) == []
    out[:] = 0
    ns["with_keyword"](out)  # keyword arguments reach the device function too
    assert out.tolist() == [7, 7, 7]
    assert lines_of(capfd) == []


# ---- f-strings ------------------------------------------------------------------

@tack.kernel
def show_fstrings(x, v):
    for i in range(x.shape[0]):
        print(f"x[{i}] = {x[i]}", f"{i=}", f"{x[i] * 2 = }", f"{{braces}} {v[i]}!", "plain",
              sep=" | ")
        print(f"""two
{i +
 1} lines""", rf"raw\t{i}", f"\t{i}\\ 100%")


def test_fstrings(capfd, device):
    x = np.array([1.5, -2.0], np.float32)
    v = tack.empty((2,), dtype=tack.vec2f, device=device)
    tack.copyto(v, np.array([[1, 2], [3, 0.1]], np.float32))
    show_fstrings(x, v)
    got = lines_of(capfd)
    expected = []
    for i in range(2):
        expected.append(f"x[{i}] = {py_float(x[i], 32)} | i={i} | x[i] * 2 = "
                        f"{py_float(x[i] * 2, 32)} | {{braces}} "
                        f"({py_float(v.numpy()[i][0], 32)}, {py_float(v.numpy()[i][1], 32)})! | plain")
        expected.append("two")
        expected.append(f"{i + 1} lines raw\\t{i} \t{i}\\ 100%")
    # Each print's lines stay together: compare the iterations' blocks.
    assert sorted(got) == sorted(expected)


@pytest.mark.parametrize("text,message", [
    ("f'{x[i]:.3f}'", "f-string format specifications"),
    ("f'{x[i]!r}'", "conversions ('!...')"),
    ("f'{x}'", "print() cannot print 'x', an array"),
])
def test_fstring_refusals(tmp_path, text, message):
    src = textwrap.dedent("""\
        import tack

        @tack.kernel
        def refused(x, out):
            for i in range(x.shape[0]):
                out[i] = x[i]
                print(%s)
        """) % text
    path = tmp_path / "refused_f.py"
    path.write_text(src)

    def build():
        ns = {}
        exec(compile(src, str(path), "exec"), ns)
        ns["refused"](np.zeros(2, np.float32), np.zeros(2, np.float32))
    err = _compile_error(build)
    assert message in str(err), str(err)
    assert err.lineno == 7, str(err)
