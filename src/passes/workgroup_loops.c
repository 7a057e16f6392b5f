/* workgroup_loops.c - collective kernels on a CPU: work-item loops split at
 * the barriers (loop fission, as PoCL and Intel's CPU runtime do it).
 *
 * A collective body runs once per workgroup instead of once per lane.  The
 * launch variable becomes the group's first iteration G (the CPU backend
 * steps it by IR_WORKGROUP), and each maximal run of statements without a
 * barrier (a region) becomes
 *
 *     for L in range(256): i = G + L; region
 *
 * Barriers vanish: finishing one lane loop before the next begins is the
 * wait.  Statements that contain barriers (uniform if / for / while; the
 * lowering checks the uniformity) stay outside the lane loops with their
 * bodies split in turn; their conditions and bounds are read as lane 0
 * sees them (they are the same in every lane).  A local whose value may
 * cross a region boundary (used in two regions, or read before assigned in
 * a region that repeats in a split loop) lives per lane, in a scratch
 * array of 256 indexed by L; so does a tack.local array used so.  Shared
 * arrays are plain scratch, one per worker thread, reused by its groups. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "passes.h"

typedef struct wl {
    ir_func *f;
    int G, L;
    int nlocals0, nscratch0;
    int *region;      /* per local / scratch: -1 unseen, a region, -2 several */
    int *defined;     /* per local: the region whose top level assigned it */
    char *exposed;    /* read or written before a top-level assignment ... */
    char *forvar;     /* a for-loop's variable (must stay a scalar) */
    char *looped;     /* used in a region inside a split loop */
    char *keep;       /* never per lane: i, split loops' variables, inline results */
    int *sreg;        /* per scratch */
    char *sexposed;
    int cur, in_loop; /* the region being walked; inside a split loop */
    int nregions;
    tack_error *err;
    /* Values that need no per-lane copy (see "Lane-free values" below). */
    int *nassign;     /* per local: assignments anywhere (loops, inline results too) */
    int *ntop;        /* per local: assignments at the top level of a region */
    char *uni;        /* the same in every lane: one scalar, assigned outside lane loops */
    char *remat;      /* assigned once at the top of the body from L and uniforms */
    ir_expr **def;    /* a remat local's value */
    int *order, norder; /* remat locals in program order */
} wl;

static int has_barrier_block(const ir_block *b);
static int has_barrier(const ir_stmt *s) {
    return s->kind == IR_BARRIER || has_barrier_block(&s->body) || has_barrier_block(&s->orelse);
}
static int has_barrier_block(const ir_block *b) {
    for (int i = 0; i < b->n; i++)
        if (has_barrier(b->stmts[i])) return 1;
    return 0;
}

/* A barrier inside an expression's body: lowering wraps a body with an
 * early exit (continue, return) in an inline block, which is not split. */
static int expr_barrier(const ir_expr *e);
static int block_expr_barrier(const ir_block *b) {
    for (int i = 0; i < b->n; i++) {
        const ir_stmt *s = b->stmts[i];
        if (expr_barrier(s->value) || expr_barrier(s->start) || expr_barrier(s->stop) ||
            expr_barrier(s->step) || block_expr_barrier(&s->body) || block_expr_barrier(&s->orelse))
            return 1;
    }
    return 0;
}
static int expr_barrier(const ir_expr *e) {
    if (!e) return 0;
    if (e->body && (has_barrier_block(e->body) || block_expr_barrier(e->body))) return 1;
    if (expr_barrier(e->a) || expr_barrier(e->b) || expr_barrier(e->cond)) return 1;
    for (int i = 0; i < e->nargs; i++)
        if (expr_barrier(e->args[i])) return 1;
    return 0;
}

static void use_local(wl *w, int l, int region) {
    if (l < 0 || l >= w->nlocals0) return;
    if (w->region[l] == -1) w->region[l] = region;
    else if (w->region[l] != region) w->region[l] = -2;
    /* Read before this region assigned it: the value may come from
     * another region, or from the last trip of a split loop. */
    if (w->defined[l] != region) w->exposed[l] = 1;
    if (w->in_loop) w->looped[l] = 1;
}

static void use_scratch(wl *w, int s) {
    if (w->f->scratch[s].shared) return;
    if (w->sreg[s] == -1) w->sreg[s] = w->cur;
    else if (w->sreg[s] != w->cur) w->sreg[s] = -2;
    if (w->in_loop) w->sexposed[s] = 1;
}

