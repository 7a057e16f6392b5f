/* builtins.c - what math.X, tack.math.X and numpy.X name in a kernel, and
 * the calls that are more than one intrinsic: pow() (and numpy.power,
 * numpy.remainder, ...), which are operators; math.log with a base;
 * math.ulp; and divmod, frexp and modf, whose tuples an assignment unpacks
 * (q, r = divmod(a, b)).  Each becomes plain IR (binops, intrinsic calls,
 * selects) over temporaries that hold every argument, so an argument is
 * evaluated once, in order.  Names Python has but kernels cannot have get
 * a message that says why and what to write instead. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "lower_internal.h"

#define IN_MATH 1
#define IN_NUMPY 2
#define IN_BUILTINS 4

static const struct {
    const char *name;
    int where;
    int special;
} specials[] = {
    {"pow", IN_BUILTINS | IN_NUMPY, SP_POW}, {"power", IN_NUMPY, SP_POW},
    {"remainder", IN_NUMPY, SP_MOD},         {"mod", IN_NUMPY, SP_MOD},
    {"floor_divide", IN_NUMPY, SP_FLOORDIV}, {"round", IN_BUILTINS, SP_ROUND},
    {"log", IN_MATH, SP_LOG},                {"ulp", IN_MATH, SP_ULP},
    {"divmod", IN_BUILTINS | IN_NUMPY, SP_DIVMOD},
    {"frexp", IN_MATH | IN_NUMPY, SP_FREXP}, {"modf", IN_MATH | IN_NUMPY, SP_MODF},
    {"factorial", IN_MATH, SP_REFUSED},      {"comb", IN_MATH, SP_REFUSED},
    {"perm", IN_MATH, SP_REFUSED},           {"fsum", IN_MATH, SP_REFUSED},
    {"prod", IN_MATH, SP_REFUSED},           {"sumprod", IN_MATH, SP_REFUSED},
    {"dist", IN_MATH, SP_REFUSED},           {"isqrt", IN_MATH, SP_REFUSED},
    {"isclose", IN_MATH, SP_REFUSED},        {NULL, 0, 0}};

/* NumPy's own spellings of intrinsics. */
static const struct { const char *name; ir_intrinsic fn; } numpy_aliases[] = {
    {"arcsin", INTR_ASIN},   {"arccos", INTR_ACOS},   {"arctan", INTR_ATAN},
    {"arctan2", INTR_ATAN2}, {"arcsinh", INTR_ASINH}, {"arccosh", INTR_ACOSH},
    {"arctanh", INTR_ATANH}, {"deg2rad", INTR_RADIANS}, {"rad2deg", INTR_DEGREES},
    {"abs", INTR_ABS},       {"absolute", INTR_ABS},  {NULL, 0}};

/* math names NumPy lacks, or has for something else (numpy.remainder is
 * Python's %, numpy.pow is **). */
static const char *const math_only[] = {"erf", "erfc", "gamma", "lgamma", "remainder",
                                        "fma", "pow", NULL};

static int listed(const char *const *list, const char *name) {
    for (int i = 0; list[i]; i++)
        if (!strcmp(list[i], name)) return 1;
    return 0;
}

/* Intrinsics that no module spells: builtins, and frexp's helper. */
static int internal(ir_intrinsic fn) {
    return fn == INTR_MIN || fn == INTR_MAX || fn == INTR_ROUND || fn == INTR_ABS ||
           fn == INTR_F16 || fn == INTR_FREXP_EXP || fn == INTR_STOP_GRADIENT;
}

