/* ir.c - building IR nodes, type facts and deep copies. */
#include "ir.h"
#include "util/sha256.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int ir_type_is_int(ir_type t) {
    return t == IRT_WEAK_INT || (t >= TACK_I8 && t <= TACK_U64);
}
int ir_type_is_signed(ir_type t) {
    return t == IRT_WEAK_INT || (t >= TACK_I8 && t <= TACK_I64);
}
int ir_type_is_float(ir_type t) {
    return t == IRT_WEAK_FLOAT || t == TACK_F32 || t == TACK_F64 || t == TACK_F16;
}
ir_type ir_value_type(ir_type element) { return element == TACK_F16 ? TACK_F32 : element; }
int ir_type_bits(ir_type t) {
    switch (t) {
    case TACK_BOOL: return 1;
    case TACK_I8: case TACK_U8: return 8;
    case TACK_I16: case TACK_U16: case TACK_F16: return 16;
    case TACK_I32: case TACK_U32: case TACK_F32: return 32;
    default: return 64;
    }
}
const char *ir_type_name(ir_type t) {
    switch (t) {
    case IRT_UNSET: return "?";
    case IRT_WEAK_INT: return "int";
    case IRT_WEAK_FLOAT: return "float";
    case IRT_VOID: return "void";
    default: return tack_dtype_name((tack_dtype)t);
    }
}

static const char *const intrinsic_names[] = {
#define TACK_INTRINSIC(id, name, nargs) name,
#include "intrinsics.def"
#undef TACK_INTRINSIC
};
static const int intrinsic_nargs[] = {
#define TACK_INTRINSIC(id, name, nargs) nargs,
#include "intrinsics.def"
#undef TACK_INTRINSIC
};
const char *ir_intrinsic_name(ir_intrinsic f) { return intrinsic_names[f]; }

const char *ir_atomic_name(ir_atomic_op op) {
    static const char *const names[ATOM_COUNT] = {"add", "sub", "min", "max", "and", "or",
                                                  "xor", "exchange", "compare_exchange",
                                                  "mul"};
    return (unsigned)op < ATOM_COUNT ? names[op] : "?";
}
int ir_intrinsic_nargs(ir_intrinsic f) { return intrinsic_nargs[f]; }

double ir_angle_factor(ir_intrinsic f, ir_type t) {
    const double pi = 3.141592653589793;
    if (t == TACK_F32) {
        const float pi32 = (float)pi;
        float k = f == INTR_DEGREES ? 180.0f / pi32 : pi32 / 180.0f; /* rounded to f32 */
        return k;
    }
    return f == INTR_DEGREES ? 180.0 / pi : pi / 180.0;
}

ir_func *ir_func_new(void) {
    ir_func *f = calloc(1, sizeof *f);
    if (!f) return NULL;
    arena_init(&f->mem);
    f->loop_var = -1;
    f->debug_errors = f->debug_extents = -1;
    f->rng_seed = -1;
    f->default_float = TACK_F32;
    return f;
}

void ir_func_free(ir_func *f) {
    if (!f) return;
    arena_free(&f->mem);
    free(f);
}

ir_expr *ir_expr_new(ir_func *f, ir_expr_kind kind, int line, int col) {
    ir_expr *e = arena_alloc(&f->mem, sizeof *e);
    if (!e) return NULL;
    e->kind = kind;
    e->type = IRT_UNSET;
    e->line = line;
    e->col = col;
    e->src = f->cur_src;
    e->sample = -1;
    return e;
}

ir_stmt *ir_stmt_new(ir_func *f, ir_stmt_kind kind, int line, int col) {
    ir_stmt *s = arena_alloc(&f->mem, sizeof *s);
    if (!s) return NULL;
    s->kind = kind;
    s->line = line;
    s->col = col;
    s->src = f->cur_src;
    return s;
}

