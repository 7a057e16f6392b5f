/*
 * ze_api.h - the parts of oneAPI Level Zero (libze_loader) the Level Zero
 * backend uses, declared here rather than taken from <level_zero/ze_api.h>
 * so that libtack builds where no Level Zero is installed; the loader is
 * opened with dlopen at run time (loader.c).  Values and layouts are the
 * specification's (1.x, unchanged since 1.0 for what is used here).
 */
#ifndef TACK_ZE_API_H
#define TACK_ZE_API_H

#include <stddef.h>
#include <stdint.h>

typedef int ze_result_t;
typedef struct _ze_driver_handle_t *ze_driver_handle_t;
typedef struct _ze_device_handle_t *ze_device_handle_t;
typedef struct _ze_context_handle_t *ze_context_handle_t;
typedef struct _ze_command_list_handle_t *ze_command_list_handle_t;
typedef struct _ze_module_handle_t *ze_module_handle_t;
typedef struct _ze_module_build_log_handle_t *ze_module_build_log_handle_t;
typedef struct _ze_kernel_handle_t *ze_kernel_handle_t;
typedef struct _ze_event_handle_t *ze_event_handle_t;

#define ZE_RESULT_SUCCESS 0
#define ZE_RESULT_ERROR_DEVICE_LOST 0x70000001
#define ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY 0x70000002
#define ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY 0x70000003
#define ZE_RESULT_ERROR_MODULE_BUILD_FAILURE 0x70000004
#define ZE_RESULT_ERROR_UNINITIALIZED 0x78000001
#define ZE_RESULT_ERROR_UNSUPPORTED_VERSION 0x78000002
#define ZE_RESULT_ERROR_UNSUPPORTED_FEATURE 0x78000003
#define ZE_RESULT_ERROR_INVALID_ARGUMENT 0x78000004
#define ZE_RESULT_ERROR_UNSUPPORTED_SIZE 0x78000009
#define ZE_RESULT_ERROR_INVALID_NATIVE_BINARY 0x7800000f
#define ZE_RESULT_ERROR_INVALID_KERNEL_NAME 0x78000011
#define ZE_RESULT_ERROR_INVALID_GROUP_SIZE_DIMENSION 0x78000013
#define ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_SIZE 0x78000016
#define ZE_RESULT_ERROR_UNKNOWN 0x7ffffffe

#define ZE_INIT_FLAG_GPU_ONLY 1u
#define ZE_DEVICE_TYPE_GPU 1

#define ZE_STRUCTURE_TYPE_DRIVER_PROPERTIES 0x1
#define ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES 0x3
#define ZE_STRUCTURE_TYPE_DEVICE_COMPUTE_PROPERTIES 0x4
#define ZE_STRUCTURE_TYPE_DEVICE_MODULE_PROPERTIES 0x5
#define ZE_STRUCTURE_TYPE_DEVICE_MEMORY_PROPERTIES 0x7
#define ZE_STRUCTURE_TYPE_CONTEXT_DESC 0xd
#define ZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC 0xe
#define ZE_STRUCTURE_TYPE_DEVICE_MEM_ALLOC_DESC 0x15
#define ZE_STRUCTURE_TYPE_MODULE_DESC 0x1b
#define ZE_STRUCTURE_TYPE_KERNEL_DESC 0x1d

#define ZE_MODULE_FORMAT_IL_SPIRV 0
#define ZE_MODULE_FORMAT_NATIVE 1
/* An immediate command list in this mode returns from each append when
 * the work has finished. */
#define ZE_COMMAND_QUEUE_MODE_SYNCHRONOUS 1
/* ... and in this one once it is queued: zeCommandListHostSynchronize
 * waits for what was appended. */
#define ZE_COMMAND_QUEUE_MODE_ASYNCHRONOUS 2
#define ZE_DEVICE_MODULE_FLAG_FP16 1u
#define ZE_DEVICE_MODULE_FLAG_FP64 2u
#define ZE_DEVICE_MODULE_FLAG_INT64_ATOMICS 4u

typedef struct ze_driver_properties_t {
    int stype;
    void *pNext;
    uint8_t uuid[16];
    uint32_t driverVersion;
} ze_driver_properties_t;

typedef struct ze_device_properties_t {
    int stype;
    void *pNext;
    int type;
    uint32_t vendorId, deviceId, flags, subdeviceId, coreClockRate;
    uint64_t maxMemAllocSize;
    uint32_t maxHardwareContexts, maxCommandQueuePriority, numThreadsPerEU, physicalEUSimdWidth,
        numEUsPerSubslice, numSubslicesPerSlice, numSlices;
    uint64_t timerResolution;
    uint32_t timestampValidBits, kernelTimestampValidBits;
    uint8_t uuid[16];
    char name[256];
} ze_device_properties_t;

typedef struct ze_device_compute_properties_t {
    int stype;
    void *pNext;
    uint32_t maxTotalGroupSize, maxGroupSizeX, maxGroupSizeY, maxGroupSizeZ;
    uint32_t maxGroupCountX, maxGroupCountY, maxGroupCountZ;
    uint32_t maxSharedLocalMemory, numSubGroupSizes, subGroupSizes[8];
} ze_device_compute_properties_t;

typedef struct ze_device_module_properties_t {
    int stype;
    void *pNext;
    uint32_t spirvVersionSupported, flags, fp16flags, fp32flags, fp64flags;
    uint32_t maxArgumentsSize, printfBufferSize;
    uint8_t nativeKernelSupported[16];
} ze_device_module_properties_t;

