/* test_gpu_emit.c - the GPU half: every test kernel (gpu_cases.h) emits
 * OpenCL C and CUDA C; the OpenCL C compiles with clang-14 as OpenCL 1.2
 * when clang-14 is on PATH; the host range and the pack give the CPU
 * backend's numbers; ranges the host cannot evaluate are refused. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend/gpu/gpu.h"
#include "check.h"
#include "gpu_cases.h"
#include "gpu_lower.h"

static int have_clang;

static void fill_args(const gl_case *c, tack_arg *args) {
    for (int i = 0; i < c->nargs; i++) {
        const gl_argspec *s = &c->a[i];
        if (!s->is_array) {
            args[i] = s->scalar;
            continue;
        }
        static char dummy[64] __attribute__((aligned(16)));
        args[i] = gl_view(s, dummy);
    }
}

/* Lowers case c and emits it; OpenCL C goes through clang-14. */
static void emit_case(const gl_case *c) {
    tack_arg args[16];
    fill_args(c, args);
    uint64_t slots[TACK_MAX_PARAMS];
    int64_t dims[TACK_MAX_PARAMS][TACK_MAX_NDIM];
    arena ast;
    arena_init(&ast);
    tack_error err;
    ir_func *f = gl_variant(c->src, &ast, args, c->nargs, c->debug, slots, dims, &err);
    if (!f) fprintf(stderr, "%s: %s\n", c->name, err.message);
    CHECK(f != NULL);
    if (!f) {
        arena_free(&ast);
        return;
    }
    CHECK(gpu_range_check(f, &err) == TACK_OK);
    /* Half the cases as the disjoint variant (restrict pointers). */
    static int nth;
    f->disjoint = nth++ % 2;
    char *cl = NULL, *cu = NULL;
    tack_status st = gpu_emit(f, &gpu_dialect_opencl, "tk_entry", &cl, &err);
    if (st) fprintf(stderr, "%s (opencl): %s\n", c->name, err.message);
    CHECK(st == TACK_OK && cl);
    st = gpu_emit(f, &gpu_dialect_cuda, "tk_entry", &cu, &err);
    if (st) fprintf(stderr, "%s (cuda): %s\n", c->name, err.message);
    CHECK(st == TACK_OK && cu);
    if (cl && have_clang) {
        char path[64];
        snprintf(path, sizeof path, "/tmp/tack_gpu_emit_%d.cl", (int)getpid());
        FILE *fp = fopen(path, "w");
        CHECK(fp != NULL);
        if (fp) {
            fputs(cl, fp);
            fclose(fp);
            char cmd[512];
            snprintf(cmd, sizeof cmd,
                     "clang-14 -x cl -cl-std=CL1.2 -Xclang -finclude-default-header -fsyntax-only "
                     "-Werror=implicit-function-declaration -Wno-unused-value %s 2>&1",
                     path);
            FILE *pp = popen(cmd, "r");
            char out[4096];
            size_t n = pp ? fread(out, 1, sizeof out - 1, pp) : 0;
            out[n] = 0;
            int rc = pp ? pclose(pp) : -1;
            if (rc != 0 || n) fprintf(stderr, "%s: clang-14 says:\n%s\n", c->name, out);
            CHECK(rc == 0);
            remove(path);
        }
    }
    if (getenv("TACK_GPU_EMIT_DUMP") && !strcmp(getenv("TACK_GPU_EMIT_DUMP"), c->name))
        printf("%s\n%s\n", cl ? cl : "", cu ? cu : "");
    /* For checking the CUDA C by hand: nvcc -ptx -arch=sm_80 -x cu DIR/NAME.cu */
    const char *cudir = getenv("TACK_GPU_EMIT_CUDA_DIR");
    if (cudir && cu) {
        char path[512];
        snprintf(path, sizeof path, "%s/%s.cu", cudir, c->name);
        FILE *fp = fopen(path, "w");
        if (fp) {
            fputs(cu, fp);
            fclose(fp);
        }
    }
    free(cl);
    free(cu);
    ir_func_free(f);
    arena_free(&ast);
}

