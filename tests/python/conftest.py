"""Shared set-up and helpers for Tack's Python tests.

The suite compiles from scratch: the disk cache is off unless the caller's
environment chooses a mode (TACK_CACHE=write pytest, run twice, exercises it).
"""
import os
import re

os.environ.setdefault("TACK_CACHE", "off")

import numpy as np
import pytest

import tack

# NumPy dtype for each Tack dtype name; the order is the one tests iterate.
DTYPES = {
    "bool": np.bool_,
    "i8": np.int8, "i16": np.int16, "i32": np.int32, "i64": np.int64,
    "u8": np.uint8, "u16": np.uint16, "u32": np.uint32, "u64": np.uint64,
    "f32": np.float32, "f64": np.float64,
}


def _asan_loaded():
    try:
        with open("/proc/self/maps") as f:
            return "libasan" in f.read()
    except OSError:
        return False


# Under AddressSanitizer (make test-python-sanitize) freed memory waits in
# its quarantine (256 MB) so that a use after free is caught: the process's
# RSS then grows with every free and says nothing about leaks.
SANITIZED = _asan_loaded()


def tack_dtype(name):
    """The tack dtype object for a name such as "f32" ("bool" -> tack.bool_)."""
    return tack.bool_ if name == "bool" else getattr(tack, name)


def line_of(path, marker):
    """The 1-based line in `path` that holds `marker` (exactly one must)."""
    with open(path, encoding="utf-8") as f:
        hits = [n for n, text in enumerate(f, 1) if marker in text]
    assert len(hits) == 1, f"marker {marker!r} found on lines {hits}"
    return hits[0]


def random_values(dtype, n, seed):
    """n deterministic values covering dtype's range (ints: all of it)."""
    rng = np.random.default_rng(seed)
    dt = np.dtype(dtype)
    if dt == np.bool_:
        return rng.integers(0, 2, n).astype(np.bool_)
    if dt.kind in "iu":
        info = np.iinfo(dt)
        return rng.integers(info.min, info.max, n, dtype=dt, endpoint=True)
    return (rng.standard_normal(n) * 100.0).astype(dt)


def store_cast(values, dtype):
    """What storing `values` into an array of `dtype` gives under Tack's rules:
    float -> int truncates toward zero and saturates at the type's bounds
    (NaN -> 0); int -> int wraps; anything -> bool is `!= 0`; float -> float
    rounds to nearest."""
    values = np.asarray(values)
    dt = np.dtype(dtype)
    if dt == np.bool_:
        return values != 0
    if dt.kind in "iu" and values.dtype.kind == "f":
        info = np.iinfo(dt)
        v = np.trunc(values.astype(np.float64))
        out = np.zeros(v.shape, dtype=dt)
        nan = np.isnan(v)
        hi = v >= float(info.max)  # float(max) may round up to 2**bits
        lo = v <= float(info.min)
        mid = ~(nan | hi | lo)
        out[hi] = info.max
        out[lo] = info.min
        out[mid] = v[mid].astype(dt)
        return out
    with np.errstate(all="ignore"):
        return values.astype(dt)


def assert_bitwise_equal(actual, expected):
    """Equal bit patterns (distinguishes -0.0 from 0.0; NaN payloads count)."""
    actual = np.asarray(actual)
    expected = np.asarray(expected)
    assert actual.dtype == expected.dtype, (actual.dtype, expected.dtype)
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    if actual.dtype.kind == "f":
        view = {4: np.uint32, 8: np.uint64}[actual.dtype.itemsize]
        bad = np.nonzero(actual.view(view) != expected.view(view))[0]
        assert bad.size == 0, (
            f"{bad.size} elements differ, first at {bad[:5]}: "
            f"got {actual[bad[:5]]!r}, expected {expected[bad[:5]]!r}")
    else:
        np.testing.assert_array_equal(actual, expected)


def name_in_message(exc_info, name):
    """The raised exception's message names `name` as a whole word."""
    msg = str(exc_info.value)
    return re.search(r"\b" + re.escape(name) + r"\b", msg) is not None


@pytest.fixture
def restore_default_device():
    """Puts the default device back after a test that changes it."""
    before = tack.get_default_device()
    yield
    tack.set_default_device(before)
