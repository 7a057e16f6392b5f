/* range.c - the launch range, evaluated on the host (see gpu.h).
 *
 * A GPU kernel receives its range as numbers in the pack, so the range's
 * expressions (start, stop, step, the ndindex extents) are interpreted here
 * from the call's scalar slots and dims, with the CPU backend's semantics
 * (cpu/codegen.c): wrapping integers, Python's // and %, NumPy's shifts and
 * zero divisors, saturating float->int.  An array element (`range(n[0])`)
 * is read from the device when the call's range is evaluated, so every
 * call sees the array's current value; its index is checked against the
 * array first.  What needs the device's code (atomics, inlined bodies,
 * locals) is refused by gpu_range_check.
 *
 * Floats are computed in their own precision with the host's IEEE
 * arithmetic (x86-64 and AArch64 evaluate float as float). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/gpu/gpu.h"
#include "front/ast.h"
#include "lower/lower.h"
#include "passes/passes.h"
#include "util/half.h"

/* A typed value: integers as their bits, sign- or zero-extended from
 * their width; bools 0/1; floats in their own precision. */
typedef struct val {
    ir_type t;
    uint64_t u;
    float f32;
    double f64;
} val;

typedef struct interp {
    const ir_func *f;
    const uint64_t *slots;
    const int64_t (*dims)[TACK_MAX_NDIM];
    const gpu_device_read *rd;
    tack_error *err;
    int failed;
    int reported; /* err holds the cause (a read or an index): keep it */
    val *locals;  /* debug mode's guards assign locals (f->nlocals) */
} interp;

static tack_status refuse(const ir_func *f, const ir_expr *e, tack_error *err, const char *what) {
    src_info where = lower_source_info(f, e->src);
    return src_error(&where, e->line, e->col, err,
                     "a GPU launch evaluates the parallel loop's range before it starts, so the "
                     "range cannot use %s",
                     what);
}

/* Is `e` the debug mode's read of a dimension from the hidden extents
 * array (at a constant offset)? */
static int extent_read(const ir_func *f, const ir_expr *e) {
    return e->kind == IR_LOAD && f->debug_extents >= 0 && e->index == f->debug_extents &&
           e->nargs == 1 && e->args[0]->kind == IR_CONST && e->args[0]->i >= 0 &&
           e->args[0]->i < (int64_t)f->nparams * TACK_MAX_NDIM;
}

/* Is `e` a read of an element of an array argument, at one flat index
 * (resolve_dims' offset), which the host can fetch from the device? */
static int element_read(const ir_func *f, const ir_expr *e) {
    return e->kind == IR_LOAD && e->index >= 0 && e->index < f->nparams && e->nargs == 1 &&
           e->index != f->debug_errors && f->params[e->index].role == ROLE_ARRAY &&
           !f->params[e->index].sampled;
}

/* Is `e` debug mode's guard around an element read (bounds.c): indices
 * assigned to locals, then `if` they are inside: the read, else 0 and an
 * IR_BOUNDS_FAIL?  Its statements are interpreted here too. */
static int debug_guard(const ir_func *f, const ir_expr *e) {
    if (e->kind != IR_INLINE || f->debug_errors < 0 || !e->body || e->index < 0 || !e->body->n)
        return 0;
    const ir_stmt *last = e->body->stmts[e->body->n - 1];
    if (last->kind != IR_IF || !last->orelse.n ||
        last->orelse.stmts[last->orelse.n - 1]->kind != IR_BOUNDS_FAIL)
        return 0;
    for (int i = 0; i + 1 < e->body->n; i++)
        if (e->body->stmts[i]->kind != IR_ASSIGN) return 0;
    const ir_block *arms[2] = {&last->body, &last->orelse};
    for (int a = 0; a < 2; a++)
        for (int i = 0; i < arms[a]->n; i++)
            if (arms[a]->stmts[i]->kind != IR_ASSIGN && arms[a]->stmts[i]->kind != IR_BOUNDS_FAIL)
                return 0;
    return 1;
}

