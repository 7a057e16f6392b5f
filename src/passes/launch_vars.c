/* launch_vars.c - refuses a kernel that assigns a launch variable (the
 * parallel loop's, or an ndindex axis's): `i = i + 1; out[i] = x[i]`.
 * The launch-time bounds check (launch_bounds.c) proves accesses from the
 * launch variable's range; a variable the body moves would take every
 * such access outside it, unchecked, and past an array's end.  In Python
 * the assignment lasts to the end of the iteration only, so the kernel
 * means a new name: the error says so. */
#include "front/ast.h"
#include "lower/lower.h"
#include "passes.h"

static const ir_stmt *assign_in_block(const ir_block *b, int l);

static const ir_stmt *assign_in_expr(const ir_expr *e, int l) {
    if (!e) return NULL;
    const ir_stmt *s;
    if ((s = assign_in_expr(e->a, l)) || (s = assign_in_expr(e->b, l)) ||
        (s = assign_in_expr(e->cond, l)))
        return s;
    for (int i = 0; i < e->nargs; i++)
        if ((s = assign_in_expr(e->args[i], l))) return s;
    return e->body ? assign_in_block(e->body, l) : NULL;
}

static const ir_stmt *assign_in_block(const ir_block *b, int l) {
    for (int i = 0; i < b->n; i++) {
        const ir_stmt *s = b->stmts[i], *r;
        if ((s->kind == IR_ASSIGN || s->kind == IR_FOR) && s->index == l) return s;
        if ((r = assign_in_expr(s->value, l)) || (r = assign_in_expr(s->start, l)) ||
            (r = assign_in_expr(s->stop, l)) || (r = assign_in_expr(s->step, l)))
            return r;
        for (int k = 0; k < s->nindices; k++)
            if ((r = assign_in_expr(s->indices[k], l))) return r;
        if ((r = assign_in_block(&s->body, l)) || (r = assign_in_block(&s->orelse, l))) return r;
    }
    return NULL;
}

tack_status pass_launch_vars(const ir_func *f, tack_error *err) {
    if (f->loop_var < 0) return TACK_OK;
    int vars[3] = {f->loop_var, f->inner_var[0], f->inner_var[1]};
    for (int a = 0; a <= f->ninner && a < 3; a++) {
        const ir_stmt *s = assign_in_block(&f->body, vars[a]);
        if (!s) continue;
        src_info where = lower_source_info(f, s->src);
        const char *name = f->locals[vars[a]].name;
        return src_error(&where, s->line, s->col, err,
                         "assigns the parallel loop variable '%s', which the launch "
                         "range gives each iteration: use a new name (j = %s + 1)",
                         name, name);
    }
    return TACK_OK;
}
