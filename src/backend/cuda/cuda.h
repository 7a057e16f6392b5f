/*
 * cuda.h - the CUDA backend (backend_cuda), one stage per file:
 *
 *   loader.c   the driver's and NVRTC's functions, found at run time
 *   nvrtc.c    CUDA C -> PTX for an architecture (needs no GPU)
 *   device.c   opening a device: primary context, capabilities, memory
 *   program.c  PTX -> a module and its function; a variant's code object
 *              and its disk-cache artifact (the PTX and entry name)
 *   texture.c  f32 Texture3Ds as texture objects over 3-D CUDA arrays,
 *              made once per texture and refreshed when its data is written
 *   launch.c   a filled pack, the call's device pointers and texture
 *              objects -> one grid queued on the device's stream
 *   cuda.c     the backend table: typed IR -> CUDA C (gpu_emit) -> PTX ->
 *              code, and the pack fill before each launch
 *   offline.c  cuda_generate: source or PTX for a target without a
 *              device (tack_kernel_generate, through backend/offline.c)
 *
 * Thread-safety: every entry may be called from several threads at once;
 * a launch keeps its arguments on its own stack (caps.locked_dispatch 0).
 * Each entry makes the device's primary context current on its thread.
 *
 * Streams: each device has its own non-blocking stream, on which every
 * launch, copy and texture refresh is queued.  A launch returns once
 * queued (caps.queued_launch); a copy waits for the stream, so it comes
 * after the launches before it, and a fault in one of them surfaces there
 * naming it (gpu/driver.h's gpu_queue).  Being its own, the stream never
 * waits for, nor holds up, work that other libraries sharing the primary
 * context queue on the legacy default stream.
 */
#ifndef TACK_CUDA_H
#define TACK_CUDA_H

#include <pthread.h>

#include "backend/backend.h"
#include "backend/gpu/driver.h"
#include "backend/gpu/gpu.h"
#include "backend/gpu/runtime.h"
#include "cuda_api.h"

/* One f32 Texture3D's texture object (texture.c), keyed by the device
 * memory holding its texels. */
typedef struct cuda_texture {
    CUdeviceptr data;
    int64_t shape[3];   /* the data's extents, [u][v][w] */
    CUarray array;      /* a copy of data the texture unit reads */
    CUtexObject object;
    int stale;          /* data was written since it was copied into array */
} cuda_texture;

struct backend {
    gpu_runtime rt;       /* first: the stream, queues and their flow (gpu/runtime.h) */
    const cuda_driver_api *cu;
    int index;
    CUdevice device;
    CUcontext ctx;        /* the primary context, retained */
    int cc_major, cc_minor;
    int driver_version;   /* 12040 for CUDA 12.4 */
    int sm_count;
    int max_block[3];
    int64_t max_grid_dim[3];
    backend_caps caps;
    char arch[16];        /* "sm_90": what NVRTC targets */
    char name[256];
    char description[512];
    char *target;         /* cache_target's text, malloc'd */
    pthread_mutex_t textures_lock;
    cuda_texture *textures; /* malloc'd, under textures_lock */
    int ntextures, textures_cap;
    _Atomic int any_textures; /* ntextures > 0: launches skip the lock if not */
};

struct backend_code {
    gpu_code g;       /* first: the part every driver keeps (gpu/driver.h) */
    void *module;     /* CUmodule, CUfunction: gpu/runtime.c's */
    void *fn;
    char *ptx;        /* what the module was loaded from (the artifact) */
    char arch[16];
    int pack_words;
    int ntextures;
    int *textures;    /* those sampled in hardware (gpu_hardware_texture),
                         in order (malloc'd) */
    int nwritten;
    int *written;     /* the arrays the kernel may store to (malloc'd): a
                         texture over one of them is stale after a launch */
};

/* nvrtc.c */
/* CUDA C -> PTX (malloc'd, NUL-terminated) for `arch` ("sm_90",
 * "sm_90a"), with the CUDA dialect's build options.  NVRTC's refusal is
 * TACK_ERR_COMPILE with its log, naming `kernel_name`; no NVRTC is
 * TACK_ERR_DEVICE saying what to install; a malformed or unsupported
 * architecture is TACK_ERR_VALUE. */
tack_status cuda_compile_ptx(const char *kernel_name, const char *source, const char *arch,
                             char **ptx, tack_error *err);
/* "13.0", or "none" when NVRTC cannot be loaded. */
const char *cuda_nvrtc_version(void);
/* 1 for "sm_NN" / "sm_NNa" / "sm_NNf" with NN >= 10. */
int cuda_arch_valid(const char *arch);

/* device.c */
int cuda_device_count(tack_error *err); /* -1 with err when none can be had */
/* open, close, caps, the artifact, load, release and launch_pack (with
 * the textures' objects, queued on b's stream): driver.h; memory, streams
 * and waiting are gpu/runtime.c's, through cuda_rt_ops. */
GPU_DRIVER_DECLARE_CORE(cuda);
extern const gpu_rt_ops cuda_rt_ops;
/* Fills err with "<what>: <call> failed: CUDA_ERROR_X (the driver's
 * words)"; out-of-memory is TACK_ERR_NOMEM, the rest TACK_ERR_DEVICE. */
tack_status cuda_fail(const cuda_driver_api *cu, tack_error *err, const char *what,
                      const char *call, CUresult code);

/* program.c */
/* The disk-cache record: entry name, architecture, PTX (borrowed views
 * into the bytes, not NUL-terminated). */
typedef struct cuda_artifact {
    gpu_record head; /* the entry and the architecture (gpu/driver.h) */
    const char *ptx;
    size_t ptx_len;
} cuda_record;
void cuda_artifact_write(const char *entry, const char *arch, const char *ptx, ser_writer *w);
/* Parses and checks a record; a damaged one is TACK_ERR_INTERNAL naming
 * `kernel_name`. */
tack_status cuda_artifact_parse(const char *kernel_name, const void *bytes, size_t n,
                                cuda_record *out, tack_error *err);
/* A code object for post-pass IR f (cloned) from PTX: the driver's JIT
 * loads it (its log in the error when it refuses). */
tack_status cuda_code_from_ptx(backend *b, const ir_func *f, const char *ptx, size_t ptx_len,
                               const char *entry, size_t entry_len, backend_code **out,
                               tack_error *err);

/* texture.c */
/* The texture object over the f32 texels at `data` (extents `shape`), for
 * parameter `param` of kernel `kernel` (named in errors): made on first
 * use, and its array refreshed from data (queued on b's stream) when data
 * was written since.  Call with b's context current. */
tack_status cuda_texture_get(backend *b, CUdeviceptr data, const int64_t shape[3],
                             const char *kernel, const char *param, CUtexObject *out,
                             tack_error *err);
/* data was (or is being) written: a texture over it refreshes before its
 * next sample. */
void cuda_texture_written(backend *b, CUdeviceptr data);
/* data is freed: so is any texture over it. */
void cuda_texture_forget(backend *b, CUdeviceptr data);
/* Every texture (the device closes). */
void cuda_textures_free(backend *b);

/* launch.c */
/* Block and grid for a range (gpu.h): x strides over the innermost index,
 * the last dimension (1 + ninner) over the outer iterations, so that the
 * threads of a warp read row-major arrays contiguously. */
void cuda_grid(const backend *b, int ninner, int64_t count, int64_t inner0, int64_t inner1,
               unsigned grid[3], unsigned block[3]);

#endif
