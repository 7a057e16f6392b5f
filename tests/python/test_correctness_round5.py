"""Issue 26 (fourth correctness round), items 13, 10 and 2: stores indexed
by tack.group_index() under the launch check, tack.precompile refusing what
a launch refuses and isolating a batch's failures, and big local arrays
(off the stack, or refused naming the array, its size and the limit), on
cpu and opencl."""
import numpy as np
import pytest

import tack

pytestmark = pytest.mark.every_device

WG = 256


# ---- item 13: group_index() stores in the launch check ---------------------

@tack.kernel
def block_sum(x, out):
    # The docs' workgroup pattern (docs/language.md, Workgroups).
    for i in range(x.shape[0]):
        buf = tack.shared((tack.WORKGROUP,), tack.f32)
        lane = tack.local_index()
        buf[lane] = x[i]
        tack.barrier()
        half = tack.WORKGROUP // 2
        while half > 0:
            if lane < half:
                buf[lane] += buf[lane + half]
            tack.barrier()
            half = half // 2
        if lane == 0:
            out[tack.group_index()] = buf[0]


@tack.kernel
def group_count(x, out, k):
    # Unconditional, through a local, offset by a scalar parameter.
    for i in range(x.shape[0]):
        g = tack.group_index()
        out[g + k] += x[i]


@tack.kernel
def group_shifted(x, out):
    for i in range(x.shape[0]):
        lane = tack.local_index()
        if lane == 0 or lane == 255:
            out[tack.group_index() - 1] = x[i]


@tack.kernel
def lane_store(x, out):
    for i in range(x.shape[0]):
        out[tack.local_index()] = x[i] * 0.0 + tack.local_index()


@tack.kernel
def group_guarded(x, out):
    # A condition on the group itself may keep it inside: never refused.
    for i in range(x.shape[0]):
        g = tack.group_index()
        if tack.local_index() == 0 and g < out.shape[0]:
            out[g] = x[i]


def _refused(device, call, exc=IndexError, match="out"):
    with pytest.raises(exc) as e:  # the CPU runs workgroup kernels too, checked alike
        call()
    assert match in str(e.value), str(e.value)
    return e


def test_group_index_store_past_the_end_is_refused(device):
    x = np.random.default_rng(0).random(WG * 5).astype(np.float32)
    out = np.full(4, -1.0, np.float32)  # one short of the 5 groups
    e = _refused(device, lambda: block_sum(x, out))
    assert "block_sum" in str(e.value) and "(4,)" in str(e.value)
    assert (out == -1.0).all()  # nothing written
    out = np.zeros(5, np.float32)
    block_sum(x, out)
    np.testing.assert_allclose(out, x.reshape(5, WG).sum(axis=1), rtol=2e-6)


def test_group_index_with_offsets_and_lane_index(device):
    x = np.ones(WG * 3, np.float32)
    out = np.full(4, 9.0, np.float32)
    _refused(device, lambda: group_count(x, out, 2))   # writes out[2..4]
    _refused(device, lambda: group_count(x, out, -1))  # writes out[-1..1]
    assert (out == 9.0).all()
    _refused(device, lambda: group_shifted(x, np.zeros(3, np.float32)))  # out[-1]
    small = np.full(100, 5.0, np.float32)
    _refused(device, lambda: lane_store(x, small))  # lanes 0..255 into 100
    assert (small == 5.0).all()
    out = np.zeros(4, np.float32)
    group_count(x, out, 1)
    np.testing.assert_array_equal(out, [0, WG, WG, WG])
    lanes = np.zeros(WG, np.float32)
    lane_store(x, lanes)
    np.testing.assert_array_equal(lanes, np.arange(WG))


def test_group_index_guarded_by_the_group_runs(device):
    x = np.arange(WG * 6, dtype=np.float32)
    out = np.zeros(4, np.float32)
    group_guarded(x, out)  # groups 4 and 5 write nothing
    np.testing.assert_array_equal(out, [0, 256, 512, 768])


# ---- item 10: precompile refuses what the launch refuses; a batch's -------
# ---- failures are each call's own -----------------------------------------

def _plus_one(x, out):
    for i in range(x.shape[0]):
        out[i] = x[i] + 1.0


def _twice(x, out):
    for i in range(x.shape[0]):
        out[i] = x[i] * 2.0


def _bad_name(x, out):
    for i in range(x.shape[0]):
        out[i] = x[i] + no_such_name  # noqa: F821


def _bad_types(x, out):
    for i in range(x.shape[0]):
        out[i] = x[i] << 1  # a float shifted: refused by inference


def _arrays(device, *sizes):
    return [tack.array(np.arange(s, dtype=np.float32), device=device) for s in sizes]


def test_precompile_refuses_what_the_launch_refuses(device):
    k = tack.kernel(_plus_one)
    x, out = _arrays(device, 16, 4)
    with pytest.raises(IndexError) as launch:
        k(x, out)
    with pytest.raises(IndexError) as pre:
        tack.precompile([(k, (x, out))], device=device)
    assert str(pre.value) == str(launch.value)
    assert "out" in str(pre.value) and "_plus_one" in str(pre.value)
    np.testing.assert_array_equal(out.numpy(), np.arange(4))  # nothing ran
    # A fitting call in the same batch is still compiled and kept.
    k2 = tack.kernel(_twice)
    y, out2 = _arrays(device, 8, 8)
    with pytest.raises(IndexError):
        tack.precompile([(k2, (y, out2)), (k, (x, out))], device=device)
    assert len(k2.variants(device=device)) == 1
    before = tack.stats()["compiles"]
    k2(y, out2)
    assert tack.stats()["compiles"] == before
    np.testing.assert_array_equal(out2.numpy(), np.arange(8) * 2)


