"""Names in kernels resolve as Python resolves them (issue 11, item 6).

A name is the kernel's own local first, then a closure variable or a global
of the function's module, and only then a builtin.  So a @tack.func called
`abs` or `max` is the function that runs, a plain Python function (or any
other object) that hides a builtin is refused with a CompileError instead of
being replaced by the builtin, and each device function or template method
looks names up in its own module.  The disk cache must see a builtin become
hidden (or stop being hidden) between processes.

The modules under test are written to a temporary directory and imported,
so each test controls exactly what its module's globals hold.
"""
import importlib.util
import itertools
import sys
import textwrap

import numpy as np
import pytest

import tack
from test_disk_cache import child_env, new_cache, run, script

X = np.array([-3.5, -2.0, -0.5, 0.0, 0.25, 1.5, 4.0, -7.25])

_serial = itertools.count()


@pytest.fixture
def load(tmp_path):
    """load(source) imports `source` (dedented) as a fresh module."""
    names = []

    def _load(source):
        name = f"shadow_mod_{next(_serial)}"
        path = tmp_path / f"{name}.py"
        path.write_text(textwrap.dedent(source))
        spec = importlib.util.spec_from_file_location(name, path)
        mod = importlib.util.module_from_spec(spec)
        sys.modules[name] = mod  # inspect finds classes' sources through it
        names.append(name)
        spec.loader.exec_module(mod)
        return mod

    yield _load
    for name in names:
        sys.modules.pop(name, None)


def line_in(mod, marker):
    """The line of mod's file that holds `marker` (exactly one does)."""
    with open(mod.__file__, encoding="utf-8") as f:
        hits = [n for n, text in enumerate(f, 1) if marker in text]
    assert len(hits) == 1, (marker, hits)
    return hits[0]


def refused(kernel, *args):
    """Runs kernel, which must raise tack.CompileError; returns it."""
    with pytest.raises(tack.CompileError) as ei:
        kernel(*args)
    return ei.value


# ---- a @tack.func named like a builtin is the function that runs --------------

FUNCS_NAMED_LIKE_BUILTINS = '''
    import tack

    @tack.func
    def abs(v):
        return v * 10.0 + 1.0

    @tack.func
    def max(a, b):
        return a - b

    @tack.func
    def min(a, b):
        return a * b

    @tack.func
    def float(v):
        return v + 0.5

    @tack.func
    def int(v):
        return v * 3.0

    @tack.func
    def round(v):
        return v - 100.0

    @tack.func
    def len(a):
        return a.shape[0] * 1000

    @tack.kernel
    def k_all(x, out):
        for i in range(x.shape[0]):
            out[i, 0] = abs(x[i])
            out[i, 1] = max(x[i], 2.0)
            out[i, 2] = min(x[i], 3.0)
            out[i, 3] = float(x[i])
            out[i, 4] = int(x[i])
            out[i, 5] = round(x[i])
            out[i, 6] = len(x) + x[i]
'''


def test_tack_funcs_named_like_builtins_are_called(load):
    mod = load(FUNCS_NAMED_LIKE_BUILTINS)
    out = np.zeros((X.size, 7))
    mod.k_all(X, out)
    # The module's own functions, run by Python on the same values.
    expected = np.stack([mod.abs(X), mod.max(X, 2.0), mod.min(X, 3.0), mod.float(X),
                         mod.int(X), mod.round(X), mod.len(X) + X], axis=1)
    np.testing.assert_array_equal(out, expected)
    # ... which are not what the builtins give
    assert not np.array_equal(out[:, 0], np.abs(X))
    assert not np.array_equal(out[:, 1], np.maximum(X, 2.0))


def test_tack_func_abs_in_a_closure_hides_the_builtin():
    @tack.func
    def abs(v):  # a closure variable of the kernel below, as in Python
        return -v

    @tack.kernel
    def k_closure_abs(x, out):
        for i in range(x.shape[0]):
            out[i] = abs(x[i])

    out = np.zeros_like(X)
    k_closure_abs(X, out)
    np.testing.assert_array_equal(out, -X)


# ---- anything else that hides a builtin is refused ------------------------------

def test_plain_def_max_is_refused(load):
    mod = load('''
        import tack

        def max(a, b):
            return a + b

        @tack.kernel
        def k_plain_max(x, out):
            for i in range(x.shape[0]):
                out[i] = max(x[i], 0.0)  # the call
    ''')
    out = np.full_like(X, 7.0)
    err = refused(mod.k_plain_max, X, out)
    msg = str(err)
    assert err.lineno == line_in(mod, "# the call")
    assert "k_plain_max" in msg and "'max'" in msg
    assert "@tack.func" in msg and "rename" in msg, msg
    assert (out == 7.0).all()  # nothing ran
    # Python itself calls the user's max
    assert mod.max(1.0, 2.0) == 3.0


