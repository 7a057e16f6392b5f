/* precompile.c - tack_precompile: the variants several calls would select,
 * compiled ahead of their launches and together, as a user of OpenCL puts
 * many kernels in one program: a driver that pays a fixed cost per
 * program build (PoCL parses its whole OpenCL C header each time) then
 * pays it once for the batch.
 *
 * Every call is classified first, as a launch classifies it, so a refused
 * call builds nothing; then each variant is found, loaded from the disk
 * cache or built (variant_compile_many), under the same key and symbols a
 * launch gives it: a later launch, or another process, finds it.  Nothing
 * runs on the device. */
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

static tack_status precompile_counted(tack_device *dev, const tack_precompile_call *calls, int n,
                                      classified *cs, compile_job *jobs, int *failed,
                                      tack_error *err) {
    for (int i = 0; i < n; i++) {
        tack_kernel *k = calls[i].kernel;
        *failed = i;
        /* Stage 0: the reductions' arrays are host placeholders, nothing is
         * allocated on the device. */
        cs[i].info.nreductions = cs[i].info.reductions_started = 0;
        if (launch_classify(k, dev, calls[i].args, calls[i].nargs, kernel_debug(k), &cs[i].tkey,
                            &cs[i].t, &cs[i].info, cs[i].errors, cs[i].extents, 0, err))
            return err->status;
        kernel_slot *s = variant_slot(k, dev);
        if (!s)
            return runtime_error(err, TACK_ERR_NOMEM, "out of memory compiling kernel '%s'",
                                 k->def->name);
        jobs[i] = (compile_job){.k = k, .t = cs[i].t, .info = &cs[i].info, .s = s};
        if (!variant_find(k, s, &cs[i].info.key))
            explain_new_variant(k, cs[i].t, s, &cs[i].info, cs[i].info.args);
    }
    *failed = -1;
    if (variant_compile_many(jobs, n) == TACK_OK) return TACK_OK;
    for (int i = 0; i < n; i++)
        if (jobs[i].err.status) {
            *failed = i;
            *err = jobs[i].err;
            return err->status;
        }
    return TACK_OK;
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
    return st;
}
