/* workgroups.c - collective kernels: the launch's iterations run as
 * workgroups of IR_WORKGROUP (256) lanes that share tack.shared arrays and
 * wait for one another at tack.barrier().
 *
 *   tack.local_index()   the lane in its workgroup: i % 256
 *   tack.group_index()   the workgroup: i // 256
 *   tack.WORKGROUP       256
 *   tack.barrier()       IR_BARRIER
 *
 * for a launch `for i in range(n)` (start 0, step 1, one dimension), so
 * the indices are plain arithmetic on i, the same on every device.  Using
 * any of them makes the kernel collective (ir_func.collective): every
 * launch must be whole workgroups, and a barrier must be reached by all
 * lanes of a workgroup or none, which lower_check_collective checks where
 * it can be seen. */
#include <stdlib.h>
#include <string.h>

#include "lower_internal.h"

int workgroup_name(const char *leaf) {
    static const char *const names[] = {
        [WG_LOCAL] = "local", [WG_SHARED] = "shared", [WG_BARRIER] = "barrier",
        [WG_LOCAL_INDEX] = "local_index", [WG_GROUP_INDEX] = "group_index",
        [WG_SIZE] = "WORKGROUP"};
    for (int i = 0; i < (int)(sizeof names / sizeof *names); i++)
        if (!strcmp(leaf, names[i])) return i;
    return -1;
}

ir_expr *workgroup_value(lowerer *L, int which, const expr *e) {
    if (which == WG_SIZE) {
        ir_expr *x = ir_const_int(L->f, IR_WORKGROUP, IRT_WEAK_INT, e->line, e->col);
        if (!x) lower_oom(L);
        return x;
    }
    if (which != WG_LOCAL_INDEX && which != WG_GROUP_INDEX) {
        ERR(L, e->line, e->col, which == WG_BARRIER
                                    ? "tack.barrier() is a statement of its own"
                                    : "tack.local(...) and tack.shared(...) must be assigned to a name");
        return NULL;
    }
    if (e->nitems) {
        ERR(L, e->line, e->col, "tack.%s() takes no arguments",
            which == WG_LOCAL_INDEX ? "local_index" : "group_index");
        return NULL;
    }
    L->f->collective = 1;
    ir_expr *i = ir_expr_new(L->f, IR_LOCAL, e->line, e->col);
    ir_expr *x = ir_expr_new(L->f, IR_BINOP, e->line, e->col);
    if (!i || !x) {
        lower_oom(L);
        return NULL;
    }
    i->index = L->f->loop_var;
    x->a = i;
    /* i >= 0 in a collective launch: a mask and a shift. */
    x->op = which == WG_LOCAL_INDEX ? OP_AND : OP_SHR;
    x->b = ir_const_int(L->f, which == WG_LOCAL_INDEX ? IR_WORKGROUP - 1 : IR_WORKGROUP_SHIFT, IRT_WEAK_INT,
                        e->line, e->col);
    if (!x->b) lower_oom(L);
    return x->b ? x : NULL;
}

int workgroup_barrier(lowerer *L, ir_block *b, const stmt *s) {
    if (s->value->nitems) {
        ERR(L, s->line, s->col, "tack.barrier() takes no arguments");
        return -1;
    }
    L->f->collective = 1;
    ir_stmt *x = ir_stmt_new(L->f, IR_BARRIER, s->line, s->col);
    if (!x || ir_block_push(L->f, b, x)) return lower_oom(L);
    return 0;
}

/* ---- every lane reaches each barrier, or none does ---- */

typedef struct walk {
    lowerer *L;
    int under;     /* inside control flow that lanes may take differently */
    int exited;    /* an iteration may already have left (return, continue) */
    char *uni;     /* per local: the same in every lane of a workgroup */
    int changed;
} walk;

/* Uniform across a workgroup's lanes: literals, scalar parameters,
 * extents, uniform locals, and arithmetic on them. */
static int uniform(const walk *w, const ir_expr *e) {
    if (!e) return 1;
    switch (e->kind) {
    case IR_CONST: case IR_PARAM: case IR_DIM: return 1;
    case IR_LOCAL: return w->uni[e->index];
    case IR_BINOP: case IR_ANDOR: return uniform(w, e->a) && uniform(w, e->b);
    case IR_UNOP: case IR_CAST: return uniform(w, e->a);
    case IR_SELECT: return uniform(w, e->cond) && uniform(w, e->a) && uniform(w, e->b);
    case IR_CALL:
        for (int i = 0; i < e->nargs; i++)
            if (!uniform(w, e->args[i])) return 0;
        return 1;
    default: return 0;
    }
}

static void differs(walk *w, int local) {
    if (w->uni[local]) w->changed = 1;
    w->uni[local] = 0;
}

/* One round of finding the locals some lane may assign differently: by a
 * value that differs, or under control flow that does (a fixed point). */