def test_plain_def_in_a_closure_is_refused():
    def min(a, b):
        return a + b

    @tack.kernel
    def k_closure_min(x, out):
        for i in range(x.shape[0]):
            out[i] = min(x[i], 0.0)

    err = refused(k_closure_min, X, np.zeros_like(X))
    assert "'min'" in str(err) and "@tack.func" in str(err)


@pytest.mark.parametrize("value, words", [
    ('"not a function"', "str"),
    ("[1, 2]", "list"),
    ("2 ** 70", "64 bits"),
    ("np.maximum", "ufunc"),
])
def test_other_values_hiding_a_builtin_are_refused(load, value, words):
    mod = load(f'''
        import numpy as np
        import tack

        abs = {value}

        @tack.kernel
        def k_value_abs(x, out):
            for i in range(x.shape[0]):
                out[i] = abs(x[i])  # the call
    ''')
    err = refused(mod.k_value_abs, X, np.zeros_like(X))
    msg = str(err)
    assert err.lineno == line_in(mod, "# the call")
    assert "k_value_abs" in msg and "'abs'" in msg and words in msg, msg
    assert "rename" in msg, msg


def test_shadowing_range_is_refused(load):
    mod = load('''
        import tack

        def range(n):
            return [0]

        @tack.kernel
        def k_range(x, out):
            for i in range(x.shape[0]):  # the loop
                out[i] = x[i]
    ''')
    err = refused(mod.k_range, X, np.zeros_like(X))
    assert err.lineno == line_in(mod, "# the loop")
    assert "'range'" in str(err) and "k_range" in str(err)


def test_tack_func_named_range_is_not_the_builtin(load):
    mod = load('''
        import tack

        @tack.func
        def range(n):
            return n

        @tack.kernel
        def k_func_range(x, out):
            for i in range(x.shape[0]):  # the loop
                out[i] = x[i]
    ''')
    err = refused(mod.k_func_range, X, np.zeros_like(X))
    assert err.lineno == line_in(mod, "# the loop")
    assert "'range'" in str(err) and "builtin" in str(err)


# ---- device functions and methods look names up in their own module ------------

def test_plain_def_inside_a_tack_func_body_is_refused(load):
    mod = load('''
        import tack

        def min(a, b):
            return a * b

        @tack.func
        def helper(v):
            return min(v, 1.0)  # the call

        @tack.kernel
        def k_helper(x, out):
            for i in range(x.shape[0]):
                out[i] = helper(x[i])
    ''')
    err = refused(mod.k_helper, X, np.zeros_like(X))
    msg = str(err)
    assert err.lineno == line_in(mod, "# the call")
    assert "helper" in msg and "k_helper" in msg and "'min'" in msg and "@tack.func" in msg, msg


def test_each_function_resolves_in_its_own_module(load):
    lib = load('''
        import tack

        @tack.func
        def abs(v):
            return v * 100.0

        @tack.func
        def scaled_abs(v):
            return abs(v) + 1.0   # lib's abs, not the builtin

        @tack.device_class
        class Holder:
            def __init__(self, data):
                self.data = data

            @tack.func
            def get(self, i):
                return abs(self.data[i])   # lib's abs as well
    ''')
    user = load(f'''
        import tack
        from {lib.__name__} import scaled_abs

        @tack.kernel
        def k_mixed(x, h, out):
            for i in range(x.shape[0]):
                out[i, 0] = scaled_abs(x[i])
                out[i, 1] = abs(x[i])        # this module has no abs: the builtin
                out[i, 2] = h.get(i)
    ''')
    out = np.zeros((X.size, 3))
    user.k_mixed(X, lib.Holder(X.copy()), out)
    np.testing.assert_array_equal(out[:, 0], lib.scaled_abs(X))
    np.testing.assert_array_equal(out[:, 1], np.abs(X))
    np.testing.assert_array_equal(out[:, 2], lib.abs(X))


def test_template_method_sees_a_plain_def_of_its_module(load):
    lib = load('''
        import tack

        def abs(v):
            return v

        @tack.device_class
        class Holder:
            def __init__(self, data):
                self.data = data

            @tack.func
            def get(self, i):
                return abs(self.data[i])  # the call
    ''')

    @tack.kernel
    def k_method(h, out):
        for i in range(out.shape[0]):
            out[i] = h.get(i)

    err = refused(k_method, lib.Holder(X.copy()), np.zeros_like(X))
    assert err.lineno == line_in(lib, "# the call")
    assert "'abs'" in str(err) and "k_method" in str(err) and "@tack.func" in str(err)


# ---- a builtin hidden, then not, between kernels ---------------------------------

