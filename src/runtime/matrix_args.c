/* matrix_args.c - arrays of scalars read as arrays of matrices.
 *
 * A NumPy array of shape (n, 3, 3) holds n 3x3 matrices as a tack.Array of
 * dtype mat33f does, so a kernel that takes F[p] as a matrix should accept
 * it without a copy.  What decides is the kernel's source, scanned once at
 * creation: a parameter subscripted with k indices in a place where the
 * element is a value (an operand, a call's argument, a store's target, a
 * name used as a value) is "used as matrices with k indices".  An f32/f64
 * array argument of vec_width 0 with k + 2 dimensions whose last two are
 * equal and 2-4 then becomes the matrix array it stores (vec_width
 * TACK_MAT_WIDTH(n, n), the two dimensions one of n*n), before the template
 * key is taken, so the matrix shape is keyed as any matrix array's is.
 *
 * Not when the kernel also indexes the parameter with all k + 2 indices or
 * reads shape[k] or beyond (it treats it as scalars), nor where each
 * partial subscript is only ever subscripted again or iterated:
 * `F[p][r, c]`, `for row in F[p]` and a row view `row = F[p]` whose name
 * is only indexed keep meaning the scalar elements they meant before. */
#include <string.h>

#include "runtime.h"

typedef struct scan {
    tack_kernel *k;
    const func_def *d;
    const char *grouped; /* I of `for I in tack.grouped(...)`: x[I] is a whole index */
} scan;

static int param_of(const scan *s, const expr *e) {
    if (!e || e->kind != EX_NAME) return -1;
    for (int i = 0; i < s->d->nparams && i < TACK_MAX_PARAMS; i++)
        if (!strcmp(s->d->params[i], e->name)) return i;
    return -1;
}

/* Does `name` appear as a value anywhere, not only as a subscript's base
 * or an assignment's target? */
static int bare_in_expr(const expr *e, const char *name, int as_base);
static int bare_in_stmts(stmt *const *b, int n, const char *name) {
    for (int i = 0; i < n; i++) {
        const stmt *st = b[i];
        if (!st) continue;
        for (int t = 0; t < st->ntargets; t++) {
            const expr *x = st->targets[t];
            /* A name target is bound, not read; `m += s` reads it. */
            if (x->kind == EX_NAME && st->kind != ST_AUGASSIGN) continue;
            if (bare_in_expr(x, name, 0)) return 1;
        }
        if (bare_in_expr(st->value, name, 0) || bare_in_stmts(st->body, st->nbody, name) ||
            bare_in_stmts(st->orelse, st->norelse, name))
            return 1;
    }
    return 0;
}

static int bare_in_expr(const expr *e, const char *name, int as_base) {
    if (!e) return 0;
    if (e->kind == EX_NAME) return !as_base && !strcmp(e->name, name);
    if (bare_in_expr(e->a, name, e->kind == EX_SUBSCRIPT) || bare_in_expr(e->b, name, 0) ||
        bare_in_expr(e->c, name, 0))
        return 1;
    for (int i = 0; i < e->nitems; i++)
        if (bare_in_expr(e->items[i], name, 0)) return 1;
    for (int i = 0; i < e->nkw; i++)
        if (bare_in_expr(e->kw_values[i], name, 0)) return 1;
    return 0;
}

/* as_base: e is the base of a subscript (F[p] in F[p][r, c]). */
static void scan_expr(scan *s, const expr *e, int as_base) {
    if (!e) return;
    if (e->kind == EX_SUBSCRIPT) {
        int p = param_of(s, e->a);
        if (p >= 0 && s->grouped && e->nitems == 1 && e->items[0]->kind == EX_NAME &&
            !strcmp(e->items[0]->name, s->grouped))
            s->k->max_shape[p] = 100;
        if (p >= 0 && e->nitems < 16) {
            s->k->any_index[p] |= (uint16_t)(1u << e->nitems);
            if (!as_base) s->k->mat_index[p] |= (uint16_t)(1u << e->nitems);
        }
        /* P.shape[d] with a literal d */
        if (e->a->kind == EX_ATTR && !strcmp(e->a->name, "shape") && e->nitems == 1 &&
            e->items[0]->kind == EX_INT && (p = param_of(s, e->a->a)) >= 0 &&
            (int64_t)e->items[0]->ival >= s->k->max_shape[p])
            s->k->max_shape[p] = (int8_t)(e->items[0]->ival < 100 ? e->items[0]->ival + 1 : 100);
        if (p < 0) scan_expr(s, e->a, 1);
        for (int i = 0; i < e->nitems; i++) scan_expr(s, e->items[i], 0);
        return;
    }
    /* tack.grouped(P) reads every dimension of P as an index: scalars. */
    int p;
    if (e->kind == EX_CALL && e->nitems == 1 && (p = param_of(s, e->items[0])) >= 0 &&
        ((e->a->kind == EX_ATTR || e->a->kind == EX_NAME) && !strcmp(e->a->name, "grouped")))
        s->k->max_shape[p] = 100;
    scan_expr(s, e->a, 0);
    scan_expr(s, e->b, 0);
    scan_expr(s, e->c, 0);
    for (int i = 0; i < e->nitems; i++) scan_expr(s, e->items[i], 0);
    for (int i = 0; i < e->nkw; i++) scan_expr(s, e->kw_values[i], 0);
}