int ir_block_push(ir_func *f, ir_block *b, ir_stmt *s) {
    if (!s) return -1;
    if (b->n == b->cap) {
        int cap = b->cap ? b->cap * 2 : 8;
        ir_stmt **p = arena_grow(&f->mem, b->stmts, b->n, cap, sizeof *p);
        if (!p) return -1;
        b->stmts = p;
        b->cap = cap;
    }
    b->stmts[b->n++] = s;
    return 0;
}

int ir_source_add(ir_func *f, const char *text, const char *filename, const char *name,
                  int first_line) {
    ir_source *s = arena_grow(&f->mem, f->sources, f->nsources, f->nsources + 1, sizeof *s);
    if (!s) return -1;
    f->sources = s;
    s += f->nsources;
    s->text = arena_strdup(&f->mem, text ? text : "");
    s->filename = arena_strdup(&f->mem, filename ? filename : "<string>");
    s->name = arena_strdup(&f->mem, name ? name : "?");
    s->first_line = first_line;
    s->is_function = f->nsources > 0;
    s->parent = -1;
    s->via_param = -1;
    s->via = s->via_path = "";
    if (!s->text || !s->filename || !s->name) return -1;
    return f->nsources++;
}

int ir_source_via(ir_func *f, int src, int parent, const char *via, int via_param,
                  const char *via_path) {
    ir_source *s = &f->sources[src];
    s->parent = parent;
    s->via_param = via_param;
    s->via = arena_strdup(&f->mem, via ? via : "");
    s->via_path = arena_strdup(&f->mem, via_path ? via_path : "");
    return s->via && s->via_path ? 0 : -1;
}

int ir_name_digest(const tack_name *n, char out[65]) {
    /* The binding's kind and everything about it that reaches code. */
    char head[96];
    const char *text = n->text ? n->text : "";
    const char *file = n->kind == TACK_NAME_FUNC && n->filename ? n->filename : "";
    int len = snprintf(head, sizeof head, "%d|%lld|%d|%llu|%a|%d|", (int)n->kind,
                       (long long)n->i, n->is_unsigned, (unsigned long long)n->u, n->f,
                       n->kind == TACK_NAME_FUNC ? n->first_line : 0);
    size_t hl = len > 0 && (size_t)len < sizeof head ? (size_t)len : 0;
    size_t fl = strlen(file) + 1, tl = strlen(text); /* the file's NUL separates it */
    /* A table: its shape, then its numbers' bytes (floats' bit patterns,
     * so -0.0 and NaN are told apart as constants are). */
    int64_t tshape[3] = {0, 0, 0};
    size_t tn = 0;
    const void *tvalues = NULL;
    if (n->kind == TACK_NAME_TABLE) {
        tshape[0] = n->table_ndim;
        tshape[1] = n->table_shape[0];
        tshape[2] = n->table_ndim == 2 ? n->table_shape[1] : 1;
        tn = (size_t)(tshape[1] * tshape[2]) * 8;
        tvalues = n->table_ints ? (const void *)n->table_ints : (const void *)n->table_floats;
        tshape[0] += n->table_ints ? 0 : 16; /* ints and floats of equal bits differ */
    }
    size_t tl2 = tvalues ? sizeof tshape + tn : 0;
    char *print = malloc(hl + fl + tl + tl2 + 1);
    if (!print) return -1;
    memcpy(print, head, hl);
    memcpy(print + hl, file, fl);
    memcpy(print + hl + fl, text, tl);
    if (tl2) {
        memcpy(print + hl + fl + tl, tshape, sizeof tshape);
        memcpy(print + hl + fl + tl + sizeof tshape, tvalues, tn);
    }
    sha256_hex(print, hl + fl + tl + tl2, out);
    free(print);
    return 0;
}

