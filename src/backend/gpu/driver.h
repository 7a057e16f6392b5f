/*
 * driver.h - the skeleton every GPU driver (CUDA, HIP, Level Zero, Metal)
 * follows, written once (driver.c).  A vendor folder keeps its API table
 * (the dlopen'd functions) and its real differences; the steps they share
 * live here:
 *
 *   loading    the dlopen'd table, or a test's stand-in, once per process
 *   errors     "<what>: <call> failed: NAME (words)"
 *   opening    the device spec, "there is no device N", the caps every
 *              GPU shares, the cache target's text
 *   code       the part of a code object every driver keeps (the IR, the
 *              entry, the array parameters, print()'s table)
 *   artifact   the record's frame: magic, version, entry, target, blob
 *   memory     the size check before an allocation
 *   launch     the checks before a launch, the strided grid, print()'s
 *              record buffer through the driver's memory calls
 *
 * A driver's struct backend_code starts with a gpu_code, so the shared
 * steps reach it through a cast to its first member.  The CUDA-shaped
 * runtimes (CUDA, HIP) share more: their streams, memory, waits, launch
 * and modules (runtime.h), and their runtime compilers (rtc.h).
 */
#ifndef TACK_GPU_DRIVER_H
#define TACK_GPU_DRIVER_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "backend/backend.h"
#include "backend/gpu/gpu.h"
#include "ir/serialize.h"

/* ---- loading ----------------------------------------------------------- */

/* The driver's table: a test's stand-in when one is set, else the real one
 * loaded once (load fills *loaded, or error saying why not). */
const void *gpu_table_load(const void *fake, pthread_once_t *once, void (*load)(void),
                           const void *const *loaded, const char *error, const char **why);

/* dlopen of the library env names (when set), else of the first of names
 * that loads; NULL when none does. */
void *gpu_dlopen_first(const char *env, const char *const *names, size_t n);

/* ---- errors ------------------------------------------------------------ */

/* "<what>: <call> failed: <name>[ (<words>)]" into err, as st. */
tack_status gpu_fail(tack_error *err, tack_status st, const char *what, const char *call,
                     const char *name, const char *words);

/* ---- opening a device -------------------------------------------------- */

/* "cuda" for index 0, else "cuda:N": how the user named the device. */
void gpu_spec(char spec[32], const char *prefix, int index);

/* The refusal of a device index past count, naming each device found
 * (name_of fills a device's name; "?" when it cannot). */
tack_status gpu_no_such_device(tack_error *err, const char *spec, const char *vendor,
                               const char *prefix, int index, int count,
                               void (*name_of)(const void *api, int i, char *name, size_t cap),
                               const void *api);

/* Caps every GPU driver shares: device memory only, launches that need no
 * lock, fp64 and 64-bit atomics, the memory sizes, and the work items one
 * launch can cover (grids stride past it, gpu.h). */
void gpu_caps_common(backend_caps *c, size_t total_mem, int local_mem, int max_workgroup,
                     int compute_units, int max_block[3], int64_t max_grid_dim[3]);

/* *out = the printf of fmt, malloc'd; TACK_ERR_NOMEM "out of memory
 * opening a <vendor> device" when it cannot be had. */
