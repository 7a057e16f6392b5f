/* reductions.c - statements around the parallel loop.
 *
 *   s = 0.0                  before the loop: a scalar
 *   n2 = x.shape[0] // 2     before the loop: a scalar
 *   for i in range(n2):      the parallel launch
 *       s += x[i] * a[i]
 *   return s                 after it: the reductions' values
 *
 * A name assigned before the loop and updated inside it only as a
 * reduction (s += v, s -= v, s *= v, s |= v, s &= v, s ^= v,
 * s = min(s, v), s = max(s, v)) lives in a hidden one-element array parameter: the
 * runtime writes its (constant) initial value before the launch and reads
 * it back after; each update is an atomic whose old value is unused (on
 * the CPU a chunk-private partial, see backend/cpu/private_atomics.c).
 *
 * A vector, matrix or complex start (c = tack.vec3d(), m = tack.mat22d(),
 * z = 0j) is one such reduction per component, each started from its
 * component of the constructor folded to a constant; the binding lists
 * them, and after the loop the name reads them back as one value.
 *
 * Any other name assigned before the loop is a pure expression of the
 * arguments and constants: each use re-lowers its value in place (LLVM
 * hoists what does not change per iteration), so nothing runs before the
 * launch and nothing needs carrying into it.
 *
 * Several top-level loops are stages: lower_input.stage picks the one
 * this IR function launches (the runtime launches them in order).  Every
 * stage has every reduction's hidden parameter, in one order; a
 * reduction of an earlier loop is finished, and reading it (in a later
 * loop, or in a name assigned after its loop) loads its array. */
#include <stdio.h>
#include <string.h>

#include "lower_internal.h"

/* The reduction operator an update statement is, or -1.  `*op_text`
 * names it for messages. */
static int update_op(const stmt *s, const char *name, const char **op_text) {
    if (s->kind == ST_AUGASSIGN) {
        static const struct { const char *t; ir_atomic_op op; } ops[] = {
            {"+", ATOM_ADD}, {"-", ATOM_SUB}, {"*", ATOM_MUL}, {"|", ATOM_OR}, {"&", ATOM_AND}, {"^", ATOM_XOR}, {NULL, 0}};
        *op_text = s->op;
        for (int i = 0; ops[i].t; i++)
            if (!strcmp(s->op, ops[i].t)) return ops[i].op;
        return -1;
    }
    const expr *v = s->value;
    /* min(s, v), and tack.min(c, v) as vectors are written */
    const char *fn = !v || v->kind != EX_CALL ? NULL
                     : v->a->kind == EX_NAME ? v->a->name
                     : v->a->kind == EX_ATTR && v->a->a->kind == EX_NAME && !strcmp(v->a->a->name, "tack")
                         ? v->a->name : NULL;
    if (s->kind == ST_ASSIGN && s->ntargets == 1 && fn && (!strcmp(fn, "min") || !strcmp(fn, "max")) &&
        v->nitems == 2 && !v->nkw && v->items[0]->kind == EX_NAME &&
        !strcmp(v->items[0]->name, name)) {
        *op_text = fn;
        return !strcmp(fn, "min") ? ATOM_MIN : ATOM_MAX;
    }
    *op_text = NULL;
    return -1;
}

typedef struct prologue_name {
    const char *name;
    const stmt *at;   /* its assignment before the loop */
    int seg;          /* the top-level loop it is assigned before */
    int op;           /* -1: not updated in the loop */
    int loop;         /* the top-level loop that updates it */
    const char *op_text;
    const stmt *first_update;
    const stmt *part_write; /* c.x = v, c[k] += v inside a loop */
} prologue_name;

typedef struct plan {
    prologue_name names[64];
    int n;
    int loop; /* the top-level loop being scanned */
} plan;

static prologue_name *find(plan *p, const char *name) {
    for (int i = 0; i < p->n; i++)
        if (!strcmp(p->names[i].name, name)) return &p->names[i];
    return NULL;
}

static int refuse_write(lowerer *L, const prologue_name *pn, const stmt *s) {
    ERR(L, s->line, s->col, "'%s' is assigned before the parallel loop (line %d) and assigned "
        "again inside it here, which is not a reduction: the loop's iterations run in parallel, "
        "so a scalar from before the loop may only be combined into (%s += v, -=, *=, |=, &=, ^=, "
        "%s = min(%s, v), %s = max(%s, v)); use a new name for a per-iteration value",
        pn->name, L->sc->src.first_line + pn->at->line - 1, pn->name, pn->name, pn->name,
        pn->name, pn->name);
    return -1;
}

