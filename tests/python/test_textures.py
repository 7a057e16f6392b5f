"""tack.Texture3D and tex.sample(u, v, w): trilinear, normalized, clamp to edge.

Samples are compared with the exact filter.  A device whose texture unit
filters f32 textures (device.hardware_texture_filtering: CUDA) computes the
weights with 8 fractional bits, so there the tolerance is the bound that
gives (docs/devices.md); every other device, and f64 textures everywhere,
keep the exact filter's tolerance."""
import numpy as np
import pytest

import tack

# The conformance suite: every test runs on each device (conftest.py).
pytestmark = pytest.mark.every_device


def reference_sample(d, u, v, w):
    """Trilinear sample of d (3-D) at normalized (u, v, w), clamped to the edge."""
    n = np.array(d.shape)
    f = np.array([u, v, w]) * n - 0.5
    base = np.floor(f)
    t = f - base
    lo = np.clip(base.astype(np.int64), 0, n - 1)
    hi = np.clip(base.astype(np.int64) + 1, 0, n - 1)
    acc = 0.0
    for a in (0, 1):
        for b in (0, 1):
            for c in (0, 1):
                weight = ((t[0] if a else 1 - t[0]) * (t[1] if b else 1 - t[1])
                          * (t[2] if c else 1 - t[2]))
                acc += weight * d[hi[0] if a else lo[0], hi[1] if b else lo[1],
                                  hi[2] if c else lo[2]]
    return acc


def filter_tolerance(device, dtype, data, exact):
    """`exact`, or on a device that filters f32 textures in hardware, `exact`
    plus what 8-bit weights can move a sample: 2**-8 of the texel range per
    axis, three axes."""
    if device.hardware_texture_filtering and np.dtype(dtype) == np.float32:
        return exact + 3 * 2.0 ** -8 * float(np.ptp(data))
    return exact


@tack.kernel
def sample_points(tex, uvw, out):
    for i in range(out.shape[0]):
        out[i] = tex.sample(uvw[i, 0], uvw[i, 1], uvw[i, 2])


@pytest.mark.parametrize("dtype, tol", [(np.float32, 1e-5), (np.float64, 1e-13)])
def test_sample_matches_trilinear_reference(dtype, tol, device):
    rng = np.random.default_rng(7)
    data = rng.random((4, 5, 6)).astype(dtype)
    tol = filter_tolerance(device, dtype, data, tol)
    tex = tack.Texture3D(data)
    assert tex.shape_3d == (4, 5, 6)
    # Coordinates outside [0, 1] exercise clamp to edge.
    uvw = rng.uniform(-0.3, 1.3, (2000, 3)).astype(dtype)
    out = np.zeros(2000, dtype)
    sample_points(tex, uvw, out)
    ref = np.array([reference_sample(data.astype(np.float64), *c) for c in uvw.astype(np.float64)])
    np.testing.assert_allclose(out, ref, rtol=tol, atol=tol)


def test_texel_centers_return_texels(device):
    data = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    tex = tack.Texture3D(data)
    idx = np.array([(i, j, k) for i in range(2) for j in range(3) for k in range(4)])
    uvw = ((idx + 0.5) / np.array(data.shape)).astype(np.float32)
    out = np.zeros(len(idx), np.float32)
    sample_points(tex, uvw, out)
    tol = filter_tolerance(device, np.float32, data, 0.0)
    if tol == 0.0:
        np.testing.assert_array_equal(out, data.ravel())
    else:
        np.testing.assert_allclose(out, data.ravel(), rtol=0, atol=tol)


def test_samples_see_the_data_written_since(device):
    """A texture sampled, then its data rewritten by a copy and by a kernel:
    each later sample reads the new texels (a device that keeps a copy for
    its texture unit refreshes it)."""
    @tack.kernel
    def centre(tex, out):
        for i in range(out.shape[0]):
            out[i] = tex.sample(0.5, 0.5, 0.5)

    @tack.kernel
    def fill(x, v):
        for i in range(x.shape[0]):
            for j in range(x.shape[1]):
                for k in range(x.shape[2]):
                    x[i, j, k] = v

    # Device arrays made here: the kernels run on them directly, so the
    # texture lives across calls (constant texels: every filter is exact).
    tex = tack.Texture3D(tack.array(np.full((2, 3, 4), 1.0, np.float32), device=device))
    assert tex.data.device == device
    out = tack.zeros((3,), device=device)
    centre(tex, out)
    np.testing.assert_array_equal(out.numpy(), [1.0] * 3)
    centre(tex, out)
    np.testing.assert_array_equal(out.numpy(), [1.0] * 3)
    tack.copyto(tex.data, np.full((2, 3, 4), 2.0, np.float32))
    centre(tex, out)
    np.testing.assert_array_equal(out.numpy(), [2.0] * 3)
    fill(tex.data, 3.0)
    centre(tex, out)
    np.testing.assert_array_equal(out.numpy(), [3.0] * 3)
    # A second texture over other data is its own.
    other = tack.Texture3D(tack.array(np.full((2, 3, 4), 5.0, np.float32), device=device))
    centre(other, out)
    np.testing.assert_array_equal(out.numpy(), [5.0] * 3)
    centre(tex, out)
    np.testing.assert_array_equal(out.numpy(), [3.0] * 3)


def test_texture_extents_are_keyed():
    @tack.kernel
    def centre(tex, out):
        for i in range(out.shape[0]):
            out[i] = tex.sample(0.5, 0.5, 0.5)

    out = np.zeros(1, np.float32)
    for shape in [(2, 2, 2), (2, 2, 2), (3, 2, 2)]:
        centre(tack.Texture3D(np.ones(shape, np.float32)), out)
        assert out[0] == 1.0
    keys = centre.variants()
    assert len(keys) == 2
    assert keys[0][0][0] == ("f32", True, True, (2, 2, 2))
    assert keys[0][3] == (2, 2, 2)
    assert keys[1][0][0] == ("f32", True, True, (3, 2, 2))


def test_sampling_a_plain_array_is_refused():
    out = np.zeros(3, np.float32)
    with pytest.raises(TypeError, match="tex"):
        sample_points(np.ones((2, 2, 2), np.float32), np.zeros((3, 3), np.float32), out)
    assert not out.any()


def test_texture_data_must_be_3d():
    with pytest.raises(ValueError):
        tack.Texture3D(np.ones((2, 2), np.float32))


def test_texture_is_read_only_in_kernels():
    @tack.kernel
    def write(tex):
        for i in range(tex.shape[0]):
            tex[i, 0, 0] = 1.0

    with pytest.raises(ValueError, match="read-only"):
        write(tack.Texture3D(np.zeros((2, 2, 2), np.float32)))


def test_sample_needs_three_coordinates():
    with pytest.raises(tack.CompileError) as info:
        @tack.kernel
        def bad(tex, out):
            for i in range(out.shape[0]):
                out[i] = tex.sample(0.5, 0.5)  # line marker
        bad(tack.Texture3D(np.ones((2, 2, 2), np.float32)), np.zeros(1, np.float32))
    assert "3 coordinates" in str(info.value)
