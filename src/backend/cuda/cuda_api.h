/*
 * cuda_api.h - the parts of the CUDA driver API (libcuda.so.1) and of NVRTC
 * (libnvrtc.so.*; its calls: gpu/rtc.h) the CUDA backend uses, declared here rather than taken
 * from <cuda.h> and <nvrtc.h>, so that libtack builds where no CUDA toolkit
 * is installed.  Both libraries are opened with dlopen at run time
 * (loader.c): where the driver is missing only this backend is
 * unavailable, and where NVRTC is installed without a driver (a build
 * machine) kernels still compile to PTX offline.
 *
 * Types, constants and signatures follow cuda.h (API version 3020 and
 * newer: the _v2 entry points, 64-bit CUdeviceptr) and nvrtc.h.
 */
#ifndef TACK_CUDA_API_H
#define TACK_CUDA_API_H

#include <stddef.h>
#include <stdint.h>

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUstream_st *CUstream;
typedef struct CUevent_st *CUevent;
typedef int CUdevice_attribute;
typedef int CUjit_option;
typedef struct CUarray_st *CUarray;
typedef unsigned long long CUtexObject;

#define CUDA_SUCCESS 0
#define CUDA_ERROR_INVALID_VALUE 1
#define CUDA_ERROR_OUT_OF_MEMORY 2
#define CUDA_ERROR_NOT_INITIALIZED 3
#define CUDA_ERROR_INSUFFICIENT_DRIVER 35
#define CUDA_ERROR_NO_DEVICE 100
#define CUDA_ERROR_INVALID_DEVICE 101
#define CUDA_ERROR_INVALID_IMAGE 200
#define CUDA_ERROR_INVALID_PTX 218
#define CUDA_ERROR_UNSUPPORTED_PTX_VERSION 222
#define CUDA_ERROR_NOT_FOUND 500
#define CUDA_ERROR_ILLEGAL_ADDRESS 700
#define CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES 701
#define CUDA_ERROR_LAUNCH_FAILED 719

#define CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK 1
#define CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X 2
#define CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y 3
#define CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z 4
#define CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X 5
#define CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y 6
#define CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z 7
#define CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK 8
#define CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT 16
#define CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_WIDTH 24
#define CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_HEIGHT 25
#define CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_DEPTH 26
#define CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR 75
#define CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR 76

#define CU_JIT_ERROR_LOG_BUFFER 5
#define CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES 6

/* cuStreamCreate: work on the stream does not wait for the legacy default
 * stream (nor it for the stream). */
#define CU_STREAM_NON_BLOCKING 0x1
/* cuEventCreate: a timed event (Event.elapsed). */
#define CU_EVENT_DEFAULT 0x0

/* Textures: a 3-D CUDA array of one float channel, a texture object over
 * it with trilinear filtering, clamp to edge and normalized coordinates. */
typedef int CUarray_format;
typedef int CUmemorytype;
typedef int CUresourcetype;
typedef int CUaddress_mode;
typedef int CUfilter_mode;
#define CU_AD_FORMAT_FLOAT 0x20
#define CU_MEMORYTYPE_DEVICE 0x02
#define CU_MEMORYTYPE_ARRAY 0x03
#define CU_RESOURCE_TYPE_ARRAY 0x00
#define CU_TR_ADDRESS_MODE_CLAMP 1
#define CU_TR_FILTER_MODE_LINEAR 1
#define CU_TRSF_NORMALIZED_COORDINATES 0x02

typedef struct CUDA_ARRAY3D_DESCRIPTOR { /* the _v2 layout */
    size_t Width, Height, Depth; /* elements along x (innermost), y, z */
    CUarray_format Format;
    unsigned int NumChannels;
    unsigned int Flags;
} CUDA_ARRAY3D_DESCRIPTOR;

typedef struct CUDA_MEMCPY3D { /* the _v2 layout */
    size_t srcXInBytes, srcY, srcZ, srcLOD;
    CUmemorytype srcMemoryType;
    const void *srcHost;
    CUdeviceptr srcDevice;
    CUarray srcArray;
    void *reserved0;
    size_t srcPitch, srcHeight;
    size_t dstXInBytes, dstY, dstZ, dstLOD;
    CUmemorytype dstMemoryType;
    void *dstHost;
    CUdeviceptr dstDevice;
    CUarray dstArray;
    void *reserved1;
    size_t dstPitch, dstHeight;
    size_t WidthInBytes, Height, Depth;
} CUDA_MEMCPY3D;

typedef struct CUDA_RESOURCE_DESC {
    CUresourcetype resType;
    union {
        struct {
            CUarray hArray;
        } array;
        struct {
            int reserved[32];
        } reserved; /* the size of the other kinds, which Tack does not use */
    } res;
    unsigned int flags;
} CUDA_RESOURCE_DESC;

