/* vector_builtins.c - Warp's and Taichi's vector and matrix functions as
 * tack.X (cross, length, normalize, ddot, trace, diag, skew, sign, clamp,
 * lerp, smoothstep, step, ...) and Taichi's method spellings (v.norm(),
 * v.cross(u), m.transpose(), m.trace(), v.sum(), ...).  Each lowers to
 * unrolled scalar code over the component locals of IR_VECTOR values
 * (vectors.c); element-wise ones also take plain scalars.
 *
 * A result whose type must follow an operand's (sign(x) is -1 or 1 of x's
 * type, step(x) 0 or 1) is a local first assigned the operand and then the
 * value: inference joins the two assignments, so the weak literals take
 * the operand's type and the dead first store is optimized away. */
#include <stdio.h>
#include <string.h>

#include "lower_internal.h"

static const struct { const char *name; int which; int nmin, nmax; } functions[] = {
    {"cross", VB_CROSS, 2, 2},         {"length", VB_LENGTH, 1, 1},
    {"length_sq", VB_LENGTH_SQ, 1, 1}, {"normalize", VB_NORMALIZE, 1, 1},
    {"dot", VB_DOT, 2, 2},             {"ddot", VB_DDOT, 2, 2},
    {"trace", VB_TRACE, 1, 1},         {"diag", VB_DIAG, 1, 1},
    {"get_diag", VB_GET_DIAG, 1, 1},   {"skew", VB_SKEW, 1, 1},
    {"transpose", VB_TRANSPOSE, 1, 1}, {"sign", VB_SIGN, 1, 1},
    {"clamp", VB_CLAMP, 3, 3},         {"lerp", VB_LERP, 3, 3},
    {"smoothstep", VB_SMOOTHSTEP, 3, 3}, {"step", VB_STEP, 1, 2},
    {"min", VB_MIN, 1, 16},            {"max", VB_MAX, 1, 16},
    {"abs", VB_ABS, 1, 1},             {"cw_mul", VB_CW_MUL, 2, 2},
    {"cw_div", VB_CW_DIV, 2, 2},       {"matrix_from_rows", VB_FROM_ROWS, 2, 16},
    {"matrix_from_cols", VB_FROM_COLS, 2, 16}, {"argmin", VB_ARGMIN, 1, 1},
    {"argmax", VB_ARGMAX, 1, 1},       {"vec2", VB_VEC2, 0, 2},
    {"vec3", VB_VEC3, 0, 3},           {"vec4", VB_VEC4, 0, 4},
    /* tack.vector(x0, ..., xn): a vector of the arguments' promoted type
     * and count (Warp's wp.vector); outside kernels tack.vector(n, dtype)
     * is the dtype. */
    {"vector", VB_VECN, 2, TACK_MAX_VEC_WIDTH},
    /* tack.quat(x, y, z, w), tack.quat(v4), tack.quat(): Warp's wp.quat, a
     * quaternion of the arguments' promoted type (quaternions.c) */
    {"quat", VB_QUAT, 0, 4},
    /* tack.sum(v): every component added (Taichi's v.sum() as a function) */
    {"sum", VB_SUM, 1, 1},
    /* tack.where(cond, if_true, if_false) (Warp's wp.where), and Warp's
     * older tack.select(cond, if_false, if_true): scalars, vectors,
     * matrices and complex numbers */
    {"where", VB_WHERE, 3, 3},         {"select", VB_SELECT, 3, 3},
    {NULL, 0, 0, 0}};

int vb_function(const char *leaf) {
    for (int i = 0; functions[i].name; i++)
        if (!strcmp(leaf, functions[i].name)) return functions[i].which;
    return -1;
}

static const char *fn_name(int which) {
    for (int i = 0; functions[i].name; i++)
        if (functions[i].which == which) return functions[i].name;
    return "?";
}

/* ---- building IR ---- */

static int comp(const ir_expr *v, int k) { return v->args[k]->index; }
static int cols(const ir_expr *m) { return m->dim ? m->nargs / m->dim : m->nargs; }

static ir_expr *rd(lowerer *L, int local, const expr *at) { return lower_read_local(L, local, at); }

ir_expr *lower_bin(lowerer *L, ir_op op, ir_expr *a, ir_expr *b, const expr *at) {
    if (!a || !b) return NULL;
    ir_expr *x = ir_expr_new(L->f, IR_BINOP, at->line, at->col);
    if (!x) {
        lower_oom(L);
        return NULL;
    }
    x->op = op;
    x->a = a;
    x->b = b;
    return x;
}

static ir_expr *call(lowerer *L, ir_intrinsic fn, ir_expr *a, ir_expr *b, const expr *at) {
    if (!a || (ir_intrinsic_nargs(fn) != 1 && !b)) return NULL;
    ir_expr *x = ir_expr_new(L->f, IR_CALL, at->line, at->col);
    ir_expr **args = arena_alloc(&L->f->mem, 2 * sizeof *args);
    if (!x || !args) {
        lower_oom(L);
        return NULL;
    }
    args[0] = a;
    args[1] = b;
    x->fn = fn;
    x->args = args;
    x->nargs = ir_intrinsic_nargs(fn) == 1 ? 1 : 2;
    return x;
}

