/* views.c - rows of arrays, sequences and tuples as Python code uses them:
 *
 *   b[i][j]              the same element as b[i, j]
 *   row = b[i]           a row of b (when `row` is indexed somewhere): row[j]
 *                        reads and writes b[i, j], with i as it was then
 *   for v in seq:        seq an array, a row, a kernel's own array or a
 *                        tuple: v = seq[k] for k in range(len(seq)); a row
 *                        when the elements are rows (`for d in DIRS`), and
 *                        `for a, b in pairs` unpacks each element
 *   n, m = a.shape       its extents
 *   w = (0.2, 0.5, 0.3)  a tuple of numbers (nested: 2-D): a kernel's own
 *                        array holding them (scratch.c), float ones in the
 *                        kernel's float type as float literals are
 *
 * A row is a binding (BIND_ROW) to the array and the locals that hold the
 * indices selecting it; nothing is copied. */
#include <stdio.h>
#include <string.h>

#include "lower_internal.h"

/* The array (parameter or scratch) a plain name or attribute stands for. */
static int base_of(lowerer *L, const expr *e, view *v) {
    v->param = v->scratch = -1;
    if (e->kind == EX_NAME) {
        const binding *b = scope_find(L->sc, e->name);
        int id = !b || b->kind == BIND_SCRATCH ? scratch_of(L, e) : -1; /* a table too */
        if (id >= 0) {
            v->scratch = id;
            return 1;
        }
    }
    v->param = array_param_of(L, e);
    return v->param >= 0;
}

int view_of(lowerer *L, const expr *arr, view *v) {
    memset(v, 0, sizeof *v);
    v->param = v->scratch = -1;
    if (arr->kind == EX_NAME) {
        const binding *b = scope_find(L->sc, arr->name);
        if (!b || b->kind != BIND_ROW) return 0;
        if (b->row_scratch) v->scratch = b->index;
        else v->param = b->index;
        v->nprefix = b->nprefix;
        v->prefix = arena_alloc(&L->f->mem, (b->nprefix ? b->nprefix : 1) * sizeof *v->prefix);
        if (!v->prefix) return lower_oom(L);
        for (int i = 0; i < b->nprefix; i++)
            if (!(v->prefix[i] = lower_read_local(L, b->prefix[i], arr))) return -1;
        return 0;
    }
    if (arr->kind != EX_SUBSCRIPT || (arr->a->kind == EX_ATTR && !strcmp(arr->a->name, "shape")))
        return 0;
    /* b[i][j]: the row b[i], then j. */
    view inner;
    if (view_of(L, arr->a, &inner)) return -1;
    if (!inner.nprefix && !base_of(L, arr->a, &inner)) return 0;
    int n = inner.nprefix + arr->nitems;
    if (n > TACK_MAX_NDIM) {
        ERR(L, arr->line, arr->col, "too many indices (at most %d)", TACK_MAX_NDIM);
        return -1;
    }
    *v = inner;
    v->nprefix = n;
    v->prefix = arena_alloc(&L->f->mem, n * sizeof *v->prefix);
    if (!v->prefix) return lower_oom(L);
    for (int i = 0; i < inner.nprefix; i++) v->prefix[i] = inner.prefix[i];
    for (int i = 0; i < arr->nitems; i++)
        if (!(v->prefix[inner.nprefix + i] = lower_expr(L, arr->items[i]))) return -1;
    return 0;
}

