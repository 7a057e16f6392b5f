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
 *
 * Other libraries' arrays (DLPack producers such as PyTorch tensors, the
 * array interfaces) come last, after every form Tack knows, so they cost
 * the known forms nothing; what keeps their memory alive is held in the
 * launch state until the launch is over (interop.c reads them).
 *
 * An instance of a @tack.device_class class becomes a tack_struct built for
 * this launch (ext_tmpl_block, freed by ext_release_args): its class
 * constants (numbers anywhere in the class's MRO, an instance attribute of
 * the same name overriding the value) and its instance attributes (numbers,
 * arrays exactly as array arguments, nested templates), sorted by name.
 * The block holds references to the names and values it points into, and
 * the class's method context for the resolver.
 */
#define NO_IMPORT_ARRAY
#include "ext.h"

#include <stdarg.h>


/* Templates nest at most this deep (a longer chain is surely a mistake). */
#define MAX_NEST 16

/* Where a value being converted sits: parameter i of kern, and inside a
 * template argument the attribute path (empty at the top level). */
typedef struct conv {
    ext_KernelObject *kern;
    int i;
    ext_launch_state *st;
    PyObject *cls_name;          /* borrowed: the parameter's class */
    int depth;                   /* templates entered */
    PyObject *stack[MAX_NEST];   /* their instances, outermost first */
    char path[256];
} conv;

struct ext_tmpl_block {
    ext_tmpl_block *next;
    tack_struct s;
    ext_resolver_ctx methods;    /* the class's method context */
    Py_ssize_t nrefs;
    PyObject **refs;             /* what s points into: names, values, ... */
    tack_field fields[];         /* then the refs */
};

static const char *param_name(ext_KernelObject *kern, int i)
{
    const char *p = tack_kernel_param_name(kern->k, i);
    return p ? p : "?";
}

/* Raises exc with "kernel 'K': parameter 'p': [attribute 'a' of C: ]" and
 * the formatted message; returns -1. */
static int conv_error(const conv *c, PyObject *exc, const char *fmt, ...)
{
    va_list va;
    va_start(va, fmt);
    PyObject *msg = PyUnicode_FromFormatV(fmt, va);
    va_end(va);
    if (!msg)
        return -1;
    if (c->path[0])
        PyErr_Format(exc, "kernel '%U': parameter '%s': attribute '%s' of %U: %U",
                     c->kern->name, param_name(c->kern, c->i), c->path, c->cls_name,
                     msg);
    else
        PyErr_Format(exc, "kernel '%U': parameter '%s': %U", c->kern->name,
                     param_name(c->kern, c->i), msg);
    Py_DECREF(msg);
    return -1;
}