ir_expr *lower_sel(lowerer *L, ir_expr *cond, ir_expr *a, ir_expr *b, const expr *at) {
    if (!cond || !a || !b) return NULL;
    ir_expr *x = ir_expr_new(L->f, IR_SELECT, at->line, at->col);
    if (!x) {
        lower_oom(L);
        return NULL;
    }
    x->cond = cond;
    x->a = a;
    x->b = b;
    return x;
}

ir_expr *lower_ival(lowerer *L, int v, const expr *at) {
    ir_expr *x = ir_const_int(L->f, v, IRT_WEAK_INT, at->line, at->col);
    if (!x) lower_oom(L);
    return x;
}

static ir_expr *fval(lowerer *L, double v, const expr *at) {
    ir_expr *x = ir_const_float(L->f, v, IRT_WEAK_FLOAT, at->line, at->col);
    if (!x) lower_oom(L);
    return x;
}

/* A scalar computed by a block: an IR_INLINE reading local *result. */
static ir_expr *scalar_block(lowerer *L, ir_block **body, int *result, const expr *at) {
    ir_expr *x = ir_expr_new(L->f, IR_INLINE, at->line, at->col);
    *body = arena_alloc(&L->f->mem, sizeof **body);
    *result = lower_temp(L, "r");
    if (!x || !*body || *result < 0) {
        lower_oom(L);
        return NULL;
    }
    x->body = *body;
    x->index = *result;
    x->inline_id = L->f->ninlines++;
    return x;
}

static int hoist(lowerer *L, ir_block *b, ir_expr *s, const expr *at) {
    int t = lower_temp(L, "a");
    if (t < 0 || lower_set_local(L, b, t, s, at)) return -1;
    return t;
}

static int need_vector(lowerer *L, const ir_expr *v, const char *what, const expr *at) {
    if (!vec_is(v) || v->dim) {
        ERR(L, at->line, at->col, "%s needs a vector%s", what, vec_is(v) ? ", not a matrix" : "");
        return -1;
    }
    return 0;
}

static int need_matrix(lowerer *L, const ir_expr *m, int square, const char *what, const expr *at) {
    if (!vec_is(m) || !m->dim || (square && m->dim != cols(m))) {
        ERR(L, at->line, at->col, "%s needs a %smatrix", what, square ? "square " : "");
        return -1;
    }
    return 0;
}

/* ---- element-wise functions of scalars and vectors ---- */

/* Per component (or once for scalars): `locals` hold the operands'
 * components, evaluated once; `into` is the result local. */
typedef int (*elem_fn)(lowerer *L, ir_block *b, int into, const int *locals, int n, const expr *at);

static ir_expr *elementwise(lowerer *L, ir_expr **ops, int n, elem_fn fn, const char *what,
                            const expr *at) {
    const ir_expr *shape = NULL;
    for (int i = 0; i < n; i++) {
        if (!ops[i]) return NULL;
        if (!vec_is(ops[i])) continue;
        if (shape && (shape->nargs != ops[i]->nargs || shape->dim != ops[i]->dim)) {
            char a[64], b[64];
            vec_shape_name(shape, a, sizeof a);
            vec_shape_name(ops[i], b, sizeof b);
            ERR(L, at->line, at->col, "tack.%s() of a %s and a %s: the shapes differ", what, a, b);
            return NULL;
        }
        shape = ops[i];
    }
    int tmp[4];
    if (!shape) {
        ir_block *body;
        int r;
        ir_expr *x = scalar_block(L, &body, &r, at);
        if (!x) return NULL;
        for (int i = 0; i < n; i++)
            if ((tmp[i] = hoist(L, body, ops[i], at)) < 0) return NULL;
        return fn(L, body, r, tmp, n, at) ? NULL : x;
    }
    ir_expr *out = vec_new(L, shape->nargs, at);
    if (!out) return NULL;
    out->dim = shape->dim;
    for (int i = 0; i < n; i++) {
        if (vec_is(ops[i]) ? vec_eval(L, out->body, ops[i])
                           : (tmp[i] = hoist(L, out->body, ops[i], at)) < 0)
            return NULL;
    }
    for (int k = 0; k < shape->nargs; k++) {
        int locals[4];
        for (int i = 0; i < n; i++) locals[i] = vec_is(ops[i]) ? comp(ops[i], k) : tmp[i];
        if (fn(L, out->body, comp(out, k), locals, n, at)) return NULL;
    }
    return out;
}

/* Warp's sign: -1 where x < 0, else 1, in x's type. */
static int sign_of(lowerer *L, ir_block *b, int into, const int *x, int n, const expr *at) {
    (void)n;
    if (lower_set_local(L, b, into, rd(L, x[0], at), at)) return -1;
    return lower_set_local(L, b, into, lower_sel(L, lower_bin(L, OP_LT, rd(L, x[0], at), lower_ival(L, 0, at), at),
                                         lower_ival(L, -1, at), lower_ival(L, 1, at), at), at);
}

/* step(x) (Warp): 1 where x < 0, else 0.  step(edge, x) (Taichi, GLSL):
 * 0 where x < edge, else 1. */
