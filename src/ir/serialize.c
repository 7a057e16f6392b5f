/* serialize.c - IR functions to bytes and back (see serialize.h).
 *
 * Adding a field to an IR struct: one put line in its write_* function and
 * one get line at the same place in its read_* function, then bump
 * IR_FORMAT_VERSION.  Adding an enum value: move the *_LAST bound below. */
#include "serialize.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The last value of each enum a reader accepts. */
#define EXPR_KIND_LAST IR_SLOAD
#define STMT_KIND_LAST IR_PRINT
#define OP_LAST OP_NE
#define ROLE_LAST ROLE_TEMPLATE

/* Deep enough for any kernel lowering accepts (the parser stops at 100
 * nested expressions), shallow enough for any thread's stack. */
#define MAX_DEPTH 1000
#define MAX_STRING (64u << 20)
#define MAGIC 0x52495454u /* "TTIR" */

/* ---- writer ----------------------------------------------------------- */

void ser_writer_free(ser_writer *w) {
    free(w->data);
    w->data = NULL;
    w->len = w->cap = 0;
}

void ser_put_bytes(ser_writer *w, const void *p, size_t n) {
    if (w->failed || !n) return;
    if (n > SIZE_MAX / 2 - w->len) {
        w->failed = 1;
        return;
    }
    if (w->len + n > w->cap) {
        size_t cap = w->cap ? w->cap : 256;
        while (cap < w->len + n) cap *= 2;
        unsigned char *d = realloc(w->data, cap);
        if (!d) {
            w->failed = 1;
            return;
        }
        w->data = d;
        w->cap = cap;
    }
    memcpy(w->data + w->len, p, n);
    w->len += n;
}

void ser_put_u8(ser_writer *w, uint8_t v) { ser_put_bytes(w, &v, 1); }

void ser_put_u32(ser_writer *w, uint32_t v) {
    unsigned char b[4];
    for (int i = 0; i < 4; i++) b[i] = (unsigned char)(v >> (8 * i));
    ser_put_bytes(w, b, 4);
}

void ser_put_u64(ser_writer *w, uint64_t v) {
    unsigned char b[8];
    for (int i = 0; i < 8; i++) b[i] = (unsigned char)(v >> (8 * i));
    ser_put_bytes(w, b, 8);
}

void ser_put_i64(ser_writer *w, int64_t v) { ser_put_u64(w, (uint64_t)v); }

void ser_put_f64(ser_writer *w, double v) {
    uint64_t u;
    memcpy(&u, &v, sizeof u);
    ser_put_u64(w, u);
}

/* NULL is length UINT32_MAX, so it survives a round trip distinct from "". */
void ser_put_str(ser_writer *w, const char *s) {
    if (!s) {
        ser_put_u32(w, UINT32_MAX);
        return;
    }
    size_t n = strlen(s);
    if (n >= MAX_STRING) {
        w->failed = 1;
        return;
    }
    ser_put_u32(w, (uint32_t)n);
    ser_put_bytes(w, s, n);
}

void ser_put_blob(ser_writer *w, const void *p, size_t n) {
    ser_put_u64(w, n);
    ser_put_bytes(w, p, n);
}

/* ---- reader ----------------------------------------------------------- */

ser_reader ser_reader_init(const void *p, size_t len) {
    ser_reader r = {p, p ? len : 0, 0, 0};
    return r;
}

void ser_fail(ser_reader *r) { r->failed = 1; }

size_t ser_left(const ser_reader *r) { return r->failed ? 0 : r->len - r->pos; }

const void *ser_get_bytes(ser_reader *r, size_t n) {
    if (r->failed || n > r->len - r->pos) {
        r->failed = 1;
        return NULL;
    }
    const void *p = r->p + r->pos;
    r->pos += n;
    return p;
}

uint8_t ser_get_u8(ser_reader *r) {
    const unsigned char *b = ser_get_bytes(r, 1);
    return b ? b[0] : 0;
}

uint32_t ser_get_u32(ser_reader *r) {
    const unsigned char *b = ser_get_bytes(r, 4);
    uint32_t v = 0;
    if (b)
        for (int i = 0; i < 4; i++) v |= (uint32_t)b[i] << (8 * i);
    return v;
}

uint64_t ser_get_u64(ser_reader *r) {
    const unsigned char *b = ser_get_bytes(r, 8);
    uint64_t v = 0;
    if (b)
        for (int i = 0; i < 8; i++) v |= (uint64_t)b[i] << (8 * i);
    return v;
}

