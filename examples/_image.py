"""Writing an example's result as a PNG.  Pillow is the only dependency and
is needed only here: `make examples` installs it; without it the examples
still run and check their numbers, and say how to get the picture."""
import os

import numpy as np

# Stops of a dark-to-bright ramp (black, indigo, crimson, orange, pale
# yellow); values between stops are blended linearly.
_RAMP = np.array([
    [0, 0, 4], [40, 11, 84], [101, 21, 110], [159, 42, 99],
    [212, 72, 66], [245, 125, 21], [250, 193, 39], [252, 255, 164],
], dtype=np.float64)


def colorize(values, lo=None, hi=None):
    """Map a 2-D array to RGB bytes through the ramp; lo and hi default to
    the array's finite range."""
    v = np.asarray(values, dtype=np.float64)
    finite = v[np.isfinite(v)]
    if lo is None:
        lo = float(finite.min()) if finite.size else 0.0
    if hi is None:
        hi = float(finite.max()) if finite.size else 1.0
    t = np.clip((np.nan_to_num(v, nan=lo) - lo) / ((hi - lo) or 1.0), 0.0, 1.0)
    pos = t * (len(_RAMP) - 1)
    k = np.minimum(pos.astype(np.int64), len(_RAMP) - 2)
    f = (pos - k)[..., None]
    rgb = _RAMP[k] * (1.0 - f) + _RAMP[k + 1] * f
    return np.round(rgb).astype(np.uint8)


def default_path(name):
    """build/examples/<name>.png beside the source tree, so running an
    example writes nothing among the sources."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    return os.path.join(root, "build", "examples", name + ".png")


def save_png(path, rgb):
    """Write an (h, w, 3) uint8 array; returns the path, or None (saying
    why) when Pillow is not installed."""
    try:
        from PIL import Image
    except ImportError:
        print("(no picture: `pip install pillow` to write %s)" % path)
        return None
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    Image.fromarray(np.ascontiguousarray(rgb), "RGB").save(path)
    print("wrote %s" % path)
    return path