static int step_of(lowerer *L, ir_block *b, int into, const int *x, int n, const expr *at) {
    int v = x[n - 1];
    if (lower_set_local(L, b, into, rd(L, v, at), at)) return -1;
    ir_expr *lt = lower_bin(L, OP_LT, rd(L, v, at), n == 2 ? rd(L, x[0], at) : lower_ival(L, 0, at), at);
    return lower_set_local(L, b, into, n == 2 ? lower_sel(L, lt, lower_ival(L, 0, at), lower_ival(L, 1, at), at)
                                              : lower_sel(L, lt, lower_ival(L, 1, at), lower_ival(L, 0, at), at), at);
}

static int clamp_of(lowerer *L, ir_block *b, int into, const int *x, int n, const expr *at) {
    (void)n;
    return lower_set_local(L, b, into, call(L, INTR_MIN, call(L, INTR_MAX, rd(L, x[0], at),
                                                              rd(L, x[1], at), at),
                                            rd(L, x[2], at), at), at);
}

/* lerp(a, b, t) = a + t * (b - a) */
static int lerp_of(lowerer *L, ir_block *b, int into, const int *x, int n, const expr *at) {
    (void)n;
    return lower_set_local(L, b, into, lower_bin(L, OP_ADD, rd(L, x[0], at),
                                           lower_bin(L, OP_MUL, rd(L, x[2], at),
                                               lower_bin(L, OP_SUB, rd(L, x[1], at), rd(L, x[0], at), at), at),
                                           at), at);
}

/* smoothstep(e0, e1, x): t = clamp((x - e0) / (e1 - e0), 0, 1); t*t*(3 - 2t) */
static int smoothstep_of(lowerer *L, ir_block *b, int into, const int *x, int n, const expr *at) {
    (void)n;
    int t = lower_temp(L, "t");
    if (t < 0) return -1;
    ir_expr *q = lower_bin(L, OP_DIV, lower_bin(L, OP_SUB, rd(L, x[2], at), rd(L, x[0], at), at),
                     lower_bin(L, OP_SUB, rd(L, x[1], at), rd(L, x[0], at), at), at);
    if (lower_set_local(L, b, t, call(L, INTR_MIN, call(L, INTR_MAX, q, fval(L, 0.0, at), at),
                                      fval(L, 1.0, at), at), at))
        return -1;
    ir_expr *poly = lower_bin(L, OP_MUL, lower_bin(L, OP_MUL, rd(L, t, at), rd(L, t, at), at),
                        lower_bin(L, OP_SUB, fval(L, 3.0, at),
                            lower_bin(L, OP_MUL, fval(L, 2.0, at), rd(L, t, at), at), at), at);
    return lower_set_local(L, b, into, poly, at);
}

static int mul_of(lowerer *L, ir_block *b, int into, const int *x, int n, const expr *at) {
    (void)n;
    return lower_set_local(L, b, into, lower_bin(L, OP_MUL, rd(L, x[0], at), rd(L, x[1], at), at), at);
}

static int div_of(lowerer *L, ir_block *b, int into, const int *x, int n, const expr *at) {
    (void)n;
    return lower_set_local(L, b, into, lower_bin(L, OP_DIV, rd(L, x[0], at), rd(L, x[1], at), at), at);
}

/* ---- reductions of one vector or matrix to a scalar ---- */

enum { RED_SUM, RED_MIN, RED_MAX, RED_DOT, RED_TRACE, RED_ARGMIN, RED_ARGMAX };

static ir_expr *reduce(lowerer *L, int how, ir_expr *v, ir_expr *w, const expr *at) {
    ir_block *body;
    int r;
    ir_expr *x = scalar_block(L, &body, &r, at);
    if (!x || vec_eval(L, body, v) || (w && vec_eval(L, body, w))) return NULL;
    int n = how == RED_TRACE ? v->dim : v->nargs;
    if (how == RED_ARGMIN || how == RED_ARGMAX) {
        /* The first index of the least (greatest) component, as i32. */
        int best = lower_temp(L, "best");
        if (best < 0 || lower_set_local(L, body, best, rd(L, comp(v, 0), at), at) ||
            lower_set_local(L, body, r, lower_ival(L, 0, at), at))
            return NULL;
        for (int k = 1; k < n; k++) {
            ir_stmt *s = ir_stmt_new(L->f, IR_IF, at->line, at->col);
            if (!s) {
                lower_oom(L);
                return NULL;
            }
            s->value = lower_bin(L, how == RED_ARGMIN ? OP_LT : OP_GT, rd(L, comp(v, k), at),
                           rd(L, best, at), at);
            if (lower_set_local(L, &s->body, best, rd(L, comp(v, k), at), at) ||
                lower_set_local(L, &s->body, r, lower_ival(L, k, at), at) || ir_block_push(L->f, body, s))
                return NULL;
        }
        ir_expr *c = ir_expr_new(L->f, IR_CAST, at->line, at->col);
        if (!c) return NULL;
        c->type = TACK_I32;
        c->a = rd(L, r, at);
        int r2 = lower_temp(L, "arg");
        if (r2 < 0 || lower_set_local(L, body, r2, c, at)) return NULL;
        x->index = r2;
        return x;
    }
    ir_expr *acc = NULL;
    for (int k = 0; k < n; k++) {
        int at_k = how == RED_TRACE ? k * cols(v) + k : k;
        ir_expr *term = rd(L, comp(v, at_k), at);
        if (how == RED_DOT) term = lower_bin(L, OP_MUL, term, rd(L, comp(w, k), at), at);
        if (!acc) acc = term;
        else if (how == RED_MIN || how == RED_MAX) acc = call(L, how == RED_MIN ? INTR_MIN : INTR_MAX, acc, term, at);
        else acc = lower_bin(L, OP_ADD, acc, term, at);
    }
    return lower_set_local(L, body, r, acc, at) ? NULL : x;
}

