/* complex.c - complex numbers (complex(a, b), 1j, z.real, z.imag,
 * z.conjugate(), abs(z), arithmetic, cmath.*), scalarized while lowering.
 * A complex value is a 2-component IR_VECTOR marked `cplx`: its real and
 * imaginary parts live in two scalar locals computed by a setup block, as
 * vectors do (vectors.c).  Nothing after lowering sees a complex number.
 * The parts' types come from inference: complex(a, b) is complex128 (as in
 * Python), a 1j literal's parts are weak floats, so complex64 * 1j stays
 * complex64 and mixing with f64 widens, as NumPy promotes. */
#include <math.h>
#include <string.h>

#include "lower_internal.h"

int cx_is(const ir_expr *e) { return e && e->kind == IR_VECTOR && e->cplx; }

static ir_expr *R(lowerer *L, int local, const expr *at) { return lower_read_local(L, local, at); }

static ir_expr *K(lowerer *L, double v, const expr *at) {
    ir_expr *x = ir_const_float(L->f, v, IRT_WEAK_FLOAT, at->line, at->col);
    if (!x) lower_oom(L);
    return x;
}

static ir_expr *NEG(lowerer *L, ir_expr *a, const expr *at) {
    if (!a) return NULL;
    ir_expr *x = ir_expr_new(L->f, IR_UNOP, at->line, at->col);
    if (!x) {
        lower_oom(L);
        return NULL;
    }
    x->op = OP_NEG;
    x->a = a;
    return x;
}

static ir_expr *CALL(lowerer *L, ir_intrinsic fn, ir_expr *a, ir_expr *b, const expr *at) {
    if (!a || (ir_intrinsic_nargs(fn) == 2 && !b)) return NULL;
    ir_expr *x = ir_expr_new(L->f, IR_CALL, at->line, at->col);
    ir_expr **args = arena_alloc(&L->f->mem, 2 * sizeof *args);
    if (!x || !args) {
        lower_oom(L);
        return NULL;
    }
    args[0] = a;
    args[1] = b;
    x->fn = fn;
    x->args = args;
    x->nargs = ir_intrinsic_nargs(fn);
    return x;
}

static ir_expr *LOGIC(lowerer *L, ir_op op, ir_expr *a, ir_expr *b, const expr *at) {
    if (!a || !b) return NULL;
    ir_expr *x = ir_expr_new(L->f, IR_ANDOR, at->line, at->col);
    if (!x) {
        lower_oom(L);
        return NULL;
    }
    x->op = op;
    x->a = a;
    x->b = b;
    return x;
}

/* A complex value with an empty setup; the caller fills the parts. */
static ir_expr *cx_new(lowerer *L, const expr *at) {
    ir_expr *z = vec_new(L, 2, at);
    if (z) z->cplx = 1;
    return z;
}

static int re_of(const ir_expr *z) { return z->args[0]->index; }
static int im_of(const ir_expr *z) { return z->args[1]->index; }

/* A local holding `value`, set in b. */
static int temp(lowerer *L, ir_block *b, ir_expr *value, const expr *at) {
    int t = lower_temp(L, "c");
    if (t < 0 || lower_set_local(L, b, t, value, at)) return -1;
    return t;
}

/* Runs operand v once in out's setup: its parts' locals (a real operand's
 * imaginary part is -1, zero). */
static int operand(lowerer *L, ir_expr *out, ir_expr *v, int *re, int *im, const expr *at) {
    if (cx_is(v)) {
        if (vec_eval(L, out->body, v)) return -1;
        *re = re_of(v);
        *im = im_of(v);
        return 0;
    }
    if (vec_is(v)) {
        ERR(L, at->line, at->col, "a complex number and a vector cannot be combined");
        return -1;
    }
    *im = -1;
    return (*re = temp(L, out->body, v, at)) < 0 ? -1 : 0;
}

static ir_expr *part(lowerer *L, int local, const expr *at) {
    return local < 0 ? K(L, 0.0, at) : R(L, local, at);
}

static ir_expr *finish(lowerer *L, ir_expr *z, ir_expr *re, ir_expr *im, const expr *at) {
    if (!re || !im || lower_set_local(L, z->body, re_of(z), re, at) ||
        lower_set_local(L, z->body, im_of(z), im, at))
        return NULL;
    return z;
}

ir_expr *cx_make(lowerer *L, ir_expr *re, ir_expr *im, const expr *at) {
    if (!re || !im) return NULL;
    if (vec_is(re) || vec_is(im)) {
        ERR(L, at->line, at->col, "complex() takes real scalars");
        return NULL;
    }
    ir_expr *z = cx_new(L, at);
    return z ? finish(L, z, re, im, at) : NULL;
}

