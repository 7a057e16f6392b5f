/* emit.c - typed post-pass IR -> C-family kernel source (see gpu.h).
 *
 * One walk over the IR.  Expressions become side-effect-free C expression
 * strings; whatever has effects (atomics, inlined bodies, and the sides of
 * and/or/if-else that contain them) is emitted as statements first, with
 * results in temporaries, so evaluation order is the CPU backend's.
 *
 * The numerics are the CPU backend's (cpu/codegen.c), spelled in C:
 * integer + - * neg << are done in an unsigned type (C's signed overflow is
 * undefined and compilers exploit it); // % ** >> and float->int
 * conversions call helpers emitted on first use that guard division by
 * zero, INT_MIN // -1, oversized shifts, NaN and out-of-range floats the
 * way NumPy answers; floats are never contracted into FMAs.
 *
 * Bool values are C ints 0/1 in expressions (the dialect's bool for
 * variables); arrays of bool are bytes. */
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "backend/gpu/dialect.h"
#include "front/ast.h"
#include "passes/passes.h"
#include "util/arena.h"

/* ---- growing strings ---- */

typedef struct sbuf {
    char *s;
    size_t n, cap;
    int failed;
} sbuf;

static void sb_vput(sbuf *b, const char *fmt, va_list ap) {
    if (b->failed) return;
    va_list ap2;
    va_copy(ap2, ap);
    int r = vsnprintf(b->s ? b->s + b->n : NULL, b->s ? b->cap - b->n : 0, fmt, ap);
    if (r < 0) b->failed = 1;
    else if (!b->s || b->n + (size_t)r + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->n + (size_t)r + 1) cap *= 2;
        char *s = realloc(b->s, cap);
        if (!s) b->failed = 1;
        else {
            b->s = s;
            b->cap = cap;
            vsnprintf(b->s + b->n, b->cap - b->n, fmt, ap2);
            b->n += (size_t)r;
        }
    } else {
        b->n += (size_t)r;
    }
    va_end(ap2);
}

