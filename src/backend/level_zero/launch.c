/* launch.c - one dispatch: the pack by value (argument 0) and one device
 * pointer per array parameter (gpu.h's order) set on the variant's kernel
 * object (the runtime holds the variant's lock: locked_dispatch), group
 * sizes that put the innermost extent on consecutive lanes, and one append
 * to the device's synchronous immediate command list under its lock; it
 * returns when the kernel has finished. */
#include "level_zero.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/gpu/gpu.h"

#define ITEMS 256 /* per group: the language's workgroup, 16 lanes x 16 */

static int64_t pow2_at_least(int64_t v, int64_t cap) {
    int64_t p = 1;
    while (p < v && p < cap) p *= 2;
    return p;
}

static int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

void l0_groups(const backend *b, int ninner, int64_t count, int64_t inner0, int64_t inner1,
               uint32_t groups[3], uint32_t size[3]) {
    /* As CUDA's and HIP's grids: items along the inner extents first, the
     * rest along the outer range; the groups fill each EU a few times
     * over, past which items stride. */
    int64_t sx = ITEMS, sy = 1, sz = 1;
    if (ninner == 1) {
        sy = pow2_at_least(inner0, min64(ITEMS, b->max_group[1]));
        sx = ITEMS / sy;
    } else if (ninner >= 2) {
        sz = pow2_at_least(inner1, min64(64, b->max_group[2]));
        sy = pow2_at_least(inner0, min64(ITEMS / sz, b->max_group[1]));
        sx = ITEMS / (sy * sz);
    }
    if (sx > b->max_group[0]) sx = b->max_group[0];
    int64_t budget = (int64_t)b->eu_count * 8;
    int64_t gy = ninner >= 1 ? min64(cdiv(inner0, sy), b->max_groups[1]) : 1;
    int64_t gz = ninner >= 2 ? min64(cdiv(inner1, sz), b->max_groups[2]) : 1;
    if (gy > budget) gy = budget;
    if (gz > budget / gy) gz = budget / gy > 0 ? budget / gy : 1;
    int64_t left = budget / (gy * gz) > 0 ? budget / (gy * gz) : 1;
    int64_t gx = min64(min64(cdiv(count, sx), left), b->max_groups[0]);
    groups[0] = (uint32_t)(gx > 0 ? gx : 1);
    groups[1] = (uint32_t)gy;
    groups[2] = (uint32_t)gz;
    size[0] = (uint32_t)sx;
    size[1] = (uint32_t)sy;
    size[2] = (uint32_t)sz;
}

static tack_status launch(backend *b, backend_code *c, const char *what, int ninner, int64_t count,
                          int64_t inner0, int64_t inner1, tack_error *err);

