"""Drawing an example's result as a PNG: colormaps, panels, colorbars and
bar charts with NumPy, text and the file with Pillow.  Pillow is needed only
here: `make examples` installs it; without it the examples still run and
check their numbers, and say how to get the picture."""
import os

import numpy as np

# Colormaps as stops blended linearly.  INFERNO runs from black through
# indigo, crimson and orange to pale yellow (good for counts and densities,
# where zero is "nothing"); THERMAL from deep blue through pale grey to red
# (temperatures, where the cold end is as much a value as the hot one).
INFERNO = np.array([
    [0, 0, 4], [40, 11, 84], [101, 21, 110], [159, 42, 99],
    [212, 72, 66], [245, 125, 21], [250, 193, 39], [252, 255, 164],
], dtype=np.float64)
THERMAL = np.array([
    [26, 38, 110], [59, 90, 192], [110, 150, 230], [170, 199, 240],
    [225, 220, 215], [244, 170, 130], [226, 100, 75], [180, 30, 40], [110, 0, 25],
], dtype=np.float64)
BACKGROUND = (20, 20, 28)
FOREGROUND = (225, 225, 230)


def colorize(values, lo=None, hi=None, ramp=INFERNO):
    """Map an array to RGB bytes (shape + (3,)) through a ramp; lo and hi
    default to the array's finite range."""
    v = np.asarray(values, dtype=np.float64)
    finite = v[np.isfinite(v)]
    if lo is None:
        lo = float(finite.min()) if finite.size else 0.0
    if hi is None:
        hi = float(finite.max()) if finite.size else 1.0
    t = np.clip((np.nan_to_num(v, nan=lo) - lo) / ((hi - lo) or 1.0), 0.0, 1.0)
    pos = t * (len(ramp) - 1)
    k = np.minimum(pos.astype(np.int64), len(ramp) - 2)
    f = (pos - k)[..., None]
    rgb = ramp[k] * (1.0 - f) + ramp[k + 1] * f
    return np.round(rgb).astype(np.uint8)


def canvas(h, w, color=BACKGROUND):
    """An (h, w, 3) picture filled with one colour."""
    out = np.empty((h, w, 3), dtype=np.uint8)
    out[:] = color
    return out


def paste(dst, src, y, x):
    """Copies the picture src into dst with its top-left corner at (y, x)."""
    dst[y:y + src.shape[0], x:x + src.shape[1]] = src


def enlarge(rgb, k):
    """Each pixel as a k x k block (crisp cells for small grids)."""
    return np.repeat(np.repeat(rgb, k, axis=0), k, axis=1)


def colorbar(h, w, ramp=INFERNO):
    """A vertical strip of the ramp, its high end at the top."""
    t = np.linspace(1.0, 0.0, h)[:, None] * np.ones((1, w))
    return colorize(t, 0.0, 1.0, ramp)


def bar_chart(values, length, bar, gap, color, vertical=True):
    """Bars of the non-negative values, scaled so the largest is `length`
    pixels: vertical bars standing on the bottom edge (a picture `length`
    high), or horizontal bars growing from the left edge.  Each bar is
    `bar` pixels thick with `gap` pixels of background after it."""
    v = np.asarray(values, dtype=np.float64)
    top = v.max() if v.size and v.max() > 0 else 1.0
    heights = np.round(v / top * length).astype(np.int64)
    pitch = bar + gap
    out = canvas(length, len(v) * pitch)
    rows = np.arange(length)[:, None]
    filled = rows >= length - np.repeat(heights, pitch)[None, :]
    filled &= (np.arange(len(v) * pitch) % pitch < bar)[None, :]
    out[filled] = color
    return out if vertical else np.ascontiguousarray(out.transpose(1, 0, 2)[:, ::-1])


def default_path(name):
    """build/examples/<name>.png beside the source tree, so running an
    example writes nothing among the sources."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    return os.path.join(root, "build", "examples", name + ".png")


def save_png(path, rgb, labels=()):
    """Write an (h, w, 3) uint8 array with text labels, each (x, y, text)
    or (x, y, text, size) with (x, y) the text's top-left corner; returns the
    path, or None (saying why) when Pillow is not installed."""
    try:
        from PIL import Image, ImageDraw, ImageFont
    except ImportError:
        print("(no picture: `pip install pillow` to write %s)" % path)
        return None
    im = Image.fromarray(np.ascontiguousarray(rgb), "RGB")
    draw = ImageDraw.Draw(im)
    fonts = {}
    for x, y, text, *size in labels:
        size = size[0] if size else 14
        if size not in fonts:
            try:
                fonts[size] = ImageFont.load_default(size=size)
            except TypeError:               # Pillow before 10.1: one bitmap size
                fonts[size] = ImageFont.load_default()
        draw.text((x, y), text, fill=FOREGROUND, font=fonts[size])
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    im.save(path, optimize=True)
    print("wrote %s" % path)
    return path