/* What an expression reads: its locals, scratch arrays and inlined
 * results. */
static int mark_uses(void *ctx, const ir_expr *e, const ir_stmt *value_of) {
    (void)value_of;
    wl *w = ctx;
    if (e->kind == IR_LOCAL) use_local(w, e->index, w->cur);
    if (e->kind == IR_SLOAD) use_scratch(w, e->index);
    if (e->kind == IR_INLINE && e->index >= 0) w->keep[e->index] = 1;
    return 0;
}

/* What a statement writes, once its expressions are read. */
static int mark_writes(void *ctx, const ir_stmt *s) {
    wl *w = ctx;
    if (s->kind == IR_SSTORE) use_scratch(w, s->index);
    if (s->kind == IR_FOR) {
        /* the loop assigns its variable before the body reads it */
        w->forvar[s->index] = 1;
        if (s->index < w->nlocals0) w->defined[s->index] = w->cur;
        use_local(w, s->index, w->cur);
    }
    if (s->kind == IR_ASSIGN) use_local(w, s->index, w->cur);
    return 0;
}

#define MARK(w) (&(ir_walker){.expr = mark_uses, .before_blocks = mark_writes, .ctx = (w)})

static void mark_expr(wl *w, const ir_expr *e) { ir_walk_expr(MARK(w), e); }

static void mark_stmt(wl *w, const ir_stmt *s) { ir_walk_stmt(MARK(w), s); }

/* One block of the split structure: regions and the statements between. */
static void classify(wl *w, const ir_block *b, int in_loop) {
    int open = 0;
    for (int i = 0; i < b->n; i++) {
        const ir_stmt *s = b->stmts[i];
        if (!has_barrier(s)) {
            if (!open) w->cur = w->nregions++, open = 1;
            w->in_loop = in_loop;
            if (s->kind == IR_ASSIGN) {
                /* x = value: value is read first, then x is this region's */
                mark_expr(w, s->value);
                if (s->index < w->nlocals0) w->defined[s->index] = w->cur;
                use_local(w, s->index, w->cur);
            } else {
                mark_stmt(w, s);
            }
            continue;
        }
        open = 0;
        if (s->kind == IR_BARRIER) continue;
        /* Uniform control: its own region (read as lane 0 reads it). */
        w->cur = w->nregions++;
        w->in_loop = 1;
        mark_expr(w, s->value);
        mark_expr(w, s->start);
        mark_expr(w, s->stop);
        mark_expr(w, s->step);
        if (s->kind == IR_FOR) w->keep[s->index] = 1;
        classify(w, &s->body, in_loop || s->kind != IR_IF);
        classify(w, &s->orelse, in_loop || s->kind != IR_IF);
    }
}

static ir_expr *local_ref(wl *w, int l) {
    ir_expr *e = ir_expr_new(w->f, IR_LOCAL, 0, 0);
    if (e) e->index = l, e->type = w->f->locals[l].type;
    return e;
}

static ir_expr *i64c(wl *w, int64_t v) {
    ir_expr *e = ir_const_int(w->f, v, TACK_I64, 0, 0);
    if (e) e->type = TACK_I64;
    return e;
}

static ir_expr *add_i64(wl *w, ir_expr *a, ir_expr *b) {
    ir_expr *e = ir_expr_new(w->f, IR_BINOP, 0, 0);
    if (!e || !a || !b) return NULL;
    e->op = OP_ADD, e->a = a, e->b = b, e->type = TACK_I64;
    return e;
}

static ir_expr *mul_i64(wl *w, ir_expr *a, ir_expr *b) {
    ir_expr *e = add_i64(w, a, b);
    if (e) e->op = OP_MUL;
    return e;
}

static ir_stmt *assign(wl *w, int l, ir_expr *v) {
    ir_stmt *s = ir_stmt_new(w->f, IR_ASSIGN, 0, 0);
    if (!s || !v) return NULL;
    s->index = l, s->value = v;
    return s;
}

