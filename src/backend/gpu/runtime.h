/*
 * runtime.h - the flow of the CUDA-shaped runtimes (CUDA's driver API and
 * HIP's runtime), written once (runtime.c): the device's own stream and
 * its queue of launches, tack.Stream's streams and timed events, waiting
 * and synchronizing, device memory and its copies, queuing a launch.
 *
 * The two APIs make the same calls under other names and types, so a
 * vendor gives a gpu_rt_ops: each call as a thin hook returning the
 * driver's code (0 is success, as CUDA_SUCCESS and hipSuccess are), the
 * call's name for errors, and hooks for what really differs (CUDA's
 * textures follow their memory).  The vendor's struct backend starts
 * with a gpu_runtime, so the flow reaches it through a cast.
 */
#ifndef TACK_GPU_RUNTIME_H
#define TACK_GPU_RUNTIME_H

#include "backend/gpu/driver.h"

typedef struct gpu_rt_ops {
    const char *vendor; /* "CUDA": in the words of errors */
    /* Makes b's device (context) current on this thread. */
    tack_status (*enter)(backend *b, tack_error *err);
    /* "<what>: <call> failed: NAME (words)" for the driver's code. */
    tack_status (*fail)(backend *b, tack_error *err, const char *what, const char *call, int code);

    /* The calls, each returning the driver's code. */
    int (*stream_create)(backend *b, void **stream); /* non-blocking */
    void (*stream_destroy)(backend *b, void *stream);
    int (*stream_sync)(backend *b, void *stream);
    int (*device_sync)(backend *b);
    int (*event_create)(backend *b, void **event); /* timed */
    int (*event_record)(backend *b, void *event, void *stream);
    void (*event_destroy)(backend *b, void *event);
    int (*stream_wait_event)(backend *b, void *stream, void *event);
    int (*event_sync)(backend *b, void *event);
    int (*event_elapsed)(backend *b, float *ms, void *start, void *end);
    int (*alloc)(backend *b, void **handle, size_t bytes);
    void (*free)(backend *b, void *handle);
    int (*copy_in)(backend *b, void *handle, size_t offset, const void *src, size_t n,
                   void *stream);
    int (*copy_out)(backend *b, void *dst, const void *handle, size_t offset, size_t n,
                    void *stream);
    int (*launch)(backend *b, void *fn, const unsigned grid[3], const unsigned block[3],
                  void *stream, void **params);
    /* Loads a module from image, the driver's log (when it keeps one) in
     * log[cap]; its function `entry`; unloads it. */
    int (*module_load)(backend *b, void **module, const void *image, char *log, size_t cap);
    int (*module_function)(backend *b, void **fn, void *module, const char *entry);
    void (*module_unload)(backend *b, void *module);
    /* Their names, for errors. */
    struct {
        const char *stream_create, *stream_sync, *device_sync, *event_create, *event_record,
            *wait_event, *event_sync, *elapsed, *alloc, *copy_in, *copy_out, *launch,
            *module_load, *module_function;
    } call;

    /* The real differences; each may be NULL. */
    int (*elapsed_missing)(backend *b);       /* the driver lacks event_elapsed */
    void (*freeing)(backend *b, void *handle); /* before memory is freed */
    void (*writing)(backend *b, void *handle); /* before memory is written */
    void (*closing)(backend *b);               /* the device drained, before its stream goes */
    /* A module refused (code): what the vendor knows of why, after err's
     * message (log: the driver's). */
    void (*module_refused)(backend *b, int code, const char *log, tack_error *err);
} gpu_rt_ops;

/* The first member of a CUDA-shaped driver's struct backend. */
typedef struct gpu_runtime {
    const gpu_rt_ops *ops;
    const backend_caps *caps; /* the vendor's, for the size check */
    const char *description;  /* the vendor's, for errors */
    void *stream;             /* this device's own: launches and copies go on it */
    gpu_queue queue;          /* the launches queued on it since the last wait */
    gpu_streams streams;      /* tack.Stream's */
} gpu_runtime;

#define GPU_RT(b) ((gpu_runtime *)(void *)(b))

/* The device made current on this thread, and a driver code's failure:
 * the vendor's (ops). */
