"""Shared set-up and helpers for Tack's Python tests.

The suite compiles from scratch: the disk cache is off unless the caller's
environment chooses a mode (TACK_CACHE=write pytest, run twice, exercises it).
"""
import atexit
import glob
import os
import re
import shutil
import tempfile

os.environ.setdefault("TACK_CACHE", "off")


# ---- which OpenCL driver the tests use --------------------------------------
#
# The ICD loader numbers OpenCL devices across every installed driver in an
# order of its own (ocl-icd lists GPU platforms first), so "opencl" (=
# "opencl:0") would be a different device on each machine.  Where PoCL is
# installed and the caller has not chosen through the loader's variables
# (OCL_ICD_VENDORS, OCL_ICD_FILENAMES), the suite points the loader at PoCL
# alone before tack opens it: "opencl" is then PoCL's device, in this
# process and in the subprocesses tests start.  To test another driver, set
# OCL_ICD_VENDORS yourself (a directory of .icd files, or one .icd file).
# MACHINE_ICD_ENV keeps the loader's settings as they came, for the test
# that loads every driver at once (test_install.py).
_ICD_VARS = ("OCL_ICD_VENDORS", "OCL_ICD_FILENAMES")
MACHINE_ICD_ENV = {k: os.environ.get(k) for k in _ICD_VARS}


def _choose_icd():
    if any(MACHINE_ICD_ENV.values()):
        return "OpenCL: the loader's drivers as the caller chose them (%s)" % ", ".join(
            "%s=%s" % (k, v) for k, v in MACHINE_ICD_ENV.items() if v)
    vendors = os.environ.get("OPENCL_VENDOR_PATH") or "/etc/OpenCL/vendors"
    icds = sorted(glob.glob(os.path.join(vendors, "*.icd")))
    pocl = []
    for path in icds:
        try:
            with open(path, encoding="utf-8", errors="replace") as f:
                if "libpocl" in f.read():
                    pocl.append(path)
        except OSError:
            pass
    if not pocl:
        return "OpenCL: every installed driver (%s; no PoCL)" % (
            ", ".join(os.path.basename(p) for p in icds) or "none")
    # A directory, which both ocl-icd and Khronos' loader accept.
    only = tempfile.mkdtemp(prefix="tack-test-icd-")
    atexit.register(shutil.rmtree, only, True)
    shutil.copy(pocl[0], only)
    os.environ["OCL_ICD_VENDORS"] = only
    others = [os.path.basename(p) for p in icds if p != pocl[0]]
    return "OpenCL: PoCL alone (%s)%s" % (
        os.path.basename(pocl[0]),
        "; also installed, left out: %s" % ", ".join(others) if others else "")


ICD_CHOICE = _choose_icd()

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


def _numpy_speaks_dlpack_1():
    try:
        np.zeros(1).__dlpack__(max_version=(1, 0))
        return True
    except TypeError:
        return False


# NumPy before 2.1 (the newest for Python 3.9) speaks DLPack 0.8 only: its
# __dlpack__ refuses max_version, its from_dlpack takes no copy= or device=
# and makes read-only arrays.  Tests that use NumPy as the other side of
# DLPack 1.0 need a newer one.
NUMPY_DLPACK_1 = _numpy_speaks_dlpack_1()
needs_numpy_dlpack_1 = pytest.mark.skipif(
    not NUMPY_DLPACK_1, reason=f"NumPy {np.__version__} predates DLPack 1.0 (NumPy 2.1)")


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


# ---- one conformance suite, every device ------------------------------------
#
# A test module opts in with `pytestmark = pytest.mark.every_device`: each of
# its tests then runs once per device.  On a device without host memory the
# module's kernels are replaced, for that run, by OnDevice wrappers that copy
# NumPy arguments into device arrays, run the kernel there and copy every
# array back into the caller's (writable) NumPy array, so the same assertions
# check the device's results.  Tests that exercise host memory itself (views
# that overlap, read-only NumPy arrays) are marked `cpu_only`.

DEVICES = [s.strip() for s in os.environ.get("TACK_TEST_DEVICES", "cpu,opencl").split(",") if s.strip()]
_unavailable = {}