static tack_status check(const ir_func *f, const ir_expr *e, tack_error *err);

static tack_status check_guard(const ir_func *f, const ir_block *b, tack_error *err) {
    for (int i = 0; i < b->n; i++) {
        const ir_stmt *s = b->stmts[i];
        if (check(f, s->value, err) || check_guard(f, &s->body, err) ||
            check_guard(f, &s->orelse, err))
            return err->status;
        for (int k = 0; k < s->nindices; k++)
            if (check(f, s->indices[k], err)) return err->status;
    }
    return TACK_OK;
}

static tack_status check(const ir_func *f, const ir_expr *e, tack_error *err) {
    if (!e) return TACK_OK;
    switch (e->kind) {
    case IR_LOAD:
        if (extent_read(f, e)) return TACK_OK;
        if (!element_read(f, e)) return refuse(f, e, err, "this array access");
        break;
    case IR_ATOMIC: return refuse(f, e, err, "atomics");
    case IR_INLINE:
        if (debug_guard(f, e)) return check_guard(f, e->body, err);
        return refuse(f, e, err, "device function calls");
    case IR_LOCAL:
        if (f->debug_errors >= 0 && !strncmp(f->locals[e->index].name, "$chk", 4))
            return TACK_OK; /* a guard's own (bounds.c names them) */
        return refuse(f, e, err, "local variables");
    case IR_VECTOR: return refuse(f, e, err, "vectors");
    case IR_PARAM:
        if (f->params[e->index].role != ROLE_SCALAR) return refuse(f, e, err, "this parameter");
        break;
    default: break;
    }
    if (check(f, e->a, err) || check(f, e->b, err) || check(f, e->cond, err)) return err->status;
    for (int i = 0; i < e->nargs; i++)
        if (check(f, e->args[i], err)) return err->status;
    return TACK_OK;
}

tack_status gpu_range_check(const ir_func *f, tack_error *err) {
    const ir_expr *v[5] = {f->start, f->stop, f->step, f->inner_stop[0], f->inner_stop[1]};
    for (int i = 0; i < 5; i++)
        if ((i < 3 || i - 3 < f->ninner) && check(f, v[i], err)) return err->status;
    return TACK_OK;
}

/* ---- values ---- */

static val mk_int(ir_type t, uint64_t bits) {
    val v = {t, 0, 0, 0};
    int b = ir_type_bits(t);
    if (t == TACK_BOOL) v.u = bits & 1;
    else if (b == 64) v.u = bits;
    else {
        uint64_t m = ((uint64_t)1 << b) - 1;
        bits &= m;
        if (ir_type_is_signed(t) && (bits >> (b - 1)) & 1) bits |= ~m;
        v.u = bits;
    }
    return v;
}

static val mk_float(ir_type t, double x) {
    val v = {t, 0, 0, 0};
    if (t == TACK_F32) v.f32 = (float)x;
    else v.f64 = x;
    return v;
}

static double fval(val v) { return v.t == TACK_F32 ? (double)v.f32 : v.f64; }
static int64_t sval(val v) { return (int64_t)v.u; }

/* Float -> integer: truncating, saturating, NaN -> 0. */
static val f2i(double x, ir_type to) {
    int b = ir_type_bits(to);
    if (x != x) return mk_int(to, 0);
    if (ir_type_is_signed(to)) {
        double lim = ldexp(1, b - 1);
        if (x <= -lim) return mk_int(to, (uint64_t)1 << (b - 1) | (b == 64 ? 0 : ~(uint64_t)0 << b));
        if (x >= lim) return mk_int(to, ((uint64_t)1 << (b - 1)) - 1);
        return mk_int(to, (uint64_t)(int64_t)x);
    }
    if (!(x >= 1)) return mk_int(to, 0);
    if (x >= ldexp(1, b)) return mk_int(to, b == 64 ? UINT64_MAX : ((uint64_t)1 << b) - 1);
    return mk_int(to, (uint64_t)x);
}

