/* launch.c - one dispatch: the pack by value (argument 0) and one device
 * pointer per array parameter (gpu.h's order) set on the variant's kernel
 * object (the runtime holds the variant's lock: locked_dispatch), group
 * sizes that put the innermost extent on consecutive lanes, and one append
 * to the device's immediate command list under its lock; it returns once
 * queued (or finished, on a synchronous list: level_zero.h). */
#include "level_zero.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/gpu/gpu.h"

#define ITEMS 256 /* per group: the language's workgroup, 16 lanes x 16 */

void l0_groups(const backend *b, int ninner, int64_t count, int64_t inner0, int64_t inner1,
               uint32_t groups[3], uint32_t size[3]) {
    /* As HIP's grids (gpu/driver.c); the groups fill each EU a few times
     * over. */
    int max_size[3];
    int64_t max_groups[3];
    for (int d = 0; d < 3; d++) {
        max_size[d] = (int)b->max_group[d];
        max_groups[d] = b->max_groups[d];
    }
    gpu_grid_strided(ITEMS, max_size, max_groups, (int64_t)b->eu_count * 8, ninner, count, inner0,
                     inner1, groups, size);
}

static tack_status launch(backend *b, backend_code *c, const char *kname, const char *what,
                          int ninner, int64_t count,
                          int64_t inner0, int64_t inner1, tack_error *err);

tack_status l0_launch_pack(backend *b, backend_code *c, const backend_call *call,
                           const int64_t *pack, tack_error *err) {
    const ze_api *ze = b->ze;
    gpu_launch_shape sh;
    int go = gpu_launch_begin(&c->g, call, pack, 0, 0, &sh, err);
    if (go) return go > 0 ? TACK_OK : err->status;
    const char *name = sh.name;
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
    /* print(): a record buffer for this launch, its lines written after
     * it (gpu/driver.c). */
    void *pbuf;
    uint32_t pcap;
    tack_status st = gpu_print_begin(b, &backend_level_zero, &c->g, &pbuf, &pcap, err);
    if (st) return st;
    if (pbuf && (r = ze->KernelSetArgumentValue(c->kernel, (uint32_t)(1 + c->g.narrays),
                                                sizeof pbuf, &pbuf)) != ZE_RESULT_SUCCESS) {
        st = l0_fail(err, what, "zeKernelSetArgumentValue(the print buffer)", r);
        l0_mem_free(b, pbuf);
        return st;
    }
    st = launch(b, c, name, what, sh.ninner, sh.count, sh.inner0, sh.inner1, err);
    return gpu_print_end(b, &backend_level_zero, &c->g, name, pbuf, pcap, st, err);
}

static tack_status launch(backend *b, backend_code *c, const char *kname, const char *what,
                          int ninner, int64_t count,
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
    /* Noted under the lock, so that a wait's mark covers it exactly. */
    if (r == ZE_RESULT_SUCCESS && b->queued) gpu_queue_note(&b->queue, kname);
    pthread_mutex_unlock(&b->lock);
    /* A synchronous list's fault surfaces here; a queued one's at the
     * next wait. */
    if (r != ZE_RESULT_SUCCESS) return l0_fail(err, what, "zeCommandListAppendLaunchKernel", r);
    return TACK_OK;
}
