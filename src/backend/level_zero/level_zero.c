/* level_zero.c - backend_level_zero: the backend table.  A build checks
 * that the device can run the kernel (f64, 64-bit atomics) and that the
 * launch range can be evaluated on the host, has the GPU emitter write
 * OpenCL C, compiles it with ocloc for the device (its PCI id) to a native
 * binary and SPIR-V, and makes the module; a launch fills the scalar pack
 * from the call and runs it. */
#include "level_zero.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/gpu/gpu.h"

static tack_status check(backend *b, const ir_func *f, tack_error *err) {
    char who[sizeof b->name + 16];
    snprintf(who, sizeof who, "device '%s'", b->name);
    return gpu_check_support(f, b->caps.fp64, b->caps.atomics64, who, "64-bit atomics", err);
}

static tack_status l0_build(backend *b, const ir_func *f, const char *symbol_base,
                            backend_code **out, uint64_t *compiler_ns, tack_error *err) {
    *out = NULL;
    tack_status st = check(b, f, err);
    if (st) return st;
    char entry[GPU_ENTRY_LEN], *source;
    st = gpu_emit_variant(f, gpu_dialect_level_zero(), symbol_base, entry, &source, err);
    void *native = NULL, *spirv = NULL;
    size_t native_len = 0, spirv_len = 0;
    uint64_t start = backend_now_ns();
    if (!st)
        st = l0_ocloc_compile(f, source, b->ocloc_device, 1, &native, &native_len, &spirv,
                              &spirv_len, err);
    if (st && st != TACK_ERR_COMPILE && st != TACK_ERR_TYPE && source) {
        /* ocloc older than the device does not know its id: SPIR-V, which
         * the driver finalizes for it. */
        tack_error first = *err;
        st = l0_ocloc_compile(f, source, "dg2", 0, &native, &native_len, &spirv, &spirv_len, err);
        if (st) *err = first;
    }
    if (!st)
        st = l0_code_from(b, f, entry, strlen(entry), native, native_len, spirv, spirv_len, out, err);
    *compiler_ns += backend_now_ns() - start;
    free(native);
    free(spirv);
    free(source);
    return st;
}

/* The OpenCL C that build hands ocloc (binaries: tack.level_zero.compile). */
static tack_status l0_inspect(backend *b, const ir_func *f, const char *symbol_base,
                              tack_inspect_kind kind, char **text, tack_error *err) {
    *text = NULL;
    tack_status st = kind == TACK_INSPECT_LLVM ? check(b, f, err) : TACK_OK;
    if (st) return st;
    return gpu_inspect_source(f, gpu_dialect_level_zero(), symbol_base, kind, "Level Zero", "",
                              "; tack.level_zero.spirv and .compile give the binaries", text, err);
}

GPU_DRIVER_GLUE(l0, l0_mem_read)

/* The device's list; other libraries' work on the device is their own. */
static tack_status l0_synchronize(backend *b, tack_error *err) {
    return l0_wait(b, "synchronizing the device", err);
}

const backend_ops backend_level_zero = {
    .name = "level_zero",
    .mem_wrap = gpu_mem_wrap_address, /* a handle is the USM address */
    .queue_synchronize = l0_queue_synchronize,
    GPU_DRIVER_OPS(l0),
};
