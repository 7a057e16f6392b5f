/* matrices.c - matrix values (tack.mat22f ... mat44d), scalarized during
 * lowering as vectors are (vectors.c).  A matrix is an IR_VECTOR whose
 * `dim` is its row count: rows*cols component locals, row-major, computed
 * by a setup block.  Every operation here is unrolled into scalar code on
 * those locals: `@` into sums of products, the determinant into its
 * cofactor expansion, the inverse into the adjugate over the determinant
 * (up to 4x4; larger ones are lu.c's pivoted elimination).
 * Element-wise arithmetic and math functions are vec_map's (vectors.c),
 * which checks that shapes match. */
#include <stdio.h>
#include <string.h>

#include "lower_internal.h"

static int cols_of(const ir_expr *m) { return m->dim ? m->nargs / m->dim : m->nargs; }
static int local_of(const ir_expr *v, int k) { return v->args[k]->index; }

static int push(lowerer *L, ir_block *b, ir_stmt *s) {
    if (!s || ir_block_push(L->f, b, s)) return lower_oom(L);
    return 0;
}

static ir_expr *cast_to(lowerer *L, ir_type t, ir_expr *a, const expr *at) {
    if (!a) return NULL;
    ir_expr *c = ir_expr_new(L->f, IR_CAST, at->line, at->col);
    if (!c) {
        lower_oom(L);
        return NULL;
    }
    c->type = t;
    c->a = a;
    return c;
}

static ir_expr *read_comp(lowerer *L, const ir_expr *v, int k, const expr *at) {
    return lower_read_local(L, local_of(v, k), at);
}

int mat_function(const char *leaf, int *rows, ir_type *component) {
    if (!strncmp(leaf, "mat", 3) && leaf[3] >= '2' && leaf[3] <= '4' && leaf[4] == leaf[3] &&
        (leaf[5] == 'f' || leaf[5] == 'd') && !leaf[6]) {
        *rows = leaf[3] - '0';
        *component = leaf[5] == 'f' ? TACK_F32 : TACK_F64;
        return MAT_CONSTRUCT;
    }
    /* "mat8x12f": a tack.matrix(8, 12, tack.f32) alias called in a kernel */
    int r, c, used = 0;
    char kind = 0;
    if (sscanf(leaf, "mat%dx%d%c%n", &r, &c, &kind, &used) == 3 && !leaf[used] &&
        (kind == 'f' || kind == 'd') && r >= 2 && r <= TACK_MAX_MAT_SIDE && c >= 2 &&
        c <= TACK_MAX_MAT_SIDE) {
        *rows = r + 256 * c;
        *component = kind == 'f' ? TACK_F32 : TACK_F64;
        return MAT_CONSTRUCT;
    }
    if (!strcmp(leaf, "identity")) return MAT_IDENTITY;
    if (!strcmp(leaf, "outer")) return MAT_OUTER;
    if (!strcmp(leaf, "determinant")) return MAT_DETERMINANT;
    if (!strcmp(leaf, "inverse")) return MAT_INVERSE;
    return -1;
}