typedef struct CUDA_TEXTURE_DESC {
    CUaddress_mode addressMode[3];
    CUfilter_mode filterMode;
    unsigned int flags;
    unsigned int maxAnisotropy;
    CUfilter_mode mipmapFilterMode;
    float mipmapLevelBias, minMipmapLevelClamp, maxMipmapLevelClamp;
    float borderColor[4];
    int reserved[12];
} CUDA_TEXTURE_DESC;

/* The driver's functions, one table filled by loader.c (or by a test). */
typedef struct cuda_driver_api {
    CUresult (*Init)(unsigned int flags);
    CUresult (*DriverGetVersion)(int *version);
    CUresult (*DeviceGetCount)(int *count);
    CUresult (*DeviceGet)(CUdevice *dev, int ordinal);
    CUresult (*DeviceGetName)(char *name, int len, CUdevice dev);
    CUresult (*DeviceGetAttribute)(int *value, CUdevice_attribute attrib, CUdevice dev);
    CUresult (*DeviceTotalMem)(size_t *bytes, CUdevice dev);
    CUresult (*DevicePrimaryCtxRetain)(CUcontext *ctx, CUdevice dev);
    CUresult (*DevicePrimaryCtxRelease)(CUdevice dev);
    CUresult (*CtxGetCurrent)(CUcontext *ctx);
    CUresult (*CtxSetCurrent)(CUcontext ctx);
    CUresult (*CtxSynchronize)(void);
    CUresult (*ModuleLoadDataEx)(CUmodule *module, const void *image, unsigned int numOptions,
                                 CUjit_option *options, void **optionValues);
    CUresult (*ModuleUnload)(CUmodule module);
    CUresult (*ModuleGetFunction)(CUfunction *f, CUmodule module, const char *name);
    CUresult (*MemAlloc)(CUdeviceptr *dptr, size_t bytes);
    CUresult (*MemFree)(CUdeviceptr dptr);
    CUresult (*LaunchKernel)(CUfunction f, unsigned int gridX, unsigned int gridY,
                             unsigned int gridZ, unsigned int blockX, unsigned int blockY,
                             unsigned int blockZ, unsigned int sharedMemBytes, CUstream stream,
                             void **kernelParams, void **extra);
    CUresult (*GetErrorName)(CUresult error, const char **str);
    CUresult (*GetErrorString)(CUresult error, const char **str);
    /* Each device's own stream: launches, copies and texture refreshes
     * are ordered on it. */
    CUresult (*StreamCreate)(CUstream *stream, unsigned int flags);
    CUresult (*StreamDestroy)(CUstream stream);
    CUresult (*StreamSynchronize)(CUstream stream);
    CUresult (*StreamWaitEvent)(CUstream stream, CUevent event, unsigned int flags);
    CUresult (*EventCreate)(CUevent *event, unsigned int flags);
    CUresult (*EventRecord)(CUevent event, CUstream stream);
    CUresult (*EventSynchronize)(CUevent event);
    CUresult (*EventElapsedTime)(float *ms, CUevent start, CUevent end); /* may be NULL */
    CUresult (*EventDestroy)(CUevent event);
    CUresult (*MemcpyHtoDAsync)(CUdeviceptr dst, const void *src, size_t bytes, CUstream stream);
    CUresult (*MemcpyDtoHAsync)(void *dst, CUdeviceptr src, size_t bytes, CUstream stream);
    /* Textures (texture.c). */
    CUresult (*Array3DCreate)(CUarray *array, const CUDA_ARRAY3D_DESCRIPTOR *desc);
    CUresult (*ArrayDestroy)(CUarray array);
    CUresult (*Memcpy3DAsync)(const CUDA_MEMCPY3D *copy, CUstream stream);
    CUresult (*TexObjectCreate)(CUtexObject *object, const CUDA_RESOURCE_DESC *resource,
                                const CUDA_TEXTURE_DESC *texture, const void *view);
    CUresult (*TexObjectDestroy)(CUtexObject object);
} cuda_driver_api;

/* loader.c: each table loaded once per process (thread-safe); NULL when the
 * library or one of its functions is missing, *why (static text) then says
 * what and what to install.  A test may stand in a driver of its own
 * (cuda_driver_set_for_testing; NULL goes back to the real one): devices
 * opened meanwhile keep the table they were opened with. */
const cuda_driver_api *cuda_driver_load(const char **why);
const struct gpu_rtc_api *cuda_nvrtc_load(const char **why); /* nvrtc.c, gpu/rtc.h */
void cuda_driver_set_for_testing(const cuda_driver_api *api);
/* The path NVRTC was loaded from ("" if it was not). */
const char *cuda_nvrtc_path(void);

/* "CUDA_ERROR_OUT_OF_MEMORY" (the driver's own name when it has one). */
const char *cuda_error_name(const cuda_driver_api *cu, CUresult code);

#endif
