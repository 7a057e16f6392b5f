/* pack.c - a call's scalar pack (see gpu.h): the launch range evaluated on
 * the host, its trip count, the ndindex extents and each scalar's bits. */
#include <stdio.h>
#include <string.h>

#include "backend/gpu/gpu.h"

/* Iterations of range(start, stop, step), without overflow: as
 * runtime/launch.c's trip_count. */
static int64_t trip_count(int64_t start, int64_t stop, int64_t step) {
    if (step > 0 && stop > start)
        return (int64_t)(((uint64_t)stop - (uint64_t)start - 1) / (uint64_t)step + 1);
    if (step < 0 && start > stop)
        return (int64_t)(((uint64_t)start - (uint64_t)stop - 1) / (0 - (uint64_t)step) + 1);
    return 0;
}

tack_status gpu_pack_fill(const ir_func *f, const uint64_t *slots,
                          const int64_t (*dims)[TACK_MAX_NDIM], int64_t *pack, tack_error *err) {
    int64_t r[5];
    if (gpu_range_eval(f, slots, dims, r, err)) return err->status;
    if (r[2] == 0) {
        err->status = TACK_ERR_VALUE;
        snprintf(err->message, sizeof err->message,
                 "kernel '%s': the parallel loop's range() step must not be zero", f->name);
        return TACK_ERR_VALUE;
    }
    int64_t count = trip_count(r[0], r[1], r[2]);
    /* An empty inner extent empties the whole launch, as on the CPU. */
    if (r[3] <= 0 || r[4] <= 0) count = 0;
    pack[GPU_PACK_START] = r[0];
    pack[GPU_PACK_STEP] = r[2];
    pack[GPU_PACK_COUNT] = count;
    pack[GPU_PACK_INNER0] = r[3];
    pack[GPU_PACK_INNER1] = r[4];
    for (int p = 0; p < f->nparams; p++)
        pack[GPU_PACK_SCALARS + p] =
            f->params[p].role == ROLE_SCALAR ? (int64_t)slots[p] : 0;
    return TACK_OK;
}
