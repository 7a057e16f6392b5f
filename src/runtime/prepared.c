/*
 * prepared.c - prepared launches (tack.h's tack_launch): a kernel launched
 * again and again from one call site.
 *
 * Preparing resolves the call's variant once.  A later call is then run
 * by one of two paths:
 *   - the warm path, for arguments with the prepared call's layout (each
 *     argument's kind; an array's dtype, width, dimensions, shape,
 *     strides, writability and home; a scalar's type as its value selects
 *     it): everything the variant key depends on is the same, but for
 *     the disjoint bit, so the launch's slots are the prepared ones with
 *     this call's addresses and scalar values written in.  This is what
 *     the Python binding's repeated calls take (python/tack/_ext/warm.c),
 *     and why it costs a fraction of a classification;
 *   - otherwise a call to a warm handle takes the full path (the fast
 *     path's table, runtime.h); one to a handle that cannot be warm is
 *     classified as a first call would be, and runs the prepared variant
 *     if its key is the same, or takes the full path.
 * The warm path holds only for simple calls: no templates, complex values,
 * stages or per-access checks' records, and not in debug mode.  The
 * hidden arguments (reductions' arrays, the random seed) are added per
 * call as on the full path.  Variants freed since the launch was prepared
 * (the epoch moved on, runtime.h's fast path) make it take the full path.
 */
#include <stdlib.h>
#include <string.h>

#include "runtime.h"

struct tack_launch {
    tack_kernel *k;
    tack_device *dev;
    ir_template *t;
    variant *v;
    template_key tkey;
    /* The warm path's: set when the prepared call is simple (see the top). */
    uint64_t epoch;              /* fast_epoch() before resolving */
    int warm;
    int nargs, nslots;
    int nparams;                        /* nargs and the hidden arguments */
    tack_arg layout[TACK_MAX_PARAMS];   /* the prepared call's arguments */
    uint64_t slots[MAX_ARGS];           /* the strides' slots, past nparams */
    int64_t dims[MAX_ARGS][TACK_MAX_NDIM];
    int64_t span_lo[TACK_MAX_PARAMS];   /* a non-empty array's bytes, from */
    int64_t span_hi[TACK_MAX_PARAMS];   /* its data pointer; both 0: empty */
};

/* Calls the handle can take without resolving anything: no templates nor
 * complex scalars (both expand into hidden arguments), and not in debug
 * mode (whose launches are noted for the check). */
static int simple_call(const tack_kernel *k, const tack_arg *args, int nargs) {
    if (kernel_debug(k)) return 0;
    for (int i = 0; i < nargs; i++)
        if (args[i].kind == TACK_ARG_STRUCT || args[i].kind == TACK_ARG_COMPLEX) return 0;
    return 1;
}

/* Whether a has the layout of the prepared argument p (see the top). */
static int same_layout(const tack_arg *a, const tack_arg *p) {
    if (a->kind != p->kind) return 0;
    if (a->kind != TACK_ARG_ARRAY) return scalar_value_class(a) == scalar_value_class(p);
    int nd = p->ndim;
    return a->dtype == p->dtype && a->vec_width == p->vec_width && a->ndim == nd &&
           a->is_texture == p->is_texture && a->writable == p->writable && a->device == p->device &&
           !memcmp(a->shape, p->shape, (size_t)nd * sizeof *a->shape) &&
           !memcmp(a->strides, p->strides, (size_t)nd * sizeof *a->strides);
}

/* Fills l's warm path from its resolved call (info after call_classify). */
static void prepare_warm(tack_launch *l, const tack_arg *args, int nargs, const call_info *info) {
    const ir_func *f = l->t->ir;
    if (!simple_call(l->k, args, nargs) || nargs != l->k->def->nparams || l->tkey.debug ||
        l->tkey.tmpl.len || l->k->nstages > 1 || f->debug_errors >= 0 ||
        info->nargs != f->nparams)
        return;
    for (int i = 0; i < nargs; i++) {
        const tack_arg *a = &info->args[i]; /* as matrix_args shaped it: the same bytes */
        l->span_lo[i] = l->span_hi[i] = 0;
        if (a->kind != TACK_ARG_ARRAY || array_nbytes(a) <= 0) continue;
        uintptr_t lo, hi;
        array_span(a, &lo, &hi);
        l->span_lo[i] = (int64_t)(lo - (uintptr_t)a->data);
        l->span_hi[i] = (int64_t)(hi - (uintptr_t)a->data);
    }
    memcpy(l->layout, args, (size_t)nargs * sizeof *args);
    memcpy(l->slots, info->slots, sizeof l->slots);
    memcpy(l->dims, info->dims, sizeof l->dims);
    l->nargs = nargs;
    l->nparams = info->nargs;
    l->nslots = info->nslots;
    l->warm = 1;
}

