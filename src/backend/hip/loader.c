/* loader.c - finds the HIP runtime, hipRTC and ROCm's code object manager
 * at run time and fills their function tables (hip_api.h) once per
 * process, and names HIP's error codes.  Opening them at run time keeps
 * libtack free of any ROCm dependency. */
#define _DEFAULT_SOURCE
#include "backend/backend.h"
#include "backend/gpu/driver.h"
#include "hip_api.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The runtime library: ROCm 6 and 5 by their versioned names (Debian
 * installs only those without the -dev package), then the bare one. */
static void *open_runtime(void) {
    static const char *const names[] = {"libamdhip64.so.6", "libamdhip64.so.5", "libamdhip64.so"};
    return gpu_dlopen_first(NULL, names, sizeof names / sizeof names[0]);
}

/* ---- the runtime ------------------------------------------------------ */

static pthread_once_t runtime_once = PTHREAD_ONCE_INIT;
static hip_runtime_api runtime;
static const void *runtime_loaded; /* the table, once loaded */
static const hip_runtime_api *_Atomic runtime_override; /* a test's stand-in */
static char runtime_error[512];

/* gcnArchName's offset in hipDeviceProp_t: ROCm 5's layout (and ROCm 6's
 * compatibility entry point) and ROCm 6's R0600 layout. */
#define ARCH_OFFSET_R0000 396
#define ARCH_OFFSET_R0600 1160

static void load_runtime(void) {
    void *lib = open_runtime();
    if (!lib) {
        snprintf(runtime_error, sizeof runtime_error,
                 "no HIP runtime: libamdhip64.so could not be loaded (install ROCm's HIP "
                 "runtime, e.g. Debian's libamdhip64-5)");
        return;
    }
    static const backend_symbol syms[] = {
#define S(field, name) {name, offsetof(hip_runtime_api, field)}
        S(Init, "hipInit"),
        S(DriverGetVersion, "hipDriverGetVersion"),
        S(GetDeviceCount, "hipGetDeviceCount"),
        S(DeviceGet, "hipDeviceGet"),
        S(DeviceGetName, "hipDeviceGetName"),
        S(DeviceGetAttribute, "hipDeviceGetAttribute"),
        S(DeviceTotalMem, "hipDeviceTotalMem"),
        S(GetDevice, "hipGetDevice"),
        S(SetDevice, "hipSetDevice"),
        S(DeviceSynchronize, "hipDeviceSynchronize"),
        S(ModuleLoadData, "hipModuleLoadData"),
        S(ModuleUnload, "hipModuleUnload"),
        S(ModuleGetFunction, "hipModuleGetFunction"),
        S(Malloc, "hipMalloc"),
        S(Free, "hipFree"),
        S(ModuleLaunchKernel, "hipModuleLaunchKernel"),
        S(GetErrorName, "hipGetErrorName"),
        S(GetErrorString, "hipGetErrorString"),
        S(StreamCreateWithFlags, "hipStreamCreateWithFlags"),
        S(StreamDestroy, "hipStreamDestroy"),
        S(StreamSynchronize, "hipStreamSynchronize"),
        S(StreamWaitEvent, "hipStreamWaitEvent"),
        S(EventCreate, "hipEventCreate"),
        S(EventRecord, "hipEventRecord"),
        S(EventSynchronize, "hipEventSynchronize"),
        S(EventElapsedTime, "hipEventElapsedTime"),
        S(EventDestroy, "hipEventDestroy"),
        S(MemcpyHtoDAsync, "hipMemcpyHtoDAsync"),
        S(MemcpyDtoHAsync, "hipMemcpyDtoHAsync"),
#undef S
    };
    const char *missing = backend_fill_symbols(lib, &runtime, syms, sizeof syms / sizeof syms[0]);
    if (missing) {
        snprintf(runtime_error, sizeof runtime_error,
                 "the HIP runtime (libamdhip64) has no %s: it is too old (ROCm 5 or newer is "
                 "needed)",
                 missing);
        return; /* never dlclose: a half-filled table is never used */
    }
    void *props = dlsym(lib, "hipGetDevicePropertiesR0600");
    runtime.props_arch_offset = ARCH_OFFSET_R0600;
    if (!props) {
        props = dlsym(lib, "hipGetDeviceProperties");
        runtime.props_arch_offset = ARCH_OFFSET_R0000;
    }
    if (!props) {
        snprintf(runtime_error, sizeof runtime_error,
                 "the HIP runtime (libamdhip64) has no hipGetDeviceProperties");
        return;
    }
    memcpy(&runtime.GetDeviceProperties, &props, sizeof props);
    runtime_loaded = &runtime;
}

