/* offline.c - backend_generate: a variant's code as text for a target
 * named by a string, without opening any device: the GPU emitter's CUDA C
 * or OpenCL C, or PTX from NVRTC for a CUDA architecture.  This is how
 * PTX is made and checked on a machine without a GPU. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/gpu/gpu.h"
#include "cuda.h"

static tack_status bad_target(const char *target, tack_error *err) {
    err->status = TACK_ERR_VALUE;
    err->filename[0] = 0;
    err->lineno = err->col = 0;
    snprintf(err->message, sizeof err->message,
             "unknown code-generation target '%s': expected \"cuda:sm_XX\" (PTX, e.g. "
             "\"cuda:sm_90\"), \"cuda-source\" or \"opencl-source\"",
             target ? target : "(null)");
    return TACK_ERR_VALUE;
}

tack_status backend_generate_check(const char *target, tack_error *err) {
    if (target && (!strcmp(target, "cuda-source") || !strcmp(target, "opencl-source")))
        return TACK_OK;
    if (target && !strncmp(target, "cuda:", 5)) {
        if (cuda_arch_valid(target + 5)) return TACK_OK;
        err->status = TACK_ERR_VALUE;
        err->filename[0] = 0;
        err->lineno = err->col = 0;
        snprintf(err->message, sizeof err->message,
                 "'%s' is not a CUDA architecture (expected e.g. \"sm_80\", \"sm_90\" or "
                 "\"sm_90a\")",
                 target + 5);
        return TACK_ERR_VALUE;
    }
    return bad_target(target, err);
}

tack_status backend_generate(const char *target, const ir_func *f, const char *entry, char **text,
                             tack_error *err) {
    *text = NULL;
    tack_status st = backend_generate_check(target, err);
    if (!st) st = gpu_range_check(f, err);
    if (st) return st;
    if (!strcmp(target, "opencl-source")) return gpu_emit(f, &gpu_dialect_opencl, entry, text, err);
    char *source = NULL;
    st = gpu_emit(f, &gpu_dialect_cuda, entry, &source, err);
    if (st || !strcmp(target, "cuda-source")) {
        *text = source;
        return st;
    }
    st = cuda_compile_ptx(f->name, source, target + 5, text, err);
    free(source);
    return st;
}