/* tack.matNNx(): zero; (s00, s01, ...) row by row; (row0, row1, ...). */
static ir_expr *construct(lowerer *L, int shape, ir_type comp, ir_expr **args, int n,
                          const expr *at) {
    int rows = shape % 256, cols = shape / 256 ? shape / 256 : rows, total = rows * cols;
    ir_expr *out = mat_new(L, rows, cols, at);
    if (!out) return NULL;
    for (int i = 0; i < n; i++)
        if (!args[i]) return NULL;
    if (n == 0) {
        for (int k = 0; k < total; k++)
            if (lower_set_local(L, out->body, local_of(out, k),
                                cast_to(L, comp, ir_const_int(L->f, 0, IRT_WEAK_INT, at->line, at->col), at), at))
                return NULL;
        return out;
    }
    if (n == rows && vec_is(args[0])) {
        for (int r = 0; r < rows; r++) {
            if (!vec_is(args[r]) || args[r]->dim || args[r]->nargs != cols) {
                ERR(L, at->line, at->col, "a %dx%d matrix's rows are %d-component vectors (argument %d)",
                    rows, cols, cols, r + 1);
                return NULL;
            }
            if (vec_eval(L, out->body, args[r])) return NULL;
            for (int c = 0; c < cols; c++)
                if (lower_set_local(L, out->body, local_of(out, r * cols + c),
                                    cast_to(L, comp, read_comp(L, args[r], c, at), at), at))
                    return NULL;
        }
        return out;
    }
    if (n == 1 && !vec_is(args[0])) { /* Warp's wp.mat22(s): every component s */
        int fill = lower_temp(L, "fill");
        if (fill < 0 || lower_set_local(L, out->body, fill, cast_to(L, comp, args[0], at), at))
            return NULL;
        for (int k = 0; k < total; k++)
            if (lower_set_local(L, out->body, local_of(out, k), lower_read_local(L, fill, at), at))
                return NULL;
        return out;
    }
    if (n != total) {
        ERR(L, at->line, at->col, "a %dx%d matrix takes no values (zero), one scalar (every "
            "component), %d scalars row by row, or %d row vectors; got %d", rows, cols, total, rows, n);
        return NULL;
    }
    /* Scalars: each evaluated once, in order, into its component. */
    for (int k = 0; k < total; k++) {
        if (vec_is(args[k])) {
            ERR(L, at->line, at->col, "matrix components must be scalars (argument %d)", k + 1);
            return NULL;
        }
        if (lower_set_local(L, out->body, local_of(out, k), cast_to(L, comp, args[k], at), at))
            return NULL;
    }
    return out;
}

static ir_expr *identity(lowerer *L, int n, ir_type comp, const expr *at) {
    ir_expr *out = mat_new(L, n, n, at);
    if (!out) return NULL;
    for (int k = 0; k < n * n; k++) {
        ir_expr *one = ir_const_int(L->f, k / n == k % n, IRT_WEAK_INT, at->line, at->col);
        if (lower_set_local(L, out->body, local_of(out, k), cast_to(L, comp, one, at), at)) return NULL;
    }
    return out;
}

ir_expr *mat_identity(lowerer *L, int n, ir_type comp, const expr *at) {
    return identity(L, n, comp, at);
}

static ir_expr *outer(lowerer *L, ir_expr *u, ir_expr *v, const expr *at) {
    if (!vec_is(u) || !vec_is(v) || u->dim || v->dim) {
        ERR(L, at->line, at->col, "tack.outer(u, v) takes two vectors");
        return NULL;
    }
    ir_expr *out = mat_new(L, u->nargs, v->nargs, at);
    if (!out || vec_eval(L, out->body, u) || vec_eval(L, out->body, v)) return NULL;
    for (int r = 0; r < u->nargs; r++)
        for (int c = 0; c < v->nargs; c++)
            if (lower_set_local(L, out->body, local_of(out, r * v->nargs + c),
                                lower_bin(L, OP_MUL, read_comp(L, u, r, at), read_comp(L, v, c, at), at), at))
                return NULL;
    return out;
}

/* The determinant of the k x k submatrix of m (n columns) on rows[] and
 * cols[], expanded along its first row; fresh reads of m's locals. */
static ir_expr *det_of(lowerer *L, const ir_expr *m, int n, const int *rows, const int *cols,
                       int k, const expr *at) {
#define AT(r, c) read_comp(L, m, rows[r] * n + cols[c], at)
    if (k == 1) return AT(0, 0);
    if (k == 2) return lower_bin(L, OP_SUB, lower_bin(L, OP_MUL, AT(0, 0), AT(1, 1), at),
                           lower_bin(L, OP_MUL, AT(0, 1), AT(1, 0), at), at);
    ir_expr *sum = NULL;
    for (int j = 0; j < k; j++) {
        int sub_cols[4], s = 0;
        for (int c = 0; c < k; c++)
            if (c != j) sub_cols[s++] = cols[c];
        ir_expr *term = lower_bin(L, OP_MUL, AT(0, j), det_of(L, m, n, rows + 1, sub_cols, k - 1, at), at);
        sum = !sum ? term : lower_bin(L, j % 2 ? OP_SUB : OP_ADD, sum, term, at);
    }
    return sum;
#undef AT
}