/* The range and pack of `text` for args, against the expected words. */
static void check_pack(const char *text, const tack_arg *args, int nargs, const int64_t want[5],
                       tack_status want_status) {
    uint64_t slots[TACK_MAX_PARAMS];
    int64_t dims[TACK_MAX_PARAMS][TACK_MAX_NDIM];
    arena ast;
    arena_init(&ast);
    tack_error err;
    ir_func *f = gl_variant(text, &ast, args, nargs, 0, slots, dims, &err);
    CHECK(f != NULL);
    if (!f) {
        fprintf(stderr, "%s\n", err.message);
        arena_free(&ast);
        return;
    }
    int64_t pack[GPU_PACK_SCALARS + TACK_MAX_PARAMS];
    tack_status st = gpu_pack_fill(f, slots, (const int64_t(*)[TACK_MAX_NDIM])dims, NULL, pack, &err);
    CHECK(st == want_status);
    if (st == TACK_OK && want_status == TACK_OK) {
        for (int i = 0; i < 5; i++) {
            if (pack[i] != want[i])
                fprintf(stderr, "%s: pack word %d is %lld, want %lld\n", f->name, i,
                        (long long)pack[i], (long long)want[i]);
            CHECK(pack[i] == want[i]);
        }
        for (int p = 0; p < f->nparams; p++)
            CHECK((uint64_t)pack[GPU_PACK_SCALARS + p] ==
                  (f->params[p].role == ROLE_SCALAR ? slots[p] : 0));
    } else if (st) {
        CHECK(strstr(err.message, f->name) != NULL);
    }
    ir_func_free(f);
    arena_free(&ast);
}

static void test_packs(void) {
    static float buf[64];
    int64_t shape[3] = {10, 6, 4};
    /* range(n) */
    {
        tack_arg a[2] = {tack_arg_array(buf, TACK_F32, 1, shape, 1), tack_arg_int(7)};
        int64_t want[5] = {0, 1, 7, 1, 1};
        check_pack("def k(x, n):\n    for i in range(n):\n        x[i] = 1.0\n", a, 2, want, TACK_OK);
    }
    /* range(a, b, step), negative step, and an empty one */
    {
        tack_arg a[4] = {tack_arg_array(buf, TACK_F32, 1, shape, 1), tack_arg_int(20),
                         tack_arg_int(-1), tack_arg_int(-3)};
        int64_t want[5] = {20, -3, 7, 1, 1};
        const char *src = "def k(x, a, b, c):\n    for i in range(a, b, c):\n        x[i] = 1.0\n";
        check_pack(src, a, 4, want, TACK_OK);
        a[1] = tack_arg_int(-5);
        int64_t empty[5] = {-5, -3, 0, 1, 1};
        check_pack(src, a, 4, empty, TACK_OK);
        a[3] = tack_arg_int(0);
        check_pack(src, a, 4, empty, TACK_ERR_VALUE);
        /* Extremes: no overflow in the count. */
        a[1] = tack_arg_int(INT64_MIN);
        a[2] = tack_arg_int(INT64_MAX);
        a[3] = tack_arg_int(1);
        int64_t big[5] = {INT64_MIN, 1, -1 /* 2^64 - 1 wraps, as the CPU's */, 1, 1};
        check_pack(src, a, 4, big, TACK_OK);
        a[1] = tack_arg_int(INT64_MAX);
        a[2] = tack_arg_int(INT64_MIN);
        a[3] = tack_arg_int(INT64_MIN);
        int64_t down[5] = {INT64_MAX, INT64_MIN, 2, 1, 1};
        check_pack(src, a, 4, down, TACK_OK);
    }
    /* range(x.shape[0] - 1), and with a computed step */
    {
        tack_arg a[1] = {tack_arg_array(buf, TACK_F32, 1, shape, 1)};
        int64_t want[5] = {0, 1, 9, 1, 1};
        check_pack("def k(x):\n    for i in range(x.shape[0] - 1):\n        x[i] = 1.0\n", a, 1,
                   want, TACK_OK);
        int64_t want2[5] = {9, -4, 3, 1, 1};
        check_pack("def k(x):\n    for i in range(x.shape[0] - 1, -1, -(x.shape[0] // 3 + 1)):\n"
                   "        x[i] = 1.0\n", a, 1, want2, TACK_OK);
        int64_t want3[5] = {2, 3, 2, 1, 1};
        check_pack("def k(x):\n    for i in range(min(x.shape[0], 2), int(x.shape[0] * 1.5) >> 1, "
                   "abs(-3) if x.shape[0] > 3 else 1):\n        x[i] = 1.0\n", a, 1, want3, TACK_OK);
    }
    /* ndindex 2-D and 3-D, and an empty inner extent */
    {
        tack_arg a[2] = {tack_arg_array(buf, TACK_F32, 3, shape, 1), tack_arg_int(-2)};
        int64_t want[5] = {0, 1, 10, 6, 4};
        check_pack("def k(x, n):\n    for i, j, l in tack.ndindex(x.shape[0], x.shape[1], "
                   "x.shape[2]):\n        x[i, j, l] = 1.0\n", a, 2, want, TACK_OK);
        int64_t want2[5] = {0, 1, 0, -2, 1};
        check_pack("def k(x, n):\n    for i, j in tack.ndindex(x.shape[0], n):\n"
                   "        x[i, j, 0] = 1.0\n", a, 2, want2, TACK_OK);
    }
}

