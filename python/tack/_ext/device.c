/*
 * device.c - tack.Device wraps a tack_device.  tack.device(spec) without
 * options returns one cached object per spec (the library's shared device,
 * whose variants survive switching away and back); with options it makes a
 * new device with an empty cache, freed when the object goes.
 */
#define NO_IMPORT_ARRAY
#include "ext.h"

/* libtack's limit (MAX_THREADS in src/runtime/device.c, not public): a count
 * above it is refused here in the words tack.set_num_threads uses. */
#define EXT_MAX_THREADS 256

static PyObject *shared_devices;  /* dict: spec -> tack.Device */
static PyObject *default_device;  /* tack.Device, made on first use */

static PyObject *device_wrap(tack_device *dev, int owned)
{
    ext_DeviceObject *d = PyObject_New(ext_DeviceObject, &ext_DeviceType);
    if (!d) {
        if (owned)
            tack_device_free(dev);
        return NULL;
    }
    d->dev = dev;
    d->owned = owned;
    return (PyObject *)d;
}

static PyObject *device_error(const tack_error *err)
{
    /* An unknown spec is the caller's value; keep the library's text.  A
     * missing driver or device is a RuntimeError (ext_raise). */
    if (err->status == TACK_ERR_NOMEM || err->status == TACK_ERR_INTERNAL ||
        err->status == TACK_ERR_DEVICE)
        return ext_raise(err);
    PyErr_SetString(PyExc_ValueError, err->message);
    return NULL;
}

/* The spec as C text; NULL with ValueError when it holds a NUL, which the
 * library would read as the end ('opencl\0x' as 'opencl'). */
static const char *spec_text(PyObject *spec)
{
    Py_ssize_t n;
    const char *s = PyUnicode_AsUTF8AndSize(spec, &n);
    if (s && strlen(s) != (size_t)n) {
        PyErr_Format(PyExc_ValueError, "device name %R contains a NUL character", spec);
        return NULL;
    }
    return s;
}

static PyObject *device_shared(PyObject *spec)
{
    PyObject *d = PyDict_GetItemWithError(shared_devices, spec);
    if (d)
        return Py_NewRef(d);
    if (PyErr_Occurred())
        return NULL;
    const char *s = spec_text(spec);
    if (!s)
        return NULL;
    tack_error err;
    memset(&err, 0, sizeof err);
    tack_device *dev = tack_device_get(s, &err);
    if (!dev)
        return device_error(&err);
    /* "opencl" and "opencl:0" are one device: one object, under both. */
    PyObject *canon = PyUnicode_FromString(tack_device_name(dev));
    if (!canon)
        return NULL;
    d = PyDict_GetItemWithError(shared_devices, canon);
    if (d)
        Py_INCREF(d);
    else if (!PyErr_Occurred())
        d = device_wrap(dev, 0);
    if (!d || PyDict_SetItem(shared_devices, canon, d) < 0 ||
        PyDict_SetItem(shared_devices, spec, d) < 0) {
        Py_DECREF(canon);
        Py_XDECREF(d);
        return NULL;
    }
    Py_DECREF(canon);
    return d;
}

PyObject *ext_device_fn(PyObject *self, PyObject *args, PyObject *kwargs)
{
    (void)self;
    static char *kwlist[] = {"spec", "num_threads", NULL};
    PyObject *spec = NULL, *num_threads = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|UO:device", kwlist,
                                     &spec, &num_threads))
        return NULL;
    PyObject *cpu = NULL;
    if (!spec) {
        spec = cpu = PyUnicode_FromString("cpu");
        if (!spec)
            return NULL;
    }
    PyObject *r;
    if (num_threads == Py_None) {
        r = device_shared(spec);
    } else {
        int overflow = 0;
        long n = PyBool_Check(num_threads) ? -1
                                           : PyLong_AsLongAndOverflow(num_threads, &overflow);
        r = NULL;
        if (n == -1 && PyErr_Occurred()) {
            /* TypeError from a non-integer */
        } else if (PyBool_Check(num_threads)) {
            PyErr_SetString(PyExc_TypeError,
                            "tack.device(): num_threads takes an int (a number of threads), "
                            "not bool");
        } else if (overflow || n < 0 || n > EXT_MAX_THREADS) {
            /* The library's limit, said the way set_num_threads says it. */
            PyErr_Format(PyExc_ValueError,
                         "tack.device(): num_threads must be from 1 to %d (0: one per core), "
                         "not %S", EXT_MAX_THREADS, num_threads);
        } else {
            const char *s = spec_text(spec);
            if (s) {
                tack_error err;
                memset(&err, 0, sizeof err);
                tack_device *dev = tack_device_create(s, (int)n, &err);
                r = dev ? device_wrap(dev, 1) : device_error(&err);
            }
        }
    }
    Py_XDECREF(cpu);
    return r;
}

