/*
 * adjoint_gather.c - the gather form of a stencil's adjoint (before
 * pass_adjoint builds the sweeps).
 *
 * The plain adjoint of `y[i] = a x[i - 1] + b x[i] + c x[i + 1]` scatters:
 * iteration i adds into x.grad[i - 1], x.grad[i] and x.grad[i + 1], which
 * other iterations share (atomics) and which the next iteration reads
 * again (no vectorization).  Its transpose is a gather: element j of
 * x.grad takes a y.grad[j + 1] + b y.grad[j] + c y.grad[j - 1], each
 * element written by one iteration only.
 *
 * This pass makes the gather form by rewriting the loop body before the
 * adjoint is taken.  A float array x qualifies when every read of it is
 * x[i + a] or x[i + a, ...] (i the launch variable, a a constant; further
 * indices anything, row-major).  Its reads are grouped by key (the offset
 * a and the further indices, compared as expressions), and the body
 * becomes one copy of the old body per key, for row j: the body of
 * iteration i = j - a (locals renamed per copy), where the key's own
 * reads index row j (x[j, ...], the same element) and every other read of
 * a float value is wrapped in tack.stop_gradient.  So copy k adds only
 * read k's share into x.grad[j, ...]: row j belongs to one launch
 * iteration, and pass_adjoint adds there without atomics (the read's dim
 * flag).  One copy (the one at offset 0 where there is one) keeps every
 * other gradient (other arrays, float scalars), so each is still added
 * once per original iteration.  LLVM drops what a copy does not need.
 *
 * The launch keeps to its own range (its launch checks then hold): it
 * runs over the rows where every copy's iteration is in the range,
 * start + max a .. stop + min a - 1, unguarded; its first iteration adds
 * the rows at both ends, each copy under `if start <= j - a < stop`, and
 * a range too short for any such row takes one iteration for every row.
 * A body without loops is blocked, GATHER_BLOCK rows per iteration in a
 * loop of its own, which the CPU vectorizes.  The body compares with the
 * launch's end: f->stop_in_body (resolve.c; shape.c keys its dims).
 *
 * Anything else keeps the scatter form: workgroups, ndindex, reductions,
 * atomics, local arrays, device functions, while loops, a step other than
 * 1, a debug build's checks, offsets past 8, or more than
 * GATHER_MAX_COPIES keys or GATHER_MAX_EDGE end rows times keys.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ir.h"
#include "passes/passes.h"

#define GATHER_MAX_COPIES 16
/* end rows times copies: past it, the scatter form (their guarded work,
 * done by one iteration, grows with it) */
#define GATHER_MAX_EDGE 64
/* rows per launch iteration of a blocked body (pass_adjoint_gather) */
#define GATHER_BLOCK 64

typedef struct gkey {
    int param;
    int64_t a;             /* launch offset */
    const ir_expr *load;   /* a read with this key: its further indices */
} gkey;

typedef struct gather {
    ir_func *f;
    int n;                 /* forward parameters */
    char *candidate;       /* per parameter: its reads are all x[i + a, ...] */
    gkey keys[GATHER_MAX_COPIES];
    int nkeys;
    int too_many;
    int unsupported;
    /* while cloning copy `copy` */
    int copy, primary;
    int row;               /* the local holding j */
    const ir_expr *start, *stop; /* the launch's range (stop with its dims) */
    int *map;              /* per local of the original body: its copy's */
    int nmap;
    int nomem;
} gather;

static int is_float(ir_type t) { return t == TACK_F32 || t == TACK_F64; }

static const ir_expr *uncast(const ir_expr *e) {
    while (e && e->kind == IR_CAST && ir_type_is_int(e->type)) e = e->a;
    return e;
}

static int const_int(const ir_expr *e, int64_t *v) {
    e = uncast(e);
    if (!e || e->kind != IR_CONST || !ir_type_is_int(e->type)) return 0;
    *v = e->i;
    return 1;
}

