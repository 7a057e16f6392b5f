"""Kernels and device functions whose text is not in a file (issue 22 item 4):
exec'd code with the text handed over (tack.kernel(fn, source=...),
@tack.kernel(source=...), @tack.func(source=...)), pseudo-files linecache
knows (IPython's cells), and `python -c`.  Errors name the pseudo-file and
lines of the given text; a text that does not define the function is
refused; the disk cache tells two exec'd kernels of one name apart by their
text.  Also: lambdas are refused naming the lambda's own line (issue 18)."""
import json
import linecache
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import tack
from conftest import line_of

PY = sys.executable

SCALE = """\
import tack

@tack.kernel(source=SRC)
def affine(x, out, a):
    for i in range(x.shape[0]):
        out[i] = x[i] * a + 1.0
"""


def run_exec(src, name, **globs):
    g = {"tack": tack, **globs}
    exec(compile(src, "<string>", "exec"), g)
    return g[name]


def test_exec_decorator_form_runs_and_matches_numpy():
    k = run_exec(SCALE, "affine", SRC=SCALE)
    assert isinstance(k, tack.Kernel)
    x = np.arange(100, dtype=np.float32)
    out = np.zeros_like(x)
    k(x, out, 2.5)
    np.testing.assert_array_equal(out, x * np.float32(2.5) + np.float32(1.0))


def test_exec_call_form_and_device_function():
    src = textwrap.dedent("""\
        # a generated module: a device function and a kernel calling it
        @tack.func(source=SRC)
        def sq(v):
            return v * v

        def sumsq(x, y, out):
            for i in range(x.shape[0]):
                out[i] = sq(x[i]) + sq(y[i])
        """)
    g = {"tack": tack, "SRC": src}
    exec(compile(src, "<generated>", "exec"), g)
    k = tack.kernel(g["sumsq"], source=src)
    x = np.linspace(-2, 2, 33)
    y = np.linspace(3, -1, 33)
    out = np.zeros_like(x)
    k(x, y, out)
    np.testing.assert_array_equal(out, x * x + y * y)
    # tack.func's call form marks the function the same way
    f = run_exec("def cube(v):\n    return v * v * v\n", "cube")
    assert tack.func(f, source="def cube(v):\n    return v * v * v\n") is f


def test_exec_without_source_says_how_to_hand_it_over():
    f = run_exec("def k(x):\n    for i in range(x.shape[0]):\n        x[i] = 0\n", "k")
    with pytest.raises(OSError, match=r"defined in <string>.*tack\.kernel\(k, source=text\)"):
        tack.kernel(f)
    helper = tack.func(run_exec("def helper(v):\n    return v\n", "helper"))

    @tack.kernel
    def uses(x):
        for i in range(x.shape[0]):
            x[i] = helper(x[i])
    # tack.func reads the text when a kernel first needs it
    with pytest.raises(tack.CompileError, match="source Tack cannot read") as info:
        uses(np.zeros(2))
    assert isinstance(info.value.__cause__, OSError)
    assert "tack.func(helper, source=text)" in str(info.value.__cause__)


def test_source_may_hold_only_the_function():
    """The text handed over need not be the exec'd text: a single def of the
    name anywhere in it is taken, and lines count from its first line."""
    full = "\n\n\ndef shift(x, out):\n    for i in range(x.shape[0]):\n        out[i] = x[i] + 3\n"
    f = run_exec(full, "shift")
    only = "def shift(x, out):\n    for i in range(x.shape[0]):\n        out[i] = x[i] + 3\n"
    k = tack.kernel(f, source=only)
    x = np.arange(5, dtype=np.int64)
    out = np.zeros_like(x)
    k(x, out)
    np.testing.assert_array_equal(out, x + 3)


def test_compile_error_names_the_pseudo_file_and_line():
    src = "\n# generated\ndef bad(x, out):\n    for i in range(x.shape[0]):\n        out[i] = {x[i]}\n"
    f = run_exec(src, "bad")
    with pytest.raises(tack.CompileError) as info:
        tack.kernel(f, source=src)
    assert info.value.filename == "<string>"
    assert info.value.lineno == 5  # the line in src
    assert str(info.value).startswith("<string>:5:")
    # a name error found while lowering (first call) names it too
    src2 = "def late(x):\n    for i in range(x.shape[0]):\n        x[i] = undefined_name\n"
    k = tack.kernel(run_exec(src2, "late"), source=src2)
    with pytest.raises(tack.CompileError) as info:
        k(np.zeros(3))
    assert (info.value.filename, info.value.lineno) == ("<string>", 3)


def test_bounds_error_names_the_pseudo_file_and_line():
    src = ("\n\ndef gather(x, idx, out):\n    for i in range(out.shape[0]):\n"
           "        out[i] = x[idx[i]]\n")
    k = tack.kernel(run_exec(src, "gather"), source=src, debug=True)
    x = np.arange(4.0)
    out = np.zeros(2)
    k(x, np.array([1, 3]), out)
    np.testing.assert_array_equal(out, [1.0, 3.0])
    with pytest.raises(IndexError, match=r"kernel 'gather', <string>:5: index \(9,\)"):
        k(x, np.array([0, 9]), out)