int ir_record_resolution(ir_func *f, int src, const char *name, const tack_name *n) {
    for (int i = 0; i < f->nresolved; i++)
        if (f->resolved[i].src == src && !strcmp(f->resolved[i].name, name)) return 0;
    char digest[65];
    if (ir_name_digest(n, digest)) return -1;
    ir_resolution *r = arena_grow(&f->mem, f->resolved, f->nresolved, f->nresolved + 1, sizeof *r);
    if (!r) return -1;
    f->resolved = r;
    r += f->nresolved;
    r->src = src;
    if (!(r->name = arena_strdup(&f->mem, name))) return -1;
    memcpy(r->digest, digest, sizeof digest);
    f->nresolved++;
    return 0;
}

int ir_local_find(const ir_func *f, const char *name) {
    for (int i = 0; i < f->nlocals; i++)
        if (strcmp(f->locals[i].name, name) == 0) return i;
    return -1;
}

int ir_local_add(ir_func *f, const char *name) {
    int i = ir_local_find(f, name);
    if (i >= 0) return i;
    if (f->nlocals == f->locals_cap) {
        int cap = f->locals_cap ? f->locals_cap * 2 : 16;
        ir_local *p = arena_grow(&f->mem, f->locals, f->nlocals, cap, sizeof *p);
        if (!p) return -1;
        f->locals = p;
        f->locals_cap = cap;
    }
    f->locals[f->nlocals].name = arena_strdup(&f->mem, name);
    f->locals[f->nlocals].type = IRT_UNSET;
    return f->nlocals++;
}

int ir_scratch_add(ir_func *f, const ir_scratch *a) {
    if (f->nscratch >= IR_MAX_SCRATCH) return -1;
    ir_scratch *v = arena_grow(&f->mem, f->scratch, f->nscratch, f->nscratch + 1, sizeof *v);
    if (!v) return -1;
    f->scratch = v;
    v[f->nscratch] = *a;
    if (!(v[f->nscratch].name = arena_strdup(&f->mem, a->name ? a->name : "?"))) return -1;
    return f->nscratch++;
}

int64_t ir_scratch_size(const ir_scratch *a) {
    int64_t n = 1;
    for (int d = 0; d < a->ndim; d++) n *= a->dims[d];
    return n;
}

int ir_param_add(ir_func *f) {
    if (f->nparams >= TACK_MAX_PARAMS) return -1;
    if (f->nparams == f->params_cap) {
        /* Clones and deserialized functions come exactly sized. */
        ir_param *p = arena_grow(&f->mem, f->params, f->nparams, TACK_MAX_PARAMS, sizeof *p);
        if (!p) return -1;
        f->params = p;
        f->params_cap = TACK_MAX_PARAMS;
    }
    ir_param *p = &f->params[f->nparams];
    memset(p, 0, sizeof *p);
    p->max_dim_read = -1;
    p->type = IRT_UNSET;
    return f->nparams++;
}

ir_expr *ir_const_int(ir_func *f, int64_t v, ir_type t, int line, int col) {
    ir_expr *e = ir_expr_new(f, IR_CONST, line, col);
    if (e) {
        e->i = v;
        e->type = t;
    }
    return e;
}

ir_expr *ir_const_float(ir_func *f, double v, ir_type t, int line, int col) {
    ir_expr *e = ir_expr_new(f, IR_CONST, line, col);
    if (e) {
        e->f = v;
        e->type = t;
    }
    return e;
}

ir_expr *ir_cast(ir_func *f, ir_expr *a, ir_type to) {
    if (!a || a->type == to) return a;
    ir_expr *e = ir_expr_new(f, IR_CAST, a->line, a->col);
    if (!e) return NULL;
    e->a = a;
    e->type = to;
    return e;
}

/* ---- deep copy ---- */

static ir_expr *clone_expr(ir_func *to, const ir_expr *e);
ir_expr *ir_clone_expr(ir_func *f, const ir_expr *e) { return clone_expr(f, e); }
static int clone_block(ir_func *to, ir_block *dst, const ir_block *src);

