/* Taichi's compile-time loops: `for k in tack.static(range(3)):` (also
 * `static(...)` imported from tack) unrolls while lowering.  Each copy of
 * the body starts with `k = <the value>`, so indices built from k are
 * constants there, as Taichi's ti.static gives.  A range whose bounds are
 * not integer constants, a body with break/continue (which act on the loop
 * itself), or more than MAX_UNROLL copies lowers as the ordinary loop over
 * the same range: the same values in the same order. */
#include <string.h>

#include "lower_internal.h"

#define MAX_UNROLL 256

/* break/continue of this loop (not of loops nested inside it). */
static int leaves_loop(stmt *const *body, int n) {
    for (int i = 0; i < n; i++) {
        const stmt *s = body[i];
        if (s->kind == ST_BREAK || s->kind == ST_CONTINUE) return 1;
        if (s->kind == ST_IF &&
            (leaves_loop(s->body, s->nbody) || leaves_loop(s->orelse, s->norelse)))
            return 1;
    }
    return 0;
}

/* An integer constant argument of range(): a literal, a module constant. */
static int constant_int(lowerer *L, const expr *e, int64_t *v) {
    int failed = L->failed;
    ir_expr *x = lower_expr(L, e);
    if (!x || L->failed != failed) return -1;
    if (x->kind != IR_CONST || !ir_type_is_int(x->type == IRT_UNSET ? IRT_WEAK_INT : x->type))
        return 0;
    *v = x->i;
    return 1;
}

static expr *int_literal(lowerer *L, int64_t v, const stmt *at) {
    expr *n = arena_alloc(&L->scratch, sizeof *n);
    if (!n) return NULL;
    n->kind = EX_INT;
    n->line = at->line;
    n->col = at->col;
    n->ival = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    if (v >= 0) return n;
    expr *neg = arena_alloc(&L->scratch, sizeof *neg);
    if (!neg) return NULL;
    neg->kind = EX_UNARY;
    neg->line = at->line;
    neg->col = at->col;
    neg->op = "-";
    neg->a = n;
    return neg;
}

int static_for(lowerer *L, ir_block *b, const stmt *s, const expr *range_call) {
    const expr *t = s->targets[0];
    if (t->kind != EX_NAME || s->norelse || leaves_loop(s->body, s->nbody) ||
        range_call->nitems < 1 || range_call->nitems > 3 || range_call->nkw)
        return 1;
    int64_t v[3] = {0, 0, 1};
    for (int i = 0; i < range_call->nitems; i++) {
        int rc = constant_int(L, range_call->items[i], &v[range_call->nitems == 1 ? 1 : i]);
        if (rc <= 0) return rc < 0 ? -1 : 1;
    }
    if (v[2] == 0) return 1; /* the loop's own message */
    int64_t trips = v[2] > 0 ? (v[1] > v[0] ? (v[1] - v[0] + v[2] - 1) / v[2] : 0)
                             : (v[0] > v[1] ? (v[0] - v[1] - v[2] - 1) / -v[2] : 0);
    if (trips > MAX_UNROLL) return 1;
    for (int64_t k = 0; k < trips; k++) {
        stmt *set = arena_alloc(&L->scratch, sizeof *set);
        expr **targets = arena_alloc(&L->scratch, sizeof *targets);
        if (!set || !targets || !(set->value = int_literal(L, v[0] + k * v[2], s)))
            return lower_oom(L);
        set->kind = ST_ASSIGN;
        set->line = s->line;
        set->col = s->col;
        targets[0] = (expr *)t;
        set->targets = targets;
        set->ntargets = 1;
        if (lower_block(L, b, &set, 1) || lower_block(L, b, s->body, s->nbody)) return -1;
    }
    return 0;
}
