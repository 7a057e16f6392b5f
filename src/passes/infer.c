/* infer.c - type inference and conversion insertion (see passes.h).
 *
 * Two phases.  First a fixed point gives every local the promotion of all
 * values assigned to it (types may be "weak": literals that adapt to what
 * they meet).  Then one walk fixes every node's concrete type, pushing the
 * expected type down into weak subexpressions and inserting casts where
 * operands differ.  The promotion rules are NumPy's (docs/language.md). */
#include "passes.h"
#include "lower/lower.h"
#include "util/half.h"

#include <stdio.h>
#include <stdlib.h>

typedef struct typer {
    ir_func *f;
    tack_error *err;
    int failed;
    int changed;
    int final;          /* the check after the fixpoint (see pass_infer_types) */
    int settled;        /* locals' types are final: reads take them, nothing joins */
    uint8_t *loop_var;  /* per local: a range() or ndindex loop variable */
} typer;

#define TERR(T, e, ...)                                                         \
    do {                                                                        \
        if (!(T)->failed++) {                                                   \
            src_info where_ = lower_source_info((T)->f, (e)->src);                      \
            src_error(&where_, (e)->line, (e)->col, (T)->err, __VA_ARGS__);     \
        }                                                                       \
    } while (0)

static int is_weak(ir_type t) { return t == IRT_WEAK_INT || t == IRT_WEAK_FLOAT; }
static int concrete(ir_type t) { return t >= 0 && t < TACK_DTYPE_COUNT; }

static ir_type int_of_bits(int bits, int is_signed) {
    switch (bits) {
    case 8: return is_signed ? TACK_I8 : TACK_U8;
    case 16: return is_signed ? TACK_I16 : TACK_U16;
    case 32: return is_signed ? TACK_I32 : TACK_U32;
    default: return is_signed ? TACK_I64 : TACK_U64;
    }
}

/* NumPy's promotion of two concrete types. */
static ir_type promote_concrete(ir_type a, ir_type b) {
    if (a == b) return a;
    if (a == TACK_BOOL) return b;
    if (b == TACK_BOOL) return a;
    int fa = ir_type_is_float(a), fb = ir_type_is_float(b);
    if (fa && fb) return a == TACK_F64 || b == TACK_F64 ? TACK_F64 : TACK_F32;
    if (fa || fb) {
        ir_type fl = fa ? a : b, in = fa ? b : a;
        if (fl == TACK_F64) return TACK_F64;
        return ir_type_bits(in) <= 16 ? TACK_F32 : TACK_F64;
    }
    int sa = ir_type_is_signed(a), sb = ir_type_is_signed(b);
    int ba = ir_type_bits(a), bb = ir_type_bits(b);
    if (sa == sb) return ba >= bb ? a : b;
    int ubits = sa ? bb : ba, sbits = sa ? ba : bb;
    if (ubits < sbits) return sa ? a : b;
    if (ubits < 64) return int_of_bits(ubits * 2, 1);
    return TACK_F64;
}

/* Promotion with weak (literal) types: a weak int takes the other side's
 * type; a weak float takes a float's type and turns integers into the
 * variant's default float. */
static ir_type promote(typer *T, ir_type a, ir_type b) {
    if (a == IRT_UNSET) return b;
    if (b == IRT_UNSET) return a;
    if (is_weak(a) && is_weak(b)) return a == IRT_WEAK_FLOAT || b == IRT_WEAK_FLOAT
                                              ? IRT_WEAK_FLOAT : IRT_WEAK_INT;
    if (is_weak(b)) {
        ir_type t = a;
        a = b;
        b = t;
    }
    if (a == IRT_WEAK_INT) return b == TACK_BOOL ? TACK_I64 : b;
    if (a == IRT_WEAK_FLOAT) return ir_type_is_float(b) ? b : T->f->default_float;
    return promote_concrete(a, b);
}

/* The concrete type a weak type settles on when nothing else decides. */
static ir_type settle(typer *T, ir_type t) {
    if (t == IRT_WEAK_INT || t == IRT_UNSET) return TACK_I64;
    if (t == IRT_WEAK_FLOAT) return T->f->default_float;
    return t;
}

