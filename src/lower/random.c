/* random.c - random numbers in kernels, from a counter-based generator:
 * each draw advances a 64-bit state by a constant and scrambles it
 * (SplitMix64's finalizer), all in integer arithmetic, so every device
 * draws the same numbers for the same seed and iteration.
 *
 *   rng = tack.rng(seed, i)      a state for this seed and iteration
 *   tack.uniform(rng)            [0, 1) in the kernel's float type
 *   tack.normal(rng)             mean 0, deviation 1 (Box-Muller)
 *   tack.randint(rng, lo, hi)    an integer in [lo, hi)
 *
 * each advancing `rng` (a local name); Warp's spellings of the same are
 * tack.rand_init(seed[, offset]), tack.randf(rng[, lo, hi]),
 * tack.randn(rng) and tack.randi(rng[, lo, hi]) (no bounds: a full-range
 * int32).  Numba's np.random.random(),
 * np.random.uniform(a, b), np.random.normal(mu, sigma), random.random(),
 * random.uniform(a, b) and random.gauss(mu, sigma) draw from a hidden state
 * per iteration, seeded from the hidden parameter the runtime fills on
 * each launch from a process-wide sequence (tack.seed(s) restarts it). */
#include <stdint.h>
#include <string.h>

#include "lower_internal.h"

#define GOLDEN 0x9E3779B97F4A7C15ull
#define MIX1 0xBF58476D1CE4E5B9ull
#define MIX2 0x94D049BB133111EBull

static ir_expr *u64c(lowerer *L, uint64_t v, const expr *at) {
    ir_expr *x = ir_const_int(L->f, (int64_t)v, TACK_U64, at->line, at->col);
    if (!x) lower_oom(L);
    return x;
}

static ir_expr *bin(lowerer *L, ir_op op, ir_expr *a, ir_expr *b, const expr *at) {
    ir_expr *x = a && b ? ir_expr_new(L->f, IR_BINOP, at->line, at->col) : NULL;
    if (a && b && !x) lower_oom(L);
    if (!x) return NULL;
    x->op = op;
    x->a = a;
    x->b = b;
    return x;
}

static ir_expr *cast(lowerer *L, ir_expr *e, ir_type t) {
    ir_expr *x = e ? ir_expr_new(L->f, IR_CAST, e->line, e->col) : NULL;
    if (e && !x) lower_oom(L);
    if (!x) return NULL;
    x->type = t;
    x->a = e;
    return x;
}

/* SplitMix64's finalizer of the u64 held in local z, in place. */
static int scramble(lowerer *L, ir_block *b, int z, const expr *at) {
    static const struct { int shift; uint64_t mul; } steps[] = {{30, MIX1}, {27, MIX2}, {31, 0}};
    for (int k = 0; k < 3; k++) {
        ir_expr *x = bin(L, OP_XOR, lower_read_local(L, z, at),
                         bin(L, OP_SHR, lower_read_local(L, z, at), u64c(L, (uint64_t)steps[k].shift, at), at), at);
        if (steps[k].mul) x = bin(L, OP_MUL, x, u64c(L, steps[k].mul, at), at);
        if (lower_set_local(L, b, z, x, at)) return -1;
    }
    return 0;
}

/* The next draw from state local `state`: advances it, leaves the
 * scrambled u64 in a fresh local (returned). */
static int next_bits(lowerer *L, ir_block *b, int state, const expr *at) {
    int z = lower_temp(L, "rnd");
    if (z < 0 || lower_set_local(L, b, state, bin(L, OP_ADD, lower_read_local(L, state, at), u64c(L, GOLDEN, at), at), at) ||
        lower_set_local(L, b, z, lower_read_local(L, state, at), at) || scramble(L, b, z, at))
        return -1;
    return z;
}

/* A block whose value is a local: the draw's statements, then the value. */
static ir_expr *block_value(lowerer *L, ir_block *body, int result, const expr *at) {
    ir_expr *x = ir_expr_new(L->f, IR_INLINE, at->line, at->col);
    if (!x) {
        lower_oom(L);
        return NULL;
    }
    x->body = body;
    x->index = result;
    x->inline_id = L->f->ninlines++;
    return x;
}

/* [0, 1) in the kernel's float type: the top 53 bits times 2^-53 (a weak
 * literal, so f32 in an f32 kernel), and the largest f32 below 1 where
 * f32 rounding reaches 1. */