static int scan_target(lowerer *L, plan *p, const expr *t, const stmt *s) {
    if (t->kind == EX_TUPLE) {
        for (int i = 0; i < t->nitems; i++)
            if (scan_target(L, p, t->items[i], s)) return -1;
        return 0;
    }
    if ((t->kind == EX_SUBSCRIPT || t->kind == EX_ATTR) && t->a->kind == EX_NAME) {
        /* Refused below if the name turns out to be a reduction (else it
         * may be a row of an array, whose elements are stored to). */
        prologue_name *base = find(p, t->a->name);
        if (base && !base->part_write) base->part_write = s;
        return 0;
    }
    prologue_name *pn = t->kind == EX_NAME ? find(p, t->name) : NULL;
    if (!pn) return 0;
    const char *text;
    int op = s->ntargets == 1 && s->targets[0] == t ? update_op(s, t->name, &text) : -1;
    if (op < 0 || pn->seg > p->loop) return refuse_write(L, pn, s);
    if (pn->op >= 0 && pn->loop != p->loop) {
        ERR(L, s->line, s->col, "reduction '%s' is combined into by two top-level loops (lines "
            "%d and %d); use one name per loop and add them", pn->name,
            L->sc->src.first_line + pn->first_update->line - 1, L->sc->src.first_line + s->line - 1);
        return -1;
    }
    if (pn->op >= 0 && pn->op != op) {
        ERR(L, s->line, s->col, "reduction '%s' is combined with '%s' here but with '%s' at line "
            "%d; one reduction takes one operator", pn->name, text, pn->op_text,
            L->sc->src.first_line + pn->first_update->line - 1);
        return -1;
    }
    if (pn->op < 0) {
        pn->op = op;
        pn->loop = p->loop;
        pn->op_text = text;
        pn->first_update = s;
    }
    return 0;
}

/* Every assignment inside the loop to a name from before it. */
static int scan_loop(lowerer *L, plan *p, stmt *const *body, int n) {
    for (int i = 0; i < n; i++) {
        const stmt *s = body[i];
        for (int t = 0; t < s->ntargets; t++)
            if (scan_target(L, p, s->targets[t], s)) return -1;
        if (scan_loop(L, p, s->body, s->nbody) || scan_loop(L, p, s->orelse, s->norelse)) return -1;
    }
    return 0;
}

/* Whether an expression before the loop is free of effects: no device
 * function, random draw or atomic (it is evaluated at each use). */
static int pure_expr(lowerer *L, const expr *e) {
    if (!e) return 1;
    if (e->kind == EX_CALL && !lower_call_is_pure(L, e)) return 0;
    if (e->kind != EX_CALL && !pure_expr(L, e->a)) return 0;
    if (!pure_expr(L, e->b) || !pure_expr(L, e->c)) return 0;
    for (int i = 0; i < e->nitems; i++)
        if (!pure_expr(L, e->items[i])) return 0;
    return 1;
}

/* The value the last assignment to `local` in block b (or a setup it
 * runs) gives it, or NULL: a vector constructor's setup sets each
 * component from a literal, possibly through a temporary. */
static const ir_expr *assigned_in(const ir_block *b, int local) {
    const ir_expr *found = NULL;
    for (int k = 0; b && k < b->n; k++) {
        const ir_stmt *s = b->stmts[k];
        if (s->kind == IR_ASSIGN && s->index == local) found = s->value;
        else if (s->kind == IR_EVAL && s->value && s->value->kind == IR_INLINE && s->value->body) {
            const ir_expr *inner = assigned_in(s->value->body, local);
            if (inner) found = inner;
        }
    }
    return found;
}

/* The constant an initial value folds to: a literal, a constant, a
 * negation or a cast of one.  0, or -1 when it is not constant.  env: the
 * setup block whose locals it may be read through (a vector's start,
 * folded per component), or NULL. */