ir_expr *view_element(lowerer *L, const view *v, ir_expr **idx, int n, const expr *at) {
    if (v->scratch >= 0) {
        const ir_scratch *a = &L->f->scratch[v->scratch];
        if (n != a->ndim) {
            ERR(L, at->line, at->col, "'%s' has %d dimension%s, not %d", a->name, a->ndim,
                a->ndim == 1 ? "" : "s", n);
            return NULL;
        }
        return scratch_load_at(L, v->scratch, idx, n, at);
    }
    ir_param *prm = &L->f->params[v->param];
    int comps = vec_width_of(L, v->param) ? 1 : 0;
    if (use_param(L, v->param, ROLE_ARRAY, at->line, at->col)) return NULL;
    if (prm->index_ndim && prm->index_ndim != n + comps) {
        ERR(L, at->line, at->col, "'%s' is indexed with %d indices here and %d elsewhere",
            prm->name, n, prm->index_ndim - comps);
        return NULL;
    }
    prm->index_ndim = n + comps;
    if (comps) return vec_load(L, v->param, idx, n, at);
    ir_expr *x = ir_expr_new(L->f, IR_LOAD, at->line, at->col);
    if (!x) {
        lower_oom(L);
        return NULL;
    }
    x->index = v->param;
    x->args = idx;
    x->nargs = n;
    return x;
}

/* ---- where a name is indexed, which makes `name = b[i]` a row ---- */

static int expr_indexes(const expr *e, const char *name) {
    if (!e) return 0;
    if (e->kind == EX_SUBSCRIPT && e->a->kind == EX_NAME && !strcmp(e->a->name, name)) return 1;
    if (e->kind == EX_CALL && e->a->kind == EX_NAME && !strcmp(e->a->name, "len") &&
        e->nitems == 1 && e->items[0]->kind == EX_NAME && !strcmp(e->items[0]->name, name))
        return 1;
    if (expr_indexes(e->a, name) || expr_indexes(e->b, name) || expr_indexes(e->c, name)) return 1;
    for (int i = 0; i < e->nitems; i++)
        if (expr_indexes(e->items[i], name)) return 1;
    return 0;
}

static int body_indexes(stmt *const *body, int n, const char *name) {
    for (int i = 0; i < n; i++) {
        const stmt *s = body[i];
        for (int t = 0; t < s->ntargets; t++)
            if (expr_indexes(s->targets[t], name)) return 1;
        /* `for x in name:` reads it as a sequence too */
        if (expr_indexes(s->value, name) ||
            (s->kind == ST_FOR && s->value->kind == EX_NAME && !strcmp(s->value->name, name)) ||
            body_indexes(s->body, s->nbody, name) || body_indexes(s->orelse, s->norelse, name))
            return 1;
    }
    return 0;
}

int view_name_is_indexed(lowerer *L, const char *name) {
    const func_def *d = L->sc->def;
    return d && body_indexes(d->body, d->nbody, name);
}

/* Binds `name` to the row v (its indices held in locals), emitting their
 * evaluation into b. */
static int bind_row(lowerer *L, ir_block *b, const expr *name, const view *v) {
    binding *bound = (binding *)scope_find(L->sc, name->name);
    if (!bound || bound->holds_scalar || bound->kind == BIND_VECTOR || bound->kind == BIND_SCRATCH ||
        (bound->kind == BIND_ROW && (bound->index != (v->scratch >= 0 ? v->scratch : v->param) ||
                                     bound->row_scratch != (v->scratch >= 0) ||
                                     bound->nprefix != v->nprefix))) {
        ERR(L, name->line, name->col, "'%s' is a row of an array here and holds something else "
            "elsewhere; a name keeps one kind of value", name->name);
        return -1;
    }
    if (bound->kind != BIND_ROW) {
        bound->kind = BIND_ROW;
        bound->index = v->scratch >= 0 ? v->scratch : v->param;
        bound->row_scratch = v->scratch >= 0;
        bound->nprefix = v->nprefix;
        for (int i = 0; i < v->nprefix; i++)
            if ((bound->prefix[i] = lower_temp(L, "row")) < 0) return -1;
    }
    for (int i = 0; i < v->nprefix; i++)
        if (lower_set_local(L, b, bound->prefix[i], v->prefix[i], name)) return -1;
    return 0;
}

