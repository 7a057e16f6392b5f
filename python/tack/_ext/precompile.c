/* precompile.c - tack.precompile(calls, device=None): the variants a list
 * of calls would select, compiled ahead of their launches and together
 * (tack_precompile).  Each call is (kernel, args) or (kernel, args,
 * kwargs), its arguments bound and converted as a call's are; calls are
 * grouped by the device each would run on (device=, else as a call picks
 * it: the first tack.Array's, or the default). */
#define NO_IMPORT_ARRAY
#include "ext.h"

#include <string.h>

typedef struct item {
    ext_KernelObject *kern;   /* borrowed: the calls list holds it */
    PyObject *args;           /* PySequence_Fast of the positional arguments */
    PyObject *kwnames;        /* the keywords' names (tuple) or NULL */
    PyObject *kwvalues;       /* their values (list) or NULL */
    tack_arg targs[TACK_MAX_PARAMS];
    ext_launch_state st;
    int converted;
    PyObject *dev;            /* the device it compiles for (new reference) */
} item;

static void item_clear(item *it)
{
    if (it->converted)
        ext_release_args(&it->st);
    Py_XDECREF(it->args);
    Py_XDECREF(it->kwnames);
    Py_XDECREF(it->kwvalues);
    Py_XDECREF(it->dev);
}

/* One (kernel, args[, kwargs]) entry: bound and converted; -1 with an
 * exception naming the entry. */
static int item_fill(item *it, Py_ssize_t index, PyObject *entry, PyObject *device)
{
    Py_ssize_t n = PyTuple_Check(entry) ? PyTuple_GET_SIZE(entry) : -1;
    if (n != 2 && n != 3) {
        PyErr_Format(PyExc_TypeError,
                     "tack.precompile: calls[%zd] must be a tuple (kernel, args) or "
                     "(kernel, args, kwargs), not %.100s",
                     index, Py_TYPE(entry)->tp_name);
        return -1;
    }
    PyObject *kern = PyTuple_GET_ITEM(entry, 0), *args = PyTuple_GET_ITEM(entry, 1);
    PyObject *kwargs = n == 3 ? PyTuple_GET_ITEM(entry, 2) : NULL;
    if (!ext_Kernel_Check(kern)) {
        PyErr_Format(PyExc_TypeError, "tack.precompile: calls[%zd][0] must be a tack kernel, "
                     "not %.100s", index, Py_TYPE(kern)->tp_name);
        return -1;
    }
    if (!PyTuple_Check(args) && !PyList_Check(args)) {
        PyErr_Format(PyExc_TypeError, "tack.precompile: calls[%zd][1] must be a tuple or list "
                     "of the call's arguments, not %.100s", index, Py_TYPE(args)->tp_name);
        return -1;
    }
    if (kwargs && kwargs != Py_None && !PyDict_Check(kwargs)) {
        PyErr_Format(PyExc_TypeError, "tack.precompile: calls[%zd][2] must be a dict of keyword "
                     "arguments, not %.100s", index, Py_TYPE(kwargs)->tp_name);
        return -1;
    }
    it->kern = (ext_KernelObject *)kern;
    if (!(it->args = PySequence_Fast(args, "arguments")))
        return -1;
    if (kwargs && kwargs != Py_None && PyDict_GET_SIZE(kwargs)) {
        PyObject *keys = PyDict_Keys(kwargs);
        it->kwnames = keys ? PyList_AsTuple(keys) : NULL;
        Py_XDECREF(keys);
        it->kwvalues = it->kwnames ? PyDict_Values(kwargs) : NULL;
        if (!it->kwvalues)
            return -1;
    }
    PyObject *bound[TACK_MAX_PARAMS];
    Py_ssize_t npos = PySequence_Fast_GET_SIZE(it->args);
    if (ext_bind_args(it->kern, PySequence_Fast_ITEMS(it->args), npos, it->kwnames,
                      it->kwvalues ? PySequence_Fast_ITEMS(it->kwvalues) : NULL, NULL, bound) < 0)
        return -1;
    ext_launch_init(&it->st, it->kern);
    if (ext_convert_args(it->kern, bound, it->kern->nparams, it->targs, &it->st) < 0)
        return -1;
    it->converted = 1;
    it->dev = device != Py_None ? Py_NewRef(device)
            : it->st.device ? Py_NewRef(it->st.device)
            : ext_device_from_object(NULL);
    return it->dev ? 0 : -1;
}

