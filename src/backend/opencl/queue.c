/* queue.c - queues and events: the device's own queue and tack.Stream's
 * (more in-order queues of its context), markers as events, and the
 * record of queued launches.
 *
 * A launch returns once queued, so a failure the device reports later has
 * no call to return from: each queue keeps the events of its last
 * OPENCL_RING launches with their kernels' names, and the next
 * synchronization (a queue's or the device's, or a copy, which waits for
 * the work before it) reports the first that failed by name.  A launch
 * that leaves the ring unseen is checked then, without waiting. */
#include "opencl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static cl_int event_status(backend *b, cl_event ev) {
    cl_int s = 0;
    cl_int e = b->cl->GetEventInfo(ev, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof s, &s, NULL);
    return e != CL_SUCCESS ? e : s; /* negative: the command failed */
}

/* Under oq->lock: the launch in slot i checked (without waiting) and let
 * go; its failure is kept when it is the first. */
static void drop_slot(backend *b, opencl_queue *oq, unsigned i) {
    cl_event ev = oq->ring[i];
    if (!ev) return;
    cl_int s = event_status(b, ev);
    if (s < 0 && !oq->failed) {
        oq->failed = s;
        memcpy(oq->failed_name, oq->names[i], OPENCL_NAME_LEN);
    }
    b->cl->ReleaseEvent(ev);
    oq->ring[i] = NULL;
}

tack_status opencl_queue_init(backend *b, opencl_queue *oq, tack_error *err) {
    memset(oq, 0, sizeof *oq);
    pthread_mutex_init(&oq->lock, NULL);
    cl_int e = CL_SUCCESS;
    cl_command_queue_properties props = b->profiling ? CL_QUEUE_PROFILING_ENABLE : 0;
    oq->q = b->cl->CreateCommandQueue(b->context, b->device, props, &e);
    if (props && (!oq->q || e != CL_SUCCESS)) {
        /* A driver without profiling: queues that do not time. */
        if (oq->q) b->cl->ReleaseCommandQueue(oq->q);
        b->profiling = 0;
        oq->q = b->cl->CreateCommandQueue(b->context, b->device, 0, &e);
    }
    if (!oq->q || e != CL_SUCCESS) {
        if (oq->q) b->cl->ReleaseCommandQueue(oq->q);
        oq->q = NULL;
        pthread_mutex_destroy(&oq->lock);
        return opencl_fail(err, b->description, "clCreateCommandQueue", e);
    }
    return TACK_OK;
}

void opencl_queue_note(backend *b, opencl_queue *oq, cl_event ev, const char *kernel_name) {
    pthread_mutex_lock(&oq->lock);
    unsigned i = oq->next++ % OPENCL_RING;
    drop_slot(b, oq, i);
    oq->ring[i] = ev;
    /* A bounded copy: snprintf("%s") took about 1,000 instructions of each
     * queued launch (callgrind). */
    size_t n = strnlen(kernel_name, OPENCL_NAME_LEN - 1);
    memcpy(oq->names[i], kernel_name, n);
    oq->names[i][n] = '\0';
    pthread_mutex_unlock(&oq->lock);
}

/* The queue's finished launches checked; its first failure, if any, as
 * err (and then forgotten: it is reported once). */
tack_status opencl_queue_report(backend *b, opencl_queue *oq, tack_error *err) {
    pthread_mutex_lock(&oq->lock);
    for (unsigned i = 0; i < OPENCL_RING; i++) drop_slot(b, oq, i);
    cl_int failed = oq->failed;
    char name[OPENCL_NAME_LEN];
    memcpy(name, oq->failed_name, sizeof name);
    oq->failed = 0;
    pthread_mutex_unlock(&oq->lock);
    if (!failed) return TACK_OK;
    char what[OPENCL_NAME_LEN + 64];
    snprintf(what, sizeof what, "kernel '%s' (queued earlier, reported at synchronization)",
             name);
    return opencl_fail(err, what, "its launch", failed);
}

tack_status opencl_queue_finish(backend *b, opencl_queue *oq, tack_error *err) {
    cl_int e = b->cl->Finish(oq->q);
    tack_status st = opencl_queue_report(b, oq, err);
    if (st) return st;
    return e == CL_SUCCESS ? TACK_OK : opencl_fail(err, "synchronizing the device", "clFinish", e);
}

tack_status opencl_streams_finish(backend *b, tack_error *err) {
    tack_status st = TACK_OK;
    pthread_mutex_lock(&b->streams_lock);
    for (opencl_queue *s = b->streams; s; s = s->link) {
        tack_error e2;
        tack_status s2 = opencl_queue_finish(b, s, st ? &e2 : err);
        if (!st) st = s2;
    }
    pthread_mutex_unlock(&b->streams_lock);
    return st;
}

