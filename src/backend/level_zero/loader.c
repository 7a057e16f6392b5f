/* loader.c - finds the Level Zero loader at run time and fills its
 * function table (ze_api.h) once per process, and names its result
 * codes.  Opening it at run time keeps libtack free of any Level Zero
 * dependency. */
#define _DEFAULT_SOURCE
#include "backend/backend.h"
#include "backend/gpu/driver.h"
#include "ze_api.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static pthread_once_t once = PTHREAD_ONCE_INIT;
static ze_api table;
static const void *loaded; /* the table, once loaded */
static const ze_api *_Atomic override; /* a test's stand-in */
static char error[512];

static void load(void) {
    /* The versioned name first: Debian installs only it without -dev.
     * TACK_ZE_LOADER names another (the sanitizer runs name none: Intel's
     * driver opens a library with RTLD_DEEPBIND, which ASan refuses). */
    static const char *const names[] = {"libze_loader.so.1", "libze_loader.so"};
    const char *chosen = getenv("TACK_ZE_LOADER");
    void *lib = gpu_dlopen_first("TACK_ZE_LOADER", names, sizeof names / sizeof names[0]);
    if (!lib) {
        if (chosen && *chosen)
            snprintf(error, sizeof error,
                     "no Level Zero loader: TACK_ZE_LOADER names '%.300s', which could not be "
                     "loaded", chosen);
        else
            snprintf(error, sizeof error,
                     "no Level Zero loader: libze_loader.so.1 could not be loaded (install "
                     "oneAPI Level Zero's loader, e.g. Debian's libze1, and Intel's GPU driver, "
                     "e.g. intel-level-zero-gpu)");
        return;
    }
    static const backend_symbol syms[] = {
#define S(field) {"ze" #field, offsetof(ze_api, field)}
        S(Init), S(DriverGet), S(DriverGetProperties), S(DeviceGet), S(DeviceGetProperties),
        S(DeviceGetComputeProperties), S(DeviceGetModuleProperties), S(DeviceGetMemoryProperties),
        S(ContextCreate), S(ContextDestroy), S(CommandListCreateImmediate), S(CommandListDestroy),
        S(CommandListAppendLaunchKernel), S(CommandListAppendMemoryCopy), S(ModuleCreate),
        S(ModuleDestroy), S(ModuleBuildLogGetString), S(ModuleBuildLogDestroy),
        S(ModuleGetNativeBinary), S(KernelCreate), S(KernelDestroy), S(KernelSetGroupSize),
        S(KernelSetArgumentValue), S(MemAllocDevice), S(MemFree),
#undef S
    };
    const char *missing = backend_fill_symbols(lib, &table, syms, sizeof syms / sizeof syms[0]);
    if (missing) {
        snprintf(error, sizeof error, "the Level Zero loader has no %s: it is too old", missing);
        return; /* never dlclose: a half-filled table is never used */
    }
    /* An older loader lacks it: launches then wait, as appends. */
    *(void **)&table.CommandListHostSynchronize = dlsym(lib, "zeCommandListHostSynchronize");
    loaded = &table;
}

void ze_set_for_testing(const ze_api *api) { override = api; }

const ze_api *ze_load(const char **why) {
    return gpu_table_load(override, &once, load, &loaded, error, why);
}

const char *ze_result_name(ze_result_t r, char *buf, size_t cap) {
    switch (r) {
    case ZE_RESULT_SUCCESS: return "ZE_RESULT_SUCCESS";
    case ZE_RESULT_ERROR_DEVICE_LOST: return "ZE_RESULT_ERROR_DEVICE_LOST";
    case ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY: return "ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY";
    case ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY: return "ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY";
    case ZE_RESULT_ERROR_MODULE_BUILD_FAILURE: return "ZE_RESULT_ERROR_MODULE_BUILD_FAILURE";
    case ZE_RESULT_ERROR_UNINITIALIZED: return "ZE_RESULT_ERROR_UNINITIALIZED";
    case ZE_RESULT_ERROR_UNSUPPORTED_VERSION: return "ZE_RESULT_ERROR_UNSUPPORTED_VERSION";
    case ZE_RESULT_ERROR_UNSUPPORTED_FEATURE: return "ZE_RESULT_ERROR_UNSUPPORTED_FEATURE";
    case ZE_RESULT_ERROR_INVALID_ARGUMENT: return "ZE_RESULT_ERROR_INVALID_ARGUMENT";
    case ZE_RESULT_ERROR_UNSUPPORTED_SIZE: return "ZE_RESULT_ERROR_UNSUPPORTED_SIZE";
    case ZE_RESULT_ERROR_INVALID_NATIVE_BINARY: return "ZE_RESULT_ERROR_INVALID_NATIVE_BINARY";
    case ZE_RESULT_ERROR_INVALID_KERNEL_NAME: return "ZE_RESULT_ERROR_INVALID_KERNEL_NAME";
    case ZE_RESULT_ERROR_INVALID_GROUP_SIZE_DIMENSION:
        return "ZE_RESULT_ERROR_INVALID_GROUP_SIZE_DIMENSION";
    case ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_SIZE:
        return "ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_SIZE";
    case ZE_RESULT_ERROR_UNKNOWN: return "ZE_RESULT_ERROR_UNKNOWN";
    default: snprintf(buf, cap, "ze_result_t 0x%x", (unsigned)r); return buf;
    }
}