static void sb_put(sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_put(sbuf *b, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    sb_vput(b, fmt, ap);
    va_end(ap);
}

/* ---- the emitter's state ---- */

/* Helpers emitted on first use, per element type. */
enum {
    H_FLOORDIV, H_MOD, H_POW, H_SHL, H_SHR, H_F2I_F32, H_F2I_F64, H_TRIP, H_GCD, H_LCM, H_PRINT,
    H_ATOMIC0, /* H_ATOMIC0 + ir_atomic_op */
    H_COUNT = H_ATOMIC0 + ATOM_COUNT
};

typedef struct inline_label {
    int id, label, used;
    int flagged; /* no_goto: left through flag tk_x<label> and breaks */
} inline_label;

/* no_goto: what a `break` leaves, innermost last: a loop, or an inlined
 * body's do { } while (0). */
#define MAX_BREAKABLES 256

typedef struct gen {
    const ir_func *f;
    const gpu_dialect *d;
    const char *entry;
    sbuf body, helpers;
    unsigned char have[H_COUNT][TACK_DTYPE_COUNT];
    /* gpu_emit_guarded: each helper sits inside #ifndef TK_HAVE_<name>, so
     * that several kernels' sources concatenate into one program; the
     * helper being written still needs its #endif. */
    int guarded, guard_open;
    arena strs; /* expression strings, freed at the end */
    int ntemps, nlabels, indent;
    int uses_f64, uses_atomics64;
    int in_registers; /* reductions accumulate in r<param> (grid-stride loops) */
    int uses_f16, uses_f16_f64; /* the dialect's f16 helpers */
    inline_label *inlines;
    int ninlines, inlines_cap;
    unsigned char breakable_is_inline[MAX_BREAKABLES];
    int nbreakables;
    const ir_stmt **prints; /* print() statements, numbered (print_buf.c) */
    int nprints;
    tack_error *err;
    int failed;
    /* The per-access checks' extents read at the kernel's start (x<slot>),
     * one bit per errors-array slot past DEBUG_ERR_EXTENTS. */
    unsigned char extent_read[(TACK_MAX_PARAMS * TACK_MAX_NDIM + 7) / 8];
} gen;

/* The extent slot (past DEBUG_ERR_EXTENTS) e reads when it is a
 * per-access check's load of an array extent from the errors array (the
 * runtime writes those before the launch, passes/bounds.c), else -1. */
static int64_t check_extent_slot(const ir_func *f, const ir_expr *e) {
    if (e->kind != IR_LOAD || e->nargs != 1 || e->index != f->debug_errors ||
        f->debug_extents >= 0)
        return -1;
    const ir_expr *at = e->args[0];
    while (at->kind == IR_CAST) at = at->a;
    if (at->kind != IR_CONST || at->i < DEBUG_ERR_EXTENTS || at->i >= DEBUG_ERR_LEN) return -1;
    return at->i - DEBUG_ERR_EXTENTS;
}

/* Marks in g->extent_read each extent slot an expression reads. */
static int note_extent_read(void *ctx, const ir_expr *e, const ir_stmt *value_of) {
    (void)value_of;
    gen *g = ctx;
    int64_t slot = check_extent_slot(g->f, e);
    if (slot >= 0) g->extent_read[slot / 8] |= (unsigned char)(1u << slot % 8);
    return 0;
}

/* A compile error at node position (src, line, col), naming the kernel. */
static void fail_at(gen *g, int src, int line, int col, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static void fail_at(gen *g, int src, int line, int col, const char *fmt, ...) {
    if (g->failed++) return;
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    const ir_source *s = src >= 0 && src < g->f->nsources ? &g->f->sources[src] : NULL;
    src_info where = {s ? s->text : g->f->source, s ? s->filename : g->f->filename,
                      s ? s->first_line : g->f->first_line, g->f->name, s ? s->is_function : 0};
    src_error(&where, line, col, g->err, "the %s backend cannot compile this: %s", g->d->name, msg);
}

static void nomem(gen *g) {
    if (g->failed++) return;
    g->err->status = TACK_ERR_NOMEM;
    snprintf(g->err->message, sizeof g->err->message, "out of memory emitting kernel '%s'",
             g->f->name);
}

static const char *str(gen *g, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static const char *str(gen *g, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    char *s = n >= 0 ? arena_alloc(&g->strs, (size_t)n + 1) : NULL;
    if (!s) {
        nomem(g);
        return "0";
    }
    va_start(ap, fmt);
    vsnprintf(s, (size_t)n + 1, fmt, ap);
    va_end(ap);
    return s;
}

static void line(gen *g, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void line(gen *g, const char *fmt, ...) {
    sb_put(&g->body, "%*s", 4 * g->indent, "");
    va_list ap;
    va_start(ap, fmt);
    sb_vput(&g->body, fmt, ap);
    va_end(ap);
    sb_put(&g->body, "\n");
}

static int concrete(ir_type t) { return t >= 0 && t < TACK_DTYPE_COUNT; }

/* The dialect's name for t (noting f64 use for the pragma). */
static const char *tn(gen *g, ir_type t) {
    if (!concrete(t)) return "void";
    if (t == TACK_F64) g->uses_f64 = 1;
    return g->d->type[t];
}

/* The unsigned type integer arithmetic on t wraps in: at least 32 bits,
 * so C's promotion to int never takes it back into signed overflow. */
static const char *wide(gen *g, ir_type t) {
    return tn(g, ir_type_bits(t) == 64 ? TACK_U64 : TACK_U32);
}

/* The unsigned type of t's width. */
static ir_type unsigned_of(ir_type t) {
    switch (ir_type_bits(t)) {
    case 8: return TACK_U8;
    case 16: return TACK_U16;
    case 32: return TACK_U32;
    default: return TACK_U64;
    }
}

static const char *tname(ir_type t) { return tack_dtype_name((tack_dtype)t); }

/* Names: s<p> scalar parameters, p<p> arrays, l<i> locals, t<n> temps. */
static const char *new_temp(gen *g, ir_type t, const char *value) {
    const char *name = str(g, "t%d", g->ntemps++);
    if (value) line(g, "%s %s = %s;", tn(g, t), name, value);
    else line(g, "%s %s;", tn(g, t), name);
    return name;
}

/* A plain name or literal can be repeated; anything else goes in a temp. */
static int simple(const char *s) {
    for (const char *p = s; *p; p++)
        if (!(*p == '_' || (*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'z') ||
              (*p >= 'A' && *p <= 'Z')))
            return 0;
    return 1;
}

static const char *once(gen *g, ir_type t, const char *s) {
    return simple(s) ? s : new_temp(g, t, s);
}

/* ---- literals ---- */

static const char *int_lit(gen *g, ir_type t, int64_t v) {
    if (t == TACK_BOOL) return v ? "1" : "0";
    if (!ir_type_is_signed(t) && ir_type_bits(t) == 64) {
        if ((uint64_t)v <= 0x7fffffffu) return str(g, "((%s)%" PRId64 ")", tn(g, t), v);
    } else if (v > INT32_MIN && v <= INT32_MAX) {
        return str(g, "((%s)%s%" PRId64 "%s)", tn(g, t), v < 0 ? "(" : "", v, v < 0 ? ")" : "");
    }
    if (v == INT32_MIN) return str(g, "((%s)(-2147483647 - 1))", tn(g, t));
    /* Through the unsigned bits: covers INT64_MIN. */
    return str(g, "((%s)0x%" PRIx64 "%s)", tn(g, t), (uint64_t)v, g->d->u64_suffix);
}

static const char *float_lit(gen *g, ir_type t, double v) {
    if (t == TACK_F32) {
        float x = (float)v;
        int neg = x < 0 || (x == 0 && signbit(x));
        if (isfinite(x) && g->d->decimal_floats) {
            /* Nine significant digits name one float; a point or an
             * exponent makes it a floating literal. */
            char digits[48];
            snprintf(digits, sizeof digits, "%.9g", (double)x);
            const char *point = strpbrk(digits, ".e") ? "" : ".0";
            return str(g, neg ? "(%s%sf)" : "%s%sf", digits, point);
        }
        if (isfinite(x)) return str(g, neg ? "(%af)" : "%af", (double)x);
        uint32_t bits;
        memcpy(&bits, &x, sizeof bits);
        return str(g, "%s(0x%08" PRIx32 "u)", g->d->bits_to_f32, bits);
    }
    tn(g, TACK_F64);
    if (isfinite(v)) return str(g, "((double)(%a))", v);
    uint64_t bits;
    memcpy(&bits, &v, sizeof bits);
    return str(g, "%s((%s)0x%016" PRIx64 "%s)", g->d->bits_to_f64, tn(g, TACK_I64), bits,
               g->d->u64_suffix);
}

/* ---- helpers (emitted once each, into g->helpers) ---- */

#define HPUT(...) sb_put(&g->helpers, __VA_ARGS__)

/* 1 when helper `name` (h for type t) is not written yet: the caller
 * writes it now, after everything of the helper before it.  A helper's
 * text is a function of its name and the dialect alone, so kernels that
 * share a program can share one definition (gpu_emit_guarded). */
static int helper_needed(gen *g, int h, ir_type t, const char *name) {
    if (g->have[h][t]) return 0;
    g->have[h][t] = 1;
    if (g->guarded) {
        if (g->guard_open) HPUT("#endif\n");
        HPUT("#ifndef TK_HAVE_%s\n#define TK_HAVE_%s\n", name, name);
        g->guard_open = 1;
    }
    return 1;
}

/* Wrapping a op b in t's type: op is + - or *. */
static const char *wrap(gen *g, ir_type t, char op, const char *a, const char *b) {
    return str(g, "((%s)((%s)(%s) %c (%s)(%s)))", tn(g, t), wide(g, t), a, op, wide(g, t), b);
}

static const char *fop(gen *g, int op, ir_type t, const char *a, const char *b) {
    static const char ops[4] = {'+', '-', '*', '/'};
    const char *fn = g->d->fop[op][t == TACK_F64];
    tn(g, t);
    if (fn) return str(g, "%s(%s, %s)", fn, a, b);
    return str(g, "(%s %c %s)", a, ops[op], b);
}

static const char *math_fn(gen *g, ir_intrinsic fn, ir_type t) {
    tn(g, t);
    return g->d->math[fn][t == TACK_F64];
}

static const char *helper_floordiv_mod(gen *g, ir_type t, int want_mod) {
    int h = want_mod ? H_MOD : H_FLOORDIV;
    const char *name = str(g, "tk_%s_%s", want_mod ? "mod" : "floordiv", tname(t));
    if (!helper_needed(g, h, t, name)) return name;
    const char *T = tn(g, t), *fq = g->d->func_qual;
    if (ir_type_is_float(t)) {
        /* numpy.floor_divide / numpy.remainder, step by step as the CPU. */
        const char *fm = math_fn(g, INTR_FMOD, t), *cs = math_fn(g, INTR_COPYSIGN, t);
        const char *fl = math_fn(g, INTR_FLOOR, t);
        HPUT("%s %s %s(%s a, %s b) {\n", fq, T, name, T, T);
        HPUT("    %s m = %s(a, b);\n", T, fm);
        HPUT("    int m_nz = m != 0, differ = m_nz && ((b < 0) != (m < 0));\n");
        if (want_mod) {
            HPUT("    if (b == 0) return m;\n");
            HPUT("    if (!m_nz) return %s((%s)0, b);\n", cs, T);
            HPUT("    return differ ? %s : m;\n", fop(g, 0, t, "m", "b"));
        } else {
            HPUT("    %s q = %s;\n", T, fop(g, 3, t, "a", "b"));
            HPUT("    if (b == 0) return q;\n");
            HPUT("    %s div = %s;\n", T, fop(g, 3, t, fop(g, 1, t, "a", "m"), "b"));
            HPUT("    if (differ) div = %s;\n", fop(g, 1, t, "div", "(" "1" ")"));
            HPUT("    %s fl = %s(div);\n", T, fl);
            HPUT("    if (%s > (%s)0.5) fl = %s;\n", fop(g, 1, t, "div", "fl"), T,
                 fop(g, 0, t, "fl", "1"));
            HPUT("    if (div == 0) fl = %s((%s)0, q);\n", cs, T);
            HPUT("    return fl;\n");
        }
        HPUT("}\n");
        return name;
    }
    HPUT("%s %s %s(%s a, %s b) {\n", fq, T, name, T, T);
    HPUT("    if (b == 0) return 0;\n");
    if (!ir_type_is_signed(t)) {
        HPUT("    return (%s)(a %c b);\n", T, want_mod ? '%' : '/');
    } else if (want_mod) {
        HPUT("    if (b == -1) return 0;\n");
        HPUT("    %s r = (%s)(a %% b);\n", T, T);
        HPUT("    return r != 0 && (r ^ b) < 0 ? %s : r;\n", wrap(g, t, '+', "r", "b"));
    } else {
        /* INT_MIN // -1 wraps to INT_MIN. */
        HPUT("    if (b == -1) return %s;\n", wrap(g, t, '-', "0", "a"));
        HPUT("    %s q = (%s)(a / b), r = (%s)(a %% b);\n", T, T, T);
        HPUT("    return r != 0 && (r ^ b) < 0 ? %s : q;\n", wrap(g, t, '-', "q", "1"));
    }
    HPUT("}\n");
    return name;
}

/* Integer ** by squaring; a negative exponent gives 0 but for bases 1, -1. */
static const char *helper_pow(gen *g, ir_type t) {
    const char *name = str(g, "tk_pow_%s", tname(t));
    if (!helper_needed(g, H_POW, t, name)) return name;
    const char *T = tn(g, t), *U = tn(g, unsigned_of(t));
    HPUT("%s %s %s(%s a, %s e) {\n", g->d->func_qual, T, name, T, T);
    if (ir_type_is_signed(t))
        HPUT("    if (e < 0) return (%s)(a == 1 ? 1 : a == -1 ? ((e & 1) ? -1 : 1) : 0);\n", T);
    HPUT("    %s r = 1, b = a;\n", T);
    HPUT("    %s x = (%s)e;\n", U, U);
    HPUT("    for (;;) {\n");
    HPUT("        if (x & 1) r = %s;\n", wrap(g, t, '*', "r", "b"));
    HPUT("        b = %s;\n", wrap(g, t, '*', "b", "b"));
    HPUT("        x = (%s)(x >> 1);\n", U);
    HPUT("        if (x == 0) return r;\n");
    HPUT("    }\n}\n");
    return name;
}

/* gcd by Euclid on the magnitudes in the wide unsigned type (|INT_MIN|
 * included); lcm from it, wrapping as the CPU's. */
static const char *helper_gcd(gen *g, ir_type t, int lcm) {
    const char *name = str(g, "tk_%s_%s", lcm ? "lcm" : "gcd", tname(t));
    if (!helper_needed(g, lcm ? H_LCM : H_GCD, t, name)) return name;
    const char *T = tn(g, t), *W = wide(g, t);
    HPUT("%s %s %s(%s a, %s b) {\n", g->d->func_qual, T, name, T, T);
    if (ir_type_is_signed(t))
        HPUT("    %s x = a < 0 ? (%s)0 - (%s)a : (%s)a, y = b < 0 ? (%s)0 - (%s)b : (%s)b;\n", W,
             W, W, W, W, W, W);
    else
        HPUT("    %s x = (%s)a, y = (%s)b;\n", W, W, W);
    if (lcm) HPUT("    %s m = x, n = y;\n", W);
    HPUT("    while (y != 0) {\n        %s r = x %% y;\n        x = y;\n        y = r;\n    }\n", W);
    if (lcm) HPUT("    return x == 0 ? (%s)0 : (%s)(m / x * n);\n}\n", T, T);
    else HPUT("    return (%s)x;\n}\n", T);
    return name;
}

/* An integer exponent as the int ldexp takes, clamped to int's range as
 * NumPy does (the result, 0 or inf, is the same). */
static const char *int_exponent(gen *g, ir_type nt, const char *n) {
    const char *I = tn(g, TACK_I32);
    if (ir_type_bits(nt) < 32 || nt == TACK_I32) return str(g, "((%s)%s)", I, n);
    n = once(g, nt, n);
    if (!ir_type_is_signed(nt)) return str(g, "((%s)(%s > 2147483647 ? 2147483647 : %s))", I, n, n);
    return str(g, "((%s)(%s > 2147483647 ? 2147483647 : %s < (-2147483647 - 1) ? (-2147483647 - 1) "
               ": %s))", I, n, n, n);
}

/* NumPy's shifts: by the width or more (or negative): 0, or the sign fill. */
static const char *helper_shift(gen *g, ir_type t, int left) {
    const char *name = str(g, "tk_%s_%s", left ? "shl" : "shr", tname(t));
    if (!helper_needed(g, left ? H_SHL : H_SHR, t, name)) return name;
    const char *T = tn(g, t), *U = tn(g, unsigned_of(t));
    int bits = ir_type_bits(t);
    HPUT("%s %s %s(%s a, %s b) {\n", g->d->func_qual, T, name, T, T);
    if (left) {
        HPUT("    return (%s)b >= %d ? (%s)0 : (%s)((%s)a << (%s)b);\n", U, bits, T, T,
             wide(g, t), U);
    } else if (ir_type_is_signed(t)) {
        HPUT("    return (%s)b >= %d ? (%s)(a < 0 ? -1 : 0) : (%s)(a >> (%s)b);\n", U, bits, T, T,
             U);
    } else {
        HPUT("    return (%s)b >= %d ? (%s)0 : (%s)(a >> b);\n", U, bits, T, T);
    }
    HPUT("}\n");
    return name;
}

/* 2**n as a float literal (suffix suf): hex, or its exact decimal where
 * the dialect has no hex floats. */
static const char *pow2_lit(gen *g, int n, const char *suf) {
    if (g->d->decimal_floats) return str(g, "%.1f%s", ldexp(1.0, n), suf);
    return str(g, "0x1p%d%s", n, suf);
}

/* Float -> integer: truncating, saturating, NaN -> 0 (fpto[su]i.sat). */
static const char *helper_f2i(gen *g, ir_type from, ir_type to) {
    const char *name = str(g, "tk_%s_from_%s", tname(to), tname(from));
    if (!helper_needed(g, from == TACK_F64 ? H_F2I_F64 : H_F2I_F32, to, name)) return name;
    const char *F = tn(g, from), *T = tn(g, to), *suf = from == TACK_F32 ? "f" : "";
    int bits = ir_type_bits(to);
    HPUT("%s %s %s(%s x) {\n", g->d->func_qual, T, name, F);
    if (ir_type_is_signed(to)) {
        int64_t lo = bits == 64 ? INT64_MIN : -((int64_t)1 << (bits - 1));
        int64_t hi = bits == 64 ? INT64_MAX : ((int64_t)1 << (bits - 1)) - 1;
        HPUT("    if (x != x) return 0;\n");
        HPUT("    if (x <= -%s) return %s;\n", pow2_lit(g, bits - 1, suf), int_lit(g, to, lo));
        HPUT("    if (x >= %s) return %s;\n", pow2_lit(g, bits - 1, suf), int_lit(g, to, hi));
    } else {
        uint64_t hi = bits == 64 ? UINT64_MAX : ((uint64_t)1 << bits) - 1;
        HPUT("    if (!(x >= 1)) return 0; /* NaN, negative, below 1 */\n");
        HPUT("    if (x >= %s) return %s;\n", pow2_lit(g, bits, suf), int_lit(g, to, (int64_t)hi));
    }
    HPUT("    return (%s)x;\n}\n", T);
    return name;
}

/* range()'s trip count, as cpu/codegen.c's trip_count. */
static const char *helper_trip(gen *g) {
    if (helper_needed(g, H_TRIP, TACK_I64, "tk_trip")) {
        const char *L = tn(g, TACK_I64), *U = tn(g, TACK_U64);
        HPUT("%s %s tk_trip(%s start, %s stop, %s step) {\n", g->d->func_qual, L, L, L, L);
        HPUT("    if (step > 0 && stop > start)\n");
        HPUT("        return (%s)(((%s)stop - (%s)start - 1) / (%s)step + 1);\n", L, U, U, U);
        HPUT("    if (step < 0 && start > stop)\n");
        HPUT("        return (%s)(((%s)start - (%s)stop - 1) / (0 - (%s)step) + 1);\n", L, U, U, U);
        HPUT("    return 0;\n}\n");
    }
    return "tk_trip";
}

/* The bits of a float (or integer) value v of type t as unsigned `word`
 * (u32 or u64), and back. */
static const char *to_bits(gen *g, ir_type t, ir_type word, const char *v) {
    if (t == TACK_F32) return str(g, "(%s)%s(%s)", tn(g, word), g->d->f32_to_bits, v);
    if (t == TACK_F64) return str(g, "(%s)%s(%s)", tn(g, word), g->d->f64_to_bits, v);
    return str(g, "(%s)(%s)", tn(g, word), v);
}

static const char *from_bits(gen *g, ir_type t, ir_type word, const char *v) {
    if (t == TACK_F32) return str(g, "%s((%s)(%s))", g->d->bits_to_f32, tn(g, TACK_U32), v);
    if (t == TACK_F64) return str(g, "%s((%s)(%s))", g->d->bits_to_f64, tn(g, TACK_I64), v);
    (void)word;
    return str(g, "(%s)(%s)", tn(g, t), v);
}

/* The new value of a read-modify-write: op(cur, v) in t. */
static const char *rmw_value(gen *g, ir_atomic_op op, ir_type t) {
    int fl = ir_type_is_float(t);
    const char *T = tn(g, t);
    switch (op) {
    case ATOM_ADD: return fl ? fop(g, 0, t, "cur", "v") : wrap(g, t, '+', "cur", "v");
    case ATOM_SUB: return fl ? fop(g, 1, t, "cur", "v") : wrap(g, t, '-', "cur", "v");
    /* The CPU's select: a NaN operand never replaces the value. */
    case ATOM_MIN: return "(v < cur ? v : cur)";
    case ATOM_MAX: return "(v > cur ? v : cur)";
    case ATOM_AND: return str(g, "(%s)(cur & v)", T);
    case ATOM_OR: return str(g, "(%s)(cur | v)", T);
    case ATOM_XOR: return str(g, "(%s)(cur ^ v)", T);
    /* A product (reductions only; no device has it natively, so the CAS
     * loop below): integers wrap as NumPy's. */
    case ATOM_MUL: return fl ? fop(g, 2, t, "cur", "v") : wrap(g, t, '*', "cur", "v");
    default: return "v";
    }
}

/* tk_atomic_<op>_<t>(p, v) (compare_exchange: (p, expected, desired)),
 * returning the element's old value. */
static const char *helper_atomic(gen *g, ir_atomic_op op, ir_type t) {
    const char *name = str(g, "tk_atomic_%s_%s", ir_atomic_name(op), tname(t));
    if (!helper_needed(g, H_ATOMIC0 + op, t, name)) return name;
    const gpu_dialect *d = g->d;
    const char *T = tn(g, t), *G = d->global_qual, *fq = d->func_qual;
    int cas = op == ATOM_COMPARE_EXCHANGE, bits = ir_type_bits(t);
    if (bits == 64) g->uses_atomics64 = 1;
    if (cas) HPUT("%s %s %s(%s%s *p, %s e, %s v) {\n", fq, T, name, G, T, T, T);
    else HPUT("%s %s %s(%s%s *p, %s v) {\n", fq, T, name, G, T, T);
    const gpu_atomic_fn *nat = &d->atomic[op][t];
    if (nat->name) {
        ir_type as = (ir_type)nat->as;
        const char *A = tn(g, as);
        const char *conv_v = ir_type_is_float(t) && !ir_type_is_float(as) ? to_bits(g, t, as, "v")
                                                                         : str(g, "(%s)v", A);
        const char *call;
        if (cas) {
            const char *conv_e = ir_type_is_float(t) && !ir_type_is_float(as)
                                     ? to_bits(g, t, as, "e") : str(g, "(%s)e", A);
            call = str(g, "%s((%s%s *)p, %s, %s)", nat->name, G, A, conv_e, conv_v);
        } else {
            call = str(g, "%s((%s%s *)p, %s)", nat->name, G, A, conv_v);
        }
        HPUT("    return %s;\n}\n", ir_type_is_float(t) && !ir_type_is_float(as)
                                        ? from_bits(g, t, as, call) : str(g, "(%s)%s", T, call));
        return name;
    }
    if (bits >= 32) {
        /* A compare-and-swap loop on the element's own word, comparing bits
         * (so NaN and -0.0 are values like any other). */
        ir_type w = bits == 64 ? TACK_U64 : TACK_U32;
        const char *W = tn(g, w), *C = bits == 64 ? d->cas64 : d->cas32;
        if (cas) {
            HPUT("    return %s;\n}\n",
                 from_bits(g, t, w, str(g, "%s((%s%s *)p, %s, %s)", C, G, W, to_bits(g, t, w, "e"),
                                        to_bits(g, t, w, "v"))));
            return name;
        }
        HPUT("    %s old = *(volatile %s%s *)p;\n", W, G, W);
        HPUT("    for (;;) {\n");
        HPUT("        %s cur = %s;\n", T, from_bits(g, t, w, "old"));
        HPUT("        %s nv = %s;\n", T, rmw_value(g, op, t));
        HPUT("        %s seen = %s((%s%s *)p, old, %s);\n", W, C, G, W, to_bits(g, t, w, "nv"));
        HPUT("        if (seen == old) return cur;\n");
        HPUT("        old = seen;\n");
        HPUT("    }\n}\n");
        return name;
    }
    /* 8 and 16 bits: a CAS loop on the aligned 32-bit word holding the
     * element (little-endian: byte offset * 8 is the shift). */
    const char *U32 = tn(g, TACK_U32), *U64 = tn(g, TACK_U64), *UT = tn(g, unsigned_of(t));
    HPUT("    %s off = (%s)p & 3;\n", U64, U64);
    HPUT("    %s%s *w = (%s%s *)((%s%s *)p - off);\n", G, U32, G, U32, G, tn(g, TACK_U8));
    HPUT("    %s sh = (%s)(off * 8), mask = (%s)0x%x << sh;\n", U32, U32, U32,
         bits == 8 ? 0xff : 0xffff);
    HPUT("    %s old = *(volatile %s%s *)w;\n", U32, G, U32);
    HPUT("    for (;;) {\n");
    HPUT("        %s cur = (%s)(%s)(old >> sh);\n", T, T, UT);
    if (cas) HPUT("        if (cur != e) return cur;\n");
    HPUT("        %s nv = %s;\n", T, rmw_value(g, op, t));
    HPUT("        %s nw = (old & ~mask) | (((%s)(%s)nv << sh) & mask);\n", U32, U32, UT);
    HPUT("        %s seen = %s(w, old, nw);\n", U32, d->cas32);
    HPUT("        if (seen == old) return cur;\n");
    HPUT("        old = seen;\n");
    HPUT("    }\n}\n");
    return name;
}

/* ---- expressions ---- */

static const char *ex(gen *g, const ir_expr *e);
static void block(gen *g, const ir_block *b);
static void statement(gen *g, const ir_stmt *s);

/* Whether evaluating e emits statements with effects (an atomic, an
 * inlined body): operands before it must be read first. */
static int effects(const ir_expr *e) {
    if (!e) return 0;
    if (e->kind == IR_ATOMIC || e->kind == IR_INLINE) return 1;
    if (effects(e->a) || effects(e->b) || effects(e->cond)) return 1;
    for (int i = 0; i < e->nargs; i++)
        if (effects(e->args[i])) return 1;
    return 0;
}

/* Evaluates es[0..n) in order into out[]: a value computed before a later
 * operand's effects is kept in a temporary. */
static void operands(gen *g, ir_expr *const *es, int n, const char **out) {
    for (int i = 0; i < n; i++) {
        out[i] = ex(g, es[i]);
        int later = 0;
        for (int j = i + 1; j < n && !later; j++) later = effects(es[j]);
        if (later) out[i] = once(g, es[i]->type, out[i]);
    }
}

/* s as an if/while condition: in parentheses, once. */
static const char *paren(gen *g, const char *s) {
    size_t n = strlen(s);
    int depth = 0, whole = n >= 2 && s[0] == '(' && s[n - 1] == ')';
    for (size_t i = 0; whole && i < n; i++) {
        depth += s[i] == '(' ? 1 : s[i] == ')' ? -1 : 0;
        if (depth == 0 && i + 1 < n) whole = 0;
    }
    return whole ? s : str(g, "(%s)", s);
}

static const char *truthy(gen *g, ir_type t, const char *v) {
    if (t == TACK_BOOL) return v;
    return str(g, "(%s != 0)", v);
}

static const char *convert(gen *g, const char *v, ir_type from, ir_type to) {
    if (from == to) return v;
    if (to == TACK_BOOL) return truthy(g, from, v);
    if (ir_type_is_float(from) && !ir_type_is_float(to))
        return str(g, "%s(%s)", helper_f2i(g, from, to), v);
    return str(g, "((%s)(%s))", tn(g, to), v);
}

static const char *local_name(gen *g, int l) { return str(g, "l%d", l); }

/* Notes the f16 helpers a use needs; the suffix of the one rounding a
 * value of type `from` (f32 or f64) to half. */
static const char *half_suffix(gen *g, ir_type from) {
    g->uses_f16 = 1;
    if (from != TACK_F64) return "";
    g->uses_f16_f64 = 1;
    tn(g, TACK_F64);
    return "_f64";
}

static const char *element(gen *g, int p, const char *index) {
    return str(g, "p%d[%s]", p, index);
}

/* Float **: LLVM rewrites llvm.pow with these constant exponents into
 * exact arithmetic on the CPU (even without fast-math), so they are
 * spelled the same way here; other powers are the device's pow, which may
 * differ from the host's math library by a few ulp. */
/* A constant exponent's value, looking through the conversion inference
 * puts around an integer literal (x ** 2); 0 when it is not constant. */
static int const_exponent(const ir_expr *e, double *out) {
    while (e->kind == IR_CAST) e = e->a;
    if (e->kind != IR_CONST) return 0;
    *out = ir_type_is_float(e->type) ? e->f : ir_type_is_signed(e->type) ? (double)e->i
                                                                            : (double)(uint64_t)e->i;
    return 1;
}

static const char *float_pow(gen *g, ir_type t, const char *a, const ir_expr *eb, const char *b) {
    const char *pw = math_fn(g, INTR_POW, t);
    double x;
    if (!const_exponent(eb, &x)) return str(g, "%s(%s, %s)", pw, a, b);
    x = t == TACK_F32 ? (double)(float)x : x;
    if (x == 1.0) return a;
    if (x == 0.0) return float_lit(g, t, 1.0);
    if (x == 2.0) {
        a = once(g, t, a);
        return fop(g, 2, t, a, a);
    }
    if (x == -1.0) return fop(g, 3, t, float_lit(g, t, 1.0), a);
    if (x == 0.5) {
        /* pow(-0, 0.5) is +0 and pow(-inf, 0.5) is +inf: fabs, and a select. */
        a = once(g, t, a);
        return str(g, "(%s == %s ? %s : %s(%s(%s)))", a, float_lit(g, t, -INFINITY),
                   float_lit(g, t, INFINITY), math_fn(g, INTR_FABS, t), math_fn(g, INTR_SQRT, t), a);
    }
    return str(g, "%s(%s, %s)", pw, a, b);
}

static const char *binop(gen *g, const ir_expr *e) {
    ir_type t = e->a->type;
    const char *v[2];
    ir_expr *ab[2] = {e->a, e->b};
    operands(g, ab, 2, v);
    const char *a = v[0], *b = v[1];
    int fl = ir_type_is_float(t);
    switch (e->op) {
    case OP_ADD:
        if (t == TACK_BOOL) return str(g, "(%s | %s)", a, b);
        return fl ? fop(g, 0, t, a, b) : wrap(g, t, '+', a, b);
    case OP_SUB:
        if (t == TACK_BOOL) return str(g, "(%s ^ %s)", a, b);
        return fl ? fop(g, 1, t, a, b) : wrap(g, t, '-', a, b);
    case OP_MUL:
        if (t == TACK_BOOL) return str(g, "(%s & %s)", a, b);
        return fl ? fop(g, 2, t, a, b) : wrap(g, t, '*', a, b);
    case OP_DIV:
        if (!fl) break;
        return fop(g, 3, t, a, b);
    case OP_FLOORDIV:
    case OP_MOD:
        if (t == TACK_BOOL) break;
        return str(g, "%s(%s, %s)", helper_floordiv_mod(g, t, e->op == OP_MOD), a, b);
    case OP_POW:
        if (fl) return float_pow(g, t, a, e->b, b);
        if (t == TACK_BOOL) break;
        return str(g, "%s(%s, %s)", helper_pow(g, t), a, b);
    case OP_AND:
    case OP_OR:
    case OP_XOR: {
        if (fl) break;
        char c = e->op == OP_AND ? '&' : e->op == OP_OR ? '|' : '^';
        if (t == TACK_BOOL) return str(g, "(%s %c %s)", a, c, b);
        return str(g, "((%s)(%s %c %s))", tn(g, t), a, c, b);
    }
    case OP_SHL:
    case OP_SHR:
        if (fl || t == TACK_BOOL) break;
        return str(g, "%s(%s, %s)", helper_shift(g, t, e->op == OP_SHL), a, b);
    case OP_LT: return str(g, "(%s < %s)", a, b);
    case OP_LE: return str(g, "(%s <= %s)", a, b);
    case OP_GT: return str(g, "(%s > %s)", a, b);
    case OP_GE: return str(g, "(%s >= %s)", a, b);
    case OP_EQ: return str(g, "(%s == %s)", a, b);
    case OP_NE: return str(g, "(%s != %s)", a, b);
    default: break;
    }
    fail_at(g, e->src, e->line, e->col, "operator %d on %s", (int)e->op, ir_type_name(t));
    return "0";
}

static const char *call(gen *g, const ir_expr *e) {
    ir_type t = e->type, at = e->args[0]->type;
    const char *a[3] = {"0", "0", "0"};
    if (e->nargs > 3 || e->nargs < 1) {
        fail_at(g, e->src, e->line, e->col, "%s() with %d arguments", ir_intrinsic_name(e->fn),
                e->nargs);
        return "0";
    }
    operands(g, e->args, e->nargs, a);
    switch (e->fn) {
    case INTR_ISNAN:
        if (!ir_type_is_float(at)) return "0";
        a[0] = once(g, at, a[0]);
        return str(g, "(%s != %s)", a[0], a[0]);
    case INTR_ISINF:
    case INTR_ISFINITE:
        if (!ir_type_is_float(at)) return e->fn == INTR_ISFINITE ? "1" : "0";
        return str(g, "(%s(%s) %s %s)", math_fn(g, INTR_FABS, at), a[0],
                   e->fn == INTR_ISINF ? "==" : "<", float_lit(g, at, INFINITY));
    case INTR_ABS:
        if (ir_type_is_float(t)) return str(g, "%s(%s)", math_fn(g, INTR_FABS, t), a[0]);
        if (!ir_type_is_signed(t)) return a[0];
        a[0] = once(g, t, a[0]);
        /* abs(INT_MIN) wraps to INT_MIN. */
        return str(g, "(%s < 0 ? %s : %s)", a[0], wrap(g, t, '-', "0", a[0]), a[0]);
    case INTR_MIN:
    case INTR_MAX:
        /* Python's: the first unless the second is strictly better. */
        a[0] = once(g, t, a[0]);
        a[1] = once(g, t, a[1]);
        return str(g, "(%s %c %s ? %s : %s)", a[1], e->fn == INTR_MIN ? '<' : '>', a[0], a[1],
                   a[0]);
    case INTR_ROUND:
        if (!ir_type_is_float(at)) return convert(g, a[0], at, t);
        return convert(g, str(g, "%s(%s)", math_fn(g, INTR_ROUND, at), a[0]), at, t);
    case INTR_F16:
        return str(g, "tk_f16_round%s(%s)", half_suffix(g, at), a[0]);
    case INTR_GCD:
    case INTR_LCM:
        if (!ir_type_is_int(t)) break;
        return str(g, "%s(%s, %s)", helper_gcd(g, t, e->fn == INTR_LCM), a[0], a[1]);
    case INTR_DEGREES:
    case INTR_RADIANS:
        if (!ir_type_is_float(t)) break;
        return fop(g, 2, t, a[0], float_lit(g, t, ir_angle_factor(e->fn, t)));
    case INTR_LDEXP:
        if (!ir_type_is_float(t) || ir_type_is_float(e->args[1]->type)) break;
        a[1] = int_exponent(g, e->args[1]->type, a[1]);
        break;
    case INTR_FREXP_EXP:
        /* ilogb(x) + 1 (the table names ilogb), 0 for 0, inf and NaN. */
        if (!ir_type_is_float(at) || !g->d->math[e->fn][at == TACK_F64]) break;
        a[0] = once(g, at, a[0]);
        return str(g, "(%s != %s && %s(%s) < %s ? %s(%s) + 1 : 0)", a[0], float_lit(g, at, 0.0),
                   math_fn(g, INTR_FABS, at), a[0], float_lit(g, at, INFINITY),
                   math_fn(g, e->fn, at), a[0]);
    default:
        break;
    }
    if (!ir_type_is_float(t) || !g->d->math[e->fn][t == TACK_F64]) {
        fail_at(g, e->src, e->line, e->col, "%s() of %s", ir_intrinsic_name(e->fn),
                ir_type_name(t));
        return "0";
    }
    if (e->fn == INTR_POW) return float_pow(g, t, a[0], e->args[1], a[1]);
    if (e->nargs == 3) return str(g, "%s(%s, %s, %s)", math_fn(g, e->fn, t), a[0], a[1], a[2]);
    if (e->nargs == 2) return str(g, "%s(%s, %s)", math_fn(g, e->fn, t), a[0], a[1]);
    return str(g, "%s(%s)", math_fn(g, e->fn, t), a[0]);
}

/* A reduction's update in a grid-stride loop: into the work item's
 * register r<param>, combined into the array once after the loop. */
static const char *register_update(gen *g, const ir_expr *e) {
    ir_type t = g->f->params[e->index].type;
    const char *v = ex(g, e->a);
    line(g, "{ const %s cur = r%d, v = %s; r%d = %s; }", tn(g, t), e->index, v, e->index,
         rmw_value(g, e->atomic, t));
    return "0";
}

/* What leaves a reduction unchanged under its operator (subtraction
 * accumulates -(sum) from it, then adds). */
static const char *reduction_identity(gen *g, ir_atomic_op op, ir_type t) {
    if (ir_type_is_float(t))
        return float_lit(g, t, op == ATOM_MIN ? INFINITY : op == ATOM_MAX ? -INFINITY
                               : op == ATOM_MUL ? 1.0 : -0.0);
    int bits = ir_type_bits(t), sgn = ir_type_is_signed(t);
    int64_t ones = bits == 64 ? -1 : (int64_t)((1ull << bits) - 1);
    int64_t smax = (int64_t)((1ull << (bits - 1)) - 1);
    switch (op) {
    case ATOM_AND: return int_lit(g, t, sgn ? -1 : ones);
    case ATOM_MUL: return int_lit(g, t, 1);
    case ATOM_MIN: return int_lit(g, t, sgn ? smax : ones);
    case ATOM_MAX: return int_lit(g, t, sgn ? -smax - 1 : 0);
    default: return int_lit(g, t, 0);
    }
}

static const char *atomic(gen *g, const ir_expr *e) {
    const ir_param *p = &g->f->params[e->index];
    ir_type t = p->type;
    /* A reduction's update is named as the user wrote it, not as the
     * atomic it becomes (a product has no tack.atomic_ form). */
    const char *what = ir_reduction_of_param(g->f, e->index) >= 0
                           ? str(g, "reduction '%s'", p->name)
                           : str(g, "tack.atomic_%s()", ir_atomic_name(e->atomic));
    if (t == TACK_BOOL || t == TACK_F16 || !concrete(t) || e->nargs != 1) {
        fail_at(g, e->src, e->line, e->col, "%s on this array", what);
        return "0";
    }
    int bits = ir_type_bits(t);
    if ((bits == 64 && !g->d->cas64 && !g->d->atomic[e->atomic][t].name) ||
        (bits < 32 && g->d->no_subword_atomics)) {
        fail_at(g, e->src, e->line, e->col,
                "%s on %s: %s has no %d-bit atomics (%s)", what,
                tname(t), g->d->title ? g->d->title : g->d->name, bits,
                bits == 64 ? "no 64-bit compare-and-swap"
                           : "8- and 16-bit ones need an address as an integer");
        return "0";
    }
    if (g->in_registers && ir_reduction_of_param(g->f, e->index) >= 0) return register_update(g, e);
    ir_expr *ops[3] = {e->args[0], e->a, e->b};
    const char *v[3];
    int n = e->atomic == ATOM_COMPARE_EXCHANGE ? 3 : 2;
    operands(g, ops, n, v);
    const char *fn = helper_atomic(g, e->atomic, t);
    const char *ptr = str(g, "&%s", element(g, e->index, v[0]));
    if (n == 3) return new_temp(g, t, str(g, "%s(%s, %s, %s)", fn, ptr, v[1], v[2]));
    return new_temp(g, t, str(g, "%s(%s, %s)", fn, ptr, v[1]));
}

/* `a and b` / `a or b`: one of the operands; b only when needed. */
static const char *andor(gen *g, const ir_expr *e) {
    ir_type t = e->type;
    const char *a = once(g, t, ex(g, e->a));
    const char *test = truthy(g, t, a);
    if (!effects(e->b)) {
        const char *b = ex(g, e->b);
        return e->op == OP_AND ? str(g, "(%s ? %s : %s)", test, b, a)
                               : str(g, "(%s ? %s : %s)", test, a, b);
    }
    const char *r = new_temp(g, t, a);
    if (e->op == OP_AND) line(g, "if %s {", paren(g, test));
    else line(g, "if (!%s) {", test);
    g->indent++;
    line(g, "%s = %s;", r, ex(g, e->b));
    g->indent--;
    line(g, "}");
    return r;
}

static const char *select_expr(gen *g, const ir_expr *e) {
    const char *c = ex(g, e->cond);
    if (!effects(e->a) && !effects(e->b)) {
        const char *a = ex(g, e->a), *b = ex(g, e->b);
        return str(g, "(%s ? %s : %s)", c, a, b);
    }
    const char *r = new_temp(g, e->type, NULL);
    line(g, "if %s {", paren(g, c));
    g->indent++;
    line(g, "%s = %s;", r, ex(g, e->a));
    g->indent--;
    line(g, "} else {");
    g->indent++;
    line(g, "%s = %s;", r, ex(g, e->b));
    g->indent--;
    line(g, "}");
    return r;
}

int gpu_hardware_texture(const ir_func *f, int p, const gpu_dialect *d) {
    const ir_param *prm = &f->params[p];
    return d->texture3d_f32 && prm->sampled && prm->role == ROLE_ARRAY && prm->type == TACK_F32;
}

/* A texture sample in hardware: the body's coordinate assignments (ir.h's
 * `sample`), then one fetch in place of the software filtering.  The data
 * is [u][v][w] with w innermost, the fetch's x. */
static const char *hardware_sample(gen *g, const ir_expr *e) {
    for (int d = 0; d < 3; d++) statement(g, e->body->stmts[d]);
    const char *c[3];
    for (int d = 0; d < 3; d++) c[d] = local_name(g, e->body->stmts[d]->index);
    line(g, "%s = %s(tex%d, %s, %s, %s);", local_name(g, e->index), g->d->texture3d_f32, e->sample,
         c[2], c[1], c[0]);
    return local_name(g, e->index);
}

/* ---- leaving inlined bodies without goto (dialect.h's no_goto) ---- */

static int expr_exits(const ir_expr *e, int id);

/* Whether a statement in b (at any depth) leaves inlined body `id`. */
static int block_exits(const ir_block *b, int id) {
    for (int i = 0; b && i < b->n; i++) {
        const ir_stmt *s = b->stmts[i];
        if (s->kind == IR_EXIT && s->index == id) return 1;
        if (expr_exits(s->value, id) || expr_exits(s->start, id) || expr_exits(s->stop, id) ||
            expr_exits(s->step, id) || block_exits(&s->body, id) || block_exits(&s->orelse, id))
            return 1;
        for (int k = 0; k < s->nindices; k++)
            if (expr_exits(s->indices[k], id)) return 1;
    }
    return 0;
}

static int expr_exits(const ir_expr *e, int id) {
    if (!e) return 0;
    if (expr_exits(e->a, id) || expr_exits(e->b, id) || expr_exits(e->cond, id)) return 1;
    for (int i = 0; i < e->nargs && e->args; i++)
        if (expr_exits(e->args[i], id)) return 1;
    return e->body && block_exits(e->body, id);
}

/* Enters a loop (is_inline 0) or an inlined do-while; 0 when too deep. */
static int breakable_enter(gen *g, int is_inline, const ir_expr *at) {
    if (g->nbreakables == MAX_BREAKABLES) {
        fail_at(g, at ? at->src : 0, at ? at->line : 1, at ? at->col : 0,
                "loops and inlined functions nested more than %d deep", MAX_BREAKABLES);
        return 0;
    }
    g->breakable_is_inline[g->nbreakables++] = (unsigned char)is_inline;
    return 1;
}

/* After a loop (statement s) or an inlined body (expression e) closed:
 * a return from an enclosing inlined body taken inside it breaks on. */
static void breakable_leave(gen *g, const ir_stmt *s, const ir_expr *e) {
    for (int i = g->ninlines - 1; i >= 0; i--) {
        const inline_label *x = &g->inlines[i];
        if (!x->flagged) continue;
        ir_block one = {0};
        const ir_stmt *only[1] = {s};
        if (s) {
            one.stmts = (ir_stmt **)only;
            one.n = 1;
        }
        if (s ? block_exits(&one, x->id) : expr_exits(e, x->id)) line(g, "if (tk_x%d) break;", x->label);
    }
}

/* An inlined function body: a block, and a label after it that its
 * `return`s (IR_EXIT) jump to, out of any loops inside it. */
static const char *inlined(gen *g, const ir_expr *e) {
    if (e->sample >= 0 && e->index >= 0 && gpu_hardware_texture(g->f, e->sample, g->d))
        return hardware_sample(g, e);
    if (g->ninlines == g->inlines_cap) {
        int cap = g->inlines_cap ? 2 * g->inlines_cap : 8;
        inline_label *n = realloc(g->inlines, cap * sizeof *n);
        if (!n) {
            nomem(g);
            return "0";
        }
        g->inlines = n;
        g->inlines_cap = cap;
    }
    int label = g->nlabels++;
    int flagged = g->d->no_goto && block_exits(e->body, e->inline_id);
    g->inlines[g->ninlines++] = (inline_label){e->inline_id, label, 0, flagged};
    if (flagged) {
        /* No goto: the body is a do { } while (0) that a return leaves by
         * setting the flag and breaking, out of each loop on the way. */
        line(g, "int tk_x%d = 0;", label);
        line(g, "do {");
        if (!breakable_enter(g, 1, e)) return "0";
    } else {
        line(g, "{");
    }
    g->indent++;
    block(g, e->body);
    g->indent--;
    if (flagged) {
        g->nbreakables--;
        line(g, "} while (0);");
        g->ninlines--;
        breakable_leave(g, NULL, e);
    } else {
        line(g, "}");
        g->ninlines--;
        if (g->inlines[g->ninlines].used) line(g, "tk_exit%d:;", label);
    }
    if (e->index < 0) return "";
    return local_name(g, e->index);
}

static const char *ex(gen *g, const ir_expr *e) {
    if (g->failed) return "0";
    if (e->kind != IR_INLINE && !concrete(e->type)) {
        fail_at(g, e->src, e->line, e->col, "an expression without a concrete type");
        return "0";
    }
    switch (e->kind) {
    case IR_CONST:
        if (ir_type_is_float(e->type)) return float_lit(g, e->type, e->f);
        return int_lit(g, e->type, e->i);
    case IR_PARAM:
        return str(g, "s%d", e->index);
    case IR_LOCAL:
        return local_name(g, e->index);
    case IR_LOAD: {
        if (e->nargs != 1) break;
        int64_t slot = check_extent_slot(g->f, e);
        if (slot >= 0) return str(g, "x%lld", (long long)slot);
        if (g->f->params[e->index].type == TACK_F16) {
            half_suffix(g, TACK_F32);
            return str(g, "tk_f16_load(p%d, %s)", e->index, ex(g, e->args[0]));
        }
        const char *v = element(g, e->index, ex(g, e->args[0]));
        if (g->f->params[e->index].type == TACK_BOOL) return str(g, "(%s != 0)", v);
        return v;
    }
    case IR_SLOAD:
        if (e->nargs != 1) break;
        return str(g, "a%d[%s]", e->index, ex(g, e->args[0]));
    case IR_BINOP:
        return binop(g, e);
    case IR_UNOP: {
        const char *a = ex(g, e->a);
        ir_type t = e->type;
        switch (e->op) {
        case OP_NEG:
            if (ir_type_is_float(t)) return str(g, "(-%s)", a);
            if (t == TACK_BOOL) return a; /* 0 - a in one bit */
            return wrap(g, t, '-', "0", a);
        case OP_INVERT:
            if (t == TACK_BOOL) return str(g, "(!%s)", a);
            if (ir_type_is_float(t)) break;
            return str(g, "((%s)~%s)", tn(g, t), a);
        case OP_NOT:
            return str(g, "(!%s)", a);
        default:
            return a;
        }
        break;
    }
    case IR_ANDOR:
        return andor(g, e);
    case IR_SELECT:
        return select_expr(g, e);
    case IR_CAST:
        return convert(g, ex(g, e->a), e->a->type, e->type);
    case IR_CALL:
        return call(g, e);
    case IR_ATOMIC:
        return atomic(g, e);
    case IR_INLINE:
        return inlined(g, e);
    case IR_DIM:
    case IR_VECTOR:
        break;
    }
    fail_at(g, e->src, e->line, e->col, "an expression of kind %d", (int)e->kind);
    return "0";
}

/* ---- statements ---- */

/* Debug mode: records a failed access in the errors array, as the CPU
 * backend: the lowest launch index wins (atomic min), its details written
 * under a spin lock taken with the critical section inside the retry loop
 * (so work items of one SIMD group never wait on each other). */
static void bounds_fail(gen *g, const ir_stmt *s) {
    const ir_func *f = g->f;
    if (!g->d->cas64) {
        fail_at(g, s->src, s->line, s->col,
                "debug mode (tack.set_debug) records a bad index with 64-bit atomics, which %s "
                "does not have",
                g->d->title ? g->d->title : g->d->name);
        return;
    }
    int ep = f->debug_errors;
    if (ep < 0 || f->params[ep].type != TACK_I64) {
        fail_at(g, s->src, s->line, s->col, "a bounds check without the errors array");
        return;
    }
    const char *L = tn(g, TACK_I64), *U = tn(g, TACK_U64), *G = g->d->global_qual;
    const char *idx[TACK_MAX_NDIM];
    int n = s->nindices < TACK_MAX_NDIM ? s->nindices : TACK_MAX_NDIM;
    for (int k = 0; k < n; k++)
        idx[k] = once(g, TACK_I64, convert(g, ex(g, s->indices[k]), s->indices[k]->type, TACK_I64));
    const char *key = once(g, TACK_I64, local_name(g, f->loop_var));
    line(g, "%s(&p%d[%d], %s);", helper_atomic(g, ATOM_MIN, TACK_I64), ep, DEBUG_ERR_FIRST, key);
    g->uses_atomics64 = 1;
    const char *done = new_temp(g, TACK_I32, "0");
    line(g, "while (!%s) {", done);
    g->indent++;
    line(g, "if (%s((%s%s *)&p%d[%d], 0, 1) == 0) {", g->d->cas64, G, U, ep, DEBUG_ERR_LOCK);
    g->indent++;
    line(g, "volatile %s%s *e = p%d;", G, L, ep);
    line(g, "if (%s < e[%d]) {", key, DEBUG_ERR_INDEX);
    g->indent++;
    line(g, "e[%d] = %s;", DEBUG_ERR_INDEX, key);
    line(g, "e[%d] = %d;", DEBUG_ERR_SITE, s->index);
    line(g, "e[%d] = %d;", DEBUG_ERR_NDIM, s->nindices);
    for (int k = 0; k < n; k++) line(g, "e[%d] = %s;", DEBUG_ERR_VALUES + k, idx[k]);
    g->indent--;
    line(g, "}");
    line(g, "%s;", g->d->fence);
    line(g, "%s((%s%s *)&p%d[%d], 1, 0);", g->d->cas64, G, U, ep, DEBUG_ERR_LOCK);
    line(g, "%s = 1;", done);
    g->indent--;
    line(g, "}");
    g->indent--;
    line(g, "}");
}

/* print(): a record in the print buffer (gpu/print_buf.c).  The values
 * are evaluated first, then one atomic add reserves the record's words
 * (tk_print_at: the index of its first word, or ~0 when it does not fit
 * and the drop is counted), then the statement's id and each value's 64
 * bits go in, low word first. */
static const char *print_reserve(gen *g) {
    const char *name = "tk_print_at";
    const char *add = helper_atomic(g, ATOM_ADD, TACK_U32); /* first: helpers come whole */
    if (!helper_needed(g, H_PRINT, TACK_U32, name)) return name;
    const gpu_dialect *d = g->d;
    const char *U = tn(g, TACK_U32), *G = d->global_qual;
    HPUT("%s %s %s(%s%s *b, %s n) {\n", d->func_qual, U, name, G, U, U);
    /* Past the capacity no reservation is made, so the offset cannot wrap. */
    HPUT("    const %s cap = b[%d];\n", U, GPU_PRINT_CAPACITY);
    HPUT("    if (*(volatile %s%s *)&b[%d] < cap) {\n", G, U, GPU_PRINT_OFFSET);
    HPUT("        const %s at = %s(&b[%d], n);\n", U, add, GPU_PRINT_OFFSET);
    HPUT("        if (at < cap && cap - at >= n) return %du + at;\n", GPU_PRINT_HEADER);
    HPUT("    }\n");
    HPUT("    (void)%s(&b[%d], 1u);\n", add, GPU_PRINT_DROPPED);
    HPUT("    return 0xffffffffu;\n}\n");
    return name;
}

static void print_statement(gen *g, const ir_stmt *s) {
    int id = 0;
    while (id < g->nprints && g->prints[id] != s) id++;
    if (id == g->nprints) {
        fail_at(g, s->src, s->line, s->col, "internal error: a print() missing from the table");
        return;
    }
    const char *U = tn(g, TACK_U32), *U64 = tn(g, TACK_U64), *L = tn(g, TACK_I64);
    const char **bits = malloc((size_t)(s->nindices + 1) * sizeof *bits);
    if (!bits) {
        nomem(g);
        return;
    }
    for (int i = 0; i < s->nindices; i++) {
        const ir_expr *e = s->indices[i];
        ir_type t = e->type;
        const char *v = ex(g, e);
        if (t == TACK_BOOL) v = str(g, "(%s)((%s) ? 1 : 0)", U64, v);
        else if (t == TACK_F64) v = str(g, "(%s)%s(%s)", U64, g->d->f64_to_bits, v);
        else if (ir_type_is_float(t)) v = str(g, "(%s)%s((float)(%s))", U64, g->d->f32_to_bits, v);
        else if (ir_type_is_signed(t)) v = str(g, "(%s)(%s)(%s)", U64, L, v);
        else v = str(g, "(%s)(%s)", U64, v);
        bits[i] = new_temp(g, TACK_U64, v);
    }
    const char *at = new_temp(g, TACK_U32, str(g, "%s(tk_print, %d%s)", print_reserve(g),
                                              1 + 2 * s->nindices, "u"));
    line(g, "if (%s != 0xffffffffu) {", at);
    g->indent++;
    line(g, "tk_print[%s] = %du;", at, id);
    for (int i = 0; i < s->nindices; i++) {
        line(g, "tk_print[%s + %d] = (%s)%s;", at, 1 + 2 * i, U, bits[i]);
        line(g, "tk_print[%s + %d] = (%s)(%s >> 32);", at, 2 + 2 * i, U, bits[i]);
    }
    g->indent--;
    line(g, "}");
    free(bits);
}

static void statement(gen *g, const ir_stmt *s) {
    if (g->failed) return;
    switch (s->kind) {
    case IR_ASSIGN:
        line(g, "%s = %s;", local_name(g, s->index), ex(g, s->value));
        return;
    case IR_STORE: {
        if (s->nindices != 1) break;
        ir_expr *ops[2] = {s->value, s->indices[0]}; /* the value first, as Python */
        const char *v[2];
        operands(g, ops, 2, v);
        if (g->f->params[s->index].type == TACK_F16)
            line(g, "tk_f16_store%s(p%d, %s, %s);", half_suffix(g, s->value->type), s->index, v[1],
                 v[0]);
        else if (g->f->params[s->index].type == TACK_BOOL)
            line(g, "%s = (%s)%s;", element(g, s->index, v[1]), tn(g, TACK_U8), v[0]);
        else line(g, "%s = %s;", element(g, s->index, v[1]), v[0]);
        return;
    }
    case IR_IF:
        line(g, "if %s {", paren(g, ex(g, s->value)));
        g->indent++;
        block(g, &s->body);
        g->indent--;
        if (s->orelse.n) {
            line(g, "} else {");
            g->indent++;
            block(g, &s->orelse);
            g->indent--;
        }
        line(g, "}");
        return;
    case IR_WHILE:
        /* The condition's statements run before each test. */
        line(g, "for (;;) {");
        if (!breakable_enter(g, 0, s->value)) return;
        g->indent++;
        line(g, "if (!%s) break;", ex(g, s->value));
        block(g, &s->body);
        g->indent--;
        g->nbreakables--;
        line(g, "}");
        breakable_leave(g, s, NULL);
        return;
    case IR_FOR: {
        ir_expr *ops[3] = {s->start, s->stop, s->step};
        const char *v[3];
        line(g, "{");
        g->indent++;
        operands(g, ops, 3, v);
        const char *L = tn(g, TACK_I64), *U = tn(g, TACK_U64);
        const char *start = new_temp(g, TACK_I64, v[0]), *step = new_temp(g, TACK_I64, v[2]);
        const char *n = new_temp(g, TACK_I64, str(g, "%s(%s, %s, %s)", helper_trip(g), start, v[1], step));
        const char *k = str(g, "t%d", g->ntemps++);
        line(g, "for (%s %s = 0; %s < %s; %s++) {", L, k, k, n, k);
        if (!breakable_enter(g, 0, s->start)) return;
        g->indent++;
        line(g, "%s = (%s)((%s)%s + (%s)%s * (%s)%s);", local_name(g, s->index), L, U, start, U, k,
             U, step);
        block(g, &s->body);
        g->indent--;
        g->nbreakables--;
        line(g, "}");
        breakable_leave(g, s, NULL);
        g->indent--;
        line(g, "}");
        return;
    }
    case IR_BREAK:
    case IR_CONTINUE:
        if (g->nbreakables && g->breakable_is_inline[g->nbreakables - 1]) {
            fail_at(g, s->src, s->line, s->col, "a %s inside an inlined body's do-while",
                    s->kind == IR_BREAK ? "break" : "continue");
            return;
        }
        line(g, s->kind == IR_BREAK ? "break;" : "continue;");
        return;
    case IR_EVAL:
        ex(g, s->value); /* what it leaves is a pure value */
        return;
    case IR_EXIT:
        for (int i = g->ninlines - 1; i >= 0; i--)
            if (g->inlines[i].id == s->index) {
                g->inlines[i].used = 1;
                if (g->inlines[i].flagged) {
                    line(g, "tk_x%d = 1;", g->inlines[i].label);
                    line(g, "break;");
                } else {
                    line(g, "goto tk_exit%d;", g->inlines[i].label);
                }
                return;
            }
        break;
    case IR_BOUNDS_FAIL:
        bounds_fail(g, s);
        return;
    case IR_SSTORE: {
        if (s->nindices != 1) break;
        ir_expr *ops[2] = {s->value, s->indices[0]};
        const char *v[2];
        operands(g, ops, 2, v);
        line(g, "a%d[%s] = %s;", s->index, v[1], v[0]);
        return;
    }
    case IR_BARRIER:
        if (!g->d->barrier) break;
        line(g, "%s;", g->d->barrier);
        return;
    case IR_PRINT:
        print_statement(g, s);
        return;
    }
    fail_at(g, s->src, s->line, s->col, "a statement of kind %d", (int)s->kind);
}

static void block(gen *g, const ir_block *b) {
    for (int i = 0; i < b->n && !g->failed; i++) statement(g, b->stmts[i]);
}

/* ---- the entry ---- */

/* Scalar p from its pack word: the low bytes hold its bits. */
static const char *scalar_from_word(gen *g, ir_type t, const char *w) {
    switch (t) {
    case TACK_BOOL: return str(g, "((%s & 255) != 0)", w);
    case TACK_F32: return str(g, "%s((%s)%s)", g->d->bits_to_f32, tn(g, TACK_U32), w);
    case TACK_F64: return str(g, "%s(%s)", g->d->bits_to_f64, w);
    default: return str(g, "(%s)%s", tn(g, t), w);
    }
}

int gpu_workgroup_reduction(const ir_func *f, const gpu_dialect *d) {
    return f->nreductions > 0 && d->covering_grid && d->shared_qual && d->barrier &&
           f->ninner == 0 && !f->collective;
}

/* The combining operator of a reduction's partials: a subtracting one's
 * partial holds -(sum) (reduction_identity), so partials add. */
static ir_atomic_op partial_op(ir_atomic_op op) { return op == ATOM_SUB ? ATOM_ADD : op; }

/* A reduction kernel on a covering grid (gpu_workgroup_reduction): each
 * work item combines its iterations into register r<param> (the identity
 * when it has none, or left early: an early exit jumps within the
 * loop's body, so every item reaches what follows), the group
 * combines its items' registers in a tree in workgroup memory, and one
 * item per group makes the one atomic.  The launch gives groups of
 * exactly IR_WORKGROUP items, aligned so that an item's lane is its
 * global id modulo IR_WORKGROUP (opencl/launch.c). */
static void workgroup_reduction_body(gen *g) {
    const ir_func *f = g->f;
    const gpu_dialect *d = g->d;
    const char *L = tn(g, TACK_I64), *U = tn(g, TACK_U64), *I = tn(g, TACK_I32);
    for (int r = 0; r < f->nreductions; r++) {
        int p = f->reductions[r].param;
        ir_type t = f->params[p].type;
        /* Workgroup memory is declared at the kernel's outermost scope. */
        line(g, "%s%s tk_wg%d[%d];", d->shared_qual, tn(g, t), p, IR_WORKGROUP);
        line(g, "%s r%d = %s;", tn(g, t), p, reduction_identity(g, f->reductions[r].op, t));
    }
    /* A grid-stride loop: the launch caps the grid (opencl/launch.c), so
     * each item combines many iterations and few groups make atomics. */
    line(g, "const %s lane = (%s)(%s & %d);", I, I, d->global_id[0], IR_WORKGROUP - 1);
    line(g, "for (%s k0 = %s; k0 < count; k0 += %s) {", L, d->global_id[0], d->global_size[0]);
    g->indent++;
    line(g, "l%d = (%s)((%s)start + (%s)k0 * (%s)step);", f->loop_var, L, U, U, U);
    g->in_registers = 1;
    block(g, &f->body);
    g->in_registers = 0;
    g->indent--;
    line(g, "}");
    for (int r = 0; r < f->nreductions; r++)
        line(g, "tk_wg%d[lane] = r%d;", f->reductions[r].param, f->reductions[r].param);
    line(g, "%s;", d->barrier);
    line(g, "for (%s tk_half = %d; tk_half > 0; tk_half >>= 1) {", I, IR_WORKGROUP / 2);
    g->indent++;
    line(g, "if (lane < tk_half) {");
    g->indent++;
    for (int r = 0; r < f->nreductions; r++) {
        int p = f->reductions[r].param;
        ir_type t = f->params[p].type;
        line(g, "{ const %s cur = tk_wg%d[lane], v = tk_wg%d[lane + tk_half]; tk_wg%d[lane] = %s; }",
             tn(g, t), p, p, p, rmw_value(g, partial_op(f->reductions[r].op), t));
    }
    g->indent--;
    line(g, "}");
    line(g, "%s;", d->barrier);
    g->indent--;
    line(g, "}");
    line(g, "if (lane == 0) {");
    g->indent++;
    for (int r = 0; r < f->nreductions; r++) {
        int p = f->reductions[r].param;
        ir_type t = f->params[p].type;
        line(g, "(void)%s(&%s, tk_wg%d[0]);", helper_atomic(g, partial_op(f->reductions[r].op), t),
             element(g, p, int_lit(g, TACK_I64, 0)), p);
    }
    g->indent--;
    line(g, "}");
}

/* After the work item's last iteration: the per-access checks' flag
 * (ir.h) goes to the errors array when set.  A plain store: racing items
 * each leave one failed site (no 64-bit atomics needed). */
static void record_bounds_flag(gen *g) {
    const ir_func *f = g->f;
    for (int l = 0; l < f->nlocals && f->debug_errors >= 0; l++) {
        int site = ir_bounds_flag_site(f, l);
        if (site >= 0 && concrete(f->locals[l].type))
            line(g, "if (l%d != 0) p%d[%d] = %d;", l, f->debug_errors, DEBUG_ERR_FLAG, site + 1);
    }
}

static void entry(gen *g) {
    const ir_func *f = g->f;
    const gpu_dialect *d = g->d;
    const char *L = tn(g, TACK_I64), *U = tn(g, TACK_U64);
    sb_put(&g->body, "%s %s(", d->kernel_qual, g->entry);
    sb_put(&g->body, d->pack_param ? d->pack_param : "%s_pack pack", g->entry);
    int buffer = 0;
    for (int p = 0; p < f->nparams; p++) {
        const ir_param *prm = &f->params[p];
        if (prm->role != ROLE_ARRAY) continue;
        if (!concrete(prm->type)) {
            fail_at(g, 0, prm->line, prm->col, "parameter '%s' has no type", prm->name);
            return;
        }
        ir_type et = prm->type == TACK_BOOL ? TACK_U8 : prm->type;
        sb_put(&g->body, ", %s%s *%s%sp%d", d->global_qual, tn(g, et), f->disjoint ? d->restrict_kw : "",
               f->disjoint ? " " : "", p);
        if (d->buffer_attr) sb_put(&g->body, d->buffer_attr, ++buffer);
    }
    for (int p = 0; p < f->nparams; p++)
        if (gpu_hardware_texture(f, p, d)) sb_put(&g->body, ", %s tex%d", d->texture_object, p);
    if (g->nprints) {
        sb_put(&g->body, ", %s%s *tk_print", d->global_qual, tn(g, TACK_U32));
        if (d->buffer_attr) sb_put(&g->body, d->buffer_attr, ++buffer);
    }
    if (d->entry_extra) sb_put(&g->body, "%s", d->entry_extra);
    sb_put(&g->body, ") {\n");
    g->indent = 1;
    line(g, "const %s start = pack.w[%d], step = pack.w[%d], count = pack.w[%d];", L,
         GPU_PACK_START, GPU_PACK_STEP, GPU_PACK_COUNT);
    line(g, "const %s inner0 = pack.w[%d], inner1 = pack.w[%d];", L, GPU_PACK_INNER0,
         GPU_PACK_INNER1);
    line(g, "(void)start; (void)step; (void)inner0; (void)inner1;");
    for (int p = 0; p < f->nparams; p++) {
        const ir_param *prm = &f->params[p];
        if (prm->role != ROLE_SCALAR) continue;
        if (!concrete(prm->type)) {
            fail_at(g, 0, prm->line, prm->col, "parameter '%s' has no type", prm->name);
            return;
        }
        line(g, "const %s s%d = %s; /* %s */", tn(g, prm->type), p,
             scalar_from_word(g, prm->type, str(g, "pack.w[%d]", GPU_PACK_SCALARS + p)), prm->name);
        line(g, "(void)s%d;", p);
    }
    /* The kernel's own arrays: tack.local ones per work item (the IR
     * zeroes them), tack.shared ones per workgroup. */
    for (int i = 0; i < f->nscratch; i++) {
        const ir_scratch *a = &f->scratch[i];
        if (a->shared && !d->shared_qual) {
            fail_at(g, 0, 1, 0, "the %s dialect has no workgroup memory", d->name);
            return;
        }
        line(g, "%s%s a%d[%lld]; /* %s */", a->shared ? d->shared_qual : "", tn(g, a->type), i,
             (long long)ir_scratch_size(a), a->name);
    }
    /* Locals start at zero, as on the CPU. */
    for (int l = 0; l < f->nlocals; l++) {
        ir_type t = f->locals[l].type;
        if (!concrete(t)) continue; /* never read: inference gave it no type */
        line(g, "%s l%d = 0; /* %s */", tn(g, t), l, f->locals[l].name);
        line(g, "(void)l%d;", l);
    }
    /* The per-access checks' extents, read once: a read under the check's
     * condition is a conditional load no compiler hoists, and it keeps
     * the loop around it scalar (the CPU backend's check_extent). */
    ir_walk_block(&(ir_walker){.expr = note_extent_read, .ctx = g}, &f->body);
    for (int x = 0; x < TACK_MAX_PARAMS * TACK_MAX_NDIM; x++)
        if (g->extent_read[x / 8] >> x % 8 & 1)
            line(g, "const %s x%d = p%d[%d];", L, x, f->debug_errors, DEBUG_ERR_EXTENTS + x);
    /* The body is emitted once.  The innermost index takes dimension 0, the
     * fastest-varying one (neighbouring work items then touch neighbouring
     * elements of a row-major array: what a GPU coalesces and a CPU driver
     * such as PoCL vectorizes), the outer range the highest. */
    int nlev = 1 + (f->ninner < 2 ? f->ninner : 2);
    const char *ext[3] = {"count", "inner0", "inner1"};
    if (gpu_workgroup_reduction(f, d)) {
        workgroup_reduction_body(g);
    } else if (d->covering_grid) {
        /* One iteration per work item, behind a bound check: no loop
         * around the body, which PoCL needs to vectorize across items;
         * or, serial_innermost, the innermost index as the item's loop. */
        int grid = nlev - (d->serial_innermost && nlev > 1 && !f->collective);
        for (int v = 0; v < grid; v++)
            line(g, "const %s k%d = %s;", L, v, d->global_id[grid - 1 - v]);
        const char *in = "k0 < count";
        for (int v = 1; v < grid; v++) in = str(g, "%s && k%d < %s", in, v, ext[v]);
        line(g, "if (%s) {", in);
        g->indent++;
        line(g, "l%d = (%s)((%s)start + (%s)k0 * (%s)step);", f->loop_var, L, U, U, U);
        for (int v = 1; v < grid; v++) line(g, "l%d = k%d;", f->inner_var[v - 1], v);
        if (grid < nlev) {
            line(g, "for (%s k%d = 0; k%d < %s; k%d++) {", L, grid, grid, ext[grid], grid);
            g->indent++;
            line(g, "l%d = k%d;", f->inner_var[grid - 1], grid);
        }
        block(g, &f->body);
        if (grid < nlev) {
            g->indent--;
            line(g, "}");
        }
        g->indent--;
        line(g, "}");
    } else {
        /* Grid-stride loops: any trip count fits any grid.  A reduction
         * accumulates in a register over the work item's iterations, and
         * goes to memory in one atomic after them. */
        g->in_registers = 1;
        for (int r = 0; r < f->nreductions; r++) {
            int p = f->reductions[r].param;
            ir_type t = f->params[p].type;
            if (!concrete(t) || t == TACK_BOOL || t == TACK_F16) continue;
            line(g, "%s r%d = %s;", tn(g, t), p, reduction_identity(g, f->reductions[r].op, t));
        }
        for (int v = 0; v < nlev; v++) {
            line(g, "for (%s k%d = %s; k%d < %s; k%d += %s) {", L, v, d->global_id[nlev - 1 - v],
                 v, ext[v], v, d->global_size[nlev - 1 - v]);
            g->indent++;
            if (v == 0)
                line(g, "l%d = (%s)((%s)start + (%s)k0 * (%s)step);", f->loop_var, L, U, U, U);
            else line(g, "l%d = k%d;", f->inner_var[v - 1], v);
        }
        block(g, &f->body);
        for (int v = 0; v < nlev; v++) {
            g->indent--;
            line(g, "}");
        }
        g->in_registers = 0;
        for (int r = 0; r < f->nreductions; r++) {
            ir_atomic_op op = partial_op(f->reductions[r].op);
            int p = f->reductions[r].param;
            ir_type t = f->params[p].type;
            if (!concrete(t) || t == TACK_BOOL || t == TACK_F16) continue;
            line(g, "(void)%s(&%s, r%d);", helper_atomic(g, op, t),
                 element(g, p, int_lit(g, TACK_I64, 0)), p);
        }
    }
    record_bounds_flag(g);
    sb_put(&g->body, "}\n");
}

static tack_status emit(const ir_func *f, const gpu_dialect *d, const char *entry_name,
                        int guarded, char **source, tack_error *err) {
    *source = NULL;
    gen g = {0};
    g.f = f;
    g.d = d;
    g.entry = entry_name;
    g.guarded = guarded;
    g.err = err;
    arena_init(&g.strs);
    if (f->loop_var < 0 || f->loop_var >= f->nlocals)
        fail_at(&g, 0, 1, 0, "a kernel without a parallel loop");
    else if (!d->type[TACK_F64] && gpu_check_support(f, 0, 1, d->title ? d->title : d->name, "", err))
        g.failed = 1; /* a dialect without f64: err names the first use */
    else if (gpu_check_private(f, d->title ? d->title : d->name, err))
        g.failed = 1;
    else if ((g.nprints = gpu_print_statements(f, &g.prints)) < 0)
        nomem(&g);
    else entry(&g);
    sbuf out = {0};
    if (!g.failed) {
        sb_put(&out, "/* kernel '%s', generated by tack (%s) */\n%s", f->name, d->name, d->prelude);
        if (g.uses_f64) sb_put(&out, "%s", d->fp64_prelude);
        if (g.uses_atomics64) sb_put(&out, "%s", d->atomics64_prelude);
        sb_put(&out, "typedef struct { %s w[%d]; } %s_pack;\n", d->type[TACK_I64], gpu_pack_words(f),
               entry_name);
        /* The dialect's f16 helpers are one text each: guarded whole. */
        if (g.uses_f16)
            sb_put(&out, guarded ? "#ifndef TK_HAVE_f16\n#define TK_HAVE_f16\n%s#endif\n" : "%s",
                   d->f16_helpers);
        if (g.uses_f16_f64)
            sb_put(&out, guarded ? "#ifndef TK_HAVE_f16_f64\n#define TK_HAVE_f16_f64\n%s#endif\n"
                                 : "%s",
                   d->f16_f64_helpers);
        if (g.guard_open) sb_put(&g.helpers, "#endif\n");
        if (g.helpers.s) sb_put(&out, "%s", g.helpers.s);
        if (g.body.s) sb_put(&out, "%s", g.body.s);
        if (out.failed || g.helpers.failed || g.body.failed) nomem(&g);
    }
    free(g.body.s);
    free(g.helpers.s);
    free(g.inlines);
    free(g.prints);
    arena_free(&g.strs);
    if (g.failed) {
        free(out.s);
        return err->status;
    }
    *source = out.s;
    return TACK_OK;
}

tack_status gpu_emit(const ir_func *f, const gpu_dialect *d, const char *entry_name,
                     char **source, tack_error *err) {
    return emit(f, d, entry_name, 0, source, err);
}

tack_status gpu_emit_guarded(const ir_func *f, const gpu_dialect *d, const char *entry_name,
                             char **source, tack_error *err) {
    return emit(f, d, entry_name, 1, source, err);
}