/* Whether e is the launch variable plus a constant (*a). */
static int launch_offset(const ir_func *f, const ir_expr *e, int64_t *a) {
    e = uncast(e);
    if (!e) return 0;
    if (e->kind == IR_LOCAL && e->index == f->loop_var) {
        *a = 0;
        return 1;
    }
    if (e->kind != IR_BINOP || (e->op != OP_ADD && e->op != OP_SUB)) return 0;
    const ir_expr *l = uncast(e->a), *r = uncast(e->b);
    int64_t c;
    if (l && l->kind == IR_LOCAL && l->index == f->loop_var && const_int(r, &c)) {
        *a = e->op == OP_ADD ? c : -c;
        return 1;
    }
    if (e->op == OP_ADD && r && r->kind == IR_LOCAL && r->index == f->loop_var && const_int(l, &c)) {
        *a = c;
        return 1;
    }
    return 0;
}

/* Where i + a sits in an array read's flat index: the index itself, or
 * the innermost row of a row-major ((i + a) * d1 + i1) * d2 + i2
 * (resolve.c); NULL when it is neither. */
static ir_expr **row_leaf(const ir_func *f, ir_expr **slot, int64_t *a) {
    for (;;) {
        ir_expr *e = *slot;
        if (!e) return NULL;
        if (launch_offset(f, e, a)) return slot;
        if (e->kind == IR_CAST && ir_type_is_int(e->type)) {
            slot = &e->a;
            continue;
        }
        if (e->kind != IR_BINOP || e->op != OP_ADD) return NULL;
        ir_expr *m = (ir_expr *)uncast(e->a);
        int64_t d;
        if (!m || m->kind != IR_BINOP || m->op != OP_MUL || !const_int(m->b, &d) || d <= 0) return NULL;
        slot = &m->a;
    }
}

/* row_leaf's slot in a copy of the index (whose i is renamed): the walk
 * follows the original's. */
static ir_expr **copy_leaf(const ir_func *f, ir_expr **orig, ir_expr **copy) {
    int64_t a;
    for (;;) {
        ir_expr *e = *orig, *c = *copy;
        if (launch_offset(f, e, &a)) return copy;
        if (e->kind == IR_CAST) {
            orig = &e->a;
            copy = &c->a;
            continue;
        }
        ir_expr *m = e->a, *mc = c->a;
        while (m->kind == IR_CAST) {
            m = m->a;
            mc = mc->a;
        }
        orig = &m->a;
        copy = &mc->a;
    }
}

static int same_expr(const ir_expr *a, const ir_expr *b) {
    if (a == b) return 1;
    if (!a || !b || a->kind != b->kind || a->type != b->type || a->op != b->op ||
        a->index != b->index || a->fn != b->fn || a->i != b->i || a->f != b->f ||
        a->nargs != b->nargs || a->dim != b->dim)
        return 0;
    if (a->body || b->body) return 0;
    for (int k = 0; k < a->nargs; k++)
        if (!same_expr(a->args[k], b->args[k])) return 0;
    return same_expr(a->a, b->a) && same_expr(a->b, b->b) && same_expr(a->cond, b->cond);
}

static int stop_gradient(const ir_expr *e) { return e->kind == IR_CALL && e->fn == INTR_STOP_GRADIENT; }

/* Two flat indices alike but for their rows' offsets (row_leaf). */
static int same_but_row(const ir_func *f, const ir_expr *x, const ir_expr *y) {
    int64_t a, b;
    if (launch_offset(f, x, &a) && launch_offset(f, y, &b)) return 1;
    if (!x || !y || x->kind != y->kind || x->type != y->type || x->op != y->op) return 0;
    if (x->kind == IR_CAST) return same_but_row(f, x->a, y->a);
    return x->kind == IR_BINOP && same_but_row(f, x->a, y->a) && same_expr(x->b, y->b);
}

/* Which copy a read of a candidate belongs to, or -1. */
static int key_of(const gather *G, const ir_expr *e) {
    int64_t a;
    if (e->nargs != 1 || !row_leaf(G->f, &e->args[0], &a)) return -1;
    for (int k = 0; k < G->nkeys; k++) {
        const gkey *K = &G->keys[k];
        if (K->param == e->index && K->a == a && same_but_row(G->f, K->load->args[0], e->args[0]))
            return k;
    }
    return -1;
}

/* ---- what qualifies ---- */

