/* offline.c - HIP's targets for backend_generate: the HIP C++ the emitter
 * writes ("hip-source"), or the code object hipRTC makes of it for a gfx
 * ISA ("hip:gfx90a"), without opening any device.  This is how AMDGPU
 * code is made and checked on a machine without an AMD GPU. */
#include <stdlib.h>
#include <string.h>

#include "backend/gpu/gpu.h"
#include "backend/offline.h"
#include "hip.h"

int hip_generate_target(const char *target) {
    return !strcmp(target, "hip-source") || !strncmp(target, "hip:", 4);
}

tack_status hip_generate_check(const char *target, tack_error *err) {
    if (!strcmp(target, "hip-source") || hip_arch_valid(target + 4)) return TACK_OK;
    return backend_error(err, TACK_ERR_VALUE,
                         "'%s' is not an AMD GPU architecture (expected e.g. \"gfx90a\", "
                         "\"gfx1030\" or \"gfx90a:xnack-\")",
                         target + 4);
}

tack_status hip_generate(const char *target, const ir_func *f, const char *entry, char **out,
                         size_t *len, tack_error *err) {
    *out = NULL;
    *len = 0;
    char *source = NULL;
    tack_status st = gpu_emit(f, gpu_dialect_hip(), entry, &source, err);
    if (st || !strcmp(target, "hip-source")) {
        *out = source;
        *len = source ? strlen(source) : 0;
        return st;
    }
    void *object = NULL;
    st = hip_compile(f->name, source, target + 4, &object, len, err);
    free(source);
    *out = object;
    return st;
}
