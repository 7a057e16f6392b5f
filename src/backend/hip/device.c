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

tack_status hip_enter(backend *b, tack_error *err) {
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
    if (!st) st = hip_enter(b, err);
    if (st) return st;
    hipError_t r = b->hip->StreamCreateWithFlags(&b->stream, hipStreamNonBlocking);
    if (r == hipSuccess) return TACK_OK;
    b->stream = NULL;
    return hip_fail(b->hip, err, b->description, "hipStreamCreateWithFlags", r);
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
    gpu_queue_init(&b->queue);
    gpu_streams_init(&b->streams);
    hipError_t r = hip->DeviceGet(&b->device, index);
    if (r != hipSuccess) {
        gpu_queue_destroy(&b->queue);
        gpu_streams_destroy(&b->streams);
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
    tack_error scratch;
    if (b->stream && hip_enter(b, &scratch) == TACK_OK) {
        b->hip->StreamSynchronize(b->stream);
        b->hip->StreamDestroy(b->stream);
    }
    gpu_queue_destroy(&b->queue);
    gpu_streams_destroy(&b->streams);
    free(b->target);
    free(b);
}

GPU_DRIVER_ACCESSORS(hip)

/* ---- memory ------------------------------------------------------------ */

tack_status hip_mem_alloc(backend *b, size_t bytes, void **handle, tack_error *err) {
    *handle = NULL;
    tack_status st = gpu_mem_check(err, bytes, &b->caps, b->description);
    if (!st) st = hip_enter(b, err);
    if (st) return st;
    /* An empty array still gets a handle, so a handle is never NULL. */
    void *p = NULL;
    hipError_t r = b->hip->Malloc(&p, bytes ? bytes : 1);
    if (r != hipSuccess) {
        char what[sizeof b->description + 64];
        snprintf(what, sizeof what, "allocating %zu bytes on %s", bytes, b->description);
        return hip_fail(b->hip, err, what, "hipMalloc", r);
    }
    *handle = p;
    return TACK_OK;
}

void hip_mem_free(backend *b, void *handle) {
    tack_error scratch;
    if (!handle || hip_enter(b, &scratch) != TACK_OK) return;
    b->hip->Free(handle);
}

tack_status hip_wait(backend *b, const char *what, tack_error *err) {
    tack_status entered = hip_enter(b, err);
    if (entered) return entered;
    uint64_t mark = gpu_queue_mark(&b->queue);
    hipError_t r = b->hip->StreamSynchronize(b->stream);
    tack_status st =
        r == hipSuccess ? TACK_OK : hip_fail(b->hip, err, what, "hipStreamSynchronize", r);
    return gpu_queue_waited(&b->queue, mark, st, err);
}

/* Copies are queued on the device's stream, after every launch queued
 * before them, then waited for (hipFree waits by itself). */
static tack_status wait_copy(backend *b, const char *what, const char *call, hipError_t r,
                             tack_error *err) {
    if (r != hipSuccess) return hip_fail(b->hip, err, what, call, r);
    return hip_wait(b, what, err);
}

tack_status hip_mem_write(backend *b, void *handle, size_t offset, const void *src, size_t n,
                          tack_error *err) {
    if (!n) return TACK_OK;
    tack_status st = hip_enter(b, err);
    if (st) return st;
    char what[96];
    snprintf(what, sizeof what, "writing %zu bytes at offset %zu", n, offset);
    /* After the launches queued on every tack.Stream too. */
    if ((st = gpu_streams_sync(b, &hip_stream_api, &b->streams, what, err))) return st;
    hipError_t r = b->hip->MemcpyHtoDAsync((char *)handle + offset, (void *)src, n, b->stream);
    return wait_copy(b, what, "hipMemcpyHtoDAsync", r, err);
}

tack_status hip_mem_read(backend *b, const void *handle, size_t offset, void *dst, size_t n,
                         tack_error *err) {
    if (!n) return TACK_OK;
    tack_status st = hip_enter(b, err);
    if (st) return st;
    char what[96];
    snprintf(what, sizeof what, "reading %zu bytes at offset %zu", n, offset);
    if ((st = gpu_streams_sync(b, &hip_stream_api, &b->streams, what, err))) return st;
    hipError_t r = b->hip->MemcpyDtoHAsync(dst, (char *)handle + offset, n, b->stream);
    return wait_copy(b, what, "hipMemcpyDtoHAsync", r, err);
}
