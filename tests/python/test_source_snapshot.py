"""A function's text is read once: editing its file while the process runs
does not change what later variants compile (the function's bytecode is
still the old text's, and a reused variant must behave as a fresh compile
of the same function)."""
import importlib
import os
import sys
import textwrap

import numpy as np
import pytest

import tack

MODULE = '''
import tack

@tack.func
def decorated(x):
    return x * {factor}

@tack.func
def other(x):
    return x + {factor}

@tack.kernel
def apply(x, out):
    for i in range(x.shape[0]):
        out[i] = decorated(x[i]) + other(x[i])

@tack.kernel
def apply_later(x, out):  # first called after the edit
    for i in range(x.shape[0]):
        out[i] = decorated(x[i]) - other(x[i])
'''


@pytest.mark.parametrize("device", ["cpu", "opencl"])
def test_an_edited_file_does_not_change_later_variants(tmp_path, monkeypatch, device):
    from conftest import device_or_skip
    dev = device_or_skip(device)
    name = "edited_%s" % device
    path = tmp_path / (name + ".py")
    path.write_text(MODULE.format(factor=2))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("TACK_CACHE", "off")
    mod = importlib.import_module(name)
    try:
        x = np.arange(4.0)
        out = tack.zeros(4, dtype=tack.f64, device=dev)
        mod.apply(tack.array(x, device=dev), out)
        np.testing.assert_array_equal(out.numpy(), x * 2 + (x + 2))
        # The file changes (another size and time): the loaded functions do not.
        path.write_text(MODULE.format(factor=30))
        st = os.stat(path)
        os.utime(path, (st.st_atime + 10, st.st_mtime + 10))
        x32 = np.arange(4.0, dtype=np.float32)
        out32 = tack.zeros(4, dtype=tack.f32, device=dev)
        mod.apply(tack.array(x32, device=dev), out32)  # a new variant: compiled now
        np.testing.assert_array_equal(out32.numpy(), x32 * 2 + (x32 + 2))
        mod.apply_later(tack.array(x, device=dev), out)  # a new kernel's first compile
        np.testing.assert_array_equal(out.numpy(), x * 2 - (x + 2))
    finally:
        sys.modules.pop(name, None)


def test_source_given_again_replaces_the_text_read_before():
    def f(x):
        return x * 2

    tack.func(f)
    tack.func(f, source="def f(x):\n    return x * 5\n")

    @tack.kernel
    def k(x, out):
        for i in range(x.shape[0]):
            out[i] = f(x[i])

    out = np.zeros(3)
    k(np.arange(3.0), out)
    np.testing.assert_array_equal(out, np.arange(3.0) * 5)