static ir_type float_of(typer *T, ir_type t) {
    if (t == IRT_WEAK_INT || t == IRT_WEAK_FLOAT) return T->f->default_float;
    return ir_type_is_float(t) ? t : TACK_F64;
}

/* ---- phase 1: types, possibly weak ---- */

static ir_type type_of(typer *T, ir_expr *e);
static void scan_block(typer *T, ir_block *b);

static ir_type binop_type(typer *T, ir_expr *e, ir_type a, ir_type b) {
    if (a == IRT_UNSET || b == IRT_UNSET) return IRT_UNSET;
    ir_type t = promote(T, a, b);
    switch (e->op) {
    case OP_ADD: case OP_MUL:
        /* NumPy: bool + bool is logical or, bool * bool logical and. */
        return t;
    case OP_SUB:
        if (a == TACK_BOOL && b == TACK_BOOL) {
            TERR(T, e, "'-' is not defined for two bools (NumPy refuses it too); use '^'");
            return IRT_UNSET;
        }
        return t == TACK_BOOL ? TACK_I64 : t;
    case OP_FLOORDIV: case OP_MOD: case OP_POW:
        return t == TACK_BOOL ? TACK_I64 : t;
    case OP_DIV:
        if (t == IRT_WEAK_INT) return IRT_WEAK_FLOAT;
        return ir_type_is_float(t) ? t : TACK_F64;
    case OP_AND: case OP_OR: case OP_XOR: case OP_SHL: case OP_SHR:
        if (ir_type_is_float(t)) {
            TERR(T, e, "bitwise operators need integer or bool operands, not %s",
                 ir_type_name(settle(T, t)));
            return IRT_UNSET;
        }
        if ((e->op == OP_SHL || e->op == OP_SHR) && t == TACK_BOOL) return TACK_I64;
        return t;
    default:
        return TACK_BOOL; /* comparisons */
    }
}

static ir_type call_type(typer *T, ir_expr *e) {
    ir_type at[3] = {IRT_UNSET, IRT_UNSET, IRT_UNSET};
    for (int i = 0; i < e->nargs; i++) {
        ir_type t = type_of(T, e->args[i]);
        if (t == IRT_UNSET) return IRT_UNSET;
        if (i < 3) at[i] = t;
    }
    switch (e->fn) {
    case INTR_ISNAN: case INTR_ISINF: case INTR_ISFINITE:
        return TACK_BOOL;
    case INTR_ABS:
        return at[0] == TACK_BOOL ? TACK_I64 : at[0];
    case INTR_MIN: case INTR_MAX:
        return promote(T, at[0], at[1]);
    case INTR_ROUND:
        return ir_type_is_float(at[0]) ? TACK_I64 : at[0] == TACK_BOOL ? TACK_I64 : at[0];
    case INTR_F16:
        return TACK_F32; /* a half's value, held as f32 */
    case INTR_ATAN2: case INTR_POW: case INTR_COPYSIGN: case INTR_FMOD: case INTR_HYPOT:
    case INTR_REMAINDER: case INTR_NEXTAFTER:
        return float_of(T, promote(T, at[0], at[1]));
    case INTR_FMA:
        return float_of(T, promote(T, promote(T, at[0], at[1]), at[2]));
    case INTR_LDEXP:
        if (ir_type_is_float(at[1])) {
            TERR(T, e, "ldexp() needs an integer exponent, not %s", ir_type_name(settle(T, at[1])));
            return IRT_UNSET;
        }
        return float_of(T, at[0]);
    case INTR_FREXP_EXP:
        return TACK_I32;
    case INTR_STOP_GRADIENT:
        T->f->uses_stop_gradient = 1;
        return at[0];
    case INTR_GCD: case INTR_LCM: {
        for (int i = 0; i < 2; i++)
            if (ir_type_is_float(at[i])) {
                TERR(T, e, "%s() needs integers, not %s", ir_intrinsic_name(e->fn),
                     ir_type_name(settle(T, at[i])));
                return IRT_UNSET;
            }
        /* Settled now: a weak result would follow a float it meets. */
        ir_type t = settle(T, promote(T, at[0], at[1]));
        return t == TACK_BOOL ? TACK_I64 : t;
    }
    default:
        return float_of(T, at[0]);
    }
}

