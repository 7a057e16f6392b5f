/* test_metal.c - the Metal driver without a Mac.
 *
 *   - tack_device_get("metal") where libobjc and Metal.framework are
 *     absent: TACK_ERR_DEVICE saying Metal needs macOS and which library
 *     is missing;
 *   - the grid (metal_grid): threads and threadgroups for 1-, 2- and 3-D
 *     ranges, uniform and not, and a pipeline allowing fewer than 256;
 *   - the backend over a stand-in Objective-C runtime
 *     (metal_objc_set_for_testing): a table of typed senders that records
 *     every message and answers with fake objects.  It checks opening and
 *     the capability queries, a build (the MSL newLibraryWithSource gets
 *     is the dialect's, fast math off, the entry's function), memory, a
 *     launch (the pack's bytes at index 0, each array's buffer at 1, 2,
 *     ..., the dispatch's sizes, encode / commit / wait in order), 2-D and
 *     workgroup launches, dispatchThreadgroups on GPUs without non-uniform
 *     threadgroups, Metal's compile error and a failed command buffer in
 *     the messages, the artifact's round trip and damage, whole launches
 *     through the runtime, and that every object we own is released once
 *     and nothing autoreleased is used outside its pool. */
#define _DEFAULT_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend/gpu/gpu.h"
#include "backend/metal/metal.h"
#include "check.h"
#include "gpu_lower.h"

/* ---- no Metal ------------------------------------------------------------ */

static void test_no_metal(void) {
    tack_error err;
    tack_device *d = tack_device_get("metal", &err);
    if (d) {
        printf("a Metal device is present (%s): the no-Metal checks are skipped\n",
               tack_device_description(d));
        return;
    }
    printf("tack.device(\"metal\"): %s\n", err.message);
    CHECK(err.status == TACK_ERR_DEVICE);
    CHECK(strstr(err.message, "tack.device(\"metal\"): no Metal: ") != NULL);
    CHECK(strstr(err.message, "/usr/lib/libobjc.A.dylib") != NULL ||
          strstr(err.message, "Metal.framework") != NULL);
    CHECK(strstr(err.message, "Metal needs macOS") != NULL);
    CHECK(!tack_device_create("metal:1", 0, &err) && err.status == TACK_ERR_DEVICE);
    CHECK(strstr(err.message, "metal:1") != NULL);
}

/* ---- the stand-in runtime ----------------------------------------------- */

enum kind { K_CLASS = 1, K_DEVICE, K_QUEUE, K_STRING, K_OPTIONS, K_LIBRARY, K_FUNCTION,
            K_PIPELINE, K_BUFFER, K_CMDBUF, K_ENCODER, K_ERROR, K_PROCINFO };

typedef struct fobj {
    int kind;
    int owned;   /* +1 from alloc / new... / Create */
    int refs;    /* owned: releases left */
    int pool;    /* autoreleased: the pool depth it lives in (0: none) */
    int dead;    /* its pool was popped, or its last release came */
    char text[96];
    char *data;  /* a buffer's bytes, a string's long text */
    uint64_t len;
} fobj;

#define MAX_OBJS 4096
static struct {
    fobj objs[MAX_OBJS];
    int nobjs;
    char sels[64][64];
    int nsels;
    int pool_depth, pushes, pops, bad_messages, dead_uses, over_releases;
    /* answers */
    int no_device, nonuniform, fail_library, fail_status;
    uint64_t pipeline_threads;
    /* what was asked */
    int families[4], nfamilies;
    int fast_math_set, fast_math;
    char *last_source;
    char last_function[128];
    uint64_t bytes_len, bytes_index;
    int64_t pack[GPU_PACK_MAX_WORDS];
    objc_id bound[8];
    uint64_t bound_offset[8];
    int nbound;
    objc_id bound_pipeline;
    const char *dispatch; /* the dispatch selector's name */
    metal_size grid, group;
    char order[256];      /* the launch's messages, one letter each */
    int launches;
    uint64_t last_buffer_len, last_buffer_options;
} fk;

static void fk_reset(void) {
    free(fk.last_source);
    for (int i = 0; i < fk.nobjs; i++) free(fk.objs[i].data);
    memset(&fk, 0, sizeof fk);
    fk.nonuniform = 1;
    fk.pipeline_threads = 1024;
}

static objc_id make(int kind, int owned, const char *text) {
    if (fk.nobjs >= MAX_OBJS) {
        CHECK(!"too many stand-in objects");
        return NULL;
    }
    fobj *o = &fk.objs[fk.nobjs++];
    o->kind = kind;
    o->owned = owned;
    o->refs = owned;
    o->pool = owned || kind == K_CLASS ? 0 : fk.pool_depth;
    /* Autoreleased objects made outside any pool would leak on macOS. */
    if (!owned && kind != K_CLASS && !fk.pool_depth) fk.bad_messages++;
    if (text) {
        snprintf(o->text, sizeof o->text, "%s", text);
        o->data = strdup(text);
    }
    return (objc_id)o;
}

static fobj *obj(objc_id id, const char *sel) {
    fobj *o = (fobj *)id;
    if (!o || o < fk.objs || o >= fk.objs + fk.nobjs) {
        fprintf(stderr, "message %s to a non-object\n", sel);
        fk.bad_messages++;
        return NULL;
    }
    if (o->dead) {
        fprintf(stderr, "message %s to a released or drained object (kind %d)\n", sel, o->kind);
        fk.dead_uses++;
    }
    return o;
}

