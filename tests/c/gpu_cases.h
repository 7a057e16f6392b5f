/* gpu_cases.h - the kernels the GPU emitter is tested on, with their
 * arguments: every dtype, the numeric edge cases, control flow, inlined
 * functions, vectors, atomics, ndindex and debug mode.  test_gpu_emit.c
 * compiles them; gpu_emit_run.c runs them on OpenCL and on the CPU backend
 * and compares. */
#ifndef TACK_TEST_GPU_CASES_H
#define TACK_TEST_GPU_CASES_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "tack.h"

typedef enum gl_init {
    INIT_ZERO,  /* zeros */
    INIT_EDGE,  /* edge values, element k: edges[k % E] */
    INIT_EDGE2, /* edges[(k / E) % E]: with INIT_EDGE, every pair */
    INIT_SMALL, /* (k % 7) - 3 */
    INIT_IOTA   /* k */
} gl_init;

typedef struct gl_argspec {
    int is_array;
    tack_dtype dtype;
    int ndim, vec;
    int64_t shape[TACK_MAX_NDIM];
    gl_init init;
    tack_arg scalar;
    /* A strided view (gl_view) into a buffer of gl_elems elements: every
     * step0-th index of dimension 0 (0, 1: each), and for a 2-D array of
     * scalars, the transpose of a C-order buffer (Fortran order). */
    int step0, transpose;
} gl_argspec;

typedef struct gl_case {
    char name[48];
    const char *src;
    int debug;    /* bounds-checked */
    int tolerant; /* transcendental functions: a few ulp apart is fine */
    int nargs;
    gl_argspec a[12];
} gl_case;

/* Edge values: as doubles for floats, as int64 bits for integers. */
static const double gl_float_edges[] = {
    0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 1.5, 2.5, -2.5, 3.0, 7.0, 0.1, 1e-40, 1e-310, 3e38, -3e38,
    1e300, INFINITY, -INFINITY, NAN, 127.9, 128.0, -128.9, -129.0, 255.5, 256.0, 32767.5,
    2147483520.0, 2147483648.0, -2147483648.0, -2147483904.0, 4294967040.0, 4294967296.0,
    9223371487098961920.0, 9223372036854775808.0, -9.3e18, 18446742974197923840.0, 2e19, 0.9,
    -0.99};
#define GL_NFLOAT ((int)(sizeof gl_float_edges / sizeof gl_float_edges[0]))

static const int64_t gl_int_edges[] = {0, 1, -1, 2, -2, 3, 7, 8, 15, 16, 31, 32, 63, 64, 100,
                                       -100, 127, 128, 255, 32767, 65535,
                                       INT32_MAX, INT32_MIN, INT64_MAX, INT64_MIN,
                                       INT64_MIN + 1, INT64_MAX - 1, 0x123456789abcdefll};
#define GL_NINT ((int)(sizeof gl_int_edges / sizeof gl_int_edges[0]))

static int gl_nedges(tack_dtype t) {
    return t == TACK_F32 || t == TACK_F64 ? GL_NFLOAT : t == TACK_BOOL ? 2 : GL_NINT;
}

/* Writes element k of an array initialized by `init` into p. */
static inline void gl_fill(void *p, tack_dtype t, gl_init init, int64_t k) {
    int E = gl_nedges(t);
    int64_t at = init == INIT_EDGE2 ? (k / E) % E : k % E;
    double f = 0;
    int64_t i = 0;
    switch (init) {
    case INIT_ZERO: break;
    case INIT_EDGE:
    case INIT_EDGE2:
        if (t == TACK_F32 || t == TACK_F64) f = gl_float_edges[at];
        else i = t == TACK_BOOL ? at : gl_int_edges[at];
        break;
    case INIT_SMALL: f = (double)(k % 7 - 3), i = k % 7 - 3; break;
    case INIT_IOTA: f = (double)k, i = k; break;
    }
    switch (t) {
    case TACK_BOOL: *(uint8_t *)p = i != 0; break;
    case TACK_I8: case TACK_U8: *(uint8_t *)p = (uint8_t)i; break;
    case TACK_I16: case TACK_U16: *(uint16_t *)p = (uint16_t)i; break;
    case TACK_I32: case TACK_U32: *(uint32_t *)p = (uint32_t)i; break;
    case TACK_I64: case TACK_U64: *(uint64_t *)p = (uint64_t)i; break;
    case TACK_F32: *(float *)p = (float)f; break;
    case TACK_F64: *(double *)p = f; break;
    default: break;
    }
}