/* The items for one device, compiled together; -1 with the failure raised
 * (the kernel's own error, as its call raises it). */
static int precompile_device(item *items, Py_ssize_t n, PyObject *dev)
{
    tack_precompile_call *calls = PyMem_Malloc((n ? n : 1) * sizeof *calls);
    item **which = PyMem_Malloc((n ? n : 1) * sizeof *which);
    if (!calls || !which) {
        PyMem_Free(calls);
        PyMem_Free(which);
        PyErr_NoMemory();
        return -1;
    }
    int m = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (((ext_DeviceObject *)items[i].dev)->dev != ((ext_DeviceObject *)dev)->dev)
            continue;
        calls[m] = (tack_precompile_call){items[i].kern->k, items[i].targs,
                                          items[i].kern->nparams};
        which[m++] = &items[i];
    }
    tack_error err;
    memset(&err, 0, sizeof err);
    int failed = -1;
    tack_status s = tack_precompile(((ext_DeviceObject *)dev)->dev, calls, m, &failed, &err);
    int r = 0;
    if (s != TACK_OK) {
        r = -1;
        if (failed >= 0)
            ext_raise_kernel_error(which[failed]->kern, s, &err);
        else {
            if (err.status == TACK_OK)
                err.status = s;
            ext_raise(&err);
        }
    } else {
        for (int i = 0; i < m; i++)
            Py_CLEAR(which[i]->kern->resolve_error);
    }
    PyMem_Free(calls);
    PyMem_Free(which);
    return r;
}

PyObject *ext_precompile(PyObject *self, PyObject *args, PyObject *kwargs)
{
    (void)self;
    static char *kwlist[] = {"calls", "device", NULL};
    PyObject *calls_obj, *device = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|O:precompile", kwlist, &calls_obj, &device))
        return NULL;
    PyObject *calls = PySequence_List(calls_obj);
    if (!calls)
        return NULL;
    PyObject *dev = device == Py_None ? Py_NewRef(Py_None) : ext_device_from_object(device);
    Py_ssize_t n = PyList_GET_SIZE(calls);
    item *items = dev ? PyMem_Calloc(n ? n : 1, sizeof *items) : NULL;
    if (dev && !items)
        PyErr_NoMemory();
    int ok = items != NULL;
    /* Every call bound and converted first: a refused one compiles nothing. */
    for (Py_ssize_t i = 0; ok && i < n; i++)
        ok = item_fill(&items[i], i, PyList_GET_ITEM(calls, i), dev) == 0;
    /* Grouped by device, in order of first appearance; one device's
     * failure keeps no other from compiling (the first is raised). */
    PyObject *et = NULL, *ev = NULL, *tb = NULL;
    for (Py_ssize_t i = 0; ok && i < n; i++) {
        int seen = 0;
        for (Py_ssize_t j = 0; j < i && !seen; j++)
            seen = ((ext_DeviceObject *)items[j].dev)->dev == ((ext_DeviceObject *)items[i].dev)->dev;
        if (!seen && precompile_device(items, n, items[i].dev) < 0) {
            if (!et)
                PyErr_Fetch(&et, &ev, &tb);
            else
                PyErr_Clear();
        }
    }
    if (et) {
        PyErr_Restore(et, ev, tb);
        ok = 0;
    }
    for (Py_ssize_t i = 0; items && i < n; i++)
        item_clear(&items[i]);
    PyMem_Free(items);
    Py_XDECREF(dev);
    Py_DECREF(calls);
    if (!ok)
        return NULL;
    Py_RETURN_NONE;
}
