/* calls.c - calls written as Python and NumPy write them:
 *
 *   f(a, side='right'), np.zeros(3, dtype=np.uint8)
 *                      keyword arguments of the built-in and NumPy calls,
 *                      placed where the positional form has them (a call
 *                      with a keyword its function does not take, or to a
 *                      function that takes none, is a CompileError)
 *   a = np.zeros(n), np.empty((3, 3), dtype=np.uint8), np.ones(n),
 *   np.full(n, v), a = [0.0] * 8
 *                      local arrays of a constant shape, as tack.local
 *                      (scratch.c): zeroed, then filled where asked
 *   np.searchsorted(a, v, side=)
 *                      a binary search over a 1-D array (an IR_INLINE
 *                      body holding the loop); its value is an i64 index
 *   np.clip np.sign np.square np.minimum np.maximum np.fmin np.fmax
 *   np.reciprocal np.negative np.positive np.signbit np.heaviside np.rint
 *   np.fix np.where np.logaddexp np.sinc
 *                      scalar functions, lowered to selects and
 *                      intrinsics
 *   np.sum np.prod np.max np.min np.amax np.amin np.dot
 *                      of local arrays (array_reductions.c); any other
 *                      numpy.X is refused by name. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "lower_internal.h"

/* ---- keyword arguments ---- */

typedef struct signature {
    const char *path;
    const char *params[5]; /* names in positional order */
    int required;
} signature;

static const signature signatures[] = {
    {"numpy.searchsorted", {"a", "v", "side", NULL}, 2},
    {"numpy.clip", {"a", "a_min", "a_max", NULL}, 3},
    {"numpy.zeros", {"shape", "dtype", NULL}, 1},
    {"numpy.empty", {"shape", "dtype", NULL}, 1},
    {"numpy.ones", {"shape", "dtype", NULL}, 1},
    {"numpy.full", {"shape", "fill_value", "dtype", NULL}, 2},
    {"numpy.where", {"condition", "x", "y", NULL}, 3},
    {"numpy.heaviside", {"x1", "x2", NULL}, 2},
    {"tack.local", {"shape", "dtype", NULL}, 1},
    {"tack.shared", {"shape", "dtype", NULL}, 1},
    {"tack.identity", {"n", "dtype", NULL}, 1},
    {"complex", {"real", "imag", NULL}, 0},
    {"round", {"number", "ndigits", NULL}, 1},
    {NULL, {NULL}, 0}};

/* NumPy 2's names for np.clip's bounds. */
static const char *alias(const char *path, const char *kw) {
    if (!strcmp(path, "numpy.clip") && !strcmp(kw, "min")) return "a_min";
    if (!strcmp(path, "numpy.clip") && !strcmp(kw, "max")) return "a_max";
    return kw;
}

const expr *calls_place_keywords(lowerer *L, const expr *e, const char *path) {
    if (!e->nkw) return e;
    const signature *sig = NULL;
    for (int i = 0; signatures[i].path; i++)
        if (!strcmp(signatures[i].path, path)) sig = &signatures[i];
    if (!sig) {
        ERR(L, e->kw_values[0]->line, e->kw_values[0]->col,
            "%s%s() takes no keyword arguments in kernels (got '%s=')", path[0] ? "" : "this function",
            path, e->kw_names[0]);
        return NULL;
    }
    int nparams = 0;
    while (nparams < 5 && sig->params[nparams]) nparams++;
    if (e->nitems > nparams) {
        ERR(L, e->line, e->col, "%s() takes at most %d arguments", path, nparams);
        return NULL;
    }
    const expr *slot[5] = {0};
    for (int i = 0; i < e->nitems; i++) slot[i] = e->items[i];
    for (int k = 0; k < e->nkw; k++) {
        const char *name = alias(path, e->kw_names[k]);
        int at = -1;
        for (int i = 0; i < nparams; i++)
            if (!strcmp(sig->params[i], name)) at = i;
        if (at < 0) {
            ERR(L, e->kw_values[k]->line, e->kw_values[k]->col,
                "%s() has no keyword argument '%s' that kernels take", path, e->kw_names[k]);
            return NULL;
        }
        if (slot[at]) {
            ERR(L, e->kw_values[k]->line, e->kw_values[k]->col,
                "%s() got argument '%s' twice", path, e->kw_names[k]);
            return NULL;
        }
        slot[at] = e->kw_values[k];
    }
    int n = nparams;
    while (n > 0 && !slot[n - 1]) n--;
    for (int i = 0; i < n; i++)
        if (!slot[i]) {
            ERR(L, e->line, e->col, "%s(): argument '%s' is missing before '%s'", path,
                sig->params[i], sig->params[n - 1]);
            return NULL;
        }
    expr *out = arena_alloc(&L->f->mem, sizeof *out);
    expr **items = arena_alloc(&L->f->mem, (n ? n : 1) * sizeof *items);
    if (!out || !items) {
        lower_oom(L);
        return NULL;
    }
    *out = *e;
    memcpy(items, slot, n * sizeof *items);
    out->items = items;
    out->nitems = n;
    out->kw_names = NULL;
    out->kw_values = NULL;
    out->nkw = 0;
    return out;
}

