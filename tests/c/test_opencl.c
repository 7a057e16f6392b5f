/* test_opencl.c - the OpenCL driver on its own (src/backend/opencl), with
 * hand-written OpenCL C that follows gpu.h's pack layout and argument
 * order: opening devices, capabilities, memory, building from source,
 * launches in one to three dimensions, the artifact and its load (binary
 * and source fallback), device-support checks, and error names.  Skips
 * (exit 0) where no OpenCL platform is installed.  The end-to-end tests
 * through the emitter live with the runtime's. */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend/gpu/gpu.h"
#include "backend/opencl/opencl.h"
#include "check.h"

static backend *b;

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

/* A stand-in for post-pass IR: the parameters and the launch's shape are
 * all a code object and its launches read. */
static ir_func *make_func(const char *name, int ninner, int nparams, const char *const *pnames,
                          const ir_param_role *roles, const ir_type *types) {
    ir_func *f = ir_func_new();
    f->name = name;
    f->first_line = 1;
    f->ninner = ninner;
    for (int d = 0; d < ninner; d++) f->inner_stop[d] = ir_const_int(f, 1, TACK_I64, 1, 1);
    f->nparams = nparams;
    f->params = arena_alloc(&f->mem, nparams * sizeof *f->params);
    for (int p = 0; p < nparams; p++) {
        f->params[p].name = pnames[p];
        f->params[p].role = roles[p];
        f->params[p].type = types[p];
    }
    return f;
}

static uint64_t f32_bits(float v) {
    uint32_t u;
    memcpy(&u, &v, 4);
    return u;
}

/* out[i] = x[i] * a for i in range(start, start + count * step, step). */
static const char *SCALE_SRC =
    "typedef struct { long w[8]; } tack_pack;\n"
    "__kernel void tack_scale(tack_pack p, __global const float *x, __global float *out) {\n"
    "    long start = p.w[0], step = p.w[1], count = p.w[2];\n"
    "    float a = as_float((uint)p.w[5 + 2]);\n"
    "    long k = get_global_id(0);\n"
    "    if (k < count) {\n"
    "        long i = start + k * step;\n"
    "        out[i] = x[i] * a;\n"
    "    }\n"
    "}\n";

static const char *SCALE_NAMES[] = {"x", "out", "a"};
static const ir_param_role SCALE_ROLES[] = {ROLE_ARRAY, ROLE_ARRAY, ROLE_SCALAR};
static const ir_type SCALE_TYPES[] = {TACK_F32, TACK_F32, TACK_F32};

static tack_status run_scale(backend_code *c, void *x, void *out, int64_t start, int64_t step,
                             int64_t count, float a, tack_error *err) {
    uint64_t slots[3] = {(uint64_t)(uintptr_t)x, (uint64_t)(uintptr_t)out, f32_bits(a)};
    int64_t pack[8] = {start, step, count, 1, 1, (int64_t)slots[0], (int64_t)slots[1],
                       (int64_t)slots[2]};
    backend_call call = {.kernel_name = "scale", .slots = slots, .nparams = 3};
    return opencl_launch_pack(b, c, &call, pack, err);
}

/* Checks out after run_scale over x[i] = i, with out preset to -1. */
static int scale_ok(const float *out, int n, int64_t start, int64_t step, int64_t count,
                    float a) {
    int bad = 0;
    for (int i = 0; i < n; i++) {
        int64_t k = (i - start) / step;
        int hit = i >= start && (i - start) % step == 0 && k < count;
        float want = hit ? (float)i * a : -1.0f;
        if (out[i] != want && bad++ < 3)
            fprintf(stderr, "out[%d] = %g, want %g\n", i, out[i], want);
    }
    return bad == 0;
}

static void test_open(int ndev) {
    tack_error err;
    backend *other = NULL;
    CHECK(opencl_open(ndev, 0, &other, &err) == TACK_ERR_VALUE && !other);
    CHECK(strstr(err.message, "there is no OpenCL device") != NULL);
    CHECK(strstr(err.message, "\"opencl:0\" is") != NULL);
    printf("out of range: %s\n", err.message);
    CHECK(opencl_open(-1, 0, &other, &err) == TACK_ERR_VALUE);
    opencl_close(NULL); /* harmless */
}

static void test_caps(void) {
    backend_caps c;
    opencl_caps(b, &c);
    CHECK(c.host_memory == 0);
    CHECK(c.locked_dispatch == 1);
    CHECK(c.max_workgroup >= 1);
    CHECK(c.compute_units >= 1);
    CHECK(c.global_mem_bytes > 0);
    CHECK(c.max_alloc_bytes > 0 && c.max_alloc_bytes <= c.global_mem_bytes);
    CHECK(c.max_grid[0] >= 65536 && c.max_grid[1] > 0 && c.max_grid[2] > 0);
    CHECK(c.local_mem_bytes > 0);
    CHECK(!c.images || (c.image3d_max[0] > 0 && c.image3d_max[1] > 0 && c.image3d_max[2] > 0));
    const char *d = opencl_describe(b);
    CHECK(strstr(d, "OpenCL C ") != NULL && strstr(d, b->name) == d);
    const char *t = opencl_cache_target(b);
    CHECK(t && strstr(t, b->name) && strstr(t, "driver=") && strstr(t, "options="));
    printf("device: %s\ncaps: fp64 %d, atomics64 %d, images %d, %d units, workgroup %lld, "
           "alloc %lld, global %lld\ntarget: %s\n",
           d, c.fp64, c.atomics64, c.images, c.compute_units, (long long)c.max_workgroup,
           (long long)c.max_alloc_bytes, (long long)c.global_mem_bytes, t);
}

