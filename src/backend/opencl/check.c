/* check.c - whether a device can run a kernel at all: f64 anywhere needs
 * fp64, and 64-bit atomics need cl_khr_int64_base_atomics (the walk is
 * gpu/support.c's, shared with Level Zero).  A refusal is TACK_ERR_TYPE
 * naming the parameter, or the line of the first use. */
#include "opencl.h"

#include <stdio.h>

#include "backend/gpu/gpu.h"

tack_status opencl_check_support(backend *b, const ir_func *f, tack_error *err) {
    char who[sizeof b->name + 16];
    snprintf(who, sizeof who, "device '%s'", b->name);
    return gpu_check_support(f, b->caps.fp64, b->caps.atomics64, who, "cl_khr_int64_base_atomics",
                             err);
}
