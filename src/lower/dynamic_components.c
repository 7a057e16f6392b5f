/* Components picked by indices known only when the kernel runs: v[k],
 * m[r, c] and the row m[r] with k, r, c loop variables or any other integer
 * (Warp's and Taichi's `for k in range(3): s += v[k]`).
 *
 * A vector or matrix value lives in one local per component, so a run-time
 * index becomes a chain of selects over the components; where the loop has a
 * constant trip count LLVM unrolls it and folds the chain back to one
 * component.  Indices count from the end when negative, as in NumPy; an
 * index outside the vector reads 0 and a store there changes nothing (no
 * memory is touched either way). */
#include <stdio.h>
#include <string.h>

#include "lower_internal.h"

/* Far below any flat position: an index outside its extent. */
#define OUTSIDE (-(1 << 20))

static int is_literal_index(const expr *e) {
    if (e->kind == EX_UNARY && !strcmp(e->op, "-")) e = e->a;
    return e->kind == EX_INT;
}

int dyn_is_dynamic(const expr *sub) {
    for (int i = 0; i < sub->nitems; i++)
        if (!is_literal_index(sub->items[i])) return 1;
    return 0;
}

static ir_expr *rd(lowerer *L, int local, const expr *at) { return lower_read_local(L, local, at); }

static int hoist(lowerer *L, ir_block *b, ir_expr *x, const char *what, const expr *at) {
    int t = lower_temp(L, what);
    if (t < 0 || lower_set_local(L, b, t, x, at)) return -1;
    return t;
}

/* Index e of an extent, wrapped from the end when negative, OUTSIDE (or
 * below) when out of range; in a temp set in b. */
static ir_expr *wrapped(lowerer *L, ir_block *b, const expr *e, int extent, const expr *at) {
    ir_expr *x = lower_expr(L, e);
    if (!x) return NULL;
    if (vec_is(x)) {
        ERR(L, e->line, e->col, "a vector or matrix index must be an integer, not a vector");
        return NULL;
    }
    int t = hoist(L, b, x, "k", at);
    if (t < 0) return NULL;
    ir_expr *w = lower_sel(L, lower_bin(L, OP_LT, rd(L, t, at), lower_ival(L, 0, at), at),
                           lower_bin(L, OP_ADD, rd(L, t, at), lower_ival(L, extent, at), at),
                           rd(L, t, at), at);
    int u = hoist(L, b, w, "k", at);
    if (u < 0) return NULL;
    return lower_sel(L, lower_bin(L, OP_LT, rd(L, u, at), lower_ival(L, extent, at), at),
                     rd(L, u, at), lower_ival(L, OUTSIDE, at), at);
}

/* The flat position (row-major) of the first component sub picks from a
 * value of `rows` rows (0: a vector) and `width` components, in a temp set
 * in b; *count is 1, or a row's width for m[r].  -1 after an error. */
static int flat_position(lowerer *L, ir_block *b, int rows, int width, const expr *sub,
                         int *count) {
    int cols = rows ? width / rows : width;
    int want = rows ? 2 : 1;
    if (sub->nitems > want || sub->nitems < 1) {
        ERR(L, sub->line, sub->col, "a %s takes %d index%s, not %d", rows ? "matrix" : "vector",
            want, want == 1 ? "" : "es", sub->nitems);
        return -1;
    }
    ir_expr *flat = wrapped(L, b, sub->items[0], rows ? rows : width, sub);
    *count = 1;
    if (rows) {
        flat = lower_bin(L, OP_MUL, flat, lower_ival(L, cols, sub), sub);
        if (sub->nitems == 2)
            flat = lower_bin(L, OP_ADD, flat, wrapped(L, b, sub->items[1], cols, sub), sub);
        else
            *count = cols;
    }
    return flat ? hoist(L, b, flat, "k", sub) : -1;
}

