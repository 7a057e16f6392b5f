/* opencl.c - backend_opencl: the backend table.  A build checks that the
 * device can run the kernel at all (check.c; a launch range the host can
 * evaluate), has the GPU emitter write OpenCL C, and builds it; a launch
 * fills the scalar pack from the call and runs it. */
#include "opencl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/gpu/gpu.h"

/* ---- the table's entries ------------------------------------------- */

static tack_status build(backend *b, const ir_func *f, const char *symbol_base,
                         backend_code **out, uint64_t *compiler_ns, tack_error *err) {
    *out = NULL;
    tack_status st = opencl_check_support(b, f, err);
    if (st) return st;
    char entry[GPU_ENTRY_LEN], *source;
    st = gpu_emit_variant(f, b->dialect, symbol_base, entry, &source, err);
    uint64_t start = backend_now_ns();
    if (!st) st = opencl_code_from_source(b, f, source, entry, out, err);
    *compiler_ns += backend_now_ns() - start; /* the driver's compiler */
    free(source);
    return st;
}

/* Kernels in one program at most (PoCL: about 30 KB of binary each). */
#define PROGRAM_KERNELS 32

/* Each variant's OpenCL C (helpers guarded, so the texts concatenate),
 * then one program for those that got this far (or one per
 * PROGRAM_KERNELS of them). */
static void build_many(backend *b, int n, const ir_func *const *fs,
                       const char *const *symbol_bases, backend_code **outs,
                       uint64_t *compiler_ns, tack_error *errs) {
    char **sources = calloc(n > 0 ? (size_t)n : 1, sizeof *sources);
    char (*entries)[GPU_ENTRY_LEN] = calloc(n > 0 ? (size_t)n : 1, sizeof *entries);
    const ir_func **okf = calloc(n > 0 ? (size_t)n : 1, sizeof *okf);
    const char **oks = calloc(n > 0 ? (size_t)n : 1, sizeof *oks), **oke = calloc(n > 0 ? (size_t)n : 1, sizeof *oke);
    backend_code **okc = calloc(n > 0 ? (size_t)n : 1, sizeof *okc);
    tack_error *oker = calloc(n > 0 ? (size_t)n : 1, sizeof *oker);
    int *at = calloc(n > 0 ? (size_t)n : 1, sizeof *at);
    for (int i = 0; i < n; i++) outs[i] = NULL;
    if (!sources || !entries || !okf || !oks || !oke || !okc || !oker || !at) {
        for (int i = 0; i < n; i++)
            backend_error(&errs[i], TACK_ERR_NOMEM, "kernel '%s': out of memory building OpenCL code",
                          fs[i]->name);
    } else {
        int m = 0;
        for (int i = 0; i < n; i++) {
            tack_status st = opencl_check_support(b, fs[i], &errs[i]);
            if (!st) st = gpu_range_check(fs[i], &errs[i]);
            snprintf(entries[i], sizeof entries[i], "tack_%.64s", symbol_bases[i]);
            if (!st) st = gpu_emit_guarded(fs[i], b->dialect, entries[i], &sources[i],
                                           &errs[i]);
            if (st) continue;
            okf[m] = fs[i];
            oks[m] = sources[i];
            oke[m] = entries[i];
            at[m++] = i;
        }
        uint64_t start = backend_now_ns();
        /* Programs of at most PROGRAM_KERNELS: each kernel's disk entry
         * holds its whole program's binary, so this bounds an entry. */
        for (int j = 0; j < m; j += PROGRAM_KERNELS) {
            int c = m - j < PROGRAM_KERNELS ? m - j : PROGRAM_KERNELS;
            opencl_code_many(b, c, okf + j, oks + j, oke + j, okc + j, oker + j);
        }
        *compiler_ns += backend_now_ns() - start;
        for (int j = 0; j < m; j++) {
            outs[at[j]] = okc[j];
            if (!okc[j]) errs[at[j]] = oker[j];
        }
    }
    for (int i = 0; sources && i < n; i++) free(sources[i]);
    free(sources);
    free(entries);
    free(okf);
    free(oks);
    free(oke);
    free(okc);
    free(oker);
    free(at);
}

/* The OpenCL C that build hands the driver; drivers give no text
 * assembly, so TACK_INSPECT_ASM is refused. */
static tack_status inspect(backend *b, const ir_func *f, const char *symbol_base,
                           tack_inspect_kind kind, char **text, tack_error *err) {
    (void)b;
    *text = NULL;
    if (kind != TACK_INSPECT_LLVM)
        return backend_error(err, TACK_ERR_VALUE,
                             "kernel '%s': an OpenCL driver gives no assembly text; "
                             "inspect_llvm() shows the OpenCL C it builds", f->name);
    char entry[GPU_ENTRY_LEN];
    return gpu_emit_variant(f, b->dialect, symbol_base, entry, text, err);
}

static tack_status launch(backend *b, backend_code *c, const backend_call *call,
                          tack_error *err) {
    int64_t pack[GPU_PACK_MAX_WORDS]; /* parameters are bounded: no allocation */
    if (gpu_pack_from_range(c->f, call->range, call->slots, pack, err)) return err->status;
    return opencl_launch_pack(b, c, call, pack, err);
}

static tack_status range(backend *b, backend_code *c, const backend_call *call,
                         int64_t out[BACKEND_RANGE_LEN], tack_error *err) {
    gpu_device_read rd = {opencl_mem_read, b}; /* array elements: range(n[0]) */
    return gpu_range_eval(c->f, call->slots, call->dims, &rd, out, err);
}


const backend_ops backend_opencl = {
    .name = "opencl",
    .open = opencl_open,
    .close = opencl_close,
    .caps = opencl_caps,
    .describe = opencl_describe,
    .cache_target = opencl_cache_target,
    .build = build,
    .build_many = build_many,
    .artifact = opencl_artifact,
    .artifact_snapshot = opencl_artifact_snapshot,
    .artifact_write = opencl_artifact_write,
    .artifact_free = opencl_artifact_free,
    .load = opencl_load,
    .release = opencl_release,
    .range = range,
    .launch = launch,
    .inspect = inspect,
    .mem_alloc = opencl_mem_alloc,
    .mem_free = opencl_mem_free,
    .mem_write = opencl_mem_write,
    .mem_read = opencl_mem_read,
    .synchronize = opencl_synchronize_all,
    .queue_create = opencl_queue_create,
    .queue_destroy = opencl_queue_destroy,
    .queue_synchronize = opencl_queue_synchronize,
    .event_record = opencl_event_record,
    .event_wait = opencl_event_wait,
    .event_synchronize = opencl_event_synchronize,
    .event_elapsed = opencl_event_elapsed,
    .event_free = opencl_event_free,
    .queue_mem_write = opencl_queue_mem_write,
    .queue_mem_read = opencl_queue_mem_read,
};