static ir_expr *sqrt_of(lowerer *L, ir_expr *x, const expr *at) {
    return x ? call(L, INTR_SQRT, x, NULL, at) : NULL;
}

/* ---- vector and matrix functions ---- */

static ir_expr *cross(lowerer *L, ir_expr *a, ir_expr *b, const expr *at) {
    if (need_vector(L, a, "cross()", at) || need_vector(L, b, "cross()", at)) return NULL;
    if (a->nargs != b->nargs || (a->nargs != 3 && a->nargs != 2)) {
        ERR(L, at->line, at->col, "cross() takes two 3-component (or two 2-component) vectors, "
            "not %d and %d", a->nargs, b->nargs);
        return NULL;
    }
#define P(i, j) lower_bin(L, OP_SUB, lower_bin(L, OP_MUL, rd(L, comp(a, i), at), rd(L, comp(b, j), at), at), \
                    lower_bin(L, OP_MUL, rd(L, comp(a, j), at), rd(L, comp(b, i), at), at), at)
    if (a->nargs == 2) { /* Taichi: the scalar a.x*b.y - a.y*b.x */
        ir_block *body;
        int r;
        ir_expr *x = scalar_block(L, &body, &r, at);
        if (!x || vec_eval(L, body, a) || vec_eval(L, body, b)) return NULL;
        return lower_set_local(L, body, r, P(0, 1), at) ? NULL : x;
    }
    ir_expr *out = vec_new(L, 3, at);
    if (!out || vec_eval(L, out->body, a) || vec_eval(L, out->body, b)) return NULL;
    if (lower_set_local(L, out->body, comp(out, 0), P(1, 2), at) ||
        lower_set_local(L, out->body, comp(out, 1), P(2, 0), at) ||
        lower_set_local(L, out->body, comp(out, 2), P(0, 1), at))
        return NULL;
#undef P
    return out;
}

/* Warp's normalize: the zero vector stays zero (no division by 0). */
static ir_expr *normalize(lowerer *L, ir_expr *v, const expr *at) {
    if (need_vector(L, v, "normalize()", at)) return NULL;
    ir_expr *out = vec_new(L, v->nargs, at);
    if (!out || vec_eval(L, out->body, v)) return NULL;
    ir_expr *sq = NULL;
    for (int k = 0; k < v->nargs; k++) {
        ir_expr *t = lower_bin(L, OP_MUL, rd(L, comp(v, k), at), rd(L, comp(v, k), at), at);
        sq = sq ? lower_bin(L, OP_ADD, sq, t, at) : t;
    }
    int len = hoist(L, out->body, sqrt_of(L, sq, at), at);
    if (len < 0) return NULL;
    for (int k = 0; k < v->nargs; k++) {
        ir_expr *q = lower_sel(L, lower_bin(L, OP_GT, rd(L, len, at), lower_ival(L, 0, at), at),
                         lower_bin(L, OP_DIV, rd(L, comp(v, k), at), rd(L, len, at), at),
                         lower_bin(L, OP_MUL, rd(L, comp(v, k), at), lower_ival(L, 0, at), at), at);
        if (lower_set_local(L, out->body, comp(out, k), q, at)) return NULL;
    }
    return out;
}

/* diag(v): the square matrix with v on its diagonal; get_diag(m) its
 * diagonal as a vector. */
static ir_expr *diag(lowerer *L, ir_expr *v, const expr *at) {
    if (need_vector(L, v, "diag()", at)) return NULL;
    int n = v->nargs;
    ir_expr *out = mat_new(L, n, n, at);
    if (!out || vec_eval(L, out->body, v)) return NULL;
    for (int r = 0; r < n; r++)
        for (int c = 0; c < n; c++) {
            /* off the diagonal: 0 in v's type (assigned v's component first) */
            int into = comp(out, r * n + c);
            if (r != c && lower_set_local(L, out->body, into, rd(L, comp(v, r), at), at)) return NULL;
            ir_expr *x = r == c ? rd(L, comp(v, r), at) : lower_ival(L, 0, at);
            if (lower_set_local(L, out->body, into, x, at)) return NULL;
        }
    return out;
}

static ir_expr *get_diag(lowerer *L, ir_expr *m, const expr *at) {
    if (need_matrix(L, m, 1, "get_diag()", at)) return NULL;
    int n = m->dim;
    ir_expr *out = vec_new(L, n, at);
    if (!out || vec_eval(L, out->body, m)) return NULL;
    for (int k = 0; k < n; k++)
        if (lower_set_local(L, out->body, comp(out, k), rd(L, comp(m, k * n + k), at), at)) return NULL;
    return out;
}