tack_status l0_launch_pack(backend *b, backend_code *c, const backend_call *call,
                           const int64_t *pack, tack_error *err) {
    const ze_api *ze = b->ze;
    const char *name = call->kernel_name ? call->kernel_name : c->g.f->name;
    int ninner = c->g.f->ninner;
    int64_t count = pack[GPU_PACK_COUNT];
    int64_t inner0 = pack[GPU_PACK_INNER0], inner1 = pack[GPU_PACK_INNER1];
    if (count <= 0 || (ninner >= 1 && inner0 <= 0) || (ninner >= 2 && inner1 <= 0))
        return TACK_OK;
    if (call->nparams != c->g.f->nparams)
        return backend_error(err, TACK_ERR_INTERNAL,
                             "internal error: kernel '%s': a launch with %d arguments for code "
                             "built for %d",
                             name, call->nparams, c->g.f->nparams);
    char what[160], call_name[192];
    snprintf(what, sizeof what, "kernel '%s'", name);
    ze_result_t r = ze->KernelSetArgumentValue(c->kernel, 0,
                                               (size_t)gpu_pack_words(c->g.f) * sizeof *pack, pack);
    if (r != ZE_RESULT_SUCCESS)
        return l0_fail(err, what, "zeKernelSetArgumentValue(0, the scalar pack)", r);
    for (int a = 0; a < c->g.narrays; a++) {
        void *ptr = (void *)(uintptr_t)call->slots[c->g.arrays[a]];
        if ((r = ze->KernelSetArgumentValue(c->kernel, (uint32_t)(1 + a), sizeof ptr, &ptr)) !=
            ZE_RESULT_SUCCESS) {
            const char *pn = c->g.f->params[c->g.arrays[a]].name;
            snprintf(call_name, sizeof call_name, "zeKernelSetArgumentValue(%d, array '%s')", 1 + a,
                     pn ? pn : "?");
            return l0_fail(err, what, call_name, r);
        }
    }
    /* print(): a record buffer for this launch, its header written first
     * (gpu/print_buf.c); its lines are written after the launch. */
    void *pbuf = NULL;
    uint32_t pcap = 0;
    if (c->g.prints.n) {
        uint32_t header[GPU_PRINT_HEADER];
        pcap = gpu_print_capacity();
        gpu_print_header(header, pcap);
        tack_status st = l0_mem_alloc(b, 4 * ((size_t)GPU_PRINT_HEADER + pcap), &pbuf, err);
        if (!st) st = l0_mem_write(b, pbuf, 0, header, sizeof header, err);
        if (!st && (r = ze->KernelSetArgumentValue(c->kernel, (uint32_t)(1 + c->g.narrays),
                                                    sizeof pbuf, &pbuf)) != ZE_RESULT_SUCCESS)
            st = l0_fail(err, what, "zeKernelSetArgumentValue(the print buffer)", r);
        if (st) {
            if (pbuf) l0_mem_free(b, pbuf);
            return st;
        }
    }
    tack_status st = launch(b, c, what, ninner, count, inner0, inner1, err);
    if (pbuf) {
        if (!st) {
            uint32_t header[GPU_PRINT_HEADER];
            st = l0_mem_read(b, pbuf, 0, header, sizeof header, err);
            size_t used = header[GPU_PRINT_OFFSET] < pcap ? header[GPU_PRINT_OFFSET] : pcap;
            uint32_t *all = st ? NULL : malloc(4 * (GPU_PRINT_HEADER + used));
            if (!st && !all)
                st = backend_error(err, TACK_ERR_NOMEM, "%s: out of memory reading its print()s",
                                   what);
            if (all) {
                memcpy(all, header, sizeof header);
                if (used) st = l0_mem_read(b, pbuf, sizeof header, all + GPU_PRINT_HEADER, 4 * used, err);
                if (!st) gpu_print_output(&c->g.prints, name, all);
                free(all);
            }
        }
        l0_mem_free(b, pbuf);
    }
    return st;
}

static tack_status launch(backend *b, backend_code *c, const char *what, int ninner, int64_t count,
                          int64_t inner0, int64_t inner1, tack_error *err) {
    const ze_api *ze = b->ze;
    const char *name = c->g.f->name;
    ze_result_t r;
    uint32_t groups[3], size[3];
    l0_groups(b, ninner, count, inner0, inner1, groups, size);
    /* A collective kernel's groups are exactly the language's workgroups. */
    if (c->g.f->collective && size[0] != IR_WORKGROUP)
        return backend_error(err, TACK_ERR_DEVICE, "kernel '%s' needs groups of %d items; %s allows %u",
                             name, IR_WORKGROUP, b->description, size[0]);
    if ((r = ze->KernelSetGroupSize(c->kernel, size[0], size[1], size[2])) != ZE_RESULT_SUCCESS)
        return l0_fail(err, what, "zeKernelSetGroupSize", r);
    ze_group_count_t g = {groups[0], groups[1], groups[2]};
    pthread_mutex_lock(&b->lock);
    r = ze->CommandListAppendLaunchKernel(b->list, c->kernel, &g, NULL, 0, NULL);
    pthread_mutex_unlock(&b->lock);
    /* The list is synchronous: a fault the kernel raised surfaces here. */
    if (r != ZE_RESULT_SUCCESS) return l0_fail(err, what, "zeCommandListAppendLaunchKernel", r);
    return TACK_OK;
}
