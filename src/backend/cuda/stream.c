/* stream.c - tack.Stream and tack.Event on CUDA: non-blocking streams of
 * the primary context (or another library's stream, wrapped) and timed
 * events, the calls gpu/driver.c's stream skeleton makes.  Every call
 * makes the device's context current first. */
#include "cuda.h"

#include <stdio.h>


static tack_status create(backend *b, void **stream, tack_error *err) {
    tack_status st = cuda_enter(b, err);
    if (st) return st;
    CUstream s = NULL;
    CUresult r = b->cu->StreamCreate(&s, CU_STREAM_NON_BLOCKING);
    if (r != CUDA_SUCCESS) return cuda_fail(b->cu, err, "making a stream", "cuStreamCreate", r);
    *stream = s;
    return TACK_OK;
}

static void destroy(backend *b, void *stream) {
    tack_error scratch;
    if (cuda_enter(b, &scratch) == TACK_OK) b->cu->StreamDestroy((CUstream)stream);
}

static tack_status sync(backend *b, void *stream, const char *what, tack_error *err) {
    tack_status st = cuda_enter(b, err);
    if (st) return st;
    CUresult r = b->cu->StreamSynchronize((CUstream)stream);
    return r == CUDA_SUCCESS ? TACK_OK : cuda_fail(b->cu, err, what, "cuStreamSynchronize", r);
}

static tack_status record(backend *b, void *stream, void **event, tack_error *err) {
    tack_status st = cuda_enter(b, err);
    if (st) return st;
    CUevent ev = NULL;
    CUresult r = b->cu->EventCreate(&ev, CU_EVENT_DEFAULT); /* timed */
    if (r != CUDA_SUCCESS) return cuda_fail(b->cu, err, "recording an event", "cuEventCreate", r);
    if ((r = b->cu->EventRecord(ev, (CUstream)stream)) != CUDA_SUCCESS) {
        b->cu->EventDestroy(ev);
        return cuda_fail(b->cu, err, "recording an event", "cuEventRecord", r);
    }
    *event = ev;
    return TACK_OK;
}

static tack_status wait_event(backend *b, void *stream, void *event, tack_error *err) {
    tack_status st = cuda_enter(b, err);
    if (st) return st;
    CUresult r = b->cu->StreamWaitEvent((CUstream)stream, (CUevent)event, 0);
    return r == CUDA_SUCCESS ? TACK_OK
                             : cuda_fail(b->cu, err, "waiting for an event", "cuStreamWaitEvent", r);
}

static tack_status event_sync(backend *b, void *event, tack_error *err) {
    tack_status st = cuda_enter(b, err);
    if (st) return st;
    CUresult r = b->cu->EventSynchronize((CUevent)event);
    return r == CUDA_SUCCESS
               ? TACK_OK
               : cuda_fail(b->cu, err, "waiting for an event", "cuEventSynchronize", r);
}

static tack_status elapsed(backend *b, void *start, void *end, double *ms, tack_error *err) {
    *ms = 0;
    if (!b->cu->EventElapsedTime)
        return backend_error(err, TACK_ERR_VALUE,
                             "Event.elapsed: the CUDA driver has no cuEventElapsedTime");
    tack_status st = cuda_enter(b, err);
    if (st) return st;
    /* cuEventElapsedTime does not wait: the end event first. */
    CUresult r = b->cu->EventSynchronize((CUevent)end);
    if (r != CUDA_SUCCESS) return cuda_fail(b->cu, err, "Event.elapsed", "cuEventSynchronize", r);
    float f = 0;
    r = b->cu->EventElapsedTime(&f, (CUevent)start, (CUevent)end);
    if (r != CUDA_SUCCESS) return cuda_fail(b->cu, err, "Event.elapsed", "cuEventElapsedTime", r);
    *ms = f;
    return TACK_OK;
}

static void event_free(backend *b, void *event) {
    tack_error scratch;
    if (event && cuda_enter(b, &scratch) == TACK_OK) b->cu->EventDestroy((CUevent)event);
}

const gpu_stream_api cuda_stream_api = {create,     destroy, sync,    record,
                                        wait_event, event_sync, elapsed, event_free};