static int uniform_into(lowerer *L, ir_block *b, int state, int result, const expr *at) {
    int z = next_bits(L, b, state, at);
    if (z < 0) return -1;
    ir_expr *u = bin(L, OP_MUL, bin(L, OP_SHR, lower_read_local(L, z, at), u64c(L, 11, at), at),
                     ir_const_float(L->f, 0x1p-53, IRT_WEAK_FLOAT, at->line, at->col), at);
    if (lower_set_local(L, b, result, u, at)) return -1;
    ir_expr *below = ir_expr_new(L->f, IR_SELECT, at->line, at->col);
    if (!below) return lower_oom(L);
    below->cond = bin(L, OP_LT, lower_read_local(L, result, at),
                      ir_const_float(L->f, 1.0, IRT_WEAK_FLOAT, at->line, at->col), at);
    below->a = lower_read_local(L, result, at);
    below->b = ir_const_float(L->f, 0x1.fffffep-1, IRT_WEAK_FLOAT, at->line, at->col);
    return lower_set_local(L, b, result, below, at);
}

static ir_expr *call1(lowerer *L, ir_intrinsic fn, ir_expr *a, const expr *at) {
    ir_expr *x = a ? ir_expr_new(L->f, IR_CALL, at->line, at->col) : NULL;
    ir_expr **args = x ? arena_alloc(&L->f->mem, sizeof *args) : NULL;
    if (a && !args) lower_oom(L);
    if (!args) return NULL;
    args[0] = a;
    x->fn = fn;
    x->args = args;
    x->nargs = 1;
    return x;
}

static ir_expr *wf(lowerer *L, double v, const expr *at) {
    ir_expr *x = ir_const_float(L->f, v, IRT_WEAK_FLOAT, at->line, at->col);
    if (!x) lower_oom(L);
    return x;
}

/* A standard normal draw (two uniforms) into result. */
static int normal_into(lowerer *L, ir_block *b, int state, int result, const expr *at) {
    int u1 = lower_temp(L, "u"), u2 = lower_temp(L, "u");
    if (u1 < 0 || u2 < 0 || uniform_into(L, b, state, u1, at) || uniform_into(L, b, state, u2, at))
        return -1;
    /* sqrt(-2 log(1 - u1)) cos(2 pi u2); 1 - u1 lies in (0, 1]. */
    ir_expr *r = call1(L, INTR_SQRT,
                       bin(L, OP_MUL, wf(L, -2.0, at),
                           call1(L, INTR_LOG, bin(L, OP_SUB, wf(L, 1.0, at), lower_read_local(L, u1, at), at), at),
                           at),
                       at);
    ir_expr *c = call1(L, INTR_COS, bin(L, OP_MUL, wf(L, 6.283185307179586, at), lower_read_local(L, u2, at), at), at);
    return lower_set_local(L, b, result, bin(L, OP_MUL, r, c, at), at);
}

/* The state local a call advances: an explicit `rng` name, or the
 * hidden per-iteration one. */
static int explicit_state(lowerer *L, const expr *call, const char *what) {
    const expr *a = call->nitems ? call->items[0] : NULL;
    const binding *bd = a && a->kind == EX_NAME ? scope_find(L->sc, a->name) : NULL;
    if (!bd || bd->kind != BIND_LOCAL) {
        ERR(L, call->line, call->col, "tack.%s() takes the generator's name as its first argument "
            "(rng = tack.rng(seed, i), then tack.%s(rng...))", what, what);
        return -1;
    }
    return bd->index;
}

static int hidden_state(lowerer *L) {
    if (L->rng_state < 0) {
        L->rng_state = lower_temp(L, "rng");
        if (L->rng_state < 0) return -1;
    }
    return L->rng_state;
}

int random_name(const char *path) {
    static const struct { const char *path; int which; } names[] = {
        {"tack.rng", RND_RNG},           {"tack.uniform", RND_UNIFORM},
        {"tack.normal", RND_NORMAL},     {"tack.randint", RND_RANDINT},
        {"numpy.random.random", RND_NP_RANDOM}, {"numpy.random.uniform", RND_NP_UNIFORM},
        {"numpy.random.normal", RND_NP_NORMAL}, {"random.random", RND_NP_RANDOM},
        {"random.uniform", RND_NP_UNIFORM},     {"random.gauss", RND_NP_NORMAL},
        /* Warp's names */
        {"tack.rand_init", RND_RNG},     {"tack.randf", RND_UNIFORM},
        {"tack.randn", RND_NORMAL},      {"tack.randi", RND_RANDINT},
    };
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (!strcmp(path, names[i].path)) return names[i].which;
    return -1;
}

static int want_args(lowerer *L, const expr *call, const char *what, int lo, int hi) {
    if (call->nitems >= lo && call->nitems <= hi) return 0;
    ERR(L, call->line, call->col, "%s() takes %d%s%s argument%s, got %d", what, lo,
        hi > lo ? " to " : "", hi > lo ? (hi == 2 ? "2" : "3") : "", hi == 1 ? "" : "s",
        call->nitems);
    return -1;
}