math_name lower_math_name(const char *leaf, int numpy) {
    math_name m = {0};
    int where = numpy ? IN_NUMPY : IN_MATH;
    for (int i = 0; specials[i].name; i++)
        if ((specials[i].where & where) && !strcmp(leaf, specials[i].name)) {
            m.kind = MATH_SPECIAL;
            m.special = specials[i].special;
            return m;
        }
    if (numpy)
        for (int i = 0; numpy_aliases[i].name; i++)
            if (!strcmp(leaf, numpy_aliases[i].name)) {
                m.kind = MATH_INTRINSIC;
                m.fn = numpy_aliases[i].fn;
                return m;
            }
    if (!numpy || !listed(math_only, leaf))
        for (int i = 0; i < INTR_COUNT; i++)
            if (!internal(i) && !strcmp(leaf, ir_intrinsic_name(i))) {
                m.kind = MATH_INTRINSIC;
                m.fn = i;
                return m;
            }
    static const struct { const char *n; double v; } consts[] = {
        {"pi", 3.141592653589793}, {"e", 2.718281828459045}, {"tau", 6.283185307179586},
        {"inf", __builtin_inf()}, {"nan", __builtin_nan("")}, {NULL, 0}};
    for (int i = 0; consts[i].n; i++)
        if (!strcmp(leaf, consts[i].n)) {
            m.kind = MATH_CONST;
            m.value = consts[i].v;
            return m;
        }
    return m;
}

int lower_builtin_special(const char *name) {
    for (int i = 0; specials[i].name; i++)
        if ((specials[i].where & IN_BUILTINS) && !strcmp(name, specials[i].name))
            return specials[i].special;
    return 0;
}

int lower_special_results(int special) {
    return special == SP_DIVMOD || special == SP_FREXP || special == SP_MODF || special == SP_POLAR
               ? 2
               : 1;
}

/* ---- building IR ---- */

static ir_expr *node(lowerer *L, ir_expr_kind k, const expr *at) {
    ir_expr *e = ir_expr_new(L->f, k, at->line, at->col);
    if (!e) lower_oom(L);
    return e;
}

static ir_expr *local(lowerer *L, int l, const expr *at) {
    ir_expr *e = node(L, IR_LOCAL, at);
    if (e) e->index = l;
    return e;
}

static ir_expr *fconst(lowerer *L, double v, const expr *at) {
    ir_expr *e = ir_const_float(L->f, v, IRT_WEAK_FLOAT, at->line, at->col);
    if (!e) lower_oom(L);
    return e;
}

static ir_expr *call(lowerer *L, ir_intrinsic fn, ir_expr *a, ir_expr *b, const expr *at) {
    int n = b ? 2 : 1;
    if (!a || (n == 2 && !b)) return NULL;
    ir_expr *ops[2] = {a, b};
    if (vec_is(a) || vec_is(b)) return vec_call(L, fn, ops, n, at);
    ir_expr *x = node(L, IR_CALL, at);
    ir_expr **args = arena_alloc(&L->f->mem, n * sizeof *args);
    if (!x || !args) {
        lower_oom(L);
        return NULL;
    }
    memcpy(args, ops, n * sizeof *args);
    x->fn = fn;
    x->args = args;
    x->nargs = n;
    return x;
}

static ir_expr *bin(lowerer *L, ir_op op, ir_expr *a, ir_expr *b, const expr *at) {
    if (!a || !b) return NULL;
    if (vec_is(a) || vec_is(b)) return vec_binop(L, op, a, b, at);
    ir_expr *x = node(L, IR_BINOP, at);
    if (x) {
        x->op = op;
        x->a = a;
        x->b = b;
    }
    return x;
}

static ir_expr *pick(lowerer *L, ir_expr *cond, ir_expr *a, ir_expr *b, const expr *at) {
    if (!cond || !a || !b) return NULL;
    ir_expr *x = node(L, IR_SELECT, at);
    if (x) {
        x->cond = cond;
        x->a = a;
        x->b = b;
    }
    return x;
}

/* A fresh temporary assigned `v` in block b; -1 on failure. */
static int hoist(lowerer *L, ir_block *b, ir_expr *v, const expr *at) {
    if (!v) return -1;
    int t = lower_temp(L, "b");
    ir_stmt *s = t >= 0 ? ir_stmt_new(L->f, IR_ASSIGN, at->line, at->col) : NULL;
    if (!s) return t < 0 ? -1 : lower_oom(L);
    s->index = t;
    s->value = v;
    return ir_block_push(L->f, b, s) ? lower_oom(L) : t;
}

