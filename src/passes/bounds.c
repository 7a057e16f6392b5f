/* bounds.c - debug mode's bounds checks (see passes.h).
 *
 * Every load, store and atomic becomes
 *     t_k = index_k                      (each index evaluated once)
 *     if 0 <= t_k < extent_k for all k:  the access at t...
 *     else:                              IR_BOUNDS_FAIL(site, t...)
 * with extents read from the hidden extents array, so a debug kernel bakes
 * in no array length.  The access keeps one index per dimension: turning
 * them into an address is resolve_dims' work, which knows whether the
 * array is strided (and in debug mode reads the extents too).  A failed
 * load gives 0; a failed store is skipped. */
#include <stdio.h>

#include "passes.h"

typedef struct checker {
    ir_func *f;
    int failed;
    int temps;
} checker;

static ir_expr *node(checker *c, ir_expr_kind kind, const ir_expr *at_e, int line, int col) {
    ir_expr *e = ir_expr_new(c->f, kind, at_e ? at_e->line : line, at_e ? at_e->col : col);
    if (!e) c->failed = 1;
    else if (at_e) e->src = at_e->src;
    return e;
}

static int temp(checker *c) {
    char name[32];
    snprintf(name, sizeof name, "$chk%d", c->temps++);
    int l = ir_local_add(c->f, name);
    if (l < 0) c->failed = 1;
    return l;
}

static ir_expr *read(checker *c, int local, int line, int col) {
    ir_expr *e = node(c, IR_LOCAL, NULL, line, col);
    if (e) e->index = local;
    return e;
}

static ir_expr *lit(checker *c, int64_t v, int line, int col) {
    ir_expr *e = ir_const_int(c->f, v, TACK_I64, line, col);
    if (!e) c->failed = 1;
    return e;
}

static ir_expr *bin(checker *c, ir_op op, ir_expr *a, ir_expr *b) {
    ir_expr *e = a && b ? node(c, IR_BINOP, a, 0, 0) : NULL;
    if (e) {
        e->op = op;
        e->a = a;
        e->b = b;
    }
    return e;
}

/* extents[p * TACK_MAX_NDIM + d] */
static ir_expr *extent(checker *c, int p, int d, int line, int col) {
    ir_expr *e = node(c, IR_LOAD, NULL, line, col);
    ir_expr **idx = e ? arena_alloc(&c->f->mem, sizeof *idx) : NULL;
    if (!idx) {
        c->failed = 1;
        return NULL;
    }
    idx[0] = lit(c, (int64_t)p * TACK_MAX_NDIM + d, line, col);
    e->index = c->f->debug_extents;
    e->args = idx;
    e->nargs = 1;
    return e;
}

static ir_stmt *new_stmt(checker *c, ir_stmt_kind kind, int line, int col, int src) {
    ir_stmt *s = ir_stmt_new(c->f, kind, line, col);
    if (!s) c->failed = 1;
    else s->src = src;
    return s;
}

static void push(checker *c, ir_block *b, ir_stmt *s) {
    if (!s || ir_block_push(c->f, b, s)) c->failed = 1;
}

static int assign(checker *c, ir_block *b, ir_expr *value, int line, int col, int src) {
    int l = temp(c);
    ir_stmt *s = new_stmt(c, IR_ASSIGN, line, col, src);
    if (l < 0 || !s) return -1;
    s->index = l;
    s->value = value;
    push(c, b, s);
    return l;
}

static int add_site(checker *c, int p, int src, int line, int col) {
    ir_site *s = arena_grow(&c->f->mem, c->f->sites, c->f->nsites, c->f->nsites + 1, sizeof *s);
    if (!s) {
        c->failed = 1;
        return -1;
    }
    c->f->sites = s;
    c->f->sites[c->f->nsites] = (ir_site){src, line, col, p};
    return c->f->nsites++;
}

/* The guarded form of an access to param p at indices idx[n]: the access
 * itself reads each index from the local it was evaluated into. */
typedef struct access {
    const ir_expr *e;  /* the original load or atomic, or */
    const ir_stmt *s;  /* the original store */
} access;

/* Extent k of the access's array: a parameter's from the extents array,
 * a scratch array's (p < 0: scratch -1 - p) its literal. */
