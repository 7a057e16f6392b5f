/* launch.c - one dispatch: the pack by value and one buffer per array
 * parameter as the kernel's arguments (gpu.h's order), a global size that
 * covers the range or strides over it, and a wait for completion.
 *
 * Setting arguments mutates the cl_kernel, so launches of one code object
 * are serialized by the runtime (caps.locked_dispatch); the queue itself is
 * thread-safe, so launches of different variants only share the device. */
#include "opencl.h"

#include <stdio.h>

#include "backend/gpu/gpu.h"

int opencl_grid(const backend *b, int ninner, int64_t count, int64_t inner0, int64_t inner1,
                size_t g[3]) {
    int64_t cap = b->launch_items;
    int64_t g0 = count < cap ? count : cap;
    /* With no local size given, a driver picks a work-group size that
     * divides the global one: a prime count would give groups of one.  A
     * multiple of 64 divides well; the extra items find no work. */
    if (g0 > 64) g0 = (g0 + 63) / 64 * 64;
    /* The outer loop gets the parallelism first (it is the long one); the
     * inner extents share what is left of the cap. */
    int64_t left = cap / g0 > 0 ? cap / g0 : 1;
    int64_t g1 = 1, g2 = 1;
    if (ninner >= 1) {
        g1 = inner0 < left ? inner0 : left;
        left = left / g1 > 0 ? left / g1 : 1;
    }
    if (ninner >= 2) g2 = inner1 < left ? inner1 : left;
    g[0] = (size_t)g0;
    g[1] = (size_t)g1;
    g[2] = (size_t)g2;
    return 1 + (ninner > 2 ? 2 : ninner);
}

static tack_status call_fail(tack_error *err, const char *kernel_name, const char *call,
                             cl_int code) {
    char what[160];
    snprintf(what, sizeof what, "kernel '%s'", kernel_name);
    return opencl_fail(err, what, call, code);
}

tack_status opencl_launch_pack(backend *b, backend_code *c, const backend_call *call,
                               const int64_t *pack, tack_error *err) {
    const opencl_api *cl = b->cl;
    const char *name = call->kernel_name ? call->kernel_name : c->f->name;
    int ninner = c->f->ninner;
    int64_t count = pack[GPU_PACK_COUNT];
    int64_t inner0 = pack[GPU_PACK_INNER0], inner1 = pack[GPU_PACK_INNER1];
    /* Nothing to run: no work item would find an iteration. */
    if (count <= 0 || (ninner >= 1 && inner0 <= 0) || (ninner >= 2 && inner1 <= 0))
        return TACK_OK;
    if (call->nparams != c->f->nparams) {
        err->status = TACK_ERR_INTERNAL;
        err->filename[0] = 0;
        err->lineno = err->col = 0;
        snprintf(err->message, sizeof err->message,
                 "internal error: kernel '%s': a launch with %d arguments for code built for %d",
                 name, call->nparams, c->f->nparams);
        return TACK_ERR_INTERNAL;
    }
    cl_int e = cl->SetKernelArg(c->kernel, 0, (size_t)c->pack_words * sizeof *pack, pack);
    if (e != CL_SUCCESS) return call_fail(err, name, "clSetKernelArg(0, the scalar pack)", e);
    for (int a = 0; a < c->narrays; a++) {
        int p = c->arrays[a];
        cl_mem m = (cl_mem)(uintptr_t)call->slots[p];
        if (!m) m = b->dummy; /* an empty array: any valid buffer, never read */
        e = cl->SetKernelArg(c->kernel, (cl_uint)(1 + a), sizeof m, &m);
        if (e != CL_SUCCESS) {
            char what[160];
            snprintf(what, sizeof what, "clSetKernelArg(%d, array '%s')", 1 + a,
                     c->f->params[p].name ? c->f->params[p].name : "?");
            return call_fail(err, name, what, e);
        }
    }
    size_t g[3], group[1] = {IR_WORKGROUP};
    int dims = opencl_grid(b, ninner, count, inner0, inner1, g);
    /* A collective kernel's groups are exactly the language's workgroups
     * (its launches are 1-D and whole groups; a short grid strides). */
    if (c->f->collective) g[0] = g[0] < IR_WORKGROUP ? IR_WORKGROUP : g[0] / IR_WORKGROUP * IR_WORKGROUP;
    e = cl->EnqueueNDRangeKernel(b->queue, c->kernel, (cl_uint)dims, NULL, g,
                                 c->f->collective ? group : NULL, 0, NULL, NULL);
    if (e != CL_SUCCESS) return call_fail(err, name, "clEnqueueNDRangeKernel", e);
    /* The call returns finished (the runtime's contract); an error the
     * kernel's execution raised surfaces here. */
    e = cl->Finish(b->queue);
    if (e != CL_SUCCESS) return call_fail(err, name, "clFinish", e);
    return TACK_OK;
}
