/* top_renames.c - scalar names updated after the last parallel loop.
 *
 *   s = 0.0
 *   for i in range(n):
 *       s += x[i]
 *   s /= n                   a reduction updated after the loop (Numba)
 *   out[0] = s
 *   mean = s * 2.0           a scalar assigned after the last loop
 *   return mean
 *
 * Around the loops a name is assigned once (reductions.c), and after the
 * last loop only statements with effects and the final 'return' may stand.
 * Numba users write the lines above all the same, so before the top-level
 * statements are wrapped (top_statements.c) this pass rewrites them on the
 * AST, in order:
 *
 * - a name assigned again after the last loop (`s /= n`, `s = s / n`)
 *   becomes a new name (`_tack_s1 = s / n`), which the later statements
 *   read instead of `s`: an assignment of a scalar between stages, as the
 *   language already has;
 * - the scalar assignments that end the kernel before its `return` are
 *   substituted into the returned expression (`return s * 2.0`), which
 *   kernel_results.c computes after the loops.
 *
 * Nothing changes where a statement under an `if` after the loop assigns
 * one of the renamed names (that name is local to its statement); the
 * existing rules then report what they report. */
#include <stdio.h>
#include <string.h>

#include "lower.h"

#define MAX_RENAMES 64

typedef struct renames {
    const char *from[MAX_RENAMES];
    expr *to[MAX_RENAMES]; /* the expression read instead */
    int n;
} renames;

static expr *lookup(const renames *r, const char *name) {
    for (int i = r->n - 1; i >= 0; i--)
        if (!strcmp(r->from[i], name)) return r->to[i];
    return NULL;
}

static int set(renames *r, const char *name, expr *to) {
    for (int i = 0; i < r->n; i++)
        if (!strcmp(r->from[i], name)) {
            r->to[i] = to;
            return 0;
        }
    if (r->n == MAX_RENAMES) return -1;
    r->from[r->n] = name;
    r->to[r->n++] = to;
    return 0;
}

/* e with every read of a renamed name replaced; shared where unchanged. */
static expr *subst(arena *a, const renames *r, expr *e) {
    if (!e) return NULL;
    if (e->kind == EX_NAME) {
        expr *to = lookup(r, e->name);
        return to ? to : e;
    }
    expr *x = arena_alloc(a, sizeof *x);
    if (!x) return NULL;
    *x = *e;
    if (e->a && !(x->a = subst(a, r, e->a))) return NULL;
    if (e->b && !(x->b = subst(a, r, e->b))) return NULL;
    if (e->c && !(x->c = subst(a, r, e->c))) return NULL;
    if (e->nitems) {
        if (!(x->items = arena_alloc(a, (size_t)e->nitems * sizeof *x->items))) return NULL;
        for (int i = 0; i < e->nitems; i++)
            if (!(x->items[i] = subst(a, r, e->items[i]))) return NULL;
    }
    if (e->nkw) {
        if (!(x->kw_values = arena_alloc(a, (size_t)e->nkw * sizeof *x->kw_values))) return NULL;
        for (int i = 0; i < e->nkw; i++)
            if (!(x->kw_values[i] = subst(a, r, e->kw_values[i]))) return NULL;
    }
    return x;
}

/* A target: a name stays (it is assigned, not read); a subscript's value
 * and indices are reads. */
static expr *subst_target(arena *a, const renames *r, expr *t) {
    if (t->kind == EX_NAME) return t;
    if (t->kind == EX_TUPLE) {
        expr *x = arena_alloc(a, sizeof *x);
        if (!x) return NULL;
        *x = *t;
        x->items = arena_alloc(a, (size_t)t->nitems * sizeof *x->items);
        if (!x->items) return NULL;
        for (int i = 0; i < t->nitems; i++)
            if (!(x->items[i] = subst_target(a, r, t->items[i]))) return NULL;
        return x;
    }
    return subst(a, r, t);
}

static stmt **subst_body(arena *a, const renames *r, stmt **body, int n);

static stmt *subst_stmt(arena *a, const renames *r, stmt *s) {
    stmt *x = arena_alloc(a, sizeof *x);
    if (!x) return NULL;
    *x = *s;
    if (s->value && !(x->value = subst(a, r, s->value))) return NULL;
    if (s->ntargets) {
        if (!(x->targets = arena_alloc(a, (size_t)s->ntargets * sizeof *x->targets))) return NULL;
        for (int i = 0; i < s->ntargets; i++)
            if (!(x->targets[i] = s->kind == ST_FOR ? s->targets[i] : subst_target(a, r, s->targets[i])))
                return NULL;
    }
    if (s->nbody && !(x->body = subst_body(a, r, s->body, s->nbody))) return NULL;
    if (s->norelse && !(x->orelse = subst_body(a, r, s->orelse, s->norelse))) return NULL;
    return x;
}

static stmt **subst_body(arena *a, const renames *r, stmt **body, int n) {
    stmt **out = arena_alloc(a, (size_t)n * sizeof *out);
    if (!out) return NULL;
    for (int i = 0; i < n; i++)
        if (!(out[i] = subst_stmt(a, r, body[i]))) return NULL;
    return out;
}