PyObject *ext_device_from_object(PyObject *obj)
{
    if (!obj || obj == Py_None) {
        PyObject *d = ext_default_device();
        return d ? Py_NewRef(d) : NULL;
    }
    if (PyObject_TypeCheck(obj, &ext_DeviceType))
        return Py_NewRef(obj);
    if (PyUnicode_Check(obj))
        return device_shared(obj);
    PyErr_Format(PyExc_TypeError,
                 "expected a tack.Device or a device name such as 'cpu', not %.100s",
                 Py_TYPE(obj)->tp_name);
    return NULL;
}

PyObject *ext_default_device(void)
{
    if (!default_device) {
        PyObject *spec = PyUnicode_FromString("cpu");
        if (!spec)
            return NULL;
        default_device = device_shared(spec);
        Py_DECREF(spec);
    }
    return default_device;
}

PyObject *ext_set_default_device(PyObject *self, PyObject *arg)
{
    (void)self;
    if (arg == Py_None) {
        PyErr_SetString(PyExc_TypeError,
                        "set_default_device() takes a tack.Device or a device name");
        return NULL;
    }
    PyObject *d = ext_device_from_object(arg);
    if (!d)
        return NULL;
    Py_XSETREF(default_device, d);
    Py_RETURN_NONE;
}

PyObject *ext_get_default_device(PyObject *self, PyObject *unused)
{
    (void)self; (void)unused;
    PyObject *d = ext_default_device();
    return d ? Py_NewRef(d) : NULL;
}

/* The shared CPU device: what tack.set_num_threads changes (NumPy-array
 * calls run on it by default).  New reference. */
static PyObject *cpu_device(void)
{
    PyObject *spec = PyUnicode_FromString("cpu");
    if (!spec)
        return NULL;
    PyObject *d = device_shared(spec);
    Py_DECREF(spec);
    return d;
}

PyObject *ext_set_num_threads(PyObject *self, PyObject *arg)
{
    (void)self;
    if (PyBool_Check(arg) || !PyIndex_Check(arg)) {
        PyErr_Format(PyExc_TypeError,
                     "tack.set_num_threads() takes an int (a number of threads), not %.100s",
                     Py_TYPE(arg)->tp_name);
        return NULL;
    }
    PyObject *index = PyNumber_Index(arg);
    if (!index)
        return NULL;
    int overflow = 0;
    long n = PyLong_AsLongAndOverflow(index, &overflow);
    Py_DECREF(index);
    if (n == -1 && PyErr_Occurred())
        return NULL;
    if (overflow || n < 1 || n > EXT_MAX_THREADS) {
        PyErr_Format(PyExc_ValueError,
                     "tack.set_num_threads(): the number of threads must be from 1 to %d, not %S",
                     EXT_MAX_THREADS, arg);
        return NULL;
    }
    PyObject *dev = cpu_device();
    if (!dev)
        return NULL;
    tack_error err;
    memset(&err, 0, sizeof err);
    tack_status st;
    /* The resize waits for a launch running on another thread (which may
     * have let go of the GIL): wait without holding it. */
    Py_BEGIN_ALLOW_THREADS
    st = tack_device_set_num_threads(((ext_DeviceObject *)dev)->dev, (int)n, &err);
    Py_END_ALLOW_THREADS
    Py_DECREF(dev);
    if (st != TACK_OK)
        return ext_raise(&err);
    Py_RETURN_NONE;
}

PyObject *ext_get_num_threads(PyObject *self, PyObject *unused)
{
    (void)self; (void)unused;
    PyObject *dev = cpu_device();
    if (!dev)
        return NULL;
    PyObject *r = PyLong_FromLong(tack_device_num_threads(((ext_DeviceObject *)dev)->dev));
    Py_DECREF(dev);
    return r;
}

static int sync_one(PyObject *dev)
{
    tack_error err;
    memset(&err, 0, sizeof err);
    tack_status st;
    Py_BEGIN_ALLOW_THREADS
    st = tack_device_synchronize(((ext_DeviceObject *)dev)->dev, &err);
    Py_END_ALLOW_THREADS
    if (st != TACK_OK) {
        ext_raise(&err);
        return -1;
    }
    return 0;
}

