/* launch.c - tack_kernel_launch: classify the arguments, find or compile
 * the variant, and run it on the device's backend. */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "runtime.h"

/* tack_set_before_print's hook: the host's own buffered output is written
 * out before a kernel prints, so lines keep their order. */
static void (*_Atomic before_print)(void);

void tack_set_before_print(void (*hook)(void)) {
    atomic_store_explicit(&before_print, hook, memory_order_release);
}

/* IndexError for the first failed access of a debug launch: the kernel,
 * file:line, the array, the index per dimension and the extents. */
static tack_status report_bounds(const tack_kernel *k, const ir_template *t, const call_info *info,
                                 const int64_t *errors, tack_error *err) {
    const ir_func *f = t->ir;
    /* A plain kernel's per-access checks record the site alone. */
    int flagged = errors[DEBUG_ERR_FIRST] == INT64_MAX;
    int64_t site_id = flagged ? errors[DEBUG_ERR_FLAG] - 1 : errors[DEBUG_ERR_SITE];
    int64_t n = flagged ? 0 : errors[DEBUG_ERR_NDIM];
    if (site_id < 0 || site_id >= f->nsites || n < 0 || n > TACK_MAX_NDIM)
        return runtime_error(err, TACK_ERR_INTERNAL, "internal error: kernel '%s': a bounds check "
                             "failed but its record is unreadable", k->def->name);
    const ir_site *site = &f->sites[site_id];
    const ir_source *src = &f->sources[site->src];
    /* The array: a parameter, or one of the kernel's own (tack.local). */
    int own = -1 - site->param;
    if (site->param < 0 && own >= f->nscratch)
        return runtime_error(err, TACK_ERR_INTERNAL, "internal error: kernel '%s': a bounds check "
                             "failed on an array it does not have", k->def->name);
    const char *name = site->param >= 0 ? f->params[site->param].name : f->scratch[own].name;
    char index[160] = "", shape[160] = "";
    size_t il = 0, sl = 0;
    if (flagged) {
        int nd = site->param >= 0 ? f->params[site->param].index_ndim : f->scratch[own].ndim;
        for (int d = 0; d < nd && d < TACK_MAX_NDIM && sl < sizeof shape; d++)
            sl += snprintf(shape + sl, sizeof shape - sl, "%s%lld", d ? ", " : "",
                           (long long)(site->param >= 0 ? info->dims[site->param][d]
                                                        : f->scratch[own].dims[d]));
        return runtime_error(err, TACK_ERR_INDEX,
                             "kernel '%s', %s:%d: an index is out of bounds for '%s' with shape "
                             "(%s%s); nothing was read or written there (tack.set_debug(True) "
                             "names the index and the launch index)",
                             k->def->name, src->filename, src->first_line + site->line - 1, name,
                             shape, nd == 1 ? "," : "");
    }
    for (int d = 0; d < n; d++) {
        il += snprintf(index + il, sizeof index - il, "%s%lld", d ? ", " : "",
                       (long long)errors[DEBUG_ERR_VALUES + d]);
        sl += snprintf(shape + sl, sizeof shape - sl, "%s%lld", d ? ", " : "",
                       (long long)(site->param >= 0 ? info->dims[site->param][d]
                                                    : f->scratch[own].dims[d]));
        if (il >= sizeof index || sl >= sizeof shape) break;
    }
    return runtime_error(err, TACK_ERR_INDEX,
                         "kernel '%s', %s:%d: index (%s%s) is out of bounds for '%s' with shape "
                         "(%s%s) (launch index %lld)",
                         k->def->name, src->filename, src->first_line + site->line - 1, index,
                         n == 1 ? "," : "", name, shape, n == 1 ? "," : "",
                         (long long)errors[DEBUG_ERR_INDEX]);
}

/* ---- letting go of the host's lock while a run runs ---- */

/* Runs expected to be short are timed one in this many, so a variant whose
 * runs grow (a longer inner loop, more iterations) is noticed; a tiny
 * launch then pays two clock reads once in 16 calls. */
#define SHORT_RUN_SAMPLE 16