static int assigns_name(const expr *t, const char *name) {
    if (t->kind == EX_NAME) return !strcmp(t->name, name);
    if (t->kind == EX_TUPLE)
        for (int i = 0; i < t->nitems; i++)
            if (assigns_name(t->items[i], name)) return 1;
    return 0;
}

/* Whether a statement nested in body assigns `name` (or loops over it). */
static int nested_assigns(stmt *const *body, int n, const char *name) {
    for (int i = 0; i < n; i++) {
        const stmt *s = body[i];
        for (int t = 0; t < s->ntargets; t++)
            if (assigns_name(s->targets[t], name)) return 1;
        if (nested_assigns(s->body, s->nbody, name) || nested_assigns(s->orelse, s->norelse, name))
            return 1;
    }
    return 0;
}

/* Whether a top-level statement before `end` assigns `name`. */
static int assigned_before(const func_def *d, int end, const char *name) {
    for (int i = 0; i < end; i++) {
        const stmt *s = d->body[i];
        if (s->kind == ST_FOR) continue;
        for (int t = 0; t < s->ntargets; t++)
            if (assigns_name(s->targets[t], name)) return 1;
    }
    return 0;
}

/* A top-level `name = v` or `name op= v`: the name, else NULL. */
static const char *scalar_target(const stmt *s) {
    if ((s->kind != ST_ASSIGN && s->kind != ST_AUGASSIGN) || s->ntargets != 1) return NULL;
    return s->targets[0]->kind == EX_NAME ? s->targets[0]->name : NULL;
}

static expr *name_expr(arena *a, const char *name, int line, int col) {
    expr *e = arena_alloc(a, sizeof *e);
    if (!e) return NULL;
    memset(e, 0, sizeof *e);
    e->kind = EX_NAME;
    e->name = name;
    e->line = line;
    e->col = col;
    return e;
}

/* `name op= v` read as the value `name op v`. */
static expr *augmented_value(arena *a, const stmt *s) {
    if (s->kind != ST_AUGASSIGN) return s->value;
    expr *e = arena_alloc(a, sizeof *e);
    if (!e) return NULL;
    memset(e, 0, sizeof *e);
    e->kind = EX_BINOP;
    e->op = s->op;
    e->line = s->line;
    e->col = s->col;
    e->a = s->targets[0];
    e->b = s->value;
    return e;
}

int lower_rename_top_scalars(func_def *d, arena *a) {
    int last = -1;
    for (int i = 0; i < d->nbody; i++)
        if (d->body[i]->kind == ST_FOR) last = i;
    if (last < 0 || last == d->nbody - 1) return 0;
    /* Renamed names must not be assigned under a statement after the loop. */
    for (int i = last + 1; i < d->nbody; i++) {
        const stmt *s = d->body[i];
        const char *name = scalar_target(s);
        if (name && assigned_before(d, i, name))
            for (int k = last + 1; k < d->nbody; k++)
                if (nested_assigns(d->body[k]->body, d->body[k]->nbody, name) ||
                    nested_assigns(d->body[k]->orelse, d->body[k]->norelse, name))
                    return 0;
    }
    int has_return = d->body[d->nbody - 1]->kind == ST_RETURN;
    /* The scalar assignments that end the kernel (before its return). */
    int tail = d->nbody - (has_return ? 1 : 0);
    if (has_return)
        while (tail > last + 1 && d->body[tail - 1]->kind != ST_FOR && scalar_target(d->body[tail - 1]))
            tail--;
    stmt **out = arena_alloc(a, (size_t)d->nbody * sizeof *out);
    if (!out) return -1;
    int n = 0, fresh = 0, changed = 0;
    renames r = {.n = 0};
    for (int i = 0; i < d->nbody; i++) {
        stmt *s = d->body[i];
        if (i <= last) {
            out[n++] = s;
            continue;
        }
        const char *name = scalar_target(s);
        if (name && i >= tail && has_return && i < d->nbody - 1) {
            /* folded into the return */
            expr *v = subst(a, &r, augmented_value(a, s));
            if (!v || set(&r, name, v)) return -1;
            changed = 1;
            continue;
        }
        if (name && (s->kind == ST_AUGASSIGN || assigned_before(d, i, name) || lookup(&r, name))) {
            /* assigned again: a new name from here on */
            char *alias = arena_alloc(a, strlen(name) + 24);
            expr *v = subst(a, &r, augmented_value(a, s));
            stmt *x = arena_alloc(a, sizeof *x);
            expr **targets = arena_alloc(a, sizeof *targets);
            if (!alias || !v || !x || !targets) return -1;
            snprintf(alias, strlen(name) + 24, "_tack_%s%d", name, ++fresh);
            if (!(targets[0] = name_expr(a, alias, s->targets[0]->line, s->targets[0]->col)))
                return -1;
            *x = *s;
            x->kind = ST_ASSIGN;
            x->op = NULL;
            x->targets = targets;
            x->ntargets = 1;
            x->value = v;
            out[n++] = x;
            expr *use = name_expr(a, alias, s->line, s->col);
            if (!use || set(&r, name, use)) return -1;
            changed = 1;
            continue;
        }
        stmt *x = r.n ? subst_stmt(a, &r, s) : s;
        if (!x) return -1;
        out[n++] = x;
    }
    if (!changed) return 0;
    d->body = out;
    d->nbody = n;
    return 0;
}