int dyn_flat_position(lowerer *L, ir_block *b, int rows, int width, const expr *sub, int *count) {
    return flat_position(L, b, rows, width, sub, count);
}

/* local = component `first + k` of the components comps[] where the flat
 * position in local `flat` is `first`, a multiple of `step` below `width`;
 * 0 when it is none of them.  One select per assignment, in sequence, not
 * one nested expression: a 16x16 matrix's chain of 256 would nest past
 * what C compilers take (OpenCL C's 256 brackets). */
static int pick(lowerer *L, ir_block *b, int local, const int *comps, int width, int step, int flat,
                int k, const expr *at) {
    if (lower_set_local(L, b, local, lower_ival(L, 0, at), at)) return -1;
    for (int first = width - step; first >= 0; first -= step)
        if (lower_set_local(L, b, local,
                            lower_sel(L, lower_bin(L, OP_EQ, rd(L, flat, at), lower_ival(L, first, at), at),
                                      rd(L, comps[first + k], at), rd(L, local, at), at), at))
            return -1;
    return 0;
}

static int components_of(const ir_expr *v, int *comps) {
    for (int k = 0; k < v->nargs; k++) comps[k] = v->args[k]->index;
    return v->nargs;
}

ir_expr *dyn_subscript(lowerer *L, ir_expr *v, const expr *sub) {
    if (v->cplx) {
        ERR(L, sub->line, sub->col, "a complex number cannot be indexed; use .real and .imag");
        return NULL;
    }
    int comps[MAX_COMPONENTS], width = components_of(v, comps), count;
    int cols = v->dim ? width / v->dim : width;
    if (cols == 0) return NULL;
    ir_block *body = arena_alloc(&L->f->mem, sizeof *body);
    if (!body) {
        lower_oom(L);
        return NULL;
    }
    memset(body, 0, sizeof *body);
    if (vec_eval(L, body, v)) return NULL;
    int flat = flat_position(L, body, v->dim, width, sub, &count);
    if (flat < 0) return NULL;
    if (count == 1) { /* a scalar: the setup, then the chain */
        ir_expr *x = ir_expr_new(L->f, IR_INLINE, sub->line, sub->col);
        int result = lower_temp(L, "c");
        if (!x || result < 0) {
            lower_oom(L);
            return NULL;
        }
        if (pick(L, body, result, comps, width, 1, flat, 0, sub)) return NULL;
        x->body = body;
        x->index = result;
        x->inline_id = L->f->ninlines++;
        return x;
    }
    ir_expr *row = vec_new(L, count, sub); /* m[r]: one pick per column */
    if (!row) return NULL;
    *row->body = *body;
    for (int k = 0; k < count; k++)
        if (pick(L, row->body, row->args[k]->index, comps, width, cols, flat, k, sub)) return NULL;
    return row;
}

int dyn_assign(lowerer *L, ir_block *b, const binding *bound, const expr *sub, ir_expr *value,
               const stmt *at) {
    const expr where = {.line = at->line, .col = at->col};
    if (bound->cplx) {
        ERR(L, sub->line, sub->col, "a complex number cannot be indexed; use .real and .imag");
        return -1;
    }
    int count, cols = bound->rows ? bound->width / bound->rows : bound->width;
    int flat = flat_position(L, b, bound->rows, bound->width, sub, &count);
    if (flat < 0) return -1;
    if (count == 1 ? vec_is(value) : !vec_is(value) || value->dim || value->nargs != count) {
        if (count == 1) ERR(L, at->line, at->col, "a component takes a scalar");
        else ERR(L, at->line, at->col, "a matrix row takes a %d-component vector", count);
        return -1;
    }
    int vals[MAX_COMPONENTS];
    if (count == 1) {
        if ((vals[0] = hoist(L, b, value, "v", &where)) < 0) return -1;
    } else {
        if (vec_eval(L, b, value)) return -1;
        components_of(value, vals);
    }
    /* Every component keeps its value unless the position names it. */
    for (int j = 0; j < bound->width; j++) {
        int first = count == 1 ? j : j - j % cols, k = j - first;
        ir_expr *hit = lower_bin(L, OP_EQ, rd(L, flat, &where), lower_ival(L, first, &where), &where);
        ir_expr *x = lower_sel(L, hit, rd(L, vals[k], &where), rd(L, bound->comps[j], &where), &where);
        if (lower_set_local(L, b, bound->comps[j], x, &where)) return -1;
    }
    return 0;
}