int64_t ser_get_i64(ser_reader *r) { return (int64_t)ser_get_u64(r); }

double ser_get_f64(ser_reader *r) {
    uint64_t u = ser_get_u64(r);
    double v;
    memcpy(&v, &u, sizeof v);
    return v;
}

int ser_get_int(ser_reader *r, int lo, int hi) {
    int64_t v = (int32_t)ser_get_u32(r);
    if (r->failed || v < lo || v > hi) {
        r->failed = 1;
        return lo;
    }
    return (int)v;
}

const char *ser_get_str(ser_reader *r, size_t *n, int *is_null) {
    uint32_t len = ser_get_u32(r);
    *n = 0;
    *is_null = !r->failed && len == UINT32_MAX;
    if (r->failed || *is_null) return NULL;
    if (len >= MAX_STRING) {
        r->failed = 1;
        return NULL;
    }
    const char *s = ser_get_bytes(r, len);
    if (s) *n = len;
    return s;
}

char *ser_get_str_arena(ser_reader *r, arena *a) {
    size_t n;
    int is_null;
    const char *s = ser_get_str(r, &n, &is_null);
    if (!s) return NULL;
    if (memchr(s, 0, n)) {
        r->failed = 1;
        return NULL;
    }
    char *c = arena_strndup(a, s, n);
    if (!c) r->failed = 1;
    return c;
}

const void *ser_get_blob(ser_reader *r, size_t *n) {
    uint64_t len = ser_get_u64(r);
    *n = 0;
    if (r->failed || len > r->len - r->pos) {
        r->failed = 1;
        return NULL;
    }
    *n = (size_t)len;
    return ser_get_bytes(r, (size_t)len);
}

/* ---- IR out ----------------------------------------------------------- */

static void put_int(ser_writer *w, int v) { ser_put_u32(w, (uint32_t)v); }

static void write_expr(ser_writer *w, const ir_expr *e);
static void write_block(ser_writer *w, const ir_block *b);

/* A tag byte first: 0 for an absent block. */
static void write_opt_block(ser_writer *w, const ir_block *b) {
    ser_put_u8(w, b != NULL);
    if (b) write_block(w, b);
}

static void write_exprs(ser_writer *w, ir_expr *const *v, int n) {
    put_int(w, n);
    for (int i = 0; i < n; i++) write_expr(w, v[i]);
}

/* A tag byte first: 0 for an absent expression. */
static void write_expr(ser_writer *w, const ir_expr *e) {
    ser_put_u8(w, e != NULL);
    if (!e) return;
    put_int(w, e->kind);
    put_int(w, e->type);
    put_int(w, e->line);
    put_int(w, e->col);
    put_int(w, e->src);
    put_int(w, e->op);
    put_int(w, e->index);
    put_int(w, e->dim);
    put_int(w, e->fn);
    ser_put_i64(w, e->i);
    ser_put_f64(w, e->f);
    write_expr(w, e->a);
    write_expr(w, e->b);
    write_expr(w, e->cond);
    write_exprs(w, e->args, e->nargs);
    put_int(w, e->atomic);
    write_opt_block(w, e->body);
    put_int(w, e->inline_id);
    put_int(w, e->sample);
    put_int(w, e->index_cast);
}

static void write_stmt(ser_writer *w, const ir_stmt *s) {
    put_int(w, s->kind);
    put_int(w, s->line);
    put_int(w, s->col);
    put_int(w, s->src);
    put_int(w, s->index);
    write_expr(w, s->value);
    write_exprs(w, s->indices, s->nindices);
    write_expr(w, s->start);
    write_expr(w, s->stop);
    write_expr(w, s->step);
    write_block(w, &s->body);
    write_block(w, &s->orelse);
    put_int(w, s->texts ? s->nindices + 1 : 0);
    for (int i = 0; s->texts && i <= s->nindices; i++) ser_put_str(w, s->texts[i]);
}

static void write_block(ser_writer *w, const ir_block *b) {
    put_int(w, b->n);
    for (int i = 0; i < b->n; i++) write_stmt(w, b->stmts[i]);
}

