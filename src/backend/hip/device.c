/* device.c - opens one HIP device, reads what it can do (its gcnArchName
 * is what hipRTC compiles for), and manages its memory. */
#include "hip.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/gpu/dialect.h"
#include "backend/gpu/gpu.h"

tack_status hip_fail(const hip_runtime_api *hip, tack_error *err, const char *what,
                     const char *call, hipError_t code) {
    tack_status st = code == hipErrorOutOfMemory ? TACK_ERR_NOMEM : TACK_ERR_DEVICE;
    const char *words = hip && hip->GetErrorString ? hip->GetErrorString(code) : NULL;
    const char *name = hip_error_name(hip, code);
    if (words && !strcmp(words, name)) words = NULL;
    return gpu_fail(err, st, what, call, name, words);
}

/* Makes b's device current on this thread (gpu_rt_ops.enter). */
static tack_status hip_enter(backend *b, tack_error *err) {
    int cur = -1;
    if (b->hip->GetDevice(&cur) == hipSuccess && cur == b->index) return TACK_OK;
    hipError_t r = b->hip->SetDevice(b->index);
    return r == hipSuccess ? TACK_OK : hip_fail(b->hip, err, b->description, "hipSetDevice", r);
}

/* The runtime, initialized, and its device count; TACK_ERR_DEVICE saying
 * what is missing. */
static tack_status init_runtime(const char *spec, const hip_runtime_api **out, int *count,
                                tack_error *err) {
    const char *why;
    const hip_runtime_api *hip = hip_runtime_load(&why);
    *out = hip;
    *count = 0;
    if (!hip) return backend_error(err, TACK_ERR_DEVICE, "tack.device(\"%s\"): %s", spec, why);
    hipError_t r = hip->Init(0);
    if (r == hipErrorNoDevice || r == hipErrorInvalidDevice)
        return backend_error(err, TACK_ERR_DEVICE,
                             "tack.device(\"%s\"): no HIP device: the runtime is installed but "
                             "finds no AMD GPU (hipInit: %s)",
                             spec, hip_error_name(hip, r));
    char what[64];
    snprintf(what, sizeof what, "tack.device(\"%s\")", spec);
    if (r != hipSuccess) return hip_fail(hip, err, what, "hipInit", r);
    if ((r = hip->GetDeviceCount(count)) != hipSuccess) {
        if (r == hipErrorNoDevice)
            return backend_error(err, TACK_ERR_DEVICE,
                                 "tack.device(\"%s\"): no HIP device: the runtime finds no AMD GPU",
                                 spec);
        return hip_fail(hip, err, what, "hipGetDeviceCount", r);
    }
    if (*count <= 0)
        return backend_error(err, TACK_ERR_DEVICE,
                             "tack.device(\"%s\"): no HIP device: the runtime finds no AMD GPU",
                             spec);
    return TACK_OK;
}

static int attr(const backend *b, hipDeviceAttribute_t a) {
    int v = 0;
    return b->hip->DeviceGetAttribute(&v, a, b->index) == hipSuccess ? v : 0;
}