/* Elements of an argument's buffer: its view's, times the step. */
static inline int64_t gl_elems(const gl_argspec *s) {
    int64_t n = s->step0 > 1 ? s->step0 : 1;
    for (int d = 0; d < s->ndim; d++) n *= s->shape[d];
    return n;
}

/* The argument over buffer `data`, with the view's strides. */
static inline tack_arg gl_view(const gl_argspec *s, void *data) {
    tack_arg a = s->vec ? tack_arg_vector_array(data, s->dtype, s->vec, 1, s->shape, 1)
                        : tack_arg_array(data, s->dtype, s->ndim, s->shape, 1);
    int64_t k = s->step0 > 1 ? s->step0 : 1, sz = (int64_t)tack_dtype_size(s->dtype);
    if (s->transpose && s->ndim == 2) { /* view[i, j] = buffer[j, i * k] */
        a.strides[0] = k * sz;
        a.strides[1] = s->shape[0] * k * sz;
    } else {
        a.strides[0] *= k;
    }
    return a;
}

static gl_argspec gl_arr(tack_dtype t, int ndim, int64_t d0, int64_t d1, int64_t d2, gl_init init) {
    gl_argspec a = {1, t, ndim, 0, {d0, d1, d2, 1}, init, {0}, 0, 0};
    return a;
}
static gl_argspec gl_vec(tack_dtype t, int width, int64_t n, gl_init init) {
    gl_argspec a = {1, t, 2, width, {n, width, 1, 1}, init, {0}, 0, 0};
    return a;
}
static gl_argspec gl_sc(tack_arg v) {
    gl_argspec a = {0, TACK_I64, 0, 0, {0}, INIT_ZERO, v, 0, 0};
    return a;
}

static const char *const gl_src_arith =
    "def arith(a, b, out):\n"
    "    for i in range(a.shape[0]):\n"
    "        x = a[i]\n"
    "        y = b[i]\n"
    "        out[i, 0] = x + y\n"
    "        out[i, 1] = x - y\n"
    "        out[i, 2] = x * y\n"
    "        out[i, 3] = x // y\n"
    "        out[i, 4] = x % y\n"
    "        out[i, 5] = x ** y\n"
    "        out[i, 6] = x << y\n"
    "        out[i, 7] = x >> y\n"
    "        out[i, 8] = x & y\n"
    "        out[i, 9] = x | y\n"
    "        out[i, 10] = x ^ y\n"
    "        out[i, 11] = -x\n"
    "        out[i, 12] = ~x\n"
    "        out[i, 13] = abs(x)\n"
    "        out[i, 14] = min(x, y)\n"
    "        out[i, 15] = max(x, y)\n"
    "        out[i, 16] = x < y\n"
    "        out[i, 17] = x == y\n"
    "        out[i, 18] = x if x >= y else y\n"
    "        out[i, 19] = x and y\n"
    "        out[i, 20] = x or y\n"
    "        out[i, 21] = (x + 1) * 3 - y // 2\n"
    "        out[i, 22] = x // 3 + x % -5 + x ** 2\n"
    "        out[i, 23] = round(x) + int(x) + x * True\n";
#define GL_ARITH_COLS 24