/* a / b by Smith's method, which avoids overflow in |b|^2 (NumPy's too). */
static ir_expr *divide(lowerer *L, ir_expr *z, int ar, int ai, int br, int bi, const expr *at) {
    if (bi < 0) /* a real divisor */
        return finish(L, z, lower_bin(L, OP_DIV, part(L, ar, at), R(L, br, at), at),
                      lower_bin(L, OP_DIV, part(L, ai, at), R(L, br, at), at), at);
    int big = temp(L, z->body, lower_bin(L, OP_GE, CALL(L, INTR_FABS, R(L, br, at), NULL, at),
                                   CALL(L, INTR_FABS, R(L, bi, at), NULL, at), at), at);
    if (big < 0) return NULL;
    /* |br| >= |bi|: r = bi/br, d = br + bi r; else r = br/bi, d = bi + br r */
    int r = temp(L, z->body, lower_sel(L, R(L, big, at), lower_bin(L, OP_DIV, R(L, bi, at), R(L, br, at), at),
                                 lower_bin(L, OP_DIV, R(L, br, at), R(L, bi, at), at), at), at);
    if (r < 0) return NULL;
    int d = temp(L, z->body,
                 lower_sel(L, R(L, big, at), lower_bin(L, OP_ADD, R(L, br, at), lower_bin(L, OP_MUL, R(L, bi, at), R(L, r, at), at), at),
                     lower_bin(L, OP_ADD, R(L, bi, at), lower_bin(L, OP_MUL, R(L, br, at), R(L, r, at), at), at), at), at);
    if (d < 0) return NULL;
    ir_expr *re = lower_sel(L, R(L, big, at),
                      lower_bin(L, OP_ADD, part(L, ar, at), lower_bin(L, OP_MUL, part(L, ai, at), R(L, r, at), at), at),
                      lower_bin(L, OP_ADD, lower_bin(L, OP_MUL, part(L, ar, at), R(L, r, at), at), part(L, ai, at), at), at);
    ir_expr *im = lower_sel(L, R(L, big, at),
                      lower_bin(L, OP_SUB, part(L, ai, at), lower_bin(L, OP_MUL, part(L, ar, at), R(L, r, at), at), at),
                      lower_bin(L, OP_SUB, lower_bin(L, OP_MUL, part(L, ai, at), R(L, r, at), at), part(L, ar, at), at), at);
    return finish(L, z, lower_bin(L, OP_DIV, re, R(L, d, at), at), lower_bin(L, OP_DIV, im, R(L, d, at), at), at);
}

static ir_expr *multiply(lowerer *L, ir_expr *z, int ar, int ai, int br, int bi, const expr *at) {
    if (ai < 0 || bi < 0) { /* by a real: scale both parts (no 0*inf terms) */
        int s = ai < 0 ? ar : br, cr = ai < 0 ? br : ar, ci = ai < 0 ? bi : ai;
        return finish(L, z, lower_bin(L, OP_MUL, R(L, cr, at), R(L, s, at), at),
                      lower_bin(L, OP_MUL, part(L, ci, at), R(L, s, at), at), at);
    }
    return finish(L, z,
                  lower_bin(L, OP_SUB, lower_bin(L, OP_MUL, R(L, ar, at), R(L, br, at), at),
                      lower_bin(L, OP_MUL, R(L, ai, at), R(L, bi, at), at), at),
                  lower_bin(L, OP_ADD, lower_bin(L, OP_MUL, R(L, ar, at), R(L, bi, at), at),
                      lower_bin(L, OP_MUL, R(L, ai, at), R(L, br, at), at), at),
                  at);
}

static ir_expr *cx_log_exp(lowerer *L, int log, ir_expr *a, const expr *at);

