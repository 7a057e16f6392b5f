/* textures.c - tex.sample(u, v, w) on a tack.Texture3D, done in software
 * (an IR_INLINE marked with the texture, which a GPU dialect with hardware
 * filtering may sample instead, from the same coordinates):
 * trilinear interpolation between texel centers, coordinates normalized to
 * [0, 1] along each axis of the data (u: axis 0, v: axis 1, w: axis 2), and
 * clamp to edge.  The arithmetic is in the texture's own element type.
 * The three extents are read as x.shape[d], so they land in the shape
 * signature like any other dimension the body reads. */
#include <stdio.h>

#include "lower_internal.h"

typedef struct sampler {
    lowerer *L;
    const expr *at;
    ir_block *body;
    int param;
} sampler;

static ir_expr *node(sampler *s, ir_expr_kind kind) {
    ir_expr *e = ir_expr_new(s->L->f, kind, s->at->line, s->at->col);
    if (!e) lower_oom(s->L);
    return e;
}

static ir_expr *bin(sampler *s, ir_op op, ir_expr *a, ir_expr *b) {
    ir_expr *e = a && b ? node(s, IR_BINOP) : NULL;
    if (e) {
        e->op = op;
        e->a = a;
        e->b = b;
    }
    return e;
}

static ir_expr *read(sampler *s, int local) {
    ir_expr *e = node(s, IR_LOCAL);
    if (e) e->index = local;
    return e;
}

static ir_expr *call(sampler *s, ir_intrinsic fn, ir_expr *a, ir_expr *b) {
    ir_expr *e = a ? node(s, IR_CALL) : NULL;
    ir_expr **args = e ? arena_alloc(&s->L->f->mem, 2 * sizeof *args) : NULL;
    if (!args) return NULL;
    args[0] = a;
    args[1] = b;
    e->fn = fn;
    e->args = args;
    e->nargs = b ? 2 : 1;
    return e;
}

/* Converts to the texture's element type. */
static ir_expr *as_texel(sampler *s, ir_expr *a) {
    ir_expr *e = a ? node(s, IR_CAST) : NULL;
    if (e) {
        e->type = IRT_LIKE_PARAM;
        e->index = s->param;
        e->a = a;
    }
    return e;
}

static ir_expr *cast(sampler *s, ir_type t, ir_expr *a) {
    ir_expr *e = a ? node(s, IR_CAST) : NULL;
    if (e) {
        e->type = t;
        e->a = a;
    }
    return e;
}

static ir_expr *dim(sampler *s, int d) {
    ir_expr *e = node(s, IR_DIM);
    if (e) {
        e->index = s->param;
        e->dim = d;
        e->type = TACK_I64;
    }
    return e;
}

static ir_expr *lit(sampler *s, int64_t v) {
    ir_expr *e = ir_const_int(s->L->f, v, IRT_WEAK_INT, s->at->line, s->at->col);
    if (!e) lower_oom(s->L);
    return e;
}

/* local = value; returns the local or -1. */
static int let(sampler *s, ir_expr *value) {
    int l = lower_temp(s->L, "tex");
    ir_stmt *st = l >= 0 && value ? ir_stmt_new(s->L->f, IR_ASSIGN, s->at->line, s->at->col) : NULL;
    if (!st || ir_block_push(s->L->f, s->body, st)) return value ? lower_oom(s->L) : -1;
    st->index = l;
    st->value = value;
    return l;
}

/* min(max(i, 0), n - 1) */
static ir_expr *clamp_index(sampler *s, ir_expr *i, int d) {
    return call(s, INTR_MIN, call(s, INTR_MAX, i, lit(s, 0)), bin(s, OP_SUB, dim(s, d), lit(s, 1)));
}

static ir_expr *texel(sampler *s, const int *idx) {
    ir_expr *e = node(s, IR_LOAD);
    ir_expr **args = e ? arena_alloc(&s->L->f->mem, 3 * sizeof *args) : NULL;
    if (!args) return NULL;
    for (int d = 0; d < 3; d++) args[d] = read(s, idx[d]);
    e->index = s->param;
    e->args = args;
    e->nargs = 3;
    return e;
}

