/* launch_bounds.c - the array accesses whose bounds follow from the launch
 * range (see passes.h), found once per IR template so that each dispatch
 * checks them with a few compares before anything runs.
 *
 * An index qualifies when it is a launch variable plus constants and at
 * most one scalar parameter (i, i + 1, i - n), a constant, or a scalar
 * parameter.  The access must run in every iteration of the launch: it
 * lies on the body's straight-line spine, not inside an if, a loop, a
 * conditional expression or the part of a device function after a
 * conditional return.  A guarded access (`if i > 0: a[i - 1]`, the stencil
 * idiom) may never go out of bounds even when its index would, so checking
 * it would refuse correct kernels.  One exception: in a collective kernel,
 * an access indexed by the group (tack.group_index() plus constants and a
 * scalar) counts under ifs whose conditions are made of the lane and
 * literals alone (see lane_only), as the docs' `if lane == 0:
 * out[tack.group_index()] = s` is.
 *
 * An inner `for` on the spine whose range is known at launch (see
 * launch_loop in passes.h) and whose variable its body never assigns has
 * a spine of its own: its body's accesses run in every iteration of the
 * launch whenever the loop (and each loop around it) has trips, and the
 * loop variable is an axis whose least and greatest values follow from
 * the range evaluated per dispatch.  So Numba's `for j in range(m): u[i -
 * 1, j]` is refused at launch like the same read under tack.ndindex.
 *
 * Locals are followed along the spine: a local assigned such a form there
 * (a device function's copy of its argument, a vector access's hoisted
 * index) holds it until something else may assign it.  Forms are exact in
 * i64: an axis-free sum (n + 1 with n an i32) would be computed in the
 * parameter's narrower type, so only a bare scalar or constant arithmetic
 * may stand without the launch variable (ir/index_form.c). */
#include <stdlib.h>
#include <string.h>

#include "passes.h"

typedef ir_index_form form;

typedef struct walker {
    const ir_func *f;
    form *known; /* per local, valid for the rest of this iteration's spine */
    launch_check *out;
    int n, cap;
    int group_only; /* under a lane condition: only group-indexed accesses */
    launch_loop *loops;
    int nloops, cur_loop; /* the loops found; the innermost around the walk */
    launch_cover *cov;    /* launch_covered: the dimensions checked per access */
    int ncov, covcap;
} walker;

#define unknown ir_form_unknown

static form form_of(const walker *w, const ir_expr *e) { return ir_index_form_of(w->f, w->known, e); }

/* Whether index `axis + c` always lies in p's dimension d: the axis runs
 * over range(s, p.shape[d], step) with constants s + c >= 0, step > 0 and
 * c <= 0 (an inner ndindex axis: s = 0, step 1). */
/* Whether e is dimension d of array p plus a literal (*k). */
static int dim_plus(const ir_expr *e, int p, int d, int64_t *k) {
    *k = 0;
    if (e->kind == IR_BINOP && (e->op == OP_ADD || e->op == OP_SUB) && e->b->kind == IR_CONST &&
        e->b->type == IRT_WEAK_INT && e->b->i > INT32_MIN && e->b->i < INT32_MAX) {
        *k = e->op == OP_ADD ? e->b->i : -e->b->i;
        e = e->a;
    }
    return e->kind == IR_DIM && e->index == p && e->dim == d;
}

static int weak_const(const ir_expr *e, int64_t *v) {
    if (e->kind != IR_CONST || e->type != IRT_WEAK_INT || e->i < INT32_MIN || e->i > INT32_MAX)
        return 0;
    *v = e->i;
    return 1;
}

static int proven(const walker *w, int axis, int64_t c, int p, int d) {
    const ir_func *f = w->f;
    if (axis >= IR_AXIS_LOOP) {
        /* for j in range(s, p.shape[d] + k, step): j + c with literals
         * s + c >= 0, step > 0 and k + c <= 0 never leaves dimension d. */
        const launch_loop *l = &w->loops[axis - IR_AXIS_LOOP];
        int64_t s, step, k;
        return c > INT32_MIN && c < INT32_MAX && dim_plus(l->stop, p, d, &k) && k + c <= 0 &&
               weak_const(l->start, &s) && s + c >= 0 && weak_const(l->step, &step) && step > 0;
    }
    if (axis > 2) return 0; /* a group or lane */
    const ir_expr *stop = axis == 0 ? f->stop : f->inner_stop[axis - 1];
    if (stop->kind != IR_DIM || stop->index != p || stop->dim != d || c > 0) return 0;
    if (axis > 0) return c == 0;
    const ir_expr *start = f->start, *step = f->step;
    return start->kind == IR_CONST && start->type == IRT_WEAK_INT && step->kind == IR_CONST &&
           step->type == IRT_WEAK_INT && step->i > 0 && start->i >= -c;
}

