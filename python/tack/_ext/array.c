/*
 * array.c - tack.Array: a C-contiguous array in 64-byte aligned memory the
 * object owns, tied to the device it was made for, or (interop.c) a view of
 * memory another library owns.  It exports the buffer protocol, so
 * np.asarray(arr) is a view without a copy; interop.c adds DLPack and the
 * array interfaces.  Conversions between dtypes go through NumPy.
 *
 * An array of vectors (dtype tack.vec3f ...) has a logical shape (n,) and
 * stores n * 3 components; NumPy, the buffer protocol and kernels see the
 * storage, shape (n, 3) of the component dtype.
 */
#define NO_IMPORT_ARRAY
#include "ext.h"

#define ALIGN 64

/* Reads an int or a sequence of ints into shape; returns ndim or -1. */
static int parse_shape(PyObject *obj, int64_t shape[TACK_MAX_NDIM])
{
    PyObject *seq;
    if (PyLong_Check(obj) || PyArray_IsScalar(obj, Integer)) {
        seq = PyTuple_Pack(1, obj);
    } else {
        seq = PySequence_Fast(obj, "shape must be an int or a tuple of ints");
    }
    if (!seq)
        return -1;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    if (n > TACK_MAX_NDIM) {
        PyErr_Format(PyExc_ValueError,
                     "arrays have at most %d dimensions, shape has %zd",
                     TACK_MAX_NDIM, n);
        Py_DECREF(seq);
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *item = PySequence_Fast_GET_ITEM(seq, i);
        int overflow = 0;
        PyObject *idx = PyNumber_Index(item);
        long long v = idx ? PyLong_AsLongLongAndOverflow(idx, &overflow) : -1;
        Py_XDECREF(idx);
        if (!idx || (v == -1 && PyErr_Occurred())) {
            Py_DECREF(seq);
            return -1;
        }
        if (overflow || v < 0) {
            PyErr_Format(PyExc_ValueError, "negative or too large dimension %S in shape",
                         item);
            Py_DECREF(seq);
            return -1;
        }
        shape[i] = v;
    }
    Py_DECREF(seq);
    return (int)n;
}

static PyObject *shape_tuple(int ndim, const int64_t *shape)
{
    PyObject *t = PyTuple_New(ndim);
    if (!t)
        return NULL;
    for (int i = 0; i < ndim; i++) {
        PyObject *v = PyLong_FromLongLong(shape[i]);
        if (!v) {
            Py_DECREF(t);
            return NULL;
        }
        PyTuple_SET_ITEM(t, i, v);
    }
    return t;
}

/* The dtype object of a's elements (borrowed). */
static PyObject *array_dtype_object(const ext_ArrayObject *a)
{
    return ext_vec_dtype_object(a->dtype, a->vec_width);
}

/* "shapes differ" for copyto: dst's logical shape, and for vectors the
 * shape src must have. */
static void shape_mismatch(ext_ArrayObject *dst, PyArrayObject *src)
{
    int sndim = ext_Array_STORAGE_NDIM(dst);
    PyObject *ds = shape_tuple(dst->ndim, dst->shape);
    PyObject *want = ds ? shape_tuple(sndim, dst->shape) : NULL;
    PyObject *ss = want ? PyObject_GetAttrString((PyObject *)src, "shape") : NULL;
    if (ss && dst->vec_width)
        PyErr_Format(PyExc_ValueError,
                     "copyto(): shapes differ: dst is a %R array of shape %S, which "
                     "takes src of shape %S; src has shape %S",
                     array_dtype_object(dst), ds, want, ss);
    else if (ss)
        PyErr_Format(PyExc_ValueError,
                     "copyto(): shapes differ: dst has shape %S, src has shape %S",
                     ds, ss);
    Py_XDECREF(ds);
    Py_XDECREF(want);
    Py_XDECREF(ss);
}

static tack_device *array_dev(const ext_ArrayObject *a)
{
    return ((ext_DeviceObject *)a->device)->dev;
}

int ext_Array_on_host(const ext_ArrayObject *a)
{
    return tack_device_host_memory(array_dev(a));
}

/* "shape (4, 5) and dtype f32" for messages about a new array. */
static PyObject *array_what(int ndim, const int64_t *shape, tack_dtype dtype, int vec_width)
{
    PyObject *dims = PyTuple_New(ndim);
    for (int i = 0; dims && i < ndim; i++) {
        PyObject *d = PyLong_FromLongLong(shape[i]);
        if (!d)
            Py_CLEAR(dims);
        else
            PyTuple_SET_ITEM(dims, i, d);
    }
    PyObject *dt = dims ? ext_vec_dtype_object(dtype, vec_width) : NULL;
    PyObject *r = dt ? PyUnicode_FromFormat("shape %R and dtype %S", dims, dt) : NULL;
    Py_XDECREF(dims);
    return r;
}

