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
 * A whole record is a value too (Warp's `p = particles[i]`): a struct
 * local `p` is a BIND_STRUCT binding whose fields live in ordinary locals
 * named "p.pos", "p.inner.h" (a dot no Python name holds), so
 *
 *   p = x[i]      ->  p.pos = x.pos[i]; p.vel = x.vel[i]; ...
 *   x[j] = p      ->  x.pos[j] = p.pos; ...   (also x[j] = x[i], q = p)
 *   p.pos         ->  the local "p.pos"
 *   f(p), f(x[i]) ->  the device function's own copy of each field
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
void struct_name(const tack_struct *s, char *buf, size_t size) {
    const char *n = s->class_name ? s->class_name : "?";
    size_t len = strlen(n);
    if (len > 5 && !strcmp(n + len - 5, "Array")) len -= 5;
    if (len > 5 && !strncmp(n + len - 5, "Value", 5)) len -= 5; /* ...ValueArray: by value */
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

/* A new expression node of `kind` at `at`'s position, zeroed otherwise. */
static expr *node(lowerer *L, expr_kind kind, const expr *at) {
    expr *c = arena_alloc(&L->scratch, sizeof *c);
    if (!c) return lower_oom(L), NULL;
    memset(c, 0, sizeof *c);
    c->kind = kind;
    c->line = at->line;
    c->col = at->col;
    return c;
}

/* base[items] */
static expr *subscript(lowerer *L, expr *base, expr **items, int n, const expr *at) {
    expr *c = node(L, EX_SUBSCRIPT, at);
    if (c) {
        c->a = base;
        c->items = items;
        c->nitems = n;
    }
    return c;
}

/* A record passed to the kernel by value arrives as a one-element array of
 * records marked `_tack_struct_value` (python/tack/_structs.py): its name
 * stands for element 0.  The name's `[0]`, or NULL when e is none. */
static expr *value_record(lowerer *L, const expr *e) {
    if (e->kind != EX_NAME) return NULL;
    tmpl_node *n = records_of(L, e);
    int m = n ? field_of(n->s, "_tack_struct_value") : -1;
    if (m < 0 || n->s->fields[m].role != TACK_FIELD_CONSTANT) return NULL;
    expr *zero = node(L, EX_INT, e), **items = arena_alloc(&L->scratch, sizeof *items);
    if (!zero || !items) return lower_oom(L), NULL;
    items[0] = zero;
    return subscript(L, (expr *)e, items, 1, e);
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
    expr *c = node(L, EX_ATTR, at);
    if (c) {
        c->a = base;
        c->name = name;
    }
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

/* Where a record value lives: in an array of records (x[i], x[i].inner:
 * the field arrays under `base`, indexed by `items`) or in locals (p,
 * p.inner: the locals "prefix.field"). */
typedef struct record_ref {
    tmpl_node *node; /* its layout */
    expr *base;      /* an array's: the records template the fields hang off */
    expr **items;
    int nitems;
    const char *prefix; /* a local's */
} record_ref;
static int record_ref_of(lowerer *L, const expr *e, record_ref *r);
static expr *local_field(lowerer *L, const char *prefix, const char *field, const expr *at);

static expr *rewrite(lowerer *L, expr *e) {
    if (!e) return NULL;
    expr *v = value_record(L, e);
    if (v) e = v; /* params -> params[0] */
    if (e->kind == EX_CALL) { /* a record passed whole stays whole: struct_bind_argument */
        int changed = 0;
        expr *callee = rewrite(L, e->a);
        if (!callee) return NULL;
        expr **items = e->nitems ? arena_alloc(&L->scratch, e->nitems * sizeof *items) : NULL;
        if (e->nitems && !items) return lower_oom(L), NULL;
        for (int i = 0; i < e->nitems; i++) {
            int k = record_ref_of(L, e->items[i], NULL);
            if (k < 0 || (!k && !(items[i] = rewrite(L, e->items[i])))) return NULL;
            if (k) items[i] = e->items[i];
            changed |= items[i] != e->items[i];
        }
        expr **kw = rewrite_list(L, e->kw_values, e->nkw, &changed);
        if (e->nkw && !kw) return NULL;
        if (!changed && callee == e->a) return e;
        expr *out = copy(L, e);
        if (!out) return NULL;
        out->a = callee;
        out->items = items;
        out->kw_values = kw;
        return out;
    }
    if (e->kind == EX_ATTR) { /* p.f of a struct local: the local "p.f" */
        record_ref r;
        int k = record_ref_of(L, e->a, &r);
        if (k < 0) return NULL;
        if (k && record_ref_of(L, e, NULL) == 0 && r.prefix) return local_field(L, r.prefix, e->name, e);
    }
    /* x[i].f: the field's array, indexed. */
    if (e->kind == EX_ATTR) {
        /* x[i].g.h: x[i].g is x.g[i] first. */
        expr *base = e->a, *by_value = value_record(L, base);
        if (by_value) base = by_value; /* p.f of a record passed by value: p[0].f */
        else if (!(base->kind == EX_SUBSCRIPT && records_of(L, base->a)) && !(base = rewrite(L, e->a)))
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
    if (e->kind == EX_ATTR) {
        record_ref r;
        if (record_ref_of(L, e, &r) == 1) {
            ERR(L, e->line, e->col, "the record '%s' is used whole here; read its fields, assign "
                "it or pass it to a device function", e->name);
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
            any = (sc->binds[i].kind == BIND_TEMPLATE && sc->binds[i].tmpl &&
                   struct_is_records(sc->binds[i].tmpl->s)) ||
                  sc->binds[i].kind == BIND_STRUCT;
    if (!any) return s; /* no records in sight: nothing to copy */
    int changed = 0;
    expr *v = rewrite(L, s->value);
    if (s->value && !v) return NULL;
    changed = v != s->value;
    expr **targets;
    if (s->kind == ST_ASSIGN && s->value->kind == EX_CALL) {
        /* x[j] = f(...): a record's target stays whole (struct_assign_call) */
        targets = arena_alloc(&L->scratch, s->ntargets * sizeof *targets);
        if (!targets) return lower_oom(L), NULL;
        for (int t = 0; t < s->ntargets; t++) {
            int k = record_ref_of(L, s->targets[t], NULL);
            if (k < 0 || (!k && !(targets[t] = rewrite(L, s->targets[t])))) return NULL;
            if (k) targets[t] = s->targets[t];
            changed |= targets[t] != s->targets[t];
        }
    } else {
        targets = rewrite_list(L, s->targets, s->ntargets, &changed);
    }
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

/* ---- whole records as values ---- */


static const char *joined(lowerer *L, const char *a, const char *b) {
    size_t n = strlen(a) + strlen(b) + 2;
    char *t = arena_alloc(&L->scratch, n);
    if (!t) return lower_oom(L), NULL;
    snprintf(t, n, "%s.%s", a, b);
    return t;
}

static expr *name_expr(lowerer *L, const char *name, const expr *at) {
    expr *c = node(L, EX_NAME, at);
    if (c) c->name = name;
    return c;
}

static expr *local_field(lowerer *L, const char *prefix, const char *field, const expr *at) {
    const char *n = joined(L, prefix, field);
    return n ? name_expr(L, n, at) : NULL;
}

/* 1 when e is a whole record (filling *r when r is given), 0 when not,
 * -1 after an error (a field the struct lacks). */
static int record_ref_of(lowerer *L, const expr *e, record_ref *r) {
    record_ref tmp;
    if (!r) r = &tmp;
    memset(r, 0, sizeof *r);
    expr *v = value_record(L, e);
    if (v) e = v; /* a record passed by value: element 0 */
    if (e->kind == EX_NAME) {
        const binding *b = scope_find(L->sc, e->name);
        if (!b || b->kind != BIND_STRUCT) return 0;
        r->node = b->tmpl;
        r->prefix = e->name;
        return 1;
    }
    if (e->kind == EX_SUBSCRIPT) {
        tmpl_node *n = records_of(L, e->a);
        if (!n) return 0;
        r->node = n;
        r->base = e->a;
        r->items = e->items;
        r->nitems = e->nitems;
        return 1;
    }
    if (e->kind != EX_ATTR) return 0;
    int k = record_ref_of(L, e->a, r);
    if (k <= 0) return k;
    int i = field_of(r->node->s, e->name);
    if (i < 0 || r->node->s->fields[i].role == TACK_FIELD_CONSTANT) {
        char sname[128];
        struct_name(r->node->s, sname, sizeof sname);
        ERR(L, e->line, e->col, "struct '%s' has no field '%s'", sname, e->name);
        return -1;
    }
    if (r->node->s->fields[i].role != TACK_FIELD_STRUCT) return 0; /* a field's value */
    if (r->prefix && !(r->prefix = joined(L, r->prefix, e->name))) return -1;
    if (r->base && !(r->base = attr(L, r->base, e->name, e))) return -1;
    r->node = r->node->sub[i];
    return 1;
}

/* The expression reading (or naming, as a target) field i of r. */
static expr *field_expr(lowerer *L, const record_ref *r, const char *f, const expr *at) {
    if (r->prefix) return local_field(L, r->prefix, f, at);
    /* x[i].f as a user writes it: rewrite() makes it x.f[i] (and a record
     * passed by value, p[0].f, p.f[0]) */
    expr *sub = subscript(L, r->base, r->items, r->nitems, at);
    return sub ? attr(L, sub, f, at) : NULL;
}

/* Two layouts hold the same fields (records of one struct class), matched
 * by name: an array's fields come sorted with its class constants among
 * them, a constructor's in declaration order. */
static int same_layout(const tmpl_node *a, const tmpl_node *b) {
    char na[128], nb[128];
    struct_name(a->s, na, sizeof na);
    struct_name(b->s, nb, sizeof nb);
    if (strcmp(na, nb)) return 0;
    int count_a = 0, count_b = 0;
    for (int i = 0; i < b->s->nfields; i++) count_b += b->s->fields[i].role != TACK_FIELD_CONSTANT;
    for (int i = 0; i < a->s->nfields; i++) {
        const tack_field *fa = &a->s->fields[i];
        if (fa->role == TACK_FIELD_CONSTANT) continue;
        count_a++;
        int j = field_of(b->s, fa->name);
        if (j < 0 || b->s->fields[j].role != fa->role) return 0;
        if (fa->role == TACK_FIELD_STRUCT && !same_layout(a->sub[i], b->sub[j])) return 0;
    }
    return count_a == count_b;
}

/* Statements being built: a growing list in the scratch arena. */
typedef struct stmt_list {
    const stmt **items;
    int n, cap;
} stmt_list;

static int list_push(lowerer *L, stmt_list *l, stmt *s) {
    if (!s) return -1;
    if (l->n == l->cap) {
        int cap = l->cap ? 2 * l->cap : 8;
        const stmt **t = arena_grow(&L->scratch, (void *)l->items, l->n, cap, sizeof *t);
        if (!t) return lower_oom(L);
        l->items = t;
        l->cap = cap;
    }
    l->items[l->n++] = s;
    return 0;
}

static stmt *assign_stmt(lowerer *L, expr *target, expr *value, const stmt *at) {
    stmt *s = arena_alloc(&L->scratch, sizeof *s);
    expr **t = arena_alloc(&L->scratch, sizeof *t);
    if (!s || !t || !target || !value) return target && value ? (lower_oom(L), NULL) : NULL;
    memset(s, 0, sizeof *s);
    s->kind = ST_ASSIGN;
    s->line = at->line;
    s->col = at->col;
    t[0] = target;
    s->targets = t;
    s->ntargets = 1;
    s->value = value;
    return s;
}

/* Indices other than names and literals are computed once, before the
 * fields move: x[rand(...)] must not draw once per field. */
static int hold_indices(lowerer *L, record_ref *r, stmt_list *out, const stmt *at) {
    if (!r->base) return 0;
    expr **items = arena_alloc(&L->scratch, r->nitems * sizeof *items);
    if (!items) return lower_oom(L);
    for (int i = 0; i < r->nitems; i++) {
        expr *ix = r->items[i];
        items[i] = ix;
        if (ix->kind == EX_NAME || ix->kind == EX_INT) continue;
        char name[32];
        snprintf(name, sizeof name, "$record_index%d", L->temps++);
        const char *n = arena_strdup(&L->scratch, name);
        if (!n || !(items[i] = name_expr(L, n, ix))) return lower_oom(L);
        if (list_push(L, out, assign_stmt(L, items[i], ix, at))) return -1;
    }
    r->items = items;
    return 0;
}

/* One assignment per field, nested records field by field. */
static int move_fields(lowerer *L, const record_ref *dst, const record_ref *src, stmt_list *out,
                       const stmt *at) {
    for (int i = 0; i < src->node->s->nfields; i++) {
        const tack_field *f = &src->node->s->fields[i];
        if (f->role == TACK_FIELD_CONSTANT) continue;
        if (f->role == TACK_FIELD_STRUCT) {
            record_ref d = *dst, s = *src;
            if ((d.prefix && !(d.prefix = joined(L, d.prefix, f->name))) ||
                (d.base && !(d.base = attr(L, d.base, f->name, at->value))) ||
                (s.prefix && !(s.prefix = joined(L, s.prefix, f->name))) ||
                (s.base && !(s.base = attr(L, s.base, f->name, at->value))))
                return -1;
            d.node = dst->node->sub[field_of(dst->node->s, f->name)];
            s.node = src->node->sub[i];
            if (move_fields(L, &d, &s, out, at)) return -1;
            continue;
        }
        if (list_push(L, out, assign_stmt(L, field_expr(L, dst, f->name, at->targets[0]),
                                          field_expr(L, src, f->name, at->value), at)))
            return -1;
    }
    return 0;
}

/* ---- records made in kernels: P(field=value, ...) ---- */

/* A struct type's layout parsed from its TACK_NAME_STRUCT text: the node
 * a struct local binds, and each leaf field's dtype name. */
typedef struct layout {
    tmpl_node node; /* first: a layout's node is the layout */
    tack_struct s;
    const char **dtypes; /* per field: "f32", "vec3f"; NULL for a nested record */
} layout;

/* Parses "Name{f:dtype,g:Inner{...}}" from *p; NULL when malformed. */
static layout *parse_layout(lowerer *L, const char **p) {
    const char *t = *p, *open = strchr(t, '{');
    if (!open) return NULL;
    layout *y = arena_alloc(&L->scratch, sizeof *y);
    if (!y) return lower_oom(L), NULL;
    memset(y, 0, sizeof *y);
    char *name = arena_alloc(&L->scratch, open - t + 1);
    tack_field *fields = arena_alloc(&L->scratch, 64 * sizeof *fields);
    y->node.sub = arena_alloc(&L->scratch, 64 * sizeof *y->node.sub);
    y->dtypes = arena_alloc(&L->scratch, 64 * sizeof *y->dtypes);
    if (!name || !fields || !y->node.sub || !y->dtypes) return lower_oom(L), NULL;
    memcpy(name, t, open - t);
    name[open - t] = 0;
    y->s.class_name = name;
    y->s.fields = fields;
    y->node.s = &y->s;
    t = open + 1;
    while (*t && *t != '}') {
        if (y->s.nfields == 64) return NULL;
        const char *colon = strchr(t, ':');
        if (!colon) return NULL;
        char *fname = arena_alloc(&L->scratch, colon - t + 1);
        if (!fname) return lower_oom(L), NULL;
        memcpy(fname, t, colon - t);
        fname[colon - t] = 0;
        tack_field *f = &fields[y->s.nfields];
        memset(f, 0, sizeof *f);
        f->name = fname;
        t = colon + 1;
        size_t n = strcspn(t, ",{}");
        if (t[n] == '{') { /* a nested record */
            layout *sub = parse_layout(L, &t);
            if (!sub) return NULL;
            f->role = TACK_FIELD_STRUCT;
            f->nested = &sub->s;
            y->node.sub[y->s.nfields] = &sub->node;
        } else {
            char *d = arena_alloc(&L->scratch, n + 1);
            if (!d) return lower_oom(L), NULL;
            memcpy(d, t, n);
            d[n] = 0;
            f->role = TACK_FIELD_ARRAY;
            y->dtypes[y->s.nfields] = d;
            t += n;
        }
        y->s.nfields++;
        if (*t == ',') t++;
    }
    if (*t != '}') return NULL;
    *p = t + 1;
    return y;
}

/* The layout of the struct type a call's callee names, or NULL (after an
 * error when the name is a struct type whose text does not parse). */
static layout *constructor_of(lowerer *L, const expr *call) {
    if (call->kind != EX_CALL || call->a->kind != EX_NAME || scope_find(L->sc, call->a->name))
        return NULL;
    tack_name n;
    if (lower_resolve_name(L->in->resolver, L->sc->resolver_ctx, call->a->name, &n) ||
        n.kind != TACK_NAME_STRUCT)
        return NULL;
    lower_resolve(L, call->a, &n); /* recorded, for the disk cache to re-check */
    const char *t = n.text;
    layout *y = parse_layout(L, &t);
    if (!y) ERR(L, call->line, call->col, "struct '%s': its layout '%s' is malformed", call->a->name, n.text);
    return y;
}

static expr *call_expr(lowerer *L, const char *module, const char *fn, expr *arg, const expr *at) {
    expr *callee = module ? attr(L, name_expr(L, module, at), fn, at) : name_expr(L, fn, at);
    expr *c = callee ? node(L, EX_CALL, at) : NULL;
    expr **args = arg ? arena_alloc(&L->scratch, sizeof *args) : NULL;
    if (!c || (arg && !args)) return lower_oom(L), NULL;
    c->a = callee;
    if (arg) {
        args[0] = arg;
        c->items = args;
        c->nitems = 1;
    }
    return c;
}

/* A field's value converted to its dtype, or its dtype's zero. */
static expr *field_value(lowerer *L, const char *dtype, expr *value, const expr *at) {
    if (!strcmp(dtype, "bool")) {
        if (value) return call_expr(L, NULL, "bool", value, at);
        return node(L, EX_BOOL, at); /* False */
    }
    int shaped = !strncmp(dtype, "vec", 3) || !strncmp(dtype, "mat", 3);
    if (value && !strncmp(dtype, "mat", 3)) return value; /* the store converts its components */
    if (!value && !shaped && !(value = node(L, EX_INT, at))) return NULL; /* 0 */
    return call_expr(L, "tack", dtype, value, at);
}

/* dst = P(args): each field from its argument (positional in declaration
 * order, or by keyword), the rest zero. */
static int construct(lowerer *L, const record_ref *dst, layout *y, const expr *call, stmt_list *out,
                     const stmt *at) {
    const expr *given[64] = {0};
    if (call->nitems > y->s.nfields) {
        ERR(L, call->line, call->col, "struct '%s' has %d fields; %d values given", y->s.class_name,
            y->s.nfields, call->nitems);
        return -1;
    }
    for (int i = 0; i < call->nitems; i++) given[i] = call->items[i];
    for (int k = 0; k < call->nkw; k++) {
        int i = field_of(&y->s, call->kw_names[k]);
        if (i < 0 || given[i]) {
            ERR(L, call->kw_values[k]->line, call->kw_values[k]->col,
                i < 0 ? "struct '%s' has no field '%s'" : "struct '%s': field '%s' given twice",
                y->s.class_name, call->kw_names[k]);
            return -1;
        }
        given[i] = call->kw_values[k];
    }
    for (int i = 0; i < y->s.nfields; i++) {
        const char *f = y->s.fields[i].name;
        if (y->s.fields[i].role == TACK_FIELD_ARRAY) {
            expr *target = field_expr(L, dst, f, call);
            expr *value = field_value(L, y->dtypes[i], (expr *)given[i], given[i] ? given[i] : call);
            if (list_push(L, out, assign_stmt(L, target, value, at))) return -1;
            continue;
        }
        record_ref d = *dst;
        d.node = y->node.sub[i];
        if ((d.prefix && !(d.prefix = joined(L, d.prefix, f))) ||
            (d.base && !(d.base = attr(L, d.base, f, call))))
            return -1;
        layout *sub = (layout *)y->node.sub[i];
        if (!given[i]) { /* zero */
            expr none = *call;
            none.nitems = none.nkw = 0;
            if (construct(L, &d, sub, &none, out, at)) return -1;
            continue;
        }
        layout *inner = constructor_of(L, given[i]);
        record_ref src;
        int k = inner ? 0 : record_ref_of(L, given[i], &src);
        if (k < 0 || (inner && !same_layout(&inner->node, &sub->node)) || (!inner && !k)) {
            if (k >= 0)
                ERR(L, given[i]->line, given[i]->col, "field '%s' of struct '%s' takes a record "
                    "of struct '%s'", f, y->s.class_name, sub->s.class_name);
            return -1;
        }
        if (inner ? construct(L, &d, sub, given[i], out, at) : move_fields(L, &d, &src, out, at))
            return -1;
    }
    return 0;
}

/* The name a record is assigned to: the local declared for it (Python's
 * function scope) becomes the record, unless it held something else. */
static int bind_record_name(lowerer *L, const expr *te, tmpl_node *node, record_ref *dst) {
    binding *b = (binding *)scope_find(L->sc, te->name);
    if (b && (b->kind != BIND_LOCAL || b->holds_scalar) && b->kind != BIND_STRUCT) {
        ERR(L, te->line, te->col, "'%s' already holds a value that is not a record; "
            "give the record another name", te->name);
        return -1;
    }
    if (!b) {
        if (scope_bind(L, L->sc, te->name, BIND_STRUCT, -1)) return -1;
        b = &L->sc->binds[L->sc->nbinds - 1];
    }
    b->kind = BIND_STRUCT;
    b->tmpl = node;
    *dst = (record_ref){.node = node, .prefix = te->name};
    return 0;
}

int struct_value_expand(lowerer *L, const stmt *s, const stmt ***out, int *n) {
    *out = NULL;
    *n = 0;
    if (s->kind != ST_ASSIGN) return 0;
    record_ref src;
    int failed = L->failed;
    layout *made = constructor_of(L, s->value); /* p = P(...) */
    if (L->failed != failed) return -1;
    int k = made ? 1 : record_ref_of(L, s->value, &src);
    if (made) src = (record_ref){.node = &made->node};
    if (k <= 0) {
        if (k < 0) return -1;
        if (s->value->kind == EX_CALL) return 0; /* p = f(...): a record maybe (struct_assign_call) */
        for (int t = 0; t < s->ntargets; t++) { /* p = 3.0 where p holds a record */
            record_ref dst;
            int d = record_ref_of(L, s->targets[t], &dst);
            if (d < 0) return -1;
            if (d) {
                ERR(L, s->line, s->col, "only a record can be assigned to the record '%s'",
                    s->targets[t]->kind == EX_NAME || s->targets[t]->kind == EX_ATTR
                        ? s->targets[t]->name : "x[i]");
                return -1;
            }
        }
        return 0;
    }
    stmt_list l = {0};
    if (hold_indices(L, &src, &l, s)) return -1;
    for (int t = 0; t < s->ntargets; t++) {
        const expr *te = s->targets[t];
        record_ref dst;
        int d = record_ref_of(L, te, &dst);
        if (d < 0) return -1;
        if (!d && te->kind == EX_NAME) {
            if (bind_record_name(L, te, src.node, &dst)) return -1;
        } else if (!d) {
            char sname[128];
            struct_name(src.node->s, sname, sizeof sname);
            ERR(L, te->line, te->col, "a record of struct '%s' can be assigned to a name, an "
                "element of an array of '%s' or a field of that struct, not here", sname, sname);
            return -1;
        }
        if (!same_layout(dst.node, src.node)) {
            char a[128], b[128];
            struct_name(dst.node->s, a, sizeof a);
            struct_name(src.node->s, b, sizeof b);
            ERR(L, s->line, s->col, "a record of struct '%s' cannot be assigned to one of struct "
                "'%s'", b, a);
            return -1;
        }
        if (hold_indices(L, &dst, &l, s)) return -1;
        stmt one = *s; /* the positions each field's statement reports */
        expr *targets[1] = {(expr *)te};
        one.targets = targets;
        if (made ? construct(L, &dst, made, s->value, &l, &one) : move_fields(L, &dst, &src, &l, &one))
            return -1;
    }
    *out = l.items;
    *n = l.n;
    return 1;
}

int struct_bind_argument(lowerer *L, scope *callee, ir_block *body, const char *pname,
                         const expr *arg) {
    record_ref r;
    int k = record_ref_of(L, arg, &r);
    if (k <= 0) return k;
    /* the caller's fields, each into the callee's local "pname.field"
     * (an index expression is read once per field: indices have no effects) */
    stmt_list l = {0};
    stmt at = {.line = arg->line, .col = arg->col, .value = (expr *)arg};
    expr *targets[1] = {(expr *)arg};
    at.targets = targets;
    record_ref dst = {.node = r.node, .prefix = pname};
    if (move_fields(L, &dst, &r, &l, &at)) return -1;
    for (int i = 0; i < l.n; i++) {
        const stmt *f = l.items[i];
        const stmt *rw = struct_rewrite_stmt(L, f);
        if (!rw || inline_bind_value(L, callee, body, f->targets[0]->name,
                                     lower_expr(L, rw->value), arg))
            return -1;
    }
    if (scope_bind(L, callee, pname, BIND_STRUCT, -1)) return -1;
    callee->binds[callee->nbinds - 1].tmpl = r.node;
    return 1;
}

/* ---- records returned from device functions ----
 *
 * `return p` (or `return P(...)`, `return x[i]`) returns the record's
 * fields as a tuple, nested records field by field, in the order of the
 * layout the first return gave (struct_record_leaves); the scope notes
 * the layout.  The caller's `q = f(...)` then binds q to that layout and
 * assigns each field from its result, and `f(...).pos` reads one. */

/* The leaf fields of a record as paths ("pos", "inner.h"), in order; 1
 * when there are more than MAX_RESULTS. */
static int record_leaves(lowerer *L, const tmpl_node *n, const char *prefix, const char **paths,
                         int *count) {
    for (int i = 0; i < n->s->nfields; i++) {
        const tack_field *f = &n->s->fields[i];
        if (f->role == TACK_FIELD_CONSTANT) continue;
        const char *p = prefix ? joined(L, prefix, f->name) : f->name;
        if (!p) return -1;
        if (f->role == TACK_FIELD_STRUCT) {
            int rc = record_leaves(L, n->sub[i], p, paths, count);
            if (rc) return rc;
            continue;
        }
        if (*count == MAX_RESULTS) return 1;
        paths[(*count)++] = p;
    }
    return 0;
}

/* The expression naming leaf `path` of r (as a user writes it). */
static expr *path_expr(lowerer *L, const record_ref *r, const char *path, const expr *at) {
    if (r->prefix) return local_field(L, r->prefix, path, at);
    expr *e = subscript(L, r->base, r->items, r->nitems, at);
    while (e && *path) {
        size_t n = strcspn(path, ".");
        char *part = arena_alloc(&L->scratch, n + 1);
        if (!part) return lower_oom(L), NULL;
        memcpy(part, path, n);
        part[n] = 0;
        e = attr(L, e, part, at);
        path += n + (path[n] == '.');
    }
    return e;
}

int struct_return_expand(lowerer *L, const stmt *s, const stmt ***out, int *n) {
    *out = NULL;
    *n = 0;
    scope *sc = L->sc;
    const expr *v = s->value;
    if (s->kind != ST_RETURN || sc->inline_id < 0 || sc->record_return == s) return 0;
    int failed = L->failed;
    layout *made = v && v->kind == EX_CALL ? constructor_of(L, v) : NULL;
    if (L->failed != failed) return -1;
    record_ref src;
    int k = made ? 1 : v && v->kind != EX_TUPLE ? record_ref_of(L, v, &src) : 0;
    if (k < 0) return -1;
    char sname[128];
    if (!k) {
        if (!sc->result_record || (v && v->kind == EX_CALL)) return 0; /* f(...): lower_return */
        struct_name(sc->result_record->s, sname, sizeof sname);
        ERR(L, s->line, s->col, "'%s' returns a record of struct '%s' elsewhere, not this value",
            sc->def->name, sname);
        return -1;
    }
    stmt_list l = {0};
    if (made) { /* return P(...): made in a local record first */
        char name[32];
        snprintf(name, sizeof name, "$record%d", L->temps++);
        const char *nm = arena_strdup(&L->scratch, name);
        if (!nm) return lower_oom(L);
        if (scope_bind(L, sc, nm, BIND_STRUCT, -1)) return -1;
        sc->binds[sc->nbinds - 1].tmpl = &made->node;
        src = (record_ref){.node = &made->node, .prefix = nm};
        if (construct(L, &src, made, v, &l, s)) return -1;
    } else if (hold_indices(L, &src, &l, s)) {
        return -1;
    }
    struct_name(src.node->s, sname, sizeof sname);
    if (sc->result_record ? !same_layout(sc->result_record, src.node) : sc->nresults >= 0) {
        ERR(L, s->line, s->col, "'%s' returns a record of struct '%s' here but %s elsewhere",
            sc->def->name, sname, sc->result_record ? "a record of another struct" : "another value");
        return -1;
    }
    if (!sc->result_record) sc->result_record = src.node;
    const char *paths[MAX_RESULTS];
    int count = 0, rc = record_leaves(L, sc->result_record, NULL, paths, &count);
    if (rc < 0) return -1;
    if (rc > 0 || !count) {
        ERR(L, s->line, s->col, "a device function returns a record of at most %d fields "
            "(a nested record's counted one by one); struct '%s' has %s", MAX_RESULTS, sname,
            count ? "more" : "none");
        return -1;
    }
    expr *tuple = node(L, EX_TUPLE, v);
    expr **items = arena_alloc(&L->scratch, count * sizeof *items);
    stmt *ret = arena_alloc(&L->scratch, sizeof *ret);
    if (!tuple || !items || !ret) return lower_oom(L);
    for (int i = 0; i < count; i++)
        if (!(items[i] = path_expr(L, &src, paths[i], v))) return -1;
    tuple->items = items;
    tuple->nitems = count;
    *ret = *s;
    ret->value = tuple;
    sc->record_return = ret;
    if (list_push(L, &l, ret)) return -1;
    *out = l.items;
    *n = l.n;
    return 1;
}

/* Field k of the record the callee returned: its result locals read (after
 * `setup`, when given, is evaluated). */
static ir_expr *result_field(lowerer *L, const scope *callee, int k, ir_expr *setup,
                             const expr *at) {
    const int *locals = callee->results + callee->slot_first[k];
    if (callee->slot_width[k])
        return vec_from_locals(L, setup, locals, callee->slot_width[k], callee->slot_rows[k], at);
    if (!setup) return lower_read_local(L, locals[0], at);
    ir_expr *x = ir_expr_new(L->f, IR_INLINE, at->line, at->col);
    ir_block *body = arena_alloc(&L->f->mem, sizeof *body);
    ir_stmt *eval = ir_stmt_new(L->f, IR_EVAL, at->line, at->col);
    if (!x || !body || !eval) return lower_oom(L), NULL;
    eval->value = setup;
    if (ir_block_push(L->f, body, eval)) return lower_oom(L), NULL;
    x->body = body;
    x->index = locals[0];
    x->inline_id = L->f->ninlines++;
    return x;
}

int struct_assign_call(lowerer *L, ir_block *b, const stmt *s, ir_expr *call,
                       const scope *callee) {
    tmpl_node *rec = callee->result_record;
    ir_stmt *eval = ir_stmt_new(L->f, IR_EVAL, s->line, s->col);
    if (!eval) return lower_oom(L);
    eval->value = call;
    if (ir_block_push(L->f, b, eval)) return lower_oom(L);
    const char *paths[MAX_RESULTS];
    int count = 0;
    if (record_leaves(L, rec, NULL, paths, &count)) return -1;
    for (int t = 0; t < s->ntargets; t++) {
        const expr *te = s->targets[t];
        record_ref dst;
        int d = record_ref_of(L, te, &dst);
        if (d < 0) return -1;
        char sname[128];
        struct_name(rec->s, sname, sizeof sname);
        if (!d && te->kind == EX_NAME) {
            if (bind_record_name(L, te, rec, &dst)) return -1;
        } else if (!d) {
            ERR(L, te->line, te->col, "a record of struct '%s' can be assigned to a name, an "
                "element of an array of '%s' or a field of that struct, not here", sname, sname);
            return -1;
        }
        if (!same_layout(dst.node, rec)) {
            char a[128];
            struct_name(dst.node->s, a, sizeof a);
            ERR(L, s->line, s->col, "a record of struct '%s' cannot be assigned to one of struct "
                "'%s'", sname, a);
            return -1;
        }
        for (int k = 0; k < count; k++) {
            expr *target = path_expr(L, &dst, paths[k], te);
            stmt *decl = target ? assign_stmt(L, target, target, s) : NULL;
            if (!decl || lower_declare_locals(L, &decl, 1)) return -1;
            expr *rw = rewrite(L, target); /* x[j].f -> x.f[j] */
            if (!rw || lower_assign_to(L, b, rw, result_field(L, callee, k, NULL, s->value), s))
                return -1;
        }
    }
    return 0;
}

int struct_return_call(lowerer *L, ir_block *b, const stmt *s, ir_expr *call,
                       const scope *callee) {
    scope *sc = L->sc;
    tmpl_node *rec = callee->result_record;
    char sname[128];
    struct_name(rec->s, sname, sizeof sname);
    if (sc->result_record ? !same_layout(sc->result_record, rec) : sc->nresults >= 0) {
        ERR(L, s->line, s->col, "'%s' returns a record of struct '%s' here but %s elsewhere",
            sc->def->name, sname, sc->result_record ? "a record of another struct" : "another value");
        return -1;
    }
    if (!sc->result_record) sc->result_record = rec;
    ir_stmt *eval = ir_stmt_new(L->f, IR_EVAL, s->line, s->col);
    if (!eval) return lower_oom(L);
    eval->value = call;
    if (ir_block_push(L->f, b, eval)) return lower_oom(L);
    /* the callee's fields, in the order this function's results hold them */
    const char *mine[MAX_RESULTS], *theirs[MAX_RESULTS];
    int n = 0, m = 0;
    if (record_leaves(L, sc->result_record, NULL, mine, &n) ||
        record_leaves(L, rec, NULL, theirs, &m))
        return -1;
    ir_expr *values[MAX_RESULTS];
    for (int k = 0; k < n; k++) {
        int j = 0;
        while (j < m && strcmp(mine[k], theirs[j])) j++;
        if (j == m || !(values[k] = result_field(L, callee, j, NULL, s->value))) return -1;
    }
    return inline_return_values(L, b, s, values, n);
}

/* Whether the call names a device function (no lowering, nothing recorded). */
static int calls_function(lowerer *L, const expr *call) {
    if (call->kind != EX_CALL || call->a->kind != EX_NAME || scope_find(L->sc, call->a->name))
        return 0;
    tack_name n;
    return !lower_resolve_name(L->in->resolver, L->sc->resolver_ctx, call->a->name, &n) &&
           n.kind == TACK_NAME_FUNC;
}

int struct_call_field(lowerer *L, const expr *e, ir_expr **out) {
    *out = NULL;
    const char *names[16];
    int depth = 0;
    const expr *root = e;
    /* Vector, matrix and complex attributes keep their meaning. */
    for (; root->kind == EX_ATTR; root = root->a) {
        const char *a = root->name;
        if (!strcmp(a, "T") || !strcmp(a, "real") || !strcmp(a, "imag") ||
            (a[0] && !a[1] && strchr("xyzw", a[0])) || depth == 16)
            return 0;
        names[depth++] = a;
    }
    if (!calls_function(L, root)) return 0;
    L->record_call = root;
    ir_expr *x = lower_expr(L, root);
    const scope *callee = L->record_callee;
    L->record_call = NULL;
    L->record_callee = NULL;
    if (!x) return 1;
    if (!callee) {
        ERR(L, e->line, e->col, "'.%s' reads a field of a record, but '%s' does not return one",
            names[depth - 1], root->a->name);
        return 1;
    }
    const tmpl_node *n = callee->result_record;
    const char *path = NULL;
    char sname[128];
    for (int i = depth - 1; i >= 0; i--) {
        int f = field_of(n->s, names[i]);
        struct_name(n->s, sname, sizeof sname);
        if (f < 0 || n->s->fields[f].role == TACK_FIELD_CONSTANT) {
            ERR(L, e->line, e->col, "struct '%s' has no field '%s'", sname, names[i]);
            return 1;
        }
        if (!(path = path ? joined(L, path, names[i]) : names[i])) return 1;
        if (n->s->fields[f].role == TACK_FIELD_STRUCT) {
            n = n->sub[f];
            if (i) continue;
            struct_name(n->s, sname, sizeof sname);
            ERR(L, e->line, e->col, "'%s(...).%s' is a record of struct '%s': assign it to a name "
                "first, or read its fields", root->a->name, path, sname);
            return 1;
        }
        if (i) {
            ERR(L, e->line, e->col, "field '%s' of struct '%s' is no record", names[i], sname);
            return 1;
        }
    }
    const char *paths[MAX_RESULTS];
    int count = 0;
    if (record_leaves(L, callee->result_record, NULL, paths, &count)) return 1;
    for (int k = 0; k < count; k++)
        if (!strcmp(paths[k], path)) {
            *out = result_field(L, callee, k, x, e);
            return 1;
        }
    ERR(L, e->line, e->col, "internal error: field '%s' not among the results", path);
    return 1;
}