static void scan_block(gather *G, const ir_block *b, int pass);

/* pass 0: candidates lose reads of another shape; pass 1: the keys. */
static void scan_expr(gather *G, const ir_expr *e, int pass) {
    if (!e) return;
    if (stop_gradient(e)) return; /* no gradient flows there */
    switch (e->kind) {
    case IR_INLINE: case IR_ATOMIC: case IR_SLOAD: case IR_VECTOR:
        G->unsupported = 1;
        return;
    default: break;
    }
    if (e->kind == IR_LOAD && e->index < G->n && G->candidate[e->index]) {
        int64_t a;
        if (pass == 0 && (e->nargs != 1 || !row_leaf(G->f, &e->args[0], &a))) G->candidate[e->index] = 0;
        if (pass == 1 && key_of(G, e) < 0) {
            if (G->nkeys == GATHER_MAX_COPIES) G->too_many = 1;
            else {
                row_leaf(G->f, &e->args[0], &a);
                G->keys[G->nkeys++] = (gkey){e->index, a, e};
            }
        }
    }
    scan_expr(G, e->a, pass);
    scan_expr(G, e->b, pass);
    scan_expr(G, e->cond, pass);
    for (int k = 0; k < e->nargs; k++) scan_expr(G, e->args[k], pass);
}

static void scan_block(gather *G, const ir_block *b, int pass) {
    for (int i = 0; i < b->n; i++) {
        const ir_stmt *s = b->stmts[i];
        switch (s->kind) {
        case IR_ASSIGN: case IR_STORE: case IR_IF: case IR_FOR: break;
        default: G->unsupported = 1; return;
        }
        if (s->kind == IR_ASSIGN && s->index == G->f->loop_var) G->unsupported = 1;
        scan_expr(G, s->value, pass);
        scan_expr(G, s->start, pass);
        scan_expr(G, s->stop, pass);
        scan_expr(G, s->step, pass);
        for (int k = 0; k < s->nindices; k++) scan_expr(G, s->indices[k], pass);
        scan_block(G, &s->body, pass);
        scan_block(G, &s->orelse, pass);
    }
}

/* ---- the copies ---- */

static ir_expr *node(gather *G, ir_expr_kind k, ir_type t) {
    ir_expr *e = ir_expr_new(G->f, k, 0, 0);
    if (!e) G->nomem = 1;
    else e->type = t;
    return e;
}

static ir_expr *local(gather *G, int l) {
    ir_expr *e = node(G, IR_LOCAL, G->f->locals[l].type);
    if (e) e->index = l;
    return e;
}

static ir_expr *binop(gather *G, ir_op op, ir_expr *a, ir_expr *b, ir_type t) {
    ir_expr *e = a && b ? node(G, IR_BINOP, t) : NULL;
    if (!e) {
        G->nomem = 1;
        return NULL;
    }
    e->op = op;
    e->a = a;
    e->b = b;
    return e;
}

static ir_expr *wrap_stop_gradient(gather *G, ir_expr *v) {
    ir_expr *e = v ? node(G, IR_CALL, v->type) : NULL;
    ir_expr **args = e ? arena_alloc(&G->f->mem, sizeof *args) : NULL;
    if (!args) {
        G->nomem = 1;
        return NULL;
    }
    e->fn = INTR_STOP_GRADIENT;
    e->nargs = 1;
    e->args = args;
    args[0] = v;
    e->line = v->line;
    e->col = v->col;
    e->src = v->src;
    return e;
}

static ir_expr *copy_expr(gather *G, const ir_expr *e);

static ir_expr **copy_args(gather *G, ir_expr *const *v, int n) {
    if (!n) return NULL;
    ir_expr **out = arena_alloc(&G->f->mem, n * sizeof *out);
    if (!out) {
        G->nomem = 1;
        return NULL;
    }
    for (int k = 0; k < n; k++) out[k] = copy_expr(G, v[k]);
    return out;
}