static void write_param(ser_writer *w, const ir_param *p) {
    ser_put_str(w, p->name);
    put_int(w, p->role);
    put_int(w, p->index_ndim);
    put_int(w, p->max_dim_read);
    put_int(w, p->written);
    put_int(w, p->vec_width);
    put_int(w, p->sampled);
    put_int(w, p->type);
    put_int(w, p->line);
    put_int(w, p->col);
}

static void write_local(ser_writer *w, const ir_local *l) {
    ser_put_str(w, l->name);
    put_int(w, l->type);
}

static void write_source(ser_writer *w, const ir_source *s) {
    ser_put_str(w, s->text);
    ser_put_str(w, s->filename);
    ser_put_str(w, s->name);
    put_int(w, s->first_line);
    put_int(w, s->parent);
    put_int(w, s->via_param);
    ser_put_str(w, s->via);
    ser_put_str(w, s->via_path);
}

void ir_serialize(const ir_func *f, ser_writer *w) {
    ser_put_u32(w, MAGIC);
    ser_put_u32(w, IR_FORMAT_VERSION);
    put_int(w, f->nsources);
    for (int i = 0; i < f->nsources; i++) write_source(w, &f->sources[i]);
    put_int(w, f->ninlines);
    put_int(w, f->cur_src);
    ser_put_str(w, f->name);
    ser_put_str(w, f->filename);
    put_int(w, f->first_line);
    ser_put_str(w, f->source);
    put_int(w, f->nparams);
    for (int i = 0; i < f->nparams; i++) write_param(w, &f->params[i]);
    put_int(w, f->nlocals);
    for (int i = 0; i < f->nlocals; i++) write_local(w, &f->locals[i]);
    put_int(w, f->loop_var);
    write_expr(w, f->start);
    write_expr(w, f->stop);
    write_expr(w, f->step);
    put_int(w, f->ninner);
    for (int d = 0; d < 2; d++) put_int(w, f->inner_var[d]);
    for (int d = 0; d < 2; d++) write_expr(w, f->inner_stop[d]);
    write_block(w, &f->body);
    put_int(w, f->default_float);
    put_int(w, f->disjoint);
    put_int(w, f->nresolved);
    for (int i = 0; i < f->nresolved; i++) {
        put_int(w, f->resolved[i].src);
        ser_put_str(w, f->resolved[i].name);
        ser_put_str(w, f->resolved[i].digest);
    }
    put_int(w, f->nsites);
    for (int i = 0; i < f->nsites; i++) {
        put_int(w, f->sites[i].src);
        put_int(w, f->sites[i].line);
        put_int(w, f->sites[i].col);
        put_int(w, f->sites[i].param);
    }
    put_int(w, f->debug_errors);
    put_int(w, f->debug_extents);
    put_int(w, f->collective);
    put_int(w, f->rng_seed);
    put_int(w, f->nreductions);
    for (int i = 0; i < f->nreductions; i++) {
        const ir_reduction *r = &f->reductions[i];
        put_int(w, r->param);
        put_int(w, r->op);
        put_int(w, r->type);
        ser_put_i64(w, r->i);
        union { double d; int64_t b; } u = {r->f}; /* the bits: NaN and -0.0 too */
        ser_put_i64(w, u.b);
    }
    put_int(w, f->nreturns);
    for (int i = 0; i < f->nreturns; i++) put_int(w, f->returns[i]);
    put_int(w, f->nreturn_values);
    for (int i = 0; i < f->nreturn_values; i++) {
        const ir_return_value *v = &f->return_values[i];
        put_int(w, v->kind);
        put_int(w, v->count);
        put_int(w, v->rows);
        put_int(w, v->cols);
    }
    put_int(w, f->nscratch);
    for (int i = 0; i < f->nscratch; i++) {
        const ir_scratch *a = &f->scratch[i];
        ser_put_str(w, a->name);
        put_int(w, a->type);
        put_int(w, a->shared);
        put_int(w, a->ndim);
        for (int d = 0; d < a->ndim; d++) ser_put_i64(w, a->dims[d]);
    }
}

/* ---- IR in ------------------------------------------------------------ */

typedef struct reader {
    ser_reader *r;
    ir_func *f;
    int depth;
    int nomem;
} reader;

/* The smallest encodings, to cap counts by the bytes left before
 * allocating for them. */
#define MIN_EXPR 1
#define MIN_STMT 34

