/*
 * warm.c - a kernel's repeated calls: the warm path in front of argument
 * conversion.
 *
 * A kernel remembers its last simple call (ext_warm_learn): the Python
 * types of its arguments (exact NumPy arrays with their dtype object,
 * dimensions and flags, Tack arrays with their device, floats, ints, bools),
 * the converted arguments and a prepared launch (tack.h's tack_launch).  A
 * call whose arguments match writes their addresses and values into the
 * remembered arguments and runs the prepared launch, which compares the
 * rest of the layout (shapes, strides) itself: no conversion, signature,
 * hash or classification.  Where an argument is another library's array
 * (DLPack, the array interfaces, torch), which must be asked for its
 * memory each call, the call is converted as usual and then runs the
 * prepared launch when the converted arguments have its layout
 * (ext_warm_converted_call).  Anything else takes the ordinary path, and a
 * kernel called with another layout several times in a row learns that one.
 *
 * Everything here runs holding the GIL.  A launch may release it while
 * its kernel runs (or compiles, on the full path), so the memo counts the
 * calls inside it: it is replaced, and its arguments rewritten, only when
 * none is.
 */
#define NO_IMPORT_ARRAY
#include "ext.h"

#include <stdlib.h>
#include <string.h>

#define WARM_RELEARN 4       /* misses in a row before another layout is learned */
#define WARM_BACKOFF_MAX 65536
#define WARM_LOOK 64         /* calls between looks at whether the launch is warm */

enum { WARM_NDARRAY = 1, WARM_TACK_ARRAY, WARM_FLOAT, WARM_INT, WARM_BOOL, WARM_CONVERTED };

struct ext_warm {
    tack_launch *launch;
    PyObject *device;              /* the tack.Device it runs on */
    int nargs;
    int busy;                      /* calls inside the launch now */
    int hits;
    unsigned calls;
    int converted;                 /* an argument is WARM_CONVERTED */
    unsigned char how[TACK_MAX_PARAMS];
    PyObject *descr[TACK_MAX_PARAMS]; /* NumPy arrays' dtype objects (held) */
    int flags[TACK_MAX_PARAMS];       /* and their writeable flag */
    tack_arg args[TACK_MAX_PARAMS];   /* rewritten by each call */
};

static void warm_free(ext_warm *w)
{
    if (!w)
        return;
    tack_launch_free(w->launch);
    for (int i = 0; i < w->nargs; i++)
        Py_XDECREF(w->descr[i]);
    Py_XDECREF(w->device);
    PyMem_Free(w);
}

void ext_warm_forget(ext_KernelObject *kern)
{
    warm_free(kern->warm);
    kern->warm = NULL;
}

/* How the warm path reads object o (converted as *a): WARM_CONVERTED
 * where only its conversion can tell, 0 where it cannot take it. */
static int warm_kind(PyObject *o, const tack_arg *a)
{
    if (Py_IS_TYPE(o, &PyArray_Type)) {
        PyArrayObject *arr = (PyArrayObject *)o;
        int t = PyArray_TYPE(arr);
        /* Complex and structured arrays convert to other shapes of argument. */
        return a->kind == TACK_ARG_ARRAY && t != NPY_CFLOAT && t != NPY_CDOUBLE &&
                       !PyDataType_HASFIELDS(PyArray_DESCR(arr)) && a->data == PyArray_DATA(arr)
                   ? WARM_NDARRAY : 0;
    }
    if (Py_IS_TYPE(o, &ext_ArrayType))
        return WARM_TACK_ARRAY;
    if (PyFloat_CheckExact(o))
        return WARM_FLOAT;
    if (PyBool_Check(o))
        return WARM_BOOL;
    if (PyLong_CheckExact(o) && a->kind == TACK_ARG_INT)
        return WARM_INT;
    /* Another library's array: its conversion asks it for its memory. */
    return a->kind == TACK_ARG_ARRAY ? WARM_CONVERTED : 0;
}

