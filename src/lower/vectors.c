/* vectors.c - vector values (tack.vec2f ... vec4i), scalarized during
 * lowering.  Nothing after lowering sees a vector: each becomes one scalar
 * local per component, computed by a setup block (see lower_internal.h).
 * The setup evaluates every operand exactly once and in order, so device
 * calls and loads inside vector expressions behave as in scalar code. */
#include <stdio.h>
#include <string.h>

#include "lower_internal.h"

int vec_width_of(lowerer *L, int param) {
    return param >= 0 && param < L->f->nparams ? tack_width_components(L->f->params[param].vec_width) : 0;
}

int cx_param(lowerer *L, int param) {
    return param >= 0 && param < L->f->nparams && L->f->params[param].vec_width == TACK_COMPLEX_WIDTH;
}

int mat_rows_of(lowerer *L, int param) {
    int w = param >= 0 && param < L->f->nparams ? L->f->params[param].vec_width : 0;
    return tack_width_rows(w);
}

void vec_shape_name(const ir_expr *v, char *buf, size_t size) {
    if (v->cplx) snprintf(buf, size, "complex number");
    else if (v->dim) snprintf(buf, size, "%dx%d matrix", v->dim, v->nargs / v->dim);
    else snprintf(buf, size, "%d-component vector", v->nargs);
}

static int same_shape(const ir_expr *a, const ir_expr *b) {
    return a->nargs == b->nargs && a->dim == b->dim;
}

int vec_is(const ir_expr *e) { return e && e->kind == IR_VECTOR; }

ir_expr *lower_read_local(lowerer *L, int local, const expr *at) {
    ir_expr *r = ir_expr_new(L->f, IR_LOCAL, at->line, at->col);
    if (!r) lower_oom(L);
    else r->index = local;
    return r;
}

static int push(lowerer *L, ir_block *b, ir_stmt *s) {
    if (!s || ir_block_push(L->f, b, s)) return lower_oom(L);
    return 0;
}

int lower_set_local(lowerer *L, ir_block *b, int local, ir_expr *value, const expr *at) {
    if (!value) return -1;
    ir_stmt *s = ir_stmt_new(L->f, IR_ASSIGN, at->line, at->col);
    if (!s) return lower_oom(L);
    s->index = local;
    s->value = value;
    return push(L, b, s);
}

int vec_eval(lowerer *L, ir_block *b, ir_expr *v) {
    ir_expr *run = ir_expr_new(L->f, IR_INLINE, v->line, v->col);
    ir_stmt *s = ir_stmt_new(L->f, IR_EVAL, v->line, v->col);
    if (!run || !s) return lower_oom(L);
    run->body = v->body;
    run->index = -1;
    run->inline_id = L->f->ninlines++;
    s->value = run;
    return push(L, b, s);
}

/* A new vector value with `width` fresh component locals and an empty
 * setup, which the caller fills.  A matrix is the same with dim = rows
 * (components row-major); mat_new sets it. */
ir_expr *vec_new(lowerer *L, int width, const expr *at) {
    if (width > MAX_COMPONENTS) {
        ERR(L, at->line, at->col, "a value of %d components: values have at most %d (16x16)", width,
            MAX_COMPONENTS);
        return NULL;
    }
    ir_expr *v = ir_expr_new(L->f, IR_VECTOR, at->line, at->col);
    ir_block *setup = arena_alloc(&L->f->mem, sizeof *setup);
    ir_expr **comps = arena_alloc(&L->f->mem, (size_t)(width > 0 ? width : 1) * sizeof *comps);
    if (!v || !setup || !comps) {
        lower_oom(L);
        return NULL;
    }
    v->body = setup;
    v->args = comps;
    v->nargs = width;
    for (int k = 0; k < width; k++) {
        int t = lower_temp(L, "v");
        if (t < 0 || !(comps[k] = lower_read_local(L, t, at))) return NULL;
    }
    return v;
}

ir_expr *mat_new(lowerer *L, int rows, int cols, const expr *at) {
    /* Matrix values have 2-16 rows and columns (tack.matrix's shapes). */
    if (rows > TACK_MAX_MAT_SIDE || cols > TACK_MAX_MAT_SIDE) {
        ERR(L, at->line, at->col, "a %dx%d matrix: matrices have at most %d rows and %d columns",
            rows, cols, TACK_MAX_MAT_SIDE, TACK_MAX_MAT_SIDE);
        return NULL;
    }
    ir_expr *m = vec_new(L, rows * cols, at);
    if (m) m->dim = rows;
    return m;
}