static val convert(val v, ir_type to) {
    if (v.t == to) return v;
    int ff = ir_type_is_float(v.t), tf = ir_type_is_float(to);
    if (to == TACK_BOOL) return mk_int(TACK_BOOL, ff ? fval(v) != 0 : v.u != 0);
    if (ff && tf) return mk_float(to, fval(v)); /* f32 -> f64 exact; f64 -> f32 rounds */
    if (tf) {
        val r = {to, 0, 0, 0};
        int sgn = ir_type_is_signed(v.t);
        /* Round once, straight to the target precision. */
        if (to == TACK_F32) r.f32 = sgn ? (float)sval(v) : (float)v.u;
        else r.f64 = sgn ? (double)sval(v) : (double)v.u;
        return r;
    }
    if (ff) return f2i(fval(v), to);
    return mk_int(to, v.u); /* already extended by the source's signedness */
}

static int cmp_true(val a, val b, ir_op op) {
    if (ir_type_is_float(a.t)) {
        double x = fval(a), y = fval(b);
        switch (op) {
        case OP_LT: return x < y;
        case OP_LE: return x <= y;
        case OP_GT: return x > y;
        case OP_GE: return x >= y;
        case OP_EQ: return x == y;
        default: return x != y;
        }
    }
    int s = ir_type_is_signed(a.t);
    int lt = s ? sval(a) < sval(b) : a.u < b.u;
    int eq = a.u == b.u;
    switch (op) {
    case OP_LT: return lt;
    case OP_LE: return lt || eq;
    case OP_GT: return !lt && !eq;
    case OP_GE: return !lt;
    case OP_EQ: return eq;
    default: return !eq;
    }
}

/* Float arithmetic in the operands' precision. */
static val farith(ir_op op, val a, val b) {
    if (a.t == TACK_F32) {
        float x = a.f32, y = b.f32, r;
        switch (op) {
        case OP_ADD: r = x + y; break;
        case OP_SUB: r = x - y; break;
        case OP_MUL: r = x * y; break;
        default: r = x / y; break;
        }
        val v = {TACK_F32, 0, r, 0};
        return v;
    }
    double x = a.f64, y = b.f64, r;
    switch (op) {
    case OP_ADD: r = x + y; break;
    case OP_SUB: r = x - y; break;
    case OP_MUL: r = x * y; break;
    default: r = x / y; break;
    }
    return mk_float(TACK_F64, r);
}

static val fop1(val a, double (*d)(double), float (*s)(float)) {
    if (a.t == TACK_F32) {
        val v = {TACK_F32, 0, s(a.f32), 0};
        return v;
    }
    return mk_float(TACK_F64, d(a.f64));
}

static val fop2(val a, val b, double (*d)(double, double), float (*s)(float, float)) {
    if (a.t == TACK_F32) {
        val v = {TACK_F32, 0, s(a.f32, b.f32), 0};
        return v;
    }
    return mk_float(TACK_F64, d(a.f64, b.f64));
}

/* numpy.floor_divide / numpy.remainder on floats, as the CPU backend. */
static val float_floordiv_mod(val a, val b, int want_mod) {
    ir_type t = a.t;
    val m = fop2(a, b, fmod, fmodf);
    double md = fval(m), bd = fval(b);
    int m_nz = md != 0, differ = m_nz && ((bd < 0) != (md < 0));
    if (want_mod) {
        if (bd == 0) return m;
        if (!m_nz) return mk_float(t, copysign(0, bd));
        return differ ? farith(OP_ADD, m, b) : m;
    }
    val q = farith(OP_DIV, a, b);
    if (bd == 0) return q;
    val div = farith(OP_DIV, farith(OP_SUB, a, m), b);
    if (differ) div = farith(OP_SUB, div, mk_float(t, 1));
    val fl = fop1(div, floor, floorf);
    if (fval(farith(OP_SUB, div, fl)) > 0.5) fl = farith(OP_ADD, fl, mk_float(t, 1));
    if (fval(div) == 0) fl = mk_float(t, copysign(0, fval(q)));
    return fl;
}

