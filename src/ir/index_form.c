/* index_form.c - integer indices as linear forms of the launch variables
 * (see ir.h).  A form is exact in i64: an axis-free sum with a scalar (n + 1
 * with n an i32) would be computed in the parameter's narrower type and
 * might wrap, so only a bare scalar or constant arithmetic may stand
 * without the launch variable. */
#include "ir.h"

const ir_index_form ir_form_unknown = {0, -1, -1, 1, 0};

static ir_index_form add(ir_index_form a, ir_index_form b) {
    ir_index_form r = ir_form_unknown;
    if (!a.ok || !b.ok || (a.axis >= 0 && b.axis >= 0) || (a.scalar >= 0 && b.scalar >= 0) ||
        __builtin_add_overflow(a.c, b.c, &r.c))
        return ir_form_unknown;
    r.axis = a.axis >= 0 ? a.axis : b.axis;
    r.scalar = a.scalar >= 0 ? a.scalar : b.scalar;
    r.sign = a.scalar >= 0 ? a.sign : b.scalar >= 0 ? b.sign : 1;
    if (r.axis < 0 && r.scalar >= 0) return ir_form_unknown;
    r.ok = 1;
    return r;
}

/* -b inside a - b: the launch variable cannot be negated. */
static ir_index_form negate(ir_index_form b) {
    if (!b.ok || b.axis >= 0 || b.c == INT64_MIN) return ir_form_unknown;
    b.c = -b.c;
    if (b.scalar >= 0) b.sign = -b.sign;
    return b;
}

ir_index_form ir_index_form_of(const ir_func *f, const ir_index_form *known, const ir_expr *e) {
    ir_index_form r = ir_form_unknown;
    switch (e->kind) {
    case IR_CONST:
        if (e->type != IRT_WEAK_INT) return ir_form_unknown; /* a typed value might wrap */
        r.ok = 1;
        r.c = e->i;
        return r;
    case IR_PARAM:
        if (f->params[e->index].role != ROLE_SCALAR) return ir_form_unknown;
        r.ok = 1;
        r.scalar = e->index;
        return r;
    case IR_LOCAL:
        return known[e->index];
    case IR_INLINE: /* its body was walked first: the result local */
        return e->index >= 0 ? known[e->index] : ir_form_unknown;
    case IR_CAST:
        r = ir_index_form_of(f, known, e->a);
        return e->type == TACK_I64 && r.ok && r.axis >= 0 ? r : ir_form_unknown;
    case IR_UNOP:
        if (e->op == OP_POS) return ir_index_form_of(f, known, e->a);
        if (e->op != OP_NEG) return ir_form_unknown;
        r = ir_index_form_of(f, known, e->a);
        return r.ok && r.scalar < 0 ? negate(r) : ir_form_unknown;
    case IR_BINOP:
        if (e->op == OP_ADD)
            return add(ir_index_form_of(f, known, e->a), ir_index_form_of(f, known, e->b));
        if (e->op == OP_SUB)
            return add(ir_index_form_of(f, known, e->a), negate(ir_index_form_of(f, known, e->b)));
        if ((e->op == OP_SHR || e->op == OP_AND) && e->b->kind == IR_CONST &&
            e->b->type == IRT_WEAK_INT &&
            e->b->i == (e->op == OP_SHR ? IR_WORKGROUP_SHIFT : IR_WORKGROUP - 1)) {
            /* The bare launch variable's group or lane (an i64: the shift
             * is a floor division, the mask a remainder in 0..255). */
            r = ir_index_form_of(f, known, e->a);
            if (!r.ok || r.axis != 0 || r.scalar >= 0 || r.c) return ir_form_unknown;
            r.axis = e->op == OP_SHR ? IR_AXIS_GROUP : IR_AXIS_LANE;
            return r;
        }
        return ir_form_unknown;
    default:
        return ir_form_unknown;
    }
}

int ir_same_form(ir_index_form a, ir_index_form b) {
    return a.ok && b.ok && a.axis == b.axis && a.scalar == b.scalar &&
           (a.scalar < 0 || a.sign == b.sign) && a.c == b.c;
}

static int forget_expr(void *ctx, const ir_expr *e, const ir_stmt *value_of) {
    (void)value_of;
    ir_index_form *known = ctx;
    if (e->kind == IR_INLINE && e->index >= 0) known[e->index] = ir_form_unknown;
    return 0;
}

static int forget_stmt(void *ctx, const ir_stmt *s) {
    ir_index_form *known = ctx;
    if (s->kind == IR_ASSIGN || s->kind == IR_FOR) known[s->index] = ir_form_unknown;
    return 0;
}

#define FORGET(known) (&(ir_walker){.expr = forget_expr, .stmt = forget_stmt, .ctx = (known)})

void ir_forget_expr(ir_index_form *known, const ir_expr *e) { ir_walk_expr(FORGET(known), e); }

void ir_forget_stmt(ir_index_form *known, const ir_stmt *s) { ir_walk_stmt(FORGET(known), s); }

void ir_forget_block(ir_index_form *known, const ir_block *b) { ir_walk_block(FORGET(known), b); }
