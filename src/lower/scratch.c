/* scratch.c - arrays a kernel allocates itself (ir_scratch):
 *
 *   a = tack.local(shape, dtype)    zeroed each time the line runs, private
 *                                   to the iteration (a small matrix, a stack)
 *   t = tack.shared(shape, dtype)   one per workgroup, not initialized, for
 *                                   the lanes to share (see workgroups.c)
 *
 * The shape is integer literals or module constants (a tuple for several
 * dimensions) and the dtype a scalar one (f32 when left out) or a complex
 * one (tack.complex64/complex128, NumPy's, Python's complex): a complex
 * array is one of its parts' type with a last hidden dimension of 2 (real,
 * imaginary), read and written as complex values.  Both are
 * part of the source and need no key.  The name is then indexed like an
 * array with exactly as many indices as dimensions: IR_SLOAD and
 * IR_SSTORE, which resolve_dims turns into row-major offsets.
 *
 * A module-level table (`DIRS = ((1, 0), (0, 1))`, which the host answers
 * as TACK_NAME_TABLE) is such an array too: one per table and scope,
 * filled with its numbers at the start of every launch iteration, and
 * read only.  Its values are in the name's digest, so the disk cache
 * keys them as it keys constants. */
#include <stdio.h>
#include <string.h>

#include "lower_internal.h"

/* The value of integer literals and constants combined with + - * // <<
 * (tack.WORKGROUP + 2); 0 when e is anything else or overflows. */
static int fold(const ir_expr *e, int64_t *out) {
    int64_t a, b;
    if (e->kind == IR_CONST) {
        *out = e->i;
        return !ir_type_is_float(e->type) && e->type != IRT_WEAK_FLOAT;
    }
    if (e->kind != IR_BINOP || !fold(e->a, &a) || !fold(e->b, &b)) return 0;
    switch (e->op) {
    case OP_ADD: return !__builtin_add_overflow(a, b, out);
    case OP_SUB: return !__builtin_sub_overflow(a, b, out);
    case OP_MUL: return !__builtin_mul_overflow(a, b, out);
    case OP_FLOORDIV:
        if (b <= 0 || a < 0) return 0;
        *out = a / b;
        return 1;
    case OP_SHL:
        if (a < 0 || b < 0 || b > 40) return 0;
        *out = a << b;
        return 1;
    default: return 0;
    }
}

/* A compile-time extent, after lowering. */
static int const_extent(lowerer *L, const expr *e, int64_t *out) {
    ir_expr *v = lower_expr(L, e);
    if (!v) return -1;
    if (!fold(v, out)) {
        ERR(L, e->line, e->col, "an array's shape must be integers known when the kernel is "
            "compiled: literals, module constants and + - * // << of them");
        return -1;
    }
    return 0;
}