static const char *const gl_src_farith =
    "def farith(a, b, out):\n"
    "    for i in range(a.shape[0]):\n"
    "        x = a[i]\n"
    "        y = b[i]\n"
    "        out[i, 0] = x + y\n"
    "        out[i, 1] = x - y\n"
    "        out[i, 2] = x * y\n"
    "        out[i, 3] = x / y\n"
    "        out[i, 4] = x // y\n"
    "        out[i, 5] = x % y\n"
    "        out[i, 6] = -x\n"
    "        out[i, 7] = abs(x)\n"
    "        out[i, 8] = min(x, y)\n"
    "        out[i, 9] = max(x, y)\n"
    "        out[i, 10] = x < y\n"
    "        out[i, 11] = x != y\n"
    "        out[i, 12] = math.floor(x)\n"
    "        out[i, 13] = math.ceil(x)\n"
    "        out[i, 14] = math.trunc(x)\n"
    "        out[i, 15] = math.sqrt(x)\n"
    "        out[i, 16] = math.copysign(x, y)\n"
    "        out[i, 17] = math.fmod(x, y)\n"
    "        out[i, 18] = math.isnan(x)\n"
    "        out[i, 19] = math.isinf(x)\n"
    "        out[i, 20] = math.isfinite(x)\n"
    "        out[i, 21] = x * y + x\n"
    "        out[i, 22] = round(x)\n"
    "        out[i, 23] = x if x == x else y\n"
    "        out[i, 24] = x and y\n"
    "        out[i, 25] = x or y\n"
    "        out[i, 26] = math.fabs(x) * 0.1 - y * 2.5\n"
    "        out[i, 27] = x ** 2.0\n"
    "        out[i, 28] = x ** 0.5 + math.pow(x, -1.0)\n"
    "        out[i, 29] = x ** 1.0 - x ** 0.0\n";
#define GL_FARITH_COLS 30

static const char *const gl_src_casts =
    "def casts(a, o8, o16, o32, o64, u8, u16, u32, u64, ob, f32, f64):\n"
    "    for i in range(a.shape[0]):\n"
    "        x = a[i]\n"
    "        o8[i] = x\n"
    "        o16[i] = x\n"
    "        o32[i] = x\n"
    "        o64[i] = x\n"
    "        u8[i] = x\n"
    "        u16[i] = x\n"
    "        u32[i] = x\n"
    "        u64[i] = x\n"
    "        ob[i] = x\n"
    "        f32[i] = x\n"
    "        f64[i] = x\n";

static const char *const gl_src_transc =
    "def transc(a, b, out):\n"
    "    for i in range(a.shape[0]):\n"
    "        x = a[i]\n"
    "        y = b[i]\n"
    "        out[i, 0] = math.sin(x)\n"
    "        out[i, 1] = math.cos(x)\n"
    "        out[i, 2] = math.tan(x)\n"
    "        out[i, 3] = math.asin(x)\n"
    "        out[i, 4] = math.acos(x)\n"
    "        out[i, 5] = math.atan(x)\n"
    "        out[i, 6] = math.sinh(x)\n"
    "        out[i, 7] = math.cosh(x)\n"
    "        out[i, 8] = math.tanh(x)\n"
    "        out[i, 9] = math.exp(x)\n"
    "        out[i, 10] = math.log(x)\n"
    "        out[i, 11] = math.log2(x)\n"
    "        out[i, 12] = math.log10(x)\n"
    "        out[i, 13] = math.atan2(x, y)\n"
    "        out[i, 14] = math.pow(x, y)\n"
    "        out[i, 15] = math.hypot(x, y)\n"
    "        out[i, 16] = x ** y\n";
#define GL_TRANSC_COLS 17

static const char *const gl_src_atom_int =
    "def atom_int(acc, e, v, old):\n"
    "    for i in range(v.shape[0]):\n"
    "        x = v[i]\n"
    "        old[i, 0] = tack.atomic_add(acc, (i, 0), x)\n"
    "        old[i, 1] = tack.atomic_sub(acc, (i, 1), x)\n"
    "        old[i, 2] = tack.atomic_min(acc, (i, 2), x)\n"
    "        old[i, 3] = tack.atomic_max(acc, (i, 3), x)\n"
    "        old[i, 4] = tack.atomic_exchange(acc, (i, 4), x)\n"
    "        old[i, 5] = tack.atomic_compare_exchange(acc, (i, 5), e[i, 5 - i % 2], x)\n"
    "        old[i, 6] = tack.atomic_and(acc, (i, 6), x)\n"
    "        old[i, 7] = tack.atomic_or(acc, (i, 7), x)\n"
    "        old[i, 8] = tack.atomic_xor(acc, (i, 8), x)\n";