static void test_memory(void) {
    tack_error err;
    enum { N = 1000 };
    int32_t in[N], back[N];
    for (int i = 0; i < N; i++) in[i] = i * 7 - 3;
    void *m = NULL;
    CHECK(opencl_mem_alloc(b, sizeof in, &m, &err) == TACK_OK && m);
    CHECK(opencl_mem_write(b, m, 0, in, sizeof in, &err) == TACK_OK);
    memset(back, 0, sizeof back);
    CHECK(opencl_mem_read(b, m, 0, back, sizeof back, &err) == TACK_OK);
    CHECK(memcmp(in, back, sizeof in) == 0);
    /* Waiting for the queue (clFinish); cl_mem handles cannot wrap another
     * library's addresses. */
    CHECK(backend_opencl.synchronize(b, &err) == TACK_OK && !backend_opencl.mem_wrap);
    /* Offsets: overwrite elements 10..19, read 5..24. */
    int32_t patch[10];
    for (int i = 0; i < 10; i++) patch[i] = -100 - i;
    CHECK(opencl_mem_write(b, m, 10 * sizeof(int32_t), patch, sizeof patch, &err) == TACK_OK);
    int32_t part[20];
    CHECK(opencl_mem_read(b, m, 5 * sizeof(int32_t), part, sizeof part, &err) == TACK_OK);
    int ok = 1;
    for (int i = 0; i < 20; i++) {
        int j = 5 + i;
        int32_t want = j >= 10 && j < 20 ? -100 - (j - 10) : in[j];
        if (part[i] != want) ok = 0;
    }
    CHECK(ok);
    /* Past the end: the driver refuses; the message names the call. */
    CHECK(opencl_mem_read(b, m, sizeof in - 4, part, 8, &err) != TACK_OK);
    CHECK(strstr(err.message, "clEnqueueReadBuffer failed: CL_") != NULL);
    opencl_mem_free(b, m);

    /* Empty: a handle all the same, and empty copies do nothing. */
    void *z = NULL;
    CHECK(opencl_mem_alloc(b, 0, &z, &err) == TACK_OK && z);
    CHECK(opencl_mem_write(b, z, 0, in, 0, &err) == TACK_OK);
    CHECK(opencl_mem_read(b, z, 0, back, 0, &err) == TACK_OK);
    opencl_mem_free(b, z);
    opencl_mem_free(b, NULL);

    /* Too large: refused before the driver, naming the size and the limit. */
    void *big = NULL;
    size_t too_big = (size_t)b->caps.max_alloc_bytes + 1;
    CHECK(opencl_mem_alloc(b, too_big, &big, &err) == TACK_ERR_NOMEM && !big);
    char limit[32], size[32];
    snprintf(limit, sizeof limit, "%lld", (long long)b->caps.max_alloc_bytes);
    snprintf(size, sizeof size, "%zu", too_big);
    CHECK(strstr(err.message, limit) && strstr(err.message, size));
    printf("oversize: %s\n", err.message);
}