def test_source_that_does_not_define_the_function_is_refused():
    f = run_exec("def k(x, out):\n    pass\n", "k")
    with pytest.raises(ValueError, match="the source given for 'k' does not define a function "
                                         "named 'k'"):
        tack.kernel(f, source="def other(x, out):\n    pass\n")
    with pytest.raises(ValueError, match="defines it with 1 parameter at line 1, but the "
                                         "function has 2"):
        tack.kernel(f, source="def k(x):\n    pass\n")
    with pytest.raises(ValueError, match="the source given for 'k' is not valid Python"):
        tack.kernel(f, source="def k(x, out:\n")
    with pytest.raises(ValueError, match="defines 'k' 2 times, none of them at line 1"):
        tack.kernel(f, source="\ndef k(x, out):\n    pass\ndef k(x, out):\n    pass\n")
    with pytest.raises(TypeError, match="source text as a str, not bytes"):
        tack.kernel(f, source=b"def k(x, out): pass")
    with pytest.raises(ValueError, match="does not define a function named 'k'"):
        tack.func(f, source="x = 1\n")


def test_linecache_pseudo_file_needs_no_source():
    """IPython and notebooks register each cell in linecache under a name of
    their own: such a kernel is read from there, and errors name it."""
    name = "<ipython-input-7-tack%d>" % os.getpid()
    src = ("import tack\n\n@tack.kernel\ndef cell(x, out):\n"
           "    for i in range(x.shape[0]):\n        out[i] = x[i] - 1\n")
    linecache.cache[name] = (len(src), None, src.splitlines(True), name)
    try:
        g = {}
        exec(compile(src, name, "exec"), g)
        x = np.arange(6, dtype=np.int32)
        out = np.zeros_like(x)
        g["cell"](x, out)
        np.testing.assert_array_equal(out, x - 1)
        bad = src.replace("x[i] - 1", "{x[i] - 1}")
        linecache.cache[name] = (len(bad), None, bad.splitlines(True), name)
        with pytest.raises(tack.CompileError) as info:
            exec(compile(bad, name, "exec"), {})
        assert (info.value.filename, info.value.lineno) == (name, 6)
    finally:
        linecache.cache.pop(name, None)


def child_env(**extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith("TACK_")}
    env.update(TACK_CACHE="off", PYTHONDONTWRITEBYTECODE="1")
    env.update(extra)
    return env


def test_python_dash_c():
    code = textwrap.dedent("""\
        import json, numpy as np, tack
        @tack.func
        def twice(v):
            return v + v
        @tack.kernel
        def k(x, out):
            for i in range(x.shape[0]):
                out[i] = twice(x[i]) + 0.5
        x = np.arange(7, dtype=np.float32); out = np.zeros_like(x)
        k(x, out)
        print(json.dumps(out.tolist()))
        """)
    p = subprocess.run([PY, "-c", code], env=child_env(), capture_output=True, text=True,
                       timeout=120)
    assert p.returncode == 0, p.stderr
    x = np.arange(7, dtype=np.float32)
    assert json.loads(p.stdout) == (x + x + np.float32(0.5)).tolist()
    bad = code.replace("twice(x[i]) + 0.5", "[twice(x[i])]")
    p = subprocess.run([PY, "-c", bad], env=child_env(), capture_output=True, text=True,
                       timeout=120)
    assert p.returncode != 0
    assert "tack.CompileError: <string>:8:" in p.stderr, p.stderr


def test_disk_cache_tells_same_named_exec_kernels_apart(tmp_path):
    """Two exec'd kernels with one name, file (<string>) and line but other
    texts: each process gets its own text's results, from a cold and from a
    warm cache."""
    child = textwrap.dedent("""\
        import json, sys, numpy as np, tack
        order = sys.argv[1:]
        texts = {
            "double": "def k(x, out):\\n    for i in range(x.shape[0]):\\n        out[i] = x[i] * 2\\n",
            "triple": "def k(x, out):\\n    for i in range(x.shape[0]):\\n        out[i] = x[i] * 3\\n",
        }
        res = {}
        for name in order:
            g = {}
            exec(texts[name], g)
            k = tack.kernel(g["k"], source=texts[name])
            x = np.arange(4.0); out = np.zeros(4)
            k(x, out)
            res[name] = out.tolist()
        s = tack.stats()
        print(json.dumps({"res": res, "disk_hits": s["disk_hits"], "compiles": s["compiles"]}))
        """)
    path = tmp_path / "child.py"
    path.write_text(child)
    env = child_env(TACK_CACHE="write", TACK_CACHE_DIR=str(tmp_path / "cache"))
    expect = {"double": [0.0, 2.0, 4.0, 6.0], "triple": [0.0, 3.0, 6.0, 9.0]}
    outs = []
    for order in (["double"], ["triple", "double"], ["triple"]):
        p = subprocess.run([PY, str(path), *order], env=env, capture_output=True, text=True,
                           timeout=120)
        assert p.returncode == 0, p.stderr
        outs.append(json.loads(p.stdout.strip().splitlines()[-1]))
        assert outs[-1]["res"] == {n: expect[n] for n in order}
    assert outs[0]["disk_hits"] == 0
    # the second run found "double" on disk and compiled "triple" afresh
    assert outs[1]["disk_hits"] >= 1 and outs[1]["compiles"] >= 1
    assert outs[2]["compiles"] == 0 and outs[2]["disk_hits"] >= 1


def test_lambda_is_refused_naming_its_own_line():
    here = os.path.abspath(__file__)
    f = (lambda x: x)  # LAMBDA-LINE
    line = line_of(here, "# LAMBDA" + "-LINE")
    for deco, what in ((tack.kernel, "kernels"), (tack.func, "device functions")):
        with pytest.raises(TypeError) as info:
            deco(f)
        msg = str(info.value)
        assert "%s must be def functions, not lambdas" % what in msg
        assert msg.endswith("(the lambda at %s:%d)" % (f.__code__.co_filename, line)), msg
    with pytest.raises(TypeError, match="not lambdas"):
        tack.kernel(source="lambda: 0")(lambda: 0)