static val int_binop(ir_op op, ir_type t, val a, val b) {
    int bits = ir_type_bits(t), sgn = ir_type_is_signed(t);
    uint64_t x = a.u, y = b.u;
    switch (op) {
    case OP_ADD: return mk_int(t, t == TACK_BOOL ? (x | y) : x + y);
    case OP_SUB: return mk_int(t, x - y);
    case OP_MUL: return mk_int(t, x * y);
    case OP_AND: return mk_int(t, x & y);
    case OP_OR: return mk_int(t, x | y);
    case OP_XOR: return mk_int(t, x ^ y);
    case OP_FLOORDIV:
    case OP_MOD: {
        int want_mod = op == OP_MOD;
        if (y == 0) return mk_int(t, 0);
        if (!sgn) return mk_int(t, want_mod ? x % y : x / y);
        int64_t sx = sval(a), sy = sval(b);
        if (sy == -1) return mk_int(t, want_mod ? 0 : 0 - x); /* INT_MIN // -1 wraps */
        int64_t q = sx / sy, r = sx % sy;
        if (r != 0 && ((r ^ sy) < 0)) {
            q -= 1;
            r += sy;
        }
        return mk_int(t, want_mod ? (uint64_t)r : (uint64_t)q);
    }
    case OP_POW: {
        if (sgn && sval(b) < 0) {
            int64_t base = sval(a);
            return mk_int(t, base == 1 ? 1 : base == -1 ? ((y & 1) ? UINT64_MAX : 1) : 0);
        }
        /* By squaring, wrapping; the exponent shifts as unsigned of t's width. */
        uint64_t r = 1, base = x, e = bits == 64 ? y : y & (((uint64_t)1 << bits) - 1);
        for (;;) {
            if (e & 1) r *= base;
            base *= base;
            e >>= 1;
            if (!e) break;
        }
        return mk_int(t, r);
    }
    case OP_SHL:
    case OP_SHR: {
        uint64_t count = bits == 64 ? y : y & (((uint64_t)1 << bits) - 1); /* unsigned in t */
        if (count >= (uint64_t)bits) {
            if (op == OP_SHR && sgn && sval(a) < 0) return mk_int(t, UINT64_MAX);
            return mk_int(t, 0);
        }
        if (op == OP_SHL) return mk_int(t, x << count);
        if (sgn) return mk_int(t, (uint64_t)(sval(a) >> count)); /* arithmetic on gcc/clang */
        return mk_int(t, x >> count);
    }
    default: return mk_int(t, 0);
    }
}

static val eval(interp *I, const ir_expr *e);

/* The flat offsets array p's elements take: [0, span).  A strided array's
 * element strides are its hidden parameters "name.strides[d]" (resolve.c),
 * never negative in device memory; a vector's components follow. */
static int64_t element_span(const interp *I, int p) {
    const ir_func *f = I->f;
    const ir_param *a = &f->params[p];
    const int64_t *d = I->dims[p];
    for (int k = 0; k < TACK_MAX_NDIM; k++)
        if (d[k] <= 0) return 0;
    char first[200];
    snprintf(first, sizeof first, "%s.strides[0]", a->name);
    for (int q = 0; q < f->nparams; q++) {
        if (!f->params[q].name || strcmp(f->params[q].name, first)) continue;
        int count = stride_param_count(a);
        uint64_t last = 0; /* the largest offset, wrapping never: extents fit memory */
        for (int k = 0; k < count && q + k < f->nparams; k++)
            last += (uint64_t)(d[k] - 1) * I->slots[q + k];
        if (a->vec_width) last += (uint64_t)(a->vec_width - 1);
        return (int64_t)(last + 1);
    }
    int64_t n = 1;
    for (int k = 0; k < TACK_MAX_NDIM; k++) n *= d[k];
    return n;
}

