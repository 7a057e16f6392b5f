/* offline.c - CUDA's (and OpenCL's source) targets for backend_generate
 * (backend/offline.c): a variant's code as text without opening any
 * device: the GPU emitter's CUDA C or OpenCL C, or PTX from NVRTC for a
 * CUDA architecture.  This is how PTX is made and checked on a machine
 * without a GPU. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/gpu/gpu.h"
#include "backend/offline.h"
#include "cuda.h"

int cuda_generate_target(const char *target) {
    return !strcmp(target, "cuda-source") || !strcmp(target, "opencl-source") ||
           !strncmp(target, "cuda:", 5);
}

tack_status cuda_generate_check(const char *target, tack_error *err) {
    if (!strcmp(target, "cuda-source") || !strcmp(target, "opencl-source") ||
        cuda_arch_valid(target + 5))
        return TACK_OK;
    return backend_error(err, TACK_ERR_VALUE,
                         "'%s' is not a CUDA architecture (expected e.g. \"sm_80\", \"sm_90\" "
                         "or \"sm_90a\")",
                         target + 5);
}

tack_status cuda_generate(const char *target, const ir_func *f, const char *entry, char **text,
                          tack_error *err) {
    *text = NULL;
    if (!strcmp(target, "opencl-source")) return gpu_emit(f, &gpu_dialect_opencl, entry, text, err);
    char *source = NULL;
    tack_status st = gpu_emit(f, &gpu_dialect_cuda, entry, &source, err);
    if (st || !strcmp(target, "cuda-source")) {
        *text = source;
        return st;
    }
    st = cuda_compile_ptx(f->name, source, target + 5, text, err);
    free(source);
    return st;
}