static int comp_local(const ir_expr *v, int k) { return v->args[k]->index; }

ir_expr *vec_component(lowerer *L, const ir_expr *v, int k, const expr *at) {
    if (v->dim) {
        ERR(L, at->line, at->col, "'.%c' needs a vector; a matrix's components are m[row, col]",
            "xyzw"[k]);
        return NULL;
    }
    return vec_component_at(L, v, k, at);
}

ir_expr *vec_component_at(lowerer *L, const ir_expr *v, int k, const expr *at) {
    if (k >= v->nargs) {
        ERR(L, at->line, at->col, "component '%c' of a %d-component vector", "xyzw"[k], v->nargs);
        return NULL;
    }
    ir_expr *x = ir_expr_new(L->f, IR_INLINE, at->line, at->col);
    if (!x) {
        lower_oom(L);
        return NULL;
    }
    x->body = v->body; /* runs the setup, then reads one component */
    x->index = comp_local(v, k);
    x->inline_id = L->f->ninlines++;
    return x;
}

/* Evaluates a scalar once into a temp so it can be read per component. */
static int hoist_scalar(lowerer *L, ir_block *b, ir_expr *s, const expr *at) {
    int t = lower_temp(L, "s");
    if (t < 0 || lower_set_local(L, b, t, s, at)) return -1;
    return t;
}

typedef ir_expr *(*component_fn)(lowerer *L, ir_expr **ops, int n, const expr *at, const void *ctx);

/* Applies `make` component by component; scalar operands broadcast. */
static ir_expr *vec_map(lowerer *L, ir_expr **ops, int n, const expr *at, component_fn make,
                        const void *ctx) {
    const ir_expr *shape = NULL;
    for (int i = 0; i < n; i++) {
        if (!ops[i]) return NULL;
        if (!vec_is(ops[i])) continue;
        if (shape && !same_shape(shape, ops[i])) {
            char a[64], b[64];
            vec_shape_name(shape, a, sizeof a);
            vec_shape_name(ops[i], b, sizeof b);
            ERR(L, at->line, at->col, "a %s and a %s cannot be combined component by component%s",
                a, b, shape->dim && !ops[i]->dim ? "; '@' multiplies a matrix by a vector" : "");
            return NULL;
        }
        shape = ops[i];
    }
    if (!shape) return NULL;
    int width = shape->nargs;
    ir_expr *out = vec_new(L, width, at);
    if (!out) return NULL;
    out->dim = shape->dim;
    int scalar_tmp[8] = {0};
    if (n > 8) {
        ERR(L, at->line, at->col, "too many operands");
        return NULL;
    }
    for (int i = 0; i < n; i++) {
        if (vec_is(ops[i])) {
            if (vec_eval(L, out->body, ops[i])) return NULL;
        } else if ((scalar_tmp[i] = hoist_scalar(L, out->body, ops[i], at)) < 0) {
            return NULL;
        }
    }
    for (int k = 0; k < width; k++) {
        ir_expr *comp[8];
        for (int i = 0; i < n; i++)
            if (!(comp[i] = lower_read_local(L, vec_is(ops[i]) ? comp_local(ops[i], k) : scalar_tmp[i], at)))
                return NULL;
        if (lower_set_local(L, out->body, comp_local(out, k), make(L, comp, n, at, ctx), at)) return NULL;
    }
    return out;
}

static ir_expr *make_binop(lowerer *L, ir_expr **ops, int n, const expr *at, const void *ctx) {
    (void)n;
    ir_expr *x = ir_expr_new(L->f, IR_BINOP, at->line, at->col);
    if (!x) return NULL;
    x->op = *(const ir_op *)ctx;
    x->a = ops[0];
    x->b = ops[1];
    return x;
}

ir_expr *vec_binop(lowerer *L, ir_op op, ir_expr *a, ir_expr *b, const expr *at) {
    if (op >= OP_LT) {
        ERR(L, at->line, at->col, "vectors cannot be compared; compare their components");
        return NULL;
    }
    ir_expr *ops[2] = {a, b};
    return vec_map(L, ops, 2, at, make_binop, &op);
}

