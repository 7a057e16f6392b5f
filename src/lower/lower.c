/* lower.c - AST -> IR template (see lower.h): expressions and statements.
 * Names are looked up in the current scope (lower_internal.h); calls to
 * device functions are inlined by inline.c. */
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "lower_internal.h"

int lower_oom(lowerer *L) {
    if (!L->failed++) {
        L->err->status = TACK_ERR_NOMEM;
        snprintf(L->err->message, sizeof L->err->message, "out of memory lowering kernel '%s'",
                 L->in->def->name);
    }
    return -1;
}

#define oom lower_oom

/* ---- names ---- */

static const char *const builtin_names[] = {"range", "abs", "min", "max", "int", "float",
                                            "bool", "round", "len", "pow", "divmod", "print",
                                            NULL};

int lower_default_resolve(const char *name, tack_name *out) {
    memset(out, 0, sizeof *out);
    if (!strcmp(name, "tack") || !strcmp(name, "math")) {
        out->kind = TACK_NAME_MODULE;
        out->text = name;
        return 0;
    }
    if (!strcmp(name, "numpy") || !strcmp(name, "np")) {
        out->kind = TACK_NAME_MODULE;
        out->text = "numpy";
        return 0;
    }
    for (int i = 0; builtin_names[i]; i++)
        if (!strcmp(name, builtin_names[i])) {
            out->kind = TACK_NAME_BUILTIN;
            out->text = builtin_names[i];
            return 0;
        }
    return -1;
}

/* ---- scopes ---- */

const binding *scope_find(const scope *s, const char *name) {
    for (int i = 0; i < s->nbinds; i++)
        if (!strcmp(s->binds[i].name, name)) return &s->binds[i];
    return NULL;
}

int scope_bind(lowerer *L, scope *s, const char *name, bind_kind kind, int index) {
    if (s->nbinds == s->cap) {
        int cap = s->cap ? s->cap * 2 : 16;
        binding *b = arena_grow(&L->scratch, s->binds, s->nbinds, cap, sizeof *b);
        if (!b) return lower_oom(L);
        s->binds = b;
        s->cap = cap;
    }
    s->binds[s->nbinds++] = (binding){.name = name, .kind = kind, .index = index, .owner = s->inline_id};
    return 0;
}

src_info lower_source_info(const ir_func *f, int src) {
    if (src < 0 || src >= f->nsources)
        return (src_info){f->source, f->filename, f->first_line, f->name, 0};
    const ir_source *s = &f->sources[src];
    return (src_info){s->text, s->filename, s->first_line, s->name, s->is_function};
}

int lower_temp(lowerer *L, const char *what) {
    char name[64];
    snprintf(name, sizeof name, "$%s%d", what, L->temps++);
    int l = ir_local_add(L->f, name);
    if (l < 0) lower_oom(L);
    return l;
}

/* The kernel parameter `name` stands for in the current scope, or -1. */
static int param_index(lowerer *L, const char *name) {
    const binding *b = scope_find(L->sc, name);
    return b && b->kind == BIND_PARAM ? b->index : -1;
}

/* The local `name` stands for in the current scope, or -1. */
static int local_index(lowerer *L, const char *name) {
    const binding *b = scope_find(L->sc, name);
    return b && b->kind == BIND_LOCAL ? b->index : -1;
}

static int is_bound(lowerer *L, const char *name) { return scope_find(L->sc, name) != NULL; }

/* Resolves an outside name: the host's resolver first, then the defaults,
 * but only where the host has no binding at all.  A host's OTHER or
 * UNDEFINED answer ends the lookup as Python's would: a module-level
 * `def max` hides the builtin max. */
int lower_resolve_name(tack_resolver resolver, void *ctx, const char *name, tack_name *out) {
    memset(out, 0, sizeof *out);
    int answered = resolver && resolver(ctx, name, out) == 0 && out->kind != TACK_NAME_UNBOUND;
    if (!answered && lower_default_resolve(name, out)) return -1;
    if (out->kind == TACK_NAME_OTHER || out->kind == TACK_NAME_UNDEFINED) {
        /* Keep the kind (the disk cache digests it) and the host's words. */
        tack_name n = {.kind = out->kind, .text = out->kind == TACK_NAME_OTHER ? out->text : NULL};
        *out = n;
        return -1;
    }
    /* Modules, builtins and functions are named by their text: an answer
     * without one is no answer. */
    if (!out->text &&
        (out->kind == TACK_NAME_MODULE || out->kind == TACK_NAME_BUILTIN || out->kind == TACK_NAME_FUNC)) {
        memset(out, 0, sizeof *out);
        return -1;
    }
    /* A table's numbers are its meaning: an answer without them is none. */
    if (out->kind == TACK_NAME_TABLE &&
        (out->table_ndim < 1 || out->table_ndim > 2 || out->table_shape[0] < 1 ||
         (out->table_ndim == 2 && out->table_shape[1] < 1) ||
         !out->table_ints == !out->table_floats)) {
        memset(out, 0, sizeof *out);
        return -1;
    }
    if (out->kind == TACK_NAME_STRUCT && !out->text) {
        memset(out, 0, sizeof *out);
        return -1;
    }
    if ((out->kind < TACK_NAME_MODULE || out->kind > TACK_NAME_FUNC) && out->kind != TACK_NAME_TABLE &&
        out->kind != TACK_NAME_STRUCT) {
        memset(out, 0, sizeof *out); /* a kind this library does not know */
        return -1;
    }
    return 0;
}

int lower_resolve(lowerer *L, const expr *at, tack_name *out) {
    const char *name = at->name;
    int rc = lower_resolve_name(L->in->resolver, L->sc->resolver_ctx, name, out);
    /* Every answer goes into the template: the disk cache re-checks them. */
    if (ir_record_resolution(L->f, L->f->cur_src, name, out)) lower_oom(L);
    if (!rc) return 0;
    /* Any use of a name that resolves to nothing usable is an error. */
    char from[300] = "";
    if (L->sc->inline_id >= 0) /* the prefix names the device function */
        snprintf(from, sizeof from, " (called from kernel '%s')", L->in->def->name);
    if (out->kind == TACK_NAME_OTHER) {
        tack_name builtin;
        if (out->text)
            ERR(L, at->line, at->col, "'%s' is %s%s", name, out->text, from);
        else if (lower_default_resolve(name, &builtin) == 0)
            ERR(L, at->line, at->col, "'%s' is bound to a value kernels cannot use, and it hides "
                "the %s %s; rename it%s", name,
                builtin.kind == TACK_NAME_MODULE ? "module" : "builtin", name, from);
        else
            ERR(L, at->line, at->col, "'%s' is bound to a value kernels cannot use%s", name, from);
    } else {
        ERR(L, at->line, at->col, "name '%s' is not defined%s", name, from);
    }
    return -1;
}
#define resolve lower_resolve

/* The dotted path of an attribute chain rooted at a module, e.g.
 * `np.float32` -> "numpy.float32", `tack.math.sqrt` -> "tack.math.sqrt".
 * Returns 0 and fills buf, or -1 when the root is not a module. */
static int module_path(lowerer *L, const expr *e, char *buf, size_t size) {
    if (e->kind == EX_NAME) {
        if (is_bound(L, e->name)) return -1;
        tack_name n;
        if (resolve(L, e, &n) || n.kind != TACK_NAME_MODULE) return -1;
        snprintf(buf, size, "%s", n.text);
        return 0;
    }
    if (e->kind == EX_ATTR && module_path(L, e->a, buf, size) == 0) {
        size_t len = strlen(buf);
        snprintf(buf + len, size - len, ".%s", e->name);
        return 0;
    }
    return -1;
}

/* What a callee or attribute path names. */
typedef enum callee_kind { CALLEE_NONE, CALLEE_CAST, CALLEE_INTRINSIC, CALLEE_RANGE, CALLEE_NDINDEX,
                           CALLEE_ATOMIC, CALLEE_VECTOR, CALLEE_MATRIX,
                           CALLEE_LEN, CALLEE_CONST, CALLEE_WORKGROUP, CALLEE_SPECIAL,
                           CALLEE_PRINT, CALLEE_VECFN, CALLEE_STATIC, CALLEE_OPERATOR } callee_kind;

/* Warp's operators as functions (wp.add(a, b), wp.mul(m, v), wp.neg(a),
 * wp.bit_and(a, b), ...): the operator, "@" for mul where it is a matrix
 * product, "rsqrt" for 1 / sqrt(x) (Taichi's ti.rsqrt too). */
static const struct { const char *name, *op; int nargs; } operator_functions[] = {
    {"add", "+", 2},      {"sub", "-", 2},      {"mul", "*", 2},    {"neg", "-", 1},
    {"pos", "+", 1},      {"bit_and", "&", 2},  {"bit_or", "|", 2}, {"bit_xor", "^", 2},
    {"lshift", "<<", 2},  {"rshift", ">>", 2},  {"invert", "~", 1}, {"rsqrt", "rsqrt", 1},
    {NULL, NULL, 0}};
typedef struct callee {
    callee_kind kind;
    int which;         /* WORKGROUP: WG_* */
    ir_type cast_to;   /* CAST */
    ir_intrinsic fn;   /* INTRINSIC */
    ir_atomic_op atomic; /* ATOMIC */
    int width;           /* VECTOR: components, of type cast_to; MATRIX: rows */
    int quat;            /* VECTOR: a quaternion (tack.quatf, tack.quatd) */
    double value;      /* CONST */
    int special;       /* SPECIAL: SP_* (builtins.c) */
} callee;

static const struct { const char *name; tack_dtype t; } cast_names[] = {
    {"bool_", TACK_BOOL}, {"i8", TACK_I8}, {"i16", TACK_I16}, {"i32", TACK_I32},
    {"i64", TACK_I64}, {"u8", TACK_U8}, {"u16", TACK_U16}, {"u32", TACK_U32},
    {"u64", TACK_U64}, {"f32", TACK_F32}, {"f64", TACK_F64}, {"int8", TACK_I8},
    {"int16", TACK_I16}, {"int32", TACK_I32}, {"int64", TACK_I64}, {"uint8", TACK_U8},
    {"uint16", TACK_U16}, {"uint32", TACK_U32}, {"uint64", TACK_U64},
    {"float32", TACK_F32}, {"float64", TACK_F64}, {"intp", TACK_I64},
    {"f16", TACK_F16}, {"float16", TACK_F16}, {NULL, 0}};

/* callee.cast_to of tack.cast(x, dtype): the type is its second argument. */
#define CAST_TO_SECOND ((ir_type)-100)