static const char *nm(objc_sel op) { return (const char *)op; }
static int is(objc_sel op, const char *name) { return !strcmp(nm(op), name); }

static fobj *expect(objc_id self, objc_sel op, int kind) {
    fobj *o = obj(self, nm(op));
    if (o && o->kind != kind) {
        fprintf(stderr, "message %s to kind %d, expected %d\n", nm(op), o->kind, kind);
        fk.bad_messages++;
    }
    return o;
}

static void note(char c) {
    size_t n = strlen(fk.order);
    if (n + 1 < sizeof fk.order) fk.order[n] = c;
}

static objc_id f_class(const char *name) {
    for (int i = 0; i < fk.nobjs; i++)
        if (fk.objs[i].kind == K_CLASS && !strcmp(fk.objs[i].text, name)) return (objc_id)&fk.objs[i];
    return make(K_CLASS, 0, name);
}

static objc_sel f_sel(const char *name) {
    for (int i = 0; i < fk.nsels; i++)
        if (!strcmp(fk.sels[i], name)) return (objc_sel)fk.sels[i];
    CHECK(fk.nsels < 64 && strlen(name) < 64);
    snprintf(fk.sels[fk.nsels], 64, "%s", name);
    return (objc_sel)fk.sels[fk.nsels++];
}

static void *f_push(void) {
    fk.pushes++;
    return (void *)(intptr_t)++fk.pool_depth;
}

static void f_pop(void *pool) {
    fk.pops++;
    CHECK((intptr_t)pool == fk.pool_depth);
    for (int i = 0; i < fk.nobjs; i++)
        if (fk.objs[i].pool == fk.pool_depth) fk.objs[i].dead = 1;
    fk.pool_depth--;
}

static objc_id f_create_device(void) { return fk.no_device ? NULL : make(K_DEVICE, 1, "device"); }

static objc_id s_id(objc_id self, objc_sel op) {
    fobj *o = obj(self, nm(op));
    if (!o) return NULL;
    if (is(op, "alloc") && o->kind == K_CLASS && !strcmp(o->text, "MTLCompileOptions"))
        return make(K_OPTIONS, 1, NULL);
    if (is(op, "init") && o->kind == K_OPTIONS) return self;
    if (is(op, "name") && o->kind == K_DEVICE) return make(K_STRING, 0, "Fake M2 Max");
    if (is(op, "processInfo") && o->kind == K_CLASS && !strcmp(o->text, "NSProcessInfo"))
        return make(K_PROCINFO, 0, NULL);
    if (is(op, "operatingSystemVersionString") && o->kind == K_PROCINFO)
        return make(K_STRING, 0, "Version 14.4 (Build 23E214)");
    if (is(op, "localizedDescription") && o->kind == K_ERROR) return make(K_STRING, 0, o->data);
    if (is(op, "newCommandQueue") && o->kind == K_DEVICE) return make(K_QUEUE, 1, NULL);
    if (is(op, "commandBuffer") && o->kind == K_QUEUE) {
        note('B');
        return make(K_CMDBUF, 0, NULL);
    }
    if (is(op, "computeCommandEncoder") && o->kind == K_CMDBUF) {
        note('E');
        return make(K_ENCODER, 0, NULL);
    }
    if (is(op, "error") && o->kind == K_CMDBUF)
        return fk.fail_status ? make(K_ERROR, 0,
                                     "Execution of the command buffer was aborted due to an "
                                     "error during execution. Caused GPU Address Fault Error")
                              : NULL;
    fprintf(stderr, "unexpected id message %s to kind %d\n", nm(op), o->kind);
    fk.bad_messages++;
    return NULL;
}

static void s_v(objc_id self, objc_sel op) {
    fobj *o = obj(self, nm(op));
    if (!o) return;
    if (is(op, "release")) {
        if (!o->owned || o->refs <= 0) {
            fprintf(stderr, "release of an object we do not own (kind %d)\n", o->kind);
            fk.over_releases++;
            return;
        }
        if (--o->refs == 0) o->dead = 1;
        return;
    }
    if (o->kind == K_ENCODER && is(op, "endEncoding")) return note('e');
    if (o->kind == K_CMDBUF && is(op, "commit")) return note('c');
    if (o->kind == K_CMDBUF && is(op, "waitUntilCompleted")) {
        fk.launches++;
        return note('w');
    }
    fprintf(stderr, "unexpected void message %s to kind %d\n", nm(op), o->kind);
    fk.bad_messages++;
}

static uint64_t s_u64(objc_id self, objc_sel op) {
    fobj *o = obj(self, nm(op));
    if (!o) return 0;
    if (o->kind == K_DEVICE && is(op, "maxThreadgroupMemoryLength")) return 32768;
    if (o->kind == K_DEVICE && is(op, "maxBufferLength")) return (uint64_t)1 << 34;
    if (o->kind == K_DEVICE && is(op, "recommendedMaxWorkingSetSize")) return (uint64_t)48 << 30;
    if (o->kind == K_PIPELINE && is(op, "maxTotalThreadsPerThreadgroup")) return fk.pipeline_threads;
    if (o->kind == K_CMDBUF && is(op, "status"))
        return fk.fail_status ? METAL_STATUS_ERROR : METAL_STATUS_COMPLETED;
    fprintf(stderr, "unexpected u64 message %s to kind %d\n", nm(op), o->kind);
    fk.bad_messages++;
    return 0;
}

