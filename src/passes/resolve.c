/* resolve.c - dimension resolution (see passes.h). */
#include "passes.h"

#include <stdio.h>

typedef struct resolver {
    ir_func *f;
    const int64_t (*dims)[TACK_MAX_NDIM];
    int first_stride[TACK_MAX_PARAMS]; /* a strided array's first stride
                                          parameter; -1: C order */
    int failed;
} resolver;

static ir_expr *lit(resolver *r, int64_t v, const ir_expr *at) {
    ir_expr *e = ir_const_int(r->f, v, TACK_I64, at->line, at->col);
    if (!e) r->failed = 1;
    return e;
}

static ir_expr *binop(resolver *r, ir_op op, ir_expr *a, ir_expr *b, const ir_expr *at) {
    ir_expr *e = a && b ? ir_expr_new(r->f, IR_BINOP, at->line, at->col) : NULL;
    if (!e) {
        r->failed = 1;
        return NULL;
    }
    e->op = op;
    e->a = a;
    e->b = b;
    return e;
}

/* Indices are converted to i64 before this arithmetic; inference refuses
 * a float index through the mark (loads, stores and atomics alike). */
static ir_expr *as_i64(resolver *r, ir_expr *e) {
    ir_expr *c = e ? ir_cast(r->f, e, TACK_I64) : NULL;
    if (!c) r->failed = 1;
    else if (c != e) c->index_cast = 1;
    return c;
}

/* Extent d of array p: baked in, or in debug mode (whose variants bake no
 * length) read from the hidden extents array the launch fills. */
static ir_expr *extent(resolver *r, int p, int d, const ir_expr *at) {
    if (r->f->debug_extents < 0) return lit(r, r->dims[p][d], at);
    ir_expr *e = ir_expr_new(r->f, IR_LOAD, at->line, at->col);
    ir_expr **idx = e ? arena_alloc(&r->f->mem, sizeof *idx) : NULL;
    if (!idx) {
        r->failed = 1;
        return NULL;
    }
    e->src = at->src;
    e->index = r->f->debug_extents;
    e->args = idx;
    e->nargs = 1;
    idx[0] = lit(r, (int64_t)p * TACK_MAX_NDIM + d, at);
    return e;
}

/* Row-major linear index: ((i0 * d1 + i1) * d2 + i2) ... */
static ir_expr *row_major(resolver *r, int p, ir_expr **idx, int n, const ir_expr *at) {
    ir_expr *acc = idx[0];
    for (int d = 1; d < n && acc; d++)
        acc = binop(r, OP_ADD, binop(r, OP_MUL, as_i64(r, acc), extent(r, p, d, at), at),
                    as_i64(r, idx[d]), at);
    return acc;
}

/* Strided: i0 * s0 + i1 * s1 ... with s_d the hidden parameters; a
 * vector's component index (the last) is added as it is. */
static ir_expr *strided(resolver *r, int p, ir_expr **idx, int n, const ir_expr *at) {
    int count = stride_param_count(&r->f->params[p]);
    ir_expr *acc = NULL;
    for (int d = 0; d < n && !r->failed; d++) {
        ir_expr *term = as_i64(r, idx[d]);
        if (d < count) {
            ir_expr *s = ir_expr_new(r->f, IR_PARAM, at->line, at->col);
            if (!s) {
                r->failed = 1;
                return NULL;
            }
            s->index = r->first_stride[p] + d;
            term = binop(r, OP_MUL, term, s, at);
        }
        acc = acc ? binop(r, OP_ADD, acc, term, at) : term;
    }
    return acc;
}

/* A scratch array's row-major offset from its own (literal) extents; one
 * index is already an offset (the zeroing loop's). */
static ir_expr *scratch_offset(resolver *r, const ir_scratch *a, ir_expr **idx, int n,
                               const ir_expr *at) {
    ir_expr *acc = as_i64(r, idx[0]);
    for (int d = 1; d < n && acc; d++)
        acc = binop(r, OP_ADD, binop(r, OP_MUL, acc, lit(r, a->dims[d], at), at),
                    as_i64(r, idx[d]), at);
    return acc;
}

static ir_expr *linearize(resolver *r, int p, ir_expr **idx, int n, const ir_expr *at) {
    return r->first_stride[p] >= 0 ? strided(r, p, idx, n, at) : row_major(r, p, idx, n, at);
}