/* The call's arguments, each lowered; a vector is refused unless allowed. */
static int lower_n(lowerer *L, const expr *e, ir_expr **out, int n, int vectors, const char *what) {
    for (int i = 0; i < n; i++) {
        if (!(out[i] = lower_expr(L, e->items[i]))) return -1;
        if (!vectors && vec_is(out[i])) {
            ERR(L, e->items[i]->line, e->items[i]->col, "%s() needs scalars, not vectors", what);
            return -1;
        }
    }
    return 0;
}

static int want_args(lowerer *L, const expr *e, const char *what, int lo, int hi) {
    if (e->nitems >= lo && e->nitems <= hi) return 0;
    if (lo == hi)
        ERR(L, e->line, e->col, "%s() takes %d argument%s, got %d", what, lo, lo == 1 ? "" : "s",
            e->nitems);
    else
        ERR(L, e->line, e->col, "%s() takes %d to %d arguments, got %d", what, lo, hi, e->nitems);
    return -1;
}

/* math.ulp(x): Python's definition, through nextafter. */
static ir_expr *ulp(lowerer *L, const expr *e, ir_expr *x) {
    ir_block *body = arena_alloc(&L->f->mem, sizeof *body);
    ir_expr *run = node(L, IR_INLINE, e);
    if (!body || !run) {
        lower_oom(L);
        return NULL;
    }
    int t = hoist(L, body, call(L, INTR_FABS, x, NULL, e), e);
    int up = t < 0 ? -1 : hoist(L, body, call(L, INTR_NEXTAFTER, local(L, t, e), fconst(L, INFINITY, e), e), e);
    if (up < 0) return NULL;
    /* The largest finite float: the gap below it. */
    ir_expr *below = bin(L, OP_SUB, local(L, t, e),
                         call(L, INTR_NEXTAFTER, local(L, t, e), fconst(L, 0.0, e), e), e);
    ir_expr *off_top = pick(L, call(L, INTR_ISINF, local(L, t, e), NULL, e), local(L, t, e), below, e);
    ir_expr *v = pick(L, call(L, INTR_ISFINITE, local(L, up, e), NULL, e),
                      bin(L, OP_SUB, local(L, up, e), local(L, t, e), e), off_top, e);
    int r = hoist(L, body, v, e);
    if (r < 0) return NULL;
    run->body = body;
    run->index = r;
    run->inline_id = L->f->ninlines++;
    return run;
}