/* ---- small IR builders ---- */

static ir_expr *node(lowerer *L, ir_expr_kind k, const expr *at) {
    ir_expr *x = ir_expr_new(L->f, k, at->line, at->col);
    if (!x) lower_oom(L);
    return x;
}

static ir_expr *fn(lowerer *L, ir_intrinsic f, ir_expr *a, ir_expr *b, const expr *at) {
    int n = ir_intrinsic_nargs(f);
    if (n < 0) n = 2; /* min, max */
    if (!a || (n == 2 && !b)) return NULL;
    ir_expr *x = node(L, IR_CALL, at);
    ir_expr **args = arena_alloc(&L->f->mem, 2 * sizeof *args);
    if (!x || !args) {
        lower_oom(L);
        return NULL;
    }
    args[0] = a;
    args[1] = b;
    x->fn = f;
    x->args = args;
    x->nargs = n;
    return x;
}

static ir_expr *icon(lowerer *L, int64_t v, const expr *at) {
    ir_expr *x = ir_const_int(L->f, v, IRT_WEAK_INT, at->line, at->col);
    if (!x) lower_oom(L);
    return x;
}

static ir_expr *fcon(lowerer *L, double v, const expr *at) {
    ir_expr *x = ir_const_float(L->f, v, IRT_WEAK_FLOAT, at->line, at->col);
    if (!x) lower_oom(L);
    return x;
}

static ir_expr *rd(lowerer *L, int local, const expr *at) { return lower_read_local(L, local, at); }

/* A value computed by `body` into local `r`: an IR_INLINE expression. */
static ir_expr *inline_value(lowerer *L, ir_block *body, int r, const expr *at) {
    ir_expr *x = node(L, IR_INLINE, at);
    if (!x) return NULL;
    x->body = body;
    x->index = r;
    x->inline_id = L->f->ninlines++;
    return x;
}

/* A fresh local set to v in body (so v runs once). */
static int hold(lowerer *L, ir_block *body, ir_expr *v, const expr *at) {
    int t = lower_temp(L, "np");
    if (t < 0 || lower_set_local(L, body, t, v, at)) return -1;
    return t;
}

static ir_block *new_block(lowerer *L) {
    ir_block *b = arena_alloc(&L->f->mem, sizeof *b);
    if (!b) lower_oom(L);
    else memset(b, 0, sizeof *b);
    return b;
}

static int push(lowerer *L, ir_block *b, ir_stmt *s) {
    if (!s || ir_block_push(L->f, b, s)) return lower_oom(L);
    return 0;
}

static int scalar_args(lowerer *L, const expr *e, const char *name, int want, ir_expr **args) {
    if (e->nitems != want) {
        ERR(L, e->line, e->col, "%s() takes %d argument%s here, got %d", name, want,
            want == 1 ? "" : "s", e->nitems);
        return -1;
    }
    for (int i = 0; i < want; i++) {
        if (!(args[i] = lower_expr(L, e->items[i]))) return -1;
        if (vec_is(args[i])) {
            ERR(L, e->items[i]->line, e->items[i]->col, "%s() takes scalars in kernels%s", name,
                cx_is(args[i]) ? " (not complex numbers)" : " (apply it to each component)");
            return -1;
        }
    }
    return 0;
}

/* ---- np.searchsorted ---- */

/* A name for local `l` that no Python name can equal, bound in the
 * current scope, so that AST built here can read it. */
