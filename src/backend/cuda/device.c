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

/* Makes b's context current on this thread (gpu_rt_ops.enter). */
static tack_status cuda_enter(backend *b, tack_error *err) {
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
    return gpu_rt_open_stream(b, err);
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
    gpu_rt_init(b, &cuda_rt_ops, &b->caps, b->description);
    CUresult r = cu->DeviceGet(&b->device, index);
    if (r != CUDA_SUCCESS) {
        pthread_mutex_destroy(&b->textures_lock);
        gpu_rt_fini(b);
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
        gpu_rt_drain(b); /* the textures go before the stream (cuda_rt_ops.closing) */
        b->cu->DevicePrimaryCtxRelease(b->device);
    }
    pthread_mutex_destroy(&b->textures_lock);
    gpu_rt_fini(b);
    free(b->textures);
    free(b->target);
    free(b);
}

GPU_DRIVER_ACCESSORS(cuda)

/* ---- the runtime's calls (gpu/runtime.h) ------------------------------ */

#define CU(b) ((b)->cu)
#define PTR(h) ((CUdeviceptr)(uintptr_t)(h))

static tack_status fail(backend *b, tack_error *err, const char *what, const char *call, int r) {
    return cuda_fail(b->cu, err, what, call, r);
}
static int stream_create(backend *b, void **s) {
    CUstream h = NULL;
    CUresult r = CU(b)->StreamCreate(&h, CU_STREAM_NON_BLOCKING);
    *s = h;
    return r;
}
static void stream_destroy(backend *b, void *s) { CU(b)->StreamDestroy(s); }
static int stream_sync(backend *b, void *s) { return CU(b)->StreamSynchronize(s); }
static int device_sync(backend *b) { return CU(b)->CtxSynchronize(); }
static int event_create(backend *b, void **e) {
    CUevent h = NULL;
    CUresult r = CU(b)->EventCreate(&h, CU_EVENT_DEFAULT); /* timed */
    *e = h;
    return r;
}
static int event_record(backend *b, void *e, void *s) { return CU(b)->EventRecord(e, s); }
static void event_destroy(backend *b, void *e) { CU(b)->EventDestroy(e); }
static int wait_event(backend *b, void *s, void *e) { return CU(b)->StreamWaitEvent(s, e, 0); }
static int event_sync(backend *b, void *e) { return CU(b)->EventSynchronize(e); }
static int elapsed(backend *b, float *ms, void *s, void *e) {
    return CU(b)->EventElapsedTime(ms, s, e);
}
static int alloc(backend *b, void **handle, size_t bytes) {
    CUdeviceptr p = 0;
    CUresult r = CU(b)->MemAlloc(&p, bytes);
    *handle = (void *)(uintptr_t)p;
    return r;
}
static void mem_free(backend *b, void *h) { CU(b)->MemFree(PTR(h)); }
static int copy_in(backend *b, void *h, size_t off, const void *src, size_t n, void *s) {
    return CU(b)->MemcpyHtoDAsync(PTR(h) + off, src, n, s);
}
static int copy_out(backend *b, void *dst, const void *h, size_t off, size_t n, void *s) {
    return CU(b)->MemcpyDtoHAsync(dst, PTR(h) + off, n, s);
}
static int launch(backend *b, void *fn, const unsigned g[3], const unsigned t[3], void *s,
                  void **params) {
    return CU(b)->LaunchKernel(fn, g[0], g[1], g[2], t[0], t[1], t[2], 0, s, params, NULL);
}

static int module_load(backend *b, void **m, const void *image, char *log, size_t cap) {
    /* The JIT's log says why PTX is refused (a PTX version newer than the
     * driver, most often). */
    CUjit_option opts[2] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
    void *vals[2] = {log, (void *)(uintptr_t)(cap - 1)};
    CUmodule h = NULL;
    CUresult r = CU(b)->ModuleLoadDataEx(&h, image, 2, opts, vals);
    *m = h;
    return r;
}
static int module_function(backend *b, void **fn, void *m, const char *entry) {
    CUfunction h = NULL;
    CUresult r = CU(b)->ModuleGetFunction(&h, m, entry);
    *fn = h;
    return r;
}
static void module_unload(backend *b, void *m) { CU(b)->ModuleUnload(m); }

/* CUDA's real differences: an older driver lacks cuEventElapsedTime, and
 * a texture follows the memory it is made from (texture.c). */
static int elapsed_missing(backend *b) { return !CU(b)->EventElapsedTime; }
static void freeing(backend *b, void *h) {
    tack_error scratch;
    /* A queued kernel may still sample a texture over it (cuMemFree
     * itself waits for the device). */
    if (gpu_queue_busy(&b->rt.queue)) gpu_rt_wait(b, "freeing device memory", &scratch);
    cuda_texture_forget(b, PTR(h));
}
static void writing(backend *b, void *h) { cuda_texture_written(b, PTR(h)); }
static void closing(backend *b) { cuda_textures_free(b); }
/* PTX newer than the driver is the usual refusal: say which NVRTC made it. */
static void module_refused(backend *b, int r, const char *log, tack_error *err) {
    size_t used = strlen(err->message);
    if (r == CUDA_ERROR_UNSUPPORTED_PTX_VERSION || r == CUDA_ERROR_INVALID_PTX)
        snprintf(err->message + used, sizeof err->message - used,
                 "; the PTX is from NVRTC %s and driver %d.%d cannot load it: use an NVRTC "
                 "no newer than the driver (TACK_NVRTC=/path/to/libnvrtc.so.N)%s%s",
                 cuda_nvrtc_version(), b->driver_version / 1000, b->driver_version % 1000 / 10,
                 *log ? "\n" : "", log);
    else if (*log)
        snprintf(err->message + used, sizeof err->message - used, "\n%s", log);
}

const gpu_rt_ops cuda_rt_ops = {
    .vendor = "CUDA", .enter = cuda_enter, .fail = fail,
    .stream_create = stream_create, .stream_destroy = stream_destroy,
    .stream_sync = stream_sync, .device_sync = device_sync, .event_create = event_create,
    .event_record = event_record, .event_destroy = event_destroy,
    .stream_wait_event = wait_event, .event_sync = event_sync, .event_elapsed = elapsed,
    .alloc = alloc, .free = mem_free, .copy_in = copy_in, .copy_out = copy_out, .launch = launch,
    .module_load = module_load, .module_function = module_function,
    .module_unload = module_unload,
    .call = {"cuStreamCreate", "cuStreamSynchronize", "cuCtxSynchronize", "cuEventCreate",
             "cuEventRecord", "cuStreamWaitEvent", "cuEventSynchronize", "cuEventElapsedTime",
             "cuMemAlloc", "cuMemcpyHtoDAsync", "cuMemcpyDtoHAsync", "cuLaunchKernel",
             "cuModuleLoadData", "cuModuleGetFunction"},
    .elapsed_missing = elapsed_missing, .freeing = freeing, .writing = writing,
    .closing = closing, .module_refused = module_refused,
};