static void scan_stmts(scan *s, stmt *const *b, int n) {
    for (int i = 0; i < n; i++) {
        const stmt *st = b[i];
        if (!st) continue;
        /* for I in tack.grouped(x), and Taichi's struct-for `for I in x`:
         * x's dimensions are all indices */
        int iterated = st->kind == ST_FOR ? param_of(s, st->value) : -1;
        if (iterated >= 0) s->k->max_shape[iterated] = 100;
        if (st->kind == ST_FOR && st->ntargets == 1 && st->targets[0]->kind == EX_NAME &&
            st->value && (iterated >= 0 || (st->value->kind == EX_CALL &&
            (st->value->a->kind == EX_ATTR || st->value->a->kind == EX_NAME) &&
            !strcmp(st->value->a->name, "grouped"))))
            s->grouped = st->targets[0]->name;
        for (int t = 0; t < st->ntargets; t++) scan_expr(s, st->targets[t], 0);
        /* row = F[p], the name only ever indexed: a view, as before. */
        int view = st->kind == ST_ASSIGN && st->value && st->value->kind == EX_SUBSCRIPT &&
                   param_of(s, st->value->a) >= 0 && st->ntargets > 0;
        for (int t = 0; view && t < st->ntargets; t++)
            view = st->targets[t]->kind == EX_NAME &&
                   !bare_in_stmts(s->d->body, s->d->nbody, st->targets[t]->name);
        /* for row in F[p]: iterates rows of the scalars, as before */
        scan_expr(s, st->value, view || st->kind == ST_FOR);
        scan_stmts(s, st->body, st->nbody);
        scan_stmts(s, st->orelse, st->norelse);
    }
}

void matrix_args_scan(tack_kernel *k) {
    memset(k->mat_index, 0, sizeof k->mat_index);
    memset(k->any_index, 0, sizeof k->any_index);
    memset(k->max_shape, 0, sizeof k->max_shape);
    scan s = {k, k->def, NULL};
    scan_stmts(&s, k->def->body, k->def->nbody);
}

/* The matrix size n when args[i] is read as an array of n x n matrices. */
static int matrix_size(const tack_kernel *k, int i, const tack_arg *a) {
    if (i >= TACK_MAX_PARAMS || !k->mat_index[i] || a->kind != TACK_ARG_ARRAY || a->vec_width ||
        a->is_texture || (a->dtype != TACK_F32 && a->dtype != TACK_F64))
        return 0;
    int nd = a->ndim, m = nd - 2;
    if (nd < 3 || nd > TACK_MAX_NDIM || !(k->mat_index[i] >> m & 1) || (k->any_index[i] >> nd & 1) ||
        k->max_shape[i] > m)
        return 0;
    int64_t r = a->shape[nd - 2], c = a->shape[nd - 1];
    return r == c && r >= 2 && r <= 4 ? (int)r : 0;
}

tack_status matrix_args(const tack_kernel *k, const tack_arg **args, int nargs, tack_arg *buf,
                        tack_error *err) {
    const tack_arg *in = *args;
    int copied = 0;
    if (nargs > TACK_MAX_PARAMS || nargs > k->def->nparams) return TACK_OK; /* refused later */
    for (int i = 0; i < nargs; i++) {
        int n = matrix_size(k, i, &in[i]);
        if (!n) continue;
        if (!copied) {
            memcpy(buf, in, (size_t)nargs * sizeof *buf);
            copied = 1;
        }
        tack_arg *a = &buf[i];
        int nd = a->ndim;
        int64_t size = (int64_t)tack_dtype_size(a->dtype), count = 1;
        for (int d = 0; d < nd; d++) count *= a->shape[d];
        /* Each matrix's n*n components must be adjacent, row by row. */
        if (count > 0 && (a->strides[nd - 1] != size || a->strides[nd - 2] != n * size))
            return runtime_error(err, TACK_ERR_VALUE,
                                 "kernel '%s': parameter '%s' is used as an array of %dx%d matrices "
                                 "(%s[...] with %d index%s is a matrix in the kernel), but the "
                                 "array's last two strides (%lld, %lld bytes) do not hold each "
                                 "matrix's components adjacent, row by row (%lld, %lld); pass "
                                 "numpy.ascontiguousarray(...) of it",
                                 k->def->name, k->def->params[i], n, n, k->def->params[i], nd - 2,
                                 nd - 2 == 1 ? "" : "es", (long long)a->strides[nd - 2],
                                 (long long)a->strides[nd - 1], (long long)(n * size),
                                 (long long)size);
        a->vec_width = TACK_MAT_WIDTH(n, n);
        a->ndim = nd - 1;
        a->shape[nd - 2] = (int64_t)n * n;
        a->strides[nd - 2] = size;
        a->shape[nd - 1] = 0;
        a->strides[nd - 1] = 0;
    }
    if (copied) *args = buf;
    return TACK_OK;
}
