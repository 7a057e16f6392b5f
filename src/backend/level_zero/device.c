/* device.c - opens one Level Zero device (the GPUs of every driver the
 * loader finds, in order), reads what it can do, makes its context and
 * its immediate command list, and manages its memory. */
#include "level_zero.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/gpu/dialect.h"
#include "backend/gpu/gpu.h"

#define MAX_DRIVERS 16
#define MAX_DEVICES 64

tack_status l0_fail(tack_error *err, const char *what, const char *call, ze_result_t r) {
    char buf[48];
    tack_status st = r == ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY ||
                             r == ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY
                         ? TACK_ERR_NOMEM
                         : TACK_ERR_DEVICE;
    return gpu_fail(err, st, what, call, ze_result_name(r, buf, sizeof buf), NULL);
}

/* Every GPU of every driver, in order; TACK_ERR_DEVICE saying what is
 * missing when there is none. */
static tack_status find_devices(const char *spec, const ze_api **out, ze_driver_handle_t *drv,
                                ze_device_handle_t *dev, int *count, tack_error *err) {
    const char *why;
    const ze_api *ze = ze_load(&why);
    *out = ze;
    *count = 0;
    if (!ze) return backend_error(err, TACK_ERR_DEVICE, "tack.device(\"%s\"): %s", spec, why);
    char buf[48];
    ze_result_t r = ze->Init(ZE_INIT_FLAG_GPU_ONLY);
    if (r != ZE_RESULT_SUCCESS)
        return backend_error(err, TACK_ERR_DEVICE,
                             "tack.device(\"%s\"): no Level Zero device: the loader finds no Intel "
                             "GPU driver or no GPU (zeInit: %s)",
                             spec, ze_result_name(r, buf, sizeof buf));
    uint32_t nd = MAX_DRIVERS;
    ze_driver_handle_t drivers[MAX_DRIVERS];
    char what[64];
    snprintf(what, sizeof what, "tack.device(\"%s\")", spec);
    if ((r = ze->DriverGet(&nd, drivers)) != ZE_RESULT_SUCCESS)
        return l0_fail(err, what, "zeDriverGet", r);
    for (uint32_t i = 0; i < nd && i < MAX_DRIVERS; i++) {
        uint32_t n = (uint32_t)(MAX_DEVICES - *count);
        if (!n || ze->DeviceGet(drivers[i], &n, dev + *count) != ZE_RESULT_SUCCESS) continue;
        for (uint32_t k = 0; k < n; k++) drv[*count + k] = drivers[i];
        *count += (int)n;
    }
    if (*count <= 0)
        return backend_error(err, TACK_ERR_DEVICE,
                             "tack.device(\"%s\"): no Level Zero device: the drivers find no GPU",
                             spec);
    return TACK_OK;
}

