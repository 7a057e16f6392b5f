/* kernel_results.c - the type of a value a kernel returns.
 *
 *   return s / n, count - 1, m + math.log(s)
 *
 * top_statements.c turns each returned value that is not a reduction's
 * name into a hidden reduction '_tack_resultK' (a sum from zero, added to
 * once after every loop).  Its type must be known before any stage is
 * compiled (every stage carries it as a hidden parameter, and its dtype
 * is the runtime's), so it is read from the expression as Python would
 * type it: a float (an f64, which holds an f32 exactly) when any operand
 * is a float, '/' or a math function is involved; an integer (i64, or u64
 * where a u64 reduction is involved) otherwise.  A value whose kind hangs
 * on an argument's or array element's type at the call is a CompileError
 * that says to write float(...) or int(...).
 *
 * An expression of a whole vector, matrix or complex reduction (`return
 * c / n`, `return m * 0.5 + m0`, `return c // n` of a tack.vec3i) is that
 * value's shape: the hidden reduction is one per component, of the type
 * NumPy gives the expression's array: the reductions' component type, the
 * wider integer when two integer types meet, f64 when a float and an
 * integer type meet or '/' divides integers (true division); a scalar
 * operand is broadcast as in the kernel, a Python int or float weak as in
 * NumPy (c * 2 of an i32 vector stays i32, c * 0.5 is f64). */
#include <string.h>

#include "lower_internal.h"

enum { K_UNKNOWN, K_WEAK, K_INT, K_UINT, K_FLOAT, K_VEC };

typedef struct why {
    const expr *at; /* the operand whose type is not known */
    lower_result_shape vec; /* K_VEC: the whole value's shape */
    int clash;              /* two whole values of different shapes */
    const expr *vec_call;   /* a call other than abs/min/max on a whole value */
    int vec_fdiv;           /* '/' with a whole value on a side */
    int vec_float;          /* a float scalar combined with a whole value */
} why;

/* The component type where whole values of types a and b meet (NumPy's
 * promotion of their arrays). */
static ir_type meet(ir_type a, ir_type b) {
    if (a == b) return a;
    if (ir_type_is_float(a) || ir_type_is_float(b)) return TACK_F64;
    if ((a == TACK_U64) != (b == TACK_U64)) return TACK_F64; /* u64 with a signed type */
    return a == TACK_U64 ? TACK_U64 : TACK_I64;
}

static int join(int a, int b) {
    if (a == K_VEC || b == K_VEC) return a == K_UNKNOWN || b == K_UNKNOWN ? K_UNKNOWN : K_VEC;
    if (a == K_FLOAT || b == K_FLOAT) return K_FLOAT;
    if (a == K_UNKNOWN || b == K_UNKNOWN) return K_UNKNOWN;
    if (a == K_UINT || b == K_UINT) return K_UINT;
    if (a == K_INT || b == K_INT) return K_INT;
    return K_WEAK;
}

static int of_type(ir_type t) {
    if (ir_type_is_float(t) || t == IRT_WEAK_FLOAT) return K_FLOAT;
    if (t == TACK_U64) return K_UINT;
    return K_INT;
}

static const char *callee_name(const expr *c, const char **module) {
    *module = NULL;
    if (c->kind == EX_NAME) return c->name;
    if (c->kind == EX_ATTR && c->a->kind == EX_NAME) {
        *module = c->a->name;
        return c->name;
    }
    return NULL;
}

static int kind_of(lowerer *L, const expr *e, why *w, int depth);

