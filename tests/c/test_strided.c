/* test_strided.c - strided arrays through the public C API on the CPU: the
 * variant key (one strided variant for every step, is_strided per
 * parameter), the overlap check's byte spans with negative strides, views
 * of vector arrays, prepared launches, the refusals of layouts a kernel
 * cannot write or address, and an OpenCL device's refusal of negative
 * strides where one is installed.  Results are checked against loops written here. */
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "tack.h"

static tack_device *cpu;

static tack_kernel *make(const char *src) {
    tack_error err;
    tack_kernel *k = tack_kernel_create(src, "strided.py", 1, NULL, NULL, &err);
    if (!k) fprintf(stderr, "%s\n", err.message);
    return k;
}

static tack_variant_key last_key(tack_kernel *k, tack_device *dev) {
    tack_variant_key key;
    memset(&key, 0, sizeof key);
    int n = tack_kernel_num_variants(k, dev);
    if (n > 0) tack_kernel_variant_key(k, dev, n - 1, &key);
    return key;
}

/* An f32 view of `base`: n elements, `step` elements apart, from base[first]. */
static tack_arg view1(float *base, int64_t first, int64_t n, int64_t step, int writable) {
    tack_arg a = tack_arg_array(base + first, TACK_F32, 1, &n, writable);
    a.strides[0] = step * (int64_t)sizeof(float);
    return a;
}

static const char *COPY =
    "def copy(x, out):\n    for i in range(x.shape[0]):\n        out[i] = x[i] + 0.5\n";

static void test_key(void) {
    tack_kernel *k = make(COPY);
    CHECK(k != NULL);
    if (!k) return;
    tack_error err;
    float base[64], out[64];
    for (int i = 0; i < 64; i++) base[i] = (float)i;
    int steps[] = {2, 3, -1, -5, 7};
    for (int s = 0; s < 5; s++) {
        int64_t step = steps[s], n = 64 / (step < 0 ? -step : step);
        int64_t first = step < 0 ? 63 : 0;
        memset(out, 0, sizeof out);
        tack_arg args[2] = {view1(base, first, n, step, 0), tack_arg_array(out, TACK_F32, 1, &n, 1)};
        CHECK(tack_kernel_launch(k, cpu, args, 2, &err) == TACK_OK);
        int ok = 1;
        for (int64_t i = 0; i < n; i++) ok &= out[i] == base[first + i * step] + 0.5f;
        CHECK(ok);
    }
    /* Every step value: one variant, its x strided. */
    CHECK(tack_kernel_num_variants(k, cpu) == 1);
    tack_variant_key key = last_key(k, cpu);
    CHECK(key.params[0].is_strided == 1 && key.params[1].is_strided == 0);
    /* C order again: a second variant, with nothing strided. */
    int64_t n = 16;
    tack_arg plain[2] = {tack_arg_array(base, TACK_F32, 1, &n, 0), tack_arg_array(out, TACK_F32, 1, &n, 1)};
    CHECK(tack_kernel_launch(k, cpu, plain, 2, &err) == TACK_OK);
    CHECK(tack_kernel_num_variants(k, cpu) == 2);
    key = last_key(k, cpu);
    CHECK(key.params[0].is_strided == 0 && key.params[1].is_strided == 0);
    /* A length-1 dimension's stride does not matter: still C order. */
    int64_t one = 1;
    tack_arg single[2] = {tack_arg_array(base, TACK_F32, 1, &one, 0), tack_arg_array(out, TACK_F32, 1, &one, 1)};
    single[0].strides[0] = 12345;
    CHECK(tack_kernel_launch(k, cpu, single, 2, &err) == TACK_OK && out[0] == 0.5f);
    CHECK(tack_kernel_num_variants(k, cpu) == 2);
    tack_kernel_free(k);
}

/* The disjoint bit from byte spans: a negative stride reaches below its
 * first element. */
static int disjoint_after(tack_kernel *k, tack_arg *args) {
    tack_error err;
    if (tack_kernel_launch(k, cpu, args, 2, &err) != TACK_OK) {
        fprintf(stderr, "%s\n", err.message);
        return -1;
    }
    return last_key(k, cpu).disjoint; /* each case makes its own kernel */
}