/* An array element the range reads, fetched from the device now. */
static val read_element(interp *I, const ir_expr *e) {
    const ir_func *f = I->f;
    const ir_param *a = &f->params[e->index];
    int64_t at = sval(convert(eval(I, e->args[0]), TACK_I64));
    if (I->failed) return mk_int(TACK_I64, 0);
    int64_t span = element_span(I, e->index);
    if (at < 0 || at >= span) {
        src_info where = lower_source_info(f, e->src);
        src_error(&where, e->line, e->col, I->err,
                  "the parallel loop's range reads element %lld of '%s', which has %lld",
                  (long long)at, a->name, (long long)span);
        I->err->status = TACK_ERR_INDEX;
        I->failed = I->reported = 1;
        return mk_int(TACK_I64, 0);
    }
    if (!I->rd || !I->rd->read) {
        refuse(f, e, I->err, "array elements on this device");
        I->failed = I->reported = 1;
        return mk_int(TACK_I64, 0);
    }
    ir_type t = a->type;
    size_t size = t == TACK_BOOL ? 1 : (size_t)ir_type_bits(t) / 8;
    unsigned char bytes[8] = {0};
    const void *handle = (const void *)(uintptr_t)I->slots[e->index];
    if (size < 1 || size > 8 ||
        I->rd->read(I->rd->b, handle, (size_t)at * size, bytes, size, I->err)) {
        if (size < 1 || size > 8) I->failed = 1;
        else I->failed = I->reported = 1;
        return mk_int(TACK_I64, 0);
    }
    uint64_t bits = 0;
    memcpy(&bits, bytes, size); /* devices and hosts here are little-endian */
    val v = {t, 0, 0, 0};
    if (t == TACK_F32) memcpy(&v.f32, bytes, 4);
    else if (t == TACK_F64) memcpy(&v.f64, bytes, 8);
    else if (t == TACK_F16) v = mk_float(TACK_F32, half_to_float((uint16_t)bits));
    else v = mk_int(t, t == TACK_BOOL ? bits != 0 : bits);
    return convert(v, e->type);
}

/* Runs a debug guard's statements; a failed check is an IndexError at
 * the access, before anything runs. */
static void exec_block(interp *I, const ir_block *b) {
    for (int i = 0; i < b->n && !I->failed; i++) {
        const ir_stmt *s = b->stmts[i];
        switch (s->kind) {
        case IR_ASSIGN: I->locals[s->index] = eval(I, s->value); break;
        case IR_IF:
            exec_block(I, convert(eval(I, s->value), TACK_BOOL).u ? &s->body : &s->orelse);
            break;
        case IR_BOUNDS_FAIL: {
            const ir_site *site = &I->f->sites[s->index];
            const ir_param *a = &I->f->params[site->param];
            char at[200] = "", shape[200] = "";
            for (int k = 0; k < s->nindices && !I->failed; k++) {
                size_t n = strlen(at), m = strlen(shape);
                snprintf(at + n, sizeof at - n, "%s%lld", k ? ", " : "",
                         (long long)sval(convert(eval(I, s->indices[k]), TACK_I64)));
                snprintf(shape + m, sizeof shape - m, "%s%lld", k ? ", " : "",
                         (long long)I->dims[site->param][k]);
            }
            src_info where = lower_source_info(I->f, site->src);
            src_error(&where, site->line, site->col, I->err,
                      "the parallel loop's range reads index (%s%s) of '%s', out of bounds "
                      "for its shape (%s%s)", at, s->nindices == 1 ? "," : "", a->name, shape,
                      s->nindices == 1 ? "," : "");
            I->err->status = TACK_ERR_INDEX;
            I->failed = I->reported = 1;
            break;
        }
        default: I->failed = 1; break;
        }
    }
}