static callee classify_path(const char *path) {
    callee c = {0}; /* CALLEE_NONE */
    const char *dot = strrchr(path, '.');
    const char *leaf = dot ? dot + 1 : path;
    size_t mod_len = dot ? (size_t)(dot - path) : 0;
    int is_tack = mod_len == 4 && !strncmp(path, "tack", 4);
    int is_numpy = mod_len == 5 && !strncmp(path, "numpy", 5);
    int is_math = (mod_len == 4 && !strncmp(path, "math", 4)) ||
                  (mod_len == 9 && !strncmp(path, "tack.math", 9));
    if (is_tack || is_numpy)
        for (int i = 0; cast_names[i].name; i++)
            if (!strcmp(leaf, cast_names[i].name) &&
                (is_numpy ? strlen(leaf) > 3 || !strcmp(leaf, "bool_") : 1)) {
                c.kind = CALLEE_CAST;
                c.cast_to = cast_names[i].t;
                return c;
            }
    for (int i = 0; is_tack && operator_functions[i].name; i++)
        if (!strcmp(leaf, operator_functions[i].name)) {
            c.kind = CALLEE_OPERATOR;
            c.which = i;
            return c;
        }
    if (is_tack && !strcmp(leaf, "cast")) {
        c.kind = CALLEE_CAST;
        c.cast_to = CAST_TO_SECOND;
        return c;
    }
    if (is_tack && !strcmp(leaf, "stop_gradient")) { /* autodiff: passes/adjoint.c */
        c.kind = CALLEE_INTRINSIC;
        c.fn = INTR_STOP_GRADIENT;
        return c;
    }
    if (!strcmp(path, "numba.prange")) { /* Numba's parallel range: a range here */
        c.kind = CALLEE_RANGE;
        return c;
    }
    if (is_tack && !strcmp(leaf, "ndindex")) {
        c.kind = CALLEE_NDINDEX;
        return c;
    }
    if (is_tack && !strcmp(leaf, "static")) { /* Taichi's ti.static (static_loops.c) */
        c.kind = CALLEE_STATIC;
        return c;
    }
    if (is_tack && (c.which = workgroup_name(leaf)) >= 0) {
        c.kind = CALLEE_WORKGROUP;
        return c;
    }
    /* tack.vec3f, and tack.vec7f ... vec16f: the names tack.vector(n, dtype)
     * gives its dtypes, which a module-level alias resolves to. */
    if (is_tack && !strncmp(leaf, "vec", 3) && leaf[3] >= '1' && leaf[3] <= '9') {
        char *end;
        long w = strtol(leaf + 3, &end, 10);
        if (w >= 2 && w <= TACK_MAX_VEC_WIDTH && *end && strchr("fdi", *end) && !end[1]) {
            c.kind = CALLEE_VECTOR;
            c.width = (int)w;
            c.cast_to = *end == 'f' ? TACK_F32 : *end == 'd' ? TACK_F64 : TACK_I32;
            return c;
        }
    }
    /* Warp's quaternions (quaternions.c): 4-vectors multiplied as such. */
    if (is_tack && (!strcmp(leaf, "quatf") || !strcmp(leaf, "quatd"))) {
        c.kind = CALLEE_VECTOR;
        c.width = 4;
        c.quat = 1;
        c.cast_to = leaf[4] == 'f' ? TACK_F32 : TACK_F64;
        return c;
    }
    /* Warp's transforms: 7-vectors (position, then rotation quaternion). */
    if (is_tack && (!strcmp(leaf, "transformf") || !strcmp(leaf, "transformd"))) {
        c.kind = CALLEE_VECTOR;
        c.width = 7;
        c.cast_to = leaf[9] == 'f' ? TACK_F32 : TACK_F64;
        return c;
    }
    /* Warp's spatial vectors: 6-vectors (angular, then linear). */
    if (is_tack && (!strcmp(leaf, "spatial_vectorf") || !strcmp(leaf, "spatial_vectord"))) {
        c.kind = CALLEE_VECTOR;
        c.width = 6;
        c.cast_to = leaf[14] == 'f' ? TACK_F32 : TACK_F64;
        return c;
    }
    if (is_tack && (c.which = mat_function(leaf, &c.width, &c.cast_to)) >= 0) {
        c.kind = CALLEE_MATRIX;
        return c;
    }
    if (is_tack && (c.which = vb_function(leaf)) >= 0) { /* vector_builtins.c */
        c.kind = CALLEE_VECFN;
        return c;
    }
    if (is_tack && !strncmp(leaf, "atomic_", 7)) {
        for (int op = 0; op <= ATOM_COMPARE_EXCHANGE; op++) /* not ATOM_MUL */
            if (!strcmp(leaf + 7, ir_atomic_name(op))) {
                c.kind = CALLEE_ATOMIC;
                c.atomic = op;
                return c;
            }
        /* Warp's names: wp.atomic_exch(a, i, v), wp.atomic_cas(a, i, compare, v) */
        if (!strcmp(leaf + 7, "exch") || !strcmp(leaf + 7, "cas")) {
            c.kind = CALLEE_ATOMIC;
            c.atomic = leaf[7] == 'e' ? ATOM_EXCHANGE : ATOM_COMPARE_EXCHANGE;
            return c;
        }
    }
    if (mod_len == 5 && !strncmp(path, "cmath", 5) && !strcmp(leaf, "polar")) {
        c.kind = CALLEE_SPECIAL; /* r, phi = cmath.polar(z): complex.c */
        c.special = SP_POLAR;
        return c;
    }
    if (mod_len == 5 && !strncmp(path, "cmath", 5)) { /* cmath.pi e tau inf nan, as math's */
        math_name m = lower_math_name(leaf, 0);
        if (m.kind == MATH_CONST) {
            c.kind = CALLEE_CONST;
            c.value = m.value;
        }
        return c;
    }
    /* tack.sqrt, tack.floor, tack.pi ...: math's names under tack, as
     * Warp's wp.sqrt and Taichi's ti.sqrt are spelled. */
    if (is_math || is_numpy || is_tack) {
        math_name m = lower_math_name(leaf, is_numpy);
        static const callee_kind kinds[] = {CALLEE_NONE, CALLEE_INTRINSIC, CALLEE_CONST,
                                            CALLEE_SPECIAL};
        c.kind = kinds[m.kind];
        c.fn = m.fn;
        c.value = m.value;
        c.special = m.special;
    }
    /* Taichi's ti.math.clamp, ti.math.vec3 ...: tack.math.X where math has
     * no X is tack.X. */
    if (c.kind == CALLEE_NONE && mod_len == 9 && !strncmp(path, "tack.math", 9)) {
        char as_tack[128];
        if ((size_t)snprintf(as_tack, sizeof as_tack, "tack.%s", leaf) < sizeof as_tack)
            return classify_path(as_tack);
    }
    return c;
}

static callee classify_builtin(const char *name) {
    callee c = {0}; /* CALLEE_NONE */
    if (!strcmp(name, "range")) c.kind = CALLEE_RANGE;
    else if (!strcmp(name, "len")) c.kind = CALLEE_LEN;
    else if (!strcmp(name, "int")) c.kind = CALLEE_CAST, c.cast_to = TACK_I64;
    else if (!strcmp(name, "float")) c.kind = CALLEE_CAST, c.cast_to = TACK_F64;
    else if (!strcmp(name, "bool")) c.kind = CALLEE_CAST, c.cast_to = TACK_BOOL;
    else if (!strcmp(name, "abs")) c.kind = CALLEE_INTRINSIC, c.fn = INTR_ABS;
    else if (!strcmp(name, "min")) c.kind = CALLEE_INTRINSIC, c.fn = INTR_MIN;
    else if (!strcmp(name, "max")) c.kind = CALLEE_INTRINSIC, c.fn = INTR_MAX;
    else if (!strcmp(name, "print")) c.kind = CALLEE_PRINT;
    else if ((c.special = lower_builtin_special(name))) c.kind = CALLEE_SPECIAL;
    return c;
}

/* Classifies the callee expression of a call (or an attribute value). */
static callee classify(lowerer *L, const expr *e, char *path, size_t size) {
    callee none = {0}; /* CALLEE_NONE */
    path[0] = 0;
    if (e->kind == EX_NAME) {
        snprintf(path, size, "%s", e->name);
        if (is_bound(L, e->name)) return none;
        tack_name n;
        if (resolve(L, e, &n)) return none;
        if (n.kind == TACK_NAME_BUILTIN && strchr(n.text, '.')) {
            /* "math.log1p": a module's function imported by its name. */
            callee c = classify_path(n.text);
            tack_name b;
            int hides = lower_default_resolve(e->name, &b) == 0;
            if (c.kind == CALLEE_NONE)
                ERR(L, e->line, e->col, "'%s' is %s, a %s kernels do not have%s%s%s", e->name,
                    n.text, strncmp(n.text, "numpy.", 6) ? "math function" : "NumPy ufunc",
                    hides ? "; rename it so that the builtin " : "", hides ? e->name : "",
                    hides ? "() is used" : "");
            return c;
        }
        if (n.kind == TACK_NAME_BUILTIN) return classify_builtin(n.text);
        return none;
    }
    if (e->kind == EX_ATTR && module_path(L, e, path, size) == 0) return classify_path(path);
    return none;
}

/* Whether callee is `mod.f` or `pkg.mod.f` naming a device function through
 * modules (`tack.quat_rotate`, `mylib.kick`); fills *fn.  Not an error
 * when it is not: the caller goes on with its own reading. */
static int is_module_function(lowerer *L, const expr *callee, tack_name *fn) {
    char path[256];
    size_t len = 0;
    const expr *parts[8];
    int n = 0;
    for (; callee->kind == EX_ATTR && n < 8; callee = callee->a) parts[n++] = callee;
    if (!n || callee->kind != EX_NAME || is_bound(L, callee->name)) return 0;
    len = (size_t)snprintf(path, sizeof path, "%s", callee->name);
    while (n-- && len < sizeof path) len += (size_t)snprintf(path + len, sizeof path - len, ".%s", parts[n]->name);
    if (len >= sizeof path ||
        lower_resolve_name(L->in->resolver, L->sc->resolver_ctx, path, fn) || fn->kind != TACK_NAME_FUNC)
        return 0;
    if (ir_record_resolution(L->f, L->f->cur_src, path, fn)) return lower_oom(L), 0;
    return 1;
}

/* A device call used as one value (or as a record where one is wanted). */
static ir_expr *one_result_call(lowerer *L, const expr *e, const tack_name *fn) {
    int wanted = L->record_call == e; /* read first: the callee's body may ask for others */
    const scope *callee;
    ir_expr *x = lower_device_call_slots(L, e, fn, &callee);
    if (x && callee->result_record) {
        if (wanted) {
            L->record_callee = callee;
            return x;
        }
        char sname[128];
        struct_name(callee->result_record->s, sname, sizeof sname);
        ERR(L, e->line, e->col, "'%s' returns a record of struct '%s'; assign it (q = %s(...)) or "
            "read a field (%s(...).field)", e->a->name, sname, e->a->name, e->a->name);
        return NULL;
    }
    int nresults = !x ? 0 : callee->result_width ? 1 : callee->nresults > 0 ? callee->nresults : 0;
    if (x && nresults > 1) {
        ERR(L, e->line, e->col, "'%s' returns %d values; unpack them as in 'a, b = %s(...)'",
            e->a->name, nresults, e->a->name);
        return NULL;
    }
    return x;
}

int lower_call_is_pure(lowerer *L, const expr *e) {
    char path[256];
    callee_kind k = classify(L, e->a, path, sizeof path).kind;
    return k == CALLEE_CAST || k == CALLEE_INTRINSIC || k == CALLEE_CONST || k == CALLEE_LEN ||
           k == CALLEE_SPECIAL || k == CALLEE_VECTOR || k == CALLEE_VECFN;
}

/* ---- expressions ---- */


static ir_op binop_of(const char *op) {
    static const struct { const char *t; ir_op op; } map[] = {
        {"+", OP_ADD}, {"-", OP_SUB}, {"*", OP_MUL}, {"/", OP_DIV}, {"//", OP_FLOORDIV},
        {"%", OP_MOD}, {"**", OP_POW}, {"&", OP_AND}, {"|", OP_OR}, {"^", OP_XOR},
        {"<<", OP_SHL}, {">>", OP_SHR}, {"<", OP_LT}, {"<=", OP_LE}, {">", OP_GT},
        {">=", OP_GE}, {"==", OP_EQ}, {"!=", OP_NE}, {NULL, 0}};
    for (int i = 0; map[i].t; i++)
        if (!strcmp(op, map[i].t)) return map[i].op;
    return (ir_op)-1;
}

int use_param(lowerer *L, int p, ir_param_role role, int line, int col) {
    ir_param *prm = &L->f->params[p];
    if (prm->role != ROLE_UNUSED && prm->role != role) {
        ERR(L, line, col, "parameter '%s' is used both as an array and as a scalar", prm->name);
        return -1;
    }
    prm->role = role;
    return 0;
}

static ir_expr *new_expr(lowerer *L, ir_expr_kind k, const expr *at) {
    ir_expr *e = ir_expr_new(L->f, k, at->line, at->col);
    if (!e) oom(L);
    return e;
}

static ir_expr *lower_name(lowerer *L, const expr *e) {
    int p = param_index(L, e->name);
    if (p >= 0) {
        if (use_param(L, p, ROLE_SCALAR, e->line, e->col)) return NULL;
        ir_expr *x = new_expr(L, IR_PARAM, e);
        if (x) x->index = p;
        if (x && p < TACK_MAX_PARAMS && L->cx_imag[p]) { /* a complex argument: two parts */
            int im = L->cx_imag[p] - 1;
            ir_expr *y = new_expr(L, IR_PARAM, e);
            if (!y || use_param(L, im, ROLE_SCALAR, e->line, e->col)) return NULL;
            y->index = im;
            return cx_make(L, x, y, e);
        }
        return x;
    }
    const binding *vb = scope_find(L->sc, e->name);
    if (vb && vb->kind == BIND_VECTOR) return vec_read_local(L, vb, e);
    if (vb && vb->kind == BIND_PROLOGUE) return lower_prologue_value(L, (binding *)vb, e);
    if (vb && vb->kind == BIND_REDUCTION) {
        lower_reduction_read_error(L, vb, e);
        return NULL;
    }
    if (vb && vb->kind == BIND_FINISHED) return lower_finished_reduction(L, vb, e);
    if (vb && vb->kind == BIND_TEMPLATE) {
        ERR(L, e->line, e->col, "'%s' is a template instance; use its attributes and methods",
            e->name);
        return NULL;
    }
    if (vb && vb->kind == BIND_STRUCT) {
        ERR(L, e->line, e->col, "'%s' is a whole record here; read its fields ('%s.field'), "
            "assign it or pass it to a device function", e->name, e->name);
        return NULL;
    }
    int l = local_index(L, e->name);
    if (l >= 0) {
        ir_expr *x = new_expr(L, IR_LOCAL, e);
        if (x) x->index = l;
        return x;
    }
    tack_name n;
    if (resolve(L, e, &n)) return NULL; /* resolve said why */
    switch (n.kind) {
    case TACK_NAME_INT:
        if (n.is_unsigned) {
            ir_expr *x = ir_const_int(L->f, (int64_t)n.u, TACK_U64, e->line, e->col);
            if (!x) oom(L);
            return x;
        } else {
            ir_expr *x = ir_const_int(L->f, n.i, IRT_WEAK_INT, e->line, e->col);
            if (!x) oom(L);
            return x;
        }
    case TACK_NAME_BOOL: {
        ir_expr *x = ir_const_int(L->f, n.i != 0, TACK_BOOL, e->line, e->col);
        if (!x) oom(L);
        return x;
    }
    case TACK_NAME_FLOAT: {
        ir_expr *x = ir_const_float(L->f, n.f, IRT_WEAK_FLOAT, e->line, e->col);
        if (!x) oom(L);
        return x;
    }
    case TACK_NAME_TABLE:
        ERR(L, e->line, e->col, "'%s' is a table of numbers; index it (%s[k]), iterate over it "
            "or take its len()", e->name, e->name);
        return NULL;
    case TACK_NAME_MODULE:
        ERR(L, e->line, e->col, "'%s' is a module, not a value", e->name);
        return NULL;
    case TACK_NAME_STRUCT:
        ERR(L, e->line, e->col, "'%s' is a struct type; make a record with p = %s(field=value, "
            "...) and use its fields", e->name, e->name);
        return NULL;
    case TACK_NAME_BUILTIN:
    case TACK_NAME_FUNC:
        ERR(L, e->line, e->col, "'%s' is a function; call it", e->name);
        return NULL;
    default:
        ERR(L, e->line, e->col, "name '%s' is not defined", e->name);
        return NULL;
    }
}