static int get_type(reader *rd) {
    int t = ser_get_int(rd->r, IRT_UNSET, IRT_LIKE_PARAM);
    if ((t >= TACK_DTYPE_COUNT && t < IRT_WEAK_INT) || (t < 0 && t != IRT_UNSET)) ser_fail(rd->r);
    return t;
}

static int get_count(reader *rd, size_t min_size) {
    int n = ser_get_int(rd->r, 0, INT_MAX);
    if ((size_t)n > ser_left(rd->r) / min_size) ser_fail(rd->r);
    return rd->r->failed ? 0 : n;
}

static void *alloc(reader *rd, size_t size) {
    void *p = arena_alloc(&rd->f->mem, size ? size : 1);
    if (!p) {
        rd->nomem = 1;
        ser_fail(rd->r);
    }
    return p;
}

static ir_expr *read_expr(reader *rd);
static void read_block(reader *rd, ir_block *b);

static ir_block *read_opt_block(reader *rd) {
    uint8_t tag = ser_get_u8(rd->r);
    if (tag > 1) ser_fail(rd->r);
    if (rd->r->failed || !tag) return NULL;
    ir_block *b = alloc(rd, sizeof *b);
    if (b) read_block(rd, b);
    return rd->r->failed ? NULL : b;
}

static ir_expr **read_exprs(reader *rd, int *n) {
    *n = get_count(rd, MIN_EXPR);
    if (!*n) return NULL;
    ir_expr **v = alloc(rd, (size_t)*n * sizeof *v);
    for (int i = 0; v && i < *n && !rd->r->failed; i++) v[i] = read_expr(rd);
    return rd->r->failed ? NULL : v;
}

/* Facts the verifier leaves to lowering but the code generator relies on. */
static void check_expr(reader *rd, const ir_expr *e) {
    if (e->kind == IR_DIM && (e->dim < 0 || e->dim >= TACK_MAX_NDIM)) ser_fail(rd->r);
    if ((e->kind == IR_LOAD || e->kind == IR_ATOMIC || e->kind == IR_SLOAD) &&
        (e->nargs < 1 || e->nargs > TACK_MAX_NDIM))
        ser_fail(rd->r);
    if (e->kind == IR_CALL) {
        int want = ir_intrinsic_nargs(e->fn);
        if (want >= 0 ? e->nargs != want : e->nargs < 2) ser_fail(rd->r);
    }
}

static ir_expr *read_expr(reader *rd) {
    ser_reader *r = rd->r;
    uint8_t tag = ser_get_u8(r);
    if (tag > 1) ser_fail(r);
    if (r->failed || !tag) return NULL;
    if (++rd->depth > MAX_DEPTH) {
        ser_fail(r);
        return NULL;
    }
    ir_expr *e = alloc(rd, sizeof *e);
    if (!e) return NULL;
    e->kind = ser_get_int(r, IR_CONST, EXPR_KIND_LAST);
    e->type = get_type(rd);
    e->line = ser_get_int(r, INT_MIN, INT_MAX);
    e->col = ser_get_int(r, INT_MIN, INT_MAX);
    e->src = ser_get_int(r, 0, rd->f->nsources ? rd->f->nsources - 1 : 0);
    e->op = ser_get_int(r, OP_ADD, OP_LAST);
    e->index = ser_get_int(r, INT_MIN, INT_MAX);
    e->dim = ser_get_int(r, INT_MIN, INT_MAX);
    e->fn = ser_get_int(r, 0, INTR_COUNT - 1);
    e->i = ser_get_i64(r);
    e->f = ser_get_f64(r);
    e->a = read_expr(rd);
    e->b = read_expr(rd);
    e->cond = read_expr(rd);
    e->args = read_exprs(rd, &e->nargs);
    e->atomic = ser_get_int(r, 0, ATOM_COUNT - 1);
    e->body = read_opt_block(rd);
    e->inline_id = ser_get_int(r, INT_MIN, INT_MAX);
    e->sample = ser_get_int(r, -1, INT_MAX);
    e->index_cast = ser_get_int(r, 0, 2);
    if (!r->failed) check_expr(rd, e);
    rd->depth--;
    return r->failed ? NULL : e;
}