static const char *const gl_src_atom_float =
    "def atom_float(acc, e, v, old):\n"
    "    for i in range(v.shape[0]):\n"
    "        x = v[i]\n"
    "        old[i, 0] = tack.atomic_add(acc, (i, 0), x)\n"
    "        old[i, 1] = tack.atomic_sub(acc, (i, 1), x)\n"
    "        old[i, 2] = tack.atomic_min(acc, (i, 2), x)\n"
    "        old[i, 3] = tack.atomic_max(acc, (i, 3), x)\n"
    "        old[i, 4] = tack.atomic_exchange(acc, (i, 4), x)\n"
    "        old[i, 5] = tack.atomic_compare_exchange(acc, (i, 5), e[i, 5 - i % 2], x)\n";

/* Many work items on few elements: only order-free results are compared. */
static const char *const gl_src_contend_int =
    "def contend_int(acc, v):\n"
    "    for i in range(v.shape[0]):\n"
    "        j = i % 3\n"
    "        tack.atomic_add(acc, (j, 0), v[i])\n"
    "        tack.atomic_sub(acc, (j, 1), v[i])\n"
    "        tack.atomic_min(acc, (j, 2), v[i])\n"
    "        tack.atomic_max(acc, (j, 3), v[i])\n"
    "        tack.atomic_and(acc, (j, 4), v[i] + 64)\n"
    "        tack.atomic_or(acc, (j, 5), v[i] + 64)\n"
    "        tack.atomic_xor(acc, (j, 6), v[i])\n";

static const char *const gl_src_contend_float =
    "def contend_float(acc, v):\n"
    "    for i in range(v.shape[0]):\n"
    "        j = i % 3\n"
    "        tack.atomic_add(acc, (j, 0), v[i])\n"
    "        tack.atomic_sub(acc, (j, 1), v[i])\n"
    "        tack.atomic_min(acc, (j, 2), v[i])\n"
    "        tack.atomic_max(acc, (j, 3), v[i])\n";

static const char *const gl_src_loops =
    "def loops(a, out, n):\n"
    "    for i in range(a.shape[0]):\n"
    "        s = 0\n"
    "        for j in range(i, -7, -2):\n"
    "            if j == 5:\n"
    "                continue\n"
    "            if j < -3:\n"
    "                break\n"
    "            s += j\n"
    "        k = 0\n"
    "        while k < i:\n"
    "            k += 3\n"
    "            if k == 9:\n"
    "                break\n"
    "            if k % 2 == 0:\n"
    "                continue\n"
    "            k += n\n"
    "        for j in range(0, i, 3):\n"
    "            for q in range(j):\n"
    "                if q > 2:\n"
    "                    break\n"
    "                s += q * j\n"
    "        out[i] = s * 1000 + k\n";

static const char *const gl_src_rstep =
    "def rstep(out, a, b, c):\n"
    "    for i in range(a, b, c):\n"
    "        out[i] = i * 2 + 1\n";

static const char *const gl_src_rshape =
    "def rshape(x, out):\n"
    "    for i in range(x.shape[0] - 1):\n"
    "        out[i] = x[i + 1] - x[i]\n";

static const char *const gl_src_nd2 =
    "def nd2(out, s):\n"
    "    for i, j in tack.ndindex(out.shape[0], out.shape[1]):\n"
    "        if j != 3:\n"
    "            out[i, j] = i * 100 + j + s\n";

static const char *const gl_src_nd3 =
    "def nd3(out):\n"
    "    for i, j, k in tack.ndindex(out.shape[0], out.shape[1], out.shape[2]):\n"
    "        out[i, j, k] = i * 10000 + j * 100 + k\n";

static const char *const gl_src_funcs =
    "def funcs(a, out):\n"
    "    for i in range(a.shape[0]):\n"
    "        out[i, 0] = find(a, a[i] % 5)\n"
    "        out[i, 1] = collatz(i + 1)\n"
    "        k = 0\n"
    "        for t in range(6):\n"
    "            if find(a, t) == -1:\n"
    "                break\n"
    "            k += 1\n"
    "        out[i, 2] = k\n"
    "        out[i, 3] = clamp(a[i], -2, 3) + clamp(i, 1, 4) * 10\n"
    "        out[i, 4] = a[i] > 0 and find(a, 2) or collatz(3)\n";

