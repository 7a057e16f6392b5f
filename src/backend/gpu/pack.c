/* pack.c - a call's scalar pack (see gpu.h): the launch range evaluated on
 * the host, its trip count, the ndindex extents and each scalar's bits. */
#include <stdio.h>
#include <string.h>

#include "backend/backend.h"
#include "backend/gpu/gpu.h"

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
    int64_t count = backend_launch_count(r);
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
