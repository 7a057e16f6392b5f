/* device.c - opens one CUDA device through its primary context (the one
 * the CUDA runtime, CuPy and PyTorch share, so their pointers are ours),
 * reads what it can do, and manages its memory. */
#include "cuda.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/gpu/dialect.h"


tack_status cuda_fail(const cuda_driver_api *cu, tack_error *err, const char *what,
                      const char *call, CUresult code) {
    tack_status st = code == CUDA_ERROR_OUT_OF_MEMORY ? TACK_ERR_NOMEM : TACK_ERR_DEVICE;
    const char *words = NULL;
    if (cu && cu->GetErrorString && cu->GetErrorString(code, &words) != CUDA_SUCCESS) words = NULL;
    return gpu_fail(err, st, what, call, cuda_error_name(cu, code), words);
}

tack_status cuda_enter(backend *b, tack_error *err) {
    CUcontext cur = NULL;
    if (b->cu->CtxGetCurrent(&cur) == CUDA_SUCCESS && cur == b->ctx) return TACK_OK;
    CUresult r = b->cu->CtxSetCurrent(b->ctx);
    if (r != CUDA_SUCCESS) return cuda_fail(b->cu, err, b->description, "cuCtxSetCurrent", r);
    return TACK_OK;
}

/* The driver, initialized, and its device count; fails with
 * TACK_ERR_DEVICE saying what is missing. */
static tack_status init_driver(const char *spec, const cuda_driver_api **out, int *count,
                               tack_error *err) {
    const char *why;
    const cuda_driver_api *cu = cuda_driver_load(&why);
    *out = cu;
    *count = 0;
    if (!cu) return backend_error(err, TACK_ERR_DEVICE, "tack.device(\"%s\"): %s", spec, why);
    CUresult r = cu->Init(0);
    if (r == CUDA_ERROR_NO_DEVICE)
        return backend_error(err, TACK_ERR_DEVICE,
                      "tack.device(\"%s\"): no CUDA device: the driver is installed but finds "
                      "no GPU (cuInit: CUDA_ERROR_NO_DEVICE)",
                      spec);
    if (r == CUDA_ERROR_INSUFFICIENT_DRIVER)
        return backend_error(err, TACK_ERR_DEVICE,
                      "tack.device(\"%s\"): the CUDA driver is too old for this GPU or is not "
                      "running (cuInit: CUDA_ERROR_INSUFFICIENT_DRIVER)",
                      spec);
    char what[64];
    snprintf(what, sizeof what, "tack.device(\"%s\")", spec);
    if (r != CUDA_SUCCESS) return cuda_fail(cu, err, what, "cuInit", r);
    if ((r = cu->DeviceGetCount(count)) != CUDA_SUCCESS)
        return cuda_fail(cu, err, what, "cuDeviceGetCount", r);
    if (*count <= 0)
        return backend_error(err, TACK_ERR_DEVICE, "tack.device(\"%s\"): no CUDA device: the driver "
                      "finds no GPU", spec);
    return TACK_OK;
}

int cuda_device_count(tack_error *err) {
    const cuda_driver_api *cu;
    int n;
    return init_driver("cuda", &cu, &n, err) ? -1 : n;
}

static int attr(const backend *b, CUdevice_attribute a) {
    int v = 0;
    return b->cu->DeviceGetAttribute(&v, a, b->device) == CUDA_SUCCESS ? v : 0;
}

