/* launch.c - one dispatch: the pack by value and one device pointer per
 * array parameter as the kernel's parameters (gpu.h's order), a grid that
 * covers the range or strides over it, queued on the device's stream, and
 * a wait for it.  Everything passed lives on the launching thread's stack
 * and hipModuleLaunchKernel copies it: launches need no lock. */
#include "hip.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/gpu/gpu.h"

#define THREADS 256 /* per block: four 64-lane waves, or eight of 32 */

static int64_t pow2_at_least(int64_t v, int64_t cap) {
    int64_t p = 1;
    while (p < v && p < cap) p *= 2;
    return p;
}

static int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

void hip_grid(const backend *b, int ninner, int64_t count, int64_t inner0, int64_t inner1,
              unsigned grid[3], unsigned block[3]) {
    /* Threads along the innermost extent first (consecutive lanes read
     * consecutive elements of a row-major array), the rest along the outer
     * range; the grid fills each compute unit a few times over, past which
     * threads stride. */
    int64_t bx = THREADS, by = 1, bz = 1;
    if (ninner == 1) {
        by = pow2_at_least(inner0, min64(THREADS, b->max_block[1]));
        bx = THREADS / by;
    } else if (ninner >= 2) {
        bz = pow2_at_least(inner1, min64(64, b->max_block[2]));
        by = pow2_at_least(inner0, min64(THREADS / bz, b->max_block[1]));
        bx = THREADS / (by * bz);
    }
    if (bx > b->max_block[0]) bx = b->max_block[0];
    int64_t budget = (int64_t)b->cu_count * 32;
    int64_t gy = ninner >= 1 ? min64(cdiv(inner0, by), b->max_grid_dim[1]) : 1;
    int64_t gz = ninner >= 2 ? min64(cdiv(inner1, bz), b->max_grid_dim[2]) : 1;
    if (gy > budget) gy = budget;
    if (gz > budget / gy) gz = budget / gy > 0 ? budget / gy : 1;
    int64_t left = budget / (gy * gz) > 0 ? budget / (gy * gz) : 1;
    int64_t gx = min64(min64(cdiv(count, bx), left), b->max_grid_dim[0]);
    grid[0] = (unsigned)(gx > 0 ? gx : 1);
    grid[1] = (unsigned)gy;
    grid[2] = (unsigned)gz;
    block[0] = (unsigned)bx;
    block[1] = (unsigned)by;
    block[2] = (unsigned)bz;
}

static tack_status launch_and_wait(backend *b, backend_code *c, const char *name, void **params,
                                   int ninner, int64_t count, int64_t inner0, int64_t inner1,
                                   tack_error *err);
static tack_status print_lines(backend *b, backend_code *c, const char *name, void *pbuf,
                               uint32_t pcap, tack_error *err);

tack_status hip_launch_pack(backend *b, backend_code *c, const backend_call *call,
                            const int64_t *pack, tack_error *err) {
    const char *name = call->kernel_name ? call->kernel_name : c->g.f->name;
    int ninner = c->g.f->ninner;
    int64_t count = pack[GPU_PACK_COUNT];
    int64_t inner0 = pack[GPU_PACK_INNER0], inner1 = pack[GPU_PACK_INNER1];
    if (count <= 0 || (ninner >= 1 && inner0 <= 0) || (ninner >= 2 && inner1 <= 0))
        return TACK_OK;
    if (call->nparams != c->g.f->nparams || c->g.narrays > 2 * TACK_MAX_PARAMS)
        return backend_error(err, TACK_ERR_INTERNAL,
                             "internal error: kernel '%s': a launch with %d arguments for code "
                             "built for %d",
                             name, call->nparams, c->g.f->nparams);
    tack_status st = hip_enter(b, err);
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
    /* print(): a record buffer for this launch, its header written first
     * (gpu/print_buf.c); its lines are written after the launch. */
    void *pbuf = NULL;
    uint32_t pcap = 0;
    if (c->g.prints.n) {
        uint32_t header[GPU_PRINT_HEADER];
        pcap = gpu_print_capacity();
        gpu_print_header(header, pcap);
        hipError_t r = b->hip->Malloc(&pbuf, 4 * ((size_t)GPU_PRINT_HEADER + pcap));
        if (r == hipSuccess)
            r = b->hip->MemcpyHtoDAsync((hipDeviceptr_t)pbuf, header, sizeof header, b->stream);
        if (r == hipSuccess) r = b->hip->StreamSynchronize(b->stream);
        if (r != hipSuccess) {
            if (pbuf) b->hip->Free(pbuf);
            char what[160];
            snprintf(what, sizeof what, "kernel '%s'", name);
            return hip_fail(b->hip, err, what, "the print buffer", r);
        }
        params[n++] = &pbuf;
    }
    st = launch_and_wait(b, c, name, params, ninner, count, inner0, inner1, err);
    if (pbuf) {
        if (st == TACK_OK) st = print_lines(b, c, name, pbuf, pcap, err);
        b->hip->Free(pbuf);
    }
    return st;
}

