/*
 * args.c - Python arguments -> tack_arg, for every launch.
 *
 * This is the hot path of a warm call: no Python-level calls, NumPy arrays
 * read through NumPy's struct accessors, tack.Array read directly; only
 * other buffer-protocol objects pay for PyObject_GetBuffer (released after
 * the launch).  Checks for bool come before int (bool is an int subclass).
 *
 * The caller's tack_arg array is not initialized: every array path sets
 * every field the library reads, vec_width included.  Only a tack.Array of
 * a vector dtype is an array of vectors (vec_width 2-4, storage shape
 * logical + (width,)); NumPy arrays and other buffers never are.
 */
#define NO_IMPORT_ARRAY
#include "ext.h"

static const char *param_name(ext_KernelObject *kern, int i)
{
    const char *p = tack_kernel_param_name(kern->k, i);
    return p ? p : "?";
}

static int arg_error(ext_KernelObject *kern, int i, PyObject *type, const char *what,
                     PyObject *obj)
{
    if (obj)
        PyErr_Format(type, "kernel '%U': parameter '%s': %s %.100s", kern->name,
                     param_name(kern, i), what, Py_TYPE(obj)->tp_name);
    else
        PyErr_Format(type, "kernel '%U': parameter '%s': %s", kern->name,
                     param_name(kern, i), what);
    return -1;
}

static int convert_int(ext_KernelObject *kern, int i, PyObject *o, tack_arg *a)
{
    if (!PyLong_Check(o)) { /* a NumPy integer scalar */
        PyObject *n = PyNumber_Index(o);
        if (!n)
            return -1;
        int rc = convert_int(kern, i, n, a);
        Py_DECREF(n);
        return rc;
    }
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
    if (v == -1 && PyErr_Occurred())
        return -1;
    if (!overflow) {
        *a = tack_arg_int(v);
        return 0;
    }
    if (overflow > 0) {
        unsigned long long u = PyLong_AsUnsignedLongLong(o);
        if (!(u == (unsigned long long)-1 && PyErr_Occurred())) {
            *a = tack_arg_uint(u);
            return 0;
        }
        if (!PyErr_ExceptionMatches(PyExc_OverflowError))
            return -1;
        PyErr_Clear();
    }
    PyErr_Format(PyExc_ValueError,
                 "kernel '%U': parameter '%s': integer %S out of the u64/i64 range",
                 kern->name, param_name(kern, i), o);
    return -1;
}

static int convert_ndarray(ext_KernelObject *kern, int i, PyArrayObject *arr,
                           tack_arg *a, ext_launch_state *st)
{
    int t = ext_dtype_from_typenum(PyArray_TYPE(arr));
    if (t < 0 || !PyArray_ISNOTSWAPPED(arr)) {
        PyErr_Format(PyExc_TypeError,
                     "kernel '%U': parameter '%s': arrays of dtype %S are not supported",
                     kern->name, param_name(kern, i), (PyObject *)PyArray_DESCR(arr));
        return -1;
    }
    int ndim = PyArray_NDIM(arr);
    if (ndim > TACK_MAX_NDIM) {
        PyErr_Format(PyExc_ValueError,
                     "kernel '%U': parameter '%s': arrays have at most %d dimensions, "
                     "this one has %d", kern->name, param_name(kern, i),
                     TACK_MAX_NDIM, ndim);
        return -1;
    }
    if (!PyArray_ISALIGNED(arr))
        return arg_error(kern, i, PyExc_ValueError,
                         "the array's data is not aligned to its element size", NULL);
    a->kind = TACK_ARG_ARRAY;
    a->dtype = (tack_dtype)t;
    a->vec_width = 0;
    a->is_texture = 0;
    a->ndim = ndim;
    a->writable = PyArray_ISWRITEABLE(arr);
    a->data = PyArray_DATA(arr);
    const npy_intp *dims = PyArray_DIMS(arr);
    const npy_intp *strides = PyArray_STRIDES(arr);
    Py_ssize_t n = 1;
    for (int d = 0; d < ndim; d++) {
        a->shape[d] = dims[d];
        a->strides[d] = strides[d];
        n *= dims[d];
    }
    if (n > st->max_elems)
        st->max_elems = n;
    return 0;
}