/* MemoryError naming the bytes asked for, the device and the array. */
static void raise_no_memory(size_t bytes, tack_device *dev, int ndim, const int64_t *shape,
                            tack_dtype dtype, int vec_width, PyObject *why)
{
    static const char *const units[] = {"bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    double v = (double)bytes;
    int u = 0;
    while (v >= 1024.0 && u < 6) {
        v /= 1024.0;
        u++;
    }
    char human[32];
    snprintf(human, sizeof human, "%.1f %s", v, units[u]);
    PyObject *what = array_what(ndim, shape, dtype, vec_width);
    int has_why = why && PyUnicode_Check(why) && PyUnicode_GET_LENGTH(why) > 0;
    if (what && has_why)
        PyErr_Format(PyExc_MemoryError,
                     "cannot allocate %zu bytes (%s) on device '%s' for an array of %U (%U)",
                     bytes, human, tack_device_name(dev), what, why);
    else if (what)
        PyErr_Format(PyExc_MemoryError,
                     "cannot allocate %zu bytes (%s) on device '%s' for an array of %U",
                     bytes, human, tack_device_name(dev), what);
    Py_XDECREF(what);
}

/* Device memory: allocated, written and read through the device (C API).
 * Host memory: 64-byte aligned malloc, as before. */
static int storage_alloc(ext_ArrayObject *a, tack_device *dev, size_t alloc, int zero)
{
    if (tack_device_host_memory(dev)) {
        a->data = aligned_alloc(ALIGN, alloc);
        if (!a->data) {
            PyErr_NoMemory(); /* array_new names the size */
            return -1;
        }
        if (zero)
            memset(a->data, 0, alloc);
        return 0;
    }
    tack_error err;
    a->data = tack_device_alloc(dev, alloc, &err);
    if (!a->data) {
        ext_raise(&err);
        return -1;
    }
    if (zero) {
        void *zeros = calloc(1, alloc);
        if (!zeros) {
            PyErr_NoMemory();
            return -1;
        }
        tack_status st = tack_device_write(dev, a->data, 0, zeros, alloc, &err);
        free(zeros);
        if (st != TACK_OK) {
            ext_raise(&err);
            return -1;
        }
    }
    return 0;
}

int ext_Array_write(ext_ArrayObject *a, const void *src)
{
    if (ext_Array_on_host(a)) {
        memcpy(a->data, src, (size_t)a->nbytes);
        return 0;
    }
    tack_error err;
    tack_status st;
    /* The copy waits for queued launches: other threads run meanwhile. */
    Py_BEGIN_ALLOW_THREADS
    st = tack_device_write(array_dev(a), a->data, 0, src, (size_t)a->nbytes, &err);
    Py_END_ALLOW_THREADS
    if (st != TACK_OK) {
        ext_raise(&err);
        return -1;
    }
    return 0;
}

int ext_Array_read(const ext_ArrayObject *a, void *dst)
{
    if (ext_Array_on_host(a)) {
        memcpy(dst, a->data, (size_t)a->nbytes);
        return 0;
    }
    tack_error err;
    tack_status st;
    Py_BEGIN_ALLOW_THREADS
    st = tack_device_read(array_dev(a), a->data, 0, dst, (size_t)a->nbytes, &err);
    Py_END_ALLOW_THREADS
    if (st != TACK_OK) {
        ext_raise(&err);
        return -1;
    }
    return 0;
}

static void set_layout(ext_ArrayObject *a, tack_dtype dtype, int vec_width, int ndim,
                       const int64_t *shape, size_t size, size_t nbytes, size_t csize,
                       size_t itemsize);

/* A new array; steals nothing.  zero: fill with zero bytes.  vec_width 2-4:
 * an array of vectors of logical shape shape[0..ndim). */
static ext_ArrayObject *array_new(int ndim, const int64_t *shape, tack_dtype dtype,
                                  int vec_width, PyObject *device, int zero)
{
    if (vec_width && ndim > TACK_MAX_NDIM - 1) {
        PyErr_Format(PyExc_ValueError,
                     "arrays of vectors have at most %d dimensions, shape has %d",
                     TACK_MAX_NDIM - 1, ndim);
        return NULL;
    }
    size_t csize = tack_dtype_size(dtype);
    size_t itemsize = csize * (size_t)(vec_width ? tack_width_components(vec_width) : 1);
    size_t size = 1;
    int too_big = 0;
    for (int i = 0; i < ndim; i++) {
        if (shape[i] != 0 && size > (size_t)PY_SSIZE_T_MAX / (size_t)shape[i])
            too_big = 1;
        else
            size *= (size_t)shape[i];
    }
    if (too_big || size > ((size_t)PY_SSIZE_T_MAX - ALIGN) / itemsize) {
        PyObject *what = array_what(ndim, shape, dtype, vec_width);
        if (what)
            PyErr_Format(PyExc_ValueError,
                         "an array of %U is too big: its size in bytes is more than %zd",
                         what, PY_SSIZE_T_MAX);
        Py_XDECREF(what);
        return NULL;
    }
    size_t nbytes = size * itemsize;
    size_t alloc = (nbytes + ALIGN - 1) / ALIGN * ALIGN;
    if (alloc == 0)
        alloc = ALIGN; /* empty arrays still get a valid pointer */

    ext_ArrayObject *a = PyObject_New(ext_ArrayObject, &ext_ArrayType);
    if (!a)
        return NULL;
    a->weakreflist = NULL;
    a->grad = NULL;
    a->data = NULL;
    a->base = NULL;
    a->readonly = 0;
    a->device = Py_NewRef(device); /* before anything can fail: dealloc frees through it */
    tack_device *dev = ((ext_DeviceObject *)device)->dev;
    if (storage_alloc(a, dev, alloc, zero) < 0) {
        if (PyErr_ExceptionMatches(PyExc_MemoryError)) {
            /* Say what was asked for and where, with the device's reason. */
            PyObject *t, *v, *tb;
            PyErr_Fetch(&t, &v, &tb);
            PyObject *why = v ? PyObject_Str(v) : NULL;
            PyErr_Clear();
            raise_no_memory(nbytes, dev, ndim, shape, dtype, vec_width, why);
            Py_XDECREF(why);
            Py_XDECREF(t);
            Py_XDECREF(v);
            Py_XDECREF(tb);
        }
        Py_DECREF(a);
        return NULL;
    }
    set_layout(a, dtype, vec_width, ndim, shape, size, nbytes, csize, itemsize);
    return a;
}

/* Shape, C-order strides and sizes (vectors: a trailing width dimension). */
static void set_layout(ext_ArrayObject *a, tack_dtype dtype, int vec_width, int ndim,
                       const int64_t *shape, size_t size, size_t nbytes, size_t csize,
                       size_t itemsize)
{
    a->dtype = dtype;
    a->vec_width = vec_width;
    a->ndim = ndim;
    a->size = (Py_ssize_t)size;
    a->nbytes = (Py_ssize_t)nbytes;
    if (vec_width) {
        a->shape[ndim] = tack_width_components(vec_width);
        a->strides[ndim] = (int64_t)csize;
        a->py_shape[ndim] = tack_width_components(vec_width);
        a->py_strides[ndim] = (Py_ssize_t)csize;
    }
    int64_t stride = (int64_t)itemsize;
    for (int i = ndim - 1; i >= 0; i--) {
        a->shape[i] = shape[i];
        a->strides[i] = stride;
        a->py_shape[i] = (Py_ssize_t)shape[i];
        a->py_strides[i] = (Py_ssize_t)stride;
        stride *= shape[i];
    }
}

ext_ArrayObject *ext_Array_wrap(PyObject *device, void *data, tack_dtype dtype, int vec_width,
                                int ndim, const int64_t *shape, int readonly, PyObject *base)
{
    int most = TACK_MAX_NDIM - (vec_width ? 1 : 0);
    if (ndim > most) {
        PyErr_Format(PyExc_ValueError, "arrays%s have at most %d dimensions, got %d",
                     vec_width ? " of vectors" : "", most, ndim);
        return NULL;
    }
    size_t csize = tack_dtype_size(dtype);
    size_t itemsize = csize * (size_t)(vec_width ? tack_width_components(vec_width) : 1);
    size_t size = 1;
    for (int i = 0; i < ndim; i++)
        size *= (size_t)shape[i]; /* the producer's allocation holds it */
    ext_ArrayObject *a = PyObject_New(ext_ArrayObject, &ext_ArrayType);
    if (!a)
        return NULL;
    a->weakreflist = NULL;
    a->grad = NULL;
    a->data = data;
    a->base = Py_NewRef(base);
    a->readonly = readonly;
    a->device = Py_NewRef(device);
    set_layout(a, dtype, vec_width, ndim, shape, size, size * itemsize, csize, itemsize);
    return a;
}

/* requires_grad=True (docs/autodiff.md): a gets a zeroed .grad like it. */
static PyObject *give_grad(PyObject *obj, int requires_grad)
{
    if (!obj || !requires_grad)
        return obj;
    ext_ArrayObject *a = (ext_ArrayObject *)obj;
    int64_t shape[TACK_MAX_NDIM + 1];
    memcpy(shape, a->shape, sizeof a->shape[0] * (a->ndim + !!a->vec_width));
    ext_ArrayObject *g = array_new(a->ndim, shape, a->dtype, a->vec_width, a->device, 1);
    if (!g) {
        Py_DECREF(obj);
        return NULL;
    }
    a->grad = (PyObject *)g;
    return obj;
}

static PyObject *make_array(PyObject *args, PyObject *kwargs, const char *fname, int zero)
{
    static char *kwlist[] = {"shape", "dtype", "device", "requires_grad", NULL};
    PyObject *shape_obj, *dtype_obj = Py_None, *device_obj = Py_None;
    int requires_grad = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, fname, kwlist,
                                     &shape_obj, &dtype_obj, &device_obj, &requires_grad))
        return NULL;
    int64_t shape[TACK_MAX_NDIM];
    int ndim = parse_shape(shape_obj, shape);
    if (ndim < 0)
        return NULL;
    tack_dtype dtype = TACK_F32;
    int width = 0;
    if (dtype_obj != Py_None && ext_dtype_from_object_vec(dtype_obj, &dtype, &width) < 0)
        return NULL;
    PyObject *device = ext_device_from_object(device_obj);
    if (!device)
        return NULL;
    PyObject *a = (PyObject *)array_new(ndim, shape, dtype, width, device, zero);
    Py_DECREF(device);
    return give_grad(a, requires_grad);
}