int scratch_declare(lowerer *L, ir_block *b, const stmt *s, int shared, ir_type dtype, int cplx) {
    const expr *t = s->targets[0], *call = s->value;
    const char *what = shared ? "tack.shared" : "tack.local";
    if (s->ntargets != 1 || t->kind != EX_NAME) {
        ERR(L, s->line, s->col, "%s(...) must be assigned to one name", what);
        return -1;
    }
    if (call->nitems < 1 || call->nitems > 2) {
        ERR(L, call->line, call->col, "%s(shape, dtype) takes 1 or 2 arguments, got %d", what,
            call->nitems);
        return -1;
    }
    ir_scratch a = {.name = t->name, .type = dtype, .shared = shared};
    const expr *shape = call->items[0];
    int n = shape->kind == EX_TUPLE ? shape->nitems : 1;
    if (n < 1 || n + (cplx != 0) > TACK_MAX_NDIM) {
        ERR(L, shape->line, shape->col, "%s arrays%s have 1 to %d dimensions", what,
            cplx ? " of complex numbers" : "", TACK_MAX_NDIM - (cplx != 0));
        return -1;
    }
    a.ndim = n;
    int64_t size = 1;
    for (int d = 0; d < n; d++) {
        const expr *x = shape->kind == EX_TUPLE ? shape->items[d] : shape;
        if (const_extent(L, x, &a.dims[d])) return -1;
        if (a.dims[d] < 1 || a.dims[d] > IR_SCRATCH_MAX_ELEMENTS ||
            (size *= a.dims[d]) > IR_SCRATCH_MAX_ELEMENTS) {
            ERR(L, x->line, x->col, "%s arrays hold 1 to %d elements", what,
                IR_SCRATCH_MAX_ELEMENTS);
            return -1;
        }
    }
    if (cplx) { /* the parts: a last dimension of 2 */
        a.dims[a.ndim++] = 2;
        if ((size *= 2) > IR_SCRATCH_MAX_ELEMENTS) {
            ERR(L, shape->line, shape->col, "%s arrays hold 1 to %d complex numbers", what,
                IR_SCRATCH_MAX_ELEMENTS / 2);
            return -1;
        }
    }
    binding *bound = (binding *)scope_find(L->sc, t->name);
    if (!bound || (bound->kind != BIND_LOCAL && bound->kind != BIND_SCRATCH) || bound->holds_scalar) {
        ERR(L, t->line, t->col, "'%s' holds another kind of value elsewhere; a name keeps one kind",
            t->name);
        return -1;
    }
    if (bound->kind == BIND_SCRATCH) {
        ERR(L, t->line, t->col, "'%s' is already an array of the kernel's own; use another name",
            t->name);
        return -1;
    }
    int id = ir_scratch_add(L->f, &a);
    if (id < 0) {
        ERR(L, s->line, s->col, "a kernel has at most %d arrays of its own", IR_MAX_SCRATCH);
        return -1;
    }
    bound->kind = BIND_SCRATCH;
    bound->index = id;
    L->complex_rows[id] = cplx != 0;
    if (shared) {
        L->f->collective = 1;
        return 0;
    }
    /* Zeroed where the line runs, as Python makes a new array there. */
    int k = lower_temp(L, "zero");
    if (k < 0) return -1;
    const expr where = {.line = s->line, .col = s->col};
    ir_stmt *loop = ir_stmt_new(L->f, IR_FOR, s->line, s->col);
    ir_stmt *st = ir_stmt_new(L->f, IR_SSTORE, s->line, s->col);
    ir_expr **idx = arena_alloc(&L->f->mem, sizeof *idx);
    ir_expr *at = lower_read_local(L, k, &where);
    if (!loop || !st || !idx || !at) return lower_oom(L);
    idx[0] = at;
    loop->index = k;
    loop->start = ir_const_int(L->f, 0, IRT_WEAK_INT, s->line, s->col);
    loop->stop = ir_const_int(L->f, size, IRT_WEAK_INT, s->line, s->col);
    loop->step = ir_const_int(L->f, 1, IRT_WEAK_INT, s->line, s->col);
    st->index = id;
    st->indices = idx;
    st->nindices = 1;
    st->value = ir_const_int(L->f, 0, IRT_WEAK_INT, s->line, s->col);
    if (!loop->start || !loop->stop || !loop->step || !st->value ||
        ir_block_push(L->f, &loop->body, st) || ir_block_push(L->f, b, loop))
        return lower_oom(L);
    return 0;
}

/* The scratch array holding the table `n` names (made on its first read
 * in this scope); -1 after an error. */