static ir_stmt *read_stmt(reader *rd) {
    ser_reader *r = rd->r;
    ir_stmt *s = alloc(rd, sizeof *s);
    if (!s) return NULL;
    s->kind = ser_get_int(r, IR_ASSIGN, STMT_KIND_LAST);
    s->line = ser_get_int(r, INT_MIN, INT_MAX);
    s->col = ser_get_int(r, INT_MIN, INT_MAX);
    s->src = ser_get_int(r, 0, rd->f->nsources ? rd->f->nsources - 1 : 0);
    s->index = ser_get_int(r, INT_MIN, INT_MAX);
    s->value = read_expr(rd);
    s->indices = read_exprs(rd, &s->nindices);
    s->start = read_expr(rd);
    s->stop = read_expr(rd);
    s->step = read_expr(rd);
    read_block(rd, &s->body);
    read_block(rd, &s->orelse);
    int ntexts = ser_get_int(r, 0, INT_MAX);
    if (ntexts != (s->kind == IR_PRINT ? s->nindices + 1 : 0)) ser_fail(r);
    if (ntexts && !r->failed && (s->texts = alloc(rd, (size_t)ntexts * sizeof *s->texts)))
        for (int i = 0; i < ntexts && !r->failed; i++)
            s->texts[i] = ser_get_str_arena(r, &rd->f->mem);
    if (s->kind == IR_STORE && (s->nindices < 1 || s->nindices > TACK_MAX_NDIM)) ser_fail(r);
    return r->failed ? NULL : s;
}

static void read_block(reader *rd, ir_block *b) {
    b->n = b->cap = 0;
    b->stmts = NULL;
    if (++rd->depth > MAX_DEPTH) {
        ser_fail(rd->r);
        return;
    }
    int n = get_count(rd, MIN_STMT);
    if (n) b->stmts = alloc(rd, (size_t)n * sizeof *b->stmts);
    for (int i = 0; i < n && !rd->r->failed; i++) b->stmts[i] = read_stmt(rd);
    if (!rd->r->failed) b->n = b->cap = n;
    rd->depth--;
}

static void read_param(reader *rd, ir_param *p) {
    ser_reader *r = rd->r;
    p->name = ser_get_str_arena(r, &rd->f->mem);
    p->role = ser_get_int(r, ROLE_UNUSED, ROLE_LAST);
    p->index_ndim = ser_get_int(r, 0, TACK_MAX_NDIM);
    p->max_dim_read = ser_get_int(r, -1, TACK_MAX_NDIM - 1);
    p->written = ser_get_int(r, 0, 1);
    p->vec_width = ser_get_int(r, 0, 255); /* a byte: see TACK_MAT_WIDTH */
    if (!tack_width_valid(p->vec_width)) ser_fail(r);
    p->sampled = ser_get_int(r, 0, 1);
    p->type = get_type(rd);
    p->line = ser_get_int(r, INT_MIN, INT_MAX);
    p->col = ser_get_int(r, INT_MIN, INT_MAX);
    if (!p->name) ser_fail(r); /* messages print it */
}

static void read_local(reader *rd, ir_local *l) {
    l->name = ser_get_str_arena(rd->r, &rd->f->mem);
    l->type = get_type(rd);
    if (!l->name) ser_fail(rd->r); /* ir_local_find compares it */
}

static void read_source(reader *rd, ir_source *s) {
    s->text = ser_get_str_arena(rd->r, &rd->f->mem);
    s->filename = ser_get_str_arena(rd->r, &rd->f->mem);
    s->name = ser_get_str_arena(rd->r, &rd->f->mem);
    s->first_line = ser_get_int(rd->r, INT_MIN, INT_MAX);
    s->parent = ser_get_int(rd->r, -1, INT_MAX);
    s->via_param = ser_get_int(rd->r, -1, TACK_MAX_PARAMS - 1);
    s->via = ser_get_str_arena(rd->r, &rd->f->mem);
    s->via_path = ser_get_str_arena(rd->r, &rd->f->mem);
    if (!s->text || !s->filename || !s->name || !s->via || !s->via_path)
        ser_fail(rd->r); /* messages print them */
}

/* A name's digest is hex SHA-256 as ir_name_digest writes it; anything
 * else (a NUL, say) would not be written back the same. */
static int is_digest(const char *d) {
    for (int i = 0; i < 64; i++)
        if (!((d[i] >= '0' && d[i] <= '9') || (d[i] >= 'a' && d[i] <= 'f'))) return 0;
    return 1;
}

