/*
 * opencl.h - the OpenCL backend (backend_opencl), one stage per file:
 *
 *   loader.c   the driver's functions, found at run time (cl_api.h)
 *   device.c   opening a device: context, queue, capabilities, memory
 *   check.c    what the device must support to run a kernel (f64, atomics)
 *   program.c  OpenCL C source or a stored binary -> a program and kernel;
 *              a variant's code object and its disk-cache artifact
 *   queue.c    queues (the device's and tack.Stream's), events, and the
 *              record of queued launches that names a failed one
 *   launch.c   a filled pack and the call's buffers -> one NDRange, queued
 *   opencl.c   the backend table: typed IR -> source (gpu_emit) -> code,
 *              and the pack fill before each launch (gpu_pack_fill)
 *
 * Only opencl.c depends on the GPU half (gpu.h); the others are the driver
 * and are tested on their own with hand-written OpenCL C.
 *
 * Thread-safety: every entry may be called from several threads at once,
 * except launch on one code object, which mutates its cl_kernel's arguments
 * (caps.locked_dispatch: the runtime holds the variant's lock around it).
 */
#ifndef TACK_OPENCL_H
#define TACK_OPENCL_H

#include <pthread.h>
#include <stdatomic.h>

#include "backend/backend.h"
#include "backend/gpu/gpu.h"
#include "cl_api.h"

/* One command queue (in order: a launch's writes precede later reads on
 * it) and its launches not yet seen finished: a ring of their events and
 * kernel names, so that a failure the device reports later names its
 * kernel at the next synchronization. */
#define OPENCL_RING 32
#define OPENCL_NAME_LEN 96
typedef struct opencl_queue {
    cl_command_queue q;
    pthread_mutex_t lock; /* the ring and the failure */
    cl_event ring[OPENCL_RING];
    char names[OPENCL_RING][OPENCL_NAME_LEN];
    unsigned next;        /* the slot the next launch takes */
    cl_int failed;        /* a launch's failure not yet reported (0: none) */
    char failed_name[OPENCL_NAME_LEN];
    struct opencl_queue *prev, *link; /* the device's streams */
} opencl_queue;

struct backend {
    const opencl_api *cl;
    int index;
    cl_platform_id platform;
    cl_device_id device;
    cl_context context;
    cl_command_queue queue; /* in order: a launch's writes precede later reads */
    opencl_queue main;      /* its record (main.q == queue) */
    pthread_mutex_t streams_lock;
    opencl_queue *streams;  /* tack.Stream's queues, linked */
    int profiling;          /* the queues time their commands (event_elapsed) */
    cl_mem dummy;           /* bound where an array is empty (a NULL handle) */
    backend_caps caps;
    int64_t launch_items;   /* work items per launch; longer ranges take several */
    int serial_inner;       /* the innermost ndindex index loops in each item (device.c) */
    const gpu_dialect *dialect; /* OpenCL C in that form */
    char name[256];         /* the device's */
    char options[128];      /* clBuildProgram's */
    char description[768];
    char *target;           /* cache_target's text, malloc'd */
};

/* A built program and what its code objects share: the kernels of a
 * batch (opencl_code_many) are one program, and a disk entry for each of
 * them stores its binary, which the driver hands out once for all. */
typedef struct opencl_program {
    const opencl_api *cl; /* the process's table: never unloaded */
    cl_program program;   /* one reference, released with the last holder */
    atomic_int refs;      /* code objects and artifact snapshots */
    pthread_mutex_t lock; /* the binary below */
    int snapshots;        /* snapshots not yet freed: the binary is kept
                             for them, then dropped */
    int fetched;
    unsigned char *binary; /* NULL: the driver gave none */
    size_t binary_len;
} opencl_program;

struct backend_code {
    opencl_program *prog;
    cl_kernel kernel;
    char *entry;      /* the kernel function's name */
    char *source;     /* the OpenCL C it was built from (the artifact's fallback) */
    ir_func *f;       /* a copy of the post-pass IR that owns its strings:
                         the pack fill evaluates the launch range from it */
    int pack_words;
    int narrays;
    int *arrays;      /* the ROLE_ARRAY parameters, in order (malloc'd) */
    /* print(): the statements' formats, and the record buffer (made at the
     * first launch, remade when TACK_PRINT_BUFFER changes; launches of one
     * code object are serialized, caps.locked_dispatch). */
    gpu_print_table prints;
    cl_mem print_buf;
    uint32_t print_cap;
};


/* device.c */
/* Devices across all platforms; -1 with err saying why when there is no
 * OpenCL library or platform (what to install). */
int opencl_device_count(tack_error *err);
tack_status opencl_open(int index, int num_threads, backend **out, tack_error *err);
void opencl_close(backend *b);
void opencl_caps(const backend *b, backend_caps *out);
const char *opencl_describe(const backend *b);
const char *opencl_cache_target(const backend *b);
tack_status opencl_mem_alloc(backend *b, size_t bytes, void **handle, tack_error *err);
void opencl_mem_free(backend *b, void *handle);
tack_status opencl_mem_write(backend *b, void *handle, size_t offset, const void *src, size_t n,
                             tack_error *err);
