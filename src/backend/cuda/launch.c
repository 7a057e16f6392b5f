/* launch.c - one dispatch: the pack by value, one device pointer per
 * array parameter and one texture object per texture sampled in hardware
 * as the kernel's parameters (gpu.h's order), a grid that covers the range
 * or strides over it, queued on the device's stream; the call returns
 * then (caps.queued_launch), and the next wait reports a fault by the
 * kernel's name (gpu_queue).
 *
 * Everything a launch passes lives on the launching thread's stack, and
 * cuLaunchKernel copies it before it returns, so launches of one variant
 * need no lock (caps.locked_dispatch 0). */
#include "cuda.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/gpu/gpu.h"

#define THREADS 256 /* per block: full occupancy on every sm_75+ part */


void cuda_grid(const backend *b, int ninner, int64_t count, int64_t inner0, int64_t inner1,
               unsigned grid[3], unsigned block[3]) {
    int dims = 1 + (ninner > 2 ? 2 : ninner);
    /* x is the innermost index (gpu.h), the last dimension the outer range. */
    int64_t ext[3] = {count, 1, 1};
    if (dims == 2) ext[0] = inner0, ext[1] = count;
    if (dims == 3) ext[0] = inner1, ext[1] = inner0, ext[2] = count;
    /* Threads along x first (a warp's lanes then read consecutive elements
     * of a row-major array), what is left of the block along y, the rest
     * along the outer range.  Enough blocks to fill the device a few times
     * over, the inner dimensions first; past that each thread strides,
     * which keeps launches small. */
    int64_t threads = THREADS, budget = (int64_t)b->sm_count * 32;
    for (int d = 0; d < 3; d++) {
        int64_t cap = gpu_min64(threads, b->max_block[d]), bd = 1, gd = 1;
        if (d < dims) {
            bd = d == dims - 1 ? cap : gpu_pow2_at_least(ext[d], cap);
            if (bd < 1) bd = 1;
            gd = gpu_min64(gpu_min64(gpu_cdiv(ext[d], bd), b->max_grid_dim[d]), budget);
            if (gd < 1) gd = 1;
        }
        threads = threads / bd > 0 ? threads / bd : 1;
        budget = budget / gd > 0 ? budget / gd : 1;
        block[d] = (unsigned)bd;
        grid[d] = (unsigned)gd;
    }
}

static tack_status launch_queued(backend *b, backend_code *c, const char *name, void **params,
                                   int ninner, int64_t count, int64_t inner0, int64_t inner1,
                                   const backend_call *call, tack_error *err);

tack_status cuda_launch_pack(backend *b, backend_code *c, const backend_call *call,
                             const int64_t *pack, tack_error *err) {
    gpu_launch_shape sh;
    int go = gpu_launch_begin(&c->g, call, pack, c->g.narrays + c->ntextures,
                              2 * TACK_MAX_PARAMS, &sh, err);
    if (go) return go > 0 ? TACK_OK : err->status;
    const char *name = sh.name;
    tack_status st = gpu_rt_enter(b, err);
    if (st) return st;
    /* kernelParams[i] points at parameter i's value: the pack's words, then
     * each array's device pointer (the slot is the cuMemAlloc handle), then
     * each hardware texture's object. */
    CUdeviceptr ptrs[2 * TACK_MAX_PARAMS];
    CUtexObject texs[2 * TACK_MAX_PARAMS];
    void *params[2 + 2 * TACK_MAX_PARAMS]; /* the pack, arrays, textures, print buffer */
    int n = 0;
    params[n++] = (void *)pack;
    for (int a = 0; a < c->g.narrays; a++) {
        ptrs[a] = (CUdeviceptr)call->slots[c->g.arrays[a]];
        params[n++] = &ptrs[a];
    }
    for (int t = 0; t < c->ntextures; t++) {
        int p = c->textures[t];
        if ((st = cuda_texture_get(b, (CUdeviceptr)call->slots[p], call->dims[p], name,
                                   c->g.f->params[p].name, &texs[t], err)))
            return st;
        params[n++] = &texs[t];
    }
    /* print(): a record buffer for this launch, its lines written after
     * it (gpu/driver.c). */
    void *pbuf;
    uint32_t pcap;
    if ((st = gpu_print_begin(b, &backend_cuda, &c->g, &pbuf, &pcap, err))) return st;
    if (pbuf) params[n++] = &pbuf;
    st = launch_queued(b, c, name, params, sh.ninner, sh.count, sh.inner0, sh.inner1, call,
                         err);
    return gpu_print_end(b, &backend_cuda, &c->g, name, pbuf, pcap, st, err);
}

static tack_status launch_queued(backend *b, backend_code *c, const char *name, void **params,
                                   int ninner, int64_t count, int64_t inner0, int64_t inner1,
                                   const backend_call *call, tack_error *err) {
    unsigned grid[3], block[3];
    cuda_grid(b, ninner, count, inner0, inner1, grid, block);
    if (c->g.f->collective && block[0] != IR_WORKGROUP) {
        err->status = TACK_ERR_DEVICE;
        snprintf(err->message, sizeof err->message,
                 "kernel '%s' needs blocks of %d threads; this device allows %u", name,
                 IR_WORKGROUP, block[0]);
        return TACK_ERR_DEVICE;
    }
    tack_status st = gpu_rt_launch(b, c->fn, name, grid, block, call->queue, params, err);
    if (st) return st;
    /* Textures over what the kernel stores to are stale once it ran; their
     * refresh is queued after it on the stream. */
    for (int w = 0; w < c->nwritten; w++)
        cuda_texture_written(b, (CUdeviceptr)call->slots[c->written[w]]);
    return TACK_OK;
}
