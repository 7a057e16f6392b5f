/* range_check.c - the CPU launch range's safety checks, before anything
 * runs.  The compiled range function (codegen.c) reads an array element
 * the range uses (`range(n[k])`) without a bounds check, so a range that
 * reads one is first evaluated by the GPU backends' host interpreter
 * (gpu/range.c), which checks each element's index against its array:
 * the CPU refuses what OpenCL refuses, with the same message.  And a
 * range bound converted from a u64 of 2**63 or more (which the i64
 * launch arithmetic would wrap negative, running nothing) is refused. */
#include <stdio.h>
#include <string.h>

#include "backend/gpu/gpu.h"
#include "cpu.h"

static int reads_array(const ir_func *f, const ir_expr *e) {
    if (!e) return 0;
    if (e->kind == IR_LOAD && e->index >= 0 && e->index < f->nparams &&
        f->params[e->index].role == ROLE_ARRAY)
        return 1;
    if (reads_array(f, e->a) || reads_array(f, e->b) || reads_array(f, e->cond)) return 1;
    for (int i = 0; i < e->nargs; i++)
        if (reads_array(f, e->args[i])) return 1;
    return 0;
}

ir_func *cpu_range_checked_ir(const ir_func *f) {
    /* Debug mode guards the range's reads itself (bounds.c). */
    if (f->debug_extents >= 0) return NULL;
    const ir_expr *v[CPU_RANGE_LEN] = {f->start, f->stop, f->step, f->inner_stop[0],
                                       f->inner_stop[1]};
    int reads = 0;
    for (int i = 0; i < CPU_RANGE_LEN; i++)
        if (i < 3 || i - 3 < f->ninner) reads |= reads_array(f, v[i]);
    tack_error scratch = {0};
    if (!reads || gpu_range_check(f, &scratch)) return NULL;
    return gpu_keep_ir(f);
}

/* A bound that is a u64 converted to the launch's i64. */
static int from_u64(const ir_expr *e) {
    return e && e->kind == IR_CAST && e->a && e->a->type == TACK_U64;
}

unsigned cpu_range_u64_mask(const ir_func *f) {
    const ir_expr *v[CPU_RANGE_LEN] = {f->start, f->stop, f->step, f->inner_stop[0],
                                       f->inner_stop[1]};
    unsigned m = 0;
    for (int i = 0; i < CPU_RANGE_LEN; i++)
        if ((i < 3 || i - 3 < f->ninner) && from_u64(v[i])) m |= 1u << i;
    return m;
}

tack_status cpu_range_refuse_u64(const char *kernel, unsigned mask, const int64_t *range,
                                 tack_error *err) {
    static const char *what[CPU_RANGE_LEN] = {"start", "length", "step", "ndindex extent",
                                              "ndindex extent"};
    for (int i = 0; i < CPU_RANGE_LEN; i++)
        if (mask >> i & 1 && range[i] < 0) {
            err->status = TACK_ERR_VALUE;
            snprintf(err->message, sizeof err->message,
                     "kernel '%s': the parallel loop's %s %llu (a uint64) is 2**63 or more, "
                     "past what a launch can run",
                     kernel ? kernel : "?", what[i], (unsigned long long)range[i]);
            return TACK_ERR_VALUE;
        }
    return TACK_OK;
}

/* Host memory: a slot holds the array's address. */
static tack_status host_read(struct backend *b, const void *handle, size_t offset, void *dst,
                             size_t n, tack_error *err) {
    (void)b, (void)err;
    memcpy(dst, (const char *)handle + offset, n);
    return TACK_OK;
}

tack_status cpu_range_check_reads(const ir_func *f, const uint64_t *slots,
                                  const int64_t (*dims)[TACK_MAX_NDIM], tack_error *err) {
    gpu_device_read rd = {host_read, NULL};
    int64_t out[CPU_RANGE_LEN];
    return gpu_range_eval(f, slots, dims, &rd, out, err);
}
