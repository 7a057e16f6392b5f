"""Random numbers in kernels (issue 19, item 5).

tack.rng(seed, i) / tack.uniform / tack.normal / tack.randint draw from a
counter-based generator in integer arithmetic, so every device gives the
same numbers for the same seed and iteration (uniform and randint bit for
bit; normal through each device's log and cos, within a few ulp).  Numba's
np.random.random(), np.random.uniform(a, b), np.random.normal(mu, sigma)
and random.random() draw from streams seeded per launch from a process-wide
sequence, reproducible after tack.seed(s).  The statistics are checked
(mean, variance, a chi-square of the histogram)."""
import random

import numpy as np
import pytest

import tack
from conftest import device_or_skip
from test_cuda import check_ptx, needs_nvrtc

N = 200_000


@tack.kernel
def uniforms(out, seed):
    for i in range(out.shape[0]):
        rng = tack.rng(seed, i)
        out[i] = tack.uniform(rng)


@tack.kernel
def several(out, seed):
    for i in range(out.shape[0]):
        rng = tack.rng(seed, i)
        for k in range(out.shape[1]):
            out[i, k] = tack.uniform(rng)


@tack.kernel
def normals(out, seed):
    for i in range(out.shape[0]):
        rng = tack.rng(seed, i)
        out[i] = tack.normal(rng)


@tack.kernel
def dice(out, seed, lo, hi):
    for i in range(out.shape[0]):
        rng = tack.rng(seed, i)
        out[i] = tack.randint(rng, lo, hi)


@tack.kernel
def numba_style(out):
    for i in range(out.shape[0]):
        out[i, 0] = np.random.random()
        out[i, 1] = np.random.uniform(-2.0, 3.0)
        out[i, 2] = np.random.normal(10.0, 2.0)
        out[i, 3] = random.random()


def chi_square_ok(counts, expected):
    """Chi-square against a uniform histogram: well inside 5 sigma of the
    statistic's mean (dof) for these bin counts."""
    stat = ((counts - expected) ** 2 / expected).sum()
    dof = len(counts) - 1
    return abs(stat - dof) < 5 * np.sqrt(2 * dof), stat


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_uniform_statistics(dtype):
    out = np.zeros(N, dtype)
    uniforms(out, 12345)
    assert out.min() >= 0.0 and out.max() < 1.0
    assert abs(out.mean() - 0.5) < 5 * np.sqrt(1 / 12 / N)
    assert abs(out.var() - 1 / 12) < 0.002
    ok, stat = chi_square_ok(np.histogram(out, bins=100, range=(0, 1))[0], N / 100)
    assert ok, stat


def test_draws_advance_and_streams_differ():
    out = np.zeros((1000, 8))
    several(out, 7)
    # Each iteration's eight draws, and the iterations, are all different.
    assert len(np.unique(out)) == out.size
    # Neighbouring streams are uncorrelated.
    r = np.corrcoef(out[:-1, 0], out[1:, 0])[0, 1]
    assert abs(r) < 0.15
    again = np.zeros((1000, 8))
    several(again, 7)
    np.testing.assert_array_equal(out, again)
    other = np.zeros((1000, 8))
    several(other, 8)
    assert not np.any(other == out)


def test_normal_statistics():
    out = np.zeros(N)
    normals(out, 99)
    assert abs(out.mean()) < 5 / np.sqrt(N)
    assert abs(out.std() - 1.0) < 0.01
    # Within one and two sigma as a normal is (68.3% and 95.4%).
    assert abs((np.abs(out) < 1).mean() - 0.6827) < 0.01
    assert abs((np.abs(out) < 2).mean() - 0.9545) < 0.005


def test_randint_range_and_chi_square():
    out = np.zeros(N, np.int64)
    dice(out, 3, 1, 7)
    assert out.min() == 1 and out.max() == 6
    ok, stat = chi_square_ok(np.bincount(out - 1, minlength=6), N / 6)
    assert ok, stat
    out = np.zeros(10, np.int64)
    dice(out, 3, 5, 5)               # an empty range gives lo
    assert (out == 5).all()
    dice(out, 3, -2**40, 2**40)
    assert (out >= -2**40).all() and (out < 2**40).all() and len(np.unique(out)) == 10


def test_the_same_numbers_on_every_device():
    gpu = device_or_skip("opencl")
    for kernel, shape, dtype, args in ((uniforms, (5000,), np.float32, (42,)),
                                       (uniforms, (5000,), np.float64, (42,)),
                                       (dice, (5000,), np.int64, (42, -3, 1000))):
        host = np.zeros(shape, dtype)
        kernel(host, *args)
        dev = tack.zeros(shape, dtype=tack.f32 if dtype == np.float32 else
                         tack.f64 if dtype == np.float64 else tack.i64, device=gpu)
        kernel(dev, *args)
        np.testing.assert_array_equal(dev.numpy(), host)
    host = np.zeros(5000)
    normals(host, 5)
    dev = tack.zeros((5000,), dtype=tack.f64, device=gpu)
    normals(dev, 5)
    np.testing.assert_allclose(dev.numpy(), host, rtol=1e-12, atol=1e-12)


def test_numba_style_draws_and_tack_seed():
    out = np.zeros((N, 4))
    tack.seed(2024)
    numba_style(out)
    u, a, g, r = out.T
    assert u.min() >= 0 and u.max() < 1 and abs(u.mean() - 0.5) < 0.01
    assert a.min() >= -2 and a.max() < 3 and abs(a.mean() - 0.5) < 0.05
    assert abs(g.mean() - 10) < 0.05 and abs(g.std() - 2) < 0.05
    assert abs(r.mean() - 0.5) < 0.01
    # Draws within an iteration differ; each launch draws anew ...
    assert not np.any(u == r)
    second = np.zeros((N, 4))
    numba_style(second)
    assert not np.any(second[:, 0] == out[:, 0])
    # ... and the sequence restarts with the seed.
    tack.seed(2024)
    again = np.zeros((N, 4))
    numba_style(again)
    np.testing.assert_array_equal(again, out)


def test_errors():
    @tack.kernel
    def no_state(out):
        for i in range(out.shape[0]):
            out[i] = tack.uniform(3.0)

    with pytest.raises(tack.CompileError) as e:
        no_state(np.zeros(2))
    assert "tack.rng" in str(e.value)
    with pytest.raises(TypeError):
        tack.seed(1.5)
    with pytest.raises(RuntimeError):
        tack.uniform(None)


@needs_nvrtc
def test_random_kernels_as_ptx():
    check_ptx(uniforms, np.zeros(4, np.float32), 1)
    check_ptx(normals, np.zeros(4), 1)
    check_ptx(dice, np.zeros(4, np.int64), 1, 0, 6)
    check_ptx(numba_style, np.zeros((4, 4)))