static int table_scratch(lowerer *L, const expr *at, const tack_name *n) {
    for (int i = 0; i < L->ntables; i++)
        if (L->tables[i].ctx == L->sc->resolver_ctx && !strcmp(L->tables[i].name, at->name))
            return L->tables[i].id;
    int64_t rows = n->table_shape[0], cols = n->table_ndim == 2 ? n->table_shape[1] : 1;
    if (rows > TACK_MAX_TABLE_ELEMENTS || cols > TACK_MAX_TABLE_ELEMENTS / rows) {
        ERR(L, at->line, at->col, "'%s' is a table of more than %d numbers; kernels inline "
            "tables, so pass a larger one as an array argument", at->name, TACK_MAX_TABLE_ELEMENTS);
        return -1;
    }
    /* Integers make an i64 table, floats the kernel's float type (settled
     * by inference, as for a float literal): as a tuple written inside. */
    ir_scratch a = {.name = at->name, .ndim = n->table_ndim, .dims = {rows, cols},
                    .type = n->table_ints ? TACK_I64 : IRT_WEAK_FLOAT};
    int id = ir_scratch_add(L->f, &a);
    if (id < 0 || L->ntables >= IR_MAX_SCRATCH) {
        ERR(L, at->line, at->col, "a kernel has at most %d arrays and tuples of its own",
            IR_MAX_SCRATCH);
        return -1;
    }
    for (int64_t i = 0; i < rows * cols; i++) {
        ir_stmt *st = ir_stmt_new(L->f, IR_SSTORE, at->line, at->col);
        ir_expr **idx = arena_alloc(&L->f->mem, sizeof *idx);
        if (!st || !idx) return lower_oom(L);
        idx[0] = ir_const_int(L->f, i, IRT_WEAK_INT, at->line, at->col);
        st->value = n->table_ints ? ir_const_int(L->f, n->table_ints[i], IRT_WEAK_INT, at->line, at->col)
                                  : ir_const_float(L->f, n->table_floats[i], IRT_WEAK_FLOAT, at->line,
                                                   at->col);
        st->index = id;
        st->indices = idx;
        st->nindices = 1; /* row-major offset, as a tuple written inside */
        if (!idx[0] || !st->value || ir_block_push(L->f, &L->table_stores, st)) return lower_oom(L);
    }
    L->tables[L->ntables].ctx = L->sc->resolver_ctx;
    L->tables[L->ntables].name = at->name;
    L->tables[L->ntables++].id = id;
    return id;
}

int scratch_of(lowerer *L, const expr *arr) {
    if (arr->kind == EX_SUBSCRIPT) return scratch_of(L, arr->a); /* t[k][j] */
    if (arr->kind != EX_NAME) return -1;
    const binding *b = scope_find(L->sc, arr->name);
    if (b && b->kind == BIND_ROW && b->row_scratch) return b->index;
    if (b) return b->kind == BIND_SCRATCH ? b->index : -1;
    /* Not the function's own name: a module-level table? */
    tack_name n;
    if (lower_resolve(L, arr, &n)) return -1; /* it said why (a list, a ragged tuple...) */
    return n.kind == TACK_NAME_TABLE ? table_scratch(L, arr, &n) : -1;
}

int scratch_is_table(const lowerer *L, int id) {
    for (int i = 0; i < L->ntables; i++)
        if (L->tables[i].id == id) return 1;
    return 0;
}

int scratch_fill_tables(lowerer *L) {
    ir_func *f = L->f;
    if (!L->table_stores.n) return 0;
    int n = L->table_stores.n + f->body.n;
    ir_stmt **v = arena_alloc(&f->mem, n * sizeof *v);
    if (!v) return lower_oom(L);
    memcpy(v, L->table_stores.stmts, L->table_stores.n * sizeof *v);
    memcpy(v + L->table_stores.n, f->body.stmts, f->body.n * sizeof *v);
    f->body.stmts = v;
    f->body.n = f->body.cap = n;
    return 0;
}

/* The indices of `a[items...]` (after a row's), exactly one per dimension. */
static ir_expr **scratch_indices(lowerer *L, int id, const expr *sub) {
    const ir_scratch *a = &L->f->scratch[id];
    view v;
    if (view_of(L, sub->a, &v)) return NULL;
    int n = v.nprefix + sub->nitems, want = a->ndim - L->complex_rows[id];
    if (n != want) {
        ERR(L, sub->line, sub->col, "'%s' has %d dimension%s; index it with %d", a->name, want,
            want == 1 ? "" : "s", want);
        return NULL;
    }
    ir_expr **idx = arena_alloc(&L->f->mem, n * sizeof *idx);
    if (!idx) {
        lower_oom(L);
        return NULL;
    }
    for (int i = 0; i < v.nprefix; i++) idx[i] = v.prefix[i];
    for (int i = 0; i < sub->nitems; i++)
        if (!(idx[v.nprefix + i] = lower_expr(L, sub->items[i]))) return NULL;
    return idx;
}

