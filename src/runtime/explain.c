/* explain.c - says why a call compiled a new variant: the key elements that
 * differ from the nearest existing variant of the kernel, in words, e.g.
 * "parameter a: i32 -> i64 (value 1099511627776 is outside i32)". */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime.h"

static tack_log_fn log_fn;
static void *log_ctx;
static atomic_int log_stderr = -1;

void tack_set_log_handler(tack_log_fn fn, void *ctx) {
    log_ctx = ctx;
    log_fn = fn;
}

static int stderr_enabled(void) {
    int v = atomic_load(&log_stderr);
    if (v < 0) {
        const char *env = getenv("TACK_LOG");
        v = env && strstr(env, "compile") != NULL;
        atomic_store(&log_stderr, v);
    }
    return v;
}

static int logging_wanted(void) { return log_fn || stderr_enabled(); }

static void emit(tack_log_level level, const char *msg) {
    if (stderr_enabled())
        fprintf(stderr, "tack %s: %s\n", level == TACK_LOG_WARNING ? "warning" : "compile", msg);
    if (log_fn) log_fn(log_ctx, level, msg);
}

typedef struct text {
    char buf[1024];
    size_t len;
    int items;
} text;

static void add(text *t, const char *fmt, ...) {
    if (t->len >= sizeof t->buf) return;
    if (t->items++) t->len += snprintf(t->buf + t->len, sizeof t->buf - t->len, "; ");
    if (t->len >= sizeof t->buf) return;
    va_list ap;
    va_start(ap, fmt);
    t->len += vsnprintf(t->buf + t->len, sizeof t->buf - t->len, fmt, ap);
    va_end(ap);
}

static const char *pname(const ir_func *f, int i) { return f->params[i].name; }

/* Why a scalar's type changed, from its value. */
static const char *scalar_reason(const tack_arg *a, int from, int to, char *buf, size_t size) {
    char v[32];
    if (a->kind == TACK_ARG_INT) snprintf(v, sizeof v, "%" PRId64, a->i);
    else if (a->kind == TACK_ARG_UINT) snprintf(v, sizeof v, "%" PRIu64, a->u);
    else if (a->kind == TACK_ARG_FLOAT)
        return to == TACK_F64 ? " (an array argument is f64)" : " (no array argument is f64)";
    else return "";
    if (to == TACK_I64 && from == TACK_I32) snprintf(buf, size, " (value %s is outside i32)", v);
    else if (to == TACK_U64) snprintf(buf, size, " (value %s is outside i64)", v);
    else if (to == TACK_I32) snprintf(buf, size, " (value %s fits in i32)", v);
    else snprintf(buf, size, " (value %s)", v);
    return buf;
}

/* Whether two classified arrays' spans of bytes meet. */
static int spans_meet(const tack_arg *a, const tack_arg *b) {
    uintptr_t alo, ahi, blo, bhi;
    array_span(a, &alo, &ahi);
    array_span(b, &blo, &bhi);
    return alo < ahi && blo < bhi && blo < ahi && alo < bhi;
}

/* What to do about a kernel that keeps specializing on one thing. */
static const char *const advice_for[] = {
    "", /* nothing differs */
    "if it changes from call to call, pass values of one type (e.g. always a float, or "
    "numpy.int64(n))",
    "if it changes from call to call, pass arrays of one layout (numpy.ascontiguousarray(x), "
    "or always a view)",
    "if that value changes on every call, pass it as a scalar argument instead",
    "if overlap changes from call to call, pass arrays that never overlap (copy one)",
};
enum { ADVICE_NONE, ADVICE_TYPE, ADVICE_LAYOUT, ADVICE_SHAPE, ADVICE_OVERLAP };

/* Describes the differences between key `old` and `cur`; returns how many
 * elements differ.  *first_diff names the first (for the churn warning)
 * and *advice what to do about it. */
