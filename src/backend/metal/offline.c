/* offline.c - Metal's target for backend_generate: "metal-source", the
 * MSL a Metal device would compile (gpu_emit with the MSL dialect, which
 * refuses f64, 64-bit and 8/16-bit atomics and debug mode, naming them).
 * No Metal compiler runs here: see metal.h for the check the tests make. */
#include <stdlib.h>
#include <string.h>

#include "backend/gpu/gpu.h"
#include "backend/offline.h"
#include "metal.h"

int metal_generate_target(const char *target) { return !strcmp(target, "metal-source"); }

tack_status metal_generate(const ir_func *f, const char *entry, char **out, size_t *len,
                           tack_error *err) {
    *out = NULL;
    *len = 0;
    tack_status st = gpu_emit(f, &gpu_dialect_metal, entry, out, err);
    if (!st) *len = strlen(*out);
    return st;
}