static tack_status read_caps(backend *b, tack_error *err) {
    const cuda_driver_api *cu = b->cu;
    backend_caps *c = &b->caps;
    memset(c, 0, sizeof *c);
    CUresult r = cu->DeviceGetName(b->name, (int)sizeof b->name - 1, b->device);
    if (r != CUDA_SUCCESS) return cuda_fail(cu, err, "opening a CUDA device", "cuDeviceGetName", r);
    b->name[sizeof b->name - 1] = 0;
    b->cc_major = attr(b, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
    b->cc_minor = attr(b, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
    if (cu->DriverGetVersion(&b->driver_version) != CUDA_SUCCESS) b->driver_version = 0;
    b->sm_count = attr(b, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
    if (b->sm_count < 1) b->sm_count = 1;
    static const CUdevice_attribute blk[3] = {CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X,
                                              CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y,
                                              CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z};
    static const CUdevice_attribute grd[3] = {CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X,
                                              CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y,
                                              CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z};
    static const CUdevice_attribute tex[3] = {CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_WIDTH,
                                              CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_HEIGHT,
                                              CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_DEPTH};
    for (int d = 0; d < 3; d++) {
        b->max_block[d] = attr(b, blk[d]);
        b->max_grid_dim[d] = attr(b, grd[d]);
        c->image3d_max[d] = attr(b, tex[d]);
    }
    size_t total = 0;
    if ((r = cu->DeviceTotalMem(&total, b->device)) != CUDA_SUCCESS)
        return cuda_fail(cu, err, b->name, "cuDeviceTotalMem", r);
    /* fp64: every architecture NVRTC still targets. */
    gpu_caps_common(c, total, attr(b, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK),
                    attr(b, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK), b->sm_count, b->max_block,
                    b->max_grid_dim);
    /* f32 textures are sampled by the texture unit (texture.c), f64 ones
     * in software: no 3-D images for the runtime to manage. */
    c->images = 0;
    c->hardware_texture_filtering = 1;
    c->queued_launch = 1; /* launch.c: no wait per launch */

    snprintf(b->arch, sizeof b->arch, "sm_%d%d", b->cc_major, b->cc_minor);
    snprintf(b->description, sizeof b->description,
             "%s (CUDA, compute capability %d.%d, driver %d.%d, %d SMs)", b->name, b->cc_major,
             b->cc_minor, b->driver_version / 1000, b->driver_version % 1000 / 10, b->sm_count);
    /* Everything the PTX and its loading depend on. */
    return gpu_target_text(&b->target, "CUDA", err,
                           "cuda; device=%s; cc=%d.%d; arch=%s; driver=%d; nvrtc=%s; options=%s",
                           b->name, b->cc_major, b->cc_minor, b->arch, b->driver_version,
                           cuda_nvrtc_version(), gpu_dialect_cuda.build_options);
}

/* Caps, the primary context and the stream; cuda_close undoes what got
 * done when one fails. */
static tack_status start(backend *b, tack_error *err) {
    const cuda_driver_api *cu = b->cu;
    tack_status st = read_caps(b, err);
    if (st) return st;
    CUresult r = cu->DevicePrimaryCtxRetain(&b->ctx, b->device);
    if (r != CUDA_SUCCESS) {
        b->ctx = NULL;
        return cuda_fail(cu, err, b->description, "cuDevicePrimaryCtxRetain", r);
    }
    if ((st = cuda_enter(b, err))) return st;
    if ((r = cu->StreamCreate(&b->stream, CU_STREAM_NON_BLOCKING)) == CUDA_SUCCESS) return TACK_OK;
    b->stream = NULL;
    return cuda_fail(cu, err, b->description, "cuStreamCreate", r);
}

static void device_name(const void *api, int i, char *name, size_t cap) {
    const cuda_driver_api *cu = api;
    CUdevice d;
    if (cu->DeviceGet(&d, i) == CUDA_SUCCESS) cu->DeviceGetName(name, (int)cap - 1, d);
}

tack_status cuda_open(int index, int num_threads, backend **out, tack_error *err) {
    (void)num_threads; /* the GPU has its own */
    *out = NULL;
    char spec[32];
    gpu_spec(spec, "cuda", index);
    const cuda_driver_api *cu;
    int count;
    tack_status st = init_driver(spec, &cu, &count, err);
    if (st) return st;
    if (index < 0 || index >= count)
        return gpu_no_such_device(err, spec, "CUDA", "cuda", index, count, device_name, cu);
    backend *b = calloc(1, sizeof *b);
    if (!b) return backend_error(err, TACK_ERR_NOMEM, "out of memory opening a CUDA device");
    b->cu = cu;
    b->index = index;
    pthread_mutex_init(&b->textures_lock, NULL);
    gpu_queue_init(&b->queue);
    gpu_streams_init(&b->streams);
    CUresult r = cu->DeviceGet(&b->device, index);
    if (r != CUDA_SUCCESS) {
        pthread_mutex_destroy(&b->textures_lock);
        gpu_queue_destroy(&b->queue);
        gpu_streams_destroy(&b->streams);
        free(b);
        char what[64];
        snprintf(what, sizeof what, "tack.device(\"%s\")", spec);
        return cuda_fail(cu, err, what, "cuDeviceGet", r);
    }
    return gpu_open_done(b, start(b, err), out, cuda_close);
}

void cuda_close(backend *b) {
    if (!b) return;
    if (b->ctx) {
        tack_error scratch;
        if (cuda_enter(b, &scratch) == TACK_OK) {
            if (b->stream) b->cu->StreamSynchronize(b->stream);
            cuda_textures_free(b);
            if (b->stream) b->cu->StreamDestroy(b->stream);
        }
        b->cu->DevicePrimaryCtxRelease(b->device);
    }
    pthread_mutex_destroy(&b->textures_lock);
    gpu_queue_destroy(&b->queue);
    gpu_streams_destroy(&b->streams);
    free(b->textures);
    free(b->target);
    free(b);
}

GPU_DRIVER_ACCESSORS(cuda)

/* ---- memory ------------------------------------------------------------ */

tack_status cuda_mem_alloc(backend *b, size_t bytes, void **handle, tack_error *err) {
    *handle = NULL;
    tack_status st = gpu_mem_check(err, bytes, &b->caps, b->description);
    if (!st) st = cuda_enter(b, err);
    if (st) return st;
    /* cuMemAlloc refuses 0 bytes; an empty array still gets a handle, so a
     * handle is never 0. */
    CUdeviceptr p = 0;
    CUresult r = b->cu->MemAlloc(&p, bytes ? bytes : 1);
    if (r != CUDA_SUCCESS) {
        char what[sizeof b->description + 64];
        snprintf(what, sizeof what, "allocating %zu bytes on %s", bytes, b->description);
        return cuda_fail(b->cu, err, what, "cuMemAlloc", r);
    }
    *handle = (void *)(uintptr_t)p;
    return TACK_OK;
}

void cuda_mem_free(backend *b, void *handle) {
    tack_error scratch;
    if (!handle || cuda_enter(b, &scratch) != TACK_OK) return;
    /* A queued kernel may still sample a texture over it (cuMemFree
     * itself waits for the device). */
    if (gpu_queue_busy(&b->queue)) cuda_wait(b, "freeing device memory", &scratch);
    cuda_texture_forget(b, (CUdeviceptr)(uintptr_t)handle);
    b->cu->MemFree((CUdeviceptr)(uintptr_t)handle);
}

tack_status cuda_wait(backend *b, const char *what, tack_error *err) {
    tack_status entered = cuda_enter(b, err);
    if (entered) return entered;
    uint64_t mark = gpu_queue_mark(&b->queue);
    CUresult r = b->cu->StreamSynchronize(b->stream);
    tack_status st = r == CUDA_SUCCESS ? TACK_OK
                                       : cuda_fail(b->cu, err, what, "cuStreamSynchronize", r);
    return gpu_queue_waited(&b->queue, mark, st, err);
}

/* Copies are queued on the device's stream, so they come after every
 * launch queued before them (and a texture's refresh after them), then
 * waited for: the call returns with the bytes in place, or with the
 * failure of a launch before it. */
static tack_status wait_copy(backend *b, const char *what, const char *call, CUresult r,
                             tack_error *err) {
    if (r != CUDA_SUCCESS) return cuda_fail(b->cu, err, what, call, r);
    return cuda_wait(b, what, err);
}

/* A copy comes after the launches queued on every tack.Stream too. */
static tack_status streams_first(backend *b, const char *what, tack_error *err) {
    return gpu_streams_sync(b, &cuda_stream_api, &b->streams, what, err);
}

tack_status cuda_mem_write(backend *b, void *handle, size_t offset, const void *src, size_t n,
                           tack_error *err) {
    if (!n) return TACK_OK;
    tack_status st = cuda_enter(b, err);
    if (st) return st;
    char what[96];
    snprintf(what, sizeof what, "writing %zu bytes at offset %zu", n, offset);
    if ((st = streams_first(b, what, err))) return st;
    cuda_texture_written(b, (CUdeviceptr)(uintptr_t)handle);
    CUresult r = b->cu->MemcpyHtoDAsync((CUdeviceptr)(uintptr_t)handle + offset, src, n, b->stream);
    return wait_copy(b, what, "cuMemcpyHtoDAsync", r, err);
}

tack_status cuda_mem_read(backend *b, const void *handle, size_t offset, void *dst, size_t n,
                          tack_error *err) {
    if (!n) return TACK_OK;
    tack_status st = cuda_enter(b, err);
    if (st) return st;
    char what[96];
    snprintf(what, sizeof what, "reading %zu bytes at offset %zu", n, offset);
    if ((st = streams_first(b, what, err))) return st;
    CUresult r = b->cu->MemcpyDtoHAsync(dst, (CUdeviceptr)(uintptr_t)handle + offset, n, b->stream);
    return wait_copy(b, what, "cuMemcpyDtoHAsync", r, err);
}
