/* launch.c - one dispatch: the pack by value and one buffer per array
 * parameter as the kernel's arguments (gpu.h's order), a global size that
 * covers the range (in pieces past a launch's cap), queued on the call's
 * queue; a printing kernel then waits and prints its record buffer's lines.
 *
 * Nothing a queued launch reads is ours to overwrite: clSetKernelArg copies
 * the pack and the buffer handles when it is called, and the print buffer
 * (one per code object) is reused only after its launch was waited for.
 *
 * Setting arguments mutates the cl_kernel, so launches of one code object
 * are serialized by the runtime (caps.locked_dispatch); the queue itself is
 * thread-safe, so launches of different variants only share the device. */
#include "opencl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/gpu/gpu.h"

static int64_t round_up(int64_t n, int64_t m) { return (n + m - 1) / m * m; }

void opencl_grid(const backend *b, int ninner, int64_t count, int64_t inner0, int64_t inner1,
                 opencl_ndrange *r) {
    int dims = 1 + (ninner > 2 ? 2 : ninner);
    /* Dimension 0 is the innermost index (gpu.h), the last the outer range. */
    int64_t ext[3] = {count, 1, 1};
    if (dims == 2) ext[0] = inner0, ext[1] = count;
    if (dims == 3) ext[0] = inner1, ext[1] = inner0, ext[2] = count;
    int64_t cap = b->launch_items > 0 ? b->launch_items : 1, below = 1;
    r->dims = dims;
    for (int d = 0; d < 3; d++) {
        r->extent[d] = d < dims ? ext[d] : 1;
        /* With no local size given, a driver picks a work-group size that
         * divides the global one: a prime size would give groups of one
         * item.  A size rounded to a multiple of m, with at least 64 items
         * across it and the dimensions below, divides well; the extra items
         * fail the kernel's bound check.  Short extents stay exact. */
        int64_t m = 1;
        while (below * m < 64) m *= 2;
        if (r->extent[d] <= m) m = 1;
        /* What is left of the cap per launch; past it the range is covered
         * in pieces, each a multiple of m so that none overlaps the next. */
        int64_t left = cap / below > 0 ? cap / below : 1;
        int64_t piece = left / m * m > 0 ? left / m * m : m;
        r->multiple[d] = m;
        r->piece[d] = r->extent[d] <= piece ? round_up(r->extent[d], m) : piece;
        below *= r->piece[d];
    }
}

#define ROW_GROUP 64
#define REDUCTION_GROUPS 4096

static tack_status call_fail(tack_error *err, const char *kernel_name, const char *call,
                             cl_int code) {
    char what[160];
    snprintf(what, sizeof what, "kernel '%s'", kernel_name);
    return opencl_fail(err, what, call, code);
}

/* After a printing launch: the records back, formatted in whole lines. */
static tack_status print_lines(backend *b, cl_command_queue q, backend_code *c, const char *name,
                               tack_error *err) {
    const opencl_api *cl = b->cl;
    uint32_t header[GPU_PRINT_HEADER];
    cl_int e = cl->EnqueueReadBuffer(q, c->print_buf, CL_TRUE, 0, sizeof header, header, 0,
                                     NULL, NULL);
    if (e != CL_SUCCESS) return call_fail(err, name, "clEnqueueReadBuffer(the print buffer)", e);
    size_t used = header[GPU_PRINT_OFFSET] < c->print_cap ? header[GPU_PRINT_OFFSET] : c->print_cap;
    uint32_t *all = malloc(4 * (GPU_PRINT_HEADER + used));
    if (!all) {
        err->status = TACK_ERR_NOMEM;
        snprintf(err->message, sizeof err->message, "kernel '%s': out of memory reading its print()s",
                 name);
        return TACK_ERR_NOMEM;
    }
    memcpy(all, header, sizeof header);
    if (used)
        e = cl->EnqueueReadBuffer(q, c->print_buf, CL_TRUE, sizeof header, 4 * used,
                                  all + GPU_PRINT_HEADER, 0, NULL, NULL);
    if (e == CL_SUCCESS) gpu_print_output(&c->prints, name, all);
    free(all);
    if (e != CL_SUCCESS) return call_fail(err, name, "clEnqueueReadBuffer(the print buffer)", e);
    return TACK_OK;
}

