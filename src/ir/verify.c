/* verify.c - the IR verifier, run at every pass boundary.  A failure is a
 * bug in Tack (never the user's): it names the pass so it can be found. */
#include "ir.h"

#include <stdarg.h>
#include <stdio.h>

/* One enclosing IR_INLINE, linked through the C stack: nesting is bounded by
 * lowering (expression depth times call depth), not by the verifier. */
typedef struct enclosing_inline {
    int id;
    const struct enclosing_inline *outer;
} enclosing_inline;

typedef struct verifier {
    const ir_func *f;
    const char *pass;
    int typed;
    tack_error *err;
    int failed;
    int loop_depth;
    const enclosing_inline *inlines; /* innermost first */
} verifier;

static void fail(verifier *v, int line, const char *fmt, ...) {
    if (v->failed++) return;
    char what[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    v->err->status = TACK_ERR_INTERNAL;
    v->err->lineno = 0;
    snprintf(v->err->message, sizeof v->err->message,
             "internal error: IR verification failed after pass '%s' in kernel '%s' "
             "(source line %d): %s",
             v->pass, v->f->name, line, what);
}

static int concrete(ir_type t) { return t >= 0 && t < TACK_DTYPE_COUNT; }

static void check_type(verifier *v, const ir_expr *e) {
    if (e->kind == IR_INLINE && e->index < 0) return; /* a call without a value */
    if (v->typed && !concrete(e->type))
        fail(v, e->line, "expression of kind %d has no concrete type (%s)", e->kind,
             ir_type_name(e->type));
    /* f16 is only an array's element type: values are f32 (ir.h). */
    if (e->type == TACK_F16) fail(v, e->line, "expression of kind %d typed f16", e->kind);
}

static void expr(verifier *v, const ir_expr *e);
static void block(verifier *v, const ir_block *b);

/* A texture sample's inline (ir.h): a sampled array parameter, and a body
 * that opens with the three coordinates' assignments to locals. */
static int sample_shape(const verifier *v, const ir_expr *e) {
    const ir_func *f = v->f;
    if (e->sample < 0 || e->sample >= f->nparams || !f->params[e->sample].sampled ||
        f->params[e->sample].role != ROLE_ARRAY || !e->body || e->body->n < 3)
        return 0;
    for (int d = 0; d < 3; d++) {
        const ir_stmt *s = e->body->stmts[d];
        if (s->kind != IR_ASSIGN || s->index < 0 || s->index >= f->nlocals) return 0;
    }
    return 1;
}

/* The children each kind has.  Any other must be absent: some passes walk
 * every child of every node (shape.c does), so a stray one would be read
 * unverified; IR from the disk cache can carry anything. */
enum { C_A = 1, C_B = 2, C_COND = 4, C_ARGS = 8, C_BODY = 16, C_ORELSE = 32, C_RANGE = 64,
       C_VALUE = 128 };

static int expr_children(const ir_expr *e) {
    switch (e->kind) {
    case IR_LOAD: case IR_CALL: case IR_SLOAD: return C_ARGS;
    case IR_ATOMIC: return C_ARGS | C_A | (e->atomic == ATOM_COMPARE_EXCHANGE ? C_B : 0);
    case IR_BINOP: case IR_ANDOR: return C_A | C_B;
    case IR_SELECT: return C_A | C_B | C_COND;
    case IR_UNOP: case IR_CAST: return C_A;
    case IR_VECTOR: return C_ARGS | C_BODY;
    case IR_INLINE: return C_BODY;
    default: return 0;
    }
}

static int stmt_children(const ir_stmt *s) {
    switch (s->kind) {
    case IR_ASSIGN: case IR_EVAL: return C_VALUE;
    case IR_STORE: case IR_SSTORE: return C_VALUE | C_ARGS;
    case IR_IF: case IR_WHILE: return C_VALUE | C_BODY | C_ORELSE;
    case IR_FOR: return C_RANGE | C_BODY;
    case IR_BOUNDS_FAIL: case IR_PRINT: return C_ARGS;
    default: return 0;
    }
}

static void array_param(verifier *v, int index, int line) {
    if (index < 0 || index >= v->f->nparams)
        fail(v, line, "parameter index %d out of range", index);
    else if (v->f->params[index].role != ROLE_ARRAY)
        fail(v, line, "parameter '%s' used as an array but not an array",
             v->f->params[index].name);
}

/* A scratch array's index, and its element type where typed. */
static void scratch_access(verifier *v, int index, ir_type t, int line) {
    if (index < 0 || index >= v->f->nscratch) fail(v, line, "scratch array %d out of range", index);
    else if (v->typed && t != v->f->scratch[index].type)
        fail(v, line, "%s access to scratch array '%s' of %s", ir_type_name(t),
             v->f->scratch[index].name, ir_type_name(v->f->scratch[index].type));
}

static void index_list(verifier *v, ir_expr *const *idx, int n, int line) {
    for (int i = 0; i < n; i++) {
        if (!idx[i]) {
            fail(v, line, "missing index");
            continue;
        }
        expr(v, idx[i]);
        if (v->typed && !ir_type_is_int(idx[i]->type) && idx[i]->type != TACK_BOOL)
            fail(v, line, "index of type %s", ir_type_name(idx[i]->type));
    }
}

static void expr(verifier *v, const ir_expr *e) {
    if (!e) {
        fail(v, 0, "missing expression");
        return;
    }
    check_type(v, e);
    /* Inference keeps a literal's and a cast's own type (it computes every
     * other node's), so those must be types already. */
    if (e->kind == IR_CONST && !concrete(e->type) && e->type != IRT_WEAK_INT &&
        e->type != IRT_WEAK_FLOAT)
        fail(v, e->line, "literal of type %s", ir_type_name(e->type));
    if (e->kind == IR_CAST ? !concrete(e->type) && e->type != IRT_LIKE_PARAM
                           : e->type == IRT_LIKE_PARAM)
        fail(v, e->line, "expression of kind %d typed %s", e->kind, ir_type_name(e->type));
    int has = (e->a ? C_A : 0) | (e->b ? C_B : 0) | (e->cond ? C_COND : 0) |
              (e->args || e->nargs ? C_ARGS : 0) | (e->body ? C_BODY : 0);
    if (has & ~expr_children(e)) {
        fail(v, e->line, "expression of kind %d has children its kind does not", e->kind);
        return;
    }
    if (e->sample != -1 && (e->kind != IR_INLINE || !sample_shape(v, e))) {
        fail(v, e->line, "expression of kind %d marked as texture %d's sample wrongly", e->kind,
             e->sample);
        return;
    }
    switch (e->kind) {
    case IR_CONST:
        break;
    case IR_PARAM:
        if (e->index < 0 || e->index >= v->f->nparams)
            fail(v, e->line, "parameter index %d out of range", e->index);
        else if (v->f->params[e->index].role != ROLE_SCALAR)
            fail(v, e->line, "parameter '%s' read as a scalar", v->f->params[e->index].name);
        break;
    case IR_LOCAL:
        if (e->index < 0 || e->index >= v->f->nlocals)
            fail(v, e->line, "local index %d out of range", e->index);
        else if (v->typed && e->type != v->f->locals[e->index].type)
            fail(v, e->line, "local '%s' read as %s but has type %s",
                 v->f->locals[e->index].name, ir_type_name(e->type),
                 ir_type_name(v->f->locals[e->index].type));
        break;
    case IR_DIM:
        array_param(v, e->index, e->line);
        break;
    case IR_LOAD:
        array_param(v, e->index, e->line);
        index_list(v, e->args, e->nargs, e->line);
        if (v->typed && e->index >= 0 && e->index < v->f->nparams &&
            e->type != ir_value_type(v->f->params[e->index].type))
            fail(v, e->line, "load type %s differs from the array's %s",
                 ir_type_name(e->type), ir_type_name(v->f->params[e->index].type));
        break;
    case IR_SLOAD:
        scratch_access(v, e->index, e->type, e->line);
        index_list(v, e->args, e->nargs, e->line);
        break;
    case IR_ATOMIC:
        array_param(v, e->index, e->line);
        index_list(v, e->args, e->nargs, e->line);
        expr(v, e->a);
        if (e->atomic == ATOM_COMPARE_EXCHANGE) expr(v, e->b);
        /* A product has no atomic form a user can call: reductions only. */
        if (e->atomic == ATOM_MUL && e->index >= 0 && e->index < v->f->nparams &&
            ir_reduction_of_param(v->f, e->index) < 0)
            fail(v, e->line, "a product update of an array that is not a reduction");
        if (v->typed && e->index >= 0 && e->index < v->f->nparams) {
            ir_type t = v->f->params[e->index].type;
            if (e->type != t || (e->a && e->a->type != t) ||
                (e->atomic == ATOM_COMPARE_EXCHANGE && e->b && e->b->type != t))
                fail(v, e->line, "atomic operands differ from the array's %s", ir_type_name(t));
        }
        break;
    case IR_BINOP:
        expr(v, e->a);
        expr(v, e->b);
        if (v->typed && e->a && e->b && e->a->type != e->b->type &&
            e->op != OP_SHL && e->op != OP_SHR && e->op != OP_POW)
            fail(v, e->line, "operands of types %s and %s", ir_type_name(e->a->type),
                 ir_type_name(e->b->type));
        if (v->typed && e->op >= OP_LT && e->type != TACK_BOOL)
            fail(v, e->line, "comparison of type %s", ir_type_name(e->type));
        break;
    case IR_UNOP:
    case IR_CAST:
        if (e->kind == IR_CAST && e->type == IRT_LIKE_PARAM &&
            (e->index < 0 || e->index >= v->f->nparams))
            fail(v, e->line, "cast to the type of parameter %d, out of range", e->index);
        expr(v, e->a);
        break;
    case IR_ANDOR:
    case IR_SELECT:
        if (e->kind == IR_SELECT) {
            expr(v, e->cond);
            if (v->typed && e->cond && e->cond->type != TACK_BOOL)
                fail(v, e->line, "condition of type %s", ir_type_name(e->cond->type));
        }
        expr(v, e->a);
        expr(v, e->b);
        if (v->typed && e->a && e->b && (e->a->type != e->type || e->b->type != e->type))
            fail(v, e->line, "branches of types %s and %s for a %s result",
                 ir_type_name(e->a->type), ir_type_name(e->b->type), ir_type_name(e->type));
        break;
    case IR_CALL:
        if (e->fn < 0 || e->fn >= INTR_COUNT) fail(v, e->line, "unknown intrinsic");
        for (int i = 0; i < e->nargs; i++) expr(v, e->args[i]);
        if (e->fn >= 0 && e->fn < INTR_COUNT &&
            e->nargs != (ir_intrinsic_nargs(e->fn) > 0 ? ir_intrinsic_nargs(e->fn) : 2))
            fail(v, e->line, "%s() with %d arguments", ir_intrinsic_name(e->fn), e->nargs);
        else if (v->typed && e->fn == INTR_F16 && e->args[0] &&
                 (e->type != TACK_F32 || (e->args[0]->type != TACK_F32 && e->args[0]->type != TACK_F64)))
            fail(v, e->line, "f16() of %s typed %s", ir_type_name(e->args[0]->type),
                 ir_type_name(e->type));
        break;
    case IR_VECTOR:
        fail(v, e->line, "a vector value survived lowering");
        break;
    case IR_INLINE: {
        if (!e->body) {
            fail(v, e->line, "inlined call without a body");
            break;
        }
        if (e->index >= v->f->nlocals || e->index < -1)
            fail(v, e->line, "inlined call's result local %d out of range", e->index);
        else if (v->typed && e->index >= 0 && e->type != v->f->locals[e->index].type)
            fail(v, e->line, "inlined call typed %s but its result is %s", ir_type_name(e->type),
                 ir_type_name(v->f->locals[e->index].type));
        /* break/continue never cross a function boundary. */
        int depth = v->loop_depth;
        v->loop_depth = 0;
        enclosing_inline here = {e->inline_id, v->inlines};
        v->inlines = &here;
        block(v, e->body);
        v->inlines = here.outer;
        v->loop_depth = depth;
        break;
    }
    }
    if (e->src < 0 || e->src >= (v->f->nsources ? v->f->nsources : 1))
        fail(v, e->line, "source index %d out of range", e->src);
}

static void stmt(verifier *v, const ir_stmt *s) {
    int has = (s->value ? C_VALUE : 0) | (s->indices || s->nindices ? C_ARGS : 0) |
              (s->start || s->stop || s->step ? C_RANGE : 0) | (s->body.n ? C_BODY : 0) |
              (s->orelse.n ? C_ORELSE : 0);
    if (has & ~stmt_children(s)) {
        fail(v, s->line, "statement of kind %d has children its kind does not", s->kind);
        return;
    }
    switch (s->kind) {
    case IR_ASSIGN:
        if (s->index < 0 || s->index >= v->f->nlocals) {
            fail(v, s->line, "assignment to local %d out of range", s->index);
            break;
        }
        expr(v, s->value);
        if (v->typed && s->value && s->value->type != v->f->locals[s->index].type)
            fail(v, s->line, "assigning %s to local '%s' of type %s",
                 ir_type_name(s->value->type), v->f->locals[s->index].name,
                 ir_type_name(v->f->locals[s->index].type));
        break;
    case IR_STORE:
        array_param(v, s->index, s->line);
        index_list(v, s->indices, s->nindices, s->line);
        expr(v, s->value);
        /* Into f16, an f32 or an f64 (rounded once to half by the store). */
        if (v->typed && s->value && s->index >= 0 && s->index < v->f->nparams &&
            (v->f->params[s->index].type == TACK_F16
                 ? s->value->type != TACK_F32 && s->value->type != TACK_F64
                 : s->value->type != v->f->params[s->index].type))
            fail(v, s->line, "storing %s into an array of %s", ir_type_name(s->value->type),
                 ir_type_name(v->f->params[s->index].type));
        break;
    case IR_SSTORE:
        index_list(v, s->indices, s->nindices, s->line);
        expr(v, s->value);
        if (s->value) scratch_access(v, s->index, s->value->type, s->line);
        break;
    case IR_PRINT:
        if (!s->texts) {
            fail(v, s->line, "print without its texts");
            break;
        }
        for (int i = 0; i < s->nindices; i++) expr(v, s->indices[i]);
        for (int i = 0; i <= s->nindices; i++)
            if (!s->texts[i]) fail(v, s->line, "print without its texts");
        break;
    case IR_BARRIER:
        if (!v->f->collective) fail(v, s->line, "a barrier in a kernel not marked collective");
        break;
    case IR_IF:
    case IR_WHILE:
        expr(v, s->value);
        if (v->typed && s->value && s->value->type != TACK_BOOL)
            fail(v, s->line, "condition of type %s", ir_type_name(s->value->type));
        if (s->kind == IR_WHILE) v->loop_depth++;
        block(v, &s->body);
        if (s->kind == IR_WHILE) v->loop_depth--;
        block(v, &s->orelse);
        break;
    case IR_FOR:
        if (s->index < 0 || s->index >= v->f->nlocals)
            fail(v, s->line, "loop variable %d out of range", s->index);
        expr(v, s->start);
        expr(v, s->stop);
        expr(v, s->step);
        if (v->typed && s->index >= 0 && s->index < v->f->nlocals &&
            v->f->locals[s->index].type != TACK_I64)
            fail(v, s->line, "loop variable of type %s",
                 ir_type_name(v->f->locals[s->index].type));
        v->loop_depth++;
        block(v, &s->body);
        v->loop_depth--;
        break;
    case IR_BREAK:
    case IR_CONTINUE:
        if (!v->loop_depth) fail(v, s->line, "break/continue outside a loop");
        break;
    case IR_EVAL:
        expr(v, s->value);
        break;
    case IR_BOUNDS_FAIL:
        if (s->index < 0 || s->index >= v->f->nsites) fail(v, s->line, "unknown access site");
        index_list(v, s->indices, s->nindices, s->line);
        break;
    case IR_EXIT: {
        int found = 0;
        for (const enclosing_inline *in = v->inlines; in; in = in->outer) found |= in->id == s->index;
        if (!found) fail(v, s->line, "return from inlined call %d outside it", s->index);
        break;
    }
    }
}

static void block(verifier *v, const ir_block *b) {
    for (int i = 0; i < b->n && !v->failed; i++) stmt(v, b->stmts[i]);
}

tack_status ir_verify(const ir_func *f, const char *pass, int typed, tack_error *err) {
    verifier v = {f, pass, typed, err, 0, 0, NULL};
    if (f->loop_var < 0 || f->loop_var >= f->nlocals)
        fail(&v, 0, "no parallel loop variable");
    expr(&v, f->start);
    expr(&v, f->stop);
    expr(&v, f->step);
    for (int d = 0; d < f->ninner; d++) {
        expr(&v, f->inner_stop[d]);
        if (f->inner_var[d] < 0 || f->inner_var[d] >= f->nlocals)
            fail(&v, 0, "launch variable %d out of range", f->inner_var[d]);
    }
    block(&v, &f->body);
    return v.failed ? TACK_ERR_INTERNAL : TACK_OK;
}