def device_or_skip(spec):
    """tack.device(spec), or a skip saying why it cannot be had here."""
    if spec in _unavailable:
        pytest.skip(_unavailable[spec])
    try:
        return tack.device(spec)
    except (RuntimeError, ValueError) as e:
        _unavailable[spec] = f"device {spec!r} is not available here: {e}"
        pytest.skip(_unavailable[spec])


def _to_device(obj, dev, copies):
    """A NumPy argument's device copy; one per array object, so an array
    passed twice (in place) is one device array too."""
    if isinstance(obj, tack.Texture3D):
        return tack.Texture3D(tack.array(obj.numpy(), device=dev))
    if not isinstance(obj, np.ndarray):
        return obj
    for host, d in copies:
        if host is obj:
            return d
    d = tack.array(obj, device=dev)
    copies.append((obj, d))
    return d


class OnDevice:
    """A kernel run on `dev` with NumPy arguments copied there and back."""

    def __init__(self, kernel, dev):
        self.kernel = kernel
        self.dev = dev

    def __call__(self, *args):
        copies = []
        dargs = [_to_device(a, self.dev, copies) for a in args]
        try:
            return self.kernel(*dargs)
        finally:
            for host, d in copies:
                if host.flags.writeable:
                    np.copyto(host, d.numpy().reshape(host.shape))

    def variants(self, device=None):
        return self.kernel.variants(device=self.dev if device is None else device)

    def __getattr__(self, name):
        return getattr(self.kernel, name)


def pytest_report_header(config):
    return ICD_CHOICE


# Under the sanitizers a report ends the process at once, pytest's summary
# and its captured output with it: the Makefile sets TACK_TEST_PROGRESS to a
# file that names the test running, and that is gone when the session ends
# normally, so a leftover names the test the process died in.
_PROGRESS = os.environ.get("TACK_TEST_PROGRESS")


def _ubsan_reports_to_log_file():
    """UBSan, preloaded beside ASan, keeps its own copy of the report path and
    ignores UBSAN_OPTIONS' log_path: its reports would go to the fd 2 that
    pytest captures and be lost with the process.  Point it at the log
    directory the Makefile names (TACK_UBSAN_LOG)."""
    path = os.environ.get("TACK_UBSAN_LOG")
    if not path:
        return
    import ctypes
    try:
        lib = ctypes.CDLL("libubsan.so.1", mode=os.RTLD_NOLOAD | os.RTLD_GLOBAL)
    except OSError:
        return                          # not preloaded: nothing to redirect
    lib.__sanitizer_set_report_path(path.encode())


_ubsan_reports_to_log_file()


def pytest_runtest_logstart(nodeid, location):
    if _PROGRESS:
        with open(_PROGRESS, "w") as f:
            f.write(nodeid + "\n")


def pytest_sessionfinish(session, exitstatus):
    if _PROGRESS and os.path.exists(_PROGRESS):
        os.remove(_PROGRESS)


def pytest_configure(config):
    config.addinivalue_line("markers", "every_device: run each test on every device in DEVICES")
    config.addinivalue_line("markers", "cpu_only: the test exercises host memory; CPU only")


def pytest_generate_tests(metafunc):
    if metafunc.definition.get_closest_marker("every_device"):
        metafunc.parametrize("device", DEVICES, indirect=True)


@pytest.fixture
def device(request, monkeypatch):
    """The device a test runs on (parametrized by `every_device`); off the
    host, the module's kernels run through OnDevice."""
    spec = getattr(request, "param", "cpu")
    if spec != "cpu" and request.node.get_closest_marker("cpu_only"):
        pytest.skip("exercises host memory (CPU only)")
    dev = device_or_skip(spec)
    if not dev.host_memory:
        mod = request.module
        for name, obj in list(vars(mod).items()):
            if isinstance(obj, tack.Kernel):
                monkeypatch.setattr(mod, name, OnDevice(obj, dev))
    return dev


@pytest.fixture(autouse=True)
def _on_its_device(device):
    """Every test takes the `device` fixture, named or not (the CPU unless
    its module is marked every_device)."""