/* a + (b - a) * t */
static ir_expr *lerp(sampler *s, ir_expr *a, ir_expr *b, int t) {
    if (!a || !b) return NULL;
    int la = let(s, a), lb = let(s, b);
    if (la < 0 || lb < 0) return NULL;
    return bin(s, OP_ADD, read(s, la), bin(s, OP_MUL, bin(s, OP_SUB, read(s, lb), read(s, la)), read(s, t)));
}

ir_expr *lower_texture_sample(lowerer *L, int param, ir_expr **coords, int n, const expr *at) {
    ir_param *p = &L->f->params[param];
    if (n != 3) {
        ERR(L, at->line, at->col, "%s.sample() takes 3 coordinates (u, v, w), got %d", p->name, n);
        return NULL;
    }
    for (int i = 0; i < 3; i++)
        if (vec_is(coords[i])) {
            ERR(L, at->line, at->col, "texture coordinates must be scalars");
            return NULL;
        }
    if (vec_width_of(L, param) || (p->role != ROLE_UNUSED && p->role != ROLE_ARRAY) ||
        (p->index_ndim && p->index_ndim != 3)) {
        ERR(L, at->line, at->col, "'%s' is sampled here, so it must be a tack.Texture3D", p->name);
        return NULL;
    }
    p->role = ROLE_ARRAY;
    p->index_ndim = 3;
    p->sampled = 1;
    if (p->max_dim_read < 2) p->max_dim_read = 2;

    ir_expr *x = ir_expr_new(L->f, IR_INLINE, at->line, at->col);
    ir_block *body = arena_alloc(&L->f->mem, sizeof *body);
    if (!x || !body) {
        lower_oom(L);
        return NULL;
    }
    sampler s = {L, at, body, param};
    /* The coordinates first, in the texture's type, each in a local: the
     * body's first three statements (ir.h's `sample`), where a GPU with
     * hardware filtering takes them instead of running the rest. */
    int coord[3];
    for (int d = 0; d < 3; d++)
        if ((coord[d] = let(&s, as_texel(&s, coords[d]))) < 0) return NULL;
    int lo[3], hi[3], frac[3];
    for (int d = 0; d < 3; d++) {
        /* f = c * n - 0.5: texel centers sit at (i + 0.5) / n. */
        ir_expr *f = bin(&s, OP_SUB, bin(&s, OP_MUL, read(&s, coord[d]), as_texel(&s, dim(&s, d))),
                         as_texel(&s, ir_const_float(L->f, 0.5, IRT_WEAK_FLOAT, at->line, at->col)));
        int fl = let(&s, f);
        int base = fl >= 0 ? let(&s, call(&s, INTR_FLOOR, read(&s, fl), NULL)) : -1;
        if (base < 0) return NULL;
        frac[d] = let(&s, bin(&s, OP_SUB, read(&s, fl), read(&s, base)));
        int i0 = let(&s, cast(&s, TACK_I64, read(&s, base)));
        if (frac[d] < 0 || i0 < 0) return NULL;
        lo[d] = let(&s, clamp_index(&s, read(&s, i0), d));
        hi[d] = let(&s, clamp_index(&s, bin(&s, OP_ADD, read(&s, i0), lit(&s, 1)), d));
        if (lo[d] < 0 || hi[d] < 0) return NULL;
    }
    /* Blend the eight neighbours along axis 2, then 1, then 0. */
    ir_expr *plane[2];
    for (int a = 0; a < 2; a++) {
        ir_expr *row[2];
        for (int b = 0; b < 2; b++) {
            int i0[3] = {a ? hi[0] : lo[0], b ? hi[1] : lo[1], lo[2]};
            int i1[3] = {i0[0], i0[1], hi[2]};
            row[b] = lerp(&s, texel(&s, i0), texel(&s, i1), frac[2]);
        }
        plane[a] = lerp(&s, row[0], row[1], frac[1]);
    }
    int result = let(&s, lerp(&s, plane[0], plane[1], frac[0]));
    if (result < 0) return NULL;
    x->body = body;
    x->index = result;
    x->inline_id = L->f->ninlines++;
    x->sample = param;
    return x;
}