/* Types an access's indices: loads, stores and atomics alike refuse a
 * float index (a store used to truncate it, and 1e300 wrapped to -1). */
static void type_indices(typer *T, ir_expr **idx, int n) {
    for (int i = 0; i < n; i++) {
        ir_type it = type_of(T, idx[i]);
        if (ir_type_is_float(it))
            TERR(T, idx[i], "array indices must be integers, not %s", ir_type_name(settle(T, it)));
    }
}

static ir_type type_of(typer *T, ir_expr *e) {
    ir_type t = IRT_UNSET;
    switch (e->kind) {
    case IR_CONST:
        return e->type;
    case IR_PARAM:
        t = T->f->params[e->index].type;
        break;
    case IR_LOCAL:
        t = T->f->locals[e->index].type;
        /* Only assignments that read the local itself reach it (s += x
         * with no s = ... before): Python's UnboundLocalError. */
        if (t == IRT_UNSET && T->final)
            TERR(T, e, "local variable '%s' is read before any value is assigned to it",
                 T->f->locals[e->index].name);
        break;
    case IR_DIM:
        t = TACK_I64;
        break;
    case IR_SLOAD:
        type_indices(T, e->args, e->nargs);
        t = T->f->scratch[e->index].type;
        break;
    case IR_LOAD:
        type_indices(T, e->args, e->nargs);
        t = ir_value_type(T->f->params[e->index].type);
        break;
    case IR_ATOMIC: {
        type_indices(T, e->args, e->nargs);
        type_of(T, e->a);
        if (e->b) type_of(T, e->b);
        t = T->f->params[e->index].type;
        const char *op = ir_atomic_name(e->atomic);
        const char *pname = T->f->params[e->index].name;
        /* An augmented update (e->dim) is atomic because its element may be
         * another iteration's too: say so, as the user wrote no atomic. */
        if (e->dim && (t == TACK_BOOL || t == TACK_F16 ||
                       (ir_type_is_float(t) && e->atomic >= ATOM_AND && e->atomic <= ATOM_XOR)))
            TERR(T, e, "this update of '%s' may hit an element another iteration also updates "
                 "(its index is not this iteration's own), so it must be atomic, and atomic %s "
                 "does not work on %s arrays; %s", pname, op, ir_type_name(t),
                 t == TACK_F16 ? "accumulate into an f32 array and convert after"
                               : "use an integer array");
        else if (t == TACK_BOOL)
            TERR(T, e, "tack.atomic_%s() does not work on bool arrays", op);
        else if (t == TACK_F16)
            TERR(T, e, "tack.atomic_%s() does not work on f16 arrays (parameter '%s'): f16 is a "
                 "storage type; accumulate into an f32 array and convert after", op, pname);
        else if (ir_type_is_float(t) &&
                 (e->atomic == ATOM_AND || e->atomic == ATOM_OR || e->atomic == ATOM_XOR))
            TERR(T, e, "tack.atomic_%s() needs an integer array, not %s", op, ir_type_name(t));
        else if (ir_reduction_of_param(T->f, e->index) >= 0 && !ir_type_is_float(t) &&
                 ir_type_is_float(e->a->type))
            /* Python's s would become a float; truncating each value would
             * give a silently different number. */
            TERR(T, e, "reduction '%s' is an integer (%s, from its integer start) but is "
                 "combined with a float value here; start it as a float (%s = 0.0)", pname,
                 ir_type_name(t), pname);
        break;
    }
    case IR_BINOP:
        t = binop_type(T, e, type_of(T, e->a), type_of(T, e->b));
        break;
    case IR_UNOP: {
        ir_type a = type_of(T, e->a);
        if (e->op == OP_NOT) t = TACK_BOOL;
        else if (e->op == OP_INVERT && ir_type_is_float(a)) {
            TERR(T, e, "'~' needs an integer or bool operand, not %s", ir_type_name(settle(T, a)));
            t = IRT_UNSET;
        } else if (e->op == OP_INVERT) t = a;
        else t = a == TACK_BOOL ? TACK_I64 : a;
        break;
    }
    case IR_ANDOR:
    case IR_SELECT: {
        if (e->cond) type_of(T, e->cond);
        ir_type a = type_of(T, e->a), b = type_of(T, e->b);
        t = a == IRT_UNSET || b == IRT_UNSET ? IRT_UNSET : promote(T, a, b);
        break;
    }
    case IR_CAST:
        if (e->index_cast == 2) {
            if (ir_type_is_float(type_of(T, e->a)) || e->a->type == IRT_WEAK_FLOAT)
                TERR(T, e->a, "the seed of tack.rng(seed, i) must be an integer in 0..2**64-1, "
                     "not %s (a float seed would be truncated)", ir_type_name(settle(T, e->a->type)));
        } else if (e->index_cast) {
            type_indices(T, &e->a, 1);
        } else {
            type_of(T, e->a);
        }
        if (e->type == IRT_LIKE_PARAM) e->type = ir_value_type(T->f->params[e->index].type);
        return e->type;
    case IR_CALL:
        t = call_type(T, e);
        break;
    case IR_VECTOR: /* never survives lowering (the verifier says so) */
        break;
    case IR_INLINE:
        scan_block(T, e->body);
        t = e->index >= 0 ? T->f->locals[e->index].type : IRT_VOID;
        break;
    }
    e->type = t;
    return t;
}