ir_expr *lower_random_call(lowerer *L, const expr *call, int which, const char *path) {
    ir_block *b = arena_alloc(&L->f->mem, sizeof *b);
    int result = lower_temp(L, "draw");
    if (!b || result < 0) {
        lower_oom(L);
        return NULL;
    }
    const expr *at = call;
    int state;
    switch (which) {
    case RND_RNG: {
        /* mix(mix(seed) ^ i * GOLDEN): streams for nearby seeds and
         * iterations are unrelated. */
        int warp = !strcmp(path, "tack.rand_init"); /* wp.rand_init(seed[, offset]) */
        if (want_args(L, call, path, warp ? 1 : 2, 2)) return NULL;
        ir_expr *seed = lower_expr(L, call->items[0]);
        ir_expr *i = call->nitems > 1 ? lower_expr(L, call->items[1])
                                      : ir_const_int(L->f, 0, IRT_WEAK_INT, at->line, at->col);
        if (!seed || !i) return NULL;
        ir_expr *seed64 = cast(L, seed, TACK_U64);
        if (seed64) seed64->index_cast = 2; /* inference refuses a float seed */
        if (lower_set_local(L, b, result, seed64, at) || scramble(L, b, result, at) ||
            lower_set_local(L, b, result, bin(L, OP_XOR, lower_read_local(L, result, at),
                                  bin(L, OP_MUL, cast(L, i, TACK_U64), u64c(L, GOLDEN, at), at), at),
                at) ||
            scramble(L, b, result, at))
            return NULL;
        return block_value(L, b, result, at);
    }
    case RND_UNIFORM:
    case RND_NORMAL: {
        /* wp.randf(state, lo, hi): lo + (hi - lo) u */
        int bounded = which == RND_UNIFORM && !strcmp(path, "tack.randf");
        if (want_args(L, call, path, 1, bounded ? 3 : 1) || (bounded && call->nitems == 2)) {
            if (!L->failed) want_args(L, call, path, 3, 3);
            return NULL;
        }
        if ((state = explicit_state(L, call, path + 5)) < 0) return NULL;
        if ((which == RND_UNIFORM ? uniform_into : normal_into)(L, b, state, result, at)) return NULL;
        if (call->nitems == 3) {
            ir_expr *lo = lower_expr(L, call->items[1]), *hi = lower_expr(L, call->items[2]);
            if (!lo || !hi ||
                lower_set_local(L, b, result, bin(L, OP_ADD, lo, bin(L, OP_MUL, bin(L, OP_SUB, hi, lo, at),
                                                        lower_read_local(L, result, at), at), at), at))
                return NULL;
        }
        return block_value(L, b, result, at);
    }
    case RND_RANDINT: {
        /* wp.randi(state): the int32 range, as Warp's (a 32-bit draw) */
        int full = !strcmp(path, "tack.randi") && call->nitems == 1;
        if (want_args(L, call, path, full ? 1 : 3, 3) || (state = explicit_state(L, call, path + 5)) < 0)
            return NULL;
        ir_expr *lo = full ? ir_const_int(L->f, INT32_MIN, TACK_I64, at->line, at->col)
                           : lower_expr(L, call->items[1]);
        ir_expr *hi = full ? ir_const_int(L->f, (int64_t)INT32_MAX + 1, TACK_I64, at->line, at->col)
                           : lower_expr(L, call->items[2]);
        int z = lo && hi ? next_bits(L, b, state, at) : -1;
        int l = lower_temp(L, "lo"), h = lower_temp(L, "hi"), span = lower_temp(L, "span");
        int thr = lower_temp(L, "thr");
        if (z < 0 || l < 0 || h < 0 || span < 0 || thr < 0) return NULL;
        /* The span hi - lo counted in u64, so one of 2**63 or more (up to
         * 2**64 - 1) is not a negative i64; 1 when hi <= lo (then lo).  A
         * draw below 2**64 mod span is drawn again, so every value of the
         * span has as many draws as the next (OpenBSD's arc4random_uniform):
         * uniform for any span, and for a small one a redraw is rare. */
        if (lower_set_local(L, b, l, cast(L, lo, TACK_I64), at) ||
            lower_set_local(L, b, h, cast(L, hi, TACK_I64), at))
            return NULL;
        ir_expr *pick = ir_expr_new(L->f, IR_SELECT, at->line, at->col);
        ir_stmt *redraw = ir_stmt_new(L->f, IR_WHILE, at->line, at->col);
        if (!pick || !redraw) {
            lower_oom(L);
            return NULL;
        }
        pick->cond = bin(L, OP_GT, lower_read_local(L, h, at), lower_read_local(L, l, at), at);
        pick->a = bin(L, OP_SUB, cast(L, lower_read_local(L, h, at), TACK_U64),
                      cast(L, lower_read_local(L, l, at), TACK_U64), at);
        pick->b = u64c(L, 1, at);
        if (lower_set_local(L, b, span, pick, at) ||
            lower_set_local(L, b, thr, bin(L, OP_MOD, bin(L, OP_SUB, u64c(L, 0, at), lower_read_local(L, span, at), at),
                                           lower_read_local(L, span, at), at), at))
            return NULL;
        redraw->value = bin(L, OP_LT, lower_read_local(L, z, at), lower_read_local(L, thr, at), at);
        if (lower_set_local(L, &redraw->body, state, bin(L, OP_ADD, lower_read_local(L, state, at), u64c(L, GOLDEN, at), at), at) ||
            lower_set_local(L, &redraw->body, z, lower_read_local(L, state, at), at) ||
            scramble(L, &redraw->body, z, at) || ir_block_push(L->f, b, redraw))
            return NULL;
        /* lo + z % span in u64 (wraps back into i64's range), lo when hi <= lo */
        ir_expr *v = ir_expr_new(L->f, IR_SELECT, at->line, at->col);
        if (!v) {
            lower_oom(L);
            return NULL;
        }
        v->cond = bin(L, OP_GT, lower_read_local(L, h, at), lower_read_local(L, l, at), at);
        v->a = cast(L, bin(L, OP_ADD, cast(L, lower_read_local(L, l, at), TACK_U64),
                           bin(L, OP_MOD, lower_read_local(L, z, at), lower_read_local(L, span, at), at), at),
                    TACK_I64);
        v->b = lower_read_local(L, l, at);
        if (lower_set_local(L, b, result, v, at)) return NULL;
        return block_value(L, b, result, at);
    }
    default: { /* Numba's: the iteration's hidden stream */
        int n = which == RND_NP_RANDOM ? 0 : 2;
        if (want_args(L, call, path, n, n) || (state = hidden_state(L)) < 0) return NULL;
        ir_expr *a = n ? lower_expr(L, call->items[0]) : NULL;
        ir_expr *s = n ? lower_expr(L, call->items[1]) : NULL;
        if (n && (!a || !s)) return NULL;
        if ((which == RND_NP_NORMAL ? normal_into : uniform_into)(L, b, state, result, at))
            return NULL;
        /* uniform(a, b) = a + (b - a) u; normal(mu, sigma) = mu + sigma n */
        if (which == RND_NP_UNIFORM &&
            lower_set_local(L, b, result, bin(L, OP_ADD, a, bin(L, OP_MUL, bin(L, OP_SUB, s, a, at),
                                                    lower_read_local(L, result, at), at), at), at))
            return NULL;
        if (which == RND_NP_NORMAL &&
            lower_set_local(L, b, result, bin(L, OP_ADD, a, bin(L, OP_MUL, s, lower_read_local(L, result, at), at), at), at))
            return NULL;
        return block_value(L, b, result, at);
    }
    }
}

