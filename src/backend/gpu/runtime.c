/* runtime.c - the CUDA-shaped runtimes' flow (runtime.h), written once:
 * each step makes the device current, makes the vendor's call and names
 * its failure the same way for CUDA and HIP. */
#include "backend/gpu/runtime.h"

#include <stdint.h>
#include <stdio.h>

#define OPS(b) (GPU_RT(b)->ops)

/* The call's code as a status: TACK_OK, or the vendor's failure. */
static tack_status check(backend *b, int code, const char *what, const char *call,
                         tack_error *err) {
    return code ? OPS(b)->fail(b, err, what, call, code) : TACK_OK;
}

/* ---- the device's stream ----------------------------------------------- */

void gpu_rt_init(backend *b, const gpu_rt_ops *ops, const backend_caps *caps,
                 const char *description) {
    gpu_runtime *rt = GPU_RT(b);
    rt->ops = ops;
    rt->caps = caps;
    rt->description = description;
    gpu_queue_init(&rt->queue);
    gpu_streams_init(&rt->streams);
}

void gpu_rt_fini(backend *b) {
    gpu_queue_destroy(&GPU_RT(b)->queue);
    gpu_streams_destroy(&GPU_RT(b)->streams);
}

tack_status gpu_rt_open_stream(backend *b, tack_error *err) {
    gpu_runtime *rt = GPU_RT(b);
    tack_status st = rt->ops->enter(b, err);
    if (st) return st;
    int r = rt->ops->stream_create(b, &rt->stream);
    if (!r) return TACK_OK;
    rt->stream = NULL;
    return check(b, r, rt->description, rt->ops->call.stream_create, err);
}

void gpu_rt_drain(backend *b) {
    gpu_runtime *rt = GPU_RT(b);
    tack_error scratch;
    if (rt->ops->enter(b, &scratch) != TACK_OK) return;
    if (rt->stream) rt->ops->stream_sync(b, rt->stream);
    if (rt->ops->closing) rt->ops->closing(b);
    if (rt->stream) rt->ops->stream_destroy(b, rt->stream);
}

/* ---- waiting ------------------------------------------------------------ */

tack_status gpu_rt_wait(backend *b, const char *what, tack_error *err) {
    gpu_runtime *rt = GPU_RT(b);
    tack_status entered = rt->ops->enter(b, err);
    if (entered) return entered;
    uint64_t mark = gpu_queue_mark(&rt->queue);
    int r = rt->ops->stream_sync(b, rt->stream);
    return gpu_queue_waited(&rt->queue, mark, check(b, r, what, rt->ops->call.stream_sync, err),
                            err);
}

static const gpu_stream_api stream_api;

/* Work on any tack.Stream comes before a copy or a synchronize. */
static tack_status streams_first(backend *b, const char *what, tack_error *err) {
    return gpu_streams_sync(b, &stream_api, &GPU_RT(b)->streams, what, err);
}

tack_status gpu_rt_synchronize(backend *b, tack_error *err) {
    gpu_runtime *rt = GPU_RT(b);
    const char *what = "synchronizing the device";
    tack_status st = rt->ops->enter(b, err);
    if (st) return st;
    /* Each tack.Stream first, so that a failure names its launches. */
    if ((st = streams_first(b, what, err))) return st;
    uint64_t mark = gpu_queue_mark(&rt->queue);
    int r = rt->ops->device_sync(b);
    return gpu_queue_waited(&rt->queue, mark, check(b, r, what, rt->ops->call.device_sync, err),
                            err);
}

/* ---- memory ------------------------------------------------------------- */

tack_status gpu_rt_mem_alloc(backend *b, size_t bytes, void **handle, tack_error *err) {
    gpu_runtime *rt = GPU_RT(b);
    *handle = NULL;
    tack_status st = gpu_mem_check(err, bytes, rt->caps, rt->description);
    if (!st) st = rt->ops->enter(b, err);
    if (st) return st;
    /* The drivers refuse 0 bytes; an empty array still gets a handle, so a
     * handle is never 0. */
    int r = rt->ops->alloc(b, handle, bytes ? bytes : 1);
    if (!r) return TACK_OK;
    *handle = NULL;
    char what[640 + 64];
    snprintf(what, sizeof what, "allocating %zu bytes on %s", bytes, rt->description);
    return check(b, r, what, rt->ops->call.alloc, err);
}

void gpu_rt_mem_free(backend *b, void *handle) {
    tack_error scratch;
    if (!handle || OPS(b)->enter(b, &scratch) != TACK_OK) return;
    if (OPS(b)->freeing) OPS(b)->freeing(b, handle);
    OPS(b)->free(b, handle);
}

