/* offline.c - Level Zero's targets for backend_generate, made without
 * opening any device: "level_zero:spirv", the SPIR-V ocloc makes of the
 * kernel's OpenCL C (what zeModuleCreate takes as ZE_MODULE_FORMAT_IL_SPIRV
 * on any Intel GPU), and "level_zero:<target>", the native binary for one
 * Intel GPU ("dg2", "tgllp", "pvc", or a PCI device id "0x56a0"; what it
 * takes as ZE_MODULE_FORMAT_NATIVE).  This is how Intel GPU code is made
 * and checked on a machine without one. */
#include <stdlib.h>
#include <string.h>

#include "backend/gpu/gpu.h"
#include "backend/offline.h"
#include "level_zero.h"

#define PREFIX "level_zero:"
#define PREFIX_LEN (sizeof PREFIX - 1)

/* The device SPIR-V is compiled against: any target ocloc knows makes the
 * same module; fp64 is enabled for it (ocloc.c). */
#define SPIRV_DEVICE "dg2"

int level_zero_generate_target(const char *target) { return !strncmp(target, PREFIX, PREFIX_LEN); }
int level_zero_generate_binary(const char *target) { return level_zero_generate_target(target); }

tack_status level_zero_generate_check(const char *target, tack_error *err) {
    const char *t = target + PREFIX_LEN;
    if (!strcmp(t, "spirv") || l0_target_valid(t)) return TACK_OK;
    return backend_error(err, TACK_ERR_VALUE,
                         "'%s' is not an Intel GPU target (expected \"spirv\", a name ocloc knows "
                         "such as \"dg2\", \"tgllp\" or \"pvc\", or a PCI device id such as "
                         "\"0x56a0\")",
                         t);
}

tack_status level_zero_generate(const char *target, const ir_func *f, const char *entry,
                                char **out, size_t *len, tack_error *err) {
    *out = NULL;
    *len = 0;
    const char *t = target + PREFIX_LEN;
    int spirv_only = !strcmp(t, "spirv");
    char *source = NULL;
    tack_status st = gpu_emit(f, gpu_dialect_level_zero(), entry, &source, err);
    if (st) return st;
    void *native = NULL, *spirv = NULL;
    size_t native_len = 0, spirv_len = 0;
    st = l0_ocloc_compile(f, source, spirv_only ? SPIRV_DEVICE : t, !spirv_only, &native,
                          &native_len, &spirv, &spirv_len, err);
    free(source);
    if (st) return st;
    if (spirv_only) {
        *out = spirv;
        *len = spirv_len;
        free(native);
    } else {
        *out = native;
        *len = native_len;
        free(spirv);
    }
    return TACK_OK;
}