static int fold(const ir_block *env, const ir_expr *e, ir_type *t, int64_t *i, double *f) {
    if (!e) return -1;
    if (env && e->kind == IR_LOCAL) return fold(env, assigned_in(env, e->index), t, i, f);
    if (e->kind == IR_CONST) {
        *t = e->type;
        *i = e->i;
        *f = e->f;
        return 0;
    }
    if (e->kind == IR_UNOP && (e->op == OP_NEG || e->op == OP_POS)) {
        if (fold(env, e->a, t, i, f)) return -1;
        if (e->op == OP_NEG) {
            *i = (int64_t)(0 - (uint64_t)*i);
            *f = -*f;
        }
        return *t == TACK_BOOL ? -1 : 0;
    }
    if (e->kind == IR_BINOP && (e->op == OP_ADD || e->op == OP_SUB || e->op == OP_MUL ||
                                e->op == OP_POW)) {
        ir_type ta, tb;
        int64_t ia, ib;
        double fa, fb;
        if (fold(env, e->a, &ta, &ia, &fa) || fold(env, e->b, &tb, &ib, &fb)) return -1;
        /* Literal arithmetic of one kind only (2**62, 1 << 40 is not): a
         * mixed one's type is inference's to decide. */
        if (ta != tb || ta == TACK_BOOL) return -1;
        *t = ta;
        if (ir_type_is_float(ta) || ta == IRT_WEAK_FLOAT) {
            *f = e->op == OP_ADD ? fa + fb : e->op == OP_SUB ? fa - fb : e->op == OP_MUL ? fa * fb
                                                                                : __builtin_pow(fa, fb);
            return 0;
        }
        uint64_t a = (uint64_t)ia, b = (uint64_t)ib, r = 1;
        if (e->op == OP_POW) {
            if (ib < 0 || ib > 63) return -1;
            while (b--) r *= a;
        } else {
            r = e->op == OP_ADD ? a + b : e->op == OP_SUB ? a - b : a * b;
        }
        *i = (int64_t)r; /* wraps as the kernel's integers do */
        return 0;
    }
    if (e->kind == IR_CALL && e->fn == INTR_F16 && e->nargs == 1) { /* np.float16(0) */
        ir_type from;
        if (fold(env, e->args[0], &from, i, f)) return -1;
        if (!ir_type_is_float(from) && from != IRT_WEAK_FLOAT)
            *f = ir_type_is_signed(from) || from == IRT_WEAK_INT ? (double)*i : (double)(uint64_t)*i;
        *t = TACK_F16;
        return 0;
    }
    if (e->kind == IR_CAST) {
        ir_type from;
        if (fold(env, e->a, &from, i, f)) return -1;
        int ffrom = ir_type_is_float(from), fto = ir_type_is_float(e->type);
        if (ffrom && !fto) {
            if (!(*f > -9.3e18 && *f < 9.3e18)) return -1; /* NaN, inf: no integer */
            *i = (int64_t)*f;
        }
        if (!ffrom && fto) *f = ir_type_is_signed(from) || from == IRT_WEAK_INT ? (double)*i
                                                                                   : (double)(uint64_t)*i;
        *t = e->type;
        return 0;
    }
    return -1;
}

/* The checks a start's folded type passes (f16 widened to f32). */
static int check_start(lowerer *L, const prologue_name *pn, ir_reduction *r) {
    const stmt *s = pn->at;
    /* An f16 start accumulates in f32 (no device has f16 atomics; NumPy's
     * own f16 sums add in f32 blocks too), returned as a Python float. */
    if (r->type == TACK_F16) r->type = TACK_F32;
    if (r->type == TACK_BOOL) {
        ERR(L, s->value->line, s->value->col, "reduction '%s' starts as a bool; reductions are "
            "integers or floats (write 0 or 1, and return bool(s) from Python)", pn->name);
        return -1;
    }
    int float_init = ir_type_is_float(r->type) || r->type == IRT_WEAK_FLOAT;
    if (float_init && (r->op == ATOM_OR || r->op == ATOM_AND || r->op == ATOM_XOR)) {
        ERR(L, pn->first_update->line, pn->first_update->col, "reduction '%s' is a float, so it "
            "cannot be combined with '%s=' (bitwise operators take integers)", pn->name, pn->op_text);
        return -1;
    }
    return 0;
}

/* A reduction's hidden one-element array parameter and its entry; the
 * reduction's number, or -1. */
static int add_reduction(lowerer *L, const prologue_name *pn, ir_reduction r, const char *pname) {
    ir_func *f = L->f;
    const stmt *s = pn->at;
    if (f->nreductions == IR_MAX_REDUCTIONS) {
        ERR(L, s->line, s->col, "a kernel has at most %d reductions (a vector or matrix counts "
            "one per component)", IR_MAX_REDUCTIONS);
        return -1;
    }
    int p = ir_param_add(f);
    if (p < 0) {
        ERR(L, s->line, s->col, "kernel '%s' has too many parameters for its reductions",
            L->in->def->name);
        return -1;
    }
    ir_param *prm = &f->params[p];
    prm->name = arena_strdup(&f->mem, pname);
    if (!prm->name) return lower_oom(L);
    prm->role = ROLE_ARRAY;
    prm->index_ndim = 1;
    prm->written = 1;
    prm->max_dim_read = -1;
    prm->type = IRT_UNSET;
    prm->line = s->line;
    prm->col = s->col;
    r.param = p;
    f->reductions[f->nreductions] = r;
    return f->nreductions++;
}