void hip_runtime_set_for_testing(const hip_runtime_api *api) { runtime_override = api; }

const hip_runtime_api *hip_runtime_load(const char **why) {
    return gpu_table_load(runtime_override, &runtime_once, load_runtime, &runtime_loaded,
                          runtime_error, why);
}

/* ---- the code object manager's ISA list --------------------------------- */

#define MAX_ISAS 128
static pthread_once_t isa_once = PTHREAD_ONCE_INIT;
static const char *isa_names[MAX_ISAS];
static int isa_count, isa_known;

static void load_isas(void) {
    static const char *const names[] = {"libamd_comgr.so.3", "libamd_comgr.so.2",
                                        "libamd_comgr.so"};
    void *lib = gpu_dlopen_first(NULL, names, sizeof names / sizeof names[0]);
    if (!lib) return;
    int (*count)(size_t *) = NULL;
    int (*name)(size_t, const char **) = NULL;
    void *c = dlsym(lib, "amd_comgr_get_isa_count"), *n = dlsym(lib, "amd_comgr_get_isa_name");
    memcpy(&count, &c, sizeof c);
    memcpy(&name, &n, sizeof n);
    size_t total = 0;
    if (!count || !name || count(&total) != 0) return;
    /* "amdgcn-amd-amdhsa--gfx90a": the processor after the last '-'. */
    for (size_t i = 0; i < total && isa_count < MAX_ISAS; i++) {
        const char *s = NULL;
        if (name(i, &s) || !s) continue;
        const char *dash = strrchr(s, '-');
        isa_names[isa_count++] = dash ? dash + 1 : s;
    }
    isa_known = isa_count > 0;
}

int hip_known_isas(const char *const **names, int *n) {
    pthread_once(&isa_once, load_isas);
    *names = isa_names;
    *n = isa_count;
    return isa_known;
}

/* ---- error names ------------------------------------------------------- */

const char *hip_error_name(const hip_runtime_api *hip, hipError_t code) {
    const char *name = hip && hip->GetErrorName ? hip->GetErrorName(code) : NULL;
    if (name && *name && strcmp(name, "hipErrorUnknown")) return name;
    switch (code) {
    case hipSuccess: return "hipSuccess";
    case hipErrorInvalidValue: return "hipErrorInvalidValue";
    case hipErrorOutOfMemory: return "hipErrorOutOfMemory";
    case hipErrorNotInitialized: return "hipErrorNotInitialized";
    case hipErrorInsufficientDriver: return "hipErrorInsufficientDriver";
    case hipErrorNoDevice: return "hipErrorNoDevice";
    case hipErrorInvalidDevice: return "hipErrorInvalidDevice";
    case hipErrorInvalidImage: return "hipErrorInvalidImage";
    case hipErrorNoBinaryForGpu: return "hipErrorNoBinaryForGpu";
    case hipErrorInvalidKernelFile: return "hipErrorInvalidKernelFile";
    case hipErrorNotFound: return "hipErrorNotFound";
    case hipErrorIllegalAddress: return "hipErrorIllegalAddress";
    case hipErrorLaunchOutOfResources: return "hipErrorLaunchOutOfResources";
    case hipErrorLaunchFailure: return "hipErrorLaunchFailure";
    default: return name && *name ? name : "an unknown HIP error";
    }
}