static int convert_int(const conv *c, PyObject *o, tack_arg *a)
{
    if (!PyLong_Check(o)) { /* a NumPy integer scalar */
        PyObject *n = PyNumber_Index(o);
        if (!n)
            return -1;
        int rc = convert_int(c, n, a);
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
    return conv_error(c, PyExc_ValueError, "integer %S out of the u64/i64 range", o);
}

/* The array argument's fields, from a NumPy array or a buffer view. */
static void fill_array(tack_arg *a, int dtype, int ndim, int writable, void *data,
                       const Py_ssize_t *shape, const Py_ssize_t *strides)
{
    a->kind = TACK_ARG_ARRAY;
    a->dtype = (tack_dtype)dtype;
    a->vec_width = 0;
    a->is_texture = 0;
    a->ndim = ndim;
    a->writable = writable;
    a->data = data;
    a->device = NULL; /* host memory */
    for (int d = 0; d < ndim; d++) {
        a->shape[d] = shape[d];
        a->strides[d] = strides[d];
    }
}

/* A NumPy complex64/complex128 array, without a copy: an array of
 * two-component elements (real, imaginary) of f32/f64, vec_width
 * TACK_COMPLEX_WIDTH, the components one more storage dimension. */
static int convert_complex_ndarray(const conv *c, PyArrayObject *arr, tack_arg *a)
{
    int ndim = PyArray_NDIM(arr);
    if (!PyArray_ISNOTSWAPPED(arr))
        return conv_error(c, PyExc_TypeError, "arrays of dtype %S are not supported",
                          (PyObject *)PyArray_DESCR(arr));
    if (ndim + 1 > TACK_MAX_NDIM)
        return conv_error(c, PyExc_ValueError,
                          "arrays of complex numbers have at most %d dimensions, this one has %d",
                          TACK_MAX_NDIM - 1, ndim);
    if (!PyArray_ISALIGNED(arr))
        return conv_error(c, PyExc_ValueError,
                          "the array's data is not aligned to its element size");
    Py_ssize_t shape[TACK_MAX_NDIM], strides[TACK_MAX_NDIM];
    Py_ssize_t part = PyArray_ITEMSIZE(arr) / 2;
    for (int d = 0; d < ndim; d++) {
        shape[d] = PyArray_DIMS(arr)[d];
        strides[d] = PyArray_STRIDES(arr)[d];
    }
    shape[ndim] = 2;
    strides[ndim] = part;
    fill_array(a, PyArray_TYPE(arr) == NPY_CFLOAT ? TACK_F32 : TACK_F64, ndim + 1,
               PyArray_ISWRITEABLE(arr), PyArray_DATA(arr), shape, strides);
    a->vec_width = TACK_COMPLEX_WIDTH;
    return 0;
}

static int convert_ndarray(const conv *c, PyArrayObject *arr, tack_arg *a)
{
    if (PyArray_TYPE(arr) == NPY_CFLOAT || PyArray_TYPE(arr) == NPY_CDOUBLE)
        return convert_complex_ndarray(c, arr, a);
    int t = ext_dtype_from_typenum(PyArray_TYPE(arr));
    if (t < 0 || !PyArray_ISNOTSWAPPED(arr))
        return conv_error(c, PyExc_TypeError, "arrays of dtype %S are not supported",
                          (PyObject *)PyArray_DESCR(arr));
    int ndim = PyArray_NDIM(arr);
    if (ndim > TACK_MAX_NDIM)
        return conv_error(c, PyExc_ValueError,
                          "arrays have at most %d dimensions, this one has %d",
                          TACK_MAX_NDIM, ndim);
    if (!PyArray_ISALIGNED(arr))
        return conv_error(c, PyExc_ValueError,
                          "the array's data is not aligned to its element size");
    /* npy_intp is Py_ssize_t's size on every platform NumPy supports. */
    fill_array(a, t, ndim, PyArray_ISWRITEABLE(arr), PyArray_DATA(arr),
               (const Py_ssize_t *)PyArray_DIMS(arr), (const Py_ssize_t *)PyArray_STRIDES(arr));
    return 0;
}

static int convert_tack_array(const conv *c, PyObject *o, tack_arg *a)
{
    ext_launch_state *st = c->st;
    int texture = ext_Texture_Check(o);
    ext_ArrayObject *arr =
        (ext_ArrayObject *)(texture ? ((ext_TextureObject *)o)->array : o);
    if (!st->device)
        st->device = arr->device;
    else if (st->device != arr->device)
        return conv_error(c, PyExc_TypeError,
                          "the array is on device '%s' but the earlier array arguments are on "
                          "'%s'; copy it with tack.array(x, device=...)",
                          tack_device_name(((ext_DeviceObject *)arr->device)->dev),
                          tack_device_name(((ext_DeviceObject *)st->device)->dev));
    a->kind = TACK_ARG_ARRAY;
    a->dtype = arr->dtype;            /* the component for vectors */
    a->vec_width = arr->vec_width;
    a->is_texture = texture;
    a->ndim = ext_Array_STORAGE_NDIM(arr);
    a->writable = !texture && !arr->readonly; /* textures are read-only in kernels */
    a->data = arr->data;
    a->device = ((ext_DeviceObject *)arr->device)->dev;
    memcpy(a->shape, arr->shape, sizeof a->shape);
    memcpy(a->strides, arr->strides, sizeof a->strides);
    return 0;
}

static int convert_buffer(const conv *c, PyObject *o, tack_arg *a)
{
    ext_launch_state *st = c->st;
    if (st->nviews >= TACK_MAX_PARAMS)
        return conv_error(c, PyExc_ValueError,
                          "a launch takes at most %d buffer-protocol arrays",
                          TACK_MAX_PARAMS);
    Py_buffer *view = &st->views[st->nviews];
    if (PyObject_GetBuffer(o, view, PyBUF_RECORDS_RO) < 0) {
        PyErr_Clear();
        return conv_error(c, PyExc_TypeError, "cannot take a strided buffer from %.100s",
                          Py_TYPE(o)->tp_name);
    }
    st->nviews++;
    int t = ext_dtype_from_format(view->format, view->itemsize);
    if (t < 0)
        return conv_error(c, PyExc_TypeError, "buffers of format '%s' are not supported",
                          view->format ? view->format : "B");
    if (view->ndim > TACK_MAX_NDIM)
        return conv_error(c, PyExc_ValueError,
                          "arrays have at most %d dimensions, this one has %d",
                          TACK_MAX_NDIM, view->ndim);
    if (view->suboffsets)
        return conv_error(c, PyExc_ValueError, "buffers with suboffsets are not supported");
    if (((uintptr_t)view->buf) % (uintptr_t)view->itemsize)
        return conv_error(c, PyExc_ValueError,
                          "the buffer's data is not aligned to its element size");
    fill_array(a, t, view->ndim, !view->readonly, view->buf, view->shape, view->strides);
    return 0;
}

/* Re-raises the error being raised, prefixed with the parameter. */
static int conv_reraise(const conv *c)
{
    PyObject *t, *v, *tb;
    PyErr_Fetch(&t, &v, &tb);
    PyErr_NormalizeException(&t, &v, &tb);
    if (!t)
        return -1;
    PyObject *msg = v ? PyObject_Str(v) : NULL;
    if (msg)
        conv_error(c, t, "%U", msg);
    else
        PyErr_Restore(Py_NewRef(t), Py_XNewRef(v), Py_XNewRef(tb));
    Py_XDECREF(msg);
    Py_DECREF(t);
    Py_XDECREF(v);
    Py_XDECREF(tb);
    return -1;
}

/* Keeps o (a new reference, taken) until the launch is over. */
static int hold(const conv *c, PyObject *o)
{
    ext_launch_state *st = c->st;
    if (st->nowners == (int)(sizeof st->owners / sizeof st->owners[0])) {
        Py_DECREF(o);
        return conv_error(c, PyExc_ValueError,
                          "a launch takes at most %d arrays from other libraries",
                          (int)(sizeof st->owners / sizeof st->owners[0]) / 2);
    }
    st->owners[st->nowners++] = o;
    return 0;
}

/* Another library's array.  0 converted, 1 not one, -1 error. */
static int convert_foreign(const conv *c, PyObject *o, tack_arg *a)
{
    ext_launch_state *st = c->st;
    ext_foreign f;
    int rc = ext_foreign_parse_arg(o, &f);
    if (rc <= 0)
        return rc < 0 ? conv_reraise(c) : 1;
    if (hold(c, f.owner) < 0)
        return -1;
    if (f.address % tack_dtype_size(f.dtype))
        return conv_error(c, PyExc_ValueError,
                          "the array's data is not aligned to its element size");
    a->kind = TACK_ARG_ARRAY;
    a->dtype = f.dtype;
    a->vec_width = 0;
    a->is_texture = 0;
    a->ndim = f.ndim;
    a->writable = !f.readonly;
    a->device = NULL; /* host memory */
    a->data = (void *)(uintptr_t)f.address;
    memcpy(a->shape, f.shape, sizeof a->shape);
    memcpy(a->strides, f.strides, sizeof a->strides); /* bytes, as given */
    if (ext_foreign_on_host(&f))
        return 0; /* host memory, as a NumPy array's */
    char who[160];
    PyOS_snprintf(who, sizeof who, "kernel '%s': parameter '%s'",
                  PyUnicode_AsUTF8(c->kern->name), param_name(c->kern, c->i));
    PyObject *dev = ext_foreign_device(&f, who);
    if (!dev || hold(c, dev) < 0) /* the launch state holds it */
        return -1;
    if (!st->device)
        st->device = dev;
    else if (st->device != dev)
        return conv_error(c, PyExc_TypeError,
                          "the array is on device '%s' but the earlier array arguments are on "
                          "'%s'", tack_device_name(((ext_DeviceObject *)dev)->dev),
                          tack_device_name(((ext_DeviceObject *)st->device)->dev));
    if (ext_foreign_sync(&f, dev) < 0 || !(a->data = ext_foreign_handle(&f, dev)))
        return conv_reraise(c);
    a->device = ((ext_DeviceObject *)dev)->dev;
    st->foreign_device = 1;
    return 0;
}

/* An int, float or bool (Python's or NumPy's). */
static int is_number(PyObject *o)
{
    return PyBool_Check(o) || PyFloat_Check(o) || PyLong_Check(o) ||
           PyArray_IsScalar(o, Bool) || PyArray_IsScalar(o, Integer) ||
           PyArray_IsScalar(o, Floating);
}

/* 1 converted, 0 not a number, -1 error. */
static int convert_number(const conv *c, PyObject *o, tack_arg *a)
{
    if (PyBool_Check(o)) {
        *a = tack_arg_bool(o == Py_True);
    } else if (PyFloat_Check(o)) {   /* includes np.float64 */
        *a = tack_arg_float(PyFloat_AS_DOUBLE(o));
    } else if (PyLong_Check(o)) {
        if (convert_int(c, o, a) < 0)
            return -1;
    } else if (PyArray_IsScalar(o, Bool)) {
        *a = tack_arg_bool(PyObject_IsTrue(o));
    } else if (PyArray_IsScalar(o, Integer)) {
        if (convert_int(c, o, a) < 0)
            return -1;
    } else if (PyArray_IsScalar(o, Floating)) {
        double f = PyFloat_AsDouble(o);
        if (f == -1.0 && PyErr_Occurred())
            return -1;
        *a = tack_arg_float(f);
    } else {
        return 0;
    }
    return 1;
}

/* A complex scalar: NumPy's complex64 keeps f32 parts; Python's complex
 * and complex128 (a subclass of it) are f64, as NumPy promotes them. */
static int convert_complex(const conv *c, PyObject *o, tack_arg *a)
{
    if (PyArray_IsScalar(o, ComplexFloating) && !PyComplex_Check(o)) { /* not complex128 */
        PyArray_Descr *d = PyArray_DescrFromScalar(o);
        int t = d ? d->type_num : -1;
        Py_XDECREF(d);
        if (t != NPY_CFLOAT)
            return conv_error(c, PyExc_TypeError, "complex numbers of dtype %.100s are not "
                              "supported (complex64 and complex128 are)", Py_TYPE(o)->tp_name);
        float parts[2];
        PyArray_ScalarAsCtype(o, parts);
        *a = tack_arg_complex(parts[0], parts[1], TACK_F32);
        return 0;
    }
    Py_complex z = PyComplex_AsCComplex(o);
    if (z.real == -1.0 && PyErr_Occurred())
        return -1;
    *a = tack_arg_complex(z.real, z.imag, TACK_F64);
    return 0;
}

static const tack_struct *convert_struct(conv *c, PyObject *obj);
static int convert_value(conv *c, PyObject *o, tack_arg *a, tack_field_role *role);

/* A NumPy array subclass: a field view of a structured array whose last one
 * (vector) or two (matrix) dimensions are one element's components
 * (python/tack/_structs.py marks them with _tack_component_dims); any other
 * subclass is an ordinary array. */
static int convert_ndarray_subclass(const conv *c, PyArrayObject *arr, tack_arg *a)
{
    if (convert_ndarray(c, arr, a) < 0)
        return -1;
    PyObject *dims_obj = PyObject_GetAttrString((PyObject *)Py_TYPE(arr), "_tack_component_dims");
    if (!dims_obj) {
        PyErr_Clear();
        return 0;
    }
    long dims = PyLong_AsLong(dims_obj);
    Py_DECREF(dims_obj);
    if (dims == -1 && PyErr_Occurred())
        return -1;
    int nd = a->ndim;
    int64_t isz = (int64_t)tack_dtype_size(a->dtype);
    int width = 0;
    /* The components must be adjacent, as in a tack.Array of vectors. */
    if (dims == 1 && nd >= 1 && a->strides[nd - 1] == isz) {
        width = (int)a->shape[nd - 1];
        /* a quaternion field (tack.quatf): read as quaternions */
        PyObject *quat = PyObject_GetAttrString((PyObject *)Py_TYPE(arr), "_tack_quaternion");
        if (!quat)
            PyErr_Clear();
        else if (width == 4 && PyObject_IsTrue(quat) == 1)
            width = TACK_QUAT_WIDTH;
        Py_XDECREF(quat);
    } else if (dims == 2 && nd >= 2 && a->strides[nd - 1] == isz &&
               a->strides[nd - 2] == isz * a->shape[nd - 1]) {
        width = TACK_MAT_WIDTH((int)a->shape[nd - 2], (int)a->shape[nd - 1]);
        a->shape[nd - 2] *= a->shape[nd - 1];
        a->strides[nd - 2] = isz;
        a->ndim = --nd;
    } else {
        return conv_error(c, PyExc_ValueError,
                          "a field's components are not adjacent in memory");
    }
    if (width < 2 || !tack_width_valid(width))
        return conv_error(c, PyExc_TypeError, "fields of %d components are not supported",
                          (int)tack_width_components(width > 1 ? width : 0));
    a->vec_width = width;
    return 0;
}

/* A NumPy structured array whose dtype is a @tack.struct's .numpy, without
 * a copy: the same template an array of structs is (one array per field,
 * here views of the records, strided by the record size); another layout
 * is refused (python/tack/_structs.py numpy_argument). */
static int convert_records(conv *c, PyObject *o, tack_arg *a, tack_field_role *role)
{
    static PyObject *make;
    if (!make) {
        PyObject *m = PyImport_ImportModule("tack._structs");
        make = m ? PyObject_GetAttrString(m, "numpy_argument") : NULL;
        Py_XDECREF(m);
        if (!make)
            return conv_reraise(c);
    }
    PyObject *records = PyObject_CallOneArg(make, o);
    if (!records)
        return conv_reraise(c);
    if (hold(c, records) < 0)
        return -1;
    return convert_value(c, records, a, role);
}

/* Types whose instances went through every check below to reach
 * convert_foreign (another library's arrays), by type and version tag: the
 * tag changes whenever the class or a base changes and is never reused
 * (interop.c's type_memo), so their later instances skip the checks for
 * numbers, structs, buffers and complex values, each a walk of the bases. */
#define FOREIGN_TYPES 8
static struct {
    PyTypeObject *type;
    unsigned int tag;
} foreign_types[FOREIGN_TYPES];

static size_t foreign_slot(PyTypeObject *t)
{
    return ((uintptr_t)t >> 4) % FOREIGN_TYPES;
}

static int known_foreign(PyObject *o)
{
    PyTypeObject *t = Py_TYPE(o);
    unsigned int tag = ext_type_tag(t);
    size_t slot = foreign_slot(t);
    return tag && foreign_types[slot].type == t && foreign_types[slot].tag == tag;
}

static int convert_foreign_value(conv *c, PyObject *o, tack_arg *a, tack_field_role *role)
{
    int rc = convert_foreign(c, o, a);
    if (rc <= 0)
        *role = TACK_FIELD_ARRAY;
    unsigned int tag = ext_type_tag(Py_TYPE(o));
    if (rc == 0 && tag) {
        size_t slot = foreign_slot(Py_TYPE(o));
        foreign_types[slot].type = Py_TYPE(o);
        foreign_types[slot].tag = tag;
    }
    return rc;
}

/* Arrays, numbers, templates and buffers.  0 converted (*role says what it
 * is), 1 none of those, -1 error. */
static int convert_value(conv *c, PyObject *o, tack_arg *a, tack_field_role *role)
{
    /* Our own arrays first, by exact type: PyArray_Check on them would walk
     * the type's bases before failing. */
    if (Py_IS_TYPE(o, &ext_ArrayType)) {
        *role = TACK_FIELD_ARRAY;
        return convert_tack_array(c, o, a);
    }
    if (PyFloat_CheckExact(o)) { /* the common scalar, before the type walks below */
        *a = tack_arg_float(PyFloat_AS_DOUBLE(o));
        *role = TACK_FIELD_SCALAR;
        return 0;
    }
    if (known_foreign(o))
        return convert_foreign_value(c, o, a, role);
    if (PyArray_Check(o)) {
        if (PyDataType_HASFIELDS(PyArray_DESCR((PyArrayObject *)o)))
            return convert_records(c, o, a, role);
        *role = TACK_FIELD_ARRAY;
        if (!PyArray_CheckExact(o))
            return convert_ndarray_subclass(c, (PyArrayObject *)o, a);
        return convert_ndarray(c, (PyArrayObject *)o, a);
    }
    if (ext_Array_Check(o) || ext_Texture_Check(o)) {
        *role = TACK_FIELD_ARRAY;
        return convert_tack_array(c, o, a);
    }
    int rc;
    if (Py_IS_TYPE(o, ext_torch_tensor)) { /* the most common foreign array, early */
        rc = convert_foreign(c, o, a);
        if (rc <= 0)
            *role = TACK_FIELD_ARRAY;
        return rc;
    }
    rc = convert_number(c, o, a);
    if (rc) {
        *role = TACK_FIELD_SCALAR;
        return rc < 0 ? -1 : 0;
    }
    if (ext_is_device_class(o)) {
        const tack_struct *s = convert_struct(c, o);
        if (!s)
            return -1;
        memset(a, 0, sizeof *a);
        a->kind = TACK_ARG_STRUCT;
        a->tmpl = s;
        *role = TACK_FIELD_STRUCT;
        return 0;
    }
    if (PyObject_CheckBuffer(o) && !PyArray_IsScalar(o, Generic)) {
        *role = TACK_FIELD_ARRAY;
        return convert_buffer(c, o, a);
    }
    if (PyComplex_Check(o) || PyArray_IsScalar(o, ComplexFloating)) { /* before the foreign protocols */
        *role = TACK_FIELD_SCALAR;
        return convert_complex(c, o, a);
    }
    return convert_foreign_value(c, o, a, role);
}

/* ---- template instances ---------------------------------------------- */

static int is_dunder(PyObject *name)
{
    Py_ssize_t n = PyUnicode_GET_LENGTH(name);
    return n >= 4 && PyUnicode_READ_CHAR(name, 0) == '_' &&
           PyUnicode_READ_CHAR(name, 1) == '_' &&
           PyUnicode_READ_CHAR(name, n - 1) == '_' &&
           PyUnicode_READ_CHAR(name, n - 2) == '_';
}

/* The class constants: {name: number} over the MRO, a subclass's attribute
 * (of any kind) hiding a base class's.  New reference. */
static PyObject *class_constants(PyTypeObject *cls)
{
    PyObject *d = PyDict_New();
    PyObject *mro = cls->tp_mro;
    if (!d || !mro || !PyTuple_Check(mro))
        return d;
    for (Py_ssize_t i = PyTuple_GET_SIZE(mro) - 1; i >= 0; i--) {
        PyTypeObject *t = (PyTypeObject *)PyTuple_GET_ITEM(mro, i);
        if (t == &PyBaseObject_Type || !t->tp_dict)
            continue;
        PyObject *k, *v;
        Py_ssize_t pos = 0;
        while (PyDict_Next(t->tp_dict, &pos, &k, &v)) {
            if (!PyUnicode_Check(k) || is_dunder(k))
                continue;
            int rc = 0;
            if (is_number(v)) {
                rc = PyDict_SetItem(d, k, v);
            } else {
                int has = PyDict_Contains(d, k);
                rc = has < 0 ? -1 : has ? PyDict_DelItem(d, k) : 0;
            }
            if (rc < 0) {
                Py_DECREF(d);
                return NULL;
            }
        }
    }
    return d;
}

typedef struct {
    PyObject *name, *value;  /* borrowed */
    const char *utf8;
    int constant;
} field_rec;

static int rec_cmp(const void *x, const void *y)
{
    return strcmp(((const field_rec *)x)->utf8, ((const field_rec *)y)->utf8);
}

static const tack_struct *convert_struct(conv *c, PyObject *obj)
{
    if (c->depth == MAX_NEST) {
        conv_error(c, PyExc_ValueError, "templates nest at most %d deep", MAX_NEST);
        return NULL;
    }
    for (int j = 0; j < c->depth; j++) {
        if (c->stack[j] == obj) {
            conv_error(c, PyExc_ValueError,
                       "a template cannot contain itself (this %.100s instance is "
                       "already on the attribute path)", Py_TYPE(obj)->tp_name);
            return NULL;
        }
    }
    PyTypeObject *cls = Py_TYPE(obj);
    PyObject *qual = PyType_HasFeature(cls, Py_TPFLAGS_HEAPTYPE)
        ? Py_NewRef(((PyHeapTypeObject *)cls)->ht_qualname)
        : PyUnicode_FromString(cls->tp_name);
    if (!qual)
        return NULL;
    if (c->depth == 0)
        c->cls_name = qual; /* attribute messages name the parameter's class */
    const tack_struct *result = NULL;
    field_rec *recs = NULL;
    PyObject *inst = NULL;
    PyObject *consts = NULL;
    uint64_t token = ext_class_token((PyObject *)cls);
    if (!token || !PyUnicode_AsUTF8(qual))
        goto done;
    consts = class_constants(cls);
    if (!consts)
        goto done;
    inst = PyObject_GenericGetDict(obj, NULL);
    if (!inst) {
        if (!PyErr_ExceptionMatches(PyExc_AttributeError))
            goto done;
        PyErr_Clear(); /* no __dict__: no instance attributes */
    }
    Py_ssize_t cap = PyDict_GET_SIZE(consts) + (inst ? PyDict_GET_SIZE(inst) : 0);
    recs = PyMem_Malloc((size_t)(cap ? cap : 1) * sizeof *recs);
    if (!recs) {
        PyErr_NoMemory();
        goto done;
    }
    Py_ssize_t n = 0, pos = 0;
    PyObject *k, *v;
    /* Instance attributes; one shadowing a class constant keeps the
     * constant role (with the instance's value) when it is a number. */
    while (inst && PyDict_Next(inst, &pos, &k, &v)) {
        if (!PyUnicode_Check(k))
            continue;
        int shadows = PyDict_Contains(consts, k);
        if (shadows < 0 || (shadows && PyDict_DelItem(consts, k) < 0))
            goto done;
        recs[n].name = k;
        recs[n].value = v;
        recs[n].constant = shadows && is_number(v);
        n++;
    }
    pos = 0;
    while (PyDict_Next(consts, &pos, &k, &v)) {
        recs[n].name = k;
        recs[n].value = v;
        recs[n].constant = 1;
        n++;
    }
    for (Py_ssize_t j = 0; j < n; j++)
        if (!(recs[j].utf8 = PyUnicode_AsUTF8(recs[j].name)))
            goto done;
    qsort(recs, (size_t)n, sizeof *recs, rec_cmp);

    /* The block is on the launch's list at once: release frees it. */
    size_t nrefs_cap = 2 * (size_t)n + 1;
    ext_tmpl_block *b = PyMem_Calloc(1, sizeof *b + (size_t)n * sizeof(tack_field) +
                                        nrefs_cap * sizeof(PyObject *));
    if (!b) {
        PyErr_NoMemory();
        goto done;
    }
    b->next = c->st->blocks;
    c->st->blocks = b;
    b->refs = (PyObject **)(void *)((char *)b->fields + (size_t)n * sizeof(tack_field));
    b->refs[b->nrefs++] = Py_NewRef(qual);
    b->methods.cls = (PyObject *)cls;
    b->methods.home = &c->st->home;
    b->s.class_token = token;
    b->s.class_name = PyUnicode_AsUTF8(qual);
    b->s.method_ctx = &b->methods;
    b->s.nfields = (int)n;
    b->s.fields = b->fields;

    c->stack[c->depth++] = obj;
    size_t plen = strlen(c->path);
    for (Py_ssize_t j = 0; j < n; j++) {
        tack_field *f = &b->fields[j];
        b->refs[b->nrefs++] = Py_NewRef(recs[j].name);
        b->refs[b->nrefs++] = Py_NewRef(recs[j].value);
        f->name = recs[j].utf8;
        snprintf(c->path + plen, sizeof c->path - plen, "%s%s", plen ? "." : "",
                 recs[j].utf8);
        int rc;
        if (recs[j].constant) {
            f->role = TACK_FIELD_CONSTANT;
            rc = convert_number(c, recs[j].value, &f->value) < 0 ? -1 : 0;
        } else {
            rc = convert_value(c, recs[j].value, &f->value, &f->role);
            if (rc == 1) {
                PyErr_Format(PyExc_TypeError,
                             "kernel '%U': parameter '%s': attribute '%s' of %U has "
                             "unsupported type %.100s",
                             c->kern->name, param_name(c->kern, c->i), c->path,
                             c->cls_name, Py_TYPE(recs[j].value)->tp_name);
                rc = -1;
            }
            if (rc == 0 && f->role == TACK_FIELD_STRUCT)
                f->nested = f->value.tmpl;
        }
        c->path[plen] = '\0';
        if (rc < 0) {
            c->depth--;
            goto done;
        }
    }
    c->depth--;
    result = &b->s;
done:
    PyMem_Free(recs);
    Py_XDECREF(inst);
    Py_XDECREF(consts);
    Py_DECREF(qual);
    return result;
}

/* ---- launches ---------------------------------------------------------- */

void ext_launch_init(ext_launch_state *st, ext_KernelObject *kern)
{
    st->nviews = 0;
    st->device = NULL;
    st->blocks = NULL;
    st->home.ctxs = NULL;
    st->home.keep = NULL;
    st->home.kern = kern;
    st->nowners = 0;
    st->foreign_device = 0;
}

/* A @tack.struct record passed by value (a NumPy void scalar): a
 * one-element array of records on `device` that kernels read as one record
 * (python/tack/_structs.py value_argument). */
static int convert_record_value(conv *c, PyObject *o, const char *device, tack_arg *a)
{
    static PyObject *make_value;
    if (!make_value) {
        PyObject *m = PyImport_ImportModule("tack._structs");
        make_value = m ? PyObject_GetAttrString(m, "value_argument") : NULL;
        Py_XDECREF(m);
        if (!make_value)
            return conv_reraise(c);
    }
    PyObject *records = PyObject_CallFunction(make_value, "Os", o, device);
    if (!records)
        return conv_reraise(c);
    if (hold(c, records) < 0)
        return -1;
    tack_field_role role;
    return convert_value(c, records, a, &role);
}

int ext_convert_args(ext_KernelObject *kern, PyObject *const *objs, Py_ssize_t nargs,
                     tack_arg *args, ext_launch_state *st)
{
    conv c;
    c.kern = kern;
    c.st = st;
    c.cls_name = NULL;
    c.depth = 0;
    c.path[0] = '\0';
    int records = 0;
    for (int i = 0; i < (int)nargs; i++) {
        PyObject *o = objs[i];
        tack_arg *a = &args[i];
        tack_field_role role;
        c.i = i;
        /* A record (NumPy void scalar): once the device is known, below.
         * The common exact types are not, without walking their bases. */
        if (!Py_IS_TYPE(o, &PyArray_Type) && !PyFloat_CheckExact(o) && !PyLong_CheckExact(o) &&
            !Py_IS_TYPE(o, &ext_ArrayType) && !known_foreign(o) && PyArray_IsScalar(o, Void)) {
            records = 1;
            continue;
        }
        int rc = convert_value(&c, o, a, &role);
        if (rc == 1)
            rc = conv_error(&c, PyExc_TypeError,
                            "expected an array, int, float, bool or @tack.device_class "
                            "instance, got %.100s", Py_TYPE(o)->tp_name);
        if (rc < 0) {
            ext_release_args(st);
            return -1;
        }
    }
    if (records) { /* on the device of the array arguments, the host's without any */
        const char *device = "cpu";
        for (int i = 0; i < (int)nargs; i++)
            if (!PyArray_IsScalar(objs[i], Void) && args[i].kind == TACK_ARG_ARRAY &&
                args[i].device) {
                device = tack_device_name(args[i].device);
                break;
            }
        for (int i = 0; i < (int)nargs; i++) {
            c.i = i;
            if (PyArray_IsScalar(objs[i], Void) &&
                convert_record_value(&c, objs[i], device, &args[i]) < 0) {
                ext_release_args(st);
                return -1;
            }
        }
    }
    return 0;
}

void ext_release_args(ext_launch_state *st)
{
    for (int i = 0; i < st->nviews; i++)
        PyBuffer_Release(&st->views[i]);
    st->nviews = 0;
    ext_tmpl_block *b = st->blocks;
    st->blocks = NULL;
    while (b) {
        ext_tmpl_block *next = b->next;
        for (Py_ssize_t i = 0; i < b->nrefs; i++)
            Py_DECREF(b->refs[i]);
        PyMem_Free(b);
        b = next;
    }
    ext_ctx_free_all(&st->home);
    for (int i = 0; i < st->nowners; i++)
        Py_DECREF(st->owners[i]); /* DLPack tensors' deleters run here */
    st->nowners = 0;
}