/* ---- Lane-free values ----
 *
 * Locals that would otherwise be per-lane arrays (and lane loops that
 * LLVM would not vectorize through them):
 *   uniform  every assignment sits at the top level of a region and
 *            assigns a uniform value (literals, scalar parameters, the
 *            group, other uniform locals): one scalar, assigned before
 *            or after the region's lane loop (half = half // 2 once, not
 *            once per lane);
 *   remat    assigned once at the top of the body from the lane, the
 *            group and uniforms (lane = tack.local_index(), row = g * 16
 *            + ty): recomputed at the start of every lane loop using it.
 * tack.local_index() and tack.group_index() (i & 255, i >> 8) become L
 * and G >> 8 first, so both are seen for what they are. */
static int is_local(const ir_expr *e, int l) { return e && e->kind == IR_LOCAL && e->index == l; }

static void lane_ids_block(wl *w, ir_block *b);
static void lane_ids(wl *w, ir_expr *e) {
    if (!e) return;
    lane_ids(w, e->a), lane_ids(w, e->b), lane_ids(w, e->cond);
    for (int i = 0; i < e->nargs; i++) lane_ids(w, e->args[i]);
    if (e->body) lane_ids_block(w, e->body);
    if (e->kind != IR_BINOP || !is_local(e->a, w->f->loop_var) || !e->b || e->b->kind != IR_CONST)
        return;
    ir_type t = e->a->type;
    if (t != TACK_I64 && t != TACK_I32) return;
    if (e->op == OP_AND && e->b->i == IR_WORKGROUP - 1) {
        ir_expr *l = local_ref(w, w->L);
        if (!l) return;
        if (e->type == TACK_I64) *e = *l;
        else e->kind = IR_CAST, e->a = l, e->b = NULL;
    } else if (e->op == OP_SHR && e->b->i == 8) {
        ir_expr *g = local_ref(w, w->G);
        if (!g) return;
        if (t != TACK_I64) {
            ir_expr *c = ir_expr_new(w->f, IR_CAST, 0, 0);
            if (!c) return;
            c->a = g, c->type = t, g = c;
        }
        e->a = g;
    }
}

static void lane_ids_block(wl *w, ir_block *b) {
    for (int i = 0; i < b->n; i++) {
        ir_stmt *s = b->stmts[i];
        lane_ids(w, s->value), lane_ids(w, s->start), lane_ids(w, s->stop), lane_ids(w, s->step);
        for (int k = 0; k < s->nindices; k++) lane_ids(w, s->indices[k]);
        lane_ids_block(w, &s->body), lane_ids_block(w, &s->orelse);
    }
}

static void count_expr(wl *w, const ir_expr *e);
static void count_block(wl *w, const ir_block *b) {
    for (int i = 0; i < b->n; i++) {
        const ir_stmt *s = b->stmts[i];
        count_expr(w, s->value), count_expr(w, s->start), count_expr(w, s->stop), count_expr(w, s->step);
        for (int k = 0; k < s->nindices; k++) count_expr(w, s->indices[k]);
        if ((s->kind == IR_ASSIGN || s->kind == IR_FOR) && s->index < w->nlocals0) w->nassign[s->index]++;
        count_block(w, &s->body), count_block(w, &s->orelse);
    }
}
static void count_expr(wl *w, const ir_expr *e) {
    if (!e) return;
    count_expr(w, e->a), count_expr(w, e->b), count_expr(w, e->cond);
    for (int i = 0; i < e->nargs; i++) count_expr(w, e->args[i]);
    if (e->kind == IR_INLINE && e->index >= 0 && e->index < w->nlocals0) w->nassign[e->index] += 2;
    if (e->body) count_block(w, e->body);
}

/* Top-level assignments of the regions, in the split structure. */
static void count_top(wl *w, const ir_block *b) {
    for (int i = 0; i < b->n; i++) {
        const ir_stmt *s = b->stmts[i];
        if (!has_barrier(s)) {
            if (s->kind == IR_ASSIGN && s->index < w->nlocals0) w->ntop[s->index]++;
            continue;
        }
        count_top(w, &s->body), count_top(w, &s->orelse);
    }
}

/* Pure arithmetic on literals, parameters, G and uniform locals (and, when
 * lane is set, L, i and remat locals). */
static int pure(const wl *w, const ir_expr *e, int lane) {
    if (!e) return 1;
    if (e->body) return 0;
    switch (e->kind) {
    case IR_CONST: case IR_PARAM: case IR_DIM: return 1;
    case IR_LOCAL:
        if (e->index == w->G || w->uni[e->index]) return 1;
        return lane && (e->index == w->L || e->index == w->f->loop_var || w->remat[e->index]);
    case IR_BINOP: case IR_ANDOR: return pure(w, e->a, lane) && pure(w, e->b, lane);
    case IR_UNOP: case IR_CAST: return pure(w, e->a, lane);
    case IR_SELECT: return pure(w, e->cond, lane) && pure(w, e->a, lane) && pure(w, e->b, lane);
    default: return 0;
    }
}

