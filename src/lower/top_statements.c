/* top_statements.c - statements with effects around the parallel loops.
 *
 *   s = 0.0
 *   for i in range(n):        a launch
 *       s += x[i]
 *   out[0] = s                a store after the loop
 *   f(out)                    a device function call, an atomic, an if...
 *
 * Taichi's rule: a top-level statement runs once, in order.  Each run of
 * consecutive such statements (anything but a scalar assignment 'name =
 * value', 'pass', a loop or the final 'return') is wrapped, on the AST,
 * in a one-iteration loop 'for _ in range(1):', which is a stage of its
 * own like any other top-level loop: it is launched after the loops above
 * it finish (so it reads their reductions as a later loop's body does)
 * and before the ones below it start.  Scalar names assigned around the
 * loops keep their rules (reductions.c); a name assigned inside a wrapped
 * statement (under an 'if', say) is local to it. */
#include <stdio.h>
#include <string.h>

#include "lower.h"

/* Whether a top-level statement is one reductions.c handles itself. */
static int stays(const func_def *d, int i) {
    const stmt *s = d->body[i];
    switch (s->kind) {
    case ST_FOR: case ST_PASS: return 1;
    case ST_RETURN: return 1; /* checked (last, after the loops) there */
    case ST_ASSIGN:
        for (int t = 0; t < s->ntargets; t++) {
            const expr *e = s->targets[t];
            if (e->kind == EX_TUPLE)
                for (int m = 0; m < e->nitems; m++)
                    if (e->items[m]->kind != EX_NAME) return 0;
            if (e->kind != EX_NAME && e->kind != EX_TUPLE) return 0;
        }
        return 1;
    case ST_AUGASSIGN: return s->targets[0]->kind == EX_NAME;
    default: return 0;
    }
}

static expr *new_expr(arena *a, expr_kind k, int line, int col) {
    expr *e = arena_alloc(a, sizeof *e);
    if (!e) return NULL;
    memset(e, 0, sizeof *e);
    e->kind = k;
    e->line = line;
    e->col = col;
    return e;
}

/* for _tack_once in range(1): body[from..to) */
static stmt *once_loop(arena *a, stmt **body, int n) {
    int line = body[0]->line, col = body[0]->col;
    stmt *f = arena_alloc(a, sizeof *f);
    expr **targets = arena_alloc(a, sizeof *targets);
    expr **args = arena_alloc(a, sizeof *args);
    stmt **inner = arena_alloc(a, (size_t)n * sizeof *inner);
    expr *var = new_expr(a, EX_NAME, line, col), *call = new_expr(a, EX_CALL, line, col),
         *callee = new_expr(a, EX_NAME, line, col), *one = new_expr(a, EX_INT, line, col);
    if (!f || !targets || !args || !inner || !var || !call || !callee || !one) return NULL;
    memset(f, 0, sizeof *f);
    var->name = "_tack_once";
    callee->name = "range";
    one->ival = 1;
    args[0] = one;
    call->a = callee;
    call->items = args;
    call->nitems = 1;
    targets[0] = var;
    memcpy(inner, body, (size_t)n * sizeof *inner);
    f->kind = ST_FOR;
    f->line = line;
    f->col = col;
    f->targets = targets;
    f->ntargets = 1;
    f->value = call;
    f->body = inner;
    f->nbody = n;
    return f;
}

/* Whether `name` is combined into (name op= v, name = min/max(name, v))
 * somewhere in body: a reduction, returned as it is. */
static int combined_in(stmt *const *body, int n, const char *name) {
    for (int i = 0; i < n; i++) {
        const stmt *s = body[i];
        const expr *t = s->ntargets == 1 ? s->targets[0] : NULL;
        if (t && t->kind == EX_NAME && !strcmp(t->name, name)) {
            if (s->kind == ST_AUGASSIGN) return 1;
            const expr *v = s->value;
            /* min(s, v), or tack.min(c, v) as vectors are written (reductions.c) */
            const char *fn = !v || v->kind != EX_CALL ? NULL
                             : v->a->kind == EX_NAME ? v->a->name
                             : v->a->kind == EX_ATTR && v->a->a->kind == EX_NAME &&
                                       !strcmp(v->a->a->name, "tack") ? v->a->name : NULL;
            if (s->kind == ST_ASSIGN && fn && (!strcmp(fn, "min") || !strcmp(fn, "max")) && v->nitems == 2 &&
                v->items[0]->kind == EX_NAME && !strcmp(v->items[0]->name, name))
                return 1;
        }
        if (combined_in(s->body, s->nbody, name) || combined_in(s->orelse, s->norelse, name))
            return 1;
    }
    return 0;
}

