/* test_api.c - the public C API end to end: compile kernels from source
 * text, launch them on C arrays, check results, variant counts (the
 * reference's worked examples), and refused calls. */
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/cpu.h"
#include "check.h"
#include "tack.h"

static tack_device *dev;

static tack_kernel *make(const char *src) {
    tack_error err;
    tack_kernel *k = tack_kernel_create(src, "test_api.py", 1, NULL, NULL, &err);
    if (!k) fprintf(stderr, "unexpected compile error: %s\n", err.message);
    return k;
}

static tack_status launch(tack_kernel *k, tack_arg *args, int n, tack_error *err) {
    tack_status st = tack_kernel_launch(k, dev, args, n, err);
    return st;
}

static const char *SCALE =
    "@tack.kernel\n"
    "def scale(x, out, a):\n"
    "    for i in range(x.shape[0]):\n"
    "        out[i] = x[i] * a\n";

static void test_scale_variants(void) {
    tack_kernel *k = make(SCALE);
    CHECK(k != NULL);
    if (!k) return;
    float x[32], out[32];
    double xd[8], outd[8];
    for (int i = 0; i < 32; i++) x[i] = (float)i;
    for (int i = 0; i < 8; i++) xd[i] = i;
    tack_error err;
    int64_t lens[3] = {8, 16, 32};
    for (int l = 0; l < 3; l++) {
        tack_arg a[3] = {tack_arg_array(x, TACK_F32, 1, &lens[l], 0),
                         tack_arg_array(out, TACK_F32, 1, &lens[l], 1), tack_arg_float(2.0)};
        CHECK(launch(k, a, 3, &err) == TACK_OK);
        CHECK(out[lens[l] - 1] == 2.0f * (float)(lens[l] - 1));
    }
    CHECK(tack_kernel_num_variants(k, dev) == 1);
    int64_t n8 = 8;
    tack_arg a[3] = {tack_arg_array(x, TACK_F32, 1, &n8, 0), tack_arg_array(out, TACK_F32, 1, &n8, 1),
                     tack_arg_float(3.5)};
    CHECK(launch(k, a, 3, &err) == TACK_OK && out[2] == 7.0f);
    CHECK(tack_kernel_num_variants(k, dev) == 1);
    a[2] = tack_arg_int(3);
    CHECK(launch(k, a, 3, &err) == TACK_OK && out[2] == 6.0f);
    CHECK(tack_kernel_num_variants(k, dev) == 2);
    a[2] = tack_arg_int(INT64_C(1) << 40);
    CHECK(launch(k, a, 3, &err) == TACK_OK);
    CHECK(tack_kernel_num_variants(k, dev) == 3);
    tack_variant_key key;
    CHECK(tack_kernel_variant_key(k, dev, 2, &key) == TACK_OK && key.params[2].type == TACK_I64);
    CHECK(tack_kernel_variant_key(k, dev, 1, &key) == TACK_OK && key.params[2].type == TACK_I32);
    tack_arg d[3] = {tack_arg_array(xd, TACK_F64, 1, &n8, 0), tack_arg_array(outd, TACK_F64, 1, &n8, 1),
                     tack_arg_float(2.0)};
    CHECK(launch(k, d, 3, &err) == TACK_OK && outd[7] == 14.0);
    CHECK(tack_kernel_num_variants(k, dev) == 4);
    CHECK(tack_kernel_variant_key(k, dev, 3, &key) == TACK_OK && key.params[2].type == TACK_F64 &&
          key.disjoint == 1);
    /* scale(x, x, 2.0): the written array overlaps another: not disjoint. */
    tack_arg alias[3] = {tack_arg_array(x, TACK_F32, 1, &n8, 1), tack_arg_array(x, TACK_F32, 1, &n8, 1),
                         tack_arg_float(2.0)};
    CHECK(launch(k, alias, 3, &err) == TACK_OK && x[3] == 6.0f);
    CHECK(tack_kernel_num_variants(k, dev) == 5);
    CHECK(tack_kernel_variant_key(k, dev, 4, &key) == TACK_OK && key.disjoint == 0);
    CHECK(tack_kernel_num_ir_templates(k) == 1);
    tack_kernel_free(k);
}

static int count_after_lengths(const char *src, int with_n) {
    tack_kernel *k = make(src);
    if (!k) return -1;
    float x[32], out[32];
    for (int i = 0; i < 32; i++) x[i] = (float)i;
    int64_t lens[3] = {8, 16, 32};
    for (int l = 0; l < 3; l++) {
        tack_error err;
        tack_arg a[3] = {tack_arg_array(x, TACK_F32, 1, &lens[l], 0),
                         tack_arg_array(out, TACK_F32, 1, &lens[l], 1), tack_arg_int(lens[l])};
        CHECK(launch(k, a, with_n ? 3 : 2, &err) == TACK_OK);
        CHECK(out[0] == (float)(lens[l] - 1)); /* reversed */
    }
    int n = tack_kernel_num_variants(k, dev);
    tack_kernel_free(k);
    return n;
}

static void test_shape_variants(void) {
    CHECK(count_after_lengths("def rev(x, out):\n"
                              "    for i in range(x.shape[0]):\n"
                              "        out[i] = x[x.shape[0] - 1 - i]\n", 0) == 3);
    CHECK(count_after_lengths("def rev(x, out, n):\n"
                              "    for i in range(x.shape[0]):\n"
                              "        out[i] = x[n - 1 - i]\n", 1) == 1);
    /* A stencil: the start of the parallel range is not a dimension. */
    tack_kernel *k = make("def stencil(x, out):\n"
                          "    for i in range(1, x.shape[0] - 1):\n"
                          "        out[i] = x[i - 1] + x[i + 1]\n");
    float x[32], out[32];
    for (int i = 0; i < 32; i++) x[i] = (float)i, out[i] = -1;
    int64_t lens[3] = {8, 16, 32};
    for (int l = 0; l < 3; l++) {
        tack_error err;
        tack_arg a[2] = {tack_arg_array(x, TACK_F32, 1, &lens[l], 0),
                         tack_arg_array(out, TACK_F32, 1, &lens[l], 1)};
        CHECK(launch(k, a, 2, &err) == TACK_OK);
    }
    CHECK(out[0] == -1 && out[5] == 10 && out[30] == 60 && out[31] == -1);
    CHECK(tack_kernel_num_variants(k, dev) == 1);
    tack_kernel_free(k);
}

