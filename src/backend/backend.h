/*
 * backend.h - the one contract every backend implements.
 *
 * A backend is a table of functions (QBE's targets are the model).  The
 * runtime reaches a device's code generator, driver and memory only through
 * this table, so adding a backend touches no file under src/runtime.  A
 * device (tack_device) is one backend instance with its own variant cache.
 *
 * The flow for one variant:
 *   build(post-pass IR)  -> code        (a miss: generate and load)
 *   artifact(code)       -> bytes       (stored in the disk cache)
 *   load(IR, bytes)      -> code        (a disk hit: no code generation)
 *   launch(code, call)                  (every dispatch)
 *   release(code)                       (the variant is dropped)
 *
 * A call's arrays reach launch as `slots`: for a backend with host memory a
 * data pointer, otherwise the handle its mem_alloc returned.  Scalars sit
 * in the low bytes of their slot, as their type's bits.
 */
#ifndef TACK_BACKEND_H
#define TACK_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include "ir/ir.h"
#include "ir/serialize.h"
#include "tack.h"

typedef struct backend backend;           /* one device of a backend */
typedef struct backend_code backend_code; /* one variant's loaded code */

typedef struct backend_caps {
    int host_memory;   /* arrays live in host memory: NumPy arrays run in
                          place, and disjoint calls get the noalias variant */
    int locked_dispatch; /* a variant's code holds launch state (kernel
                            arguments, a scalar pack): the runtime holds the
                            variant's dispatch lock around launch */
    int fp64;          /* f64 arithmetic */
    int atomics64;     /* 64-bit atomics */
    int images;        /* hardware 3-D images, within image3d_max */
    int64_t image3d_max[3];
    /* tex.sample on f32 textures is the texture unit's trilinear filter,
     * whose weights have 8 fractional bits: results differ from the exact
     * (software) filter by up to about 1/256 of the neighbouring texels'
     * differences.  0: every sample is the exact filter in the texture's
     * own precision (docs/devices.md). */
    int hardware_texture_filtering;
    int64_t local_mem_bytes;
    int64_t max_workgroup;
    int64_t max_grid[3];   /* work items per launch dimension */
    int64_t global_mem_bytes;
    int64_t max_alloc_bytes; /* the largest single allocation */
    int compute_units;       /* threads for the CPU */
    int queued_launch;       /* launch returns once queued (see launch) */
} backend_caps;

/* The launch range of one call: the parallel loop's start, stop and step
 * (step != 0), then the inner ndindex extents (1 when absent). */
#define BACKEND_RANGE_LEN 5

/* Iterations of the outer loop, without overflow; 0 when an inner extent
 * is empty (the whole launch is). */
static inline int64_t backend_trip_count(int64_t start, int64_t stop, int64_t step) {
    if (step > 0 && stop > start)
        return (int64_t)(((uint64_t)stop - (uint64_t)start - 1) / (uint64_t)step + 1);
    if (step < 0 && start > stop)
        return (int64_t)(((uint64_t)start - (uint64_t)stop - 1) / (0 - (uint64_t)step) + 1);
    return 0;
}
static inline int64_t backend_launch_count(const int64_t range[BACKEND_RANGE_LEN]) {
    if (range[3] <= 0 || range[4] <= 0) return 0;
    return backend_trip_count(range[0], range[1], range[2]);
}

/* One dispatch, after the runtime checked and classified the call. */
typedef struct backend_call {
    const char *kernel_name;
    const uint64_t *slots;                 /* per parameter (see above) */
    const int64_t (*dims)[TACK_MAX_NDIM];  /* per parameter, 1 past ndim */
    int nparams;
    int has_inner_loops; /* the body loops: split even short launches */
    const int64_t *range; /* from the backend's range(), BACKEND_RANGE_LEN */
    /* The queue the launch goes on: a handle from queue_create, or NULL
     * for the device's own.  A backend without queues ignores it. */
    void *queue;
} backend_call;

