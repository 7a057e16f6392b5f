/* precompile.c - tack_precompile: the variants several calls would select,
 * compiled ahead of their launches and together, as a user of OpenCL puts
 * many kernels in one program: a driver that pays a fixed cost per
 * program build (PoCL parses its whole OpenCL C header each time) then
 * pays it once for the batch.
 *
 * Every call is classified first, as a launch classifies it, so a call
 * with arguments a launch refuses builds nothing; then each variant is
 * found, loaded from the disk cache or built (variant_compile_many), under
 * the same key and symbols a launch gives it: a later launch, or another
 * process, finds it.  A kernel that fails to compile keeps no other from
 * compiling, and the launch range's refusals (which the compiled code
 * evaluates) are checked last, as the launch would.  Nothing runs on the
 * device. */
#include <stdlib.h>
#include <string.h>

#include "runtime.h"

/* One call's classification: what its compile job points at. */
typedef struct classified {
    template_key tkey;
    ir_template *t;
    call_info info;
    int64_t errors[DEBUG_ERR_LEN];
    int64_t extents[MAX_ARGS * TACK_MAX_NDIM];
} classified;

/* A call's failure, kept while the rest of the batch goes on: the first
 * (in call order) is what tack_precompile reports. */
static void keep_first(int i, const tack_error *e, int *failed, tack_error *err) {
    if (*failed >= 0 && *failed < i) return;
    *failed = i;
    *err = *e;
}

static tack_status precompile_counted(tack_device *dev, const tack_precompile_call *calls, int n,
                                      classified *cs, compile_job *jobs, int *failed,
                                      tack_error *err) {
    /* Which calls classified: a kernel whose source does not compile is
     * left out of the batch (its error comes after the others compile);
     * a call a launch refuses stops everything before any compile. */
    int m = 0, *at = malloc((size_t)n * sizeof *at);
    if (!at) return runtime_error(err, TACK_ERR_NOMEM, "out of memory precompiling %d calls", n);
    tack_error first = {0};
    int first_at = -1;
    for (int i = 0; i < n; i++) {
        tack_kernel *k = calls[i].kernel;
        tack_error e = {0};
        /* Stage 0: the reductions' arrays are host placeholders, nothing is
         * allocated on the device. */
        cs[i].info.nreductions = cs[i].info.reductions_started = 0;
        if (launch_classify(k, dev, calls[i].args, calls[i].nargs, kernel_debug(k), &cs[i].tkey,
                            &cs[i].t, &cs[i].info, cs[i].errors, cs[i].extents, 0, &e)) {
            if (e.status == TACK_ERR_COMPILE) {
                keep_first(i, &e, &first_at, &first);
                continue;
            }
            free(at);
            *failed = i;
            *err = e;
            return err->status;
        }
        kernel_slot *s = variant_slot(k, dev);
        if (!s) {
            free(at);
            *failed = i;
            return runtime_error(err, TACK_ERR_NOMEM, "out of memory compiling kernel '%s'",
                                 k->def->name);
        }
        jobs[m] = (compile_job){.k = k, .t = cs[i].t, .info = &cs[i].info, .s = s};
        at[m++] = i;
        if (!variant_find(k, s, &cs[i].info.key))
            explain_new_variant(k, cs[i].t, s, &cs[i].info, cs[i].info.args);
    }
    /* Each job's failure is its own: the others are built and kept. */
    variant_compile_many(jobs, m);
    for (int j = 0; j < m; j++) {
        int i = at[j];
        if (jobs[j].err.status || !jobs[j].v) {
            if (!jobs[j].err.status) runtime_error(&jobs[j].err, TACK_ERR_INTERNAL,
                                                   "internal error: kernel '%s' compiled to nothing",
                                                   calls[i].kernel->def->name);
            keep_first(i, &jobs[j].err, &first_at, &first);
            continue;
        }
        /* What the launch refuses once the variant exists (its range is
         * the compiled code's to evaluate): refused here too. */
        int64_t range[BACKEND_RANGE_LEN], count;
        tack_error e = {0};
        if (launch_precheck(calls[i].kernel, cs[i].t, jobs[j].v, &cs[i].info, dev, range, &count,
                            &e))
            keep_first(i, &e, &first_at, &first);
    }
    free(at);
    if (first_at < 0) return TACK_OK;
    *failed = first_at;
    *err = first;
    return err->status;
}

tack_status tack_precompile(tack_device *dev, const tack_precompile_call *calls, int n,
                            int *failed, tack_error *err) {
    ERR_OR_SCRATCH(err);
    err->status = TACK_OK;
    int scratch_failed;
    if (!failed) failed = &scratch_failed;
    *failed = -1;
    if (!dev || n < 0 || (n && !calls))
        return runtime_error(err, TACK_ERR_VALUE, "tack_precompile: NULL device or calls");
    for (int i = 0; i < n; i++)
        if (!calls[i].kernel || calls[i].nargs < 0 || (calls[i].nargs && !calls[i].args)) {
            *failed = i;
            return runtime_error(err, TACK_ERR_VALUE,
                                 "tack_precompile: call %d has a NULL kernel or arguments", i);
        }
    if (!n) return TACK_OK;
    classified *cs = malloc((size_t)n * sizeof *cs);
    compile_job *jobs = malloc((size_t)n * sizeof *jobs);
    if (!cs || !jobs) {
        free(cs);
        free(jobs);
        return runtime_error(err, TACK_ERR_NOMEM, "out of memory precompiling %d calls", n);
    }
    /* Every kernel counted as a reader until the end: the templates the
     * jobs point at stay. */
    for (int i = 0; i < n; i++) readers_enter(calls[i].kernel);
    tack_status st = precompile_counted(dev, calls, n, cs, jobs, failed, err);
    for (int i = 0; i < n; i++) readers_exit(calls[i].kernel);
    free(cs);
    free(jobs);
    /* Ahead of time means the optimized code: the tiered JIT's background
     * builds are finished here, and the disk entries (written once a
     * variant is optimized) stored before returning, so that another
     * process (`python -m tack cache bundle`, an MPI job's ranks) finds
     * them. */
    tack_jit_wait();
    writer_flush();
    return st;
}