static const char *s_cstr(objc_id self, objc_sel op) {
    fobj *o = expect(self, op, K_STRING);
    CHECK(is(op, "UTF8String"));
    return o ? o->data : NULL;
}

static void *s_ptr(objc_id self, objc_sel op) {
    fobj *o = expect(self, op, K_BUFFER);
    CHECK(is(op, "contents"));
    return o ? o->data : NULL;
}

static metal_size s_size(objc_id self, objc_sel op) {
    expect(self, op, K_DEVICE);
    CHECK(is(op, "maxThreadsPerThreadgroup"));
    return (metal_size){1024, 1024, 1024};
}

static objc_bool s_bool_i64(objc_id self, objc_sel op, int64_t a) {
    expect(self, op, K_DEVICE);
    CHECK(is(op, "supportsFamily:"));
    if (fk.nfamilies < 4) fk.families[fk.nfamilies++] = (int)a;
    return (objc_bool)(fk.nonuniform && a == METAL_FAMILY_APPLE4);
}

static objc_id s_id_cstr(objc_id self, objc_sel op, const char *a) {
    fobj *o = expect(self, op, K_CLASS);
    CHECK(o && !strcmp(o->text, "NSString") && is(op, "stringWithUTF8String:"));
    return make(K_STRING, 0, a);
}

static objc_id s_id_id(objc_id self, objc_sel op, objc_id a) {
    expect(self, op, K_LIBRARY);
    CHECK(is(op, "newFunctionWithName:"));
    fobj *name = expect(a, op, K_STRING);
    snprintf(fk.last_function, sizeof fk.last_function, "%s", name ? name->data : "");
    return make(K_FUNCTION, 1, NULL);
}

static objc_id s_id_id_err(objc_id self, objc_sel op, objc_id a, objc_id *error) {
    expect(self, op, K_DEVICE);
    CHECK(is(op, "newComputePipelineStateWithFunction:error:") && error && !*error);
    expect(a, op, K_FUNCTION);
    return make(K_PIPELINE, 1, NULL);
}

static objc_id s_id_id_id_err(objc_id self, objc_sel op, objc_id a, objc_id b, objc_id *error) {
    expect(self, op, K_DEVICE);
    CHECK(is(op, "newLibraryWithSource:options:error:") && error && !*error);
    fobj *src = expect(a, op, K_STRING);
    expect(b, op, K_OPTIONS);
    free(fk.last_source);
    fk.last_source = src && src->data ? strdup(src->data) : NULL;
    if (fk.fail_library) {
        *error = make(K_ERROR, 0,
                      "program_source:12:9: error: use of undeclared identifier 'tk_nosuch'");
        return NULL;
    }
    return make(K_LIBRARY, 1, NULL);
}

static objc_id s_id_u64_u64(objc_id self, objc_sel op, uint64_t a, uint64_t b) {
    expect(self, op, K_DEVICE);
    CHECK(is(op, "newBufferWithLength:options:"));
    fk.last_buffer_len = a;
    fk.last_buffer_options = b;
    objc_id buf = make(K_BUFFER, 1, NULL);
    fobj *o = (fobj *)buf;
    if (o) {
        o->data = calloc(1, a);
        o->len = a;
    }
    return buf;
}

static void s_v_bool(objc_id self, objc_sel op, objc_bool a) {
    expect(self, op, K_OPTIONS);
    CHECK(is(op, "setFastMathEnabled:"));
    fk.fast_math_set++;
    fk.fast_math = a;
}

static void s_v_id(objc_id self, objc_sel op, objc_id a) {
    expect(self, op, K_ENCODER);
    CHECK(is(op, "setComputePipelineState:"));
    expect(a, op, K_PIPELINE);
    fk.bound_pipeline = a;
    note('p');
}

static void s_v_id_u64_u64(objc_id self, objc_sel op, objc_id a, uint64_t off, uint64_t index) {
    expect(self, op, K_ENCODER);
    CHECK(is(op, "setBuffer:offset:atIndex:"));
    expect(a, op, K_BUFFER);
    CHECK(index >= 1 && index < 8);
    if (index >= 1 && index < 8) {
        fk.bound[index - 1] = a;
        fk.bound_offset[index - 1] = off;
        if ((int)index > fk.nbound) fk.nbound = (int)index;
    }
    note('a');
}

static void s_v_ptr_u64_u64(objc_id self, objc_sel op, const void *a, uint64_t len, uint64_t index) {
    expect(self, op, K_ENCODER);
    CHECK(is(op, "setBytes:length:atIndex:") && len <= 4096 && len <= sizeof fk.pack);
    fk.bytes_len = len;
    fk.bytes_index = index;
    memcpy(fk.pack, a, len <= sizeof fk.pack ? len : sizeof fk.pack);
    note('s');
}

