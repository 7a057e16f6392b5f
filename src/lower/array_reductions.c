/* array_reductions.c - NumPy's reductions of a 1-D local array, written
 * as Numba users write them:
 *
 *   np.sum(a)  a.sum()  np.prod(a)  a.prod()
 *   np.max(a)  a.max()  np.amax(a)  np.min(a)  a.min()  np.amin(a)
 *   np.dot(a, b)  a.dot(b)      (two 1-D local arrays of one length)
 *
 * where a is a tack.local / np.zeros / [0.0] * n array or a module-level
 * tuple.  Each is an IR_INLINE block holding a loop over the elements; its
 * value is the accumulator, which starts from element 0 so that it has the
 * element type (NumPy's max of an empty array is an error; local arrays
 * have at least one element); max and min propagate NaN, as NumPy's do.  Lengths are compile-time constants, so a
 * dot of two lengths is a CompileError at the line. */
#include <string.h>

#include "lower_internal.h"

enum { AR_SUM, AR_PROD, AR_MAX, AR_MIN, AR_DOT };

static const struct { const char *name; int which; } reductions[] = {
    {"sum", AR_SUM}, {"prod", AR_PROD}, {"max", AR_MAX}, {"amax", AR_MAX},
    {"min", AR_MIN}, {"amin", AR_MIN},  {"dot", AR_DOT}, {NULL, 0}};

int array_reduction_name(const char *name) {
    for (int i = 0; reductions[i].name; i++)
        if (!strcmp(name, reductions[i].name)) return reductions[i].which;
    return -1;
}

/* Element j (a local holding it, or -1 for element 0) of scratch id. */
static ir_expr *element(lowerer *L, int id, int j, const expr *at) {
    ir_expr **idx = arena_alloc(&L->f->mem, sizeof *idx);
    if (!idx) {
        lower_oom(L);
        return NULL;
    }
    idx[0] = j < 0 ? lower_ival(L, 0, at) : lower_read_local(L, j, at);
    return idx[0] ? scratch_load_at(L, id, idx, 1, at) : NULL;
}

/* acc (op) local t.  NumPy's max and min propagate NaN: t replaces acc
 * where t is NaN (t != t) or beyond it, so a NaN acc stays (for integers
 * t != t folds away). */
static ir_expr *combine(lowerer *L, int which, int acc, int t, const expr *at) {
    ir_expr *a = lower_read_local(L, acc, at), *x = lower_read_local(L, t, at);
    if (which == AR_MAX || which == AR_MIN) {
        ir_expr *nan = lower_bin(L, OP_NE, x, lower_read_local(L, t, at), at);
        ir_expr *beyond = lower_bin(L, which == AR_MAX ? OP_GT : OP_LT, lower_read_local(L, t, at),
                                    a, at);
        ir_expr *either = ir_expr_new(L->f, IR_ANDOR, at->line, at->col);
        if (!either) {
            lower_oom(L);
            return NULL;
        }
        either->op = OP_OR;
        either->a = nan;
        either->b = beyond;
        if (!nan || !beyond) return NULL;
        return lower_sel(L, either, lower_read_local(L, t, at), lower_read_local(L, acc, at), at);
    }
    return lower_bin(L, which == AR_PROD ? OP_MUL : OP_ADD, a, x, at);
}

/* The term for element j: a[j], or a[j] * b[j] for a dot. */
static ir_expr *term(lowerer *L, int which, int a, int b, int j, const expr *at) {
    ir_expr *x = element(L, a, j, at);
    return which == AR_DOT ? lower_bin(L, OP_MUL, x, element(L, b, j, at), at) : x;
}

/* The scratch array `e` names, checked: 1-D, of scalars. */
static int operand(lowerer *L, const expr *e, const char *what) {
    int id = scratch_of(L, e);
    if (L->failed) return -1;
    if (id < 0) {
        ERR(L, e->line, e->col, "%s reduces a local array in kernels (tack.local, np.zeros, "
            "[0.0] * n, a module-level tuple), and this is not one (a vector's components: "
            "tack.sum(v), tack.max(v), tack.dot(u, v))", what);
        return -1;
    }
    const ir_scratch *s = &L->f->scratch[id];
    if (s->ndim != 1 || L->vector_rows[id] || L->complex_rows[id]) {
        ERR(L, e->line, e->col, "%s takes a 1-D local array of numbers in kernels; '%s' is %s",
            what, s->name, L->complex_rows[id] ? "of complex numbers" :
            L->vector_rows[id] ? "a table of vectors" : "not 1-D");
        return -1;
    }
    return id;
}

ir_expr *array_reduce(lowerer *L, int which, const expr *first, const expr *second,
                      const char *what, const expr *at) {
    int a = operand(L, first, what), b = -1;
    if (a < 0) return NULL;
    if (which == AR_DOT) {
        if (!second) {
            ERR(L, at->line, at->col, "%s takes two local arrays", what);
            return NULL;
        }
        if ((b = operand(L, second, what)) < 0) return NULL;
        if (L->f->scratch[a].dims[0] != L->f->scratch[b].dims[0]) {
            ERR(L, at->line, at->col, "%s of arrays of %lld and %lld elements: the lengths must "
                "be equal", what, (long long)L->f->scratch[a].dims[0],
                (long long)L->f->scratch[b].dims[0]);
            return NULL;
        }
    } else if (second) {
        ERR(L, second->line, second->col, "%s takes one array in kernels (no axis)", what);
        return NULL;
    }
    ir_expr *x = ir_expr_new(L->f, IR_INLINE, at->line, at->col);
    ir_block *body = arena_alloc(&L->f->mem, sizeof *body);
    int acc = lower_temp(L, "acc"), j = lower_temp(L, "j");
    ir_stmt *loop = ir_stmt_new(L->f, IR_FOR, at->line, at->col);
    if (!x || !body || !loop || acc < 0 || j < 0) {
        lower_oom(L);
        return NULL;
    }
    x->body = body;
    x->index = acc;
    x->inline_id = L->f->ninlines++;
    if (lower_set_local(L, body, acc, term(L, which, a, b, -1, at), at)) return NULL;
    loop->index = j;
    loop->start = lower_ival(L, 1, at);
    loop->stop = ir_const_int(L->f, L->f->scratch[a].dims[0], IRT_WEAK_INT, at->line, at->col);
    loop->step = lower_ival(L, 1, at);
    if (!loop->start || !loop->stop || !loop->step) {
        lower_oom(L);
        return NULL;
    }
    int t = lower_temp(L, "t");
    if (t < 0 || lower_set_local(L, &loop->body, t, term(L, which, a, b, j, at), at) ||
        lower_set_local(L, &loop->body, acc, combine(L, which, acc, t, at), at))
        return NULL;
    if (ir_block_push(L->f, body, loop)) {
        lower_oom(L);
        return NULL;
    }
    return x;
}
