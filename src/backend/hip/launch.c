/* launch.c - one dispatch: the pack by value and one device pointer per
 * array parameter as the kernel's parameters (gpu.h's order), a grid that
 * covers the range or strides over it, queued on the device's stream (the
 * call returns then; the next wait reports a fault by the kernel's name).  Everything passed lives on the launching thread's stack
 * and hipModuleLaunchKernel copies it: launches need no lock. */
#include "hip.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/gpu/gpu.h"

#define THREADS 256 /* per block: four 64-lane waves, or eight of 32 */

void hip_grid(const backend *b, int ninner, int64_t count, int64_t inner0, int64_t inner1,
              unsigned grid[3], unsigned block[3]) {
    /* The grid fills each compute unit a few times over (gpu/driver.c). */
    gpu_grid_strided(THREADS, b->max_block, b->max_grid_dim, (int64_t)b->cu_count * 32, ninner,
                     count, inner0, inner1, grid, block);
}

static tack_status launch_queued(backend *b, backend_code *c, const char *name, void **params,
                                   int ninner, int64_t count, int64_t inner0, int64_t inner1,
                                   void *queue, tack_error *err);
tack_status hip_launch_pack(backend *b, backend_code *c, const backend_call *call,
                            const int64_t *pack, tack_error *err) {
    gpu_launch_shape sh;
    int go = gpu_launch_begin(&c->g, call, pack, c->g.narrays, 2 * TACK_MAX_PARAMS, &sh, err);
    if (go) return go > 0 ? TACK_OK : err->status;
    const char *name = sh.name;
    tack_status st = gpu_rt_enter(b, err);
    if (st) return st;
    /* kernelParams[i] points at parameter i's value: the pack, then each
     * array's device pointer (the slot is the hipMalloc handle). */
    void *ptrs[2 * TACK_MAX_PARAMS];
    void *params[2 + 2 * TACK_MAX_PARAMS]; /* and the print buffer */
    int n = 0;
    params[n++] = (void *)pack;
    for (int a = 0; a < c->g.narrays; a++) {
        ptrs[a] = (void *)(uintptr_t)call->slots[c->g.arrays[a]];
        params[n++] = &ptrs[a];
    }
    /* print(): a record buffer for this launch, its lines written after
     * it (gpu/driver.c). */
    void *pbuf;
    uint32_t pcap;
    if ((st = gpu_print_begin(b, &backend_hip, &c->g, &pbuf, &pcap, err))) return st;
    if (pbuf) params[n++] = &pbuf;
    st = launch_queued(b, c, name, params, sh.ninner, sh.count, sh.inner0, sh.inner1, call->queue,
                       err);
    return gpu_print_end(b, &backend_hip, &c->g, name, pbuf, pcap, st, err);
}

static tack_status launch_queued(backend *b, backend_code *c, const char *name, void **params,
                                   int ninner, int64_t count, int64_t inner0, int64_t inner1,
                                   void *queue, tack_error *err) {
    unsigned grid[3], block[3];
    hip_grid(b, ninner, count, inner0, inner1, grid, block);
    if (c->g.f->collective && block[0] != IR_WORKGROUP)
        return backend_error(err, TACK_ERR_DEVICE, "kernel '%s' needs blocks of %d threads; %s allows %u",
                             name, IR_WORKGROUP, b->description, block[0]);
    return gpu_rt_launch(b, c->fn, name, grid, block, queue, params, err);
}