int dyn_write_element(lowerer *L, ir_block *b, const expr *base, int p, const expr *sub,
                      ir_expr *value, int aop, const stmt *at) {
    const expr where = {.line = at->line, .col = at->col};
    int width = vec_width_of(L, p), rows = mat_rows_of(L, p), count, n;
    int cols = rows ? width / rows : width;
    int flat = flat_position(L, b, rows, width, sub, &count);
    if (flat < 0) return -1;
    ir_expr **idx = lower_indices(L, base, &p, &n);
    if (!idx) return -1;
    if (!value && !(value = lower_expr(L, at->value))) return -1;
    const expr *vat = at->value ? at->value : &where;
    if (count == 1 && vec_is(value)) {
        ERR(L, vat->line, vat->col, "a component takes a scalar");
        return -1;
    }
    if (count > 1 && (!vec_is(value) || value->dim || value->cplx || value->nargs != count)) {
        char got[48] = "scalar";
        if (vec_is(value) && value->cplx) snprintf(got, sizeof got, "complex number");
        else if (vec_is(value)) vec_shape_name(value, got, sizeof got);
        ERR(L, vat->line, vat->col, "a row of a %dx%d matrix takes a %d-component vector, not a %s",
            rows, cols, count, got);
        return -1;
    }
    int vals[MAX_COMPONENTS], itmp[TACK_MAX_NDIM];
    if (count == 1) {
        if ((vals[0] = hoist(L, b, value, "c", &where)) < 0) return -1;
    } else {
        if (vec_eval(L, b, value)) return -1;
        components_of(value, vals);
    }
    for (int i = 0; i < n; i++)
        if ((itmp[i] = hoist(L, b, idx[i], "i", &where)) < 0) return -1;
    L->f->params[p].written = 1;
    for (int k = 0; k < width; k++) {
        /* The component k is written when the position names it: a row's
         * start, or k itself. */
        int first = count == 1 ? k : k - k % cols;
        ir_stmt *test = ir_stmt_new(L->f, IR_IF, at->line, at->col);
        ir_expr **args = arena_alloc(&L->f->mem, (n + 1) * sizeof *args);
        if (!test || !args) return lower_oom(L);
        test->value = lower_bin(L, OP_EQ, rd(L, flat, &where), lower_ival(L, first, &where), &where);
        for (int i = 0; i < n; i++) args[i] = rd(L, itmp[i], &where);
        args[n] = ir_const_int(L->f, k, IRT_WEAK_INT, at->line, at->col);
        ir_expr *v = rd(L, vals[k - first], &where);
        ir_stmt *s;
        if (aop < 0) {
            s = ir_stmt_new(L->f, IR_STORE, at->line, at->col);
            if (!s) return lower_oom(L);
            s->index = p;
            s->indices = args;
            s->nindices = n + 1;
            s->value = v;
        } else {
            s = ir_stmt_new(L->f, IR_EVAL, at->line, at->col);
            ir_expr *x = ir_expr_new(L->f, IR_ATOMIC, at->line, at->col);
            if (!s || !x) return lower_oom(L);
            x->index = p;
            x->atomic = (ir_atomic_op)aop;
            x->dim = 1;
            x->args = args;
            x->nargs = n + 1;
            x->a = v;
            s->value = x;
        }
        if (!test->value || !v || ir_block_push(L->f, &test->body, s) || ir_block_push(L->f, b, test))
            return lower_oom(L);
    }
    return 0;
}