ir_expr *cx_binop(lowerer *L, ir_op op, ir_expr *a, ir_expr *b, const expr *at) {
    if (!a || !b) return NULL;
    if (op >= OP_LT && op != OP_EQ && op != OP_NE) {
        ERR(L, at->line, at->col, "complex numbers are not ordered: only == and != compare them");
        return NULL;
    }
    if (op == OP_POW) {
        /* z ** k for a small integer literal k: repeated products, as
         * exactly as NumPy's; any other power is exp(b log a). */
        if (!cx_is(b) && b->kind == IR_CONST && ir_type_is_int(b->type) && b->i >= 1 && b->i <= 16) {
            ir_expr *acc;
            int k = (int)b->i;
            ir_expr *z = cx_new(L, at);
            if (!z) return NULL;
            int ar, ai;
            if (operand(L, z, a, &ar, &ai, at)) return NULL;
            ir_expr *base = cx_make(L, R(L, ar, at), part(L, ai, at), at);
            acc = base;
            for (int i = 1; i < k && acc; i++) acc = cx_binop(L, OP_MUL, acc, cx_make(L, R(L, ar, at), part(L, ai, at), at), at);
            if (!acc) return NULL;
            int rr, ri;
            if (operand(L, z, acc, &rr, &ri, at)) return NULL;
            return finish(L, z, R(L, rr, at), R(L, ri, at), at);
        }
        return cx_log_exp(L, 0, cx_binop(L, OP_MUL, b, cx_log_exp(L, 1, a, at), at), at);
    }
    if (op != OP_ADD && op != OP_SUB && op != OP_MUL && op != OP_DIV && op != OP_EQ && op != OP_NE) {
        ERR(L, at->line, at->col, "this operator does not apply to complex numbers");
        return NULL;
    }
    ir_expr *z = cx_new(L, at);
    if (!z) return NULL;
    int ar, ai, br, bi;
    if (operand(L, z, a, &ar, &ai, at) || operand(L, z, b, &br, &bi, at)) return NULL;
    switch (op) {
    case OP_ADD:
    case OP_SUB: {
        ir_expr *im = ai < 0 && bi < 0 ? K(L, 0.0, at)
                      : bi < 0         ? R(L, ai, at)
                      : ai < 0         ? (op == OP_SUB ? NEG(L, R(L, bi, at), at) : R(L, bi, at))
                                       : lower_bin(L, op, R(L, ai, at), R(L, bi, at), at);
        return finish(L, z, lower_bin(L, op, R(L, ar, at), R(L, br, at), at), im, at);
    }
    case OP_MUL: return multiply(L, z, ar, ai, br, bi, at);
    case OP_DIV:
        if (ai < 0 && bi >= 0) {
            /* real / complex: give the real numerator a zero part */
            ai = temp(L, z->body, lower_bin(L, OP_MUL, R(L, ar, at), K(L, 0.0, at), at), at);
            if (ai < 0) return NULL;
        }
        return divide(L, z, ar, ai, br, bi, at);
    default: {
        /* == and !=: a scalar of the result's setup, read like a part */
        ir_expr *eq = LOGIC(L, OP_AND, lower_bin(L, OP_EQ, R(L, ar, at), R(L, br, at), at),
                            lower_bin(L, OP_EQ, part(L, ai, at), part(L, bi, at), at), at);
        if (op == OP_NE) {
            ir_expr *x = ir_expr_new(L->f, IR_UNOP, at->line, at->col);
            if (!x) return NULL;
            x->op = OP_NOT;
            x->a = eq;
            eq = x;
        }
        if (!eq || lower_set_local(L, z->body, re_of(z), eq, at)) return NULL;
        return vec_component_at(L, z, 0, at);
    }
    }
}

ir_expr *cx_unop(lowerer *L, ir_op op, ir_expr *a, const expr *at) {
    if (op != OP_NEG && op != OP_POS) {
        ERR(L, at->line, at->col, "this operator does not apply to complex numbers");
        return NULL;
    }
    ir_expr *z = cx_new(L, at);
    int ar, ai;
    if (!z || operand(L, z, a, &ar, &ai, at)) return NULL;
    if (op == OP_POS) return finish(L, z, R(L, ar, at), R(L, ai, at), at);
    return finish(L, z, NEG(L, R(L, ar, at), at), NEG(L, R(L, ai, at), at), at);
}

/* z.real, z.imag (also of a real scalar, as Python and NumPy allow). */
ir_expr *cx_part(lowerer *L, ir_expr *v, int imag, const expr *at) {
    if (!v) return NULL;
    if (cx_is(v)) return vec_component_at(L, v, imag, at);
    if (vec_is(v)) {
        ERR(L, at->line, at->col, "'.%s' needs a complex number or a real scalar, not a vector",
            imag ? "imag" : "real");
        return NULL;
    }
    if (!imag) return v;
    return lower_bin(L, OP_MUL, v, K(L, 0.0, at), at); /* typed like v; NaN stays NaN */
}

ir_expr *cx_conj(lowerer *L, ir_expr *a, const expr *at) {
    if (!a) return NULL;
    if (!cx_is(a)) return cx_part(L, a, 0, at);
    ir_expr *z = cx_new(L, at);
    int ar, ai;
    if (!z || operand(L, z, a, &ar, &ai, at)) return NULL;
    return finish(L, z, R(L, ar, at), NEG(L, R(L, ai, at), at), at);
}