static void test_scale(void) {
    tack_error err;
    /* Names the caller frees once the code is built: it keeps its own. */
    char *names[3] = {strdup("x"), strdup("out"), strdup("a")};
    ir_func *f = make_func("scale", 0, 3, (const char *const *)names, SCALE_ROLES, SCALE_TYPES);
    backend_code *c = NULL;
    CHECK(opencl_code_from_source(b, f, SCALE_SRC, "tack_scale", &c, &err) == TACK_OK && c);
    ir_func_free(f);
    for (int i = 0; i < 3; i++) memset(names[i], '#', strlen(names[i])), free(names[i]);
    if (c) CHECK(strcmp(c->f->params[1].name, "out") == 0 && strcmp(c->f->name, "scale") == 0);
    if (!c) {
        fprintf(stderr, "%s\n", err.message);
        return;
    }
    CHECK(c->narrays == 2 && c->arrays[0] == 0 && c->arrays[1] == 1 && c->pack_words == 8);

    /* Past launch_items (several launches at offsets) and not a multiple of
     * 64 (a rounded grid). */
    int n = (int)b->launch_items * 3 + 7;
    float *x = malloc(n * sizeof *x), *out = malloc(n * sizeof *out);
    for (int i = 0; i < n; i++) x[i] = (float)i, out[i] = -1.0f;
    void *mx, *mo;
    CHECK(opencl_mem_alloc(b, n * sizeof *x, &mx, &err) == TACK_OK);
    CHECK(opencl_mem_alloc(b, n * sizeof *x, &mo, &err) == TACK_OK);
    CHECK(opencl_mem_write(b, mx, 0, x, n * sizeof *x, &err) == TACK_OK);

    struct {
        int64_t start, step, count;
    } cases[] = {{0, 1, n}, {3, 2, (n - 3) / 2}, {5, 7, 1000}, {0, 1, 1}, {1, 1, 63}, {0, 1, 0}};
    for (size_t t = 0; t < sizeof cases / sizeof cases[0]; t++) {
        CHECK(opencl_mem_write(b, mo, 0, out, n * sizeof *out, &err) == TACK_OK);
        tack_status st = run_scale(c, mx, mo, cases[t].start, cases[t].step, cases[t].count,
                                   2.5f, &err);
        CHECK(st == TACK_OK);
        if (st) fprintf(stderr, "%s\n", err.message);
        float *got = malloc(n * sizeof *got);
        CHECK(opencl_mem_read(b, mo, 0, got, n * sizeof *got, &err) == TACK_OK);
        CHECK(scale_ok(got, n, cases[t].start, cases[t].step, cases[t].count, 2.5f));
        free(got);
    }

    /* An empty array's NULL handle is bound to a dummy buffer; a zero
     * count returns without touching it. */
    CHECK(run_scale(c, NULL, NULL, 0, 1, 0, 1.0f, &err) == TACK_OK);

    /* Warm launches of a tiny range: pack, arguments, enqueue, finish. */
    int reps = 2000;
    run_scale(c, mx, mo, 0, 1, 8, 2.0f, &err);
    double t0 = now();
    for (int r = 0; r < reps; r++) run_scale(c, mx, mo, 0, 1, 8, 2.0f, &err);
    double us = (now() - t0) / reps * 1e6;
    printf("warm launch, 8 items: %.1f us\n", us);

    /* The artifact: binary and source; its load runs the same. */
    ser_writer w = {0};
    CHECK(opencl_artifact(b, c, &w) == 0 && !w.failed);
    ir_func *f2 = make_func("scale", 0, 3, SCALE_NAMES, SCALE_ROLES, SCALE_TYPES);
    unsigned long long bin0 = backend_stats.binary_loads, src0 = backend_stats.source_builds;
    backend_code *c2 = NULL;
    CHECK(opencl_load(b, f2, w.data, w.len, &c2, &err) == TACK_OK && c2);
    CHECK(backend_stats.binary_loads == bin0 + 1 && backend_stats.source_builds == src0);
    if (c2) {
        CHECK(strcmp(c2->entry, "tack_scale") == 0 && c2->narrays == 2);
        CHECK(opencl_mem_write(b, mo, 0, out, n * sizeof *out, &err) == TACK_OK);
        CHECK(run_scale(c2, mx, mo, 3, 2, 5000, -1.5f, &err) == TACK_OK);
        float *got = malloc(n * sizeof *got);
        CHECK(opencl_mem_read(b, mo, 0, got, n * sizeof *got, &err) == TACK_OK);
        CHECK(scale_ok(got, n, 3, 2, 5000, -1.5f));
        free(got);
        opencl_release(b, c2);
    }
    /* A binary the driver refuses: built from the stored source instead.
     * The record: u32 magic, u32 version, str entry, blob binary, ... */
    size_t bin_at = 4 + 4 + 4 + strlen("tack_scale") + 8;
    unsigned char *bad = malloc(w.len);
    memcpy(bad, w.data, w.len);
    uint64_t bin_len;
    memcpy(&bin_len, bad + bin_at - 8, 8);
    CHECK(bin_len > 0 && bin_at + bin_len < w.len);
    if (bin_len > 0 && bin_at + bin_len < w.len) {
        memset(bad + bin_at, 'X', bin_len > 64 ? 64 : bin_len);
        c2 = NULL;
        CHECK(opencl_load(b, f2, bad, w.len, &c2, &err) == TACK_OK && c2);
        CHECK(backend_stats.source_builds == src0 + 1 && backend_stats.binary_loads == bin0 + 1);
        if (c2) {
            CHECK(run_scale(c2, mx, mo, 0, 1, 100, 3.0f, &err) == TACK_OK);
            float got[100];
            CHECK(opencl_mem_read(b, mo, 0, got, sizeof got, &err) == TACK_OK);
            CHECK(got[99] == 297.0f && got[0] == 0.0f);
            opencl_release(b, c2);
        }
    }
    /* Damaged or truncated records are refused, never trusted. */
    c2 = NULL;
    CHECK(opencl_load(b, f2, w.data, w.len - 1, &c2, &err) == TACK_ERR_INTERNAL && !c2);
    CHECK(strstr(err.message, "kernel 'scale'") != NULL);
    bad[0] ^= 1;
    CHECK(opencl_load(b, f2, bad, w.len, &c2, &err) == TACK_ERR_INTERNAL && !c2);
    free(bad);
    ser_writer_free(&w);
    ir_func_free(f2);

    opencl_release(b, c);
    opencl_mem_free(b, mx);
    opencl_mem_free(b, mo);
    free(x);
    free(out);
}