PyObject *ext_empty(PyObject *self, PyObject *args, PyObject *kwargs)
{
    (void)self;
    return make_array(args, kwargs, "O|OO$p:empty", 0);
}

PyObject *ext_zeros(PyObject *self, PyObject *args, PyObject *kwargs)
{
    (void)self;
    return make_array(args, kwargs, "O|OO$p:zeros", 1);
}

/* A NumPy array viewing a's storage (writable), keeping a alive. */
/* The NumPy shape of a's data: the storage shape, with a matrix's
 * components as (rows, cols). */
static int numpy_dims(const ext_ArrayObject *a, npy_intp *dims)
{
    int ndim = ext_Array_STORAGE_NDIM(a);
    for (int i = 0; i < ndim; i++)
        dims[i] = (npy_intp)a->shape[i];
    int rows = tack_width_rows(a->vec_width);
    if (rows) {
        dims[ndim - 1] = rows;
        dims[ndim] = tack_width_components(a->vec_width) / rows;
        ndim++;
    }
    return ndim;
}

/* A NumPy array over a's host memory; storage: with a matrix's components
 * flat (the storage shape) rather than (rows, cols). */
static PyObject *numpy_view_as(ext_ArrayObject *a, int storage)
{
    npy_intp dims[NPY_MAXDIMS];
    int ndim = storage ? ext_Array_STORAGE_NDIM(a) : numpy_dims(a, dims);
    for (int i = 0; storage && i < ndim; i++)
        dims[i] = (npy_intp)a->shape[i];
    int typenum = ext_dtype_to_typenum(a->dtype);
    if (!storage && a->vec_width == TACK_COMPLEX_WIDTH) { /* NumPy's complex numbers */
        ndim--;
        typenum = ext_dtype_typenum(a->dtype, a->vec_width);
    }
    PyObject *v = PyArray_SimpleNewFromData(ndim, dims, typenum, a->data);
    if (!v)
        return NULL;
    if (PyArray_SetBaseObject((PyArrayObject *)v, Py_NewRef((PyObject *)a)) < 0) {
        Py_DECREF(v);
        return NULL;
    }
    return v;
}