typedef struct backend_ops {
    const char *name; /* the spec's prefix: "cpu", "opencl" */
    /* Opens one device.  `index` is N of "name:N" (0 when absent);
     * num_threads is the CPU's pool size (<= 0: one per core). */
    tack_status (*open)(int index, int num_threads, backend **out, tack_error *err);
    void (*close)(backend *b);
    void (*caps)(const backend *b, backend_caps *out);
    /* The device in words, for messages and `python -m tack info`. */
    const char *(*describe)(const backend *b);
    /* What compiled code depends on (target, device, driver, options), for
     * the disk cache's key; NULL stores only the IR level. */
    const char *(*cache_target)(const backend *b);
    /* Post-pass IR (borrowed) -> loaded code; `symbol_base` names its
     * entry points (derived from the variant's full key).  Adds the time
     * spent in the backend's own compiler (LLVM, the driver's) to
     * *compiler_ns, for tack.stats(). */
    tack_status (*build)(backend *b, const ir_func *f, const char *symbol_base,
                         backend_code **out, uint64_t *compiler_ns, tack_error *err);
    /* Optional: several variants' code at once, as build makes each, for
     * a backend whose compiler costs much per invocation (an OpenCL
     * driver: one program holds them all).  outs[i] is NULL and errs[i]
     * set where variant i failed; the others are built.  NULL: the
     * runtime calls build for each (tack_precompile). */
    void (*build_many)(backend *b, int n, const ir_func *const *fs,
                       const char *const *symbol_bases, backend_code **outs,
                       uint64_t *compiler_ns, tack_error *errs);
    /* Appends the code's bytes for the disk cache; -1 if it has none. */
    int (*artifact)(backend *b, const backend_code *c, ser_writer *w);
    /* Optional, for a backend whose artifact is slow to make (an OpenCL
     * driver compiles a program again to hand out its binary): the runtime
     * then stores the entry on a writer thread, off the call's path.
     * artifact_snapshot takes what artifact needs from c (NULL: out of
     * memory), and stays valid after c and the device are released;
     * artifact_write appends the bytes artifact would, from any thread;
     * artifact_free drops the snapshot.  NULL: artifact is called at once. */
    void *(*artifact_snapshot)(backend *b, const backend_code *c);
    /* Optional, beside artifact_snapshot: whether this code's artifact
     * goes through the snapshot (1) or is made at once by artifact (0);
     * NULL: always the snapshot.  The CPU's tier-0 code stores the
     * optimized build it is waiting for (cpu/tier.c). */
    int (*artifact_later)(backend *b, const backend_code *c);
    int (*artifact_write)(void *snapshot, ser_writer *w);
    void (*artifact_free)(void *snapshot);
    /* Bytes from artifact (borrowed), with the post-pass IR they were built
     * from (borrowed) -> loaded code, without code generation. */
    tack_status (*load)(backend *b, const ir_func *f, const void *bytes, size_t n,
                        backend_code **out, tack_error *err);
    void (*release)(backend *b, backend_code *c);
    /* Optional: which tier the code runs, 0 (built fast, optimized code
     * on its way) or 1 (optimized); NULL: 1.  And a wait until no build of
     * optimized code is queued or in progress, process-wide
     * (tack_jit_wait). */
    int (*code_tier)(backend *b, const backend_code *c);
    void (*finish_builds)(void);
    /* Evaluates the call's launch range (call->range is not set yet), which
     * the runtime checks before anything runs. */
    tack_status (*range)(backend *b, backend_code *c, const backend_call *call,
                         int64_t out[BACKEND_RANGE_LEN], tack_error *err);
    /* Runs the call, to completion or (caps.queued_launch) queued behind
     * the earlier work of its queue: then what reads the results waits
     * (mem_read, the queue's synchronize), and a device error surfaces
     * there naming the kernel. */
    tack_status (*launch)(backend *b, backend_code *c, const backend_call *call,
                          tack_error *err);
    /* Resizes the device's thread pool in place, keeping its compiled
     * code (tack_device_set_num_threads); n is 1..CPU maximum.  Safe while
     * another thread launches: it waits for that launch.  NULL for a
     * backend without a pool. */
    tack_status (*set_num_threads)(backend *b, int n, tack_error *err);
    /* The code `build` makes from f, as text for people (tack_kernel_inspect):
     * TACK_INSPECT_LLVM is the CPU's optimized LLVM IR or a GPU backend's
     * source (OpenCL C, CUDA C); TACK_INSPECT_ASM the CPU's assembly or
     * CUDA's PTX.  TACK_ERR_VALUE for a kind the backend has no text for;
     * NULL: none at all.  `symbol_base` as for build; *text is malloc'd. */
    tack_status (*inspect)(backend *b, const ir_func *f, const char *symbol_base,
                           tack_inspect_kind kind, char **text, tack_error *err);
    /* Device memory: handles are what slots carry. */
    tack_status (*mem_alloc)(backend *b, size_t bytes, void **handle, tack_error *err);
    void (*mem_free)(backend *b, void *handle);
    tack_status (*mem_write)(backend *b, void *handle, size_t offset, const void *src, size_t n,
                             tack_error *err);
    /* mem_read returns once the bytes have arrived, after the work queued
     * before it: a GPU range reads its array elements (`range(n[0])`)
     * through it on every evaluation (gpu.h's gpu_device_read). */
    tack_status (*mem_read)(backend *b, const void *handle, size_t offset, void *dst, size_t n,
                            tack_error *err);
    /* Waits until all work queued on the device has finished, the
     * device's and other libraries' sharing its context (a foreign array's
     * producer may still be writing it). */
    tack_status (*synchronize)(backend *b, tack_error *err);
    /* Optional (NULL: the device's handles are not addresses, so foreign
     * memory cannot be wrapped): the handle for `bytes` of memory at a
     * device address another library allocated; never given to mem_free. */
    tack_status (*mem_wrap)(backend *b, uint64_t address, size_t bytes, void **handle,
                            tack_error *err);
    /* Queues and events (tack.Stream, tack.Event), all optional.  A
     * backend without them runs every launch to completion, so one queue
     * (the device's) serves every stream and an event is the host's clock
     * when recorded (src/runtime/stream.c).  queue_create makes a queue
     * of the device's; queue_synchronize waits for its work and reports
     * a failed launch of it by kernel name.  An event marks the work
     * queued on its queue so far: event_wait queues a wait for it on
     * another queue, event_synchronize waits for it on the host,
     * event_elapsed is the device's time between two in ms (TACK_ERR_VALUE
     * with why where the device cannot time). */
    tack_status (*queue_create)(backend *b, void **queue, tack_error *err);
    void (*queue_destroy)(backend *b, void *queue);
    tack_status (*queue_synchronize)(backend *b, void *queue, tack_error *err);
    tack_status (*event_record)(backend *b, void *queue, void **event, tack_error *err);
    tack_status (*event_wait)(backend *b, void *queue, void *event, tack_error *err);
    tack_status (*event_synchronize)(backend *b, void *event, tack_error *err);
    tack_status (*event_elapsed)(backend *b, void *start, void *end, double *ms,
                                 tack_error *err);
    void (*event_free)(backend *b, void *event);
    /* Optional, for a driver whose queues are other libraries' too (CUDA
     * and HIP streams): queue_wrap makes a queue of another library's
     * stream handle (queue_destroy then leaves the stream alone), and
     * queue_handle is a queue's stream handle (NULL: the device's own),
     * for another library to queue its work on. */
    tack_status (*queue_wrap)(backend *b, uint64_t handle, void **queue, tack_error *err);
    uint64_t (*queue_handle)(backend *b, void *queue);
    /* Optional, with queues: mem_write and mem_read on a queue from
     * queue_create (the thread's current tack.Stream's), in order after
     * that queue's work and not after the other queues' (mem_write and
     * mem_read wait for every queue's); they return with the bytes in place. */
    tack_status (*queue_mem_write)(backend *b, void *queue, void *handle, size_t offset,
                                   const void *src, size_t n, tack_error *err);
    tack_status (*queue_mem_read)(backend *b, void *queue, const void *handle, size_t offset,
                                  void *dst, size_t n, tack_error *err);
} backend_ops;