@pytest.mark.parametrize("bad", [_bad_name, _bad_types])
def test_precompile_batch_failure_keeps_the_others(device, bad):
    good1, good2, broken = tack.kernel(_plus_one), tack.kernel(_twice), tack.kernel(bad)
    x, out = _arrays(device, 8, 8)
    with pytest.raises(tack.CompileError) as e:
        tack.precompile([(good1, (x, out)), (broken, (x, out)), (good2, (x, out))],
                        device=device)
    assert bad.__name__ in str(e.value) or e.value.lineno
    for k in (good1, good2):
        assert len(k.variants(device=device)) == 1, k
    before = tack.stats()["compiles"]
    good2(x, out)
    np.testing.assert_array_equal(out.numpy(), np.arange(8) * 2)
    good1(x, out)
    np.testing.assert_array_equal(out.numpy(), np.arange(8) + 1)
    assert tack.stats()["compiles"] == before
    # Argument refusals still stop the batch before anything compiles.
    fresh = tack.kernel(_twice)
    with pytest.raises(TypeError):
        tack.precompile([(fresh, (x, out)), (good1, (x,))], device=device)
    assert len(fresh.variants(device=device)) == 0


# ---- item 2: big local arrays ----------------------------------------------

BIG = 1 << 20  # the documented limit: 2**20 elements (8 MiB of f64)


@tack.kernel
def big_local(out):
    for i in range(out.shape[0]):
        m = tack.local((BIG,), tack.f64)
        for k in range(0, BIG, 4096):
            m[k] = i + k
        s = 0.0
        for k in range(0, BIG, 4096):
            s += m[k]
        out[i] = s + m[BIG - 1]  # never stored: zeroed


@tack.kernel
def two_big_locals(out):
    # Both stay off the stack; a small one stays on it beside them.
    for i in range(out.shape[0]):
        a = tack.local((BIG,), tack.f32)
        b = tack.local((BIG // 2,), tack.i64)
        c = tack.local((4,), tack.f64)
        a[BIG - 1] = i
        b[BIG // 2 - 1] = 2 * i
        c[3] = 0.5
        out[i] = a[BIG - 1] + b[BIG // 2 - 1] + c[3] + a[0] + b[0]


@tack.kernel
def medium_local(out):
    # 48 KiB: past the CPU's stack share, within a GPU's private limit.
    for i in range(out.shape[0]):
        m = tack.local((6144,), tack.f64)
        for k in range(6144):
            m[k] = k * 0.5 + i
        s = 0.0
        for k in range(6144):
            s += m[k]
        out[i] = s


def _big_ref(n):
    ks = np.arange(0, BIG, 4096, dtype=np.float64)
    return np.array([(i + ks).sum() for i in range(n)])


@pytest.mark.parametrize("threads", [1, None])
def test_big_local_arrays(device, threads):
    if device.name != "cpu":
        # What a GPU cannot hold is refused before any driver sees it,
        # naming the array, its size and the limit.
        out = np.full(4, -1.0)
        with pytest.raises(ValueError) as e:
            big_local(out)
        msg = str(e.value)
        assert "'m'" in msg and "8388608" in msg and "65536" in msg, msg
        assert (out == -1.0).all()
        return
    dev = tack.device("cpu", num_threads=threads) if threads else device
    out = tack.zeros((24,), dtype=tack.f64, device=dev)
    big_local(out)
    np.testing.assert_array_equal(out.numpy(), _big_ref(24))
    out2 = tack.zeros((9,), dtype=tack.f64, device=dev)
    two_big_locals(out2)
    np.testing.assert_array_equal(out2.numpy(), np.arange(9) * 3 + 0.5)


def test_local_arrays_past_the_stack_share(device):
    out = np.zeros(40)
    medium_local(out)
    expect = np.array([(np.arange(6144) * 0.5 + i).sum() for i in range(40)])
    np.testing.assert_allclose(out, expect, rtol=1e-12)


def test_big_local_array_from_a_small_thread_stack(device):
    # A Python thread with a 256 KiB stack runs the kernel inline (a short
    # launch): the array must not live on that stack.
    if device.name != "cpu":
        pytest.skip("the CPU's own stacks")
    import threading
    old = threading.stack_size(256 * 1024)
    try:
        out = np.zeros(2)
        errors = []

        def run():
            try:
                big_local(out)
            except Exception as e:  # pragma: no cover - reported below
                errors.append(e)

        t = threading.Thread(target=run)
        t.start()
        t.join()
    finally:
        threading.stack_size(old)
    assert not errors, errors
    np.testing.assert_array_equal(out, _big_ref(2))


@tack.kernel
def big_local_f32(out):
    for i in range(out.shape[0]):
        m = tack.local((BIG,), tack.f32)
        m[BIG - 1] = i
        out[i] = m[BIG - 1]


@tack.kernel
def medium_local_f32(out):
    for i in range(out.shape[0]):
        m = tack.local((12288,), tack.f32)  # 48 KiB: within every GPU's limit
        for k in range(12288):
            m[k] = k + i
        out[i] = m[12287]


@pytest.mark.parametrize("dialect", ["cuda", "hip", "level_zero", "metal", "opencl"])
def test_big_local_arrays_in_every_dialect(device, dialect):
    # The offline dialects refuse what their devices cannot hold while
    # generating the source, before any vendor compiler or driver runs.
    if device.name != "cpu":
        pytest.skip("generates source only: once is enough")
    gen = getattr(tack, dialect).source
    out = np.zeros(4, np.float32)
    with pytest.raises(ValueError) as e:
        gen(big_local_f32, out)
    msg = str(e.value)
    assert "big_local_f32" in msg and "'m'" in msg and "4194304" in msg and "65536" in msg, msg
    src = gen(medium_local_f32, out)
    assert "12288" in src, src