/* e's form, or one with a second axis: an inner loop's variable added to
 * a form of another axis (x[i + k - 1]); *axis2 is -1 without one.  Both
 * are i64 locals, so the sum is exact. */
static form form2_of(const walker *w, const ir_expr *e, int *axis2) {
    *axis2 = -1;
    form x = form_of(w, e);
    if (x.ok || e->kind != IR_BINOP || (e->op != OP_ADD && e->op != OP_SUB)) return x;
    int a2, b2;
    form a = form2_of(w, e->a, &a2), b = form2_of(w, e->b, &b2);
    if (!a.ok || !b.ok) return unknown;
    if (e->op == OP_SUB) { /* only an axis-free part may be subtracted */
        if (b2 >= 0 || b.axis >= 0 || b.c == INT64_MIN) return unknown;
        b.c = -b.c;
        if (b.scalar >= 0) b.sign = -b.sign;
    }
    if (a2 >= 0 && b2 >= 0) return unknown;
    int two = a2 >= 0 ? a2 : b2;
    /* Without a second axis yet, the inner loop's own (scalar-free) part
     * becomes it. */
    if (two < 0 && a.axis >= IR_AXIS_LOOP && b.axis >= 0 && b.axis < IR_AXIS_LOOP &&
        a.scalar < 0) {
        two = a.axis;
        a.axis = -1;
    } else if (two < 0 && b.axis >= IR_AXIS_LOOP && a.axis >= 0 && a.axis < IR_AXIS_LOOP &&
               b.scalar < 0) {
        two = b.axis;
        b.axis = -1;
    }
    if (two < 0 || (a.axis >= 0 && b.axis >= 0) || (a.scalar >= 0 && b.scalar >= 0)) return unknown;
    form r = {1, a.axis >= 0 ? a.axis : b.axis, a.scalar >= 0 ? a.scalar : b.scalar,
              a.scalar >= 0 ? a.sign : b.scalar >= 0 ? b.sign : 1, 0};
    if (r.axis < 0 || __builtin_add_overflow(a.c, b.c, &r.c)) return unknown;
    *axis2 = two;
    return r;
}

static void note_cover(walker *w, const void *node, unsigned dims) {
    if (dims && w->ncov < w->covcap) w->cov[w->ncov++] = (launch_cover){node, dims};
}

/* Records the access's entries, and in w->cov the dimensions they check
 * (or prove). */
static void record(walker *w, const void *node, int p, ir_expr *const *idx, int n, int written) {
    if (p == w->f->debug_errors) return; /* the per-access checks' own reads */
    unsigned dims = 0;
    /* The component index of a vector array is its width's business. */
    if (w->f->params[p].vec_width) dims |= 1u << --n;
    for (int d = 0; d < n; d++) {
        int axis2;
        form x = form2_of(w, idx[d], &axis2);
        const ir_expr *e = idx[d];
        if (!x.ok && e->kind == IR_BINOP && e->op == OP_MOD && e->b->kind == IR_DIM &&
            e->b->index == p && e->b->dim == d)
            /* e % a.shape[d] (the periodic wrap) rounds toward -inf: it
             * lies in 0..extent - 1 when the extent is not 0 (x % 0 is 0),
             * which index 0's entry checks. */
            x = (form){1, -1, -1, 1, 0};
        if (!x.ok || (w->group_only && (x.axis != IR_AXIS_GROUP || axis2 >= 0))) continue;
        if (x.axis >= 0 && x.scalar < 0 && axis2 < 0 && proven(w, x.axis, x.c, p, d)) {
            dims |= 1u << d;
            continue;
        }
        int k = 0;
        for (; k < w->n; k++) {
            launch_check *c = &w->out[k];
            if (c->param == p && c->dim == d && c->axis == x.axis && c->scalar == x.scalar &&
                c->sign == x.sign && c->written == written && c->loop == w->cur_loop &&
                c->axis2 == axis2)
                break;
        }
        if (k == w->n) {
            if (w->n == w->cap) continue; /* left to the per-access check */
            w->out[w->n++] = (launch_check){.lo = x.c, .hi = x.c, .param = (int16_t)p,
                                            .slot = (int16_t)(p * TACK_MAX_NDIM + d),
                                            .scalar = (int16_t)x.scalar, .dim = (int8_t)d,
                                            .axis = (int8_t)x.axis, .sign = (int8_t)x.sign,
                                            .written = (int8_t)written,
                                            .loop = (int8_t)w->cur_loop,
                                            .axis2 = (int8_t)axis2};
        }
        if (x.c < w->out[k].lo) w->out[k].lo = x.c;
        if (x.c > w->out[k].hi) w->out[k].hi = x.c;
        dims |= 1u << d;
    }
    note_cover(w, node, dims);
}

