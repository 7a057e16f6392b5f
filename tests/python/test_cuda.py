"""The CUDA backend without a GPU: tack.cuda.compile gives the PTX of the
variant a call selects, for kernels of every kind (every dtype, math,
vectors, ndindex in 2-D and 3-D, atomics of every op and dtype, template
classes, textures, debug mode); ptxas must accept it for sm_80 and sm_90.
Skipped, saying so, where NVRTC or ptxas is absent.  tack.device("cuda")
raises RuntimeError naming what is missing where there is no driver."""
import ctypes.util
import os
import shutil
import subprocess
import tempfile

import numpy as np
import pytest

import tack

ARCHS = ("sm_80", "sm_90")


def _ptxas():
    for root in (os.environ.get("CUDA_PATH"), os.environ.get("CUDA_HOME"), "/usr/local/cuda"):
        if root and os.access(os.path.join(root, "bin", "ptxas"), os.X_OK):
            return os.path.join(root, "bin", "ptxas")
    return shutil.which("ptxas")


PTXAS = _ptxas()


@tack.kernel
def scale(x, out, a):
    for i in range(x.shape[0]):
        out[i] = x[i] * a


def _nvrtc_missing():
    try:
        tack.cuda.compile(scale, np.zeros(4, np.float32), np.zeros(4, np.float32), 2.0)
    except RuntimeError as e:
        return str(e)
    return None


NVRTC_MISSING = _nvrtc_missing()
needs_nvrtc = pytest.mark.skipif(NVRTC_MISSING is not None,
                                 reason=f"NVRTC absent: {NVRTC_MISSING}")


def check_ptx(kernel, *args):
    """PTX for each arch, each accepted by ptxas (when it is installed)."""
    name = "tack_" + kernel.__name__
    for arch in ARCHS:
        ptx = tack.cuda.compile(kernel, *args, arch=arch)
        assert f".target {arch}" in ptx
        assert f".entry {name}(" in ptx
        if PTXAS is None:
            continue
        with tempfile.TemporaryDirectory() as d:
            src = os.path.join(d, "k.ptx")
            with open(src, "w") as f:
                f.write(ptx)
            r = subprocess.run([PTXAS, f"-arch={arch}", "-o", os.path.join(d, "k.cubin"), src],
                               capture_output=True, text=True)
            assert r.returncode == 0, f"ptxas -arch={arch} refused {name}:\n{r.stderr}"


def test_ptxas_present_or_said():
    if PTXAS is None:
        pytest.skip("ptxas absent ($CUDA_PATH/bin, $CUDA_HOME/bin, /usr/local/cuda/bin, PATH): "
                    "PTX is checked only by NVRTC")


# ---- no driver ------------------------------------------------------------------

def test_device_without_driver_raises_runtime_error():
    if ctypes.util.find_library("cuda") and os.path.exists("/dev/nvidia0"):
        pytest.skip("a CUDA driver and GPU are present")
    with pytest.raises(RuntimeError) as e:
        tack.device("cuda")
    msg = str(e.value)
    assert "libcuda.so.1" in msg or "no CUDA device" in msg, msg
    # Asked again, the same answer; a numbered device too.
    with pytest.raises(RuntimeError):
        tack.device("cuda:1")


# ---- every dtype ----------------------------------------------------------------

@tack.kernel
def arith(x, y, out):
    for i in range(x.shape[0]):
        out[i] = x[i] * y[i] + (x[i] - y[i]) // (y[i] | 1) + x[i] % (y[i] | 1)


@tack.kernel
def farith(x, y, out, a):
    for i in range(x.shape[0]):
        out[i] = x[i] * y[i] + (x[i] - y[i]) / a + x[i] // a + x[i] % a + x[i] ** 2 + abs(y[i])


@tack.kernel
def compare(x, y, out):
    for i in range(x.shape[0]):
        out[i] = (x[i] < y[i]) != (x[i] == y[i]) and not (x[i] > y[i])


@tack.kernel
def convert(x, out):
    for i in range(x.shape[0]):
        out[i] = x[i]


INTS = ["i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64"]
ALL = ["bool"] + INTS + ["f32", "f64"]


def np_of(name):
    return {"bool": np.bool_, "f32": np.float32, "f64": np.float64}.get(name) or getattr(
        np, {"i": "int", "u": "uint"}[name[0]] + name[1:])