tack_status gpu_target_text(char **out, const char *vendor, tack_error *err, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* The end of every open: *out = b when its steps succeeded (st is
 * TACK_OK), else b closed (close undoes what steps got done) and st. */
tack_status gpu_open_done(backend *b, tack_status st, backend **out, void (*close)(backend *b));

/* ---- code objects ------------------------------------------------------ */

typedef struct gpu_code {
    ir_func *f;     /* a copy of the post-pass IR that owns its strings:
                       the pack fill evaluates the launch range from it */
    char *entry;    /* the kernel function's name */
    int narrays;
    int *arrays;    /* the ROLE_ARRAY parameters, in order (malloc'd) */
    gpu_print_table prints; /* print(): its records' formats (print_buf.c) */
} gpu_code;

/* A NUL-terminated malloc'd copy of n bytes (NULL: no memory). */
char *gpu_dup_n(const void *s, size_t n);

/* Fills g for f and its entry; -1 when memory runs out (g is then half
 * filled: gpu_code_free it). */
int gpu_code_init(gpu_code *g, const ir_func *f, const char *entry, size_t entry_len);
void gpu_code_free(gpu_code *g);
/* A driver's code object: size zeroed bytes, its first member a gpu_code
 * filled by gpu_code_init; NULL with err's gpu_nomem_building(vendor). */
void *gpu_code_new(size_t size, const ir_func *f, const char *entry, size_t entry_len,
                   const char *vendor, tack_error *err);

/* "kernel '<name>': out of memory building <vendor> code" */
tack_status gpu_nomem_building(tack_error *err, const char *kernel_name, const char *vendor);

/* ---- the artifact ------------------------------------------------------ */

/* The frame of the disk cache's record: magic, version, the entry, the
 * target it was built for, then the driver's blobs. */
void gpu_artifact_head(ser_writer *w, uint32_t magic, uint32_t version, const char *entry,
                       const char *target);

/* Reads a record back: the frame, then nblobs blobs (views into bytes);
 * 0 when it is damaged: a wrong magic or version, an empty entry or
 * target, or one with a NUL (they go to the driver NUL-terminated), a
 * blob cut short, or bytes after the last. */
typedef struct gpu_record {
    const char *entry, *target;
    size_t entry_len, target_len;
} gpu_record;
int gpu_artifact_read(const void *bytes, size_t n, uint32_t magic, uint32_t version,
                      gpu_record *out, int nblobs, const void **blob, size_t *len);

/* "kernel '<name>': the stored <vendor> code is damaged or from another
 * version", TACK_ERR_INTERNAL. */
tack_status gpu_artifact_damaged(tack_error *err, const char *kernel_name, const char *vendor);

/* The cache's key names the target already, so a mismatch is damage:
 * TACK_ERR_INTERNAL "... is for <for_what><stored>, the device is <mine>". */
tack_status gpu_artifact_check_target(tack_error *err, const char *kernel_name,
                                      const char *vendor, const char *for_what,
                                      const gpu_record *a, const char *mine);

/* ---- memory ------------------------------------------------------------ */

/* An allocation larger than the device's memory is refused before the
 * driver is asked (TACK_ERR_NOMEM); TACK_OK otherwise. */
tack_status gpu_mem_check(tack_error *err, size_t bytes, const backend_caps *caps,
                          const char *description);

/* ---- launching --------------------------------------------------------- */

/* The checks before a launch, filling out; 1
 * when there is nothing to run (a zero trip count: no thread would find
 * an iteration), 0 to go on, -1 with err filled when the call does not
 * fit the code (max_args: the driver's limit on array arguments). */
typedef struct gpu_launch_shape {
    const char *name; /* the kernel's name, for errors */
    int ninner;
    int64_t count, inner0, inner1; /* the pack's trip counts */
} gpu_launch_shape;
int gpu_launch_begin(const gpu_code *g, const backend_call *call, const int64_t *pack,
                     int nargs, int max_args, gpu_launch_shape *out, tack_error *err);

/* Grid arithmetic the drivers share. */
static inline int64_t gpu_pow2_at_least(int64_t v, int64_t cap) {
    int64_t p = 1;
    while (p < v && p < cap) p *= 2;
    return p;
}
static inline int64_t gpu_cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
static inline int64_t gpu_min64(int64_t a, int64_t b) { return a < b ? a : b; }

/* Blocks of `items` threads and a grid for a range (gpu.h): threads along
 * the innermost extents first (consecutive lanes read consecutive
 * elements of a row-major array), the rest along the outer range; the
 * grid holds `budget` blocks at most (a few per compute unit), past which
 * threads stride.  HIP's grids and Level Zero's groups. */
void gpu_grid_strided(int64_t items, const int max_block[3], const int64_t max_grid[3],
                      int64_t budget, int ninner, int64_t count, int64_t inner0, int64_t inner1,
                      uint32_t grid[3], uint32_t block[3]);

/* print(): the record buffer for one launch through the driver's memory
 * entries (m, its backend table), its header written; *pbuf is NULL (and
 * nothing done) when the kernel has no print. */
tack_status gpu_print_begin(backend *b, const backend_ops *m, const gpu_code *g, void **pbuf,
                            uint32_t *pcap, tack_error *err);
/* After the launch: when st is TACK_OK, its records formatted in whole
 * lines; the buffer freed either way.  Returns st or the read's failure. */
tack_status gpu_print_end(backend *b, const backend_ops *m, const gpu_code *g, const char *name,
                          void *pbuf, uint32_t pcap, tack_status st, tack_error *err);

/* The backend table's launch: the pack filled from the call, then the
 * driver's launch of it. */
typedef tack_status (*gpu_launch_fn)(backend *b, backend_code *c, const backend_call *call,
                                     const int64_t *pack, tack_error *err);
tack_status gpu_pack_and_launch(backend *b, backend_code *c, const backend_call *call,
                                gpu_launch_fn launch, tack_error *err);

/* The backend table's range: the launch range, array elements read
 * through the driver's mem_read. */
tack_status gpu_driver_range(backend *b, backend_code *c, const backend_call *call,
                             tack_status (*read)(backend *, const void *, size_t, void *, size_t,
                                                 tack_error *),
                             int64_t out[BACKEND_RANGE_LEN], tack_error *err);

/* ---- queued launches --------------------------------------------------- */

/* A device's stream returns from a launch once it is queued (caps.
 * queued_launch), so a fault in the kernel's run surfaces at the next wait
 * (a copy, synchronize), which knows only the driver's error code.  The
 * queue remembers the names of the launches since the last wait, so that
 * failure can name them.  The pack and arrays need no keeping: the
 * drivers copy a launch's arguments before it returns. */
#define GPU_QUEUE_NAMES 32
#define GPU_NAME_LEN 64
typedef struct gpu_queue {
    pthread_mutex_t lock;
    uint64_t next; /* launches noted */
    uint64_t done; /* those before it were waited for */
    char names[GPU_QUEUE_NAMES][GPU_NAME_LEN];
} gpu_queue;

void gpu_queue_init(gpu_queue *q);
void gpu_queue_destroy(gpu_queue *q);
/* A launch named `name` was queued. */
void gpu_queue_note(gpu_queue *q, const char *name);
/* Taken before a wait: the launches it covers. */
uint64_t gpu_queue_mark(gpu_queue *q);
/* 1 when launches were queued since the last wait. */
int gpu_queue_busy(gpu_queue *q);
/* After a wait begun at mark, with st its result: the launches before
 * mark are finished.  A failure names them (err's message gets "kernel
 * 'k' (queued earlier, reported at synchronization): " before the
 * driver's words, or the list of the kernels it may have been); returns
 * st. */
tack_status gpu_queue_waited(gpu_queue *q, uint64_t mark, tack_status st, tack_error *err);

/* ---- streams and events (tack.Stream, tack.Event) ----------------------- */

/* A driver's stream and event calls (CUDA's, HIP's), each failure in err
 * as "<what>: <call> failed: NAME".  Events are timed ones. */
typedef struct gpu_stream_api {
    tack_status (*create)(backend *b, void **stream, tack_error *err);
    void (*destroy)(backend *b, void *stream);
    tack_status (*sync)(backend *b, void *stream, const char *what, tack_error *err);
    tack_status (*record)(backend *b, void *stream, void **event, tack_error *err);
    tack_status (*wait_event)(backend *b, void *stream, void *event, tack_error *err);
    tack_status (*event_sync)(backend *b, void *event, tack_error *err);
    tack_status (*elapsed)(backend *b, void *start, void *end, double *ms, tack_error *err);
    void (*event_free)(backend *b, void *event);
} gpu_stream_api;

/* One tack.Stream's queue: the driver's stream and the launches queued on
 * it since its last wait.  The device's own stream is the driver's
 * (b->stream, b->queue); these are the others, listed so that copies and
 * synchronize can wait for them. */
typedef struct gpu_stream {
    void *handle;
    int foreign; /* another library's (tack.Stream(handle=)): never destroyed */
    gpu_queue queue;
    struct gpu_stream *next, *prev;
} gpu_stream;

typedef struct gpu_streams {
    pthread_mutex_t lock;
    gpu_stream *list;
} gpu_streams;

void gpu_streams_init(gpu_streams *all);
void gpu_streams_destroy(gpu_streams *all);
/* A new stream of the driver's (handle 0), or another library's. */
tack_status gpu_stream_create(backend *b, const gpu_stream_api *api, gpu_streams *all,
                              uint64_t handle, void **queue, tack_error *err);
void gpu_stream_destroy(backend *b, const gpu_stream_api *api, gpu_streams *all, void *queue);
/* The host waits for one stream; a failure names its queued launches. */
tack_status gpu_stream_sync(backend *b, const gpu_stream_api *api, gpu_stream *s,
                            const char *what, tack_error *err);
/* The host waits for every stream with launches queued (a copy, the
 * device's synchronize: launches on any stream come before them). */
tack_status gpu_streams_sync(backend *b, const gpu_stream_api *api, gpu_streams *all,
                             const char *what, tack_error *err);

/* The stream a launch goes on, and its queue: the call's, or the
 * device's own (NULL). */
static inline void *gpu_stream_handle(void *queue, void *own) {
    return queue ? ((gpu_stream *)queue)->handle : own;
}
static inline gpu_queue *gpu_stream_queue(void *queue, gpu_queue *own) {
    return queue ? &((gpu_stream *)queue)->queue : own;
}

/* ---- the backend table ------------------------------------------------ */

/* inspect for a driver whose only text is its source: the dialect's source
 * for TACK_INSPECT_LLVM, else TACK_ERR_VALUE "kernel '<name>': <vendor> has
 * only its source<what> as text (kind N)<hint>". */
tack_status gpu_inspect_source(const ir_func *f, const gpu_dialect *d, const char *symbol_base,
                               tack_inspect_kind kind, const char *vendor, const char *what,
                               const char *hint, char **text, tack_error *err);

/* mem_wrap where a handle is the device address itself, so another
 * library's device pointer is one as it is. */
tack_status gpu_mem_wrap_address(backend *b, uint64_t address, size_t bytes, void **handle,
                                 tack_error *err);

/* synchronize for a driver whose every call waits: nothing is in flight. */
tack_status gpu_nothing_in_flight(backend *b, tack_error *err);

/* Each driver <p> defines these backend-table entries as <p>_open, ...;
 * declared once here. */
#define GPU_DRIVER_DECLARE(p)                                                                   \
    GPU_DRIVER_DECLARE_CORE(p);                                                                \
    GPU_DRIVER_DECLARE_MEM(p)
/* The memory entries alone. */
#define GPU_DRIVER_DECLARE_MEM(p)                                                               \
    tack_status p##_mem_alloc(backend *b, size_t bytes, void **handle, tack_error *err);       \
    void p##_mem_free(backend *b, void *handle);                                               \
    tack_status p##_mem_write(backend *b, void *handle, size_t offset, const void *src,        \
                              size_t n, tack_error *err);                                      \
    tack_status p##_mem_read(backend *b, const void *handle, size_t offset, void *dst,         \
                             size_t n, tack_error *err)
