/*
 * adjoint.c - reverse-mode automatic differentiation of a typed variant.
 *
 * An adjoint kernel has the forward kernel's parameters followed by one
 * gradient array per parameter (parameter i's is n + i, named "x.grad";
 * a scalar's is unused).  After inference this pass rewrites the loop body
 * into straight-line code that is then compiled like any variant:
 *   1. the forward sweep: the body's assignments again, each assigned
 *      local renamed to a fresh version (so every value the reverse sweep
 *      needs is still there), without its stores and atomics;
 *   2. the reverse sweep: statements newest first, each pushing its
 *      result's adjoint into its operands' (chain rule per node).  A read
 *      x[k] adds into x.grad[k] atomically (iterations may share k); a
 *      store out[k] = v reads out.grad[k] as v's adjoint.
 * Integer and boolean values carry no gradient.  A kernel that stores to
 * an array it also reads (other than `a[k] += v`) is refused: the reverse
 * sweep would read the new value where it needs the old one.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ir.h"
#include "lower/lower.h"
#include "passes/passes.h"

typedef struct adj {
    ir_func *f;
    tack_error *err;
    int n;        /* forward parameters; gradient of p is n + p */
    int *ver;     /* per original local: its current version */
    int *adjl;    /* per local (versions included): its adjoint local, -1 */
    int cap;
    int failed;
} adj;

static tack_status fail(adj *A, int src, int line, int col, const char *fmt, const char *a,
                        const char *b) {
    if (A->failed++) return A->err->status;
    src_info where = lower_source_info(A->f, src);
    return src_error(&where, line, col, A->err, fmt, a, b);
}

static int isf(ir_type t) { return t == TACK_F32 || t == TACK_F64; }

static ir_expr *mk(adj *A, ir_expr_kind k, ir_type t) {
    ir_expr *e = ir_expr_new(A->f, k, 0, 0);
    if (e) e->type = t;
    return e;
}
static ir_expr *cf(adj *A, double v, ir_type t) { return ir_const_float(A->f, v, t, 0, 0); }
static ir_expr *loc(adj *A, int l) {
    ir_expr *e = mk(A, IR_LOCAL, A->f->locals[l].type);
    if (e) e->index = l;
    return e;
}
static ir_expr *bin(adj *A, ir_op op, ir_expr *a, ir_expr *b, ir_type t) {
    if (!a || !b) return NULL;
    ir_expr *e = mk(A, IR_BINOP, t);
    if (e) {
        e->op = op;
        e->a = a;
        e->b = b;
    }
    return e;
}
static ir_expr *call(adj *A, ir_intrinsic fn, ir_type t, int n, ir_expr *x, ir_expr *y) {
    ir_expr *e = mk(A, IR_CALL, t);
    if (!e || !x || (n > 1 && !y)) return NULL;
    e->fn = fn;
    e->nargs = n;
    e->args = arena_alloc(&A->f->mem, 2 * sizeof *e->args);
    if (!e->args) return NULL;
    e->args[0] = x;
    if (n > 1) e->args[1] = y;
    return e;
}

static int new_local(adj *A, const char *base, ir_type t) {
    /* Locals are found by name: each new one gets its own ("x.3"). */
    char name[128];
    snprintf(name, sizeof name, "%s.%d", base, A->f->nlocals);
    int l = ir_local_add(A->f, name);
    if (l < 0) return -1;
    A->f->locals[l].type = t;
    if (l >= A->cap) {
        int cap = (l + 1) * 2;
        int *p = realloc(A->adjl, cap * sizeof *p);
        if (!p) return -1;
        for (int i = A->cap; i < cap; i++) p[i] = -1;
        A->adjl = p;
        A->cap = cap;
    }
    return l;
}

static ir_stmt *assign(adj *A, int l, ir_expr *v) {
    if (!v) return NULL;
    ir_stmt *s = ir_stmt_new(A->f, IR_ASSIGN, 0, 0);
    if (s) {
        s->index = l;
        s->value = v;
    }
    return s;
}