def test_hiding_and_unhiding_between_kernels(load):
    mod = load('''
        import tack

        def body(x, out):
            for i in range(x.shape[0]):
                out[i] = abs(x[i])

        @tack.func
        def negate(v):
            return -v

        @tack.func
        def double(v):
            return v * 2.0

        def plain(v):
            return v
    ''')

    def fresh():
        return tack.kernel(mod.body)  # a new kernel, so a new lowering

    def run_kernel():
        out = np.zeros_like(X)
        fresh()(X, out)
        return out

    np.testing.assert_array_equal(run_kernel(), np.abs(X))
    mod.abs = mod.negate
    np.testing.assert_array_equal(run_kernel(), -X)
    del mod.abs
    np.testing.assert_array_equal(run_kernel(), np.abs(X))
    mod.abs = mod.plain
    err = refused(fresh(), X, np.zeros_like(X))
    assert "'abs'" in str(err) and "@tack.func" in str(err)
    mod.abs = mod.double
    np.testing.assert_array_equal(run_kernel(), X * 2.0)


# ---- module names ----------------------------------------------------------------

def test_math_that_is_not_the_module_is_refused(load):
    mod = load('''
        import tack

        class Helpers:
            def sqrt(self, v):
                return v

        math = Helpers()

        @tack.kernel
        def k_math(x, out):
            for i in range(x.shape[0]):
                out[i] = math.sqrt(x[i])  # the call
    ''')
    err = refused(mod.k_math, np.abs(X), np.zeros_like(X))
    assert err.lineno == line_in(mod, "# the call")
    assert "'math'" in str(err) and "k_math" in str(err)


def test_math_that_was_never_imported_is_not_defined(load):
    mod = load('''
        import tack

        @tack.kernel
        def k_no_import(x, out):
            for i in range(x.shape[0]):
                out[i] = math.sqrt(x[i])  # the call
    ''')
    err = refused(mod.k_no_import, np.abs(X), np.zeros_like(X))
    assert err.lineno == line_in(mod, "# the call")
    assert "'math' is not defined" in str(err)


def test_module_aliases_mean_what_python_sees(load):
    mod = load('''
        import numpy as math
        import tack
        from tack import cache as tk

        @tack.kernel
        def k_numpy_as_math(x, out):
            for i in range(x.shape[0]):
                out[i] = math.sqrt(x[i]) + math.abs(x[i] - 9.0)

        @tack.kernel
        def k_submodule(x, out):
            for i in range(x.shape[0]):
                out[i] = tk.f64(x[i])  # the call
    ''')
    x = np.abs(X)
    out = np.zeros_like(x)
    mod.k_numpy_as_math(x, out)
    np.testing.assert_allclose(out, np.sqrt(x) + np.abs(x - 9.0), rtol=1e-15)
    # tack.cache is not tack: it has no f64
    err = refused(mod.k_submodule, x, np.zeros_like(x))
    assert err.lineno == line_in(mod, "# the call")


# ---- the disk cache sees a builtin become hidden -----------------------------------

DISK_SCRIPT = '''
    SHADOW = os.environ["SHADOW"]
    if SHADOW == "func":
        @tack.func
        def abs(v):
            return v * 10.0 + 1.0
    elif SHADOW == "plain":
        def abs(v):
            return v * 10.0 + 1.0

    @tack.kernel
    def k_disk_abs(x, out):
        for i in range(x.shape[0]):
            out[i] = abs(x[i])

    x = np.arange(-50, 50, dtype=np.float64)
    out = np.zeros_like(x)
    try:
        k_disk_abs(x, out)
        error = None
    except tack.CompileError as e:
        error = str(e)
    expected = x * 10.0 + 1.0 if SHADOW == "func" else np.abs(x)
    if error is None:
        record("abs", out, expected)
    done(error=error)
'''


def test_disk_cache_sees_a_builtin_become_hidden(tmp_path):
    cache = new_cache(tmp_path)
    main = script(tmp_path / "main.py", DISK_SCRIPT)

    def go(shadow):
        out = run(main, child_env(cache, SHADOW=shadow))
        return out, out["stats"]

    out, st = go("none")  # the builtin: lowered, compiled and stored
    assert out["error"] is None and out["results"]["abs"]["ok"], out
    assert st["lowerings"] == 1 and st["compiles"] == 1, st
    out, st = go("none")  # the same again: loaded
    assert out["results"]["abs"]["ok"] and st["disk_ir_hits"] == 1, st
    assert st["lowerings"] == 0 and st["compiles"] == 0, st

    # a module-level @tack.func abs now: the stored template (read, so
    # counted in disk_ir_hits) is stale, and the kernel is lowered afresh
    out, st = go("func")
    assert out["error"] is None and out["results"]["abs"]["ok"], out
    assert st["lowerings"] == 1 and st["compiles"] == 1 and st["disk_hits"] == 0, st

    # a plain def abs: refused, not the stored builtin version
    out, st = go("plain")
    assert out["error"] and "'abs'" in out["error"] and "@tack.func" in out["error"], out
    assert st["disk_hits"] == 0 and st["compiles"] == 0, st

    # unhidden again: the first entries are still good
    out, st = go("none")
    assert out["results"]["abs"]["ok"] and st["compiles"] == 0, st
    out, st = go("func")
    assert out["results"]["abs"]["ok"] and st["compiles"] == 0, st
