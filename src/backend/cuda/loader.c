/* loader.c - finds the CUDA driver and NVRTC at run time and fills their
 * function table (cuda_api.h) once per process, and names CUDA's error
 * codes (nvrtc.c finds NVRTC).  Opening them at run time keeps libtack free of any CUDA
 * dependency; NVRTC and the driver are separate, so PTX can be made on a
 * machine with the toolkit and no GPU. */
#define _DEFAULT_SOURCE /* dirent's d_name listing, strdup */
#include "backend/backend.h"
#include "backend/gpu/driver.h"
#include "cuda_api.h"

#include <dirent.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the driver ------------------------------------------------------- */

static pthread_once_t driver_once = PTHREAD_ONCE_INIT;
static cuda_driver_api driver;
static const void *driver_loaded; /* the table, once loaded */
static const cuda_driver_api *_Atomic driver_override; /* a test's stand-in */
static char driver_error[512];

static void load_driver(void) {
    /* Only the versioned name: the driver package installs it, and the
     * toolkit's bare libcuda.so is a link-time stub that fails at cuInit. */
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        snprintf(driver_error, sizeof driver_error,
                 "no CUDA driver: libcuda.so.1 could not be loaded (install the NVIDIA driver)");
        return;
    }
    /* The _v2 names are the 64-bit entry points cuda.h maps the plain
     * names to; the plain ones are kept for old binaries. */
    static const backend_symbol syms[] = {
#define S(field, name) {name, offsetof(cuda_driver_api, field)}
        S(Init, "cuInit"),
        S(DriverGetVersion, "cuDriverGetVersion"),
        S(DeviceGetCount, "cuDeviceGetCount"),
        S(DeviceGet, "cuDeviceGet"),
        S(DeviceGetName, "cuDeviceGetName"),
        S(DeviceGetAttribute, "cuDeviceGetAttribute"),
        S(DeviceTotalMem, "cuDeviceTotalMem_v2"),
        S(DevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain"),
        S(DevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2"),
        S(CtxGetCurrent, "cuCtxGetCurrent"),
        S(CtxSetCurrent, "cuCtxSetCurrent"),
        S(CtxSynchronize, "cuCtxSynchronize"),
        S(ModuleLoadDataEx, "cuModuleLoadDataEx"),
        S(ModuleUnload, "cuModuleUnload"),
        S(ModuleGetFunction, "cuModuleGetFunction"),
        S(MemAlloc, "cuMemAlloc_v2"),
        S(MemFree, "cuMemFree_v2"),
        S(LaunchKernel, "cuLaunchKernel"),
        S(GetErrorName, "cuGetErrorName"),
        S(GetErrorString, "cuGetErrorString"),
        S(StreamCreate, "cuStreamCreate"),
        S(StreamDestroy, "cuStreamDestroy_v2"),
        S(StreamSynchronize, "cuStreamSynchronize"),
        S(StreamWaitEvent, "cuStreamWaitEvent"),
        S(EventCreate, "cuEventCreate"),
        S(EventRecord, "cuEventRecord"),
        S(EventSynchronize, "cuEventSynchronize"),
        S(EventDestroy, "cuEventDestroy_v2"),
        S(MemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2"),
        S(MemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2"),
        S(Array3DCreate, "cuArray3DCreate_v2"),
        S(ArrayDestroy, "cuArrayDestroy"),
        S(Memcpy3DAsync, "cuMemcpy3DAsync_v2"),
        S(TexObjectCreate, "cuTexObjectCreate"),
        S(TexObjectDestroy, "cuTexObjectDestroy"),
#undef S
    };
    const char *missing = backend_fill_symbols(lib, &driver, syms, sizeof syms / sizeof syms[0]);
    if (missing) {
        snprintf(driver_error, sizeof driver_error,
                 "the CUDA driver (libcuda.so.1) has no %s: it is too old (install a newer "
                 "NVIDIA driver)",
                 missing);
        return; /* never dlclose: a half-filled table is never used */
    }
    /* CUDA 12.8 added _v2 (the same arguments); a later driver may keep
     * only it.  Neither: Event.elapsed says so. */
    void *elapsed = dlsym(lib, "cuEventElapsedTime_v2");
    if (!elapsed) elapsed = dlsym(lib, "cuEventElapsedTime");
    *(void **)&driver.EventElapsedTime = elapsed;
    driver_loaded = &driver;
}

void cuda_driver_set_for_testing(const cuda_driver_api *api) { driver_override = api; }

const cuda_driver_api *cuda_driver_load(const char **why) {
    return gpu_table_load(driver_override, &driver_once, load_driver, &driver_loaded, driver_error,
                          why);
}

/* ---- error names ------------------------------------------------------ */

const char *cuda_error_name(const cuda_driver_api *cu, CUresult code) {
    const char *name = NULL;
    if (cu && cu->GetErrorName && cu->GetErrorName(code, &name) == CUDA_SUCCESS && name)
        return name;
    /* The driver does not know it (or there is none): the common ones. */
    switch (code) {
    case CUDA_SUCCESS: return "CUDA_SUCCESS";
    case CUDA_ERROR_INVALID_VALUE: return "CUDA_ERROR_INVALID_VALUE";
    case CUDA_ERROR_OUT_OF_MEMORY: return "CUDA_ERROR_OUT_OF_MEMORY";
    case CUDA_ERROR_NOT_INITIALIZED: return "CUDA_ERROR_NOT_INITIALIZED";
    case CUDA_ERROR_INSUFFICIENT_DRIVER: return "CUDA_ERROR_INSUFFICIENT_DRIVER";
    case CUDA_ERROR_NO_DEVICE: return "CUDA_ERROR_NO_DEVICE";
    case CUDA_ERROR_INVALID_DEVICE: return "CUDA_ERROR_INVALID_DEVICE";
    case CUDA_ERROR_INVALID_IMAGE: return "CUDA_ERROR_INVALID_IMAGE";
    case CUDA_ERROR_INVALID_PTX: return "CUDA_ERROR_INVALID_PTX";
    case CUDA_ERROR_UNSUPPORTED_PTX_VERSION: return "CUDA_ERROR_UNSUPPORTED_PTX_VERSION";
    case CUDA_ERROR_NOT_FOUND: return "CUDA_ERROR_NOT_FOUND";
    case CUDA_ERROR_ILLEGAL_ADDRESS: return "CUDA_ERROR_ILLEGAL_ADDRESS";
    case CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES: return "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES";
    case CUDA_ERROR_LAUNCH_FAILED: return "CUDA_ERROR_LAUNCH_FAILED";
    default: return "an unknown CUDA error";
    }
}
