/* cuda.c - backend_cuda: the backend table.  A build checks that the
 * launch range can be evaluated on the host, has the GPU emitter write
 * CUDA C, compiles it to PTX for the device's architecture with NVRTC and
 * loads that; a launch fills the scalar pack from the call and runs it. */
#include "cuda.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/gpu/gpu.h"

static tack_status cuda_build(backend *b, const ir_func *f, const char *symbol_base,
                              backend_code **out, uint64_t *compiler_ns, tack_error *err) {
    *out = NULL;
    char entry[GPU_ENTRY_LEN], *source, *ptx = NULL;
    tack_status st = gpu_emit_variant(f, &gpu_dialect_cuda, symbol_base, entry, &source, err);
    uint64_t start = backend_now_ns();
    if (!st) st = cuda_compile_ptx(f->name, source, b->arch, &ptx, err);
    if (!st) st = cuda_code_from_ptx(b, f, ptx, strlen(ptx), entry, strlen(entry), out, err);
    *compiler_ns += backend_now_ns() - start; /* NVRTC's and the driver's JIT */
    free(ptx);
    free(source);
    return st;
}

/* The CUDA C that build hands NVRTC, or the PTX NVRTC makes of it for
 * the device's architecture. */
static tack_status cuda_inspect(backend *b, const ir_func *f, const char *symbol_base,
                                tack_inspect_kind kind, char **text, tack_error *err) {
    *text = NULL;
    if (kind != TACK_INSPECT_LLVM && kind != TACK_INSPECT_ASM)
        return backend_error(err, TACK_ERR_VALUE, "kernel '%s': CUDA has no text of kind %d",
                             f->name, (int)kind);
    char entry[GPU_ENTRY_LEN], *source;
    tack_status st = gpu_emit_variant(f, &gpu_dialect_cuda, symbol_base, entry, &source, err);
    if (st || kind == TACK_INSPECT_LLVM) {
        *text = source;
        return st;
    }
    st = cuda_compile_ptx(f->name, source, b->arch, text, err);
    free(source);
    return st;
}

GPU_DRIVER_GLUE(cuda, gpu_rt_mem_read)

const backend_ops backend_cuda = {
    .name = "cuda",
    GPU_RT_OPS,
    GPU_DRIVER_OPS_CORE(cuda),
};