static int kind_of_call(lowerer *L, const expr *e, why *w, int depth) {
    const char *mod, *name = callee_name(e->a, &mod);
    if (name && !mod) {
        if (!strcmp(name, "float")) return K_FLOAT;
        if (!strcmp(name, "int") || !strcmp(name, "bool") || !strcmp(name, "len")) return K_INT;
        if (!strcmp(name, "abs") || !strcmp(name, "min") || !strcmp(name, "max") ||
            !strcmp(name, "pow")) {
            int k = K_WEAK;
            for (int i = 0; i < e->nitems; i++) k = join(k, kind_of(L, e->items[i], w, depth));
            if (k == K_VEC && !strcmp(name, "abs") && w->vec.cplx) return K_FLOAT; /* |z| */
            return k;
        }
    }
    if (name && mod && (!strcmp(mod, "np") || !strcmp(mod, "numpy") || !strcmp(mod, "tack"))) {
        if (!strncmp(name, "float", 5)) return K_FLOAT;
        if (!strcmp(name, "uint64")) return K_UINT;
        if (!strncmp(name, "int", 3) || !strncmp(name, "uint", 4)) return K_INT;
    }
    if (name && mod && !strcmp(mod, "math")) {
        if (!strncmp(name, "is", 2)) return K_INT; /* isnan, isinf, isfinite */
        return K_FLOAT;
    }
    for (int i = 0; i < e->nitems; i++)
        if (kind_of(L, e->items[i], w, depth) == K_VEC && !w->vec_call) w->vec_call = e;
    if (!w->at) w->at = e;
    return K_UNKNOWN;
}

static int kind_of(lowerer *L, const expr *e, why *w, int depth) {
    if (depth > 64) { /* a prologue name's value, read again: no cycles, but bounded */
        if (!w->at) w->at = e;
        return K_UNKNOWN;
    }
    switch (e->kind) {
    case EX_INT: case EX_BOOL: return K_WEAK;
    case EX_FLOAT: return K_FLOAT;
    case EX_COMPARE: return K_INT;
    case EX_NAME: {
        const binding *b = scope_find(L->sc, e->name);
        if (b && (b->kind == BIND_REDUCTION || b->kind == BIND_FINISHED) && b->width) {
            /* a whole vector, matrix or complex reduction */
            ir_type t = L->f->reductions[b->comps[0]].type;
            if (t == IRT_WEAK_FLOAT) t = TACK_F64; /* 0j's parts: a Python complex's */
            lower_result_shape sh = {b->width, b->rows, b->cplx, t};
            if (w->vec.width && (w->vec.width != sh.width || w->vec.rows != sh.rows ||
                                 w->vec.cplx != sh.cplx)) {
                w->clash = 1;
                break;
            }
            if (w->vec.width) sh.type = meet(w->vec.type, t);
            w->vec = sh;
            return K_VEC;
        }
        if (b && (b->kind == BIND_REDUCTION || b->kind == BIND_FINISHED))
            return of_type(L->f->reductions[b->index].type);
        if (b && b->kind == BIND_PROLOGUE) return kind_of(L, b->value, w, depth + 1);
        if (!b) {
            tack_name n;
            if (!lower_resolve_name(L->in->resolver, L->in->resolver_ctx, e->name, &n)) {
                if (n.kind == TACK_NAME_INT || n.kind == TACK_NAME_BOOL) return K_WEAK;
                if (n.kind == TACK_NAME_FLOAT) return K_FLOAT;
            }
        }
        break;
    }
    case EX_UNARY:
        if (!strcmp(e->op, "not")) return K_INT;
        return kind_of(L, e->a, w, depth);
    case EX_BINOP: {
        int a = kind_of(L, e->a, w, depth), b = kind_of(L, e->b, w, depth);
        if (!strcmp(e->op, "/") && a != K_VEC && b != K_VEC) return K_FLOAT;
        if (a == K_VEC || b == K_VEC) {
            if (!strcmp(e->op, "/")) w->vec_fdiv = 1;
            if (a == K_FLOAT || b == K_FLOAT) w->vec_float = 1;
        }
        return join(a, b);
    }
    case EX_BOOLOP: {
        int k = K_WEAK;
        for (int i = 0; i < e->nitems; i++) k = join(k, kind_of(L, e->items[i], w, depth));
        return k;
    }
    case EX_IFEXP: return join(kind_of(L, e->b, w, depth), kind_of(L, e->c, w, depth));
    case EX_CALL: return kind_of_call(L, e, w, depth);
    case EX_SUBSCRIPT: /* x.shape[k] */
        if (e->a->kind == EX_ATTR && !strcmp(e->a->name, "shape")) return K_INT;
        /* c[0] of a vector reduction: */
        /* fall through */
    case EX_ATTR:
        if (e->kind == EX_ATTR && e->a->kind == EX_NAME && !strcmp(e->a->name, "math"))
            return K_FLOAT; /* pi, inf... */
        if (e->a->kind == EX_NAME) { /* c[k], c.x, z.real of a vector or complex reduction */
            const binding *b = scope_find(L->sc, e->a->name);
            if (b && (b->kind == BIND_REDUCTION || b->kind == BIND_FINISHED) && b->width)
                return of_type(L->f->reductions[b->comps[0]].type);
        }
        break;
    default: break;
    }
    if (!w->at) w->at = e;
    return K_UNKNOWN;
}