typedef struct run_plan {
    int release, timed;
    void *host;
    uint64_t t0;
} run_plan;

static uint64_t clock_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Lets go of the host's lock when the run of n iterations is expected to
 * take at least the host's threshold, and decides whether to time it.  A
 * variant's first run is not known: it lets go and is timed (once per
 * variant, and mostly right after its compile, it costs nothing that
 * shows). */
static void run_plan_begin(variant *v, int64_t n, run_plan *p) {
    p->release = p->timed = 0;
    p->host = NULL; /* set with release; cleared for the compiler's flow analysis */
    p->t0 = 0;
    uint64_t threshold = host_release_threshold();
    if (!threshold || n <= 0) return;
    uint64_t ps = atomic_load_explicit(&v->run_ps, memory_order_relaxed);
    if (!ps || (double)ps * (double)n >= (double)threshold * 1000.0) {
        p->release = p->timed = 1; /* two clock reads are nothing beside it */
    } else {
        unsigned c = atomic_load_explicit(&v->runs, memory_order_relaxed);
        atomic_store_explicit(&v->runs, c + 1, memory_order_relaxed);
        p->timed = c % SHORT_RUN_SAMPLE == 0;
    }
    /* Nothing from here to run_plan_end touches the host's objects: the
     * arguments are plain values and pointers the caller keeps alive. */
    if (p->release) p->host = host_release();
    if (p->timed) p->t0 = clock_ns();
}

/* Folds the run's time into the variant's average and takes the host's
 * lock back.  The average rises by a quarter of a longer run and falls by
 * three quarters toward a shorter one: a run the machine stalled (the
 * thread descheduled) is forgotten within a few runs, while runs that
 * really grew soon exceed any threshold anyway. */
static void run_plan_end(variant *v, int64_t n, const run_plan *p) {
    if (p->timed) {
        uint64_t dt = clock_ns() - p->t0;
        uint64_t ps = dt > UINT64_MAX / 1000 ? UINT64_MAX / 2 : dt * 1000 / (uint64_t)n;
        if (!ps) ps = 1;
        uint64_t old = atomic_load_explicit(&v->run_ps, memory_order_relaxed);
        uint64_t avg = !old ? ps : ps < old ? old / 4 + (ps - ps / 4) : old - old / 4 + ps / 4;
        atomic_store_explicit(&v->run_ps, avg ? avg : 1, memory_order_relaxed);
    }
    if (p->release) host_reacquire(p->host);
}

/* Runs variant v for a classified call on the device's backend: the
 * launch range is evaluated and checked first, so a refused call runs
 * nothing. */
/* runtime.h: everything a launch refuses once its variant exists: the
 * range evaluated (into range, with its count in *n), the workgroups and
 * the accesses whose bounds follow from the range.  tack_precompile
 * refuses the same calls through it. */
tack_status launch_precheck(const tack_kernel *k, const ir_template *t, variant *v,
                            const call_info *info, tack_device *dev, int64_t *range, int64_t *n_out,
                            tack_error *err) {
    backend_call call = {k->def->name, info->slots, (const int64_t(*)[TACK_MAX_NDIM])info->dims,
                         info->nslots, t->has_inner_loops, range, NULL};
    if (dev->ops->range(dev->b, v->code, &call, range, err)) return err->status;
    if (range[2] == 0)
        return runtime_error(err, TACK_ERR_VALUE,
                             "kernel '%s': the parallel loop's range() step must not be zero",
                             k->def->name);
    /* Before anything runs: accesses whose bounds follow from the range. */
    int64_t n = backend_launch_count(range);
    if (v->requires_full_workgroups && (dev->caps.max_workgroup < IR_WORKGROUP ||
                                        v->shared_bytes > dev->caps.local_mem_bytes))
        return runtime_error(err, TACK_ERR_VALUE,
                             "kernel '%s' needs workgroups of %d lanes sharing %lld bytes, but "
                             "device '%s' allows %lld lanes and %lld bytes of workgroup memory",
                             k->def->name, IR_WORKGROUP, (long long)v->shared_bytes,
                             dev->ops->name, (long long)dev->caps.max_workgroup,
                             (long long)dev->caps.local_mem_bytes);
    if (v->requires_full_workgroups && n % IR_WORKGROUP)
        return runtime_error(err, TACK_ERR_VALUE,
                             "kernel '%s' uses workgroups, so its launch must be whole workgroups "
                             "of %d lanes, but it launches %lld iterations (pad to %lld)",
                             k->def->name, IR_WORKGROUP, (long long)n,
                             (long long)((n / IR_WORKGROUP + 1) * IR_WORKGROUP));
    if (t->nchecks && n > 0 && launch_check_quick(t, info, range, n) &&
        launch_check_full(k, t, info, range, n, err))
        return err->status;
    *n_out = n;
    return TACK_OK;
}