static int refs_expr(const ir_expr *e, int l);
static int refs_block(const ir_block *b, int l);
static int refs_stmt(const ir_stmt *s, int l) {
    if (refs_expr(s->value, l) || refs_expr(s->start, l) || refs_expr(s->stop, l) || refs_expr(s->step, l))
        return 1;
    for (int k = 0; k < s->nindices; k++)
        if (refs_expr(s->indices[k], l)) return 1;
    if ((s->kind == IR_ASSIGN || s->kind == IR_FOR) && s->index == l) return 1;
    return refs_block(&s->body, l) || refs_block(&s->orelse, l);
}
static int refs_block(const ir_block *b, int l) {
    for (int i = 0; i < b->n; i++)
        if (refs_stmt(b->stmts[i], l)) return 1;
    return 0;
}
static int refs_expr(const ir_expr *e, int l) {
    if (!e) return 0;
    if (e->kind == IR_LOCAL && e->index == l) return 1;
    if (e->kind == IR_INLINE && e->index == l) return 1;
    if (refs_expr(e->a, l) || refs_expr(e->b, l) || refs_expr(e->cond, l)) return 1;
    for (int i = 0; i < e->nargs; i++)
        if (refs_expr(e->args[i], l)) return 1;
    return e->body && refs_block(e->body, l);
}

static int hoisted(const wl *w, const ir_stmt *s) {
    return s->kind == IR_ASSIGN && s->index < w->nlocals0 && w->uni[s->index];
}

/* Where each statement of a region goes: 0 the lane loop, 1 before it,
 * 2 after it.  Returns a uniform local that can go neither way, or -1. */
static int plan(const wl *w, ir_stmt **st, int n, char *where) {
    int post = 0;
    for (int k = 0; k < n; k++) {
        where[k] = 0;
        if (!hoisted(w, st[k])) continue;
        int u = st[k]->index, before = 0, after = 0;
        if (!pure(w, st[k]->value, 0)) return u;
        for (int j = 0; j < k; j++)
            if (!where[j] && refs_stmt(st[j], u)) before = 1;
        if (!post && !before) {
            where[k] = 1;
            continue;
        }
        post = 1;
        for (int j = k + 1; j < n; j++)
            if (!hoisted(w, st[j]) && refs_stmt(st[j], u)) after = 1;
        if (after) return u;
        where[k] = 2;
    }
    return -1;
}

static int plan_all(const wl *w, const ir_block *b) {
    ir_stmt *buf[512];
    char where[512];
    int n = 0;
    for (int i = 0; i <= b->n; i++) {
        const ir_stmt *s = i < b->n ? b->stmts[i] : NULL;
        if (s && !has_barrier(s)) {
            if (n < 512) buf[n++] = (ir_stmt *)s;
            else return -2;
            continue;
        }
        int u = plan(w, buf, n, where);
        if (u != -1) return u;
        n = 0;
        if (s && s->kind != IR_BARRIER) {
            if ((u = plan_all(w, &s->body)) != -1 || (u = plan_all(w, &s->orelse)) != -1) return u;
        }
    }
    return -1;
}

static void find_lane_free(wl *w) {
    ir_func *f = w->f;
    count_block(w, &f->body);
    count_top(w, &f->body);
    for (int l = 0; l < w->nlocals0; l++)
        w->uni[l] = l != f->loop_var && w->nassign[l] > 0 && w->ntop[l] == w->nassign[l];
    for (;;) {
        int u = plan_all(w, &f->body);
        if (u == -1) break;
        if (u < 0) { /* a region too long to plan: nothing uniform */
            memset(w->uni, 0, w->nlocals0);
            break;
        }
        w->uni[u] = 0;
    }
    /* remat: single assignments at the top of the body, in order */
    for (int i = 0; i < f->body.n; i++) {
        const ir_stmt *s = f->body.stmts[i];
        if (s->kind != IR_ASSIGN || s->index >= w->nlocals0 || w->uni[s->index]) continue;
        if (w->nassign[s->index] != 1 || !pure(w, s->value, 1)) continue;
        w->remat[s->index] = 1, w->def[s->index] = s->value;
        w->order[w->norder++] = s->index;
    }
    for (int l = 0; l < w->nlocals0; l++)
        if (w->uni[l] || w->remat[l]) w->keep[l] = 1;
}

