/*
 * cl_api.h - the part of the OpenCL 1.2 API the OpenCL backend uses,
 * declared here rather than taken from <CL/cl.h>, so that libtack builds
 * where no OpenCL headers exist.  The functions are reached through a table
 * that loader.c fills with dlopen/dlsym at run time, so libtack also runs
 * (without this backend) where no OpenCL library is installed.
 *
 * Types, constants and signatures follow the Khronos headers (cl.h,
 * cl_platform.h) for OpenCL 1.2 on Linux, where CL_API_CALL and
 * CL_CALLBACK are empty.
 */
#ifndef TACK_CL_API_H
#define TACK_CL_API_H

#include <stddef.h>
#include <stdint.h>

typedef int32_t cl_int;
typedef uint32_t cl_uint;
typedef uint64_t cl_ulong;
typedef cl_uint cl_bool;
typedef cl_ulong cl_bitfield;
typedef cl_bitfield cl_device_type;
typedef cl_bitfield cl_device_fp_config;
typedef cl_bitfield cl_command_queue_properties;
typedef cl_bitfield cl_mem_flags;
typedef cl_uint cl_platform_info;
typedef cl_uint cl_device_info;
typedef cl_uint cl_program_info;
typedef cl_uint cl_program_build_info;
typedef cl_int cl_build_status;
typedef intptr_t cl_context_properties;

typedef struct _cl_platform_id *cl_platform_id;
typedef struct _cl_device_id *cl_device_id;
typedef struct _cl_context *cl_context;
typedef struct _cl_command_queue *cl_command_queue;
typedef struct _cl_mem *cl_mem;
typedef struct _cl_program *cl_program;
typedef struct _cl_kernel *cl_kernel;
typedef struct _cl_event *cl_event;

#define CL_SUCCESS 0
#define CL_DEVICE_NOT_FOUND (-1)
#define CL_BUILD_PROGRAM_FAILURE (-11)
#define CL_INVALID_VALUE (-30)
#define CL_INVALID_BINARY (-42)
#define CL_INVALID_KERNEL_NAME (-46)
#define CL_PLATFORM_NOT_FOUND_KHR (-1001)

#define CL_FALSE 0
#define CL_TRUE 1

#define CL_PLATFORM_VERSION 0x0901
#define CL_PLATFORM_NAME 0x0902

#define CL_DEVICE_TYPE_ALL 0xFFFFFFFFu
#define CL_DEVICE_TYPE_CPU (1u << 1)
#define CL_DEVICE_TYPE 0x1000

#define CL_DEVICE_MAX_COMPUTE_UNITS 0x1002
#define CL_DEVICE_MAX_WORK_ITEM_DIMENSIONS 0x1003
#define CL_DEVICE_MAX_WORK_GROUP_SIZE 0x1004
#define CL_DEVICE_MAX_WORK_ITEM_SIZES 0x1005
#define CL_DEVICE_ADDRESS_BITS 0x100D
#define CL_DEVICE_MAX_MEM_ALLOC_SIZE 0x1010
#define CL_DEVICE_IMAGE3D_MAX_WIDTH 0x1013
#define CL_DEVICE_IMAGE3D_MAX_HEIGHT 0x1014
#define CL_DEVICE_IMAGE3D_MAX_DEPTH 0x1015
#define CL_DEVICE_IMAGE_SUPPORT 0x1016
#define CL_DEVICE_SINGLE_FP_CONFIG 0x101B
#define CL_DEVICE_GLOBAL_MEM_SIZE 0x101F
#define CL_DEVICE_LOCAL_MEM_SIZE 0x1023
#define CL_DEVICE_NAME 0x102B
#define CL_DRIVER_VERSION 0x102D
#define CL_DEVICE_VERSION 0x102F
#define CL_DEVICE_EXTENSIONS 0x1030
#define CL_DEVICE_DOUBLE_FP_CONFIG 0x1032
#define CL_DEVICE_OPENCL_C_VERSION 0x103D

#define CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT (1u << 7)

#define CL_CONTEXT_PLATFORM 0x1084

#define CL_MEM_READ_WRITE (1u << 0)

#define CL_QUEUE_PROFILING_ENABLE (1u << 1)
#define CL_EVENT_COMMAND_EXECUTION_STATUS 0x11D3
#define CL_PROFILING_COMMAND_START 0x1282
#define CL_PROFILING_COMMAND_END 0x1283