/* TACK_LAUNCH_WAIT=1: queued launches are waited for (read once). */
static int launch_wait(void) {
    static atomic_int cached = -1;
    int w = atomic_load_explicit(&cached, memory_order_relaxed);
    if (w < 0) {
        const char *env = getenv("TACK_LAUNCH_WAIT");
        w = env && *env && strcmp(env, "0") != 0;
        atomic_store_explicit(&cached, w, memory_order_relaxed);
    }
    return w;
}

/* read_follows: the caller reads device memory right after the launch.
 * On the device's own queue that read waits for the launch (backend.h's
 * launch contract), so the per-access checks' wait is left to it; a
 * stream's queue is waited for here, since the read does not go there. */
static tack_status run_variant_then(const tack_kernel *k, const ir_template *t, variant *v,
                                    const call_info *info, tack_device *dev, int read_follows,
                                    tack_error *err) {
    int64_t range[BACKEND_RANGE_LEN], n;
    backend_call call = {k->def->name, info->slots, (const int64_t(*)[TACK_MAX_NDIM])info->dims,
                         info->nslots, t->has_inner_loops, range, stream_queue_for(dev)};
    if (launch_precheck(k, t, v, info, dev, range, &n, err)) return err->status;
    /* The host's lock goes before dispatch_lock (and the pool's lock inside
     * the launch) is waited for: a long run ahead of this one then keeps
     * no other host thread waiting. */
    run_plan plan;
    run_plan_begin(v, n, &plan);
    int locked = dev->caps.locked_dispatch;
    if (locked) pthread_mutex_lock(&v->dispatch_lock);
    /* Two clock reads would cost a fifth of a warm dispatch: launches are
     * timed only while someone asked (tack_set_launch_timing). */
    int timed = atomic_load_explicit(&launch_timing, memory_order_relaxed) > 0;
    uint64_t start = timed ? runtime_clock_ns() : 0;
    if (v->prints) {
        void (*hook)(void) = atomic_load_explicit(&before_print, memory_order_acquire);
        if (hook) hook();
    }
    /* A variant's first launch may compile too (PoCL builds the kernel's
     * work-group function then): the disk writer waits for it as for a
     * compile. */
    int first = !atomic_load_explicit(&v->launched, memory_order_relaxed);
    if (first) writer_compile_begin();
    tack_status st = dev->ops->launch(dev->b, v->code, &call, err);
    if (first) {
        atomic_store_explicit(&v->launched, 1, memory_order_relaxed);
        writer_compile_end();
    }
    if (v->prints) fflush(stdout); /* the kernel's lines, before the call returns */
    /* A queued launch is waited for in debug mode (its bounds report then
     * comes from this call), while launches are timed (the time is the
     * kernel's, not the queueing's) and under TACK_LAUNCH_WAIT=1 (the
     * synchronous path, for comparison and for finding which launch
     * failed). */
    int read_waits = read_follows && !call.queue && t->ir->debug_extents < 0;
    if (st == TACK_OK && dev->caps.queued_launch &&
        (timed || (t->ir->debug_errors >= 0 && !read_waits) || launch_wait()))
        st = dev->ops->queue_synchronize ? dev->ops->queue_synchronize(dev->b, call.queue, err)
                                         : dev->ops->synchronize(dev->b, err);
    uint64_t took = timed ? runtime_clock_ns() - start : 0;
    if (locked) pthread_mutex_unlock(&v->dispatch_lock);
    run_plan_end(v, n, &plan);
    if (st == TACK_OK) {
        tack_kernel *m = (tack_kernel *)k; /* counters only */
        /* The process-wide count is the kernels' sum (tack_get_stats). */
        atomic_fetch_add_explicit(&m->n_launches, 1, memory_order_relaxed);
        if (timed) atomic_fetch_add_explicit(&m->launch_ns, took, memory_order_relaxed);
    }
    return st;
}