static const int seq[4] = {0, 1, 2, 3};

static int need_square(lowerer *L, const ir_expr *m, const char *what, const expr *at) {
    if (!vec_is(m) || !m->dim || m->dim != cols_of(m)) {
        ERR(L, at->line, at->col, "tack.%s() needs a square matrix", what);
        return -1;
    }
    return 0;
}

static ir_expr *determinant(lowerer *L, ir_expr *m, const expr *at) {
    if (need_square(L, m, "determinant", at)) return NULL;
    if (m->dim > 4) return mat_lu_determinant(L, m, at);
    ir_expr *x = ir_expr_new(L->f, IR_INLINE, at->line, at->col);
    ir_block *body = arena_alloc(&L->f->mem, sizeof *body);
    int r = lower_temp(L, "det");
    if (!x || !body || r < 0) {
        lower_oom(L);
        return NULL;
    }
    x->body = body;
    x->index = r;
    x->inline_id = L->f->ninlines++;
    if (vec_eval(L, body, m)) return NULL;
    return lower_set_local(L, body, r, det_of(L, m, m->dim, seq, seq, m->dim, at), at) ? NULL : x;
}

/* inverse = adjugate / determinant: entry (i, j) is cofactor (j, i) over
 * the determinant.  A singular matrix divides by zero: inf and nan, as
 * in Warp, and nothing is checked. */
static ir_expr *inverse(lowerer *L, ir_expr *m, const expr *at) {
    if (need_square(L, m, "inverse", at)) return NULL;
    if (m->dim > 4) return mat_lu_inverse(L, m, at);
    int n = m->dim;
    ir_expr *out = mat_new(L, n, n, at);
    int det = lower_temp(L, "det");
    if (!out || det < 0 || vec_eval(L, out->body, m)) return NULL;
    if (lower_set_local(L, out->body, det, det_of(L, m, n, seq, seq, n, at), at)) return NULL;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            /* Cofactor (j, i): the minor without row j and column i. */
            int rows[4], cols[4], nr = 0, nc = 0;
            for (int t = 0; t < n; t++) {
                if (t != j) rows[nr++] = t;
                if (t != i) cols[nc++] = t;
            }
            ir_expr *minor = det_of(L, m, n, rows, cols, n - 1, at);
            if (!minor) return NULL;
            if ((i + j) % 2) {
                ir_expr *neg = ir_expr_new(L->f, IR_UNOP, at->line, at->col);
                if (!neg) {
                    lower_oom(L);
                    return NULL;
                }
                neg->op = OP_NEG;
                neg->a = minor;
                minor = neg;
            }
            if (lower_set_local(L, out->body, local_of(out, i * n + j),
                                lower_bin(L, OP_DIV, minor, lower_read_local(L, det, at), at), at))
                return NULL;
        }
    return out;
}

ir_expr *mat_call(lowerer *L, int which, int rows, ir_type component, ir_expr **args, int n,
                  const expr *call) {
    static const char *const names[] = {"", "identity", "outer", "determinant", "inverse"};
    if (which == MAT_CONSTRUCT) return construct(L, rows, component, args, n, call);
    int want = which == MAT_OUTER ? 2 : 1;
    if (n != want) {
        ERR(L, call->line, call->col, "tack.%s() takes %d argument%s, got %d", names[which], want,
            want == 1 ? "" : "s", n);
        return NULL;
    }
    for (int i = 0; i < n; i++)
        if (!args[i]) return NULL;
    if (which == MAT_OUTER) return outer(L, args[0], args[1], call);
    if (which == MAT_DETERMINANT) return determinant(L, args[0], call);
    return inverse(L, args[0], call);
}

/* NumPy's matmul: matrix @ matrix, matrix @ vector (a vector of the
 * matrix's rows), vector @ matrix, and vector @ vector (their dot). */