@needs_nvrtc
@pytest.mark.parametrize("t", INTS)
def test_integer_arith(t):
    a = np.zeros(64, np_of(t))
    check_ptx(arith, a, a, a.copy())


@needs_nvrtc
@pytest.mark.parametrize("t", ["f32", "f64"])
def test_float_arith(t):
    a = np.zeros(64, np_of(t))
    check_ptx(farith, a, a, a.copy(), 1.5)


@needs_nvrtc
@pytest.mark.parametrize("t", ALL)
def test_compare_every_dtype(t):
    a = np.zeros(16, np_of(t))
    check_ptx(compare, a, a, np.zeros(16, np.bool_))


@needs_nvrtc
@pytest.mark.parametrize("src", ALL)
@pytest.mark.parametrize("dst", ["bool", "i8", "u16", "i64", "u64", "f32", "f64"])
def test_conversions(src, dst):
    check_ptx(convert, np.zeros(8, np_of(src)), np.zeros(8, np_of(dst)))


# ---- math ------------------------------------------------------------------------

@tack.kernel
def transcendental(x, out):
    for i in range(x.shape[0]):
        v = x[i]
        out[i] = (tack.math.sqrt(abs(v)) + tack.math.exp(v) + tack.math.log(abs(v) + 1.0)
                  + tack.math.sin(v) * tack.math.cos(v) + tack.math.tan(v) + tack.math.atan2(v, 2.0)
                  + tack.math.pow(abs(v), 1.7) + tack.math.floor(v) + tack.math.ceil(v)
                  + tack.math.fmod(v, 3.0) + tack.math.hypot(v, 1.0) + tack.math.tanh(v)
                  + round(v) + tack.math.log2(abs(v) + 1.0) + tack.math.copysign(1.0, v))


@needs_nvrtc
@pytest.mark.parametrize("t", ["f32", "f64"])
def test_math(t):
    a = np.zeros(8, np_of(t))
    check_ptx(transcendental, a, a.copy())


# ---- f16 storage ----------------------------------------------------------------

@tack.kernel
def half_round(x, out):
    for i in range(x.shape[0]):
        out[i] = tack.f16(x[i]) * 2.0


@needs_nvrtc
@pytest.mark.parametrize("other", ALL)
def test_f16_conversions(other):
    check_ptx(convert, np.zeros(8, np.float16), np.zeros(8, np_of(other)))
    check_ptx(convert, np.zeros(8, np_of(other)), np.zeros(8, np.float16))


@needs_nvrtc
def test_f16_arith_and_rounding():
    a = np.zeros(64, np.float16)
    check_ptx(farith, a, a, a.copy(), 1.5)
    ptx = tack.cuda.compile(farith, a, a, a.copy(), 1.5, arch="sm_80")
    assert "cvt.f32.f16" in ptx and "cvt.rn.f16.f32" in ptx
    for src, cvt in ((np.float32, "cvt.rn.f16.f32"), (np.float64, "cvt.rn.f16.f64")):
        x = np.zeros(8, src)
        check_ptx(half_round, x, np.zeros(8, np.float16))
        check_ptx(half_round, x, np.zeros(8, np.float32))
        assert cvt in tack.cuda.compile(half_round, x, np.zeros(8, np.float32), arch="sm_90")


# ---- control flow, device functions, scalars -----------------------------------

@tack.func
def collatz(n):
    c = 0
    while n != 1:
        if n % 2 == 0:
            n = n // 2
        else:
            n = 3 * n + 1
        c += 1
    return c


@tack.kernel
def steps(out, start, stop, step, flag):
    for i in range(start, stop, step):
        acc = 0
        for j in range(i % 5):
            if flag and j == 3:
                break
            acc += collatz(j + 1)
        out[i] = acc


@needs_nvrtc
def test_functions_loops_and_scalars():
    check_ptx(steps, np.zeros(100, np.int64), 90, 2, -3, True)
    check_ptx(steps, np.zeros(100, np.int64), 1 << 40, 2, 7, False)  # an i64 scalar


# ---- vectors -------------------------------------------------------------------