/* `x.shape[d]` and `len(x)`: a dimension of an array parameter. */
int use_dim(lowerer *L, int p, int d, const expr *at) {
    if (use_param(L, p, ROLE_ARRAY, at->line, at->col)) return -1;
    if (d < 0 || d >= TACK_MAX_NDIM) {
        ERR(L, at->line, at->col, "dimension %d of '%s' is out of range (arrays have at most %d)",
            d, L->f->params[p].name, TACK_MAX_NDIM);
        return -1;
    }
    if (d > L->f->params[p].max_dim_read) L->f->params[p].max_dim_read = d;
    return 0;
}

static ir_expr *lower_dim(lowerer *L, const expr *arr, const expr *at, int d) {
    /* len(row) and row.shape[0] of a row: the array's next dimension. */
    if (!(arr = struct_dim_array(L, arr))) return NULL;
    view v;
    if (view_of(L, arr, &v)) return NULL;
    if (v.nprefix && v.scratch >= 0) return scratch_dim(L, v.scratch, v.nprefix + d, at);
    int p = v.nprefix ? v.param : array_param_of(L, arr);
    if (p < 0) {
        if (!L->failed) ERR(L, at->line, at->col, "only an array parameter's shape can be read");
        return NULL;
    }
    d += v.nprefix;
    if (use_dim(L, p, d, at)) return NULL;
    ir_expr *x = new_expr(L, IR_DIM, at);
    if (x) {
        x->index = p;
        x->dim = d;
        x->type = TACK_I64;
    }
    return x;
}

/* The components of vector x as indices appended to given[]: the first
 * runs x's setup and reads component 0, the others read their components
 * (indices are evaluated in order). */
static int index_components(lowerer *L, ir_expr *x, ir_expr **given, int *ngiven,
                            const expr *at) {
    if (*ngiven + x->nargs > TACK_MAX_NDIM) {
        ERR(L, at->line, at->col, "too many indices (at most %d)", TACK_MAX_NDIM);
        return -1;
    }
    ir_expr *first = ir_expr_new(L->f, IR_INLINE, at->line, at->col);
    ir_block *body = arena_alloc(&L->f->mem, sizeof *body);
    int r = lower_temp(L, "ix");
    if (!first || !body || r < 0) return oom(L);
    first->body = body;
    first->index = r;
    first->inline_id = L->f->ninlines++;
    if (vec_eval(L, body, x) ||
        lower_set_local(L, body, r, lower_read_local(L, x->args[0]->index, at), at))
        return -1;
    given[(*ngiven)++] = first;
    for (int k = 1; k < x->nargs; k++) {
        ir_expr *c = lower_read_local(L, x->args[k]->index, at);
        if (!c) return -1;
        given[(*ngiven)++] = c;
    }
    return 0;
}

/* Lowers the indices of `arr[items...]` (a subscript, or an atomic's
 * target) and checks them against the array's other uses.  `arr` may be a
 * row of an array (b[i][j], or a name bound by row = b[i]): its indices
 * come first.  *n_out is the indices' total. */
static ir_expr **lower_index_list(lowerer *L, const expr *arr, expr *const *items, int n,
                                  const expr *at, int *p_out, int *n_out) {
    view v;
    if (view_of(L, arr, &v)) return NULL;
    int p = v.nprefix ? v.param : array_param_of(L, arr);
    if (p < 0) {
        if (L->failed) return NULL;
        if (arr->kind == EX_NAME && local_index(L, arr->name) >= 0) {
            ERR(L, at->line, at->col, "'%s' is a local scalar and cannot be indexed", arr->name);
            return NULL;
        }
        /* A name bound nowhere in the kernel is looked up outside it, so
         * a typo or a missing parameter reads as Python would say it. */
        tack_name outside;
        if (arr->kind == EX_NAME && !is_bound(L, arr->name) && resolve(L, arr, &outside))
            return NULL; /* "name 'y' is not defined", or what it is instead */
        if (arr->kind == EX_NAME && !is_bound(L, arr->name))
            ERR(L, at->line, at->col, "'%s' is not an array parameter of the kernel: only array "
                "parameters can be indexed; pass '%s' as an argument", arr->name, arr->name);
        else
            ERR(L, at->line, at->col, "only array parameters can be indexed");
        return NULL;
    }
    if (use_param(L, p, ROLE_ARRAY, at->line, at->col)) return NULL;
    ir_param *prm = &L->f->params[p];
    /* An integer vector among the indices (Taichi's grid[base + offset])
     * stands for its components, one index each. */
    ir_expr *given[TACK_MAX_NDIM];
    int ngiven = 0, from_vector = 0;
    for (int i = 0; i < n; i++) {
        /* A named integer vector (grouped's I): its locals read in place,
         * so x[I] has the index forms x[i, j] has. */
        const binding *named = items[i]->kind == EX_NAME ? scope_find(L->sc, items[i]->name) : NULL;
        if (named && named->kind == BIND_VECTOR && !named->rows && !named->cplx &&
            ngiven + named->width <= TACK_MAX_NDIM) {
            for (int k = 0; k < named->width; k++)
                if (!(given[ngiven++] = lower_read_local(L, named->comps[k], items[i]))) return NULL;
            from_vector = 1;
            continue;
        }
        ir_expr *x = lower_expr(L, items[i]);
        if (!x) return NULL;
        if (!vec_is(x)) {
            if (ngiven == TACK_MAX_NDIM) {
                ERR(L, at->line, at->col, "too many indices (at most %d)", TACK_MAX_NDIM);
                return NULL;
            }
            given[ngiven++] = x;
            continue;
        }
        if (x->dim || cx_is(x)) {
            ERR(L, items[i]->line, items[i]->col, "an index is an integer or a vector of "
                "integers, not a %s", cx_is(x) ? "complex number" : "matrix");
            return NULL;
        }
        from_vector = 1;
        if (index_components(L, x, given, &ngiven, items[i])) return NULL;
    }
    n = ngiven;
    int total = v.nprefix + n;
    if (total > TACK_MAX_NDIM) {
        ERR(L, at->line, at->col, "too many indices for '%s' (at most %d)", prm->name,
            TACK_MAX_NDIM);
        return NULL;
    }
    /* An array of vectors is indexed per element; its storage has one more
     * dimension, the components. */
    int comps = vec_width_of(L, p) ? 1 : 0;
    if (comps && total + comps > TACK_MAX_NDIM) {
        ERR(L, at->line, at->col, "arrays of vectors have at most %d dimensions", TACK_MAX_NDIM - 1);
        return NULL;
    }
    if (prm->index_ndim && prm->index_ndim != total + comps) {
        ERR(L, at->line, at->col, "'%s' is indexed with %d indices here and %d elsewhere",
            prm->name, total, prm->index_ndim - comps);
        return NULL;
    }
    /* A vector index of the wrong length, said where it is written (the
     * call's own check names only the parameter).  Not for an array seen
     * as one of matrices: a NumPy (..., n, n) array is offered so first,
     * and taken as scalars where its elements are not used as matrices. */
    if (from_vector && L->in->args && p < L->in->def->nparams &&
        L->in->args[p].kind == TACK_ARG_ARRAY && !tack_width_rows(L->in->args[p].vec_width) &&
        L->in->args[p].ndim - comps != total) {
        int have = L->in->args[p].ndim - comps;
        ERR(L, at->line, at->col, "'%s' has %d dimension%s, but the indices here (a vector "
            "index counts one per component) are %d", prm->name, have, have == 1 ? "" : "s",
            total);
        return NULL;
    }
    prm->index_ndim = total + comps;
    ir_expr **idx = arena_alloc(&L->f->mem, (total ? total : 1) * sizeof *idx);
    if (!idx) {
        oom(L);
        return NULL;
    }
    for (int i = 0; i < v.nprefix; i++) idx[i] = v.prefix[i];
    for (int i = 0; i < n; i++) idx[v.nprefix + i] = given[i];
    *p_out = p;
    *n_out = total;
    return idx;
}

ir_expr **lower_indices(lowerer *L, const expr *sub, int *p_out, int *n_out) {
    return lower_index_list(L, sub->a, sub->items, sub->nitems, sub, p_out, n_out);
}

/* tack.atomic_<op>(arr, index, value) and
 * tack.atomic_compare_exchange(arr, index, expected, desired); a tuple
 * index addresses a multi-dimensional array. */
static ir_expr *lower_atomic(lowerer *L, const expr *e, ir_atomic_op op) {
    int want = op == ATOM_COMPARE_EXCHANGE ? 4 : 3;
    /* Taichi's form: the element itself, ti.atomic_add(grid[i, j], v). */
    int element = e->nitems == want - 1 && e->items[0]->kind == EX_SUBSCRIPT;
    if (e->nitems != want && !element) {
        ERR(L, e->line, e->col, "tack.atomic_%s() takes %d arguments (array, index, %s), or the "
            "element and the rest (a[i], %s), got %d", ir_atomic_name(op), want,
            want == 4 ? "expected, desired" : "value", want == 4 ? "expected, desired" : "value",
            e->nitems);
        return NULL;
    }
    const expr *arr = element ? e->items[0]->a : e->items[0];
    expr *const *items = element ? e->items[0]->items : &e->items[1];
    int nitems = element ? e->items[0]->nitems : 1;
    if (!element && e->items[1]->kind == EX_TUPLE) {
        items = e->items[1]->items;
        nitems = e->items[1]->nitems;
    }
    expr *const *vals = e->items + (element ? 1 : 2);
    int p, n;
    ir_expr **idx = lower_index_list(L, arr, items, nitems, e, &p, &n);
    if (!idx) return NULL;
    L->f->params[p].written = 1;
    if (vec_width_of(L, p)) {
        ir_expr *v = want == 3 ? lower_expr(L, vals[0]) : NULL;
        if (want == 3 && !v) return NULL;
        return vec_atomic(L, p, idx, n, op, v, e);
    }
    ir_expr *x = new_expr(L, IR_ATOMIC, e);
    if (!x) return NULL;
    x->index = p;
    x->atomic = op;
    x->args = idx;
    x->nargs = n;
    if (!(x->a = lower_expr(L, vals[0]))) return NULL;
    if (want == 4 && !(x->b = lower_expr(L, vals[1]))) return NULL;
    return x;
}

static ir_expr *lower_subscript(lowerer *L, const expr *e) {
    /* x.shape[d] */
    if (e->a->kind == EX_ATTR && !strcmp(e->a->name, "shape")) {
        if (e->nitems != 1 || e->items[0]->kind != EX_INT) {
            ERR(L, e->line, e->col, "shape must be indexed with one integer literal");
            return NULL;
        }
        uint64_t d = e->items[0]->ival;
        int scratch = scratch_of(L, e->a->a);
        if (scratch >= 0) return scratch_dim(L, scratch, d < TACK_MAX_NDIM ? (int)d : TACK_MAX_NDIM, e);
        return lower_dim(L, e->a->a, e, d < TACK_MAX_NDIM ? (int)d : TACK_MAX_NDIM);
    }
    int scratch = scratch_of(L, e->a);
    if (scratch >= 0) return scratch_load(L, scratch, e);
    if (mat_is_value_subscript(L, e)) return mat_subscript(L, e);
    int p, n;
    ir_expr **idx = lower_indices(L, e, &p, &n);
    if (!idx) return NULL;
    if (vec_width_of(L, p)) return vec_load(L, p, idx, n, e);
    ir_expr *x = new_expr(L, IR_LOAD, e);
    if (x) {
        x->index = p;
        x->args = idx;
        x->nargs = n;
    }
    return x;
}

/* Lowers a call's arguments into an arena array. */
static ir_expr **lower_args(lowerer *L, const expr *e) {
    ir_expr **args = arena_alloc(&L->f->mem, (e->nitems ? e->nitems : 1) * sizeof *args);
    if (!args) {
        oom(L);
        return NULL;
    }
    for (int i = 0; i < e->nitems; i++)
        if (!(args[i] = lower_expr(L, e->items[i]))) return NULL;
    return args;
}

static int any_vector(ir_expr **args, int n) {
    for (int i = 0; i < n; i++)
        if (vec_is(args[i])) return 1;
    return 0;
}

/* v.dot(w), v.length(), v.normalized(), and Taichi's (vector_builtins.c);
 * not a method called on an array parameter's name. */
static int is_vector_method(lowerer *L, const expr *callee) {
    char path[256];
    return callee->kind == EX_ATTR && vb_is_method(callee->name) &&
           !(callee->a->kind == EX_NAME && param_index(L, callee->a->name) >= 0) &&
           module_path(L, callee, path, sizeof path) != 0;
}

int lower_callee_path(lowerer *L, const expr *callee, char *path, size_t size) {
    classify(L, callee, path, size);
    return L->failed || !path[0] ? -1 : 0;
}

