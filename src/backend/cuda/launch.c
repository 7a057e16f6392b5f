/* launch.c - one dispatch: the pack by value, one device pointer per
 * array parameter and one texture object per texture sampled in hardware
 * as the kernel's parameters (gpu.h's order), a grid that covers the range
 * or strides over it, queued on the device's stream, and a wait for it.
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

static int64_t pow2_at_least(int64_t v, int64_t cap) {
    int64_t p = 1;
    while (p < v && p < cap) p *= 2;
    return p;
}

static int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

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
        int64_t cap = min64(threads, b->max_block[d]), bd = 1, gd = 1;
        if (d < dims) {
            bd = d == dims - 1 ? cap : pow2_at_least(ext[d], cap);
            if (bd < 1) bd = 1;
            gd = min64(min64(cdiv(ext[d], bd), b->max_grid_dim[d]), budget);
            if (gd < 1) gd = 1;
        }
        threads = threads / bd > 0 ? threads / bd : 1;
        budget = budget / gd > 0 ? budget / gd : 1;
        block[d] = (unsigned)bd;
        grid[d] = (unsigned)gd;
    }
}

static tack_status launch_and_wait(backend *b, backend_code *c, const char *name, void **params,
                                   int ninner, int64_t count, int64_t inner0, int64_t inner1,
                                   const backend_call *call, tack_error *err);
static tack_status cuda_print_lines(backend *b, backend_code *c, const char *name, CUdeviceptr pbuf,
                                    uint32_t pcap, tack_error *err);

static tack_status nomem_print(tack_error *err, const char *name) {
    err->status = TACK_ERR_NOMEM;
    snprintf(err->message, sizeof err->message, "kernel '%s': out of memory reading its print()s",
             name);
    return TACK_ERR_NOMEM;
}

tack_status cuda_launch_pack(backend *b, backend_code *c, const backend_call *call,
                             const int64_t *pack, tack_error *err) {
    const char *name = call->kernel_name ? call->kernel_name : c->f->name;
    int ninner = c->f->ninner;
    int64_t count = pack[GPU_PACK_COUNT];
    int64_t inner0 = pack[GPU_PACK_INNER0], inner1 = pack[GPU_PACK_INNER1];
    /* Nothing to run: no thread would find an iteration. */
    if (count <= 0 || (ninner >= 1 && inner0 <= 0) || (ninner >= 2 && inner1 <= 0))
        return TACK_OK;
    if (call->nparams != c->f->nparams || c->narrays + c->ntextures > 2 * TACK_MAX_PARAMS) {
        err->status = TACK_ERR_INTERNAL;
        err->filename[0] = 0;
        err->lineno = err->col = 0;
        snprintf(err->message, sizeof err->message,
                 "internal error: kernel '%s': a launch with %d arguments for code built for %d",
                 name, call->nparams, c->f->nparams);
        return TACK_ERR_INTERNAL;
    }
    tack_status st = cuda_enter(b, err);
    if (st) return st;
    /* kernelParams[i] points at parameter i's value: the pack's words, then
     * each array's device pointer (the slot is the cuMemAlloc handle), then
     * each hardware texture's object. */
    CUdeviceptr ptrs[2 * TACK_MAX_PARAMS];
    CUtexObject texs[2 * TACK_MAX_PARAMS];
    void *params[2 + 2 * TACK_MAX_PARAMS]; /* the pack, arrays, textures, print buffer */
    int n = 0;
    params[n++] = (void *)pack;
    for (int a = 0; a < c->narrays; a++) {
        ptrs[a] = (CUdeviceptr)call->slots[c->arrays[a]];
        params[n++] = &ptrs[a];
    }
    for (int t = 0; t < c->ntextures; t++) {
        int p = c->textures[t];
        if ((st = cuda_texture_get(b, (CUdeviceptr)call->slots[p], call->dims[p], name,
                                   c->f->params[p].name, &texs[t], err)))
            return st;
        params[n++] = &texs[t];
    }
    /* print(): a record buffer for this launch, its header written first
     * (gpu/print_buf.c); its lines are written after the launch. */
    CUdeviceptr pbuf = 0;
    uint32_t pcap = 0;
    if (c->prints.n) {
        uint32_t header[GPU_PRINT_HEADER];
        pcap = gpu_print_capacity();
        gpu_print_header(header, pcap);
        CUresult r = b->cu->MemAlloc(&pbuf, 4 * ((size_t)GPU_PRINT_HEADER + pcap));
        if (r == CUDA_SUCCESS)
            r = b->cu->MemcpyHtoDAsync(pbuf, header, sizeof header, b->stream);
        if (r == CUDA_SUCCESS) r = b->cu->StreamSynchronize(b->stream);
        if (r != CUDA_SUCCESS) {
            if (pbuf) b->cu->MemFree(pbuf);
            char what[160];
            snprintf(what, sizeof what, "kernel '%s'", name);
            return cuda_fail(b->cu, err, what, "the print buffer", r);
        }
        params[n++] = &pbuf;
    }
    st = launch_and_wait(b, c, name, params, ninner, count, inner0, inner1, call, err);
    if (pbuf) {
        if (st == TACK_OK) st = cuda_print_lines(b, c, name, pbuf, pcap, err);
        b->cu->MemFree(pbuf);
    }
    return st;
}

