"""Module-level tuples of numbers read in kernels as tables (issue 19, item
3): `DIRS[k][0]`, `for d in DIRS`, `len(DIRS)`, 1-D and 2-D, integers and
floats, tables imported from another module and read by another module's
device function.  Each kernel runs on every device against NumPy; the
refusals (lists, ragged or non-numeric tuples, too many numbers, stores)
name the table and the line; a changed table in a fresh process compiles
a new variant rather than reuse the disk cache's."""
import math

import numpy as np
import pytest

import tack
from tables_elsewhere import KNIGHT, scaled
from test_cuda import check_ptx, needs_nvrtc
from test_disk_cache import all_ok, child_env, hexes, new_cache, run, script

pytestmark = pytest.mark.every_device

DIRS = ((1, 0), (-1, 0), (0, 1), (0, -1))
W = (4 / 9, 1 / 9, 1 / 9)
C = (0, 1, -1)
GRID = ((1, 2, 3), (4, 5, 6), (7, 8, 9))
PAIRS = ((1, 2), (3, 4), (5, 6))
BOUNDS = (2**63 - 1, -2**63, 0, -1, True, False, np.int64(7), np.uint8(200))
SPECIAL = (-0.0, math.nan, math.inf, -math.inf, 1e-300, 0.1, 3)
BIG = tuple(tuple(r * 32 + c * 1.0 for c in range(32)) for r in range(32))  # 1024: the limit


@tack.kernel
def neighbours(x, out):
    for i, j in tack.ndindex(x.shape[0], x.shape[1]):
        n, m = x.shape
        s = 0.0
        for d in DIRS:
            a = i + d[0]
            b = j + d[1]
            if a >= 0 and a < n and b >= 0 and b < m:
                s += x[a, b]
        out[i, j] = s


@tack.kernel
def lattice_moments(f, out):
    for i in range(f.shape[0]):
        rho = 0.0
        mom = 0.0
        for k in range(len(W)):
            rho += W[k] * f[i, k]
            mom += W[k] * f[i, k] * C[k]
        out[i, 0] = rho
        out[i, 1] = mom


@tack.kernel
def grid_reads(out):
    for i in range(out.shape[0]):
        out[i] = GRID[i % 3][(i + 1) % 3] + GRID[2, 2] + len(GRID) * 100 + len(GRID[0]) * 1000


@tack.kernel
def pair_products(out):
    for i in range(out.shape[0]):
        t = 0
        for a, b in PAIRS:
            t += a * b + i
        out[i] = t


@tack.kernel
def copy_bounds(out):
    for i in range(len(BOUNDS)):
        out[i] = BOUNDS[i]


@tack.kernel
def copy_special(out):
    for i in range(len(SPECIAL)):
        out[i] = SPECIAL[i]


@tack.kernel
def knight_moves(out):
    for i in range(out.shape[0]):
        t = 0
        for d in KNIGHT:
            t += d[0] * 10 + d[1] * i
        out[i] = t + len(KNIGHT) * 1000


@tack.kernel
def scaled_by_other_module(x, out):
    for i in range(x.shape[0]):
        out[i] = scaled(x[i], i % 3)