/* Process-wide counts backends keep for tack.stats(): variants whose
 * cached artifact loaded as the driver's binary, those the driver had to
 * rebuild from the artifact's source, and programs a driver built from
 * source (OpenCL: one per variant, or one per precompiled batch) (shared.c). */
typedef struct backend_counters {
    _Atomic unsigned long long binary_loads, source_builds, program_builds;
} backend_counters;
extern backend_counters backend_stats;

/* Fills err (message, status; no file or line) and returns st: how a
 * backend reports a failure (shared.c). */
tack_status backend_error(tack_error *err, tack_status st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* shared.c: CLOCK_MONOTONIC in nanoseconds (compile times in the stats). */
uint64_t backend_now_ns(void);

/* A driver library's entry point, for the loaders that dlopen one: its
 * name and where its pointer goes in the backend's function table. */
typedef struct backend_symbol {
    const char *name;
    size_t offset;
} backend_symbol;

/* shared.c: fills table from lib with dlsym; the first missing symbol's
 * name (the table is then only partly filled, and must not be used), or
 * NULL. */
const char *backend_fill_symbols(void *lib, void *table, const backend_symbol *syms, size_t n);

/* The backends: this build's, then any registered (backend.c).  A new
 * backend registers its table and is then a device spec like the others;
 * nothing under src/runtime changes.  -1: the name is taken or the table
 * is full. */
/* print() (print_format.c): the printf format of IR_PRINT statement s,
 * malloc'd (NULL: no memory).  Per value: bool "%s" (given "True" or
 * "False"); signed integers int_conv and unsigned ones uint_conv, each
 * given the value widened to 64 bits; f32 "%.9g%s" and f64 "%.17g%s",
 * given the value (NaN's sign cleared) and ".0" when it is integral with
 * a magnitude under backend_print_integral_bound(t), else "". */
char *backend_print_format(const ir_stmt *s, const char *int_conv, const char *uint_conv,
                           const char *f64_conv); /* NULL: "%.17g%s" */
double backend_print_integral_bound(ir_type t);
/* cpu/print_rt.c: the line of a print() with that format and its values in
 * 64-bit slots (integers widened, floats as an f64's bits, bools 0 / 1),
 * malloc'd with its length (NULL: no memory). */
char *tack_print_line(const char *fmt, const uint64_t *vals, size_t *len);

int backend_register(const backend_ops *ops);
const backend_ops *backend_find(const char *name, size_t len);
const backend_ops *backend_at(int i); /* NULL past the last */

extern const backend_ops backend_cpu;
extern const backend_ops backend_opencl;
extern const backend_ops backend_cuda;
extern const backend_ops backend_hip;
extern const backend_ops backend_level_zero;
extern const backend_ops backend_metal;

/* Code for a target named by a string, without a device (offline.c;
 * tack_kernel_generate): "cuda:sm_XX" is PTX from NVRTC, "hip:gfxNNN" an
 * AMDGPU code object from hipRTC, "cuda-source", "opencl-source" and
 * "hip-source" the GPU emitter's output.  f is post-pass IR for a device
 * without host memory; `entry` names the kernel function.  *out is
 * "level_zero:spirv" SPIR-V and "level_zero:<Intel GPU>" a native binary
 * from ocloc, "metal-source" MSL.  *out is
 * malloc'd and NUL-terminated after its *len bytes (binary targets may
 * hold NULs: backend_generate_binary says which those are).
 * backend_generate_check refuses an unknown target (TACK_ERR_VALUE)
 * before any work is done. */
int backend_generate_binary(const char *target);
tack_status backend_generate_check(const char *target, tack_error *err);
tack_status backend_generate(const char *target, const ir_func *f, const char *entry, char **out,
                             size_t *len, tack_error *err);

#endif