static PyObject *numpy_view(ext_ArrayObject *a)
{
    return numpy_view_as(a, 0);
}

/* tack.array's copy of obj; steals want (the dtype asked for, or NULL). */
static PyObject *copy_new(PyObject *obj, PyArray_Descr *want, int width, PyObject *device_obj)
{
    /* A device array is read back first (it has no host buffer). */
    PyObject *host = NULL;
    if (ext_Array_Check(obj) && !ext_Array_on_host((ext_ArrayObject *)obj)) {
        host = ext_Array_numpy(obj, NULL);
        if (!host) {
            Py_XDECREF(want);
            return NULL;
        }
    }
    /* Steals want; FORCECAST: an explicit dtype converts like np.array. */
    PyArrayObject *src = (PyArrayObject *)PyArray_FromAny(
        host ? host : obj, want, 0, 0,
        NPY_ARRAY_C_CONTIGUOUS | NPY_ARRAY_ALIGNED | NPY_ARRAY_NOTSWAPPED |
        (want ? NPY_ARRAY_FORCECAST : 0), NULL);
    Py_XDECREF(host);
    if (!src)
        return NULL;
    if (PyArray_TYPE(src) == NPY_CFLOAT || PyArray_TYPE(src) == NPY_CDOUBLE) {
        /* Complex numbers: pairs of parts along a last dimension of 2. */
        int cn = PyArray_NDIM(src);
        npy_intp dims[NPY_MAXDIMS];
        if (cn + 1 > NPY_MAXDIMS) {
            PyErr_SetString(PyExc_ValueError, "tack.array(): too many dimensions");
            Py_DECREF(src);
            return NULL;
        }
        for (int i = 0; i < cn; i++)
            dims[i] = PyArray_DIM(src, i);
        dims[cn] = 2;
        int part = PyArray_TYPE(src) == NPY_CFLOAT ? NPY_FLOAT32 : NPY_FLOAT64;
        PyObject *f = PyArray_SimpleNewFromData(cn + 1, dims, part, PyArray_DATA(src));
        if (!f || PyArray_SetBaseObject((PyArrayObject *)f, (PyObject *)src) < 0) {
            Py_XDECREF(f);
            Py_DECREF(src);
            return NULL;
        }
        src = (PyArrayObject *)f; /* f holds src now */
        width = TACK_COMPLEX_WIDTH;
    } else if (width == TACK_COMPLEX_WIDTH) {
        PyErr_SetString(PyExc_TypeError, "tack.array(): complex data is needed here");
        Py_DECREF(src);
        return NULL;
    }

    int t = ext_dtype_from_typenum(PyArray_TYPE(src));
    if (!want && PyArray_TYPE(src) == NPY_DOUBLE && !PyArray_Check(obj) &&
        !ext_Array_Check(obj) && !PyObject_CheckBuffer(obj) && !PyArray_CheckScalar(obj)) {
        /* Python floats (lists, scalars) take Tack's default float. */
        PyArrayObject *f = (PyArrayObject *)PyArray_FromAny(
            (PyObject *)src, PyArray_DescrFromType(NPY_FLOAT32), 0, 0,
            NPY_ARRAY_C_CONTIGUOUS | NPY_ARRAY_ALIGNED | NPY_ARRAY_FORCECAST, NULL);
        Py_DECREF(src);
        if (!f)
            return NULL;
        src = f;
        t = TACK_F32;
    }
    if (t < 0) {
        PyErr_Format(PyExc_TypeError,
                     "tack.array(): dtype %S is not supported (use bool, int8-64, "
                     "uint8-64, float16, float32 or float64)", (PyObject *)PyArray_DESCR(src));
        Py_DECREF(src);
        return NULL;
    }
    int ndim = PyArray_NDIM(src);
    if (tack_width_rows(width)) {
        /* Matrices: data of shape (..., rows, cols), stored flat per element. */
        int rows = tack_width_rows(width), cols = tack_width_components(width) / rows;
        if (ndim < 2 || PyArray_DIM(src, ndim - 2) != rows || PyArray_DIM(src, ndim - 1) != cols) {
            PyObject *ss = PyObject_GetAttrString((PyObject *)src, "shape");
            if (ss)
                PyErr_Format(PyExc_ValueError,
                             "tack.array(): an array of %R needs data of shape "
                             "(..., %d, %d), got shape %S",
                             ext_vec_dtype_object((tack_dtype)t, width), rows, cols, ss);
            Py_XDECREF(ss);
            Py_DECREF(src);
            return NULL;
        }
        npy_intp dims[NPY_MAXDIMS];
        for (int i = 0; i < ndim - 2; i++)
            dims[i] = PyArray_DIM(src, i);
        dims[ndim - 2] = rows * cols;
        PyArray_Dims flat = {dims, ndim - 1};
        PyArrayObject *f = (PyArrayObject *)PyArray_Newshape(src, &flat, NPY_CORDER);
        Py_DECREF(src);
        if (!f)
            return NULL;
        src = f;
        ndim--;
    }
    if (width) {
        /* Components along the last dimension: shape (..., width). */
        if (ndim == 0 || PyArray_DIM(src, ndim - 1) != tack_width_components(width)) {
            PyObject *ss = PyObject_GetAttrString((PyObject *)src, "shape");
            if (ss)
                PyErr_Format(PyExc_ValueError,
                             "tack.array(): an array of %R needs data of shape "
                             "(..., %d), got shape %S",
                             ext_vec_dtype_object((tack_dtype)t, width),
                             tack_width_components(width), ss);
            Py_XDECREF(ss);
            Py_DECREF(src);
            return NULL;
        }
        ndim--;
        if (ndim > TACK_MAX_NDIM - 1) {
            PyErr_Format(PyExc_ValueError,
                         "arrays of vectors have at most %d dimensions, got %d "
                         "(data of %d dimensions)", TACK_MAX_NDIM - 1, ndim, ndim + 1);
            Py_DECREF(src);
            return NULL;
        }
    } else if (ndim > TACK_MAX_NDIM) {
        PyErr_Format(PyExc_ValueError, "arrays have at most %d dimensions, got %d",
                     TACK_MAX_NDIM, ndim);
        Py_DECREF(src);
        return NULL;
    }
    /* A copy of a tack.Array stays on its device unless told otherwise. */
    PyObject *device = device_obj == Py_None && ext_Array_Check(obj)
        ? Py_NewRef(((ext_ArrayObject *)obj)->device) : ext_device_from_object(device_obj);
    if (!device) {
        Py_DECREF(src);
        return NULL;
    }
    int64_t shape[TACK_MAX_NDIM];
    for (int i = 0; i < ndim; i++)
        shape[i] = PyArray_DIM(src, i);
    ext_ArrayObject *a = array_new(ndim, shape, (tack_dtype)t, width, device, 0);
    Py_DECREF(device);
    if (a && ext_Array_write(a, PyArray_DATA(src)) < 0)
        Py_CLEAR(a);
    Py_DECREF(src);
    return (PyObject *)a;
}