static void test_spans(void) {
    tack_error err;
    float a[16];
    for (int i = 0; i < 16; i++) a[i] = (float)i;
    int64_t four = 4;
    {
        /* in: a[7], a[6], a[5], a[4] (first element a[7]); out: a[0..3]. */
        tack_kernel *k = make(COPY);
        tack_arg args[2] = {view1(a, 7, 4, -1, 0), tack_arg_array(a, TACK_F32, 1, &four, 1)};
        CHECK(disjoint_after(k, args) == 1);
        CHECK(a[0] == 7.5f && a[3] == 4.5f);
        tack_kernel_free(k);
    }
    {
        /* in: a[4], a[3], a[2], a[1]: overlaps out a[0..3] though a + 4 is past it. */
        tack_kernel *k = make(COPY);
        tack_arg args[2] = {view1(a, 4, 4, -1, 0), tack_arg_array(a, TACK_F32, 1, &four, 1)};
        CHECK(disjoint_after(k, args) == 0);
        tack_kernel_free(k);
    }
    {
        /* Interleaved: a[0], a[2], ... and a[1], a[3], ...: spans overlap. */
        tack_kernel *k = make(COPY);
        tack_arg args[2] = {view1(a, 0, 8, 2, 0), view1(a, 1, 8, 2, 1)};
        CHECK(disjoint_after(k, args) == 0);
        tack_kernel_free(k);
    }
    {
        /* Apart by one element: a[0..6] step 2 reads up to a[6]; out a[7..]. */
        tack_kernel *k = make(COPY);
        tack_arg args[2] = {view1(a, 0, 4, 2, 0), view1(a, 7, 4, 1, 1)};
        CHECK(disjoint_after(k, args) == 1);
        tack_kernel_free(k);
    }
    {
        /* 2-D: a transposed 3x4 in, read only, beside itself. */
        tack_kernel *k = make("def t(x, y):\n    for i in range(x.shape[0]):\n"
                              "        for j in range(x.shape[1]):\n            y[i, j] = x[i, j]\n");
        float m[12], t[12];
        for (int i = 0; i < 12; i++) m[i] = (float)i, t[i] = -1;
        int64_t shape[2] = {4, 3};
        tack_arg args[2] = {tack_arg_array(m, TACK_F32, 2, shape, 0), tack_arg_array(t, TACK_F32, 2, shape, 1)};
        args[0].strides[0] = 4;   /* m is 3x4 in C order; x = m.T */
        args[0].strides[1] = 16;
        CHECK(tack_kernel_launch(k, cpu, args, 2, &err) == TACK_OK);
        int ok = 1;
        for (int i = 0; i < 4; i++)
            for (int j = 0; j < 3; j++) ok &= t[i * 3 + j] == m[j * 4 + i];
        CHECK(ok);
        tack_kernel_free(k);
    }
}

/* Views of vector arrays: strided along the logical dimension, the
 * components adjacent. */
static void test_vector_views(void) {
    tack_kernel *k = make("def vv(p, out, s):\n    for i in range(p.shape[0]):\n"
                          "        out[i] = p[i] * 2.0 + s[i]\n");
    CHECK(k != NULL);
    if (!k) return;
    float p[3 * 20], out[3 * 20], s[20 * 3];
    for (int i = 0; i < 60; i++) p[i] = (float)i, out[i] = -1, s[i] = (float)(100 + i);
    int64_t n = 10;
    /* p: every other vector from the last backwards; out and s: every
     * other vector. */
    tack_arg args[3] = {tack_arg_vector_array(p + 57, TACK_F32, 3, 1, &n, 0),
                        tack_arg_vector_array(out, TACK_F32, 3, 1, &n, 1),
                        tack_arg_vector_array(s, TACK_F32, 3, 1, &n, 0)};
    args[0].strides[0] = -2 * 3 * 4;
    args[1].strides[0] = 2 * 3 * 4;
    args[2].strides[0] = 2 * 3 * 4;
    tack_error err;
    tack_status st = tack_kernel_launch(k, cpu, args, 3, &err);
    if (st) fprintf(stderr, "%s\n", err.message);
    CHECK(st == TACK_OK);
    int ok = 1;
    for (int i = 0; i < 20; i++)
        for (int c = 0; c < 3; c++) {
            float want = i % 2 ? -1.0f : p[(19 - i) * 3 + c] * 2.0f + s[i * 3 + c];
            ok &= out[i * 3 + c] == want;
        }
    CHECK(ok);
    tack_variant_key key = last_key(k, cpu);
    CHECK(key.params[0].is_strided && key.params[1].is_strided && key.params[2].is_strided);
    /* Components that are not adjacent: refused by name. */
    int64_t storage[2] = {10, 3};
    tack_arg spread[3] = {args[0], args[1], args[2]};
    spread[2] = tack_arg_array(s, TACK_F32, 2, storage, 0);
    spread[2].vec_width = 3;
    spread[2].strides[0] = 4;
    spread[2].strides[1] = 40; /* Fortran order: components 10 floats apart */
    CHECK(tack_kernel_launch(k, cpu, spread, 3, &err) == TACK_ERR_VALUE &&
          strstr(err.message, "'s'") && strstr(err.message, "adjacent"));
    tack_kernel_free(k);
}