#define CL_PROGRAM_BINARY_SIZES 0x1165
#define CL_PROGRAM_BINARIES 0x1166
#define CL_PROGRAM_BUILD_LOG 0x1183

/* The functions we call, one table filled by loader.c. */
typedef struct opencl_api {
    cl_int (*GetPlatformIDs)(cl_uint, cl_platform_id *, cl_uint *);
    cl_int (*GetPlatformInfo)(cl_platform_id, cl_platform_info, size_t, void *, size_t *);
    cl_int (*GetDeviceIDs)(cl_platform_id, cl_device_type, cl_uint, cl_device_id *, cl_uint *);
    cl_int (*GetDeviceInfo)(cl_device_id, cl_device_info, size_t, void *, size_t *);
    cl_context (*CreateContext)(const cl_context_properties *, cl_uint, const cl_device_id *,
                                void (*)(const char *, const void *, size_t, void *), void *,
                                cl_int *);
    cl_int (*ReleaseContext)(cl_context);
    cl_command_queue (*CreateCommandQueue)(cl_context, cl_device_id,
                                           cl_command_queue_properties, cl_int *);
    cl_int (*ReleaseCommandQueue)(cl_command_queue);
    cl_mem (*CreateBuffer)(cl_context, cl_mem_flags, size_t, void *, cl_int *);
    cl_int (*ReleaseMemObject)(cl_mem);
    cl_int (*EnqueueWriteBuffer)(cl_command_queue, cl_mem, cl_bool, size_t, size_t,
                                 const void *, cl_uint, const cl_event *, cl_event *);
    cl_int (*EnqueueReadBuffer)(cl_command_queue, cl_mem, cl_bool, size_t, size_t, void *,
                                cl_uint, const cl_event *, cl_event *);
    cl_program (*CreateProgramWithSource)(cl_context, cl_uint, const char **, const size_t *,
                                          cl_int *);
    cl_program (*CreateProgramWithBinary)(cl_context, cl_uint, const cl_device_id *,
                                          const size_t *, const unsigned char **, cl_int *,
                                          cl_int *);
    cl_int (*BuildProgram)(cl_program, cl_uint, const cl_device_id *, const char *,
                           void (*)(cl_program, void *), void *);
    cl_int (*GetProgramInfo)(cl_program, cl_program_info, size_t, void *, size_t *);
    cl_int (*GetProgramBuildInfo)(cl_program, cl_device_id, cl_program_build_info, size_t,
                                  void *, size_t *);
    cl_int (*RetainProgram)(cl_program);
    cl_int (*ReleaseProgram)(cl_program);
    cl_kernel (*CreateKernel)(cl_program, const char *, cl_int *);
    cl_int (*ReleaseKernel)(cl_kernel);
    cl_int (*SetKernelArg)(cl_kernel, cl_uint, size_t, const void *);
    cl_int (*EnqueueNDRangeKernel)(cl_command_queue, cl_kernel, cl_uint, const size_t *,
                                   const size_t *, const size_t *, cl_uint, const cl_event *,
                                   cl_event *);
    cl_int (*Finish)(cl_command_queue);
    /* Queued launches, streams and events (queue.c). */
    cl_int (*Flush)(cl_command_queue);
    cl_int (*GetEventInfo)(cl_event, cl_uint, size_t, void *, size_t *);
    cl_int (*ReleaseEvent)(cl_event);
    cl_int (*WaitForEvents)(cl_uint, const cl_event *);
    cl_int (*EnqueueMarkerWithWaitList)(cl_command_queue, cl_uint, const cl_event *, cl_event *);
    cl_int (*EnqueueBarrierWithWaitList)(cl_command_queue, cl_uint, const cl_event *, cl_event *);
    cl_int (*GetEventProfilingInfo)(cl_event, cl_uint, size_t, void *, size_t *);
} opencl_api;

/* loader.c: the table, loaded once per process (thread-safe).  NULL when
 * the library or one of its functions is missing; *why (static text) then
 * says what and what to install. */
const opencl_api *opencl_api_load(const char **why);

/* "CL_OUT_OF_RESOURCES" for -5; "an unknown OpenCL error" for codes no
 * OpenCL version defines. */
const char *opencl_error_name(cl_int code);

#endif