static expr *name_of_local(lowerer *L, int l, const expr *at) {
    char buf[32];
    snprintf(buf, sizeof buf, "$ss%d", l);
    size_t n = strlen(buf) + 1;
    char *name = arena_alloc(&L->f->mem, n);
    expr *x = arena_alloc(&L->f->mem, sizeof *x);
    if (!name || !x) {
        lower_oom(L);
        return NULL;
    }
    memcpy(name, buf, n);
    memset(x, 0, sizeof *x);
    x->kind = EX_NAME;
    x->line = at->line;
    x->col = at->col;
    x->name = name;
    if (scope_bind(L, L->sc, name, BIND_LOCAL, l)) return NULL;
    return x;
}

static ir_expr *searchsorted(lowerer *L, const expr *e) {
    if (e->nitems < 2 || e->nitems > 3) {
        ERR(L, e->line, e->col, "numpy.searchsorted(a, v, side='left') takes 2 or 3 arguments");
        return NULL;
    }
    int right = 0;
    if (e->nitems == 3) {
        const expr *s = e->items[2];
        if (s->kind != EX_STR || (strcmp(s->str, "left") && strcmp(s->str, "right"))) {
            ERR(L, s->line, s->col, "numpy.searchsorted(): side is 'left' or 'right', written "
                "as a string literal");
            return NULL;
        }
        right = !strcmp(s->str, "right");
    }
    ir_block *body = new_block(L);
    int lo = lower_temp(L, "lo"), hi = lower_temp(L, "hi"), mid = lower_temp(L, "mid");
    if (!body || lo < 0 || hi < 0 || mid < 0) return NULL;
    ir_expr *v = lower_expr(L, e->items[1]);
    if (!v) return NULL;
    if (vec_is(v)) {
        ERR(L, e->items[1]->line, e->items[1]->col, "numpy.searchsorted() looks up one scalar "
            "value at a time in kernels");
        return NULL;
    }
    int vt = hold(L, body, v, e);
    /* a.shape[0] and a[mid], as the user's own expressions */
    expr zero = {.kind = EX_INT, .line = e->line, .col = e->col, .ival = 0};
    expr *zitems[1] = {&zero};
    expr shape = {.kind = EX_ATTR, .line = e->line, .col = e->col, .name = "shape", .a = e->items[0]};
    expr len = {.kind = EX_SUBSCRIPT, .line = e->line, .col = e->col, .a = &shape, .items = zitems,
                .nitems = 1};
    expr *midname = name_of_local(L, mid, e);
    if (vt < 0 || !midname) return NULL;
    expr *mitems[1] = {midname};
    expr elem = {.kind = EX_SUBSCRIPT, .line = e->line, .col = e->col, .a = e->items[0],
                 .items = mitems, .nitems = 1};
    ir_expr *n = lower_expr(L, &len);
    if (!n || lower_set_local(L, body, lo, icon(L, 0, e), e) || lower_set_local(L, body, hi, n, e))
        return NULL;
    ir_stmt *loop = ir_stmt_new(L->f, IR_WHILE, e->line, e->col);
    ir_stmt *step = ir_stmt_new(L->f, IR_IF, e->line, e->col);
    if (!loop || !step) {
        lower_oom(L);
        return NULL;
    }
    loop->value = lower_bin(L, OP_LT, rd(L, lo, e), rd(L, hi, e), e);
    /* mid = lo + (hi - lo) // 2 never overflows */
    if (lower_set_local(L, &loop->body, mid,
                        lower_bin(L, OP_ADD, rd(L, lo, e),
                            lower_bin(L, OP_FLOORDIV, lower_bin(L, OP_SUB, rd(L, hi, e), rd(L, lo, e), e),
                                icon(L, 2, e), e), e), e))
        return NULL;
    ir_expr *a = lower_expr(L, &elem);
    if (!a) return NULL;
    if (vec_is(a)) {
        ERR(L, e->items[0]->line, e->items[0]->col, "numpy.searchsorted() searches a 1-D array "
            "of scalars");
        return NULL;
    }
    /* left: the first i with a[i] >= v; right: the first with a[i] > v */
    step->value = lower_bin(L, right ? OP_LE : OP_LT, a, rd(L, vt, e), e);
    if (lower_set_local(L, &step->body, lo, lower_bin(L, OP_ADD, rd(L, mid, e), icon(L, 1, e), e), e) ||
        lower_set_local(L, &step->orelse, hi, rd(L, mid, e), e) || push(L, &loop->body, step) ||
        push(L, body, loop))
        return NULL;
    int r = lower_temp(L, "pos");
    ir_expr *cast = node(L, IR_CAST, e);
    if (r < 0 || !cast) return NULL;
    cast->a = rd(L, lo, e);
    cast->type = TACK_I64; /* NumPy's intp */
    if (lower_set_local(L, body, r, cast, e)) return NULL;
    return inline_value(L, body, r, e);
}

