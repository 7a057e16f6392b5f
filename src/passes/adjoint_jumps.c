/*
 * adjoint_jumps.c - `break` and `continue` made flags, before the adjoint.
 *
 * The adjoint (adjoint.c) records a loop body as straight-line code with
 * `if`s, and replays or reverses iterations; a jump out of the middle of
 * an iteration has no place in that record.  So, in an adjoint variant
 * only, each loop whose body jumps is rewritten into one that does not,
 * with the same meaning:
 *
 *     jump = False; stop = False            (before the loop)
 *     while not stop and cond:              (a `while` with a `break`)
 *         jump = False                      (first in every iteration)
 *         ... `continue` -> jump = True
 *         ... `break`    -> stop = True; jump = True
 *         if not jump: <the rest of the block after a statement that may jump>
 *
 * A `for` with a `break` has its body under `if not stop:`: the rest of
 * its range does nothing.  Both flags are booleans, which carry
 * no gradient; `stop` is carried from iteration to iteration (the adjoint
 * replays it like any carried local), `jump` is the iteration's own.
 * The jumps of a loop are the ones not inside a loop nested in it; loops
 * inside device functions' inlined bodies are rewritten the same way.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ir.h"
#include "lower/lower.h"
#include "passes/passes.h"

typedef struct jumps {
    ir_func *f;
    tack_error *err;
    int failed;
} jumps;

static int nomem(jumps *J) {
    if (!J->failed++) {
        snprintf(J->err->message, sizeof J->err->message, "out of memory differentiating kernel '%s'",
                 J->f->name);
        J->err->status = TACK_ERR_NOMEM;
    }
    return -1;
}

static int push(jumps *J, ir_block *b, ir_stmt *s) {
    return !s || ir_block_push(J->f, b, s) ? nomem(J) : 0;
}

static ir_expr *boolean(jumps *J, int v) { return ir_const_int(J->f, v, TACK_BOOL, 0, 0); }

static ir_expr *local(jumps *J, int l) {
    ir_expr *e = ir_expr_new(J->f, IR_LOCAL, 0, 0);
    if (e) {
        e->index = l;
        e->type = TACK_BOOL;
    }
    return e;
}

static ir_expr *negate(jumps *J, ir_expr *a) {
    ir_expr *e = a ? ir_expr_new(J->f, IR_UNOP, 0, 0) : NULL;
    if (e) {
        e->op = OP_NOT;
        e->a = a;
        e->type = TACK_BOOL;
    }
    return e;
}

static ir_stmt *set(jumps *J, int l, ir_expr *v, int line, int col) {
    ir_stmt *s = v ? ir_stmt_new(J->f, IR_ASSIGN, line, col) : NULL;
    if (s) {
        s->index = l;
        s->value = v;
    }
    return s;
}

static int flag(jumps *J, const char *base) {
    char name[64];
    snprintf(name, sizeof name, "%s.%d", base, J->f->nlocals);
    int l = ir_local_add(J->f, name);
    if (l < 0) return nomem(J);
    J->f->locals[l].type = TACK_BOOL;
    return l;
}

/* Which jumps of this loop (not of loops nested in it) b holds: 1 for
 * continue, 2 for break. */
static int jumps_in(const ir_block *b) {
    int k = 0;
    for (int i = 0; i < b->n; i++) {
        const ir_stmt *s = b->stmts[i];
        if (s->kind == IR_CONTINUE) k |= 1;
        if (s->kind == IR_BREAK) k |= 2;
        if (s->kind == IR_IF) k |= jumps_in(&s->body) | jumps_in(&s->orelse);
    }
    return k;
}

/* Whether b reads l outside loop `skip`; the body of another `for` over
 * l does not count (it assigns l before reading it). */
static int reads_local(const ir_expr *e, int l);
static int reads_local_block(const ir_block *b, int l, const ir_stmt *skip) {
    for (int i = 0; i < b->n; i++) {
        const ir_stmt *s = b->stmts[i];
        if (s == skip) continue;
        int own = s->kind == IR_FOR && s->index == l;
        if (reads_local(s->value, l) || reads_local(s->start, l) || reads_local(s->stop, l) ||
            reads_local(s->step, l) || (!own && reads_local_block(&s->body, l, skip)) ||
            reads_local_block(&s->orelse, l, skip))
            return 1;
        for (int k = 0; k < s->nindices; k++)
            if (reads_local(s->indices[k], l)) return 1;
    }
    return 0;
}
static int reads_local(const ir_expr *e, int l) {
    if (!e) return 0;
    if (e->kind == IR_LOCAL && e->index == l) return 1;
    if (e->kind == IR_INLINE && e->body && reads_local_block(e->body, l, NULL)) return 1;
    for (int i = 0; i < e->nargs; i++)
        if (reads_local(e->args[i], l)) return 1;
    return reads_local(e->a, l) || reads_local(e->b, l) || reads_local(e->cond, l);
}

