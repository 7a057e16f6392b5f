"""Refused calls (nothing is written) and kernel source outside the language
(tack.CompileError with the line in this file)."""
import numpy as np
import pytest

import tack
from conftest import name_in_message


def here(tag):
    """The line of this file that ends with the marker comment `#@<tag>`."""
    marker = "#@" + tag
    with open(__file__, encoding="utf-8") as f:
        hits = [n for n, text in enumerate(f, 1) if text.rstrip().endswith(marker)]
    assert len(hits) == 1, (marker, hits)
    return hits[0]


@tack.kernel
def scale_err(src_arr, dst_arr, factor):
    for i in range(src_arr.shape[0]):
        dst_arr[i] = src_arr[i] * factor


@tack.kernel
def copy2d_err(mat_in, mat_out):
    for i in range(mat_in.shape[0]):
        for j in range(mat_in.shape[1]):
            mat_out[i, j] = mat_in[i, j]


N = 16
SENTINEL = 7.0


def src():
    return np.arange(N, dtype=np.float32)


def dst():
    return np.full(N, SENTINEL, dtype=np.float32)


def untouched(a):
    return bool((a == SENTINEL).all())


def test_good_call_works():
    d = dst()
    scale_err(src(), d, 2.0)
    np.testing.assert_array_equal(d, src() * 2)


# ---- argument count -------------------------------------------------------------

def test_too_few_arguments():
    d = dst()
    with pytest.raises(TypeError) as ei:
        scale_err(src(), d)
    assert "scale_err" in str(ei.value)
    assert untouched(d)


def test_too_many_arguments():
    d = dst()
    with pytest.raises(TypeError) as ei:
        scale_err(src(), d, 2.0, 3.0)
    assert "scale_err" in str(ei.value)
    assert untouched(d)


# ---- kind of argument -------------------------------------------------------------

def test_scalar_where_array_is_indexed():
    d = dst()
    with pytest.raises(TypeError) as ei:
        scale_err(1.0, d, 2.0)
    assert name_in_message(ei, "src_arr"), str(ei.value)
    assert untouched(d)
    with pytest.raises(TypeError) as ei:
        scale_err(src(), 5, 2.0)
    assert name_in_message(ei, "dst_arr"), str(ei.value)


def test_array_where_scalar_is_used():
    for bad in (np.ones(N, dtype=np.float32), tack.zeros((N,)), np.ones(1)):
        d = dst()
        with pytest.raises(TypeError) as ei:
            scale_err(src(), d, bad)
        assert name_in_message(ei, "factor"), str(ei.value)
        assert untouched(d)


@pytest.mark.parametrize("bad", ["abc", None, [1.0, 2.0]], ids=["str", "None", "list"])
def test_unsupported_scalar_type(bad):
    d = dst()
    with pytest.raises(TypeError) as ei:
        scale_err(src(), d, bad)
    assert name_in_message(ei, "factor"), str(ei.value)
    assert untouched(d)


def test_complex_scalar_into_a_real_array_is_refused():
    # complex scalars are arguments now; storing one into a float array
    # (NumPy would drop the imaginary part) is refused naming the array
    d = dst()
    with pytest.raises(tack.CompileError, match="'dst_arr' is not an array of complex numbers"):
        scale_err(src(), d, 1j)
    assert untouched(d)


@pytest.mark.parametrize("dtype", [object, np.longdouble], ids=["object", "longdouble"])
def test_unsupported_array_dtype(dtype):
    d = dst()
    with pytest.raises(TypeError) as ei:
        scale_err(np.arange(N).astype(dtype), d, 2.0)
    assert name_in_message(ei, "src_arr"), str(ei.value)
    assert untouched(d)
    bad_out = np.full(N, 7, dtype=dtype)
    with pytest.raises(TypeError) as ei:
        scale_err(src(), bad_out, 2.0)
    assert name_in_message(ei, "dst_arr"), str(ei.value)
    assert (bad_out == 7).all()


# ---- integer range ---------------------------------------------------------------

@pytest.mark.parametrize("value", [2**64, 2**70, -2**63 - 1, -2**100])
def test_int_out_of_range(value):
    d = dst()
    with pytest.raises(ValueError) as ei:
        scale_err(src(), d, value)
    assert name_in_message(ei, "factor"), str(ei.value)
    assert untouched(d)


def test_int_edges_accepted():
    for value in (2**64 - 1, 2**63, -2**63):
        d = dst()
        scale_err(src(), d, value)  # u64 / u64 / i64: f32 * those -> f64
        np.testing.assert_array_equal(d, (src().astype(np.float64) * float(value)).astype(np.float32))


# ---- read-only arrays -------------------------------------------------------------

