"""`return` of any expression of reductions and scalars (issue 27 item 4):
`return s / n`, `return m + math.log(s)`, tuples mixing them with
reductions.  Results against NumPy, on every device."""
import math
import os

import numpy as np
import pytest

import tack

HERE = os.path.abspath(__file__)
pytestmark = pytest.mark.every_device


@tack.kernel
def mean(x):
    s = 0.0
    for i in range(x.shape[0]):
        s += x[i]
    return s / x.shape[0]


@tack.kernel
def logsumexp(x):
    m = -math.inf
    for i in range(x.shape[0]):
        m = max(m, x[i])
    s = 0.0
    for i in range(x.shape[0]):
        s += math.exp(x[i] - m)
    return m + math.log(s), s, m


@tack.kernel
def counts(x, limit, out):
    c = 0
    for i in range(x.shape[0]):
        if x[i] > limit:
            c += 1
    out[0] = c
    return c - 1, c * 2 // 3, c, c > 3


@tack.kernel
def mean_and_var(x):
    n = x.shape[0]
    s = 0.0
    q = 0.0
    for i in range(n):
        s += x[i]
        q += x[i] * x[i]
    mu = s / n
    return mu, q / n - mu * mu


@tack.kernel
def with_argument(x, k):
    s = 0.0
    for i in range(x.shape[0]):
        s += x[i]
    return s * k + 1


@tack.kernel
def int_argument(x, k):
    c = 0
    for i in range(x.shape[0]):
        c += 1
    return c + k  #@ambiguous


@tack.kernel
def int_argument_cast(x, k):
    c = 0
    for i in range(x.shape[0]):
        c += 1
    return c + int(k), float(c) / 4


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n", [1, 1000])
def test_mean(device, dtype, n):
    x = np.random.default_rng(n).random(n).astype(dtype)
    r = mean(x)
    assert isinstance(r, float)
    assert r == pytest.approx(float(x.astype(np.float64).mean()), rel=1e-5)


def test_mean_of_nothing_is_nan(device):
    # 0.0 / 0 in the kernel's float type, as NumPy's mean of nothing
    with np.errstate(invalid="ignore"):
        assert math.isnan(mean(np.zeros(0)))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_logsumexp_and_reductions_in_one_tuple(device, dtype):
    x = (np.random.default_rng(3).random(500) * 50).astype(dtype)
    lse, s, m = logsumexp(x)
    x64 = x.astype(np.float64)
    assert m == float(x.max())
    assert s == pytest.approx(np.exp(x64 - x64.max()).sum(), rel=1e-5)
    assert lse == pytest.approx(np.log(np.exp(x64 - x64.max()).sum()) + x64.max(), rel=1e-6)


def test_integer_results_stay_integers(device):
    x = np.random.default_rng(5).random(301)
    out = np.zeros(1)
    r = counts(x, 0.5, out)
    c = int((x > 0.5).sum())
    assert r == (c - 1, c * 2 // 3, c, 1)
    assert all(type(v) is int for v in r)
    assert out[0] == c


def test_scalars_around_the_loop_in_the_return(device):
    x = np.random.default_rng(7).random(64)
    mu, var = mean_and_var(x)
    assert mu == pytest.approx(x.mean())
    assert var == pytest.approx(x.var(), rel=1e-9)


def test_float_argument_in_the_return(device):
    x = np.arange(4, dtype=np.float32)
    assert with_argument(x, 2.5) == 6.0 * 2.5 + 1


def test_casts_make_an_argument_s_type_known(device):
    assert int_argument_cast(np.zeros(6, np.float32), 4) == (10, 1.5)


def test_an_argument_whose_type_decides_the_result_is_named():
    from conftest import line_of
    with pytest.raises(tack.CompileError) as e:
        int_argument(np.zeros(3, np.float32), 4)
    assert "'k'" in str(e.value) and "float(...) or int(...)" in str(e.value)
    assert e.value.lineno == line_of(HERE, "#@" + "ambiguous")
