/* stream.c - tack.Stream and tack.Event over tack.h's streams and events.
 * `with stream:` makes the stream the calling thread's current one (the
 * library keeps it per thread); leaving restores the one before. */
#define NO_IMPORT_ARRAY
#include "ext.h"

typedef struct {
    PyObject_HEAD
    tack_stream *s;
    PyObject *device; /* the tack.Device, kept alive while the stream is */
    PyObject *saved;  /* list: the streams `with` replaced, innermost last */
} StreamObject;

typedef struct {
    PyObject_HEAD
    tack_event *e;
    PyObject *device;
} EventObject;

static PyTypeObject EventType;

static int fail(tack_status st, const tack_error *err)
{
    if (st == TACK_OK)
        return 0;
    ext_raise(err);
    return -1;
}

/* ---- tack.Stream --------------------------------------------------------- */

static PyObject *stream_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"device", "handle", NULL};
    PyObject *device = Py_None, *handle = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|O$O:Stream", kwlist, &device, &handle))
        return NULL;
    unsigned long long h = 0;
    if (handle != Py_None) {
        /* Another library's stream: CuPy's Stream.ptr, torch's cuda_stream. */
        if (!PyLong_Check(handle))
            return PyErr_Format(PyExc_TypeError,
                                "Stream(handle=...): expected an int (a CUDA or HIP stream "
                                "handle), got %.100s", Py_TYPE(handle)->tp_name);
        h = PyLong_AsUnsignedLongLong(handle);
        if (h == (unsigned long long)-1 && PyErr_Occurred())
            return NULL;
    }
    PyObject *dev = ext_device_from_object(device);
    if (!dev)
        return NULL;
    tack_error err;
    tack_stream *s = handle != Py_None
                         ? tack_stream_wrap(((ext_DeviceObject *)dev)->dev, h, &err)
                         : tack_stream_create(((ext_DeviceObject *)dev)->dev, &err);
    if (!s) {
        Py_DECREF(dev);
        return ext_raise(&err);
    }
    StreamObject *self = (StreamObject *)type->tp_alloc(type, 0);
    PyObject *saved = self ? PyList_New(0) : NULL;
    if (!saved) {
        Py_XDECREF(self);
        tack_stream_free(s);
        Py_DECREF(dev);
        return NULL;
    }
    self->s = s;
    self->device = dev;
    self->saved = saved;
    return (PyObject *)self;
}

static void stream_dealloc(PyObject *o)
{
    StreamObject *self = (StreamObject *)o;
    if (self->s) {
        /* Waits for its work; a thread still inside `with` it loses it. */
        Py_BEGIN_ALLOW_THREADS
        tack_stream_free(self->s);
        Py_END_ALLOW_THREADS
    }
    Py_XDECREF(self->saved);
    Py_XDECREF(self->device);
    Py_TYPE(o)->tp_free(o);
}

static PyObject *stream_enter(PyObject *o, PyObject *unused)
{
    (void)unused;
    StreamObject *self = (StreamObject *)o;
    tack_stream *old = tack_stream_set_current(self->s);
    PyObject *cap = PyLong_FromVoidPtr(old);
    if (!cap || PyList_Append(self->saved, cap) < 0) {
        Py_XDECREF(cap);
        tack_stream_set_current(old);
        return NULL;
    }
    Py_DECREF(cap);
    return Py_NewRef(o);
}

static PyObject *stream_exit(PyObject *o, PyObject *args)
{
    (void)args;
    StreamObject *self = (StreamObject *)o;
    Py_ssize_t n = PyList_GET_SIZE(self->saved);
    tack_stream *old = NULL;
    if (n > 0) {
        old = PyLong_AsVoidPtr(PyList_GET_ITEM(self->saved, n - 1));
        if (PyList_SetSlice(self->saved, n - 1, n, NULL) < 0)
            return NULL;
    }
    tack_stream_set_current(old);
    Py_RETURN_FALSE;
}

static PyObject *stream_synchronize(PyObject *o, PyObject *unused)
{
    (void)unused;
    tack_error err;
    tack_status st;
    Py_BEGIN_ALLOW_THREADS
    st = tack_stream_synchronize(((StreamObject *)o)->s, &err);
    Py_END_ALLOW_THREADS
    return fail(st, &err) ? NULL : Py_NewRef(Py_None);
}

static PyObject *stream_record(PyObject *o, PyObject *unused)
{
    (void)unused;
    StreamObject *self = (StreamObject *)o;
    tack_error err;
    tack_event *e = tack_event_record(NULL, self->s, &err);
    if (!e)
        return ext_raise(&err);
    EventObject *ev = PyObject_New(EventObject, &EventType);
    if (!ev) {
        tack_event_free(e);
        return NULL;
    }
    ev->e = e;
    ev->device = Py_NewRef(self->device);
    return (PyObject *)ev;
}

static PyObject *stream_wait(PyObject *o, PyObject *event)
{
    if (!PyObject_TypeCheck(event, &EventType))
        return PyErr_Format(PyExc_TypeError, "Stream.wait: expected a tack.Event, got %.100s",
                            Py_TYPE(event)->tp_name);
    tack_error err;
    tack_status st = tack_stream_wait_event(((StreamObject *)o)->s, ((EventObject *)event)->e, &err);
    return fail(st, &err) ? NULL : Py_NewRef(Py_None);
}