/* ndindex over one to three dimensions, the innermost index on dimension
 * 0 and the outer on the last (gpu.h): out[(i * n1 + j) * n2 + l] gets its
 * code added once, so an iteration run twice (launches that overlap) or
 * never shows. */
static const char *GRID_SRC =
    "typedef struct { long w[6]; } tack_pack;\n"
    "__kernel void tack_grid(tack_pack p, __global int *out) {\n"
    "    long count = p.w[2], n1 = p.w[3], n2 = p.w[4];\n"
    "    uint nd = get_work_dim();\n"
    "    long i = get_global_id(nd - 1);\n"
    "    long j = nd == 3 ? (long)get_global_id(1) : nd == 2 ? (long)get_global_id(0) : 0;\n"
    "    long l = nd == 3 ? (long)get_global_id(0) : 0;\n"
    "    if (i < count && j < n1 && l < n2)\n"
    "        atomic_add(&out[(i * n1 + j) * n2 + l], (int)(i * 10000 + j * 100 + l + 1));\n"
    "}\n";

/* The same in the form a CPU device gets (dialect.h's serial_innermost):
 * a grid of one index fewer, the innermost index a loop in each item. */
static const char *GRID_SERIAL_SRC =
    "typedef struct { long w[6]; } tack_pack;\n"
    "__kernel void tack_grid(tack_pack p, __global int *out) {\n"
    "    long count = p.w[2], n1 = p.w[3], n2 = p.w[4];\n"
    "    uint nd = get_work_dim();\n"
    "    long i = get_global_id(nd - 1);\n"
    "    long j0 = nd == 2 ? (long)get_global_id(0) : 0, j1 = nd == 2 ? j0 + 1 : n1;\n"
    "    for (long j = j0; i < count && j < j1 && j < n1; j++)\n"
    "        for (long l = 0; l < n2; l++)\n"
    "            atomic_add(&out[(i * n1 + j) * n2 + l], (int)(i * 10000 + j * 100 + l + 1));\n"
    "}\n";

static void test_grid_form(int serial, int ninner, int64_t count, int64_t n1, int64_t n2) {
    tack_error err;
    int was = b->serial_inner;
    b->serial_inner = serial;
    const char *names[] = {"out"};
    ir_param_role roles[] = {ROLE_ARRAY};
    ir_type types[] = {TACK_I32};
    ir_func *f = make_func("grid", ninner, 1, names, roles, types);
    backend_code *c = NULL;
    CHECK(opencl_code_from_source(b, f, serial ? GRID_SERIAL_SRC : GRID_SRC, "tack_grid", &c,
                                  &err) == TACK_OK);
    ir_func_free(f);
    if (!c) {
        b->serial_inner = was;
        return;
    }
    size_t total = (size_t)(count * n1 * n2);
    int32_t *got = calloc(total, sizeof *got);
    void *m;
    CHECK(opencl_mem_alloc(b, total * sizeof *got, &m, &err) == TACK_OK);
    CHECK(opencl_mem_write(b, m, 0, got, total * sizeof *got, &err) == TACK_OK); /* zeros */
    uint64_t slots[1] = {(uint64_t)(uintptr_t)m};
    int64_t pack[6] = {0, 1, count, n1, n2, (int64_t)slots[0]};
    backend_call call = {.kernel_name = "grid", .slots = slots, .nparams = 1};
    CHECK(opencl_launch_pack(b, c, &call, pack, &err) == TACK_OK);
    CHECK(opencl_mem_read(b, m, 0, got, total * sizeof *got, &err) == TACK_OK);
    int bad = 0;
    for (int64_t i = 0; i < count; i++)
        for (int64_t j = 0; j < n1; j++)
            for (int64_t l = 0; l < n2; l++)
                if (got[(i * n1 + j) * n2 + l] != (int32_t)(i * 10000 + j * 100 + l + 1)) bad++;
    CHECK(bad == 0);
    if (bad) fprintf(stderr, "grid%s %d %lld %lld %lld: %d wrong\n", serial ? " (serial)" : "",
                     ninner, (long long)count, (long long)n1, (long long)n2, bad);
    b->serial_inner = was;
    free(got);
    opencl_mem_free(b, m);
    opencl_release(b, c);
}

/* Expects r's dimensions and, per dimension, its piece and multiple. */
static int ndrange_is(int ninner, int64_t count, int64_t n1, int64_t n2, int dims,
                      const int64_t piece[3], const int64_t mult[3]) {
    opencl_ndrange r;
    opencl_grid(b, ninner, count, n1, n2, &r);
    int ok = r.dims == dims;
    for (int d = 0; d < 3; d++) ok = ok && r.piece[d] == piece[d] && r.multiple[d] == mult[d];
    if (!ok)
        fprintf(stderr, "grid(%d, %lld, %lld, %lld): dims %d, pieces %lld %lld %lld\n", ninner,
                (long long)count, (long long)n1, (long long)n2, r.dims, (long long)r.piece[0],
                (long long)r.piece[1], (long long)r.piece[2]);
    return ok;
}