/* skew(v) @ u == cross(v, u) */
static ir_expr *skew(lowerer *L, ir_expr *v, const expr *at) {
    if (need_vector(L, v, "skew()", at)) return NULL;
    if (v->nargs != 3) {
        ERR(L, at->line, at->col, "skew() takes a 3-component vector, not %d", v->nargs);
        return NULL;
    }
    ir_expr *out = mat_new(L, 3, 3, at);
    if (!out || vec_eval(L, out->body, v)) return NULL;
    /* (row, col) -> +-component; 0 on the diagonal */
    static const int src[9] = {-1, 2, 1, 2, -1, 0, 1, 0, -1};
    static const int neg[9] = {0, 1, 0, 0, 0, 1, 1, 0, 0};
    for (int k = 0; k < 9; k++) {
        int into = comp(out, k);
        int c = src[k] < 0 ? 0 : src[k];
        if (lower_set_local(L, out->body, into, rd(L, comp(v, c), at), at)) return NULL;
        ir_expr *x = src[k] < 0 ? lower_ival(L, 0, at) : rd(L, comp(v, c), at);
        if (neg[k]) {
            ir_expr *u = ir_expr_new(L->f, IR_UNOP, at->line, at->col);
            if (!u) return NULL;
            u->op = OP_NEG;
            u->a = x;
            x = u;
        }
        if (lower_set_local(L, out->body, into, x, at)) return NULL;
    }
    return out;
}

/* matrix_from_rows(r0, r1, ...) / matrix_from_cols(c0, c1, ...) */
static ir_expr *from_vectors(lowerer *L, ir_expr **v, int n, int by_cols, const expr *at) {
    for (int i = 0; i < n; i++)
        if (need_vector(L, v[i], by_cols ? "matrix_from_cols()" : "matrix_from_rows()", at)) return NULL;
    int len = v[0]->nargs;
    for (int i = 1; i < n; i++)
        if (v[i]->nargs != len) {
            ERR(L, at->line, at->col, "matrix_from_%s() takes vectors of one length (%d and %d)",
                by_cols ? "cols" : "rows", len, v[i]->nargs);
            return NULL;
        }
    int rows = by_cols ? len : n, ncols = by_cols ? n : len;
    ir_expr *out = mat_new(L, rows, ncols, at);
    if (!out) return NULL;
    for (int i = 0; i < n; i++)
        if (vec_eval(L, out->body, v[i])) return NULL;
    for (int r = 0; r < rows; r++)
        for (int c = 0; c < ncols; c++) {
            int from = by_cols ? comp(v[c], r) : comp(v[r], c);
            if (lower_set_local(L, out->body, comp(out, r * ncols + c), rd(L, from, at), at)) return NULL;
        }
    return out;
}

/* tack.vec3(a, b, c): the components' type is the promotion of the
 * arguments' (each component local is assigned every argument in turn,
 * then its own: inference joins them).  tack.vec3(s) broadcasts;
 * tack.vec3() is zero of the kernel's float type; tack.vec3(v) copies a
 * 3-component vector. */
static ir_expr *generic_vector(lowerer *L, int width, ir_expr **args, int n, const expr *at) {
    ir_expr *out = vec_new(L, width, at);
    if (!out) return NULL;
    if (n == 1 && vec_is(args[0])) {
        if (args[0]->dim || args[0]->nargs != width) {
            char have[64];
            vec_shape_name(args[0], have, sizeof have);
            ERR(L, at->line, at->col, "tack.vec%d() of a %s: it takes %d scalars or a %d-component "
                "vector", width, have, width, width);
            return NULL;
        }
        if (vec_eval(L, out->body, args[0])) return NULL;
        for (int k = 0; k < width; k++)
            if (lower_set_local(L, out->body, comp(out, k), rd(L, comp(args[0], k), at), at)) return NULL;
        return out;
    }
    if (n != 0 && n != 1 && n != width) {
        ERR(L, at->line, at->col, "tack.vec%d() takes 0, 1 or %d values, got %d", width, width, n);
        return NULL;
    }
    int tmp[MAX_COMPONENTS];
    for (int i = 0; i < n; i++) {
        if (vec_is(args[i])) {
            ERR(L, at->line, at->col, "vector components must be scalars (argument %d)", i + 1);
            return NULL;
        }
        if ((tmp[i] = hoist(L, out->body, args[i], at)) < 0) return NULL;
    }
    for (int k = 0; k < width; k++) {
        if (n == 0) {
            if (lower_set_local(L, out->body, comp(out, k), fval(L, 0.0, at), at)) return NULL;
            continue;
        }
        for (int i = 0; i < n; i++)
            if (i != (n == 1 ? 0 : k) && lower_set_local(L, out->body, comp(out, k), rd(L, tmp[i], at), at))
                return NULL;
        if (lower_set_local(L, out->body, comp(out, k), rd(L, tmp[n == 1 ? 0 : k], at), at)) return NULL;
    }
    return out;
}