int lower_callee_cast(lowerer *L, const expr *d, char *path, size_t size, callee_info *out) {
    callee c = classify(L, d, path, size);
    out->cast = c.kind == CALLEE_CAST;
    out->type = c.cast_to;
    return L->failed ? -1 : 0;
}

static ir_expr *binop(lowerer *L, ir_op op, ir_expr *a, ir_expr *b, const expr *at);

/* tack.add(a, b) and the other operator_functions: the expression the
 * operator spells, lowered as written. */
static ir_expr *lower_operator_call(lowerer *L, const expr *e, int which, const char *path) {
    int want = operator_functions[which].nargs;
    const char *op = operator_functions[which].op;
    if (e->nitems != want || e->nkw) {
        ERR(L, e->line, e->col, "%s() takes %d argument%s, got %d", path, want, want == 1 ? "" : "s",
            e->nitems);
        return NULL;
    }
    if (!strcmp(op, "*")) { /* a matrix times a vector or matrix is their product */
        ir_expr *a = lower_expr(L, e->items[0]), *b = a ? lower_expr(L, e->items[1]) : NULL;
        if (!a || !b) return NULL;
        if (vec_is(a) && vec_is(b) && (a->dim || b->dim)) return mat_matmul(L, a, b, e);
        return binop(L, OP_MUL, a, b, e);
    }
    expr *x = arena_alloc(&L->scratch, sizeof *x);
    if (!x) {
        oom(L);
        return NULL;
    }
    memset(x, 0, sizeof *x);
    x->line = e->line;
    x->col = e->col;
    if (!strcmp(op, "rsqrt")) { /* 1.0 / sqrt(x), sqrt from the module named */
        expr *one = arena_alloc(&L->scratch, sizeof *one), *call = arena_alloc(&L->scratch, sizeof *call),
             *fn = arena_alloc(&L->scratch, sizeof *fn);
        if (e->a->kind != EX_ATTR) {
            ERR(L, e->line, e->col, "rsqrt(x) is read as tack.rsqrt(x) only: write 1.0 / math.sqrt(x)");
            return NULL;
        }
        if (!one || !call || !fn) {
            oom(L);
            return NULL;
        }
        *one = *x;
        one->kind = EX_FLOAT;
        one->fval = 1.0;
        *fn = *e->a;
        fn->name = "sqrt";
        *call = *e;
        call->a = fn;
        x->kind = EX_BINOP;
        x->op = "/";
        x->a = one;
        x->b = call;
        return lower_expr(L, x);
    }
    x->kind = want == 1 ? EX_UNARY : EX_BINOP;
    x->op = op;
    x->a = e->items[0];
    x->b = want == 2 ? e->items[1] : NULL;
    return lower_expr(L, x);
}

/* The vector of a list's values, or the matrix of a list of lists (rows). */
static ir_expr *list_value(lowerer *L, const expr *list) {
    int n = list->nitems;
    if (n < 2 || n > TACK_MAX_VEC_WIDTH) {
        ERR(L, list->line, list->col, "a list stored into an element is a vector or matrix of 2 to "
            "%d values a side, not %d", TACK_MAX_VEC_WIDTH, n);
        return NULL;
    }
    int rows = list->items[0]->kind == EX_TUPLE;
    ir_expr **args = arena_alloc(&L->f->mem, (size_t)n * sizeof *args);
    if (!args) {
        oom(L);
        return NULL;
    }
    for (int i = 0; i < n; i++) {
        const expr *item = list->items[i];
        if ((item->kind == EX_TUPLE) != rows) {
            ERR(L, item->line, item->col, "a list of lists (a matrix's rows) holds only lists");
            return NULL;
        }
        if (!(args[i] = rows ? list_value(L, item) : lower_expr(L, item))) return NULL;
    }
    return vb_call(L, rows ? VB_FROM_ROWS : VB_VECN, args, n, list);
}

/* Counts (count) or gathers (out) the leaves of nested list literals. */
static int list_leaves(const expr *x, expr **out, int n) {
    if (x->kind != EX_TUPLE || !x->is_list) {
        if (out) out[n] = (expr *)x;
        return n + 1;
    }
    for (int i = 0; i < x->nitems; i++) n = list_leaves(x->items[i], out, n);
    return n;
}

/* Taichi's constructors of a list, ti.Vector([a, b, c]) and
 * ti.Matrix([[a, b], [c, d]]): the call with the list's elements (row by
 * row) as its arguments. */
static const expr *unlisted(lowerer *L, const expr *e) {
    if (e->nitems != 1 || e->items[0]->kind != EX_TUPLE || !e->items[0]->is_list) return e;
    int n = list_leaves(e->items[0], NULL, 0);
    expr *copy = arena_alloc(&L->scratch, sizeof *copy);
    expr **items = arena_alloc(&L->scratch, (size_t)n * sizeof *items);
    if (!copy || !items) {
        oom(L);
        return NULL;
    }
    *copy = *e;
    copy->items = items;
    copy->nitems = list_leaves(e->items[0], items, 0);
    return copy;
}

static ir_expr *lower_call(lowerer *L, const expr *e) {
    char path[256];
    if (e->nkw) {
        callee k = classify(L, e->a, path, sizeof path);
        if (L->failed) return NULL;
        /* print()'s are print's; device functions' are refused where they
         * inline; the built-in and NumPy functions' are placed */
        tack_name n;
        int device_fn = k.kind == CALLEE_NONE && e->a->kind == EX_NAME &&
                        !is_bound(L, e->a->name) && !resolve(L, e->a, &n) && n.kind == TACK_NAME_FUNC;
        if (L->failed) return NULL;
        if (k.kind == CALLEE_NONE && !path[0]) {
            ERR(L, e->line, e->col, "keyword arguments are not supported in this call");
            return NULL;
        }
        if (k.kind != CALLEE_PRINT && !device_fn && !(e = calls_place_keywords(L, e, path)))
            return NULL;
    }
    if (e->a->kind == EX_ATTR) {
        tmpl_node *node;
        int field;
        int ref = template_ref(L, e->a->a, &node, &field);
        if (ref < 0) return NULL;
        if (ref == 1 && field < 0) return template_method_call(L, e, node);
    }
    if (e->a->kind == EX_ATTR && !strcmp(e->a->name, "sample") && array_param_of(L, e->a->a) >= 0) {
        int p = array_param_of(L, e->a->a);
        ir_expr **args = lower_args(L, e);
        return args ? lower_texture_sample(L, p, args, e->nitems, e) : NULL;
    }
    /* z.conjugate(), and NumPy's z.conj() of a complex array's element */
    if (e->a->kind == EX_ATTR && (!strcmp(e->a->name, "conjugate") || !strcmp(e->a->name, "conj")) &&
        !e->nitems &&
        !classify(L, e->a, path, sizeof path).kind && !path[0])
        return cx_conj(L, lower_expr(L, e->a->a), e);
    if (e->a->kind == EX_ATTR && e->a->a->kind == EX_NAME && is_bound(L, e->a->a->name) &&
        scratch_of(L, e->a->a) >= 0) {
        int which = array_reduction_name(e->a->name);
        if (which >= 0 && strcmp(e->a->name, "amax") && strcmp(e->a->name, "amin") && !e->nkw) {
            char what[80];
            snprintf(what, sizeof what, "%s.%s()", e->a->a->name, e->a->name);
            if (e->nitems > 1) {
                ERR(L, e->line, e->col, "%s takes at most one argument in kernels", what);
                return NULL;
            }
            return array_reduce(L, which, e->a->a, e->nitems ? e->items[0] : NULL, what, e);
        }
        /* a.mean() of a local array: say so, not "name 'a' is not defined" */
        ERR(L, e->line, e->col, "'%s' is a local array: its method %s() is not available in "
            "kernels; write the loop over its elements (for j in range(len(%s)): ...)",
            e->a->a->name, e->a->name, e->a->a->name);
        return NULL;
    }
    if (is_vector_method(L, e->a)) {
        ir_expr *self = lower_expr(L, e->a->a);
        ir_expr **args = self ? lower_args(L, e) : NULL;
        if (!args) return NULL;
        if (!vec_is(self)) {
            ERR(L, e->line, e->col, "%s() is a method of vectors", e->a->name);
            return NULL;
        }
        return vb_method(L, e->a->name, self, args, e->nitems, e);
    }
    callee c = classify(L, e->a, path, sizeof path);
    if (L->failed) return NULL;
    int rnd = c.kind == CALLEE_NONE && path[0] ? random_name(path) : -1;
    if (rnd >= 0) return lower_random_call(L, e, rnd, path);
    ir_expr *cx;
    if (c.kind == CALLEE_NONE && path[0] && cx_call(L, e, path, &cx)) return cx;
    if (c.kind == CALLEE_NONE && path[0] && calls_numpy(L, e, path, &cx)) return cx;
    switch (c.kind) {
    case CALLEE_WORKGROUP:
        return workgroup_value(L, c.which, e);
    case CALLEE_OPERATOR: return lower_operator_call(L, e, c.which, path);
    case CALLEE_VECFN: {
        if (c.which == VB_VEC2 || c.which == VB_VEC3 || c.which == VB_VEC4 || c.which == VB_VECN)
            if (!(e = unlisted(L, e))) return NULL;
        ir_expr **args = lower_args(L, e);
        return args ? vb_call(L, c.which, args, e->nitems, e) : NULL;
    }
    case CALLEE_VECTOR: {
        if (!(e = unlisted(L, e))) return NULL;
        ir_expr **args = lower_args(L, e);
        ir_expr *v = args ? vec_construct(L, c.cast_to, c.width, args, e->nitems, e) : NULL;
        if (v) v->quat = c.quat;
        return v;
    }
    case CALLEE_MATRIX: {
        if (c.which == MAT_IDENTITY) {
            /* tack.identity(n[, dtype]): n a literal 2-4; f32 unless dtype
             * is tack.f64 (or another float dtype's name). */
            const expr *n = e->nitems ? e->items[0] : NULL;
            if (e->nitems < 1 || e->nitems > 2 || n->kind != EX_INT || n->ival < 2 || n->ival > 4) {
                ERR(L, e->line, e->col, "tack.identity(n, dtype) takes n, an integer literal 2-4, "
                    "and optionally the dtype tack.f32 or tack.f64");
                return NULL;
            }
            ir_type comp = TACK_F32;
            if (e->nitems == 2) {
                char dpath[256];
                callee d = classify(L, e->items[1], dpath, sizeof dpath);
                if (L->failed) return NULL;
                if (d.kind != CALLEE_CAST || (d.cast_to != TACK_F32 && d.cast_to != TACK_F64)) {
                    ERR(L, e->items[1]->line, e->items[1]->col, "tack.identity()'s dtype is "
                        "tack.f32 or tack.f64");
                    return NULL;
                }
                comp = d.cast_to;
            }
            return mat_identity(L, (int)n->ival, comp, e);
        }
        if (!(e = unlisted(L, e))) return NULL;
        ir_expr **args = lower_args(L, e);
        return args ? mat_call(L, c.which, c.width, c.cast_to, args, e->nitems, e) : NULL;
    }
    case CALLEE_CAST: {
        if (c.cast_to == CAST_TO_SECOND) { /* tack.cast(x, dtype), Taichi's ti.cast */
            char dpath[256];
            callee d = e->nitems == 2 ? classify(L, e->items[1], dpath, sizeof dpath) : (callee){0};
            if (L->failed) return NULL;
            if (d.kind != CALLEE_CAST || d.cast_to == CAST_TO_SECOND) {
                ERR(L, e->line, e->col, "tack.cast(x, dtype) takes a value and a scalar dtype "
                    "(tack.i32, tack.f32, np.float64, ...)");
                return NULL;
            }
            c.cast_to = d.cast_to;
        } else if (e->nitems != 1) {
            ERR(L, e->line, e->col, "%s() takes exactly one argument here", path);
            return NULL;
        }
        ir_expr *a = lower_expr(L, e->items[0]);
        if (!a) return NULL;
        if (c.cast_to == TACK_F16) {
            /* f16 is a storage type: the cast rounds, and the value stays
             * an f32 (inference types the call). */
            if (vec_is(a)) {
                ERR(L, e->line, e->col, "%s() needs a scalar: there are no vectors of f16", path);
                return NULL;
            }
            ir_expr **args = arena_alloc(&L->f->mem, sizeof *args);
            if (!args) {
                oom(L);
                return NULL;
            }
            ir_expr *x = new_expr(L, IR_CALL, e);
            if (x) {
                args[0] = a;
                x->fn = INTR_F16;
                x->args = args;
                x->nargs = 1;
            }
            return x;
        }
        if (vec_is(a)) return vec_cast(L, c.cast_to, a, e);
        ir_expr *x = new_expr(L, IR_CAST, e);
        if (x) {
            x->a = a;
            x->type = c.cast_to;
        }
        return x;
    }
    case CALLEE_INTRINSIC: {
        int want = ir_intrinsic_nargs(c.fn);
        if ((want > 0 && e->nitems != want) || (want < 0 && e->nitems < 2)) {
            ERR(L, e->line, e->col, "%s() takes %s%d argument%s, got %d", path,
                want < 0 ? "at least " : "", want < 0 ? 2 : want, want == 1 ? "" : "s",
                e->nitems);
            return NULL;
        }
        ir_expr **args = lower_args(L, e);
        if (!args) return NULL;
        ir_expr *cx;
        for (int i = 0; i < e->nitems; i++)
            if (cx_is(args[i]) && cx_intrinsic(L, c.fn, args, e->nitems, e, &cx)) return cx;
        if (any_vector(args, e->nitems)) {
            /* Component by component; min/max of several fold in pairs. */
            if (want > 0) return vec_call(L, c.fn, args, e->nitems, e);
            ir_expr *acc = args[0];
            for (int i = 1; acc && i < e->nitems; i++) {
                ir_expr *pair[2] = {acc, args[i]};
                acc = vec_call(L, c.fn, pair, 2, e);
            }
            return acc;
        }
        /* min/max of more than two fold left into pairs. */
        if (want < 0) {
            ir_expr *acc = args[0];
            for (int i = 1; i < e->nitems; i++) {
                ir_expr *x = new_expr(L, IR_CALL, e);
                if (!x) return NULL;
                x->fn = c.fn;
                x->args = arena_alloc(&L->f->mem, 2 * sizeof *x->args);
                if (!x->args) {
                    oom(L);
                    return NULL;
                }
                x->args[0] = acc;
                x->args[1] = args[i];
                x->nargs = 2;
                acc = x;
            }
            return acc;
        }
        ir_expr *x = new_expr(L, IR_CALL, e);
        if (x) {
            x->fn = c.fn;
            x->args = args;
            x->nargs = e->nitems;
        }
        return x;
    }
    case CALLEE_LEN:
        if (e->nitems != 1) {
            ERR(L, e->line, e->col, "len() takes exactly one argument");
            return NULL;
        }
        if (scratch_of(L, e->items[0]) >= 0) return scratch_dim(L, scratch_of(L, e->items[0]), 0, e);
        return lower_dim(L, e->items[0], e, 0);
    case CALLEE_RANGE:
        ERR(L, e->line, e->col, "range() can only be used as the iterable of a for loop");
        return NULL;
    case CALLEE_NDINDEX:
        ERR(L, e->line, e->col, "tack.ndindex() can only be the iterable of the kernel's outermost loop");
        return NULL;
    case CALLEE_STATIC: /* a value known when compiling is already one */
        if (e->nitems != 1 || e->nkw) {
            ERR(L, e->line, e->col, "tack.static() takes exactly one argument");
            return NULL;
        }
        return lower_expr(L, e->items[0]);
    case CALLEE_ATOMIC:
        return lower_atomic(L, e, c.atomic);
    case CALLEE_CONST:
        ERR(L, e->line, e->col, "'%s' is a constant, not a function", path);
        return NULL;
    case CALLEE_SPECIAL:
        return lower_special_call(L, e, c.special, path);
    case CALLEE_PRINT:
        ERR(L, e->line, e->col, "print() gives no value; call it as a statement of its own");
        return NULL;
    case CALLEE_NONE:
        break;
    }
    if (e->a->kind == EX_NAME) {
        tack_name n;
        int local = is_bound(L, e->a->name);
        if (!local && resolve(L, e->a, &n)) return NULL; /* resolve said why */
        if (!local && n.kind == TACK_NAME_FUNC) return one_result_call(L, e, &n);
    }
    tack_name modfn;
    if (e->a->kind == EX_ATTR && is_module_function(L, e->a, &modfn)) return one_result_call(L, e, &modfn);
    /* `math.sqrt(x)` where math is not a module here (math = 3): say so. */
    const expr *root = e->a;
    while (root->kind == EX_ATTR) root = root->a;
    if (!path[0] && root != e->a && root->kind == EX_NAME && !is_bound(L, root->name)) {
        ERR(L, e->line, e->col, "'%s.%s(...)' cannot be called in a kernel: '%s' is not a module "
            "here", root->name, root == e->a->a ? e->a->name : "...", root->name);
        return NULL;
    }
    if (e->a->kind == EX_ATTR && root->kind == EX_NAME && is_bound(L, root->name)) {
        /* x.mean(), v.foo(): a method the kernel language does not have. */
        ERR(L, e->line, e->col, "'%s.%s()' cannot be called in a kernel: '%s' has no method '%s' "
            "here (arrays are indexed, x[i]; reductions are written as loops)",
            root == e->a->a ? root->name : "...", e->a->name, root->name, e->a->name);
        return NULL;
    }
    ERR(L, e->line, e->col, "'%s' cannot be called in a kernel", path[0] ? path : "this");
    return NULL;
}

