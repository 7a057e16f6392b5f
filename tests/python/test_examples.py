"""The examples run as a user runs them (a subprocess, small sizes), agree
with their NumPy references, and write their PNG where Pillow is present:
a picture with something in it, not one flat colour."""
import os
import subprocess
import sys

import pytest

EXAMPLES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples")

CASES = {
    "mandelbrot": ["--size", "96", "64"],
    "heat": ["--size", "40", "56", "--steps", "30"],
    "nbody": ["--bodies", "256", "--steps", "3", "--film", "60"],
    "histogram": ["--particles", "200000"],
}


def have_pillow():
    try:
        import PIL  # noqa: F401
    except ImportError:
        return False
    return True


@pytest.mark.parametrize("name", sorted(CASES))
def test_example_runs_and_draws(name, tmp_path):
    png = tmp_path / (name + ".png")
    r = subprocess.run([sys.executable, name + ".py", *CASES[name], "--png", str(png)],
                       cwd=EXAMPLES, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "%s: ok" % name in r.stdout
    if have_pillow():
        from PIL import Image
        import numpy as np
        with Image.open(png) as im:
            assert im.mode == "RGB" and min(im.size) >= 40
            colors = im.getcolors(maxcolors=1 << 20)
            pixels = np.asarray(im, dtype=np.float64)
        # a picture, not a blank or a few flat areas: many colours, and the
        # pixels spread (a plain or nearly plain image has a std near 0)
        assert colors is None or len(colors) >= 50, len(colors)
        assert pixels.std() > 12, pixels.std()
        assert "wrote %s" % png in r.stdout
    else:
        assert not png.exists() and "pip install pillow" in r.stdout


def test_mandelbrot_on_opencl(tmp_path):
    import tack
    try:
        tack.device("opencl")
    except RuntimeError as e:
        pytest.skip("no OpenCL platform: %s" % e)
    r = subprocess.run([sys.executable, "mandelbrot.py", "--size", "64", "48", "--device", "opencl",
                        "--png", str(tmp_path / "m.png")],
                       cwd=EXAMPLES, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and "mandelbrot: ok" in r.stdout, r.stdout + r.stderr