/* runtime.h */
tack_status run_variant(const tack_kernel *k, const ir_template *t, variant *v,
                        const call_info *info, tack_device *dev, tack_error *err) {
    return run_variant_then(k, t, v, info, dev, 0, err);
}

/* A debug launch on a device without host memory: the errors record and
 * the extents go to device memory for the run, and the record comes back. */
static tack_status run_debug_staged(const tack_kernel *k, const ir_template *t, variant *v,
                                    call_info *info, tack_device *dev, int64_t *errors,
                                    const int64_t *extents, tack_error *err) {
    const ir_func *f = t->ir;
    size_t nerr = DEBUG_ERR_LEN * sizeof *errors;
    size_t next = (size_t)info->nargs * TACK_MAX_NDIM * sizeof *extents;
    void *derr = tack_device_alloc(dev, nerr, err);
    void *dext = derr ? tack_device_alloc(dev, next, err) : NULL;
    tack_status st = dext ? TACK_OK : err->status;
    if (!st) st = tack_device_write(dev, derr, 0, errors, nerr, err);
    if (!st && f->debug_extents >= 0) st = tack_device_write(dev, dext, 0, extents, next, err);
    if (!st) {
        info->slots[f->debug_errors] = (uint64_t)(uintptr_t)derr;
        if (f->debug_extents >= 0) info->slots[f->debug_extents] = (uint64_t)(uintptr_t)dext;
        st = run_variant(k, t, v, info, dev, err);
    }
    if (!st) st = tack_device_read(dev, derr, 0, errors, nerr, err);
    tack_device_free_mem(dev, derr);
    tack_device_free_mem(dev, dext);
    return st;
}

/* A plain launch with per-access checks on a device without host memory.
 * Staging a fresh record each call (allocate, write, read, free) cost more
 * than a small kernel's run on PoCL, so each variant keeps one record in
 * device memory and rewrites it only when this call's (zeroed counters
 * and extents) differ from what it holds; the read back after the run is
 * the launch's only wait.  A thread that finds it in use stages its own. */
static tack_status run_checked_staged(const tack_kernel *k, const ir_template *t, variant *v,
                                      call_info *info, tack_device *dev, int64_t *errors,
                                      const int64_t *extents, tack_error *err) {
    const ir_func *f = t->ir;
    /* The counters and this call's extents (put_extents): the slots of
     * parameters past the call's are never read, nor written on the host. */
    int nparams = info->nargs < TACK_MAX_PARAMS ? info->nargs : TACK_MAX_PARAMS;
    size_t nerr = (size_t)(DEBUG_ERR_EXTENTS + nparams * TACK_MAX_NDIM) * sizeof *errors;
    int idle = 0;
    if (f->debug_extents >= 0 ||
        !atomic_compare_exchange_strong_explicit(&v->errors_busy, &idle, 1, memory_order_acquire,
                                                 memory_order_relaxed))
        return run_debug_staged(k, t, v, info, dev, errors, extents, err);
    tack_status st = TACK_OK;
    size_t whole = DEBUG_ERR_LEN * sizeof *errors; /* room for any call's record */
    if (!v->errors_held && !(v->errors_held = malloc(whole)))
        st = runtime_error(err, TACK_ERR_NOMEM, "out of memory launching kernel '%s'", k->def->name);
    if (!st && !v->errors_mem && !(v->errors_mem = tack_device_alloc(dev, whole, err))) st = err->status;
    if (!st && (!v->errors_known || memcmp(v->errors_held, errors, nerr) != 0)) {
        v->errors_known = 0;
        st = tack_device_write(dev, v->errors_mem, 0, errors, nerr, err);
        if (!st) {
            memcpy(v->errors_held, errors, nerr);
            v->errors_known = 1;
        }
    }
    if (!st) {
        info->slots[f->debug_errors] = (uint64_t)(uintptr_t)v->errors_mem;
        st = run_variant_then(k, t, v, info, dev, 1, err);
        /* A launch refused before it ran left the record as it was; one
         * that ran may have counted failures, which the read brings back. */
        if (!st) st = tack_device_read(dev, v->errors_mem, 0, errors, nerr, err);
        if (!st) memcpy(v->errors_held, errors, nerr);
        else v->errors_known = 0;
    }
    atomic_store_explicit(&v->errors_busy, 0, memory_order_release);
    return st;
}