/* ---- scalar NumPy functions ---- */

static const char *const numpy_scalar_names[] = {
    "searchsorted", "clip", "sign", "square", "minimum", "maximum", "fmin", "fmax",
    "reciprocal", "negative", "positive", "signbit", "heaviside", "rint", "fix", "where",
    "logaddexp", "logaddexp2", "sinc", "round", "around", "true_divide", NULL};

/* The scalar function's value; x's body runs each argument once. */
static ir_expr *numpy_scalar(lowerer *L, const expr *e, const char *leaf) {
    ir_expr *args[3];
    int two = !strcmp(leaf, "minimum") || !strcmp(leaf, "maximum") || !strcmp(leaf, "fmin") ||
              !strcmp(leaf, "fmax") || !strcmp(leaf, "heaviside") || !strcmp(leaf, "logaddexp") ||
              !strcmp(leaf, "logaddexp2") || !strcmp(leaf, "true_divide");
    int three = !strcmp(leaf, "clip") || !strcmp(leaf, "where");
    char name[64];
    snprintf(name, sizeof name, "numpy.%s", leaf);
    if (scalar_args(L, e, name, three ? 3 : two ? 2 : 1, args)) return NULL;
    if (!strcmp(leaf, "where")) return lower_sel(L, args[0], args[1], args[2], e);
    if (!strcmp(leaf, "minimum") || !strcmp(leaf, "fmin")) return fn(L, INTR_MIN, args[0], args[1], e);
    if (!strcmp(leaf, "maximum") || !strcmp(leaf, "fmax")) return fn(L, INTR_MAX, args[0], args[1], e);
    if (!strcmp(leaf, "clip")) /* NumPy's minimum(maximum(a, a_min), a_max) */
        return fn(L, INTR_MIN, fn(L, INTR_MAX, args[0], args[1], e), args[2], e);
    if (!strcmp(leaf, "negative")) {
        ir_expr *x = node(L, IR_UNOP, e);
        if (x) {
            x->op = OP_NEG;
            x->a = args[0];
        }
        return x;
    }
    if (!strcmp(leaf, "positive")) return args[0];
    if (!strcmp(leaf, "true_divide")) return lower_bin(L, OP_DIV, args[0], args[1], e);
    if (!strcmp(leaf, "fix")) return fn(L, INTR_TRUNC, args[0], NULL, e);
    if (!strcmp(leaf, "reciprocal")) return lower_bin(L, OP_DIV, fcon(L, 1.0, e), args[0], e);
    if (!strcmp(leaf, "signbit"))
        return lower_bin(L, OP_LT, fn(L, INTR_COPYSIGN, fcon(L, 1.0, e), args[0], e), fcon(L, 0.0, e), e);
    /* The rest read an argument more than once: hold them in locals. */
    ir_block *body = new_block(L);
    int r = lower_temp(L, "np");
    if (!body || r < 0) return NULL;
    int a = hold(L, body, args[0], e), b = two ? hold(L, body, args[1], e) : -1;
    if (a < 0 || (two && b < 0)) return NULL;
    ir_expr *v;
    if (!strcmp(leaf, "square")) v = lower_bin(L, OP_MUL, rd(L, a, e), rd(L, a, e), e);
    else if (!strcmp(leaf, "sign")) /* 1, -1, or x itself (0, -0, nan), in x's type */
        v = lower_sel(L, lower_bin(L, OP_GT, rd(L, a, e), icon(L, 0, e), e),
                lower_bin(L, OP_ADD, lower_bin(L, OP_MUL, rd(L, a, e), icon(L, 0, e), e), icon(L, 1, e), e),
                lower_sel(L, lower_bin(L, OP_LT, rd(L, a, e), icon(L, 0, e), e),
                    lower_bin(L, OP_SUB, lower_bin(L, OP_MUL, rd(L, a, e), icon(L, 0, e), e), icon(L, 1, e), e),
                    rd(L, a, e), e), e);
    else if (!strcmp(leaf, "heaviside"))
        v = lower_sel(L, lower_bin(L, OP_LT, rd(L, a, e), fcon(L, 0.0, e), e), fcon(L, 0.0, e),
                lower_sel(L, lower_bin(L, OP_GT, rd(L, a, e), fcon(L, 0.0, e), e), fcon(L, 1.0, e),
                    lower_sel(L, lower_bin(L, OP_EQ, rd(L, a, e), fcon(L, 0.0, e), e), rd(L, b, e),
                        rd(L, a, e), e), e), e);
    else if (!strcmp(leaf, "rint") || !strcmp(leaf, "round") || !strcmp(leaf, "around")) {
        /* np.rint, np.round(x) (decimals 0): half to even, a float as
         * NumPy's (nan, inf and -0.0 kept; no integer to overflow).  t =
         * floor(x) and d = x - t are exact; up where d > 0.5, or d == 0.5
         * and t is odd; copysign gives -0.0 for x in [-0.5, 0). */
        int t = hold(L, body, fn(L, INTR_FLOOR, rd(L, a, e), NULL, e), e);
        int d = t < 0 ? -1 : hold(L, body, lower_bin(L, OP_SUB, rd(L, a, e), rd(L, t, e), e), e);
        if (d < 0) return NULL;
        ir_expr *odd = lower_bin(L, OP_NE, fn(L, INTR_FMOD, rd(L, t, e), fcon(L, 2.0, e), e),
                                 fcon(L, 0.0, e), e);
        ir_expr *up = lower_bin(L, OP_ADD, rd(L, t, e), fcon(L, 1.0, e), e);
        ir_expr *half = lower_sel(L, odd, up, rd(L, t, e), e);
        ir_expr *r = lower_sel(L, lower_bin(L, OP_GT, rd(L, d, e), fcon(L, 0.5, e), e),
                               lower_bin(L, OP_ADD, rd(L, t, e), fcon(L, 1.0, e), e),
                               lower_sel(L, lower_bin(L, OP_EQ, rd(L, d, e), fcon(L, 0.5, e), e),
                                         half, rd(L, t, e), e), e);
        v = fn(L, INTR_COPYSIGN, r, rd(L, a, e), e);
    } else if (!strcmp(leaf, "sinc")) {
        int px = hold(L, body, lower_bin(L, OP_MUL, rd(L, a, e), fcon(L, M_PI, e), e), e);
        if (px < 0) return NULL;
        v = lower_sel(L, lower_bin(L, OP_EQ, rd(L, a, e), fcon(L, 0.0, e), e), fcon(L, 1.0, e),
                lower_bin(L, OP_DIV, fn(L, INTR_SIN, rd(L, px, e), NULL, e), rd(L, px, e), e), e);
    } else { /* logaddexp(2): the larger plus log1p(exp(-|a - b|)) */
        int base2 = !strcmp(leaf, "logaddexp2");
        ir_expr *d = fn(L, INTR_FABS, lower_bin(L, OP_SUB, rd(L, a, e), rd(L, b, e), e), NULL, e);
        ir_expr *t = base2 ? lower_bin(L, OP_DIV, fn(L, INTR_LOG1P, fn(L, INTR_EXP2, lower_bin(L, OP_MUL, fcon(L, -1.0, e), d, e), NULL, e), NULL, e),
                                 fcon(L, M_LN2, e), e)
                           : fn(L, INTR_LOG1P, fn(L, INTR_EXP, lower_bin(L, OP_MUL, fcon(L, -1.0, e), d, e), NULL, e), NULL, e);
        /* equal infinities: a + log(2) would give nan from inf - inf */
        v = lower_sel(L, lower_bin(L, OP_EQ, rd(L, a, e), rd(L, b, e), e),
                lower_bin(L, OP_ADD, rd(L, a, e), fcon(L, base2 ? 1.0 : M_LN2, e), e),
                lower_bin(L, OP_ADD, fn(L, INTR_MAX, rd(L, a, e), rd(L, b, e), e), t, e), e);
    }
    if (!v || lower_set_local(L, body, r, v, e)) return NULL;
    return inline_value(L, body, r, e);
}