ir_expr *mat_matmul(lowerer *L, ir_expr *a, ir_expr *b, const expr *at) {
    if (!a || !b) return NULL;
    if (!vec_is(a) || !vec_is(b)) {
        ERR(L, at->line, at->col, "'@' multiplies matrices and vectors, not scalars; use '*'");
        return NULL;
    }
    int ar = a->dim ? a->dim : 1, ak = cols_of(a);         /* a vector is a row */
    int bk = b->dim ? b->dim : b->nargs, bc = b->dim ? cols_of(b) : 1; /* ... or a column */
    if (ak != bk) {
        char sa[64], sb[64];
        vec_shape_name(a, sa, sizeof sa);
        vec_shape_name(b, sb, sizeof sb);
        ERR(L, at->line, at->col, "'@' of a %s and a %s: the inner sizes %d and %d differ", sa, sb,
            ak, bk);
        return NULL;
    }
    if (!a->dim && !b->dim) return vec_method(L, "dot", a, &b, 1, at);
    ir_expr *out = a->dim && b->dim ? mat_new(L, ar, bc, at) : vec_new(L, a->dim ? ar : bc, at);
    if (!out || vec_eval(L, out->body, a) || vec_eval(L, out->body, b)) return NULL;
    for (int r = 0; r < ar; r++)
        for (int c = 0; c < bc; c++) {
            ir_expr *sum = NULL;
            for (int k = 0; k < ak; k++) {
                ir_expr *p = lower_bin(L, OP_MUL, read_comp(L, a, r * ak + k, at),
                                 read_comp(L, b, k * bc + c, at), at);
                sum = !sum ? p : lower_bin(L, OP_ADD, sum, p, at);
            }
            if (lower_set_local(L, out->body, local_of(out, r * bc + c), sum, at)) return NULL;
        }
    return out;
}

ir_expr *mat_transpose(lowerer *L, ir_expr *m, const expr *at) {
    if (!m) return NULL;
    if (!vec_is(m) || !m->dim) {
        ERR(L, at->line, at->col, "'.T' needs a matrix");
        return NULL;
    }
    int rows = m->dim, cols = cols_of(m);
    ir_expr *out = mat_new(L, cols, rows, at);
    if (!out || vec_eval(L, out->body, m)) return NULL;
    for (int r = 0; r < rows; r++)
        for (int c = 0; c < cols; c++)
            if (lower_set_local(L, out->body, local_of(out, c * rows + r), read_comp(L, m, r * cols + c, at), at))
                return NULL;
    return out;
}

/* A constant index: an int literal, negative ones counting from the end
 * as in NumPy. */
static int const_index(lowerer *L, const expr *e, int extent, const char *what, const expr *at,
                       int *out) {
    int neg = e->kind == EX_UNARY && !strcmp(e->op, "-") && e->a->kind == EX_INT;
    const expr *lit = neg ? e->a : e;
    if (lit->kind != EX_INT) {
        ERR(L, e->line, e->col, "%s indices must be integer constants", what);
        return -1;
    }
    long long v = lit->ival > 64 ? 64 : (long long)lit->ival;
    if (neg) v = -v;
    if (v < -extent || v >= extent) {
        ERR(L, e->line, e->col, "index %s%llu is out of range for %s of extent %d", neg ? "-" : "",
            (unsigned long long)lit->ival, what[0] == 'm' ? "a matrix dimension" : "a vector", extent);
        (void)at;
        return -1;
    }
    *out = (int)(v < 0 ? v + extent : v);
    return 0;
}