/* Once lowered: the hidden stream's seed parameter, and the state set at
 * the top of each iteration from it and the launch indices. */
int lower_random_streams(lowerer *L) {
    ir_func *f = L->f;
    if (L->rng_state < 0) return 0;
    int p = ir_param_add(f);
    if (p < 0) {
        ERR(L, f->start->line, f->start->col, "too many parameters for the hidden random seed");
        return -1;
    }
    f->params[p].name = "__seed__";
    f->params[p].role = ROLE_SCALAR;
    f->params[p].type = TACK_U64;
    f->rng_seed = p;
    ir_block setup = {0};
    const expr at = {.line = f->start->line, .col = f->start->col};
    ir_expr *seed = ir_expr_new(f, IR_PARAM, at.line, at.col);
    if (!seed) return lower_oom(L);
    seed->index = p;
    int st = L->rng_state;
    int vars[3] = {f->loop_var, f->inner_var[0], f->inner_var[1]};
    if (lower_set_local(L, &setup, st, cast(L, seed, TACK_U64), &at) || scramble(L, &setup, st, &at)) return -1;
    for (int a = 0; a <= f->ninner; a++)
        if (lower_set_local(L, &setup, st, bin(L, OP_XOR, lower_read_local(L, st, &at),
                                   bin(L, OP_MUL, cast(L, lower_read_local(L, vars[a], &at), TACK_U64),
                                       u64c(L, GOLDEN + 2 * (uint64_t)a, &at), &at), &at), &at) ||
            scramble(L, &setup, st, &at))
            return -1;
    /* Before the body's own statements. */
    int n = setup.n + f->body.n;
    ir_stmt **v = arena_alloc(&f->mem, n * sizeof *v);
    if (!v) return lower_oom(L);
    memcpy(v, setup.stmts, setup.n * sizeof *v);
    memcpy(v + setup.n, f->body.stmts, f->body.n * sizeof *v);
    f->body.stmts = v;
    f->body.n = f->body.cap = n;
    return 0;
}