static ir_expr *make_unop(lowerer *L, ir_expr **ops, int n, const expr *at, const void *ctx) {
    (void)n;
    ir_expr *x = ir_expr_new(L->f, IR_UNOP, at->line, at->col);
    if (!x) return NULL;
    x->op = *(const ir_op *)ctx;
    x->a = ops[0];
    return x;
}

ir_expr *vec_unop(lowerer *L, ir_op op, ir_expr *a, const expr *at) {
    if (op == OP_NOT) {
        ERR(L, at->line, at->col, "'not' needs a scalar, not a vector");
        return NULL;
    }
    return vec_map(L, &a, 1, at, make_unop, &op);
}

static ir_expr *make_cast(lowerer *L, ir_expr **ops, int n, const expr *at, const void *ctx) {
    (void)n;
    ir_expr *x = ir_expr_new(L->f, IR_CAST, at->line, at->col);
    if (!x) return NULL;
    x->type = *(const ir_type *)ctx;
    x->a = ops[0];
    return x;
}

ir_expr *vec_cast(lowerer *L, ir_type to, ir_expr *a, const expr *at) {
    return vec_map(L, &a, 1, at, make_cast, &to);
}

static ir_expr *make_call(lowerer *L, ir_expr **ops, int n, const expr *at, const void *ctx) {
    ir_expr *x = ir_expr_new(L->f, IR_CALL, at->line, at->col);
    ir_expr **args = arena_alloc(&L->f->mem, n * sizeof *args);
    if (!x || !args) return NULL;
    memcpy(args, ops, n * sizeof *args);
    x->fn = *(const ir_intrinsic *)ctx;
    x->args = args;
    x->nargs = n;
    return x;
}

ir_expr *vec_call(lowerer *L, ir_intrinsic fn, ir_expr **args, int n, const expr *at) {
    if (fn == INTR_ISNAN || fn == INTR_ISINF || fn == INTR_ISFINITE || fn == INTR_ROUND) {
        ERR(L, at->line, at->col, "%s() needs a scalar, not a vector", ir_intrinsic_name(fn));
        return NULL;
    }
    return vec_map(L, args, n, at, make_call, &fn);
}

ir_expr *vec_select(lowerer *L, ir_expr *cond, ir_expr *a, ir_expr *b, const expr *at) {
    if (!cond || !a || !b) return NULL;
    if (vec_is(cond)) {
        ERR(L, at->line, at->col, "a condition must be a scalar, not a vector");
        return NULL;
    }
    if (!vec_is(a) || !vec_is(b) || !same_shape(a, b)) {
        ERR(L, at->line, at->col, "both sides of a conditional expression must be vectors (or "
            "matrices) of the same shape");
        return NULL;
    }
    if (a->cplx != b->cplx) {
        ERR(L, at->line, at->col, "both sides of a conditional expression must be complex "
            "numbers, or neither");
        return NULL;
    }
    /* Only the chosen side's setup runs. */
    ir_expr *out = vec_new(L, a->nargs, at);
    if (out) {
        out->dim = a->dim;
        out->cplx = a->cplx;
        out->quat = a->quat && b->quat;
    }
    ir_stmt *s = ir_stmt_new(L->f, IR_IF, at->line, at->col);
    if (!out || !s) {
        lower_oom(L);
        return NULL;
    }
    s->value = cond;
    ir_expr *side[2] = {a, b};
    ir_block *blocks[2] = {&s->body, &s->orelse};
    for (int i = 0; i < 2; i++) {
        if (vec_eval(L, blocks[i], side[i])) return NULL;
        for (int k = 0; k < a->nargs; k++)
            if (lower_set_local(L, blocks[i], comp_local(out, k), lower_read_local(L, comp_local(side[i], k), at), at))
                return NULL;
    }
    return push(L, out->body, s) ? NULL : out;
}

