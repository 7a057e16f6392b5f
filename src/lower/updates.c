/* updates.c - augmented assignments to array elements, `a[k] op= v`.
 *
 * When two iterations may update the same element, a plain load and store
 * loses updates (Warp and Taichi make this very line an atomic add), so
 * such an update compiles as the atomic read-modify-write.  When the
 * element is provably the iteration's own, it stays a plain load and store:
 * `out[i] += x[i]` costs nothing extra.
 *
 * Lowering emits both forms under one IF (update != 0): body the plain
 * load and store, orelse the atomic (none for an op without one: *= /= //=
 * %= **= <<= >>=).  Once the whole kernel is lowered, lower_resolve_updates
 * decides per array and splices the chosen form in place.
 *
 * An array's updates are private when every write to it (store, update or
 * atomic, anywhere in the kernel, device functions included) indexes, for
 * each launch axis, one dimension with the same form `axis + c` (plus the
 * same scalar parameter, if any): distinct iterations then write distinct
 * elements.  Forms follow locals only where they are certainly assigned
 * (see walk_block), so anything unsure is shared, and atomic.  Written
 * arrays are assumed not to overlap one another, as for plain stores. */
#include <stdlib.h>
#include <string.h>

#include "lower_internal.h"

static int atomic_of(ir_op op, ir_atomic_op *out) {
    switch (op) {
    case OP_ADD: *out = ATOM_ADD; return 1;
    case OP_SUB: *out = ATOM_SUB; return 1;
    case OP_AND: *out = ATOM_AND; return 1;
    case OP_OR: *out = ATOM_OR; return 1;
    case OP_XOR: *out = ATOM_XOR; return 1;
    default: return 0;
    }
}

ir_stmt *update_choice(lowerer *L, const stmt *s) {
    ir_stmt *c = ir_stmt_new(L->f, IR_IF, s->line, s->col);
    if (c) c->value = ir_const_int(L->f, 1, TACK_BOOL, s->line, s->col);
    if (!c || !c->value) {
        lower_oom(L);
        return NULL;
    }
    c->update = 1;
    return c;
}

int update_atomic_form(lowerer *L, ir_stmt *choice, const stmt *s, ir_op op) {
    ir_atomic_op aop;
    if (!atomic_of(op, &aop)) {
        choice->update = 2; /* no atomic form: refused unless private */
        return 0;
    }
    if (mat_target_kind(L, s->targets[0]) == 2) return mat_component_update(L, &choice->orelse, s, aop);
    int p, n;
    ir_expr **idx = lower_indices(L, s->targets[0], &p, &n);
    ir_expr *v = idx ? lower_expr(L, s->value) : NULL;
    if (!v) return -1;
    if (vec_width_of(L, p)) return vec_atomic_update(L, &choice->orelse, p, idx, n, aop, v, s);
    ir_stmt *eval = ir_stmt_new(L->f, IR_EVAL, s->line, s->col);
    ir_expr *x = ir_expr_new(L->f, IR_ATOMIC, s->line, s->col);
    if (!eval || !x) return lower_oom(L);
    x->index = p;
    x->atomic = aop;
    x->dim = 1;
    x->args = idx;
    x->nargs = n;
    x->a = v;
    eval->value = x;
    return ir_block_push(L->f, &choice->orelse, eval) ? lower_oom(L) : 0;
}

/* ---- which arrays are written only at the iteration's own elements ---- */

typedef struct owner {
    int seen;                       /* written at all */
    int ndim;                       /* logical dimensions of its writes */
    ir_index_form at[TACK_MAX_NDIM]; /* the first write's form per dimension */
    int mixed[TACK_MAX_NDIM];       /* some write differs (or is unknown) there */
} owner;

typedef struct scan {
    const ir_func *f;
    ir_index_form *known; /* per local: its form wherever the walk is */
    owner *arrays;        /* per parameter */
    int failed;
} scan;

static void note_write(scan *w, int p, ir_expr *const *idx, int n) {
    owner *o = &w->arrays[p];
    if (w->f->params[p].vec_width) n--; /* the component is no element index */
    if (!o->seen) {
        o->seen = 1;
        o->ndim = n;
        for (int d = 0; d < n; d++) {
            o->at[d] = ir_index_form_of(w->f, w->known, idx[d]);
            o->mixed[d] = !o->at[d].ok || o->at[d].axis < 0;
        }
        return;
    }
    for (int d = 0; d < n && d < o->ndim; d++)
        if (!ir_same_form(o->at[d], ir_index_form_of(w->f, w->known, idx[d]))) o->mixed[d] = 1;
}

