/* entry.c - what every GPU driver does first with a variant: check that
 * its launch range can be evaluated on the host, name its kernel, and
 * emit its source in the driver's dialect. */
#include <stdio.h>

#include "backend/gpu/gpu.h"

tack_status gpu_emit_variant(const ir_func *f, const gpu_dialect *d, const char *symbol_base,
                             char entry[GPU_ENTRY_LEN], char **source, tack_error *err) {
    *source = NULL;
    tack_status st = gpu_range_check(f, err);
    if (st) return st;
    /* symbol_base is hex digits: "tack_" + it is an identifier in every
     * dialect. */
    snprintf(entry, GPU_ENTRY_LEN, "tack_%.64s", symbol_base);
    return gpu_emit(f, d, entry, source, err);
}