static void read_func(reader *rd) {
    ser_reader *r = rd->r;
    ir_func *f = rd->f;
    if (ser_get_u32(r) != MAGIC || ser_get_u32(r) != IR_FORMAT_VERSION) ser_fail(r);
    int nsources = get_count(rd, 16);
    if (nsources) f->sources = alloc(rd, (size_t)nsources * sizeof *f->sources);
    for (int i = 0; i < nsources && !r->failed; i++) {
        read_source(rd, &f->sources[i]);
        f->sources[i].is_function = i > 0; /* source 0 is the kernel */
    }
    f->nsources = r->failed ? 0 : nsources;
    f->ninlines = ser_get_int(r, 0, INT_MAX);
    f->cur_src = ser_get_int(r, 0, f->nsources ? f->nsources - 1 : 0);
    f->name = ser_get_str_arena(r, &f->mem);
    f->filename = ser_get_str_arena(r, &f->mem);
    f->first_line = ser_get_int(r, INT_MIN, INT_MAX);
    f->source = ser_get_str_arena(r, &f->mem);
    if (!f->name) ser_fail(r); /* the verifier's messages print it */
    f->nparams = ser_get_int(r, 0, TACK_MAX_PARAMS);
    f->params = alloc(rd, (size_t)(f->nparams ? f->nparams : 1) * sizeof *f->params);
    f->params_cap = f->params ? f->nparams : 0;
    for (int i = 0; i < f->nparams && !r->failed; i++) read_param(rd, &f->params[i]);
    f->nlocals = get_count(rd, 4);
    if (f->nlocals) f->locals = alloc(rd, (size_t)f->nlocals * sizeof *f->locals);
    for (int i = 0; i < f->nlocals && !r->failed; i++) read_local(rd, &f->locals[i]);
    f->locals_cap = r->failed ? 0 : f->nlocals;
    f->loop_var = ser_get_int(r, INT_MIN, INT_MAX);
    f->start = read_expr(rd);
    f->stop = read_expr(rd);
    f->step = read_expr(rd);
    f->ninner = ser_get_int(r, 0, 2);
    for (int d = 0; d < 2; d++) f->inner_var[d] = ser_get_int(r, INT_MIN, INT_MAX);
    for (int d = 0; d < 2; d++) f->inner_stop[d] = read_expr(rd);
    read_block(rd, &f->body);
    f->default_float = get_type(rd);
    f->disjoint = ser_get_int(r, 0, 1);
    int nres = get_count(rd, 12);
    if (nres) f->resolved = alloc(rd, (size_t)nres * sizeof *f->resolved);
    for (int i = 0; i < nres && !r->failed; i++) {
        ir_resolution *res = &f->resolved[i];
        res->src = ser_get_int(r, 0, f->nsources ? f->nsources - 1 : 0);
        res->name = ser_get_str_arena(r, &f->mem);
        size_t n;
        int is_null;
        const char *digest = ser_get_str(r, &n, &is_null);
        if (!res->name || !digest || n != 64 || !is_digest(digest)) {
            ser_fail(r);
            break;
        }
        memcpy(res->digest, digest, 64);
        res->digest[64] = 0;
    }
    f->nresolved = r->failed ? 0 : nres;
    int nsites = get_count(rd, 16);
    if (nsites) f->sites = alloc(rd, (size_t)nsites * sizeof *f->sites);
    for (int i = 0; i < nsites && !r->failed; i++) {
        f->sites[i].src = ser_get_int(r, 0, f->nsources ? f->nsources - 1 : 0);
        f->sites[i].line = ser_get_int(r, INT_MIN, INT_MAX);
        f->sites[i].col = ser_get_int(r, INT_MIN, INT_MAX);
        f->sites[i].param = ser_get_int(r, -IR_MAX_SCRATCH, f->nparams ? f->nparams - 1 : 0);
    }
    f->nsites = r->failed ? 0 : nsites;
    f->debug_errors = ser_get_int(r, -1, f->nparams - 1);
    f->debug_extents = ser_get_int(r, -1, f->nparams - 1);
    f->collective = ser_get_int(r, 0, 1);
    f->rng_seed = ser_get_int(r, -1, f->nparams - 1);
    if (f->rng_seed >= 0 && f->params[f->rng_seed].role != ROLE_SCALAR) ser_fail(r);
    f->nreductions = ser_get_int(r, 0, IR_MAX_REDUCTIONS);
    for (int i = 0; i < f->nreductions && !r->failed; i++) {
        ir_reduction *x = &f->reductions[i];
        x->param = ser_get_int(r, 0, f->nparams - 1);
        x->op = (ir_atomic_op)ser_get_int(r, ATOM_ADD, ATOM_MUL);
        if (x->op == ATOM_EXCHANGE || x->op == ATOM_COMPARE_EXCHANGE) ser_fail(r);
        x->type = get_type(rd);
        x->i = ser_get_i64(r);
        union { int64_t b; double d; } u = {ser_get_i64(r)};
        x->f = u.d;
        if (!r->failed && f->params[x->param].role != ROLE_ARRAY) ser_fail(r);
    }
    f->nreturns = ser_get_int(r, 0, IR_MAX_REDUCTIONS);
    for (int i = 0; i < f->nreturns && !r->failed; i++)
        f->returns[i] = ser_get_int(r, 0, f->nreductions ? f->nreductions - 1 : 0);
    if (f->nreturns && !f->nreductions) ser_fail(r);
    f->nreturn_values = ser_get_int(r, 0, TACK_MAX_RESULT_VALUES);
    int numbers = 0;
    for (int i = 0; i < f->nreturn_values && !r->failed; i++) {
        ir_return_value *v = &f->return_values[i];
        v->kind = (tack_result_kind)ser_get_int(r, TACK_RESULT_SCALAR, TACK_RESULT_MATRIX);
        v->count = ser_get_int(r, 1, IR_MAX_REDUCTIONS);
        v->rows = ser_get_int(r, 0, IR_MAX_REDUCTIONS);
        v->cols = ser_get_int(r, 0, IR_MAX_REDUCTIONS);
        numbers += v->count;
    }
    if (!r->failed && numbers != f->nreturns) ser_fail(r); /* the groups cover the returns */
    int nscratch = ser_get_int(r, 0, IR_MAX_SCRATCH);
    for (int i = 0; i < nscratch && !r->failed; i++) {
        ir_scratch a = {0};
        size_t n;
        int is_null;
        a.name = ser_get_str(r, &n, &is_null);
        a.type = get_type(rd);
        a.shared = ser_get_int(r, 0, 1);
        a.ndim = ser_get_int(r, 1, TACK_MAX_NDIM);
        int64_t size = 1;
        for (int d = 0; d < a.ndim && !r->failed; d++) {
            a.dims[d] = ser_get_i64(r);
            if (a.dims[d] < 1 || a.dims[d] > IR_SCRATCH_MAX_ELEMENTS ||
                (size *= a.dims[d]) > IR_SCRATCH_MAX_ELEMENTS)
                ser_fail(r);
        }
        if (!a.name || ((a.type < 0 || a.type >= TACK_DTYPE_COUNT) && a.type != IRT_WEAK_FLOAT) ||
            a.type == TACK_F16 || a.type == TACK_BOOL)
            ser_fail(r);
        if (!r->failed && ir_scratch_add(f, &a) < 0) ser_fail(r);
    }
}