PyObject *ext_synchronize(PyObject *self, PyObject *args, PyObject *kwargs)
{
    (void)self;
    static char *kwlist[] = {"device", NULL};
    PyObject *device = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|O:synchronize", kwlist, &device))
        return NULL;
    if (device != Py_None) {
        PyObject *d = ext_device_from_object(device);
        int rc = d ? sync_one(d) : -1;
        Py_XDECREF(d);
        return rc < 0 ? NULL : Py_NewRef(Py_None);
    }
    /* Every device opened by name, and the default (maybe made with
     * options); a dict copy, as a sync lets other threads run. */
    PyObject *devs = PyDict_Values(shared_devices);
    if (!devs)
        return NULL;
    if (default_device && PyList_Append(devs, default_device) < 0) {
        Py_DECREF(devs);
        return NULL;
    }
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(devs); i++)
        if (sync_one(PyList_GET_ITEM(devs, i)) < 0) {
            Py_DECREF(devs);
            return NULL;
        }
    Py_DECREF(devs);
    Py_RETURN_NONE;
}

/* ---- the tack.Device type -------------------------------------------- */

static void device_dealloc(PyObject *self)
{
    ext_DeviceObject *d = (ext_DeviceObject *)self;
    if (d->owned && d->dev)
        tack_device_free(d->dev);
    Py_TYPE(self)->tp_free(self);
}

static PyObject *device_repr(PyObject *self)
{
    ext_DeviceObject *d = (ext_DeviceObject *)self;
    return PyUnicode_FromFormat("tack.Device('%s', num_threads=%d)",
                                tack_device_name(d->dev),
                                tack_device_num_threads(d->dev));
}

static PyObject *device_get_name(PyObject *self, void *closure)
{
    (void)closure;
    return PyUnicode_FromString(tack_device_name(((ext_DeviceObject *)self)->dev));
}

static PyObject *device_get_num_threads(PyObject *self, void *closure)
{
    (void)closure;
    return PyLong_FromLong(tack_device_num_threads(((ext_DeviceObject *)self)->dev));
}

static PyObject *device_get_description(PyObject *self, void *closure)
{
    (void)closure;
    return PyUnicode_FromString(tack_device_description(((ext_DeviceObject *)self)->dev));
}

static PyObject *device_get_host_memory(PyObject *self, void *closure)
{
    (void)closure;
    return PyBool_FromLong(tack_device_host_memory(((ext_DeviceObject *)self)->dev));
}

static PyObject *device_get_hardware_texture_filtering(PyObject *self, void *closure)
{
    (void)closure;
    return PyBool_FromLong(
        tack_device_hardware_texture_filtering(((ext_DeviceObject *)self)->dev));
}

static PyObject *device_get_target(PyObject *self, void *closure)
{
    (void)closure;
    const char *t = tack_device_target(((ext_DeviceObject *)self)->dev);
    return t ? PyUnicode_FromString(t) : Py_NewRef(Py_None);
}

static PyGetSetDef device_getset[] = {
    {"target", device_get_target, NULL,
     "What compiled code is for: the CPU's LLVM 'triple:cpu:features', a GPU's device, "
     "driver and options; None when the backend names none.", NULL},
    {"name", device_get_name, NULL, "The device's name, e.g. 'cpu' or 'opencl:0'.", NULL},
    {"num_threads", device_get_num_threads, NULL,
     "Threads a launch runs on (compute units off the CPU).", NULL},
    {"description", device_get_description, NULL,
     "The device in words: its name, platform and driver.", NULL},
    {"host_memory", device_get_host_memory, NULL,
     "True when arrays live in host memory (NumPy arrays run in place); False when they "
     "must be device arrays (tack.array(x, device=dev)).", NULL},
    {"hardware_texture_filtering", device_get_hardware_texture_filtering, NULL,
     "True when tex.sample on f32 textures uses the GPU's texture unit, whose "
     "trilinear weights have 8 fractional bits (results within about 1/256 of the "
     "neighbouring texels' differences of the exact filter); False when every "
     "sample is exact in the texture's precision.", NULL},
    {NULL, NULL, NULL, NULL, NULL}
};

PyTypeObject ext_DeviceType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "tack.Device",
    .tp_basicsize = sizeof(ext_DeviceObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A device kernels run on; made by tack.device().",
    .tp_dealloc = device_dealloc,
    .tp_repr = device_repr,
    .tp_getset = device_getset,
};

int ext_device_init(PyObject *module)
{
    if (PyType_Ready(&ext_DeviceType) < 0)
        return -1;
    shared_devices = PyDict_New();
    if (!shared_devices)
        return -1;
    return PyModule_AddObjectRef(module, "Device", (PyObject *)&ext_DeviceType);
}