static void mark_block(walk *w, const ir_block *b, int under);

static void mark_expr(walk *w, const ir_expr *e, int under) {
    if (!e) return;
    mark_expr(w, e->a, under);
    mark_expr(w, e->b, under);
    mark_expr(w, e->cond, under);
    for (int i = 0; i < e->nargs; i++) mark_expr(w, e->args[i], under);
    if (e->body) mark_block(w, e->body, under);
    if (e->kind == IR_INLINE && e->index >= 0 && under) differs(w, e->index);
}

static void mark_block(walk *w, const ir_block *b, int under) {
    for (int i = 0; i < b->n; i++) {
        const ir_stmt *s = b->stmts[i];
        mark_expr(w, s->value, under);
        mark_expr(w, s->start, under);
        mark_expr(w, s->stop, under);
        mark_expr(w, s->step, under);
        int inner = under;
        if (s->kind == IR_ASSIGN && (under || !uniform(w, s->value))) differs(w, s->index);
        if (s->kind == IR_FOR) {
            inner |= !(uniform(w, s->start) && uniform(w, s->stop) && uniform(w, s->step));
            if (inner) differs(w, s->index);
        }
        if (s->kind == IR_IF || s->kind == IR_WHILE) inner |= !uniform(w, s->value);
        mark_block(w, &s->body, inner);
        mark_block(w, &s->orelse, inner);
    }
}

static int walk_block(walk *w, const ir_block *b);

static int walk_expr(walk *w, const ir_expr *e) {
    if (!e) return 0;
    if (walk_expr(w, e->a) || walk_expr(w, e->b) || walk_expr(w, e->cond)) return -1;
    for (int i = 0; i < e->nargs; i++)
        if (walk_expr(w, e->args[i])) return -1;
    if (!e->body) return 0;
    /* A device function's early return leaves only some lanes' calls. */
    walk inner = *w;
    return walk_block(&inner, e->body);
}

static int walk_block(walk *w, const ir_block *b) {
    for (int i = 0; i < b->n; i++) {
        const ir_stmt *s = b->stmts[i];
        if (s->kind == IR_BARRIER && (w->under || w->exited)) {
            lowerer *L = w->L;
            src_info where = lower_source_info(L->f, s->src);
            if (!L->failed++)
                src_error(&where, s->line, s->col, L->err,
                          "some lanes of a workgroup may not reach this tack.barrier() (%s): "
                          "every lane must reach each barrier, or none",
                          w->exited ? "an earlier return or continue may have ended their "
                                      "iteration"
                                    : "it is under a condition or loop that can differ between "
                                      "lanes");
            return -1;
        }
        if (walk_expr(w, s->value) || walk_expr(w, s->start) || walk_expr(w, s->stop) ||
            walk_expr(w, s->step))
            return -1;
        for (int k = 0; k < s->nindices; k++)
            if (walk_expr(w, s->indices[k])) return -1;
        int split = (s->kind == IR_IF || s->kind == IR_WHILE) ? !uniform(w, s->value)
                    : s->kind == IR_FOR ? !(uniform(w, s->start) && uniform(w, s->stop) &&
                                            uniform(w, s->step))
                                        : 0;
        walk inner = *w;
        inner.under |= split;
        if (walk_block(&inner, &s->body) || walk_block(&inner, &s->orelse)) return -1;
        /* A return or continue inside ends some lanes' iterations early;
         * break and continue inside a loop, some lanes' trips. */
        if (inner.exited) w->exited = 1;
        if (s->kind == IR_EXIT || s->kind == IR_CONTINUE || s->kind == IR_BREAK) {
            if (s->kind == IR_EXIT || w->under) w->exited = 1;
        }
    }
    return 0;
}

int lower_check_collective(lowerer *L) {
    ir_func *f = L->f;
    if (!f->collective) return 0;
    const ir_expr *start = f->start, *step = f->step;
    int plain = f->ninner == 0 && start->kind == IR_CONST && start->i == 0 &&
                step->kind == IR_CONST && step->i == 1;
    if (!plain) {
        src_info where = L->sc->src;
        if (!L->failed++)
            src_error(&where, f->start->line, f->start->col, L->err,
                      "a kernel that uses workgroups (tack.shared, tack.barrier(), "
                      "tack.local_index() ...) must launch over range(n): one dimension, "
                      "from 0, step 1");
        return -1;
    }
    walk w = {L, 0, 0, malloc(f->nlocals ? f->nlocals : 1), 0};
    if (!w.uni) return lower_oom(L);
    memset(w.uni, 1, f->nlocals ? f->nlocals : 1);
    w.uni[f->loop_var] = 0;
    do {
        w.changed = 0;
        mark_block(&w, &f->body, 0);
    } while (w.changed);
    int rc = walk_block(&w, &f->body);
    free(w.uni);
    return rc;
}
