/* loader.c - finds the OpenCL ICD loader at run time and fills the function
 * table (cl_api.h) once per process, and names OpenCL's error codes.
 * Opening the library at run time keeps libtack free of any OpenCL
 * dependency: where none is installed, only this backend is unavailable. */
#include "backend/backend.h"
#include "cl_api.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static opencl_api api;
static const opencl_api *loaded;
static char load_error[512];

#define INSTALL_HINT                                                                  \
    "install an ICD loader and a driver, e.g. Debian's ocl-icd-libopencl1 and "       \
    "pocl-opencl-icd"

static void load(void) {
    /* The versioned name is what the loader packages install; the bare name
     * exists only with the development package, so it comes second. */
    void *lib = dlopen("libOpenCL.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) lib = dlopen("libOpenCL.so", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        snprintf(load_error, sizeof load_error,
                 "libOpenCL.so.1 could not be loaded (" INSTALL_HINT ")");
        return;
    }
    /* Never dlclose: handles from the driver live as long as the process. */
    static const backend_symbol syms[] = {
#define SYM(n) {"cl" #n, offsetof(opencl_api, n)}
        SYM(GetPlatformIDs),     SYM(GetPlatformInfo),      SYM(GetDeviceIDs),
        SYM(GetDeviceInfo),      SYM(CreateContext),        SYM(ReleaseContext),
        SYM(CreateCommandQueue), SYM(ReleaseCommandQueue),  SYM(CreateBuffer),
        SYM(ReleaseMemObject),   SYM(EnqueueWriteBuffer),   SYM(EnqueueReadBuffer),
        SYM(CreateProgramWithSource), SYM(CreateProgramWithBinary), SYM(BuildProgram),
        SYM(GetProgramInfo),     SYM(GetProgramBuildInfo),  SYM(RetainProgram),
        SYM(ReleaseProgram),
        SYM(CreateKernel),       SYM(ReleaseKernel),        SYM(SetKernelArg),
        SYM(EnqueueNDRangeKernel), SYM(Finish),
        SYM(Flush),              SYM(GetEventInfo),         SYM(ReleaseEvent),
        SYM(WaitForEvents),      SYM(EnqueueMarkerWithWaitList),
        SYM(EnqueueBarrierWithWaitList), SYM(GetEventProfilingInfo),
#undef SYM
    };
    const char *missing = backend_fill_symbols(lib, &api, syms, sizeof syms / sizeof syms[0]);
    if (missing) {
        snprintf(load_error, sizeof load_error,
                 "the OpenCL library has no %s (it is older than OpenCL 1.2; " INSTALL_HINT ")",
                 missing);
        return;
    }
    loaded = &api;
}

const opencl_api *opencl_api_load(const char **why) {
    pthread_once(&load_once, load);
    if (why) *why = loaded ? NULL : load_error;
    return loaded;
}