static int is_array_maker(const char *leaf) {
    return !strcmp(leaf, "zeros") || !strcmp(leaf, "empty") || !strcmp(leaf, "ones") ||
           !strcmp(leaf, "full");
}

int calls_numpy(lowerer *L, const expr *e, const char *path, ir_expr **out) {
    *out = NULL;
    if (strncmp(path, "numpy.", 6)) return 0;
    const char *leaf = path + 6;
    if (is_array_maker(leaf)) {
        ERR(L, e->line, e->col, "%s() makes a local array here: assign it to a name of its own "
            "(a = %s(...))", path, path);
        return 1;
    }
    for (int i = 0; numpy_scalar_names[i]; i++)
        if (!strcmp(leaf, numpy_scalar_names[i])) {
            *out = !strcmp(leaf, "searchsorted") ? searchsorted(L, e) : numpy_scalar(L, e, leaf);
            return 1;
        }
    int which = array_reduction_name(leaf);
    if (which >= 0) { /* np.sum(a) of a local array (array_reductions.c) */
        char what[80];
        snprintf(what, sizeof what, "np.%s()", leaf);
        if (e->nkw || e->nitems < 1 || e->nitems > 2) {
            ERR(L, e->line, e->col, "%s takes %s in kernels (no axis or other keywords)", what,
                !strcmp(leaf, "dot") ? "two local arrays" : "one local array");
            return 1;
        }
        *out = array_reduce(L, which, e->items[0], e->nitems > 1 ? e->items[1] : NULL, what, e);
        return 1;
    }
    ERR(L, e->line, e->col, "'%s' is a NumPy function kernels do not support (they support "
        "NumPy's math ufuncs, np.clip np.sign np.square np.minimum np.maximum np.fmin np.fmax "
        "np.reciprocal np.negative np.signbit np.heaviside np.rint np.round np.fix np.where np.logaddexp "
        "np.sinc np.searchsorted, np.sum np.prod np.max np.min np.dot of local arrays, and np.zeros "
        "np.empty np.ones np.full as local arrays)", path);
    return 1;
}

