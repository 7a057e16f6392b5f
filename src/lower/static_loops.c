/* Taichi's compile-time loops: `for k in tack.static(range(3)):` (also
 * `static(...)` imported from tack) unrolls while lowering.  Each copy of
 * the body starts with `k = <the value>`, so indices built from k are
 * constants there, as Taichi's ti.static gives.  A range whose bounds are
 * not integer constants, a body with break/continue (which act on the loop
 * itself), or more than MAX_UNROLL copies lowers as the ordinary loop over
 * the same range: the same values in the same order.
 * `for i, j in tack.static(tack.ndindex(3, 3)):` (Taichi's
 * ti.static(ti.ndrange(3, 3))) unrolls every index tuple in row-major
 * order; it has no loop to fall back on, so its extents must be
 * constants.  `for e in tack.static(TABLE):` over a module-level tuple
 * (Taichi's ti.static(spring_offsets)) unrolls with `e = TABLE[k]`. */
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

/* `name = v` lowered into b. */
static int set_name(lowerer *L, ir_block *b, const expr *name, int64_t v, const stmt *at) {
    stmt *set = arena_alloc(&L->scratch, sizeof *set);
    expr **targets = arena_alloc(&L->scratch, sizeof *targets);
    if (!set || !targets || !(set->value = int_literal(L, v, at))) return lower_oom(L);
    set->kind = ST_ASSIGN;
    set->line = at->line;
    set->col = at->col;
    targets[0] = (expr *)name;
    set->targets = targets;
    set->ntargets = 1;
    return lower_block(L, b, &set, 1);
}

int static_ndindex(lowerer *L, ir_block *b, const stmt *s, const expr *call) {
    const expr *t = s->targets[0];
    int n = call->nitems;
    if (n < 1 || n > 3 || call->nkw) {
        ERR(L, call->line, call->col, "tack.ndindex() takes 1 to 3 extents, got %d", n);
        return -1;
    }
    int nvars = t->kind == EX_TUPLE ? t->nitems : 1;
    if (nvars != n) {
        ERR(L, t->line, t->col, "tack.ndindex() with %d extent%s needs %d loop variables, got %d",
            n, n == 1 ? "" : "s", n, nvars);
        return -1;
    }
    for (int d = 0; d < n; d++)
        if ((t->kind == EX_TUPLE ? t->items[d] : t)->kind != EX_NAME) {
            ERR(L, t->line, t->col, "tack.ndindex() loop variables must be names");
            return -1;
        }
    if (s->norelse || leaves_loop(s->body, s->nbody)) {
        ERR(L, s->line, s->col, "a tack.static(tack.ndindex(...)) loop is unrolled: it cannot "
            "hold 'break' or 'continue'");
        return -1;
    }
    int64_t ext[3] = {1, 1, 1}, total = 1;
    for (int d = 0; d < n; d++) {
        int rc = constant_int(L, call->items[d], &ext[d]);
        if (rc < 0) return -1;
        if (!rc || ext[d] < 0 || ext[d] > MAX_UNROLL) {
            ERR(L, call->items[d]->line, call->items[d]->col, "tack.static(tack.ndindex(...)) "
                "is unrolled while compiling: its extents must be integer constants of at most %d",
                MAX_UNROLL);
            return -1;
        }
        total *= ext[d];
    }
    if (total > MAX_UNROLL) {
        ERR(L, call->line, call->col, "tack.static(tack.ndindex(...)) unrolls at most %d index "
            "tuples, this one has %lld", MAX_UNROLL, (long long)total);
        return -1;
    }
    for (int64_t k = 0; k < total; k++) {
        int64_t rest = k;
        for (int d = n - 1; d >= 0; d--) {
            const expr *name = t->kind == EX_TUPLE ? t->items[d] : t;
            if (set_name(L, b, name, rest % ext[d], s)) return -1;
            rest /= ext[d];
        }
        if (lower_block(L, b, s->body, s->nbody)) return -1;
    }
    return 0;
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
    for (int64_t k = 0; k < trips; k++)
        if (set_name(L, b, t, v[0] + k * v[2], s) || lower_block(L, b, s->body, s->nbody))
            return -1;
    return 0;
}

int static_table(lowerer *L, ir_block *b, const stmt *s, const expr *table) {
    const expr *t = s->targets[0];
    if (t->kind != EX_NAME) {
        ERR(L, t->line, t->col, "a tack.static() loop over a table binds one name");
        return -1;
    }
    /* len(TABLE), a constant where the table is one */
    expr *len = arena_alloc(&L->scratch, sizeof *len), *callee = arena_alloc(&L->scratch, sizeof *callee);
    expr **args = arena_alloc(&L->scratch, sizeof *args);
    if (!len || !callee || !args) return lower_oom(L);
    *callee = (expr){.kind = EX_NAME, .line = table->line, .col = table->col, .name = "len"};
    args[0] = (expr *)table;
    *len = (expr){.kind = EX_CALL, .line = table->line, .col = table->col, .a = callee, .items = args,
                  .nitems = 1};
    int64_t n;
    int rc = constant_int(L, len, &n);
    if (rc < 0) return -1;
    if (!rc || n > MAX_UNROLL) {
        ERR(L, table->line, table->col, "tack.static(%s) unrolls a module-level tuple of at most %d "
            "elements", table->name, MAX_UNROLL);
        return -1;
    }
    for (int64_t k = 0; k < n; k++) {
        stmt *set = arena_alloc(&L->scratch, sizeof *set);
        expr **targets = arena_alloc(&L->scratch, sizeof *targets);
        expr *element = arena_alloc(&L->scratch, sizeof *element);
        expr **index = arena_alloc(&L->scratch, sizeof *index);
        if (!set || !targets || !element || !index || !(index[0] = int_literal(L, k, s)))
            return lower_oom(L);
        *element = (expr){.kind = EX_SUBSCRIPT, .line = table->line, .col = table->col,
                          .a = (expr *)table, .items = index, .nitems = 1};
        targets[0] = (expr *)t;
        *set = (stmt){.kind = ST_ASSIGN, .line = s->line, .col = s->col, .targets = targets,
                      .ntargets = 1, .value = element};
        if (lower_block(L, b, &set, 1) || lower_block(L, b, s->body, s->nbody)) return -1;
    }
    return 0;
}