/* b's statements from `from` on, each jump replaced by setting the
 * flags, and whatever follows a statement that may jump under
 * `if not jump`. */
static int guard(jumps *J, ir_block *out, ir_stmt **stmts, int n, int jump, int stop) {
    for (int i = 0; i < n; i++) {
        ir_stmt *s = stmts[i];
        if (s->kind == IR_BREAK || s->kind == IR_CONTINUE) {
            if (s->kind == IR_BREAK && push(J, out, set(J, stop, boolean(J, 1), s->line, s->col))) return -1;
            return push(J, out, set(J, jump, boolean(J, 1), s->line, s->col)); /* the rest never runs */
        }
        if (s->kind != IR_IF || !jumps_in(&(ir_block){.stmts = &s, .n = 1})) {
            if (push(J, out, s)) return -1;
            continue;
        }
        ir_block body = {0}, orelse = {0};
        if (guard(J, &body, s->body.stmts, s->body.n, jump, stop) ||
            guard(J, &orelse, s->orelse.stmts, s->orelse.n, jump, stop))
            return -1;
        s->body = body;
        s->orelse = orelse;
        if (push(J, out, s)) return -1;
        if (i + 1 == n) return 0;
        ir_stmt *rest = ir_stmt_new(J->f, IR_IF, s->line, s->col);
        if (!rest || !(rest->value = negate(J, local(J, jump)))) return nomem(J);
        if (guard(J, &rest->body, stmts + i + 1, n - i - 1, jump, stop)) return -1;
        return push(J, out, rest);
    }
    return 0;
}

/* ---- a device function's `return` inside a loop ---- */

/* Whether b holds the exit of inlined body `id` (nested inlined bodies
 * have ids of their own, so expressions need no search). */
static int exits_in(const ir_block *b, int id) {
    for (int i = 0; i < b->n; i++) {
        const ir_stmt *s = b->stmts[i];
        if ((s->kind == IR_EXIT && s->index == id) || exits_in(&s->body, id) || exits_in(&s->orelse, id))
            return 1;
    }
    return 0;
}

static ir_stmt *jump_stmt(jumps *J, ir_stmt_kind kind, int index, const ir_stmt *at) {
    ir_stmt *s = ir_stmt_new(J->f, kind, at->line, at->col);
    if (s) {
        s->index = index;
        s->src = at->src;
    }
    return s;
}

/* Where lift_returns works: inside a loop of the body, at the body's own
 * level, or in an `if` at the body's own level. */
enum { IN_LOOP, AT_TOP, IN_IF };

/* Each `return` of inlined body `id` inside a loop becomes `ret = True;
 * break`.  After a statement that may set ret: inside another loop,
 * `if ret: break`; at the body's own level, `if ret: return` (the
 * adjoint's record takes it as an `if` that ends the body); in an `if`,
 * the rest of that branch under `if not ret:`.  The breaks are then made
 * flags as any other.  *set: whether b may set ret. */
static int lift_returns(jumps *J, ir_block *b, int id, int *ret, int where, int *set_ret) {
    ir_block out = {0};
    *set_ret = 0;
    for (int i = 0; i < b->n; i++) {
        ir_stmt *s = b->stmts[i];
        if (where == IN_LOOP && s->kind == IR_EXIT && s->index == id) {
            ir_stmt *returned = set(J, *ret, boolean(J, 1), s->line, s->col);
            if (returned) returned->src = s->src;
            if (push(J, &out, returned) || push(J, &out, jump_stmt(J, IR_BREAK, 0, s))) return -1;
            *set_ret = 1;
            break; /* the rest never runs */
        }
        int sets = 0, loop = (s->kind == IR_FOR || s->kind == IR_WHILE) && exits_in(&s->body, id);
        if (s->kind == IR_IF) {
            int inner = where == IN_LOOP ? IN_LOOP : IN_IF, s1, s2;
            if (lift_returns(J, &s->body, id, ret, inner, &s1) || lift_returns(J, &s->orelse, id, ret, inner, &s2))
                return -1;
            sets = s1 || s2;
        } else if (loop) {
            if (*ret < 0 && (*ret = flag(J, "adj.ret")) < 0) return -1;
            if (lift_returns(J, &s->body, id, ret, IN_LOOP, &sets)) return -1;
            sets = 1;
        }
        if (push(J, &out, s)) return -1;
        if (!sets) continue;
        *set_ret = 1;
        if (where == IN_LOOP && !loop) continue; /* the `if`'s own breaks leave the loop */
        ir_stmt *after = jump_stmt(J, IR_IF, 0, s);
        if (!after || !(after->value = local(J, *ret))) return nomem(J);
        if (where == IN_IF) {
            /* the rest of this branch, when no return happened */
            ir_block rest = {.stmts = b->stmts + i + 1, .n = b->n - i - 1};
            int more;
            if (!(after->value = negate(J, after->value)) ||
                lift_returns(J, &rest, id, ret, IN_IF, &more))
                return nomem(J);
            after->body = rest;
            if (push(J, &out, after)) return -1;
            break;
        }
        if (push(J, &after->body, jump_stmt(J, where == IN_LOOP ? IR_BREAK : IR_EXIT, where == IN_LOOP ? 0 : id, s)) ||
            push(J, &out, after))
            return -1;
    }
    *b = out;
    return 0;
}