static void s_v_size_size(objc_id self, objc_sel op, metal_size a, metal_size b) {
    expect(self, op, K_ENCODER);
    CHECK(is(op, "dispatchThreads:threadsPerThreadgroup:") ||
          is(op, "dispatchThreadgroups:threadsPerThreadgroup:"));
    fk.dispatch = nm(op);
    fk.grid = a;
    fk.group = b;
    note('d');
}

static const metal_objc_api fake_api = {
    .get_class = f_class, .sel = f_sel, .pool_push = f_push, .pool_pop = f_pop,
    .create_device = f_create_device, .id = s_id, .v = s_v, .u64 = s_u64, .cstr = s_cstr,
    .ptr = s_ptr, .size = s_size, .bool_i64 = s_bool_i64, .id_cstr = s_id_cstr,
    .id_id = s_id_id, .id_id_err = s_id_id_err, .id_id_id_err = s_id_id_id_err,
    .id_u64_u64 = s_id_u64_u64, .v_bool = s_v_bool, .v_id = s_v_id,
    .v_id_u64_u64 = s_v_id_u64_u64, .v_ptr_u64_u64 = s_v_ptr_u64_u64,
    .v_size_size = s_v_size_size,
};

/* Every object we own was released exactly once; pools balanced. */
static void check_ownership(const char *when) {
    int leaked = 0;
    for (int i = 0; i < fk.nobjs; i++)
        if (fk.objs[i].owned && fk.objs[i].refs) {
            fprintf(stderr, "%s: an owned object of kind %d was never released\n", when,
                    fk.objs[i].kind);
            leaked++;
        }
    CHECK(leaked == 0);
    CHECK(fk.over_releases == 0 && fk.dead_uses == 0 && fk.bad_messages == 0);
    CHECK(fk.pushes == fk.pops && fk.pool_depth == 0);
}

static int count_kind(int kind) {
    int n = 0;
    for (int i = 0; i < fk.nobjs; i++) n += fk.objs[i].kind == kind && fk.objs[i].owned;
    return n;
}

/* ---- the grid -------------------------------------------------------------- */

static void test_grid(void) {
    backend b;
    memset(&b, 0, sizeof b);
    b.max_threads = (metal_size){1024, 1024, 1024};
    metal_size g, t;
    /* 1-D: the range's threads exactly, 256 a group. */
    metal_grid(&b, 0, 1000, 1, 1, 1024, 0, &g, &t);
    CHECK(g.width == 1000 && g.height == 1 && g.depth == 1);
    CHECK(t.width == 256 && t.height == 1 && t.depth == 1);
    /* Whole groups where the GPU needs them. */
    metal_grid(&b, 0, 1000, 1, 1, 1024, 1, &g, &t);
    CHECK(g.width == 1024 && t.width == 256);
    /* Past the cap threads stride, in whole groups. */
    metal_grid(&b, 0, (int64_t)1 << 40, 1, 1, 1024, 0, &g, &t);
    CHECK(g.width == (uint64_t)1 << 24 && t.width == 256);
    /* 2-D: the inner extent on consecutive lanes. */
    metal_grid(&b, 1, 5, 3, 1, 1024, 0, &g, &t);
    CHECK(g.width == 3 && g.height == 5 && g.depth == 1);
    CHECK(t.width == 4 && t.height == 64 && t.depth == 1);
    metal_grid(&b, 1, 1000, 700, 1, 1024, 0, &g, &t);
    CHECK(g.width == 700 && g.height == 1000 && t.width == 256 && t.height == 1);
    /* 3-D: innermost, middle, outer. */
    metal_grid(&b, 2, 5, 7, 9, 1024, 0, &g, &t);
    CHECK(g.width == 9 && g.height == 7 && g.depth == 5);
    CHECK(t.width == 16 && t.height == 8 && t.depth == 2);
    metal_grid(&b, 2, 5, 7, 9, 1024, 1, &g, &t);
    CHECK(g.width == 16 && g.height == 8 && g.depth == 6);
    /* A pipeline allowing 96 threads: groups of 64. */
    metal_grid(&b, 0, 1000, 1, 1, 96, 0, &g, &t);
    CHECK(t.width == 64 && g.width == 1000);
}

/* ---- the backend over the stand-in -------------------------------------- */

static const char *SCALE =
    "def scale(x, out, a):\n    for i in range(x.shape[0]):\n        out[i] = x[i] * a\n";
static const char *ADD2D =
    "def add2d(a, out, k):\n"
    "    for i, j in tack.ndindex(a.shape[0], a.shape[1]):\n"
    "        out[i, j] = a[i, j] + k\n";
static const char *BLOCK_SUM =
    "def block_sum(x, out):\n"
    "    for i in range(x.shape[0]):\n"
    "        buf = tack.shared((tack.WORKGROUP,), tack.f32)\n"
    "        lane = tack.local_index()\n"
    "        buf[lane] = x[i]\n"
    "        tack.barrier()\n"
    "        if lane == 0:\n"
    "            s = 0.0\n"
    "            for j in range(tack.WORKGROUP):\n"
    "                s += buf[j]\n"
    "            out[tack.group_index()] = s\n";

static uint64_t f32_bits(float v) {
    uint32_t u;
    memcpy(&u, &v, 4);
    return u;
}