static ir_expr *lower_attr(lowerer *L, const expr *e) {
    char path[256];
    tmpl_node *node;
    int field;
    int ref = template_ref(L, e, &node, &field);
    if (ref < 0) return NULL;
    ir_expr *rec;
    if (!ref && struct_call_field(L, e, &rec)) return rec; /* f(...).pos */
    if (ref == 1) {
        if (field >= 0) return template_field_value(L, node, field, e);
        ERR(L, e->line, e->col, "'%s' is a template instance; use its attributes", node->path);
        return NULL;
    }
    callee c = classify(L, e, path, sizeof path);
    if (c.kind == CALLEE_WORKGROUP && c.which == WG_SIZE) return workgroup_value(L, WG_SIZE, e);
    if (c.kind == CALLEE_CONST) {
        ir_expr *x = ir_const_float(L->f, c.value, IRT_WEAK_FLOAT, e->line, e->col);
        if (!x) oom(L);
        return x;
    }
    if (!path[0] && (!strcmp(e->name, "real") || !strcmp(e->name, "imag")))
        return cx_part(L, lower_expr(L, e->a), e->name[0] == 'i', e);
    if (!path[0] && !strcmp(e->name, "T")) return mat_transpose(L, lower_expr(L, e->a), e);
    const char *comp = strchr("xyzw", e->name[0]);
    if (!path[0] && comp && e->name[0] && !e->name[1]) {
        ir_expr *v = lower_expr(L, e->a);
        if (!v) return NULL;
        if (vec_is(v)) return vec_component(L, v, (int)(comp - "xyzw"), e);
        ERR(L, e->line, e->col, "'.%s' needs a vector", e->name);
        return NULL;
    }
    if (!strcmp(e->name, "shape"))
        ERR(L, e->line, e->col, "shape must be indexed, as in x.shape[0]");
    else if (path[0])
        ERR(L, e->line, e->col, "'%s' is not a value a kernel can use", path);
    else
        ERR(L, e->line, e->col, "attribute '%s' is not supported here", e->name);
    return NULL;
}

static ir_expr *binop(lowerer *L, ir_op op, ir_expr *a, ir_expr *b, const expr *at) {
    if (!a || !b) return NULL;
    if (cx_is(a) || cx_is(b)) return cx_binop(L, op, a, b, at);
    if (qt_is(a) || qt_is(b)) return qt_binop(L, op, a, b, at);
    if (vec_is(a) || vec_is(b)) return vec_binop(L, op, a, b, at);
    ir_expr *x = new_expr(L, IR_BINOP, at);
    if (x) {
        x->op = op;
        x->a = a;
        x->b = b;
    }
    return x;
}

static ir_expr *lower_expr_zero(lowerer *L, const expr *e) {
    ir_expr *x = ir_const_float(L->f, 0.0, IRT_WEAK_FLOAT, e->line, e->col);
    if (!x) oom(L);
    return x;
}

ir_expr *lower_expr(lowerer *L, const expr *e) {
    if (L->failed) return NULL;
    switch (e->kind) {
    case EX_NAME:
        return lower_name(L, e);
    case EX_INT: {
        if (e->ival_overflow) {
            ERR(L, e->line, e->col, "integer literal does not fit in 64 bits");
            return NULL;
        }
        ir_type t = e->ival > (uint64_t)INT64_MAX ? TACK_U64 : IRT_WEAK_INT;
        ir_expr *x = ir_const_int(L->f, (int64_t)e->ival, t, e->line, e->col);
        if (!x) oom(L);
        return x;
    }
    case EX_FLOAT: {
        if (e->imag) return cx_make(L, lower_expr_zero(L, e), ir_const_float(L->f, e->fval, IRT_WEAK_FLOAT, e->line, e->col), e);
        ir_expr *x = ir_const_float(L->f, e->fval, IRT_WEAK_FLOAT, e->line, e->col);
        if (!x) oom(L);
        return x;
    }
    case EX_BOOL: {
        ir_expr *x = ir_const_int(L->f, e->bval, TACK_BOOL, e->line, e->col);
        if (!x) oom(L);
        return x;
    }
    case EX_BINOP: {
        if (!strcmp(e->op, "@")) return mat_matmul(L, lower_expr(L, e->a), lower_expr(L, e->b), e);
        ir_op op = binop_of(e->op);
        if ((int)op < 0) {
            ERR(L, e->line, e->col, "operator '%s' is not supported", e->op);
            return NULL;
        }
        return binop(L, op, lower_expr(L, e->a), lower_expr(L, e->b), e);
    }
    case EX_UNARY: {
        /* Fold -literal so that -9223372036854775808 is an i64. */
        if (!strcmp(e->op, "-") && e->a->kind == EX_INT && !e->a->ival_overflow &&
            e->a->ival <= (uint64_t)INT64_MAX + 1) {
            ir_expr *x = ir_const_int(L->f, (int64_t)(0 - e->a->ival), IRT_WEAK_INT, e->line, e->col);
            if (!x) oom(L);
            return x;
        }
        ir_expr *a = lower_expr(L, e->a);
        if (!a) return NULL;
        ir_op op;
        if (!strcmp(e->op, "-")) op = OP_NEG;
        else if (!strcmp(e->op, "+")) op = OP_POS;
        else if (!strcmp(e->op, "~")) op = OP_INVERT;
        else if (!strcmp(e->op, "not")) op = OP_NOT;
        else {
            ERR(L, e->line, e->col, "operator '%s' is not supported", e->op);
            return NULL;
        }
        if (cx_is(a)) return cx_unop(L, op, a, e);
        if (vec_is(a)) {
            ir_expr *v = vec_unop(L, op, a, e);
            if (v) v->quat = a->quat; /* -q, +q */
            return v;
        }
        ir_expr *x = new_expr(L, IR_UNOP, e);
        if (!x) return NULL;
        x->a = a;
        x->op = op;
        return x;
    }
    case EX_COMPARE: {
        /* a < b < c is (a < b) and (b < c); operands are pure, so b may be
         * evaluated twice. */
        ir_expr *acc = NULL;
        for (int i = 0; i + 1 < e->nitems; i++) {
            ir_op op = binop_of(e->ops[i]);
            if ((int)op < 0 || op < OP_LT) {
                ERR(L, e->line, e->col, "comparison '%s' is not supported in kernels", e->ops[i]);
                return NULL;
            }
            ir_expr *cmp = binop(L, op, lower_expr(L, e->items[i]), lower_expr(L, e->items[i + 1]), e);
            if (!cmp) return NULL;
            if (!acc) {
                acc = cmp;
                continue;
            }
            ir_expr *x = new_expr(L, IR_ANDOR, e);
            if (!x) return NULL;
            x->op = OP_AND;
            x->a = acc;
            x->b = cmp;
            acc = x;
        }
        return acc;
    }
    case EX_BOOLOP: {
        ir_expr *acc = lower_expr(L, e->items[0]);
        for (int i = 1; acc && i < e->nitems; i++) {
            ir_expr *b = lower_expr(L, e->items[i]);
            if (!b) return NULL;
            ir_expr *x = new_expr(L, IR_ANDOR, e);
            if (!x) return NULL;
            x->op = !strcmp(e->op, "and") ? OP_AND : OP_OR;
            x->a = acc;
            x->b = b;
            acc = x;
        }
        return acc;
    }
    case EX_IFEXP: {
        ir_expr *x = new_expr(L, IR_SELECT, e);
        if (!x) return NULL;
        x->cond = lower_expr(L, e->a);
        x->a = lower_expr(L, e->b);
        x->b = lower_expr(L, e->c);
        if (vec_is(x->a) || vec_is(x->b)) return vec_select(L, x->cond, x->a, x->b, e);
        return x->cond && x->a && x->b ? x : NULL;
    }
    case EX_CALL:
        return lower_call(L, e);
    case EX_ATTR:
        return lower_attr(L, e);
    case EX_SUBSCRIPT:
        return lower_subscript(L, e);
    case EX_TUPLE:
        ERR(L, e->line, e->col, "tuples can only be unpacked in an assignment");
        return NULL;
    case EX_STR:
    case EX_FSTRING:
        ERR(L, e->line, e->col, "strings are only printed in kernels: print('text', x)");
        return NULL;
    }
    ERR(L, e->line, e->col, "unsupported expression");
    return NULL;
}

/* ---- statements ---- */


static int push(lowerer *L, ir_block *b, ir_stmt *s) {
    if (!s || ir_block_push(L->f, b, s)) return oom(L);
    return 0;
}

static int check_assignable_name(lowerer *L, const expr *t) {
    const binding *b = scope_find(L->sc, t->name);
    if (param_index(L, t->name) >= 0 || (b && b->kind == BIND_TEMPLATE)) {
        ERR(L, t->line, t->col, "cannot assign to parameter '%s'; use a local name", t->name);
        return -1;
    }
    return 0;
}