static ir_expr **clone_exprs(ir_func *to, ir_expr *const *v, int n, int *ok) {
    if (!n) return NULL;
    ir_expr **out = arena_alloc(&to->mem, n * sizeof *out);
    if (!out) {
        *ok = 0;
        return NULL;
    }
    for (int i = 0; i < n; i++) {
        out[i] = clone_expr(to, v[i]);
        if (!out[i]) *ok = 0;
    }
    return out;
}

static ir_expr *clone_expr(ir_func *to, const ir_expr *e) {
    if (!e) return NULL;
    ir_expr *c = arena_alloc(&to->mem, sizeof *c);
    if (!c) return NULL;
    *c = *e;
    int ok = 1;
    if (e->a && !(c->a = clone_expr(to, e->a))) ok = 0;
    if (e->b && !(c->b = clone_expr(to, e->b))) ok = 0;
    if (e->cond && !(c->cond = clone_expr(to, e->cond))) ok = 0;
    c->args = clone_exprs(to, e->args, e->nargs, &ok);
    if (e->body) {
        c->body = arena_alloc(&to->mem, sizeof *c->body);
        if (!c->body || clone_block(to, c->body, e->body)) ok = 0;
    }
    return ok ? c : NULL;
}

static ir_stmt *clone_stmt(ir_func *to, const ir_stmt *s) {
    ir_stmt *c = arena_alloc(&to->mem, sizeof *c);
    if (!c) return NULL;
    *c = *s;
    int ok = 1;
    if (s->value && !(c->value = clone_expr(to, s->value))) ok = 0;
    if (s->start && !(c->start = clone_expr(to, s->start))) ok = 0;
    if (s->stop && !(c->stop = clone_expr(to, s->stop))) ok = 0;
    if (s->step && !(c->step = clone_expr(to, s->step))) ok = 0;
    c->indices = clone_exprs(to, s->indices, s->nindices, &ok);
    if (s->texts) { /* a variant may outlive nothing it points into */
        c->texts = arena_alloc(&to->mem, (s->nindices + 1) * sizeof *c->texts);
        if (!c->texts) ok = 0;
        for (int i = 0; ok && i <= s->nindices; i++)
            if (!(c->texts[i] = arena_strdup(&to->mem, s->texts[i]))) ok = 0;
    }
    if (clone_block(to, &c->body, &s->body) || clone_block(to, &c->orelse, &s->orelse))
        ok = 0;
    return ok ? c : NULL;
}

static int clone_block(ir_func *to, ir_block *dst, const ir_block *src) {
    memset(dst, 0, sizeof *dst);
    for (int i = 0; i < src->n; i++)
        if (ir_block_push(to, dst, clone_stmt(to, src->stmts[i]))) return -1;
    return 0;
}

int ir_reduction_of_param(const ir_func *f, int p) {
    for (int r = 0; r < f->nreductions; r++)
        if (f->reductions[r].param == p) return r;
    return -1;
}

ir_func *ir_clone(const ir_func *f) {
    ir_func *c = ir_func_new();
    if (!c) return NULL;
    arena m = c->mem;
    *c = *f;
    c->mem = m;
    c->name = arena_strdup(&c->mem, f->name);
    c->params = arena_alloc(&c->mem, (f->nparams ? f->nparams : 1) * sizeof *c->params);
    c->params_cap = f->nparams;
    /* Source texts stay shared with the template, which outlives its copies. */
    c->locals = NULL;
    c->nlocals = c->locals_cap = 0;
    /* Scratch arrays are copied: inference settles a weakly typed one. */
    c->scratch = f->nscratch ? arena_alloc(&c->mem, f->nscratch * sizeof *c->scratch) : NULL;
    int ok = c->name && c->params && (c->scratch || !f->nscratch);
    if (ok) memcpy(c->params, f->params, f->nparams * sizeof *c->params);
    if (ok && f->nscratch) memcpy(c->scratch, f->scratch, f->nscratch * sizeof *c->scratch);
    for (int i = 0; ok && i < f->nlocals; i++) {
        if (ir_local_add(c, f->locals[i].name) != i) ok = 0;
        else c->locals[i].type = f->locals[i].type;
    }
    if (ok && f->start && !(c->start = clone_expr(c, f->start))) ok = 0;
    if (ok && f->stop && !(c->stop = clone_expr(c, f->stop))) ok = 0;
    c->stop_in_body = NULL;
    if (ok && f->step && !(c->step = clone_expr(c, f->step))) ok = 0;
    for (int d = 0; ok && d < f->ninner; d++)
        if (!(c->inner_stop[d] = clone_expr(c, f->inner_stop[d]))) ok = 0;
    if (ok && clone_block(c, &c->body, &f->body)) ok = 0;
    if (!ok) {
        ir_func_free(c);
        return NULL;
    }
    return c;
}

