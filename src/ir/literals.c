/* literals.c - integer literals meeting a typed value (NumPy's NEP 50).
 *
 * A tree of integer literals (weak ints: `300`, `2**32`, `-128`,
 * `0x5c721fd808f616b6`) takes the type of the value it meets.  Inference
 * asks here first: the tree is folded with Python's arithmetic in 128
 * bits, and a value the type cannot hold is a CompileError (NumPy raises
 * OverflowError), never wrapped silently; one that fits replaces the tree,
 * so `x_u8 + 600 // 3` adds 200, not (600 mod 256) // 3. */
#include <stdio.h>
#include <string.h>

#include "ir/ir.h"

__extension__ typedef __int128 i128;
#define I128_LIMIT ((i128)1 << 120) /* beyond every 64-bit type: "too large" */

/* 0 and *v, 1 when e is not a literal tree, 2 when it folds beyond 2**120
 * (still a literal, just far too large for any type). */
static int fold(const ir_expr *e, i128 *v) {
    if (e->kind == IR_CONST) {
        if (e->type != IRT_WEAK_INT && !(ir_type_is_int(e->type) && e->type != TACK_BOOL)) return 1;
        *v = e->type == TACK_U64 ? (i128)(uint64_t)e->i : (i128)e->i;
        return 0;
    }
    if (e->kind == IR_UNOP && (e->op == OP_NEG || e->op == OP_POS || e->op == OP_INVERT)) {
        int rc = fold(e->a, v);
        if (rc) return rc;
        *v = e->op == OP_NEG ? -*v : e->op == OP_INVERT ? ~*v : *v;
        return 0;
    }
    if (e->kind != IR_BINOP || e->op > OP_SHR || e->op == OP_DIV) return 1;
    i128 a, b;
    int ra = fold(e->a, &a), rb = fold(e->b, &b);
    if (ra == 1 || rb == 1) return 1;
    if (ra || rb) return 2;
    switch (e->op) {
    case OP_ADD: *v = a + b; break;
    case OP_SUB: *v = a - b; break;
    case OP_MUL:
        if (__builtin_mul_overflow(a, b, v)) return 2;
        break;
    case OP_FLOORDIV:
    case OP_MOD: {
        if (b == 0) return 1; /* the kernel's own division by zero */
        i128 q = a / b, r = a % b;
        if (r != 0 && ((r < 0) != (b < 0))) {
            q -= 1;
            r += b;
        }
        *v = e->op == OP_MOD ? r : q;
        break;
    }
    case OP_POW: {
        if (b < 0) return 1; /* a float in Python */
        i128 r = 1;
        for (i128 k = 0; k < b; k++)
            if (__builtin_mul_overflow(r, a, &r) || r > I128_LIMIT || r < -I128_LIMIT) return 2;
        *v = r;
        break;
    }
    case OP_AND: *v = a & b; break;
    case OP_OR: *v = a | b; break;
    case OP_XOR: *v = a ^ b; break;
    case OP_SHL:
        if (b < 0) return 1;
        if (b > 110 || (a << b) > I128_LIMIT || (a << b) < -I128_LIMIT) return 2;
        *v = a << b;
        break;
    case OP_SHR:
        if (b < 0) return 1;
        *v = b > 126 ? (a < 0 ? -1 : 0) : a >> b;
        break;
    default:
        return 1;
    }
    return *v > I128_LIMIT || *v < -I128_LIMIT ? 2 : 0;
}

static int fits(i128 v, ir_type t) {
    int bits = ir_type_bits(t);
    if (ir_type_is_signed(t)) return v >= -((i128)1 << (bits - 1)) && v < ((i128)1 << (bits - 1));
    return v >= 0 && v < ((i128)1 << bits);
}

static void text_of(i128 v, char *buf, size_t size) {
    char digits[48];
    int n = 0, neg = v < 0;
    unsigned __int128 u = neg ? -(unsigned __int128)v : (unsigned __int128)v;
    do {
        digits[n++] = (char)('0' + (int)(u % 10));
        u /= 10;
    } while (u && n < 47);
    size_t k = 0;
    if (neg && k + 1 < size) buf[k++] = '-';
    while (n && k + 1 < size) buf[k++] = digits[--n];
    buf[k] = 0;
}

int literal_meets(ir_expr *e, ir_type t, char *msg, size_t size) {
    i128 v = 0;
    int rc = fold(e, &v);
    if (rc == 1) return 0;
    /* A negative literal with an unsigned value (x_u8 % -5) keeps the
     * two's-complement meaning it had (tests/c/test_gpu_emit.c relies on
     * it); NumPy refuses it: a known gap. */
    if (rc == 0 && v < 0 && !ir_type_is_signed(t) && v >= -((i128)1 << ir_type_bits(t))) return 0;
    if (rc == 0 && fits(v, t)) {
        if (e->kind != IR_CONST) { /* the folded value, computed as Python does */
            e->kind = IR_CONST;
            e->a = e->b = NULL;
        }
        e->i = (int64_t)v;
        e->f = 0;
        return 0;
    }
    char text[48] = "a value beyond 2**120";
    if (rc == 0) text_of(v, text, sizeof text);
    snprintf(msg, size, "the integer literal %s does not fit in %s, the type it meets here "
             "(NumPy raises OverflowError for it, NEP 50): cast the other operand to a wider "
             "type (tack.i64(...)) or change the literal", text, ir_type_name(t));
    return -1;
}

int literal_value(const ir_expr *e, int *negative, uint64_t *magnitude, int *huge, char *text,
                  size_t size) {
    i128 v = 0;
    int rc = fold(e, &v);
    if (rc == 1) return -1;
    if (text) {
        if (rc == 0) text_of(v, text, size);
        else snprintf(text, size, "a value beyond 2**120");
    }
    *huge = rc == 2 || v > (i128)UINT64_MAX || v < -(i128)UINT64_MAX;
    *negative = v < 0;
    *magnitude = (uint64_t)(v < 0 ? -v : v);
    return 0;
}
