/* launch.c - one dispatch: a command buffer from the device's queue and a
 * compute encoder; the pack's words with setBytes at buffer index 0 (the
 * kernel's `constant` pack), each array's MTLBuffer at 1, 2, ... (the
 * dialect's [[buffer(n)]], in parameter order); dispatchThreads with
 * threadgroups of 256, the innermost extent on consecutive lanes; commit
 * and a wait.  setBytes copies the pack, so nothing the launch passes
 * outlives it and launches need no lock but the device's, held while
 * encoding and committing. */
#include "metal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/gpu/gpu.h"

#define THREADS 256 /* per threadgroup: the language's workgroup */
/* Threads in a grid at most: enough to fill any Apple GPU many times over,
 * and far inside the 32-bit grid positions; past it threads stride (the
 * dialect's grid-stride loops). */
#define MAX_GRID_THREADS ((int64_t)1 << 24)

static int64_t pow2_at_least(int64_t v, int64_t cap) {
    int64_t p = 1;
    while (p < v && p * 2 <= cap) p *= 2;
    return p;
}

static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }
static int64_t round_up(int64_t v, int64_t m) { return (v + m - 1) / m * m; }

void metal_grid(const backend *b, int ninner, int64_t count, int64_t inner0, int64_t inner1,
                uint64_t group_cap, int uniform, metal_size *grid, metal_size *group) {
    int dims = 1 + (ninner > 2 ? 2 : ninner);
    int64_t ext[3] = {count, 1, 1};
    if (dims == 2) ext[0] = inner0, ext[1] = count;
    if (dims == 3) ext[0] = inner1, ext[1] = inner0, ext[2] = count;
    const uint64_t dim_max[3] = {b->max_threads.width, b->max_threads.height,
                                 b->max_threads.depth};
    /* A pipeline may allow fewer threads a group than 256 (many
     * registers): the largest power of two it allows. */
    int64_t threads = pow2_at_least(THREADS, group_cap < THREADS ? (int64_t)group_cap : THREADS);
    int64_t budget = MAX_GRID_THREADS;
    int64_t g[3] = {1, 1, 1}, t[3] = {1, 1, 1};
    for (int d = 0; d < dims; d++) {
        int64_t cap = min64(threads, dim_max[d] > (uint64_t)THREADS ? THREADS : (int64_t)dim_max[d]);
        /* Lanes along the inner extents as far as they go, what is left of
         * the group along the outer range. */
        t[d] = d == dims - 1 ? pow2_at_least(cap, cap) : pow2_at_least(ext[d], cap);
        threads = threads / t[d] > 0 ? threads / t[d] : 1;
        g[d] = min64(ext[d], budget > 0 ? budget : 1);
        if (uniform) g[d] = round_up(g[d], t[d]);
        budget = budget / g[d];
    }
    grid->width = (uint64_t)g[0], grid->height = (uint64_t)g[1], grid->depth = (uint64_t)g[2];
    group->width = (uint64_t)t[0], group->height = (uint64_t)t[1], group->depth = (uint64_t)t[2];
}

tack_status metal_launch_pack(backend *b, backend_code *c, const backend_call *call,
                              const int64_t *pack, tack_error *err) {
    const metal_objc_api *o = b->objc;
    const metal_sels *s = &b->s;
    gpu_launch_shape sh;
    int go = gpu_launch_begin(&c->g, call, pack, 0, 0, &sh, err);
    if (go) return go > 0 ? TACK_OK : err->status;
    const char *name = sh.name;
    /* Collective kernels need whole threadgroups of exactly 256. */
    int collective = c->g.f->collective;
    metal_size grid, group;
    metal_grid(b, sh.ninner, sh.count, sh.inner0, sh.inner1, c->max_threads,
               !b->nonuniform || collective, &grid, &group);
    if (collective && group.width != IR_WORKGROUP)
        return backend_error(err, TACK_ERR_DEVICE,
                             "kernel '%s' needs threadgroups of %d threads; %s allows %llu for it",
                             name, IR_WORKGROUP, b->description,
                             (unsigned long long)(c->max_threads < b->max_threads.width
                                                      ? c->max_threads
                                                      : b->max_threads.width));
    /* print(): a record buffer for this launch, its lines written after
     * it (gpu/driver.c). */
    void *pbuf;
    uint32_t pcap;
    tack_status st = gpu_print_begin(b, &backend_metal, &c->g, &pbuf, &pcap, err);
    if (st) return st;
    void *pool = o->pool_push();
    pthread_mutex_lock(&b->lock);
    objc_id cb = o->id(b->queue, s->command_buffer);
    objc_id enc = cb ? o->id(cb, s->compute_encoder) : NULL;
    if (!enc) {
        pthread_mutex_unlock(&b->lock);
        st = backend_error(err, TACK_ERR_DEVICE, "kernel '%s': %s: %s failed", name,
                           b->description, cb ? "computeCommandEncoder" : "commandBuffer");
        goto done;
    }
    o->v_id(enc, s->set_pipeline, c->pipeline);
    o->v_ptr_u64_u64(enc, s->set_bytes, pack, (uint64_t)gpu_pack_words(c->g.f) * sizeof *pack, 0);
    for (int a = 0; a < c->g.narrays; a++)
        o->v_id_u64_u64(enc, s->set_buffer, (objc_id)(uintptr_t)call->slots[c->g.arrays[a]], 0,
                        (uint64_t)(1 + a));
    if (pbuf) o->v_id_u64_u64(enc, s->set_buffer, (objc_id)pbuf, 0, (uint64_t)(1 + c->g.narrays));
    if (b->nonuniform) {
        o->v_size_size(enc, s->dispatch_threads, grid, group);
    } else {
        metal_size groups = {grid.width / group.width, grid.height / group.height,
                             grid.depth / group.depth};
        o->v_size_size(enc, s->dispatch_groups, groups, group);
    }
    o->v(enc, s->end_encoding);
    o->v(cb, s->commit);
    pthread_mutex_unlock(&b->lock);
    /* The call returns finished (the runtime's contract); a fault the
     * kernel raised is the command buffer's status. */
    o->v(cb, s->wait);
    uint64_t status = o->u64(cb, s->status);
    if (status != METAL_STATUS_COMPLETED) {
        const char *why = metal_error_text(b, o->id(cb, s->error));
        st = backend_error(err, TACK_ERR_DEVICE,
                           "kernel '%s': its command buffer on %s failed (status %llu): %s", name,
                           b->name, (unsigned long long)status,
                           why ? why : "no reason given");
    }
done:
    o->pool_pop(pool);
    return gpu_print_end(b, &backend_metal, &c->g, name, pbuf, pcap, st, err);
}