PyObject *ext_array(PyObject *self, PyObject *args, PyObject *kwargs)
{
    (void)self;
    static char *kwlist[] = {"obj", "dtype", "device", "requires_grad", NULL};
    PyObject *obj, *dtype_obj = Py_None, *device_obj = Py_None;
    int requires_grad = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|OO$p:array", kwlist,
                                     &obj, &dtype_obj, &device_obj, &requires_grad))
        return NULL;
    if (obj == Py_None) { /* NumPy would make an object (or NaN) array of it */
        PyErr_SetString(PyExc_TypeError, "tack.array(): None is not an array");
        return NULL;
    }

    PyArray_Descr *want = NULL;
    int width = 0;
    if (dtype_obj != Py_None) {
        tack_dtype t;
        if (ext_dtype_from_object_vec(dtype_obj, &t, &width) < 0)
            return NULL;
        want = PyArray_DescrFromType(ext_dtype_typenum(t, width));
        if (!want)
            return NULL;
    } else if (ext_Array_Check(obj) && ((ext_ArrayObject *)obj)->vec_width) {
        /* A copy of an array of vectors is one too. */
        width = ((ext_ArrayObject *)obj)->vec_width;
    }
    /* Another library's DLPack or CUDA array: shared first, then copied
     * like a tack.Array (its device memory is read back). */
    PyObject *shared = ext_share_foreign(obj);
    if (!shared) {
        Py_XDECREF(want);
        return NULL;
    }
    PyObject *r = copy_new(shared != Py_None ? shared : obj, want, width, device_obj);
    Py_DECREF(shared);
    return give_grad(r, requires_grad);
}