/* A copy is queued and then waited for: the call returns with the bytes
 * in place, or with the failure of a launch before it.  On the device's
 * stream (queue NULL) it comes after every launch queued before it, on
 * any stream; on a tack.Stream's (queue_mem_write, queue_mem_read) after
 * that stream's alone.  to_device: mem_write's direction. */
static tack_status copy(backend *b, void *queue, int to_device, void *handle, size_t offset,
                        void *host, size_t n, tack_error *err) {
    gpu_runtime *rt = GPU_RT(b);
    if (!n) return TACK_OK;
    tack_status st = rt->ops->enter(b, err);
    if (st) return st;
    char what[96];
    snprintf(what, sizeof what, "%s %zu bytes at offset %zu", to_device ? "writing" : "reading",
             n, offset);
    if (!queue && (st = streams_first(b, what, err))) return st;
    void *stream = gpu_stream_handle(queue, rt->stream);
    int r;
    if (to_device) {
        if (rt->ops->writing) rt->ops->writing(b, handle);
        r = rt->ops->copy_in(b, handle, offset, host, n, stream);
    } else {
        r = rt->ops->copy_out(b, host, handle, offset, n, stream);
    }
    if (r) return check(b, r, what, to_device ? rt->ops->call.copy_in : rt->ops->call.copy_out,
                        err);
    return queue ? gpu_stream_sync(b, &stream_api, queue, what, err) : gpu_rt_wait(b, what, err);
}

tack_status gpu_rt_mem_write(backend *b, void *handle, size_t offset, const void *src, size_t n,
                             tack_error *err) {
    return copy(b, NULL, 1, handle, offset, (void *)src, n, err);
}

tack_status gpu_rt_mem_read(backend *b, const void *handle, size_t offset, void *dst, size_t n,
                            tack_error *err) {
    return copy(b, NULL, 0, (void *)handle, offset, dst, n, err);
}

tack_status gpu_rt_queue_mem_write(backend *b, void *queue, void *handle, size_t offset,
                                   const void *src, size_t n, tack_error *err) {
    return copy(b, queue, 1, handle, offset, (void *)src, n, err);
}

tack_status gpu_rt_queue_mem_read(backend *b, void *queue, const void *handle, size_t offset,
                                  void *dst, size_t n, tack_error *err) {
    return copy(b, queue, 0, (void *)handle, offset, dst, n, err);
}

/* ---- launching ---------------------------------------------------------- */

tack_status gpu_rt_launch(backend *b, void *fn, const char *name, const unsigned grid[3],
                          const unsigned block[3], void *queue, void **params, tack_error *err) {
    gpu_runtime *rt = GPU_RT(b);
    int r = rt->ops->launch(b, fn, grid, block, gpu_stream_handle(queue, rt->stream), params);
    if (r) {
        char what[160];
        snprintf(what, sizeof what, "kernel '%s'", name);
        return check(b, r, what, rt->ops->call.launch, err);
    }
    gpu_queue_note(gpu_stream_queue(queue, &rt->queue), name);
    return TACK_OK;
}

/* ---- modules ------------------------------------------------------------ */

tack_status gpu_rt_module_load(backend *b, const char *kernel, const void *image,
                               const char *entry, void **module, void **fn, tack_error *err) {
    const gpu_rt_ops *o = OPS(b);
    *module = *fn = NULL;
    char what[160];
    snprintf(what, sizeof what, "kernel '%s'", kernel);
    tack_status st = o->enter(b, err);
    if (st) return st;
    char log[1024] = "";
    int r = o->module_load(b, module, image, log, sizeof log);
    if (r) {
        *module = NULL;
        st = check(b, r, what, o->call.module_load, err);
        log[sizeof log - 1] = 0;
        if (o->module_refused) o->module_refused(b, r, log, err);
        return st;
    }
    if ((r = o->module_function(b, fn, *module, entry))) {
        char call[192];
        snprintf(call, sizeof call, "%s(\"%s\")", o->call.module_function, entry);
        return check(b, r, what, call, err);
    }
    return TACK_OK;
}

void gpu_rt_module_unload(backend *b, void *module) {
    tack_error scratch;
    if (module && OPS(b)->enter(b, &scratch) == TACK_OK) OPS(b)->module_unload(b, module);
}

/* ---- streams and events: gpu/driver.c's stream skeleton's calls --------- */

static tack_status s_create(backend *b, void **stream, tack_error *err) {
    tack_status st = OPS(b)->enter(b, err);
    if (st) return st;
    void *s = NULL;
    int r = OPS(b)->stream_create(b, &s);
    if (r) return check(b, r, "making a stream", OPS(b)->call.stream_create, err);
    *stream = s;
    return TACK_OK;
}

static void s_destroy(backend *b, void *stream) {
    tack_error scratch;
    if (OPS(b)->enter(b, &scratch) == TACK_OK) OPS(b)->stream_destroy(b, stream);
}