static void join_local(typer *T, int l, ir_type t) {
    if (t == IRT_UNSET || T->settled) return;
    ir_type cur = T->f->locals[l].type;
    ir_type next = cur == IRT_UNSET ? t : promote(T, cur, t);
    if (next != cur) {
        T->f->locals[l].type = next;
        T->changed = 1;
    }
}

static void scan_block(typer *T, ir_block *b) {
    for (int i = 0; i < b->n && !T->failed; i++) {
        ir_stmt *s = b->stmts[i];
        switch (s->kind) {
        case IR_ASSIGN: {
            ir_type t = type_of(T, s->value);
            /* The loop's code steps the variable as an i64: j = 0.5 in
             * its body cannot make it a float.  (Types only widen, so a
             * float seen in any round is there in the end.) */
            if (T->loop_var[s->index] && t != IRT_UNSET &&
                promote(T, TACK_I64, t) != TACK_I64)
                TERR(T, s->value, "loop variable '%s' is assigned a %s value; loop variables "
                     "hold integers (use another name)", T->f->locals[s->index].name,
                     ir_type_name(settle(T, t)));
            join_local(T, s->index, t);
            break;
        }
        case IR_STORE:
        case IR_SSTORE:
            type_indices(T, s->indices, s->nindices);
            type_of(T, s->value);
            break;
        case IR_BOUNDS_FAIL:
        case IR_PRINT:
            for (int k = 0; k < s->nindices; k++) type_of(T, s->indices[k]);
            break;
        case IR_FOR:
            type_of(T, s->start);
            type_of(T, s->stop);
            type_of(T, s->step);
            T->loop_var[s->index] = 1;
            join_local(T, s->index, TACK_I64);
            break;
        case IR_IF:
        case IR_WHILE:
        case IR_EVAL:
            type_of(T, s->value);
            break;
        default:
            break;
        }
        scan_block(T, &s->body);
        scan_block(T, &s->orelse);
    }
}

/* ---- phase 2: concrete types and conversions ---- */

static ir_expr *fix(typer *T, ir_expr *e, ir_type want);
static void fix_block(typer *T, ir_block *b);

/* Converts a constant's value representation to type t. */
static void retype_const(ir_expr *e, ir_type t) {
    if (ir_type_is_float(t) && !ir_type_is_float(e->type)) e->f = (double)e->i;
    e->type = t;
}

/* A value about to be rounded to half (stored into an f16 array, or
 * tack.f16(x)), typed so that it is rounded once: an f64 stays f64 (a
 * rounding to f32 first could land on a tie between two halves); a float
 * literal is rounded here, from its exact value, to the f32 holding the
 * half (an expression of literals computes in the default float, as
 * anywhere); anything else becomes f32, which holds every integer that
 * does not overflow a half exactly. */
