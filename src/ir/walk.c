/* walk.c - one read-only walk over a kernel's IR.
 *
 * Many analyses only look at every expression and statement of a body
 * (which arrays are read, which locals are assigned, where print() or an
 * extent read stands).  They share this walk and keep only what they do
 * at each node (ir.h's ir_walker).  The order is fixed: a statement, its
 * value, its loop bounds, its indices, then its body and else; an
 * expression, then a, b, cond, its arguments and its body. */
#include "ir/ir.h"

static int walk_stmt(const ir_walker *w, const ir_stmt *s);

static int walk_expr(const ir_walker *w, const ir_expr *e, const ir_stmt *value_of) {
    if (!e) return 0;
    int r;
    if (w->expr && (r = w->expr(w->ctx, e, value_of))) return r;
    if ((r = walk_expr(w, e->a, NULL)) || (r = walk_expr(w, e->b, NULL)) ||
        (r = walk_expr(w, e->cond, NULL)))
        return r;
    for (int i = 0; i < e->nargs; i++)
        if ((r = walk_expr(w, e->args[i], NULL))) return r;
    return e->body ? ir_walk_block(w, e->body) : 0;
}

static int walk_stmt(const ir_walker *w, const ir_stmt *s) {
    int r;
    if (w->stmt && (r = w->stmt(w->ctx, s))) return r;
    if ((r = walk_expr(w, s->value, s)) || (r = walk_expr(w, s->start, NULL)) ||
        (r = walk_expr(w, s->stop, NULL)) || (r = walk_expr(w, s->step, NULL)))
        return r;
    for (int k = 0; k < s->nindices; k++)
        if ((r = walk_expr(w, s->indices[k], NULL))) return r;
    if (w->before_blocks && (r = w->before_blocks(w->ctx, s))) return r;
    if ((r = ir_walk_block(w, &s->body))) return r;
    return ir_walk_block(w, &s->orelse);
}

int ir_walk_expr(const ir_walker *w, const ir_expr *e) { return walk_expr(w, e, NULL); }

int ir_walk_stmt(const ir_walker *w, const ir_stmt *s) { return walk_stmt(w, s); }

int ir_walk_block(const ir_walker *w, const ir_block *b) {
    int r;
    for (int i = 0; i < b->n; i++)
        if ((r = walk_stmt(w, b->stmts[i]))) return r;
    return 0;
}

int ir_walk_func(const ir_walker *w, const ir_func *f) {
    int r;
    if ((r = walk_expr(w, f->start, NULL)) || (r = walk_expr(w, f->stop, NULL)) ||
        (r = walk_expr(w, f->step, NULL)))
        return r;
    return ir_walk_block(w, &f->body);
}