/* target = value, for one NAME or SUBSCRIPT target. */
int lower_assign_to(lowerer *L, ir_block *b, const expr *t, ir_expr *value, const stmt *at) {
    if (!value) return -1;
    if (mat_target_kind(L, t)) {
        int rc = mat_assign_component(L, b, t, value, at);
        if (rc <= 0) return rc;
    }
    if (t->kind == EX_NAME) {
        if (check_assignable_name(L, t)) return -1;
        binding *bound = (binding *)scope_find(L->sc, t->name);
        if (vec_is(value)) return vec_assign_local(L, b, bound, value, at);
        if (bound->kind == BIND_VECTOR) {
            ERR(L, at->line, at->col, "'%s' holds a vector elsewhere; a name keeps one kind of value",
                t->name);
            return -1;
        }
        if (bound->kind == BIND_STRUCT) {
            ERR(L, at->line, at->col, "only a record can be assigned to the record '%s'", t->name);
            return -1;
        }
        if (bound->kind != BIND_LOCAL) { /* an own array, a row: not a local */
            ERR(L, at->line, at->col, "'%s' holds an array elsewhere; a name keeps one kind of value",
                t->name);
            return -1;
        }
        bound->holds_scalar = 1;
        ir_stmt *s = ir_stmt_new(L->f, IR_ASSIGN, at->line, at->col);
        if (!s) return oom(L);
        s->index = bound->index;
        s->value = value;
        return push(L, b, s);
    }
    if (t->kind == EX_SUBSCRIPT) {
        if (t->a->kind == EX_ATTR && !strcmp(t->a->name, "shape")) {
            ERR(L, t->line, t->col, "an array's shape cannot be assigned");
            return -1;
        }
        int scratch = scratch_of(L, t->a);
        if (scratch >= 0) return scratch_store(L, b, scratch, t, value, at);
        int p, n;
        ir_expr **idx = lower_indices(L, t, &p, &n);
        if (!idx) return -1;
        L->f->params[p].written = 1;
        if (vec_width_of(L, p)) return vec_store(L, b, p, idx, n, value, at);
        if (cx_is(value)) {
            ERR(L, at->line, at->col, "'%s' is not an array of complex numbers; store z.real or "
                "z.imag, or pass a complex64/complex128 array", L->f->params[p].name);
            return -1;
        }
        if (vec_is(value)) {
            char what[64];
            vec_shape_name(value, what, sizeof what);
            ERR(L, at->line, at->col, "'%s' is an array of scalars, not of the %s stored; store "
                "one component, or pass an array of %s", L->f->params[p].name, what,
                value->dim ? "matrices" : "vectors");
            return -1;
        }
        ir_stmt *s = ir_stmt_new(L->f, IR_STORE, at->line, at->col);
        if (!s) return oom(L);
        s->index = p;
        s->indices = idx;
        s->nindices = n;
        s->value = value;
        return push(L, b, s);
    }
    if (t->kind == EX_ATTR)
        ERR(L, t->line, t->col, "cannot assign to attribute '%s'", t->name);
    else
        ERR(L, t->line, t->col, "cannot assign to this expression");
    return -1;
}

/* Declares every name a statement list assigns, so that reads anywhere in
 * the body see a local (Python's function scope). */
static int declare_target(lowerer *L, const expr *t) {
    if (t->kind == EX_NAME && !is_bound(L, t->name)) {
        /* Kernel locals keep their names; a device function's get a
         * suffix so that each inlined copy has its own. */
        char name[256];
        if (L->sc->inline_id < 0) snprintf(name, sizeof name, "%s", t->name);
        else snprintf(name, sizeof name, "%s@%d", t->name, L->sc->inline_id);
        int l = ir_local_add(L->f, name);
        if (l < 0) return oom(L);
        return scope_bind(L, L->sc, t->name, BIND_LOCAL, l);
    }
    if (t->kind == EX_TUPLE)
        for (int i = 0; i < t->nitems; i++)
            if (declare_target(L, t->items[i])) return -1;
    return 0;
}

int lower_declare_locals(lowerer *L, stmt *const *body, int n) {
    for (int i = 0; i < n; i++) {
        const stmt *s = body[i];
        for (int t = 0; t < s->ntargets; t++)
            if (declare_target(L, s->targets[t])) return -1;
        if (lower_declare_locals(L, s->body, s->nbody) ||
            lower_declare_locals(L, s->orelse, s->norelse))
            return -1;
    }
    return 0;
}

/* Whether `e` calls a device function; fills *fn. */
static int is_device_call(lowerer *L, const expr *e, tack_name *fn) {
    if (e->kind == EX_CALL && e->a->kind == EX_ATTR) return is_module_function(L, e->a, fn);
    return e->kind == EX_CALL && e->a->kind == EX_NAME && !is_bound(L, e->a->name) &&
           lower_resolve(L, e->a, fn) == 0 && fn->kind == TACK_NAME_FUNC;
}

/* a, b = f(...): the device function's result locals, assigned in order. */
static int unpack_device_call(lowerer *L, ir_block *b, const stmt *s, const tack_name *fn) {
    const scope *callee;
    ir_expr *call = lower_device_call_slots(L, s->value, fn, &callee);
    if (!call) return -1;
    int n = callee->nresults > 0 ? callee->nresults : 0;
    if (callee->result_width && s->ntargets == 1 && s->targets[0]->kind == EX_TUPLE) {
        return vb_unpack_value(L, b, s, call); /* a, b, c = f(...) of one vector: its components */
    }
    ir_stmt *eval = ir_stmt_new(L->f, IR_EVAL, s->line, s->col);
    if (!eval) return oom(L);
    eval->value = call;
    if (push(L, b, eval)) return -1;
    for (int t = 0; t < s->ntargets; t++) {
        const expr *tgt = s->targets[t];
        int want = tgt->kind == EX_TUPLE ? tgt->nitems : 1;
        if (want != n) {
            ERR(L, s->line, s->col, "'%s' returns %d value%s but %d %s expected", s->value->a->name,
                n, n == 1 ? "" : "s", want, want == 1 ? "is" : "are");
            return -1;
        }
        for (int i = 0; i < n; i++) {
            const int *locals = callee->results + callee->slot_first[i];
            ir_expr *v = callee->slot_width[i]
                             ? vec_from_locals(L, NULL, locals, callee->slot_width[i], callee->slot_rows[i],
                                               s->value)
                             : lower_read_local(L, locals[0], s->value);
            if (!v) return -1;
            if (callee->slot_width[i]) {
                v->cplx = callee->slot_cplx[i];
                v->quat = callee->slot_quat[i];
            }
            if (lower_assign_to(L, b, tgt->kind == EX_TUPLE ? tgt->items[i] : tgt, v, s)) return -1;
        }
    }
    return 0;
}

/* The builtin a call names when it returns a tuple (divmod, math.frexp,
 * math.modf): its SP_* code, else 0. */
static int tuple_call(lowerer *L, const expr *e, char *path, size_t size) {
    if (e->kind != EX_CALL) return 0;
    callee c = classify(L, e->a, path, size);
    return c.kind == CALLEE_SPECIAL && lower_special_results(c.special) > 1 ? c.special : 0;
}

static int lower_assign(lowerer *L, ir_block *b, const stmt *s) {
    tack_name fn;
    char path[256];
    if (s->ntargets == 1 && s->targets[0]->kind == EX_NAME) {
        const binding *red = scope_find(L->sc, s->targets[0]->name);
        if (red && red->kind == BIND_REDUCTION) return lower_reduction_update(L, b, s, red);
    }
    if (s->ntargets == 1) {
        const expr *t = s->targets[0], *v = s->value;
        int rc = 1;
        if (t->kind == EX_TUPLE && v->kind == EX_ATTR && !strcmp(v->name, "shape"))
            rc = view_unpack_shape(L, b, s);
        else if (t->kind == EX_NAME && v->kind == EX_TUPLE)
            rc = view_assign_tuple(L, b, s);
        else if (t->kind == EX_NAME && v->kind == EX_SUBSCRIPT && view_name_is_indexed(L, t->name))
            rc = view_assign_row(L, b, s);
        if (rc <= 0) return rc;
    }
    {
        int rc = calls_local_array(L, b, s);
        if (rc <= 0) return rc;
    }
    if (s->value->kind == EX_CALL) {
        callee c = classify(L, s->value->a, path, sizeof path);
        if (c.kind == CALLEE_WORKGROUP && (c.which == WG_LOCAL || c.which == WG_SHARED) &&
            s->value->nkw) {
            /* tack.local(shape, dtype=...): the same statement, placed */
            stmt *placed = arena_alloc(&L->f->mem, sizeof *placed);
            if (!placed) return oom(L);
            *placed = *s;
            if (!(placed->value = (expr *)calls_place_keywords(L, s->value, path))) return -1;
            s = placed;
        }
        if (c.kind == CALLEE_WORKGROUP && (c.which == WG_LOCAL || c.which == WG_SHARED)) {
            ir_type dtype = TACK_F32;
            if (s->value->nitems == 2) {
                callee d = classify(L, s->value->items[1], path, sizeof path);
                if (L->failed) return -1;
                if (d.kind == CALLEE_NONE && cx_dtype_named(path) >= 0) /* complex (scratch.c) */
                    return scratch_declare(L, b, s, c.which == WG_SHARED, cx_dtype_named(path), 1);
                if (d.kind != CALLEE_CAST || d.cast_to == TACK_F16 || d.cast_to == TACK_BOOL) {
                    if (!L->failed)
                        ERR(L, s->value->items[1]->line, s->value->items[1]->col,
                            "the dtype of an array of the kernel's own is a numeric scalar "
                            "dtype such as tack.f32 or tack.i32, or tack.complex64/complex128");
                    return -1;
                }
                dtype = d.cast_to;
            }
            return scratch_declare(L, b, s, c.which == WG_SHARED, dtype, 0);
        }
    }
    for (int t = 0; t < s->ntargets; t++)
        if (s->targets[t]->kind == EX_TUPLE && is_device_call(L, s->value, &fn))
            return unpack_device_call(L, b, s, &fn);
    int special = 0;
    for (int t = 0; !special && t < s->ntargets; t++)
        if (s->targets[t]->kind == EX_TUPLE) special = tuple_call(L, s->value, path, sizeof path);
    if (L->failed) return -1;
    if (!special) { /* a, b, c = v (vector_builtins.c) */
        int rc = vb_unpack(L, b, s);
        if (rc <= 0) return rc;
    }
    /* Tuple unpacking: evaluate every value first, then assign. */
    for (int t = 0; t < s->ntargets; t++) {
        const expr *tgt = s->targets[t];
        if (tgt->kind != EX_TUPLE) continue;
        if (special && lower_special_results(special) != tgt->nitems) {
            ERR(L, s->line, s->col, "%s() returns %d values but %d are expected", path,
                lower_special_results(special), tgt->nitems);
            return -1;
        }
        if (!special && (s->value->kind != EX_TUPLE || s->value->nitems != tgt->nitems)) {
            ERR(L, s->line, s->col, "tuple unpacking needs a tuple of %d values on the right",
                tgt->nitems);
            return -1;
        }
    }
    /* grid_v[i, j] = [0, 0] (Taichi): a list stored into an element is a
     * vector, a list of lists a matrix (a list bound to a name stays a
     * local array). */
    int stores = !special && s->value->kind == EX_TUPLE;
    for (int t = 0; stores && t < s->ntargets; t++) stores = s->targets[t]->kind == EX_SUBSCRIPT;
    if (stores) {
        if (s->ntargets != 1) {
            ERR(L, s->line, s->col, "a list is stored into one element at a time");
            return -1;
        }
        ir_expr *v = list_value(L, s->value);
        return v ? lower_assign_to(L, b, s->targets[0], v, s) : -1;
    }
    if (s->value->kind == EX_TUPLE || special) {
        int n = special ? lower_special_results(special) : s->value->nitems;
        int temps[TACK_MAX_PARAMS];
        ir_expr *values[2], *held[TACK_MAX_PARAMS] = {0}; /* vectors: evaluated, read later */
        if (n > TACK_MAX_PARAMS) {
            ERR(L, s->line, s->col, "too many values to unpack");
            return -1;
        }
        if (special && lower_tuple_call(L, b, s->value, special, path, values) < 0) return -1;
        for (int i = 0; i < n; i++) {
            temps[i] = lower_temp(L, "tuple");
            if (temps[i] < 0) return -1;
            ir_expr *v = special ? values[i] : lower_expr(L, s->value->items[i]);
            if (!v) return -1;
            if (vec_is(v)) { /* a, b = b, a of vectors */
                if (vec_eval(L, b, v)) return -1;
                held[i] = v;
                continue;
            }
            ir_stmt *a = ir_stmt_new(L->f, IR_ASSIGN, s->line, s->col);
            if (!a) return oom(L);
            a->index = temps[i];
            a->value = v;
            if (push(L, b, a)) return -1;
        }
        for (int t = 0; t < s->ntargets; t++) {
            const expr *tgt = s->targets[t];
            if (tgt->kind != EX_TUPLE) {
                ERR(L, tgt->line, tgt->col, "a tuple can only be unpacked into names");
                return -1;
            }
            for (int i = 0; i < n; i++) {
                ir_expr *v = held[i] ? vb_held(L, held[i], s->value) : ir_expr_new(L->f, IR_LOCAL, s->line, s->col);
                if (!v) return oom(L);
                if (!held[i]) v->index = temps[i];
                if (lower_assign_to(L, b, tgt->items[i], v, s)) return -1;
            }
        }
        return 0;
    }
    /* a = b = v evaluates v once, then assigns left to right. */
    L->record_call = s->value; /* q = f(...) of a record */
    ir_expr *v = lower_expr(L, s->value);
    const scope *rec = L->record_callee;
    L->record_call = NULL;
    L->record_callee = NULL;
    if (!v) return -1;
    if (rec) return struct_assign_call(L, b, s, v, rec);
    if (s->ntargets == 1) return lower_assign_to(L, b, s->targets[0], v, s);
    int tmp = lower_temp(L, "chain");
    if (tmp < 0) return -1;
    ir_stmt *a = ir_stmt_new(L->f, IR_ASSIGN, s->line, s->col);
    if (!a) return oom(L);
    a->index = tmp;
    a->value = v;
    if (push(L, b, a)) return -1;
    for (int t = 0; t < s->ntargets; t++) {
        ir_expr *r = ir_expr_new(L->f, IR_LOCAL, s->line, s->col);
        if (!r) return oom(L);
        r->index = tmp;
        if (lower_assign_to(L, b, s->targets[t], r, s)) return -1;
    }
    return 0;
}