int view_assign_row(lowerer *L, ir_block *b, const stmt *s) {
    const expr *t = s->targets[0];
    view v;
    if (mat_chain_is_element(L, s->value)) return 1; /* a vector or matrix: its value */
    if (view_of(L, s->value, &v)) return -1;
    if (!v.nprefix) return 1; /* not a row after all */
    if (v.scratch >= 0 && v.nprefix >= L->f->scratch[v.scratch].ndim) return 1; /* an element */
    return bind_row(L, b, t, &v);
}

/* ---- which parameters' ndim the template key carries ---- */

/* Whether e is `name` or a subscript chain name[...]... of a parameter
 * (its index, else -1). */
static int param_root(const func_def *def, const expr *e) {
    while (e->kind == EX_SUBSCRIPT) e = e->a;
    if (e->kind != EX_NAME) return -1;
    for (int p = 0; p < def->nparams && p < 64; p++)
        if (!strcmp(def->params[p], e->name)) return p;
    return -1;
}

/* Calls that never take a row to a device function: Python's built-ins
 * and the tack, math and NumPy modules' functions. */
static int callee_takes_rows(const expr *callee) {
    if (callee->kind == EX_NAME) {
        static const char *const builtins[] = {"range", "len", "print", "abs", "min", "max",
                                               "float", "int", "bool", "round", "pow",
                                               "divmod", "complex"};
        for (size_t i = 0; i < sizeof builtins / sizeof builtins[0]; i++)
            if (!strcmp(callee->name, builtins[i])) return 0;
        return 1;
    }
    if (callee->kind == EX_ATTR && callee->a->kind == EX_NAME) {
        static const char *const mods[] = {"tack", "math", "cmath", "np", "numpy"};
        for (size_t i = 0; i < sizeof mods / sizeof mods[0]; i++)
            if (!strcmp(callee->a->name, mods[i])) return 0;
    }
    return 1;
}

static uint64_t rows_in_expr(const func_def *def, const expr *e) {
    if (!e) return 0;
    uint64_t m = rows_in_expr(def, e->a) | rows_in_expr(def, e->b) | rows_in_expr(def, e->c);
    for (int i = 0; i < e->nitems; i++) m |= rows_in_expr(def, e->items[i]);
    for (int i = 0; i < e->nkw; i++) m |= rows_in_expr(def, e->kw_values[i]);
    /* tack.grouped(x): the launch's index has x's ndim components. */
    int grouped = e->kind == EX_CALL && e->a->kind == EX_ATTR && e->a->name &&
                  !strcmp(e->a->name, "grouped");
    if (e->kind == EX_CALL && (grouped || callee_takes_rows(e->a))) {
        for (int i = 0; i < e->nitems + e->nkw; i++) {
            int p = param_root(def, i < e->nitems ? e->items[i] : e->kw_values[i - e->nitems]);
            if (p >= 0) m |= 1ull << p;
        }
    }
    return m;
}

static uint64_t rows_in_body(const func_def *def, stmt *const *body, int n) {
    uint64_t m = 0;
    for (int i = 0; i < n; i++) {
        const stmt *s = body[i];
        for (int t = 0; t < s->ntargets; t++) m |= rows_in_expr(def, s->targets[t]);
        /* `for i in x` as the launch (Taichi's struct-for): one index per
         * dimension of x. */
        int p = s->kind == ST_FOR ? param_root(def, s->value) : -1;
        if (p >= 0 && s->value->kind == EX_NAME) m |= 1ull << p;
        m |= rows_in_expr(def, s->value) | rows_in_body(def, s->body, s->nbody) |
             rows_in_body(def, s->orelse, s->norelse);
    }
    return m;
}

uint64_t lower_row_params(const func_def *def) { return rows_in_body(def, def->body, def->nbody); }

/* Whether the call's array for kernel parameter `param` has more than
 * `nprefix` dimensions (`distance(c[i], c[0])` of a 2-D c that the kernel
 * itself indexes with one index only).  Read from the template key's
 * row_ndim, so each ndim lowers its own template; an array of matrices
 * offered as NumPy (..., n, n) is left to the kernel's own indexing. */