ir_expr *lower_special_call(lowerer *L, const expr *e, int special, const char *path) {
    ir_expr *a[3];
    switch (special) {
    case SP_POW:
        if (e->nitems == 3 && !strcmp(path, "pow")) {
            ERR(L, e->line, e->col, "pow() with a modulus (a third argument) is not supported "
                "in kernels");
            return NULL;
        }
        /* fall through */
    case SP_MOD:
    case SP_FLOORDIV: {
        if (want_args(L, e, path, 2, 2) || lower_n(L, e, a, 2, 1, path)) return NULL;
        ir_op op = special == SP_POW ? OP_POW : special == SP_MOD ? OP_MOD : OP_FLOORDIV;
        return bin(L, op, a[0], a[1], e);
    }
    case SP_ROUND:
        if (e->nitems == 2) {
            ERR(L, e->line, e->col, "round(x, ndigits) is not supported in kernels: round(x) "
                "rounds half to even and gives an integer");
            return NULL;
        }
        if (want_args(L, e, path, 1, 1) || lower_n(L, e, a, 1, 1, path)) return NULL;
        return call(L, INTR_ROUND, a[0], NULL, e);
    case SP_LOG:
        /* math.log(x, base) is log(x) / log(base), as Python computes it. */
        if (want_args(L, e, path, 1, 2) || lower_n(L, e, a, e->nitems, 1, path)) return NULL;
        if (e->nitems == 1) return call(L, INTR_LOG, a[0], NULL, e);
        return bin(L, OP_DIV, call(L, INTR_LOG, a[0], NULL, e), call(L, INTR_LOG, a[1], NULL, e), e);
    case SP_ULP:
        if (want_args(L, e, path, 1, 1) || lower_n(L, e, a, 1, 0, path)) return NULL;
        return ulp(L, e, a[0]);
    case SP_DIVMOD:
    case SP_FREXP:
    case SP_MODF:
    case SP_POLAR:
        ERR(L, e->line, e->col, "%s() returns 2 values; unpack them, as in '%s'", path,
            special == SP_DIVMOD ? "q, r = divmod(a, b)"
            : special == SP_FREXP ? "m, e = math.frexp(x)"
            : special == SP_POLAR ? "r, phi = cmath.polar(z)" : "frac, whole = math.modf(x)");
        return NULL;
    case SP_REFUSED: {
        const char *leaf = strrchr(path, '.');
        leaf = leaf ? leaf + 1 : path;
        const char *why =
            !strcmp(leaf, "factorial") || !strcmp(leaf, "comb") || !strcmp(leaf, "perm")
                ? "its results outgrow 64-bit integers (math.lgamma gives the logarithm of a "
                  "factorial)"
            : !strcmp(leaf, "isqrt") ? "write int(math.sqrt(n)), exact for n below 2**50"
            : !strcmp(leaf, "isclose") ? "write the test out, as in abs(a - b) <= tol"
                                       : "it takes a sequence; write the loop";
        ERR(L, e->line, e->col, "%s() is not available in kernels: %s", path, why);
        return NULL;
    }
    default:
        ERR(L, e->line, e->col, "'%s' cannot be called in a kernel", path);
        return NULL;
    }
}

int lower_tuple_call(lowerer *L, ir_block *b, const expr *e, int special, const char *path,
                     ir_expr **out) {
    ir_expr *a[2];
    if (special == SP_POLAR) return cx_polar(L, b, e, path, out);
    int nargs = special == SP_DIVMOD ? 2 : 1;
    if (want_args(L, e, path, nargs, nargs) || lower_n(L, e, a, nargs, 0, path)) return -1;
    int t0 = hoist(L, b, a[0], e);
    int t1 = t0 < 0 ? -1 : nargs == 2 ? hoist(L, b, a[1], e) : t0;
    if (t1 < 0) return -1;
    switch (special) {
    case SP_DIVMOD: /* the language's // and %: floor division, Python's sign */
        out[0] = bin(L, OP_FLOORDIV, local(L, t0, e), local(L, t1, e), e);
        out[1] = bin(L, OP_MOD, local(L, t0, e), local(L, t1, e), e);
        break;
    case SP_FREXP: {
        /* x == m * 2**e with 0.5 <= |m| < 1; ldexp by -e is exact. */
        int ex = hoist(L, b, call(L, INTR_FREXP_EXP, local(L, t0, e), NULL, e), e);
        if (ex < 0) return -1;
        ir_expr *neg = node(L, IR_UNOP, e);
        if (!neg) return -1;
        neg->op = OP_NEG;
        neg->a = local(L, ex, e);
        out[0] = call(L, INTR_LDEXP, local(L, t0, e), neg, e);
        out[1] = local(L, ex, e);
        break;
    }
    case SP_MODF: {
        /* x - trunc(x) is exact; the fraction keeps x's sign (-0.0 too),
         * and is 0 for an infinite x. */
        int whole = hoist(L, b, call(L, INTR_TRUNC, local(L, t0, e), NULL, e), e);
        if (whole < 0) return -1;
        ir_expr *frac = pick(L, call(L, INTR_ISINF, local(L, t0, e), NULL, e), fconst(L, 0.0, e),
                             bin(L, OP_SUB, local(L, t0, e), local(L, whole, e), e), e);
        out[0] = call(L, INTR_COPYSIGN, frac, local(L, t0, e), e);
        out[1] = local(L, whole, e);
        break;
    }
    default:
        return -1;
    }
    return out[0] && out[1] ? 2 : -1;
}
