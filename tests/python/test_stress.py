"""A bounded stress run from Python: threads launching kernels with mixed
dtypes and shapes while others switch debug mode and create and drop
template classes (retired when collected).  Every result is checked.
TACK_STRESS_SECONDS lengthens it (default 2 s) for runs by hand."""
import gc
import os
import threading
import time

import numpy as np
import pytest

import tack

SECONDS = float(os.environ.get("TACK_STRESS_SECONDS", "2"))


@tack.kernel
def axpy(x, y, out, a):
    for i in range(x.shape[0]):
        out[i] = x[i] * a + y[i]


@tack.kernel
def rowsum(m, out):
    for i in range(m.shape[0]):
        acc = m[i, 0] * 0
        for j in range(m.shape[1]):
            acc += m[i, j]
        out[i] = acc


def make_class(factor):
    @tack.device_class
    class Scaled:
        k = factor

        def __init__(self, data):
            self.data = data

        @tack.func
        def at(self, i):
            return self.data[i] * self.k

    return Scaled


@tack.kernel
def apply(s, out):
    for i in range(out.shape[0]):
        out[i] = s.at(i)


def test_launches_while_debug_switches_and_classes_come_and_go():
    stop = threading.Event()
    errors = []

    def launcher(seed):
        rng = np.random.default_rng(seed)
        try:
            while not stop.is_set():
                case = rng.integers(3)
                if case == 0:
                    n = int(rng.integers(0, 5000))
                    dt = [np.float32, np.float64, np.int32, np.int64][rng.integers(4)]
                    x = np.arange(n).astype(dt)
                    y = np.full(n, 3, dt)
                    out = np.empty(n, dt)
                    a = 2 if dt in (np.int32, np.int64) else 2.5
                    axpy(x, y, out, a)
                    np.testing.assert_array_equal(out, (x * dt(a) + y).astype(dt))
                elif case == 1:
                    m = rng.standard_normal((int(rng.integers(1, 300)), int(rng.integers(1, 20))))
                    out = np.empty(m.shape[0])
                    rowsum(m, out)
                    expected = np.zeros(m.shape[0])
                    for j in range(m.shape[1]):
                        expected += m[:, j]
                    np.testing.assert_array_equal(out, expected)
                else:
                    factor = float(rng.integers(1, 5))
                    cls = make_class(factor)
                    data = np.arange(int(rng.integers(1, 2000)), dtype=np.float32)
                    out = np.empty_like(data)
                    apply(cls(data), out)
                    np.testing.assert_array_equal(out, data * np.float32(factor))
                    del cls
        except Exception as e:  # reported by the main thread
            errors.append(e)
            stop.set()

    def toggler():
        on = False
        while not stop.is_set():
            on = not on
            tack.set_debug(on)
            time.sleep(0.001)
        tack.set_debug(False)

    def collector():
        while not stop.is_set():
            gc.collect()
            time.sleep(0.01)

    threads = [threading.Thread(target=launcher, args=(s,)) for s in range(3)]
    threads += [threading.Thread(target=toggler), threading.Thread(target=collector)]
    for t in threads:
        t.start()
    stop.wait(SECONDS)
    stop.set()
    for t in threads:
        t.join()
    tack.set_debug(False)
    if errors:
        raise errors[0]
    # Plain calls still work for every signature seen during the run.
    x = np.arange(100, dtype=np.float32)
    out = np.empty_like(x)
    axpy(x, x, out, 1.0)
    np.testing.assert_array_equal(out, x * 2)
    gc.collect()
    assert len(apply.variants()) <= 1  # the classes were retired as they were collected