static PyObject *stream_get_device(PyObject *o, void *closure)
{
    (void)closure;
    return Py_NewRef(((StreamObject *)o)->device);
}

static PyMethodDef stream_methods[] = {
    {"__enter__", stream_enter, METH_NOARGS, NULL},
    {"__exit__", stream_exit, METH_VARARGS, NULL},
    {"synchronize", stream_synchronize, METH_NOARGS,
     "synchronize()\n--\n\nWaits until the work queued on this stream has finished; a launch of "
     "it that failed on the device raises here, naming its kernel."},
    {"record", stream_record, METH_NOARGS,
     "record()\n--\n\nA tack.Event after the work queued on this stream so far."},
    {"wait", stream_wait, METH_O,
     "wait(event)\n--\n\nWork queued on this stream from now on starts after `event`."},
    {NULL, NULL, 0, NULL},
};

static PyObject *stream_get_cuda_stream(PyObject *o, void *closure)
{
    (void)closure;
    return PyLong_FromUnsignedLongLong(tack_stream_handle(NULL, ((StreamObject *)o)->s));
}

static PyGetSetDef stream_getset[] = {
    {"device", stream_get_device, NULL, "The tack.Device whose queue this is.", NULL},
    {"cuda_stream", stream_get_cuda_stream, NULL,
     "The driver's stream handle (a CUstream on CUDA, a hipStream_t on HIP) as an int, for "
     "another library to queue work on (cupy.cuda.ExternalStream, "
     "torch.cuda.ExternalStream); 0 on devices whose streams are not shared (OpenCL, the "
     "CPU).",
     NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject StreamType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "tack.Stream",
    .tp_basicsize = sizeof(StreamObject),
    .tp_dealloc = stream_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Stream(device=None, *, handle=None)\n--\n\n"
              "A queue of its own on a device.  ``with stream:`` makes it the current one for "
              "the launches and copies of this thread on that device; they run in order on it, "
              "independently of the device's other queues (order them with events).  A copy "
              "under ``with stream:`` (``.numpy()``, ``tack.copyto``, an array made from the "
              "host) waits for this stream's work alone; outside one a copy waits for every "
              "queue of the device.  On devices whose launches run to "
              "completion (the CPU) a stream is accepted and orders nothing more.  "
              "``handle=`` (an int) wraps another library's CUDA or HIP stream "
              "(CuPy's ``Stream.ptr``, PyTorch's ``cuda_stream``): launches on it are ordered "
              "with that library's work there, and Tack never destroys it.",
    .tp_methods = stream_methods,
    .tp_getset = stream_getset,
    .tp_new = stream_new,
};

/* ---- tack.Event ---------------------------------------------------------- */

static void event_dealloc(PyObject *o)
{
    EventObject *self = (EventObject *)o;
    tack_event_free(self->e);
    Py_XDECREF(self->device);
    PyObject_Free(o);
}

static PyObject *event_synchronize(PyObject *o, PyObject *unused)
{
    (void)unused;
    tack_error err;
    tack_status st;
    Py_BEGIN_ALLOW_THREADS
    st = tack_event_synchronize(((EventObject *)o)->e, &err);
    Py_END_ALLOW_THREADS
    return fail(st, &err) ? NULL : Py_NewRef(Py_None);
}

static PyObject *event_elapsed(PyObject *o, PyObject *end)
{
    if (!PyObject_TypeCheck(end, &EventType))
        return PyErr_Format(PyExc_TypeError, "Event.elapsed: expected a tack.Event, got %.100s",
                            Py_TYPE(end)->tp_name);
    tack_error err;
    tack_status st;
    double ms = 0;
    Py_BEGIN_ALLOW_THREADS
    st = tack_event_elapsed(((EventObject *)o)->e, ((EventObject *)end)->e, &ms, &err);
    Py_END_ALLOW_THREADS
    return fail(st, &err) ? NULL : PyFloat_FromDouble(ms);
}

static PyMethodDef event_methods[] = {
    {"synchronize", event_synchronize, METH_NOARGS,
     "synchronize()\n--\n\nWaits until the work before this event has finished."},
    {"elapsed", event_elapsed, METH_O,
     "elapsed(end)\n--\n\nMilliseconds from this event to `end` by the device's clock (the "
     "host's on the CPU); waits for both."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject EventType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "tack.Event",
    .tp_basicsize = sizeof(EventObject),
    .tp_dealloc = event_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A point in a stream's work, from Stream.record().",
    .tp_methods = event_methods,
};

int ext_stream_init(PyObject *module)
{
    if (PyType_Ready(&StreamType) < 0 || PyType_Ready(&EventType) < 0)
        return -1;
    if (PyModule_AddObjectRef(module, "Stream", (PyObject *)&StreamType) < 0 ||
        PyModule_AddObjectRef(module, "Event", (PyObject *)&EventType) < 0)
        return -1;
    return 0;
}