/* The same but memory, for a driver whose memory is gpu/runtime.c's. */
#define GPU_DRIVER_DECLARE_CORE(p)                                                              \
    tack_status p##_open(int index, int num_threads, backend **out, tack_error *err);          \
    void p##_close(backend *b);                                                                \
    void p##_caps(const backend *b, backend_caps *out);                                        \
    const char *p##_describe(const backend *b);                                                \
    const char *p##_cache_target(const backend *b);                                            \
    int p##_artifact(backend *b, const backend_code *c, ser_writer *w);                        \
    tack_status p##_load(backend *b, const ir_func *f, const void *bytes, size_t n,            \
                         backend_code **out, tack_error *err);                                 \
    void p##_release(backend *b, backend_code *c);                                             \
    /* Runs c with a filled pack (launch.c); a zero trip count returns at once. */            \
    tack_status p##_launch_pack(backend *b, backend_code *c, const backend_call *call,         \
                                const int64_t *pack, tack_error *err)

/* A driver whose launches return queued (caps.queued_launch) defines
 * <p>_wait: the host waits for the device's stream, a failure named by
 * `what` and by the launches it covered (gpu_queue_waited); this makes
 * its queue_synchronize, which the runtime calls after each launch in
 * debug mode, under tack.timer and with TACK_LAUNCH_WAIT=1. */
