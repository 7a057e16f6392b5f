/* lu.c - the determinant and inverse of square matrices of 5x5 to 16x16
 * (tack.matrix(n, n, dtype)), unrolled at lowering time.  2x2..4x4 use
 * cofactors (matrices.c); beyond that the expansion grows as n!, so these
 * run Gaussian elimination with partial pivoting on a working copy of the
 * components in scalar locals:
 *
 *   for each column k: bring the row (k..n-1) with the largest |a[i][k]|
 *   to row k (compare-and-swap with each row below in turn; the first
 *   largest stays, as LAPACK's pivot search picks it), then eliminate.
 *
 * The determinant is the product of the pivots.  A swapped-in row is
 * negated, which undoes the sign change of the swap, so no sign is kept.
 * A zero pivot (the column is zero from row k down) skips that column's
 * elimination, as LAPACK's getrf does, so a singular matrix's determinant
 * is exactly 0 where NumPy's is.
 *
 * The inverse is Gauss-Jordan on [A | I]: each pivot row is scaled by
 * 1 / pivot and eliminated from every other row; the right half is then
 * A's inverse.  A singular matrix divides by a zero pivot: inf and nan
 * entries, as the cofactor inverse gives (NumPy raises LinAlgError; a
 * kernel cannot, so check tack.determinant first where it matters). */
#include <string.h>

#include "lower_internal.h"

typedef struct lu {
    lowerer *L;
    const expr *at;
    int n, w;  /* rows; columns of the working copy (n, or 2n for [A | I]) */
    int *a;    /* n * w locals, row-major */
    int tmp;   /* the swap's temporary */
} lu;

#define A(s, r, c) ((s)->a[(r) * (s)->w + (c)])

static ir_expr *rd(const lu *s, int local) { return lower_read_local(s->L, local, s->at); }

static int set(const lu *s, ir_block *b, int local, ir_expr *v) {
    return v ? lower_set_local(s->L, b, local, v, s->at) : -1;
}

static ir_expr *fabs_of(const lu *s, ir_expr *x) {
    ir_expr *c = ir_expr_new(s->L->f, IR_CALL, s->at->line, s->at->col);
    ir_expr **args = arena_alloc(&s->L->f->mem, sizeof *args);
    if (!c || !args || !x) {
        if (x) lower_oom(s->L);
        return NULL;
    }
    args[0] = x;
    c->fn = INTR_FABS;
    c->args = args;
    c->nargs = 1;
    return c;
}

static ir_expr *neg(const lu *s, ir_expr *x) {
    ir_expr *e = x ? ir_expr_new(s->L->f, IR_UNOP, s->at->line, s->at->col) : NULL;
    if (!e) {
        if (x) lower_oom(s->L);
        return NULL;
    }
    e->op = OP_NEG;
    e->a = x;
    return e;
}

static ir_stmt *new_if(const lu *s, ir_block *b, ir_expr *cond) {
    ir_stmt *t = cond ? ir_stmt_new(s->L->f, IR_IF, s->at->line, s->at->col) : NULL;
    if (!t || ir_block_push(s->L->f, b, t)) {
        if (cond) lower_oom(s->L);
        return NULL;
    }
    t->value = cond;
    return t;
}

/* if |a[i][k]| > |a[k][k]|: rows i and k trade places (columns k..w-1; the
 * ones to the left are zero in both), the new row k negated.  A branch per
 * pair: PoCL compiled the 16x16 inverse twice as fast as with selects. */
static int pivot_with(const lu *s, ir_block *b, int k, int i) {
    ir_expr *cond = lower_bin(s->L, OP_GT, fabs_of(s, rd(s, A(s, i, k))),
                              fabs_of(s, rd(s, A(s, k, k))), s->at);
    ir_stmt *t = new_if(s, b, cond);
    if (!t) return -1;
    for (int j = k; j < s->w; j++) {
        if (set(s, &t->body, s->tmp, rd(s, A(s, k, j))) ||
            set(s, &t->body, A(s, k, j), neg(s, rd(s, A(s, i, j)))) ||
            set(s, &t->body, A(s, i, j), rd(s, s->tmp)))
            return -1;
    }
    return 0;
}

/* row r -= f * row k, columns from..w-1, f a local. */
static int eliminate(const lu *s, ir_block *b, int r, int k, int f, int from) {
    for (int j = from; j < s->w; j++)
        if (set(s, b, A(s, r, j),
                lower_bin(s->L, OP_SUB, rd(s, A(s, r, j)),
                          lower_bin(s->L, OP_MUL, rd(s, f), rd(s, A(s, k, j)), s->at), s->at)))
            return -1;
    return 0;
}