ir_expr *vec_construct(lowerer *L, ir_type component, int width, ir_expr **args, int n,
                       const expr *at) {
    /* Vectors among several arguments give their components in order:
     * tack.transformf(p, q) is p's 3 then q's 4 (Warp's transform). */
    int flat = 0, any_vec = 0;
    for (int i = 0; i < n; i++) {
        if (!args[i]) return NULL;
        any_vec |= vec_is(args[i]) != 0;
        flat += vec_is(args[i]) ? (args[i]->dim ? width + 1 : args[i]->nargs) : 1;
    }
    if (n > 1 && any_vec) {
        if (flat != width) {
            ERR(L, at->line, at->col, "a %d-component vector cannot be made of %d components", width, flat);
            return NULL;
        }
        ir_expr *out = vec_new(L, width, at);
        if (!out) return NULL;
        int k = 0;
        for (int i = 0; i < n; i++) {
            if (!vec_is(args[i])) {
                int t = hoist_scalar(L, out->body, args[i], at);
                if (t < 0) return NULL;
                ir_expr *c = ir_expr_new(L->f, IR_CAST, at->line, at->col);
                if (!c) return NULL;
                c->type = component;
                c->a = lower_read_local(L, t, at);
                if (lower_set_local(L, out->body, comp_local(out, k++), c, at)) return NULL;
                continue;
            }
            if (vec_eval(L, out->body, args[i])) return NULL;
            for (int j = 0; j < args[i]->nargs; j++) {
                ir_expr *c = ir_expr_new(L->f, IR_CAST, at->line, at->col);
                if (!c) return NULL;
                c->type = component;
                c->a = lower_read_local(L, comp_local(args[i], j), at);
                if (lower_set_local(L, out->body, comp_local(out, k++), c, at)) return NULL;
            }
        }
        return out;
    }
    if (n != 0 && n != 1 && n != width) {
        ERR(L, at->line, at->col, "a %d-component vector takes 0, 1 or %d values, got %d", width,
            width, n);
        return NULL;
    }
    ir_expr *out = vec_new(L, width, at);
    if (!out) return NULL;
    if (n == 0) { /* tack.vec3f(): zero, as Warp's wp.vec3() */
        for (int k = 0; k < width; k++)
            if (lower_set_local(L, out->body, comp_local(out, k),
                                make_cast(L, (ir_expr *[]){ir_const_int(L->f, 0, IRT_WEAK_INT, at->line, at->col)},
                                          1, at, &component), at))
                return NULL;
        return out;
    }
    if (n == 1 && vec_is(args[0])) { /* tack.vec3f(m[0]), tack.vec3f(v_int): converted */
        if (args[0]->dim || args[0]->nargs != width) {
            char have[64];
            vec_shape_name(args[0], have, sizeof have);
            ERR(L, at->line, at->col, "a %d-component vector cannot be made of a %s", width, have);
            return NULL;
        }
        return vec_cast(L, component, args[0], at);
    }
    int tmp[MAX_COMPONENTS];
    for (int i = 0; i < n; i++) {
        if (!args[i]) return NULL;
        if (vec_is(args[i])) {
            ERR(L, at->line, at->col, "vector components must be scalars");
            return NULL;
        }
        if ((tmp[i] = hoist_scalar(L, out->body, args[i], at)) < 0) return NULL;
    }
    for (int k = 0; k < width; k++) {
        ir_expr *c = ir_expr_new(L->f, IR_CAST, at->line, at->col);
        if (!c) return NULL;
        c->type = component;
        c->a = lower_read_local(L, tmp[n == 1 ? 0 : k], at);
        if (lower_set_local(L, out->body, comp_local(out, k), c, at)) return NULL;
    }
    return out;
}

/* Sum of products of components: the dot product of a and b, whose setups
 * the caller has already emitted into `b`. */
static ir_expr *dot_of(lowerer *L, const ir_expr *a, const ir_expr *b, const expr *at) {
    ir_expr *sum = NULL;
    for (int k = 0; k < a->nargs; k++) {
        ir_expr *m = ir_expr_new(L->f, IR_BINOP, at->line, at->col);
        if (!m) return NULL;
        m->op = OP_MUL;
        m->a = lower_read_local(L, comp_local(a, k), at);
        m->b = lower_read_local(L, comp_local(b, k), at);
        if (!sum) {
            sum = m;
            continue;
        }
        ir_expr *add = ir_expr_new(L->f, IR_BINOP, at->line, at->col);
        if (!add) return NULL;
        add->op = OP_ADD;
        add->a = sum;
        add->b = m;
        sum = add;
    }
    return sum;
}

static ir_expr *sqrt_of(lowerer *L, ir_expr *x, const expr *at) {
    ir_intrinsic fn = INTR_SQRT;
    return x ? make_call(L, &x, 1, at, &fn) : NULL;
}

