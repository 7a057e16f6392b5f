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
 * load gives 0; a failed store is skipped.
 *
 * Outside debug mode (pass_access_checks) the same guard checks only the
 * dimensions that neither the launch check nor the launch range covers
 * (launch_bounds.c), against the variant's own dimensions. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "passes.h"

typedef struct checker {
    ir_func *f;
    int failed;
    int temps;
    /* pass_access_checks: only the dimensions cov[] does not cover are
     * guarded, against IR_DIM extents (the variant's). */
    int selective, ncov;
    const launch_cover *cov;
    int unused; /* check_expr's node is an atomic statement's whole value */
    const ir_stmt *loops[64]; /* the for loops around the statement checked */
    /* pass_access_checks: statements to run just before loops[i], where
     * a guard puts what does not change inside that loop */
    ir_block *before[64];
    int nloops;
} checker;

static int int_literal(const ir_expr *e, int64_t *v) {
    if (e->kind != IR_CONST || ir_type_is_float(e->type)) return 0;
    *v = e->i;
    return 1;
}

/* Whether e has one value throughout every iteration of loop l: built
 * from constants, scalar parameters, dimensions and locals that neither
 * l nor its body assigns, with operators that cannot fault (the IR's
 * arithmetic is total: a division by zero has a value), so evaluating it
 * before l, even when l runs no iteration, changes nothing. */
static int invariant_in(const ir_expr *e, const ir_stmt *l) {
    if (!e) return 1;
    switch (e->kind) {
    case IR_CONST:
    case IR_PARAM:
    case IR_DIM: return 1;
    case IR_LOCAL: return e->index != l->index && !ir_block_assigns(&l->body, e->index);
    case IR_BINOP:
    case IR_UNOP:
    case IR_ANDOR:
    case IR_SELECT:
    case IR_CAST:
        return invariant_in(e->a, l) && invariant_in(e->b, l) && invariant_in(e->cond, l);
    default: return 0;
    }
}

/* Where a guard evaluates an index (or the test of all of them): before
 * the innermost loop around the access when it does not change there (a
 * stencil's row `u[(i - 1) % n, j]` in a `for j` loop: the modulo and
 * compare once per row, not per column; PoCL does not hoist them itself),
 * else in the guard's own body. */
static ir_block *index_block(const checker *c, ir_block *body, const ir_expr *e) {
    if (!c->selective || !c->nloops) return body;
    return invariant_in(e, c->loops[c->nloops - 1]) ? c->before[c->nloops - 1] : body;
}

/* Whether an index into a tack.local dimension of extent n cannot leave
 * it: a literal inside, or the variable of an enclosing
 * `for k in range(a, b, s)` with literals 0 <= a, b <= n, s > 0 that its
 * body does not assign (the table lookups of `for k in range(3): W[k]`). */
static int local_index_inside(const checker *c, const ir_expr *e, int64_t n) {
    int64_t v, a, b, s;
    if (int_literal(e, &v)) return v >= 0 && v < n;
    if (e->kind != IR_LOCAL) return 0;
    for (int i = c->nloops - 1; i >= 0; i--) {
        const ir_stmt *f = c->loops[i];
        if (f->index != e->index) continue;
        return int_literal(f->start, &a) && int_literal(f->stop, &b) && int_literal(f->step, &s) &&
               a >= 0 && b <= n && s > 0 && !ir_block_assigns(&f->body, e->index);
    }
    return 0;
}

/* The dimensions (bits) of an access to p (scratch array -1 - p) at
 * indices idx[n] that its guard checks. */
static unsigned dims_to_check(const checker *c, const void *node, int p, ir_expr *const *idx,
                              int n) {
    unsigned dims = n >= 32 ? ~0u : (1u << n) - 1;
    if (!c->selective) return dims;
    for (int k = 0; k < n && p < 0; k++)
        if (local_index_inside(c, idx[k], c->f->scratch[-1 - p].dims[k])) dims &= ~(1u << k);
    if (p >= 0 && p == c->f->debug_errors) return 0;
    /* A vector's component index is a literal below its width. */
    if (p >= 0 && c->f->params[p].vec_width) dims &= ~(1u << (n - 1));
    for (int i = 0; i < c->ncov && p >= 0; i++)
        if (c->cov[i].node == node) dims &= ~c->cov[i].dims;
    return dims;
}

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

