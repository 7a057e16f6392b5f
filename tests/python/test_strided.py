"""Strided arrays: NumPy views with any strides run in place on the CPU, in
and out, without copies.  Every result is compared with NumPy, and the
memory around a written view (the gaps a step skips, the rest of its base)
must come back untouched.

The variant key records, per indexed array, whether it is C-contiguous
(the key's strided_sig attribute, beyond its five elements); the stride values are runtime
parameters, so a[::2] and a[::3] share a variant.  Overlap is decided from
each array's true byte span (lowest to highest addressed byte): interleaved
views such as a[::2] and a[1::2] have overlapping spans, so they get the
variant without noalias (correct for any overlap; this is our documented
choice).  Device arrays (tack.Array on OpenCL and CUDA) are contiguous, so
this module runs on the CPU; the GPU emitter's strided code is run on
OpenCL by tests/c/gpu_emit_run.c and checked by NVRTC and ptxas in
tests/c/test_cuda.c, and its generated text is checked below.
"""
import gc
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import tack

SENTINEL = 77

DTYPES = [np.float32, np.float64, np.int32, np.int64, np.uint8, np.int16, np.bool_]


def base_of(shape, dtype, seed=0):
    """A C-contiguous array of distinct-ish values for dtype."""
    rng = np.random.default_rng(seed)
    n = int(np.prod(shape)) if shape else 1
    if dtype == np.bool_:
        return (rng.integers(0, 2, n) == 1).reshape(shape)
    if np.issubdtype(dtype, np.integer):
        return rng.integers(0, 100, n).astype(dtype).reshape(shape)
    return rng.standard_normal(n).astype(dtype).reshape(shape)


def sentinel_like(shape, dtype):
    return np.full(shape, SENTINEL if dtype != np.bool_ else True, dtype=dtype)


@tack.kernel
def copy1(x, out):
    for i in range(x.shape[0]):
        out[i] = x[i]


@tack.kernel
def axpy1(x, y, out, a):
    for i in range(x.shape[0]):
        out[i] = x[i] * a + y[i]


@tack.kernel
def add2(a, b, out):
    for i, j in tack.ndindex(out.shape[0], out.shape[1]):
        out[i, j] = a[i, j] + b[i, j]


@tack.kernel
def copy2(a, out):
    for i in range(a.shape[0]):
        for j in range(a.shape[1]):
            out[i, j] = a[i, j]


@tack.kernel
def copy3(a, out):
    for i, j, k in tack.ndindex(a.shape[0], a.shape[1], a.shape[2]):
        out[i, j, k] = a[i, j, k]


@tack.kernel
def reverse1(x, out):
    for i in range(x.shape[0]):
        out[i] = x[x.shape[0] - 1 - i]


# ---- 1-D views, in and out ------------------------------------------------

VIEWS_1D = {
    "step2": lambda a: a[::2],
    "step3_offset": lambda a: a[1::3],
    "reversed": lambda a: a[::-1],
    "reversed_step2": lambda a: a[-2::-2],
    "slice_then_step": lambda a: a[5:40:4],
}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("view", VIEWS_1D)
def test_1d_view_in(dtype, view):
    base = base_of((61,), dtype, seed=1)
    x = VIEWS_1D[view](base)
    assert not x.flags.c_contiguous
    out = sentinel_like(x.shape, dtype)
    copy1(x, out)
    np.testing.assert_array_equal(out, x)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("view", VIEWS_1D)
def test_1d_view_out(dtype, view):
    base = sentinel_like((61,), dtype)
    out = VIEWS_1D[view](base)
    x = base_of(out.shape, dtype, seed=2)
    copy1(x, out)
    np.testing.assert_array_equal(out, x)
    # exactly the view's elements were written
    mask = np.zeros(base.shape, bool)
    VIEWS_1D[view](mask)[...] = True
    np.testing.assert_array_equal(base[~mask], sentinel_like(base.shape, dtype)[~mask])


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64])
def test_1d_views_in_and_out_with_arithmetic(dtype):
    xb = base_of((90,), dtype, seed=3)
    yb = base_of((90,), dtype, seed=4)
    ob = sentinel_like((90,), dtype)
    x, y, out = xb[::3], yb[59::-2], ob[::-3]
    assert x.shape == y.shape == out.shape == (30,)
    # a Python float is f32 beside f32 arrays; an int keeps integers integral
    a = 3.0 if np.issubdtype(dtype, np.floating) else 3
    axpy1(x, y, out, a)
    expected = x * dtype(3) + y
    np.testing.assert_array_equal(out, expected)
    assert (ob[np.arange(90) % 3 != 2] == SENTINEL).all()


