/* resolve.c - dimension resolution (see passes.h). */
#include "passes.h"

#include <stdio.h>

typedef struct resolver {
    ir_func *f;
    const int64_t (*dims)[TACK_MAX_NDIM];
    int failed;
} resolver;

static ir_expr *lit(resolver *r, int64_t v, const ir_expr *at) {
    ir_expr *e = ir_const_int(r->f, v, TACK_I64, at->line, at->col);
    if (!e) r->failed = 1;
    return e;
}

/* Row-major linear index: ((i0 * d1 + i1) * d2 + i2) ... */
static ir_expr *linearize(resolver *r, int p, ir_expr **idx, int n, const ir_expr *at) {
    ir_expr *acc = idx[0];
    for (int d = 1; d < n && acc; d++) {
        ir_expr *mul = ir_expr_new(r->f, IR_BINOP, at->line, at->col);
        ir_expr *add = ir_expr_new(r->f, IR_BINOP, at->line, at->col);
        ir_expr *size = lit(r, r->dims[p][d], at);
        if (!mul || !add || !size) {
            r->failed = 1;
            return NULL;
        }
        /* Indices are converted to i64 before this arithmetic (infer). */
        mul->op = OP_MUL;
        mul->a = ir_cast(r->f, acc, TACK_I64);
        mul->b = size;
        add->op = OP_ADD;
        add->a = mul;
        add->b = ir_cast(r->f, idx[d], TACK_I64);
        acc = add;
    }
    return acc;
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
    if ((e->kind == IR_LOAD || e->kind == IR_ATOMIC) && e->nargs > 1) {
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
        if (s->kind == IR_STORE && s->nindices > 1) {
            s->indices[0] = linearize(r, s->index, s->indices, s->nindices, s->value);
            s->nindices = 1;
        }
        block(r, &s->body);
        block(r, &s->orelse);
    }
}

tack_status pass_resolve_dims(ir_func *f, const int64_t (*dims)[TACK_MAX_NDIM],
                              tack_error *err) {
    resolver r = {f, dims, 0};
    f->start = resolve_expr(&r, f->start);
    f->step = resolve_expr(&r, f->step);
    block(&r, &f->body);
    if (r.failed) {
        err->status = TACK_ERR_NOMEM;
        snprintf(err->message, sizeof err->message, "out of memory resolving kernel '%s'",
                 f->name);
        return TACK_ERR_NOMEM;
    }
    return TACK_OK;
}