@tack.kernel
def fill_ro(vals, target):
    for i in range(vals.shape[0]):
        target[i] = vals[i] + 1.0


def test_read_only_written_array_is_refused_cold():
    d = dst()
    d.flags.writeable = False
    with pytest.raises(ValueError) as ei:
        fill_ro(src(), d)  # the kernel's first call
    assert name_in_message(ei, "target"), str(ei.value)
    assert untouched(d)


def test_read_only_written_array_is_refused_warm():
    d = dst()
    scale_err(src(), d, 3.0)  # warm the variant
    d2 = dst()
    d2.flags.writeable = False
    for _ in range(3):
        with pytest.raises(ValueError) as ei:
            scale_err(src(), d2, 3.0)
        assert name_in_message(ei, "dst_arr"), str(ei.value)
    assert untouched(d2)


def test_read_only_input_is_fine():
    s = src()
    s.flags.writeable = False
    d = dst()
    scale_err(s, d, 0.5)
    np.testing.assert_array_equal(d, src() * np.float32(0.5))


def test_read_only_view_of_writable_base_is_refused():
    base = np.full(N, SENTINEL, dtype=np.float32)
    view = base[:]
    view.flags.writeable = False
    with pytest.raises(ValueError):
        scale_err(src(), view, 2.0)
    assert untouched(base)


# ---- layout -------------------------------------------------------------------

# Strided views run in place (tests/python/test_strided.py has the full
# set); what is still refused is a layout a kernel cannot write safely or
# address by whole elements.

def test_strided_input_and_output_run_in_place():
    big = np.arange(2 * N, dtype=np.float32)
    d = dst()
    scale_err(big[::2], d, 2.0)
    np.testing.assert_array_equal(d, big[::2] * 2)
    out = np.full(2 * N, SENTINEL, dtype=np.float32)
    scale_err(src(), out[::2], 2.0)
    np.testing.assert_array_equal(out[::2], src() * 2)
    assert untouched(out[1::2])


def test_reversed_view_runs_in_place():
    big = np.full(N, SENTINEL, dtype=np.float32)
    scale_err(src(), big[::-1], 2.0)
    np.testing.assert_array_equal(big, (src() * 2)[::-1])


def test_transposed_column_slice_and_fortran_run_in_place():
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    out_t = np.full((4, 3), SENTINEL, dtype=np.float32)
    copy2d_err(a.T, out_t)
    np.testing.assert_array_equal(out_t, a.T)
    base = np.full((3, 5), SENTINEL, dtype=np.float32)
    copy2d_err(a, base[:, 1:])
    np.testing.assert_array_equal(base[:, 1:], a)
    assert untouched(base[:, 0])
    out = np.full((3, 4), SENTINEL, dtype=np.float32)
    copy2d_err(np.asfortranarray(a), out)
    np.testing.assert_array_equal(out, a)


def test_written_zero_stride_is_refused():
    base = np.full(1, SENTINEL, dtype=np.float32)
    out = np.lib.stride_tricks.as_strided(base, shape=(N,), strides=(0,))
    with pytest.raises(ValueError) as ei:
        scale_err(src(), out, 2.0)
    assert name_in_message(ei, "dst_arr"), str(ei.value)
    assert "same address" in str(ei.value)
    assert untouched(base)


def test_stride_not_a_multiple_of_the_element_is_refused():
    raw = np.full(4 * N + 4, 1, dtype=np.uint8)
    view = np.lib.stride_tricks.as_strided(raw[:4].view(np.float32), shape=(N,), strides=(6,))
    d = dst()
    with pytest.raises(ValueError) as ei:
        scale_err(view, d, 2.0)
    assert name_in_message(ei, "src_arr"), str(ei.value)
    assert "aligned" in str(ei.value) or "multiple" in str(ei.value)
    assert untouched(d)


def test_contiguous_row_slice_is_accepted():
    a = np.arange(20, dtype=np.float32).reshape(5, 4)
    out = np.zeros((2, 4), dtype=np.float32)
    copy2d_err(a[1:3], out)
    np.testing.assert_array_equal(out, a[1:3])


# ---- ndim -------------------------------------------------------------------------

def test_wrong_ndim():
    d = dst()
    with pytest.raises((TypeError, ValueError)):
        scale_err(np.zeros((4, 4), dtype=np.float32), d, 2.0)
    assert untouched(d)
    with pytest.raises((TypeError, ValueError)):
        scale_err(np.array(1.0, dtype=np.float32), d, 2.0)
    assert untouched(d)
    out = np.full((3, 4), SENTINEL, dtype=np.float32)
    with pytest.raises((TypeError, ValueError)):
        copy2d_err(np.zeros(12, dtype=np.float32), out)
    assert untouched(out)
    with pytest.raises((TypeError, ValueError)):
        copy2d_err(np.zeros((3, 4, 1), dtype=np.float32), out)
    assert untouched(out)
    out1 = np.full(12, SENTINEL, dtype=np.float32)
    with pytest.raises((TypeError, ValueError)):
        copy2d_err(np.zeros((3, 4), dtype=np.float32), out1)
    assert untouched(out1)