/* e in copy G->copy: locals renamed, reads routed (see the top). */
static ir_expr *copy_expr(gather *G, const ir_expr *e) {
    if (!e) return NULL;
    ir_expr *c = arena_alloc(&G->f->mem, sizeof *c);
    if (!c) {
        G->nomem = 1;
        return NULL;
    }
    *c = *e;
    if (e->kind == IR_LOCAL && e->index < G->nmap) c->index = G->map[e->index];
    c->a = copy_expr(G, e->a);
    c->b = copy_expr(G, e->b);
    c->cond = copy_expr(G, e->cond);
    c->args = copy_args(G, e->args, e->nargs);
    if (stop_gradient(e) || !is_float(e->type)) return c;
    if (e->kind == IR_LOAD && e->index < G->n && G->candidate[e->index]) {
        if (key_of(G, e) != G->copy) return wrap_stop_gradient(G, c);
        /* the key's own read: row j itself (equal to i + a here) */
        ir_expr **leaf = copy_leaf(G->f, &e->args[0], &c->args[0]);
        if (!leaf || !(*leaf = ir_cast(G->f, local(G, G->row), (*leaf)->type))) G->nomem = 1;
        c->dim = 1; /* row j is this iteration's alone: plain adds */
        return c;
    }
    if ((e->kind == IR_LOAD || e->kind == IR_PARAM) && G->copy != G->primary)
        return wrap_stop_gradient(G, c);
    return c;
}

static int copy_block(gather *G, ir_block *out, const ir_block *b);

static ir_stmt *copy_stmt(gather *G, const ir_stmt *s) {
    ir_stmt *c = ir_stmt_new(G->f, s->kind, s->line, s->col);
    if (!c) {
        G->nomem = 1;
        return NULL;
    }
    *c = *s;
    if ((s->kind == IR_ASSIGN || s->kind == IR_FOR) && s->index < G->nmap) c->index = G->map[s->index];
    c->value = copy_expr(G, s->value);
    c->start = copy_expr(G, s->start);
    c->stop = copy_expr(G, s->stop);
    c->step = copy_expr(G, s->step);
    c->indices = copy_args(G, s->indices, s->nindices);
    c->body = (ir_block){0};
    c->orelse = (ir_block){0};
    if (copy_block(G, &c->body, &s->body) || copy_block(G, &c->orelse, &s->orelse)) return NULL;
    return c;
}

static int copy_block(gather *G, ir_block *out, const ir_block *b) {
    for (int i = 0; i < b->n; i++) {
        ir_stmt *c = copy_stmt(G, b->stmts[i]);
        if (!c || ir_block_push(G->f, out, c)) {
            G->nomem = 1;
            return -1;
        }
    }
    return 0;
}

/* A fresh local like l, for copy k (locals are found by name). */
static int fresh_local(gather *G, int l, int k) {
    char name[160];
    snprintf(name, sizeof name, "%s.g%d.%d", G->f->locals[l].name ? G->f->locals[l].name : "t", k,
             G->f->nlocals);
    ir_type t = G->f->locals[l].type;
    int c = ir_local_add(G->f, name);
    if (c >= 0) G->f->locals[c].type = t;
    return c;
}

/* `if lo <= x:` `if x < hi:` around body (a nested if: two conditions
 * the backends all read alike). */
static ir_stmt *within(gather *G, ir_expr *x, ir_expr *lo, ir_expr *x2, ir_expr *hi, ir_block body) {
    ir_func *f = G->f;
    ir_stmt *outer = ir_stmt_new(f, IR_IF, 0, 0), *inner = ir_stmt_new(f, IR_IF, 0, 0);
    if (!outer || !inner || !(outer->value = binop(G, OP_GE, x, lo, TACK_BOOL)) ||
        !(inner->value = binop(G, OP_LT, x2, hi, TACK_BOOL)) || ir_block_push(f, &outer->body, inner)) {
        G->nomem = 1;
        return NULL;
    }
    inner->body = body;
    return outer;
}

/* launch-typed helpers */
static ir_expr *lconst(gather *G, int64_t v) {
    ir_expr *e = ir_const_int(G->f, v, G->f->locals[G->f->loop_var].type, 0, 0);
    if (!e) G->nomem = 1;
    return e;
}
static ir_expr *lplus(gather *G, const ir_expr *x, int64_t v) {
    ir_type lt = G->f->locals[G->f->loop_var].type;
    ir_expr *c = ir_cast(G->f, ir_clone_expr(G->f, x), lt);
    return v ? binop(G, OP_ADD, c, lconst(G, v), lt) : c;
}
static ir_expr *rowminus(gather *G, int row, int64_t a) {
    ir_type lt = G->f->locals[G->f->loop_var].type;
    return a ? binop(G, OP_SUB, local(G, row), lconst(G, a), lt) : local(G, row);
}