static void forget_expr(scan *w, const ir_expr *e) { ir_forget_expr(w->known, e); }
static void forget_block(scan *w, const ir_block *b) { ir_forget_block(w->known, b); }

static void walk_block(scan *w, const ir_block *b);

/* Code that may or may not run: walked from the current facts, which
 * afterwards lose everything it may assign. */
static ir_index_form *snapshot(scan *w) {
    size_t size = (w->f->nlocals ? w->f->nlocals : 1) * sizeof *w->known;
    ir_index_form *copy = malloc(size);
    if (!copy) w->failed = 1;
    else memcpy(copy, w->known, size);
    return copy;
}

static void restore(scan *w, ir_index_form *copy) {
    if (copy) memcpy(w->known, copy, (w->f->nlocals ? w->f->nlocals : 1) * sizeof *w->known);
}

static void walk_expr(scan *w, const ir_expr *e);

static void walk_maybe_expr(scan *w, const ir_expr *e) {
    ir_index_form *before = snapshot(w);
    walk_expr(w, e);
    restore(w, before);
    free(before);
    forget_expr(w, e);
}

static void walk_expr(scan *w, const ir_expr *e) {
    if (!e || w->failed) return;
    switch (e->kind) {
    case IR_ANDOR:
        walk_expr(w, e->a);
        walk_maybe_expr(w, e->b);
        return;
    case IR_SELECT:
        walk_expr(w, e->cond);
        walk_maybe_expr(w, e->a);
        walk_maybe_expr(w, e->b);
        return;
    case IR_INLINE: {
        /* A return may leave the body anywhere: after it, only what the
         * body cannot have assigned is still known. */
        walk_block(w, e->body);
        forget_block(w, e->body);
        if (e->index >= 0) w->known[e->index] = ir_form_unknown;
        return;
    }
    default:
        break;
    }
    for (int i = 0; i < e->nargs; i++) walk_expr(w, e->args[i]);
    walk_expr(w, e->a);
    walk_expr(w, e->b);
    walk_expr(w, e->cond);
    if (e->kind == IR_ATOMIC) note_write(w, e->index, e->args, e->nargs);
}

static void walk_maybe_block(scan *w, const ir_block *b) {
    ir_index_form *before = snapshot(w);
    walk_block(w, b);
    restore(w, before);
    free(before);
    forget_block(w, b);
}

static void walk_block(scan *w, const ir_block *b) {
    for (int i = 0; i < b->n && !w->failed; i++) {
        const ir_stmt *s = b->stmts[i];
        switch (s->kind) {
        case IR_ASSIGN: {
            walk_expr(w, s->value);
            ir_index_form v = ir_index_form_of(w->f, w->known, s->value);
            /* Only forms with a launch variable: it makes the local i64. */
            w->known[s->index] = v.ok && v.axis >= 0 ? v : ir_form_unknown;
            break;
        }
        case IR_STORE:
        case IR_SSTORE: /* a scratch array is no parameter: only its operands */
            walk_expr(w, s->value);
            for (int k = 0; k < s->nindices; k++) walk_expr(w, s->indices[k]);
            if (s->kind == IR_STORE) note_write(w, s->index, s->indices, s->nindices);
            break;
        case IR_EVAL:
            walk_expr(w, s->value);
            break;
        case IR_IF:
            if (s->update) { /* both forms write the same element: read one */
                walk_block(w, &s->body);
                break;
            }
            walk_expr(w, s->value);
            walk_maybe_block(w, &s->body);
            walk_maybe_block(w, &s->orelse);
            break;
        case IR_FOR:
        case IR_WHILE:
            /* The body runs again with what its last trip assigned. */
            walk_expr(w, s->start);
            walk_expr(w, s->stop);
            walk_expr(w, s->step);
            if (s->kind == IR_FOR) w->known[s->index] = ir_form_unknown;
            forget_block(w, &s->body);
            forget_expr(w, s->value);
            walk_maybe_expr(w, s->value);
            walk_maybe_block(w, &s->body);
            break;
        default: /* break, continue, exit: what follows is dead on this path */
            break;
        }
    }
}

/* Whether every write to array p hits only the iteration's own elements. */
static int private_array(const scan *w, int p) {
    const owner *o = &w->arrays[p];
    for (int axis = 0; axis <= w->f->ninner; axis++) {
        int covered = 0;
        for (int d = 0; d < o->ndim && !covered; d++)
            covered = !o->mixed[d] && o->at[d].axis == axis;
        if (!covered) return 0;
    }
    return 1;
}