def test_refusal_leaves_kernel_usable():
    d = dst()
    with pytest.raises(ValueError):
        scale_err(src(), d, 2**64)
    with pytest.raises(TypeError):
        scale_err(src(), d)
    scale_err(src(), d, 4.0)
    np.testing.assert_array_equal(d, src() * 4)


# ---- source outside the language ------------------------------------------------

X = np.zeros(4, dtype=np.float32)


def compile_error(build):
    """Runs build() (decoration and first call) and returns the CompileError."""
    with pytest.raises(tack.CompileError) as ei:
        build()
    err = ei.value
    assert isinstance(err.lineno, int)
    return err


def check_message(err, kernel_name):
    msg = str(err)
    assert kernel_name in msg, msg
    assert str(err.lineno) in msg, msg


def test_compile_error_lambda():
    def build():
        @tack.kernel
        def bad_lambda(x, out):
            for i in range(x.shape[0]):
                f = lambda v: v  #@lambda
                out[i] = f(x[i])
        bad_lambda(X, X.copy())
    err = compile_error(build)
    assert err.lineno == here("lambda")
    check_message(err, "bad_lambda")


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_complex_values_into_a_real_array_are_refused(dtype):
    d = dst()
    with pytest.raises(tack.CompileError, match="'dst_arr' is not an array of complex numbers"):
        scale_err(np.arange(N).astype(dtype), d, 2.0)
    assert untouched(d)


def test_compile_error_slice():
    def build():
        @tack.kernel
        def bad_slice(x, out):
            for i in range(x.shape[0]):
                out[i] = x[1:3]  #@slice
        bad_slice(X, X.copy())
    err = compile_error(build)
    assert err.lineno == here("slice")
    check_message(err, "bad_slice")


def test_compile_error_local_read_before_assignment():
    # Only `s += ...` gives s a value: Python's UnboundLocalError, refused
    # at compile time (found by the kernel fuzzer as an internal error).
    def build():
        @tack.kernel
        def bad_unbound(x, out):
            for i in range(x.shape[0]):
                s += x[i]  #@unbound
                out[i] = s
        bad_unbound(X, X.copy())
    err = compile_error(build)
    assert err.lineno == here("unbound")
    check_message(err, "bad_unbound")
    assert "'s' is read before" in str(err)


def test_compile_error_float_into_loop_variable():
    # A loop variable is stepped as an integer: giving it a float is
    # refused (found by the kernel fuzzer as an internal error).
    def build_sequential():
        @tack.kernel
        def bad_loop_var(x, out):
            for i in range(x.shape[0]):
                for j in range(3):
                    j = x[i] * 0.5  #@seqvar
                    out[i] = j
        bad_loop_var(X, X.copy())

    def build_parallel():
        @tack.kernel
        def bad_launch_var(x, out):
            for i in range(x.shape[0]):
                i = x[i] * 0.5  #@parvar
                out[0] = i
        bad_launch_var(X, X.copy())

    for build, tag, name, var in [(build_sequential, "seqvar", "bad_loop_var", "j"),
                                  (build_parallel, "parvar", "bad_launch_var", "i")]:
        err = compile_error(build)
        assert err.lineno == here(tag)
        check_message(err, name)
        assert "loop variable '%s'" % var in str(err)


def test_compile_error_keyword_arguments():
    def build():
        @tack.kernel
        def bad_kwargs(x, out):
            for i in range(x.shape[0]):
                out[i] = abs(x=x[i])  #@kwargs
        bad_kwargs(X, X.copy())
    err = compile_error(build)
    assert err.lineno == here("kwargs")
    check_message(err, "bad_kwargs")


def test_compile_error_undefined_name():
    def build():
        @tack.kernel
        def bad_name(x, out):
            for i in range(x.shape[0]):
                y = x[i] * 2.0
                out[i] = y + not_defined_anywhere  #@undefined
        bad_name(X, X.copy())
    err = compile_error(build)
    assert err.lineno == here("undefined")
    check_message(err, "bad_name")
    assert "not_defined_anywhere" in str(err)


def test_compile_error_string():
    def build():
        @tack.kernel
        def bad_string(x, out):
            for i in range(x.shape[0]):
                s = "text"  #@string
                out[i] = x[i]
        bad_string(X, X.copy())
    err = compile_error(build)
    assert err.lineno == here("string")
    check_message(err, "bad_string")