static int row_of_argument(lowerer *L, int param, int nprefix) {
    if (!L->in->row_ndim || param < 0 || param >= L->in->def->nparams || param >= 64) return 0;
    int ndim = L->in->row_ndim[param];
    if (!ndim) return 0;
    return ndim - (vec_width_of(L, param) ? 1 : 0) > nprefix;
}

/* A device function's parameter given a row (`dist(c[i], c[j])`, where the
 * function indexes it) or a row or local array the caller holds by name:
 * bound in the callee's scope to the same array, a row's indices evaluated
 * into b now.  1: arg is none of these (it is passed as a value). */
int view_bind_parameter(lowerer *L, scope *callee, ir_block *b, const func_def *def,
                        const char *pname, const expr *arg) {
    if (arg->kind == EX_NAME) {
        const binding *held = scope_find(L->sc, arg->name);
        if (!held || (held->kind != BIND_ROW && held->kind != BIND_SCRATCH)) return 1;
        if (scope_bind(L, callee, pname, held->kind, held->index)) return -1;
        binding *bound = &callee->binds[callee->nbinds - 1];
        bound->row_scratch = held->row_scratch;
        bound->nprefix = held->nprefix;
        memcpy(bound->prefix, held->prefix, sizeof bound->prefix);
        return 0;
    }
    if (arg->kind != EX_SUBSCRIPT || !body_indexes(def->body, def->nbody, pname)) return 1;
    if (mat_chain_is_element(L, arg)) {
        /* c[i] of an array of vectors the kernel indexes with one index
         * only: its element, unless the call's array has more dimensions */
        int p = arg->a->kind == EX_NAME ? array_param_of(L, arg->a) : -1;
        if (p < 0 || !row_of_argument(L, p, arg->nitems)) return 1;
    }
    view v;
    if (view_of(L, arg, &v)) return -1;
    if (!v.nprefix || (v.scratch >= 0 && v.nprefix >= L->f->scratch[v.scratch].ndim)) return 1;
    /* A parameter's dimensions are known only from how the caller indexes
     * it: b[i] is a row where the caller also writes b[i, j]. */
    const expr *root = arg;
    while (root->kind == EX_SUBSCRIPT) root = root->a;
    const func_def *d = L->sc->def;
    if (v.scratch < 0 && (root->kind != EX_NAME || !d ||
                          lower_widest_index(d->body, d->nbody, root->name) <= v.nprefix) &&
        !row_of_argument(L, v.param, v.nprefix))
        return 1;
    if (scope_bind(L, callee, pname, BIND_ROW, v.scratch >= 0 ? v.scratch : v.param)) return -1;
    binding *bound = &callee->binds[callee->nbinds - 1];
    bound->row_scratch = v.scratch >= 0;
    bound->nprefix = v.nprefix;
    for (int i = 0; i < v.nprefix; i++)
        if ((bound->prefix[i] = lower_temp(L, "row")) < 0 ||
            lower_set_local(L, b, bound->prefix[i], v.prefix[i], arg))
            return -1;
    return 0;
}

/* ---- n, m = a.shape ---- */

int view_unpack_shape(lowerer *L, ir_block *b, const stmt *s) {
    const expr *tgt = s->targets[0];
    for (int i = 0; i < tgt->nitems; i++) {
        expr dim = {.kind = EX_INT, .line = s->value->line, .col = s->value->col, .ival = (uint64_t)i};
        expr *items[1] = {&dim};
        expr shape = *s->value; /* a.shape */
        expr sub = {.kind = EX_SUBSCRIPT, .line = s->value->line, .col = s->value->col, .a = &shape,
                    .items = items, .nitems = 1};
        ir_expr *v = lower_expr(L, &sub);
        if (!v) return -1;
        if (lower_assign_to(L, b, tgt->items[i], v, s)) return -1;
    }
    return 0;
}