tack_status opencl_mem_read(backend *b, const void *handle, size_t offset, void *dst, size_t n,
                            tack_error *err);
tack_status opencl_queue_mem_write(backend *b, void *queue, void *handle, size_t offset,
                                   const void *src, size_t n, tack_error *err);
tack_status opencl_queue_mem_read(backend *b, void *queue, const void *handle, size_t offset,
                                  void *dst, size_t n, tack_error *err);
/* Fills err with "<what>: <call> failed: CL_..." (what may be NULL). */
tack_status opencl_fail(tack_error *err, const char *what, const char *call, cl_int code);

/* check.c: refuses (TACK_ERR_TYPE) what the device cannot run. */
tack_status opencl_check_support(backend *b, const ir_func *f, tack_error *err);

/* program.c */
/* OpenCL C -> a built program and its kernel `entry`.  The compiler's
 * refusal is TACK_ERR_COMPILE with the build log, naming `kernel_name`. */
tack_status opencl_build_source(backend *b, const char *kernel_name, const char *source,
                                const char *entry, cl_program *program, cl_kernel *kernel,
                                tack_error *err);
/* A code object for post-pass IR f (cloned) from its OpenCL C source. */
tack_status opencl_code_from_source(backend *b, const ir_func *f, const char *source,
                                    const char *entry, backend_code **out, tack_error *err);
/* Several variants' code from one program: sources[i] (gpu_emit_guarded's,
 * entry entries[i]) concatenated and built once, each kernel taken out by
 * name.  When the driver refuses the whole, each is built alone, so a
 * failure is reported as a build of that variant alone reports it: outs[i]
 * NULL and errs[i] set.  Returns the number of programs built. */
int opencl_code_many(backend *b, int n, const ir_func *const *fs, const char *const *sources,
                     const char *const *entries, backend_code **outs, tack_error *errs);
int opencl_artifact(backend *b, const backend_code *c, ser_writer *w);
/* The same artifact, made later on another thread (backend.h). */
void *opencl_artifact_snapshot(backend *b, const backend_code *c);
int opencl_artifact_write(void *snapshot, ser_writer *w);
void opencl_artifact_free(void *snapshot);
tack_status opencl_load(backend *b, const ir_func *f, const void *bytes, size_t n,
                        backend_code **out, tack_error *err);
void opencl_release(backend *b, backend_code *c);

/* queue.c */
tack_status opencl_queue_init(backend *b, opencl_queue *oq, tack_error *err);
/* Notes a queued launch's event (taken over) under the kernel's name. */
void opencl_queue_note(backend *b, opencl_queue *oq, cl_event ev, const char *kernel_name);
/* oq's finished launches checked (no wait): the first failure by name. */
tack_status opencl_queue_report(backend *b, opencl_queue *oq, tack_error *err);
/* Waits for oq's work; a failed launch is reported by kernel name. */
tack_status opencl_queue_finish(backend *b, opencl_queue *oq, tack_error *err);
/* Waits for every stream's queue (not the device's own). */
tack_status opencl_streams_finish(backend *b, tack_error *err);
/* After a copy on queue oq failed with code: the failed launch that
 * caused it by name, or the copy's own error. */
tack_status opencl_copy_fail(backend *b, opencl_queue *oq, const char *what, const char *call,
                             cl_int code, tack_error *err);
/* A queue handle from opencl_queue_create, or NULL: the device's own. */
opencl_queue *opencl_queue_of(backend *b, void *queue);
tack_status opencl_queue_create(backend *b, void **queue, tack_error *err);
void opencl_queue_destroy(backend *b, void *queue);
tack_status opencl_queue_synchronize(backend *b, void *queue, tack_error *err);
tack_status opencl_synchronize_all(backend *b, tack_error *err);
tack_status opencl_event_record(backend *b, void *queue, void **event, tack_error *err);
tack_status opencl_event_wait(backend *b, void *queue, void *event, tack_error *err);
tack_status opencl_event_synchronize(backend *b, void *event, tack_error *err);
tack_status opencl_event_elapsed(backend *b, void *start, void *end, double *ms, tack_error *err);
void opencl_event_free(backend *b, void *event);

/* launch.c */
/* The NDRange that covers a range, one work item per iteration: dimension
 * 0 is the innermost index (gpu.h).  Per dimension: the items to cover,
 * the global size of one launch (the offset between launches, when the
 * range needs several), and the multiple a last, partial launch rounds up
 * to. */
typedef struct opencl_ndrange {
    int dims; /* 1 + ninner */
    int64_t extent[3], piece[3], multiple[3];
} opencl_ndrange;
void opencl_grid(const backend *b, int ninner, int64_t count, int64_t inner0, int64_t inner1,
                 opencl_ndrange *r);
/* Queues c with a filled pack and the call's buffers (slots of its array
 * parameters) on the call's queue, and returns (a printing kernel's waits
 * for its lines).  A zero trip count returns at once. */
tack_status opencl_launch_pack(backend *b, backend_code *c, const backend_call *call,
                               const int64_t *pack, tack_error *err);

#endif