static ir_expr *elementwise_intrinsic(lowerer *L, ir_intrinsic fn, ir_expr **args, int n,
                                      const expr *at) {
    for (int i = 0; i < n; i++)
        if (vec_is(args[i])) {
            ir_expr *acc = args[0];
            for (int j = 1; acc && j < n; j++) {
                ir_expr *pair[2] = {acc, args[j]};
                acc = vec_call(L, fn, pair, 2, at);
            }
            return n == 1 ? vec_call(L, fn, args, 1, at) : acc;
        }
    ir_expr *acc = n == 1 ? call(L, fn, args[0], NULL, at) : args[0];
    for (int j = 1; acc && j < n; j++) acc = call(L, fn, acc, args[j], at);
    return acc;
}

/* where()/select(): one scalar condition picks a whole value; a real
 * scalar beside a complex number is that number with a zero imaginary
 * part (a conditional expression's rules otherwise). */
static ir_expr *choose(lowerer *L, ir_expr *cond, ir_expr *t, ir_expr *f, const char *name,
                       const expr *at) {
    if (vec_is(cond)) {
        ERR(L, at->line, at->col, "tack.%s() takes one scalar condition, not a %s", name,
            cx_is(cond) ? "complex number" : "vector");
        return NULL;
    }
    if (cx_is(t) && !vec_is(f)) f = cx_make(L, f, fval(L, 0.0, at), at);
    if (cx_is(f) && !vec_is(t)) t = cx_make(L, t, fval(L, 0.0, at), at);
    if (vec_is(t) || vec_is(f)) return vec_select(L, cond, t, f, at);
    return lower_sel(L, cond, t, f, at);
}

ir_expr *vb_call(lowerer *L, int which, ir_expr **args, int n, const expr *at) {
    const char *name = fn_name(which);
    for (int i = 0; functions[i].name; i++)
        if (functions[i].which == which && (n < functions[i].nmin || n > functions[i].nmax)) {
            if (functions[i].nmin == functions[i].nmax)
                ERR(L, at->line, at->col, "tack.%s() takes %d argument%s, got %d", name,
                    functions[i].nmin, functions[i].nmin == 1 ? "" : "s", n);
            else
                ERR(L, at->line, at->col, "tack.%s() takes %d to %d arguments, got %d", name,
                    functions[i].nmin, functions[i].nmax, n);
            return NULL;
        }
    for (int i = 0; i < n; i++)
        if (!args[i]) return NULL;
    switch (which) {
    case VB_CROSS:
        return cross(L, args[0], args[1], at);
    case VB_LENGTH:
    case VB_LENGTH_SQ:
        if (need_vector(L, args[0], which == VB_LENGTH ? "length()" : "length_sq()", at)) return NULL;
        if (which == VB_LENGTH) return vec_method(L, "length", args[0], NULL, 0, at);
        return reduce(L, RED_DOT, args[0], args[0], at);
    case VB_NORMALIZE: {
        ir_expr *v = normalize(L, args[0], at);
        if (v) v->quat = args[0]->quat; /* a unit quaternion is one still */
        return v;
    }
    case VB_DOT:
        if (need_vector(L, args[0], "dot()", at) || need_vector(L, args[1], "dot()", at)) return NULL;
        return vec_method(L, "dot", args[0], &args[1], 1, at);
    case VB_DDOT:
        if (need_matrix(L, args[0], 0, "ddot()", at) || need_matrix(L, args[1], 0, "ddot()", at)) return NULL;
        if (args[0]->nargs != args[1]->nargs || args[0]->dim != args[1]->dim) {
            ERR(L, at->line, at->col, "ddot() takes two matrices of one shape");
            return NULL;
        }
        return reduce(L, RED_DOT, args[0], args[1], at);
    case VB_SUM:
        if (!vec_is(args[0])) {
            ERR(L, at->line, at->col, "tack.sum() adds the components of a vector or a matrix; "
                "this is a scalar");
            return NULL;
        }
        return reduce(L, RED_SUM, args[0], NULL, at);
    case VB_TRACE:
        if (need_matrix(L, args[0], 1, "trace()", at)) return NULL;
        return reduce(L, RED_TRACE, args[0], NULL, at);
    case VB_DIAG:
        return diag(L, args[0], at);
    case VB_GET_DIAG:
        return get_diag(L, args[0], at);
    case VB_SKEW:
        return skew(L, args[0], at);
    case VB_TRANSPOSE:
        return mat_transpose(L, args[0], at);
    case VB_SIGN:
        return elementwise(L, args, 1, sign_of, name, at);
    case VB_STEP:
        return elementwise(L, args, n, step_of, name, at);
    case VB_CLAMP:
        return elementwise(L, args, 3, clamp_of, name, at);
    case VB_LERP:
        return elementwise(L, args, 3, lerp_of, name, at);
    case VB_SMOOTHSTEP:
        return elementwise(L, args, 3, smoothstep_of, name, at);
    case VB_CW_MUL:
        return elementwise(L, args, 2, mul_of, name, at);
    case VB_CW_DIV:
        return elementwise(L, args, 2, div_of, name, at);
    case VB_MIN:
    case VB_MAX:
        if (n == 1) { /* Warp: the least (greatest) component */
            if (!vec_is(args[0])) {
                ERR(L, at->line, at->col, "tack.%s() of one argument needs a vector or a matrix", name);
                return NULL;
            }
            return reduce(L, which == VB_MIN ? RED_MIN : RED_MAX, args[0], NULL, at);
        }
        return elementwise_intrinsic(L, which == VB_MIN ? INTR_MIN : INTR_MAX, args, n, at);
    case VB_ABS:
        return elementwise_intrinsic(L, INTR_ABS, args, 1, at);
    case VB_ARGMIN:
    case VB_ARGMAX:
        if (need_vector(L, args[0], which == VB_ARGMIN ? "argmin()" : "argmax()", at)) return NULL;
        return reduce(L, which == VB_ARGMIN ? RED_ARGMIN : RED_ARGMAX, args[0], NULL, at);
    case VB_FROM_ROWS:
    case VB_FROM_COLS:
        return from_vectors(L, args, n, which == VB_FROM_COLS, at);
    case VB_VEC2:
    case VB_VEC3:
    case VB_VEC4:
        return generic_vector(L, which - VB_VEC2 + 2, args, n, at);
    case VB_VECN:
        return generic_vector(L, n, args, n, at);
    case VB_QUAT: {
        ir_expr *v = generic_vector(L, 4, args, n, at);
        if (v) v->quat = 1;
        return v;
    }
    case VB_WHERE:
    case VB_SELECT:
        return choose(L, args[0], which == VB_WHERE ? args[1] : args[2],
                      which == VB_WHERE ? args[2] : args[1], name, at);
    }
    return NULL;
}