static int lower_augassign(lowerer *L, ir_block *b, const stmt *s) {
    ir_op op = binop_of(s->op);
    const expr *t = s->targets[0];
    if (!strcmp(s->op, "@")) {
        /* m @= b: a matrix (or vector) local, m = m @ b. */
        if (t->kind != EX_NAME || check_assignable_name(L, t)) {
            if (!L->failed) ERR(L, t->line, t->col, "'@=' updates a matrix or vector local");
            return -1;
        }
        return lower_assign_to(L, b, t, mat_matmul(L, lower_expr(L, t), lower_expr(L, s->value), s->value), s);
    }
    if ((int)op < 0 || op >= OP_NEG) {
        ERR(L, s->line, s->col, "operator '%s=' is not supported", s->op);
        return -1;
    }
    int comp = mat_target_kind(L, t);
    if (t->kind != EX_NAME && t->kind != EX_SUBSCRIPT && !comp) {
        ERR(L, t->line, t->col, "cannot assign to this expression");
        return -1;
    }
    if (t->kind == EX_NAME && check_assignable_name(L, t)) return -1;
    const binding *red = t->kind == EX_NAME ? scope_find(L->sc, t->name) : NULL;
    if (red && red->kind == BIND_REDUCTION) return lower_reduction_update(L, b, s, red);
    /* x[i] op= v reads x[i] with the same (pure) index expressions; an
     * array element (or its component) gets the atomic form beside it
     * (updates.c); a local's component does not. */
    int element = comp ? comp == 2 : t->kind == EX_SUBSCRIPT && scratch_of(L, t->a) < 0 &&
                  !(t->a->kind == EX_ATTR && !strcmp(t->a->name, "shape"));
    ir_stmt *choice = element ? update_choice(L, s) : NULL;
    if (element && !choice) return -1;
    ir_expr *cur = lower_expr(L, t);
    ir_expr *v = lower_expr(L, s->value);
    if (!cur || !v) return -1;
    if (lower_assign_to(L, choice ? &choice->body : b, t, binop(L, op, cur, v, s->value), s)) return -1;
    if (!choice) return 0;
    if (update_atomic_form(L, choice, s, op)) return -1;
    return push(L, b, choice);
}

static int is_grouped_path(const char *path) {
    return !strcmp(path, "tack.grouped") || !strcmp(path, "taichi.grouped");
}

/* Reads range(a[, b[, c]]) into start, stop, step. */
static int lower_range(lowerer *L, const expr *it, ir_expr **start, ir_expr **stop,
                       ir_expr **step) {
    char path[256];
    callee_kind kind = it->kind == EX_CALL ? classify(L, it->a, path, sizeof path).kind : CALLEE_NONE;
    if (kind == CALLEE_NDINDEX) {
        ERR(L, it->line, it->col, "tack.ndindex() can only be the iterable of the kernel's outermost loop");
        return -1;
    }
    if (L->failed) return -1;
    if (kind != CALLEE_RANGE) {
        if (is_grouped_path(path))
            ERR(L, it->line, it->col, "tack.grouped(x) can only be the iterable of the kernel's "
                "outermost loop (inside it, write 'for i, j in tack.ndindex(...)' or nested ranges)");
        else if (it->kind == EX_CALL && it->a->kind == EX_NAME && !strcmp(it->a->name, "range"))
            ERR(L, it->line, it->col, "for loops in kernels must iterate over the builtin "
                "range(...), but 'range' here is %s that hides it; rename that",
                is_bound(L, "range") ? "a local name" : "a global or closure name");
        else
            ERR(L, it->line, it->col, "for loops in kernels must iterate over range(...)");
        return -1;
    }
    if (it->nitems < 1 || it->nitems > 3) {
        ERR(L, it->line, it->col, "range() takes 1 to 3 arguments, got %d", it->nitems);
        return -1;
    }
    ir_expr *v[3];
    for (int i = 0; i < it->nitems; i++)
        if (!(v[i] = lower_expr(L, it->items[i]))) return -1;
    *start = it->nitems == 1 ? ir_const_int(L->f, 0, IRT_WEAK_INT, it->line, it->col) : v[0];
    *stop = it->nitems == 1 ? v[0] : v[1];
    *step = it->nitems == 3 ? v[2] : ir_const_int(L->f, 1, IRT_WEAK_INT, it->line, it->col);
    if (!*start || !*step) return oom(L);
    return 0;
}

/* `return` in a kernel (not in a device function): kernels have no result;
 * say where results go instead. */
static int lower_kernel_return_error(lowerer *L, const stmt *s) {
    if (s->value)
        ERR(L, s->line, s->col, "a kernel returns values only after its parallel loop (return s, "
            "where s is a reduction such as s = 0.0 ... s += x[i]); inside the loop write the "
            "result into an output array passed as an argument (out[i] = value)");
    else
        ERR(L, s->line, s->col, "'return' is not allowed in a kernel outside its parallel loop");
    return -1;
}

/* Whether the launch body has a `return` or a `continue` of its own (not
 * inside a sequential loop): each ends the iteration, so the body is
 * lowered as an inlined block that they leave. */
static int launch_exits(stmt *const *body, int n, int in_loop) {
    for (int i = 0; i < n; i++) {
        const stmt *s = body[i];
        if (s->kind == ST_RETURN || (s->kind == ST_CONTINUE && !in_loop)) return 1;
        int loop = in_loop || s->kind == ST_FOR || s->kind == ST_WHILE;
        if (launch_exits(s->body, s->nbody, loop) || launch_exits(s->orelse, s->norelse, loop))
            return 1;
    }
    return 0;
}

/* A launch-level `return` or `continue`: leave this iteration. */
static int lower_launch_exit(lowerer *L, ir_block *b, const stmt *s) {
    ir_stmt *x = ir_stmt_new(L->f, IR_EXIT, s->line, s->col);
    if (!x) return oom(L);
    x->index = L->launch_exit;
    return push(L, b, x);
}

static int lower_stmt(lowerer *L, ir_block *b, const stmt *s) {
    const stmt **fields;
    int nfields, whole = struct_value_expand(L, s, &fields, &nfields); /* p = x[i] */
    if (whole < 0 || (whole && lower_declare_locals(L, (stmt *const *)fields, nfields))) return -1;
    for (int i = 0; whole && i < nfields; i++)
        if (lower_stmt(L, b, fields[i])) return -1;
    if (whole) return 0;
    whole = struct_return_expand(L, s, &fields, &nfields); /* return p */
    if (whole < 0 || (whole && lower_declare_locals(L, (stmt *const *)fields, nfields))) return -1;
    for (int i = 0; whole && i < nfields; i++)
        if (lower_stmt(L, b, fields[i])) return -1;
    if (whole) return 0;
    if (!(s = struct_rewrite_stmt(L, s))) return -1; /* x[i].f -> x.f[i] (structs.c) */
    switch (s->kind) {
    case ST_EXPR: {
        char path[256];
        if (s->value->kind == EX_CALL) {
            callee c = classify(L, s->value->a, path, sizeof path);
            if (c.kind == CALLEE_WORKGROUP && c.which == WG_BARRIER)
                return workgroup_barrier(L, b, s);
            if (c.kind == CALLEE_PRINT) return lower_print(L, b, s->value);
        }
        if (s->value->kind == EX_STR) return 0; /* a string as a comment, as in Python */
        /* A call for its effects (a device function storing to an array). */
        ir_stmt *x = ir_stmt_new(L->f, IR_EVAL, s->line, s->col);
        if (!x) return oom(L);
        if (!(x->value = lower_expr(L, s->value))) return -1;
        if (vec_is(x->value)) return vec_discard(L, b, x->value);
        return push(L, b, x);
    }
    case ST_ASSIGN:
        return lower_assign(L, b, s);
    case ST_AUGASSIGN:
        return lower_augassign(L, b, s);
    case ST_IF:
    case ST_WHILE: {
        ir_stmt *x = ir_stmt_new(L->f, s->kind == ST_IF ? IR_IF : IR_WHILE, s->line, s->col);
        if (!x) return oom(L);
        if (!(x->value = lower_expr(L, s->value))) return -1;
        if (s->kind == ST_WHILE) L->loop_depth++;
        int rc = lower_block(L, &x->body, s->body, s->nbody);
        if (s->kind == ST_WHILE) L->loop_depth--;
        if (rc || lower_block(L, &x->orelse, s->orelse, s->norelse)) return -1;
        return push(L, b, x);
    }
    case ST_FOR: {
        const expr *t = s->targets[0];
        char path[256];
        if (s->value->kind == EX_CALL &&
            classify(L, s->value->a, path, sizeof path).kind == CALLEE_STATIC) {
            /* for k in tack.static(it): unrolled over a constant range,
             * otherwise the loop over `it` itself. */
            if (s->value->nitems != 1 || s->value->nkw) {
                ERR(L, s->value->line, s->value->col, "tack.static() takes exactly one argument");
                return -1;
            }
            const expr *inner = s->value->items[0];
            if (inner->kind == EX_CALL &&
                classify(L, inner->a, path, sizeof path).kind == CALLEE_NDINDEX)
                return static_ndindex(L, b, s, inner);
            if (inner->kind == EX_NAME && !is_bound(L, inner->name))
                return static_table(L, b, s, inner);
            if (inner->kind == EX_CALL &&
                classify(L, inner->a, path, sizeof path).kind == CALLEE_RANGE) {
                int rc = static_for(L, b, s, inner);
                if (rc <= 0) return rc;
            }
            stmt plain = *s;
            plain.value = (expr *)inner;
            return lower_stmt(L, b, &plain);
        }
        if (s->value->kind == EX_CALL &&
            classify(L, s->value->a, path, sizeof path).kind == CALLEE_NDINDEX) {
            ERR(L, s->value->line, s->value->col,
                "tack.ndindex() can only be the iterable of the kernel's outermost loop");
            return -1;
        }
        /* for v in seq: over an array, a row, a tuple (views.c) */
        if (!(s->value->kind == EX_CALL &&
              classify(L, s->value->a, path, sizeof path).kind == CALLEE_RANGE) && !L->failed) {
            int rc = view_for(L, b, s);
            if (rc <= 0) return rc;
        }
        if (t->kind != EX_NAME) {
            ERR(L, t->line, t->col, "a sequential for loop needs one loop variable");
            return -1;
        }
        if (check_assignable_name(L, t)) return -1;
        ir_stmt *x = ir_stmt_new(L->f, IR_FOR, s->line, s->col);
        if (!x) return oom(L);
        x->index = local_index(L, t->name);
        if (x->index < 0) { /* the name holds a vector, record or array elsewhere */
            const binding *bound = scope_find(L->sc, t->name);
            ERR(L, t->line, t->col, "'%s' holds %s elsewhere; a name keeps one kind of value",
                t->name, bound && bound->kind == BIND_VECTOR ? "a vector"
                         : bound && bound->kind == BIND_STRUCT ? "a record" : "an array");
            return -1;
        }
        if (lower_range(L, s->value, &x->start, &x->stop, &x->step)) return -1;
        L->loop_depth++;
        int rc = lower_block(L, &x->body, s->body, s->nbody);
        L->loop_depth--;
        return rc ? -1 : push(L, b, x);
    }
    case ST_BREAK:
    case ST_CONTINUE: {
        if (!L->loop_depth && L->sc->inline_id < 0 && L->launch_exit >= 0 && s->kind == ST_CONTINUE)
            return lower_launch_exit(L, b, s);
        if (!L->loop_depth && L->sc->inline_id < 0 && s->kind == ST_BREAK) {
            ERR(L, s->line, s->col, "'break' cannot leave the parallel launch: its iterations run "
                "in parallel, in no particular order, so there is no 'rest' to skip; use "
                "'return' (or 'continue') to end this iteration, or a sequential loop inside it");
            return -1;
        }
        if (!L->loop_depth) {
            ERR(L, s->line, s->col, "'%s' outside a sequential loop (the kernel's outermost loop "
                "is the parallel launch)", s->kind == ST_BREAK ? "break" : "continue");
            return -1;
        }
        return push(L, b, ir_stmt_new(L->f, s->kind == ST_BREAK ? IR_BREAK : IR_CONTINUE,
                                      s->line, s->col));
    }
    case ST_PASS:
        return 0;
    case ST_RETURN:
        if (L->sc->inline_id >= 0) return lower_return(L, b, s);
        if (!s->value && L->launch_exit >= 0) return lower_launch_exit(L, b, s);
        return lower_kernel_return_error(L, s);
    }
    ERR(L, s->line, s->col, "unsupported statement");
    return -1;
}