static int is_reduction_name(const func_def *d, const expr *e) {
    if (e->kind != EX_NAME) return 0;
    int assigned = 0;
    for (int i = 0; i < d->nbody; i++) {
        const stmt *s = d->body[i];
        if (s->kind == ST_ASSIGN && s->ntargets == 1 && s->targets[0]->kind == EX_NAME &&
            !strcmp(s->targets[0]->name, e->name))
            assigned = 1;
        if (s->kind == ST_FOR && assigned && combined_in(s->body, s->nbody, e->name)) return 1;
    }
    return 0;
}

/* `return s / n, m + math.log(s)`: each value that is not a reduction's
 * name becomes a hidden reduction '_tack_resultK' (started before the
 * last loop, its type chosen by kernel_results.c), added to once in a
 * last one-iteration stage after every loop, and returned by name:
 *
 *   _tack_result0 = 0
 *   for _tack_once in range(1):
 *       _tack_result0 += s / n
 *   return _tack_result0, ... */
static int wrap_return(func_def *d, arena *a) {
    stmt *ret = d->nbody ? d->body[d->nbody - 1] : NULL;
    if (!ret || ret->kind != ST_RETURN || !ret->value) return 0;
    expr *v = ret->value;
    int n = v->kind == EX_TUPLE ? v->nitems : 1, k = 0;
    expr **items = arena_alloc(a, (size_t)n * sizeof *items);
    stmt **adds = arena_alloc(a, (size_t)n * sizeof *adds);
    if (!items || !adds) return -1;
    stmt *start = NULL;
    for (int i = 0; i < n; i++) {
        expr *item = v->kind == EX_TUPLE ? v->items[i] : v;
        items[i] = item;
        if (is_reduction_name(d, item) || item->kind == EX_TUPLE) continue;
        char *name = arena_alloc(a, 24);
        expr *target = new_expr(a, EX_NAME, item->line, item->col);
        expr **targets = arena_alloc(a, sizeof *targets);
        stmt *add = arena_alloc(a, sizeof *add);
        if (!name || !target || !targets || !add) return -1;
        snprintf(name, 24, "_tack_result%d", k);
        target->name = name;
        targets[0] = target;
        memset(add, 0, sizeof *add);
        add->kind = ST_AUGASSIGN;
        add->line = item->line;
        add->col = item->col;
        add->targets = targets;
        add->ntargets = 1;
        add->op = "+";
        add->value = item;
        adds[k++] = add;
        expr *use = new_expr(a, EX_NAME, item->line, item->col);
        if (!use) return -1;
        use->name = name;
        items[i] = use;
    }
    if (!k) return 0;
    /* The starts: one statement each, before the new last loop. */
    int m = d->nbody - 1;
    stmt **grown = arena_alloc(a, (size_t)(d->nbody + k + 1) * sizeof *grown);
    if (!grown) return -1;
    memcpy(grown, d->body, (size_t)m * sizeof *grown);
    for (int i = 0; i < k; i++) {
        start = arena_alloc(a, sizeof *start);
        expr **targets = arena_alloc(a, sizeof *targets);
        expr *name = new_expr(a, EX_NAME, ret->line, ret->col);
        expr *zero = new_expr(a, EX_INT, ret->line, ret->col);
        if (!start || !targets || !name || !zero) return -1;
        memset(start, 0, sizeof *start);
        name->name = adds[i]->targets[0]->name;
        targets[0] = name;
        start->kind = ST_ASSIGN;
        start->line = ret->line;
        start->col = ret->col;
        start->targets = targets;
        start->ntargets = 1;
        start->value = zero;
        grown[m++] = start;
    }
    stmt *once = once_loop(a, adds, k);
    if (!once) return -1;
    grown[m++] = once;
    if (v->kind == EX_TUPLE) {
        expr *t = new_expr(a, EX_TUPLE, v->line, v->col);
        if (!t) return -1;
        t->items = items;
        t->nitems = n;
        v = t;
    } else {
        v = items[0];
    }
    stmt *r = arena_alloc(a, sizeof *r);
    if (!r) return -1;
    *r = *ret;
    r->value = v;
    grown[m++] = r;
    d->body = grown;
    d->nbody = m;
    return 0;
}