tack_status ir_deserialize(ser_reader *r, int typed, ir_func **out, tack_error *err) {
    *out = NULL;
    size_t start = r->pos;
    ir_func *f = ir_func_new();
    if (!f) {
        ser_fail(r);
        err->status = TACK_ERR_NOMEM;
        snprintf(err->message, sizeof err->message, "out of memory reading cached IR");
        return TACK_ERR_NOMEM;
    }
    reader rd = {r, f, 0, 0};
    if (!r->failed) read_func(&rd);
    if (r->failed) {
        err->status = rd.nomem ? TACK_ERR_NOMEM : TACK_ERR_INTERNAL;
        err->lineno = 0;
        snprintf(err->message, sizeof err->message,
                 rd.nomem ? "out of memory reading cached IR"
                          : "cached IR is damaged or of another format (near byte %zu)",
                 r->pos - start);
        ir_func_free(f);
        return err->status;
    }
    /* The stop expressions are required: lowering always sets them. */
    int ok = f->start && f->stop && f->step;
    for (int d = 0; d < f->ninner; d++) ok = ok && f->inner_stop[d];
    if (!ok || ir_verify(f, "deserialize", typed, err) != TACK_OK) {
        if (!ok) {
            err->status = TACK_ERR_INTERNAL;
            snprintf(err->message, sizeof err->message, "cached IR lacks its launch range");
        }
        ser_fail(r);
        ir_func_free(f);
        return TACK_ERR_INTERNAL;
    }
    *out = f;
    return TACK_OK;
}
