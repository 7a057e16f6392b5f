/*
 * level_zero.h - the Level Zero backend (backend_level_zero) for Intel
 * GPUs, one stage per file:
 *
 *   loader.c   the Level Zero loader's functions, found at run time
 *   ocloc.c    OpenCL C -> SPIR-V and a native binary with Intel's ocloc,
 *              run as a child process; needs no GPU
 *   device.c   opening a device: capabilities, its context and immediate
 *              command list, memory
 *   program.c  a native binary (or SPIR-V) -> a module and its kernel; a
 *              variant's code and its disk-cache artifact
 *   launch.c   the pack and the call's device pointers as kernel arguments,
 *              group sizes, one launch queued on the device's command list
 *   level_zero.c  the backend table: typed IR -> OpenCL C (gpu_emit, the
 *              OpenCL dialect) -> ocloc -> zeModuleCreate
 *   offline.c  level_zero_generate: SPIR-V or native binaries without a
 *              device (tack_kernel_generate's "level_zero:spirv",
 *              "level_zero:dg2")
 *
 * ocloc runs as a separate process, not as libocloc inside this one:
 * libocloc brings Intel's compiler and its LLVM, and two LLVMs that
 * register the same command-line options in one process (PoCL's is
 * loaded by the OpenCL backend) abort it.
 *
 * Thread-safety: a kernel object holds its arguments (zeKernelSetArgument-
 * Value) until the launch, so a variant's launches hold its dispatch lock
 * (caps.locked_dispatch 1); the device's immediate command list is not
 * thread-safe, so every append (launches, copies) holds the device's lock,
 * as the reference's backend-wide launch lock.  The list is asynchronous
 * where the loader has zeCommandListHostSynchronize (Level Zero 1.6): a
 * launch returns once appended (caps.queued_launch; the append captures
 * the kernel's arguments), a copy waits for the list, and a fault in a
 * launch before it surfaces there by the kernel's name (gpu_queue).  With
 * an older loader the list is synchronous and every append waits.
 *
 * Textures: sampled in software (lower/textures.c); f64 only where the
 * device reports fp64 (build refuses the rest naming f64).
 */
#ifndef TACK_LEVEL_ZERO_H
#define TACK_LEVEL_ZERO_H

#include <pthread.h>

#include "backend/backend.h"
#include "backend/gpu/driver.h"
#include "backend/gpu/gpu.h"
#include "ze_api.h"

struct backend {
    const ze_api *ze;
    int index;
    ze_driver_handle_t driver;
    ze_device_handle_t device;
    ze_context_handle_t context;
    ze_command_list_handle_t list; /* immediate (see the top) */
    int queued;                    /* list is asynchronous: launches return queued */
    gpu_queue queue;               /* the launches on it since the last wait */
    pthread_mutex_t lock;          /* around every append to list, and its waits */
    int lock_made;
    uint32_t device_id;            /* PCI id: ocloc's -device 0x.... */
    uint32_t driver_version;
    uint32_t max_group[3], max_groups[3];
    int eu_count;
    backend_caps caps;
    char name[256];
    char ocloc_device[16];         /* "0x56a0" */
    char description[640];
    char *target;                  /* cache_target's text, malloc'd */
};

struct backend_code {
    gpu_code g;       /* first: the part every driver keeps (gpu/driver.h) */
    ze_module_handle_t module;
    ze_kernel_handle_t kernel;
    void *native;      /* the native binary the module holds (may be NULL) */
    size_t native_len;
    void *spirv;       /* the SPIR-V it was built from (the fallback) */
    int from_spirv;    /* the driver refused the native binary, or had none */
    size_t spirv_len;
};

/* ocloc.c */
/* OpenCL C -> code with ocloc.  `device` names the target ("dg2",
 * "tgllp", "0x56a0"); with want_native the native binary for it
 * (*native, malloc'd, NUL after its bytes) and the SPIR-V it was made from
 * (*spirv), else the SPIR-V alone (compiled with fp64 enabled, for any
 * device).  ocloc's refusal is TACK_ERR_COMPILE with its log naming
 * `kernel_name`, f64 on a target without it TACK_ERR_TYPE naming f64 and
 * the target, an unknown target TACK_ERR_VALUE, no ocloc TACK_ERR_DEVICE
 * saying what to install. */
tack_status l0_ocloc_compile(const ir_func *f, const char *source, const char *device,
                             int want_native, void **native, size_t *native_len, void **spirv,
                             size_t *spirv_len, tack_error *err);
/* ocloc's version ("22.43.24595"), or "none". */
const char *l0_ocloc_version(void);
/* Where ocloc is (TACK_OCLOC, or "ocloc" on PATH); NULL, *why saying so. */
const char *l0_ocloc_path(const char **why);
/* A target name ocloc may know: letters, digits, '-', '_', '.', or 0x and
 * hex digits. */
int l0_target_valid(const char *target);
/* SPIR-V's magic; an ELF (Intel's zebin). */
int l0_is_spirv(const void *bytes, size_t n);
int l0_is_native(const void *bytes, size_t n);

/* device.c */
/* open, close, caps, memory, the artifact, load, release and
 * launch_pack: the entries every driver has (gpu/driver.h). */
GPU_DRIVER_DECLARE(l0);
GPU_DRIVER_QUEUED(l0)
/* Fills err with "<what>: <call> failed: ZE_RESULT_X"; out of memory is
 * TACK_ERR_NOMEM, the rest TACK_ERR_DEVICE. */
tack_status l0_fail(tack_error *err, const char *what, const char *call, ze_result_t r);

/* program.c */
/* The disk-cache record: entry name, device, native binary, SPIR-V. */
typedef struct l0_record {
    gpu_record head; /* the entry and the device (gpu/driver.h) */
    const void *native, *spirv;
    size_t native_len, spirv_len;
} l0_record;
void l0_artifact_write(const char *entry, const char *device, const void *native,
                       size_t native_len, const void *spirv, size_t spirv_len, ser_writer *w);
tack_status l0_artifact_parse(const char *kernel_name, const void *bytes, size_t n,
                              l0_record *out, tack_error *err);
/* A module from the native binary, or from the SPIR-V when there is none
 * or the driver refuses it; the code keeps both (and the native binary the
 * driver made from SPIR-V, for the artifact). */
tack_status l0_code_from(backend *b, const ir_func *f, const char *entry, size_t entry_len,
                         const void *native, size_t native_len, const void *spirv,
                         size_t spirv_len, backend_code **out, tack_error *err);

/* launch.c */
/* Group sizes and counts for a range (gpu.h's mapping): 256 items, the
 * innermost extent on consecutive lanes; past the device's group counts
 * the items stride. */
void l0_groups(const backend *b, int ninner, int64_t count, int64_t inner0, int64_t inner1,
               uint32_t groups[3], uint32_t size[3]);

#endif