/* ---- tuples of numbers ---- */

/* The shape of a tuple used as a table: 1-D, or 2-D of equal rows; 0 when
 * it is neither.  Its elements are lowered and stored as any value. */
static int tuple_shape(const expr *e, int64_t dims[2], int *ndim) {
    if (e->kind != EX_TUPLE || e->nitems < 1) return 0;
    dims[0] = e->nitems;
    *ndim = 1;
    if (e->items[0]->kind != EX_TUPLE) {
        for (int i = 0; i < e->nitems; i++)
            if (e->items[i]->kind == EX_TUPLE) return 0;
        return 1;
    }
    dims[1] = e->items[0]->nitems;
    *ndim = 2;
    for (int i = 0; i < e->nitems; i++) {
        const expr *row = e->items[i];
        if (row->kind != EX_TUPLE || row->nitems != dims[1]) return 0;
        for (int j = 0; j < row->nitems; j++)
            if (row->items[j]->kind == EX_TUPLE) return 0;
    }
    return dims[1] > 0;
}

/* The component type of a vector written with a typed constructor
 * (tack.vec3i(...): i32), else the kernel's float type (as a float
 * literal's), which inference settles. */
static ir_type constructed_type(lowerer *L, const expr *e) {
    char path[256];
    if (e->kind != EX_CALL || lower_callee_path(L, e->a, path, sizeof path)) return IRT_WEAK_FLOAT;
    size_t n = strlen(path);
    if (strncmp(path, "tack.vec", 8) || n < 10) return IRT_WEAK_FLOAT;
    return path[n - 1] == 'i' ? TACK_I32 : path[n - 1] == 'd' ? TACK_F64
           : path[n - 1] == 'f' ? TACK_F32 : IRT_WEAK_FLOAT;
}

/* A list or tuple of vectors of one length (Taichi's MPM weights
 * `w = [0.5 * (1.5 - fx) ** 2, ...]`): a 2-D table of their components,
 * read as w[i][k], w[i].x, or w[i] (a vector).  v[0] is lowered; the rest
 * are lowered here, in order.  Its components take the constructors' type
 * where every element names the same one, else the kernel's float type. */
static int vector_table(lowerer *L, ir_block *b, const expr *tuple, const char *name,
                        ir_expr **v) {
    int n = tuple->nitems, width = v[0]->nargs;
    ir_type type = constructed_type(L, tuple->items[0]);
    for (int i = 1; i < n; i++) {
        if (!(v[i] = lower_expr(L, tuple->items[i]))) return -1;
        if (!vec_is(v[i]) || v[i]->dim || cx_is(v[i]) || v[i]->nargs != width) {
            ERR(L, tuple->items[i]->line, tuple->items[i]->col,
                "a table of vectors holds vectors of one length: element 0 has %d components, "
                "element %d is not such a vector", width, i);
            return -1;
        }
        if (constructed_type(L, tuple->items[i]) != type) type = IRT_WEAK_FLOAT;
    }
    if (L->failed) return -1;
    ir_scratch a = {.name = name, .ndim = 2, .type = type};
    a.dims[0] = n;
    a.dims[1] = width;
    int id = ir_scratch_add(L->f, &a);
    if (id < 0) {
        ERR(L, tuple->line, tuple->col, "a kernel has at most %d arrays and tuples of its own",
            IR_MAX_SCRATCH);
        return -1;
    }
    L->vector_rows[id] = 1;
    for (int i = 0; i < n; i++) {
        if (vec_eval(L, b, v[i])) return -1;
        for (int k = 0; k < width; k++) {
            ir_stmt *st = ir_stmt_new(L->f, IR_SSTORE, tuple->line, tuple->col);
            ir_expr **idx = arena_alloc(&L->f->mem, sizeof *idx);
            if (!st || !idx) return lower_oom(L);
            idx[0] = ir_const_int(L->f, (int64_t)i * width + k, IRT_WEAK_INT, tuple->line,
                                  tuple->col);
            st->index = id;
            st->indices = idx;
            st->nindices = 1;
            st->value = lower_read_local(L, v[i]->args[k]->index, tuple);
            if (!idx[0] || !st->value || ir_block_push(L->f, b, st)) return lower_oom(L);
        }
    }
    return id;
}