/* ---- methods (Taichi's spellings) ---- */

static const char *const methods[] = {"norm", "norm_sqr", "normalized", "dot", "cross",
                                      "outer_product", "transpose", "determinant", "inverse",
                                      "trace", "sum", "max", "min", "length", "length_sq",
                                      "any", "all", NULL};

int vb_is_method(const char *name) {
    for (int i = 0; methods[i]; i++)
        if (!strcmp(name, methods[i])) return 1;
    return 0;
}

static int nargs_ok(lowerer *L, const char *name, int n, int lo, int hi, const expr *at) {
    if (n >= lo && n <= hi) return 0;
    if (lo == hi)
        ERR(L, at->line, at->col, "%s() takes %d argument%s, got %d", name, lo, lo == 1 ? "" : "s", n);
    else
        ERR(L, at->line, at->col, "%s() takes %d or %d arguments, got %d", name, lo, hi, n);
    return -1;
}

/* v.norm(eps=0) is sqrt(sum of squares + eps); a matrix's is Frobenius'. */
static ir_expr *norm(lowerer *L, ir_expr *v, ir_expr *eps, int root, const expr *at) {
    ir_block *body;
    int r;
    ir_expr *x = scalar_block(L, &body, &r, at);
    if (!x || vec_eval(L, body, v)) return NULL;
    ir_expr *sq = NULL;
    for (int k = 0; k < v->nargs; k++) {
        ir_expr *t = lower_bin(L, OP_MUL, rd(L, comp(v, k), at), rd(L, comp(v, k), at), at);
        sq = sq ? lower_bin(L, OP_ADD, sq, t, at) : t;
    }
    if (eps) sq = lower_bin(L, OP_ADD, sq, eps, at);
    return lower_set_local(L, body, r, root ? sqrt_of(L, sq, at) : sq, at) ? NULL : x;
}

/* any()/all(): whether some (every) component is nonzero, as i32 1 or 0. */
static ir_expr *any_all(lowerer *L, ir_expr *v, int all, const expr *at) {
    ir_block *body;
    int r;
    ir_expr *x = scalar_block(L, &body, &r, at);
    if (!x || vec_eval(L, body, v)) return NULL;
    ir_expr *acc = NULL;
    for (int k = 0; k < v->nargs; k++) {
        ir_expr *t = lower_bin(L, OP_NE, rd(L, comp(v, k), at), lower_ival(L, 0, at), at);
        acc = acc ? lower_bin(L, all ? OP_AND : OP_OR, acc, t, at) : t;
    }
    ir_expr *c = ir_expr_new(L->f, IR_CAST, at->line, at->col);
    if (!c) return NULL;
    c->type = TACK_I32;
    c->a = acc;
    return lower_set_local(L, body, r, c, at) ? NULL : x;
}

