/* stream.c - streams and events (tack.h): the backend's queues where it
 * has them (backend.h's queue_* and event_*), and otherwise the device's
 * one queue with the host's clock for events, which is exact there because
 * such a backend's launches return finished.  The calling thread's current
 * stream picks the queue its launches go on (launch.c). */
#include <stdlib.h>

#include "runtime.h"

struct tack_stream {
    tack_device *dev;
    void *queue; /* the backend's; NULL: the device's own */
};

struct tack_event {
    tack_device *dev;
    void *event;      /* the backend's; NULL: host_ns is the mark */
    uint64_t host_ns;
};

static _Thread_local tack_stream *current;

static int has_queues(const tack_device *d) { return d->ops->queue_create != NULL; }

static tack_stream *stream_make(tack_device *dev, uint64_t handle, tack_error *err) {
    ERR_OR_SCRATCH(err);
    err->status = TACK_OK;
    if (!dev) {
        runtime_error(err, TACK_ERR_VALUE, "tack_stream_create: NULL device");
        return NULL;
    }
    if (handle && !dev->ops->queue_wrap) {
        runtime_error(err, TACK_ERR_VALUE,
                      "tack.Stream(handle=...): device '%s' has no streams of other libraries "
                      "(CUDA and HIP do)", dev->name);
        return NULL;
    }
    tack_stream *s = calloc(1, sizeof *s);
    if (!s) {
        runtime_error(err, TACK_ERR_NOMEM, "out of memory making a stream");
        return NULL;
    }
    s->dev = dev;
    tack_status st = TACK_OK;
    if (handle) st = dev->ops->queue_wrap(dev->b, handle, &s->queue, err);
    else if (has_queues(dev)) st = dev->ops->queue_create(dev->b, &s->queue, err);
    if (st) {
        free(s);
        return NULL;
    }
    return s;
}

tack_stream *tack_stream_create(tack_device *dev, tack_error *err) {
    return stream_make(dev, 0, err);
}

tack_stream *tack_stream_wrap(tack_device *dev, uint64_t handle, tack_error *err) {
    ERR_OR_SCRATCH(err);
    if (!handle) {
        runtime_error(err, TACK_ERR_VALUE, "tack.Stream(handle=0): 0 is no stream");
        return NULL;
    }
    return stream_make(dev, handle, err);
}

uint64_t tack_stream_handle(tack_device *dev, const tack_stream *s) {
    if (s) dev = s->dev;
    if (!dev || !dev->ops->queue_handle) return 0;
    return dev->ops->queue_handle(dev->b, s ? s->queue : NULL);
}

void tack_stream_free(tack_stream *s) {
    if (!s) return;
    if (current == s) current = NULL;
    if (s->queue) s->dev->ops->queue_destroy(s->dev->b, s->queue);
    free(s);
}

tack_device *tack_stream_device(const tack_stream *s) { return s ? s->dev : NULL; }

tack_stream *tack_stream_set_current(tack_stream *s) {
    tack_stream *old = current;
    current = s;
    return old;
}

tack_stream *tack_stream_current(void) { return current; }

/* launch.c: the queue a launch on dev goes on. */
void *stream_queue_for(const tack_device *dev) {
    return current && current->dev == dev ? current->queue : NULL;
}

tack_status tack_stream_synchronize(tack_stream *s, tack_error *err) {
    ERR_OR_SCRATCH(err);
    err->status = TACK_OK;
    if (!s) return runtime_error(err, TACK_ERR_VALUE, "tack_stream_synchronize: NULL stream");
    if (has_queues(s->dev)) return s->dev->ops->queue_synchronize(s->dev->b, s->queue, err);
    return tack_device_synchronize(s->dev, err);
}

tack_event *tack_event_record(tack_device *dev, tack_stream *s, tack_error *err) {
    ERR_OR_SCRATCH(err);
    err->status = TACK_OK;
    if (s) dev = s->dev;
    if (!dev) {
        runtime_error(err, TACK_ERR_VALUE, "tack_event_record: NULL device and stream");
        return NULL;
    }
    tack_event *e = calloc(1, sizeof *e);
    if (!e) {
        runtime_error(err, TACK_ERR_NOMEM, "out of memory recording an event");
        return NULL;
    }
    e->dev = dev;
    if (has_queues(dev)) {
        if (dev->ops->event_record(dev->b, s ? s->queue : NULL, &e->event, err)) {
            free(e);
            return NULL;
        }
    } else {
        /* A device that may still hold work (one whose launches return
         * early without queues) has synchronize: the mark comes after it. */
        if (dev->ops->synchronize && dev->ops->synchronize(dev->b, err)) {
            free(e);
            return NULL;
        }
        e->host_ns = runtime_clock_ns();
    }
    return e;
}

tack_status tack_stream_wait_event(tack_stream *s, tack_event *e, tack_error *err) {
    ERR_OR_SCRATCH(err);
    err->status = TACK_OK;
    if (!s || !e) return runtime_error(err, TACK_ERR_VALUE, "tack_stream_wait_event: NULL stream or event");
    if (e->dev != s->dev)
        return runtime_error(err, TACK_ERR_VALUE,
                             "Stream.wait: the event was recorded on device '%s', the stream is "
                             "on '%s'", e->dev->name, s->dev->name);
    /* Without queues the event's work has finished already. */
    if (!e->event) return TACK_OK;
    return s->dev->ops->event_wait(s->dev->b, s->queue, e->event, err);
}

tack_status tack_event_synchronize(tack_event *e, tack_error *err) {
    ERR_OR_SCRATCH(err);
    err->status = TACK_OK;
    if (!e) return runtime_error(err, TACK_ERR_VALUE, "tack_event_synchronize: NULL event");
    if (!e->event) return TACK_OK;
    return e->dev->ops->event_synchronize(e->dev->b, e->event, err);
}

tack_status tack_event_elapsed(tack_event *start, tack_event *end, double *ms, tack_error *err) {
    ERR_OR_SCRATCH(err);
    err->status = TACK_OK;
    *ms = 0;
    if (!start || !end) return runtime_error(err, TACK_ERR_VALUE, "tack_event_elapsed: NULL event");
    if (start->dev != end->dev)
        return runtime_error(err, TACK_ERR_VALUE,
                             "Event.elapsed: the events are on devices '%s' and '%s'",
                             start->dev->name, end->dev->name);
    if (!start->event && !end->event) {
        *ms = ((double)end->host_ns - (double)start->host_ns) / 1e6;
        return TACK_OK;
    }
    return start->dev->ops->event_elapsed(start->dev->b, start->event, end->event, ms, err);
}

void tack_event_free(tack_event *e) {
    if (!e) return;
    if (e->event) e->dev->ops->event_free(e->dev->b, e->event);
    free(e);
}