int lower_is_result_name(const char *name) { return !strncmp(name, "_tack_result", 12); }

int lower_result_type(lowerer *L, const expr *value, ir_type *type, double *start,
                      lower_result_shape *shape) {
    why w = {NULL};
    int k = kind_of(L, value, &w, 0);
    memset(shape, 0, sizeof *shape);
    if ((k == K_UNKNOWN && w.vec_call) || w.clash) {
        const expr *at = w.vec_call ? w.vec_call : value;
        ERR(L, at->line, at->col, "a kernel returns a whole complex number, vector or matrix "
            "as a reduction's name or as +, -, *, / of such reductions (of one shape) and "
            "scalars (return c / n); %s: return c and finish on the host, or store the value "
            "into an output array passed as an argument (out[0] = value)",
            w.vec_call ? "this call on one is not supported there" : "these differ in shape");
        return -1;
    }
    if (k == K_VEC) {
        /* NumPy: an integer array divided ('/') or combined with a float is f64 */
        if (!ir_type_is_float(w.vec.type) && (w.vec_fdiv || w.vec_float)) w.vec.type = TACK_F64;
        *shape = w.vec;
        *type = w.vec.type;
        *start = ir_type_is_float(w.vec.type) ? -0.0 : 0.0;
        return 0;
    }
    if (k == K_UNKNOWN) {
        const expr *at = w.at ? w.at : value;
        const char *name = at->kind == EX_NAME ? at->name : NULL;
        const binding *b = name ? scope_find(L->sc, name) : NULL;
        int array = b && b->kind != BIND_PARAM;
        for (int k = 0; name && k < L->in->def->nparams; k++)
            if (!strcmp(L->in->def->params[k], name) && L->in->args &&
                L->in->args[k].kind != TACK_ARG_INT && L->in->args[k].kind != TACK_ARG_UINT &&
                L->in->args[k].kind != TACK_ARG_FLOAT && L->in->args[k].kind != TACK_ARG_BOOL)
                array = 1;
        if (array) {
            /* an array, a row, a vector: not a number */
            ERR(L, at->line, at->col, "a kernel returns numbers: its reductions and "
                "expressions of them and of scalars ('%s' is not one); write the result into "
                "an output array passed as an argument (out[i] = value)", name);
            return -1;
        }
        ERR(L, at->line, at->col, "kernel '%s' returns a value whose type depends on %s%s%s, "
            "known only at the call: write float(...) or int(...) around it in the 'return' "
            "(a kernel returns Python floats and ints)", L->in->def->name,
            name ? "'" : "this operand", name ? name : "", name ? "'" : "");
        return -1;
    }
    /* A float result starts from -0.0, which adding leaves every value as it is. */
    *type = k == K_FLOAT ? TACK_F64 : k == K_UINT ? TACK_U64 : TACK_I64;
    *start = k == K_FLOAT ? -0.0 : 0.0;
    return 0;
}