int lower_block(lowerer *L, ir_block *out, stmt *const *body, int n) {
    for (int i = 0; i < n; i++)
        if (lower_stmt(L, out, body[i])) return -1;
    return 0;
}

static int grouped_over(lowerer *L, const expr *t, const expr *it, const expr *of);

/* The launch over stops[0] x ... x stops[n-1].  I (when given) is a tuple
 * of n names, one index each (struct-for); or one name: the index itself
 * for one dimension, else a vector whose components are the launch's index
 * locals, so that x[I] is seen as this iteration's own element exactly as
 * x[i, j] is. */
static int grouped_launch(lowerer *L, const expr *I, const expr *at, ir_expr **stops, int n) {
    ir_func *f = L->f;
    int names = I && I->kind == EX_TUPLE;
    if (names && I->nitems != n) {
        ERR(L, I->line, I->col, "a launch over %d dimensions takes one name (an index vector) or %d "
            "names (one index each), not %d", n, n, I->nitems);
        return -1;
    }
    binding *vec = I && !names && n > 1 ? (binding *)scope_find(L->sc, I->name) : NULL;
    if (vec && vec->kind != BIND_LOCAL) {
        ERR(L, I->line, I->col, "'%s' is the launch's index vector; give it a name of its own", I->name);
        return -1;
    }
    for (int d = 0; d < n; d++) {
        int local = names    ? local_index(L, I->items[d]->name)
                    : I && n == 1 ? local_index(L, I->name)
                                  : lower_temp(L, "grouped");
        if (local < 0) return -1;
        if (d == 0) {
            f->loop_var = local;
            f->stop = stops[d];
        } else {
            f->inner_var[d - 1] = local;
            f->inner_stop[d - 1] = stops[d];
            f->ninner = d;
        }
        if (vec) vec->comps[d] = local;
    }
    if (vec) {
        vec->kind = BIND_VECTOR;
        vec->width = n;
        vec->rows = 0;
        vec->cplx = 0;
    }
    f->start = ir_const_int(f, 0, IRT_WEAK_INT, at->line, at->col);
    f->step = ir_const_int(f, 1, IRT_WEAK_INT, at->line, at->col);
    return f->start && f->step ? 0 : oom(L);
}

/* `for I in tack.grouped(tack.ndindex(a, b))` (ti.grouped(ti.ndrange(...))). */
static int grouped_extents(lowerer *L, const expr *I, const expr *nd) {
    if (nd->nitems < 1 || nd->nitems > 3 || nd->nkw) {
        ERR(L, nd->line, nd->col, "tack.ndindex() takes 1 to 3 extents, got %d", nd->nitems);
        return -1;
    }
    ir_expr *stops[3];
    for (int d = 0; d < nd->nitems; d++)
        if (!(stops[d] = lower_expr(L, nd->items[d]))) return -1;
    return grouped_launch(L, I, nd, stops, nd->nitems);
}

/* `for I in tack.grouped(x)` (Taichi's ti.grouped): a launch over every
 * index of x, as tack.ndindex(x.shape[0], ...) with one index per array
 * dimension (vector components are not dimensions), bound to I as an
 * integer vector (a plain index for a 1-D x).  x's ndim is in the template
 * key (lower_row_params flags it), so each ndim lowers its own template. */
static int lower_grouped_launch(lowerer *L, const stmt *loop) {
    const expr *t = loop->targets[0], *it = loop->value;
    if (t->kind != EX_NAME) {
        ERR(L, t->line, t->col, "tack.grouped(x) binds one name (an index vector): "
            "'for I in tack.grouped(x):'");
        return -1;
    }
    if (check_assignable_name(L, t)) return -1;
    const expr *of = it->nitems == 1 && !it->nkw ? it->items[0] : NULL;
    return grouped_over(L, t, it, of);
}

/* Taichi's struct-for as the launch: `for i in x` (I of grouped(x) for an
 * n-D x) and `for i, j in x`, one name per dimension of the array x. */
static int lower_struct_for_launch(lowerer *L, const stmt *loop) {
    const expr *t = loop->targets[0], *x = loop->value;
    int n = t->kind == EX_TUPLE ? t->nitems : 1;
    for (int d = 0; d < n; d++) {
        const expr *name = t->kind == EX_TUPLE ? t->items[d] : t;
        if (name->kind != EX_NAME || check_assignable_name(L, name)) {
            if (!L->failed) ERR(L, name->line, name->col, "loop variables must be names");
            return -1;
        }
    }
    return grouped_over(L, t, x, x);
}

/* The launch over every index of `of` (an array parameter, or
 * tack.ndindex(...)), bound to I when I is given. */
static int grouped_over(lowerer *L, const expr *t, const expr *it, const expr *of) {
    char path[256];
    if (of && of->kind == EX_CALL && classify(L, of->a, path, sizeof path).kind == CALLEE_NDINDEX)
        return grouped_extents(L, t, of);
    if (L->failed) return -1;
    int p = of && of->kind == EX_NAME ? param_index(L, of->name) : -1;
    int ndim = p >= 0 && p < 64 && L->in->row_ndim ? L->in->row_ndim[p] : 0;
    if (p < 0 || !ndim) {
        ERR(L, it->line, it->col, "a launch over every index (tack.grouped(x), 'for i in x') takes "
            "one array argument of the kernel (an array of scalars or vectors) or "
            "tack.ndindex(...) of 1 to 3 extents");
        return -1;
    }
    int n = ndim - (vec_width_of(L, p) ? 1 : 0);
    if (n < 1 || n > 3) {
        ERR(L, it->line, it->col, "a launch over every index of '%s': it has %d dimensions; "
            "launches have 1 to 3", of->name, n);
        return -1;
    }
    ir_expr *stops[3];
    for (int d = 0; d < n; d++) {
        if (use_dim(L, p, d, it) || !(stops[d] = new_expr(L, IR_DIM, it))) return -1;
        stops[d]->index = p;
        stops[d]->dim = d;
        stops[d]->type = TACK_I64;
    }
    return grouped_launch(L, t, it, stops, n);
}


/* The outermost loop: `for i in range(...)` (1-D) or
 * `for i, j[, k] in tack.ndindex(e0, e1[, e2])`, whose outer dimension is
 * split across threads and inner ones run in order inside each iteration. */
static int lower_launch(lowerer *L, const stmt *loop) {
    ir_func *f = L->f;
    const expr *t = loop->targets[0], *it = loop->value;
    char path[256];
    callee_kind kind = it->kind == EX_CALL ? classify(L, it->a, path, sizeof path).kind : CALLEE_NONE;
    if (L->failed) return -1;
    if (kind != CALLEE_NDINDEX && kind != CALLEE_RANGE && it->kind == EX_CALL && is_grouped_path(path))
        return lower_grouped_launch(L, loop);
    if (it->kind == EX_NAME && param_index(L, it->name) >= 0) return lower_struct_for_launch(L, loop);
    if (kind != CALLEE_NDINDEX) {
        if (t->kind != EX_NAME) {
            ERR(L, t->line, t->col, "a range() launch takes one loop variable; use "
                "tack.ndindex(...) for 2-D and 3-D launches");
            return -1;
        }
        if (check_assignable_name(L, t)) return -1;
        f->loop_var = local_index(L, t->name);
        return lower_range(L, it, &f->start, &f->stop, &f->step);
    }
    if (it->nitems < 1 || it->nitems > 3) {
        ERR(L, it->line, it->col, "tack.ndindex() takes 1 to 3 extents, got %d", it->nitems);
        return -1;
    }
    int nvars = t->kind == EX_TUPLE ? t->nitems : 1;
    if (nvars != it->nitems) {
        ERR(L, t->line, t->col, "tack.ndindex() with %d extent%s needs %d loop variables, got %d",
            it->nitems, it->nitems == 1 ? "" : "s", it->nitems, nvars);
        return -1;
    }
    for (int d = 0; d < nvars; d++) {
        const expr *v = t->kind == EX_TUPLE ? t->items[d] : t;
        if (v->kind != EX_NAME) {
            ERR(L, v->line, v->col, "tack.ndindex() loop variables must be names");
            return -1;
        }
        if (check_assignable_name(L, v)) return -1;
        ir_expr *stop = lower_expr(L, it->items[d]);
        if (!stop) return -1;
        int local = local_index(L, v->name);
        if (d == 0) {
            f->loop_var = local;
            f->stop = stop;
        } else {
            f->inner_var[d - 1] = local;
            f->inner_stop[d - 1] = stop;
            f->ninner = d;
        }
    }
    f->start = ir_const_int(f, 0, IRT_WEAK_INT, it->line, it->col);
    f->step = ir_const_int(f, 1, IRT_WEAK_INT, it->line, it->col);
    return f->start && f->step ? 0 : oom(L);
}

tack_status lower_kernel(const lower_input *in, ir_func **out, tack_error *err) {
    const func_def *d = in->def;
    *out = NULL;
    ir_func *f = ir_func_new();
    if (!f) {
        err->status = TACK_ERR_NOMEM;
        snprintf(err->message, sizeof err->message, "out of memory");
        return TACK_ERR_NOMEM;
    }
    scope kernel_scope = {0};
    kernel_scope.def = d;
    kernel_scope.src = *in->src;
    kernel_scope.resolver_ctx = in->resolver_ctx;
    kernel_scope.inline_id = -1;
    kernel_scope.nresults = -1;
    lowerer L = {0};
    L.in = in;
    L.f = f;
    L.err = err;
    L.sc = &kernel_scope;
    arena_init(&L.scratch);
    f->name = arena_strdup(&f->mem, d->name);
    if (ir_source_add(f, in->src->text, in->src->filename, d->name, in->src->first_line) != 0) {
        oom(&L);
        goto fail;
    }
    f->filename = in->src->filename;
    f->first_line = in->src->first_line;
    f->source = in->src->text;
    if (d->nparams > TACK_MAX_PARAMS) {
        ERR(&L, d->line, d->col, "kernels take at most %d parameters", TACK_MAX_PARAMS);
        goto fail;
    }
    f->nparams = d->nparams;
    /* Room for the hidden parameters of template arguments too. */
    f->params = arena_alloc(&f->mem, TACK_MAX_PARAMS * sizeof *f->params);
    f->params_cap = f->params ? TACK_MAX_PARAMS : 0;
    if (!f->name || !f->params) {
        oom(&L);
        goto fail;
    }
    for (int i = 0; i < d->nparams; i++) {
        f->params[i].name = arena_strdup(&f->mem, d->params[i]);
        f->params[i].max_dim_read = -1;
        f->params[i].vec_width = in->vec_width ? in->vec_width[i] : 0;
        f->params[i].type = IRT_UNSET;
        f->params[i].line = d->param_lines ? d->param_lines[i] : d->line;
        f->params[i].col = d->param_cols ? d->param_cols[i] : d->col;
        for (int j = 0; j < i; j++)
            if (!strcmp(d->params[i], d->params[j])) {
                ERR(&L, f->params[i].line, f->params[i].col, "duplicate parameter '%s'",
                    d->params[i]);
                goto fail;
            }
        int is_template = in->args && in->args[i].kind == TACK_ARG_STRUCT;
        if (!is_template && scope_bind(&L, &kernel_scope, f->params[i].name, BIND_PARAM, i))
            goto fail;
    }
    if (template_params(&L, &kernel_scope)) goto fail;
    if (lower_declare_locals(&L, d->body, d->nbody)) goto fail;
    /* Statements before the loop bind names (reductions.c); after it,
     * only a `return` of reductions. */
    L.prologue_limit = 1 << 30;
    L.stage = L.reading_seg = in->stage;
    L.adjoint = in->adjoint;
    const stmt *loop;
    if (lower_statements_around(&L, &loop)) goto fail;
    L.in_range = 1;
    if (lower_launch(&L, loop)) goto fail;
    L.in_range = 0;
    L.launch_exit = -1;
    L.rng_state = -1;
    if (launch_exits(loop->body, loop->nbody, 0)) {
        ir_stmt *run = ir_stmt_new(f, IR_EVAL, loop->line, loop->col);
        ir_expr *x = ir_expr_new(f, IR_INLINE, loop->line, loop->col);
        ir_block *body = arena_alloc(&f->mem, sizeof *body);
        if (!run || !x || !body || ir_block_push(f, &f->body, run)) {
            oom(&L);
            goto fail;
        }
        x->body = body;
        x->index = -1;
        x->inline_id = L.launch_exit = f->ninlines++;
        run->value = x;
        if (lower_block(&L, body, loop->body, loop->nbody)) goto fail;
    } else if (lower_block(&L, &f->body, loop->body, loop->nbody)) {
        goto fail;
    }
    if (vec_check_none_left(&L, &f->body)) goto fail;
    if (scratch_fill_tables(&L)) goto fail;
    if (lower_random_streams(&L)) goto fail;
    if (lower_resolve_updates(&L)) goto fail;
    if (lower_check_collective(&L)) goto fail;
    if (ir_verify(f, "lower", 0, err)) goto fail;
    arena_free(&L.scratch);
    *out = f;
    return TACK_OK;
fail:
    arena_free(&L.scratch);
    ir_func_free(f);
    return err->status ? err->status : TACK_ERR_COMPILE;
}