#define GPU_DRIVER_QUEUED(p)                                                                    \
    tack_status p##_wait(backend *b, const char *what, tack_error *err);                       \
    static inline tack_status p##_queue_synchronize(backend *b, void *queue, tack_error *err) {\
        (void)queue; /* streams share the device's (no queue_create) */                        \
        return p##_wait(b, "synchronizing the device's stream", err);                          \
    }

/* The accessors every driver's struct backend answers the same way: its
 * caps, description and target fields. */
#define GPU_DRIVER_ACCESSORS(p)                                                                 \
    void p##_caps(const backend *b, backend_caps *out) { *out = b->caps; }                     \
    const char *p##_describe(const backend *b) { return b->description; }                     \
    const char *p##_cache_target(const backend *b) { return b->target; }

/* The table's entries, each driver's <p>_build, <p>_inspect and
 * <p>_synchronize with the steps every driver shares: a vendor table is
 * { .name, GPU_DRIVER_OPS(p) } and what it has beyond them (mem_wrap). */
#define GPU_DRIVER_GLUE(p, mem_read)                                                            \
    static tack_status p##_launch(backend *b, backend_code *c, const backend_call *call,       \
                                  tack_error *err) {                                           \
        return gpu_pack_and_launch(b, c, call, p##_launch_pack, err);                          \
    }                                                                                          \
    static tack_status p##_range(backend *b, backend_code *c, const backend_call *call,        \
                                 int64_t out[BACKEND_RANGE_LEN], tack_error *err) {            \
        return gpu_driver_range(b, c, call, mem_read, out, err);                               \
    }
#define GPU_DRIVER_OPS(p)                                                                       \
    GPU_DRIVER_OPS_CORE(p), .synchronize = p##_synchronize, .mem_alloc = p##_mem_alloc,        \
    .mem_free = p##_mem_free, .mem_write = p##_mem_write, .mem_read = p##_mem_read
/* The same but synchronize and memory (gpu/runtime.h's GPU_RT_OPS). */
#define GPU_DRIVER_OPS_CORE(p)                                                                  \
    .build = p##_build, .inspect = p##_inspect, .open = p##_open, .close = p##_close,          \
    .caps = p##_caps, .describe = p##_describe, .cache_target = p##_cache_target,              \
    .artifact = p##_artifact, .load = p##_load, .release = p##_release, .range = p##_range,    \
    .launch = p##_launch

#endif