int mat_component_index(lowerer *L, const ir_expr *v, const expr *sub, int *first, int *count,
                        int *stride) {
    if (!vec_is(v)) {
        ERR(L, sub->line, sub->col, "only arrays, vectors and matrices can be indexed");
        return -1;
    }
    int rows = v->dim, cols = cols_of(v);
    const char *what = rows ? "matrix" : "vector";
    int want = rows ? 2 : 1;
    if (sub->nitems > want || (!rows && sub->nitems != 1)) {
        ERR(L, sub->line, sub->col, "a %s takes %d index%s, not %d", what, want, want == 1 ? "" : "es",
            sub->nitems);
        return -1;
    }
    int r, c;
    if (!rows) {
        if (const_index(L, sub->items[0], v->nargs, what, sub, &c)) return -1;
        *first = c, *count = 1, *stride = 1;
        return 0;
    }
    if (const_index(L, sub->items[0], rows, what, sub, &r)) return -1;
    if (sub->nitems == 1) { /* m[r]: row r */
        *first = r * cols, *count = cols, *stride = 1;
        return 0;
    }
    if (const_index(L, sub->items[1], cols, what, sub, &c)) return -1;
    *first = r * cols + c, *count = 1, *stride = 1;
    return 0;
}

/* The components `first`, first + 1, ... of v: a scalar, or a row. */
ir_expr *mat_select(lowerer *L, ir_expr *v, int first, int count, const expr *at) {
    if (count == 1) return vec_component_at(L, v, first, at);
    ir_expr *out = vec_new(L, count, at);
    if (!out || vec_eval(L, out->body, v)) return NULL;
    for (int k = 0; k < count; k++)
        if (lower_set_local(L, out->body, local_of(out, k), read_comp(L, v, first + k, at), at)) return NULL;
    return out;
}

/* ---- component stores ---- */

/* Stores `value` (a scalar for one component, a vector for a row) into
 * components first.. of array element `idx` of param p. */
static int store_components(lowerer *L, ir_block *b, int p, ir_expr **idx, int n, int first,
                            int count, ir_expr *value, const stmt *at) {
    const expr where = {.line = at->line, .col = at->col};
    if (count == 1 ? vec_is(value) : !vec_is(value) || value->dim || value->nargs != count) {
        if (count == 1) ERR(L, at->line, at->col, "a component takes a scalar");
        else ERR(L, at->line, at->col, "a matrix row takes a %d-component vector", count);
        return -1;
    }
    int itmp[TACK_MAX_NDIM];
    for (int i = 0; i < n; i++) {
        if ((itmp[i] = lower_temp(L, "i")) < 0 || lower_set_local(L, b, itmp[i], idx[i], &where))
            return -1;
    }
    int scalar = -1;
    if (count == 1) {
        if ((scalar = lower_temp(L, "c")) < 0 || lower_set_local(L, b, scalar, value, &where)) return -1;
    } else if (vec_eval(L, b, value)) {
        return -1;
    }
    L->f->params[p].written = 1;
    for (int k = 0; k < count; k++) {
        ir_stmt *s = ir_stmt_new(L->f, IR_STORE, at->line, at->col);
        ir_expr **args = arena_alloc(&L->f->mem, (n + 1) * sizeof *args);
        if (!s || !args) return lower_oom(L);
        for (int i = 0; i < n; i++) args[i] = lower_read_local(L, itmp[i], &where);
        args[n] = ir_const_int(L->f, first + k, IRT_WEAK_INT, at->line, at->col);
        s->index = p;
        s->indices = args;
        s->nindices = n + 1;
        s->value = lower_read_local(L, scalar >= 0 ? scalar : local_of(value, k), &where);
        if (push(L, b, s)) return -1;
    }
    return 0;
}

/* x[i][k] = s, x[i][r, c] = s and x[i][r] = row with indices known when
 * the kernel runs: dyn_write_element's stores. */
static int store_dynamic_component(lowerer *L, ir_block *b, const expr *base, int p,
                                   const expr *sub, ir_expr *value, const stmt *at) {
    if (!value) return -1;
    return dyn_write_element(L, b, base, p, sub, value, -1, at);
}