ir_expr *scratch_load_at(lowerer *L, int id, ir_expr **idx, int n, const expr *at) {
    ir_expr *x = ir_expr_new(L->f, IR_SLOAD, at->line, at->col);
    if (!x) {
        lower_oom(L);
        return NULL;
    }
    x->index = id;
    x->args = idx;
    x->nargs = n;
    return x;
}

/* A row of a module-level table, DIRS[k] of ((1, 0), (0, 1), ...): a
 * vector of the last dimension's entries, as Warp's and Taichi's tables of
 * vectors are used. */
static ir_expr *table_row(lowerer *L, int id, const expr *sub) {
    const ir_scratch *a = &L->f->scratch[id];
    int width = (int)a->dims[a->ndim - 1], n = a->ndim - 1;
    ir_expr *row = vec_new(L, width, sub);
    ir_expr **first = arena_alloc(&L->f->mem, n * sizeof *first);
    int held[TACK_MAX_NDIM];
    if (!row || !first) {
        if (row) lower_oom(L);
        return NULL;
    }
    for (int i = 0; i < n; i++) {
        ir_expr *x = lower_expr(L, sub->items[i]);
        if (!x || (held[i] = lower_temp(L, "t")) < 0 || lower_set_local(L, row->body, held[i], x, sub))
            return NULL;
    }
    for (int k = 0; k < width; k++) {
        ir_expr **idx = arena_alloc(&L->f->mem, (n + 1) * sizeof *idx);
        if (!idx) {
            lower_oom(L);
            return NULL;
        }
        for (int i = 0; i < n; i++)
            if (!(idx[i] = lower_read_local(L, held[i], sub))) return NULL;
        if (!(idx[n] = lower_ival(L, k, sub)) ||
            lower_set_local(L, row->body, row->args[k]->index, scratch_load_at(L, id, idx, n + 1, sub), sub))
            return NULL;
    }
    return row;
}

/* Element idx[0..n) of a complex array: the indices held once, then
 * parts (..., 0) and (..., 1). */
static ir_expr *complex_load(lowerer *L, int id, ir_expr **idx, int n, const expr *at) {
    ir_expr *z = vec_new(L, 2, at);
    int held[TACK_MAX_NDIM];
    if (!z) return NULL;
    z->cplx = 1;
    for (int i = 0; i < n; i++)
        if ((held[i] = lower_temp(L, "ci")) < 0 || lower_set_local(L, z->body, held[i], idx[i], at))
            return NULL;
    for (int k = 0; k < 2; k++) {
        ir_expr **at_k = arena_alloc(&L->f->mem, (n + 1) * sizeof *at_k);
        if (!at_k) {
            lower_oom(L);
            return NULL;
        }
        for (int i = 0; i < n; i++)
            if (!(at_k[i] = lower_read_local(L, held[i], at))) return NULL;
        if (!(at_k[n] = lower_ival(L, k, at)) ||
            lower_set_local(L, z->body, z->args[k]->index, scratch_load_at(L, id, at_k, n + 1, at), at))
            return NULL;
    }
    return z;
}

/* Stores value (complex, or real with a zero imaginary part) into
 * element idx[0..n) of a complex array; everything evaluated once. */
