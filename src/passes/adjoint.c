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
 * Stencils (reads at constant offsets of the launch variable) are first
 * rewritten into the gather form (adjoint_gather.c), whose reads each add
 * into the iteration's own row without atomics.
 * Integer and boolean values carry no gradient.  A kernel that stores to
 * an array it also reads (other than `a[k] += v`) is refused: the reverse
 * sweep would read the new value where it needs the old one.
 * Local arrays (tack.local) are the iteration's own: the forward sweep
 * keeps their stores, each read goes into a fresh local, each float one
 * has an adjoint array, and loops that read them keep a snapshot taken at
 * their entry (find_snapshots).  Loops, `for` and `while`, are replayed
 * in the reverse sweep from their entry values (emit_rev); a `while`'s
 * trip count is the one its forward sweep counted.  A sum reduction's
 * `s += v` gives v the returned value's gradient ("return.grad"); a
 * `s = min(s, v)` (max) gives it to v where v is the returned value.
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
    int n0;       /* locals before the pass: ver's size */
    char *owned;  /* per parameter: every read of it is element i (or
                     the components of vector element i) of the launch
                     variable i: its gradient adds without atomics */
    char *alias;  /* per original local: assigned once, the launch variable */
    int *sadj;    /* per local array (tack.local): its adjoint array, or -1 */
    struct snap *snaps; /* loops' copies of local arrays (find_snapshots) */
    int nsnaps;
} adj;

/* The record of the body (see the top): statements renamed to versions. */
typedef struct rec rec;
typedef struct reclist {
    rec **v;
    int n, cap;
} reclist;
enum { R_STMT, R_IF, R_FOR, R_WHILE };
struct rec {
    int kind;
    ir_stmt *s;           /* STMT: the renamed ASSIGN, STORE or atomic EVAL;
                             FOR, WHILE: the original loop (its snapshots) */
    int carry;            /* STMT: a loop's end-of-iteration carry */
    int upd;              /* STMT: a local array's `a[k] += w` (-1 for -=) */
    int cond;             /* IF, WHILE: the condition's local */
    reclist body, orelse; /* IF; FOR and WHILE: body (WHILE: orelse computes cond) */
    ir_expr *b[3];        /* FOR: start, stop, step where each is a literal, else NULL */
    int lv, s0, s1, s2, nt; /* FOR: loop local; start, stop, step; trip count local
                               (WHILE: the iterations the forward sweep counted) */
    int nc, *cv, *c0;     /* FOR, WHILE: carried locals and their entry versions */
    /* FOR with checkpoints (ck, NULL where none): the carried values at the
     * entry of every stride-th iteration, ck[c] a local array of each;
     * it counts the forward's iterations */
    int *ck, stride, it;
    int line, col;
};

static int rec_push(adj *A, reclist *l, rec *r);
static rec *rec_new(adj *A, int kind);
static int rec_inline(adj *A, reclist *out, const ir_expr *e);
static int rec_stmt(adj *A, reclist *l, ir_stmt *s, int carry);
static int fresh(adj *A, int l, const char *name, ir_type t);
static int push(adj *A, ir_block *b, ir_stmt *s);
static ir_stmt *assign(adj *A, int l, ir_expr *v);