static void bind_reduction(lowerer *L, const prologue_name *pn, int id) {
    binding *b = (binding *)scope_find(L->sc, pn->name);
    /* Reductions of earlier loops are finished: their values are read. */
    b->kind = pn->loop < L->stage ? BIND_FINISHED : BIND_REDUCTION;
    b->index = id;
    b->width = 0;
    b->line = pn->at->line;
    b->seg = pn->loop; /* FINISHED: readable in segments after its loop */
}

/* c = tack.vec3d(), m = tack.mat22d(), z = 0j: one scalar reduction per
 * component, each started from its component of the constructor folded
 * to a constant; the binding lists them (comps) and the value's shape. */
static int make_vector_reduction(lowerer *L, const prologue_name *pn, const ir_expr *init) {
    const stmt *s = pn->at;
    int w = init->nargs, op = pn->op;
    char shape[48];
    vec_shape_name(init, shape, sizeof shape);
    const char *what = init->cplx ? "complex number" : shape;
    if (init->cplx && op != ATOM_ADD && op != ATOM_SUB) {
        ERR(L, pn->first_update->line, pn->first_update->col, "reduction '%s' is a complex number, "
            "which is combined with += or -= only ('%s' has no part-by-part meaning); reduce its "
            "parts as two float reductions", pn->name, pn->op_text);
        return -1;
    }
    if (init->dim && op == ATOM_MUL) {
        ERR(L, pn->first_update->line, pn->first_update->col, "reduction '%s' is a %s: '*=' is "
            "not reduced (a product of matrices depends on their order); combine it with +=, -=, "
            "tack.min or tack.max", pn->name, shape);
        return -1;
    }
    if (L->f->nreductions + w > IR_MAX_REDUCTIONS) {
        ERR(L, s->line, s->col, "reduction '%s' is a %s, which takes %d of a kernel's %d "
            "reductions (one per component), and only %d are left; accumulate it into an element "
            "of an output array passed as an argument instead (out[0] += v, atomic per "
            "component)", pn->name, what, w, IR_MAX_REDUCTIONS, IR_MAX_REDUCTIONS - L->f->nreductions);
        return -1;
    }
    binding *b = (binding *)scope_find(L->sc, pn->name);
    int ids[MAX_COMPONENTS];
    for (int k = 0; k < w; k++) {
        ir_reduction r = {.op = (ir_atomic_op)op};
        if (fold(init->body, init->args[k], &r.type, &r.i, &r.f)) {
            ERR(L, s->value->line, s->value->col, "the initial value of reduction '%s', a %s, "
                "must be constant in every component (such as %s)", pn->name, what,
                init->cplx ? "0j or complex(0.0, 0.0)" : init->dim ? "tack.mat22d()" :
                "tack.vec3d() or tack.vec3d(1.0, 2.0, 3.0)");
            return -1;
        }
        if (check_start(L, pn, &r)) return -1;
        char pname[160];
        snprintf(pname, sizeof pname, "%s[%d]", pn->name, k);
        if ((ids[k] = add_reduction(L, pn, r, pname)) < 0) return -1;
    }
    bind_reduction(L, pn, ids[0]);
    b = (binding *)scope_find(L->sc, pn->name);
    b->width = w;
    b->rows = init->dim;
    b->cplx = init->cplx;
    for (int k = 0; k < w; k++) b->comps[k] = ids[k];
    return 0;
}

/* The hidden reduction of `return c / n` (kernel_results.c): one sum
 * from -0.0 per component of the value's shape. */
