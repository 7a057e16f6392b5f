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

#include <stdlib.h>

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

/* Each load and store refuses its array; an atomic whose value a
 * statement throws away (IR_EVAL) is used, any other refuses. */
static int find_expr(void *ctx, const ir_expr *e, const ir_stmt *value_of) {
    finder *w = ctx;
    if (e->kind == IR_LOAD) refuse(w, e->index);
    if (e->kind == IR_ATOMIC) {
        if (value_of && value_of->kind == IR_EVAL) use(w, e->index, family_of(w->f, e));
        else refuse(w, e->index);
    }
    return 0;
}

static int find_stmt(void *ctx, const ir_stmt *s) {
    if (s->kind == IR_STORE) refuse(ctx, s->index);
    return 0;
}

int cpu_private_atomics(const ir_func *f, int *family) {
    finder w = {f, family};
    for (int p = 0; p < f->nparams; p++) family[p] = 0;
    ir_walk_func(&(ir_walker){.expr = find_expr, .stmt = find_stmt, .ctx = &w}, f);
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

/* ---- atomic updates at offsets of the launch variable (cpu.h) ---- */

typedef struct affine {
    int ok;
    int64_t a, c, d; /* a * i + k with c <= k <= d, i the launch variable */
} affine;

typedef struct offsets {
    const ir_func *f;
    cpu_offset_atomic *out;
    int *refused;  /* per parameter */
    int *nassign;  /* per local: assignments (a loop variable counts 2) */
    const ir_expr **value; /* per local: its one assignment's value */
    char *state;   /* per local: 0 not yet, 1 in progress, 2 done */
    char *seen;    /* per local: its assignment precedes this point of the
                      walk (a read before it could see an earlier value) */
    affine *memo;
    /* per local: the values of a sequential loop's variable, where every
     * assignment of it is a `for` over literal bounds (lo..hi, 0 included:
     * a read before the loop sees 0); ranged 1 such, -1 not */
    int64_t *lo, *hi;
    signed char *ranged;
} offsets;

static const affine no_affine = {0, 0, 0, 0};

static int is_i64(ir_type t) { return ir_type_is_int(t) && ir_type_bits(t) == 64; }

static affine affine_of(offsets *w, const ir_expr *e) {
    affine r = no_affine, x, y;
    switch (e->kind) {
    case IR_CONST:
        if (!ir_type_is_int(e->type)) return no_affine;
        r.ok = 1;
        r.c = r.d = e->i;
        return r;
    case IR_LOCAL: {
        int l = e->index;
        if (l == w->f->loop_var) return w->nassign[l] ? no_affine : (affine){1, 1, 0, 0};
        if (w->ranged[l] == 1) return (affine){1, 0, w->lo[l], w->hi[l]};
        if (w->nassign[l] != 1 || !w->value[l] || !w->seen[l] || w->state[l] == 1) return no_affine;
        if (w->state[l] == 0) {
            w->state[l] = 1;
            w->memo[l] = affine_of(w, w->value[l]);
            w->state[l] = 2;
        }
        return w->memo[l];
    }
    case IR_CAST:
        /* widening or same-width: no wrap in what it reads */
        if (!is_i64(e->type) || !is_i64(e->a->type)) return no_affine;
        return affine_of(w, e->a);
    case IR_UNOP:
        if (!is_i64(e->type) || e->op != OP_NEG) return no_affine;
        x = affine_of(w, e->a);
        if (!x.ok || x.a == INT64_MIN || x.c == INT64_MIN || x.d == INT64_MIN) return no_affine;
        return (affine){1, -x.a, -x.d, -x.c};
    case IR_BINOP:
        if (!is_i64(e->type)) return no_affine;
        x = affine_of(w, e->a);
        y = affine_of(w, e->b);
        if (!x.ok || !y.ok) return no_affine;
        r.ok = 1;
        if (e->op == OP_ADD) {
            if (__builtin_add_overflow(x.a, y.a, &r.a) || __builtin_add_overflow(x.c, y.c, &r.c) ||
                __builtin_add_overflow(x.d, y.d, &r.d))
                return no_affine;
            return r;
        }
        if (e->op == OP_SUB) {
            if (__builtin_sub_overflow(x.a, y.a, &r.a) || __builtin_sub_overflow(x.c, y.d, &r.c) ||
                __builtin_sub_overflow(x.d, y.c, &r.d))
                return no_affine;
            return r;
        }
        /* times a literal k (a range times a range is not kept) */
        if (e->op == OP_MUL && ((x.a == 0 && x.c == x.d) || (y.a == 0 && y.c == y.d))) {
            affine k = x.a == 0 && x.c == x.d ? x : y, v = x.a == 0 && x.c == x.d ? y : x;
            int64_t p, q;
            if (__builtin_mul_overflow(v.a, k.c, &r.a) || __builtin_mul_overflow(v.c, k.c, &p) ||
                __builtin_mul_overflow(v.d, k.c, &q))
                return no_affine;
            r.c = p < q ? p : q;
            r.d = p < q ? q : p;
            return r;
        }
        return no_affine;
    default:
        return no_affine;
    }
}

static void off_refuse(offsets *w, int p) {
    if (p >= 0 && p < w->f->nparams) w->refused[p] = 1;
}

/* An atomic add or subtract whose value is thrown away, at a * i + c with
 * one a per array, widens the array's window; any other access refuses. */
static int off_expr(void *ctx, const ir_expr *e, const ir_stmt *value_of) {
    offsets *w = ctx;
    if (e->kind == IR_LOAD) off_refuse(w, e->index);
    if (e->kind == IR_ATOMIC) {
        int p = e->index, unused = value_of && value_of->kind == IR_EVAL;
        affine x = unused && (e->atomic == ATOM_ADD || e->atomic == ATOM_SUB) && e->nargs == 1
                       ? affine_of(w, e->args[0]) : no_affine;
        cpu_offset_atomic *o = &w->out[p];
        if (!x.ok || x.a == 0 || (o->on && o->a != x.a)) {
            off_refuse(w, p);
        } else if (!o->on) {
            *o = (cpu_offset_atomic){1, x.a, x.c, x.d};
        } else {
            if (x.c < o->cmin) o->cmin = x.c;
            if (x.d > o->cmax) o->cmax = x.d;
        }
    }
    return 0;
}

static int off_stmt(void *ctx, const ir_stmt *s) {
    if (s->kind == IR_STORE) off_refuse(ctx, s->index);
    return 0;
}

/* The value of integer literals combined with + - * (resolve_dims leaves
 * `x.shape[1] - 1` as `8 - 1`), through widening casts. */
static int literal(const ir_expr *e, int64_t *v) {
    int64_t a, b;
    while (e && e->kind == IR_CAST && is_i64(e->type) && ir_type_is_int(e->a->type)) e = e->a;
    if (!e || !ir_type_is_int(e->type)) return 0;
    if (e->kind == IR_CONST) {
        *v = e->i;
        return 1;
    }
    if (e->kind != IR_BINOP || !is_i64(e->type) || !literal(e->a, &a) || !literal(e->b, &b)) return 0;
    if (e->op == OP_ADD) return !__builtin_add_overflow(a, b, v);
    if (e->op == OP_SUB) return !__builtin_sub_overflow(a, b, v);
    if (e->op == OP_MUL) return !__builtin_mul_overflow(a, b, v);
    return 0;
}

/* Widens the range of s's variable by the values `for` s gives it. */
static void for_range(offsets *w, const ir_stmt *s) {
    int l = s->index;
    int64_t a, b, st, last;
    if (w->ranged[l] < 0) return;
    if (!literal(s->start, &a) || !literal(s->stop, &b) || !literal(s->step, &st) || st == 0 ||
        a < -((int64_t)1 << 40) || a > ((int64_t)1 << 40) || b < -((int64_t)1 << 40) || b > ((int64_t)1 << 40)) {
        w->ranged[l] = -1;
        return;
    }
    last = st > 0 ? (b > a ? b - 1 : a) : (b < a ? b + 1 : a); /* a bound past the last value */
    int64_t lo = a < last ? a : last, hi = a < last ? last : a;
    if (lo > 0) lo = 0;
    if (hi < 0) hi = 0;
    if (!w->ranged[l]) {
        w->lo[l] = lo;
        w->hi[l] = hi;
    } else {
        if (lo < w->lo[l]) w->lo[l] = lo;
        if (hi > w->hi[l]) w->hi[l] = hi;
    }
    w->ranged[l] = 1;
}

/* An assignment's local is seen once its value has been walked. */
static int off_assigned(void *ctx, const ir_stmt *s) {
    offsets *w = ctx;
    if (s->kind == IR_ASSIGN) w->seen[s->index] = 1;
    return 0;
}

/* Each local's assignments (a loop variable counts 2) and its last value. */
static int count_stmt(void *ctx, const ir_stmt *s) {
    offsets *w = ctx;
    if (s->kind == IR_ASSIGN) {
        w->nassign[s->index]++;
        w->value[s->index] = s->value;
        w->ranged[s->index] = -1; /* assigned otherwise than by its loops */
    }
    if (s->kind == IR_FOR) {
        w->nassign[s->index] += 2;
        for_range(w, s);
    }
    return 0;
}

int cpu_offset_atomics(const ir_func *f, cpu_offset_atomic *out) {
    for (int p = 0; p < f->nparams; p++) out[p] = (cpu_offset_atomic){0, 0, 0, 0};
    /* Overlapping arrays could reach one element through two names; a
     * workgroup kernel's iterations are its lanes. */
    if (!f->disjoint || f->collective || f->loop_var < 0) return 0;
    int nl = f->nlocals ? f->nlocals : 1, np = f->nparams ? f->nparams : 1;
    offsets w = {f, out, calloc(np, sizeof(int)), calloc(nl, sizeof(int)),
                 calloc(nl, sizeof(const ir_expr *)), calloc(nl, 1), calloc(nl, 1),
                 calloc(nl, sizeof(affine)), calloc(nl, sizeof(int64_t)), calloc(nl, sizeof(int64_t)),
                 calloc(nl, 1)};
    int n = 0;
    if (w.refused && w.nassign && w.value && w.state && w.seen && w.memo && w.lo && w.hi && w.ranged) {
        ir_walk_block(&(ir_walker){.stmt = count_stmt, .ctx = &w}, &f->body);
        ir_walk_func(&(ir_walker){.expr = off_expr, .stmt = off_stmt, .before_blocks = off_assigned,
                                  .ctx = &w},
                     f);
        for (int p = 0; p < f->nparams; p++) {
            ir_type t = f->params[p].type;
            int64_t span;
            /* far-fetched sizes: keep the atomics rather than reason about overflow */
            int huge = out[p].a > (1 << 30) || out[p].a < -(1 << 30) ||
                       __builtin_sub_overflow(out[p].cmax, out[p].cmin, &span) || span > ((int64_t)1 << 40);
            if (w.refused[p] || f->params[p].role != ROLE_ARRAY || ir_reduction_of_param(f, p) >= 0 ||
                t == TACK_F16 || t == TACK_BOOL || huge)
                out[p].on = 0;
            n += out[p].on;
        }
    } else {
        for (int p = 0; p < f->nparams; p++) out[p].on = 0;
    }
    free(w.refused);
    free(w.nassign);
    free((void *)w.value);
    free(w.state);
    free(w.seen);
    free(w.memo);
    free(w.lo);
    free(w.hi);
    free(w.ranged);
    return n;
}