static ir_expr *half_operand(typer *T, ir_expr *e) {
    if (e->kind == IR_CONST && (e->type == IRT_WEAK_FLOAT || e->type == TACK_F64 ||
                                e->type == TACK_F32)) {
        double v = e->type == TACK_F32 ? (double)(float)e->f : e->f;
        e->f = (double)half_round(v);
        e->type = TACK_F32;
        return e;
    }
    int wide = e->type == TACK_F64 || e->type == IRT_WEAK_FLOAT; /* f64 or the default float */
    return fix(T, e, wide ? settle(T, e->type) : TACK_F32);
}

/* A comparison of an integer with a literal it cannot hold (x_u8 < 300,
 * x_u32 > -1) compares the values, as NumPy does: in i64, or u64 for a
 * large positive literal; the literal's own check then refuses only what
 * no integer type holds. */
static ir_type compare_literal(const ir_expr *e, ir_type common) {
    if (!concrete(common) || !ir_type_is_int(common) || common == TACK_BOOL) return common;
    for (int k = 0; k < 2; k++) {
        const ir_expr *lit = k ? e->b : e->a, *other = k ? e->a : e->b;
        int neg, huge;
        uint64_t mag;
        if (lit->type != IRT_WEAK_INT || other->type == IRT_WEAK_INT ||
            literal_value(lit, &neg, &mag, &huge, NULL, 0))
            continue;
        if (huge) return common;
        int fits_i64 = neg ? mag <= (uint64_t)INT64_MAX + 1 : mag <= (uint64_t)INT64_MAX;
        if (common == TACK_U64 && !neg) return common;
        if (fits_i64 && common != TACK_U64) return TACK_I64;
        if (!neg && !ir_type_is_signed(common)) return TACK_U64;
    }
    return common;
}

/* Gives `e` its settled type (children first), then converts it to `want`
 * (IRT_UNSET: keep).  Weak literal trees adopt `want` directly, so
 * x_f32 * (1 + 2) computes in f32. */
