"""Warp's launches: kernels that assign `i = tack.tid()` (`i, j =
tack.tid()`, three names at most) instead of looping, launched by
tack.launch(k, dim=..., inputs=[...], outputs=[...]), against NumPy on every
device: one to three dimensions, early returns, sequential loops, atomics,
vectors, gradients on a tape, and the refusals of what cannot run."""
import numpy as np
import pytest

import tack

pytestmark = pytest.mark.every_device


@tack.kernel
def saxpy(x, y, a, out):
    i = tack.tid()
    out[i] = a * x[i] + y[i]


@tack.kernel
def box_blur(img, out):
    h = img.shape[0]
    i, j = tack.tid()  # statements before the thread index run in each thread too
    w = img.shape[1]
    if i == 0 or j == 0 or i == h - 1 or j == w - 1:
        out[i, j] = img[i, j]
        return  # ends this thread, as Warp's return
    s = 0.0
    for di in range(-1, 2):
        for dj in range(-1, 2):
            s += img[i + di, j + dj]
    out[i, j] = s / 9.0


@tack.kernel
def volume(out, scale):
    i, j, k = tack.tid()
    out[i, j, k] = scale * (100 * i + 10 * j + k)


@tack.kernel
def histogram(keys, bins):
    t = tack.tid()
    tack.atomic_add(bins, keys[t], 1)


@tack.kernel
def drift(pos, vel, dt):
    p = tack.tid()
    pos[p] = pos[p] + vel[p] * dt


def on(device, a, dtype=None):
    return tack.array(a, device=device, **({} if dtype is None else {"dtype": dtype}))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_one_dimension(device, dtype):
    x = np.linspace(-2, 2, 37).astype(dtype)
    y = np.arange(37).astype(dtype)
    out = on(device, np.zeros(37, dtype))
    tack.launch(saxpy, dim=37, inputs=[on(device, x), on(device, y), 1.5], outputs=[out])
    np.testing.assert_allclose(out.numpy(), 1.5 * x + y, rtol=1e-6)
    part = on(device, np.zeros(37, dtype))
    tack.launch(saxpy, 10, [on(device, x), on(device, y), 1.5, part])  # fewer threads than elements
    np.testing.assert_array_equal(part.numpy()[10:], 0)
    np.testing.assert_allclose(part.numpy()[:10], (1.5 * x + y)[:10], rtol=1e-6)
    tack.launch(saxpy, dim=0, inputs=[on(device, x), on(device, y), 1.5, part])  # no threads


def test_two_and_three_dimensions(device):
    img = np.random.default_rng(0).random((7, 9))
    out = on(device, np.zeros_like(img))
    tack.launch(box_blur, dim=img.shape, inputs=[on(device, img)], outputs=[out])
    want = img.copy()
    for i in range(1, 6):
        for j in range(1, 8):
            want[i, j] = img[i - 1:i + 2, j - 1:j + 2].mean()
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-12)
    vol = on(device, np.zeros((3, 4, 5)))
    tack.launch(volume, dim=(3, 4, 5), inputs=[vol, 2.0])
    i, j, k = np.indices((3, 4, 5))
    np.testing.assert_array_equal(vol.numpy(), 2.0 * (100 * i + 10 * j + k))


def test_atomics_and_vectors(device):
    keys = np.random.default_rng(1).integers(0, 8, 1000).astype(np.int32)
    bins = on(device, np.zeros(8, np.int32))
    tack.launch(histogram, dim=len(keys), inputs=[on(device, keys), bins])
    np.testing.assert_array_equal(bins.numpy(), np.bincount(keys, minlength=8))
    p = np.random.default_rng(2).random((6, 3)).astype(np.float32)
    v = np.random.default_rng(3).random((6, 3)).astype(np.float32)
    pos = on(device, p, tack.vec3f)
    tack.launch(drift, dim=6, inputs=[pos, on(device, v, tack.vec3f), 0.5])
    np.testing.assert_allclose(pos.numpy(), p + v * np.float32(0.5), rtol=1e-6)


def test_gradients_on_a_tape(device):
    x = tack.array(np.linspace(0, 1, 5), device=device, requires_grad=True)
    y = tack.array(np.ones(5), device=device, requires_grad=True)
    out = tack.zeros(5, dtype=tack.f64, device=device, requires_grad=True)
    tape = tack.Tape()
    with tape:
        tack.launch(saxpy, dim=5, inputs=[x, y, 3.0], outputs=[out])
    tape.backward(grads={out: np.arange(5.0)})
    np.testing.assert_allclose(x.grad.numpy(), 3.0 * np.arange(5.0))
    np.testing.assert_allclose(y.grad.numpy(), np.arange(5.0))