ir_expr *vec_method(lowerer *L, const char *name, ir_expr *self, ir_expr **args, int n,
                    const expr *at) {
    int want = !strcmp(name, "dot") ? 1 : 0;
    if (self->dim) {
        ERR(L, at->line, at->col, "%s() is a method of vectors, not of matrices", name);
        return NULL;
    }
    if (n != want) {
        ERR(L, at->line, at->col, "%s() takes %d argument%s, got %d", name, want,
            want == 1 ? "" : "s", n);
        return NULL;
    }
    if (!strcmp(name, "normalized")) {
        /* v / |v|, with v evaluated once. */
        ir_expr *out = vec_new(L, self->nargs, at);
        if (!out || vec_eval(L, out->body, self)) return NULL;
        int len = hoist_scalar(L, out->body, sqrt_of(L, dot_of(L, self, self, at), at), at);
        if (len < 0) return NULL;
        for (int k = 0; k < self->nargs; k++) {
            ir_expr *d = ir_expr_new(L->f, IR_BINOP, at->line, at->col);
            if (!d) return NULL;
            d->op = OP_DIV;
            d->a = lower_read_local(L, comp_local(self, k), at);
            d->b = lower_read_local(L, len, at);
            if (lower_set_local(L, out->body, comp_local(out, k), d, at)) return NULL;
        }
        return out;
    }
    /* dot and length give a scalar: an inlined block with one result. */
    ir_expr *other = want ? args[0] : self;
    if (!other) return NULL;
    if (!vec_is(other) || !same_shape(other, self)) {
        ERR(L, at->line, at->col, "dot() needs a vector of %d components", self->nargs);
        return NULL;
    }
    ir_expr *x = ir_expr_new(L->f, IR_INLINE, at->line, at->col);
    ir_block *body = arena_alloc(&L->f->mem, sizeof *body);
    int r = lower_temp(L, "dot");
    if (!x || !body || r < 0) {
        lower_oom(L);
        return NULL;
    }
    x->body = body;
    x->index = r;
    x->inline_id = L->f->ninlines++;
    if (vec_eval(L, body, self) || (other != self && vec_eval(L, body, other))) return NULL;
    ir_expr *value = dot_of(L, self, other, at);
    if (!strcmp(name, "length")) value = sqrt_of(L, value, at);
    return lower_set_local(L, body, r, value, at) ? NULL : x;
}

ir_expr *vec_load(lowerer *L, int param, ir_expr **idx, int n, const expr *at) {
    int width = vec_width_of(L, param);
    ir_expr *out = vec_new(L, width, at);
    if (!out) return NULL;
    out->dim = mat_rows_of(L, param);
    out->cplx = cx_param(L, param);
    out->quat = qt_param(L, param);
    int itmp[TACK_MAX_NDIM];
    for (int i = 0; i < n; i++)
        if ((itmp[i] = hoist_scalar(L, out->body, idx[i], at)) < 0) return NULL;
    /* Component k of element (i, j) is storage element (i, j, k). */
    for (int k = 0; k < width; k++) {
        ir_expr *ld = ir_expr_new(L->f, IR_LOAD, at->line, at->col);
        ir_expr **args = arena_alloc(&L->f->mem, (n + 1) * sizeof *args);
        if (!ld || !args) {
            lower_oom(L);
            return NULL;
        }
        for (int i = 0; i < n; i++) args[i] = lower_read_local(L, itmp[i], at);
        args[n] = ir_const_int(L->f, k, IRT_WEAK_INT, at->line, at->col);
        ld->index = param;
        ld->args = args;
        ld->nargs = n + 1;
        if (lower_set_local(L, out->body, comp_local(out, k), ld, at)) return NULL;
    }
    return out;
}