static void test_2d(void) {
    tack_kernel *k = make("def add2(a, out):\n"
                          "    for i in range(a.shape[0]):\n"
                          "        for j in range(a.shape[1]):\n"
                          "            out[i, j] = a[i, j] + i * 100 + j\n");
    int32_t a[16 * 9], out[16 * 9];
    for (int i = 0; i < 16 * 9; i++) a[i] = i;
    int64_t shapes[3][2] = {{4, 8}, {16, 8}, {4, 9}};
    for (int s = 0; s < 3; s++) {
        tack_error err;
        tack_arg args[2] = {tack_arg_array(a, TACK_I32, 2, shapes[s], 0),
                            tack_arg_array(out, TACK_I32, 2, shapes[s], 1)};
        CHECK(launch(k, args, 2, &err) == TACK_OK);
        int64_t cols = shapes[s][1];
        int ok = 1;
        for (int i = 0; i < shapes[s][0]; i++)
            for (int j = 0; j < cols; j++)
                ok &= out[i * cols + j] == a[i * cols + j] + i * 100 + j;
        CHECK(ok);
    }
    CHECK(tack_kernel_num_variants(k, dev) == 2); /* (4,8) and (16,8) share one */
    tack_kernel_free(k);
}

/* tack.ndindex: a 2-D launch whose extents are runtime values; only the
 * row length (used in index arithmetic) is baked in. */
static void test_ndindex(void) {
    tack_kernel *k = make("def nd(a, out):\n"
                          "    for i, j in tack.ndindex(a.shape[0], a.shape[1]):\n"
                          "        out[i, j] = a[i, j] + i * 100 + j\n");
    float a[16 * 9], out[16 * 9];
    for (int i = 0; i < 16 * 9; i++) a[i] = (float)i;
    int64_t shapes[3][2] = {{4, 8}, {16, 8}, {4, 9}};
    for (int s = 0; s < 3; s++) {
        tack_error err;
        tack_arg args[2] = {tack_arg_array(a, TACK_F32, 2, shapes[s], 0),
                            tack_arg_array(out, TACK_F32, 2, shapes[s], 1)};
        CHECK(launch(k, args, 2, &err) == TACK_OK);
        int64_t cols = shapes[s][1];
        int ok = 1;
        for (int i = 0; i < shapes[s][0]; i++)
            for (int j = 0; j < cols; j++)
                ok &= out[i * cols + j] == a[i * cols + j] + (float)(i * 100 + j);
        CHECK(ok);
    }
    CHECK(tack_kernel_num_variants(k, dev) == 2);
    tack_kernel_free(k);
    tack_error err;
    tack_kernel *bad = make("def nd(a):\n"
                            "    for i in range(3):\n"
                            "        for j, k in tack.ndindex(2, 2):\n"
                            "            a[i] = j\n");
    float x[3];
    int64_t n = 3;
    tack_arg args[1] = {tack_arg_array(x, TACK_F32, 1, &n, 1)};
    CHECK(launch(bad, args, 1, &err) == TACK_ERR_COMPILE && err.lineno == 3);
    tack_kernel_free(bad);
}

static void test_numerics(void) {
    tack_kernel *k = make("def ops(a, b, q, r, s):\n"
                          "    for i in range(a.shape[0]):\n"
                          "        q[i] = a[i] // b[i]\n"
                          "        r[i] = a[i] % b[i]\n"
                          "        s[i] = a[i] << b[i]\n");
    int32_t a[6] = {7, -7, 7, -7, INT32_MIN, 5}, b[6] = {2, 2, -2, -2, -1, 0}, q[6], r[6], s[6];
    int32_t eq[6] = {3, -4, -4, 3, INT32_MIN, 0}, er[6] = {1, 1, -1, -1, 0, 0};
    int64_t n = 6;
    tack_error err;
    tack_arg args[5] = {tack_arg_array(a, TACK_I32, 1, &n, 0), tack_arg_array(b, TACK_I32, 1, &n, 0),
                        tack_arg_array(q, TACK_I32, 1, &n, 1), tack_arg_array(r, TACK_I32, 1, &n, 1),
                        tack_arg_array(s, TACK_I32, 1, &n, 1)};
    CHECK(launch(k, args, 5, &err) == TACK_OK);
    CHECK(!memcmp(q, eq, sizeof q));
    CHECK(!memcmp(r, er, sizeof r));
    CHECK(s[0] == 28 && s[4] == 0 && s[5] == 5); /* shift by -1 (>= width unsigned) is 0 */
    tack_kernel_free(k);

    k = make("def fl(x, out):\n"
             "    for i in range(x.shape[0]):\n"
             "        out[i] = max(x[i], 0.0) + math.sqrt(abs(x[i])) if not math.isnan(x[i]) else -1.0\n");
    double x[4] = {4.0, -9.0, NAN, -0.0}, out[4];
    n = 4;
    tack_arg fargs[2] = {tack_arg_array(x, TACK_F64, 1, &n, 0), tack_arg_array(out, TACK_F64, 1, &n, 1)};
    CHECK(launch(k, fargs, 2, &err) == TACK_OK);
    CHECK(out[0] == 6.0 && out[1] == 3.0 && out[2] == -1.0 && out[3] == 0.0);
    tack_kernel_free(k);
}

/* Python's math and builtins through the default resolver (no host):
 * divmod and frexp unpacked, pow, gcd, log1p in f32. */