/* A scratch array holding the tuple's numbers, stored into it in b; its
 * index, or -1 after an error. */
static int tuple_scratch(lowerer *L, ir_block *b, const expr *tuple, const char *name) {
    ir_scratch a = {.name = name};
    int64_t dims[2] = {0, 0};
    if (!tuple_shape(tuple, dims, &a.ndim)) {
        ERR(L, tuple->line, tuple->col, "a tuple used as a value must be of numbers, or of "
            "tuples of numbers of one length (a 2-D table)");
        return -1;
    }
    a.dims[0] = dims[0];
    if (a.ndim == 2) a.dims[1] = dims[1];
    int n = (int)(a.ndim == 1 ? dims[0] : dims[0] * dims[1]);
    ir_expr **v = arena_alloc(&L->f->mem, n * sizeof *v);
    if (!v) return lower_oom(L);
    /* Every value first (Python evaluates the tuple before binding it). */
    int floats = 0;
    for (int i = 0; i < n; i++) {
        const expr *e = a.ndim == 1 ? tuple->items[i] : tuple->items[i / dims[1]]->items[i % dims[1]];
        if (!(v[i] = lower_expr(L, e))) return -1;
        if (a.ndim == 1 && i == 0 && vec_is(v[0]) && !v[0]->dim && !cx_is(v[0]))
            return vector_table(L, b, tuple, name, v);
        if (vec_is(v[i])) {
            ERR(L, e->line, e->col, "a tuple used as a value holds numbers, not vectors");
            return -1;
        }
        floats |= !(v[i]->kind == IR_CONST && !ir_type_is_float(v[i]->type) &&
                    v[i]->type != IRT_WEAK_FLOAT);
    }
    /* Integer literals make an i64 table; anything else the kernel's float
     * type (settled by inference, as for a float literal). */
    a.type = floats ? IRT_WEAK_FLOAT : TACK_I64;
    int id = ir_scratch_add(L->f, &a);
    if (id < 0) {
        ERR(L, tuple->line, tuple->col, "a kernel has at most %d arrays and tuples of its own",
            IR_MAX_SCRATCH);
        return -1;
    }
    for (int i = 0; i < n; i++) {
        ir_stmt *st = ir_stmt_new(L->f, IR_SSTORE, tuple->line, tuple->col);
        ir_expr **idx = arena_alloc(&L->f->mem, sizeof *idx);
        if (!st || !idx) return lower_oom(L);
        idx[0] = ir_const_int(L->f, i, IRT_WEAK_INT, tuple->line, tuple->col);
        st->index = id;
        st->indices = idx;
        st->nindices = 1;
        st->value = v[i];
        if (!idx[0] || ir_block_push(L->f, b, st)) return lower_oom(L);
    }
    return id;
}

int view_assign_tuple(lowerer *L, ir_block *b, const stmt *s) {
    const expr *t = s->targets[0];
    binding *bound = (binding *)scope_find(L->sc, t->name);
    if (!bound || bound->kind != BIND_LOCAL || bound->holds_scalar) {
        ERR(L, t->line, t->col, "'%s' holds another kind of value elsewhere; a name keeps one kind",
            t->name);
        return -1;
    }
    int id = tuple_scratch(L, b, s->value, t->name);
    if (id < 0) return -1;
    bound->kind = BIND_SCRATCH;
    bound->index = id;
    return 0;
}

/* ---- for v in seq ---- */

