/*
 * template.c - @tack.device_class: template classes, their tokens and
 * their retirement.
 *
 * A template class is keyed by a token, never by the class object: a
 * variant keyed on the class itself would keep it alive as long as the
 * kernel.  class_entries maps id(cls) to (weakref(cls, retire), token);
 * tokens come from a counter and are never reused.  When the class is
 * collected the weakref's callback forgets the entry and calls
 * tack_retire_class(token), which drops every IR template and variant keyed
 * on it, so a class defined inside a function and made per call leaves
 * nothing behind.  tack_retire_class only queues the token (the class may
 * be collected in the middle of a launch, inside a resolver callback); the
 * library drops what it names at its next launch or introspection call.
 */
#define NO_IMPORT_ARRAY
#include "ext.h"

static PyObject *class_entries;   /* {id(cls): (weakref, token)} */
static PyObject *str_marker;      /* "__tack_device_class__" */
static uint64_t next_token = 1;   /* guarded by the GIL */

PyObject *ext_device_class_fn(PyObject *self, PyObject *cls)
{
    (void)self;
    if (!PyType_Check(cls)) {
        PyErr_Format(PyExc_TypeError,
                     "tack.device_class expects a class, not %.100s",
                     Py_TYPE(cls)->tp_name);
        return NULL;
    }
    if (!str_marker && !(str_marker = PyUnicode_InternFromString("__tack_device_class__")))
        return NULL;
    if (PyObject_SetAttr(cls, str_marker, Py_True) < 0)
        return NULL;
    return Py_NewRef(cls);
}

int ext_is_device_class(PyObject *o)
{
    if (!str_marker)
        return 0; /* no class was ever decorated */
    PyObject *mro = Py_TYPE(o)->tp_mro;
    Py_ssize_t n = mro && PyTuple_Check(mro) ? PyTuple_GET_SIZE(mro) : 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *dict = ((PyTypeObject *)PyTuple_GET_ITEM(mro, i))->tp_dict;
        if (!dict)
            continue;
        /* The marker is an interned str: a lookup cannot raise. */
        PyObject *v = PyDict_GetItem(dict, str_marker);
        if (v)
            return v == Py_True;
    }
    return 0;
}

/* ---- retirement ------------------------------------------------------- */

/* The weakref callback: self is (id key, token). */
static PyObject *class_collected(PyObject *self, PyObject *wr)
{
    (void)wr;
    PyObject *key = PyTuple_GET_ITEM(self, 0);
    uint64_t token = PyLong_AsUnsignedLongLong(PyTuple_GET_ITEM(self, 1));
    if (class_entries) {
        /* Forget the entry only if it is still this class's. */
        PyObject *entry = PyDict_GetItemWithError(class_entries, key);
        if (entry && PyTuple_GET_ITEM(entry, 0) == wr) {
            if (PyDict_DelItem(class_entries, key) < 0)
                PyErr_Clear();
        }
        PyErr_Clear();
    }
    tack_retire_class(token);
    Py_RETURN_NONE;
}

static PyMethodDef class_collected_def = {
    "_tack_class_collected", class_collected, METH_O, NULL
};

uint64_t ext_class_token(PyObject *cls)
{
    if (!class_entries && !(class_entries = PyDict_New()))
        return 0;
    PyObject *key = PyLong_FromVoidPtr(cls);
    if (!key)
        return 0;
    PyObject *entry = PyDict_GetItemWithError(class_entries, key);
    if (entry) {
        PyObject *wr = PyTuple_GET_ITEM(entry, 0);
        if (PyWeakref_GetObject(wr) == cls) {
            Py_DECREF(key);
            return PyLong_AsUnsignedLongLong(PyTuple_GET_ITEM(entry, 1));
        }
        /* A dead class at this address whose callback has not run yet:
         * retire it now; its callback will find the entry replaced. */
        tack_retire_class(PyLong_AsUnsignedLongLong(PyTuple_GET_ITEM(entry, 1)));
    } else if (PyErr_Occurred()) {
        Py_DECREF(key);
        return 0;
    }
    uint64_t token = next_token++;
    PyObject *tok = PyLong_FromUnsignedLongLong(token);
    PyObject *self = tok ? PyTuple_Pack(2, key, tok) : NULL;
    PyObject *cb = self ? PyCFunction_New(&class_collected_def, self) : NULL;
    PyObject *wr = cb ? PyWeakref_NewRef(cls, cb) : NULL;
    PyObject *value = wr ? PyTuple_Pack(2, wr, tok) : NULL;
    int rc = value ? PyDict_SetItem(class_entries, key, value) : -1;
    Py_XDECREF(tok);
    Py_XDECREF(self);
    Py_XDECREF(cb);
    Py_XDECREF(wr);
    Py_XDECREF(value);
    Py_DECREF(key);
    return rc < 0 ? 0 : token;
}