def test_reading_from_the_end_of_a_reversed_view():
    base = np.arange(20, dtype=np.float32)
    out = np.zeros(10, np.float32)
    reverse1(base[::-2], out)
    np.testing.assert_array_equal(out, base[::-2][::-1])


def test_buffer_protocol_views():
    base = np.arange(40, dtype=np.float64)
    out_base = np.full(40, -1.0)
    x = memoryview(base)[::4]
    out = memoryview(out_base)[3::4]
    copy1(x, out)
    np.testing.assert_array_equal(out_base[3::4], base[::4])
    assert (out_base[np.arange(40) % 4 != 3] == -1).all()


# ---- 2-D and 3-D ----------------------------------------------------------

VIEWS_2D = {
    "transpose": lambda a: a.T,
    "fortran": lambda a: np.asfortranarray(a),
    "columns": lambda a: a[:, 1:],
    "column": lambda a: a[:, 2:3],
    "both_steps": lambda a: a[::2, ::3],
    "negative_rows": lambda a: a[::-1, :],
    "negative_both": lambda a: a[::-2, ::-1],
    "slice_of_transpose": lambda a: a.T[1:, ::2],
}


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.uint8, np.bool_])
@pytest.mark.parametrize("view", VIEWS_2D)
def test_2d_view_in(dtype, view):
    a = VIEWS_2D[view](base_of((12, 10), dtype, seed=5))
    b = base_of(a.shape, dtype, seed=6)
    out = sentinel_like(a.shape, dtype)
    copy2(a, out)
    np.testing.assert_array_equal(out, a)
    if dtype != np.bool_:
        out2 = sentinel_like(a.shape, dtype)
        add2(a, b, out2)
        np.testing.assert_array_equal(out2, (a + b).astype(dtype))


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64, np.int16])
@pytest.mark.parametrize("view", VIEWS_2D)
def test_2d_view_out(dtype, view):
    if view == "fortran":
        base = np.asfortranarray(sentinel_like((12, 10), dtype))
        out = base
    else:
        base = sentinel_like((12, 10), dtype)
        out = VIEWS_2D[view](base)
    assert np.shares_memory(out, base)
    a = base_of(out.shape, dtype, seed=7)
    copy2(a, out)
    np.testing.assert_array_equal(out, a)
    mask = np.zeros(base.shape, bool)
    if view != "fortran":
        VIEWS_2D[view](mask)[...] = True
        assert (base[~mask] == SENTINEL).all()


def test_transposed_in_and_out_together():
    a = base_of((7, 9), np.float32, seed=8)
    b = base_of((9, 7), np.float32, seed=9)
    out = np.full((7, 9), -5.0, np.float32)
    add2(a, b.T, out.T.T)            # .T.T is contiguous again
    np.testing.assert_array_equal(out, a + b.T)
    out_f = np.full((9, 7), -5.0, np.float32)
    add2(a, b.T, out_f.T)            # a written transpose
    np.testing.assert_array_equal(out_f.T, a + b.T)


VIEWS_3D = {
    "transpose": lambda a: a.transpose(2, 0, 1),
    "steps": lambda a: a[::2, :, ::-1],
    "middle": lambda a: a[1:, ::3, 1:4],
    "fortran": lambda a: np.asfortranarray(a),
}


@pytest.mark.parametrize("dtype", [np.float32, np.int64])
@pytest.mark.parametrize("view", VIEWS_3D)
def test_3d_views_in_and_out(dtype, view):
    a = VIEWS_3D[view](base_of((6, 7, 5), dtype, seed=10))
    out = sentinel_like(a.shape, dtype)
    copy3(a, out)
    np.testing.assert_array_equal(out, a)
    base = sentinel_like((6, 7, 5), dtype)
    out_view = VIEWS_3D[view](base) if view != "fortran" else np.asfortranarray(base)
    src = base_of(out_view.shape, dtype, seed=11)
    copy3(src, out_view)
    np.testing.assert_array_equal(out_view, src)


