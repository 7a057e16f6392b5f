/*
 * hip_api.h - the parts of the HIP runtime (libamdhip64) and of hipRTC (its
 * calls: gpu/rtc.h)
 * the HIP backend uses, declared here rather than taken from
 * <hip/hip_runtime_api.h> and <hip/hiprtc.h>, so that libtack builds where
 * no ROCm is installed.  Both are opened with dlopen at run time
 * (loader.c): hipRTC alone (ROCm 5 ships it inside libamdhip64, ROCm 6 as
 * libhiprtc) makes code objects on a machine without an AMD GPU.
 *
 * Values follow ROCm 5 and 6 (the attribute numbers are the same in both);
 * hipDeviceProp_t's layout is not, so only its gcnArchName is read, at the
 * offset of the layout the entry point found has (loader.c).
 */
#ifndef TACK_HIP_API_H
#define TACK_HIP_API_H

#include <stddef.h>
#include <stdint.h>

typedef int hipError_t;
typedef int hipDevice_t;
typedef int hipDeviceAttribute_t;
typedef struct ihipModule_t *hipModule_t;
typedef struct ihipModuleSymbol_t *hipFunction_t;
typedef struct ihipStream_t *hipStream_t;
typedef struct ihipEvent_t *hipEvent_t;
typedef void *hipDeviceptr_t;

#define hipSuccess 0
#define hipErrorInvalidValue 1
#define hipErrorOutOfMemory 2
#define hipErrorNotInitialized 3
#define hipErrorInsufficientDriver 35
#define hipErrorNoDevice 100
#define hipErrorInvalidDevice 101
#define hipErrorInvalidImage 200
#define hipErrorNoBinaryForGpu 209
#define hipErrorInvalidKernelFile 218
#define hipErrorNotFound 500
#define hipErrorIllegalAddress 700
#define hipErrorLaunchOutOfResources 701
#define hipErrorLaunchFailure 719

#define hipDeviceAttributeMaxBlockDimX 26
#define hipDeviceAttributeMaxBlockDimY 27
#define hipDeviceAttributeMaxBlockDimZ 28
#define hipDeviceAttributeMaxGridDimX 29
#define hipDeviceAttributeMaxGridDimY 30
#define hipDeviceAttributeMaxGridDimZ 31
#define hipDeviceAttributeMaxTexture3DWidth 49
#define hipDeviceAttributeMaxTexture3DHeight 50
#define hipDeviceAttributeMaxTexture3DDepth 51
#define hipDeviceAttributeMaxThreadsPerBlock 56
#define hipDeviceAttributeMultiprocessorCount 63
#define hipDeviceAttributeMaxSharedMemoryPerBlock 74
#define hipDeviceAttributeWarpSize 87

/* hipStreamCreateWithFlags: no implicit ordering with the null stream. */
#define hipStreamNonBlocking 0x1

/* Bytes enough for any version's hipDeviceProp_t (ROCm 6's is 1.5 KB). */
#define HIP_PROPS_BYTES 8192

/* The runtime's functions, one table filled by loader.c (or by a test). */
typedef struct hip_runtime_api {
    hipError_t (*Init)(unsigned int flags);
    hipError_t (*DriverGetVersion)(int *version);
    hipError_t (*GetDeviceCount)(int *count);
    hipError_t (*DeviceGet)(hipDevice_t *dev, int ordinal);
    hipError_t (*DeviceGetName)(char *name, int len, hipDevice_t dev);
    hipError_t (*DeviceGetAttribute)(int *value, hipDeviceAttribute_t attr, int device);
    hipError_t (*DeviceTotalMem)(size_t *bytes, hipDevice_t dev);
    /* hipGetDeviceProperties (ROCm 5) or hipGetDevicePropertiesR0600
     * (ROCm 6), writing at most HIP_PROPS_BYTES; gcnArchName ("gfx90a:
     * sramecc+:xnack-") is a char[256] at props_arch_offset. */
    hipError_t (*GetDeviceProperties)(void *props, int device);
    size_t props_arch_offset;
    hipError_t (*GetDevice)(int *device);
    hipError_t (*SetDevice)(int device);
    hipError_t (*DeviceSynchronize)(void);
    hipError_t (*ModuleLoadData)(hipModule_t *module, const void *image);
    hipError_t (*ModuleUnload)(hipModule_t module);
    hipError_t (*ModuleGetFunction)(hipFunction_t *f, hipModule_t module, const char *name);
    hipError_t (*Malloc)(void **ptr, size_t bytes);
    hipError_t (*Free)(void *ptr);
    hipError_t (*ModuleLaunchKernel)(hipFunction_t f, unsigned int gridX, unsigned int gridY,
                                     unsigned int gridZ, unsigned int blockX,
                                     unsigned int blockY, unsigned int blockZ,
                                     unsigned int sharedMemBytes, hipStream_t stream,
                                     void **kernelParams, void **extra);
    const char *(*GetErrorName)(hipError_t error);
    const char *(*GetErrorString)(hipError_t error);
    hipError_t (*StreamCreateWithFlags)(hipStream_t *stream, unsigned int flags);
    hipError_t (*StreamDestroy)(hipStream_t stream);
    hipError_t (*StreamSynchronize)(hipStream_t stream);
    hipError_t (*StreamWaitEvent)(hipStream_t stream, hipEvent_t event, unsigned int flags);
    hipError_t (*EventCreate)(hipEvent_t *event); /* timed */
    hipError_t (*EventRecord)(hipEvent_t event, hipStream_t stream);
    hipError_t (*EventSynchronize)(hipEvent_t event);
    hipError_t (*EventElapsedTime)(float *ms, hipEvent_t start, hipEvent_t stop);
    hipError_t (*EventDestroy)(hipEvent_t event);
    hipError_t (*MemcpyHtoDAsync)(hipDeviceptr_t dst, void *src, size_t bytes, hipStream_t stream);
    hipError_t (*MemcpyDtoHAsync)(void *dst, hipDeviceptr_t src, size_t bytes, hipStream_t stream);
} hip_runtime_api;

/* loader.c: each table loaded once per process (thread-safe); NULL when the
 * library or one of its functions is missing, *why (static text) then says
 * what and what to install.  A test may stand in a runtime of its own
 * (hip_runtime_set_for_testing; NULL goes back to the real one): devices
 * opened meanwhile keep the table they were opened with. */
const hip_runtime_api *hip_runtime_load(const char **why);
const struct gpu_rtc_api *hip_rtc_load(const char **why); /* hiprtc.c, gpu/rtc.h */
void hip_runtime_set_for_testing(const hip_runtime_api *api);
/* The path hipRTC was loaded from ("" if it was not). */
const char *hip_rtc_path(void);

/* The code-object ISAs ROCm's code object manager (comgr) knows, as
 * "gfx90a" names: hipRTC 5.x aborts the process on any other, so names
 * are checked against this list first.  0 when comgr cannot be asked; *n
 * is then 0. */
int hip_known_isas(const char *const **names, int *n);

/* "hipErrorOutOfMemory" (the runtime's own name when it has one). */
const char *hip_error_name(const hip_runtime_api *hip, hipError_t code);

#endif