ir_expr *vb_method(lowerer *L, const char *name, ir_expr *self, ir_expr **args, int n,
                   const expr *at) {
    for (int i = 0; i < n; i++)
        if (!args[i]) return NULL;
    char what[64];
    snprintf(what, sizeof what, "%s()", name);
    if (!strcmp(name, "dot") || !strcmp(name, "length") ||
        (!strcmp(name, "normalized") && n == 0)) {
        if (self->dim && !strcmp(name, "dot")) {
            ERR(L, at->line, at->col, "dot() is a method of vectors; tack.ddot(a, b) contracts "
                "two matrices");
            return NULL;
        }
        return vec_method(L, name, self, args, n, at);
    }
    if (!strcmp(name, "normalized")) { /* Taichi's v.normalized(eps): v / sqrt(|v|^2 + eps) */
        if (need_vector(L, self, what, at) || nargs_ok(L, name, n, 0, 1, at)) return NULL;
        ir_expr *len = norm(L, self, args[0], 1, at);
        ir_expr *ops[2] = {self, len};
        return len ? elementwise(L, ops, 2, div_of, name, at) : NULL;
    }
    if (!strcmp(name, "norm") || !strcmp(name, "norm_sqr") || !strcmp(name, "length_sq")) {
        int lo = 0, hi = !strcmp(name, "norm") ? 1 : 0;
        if (nargs_ok(L, name, n, lo, hi, at)) return NULL;
        return norm(L, self, n ? args[0] : NULL, !strcmp(name, "norm"), at);
    }
    if (!strcmp(name, "cross")) {
        if (nargs_ok(L, name, n, 1, 1, at)) return NULL;
        return cross(L, self, args[0], at);
    }
    if (!strcmp(name, "outer_product")) {
        if (nargs_ok(L, name, n, 1, 1, at)) return NULL;
        ir_expr *pair[2] = {self, args[0]};
        return mat_call(L, MAT_OUTER, 0, TACK_F32, pair, 2, at);
    }
    if (!strcmp(name, "transpose")) {
        if (nargs_ok(L, name, n, 0, 0, at)) return NULL;
        return mat_transpose(L, self, at);
    }
    if (!strcmp(name, "determinant") || !strcmp(name, "inverse")) {
        if (nargs_ok(L, name, n, 0, 0, at)) return NULL;
        return mat_call(L, !strcmp(name, "inverse") ? MAT_INVERSE : MAT_DETERMINANT, 0, TACK_F32,
                        &self, 1, at);
    }
    if (!strcmp(name, "trace")) {
        if (nargs_ok(L, name, n, 0, 0, at) || need_matrix(L, self, 1, what, at)) return NULL;
        return reduce(L, RED_TRACE, self, NULL, at);
    }
    if (!strcmp(name, "any") || !strcmp(name, "all")) {
        if (nargs_ok(L, name, n, 0, 0, at)) return NULL;
        return any_all(L, self, !strcmp(name, "all"), at);
    }
    /* sum, max, min */
    if (nargs_ok(L, name, n, 0, 0, at)) return NULL;
    return reduce(L, !strcmp(name, "sum") ? RED_SUM : !strcmp(name, "max") ? RED_MAX : RED_MIN,
                  self, NULL, at);
}

/* ---- unpacking ---- */

ir_expr *vb_held(lowerer *L, const ir_expr *v, const expr *at) {
    ir_expr *out = vec_new(L, v->nargs, at);
    if (!out) return NULL;
    out->dim = v->dim;
    for (int k = 0; k < v->nargs; k++)
        if (lower_set_local(L, out->body, comp(out, k), rd(L, comp(v, k), at), at)) return NULL;
    return out;
}

/* Whether `e` is written as a vector or matrix value: a vector local, an
 * element of an array of vectors (f2v[i]), a component subscript, or a
 * call or arithmetic (whose value lowering then tells). */
static int looks_like_vector(lowerer *L, const expr *e) {
    if (e->kind == EX_NAME) {
        const binding *b = scope_find(L->sc, e->name);
        return b && b->kind == BIND_VECTOR;
    }
    if (e->kind == EX_SUBSCRIPT) return mat_chain_is_element(L, e) || mat_is_value_subscript(L, e);
    return e->kind == EX_CALL || e->kind == EX_BINOP || e->kind == EX_UNARY ||
           (e->kind == EX_ATTR && !strcmp(e->name, "T"));
}

/* a, b, c = v: v's components (a matrix's rows) into the targets, v
 * evaluated once first.  1 where the value is not written as a vector. */
int vb_unpack(lowerer *L, ir_block *b, const stmt *s) {
    if (s->ntargets != 1 || s->targets[0]->kind != EX_TUPLE || s->value->kind == EX_TUPLE ||
        !looks_like_vector(L, s->value))
        return 1;
    return vb_unpack_value(L, b, s, lower_expr(L, s->value));
}

int vb_unpack_value(lowerer *L, ir_block *b, const stmt *s, ir_expr *v) {
    const expr *tgt = s->targets[0];
    if (!v) return -1;
    if (!vec_is(v)) {
        ERR(L, s->line, s->col, "tuple unpacking needs a tuple, a vector or a matrix of %d values "
            "on the right", tgt->nitems);
        return -1;
    }
    int count = v->dim ? v->dim : v->nargs, width = v->dim ? v->nargs / v->dim : 1;
    if (count != tgt->nitems) {
        char what[64];
        vec_shape_name(v, what, sizeof what);
        ERR(L, s->line, s->col, "a %s unpacks into %d names, not %d", what, count, tgt->nitems);
        return -1;
    }
    if (vec_eval(L, b, v)) return -1;
    const expr where = {.line = s->line, .col = s->col};
    for (int i = 0; i < count; i++) {
        ir_expr *part;
        if (width == 1) {
            part = rd(L, comp(v, i), &where);
        } else {
            part = vec_new(L, width, &where);
            for (int k = 0; part && k < width; k++)
                if (lower_set_local(L, part->body, comp(part, k), rd(L, comp(v, i * width + k), &where), &where))
                    return -1;
        }
        if (!part || lower_assign_to(L, b, tgt->items[i], part, s)) return -1;
    }
    return 0;
}