/* Anywhere in the body, run or not: the dimensions an access cannot leave
 * whatever runs before it (a launch variable over the array's own extent,
 * `proven`).  w->known holds the launch variables alone. */
static void cover_proven(walker *w, const void *node, int p, ir_expr *const *idx, int n) {
    unsigned dims = 0;
    if (w->f->params[p].vec_width) dims |= 1u << --n;
    for (int d = 0; d < n; d++) {
        form x = form_of(w, idx[d]);
        if (x.ok && x.axis >= 0 && x.axis <= 2 && x.scalar < 0 && proven(w, x.axis, x.c, p, d))
            dims |= 1u << d;
    }
    note_cover(w, node, dims);
}

static int cover_proven_expr(void *ctx, const ir_expr *e, const ir_stmt *value_of) {
    (void)value_of;
    if (e->kind == IR_LOAD || e->kind == IR_ATOMIC) cover_proven(ctx, e, e->index, e->args, e->nargs);
    return 0;
}

static int cover_proven_stmt(void *ctx, const ir_stmt *s) {
    if (s->kind == IR_STORE) cover_proven(ctx, s, s->index, s->indices, s->nindices);
    return 0;
}

/* Code that may or may not run: every local it may assign is unknown
 * afterwards, and its accesses are not recorded. */
static void kill_expr(walker *w, const ir_expr *e) { ir_forget_expr(w->known, e); }
static void kill_stmt(walker *w, const ir_stmt *s) { ir_forget_stmt(w->known, s); }
static void kill_block(walker *w, const ir_block *b) { ir_forget_block(w->known, b); }

/* Whether a return from inline `id` (IR_EXIT) lies anywhere in s. */
static int exits_here(void *ctx, const ir_stmt *s) {
    return s->kind == IR_EXIT && s->index == *(const int *)ctx;
}

static int exits_stmt(const ir_stmt *s, int id) {
    return ir_walk_stmt(&(ir_walker){.stmt = exits_here, .ctx = &id}, s);
}

/* Whether s holds a break or continue of the loop whose body holds s (an
 * if's, not a nested loop's): what follows it may be skipped on some trips,
 * as a guard (`if j == n - 1: break` before `a[j + 1]`). */
static int jumps(const ir_stmt *s) {
    if (s->kind == IR_BREAK || s->kind == IR_CONTINUE) return 1;
    if (s->kind != IR_IF) return 0;
    for (int a = 0; a < 2; a++) {
        const ir_block *b = a ? &s->orelse : &s->body;
        for (int i = 0; i < b->n; i++)
            if (jumps(b->stmts[i])) return 1;
    }
    return 0;
}

static void walk_block(walker *w, const ir_block *b, int inline_id);

/* Whether a loop bound is known at launch: literals and at most one scalar
 * parameter or dimension, joined by + - * and negation (so the one typed
 * value gives the arithmetic its type, which the launch emulates). */
static int launch_known(const ir_func *f, const ir_expr *e, int *typed) {
    switch (e->kind) {
    case IR_CONST: return e->type == IRT_WEAK_INT;
    case IR_PARAM:
        if (f->params[e->index].role != ROLE_SCALAR) return 0;
        return ++*typed <= 1;
    case IR_DIM: return ++*typed <= 1;
    case IR_UNOP: return (e->op == OP_NEG || e->op == OP_POS) && launch_known(f, e->a, typed);
    case IR_BINOP:
        return (e->op == OP_ADD || e->op == OP_SUB || e->op == OP_MUL) &&
               launch_known(f, e->a, typed) && launch_known(f, e->b, typed);
    default: return 0;
    }
}