static tack_status s_sync(backend *b, void *stream, const char *what, tack_error *err) {
    tack_status st = OPS(b)->enter(b, err);
    if (st) return st;
    return check(b, OPS(b)->stream_sync(b, stream), what, OPS(b)->call.stream_sync, err);
}

static tack_status s_record(backend *b, void *stream, void **event, tack_error *err) {
    const char *what = "recording an event";
    tack_status st = OPS(b)->enter(b, err);
    if (st) return st;
    void *ev = NULL;
    int r = OPS(b)->event_create(b, &ev);
    if (r) return check(b, r, what, OPS(b)->call.event_create, err);
    if ((r = OPS(b)->event_record(b, ev, stream))) {
        OPS(b)->event_destroy(b, ev);
        return check(b, r, what, OPS(b)->call.event_record, err);
    }
    *event = ev;
    return TACK_OK;
}

static tack_status s_wait_event(backend *b, void *stream, void *event, tack_error *err) {
    tack_status st = OPS(b)->enter(b, err);
    if (st) return st;
    return check(b, OPS(b)->stream_wait_event(b, stream, event), "waiting for an event",
                 OPS(b)->call.wait_event, err);
}

static tack_status s_event_sync(backend *b, void *event, tack_error *err) {
    tack_status st = OPS(b)->enter(b, err);
    if (st) return st;
    return check(b, OPS(b)->event_sync(b, event), "waiting for an event",
                 OPS(b)->call.event_sync, err);
}

static tack_status s_elapsed(backend *b, void *start, void *end, double *ms, tack_error *err) {
    const gpu_rt_ops *o = OPS(b);
    *ms = 0;
    if (o->elapsed_missing && o->elapsed_missing(b))
        return backend_error(err, TACK_ERR_VALUE, "Event.elapsed: the %s driver has no %s",
                             o->vendor, o->call.elapsed);
    tack_status st = o->enter(b, err);
    if (st) return st;
    /* The elapsed-time call does not wait: the end event first. */
    int r = o->event_sync(b, end);
    if (r) return check(b, r, "Event.elapsed", o->call.event_sync, err);
    float f = 0;
    if ((r = o->event_elapsed(b, &f, start, end)))
        return check(b, r, "Event.elapsed", o->call.elapsed, err);
    *ms = f;
    return TACK_OK;
}

static void s_event_free(backend *b, void *event) {
    tack_error scratch;
    if (event && OPS(b)->enter(b, &scratch) == TACK_OK) OPS(b)->event_destroy(b, event);
}

static const gpu_stream_api stream_api = {s_create,     s_destroy,    s_sync,    s_record,
                                          s_wait_event, s_event_sync, s_elapsed, s_event_free};

/* ---- the backend table's queue and event entries ------------------------ */

tack_status gpu_rt_queue_create(backend *b, void **q, tack_error *err) {
    return gpu_stream_create(b, &stream_api, &GPU_RT(b)->streams, 0, q, err);
}

tack_status gpu_rt_queue_wrap(backend *b, uint64_t handle, void **q, tack_error *err) {
    if (!handle) return backend_error(err, TACK_ERR_VALUE, "tack.Stream(handle=0): 0 is no stream");
    return gpu_stream_create(b, &stream_api, &GPU_RT(b)->streams, handle, q, err);
}

uint64_t gpu_rt_queue_handle(backend *b, void *q) {
    return (uint64_t)(uintptr_t)gpu_stream_handle(q, GPU_RT(b)->stream);
}

void gpu_rt_queue_destroy(backend *b, void *q) {
    gpu_stream_destroy(b, &stream_api, &GPU_RT(b)->streams, q);
}

tack_status gpu_rt_queue_synchronize(backend *b, void *q, tack_error *err) {
    if (!q) return gpu_rt_wait(b, "synchronizing the device's stream", err);
    return gpu_stream_sync(b, &stream_api, q, "synchronizing a stream", err);
}

tack_status gpu_rt_event_record(backend *b, void *q, void **ev, tack_error *err) {
    return s_record(b, gpu_stream_handle(q, GPU_RT(b)->stream), ev, err);
}

tack_status gpu_rt_event_wait(backend *b, void *q, void *ev, tack_error *err) {
    return s_wait_event(b, gpu_stream_handle(q, GPU_RT(b)->stream), ev, err);
}

tack_status gpu_rt_event_synchronize(backend *b, void *ev, tack_error *err) {
    return s_event_sync(b, ev, err);
}

tack_status gpu_rt_event_elapsed(backend *b, void *start, void *end, double *ms,
                                 tack_error *err) {
    return s_elapsed(b, start, end, ms, err);
}

void gpu_rt_event_free(backend *b, void *ev) { s_event_free(b, ev); }