static tack_status read_caps(backend *b, tack_error *err) {
    const hip_runtime_api *hip = b->hip;
    backend_caps *c = &b->caps;
    memset(c, 0, sizeof *c);
    hipError_t r = hip->DeviceGetName(b->name, (int)sizeof b->name - 1, b->device);
    if (r != hipSuccess) return hip_fail(hip, err, "opening a HIP device", "hipDeviceGetName", r);
    b->name[sizeof b->name - 1] = 0;
    /* gcnArchName, with its feature flags: the code object's target. */
    char *props = calloc(1, HIP_PROPS_BYTES);
    if (!props) return backend_error(err, TACK_ERR_NOMEM, "out of memory opening a HIP device");
    r = hip->GetDeviceProperties(props, b->index);
    if (r == hipSuccess && hip->props_arch_offset + 256 <= HIP_PROPS_BYTES) {
        memcpy(b->arch, props + hip->props_arch_offset, sizeof b->arch);
        b->arch[sizeof b->arch - 1] = 0;
    }
    free(props);
    if (r != hipSuccess) return hip_fail(hip, err, b->name, "hipGetDeviceProperties", r);
    if (!hip_arch_valid(b->arch))
        return backend_error(err, TACK_ERR_DEVICE,
                             "%s: the HIP runtime gives '%.64s' as its architecture "
                             "(gcnArchName), which is not a gfx ISA: the runtime and Tack "
                             "disagree on hipDeviceProp_t",
                             b->name, b->arch);
    if (hip->DriverGetVersion(&b->driver_version) != hipSuccess) b->driver_version = 0;
    b->cu_count = attr(b, hipDeviceAttributeMultiprocessorCount);
    if (b->cu_count < 1) b->cu_count = 1;
    b->warp_size = attr(b, hipDeviceAttributeWarpSize);
    static const hipDeviceAttribute_t blk[3] = {hipDeviceAttributeMaxBlockDimX,
                                                hipDeviceAttributeMaxBlockDimY,
                                                hipDeviceAttributeMaxBlockDimZ};
    static const hipDeviceAttribute_t grd[3] = {hipDeviceAttributeMaxGridDimX,
                                                hipDeviceAttributeMaxGridDimY,
                                                hipDeviceAttributeMaxGridDimZ};
    for (int d = 0; d < 3; d++) {
        b->max_block[d] = attr(b, blk[d]);
        b->max_grid_dim[d] = attr(b, grd[d]);
    }
    size_t total = 0;
    if ((r = hip->DeviceTotalMem(&total, b->device)) != hipSuccess)
        return hip_fail(hip, err, b->name, "hipDeviceTotalMem", r);
    /* fp64: every GCN and RDNA part; textures are sampled in software
     * (hip.h), so no images and no hardware filtering. */
    gpu_caps_common(c, total, attr(b, hipDeviceAttributeMaxSharedMemoryPerBlock),
                    attr(b, hipDeviceAttributeMaxThreadsPerBlock), b->cu_count, b->max_block,
                    b->max_grid_dim);
    c->queued_launch = 1; /* launch.c: no wait per launch */

    snprintf(b->description, sizeof b->description, "%s (HIP, %s, runtime %d, %d CUs)", b->name,
             b->arch, b->driver_version, b->cu_count);
    /* Everything the code object and its loading depend on: the ISA with
     * its features, the runtime, hipRTC and its options. */
    return gpu_target_text(&b->target, "HIP", err,
                           "hip; device=%s; arch=%s; runtime=%d; hiprtc=%s; options=%s", b->name,
                           b->arch, b->driver_version, hip_rtc_version(),
                           gpu_dialect_hip()->build_options);
}

/* Caps and the stream; hip_close undoes what got done when one fails. */
static tack_status start(backend *b, tack_error *err) {
    tack_status st = read_caps(b, err);
    return st ? st : gpu_rt_open_stream(b, err);
}

static void device_name(const void *api, int i, char *name, size_t cap) {
    const hip_runtime_api *hip = api;
    hipDevice_t d;
    if (hip->DeviceGet(&d, i) == hipSuccess) hip->DeviceGetName(name, (int)cap - 1, d);
}

tack_status hip_open(int index, int num_threads, backend **out, tack_error *err) {
    (void)num_threads;
    *out = NULL;
    char spec[32];
    gpu_spec(spec, "hip", index);
    const hip_runtime_api *hip;
    int count;
    tack_status st = init_runtime(spec, &hip, &count, err);
    if (st) return st;
    if (index < 0 || index >= count)
        return gpu_no_such_device(err, spec, "HIP", "hip", index, count, device_name, hip);
    backend *b = calloc(1, sizeof *b);
    if (!b) return backend_error(err, TACK_ERR_NOMEM, "out of memory opening a HIP device");
    b->hip = hip;
    b->index = index;
    gpu_rt_init(b, &hip_rt_ops, &b->caps, b->description);
    hipError_t r = hip->DeviceGet(&b->device, index);
    if (r != hipSuccess) {
        gpu_rt_fini(b);
        free(b);
        char what[64];
        snprintf(what, sizeof what, "tack.device(\"%s\")", spec);
        return hip_fail(hip, err, what, "hipDeviceGet", r);
    }
    snprintf(b->description, sizeof b->description, "HIP device %d", index);
    return gpu_open_done(b, start(b, err), out, hip_close);
}

void hip_close(backend *b) {
    if (!b) return;
    if (b->rt.stream) gpu_rt_drain(b);
    gpu_rt_fini(b);
    free(b->target);
    free(b);
}

GPU_DRIVER_ACCESSORS(hip)

/* ---- the runtime's calls (gpu/runtime.h) ------------------------------ */

#define HIP(b) ((b)->hip)