static void test_math_builtins(void) {
    tack_kernel *k = make("def mb(a, b, x, q, r, e, g, y):\n"
                          "    for i in range(a.shape[0]):\n"
                          "        q[i], r[i] = divmod(a[i], b[i])\n"
                          "        m, ex = math.frexp(x[i])\n"
                          "        e[i] = ex + pow(2, 3)\n"
                          "        g[i] = math.gcd(a[i], b[i])\n"
                          "        y[i] = math.log1p(x[i]) + m\n");
    int64_t a[4] = {7, -7, 12, 5}, b[4] = {2, 2, -18, 0}, q[4], r[4], g[4];
    int32_t e[4];
    float x[4] = {0.5f, 3.0f, 0.0f, -0.25f}, y[4];
    int64_t n = 4;
    tack_error err;
    tack_arg args[8] = {tack_arg_array(a, TACK_I64, 1, &n, 0), tack_arg_array(b, TACK_I64, 1, &n, 0),
                        tack_arg_array(x, TACK_F32, 1, &n, 0), tack_arg_array(q, TACK_I64, 1, &n, 1),
                        tack_arg_array(r, TACK_I64, 1, &n, 1), tack_arg_array(e, TACK_I32, 1, &n, 1),
                        tack_arg_array(g, TACK_I64, 1, &n, 1), tack_arg_array(y, TACK_F32, 1, &n, 1)};
    CHECK(k && launch(k, args, 8, &err) == TACK_OK);
    int64_t eq[4] = {3, -4, -1, 0}, er[4] = {1, 1, -6, 0}, eg[4] = {1, 1, 6, 5};
    int32_t ee[4] = {8, 10, 8, 7}; /* frexp exponents 0, 2, 0, -1, plus 8 */
    CHECK(!memcmp(q, eq, sizeof q) && !memcmp(r, er, sizeof r) && !memcmp(g, eg, sizeof g));
    CHECK(!memcmp(e, ee, sizeof e));
    for (int i = 0; i < 4; i++) {
        int ex;
        CHECK(y[i] == log1pf(x[i]) + frexpf(x[i], &ex));
    }
    tack_kernel_free(k);
}

static void test_errors(void) {
    tack_error err;
    /* Compile errors carry the user's file and line. */
    tack_kernel *bad = tack_kernel_create("def k(x):\n    for i in range(3):\n        x[i] = {1: 2}\n",
                                          "user.py", 40, NULL, NULL, &err);
    CHECK(bad == NULL && err.status == TACK_ERR_COMPILE && err.lineno == 42);
    CHECK(strstr(err.message, "user.py:42") != NULL);
    /* Errors found at lowering (first launch). */
    tack_kernel *k = make("def k(x):\n    for i in range(x.shape[0]):\n        x[i] = undefined_name\n");
    float x[4] = {1, 2, 3, 4};
    int64_t n = 4;
    tack_arg a1[1] = {tack_arg_array(x, TACK_F32, 1, &n, 1)};
    CHECK(launch(k, a1, 1, &err) == TACK_ERR_COMPILE && strstr(err.message, "undefined_name") &&
          err.lineno == 3);
    tack_kernel_free(k);

    k = make(SCALE);
    float out[4] = {9, 9, 9, 9};
    tack_arg args[3] = {tack_arg_array(x, TACK_F32, 1, &n, 0), tack_arg_array(out, TACK_F32, 1, &n, 1),
                        tack_arg_float(2)};
    CHECK(launch(k, args, 2, &err) == TACK_ERR_TYPE && strstr(err.message, "scale"));
    tack_arg swapped[3] = {args[0], args[1], args[0]};
    CHECK(launch(k, swapped, 3, &err) == TACK_ERR_TYPE && strstr(err.message, "'a'"));
    tack_arg scalar_x[3] = {tack_arg_float(1), args[1], args[2]};
    CHECK(launch(k, scalar_x, 3, &err) == TACK_ERR_TYPE && strstr(err.message, "'x'"));
    tack_arg ro[3] = {args[0], tack_arg_array(out, TACK_F32, 1, &n, 0), args[2]};
    CHECK(launch(k, ro, 3, &err) == TACK_ERR_VALUE && strstr(err.message, "'out'") &&
          strstr(err.message, "read-only"));
    tack_arg shared[3] = {args[0], args[1], args[2]};
    shared[1].strides[0] = 0; /* every element of out at one address */
    CHECK(launch(k, shared, 3, &err) == TACK_ERR_VALUE && strstr(err.message, "'out'") &&
          strstr(err.message, "same address"));
    tack_arg odd_stride[3] = {args[0], args[1], args[2]};
    odd_stride[0].strides[0] = 6; /* not a whole number of f32 elements */
    CHECK(launch(k, odd_stride, 3, &err) == TACK_ERR_VALUE && strstr(err.message, "'x'") &&
          strstr(err.message, "multiple"));
    tack_arg wrong_ndim[3] = {args[0], args[1], args[2]};
    int64_t shape2[2] = {2, 2};
    wrong_ndim[0] = tack_arg_array(x, TACK_F32, 2, shape2, 0);
    CHECK(launch(k, wrong_ndim, 3, &err) == TACK_ERR_VALUE && strstr(err.message, "'x'"));
    CHECK(out[0] == 9 && out[3] == 9); /* nothing written by refused calls */
    CHECK(tack_kernel_num_variants(k, dev) == 0);
    tack_kernel_free(k);

    /* A type error in the body for these argument types. */
    k = make("def k(x):\n    for i in range(x.shape[0]):\n        x[i] = x[i] << 1\n");
    tack_arg fa[1] = {tack_arg_array(x, TACK_F32, 1, &n, 1)};
    CHECK(launch(k, fa, 1, &err) == TACK_ERR_COMPILE && err.lineno == 3);
    tack_kernel_free(k);
}

static void test_devices(void) {
    tack_error err;
    CHECK(tack_device_get("cpu", &err) == dev);
    CHECK(tack_device_get("gpu9", &err) == NULL && err.status == TACK_ERR_VALUE);
    /* The index is digits only (strtol took spaces and signs). */
    CHECK(tack_device_get("cpu: 0", &err) == NULL && err.status == TACK_ERR_VALUE);
    CHECK(tack_device_get("cpu:-0", &err) == NULL && err.status == TACK_ERR_VALUE);
    CHECK(tack_device_get("cpu:0", &err) == dev);
    /* A thread count for a device without a pool is refused, not dropped,
     * from the spec alone (no driver is opened). */
    CHECK(tack_device_create("opencl", 2, &err) == NULL && err.status == TACK_ERR_VALUE &&
          strstr(err.message, "no thread pool"));
    CHECK(tack_device_create("cuda:1", 1, &err) == NULL && err.status == TACK_ERR_VALUE);
    CHECK(tack_device_create("cpu", 257, &err) == NULL && strstr(err.message, "from 1 to 256"));
    tack_device *one = tack_device_create("cpu", 1, &err);
    CHECK(one && tack_device_num_threads(one) == 1);
    tack_kernel *k = make(SCALE);
    enum { N = 200000 };
    float *x = malloc(N * sizeof *x), *out = malloc(N * sizeof *out);
    for (int i = 0; i < N; i++) x[i] = (float)i;
    int64_t n = N;
    tack_arg args[3] = {tack_arg_array(x, TACK_F32, 1, &n, 0), tack_arg_array(out, TACK_F32, 1, &n, 1),
                        tack_arg_float(0.5)};
    CHECK(tack_kernel_launch(k, one, args, 3, &err) == TACK_OK && out[N - 1] == (N - 1) * 0.5f);
    CHECK(tack_kernel_launch(k, dev, args, 3, &err) == TACK_OK && out[1] == 0.5f);
    CHECK(tack_kernel_num_variants(k, one) == 1 && tack_kernel_num_variants(k, dev) == 1);
    tack_device_free(one); /* drops its variants; the kernel still runs elsewhere */
    CHECK(tack_kernel_launch(k, dev, args, 3, &err) == TACK_OK);
    tack_kernel_free(k);
    free(x);
    free(out);
}