static void test_open(void) {
    tack_error err;
    backend *b = NULL;
    fk.no_device = 1;
    CHECK(backend_metal.open(0, 0, &b, &err) == TACK_ERR_DEVICE && !b);
    CHECK(strstr(err.message, "no Metal device: MTLCreateSystemDefaultDevice found no GPU") != NULL);
    fk.no_device = 0;
    CHECK(backend_metal.open(2, 0, &b, &err) == TACK_ERR_VALUE && !b);
    CHECK(strstr(err.message, "there is no Metal device 2") != NULL);
    check_ownership("refused opens");
}

static void test_fake_runtime(void) {
    fk_reset();
    metal_objc_set_for_testing(&fake_api);
    test_open();
    tack_error err;
    backend *b = NULL;
    CHECK(backend_metal.open(0, 0, &b, &err) == TACK_OK && b);
    if (!b) {
        fprintf(stderr, "open: %s\n", err.message);
        metal_objc_set_for_testing(NULL);
        return;
    }
    /* Capabilities: Metal's, from the device's answers. */
    backend_caps caps;
    backend_metal.caps(b, &caps);
    CHECK(!caps.host_memory && !caps.locked_dispatch && !caps.fp64 && !caps.atomics64 &&
          !caps.images && !caps.hardware_texture_filtering);
    CHECK(caps.local_mem_bytes == 32768 && caps.max_workgroup == 1024);
    CHECK(caps.global_mem_bytes == (int64_t)48 << 30 && caps.max_alloc_bytes == (int64_t)1 << 34);
    CHECK(b->nonuniform && fk.nfamilies >= 1 && fk.families[0] == METAL_FAMILY_APPLE4);
    printf("stand-in: %s\n", backend_metal.describe(b));
    CHECK(!strcmp(backend_metal.describe(b),
                  "Fake M2 Max (Metal, Version 14.4 (Build 23E214), 32 KB threadgroup memory)"));
    const char *target = backend_metal.cache_target(b);
    printf("cache target: %s\n", target);
    CHECK(strstr(target, "metal; device=Fake M2 Max") && strstr(target, "os=Version 14.4") &&
          strstr(target, "options=-fno-fast-math"));
    CHECK(count_kind(K_DEVICE) == 1 && count_kind(K_QUEUE) == 1);

    /* Memory: shared buffers, read and written through their contents. */
    void *h = NULL;
    CHECK(backend_metal.mem_alloc(b, 64, &h, &err) == TACK_OK && h);
    CHECK(fk.last_buffer_len == 64 && fk.last_buffer_options == METAL_STORAGE_SHARED);
    float in[16], back[16];
    for (int i = 0; i < 16; i++) in[i] = (float)i * 1.5f;
    CHECK(backend_metal.mem_write(b, h, 0, in, sizeof in, &err) == TACK_OK);
    CHECK(backend_metal.mem_read(b, h, 8, back, 8, &err) == TACK_OK && back[0] == in[2] &&
          back[1] == in[3]);
    void *zero = NULL;
    CHECK(backend_metal.mem_alloc(b, 0, &zero, &err) == TACK_OK && zero && fk.last_buffer_len == 1);
    backend_metal.mem_free(b, zero);
    void *none = (void *)1;
    CHECK(backend_metal.mem_alloc(b, ((size_t)1 << 34) + 1, &none, &err) == TACK_ERR_NOMEM && !none);
    CHECK(strstr(err.message, "its largest buffer is 17179869184 bytes") != NULL);
    backend_metal.mem_free(b, h);

    /* Build: the MSL newLibraryWithSource gets is the dialect's. */
    arena ast;
    arena_init(&ast);
    uint64_t slots[TACK_MAX_PARAMS];
    int64_t dims[TACK_MAX_PARAMS][TACK_MAX_NDIM];
    static float host[1000];
    int64_t shape[1] = {1000};
    tack_arg args[3] = {tack_arg_array(host, TACK_F32, 1, shape, 0),
                        tack_arg_array(host, TACK_F32, 1, shape, 1), tack_arg_float(2.5)};
    ir_func *f = gl_variant(SCALE, &ast, args, 3, 0, slots, dims, &err);
    CHECK(f != NULL);
    if (!f) goto done;
    char *msl = NULL;
    CHECK(gpu_emit(f, &gpu_dialect_metal, "tack_5ca1e", &msl, &err) == TACK_OK && msl);
    backend_code *code = NULL;
    uint64_t ns = 0;
    CHECK(backend_metal.build(b, f, "5ca1e", &code, &ns, &err) == TACK_OK && code);
    if (!code) {
        fprintf(stderr, "build: %s\n", err.message);
        goto done;
    }
    CHECK(fk.last_source && msl && !strcmp(fk.last_source, msl));
    CHECK(strstr(fk.last_source, "kernel void tack_5ca1e(constant tack_5ca1e_pack &pack [[buffer(0)]]") != NULL);
    CHECK(fk.fast_math_set == 1 && fk.fast_math == 0);
    CHECK(!strcmp(fk.last_function, "tack_5ca1e") && ns > 0);
    CHECK(code->g.narrays == 2 && code->g.arrays[0] == 0 && code->g.arrays[1] == 1);
    CHECK(count_kind(K_LIBRARY) == 1 && count_kind(K_FUNCTION) == 1 && count_kind(K_PIPELINE) == 1);
    /* Inspect gives the same MSL. */
    char *text = NULL;
    CHECK(backend_metal.inspect(b, f, "5ca1e", TACK_INSPECT_LLVM, &text, &err) == TACK_OK);
    CHECK(text && msl && !strcmp(text, msl));
    free(text);
    text = NULL;
    CHECK(backend_metal.inspect(b, f, "5ca1e", TACK_INSPECT_ASM, &text, &err) == TACK_ERR_VALUE && !text);

    /* A launch: the pack at index 0, the arrays' buffers at 1 and 2. */
    void *x = NULL, *out = NULL;
    CHECK(backend_metal.mem_alloc(b, sizeof host, &x, &err) == TACK_OK);
    CHECK(backend_metal.mem_alloc(b, sizeof host, &out, &err) == TACK_OK);
    slots[0] = (uint64_t)(uintptr_t)x;
    slots[1] = (uint64_t)(uintptr_t)out;
    int64_t range[BACKEND_RANGE_LEN];
    backend_call call = {"scale", slots, (const int64_t(*)[TACK_MAX_NDIM])dims, 3, 0, range, NULL};
    CHECK(backend_metal.range(b, code, &call, range, &err) == TACK_OK);
    CHECK(range[0] == 0 && range[1] == 1000 && range[2] == 1);
    fk.order[0] = 0;
    CHECK(backend_metal.launch(b, code, &call, &err) == TACK_OK);
    CHECK(fk.launches == 1 && !strcmp(fk.order, "BEpsaadecw"));
    CHECK(fk.bound_pipeline == code->pipeline);
    CHECK(fk.bytes_index == 0 && fk.bytes_len == (uint64_t)gpu_pack_words(f) * 8 &&
          gpu_pack_words(f) == GPU_PACK_SCALARS + 3);
    CHECK(fk.pack[GPU_PACK_START] == 0 && fk.pack[GPU_PACK_STEP] == 1 &&
          fk.pack[GPU_PACK_COUNT] == 1000 && fk.pack[GPU_PACK_INNER0] == 1 &&
          (uint64_t)fk.pack[GPU_PACK_SCALARS + 2] == f32_bits(2.5f));
    CHECK(fk.nbound == 2 && fk.bound[0] == (objc_id)x && fk.bound[1] == (objc_id)out &&
          fk.bound_offset[0] == 0 && fk.bound_offset[1] == 0);
    CHECK(fk.dispatch && !strcmp(fk.dispatch, "dispatchThreads:threadsPerThreadgroup:"));
    CHECK(fk.grid.width == 1000 && fk.grid.height == 1 && fk.grid.depth == 1);
    CHECK(fk.group.width == 256 && fk.group.height == 1 && fk.group.depth == 1);
    /* An empty range sends nothing. */
    int64_t empty[BACKEND_RANGE_LEN] = {5, 5, 1, 1, 1};
    backend_call none_call = call;
    none_call.range = empty;
    fk.order[0] = 0;
    CHECK(backend_metal.launch(b, code, &none_call, &err) == TACK_OK && fk.launches == 1 &&
          !fk.order[0]);
    /* A GPU without non-uniform threadgroups: whole groups, counted. */
    b->nonuniform = 0;
    CHECK(backend_metal.launch(b, code, &call, &err) == TACK_OK);
    CHECK(!strcmp(fk.dispatch, "dispatchThreadgroups:threadsPerThreadgroup:"));
    CHECK(fk.grid.width == 4 && fk.grid.height == 1 && fk.group.width == 256);
    b->nonuniform = 1;
    /* A fault during execution: the command buffer's error, named. */
    fk.fail_status = 1;
    CHECK(backend_metal.launch(b, code, &call, &err) == TACK_ERR_DEVICE);
    printf("failed command buffer: %s\n", err.message);
    CHECK(strstr(err.message, "kernel 'scale': its command buffer on Fake M2 Max") &&
          strstr(err.message, "failed (status 5): Execution of the command buffer was aborted") &&
          strstr(err.message, "GPU Address Fault Error"));
    fk.fail_status = 0;

    /* The artifact: the MSL again on a load, nothing emitted. */
    ser_writer w = {0};
    CHECK(backend_metal.artifact(b, code, &w) == 0 && !w.failed);
    free(fk.last_source);
    fk.last_source = NULL;
    backend_code *loaded = NULL;
    CHECK(backend_metal.load(b, f, w.data, w.len, &loaded, &err) == TACK_OK && loaded);
    CHECK(loaded && fk.last_source && msl && !strcmp(fk.last_source, msl) &&
          !strcmp(loaded->g.entry, "tack_5ca1e") && loaded->g.narrays == 2);
    backend_metal.release(b, loaded);
    /* Damage anywhere, and a record for other parameters, are refused. */
    for (size_t cut = 0; cut < w.len; cut += w.len / 7 + 1) {
        CHECK(backend_metal.load(b, f, w.data, cut, &loaded, &err) == TACK_ERR_INTERNAL && !loaded);
    }
    CHECK(strstr(err.message, "kernel 'scale': the stored Metal code is damaged") != NULL);
    ser_writer w2 = {0};
    ser_put_bytes(&w2, w.data, w.len);
    ser_put_u32(&w2, 0);
    CHECK(backend_metal.load(b, f, w2.data, w2.len, &loaded, &err) == TACK_ERR_INTERNAL);
    ser_writer_free(&w2);
    ((unsigned char *)w.data)[w.len - 4] = 7; /* the second array's index */
    CHECK(backend_metal.load(b, f, w.data, w.len, &loaded, &err) == TACK_ERR_INTERNAL);
    ser_writer_free(&w);
    backend_metal.release(b, code);

    /* Metal's compiler refusing the MSL: its words in the message. */
    fk.fail_library = 1;
    code = NULL;
    CHECK(backend_metal.build(b, f, "5ca1e", &code, &ns, &err) == TACK_ERR_COMPILE && !code);
    printf("refused MSL: %s\n", err.message);
    CHECK(strstr(err.message, "kernel 'scale': Metal's compiler refused the MSL") &&
          strstr(err.message, "program_source:12:9: error: use of undeclared identifier 'tk_nosuch'"));
    fk.fail_library = 0;
    backend_metal.mem_free(b, x);
    backend_metal.mem_free(b, out);
    free(msl);

    /* 2-D: inner extent along x. */
    ir_func_free(f);
    f = NULL;
    static int32_t a2[6 * 40];
    int64_t shape2[2] = {6, 40};
    tack_arg args2[3] = {tack_arg_array(a2, TACK_I32, 2, shape2, 0),
                         tack_arg_array(a2, TACK_I32, 2, shape2, 1), tack_arg_int(3)};
    f = gl_variant(ADD2D, &ast, args2, 3, 0, slots, dims, &err);
    CHECK(f != NULL);
    if (f && backend_metal.build(b, f, "add2d", &code, &ns, &err) == TACK_OK) {
        CHECK(backend_metal.mem_alloc(b, sizeof a2, &x, &err) == TACK_OK);
        CHECK(backend_metal.mem_alloc(b, sizeof a2, &out, &err) == TACK_OK);
        slots[0] = (uint64_t)(uintptr_t)x;
        slots[1] = (uint64_t)(uintptr_t)out;
        backend_call c2 = {"add2d", slots, (const int64_t(*)[TACK_MAX_NDIM])dims, 3, 0, range, NULL};
        CHECK(backend_metal.range(b, code, &c2, range, &err) == TACK_OK);
        CHECK(backend_metal.launch(b, code, &c2, &err) == TACK_OK);
        CHECK(fk.grid.width == 40 && fk.grid.height == 6 && fk.grid.depth == 1);
        CHECK(fk.group.width == 64 && fk.group.height == 4 && fk.group.depth == 1);
        CHECK(fk.pack[GPU_PACK_COUNT] == 6 && fk.pack[GPU_PACK_INNER0] == 40 &&
              fk.pack[GPU_PACK_SCALARS + 2] == 3);
        backend_metal.mem_free(b, x);
        backend_metal.mem_free(b, out);
        backend_metal.release(b, code);
    } else {
        fprintf(stderr, "add2d: %s\n", err.message);
        CHECK(0);
    }
    CHECK(backend_metal.synchronize(b, &err) == TACK_OK);
done:
    ir_func_free(f);
    arena_free(&ast);
    backend_metal.close(b);
    check_ownership("the backend over the stand-in");
    metal_objc_set_for_testing(NULL);
}