tack_status opencl_launch_pack(backend *b, backend_code *c, const backend_call *call,
                               const int64_t *pack, tack_error *err) {
    const opencl_api *cl = b->cl;
    const char *name = call->kernel_name ? call->kernel_name : c->f->name;
    opencl_queue *oq = opencl_queue_of(b, call->queue);
    cl_command_queue q = oq->q;
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
    if (c->prints.n) {
        /* print(): the record buffer, its header reset for this launch. */
        uint32_t cap = gpu_print_capacity(), header[GPU_PRINT_HEADER];
        if (c->print_buf && cap != c->print_cap) {
            cl->ReleaseMemObject(c->print_buf);
            c->print_buf = NULL;
        }
        if (!c->print_buf) {
            c->print_buf = cl->CreateBuffer(b->context, CL_MEM_READ_WRITE,
                                            4 * ((size_t)GPU_PRINT_HEADER + cap), NULL, &e);
            if (e != CL_SUCCESS || !c->print_buf) {
                if (c->print_buf) cl->ReleaseMemObject(c->print_buf);
                c->print_buf = NULL;
                return call_fail(err, name, "clCreateBuffer(the print buffer)", e ? e : -4);
            }
            c->print_cap = cap;
        }
        gpu_print_header(header, cap);
        e = cl->EnqueueWriteBuffer(q, c->print_buf, CL_TRUE, 0, sizeof header, header, 0,
                                   NULL, NULL);
        if (e != CL_SUCCESS) return call_fail(err, name, "clEnqueueWriteBuffer(the print buffer)", e);
        e = cl->SetKernelArg(c->kernel, (cl_uint)(1 + c->narrays), sizeof c->print_buf,
                             &c->print_buf);
        if (e != CL_SUCCESS) return call_fail(err, name, "clSetKernelArg(the print buffer)", e);
    }
    /* The kernel runs one iteration per work item (the dialect's covering
     * grid): one launch covers the range, or, past the cap on a launch's
     * items, several launches at global offsets (their ids include them). */
    opencl_ndrange r;
    /* The innermost index as each item's loop: a grid of one index fewer. */
    int serial = b->serial_inner && ninner >= 1 && !c->f->collective;
    opencl_grid(b, serial ? ninner - 1 : ninner, count, inner0, inner1, &r);
    /* A collective kernel's work groups are the language's workgroups: its
     * launches are 1-D whole groups, and so is every piece.  So are a
     * reduction kernel's (its groups combine their partials). */
    size_t group[1] = {IR_WORKGROUP};
    int whole_groups = c->f->collective || gpu_workgroup_reduction(c->f, b->dialect);
    if (whole_groups) {
        r.multiple[0] = IR_WORKGROUP;
        r.piece[0] = r.piece[0] < IR_WORKGROUP ? IR_WORKGROUP : r.piece[0] / IR_WORKGROUP * IR_WORKGROUP;
    }
    if (!c->f->collective && whole_groups) {
        /* A reduction strides over its range (gpu/emit.c): one launch of
         * at most REDUCTION_GROUPS groups, whatever the count, so that
         * few groups make the final atomics. */
        int64_t items = round_up(r.extent[0], IR_WORKGROUP);
        if (items > (int64_t)REDUCTION_GROUPS * IR_WORKGROUP) items = (int64_t)REDUCTION_GROUPS * IR_WORKGROUP;
        if (items > r.piece[0]) items = r.piece[0]; /* the device's cap per launch */
        r.extent[0] = r.piece[0] = items;
    }
    size_t off[3] = {0, 0, 0}, g[3];
    for (off[2] = 0; (int64_t)off[2] < r.extent[2]; off[2] += (size_t)r.piece[2])
        for (off[1] = 0; (int64_t)off[1] < r.extent[1]; off[1] += (size_t)r.piece[1])
            for (off[0] = 0; (int64_t)off[0] < r.extent[0]; off[0] += (size_t)r.piece[0]) {
                for (int d = 0; d < 3; d++) {
                    int64_t rest = round_up(r.extent[d] - (int64_t)off[d], r.multiple[d]);
                    g[d] = (size_t)(rest < r.piece[d] ? rest : r.piece[d]);
                }
                /* 2-D and 3-D ranges: groups of (64, 1, 1) along the innermost
                 * index, which opencl_grid rounds to a multiple of 64 when it
                 * is longer.  Left to itself PoCL picked groups that ran a
                 * 2048^2 Jacobi step 3.7x slower (bench/bench_ndindex.py). */
                size_t row[3] = {ROW_GROUP, 1, 1};
                int rows = !whole_groups && r.dims >= 2 && g[0] % ROW_GROUP == 0 &&
                           b->caps.max_workgroup >= ROW_GROUP;
                cl_event ev = NULL;
                e = cl->EnqueueNDRangeKernel(q, c->kernel, (cl_uint)r.dims, off, g,
                                             whole_groups ? group : rows ? row : NULL, 0, NULL,
                                             &ev);
                if (e != CL_SUCCESS) {
                    cl->Finish(q); /* what was queued finishes before we return */
                    return call_fail(err, name, "clEnqueueNDRangeKernel", e);
                }
                /* Kept under the kernel's name: a failure the device reports
                 * later is named at the next synchronization (queue.c). */
                opencl_queue_note(b, oq, ev, name);
            }
    /* Queued: the device starts on it now, and the call returns.  What
     * reads results waits (copies, synchronize: queue.c). */
    cl->Flush(q);
    if (!c->prints.n) return TACK_OK;
    tack_status st = opencl_queue_finish(b, oq, err);
    return st ? st : print_lines(b, q, c, name, err);
}