/* A prepared handle runs its variant for matching arguments and takes the
 * full path (compiling if needed) for others. */
static void test_prepared_launch(void) {
    tack_kernel *k = make(SCALE);
    float x[16], out[16];
    double xd[4] = {1, 2, 3, 4}, outd[4];
    for (int i = 0; i < 16; i++) x[i] = (float)i;
    int64_t n8 = 8, n16 = 16, n4 = 4;
    tack_error err;
    tack_arg args[3] = {tack_arg_array(x, TACK_F32, 1, &n8, 0), tack_arg_array(out, TACK_F32, 1, &n8, 1),
                        tack_arg_float(2.0)};
    tack_launch *l = tack_launch_prepare(k, dev, args, 3, &err); /* resolves; runs nothing */
    CHECK(l != NULL && tack_kernel_num_variants(k, dev) == 1);
    CHECK(tack_launch_run(l, args, 3, &err) == TACK_OK && out[7] == 14);
    args[0] = tack_arg_array(x, TACK_F32, 1, &n16, 0);
    args[1] = tack_arg_array(out, TACK_F32, 1, &n16, 1);
    args[2] = tack_arg_float(3.0);
    CHECK(tack_launch_run(l, args, 3, &err) == TACK_OK && out[15] == 45);
    CHECK(tack_kernel_num_variants(k, dev) == 1);
    tack_arg other[3] = {tack_arg_array(xd, TACK_F64, 1, &n4, 0), tack_arg_array(outd, TACK_F64, 1, &n4, 1),
                         tack_arg_float(2.0)};
    CHECK(tack_launch_run(l, other, 3, &err) == TACK_OK && outd[3] == 8);
    CHECK(tack_kernel_num_variants(k, dev) == 2);
    tack_arg ro[3] = {args[0], tack_arg_array(out, TACK_F32, 1, &n16, 0), args[2]};
    CHECK(tack_launch_run(l, ro, 3, &err) == TACK_ERR_VALUE && strstr(err.message, "read-only"));
    CHECK(tack_launch_run(l, args, 2, &err) == TACK_ERR_TYPE);
    tack_launch_free(l);
    tack_kernel_free(k);
}

/* The warm path of a prepared launch: arguments with the prepared layout
 * (other addresses and values) are accepted and run; another shape,
 * dtype, writability or an overlap is not taken warm but still runs
 * right; returned values come back; a freed kernel elsewhere (the epoch)
 * makes it cold until prepared again. */
static void test_prepared_warm_path(void) {
    tack_kernel *k = make(SCALE);
    tack_kernel *sum = make("@tack.kernel\n"
                            "def total(x):\n"
                            "    s = 0.0\n"
                            "    for i in range(x.shape[0]):\n"
                            "        s += x[i]\n"
                            "    return s\n");
    CHECK(k && sum);
    if (!k || !sum) return;
    float x[16], y[16], out[16], z[16];
    for (int i = 0; i < 16; i++) x[i] = (float)i, y[i] = (float)(100 + i), z[i] = 1.0f;
    int64_t n8 = 8, n9 = 9;
    tack_error err;
    tack_arg a[3] = {tack_arg_array(x, TACK_F32, 1, &n8, 0), tack_arg_array(out, TACK_F32, 1, &n8, 1),
                     tack_arg_float(2.0)};
    tack_launch *l = tack_launch_prepare(k, dev, a, 3, &err);
    CHECK(l && tack_launch_is_warm(l) && tack_launch_accepts(l, a, 3));
    tack_arg b[3] = {tack_arg_array(y, TACK_F32, 1, &n8, 0), tack_arg_array(out + 8, TACK_F32, 1, &n8, 1),
                     tack_arg_float(-1.0)};
    CHECK(tack_launch_accepts(l, b, 3) && tack_launch_run(l, b, 3, &err) == TACK_OK &&
          out[8] == -100.0f && out[15] == -107.0f);
    tack_arg longer[3] = {tack_arg_array(x, TACK_F32, 1, &n9, 0), tack_arg_array(out, TACK_F32, 1, &n9, 1),
                          tack_arg_float(3.0)};
    CHECK(!tack_launch_accepts(l, longer, 3) && tack_launch_run(l, longer, 3, &err) == TACK_OK &&
          out[8] == 24.0f);
    tack_arg ints[3] = {a[0], a[1], tack_arg_int(INT64_C(1) << 40)};
    CHECK(!tack_launch_accepts(l, ints, 3));
    tack_arg inplace[3] = {tack_arg_array(z, TACK_F32, 1, &n8, 0), tack_arg_array(z, TACK_F32, 1, &n8, 1),
                           tack_arg_float(3.0)};
    /* The same layout, but out is x: the other variant, by the full path. */
    CHECK(tack_launch_accepts(l, inplace, 3) && tack_launch_run(l, inplace, 3, &err) == TACK_OK &&
          z[0] == 3.0f && z[7] == 3.0f && z[8] == 1.0f);
    CHECK(tack_launch_accepts(l, a, 3) && tack_launch_accepts(l, NULL, 3) == 0 &&
          tack_launch_accepts(l, a, 2) == 0 && tack_launch_accepts(NULL, a, 3) == 0);

    tack_arg s[1] = {tack_arg_array(x, TACK_F32, 1, &n8, 0)};
    tack_launch *ls = tack_launch_prepare(sum, dev, s, 1, &err);
    tack_results r;
    CHECK(ls && tack_launch_is_warm(ls));
    for (int rep = 0; rep < 3; rep++) {
        s[0] = tack_arg_array(rep == 1 ? y : x, TACK_F32, 1, &n8, 0);
        CHECK(tack_launch_call(ls, s, 1, &r, &err) == TACK_OK && r.n == 1 &&
              r.value[0].f == (rep == 1 ? 828.0 : 28.0));
    }
    tack_kernel_free(make(SCALE)); /* frees variants: the handles are cold now */
    CHECK(!tack_launch_is_warm(l) && !tack_launch_is_warm(ls));
    CHECK(tack_launch_run(l, b, 3, &err) == TACK_OK && out[8] == -100.0f);
    CHECK(tack_launch_call(ls, s, 1, &r, &err) == TACK_OK && r.value[0].f == 28.0);
    tack_launch_free(l);
    tack_launch_free(ls);
    tack_kernel_free(k);
    tack_kernel_free(sum);
}