/* The dtype a reduction's array has: its initial value's, a weak float
 * taking the kernel's default float (f64 when an array argument is f64). */
static tack_dtype reduction_dtype(const ir_func *f, const ir_reduction *r, const call_info *info) {
    if (r->type == IRT_WEAK_INT) return TACK_I64;
    if (r->type != IRT_WEAK_FLOAT) return (tack_dtype)r->type;
    for (int i = 0; i < info->nargs; i++)
        if (info->args[i].kind == TACK_ARG_ARRAY && info->args[i].dtype == TACK_F64 &&
            ir_reduction_of_param(f, i) < 0 && !(f->adjoint_n && i >= f->adjoint_n))
            return TACK_F64;
    return TACK_F32;
}

/* r's initial value as dtype t, in the first bytes of *out. */
static void reduction_init(const ir_reduction *r, tack_dtype t, uint64_t *out) {
    int fl = ir_type_is_float(r->type) || r->type == IRT_WEAK_FLOAT;
    double f = fl ? r->f : r->type == TACK_U64 ? (double)(uint64_t)r->i : (double)r->i;
    *out = 0;
    if (t == TACK_F32) {
        float x = (float)f;
        memcpy(out, &x, sizeof x);
    } else if (t == TACK_F64) {
        memcpy(out, &f, sizeof f);
    } else {
        /* Integers keep their low bytes (little-endian hosts and devices),
         * wrapping as NumPy's casts do. */
        uint64_t v = (uint64_t)r->i;
        memcpy(out, &v, (size_t)tack_dtype_size(t));
    }
}

/* runtime.h: the reductions' arrays, then the random draws' seed. */
tack_status launch_add_hidden(const tack_kernel *k, const ir_template *t, call_info *info,
                              tack_device *dev, int stage, tack_error *err) {
    const ir_func *f = t->ir;
    for (int r = 0; r < f->nreductions; r++) {
        const ir_reduction *red = &f->reductions[r];
        if (info->nargs != red->param || info->nargs >= MAX_ARGS)
            return runtime_error(err, TACK_ERR_INTERNAL, "internal error: kernel '%s': a "
                                 "reduction's parameter is not where its arguments end",
                                 k->def->name);
        tack_dtype dt = reduction_dtype(f, red, info);
        info->reduction_dtype[r] = dt;
        /* A later stage carries on from the earlier stages' values. */
        if (!info->reductions_started) reduction_init(red, dt, &info->reduction_host[r][0]);
        info->reduction_host[r][1] = 0; /* the CPU's chunks combine in turn from 0 */
        int64_t one = 1;
        tack_arg a = tack_arg_array(info->reduction_host[r], dt, 1, &one, 1);
        if (dev && !dev->caps.host_memory) {
            a.device = dev;
            if (stage) {
                if (r >= info->nreductions) {
                    info->reduction_handle[r] = tack_device_alloc(dev, sizeof(uint64_t), err);
                    if (!info->reduction_handle[r]) return err->status;
                    info->nreductions = r + 1;
                }
                if (!info->reductions_started &&
                    tack_device_write(dev, info->reduction_handle[r], 0, info->reduction_host[r],
                                      sizeof(uint64_t), err))
                    return err->status;
                a.data = info->reduction_handle[r];
            }
        }
        info->args[info->nargs++] = a;
    }
    if (f->rng_seed < 0) return TACK_OK;
    if (info->nargs != f->rng_seed || info->nargs >= MAX_ARGS)
        return runtime_error(err, TACK_ERR_INTERNAL, "internal error: kernel '%s': the random "
                             "seed's parameter is not where its arguments end", k->def->name);
    /* The top bit set keeps it a u64 argument (a smaller value would be
     * typed i64 and key another variant); the kernel scrambles it anyway. */
    info->args[info->nargs++] = tack_arg_uint(runtime_next_seed() | 1ull << 63);
    return TACK_OK;
}