static int make_result_vector(lowerer *L, const prologue_name *pn, ir_reduction r,
                              const lower_result_shape *sh) {
    int ids[MAX_COMPONENTS];
    if (L->f->nreductions + sh->width > IR_MAX_REDUCTIONS) {
        ERR(L, pn->first_update->line, pn->first_update->col, "this returned value takes %d "
            "reductions (one per component) and only %d of a kernel's %d are left; return fewer "
            "values, or store this one into an output array passed as an argument "
            "(out[0] = value)", sh->width, IR_MAX_REDUCTIONS - L->f->nreductions, IR_MAX_REDUCTIONS);
        return -1;
    }
    for (int k = 0; k < sh->width; k++) {
        char pname[160];
        snprintf(pname, sizeof pname, "%s[%d]", pn->name, k);
        if ((ids[k] = add_reduction(L, pn, r, pname)) < 0) return -1;
    }
    bind_reduction(L, pn, ids[0]);
    binding *b = (binding *)scope_find(L->sc, pn->name);
    b->width = sh->width;
    b->rows = sh->rows;
    b->cplx = sh->cplx;
    for (int k = 0; k < sh->width; k++) b->comps[k] = ids[k];
    return 0;
}

static int make_reduction(lowerer *L, prologue_name *pn) {
    const stmt *s = pn->at;
    ir_reduction r = {.op = (ir_atomic_op)pn->op};
    if (pn->part_write) {
        ERR(L, pn->part_write->line, pn->part_write->col, "'%s' is a reduction (line %d): a part "
            "of it cannot be assigned inside the loop; combine the whole value into it (%s += v, "
            "%s = tack.min(%s, v)) or keep a reduction per component", pn->name,
            L->sc->src.first_line + s->line - 1, pn->name, pn->name, pn->name);
        return -1;
    }
    if (lower_is_result_name(pn->name)) {
        lower_result_shape sh;
        if (lower_result_type(L, pn->first_update->value, &r.type, &r.f, &sh)) return -1;
        if (sh.width) return make_result_vector(L, pn, r, &sh);
        int id = add_reduction(L, pn, r, pn->name);
        if (id < 0) return -1;
        bind_reduction(L, pn, id);
        return 0;
    }
    ir_expr *init = lower_expr(L, s->value);
    if (!init) return -1;
    if (vec_is(init)) return make_vector_reduction(L, pn, init);
    int neg, huge, lit;
    uint64_t mag;
    char text[48];
    lit = !literal_value(init, &neg, &mag, &huge, text, sizeof text);
    if (lit && (huge || (neg && mag > (uint64_t)INT64_MAX + 1))) {
        ERR(L, s->value->line, s->value->col, "the initial value of reduction '%s', %s, fits no "
            "accumulator: a reduction is an i64 (from -2**63) or a u64 (up to 2**64 - 1)",
            pn->name, text);
        return -1;
    }
    if (lit && !neg && mag > (uint64_t)INT64_MAX) {
        /* 2**64 - 1: only a u64 holds it, so the reduction is one. */
        r.type = TACK_U64;
        r.i = (int64_t)mag;
    } else if (fold(NULL, init, &r.type, &r.i, &r.f)) {
        ERR(L, s->value->line, s->value->col, "the initial value of reduction '%s' must be a "
            "constant (a literal such as 0 or 0.0, -math.inf, a tack.constant, or a cast of one "
            "such as np.float32(0))", pn->name);
        return -1;
    }
    if (check_start(L, pn, &r)) return -1;
    int id = add_reduction(L, pn, r, pn->name);
    if (id < 0) return -1;
    bind_reduction(L, pn, id);
    return 0;
}

int lower_count_loops(const func_def *d) {
    int n = 0;
    for (int i = 0; i < d->nbody; i++) n += d->body[i]->kind == ST_FOR;
    return n;
}