/* ---- local arrays: np.zeros(...), [v] * n ---- */

/* The dtype a `dtype=` argument names: NumPy's and Tack's scalar types,
 * float, int, bool. */
static int dtype_of(lowerer *L, const expr *d, ir_type *out) {
    char path[256];
    callee_info c;
    if (lower_callee_cast(L, d, path, sizeof path, &c) == 0 && c.cast && c.type != TACK_F16) {
        *out = c.type;
        return 0;
    }
    if (!L->failed)
        ERR(L, d->line, d->col, "the dtype of a local array is a numeric scalar type such as "
            "np.float32, np.int64, float or int");
    return -1;
}

/* Stores v (evaluated once) into every element of scratch array id. */
static int fill(lowerer *L, ir_block *b, int id, ir_expr *v, const expr *at) {
    const ir_scratch *a = &L->f->scratch[id];
    int64_t size = 1;
    for (int d = 0; d < a->ndim; d++) size *= a->dims[d];
    int t = hold(L, b, v, at), k = lower_temp(L, "fill");
    if (t < 0 || k < 0) return -1;
    ir_stmt *loop = ir_stmt_new(L->f, IR_FOR, at->line, at->col);
    ir_stmt *st = ir_stmt_new(L->f, IR_SSTORE, at->line, at->col);
    ir_expr **idx = arena_alloc(&L->f->mem, sizeof *idx);
    if (!loop || !st || !idx) return lower_oom(L);
    idx[0] = rd(L, k, at);
    loop->index = k;
    loop->start = icon(L, 0, at);
    loop->stop = icon(L, size, at);
    loop->step = icon(L, 1, at);
    st->index = id;
    st->indices = idx; /* one row-major offset, as the zeroing loop */
    st->nindices = 1;
    st->value = rd(L, t, at);
    if (push(L, &loop->body, st)) return -1;
    return push(L, b, loop);
}

/* The scratch array a name was just bound to. */
static int bound_scratch(lowerer *L, const expr *name) {
    const binding *bd = scope_find(L->sc, name->name);
    return bd && bd->kind == BIND_SCRATCH ? bd->index : -1;
}

