/* quaternions.c - Warp's quaternions as values: a 4-component IR_VECTOR
 * marked `quat`, (x, y, z, w) with w the real part.  They come from arrays
 * of tack.quatf / quatd, from tack.quat(...), tack.quatf(...) and the
 * tack.quat_* functions, and keep the mark through locals, device-function
 * returns, + and -, scaling, negation, normalize and choices.  What the
 * mark changes is '*': two quaternions multiply as Hamilton's product (the
 * rotation b, then a), as in Warp; a quaternion times a scalar scales it.
 * Nothing after lowering sees a quaternion. */
#include "lower_internal.h"

int qt_is(const ir_expr *e) { return e && e->kind == IR_VECTOR && e->quat; }

int qt_param(lowerer *L, int param) {
    return param >= 0 && param < L->f->nparams && L->f->params[param].vec_width == TACK_QUAT_WIDTH;
}

static ir_expr *part(lowerer *L, const ir_expr *q, int k, const expr *at) {
    return lower_read_local(L, q->args[k]->index, at);
}

static ir_expr *product(lowerer *L, const ir_expr *a, int i, const ir_expr *b, int j,
                        const expr *at) {
    return lower_bin(L, OP_MUL, part(L, a, i, at), part(L, b, j, at), at);
}

/* a_w b_v + b_w a_v + a_v x b_v, and a_w b_w - a_v . b_v */
static ir_expr *hamilton(lowerer *L, ir_expr *a, ir_expr *b, const expr *at) {
    ir_expr *out = vec_new(L, 4, at);
    if (!out || vec_eval(L, out->body, a) || vec_eval(L, out->body, b)) return NULL;
    out->quat = 1;
    enum { X, Y, Z, W };
    static const int next[3] = {Y, Z, X}, after[3] = {Z, X, Y};
    for (int k = 0; k < 3; k++) {
        ir_expr *v = lower_bin(L, OP_ADD, product(L, a, W, b, k, at), product(L, b, W, a, k, at), at);
        v = lower_bin(L, OP_ADD, v, product(L, a, next[k], b, after[k], at), at);
        v = lower_bin(L, OP_SUB, v, product(L, a, after[k], b, next[k], at), at);
        if (lower_set_local(L, out->body, out->args[k]->index, v, at)) return NULL;
    }
    ir_expr *w = product(L, a, W, b, W, at);
    for (int k = 0; k < 3; k++) w = lower_bin(L, OP_SUB, w, product(L, a, k, b, k, at), at);
    return lower_set_local(L, out->body, out->args[W]->index, w, at) ? NULL : out;
}

ir_expr *qt_binop(lowerer *L, ir_op op, ir_expr *a, ir_expr *b, const expr *at) {
    int vec_a = vec_is(a) != 0, vec_b = vec_is(b) != 0;
    if (op == OP_MUL && qt_is(a) && qt_is(b)) return hamilton(L, a, b, at);
    if (vec_a && vec_b && (!qt_is(a) || !qt_is(b)) && (op == OP_MUL || op == OP_DIV)) {
        ERR(L, at->line, at->col, "a quaternion and a vector cannot be multiplied or divided: "
            "make both quaternions (tack.quat(v)) for Hamilton's product, or use "
            "tack.cw_mul / tack.cw_div for a product component by component");
        return NULL;
    }
    int keeps = op == OP_ADD || op == OP_SUB || (op == OP_MUL && (!vec_a || !vec_b)) ||
                (op == OP_DIV && !vec_b);
    if (!keeps) {
        ERR(L, at->line, at->col, "this operator does not apply to quaternions (+, - and * of "
            "two quaternions; *, / by a scalar)");
        return NULL;
    }
    ir_expr *out = vec_binop(L, op, a, b, at);
    if (out) out->quat = 1;
    return out;
}