int vec_store(lowerer *L, ir_block *b, int param, ir_expr **idx, int n, ir_expr *v, const stmt *at) {
    int width = vec_width_of(L, param);
    const expr where = {.line = at->line, .col = at->col};
    if (cx_param(L, param)) {
        /* a real value stores as (v, 0); vectors are refused */
        if (!vec_is(v)) v = cx_make(L, v, ir_const_float(L->f, 0.0, IRT_WEAK_FLOAT, at->line, at->col), &where);
        if (!v) return -1;
        if (!cx_is(v)) {
            ERR(L, at->line, at->col, "'%s' holds complex numbers; a vector cannot be stored into it",
                L->f->params[param].name);
            return -1;
        }
    } else if (cx_is(v)) {
        ERR(L, at->line, at->col, "'%s' is not an array of complex numbers; store z.real or "
            "z.imag, or pass a complex64/complex128 array", L->f->params[param].name);
        return -1;
    }
    if (!vec_is(v) || v->nargs != width || v->dim != mat_rows_of(L, param)) {
        char want[64];
        ir_expr shape = {.nargs = width, .dim = mat_rows_of(L, param)};
        vec_shape_name(&shape, want, sizeof want);
        ERR(L, at->line, at->col, "'%s' holds a %s per element; assign a %s",
            L->f->params[param].name, want, want);
        return -1;
    }
    int itmp[TACK_MAX_NDIM];
    for (int i = 0; i < n; i++)
        if ((itmp[i] = hoist_scalar(L, b, idx[i], &where)) < 0) return -1;
    if (vec_eval(L, b, v)) return -1;
    for (int k = 0; k < width; k++) {
        ir_stmt *s = ir_stmt_new(L->f, IR_STORE, at->line, at->col);
        ir_expr **args = arena_alloc(&L->f->mem, (n + 1) * sizeof *args);
        if (!s || !args) return lower_oom(L);
        for (int i = 0; i < n; i++) args[i] = lower_read_local(L, itmp[i], &where);
        args[n] = ir_const_int(L->f, k, IRT_WEAK_INT, at->line, at->col);
        s->index = param;
        s->indices = args;
        s->nindices = n + 1;
        s->value = lower_read_local(L, comp_local(v, k), &where);
        if (push(L, b, s)) return -1;
    }
    return 0;
}

int vec_atomic_update(lowerer *L, ir_block *b, int param, ir_expr **idx, int n, ir_atomic_op op,
                      ir_expr *v, const stmt *at) {
    int width = vec_width_of(L, param);
    const expr where = {.line = at->line, .col = at->col};
    if (cx_param(L, param) != cx_is(v) && vec_is(v)) {
        ERR(L, at->line, at->col, cx_is(v) ? "'%s' is not an array of complex numbers"
                                           : "'%s' holds complex numbers; update it with a complex or real value",
            L->f->params[param].name);
        return -1;
    }
    /* z += r changes only the real part */
    if (cx_param(L, param) && !vec_is(v)) width = 1;
    if (vec_is(v) && (v->nargs != width || v->dim != mat_rows_of(L, param))) {
        char want[64];
        ir_expr shape = {.nargs = width, .dim = mat_rows_of(L, param)};
        vec_shape_name(&shape, want, sizeof want);
        ERR(L, at->line, at->col, "'%s' holds %ss; update it with a %s or a scalar",
            L->f->params[param].name, want, want);
        return -1;
    }
    int itmp[TACK_MAX_NDIM], scalar = -1;
    for (int i = 0; i < n; i++)
        if ((itmp[i] = hoist_scalar(L, b, idx[i], &where)) < 0) return -1;
    /* A scalar adds to every component, as in the plain form. */
    if (vec_is(v) ? vec_eval(L, b, v) : (scalar = hoist_scalar(L, b, v, &where)) < 0) return -1;
    for (int k = 0; k < width; k++) {
        ir_stmt *s = ir_stmt_new(L->f, IR_EVAL, at->line, at->col);
        ir_expr *x = ir_expr_new(L->f, IR_ATOMIC, at->line, at->col);
        ir_expr **args = arena_alloc(&L->f->mem, (n + 1) * sizeof *args);
        if (!s || !x || !args) return lower_oom(L);
        for (int i = 0; i < n; i++) args[i] = lower_read_local(L, itmp[i], &where);
        args[n] = ir_const_int(L->f, k, IRT_WEAK_INT, at->line, at->col);
        x->index = param;
        x->atomic = op;
        x->dim = 1; /* an augmented update */
        x->args = args;
        x->nargs = n + 1;
        x->a = lower_read_local(L, scalar >= 0 ? scalar : comp_local(v, k), &where);
        s->value = x;
        if (push(L, b, s)) return -1;
    }
    return 0;
}