# ---- empty views ------------------------------------------------------------

def test_empty_views():
    base = np.arange(20, dtype=np.float32)
    out = np.zeros(0, np.float32)
    copy1(base[5:5:2], out)
    copy1(base[::-3][:0], base[::2][:0])
    a2 = np.zeros((0, 4), np.float32)
    copy2(np.zeros((4, 0), np.float32).T, a2)
    out2 = np.full((6, 6), 3.0, np.float32)
    copy2(np.zeros((0, 3), np.float32), out2[:0, ::2])
    assert (out2 == 3.0).all() and (base == np.arange(20)).all()


# ---- read-only zero strides; written ones are refused ---------------------

def test_broadcast_input_is_read():
    row = np.arange(5, dtype=np.float64)
    a = np.broadcast_to(row, (4, 5))        # strides (0, 8)
    out = np.zeros((4, 5))
    copy2(a, out)
    np.testing.assert_array_equal(out, np.tile(row, (4, 1)))
    x = np.broadcast_to(np.float32(2.5), (9,))  # stride 0
    out1 = np.zeros(9, np.float32)
    copy1(x, out1)
    assert (out1 == 2.5).all()


def test_written_zero_stride_is_refused_and_nothing_runs():
    @tack.kernel
    def fill(x, out):
        for i in range(x.shape[0]):
            out[i] = x[i]

    cell = np.zeros(1, np.float32)
    out = np.lib.stride_tricks.as_strided(cell, shape=(8,), strides=(0,))
    assert out.flags.writeable
    with pytest.raises(ValueError) as ei:
        fill(np.arange(8, dtype=np.float32), out)
    msg = str(ei.value)
    assert "fill" in msg and "'out'" in msg and "(0,)" in msg and "same address" in msg
    assert cell[0] == 0
    assert fill.variants() == []


def test_written_self_overlapping_2d_is_refused():
    base = np.zeros(16, np.float32)
    # rows start one element apart: element (0, 1) is element (1, 0)
    out = np.lib.stride_tricks.as_strided(base, shape=(4, 4), strides=(4, 4))
    with pytest.raises(ValueError, match="same address"):
        copy2(np.ones((4, 4), np.float32), out)
    assert not base.any()
    # read, the same layout is fine
    res = np.zeros((4, 4), np.float32)
    copy2(np.lib.stride_tricks.as_strided(np.arange(16, dtype=np.float32), (4, 4), (4, 4)), res)
    np.testing.assert_array_equal(res, np.arange(4)[:, None] + np.arange(4)[None, :])


def test_stride_not_a_multiple_of_the_element_is_refused():
    raw = np.zeros(64, np.uint8)
    x = np.lib.stride_tricks.as_strided(raw[:4].view(np.float32), shape=(8,), strides=(6,))
    out = np.full(8, 9.0, np.float32)
    # NumPy calls such a view unaligned; the C API's message says "multiple"
    with pytest.raises(ValueError, match="aligned|multiple") as ei:
        copy1(x, out)
    assert "'x'" in str(ei.value)
    assert (out == 9.0).all()


# ---- the variant key ------------------------------------------------------

def make_copy():
    @tack.kernel
    def kcopy(x, out):
        for i in range(x.shape[0]):
            out[i] = x[i]
    return kcopy


def test_step_values_share_a_variant():
    k = make_copy()
    base = np.arange(60, dtype=np.float32)
    for step in (2, 3, -1, -4, 7):
        x = base[::step]
        out = np.zeros(x.shape, np.float32)
        k(x, out)
        np.testing.assert_array_equal(out, x)
    keys = k.variants()
    assert len(keys) == 1, keys
    assert len(keys[0]) == 5
    assert keys[0].strided_sig == (0,)   # parameter x


def test_contiguous_and_strided_are_two_variants():
    k = make_copy()
    base = np.arange(40, dtype=np.float64)
    out = np.zeros(20)
    k(base[:20], out)
    k(base[::2], out)
    np.testing.assert_array_equal(out, base[::2])
    k(base[20:], out)               # contiguous again: the first variant
    assert sorted(key.strided_sig for key in k.variants()) == [(), (0,)]
    out_base = np.zeros(40)
    k(base[:20], out_base[::2])
    assert sorted(key.strided_sig for key in k.variants()) == [(), (0,), (1,)]
    # the same key but for strided_sig
    no_sig = {key[:5] for key in k.variants()}
    assert len(no_sig) == 1