/* A stand-in for a backend's mem_read: handles here are host pointers. */
static int reads;
static tack_status host_read(struct backend *b, const void *handle, size_t offset, void *dst,
                             size_t n, tack_error *err) {
    (void)b;
    (void)err;
    reads++;
    memcpy(dst, (const char *)handle + offset, n);
    return TACK_OK;
}

/* A range that reads array elements: fetched through the device read at
 * each evaluation (none: refused, naming the line), the index checked. */
static void test_element_ranges(void) {
    static int32_t buf[8];
    int64_t shape[1] = {8};
    tack_arg a[1] = {tack_arg_array(buf, TACK_I32, 1, shape, 1)};
    uint64_t slots[TACK_MAX_PARAMS];
    int64_t dims[TACK_MAX_PARAMS][TACK_MAX_NDIM];
    arena ast;
    arena_init(&ast);
    tack_error err;
    ir_func *f = gl_variant("def elem(x):\n    for i in range(x[1], x[2]):\n        x[i] = 1\n", &ast,
                            a, 1, 0, slots, dims, &err);
    CHECK(f != NULL);
    if (f) {
        slots[0] = (uint64_t)(uintptr_t)buf;
        const int64_t(*d)[TACK_MAX_NDIM] = (const int64_t(*)[TACK_MAX_NDIM])dims;
        CHECK(gpu_range_check(f, &err) == TACK_OK);
        int64_t pack[GPU_PACK_SCALARS + 1];
        CHECK(gpu_pack_fill(f, slots, d, NULL, pack, &err) == TACK_ERR_COMPILE);
        CHECK(strstr(err.message, "elem") != NULL && strstr(err.message, ":2:") != NULL);
        gpu_device_read rd = {host_read, NULL};
        buf[1] = 2;
        buf[2] = 7;
        reads = 0;
        CHECK(gpu_pack_fill(f, slots, d, &rd, pack, &err) == TACK_OK);
        CHECK(pack[GPU_PACK_START] == 2 && pack[GPU_PACK_COUNT] == 5 && reads == 2);
        buf[2] = 3; /* read again on every evaluation */
        CHECK(gpu_pack_fill(f, slots, d, &rd, pack, &err) == TACK_OK && pack[GPU_PACK_COUNT] == 1);
        buf[2] = -4; /* an empty range, as Python's */
        CHECK(gpu_pack_fill(f, slots, d, &rd, pack, &err) == TACK_OK && pack[GPU_PACK_COUNT] == 0);
        dims[0][0] = 2; /* x[2] is now past the end: refused before any read */
        reads = 0;
        CHECK(gpu_pack_fill(f, slots, d, &rd, pack, &err) == TACK_ERR_INDEX && reads == 1);
        CHECK(strstr(err.message, "element 2 of 'x', which has 2") != NULL);
        ir_func_free(f);
    }
    /* What needs the device's code stays refused at build time. */
    f = gl_variant("def refused(x):\n    for i in range(tack.atomic_add(x, 0, 1)):\n        x[i] = 1\n",
                   &ast, a, 1, 0, slots, dims, &err);
    CHECK(f != NULL);
    if (f) {
        CHECK(gpu_range_check(f, &err) == TACK_ERR_COMPILE);
        CHECK(strstr(err.message, "refused") != NULL && strstr(err.message, "atomics") != NULL);
        ir_func_free(f);
    }
    arena_free(&ast);
}

int main(void) {
    have_clang = system("clang-14 --version >/dev/null 2>&1") == 0;
    if (!have_clang) printf("clang-14 not on PATH: OpenCL C syntax checks skipped\n");
    static gl_case cases[128];
    int n = gl_cases(cases, 128);
    for (int i = 0; i < n; i++) emit_case(&cases[i]);
    test_packs();
    test_element_ranges();
    return CHECK_DONE();
}