/* A layout learned and then never hit again (shapes that change every
 * call): learning costs a classification, so the next waits longer. */
static void back_off(ext_KernelObject *kern)
{
    kern->warm_backoff = kern->warm_backoff ? kern->warm_backoff * 2 : 16;
    if (kern->warm_backoff > WARM_BACKOFF_MAX)
        kern->warm_backoff = WARM_BACKOFF_MAX;
    kern->warm_wait = kern->warm_backoff;
}

void ext_warm_learn(ext_KernelObject *kern, PyObject *const *objs, Py_ssize_t nargs,
                    const tack_arg *targs, PyObject *device, const ext_launch_state *st)
{
    ext_warm *old = kern->warm;
    if (old)
        return; /* one learned (ext_warm_call forgets it when missed) */
    if (kern->warm_wait > 0) {
        kern->warm_wait--;
        return;
    }
    if (st->blocks || nargs > TACK_MAX_PARAMS)
        return;
    unsigned char how[TACK_MAX_PARAMS];
    int converted = 0;
    for (Py_ssize_t i = 0; i < nargs; i++) {
        if (!(how[i] = (unsigned char)warm_kind(objs[i], &targs[i])))
            return;
        converted |= how[i] == WARM_CONVERTED;
    }
    tack_error err;
    tack_launch *l = tack_launch_prepare(kern->k, ((ext_DeviceObject *)device)->dev, targs,
                                         (int)nargs, &err);
    if (!l || !tack_launch_is_warm(l)) {
        /* Not a simple call (templates, complex values, stages, debug
         * mode): trying again at once would cost a classification each call. */
        tack_launch_free(l);
        back_off(kern);
        return;
    }
    ext_warm *w = PyMem_Calloc(1, sizeof *w);
    if (!w) {
        tack_launch_free(l);
        return;
    }
    w->launch = l;
    w->nargs = (int)nargs;
    w->converted = converted;
    Py_INCREF(device);
    w->device = device;
    memcpy(w->how, how, (size_t)nargs);
    memcpy(w->args, targs, (size_t)nargs * sizeof *targs);
    for (Py_ssize_t i = 0; i < nargs; i++) {
        if (how[i] != WARM_NDARRAY)
            continue;
        PyArrayObject *arr = (PyArrayObject *)objs[i];
        w->descr[i] = (PyObject *)PyArray_DESCR(arr);
        Py_INCREF(w->descr[i]);
        w->flags[i] = PyArray_FLAGS(arr) & NPY_ARRAY_WRITEABLE;
    }
    warm_free(old);
    kern->warm = w;
    kern->warm_misses = 0;
}

/* Writes object o into the remembered argument a; 0 if it does not match. */
static int warm_take(const ext_warm *w, int i, PyObject *o, tack_arg *a, PyObject **device)
{
    switch (w->how[i]) {
    case WARM_NDARRAY: {
        if (!Py_IS_TYPE(o, &PyArray_Type))
            return 0;
        PyArrayObject *arr = (PyArrayObject *)o;
        int nd = PyArray_NDIM(arr);
        /* The same dtype object: the same element type and byte order. */
        if ((PyObject *)PyArray_DESCR(arr) != w->descr[i] || nd != a->ndim ||
            (PyArray_FLAGS(arr) & NPY_ARRAY_WRITEABLE) != w->flags[i] || !PyArray_ISALIGNED(arr))
            return 0;
        a->data = PyArray_DATA(arr);
        /* npy_intp is int64_t's size wherever the extension builds. */
        memcpy(a->shape, PyArray_DIMS(arr), (size_t)nd * sizeof *a->shape);
        memcpy(a->strides, PyArray_STRIDES(arr), (size_t)nd * sizeof *a->strides);
        return 1;
    }
    case WARM_TACK_ARRAY: {
        if (!Py_IS_TYPE(o, &ext_ArrayType))
            return 0;
        ext_ArrayObject *arr = (ext_ArrayObject *)o;
        if (arr->device != w->device || arr->dtype != a->dtype || arr->vec_width != a->vec_width ||
            ext_Array_STORAGE_NDIM(arr) != a->ndim || (!arr->readonly) != a->writable)
            return 0;
        *device = arr->device;
        a->data = arr->data;
        memcpy(a->shape, arr->shape, sizeof a->shape);
        memcpy(a->strides, arr->strides, sizeof a->strides);
        return 1;
    }
    case WARM_FLOAT:
        if (!PyFloat_CheckExact(o))
            return 0;
        a->f = PyFloat_AS_DOUBLE(o);
        return 1;
    case WARM_BOOL:
        if (!PyBool_Check(o))
            return 0;
        a->i = o == Py_True;
        return 1;
    case WARM_INT: {
        if (!PyLong_CheckExact(o))
            return 0;
        int overflow;
        long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
        if (overflow || (v == -1 && PyErr_Occurred())) {
            PyErr_Clear();
            return 0;
        }
        a->i = v;
        return 1;
    }
    }
    return 0;
}