/* exp(a) (log 0) or log(a) (log 1). */
static ir_expr *cx_log_exp(lowerer *L, int log, ir_expr *a, const expr *at) {
    if (!a) return NULL;
    ir_expr *z = cx_new(L, at);
    int x, y;
    if (!z || operand(L, z, a, &x, &y, at)) return NULL;
    if (log)
        return finish(L, z, CALL(L, INTR_LOG, CALL(L, INTR_HYPOT, R(L, x, at), part(L, y, at), at), NULL, at),
                      CALL(L, INTR_ATAN2, part(L, y, at), R(L, x, at), at), at);
    if (y < 0) return finish(L, z, CALL(L, INTR_EXP, R(L, x, at), NULL, at), K(L, 0.0, at), at);
    int e = temp(L, z->body, CALL(L, INTR_EXP, R(L, x, at), NULL, at), at);
    if (e < 0) return NULL;
    return finish(L, z, lower_bin(L, OP_MUL, R(L, e, at), CALL(L, INTR_COS, R(L, y, at), NULL, at), at),
                  lower_bin(L, OP_MUL, R(L, e, at), CALL(L, INTR_SIN, R(L, y, at), NULL, at), at), at);
}

static ir_expr *cx_sqrt(lowerer *L, ir_expr *a, const expr *at) {
    ir_expr *z = cx_new(L, at);
    int x, y;
    if (!z || operand(L, z, a, &x, &y, at)) return NULL;
    if (y < 0 && (y = temp(L, z->body, lower_bin(L, OP_MUL, R(L, x, at), K(L, 0.0, at), at), at)) < 0)
        return NULL;
    /* t = sqrt((|x| + |z|) / 2); x >= 0: (t, y / 2t), else (|y| / 2t, t with y's sign) */
    int t = temp(L, z->body,
                 CALL(L, INTR_SQRT,
                      lower_bin(L, OP_MUL, K(L, 0.5, at),
                          lower_bin(L, OP_ADD, CALL(L, INTR_FABS, R(L, x, at), NULL, at),
                              CALL(L, INTR_HYPOT, R(L, x, at), R(L, y, at), at), at), at),
                      NULL, at), at);
    if (t < 0) return NULL;
    int zero = temp(L, z->body, LOGIC(L, OP_AND, lower_bin(L, OP_EQ, R(L, x, at), K(L, 0.0, at), at),
                                      lower_bin(L, OP_EQ, R(L, y, at), K(L, 0.0, at), at), at), at);
    int pos = temp(L, z->body, lower_bin(L, OP_GE, R(L, x, at), K(L, 0.0, at), at), at);
    if (zero < 0 || pos < 0) return NULL;
    ir_expr *q = lower_bin(L, OP_DIV, R(L, y, at), lower_bin(L, OP_MUL, K(L, 2.0, at), R(L, t, at), at), at);
    ir_expr *re = lower_sel(L, R(L, zero, at), K(L, 0.0, at),
                      lower_sel(L, R(L, pos, at), R(L, t, at), CALL(L, INTR_FABS, q, NULL, at), at), at);
    ir_expr *q2 = lower_bin(L, OP_DIV, R(L, y, at), lower_bin(L, OP_MUL, K(L, 2.0, at), R(L, t, at), at), at);
    ir_expr *im = lower_sel(L, R(L, zero, at), R(L, y, at),
                      lower_sel(L, R(L, pos, at), q2, CALL(L, INTR_COPYSIGN, R(L, t, at), R(L, y, at), at), at),
                      at);
    return finish(L, z, re, im, at);
}

/* sin cos sinh cosh of x + iy; tan and tanh as their quotients. */
enum { CX_SIN, CX_COS, CX_SINH, CX_COSH, CX_TAN, CX_TANH };