def test_compile_error_no_for_loop():
    def build():
        @tack.kernel
        def bad_no_loop(x, out):  #@noloop-def
            out[0] = x[0]  #@noloop-stmt
        bad_no_loop(X, X.copy())
    err = compile_error(build)
    # either the def or the statement that is not the launch loop
    assert err.lineno in (here("noloop-def"), here("noloop-stmt")), err.lineno
    check_message(err, "bad_no_loop")


def test_compile_error_dict_literal():
    def build():
        @tack.kernel
        def bad_dict(x, out):
            for i in range(x.shape[0]):
                d = {"a": 1}  #@dict
                out[i] = x[i]
        bad_dict(X, X.copy())
    err = compile_error(build)
    assert err.lineno == here("dict")


def test_compile_error_list_comprehension():
    def build():
        @tack.kernel
        def bad_comp(x, out):
            for i in range(x.shape[0]):
                out[i] = sum([x[j] for j in range(3)])  #@comprehension
        bad_comp(X, X.copy())
    err = compile_error(build)
    assert err.lineno == here("comprehension")


def test_compile_error_try():
    def build():
        @tack.kernel
        def bad_try(x, out):
            for i in range(x.shape[0]):
                try:  #@try
                    out[i] = x[i]
                except Exception:
                    out[i] = 0.0
        bad_try(X, X.copy())
    err = compile_error(build)
    assert err.lineno == here("try")


def test_compile_error_import():
    def build():
        @tack.kernel
        def bad_import(x, out):
            for i in range(x.shape[0]):
                import os  #@import
                out[i] = x[i]
        bad_import(X, X.copy())
    err = compile_error(build)
    assert err.lineno == here("import")


def test_compile_error_later_line_in_long_kernel():
    def build():
        @tack.kernel
        def bad_late(x, out):
            for i in range(x.shape[0]):
                a = x[i] * 2.0
                b = a + 1.0
                if b > 3.0:
                    b = b - 1.0
                else:
                    b = b + 1.0
                out[i] = b + (lambda: 1.0)()  #@late
        bad_late(X, X.copy())
    err = compile_error(build)
    assert err.lineno == here("late")


def test_compile_error_is_an_exception_class():
    assert issubclass(tack.CompileError, Exception)


def test_array_method_call_names_the_method():
    # Used to say "'this' cannot be called in a kernel" (issue 18, minor).
    @tack.kernel
    def mean_of(x, out):
        for i in range(1):
            out[0] = x.mean()  #@mean

    out = dst()
    with pytest.raises(tack.CompileError) as e:
        mean_of(src(), out)
    assert "'x.mean()'" in str(e.value) and "'this'" not in str(e.value), str(e.value)
    assert e.value.lineno == here("mean")
    assert untouched(out)


@pytest.mark.parametrize("bad, exc", [("yes", TypeError), ("no", TypeError), ("", TypeError),
                                      (None, TypeError), (1.0, TypeError), ([], TypeError),
                                      (2, ValueError), (-1, ValueError), (2**70, ValueError),
                                      (np.int64(2), ValueError)])
def test_set_debug_takes_only_bools(bad, exc):
    # Truthiness took set_debug('no') (and 'yes', 2, ...) for True.
    before = tack.get_debug()
    try:
        with pytest.raises(exc, match=r"tack\.set_debug\(\) takes True or False"):
            tack.set_debug(bad)
        assert tack.get_debug() is before
    finally:
        tack.set_debug(before)


def test_set_debug_takes_bools_and_0_1():
    before = tack.get_debug()
    try:
        for on, want in ((True, True), (False, False), (1, True), (0, False),
                         (np.bool_(True), True), (np.int8(0), False)):
            tack.set_debug(on)
            assert tack.get_debug() is want
    finally:
        tack.set_debug(before)


def test_loop_variable_named_like_a_vector_or_tuple():
    # A sequential loop's variable that holds a vector or a tuple elsewhere
    # once lowered to a loop over no local (a fuzzer finding: memory
    # written before an array); it is the one-kind-per-name rule's error.
    @tack.kernel
    def over_tuple(f, out):
        for i in range(f.shape[0]):
            w = (0.5, 1.0)
            k = (0.0, 1.0)
            for k in range(len(w)):
                out[i] += w[k]

    @tack.kernel
    def over_vector(f, out):
        for i in range(f.shape[0]):
            k = tack.vec2f(0.5, 1.0)

            for k in range(2):
                out[i] += k

    for kernel, kind in [(over_tuple, "an array"), (over_vector, "a vector")]:
        with pytest.raises(tack.CompileError, match="'k' holds %s elsewhere" % kind) as e:
            kernel(np.zeros(2), np.zeros(2))
        assert ":%d:" % (kernel.func.__code__.co_firstlineno + 5) in str(e.value)  # the for line