/* The same into a vector or matrix local. */
static int assign_components(lowerer *L, ir_block *b, const binding *bound, int first, int count,
                             ir_expr *value, const stmt *at) {
    const expr where = {.line = at->line, .col = at->col};
    if (count == 1 ? vec_is(value) : !vec_is(value) || value->dim || value->nargs != count) {
        if (count == 1) ERR(L, at->line, at->col, "a component takes a scalar");
        else ERR(L, at->line, at->col, "a matrix row takes a %d-component vector", count);
        return -1;
    }
    if (count == 1) return lower_set_local(L, b, bound->comps[first], value, &where);
    if (vec_eval(L, b, value)) return -1;
    for (int k = 0; k < count; k++)
        if (lower_set_local(L, b, bound->comps[first + k], read_comp(L, value, k, &where), &where))
            return -1;
    return 0;
}

/* The array parameter a chain x[i][j]... starts from, or -1. */
static int chain_param(lowerer *L, const expr *e) {
    while (e->kind == EX_SUBSCRIPT) e = e->a;
    if (e->kind == EX_NAME) {
        const binding *b = scope_find(L->sc, e->name);
        if (b && b->kind == BIND_ROW) return b->row_scratch ? -1 : b->index;
    }
    return array_param_of(L, e);
}

int mat_is_element_of(lowerer *L, const expr *e) {
    if (e->kind != EX_SUBSCRIPT || (e->a->kind == EX_ATTR && !strcmp(e->a->name, "shape")))
        return 0;
    int p = chain_param(L, e);
    return p >= 0 && vec_width_of(L, p);
}

int mat_assign_component(lowerer *L, ir_block *b, const expr *t, ir_expr *value, const stmt *at) {
    const expr *base;
    if (t->kind == EX_ATTR) {
        base = t->a;
        const char *comp = strchr("xyzw", t->name[0]);
        expr lit = {0};
        lit.kind = EX_INT;
        lit.ival = (uint64_t)(comp - "xyzw");
        if (base->kind == EX_NAME) {
            const binding *bound = scope_find(L->sc, base->name);
            if (!bound || bound->kind != BIND_VECTOR || bound->rows) {
                ERR(L, t->line, t->col, "'.%s' can be assigned on a vector only", t->name);
                return -1;
            }
            if (lit.ival >= (uint64_t)bound->width) {
                ERR(L, t->line, t->col, "component '%s' of a %d-component vector", t->name, bound->width);
                return -1;
            }
            return assign_components(L, b, bound, (int)lit.ival, 1, value, at);
        }
        if (!mat_is_element_of(L, base)) {
            ERR(L, t->line, t->col, "'.%s' can be assigned on a vector local or an element of an "
                "array of vectors only", t->name);
            return -1;
        }
        int p = chain_param(L, base), n;
        if (mat_rows_of(L, p)) {
            ERR(L, t->line, t->col, "'.%s' needs a vector; a matrix's components are m[row, col]",
                t->name);
            return -1;
        }
        if (lit.ival >= (uint64_t)vec_width_of(L, p)) {
            ERR(L, t->line, t->col, "component '%s' of a %d-component vector", t->name,
                vec_width_of(L, p));
            return -1;
        }
        ir_expr **idx = lower_indices(L, base, &p, &n);
        if (!idx) return -1;
        return store_components(L, b, p, idx, n, (int)lit.ival, 1, value, at);
    }
    if (t->kind != EX_SUBSCRIPT) return 1;
    const expr *sub = t;
    base = t->a;
    if (base->kind == EX_NAME) {
        const binding *bound = scope_find(L->sc, base->name);
        if (!bound || bound->kind != BIND_VECTOR) return 1;
        if (dyn_is_dynamic(sub)) return dyn_assign(L, b, bound, sub, value, at);
        ir_expr *cur = vec_read_local(L, bound, base);
        int first, count, stride;
        if (!cur || mat_component_index(L, cur, sub, &first, &count, &stride)) return -1;
        return assign_components(L, b, bound, first, count, value, at);
    }
    /* x[i][r, c] = s; x[i][j] (one index) stays a row's element. */
    int whole = mat_chain_is_element(L, base); /* x[i][k] of a 1-D array of vectors too */
    if (!mat_is_element_of(L, base) || (!whole && sub->nitems != 2)) return 1;
    int p = chain_param(L, base), n;
    if (!whole && !mat_rows_of(L, p)) return 1;
    if (dyn_is_dynamic(sub)) return store_dynamic_component(L, b, base, p, sub, value, at);
    /* x[i][r, c] = s: the shape of an element, for the indices' check. */
    ir_expr shape = {.kind = IR_VECTOR, .nargs = vec_width_of(L, p), .dim = mat_rows_of(L, p)};
    int first, count, stride;
    if (mat_component_index(L, &shape, sub, &first, &count, &stride)) return -1;
    ir_expr **idx = lower_indices(L, base, &p, &n);
    if (!idx) return -1;
    return store_components(L, b, p, idx, n, first, count, value, at);
}