static ir_expr *extent_of(checker *c, int p, int k, int line, int col) {
    if (p >= 0) return extent(c, p, k, line, col);
    return lit(c, c->f->scratch[-1 - p].dims[k], line, col);
}

static ir_expr *guard(checker *c, int p, ir_expr **idx, int n, access a, int src, int line, int col) {
    ir_expr *x = node(c, IR_INLINE, NULL, line, col);
    ir_block *body = arena_alloc(&c->f->mem, sizeof *body);
    if (!x || !body) {
        c->failed = 1;
        return NULL;
    }
    x->src = src;
    x->body = body;
    x->index = -1;
    x->inline_id = c->f->ninlines++;
    /* A store's value is evaluated before its target, as in Python. */
    int value = -1;
    if (a.s && (value = assign(c, body, a.s->value, line, col, src)) < 0) return NULL;
    int t[TACK_MAX_NDIM + 1];
    for (int k = 0; k < n; k++)
        if ((t[k] = assign(c, body, idx[k], line, col, src)) < 0) return NULL;
    ir_expr *ok = NULL;
    for (int k = 0; k < n; k++) {
        ir_expr *in = node(c, IR_ANDOR, NULL, line, col);
        if (!in) return NULL;
        in->op = OP_AND;
        in->a = bin(c, OP_GE, read(c, t[k], line, col), lit(c, 0, line, col));
        in->b = bin(c, OP_LT, read(c, t[k], line, col), extent_of(c, p, k, line, col));
        if (!ok) ok = in;
        else {
            ir_expr *both = node(c, IR_ANDOR, NULL, line, col);
            if (!both) return NULL;
            both->op = OP_AND;
            both->a = ok;
            both->b = in;
            ok = both;
        }
    }
    ir_stmt *branch = new_stmt(c, IR_IF, line, col, src);
    ir_expr **at = arena_alloc(&c->f->mem, (n ? n : 1) * sizeof *at);
    if (!branch || !ok || !at) {
        c->failed = 1;
        return NULL;
    }
    branch->value = ok;
    for (int k = 0; k < n; k++)
        if (!(at[k] = read(c, t[k], line, col))) return NULL;
    if (a.s) {
        ir_stmt *st = new_stmt(c, p >= 0 ? IR_STORE : IR_SSTORE, line, col, src);
        if (!st) return NULL;
        st->index = p >= 0 ? p : -1 - p;
        st->indices = at;
        st->nindices = n;
        st->value = read(c, value, line, col);
        push(c, &branch->body, st);
    } else {
        /* The load or atomic, at the checked indices, assigned to the result. */
        ir_expr *acc = node(c, a.e->kind, a.e, 0, 0);
        if (!acc) return NULL;
        *acc = *a.e;
        acc->args = at;
        acc->nargs = n;
        int r = temp(c);
        ir_stmt *set = new_stmt(c, IR_ASSIGN, line, col, src);
        if (r < 0 || !set) return NULL;
        set->index = r;
        set->value = acc;
        push(c, &branch->body, set);
        /* A failed load (or atomic) gives 0, not a value left from an
         * earlier iteration. */
        ir_stmt *zero = new_stmt(c, IR_ASSIGN, line, col, src);
        /* 0 of the array's type (a weak 0 takes a scratch array's) */
        ir_expr *z = p >= 0 ? node(c, IR_CAST, NULL, line, col)
                            : ir_const_int(c->f, 0, IRT_WEAK_INT, line, col);
        if (!zero || !z) {
            c->failed = 1;
            return NULL;
        }
        if (p >= 0) {
            z->type = IRT_LIKE_PARAM;
            z->index = p;
            z->a = lit(c, 0, line, col);
        }
        zero->index = r;
        zero->value = z;
        push(c, &branch->orelse, zero);
        x->index = r;
    }
    ir_stmt *fail = new_stmt(c, IR_BOUNDS_FAIL, line, col, src);
    ir_expr **vals = arena_alloc(&c->f->mem, (n ? n : 1) * sizeof *vals);
    if (!fail || !vals) {
        c->failed = 1;
        return NULL;
    }
    for (int k = 0; k < n; k++) vals[k] = read(c, t[k], line, col);
    fail->index = add_site(c, p, src, line, col);
    fail->indices = vals;
    fail->nindices = n;
    push(c, &branch->orelse, fail);
    push(c, body, branch);
    return x;
}