def test_refusals(device):
    x = on(device, np.zeros(4))
    with pytest.raises(TypeError, match=r"tack.launch\(saxpy, dim=n"):
        saxpy(x, x, 1.0, x)  # a tid() kernel called without its launch size
    with pytest.raises(ValueError, match="to 2 names, so dim is a tuple of 2"):
        tack.launch(box_blur, dim=4, inputs=[x, x])
    with pytest.raises(ValueError, match="negative extent"):
        tack.launch(saxpy, dim=-1, inputs=[x, x, 1.0, x])

    @tack.kernel
    def looped(x):
        for i in range(x.shape[0]):
            x[i] = 1.0

    with pytest.raises(TypeError, match="loops over its own launch"):
        tack.launch(looped, dim=4, inputs=[x])
    with pytest.raises(RuntimeError, match="inside kernels only"):
        tack.tid()
    other = "opencl" if device.name == "cpu" else "cpu"
    try:
        tack.device(other)
    except (RuntimeError, ValueError):
        return  # no second device here for device= to disagree with
    with pytest.raises(TypeError, match="not on device="):
        tack.launch(saxpy, dim=4, inputs=[x, x, 1.0, x], device=other)


@tack.func
def spring(a: tack.vec3f, b: tack.vec3f, k: float) -> tack.vec3f:
    return k * (b - a)


@tack.kernel
def ring_forces(x: tack.array(dtype=tack.vec3f), f: tack.array(dtype=tack.vec3f), k: float,
                n: int, counts: tack.array2d(dtype=tack.int32)) -> None:
    tid = tack.tid()
    f[tid] = spring(x[tid], x[(tid + 1) % n], k)
    counts[tid, 0] = tack.int32(tack.float32(tid) * 0.5)


def test_warp_program_as_written(device):
    # Warp's annotations evaluate when the def runs; Tack reads the types
    # from the arguments and ignores them
    n = 5
    x = np.random.default_rng(4).random((n, 3)).astype(np.float32)
    f = tack.zeros(n, dtype=tack.vec3f, device=device)
    counts = tack.zeros((n, 1), dtype=tack.i32, device=device)
    tack.launch(ring_forces, dim=n, inputs=[on(device, x, tack.vec3f), f, 10.0, n, counts])
    np.testing.assert_allclose(f.numpy(), 10.0 * (np.roll(x, -1, 0) - x), rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(counts.numpy()[:, 0], np.arange(n) // 2)


def test_array_annotations():
    assert repr(tack.array(dtype=tack.vec3f)) == "tack.array(dtype=vec3f, ndim=1)"
    assert tack.array2d(dtype=tack.f32) == tack.array(dtype=tack.f32, ndim=2)
    assert tack.array4d().ndim == 4
    with pytest.raises(ValueError, match="ndim is 1 to 4"):
        tack.array(dtype=tack.f32, ndim=5)
    with pytest.raises(TypeError, match="without data is an annotation"):
        tack.array(dtype=tack.f32, device="cpu")
    with pytest.raises(TypeError, match="obj"):
        tack.asarray()


@tack.kernel
def warp_draws(out, seed):
    i = tack.tid()
    state = tack.rand_init(seed, i)
    out[i, 0] = tack.randf(state)
    out[i, 1] = tack.randf(state, -2.0, 3.0)
    out[i, 2] = tack.randn(state)
    out[i, 3] = float(tack.randi(state))
    out[i, 4] = float(tack.randi(state, 5, 9))
    one = tack.rand_init(seed)  # no offset: the same stream in every thread
    out[i, 5] = tack.randf(one)


def test_warp_random_numbers(device):
    n = 20000
    out = on(device, np.zeros((n, 6)))
    tack.launch(warp_draws, dim=n, inputs=[out, 42])
    o = out.numpy()
    assert 0.0 <= o[:, 0].min() and o[:, 0].max() < 1.0 and abs(o[:, 0].mean() - 0.5) < 0.01
    assert -2.0 <= o[:, 1].min() and o[:, 1].max() < 3.0 and abs(o[:, 1].mean() - 0.5) < 0.05
    assert abs(o[:, 2].mean()) < 0.03 and abs(o[:, 2].std() - 1.0) < 0.03
    assert -2.0**31 <= o[:, 3].min() < -1e9 and 1e9 < o[:, 3].max() < 2.0**31
    assert set(o[:, 4]) == {5.0, 6.0, 7.0, 8.0}
    assert len(set(o[:, 5])) == 1 and len(set(o[:, 0])) > n - 10
    again = on(device, np.zeros((n, 6)))
    tack.launch(warp_draws, dim=n, inputs=[again, 42])
    np.testing.assert_array_equal(again.numpy(), o)  # a seed's draws are the same each launch