/* A copy of e reading each local's current version. */
static ir_expr *rename_expr(adj *A, const ir_expr *e) {
    if (!e) return NULL;
    switch (e->kind) {
    case IR_CONST: case IR_PARAM: case IR_LOCAL: case IR_DIM: case IR_LOAD: case IR_BINOP:
    case IR_UNOP: case IR_ANDOR: case IR_SELECT: case IR_CAST: case IR_CALL: break;
    default:
        fail(A, e->src, e->line, e->col,
             "kernel '%s': this expression is not differentiated yet (tack.Tape / backward)%s",
             A->f->name, "");
        return NULL;
    }
    ir_expr *c = arena_alloc(&A->f->mem, sizeof *c);
    if (!c) return NULL;
    *c = *e;
    if (e->kind == IR_LOCAL) c->index = A->ver[e->index];
    if (e->a && !(c->a = rename_expr(A, e->a))) return NULL;
    if (e->b && !(c->b = rename_expr(A, e->b))) return NULL;
    if (e->cond && !(c->cond = rename_expr(A, e->cond))) return NULL;
    if (e->nargs) {
        c->args = arena_alloc(&A->f->mem, e->nargs * sizeof *c->args);
        if (!c->args) return NULL;
        for (int i = 0; i < e->nargs; i++)
            if (!(c->args[i] = rename_expr(A, e->args[i]))) return NULL;
    }
    return c;
}

static int push(adj *A, ir_block *b, ir_stmt *s) {
    if (!s || ir_block_push(A->f, b, s)) {
        if (!A->failed++)
            snprintf(A->err->message, sizeof A->err->message,
                     "out of memory differentiating kernel '%s'", A->f->name);
        A->err->status = TACK_ERR_NOMEM;
        return -1;
    }
    return 0;
}

static int prop(adj *A, ir_block *out, ir_expr *e, ir_expr *g);

/* Holds g in a fresh local (it is read several times), then prop. */
static int prop_held(adj *A, ir_block *out, ir_expr *e, ir_expr *g) {
    if (!g) return push(A, out, NULL);
    int t = new_local(A, "adj.t", g->type);
    if (t < 0 || push(A, out, assign(A, t, g))) return -1;
    return prop(A, out, e, loc(A, t));
}

static ir_expr *castto(adj *A, ir_expr *e, ir_type t) { return e ? ir_cast(A->f, e, t) : NULL; }

