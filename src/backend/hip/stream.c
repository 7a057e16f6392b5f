/* stream.c - tack.Stream and tack.Event on HIP: non-blocking streams of
 * the device (or another library's stream, wrapped) and timed events, the
 * calls gpu/driver.c's stream skeleton makes.  Every call makes the
 * device current first. */
#include "hip.h"

static tack_status create(backend *b, void **stream, tack_error *err) {
    tack_status st = hip_enter(b, err);
    if (st) return st;
    hipStream_t s = NULL;
    hipError_t r = b->hip->StreamCreateWithFlags(&s, hipStreamNonBlocking);
    if (r != hipSuccess)
        return hip_fail(b->hip, err, "making a stream", "hipStreamCreateWithFlags", r);
    *stream = s;
    return TACK_OK;
}

static void destroy(backend *b, void *stream) {
    tack_error scratch;
    if (hip_enter(b, &scratch) == TACK_OK) b->hip->StreamDestroy((hipStream_t)stream);
}

static tack_status sync(backend *b, void *stream, const char *what, tack_error *err) {
    tack_status st = hip_enter(b, err);
    if (st) return st;
    hipError_t r = b->hip->StreamSynchronize((hipStream_t)stream);
    return r == hipSuccess ? TACK_OK : hip_fail(b->hip, err, what, "hipStreamSynchronize", r);
}

static tack_status record(backend *b, void *stream, void **event, tack_error *err) {
    tack_status st = hip_enter(b, err);
    if (st) return st;
    hipEvent_t ev = NULL;
    hipError_t r = b->hip->EventCreate(&ev);
    if (r != hipSuccess) return hip_fail(b->hip, err, "recording an event", "hipEventCreate", r);
    if ((r = b->hip->EventRecord(ev, (hipStream_t)stream)) != hipSuccess) {
        b->hip->EventDestroy(ev);
        return hip_fail(b->hip, err, "recording an event", "hipEventRecord", r);
    }
    *event = ev;
    return TACK_OK;
}

static tack_status wait_event(backend *b, void *stream, void *event, tack_error *err) {
    tack_status st = hip_enter(b, err);
    if (st) return st;
    hipError_t r = b->hip->StreamWaitEvent((hipStream_t)stream, (hipEvent_t)event, 0);
    return r == hipSuccess
               ? TACK_OK
               : hip_fail(b->hip, err, "waiting for an event", "hipStreamWaitEvent", r);
}

static tack_status event_sync(backend *b, void *event, tack_error *err) {
    tack_status st = hip_enter(b, err);
    if (st) return st;
    hipError_t r = b->hip->EventSynchronize((hipEvent_t)event);
    return r == hipSuccess
               ? TACK_OK
               : hip_fail(b->hip, err, "waiting for an event", "hipEventSynchronize", r);
}

static tack_status elapsed(backend *b, void *start, void *end, double *ms, tack_error *err) {
    *ms = 0;
    tack_status st = hip_enter(b, err);
    if (st) return st;
    /* hipEventElapsedTime does not wait: the end event first. */
    hipError_t r = b->hip->EventSynchronize((hipEvent_t)end);
    if (r != hipSuccess) return hip_fail(b->hip, err, "Event.elapsed", "hipEventSynchronize", r);
    float f = 0;
    r = b->hip->EventElapsedTime(&f, (hipEvent_t)start, (hipEvent_t)end);
    if (r != hipSuccess) return hip_fail(b->hip, err, "Event.elapsed", "hipEventElapsedTime", r);
    *ms = f;
    return TACK_OK;
}

static void event_free(backend *b, void *event) {
    tack_error scratch;
    if (event && hip_enter(b, &scratch) == TACK_OK) b->hip->EventDestroy((hipEvent_t)event);
}

const gpu_stream_api hip_stream_api = {create,     destroy,    sync,    record,
                                       wait_event, event_sync, elapsed, event_free};