static inline tack_status gpu_rt_enter(backend *b, tack_error *err) {
    return GPU_RT(b)->ops->enter(b, err);
}

/* Fills rt's queues (before anything can fail); gpu_rt_fini undoes it. */
void gpu_rt_init(backend *b, const gpu_rt_ops *ops, const backend_caps *caps,
                 const char *description);
void gpu_rt_fini(backend *b);
/* Makes the device current and its own stream; errors name the device. */
tack_status gpu_rt_open_stream(backend *b, tack_error *err);
/* The device current, its stream drained, ops->closing, the stream gone. */
void gpu_rt_drain(backend *b);

/* The host waits for the device's stream; a failure names `what` and the
 * launches it covered (gpu_queue_waited). */
tack_status gpu_rt_wait(backend *b, const char *what, tack_error *err);
/* Every tack.Stream, then the whole device. */
tack_status gpu_rt_synchronize(backend *b, tack_error *err);

/* Device memory: the backend table's entries gpu_rt_mem_alloc, _free,
 * _write and _read. */
GPU_DRIVER_DECLARE_MEM(gpu_rt);

/* Queues kernel `name` (fn) on the call's stream (queue) or the device's;
 * the launch is noted in that stream's queue. */
tack_status gpu_rt_launch(backend *b, void *fn, const char *name, const unsigned grid[3],
                          const unsigned block[3], void *queue, void **params, tack_error *err);

/* Kernel `kernel`'s module loaded from image and its function `entry`
 * found; on failure *module is the one to unload (NULL when none). */
tack_status gpu_rt_module_load(backend *b, const char *kernel, const void *image,
                               const char *entry, void **module, void **fn, tack_error *err);
void gpu_rt_module_unload(backend *b, void *module);

/* Copies on a tack.Stream's stream, after its work alone (backend.h). */
tack_status gpu_rt_queue_mem_write(backend *b, void *queue, void *handle, size_t offset,
                                   const void *src, size_t n, tack_error *err);
tack_status gpu_rt_queue_mem_read(backend *b, void *queue, const void *handle, size_t offset,
                                  void *dst, size_t n, tack_error *err);

/* tack.Stream's and tack.Event's entries of the backend table. */
tack_status gpu_rt_queue_create(backend *b, void **q, tack_error *err);
tack_status gpu_rt_queue_wrap(backend *b, uint64_t handle, void **q, tack_error *err);
uint64_t gpu_rt_queue_handle(backend *b, void *q);
void gpu_rt_queue_destroy(backend *b, void *q);
tack_status gpu_rt_queue_synchronize(backend *b, void *q, tack_error *err);
tack_status gpu_rt_event_record(backend *b, void *q, void **ev, tack_error *err);
tack_status gpu_rt_event_wait(backend *b, void *q, void *ev, tack_error *err);
tack_status gpu_rt_event_synchronize(backend *b, void *ev, tack_error *err);
tack_status gpu_rt_event_elapsed(backend *b, void *start, void *end, double *ms,
                                 tack_error *err);
void gpu_rt_event_free(backend *b, void *ev);

/* The backend table's entries a CUDA-shaped driver takes from here. */
#define GPU_RT_OPS                                                                              \
    .queue_create = gpu_rt_queue_create, .queue_destroy = gpu_rt_queue_destroy,                \
    .queue_synchronize = gpu_rt_queue_synchronize, .event_record = gpu_rt_event_record,        \
    .event_wait = gpu_rt_event_wait, .event_synchronize = gpu_rt_event_synchronize,            \
    .event_elapsed = gpu_rt_event_elapsed, .event_free = gpu_rt_event_free,                    \
    .queue_wrap = gpu_rt_queue_wrap, .queue_handle = gpu_rt_queue_handle,                      \
    .synchronize = gpu_rt_synchronize, .mem_alloc = gpu_rt_mem_alloc,                          \
    .mem_free = gpu_rt_mem_free, .mem_write = gpu_rt_mem_write, .mem_read = gpu_rt_mem_read,   \
    .mem_wrap = gpu_mem_wrap_address, .queue_mem_write = gpu_rt_queue_mem_write,              \
    .queue_mem_read = gpu_rt_queue_mem_read

#endif