/* array[slot]: an extent from debug mode's extents array, or from the
 * errors array of the per-access checks (their own dimensions would put
 * the extents in the variant key). */
static ir_expr *extent(checker *c, int array, int64_t slot, int line, int col) {
    ir_expr *e = node(c, IR_LOAD, NULL, line, col);
    ir_expr **idx = e ? arena_alloc(&c->f->mem, sizeof *idx) : NULL;
    if (!idx) {
        c->failed = 1;
        return NULL;
    }
    idx[0] = lit(c, slot, line, col);
    e->index = array;
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
    int unused;        /* e's value is thrown away (an atomic statement) */
} access;

/* Extent k of the access's array: a parameter's from the extents array,
 * a scratch array's (p < 0: scratch -1 - p) its literal. */
static ir_expr *extent_of(checker *c, int p, int k, int line, int col) {
    if (p >= 0) return extent(c, c->selective ? c->f->debug_errors : c->f->debug_extents,
                              (c->selective ? DEBUG_ERR_EXTENTS : 0) + p * TACK_MAX_NDIM + k, line,
                              col);
    return lit(c, c->f->scratch[-1 - p].dims[k], line, col);
}

static ir_expr *guard(checker *c, int p, ir_expr **idx, int n, unsigned dims, access a, int src,
                      int line, int col) {
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
    int checked_hoisted = 1; /* every checked index is evaluated before the loop */
    for (int k = 0; k < n; k++) {
        ir_block *in = index_block(c, body, idx[k]);
        if (in == body && (dims >> k & 1)) checked_hoisted = 0;
        if ((t[k] = assign(c, in, idx[k], line, col, src)) < 0) return NULL;
    }
    ir_expr *ok = NULL;
    for (int k = 0; k < n; k++) {
        if (!(dims >> k & 1)) continue;
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
        if (a.unused) {
            /* Still a statement of its own, as the CPU's private copies
             * of atomically updated arrays want (private_atomics.c). */
            ir_stmt *ev = new_stmt(c, IR_EVAL, line, col, src);
            if (!ev) return NULL;
            ev->value = acc;
            push(c, &branch->body, ev);
            goto fail;
        }
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
fail:
    if (c->selective) {
        /* The site's own flag counts its failures: flag += 0 if ok else
         * 1, before the branch.  No call or atomic inside the kernel's
         * loops, which then still vectorize: the flag is a sum, the most
         * plainly vectorized reduction even under an if, and the access
         * a masked one. */
        int site = add_site(c, p, src, line, col);
        char name[32];
        snprintf(name, sizeof name, "%s%d", IR_BOUNDS_FLAG, site);
        int flag = site < 0 ? -1 : ir_local_add(c->f, name);
        /* The test too, when it reads only hoisted indices and extents
         * (which the kernel never writes); the count stays in the loop,
         * so a loop that runs no iteration reports nothing. */
        ir_block *test_in = checked_hoisted && c->nloops ? c->before[c->nloops - 1] : body;
        int okl = assign(c, test_in, branch->value, line, col, src);
        ir_expr *pick = node(c, IR_SELECT, NULL, line, col);
        ir_stmt *set = new_stmt(c, IR_ASSIGN, line, col, src);
        if (flag < 0 || okl < 0 || !pick || !set) {
            c->failed = 1;
            return NULL;
        }
        pick->cond = read(c, okl, line, col);
        pick->a = lit(c, 0, line, col);
        pick->b = lit(c, 1, line, col);
        set->index = flag;
        set->value = bin(c, OP_ADD, read(c, flag, line, col), pick);
        if (!(branch->value = read(c, okl, line, col))) return NULL;
        push(c, body, set);
        push(c, body, branch);
        return x;
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

/* Puts the statements of `add` before statement i of b. */
static int insert_before(checker *c, ir_block *b, int i, const ir_block *add) {
    int n = b->n; /* room first: the block may move as it grows */
    for (int k = 0; k < add->n; k++) push(c, b, add->stmts[k]);
    if (c->failed) return -1;
    memmove(&b->stmts[i + add->n], &b->stmts[i], (size_t)(n - i) * sizeof *b->stmts);
    memcpy(&b->stmts[i], add->stmts, (size_t)add->n * sizeof *b->stmts);
    return 0;
}

static void check_block(checker *c, ir_block *b);

static ir_expr *check_expr(checker *c, ir_expr *e) {
    if (!e || c->failed) return e;
    int unused = c->unused;
    c->unused = 0;
    e->a = check_expr(c, e->a);
    e->b = check_expr(c, e->b);
    e->cond = check_expr(c, e->cond);
    for (int i = 0; i < e->nargs; i++) e->args[i] = check_expr(c, e->args[i]);
    if (e->body) check_block(c, e->body);
    unsigned dims;
    switch (e->kind) {
    case IR_DIM: {
        if (c->selective) return e;
        ir_expr *x = extent(c, c->f->debug_extents, (int64_t)e->index * TACK_MAX_NDIM + e->dim,
                            e->line, e->col);
        if (x) x->src = e->src;
        return x;
    }
    case IR_LOAD:
    case IR_ATOMIC:
        if (e->index == c->f->debug_extents) return e; /* our own reads */
        if (!(dims = dims_to_check(c, e, e->index, e->args, e->nargs))) return e;
        return guard(c, e->index, e->args, e->nargs, dims,
                     (access){e, NULL, unused && e->kind == IR_ATOMIC}, e->src, e->line, e->col);
    case IR_SLOAD:
        /* One index is the zeroing loop's own offset, always inside. */
        if (e->nargs != c->f->scratch[e->index].ndim) return e;
        if (!(dims = dims_to_check(c, e, -1 - e->index, e->args, e->nargs))) return e;
        return guard(c, -1 - e->index, e->args, e->nargs, dims, (access){e, NULL, c->unused}, e->src,
                     e->line, e->col);
    default:
        return e;
    }
}

static void check_block(checker *c, ir_block *b) {
    for (int i = 0; i < b->n && !c->failed; i++) {
        ir_stmt *s = b->stmts[i];
        c->unused = s->kind == IR_EVAL;
        s->value = check_expr(c, s->value);
        s->start = check_expr(c, s->start);
        s->stop = check_expr(c, s->stop);
        s->step = check_expr(c, s->step);
        for (int k = 0; k < s->nindices; k++) s->indices[k] = check_expr(c, s->indices[k]);
        int loop = s->kind == IR_FOR && c->nloops < 64;
        ir_block before = {0};
        if (loop) {
            c->before[c->nloops] = &before;
            c->loops[c->nloops++] = s;
        }
        check_block(c, &s->body);
        c->nloops -= loop;
        check_block(c, &s->orelse);
        if (before.n && insert_before(c, b, i, &before)) return;
        i += before.n;
        int scratch = s->kind == IR_SSTORE && s->nindices == c->f->scratch[s->index].ndim;
        if (s->kind != IR_STORE && !scratch) continue;
        int p = scratch ? -1 - s->index : s->index;
        unsigned dims = dims_to_check(c, s, p, s->indices, s->nindices);
        if (!dims) continue;
        ir_stmt *eval = new_stmt(c, IR_EVAL, s->line, s->col, s->src);
        if (!eval) return;
        eval->value = guard(c, p, s->indices, s->nindices, dims, (access){NULL, s, 0}, s->src,
                            s->line, s->col);
        b->stmts[i] = eval;
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
    checker c = {.f = f};
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

/* Whether some access of b has a dimension to check. */
static int needs(checker *c, const ir_block *b);

static int needs_expr(checker *c, const ir_expr *e) {
    if (!e) return 0;
    if ((e->kind == IR_LOAD || e->kind == IR_ATOMIC) &&
        dims_to_check(c, e, e->index, e->args, e->nargs))
        return 1;
    if (e->kind == IR_SLOAD && e->nargs == c->f->scratch[e->index].ndim &&
        dims_to_check(c, e, -1 - e->index, e->args, e->nargs))
        return 1;
    if (needs_expr(c, e->a) || needs_expr(c, e->b) || needs_expr(c, e->cond)) return 1;
    for (int i = 0; i < e->nargs; i++)
        if (needs_expr(c, e->args[i])) return 1;
    return e->body && needs(c, e->body);
}

static int needs(checker *c, const ir_block *b) {
    for (int i = 0; i < b->n; i++) {
        const ir_stmt *s = b->stmts[i];
        if (s->kind == IR_STORE && dims_to_check(c, s, s->index, s->indices, s->nindices)) return 1;
        if (s->kind == IR_SSTORE && s->nindices == c->f->scratch[s->index].ndim &&
            dims_to_check(c, s, -1 - s->index, s->indices, s->nindices))
            return 1;
        if (needs_expr(c, s->value) || needs_expr(c, s->start) || needs_expr(c, s->stop) ||
            needs_expr(c, s->step) || needs(c, &s->orelse))
            return 1;
        for (int k = 0; k < s->nindices; k++)
            if (needs_expr(c, s->indices[k])) return 1;
        int loop = s->kind == IR_FOR && c->nloops < 64;
        if (loop) c->loops[c->nloops++] = s;
        int in = needs(c, &s->body);
        c->nloops -= loop;
        if (in) return 1;
    }
    return 0;
}

/* What launch_covered may list: every access once, and the proven ones
 * again. */
static int count_accesses(const ir_block *b);

static int count_expr(const ir_expr *e) {
    if (!e) return 0;
    int n = e->kind == IR_LOAD || e->kind == IR_ATOMIC;
    n += count_expr(e->a) + count_expr(e->b) + count_expr(e->cond);
    for (int i = 0; i < e->nargs; i++) n += count_expr(e->args[i]);
    return n + (e->body ? count_accesses(e->body) : 0);
}

static int count_accesses(const ir_block *b) {
    int n = 0;
    for (int i = 0; i < b->n; i++) {
        const ir_stmt *s = b->stmts[i];
        n += s->kind == IR_STORE;
        n += count_expr(s->value) + count_expr(s->start) + count_expr(s->stop) +
             count_expr(s->step) + count_accesses(&s->body) + count_accesses(&s->orelse);
        for (int k = 0; k < s->nindices; k++) n += count_expr(s->indices[k]);
    }
    return n;
}

static tack_status no_memory(const ir_func *f, tack_error *err) {
    err->status = TACK_ERR_NOMEM;
    snprintf(err->message, sizeof err->message, "out of memory adding bounds checks to '%s'",
             f->name);
    return TACK_ERR_NOMEM;
}

tack_status pass_access_checks(ir_func *f, tack_error *err) {
    if (f->collective || f->debug_errors >= 0 || f->loop_var < 0) return TACK_OK;
    int cap = 2 * count_accesses(&f->body) + 1;
    launch_cover *cov = malloc(cap * sizeof *cov);
    if (!cov) return no_memory(f, err);
    checker c = {.f = f, .selective = 1, .cov = cov};
    c.ncov = launch_covered(f, cov, cap);
    tack_status st = TACK_OK;
    if (!needs(&c, &f->body)) goto done; /* the plain code, unchanged */
    if (f->nparams > TACK_MAX_PARAMS - 1) {
        err->status = st = TACK_ERR_COMPILE;
        snprintf(err->message, sizeof err->message,
                 "kernel '%s': too many parameters for the hidden bounds-check record", f->name);
        goto done;
    }
    f->debug_errors = hidden_array(&c, "__errors__");
    if (f->debug_errors < 0) {
        st = no_memory(f, err);
        goto done;
    }
    f->params[f->debug_errors].written = 1;
    check_block(&c, &f->body);
    st = c.failed ? no_memory(f, err) : ir_verify(f, "access_checks", 0, err);
done:
    free(cov);
    return st;
}