static ir_expr *cx_trig(lowerer *L, int which, ir_expr *a, const expr *at) {
    ir_expr *z = cx_new(L, at);
    int x, y;
    if (!z || operand(L, z, a, &x, &y, at)) return NULL;
    ir_expr *Y = part(L, y, at);
    ir_expr *Y2 = part(L, y, at);
    ir_expr *re, *im;
    switch (which) {
    case CX_SIN:
        re = lower_bin(L, OP_MUL, CALL(L, INTR_SIN, R(L, x, at), NULL, at), CALL(L, INTR_COSH, Y, NULL, at), at);
        im = lower_bin(L, OP_MUL, CALL(L, INTR_COS, R(L, x, at), NULL, at), CALL(L, INTR_SINH, Y2, NULL, at), at);
        break;
    case CX_COS:
        re = lower_bin(L, OP_MUL, CALL(L, INTR_COS, R(L, x, at), NULL, at), CALL(L, INTR_COSH, Y, NULL, at), at);
        im = NEG(L, lower_bin(L, OP_MUL, CALL(L, INTR_SIN, R(L, x, at), NULL, at), CALL(L, INTR_SINH, Y2, NULL, at), at), at);
        break;
    case CX_SINH:
        re = lower_bin(L, OP_MUL, CALL(L, INTR_SINH, R(L, x, at), NULL, at), CALL(L, INTR_COS, Y, NULL, at), at);
        im = lower_bin(L, OP_MUL, CALL(L, INTR_COSH, R(L, x, at), NULL, at), CALL(L, INTR_SIN, Y2, NULL, at), at);
        break;
    default:
        re = lower_bin(L, OP_MUL, CALL(L, INTR_COSH, R(L, x, at), NULL, at), CALL(L, INTR_COS, Y, NULL, at), at);
        im = lower_bin(L, OP_MUL, CALL(L, INTR_SINH, R(L, x, at), NULL, at), CALL(L, INTR_SIN, Y2, NULL, at), at);
        break;
    }
    return finish(L, z, re, im, at);
}

/* tan z = sin z / cos z, tanh z = sinh z / cosh z, with z evaluated once. */
static ir_expr *cx_quotient(lowerer *L, int num, int den, ir_expr *a, const expr *at) {
    ir_expr *z = cx_new(L, at);
    int x, y;
    if (!z || operand(L, z, a, &x, &y, at)) return NULL;
    ir_expr *n = cx_trig(L, num, cx_make(L, R(L, x, at), part(L, y, at), at), at);
    ir_expr *d = cx_trig(L, den, cx_make(L, R(L, x, at), part(L, y, at), at), at);
    ir_expr *q = cx_binop(L, OP_DIV, n, d, at);
    int qr, qi;
    if (!q || operand(L, z, q, &qr, &qi, at)) return NULL;
    return finish(L, z, R(L, qr, at), R(L, qi, at), at);
}

/* A scalar result of one complex operand: abs, phase, isnan, isinf, isfinite. */
static ir_expr *cx_scalar(lowerer *L, const char *fn, ir_expr *a, const expr *at) {
    ir_expr *z = cx_new(L, at);
    int x, y;
    if (!z || operand(L, z, a, &x, &y, at)) return NULL;
    ir_expr *r;
    if (!strcmp(fn, "abs")) r = CALL(L, INTR_HYPOT, R(L, x, at), part(L, y, at), at);
    else if (!strcmp(fn, "phase")) r = CALL(L, INTR_ATAN2, part(L, y, at), R(L, x, at), at);
    else if (!strcmp(fn, "isnan"))
        r = LOGIC(L, OP_OR, CALL(L, INTR_ISNAN, R(L, x, at), NULL, at), CALL(L, INTR_ISNAN, part(L, y, at), NULL, at), at);
    else if (!strcmp(fn, "isinf"))
        r = LOGIC(L, OP_OR, CALL(L, INTR_ISINF, R(L, x, at), NULL, at), CALL(L, INTR_ISINF, part(L, y, at), NULL, at), at);
    else
        r = LOGIC(L, OP_AND, CALL(L, INTR_ISFINITE, R(L, x, at), NULL, at),
                  CALL(L, INTR_ISFINITE, part(L, y, at), NULL, at), at);
    if (!r || lower_set_local(L, z->body, re_of(z), r, at)) return NULL;
    return vec_component_at(L, z, 0, at);
}

static ir_expr *one_arg(lowerer *L, const expr *e, const char *name) {
    if (e->nitems != 1) {
        ERR(L, e->line, e->col, "%s() takes exactly one argument", name);
        return NULL;
    }
    return lower_expr(L, e->items[0]);
}

/* cmath.<leaf>(...), numpy's complex functions: 1 and *out when `path`
 * names one, else 0. */
ir_type cx_dtype_named(const char *path) {
    static const struct { const char *path; ir_type part; } names[] = {
        {"tack.complex64", TACK_F32},    {"numpy.complex64", TACK_F32},
        {"numpy.csingle", TACK_F32},     {"tack.complex128", TACK_F64},
        {"numpy.complex128", TACK_F64},  {"numpy.cdouble", TACK_F64},
        {"numpy.complex_", TACK_F64},    {"complex", TACK_F64},
        {NULL, 0}};
    for (int i = 0; names[i].path; i++)
        if (!strcmp(path, names[i].path)) return names[i].part;
    return -1;
}