PyObject *ext_copyto(PyObject *self, PyObject *args, PyObject *kwargs)
{
    (void)self;
    static char *kwlist[] = {"dst", "src", NULL};
    PyObject *dst_obj, *src_obj;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO:copyto", kwlist, &dst_obj, &src_obj))
        return NULL;
    if (!ext_Array_Check(dst_obj) && ext_Array_Check(src_obj)) {
        /* Back to the host: into a NumPy array (anything np.copyto takes). */
        PyObject *host = ext_Array_numpy(src_obj, NULL);
        PyObject *np = host ? PyImport_ImportModule("numpy") : NULL;
        PyObject *r = np ? PyObject_CallMethod(np, "copyto", "OO", dst_obj, host) : NULL;
        Py_XDECREF(np);
        Py_XDECREF(host);
        if (!r)
            return NULL;
        Py_DECREF(r);
        Py_RETURN_NONE;
    }
    if (!ext_Array_Check(dst_obj)) {
        PyErr_Format(PyExc_TypeError, "copyto(): dst must be a tack.Array, not %.100s",
                     Py_TYPE(dst_obj)->tp_name);
        return NULL;
    }
    ext_ArrayObject *dst = (ext_ArrayObject *)dst_obj;
    if (dst->readonly) {
        PyErr_SetString(PyExc_ValueError,
                        "copyto(): dst is read-only (it shares another library's read-only "
                        "memory)");
        return NULL;
    }
    PyArrayObject *src = (PyArrayObject *)PyArray_FromAny(src_obj, NULL, 0, 0, 0, NULL);
    if (!src)
        return NULL;
    int rows = tack_width_rows(dst->vec_width);
    if (rows && PyArray_NDIM(src) == dst->ndim + 2 &&
        PyArray_DIM(src, dst->ndim) == rows &&
        PyArray_DIM(src, dst->ndim + 1) == tack_width_components(dst->vec_width) / rows) {
        /* Matrices of shape (..., rows, cols): as the storage's flat rows. */
        npy_intp dims[NPY_MAXDIMS];
        for (int i = 0; i < dst->ndim; i++)
            dims[i] = PyArray_DIM(src, i);
        dims[dst->ndim] = tack_width_components(dst->vec_width);
        PyArray_Dims flat = {dims, dst->ndim + 1};
        PyArrayObject *f = (PyArrayObject *)PyArray_Newshape(src, &flat, NPY_ANYORDER);
        Py_DECREF(src);
        if (!f)
            return NULL;
        src = f;
    }
    PyObject *r = NULL;
    PyArray_Descr *dst_descr = NULL;
    PyObject *view = NULL;
    int sndim = ext_Array_STORAGE_NDIM(dst);
    int same = PyArray_NDIM(src) == sndim;
    for (int i = 0; same && i < sndim; i++)
        same = PyArray_DIM(src, i) == dst->shape[i];
    if (!same) {
        shape_mismatch(dst, src);
        goto done;
    }
    dst_descr = PyArray_DescrFromType(ext_dtype_to_typenum(dst->dtype));
    if (!dst_descr)
        goto done;
    if (!PyArray_CanCastTypeTo(PyArray_DESCR(src), dst_descr, NPY_SAME_KIND_CASTING)) {
        PyErr_Format(PyExc_TypeError,
                     "copyto(): cannot copy %S data into a %R array under the "
                     "'same_kind' casting rule", (PyObject *)PyArray_DESCR(src),
                     array_dtype_object(dst));
        goto done;
    }
    if (ext_Array_on_host(dst)) {
        view = numpy_view_as(dst, 1);
        if (!view || PyArray_CopyInto((PyArrayObject *)view, src) < 0)
            goto done;
    } else {
        /* Converted on the host, then one copy to the device. */
        Py_INCREF(dst_descr);
        view = PyArray_FromAny((PyObject *)src, dst_descr, 0, 0,
                               NPY_ARRAY_C_CONTIGUOUS | NPY_ARRAY_ALIGNED | NPY_ARRAY_FORCECAST,
                               NULL);
        if (!view || ext_Array_write(dst, PyArray_DATA((PyArrayObject *)view)) < 0)
            goto done;
    }
    r = Py_NewRef(Py_None);
done:
    Py_XDECREF(view);
    Py_XDECREF(dst_descr);
    Py_DECREF(src);
    return r;
}

/* ---- the tack.Array type --------------------------------------------- */