/* ---- which subscript chain is a whole element ----
 *
 * Lowering does not know an array's dimensions, only how the kernel indexes
 * it.  For an array of vectors or matrices, x[i] is its element (a vector
 * value) unless the kernel also indexes x with more indices at once
 * (x[i, j]): then the array has that many dimensions and x[i] is a row.  So
 * `v = x[i]; v[1]`, `x[i][2]` and `m = F[i]; m[1, 0]` read components, and
 * `g[i][j][0, 0]` beside `g[i, j]` stays the element (i, j). */
static int widest_subscript(const expr *e, const char *name) {
    if (!e) return 0;
    int w = 0;
    if (e->kind == EX_SUBSCRIPT && e->a->kind == EX_NAME && !strcmp(e->a->name, name))
        w = e->nitems;
    const expr *kids[3] = {e->a, e->b, e->c};
    for (int i = 0; i < 3; i++) {
        int k = widest_subscript(kids[i], name);
        if (k > w) w = k;
    }
    for (int i = 0; i < e->nitems; i++) {
        int k = widest_subscript(e->items[i], name);
        if (k > w) w = k;
    }
    return w;
}

int lower_widest_index(stmt *const *body, int n, const char *name) {
    int w = 0;
    for (int i = 0; i < n; i++) {
        const stmt *s = body[i];
        int k;
        for (int t = 0; t < s->ntargets; t++)
            if ((k = widest_subscript(s->targets[t], name)) > w) w = k;
        if ((k = widest_subscript(s->value, name)) > w) w = k;
        if ((k = lower_widest_index(s->body, s->nbody, name)) > w) w = k;
        if ((k = lower_widest_index(s->orelse, s->norelse, name)) > w) w = k;
    }
    return w;
}

int mat_chain_is_element(lowerer *L, const expr *e) {
    if (!mat_is_element_of(L, e)) return 0;
    int total = 0;
    const expr *root = e;
    for (; root->kind == EX_SUBSCRIPT; root = root->a) total += root->nitems;
    if (root->kind != EX_NAME) return 0;
    const binding *b = scope_find(L->sc, root->name);
    const char *name = root->name;
    if (b && b->kind == BIND_ROW) { /* r = g[i]; r[j]: g's element when g is 2-D */
        if (b->row_scratch) return 0;
        total += b->nprefix;
        name = L->f->params[b->index].name;
    }
    const func_def *d = L->sc->def;
    int dims = d ? lower_widest_index(d->body, d->nbody, name) : 0;
    return total == (dims > 1 ? dims : 1);
}

int mat_target_kind(lowerer *L, const expr *t) {
    if (t->kind == EX_ATTR) return t->a->kind == EX_NAME ? 1 : 2;
    if (t->kind != EX_SUBSCRIPT) return 0;
    if (t->a->kind == EX_NAME) {
        const binding *bound = scope_find(L->sc, t->a->name);
        return bound && bound->kind == BIND_VECTOR ? 1 : 0;
    }
    if (mat_chain_is_element(L, t->a)) return 2;
    return mat_is_element_of(L, t->a) && t->nitems == 2 && mat_rows_of(L, chain_param(L, t->a)) ? 2 : 0;
}