/* tack.atomic_<op>(x, k, v) on an array of vectors or matrices: one atomic
 * per component (Warp's), whose old values make the result; a scalar v
 * goes to every component.  Not one atomic over the whole element: other
 * iterations may see some components updated and others not. */
ir_expr *vec_atomic(lowerer *L, int param, ir_expr **idx, int n, ir_atomic_op op, ir_expr *v,
                    const expr *at) {
    int width = vec_width_of(L, param), rows = mat_rows_of(L, param);
    if (cx_param(L, param) || cx_is(v)) {
        ERR(L, at->line, at->col, "atomics on arrays of complex numbers are not supported; update "
            "z.real and z.imag");
        return NULL;
    }
    if (op == ATOM_COMPARE_EXCHANGE) {
        ERR(L, at->line, at->col, "tack.atomic_compare_exchange works on arrays of scalars, not "
            "of vectors");
        return NULL;
    }
    if (vec_is(v) && (v->nargs != width || v->dim != rows)) {
        char want[64];
        ir_expr shape = {.nargs = width, .dim = rows};
        vec_shape_name(&shape, want, sizeof want);
        ERR(L, at->line, at->col, "'%s' holds %ss; tack.atomic_%s takes a %s or a scalar",
            L->f->params[param].name, want, ir_atomic_name(op), want);
        return NULL;
    }
    ir_expr *out = vec_new(L, width, at);
    if (!out) return NULL;
    out->dim = rows;
    int itmp[TACK_MAX_NDIM], scalar = -1;
    for (int i = 0; i < n; i++)
        if ((itmp[i] = hoist_scalar(L, out->body, idx[i], at)) < 0) return NULL;
    if (vec_is(v) ? vec_eval(L, out->body, v) : (scalar = hoist_scalar(L, out->body, v, at)) < 0)
        return NULL;
    for (int k = 0; k < width; k++) {
        ir_expr *x = ir_expr_new(L->f, IR_ATOMIC, at->line, at->col);
        ir_expr **args = arena_alloc(&L->f->mem, (n + 1) * sizeof *args);
        if (!x || !args) {
            lower_oom(L);
            return NULL;
        }
        for (int i = 0; i < n; i++) args[i] = lower_read_local(L, itmp[i], at);
        args[n] = ir_const_int(L->f, k, IRT_WEAK_INT, at->line, at->col);
        x->index = param;
        x->atomic = op;
        x->args = args;
        x->nargs = n + 1;
        x->a = lower_read_local(L, scalar >= 0 ? scalar : comp_local(v, k), at);
        if (lower_set_local(L, out->body, comp_local(out, k), x, at)) return NULL;
    }
    return out;
}

/* A vector value computed for its effects only (a statement): atomics
 * whose old value only fed a component become plain atomic statements,
 * which the passes treat as updates (private copies, gradients). */
int vec_discard(lowerer *L, ir_block *b, ir_expr *v) {
    for (int i = 0; i < v->body->n; i++) {
        ir_stmt *s = v->body->stmts[i];
        if (s->kind == IR_ASSIGN && s->value->kind == IR_ATOMIC) s->kind = IR_EVAL;
    }
    return vec_eval(L, b, v);
}

ir_expr *vec_from_locals(lowerer *L, ir_expr *setup, const int *locals, int width, int rows,
                         const expr *at) {
    ir_expr *out = vec_new(L, width, at);
    if (out) out->dim = rows;
    ir_stmt *s = ir_stmt_new(L->f, IR_EVAL, at->line, at->col);
    if (!out || !s) {
        lower_oom(L);
        return NULL;
    }
    s->value = setup; /* NULL: the locals are set already */
    if (setup && push(L, out->body, s)) return NULL;
    for (int k = 0; k < width; k++)
        if (lower_set_local(L, out->body, comp_local(out, k), lower_read_local(L, locals[k], at), at)) return NULL;
    return out;
}

ir_expr *vec_read_local(lowerer *L, const binding *b, const expr *at) {
    ir_expr *out = vec_new(L, b->width, at);
    if (!out) return NULL;
    out->dim = b->rows;
    out->cplx = b->cplx;
    out->quat = b->quat;
    for (int k = 0; k < b->width; k++)
        if (lower_set_local(L, out->body, comp_local(out, k), lower_read_local(L, b->comps[k], at), at)) return NULL;
    return out;
}