static void array_dealloc(PyObject *self)
{
    ext_ArrayObject *a = (ext_ArrayObject *)self;
    if (a->weakreflist)
        PyObject_ClearWeakRefs(self);
    if (a->base)
        Py_DECREF(a->base); /* another library's memory: its owner frees it */
    else if (a->device && !ext_Array_on_host(a))
        tack_device_free_mem(array_dev(a), a->data);
    else
        free(a->data);
    Py_XDECREF(a->device);
    Py_XDECREF(a->grad);
    Py_TYPE(self)->tp_free(self);
}

static int array_getbuffer(PyObject *self, Py_buffer *view, int flags)
{
    ext_ArrayObject *a = (ext_ArrayObject *)self;
    if (!ext_Array_on_host(a)) {
        view->obj = NULL;
        PyErr_Format(PyExc_BufferError,
                     "this tack.Array lives in the memory of device '%s'; copy it to the host "
                     "with .numpy()", tack_device_name(array_dev(a)));
        return -1;
    }
    if (a->readonly && (flags & PyBUF_WRITABLE) == PyBUF_WRITABLE) {
        view->obj = NULL;
        PyErr_SetString(PyExc_BufferError,
                        "this tack.Array is read-only (it shares another library's read-only "
                        "memory)");
        return -1;
    }
    view->obj = Py_NewRef(self);
    view->buf = a->data;
    view->len = a->nbytes;
    view->readonly = a->readonly;
    view->itemsize = (Py_ssize_t)tack_dtype_size(a->dtype);
    view->format = (flags & PyBUF_FORMAT) ? (char *)ext_dtype_format(a->dtype) : NULL;
    view->ndim = ext_Array_STORAGE_NDIM(a);
    view->shape = (flags & PyBUF_ND) ? a->py_shape : NULL;
    view->strides = (flags & PyBUF_STRIDES) == PyBUF_STRIDES ? a->py_strides : NULL;
    view->suboffsets = NULL;
    view->internal = NULL;
    return 0;
}

static PyBufferProcs array_as_buffer = {array_getbuffer, NULL};

static Py_ssize_t array_len(PyObject *self)
{
    ext_ArrayObject *a = (ext_ArrayObject *)self;
    if (a->ndim == 0) {
        PyErr_SetString(PyExc_TypeError, "len() of a 0-d tack.Array");
        return -1;
    }
    return (Py_ssize_t)a->shape[0];
}

static PySequenceMethods array_as_sequence = {.sq_length = array_len};

static PyObject *array_repr(PyObject *self)
{
    ext_ArrayObject *a = (ext_ArrayObject *)self;
    PyObject *shape = shape_tuple(a->ndim, a->shape);
    if (!shape)
        return NULL;
    const char *dev = tack_device_name(((ext_DeviceObject *)a->device)->dev);
    PyObject *r = PyUnicode_FromFormat("tack.Array(shape=%S, dtype=%R, device='%s')",
                                       shape, array_dtype_object(a), dev);
    Py_DECREF(shape);
    return r;
}

PyObject *ext_Array_numpy(PyObject *self, PyObject *unused)
{
    (void)unused;
    ext_ArrayObject *a = (ext_ArrayObject *)self;
    if (ext_Array_on_host(a)) {
        PyObject *v = numpy_view(a);
        if (v && a->readonly)
            PyArray_CLEARFLAGS((PyArrayObject *)v, NPY_ARRAY_WRITEABLE);
        return v;
    }
    npy_intp dims[NPY_MAXDIMS];
    int ndim = numpy_dims(a, dims);
    if (a->vec_width == TACK_COMPLEX_WIDTH) /* the parts read back as complex numbers */
        ndim--;
    PyObject *r = PyArray_SimpleNew(ndim, dims, ext_dtype_typenum(a->dtype, a->vec_width));
    if (r && ext_Array_read(a, PyArray_DATA((PyArrayObject *)r)) < 0)
        Py_CLEAR(r);
    return r;
}

static PyObject *array_get_shape(PyObject *self, void *closure)
{
    (void)closure;
    ext_ArrayObject *a = (ext_ArrayObject *)self;
    return shape_tuple(a->ndim, a->shape);
}

static PyObject *array_get_strides(PyObject *self, void *closure)
{
    (void)closure;
    ext_ArrayObject *a = (ext_ArrayObject *)self;
    return shape_tuple(a->ndim, a->strides);
}

static PyObject *array_get_dtype(PyObject *self, void *closure)
{
    (void)closure;
    return Py_NewRef(array_dtype_object((ext_ArrayObject *)self));
}

static PyObject *array_get_ndim(PyObject *self, void *closure)
{
    (void)closure;
    return PyLong_FromLong(((ext_ArrayObject *)self)->ndim);
}

static PyObject *array_get_size(PyObject *self, void *closure)
{
    (void)closure;
    return PyLong_FromSsize_t(((ext_ArrayObject *)self)->size);
}

static PyObject *array_get_nbytes(PyObject *self, void *closure)
{
    (void)closure;
    return PyLong_FromSsize_t(((ext_ArrayObject *)self)->nbytes);
}