/* Pushes the adjoint g (of e's type) into e's operands. */
static int prop(adj *A, ir_block *out, ir_expr *e, ir_expr *g) {
    ir_type t = e->type;
    if (!isf(t)) return 0; /* integers and booleans carry no gradient */
    if (!g) return push(A, out, NULL);
    ir_expr *x = e->nargs ? e->args[0] : e->a, *y = e->nargs > 1 ? e->args[1] : e->b;
    switch (e->kind) {
    case IR_LOCAL: {
        int l = e->index;
        if (A->adjl[l] < 0) return 0; /* the loop variable */
        return push(A, out, assign(A, A->adjl[l], bin(A, OP_ADD, loc(A, A->adjl[l]), g, t)));
    }
    case IR_LOAD: {
        int p = e->index;
        if (p >= A->n || !isf(A->f->params[p].type) || A->f->params[p].written) return 0;
        ir_expr *at = mk(A, IR_ATOMIC, A->f->params[p].type);
        ir_stmt *s = ir_stmt_new(A->f, IR_EVAL, e->line, e->col);
        if (!at || !s) return push(A, out, NULL);
        at->index = A->n + p;
        at->atomic = ATOM_ADD;
        at->args = e->args;
        at->nargs = e->nargs;
        at->a = castto(A, g, A->f->params[p].type);
        s->value = at;
        return push(A, out, s);
    }
    case IR_CAST:
        return isf(x->type) ? prop_held(A, out, x, castto(A, g, x->type)) : 0;
    case IR_UNOP:
        if (e->op == OP_NEG) return prop_held(A, out, x, bin(A, OP_SUB, cf(A, 0, t), g, t));
        if (e->op == OP_POS) return prop(A, out, x, g);
        return 0;
    case IR_SELECT: {
        ir_stmt *s = ir_stmt_new(A->f, IR_IF, e->line, e->col);
        if (!s) return push(A, out, NULL);
        s->value = e->cond;
        if (prop(A, &s->body, x, g) || prop(A, &s->orelse, y, g)) return -1;
        return push(A, out, s);
    }
    case IR_BINOP:
        switch (e->op) {
        case OP_ADD: return prop(A, out, x, g) || prop(A, out, y, g) ? -1 : 0;
        case OP_SUB:
            return prop(A, out, x, g) || prop_held(A, out, y, bin(A, OP_SUB, cf(A, 0, t), g, t)) ? -1 : 0;
        case OP_MUL:
            return prop_held(A, out, x, bin(A, OP_MUL, g, y, t)) ||
                   prop_held(A, out, y, bin(A, OP_MUL, g, x, t)) ? -1 : 0;
        case OP_DIV:
            return prop_held(A, out, x, bin(A, OP_DIV, g, y, t)) ||
                   prop_held(A, out, y, bin(A, OP_SUB, cf(A, 0, t),
                                            bin(A, OP_DIV, bin(A, OP_MUL, g, e, t), y, t), t)) ? -1 : 0;
        case OP_MOD: return prop(A, out, x, g); /* d/dx = 1 almost everywhere; y one-sided 0 */
        case OP_POW: goto power;
        default: return 0; /* floor division, comparisons: zero gradient */
        }
    case IR_CALL: break;
    default: return 0;
    }
    ir_intrinsic fn = e->fn;
    ir_expr *d = NULL; /* the derivative in x, for one-argument functions */
    double ln2 = log(2.0), ln10 = log(10.0);
    switch (fn) {
    case INTR_SQRT: d = bin(A, OP_DIV, cf(A, 0.5, t), e, t); break;
    case INTR_EXP: d = e; break;
    case INTR_EXP2: d = bin(A, OP_MUL, e, cf(A, ln2, t), t); break;
    case INTR_EXPM1: d = bin(A, OP_ADD, e, cf(A, 1, t), t); break;
    case INTR_LOG: d = bin(A, OP_DIV, cf(A, 1, t), x, t); break;
    case INTR_LOG2: d = bin(A, OP_DIV, cf(A, 1 / ln2, t), x, t); break;
    case INTR_LOG10: d = bin(A, OP_DIV, cf(A, 1 / ln10, t), x, t); break;
    case INTR_LOG1P: d = bin(A, OP_DIV, cf(A, 1, t), bin(A, OP_ADD, cf(A, 1, t), x, t), t); break;
    case INTR_SIN: d = call(A, INTR_COS, t, 1, x, NULL); break;
    case INTR_COS: d = bin(A, OP_SUB, cf(A, 0, t), call(A, INTR_SIN, t, 1, x, NULL), t); break;
    case INTR_TAN: d = bin(A, OP_ADD, cf(A, 1, t), bin(A, OP_MUL, e, e, t), t); break;
    case INTR_ASIN: case INTR_ACOS:
        d = bin(A, OP_DIV, cf(A, fn == INTR_ASIN ? 1 : -1, t),
                call(A, INTR_SQRT, t, 1, bin(A, OP_SUB, cf(A, 1, t), bin(A, OP_MUL, x, x, t), t), NULL), t);
        break;
    case INTR_ATAN: d = bin(A, OP_DIV, cf(A, 1, t), bin(A, OP_ADD, cf(A, 1, t), bin(A, OP_MUL, x, x, t), t), t); break;
    case INTR_SINH: d = call(A, INTR_COSH, t, 1, x, NULL); break;
    case INTR_COSH: d = call(A, INTR_SINH, t, 1, x, NULL); break;
    case INTR_TANH: d = bin(A, OP_SUB, cf(A, 1, t), bin(A, OP_MUL, e, e, t), t); break;
    case INTR_ASINH: case INTR_ACOSH:
        d = bin(A, OP_DIV, cf(A, 1, t),
                call(A, INTR_SQRT, t, 1, bin(A, fn == INTR_ASINH ? OP_ADD : OP_SUB, bin(A, OP_MUL, x, x, t), cf(A, 1, t), t), NULL), t);
        break;
    case INTR_ATANH: d = bin(A, OP_DIV, cf(A, 1, t), bin(A, OP_SUB, cf(A, 1, t), bin(A, OP_MUL, x, x, t), t), t); break;
    case INTR_CBRT: d = bin(A, OP_DIV, cf(A, 1, t), bin(A, OP_MUL, cf(A, 3, t), bin(A, OP_MUL, e, e, t), t), t); break;
    case INTR_ERF: case INTR_ERFC:
        d = bin(A, OP_MUL, cf(A, (fn == INTR_ERF ? 2 : -2) / sqrt(M_PI), t),
                call(A, INTR_EXP, t, 1, bin(A, OP_SUB, cf(A, 0, t), bin(A, OP_MUL, x, x, t), t), NULL), t);
        break;
    case INTR_DEGREES: case INTR_RADIANS: d = cf(A, ir_angle_factor(fn, t), t); break;
    case INTR_F16: d = cf(A, 1, t); break;
    case INTR_FABS: case INTR_ABS: d = call(A, INTR_COPYSIGN, t, 2, cf(A, 1, t), x); break;
    case INTR_FLOOR: case INTR_CEIL: case INTR_TRUNC: case INTR_ROUND: case INTR_NEXTAFTER:
        return 0; /* piecewise constant */
    case INTR_ATAN2: { /* atan2(y=x, x=y) */
        ir_expr *r = bin(A, OP_ADD, bin(A, OP_MUL, x, x, t), bin(A, OP_MUL, y, y, t), t);
        return prop_held(A, out, x, bin(A, OP_DIV, bin(A, OP_MUL, g, y, t), r, t)) ||
               prop_held(A, out, y, bin(A, OP_SUB, cf(A, 0, t), bin(A, OP_DIV, bin(A, OP_MUL, g, x, t), r, t), t)) ? -1 : 0;
    }
    case INTR_HYPOT:
        return prop_held(A, out, x, bin(A, OP_DIV, bin(A, OP_MUL, g, x, t), e, t)) ||
               prop_held(A, out, y, bin(A, OP_DIV, bin(A, OP_MUL, g, y, t), e, t)) ? -1 : 0;
    case INTR_COPYSIGN:
        return prop_held(A, out, x, bin(A, OP_MUL, g, bin(A, OP_MUL, call(A, INTR_COPYSIGN, t, 2, cf(A, 1, t), x),
                                                         call(A, INTR_COPYSIGN, t, 2, cf(A, 1, t), y), t), t));
    case INTR_FMOD: case INTR_REMAINDER: return prop(A, out, x, g);
    case INTR_LDEXP: return prop_held(A, out, x, bin(A, OP_MUL, g, call(A, INTR_LDEXP, t, 2, cf(A, 1, t), y), t));
    case INTR_FMA:
        return prop_held(A, out, x, bin(A, OP_MUL, g, y, t)) || prop_held(A, out, y, bin(A, OP_MUL, g, x, t)) ||
               prop(A, out, e->args[2], g) ? -1 : 0;
    case INTR_POW: goto power;
    case INTR_MIN: case INTR_MAX: {
        /* The winner (the first argument equal to the result) takes it all. */
        ir_block *b = out;
        for (int i = 0; i < e->nargs; i++) {
            if (i == e->nargs - 1) return prop(A, b, e->args[i], castto(A, g, e->args[i]->type));
            ir_stmt *s = ir_stmt_new(A->f, IR_IF, e->line, e->col);
            if (!s) return push(A, b, NULL);
            s->value = bin(A, OP_EQ, castto(A, e->args[i], t), e, TACK_BOOL);
            if (!s->value || prop(A, &s->body, e->args[i], castto(A, g, e->args[i]->type)) || push(A, b, s))
                return -1;
            b = &s->orelse;
        }
        return 0;
    }
    default:
        return fail(A, e->src, e->line, e->col, "kernel '%s': %s() has no gradient in Tack yet",
                    A->f->name, ir_intrinsic_name(fn));
    }
    return prop_held(A, out, x, bin(A, OP_MUL, g, d, t));
power: {
        /* x ** y: y x^(y-1) in x, x^y log x in y */
        ir_expr *yf = castto(A, y, t);
        ir_expr *dx = bin(A, OP_MUL, yf, call(A, INTR_POW, t, 2, x, bin(A, OP_SUB, yf, cf(A, 1, t), t)), t);
        if (prop_held(A, out, x, bin(A, OP_MUL, g, dx, t))) return -1;
        if (!isf(y->type)) return 0;
        return prop_held(A, out, y, bin(A, OP_MUL, g, bin(A, OP_MUL, e, call(A, INTR_LOG, t, 1, x, NULL), t), t));
    }
}