/* A kernel's reductions come back through tack_kernel_call: an i64 count
 * and an f32 maximum (x's float type), fresh on each call. */
static void test_reductions(void) {
    tack_kernel *k = make("@tack.kernel\n"
                          "def stats(x):\n"
                          "    c = 0\n"
                          "    m = -1e30\n"
                          "    for i in range(x.shape[0]):\n"
                          "        if x[i] > 1.5:\n"
                          "            c += 1\n"
                          "        m = max(m, x[i])\n"
                          "    return c, m\n");
    CHECK(k != NULL);
    if (!k) return;
    float x[5] = {1, 2, 3, 0.5f, 2.5f};
    int64_t n5 = 5, n0 = 0;
    tack_arg args[1] = {tack_arg_array(x, TACK_F32, 1, &n5, 0)};
    tack_results r;
    tack_error err;
    for (int rep = 0; rep < 2; rep++) {
        CHECK(tack_kernel_call(k, dev, args, 1, &r, &err) == TACK_OK);
        CHECK(r.n == 2 && r.dtype[0] == TACK_I64 && r.value[0].i == 3);
        CHECK(r.dtype[1] == TACK_F32 && r.value[1].f == 3.0);
    }
    args[0] = tack_arg_array(x, TACK_F32, 1, &n0, 0);
    CHECK(tack_kernel_call(k, dev, args, 1, &r, &err) == TACK_OK);
    CHECK(r.n == 2 && r.value[0].i == 0 && r.value[1].f == (double)-1e30f);
    /* Without a place for results, and prepared: it still runs. */
    args[0] = tack_arg_array(x, TACK_F32, 1, &n5, 0);
    CHECK(tack_kernel_launch(k, dev, args, 1, &err) == TACK_OK);
    tack_launch *l = tack_launch_prepare(k, dev, args, 1, &err);
    CHECK(l != NULL && tack_launch_run(l, args, 1, &err) == TACK_OK);
    tack_launch_free(l);
    tack_kernel_free(k);
}

/* Values of several numbers (a complex, a matrix) come back grouped in
 * values[]: kind, first, count and shape over the flat value[]. */
static void test_grouped_results(void) {
    tack_kernel *k = make("@tack.kernel\n"
                          "def grouped(x):\n"
                          "    s = 0.0\n"
                          "    z = 0j\n"
                          "    m = tack.mat22d()\n"
                          "    for i in range(x.shape[0]):\n"
                          "        s += 1.0\n"
                          "        z += x[i] + 2j * x[i]\n"
                          "        m += tack.mat22d(x[i], 0.0, 1.0, -x[i])\n"
                          "    return s, z, m\n");
    CHECK(k != NULL);
    if (!k) return;
    double x[3] = {1, 2, 4};
    int64_t n3 = 3;
    tack_arg args[1] = {tack_arg_array(x, TACK_F64, 1, &n3, 0)};
    tack_results r;
    tack_error err;
    CHECK(tack_kernel_call(k, dev, args, 1, &r, &err) == TACK_OK);
    CHECK(r.n == 7 && r.nvalues == 3);
    CHECK(r.values[0].kind == TACK_RESULT_SCALAR && r.values[0].first == 0 && r.values[0].count == 1);
    CHECK(r.value[0].f == 3.0);
    CHECK(r.values[1].kind == TACK_RESULT_COMPLEX && r.values[1].first == 1 && r.values[1].count == 2);
    CHECK(r.value[1].f == 7.0 && r.value[2].f == 14.0);
    CHECK(r.values[2].kind == TACK_RESULT_MATRIX && r.values[2].first == 3 && r.values[2].count == 4);
    CHECK(r.values[2].rows == 2 && r.values[2].cols == 2 && r.dtype[3] == TACK_F64);
    CHECK(r.value[3].f == 7.0 && r.value[4].f == 0.0 && r.value[5].f == 3.0 && r.value[6].f == -7.0);
    tack_kernel_free(k);
}

/* Records the chunks a pool hands out, without doing the work; bails out
 * if a launch splits into absurdly many (the chunk size overflowed). */
typedef struct chunk_log {
    pthread_mutex_t m;
    int n;
    int64_t covered, lo_min, hi_max;
} chunk_log;

static void log_chunk(void *ctx, int64_t lo, int64_t hi) {
    chunk_log *c = ctx;
    pthread_mutex_lock(&c->m);
    if (++c->n > 100000) {
        fprintf(stderr, "test_overflow: the pool split a launch into more than 100000 chunks\n");
        exit(1);
    }
    if (lo < 0 || hi <= lo) c->covered = -1;
    else if (c->covered >= 0) c->covered += hi - lo;
    if (lo < c->lo_min) c->lo_min = lo;
    if (hi > c->hi_max) c->hi_max = hi;
    pthread_mutex_unlock(&c->m);
}

static void test_overflow(void) {
    /* Launch lengths near INT64_MAX: chunks cover [0, n) exactly. */
    cpu_pool *p = cpu_pool_create(4);
    int64_t lens[3] = {INT64_MAX, INT64_MAX - 1, INT64_MAX / 2 + 3};
    for (int l = 0; l < 3; l++) {
        chunk_log c = {PTHREAD_MUTEX_INITIALIZER, 0, 0, INT64_MAX, 0};
        cpu_pool_run(p, lens[l], 1, 4, 0, log_chunk, &c);
        CHECK(c.covered == lens[l] && c.lo_min == 0 && c.hi_max == lens[l] && c.n <= 16);
    }
    cpu_pool_free(p);

    /* An array whose bytes would run past the end of the address space is
     * refused (its end would wrap, and the overlap test with it). */
    tack_kernel *k = make(SCALE);
    float out[4] = {9, 9, 9, 9};
    int64_t n4 = 4, huge = 1 << 20;
    void *top = (void *)(UINTPTR_MAX - 4095);
    tack_arg args[3] = {tack_arg_array(top, TACK_F32, 1, &huge, 0),
                        tack_arg_array(out, TACK_F32, 1, &n4, 1), tack_arg_float(2)};
    tack_error err;
    CHECK(launch(k, args, 3, &err) == TACK_ERR_VALUE && strstr(err.message, "'x'") &&
          strstr(err.message, "address space"));
    CHECK(out[0] == 9 && out[3] == 9);
    tack_kernel_free(k);
}