void launch_release_hidden(tack_device *dev, call_info *info) {
    for (int r = 0; r < info->nreductions; r++) tack_device_free_mem(dev, info->reduction_handle[r]);
    info->nreductions = 0;
}

/* runtime.h */
tack_status read_results(const ir_template *t, tack_device *dev, call_info *info,
                         tack_results *out, tack_error *err) {
    const ir_func *f = t->ir;
    if (!out) return TACK_OK;
    out->n = 0;
    out->nvalues = 0;
    for (int r = 0; r < info->nreductions; r++)
        if (tack_device_read(dev, info->reduction_handle[r], 0, info->reduction_host[r],
                             sizeof(uint64_t), err))
            return err->status;
    for (int i = 0; i < f->nreturns; i++) {
        int r = f->returns[i];
        tack_dtype dt = info->reduction_dtype[r];
        const void *bits = info->reduction_host[r];
        out->dtype[i] = dt;
        switch (dt) {
        case TACK_F32: { float x; memcpy(&x, bits, sizeof x); out->value[i].f = x; break; }
        case TACK_F64: memcpy(&out->value[i].f, bits, sizeof(double)); break;
        case TACK_I8: { int8_t x; memcpy(&x, bits, 1); out->value[i].i = x; break; }
        case TACK_I16: { int16_t x; memcpy(&x, bits, 2); out->value[i].i = x; break; }
        case TACK_I32: { int32_t x; memcpy(&x, bits, 4); out->value[i].i = x; break; }
        case TACK_U8: { uint8_t x; memcpy(&x, bits, 1); out->value[i].u = x; break; }
        case TACK_U16: { uint16_t x; memcpy(&x, bits, 2); out->value[i].u = x; break; }
        case TACK_U32: { uint32_t x; memcpy(&x, bits, 4); out->value[i].u = x; break; }
        case TACK_U64: memcpy(&out->value[i].u, bits, 8); break;
        default: memcpy(&out->value[i].i, bits, 8); break;
        }
    }
    out->n = f->nreturns;
    /* The values the numbers make (complex, vectors, matrices). */
    out->nvalues = f->nreturn_values;
    for (int j = 0, first = 0; j < f->nreturn_values; j++) {
        const ir_return_value *v = &f->return_values[j];
        out->values[j] = (tack_result_value){v->kind, first, v->count, v->rows, v->cols};
        first += v->count;
    }
    return TACK_OK;
}

/* Debug mode's errors record and extents, or the errors record alone of a
 * plain kernel's per-access checks (passes/bounds.c, whose dimensions are
 * baked in), after every argument. */
static tack_status add_errors_args(const tack_kernel *k, const ir_template *t, call_info *info,
                                   tack_device *dev, int64_t *errors, int64_t *extents,
                                   tack_error *err) {
    if (info->nargs + 2 > MAX_ARGS)
        return runtime_error(err, TACK_ERR_VALUE, "kernel '%s': too many arguments for its bounds "
                             "checks", k->def->name);
    for (int i = 0; i < DEBUG_ERR_EXTENTS; i++) errors[i] = 0;
    errors[DEBUG_ERR_FIRST] = errors[DEBUG_ERR_INDEX] = INT64_MAX;
    int64_t nerr = DEBUG_ERR_LEN, next = (int64_t)(info->nargs + 2) * TACK_MAX_NDIM;
    info->args[info->nargs++] = tack_arg_array(errors, TACK_I64, 1, &nerr, 1);
    /* Off the host they are staged through device memory (run_debug). */
    if (!dev->caps.host_memory) info->args[info->nargs - 1].device = dev;
    if (t->ir->debug_extents >= 0) {
        info->args[info->nargs++] = tack_arg_array(extents, TACK_I64, 1, &next, 0);
        if (!dev->caps.host_memory) info->args[info->nargs - 1].device = dev;
    }
    return TACK_OK;
}