static void test_grid_sizes(void) {
    int64_t cap = b->launch_items;
    CHECK(cap == 1 << 12);
    /* Exact when short; rounded to 64 items past that. */
    CHECK(ndrange_is(0, 10, 1, 1, 1, (int64_t[3]){10, 1, 1}, (int64_t[3]){1, 1, 1}));
    CHECK(ndrange_is(0, 101, 1, 1, 1, (int64_t[3]){128, 1, 1}, (int64_t[3]){64, 1, 1}));
    /* Past the cap: pieces of cap items (a multiple of 64). */
    CHECK(ndrange_is(0, cap * 10 + 3, 1, 1, 1, (int64_t[3]){cap, 1, 1}, (int64_t[3]){64, 1, 1}));
    /* The innermost extent on dimension 0, the outer range on the last. */
    CHECK(ndrange_is(1, cap, 1000, 1, 2, (int64_t[3]){1024, 4, 1}, (int64_t[3]){64, 1, 1}));
    CHECK(ndrange_is(2, 4, 5, 6, 3, (int64_t[3]){6, 5, 4}, (int64_t[3]){1, 1, 1}));
    /* A short innermost extent: the next dimension rounds so that 64 items
     * span the two. */
    CHECK(ndrange_is(1, 1000, 3, 1, 2, (int64_t[3]){3, 1024, 1}, (int64_t[3]){1, 32, 1}));
    opencl_ndrange r;
    opencl_grid(b, 2, 7, 9, 11, &r);
    CHECK(r.extent[0] == 11 && r.extent[1] == 9 && r.extent[2] == 7);
}

/* opencl_code_many: the scale kernel under two entry names in one program
 * (one driver build), each taken out by name and run; their artifacts
 * carry the one program's binary, fetched once, and each loads alone.  A
 * broken source among them: each is built alone, the broken one fails as
 * its own build fails and the others still build. */
static const char *SCALE_FMT =
    "typedef struct { long w[8]; } %s_pack;\n"
    "__kernel void %s(%s_pack p, __global const float *x, __global float *out) {\n"
    "    long start = p.w[0], step = p.w[1], count = p.w[2];\n"
    "    float a = as_float((uint)p.w[5 + 2]);\n"
    "    long k = get_global_id(0);\n"
    "    if (k < count) {\n"
    "        long i = start + k * step;\n"
    "        out[i] = x[i] * a;\n"
    "    }\n"
    "}\n";

static const char *scale_named(const char *entry, char *buf, size_t n) {
    snprintf(buf, n, SCALE_FMT, entry, entry, entry);
    return buf;
}

static void test_code_many(void) {
    tack_error errs[3];
    char s0[2048], s1[2048];
    const char *entries[3] = {"tack_many0", "tack_many1", "tack_broken"};
    const char *sources[3] = {scale_named(entries[0], s0, sizeof s0),
                              scale_named(entries[1], s1, sizeof s1),
                              "__kernel void tack_broken(__global float *x) { x[0] = nope + ; }\n"};
    ir_func *f = make_func("scale", 0, 3, SCALE_NAMES, SCALE_ROLES, SCALE_TYPES);
    ir_func *fb = make_func("broken", 0, 3, SCALE_NAMES, SCALE_ROLES, SCALE_TYPES);
    const ir_func *fs[3] = {f, f, fb};
    backend_code *c[3] = {NULL, NULL, NULL};
    unsigned long long builds = backend_stats.program_builds;
    CHECK(opencl_code_many(b, 2, fs, sources, entries, c, errs) == 1);
    CHECK(backend_stats.program_builds == builds + 1 && c[0] && c[1]);
    if (!c[0] || !c[1]) {
        fprintf(stderr, "code_many: %s\n", errs[0].message);
        return;
    }
    CHECK(c[0]->prog == c[1]->prog && strcmp(c[1]->entry, "tack_many1") == 0);
    int n = 100;
    float x[100], got[100];
    for (int i = 0; i < n; i++) x[i] = (float)i;
    void *mx, *mo;
    CHECK(opencl_mem_alloc(b, sizeof x, &mx, &errs[0]) == TACK_OK);
    CHECK(opencl_mem_alloc(b, sizeof x, &mo, &errs[0]) == TACK_OK);
    CHECK(opencl_mem_write(b, mx, 0, x, sizeof x, &errs[0]) == TACK_OK);
    for (int k = 0; k < 2; k++) {
        CHECK(run_scale(c[k], mx, mo, 0, 1, n, 1.5f + k, &errs[0]) == TACK_OK);
        CHECK(opencl_mem_read(b, mo, 0, got, sizeof got, &errs[0]) == TACK_OK);
        CHECK(scale_ok(got, n, 0, 1, n, 1.5f + k));
    }
    /* Snapshots of both, written after the code is gone: one binary. */
    void *snap[2] = {opencl_artifact_snapshot(b, c[0]), opencl_artifact_snapshot(b, c[1])};
    opencl_release(b, c[0]);
    opencl_release(b, c[1]);
    ser_writer w[2] = {{0}, {0}};
    for (int k = 0; k < 2; k++) {
        CHECK(snap[k] && opencl_artifact_write(snap[k], &w[k]) == 0 && !w[k].failed);
        opencl_artifact_free(snap[k]);
    }
    unsigned long long bin0 = backend_stats.binary_loads;
    for (int k = 0; k < 2; k++) {
        backend_code *l = NULL;
        CHECK(opencl_load(b, f, w[k].data, w[k].len, &l, &errs[0]) == TACK_OK && l);
        if (!l) continue;
        CHECK(strcmp(l->entry, entries[k]) == 0);
        CHECK(run_scale(l, mx, mo, 0, 1, n, -2.0f, &errs[0]) == TACK_OK);
        CHECK(opencl_mem_read(b, mo, 0, got, sizeof got, &errs[0]) == TACK_OK);
        CHECK(scale_ok(got, n, 0, 1, n, -2.0f));
        opencl_release(b, l);
        ser_writer_free(&w[k]);
    }
    CHECK(backend_stats.binary_loads == bin0 + 2);

    /* One broken: the whole is refused, each is built alone. */
    builds = backend_stats.program_builds;
    CHECK(opencl_code_many(b, 3, fs, sources, entries, c, errs) == 3);
    CHECK(c[0] && c[1] && !c[2] && backend_stats.program_builds == builds + 2);
    CHECK(errs[2].status == TACK_ERR_COMPILE &&
          strstr(errs[2].message, "kernel 'broken': the OpenCL compiler rejected"));
    if (c[0]) CHECK(c[0]->prog != c[1]->prog);
    opencl_release(b, c[0]);
    opencl_release(b, c[1]);
    opencl_mem_free(b, mx);
    opencl_mem_free(b, mo);
    ir_func_free(f);
    ir_func_free(fb);
}

