/* offline.c - backend_generate: a variant's code for a target named by a
 * string, without opening any device, from each GPU backend's own
 * offline stage (cuda/offline.c, hip/offline.c, level_zero/offline.c,
 * metal/offline.c).  Text targets give source or PTX; binary ones (AMDGPU
 * code objects, SPIR-V, Intel native binaries) give bytes. */
#include <string.h>

#include "backend.h"
#include "backend/gpu/gpu.h"
#include "offline.h"

static const char TARGETS[] =
    "\"cuda:sm_XX\" (PTX, e.g. \"cuda:sm_90\"), \"cuda-source\", \"opencl-source\", "
    "\"hip:gfxNNN\" (an AMDGPU code object, e.g. \"hip:gfx90a\"), \"hip-source\", "
    "\"level_zero:spirv\" (SPIR-V), \"level_zero:<Intel GPU>\" (a native binary, e.g. "
    "\"level_zero:dg2\") or \"metal-source\" (MSL)";

int backend_generate_binary(const char *target) {
    return target && (!strncmp(target, "hip:", 4) || level_zero_generate_binary(target));
}

tack_status backend_generate_check(const char *target, tack_error *err) {
    if (target && cuda_generate_target(target)) return cuda_generate_check(target, err);
    if (target && hip_generate_target(target)) return hip_generate_check(target, err);
    if (target && metal_generate_target(target)) return TACK_OK;
    if (target && level_zero_generate_target(target)) return level_zero_generate_check(target, err);
    return backend_error(err, TACK_ERR_VALUE, "unknown code-generation target '%s': expected %s",
                         target ? target : "(null)", TARGETS);
}

tack_status backend_generate(const char *target, const ir_func *f, const char *entry, char **out,
                             size_t *len, tack_error *err) {
    *out = NULL;
    *len = 0;
    tack_status st = backend_generate_check(target, err);
    if (!st) st = gpu_range_check(f, err);
    if (st) return st;
    if (hip_generate_target(target)) return hip_generate(target, f, entry, out, len, err);
    if (metal_generate_target(target)) return metal_generate(f, entry, out, len, err);
    if (level_zero_generate_target(target))
        return level_zero_generate(target, f, entry, out, len, err);
    st = cuda_generate(target, f, entry, out, err);
    if (!st) *len = strlen(*out);
    return st;
}
