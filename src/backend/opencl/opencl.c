/* opencl.c - backend_opencl: the backend table.  A build checks that the
 * device can run the kernel at all (check.c; a launch range the host can
 * evaluate), has the GPU emitter write OpenCL C, and builds it; a launch
 * fills the scalar pack from the call and runs it. */
#include "opencl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend/gpu/gpu.h"

/* ---- the table's entries ------------------------------------------- */

static uint64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static tack_status build(backend *b, const ir_func *f, const char *symbol_base,
                         backend_code **out, uint64_t *compiler_ns, tack_error *err) {
    *out = NULL;
    tack_status st = opencl_check_support(b, f, err);
    if (!st) st = gpu_range_check(f, err);
    if (st) return st;
    /* The entry is an OpenCL C identifier whatever the key's spelling. */
    size_t n = strlen(symbol_base);
    char *entry = malloc(n + 6);
    if (!entry) {
        err->status = TACK_ERR_NOMEM;
        snprintf(err->message, sizeof err->message, "kernel '%s': out of memory", f->name);
        return TACK_ERR_NOMEM;
    }
    memcpy(entry, "tack_", 5);
    for (size_t i = 0; i <= n; i++) {
        char ch = symbol_base[i];
        int ok = !ch || ch == '_' || (ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'z') ||
                 (ch >= 'A' && ch <= 'Z');
        entry[5 + i] = ok ? ch : '_';
    }
    char *source = NULL;
    st = gpu_emit(f, &gpu_dialect_opencl, entry, &source, err);
    uint64_t start = now_ns();
    if (!st) st = opencl_code_from_source(b, f, source, entry, out, err);
    *compiler_ns += now_ns() - start; /* the driver's compiler */
    free(source);
    free(entry);
    return st;
}

static tack_status launch(backend *b, backend_code *c, const backend_call *call,
                          tack_error *err) {
    int64_t small[GPU_PACK_SCALARS + 32];
    int64_t *pack = small;
    if (c->pack_words > (int)(sizeof small / sizeof small[0])) {
        pack = malloc((size_t)c->pack_words * sizeof *pack);
        if (!pack) {
            err->status = TACK_ERR_NOMEM;
            snprintf(err->message, sizeof err->message, "kernel '%s': out of memory", c->f->name);
            return TACK_ERR_NOMEM;
        }
    }
    gpu_pack_from_range(c->f, call->range, call->slots, pack);
    tack_status st = opencl_launch_pack(b, c, call, pack, err);
    if (pack != small) free(pack);
    return st;
}

static tack_status range(backend *b, backend_code *c, const backend_call *call,
                         int64_t out[BACKEND_RANGE_LEN], tack_error *err) {
    (void)b;
    return gpu_range_eval(c->f, call->slots, call->dims, out, err);
}

const backend_ops backend_opencl = {
    .name = "opencl",
    .open = opencl_open,
    .close = opencl_close,
    .caps = opencl_caps,
    .describe = opencl_describe,
    .cache_target = opencl_cache_target,
    .build = build,
    .artifact = opencl_artifact,
    .load = opencl_load,
    .release = opencl_release,
    .range = range,
    .launch = launch,
    .mem_alloc = opencl_mem_alloc,
    .mem_free = opencl_mem_free,
    .mem_write = opencl_mem_write,
    .mem_read = opencl_mem_read,
};
