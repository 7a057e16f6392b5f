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

static void mark_block(wl *w, const ir_block *b);
static void mark_expr(wl *w, const ir_expr *e) {
    if (!e) return;
    if (e->kind == IR_LOCAL) use_local(w, e->index, w->cur);
    if (e->kind == IR_SLOAD) use_scratch(w, e->index);
    if (e->kind == IR_INLINE && e->index >= 0) w->keep[e->index] = 1;
    mark_expr(w, e->a);
    mark_expr(w, e->b);
    mark_expr(w, e->cond);
    for (int i = 0; i < e->nargs; i++) mark_expr(w, e->args[i]);
    if (e->body) mark_block(w, e->body);
}

static void mark_stmt(wl *w, const ir_stmt *s) {
    mark_expr(w, s->value);
    mark_expr(w, s->start);
    mark_expr(w, s->stop);
    mark_expr(w, s->step);
    for (int i = 0; i < s->nindices; i++) mark_expr(w, s->indices[i]);
    if (s->kind == IR_SSTORE) use_scratch(w, s->index);
    if (s->kind == IR_FOR) {
        /* the loop assigns its variable before the body reads it */
        w->forvar[s->index] = 1;
        if (s->index < w->nlocals0) w->defined[s->index] = w->cur;
        use_local(w, s->index, w->cur);
    }
    if (s->kind == IR_ASSIGN) use_local(w, s->index, w->cur);
    mark_block(w, &s->body);
    mark_block(w, &s->orelse);
}

static void mark_block(wl *w, const ir_block *b) {
    for (int i = 0; i < b->n; i++) mark_stmt(w, b->stmts[i]);
}

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
    ir_stmt *loop = ir_stmt_new(w->f, IR_FOR, 0, 0);
    ir_stmt *set_i = assign(w, w->f->loop_var, add_i64(w, local_ref(w, w->G), local_ref(w, w->L)));
    if (!loop || !set_i) return -1;
    loop->index = w->L;
    loop->start = i64c(w, 0), loop->stop = i64c(w, IR_WORKGROUP), loop->step = i64c(w, 1);
    if (!loop->start || !loop->stop || !loop->step) return -1;
    if (ir_block_push(w->f, &loop->body, set_i)) return -1;
    for (int i = 0; i < region->n; i++)
        if (ir_block_push(w->f, &loop->body, region->stmts[i])) return -1;
    if (rw_block(w, &loop->body, 0)) return -1;
    memset(region, 0, sizeof *region);
    return ir_block_push(w->f, out, loop);
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
    int n = f->nlocals + 1, ns = f->nscratch + 1;
    w.region = malloc(n * sizeof *w.region);
    w.defined = malloc(n * sizeof *w.defined);
    w.exposed = calloc(n, 1), w.forvar = calloc(n, 1), w.keep = calloc(n, 1);
    w.looped = calloc(n, 1);
    w.sreg = malloc(ns * sizeof *w.sreg), w.sexposed = calloc(ns, 1);
    lane_local = malloc(n * sizeof *lane_local);
    lane_size = calloc(ns, sizeof *lane_size);
    int rc = -1;
    if (!w.region || !w.defined || !w.exposed || !w.forvar || !w.keep || !w.looped || !w.sreg || !w.sexposed ||
        !lane_local || !lane_size) {
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
    w.G = ir_local_add(f, "$group_start");
    w.L = ir_local_add(f, "$lane");
    if (w.G < 0 || w.L < 0) {
        mem_fail(&w);
        goto done;
    }
    f->locals[w.G].type = f->locals[w.L].type = TACK_I64;
    if (split(&w, &f->body)) {
        if (!err->status) mem_fail(&w);
        goto done;
    }
    f->loop_var = w.G;
    rc = 0;
done:
    free(w.region), free(w.defined), free(w.exposed), free(w.forvar), free(w.keep), free(w.looped);
    free(w.sreg), free(w.sexposed), free(lane_local), free(lane_size);
    lane_local = NULL, lane_size = NULL;
    return rc ? err->status : TACK_OK;
}