static int known_range(const ir_func *f, const ir_stmt *s) {
    int a = 0, b = 0, c = 0;
    return launch_known(f, s->start, &a) && launch_known(f, s->stop, &b) &&
           launch_known(f, s->step, &c);
}

/* Whether e is made of the lane (tack.local_index()) and literals alone.
 * In a collective launch every group has all 256 lanes, so a condition
 * of that kind holds for the same lanes in every group: a group-indexed
 * access under it runs in every group if in any (the docs' `if lane ==
 * 0: out[tack.group_index()] = ...`), and no such condition can keep the
 * group index inside an array. */
static int lane_only(const walker *w, const ir_expr *e) {
    if (!e) return 1;
    form x = form_of(w, e);
    if (x.ok && x.scalar < 0 && (x.axis < 0 || x.axis == IR_AXIS_LANE)) return 1;
    switch (e->kind) {
    case IR_CONST: return 1;
    case IR_BINOP:
    case IR_UNOP:
    case IR_ANDOR:
    case IR_SELECT:
    case IR_CAST:
        return lane_only(w, e->a) && lane_only(w, e->b) && lane_only(w, e->cond);
    default:
        return 0;
    }
}

/* An expression evaluated unconditionally. */
static void walk_expr(walker *w, const ir_expr *e) {
    if (!e) return;
    switch (e->kind) {
    case IR_ANDOR: /* b runs only for some values of a */
        walk_expr(w, e->a);
        kill_expr(w, e->b);
        return;
    case IR_SELECT:
        walk_expr(w, e->cond);
        kill_expr(w, e->a);
        kill_expr(w, e->b);
        return;
    case IR_INLINE:
        if (e->index >= 0) w->known[e->index] = unknown; /* until a return sets it */
        walk_block(w, e->body, e->inline_id);
        return;
    default:
        break;
    }
    for (int i = 0; i < e->nargs; i++) walk_expr(w, e->args[i]);
    walk_expr(w, e->a);
    walk_expr(w, e->b);
    walk_expr(w, e->cond);
    if (e->kind == IR_LOAD) record(w, e, e->index, e->args, e->nargs, 0);
    if (e->kind == IR_ATOMIC) record(w, e, e->index, e->args, e->nargs, 1);
}

/* A block run from its start: the launch body (inline_id -1) or an inlined
 * function's body, which a return may leave early. */
static void walk_block(walker *w, const ir_block *b, int inline_id) {
    for (int i = 0; i < b->n; i++) {
        const ir_stmt *s = b->stmts[i];
        switch (s->kind) {
        case IR_ASSIGN: {
            walk_expr(w, s->value);
            form v = form_of(w, s->value);
            /* Only forms with the launch variable: it makes the local i64,
             * so the value is stored exactly. */
            w->known[s->index] = v.ok && v.axis >= 0 ? v : unknown;
            break;
        }
        case IR_STORE:
            walk_expr(w, s->value);
            for (int k = 0; k < s->nindices; k++) walk_expr(w, s->indices[k]);
            record(w, s, s->index, s->indices, s->nindices, 1);
            break;
        case IR_EVAL:
            walk_expr(w, s->value);
            break;
        case IR_IF:
            walk_expr(w, s->value);
            if (w->f->collective && lane_only(w, s->value)) {
                /* Each side from the facts before the if, for its
                 * group-indexed accesses only. */
                size_t size = (w->f->nlocals ? w->f->nlocals : 1) * sizeof *w->known;
                form *before = malloc(size);
                if (before) {
                    int outer = w->group_only;
                    memcpy(before, w->known, size);
                    w->group_only = 1;
                    walk_block(w, &s->body, inline_id);
                    memcpy(w->known, before, size);
                    walk_block(w, &s->orelse, inline_id);
                    memcpy(w->known, before, size);
                    w->group_only = outer;
                    free(before);
                }
            }
            kill_block(w, &s->body);
            kill_block(w, &s->orelse);
            break;
        case IR_FOR: /* start, stop and step are evaluated once, on entry */
            walk_expr(w, s->start);
            walk_expr(w, s->stop);
            walk_expr(w, s->step);
            /* From the second trip on, whatever the body assigns is not
             * what it was before the loop. */
            kill_stmt(w, s);
            if (!w->group_only && w->nloops < MAX_LAUNCH_LOOPS && known_range(w->f, s) &&
                !ir_block_assigns(&s->body, s->index)) {
                int outer = w->cur_loop, l = w->nloops++;
                w->loops[l] = (launch_loop){s->start, s->stop, s->step, outer};
                w->cur_loop = l;
                w->known[s->index] = (form){1, IR_AXIS_LOOP + l, -1, 1, 0};
                walk_block(w, &s->body, inline_id);
                w->cur_loop = outer;
                kill_stmt(w, s);
            }
            break;
        case IR_WHILE: /* the condition runs again after the body */
        default:       /* break, continue, return: the rest may not run */
            kill_stmt(w, s);
            break;
        }
        int leaves = s->kind == IR_BREAK || s->kind == IR_CONTINUE || s->kind == IR_EXIT ||
                     (inline_id >= 0 && exits_stmt(s, inline_id)) ||
                     (w->cur_loop >= 0 && jumps(s));
        if (leaves) {
            for (int j = i + 1; j < b->n; j++) kill_stmt(w, b->stmts[j]);
            return;
        }
    }
}