static void test_compile_errors(void) {
    tack_error err;
    cl_program p;
    cl_kernel k;
    const char *broken = "__kernel void tack_bad(__global float *x) { x[0] = undefined_name + ; }\n";
    CHECK(opencl_build_source(b, "bad", broken, "tack_bad", &p, &k, &err) == TACK_ERR_COMPILE);
    CHECK(strstr(err.message, "kernel 'bad': the OpenCL compiler rejected the generated code:\n"));
    CHECK(strstr(err.message, "error") != NULL); /* the build log follows */
    printf("compile error: %.300s\n", err.message);
    /* A kernel the program does not define: the call and the error's name. */
    CHECK(opencl_build_source(b, "scale", SCALE_SRC, "tack_other", &p, &k, &err) != TACK_OK);
    CHECK(strstr(err.message, "clCreateKernel(\"tack_other\") failed: CL_INVALID_KERNEL_NAME"));
    printf("missing entry: %s\n", err.message);
}

static void test_support(void) {
    tack_error err;
    backend_caps saved = b->caps;
    b->caps.fp64 = 0;
    b->caps.atomics64 = 0;
    const char *names[] = {"x", "out", "a"};
    ir_param_role roles[] = {ROLE_ARRAY, ROLE_ARRAY, ROLE_SCALAR};
    ir_type t64[] = {TACK_F32, TACK_F64, TACK_F32};
    ir_func *f = make_func("k", 0, 3, names, roles, t64);
    CHECK(opencl_check_support(b, f, &err) == TACK_ERR_TYPE);
    CHECK(strstr(err.message, "kernel 'k': parameter 'out' is f64 but device '") &&
          strstr(err.message, "' has no fp64 support"));
    printf("fp64: %s\n", err.message);
    ir_func_free(f);

    /* f64 inside the body only: the line is named. */
    ir_type t32[] = {TACK_F32, TACK_F32, TACK_F32};
    f = make_func("k", 0, 3, names, roles, t32);
    ir_stmt *s = ir_stmt_new(f, IR_EVAL, 4, 9);
    s->value = ir_const_float(f, 1.5, TACK_F64, 4, 9);
    ir_block_push(f, &f->body, s);
    CHECK(opencl_check_support(b, f, &err) == TACK_ERR_TYPE);
    CHECK(strstr(err.message, "kernel 'k', line 4: f64 arithmetic") != NULL);
    ir_func_free(f);

    /* A 64-bit atomic without cl_khr_int64_base_atomics. */
    ir_type ti[] = {TACK_F32, TACK_I64, TACK_F32};
    b->caps.fp64 = 1;
    f = make_func("k", 0, 3, names, roles, ti);
    s = ir_stmt_new(f, IR_EVAL, 6, 5);
    ir_expr *at = ir_expr_new(f, IR_ATOMIC, 6, 5);
    at->type = TACK_I64;
    at->atomic = ATOM_ADD;
    at->index = 1;
    s->value = at;
    ir_block_push(f, &f->body, s);
    CHECK(opencl_check_support(b, f, &err) == TACK_ERR_TYPE);
    CHECK(strstr(err.message, "64-bit atomic (add on i64)") &&
          strstr(err.message, "cl_khr_int64_base_atomics"));
    printf("atomics64: %s\n", err.message);
    b->caps.atomics64 = 1;
    CHECK(opencl_check_support(b, f, &err) == TACK_OK);
    ir_func_free(f);
    b->caps = saved;
}