@tack.kernel
def big_table(out):
    for i in range(out.shape[0]):
        out[i] = BIG[i // 32][i % 32] + BIG[31][31] * 0


def test_direction_table(device):
    x = np.random.default_rng(0).random((5, 7))
    out = np.zeros_like(x)
    neighbours(x, out)
    p = np.pad(x, 1)
    np.testing.assert_allclose(out, p[:-2, 1:-1] + p[2:, 1:-1] + p[1:-1, :-2] + p[1:-1, 2:],
                               rtol=1e-15)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_float_table_takes_the_kernels_float_type(device, dtype):
    f = np.random.default_rng(3).random((9, 3)).astype(dtype)
    out = np.zeros((9, 2), dtype)
    lattice_moments(f, out)
    w = np.array(W, dtype)
    c = np.array(C, np.int64)
    rtol = 1e-6 if dtype == np.float32 else 1e-15
    np.testing.assert_allclose(out[:, 0], (f * w).sum(axis=1), rtol=rtol)
    np.testing.assert_allclose(out[:, 1], (f * w * c).sum(axis=1), rtol=rtol, atol=1e-7)
    if dtype == np.float32 and device.name == "cpu":
        # W holds floats: f32 here; C integers: i64, which makes mom f64 (NumPy's rule)
        ir = lattice_moments.inspect_ir(f, out)
        assert "W[k:i64]:f32" in ir and "C[k:i64]:i64" in ir, ir


def test_two_dimensional_table(device):
    out = np.zeros(7, np.int64)
    grid_reads(out)
    m = np.array(GRID)
    i = np.arange(7)
    np.testing.assert_array_equal(out, m[i % 3, (i + 1) % 3] + 9 + 3300)


def test_unpacking_rows_of_a_table(device):
    out = np.zeros(4, np.int64)
    pair_products(out)
    np.testing.assert_array_equal(out, 2 + 12 + 30 + 3 * np.arange(4))


def test_integer_table_keeps_i64_boundaries(device):
    out = np.zeros(len(BOUNDS), np.int64)
    copy_bounds(out)
    np.testing.assert_array_equal(out, np.array([int(v) for v in BOUNDS], np.int64))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_float_table_keeps_signed_zero_nan_and_infinities(device, dtype):
    out = np.ones(len(SPECIAL), dtype)
    copy_special(out)
    expected = np.array(SPECIAL, dtype)
    assert out.tobytes() == expected.tobytes()  # -0.0 stays negative, NaN stays NaN


def test_table_imported_from_another_module(device):
    out = np.zeros(5, np.int64)
    knight_moves(out)
    k = np.array(KNIGHT)
    i = np.arange(5)
    np.testing.assert_array_equal(out, (k[:, 0] * 10).sum() + k[:, 1].sum() * i + 8000)


def test_device_function_reads_its_own_modules_table(device):
    x = np.arange(7, dtype=np.float64) + 1
    out = np.zeros_like(x)
    scaled_by_other_module(x, out)
    np.testing.assert_array_equal(out, x * np.array([0.5, 2.0, -3.0])[np.arange(7) % 3])


def test_a_table_of_1024_numbers(device):
    out = np.zeros(1024)
    big_table(out)
    np.testing.assert_array_equal(out, np.arange(1024.0))


REBOUND = (1, 2, 3)


@tack.kernel
def read_rebound(out):
    for i in range(out.shape[0]):
        out[i] = REBOUND[i]


def test_table_is_read_when_first_compiled_as_constants_are(device):
    global REBOUND
    out = np.zeros(3, np.int64)
    read_rebound(out)
    np.testing.assert_array_equal(out, [1, 2, 3])
    try:
        REBOUND = (7, 8, 9)
        read_rebound(out)  # the compiled variant keeps the table it read
        np.testing.assert_array_equal(out, [1, 2, 3])
    finally:
        REBOUND = (1, 2, 3)


# ---- refusals -------------------------------------------------------------

RAGGED = ((1, 2), (3,))
MIXED_ROWS = ((1, 2), 3)
WORDS = (1, "two", 3)
AS_LIST = [4 / 9, 1 / 9, 1 / 9]
EMPTY = ()
TOO_BIG = tuple(range(1025))
HUGE_INT = (1, 2**64)
NESTED3 = (((1,),),)




@tack.kernel
def reads_ragged(out):
    for i in range(out.shape[0]):
        out[i] = RAGGED[0][0]


@tack.kernel
def reads_mixed_rows(out):
    for i in range(out.shape[0]):
        out[i] = MIXED_ROWS[0]


@tack.kernel
def reads_words(out):
    for i in range(out.shape[0]):
        out[i] = WORDS[0]


@tack.kernel
def reads_list(out):
    for i in range(out.shape[0]):
        out[i] = AS_LIST[0]


@tack.kernel
def reads_empty(out):
    for i in range(out.shape[0]):
        out[i] = len(EMPTY)


@tack.kernel
def reads_too_big(out):
    for i in range(out.shape[0]):
        out[i] = TOO_BIG[i]


@tack.kernel
def reads_huge_int(out):
    for i in range(out.shape[0]):
        out[i] = HUGE_INT[0]


@tack.kernel
def reads_nested3(out):
    for i in range(out.shape[0]):
        out[i] = NESTED3[0][0][0]


@tack.kernel
def writes_table(out):
    for i in range(out.shape[0]):
        GRID[0][0] = 5
        out[i] = GRID[0][0]


@tack.kernel
def table_as_value(out):
    for i in range(out.shape[0]):
        t = W
        out[i] = i


@pytest.mark.parametrize("kernel, name, words", [
    ("reads_ragged", "RAGGED", "not all tuples of one length"),
    ("reads_mixed_rows", "MIXED_ROWS", "not all tuples of one length"),
    ("reads_words", "WORDS", "a tuple holding a str (at [1])"),
    ("reads_list", "AS_LIST", "a list, which can change"),
    ("reads_empty", "EMPTY", "an empty tuple"),
    ("reads_too_big", "TOO_BIG", "a table of 1025 numbers, more than the 1024"),
    ("reads_huge_int", "HUGE_INT", "does not fit in 64 bits (at [1])"),
    ("reads_nested3", "NESTED3", "a tuple holding a tuple (at [0][0])"),
    ("writes_table", "GRID", "module-level table, which kernels only read"),
    ("table_as_value", "W", "a table of numbers; index it"),
])
def test_refusals_name_the_table_and_line(device, kernel, name, words):
    out = np.zeros(3)
    before = out.copy()
    with pytest.raises(tack.CompileError) as e:
        globals()[kernel](out)
    msg = str(e.value)
    assert f"'{name}'" in msg and words in msg, msg
    assert e.value.lineno is not None
    np.testing.assert_array_equal(out, before)  # nothing was written


# ---- the disk cache: a changed table in a fresh process --------------------

def test_changed_table_recompiles_in_a_fresh_process(device, tmp_path):
    if device.name != "cpu":
        pytest.skip("the disk cache's keys are checked once, on the CPU")
    cache = new_cache(tmp_path)
    main = script(tmp_path / "main.py", '''
        T = tuple(float(v) for v in os.environ["T"].split(","))
        ROWS = ((int(os.environ["R"]), 1), (2, 3))

        @tack.kernel
        def k_table(x, out):
            for i in range(x.shape[0]):
                out[i] = x[i] * T[i % len(T)] + ROWS[0][0]

        x = np.arange(12, dtype=np.float64)
        out = np.zeros_like(x)
        k_table(x, out)
        t = np.array(T)
        record("table", out, x * t[np.arange(12) % len(t)] + ROWS[0][0])
        done()
        ''')
    seen = {}
    for t, r, compiles in (("1,2", 0, 1), ("1,2", 0, 0), ("1,3", 0, 1), ("1,2,3", 0, 1),
                           ("-0.0,2", 0, 1), ("0.0,2", 0, 1), ("1,3", 5, 1), ("1,2", 0, 0)):
        out = run(main, child_env(cache, T=t, R=r))
        assert all_ok(out), (t, r)
        st = out["stats"]
        assert st["compiles"] == compiles, (t, r, st)
        assert st["disk_hits"] == 1 - compiles, (t, r, st)
        seen.setdefault((t, r), hexes(out))
        assert hexes(out) == seen[(t, r)]


@needs_nvrtc
def test_tables_as_ptx(device):
    if device.name != "cpu":
        pytest.skip("PTX is generated once, from the CPU run")
    check_ptx(neighbours, np.zeros((3, 3)), np.zeros((3, 3)))
    check_ptx(lattice_moments, np.zeros((3, 3), np.float32), np.zeros((3, 2), np.float32))
    check_ptx(copy_special, np.zeros(len(SPECIAL)))