int cx_call(lowerer *L, const expr *e, const char *path, ir_expr **out) {
    *out = NULL;
    const char *leaf = strrchr(path, '.');
    leaf = leaf ? leaf + 1 : path;
    if (!strcmp(path, "complex")) {
        if (e->nitems > 2) {
            ERR(L, e->line, e->col, "complex() takes at most two arguments");
            return 1;
        }
        ir_expr *p[2];
        for (int i = 0; i < 2; i++) {
            p[i] = i < e->nitems ? lower_expr(L, e->items[i]) : K(L, 0.0, e);
            if (!p[i]) return 1;
            if (cx_is(p[i])) {
                ERR(L, e->line, e->col, "complex() takes real parts here");
                return 1;
            }
            ir_expr *c = ir_expr_new(L->f, IR_CAST, e->line, e->col);
            if (!c) return lower_oom(L), 1;
            c->a = p[i];
            c->type = TACK_F64; /* Python's complex is complex128 */
            p[i] = c;
        }
        *out = cx_make(L, p[0], p[1], e);
        return 1;
    }
    int is_numpy = !strncmp(path, "numpy.", 6);
    if (is_numpy && (!strcmp(leaf, "real") || !strcmp(leaf, "imag"))) {
        *out = cx_part(L, one_arg(L, e, path), leaf[0] == 'i', e);
        return 1;
    }
    if (is_numpy && !strcmp(leaf, "angle")) { /* np.angle(z): cmath.phase */
        ir_expr *a = one_arg(L, e, path);
        *out = a ? cx_scalar(L, "phase", a, e) : NULL;
        return 1;
    }
    if (is_numpy && (!strcmp(leaf, "conj") || !strcmp(leaf, "conjugate"))) {
        *out = cx_conj(L, one_arg(L, e, path), e);
        return 1;
    }
    if (strncmp(path, "cmath.", 6)) return 0;
    static const char *const unary[] = {"exp", "log", "sqrt", "sin", "cos", "tan", "sinh",
                                        "cosh", "tanh", "phase", "isnan", "isinf", "isfinite",
                                        "log10", "asin", "acos", "atan", "asinh", "acosh",
                                        "atanh", NULL};
    if (!strcmp(leaf, "rect")) {
        if (e->nitems != 2) {
            ERR(L, e->line, e->col, "cmath.rect() takes two arguments, r and phi");
            return 1;
        }
        ir_expr *r = lower_expr(L, e->items[0]), *phi = r ? lower_expr(L, e->items[1]) : NULL;
        if (!phi) return 1;
        ir_expr *z = cx_new(L, e);
        int rl, pl;
        if (!z || (rl = temp(L, z->body, r, e)) < 0 || (pl = temp(L, z->body, phi, e)) < 0) return 1;
        *out = finish(L, z, lower_bin(L, OP_MUL, R(L, rl, e), CALL(L, INTR_COS, R(L, pl, e), NULL, e), e),
                      lower_bin(L, OP_MUL, R(L, rl, e), CALL(L, INTR_SIN, R(L, pl, e), NULL, e), e), e);
        return 1;
    }
    int k = 0;
    while (unary[k] && strcmp(unary[k], leaf)) k++;
    if (!unary[k]) {
        ERR(L, e->line, e->col, "'%s' is not supported in kernels (cmath functions here: exp log "
            "log10 sqrt sin cos tan sinh cosh tanh asin acos atan asinh acosh atanh phase polar "
            "rect isnan isinf isfinite)", path);
        return 1;
    }
    ir_expr *a = one_arg(L, e, path);
    if (!a) return 1;
    *out = cx_apply(L, leaf, a, e);
    return 1;
}

/* The inverse functions, from log and sqrt on the principal branches
 * Python's cmath uses (its cuts: asin/acos on the real axis beyond +-1,
 * asinh/atan on the imaginary axis beyond +-i, acosh on the real axis below
 * 1, atanh on the real axis beyond +-1).  asinh(z) = log(z + sqrt(z^2 + 1))
 * is computed on the right half plane and mirrored (asinh is odd), so the
 * sum never cancels; acosh(z) = log(z + sqrt(z + 1) sqrt(z - 1)) (Kahan's
 * form, right on both sides of its cut); atanh(z) = (log(1 + z) - log(1 -
 * z)) / 2; asin, atan by i asin(z) = asinh(iz), i atan(z) = atanh(iz); acos
 * = pi/2 - asin. */