static ir_expr *fix(typer *T, ir_expr *e, ir_type want) {
    if (!e || T->failed) return e;
    int weak = is_weak(e->type);
    ir_type target = settle(T, e->type);
    if (weak && concrete(want) && want != TACK_BOOL) {
        /* A weak float never becomes an integer: keep float, cast after. */
        int keeps_float = e->type == IRT_WEAK_FLOAT && !ir_type_is_float(want);
        int needs_int = ir_type_is_float(want) &&
                        ((e->kind == IR_BINOP && e->op >= OP_AND && e->op <= OP_SHR) ||
                         (e->kind == IR_UNOP && e->op == OP_INVERT));
        if (!keeps_float && !needs_int) target = want;
    }
    if (e->type == IRT_WEAK_INT && concrete(target) && target != TACK_BOOL &&
        ir_type_is_int(target)) {
        char msg[320]; /* a literal the type cannot hold: NEP 50 (ir/literals.c) */
        if (literal_meets(e, target, msg, sizeof msg)) {
            TERR(T, e, "%s", msg);
            return e;
        }
    }
    switch (e->kind) {
    case IR_CONST:
        retype_const(e, target);
        break;
    case IR_PARAM:
    case IR_LOCAL:
    case IR_DIM:
        break;
    case IR_LOAD:
    case IR_SLOAD:
        for (int i = 0; i < e->nargs; i++) e->args[i] = fix(T, e->args[i], TACK_I64);
        break;
    case IR_ATOMIC:
        for (int i = 0; i < e->nargs; i++) e->args[i] = fix(T, e->args[i], TACK_I64);
        target = T->f->params[e->index].type;
        e->a = fix(T, e->a, target);
        if (e->b) e->b = fix(T, e->b, target);
        break;
    case IR_BINOP: {
        if (e->op >= OP_LT) {
            ir_type common = settle(T, promote(T, e->a->type, e->b->type));
            common = compare_literal(e, common);
            e->a = fix(T, e->a, common);
            e->b = fix(T, e->b, common);
            target = TACK_BOOL;
        } else if (e->op == OP_DIV) {
            e->a = fix(T, e->a, target);
            e->b = fix(T, e->b, target);
        } else {
            ir_type operand = target;
            e->a = fix(T, e->a, operand);
            e->b = fix(T, e->b, operand);
        }
        break;
    }
    case IR_UNOP:
        if (e->op == OP_NOT) {
            e->a = fix(T, e->a, TACK_BOOL);
            target = TACK_BOOL;
        } else {
            e->a = fix(T, e->a, target);
        }
        break;
    case IR_ANDOR:
    case IR_SELECT:
        if (e->cond) e->cond = fix(T, e->cond, TACK_BOOL);
        e->a = fix(T, e->a, target);
        e->b = fix(T, e->b, target);
        break;
    case IR_CAST:
        e->a = fix(T, e->a, IRT_UNSET);
        target = e->type;
        break;
    case IR_VECTOR:
        break;
    case IR_INLINE:
        fix_block(T, e->body);
        target = e->index >= 0 ? T->f->locals[e->index].type : IRT_VOID;
        if (target == IRT_VOID && concrete(want)) {
            TERR(T, e, "this function call returns no value");
            return e;
        }
        break;
    case IR_CALL:
        switch (e->fn) {
        case INTR_ISNAN: case INTR_ISINF: case INTR_ISFINITE:
            e->args[0] = fix(T, e->args[0], IRT_UNSET);
            target = TACK_BOOL;
            break;
        case INTR_LDEXP: /* the exponent keeps its integer type */
            e->args[0] = fix(T, e->args[0], target);
            e->args[1] = fix(T, e->args[1], IRT_UNSET);
            break;
        case INTR_FREXP_EXP:
            e->args[0] = fix(T, e->args[0], float_of(T, e->args[0]->type));
            target = TACK_I32;
            break;
        case INTR_ROUND:
            e->args[0] = fix(T, e->args[0], IRT_UNSET);
            target = ir_type_is_float(e->args[0]->type) || e->args[0]->type == TACK_BOOL
                         ? TACK_I64 : e->args[0]->type;
            break;
        case INTR_F16: {
            ir_expr *a = half_operand(T, e->args[0]);
            target = TACK_F32;
            if (a->kind == IR_CONST && a->type == TACK_F32) {
                /* A constant: the half's value now (an integer literal
                 * has not been rounded yet; rounding again changes no half). */
                a->f = (double)half_round(a->f);
                e = a;
            } else {
                e->args[0] = a;
            }
            break;
        }
        default:
            for (int i = 0; i < e->nargs; i++) e->args[i] = fix(T, e->args[i], target);
            break;
        }
        break;
    }
    e->type = target;
    if (concrete(want) && want != e->type) return ir_cast(T->f, e, want);
    return e;
}

static void check_loop_bound(typer *T, ir_expr *e) {
    if (e && ir_type_is_float(e->type))
        TERR(T, e, "range() arguments must be integers, not %s", ir_type_name(settle(T, e->type)));
}

static void fix_block(typer *T, ir_block *b) {
    for (int i = 0; i < b->n && !T->failed; i++) {
        ir_stmt *s = b->stmts[i];
        switch (s->kind) {
        case IR_ASSIGN:
            s->value = fix(T, s->value, T->f->locals[s->index].type);
            break;
        case IR_SSTORE:
            for (int k = 0; k < s->nindices; k++) s->indices[k] = fix(T, s->indices[k], TACK_I64);
            s->value = fix(T, s->value, T->f->scratch[s->index].type);
            break;
        case IR_STORE:
            for (int k = 0; k < s->nindices; k++) s->indices[k] = fix(T, s->indices[k], TACK_I64);
            if (T->f->params[s->index].type == TACK_F16) s->value = half_operand(T, s->value);
            else s->value = fix(T, s->value, T->f->params[s->index].type);
            break;
        case IR_FOR:
            check_loop_bound(T, s->start);
            check_loop_bound(T, s->stop);
            check_loop_bound(T, s->step);
            s->start = fix(T, s->start, TACK_I64);
            s->stop = fix(T, s->stop, TACK_I64);
            s->step = fix(T, s->step, TACK_I64);
            break;
        case IR_IF:
        case IR_WHILE:
            s->value = fix(T, s->value, TACK_BOOL);
            break;
        case IR_EVAL:
            s->value = fix(T, s->value, IRT_UNSET);
            break;
        case IR_BOUNDS_FAIL:
            for (int k = 0; k < s->nindices; k++) s->indices[k] = fix(T, s->indices[k], TACK_I64);
            break;
        case IR_PRINT: /* each value keeps its own type */
            for (int k = 0; k < s->nindices; k++) s->indices[k] = fix(T, s->indices[k], IRT_UNSET);
            break;
        default:
            break;
        }
        fix_block(T, &s->body);
        fix_block(T, &s->orelse);
    }
}

