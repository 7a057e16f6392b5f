/*
 * offline.h - each GPU backend's offline stage, which backend_generate
 * (offline.c) dispatches to by the target's prefix: code for a target
 * named by a string, made without opening a device.  For each backend,
 * X_generate_target says whether a target string is its own,
 * X_generate_check refuses a malformed one before any work, and
 * X_generate makes the code (*out malloc'd, NUL-terminated after its *len
 * bytes).
 */
#ifndef TACK_BACKEND_OFFLINE_H
#define TACK_BACKEND_OFFLINE_H

#include <stddef.h>

#include "ir/ir.h"
#include "tack.h"

/* cuda/offline.c: "cuda:sm_XX" (PTX), "cuda-source", "opencl-source". */
int cuda_generate_target(const char *target);
tack_status cuda_generate_check(const char *target, tack_error *err);
tack_status cuda_generate(const char *target, const ir_func *f, const char *entry, char **text,
                          tack_error *err);

/* hip/offline.c: "hip-source" (HIP C++), "hip:<gfx ISA>" (a code object). */
int hip_generate_target(const char *target);
tack_status hip_generate_check(const char *target, tack_error *err);
tack_status hip_generate(const char *target, const ir_func *f, const char *entry, char **out,
                         size_t *len, tack_error *err);

/* metal/offline.c: "metal-source" (MSL). */
int metal_generate_target(const char *target);
tack_status metal_generate(const ir_func *f, const char *entry, char **out, size_t *len,
                           tack_error *err);

/* level_zero/offline.c: "level_zero:spirv" (SPIR-V), "level_zero:<Intel
 * GPU>" (a native binary from ocloc, e.g. "level_zero:dg2"). */
int level_zero_generate_target(const char *target);
int level_zero_generate_binary(const char *target);
tack_status level_zero_generate_check(const char *target, tack_error *err);
tack_status level_zero_generate(const char *target, const ir_func *f, const char *entry,
                                char **out, size_t *len, tack_error *err);

#endif
