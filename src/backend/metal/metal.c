/* metal.c - backend_metal: the backend table.  A build checks that the
 * launch range can be evaluated on the host, has the GPU emitter write MSL
 * and has Metal compile it into a compute pipeline; a launch fills the
 * scalar pack from the call and runs it. */
#include "metal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/gpu/gpu.h"

static tack_status metal_build(backend *b, const ir_func *f, const char *symbol_base,
                               backend_code **out, uint64_t *compiler_ns, tack_error *err) {
    *out = NULL;
    char entry[GPU_ENTRY_LEN], *source;
    tack_status st = gpu_emit_variant(f, &gpu_dialect_metal, symbol_base, entry, &source, err);
    if (st) return st;
    uint64_t start = backend_now_ns();
    st = metal_code_from_source(b, f, source, strlen(source), entry, strlen(entry), out, err);
    *compiler_ns += backend_now_ns() - start;
    free(source);
    return st;
}

/* The MSL that build hands Metal (its compiled form is not ours to see). */
static tack_status metal_inspect(backend *b, const ir_func *f, const char *symbol_base,
                                 tack_inspect_kind kind, char **text, tack_error *err) {
    (void)b;
    return gpu_inspect_source(f, &gpu_dialect_metal, symbol_base, kind, "Metal", " (MSL)", "",
                              text, err);
}

GPU_DRIVER_GLUE(metal, metal_mem_read)

/* Every launch waits for its command buffer, and copies are the CPU's own
 * (shared storage): nothing is ever in flight. */
static tack_status metal_synchronize(backend *b, tack_error *err) {
    return gpu_nothing_in_flight(b, err);
}

const backend_ops backend_metal = {
    .name = "metal",
    GPU_DRIVER_OPS(metal),
};
