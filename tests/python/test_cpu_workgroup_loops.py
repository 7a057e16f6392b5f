"""What the CPU's lane loops keep as scalars (issue 27, item 7;
src/passes/workgroup_loops.c): uniform locals assigned once outside the
lane loops, lane values recomputed per loop, and regions that are one
`if lane <op> u:` looping over the passing lanes only.  Each kernel runs on
cpu and opencl against NumPy."""
import numpy as np
import pytest

import tack
from conftest import device_or_skip

WG = 256


@pytest.fixture(scope="module", params=["cpu", "opencl"])
def dev(request):
    return device_or_skip(request.param)


@tack.kernel
def lane_windows(x, out, u):
    # Every comparison of the lane with a uniform u, both ways round.
    for i in range(x.shape[0]):
        buf = tack.shared((WG,), tack.f32)
        lane = tack.local_index()
        buf[lane] = 0.0
        tack.barrier()
        if lane < u:
            buf[lane] += 1.0
        tack.barrier()
        if lane <= u:
            buf[lane] += 2.0
        tack.barrier()
        if u < lane:
            buf[lane] += 4.0
        tack.barrier()
        if lane >= u + 1:
            buf[lane] += 8.0
        tack.barrier()
        if lane == u:
            buf[lane] += 16.0
        tack.barrier()
        if u >= lane:
            buf[lane] += 32.0
        tack.barrier()
        out[i] = buf[lane] + x[i]


def lane_windows_ref(x, u):
    lane = np.arange(x.size) % WG
    b = (1.0 * (lane < u) + 2.0 * (lane <= u) + 4.0 * (u < lane) + 8.0 * (lane >= u + 1)
         + 16.0 * (lane == u) + 32.0 * (u >= lane))
    return (b + x).astype(np.float32)


@pytest.mark.parametrize("u", [-5, 0, 100, 255, 300])
def test_lane_conditions_run_the_passing_lanes(dev, u):
    x = np.random.default_rng(u + 10).random(WG * 3).astype(np.float32)
    out = tack.zeros((x.size,), device=dev)
    lane_windows(tack.array(x, device=dev), out, u)
    np.testing.assert_array_equal(out.numpy(), lane_windows_ref(x, u))


@tack.kernel
def uniform_order(x, out, n):
    # s and t are uniform; s is read in its region before and after it
    # changes (kept per region, not hoisted wrongly), t changes after the
    # region's last read of it, and h halves once per trip, not per lane.
    for i in range(x.shape[0]):
        buf = tack.shared((WG,), tack.f32)
        lane = tack.local_index()
        s = 1.0
        t = 2.0
        buf[lane] = x[i] * s + t
        s = 3.0
        out[i] = buf[lane] * s
        t = 5.0
        tack.barrier()
        h = n
        acc = 0.0
        while h > 0:
            acc += buf[(lane + h) % WG] + t
            tack.barrier()
            h = h // 2
        out[i] += acc + tack.group_index() * 1000.0


def uniform_order_ref(x, n):
    buf = (x * 1.0 + 2.0).astype(np.float32).reshape(-1, WG)
    out = buf * 3.0
    acc = np.zeros_like(buf)
    h = n
    while h > 0:
        acc = acc + (np.roll(buf, -h, axis=1) + 5.0)
        h //= 2
    return (out + (acc + np.arange(buf.shape[0])[:, None] * 1000.0)).ravel()


def test_uniform_locals_keep_program_order(dev):
    x = np.random.default_rng(3).random(WG * 2).astype(np.float32)
    out = tack.zeros((x.size,), device=dev)
    uniform_order(tack.array(x, device=dev), out, 37)
    np.testing.assert_allclose(out.numpy(), uniform_order_ref(x, 37), rtol=1e-6)


@tack.kernel
def reassigned_lane_value(x, out):
    # r is assigned twice (not recomputable): it stays per lane.
    for i in range(x.shape[0]):
        buf = tack.shared((WG,), tack.f32)
        lane = tack.local_index()
        r = lane * 2
        buf[lane] = x[i]
        r = r + 1
        tack.barrier()
        out[i] = buf[(lane + 1) % WG] + r


def test_reassigned_lane_values_stay_per_lane(dev):
    x = np.random.default_rng(4).random(WG * 2).astype(np.float32)
    out = tack.zeros((x.size,), device=dev)
    reassigned_lane_value(tack.array(x, device=dev), out)
    lane = np.arange(WG)
    ref = (np.roll(x.reshape(-1, WG), -1, axis=1) + (lane * 2 + 1)).ravel()
    np.testing.assert_allclose(out.numpy(), ref, rtol=1e-6)