static int complex_store(lowerer *L, ir_block *b, int id, ir_expr **idx, int n, ir_expr *value,
                         const stmt *at) {
    const expr where = {.line = at->line, .col = at->col};
    ir_expr *part[2];
    if (cx_is(value)) {
        if (vec_eval(L, b, value)) return -1;
        part[0] = lower_read_local(L, value->args[0]->index, &where);
        part[1] = lower_read_local(L, value->args[1]->index, &where);
    } else {
        part[0] = value;
        part[1] = ir_const_float(L->f, 0.0, IRT_WEAK_FLOAT, at->line, at->col);
    }
    int held[TACK_MAX_NDIM];
    for (int i = 0; i < n; i++)
        if ((held[i] = lower_temp(L, "ci")) < 0 || lower_set_local(L, b, held[i], idx[i], &where))
            return -1;
    for (int k = 0; k < 2; k++) {
        ir_stmt *st = ir_stmt_new(L->f, IR_SSTORE, at->line, at->col);
        ir_expr **at_k = arena_alloc(&L->f->mem, (n + 1) * sizeof *at_k);
        if (!st || !at_k || !part[k]) return lower_oom(L);
        for (int i = 0; i < n; i++)
            if (!(at_k[i] = lower_read_local(L, held[i], &where))) return -1;
        if (!(at_k[n] = lower_ival(L, k, &where))) return -1;
        st->index = id;
        st->indices = at_k;
        st->nindices = n + 1;
        st->value = part[k];
        if (ir_block_push(L->f, b, st)) return lower_oom(L);
    }
    return 0;
}

ir_expr *scratch_load(lowerer *L, int id, const expr *sub) {
    const ir_scratch *a = &L->f->scratch[id];
    if (L->complex_rows[id]) {
        ir_expr **idx = scratch_indices(L, id, sub);
        return idx ? complex_load(L, id, idx, a->ndim - 1, sub) : NULL;
    }
    const binding *row = sub->a->kind == EX_NAME ? scope_find(L->sc, sub->a->name) : NULL;
    if ((scratch_is_table(L, id) || L->vector_rows[id]) && sub->a->kind == EX_NAME && !(row && row->kind == BIND_ROW) &&
        a->ndim >= 2 &&
        sub->nitems == a->ndim - 1 && a->dims[a->ndim - 1] <= MAX_COMPONENTS)
        return table_row(L, id, sub);
    ir_expr **idx = scratch_indices(L, id, sub);
    return idx ? scratch_load_at(L, id, idx, L->f->scratch[id].ndim, sub) : NULL;
}

int scratch_store(lowerer *L, ir_block *b, int id, const expr *sub, ir_expr *value,
                  const stmt *at) {
    if (scratch_is_table(L, id)) {
        ERR(L, at->line, at->col, "'%s' is a module-level table, which kernels only read",
            L->f->scratch[id].name);
        return -1;
    }
    if (L->complex_rows[id] && !(vec_is(value) && !cx_is(value))) {
        ir_expr **idx = scratch_indices(L, id, sub);
        return idx ? complex_store(L, b, id, idx, L->f->scratch[id].ndim - 1, value, at) : -1;
    }
    if (vec_is(value)) {
        ERR(L, at->line, at->col, "'%s' holds %s; store one component",
            L->f->scratch[id].name, L->complex_rows[id] ? "complex numbers" : "scalars");
        return -1;
    }
    ir_expr **idx = scratch_indices(L, id, sub);
    if (!idx) return -1;
    ir_stmt *s = ir_stmt_new(L->f, IR_SSTORE, at->line, at->col);
    if (!s) return lower_oom(L);
    s->index = id;
    s->indices = idx;
    s->nindices = L->f->scratch[id].ndim;
    s->value = value;
    return ir_block_push(L->f, b, s) ? lower_oom(L) : 0;
}

ir_expr *scratch_dim(lowerer *L, int id, int d, const expr *at) {
    const ir_scratch *a = &L->f->scratch[id];
    int nd = a->ndim - L->complex_rows[id]; /* a complex array's parts are no dimension */
    if (d < 0 || d >= nd) {
        ERR(L, at->line, at->col, "'%s' has %d dimension%s", a->name, nd, nd == 1 ? "" : "s");
        return NULL;
    }
    ir_expr *x = ir_const_int(L->f, a->dims[d], IRT_WEAK_INT, at->line, at->col);
    if (!x) lower_oom(L);
    return x;
}
