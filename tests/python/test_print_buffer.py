"""print() in kernels, issue 26 item 4: a print of many values compiles
quickly (a variadic printf of 256 float arguments took minutes inside LLVM's
SLP vectorizer on the CPU; the CPU now stores the values in a buffer and
calls one formatting function, src/backend/cpu/print_rt.c), a print of more
values than a kernel may print is a CompileError naming the line and the
limit, and many lines still come out whole."""
import textwrap
import time

import numpy as np
import pytest

import tack
from test_print import lines_of, py_float

pytestmark = pytest.mark.every_device

LIMIT = 512  # docs/language.md, "Printing"


def _wide_kernel(tmp_path, nvalues, name):
    """A kernel printing x[i, 0] .. x[i, nvalues - 1] in one print()."""
    items = ", ".join(f"x[i, {k}]" for k in range(nvalues))
    src = textwrap.dedent(f"""\
        import tack

        @tack.kernel
        def {name}(x):
            for i in range(x.shape[0]):
                print(i, {items})
        """)
    path = tmp_path / f"{name}_mod.py"
    path.write_text(src)
    ns = {}
    exec(compile(src, str(path), "exec"), ns)
    return ns[name]


@pytest.mark.parametrize("dtype,bits", [(np.float64, 64), (np.float32, 32)])
@pytest.mark.parametrize("nvalues", [256, 300])
def test_a_print_of_hundreds_of_floats_compiles_quickly(tmp_path, capfd, device, dtype, bits,
                                                       nvalues):
    kern = _wide_kernel(tmp_path, nvalues, f"wide_{bits}_{nvalues}")
    x = (np.arange(3 * nvalues, dtype=np.float64).reshape(3, nvalues) * 0.5 - 7).astype(dtype)
    x[1, 3] = np.nan
    x[2, 5] = -np.inf
    start = time.monotonic()
    kern(x)
    elapsed = time.monotonic() - start
    want = sorted(" ".join([str(i)] + [py_float(v, bits) for v in x[i]]) for i in range(3))
    assert sorted(lines_of(capfd)) == want
    assert elapsed < 30, f"{nvalues} values took {elapsed:.1f} s to compile and run"


def test_a_print_at_the_limit_compiles_and_prints(tmp_path, capfd, device):
    kern = _wide_kernel(tmp_path, LIMIT - 1, "at_limit")  # the index makes LIMIT
    x = np.arange(2 * (LIMIT - 1), dtype=np.int64).reshape(2, LIMIT - 1) - 300
    start = time.monotonic()
    kern(x)
    assert time.monotonic() - start < 60
    want = sorted(" ".join([str(i)] + [str(v) for v in x[i]]) for i in range(2))
    assert sorted(lines_of(capfd)) == want


def test_a_print_over_the_limit_is_a_compile_error(tmp_path, device):
    kern = _wide_kernel(tmp_path, LIMIT, "over_limit")  # LIMIT + 1 with the index
    with pytest.raises(tack.CompileError) as info:
        kern(np.zeros((2, LIMIT), np.float32))
    msg = str(info.value)
    assert f"at most {LIMIT} values" in msg and f"has {LIMIT + 1}" in msg, msg
    assert "over_limit" in msg and info.value.lineno == 6, msg


def test_vector_components_count_toward_the_limit(tmp_path, device):
    src = textwrap.dedent(f"""\
        import tack

        @tack.kernel
        def vec_over(x):
            for i in range(x.shape[0]):
                v = tack.vec3f(x[i], x[i], x[i])
                print({", ".join(["v"] * (LIMIT // 3 + 1))})
        """)
    path = tmp_path / "vec_over_mod.py"
    path.write_text(src)
    ns = {}
    exec(compile(src, str(path), "exec"), ns)
    with pytest.raises(tack.CompileError) as info:
        ns["vec_over"](np.zeros(2, np.float32))
    assert f"at most {LIMIT} values" in str(info.value) and info.value.lineno == 7


@tack.kernel
def show_mixed(x, flags):
    for i in range(x.shape[0]):
        print("it", i, flags[i], x[i], -i, "100%")


@pytest.mark.cpu_only
def test_200000_lines_each_whole(capfd):
    n = 200_000
    x = np.arange(n, dtype=np.float64) * 0.125 - 3
    flags = (np.arange(n) % 3 == 0)
    show_mixed(x, flags)
    got = lines_of(capfd)
    want = [f"it {i} {bool(flags[i])} {py_float(x[i], 64)} {-i} 100%" for i in range(n)]
    assert len(got) == n
    assert sorted(got) == sorted(want)


@pytest.mark.cpu_only
def test_cuda_takes_a_print_over_printf_s_32_arguments(tmp_path):
    """CUDA's printf ignored arguments past 32; a print is a record now
    (gpu/print_buf.c), so a print of 16 floats (33 printf arguments) is whole."""
    over = _wide_kernel(tmp_path, 16, "cuda_over")
    x = np.zeros((2, 16), np.float32)
    for source in (tack.cuda.source, tack.hip.source, tack.opencl.source):
        src = source(over, x)
        assert "tk_print_at(tk_print, 35u)" in src and "printf" not in src, src