static void test_prepared(void) {
    tack_kernel *k = make(COPY);
    tack_error err;
    float base[40], out[40];
    for (int i = 0; i < 40; i++) base[i] = (float)i;
    int64_t n = 10;
    tack_arg args[2] = {view1(base, 0, 10, 4, 0), tack_arg_array(out, TACK_F32, 1, &n, 1)};
    tack_launch *l = tack_launch_prepare(k, cpu, args, 2, &err);
    CHECK(l != NULL);
    args[0] = view1(base, 39, 10, -3, 0); /* another step: the same variant */
    CHECK(l && tack_launch_run(l, args, 2, &err) == TACK_OK);
    int ok = 1;
    for (int i = 0; i < 10; i++) ok &= out[i] == base[39 - 3 * i] + 0.5f;
    CHECK(ok);
    CHECK(tack_kernel_num_variants(k, cpu) == 1);
    tack_launch_free(l);
    tack_kernel_free(k);
}

static void test_refusals(void) {
    tack_kernel *k = make("def two(x, out):\n    for i in range(x.shape[0]):\n"
                          "        for j in range(x.shape[1]):\n            out[i, j] = x[i, j]\n");
    tack_error err;
    float x[16], out[16];
    for (int i = 0; i < 16; i++) x[i] = 1, out[i] = 9;
    int64_t shape[2] = {4, 4};
    tack_arg args[2] = {tack_arg_array(x, TACK_F32, 2, shape, 0), tack_arg_array(out, TACK_F32, 2, shape, 1)};
    /* Rows one element apart: out[0, 1] is out[1, 0]. */
    args[1].strides[0] = 4;
    args[1].strides[1] = 4;
    CHECK(tack_kernel_launch(k, cpu, args, 2, &err) == TACK_ERR_VALUE &&
          strstr(err.message, "'out'") && strstr(err.message, "same address"));
    /* A zero stride written. */
    args[1].strides[0] = 16;
    args[1].strides[1] = 0;
    CHECK(tack_kernel_launch(k, cpu, args, 2, &err) == TACK_ERR_VALUE &&
          strstr(err.message, "(16, 0)"));
    /* The same layouts read are fine (a broadcast row). */
    tack_arg bcast[2] = {tack_arg_array(x, TACK_F32, 2, shape, 0), tack_arg_array(out, TACK_F32, 2, shape, 1)};
    bcast[0].strides[0] = 0;
    int ok = 1;
    for (int i = 0; i < 16; i++) ok &= out[i] == 9; /* nothing written so far */
    CHECK(ok);
    CHECK(tack_kernel_num_variants(k, cpu) == 0);
    x[2] = 5;
    CHECK(tack_kernel_launch(k, cpu, bcast, 2, &err) == TACK_OK);
    ok = 1;
    for (int i = 0; i < 16; i++) ok &= out[i] == (i % 4 == 2 ? 5.0f : 1.0f);
    CHECK(ok);
    /* A layout that reaches below address 0 is refused, not wrapped. */
    tack_arg low[2] = {tack_arg_array(x, TACK_F32, 2, shape, 0), bcast[1]};
    low[0].strides[0] = -(int64_t)((uintptr_t)x / 2) * 4;
    CHECK(tack_kernel_launch(k, cpu, low, 2, &err) == TACK_ERR_VALUE && strstr(err.message, "'x'"));
    tack_kernel_free(k);
}

/* An OpenCL device (PoCL here), where one is installed: a negative stride
 * in device memory is refused by name before anything is built.  (A
 * launch would build with PoCL's LLVM, which cannot share this process
 * with the CPU backend's LLVM 14: gpu_emit_run runs the strided GPU code
 * on PoCL from a process of its own.) */
static void test_opencl_refusal(void) {
    tack_error err;
    tack_device *cl = tack_device_get("opencl", &err);
    if (!cl) {
        printf("no OpenCL device: the device part is skipped (%s)\n", err.message);
        return;
    }
    tack_kernel *k = make(COPY);
    void *in = tack_device_alloc(cl, 256, &err);
    void *out = tack_device_alloc(cl, 256, &err);
    CHECK(in && out);
    int64_t n = 16;
    tack_arg args[2] = {tack_arg_array(in, TACK_F32, 1, &n, 0), tack_arg_array(out, TACK_F32, 1, &n, 1)};
    args[0].device = args[1].device = cl;
    args[0].strides[0] = -4;
    CHECK(tack_kernel_launch(k, cl, args, 2, &err) == TACK_ERR_VALUE && strstr(err.message, "'x'") &&
          strstr(err.message, "negative"));
    CHECK(tack_kernel_num_variants(k, cl) == 0);
    tack_device_free_mem(cl, in);
    tack_device_free_mem(cl, out);
    tack_kernel_free(k);
}

int main(void) {
    tack_error err;
    cpu = tack_device_get("cpu", &err);
    if (!cpu) {
        fprintf(stderr, "%s\n", err.message);
        return 1;
    }
    test_key();
    test_spans();
    test_vector_views();
    test_prepared();
    test_refusals();
    test_opencl_refusal();
    return CHECK_DONE();
}