/* ret = False first in the body, each time it runs */
static int lift_body_returns(jumps *J, ir_block *body, int id) {
    int ret = -1, sets;
    if (lift_returns(J, body, id, &ret, AT_TOP, &sets)) return -1;
    if (ret < 0 || !body->n) return 0;
    ir_block out = {0};
    const ir_stmt *first = body->stmts[0];
    if (push(J, &out, set(J, ret, boolean(J, 0), first->line, first->col))) return -1;
    out.stmts[0]->src = first->src;
    for (int i = 0; i < body->n; i++)
        if (push(J, &out, body->stmts[i])) return -1;
    *body = out;
    return 0;
}

static int rewrite_block(jumps *J, ir_block *b);

static int rewrite_expr(jumps *J, ir_expr *e) {
    if (!e) return 0;
    if (e->kind == IR_INLINE && e->body &&
        (lift_body_returns(J, e->body, e->inline_id) || rewrite_block(J, e->body)))
        return -1;
    for (int i = 0; i < e->nargs; i++)
        if (rewrite_expr(J, e->args[i])) return -1;
    return rewrite_expr(J, e->a) || rewrite_expr(J, e->b) || rewrite_expr(J, e->cond) ? -1 : 0;
}

/* Nested loops first (their jumps are theirs), then b's own loops. */
static int rewrite_block(jumps *J, ir_block *b) {
    ir_block out = {0};
    for (int i = 0; i < b->n; i++) {
        ir_stmt *s = b->stmts[i];
        if (rewrite_expr(J, s->value) || rewrite_expr(J, s->start) || rewrite_expr(J, s->stop) ||
            rewrite_expr(J, s->step))
            return -1;
        for (int k = 0; k < s->nindices; k++)
            if (rewrite_expr(J, s->indices[k])) return -1;
        if (rewrite_block(J, &s->body) || rewrite_block(J, &s->orelse)) return -1;
        int k = (s->kind == IR_FOR || s->kind == IR_WHILE) ? jumps_in(&s->body) : 0;
        if (!k) {
            if (push(J, &out, s)) return -1;
            continue;
        }
        if (s->kind == IR_FOR && (k & 2) && reads_local_block(&J->f->body, s->index, s)) {
            /* after a `break` the variable keeps the value it broke at; the
             * flags would run the range out */
            src_info where = lower_source_info(J->f, s->src);
            if (!J->failed++)
                src_error(&where, s->line, s->col, J->err,
                          "backward of a `for` loop with `break` whose variable is read after "
                          "the loop is not supported (copy it to another local inside the loop)%s", "");
            return -1;
        }
        int jump = flag(J, "adj.jump"), stop = (k & 2) ? flag(J, "adj.stop") : -1;
        if (jump < 0 || ((k & 2) && stop < 0)) return -1;
        /* both flags start False before the loop: each is then assigned
         * before any read in an enclosing loop's iteration (not carried) */
        if (push(J, &out, set(J, jump, boolean(J, 0), s->line, s->col)) ||
            (stop >= 0 && push(J, &out, set(J, stop, boolean(J, 0), s->line, s->col))))
            return -1;
        ir_block body = {0};
        if (push(J, &body, set(J, jump, boolean(J, 0), s->line, s->col))) return -1;
        if (stop >= 0 && s->kind == IR_FOR) {
            /* after a break the rest of the range does nothing */
            ir_stmt *live = ir_stmt_new(J->f, IR_IF, s->line, s->col);
            if (!live || !(live->value = negate(J, local(J, stop)))) return nomem(J);
            if (guard(J, &live->body, s->body.stmts, s->body.n, jump, stop) || push(J, &body, live))
                return -1;
        } else if (guard(J, &body, s->body.stmts, s->body.n, jump, stop)) {
            return -1;
        }
        s->body = body;
        if (s->kind == IR_WHILE && stop >= 0) {
            ir_expr *c = ir_expr_new(J->f, IR_ANDOR, s->line, s->col);
            if (!c || !(c->a = negate(J, local(J, stop)))) return nomem(J);
            c->op = OP_AND;
            c->b = s->value;
            c->type = TACK_BOOL;
            s->value = c;
        }
        if (push(J, &out, s)) return -1;
    }
    *b = out;
    return 0;
}

tack_status pass_adjoint_jumps(ir_func *f, tack_error *err) {
    jumps J = {.f = f, .err = err};
    if (rewrite_block(&J, &f->body) || J.failed) return err->status ? err->status : TACK_ERR_COMPILE;
    return TACK_OK;
}