int mat_is_value_subscript(lowerer *L, const expr *e) {
    const expr *a = e->a;
    if (a->kind == EX_NAME) {
        const binding *bound = scope_find(L->sc, a->name);
        /* a vector local, or a finished vector reduction (c[0] after the loop) */
        return bound && (bound->kind == BIND_VECTOR || (bound->kind == BIND_FINISHED && bound->width));
    }
    if (a->kind == EX_CALL || a->kind == EX_BINOP || a->kind == EX_UNARY || a->kind == EX_IFEXP ||
        (a->kind == EX_ATTR && !strcmp(a->name, "T")))
        return 1;
    const expr *root = a; /* f(...).rot[0, 1]: a field of a returned record */
    while (root->kind == EX_ATTR) root = root->a;
    if (root != a && root->kind == EX_CALL) return 1;
    if (mat_chain_is_element(L, a)) return 1;
    return mat_is_element_of(L, a) && e->nitems == 2 && mat_rows_of(L, chain_param(L, a));
}

ir_expr *mat_subscript(lowerer *L, const expr *e) {
    ir_expr *v = lower_expr(L, e->a);
    if (v && vec_is(v) && dyn_is_dynamic(e)) return dyn_subscript(L, v, e);
    int first, count, stride;
    if (!v || mat_component_index(L, v, e, &first, &count, &stride)) return NULL;
    return mat_select(L, v, first, count, e);
}

/* The atomic form of `x[i][k] op= v`, `x[i][r, c] op= v` and `x[i][r] op=
 * row` with indices known when the kernel runs: dyn_write_element's
 * atomics, the value lowered after the element's indices as a plain
 * update lowers them. */
static int dynamic_component_update(lowerer *L, ir_block *b, const stmt *s, int p,
                                    ir_atomic_op aop) {
    return dyn_write_element(L, b, s->targets[0]->a, p, s->targets[0], NULL, (int)aop, s);
}

/* The atomic form of `x[i].x op= v` / `x[i][r, c] op= v` (updates.c). */
int mat_component_update(lowerer *L, ir_block *b, const stmt *s, ir_atomic_op aop) {
    const expr *t = s->targets[0];
    const expr where = {.line = s->line, .col = s->col};
    int p = chain_param(L, t->a), n, first;
    if (t->kind == EX_SUBSCRIPT && dyn_is_dynamic(t)) return dynamic_component_update(L, b, s, p, aop);
    if (t->kind == EX_ATTR) {
        first = (int)(strchr("xyzw", t->name[0]) - "xyzw");
    } else {
        ir_expr shape = {.kind = IR_VECTOR, .nargs = vec_width_of(L, p), .dim = mat_rows_of(L, p)};
        int count, stride;
        if (mat_component_index(L, &shape, t, &first, &count, &stride)) return -1;
        /* x[i][r] op= row at a constant r: an atomic per component too */
        if (count > 1) return dynamic_component_update(L, b, s, p, aop);
    }
    ir_expr **idx = lower_indices(L, t->a, &p, &n);
    ir_expr *v = idx ? lower_expr(L, s->value) : NULL;
    if (!v) return -1;
    int itmp[TACK_MAX_NDIM];
    for (int i = 0; i < n; i++)
        if ((itmp[i] = lower_temp(L, "i")) < 0 || lower_set_local(L, b, itmp[i], idx[i], &where)) return -1;
    ir_stmt *eval = ir_stmt_new(L->f, IR_EVAL, s->line, s->col);
    ir_expr *x = ir_expr_new(L->f, IR_ATOMIC, s->line, s->col);
    ir_expr **args = arena_alloc(&L->f->mem, (n + 1) * sizeof *args);
    if (!eval || !x || !args) return lower_oom(L);
    for (int i = 0; i < n; i++) args[i] = lower_read_local(L, itmp[i], &where);
    args[n] = ir_const_int(L->f, first, IRT_WEAK_INT, s->line, s->col);
    x->index = p;
    x->atomic = aop;
    x->dim = 1;
    x->args = args;
    x->nargs = n + 1;
    x->a = v;
    eval->value = x;
    return push(L, b, eval);
}
