/*
 * dlpack.h - the DLPack ABI, the structs other libraries hand tensors over
 * with (the DLPack specification, versions 0.8 and 1.0; written here from
 * the specification's published layout, not copied from its header).
 *
 * A producer's __dlpack__() returns a PyCapsule named "dltensor" holding a
 * DLManagedTensor, or, when the consumer asked with max_version >= (1, 0),
 * one named "dltensor_versioned" holding a DLManagedTensorVersioned.  The
 * consumer renames the capsule "used_dltensor" / "used_dltensor_versioned"
 * and calls the tensor's deleter exactly once when done with the memory.
 * The field order is the ABI: it must not change.
 */
#ifndef TACK_EXT_DLPACK_H
#define TACK_EXT_DLPACK_H

#include <stdint.h>

/* The version this file describes; a consumer refuses a newer major. */
#define DLPACK_MAJOR_VERSION 1
#define DLPACK_MINOR_VERSION 0

/* Device types (DLDevice.device_type). */
enum {
    kDLCPU = 1,
    kDLCUDA = 2,
    kDLCUDAHost = 3,     /* pinned host memory: the CPU reads it */
    kDLOpenCL = 4,
    kDLVulkan = 7,
    kDLMetal = 8,
    kDLVPI = 9,
    kDLROCM = 10,
    kDLROCMHost = 11,
    kDLExtDev = 12,
    kDLCUDAManaged = 13,
    kDLOneAPI = 14,
    kDLWebGPU = 15,
    kDLHexagon = 16,
};

/* Element type codes (DLDataType.code). */
enum {
    kDLInt = 0,
    kDLUInt = 1,
    kDLFloat = 2,
    kDLOpaqueHandle = 3,
    kDLBfloat = 4,
    kDLComplex = 5,
    kDLBool = 6,
};

/* DLManagedTensorVersioned.flags */
#define DLPACK_FLAG_BITMASK_READ_ONLY (UINT64_C(1) << 0)
#define DLPACK_FLAG_BITMASK_IS_COPIED (UINT64_C(1) << 1)

typedef struct {
    int32_t device_type;
    int32_t device_id;
} DLDevice;

typedef struct {
    uint8_t code;
    uint8_t bits;    /* per lane */
    uint16_t lanes;  /* 1 for scalars */
} DLDataType;

typedef struct {
    void *data;           /* for CUDA, the device address */
    DLDevice device;
    int32_t ndim;
    DLDataType dtype;
    int64_t *shape;
    int64_t *strides;     /* in elements; NULL: compact row-major */
    uint64_t byte_offset; /* from data to the first element */
} DLTensor;

typedef struct DLManagedTensor {
    DLTensor dl_tensor;
    void *manager_ctx;
    void (*deleter)(struct DLManagedTensor *self);
} DLManagedTensor;

typedef struct {
    uint32_t major;
    uint32_t minor;
} DLPackVersion;

typedef struct DLManagedTensorVersioned {
    DLPackVersion version;
    void *manager_ctx;
    void (*deleter)(struct DLManagedTensorVersioned *self);
    uint64_t flags;
    DLTensor dl_tensor;
} DLManagedTensorVersioned;

/* The C exchange API (DLPack 1.2 on): a producer's type may carry a
 * PyCapsule named "dlpack_exchange_api" as __dlpack_c_exchange_api__,
 * holding a table of C functions that convert its objects without any
 * Python call.  Tack uses dltensor_from_py_object_no_sync: it fills a
 * caller's DLTensor that views the object's memory (the producer keeps
 * shape and strides; valid while the object is unchanged), with no stream
 * synchronization.  A consumer walks prev_api for a major it knows. */
typedef struct DLPackExchangeAPIHeader {
    DLPackVersion version;
    struct DLPackExchangeAPIHeader *prev_api;
} DLPackExchangeAPIHeader;

typedef struct {
    DLPackExchangeAPIHeader header;
    int (*managed_tensor_allocator)(DLTensor *prototype, DLManagedTensorVersioned **out,
                                    void *error_ctx,
                                    void (*set_error)(void *error_ctx, const char *kind,
                                                      const char *message));
    int (*managed_tensor_from_py_object_no_sync)(void *py_object,
                                                 DLManagedTensorVersioned **out);
    int (*managed_tensor_to_py_object_no_sync)(DLManagedTensorVersioned *tensor,
                                               void **out_py_object);
    int (*dltensor_from_py_object_no_sync)(void *py_object, DLTensor *out); /* may be NULL */
    int (*current_work_stream)(int32_t device_type, int32_t device_id, void **out_stream);
} DLPackExchangeAPI;

#endif