tack_launch *tack_launch_prepare(tack_kernel *k, tack_device *dev, const tack_arg *args, int nargs,
                                 tack_error *err) {
    ERR_OR_SCRATCH(err);
    err->status = TACK_OK;
    if (!k || !dev || (nargs && !args) || nargs < 0) {
        runtime_error(err, TACK_ERR_VALUE, "tack_launch_prepare: NULL kernel, device or arguments");
        return NULL;
    }
    tack_launch *l = calloc(1, sizeof *l);
    if (!l) {
        runtime_error(err, TACK_ERR_NOMEM, "out of memory preparing a launch of '%s'", k->def->name);
        return NULL;
    }
    call_info info;
    int64_t errors[DEBUG_ERR_LEN], extents[MAX_ARGS * TACK_MAX_NDIM];
    info.nreductions = 0;
    info.reductions_started = 0;
    uint64_t epoch = fast_epoch();
    readers_enter(k);
    tack_status st = launch_resolve(k, dev, args, nargs, kernel_debug(k), &l->tkey, &l->t, &info,
                                    &l->v, errors, extents, 0, err);
    readers_exit(k);
    launch_release_hidden(dev, &info);
    if (st) {
        free(l);
        return NULL;
    }
    l->k = k;
    l->dev = dev;
    l->epoch = epoch;
    prepare_warm(l, args, nargs, &info);
    return l;
}

int tack_launch_is_warm(const tack_launch *l) {
    return l && l->warm && l->epoch == fast_epoch() && !kernel_debug(l->k);
}

int tack_launch_accepts(const tack_launch *l, const tack_arg *args, int nargs) {
    if (!tack_launch_is_warm(l) || nargs != l->nargs || !args) return 0;
    for (int i = 0; i < nargs; i++)
        if (!same_layout(&args[i], &l->layout[i])) return 0;
    return 1;
}

/* The warm path: 1 when args do not have the prepared layout, or anything
 * the slow path names (a NULL or misaligned address, elements that wrap
 * the address space, another disjointness): nothing was run.  The caller
 * is counted as a reader of l->k and has seen the epoch unchanged. */
static int run_warm(const tack_launch *l, const tack_arg *args, tack_results *results,
                    tack_status *st, tack_error *err) {
    const ir_func *f = l->t->ir;
    const variant *v = l->v;
    int nargs = l->nargs, nparams = l->nparams;
    call_info info;
    span spans[TACK_MAX_PARAMS];
    int nspans = 0;
    for (int i = 0; i < nargs; i++) {
        const tack_arg *a = &args[i];
        if (!same_layout(a, &l->layout[i])) return 1;
        /* The checks read scalars from the arguments, and a reduction's
         * type may follow the arrays' (launch.c's reduction_dtype). */
        if (a->kind != TACK_ARG_ARRAY) {
            info.slots[i] = scalar_slot(v->key.type[i], a);
            if (l->t->nchecks) info.args[i] = *a;
            else info.args[i].kind = a->kind;
            continue;
        }
        info.args[i].kind = a->kind;
        info.args[i].dtype = a->dtype;
        uintptr_t data = (uintptr_t)a->data;
        info.slots[i] = (uint64_t)data;
        if (l->span_lo[i] == l->span_hi[i]) continue; /* empty */
        span *sp = &spans[nspans++];
        sp->lo = data + (uintptr_t)l->span_lo[i];
        sp->hi = data + (uintptr_t)l->span_hi[i];
        sp->written = f->params[i].written;
        if (!data || data % (uintptr_t)tack_dtype_size(a->dtype) || sp->hi <= sp->lo ||
            sp->lo > data)
            return 1;
    }
    int disjoint = l->dev->caps.host_memory && arrays_disjoint(spans, nspans);
    if (disjoint != v->key.disjoint) return 1;
    info.nargs = nargs;
    info.nreductions = info.reductions_started = 0;
    if (nparams > nargs) {
        /* The reductions' arrays (this call's own) and the random seed. */
        if ((*st = launch_add_hidden(l->k, l->t, &info, l->dev, 1, err))) return 0;
        for (int i = nargs; i < nparams; i++) {
            const tack_arg *a = &info.args[i];
            info.slots[i] = a->kind == TACK_ARG_ARRAY ? (uint64_t)(uintptr_t)a->data
                                                      : scalar_slot(v->key.type[i], a);
        }
    }
    /* The fields of the key a launch reads (call_classify_warm). */
    info.key.nparams = v->key.nparams;
    info.key.hidden_tail = v->key.hidden_tail;
    info.key.disjoint = disjoint;
    memcpy(info.key.type, v->key.type, (size_t)nparams);
    memcpy(info.key.strided, v->key.strided, (size_t)nparams);
    info.nslots = l->nslots;
    memcpy(info.slots + nparams, l->slots + nparams,
           (size_t)(l->nslots - nparams) * sizeof *info.slots);
    memcpy(info.dims, l->dims, (size_t)nparams * sizeof *info.dims);
    atomic_fetch_add_explicit(&tack_counters.fast_path_hits, 1, memory_order_relaxed);
    *st = run_variant(l->k, l->t, l->v, &info, l->dev, err);
    if (nparams > nargs) { /* else nothing is returned (results->n is 0) */
        if (*st == TACK_OK) *st = read_results(l->t, l->dev, &info, results, err);
        launch_release_hidden(l->dev, &info);
    }
    return 0;
}