static int start(lu *s, lowerer *L, ir_block *b, const ir_expr *m, int augmented, const expr *at) {
    s->L = L;
    s->at = at;
    s->n = m->dim;
    s->w = augmented ? 2 * s->n : s->n;
    s->a = arena_alloc(&L->f->mem, (size_t)(s->n * s->w) * sizeof *s->a);
    if (!s->a) return lower_oom(L);
    if ((s->tmp = lower_temp(L, "lu")) < 0) return -1;
    for (int r = 0; r < s->n; r++)
        for (int c = 0; c < s->w; c++) {
            if ((A(s, r, c) = lower_temp(L, "lu")) < 0) return -1;
            ir_expr *v = c < s->n ? rd(s, m->args[r * s->n + c]->index)
                                  : ir_const_float(L->f, c - s->n == r ? 1.0 : 0.0, IRT_WEAK_FLOAT,
                                                   at->line, at->col);
            if (set(s, b, A(s, r, c), v)) return -1;
        }
    return 0;
}

ir_expr *mat_lu_determinant(lowerer *L, ir_expr *m, const expr *at) {
    ir_expr *x = ir_expr_new(L->f, IR_INLINE, at->line, at->col);
    ir_block *body = arena_alloc(&L->f->mem, sizeof *body);
    int det = lower_temp(L, "det"), f = lower_temp(L, "f");
    if (!x || !body || det < 0 || f < 0) {
        lower_oom(L);
        return NULL;
    }
    x->body = body;
    x->index = det;
    x->inline_id = L->f->ninlines++;
    lu s;
    if (vec_eval(L, body, m) || start(&s, L, body, m, 0, at)) return NULL;
    for (int k = 0; k < s.n - 1; k++) {
        for (int i = k + 1; i < s.n; i++)
            if (pivot_with(&s, body, k, i)) return NULL;
        /* a zero pivot: the column is already zero below it; skip */
        ir_stmt *t = new_if(&s, body, lower_bin(L, OP_NE, rd(&s, A(&s, k, k)), lower_ival(L, 0, at), at));
        if (!t) return NULL;
        for (int i = k + 1; i < s.n; i++)
            if (set(&s, &t->body, f, lower_bin(L, OP_DIV, rd(&s, A(&s, i, k)), rd(&s, A(&s, k, k)), at)) ||
                eliminate(&s, &t->body, i, k, f, k + 1))
                return NULL;
    }
    ir_expr *prod = rd(&s, A(&s, 0, 0));
    for (int k = 1; k < s.n; k++) prod = lower_bin(L, OP_MUL, prod, rd(&s, A(&s, k, k)), at);
    return set(&s, body, det, prod) ? NULL : x;
}

ir_expr *mat_lu_inverse(lowerer *L, ir_expr *m, const expr *at) {
    int n = m->dim;
    ir_expr *out = mat_new(L, n, n, at);
    int f = lower_temp(L, "f");
    if (!out || f < 0 || vec_eval(L, out->body, m)) return NULL;
    ir_block *b = out->body;
    lu s;
    if (start(&s, L, b, m, 1, at)) return NULL;
    for (int k = 0; k < n; k++) {
        for (int i = k + 1; i < n; i++)
            if (pivot_with(&s, b, k, i)) return NULL;
        /* row k /= pivot (a zero pivot: inf and nan, see above) */
        if (set(&s, b, f, lower_bin(L, OP_DIV, ir_const_float(L->f, 1.0, IRT_WEAK_FLOAT, at->line, at->col),
                                     rd(&s, A(&s, k, k)), at)))
            return NULL;
        for (int j = k + 1; j < s.w; j++)
            if (set(&s, b, A(&s, k, j), lower_bin(L, OP_MUL, rd(&s, A(&s, k, j)), rd(&s, f), at)))
                return NULL;
        for (int i = 0; i < n; i++)
            if (i != k && (set(&s, b, f, rd(&s, A(&s, i, k))) || eliminate(&s, b, i, k, f, k + 1)))
                return NULL;
    }
    for (int r = 0; r < n; r++)
        for (int c = 0; c < n; c++)
            if (set(&s, b, out->args[r * n + c]->index, rd(&s, A(&s, r, n + c)))) return NULL;
    return out;
}