int vec_assign_local(lowerer *L, ir_block *blk, binding *b, ir_expr *v, const stmt *at) {
    const expr where = {.line = at->line, .col = at->col};
    if (b->kind == BIND_LOCAL) {
        if (b->holds_scalar) {
            ERR(L, at->line, at->col, "'%s' holds a scalar elsewhere; a name keeps one kind of value",
                b->name);
            return -1;
        }
        /* The name's first vector: give it one local per component, named
         * after the binding's own scope (a device function's parameter is
         * bound while the caller's scope is current). */
        b->kind = BIND_VECTOR;
        b->width = v->nargs;
        b->rows = v->dim;
        b->cplx = v->cplx;
        b->quat = v->quat; /* the first value's: a 4-vector assigned later is read as one */
        for (int k = 0; k < v->nargs; k++) {
            char name[256];
            int cols = v->dim ? v->nargs / v->dim : 0;
            if (v->dim && v->dim <= 9 && cols <= 9)
                snprintf(name, sizeof name, "%s.%d%d@%d", b->name, k / cols, k % cols, b->owner);
            else if (v->dim) /* x.1_11, x.11_1: past 9 the digits need a separator */
                snprintf(name, sizeof name, "%s.%d_%d@%d", b->name, k / cols, k % cols, b->owner);
            else if (k < 4)
                snprintf(name, sizeof name, "%s.%c@%d", b->name, "xyzw"[k], b->owner);
            else /* past w (tack.vector(n, dtype)): numbered */
                snprintf(name, sizeof name, "%s.%d@%d", b->name, k, b->owner);
            if ((b->comps[k] = ir_local_add(L->f, name)) < 0) return lower_oom(L);
        }
    } else if (b->cplx != v->cplx) {
        ERR(L, at->line, at->col, "'%s' holds %s elsewhere; a name keeps one kind of value", b->name,
            b->cplx ? "complex numbers" : "vectors");
        return -1;
    } else if (b->width != v->nargs || b->rows != v->dim) {
        char have[64], got[64];
        ir_expr shape = {.nargs = b->width, .dim = b->rows};
        vec_shape_name(&shape, have, sizeof have);
        vec_shape_name(v, got, sizeof got);
        ERR(L, at->line, at->col, "'%s' holds %ss, not a %s", b->name, have, got);
        return -1;
    }
    if (vec_eval(L, blk, v)) return -1;
    for (int k = 0; k < v->nargs; k++)
        if (lower_set_local(L, blk, b->comps[k], lower_read_local(L, comp_local(v, k), &where), &where)) return -1;
    return 0;
}

/* ---- leftovers ---- */

static const ir_expr *find_vector(const ir_expr *e);

static const ir_expr *find_in_block(const ir_block *b) {
    for (int i = 0; b && i < b->n; i++) {
        const ir_stmt *s = b->stmts[i];
        const ir_expr *found = NULL;
        const ir_expr *parts[4] = {s->value, s->start, s->stop, s->step};
        for (int p = 0; p < 4 && !found; p++) found = find_vector(parts[p]);
        for (int k = 0; k < s->nindices && !found; k++) found = find_vector(s->indices[k]);
        if (!found) found = find_in_block(&s->body);
        if (!found) found = find_in_block(&s->orelse);
        if (found) return found;
    }
    return NULL;
}

static const ir_expr *find_vector(const ir_expr *e) {
    if (!e) return NULL;
    if (e->kind == IR_VECTOR) return e;
    const ir_expr *found = find_vector(e->a);
    if (!found) found = find_vector(e->b);
    if (!found) found = find_vector(e->cond);
    for (int i = 0; i < e->nargs && !found; i++) found = find_vector(e->args[i]);
    if (!found && e->body) found = find_in_block(e->body);
    return found;
}

int vec_check_none_left(lowerer *L, const ir_block *b) {
    const ir_expr *v = find_vector(L->f->stop);
    if (!v) v = find_in_block(b);
    if (!v) return 0;
    /* Report in the source the leftover came from. */
    const ir_source *s = &L->f->sources[v->src];
    src_info where = {s->text, s->filename, s->first_line, s->name, s->is_function};
    char what[64];
    vec_shape_name(v, what, sizeof what);
    if (!L->failed++)
        src_error(&where, v->line, v->col, L->err, "a %s cannot be used here; a scalar is needed",
                  what);
    return -1;
}
