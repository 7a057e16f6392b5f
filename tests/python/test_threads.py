"""Launches let go of the GIL while a long run runs (issue 22, item 2).

The tests prove overlap without timing it: a kernel spins until a flag in
memory is set, by another thread's kernel or by Python code on another
thread, and reports whether it saw the flag.  A launch that kept the GIL
would spin to its limit (a few seconds) unseen, since nothing else could
run meanwhile.  The limit only bounds a failing run."""
import threading

import numpy as np
import pytest

import tack

LIMIT = 400_000_000     # spins before a kernel gives up (seconds of work)
WARM = 1_000_000        # a warm-up run's spins: long enough to be let go


@tack.kernel
def handshake(flags, me, other, limit, seen):
    for i in range(seen.shape[0]):
        tack.atomic_exchange(flags, me, 1)
        k = 0
        while k < limit:
            if tack.atomic_add(flags, other, 0) != 0:
                seen[i] = k + 1
                break
            k += 1


def run_threads(targets, timeout=120):
    errors = []

    def wrap(fn):
        try:
            fn()
        except BaseException as exc:  # noqa: BLE001 - re-raised below
            errors.append(exc)

    threads = [threading.Thread(target=wrap, args=(fn,)) for fn in targets]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout)
        assert not t.is_alive(), "a thread did not finish (deadlock?)"
    if errors:
        raise errors[0]


def warm(n):
    """Runs handshake unanswered over n iterations, so that its variant's
    measured run time is long whatever ran before."""
    seen = np.zeros(n, np.int64)
    handshake(np.zeros(2, np.int64), 0, 1, WARM, seen)
    assert not seen.any()


def test_two_threads_long_launches_overlap():
    # Each kernel raises its flag, then waits for the other's: both see the
    # other only when both runs are under way at once.  (One iteration runs
    # on its caller's thread, not on the pool.)
    warm(1)
    flags = np.zeros(2, np.int64)
    seen = [np.zeros(1, np.int64) for _ in range(2)]
    run_threads([lambda i=i: handshake(flags, i, 1 - i, LIMIT, seen[i]) for i in range(2)])
    assert flags.tolist() == [1, 1]
    assert seen[0][0] > 0 and seen[1][0] > 0, "the launches ran one after the other"


@pytest.mark.parametrize("n", [1, 64])
def test_python_threads_run_during_a_long_launch(n):
    # The flag is raised by Python code on another thread: it can run only
    # if the launch let go of the GIL.  n=64 runs on the thread pool: the
    # iterations after the flag went up see it, those before may give up.
    warm(n)
    flags = np.zeros(2, np.int64)
    seen = np.zeros(n, np.int64)
    started = threading.Event()

    def python_side():
        started.wait()
        while flags[0] == 0:       # the kernel is running: it set flags[0]
            pass
        flags[1] = 1

    def launch():
        started.set()
        handshake(flags, 0, 1, LIMIT // n, seen)

    run_threads([python_side, launch])
    assert seen.any(), "no Python thread ran while the launch ran"


def test_tiny_launches_still_right_from_many_threads():
    # Short runs keep the GIL, long ones let it go, on the pool and inline,
    # all at once: every result equals NumPy's and nothing deadlocks.
    @tack.kernel
    def poly(x, out, trips):
        for i in range(x.shape[0]):
            acc = x[i]
            for j in range(trips):
                acc = acc * 0.5 + 1.0
            out[i] = acc

    def expected(x, trips):
        acc = x.copy()
        for _ in range(trips):
            acc = acc * np.float32(0.5) + np.float32(1.0)
        return acc

    cases = [(8, 1), (4096, 1), (4096, 300), (100_000, 2), (16, 2000)]
    inputs = {n: np.linspace(-1, 1, n, dtype=np.float32) for n, _ in cases}
    wants = {(n, t): expected(inputs[n], t) for n, t in cases}

    def worker(index):
        for r in range(30):
            n, trips = cases[(index + r) % len(cases)]
            out = np.empty(n, np.float32)
            poly(inputs[n], out, trips)
            np.testing.assert_array_equal(out, wants[(n, trips)])

    run_threads([lambda i=i: worker(i) for i in range(4)])