/* After call_classify: the per-access checks read the call's extents from
 * the errors array. */
static void put_extents(const ir_template *t, const call_info *info, int64_t *errors) {
    if (t->ir->debug_extents >= 0) return; /* debug mode: its own array */
    for (int p = 0; p < info->nargs && p < TACK_MAX_PARAMS; p++)
        memcpy(&errors[DEBUG_ERR_EXTENTS + p * TACK_MAX_NDIM], info->dims[p],
               TACK_MAX_NDIM * sizeof *errors);
}

/* Whether the launch's errors record holds a failed check. */
static int bounds_failed(const ir_template *t, const int64_t *errors) {
    return t->ir->debug_errors >= 0 &&
           (errors[DEBUG_ERR_FIRST] != INT64_MAX || errors[DEBUG_ERR_FLAG] != 0);
}

/* runtime.h: classifies a call: its template and variant key. */
tack_status launch_classify(tack_kernel *k, tack_device *dev, const tack_arg *args, int nargs,
                            int debug_mode, template_key *tkey, ir_template **tp, call_info *info,
                            int64_t *errors, int64_t *extents, int stage, tack_error *err) {
    retire_pending();
    if (call_arity(k, nargs, err)) return err->status;
    tack_arg mats[TACK_MAX_PARAMS];
    if (matrix_args(k, &args, nargs, mats, err)) return err->status;
    if (template_key_of(k, args, nargs, debug_mode, tkey, err)) return err->status;
    ir_template *t;
    if (kernel_template(k, tkey, args, &t, err)) return err->status;
    *tp = t;
    if (template_expand(k, args, nargs, info->args, &info->nargs, err)) return err->status;
    if (launch_add_hidden(k, t, info, dev, stage, err)) return err->status;
    int debug = t->ir->debug_errors >= 0;
    if (debug && add_errors_args(k, t, info, dev, errors, extents, err)) return err->status;
    if (call_classify(k, dev, t, info, tkey, err)) return err->status;
    if (debug) put_extents(t, info, errors);
    if (debug)
        for (int p = 0; p < info->nargs; p++)
            for (int d = 0; d < TACK_MAX_NDIM; d++) extents[p * TACK_MAX_NDIM + d] = info->dims[p][d];
    return TACK_OK;
}

/* runtime.h: classifies a call and finds (or compiles) its variant. */
tack_status launch_resolve(tack_kernel *k, tack_device *dev, const tack_arg *args, int nargs,
                           int debug_mode, template_key *tkey, ir_template **tp, call_info *info,
                           variant **vp, int64_t *errors, int64_t *extents, int stage,
                           tack_error *err) {
    if (launch_classify(k, dev, args, nargs, debug_mode, tkey, tp, info, errors, extents, stage,
                        err))
        return err->status;
    ir_template *t = *tp;
    kernel_slot *s = variant_slot(k, dev);
    if (!s) return runtime_error(err, TACK_ERR_NOMEM, "out of memory launching kernel '%s'", k->def->name);
    variant *v = variant_find(k, s, &info->key);
    if (v) atomic_fetch_add_explicit(&tack_counters.variant_hits, 1, memory_order_relaxed);
    else {
        explain_new_variant(k, t, s, info, info->args);
        if (variant_compile(k, t, info, s, &v, err)) return err->status;
    }
    *vp = v;
    return TACK_OK;
}

/* A launch, counted as a reader of k from its first look-up to the end of
 * its run, so what it found cannot be freed under it. */