static void test_error_names(void) {
    CHECK(strcmp(opencl_error_name(0), "CL_SUCCESS") == 0);
    CHECK(strcmp(opencl_error_name(-5), "CL_OUT_OF_RESOURCES") == 0);
    CHECK(strcmp(opencl_error_name(-11), "CL_BUILD_PROGRAM_FAILURE") == 0);
    CHECK(strcmp(opencl_error_name(-46), "CL_INVALID_KERNEL_NAME") == 0);
    CHECK(strcmp(opencl_error_name(-72), "CL_MAX_SIZE_RESTRICTION_EXCEEDED") == 0);
    CHECK(strcmp(opencl_error_name(-1001), "CL_PLATFORM_NOT_FOUND_KHR") == 0);
    CHECK(strncmp(opencl_error_name(-29), "CL_", 3) != 0); /* a gap in the codes */
    tack_error err;
    CHECK(opencl_fail(&err, NULL, "clEnqueueNDRangeKernel", -5) == TACK_ERR_DEVICE);
    CHECK(strcmp(err.message, "clEnqueueNDRangeKernel failed: CL_OUT_OF_RESOURCES") == 0);
    CHECK(opencl_fail(&err, "kernel 'k'", "clFinish", -4) == TACK_ERR_NOMEM);
    CHECK(strcmp(err.message, "kernel 'k': clFinish failed: CL_MEM_OBJECT_ALLOCATION_FAILURE") ==
          0);
    opencl_fail(&err, NULL, "clFinish", -12345);
    CHECK(strstr(err.message, "(-12345)") != NULL);
}

/* Two threads launch two code objects of one device at once (each code
 * object is used by one thread: the runtime's per-variant lock). */
typedef struct worker {
    backend_code *c;
    void *x, *out;
    float a;
    int ok;
} worker;

static void *work(void *arg) {
    worker *w = arg;
    tack_error err;
    float got[256];
    w->ok = 1;
    for (int r = 0; r < 100 && w->ok; r++) {
        if (run_scale(w->c, w->x, w->out, 0, 1, 256, w->a + r, &err) ||
            opencl_mem_read(b, w->out, 0, got, sizeof got, &err))
            w->ok = 0;
        for (int i = 0; i < 256 && w->ok; i++)
            if (got[i] != (float)i * (w->a + r)) w->ok = 0;
    }
    return NULL;
}

static void test_threads(void) {
    tack_error err;
    worker w[2];
    float x[256];
    for (int i = 0; i < 256; i++) x[i] = (float)i;
    for (int t = 0; t < 2; t++) {
        ir_func *f = make_func("scale", 0, 3, SCALE_NAMES, SCALE_ROLES, SCALE_TYPES);
        w[t].c = NULL;
        CHECK(opencl_code_from_source(b, f, SCALE_SRC, "tack_scale", &w[t].c, &err) == TACK_OK);
        ir_func_free(f);
        opencl_mem_alloc(b, sizeof x, &w[t].x, &err);
        opencl_mem_alloc(b, sizeof x, &w[t].out, &err);
        opencl_mem_write(b, w[t].x, 0, x, sizeof x, &err);
        w[t].a = t ? 3.0f : -2.0f;
    }
    if (!w[0].c || !w[1].c) return;
    pthread_t th[2];
    for (int t = 0; t < 2; t++) pthread_create(&th[t], NULL, work, &w[t]);
    for (int t = 0; t < 2; t++) pthread_join(th[t], NULL);
    for (int t = 0; t < 2; t++) {
        CHECK(w[t].ok);
        opencl_release(b, w[t].c);
        opencl_mem_free(b, w[t].x);
        opencl_mem_free(b, w[t].out);
    }
}

/* The device under test: TACK_TEST_OPENCL_DEVICE (an index) where set, else
 * PoCL's first device where PoCL is installed, else opencl:0.  The ICD
 * loader orders platforms by what they offer (ocl-icd lists GPUs first), so
 * "opencl:0" changes with the drivers a machine has; PoCL is everywhere the
 * tests run and gives the same answers on every machine. */
static int test_device(int ndev) {
    const char *env = getenv("TACK_TEST_OPENCL_DEVICE");
    if (env && *env) {
        char *end;
        long i = strtol(env, &end, 10);
        if (*end || i < 0 || i >= ndev) {
            fprintf(stderr, "TACK_TEST_OPENCL_DEVICE=%s: not a device index below %d\n", env, ndev);
            return -1;
        }
        return (int)i;
    }
    for (int i = 0; i < ndev; i++) {
        tack_error err;
        backend *d = NULL;
        if (opencl_open(i, 0, &d, &err) != TACK_OK) {
            printf("opencl:%d cannot be opened: %s\n", i, err.message);
            continue;
        }
        int pocl = strstr(opencl_describe(d), "(Portable Computing Language,") != NULL;
        printf("opencl:%d: %s\n", i, opencl_describe(d));
        opencl_close(d);
        if (pocl) return i;
    }
    return 0;
}