/* A host's own binding hides Tack's defaults, as Python's globals hide its
 * builtins: only a name the host leaves UNBOUND gets the builtin. */
static int shadowing_resolver(void *ctx, const char *name, tack_name *out) {
    (void)ctx;
    memset(out, 0, sizeof *out);
    if (!strcmp(name, "max")) { /* the host's own max, unusable in kernels */
        out->kind = TACK_NAME_OTHER;
        out->text = "a C callback, which kernels cannot call";
    } else if (!strcmp(name, "round")) {
        out->kind = TACK_NAME_OTHER; /* no words: the library says what it hides */
    } else if (!strcmp(name, "math")) {
        out->kind = TACK_NAME_UNDEFINED; /* this host does the whole lookup */
    } else if (!strcmp(name, "smallest")) {
        out->kind = TACK_NAME_BUILTIN; /* an alias of a builtin is that builtin */
        out->text = "min";
    } else {
        return -1; /* abs, range: the defaults */
    }
    return 0;
}

static void test_resolver_shadows_defaults(void) {
    static const char *const bodies[] = {
        "        out[i] = abs(x[i]) + smallest(x[i], 0.5)\n",
        "        out[i] = max(x[i], 1.0)\n",
        "        out[i] = round(x[i])\n",
        "        out[i] = math.sqrt(x[i])\n",
    };
    static const char *const expect[] = {
        NULL,
        "kernel 'shadow': 'max' is a C callback, which kernels cannot call",
        "kernel 'shadow': 'round' is bound to a value kernels cannot use, and it hides the "
        "builtin round",
        "kernel 'shadow': name 'math' is not defined",
    };
    float x[4] = {-2, -0.25f, 0.25f, 3}, out[4] = {9, 9, 9, 9};
    int64_t n = 4;
    for (int b = 0; b < 4; b++) {
        char src[256];
        snprintf(src, sizeof src, "def shadow(x, out):\n    for i in range(x.shape[0]):\n%s",
                 bodies[b]);
        tack_error err;
        tack_kernel *k = tack_kernel_create(src, "shadow.py", 10, shadowing_resolver, NULL, &err);
        CHECK(k != NULL);
        if (!k) continue;
        tack_arg args[2] = {tack_arg_array(x, TACK_F32, 1, &n, 0), tack_arg_array(out, TACK_F32, 1, &n, 1)};
        tack_status st = launch(k, args, 2, &err);
        if (!expect[b]) {
            CHECK(st == TACK_OK);
            CHECK(out[0] == 0.0f && out[1] == 0.0f && out[2] == 0.5f && out[3] == 3.5f);
        } else {
            CHECK(st == TACK_ERR_COMPILE && err.lineno == 12 && strstr(err.message, expect[b]));
            if (!strstr(err.message, expect[b])) fprintf(stderr, "got: %s\n", err.message);
            CHECK(out[0] == 0.0f); /* nothing written */
        }
        tack_kernel_free(k);
    }
}

/* A C host's table (TACK_NAME_TABLE): 2-D integers and 1-D floats,
 * inlined; a malformed answer (no numbers) is no answer. */
static const int64_t dirs[4][2] = {{1, 0}, {-1, 0}, {0, 1}, {0, -1}};
static const double weights[3] = {0.5, -0.25, 2.0};

static int table_resolver(void *ctx, const char *name, tack_name *out) {
    (void)ctx;
    memset(out, 0, sizeof *out);
    if (!strcmp(name, "DIRS")) {
        out->kind = TACK_NAME_TABLE;
        out->table_ndim = 2;
        out->table_shape[0] = 4;
        out->table_shape[1] = 2;
        out->table_ints = &dirs[0][0];
    } else if (!strcmp(name, "W")) {
        out->kind = TACK_NAME_TABLE;
        out->table_ndim = 1;
        out->table_shape[0] = 3;
        out->table_floats = weights;
    } else if (!strcmp(name, "BROKEN")) {
        out->kind = TACK_NAME_TABLE; /* neither ints nor floats */
        out->table_ndim = 1;
        out->table_shape[0] = 3;
    } else {
        return -1;
    }
    return 0;
}

static void test_tables(void) {
    const char *src = "def tables(x, out):\n    for i in range(x.shape[0]):\n"
                      "        s = 0.0\n        for d in DIRS:\n            s += d[0] * d[0] * 10 + d[1] * d[1] * d[1] * 3 + d[1]\n"
                      "        out[i] = x[i] * W[i % len(W)] + s + len(DIRS)\n";
    tack_error err;
    tack_kernel *k = tack_kernel_create(src, "tables.py", 1, table_resolver, NULL, &err);
    CHECK(k != NULL);
    if (k) {
        double x[6] = {1, 2, 3, 4, 5, 6}, out[6] = {0};
        int64_t n = 6;
        tack_arg args[2] = {tack_arg_array(x, TACK_F64, 1, &n, 0), tack_arg_array(out, TACK_F64, 1, &n, 1)};
        CHECK(launch(k, args, 2, &err) == TACK_OK);
        for (int i = 0; i < 6; i++) CHECK(out[i] == x[i] * weights[i % 3] + 20.0 + 4); /* 10 + 10 + 3 + 1 - 3 - 1 */
        tack_kernel_free(k);
    }
    k = tack_kernel_create("def broken(out):\n    for i in range(out.shape[0]):\n        out[i] = BROKEN[0]\n",
                           "broken.py", 1, table_resolver, NULL, &err);
    CHECK(k != NULL);
    if (k) {
        double out[2] = {0};
        int64_t n = 2;
        tack_arg args[1] = {tack_arg_array(out, TACK_F64, 1, &n, 1)};
        CHECK(launch(k, args, 1, &err) == TACK_ERR_COMPILE && strstr(err.message, "'BROKEN'"));
        tack_kernel_free(k);
    }
}