/* The remat locals a lane loop's body uses, recomputed at its start. */
static void need_block(const wl *w, const ir_block *b, char *need);
static void need_expr(const wl *w, const ir_expr *e, char *need) {
    if (!e) return;
    if (e->kind == IR_LOCAL && e->index < w->nlocals0 && w->remat[e->index] && !need[e->index]) {
        need[e->index] = 1;
        need_expr(w, w->def[e->index], need);
    }
    need_expr(w, e->a, need), need_expr(w, e->b, need), need_expr(w, e->cond, need);
    for (int i = 0; i < e->nargs; i++) need_expr(w, e->args[i], need);
    if (e->body) need_block(w, e->body, need);
}
static void need_block(const wl *w, const ir_block *b, char *need) {
    for (int i = 0; i < b->n; i++) {
        const ir_stmt *s = b->stmts[i];
        need_expr(w, s->value, need), need_expr(w, s->start, need), need_expr(w, s->stop, need);
        need_expr(w, s->step, need);
        for (int k = 0; k < s->nindices; k++) need_expr(w, s->indices[k], need);
        need_block(w, &s->body, need), need_block(w, &s->orelse, need);
    }
}

/* The lane as an integer: L, a remat copy of it, or a widening cast. */
static int lane_valued(const wl *w, const ir_expr *e) {
    if (!e) return 0;
    if (e->kind == IR_LOCAL)
        return e->index == w->L || (e->index < w->nlocals0 && w->remat[e->index] &&
                                    lane_valued(w, w->def[e->index]));
    if (e->kind == IR_CAST) return (e->type == TACK_I32 || e->type == TACK_I64) && lane_valued(w, e->a);
    return 0;
}

static ir_expr *cmp_i64(wl *w, int op, ir_expr *a, ir_expr *b) {
    ir_expr *e = add_i64(w, a, b);
    if (e) e->op = op, e->type = TACK_BOOL;
    return e;
}

static ir_expr *select_i64(wl *w, ir_expr *c, ir_expr *a, ir_expr *b) {
    ir_expr *e = ir_expr_new(w->f, IR_SELECT, 0, 0);
    if (!e || !c || !a || !b) return NULL;
    e->cond = c, e->a = a, e->b = b, e->type = TACK_I64;
    return e;
}

/* A region that is one `if lane < u:` (<=, >, >=, ==, u uniform) runs its
 * lane loop over the lanes that pass only: tree reductions touch half the
 * lanes, then a quarter, ... and `if lane == 0` is one trip. */
static int narrow(wl *w, ir_stmt *only, ir_expr **lo, ir_expr **hi) {
    ir_expr *c = only->value;
    if (only->kind != IR_IF || only->orelse.n || !c || c->kind != IR_BINOP) return 0;
    int op = c->op;
    ir_expr *u;
    if (lane_valued(w, c->a)) u = c->b;
    else if (lane_valued(w, c->b)) {
        u = c->a;
        op = op == OP_LT ? OP_GT : op == OP_GT ? OP_LT : op == OP_LE ? OP_GE : op == OP_GE ? OP_LE : op;
    } else return 0;
    if (!u || !pure(w, u, 0) || (u->type != TACK_I32 && u->type != TACK_I64 && u->type != TACK_U32)) return 0;
    if (op != OP_LT && op != OP_LE && op != OP_GT && op != OP_GE && op != OP_EQ) return 0;
    if (u->type != TACK_I64) {
        ir_expr *k = ir_expr_new(w->f, IR_CAST, 0, 0);
        if (!k) return -1;
        k->a = u, k->type = TACK_I64, u = k;
    }
    /* u is read twice below: a pure expression, evaluated the same. */
    ir_expr *a = op == OP_LT || op == OP_LE ? i64c(w, 0) : op == OP_GT ? add_i64(w, u, i64c(w, 1)) : u;
    ir_expr *b = op == OP_LT ? u : op == OP_LE || op == OP_EQ ? add_i64(w, u, i64c(w, 1)) : i64c(w, IR_WORKGROUP);
    if (!a || !b) return -1;
    *lo = select_i64(w, cmp_i64(w, OP_LT, a, i64c(w, 0)), i64c(w, 0), a);
    *hi = select_i64(w, cmp_i64(w, OP_GT, b, i64c(w, IR_WORKGROUP)), i64c(w, IR_WORKGROUP), b);
    return *lo && *hi ? 1 : -1;
}