static int same_range(const launch_check *a, const launch_check *b) {
    return a->axis == b->axis && a->scalar == b->scalar && a->sign == b->sign && a->lo == b->lo &&
           a->hi == b->hi && a->loop == b->loop && a->axis2 == b->axis2;
}

#define CMP(x, y) if ((x) != (y)) return (x) < (y) ? -1 : 1
/* Entries with a scalar parameter or in an inner loop last (a dispatch
 * checks them apart),
 * equal index ranges together, then by array and dimension. */
static int by_range(const void *pa, const void *pb) {
    const launch_check *a = pa, *b = pb;
    CMP(a->scalar >= 0 || a->loop >= 0, b->scalar >= 0 || b->loop >= 0);
    CMP(a->loop, b->loop);
    CMP(a->axis2, b->axis2);
    CMP(a->axis, b->axis);
    CMP(a->scalar, b->scalar);
    CMP(b->sign, a->sign);
    CMP(a->lo, b->lo);
    CMP(a->hi, b->hi);
    CMP(a->param, b->param);
    CMP(a->dim, b->dim);
    CMP(b->written, a->written);
    return 0;
}
#undef CMP

static int walk_all(const ir_func *f, launch_check *out, int cap, launch_loop *loops, int *nloops,
                    launch_cover *cov, int covcap, int *ncov) {
    *nloops = 0;
    if (f->loop_var < 0 || f->debug_extents >= 0) return 0;
    walker w = {f, malloc((f->nlocals ? f->nlocals : 1) * sizeof *w.known), out, 0, cap, 0,
                loops, 0, -1, cov, 0, covcap};
    if (!w.known) return 0; /* out of memory: unchecked, as before */
    for (int l = 0; l < f->nlocals; l++) w.known[l] = unknown;
    int vars[3] = {f->loop_var, f->inner_var[0], f->inner_var[1]};
    for (int a = 0; a <= f->ninner; a++)
        if (!ir_block_assigns(&f->body, vars[a])) w.known[vars[a]] = (form){1, a, -1, 1, 0};
    walk_block(&w, &f->body, -1);
    if (cov) {
        for (int l = 0; l < f->nlocals; l++) w.known[l] = unknown;
        for (int a = 0; a <= f->ninner; a++)
            if (!ir_block_assigns(&f->body, vars[a])) w.known[vars[a]] = (form){1, a, -1, 1, 0};
        ir_walk_block(&(ir_walker){.expr = cover_proven_expr, .stmt = cover_proven_stmt, .ctx = &w},
                      &f->body);
    }
    free(w.known);
    *nloops = w.nloops;
    if (ncov) *ncov = w.ncov;
    qsort(out, w.n, sizeof *out, by_range);
    for (int i = 0, first = 0; i < w.n; i++) {
        if (i > 0 && same_range(&out[i], &out[first])) continue;
        first = i;
        for (int j = i; j < w.n && same_range(&out[j], &out[i]); j++) out[i].group++;
    }
    return w.n;
}

int launch_bounds(const ir_func *f, launch_check *out, int cap, launch_loop *loops, int *nloops) {
    return walk_all(f, out, cap, loops, nloops, NULL, 0, NULL);
}

int launch_covered(const ir_func *f, launch_cover *cov, int cap) {
    launch_check out[LAUNCH_CHECKS_CAP];
    launch_loop loops[MAX_LAUNCH_LOOPS];
    int nloops, n = 0;
    walk_all(f, out, LAUNCH_CHECKS_CAP, loops, &nloops, cov, cap, &n);
    return n;
}