/* Copy k's body for row j (local `row`): `i = j - a`, then the body of
 * iteration i; guarded by `start <= j - a < stop` unless the caller knows
 * it holds. */
static int copy_for_row(gather *G, ir_block *out, int k, int row, int guarded) {
    ir_func *f = G->f;
    int lv = f->loop_var;
    int64_t a = G->keys[k].a;
    G->copy = k;
    G->row = row;
    for (int l = 0; l < G->nmap; l++) G->map[l] = l;
    ir_block top = {0};
    int i = fresh_local(G, lv, k);
    ir_stmt *s = ir_stmt_new(f, IR_ASSIGN, 0, 0);
    if (i < 0 || !s || ir_block_push(f, &top, s)) return -1;
    G->map[lv] = i;
    s->index = i;
    s->value = rowminus(G, row, a);
    for (int l = 0; l < G->nmap; l++)
        if (l != lv && ir_block_assigns(&f->body, l) && (G->map[l] = fresh_local(G, l, k)) < 0) return -1;
    if (!s->value || copy_block(G, &top, &f->body)) return -1;
    if (!guarded) {
        for (int t = 0; t < top.n; t++)
            if (ir_block_push(f, out, top.stmts[t])) return -1;
        return 0;
    }
    ir_stmt *w = within(G, rowminus(G, row, a), lplus(G, G->start, 0), rowminus(G, row, a),
                        lplus(G, G->stop, 0), top);
    return !w || G->nomem || ir_block_push(f, out, w) ? -1 : 0;
}

/* Every copy, for row `row`, into out. */
static int copies(gather *G, ir_block *out, int row, int guarded) {
    for (int k = 0; k < G->nkeys; k++)
        if (copy_for_row(G, out, k, row, guarded) || G->nomem) return -1;
    return 0;
}

static int has_loop(const ir_block *b) {
    for (int i = 0; i < b->n; i++)
        if (b->stmts[i]->kind == IR_FOR || b->stmts[i]->kind == IR_WHILE || has_loop(&b->stmts[i]->body) ||
            has_loop(&b->stmts[i]->orelse))
            return 1;
    return 0;
}

/* `for e in range(from, to):` the guarded copies for row e.  A loop:
 * written out, the rows' code would be merged with the launch's own rows
 * (shared tails) and keep the CPU from vectorizing them. */
static ir_stmt *rows_loop(gather *G, ir_expr *from, ir_expr *to) {
    ir_func *f = G->f;
    int e = fresh_local(G, f->loop_var, G->nkeys);
    ir_stmt *loop = ir_stmt_new(f, IR_FOR, 0, 0);
    if (e < 0 || !loop || !from || !to) return NULL;
    loop->index = e;
    loop->start = from;
    loop->stop = to;
    loop->step = lconst(G, 1);
    return loop->step && !copies(G, &loop->body, e, 1) ? loop : NULL;
}

/* `if j == at: rows_loop(from, to)` */
static ir_stmt *edge_rows(gather *G, ir_expr *at, ir_expr *from, ir_expr *to) {
    ir_func *f = G->f;
    ir_stmt *when = ir_stmt_new(f, IR_IF, 0, 0), *loop = rows_loop(G, from, to);
    if (!when || !loop || !at || !(when->value = binop(G, OP_EQ, local(G, f->loop_var), at, TACK_BOOL)) ||
        ir_block_push(f, &when->body, loop))
        return NULL;
    return when;
}

static ir_expr *choose(gather *G, ir_expr *cond, ir_expr *a, ir_expr *b) {
    ir_expr *e = cond && a && b ? node(G, IR_SELECT, a->type) : NULL;
    if (!e) {
        G->nomem = 1;
        return NULL;
    }
    e->cond = cond;
    e->a = a;
    e->b = b;
    return e;
}

