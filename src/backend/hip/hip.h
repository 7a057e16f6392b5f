/*
 * hip.h - the HIP backend (backend_hip) for AMD GPUs, one stage per file,
 * the CUDA backend's shape with AMD's tools:
 *
 *   loader.c   the runtime's and hipRTC's functions, found at run time
 *   hiprtc.c   HIP C++ -> a code object (an AMDGPU ELF) for one gfx ISA;
 *              needs no GPU
 *   device.c   opening a device: capabilities, its gcnArchName, memory
 *   program.c  a code object -> a module and its function; a variant's code
 *              and its disk-cache artifact (the code object, entry, ISA)
 *   launch.c   a filled pack and the call's device pointers -> one grid
 *              queued on the device's stream
 *   hip.c      the backend table: typed IR -> HIP C++ (gpu_emit, the HIP
 *              dialect) -> code object -> module
 *   offline.c  hip_generate: source or code objects for an ISA without a
 *              device (tack_kernel_generate's "hip:gfx90a", "hip-source")
 *
 * Thread-safety: as CUDA's.  A launch keeps its arguments (the pack, the
 * pointers) on its own stack and hipModuleLaunchKernel copies them before
 * it returns, so a variant holds no launch state and needs no dispatch
 * lock (caps.locked_dispatch 0); the reference's HIP lock guards pack
 * buffers a variant owns, which this design does not have.  Each entry
 * makes the device current on its thread (hipSetDevice).
 *
 * Streams: each device has its own non-blocking stream, on which every
 * launch and copy is queued.  A launch returns once queued (caps.
 * queued_launch); a copy waits for the stream, and a fault in a launch
 * before it surfaces there by the kernel's name (gpu/driver.h's gpu_queue).
 *
 * Textures: sampled in software (lower/textures.c) on every AMD device;
 * the dialect has no hardware fetch, so no key needs the distinction yet.
 */
#ifndef TACK_HIP_H
#define TACK_HIP_H

#include "backend/backend.h"
#include "backend/gpu/driver.h"
#include "backend/gpu/gpu.h"
#include "backend/gpu/runtime.h"
#include "hip_api.h"

struct backend {
    gpu_runtime rt;       /* first: the stream, queues and their flow (gpu/runtime.h) */
    const hip_runtime_api *hip;
    int index;
    hipDevice_t device;
    int driver_version;
    int cu_count;
    int warp_size;
    int max_block[3];
    int64_t max_grid_dim[3];
    backend_caps caps;
    char arch[256];       /* gcnArchName, "gfx90a:sramecc+:xnack-": hipRTC's target */
    char name[256];
    char description[640];
    char *target;         /* cache_target's text, malloc'd */
};

struct backend_code {
    gpu_code g;       /* first: the part every driver keeps (gpu/driver.h) */
    void *module;     /* hipModule_t, hipFunction_t: gpu/runtime.c's */
    void *fn;
    void *object;     /* the code object the module was loaded from */
    size_t object_len;
    char *arch;       /* the ISA it is for */
};

/* hiprtc.c */
/* HIP C++ -> a code object (malloc'd) for `arch` ("gfx90a",
 * "gfx90a:xnack-"), with the HIP dialect's build options.  hipRTC's
 * refusal is TACK_ERR_COMPILE with its log, naming `kernel_name`; no
 * hipRTC is TACK_ERR_DEVICE saying what to install; an ISA that is
 * malformed or unknown to this ROCm is TACK_ERR_VALUE. */
tack_status hip_compile(const char *kernel_name, const char *source, const char *arch,
                        void **object, size_t *len, tack_error *err);
/* "5.2", or "none" when hipRTC cannot be loaded. */
const char *hip_rtc_version(void);
/* The arch's form: "gfx" and hex digits, then ":feature+" / ":feature-"
 * settings; 1 when well formed.  Whether ROCm knows it is hip_compile's. */
int hip_arch_valid(const char *arch);

/* device.c */
/* open, close, caps, the artifact, load, release and launch_pack: the
 * entries every driver has (gpu/driver.h); memory, streams and waiting
 * are gpu/runtime.c's, through hip_rt_ops. */
GPU_DRIVER_DECLARE_CORE(hip);
extern const gpu_rt_ops hip_rt_ops;
/* Fills err with "<what>: <call> failed: hipErrorX (the runtime's words)";
 * out-of-memory is TACK_ERR_NOMEM, the rest TACK_ERR_DEVICE. */
tack_status hip_fail(const hip_runtime_api *hip, tack_error *err, const char *what,
                     const char *call, hipError_t code);

/* program.c */
/* The disk-cache record: entry name, ISA, code object (borrowed views). */
typedef struct hip_record {
    gpu_record head; /* the entry and the ISA (gpu/driver.h) */
    const void *object;
    size_t object_len;
} hip_record;
void hip_artifact_write(const char *entry, const char *arch, const void *object, size_t len,
                        ser_writer *w);
/* Parses and checks a record (an AMDGPU ELF inside); damage is
 * TACK_ERR_INTERNAL naming `kernel_name`. */
tack_status hip_artifact_parse(const char *kernel_name, const void *bytes, size_t n,
                               hip_record *out, tack_error *err);
/* 1 when bytes look like an AMDGPU code object (ELF64, EM_AMDGPU). */
int hip_is_code_object(const void *bytes, size_t n);
tack_status hip_code_from_object(backend *b, const ir_func *f, const void *object, size_t len,
                                 const char *entry, size_t entry_len, backend_code **out,
                                 tack_error *err);

/* launch.c */
/* Block and grid for a range (gpu.h's mapping): 256 threads, the
 * innermost extent on consecutive lanes. */
void hip_grid(const backend *b, int ninner, int64_t count, int64_t inner0, int64_t inner1,
              unsigned grid[3], unsigned block[3]);

#endif