static ir_expr *cx_times_i(lowerer *L, ir_expr *a, int sign, const expr *at) {
    /* sign * i * a, a evaluated once */
    ir_expr *z = cx_new(L, at);
    int x, y;
    if (!z || operand(L, z, a, &x, &y, at)) return NULL;
    ir_expr *re = NEG(L, part(L, y, at), at), *im = R(L, x, at);
    if (sign < 0) return finish(L, z, NEG(L, re, at), NEG(L, im, at), at);
    return finish(L, z, re, im, at);
}

static ir_expr *cx_asinh(lowerer *L, ir_expr *a, const expr *at) {
    ir_expr *z = cx_new(L, at);
    int x, y;
    if (!z || operand(L, z, a, &x, &y, at)) return NULL;
    int neg = temp(L, z->body, lower_bin(L, OP_LT, R(L, x, at), K(L, 0.0, at), at), at);
    if (neg < 0) return NULL;
    /* w = z mirrored to Re w >= 0 */
    int wr = temp(L, z->body, lower_sel(L, R(L, neg, at), NEG(L, R(L, x, at), at), R(L, x, at), at), at);
    int wi = temp(L, z->body, lower_sel(L, R(L, neg, at), NEG(L, part(L, y, at), at), part(L, y, at), at), at);
    if (wr < 0 || wi < 0) return NULL;
    ir_expr *w = cx_make(L, R(L, wr, at), R(L, wi, at), at);
    ir_expr *w2 = cx_binop(L, OP_MUL, w, cx_make(L, R(L, wr, at), R(L, wi, at), at), at);
    ir_expr *s = cx_sqrt(L, cx_binop(L, OP_ADD, w2, K(L, 1.0, at), at), at);
    ir_expr *r = cx_log_exp(L, 1, cx_binop(L, OP_ADD, cx_make(L, R(L, wr, at), R(L, wi, at), at), s, at), at);
    int rr, ri;
    if (!r || operand(L, z, r, &rr, &ri, at)) return NULL;
    return finish(L, z, lower_sel(L, R(L, neg, at), NEG(L, R(L, rr, at), at), R(L, rr, at), at),
                  lower_sel(L, R(L, neg, at), NEG(L, R(L, ri, at), at), R(L, ri, at), at), at);
}

static ir_expr *cx_acosh(lowerer *L, ir_expr *a, const expr *at) {
    ir_expr *z = cx_new(L, at);
    int x, y;
    if (!z || operand(L, z, a, &x, &y, at)) return NULL;
    if (y < 0 && (y = temp(L, z->body, lower_bin(L, OP_MUL, R(L, x, at), K(L, 0.0, at), at), at)) < 0)
        return NULL;
    ir_expr *p = cx_sqrt(L, cx_binop(L, OP_ADD, cx_make(L, R(L, x, at), R(L, y, at), at), K(L, 1.0, at), at), at);
    ir_expr *m = cx_sqrt(L, cx_binop(L, OP_SUB, cx_make(L, R(L, x, at), R(L, y, at), at), K(L, 1.0, at), at), at);
    ir_expr *r = cx_log_exp(L, 1, cx_binop(L, OP_ADD, cx_make(L, R(L, x, at), R(L, y, at), at),
                                           cx_binop(L, OP_MUL, p, m, at), at), at);
    int rr, ri;
    if (!r || operand(L, z, r, &rr, &ri, at)) return NULL;
    return finish(L, z, R(L, rr, at), R(L, ri, at), at);
}

static ir_expr *cx_atanh(lowerer *L, ir_expr *a, const expr *at) {
    ir_expr *z = cx_new(L, at);
    int x, y;
    if (!z || operand(L, z, a, &x, &y, at)) return NULL;
    if (y < 0 && (y = temp(L, z->body, lower_bin(L, OP_MUL, R(L, x, at), K(L, 0.0, at), at), at)) < 0)
        return NULL;
    ir_expr *lp = cx_log_exp(L, 1, cx_binop(L, OP_ADD, K(L, 1.0, at), cx_make(L, R(L, x, at), R(L, y, at), at), at), at);
    ir_expr *lm = cx_log_exp(L, 1, cx_binop(L, OP_SUB, K(L, 1.0, at), cx_make(L, R(L, x, at), R(L, y, at), at), at), at);
    ir_expr *r = cx_binop(L, OP_MUL, cx_binop(L, OP_SUB, lp, lm, at), K(L, 0.5, at), at);
    int rr, ri;
    if (!r || operand(L, z, r, &rr, &ri, at)) return NULL;
    return finish(L, z, R(L, rr, at), R(L, ri, at), at);
}