/* gcd / lcm as the CPU: Euclid on the magnitudes in t's width. */
static val gcd_lcm(val a, val b, ir_type t, int lcm) {
    int sgn = ir_type_is_signed(t);
    uint64_t x = sgn && sval(a) < 0 ? 0 - a.u : a.u, y = sgn && sval(b) < 0 ? 0 - b.u : b.u;
    int bits = ir_type_bits(t);
    uint64_t mask = bits == 64 ? UINT64_MAX : ((uint64_t)1 << bits) - 1;
    x &= mask;
    y &= mask;
    uint64_t m = x, n = y;
    while (y) {
        uint64_t r = x % y;
        x = y;
        y = r;
    }
    if (lcm) x = x ? m / x * n : 0;
    return mk_int(t, x);
}

static val call(interp *I, const ir_expr *e) {
    ir_type t = e->type;
    ir_type at = e->args[0]->type;
    val a = eval(I, e->args[0]);
    val b = e->nargs > 1 ? eval(I, e->args[1]) : a;
    switch (e->fn) {
    case INTR_SQRT: return fop1(a, sqrt, sqrtf);
    case INTR_EXP: return fop1(a, exp, expf);
    case INTR_LOG: return fop1(a, log, logf);
    case INTR_LOG2: return fop1(a, log2, log2f);
    case INTR_LOG10: return fop1(a, log10, log10f);
    case INTR_SIN: return fop1(a, sin, sinf);
    case INTR_COS: return fop1(a, cos, cosf);
    case INTR_TAN: return fop1(a, tan, tanf);
    case INTR_ASIN: return fop1(a, asin, asinf);
    case INTR_ACOS: return fop1(a, acos, acosf);
    case INTR_ATAN: return fop1(a, atan, atanf);
    case INTR_SINH: return fop1(a, sinh, sinhf);
    case INTR_COSH: return fop1(a, cosh, coshf);
    case INTR_TANH: return fop1(a, tanh, tanhf);
    case INTR_FLOOR: return fop1(a, floor, floorf);
    case INTR_CEIL: return fop1(a, ceil, ceilf);
    case INTR_TRUNC: return fop1(a, trunc, truncf);
    case INTR_FABS: return fop1(a, fabs, fabsf);
    case INTR_ATAN2: return fop2(a, b, atan2, atan2f);
    case INTR_POW: return fop2(a, b, pow, powf);
    case INTR_COPYSIGN: return fop2(a, b, copysign, copysignf);
    case INTR_FMOD: return fop2(a, b, fmod, fmodf);
    case INTR_HYPOT: return fop2(a, b, hypot, hypotf);
    case INTR_ASINH: return fop1(a, asinh, asinhf);
    case INTR_ACOSH: return fop1(a, acosh, acoshf);
    case INTR_ATANH: return fop1(a, atanh, atanhf);
    case INTR_EXP2: return fop1(a, exp2, exp2f);
    case INTR_EXPM1: return fop1(a, expm1, expm1f);
    case INTR_LOG1P: return fop1(a, log1p, log1pf);
    case INTR_CBRT: return fop1(a, cbrt, cbrtf);
    case INTR_ERF: return fop1(a, erf, erff);
    case INTR_ERFC: return fop1(a, erfc, erfcf);
    case INTR_GAMMA: return fop1(a, tgamma, tgammaf);
    case INTR_REMAINDER: return fop2(a, b, remainder, remainderf);
    case INTR_NEXTAFTER: return fop2(a, b, nextafter, nextafterf);
    case INTR_DEGREES:
    case INTR_RADIANS: return farith(OP_MUL, a, mk_float(t, ir_angle_factor(e->fn, t)));
    case INTR_FMA: {
        val c = eval(I, e->args[2]);
        if (t == TACK_F32) {
            val v = {TACK_F32, 0, fmaf(a.f32, b.f32, c.f32), 0};
            return v;
        }
        return mk_float(TACK_F64, fma(a.f64, b.f64, c.f64));
    }
    case INTR_LDEXP: {
        ir_type nt = e->args[1]->type;
        int64_t n = !ir_type_is_signed(nt) && b.u > INT32_MAX ? INT32_MAX : sval(b);
        int k = n > INT32_MAX ? INT32_MAX : n < INT32_MIN ? INT32_MIN : (int)n;
        if (t == TACK_F32) {
            val v = {TACK_F32, 0, ldexpf(a.f32, k), 0};
            return v;
        }
        return mk_float(TACK_F64, ldexp(a.f64, k));
    }
    case INTR_FREXP_EXP: {
        double x = fval(a);
        return mk_int(TACK_I32, x != 0 && isfinite(x) ? (uint64_t)(int64_t)(ilogb(x) + 1) : 0);
    }
    case INTR_GCD:
    case INTR_LCM: return gcd_lcm(a, b, t, e->fn == INTR_LCM);
    case INTR_ISNAN: return mk_int(TACK_BOOL, ir_type_is_float(at) && fval(a) != fval(a));
    case INTR_ISINF: return mk_int(TACK_BOOL, ir_type_is_float(at) && isinf(fval(a)));
    case INTR_ISFINITE: return mk_int(TACK_BOOL, !ir_type_is_float(at) || isfinite(fval(a)));
    case INTR_ABS:
        if (ir_type_is_float(t)) return fop1(a, fabs, fabsf);
        if (ir_type_is_signed(t) && sval(a) < 0) return mk_int(t, 0 - a.u); /* INT_MIN stays */
        return a;
    case INTR_MIN: return cmp_true(b, a, OP_LT) ? b : a;
    case INTR_MAX: return cmp_true(b, a, OP_GT) ? b : a;
    case INTR_ROUND:
        if (!ir_type_is_float(at)) return convert(a, t);
        return convert(fop1(a, nearbyint, nearbyintf), t); /* half to even */
    case INTR_F16: {
        val v = {TACK_F32, 0, half_round(fval(a)), 0}; /* one rounding from f32 or f64 */
        return v;
    }
    default: break;
    }
    I->failed = 1;
    return mk_int(TACK_I64, 0);
}