int view_for(lowerer *L, ir_block *b, const stmt *s) {
    const expr *seq = s->value, *t = s->targets[0];
    view v;
    if (seq->kind == EX_TUPLE) { /* for a, b in ((0, 1), (1, 2)): */
        memset(&v, 0, sizeof v);
        v.param = -1;
        if ((v.scratch = tuple_scratch(L, b, seq, "$tuple")) < 0) return -1;
    } else if (view_of(L, seq, &v)) {
        return -1;
    } else if (!v.nprefix && !base_of(L, seq, &v)) {
        return 1; /* not a sequence: the caller says so */
    }
    int left; /* dimensions below the element */
    ir_expr *len;
    if (v.scratch >= 0) {
        const ir_scratch *a = &L->f->scratch[v.scratch];
        left = a->ndim - v.nprefix - 1;
        if (left < 0) {
            ERR(L, seq->line, seq->col, "this is an element, not a sequence");
            return -1;
        }
        len = ir_const_int(L->f, a->dims[v.nprefix], IRT_WEAK_INT, seq->line, seq->col);
    } else {
        /* An array parameter's depth is what its uses say: elements that
         * are themselves indexed (or unpacked) are rows. */
        left = t->kind == EX_TUPLE ? 1 : t->kind == EX_NAME && view_name_is_indexed(L, t->name);
        len = ir_expr_new(L->f, IR_DIM, seq->line, seq->col);
        if (len) {
            len->index = v.param;
            len->dim = v.nprefix;
            if (use_dim(L, v.param, v.nprefix, seq)) return -1;
        }
    }
    if (!len) return lower_oom(L);
    int k = lower_temp(L, "seq");
    ir_stmt *loop = ir_stmt_new(L->f, IR_FOR, s->line, s->col);
    if (k < 0 || !loop) return lower_oom(L);
    loop->index = k;
    loop->start = ir_const_int(L->f, 0, IRT_WEAK_INT, s->line, s->col);
    loop->stop = len;
    loop->step = ir_const_int(L->f, 1, IRT_WEAK_INT, s->line, s->col);
    if (!loop->start || !loop->step) return lower_oom(L);
    /* The element: v.prefix then k. */
    view elem = v;
    elem.nprefix = v.nprefix + 1;
    elem.prefix = arena_alloc(&L->f->mem, elem.nprefix * sizeof *elem.prefix);
    if (!elem.prefix) return lower_oom(L);
    for (int i = 0; i < v.nprefix; i++) elem.prefix[i] = v.prefix[i];
    if (!(elem.prefix[v.nprefix] = lower_read_local(L, k, seq))) return -1;
    if (t->kind == EX_TUPLE || (t->kind == EX_NAME && left > 0)) {
        if (t->kind == EX_NAME) {
            if (bind_row(L, &loop->body, t, &elem)) return -1;
        } else {
            /* for a, b in pairs: each item is pairs[k, j] */
            for (int j = 0; j < t->nitems; j++) {
                ir_expr **idx = arena_alloc(&L->f->mem, (elem.nprefix + 1) * sizeof *idx);
                if (!idx) return lower_oom(L);
                for (int i = 0; i < elem.nprefix; i++)
                    if (!(idx[i] = i == v.nprefix ? lower_read_local(L, k, seq) : elem.prefix[i])) return -1;
                idx[elem.nprefix] = ir_const_int(L->f, j, IRT_WEAK_INT, s->line, s->col);
                ir_expr *x = view_element(L, &elem, idx, elem.nprefix + 1, seq);
                if (!x || lower_assign_to(L, &loop->body, t->items[j], x, s)) return -1;
            }
        }
    } else {
        ir_expr *x = view_element(L, &v, elem.prefix, elem.nprefix, seq);
        if (!x || lower_assign_to(L, &loop->body, t, x, s)) return -1;
    }
    L->loop_depth++;
    int rc = lower_block(L, &loop->body, s->body, s->nbody);
    L->loop_depth--;
    if (rc) return -1;
    return ir_block_push(L->f, b, loop) ? lower_oom(L) : 0;
}