@tack.kernel
def shade(p, n, light, out, moved):
    for i in range(p.shape[0]):
        d = (light[0] - p[i]).normalized()
        out[i] = max(n[i].dot(d), 0.0) + p[i].length()
        moved[i] = p[i] * 2.0 + n[i] / 3.0


@needs_nvrtc
@pytest.mark.parametrize("vt", ["vec2f", "vec3f", "vec4f", "vec2d", "vec3d", "vec4d"])
def test_vectors(vt):
    dt = getattr(tack, vt)
    scalar = np.float64 if vt.endswith("d") else np.float32
    p = tack.zeros((32,), dtype=dt)
    check_ptx(shade, p, tack.zeros((32,), dtype=dt), tack.zeros((1,), dtype=dt),
              np.zeros(32, scalar), tack.zeros((32,), dtype=dt))


@tack.kernel
def ivec(a, out):
    for i in range(a.shape[0]):
        out[i] = a[i] * 3 + a[i] // 2


@needs_nvrtc
def test_int_vectors():
    check_ptx(ivec, tack.zeros((8,), dtype=tack.vec3i), tack.zeros((8,), dtype=tack.vec3i))


# ---- ndindex --------------------------------------------------------------------

@tack.kernel
def fill2(a, k):
    for i, j in tack.ndindex(a.shape[0], a.shape[1]):
        a[i, j] = i * k + j


@tack.kernel
def fill3(a):
    for i, j, l in tack.ndindex(a.shape[0], a.shape[1], a.shape[2]):
        a[i, j, l] = i * 100 + j * 10 + l


@tack.kernel
def stencil(u, out):
    for i, j in tack.ndindex(u.shape[0] - 2, u.shape[1] - 2):
        out[i + 1, j + 1] = 0.25 * (u[i, j + 1] + u[i + 2, j + 1] + u[i + 1, j] + u[i + 1, j + 2])


@needs_nvrtc
def test_ndindex():
    check_ptx(fill2, np.zeros((13, 11), np.int32), 7)
    check_ptx(fill3, np.zeros((5, 7, 9), np.int64))
    check_ptx(stencil, np.zeros((64, 64), np.float32), np.zeros((64, 64), np.float32))


# ---- atomics -------------------------------------------------------------------

@tack.kernel
def atomics_int(h, idx, v, old):
    for i in range(idx.shape[0]):
        j = idx[i]
        old[i, 0] = tack.atomic_add(h, j, v[i])
        old[i, 1] = tack.atomic_sub(h, j, v[i])
        old[i, 2] = tack.atomic_min(h, j, v[i])
        old[i, 3] = tack.atomic_max(h, j, v[i])
        old[i, 4] = tack.atomic_and(h, j, v[i])
        old[i, 5] = tack.atomic_or(h, j, v[i])
        old[i, 6] = tack.atomic_xor(h, j, v[i])
        old[i, 7] = tack.atomic_exchange(h, j, v[i])
        old[i, 8] = tack.atomic_compare_exchange(h, j, v[i], old[i, 0])


@tack.kernel
def atomics_float(h, idx, v, old):
    for i in range(idx.shape[0]):
        j = idx[i]
        old[i, 0] = tack.atomic_add(h, j, v[i])
        old[i, 1] = tack.atomic_sub(h, j, v[i])
        old[i, 2] = tack.atomic_min(h, j, v[i])
        old[i, 3] = tack.atomic_max(h, j, v[i])
        old[i, 4] = tack.atomic_exchange(h, j, v[i])
        old[i, 5] = tack.atomic_compare_exchange(h, j, v[i], old[i, 0])


@tack.kernel
def histogram(data, hist):
    for i in range(data.shape[0]):
        tack.atomic_add(hist, (data[i] % hist.shape[0], 0), 1)


@needs_nvrtc
@pytest.mark.parametrize("t", INTS)
def test_atomics_int(t):
    d = np_of(t)
    check_ptx(atomics_int, np.zeros(8, d), np.zeros(16, np.int32), np.zeros(16, d),
              np.zeros((16, 9), d))


@needs_nvrtc
@pytest.mark.parametrize("t", ["f32", "f64"])
def test_atomics_float(t):
    d = np_of(t)
    check_ptx(atomics_float, np.zeros(8, d), np.zeros(16, np.int32), np.zeros(16, d),
              np.zeros((16, 6), d))