/* ir_clone, and the texts and tables it shares with f copied too (the
 * kernel's name, file and source, parameter and scratch names, the sources
 * table, resolutions and debug sites): the copy outlives f and its
 * template (cpu/tier.c builds it on another thread, maybe after both are
 * freed). */
static const char *dup_text(ir_func *c, const char *t, int *ok) {
    if (!t) return NULL;
    const char *d = arena_strdup(&c->mem, t);
    if (!d) *ok = 0;
    return d;
}

ir_func *ir_clone_owned(const ir_func *f) {
    ir_func *c = ir_clone(f);
    if (!c) return NULL;
    int ok = 1;
    c->filename = dup_text(c, f->filename, &ok);
    c->source = dup_text(c, f->source, &ok);
    for (int i = 0; i < c->nparams; i++) c->params[i].name = dup_text(c, f->params[i].name, &ok);
    for (int i = 0; i < c->nscratch; i++) c->scratch[i].name = dup_text(c, f->scratch[i].name, &ok);
    if (ok && f->nsites) {
        c->sites = arena_alloc(&c->mem, f->nsites * sizeof *c->sites);
        if (c->sites) memcpy(c->sites, f->sites, f->nsites * sizeof *c->sites);
        else ok = 0;
    }
    if (ok && f->nsources) {
        c->sources = arena_alloc(&c->mem, f->nsources * sizeof *c->sources);
        if (c->sources) memcpy(c->sources, f->sources, f->nsources * sizeof *c->sources);
        else ok = 0;
        for (int i = 0; ok && i < f->nsources; i++) {
            ir_source *d = &c->sources[i];
            const ir_source *o = &f->sources[i];
            d->text = dup_text(c, o->text, &ok);
            d->filename = dup_text(c, o->filename, &ok);
            d->name = dup_text(c, o->name, &ok);
            d->via = dup_text(c, o->via, &ok);
            d->via_path = dup_text(c, o->via_path, &ok);
        }
    }
    if (ok && f->nresolved) {
        c->resolved = arena_alloc(&c->mem, f->nresolved * sizeof *c->resolved);
        if (c->resolved) memcpy(c->resolved, f->resolved, f->nresolved * sizeof *c->resolved);
        else ok = 0;
        for (int i = 0; ok && i < f->nresolved; i++)
            c->resolved[i].name = dup_text(c, f->resolved[i].name, &ok);
    }
    if (!ok) {
        ir_func_free(c);
        return NULL;
    }
    return c;
}

int ir_bounds_flag_site(const ir_func *f, int l) {
    const char *name = f->locals[l].name;
    size_t n = strlen(IR_BOUNDS_FLAG);
    if (!name || strncmp(name, IR_BOUNDS_FLAG, n) || !name[n]) return -1;
    int site = atoi(name + n);
    return site >= 0 && site < f->nsites ? site : -1;
}

static int assigns_here(void *ctx, const ir_stmt *s) {
    return (s->kind == IR_ASSIGN || s->kind == IR_FOR) && s->index == *(const int *)ctx;
}

int ir_block_assigns(const ir_block *b, int l) {
    return ir_walk_block(&(ir_walker){.stmt = assigns_here, .ctx = &l}, b);
}
