/*
 * metal.h - the Metal backend (backend_metal) for Apple GPUs, one stage
 * per file, in plain C on every platform:
 *
 *   objc_api.h, loader.c  libobjc, Foundation and Metal.framework opened
 *              at run time, and objc_msgSend as a table of typed senders
 *              (a test stands in its own); off macOS they are absent and
 *              tack.device("metal") says so
 *   device.c   opening the system's default Metal device: capabilities,
 *              its command queue, memory (MTLBuffers in shared storage)
 *   program.c  MSL -> a library, its function and a compute pipeline
 *              (newLibraryWithSource with fast math off); a variant's
 *              code and its disk-cache artifact (the MSL, entry name,
 *              array parameters and pack length)
 *   launch.c   one command buffer: the pack with setBytes at index 0, each
 *              array's buffer at 1, 2, ... (the dialect's [[buffer(n)]]),
 *              dispatchThreads (or dispatchThreadgroups on GPUs without
 *              non-uniform threadgroups), commit and a wait
 *   metal.c    the backend table: typed IR -> MSL (gpu_emit, the MSL
 *              dialect) -> pipeline
 *   offline.c  "metal-source", the MSL without a device
 *              (tack.metal.source)
 *
 * The dialect refuses f64, 64-bit and 8/16-bit atomics and debug mode,
 * naming them, so a device never sees them.  The artifact is the MSL
 * source, as the reference's table gives it: a load compiles it again,
 * which macOS's own shader cache makes fast.  The cache target names the
 * device, the OS version (its Metal compiler) and the options.
 *
 * Thread-safety: a launch owns its arguments (setBytes copies the pack,
 * the buffers are the call's), so variants need no dispatch lock
 * (caps.locked_dispatch 0); encoding and commit happen under the device's
 * lock, the wait outside it.  Every entry point runs inside an
 * autorelease pool of its own, so nothing autoreleased outlives it.
 */
#ifndef TACK_METAL_H
#define TACK_METAL_H

#include <pthread.h>

#include "backend/backend.h"
#include "backend/gpu/driver.h"
#include "backend/gpu/gpu.h"
#include "objc_api.h"

/* The selectors the driver sends (field, Objective-C name), registered
 * once per device. */
#define METAL_SELECTORS(X)                                                         \
    X(alloc, "alloc") X(init, "init") X(release, "release") X(name, "name")        \
    X(utf8, "UTF8String") X(string_utf8, "stringWithUTF8String:")                  \
    X(localized, "localizedDescription") X(process_info, "processInfo")            \
    X(os_version, "operatingSystemVersionString")                                  \
    X(max_threads, "maxThreadsPerThreadgroup")                                     \
    X(max_tg_memory, "maxThreadgroupMemoryLength") X(max_buffer, "maxBufferLength") \
    X(working_set, "recommendedMaxWorkingSetSize") X(supports_family, "supportsFamily:") \
    X(new_queue, "newCommandQueue") X(set_fast_math, "setFastMathEnabled:")        \
    X(new_library, "newLibraryWithSource:options:error:")                          \
    X(new_function, "newFunctionWithName:")                                        \
    X(new_pipeline, "newComputePipelineStateWithFunction:error:")                  \
    X(max_total_threads, "maxTotalThreadsPerThreadgroup")                          \
    X(new_buffer, "newBufferWithLength:options:") X(contents, "contents")          \
    X(command_buffer, "commandBuffer") X(compute_encoder, "computeCommandEncoder") \
    X(set_pipeline, "setComputePipelineState:") X(set_bytes, "setBytes:length:atIndex:") \
    X(set_buffer, "setBuffer:offset:atIndex:")                                     \
    X(dispatch_threads, "dispatchThreads:threadsPerThreadgroup:")                  \
    X(dispatch_groups, "dispatchThreadgroups:threadsPerThreadgroup:")              \
    X(end_encoding, "endEncoding") X(commit, "commit") X(wait, "waitUntilCompleted") \
    X(status, "status") X(error, "error")

typedef struct metal_sels {
#define METAL_SEL_FIELD(field, text) objc_sel field;
    METAL_SELECTORS(METAL_SEL_FIELD)
#undef METAL_SEL_FIELD
} metal_sels;

struct backend {
    const metal_objc_api *objc;
    metal_sels s;
    objc_id device;        /* +1 from MTLCreateSystemDefaultDevice */
    objc_id queue;         /* +1: every launch's command buffers */
    pthread_mutex_t lock;  /* around encoding and commit */
    int lock_made;
    int nonuniform;        /* dispatchThreads: non-uniform threadgroups */
    metal_size max_threads; /* maxThreadsPerThreadgroup */
    backend_caps caps;
    char name[256];
    char os[128];          /* the OS version: its Metal compiler */
    char description[512];
    char *target;          /* cache_target's text, malloc'd */
};

struct backend_code {
    gpu_code g;       /* first: the part every driver keeps (gpu/driver.h) */
    objc_id pipeline;      /* +1: the compute pipeline state */
    uint64_t max_threads;  /* its maxTotalThreadsPerThreadgroup */
    char *source;          /* the MSL it was compiled from (the artifact) */
};

/* device.c */
/* open, close, caps, memory, the artifact, load, release and
 * launch_pack: the entries every driver has (gpu/driver.h). */
GPU_DRIVER_DECLARE(metal);
/* An NSError's localizedDescription as C text (inside a pool), or NULL. */
const char *metal_error_text(const backend *b, objc_id error);

/* program.c */
/* The disk-cache record (borrowed views). */
typedef struct metal_record {
    const char *entry, *source;
    size_t entry_len, source_len;
    uint32_t pack_words, narrays; /* as f's: checked by the parse */
} metal_record;
void metal_artifact_write(const backend_code *c, ser_writer *w);
/* Parses a record and checks it against f's parameters; damage is
 * TACK_ERR_INTERNAL naming the kernel. */
tack_status metal_artifact_parse(const ir_func *f, const void *bytes, size_t n,
                                 metal_record *out, tack_error *err);
/* MSL -> loaded code: Metal's refusal is TACK_ERR_COMPILE with its
 * message, naming the kernel. */
tack_status metal_code_from_source(backend *b, const ir_func *f, const char *source,
                                   size_t source_len, const char *entry, size_t entry_len,
                                   backend_code **out, tack_error *err);

/* launch.c */
/* Threads per threadgroup and threads in the grid for a range (gpu.h's
 * mapping: dimension 0 the innermost extent): 256 threads a group, at most
 * `group_cap`; the grid covers the range up to a cap past which threads
 * stride, and is whole threadgroups where `uniform`. */
void metal_grid(const backend *b, int ninner, int64_t count, int64_t inner0, int64_t inner1,
                uint64_t group_cap, int uniform, metal_size *grid, metal_size *group);

#endif