/* A complex function by name on a (complex or real) value. */
ir_expr *cx_apply(lowerer *L, const char *leaf, ir_expr *a, const expr *at) {
    if (!strcmp(leaf, "exp")) return cx_log_exp(L, 0, a, at);
    if (!strcmp(leaf, "log")) return cx_log_exp(L, 1, a, at);
    if (!strcmp(leaf, "log10"))
        return cx_binop(L, OP_DIV, cx_log_exp(L, 1, a, at), K(L, log(10.0), at), at);
    if (!strcmp(leaf, "sqrt")) return cx_sqrt(L, a, at);
    if (!strcmp(leaf, "sin")) return cx_trig(L, CX_SIN, a, at);
    if (!strcmp(leaf, "cos")) return cx_trig(L, CX_COS, a, at);
    if (!strcmp(leaf, "sinh")) return cx_trig(L, CX_SINH, a, at);
    if (!strcmp(leaf, "cosh")) return cx_trig(L, CX_COSH, a, at);
    if (!strcmp(leaf, "tan")) return cx_quotient(L, CX_SIN, CX_COS, a, at);
    if (!strcmp(leaf, "tanh")) return cx_quotient(L, CX_SINH, CX_COSH, a, at);
    if (!strcmp(leaf, "conj") || !strcmp(leaf, "conjugate")) return cx_conj(L, a, at);
    if (!strcmp(leaf, "asinh")) return cx_asinh(L, a, at);
    if (!strcmp(leaf, "acosh")) return cx_acosh(L, a, at);
    if (!strcmp(leaf, "atanh")) return cx_atanh(L, a, at);
    if (!strcmp(leaf, "asin")) return cx_times_i(L, cx_asinh(L, cx_times_i(L, a, 1, at), at), -1, at);
    if (!strcmp(leaf, "atan")) return cx_times_i(L, cx_atanh(L, cx_times_i(L, a, 1, at), at), -1, at);
    if (!strcmp(leaf, "acos"))
        return cx_binop(L, OP_SUB, K(L, M_PI / 2, at),
                        cx_times_i(L, cx_asinh(L, cx_times_i(L, a, 1, at), at), -1, at), at);
    return cx_scalar(L, leaf, a, at); /* abs, phase, isnan, isinf, isfinite */
}

/* An intrinsic (abs, np.abs, np.exp, math-named functions) called on a
 * complex argument: 1 and *out when it has a complex meaning. */
int cx_intrinsic(lowerer *L, ir_intrinsic fn, ir_expr **args, int n, const expr *at, ir_expr **out) {
    *out = NULL;
    if (n != 1) {
        ERR(L, at->line, at->col, "this function does not take complex numbers");
        return 1;
    }
    static const struct { ir_intrinsic fn; const char *name; } map[] = {
        {INTR_ABS, "abs"}, {INTR_FABS, "abs"}, {INTR_EXP, "exp"}, {INTR_LOG, "log"},
        {INTR_LOG10, "log10"}, {INTR_SQRT, "sqrt"}, {INTR_SIN, "sin"}, {INTR_COS, "cos"},
        {INTR_TAN, "tan"}, {INTR_SINH, "sinh"}, {INTR_COSH, "cosh"}, {INTR_TANH, "tanh"},
        {INTR_ISNAN, "isnan"}, {INTR_ISINF, "isinf"}, {INTR_ISFINITE, "isfinite"}};
    for (size_t i = 0; i < sizeof map / sizeof *map; i++)
        if (map[i].fn == fn) {
            *out = cx_apply(L, map[i].name, args[0], at);
            return 1;
        }
    ERR(L, at->line, at->col, "%s() does not take complex numbers", ir_intrinsic_name(fn));
    return 1;
}

/* r, phi = cmath.polar(z): abs(z) and phase(z) of one evaluation of z. */
int cx_polar(lowerer *L, ir_block *b, const expr *e, const char *path, ir_expr **out) {
    ir_expr *a = one_arg(L, e, path);
    if (!a) return -1;
    if (vec_is(a) && !cx_is(a)) {
        ERR(L, e->line, e->col, "%s() takes a complex number, not a vector", path);
        return -1;
    }
    ir_expr *z = cx_new(L, e);
    int x, y;
    if (!z || operand(L, z, a, &x, &y, e) || vec_eval(L, b, z)) return -1;
    out[0] = CALL(L, INTR_HYPOT, R(L, x, e), part(L, y, e), e);
    out[1] = CALL(L, INTR_ATAN2, part(L, y, e), R(L, x, e), e);
    return out[0] && out[1] ? 2 : -1;
}