int lower_statements_around(lowerer *L, const stmt **loop_out) {
    const func_def *d = L->in->def;
    int loops[IR_MAX_STAGES], nloops = 0, last = -1;
    for (int i = 0; i < d->nbody; i++) {
        if (d->body[i]->kind != ST_FOR) continue;
        if (nloops == IR_MAX_STAGES) {
            ERR(L, d->body[i]->line, d->body[i]->col, "a kernel has at most %d top-level loops",
                IR_MAX_STAGES);
            return -1;
        }
        loops[nloops++] = i;
        last = i;
    }
    if (!nloops) {
        ERR(L, d->nbody ? d->body[0]->line : d->line, d->nbody ? d->body[0]->col : d->col,
            "a kernel's body needs a 'for ... in range(...)' loop (the parallel launch)");
        return -1;
    }
    if (L->stage >= nloops) {
        ERR(L, d->line, d->col, "internal error: stage %d of a kernel with %d loops", L->stage, nloops);
        return -1;
    }
    *loop_out = d->body[loops[L->stage]];
    const stmt *ret = NULL;
    for (int i = last + 1; i < d->nbody; i++) {
        const stmt *s = d->body[i];
        if (s->kind == ST_RETURN && i == d->nbody - 1) {
            ret = s;
            break;
        }
        ERR(L, s->line, s->col, "after the last parallel loop a kernel may only 'return' its "
            "reductions; move this statement inside the loop");
        return -1;
    }
    plan p = {.n = 0};
    int seg = 0;
    for (int i = 0; i < last; i++) {
        const stmt *s = d->body[i];
        if (s->kind == ST_FOR) {
            seg++;
            continue;
        }
        if (s->kind == ST_PASS) continue;
        if (s->kind == ST_RETURN) {
            ERR(L, s->line, s->col, "'return' before the last parallel loop: a kernel returns "
                "after it (return s), or ends an iteration inside a loop");
            return -1;
        }
        if (s->kind != ST_ASSIGN || s->ntargets != 1 || s->targets[0]->kind != EX_NAME) {
            ERR(L, s->line, s->col, "around the parallel loops a kernel may only assign scalars "
                "(name = value, computed from arguments, constants and finished reductions); "
                "move this statement inside a loop");
            return -1;
        }
        const char *name = s->targets[0]->name;
        if (find(&p, name)) {
            ERR(L, s->line, s->col, "'%s' is assigned twice outside the parallel loops; assign "
                "it once (or use another name)", name);
            return -1;
        }
        if (p.n == (int)(sizeof p.names / sizeof p.names[0])) {
            ERR(L, s->line, s->col, "too many names assigned outside the parallel loops");
            return -1;
        }
        p.names[p.n++] = (prologue_name){.name = name, .at = s, .seg = seg, .op = -1, .loop = -1};
    }
    for (int k = 0; k < nloops; k++) {
        const stmt *loop = d->body[loops[k]];
        for (int i = 0; i < p.n; i++) {
            const expr *t = loop->targets[0];
            int hit = t->kind == EX_NAME ? !strcmp(t->name, p.names[i].name) : 0;
            for (int m = 0; t->kind == EX_TUPLE && m < t->nitems; m++)
                hit |= t->items[m]->kind == EX_NAME && !strcmp(t->items[m]->name, p.names[i].name);
            if (hit) return refuse_write(L, &p.names[i], loop);
        }
        p.loop = k;
        if (scan_loop(L, &p, loop->body, loop->nbody)) return -1;
    }
    /* Every name's binding first, then the reductions (in one order in
     * every stage: their hidden parameters must agree). */
    for (int i = 0; i < p.n; i++) {
        binding *b = (binding *)scope_find(L->sc, p.names[i].name);
        if (!b || b->kind != BIND_LOCAL) {
            ERR(L, p.names[i].at->line, p.names[i].at->col, "'%s' cannot be assigned here",
                p.names[i].name);
            return -1;
        }
        if (p.names[i].op >= 0) continue;
        if (!pure_expr(L, p.names[i].at->value)) {
            if (!L->failed)
                ERR(L, p.names[i].at->line, p.names[i].at->col, "outside the parallel loops a "
                    "value must be computed from arguments and constants without effects (no "
                    "device function calls, random draws or atomics); move this statement "
                    "inside a loop");
            return -1;
        }
        b->kind = BIND_PROLOGUE;
        b->index = i;
        b->seg = p.names[i].seg;
        b->value = p.names[i].at->value;
        b->line = p.names[i].at->line;
    }
    for (int i = 0; i < p.n; i++)
        if (p.names[i].op >= 0 && make_reduction(L, &p.names[i])) return -1;
    return ret ? lower_kernel_results(L, ret) : 0;
}

ir_expr *lower_prologue_value(lowerer *L, binding *b, const expr *at) {
    if (b->busy || b->index >= L->prologue_limit || b->seg > L->reading_seg) {
        ERR(L, at->line, at->col, "'%s' is used before it is assigned (line %d)", b->name,
            L->sc->src.first_line + b->line - 1);
        return NULL;
    }
    int limit = L->prologue_limit, seg = L->reading_seg;
    const char *name = b->name;
    b->busy = 1;
    L->prologue_limit = b->index;
    L->reading_seg = b->seg;
    ir_expr *v = lower_expr(L, b->value);
    L->prologue_limit = limit;
    L->reading_seg = seg;
    /* Found again: lowering may have grown the scope's bindings. */
    ((binding *)scope_find(L->sc, name))->busy = 0;
    return v;
}