tack_status opencl_copy_fail(backend *b, opencl_queue *oq, const char *what, const char *call,
                             cl_int code, tack_error *err) {
    b->cl->Finish(oq->q);
    if (opencl_queue_report(b, oq, err)) return err->status;
    return opencl_fail(err, what, call, code);
}

tack_status opencl_synchronize_all(backend *b, tack_error *err) {
    tack_status st = opencl_streams_finish(b, err);
    tack_error e2;
    tack_status s2 = opencl_queue_finish(b, &b->main, st ? &e2 : err);
    return st ? st : s2;
}

/* ---- tack.Stream --------------------------------------------------------- */

tack_status opencl_queue_create(backend *b, void **queue, tack_error *err) {
    *queue = NULL;
    opencl_queue *oq = malloc(sizeof *oq);
    if (!oq) return backend_error(err, TACK_ERR_NOMEM, "out of memory making a stream");
    tack_status st = opencl_queue_init(b, oq, err);
    if (st) {
        free(oq);
        return st;
    }
    pthread_mutex_lock(&b->streams_lock);
    oq->link = b->streams;
    if (b->streams) b->streams->prev = oq;
    b->streams = oq;
    pthread_mutex_unlock(&b->streams_lock);
    *queue = oq;
    return TACK_OK;
}

void opencl_queue_destroy(backend *b, void *queue) {
    opencl_queue *oq = queue;
    if (!oq) return;
    pthread_mutex_lock(&b->streams_lock);
    if (oq->prev) oq->prev->link = oq->link;
    else b->streams = oq->link;
    if (oq->link) oq->link->prev = oq->prev;
    pthread_mutex_unlock(&b->streams_lock);
    /* Its work finishes (the driver would wait in the release anyway);
     * an unreported failure has nobody left to hear it. */
    tack_error ignored;
    opencl_queue_finish(b, oq, &ignored);
    b->cl->ReleaseCommandQueue(oq->q);
    pthread_mutex_destroy(&oq->lock);
    free(oq);
}

opencl_queue *opencl_queue_of(backend *b, void *queue) {
    return queue ? (opencl_queue *)queue : &b->main;
}

tack_status opencl_queue_synchronize(backend *b, void *queue, tack_error *err) {
    return opencl_queue_finish(b, opencl_queue_of(b, queue), err);
}

/* ---- events: markers ------------------------------------------------------ */

tack_status opencl_event_record(backend *b, void *queue, void **event, tack_error *err) {
    cl_event ev = NULL;
    opencl_queue *oq = opencl_queue_of(b, queue);
    /* With no wait list a marker completes after everything queued before
     * it on its (in-order) queue. */
    cl_int e = b->cl->EnqueueMarkerWithWaitList(oq->q, 0, NULL, &ev);
    if (e != CL_SUCCESS) return opencl_fail(err, "recording an event", "clEnqueueMarkerWithWaitList", e);
    b->cl->Flush(oq->q);
    *event = ev;
    return TACK_OK;
}

tack_status opencl_event_wait(backend *b, void *queue, void *event, tack_error *err) {
    cl_event ev = event;
    cl_int e = b->cl->EnqueueBarrierWithWaitList(opencl_queue_of(b, queue)->q, 1, &ev, NULL);
    return e == CL_SUCCESS ? TACK_OK
                           : opencl_fail(err, "waiting for an event", "clEnqueueBarrierWithWaitList", e);
}

tack_status opencl_event_synchronize(backend *b, void *event, tack_error *err) {
    cl_event ev = event;
    cl_int e = b->cl->WaitForEvents(1, &ev);
    return e == CL_SUCCESS ? TACK_OK : opencl_fail(err, "waiting for an event", "clWaitForEvents", e);
}

tack_status opencl_event_elapsed(backend *b, void *start, void *end, double *ms, tack_error *err) {
    *ms = 0;
    if (!b->profiling)
        return backend_error(err, TACK_ERR_VALUE,
                             "Event.elapsed: %s cannot time its queues (it refused "
                             "CL_QUEUE_PROFILING_ENABLE)", b->description);
    cl_event evs[2] = {start, end};
    cl_int e = b->cl->WaitForEvents(2, evs);
    if (e != CL_SUCCESS) return opencl_fail(err, "Event.elapsed", "clWaitForEvents", e);
    cl_ulong t[2];
    for (int i = 0; i < 2; i++) {
        e = b->cl->GetEventProfilingInfo(evs[i], CL_PROFILING_COMMAND_END, sizeof t[i], &t[i],
                                         NULL);
        if (e != CL_SUCCESS)
            return opencl_fail(err, "Event.elapsed: the device gave no time for an event",
                               "clGetEventProfilingInfo", e);
    }
    *ms = ((double)t[1] - (double)t[0]) / 1e6;
    return TACK_OK;
}

void opencl_event_free(backend *b, void *event) {
    if (event) b->cl->ReleaseEvent((cl_event)event);
}