/* Appends the strided arrays' hidden stride parameters. */
static tack_status add_stride_params(resolver *r, const uint8_t *strided, tack_error *err) {
    ir_func *f = r->f;
    int n = f->nparams;
    for (int p = 0; p < n; p++) {
        r->first_stride[p] = -1;
        if (!strided || !strided[p]) continue;
        int count = stride_param_count(&f->params[p]);
        r->first_stride[p] = f->nparams;
        for (int d = 0; d < count; d++) {
            int q = ir_param_add(f);
            if (q < 0) {
                err->status = TACK_ERR_VALUE;
                snprintf(err->message, sizeof err->message,
                         "kernel '%s': its strided arrays need more than %d parameters with "
                         "their strides; pass C-contiguous copies of some "
                         "(numpy.ascontiguousarray)",
                         f->name, TACK_MAX_PARAMS);
                return TACK_ERR_VALUE;
            }
            /* ir_param_add may move the parameters: index them afresh. */
            const ir_param *a = &f->params[p];
            char name[160];
            snprintf(name, sizeof name, "%s.strides[%d]", a->name, d);
            ir_param *s = &f->params[q];
            s->name = arena_strdup(&f->mem, name);
            s->role = ROLE_SCALAR;
            s->type = TACK_I64;
            s->line = a->line;
            s->col = a->col;
            if (!s->name) {
                r->failed = 1;
                return TACK_OK;
            }
        }
    }
    return TACK_OK;
}

static void block(resolver *r, ir_block *b);

static ir_expr *resolve_expr(resolver *r, ir_expr *e) {
    if (!e) return NULL;
    e->a = resolve_expr(r, e->a);
    e->b = resolve_expr(r, e->b);
    e->cond = resolve_expr(r, e->cond);
    for (int i = 0; i < e->nargs; i++) e->args[i] = resolve_expr(r, e->args[i]);
    if (e->body) block(r, e->body);
    if (e->kind == IR_DIM) return lit(r, r->dims[e->index][e->dim], e);
    if (e->kind == IR_SLOAD && e->nargs > 1) {
        e->args[0] = scratch_offset(r, &r->f->scratch[e->index], e->args, e->nargs, e);
        e->nargs = 1;
    }
    if ((e->kind == IR_LOAD || e->kind == IR_ATOMIC) &&
        (e->nargs > 1 || (e->nargs == 1 && r->first_stride[e->index] >= 0))) {
        ir_expr *flat = linearize(r, e->index, e->args, e->nargs, e);
        e->args[0] = flat;
        e->nargs = 1;
    }
    return e;
}

static void block(resolver *r, ir_block *b) {
    for (int i = 0; i < b->n; i++) {
        ir_stmt *s = b->stmts[i];
        s->value = resolve_expr(r, s->value);
        s->start = resolve_expr(r, s->start);
        s->stop = resolve_expr(r, s->stop);
        s->step = resolve_expr(r, s->step);
        for (int k = 0; k < s->nindices; k++) s->indices[k] = resolve_expr(r, s->indices[k]);
        if (s->kind == IR_SSTORE && s->nindices > 1) {
            s->indices[0] = scratch_offset(r, &r->f->scratch[s->index], s->indices, s->nindices,
                                           s->value);
            s->nindices = 1;
        }
        if (s->kind == IR_STORE &&
            (s->nindices > 1 || (s->nindices == 1 && r->first_stride[s->index] >= 0))) {
            s->indices[0] = linearize(r, s->index, s->indices, s->nindices, s->value);
            s->nindices = 1;
        }
        block(r, &s->body);
        block(r, &s->orelse);
    }
}

tack_status pass_resolve_dims(ir_func *f, const int64_t (*dims)[TACK_MAX_NDIM],
                              const uint8_t *strided, tack_error *err) {
    resolver r = {.f = f, .dims = dims};
    if (add_stride_params(&r, strided, err)) return err->status;
    f->start = resolve_expr(&r, f->start);
    f->step = resolve_expr(&r, f->step);
    /* an adjoint's guards read the launch's end in the body (shape.c keys
     * its dimensions) */
    if (f->adjoint_n && f->stop && f->debug_extents < 0) {
        f->stop_in_body = ir_clone_expr(f, f->stop);
        if (!f->stop_in_body) r.failed = 1;
        else f->stop_in_body = resolve_expr(&r, f->stop_in_body);
    }
    block(&r, &f->body);
    if (r.failed) {
        err->status = TACK_ERR_NOMEM;
        snprintf(err->message, sizeof err->message, "out of memory resolving kernel '%s'",
                 f->name);
        return TACK_ERR_NOMEM;
    }
    return TACK_OK;
}