static tack_status fail(backend *b, tack_error *err, const char *what, const char *call, int r) {
    return hip_fail(b->hip, err, what, call, r);
}
static int stream_create(backend *b, void **s) {
    hipStream_t h = NULL;
    hipError_t r = HIP(b)->StreamCreateWithFlags(&h, hipStreamNonBlocking);
    *s = h;
    return r;
}
static void stream_destroy(backend *b, void *s) { HIP(b)->StreamDestroy(s); }
static int stream_sync(backend *b, void *s) { return HIP(b)->StreamSynchronize(s); }
static int device_sync(backend *b) { return HIP(b)->DeviceSynchronize(); }
static int event_create(backend *b, void **e) {
    hipEvent_t h = NULL;
    hipError_t r = HIP(b)->EventCreate(&h);
    *e = h;
    return r;
}
static int event_record(backend *b, void *e, void *s) { return HIP(b)->EventRecord(e, s); }
static void event_destroy(backend *b, void *e) { HIP(b)->EventDestroy(e); }
static int wait_event(backend *b, void *s, void *e) { return HIP(b)->StreamWaitEvent(s, e, 0); }
static int event_sync(backend *b, void *e) { return HIP(b)->EventSynchronize(e); }
static int elapsed(backend *b, float *ms, void *s, void *e) {
    return HIP(b)->EventElapsedTime(ms, s, e);
}
static int alloc(backend *b, void **handle, size_t bytes) { return HIP(b)->Malloc(handle, bytes); }
static void mem_free(backend *b, void *h) { HIP(b)->Free(h); }
static int copy_in(backend *b, void *h, size_t off, const void *src, size_t n, void *s) {
    return HIP(b)->MemcpyHtoDAsync((char *)h + off, (void *)src, n, s);
}
static int copy_out(backend *b, void *dst, const void *h, size_t off, size_t n, void *s) {
    return HIP(b)->MemcpyDtoHAsync(dst, (char *)h + off, n, s);
}
static int launch(backend *b, void *fn, const unsigned g[3], const unsigned t[3], void *s,
                  void **params) {
    return HIP(b)->ModuleLaunchKernel(fn, g[0], g[1], g[2], t[0], t[1], t[2], 0, s, params, NULL);
}

static int module_load(backend *b, void **m, const void *image, char *log, size_t cap) {
    (void)log, (void)cap; /* hipModuleLoadData keeps no log */
    hipModule_t h = NULL;
    hipError_t r = HIP(b)->ModuleLoadData(&h, image);
    *m = h;
    return r;
}
static int module_function(backend *b, void **fn, void *m, const char *entry) {
    hipFunction_t h = NULL;
    hipError_t r = HIP(b)->ModuleGetFunction(&h, m, entry);
    *fn = h;
    return r;
}
static void module_unload(backend *b, void *m) { HIP(b)->ModuleUnload(m); }

/* A code object for another ISA is the usual refusal: say which. */
static void module_refused(backend *b, int r, const char *log, tack_error *err) {
    (void)log;
    if (r != hipErrorNoBinaryForGpu && r != hipErrorInvalidImage && r != hipErrorInvalidKernelFile)
        return;
    size_t used = strlen(err->message);
    snprintf(err->message + used, sizeof err->message - used,
             "; the code object is for %s (hipRTC %s)", b->arch, hip_rtc_version());
}

/* No hook for textures: they are sampled in software (hip.h). */
const gpu_rt_ops hip_rt_ops = {
    .vendor = "HIP", .enter = hip_enter, .fail = fail,
    .stream_create = stream_create, .stream_destroy = stream_destroy,
    .stream_sync = stream_sync, .device_sync = device_sync, .event_create = event_create,
    .event_record = event_record, .event_destroy = event_destroy,
    .stream_wait_event = wait_event, .event_sync = event_sync, .event_elapsed = elapsed,
    .alloc = alloc, .free = mem_free, .copy_in = copy_in, .copy_out = copy_out, .launch = launch,
    .module_load = module_load, .module_function = module_function,
    .module_unload = module_unload, .module_refused = module_refused,
    .call = {"hipStreamCreateWithFlags", "hipStreamSynchronize", "hipDeviceSynchronize",
             "hipEventCreate", "hipEventRecord", "hipStreamWaitEvent", "hipEventSynchronize",
             "hipEventElapsedTime", "hipMalloc", "hipMemcpyHtoDAsync", "hipMemcpyDtoHAsync",
             "hipModuleLaunchKernel", "hipModuleLoadData", "hipModuleGetFunction"},
};