static val eval(interp *I, const ir_expr *e) {
    if (I->failed) return mk_int(TACK_I64, 0);
    switch (e->kind) {
    case IR_CONST:
        if (ir_type_is_float(e->type)) return mk_float(e->type, e->f);
        return mk_int(e->type, (uint64_t)e->i);
    case IR_PARAM: {
        uint64_t s = I->slots[e->index];
        ir_type t = e->type;
        if (t == TACK_BOOL) return mk_int(t, (s & 0xff) != 0);
        if (t == TACK_F32) {
            uint32_t bits = (uint32_t)s;
            val v = {t, 0, 0, 0};
            memcpy(&v.f32, &bits, sizeof bits);
            return v;
        }
        if (t == TACK_F64) {
            val v = {t, 0, 0, 0};
            memcpy(&v.f64, &s, sizeof s);
            return v;
        }
        return mk_int(t, s);
    }
    case IR_DIM:
        return mk_int(TACK_I64, (uint64_t)I->dims[e->index][e->dim]);
    case IR_LOAD:
        if (extent_read(I->f, e)) {
            int64_t at = e->args[0]->i;
            return mk_int(TACK_I64, (uint64_t)I->dims[at / TACK_MAX_NDIM][at % TACK_MAX_NDIM]);
        }
        if (element_read(I->f, e)) return read_element(I, e);
        break;
    case IR_LOCAL:
        if (I->locals) return I->locals[e->index];
        break;
    case IR_INLINE:
        if (I->locals && debug_guard(I->f, e)) {
            exec_block(I, e->body);
            return I->locals[e->index];
        }
        break;
    case IR_BINOP: {
        val a = eval(I, e->a), b = eval(I, e->b);
        ir_type t = e->a->type;
        if (e->op >= OP_LT) return mk_int(TACK_BOOL, cmp_true(a, b, e->op));
        if (ir_type_is_float(t)) {
            switch (e->op) {
            case OP_ADD: case OP_SUB: case OP_MUL: case OP_DIV: return farith(e->op, a, b);
            case OP_FLOORDIV: return float_floordiv_mod(a, b, 0);
            case OP_MOD: return float_floordiv_mod(a, b, 1);
            case OP_POW: return fop2(a, b, pow, powf);
            default: break;
            }
            break;
        }
        return int_binop(e->op, t, a, b);
    }
    case IR_UNOP: {
        val a = eval(I, e->a);
        ir_type t = e->type;
        switch (e->op) {
        case OP_NEG:
            if (t == TACK_F32) {
                val v = {t, 0, -a.f32, 0};
                return v;
            }
            if (t == TACK_F64) return mk_float(t, -a.f64);
            return mk_int(t, 0 - a.u);
        case OP_INVERT:
        case OP_NOT: return mk_int(t, ~a.u);
        default: return a;
        }
    }
    case IR_ANDOR: {
        val a = eval(I, e->a);
        int truth = convert(a, TACK_BOOL).u != 0;
        if (e->op == OP_AND) return truth ? eval(I, e->b) : a;
        return truth ? a : eval(I, e->b);
    }
    case IR_SELECT:
        return eval(I, e->cond).u ? eval(I, e->a) : eval(I, e->b);
    case IR_CAST:
        return convert(eval(I, e->a), e->type);
    case IR_CALL:
        return call(I, e);
    default:
        break;
    }
    I->failed = 1;
    return mk_int(TACK_I64, 0);
}