typedef struct ze_device_memory_properties_t {
    int stype;
    void *pNext;
    uint32_t flags, maxClockRate, maxBusWidth;
    uint64_t totalSize;
    char name[256];
} ze_device_memory_properties_t;

typedef struct ze_context_desc_t {
    int stype;
    const void *pNext;
    uint32_t flags;
} ze_context_desc_t;

typedef struct ze_command_queue_desc_t {
    int stype;
    const void *pNext;
    uint32_t ordinal, index, flags;
    int mode, priority;
} ze_command_queue_desc_t;

typedef struct ze_module_desc_t {
    int stype;
    const void *pNext;
    int format;
    size_t inputSize;
    const uint8_t *pInputModule;
    const char *pBuildFlags;
    const void *pConstants;
} ze_module_desc_t;

typedef struct ze_kernel_desc_t {
    int stype;
    const void *pNext;
    uint32_t flags;
    const char *pKernelName;
} ze_kernel_desc_t;

typedef struct ze_device_mem_alloc_desc_t {
    int stype;
    const void *pNext;
    uint32_t flags, ordinal;
} ze_device_mem_alloc_desc_t;

typedef struct ze_group_count_t {
    uint32_t groupCountX, groupCountY, groupCountZ;
} ze_group_count_t;

/* The loader's functions, one table filled by loader.c (or by a test). */
typedef struct ze_api {
    ze_result_t (*Init)(uint32_t flags);
    ze_result_t (*DriverGet)(uint32_t *count, ze_driver_handle_t *drivers);
    ze_result_t (*DriverGetProperties)(ze_driver_handle_t d, ze_driver_properties_t *p);
    ze_result_t (*DeviceGet)(ze_driver_handle_t d, uint32_t *count, ze_device_handle_t *devices);
    ze_result_t (*DeviceGetProperties)(ze_device_handle_t d, ze_device_properties_t *p);
    ze_result_t (*DeviceGetComputeProperties)(ze_device_handle_t d, ze_device_compute_properties_t *p);
    ze_result_t (*DeviceGetModuleProperties)(ze_device_handle_t d, ze_device_module_properties_t *p);
    ze_result_t (*DeviceGetMemoryProperties)(ze_device_handle_t d, uint32_t *count,
                                             ze_device_memory_properties_t *p);
    ze_result_t (*ContextCreate)(ze_driver_handle_t d, const ze_context_desc_t *desc,
                                 ze_context_handle_t *ctx);
    ze_result_t (*ContextDestroy)(ze_context_handle_t ctx);
    ze_result_t (*CommandListCreateImmediate)(ze_context_handle_t ctx, ze_device_handle_t d,
                                              const ze_command_queue_desc_t *desc,
                                              ze_command_list_handle_t *list);
    ze_result_t (*CommandListDestroy)(ze_command_list_handle_t list);
    ze_result_t (*CommandListAppendLaunchKernel)(ze_command_list_handle_t list, ze_kernel_handle_t k,
                                                 const ze_group_count_t *groups,
                                                 ze_event_handle_t signal, uint32_t nwait,
                                                 ze_event_handle_t *waits);
    ze_result_t (*CommandListAppendMemoryCopy)(ze_command_list_handle_t list, void *dst,
                                               const void *src, size_t n, ze_event_handle_t signal,
                                               uint32_t nwait, ze_event_handle_t *waits);
    ze_result_t (*ModuleCreate)(ze_context_handle_t ctx, ze_device_handle_t d,
                                const ze_module_desc_t *desc, ze_module_handle_t *m,
                                ze_module_build_log_handle_t *log);
    ze_result_t (*ModuleDestroy)(ze_module_handle_t m);
    ze_result_t (*ModuleBuildLogGetString)(ze_module_build_log_handle_t log, size_t *size, char *text);
    ze_result_t (*ModuleBuildLogDestroy)(ze_module_build_log_handle_t log);
    ze_result_t (*ModuleGetNativeBinary)(ze_module_handle_t m, size_t *size, uint8_t *bytes);
    ze_result_t (*KernelCreate)(ze_module_handle_t m, const ze_kernel_desc_t *desc,
                                ze_kernel_handle_t *k);
    ze_result_t (*KernelDestroy)(ze_kernel_handle_t k);
    ze_result_t (*KernelSetGroupSize)(ze_kernel_handle_t k, uint32_t x, uint32_t y, uint32_t z);
    ze_result_t (*KernelSetArgumentValue)(ze_kernel_handle_t k, uint32_t index, size_t size,
                                          const void *value);
    ze_result_t (*MemAllocDevice)(ze_context_handle_t ctx, const ze_device_mem_alloc_desc_t *desc,
                                  size_t size, size_t alignment, ze_device_handle_t d, void **ptr);
    ze_result_t (*MemFree)(ze_context_handle_t ctx, void *ptr);
    /* Optional (Level Zero 1.6): NULL keeps the list synchronous. */
    ze_result_t (*CommandListHostSynchronize)(ze_command_list_handle_t list, uint64_t timeout);
} ze_api;

/* loader.c: the table, loaded once per process (thread-safe); NULL when
 * the loader or one of its functions is missing, *why (static text) then
 * saying what to install.  A test may stand in a table of its own
 * (ze_set_for_testing; NULL goes back to the real one). */
const ze_api *ze_load(const char **why);
void ze_set_for_testing(const ze_api *api);
/* "ZE_RESULT_ERROR_DEVICE_LOST" (or the number, for one not listed). */
const char *ze_result_name(ze_result_t r, char *buf, size_t cap);

#endif