int calls_local_array(lowerer *L, ir_block *b, const stmt *s) {
    if (s->ntargets != 1 || s->targets[0]->kind != EX_NAME) return 1;
    const expr *v = s->value, *t = s->targets[0];
    /* [v] * n and n * [v] */
    if (v->kind == EX_BINOP && !strcmp(v->op, "*") &&
        ((v->a->kind == EX_TUPLE && v->a->is_list) || (v->b->kind == EX_TUPLE && v->b->is_list))) {
        const expr *list = v->a->kind == EX_TUPLE && v->a->is_list ? v->a : v->b;
        const expr *count = list == v->a ? v->b : v->a;
        if (list->nitems != 1) {
            ERR(L, v->line, v->col, "a repeated list is of one value ([0.0] * n) in kernels");
            return -1;
        }
        expr call = {.kind = EX_CALL, .line = v->line, .col = v->col};
        expr *items[1] = {(expr *)count};
        call.items = items;
        call.nitems = 1;
        stmt decl = *s;
        decl.value = &call;
        ir_expr *x = lower_expr(L, list->items[0]);
        if (!x) return -1;
        if (vec_is(x)) {
            ERR(L, list->line, list->col, "a list in a kernel holds numbers");
            return -1;
        }
        /* integer literals make i64, anything else the kernel's float type:
         * the rule of tuples held in names */
        int ints = x->kind == IR_CONST && !ir_type_is_float(x->type) && x->type != IRT_WEAK_FLOAT;
        if (scratch_declare(L, b, &decl, 0, ints ? TACK_I64 : IRT_WEAK_FLOAT, 0)) return -1;
        return fill(L, b, bound_scratch(L, t), x, &(expr){.line = s->line, .col = s->col});
    }
    if (v->kind != EX_CALL || v->a->kind != EX_ATTR) return 1;
    char path[256];
    if (lower_callee_path(L, v->a, path, sizeof path) || strncmp(path, "numpy.", 6) ||
        !is_array_maker(path + 6))
        return 1;
    const expr *call = calls_place_keywords(L, v, path);
    if (!call) return -1;
    int full = !strcmp(path, "numpy.full"), ones = !strcmp(path, "numpy.ones");
    int nd = full ? 3 : 2;
    if (call->nitems < (full ? 2 : 1) || call->nitems > nd) {
        ERR(L, v->line, v->col, "%s(shape%s, dtype) takes %d to %d arguments", path,
            full ? ", fill_value" : "", full ? 2 : 1, nd);
        return -1;
    }
    /* NumPy's default dtype is float64; np.full's that of its value */
    ir_type dtype = TACK_F64;
    ir_expr *value = NULL;
    if (full && !(value = lower_expr(L, call->items[1]))) return -1;
    if (full && vec_is(value)) {
        ERR(L, call->items[1]->line, call->items[1]->col, "np.full() fills with a number");
        return -1;
    }
    if (full && call->nitems < 3)
        dtype = value->kind == IR_CONST && !ir_type_is_float(value->type) && value->type != IRT_WEAK_FLOAT
                    ? TACK_I64 : value->kind == IR_CONST ? TACK_F64 : IRT_WEAK_FLOAT;
    int cplx = 0;
    if (call->nitems == nd) { /* dtype=np.complex128: a complex array (scratch.c) */
        char dpath[256];
        const expr *d = call->items[nd - 1];
        cplx = !lower_callee_path(L, d, dpath, sizeof dpath) && cx_dtype_named(dpath) >= 0;
        if (L->failed) return -1;
        if (cplx && (full || ones)) {
            ERR(L, d->line, d->col, "%s() of complex numbers is not available in kernels; make "
                "it with np.zeros(shape, dtype=...) and store the values", path);
            return -1;
        }
        if (cplx) dtype = cx_dtype_named(dpath);
        else if (dtype_of(L, d, &dtype)) return -1;
    }
    expr decl_call = *call;
    decl_call.nitems = 1;
    stmt decl = *s;
    decl.value = &decl_call;
    if (scratch_declare(L, b, &decl, 0, dtype, cplx)) return -1;
    if (!full && !ones) return 0; /* np.empty is zeroed too: nothing is left unset */
    if (ones) value = icon(L, 1, v);
    return fill(L, b, bound_scratch(L, t), value, &(expr){.line = s->line, .col = s->col});
}