static const char *const gl_src_vec =
    "def vec(p, q, out, outv):\n"
    "    for i in range(p.shape[0]):\n"
    "        v = p[i]\n"
    "        w = q[i]\n"
    "        out[i] = v.dot(w) + v.length()\n"
    "        outv[i] = v * 2.0 - w + abs(v)\n";

static const char *const gl_src_debug =
    "def dbg(a, out, m, off):\n"
    "    for i in range(out.shape[0]):\n"
    "        out[i] = a[i + off] + m[i % 3, i - 2]\n";

static const char *const gl_src_strided =
    "def strided(a, b, out):\n"
    "    for i in range(a.shape[0]):\n"
    "        out[i, 0] = a[i]\n"
    "        out[i, 1] = b[i]\n"
    "        out[i, 3] = a[a.shape[0] - 1 - i]\n";

static const char *const gl_src_strided_2d =
    "def strided_2d(a, b, out):\n"
    "    for i, j in tack.ndindex(a.shape[0], a.shape[1]):\n"
    "        out[i, j] = a[i, j] * 2.0 + b[i, j] - out[i, j]\n";

static const char *const gl_src_bools =
    "def bools(a, b, out, flag):\n"
    "    for i in range(a.shape[0]):\n"
    "        x = a[i]\n"
    "        y = b[i]\n"
    "        out[i, 0] = x and y\n"
    "        out[i, 1] = x or flag\n"
    "        out[i, 2] = not x\n"
    "        out[i, 3] = x + y\n"
    "        out[i, 4] = x * y\n"
    "        out[i, 5] = x ^ y\n"
    "        out[i, 6] = ~x\n"
    "        out[i, 7] = x < y\n"
    "        out[i, 8] = min(x, y)\n"
    "        out[i, 9] = x == flag\n";

static const char *const gl_src_scalars =
    "def scalars(out, a, b, c, d, e):\n"
    "    for i in range(out.shape[0]):\n"
    "        out[i, 0] = a + i\n"
    "        out[i, 1] = b * i\n"
    "        out[i, 2] = (c >> 3) - 5 + c // 7\n"
    "        out[i, 3] = d * i\n"
    "        out[i, 4] = e + i\n"
    "        out[i, 5] = a * 1.5 if e else d\n"
    "        out[i, 6] = float(a) / 3\n";