static tack_status read_caps(backend *b, tack_error *err) {
    const ze_api *ze = b->ze;
    backend_caps *c = &b->caps;
    memset(c, 0, sizeof *c);
    ze_device_properties_t p = {.stype = ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES};
    ze_device_compute_properties_t cp = {.stype = ZE_STRUCTURE_TYPE_DEVICE_COMPUTE_PROPERTIES};
    ze_device_module_properties_t mp = {.stype = ZE_STRUCTURE_TYPE_DEVICE_MODULE_PROPERTIES};
    ze_driver_properties_t dp = {.stype = ZE_STRUCTURE_TYPE_DRIVER_PROPERTIES};
    ze_result_t r;
    if ((r = ze->DeviceGetProperties(b->device, &p)) != ZE_RESULT_SUCCESS)
        return l0_fail(err, "opening a Level Zero device", "zeDeviceGetProperties", r);
    memcpy(b->name, p.name, sizeof b->name);
    b->name[sizeof b->name - 1] = 0;
    if ((r = ze->DeviceGetComputeProperties(b->device, &cp)) != ZE_RESULT_SUCCESS)
        return l0_fail(err, b->name, "zeDeviceGetComputeProperties", r);
    if ((r = ze->DeviceGetModuleProperties(b->device, &mp)) != ZE_RESULT_SUCCESS)
        return l0_fail(err, b->name, "zeDeviceGetModuleProperties", r);
    if (ze->DriverGetProperties(b->driver, &dp) == ZE_RESULT_SUCCESS)
        b->driver_version = dp.driverVersion;
    uint32_t nmem = 4;
    ze_device_memory_properties_t mem[4];
    for (int i = 0; i < 4; i++)
        mem[i] = (ze_device_memory_properties_t){.stype = ZE_STRUCTURE_TYPE_DEVICE_MEMORY_PROPERTIES};
    if ((r = ze->DeviceGetMemoryProperties(b->device, &nmem, mem)) != ZE_RESULT_SUCCESS)
        return l0_fail(err, b->name, "zeDeviceGetMemoryProperties", r);
    uint64_t total = 0;
    for (uint32_t i = 0; i < nmem && i < 4; i++) total += mem[i].totalSize;

    b->device_id = p.deviceId;
    snprintf(b->ocloc_device, sizeof b->ocloc_device, "0x%04x", p.deviceId);
    b->eu_count = (int)(p.numSlices * p.numSubslicesPerSlice * p.numEUsPerSubslice);
    if (b->eu_count < 1) b->eu_count = 1;
    uint32_t size[3] = {cp.maxGroupSizeX, cp.maxGroupSizeY, cp.maxGroupSizeZ};
    uint32_t groups[3] = {cp.maxGroupCountX, cp.maxGroupCountY, cp.maxGroupCountZ};
    for (int d = 0; d < 3; d++) {
        b->max_group[d] = size[d] ? size[d] : 1;
        b->max_groups[d] = groups[d] ? groups[d] : 1;
        c->max_grid[d] = (int64_t)b->max_group[d] * b->max_groups[d];
    }
    c->host_memory = 0;
    c->locked_dispatch = 1; /* a kernel object holds its arguments */
    c->fp64 = (mp.flags & ZE_DEVICE_MODULE_FLAG_FP64) != 0;
    c->atomics64 = (mp.flags & ZE_DEVICE_MODULE_FLAG_INT64_ATOMICS) != 0;
    c->images = 0; /* textures are sampled in software */
    c->hardware_texture_filtering = 0;
    c->local_mem_bytes = cp.maxSharedLocalMemory;
    c->max_workgroup = cp.maxTotalGroupSize ? cp.maxTotalGroupSize : 1;
    c->global_mem_bytes = total > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)total;
    c->max_alloc_bytes = p.maxMemAllocSize && p.maxMemAllocSize < (uint64_t)INT64_MAX
                             ? (int64_t)p.maxMemAllocSize
                             : c->global_mem_bytes;
    c->compute_units = b->eu_count;

    snprintf(b->description, sizeof b->description,
             "%s (Level Zero, device id %s, driver %u, %d EUs%s)", b->name, b->ocloc_device,
             b->driver_version, b->eu_count, c->fp64 ? "" : ", no fp64");
    /* What the binary and its loading depend on: the device, the driver,
     * ocloc and the options, and f64 support. */
    return gpu_target_text(&b->target, "Level Zero", err,
                           "level_zero; device=%s; id=%s; driver=%u; ocloc=%s; options=%s; fp64=%d",
                           b->name, b->ocloc_device, b->driver_version, l0_ocloc_version(),
                           gpu_dialect_opencl.build_options, c->fp64);
}

/* Caps, the context and the immediate list; l0_close undoes what got done
 * when one fails. */
static tack_status start(backend *b, tack_error *err) {
    const ze_api *ze = b->ze;
    tack_status st = read_caps(b, err);
    if (st) return st;
    ze_context_desc_t cd = {.stype = ZE_STRUCTURE_TYPE_CONTEXT_DESC};
    ze_result_t r = ze->ContextCreate(b->driver, &cd, &b->context);
    if (r != ZE_RESULT_SUCCESS) {
        b->context = NULL;
        return l0_fail(err, b->description, "zeContextCreate", r);
    }
    b->queued = ze->CommandListHostSynchronize != NULL;
    b->caps.queued_launch = b->queued;
    ze_command_queue_desc_t qd = {.stype = ZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC,
                                  .mode = b->queued ? ZE_COMMAND_QUEUE_MODE_ASYNCHRONOUS
                                                    : ZE_COMMAND_QUEUE_MODE_SYNCHRONOUS};
    r = ze->CommandListCreateImmediate(b->context, b->device, &qd, &b->list);
    if (r == ZE_RESULT_SUCCESS) return TACK_OK;
    b->list = NULL;
    return l0_fail(err, b->description, "zeCommandListCreateImmediate", r);
}

struct devices_of {
    const ze_api *ze;
    const ze_device_handle_t *devices;
};

static void device_name(const void *api, int i, char *name, size_t cap) {
    const struct devices_of *all = api;
    ze_device_properties_t p = {.stype = ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES};
    if (all->ze->DeviceGetProperties(all->devices[i], &p) != ZE_RESULT_SUCCESS) return;
    p.name[sizeof p.name - 1] = 0;
    snprintf(name, cap, "%s", p.name);
}

tack_status l0_open(int index, int num_threads, backend **out, tack_error *err) {
    (void)num_threads;
    *out = NULL;
    char spec[32];
    gpu_spec(spec, "level_zero", index);
    const ze_api *ze;
    ze_driver_handle_t drivers[MAX_DEVICES];
    ze_device_handle_t devices[MAX_DEVICES];
    int count;
    tack_status st = find_devices(spec, &ze, drivers, devices, &count, err);
    if (st) return st;
    if (index < 0 || index >= count) {
        struct devices_of all = {ze, devices};
        return gpu_no_such_device(err, spec, "Level Zero", "level_zero", index, count, device_name,
                                  &all);
    }
    backend *b = calloc(1, sizeof *b);
    if (!b) return backend_error(err, TACK_ERR_NOMEM, "out of memory opening a Level Zero device");
    b->ze = ze;
    b->index = index;
    b->driver = drivers[index];
    b->device = devices[index];
    snprintf(b->description, sizeof b->description, "Level Zero device %d", index);
    if (pthread_mutex_init(&b->lock, NULL)) {
        free(b);
        return backend_error(err, TACK_ERR_NOMEM, "out of memory opening a Level Zero device");
    }
    b->lock_made = 1;
    gpu_queue_init(&b->queue);
    return gpu_open_done(b, start(b, err), out, l0_close);
}