int lower_reduction_read_error(lowerer *L, const binding *b, const expr *at) {
    ERR(L, at->line, at->col, "'%s' is a reduction (line %d): its value is known only after the "
        "parallel loop, so it can be combined into (%s += v, %s = min(%s, v)...) and returned, "
        "but not read inside or before the loop", b->name, L->sc->src.first_line + b->line - 1,
        b->name, b->name, b->name);
    return -1;
}

/* x[0] of reduction `id`'s hidden array. */
static ir_expr *load_reduction(lowerer *L, int id, const expr *at) {
    const ir_reduction *r = &L->f->reductions[id];
    ir_expr *x = ir_expr_new(L->f, IR_LOAD, at->line, at->col);
    ir_expr **idx = arena_alloc(&L->f->mem, sizeof *idx);
    ir_expr *zero = ir_const_int(L->f, 0, IRT_WEAK_INT, at->line, at->col);
    if (!x || !idx || !zero) {
        lower_oom(L);
        return NULL;
    }
    idx[0] = zero;
    x->index = r->param;
    x->args = idx;
    x->nargs = 1;
    return x;
}

ir_expr *lower_finished_reduction(lowerer *L, const binding *b, const expr *at) {
    if (b->seg >= L->reading_seg) { /* read before its loop has run */
        lower_reduction_read_error(L, b, at);
        return NULL;
    }
    if (L->in_range) {
        ERR(L, at->line, at->col, "the range of a parallel loop cannot depend on reduction '%s' "
            "(the range is computed before any loop runs)", b->name);
        return NULL;
    }
    if (!b->width) return load_reduction(L, b->index, at);
    /* A vector, matrix or complex reduction: its value, whole again. */
    ir_expr *v = vec_new(L, b->width, at);
    if (!v) return NULL;
    v->dim = b->rows;
    v->cplx = b->cplx;
    for (int k = 0; k < b->width; k++)
        if (lower_set_local(L, v->body, v->args[k]->index, load_reduction(L, b->comps[k], at), at))
            return NULL;
    return v;
}

/* One atomic `op` of value into reduction `id`, appended to b. */
static int combine(lowerer *L, ir_block *b, int id, ir_expr *v, const stmt *s) {
    const ir_reduction *r = &L->f->reductions[id];
    ir_stmt *eval = ir_stmt_new(L->f, IR_EVAL, s->line, s->col);
    ir_expr *x = ir_expr_new(L->f, IR_ATOMIC, s->line, s->col);
    ir_expr **idx = arena_alloc(&L->f->mem, sizeof *idx);
    ir_expr *zero = ir_const_int(L->f, 0, IRT_WEAK_INT, s->line, s->col);
    if (!v || !eval || !x || !idx || !zero) return lower_oom(L);
    idx[0] = zero;
    x->index = r->param;
    x->atomic = r->op;
    x->args = idx;
    x->nargs = 1;
    x->a = v;
    eval->value = x;
    return ir_block_push(L->f, b, eval) ? lower_oom(L) : 0;
}

/* c += v of a vector, matrix or complex reduction: an atomic per
 * component, v's setup run once first; a real scalar v is broadcast (to
 * a complex number's real part only). */
static int vector_update(lowerer *L, ir_block *b, const stmt *s, const binding *bound,
                         ir_expr *v, const expr *value) {
    char want[48], got[48];
    ir_expr shape = {.nargs = bound->width, .dim = bound->rows};
    vec_shape_name(&shape, want, sizeof want);
    if (bound->cplx) snprintf(want, sizeof want, "complex number");
    if (vec_is(v)) {
        if (v->nargs != bound->width || v->dim != bound->rows || (v->cplx != 0) != (bound->cplx != 0)) {
            if (v->cplx) snprintf(got, sizeof got, "complex number");
            else vec_shape_name(v, got, sizeof got);
            ERR(L, value->line, value->col, "reduction '%s' is a %s and cannot be combined with a "
                "%s", bound->name, want, got);
            return -1;
        }
        if (vec_eval(L, b, v)) return -1;
        for (int k = 0; k < bound->width; k++) {
            ir_expr *x = lower_read_local(L, v->args[k]->index, value);
            if (x && lower_is_result_name(bound->name)) { /* as its slot's type */
                ir_expr *c = ir_expr_new(L->f, IR_CAST, value->line, value->col);
                if (!c) return lower_oom(L);
                c->type = L->f->reductions[bound->comps[k]].type;
                c->a = x;
                x = c;
            }
            if (combine(L, b, bound->comps[k], x, s)) return -1;
        }
        return 0;
    }
    if (bound->rows) {
        ERR(L, value->line, value->col, "reduction '%s' is a %s and cannot be combined with a "
            "scalar; combine a %s into it", bound->name, want, want);
        return -1;
    }
    int t = lower_temp(L, "r");
    if (t < 0 || lower_set_local(L, b, t, v, value)) return -1;
    for (int k = 0; k < (bound->cplx ? 1 : bound->width); k++)
        if (combine(L, b, bound->comps[k], lower_read_local(L, t, value), s)) return -1;
    return 0;
}