/* tack_precompile: two variants of one kernel and a repeat, compiled
 * without running; their launches then compile nothing.  A refused call
 * compiles nothing and is named by index; NULL and empty batches. */
static void test_precompile(void) {
    tack_kernel *k = make(SCALE);
    float x[8] = {1, 2, 3, 4, 5, 6, 7, 8}, out[8] = {0};
    double xd[8] = {1, 2, 3, 4, 5, 6, 7, 8}, outd[8] = {0};
    int64_t n8 = 8;
    tack_arg f32[3] = {tack_arg_array(x, TACK_F32, 1, &n8, 0),
                       tack_arg_array(out, TACK_F32, 1, &n8, 1), tack_arg_float(2.0)};
    tack_arg f64[3] = {tack_arg_array(xd, TACK_F64, 1, &n8, 0),
                       tack_arg_array(outd, TACK_F64, 1, &n8, 1), tack_arg_float(2.0)};
    tack_precompile_call calls[3] = {{k, f32, 3}, {k, f64, 3}, {k, f32, 3}};
    tack_error err;
    int failed = 7;
    tack_stats s0, s1;
    tack_get_stats(&s0);
    CHECK(tack_precompile(dev, calls, 3, &failed, &err) == TACK_OK && failed == -1);
    tack_get_stats(&s1);
    /* Compiled, or loaded from the disk cache (earlier tests' scale). */
    CHECK(s1.compiles + s1.disk_hits == s0.compiles + s0.disk_hits + 2);
    CHECK(tack_kernel_num_variants(k, dev) == 2);
    CHECK(out[7] == 0 && outd[7] == 0); /* nothing ran */
    CHECK(tack_kernel_launch(k, dev, f32, 3, &err) == TACK_OK && out[7] == 16);
    CHECK(tack_kernel_launch(k, dev, f64, 3, &err) == TACK_OK && outd[7] == 16);
    tack_get_stats(&s0);
    CHECK(s0.compiles == s1.compiles && s0.disk_hits == s1.disk_hits);
    /* Call 1 passes two arguments: refused, named, nothing compiled. */
    tack_kernel *k2 = make(SCALE);
    tack_precompile_call bad[2] = {{k2, f32, 3}, {k2, f32, 2}};
    CHECK(tack_precompile(dev, bad, 2, &failed, &err) == TACK_ERR_TYPE && failed == 1);
    CHECK(strstr(err.message, "kernel 'scale' takes 3 arguments") != NULL);
    CHECK(tack_kernel_num_variants(k2, dev) == 0);
    tack_precompile_call null_kernel[1] = {{NULL, f32, 3}};
    CHECK(tack_precompile(dev, null_kernel, 1, &failed, &err) == TACK_ERR_VALUE && failed == 0);
    CHECK(tack_precompile(NULL, calls, 1, NULL, &err) == TACK_ERR_VALUE);
    CHECK(tack_precompile(dev, NULL, 0, &failed, &err) == TACK_OK && failed == -1);
    tack_kernel_free(k);
    tack_kernel_free(k2);
}

/* The tiered JIT (cpu/tier.c): TACK_JIT read per build; o0 stays on tier 0,
 * tiered goes to tier 1 after tack_jit_wait, o2 is tier 1 at once; the
 * same bits on each; a kernel freed with its optimized build queued. */
static const char *TIERED =
    "@tack.kernel\n"
    "def tiered(x, out):\n"
    "    for i in range(x.shape[0]):\n"
    "        out[i] = x[i] ** 0.5 * 3.0 + math.sin(x[i]) * x[i]\n";

static void run_tiered(tack_kernel *k, double *x, double *out, int64_t n) {
    tack_error err;
    tack_arg a[2] = {tack_arg_array(x, TACK_F64, 1, &n, 0), tack_arg_array(out, TACK_F64, 1, &n, 1)};
    CHECK(launch(k, a, 2, &err) == TACK_OK);
}

static void test_tiers(void) {
    enum { N = 4096 };
    static double x[N], o0[N], t[N], o2[N];
    for (int i = 0; i < N; i++) x[i] = i * 0.37;
    const char *saved = getenv("TACK_JIT");
    setenv("TACK_JIT", "o0", 1);
    tack_kernel *k0 = make(TIERED);
    CHECK(k0 != NULL);
    if (!k0) return;
    run_tiered(k0, x, o0, N);
    CHECK(tack_kernel_variant_tier(k0, dev, 0) == 0);
    CHECK(tack_kernel_variant_tier(k0, dev, 1) == -1 && tack_kernel_variant_tier(k0, dev, -1) == -1);
    tack_jit_wait();
    CHECK(tack_kernel_variant_tier(k0, dev, 0) == 0);

    unsetenv("TACK_JIT");
    tack_kernel *kt = make(TIERED);
    run_tiered(kt, x, t, N);
    int tier = tack_kernel_variant_tier(kt, dev, 0);
    CHECK(tier == 0 || tier == 1);
    CHECK(memcmp(t, o0, sizeof t) == 0);
    tack_jit_wait();
    CHECK(tack_kernel_variant_tier(kt, dev, 0) == 1);
    memset(t, 0, sizeof t);
    run_tiered(kt, x, t, N);
    CHECK(memcmp(t, o0, sizeof t) == 0);

    setenv("TACK_JIT", "o2", 1);
    tack_kernel *k2 = make(TIERED);
    run_tiered(k2, x, o2, N);
    CHECK(tack_kernel_variant_tier(k2, dev, 0) == 1);
    CHECK(memcmp(o2, o0, sizeof o2) == 0);
    unsetenv("TACK_JIT");

    /* Freed at once: its queued (or running) build is dropped or finished
     * without a swap, and nothing leaks. */
    for (int r = 0; r < 4; r++) {
        tack_kernel *kf = make(TIERED);
        run_tiered(kf, x, t, N);
        tack_kernel_free(kf);
    }
    tack_jit_wait();
    if (saved) setenv("TACK_JIT", saved, 1);
    tack_kernel_free(k0);
    tack_kernel_free(kt);
    tack_kernel_free(k2);
}

/* A complex scalar argument (tack_arg_complex): its precision keys the
 * variant; out is complex128 as (re, im) pairs. */