void l0_close(backend *b) {
    if (!b) return;
    if (b->list) {
        tack_error ignored; /* nobody is left to hear a queued failure */
        l0_wait(b, "closing the device", &ignored);
        b->ze->CommandListDestroy(b->list);
    }
    if (b->context) b->ze->ContextDestroy(b->context);
    if (b->lock_made) {
        pthread_mutex_destroy(&b->lock);
        gpu_queue_destroy(&b->queue);
    }
    free(b->target);
    free(b);
}

GPU_DRIVER_ACCESSORS(l0)

/* ---- memory ------------------------------------------------------------ */

tack_status l0_mem_alloc(backend *b, size_t bytes, void **handle, tack_error *err) {
    *handle = NULL;
    if ((uint64_t)bytes > (uint64_t)b->caps.max_alloc_bytes)
        return backend_error(err, TACK_ERR_NOMEM,
                             "cannot allocate %zu bytes on %s: its largest allocation is %lld bytes",
                             bytes, b->description, (long long)b->caps.max_alloc_bytes);
    ze_device_mem_alloc_desc_t d = {.stype = ZE_STRUCTURE_TYPE_DEVICE_MEM_ALLOC_DESC};
    void *p = NULL;
    /* An empty array still gets a handle, so a handle is never NULL. */
    ze_result_t r = b->ze->MemAllocDevice(b->context, &d, bytes ? bytes : 1, 64, b->device, &p);
    if (r != ZE_RESULT_SUCCESS) {
        char what[sizeof b->description + 64];
        snprintf(what, sizeof what, "allocating %zu bytes on %s", bytes, b->description);
        return l0_fail(err, what, "zeMemAllocDevice", r);
    }
    *handle = p;
    return TACK_OK;
}

void l0_mem_free(backend *b, void *handle) {
    if (!handle) return;
    /* zeMemFree does not wait: a queued kernel may still use it. */
    tack_error ignored;
    if (gpu_queue_busy(&b->queue)) l0_wait(b, "freeing device memory", &ignored);
    b->ze->MemFree(b->context, handle);
}

/* Under b->lock: the host waits for the list. */
static ze_result_t host_sync(backend *b) {
    return b->queued ? b->ze->CommandListHostSynchronize(b->list, UINT64_MAX) : ZE_RESULT_SUCCESS;
}

tack_status l0_wait(backend *b, const char *what, tack_error *err) {
    pthread_mutex_lock(&b->lock);
    uint64_t mark = gpu_queue_mark(&b->queue);
    ze_result_t r = host_sync(b);
    pthread_mutex_unlock(&b->lock);
    tack_status st =
        r == ZE_RESULT_SUCCESS ? TACK_OK : l0_fail(err, what, "zeCommandListHostSynchronize", r);
    return gpu_queue_waited(&b->queue, mark, st, err);
}

/* One copy on the device's list, after the launches before it, waited
 * for under its lock. */
static tack_status copy(backend *b, void *dst, const void *src, size_t n, const char *dir,
                        size_t offset, tack_error *err) {
    if (!n) return TACK_OK;
    const char *call = "zeCommandListAppendMemoryCopy";
    pthread_mutex_lock(&b->lock);
    uint64_t mark = gpu_queue_mark(&b->queue);
    ze_result_t r = b->ze->CommandListAppendMemoryCopy(b->list, dst, src, n, NULL, 0, NULL);
    int waited = r == ZE_RESULT_SUCCESS;
    if (waited && (r = host_sync(b)) != ZE_RESULT_SUCCESS) call = "zeCommandListHostSynchronize";
    pthread_mutex_unlock(&b->lock);
    char what[96];
    snprintf(what, sizeof what, "%s %zu bytes at offset %zu", dir, n, offset);
    tack_status st = r == ZE_RESULT_SUCCESS ? TACK_OK : l0_fail(err, what, call, r);
    /* A refused append names no earlier launch: the list did not wait. */
    if (!waited) return st;
    return gpu_queue_waited(&b->queue, mark, st, err);
}

tack_status l0_mem_write(backend *b, void *handle, size_t offset, const void *src, size_t n,
                         tack_error *err) {
    return copy(b, (char *)handle + offset, src, n, "writing", offset, err);
}

tack_status l0_mem_read(backend *b, const void *handle, size_t offset, void *dst, size_t n,
                        tack_error *err) {
    return copy(b, dst, (const char *)handle + offset, n, "reading", offset, err);
}