static _Thread_local int *lane_local; /* set per run: per local its per-lane scratch, or -1 */
static _Thread_local int *lane_size;  /* per scratch: its size when widened, else 0 */

static int fail(wl *w, const ir_stmt *s, const char *what) {
    w->err->status = TACK_ERR_COMPILE;
    snprintf(w->err->message, sizeof w->err->message,
             "kernel '%s', line %d: %s, which the device 'cpu' cannot split at its barriers; "
             "run it on tack.device('opencl')",
             w->f->name, s ? s->line + w->f->first_line - 1 : w->f->first_line, what);
    return -1;
}

/* Rewrites per-lane locals and widened scratch in place. */
static int rw_block(wl *w, ir_block *b, int depth);
static int rw_expr(wl *w, ir_expr *e) {
    if (!e) return 0;
    if (rw_expr(w, e->a) || rw_expr(w, e->b) || rw_expr(w, e->cond)) return -1;
    for (int i = 0; i < e->nargs; i++)
        if (rw_expr(w, e->args[i])) return -1;
    if (e->body && rw_block(w, e->body, 1)) return -1;
    if (e->kind == IR_LOCAL && e->index < w->nlocals0 && lane_local[e->index] >= 0) {
        ir_expr **args = arena_alloc(&w->f->mem, sizeof *args);
        if (!args || !(args[0] = local_ref(w, w->L))) return -1;
        e->kind = IR_SLOAD, e->index = lane_local[e->index], e->args = args, e->nargs = 1;
    } else if (e->kind == IR_SLOAD && lane_size[e->index]) {
        e->args[0] = add_i64(w, mul_i64(w, local_ref(w, w->L), i64c(w, lane_size[e->index])), e->args[0]);
        if (!e->args[0]) return -1;
    }
    return 0;
}

static int rw_stmt(wl *w, ir_stmt *s, int depth) {
    if (rw_expr(w, s->value) || rw_expr(w, s->start) || rw_expr(w, s->stop) || rw_expr(w, s->step))
        return -1;
    for (int i = 0; i < s->nindices; i++)
        if (rw_expr(w, s->indices[i])) return -1;
    /* A lane leaving its region early (continue, return) is not split yet. */
    if ((s->kind == IR_BREAK || s->kind == IR_CONTINUE) && depth == 0)
        return fail(w, s, "an early exit of a lane in a workgroup kernel");
    if (s->kind == IR_FOR && lane_local[s->index] >= 0)
        return fail(w, s, "a loop variable used across a barrier");
    if (s->kind == IR_ASSIGN && s->index < w->nlocals0 && lane_local[s->index] >= 0) {
        ir_expr **ix = arena_alloc(&w->f->mem, sizeof *ix);
        if (!ix || !(ix[0] = local_ref(w, w->L))) return -1;
        s->kind = IR_SSTORE, s->index = lane_local[s->index], s->indices = ix, s->nindices = 1;
    } else if (s->kind == IR_SSTORE && lane_size[s->index]) {
        s->indices[0] = add_i64(w, mul_i64(w, local_ref(w, w->L), i64c(w, lane_size[s->index])),
                                s->indices[0]);
        if (!s->indices[0]) return -1;
    }
    int inner = depth + (s->kind == IR_FOR || s->kind == IR_WHILE);
    return rw_block(w, &s->body, inner) || rw_block(w, &s->orelse, inner) ? -1 : 0;
}

static int rw_block(wl *w, ir_block *b, int depth) {
    for (int i = 0; i < b->n; i++)
        if (rw_stmt(w, b->stmts[i], depth)) return -1;
    return 0;
}

/* lane = 0, i = G: where uniform conditions are read. */
static int lane_zero(wl *w, ir_block *out) {
    ir_stmt *a = assign(w, w->L, i64c(w, 0)), *b = assign(w, w->f->loop_var, local_ref(w, w->G));
    if (!a || !b || ir_block_push(w->f, out, a) || ir_block_push(w->f, out, b)) return -1;
    return 0;
}

static int split(wl *w, ir_block *b);