static void test_complex_scalar(void) {
    tack_kernel *k = make("@tack.kernel\n"
                          "def rot(x, out, z):\n"
                          "    for i in range(x.shape[0]):\n"
                          "        out[i] = x[i] * z + z.conjugate()\n");
    CHECK(k != NULL);
    if (!k) return;
    double x[4] = {0.0, 1.0, -2.0, 0.5}, out[8];
    int64_t n = 4;
    tack_error err;
    for (int part = 0; part < 2; part++) {
        tack_dtype t = part ? TACK_F64 : TACK_F32;
        tack_arg a[3] = {tack_arg_array(x, TACK_F64, 1, &n, 0),
                         tack_arg_vector_array(out, TACK_F64, TACK_COMPLEX_WIDTH, 1, &n, 1),
                         tack_arg_complex(1.5, -0.25, t)};
        memset(out, 0, sizeof out);
        CHECK(launch(k, a, 3, &err) == TACK_OK);
        for (int i = 0; i < 4; i++)
            CHECK(out[2 * i] == x[i] * 1.5 + 1.5 && out[2 * i + 1] == x[i] * -0.25 + 0.25);
        CHECK(tack_kernel_num_variants(k, dev) == part + 1);
    }
    tack_arg bad[3] = {tack_arg_array(x, TACK_F64, 1, &n, 0),
                       tack_arg_vector_array(out, TACK_F64, TACK_COMPLEX_WIDTH, 1, &n, 1),
                       tack_arg_complex(1.0, 0.0, TACK_I32)};
    CHECK(launch(k, bad, 3, &err) == TACK_ERR_VALUE && strstr(err.message, "'z'"));
    tack_kernel_free(k);
}

/* Arrays of quaternions (TACK_QUAT_WIDTH): q * r is Hamilton's product,
 * of 4-vectors (width 4) the product component by component; the
 * quaternion width takes f32 or f64 parts only. */
static void test_quaternion_arrays(void) {
    tack_kernel *k = make("@tack.kernel\n"
                          "def mul(a, b, out):\n"
                          "    for i in range(a.shape[0]):\n"
                          "        out[i] = a[i] * b[i]\n");
    CHECK(k != NULL);
    if (!k) return;
    double a[4] = {0.0, 0.0, 0.6, 0.8}, b[4] = {0.6, 0.0, 0.0, 0.8}, out[4];
    int64_t n = 1;
    tack_error err;
    for (int quat = 0; quat < 2; quat++) {
        int w = quat ? TACK_QUAT_WIDTH : 4;
        tack_arg args[3] = {tack_arg_vector_array(a, TACK_F64, w, 1, &n, 0),
                            tack_arg_vector_array(b, TACK_F64, w, 1, &n, 0),
                            tack_arg_vector_array(out, TACK_F64, w, 1, &n, 1)};
        CHECK(launch(k, args, 3, &err) == TACK_OK);
        /* (0, 0, .6, .8)(.6, 0, 0, .8) = (.48, .36, .48, .64) */
        double want[2][4] = {{0.0, 0.0, 0.0, 0.64}, {0.48, 0.36, 0.48, 0.64}};
        for (int c = 0; c < 4; c++) CHECK(fabs(out[c] - want[quat][c]) < 1e-15);
    }
    CHECK(tack_kernel_num_variants(k, dev) == 2);
    int32_t ia[4] = {0}, ib[4] = {0}, iout[4];
    tack_arg ints[3] = {tack_arg_vector_array(ia, TACK_I32, TACK_QUAT_WIDTH, 1, &n, 0),
                        tack_arg_vector_array(ib, TACK_I32, TACK_QUAT_WIDTH, 1, &n, 0),
                        tack_arg_vector_array(iout, TACK_I32, TACK_QUAT_WIDTH, 1, &n, 1)};
    CHECK(launch(k, ints, 3, &err) == TACK_ERR_TYPE && strstr(err.message, "quaternions"));
    CHECK(tack_width_valid(TACK_QUAT_WIDTH) && tack_width_components(TACK_QUAT_WIDTH) == 4 &&
          !tack_width_rows(TACK_QUAT_WIDTH));
    tack_kernel_free(k);
}

/* A Warp-style kernel (i, j = tack.tid()): its launch extents are its last
 * parameters, and the names tack.tid() is assigned to index the launch. */
static void test_thread_ids(void) {
    tack_kernel *k = make("@tack.kernel\n"
                          "def fill(out, a):\n"
                          "    i, j = tack.tid()\n"
                          "    if j == 3:\n"
                          "        return\n"
                          "    out[i, j] = a * (10 * i + j)\n");
    CHECK(k != NULL);
    if (!k) return;
    CHECK(tack_kernel_thread_dims(k) == 2 && tack_kernel_num_params(k) == 4);
    CHECK(!strcmp(tack_kernel_param_name(k, 2), "_tack_dim0") &&
          !strcmp(tack_kernel_param_name(k, 3), "_tack_dim1"));
    double out[3][4] = {{0}};
    int64_t shape[2] = {3, 4};
    tack_error err;
    tack_arg args[4] = {tack_arg_array(out, TACK_F64, 2, shape, 1), tack_arg_float(0.5),
                        tack_arg_int(2), tack_arg_int(4)}; /* rows 0-1 only */
    CHECK(launch(k, args, 4, &err) == TACK_OK);
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 4; j++)
            CHECK(out[i][j] == (i < 2 && j < 3 ? 0.5 * (10 * i + j) : 0.0));
    tack_kernel *looped = make("@tack.kernel\n"
                               "def g(x):\n"
                               "    for i in range(x.shape[0]):\n"
                               "        x[i] = 1.0\n");
    CHECK(looped && tack_kernel_thread_dims(looped) == 0);
    tack_kernel_free(looped);
    tack_kernel_free(k);
}

int main(void) {
    tack_error err;
    dev = tack_device_get("cpu", &err);
    CHECK(dev != NULL);
    if (!dev) return CHECK_DONE();
    test_overflow();
    test_scale_variants();
    test_shape_variants();
    test_2d();
    test_ndindex();
    test_numerics();
    test_math_builtins();
    test_errors();
    test_devices();
    test_prepared_launch();
    test_prepared_warm_path();
    test_quaternion_arrays();
    test_thread_ids();
    test_reductions();
    test_grouped_results();
    test_precompile();
    test_resolver_shadows_defaults();
    test_tables();
    test_tiers();
    test_complex_scalar();
    return CHECK_DONE();
}
