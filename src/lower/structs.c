/* structs.c - arrays of @tack.struct records, rewritten to arrays of fields.
 *
 * An array of structs reaches the kernel as a template (templates.c) whose
 * attributes are one array per field, nested structs being nested
 * templates, marked by the class constant `_tack_struct`.  Before a
 * statement is lowered its expressions are rewritten so that the rest of
 * lowering sees only template arrays:
 *
 *   x[i].f        ->  x.f[i]          (a load, store or augmented update:
 *   x[i].f.x      ->  x.f[i].x         atomic where iterations may share
 *   x[i].g.h      ->  x.g.h[i]         the element, as any array's)
 *   x.shape[d], len(x)  ->  the first field's
 *
 * The rewrite copies what it changes (in the lowerer's scratch arena); the
 * parsed function is never modified, so a device function inlined with
 * other arguments sees its own text. */
#include <stdio.h>
#include <string.h>

#include "lower_internal.h"

static const char *MARK = "_tack_struct";

static int field_of(const tack_struct *s, const char *name) {
    for (int i = 0; i < s->nfields; i++)
        if (!strcmp(s->fields[i].name, name)) return i;
    return -1;
}

int struct_is_records(const tack_struct *s) {
    int m = field_of(s, MARK);
    return m >= 0 && s->fields[m].role == TACK_FIELD_CONSTANT;
}

/* The struct name messages use: the class name less its "Array". */
static void struct_name(const tack_struct *s, char *buf, size_t size) {
    const char *n = s->class_name ? s->class_name : "?";
    size_t len = strlen(n);
    if (len > 5 && !strcmp(n + len - 5, "Array")) len -= 5;
    snprintf(buf, size, "%.*s", (int)len, n);
}

/* The template node a name or attribute chain names, without reporting
 * anything: NULL when e is no template (or a field of one). */
static tmpl_node *node_of(lowerer *L, const expr *e) {
    if (e->kind == EX_NAME) {
        const binding *b = scope_find(L->sc, e->name);
        return b && b->kind == BIND_TEMPLATE ? b->tmpl : NULL;
    }
    if (e->kind != EX_ATTR) return NULL;
    tmpl_node *n = node_of(L, e->a);
    if (!n) return NULL;
    int i = field_of(n->s, e->name);
    return i >= 0 && n->s->fields[i].role == TACK_FIELD_STRUCT ? n->sub[i] : NULL;
}

static tmpl_node *records_of(lowerer *L, const expr *e) {
    tmpl_node *n = node_of(L, e);
    return n && struct_is_records(n->s) ? n : NULL;
}

static expr *copy(lowerer *L, const expr *e) {
    expr *c = arena_alloc(&L->scratch, sizeof *c);
    if (!c) {
        lower_oom(L);
        return NULL;
    }
    *c = *e;
    return c;
}

static expr *attr(lowerer *L, expr *base, const char *name, const expr *at) {
    expr *c = arena_alloc(&L->scratch, sizeof *c);
    if (!c) {
        lower_oom(L);
        return NULL;
    }
    memset(c, 0, sizeof *c);
    c->kind = EX_ATTR;
    c->line = at->line;
    c->col = at->col;
    c->a = base;
    c->name = name;
    return c;
}

/* base.f.g...: the first field array of the records base names. */
static expr *first_field(lowerer *L, tmpl_node *n, expr *base, const expr *at) {
    for (int i = 0; i < n->s->nfields; i++) {
        const tack_field *f = &n->s->fields[i];
        if (f->role == TACK_FIELD_ARRAY) return attr(L, base, f->name, at);
        if (f->role == TACK_FIELD_STRUCT) {
            expr *sub = attr(L, base, f->name, at);
            return sub ? first_field(L, n->sub[i], sub, at) : NULL;
        }
    }
    ERR(L, at->line, at->col, "this struct has no fields");
    return NULL;
}

static expr *rewrite(lowerer *L, expr *e);

const expr *struct_dim_array(lowerer *L, const expr *arr) {
    tmpl_node *n = records_of(L, arr);
    return n ? first_field(L, n, (expr *)arr, arr) : arr;
}

/* Rewrites each of n expressions in place in a copy of the array; *changed
 * is set when any differs. */
static expr **rewrite_list(lowerer *L, expr **items, int n, int *changed) {
    expr **out = items;
    for (int i = 0; i < n; i++) {
        expr *r = rewrite(L, items[i]);
        if (!r && items[i]) return NULL;
        if (r == items[i]) continue;
        if (out == items) {
            if (!(out = arena_alloc(&L->scratch, n * sizeof *out))) {
                lower_oom(L);
                return NULL;
            }
            memcpy(out, items, n * sizeof *out);
        }
        out[i] = r;
        *changed = 1;
    }
    return out;
}