int lower_reduction_update(lowerer *L, ir_block *b, const stmt *s, const binding *bound) {
    const ir_reduction *r = &L->f->reductions[bound->index];
    const expr *value = s->kind == ST_AUGASSIGN ? s->value : s->value->items[1];
    ir_expr *v = lower_expr(L, value);
    if (!v) return -1;
    if (bound->width) return vector_update(L, b, s, bound, v, value);
    if (lower_is_result_name(bound->name) && !vec_is(v)) { /* a returned value, as its slot's type */
        ir_expr *c = ir_expr_new(L->f, IR_CAST, value->line, value->col);
        if (!c) return lower_oom(L);
        c->type = r->type;
        c->a = v;
        v = c;
    }
    if (vec_is(v)) {
        if (lower_is_result_name(bound->name)) {
            /* The hidden result is a scalar slot, typed before any stage
             * is compiled (kernel_results.c): a whole value returns only
             * as the reduction itself. */
            ERR(L, value->line, value->col, "it returns an expression whose value is "
                "a %s: a kernel returns a complex number, vector or matrix only as a reduction's "
                "name (return c); return c and finish the arithmetic on the host, store the "
                "value into an output array passed as an argument (out[0] = value), or return "
                "its components",
                v->cplx ? "complex number" : v->dim ? "matrix" : "vector");
            return -1;
        }
        ERR(L, value->line, value->col, "reduction '%s' is a scalar; combine one component "
            "at a time, or start it as a vector (%s = tack.vec3d()) to combine whole vectors",
            bound->name, bound->name);
        return -1;
    }
    return combine(L, b, bound->index, v, s);
}

/* `return s, c, m`: each value's numbers are consecutive returns, and
 * f->return_values says which make a complex, a vector or a matrix (the
 * runtime reads each number back, the host assembles the values). */
int lower_kernel_results(lowerer *L, const stmt *s) {
    if (!s->value) return 0;
    const expr *v = s->value;
    int n = v->kind == EX_TUPLE ? v->nitems : 1, numbers = 0;
    if (n > TACK_MAX_RESULT_VALUES) {
        ERR(L, v->line, v->col, "a kernel returns at most %d values", TACK_MAX_RESULT_VALUES);
        return -1;
    }
    for (int i = 0; i < n; i++) {
        const expr *item = v->kind == EX_TUPLE ? v->items[i] : v;
        const binding *b = item->kind == EX_NAME ? scope_find(L->sc, item->name) : NULL;
        if (!b || (b->kind != BIND_REDUCTION && b->kind != BIND_FINISHED)) {
            ERR(L, item->line, item->col, "a kernel returns its reductions (names assigned a "
                "constant before the parallel loop and combined into inside it, such as "
                "s = 0.0 ... s += x[i]); write the result into an output array passed as an "
                "argument (out[i] = value)");
            return -1;
        }
        int count = b->width ? b->width : 1;
        if (numbers + count > TACK_MAX_RESULTS) {
            ERR(L, item->line, item->col, "kernel '%s' returns more than %d numbers in all "
                "('%s' has %d); return fewer values, or store some into an output array",
                L->in->def->name, TACK_MAX_RESULTS, b->name, count);
            return -1;
        }
        ir_return_value *rv = &L->f->return_values[i];
        rv->count = count;
        rv->rows = b->width ? b->rows : 0;
        rv->cols = b->width && b->rows ? b->width / b->rows : 0;
        rv->kind = !b->width ? TACK_RESULT_SCALAR : b->cplx ? TACK_RESULT_COMPLEX
                   : b->rows ? TACK_RESULT_MATRIX : TACK_RESULT_VECTOR;
        for (int k = 0; k < count; k++)
            L->f->returns[numbers++] = b->width ? b->comps[k] : b->index;
    }
    L->f->nreturns = numbers;
    L->f->nreturn_values = n;
    return 0;
}