def test_length_one_dimensions_and_shape_only_arrays_stay_contiguous():
    k = make_copy()
    base = np.arange(10, dtype=np.float32).reshape(10, 1)
    out = np.zeros(10, np.float32)
    col = base[:, 0]                 # stride 4: contiguous
    k(col, out)
    one = base[3:4, 0]               # a length-1 view, any stride
    k(one, out[:1])

    @tack.kernel
    def fill_n(shape_only, out):
        for i in range(shape_only.shape[0]):
            out[i] = 1.0

    fill_n(np.zeros(20, np.float32)[::2], out)
    assert [key.strided_sig for key in k.variants()] == [()]
    assert [key.strided_sig for key in fill_n.variants()] == [()]


def test_strided_calls_take_the_fast_path():
    k = make_copy()
    base = np.arange(64, dtype=np.float32)
    out = np.zeros(32, np.float32)
    # A kernel of an earlier test freed by the collector would advance the
    # fast path's epoch (a miss that is no fault of this call): collect
    # first, then fill the table with the call the loop repeats.
    gc.collect()
    gc.disable()
    try:
        k(base[::2], out)
        before = tack.stats()["fast_path_hits"]
        for _ in range(5):
            k(base[::2], out)
        hits = tack.stats()["fast_path_hits"] - before
    finally:
        gc.enable()
    assert hits == 5
    np.testing.assert_array_equal(out, base[::2])


# ---- overlap: true byte spans -----------------------------------------------

def disjoint_flags(kernel):
    return [key[4] for key in kernel.variants()]


def test_shifted_views_of_one_array_overlap():
    k = make_copy()
    a = np.arange(10, dtype=np.float32)
    k(a[:-1], np.zeros(9, np.float32))
    k(a[:-1], a[1:])                         # in and out overlap
    assert sorted(disjoint_flags(k)) == [False, True]


def test_interleaved_views_are_treated_as_overlapping():
    k = make_copy()
    a = np.arange(20, dtype=np.float32)
    k(a[::2], a[1::2])                       # spans overlap: no noalias
    np.testing.assert_array_equal(a[1::2], np.arange(0, 20, 2))
    assert disjoint_flags(k) == [False]


def test_negative_strides_span_below_their_first_element():
    k = make_copy()
    a = np.arange(8, dtype=np.float32)
    # in: elements 7, 6, 5, 4 (data pointer at 7, span 4..7); out: 0..3
    k(a[7:3:-1], a[:4])
    np.testing.assert_array_equal(a[:4], [7, 6, 5, 4])
    assert disjoint_flags(k) == [True]
    # in: elements 4, 3, 2, 1 overlap out 0..3, though its first element does not
    b = np.arange(8, dtype=np.float32)
    k(b[4:0:-1], np.zeros(4, np.float32))
    k(b[4:0:-1], b[:4])
    assert sorted(disjoint_flags(k)) == [False, True]


def test_2d_column_views_span_whole_rows():
    k = copy2
    m = np.zeros((4, 6), np.float32)
    # columns 0..2 and 3..5 interleave row by row: overlapping spans
    src = np.arange(12, dtype=np.float32).reshape(4, 3)
    m[:, :3] = src
    before = {key for key in k.variants()}
    k(m[:, :3], m[:, 3:])
    np.testing.assert_array_equal(m[:, 3:], src)
    new = [key for key in k.variants() if key not in before]
    assert all(key[4] is False for key in new)


# ---- debug mode -------------------------------------------------------------

@pytest.fixture
def debug_mode():
    tack.set_debug(True)
    try:
        yield
    finally:
        tack.set_debug(False)


def test_debug_mode_with_strided_views(debug_mode):
    @tack.kernel
    def shifted(x, out, off):
        for i in range(out.shape[0]):
            out[i] = x[i + off]

    base = np.arange(40, dtype=np.float32)
    out_base = np.zeros(20, np.float32)
    shifted(base[::-2], out_base[::2], 3)   # x has 20 elements: 3..12 are in bounds
    np.testing.assert_array_equal(out_base[::2], base[::-2][3:13])
    with pytest.raises(IndexError) as ei:
        shifted(base[::-4], out_base[::2], 3)  # x has 10 elements
    assert "'x'" in str(ei.value) and "(10,)" in str(ei.value)