static int same_expr(const ir_expr *a, const ir_expr *b) {
    if (a == b) return 1;
    if (!a || !b || a->kind != b->kind || a->type != b->type || a->index != b->index ||
        a->op != b->op || a->i != b->i || a->f != b->f || a->nargs != b->nargs || a->fn != b->fn)
        return 0;
    for (int i = 0; i < a->nargs; i++)
        if (!same_expr(a->args[i], b->args[i])) return 0;
    return same_expr(a->a, b->a) && same_expr(a->b, b->b) && same_expr(a->cond, b->cond);
}

static int reads_param(const ir_expr *e, int p, const ir_expr *except) {
    if (!e || e == except) return 0;
    if (e->kind == IR_LOAD && e->index == p) return 1;
    for (int i = 0; i < e->nargs; i++)
        if (reads_param(e->args[i], p, except)) return 1;
    return reads_param(e->a, p, except) || reads_param(e->b, p, except) ||
           reads_param(e->cond, p, except);
}

/* A store of v into p[idx] is `p[idx] += w` (or -=): the reverse sweep
 * needs no old value of p, its adjoint passes through unchanged. */
static const ir_expr *update_read(const ir_stmt *s) {
    const ir_expr *v = s->value;
    if (v->kind != IR_BINOP || (v->op != OP_ADD && v->op != OP_SUB)) return NULL;
    const ir_expr *r = v->a;
    if (r->kind == IR_CAST) r = r->a;
    if (r->kind != IR_LOAD || r->index != s->index || r->nargs != s->nindices) return NULL;
    for (int i = 0; i < r->nargs; i++)
        if (!same_expr(r->args[i], s->indices[i])) return NULL;
    return r;
}