static int close_region(wl *w, ir_block *out, ir_block *region) {
    if (!region->n) return 0;
    char *where = malloc(region->n), *need = calloc(w->nlocals0 + 1, 1);
    ir_block kept = {0}, post = {0};
    int rc = -1;
    if (!where || !need) goto done;
    /* plan() succeeded on every region in find_lane_free */
    if (plan(w, region->stmts, region->n, where) != -1) memset(where, 0, region->n);
    for (int i = 0; i < region->n; i++) {
        ir_block *to = where[i] == 1 ? out : where[i] == 2 ? &post : &kept;
        if (ir_block_push(w->f, to, region->stmts[i])) goto done;
    }
    if (kept.n) {
        ir_stmt *loop = ir_stmt_new(w->f, IR_FOR, 0, 0);
        ir_stmt *set_i = assign(w, w->f->loop_var, add_i64(w, local_ref(w, w->G), local_ref(w, w->L)));
        if (!loop || !set_i) goto done;
        loop->index = w->L;
        loop->start = i64c(w, 0), loop->stop = i64c(w, IR_WORKGROUP), loop->step = i64c(w, 1);
        if (!loop->start || !loop->stop || !loop->step) goto done;
        ir_block *body = &kept;
        if (kept.n == 1) {
            int r = narrow(w, kept.stmts[0], &loop->start, &loop->stop);
            if (r < 0) goto done;
            if (r) body = &kept.stmts[0]->body;
        }
        if (ir_block_push(w->f, &loop->body, set_i)) goto done;
        need_block(w, body, need);
        for (int k = 0; k < w->norder; k++) {
            int l = w->order[k];
            if (need[l] && ir_block_push(w->f, &loop->body, assign(w, l, w->def[l]))) goto done;
        }
        for (int i = 0; i < body->n; i++)
            if (ir_block_push(w->f, &loop->body, body->stmts[i])) goto done;
        if (rw_block(w, &loop->body, 0) || ir_block_push(w->f, out, loop)) goto done;
    }
    for (int i = 0; i < post.n; i++)
        if (ir_block_push(w->f, out, post.stmts[i])) goto done;
    memset(region, 0, sizeof *region);
    rc = 0;
done:
    free(where), free(need);
    return rc;
}

/* Rebuilds block b as lane loops and the uniform statements between. */
static int split(wl *w, ir_block *b) {
    ir_block out = {0}, region = {0};
    for (int i = 0; i < b->n; i++) {
        ir_stmt *s = b->stmts[i];
        if (!has_barrier(s)) {
            if (ir_block_push(w->f, &region, s)) return -1;
            continue;
        }
        if (close_region(w, &out, &region)) return -1;
        if (s->kind == IR_BARRIER) continue;
        if (s->kind == IR_BREAK || s->kind == IR_CONTINUE) return fail(w, s, "a jump");
        if (lane_zero(w, &out)) return -1;
        if (rw_expr(w, s->start) || rw_expr(w, s->stop) || rw_expr(w, s->step)) return -1;
        if (s->kind == IR_WHILE) {
            /* while c: body  ->  while True: L = 0; i = G; if not c: break; body */
            ir_expr *c = s->value;
            if (rw_expr(w, c)) return -1;
            ir_expr *t = ir_const_int(w->f, 1, TACK_BOOL, 0, 0), *n = ir_expr_new(w->f, IR_UNOP, 0, 0);
            ir_stmt *test = ir_stmt_new(w->f, IR_IF, 0, 0), *brk = ir_stmt_new(w->f, IR_BREAK, 0, 0);
            if (!t || !n || !test || !brk) return -1;
            t->type = TACK_BOOL;
            n->op = OP_NOT, n->a = c, n->type = TACK_BOOL;
            test->value = n;
            if (ir_block_push(w->f, &test->body, brk)) return -1;
            if (split(w, &s->body)) return -1;
            ir_block body = {0};
            if (lane_zero(w, &body) || ir_block_push(w->f, &body, test)) return -1;
            for (int k = 0; k < s->body.n; k++)
                if (ir_block_push(w->f, &body, s->body.stmts[k])) return -1;
            s->body = body;
            s->value = t;
        } else {
            if (rw_expr(w, s->value)) return -1;
            if (split(w, &s->body) || split(w, &s->orelse)) return -1;
        }
        if (ir_block_push(w->f, &out, s)) return -1;
    }
    if (close_region(w, &out, &region)) return -1;
    *b = out;
    return 0;
}