/* The records of a printing launch back, formatted in whole lines. */
static tack_status print_lines(backend *b, backend_code *c, const char *name, void *pbuf,
                               uint32_t pcap, tack_error *err) {
    uint32_t header[GPU_PRINT_HEADER];
    hipError_t r = b->hip->MemcpyDtoHAsync(header, (hipDeviceptr_t)pbuf, sizeof header, b->stream);
    if (r == hipSuccess) r = b->hip->StreamSynchronize(b->stream);
    size_t used = header[GPU_PRINT_OFFSET] < pcap ? header[GPU_PRINT_OFFSET] : pcap;
    uint32_t *all = r == hipSuccess ? malloc(4 * (GPU_PRINT_HEADER + used)) : NULL;
    if (r == hipSuccess && !all)
        return backend_error(err, TACK_ERR_NOMEM, "kernel '%s': out of memory reading its print()s",
                             name);
    if (r == hipSuccess) {
        memcpy(all, header, sizeof header);
        if (used)
            r = b->hip->MemcpyDtoHAsync(all + GPU_PRINT_HEADER,
                                        (hipDeviceptr_t)((char *)pbuf + sizeof header), 4 * used,
                                        b->stream);
        if (r == hipSuccess) r = b->hip->StreamSynchronize(b->stream);
        if (r == hipSuccess) gpu_print_output(&c->g.prints, name, all);
        free(all);
    }
    if (r != hipSuccess) {
        char what[160];
        snprintf(what, sizeof what, "kernel '%s'", name);
        return hip_fail(b->hip, err, what, "reading the print buffer", r);
    }
    return TACK_OK;
}

static tack_status launch_and_wait(backend *b, backend_code *c, const char *name, void **params,
                                   int ninner, int64_t count, int64_t inner0, int64_t inner1,
                                   tack_error *err) {
    unsigned grid[3], block[3];
    hip_grid(b, ninner, count, inner0, inner1, grid, block);
    if (c->g.f->collective && block[0] != IR_WORKGROUP)
        return backend_error(err, TACK_ERR_DEVICE, "kernel '%s' needs blocks of %d threads; %s allows %u",
                             name, IR_WORKGROUP, b->description, block[0]);
    char what[160];
    snprintf(what, sizeof what, "kernel '%s'", name);
    hipError_t r = b->hip->ModuleLaunchKernel(c->fn, grid[0], grid[1], grid[2], block[0],
                                              block[1], block[2], 0, b->stream, params, NULL);
    if (r != hipSuccess) return hip_fail(b->hip, err, what, "hipModuleLaunchKernel", r);
    /* The call returns finished; a fault the kernel raised surfaces here. */
    if ((r = b->hip->StreamSynchronize(b->stream)) != hipSuccess)
        return hip_fail(b->hip, err, what, "hipStreamSynchronize", r);
    return TACK_OK;
}