/* The classified path: the call is classified as a first call would be,
 * and runs the prepared variant if its key is the same.  1: it differs
 * (nothing run). */
static int run_classified(const tack_launch *l, const tack_arg *args, int nargs, tack_status *st,
                          tack_error *err) {
    if (!simple_call(l->k, args, nargs) || nargs != l->k->def->nparams || l->tkey.debug ||
        l->tkey.tmpl.len || l->t->ir->nreductions || l->k->nstages > 1 ||
        l->t->ir->debug_errors >= 0)
        return 1;
    tack_arg mats[TACK_MAX_PARAMS];
    if ((*st = matrix_args(l->k, &args, nargs, mats, err))) return 0;
    for (int i = 0; i < nargs; i++) {
        int w = args[i].kind == TACK_ARG_ARRAY ? args[i].vec_width : 0;
        if (w != l->tkey.vec[i]) return 1;
        if (l->tkey.row_ndim[i] && args[i].ndim != l->tkey.row_ndim[i]) return 1; /* another template */
    }
    call_info info;
    memcpy(info.args, args, nargs * sizeof *args);
    info.nargs = nargs;
    info.nreductions = info.reductions_started = 0;
    if ((*st = launch_add_hidden(l->k, l->t, &info, l->dev, 0, err)) ||
        (*st = call_classify(l->k, l->dev, l->t, &info, &l->tkey, err)))
        return 0;
    if (!variant_key_equal(&info.key, &l->v->key)) return 1;
    *st = run_variant(l->k, l->t, l->v, &info, l->dev, err);
    return 0;
}

tack_status tack_launch_call(tack_launch *l, const tack_arg *args, int nargs, tack_results *results,
                             tack_error *err) {
    ERR_OR_SCRATCH(err);
    err->status = TACK_OK;
    if (results) results->n = results->nvalues = 0;
    if (!l || (nargs && !args) || nargs < 0)
        return runtime_error(err, TACK_ERR_VALUE, "tack_launch_call: NULL handle or arguments");
    /* A reader from here, the prepared template and variant stay alive
     * as long as no variant was freed since preparing. */
    retire_pending();
    tack_status st = TACK_OK;
    readers_enter(l->k);
    int missed = l->epoch != fast_epoch() ||
                 (l->warm && nargs == l->nargs && !kernel_debug(l->k) ? run_warm(l, args, results, &st, err)
                  : results ? 1 : run_classified(l, args, nargs, &st, err));
    readers_exit(l->k);
    return missed ? tack_kernel_call(l->k, l->dev, args, nargs, results, err) : st;
}

tack_status tack_launch_run(tack_launch *l, const tack_arg *args, int nargs, tack_error *err) {
    return tack_launch_call(l, args, nargs, NULL, err);
}

void tack_launch_free(tack_launch *l) { free(l); }