static int describe(const ir_template *tp, const variant_key *old, const variant_key *cur,
                    const tack_arg *args, text *t, char *first_diff, size_t fd_size, int *advice) {
    const ir_func *f = tp->ir;
    int n = 0;
    first_diff[0] = 0;
    *advice = ADVICE_NONE;
    for (int i = 0; i < cur->nparams; i++) {
        if (old->is_array[i] != cur->is_array[i]) {
            add(t, "parameter %s: %s -> %s", pname(f, i), old->is_array[i] ? "array" : "scalar",
                cur->is_array[i] ? "array" : "scalar");
        } else if (old->type[i] != cur->type[i]) {
            char why[96] = "";
            add(t, "parameter %s: %s -> %s%s", pname(f, i), tack_dtype_name(old->type[i]),
                tack_dtype_name(cur->type[i]),
                cur->is_array[i] ? "" : scalar_reason(&args[i], old->type[i], cur->type[i], why, sizeof why));
        } else {
            continue;
        }
        if (!n++) {
            snprintf(first_diff, fd_size, "parameter %s's type", pname(f, i));
            *advice = ADVICE_TYPE;
        }
    }
    for (int i = 0; i < cur->nparams; i++) {
        if (old->strided[i] == cur->strided[i]) continue;
        add(t, "parameter %s: %s", pname(f, i),
            cur->strided[i] ? "C-contiguous -> strided" : "strided -> C-contiguous");
        if (!n++) {
            snprintf(first_diff, fd_size, "whether %s is C-contiguous", pname(f, i));
            *advice = ADVICE_LAYOUT;
        }
    }
    for (int i = 0; i < cur->nparams; i++) {
        if (old->row_ndim[i] == cur->row_ndim[i]) continue;
        add(t, "parameter %s: %d-D -> %d-D (its rows reach a call as rows or elements by it)",
            pname(f, i), old->row_ndim[i], cur->row_ndim[i]);
        if (!n++) {
            snprintf(first_diff, fd_size, "%s's number of dimensions", pname(f, i));
            *advice = ADVICE_TYPE;
        }
    }
    for (int j = 0; j < cur->nshape && j < old->nshape; j++) {
        if (old->shape[j] == cur->shape[j]) continue;
        const shape_dep *d = &tp->deps[j];
        add(t, "%s.shape[%d] is read in the body: %" PRId64 " -> %" PRId64, pname(f, d->param),
            d->dim, old->shape[j], cur->shape[j]);
        if (!n++) {
            snprintf(first_diff, fd_size, "%s.shape[%d]", pname(f, d->param), d->dim);
            *advice = ADVICE_SHAPE;
        }
    }
    if (old->disjoint != cur->disjoint) {
        if (!cur->disjoint) {
            /* Name the written array and the one it overlaps. */
            int w = -1, o = -1;
            for (int i = 0; i < cur->nparams && w < 0; i++) {
                if (!cur->is_array[i] || !f->params[i].written) continue;
                for (int j = 0; j < cur->nparams; j++) {
                    if (j == i || !cur->is_array[j]) continue;
                    if (spans_meet(&args[i], &args[j])) {
                        w = i;
                        o = j;
                        break;
                    }
                }
            }
            if (w >= 0) add(t, "%s overlaps %s: disjoint True -> False", pname(f, w), pname(f, o));
            else add(t, "arrays overlap: disjoint True -> False");
        } else {
            add(t, "arrays no longer overlap: disjoint False -> True");
        }
        if (!n++) {
            snprintf(first_diff, fd_size, "whether arrays overlap");
            *advice = ADVICE_OVERLAP;
        }
    }
    return n;
}

void explain_new_variant(const tack_kernel *k, const ir_template *tp, kernel_slot *s,
                         const call_info *info, const tack_arg *args) {
    if (!logging_wanted()) return;
    int count = atomic_load(&s->count) + 1;
    text best = {{0}, 0, 0};
    char best_diff[128] = "", diff[128];
    int best_n = -1, best_advice = ADVICE_NONE, advice;
    readers_enter(k);
    for (variant *v = atomic_load(&s->head); v; v = v->next) {
        if (v->key.nparams != info->key.nparams) continue; /* another IR template */
        text t = {{0}, 0, 0};
        int n = describe(tp, &v->key, &info->key, args, &t, diff, sizeof diff, &advice);
        if (best_n < 0 || n < best_n) {
            best = t;
            best_n = n;
            best_advice = advice;
            memcpy(best_diff, diff, sizeof diff);
        }
    }
    readers_exit(k);
    char msg[1200];
    snprintf(msg, sizeof msg, "kernel '%s': variant %d: %s", k->def->name, count,
             best_n < 0 ? "first variant" : best.buf);
    emit(TACK_LOG_INFO, msg);
    if (count == 33) {
        snprintf(msg, sizeof msg,
                 "kernel '%s' has passed 32 variants: it keeps specializing on %s%s%s",
                 k->def->name, best_diff[0] ? best_diff : "its arguments",
                 best_advice ? "; " : "", advice_for[best_advice]);
        emit(TACK_LOG_WARNING, msg);
    }
}