static int mem_fail(wl *w) {
    w->err->status = TACK_ERR_NOMEM;
    snprintf(w->err->message, sizeof w->err->message, "out of memory splitting kernel '%s'",
             w->f->name);
    return -1;
}

tack_status pass_workgroup_loops(ir_func *f, tack_error *err) {
    wl w = {0};
    w.f = f, w.err = err;
    w.nlocals0 = f->nlocals, w.nscratch0 = f->nscratch;
    int n = f->nlocals + 3, ns = f->nscratch + 1;
    w.nassign = calloc(n, sizeof *w.nassign), w.ntop = calloc(n, sizeof *w.ntop);
    w.uni = calloc(n, 1), w.remat = calloc(n, 1);
    w.def = calloc(n, sizeof *w.def), w.order = calloc(n, sizeof *w.order);
    w.region = malloc(n * sizeof *w.region);
    w.defined = malloc(n * sizeof *w.defined);
    w.exposed = calloc(n, 1), w.forvar = calloc(n, 1), w.keep = calloc(n, 1);
    w.looped = calloc(n, 1);
    w.sreg = malloc(ns * sizeof *w.sreg), w.sexposed = calloc(ns, 1);
    lane_local = malloc(n * sizeof *lane_local);
    lane_size = calloc(ns, sizeof *lane_size);
    int rc = -1;
    if (!w.region || !w.defined || !w.exposed || !w.forvar || !w.keep || !w.looped || !w.sreg || !w.sexposed ||
        !lane_local || !lane_size || !w.nassign || !w.ntop || !w.uni || !w.remat || !w.def || !w.order) {
        mem_fail(&w);
        goto done;
    }
    for (int i = 0; i < n; i++) w.region[i] = w.defined[i] = lane_local[i] = -1;
    for (int i = 0; i < ns; i++) w.sreg[i] = -1;
    w.keep[f->loop_var] = 1;
    if (block_expr_barrier(&f->body)) {
        fail(&w, NULL, "a barrier in a kernel whose lanes may leave early (continue, return)");
        goto done;
    }
    w.G = ir_local_add(f, "$group_start");
    w.L = ir_local_add(f, "$lane");
    if (w.G < 0 || w.L < 0) {
        mem_fail(&w);
        goto done;
    }
    f->locals[w.G].type = f->locals[w.L].type = TACK_I64;
    lane_ids_block(&w, &f->body);
    find_lane_free(&w);
    classify(&w, &f->body, 0);
    for (int i = 0; i < f->nscratch; i++)
        if (!f->scratch[i].shared && (w.sreg[i] == -2 || w.sexposed[i]))
            lane_size[i] = (int)ir_scratch_size(&f->scratch[i]);
    for (int l = 0; l < f->nlocals; l++) {
        if (w.keep[l] || w.region[l] == -1) continue;
        if (!w.exposed[l] || (w.region[l] != -2 && !w.looped[l])) continue;
        ir_scratch a = {0};
        a.name = f->locals[l].name ? f->locals[l].name : "lane";
        a.type = f->locals[l].type;
        a.ndim = 1, a.dims[0] = IR_WORKGROUP;
        ir_scratch *v = arena_grow(&f->mem, f->scratch, f->nscratch, f->nscratch + 1, sizeof *v);
        if (!v) {
            mem_fail(&w);
            goto done;
        }
        f->scratch = v;
        v[f->nscratch] = a;
        lane_local[l] = f->nscratch++;
    }
    for (int i = 0; i < w.nscratch0; i++)
        if (lane_size[i]) {
            f->scratch[i].ndim = 1;
            f->scratch[i].dims[0] = lane_size[i] * (int64_t)IR_WORKGROUP;
        }
    if (split(&w, &f->body)) {
        if (!err->status) mem_fail(&w);
        goto done;
    }
    f->loop_var = w.G;
    rc = 0;
done:
    free(w.region), free(w.defined), free(w.exposed), free(w.forvar), free(w.keep), free(w.looped);
    free(w.sreg), free(w.sexposed), free(lane_local), free(lane_size);
    free(w.nassign), free(w.ntop), free(w.uni), free(w.remat), free(w.def), free(w.order);
    lane_local = NULL, lane_size = NULL;
    return rc ? err->status : TACK_OK;
}