@needs_nvrtc
@pytest.mark.parametrize("t", ["i32", "u64", "f32", "f64"])
def test_atomic_2d_index(t):
    check_ptx(histogram, np.zeros(100, np.int64), np.zeros((10, 1), np_of(t)))


# ---- template classes ------------------------------------------------------------

@tack.device_class
class Field:
    factor = 2.0

    def __init__(self, data, offset):
        self.data = data
        self.offset = offset

    @tack.func
    def at(self, i):
        return self.data[i] * self.factor + self.offset


@tack.device_class
class Pair:
    def __init__(self, a, b):
        self.a = a
        self.b = b


@tack.kernel
def use_field(f, out):
    for i in range(out.shape[0]):
        out[i] = f.at(i)


@tack.kernel
def use_pair(p, out):
    for i in range(out.shape[0]):
        out[i] = p.a.at(i) + p.b.at(i) + p.a.data[i]


@needs_nvrtc
@pytest.mark.parametrize("t", ["f32", "f64", "i32"])
def test_templates(t):
    d = np_of(t)
    f = Field(np.zeros(16, d), 1)
    check_ptx(use_field, f, np.zeros(16, d))
    check_ptx(use_pair, Pair(f, Field(np.zeros(16, d), 2.5)), np.zeros(16, np.float64))


# ---- textures ----------------------------------------------------------------------

@tack.kernel
def sample_points(tex, uvw, out):
    for i in range(out.shape[0]):
        out[i] = tex.sample(uvw[i, 0], uvw[i, 1], uvw[i, 2])


@needs_nvrtc
@pytest.mark.parametrize("t", ["f32", "f64"])
def test_textures(t):
    d = np_of(t)
    tex = tack.Texture3D(np.zeros((4, 5, 6), d))
    check_ptx(sample_points, tex, np.zeros((10, 3), d), np.zeros(10, d))


@needs_nvrtc
def test_f32_textures_use_the_texture_unit():
    """An f32 texture is fetched from a texture object with tex3D (PTX tex.3d,
    which ptxas accepts: test_textures above); an f64 one, which the texture
    unit cannot filter, is filtered in software from its array, as OpenCL
    does for both."""
    args32 = (tack.Texture3D(np.zeros((4, 5, 6), np.float32)), np.zeros((10, 3), np.float32),
              np.zeros(10, np.float32))
    args64 = (tack.Texture3D(np.zeros((4, 5, 6))), np.zeros((10, 3)), np.zeros(10))
    src = tack.cuda.source(sample_points, *args32)
    assert "unsigned long long tex0)" in src and "tex3D<float>(tex0, " in src
    assert "floorf" not in src
    for arch in ARCHS:
        assert "tex.3d.v4.f32.f32" in tack.cuda.compile(sample_points, *args32, arch=arch)
    src64 = tack.cuda.source(sample_points, *args64)
    assert "tex3D" not in src64 and "floor(" in src64
    assert "tex.3d" not in tack.cuda.compile(sample_points, *args64, arch="sm_90")
    assert "tex3D" not in tack.opencl.source(sample_points, *args32)


# ---- debug mode -------------------------------------------------------------------

@tack.kernel
def gather(x, idx, out):
    for i in range(idx.shape[0]):
        out[i] = x[idx[i]]
        tack.atomic_add(out, idx[i], 1.0)


@needs_nvrtc
def test_debug_mode_gives_the_checked_variant():
    args = (np.zeros(10, np.float32), np.zeros(5, np.int32), np.zeros(5, np.float32))
    plain = tack.cuda.source(gather, *args)
    tack.set_debug(True)
    try:
        checked = tack.cuda.source(gather, *args)
        check_ptx(gather, *args)
        check_ptx(arith, *(np.zeros(4, np.int16),) * 3)
        check_ptx(fill3, np.zeros((2, 3, 4), np.int64))
    finally:
        tack.set_debug(False)
    assert checked != plain and len(checked) > len(plain)
    assert tack.cuda.source(gather, *args) == plain


# ---- what the call selects, and refusals -----------------------------------------