/* src_error names the kernel itself: fmt starts after "kernel 'k': ". */
static tack_status fail(adj *A, int src, int line, int col, const char *fmt, const char *a) {
    if (A->failed++) return A->err->status;
    src_info where = lower_source_info(A->f, src);
    return src_error(&where, line, col, A->err, fmt, a);
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

static ir_expr *rename_expr(adj *A, reclist *out, const ir_expr *e);

/* A copy of e whose arguments read each local's current version. */
static ir_expr *rename_args(adj *A, reclist *out, const ir_expr *e) {
    ir_expr *c = arena_alloc(&A->f->mem, sizeof *c);
    if (!c) {
        push(A, NULL, NULL);
        return NULL;
    }
    *c = *e;
    if (e->nargs) {
        c->args = arena_alloc(&A->f->mem, e->nargs * sizeof *c->args);
        if (!c->args) {
            push(A, NULL, NULL);
            return NULL;
        }
        for (int i = 0; i < e->nargs; i++)
            if (!(c->args[i] = rename_expr(A, out, e->args[i]))) return NULL;
    }
    return c;
}

/* A local array's element is read into a fresh local where the forward
 * reads it: the reverse sweep then uses the value it had there, not the
 * array's final one (a later store may change the element). */
static ir_expr *hoist_sload(adj *A, reclist *out, const ir_expr *e) {
    ir_expr *c = rename_args(A, out, e);
    if (!c) return NULL;
    int v = fresh(A, 0, A->f->scratch[e->index].name, e->type);
    if (v < 0 || rec_stmt(A, out, assign(A, v, c), 0)) {
        if (v < 0) push(A, NULL, NULL);
        return NULL;
    }
    return loc(A, v);
}

/* A copy of e reading each local's current version. */
static ir_expr *rename_expr(adj *A, reclist *out, const ir_expr *e) {
    if (!e) return NULL;
    if (e->kind == IR_SLOAD) return hoist_sload(A, out, e);
    if (e->kind == IR_INLINE) {
        /* A device function: its body goes to the record first. */
        if (rec_inline(A, out, e)) return NULL;
        if (e->index < 0) return ir_const_int(A->f, 0, TACK_I32, e->line, e->col);
        return loc(A, A->ver[e->index]);
    }
    switch (e->kind) {
    case IR_CONST: case IR_PARAM: case IR_LOCAL: case IR_DIM: case IR_LOAD: case IR_BINOP:
    case IR_UNOP: case IR_ANDOR: case IR_SELECT: case IR_CAST: case IR_CALL: break;
    default:
        fail(A, e->src, e->line, e->col,
             "this expression is not differentiated yet (tack.Tape / backward)", "");
        return NULL;
    }
    ir_expr *c = arena_alloc(&A->f->mem, sizeof *c);
    if (!c) return NULL;
    *c = *e;
    if (e->kind == IR_LOCAL) c->index = A->ver[e->index];
    if (e->a && !(c->a = rename_expr(A, out, e->a))) return NULL;
    if (e->b && !(c->b = rename_expr(A, out, e->b))) return NULL;
    if (e->cond && !(c->cond = rename_expr(A, out, e->cond))) return NULL;
    if (e->nargs) {
        c->args = arena_alloc(&A->f->mem, e->nargs * sizeof *c->args);
        if (!c->args) return NULL;
        for (int i = 0; i < e->nargs; i++)
            if (!(c->args[i] = rename_expr(A, out, e->args[i]))) return NULL;
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
static int scalar_grad(adj *A, int p);

/* Holds g in a fresh local (it is read several times), then prop. */
static int prop_held(adj *A, ir_block *out, ir_expr *e, ir_expr *g) {
    if (!g) return push(A, out, NULL);
    /* a constant's gradient is dropped: do not compute it */
    if (e->kind == IR_CONST || e->kind == IR_DIM || (e->kind == IR_PARAM && !scalar_grad(A, e->index)))
        return 0;
    int t = new_local(A, "adj.t", g->type);
    if (t < 0 || push(A, out, assign(A, t, g))) return -1;
    return prop(A, out, e, loc(A, t));
}

static ir_expr *castto(adj *A, ir_expr *e, ir_type t) { return e ? ir_cast(A->f, e, t) : NULL; }

/* Whether scalar parameter p's gradient is asked for: its gradient
 * parameter is an array (variant.c), whose element 0 takes it. */
static int scalar_grad(adj *A, int p) {
    return p < A->n && A->f->params[p].role == ROLE_SCALAR && A->n + p < A->f->nparams &&
           A->f->params[A->n + p].role == ROLE_ARRAY;
}

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
        if (A->owned[p] || e->dim) { /* x.grad[i] += g: iteration i alone touches row i */
            ir_expr *old = mk(A, IR_LOAD, A->f->params[p].type);
            ir_stmt *s = ir_stmt_new(A->f, IR_STORE, e->line, e->col);
            if (!old || !s) return push(A, out, NULL);
            old->index = s->index = A->n + p;
            old->args = s->indices = e->args;
            old->nargs = s->nindices = e->nargs;
            s->value = bin(A, OP_ADD, old, castto(A, g, old->type), old->type);
            return push(A, out, s);
        }
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
    case IR_PARAM: {
        /* an opted-in scalar: ga[0] += g, shared by every iteration */
        if (!scalar_grad(A, e->index)) return 0;
        ir_type gt = ir_value_type(A->f->params[A->n + e->index].type);
        ir_expr *at = mk(A, IR_ATOMIC, gt);
        ir_stmt *s = ir_stmt_new(A->f, IR_EVAL, e->line, e->col);
        ir_expr **idx = arena_alloc(&A->f->mem, sizeof *idx);
        if (!at || !s || !idx || !(idx[0] = ir_const_int(A->f, 0, TACK_I64, 0, 0))) return push(A, out, NULL);
        at->index = A->n + e->index;
        at->atomic = ATOM_ADD;
        at->args = idx;
        at->nargs = 1;
        at->a = castto(A, g, gt);
        s->value = at;
        return push(A, out, s);
    }
    case IR_SLOAD: {
        /* a local array's a[k] read: a.adj[k] += g (the iteration's own array) */
        int sa = A->sadj[e->index];
        ir_stmt *s = ir_stmt_new(A->f, IR_SSTORE, e->line, e->col);
        ir_expr *old = mk(A, IR_SLOAD, t);
        if (!s || !old) return push(A, out, NULL);
        old->index = s->index = sa;
        old->args = s->indices = e->args;
        old->nargs = s->nindices = e->nargs;
        s->value = bin(A, OP_ADD, old, g, t);
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
    case INTR_STOP_GRADIENT:
        return 0; /* piecewise constant; tack.stop_gradient(v) */
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
        return fail(A, e->src, e->line, e->col, "%s() has no gradient in Tack yet",
                    ir_intrinsic_name(fn));
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

static int reads_param_block(const ir_block *b, int p);

static int reads_param(const ir_expr *e, int p, const ir_expr *except) {
    if (!e || e == except) return 0;
    if (e->kind == IR_LOAD && e->index == p) return 1;
    if (e->kind == IR_INLINE && e->body && reads_param_block(e->body, p)) return 1;
    for (int i = 0; i < e->nargs; i++)
        if (reads_param(e->args[i], p, except)) return 1;
    return reads_param(e->a, p, except) || reads_param(e->b, p, except) ||
           reads_param(e->cond, p, except);
}

/* A store of v into p[idx] is `p[idx] += w` (or -=): the reverse sweep
 * needs no old value of p, its adjoint passes through unchanged. */
static const ir_expr *update_read(const ir_stmt *s) {
    const ir_expr *v = s->value;
    if (s->kind != IR_STORE || v->kind != IR_BINOP || (v->op != OP_ADD && v->op != OP_SUB))
        return NULL;
    const ir_expr *r = v->a;
    if (r->kind == IR_CAST) r = r->a;
    if (r->kind != IR_LOAD || r->index != s->index || r->nargs != s->nindices) return NULL;
    for (int i = 0; i < r->nargs; i++)
        if (!same_expr(r->args[i], s->indices[i])) return NULL;
    return r;
}

/* A local array's `a[k] += w` (1) or `a[k] -= w` (-1), else 0: its own
 * read of a[k] needs no value in the reverse sweep (the adjoint passes
 * through), so it is neither hoisted nor a read for the rule below. */
static int scratch_update(const ir_stmt *s) {
    const ir_expr *v = s->value;
    if (s->kind != IR_SSTORE || v->kind != IR_BINOP || (v->op != OP_ADD && v->op != OP_SUB))
        return 0;
    const ir_expr *r = v->a;
    if (r->kind == IR_CAST) r = r->a;
    if (r->kind != IR_SLOAD || r->index != s->index || r->nargs != s->nindices) return 0;
    for (int i = 0; i < r->nargs; i++)
        if (!same_expr(r->args[i], s->indices[i])) return 0;
    return v->op == OP_ADD ? 1 : -1;
}

/* Local arrays in loops.  The reverse sweep of a sequential loop runs
 * its iterations again (see emit_rev), stores to local arrays included,
 * so a read there must find what the forward found.  A loop that reads an
 * array stored anywhere after the loop begins (in it, or after it) keeps
 * a copy of the array taken at its entry in the forward sweep (a
 * snapshot), and each reverse iteration starts from that copy.  Reads
 * outside loops run once, in the forward sweep, in order.  Two walks in
 * program order: the last store of each array, then each read inside
 * loops against it, marking (loop, array) pairs. */
#define SCAN_DEPTH 64
typedef struct scan {
    adj *A;
    int pos;   /* accesses so far */
    int depth; /* enclosing loops */
    const ir_stmt *loops[SCAN_DEPTH];
    int begin[SCAN_DEPTH]; /* pos where each began */
    int check; /* 0: record last[], 1: mark snapshots */
    int *last; /* per local array: pos of its last store, or -1 */
} scan;

/* A loop's snapshots: local array `from` copied into `to` at its entry. */
typedef struct snap {
    const ir_stmt *loop;
    int from, to;
} snap;

static int add_snap(adj *A, const ir_stmt *loop, int t) {
    for (int i = 0; i < A->nsnaps; i++)
        if (A->snaps[i].loop == loop && A->snaps[i].from == t) return 0;
    snap *v = realloc(A->snaps, (A->nsnaps + 1) * sizeof *v);
    if (!v) return push(A, NULL, NULL);
    A->snaps = v;
    ir_scratch a = A->f->scratch[t];
    char name[128];
    snprintf(name, sizeof name, "%s.entry%d", a.name, loop->line);
    a.name = name;
    int to = ir_scratch_add(A->f, &a);
    if (to < 0) {
        char most[16];
        snprintf(most, sizeof most, "%d", IR_MAX_SCRATCH);
        return fail(A, loop->src, loop->line, loop->col,
                    "backward of this loop keeps a copy of each local array it reads (their "
                    "values at its entry), more arrays than the %s a kernel may have", most);
    }
    A->snaps[A->nsnaps++] = (snap){loop, t, to};
    return 0;
}

static int scan_block(scan *w, const ir_block *b);

static int scan_expr(scan *w, const ir_expr *e) {
    if (!e) return 0;
    if (e->kind == IR_INLINE && e->body && scan_block(w, e->body)) return -1;
    for (int i = 0; i < e->nargs; i++)
        if (scan_expr(w, e->args[i])) return -1;
    if (scan_expr(w, e->a) || scan_expr(w, e->b) || scan_expr(w, e->cond)) return -1;
    if (e->kind != IR_SLOAD) return 0;
    w->pos++;
    for (int d = 0; w->check && d < w->depth; d++)
        if (w->last[e->index] > w->begin[d] && add_snap(w->A, w->loops[d], e->index)) return -1;
    return 0;
}

static int scan_block(scan *w, const ir_block *b) {
    for (int i = 0; i < b->n; i++) {
        const ir_stmt *s = b->stmts[i];
        for (int k = 0; k < s->nindices; k++)
            if (scan_expr(w, s->indices[k])) return -1;
        if (scan_expr(w, s->start) || scan_expr(w, s->stop) || scan_expr(w, s->step)) return -1;
        int loop = s->kind == IR_FOR || s->kind == IR_WHILE;
        if (loop) {
            if (w->depth == SCAN_DEPTH)
                return fail(w->A, s->src, s->line, s->col, "backward of loops nested %s deep is not supported", "64");
            w->loops[w->depth] = s;
            w->begin[w->depth++] = w->pos;
        }
        if (scan_expr(w, s->value) || scan_block(w, &s->body) || scan_block(w, &s->orelse)) return -1;
        if (loop) w->depth--;
        if (s->kind == IR_SSTORE) {
            ++w->pos;
            if (!w->check) w->last[s->index] = w->pos;
        }
    }
    return 0;
}

static int find_snapshots(adj *A) {
    int n = A->f->nscratch;
    if (!n) return 0;
    int *last = malloc(n * sizeof *last);
    if (!last) return push(A, NULL, NULL);
    for (int i = 0; i < n; i++) last[i] = -1;
    scan w = {.A = A, .last = last};
    int bad = scan_block(&w, &A->f->body);
    w.pos = w.depth = 0;
    w.check = 1;
    bad = bad || scan_block(&w, &A->f->body);
    free(last);
    return bad ? -1 : 0;
}

static int reads_param_stmt(const ir_stmt *r, int p) {
    int reads = reads_param(r->value, p, update_read(r)) || reads_param(r->start, p, NULL) ||
                reads_param(r->stop, p, NULL) || reads_param(r->step, p, NULL);
    for (int k = 0; k < r->nindices; k++) reads |= reads_param(r->indices[k], p, NULL);
    return reads || reads_param_block(&r->body, p) || reads_param_block(&r->orelse, p);
}

static int reads_param_block(const ir_block *b, int p) {
    for (int i = 0; i < b->n; i++)
        if (reads_param_stmt(b->stmts[i], p)) return 1;
    return 0;
}

static int stores_on_path(adj *A, const ir_block *b, const ir_stmt *target,
                          const ir_stmt **second);

/* The overwrite rule: an array the body stores to (or updates atomically)
 * is read only by its own `+=` updates. */
static int check_overwrite(adj *A, const ir_block *b) {
    for (int i = 0; i < b->n; i++) {
        const ir_stmt *s = b->stmts[i];
        if (check_overwrite(A, &s->body) || check_overwrite(A, &s->orelse)) return -1;
        int p = -1;
        if (s->kind == IR_STORE) p = s->index;
        if (s->kind == IR_EVAL && s->value->kind == IR_ATOMIC) p = s->value->index;
        if (p < 0 || p >= A->n || !isf(A->f->params[p].type)) continue;
        if (reads_param_block(&A->f->body, p))
            return fail(A, s->src, s->line, s->col,
                        "array '%s' is overwritten here and also read by the kernel; "
                        "the gradient needs the value it had before (write the result to another array)",
                        A->f->params[p].name);
        const ir_stmt *second = NULL;
        if (s->kind == IR_STORE && stores_on_path(A, &A->f->body, s, &second) >= 2 && second)
            return fail(A, second->src, second->line, second->col,
                        "array '%s' may be stored more than once per element here; "
                        "the gradient of a store assumes it is the element's only one (keep the "
                        "value in a local and store it once)",
                        A->f->params[p].name);
    }
    return 0;
}

static int mentions_local(const ir_expr *e, const char *assigned, int var) {
    if (!e) return 0;
    if (e->kind == IR_LOCAL && (e->index == var || assigned[e->index])) return 1;
    for (int i = 0; i < e->nargs; i++)
        if (mentions_local(e->args[i], assigned, var)) return 1;
    return mentions_local(e->a, assigned, var) || mentions_local(e->b, assigned, var) ||
           mentions_local(e->cond, assigned, var);
}

static void mark_assigned(const ir_block *b, char *assigned) {
    for (int i = 0; i < b->n; i++) {
        const ir_stmt *s = b->stmts[i];
        if (s->kind == IR_ASSIGN || s->kind == IR_FOR) assigned[s->index] = 1;
        mark_assigned(&s->body, assigned);
        mark_assigned(&s->orelse, assigned);
    }
}

static int same_element(const ir_stmt *a, const ir_stmt *b) {
    if (a->index != b->index || a->nindices != b->nindices) return 0;
    for (int k = 0; k < a->nindices; k++)
        if (!same_expr(a->indices[k], b->indices[k])) return 0;
    return 1;
}

/* How many plain stores to the element `target` stores (its array, the
 * same index expressions) one path through b makes, 2 meaning "more than
 * one": a store's adjoint takes the element's gradient whole, so a second
 * store would hand the gradient of the surviving value to the replaced one
 * as well.  The branches of an `if` are alternatives; a store in a loop
 * counts twice unless its index moves with the loop (names the loop
 * variable or a local the loop assigns). */
static int stores_on_path(adj *A, const ir_block *b, const ir_stmt *target, const ir_stmt **second) {
    int n = 0;
    for (int i = 0; i < b->n && n < 2; i++) {
        const ir_stmt *s = b->stmts[i];
        int here = 0;
        if (s->kind == IR_STORE && !update_read(s)) {
            here = same_element(s, target);
        } else if (s->kind == IR_IF) {
            int t = stores_on_path(A, &s->body, target, second);
            int e = stores_on_path(A, &s->orelse, target, second);
            here = t > e ? t : e;
        } else if (s->kind == IR_FOR || s->kind == IR_WHILE) {
            here = stores_on_path(A, &s->body, target, second);
            if (here == 1) {
                char *assigned = calloc((size_t)A->f->nlocals + 1, 1);
                if (!assigned) return 2;
                mark_assigned(&s->body, assigned);
                int moves = 0;
                for (int k = 0; k < target->nindices; k++)
                    moves |= mentions_local(target->indices[k], assigned,
                                            s->kind == IR_FOR ? s->index : -1);
                free(assigned);
                here = moves ? 1 : 2;
            }
        }
        if (here && n + here >= 2 && !*second) *second = s;
        n += here;
    }
    return n;
}

/* Which differentiated arrays are read only at the launch variable's own
 * element: after resolve_dims a read's one index is the linear one, i
 * for x[i], i * w + k (0 <= k < w) for component k of an array of
 * w-component vectors or matrices.  i may be a local assigned i once
 * (vector reads hoist their index).  Nothing may reassign the launch
 * variable. */
static void count_assigns(const ir_block *b, int *n);
static void count_assigns_expr(const ir_expr *e, int *n) {
    if (!e) return;
    if (e->kind == IR_INLINE && e->body) count_assigns(e->body, n);
    count_assigns_expr(e->a, n);
    count_assigns_expr(e->b, n);
    count_assigns_expr(e->cond, n);
    for (int i = 0; i < e->nargs; i++) count_assigns_expr(e->args[i], n);
}
static void count_assigns(const ir_block *b, int *n) {
    for (int i = 0; i < b->n; i++) {
        const ir_stmt *s = b->stmts[i];
        if (s->kind == IR_ASSIGN) n[s->index]++;
        if (s->kind == IR_FOR) n[s->index] += 2; /* a loop variable takes many values */
        count_assigns_expr(s->value, n);
        count_assigns_expr(s->start, n);
        count_assigns_expr(s->stop, n);
        count_assigns_expr(s->step, n);
        for (int k = 0; k < s->nindices; k++) count_assigns_expr(s->indices[k], n);
        count_assigns(&s->body, n);
        count_assigns(&s->orelse, n);
    }
}

static const ir_expr *uncast(const ir_expr *e) {
    while (e && e->kind == IR_CAST && ir_type_is_int(e->type) && ir_type_bits(e->type) == 64) e = e->a;
    return e;
}

static int is_launch(const adj *A, const ir_expr *e) {
    e = uncast(e);
    return e && e->kind == IR_LOCAL && (e->index == A->f->loop_var || A->alias[e->index]);
}

static int int_const(const ir_expr *e, int64_t *v) {
    e = uncast(e);
    if (!e || e->kind != IR_CONST || !ir_type_is_int(e->type)) return 0;
    *v = e->i;
    return 1;
}

static int own_index(const adj *A, int p, const ir_expr *e) {
    int w = tack_width_components(A->f->params[p].vec_width);
    if (!w) return is_launch(A, e);
    e = uncast(e);
    int64_t k = 0, m;
    if (e->kind == IR_BINOP && e->op == OP_ADD && int_const(e->b, &k)) e = uncast(e->a);
    return k >= 0 && k < w && e->kind == IR_BINOP && e->op == OP_MUL && int_const(e->b, &m) &&
           m == w && is_launch(A, e->a);
}

static void owned_block(adj *A, const ir_block *b);

static void owned_expr(adj *A, const ir_expr *e) {
    if (!e) return;
    int p = e->index;
    if (e->kind == IR_CALL && e->fn == INTR_STOP_GRADIENT) return; /* no gradient flows there */
    if (e->kind == IR_LOAD && p < A->n && !e->dim && (e->nargs != 1 || !own_index(A, p, e->args[0])))
        A->owned[p] = 0;
    if (e->kind == IR_INLINE && e->body) owned_block(A, e->body);
    for (int i = 0; i < e->nargs; i++) owned_expr(A, e->args[i]);
    owned_expr(A, e->a);
    owned_expr(A, e->b);
    owned_expr(A, e->cond);
}

static void owned_block(adj *A, const ir_block *b) {
    for (int i = 0; i < b->n; i++) {
        const ir_stmt *s = b->stmts[i];
        owned_expr(A, s->value);
        owned_expr(A, s->start);
        owned_expr(A, s->stop);
        owned_expr(A, s->step);
        for (int k = 0; k < s->nindices; k++) owned_expr(A, s->indices[k]);
        owned_block(A, &s->body);
        owned_block(A, &s->orelse);
    }
}

static const ir_stmt *single_assign(const ir_block *b, int l);
static const ir_stmt *single_assign_expr(const ir_expr *e, int l) {
    if (!e) return NULL;
    const ir_stmt *r = e->kind == IR_INLINE && e->body ? single_assign(e->body, l) : NULL;
    if (!r) r = single_assign_expr(e->a, l);
    if (!r) r = single_assign_expr(e->b, l);
    if (!r) r = single_assign_expr(e->cond, l);
    for (int i = 0; !r && i < e->nargs; i++) r = single_assign_expr(e->args[i], l);
    return r;
}
/* The statement that assigns l (the first found). */
static const ir_stmt *single_assign(const ir_block *b, int l) {
    for (int i = 0; i < b->n; i++) {
        const ir_stmt *s = b->stmts[i], *r;
        if (s->kind == IR_ASSIGN && s->index == l) return s;
        if ((r = single_assign_expr(s->value, l)) || (r = single_assign(&s->body, l)) ||
            (r = single_assign(&s->orelse, l)))
            return r;
        for (int k = 0; k < s->nindices; k++)
            if ((r = single_assign_expr(s->indices[k], l))) return r;
    }
    return NULL;
}

static int find_owned(adj *A) {
    ir_func *f = A->f;
    int *n = calloc(f->nlocals ? f->nlocals : 1, sizeof *n);
    A->owned = calloc(f->nparams ? f->nparams : 1, 1);
    A->alias = calloc(f->nlocals ? f->nlocals : 1, 1);
    if (!n || !A->owned || !A->alias) {
        free(n);
        return -1;
    }
    count_assigns(&f->body, n);
    /* in a tack.ndindex launch, iterations (i, j) and (i, k) share x[i] */
    if (f->loop_var >= 0 && !f->ninner && !n[f->loop_var]) {
        for (int p = 0; p < A->n; p++) A->owned[p] = 1;
        /* aliases: assigned once, to the launch variable or an alias (in order) */
        for (int again = 1; again;) {
            again = 0;
            for (int l = 0; l < f->nlocals; l++)
                if (n[l] == 1 && !A->alias[l]) {
                    const ir_stmt *s = single_assign(&f->body, l);
                    if (s && is_launch(A, s->value)) A->alias[l] = again = 1;
                }
        }
        owned_block(A, &f->body);
    }
    free(n);
    return 0;
}

/* ---- the record ---- */

static rec *rec_new(adj *A, int kind) {
    rec *r = arena_alloc(&A->f->mem, sizeof *r);
    if (r) {
        memset(r, 0, sizeof *r);
        r->kind = kind;
    }
    return r;
}

static int rec_push(adj *A, reclist *l, rec *r) {
    if (!r) return push(A, NULL, NULL);
    if (l->n == l->cap) {
        int cap = l->cap ? 2 * l->cap : 8;
        rec **v = arena_alloc(&A->f->mem, cap * sizeof *v);
        if (!v) return push(A, NULL, NULL);
        if (l->n) memcpy(v, l->v, l->n * sizeof *v);
        l->v = v;
        l->cap = cap;
    }
    l->v[l->n++] = r;
    return 0;
}

static int rec_stmt(adj *A, reclist *l, ir_stmt *s, int carry) {
    if (!s) return push(A, NULL, NULL);
    rec *r = rec_new(A, R_STMT);
    if (!r) return push(A, NULL, NULL);
    r->s = s;
    r->carry = carry;
    return rec_push(A, l, r);
}

/* A fresh local like l (an adjoint too if it is a float). */
static int fresh(adj *A, int l, const char *name, ir_type t) {
    int v = new_local(A, name ? name : A->f->locals[l].name, t);
    if (v < 0) return -1;
    if (isf(t)) {
        int a = new_local(A, "adj", t);
        if (a < 0) return -1;
        A->adjl[v] = a;
    }
    return v;
}

/* Records `local := value` into a fresh version of original local l. */
static int rec_assign(adj *A, reclist *out, int l, ir_expr *value, int line, int col) {
    if (!value) return -1;
    int v = fresh(A, l, NULL, A->f->locals[l].type);
    if (v < 0) return push(A, NULL, NULL);
    ir_stmt *s = ir_stmt_new(A->f, IR_ASSIGN, line, col);
    if (!s) return push(A, NULL, NULL);
    s->index = v;
    s->value = value;
    A->ver[l] = v;
    return rec_stmt(A, out, s, 0);
}

static int rec_block(adj *A, reclist *out, ir_stmt **stmts, int n, int inline_id);

static int ends_in_exit(const ir_block *b, int id) {
    return b->n && b->stmts[b->n - 1]->kind == IR_EXIT && b->stmts[b->n - 1]->index == id;
}

/* Records an `if` (cond already renamed): both branches from the same
 * versions, then one new version (a phi) for each local they left apart. */
static int rec_if(adj *A, reclist *out, ir_expr *cond, ir_stmt **b1, int n1, ir_stmt **b2,
                  int n2, int inline_id, int line, int col) {
    int c = new_local(A, "adj.cond", TACK_BOOL);
    ir_stmt *cs = c < 0 ? NULL : assign(A, c, cond);
    if (!cs || rec_stmt(A, out, cs, 0)) return push(A, NULL, NULL);
    rec *r = rec_new(A, R_IF);
    if (!r) return push(A, NULL, NULL);
    r->cond = c;
    int *v0 = malloc(A->n0 * sizeof *v0), *v1 = malloc(A->n0 * sizeof *v1);
    if (!v0 || !v1) {
        free(v0);
        free(v1);
        return push(A, NULL, NULL);
    }
    memcpy(v0, A->ver, A->n0 * sizeof *v0);
    int bad = rec_block(A, &r->body, b1, n1, inline_id);
    memcpy(v1, A->ver, A->n0 * sizeof *v1);
    memcpy(A->ver, v0, A->n0 * sizeof *v0);
    bad = bad || rec_block(A, &r->orelse, b2, n2, inline_id);
    for (int l = 0; !bad && l < A->n0; l++) {
        if (v1[l] == A->ver[l]) continue;
        int p = fresh(A, l, NULL, A->f->locals[l].type);
        if (p < 0 || rec_stmt(A, &r->body, assign(A, p, loc(A, v1[l])), 0) ||
            rec_stmt(A, &r->orelse, assign(A, p, loc(A, A->ver[l])), 0))
            bad = 1;
        A->ver[l] = p;
    }
    free(v0);
    free(v1);
    r->line = line;
    r->col = col;
    return bad ? -1 : rec_push(A, out, r);
}

/* The locals a loop body assigns (statements, not device functions). */
static void assigned(const ir_block *b, char *mark) {
    for (int i = 0; i < b->n; i++) {
        const ir_stmt *s = b->stmts[i];
        if (s->kind == IR_ASSIGN) mark[s->index] = 1;
        assigned(&s->body, mark);
        assigned(&s->orelse, mark);
    }
}

static int reads_local_block(const ir_block *b, int l, const ir_stmt *skip);

/* Whether e reads local l (device functions' bodies included). */
static int reads_local(const ir_expr *e, int l) {
    if (!e) return 0;
    if (e->kind == IR_LOCAL && e->index == l) return 1;
    /* an inlined body's value is its result local, read where it ends
     * (assigned inside a loop by a `return` there, adjoint_jumps.c) */
    if (e->kind == IR_INLINE && e->index == l) return 1;
    if (e->kind == IR_INLINE && e->body && reads_local_block(e->body, l, NULL)) return 1;
    for (int i = 0; i < e->nargs; i++)
        if (reads_local(e->args[i], l)) return 1;
    return reads_local(e->a, l) || reads_local(e->b, l) || reads_local(e->cond, l);
}

/* Whether b reads l anywhere but in the body of loop `skip`. */
static int reads_local_block(const ir_block *b, int l, const ir_stmt *skip) {
    for (int i = 0; i < b->n; i++) {
        const ir_stmt *s = b->stmts[i];
        if (reads_local(s->value, l) || reads_local(s->start, l) || reads_local(s->stop, l) ||
            reads_local(s->step, l))
            return 1;
        for (int k = 0; k < s->nindices; k++)
            if (reads_local(s->indices[k], l)) return 1;
        if (s != skip && (reads_local_block(&s->body, l, skip) || reads_local_block(&s->orelse, l, skip)))
            return 1;
        if (s == skip && reads_local_block(&s->orelse, l, skip)) return 1;
    }
    return 0;
}

static int mentions_local_block(const ir_block *b, int l) {
    for (int i = 0; i < b->n; i++) {
        const ir_stmt *s = b->stmts[i];
        if (((s->kind == IR_ASSIGN || s->kind == IR_FOR) && s->index == l) ||
            reads_local_block(&(ir_block){.stmts = b->stmts + i, .n = 1}, l, NULL) ||
            mentions_local_block(&s->body, l) || mentions_local_block(&s->orelse, l))
            return 1;
    }
    return 0;
}

/* A local the loop body assigns is not carried when no one reads it
 * outside the loop and each iteration assigns it before any read (its
 * first mention is a top-level `l = v` with v not reading l, or inside
 * an `if` holding all its mentions, recursively): then no iteration sees
 * another's value, and the reverse sweep need not replay earlier
 * iterations for it. */
static int assigned_first(ir_stmt **stmts, int n, int l) {
    for (int i = 0; i < n; i++) {
        const ir_stmt *s = stmts[i];
        if (s->kind == IR_ASSIGN && s->index == l) return !reads_local(s->value, l);
        if (!mentions_local_block(&(ir_block){.stmts = stmts + i, .n = 1}, l)) continue;
        /* an `if` whose branches hold every mention of l left in this
         * block (as adjoint_jumps.c leaves the rest of an iteration after
         * a `continue`): a branch not taken neither reads nor writes l */
        if (s->kind != IR_IF || reads_local(s->value, l) ||
            mentions_local_block(&(ir_block){.stmts = stmts + i + 1, .n = n - i - 1}, l))
            return 0;
        int inb = mentions_local_block(&s->body, l), ino = mentions_local_block(&s->orelse, l);
        return (!inb || assigned_first(s->body.stmts, s->body.n, l)) &&
               (!ino || assigned_first(s->orelse.stmts, s->orelse.n, l));
    }
    return 0;
}

static int iteration_local(adj *A, const ir_stmt *loop, int l) {
    if (reads_local_block(&A->f->body, l, loop)) return 0;
    return assigned_first(loop->body.stmts, loop->body.n, l);
}

static int int_local(adj *A, reclist *out, const char *name, ir_type t, ir_expr *v) {
    int l = new_local(A, name, t);
    if (l < 0 || !v || rec_stmt(A, out, assign(A, l, v), 0)) return -1;
    return l;
}

static int rec_loop_body(adj *A, reclist *out, rec *r, const ir_stmt *s);

/* The value of an integer expression of literals (+ - *, integer casts
 * that keep it), as resolve_dims leaves `x.shape[1] - 1`. */
static int fold_int(const ir_expr *e, int64_t *v) {
    int64_t a, b;
    if (!e || !ir_type_is_int(e->type)) return 0;
    switch (e->kind) {
    case IR_CONST: *v = e->i; return 1;
    case IR_CAST:
        return ir_type_bits(e->type) == 64 && ir_type_is_int(e->a->type) && fold_int(e->a, v);
    case IR_BINOP:
        if (ir_type_bits(e->type) != 64 || !fold_int(e->a, &a) || !fold_int(e->b, &b)) return 0;
        if (e->op == OP_ADD) return !__builtin_add_overflow(a, b, v);
        if (e->op == OP_SUB) return !__builtin_sub_overflow(a, b, v);
        if (e->op == OP_MUL) return !__builtin_mul_overflow(a, b, v);
        return 0;
    default: return 0;
    }
}

/* ---- checkpoints of a loop's carried values ---- */

/* Carried values kept per loop, at most (fewer with more carried locals):
 * the reverse sweep of iteration j replays from the checkpoint at or
 * before j, at most stride - 1 iterations. A `for` knows its trip count n
 * before it starts: stride = ceil(n / kept). A `while` starts with stride
 * 1 and, each time its checkpoints are full, keeps every other one and
 * doubles the stride (stride < 2n / kept at its end). With n <= kept
 * every iteration's entry is kept (a per-variable stack, O(n)); beyond it
 * the work is about n * stride / 2 instead of n^2 / 2 replaying from the
 * loop's entry, with no bound to know before the loop runs. */
#define CHECKPOINT_NUMBERS 1024
#define CHECKPOINT_FEWEST 16
/* The local arrays a kernel's checkpoints may bring it to, in bytes: half
 * of what a GPU gives an iteration (backend/gpu/support.c), so that a body
 * copied per read (adjoint_gather.c) or with many loops still compiles
 * there; loops past it replay from their entry. */
#define CHECKPOINT_BYTES 32768

static int64_t scratch_bytes(const ir_func *f) {
    int64_t total = 0;
    for (int i = 0; i < f->nscratch; i++)
        if (!f->scratch[i].shared)
            total += ir_scratch_size(&f->scratch[i]) * tack_dtype_size((tack_dtype)f->scratch[i].type);
    return total;
}

static int has_snapshots(const adj *A, const rec *r);
static int emit_fwd(adj *A, const reclist *l, ir_block *out, int carry);
static int emit_rev(adj *A, const reclist *l, ir_block *out);
static ir_stmt *for_range(adj *A, int var, ir_expr *stop, int line, int col);

static int keepable(ir_type t) { return isf(t) || ir_type_is_int(t) || t == TACK_BOOL; }
static ir_type kept_type(ir_type t) { return t == TACK_BOOL ? TACK_U8 : t; }

static ir_expr *index1(adj *A, int scratch, ir_expr *k, ir_type t) {
    ir_expr *e = mk(A, IR_SLOAD, t);
    ir_expr **idx = arena_alloc(&A->f->mem, sizeof *idx);
    if (!e || !idx || !k) return NULL;
    idx[0] = castto(A, k, TACK_I64); /* local arrays are indexed in i64, as lowering does */
    e->index = scratch;
    e->args = idx;
    e->nargs = 1;
    return e;
}

static int kept_arrays(adj *A, rec *r, int64_t kept) {
    for (int c = 0; c < r->nc; c++) {
        char name[128];
        snprintf(name, sizeof name, "%s.kept", A->f->locals[r->cv[c]].name ? A->f->locals[r->cv[c]].name : "adj");
        ir_scratch a = {.name = name, .type = kept_type(A->f->locals[r->cv[c]].type), .ndim = 1, .dims = {kept}};
        if ((r->ck[c] = ir_scratch_add(A->f, &a)) < 0) return push(A, NULL, NULL);
    }
    return 0;
}

/* After the loop is recorded: a local array per carried local, when each
 * can be kept and the kernel has room for them (else the loop replays
 * from its entry, as before). */
static int checkpoints(adj *A, reclist *out, rec *r) {
    if (!r->nc || has_snapshots(A, r) || A->f->nscratch + r->nc > IR_MAX_SCRATCH) return 0;
    for (int c = 0; c < r->nc; c++)
        if (!keepable(A->f->locals[r->cv[c]].type)) return 0;
    int64_t kept = CHECKPOINT_NUMBERS / r->nc, entry = 0;
    if (kept < CHECKPOINT_FEWEST) kept = CHECKPOINT_FEWEST;
    for (int c = 0; c < r->nc; c++)
        entry += tack_dtype_size((tack_dtype)kept_type(A->f->locals[r->cv[c]].type));
    int64_t room = (CHECKPOINT_BYTES - scratch_bytes(A->f)) / entry;
    if (kept > room) kept = room;
    kept &= ~(int64_t)1; /* a while's checkpoints halve */
    if (kept < CHECKPOINT_FEWEST) return 0;
    ir_type t = A->f->locals[r->nt].type;
    if (r->kind == R_WHILE) { /* the stride starts at 1 in the forward sweep (emit_fwd) */
        if ((r->stride = new_local(A, "adj.stride", t)) < 0 || (r->it = new_local(A, "adj.it", t)) < 0 ||
            !(r->ck = arena_alloc(&A->f->mem, r->nc * sizeof *r->ck)))
            return push(A, NULL, NULL);
        return kept_arrays(A, r, kept);
    }
    /* stride = max(1, ceil(n / kept)), before the loop in the forward sweep */
    ir_expr *ceil[2];
    for (int i = 0; i < 2; i++)
        ceil[i] = bin(A, OP_FLOORDIV, bin(A, OP_ADD, loc(A, r->nt), ir_const_int(A->f, kept - 1, t, 0, 0), t),
                      ir_const_int(A->f, kept, t, 0, 0), t);
    ir_expr *one = mk(A, IR_SELECT, t);
    if (!one || !ceil[0] || !ceil[1]) return push(A, NULL, NULL);
    one->cond = bin(A, OP_GT, ceil[0], ir_const_int(A->f, 1, t, 0, 0), TACK_BOOL);
    one->a = ceil[1];
    one->b = ir_const_int(A->f, 1, t, 0, 0);
    if ((r->stride = new_local(A, "adj.stride", t)) < 0 || (r->it = new_local(A, "adj.it", t)) < 0 ||
        !(r->ck = arena_alloc(&A->f->mem, r->nc * sizeof *r->ck)))
        return push(A, NULL, NULL);
    /* the stride is recorded before the loop: a statement of the sweep */
    ir_stmt *st = assign(A, r->stride, one);
    if (!st) return push(A, NULL, NULL);
    rec *loop = out->v[out->n - 1];
    if (rec_stmt(A, out, st, 0)) return -1;
    out->v[out->n - 2] = out->v[out->n - 1]; /* the stride goes before the loop */
    out->v[out->n - 1] = loop;
    return kept_arrays(A, r, kept);
}

/* First in each forward iteration: if it % stride == 0, keep the carried
 * values at it / stride; it += 1. */
static int keep_checkpoint(adj *A, const rec *r, ir_block *body) {
    ir_type t = A->f->locals[r->it].type;
    if (r->kind == R_WHILE) {
        /* full (it == kept * stride): ck[q] = ck[2q] for q < kept / 2, stride *= 2 */
        int64_t kept = A->f->scratch[r->ck[0]].dims[0];
        int q = new_local(A, "adj.q", t);
        ir_stmt *full = ir_stmt_new(A->f, IR_IF, r->line, r->col);
        ir_stmt *halve = q < 0 ? NULL : for_range(A, q, ir_const_int(A->f, kept / 2, t, 0, 0), r->line, r->col);
        if (!full || !halve ||
            !(full->value = bin(A, OP_EQ, loc(A, r->it),
                                bin(A, OP_MUL, ir_const_int(A->f, kept, t, 0, 0), loc(A, r->stride), t), TACK_BOOL)))
            return push(A, NULL, NULL);
        for (int c = 0; c < r->nc; c++) {
            ir_stmt *st = ir_stmt_new(A->f, IR_SSTORE, r->line, r->col);
            ir_expr **idx = arena_alloc(&A->f->mem, sizeof *idx);
            ir_type kt = A->f->scratch[r->ck[c]].type;
            ir_expr *from = index1(A, r->ck[c], bin(A, OP_MUL, loc(A, q), ir_const_int(A->f, 2, t, 0, 0), t), kt);
            if (!st || !idx || !from || !(idx[0] = castto(A, loc(A, q), TACK_I64))) return push(A, NULL, NULL);
            st->index = r->ck[c];
            st->indices = idx;
            st->nindices = 1;
            st->value = from;
            if (push(A, &halve->body, st)) return -1;
        }
        if (push(A, &full->body, halve) ||
            push(A, &full->body, assign(A, r->stride, bin(A, OP_MUL, loc(A, r->stride), ir_const_int(A->f, 2, t, 0, 0), t))) ||
            push(A, body, full))
            return -1;
    }
    ir_stmt *when = ir_stmt_new(A->f, IR_IF, r->line, r->col);
    if (!when || !(when->value = bin(A, OP_EQ, bin(A, OP_MOD, loc(A, r->it), loc(A, r->stride), t),
                                     ir_const_int(A->f, 0, t, 0, 0), TACK_BOOL)))
        return push(A, NULL, NULL);
    for (int c = 0; c < r->nc; c++) {
        ir_stmt *st = ir_stmt_new(A->f, IR_SSTORE, r->line, r->col);
        ir_expr **idx = arena_alloc(&A->f->mem, sizeof *idx);
        ir_type kt = A->f->scratch[r->ck[c]].type;
        if (!st || !idx || !(idx[0] = castto(A, bin(A, OP_FLOORDIV, loc(A, r->it), loc(A, r->stride), t), TACK_I64)))
            return push(A, NULL, NULL);
        st->index = r->ck[c];
        st->indices = idx;
        st->nindices = 1;
        st->value = castto(A, loc(A, r->cv[c]), kt);
        if (push(A, &when->body, st)) return -1;
    }
    return push(A, body, when) ||
           push(A, body, assign(A, r->it, bin(A, OP_ADD, loc(A, r->it), ir_const_int(A->f, 1, t, 0, 0), t)));
}

/* The reverse sweep of a loop with checkpoints: for each iteration j, last
 * first, the carried values from checkpoint j / stride, the iterations
 * from it up to j again, iteration j, its adjoint. */
static int reverse_from_checkpoints(adj *A, const rec *r, ir_block *out) {
    ir_type t = A->f->locals[r->nt].type;
    int jj = new_local(A, "adj.jj", t), j = new_local(A, "adj.j", t), k = new_local(A, "adj.k", t),
        from = new_local(A, "adj.from", t);
    if (jj < 0 || j < 0 || k < 0 || from < 0) return push(A, out, NULL);
    ir_stmt *outer = for_range(A, jj, loc(A, r->nt), r->line, r->col);
    if (!outer) return push(A, out, NULL);
    ir_block *b = &outer->body;
    if (push(A, b, assign(A, j, bin(A, OP_SUB, bin(A, OP_SUB, loc(A, r->nt), ir_const_int(A->f, 1, t, 0, 0), t),
                                      loc(A, jj), t))) ||
        push(A, b, assign(A, from, bin(A, OP_MUL, bin(A, OP_FLOORDIV, loc(A, j), loc(A, r->stride), t),
                                         loc(A, r->stride), t))))
        return -1;
    for (int c = 0; c < r->nc; c++) {
        ir_type ct = A->f->locals[r->cv[c]].type;
        ir_expr *v = index1(A, r->ck[c], bin(A, OP_FLOORDIV, loc(A, j), loc(A, r->stride), t),
                            A->f->scratch[r->ck[c]].type);
        if (!v || push(A, b, assign(A, r->cv[c], ct == TACK_BOOL ? bin(A, OP_NE, v, ir_const_int(A->f, 0, TACK_U8, 0, 0), TACK_BOOL)
                                                                   : v)))
            return push(A, out, NULL);
    }
    ir_stmt *again = for_range(A, k, bin(A, OP_SUB, loc(A, j), loc(A, from), t), r->line, r->col);
    if (!again) return push(A, out, NULL);
    int isfor = r->kind == R_FOR; /* a while has no variable to set */
    ir_expr *at = bin(A, OP_ADD, loc(A, from), loc(A, k), t);
    if ((isfor && push(A, &again->body, assign(A, r->lv, bin(A, OP_ADD, loc(A, r->s0), bin(A, OP_MUL, at, loc(A, r->s2), t), t)))) ||
        emit_fwd(A, &r->body, &again->body, 1) || push(A, b, again))
        return -1;
    return (isfor && push(A, b, assign(A, r->lv, bin(A, OP_ADD, loc(A, r->s0), bin(A, OP_MUL, loc(A, j), loc(A, r->s2), t), t)))) ||
                   emit_fwd(A, &r->body, b, 0) || emit_rev(A, &r->body, b) || push(A, out, outer)
               ? -1
               : 0;
}

static int rec_for(adj *A, reclist *out, const ir_stmt *s) {
    rec *r = rec_new(A, R_FOR);
    if (!r) return push(A, NULL, NULL);
    ir_type t = A->f->locals[s->index].type;
    r->lv = s->index;
    r->line = s->line;
    r->col = s->col;
    ir_expr *e[3] = {castto(A, rename_expr(A, out, s->start), t), castto(A, rename_expr(A, out, s->stop), t),
                     castto(A, rename_expr(A, out, s->step), t)};
    if ((r->s0 = int_local(A, out, "adj.start", t, e[0])) < 0 ||
        (r->s1 = int_local(A, out, "adj.stop", t, e[1])) < 0 ||
        (r->s2 = int_local(A, out, "adj.step", t, e[2])) < 0)
        return -1;
    /* literal bounds stay literal in the loops made from this one: the CPU
     * backend's analyses (offset atomics) read a loop variable's range */
    for (int k = 0; k < 3; k++) {
        int64_t v;
        r->b[k] = fold_int(e[k], &v) ? ir_const_int(A->f, v, t, 0, 0) : NULL;
    }
    /* trip count: ceil((stop - start) / step), at least 0 */
    ir_expr *up = bin(A, OP_FLOORDIV, bin(A, OP_SUB, bin(A, OP_ADD, bin(A, OP_SUB, loc(A, r->s1), loc(A, r->s0), t),
                                                        loc(A, r->s2), t), ir_const_int(A->f, 1, t, 0, 0), t),
                      loc(A, r->s2), t);
    ir_expr *down = bin(A, OP_FLOORDIV, bin(A, OP_SUB, bin(A, OP_SUB, bin(A, OP_SUB, loc(A, r->s0), loc(A, r->s1), t),
                                                          loc(A, r->s2), t), ir_const_int(A->f, 1, t, 0, 0), t),
                        bin(A, OP_SUB, ir_const_int(A->f, 0, t, 0, 0), loc(A, r->s2), t), t);
    ir_expr *sel = mk(A, IR_SELECT, t);
    if (!sel) return push(A, NULL, NULL);
    sel->cond = bin(A, OP_GT, loc(A, r->s2), ir_const_int(A->f, 0, t, 0, 0), TACK_BOOL);
    sel->a = up;
    sel->b = down;
    int raw = int_local(A, out, "adj.n", t, sel);
    if (raw < 0) return -1;
    ir_expr *clamp = mk(A, IR_SELECT, t);
    if (!clamp) return push(A, NULL, NULL);
    clamp->cond = bin(A, OP_GT, loc(A, raw), ir_const_int(A->f, 0, t, 0, 0), TACK_BOOL);
    clamp->a = loc(A, raw);
    clamp->b = ir_const_int(A->f, 0, t, 0, 0);
    if ((r->nt = int_local(A, out, "adj.n", t, clamp)) < 0) return -1;
    if (rec_loop_body(A, out, r, s)) return -1;
    return checkpoints(A, out, r);
}

/* The carried locals (each a fresh version, assigned its entry value)
 * and the body, which assigns them again at its end. */
static int rec_loop_body(adj *A, reclist *out, rec *r, const ir_stmt *s) {
    r->s = (ir_stmt *)s;
    char *mark = calloc(A->n0 ? A->n0 : 1, 1);
    if (!mark) return push(A, NULL, NULL);
    assigned(&s->body, mark);
    int nc = 0;
    for (int l = 0; l < A->n0; l++) {
        if (mark[l] && iteration_local(A, s, l)) mark[l] = 0;
        nc += mark[l];
    }
    r->cv = arena_alloc(&A->f->mem, (nc ? nc : 1) * sizeof *r->cv);
    r->c0 = arena_alloc(&A->f->mem, (nc ? nc : 1) * sizeof *r->c0);
    int *orig = malloc((nc ? nc : 1) * sizeof *orig);
    if (!r->cv || !r->c0 || !orig) {
        free(mark);
        free(orig);
        return push(A, NULL, NULL);
    }
    for (int l = 0; l < A->n0; l++) {
        if (!mark[l] || l == s->index) continue;
        int c = fresh(A, l, NULL, A->f->locals[l].type);
        if (c < 0 || rec_stmt(A, out, assign(A, c, loc(A, A->ver[l])), 0)) {
            free(mark);
            free(orig);
            return -1;
        }
        r->c0[r->nc] = A->ver[l];
        r->cv[r->nc] = c;
        orig[r->nc++] = l;
        A->ver[l] = c;
    }
    free(mark);
    int bad = 0;
    if (r->kind == R_WHILE) {
        /* the condition, read from the carried versions (orelse) */
        ir_expr *cond = rename_expr(A, &r->orelse, s->value);
        if (!cond || (r->cond = new_local(A, "adj.cond", TACK_BOOL)) < 0 ||
            rec_stmt(A, &r->orelse, assign(A, r->cond, cond), 0))
            bad = 1;
    }
    bad = bad || rec_block(A, &r->body, s->body.stmts, s->body.n, -1);
    for (int k = 0; !bad && k < r->nc; k++) {
        int l = orig[k];
        if (A->ver[l] != r->cv[k] && rec_stmt(A, &r->body, assign(A, r->cv[k], loc(A, A->ver[l])), 1))
            bad = 1;
        A->ver[l] = r->cv[k];
    }
    free(orig);
    return bad ? -1 : rec_push(A, out, r);
}

/* A `while`: the forward sweep counts its iterations (nt), and the
 * reverse sweep runs that many, as for a `for` with that trip count; so
 * no bound need be known before the loop runs. */
static int rec_while(adj *A, reclist *out, const ir_stmt *s) {
    rec *r = rec_new(A, R_WHILE);
    if (!r) return push(A, NULL, NULL);
    r->lv = -1;
    r->line = s->line;
    r->col = s->col;
    if ((r->nt = new_local(A, "adj.n", TACK_I64)) < 0) return push(A, NULL, NULL);
    if (rec_loop_body(A, out, r, s)) return -1;
    return checkpoints(A, out, r);
}

static int rec_inline(adj *A, reclist *out, const ir_expr *e) {
    if (!e->body) return 0;
    return rec_block(A, out, e->body->stmts, e->body->n, e->inline_id);
}

static int unsupported(adj *A, const ir_stmt *s, const char *what) {
    return fail(A, s->src, s->line, s->col,
                "backward of %s is not supported (tack.Tape / backward)", what);
}

static ir_stmt *clone_stmt(adj *A, const ir_stmt *s);

static int rec_block(adj *A, reclist *out, ir_stmt **stmts, int n, int inline_id) {
    for (int i = 0; i < n; i++) {
        const ir_stmt *s = stmts[i];
        switch (s->kind) {
        case IR_ASSIGN: {
            ir_expr *v = rename_expr(A, out, s->value);
            if (!v || rec_assign(A, out, s->index, v, s->line, s->col)) return -1;
            break;
        }
        case IR_STORE: case IR_EVAL: {
            if (s->kind == IR_EVAL && s->value->kind == IR_INLINE) {
                if (!rename_expr(A, out, s->value)) return -1;
                break;
            }
            if (s->kind == IR_EVAL && (s->value->kind != IR_ATOMIC ||
                                       (s->value->atomic != ATOM_ADD && s->value->atomic != ATOM_SUB &&
                                        s->value->atomic != ATOM_MIN && s->value->atomic != ATOM_MAX)))
                return unsupported(A, s, "this atomic (atomic_add, atomic_sub, atomic_min and "
                                         "atomic_max are differentiated)");
            ir_stmt *c = ir_stmt_new(A->f, s->kind, s->line, s->col);
            if (!c) return push(A, NULL, NULL);
            *c = *s;
            ir_expr *src = s->kind == IR_STORE ? NULL : s->value;
            ir_expr **idx = s->kind == IR_STORE ? s->indices : src->args;
            int nidx = s->kind == IR_STORE ? s->nindices : src->nargs;
            ir_expr **ni = arena_alloc(&A->f->mem, (nidx ? nidx : 1) * sizeof *ni);
            if (!ni) return push(A, NULL, NULL);
            for (int k = 0; k < nidx; k++)
                if (!(ni[k] = rename_expr(A, out, idx[k]))) return -1;
            if (s->kind == IR_STORE) {
                c->indices = ni;
                if (!(c->value = rename_expr(A, out, s->value))) return -1;
            } else {
                ir_expr *at = arena_alloc(&A->f->mem, sizeof *at);
                if (!at) return push(A, NULL, NULL);
                *at = *src;
                at->args = ni;
                if (!(at->a = rename_expr(A, out, src->a))) return -1;
                c->value = at;
            }
            if (rec_stmt(A, out, c, 0)) return -1;
            break;
        }
        case IR_IF: {
            ir_expr *cond = rename_expr(A, out, s->value);
            if (!cond) return -1;
            int x1 = inline_id >= 0 && ends_in_exit(&s->body, inline_id);
            int x2 = inline_id >= 0 && ends_in_exit(&s->orelse, inline_id);
            if (x1 || x2) {
                /* a `return` ends a branch: the rest of the block is the other one's */
                int rest = n - i - 1;
                ir_stmt **b1 = s->body.stmts, **b2 = s->orelse.stmts;
                int n1 = s->body.n - x1, n2 = s->orelse.n - x2;
                ir_stmt **tail = arena_alloc(&A->f->mem, (s->body.n + s->orelse.n + rest + 1) * sizeof *tail);
                if (!tail) return push(A, NULL, NULL);
                /* an empty branch has no statement array: copy by loop, not memcpy(NULL) */
                if (!x1) {
                    for (int k = 0; k < n1; k++) tail[k] = b1[k];
                    for (int k = 0; k < rest; k++) tail[n1 + k] = stmts[i + 1 + k];
                    b1 = tail;
                    n1 += rest;
                } else if (!x2) {
                    for (int k = 0; k < n2; k++) tail[k] = b2[k];
                    for (int k = 0; k < rest; k++) tail[n2 + k] = stmts[i + 1 + k];
                    b2 = tail;
                    n2 += rest;
                }
                return rec_if(A, out, cond, b1, n1, b2, n2, inline_id, s->line, s->col);
            }
            if (rec_if(A, out, cond, s->body.stmts, s->body.n, s->orelse.stmts, s->orelse.n,
                       inline_id, s->line, s->col))
                return -1;
            break;
        }
        case IR_FOR:
            if (rec_for(A, out, s)) return -1;
            break;
        case IR_EXIT:
            if (s->index == inline_id) return 0; /* the rest is never run */
            return unsupported(A, s, "a device function's `return` inside a loop");
        case IR_WHILE:
            if (rec_while(A, out, s)) return -1;
            break;
        case IR_SSTORE: {
            /* a local array's element: indices and value as the forward has them */
            ir_stmt *c = clone_stmt(A, s);
            ir_expr **ni = arena_alloc(&A->f->mem, (s->nindices ? s->nindices : 1) * sizeof *ni);
            if (!c || !ni) return push(A, NULL, NULL);
            for (int k = 0; k < s->nindices; k++)
                if (!(ni[k] = rename_expr(A, out, s->indices[k]))) return -1;
            c->indices = ni;
            int upd = scratch_update(s);
            if (upd) {
                /* a[k] += w: its own read stays a read (no value is needed of it) */
                ir_expr *v = arena_alloc(&A->f->mem, sizeof *v), *own = arena_alloc(&A->f->mem, sizeof *own);
                if (!v || !own) return push(A, NULL, NULL);
                *v = *s->value;
                ir_expr *r0 = s->value->a, *ld = r0->kind == IR_CAST ? r0->a : r0;
                *own = *ld;
                own->args = ni;
                if (r0 != ld) {
                    ir_expr *cst = arena_alloc(&A->f->mem, sizeof *cst);
                    if (!cst) return push(A, NULL, NULL);
                    *cst = *r0;
                    cst->a = own;
                    own = cst;
                }
                v->a = own;
                if (!(v->b = rename_expr(A, out, s->value->b))) return -1;
                c->value = v;
            } else if (!(c->value = rename_expr(A, out, s->value))) {
                return -1;
            }
            if (rec_stmt(A, out, c, 0)) return -1;
            out->v[out->n - 1]->upd = upd;
            break;
        }
        case IR_BREAK: case IR_CONTINUE:
            return unsupported(A, s, "`break`/`continue`");
        case IR_PRINT:
            break; /* the forward launch printed already */
        default:
            return unsupported(A, s, "this statement (barriers, debug checks)");
        }
        if (A->failed) return -1;
    }
    return 0;
}

/* ---- the sweeps ---- */

static ir_stmt *clone_stmt(adj *A, const ir_stmt *s) {
    ir_stmt *c = ir_stmt_new(A->f, s->kind, s->line, s->col);
    if (c) *c = *s;
    return c;
}

static int copy_scratch(adj *A, ir_block *out, int from, int to);

/* Each snapshot loop r takes at its entry (from -> to), or the way back. */
static int snapshots(adj *A, const rec *r, ir_block *out, int back) {
    for (int i = 0; i < A->nsnaps; i++)
        if (A->snaps[i].loop == r->s &&
            copy_scratch(A, out, back ? A->snaps[i].to : A->snaps[i].from,
                         back ? A->snaps[i].from : A->snaps[i].to))
            return -1;
    return 0;
}

static int has_snapshots(const adj *A, const rec *r) {
    for (int i = 0; i < A->nsnaps; i++)
        if (A->snaps[i].loop == r->s) return 1;
    return 0;
}

/* The forward sweep, or a loop's iterations again in the reverse sweep;
 * both with the stores to local arrays, which later reads need. */
static int emit_fwd(adj *A, const reclist *l, ir_block *out, int carry) {
    for (int i = 0; i < l->n; i++) {
        const rec *r = l->v[i];
        if (r->kind == R_STMT) {
            if (!(r->s->kind == IR_ASSIGN || r->s->kind == IR_SSTORE) || (r->carry && !carry))
                continue;
            if (push(A, out, clone_stmt(A, r->s))) return -1;
        } else if (r->kind == R_IF) {
            ir_stmt *s = ir_stmt_new(A->f, IR_IF, r->line, r->col);
            if (!s) return push(A, out, NULL);
            s->value = loc(A, r->cond);
            if (emit_fwd(A, &r->body, &s->body, 1) || emit_fwd(A, &r->orelse, &s->orelse, 1) ||
                push(A, out, s))
                return -1;
        } else if (r->kind == R_WHILE) {
            /* n = 0; cond; while cond: body; n += 1; cond */
            ir_stmt *s = ir_stmt_new(A->f, IR_WHILE, r->line, r->col);
            if (!s) return push(A, out, NULL);
            s->value = loc(A, r->cond);
            if (r->ck && (push(A, out, assign(A, r->it, ir_const_int(A->f, 0, TACK_I64, 0, 0))) ||
                          push(A, out, assign(A, r->stride, ir_const_int(A->f, 1, TACK_I64, 0, 0))) ||
                          keep_checkpoint(A, r, &s->body)))
                return -1;
            if (push(A, out, assign(A, r->nt, ir_const_int(A->f, 0, TACK_I64, 0, 0))) || snapshots(A, r, out, 0) ||
                emit_fwd(A, &r->orelse, out, 1) || emit_fwd(A, &r->body, &s->body, 1) ||
                push(A, &s->body, assign(A, r->nt, bin(A, OP_ADD, loc(A, r->nt), ir_const_int(A->f, 1, TACK_I64, 0, 0), TACK_I64))) ||
                emit_fwd(A, &r->orelse, &s->body, 1) || push(A, out, s))
                return -1;
        } else {
            ir_stmt *s = ir_stmt_new(A->f, IR_FOR, r->line, r->col);
            if (!s) return push(A, out, NULL);
            s->index = r->lv;
            s->start = r->b[0] ? r->b[0] : loc(A, r->s0);
            s->stop = r->b[1] ? r->b[1] : loc(A, r->s1);
            s->step = r->b[2] ? r->b[2] : loc(A, r->s2);
            if (r->ck && (push(A, out, assign(A, r->it, ir_const_int(A->f, 0, A->f->locals[r->it].type, 0, 0))) ||
                          keep_checkpoint(A, r, &s->body)))
                return -1;
            if (snapshots(A, r, out, 0) || emit_fwd(A, &r->body, &s->body, 1) || push(A, out, s)) return -1;
        }
    }
    return 0;
}

static ir_stmt *for_range(adj *A, int var, ir_expr *stop, int line, int col) {
    ir_type t = A->f->locals[var].type;
    ir_stmt *s = ir_stmt_new(A->f, IR_FOR, line, col);
    if (!s) return NULL;
    s->index = var;
    s->start = ir_const_int(A->f, 0, t, 0, 0);
    s->stop = stop;
    s->step = ir_const_int(A->f, 1, t, 0, 0);
    return s;
}

/* The gradient parameter of a kernel's returned numbers (kernel.c names
 * it), or -1. */
static int return_grad(const adj *A) {
    int p = 2 * A->n;
    return p < A->f->nparams && A->f->params[p].name && !strcmp(A->f->params[p].name, "return.grad")
               ? p : -1;
}

/* A sum reduction's `s += v` (an atomic add into its hidden array p): v
 * takes the gradient of the returned number s is, return.grad[j]. */
static int reduction_adjoint(adj *A, ir_block *out, const ir_stmt *s, int p) {
    int rg = return_grad(A), r = ir_reduction_of_param(A->f, p), j = 0;
    ir_expr *v = s->value->a;
    while (j < A->f->nreturns && A->f->returns[j] != r) j++;
    if (rg < 0 || j == A->f->nreturns || !isf(v->type)) return 0; /* not returned: no gradient */
    ir_type gt = ir_value_type(A->f->params[rg].type);
    ir_expr *g = mk(A, IR_LOAD, gt);
    ir_expr **idx = arena_alloc(&A->f->mem, sizeof *idx);
    if (!g || !idx || !(idx[0] = ir_const_int(A->f, j, TACK_I64, 0, 0))) return push(A, out, NULL);
    g->index = rg;
    g->args = idx;
    g->nargs = 1;
    if (s->value->atomic == ATOM_SUB) g = bin(A, OP_SUB, cf(A, 0, gt), g, gt);
    if (s->value->atomic == ATOM_MIN || s->value->atomic == ATOM_MAX) {
        /* s = min(s, v): v takes the gradient where it is the returned
         * value (return.grad[RETURN_VALUES + j], which the caller passes;
         * ties each take it, as atomic_min's do) */
        ir_expr *won = mk(A, IR_LOAD, gt);
        ir_expr **wi = arena_alloc(&A->f->mem, sizeof *wi);
        ir_stmt *w = ir_stmt_new(A->f, IR_IF, s->line, s->col);
        if (!won || !wi || !w || !(wi[0] = ir_const_int(A->f, TACK_RETURN_VALUES + j, TACK_I64, 0, 0)))
            return push(A, out, NULL);
        won->index = rg;
        won->args = wi;
        won->nargs = 1;
        w->value = bin(A, OP_EQ, v, castto(A, won, v->type), TACK_BOOL);
        if (!w->value || prop_held(A, &w->body, v, castto(A, g, v->type))) return -1;
        return push(A, out, w);
    }
    return prop_held(A, out, v, castto(A, g, v->type));
}

static int emit_rev(adj *A, const reclist *l, ir_block *out) {
    for (int i = l->n - 1; i >= 0; i--) {
        const rec *r = l->v[i];
        if (r->kind == R_IF) {
            ir_stmt *s = ir_stmt_new(A->f, IR_IF, r->line, r->col);
            if (!s) return push(A, out, NULL);
            s->value = loc(A, r->cond);
            if (emit_rev(A, &r->body, &s->body) || emit_rev(A, &r->orelse, &s->orelse) || push(A, out, s))
                return -1;
            continue;
        }
        if (r->kind == R_FOR && !r->nc && !has_snapshots(A, r)) {
            /* Nothing carried: the iterations are independent, and each
             * one's adjoint follows its forward, in the loop's own order
             * (over the loop's variable, whose range the backend sees). */
            ir_stmt *loop = ir_stmt_new(A->f, IR_FOR, r->line, r->col);
            if (!loop) return push(A, out, NULL);
            loop->index = r->lv;
            loop->start = r->b[0] ? r->b[0] : loc(A, r->s0);
            loop->stop = r->b[1] ? r->b[1] : loc(A, r->s1);
            loop->step = r->b[2] ? r->b[2] : loc(A, r->s2);
            if (emit_fwd(A, &r->body, &loop->body, 0) || emit_rev(A, &r->body, &loop->body) ||
                push(A, out, loop))
                return -1;
            continue;
        }
        if ((r->kind == R_FOR || r->kind == R_WHILE) && r->ck) {
            if (reverse_from_checkpoints(A, r, out)) return -1;
            continue;
        }
        if (r->kind == R_FOR || r->kind == R_WHILE) {
            /* for jj in range(n): j = n-1-jj; carried values from the entry
             * ones, local arrays from the loop's snapshots; iterations
             * 0..j-1 again; iteration j; its adjoint.  A loop that carries
             * nothing needs iteration j only. */
            ir_type t = A->f->locals[r->nt].type;
            int isfor = r->kind == R_FOR;
            int jj = new_local(A, "adj.jj", t), j = new_local(A, "adj.j", t), k = new_local(A, "adj.k", t);
            if (jj < 0 || j < 0 || k < 0) return push(A, out, NULL);
            ir_stmt *outer = for_range(A, jj, loc(A, r->nt), r->line, r->col);
            if (!outer) return push(A, out, NULL);
            ir_block *b = &outer->body;
            if (push(A, b, assign(A, j, bin(A, OP_SUB, bin(A, OP_SUB, loc(A, r->nt), ir_const_int(A->f, 1, t, 0, 0), t),
                                              loc(A, jj), t))))
                return -1;
            for (int c = 0; c < r->nc; c++)
                if (push(A, b, assign(A, r->cv[c], loc(A, r->c0[c])))) return -1;
            if (snapshots(A, r, b, 1)) return -1;
            if (r->nc || has_snapshots(A, r)) {
                ir_stmt *again = for_range(A, k, loc(A, j), r->line, r->col);
                if (!again) return push(A, out, NULL);
                if ((isfor && push(A, &again->body, assign(A, r->lv, bin(A, OP_ADD, loc(A, r->s0),
                                                                       bin(A, OP_MUL, loc(A, k), loc(A, r->s2), t), t)))) ||
                    emit_fwd(A, &r->body, &again->body, 1) || push(A, b, again))
                    return -1;
            }
            if ((isfor && push(A, b, assign(A, r->lv, bin(A, OP_ADD, loc(A, r->s0), bin(A, OP_MUL, loc(A, j), loc(A, r->s2), t), t)))) ||
                emit_fwd(A, &r->body, b, 0) || emit_rev(A, &r->body, b) || push(A, out, outer))
                return -1;
            continue;
        }
        ir_stmt *s = r->s;
        if (s->kind == IR_SSTORE) {
            int sa = A->sadj[s->index];
            if (sa < 0) continue;
            ir_type st = A->f->scratch[s->index].type;
            ir_expr *g = mk(A, IR_SLOAD, st);
            if (!g) return push(A, out, NULL);
            g->index = sa;
            g->args = s->indices;
            g->nargs = s->nindices;
            if (r->upd) {
                /* a[k] += w: w takes a.adj[k], which passes through unchanged */
                ir_expr *w = s->value->b;
                if (r->upd < 0) g = bin(A, OP_SUB, cf(A, 0, st), g, st);
                if (isf(w->type) && prop_held(A, out, w, castto(A, g, w->type))) return -1;
                continue;
            }
            /* a[k] = v: v takes a.adj[k]; the value before this store had
             * no reader after it, so its adjoint starts from 0 */
            ir_stmt *z = ir_stmt_new(A->f, IR_SSTORE, s->line, s->col);
            int tl = new_local(A, "adj.t", st);
            if (!z || tl < 0 || push(A, out, assign(A, tl, g))) return push(A, out, NULL);
            z->index = sa;
            z->indices = s->indices;
            z->nindices = s->nindices;
            z->value = cf(A, 0, st);
            if (push(A, out, z)) return -1;
            if (isf(s->value->type) && prop(A, out, s->value, castto(A, loc(A, tl), s->value->type))) return -1;
            continue;
        }
        if (s->kind == IR_ASSIGN) {
            int a = A->adjl[s->index];
            if (a < 0) continue;
            /* the adjoint is used up: an earlier value of the local (a loop's) starts from 0 */
            int tl = new_local(A, "adj.t", A->f->locals[a].type);
            if (tl < 0 || push(A, out, assign(A, tl, loc(A, a))) ||
                push(A, out, assign(A, a, cf(A, 0, A->f->locals[a].type))) ||
                prop(A, out, s->value, loc(A, tl)))
                return -1;
            continue;
        }
        int p = s->kind == IR_STORE ? s->index : s->value->index;
        ir_expr *v = s->kind == IR_STORE ? s->value : s->value->a;
        ir_expr **idx = s->kind == IR_STORE ? s->indices : s->value->args;
        int nidx = s->kind == IR_STORE ? s->nindices : s->value->nargs;
        if (s->kind == IR_EVAL && ir_reduction_of_param(A->f, p) >= 0) {
            if (reduction_adjoint(A, out, s, p)) return -1;
            continue;
        }
        if (p >= A->n || !isf(A->f->params[p].type)) continue;
        ir_expr *g = mk(A, IR_LOAD, ir_value_type(A->f->params[p].type));
        if (!g) return push(A, out, NULL);
        g->index = A->n + p;
        g->args = idx;
        g->nargs = nidx;
        if (s->kind == IR_STORE && update_read(s)) {
            /* p[k] += w: w takes p.grad[k]; p's own adjoint passes through */
            ir_expr *w = s->value->b;
            if (s->value->op == OP_SUB) g = bin(A, OP_SUB, cf(A, 0, g->type), g, g->type);
            if (prop_held(A, out, w, castto(A, g, w->type))) return -1;
            continue;
        }
        if (s->kind == IR_EVAL && s->value->atomic == ATOM_SUB)
            g = bin(A, OP_SUB, cf(A, 0, g->type), g, g->type);
        if (s->kind == IR_EVAL && (s->value->atomic == ATOM_MIN || s->value->atomic == ATOM_MAX)) {
            /* The winner takes p.grad[k]: every value equal to the element's
             * final one (ties each take it, as Warp's).  p's own gradient
             * passes through as for add. */
            if (!isf(v->type)) continue;
            ir_type pt = ir_value_type(A->f->params[p].type);
            ir_expr *now = mk(A, IR_LOAD, pt);
            ir_stmt *w = ir_stmt_new(A->f, IR_IF, s->line, s->col);
            if (!now || !w) return push(A, out, NULL);
            now->index = p;
            now->args = idx;
            now->nargs = nidx;
            w->value = bin(A, OP_EQ, castto(A, v, pt), now, TACK_BOOL);
            if (!w->value || prop_held(A, &w->body, v, castto(A, g, v->type)) || push(A, out, w))
                return -1;
            continue;
        }
        if (isf(v->type) && prop_held(A, out, v, castto(A, g, v->type))) return -1;
    }
    return 0;
}

/* tack.stop_gradient(v) is v once the adjoint has seen it. */
static ir_expr *strip_expr(ir_expr *e);
static void strip_block(ir_block *b) {
    for (int i = 0; i < b->n; i++) {
        ir_stmt *s = b->stmts[i];
        s->value = strip_expr(s->value);
        s->start = strip_expr(s->start);
        s->stop = strip_expr(s->stop);
        s->step = strip_expr(s->step);
        for (int k = 0; k < s->nindices; k++) s->indices[k] = strip_expr(s->indices[k]);
        strip_block(&s->body);
        strip_block(&s->orelse);
    }
}
static ir_expr *strip_expr(ir_expr *e) {
    if (!e) return e;
    while (e->kind == IR_CALL && e->fn == INTR_STOP_GRADIENT) e = e->args[0];
    e->a = strip_expr(e->a);
    e->b = strip_expr(e->b);
    e->cond = strip_expr(e->cond);
    for (int i = 0; i < e->nargs; i++) e->args[i] = strip_expr(e->args[i]);
    if (e->kind == IR_INLINE && e->body) strip_block(e->body);
    return e;
}

void pass_strip_stop_gradient(ir_func *f) {
    if (f->uses_stop_gradient) strip_block(&f->body);
}

/* to[k] = from[k] for every element (two local arrays of one shape). */
static int copy_scratch(adj *A, ir_block *out, int from, int to) {
    int k = new_local(A, "adj.c", TACK_I64);
    ir_stmt *loop = k < 0 ? NULL : for_range(A, k, ir_const_int(A->f, ir_scratch_size(&A->f->scratch[from]), TACK_I64, 0, 0), 0, 0);
    ir_stmt *st = ir_stmt_new(A->f, IR_SSTORE, 0, 0);
    ir_expr *ld = mk(A, IR_SLOAD, A->f->scratch[from].type);
    ir_expr **idx = arena_alloc(&A->f->mem, sizeof *idx);
    if (!loop || !st || !ld || !idx || !(idx[0] = loc(A, k))) return push(A, out, NULL);
    ld->index = from;
    ld->args = st->indices = idx;
    ld->nargs = st->nindices = 1;
    st->index = to;
    st->value = ld;
    return push(A, &loop->body, st) || push(A, out, loop) ? -1 : 0;
}

/* Each float local array gets its adjoint ("a.adj", the same shape),
 * zeroed at the start of every iteration (the forward's own zeroing at
 * tack.local's line is a store whose reverse zeroes it again). */
static int adjoint_arrays(adj *A, ir_block *body) {
    int n = A->f->nscratch;
    if (!(A->sadj = malloc((n ? n : 1) * sizeof *A->sadj))) return push(A, NULL, NULL);
    for (int i = 0; i < n; i++) {
        A->sadj[i] = -1;
        ir_scratch a = A->f->scratch[i];
        if (!isf(a.type) || a.shared) continue;
        char name[128];
        snprintf(name, sizeof name, "%s.adj", a.name);
        a.name = name;
        if ((A->sadj[i] = ir_scratch_add(A->f, &a)) < 0)
        {
            char most[16];
            snprintf(most, sizeof most, "%d", IR_MAX_SCRATCH);
            return fail(A, 0, A->f->first_line, 0,
                        "backward of this kernel needs an adjoint for each of its local arrays, "
                        "more than the %s arrays a kernel may have", most);
        }
        int k = new_local(A, "adj.z", TACK_I64);
        ir_stmt *loop = k < 0 ? NULL : for_range(A, k, ir_const_int(A->f, ir_scratch_size(&a), TACK_I64, 0, 0), 0, 0);
        ir_stmt *z = ir_stmt_new(A->f, IR_SSTORE, 0, 0);
        ir_expr **idx = arena_alloc(&A->f->mem, sizeof *idx);
        if (!loop || !z || !idx || !(idx[0] = loc(A, k))) return push(A, NULL, NULL);
        z->index = A->sadj[i];
        z->indices = idx;
        z->nindices = 1;
        z->value = cf(A, 0, a.type);
        if (push(A, &loop->body, z) || push(A, body, loop)) return -1;
    }
    return 0;
}

/* The first statement updating reduction array p (its line for messages). */
static const ir_stmt *update_of(const ir_block *b, int p) {
    for (int i = 0; i < b->n; i++) {
        const ir_stmt *s = b->stmts[i], *in;
        if (s->kind == IR_EVAL && s->value->kind == IR_ATOMIC && s->value->index == p) return s;
        if ((in = update_of(&s->body, p)) || (in = update_of(&s->orelse, p))) return in;
    }
    return NULL;
}

/* ---- where a construct with no adjoint is used (for the refusal's line) ---- */

typedef int (*stmt_test)(const ir_func *f, const ir_stmt *s, int arg);

static const ir_stmt *first_in_block(const ir_func *f, const ir_block *b, stmt_test hit, int arg);
/* Inlined bodies inside e (device functions, random draws), in order. */
static const ir_stmt *first_in_expr(const ir_func *f, const ir_expr *e, stmt_test hit, int arg) {
    if (!e) return NULL;
    const ir_stmt *r = e->kind == IR_INLINE && e->body ? first_in_block(f, e->body, hit, arg) : NULL;
    if (!r) r = first_in_expr(f, e->cond, hit, arg);
    if (!r) r = first_in_expr(f, e->a, hit, arg);
    if (!r) r = first_in_expr(f, e->b, hit, arg);
    for (int i = 0; !r && i < e->nargs; i++) r = first_in_expr(f, e->args[i], hit, arg);
    return r;
}
/* The first statement, innermost first, for which hit() holds. */
static const ir_stmt *first_in_block(const ir_func *f, const ir_block *b, stmt_test hit, int arg) {
    for (int i = 0; b && i < b->n; i++) {
        const ir_stmt *s = b->stmts[i], *r = first_in_expr(f, s->value, hit, arg);
        for (int k = 0; !r && k < s->nindices; k++) r = first_in_expr(f, s->indices[k], hit, arg);
        if (!r) r = first_in_expr(f, s->start, hit, arg);
        if (!r) r = first_in_expr(f, s->stop, hit, arg);
        if (!r) r = first_in_expr(f, s->step, hit, arg);
        if (!r && hit(f, s, arg)) r = s;
        if (!r) r = first_in_block(f, &s->body, hit, arg);
        if (!r) r = first_in_block(f, &s->orelse, hit, arg);
        if (r) return r;
    }
    return NULL;
}

/* tack.shared's arrays, tack.local_index() (i & 255), tack.group_index() (i >> 8) */
static int collective_expr(const ir_func *f, const ir_expr *e) {
    if (!e) return 0;
    if (e->kind == IR_SLOAD && f->scratch[e->index].shared) return 1;
    if (e->kind == IR_BINOP && e->a && e->a->kind == IR_LOCAL && e->a->index == f->loop_var && e->b &&
        e->b->kind == IR_CONST &&
        ((e->op == OP_AND && e->b->i == IR_WORKGROUP - 1) || (e->op == OP_SHR && e->b->i == IR_WORKGROUP_SHIFT)))
        return 1;
    if (collective_expr(f, e->a) || collective_expr(f, e->b) || collective_expr(f, e->cond)) return 1;
    for (int i = 0; i < e->nargs; i++)
        if (collective_expr(f, e->args[i])) return 1;
    return 0;
}
static int is_collective(const ir_func *f, const ir_stmt *s, int unused) {
    (void)unused;
    if (s->kind == IR_BARRIER || (s->kind == IR_SSTORE && f->scratch[s->index].shared)) return 1;
    if (s->kind == IR_IF || s->kind == IR_WHILE || s->kind == IR_FOR) /* their bodies are searched on */
        return collective_expr(f, s->value) || collective_expr(f, s->start) || collective_expr(f, s->stop);
    if (collective_expr(f, s->value)) return 1;
    for (int k = 0; k < s->nindices; k++)
        if (collective_expr(f, s->indices[k])) return 1;
    return 0;
}
/* A draw advances the hidden stream's state local */
static int draws(const ir_func *f, const ir_stmt *s, int state) {
    (void)f;
    return s->kind == IR_ASSIGN && s->index == state;
}

/* Workgroups and the hidden random stream have no adjoint: refused at the
 * first statement that uses them. */
static int refuse_constructs(adj *A) {
    ir_func *f = A->f;
    const ir_stmt *at = NULL;
    const char *what = NULL;
    if (f->collective) {
        at = first_in_block(f, &f->body, is_collective, 0);
        what = "workgroups (tack.shared, tack.barrier(), tack.local_index(), tack.group_index())";
    } else if (f->rng_seed >= 0) {
        /* the body begins with the stream's setup, all assigning its state
         * local (lower/random.c); the first draw assigns it again later */
        int state = f->body.n && f->body.stmts[0]->kind == IR_ASSIGN ? f->body.stmts[0]->index : -1;
        int skip = 0;
        while (skip < f->body.n && draws(f, f->body.stmts[skip], state)) skip++;
        ir_block rest = {f->body.stmts + skip, f->body.n - skip, 0};
        at = state >= 0 ? first_in_block(f, &rest, draws, state) : NULL;
        what = "random numbers from the hidden stream (np.random, random.*: draw from "
               "rng = tack.rng(seed, i) instead, which the backward pass replays)";
    } else
        return 0;
    fail(A, at ? at->src : 0, at ? at->line : f->first_line, at ? at->col : 0,
         "backward of kernels using %s is not supported yet", what);
    return -1;
}

tack_status pass_adjoint(ir_func *f, int nforward, tack_error *err) {
    adj A = {.f = f, .err = err, .n = nforward, .n0 = f->nlocals};
    int n0 = f->nlocals;
    A.ver = malloc((n0 ? n0 : 1) * sizeof *A.ver);
    A.cap = n0 * 4 + 16;
    A.adjl = malloc(A.cap * sizeof *A.adjl);
    reclist record = {0};
    ir_block fwd = {0}, rev = {0}, body = {0};
    if (!A.ver || !A.adjl) goto nomem;
    for (int l = 0; l < n0; l++) A.ver[l] = l;
    for (int l = 0; l < A.cap; l++) A.adjl[l] = -1;
    if (refuse_constructs(&A)) goto out;
    for (int r = 0; r < f->nreductions; r++)
        if (f->reductions[r].op != ATOM_ADD && f->reductions[r].op != ATOM_SUB &&
            f->reductions[r].op != ATOM_MIN && f->reductions[r].op != ATOM_MAX) {
            const ir_stmt *at = update_of(&f->body, f->reductions[r].param);
            fail(&A, at ? at->src : 0, at ? at->line : f->first_line, at ? at->col : 0,
                 "backward of a %s reduction is not supported yet (sums, min and max are differentiated)",
                 f->reductions[r].op == ATOM_MUL ? "product" : "bitwise");
            goto out;
        }
    if (check_overwrite(&A, &f->body)) goto out;
    int gathered = pass_adjoint_gather(f, nforward);
    if (gathered < 0) goto nomem;
    if (gathered) { /* new locals: the per-local tables grow */
        n0 = A.n0 = f->nlocals;
        int *ver = realloc(A.ver, (n0 ? n0 : 1) * sizeof *ver);
        if (!ver) goto nomem;
        A.ver = ver;
        for (int l = 0; l < n0; l++) A.ver[l] = l;
        int *adjl = realloc(A.adjl, (n0 * 4 + 16) * sizeof *adjl);
        if (!adjl) goto nomem;
        A.adjl = adjl;
        A.cap = n0 * 4 + 16;
        for (int l = 0; l < A.cap; l++) A.adjl[l] = -1;
    }
    if (find_owned(&A)) goto nomem;
    if (adjoint_arrays(&A, &body) || find_snapshots(&A)) goto out;
    if (rec_block(&A, &record, f->body.stmts, f->body.n, -1) || A.failed) goto out;
    if (emit_fwd(&A, &record, &fwd, 1) || emit_rev(&A, &record, &rev)) goto out;
    /* every adjoint starts at 0 */
    for (int l = n0; l < f->nlocals; l++)
        if (A.adjl[l] >= 0 && push(&A, &body, assign(&A, A.adjl[l], cf(&A, 0, f->locals[l].type))))
            goto out;
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
    free(A.owned);
    free(A.alias);
    free(A.sadj);
    free(A.snaps);
    return A.failed ? (err->status ? err->status : TACK_ERR_COMPILE) : TACK_OK;
}

void pass_adjoint_params(ir_func *f, int n) {
    f->adjoint_n = n;
    if (2 * n < f->nparams && f->params[2 * n].name && !strcmp(f->params[2 * n].name, "return.grad")) {
        ir_param *g = &f->params[2 * n]; /* the returned numbers' gradients, read */
        g->role = ROLE_ARRAY;
        g->index_ndim = 1;
    }
    for (int p = 0; p < n && n + p < f->nparams; p++) {
        if (f->params[p].role != ROLE_ARRAY) continue;
        ir_param *g = &f->params[n + p];
        g->role = ROLE_ARRAY;
        g->index_ndim = f->params[p].index_ndim;
        g->vec_width = f->params[p].vec_width;
        g->written = 1;
    }
}