tack_status gpu_range_eval(const ir_func *f, const uint64_t *slots,
                           const int64_t (*dims)[TACK_MAX_NDIM], const gpu_device_read *rd,
                           int64_t out[5], tack_error *err) {
    if (gpu_range_check(f, err)) return err->status;
    interp I = {f, slots, dims, rd, err, 0, 0, NULL};
    val local_room[64];
    val *heap = NULL;
    if (f->debug_errors >= 0 && f->nlocals > 0) { /* the guards' locals */
        I.locals = f->nlocals <= 64 ? local_room : (heap = calloc(f->nlocals, sizeof *heap));
        if (!I.locals) {
            err->status = TACK_ERR_NOMEM;
            snprintf(err->message, sizeof err->message,
                     "out of memory evaluating the launch range of '%s'", f->name);
            return TACK_ERR_NOMEM;
        }
        memset(I.locals, 0, f->nlocals * sizeof *I.locals);
    }
    const ir_expr *v[5] = {f->start, f->stop, f->step, f->inner_stop[0], f->inner_stop[1]};
    for (int i = 0; i < 5; i++) {
        if (i >= 3 && i - 3 >= f->ninner) {
            out[i] = 1;
            continue;
        }
        val r = convert(eval(&I, v[i]), TACK_I64);
        out[i] = (int64_t)r.u;
    }
    free(heap);
    if (I.reported) return err->status ? err->status : TACK_ERR_INTERNAL;
    if (I.failed) {
        err->status = TACK_ERR_INTERNAL;
        snprintf(err->message, sizeof err->message,
                 "internal error: kernel '%s': the launch range has an expression the host "
                 "cannot evaluate",
                 f->name);
        return TACK_ERR_INTERNAL;
    }
    /* A u64 bound of 2**63 or more wraps negative in the launch's i64:
     * refused, never a launch that silently runs nothing. */
    for (int i = 0; i < 5; i++)
        if ((i < 3 || i - 3 < f->ninner) && v[i]->kind == IR_CAST && v[i]->a &&
            v[i]->a->type == TACK_U64 && out[i] < 0) {
            static const char *what[5] = {"start", "length", "step", "ndindex extent",
                                          "ndindex extent"};
            err->status = TACK_ERR_VALUE;
            snprintf(err->message, sizeof err->message,
                     "kernel '%s': the parallel loop's %s %llu (a uint64) is 2**63 or more, "
                     "past what a launch can run",
                     f->name, what[i], (unsigned long long)out[i]);
            return TACK_ERR_VALUE;
        }
    return TACK_OK;
}
