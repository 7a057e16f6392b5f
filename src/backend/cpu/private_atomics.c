/* private_atomics.c - which arrays a CPU chunk may update in a private copy.
 *
 * A histogram's atomic adds all hit a few cache lines that the workers
 * then fight over (and a float atomic add is a compare-exchange loop).
 * When an array is written only through atomics whose old value is unused,
 * all of one kind that combines (add and subtract; or; and; xor; integer
 * min; integer max), and never read or stored plainly, each chunk can
 * update a private copy with plain operations and combine it into the
 * array once at its end: the same result (exactly, for integers; within
 * the order-dependence float atomics already have).  The code generator
 * decides per chunk at run time whether the array is small enough to pay
 * (codegen.c).
 *
 * A reduction's array (lower/reductions.c) always has a copy, float min
 * and max and products (which only reductions have) included, and its chunks combine in chunk order (codegen.c),
 * so a float reduction's result depends only on the thread count. */
#include "cpu.h"

static int family_of(const ir_func *f, const ir_expr *e) {
    int fl = ir_type_is_float(e->type) && ir_reduction_of_param(f, e->index) < 0;
    switch (e->atomic) {
    case ATOM_ADD:
    case ATOM_SUB: return CPU_PRIVATE_ADD;
    case ATOM_OR: return CPU_PRIVATE_OR;
    case ATOM_AND: return CPU_PRIVATE_AND;
    case ATOM_XOR: return CPU_PRIVATE_XOR;
    case ATOM_MIN: return fl ? CPU_PRIVATE_NONE : CPU_PRIVATE_MIN;
    case ATOM_MAX: return fl ? CPU_PRIVATE_NONE : CPU_PRIVATE_MAX;
    case ATOM_MUL: return CPU_PRIVATE_MUL;
    default: return CPU_PRIVATE_NONE;
    }
}

typedef struct finder {
    const ir_func *f;
    int *family; /* per parameter: 0 unseen, -1 not private, else the family */
} finder;

static void refuse(finder *w, int p) { w->family[p] = -1; }

static void use(finder *w, int p, int fam) {
    if (w->family[p] < 0) return;
    if (fam == CPU_PRIVATE_NONE || (w->family[p] && w->family[p] != fam)) refuse(w, p);
    else w->family[p] = fam;
}

static void block(finder *w, const ir_block *b);

/* `unused`: e's value is thrown away (a statement's whole expression). */
static void expr(finder *w, const ir_expr *e, int unused) {
    if (!e) return;
    if (e->kind == IR_LOAD) refuse(w, e->index);
    if (e->kind == IR_ATOMIC) {
        if (unused) use(w, e->index, family_of(w->f, e));
        else refuse(w, e->index);
    }
    expr(w, e->a, 0);
    expr(w, e->b, 0);
    expr(w, e->cond, 0);
    for (int i = 0; i < e->nargs; i++) expr(w, e->args[i], 0);
    if (e->body) block(w, e->body);
}

static void block(finder *w, const ir_block *b) {
    for (int i = 0; i < b->n; i++) {
        const ir_stmt *s = b->stmts[i];
        if (s->kind == IR_STORE) refuse(w, s->index);
        expr(w, s->value, s->kind == IR_EVAL);
        expr(w, s->start, 0);
        expr(w, s->stop, 0);
        expr(w, s->step, 0);
        for (int k = 0; k < s->nindices; k++) expr(w, s->indices[k], 0);
        block(w, &s->body);
        block(w, &s->orelse);
    }
}

int cpu_private_atomics(const ir_func *f, int *family) {
    finder w = {f, family};
    for (int p = 0; p < f->nparams; p++) family[p] = 0;
    expr(&w, f->start, 0);
    expr(&w, f->stop, 0);
    expr(&w, f->step, 0);
    block(&w, &f->body);
    /* Reductions' one-element copies are not counted against the cap. */
    int n = 0;
    for (int p = 0; p < f->nparams; p++) {
        int reduction = ir_reduction_of_param(f, p) >= 0;
        if (family[p] <= 0 || f->params[p].role != ROLE_ARRAY ||
            (!reduction && n == CPU_PRIVATE_MAX_ARRAYS))
            family[p] = CPU_PRIVATE_NONE;
        else if (!reduction)
            n++;
    }
    return n;
}