/* Fills `cases` (capacity cap) and returns the count. */
static int gl_cases(gl_case *cases, int cap) {
    int n = 0;
    static const tack_dtype ints[] = {TACK_I8, TACK_I16, TACK_I32, TACK_I64,
                                      TACK_U8, TACK_U16, TACK_U32, TACK_U64};
#define NEW(nm, s) (n < cap ? (memset(&cases[n], 0, sizeof cases[n]), \
                               snprintf(cases[n].name, sizeof cases[n].name, "%s", nm), \
                               cases[n].src = s, &cases[n++]) : &cases[cap - 1])
    gl_case *c;
    for (int k = 0; k < 8; k++) {
        tack_dtype t = ints[k];
        c = NEW("arith", gl_src_arith);
        snprintf(c->name, sizeof c->name, "arith_%s", tack_dtype_name(t));
        int64_t m = (int64_t)GL_NINT * GL_NINT;
        c->nargs = 3;
        c->a[0] = gl_arr(t, 1, m, 1, 1, INIT_EDGE);
        c->a[1] = gl_arr(t, 1, m, 1, 1, INIT_EDGE2);
        c->a[2] = gl_arr(t, 2, m, GL_ARITH_COLS, 1, INIT_ZERO);
    }
    for (int k = 0; k < 2; k++) {
        tack_dtype t = k ? TACK_F64 : TACK_F32;
        int64_t m = (int64_t)GL_NFLOAT * GL_NFLOAT;
        c = NEW("farith", gl_src_farith);
        snprintf(c->name, sizeof c->name, "farith_%s", tack_dtype_name(t));
        c->nargs = 3;
        c->a[0] = gl_arr(t, 1, m, 1, 1, INIT_EDGE);
        c->a[1] = gl_arr(t, 1, m, 1, 1, INIT_EDGE2);
        c->a[2] = gl_arr(t, 2, m, GL_FARITH_COLS, 1, INIT_ZERO);
        c = NEW("transc", gl_src_transc);
        snprintf(c->name, sizeof c->name, "transc_%s", tack_dtype_name(t));
        c->tolerant = 1;
        c->nargs = 3;
        c->a[0] = gl_arr(t, 1, m, 1, 1, INIT_EDGE);
        c->a[1] = gl_arr(t, 1, m, 1, 1, INIT_EDGE2);
        c->a[2] = gl_arr(t, 2, m, GL_TRANSC_COLS, 1, INIT_ZERO);
    }
    static const tack_dtype cast_from[] = {TACK_F32, TACK_F64, TACK_I64, TACK_U64, TACK_I8,
                                           TACK_BOOL, TACK_U16};
    for (int k = 0; k < 7; k++) {
        tack_dtype t = cast_from[k];
        int64_t m = gl_nedges(t);
        c = NEW("casts", gl_src_casts);
        snprintf(c->name, sizeof c->name, "casts_%s", tack_dtype_name(t));
        c->nargs = 12;
        c->a[0] = gl_arr(t, 1, m, 1, 1, INIT_EDGE);
        static const tack_dtype outs[] = {TACK_I8, TACK_I16, TACK_I32, TACK_I64, TACK_U8,
                                          TACK_U16, TACK_U32, TACK_U64, TACK_BOOL, TACK_F32,
                                          TACK_F64};
        for (int o = 0; o < 11; o++) c->a[1 + o] = gl_arr(outs[o], 1, m, 1, 1, INIT_ZERO);
    }
    static const tack_dtype atom_int[] = {TACK_I32, TACK_I64, TACK_U32, TACK_U64, TACK_I8, TACK_U16};
    for (int k = 0; k < 6; k++) {
        tack_dtype t = atom_int[k];
        int64_t m = GL_NINT * 3;
        c = NEW("atom_int", gl_src_atom_int);
        snprintf(c->name, sizeof c->name, "atom_int_%s", tack_dtype_name(t));
        c->nargs = 4;
        c->a[0] = gl_arr(t, 2, m, 9, 1, INIT_EDGE);
        c->a[1] = gl_arr(t, 2, m, 9, 1, INIT_EDGE);
        c->a[2] = gl_arr(t, 1, m, 1, 1, INIT_EDGE2);
        c->a[3] = gl_arr(t, 2, m, 9, 1, INIT_ZERO);
        c = NEW("contend_int", gl_src_contend_int);
        snprintf(c->name, sizeof c->name, "contend_int_%s", tack_dtype_name(t));
        c->nargs = 2;
        c->a[0] = gl_arr(t, 2, 3, 7, 1, INIT_SMALL);
        c->a[1] = gl_arr(t, 1, 1000, 1, 1, INIT_SMALL);
    }
    for (int k = 0; k < 2; k++) {
        tack_dtype t = k ? TACK_F64 : TACK_F32;
        int64_t m = GL_NFLOAT * 3;
        c = NEW("atom_float", gl_src_atom_float);
        snprintf(c->name, sizeof c->name, "atom_float_%s", tack_dtype_name(t));
        c->nargs = 4;
        c->a[0] = gl_arr(t, 2, m, 6, 1, INIT_EDGE);
        c->a[1] = gl_arr(t, 2, m, 6, 1, INIT_EDGE);
        c->a[2] = gl_arr(t, 1, m, 1, 1, INIT_EDGE2);
        c->a[3] = gl_arr(t, 2, m, 6, 1, INIT_ZERO);
        c = NEW("contend_float", gl_src_contend_float);
        snprintf(c->name, sizeof c->name, "contend_float_%s", tack_dtype_name(t));
        c->nargs = 2;
        c->a[0] = gl_arr(t, 2, 3, 4, 1, INIT_SMALL);
        c->a[1] = gl_arr(t, 1, 1000, 1, 1, INIT_SMALL);
    }
    c = NEW("loops", gl_src_loops);
    c->nargs = 3;
    c->a[0] = gl_arr(TACK_I32, 1, 40, 1, 1, INIT_IOTA);
    c->a[1] = gl_arr(TACK_I64, 1, 40, 1, 1, INIT_ZERO);
    c->a[2] = gl_sc(tack_arg_int(2));
    c = NEW("rstep_neg", gl_src_rstep);
    c->nargs = 4;
    c->a[0] = gl_arr(TACK_I64, 1, 64, 1, 1, INIT_ZERO);
    c->a[1] = gl_sc(tack_arg_int(50));
    c->a[2] = gl_sc(tack_arg_int(-1));
    c->a[3] = gl_sc(tack_arg_int(-3));
    c = NEW("rstep_pos", gl_src_rstep);
    c->nargs = 4;
    c->a[0] = gl_arr(TACK_I64, 1, 64, 1, 1, INIT_ZERO);
    c->a[1] = gl_sc(tack_arg_int(3));
    c->a[2] = gl_sc(tack_arg_int(60));
    c->a[3] = gl_sc(tack_arg_int(7));
    c = NEW("rshape", gl_src_rshape);
    c->nargs = 2;
    c->a[0] = gl_arr(TACK_F32, 1, 100, 1, 1, INIT_EDGE);
    c->a[1] = gl_arr(TACK_F32, 1, 100, 1, 1, INIT_ZERO);
    c = NEW("nd2", gl_src_nd2);
    c->nargs = 2;
    c->a[0] = gl_arr(TACK_I32, 2, 13, 11, 1, INIT_ZERO);
    c->a[1] = gl_sc(tack_arg_int(7));
    c = NEW("nd3", gl_src_nd3);
    c->nargs = 1;
    c->a[0] = gl_arr(TACK_I64, 3, 5, 7, 9, INIT_ZERO);
    c = NEW("funcs", gl_src_funcs);
    c->nargs = 2;
    c->a[0] = gl_arr(TACK_I32, 1, 30, 1, 1, INIT_SMALL);
    c->a[1] = gl_arr(TACK_I32, 2, 30, 5, 1, INIT_ZERO);
    for (int k = 0; k < 2; k++) {
        tack_dtype t = k ? TACK_F64 : TACK_F32;
        c = NEW("vec", gl_src_vec);
        snprintf(c->name, sizeof c->name, "vec_%s", tack_dtype_name(t));
        c->nargs = 4;
        c->a[0] = gl_vec(t, 3, 50, INIT_EDGE);
        c->a[1] = gl_vec(t, 3, 50, INIT_EDGE2);
        c->a[2] = gl_arr(t, 1, 50, 1, 1, INIT_ZERO);
        c->a[3] = gl_vec(t, 3, 50, INIT_ZERO);
    }
    c = NEW("debug", gl_src_debug);
    c->debug = 1;
    c->nargs = 4;
    c->a[0] = gl_arr(TACK_F32, 1, 40, 1, 1, INIT_IOTA);
    c->a[1] = gl_arr(TACK_F32, 1, 40, 1, 1, INIT_ZERO);
    c->a[2] = gl_arr(TACK_F32, 2, 3, 50, 1, INIT_IOTA);
    c->a[3] = gl_sc(tack_arg_int(5));
    c = NEW("bools", gl_src_bools);
    c->nargs = 4;
    c->a[0] = gl_arr(TACK_BOOL, 1, 16, 1, 1, INIT_EDGE);
    c->a[1] = gl_arr(TACK_BOOL, 1, 16, 1, 1, INIT_EDGE2);
    c->a[2] = gl_arr(TACK_BOOL, 2, 16, 10, 1, INIT_ZERO);
    c->a[3] = gl_sc(tack_arg_bool(1));
    c = NEW("scalars", gl_src_scalars);
    c->nargs = 6;
    c->a[0] = gl_arr(TACK_F64, 2, 70, 7, 1, INIT_ZERO);
    c->a[1] = gl_sc(tack_arg_int(-7));
    c->a[2] = gl_sc(tack_arg_int(INT64_MIN + 5));
    c->a[3] = gl_sc(tack_arg_uint(UINT64_MAX - 3));
    c->a[4] = gl_sc(tack_arg_float(-0.1));
    c->a[5] = gl_sc(tack_arg_bool(1));
    /* Strided views (every step0-th row, Fortran order), in and out: the
     * gaps between elements must come back untouched. */
    static const tack_dtype strided_types[] = {TACK_F32, TACK_I64, TACK_U8, TACK_BOOL};
    for (int k = 0; k < 4; k++) {
        tack_dtype t = strided_types[k];
        c = NEW("strided", gl_src_strided);
        snprintf(c->name, sizeof c->name, "strided_%s", tack_dtype_name(t));
        c->nargs = 3;
        c->a[0] = gl_arr(t, 1, 37, 1, 1, INIT_EDGE);
        c->a[0].step0 = 3;
        c->a[1] = gl_arr(t, 1, 37, 1, 1, INIT_EDGE2);
        c->a[2] = gl_arr(t, 2, 37, 4, 1, INIT_SMALL);
        c->a[2].step0 = 2;
    }
    c = NEW("strided_2d", gl_src_strided_2d);
    c->nargs = 3;
    c->a[0] = gl_arr(TACK_F64, 2, 9, 13, 1, INIT_EDGE);
    c->a[0].transpose = 1;
    c->a[1] = gl_arr(TACK_F64, 2, 9, 13, 1, INIT_EDGE2);
    c->a[1].step0 = 2;
    c->a[2] = gl_arr(TACK_F64, 2, 9, 13, 1, INIT_IOTA);
    c->a[2].transpose = 1;
    c->a[2].step0 = 3;
    c = NEW("strided_nd3", gl_src_nd3);
    c->nargs = 1;
    c->a[0] = gl_arr(TACK_I64, 3, 5, 7, 9, INIT_IOTA);
    c->a[0].step0 = 2;
    for (int k = 0; k < 2; k++) {
        tack_dtype t = k ? TACK_F64 : TACK_F32;
        c = NEW("strided_vec", gl_src_vec);
        snprintf(c->name, sizeof c->name, "strided_vec_%s", tack_dtype_name(t));
        c->nargs = 4;
        c->a[0] = gl_vec(t, 3, 50, INIT_EDGE);
        c->a[0].step0 = 2;
        c->a[1] = gl_vec(t, 3, 50, INIT_EDGE2);
        c->a[2] = gl_arr(t, 1, 50, 1, 1, INIT_IOTA);
        c->a[2].step0 = 3;
        c->a[3] = gl_vec(t, 3, 50, INIT_IOTA);
        c->a[3].step0 = 2;
    }
    c = NEW("strided_atom_i32", gl_src_atom_int);
    c->nargs = 4;
    c->a[0] = gl_arr(TACK_I32, 2, GL_NINT, 9, 1, INIT_EDGE);
    c->a[0].step0 = 2;
    c->a[1] = gl_arr(TACK_I32, 2, GL_NINT, 9, 1, INIT_EDGE);
    c->a[1].transpose = 1;
    c->a[2] = gl_arr(TACK_I32, 1, GL_NINT, 1, 1, INIT_EDGE2);
    c->a[2].step0 = 5;
    c->a[3] = gl_arr(TACK_I32, 2, GL_NINT, 9, 1, INIT_ZERO);
    c->a[3].transpose = 1;
    c = NEW("strided_debug", gl_src_debug);
    c->debug = 1;
    c->nargs = 4;
    c->a[0] = gl_arr(TACK_F32, 1, 40, 1, 1, INIT_IOTA);
    c->a[0].step0 = 2;
    c->a[1] = gl_arr(TACK_F32, 1, 40, 1, 1, INIT_ZERO);
    c->a[1].step0 = 3;
    c->a[2] = gl_arr(TACK_F32, 2, 3, 50, 1, INIT_IOTA);
    c->a[2].transpose = 1;
    c->a[3] = gl_sc(tack_arg_int(5));
#undef NEW
    return n;
}

#endif
