/* hip.c - backend_hip: the backend table.  A build checks that the launch
 * range can be evaluated on the host, has the GPU emitter write HIP C++,
 * compiles it with hipRTC for the device's gcnArchName and loads the code
 * object; a launch fills the scalar pack from the call and runs it. */
#include "hip.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/gpu/gpu.h"

static tack_status hip_build(backend *b, const ir_func *f, const char *symbol_base,
                             backend_code **out, uint64_t *compiler_ns, tack_error *err) {
    *out = NULL;
    char entry[GPU_ENTRY_LEN], *source;
    void *object = NULL;
    size_t len = 0;
    tack_status st = gpu_emit_variant(f, gpu_dialect_hip(), symbol_base, entry, &source, err);
    uint64_t start = backend_now_ns();
    if (!st) st = hip_compile(f->name, source, b->arch, &object, &len, err);
    if (!st) st = hip_code_from_object(b, f, object, len, entry, strlen(entry), out, err);
    *compiler_ns += backend_now_ns() - start;
    free(object);
    free(source);
    return st;
}

/* The HIP C++ that build hands hipRTC (code objects are binary: no text). */
static tack_status hip_inspect(backend *b, const ir_func *f, const char *symbol_base,
                               tack_inspect_kind kind, char **text, tack_error *err) {
    (void)b;
    return gpu_inspect_source(f, gpu_dialect_hip(), symbol_base, kind, "HIP", "",
                              "; tack.hip.compile gives the code object", text, err);
}

GPU_DRIVER_GLUE(hip, gpu_rt_mem_read)

const backend_ops backend_hip = {
    .name = "hip",
    GPU_RT_OPS,
    GPU_DRIVER_OPS_CORE(hip),
};