static expr *rewrite(lowerer *L, expr *e) {
    if (!e) return NULL;
    /* x[i].f: the field's array, indexed. */
    if (e->kind == EX_ATTR) {
        /* x[i].g.h: x[i].g is x.g[i] first. */
        expr *base = e->a;
        if (!(base->kind == EX_SUBSCRIPT && records_of(L, base->a)) && !(base = rewrite(L, e->a)))
            return NULL;
        tmpl_node *n = base->kind == EX_SUBSCRIPT ? records_of(L, base->a) : NULL;
        if (!n && base != e->a) {
            expr *c = copy(L, e);
            if (c) c->a = base;
            return c;
        }
        if (n) {
            char sname[128];
            struct_name(n->s, sname, sizeof sname);
            int i = field_of(n->s, e->name);
            if (i < 0 || n->s->fields[i].role == TACK_FIELD_CONSTANT) {
                ERR(L, e->line, e->col, "struct '%s' has no field '%s'", sname, e->name);
                return NULL;
            }
            int changed = 0;
            expr **idx = rewrite_list(L, base->items, base->nitems, &changed);
            expr *sub = copy(L, base);
            if (!idx || !sub || !(sub->a = attr(L, base->a, e->name, e))) return NULL;
            sub->items = idx;
            sub->line = e->line;
            sub->col = e->col;
            return sub;
        }
    }
    if (e->kind == EX_ATTR && !strcmp(e->name, "shape")) {
        tmpl_node *n = records_of(L, e->a);
        if (n) {
            expr *f = first_field(L, n, e->a, e);
            return f ? attr(L, f, "shape", e) : NULL;
        }
    }
    if (e->kind == EX_CALL && e->a->kind == EX_NAME && !strcmp(e->a->name, "len") &&
        e->nitems == 1 && !scope_find(L->sc, "len")) {
        tmpl_node *n = records_of(L, e->items[0]);
        if (n) {
            expr *c = copy(L, e);
            expr **args = arena_alloc(&L->scratch, sizeof *args);
            if (!c || !args || !(args[0] = first_field(L, n, e->items[0], e))) return lower_oom(L), NULL;
            c->items = args;
            return c;
        }
    }
    if (e->kind == EX_SUBSCRIPT) {
        tmpl_node *n = records_of(L, e->a);
        if (n) {
            char sname[128];
            struct_name(n->s, sname, sizeof sname);
            ERR(L, e->line, e->col, "an element of an array of struct '%s' is used whole here; "
                "read or write its fields (x[i].field)", sname);
            return NULL;
        }
    }
    int changed = 0;
    expr *a = rewrite(L, e->a), *b = rewrite(L, e->b), *c = rewrite(L, e->c);
    if ((e->a && !a) || (e->b && !b) || (e->c && !c)) return NULL;
    changed = a != e->a || b != e->b || c != e->c;
    expr **items = rewrite_list(L, e->items, e->nitems, &changed);
    expr **kw = rewrite_list(L, e->kw_values, e->nkw, &changed);
    if ((e->nitems && !items) || (e->nkw && !kw)) return NULL;
    if (!changed) return e;
    expr *out = copy(L, e);
    if (!out) return NULL;
    out->a = a;
    out->b = b;
    out->c = c;
    out->items = items;
    out->kw_values = kw;
    return out;
}

const stmt *struct_rewrite_stmt(lowerer *L, const stmt *s) {
    int any = 0;
    for (const scope *sc = L->sc; sc && !any; sc = sc->parent)
        for (int i = 0; i < sc->nbinds && !any; i++)
            any = sc->binds[i].kind == BIND_TEMPLATE && sc->binds[i].tmpl &&
                  struct_is_records(sc->binds[i].tmpl->s);
    if (!any) return s; /* no records in sight: nothing to copy */
    int changed = 0;
    expr *v = rewrite(L, s->value);
    if (s->value && !v) return NULL;
    changed = v != s->value;
    expr **targets = rewrite_list(L, s->targets, s->ntargets, &changed);
    if (s->ntargets && !targets) return NULL;
    if (!changed) return s;
    stmt *out = arena_alloc(&L->scratch, sizeof *out);
    if (!out) {
        lower_oom(L);
        return NULL;
    }
    *out = *s;
    out->value = v;
    out->targets = targets;
    return out;
}
