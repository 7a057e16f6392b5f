/* shape.c - which array dimensions a kernel bakes into generated code (the
 * variant key's shape signature).  Computed once per IR template. */
#include "passes.h"

typedef struct dep_set {
    shape_dep *v;
    int n, cap;
} dep_set;

static void add(dep_set *s, int p, int d) {
    for (int i = 0; i < s->n && i < s->cap; i++)
        if (s->v[i].param == p && s->v[i].dim == d) return;
    if (s->n < s->cap) s->v[s->n] = (shape_dep){p, d};
    s->n++;
}

/* Row-major index arithmetic bakes in dimensions 1..n-1; the component
 * dimension of an array of vectors is its width, already in vec_sig.  In
 * debug mode the extents are read at run time (resolve.c). */
static void add_index_dims(dep_set *s, const ir_func *f, int p, int n) {
    if (f->debug_extents >= 0) return;
    if (f->params[p].vec_width) n--;
    for (int d = 1; d < n; d++) add(s, p, d);
}

static void block(dep_set *s, const ir_func *f, const ir_block *b);

static void dep_expr(dep_set *s, const ir_func *f, const ir_expr *e) {
    if (!e) return;
    if (e->kind == IR_DIM) add(s, e->index, e->dim);
    if (e->kind == IR_LOAD || e->kind == IR_ATOMIC) add_index_dims(s, f, e->index, e->nargs);
    dep_expr(s, f, e->a);
    dep_expr(s, f, e->b);
    dep_expr(s, f, e->cond);
    for (int i = 0; i < e->nargs; i++) dep_expr(s, f, e->args[i]);
    if (e->body) block(s, f, e->body);
}

static void block(dep_set *s, const ir_func *f, const ir_block *b) {
    for (int i = 0; i < b->n; i++) {
        const ir_stmt *st = b->stmts[i];
        if (st->kind == IR_STORE) add_index_dims(s, f, st->index, st->nindices);
        dep_expr(s, f, st->value);
        dep_expr(s, f, st->start);
        dep_expr(s, f, st->stop);
        dep_expr(s, f, st->step);
        for (int k = 0; k < st->nindices; k++) dep_expr(s, f, st->indices[k]);
        block(s, f, &st->body);
        block(s, f, &st->orelse);
    }
}

int shape_deps(const ir_func *f, shape_dep *deps, int cap) {
    dep_set s = {deps, 0, cap};
    /* The parallel loop's end is read at launch, never baked in. */
    dep_expr(&s, f, f->start);
    dep_expr(&s, f, f->step);
    /* ... except in an adjoint, whose gather form compares with it in the
     * body (adjoint_gather.c) */
    if (f->adjoint_n) dep_expr(&s, f, f->stop);
    block(&s, f, &f->body);
    int n = s.n < cap ? s.n : cap;
    for (int i = 1; i < n; i++) /* insertion sort: few entries */
        for (int j = i; j > 0; j--) {
            shape_dep a = deps[j - 1], b = deps[j];
            if (a.param < b.param || (a.param == b.param && a.dim <= b.dim)) break;
            deps[j - 1] = b;
            deps[j] = a;
        }
    return s.n;
}