static tack_status launch_counted(tack_kernel *k, tack_device *dev, const tack_arg *args, int nargs,
                                  call_info *info, tack_results *results, tack_error *err) {
    ir_template *t;
    variant *v;
    /* Debug mode is read once: the signature and the template key must
     * agree on it, or a debug template is remembered for plain calls. */
    int debug = kernel_debug(k);
    /* The fast path: a signature seen before names its template and, with
     * this call's disjointness, its variant.  Checks still run per call. */
    fast_sig sig;
    int fast = nargs == k->def->nparams && fast_signature(args, nargs, debug, &sig) == 0;
    uint64_t epoch = fast_epoch();
    int64_t errors[DEBUG_ERR_LEN], extents[MAX_ARGS * TACK_MAX_NDIM];
    /* Per-access checks' errors record on the host: the fast path adds it
     * (staged through device memory, it takes the slow path). */
    variant *seen[2];
    if (fast && (retire_pending(), t = fast_lookup(k, dev, &sig, seen)) &&
        (t->ir->debug_errors < 0 || (t->ir->debug_extents < 0 && dev->caps.host_memory))) {
        static const template_key plain; /* no templates: nothing to copy */
        memcpy(info->args, args, nargs * sizeof *args);
        info->nargs = nargs;
        if (launch_add_hidden(k, t, info, dev, 1, err)) return err->status;
        if (t->ir->debug_errors >= 0 && add_errors_args(k, t, info, dev, errors, extents, err))
            return err->status;
        const variant *known = seen[0] ? seen[0] : seen[1];
        if (known ? call_classify_warm(k, dev, t, &known->key, info, err)
                  : call_classify(k, dev, t, info, &plain, err))
            return err->status;
        if (t->ir->debug_errors >= 0) put_extents(t, info, errors);
        if ((v = seen[info->key.disjoint != 0])) {
            atomic_fetch_add_explicit(&tack_counters.fast_path_hits, 1, memory_order_relaxed);
            if (run_variant(k, t, v, info, dev, err)) return err->status;
            if (bounds_failed(t, errors)) return report_bounds(k, t, info, errors, err);
            return read_results(t, dev, info, results, err);
        }
    }
    template_key tkey;
    if (launch_resolve(k, dev, args, nargs, debug, &tkey, &t, info, &v, errors, extents, 1, err))
        return err->status;
    if (fast) fast_remember(k, dev, &sig, info->key.disjoint, t, v, epoch);
    if (t->ir->debug_errors >= 0 && !dev->caps.host_memory) {
        if (run_checked_staged(k, t, v, info, dev, errors, extents, err)) return err->status;
    } else if (run_variant(k, t, v, info, dev, err)) {
        return err->status;
    }
    if (bounds_failed(t, errors)) return report_bounds(k, t, info, errors, err);
    return read_results(t, dev, info, results, err);
}

tack_status tack_kernel_call(tack_kernel *k, tack_device *dev, const tack_arg *args, int nargs,
                             tack_results *results, tack_error *err) {
    ERR_OR_SCRATCH(err);
    err->status = TACK_OK;
    if (results) results->n = results->nvalues = 0;
    if (!k || !dev || (nargs && !args) || nargs < 0)
        return runtime_error(err, TACK_ERR_VALUE, "tack_kernel_launch: NULL kernel, device or arguments");
    tack_arg mats[TACK_MAX_PARAMS];
    if (matrix_args(k, &args, nargs, mats, err)) return err->status;
    call_info info;
    info.nreductions = 0;
    info.reductions_started = 0;
    tack_status st = TACK_OK;
    /* A kernel's top-level loops run in order, the reductions' arrays
     * carried from one to the next; the last one's give the results. */
    for (int s = 0; s < k->nstages && st == TACK_OK; s++) {
        tack_kernel *stage = s ? k->stages[s] : k;
        readers_enter(stage);
        st = launch_counted(stage, dev, args, nargs, &info, s == k->nstages - 1 ? results : NULL, err);
        readers_exit(stage);
        info.reductions_started = 1;
    }
    launch_release_hidden(dev, &info);
    return st;
}

tack_status tack_kernel_launch(tack_kernel *k, tack_device *dev, const tack_arg *args, int nargs,
                               tack_error *err) {
    return tack_kernel_call(k, dev, args, nargs, NULL, err);
}