static PyObject *array_get_device(PyObject *self, void *closure)
{
    (void)closure;
    return Py_NewRef(((ext_ArrayObject *)self)->device);
}

/* Automatic differentiation (docs/autodiff.md): the gradient array that
 * tack.Tape and kernel.backward accumulate into; None without one. */
static PyObject *array_get_grad(PyObject *self, void *closure)
{
    (void)closure;
    PyObject *g = ((ext_ArrayObject *)self)->grad;
    return Py_NewRef(g ? g : Py_None);
}

static int array_set_grad(PyObject *self, PyObject *v, void *closure)
{
    (void)closure;
    ext_ArrayObject *a = (ext_ArrayObject *)self;
    if (v && v != Py_None) {
        if (!PyObject_TypeCheck(v, &ext_ArrayType) || v == self) {
            PyErr_SetString(PyExc_TypeError, "Array.grad: expected another tack.Array or None");
            return -1;
        }
        ext_ArrayObject *g = (ext_ArrayObject *)v;
        if (g->ndim != a->ndim || g->dtype != a->dtype || g->vec_width != a->vec_width ||
            memcmp(g->shape, a->shape, sizeof a->shape[0] * (a->ndim + !!a->vec_width)) ||
            g->device != a->device) {
            PyErr_SetString(PyExc_ValueError,
                            "Array.grad: the gradient must have the array's shape, dtype and device");
            return -1;
        }
    }
    PyObject *old = a->grad;
    a->grad = v && v != Py_None ? Py_NewRef(v) : NULL;
    Py_XDECREF(old);
    return 0;
}

static PyObject *array_get_requires_grad(PyObject *self, void *closure)
{
    (void)closure;
    return PyBool_FromLong(((ext_ArrayObject *)self)->grad != NULL);
}

static PyGetSetDef array_getset[] = {
    {"grad", array_get_grad, array_set_grad,
     "The gradient array (same shape, dtype and device) of an array made with\n"
     "requires_grad=True, else None (docs/autodiff.md).", NULL},
    {"requires_grad", array_get_requires_grad, NULL,
     "True when the array has a gradient (.grad).", NULL},
    {"shape", array_get_shape, NULL,
     "Dimensions, a tuple of ints (for arrays of vectors the logical shape, "
     "without the components).", NULL},
    {"strides", array_get_strides, NULL, "Bytes between elements per dimension.", NULL},
    {"dtype", array_get_dtype, NULL, "Element type, a tack.dtype (tack.vec3f ...).", NULL},
    {"ndim", array_get_ndim, NULL, "Number of (logical) dimensions.", NULL},
    {"size", array_get_size, NULL, "Number of (logical) elements.", NULL},
    {"nbytes", array_get_nbytes, NULL, "Bytes of data.", NULL},
    {"device", array_get_device, NULL, "The tack.Device the array belongs to.", NULL},
    {"__array_interface__", ext_array_interface, NULL,
     "NumPy's array interface (version 3) for arrays in host memory.", NULL},
    {"__cuda_array_interface__", ext_cuda_array_interface, NULL,
     "The CUDA array interface (version 3) for arrays in a CUDA device's memory.", NULL},
    {NULL, NULL, NULL, NULL, NULL}
};

static PyMethodDef array_methods[] = {
    {"numpy", ext_Array_numpy, METH_NOARGS,
     "numpy()\n--\n\nThe data as a NumPy array (for arrays of vectors shape + (width,) of\n"
     "the component dtype).  For an array in host memory (the CPU) a view\n"
     "sharing its memory, keeping the array alive: writes through either are\n"
     "seen by the other.  For an array in a device's memory (OpenCL, CUDA) a\n"
     "copy read back from the device."},
    {"__dlpack__", (PyCFunction)(void (*)(void))ext_array_dlpack, METH_VARARGS | METH_KEYWORDS,
     "__dlpack__(*, stream=None, max_version=None, dl_device=None, copy=None)\n--\n\n"
     "The array as a DLPack capsule (the Python array API's protocol): a\n"
     "versioned one when max_version >= (1, 0), else a DLPack 0.8 one."},
    {"__dlpack_device__", ext_array_dlpack_device, METH_NOARGS,
     "__dlpack_device__()\n--\n\n(device type, index) in DLPack's codes: (1, 0) for the\n"
     "CPU, (2, N) for CUDA device N, (4, N) for OpenCL device N."},
    {NULL, NULL, 0, NULL}
};

PyTypeObject ext_ArrayType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "tack.Array",
    .tp_basicsize = sizeof(ext_ArrayObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A C-contiguous array; made by tack.empty, tack.zeros and tack.array,\n"
              "or sharing another library's memory (tack.asarray, tack.from_dlpack).\n"
              "np.asarray(arr) and np.from_dlpack(arr) view it without a copy.",
    .tp_dealloc = array_dealloc,
    .tp_repr = array_repr,
    .tp_as_sequence = &array_as_sequence,
    .tp_as_buffer = &array_as_buffer,
    .tp_weaklistoffset = offsetof(ext_ArrayObject, weakreflist),
    .tp_getset = array_getset,
    .tp_methods = array_methods,
};