/* A call the warm path could not take.  Several in a row: the ordinary
 * path learns the new layout. */
static void missed(ext_KernelObject *kern)
{
    ext_warm *w = kern->warm;
    if (++kern->warm_misses >= WARM_RELEARN && !w->busy) {
        if (w->hits)
            kern->warm_backoff = 0;
        else
            back_off(kern);
        warm_free(w);
        kern->warm = NULL;
    }
}

int ext_warm_call(ext_KernelObject *kern, PyObject *const *objs, Py_ssize_t nargs,
                  PyObject **result)
{
    ext_warm *w = kern->warm;
    /* While a call is inside the launch (busy), it may still read w->args:
     * the full path it can fall back to (a cold launch, debug mode) keeps
     * them through compiles and runs that release the GIL.  Another thread's
     * call then takes its own ordinary path instead of rewriting them. */
    if (!w || w->converted || nargs != w->nargs || w->busy)
        return 0;
    PyObject *device = NULL;
    for (int i = 0; i < w->nargs; i++)
        if (!warm_take(w, i, objs[i], &w->args[i], &device))
            goto miss;
    /* Without a Tack array among them, the call runs on the default device. */
    if (!device && (device = ext_default_device()) != w->device)
        goto miss;
    /* Variants freed (or debug mode turned on) make the launch cold: it
     * then takes the full path itself, correct but slower, so looking one
     * call in WARM_LOOK is enough; this call's own ordinary path learns
     * afresh. */
    if (++w->calls % WARM_LOOK == 0 && !tack_launch_is_warm(w->launch)) {
        if (!w->busy)
            ext_warm_forget(kern);
        return 0;
    }
    tack_error err;
    ext_error_clear(&err);
    tack_results results;
    w->busy++;
    tack_status s = tack_launch_call(w->launch, w->args, w->nargs, &results, &err);
    w->busy--;
    w->hits = 1;
    kern->warm_misses = 0;
    if (s != TACK_OK) {
        *result = ext_raise_kernel_error(kern, s, &err);
        return 1;
    }
    Py_CLEAR(kern->resolve_error);
    *result = ext_results_to_python(&results);
    return 1;
miss:
    missed(kern);
    return 0;
}

int ext_warm_converted_call(ext_KernelObject *kern, const tack_arg *targs, Py_ssize_t nargs,
                            PyObject *device, tack_results *results, tack_error *err,
                            tack_status *status)
{
    ext_warm *w = kern->warm;
    if (!w || !w->converted)
        return 0;
    if (device != w->device || !tack_launch_accepts(w->launch, targs, (int)nargs)) {
        missed(kern);
        return 0;
    }
    w->busy++;
    *status = tack_launch_call(w->launch, targs, (int)nargs, results, err);
    w->busy--;
    w->hits = 1;
    kern->warm_misses = 0;
    return 1;
}