/* Replaces each update choice by the statements of the form it keeps. */
static int choose(lowerer *L, const scan *w, ir_block *b);

static int choose_expr(lowerer *L, const scan *w, ir_expr *e) {
    if (!e) return 0;
    if (choose_expr(L, w, e->a) || choose_expr(L, w, e->b) || choose_expr(L, w, e->cond)) return -1;
    for (int i = 0; i < e->nargs; i++)
        if (choose_expr(L, w, e->args[i])) return -1;
    return e->body ? choose(L, w, e->body) : 0;
}

/* The array an update writes: its plain form's last store (under the
 * position's tests for a run-time component index, x[i][k] += s). */
static int block_target(const ir_block *b) {
    for (int i = b->n - 1; i >= 0; i--) {
        if (b->stmts[i]->kind == IR_STORE) return b->stmts[i]->index;
        int p = b->stmts[i]->kind == IR_IF ? block_target(&b->stmts[i]->body) : -1;
        if (p >= 0) return p;
    }
    return -1;
}
static int update_target(const ir_stmt *c) { return block_target(&c->body); }

static int choose(lowerer *L, const scan *w, ir_block *b) {
    for (int i = 0; i < b->n; i++) {
        ir_stmt *s = b->stmts[i];
        if (choose_expr(L, w, s->value) || choose_expr(L, w, s->start) ||
            choose_expr(L, w, s->stop) || choose_expr(L, w, s->step))
            return -1;
        for (int k = 0; k < s->nindices; k++)
            if (choose_expr(L, w, s->indices[k])) return -1;
        if (choose(L, w, &s->body) || choose(L, w, &s->orelse)) return -1;
        if (!s->update) continue;
        int p = update_target(s);
        int keep_plain = p < 0 || (private_array(w, p) && !(L->adjoint && s->update != 2));
        if (!keep_plain && s->update == 2) {
            /* Reported in the source the update came from. */
            const char *name = L->f->params[p].name;
            if (!L->failed++) {
                src_info where = lower_source_info(L->f, s->src);
                src_error(&where, s->line, s->col, L->err,
                          "this update of '%s' may hit an element another iteration also "
                          "updates (its index is not this iteration's own), and the operator "
                          "has no atomic form; write it as a plain assignment "
                          "('%s[...] = %s[...] * v') if no two iterations touch one element",
                          name, name, name);
            }
            return -1;
        }
        ir_block *kept = keep_plain ? &s->body : &s->orelse;
        /* Splice the kept statements in place of the choice. */
        int n = b->n - 1 + kept->n;
        ir_stmt **v = arena_alloc(&L->f->mem, (n ? n : 1) * sizeof *v);
        if (!v) return lower_oom(L);
        memcpy(v, b->stmts, i * sizeof *v);
        memcpy(v + i, kept->stmts, kept->n * sizeof *v);
        memcpy(v + i + kept->n, b->stmts + i + 1, (b->n - i - 1) * sizeof *v);
        b->stmts = v;
        b->n = b->cap = n;
        i += kept->n - 1;
    }
    return 0;
}

/* Whether the body assigns local l anywhere (forgetting clears it). */
static int assigned_anywhere(scan *w, int l) {
    w->known[l].ok = 1;
    forget_block(w, &w->f->body);
    int assigned = !w->known[l].ok;
    w->known[l] = ir_form_unknown;
    return assigned;
}

int lower_resolve_updates(lowerer *L) {
    ir_func *f = L->f;
    scan w = {f, malloc((f->nlocals ? f->nlocals : 1) * sizeof *w.known),
              calloc(f->nparams ? f->nparams : 1, sizeof *w.arrays), 0};
    int rc = -1;
    if (!w.known || !w.arrays) {
        lower_oom(L);
        goto done;
    }
    for (int l = 0; l < f->nlocals; l++) w.known[l] = ir_form_unknown;
    /* A launch variable the body assigns identifies no iteration. */
    int vars[3] = {f->loop_var, f->inner_var[0], f->inner_var[1]};
    for (int a = 0; f->loop_var >= 0 && a <= f->ninner; a++)
        if (!assigned_anywhere(&w, vars[a])) w.known[vars[a]] = (ir_index_form){1, a, -1, 1, 0};
    walk_block(&w, &f->body);
    if (w.failed) {
        lower_oom(L);
        goto done;
    }
    rc = choose(L, &w, &f->body);
done:
    free(w.known);
    free(w.arrays);
    return rc;
}