const char *opencl_error_name(cl_int code) {
    switch (code) {
#define E(name, value) case value: return #name;
    E(CL_SUCCESS, 0)
    E(CL_DEVICE_NOT_FOUND, -1)
    E(CL_DEVICE_NOT_AVAILABLE, -2)
    E(CL_COMPILER_NOT_AVAILABLE, -3)
    E(CL_MEM_OBJECT_ALLOCATION_FAILURE, -4)
    E(CL_OUT_OF_RESOURCES, -5)
    E(CL_OUT_OF_HOST_MEMORY, -6)
    E(CL_PROFILING_INFO_NOT_AVAILABLE, -7)
    E(CL_MEM_COPY_OVERLAP, -8)
    E(CL_IMAGE_FORMAT_MISMATCH, -9)
    E(CL_IMAGE_FORMAT_NOT_SUPPORTED, -10)
    E(CL_BUILD_PROGRAM_FAILURE, -11)
    E(CL_MAP_FAILURE, -12)
    E(CL_MISALIGNED_SUB_BUFFER_OFFSET, -13)
    E(CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST, -14)
    E(CL_COMPILE_PROGRAM_FAILURE, -15)
    E(CL_LINKER_NOT_AVAILABLE, -16)
    E(CL_LINK_PROGRAM_FAILURE, -17)
    E(CL_DEVICE_PARTITION_FAILED, -18)
    E(CL_KERNEL_ARG_INFO_NOT_AVAILABLE, -19)
    E(CL_INVALID_VALUE, -30)
    E(CL_INVALID_DEVICE_TYPE, -31)
    E(CL_INVALID_PLATFORM, -32)
    E(CL_INVALID_DEVICE, -33)
    E(CL_INVALID_CONTEXT, -34)
    E(CL_INVALID_QUEUE_PROPERTIES, -35)
    E(CL_INVALID_COMMAND_QUEUE, -36)
    E(CL_INVALID_HOST_PTR, -37)
    E(CL_INVALID_MEM_OBJECT, -38)
    E(CL_INVALID_IMAGE_FORMAT_DESCRIPTOR, -39)
    E(CL_INVALID_IMAGE_SIZE, -40)
    E(CL_INVALID_SAMPLER, -41)
    E(CL_INVALID_BINARY, -42)
    E(CL_INVALID_BUILD_OPTIONS, -43)
    E(CL_INVALID_PROGRAM, -44)
    E(CL_INVALID_PROGRAM_EXECUTABLE, -45)
    E(CL_INVALID_KERNEL_NAME, -46)
    E(CL_INVALID_KERNEL_DEFINITION, -47)
    E(CL_INVALID_KERNEL, -48)
    E(CL_INVALID_ARG_INDEX, -49)
    E(CL_INVALID_ARG_VALUE, -50)
    E(CL_INVALID_ARG_SIZE, -51)
    E(CL_INVALID_KERNEL_ARGS, -52)
    E(CL_INVALID_WORK_DIMENSION, -53)
    E(CL_INVALID_WORK_GROUP_SIZE, -54)
    E(CL_INVALID_WORK_ITEM_SIZE, -55)
    E(CL_INVALID_GLOBAL_OFFSET, -56)
    E(CL_INVALID_EVENT_WAIT_LIST, -57)
    E(CL_INVALID_EVENT, -58)
    E(CL_INVALID_OPERATION, -59)
    E(CL_INVALID_GL_OBJECT, -60)
    E(CL_INVALID_BUFFER_SIZE, -61)
    E(CL_INVALID_MIP_LEVEL, -62)
    E(CL_INVALID_GLOBAL_WORK_SIZE, -63)
    E(CL_INVALID_PROPERTY, -64)
    E(CL_INVALID_IMAGE_DESCRIPTOR, -65)
    E(CL_INVALID_COMPILER_OPTIONS, -66)
    E(CL_INVALID_LINKER_OPTIONS, -67)
    E(CL_INVALID_DEVICE_PARTITION_COUNT, -68)
    E(CL_INVALID_PIPE_SIZE, -69)
    E(CL_INVALID_DEVICE_QUEUE, -70)
    E(CL_INVALID_SPEC_ID, -71)
    E(CL_MAX_SIZE_RESTRICTION_EXCEEDED, -72)
    /* Extensions' codes that a loader or driver on Linux can return. */
    E(CL_INVALID_GL_SHAREGROUP_REFERENCE_KHR, -1000)
    E(CL_PLATFORM_NOT_FOUND_KHR, -1001)
    E(CL_INVALID_D3D10_DEVICE_KHR, -1002)
    E(CL_INVALID_D3D10_RESOURCE_KHR, -1003)
    E(CL_D3D10_RESOURCE_ALREADY_ACQUIRED_KHR, -1004)
    E(CL_D3D10_RESOURCE_NOT_ACQUIRED_KHR, -1005)
    E(CL_INVALID_D3D11_DEVICE_KHR, -1006)
    E(CL_INVALID_D3D11_RESOURCE_KHR, -1007)
    E(CL_D3D11_RESOURCE_ALREADY_ACQUIRED_KHR, -1008)
    E(CL_D3D11_RESOURCE_NOT_ACQUIRED_KHR, -1009)
    E(CL_INVALID_DX9_MEDIA_ADAPTER_KHR, -1010)
    E(CL_INVALID_DX9_MEDIA_SURFACE_KHR, -1011)
    E(CL_DX9_MEDIA_SURFACE_ALREADY_ACQUIRED_KHR, -1012)
    E(CL_DX9_MEDIA_SURFACE_NOT_ACQUIRED_KHR, -1013)
    E(CL_DEVICE_PARTITION_FAILED_EXT, -1057)
    E(CL_INVALID_PARTITION_COUNT_EXT, -1058)
    E(CL_INVALID_PARTITION_NAME_EXT, -1059)
    E(CL_EGL_RESOURCE_NOT_ACQUIRED_KHR, -1092)
    E(CL_INVALID_EGL_OBJECT_KHR, -1093)
    E(CL_INVALID_ACCELERATOR_INTEL, -1094)
    E(CL_INVALID_ACCELERATOR_TYPE_INTEL, -1095)
    E(CL_INVALID_ACCELERATOR_DESCRIPTOR_INTEL, -1096)
    E(CL_ACCELERATOR_TYPE_NOT_SUPPORTED_INTEL, -1097)
    E(CL_INVALID_VA_API_MEDIA_ADAPTER_INTEL, -1098)
    E(CL_INVALID_VA_API_MEDIA_SURFACE_INTEL, -1099)
    E(CL_VA_API_MEDIA_SURFACE_ALREADY_ACQUIRED_INTEL, -1100)
    E(CL_VA_API_MEDIA_SURFACE_NOT_ACQUIRED_INTEL, -1101)
    E(CL_COMMAND_TERMINATED_ITSELF_WITH_FAILURE_ARM, -1108)
    E(CL_CONTEXT_TERMINATED_KHR, -1121)
    E(CL_INVALID_COMMAND_BUFFER_KHR, -1138)
    E(CL_INVALID_SYNC_POINT_WAIT_LIST_KHR, -1139)
    E(CL_INCOMPATIBLE_COMMAND_QUEUE_KHR, -1140)
    E(CL_INVALID_MUTABLE_COMMAND_KHR, -1141)
    E(CL_INVALID_SEMAPHORE_KHR, -1142)
#undef E
    default: return "an unknown OpenCL error";
    }
}