/* Through the runtime: tack_device_create("metal"), device arrays, the
 * warm path, a workgroup kernel, and Metal's refusals of f64 and debug
 * mode before anything reaches the device. */
static void test_runtime(void) {
    fk_reset();
    metal_objc_set_for_testing(&fake_api);
    tack_error err;
    tack_device *dev = tack_device_create("metal", 0, &err);
    CHECK(dev != NULL);
    if (!dev) {
        fprintf(stderr, "metal device: %s\n", err.message);
        metal_objc_set_for_testing(NULL);
        return;
    }
    CHECK(!tack_device_host_memory(dev));
    tack_kernel *k = tack_kernel_create(SCALE, "scale.py", 1, NULL, NULL, &err);
    CHECK(k != NULL);
    static float host[1000];
    for (int i = 0; i < 1000; i++) host[i] = (float)i;
    int64_t shape[1] = {1000};
    void *x = tack_device_alloc(dev, sizeof host, &err);
    void *out = tack_device_alloc(dev, sizeof host, &err);
    CHECK(x && out && tack_device_write(dev, x, 0, host, sizeof host, &err) == TACK_OK);
    tack_arg da[3] = {tack_arg_array(x, TACK_F32, 1, shape, 0),
                      tack_arg_array(out, TACK_F32, 1, shape, 1), tack_arg_float(2.0)};
    da[0].device = da[1].device = dev;
    CHECK(tack_kernel_launch(k, dev, da, 3, &err) == TACK_OK);
    CHECK(tack_kernel_launch(k, dev, da, 3, &err) == TACK_OK);
    CHECK(fk.launches == 2 && tack_kernel_num_variants(k, dev) == 1);
    CHECK(count_kind(K_PIPELINE) == 1); /* one compile for both */
    CHECK(fk.bound[0] == (objc_id)x && fk.bound[1] == (objc_id)out && fk.pack[GPU_PACK_COUNT] == 1000);
    /* The disk cache: a second device (its own empty variant cache) and a
     * new kernel load the stored MSL and compile it again, without code
     * generation. */
    char *first_msl = fk.last_source ? strdup(fk.last_source) : NULL;
    tack_stats before, after;
    tack_get_stats(&before);
    tack_device *dev2 = tack_device_create("metal", 0, &err);
    tack_kernel *k2 = tack_kernel_create(SCALE, "scale.py", 1, NULL, NULL, &err);
    CHECK(dev2 && k2);
    if (dev2 && k2) {
        void *x2 = tack_device_alloc(dev2, sizeof host, &err);
        void *out2 = tack_device_alloc(dev2, sizeof host, &err);
        tack_arg db[3] = {tack_arg_array(x2, TACK_F32, 1, shape, 0),
                          tack_arg_array(out2, TACK_F32, 1, shape, 1), tack_arg_float(3.0)};
        db[0].device = db[1].device = dev2;
        free(fk.last_source);
        fk.last_source = NULL;
        CHECK(tack_kernel_launch(k2, dev2, db, 3, &err) == TACK_OK && fk.launches == 3);
        tack_get_stats(&after);
        CHECK(after.disk_hits == before.disk_hits + 1 && after.compiles == before.compiles);
        CHECK(after.driver_source_builds == before.driver_source_builds + 1);
        CHECK(first_msl && fk.last_source && !strcmp(first_msl, fk.last_source));
        CHECK(fk.bound[0] == (objc_id)x2 && (uint64_t)fk.pack[GPU_PACK_SCALARS + 2] == f32_bits(3.0f));
        tack_device_free_mem(dev2, x2);
        tack_device_free_mem(dev2, out2);
    }
    free(first_msl);
    tack_kernel_free(k2);
    tack_device_free(dev2);
    /* f64 and debug mode: refused naming them, nothing sent. */
    static double hd[4];
    int64_t s4[1] = {4};
    void *xd = tack_device_alloc(dev, sizeof hd, &err);
    tack_arg d64[3] = {tack_arg_array(xd, TACK_F64, 1, s4, 0), tack_arg_array(xd, TACK_F64, 1, s4, 1),
                       tack_arg_float(2.0)};
    d64[0].device = d64[1].device = dev;
    CHECK(tack_kernel_launch(k, dev, d64, 3, &err) == TACK_ERR_TYPE);
    CHECK(strstr(err.message, "f64 but Metal has no fp64 support") != NULL);
    tack_set_debug(1);
    CHECK(tack_kernel_launch(k, dev, da, 3, &err) != TACK_OK);
    printf("debug mode on Metal: %s\n", err.message);
    CHECK(strstr(err.message, "Metal") != NULL);
    tack_set_debug(0);
    CHECK(fk.launches == 3);
    tack_device_free_mem(dev, xd);
    tack_kernel_free(k);

    /* A workgroup kernel: threadgroups of exactly 256. */
    k = tack_kernel_create(BLOCK_SUM, "block_sum.py", 1, NULL, NULL, &err);
    CHECK(k != NULL);
    if (k) {
        int64_t n512[1] = {512}, n2[1] = {2};
        tack_arg wa[2] = {tack_arg_array(x, TACK_F32, 1, n512, 0),
                          tack_arg_array(out, TACK_F32, 1, n2, 1)};
        wa[0].device = wa[1].device = dev;
        tack_status st = tack_kernel_launch(k, dev, wa, 2, &err);
        if (st) fprintf(stderr, "block_sum: %s\n", err.message);
        CHECK(st == TACK_OK && fk.launches == 4);
        CHECK(fk.group.width == 256 && fk.group.height == 1 && fk.grid.width == 512);
        CHECK(fk.last_source && strstr(fk.last_source, "threadgroup float") &&
              strstr(fk.last_source, "threadgroup_barrier(mem_flags::mem_threadgroup)"));
        /* A pipeline that allows fewer threads a group: refused, named. */
        fk.pipeline_threads = 128;
        tack_kernel *k2 = tack_kernel_create(BLOCK_SUM, "block_sum.py", 1, NULL, NULL, &err);
        st = k2 ? tack_kernel_launch(k2, dev, wa, 2, &err) : TACK_ERR_INTERNAL;
        CHECK(st == TACK_ERR_DEVICE &&
              strstr(err.message, "kernel 'block_sum' needs threadgroups of 256 threads") &&
              strstr(err.message, "allows 128"));
        CHECK(fk.launches == 4);
        fk.pipeline_threads = 1024;
        tack_kernel_free(k2);
    }
    tack_kernel_free(k);
    tack_device_free_mem(dev, x);
    tack_device_free_mem(dev, out);
    tack_device_free(dev);
    check_ownership("launches through the runtime");
    metal_objc_set_for_testing(NULL);
}

int main(void) {
    setvbuf(stdout, NULL, _IONBF, 0);
    /* A private disk cache, for the artifact's round trip through it. */
    char root[] = "/tmp/tack_test_metal_XXXXXX";
    CHECK(mkdtemp(root) != NULL);
    setenv("TACK_CACHE_DIR", root, 1);
    setenv("TACK_CACHE", "write", 1);
    test_no_metal();
    test_grid();
    test_fake_runtime();
    test_runtime();
    fk_reset();
    char cmd[96];
    snprintf(cmd, sizeof cmd, "rm -rf %s", root);
    CHECK(system(cmd) == 0);
    return CHECK_DONE();
}