int pass_adjoint_gather(ir_func *f, int n) {
    if (f->loop_var < 0 || f->ninner || f->collective || f->rng_seed >= 0 || f->nreductions ||
        f->nscratch || f->nsites || f->debug_errors >= 0 || !f->start || !f->stop ||
        !f->stop_in_body)
        return 0;
    int64_t step = 1;
    if (f->step && (!const_int(f->step, &step) || step != 1)) return 0;
    gather G = {.f = f, .n = n};
    if (!(G.candidate = calloc(n ? n : 1, 1))) return -1;
    int any = 0;
    for (int p = 0; p < n; p++)
        any |= G.candidate[p] = f->params[p].role == ROLE_ARRAY && is_float(f->params[p].type) &&
                                !f->params[p].vec_width && !f->params[p].written;
    if (!any) goto keep;
    scan_block(&G, &f->body, 0);
    if (G.unsupported) goto keep;
    scan_block(&G, &f->body, 1);
    if (G.too_many) goto keep;
    /* worth it only where some read is another iteration's element */
    int shifted = 0;
    int64_t lo = 0, hi = 0;
    G.primary = 0;
    for (int k = 0; k < G.nkeys; k++) {
        int64_t a = G.keys[k].a;
        if (a < -8 || a > 8) goto keep; /* far apart: not a stencil (edge rows are written out) */
        shifted |= a != 0;
        if (a < lo) lo = a;
        if (a > hi) hi = a;
        if (a == 0 && G.keys[G.primary].a != 0) G.primary = k;
    }
    if (!shifted) goto keep;
    if ((hi - lo) * G.nkeys > GATHER_MAX_EDGE) goto keep;
    G.nmap = f->nlocals;
    if (!(G.map = malloc((G.nmap ? G.nmap : 1) * sizeof *G.map))) goto nomem;
    G.start = f->start;
    G.stop = f->stop_in_body;
    /* With start + hi < stop + lo (some row where every copy's iteration
     * is in the range), the launch runs over those rows (a part of its
     * range: the launch checks of its reads still hold) with the copies
     * unguarded, which the CPU vectorizes; its first iteration adds the
     * rows start + lo .. start + hi - 1 and its last stop + lo ..
     * stop + hi - 1, guarded.  Otherwise (a short range) one iteration,
     * at start, adds every row start + lo .. stop + hi - 1, guarded. */
    ir_block body = {0};
    ir_stmt *wide = ir_stmt_new(f, IR_IF, 0, 0);
    if (!wide || !(wide->value = binop(&G, OP_GT, lplus(&G, G.stop, lo), lplus(&G, G.start, hi), TACK_BOOL)))
        goto nomem;
    /* A body without loops is blocked: iteration j takes GATHER_BLOCK rows
     * from start + hi + (j - start) * GATHER_BLOCK in a loop of its own,
     * which the CPU vectorizes (a launch loop with the edge rows' branches
     * in it is not); the first iteration adds both ends' edge rows.  A body
     * with loops (the 2-D stencil's) vectorizes those already. */
    int blocked = !has_loop(&f->body);
    ir_type lt = f->locals[f->loop_var].type;
    ir_stmt *first, *last;
    if (blocked) {
        ir_stmt *rows = ir_stmt_new(f, IR_FOR, 0, 0);
        int r = fresh_local(&G, f->loop_var, G.nkeys);
        if (!rows || r < 0 || ir_block_push(f, &wide->body, rows)) goto nomem;
        rows->index = r;
        ir_expr *from = binop(&G, OP_ADD, lplus(&G, G.start, hi),
                              binop(&G, OP_MUL, binop(&G, OP_SUB, local(&G, f->loop_var), lplus(&G, G.start, 0), lt),
                                    lconst(&G, GATHER_BLOCK), lt), lt);
        ir_expr *end = binop(&G, OP_ADD, ir_clone_expr(f, from), lconst(&G, GATHER_BLOCK), lt);
        rows->start = from;
        rows->stop = choose(&G, binop(&G, OP_LT, end, lplus(&G, G.stop, lo), TACK_BOOL),
                            end ? ir_clone_expr(f, end) : NULL, lplus(&G, G.stop, lo));
        rows->step = lconst(&G, 1);
        if (!rows->start || !rows->stop || !rows->step || copies(&G, &rows->body, r, 0)) goto nomem;
        first = edge_rows(&G, lplus(&G, G.start, 0), lplus(&G, G.start, lo), lplus(&G, G.start, hi));
        last = edge_rows(&G, lplus(&G, G.start, 0), lplus(&G, G.stop, lo), lplus(&G, G.stop, hi));
    } else {
        if (copies(&G, &wide->body, f->loop_var, 0)) goto nomem;
        first = edge_rows(&G, lplus(&G, G.start, hi), lplus(&G, G.start, lo), lplus(&G, G.start, hi));
        last = edge_rows(&G, lplus(&G, G.stop, lo - 1), lplus(&G, G.stop, lo), lplus(&G, G.stop, hi));
    }
    ir_stmt *all = rows_loop(&G, lplus(&G, G.start, lo), lplus(&G, G.stop, hi));
    if (!first || !last || !all || ir_block_push(f, &wide->body, first) ||
        ir_block_push(f, &wide->body, last) || ir_block_push(f, &wide->orelse, all) ||
        ir_block_push(f, &body, wide))
        goto nomem;
    /* the launch: start + hi .. stop + lo - 1 (blocked: start .. start +
     * its blocks), or start .. min(stop, start + 1) */
    {
        ir_expr *st = f->start, *sp = f->stop;
        ir_type lt0 = st->type, lt1 = sp->type;
        ir_expr *is_wide = binop(&G, OP_GT, binop(&G, OP_ADD, ir_clone_expr(f, sp), ir_const_int(f, lo, lt1, 0, 0), lt1),
                                 ir_cast(f, binop(&G, OP_ADD, ir_clone_expr(f, st), ir_const_int(f, hi, lt0, 0, 0), lt0), lt1),
                                 TACK_BOOL);
        ir_expr *one = ir_cast(f, binop(&G, OP_ADD, ir_clone_expr(f, st), ir_const_int(f, 1, lt0, 0, 0), lt0), lt1);
        ir_expr *is_wide2 = is_wide ? ir_clone_expr(f, is_wide) : NULL;
        f->start = choose(&G, is_wide, binop(&G, OP_ADD, ir_clone_expr(f, st), ir_const_int(f, hi, lt0, 0, 0), lt0),
                          ir_clone_expr(f, st));
        ir_expr *wide_stop = binop(&G, OP_ADD, ir_clone_expr(f, sp), ir_const_int(f, lo, lt1, 0, 0), lt1);
        if (blocked) {
            /* start + (rows + GATHER_BLOCK - 1) / GATHER_BLOCK, rows > 0 */
            ir_expr *nrows = binop(&G, OP_SUB, wide_stop, ir_cast(f, binop(&G, OP_ADD, ir_clone_expr(f, st),
                                                                       ir_const_int(f, hi, lt0, 0, 0), lt0), lt1), lt1);
            ir_expr *nblocks = binop(&G, OP_FLOORDIV,
                                     binop(&G, OP_ADD, nrows, ir_const_int(f, GATHER_BLOCK - 1, lt1, 0, 0), lt1),
                                     ir_const_int(f, GATHER_BLOCK, lt1, 0, 0), lt1);
            wide_stop = binop(&G, OP_ADD, ir_cast(f, ir_clone_expr(f, st), lt1), nblocks, lt1);
            f->start = ir_clone_expr(f, st);
        }
        f->stop = choose(&G, is_wide2, wide_stop,
                         choose(&G, binop(&G, OP_LT, ir_clone_expr(f, sp), one, TACK_BOOL), ir_clone_expr(f, sp),
                                one ? ir_clone_expr(f, one) : NULL));
        if (!f->start || !f->stop) goto nomem;
    }
    if (G.nomem) goto nomem;
    f->body = body;
    f->uses_stop_gradient = 1;
    free(G.map);
    free(G.candidate);
    return 1;
keep:
    free(G.candidate);
    return 0;
nomem:
    free(G.map);
    free(G.candidate);
    return -1;
}