def test_variant_is_a_gpu_devices():
    x = np.zeros(16, np.float32)
    src = tack.cuda.source(scale, x, x, 2.0)  # overlapping: never the restrict variant
    assert "__restrict__" not in src and "extern \"C\" __global__ void tack_scale(" in src
    assert "__fmul_rn" in src
    d = tack.cuda.source(scale, np.zeros(16), np.zeros(16), 2.0)
    assert "double *p0" in d and "__dmul_rn" in d
    # A tack.Array on the CPU counts as any array.
    assert tack.cuda.source(scale, tack.zeros((16,)), tack.zeros((16,)), 2.0) == src
    cl = tack.opencl.source(scale, x, x, 2.0)
    assert "__kernel void tack_scale(" in cl
    # Generation compiles no variant on any device.
    assert scale.variants(device="cpu") == []


def test_refusals():
    x = np.zeros(16, np.float32)
    with pytest.raises(ValueError, match="not a CUDA architecture"):
        tack.cuda.compile(scale, x, x, 2.0, arch="90")
    with pytest.raises(ValueError, match="unknown code-generation target"):
        tack._tack._generate(scale, "metal", (x, x, 2.0))
    with pytest.raises(TypeError, match="takes 3 arguments"):
        tack.cuda.source(scale, x, x)
    with pytest.raises(TypeError, match="'out'"):
        tack.cuda.source(scale, x, 3, 2.0)
    ro = np.zeros(16, np.float32)
    ro.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        tack.cuda.source(scale, x, ro, 2.0)


@tack.kernel
def data_range(n, out):
    for i in range(n[0]):
        out[i] = 1


@tack.kernel
def atomic_range(n, out):
    for i in range(tack.atomic_add(n, 0, 1)):
        out[i] = 1


def test_range_reading_an_array_element_builds_and_atomics_do_not():
    # the element is read from the device when each call's range is evaluated
    src = tack.cuda.source(data_range, np.zeros(1, np.int32), np.zeros(4, np.int32))
    assert "__global__" in src
    with pytest.raises(tack.CompileError, match="atomic_range") as e:
        tack.cuda.source(atomic_range, np.zeros(1, np.int32), np.zeros(4, np.int32))
    assert "atomics" in str(e.value)


@needs_nvrtc
def test_unsupported_arch_names_it():
    x = np.zeros(16, np.float32)
    with pytest.raises(ValueError, match="sm_30"):
        tack.cuda.compile(scale, x, x, 2.0, arch="sm_30")


@needs_nvrtc
def test_issue27_idioms_ptx():
    """Vector indices, static loops, tables of vectors, keyword-only calls
    and Taichi's mpm88 P2G/G2P (tests/python/test_issue27_idioms.py)."""
    import test_gpu_dialects as g
    labels = {"keyword_only", "vector_index_scatter", "static_loops", "vector_table",
              "int_vector_table", "mpm88_p2g", "mpm88_g2p"}
    cases = [(label, k, args) for label, k, args, _ in g.CASES if label in labels]
    assert len(cases) == len(labels)
    for _, kernel, args in cases:
        check_ptx(kernel, *args)


@needs_nvrtc
def test_issue27_rest_ptx():
    """Pivoted determinant (16x16) and inverse beyond 4x4, integer vector
    expressions returned, an 8x8 sum into an array, a row passed to a
    device function (tests/python/test_issue27_rest.py)."""
    import test_gpu_dialects as g
    labels = {"determinant_16x16", "inverse_6x6", "returned_int_vectors", "wide_sum_into_array",
              "row_to_device_function"}
    cases = [(label, k, args) for label, k, args, _ in g.CASES if label in labels]
    assert len(cases) == len(labels)
    for _, kernel, args in cases:
        check_ptx(kernel, *args)


@needs_nvrtc
def test_issue27_numba_warp_ptx():
    """tack.where/select, reductions of local arrays, complex local arrays
    and complex scalar arguments (tests/python/test_issue27_numba_warp.py)."""
    import test_gpu_dialects as g
    labels = {"warp_where_select", "local_reductions_f32", "local_reductions_list",
              "local_complex_dft_f64", "local_complex_updates_f64", "complex_scalar_args_c64",
              "complex_scalar_args_f64"}
    cases = [(label, k, args) for label, k, args, _ in g.CASES if label in labels]
    assert len(cases) == len(labels)
    for _, kernel, args in cases:
        check_ptx(kernel, *args)