static void check_block(checker *c, ir_block *b);

static ir_expr *check_expr(checker *c, ir_expr *e) {
    if (!e || c->failed) return e;
    e->a = check_expr(c, e->a);
    e->b = check_expr(c, e->b);
    e->cond = check_expr(c, e->cond);
    for (int i = 0; i < e->nargs; i++) e->args[i] = check_expr(c, e->args[i]);
    if (e->body) check_block(c, e->body);
    switch (e->kind) {
    case IR_DIM: {
        ir_expr *x = extent(c, e->index, e->dim, e->line, e->col);
        if (x) x->src = e->src;
        return x;
    }
    case IR_LOAD:
    case IR_ATOMIC:
        if (e->index == c->f->debug_extents) return e; /* our own reads */
        return guard(c, e->index, e->args, e->nargs, (access){e, NULL}, e->src, e->line,
                     e->col);
    case IR_SLOAD:
        /* One index is the zeroing loop's own offset, always inside. */
        if (e->nargs != c->f->scratch[e->index].ndim) return e;
        return guard(c, -1 - e->index, e->args, e->nargs, (access){e, NULL}, e->src, e->line,
                     e->col);
    default:
        return e;
    }
}

static void check_block(checker *c, ir_block *b) {
    for (int i = 0; i < b->n && !c->failed; i++) {
        ir_stmt *s = b->stmts[i];
        s->value = check_expr(c, s->value);
        s->start = check_expr(c, s->start);
        s->stop = check_expr(c, s->stop);
        s->step = check_expr(c, s->step);
        for (int k = 0; k < s->nindices; k++) s->indices[k] = check_expr(c, s->indices[k]);
        check_block(c, &s->body);
        check_block(c, &s->orelse);
        int scratch = s->kind == IR_SSTORE && s->nindices == c->f->scratch[s->index].ndim;
        if (s->kind == IR_STORE || scratch) {
            ir_stmt *eval = new_stmt(c, IR_EVAL, s->line, s->col, s->src);
            if (!eval) return;
            eval->value = guard(c, scratch ? -1 - s->index : s->index, s->indices, s->nindices,
                                (access){NULL, s}, s->src, s->line, s->col);
            b->stmts[i] = eval;
        }
    }
}

static int hidden_array(checker *c, const char *name) {
    int i = ir_param_add(c->f);
    if (i < 0) return -1;
    ir_param *p = &c->f->params[i];
    p->name = name;
    p->role = ROLE_ARRAY;
    p->index_ndim = 1;
    return i;
}

tack_status pass_bounds_checks(ir_func *f, tack_error *err) {
    checker c = {f, 0, 0};
    if (f->nparams > TACK_MAX_PARAMS - 2) {
        err->status = TACK_ERR_COMPILE;
        snprintf(err->message, sizeof err->message,
                 "kernel '%s': too many parameters for debug mode's two hidden arrays", f->name);
        return TACK_ERR_COMPILE;
    }
    f->debug_errors = hidden_array(&c, "__errors__");
    f->debug_extents = hidden_array(&c, "__extents__");
    if (f->debug_errors < 0 || f->debug_extents < 0) {
        err->status = TACK_ERR_NOMEM;
        snprintf(err->message, sizeof err->message, "out of memory adding bounds checks to '%s'",
                 f->name);
        return TACK_ERR_NOMEM;
    }
    f->params[f->debug_errors].written = 1;
    f->start = check_expr(&c, f->start);
    f->stop = check_expr(&c, f->stop);
    f->step = check_expr(&c, f->step);
    for (int d = 0; d < f->ninner; d++) f->inner_stop[d] = check_expr(&c, f->inner_stop[d]);
    check_block(&c, &f->body);
    if (c.failed) {
        err->status = TACK_ERR_NOMEM;
        snprintf(err->message, sizeof err->message, "out of memory adding bounds checks to '%s'",
                 f->name);
        return TACK_ERR_NOMEM;
    }
    return ir_verify(f, "bounds_checks", 0, err);
}