def test_launch_bounds_check_with_strided_views():
    @tack.kernel
    def ahead(x, out):
        for i in range(out.shape[0]):
            out[i] = x[i + 1]

    base = np.arange(30, dtype=np.float64)
    out = np.full(10, -1.0)
    ahead(base[::3], out[::-1][:9])         # x: 10 elements, out: 9
    np.testing.assert_array_equal(out[::-1][:9], base[::3][1:])
    untouched = np.full(10, -1.0)
    with pytest.raises(IndexError):
        ahead(base[::3], untouched[::1])     # 10 outputs read x[10]
    assert (untouched == -1).all()


# ---- template classes -------------------------------------------------------

@tack.device_class
class Strip:
    def __init__(self, data):
        self.data = data

    @tack.func
    def at(self, i):
        return self.data[i] * 2.0


def test_template_array_fields_may_be_strided():
    @tack.kernel
    def via(s, out):
        for i in range(out.shape[0]):
            out[i] = s.at(i)

    base = np.arange(30, dtype=np.float32)
    out = np.zeros(10, np.float32)
    via(Strip(base[::3]), out)
    np.testing.assert_array_equal(out, base[::3] * 2)
    via(Strip(base[::-3]), out)
    np.testing.assert_array_equal(out, base[::-3] * 2)
    via(Strip(base[:10]), out)
    np.testing.assert_array_equal(out, base[:10] * 2)
    sigs = sorted(key.strided_sig for key in via.variants())
    assert len(sigs) == 2 and sigs[0] == () and len(sigs[1]) == 1


# ---- generated GPU code ---------------------------------------------------

def test_generated_gpu_code_reads_strides_at_run_time():
    k = make_copy()
    base = np.arange(40, dtype=np.float32)
    contiguous = tack.opencl.source(k, base[:20], np.zeros(20, np.float32))
    strided2 = tack.opencl.source(k, base[::2], np.zeros(20, np.float32))
    strided3 = tack.opencl.source(k, base[::3][:13], np.zeros(13, np.float32))
    assert "x.strides[0]" in strided2 and "x.strides[0]" not in contiguous
    # the stride's value is not in the code: one variant serves every step
    assert strided2 == strided3
    cuda = tack.cuda.source(k, base[::2], np.zeros(20, np.float32))
    assert "x.strides[0]" in cuda


# ---- the disk cache keeps the two layouts apart ---------------------------

CHILD = r'''
import json, numpy as np, tack
@tack.kernel
def dcopy(x, out):
    for i in range(x.shape[0]):
        out[i] = x[i] + 1.0
base = np.arange(40, dtype=np.float32)
o1 = np.zeros(20, np.float32); dcopy(base[:20], o1)
o2 = np.zeros(20, np.float32); dcopy(base[::2], o2)
o3 = np.zeros(14, np.float32); dcopy(base[::-3], o3)
ok = (o1 == base[:20] + 1).all() and (o2 == base[::2] + 1).all() and (o3 == base[::-3] + 1).all()
print(json.dumps({"ok": bool(ok), "stats": tack.stats(),
                  "sigs": sorted(list(k.strided_sig) for k in dcopy.variants())}))
'''


def test_disk_cache_keys_contiguity(tmp_path):
    script = tmp_path / "child.py"
    script.write_text(textwrap.dedent(CHILD))
    env = {k: v for k, v in os.environ.items() if not k.startswith("TACK_")}
    env.update(TACK_CACHE="write", TACK_CACHE_DIR=str(tmp_path / "cache"))
    outs = []
    for _ in range(2):
        p = subprocess.run([sys.executable, str(script)], env=env, capture_output=True,
                           text=True, timeout=120)
        assert p.returncode == 0, p.stderr
        outs.append(json.loads(p.stdout.strip().splitlines()[-1]))
    first, second = outs
    assert first["ok"] and second["ok"]
    assert first["sigs"] == second["sigs"] == [[], [0]]
    assert first["stats"]["compiles"] == 2
    assert second["stats"]["compiles"] == 0 and second["stats"]["disk_hits"] == 2