/* Whether e names any of the n names of t (a tuple of names). */
static int mentions(const expr *e, const expr *t) {
    if (!e) return 0;
    if (e->kind == EX_NAME)
        for (int m = 0; m < t->nitems; m++)
            if (!strcmp(e->name, t->items[m]->name)) return 1;
    if (mentions(e->a, t) || mentions(e->b, t) || mentions(e->c, t)) return 1;
    for (int i = 0; i < e->nitems; i++)
        if (mentions(e->items[i], t)) return 1;
    for (int i = 0; i < e->nkw; i++)
        if (mentions(e->kw_values[i], t)) return 1;
    return 0;
}

/* The k-th value of a top-level unpacking `a, b = value`, or NULL when the
 * statement is not one this splits: a tuple of as many values that do not
 * read the names assigned (Python evaluates them all first), or an array's
 * shape (`n, m = x.shape` is x.shape[0], x.shape[1]). */
static expr *unpacked(arena *a, const stmt *s, int k, int *oom) {
    const expr *t = s->targets[0], *v = s->value;
    if (v->kind == EX_TUPLE) return v->nitems == t->nitems && !mentions(v, t) ? v->items[k] : NULL;
    if (v->kind != EX_ATTR || strcmp(v->name, "shape") || mentions(v, t)) return NULL;
    expr *index = new_expr(a, EX_INT, v->line, v->col), *sub = new_expr(a, EX_SUBSCRIPT, v->line, v->col);
    expr **items = arena_alloc(a, sizeof *items);
    if (!index || !sub || !items) {
        *oom = 1;
        return NULL;
    }
    index->ival = (uint64_t)k;
    items[0] = index;
    sub->a = (expr *)v;
    sub->items = items;
    sub->nitems = 1;
    return sub;
}

/* Whether s is `a, b[, ...] = value` with distinct names on the left. */
static int splits(const stmt *s) {
    if (s->kind != ST_ASSIGN || s->ntargets != 1 || s->targets[0]->kind != EX_TUPLE) return 0;
    const expr *t = s->targets[0];
    if (t->nitems < 2) return 0;
    for (int m = 0; m < t->nitems; m++) {
        if (t->items[m]->kind != EX_NAME) return 0;
        for (int q = 0; q < m; q++)
            if (!strcmp(t->items[q]->name, t->items[m]->name)) return 0;
    }
    return 1;
}

/* `a, b = 1.0, 2.0` and `n, m = x.shape` around the loops as one scalar
 * assignment per name (reductions.c takes `name = value` only). */
static int split_top_unpacks(func_def *d, arena *a) {
    int grow = 0;
    for (int i = 0; i < d->nbody; i++) {
        const stmt *s = d->body[i];
        int oom = 0;
        if (splits(s) && unpacked(a, s, 0, &oom)) grow += s->targets[0]->nitems - 1;
        if (oom) return -1;
    }
    if (!grow) return 0;
    stmt **out = arena_alloc(a, (size_t)(d->nbody + grow) * sizeof *out);
    if (!out) return -1;
    int n = 0;
    for (int i = 0; i < d->nbody; i++) {
        stmt *s = d->body[i];
        int oom = 0;
        if (!splits(s) || !unpacked(a, s, 0, &oom)) {
            if (oom) return -1;
            out[n++] = s;
            continue;
        }
        const expr *t = s->targets[0];
        for (int m = 0; m < t->nitems; m++) {
            stmt *one = arena_alloc(a, sizeof *one);
            expr **target = arena_alloc(a, sizeof *target);
            expr *value = unpacked(a, s, m, &oom);
            if (!one || !target || !value) return -1;
            *one = *s;
            target[0] = t->items[m];
            one->targets = target;
            one->value = value;
            out[n++] = one;
        }
    }
    d->body = out;
    d->nbody = n;
    return 0;
}

int lower_wrap_top_statements(func_def *d, arena *a) {
    if (split_top_unpacks(d, a)) return -1;
    if (lower_rename_top_scalars(d, a)) return -1; /* s /= n after the loop (top_renames.c) */
    int loops = 0;
    for (int i = 0; i < d->nbody; i++) loops += d->body[i]->kind == ST_FOR;
    if (!loops) return 0; /* reductions.c asks for the launch loop */
    stmt **out = arena_alloc(a, (size_t)(d->nbody ? d->nbody : 1) * sizeof *out);
    if (!out) return -1;
    int n = 0;
    for (int i = 0; i < d->nbody;) {
        if (stays(d, i)) {
            out[n++] = d->body[i++];
            continue;
        }
        int j = i;
        while (j < d->nbody && !stays(d, j)) j++;
        stmt *f = once_loop(a, d->body + i, j - i);
        if (!f) return -1;
        out[n++] = f;
        i = j;
    }
    d->body = out;
    d->nbody = n;
    return wrap_return(d, a);
}