/* The records of a printing launch back, formatted in whole lines. */
static tack_status cuda_print_lines(backend *b, backend_code *c, const char *name, CUdeviceptr pbuf,
                                    uint32_t pcap, tack_error *err) {
    uint32_t header[GPU_PRINT_HEADER];
    CUresult r = b->cu->MemcpyDtoHAsync(header, pbuf, sizeof header, b->stream);
    if (r == CUDA_SUCCESS) r = b->cu->StreamSynchronize(b->stream);
    size_t used = header[GPU_PRINT_OFFSET] < pcap ? header[GPU_PRINT_OFFSET] : pcap;
    uint32_t *all = r == CUDA_SUCCESS ? malloc(4 * (GPU_PRINT_HEADER + used)) : NULL;
    if (r == CUDA_SUCCESS && !all) return nomem_print(err, name);
    if (r == CUDA_SUCCESS) {
        memcpy(all, header, sizeof header);
        if (used) r = b->cu->MemcpyDtoHAsync(all + GPU_PRINT_HEADER, pbuf + sizeof header, 4 * used,
                                             b->stream);
        if (r == CUDA_SUCCESS) r = b->cu->StreamSynchronize(b->stream);
        if (r == CUDA_SUCCESS) gpu_print_output(&c->prints, name, all);
        free(all);
    }
    if (r != CUDA_SUCCESS) {
        char what[160];
        snprintf(what, sizeof what, "kernel '%s'", name);
        return cuda_fail(b->cu, err, what, "reading the print buffer", r);
    }
    return TACK_OK;
}

static tack_status launch_and_wait(backend *b, backend_code *c, const char *name, void **params,
                                   int ninner, int64_t count, int64_t inner0, int64_t inner1,
                                   const backend_call *call, tack_error *err) {
    unsigned grid[3], block[3];
    cuda_grid(b, ninner, count, inner0, inner1, grid, block);
    if (c->f->collective && block[0] != IR_WORKGROUP) {
        err->status = TACK_ERR_DEVICE;
        snprintf(err->message, sizeof err->message,
                 "kernel '%s' needs blocks of %d threads; this device allows %u", name,
                 IR_WORKGROUP, block[0]);
        return TACK_ERR_DEVICE;
    }
    char what[160];
    CUresult r = b->cu->LaunchKernel(c->fn, grid[0], grid[1], grid[2], block[0], block[1],
                                     block[2], 0, b->stream, params, NULL);
    if (r != CUDA_SUCCESS) {
        snprintf(what, sizeof what, "kernel '%s'", name);
        return cuda_fail(b->cu, err, what, "cuLaunchKernel", r);
    }
    /* Textures over what the kernel stores to are stale once it ran; their
     * refresh is queued after it on the stream. */
    for (int w = 0; w < c->nwritten; w++)
        cuda_texture_written(b, (CUdeviceptr)call->slots[c->written[w]]);
    /* The call returns finished (the runtime's contract); a fault the
     * kernel's execution raised surfaces here. */
    if ((r = b->cu->StreamSynchronize(b->stream)) != CUDA_SUCCESS) {
        snprintf(what, sizeof what, "kernel '%s'", name);
        return cuda_fail(b->cu, err, what, "cuStreamSynchronize", r);
    }
    return TACK_OK;
}