/* Queued launches (queue.c): launches on a stream of their own, more than
 * the ring of events each queue keeps (a launch leaving it is checked
 * then), finish in order by the stream's synchronize; events order the
 * device's queue after the stream's, and time it.  (A failure reported
 * later cannot be made here: PoCL 3.1 aborts or hangs when a user event a
 * queued command waits for is failed, so the naming of a failed launch
 * has no real device to test against.) */
static void test_queued(void) {
    tack_error err;
    char *names[3] = {"x", "out", "a"};
    ir_func *f = make_func("scale", 0, 3, (const char *const *)names, SCALE_ROLES, SCALE_TYPES);
    backend_code *c = NULL;
    CHECK(opencl_code_from_source(b, f, SCALE_SRC, "tack_scale", &c, &err) == TACK_OK && c);
    ir_func_free(f);
    if (!c) return;
    enum { N = 1000, LAUNCHES = 3 * OPENCL_RING + 5 };
    static float x[N], got[N];
    for (int i = 0; i < N; i++) x[i] = (float)i;
    void *mx, *mo, *stream, *e0, *e1;
    CHECK(opencl_mem_alloc(b, sizeof x, &mx, &err) == TACK_OK);
    CHECK(opencl_mem_alloc(b, sizeof x, &mo, &err) == TACK_OK);
    CHECK(opencl_mem_write(b, mx, 0, x, sizeof x, &err) == TACK_OK);
    CHECK(opencl_queue_create(b, &stream, &err) == TACK_OK);
    CHECK(opencl_event_record(b, stream, &e0, &err) == TACK_OK);
    uint64_t slots[3] = {(uint64_t)(uintptr_t)mx, (uint64_t)(uintptr_t)mo, 0};
    backend_call call = {.kernel_name = "scale", .slots = slots, .nparams = 3, .queue = stream};
    for (int k = 1; k <= LAUNCHES; k++) {
        /* Each launch's own factor: the pack is copied when it is set. */
        slots[2] = f32_bits((float)k);
        int64_t pack[8] = {0, 1, N, 1, 1, (int64_t)slots[0], (int64_t)slots[1], (int64_t)slots[2]};
        CHECK(opencl_launch_pack(b, c, &call, pack, &err) == TACK_OK);
    }
    CHECK(opencl_event_record(b, stream, &e1, &err) == TACK_OK);
    /* The device's queue waits for the stream's event; a read on it sees
     * the last launch's factor. */
    CHECK(opencl_event_wait(b, NULL, e1, &err) == TACK_OK);
    CHECK(opencl_queue_synchronize(b, NULL, &err) == TACK_OK);
    CHECK(opencl_event_synchronize(b, e1, &err) == TACK_OK);
    CHECK(opencl_mem_read(b, mo, 0, got, sizeof got, &err) == TACK_OK);
    int ok = 1;
    for (int i = 0; i < N; i++) ok &= got[i] == (float)LAUNCHES * (float)i;
    CHECK(ok);
    double ms = -1;
    tack_status st = opencl_event_elapsed(b, e0, e1, &ms, &err);
    CHECK(st == TACK_OK ? ms >= 0 : strstr(err.message, "cannot time") != NULL);
    printf("%d queued launches: %.3f ms by the device's clock\n", LAUNCHES, ms);
    CHECK(opencl_queue_synchronize(b, stream, &err) == TACK_OK);
    opencl_event_free(b, e0);
    opencl_event_free(b, e1);
    opencl_queue_destroy(b, stream);
    opencl_mem_free(b, mx);
    opencl_mem_free(b, mo);
    opencl_release(b, c);
}

int main(void) {
    tack_error err;
    int ndev = opencl_device_count(&err);
    if (ndev <= 0) {
        printf("skipped: no OpenCL platform (%s)\n", err.message);
        return 0;
    }
    test_error_names();
    test_open(ndev);
    int index = test_device(ndev);
    if (index < 0) return 1;
    if (opencl_open(index, 0, &b, &err) != TACK_OK) {
        fprintf(stderr, "opening opencl:%d: %s\n", index, err.message);
        return 1;
    }
    printf("testing opencl:%d\n", index);
    test_caps();
    test_memory();
    /* The cap on a launch's items (2^30); a small one makes the paths that
     * cover a range in several launches cheap to test. */
    CHECK(b->launch_items >= 1 << 16);
    b->launch_items = 1 << 12;
    test_scale();
    test_grid_sizes();
    for (int serial = 0; serial < 2; serial++) {
        test_grid_form(serial, 1, 37, 45, 1);
        test_grid_form(serial, 2, 5, 13, 17);
        test_grid_form(serial, 1, 3, (int)b->launch_items + 5, 1); /* inner extent past the cap */
        test_grid_form(serial, 0, b->launch_items * 2 + 7, 1, 1);    /* outer range past it */
        test_grid_form(serial, 1, 1000, 3, 1);                        /* a rounded outer dimension */
        test_grid_form(serial, 2, 70, 3, 50);                         /* pieces in 3-D, rounded middle */
    }
    test_compile_errors();
    test_code_many();
    test_support();
    test_threads();
    test_queued();
    opencl_close(b);
    return CHECK_DONE();
}