/* The overwrite rule: an array the body stores to is read only by its own
 * `+=` updates. */
static int check_overwrite(adj *A) {
    const ir_block *b = &A->f->body;
    for (int i = 0; i < b->n; i++) {
        const ir_stmt *s = b->stmts[i];
        if (s->kind != IR_STORE || !isf(A->f->params[s->index].type)) continue;
        const ir_expr *own = update_read(s);
        for (int j = 0; j < b->n; j++) {
            const ir_stmt *r = b->stmts[j];
            int reads = reads_param(r->value, s->index, r->kind == IR_STORE ? update_read(r) : NULL);
            for (int k = 0; k < r->nindices; k++) reads |= reads_param(r->indices[k], s->index, NULL);
            if (j == i && own && !reads) continue;
            if (reads)
                return fail(A, s->src, s->line, s->col,
                            "kernel '%s': array '%s' is overwritten here and also read by the kernel; "
                            "the gradient needs the value it had before (write the result to another array)",
                            A->f->name, A->f->params[s->index].name);
        }
    }
    return 0;
}

tack_status pass_adjoint(ir_func *f, int nforward, tack_error *err) {
    adj A = {f, err, nforward, NULL, NULL, 0, 0};
    int n0 = f->nlocals;
    A.ver = malloc((n0 ? n0 : 1) * sizeof *A.ver);
    A.cap = n0 * 4 + 16;
    A.adjl = malloc(A.cap * sizeof *A.adjl);
    ir_block fwd = {0}, rev = {0}, init = {0};
    if (!A.ver || !A.adjl) goto nomem;
    for (int l = 0; l < n0; l++) A.ver[l] = l;
    for (int l = 0; l < A.cap; l++) A.adjl[l] = -1;
    /* A kernel with reductions or hidden template parameters is not ours yet. */
    if (f->nreductions || f->ninner || f->collective || f->rng_seed >= 0) {
        fail(&A, 0, f->first_line, 0,
                    "kernel '%s': backward of kernels with %s is not supported yet", f->name,
                    f->nreductions ? "reductions" : f->ninner ? "tack.ndindex" :
                    f->collective ? "workgroups" : "random numbers");
        goto out;
    }
    for (int p = 0; p < nforward; p++)
        if (f->params[p].role == ROLE_ARRAY && f->params[p].vec_width)
        {
            fail(&A, 0, f->params[p].line, f->params[p].col,
                 "kernel '%s': backward through vector array '%s' is not supported yet",
                 f->name, f->params[p].name);
            goto out;
        }
    if (check_overwrite(&A)) goto out;
    /* Forward sweep. */
    const ir_block *b = &f->body;
    ir_stmt **order = calloc(b->n ? b->n : 1, sizeof *order);
    if (!order) goto nomem;
    for (int i = 0; i < b->n; i++) {
        const ir_stmt *s = b->stmts[i];
        ir_stmt *c = ir_stmt_new(f, s->kind, s->line, s->col);
        if (!c) break;
        *c = *s;
        if (s->kind == IR_ASSIGN) {
            if (!(c->value = rename_expr(&A, s->value))) break;
            int v = new_local(&A, f->locals[s->index].name, f->locals[s->index].type);
            if (v < 0) break;
            A.ver[s->index] = v;
            c->index = v;
            if (isf(f->locals[v].type)) {
                int a = new_local(&A, "adj", f->locals[v].type);
                if (a < 0 || push(&A, &init, assign(&A, a, cf(&A, 0, f->locals[v].type)))) break;
                A.adjl[v] = a;
            }
            if (push(&A, &fwd, c)) break;
        } else if (s->kind == IR_STORE) {
            if (!(c->value = rename_expr(&A, s->value))) break;
            c->indices = arena_alloc(&f->mem, (s->nindices ? s->nindices : 1) * sizeof *c->indices);
            for (int k = 0; c->indices && k < s->nindices; k++)
                if (!(c->indices[k] = rename_expr(&A, s->indices[k]))) goto broke;
        } else if (s->kind == IR_EVAL && s->value->kind == IR_ATOMIC &&
                   (s->value->atomic == ATOM_ADD || s->value->atomic == ATOM_SUB)) {
            ir_expr *at = arena_alloc(&f->mem, sizeof *at);
            if (!at) break;
            *at = *s->value;
            if (!(at->a = rename_expr(&A, s->value->a))) break;
            at->args = arena_alloc(&f->mem, (at->nargs ? at->nargs : 1) * sizeof *at->args);
            for (int k = 0; at->args && k < at->nargs; k++)
                if (!(at->args[k] = rename_expr(&A, s->value->args[k]))) goto broke;
            c->value = at;
        } else {
            fail(&A, s->src, s->line, s->col,
                 "kernel '%s': backward of this statement is not supported yet (only assignments, "
                 "stores and atomic_add/sub in a straight-line loop body)%s", f->name, "");
            break;
        }
        order[i] = c;
    }
broke:
    if (A.failed) {
        free(order);
        goto out;
    }
    /* Reverse sweep. */
    for (int i = b->n - 1; i >= 0; i--) {
        ir_stmt *s = order[i];
        if (!s) {
            free(order);
            goto nomem;
        }
        if (s->kind == IR_ASSIGN) {
            if (A.adjl[s->index] >= 0 && prop(&A, &rev, s->value, loc(&A, A.adjl[s->index]))) break;
        } else {
            int p = s->kind == IR_STORE ? s->index : s->value->index;
            ir_expr *v = s->kind == IR_STORE ? s->value : s->value->a;
            ir_expr **idx = s->kind == IR_STORE ? s->indices : s->value->args;
            int nidx = s->kind == IR_STORE ? s->nindices : s->value->nargs;
            if (!isf(f->params[p].type)) continue;
            ir_expr *g = mk(&A, IR_LOAD, ir_value_type(f->params[p].type));
            if (!g) break;
            g->index = nforward + p;
            g->args = idx;
            g->nargs = nidx;
            if (s->kind == IR_STORE && update_read(s)) {
                /* p[k] += w: w takes p.grad[k]; p's own adjoint passes through */
                ir_expr *w = s->value->b;
                if (s->value->op == OP_SUB) g = bin(&A, OP_SUB, cf(&A, 0, g->type), g, g->type);
                if (prop_held(&A, &rev, w, castto(&A, g, w->type))) break;
                continue;
            }
            if (s->kind == IR_EVAL && s->value->atomic == ATOM_SUB)
                g = bin(&A, OP_SUB, cf(&A, 0, g->type), g, g->type);
            if (isf(v->type) && prop_held(&A, &rev, v, castto(&A, g, v->type))) break;
        }
    }
    free(order);
    if (A.failed) goto out;
    ir_block body = {0};
    for (int i = 0; i < init.n; i++) if (push(&A, &body, init.stmts[i])) goto out;
    for (int i = 0; i < fwd.n; i++) if (push(&A, &body, fwd.stmts[i])) goto out;
    for (int i = 0; i < rev.n; i++) if (push(&A, &body, rev.stmts[i])) goto out;
    f->body = body;
    goto out;
nomem:
    if (!A.failed++) {
        snprintf(err->message, sizeof err->message, "out of memory differentiating kernel '%s'", f->name);
        err->status = TACK_ERR_NOMEM;
    }
out:
    free(A.ver);
    free(A.adjl);
    return A.failed ? (err->status ? err->status : TACK_ERR_COMPILE) : TACK_OK;
}

void pass_adjoint_params(ir_func *f, int n) {
    f->adjoint_n = n;
    for (int p = 0; p < n && n + p < f->nparams; p++) {
        if (f->params[p].role != ROLE_ARRAY) continue;
        ir_param *g = &f->params[n + p];
        g->role = ROLE_ARRAY;
        g->index_ndim = f->params[p].index_ndim;
        g->vec_width = f->params[p].vec_width;
        g->written = 1;
    }
}