tack_status pass_infer_types(ir_func *f, tack_error *err) {
    typer T = {f, err, 0, 0, 0, 0, calloc(f->nlocals ? f->nlocals : 1, 1)};
    if (!T.loop_var) {
        err->status = TACK_ERR_NOMEM;
        snprintf(err->message, sizeof err->message, "out of memory typing kernel '%s'", f->name);
        return TACK_ERR_NOMEM;
    }
    for (int i = 0; i < f->nlocals; i++) f->locals[i].type = IRT_UNSET;
    /* A tuple of float literals takes the kernel's float type, as they do. */
    for (int i = 0; i < f->nscratch; i++)
        if (f->scratch[i].type == IRT_WEAK_FLOAT) f->scratch[i].type = f->default_float;
    f->locals[f->loop_var].type = TACK_I64;
    T.loop_var[f->loop_var] = 1;
    /* The per-access checks' counts are only ever updated from themselves. */
    for (int l = 0; l < f->nlocals; l++)
        if (ir_bounds_flag_site(f, l) >= 0) f->locals[l].type = TACK_I64;
    for (int d = 0; d < f->ninner; d++) {
        f->locals[f->inner_var[d]].type = TACK_I64;
        T.loop_var[f->inner_var[d]] = 1;
        type_of(&T, f->inner_stop[d]);
    }
    type_of(&T, f->start);
    type_of(&T, f->stop);
    type_of(&T, f->step);
    if (f->stop_in_body) type_of(&T, f->stop_in_body);
    /* Each round can only widen a local's type, so this terminates; the
     * bound is a guard. */
    for (int round = 0; round < 4 * f->nlocals + 4 && !T.failed; round++) {
        T.changed = 0;
        scan_block(&T, &f->body);
        if (!T.changed) break;
    }
    /* Now that every local has its type: reads that nothing typed (and
     * loop variables given floats before their loop). */
    if (!T.failed) {
        T.final = 1;
        scan_block(&T, &f->body);
        T.final = 0;
    }
    if (!T.failed) {
        check_loop_bound(&T, f->start);
        check_loop_bound(&T, f->stop);
        check_loop_bound(&T, f->step);
        for (int d = 0; d < f->ninner; d++) check_loop_bound(&T, f->inner_stop[d]);
    }
    if (T.failed) {
        free(T.loop_var);
        return err->status;
    }
    for (int i = 0; i < f->nlocals; i++) f->locals[i].type = settle(&T, f->locals[i].type);
    for (int d = 0; d < f->ninner; d++) f->locals[f->inner_var[d]].type = TACK_I64;
    /* Re-type reads of locals with their settled types.  A local that held
     * only a literal (x = y = 0 goes through one) settles to i64 here; a
     * local it was assigned to keeps the type it has (as x = 0 would) and
     * the assignment converts. */
    T.settled = 1;
    scan_block(&T, &f->body);
    f->start = fix(&T, f->start, TACK_I64);
    f->stop = fix(&T, f->stop, TACK_I64);
    f->step = fix(&T, f->step, TACK_I64);
    if (f->stop_in_body) f->stop_in_body = fix(&T, f->stop_in_body, TACK_I64);
    for (int d = 0; d < f->ninner; d++) f->inner_stop[d] = fix(&T, f->inner_stop[d], TACK_I64);
    fix_block(&T, &f->body);
    free(T.loop_var);
    return T.failed ? err->status : TACK_OK;
}