static int convert_buffer(ext_KernelObject *kern, int i, PyObject *o, tack_arg *a,
                          ext_launch_state *st)
{
    Py_buffer *view = &st->views[st->nviews];
    if (PyObject_GetBuffer(o, view, PyBUF_RECORDS_RO) < 0) {
        PyErr_Clear();
        return arg_error(kern, i, PyExc_TypeError,
                         "cannot take a strided buffer from", o);
    }
    st->nviews++;
    int t = ext_dtype_from_format(view->format, view->itemsize);
    if (t < 0) {
        PyErr_Format(PyExc_TypeError,
                     "kernel '%U': parameter '%s': buffers of format '%s' are not supported",
                     kern->name, param_name(kern, i), view->format ? view->format : "B");
        return -1;
    }
    if (view->ndim > TACK_MAX_NDIM) {
        PyErr_Format(PyExc_ValueError,
                     "kernel '%U': parameter '%s': arrays have at most %d dimensions, "
                     "this one has %d", kern->name, param_name(kern, i),
                     TACK_MAX_NDIM, view->ndim);
        return -1;
    }
    if (view->suboffsets)
        return arg_error(kern, i, PyExc_ValueError,
                         "buffers with suboffsets are not supported", NULL);
    if (((uintptr_t)view->buf) % (uintptr_t)view->itemsize)
        return arg_error(kern, i, PyExc_ValueError,
                         "the buffer's data is not aligned to its element size", NULL);
    a->kind = TACK_ARG_ARRAY;
    a->dtype = (tack_dtype)t;
    a->vec_width = 0;
    a->is_texture = 0;
    a->ndim = view->ndim;
    a->writable = !view->readonly;
    a->data = view->buf;
    Py_ssize_t n = 1;
    for (int d = 0; d < view->ndim; d++) {
        a->shape[d] = view->shape[d];
        a->strides[d] = view->strides[d];
        n *= view->shape[d];
    }
    if (n > st->max_elems)
        st->max_elems = n;
    return 0;
}

int ext_convert_args(ext_KernelObject *kern, PyObject *const *objs, Py_ssize_t nargs,
                     tack_arg *args, ext_launch_state *st)
{
    for (int i = 0; i < (int)nargs; i++) {
        PyObject *o = objs[i];
        tack_arg *a = &args[i];
        int rc = 0;
        if (PyArray_Check(o)) {
            rc = convert_ndarray(kern, i, (PyArrayObject *)o, a, st);
        } else if (ext_Array_Check(o) || ext_Texture_Check(o)) {
            int texture = ext_Texture_Check(o);
            ext_ArrayObject *arr =
                (ext_ArrayObject *)(texture ? ((ext_TextureObject *)o)->array : o);
            if (!st->device) {
                st->device = arr->device;
            } else if (st->device != arr->device) {
                rc = arg_error(kern, i, PyExc_ValueError,
                               "the array is on another device than the earlier "
                               "array arguments", NULL);
                goto out;
            }
            a->kind = TACK_ARG_ARRAY;
            a->dtype = arr->dtype;            /* the component for vectors */
            a->vec_width = arr->vec_width;
            a->is_texture = texture;
            a->ndim = ext_Array_STORAGE_NDIM(arr);
            a->writable = !texture; /* textures are read-only in kernels */
            a->data = arr->data;
            memcpy(a->shape, arr->shape, sizeof a->shape);
            memcpy(a->strides, arr->strides, sizeof a->strides);
            if (arr->size > st->max_elems)
                st->max_elems = arr->size;
        } else if (PyBool_Check(o)) {
            *a = tack_arg_bool(o == Py_True);
        } else if (PyFloat_Check(o)) {   /* includes np.float64 */
            *a = tack_arg_float(PyFloat_AS_DOUBLE(o));
        } else if (PyLong_Check(o)) {
            rc = convert_int(kern, i, o, a);
        } else if (PyArray_IsScalar(o, Bool)) {
            *a = tack_arg_bool(PyObject_IsTrue(o));
        } else if (PyArray_IsScalar(o, Integer)) {
            rc = convert_int(kern, i, o, a);
        } else if (PyArray_IsScalar(o, Floating)) {
            double f = PyFloat_AsDouble(o);
            if (f == -1.0 && PyErr_Occurred())
                rc = -1;
            else
                *a = tack_arg_float(f);
        } else if (PyObject_CheckBuffer(o) && !PyArray_IsScalar(o, Generic)) {
            rc = convert_buffer(kern, i, o, a, st);
        } else {
            rc = arg_error(kern, i, PyExc_TypeError,
                           "expected an array, int, float or bool, got", o);
        }
    out:
        if (rc < 0) {
            ext_release_args(st);
            return -1;
        }
    }
    return 0;
}

void ext_release_args(ext_launch_state *st)
{
    for (int i = 0; i < st->nviews; i++)
        PyBuffer_Release(&st->views[i]);
    st->nviews = 0;
}
