/*
 * interop.c - arrays shared with other libraries, without copies.
 *
 * Out: a tack.Array speaks DLPack (__dlpack__, __dlpack_device__), NumPy's
 * __array_interface__ (host memory) and __cuda_array_interface__ (CUDA
 * memory).  An exported DLPack tensor holds a reference to the array until
 * the consumer calls its deleter; a capsule nobody consumed frees itself.
 *
 * In: tack.asarray, tack.from_dlpack, tack.array and kernel arguments
 * (args.c) read the same protocols from other libraries' objects into an
 * ext_foreign (one description whichever protocol said it), then either
 * wrap it in a tack.Array that keeps the producer's memory alive (base) or
 * hand it to one launch.  CUDA memory becomes a device array through
 * tack_device_wrap_mem; Tack never frees what it did not allocate.
 */
#define NO_IMPORT_ARRAY
#include "ext.h"

#include "dlpack.h"

#include <stdio.h>

#define OWNER_LEGACY "tack.dlpack_owner"
#define OWNER_VERSIONED "tack.dlpack_owner_versioned"

/* Host data of an empty array whose producer gave no pointer: kernels and
 * views want a valid one, and nothing is ever read through it. */
static _Alignas(64) char empty_storage[64];

/* ---- dtypes in the protocols' terms ---------------------------------- */

/* 'b' bool, 'i' signed, 'u' unsigned, 'f' float; 0 for none of those. */
static char dtype_kind(tack_dtype t)
{
    switch (t) {
    case TACK_BOOL: return 'b';
    case TACK_I8: case TACK_I16: case TACK_I32: case TACK_I64: return 'i';
    case TACK_U8: case TACK_U16: case TACK_U32: case TACK_U64: return 'u';
    case TACK_F16: case TACK_F32: case TACK_F64: return 'f';
    default: return 0;
    }
}

/* The dtype of kind and size in bytes, or -1. */
static int dtype_of_kind(char kind, size_t size)
{
    for (int t = 0; t < TACK_DTYPE_COUNT; t++)
        if (dtype_kind((tack_dtype)t) == kind && tack_dtype_size((tack_dtype)t) == size)
            return t;
    return -1;
}

static int host_little_endian(void)
{
    const uint16_t one = 1;
    return *(const uint8_t *)&one == 1;
}

/* NumPy's typestr ("<f4", "|b1"); buf holds at least 8 bytes. */
static void typestr_of(tack_dtype t, char *buf)
{
    size_t size = tack_dtype_size(t);
    snprintf(buf, 8, "%c%c%zu", size == 1 ? '|' : host_little_endian() ? '<' : '>',
             dtype_kind(t), size);
}

/* typestr -> dtype; -1 with TypeError naming `what` (the protocol). */
static int dtype_from_typestr(PyObject *typestr, const char *what)
{
    const char *s = PyUnicode_Check(typestr) ? PyUnicode_AsUTF8(typestr) : NULL;
    if (!s) {
        if (!PyErr_Occurred())
            PyErr_Format(PyExc_TypeError, "%s: typestr must be a str, not %.100s", what,
                         Py_TYPE(typestr)->tp_name);
        return -1;
    }
    char order = s[0];
    char *end = NULL;
    long size = order ? strtol(s + 2, &end, 10) : 0;
    int t = -1;
    if (order && s[1] && end && end != s + 2 && !*end && size > 0)
        t = dtype_of_kind(s[1], (size_t)size);
    if (t < 0 || !strchr("<>|=", order)) {
        PyErr_Format(PyExc_TypeError,
                     "%s: dtype '%s' is not supported (Tack has bool, int8-64, uint8-64, "
                     "float16-64)", what, s);
        return -1;
    }
    int swapped = size > 1 && ((order == '<' && !host_little_endian()) ||
                               (order == '>' && host_little_endian()));
    if (swapped) {
        PyErr_Format(PyExc_TypeError,
                     "%s: dtype '%s' is in the other byte order than this machine's", what, s);
        return -1;
    }
    return t;
}

/* DLPack's type -> dtype; -1 with TypeError. */
static int dtype_from_dl(DLDataType d)
{
    static const char kinds[] = {[kDLInt] = 'i', [kDLUInt] = 'u', [kDLFloat] = 'f',
                                 [kDLBool] = 'b'};
    int t = -1;
    if (d.lanes == 1 && d.code < sizeof kinds && kinds[d.code] && d.bits % 8 == 0)
        t = dtype_of_kind(kinds[d.code], d.bits / 8);
    /* Some producers call bools 8-bit unsigned ints: those read as u8. */
    if (t < 0) {
        /* Named as the producer's library would (bfloat16, complex64). */
        static const char *const names[] = {[kDLInt] = "int", [kDLUInt] = "uint",
                                            [kDLFloat] = "float", [kDLBfloat] = "bfloat",
                                            [kDLComplex] = "complex", [kDLBool] = "bool"};
        char name[64];
        if (d.code == kDLOpaqueHandle)
            snprintf(name, sizeof name, "opaque handle");
        else if (d.code < sizeof names / sizeof names[0] && names[d.code])
            snprintf(name, sizeof name, "%s%d", names[d.code], d.bits);
        else
            snprintf(name, sizeof name, "type code %d, %d bits", d.code, d.bits);
        if (d.lanes != 1)
            snprintf(name + strlen(name), sizeof name - strlen(name), " x %d lanes", d.lanes);
        PyErr_Format(PyExc_TypeError,
                     "DLPack dtype %s is not supported (Tack has bool, int8-64, uint8-64, "
                     "float16-64)", name);
    }
    return t;
}

static DLDataType dl_from_dtype(tack_dtype t)
{
    DLDataType d;
    char k = dtype_kind(t);
    d.code = k == 'b' ? kDLBool : k == 'i' ? kDLInt : k == 'u' ? kDLUInt : kDLFloat;
    d.bits = (uint8_t)(8 * tack_dtype_size(t));
    d.lanes = 1;
    return d;
}

static const char *dl_device_name(int type)
{
    switch (type) {
    case kDLCPU: return "CPU";
    case kDLCUDA: return "CUDA";
    case kDLCUDAHost: return "CUDA host";
    case kDLOpenCL: return "OpenCL";
    case kDLVulkan: return "Vulkan";
    case kDLMetal: return "Metal";
    case kDLROCM: return "ROCm";
    case kDLROCMHost: return "ROCm host";
    case kDLCUDAManaged: return "CUDA managed";
    case kDLOneAPI: return "oneAPI";
    case kDLWebGPU: return "WebGPU";
    case kDLHexagon: return "Hexagon";
    default: return "unknown";
    }
}

/* Memory the CPU reads directly (pinned and managed memory included). */
static int dl_host_device(int type)
{
    return type == kDLCPU || type == kDLCUDAHost || type == kDLCUDAManaged ||
           type == kDLROCMHost;
}

/* ---- reading foreign arrays ------------------------------------------ */

/* The names the protocols use, made once: kernel arguments ask for them
 * on every call. */
enum {
    N_DLPACK, N_DLPACK_DEVICE, N_CUDA_INTERFACE, N_ARRAY_INTERFACE, N_SHAPE, N_TYPESTR,
    N_DATA, N_STRIDES, N_MASK, N_STREAM, N_MAX_VERSION,
    /* a torch.Tensor's accessors (kernel arguments) */
    N_REQUIRES_GRAD, N_IS_CPU, N_LAYOUT, N_DTYPE, N_IS_NEG, N_DATA_PTR, N_STRIDE, N_COUNT
};
static const char *const name_text[N_COUNT] = {
    "__dlpack__", "__dlpack_device__", "__cuda_array_interface__", "__array_interface__",
    "shape", "typestr", "data", "strides", "mask", "stream", "max_version",
    "requires_grad", "is_cpu", "layout", "dtype", "is_neg", "data_ptr", "stride"};
static PyObject *names[N_COUNT];

static PyObject *name(int i)
{
    if (!names[i])
        names[i] = PyUnicode_InternFromString(name_text[i]);
    return names[i];
}

/* obj.<name i>, or NULL without an exception when obj has none; a miss
 * makes no AttributeError (kernel arguments ask every protocol). */
static PyObject *optional_attr(PyObject *obj, int i)
{
    PyObject *key = name(i);
    if (!key)
        return NULL;
    PyObject *v = NULL;
#if PY_VERSION_HEX >= 0x030D0000
    (void)PyObject_GetOptionalAttr(obj, key, &v);
#else
    (void)_PyObject_LookupAttr(obj, key, &v);
#endif
    return v;
}

/* d[name i] (borrowed), NULL when absent; -1 in *failed on an error. */
static PyObject *item(PyObject *d, int i, int *failed)
{
    PyObject *key = name(i);
    PyObject *v = key ? PyDict_GetItemWithError(d, key) : NULL;
    if (!v && PyErr_Occurred())
        *failed = 1;
    return v;
}

static PyObject *shape_tuple(int n, const int64_t *v);

static int64_t element_size(const ext_foreign *f)
{
    return (int64_t)tack_dtype_size(f->dtype);
}

/* Unsigned, so a shape too big for them wraps without undefined behaviour:
 * check_foreign refuses that shape before any stride is used. */
static void c_order_strides(ext_foreign *f)
{
    uint64_t stride = (uint64_t)element_size(f);
    for (int i = f->ndim - 1; i >= 0; i--) {
        f->strides[i] = (int64_t)stride;
        stride *= (uint64_t)f->shape[i];
    }
}

static int64_t foreign_size(const ext_foreign *f)
{
    int64_t n = 1;
    for (int i = 0; i < f->ndim; i++)
        n *= f->shape[i];
    return n;
}

int ext_foreign_contiguous(const ext_foreign *f)
{
    if (!f->strides_given || foreign_size(f) == 0)
        return 1;
    int64_t expect = element_size(f);
    for (int i = f->ndim - 1; i >= 0; i--) {
        if (f->shape[i] != 1 && f->strides[i] != expect)
            return 0;
        expect *= f->shape[i];
    }
    return 1;
}

/* The bytes the elements reach, [*lo, *hi) from the first element's
 * address; 0 for an empty array.  -1 when a stride times its dimension
 * (or their sum) does not fit in 64 bits: such strides would wrap. */
static int extent(int ndim, const int64_t *shape, const int64_t *strides, int64_t itemsize,
                  int64_t *lo, int64_t *hi)
{
    int64_t l = 0, h = itemsize;
    for (int i = 0; i < ndim; i++)
        if (shape[i] == 0) {
            *lo = *hi = 0;
            return 0;
        }
    for (int i = 0; i < ndim; i++) {
        int64_t span;
        if (__builtin_mul_overflow(shape[i] - 1, strides[i], &span) ||
            (span < 0 ? __builtin_add_overflow(l, span, &l) : __builtin_add_overflow(h, span, &h)))
            return -1;
    }
    *lo = l;
    *hi = h;
    return 0;
}

static int foreign_extent(const ext_foreign *f, int64_t *lo, int64_t *hi)
{
    return extent(f->ndim, f->shape, f->strides, element_size(f), lo, hi);
}

/* ValueError "<what>: <why> (shape S, strides T bytes)". */
static int layout_error(const ext_foreign *f, const char *what, const char *why)
{
    PyObject *shape = shape_tuple(f->ndim, f->shape);
    PyObject *strides = shape ? shape_tuple(f->ndim, f->strides) : NULL;
    if (strides)
        PyErr_Format(PyExc_ValueError, "%s: %s (shape %S, strides %S bytes)", what, why, shape,
                     strides);
    Py_XDECREF(shape);
    Py_XDECREF(strides);
    return -1;
}

/* Checks what every protocol shares; -1 with an exception. */
static int check_foreign(ext_foreign *f, const char *what)
{
    int64_t n = 1;
    for (int i = 0; i < f->ndim; i++) {
        if (f->shape[i] < 0) {
            PyErr_Format(PyExc_ValueError, "%s: negative dimension %lld in the shape", what,
                         (long long)f->shape[i]);
            return -1;
        }
        if (f->shape[i] && n > (INT64_MAX / 16) / f->shape[i]) {
            PyErr_Format(PyExc_ValueError, "%s: the array is too big", what);
            return -1;
        }
        n *= f->shape[i];
    }
    if (!f->address && n) {
        PyErr_Format(PyExc_ValueError, "%s: the data pointer is NULL", what);
        return -1;
    }
    /* Kernels and the launch check add index * stride to the address:
     * strides whose reach wraps would land anywhere. */
    int64_t lo, hi;
    if (foreign_extent(f, &lo, &hi) < 0 ||
        (lo < 0 && 0 - (uint64_t)lo > f->address) || (uint64_t)hi > UINT64_MAX - f->address)
        return layout_error(f, what, "the strides reach beyond the address space");
    if (!f->address && dl_host_device(f->device_type))
        f->address = (uint64_t)(uintptr_t)empty_storage;
    return 0;
}

static void owner_release(PyObject *cap)
{
    /* A deleter may run Python code: keep whatever error is being raised. */
    PyObject *t, *v, *tb;
    PyErr_Fetch(&t, &v, &tb);
    const char *name = PyCapsule_GetName(cap);
    void *p = name ? PyCapsule_GetPointer(cap, name) : NULL;
    if (p && !strcmp(name, OWNER_VERSIONED)) {
        DLManagedTensorVersioned *m = p;
        if (m->deleter)
            m->deleter(m);
    } else if (p) {
        DLManagedTensor *m = p;
        if (m->deleter)
            m->deleter(m);
    }
    PyErr_Clear();
    PyErr_Restore(t, v, tb);
}

static int describe_dltensor(const DLTensor *t, int readonly, ext_foreign *f)
{
    const char *what = "DLPack tensor";
    if (t->ndim < 0 || t->ndim > TACK_MAX_NDIM) {
        PyErr_Format(PyExc_ValueError, "%s: %d dimensions; Tack's arrays have at most %d",
                     what, (int)t->ndim, TACK_MAX_NDIM);
        return -1;
    }
    if (t->ndim && !t->shape) {
        PyErr_Format(PyExc_ValueError, "%s: no shape", what);
        return -1;
    }
    int dt = dtype_from_dl(t->dtype);
    if (dt < 0)
        return -1;
    f->dtype = (tack_dtype)dt;
    f->device_type = t->device.device_type;
    f->device_id = t->device.device_id;
    f->address = (uint64_t)(uintptr_t)t->data + t->byte_offset;
    f->ndim = t->ndim;
    f->readonly = readonly;
    f->strides_given = t->strides != NULL;
    for (int i = 0; i < t->ndim; i++)
        f->shape[i] = t->shape[i];
    if (t->strides) {
        for (int i = 0; i < t->ndim; i++) {
            /* elements -> bytes; a product that wraps is refused, not used */
            if (__builtin_mul_overflow(t->strides[i], element_size(f), &f->strides[i])) {
                PyErr_Format(PyExc_ValueError,
                             "%s: stride %lld (elements) of dimension %d does not fit in 64 "
                             "bits as bytes", what, (long long)t->strides[i], i);
                return -1;
            }
        }
    } else {
        c_order_strides(f);
    }
    if ((uint64_t)(uintptr_t)t->data > UINT64_MAX - t->byte_offset) {
        PyErr_Format(PyExc_ValueError, "%s: byte_offset %llu wraps the data pointer", what,
                     (unsigned long long)t->byte_offset);
        return -1;
    }
    return check_foreign(f, what);
}

/* Takes the tensor out of a DLPack capsule: renames it used, and makes
 * f->owner a capsule of ours whose release calls the producer's deleter. */
static int parse_capsule(PyObject *cap, ext_foreign *f)
{
    const char *name = PyCapsule_GetName(cap);
    if (!name && PyErr_Occurred())
        return -1;
    int versioned = name && !strcmp(name, "dltensor_versioned");
    if (!versioned && !(name && !strcmp(name, "dltensor"))) {
        if (name && !strncmp(name, "used_dltensor", 13))
            PyErr_SetString(PyExc_ValueError,
                            "this DLPack capsule was already consumed (a capsule gives its "
                            "tensor once; ask the producer's __dlpack__() for another)");
        else
            PyErr_Format(PyExc_TypeError, "a PyCapsule named '%s' is not a DLPack tensor",
                         name ? name : "(NULL)");
        return -1;
    }
    void *p = PyCapsule_GetPointer(cap, name);
    if (!p)
        return -1;
    const DLTensor *t;
    int readonly = 0;
    if (versioned) {
        DLManagedTensorVersioned *m = p;
        if (m->version.major > DLPACK_MAJOR_VERSION) {
            /* Not taken: the capsule still frees it. */
            PyErr_Format(PyExc_BufferError,
                         "the DLPack tensor is of version %u.%u; Tack reads version %d",
                         m->version.major, m->version.minor, DLPACK_MAJOR_VERSION);
            return -1;
        }
        readonly = (m->flags & DLPACK_FLAG_BITMASK_READ_ONLY) != 0;
        t = &m->dl_tensor;
    } else {
        t = &((DLManagedTensor *)p)->dl_tensor;
    }
    PyObject *owner = PyCapsule_New(p, versioned ? OWNER_VERSIONED : OWNER_LEGACY,
                                    owner_release);
    if (!owner)
        return -1;
    if (PyCapsule_SetName(cap, versioned ? "used_dltensor_versioned" : "used_dltensor") < 0) {
        PyCapsule_SetDestructor(owner, NULL); /* the producer's capsule keeps it */
        Py_DECREF(owner);
        return -1;
    }
    f->protocol = versioned ? EXT_FOREIGN_DLPACK_VERSIONED : EXT_FOREIGN_DLPACK;
    f->owner = owner;
    if (describe_dltensor(t, readonly, f) < 0) {
        Py_CLEAR(f->owner); /* the deleter runs */
        return -1;
    }
    return 1;
}

/* obj.__dlpack_device__() into *type and *id; -1 with an exception. */
static int dlpack_device(PyObject *obj, int *type, int *id)
{
    PyObject *devfn = optional_attr(obj, N_DLPACK_DEVICE);
    if (!devfn) {
        if (!PyErr_Occurred())
            PyErr_Format(PyExc_TypeError, "%.100s has __dlpack__ but no __dlpack_device__",
                         Py_TYPE(obj)->tp_name);
        return -1;
    }
    PyObject *dev = PyObject_CallNoArgs(devfn);
    Py_DECREF(devfn);
    if (!dev)
        return -1;
    int ok = PyTuple_Check(dev) && PyArg_ParseTuple(dev, "ii", type, id);
    Py_DECREF(dev);
    if (!ok) {
        if (!PyErr_Occurred())
            PyErr_Format(PyExc_TypeError,
                         "%.100s.__dlpack_device__() must return (device type, index)",
                         Py_TYPE(obj)->tp_name);
        return -1;
    }
    return 0;
}

/* method(stream=1 when `stream`, max_version=(1, 0) when `versioned`),
 * keywords passed by vectorcall (no dict per call). */
/* The arguments __dlpack__ is called with, made once: 0, or -1 with an
 * exception set. */
static PyObject *one, *version, *kw_s, *kw_v, *kw_sv;

static int dlpack_arguments(void)
{
    if (!kw_sv) {
        one = PyLong_FromLong(1);
        version = Py_BuildValue("(ii)", DLPACK_MAJOR_VERSION, DLPACK_MINOR_VERSION);
        kw_s = PyTuple_Pack(1, name(N_STREAM));
        kw_v = PyTuple_Pack(1, name(N_MAX_VERSION));
        kw_sv = kw_s && kw_v ? PyTuple_Pack(2, name(N_STREAM), name(N_MAX_VERSION)) : NULL;
        if (!one || !version || !kw_sv)
            return -1;
    }
    return 0;
}

static PyObject *dlpack_call(PyObject *method, int stream, int versioned)
{
    if (dlpack_arguments() < 0)
        return NULL;
    PyObject *argv[2];
    size_t n = 0;
    if (stream)
        argv[n++] = one;
    if (versioned)
        argv[n++] = version;
    PyObject *kwnames = stream ? (versioned ? kw_sv : kw_s) : versioned ? kw_v : NULL;
    return PyObject_Vectorcall(method, argv, 0, kwnames);
}

/* obj.__dlpack__(max_version=...) of a producer known to be on the host
 * and to take max_version (the producer memo): called by name, without
 * making a bound method.  NULL with the error cleared where the ordinary
 * route must decide (no such method, or a TypeError: not versioned now);
 * NULL with another error set. */
static PyObject *dlpack_known_call(PyObject *obj)
{
    if (dlpack_arguments() < 0)
        return NULL;
    PyObject *argv[2] = {obj, version};
    PyObject *cap = PyObject_VectorcallMethod(name(N_DLPACK), argv, 1, kw_v);
    if (!cap && (PyErr_ExceptionMatches(PyExc_AttributeError) ||
                 PyErr_ExceptionMatches(PyExc_TypeError)))
        PyErr_Clear();
    return cap;
}

/* obj.__dlpack__() as the array API asks a consumer to call it: with
 * max_version, falling back for producers older than DLPack 1.0, and on a
 * CUDA device the legacy default stream (Tack's launches run there and
 * return finished).  `known_host`: the caller knows obj's memory is on the
 * host (it checks the capsule), so __dlpack_device__ is not asked;
 * `*legacy` in: skip the max_version try, out: the producer refused it. */
static PyObject *call_dlpack(PyObject *method, PyObject *obj, int known_host, int *legacy)
{
    int type = kDLCPU, id = 0;
    if (!known_host && dlpack_device(obj, &type, &id) < 0)
        return NULL;
    int stream = type == kDLCUDA || type == kDLROCM;
    PyObject *cap = *legacy ? NULL : dlpack_call(method, stream, 1);
    if (!cap && (*legacy || PyErr_ExceptionMatches(PyExc_TypeError))) {
        /* A producer that predates max_version. */
        PyErr_Clear();
        *legacy = 1;
        cap = dlpack_call(method, stream, 0);
    }
    return cap;
}

/* A sequence of ints into out[]; -1 with an exception naming the key. */
static int read_ints(PyObject *seq, const char *what, const char *key, int64_t *out, int max)
{
    PyObject *fast = PySequence_Fast(seq, "");
    if (!fast) {
        PyErr_Format(PyExc_TypeError, "%s: '%s' must be a tuple of ints", what, key);
        return -1;
    }
    Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
    if (n > max) {
        PyErr_Format(PyExc_ValueError, "%s: %zd dimensions; Tack's arrays have at most %d",
                     what, n, max);
        Py_DECREF(fast);
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        long long v = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(fast, i));
        if (v == -1 && PyErr_Occurred()) {
            PyErr_Clear();
            PyErr_Format(PyExc_TypeError, "%s: '%s' must be a tuple of ints", what, key);
            Py_DECREF(fast);
            return -1;
        }
        out[i] = v;
    }
    Py_DECREF(fast);
    return (int)n;
}

static int describe_ndarray(PyArrayObject *arr, ext_foreign *f);

/* Whether the elements of arr (NumPy's reading of an interface, any dtype)
 * lie inside the buffer src exports; -1 with a ValueError when they reach
 * past either end of it. */
static int within_buffer(PyArrayObject *arr, PyObject *src, const char *what)
{
    Py_buffer view;
    if (PyObject_GetBuffer(src, &view, PyBUF_SIMPLE) < 0)
        return -1;
    uint64_t start = (uint64_t)(uintptr_t)view.buf, len = (uint64_t)view.len;
    PyBuffer_Release(&view); /* NumPy's array holds the object, as it does */
    ext_foreign f; /* shape and strides only, for the messages */
    memset(&f, 0, sizeof f);
    f.ndim = PyArray_NDIM(arr) < TACK_MAX_NDIM ? PyArray_NDIM(arr) : TACK_MAX_NDIM;
    for (int i = 0; i < f.ndim; i++) {
        f.shape[i] = PyArray_DIM(arr, i);
        f.strides[i] = PyArray_STRIDE(arr, i);
    }
    int64_t lo, hi;
    if (PyArray_NDIM(arr) > TACK_MAX_NDIM)
        return 0; /* refused as too deep before anything reads it */
    if (extent(f.ndim, f.shape, f.strides, PyArray_ITEMSIZE(arr), &lo, &hi) < 0)
        return layout_error(&f, what, "the strides reach beyond the address space");
    if (hi == lo)
        return 0; /* no elements */
    /* Offsets from the buffer's start (both are host addresses). */
    int64_t off = (int64_t)((uint64_t)(uintptr_t)PyArray_DATA(arr) - start), first, end;
    int wraps = __builtin_add_overflow(off, lo, &first) | __builtin_add_overflow(off, hi, &end);
    if (!wraps && first >= 0 && (uint64_t)end <= len)
        return 0;
    char why[160];
    snprintf(why, sizeof why,
             "the elements reach bytes %lld to %lld of the 'data' buffer, which holds %llu "
             "bytes", (long long)first, (long long)end, (unsigned long long)len);
    return layout_error(&f, what, why);
}

/* __array_interface__ (cuda 0) or __cuda_array_interface__ (cuda 1). */
static int parse_interface(PyObject *obj, PyObject *d, int cuda, ext_foreign *f)
{
    const char *what = cuda ? "__cuda_array_interface__" : "__array_interface__";
    if (!PyDict_Check(d)) {
        PyErr_Format(PyExc_TypeError, "%s of %.100s is not a dict", what, Py_TYPE(obj)->tp_name);
        return -1;
    }
    int failed = 0;
    PyObject *data = item(d, N_DATA, &failed);
    if (failed)
        return -1;
    if (!cuda && (!data || !PyTuple_Check(data))) {
        /* Data in a buffer object (or the object's own buffer): NumPy
         * reads that form, as a view. */
        PyObject *arr = PyArray_FromInterface(obj);
        if (!arr)
            return -1;
        if (arr == Py_NotImplemented || !PyArray_Check(arr)) {
            Py_DECREF(arr);
            PyErr_Format(PyExc_TypeError, "%s of %.100s could not be read", what,
                         Py_TYPE(obj)->tp_name);
            return -1;
        }
        /* NumPy takes the shape and strides as given, whatever the buffer
         * holds: what they reach must lie inside it (checked before the
         * dtype, which tack.array may still convert through NumPy). */
        PyObject *src = data && data != Py_None ? data : obj;
        int rc = within_buffer((PyArrayObject *)arr, src, what);
        if (rc == 0)
            rc = describe_ndarray((PyArrayObject *)arr, f);
        Py_DECREF(arr); /* f->owner holds it */
        return rc < 0 ? -1 : 1;
    }
    PyObject *mask = item(d, N_MASK, &failed);
    if (failed)
        return -1;
    if (mask && mask != Py_None) {
        PyErr_Format(PyExc_ValueError, "%s: masked arrays are not supported", what);
        return -1;
    }
    PyObject *shape = item(d, N_SHAPE, &failed);
    PyObject *typestr = item(d, N_TYPESTR, &failed);
    PyObject *strides = item(d, N_STRIDES, &failed);
    PyObject *stream = item(d, N_STREAM, &failed);
    if (failed)
        return -1;
    if (!shape || !typestr || !data) {
        PyErr_Format(PyExc_ValueError, "%s: 'shape', 'typestr' and 'data' are required", what);
        return -1;
    }
    int dt = dtype_from_typestr(typestr, what);
    if (dt < 0)
        return -1;
    f->dtype = (tack_dtype)dt;
    if ((f->ndim = read_ints(shape, what, "shape", f->shape, TACK_MAX_NDIM)) < 0)
        return -1;
    PyObject *ptr = PyTuple_Check(data) && PyTuple_GET_SIZE(data) == 2
        ? PyTuple_GET_ITEM(data, 0) : NULL;
    int readonly = ptr ? PyObject_IsTrue(PyTuple_GET_ITEM(data, 1)) : -1;
    unsigned long long address = ptr && PyLong_Check(ptr) ? PyLong_AsUnsignedLongLong(ptr)
                                                           : (unsigned long long)-1;
    if (readonly < 0 || (address == (unsigned long long)-1 && (!ptr || PyErr_Occurred()))) {
        PyErr_Clear();
        PyErr_Format(PyExc_TypeError, "%s: 'data' must be a tuple (pointer, read-only flag)",
                     what);
        return -1;
    }
    f->address = address;
    f->readonly = readonly;
    f->strides_given = strides && strides != Py_None;
    if (f->strides_given) {
        int n = read_ints(strides, what, "strides", f->strides, TACK_MAX_NDIM);
        if (n < 0)
            return -1;
        if (n != f->ndim) {
            PyErr_Format(PyExc_ValueError, "%s: %d strides for %d dimensions", what, n, f->ndim);
            return -1;
        }
    } else {
        c_order_strides(f);
    }
    if (cuda) {
        /* The interface does not say which device; -1: the default one. */
        f->device_type = kDLCUDA;
        f->device_id = -1;
        if (stream && stream != Py_None) {
            long long s = PyLong_Check(stream) ? PyLong_AsLongLong(stream) : -1;
            if (s == -1 && PyErr_Occurred())
                return -1;
            if (s <= 0) {
                PyErr_Format(PyExc_ValueError,
                             "%s: stream %S is not valid (version 3 of the interface takes "
                             "None, 1, 2 or a stream handle)", what, stream);
                return -1;
            }
            f->has_stream = 1;
            f->stream = s;
        }
    } else {
        f->device_type = kDLCPU;
        f->device_id = 0;
    }
    f->protocol = cuda ? EXT_FOREIGN_CUDA_INTERFACE : EXT_FOREIGN_ARRAY_INTERFACE;
    if (check_foreign(f, what) < 0)
        return -1;
    f->owner = Py_NewRef(obj); /* the producer keeps its memory */
    return 1;
}

static int describe_ndarray(PyArrayObject *arr, ext_foreign *f)
{
    int t = ext_dtype_from_typenum(PyArray_TYPE(arr));
    if (t < 0 || !PyArray_ISNOTSWAPPED(arr)) {
        PyErr_Format(PyExc_TypeError, "arrays of dtype %S are not supported",
                     (PyObject *)PyArray_DESCR(arr));
        return -1;
    }
    if (PyArray_NDIM(arr) > TACK_MAX_NDIM) {
        PyErr_Format(PyExc_ValueError, "arrays have at most %d dimensions, this one has %d",
                     TACK_MAX_NDIM, PyArray_NDIM(arr));
        return -1;
    }
    f->protocol = EXT_FOREIGN_ARRAY_INTERFACE;
    f->device_type = kDLCPU;
    f->device_id = 0;
    f->dtype = (tack_dtype)t;
    f->ndim = PyArray_NDIM(arr);
    f->address = (uint64_t)(uintptr_t)PyArray_DATA(arr);
    f->readonly = !PyArray_ISWRITEABLE(arr);
    f->strides_given = 1;
    for (int i = 0; i < f->ndim; i++) {
        f->shape[i] = PyArray_DIM(arr, i);
        f->strides[i] = PyArray_STRIDE(arr, i);
    }
    if (check_foreign(f, "NumPy array") < 0)
        return -1;
    f->owner = Py_NewRef((PyObject *)arr);
    return 1;
}

static void foreign_init(ext_foreign *f)
{
    memset(f, 0, sizeof *f);
}

/* Whether obj comes from a library whose arrays are immutable (JAX):
 * DLPack 0.x cannot say read-only, and such a producer may not set the
 * 1.0 flag either, yet a write through the shared memory would change an
 * array its owner takes to be constant.  Any class in obj's MRO counts. */
static int immutable_type(PyTypeObject *type)
{
    PyObject *mro = type->tp_mro;
    Py_ssize_t n = mro && PyTuple_Check(mro) ? PyTuple_GET_SIZE(mro) : 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *cls = PyTuple_GET_ITEM(mro, i);
        PyObject *mod = PyObject_GetAttrString(cls, "__module__");
        const char *m = mod && PyUnicode_Check(mod) ? PyUnicode_AsUTF8(mod) : NULL;
        PyErr_Clear();
        int jax = m && (!strncmp(m, "jax", 3) && (m[3] == '\0' || m[3] == '.' ||
                                                 (!strncmp(m + 3, "lib", 3) &&
                                                  (m[6] == '\0' || m[6] == '.'))));
        Py_XDECREF(mod);
        if (jax)
            return 1;
    }
    return 0;
}

/* Producer types seen lately and whether they are immutable, keyed by the
 * type and its version tag: CPython gives a type a new tag whenever it or
 * a base changes (a reassigned __module__ included), and never reuses one,
 * so a freed type's entry cannot match another type. */
#define TYPE_MEMO 16
static struct {
    PyTypeObject *type;
    unsigned int tag;
    int immutable;
} type_memo[TYPE_MEMO];

static int immutable_producer(PyObject *obj)
{
    PyTypeObject *type = Py_TYPE(obj);
    unsigned int tag = ext_type_tag(type);
    size_t slot = ((uintptr_t)type >> 4) % TYPE_MEMO;
    if (tag && type_memo[slot].type == type && type_memo[slot].tag == tag)
        return type_memo[slot].immutable;
    int immutable = immutable_type(type);
    if (tag) {
        type_memo[slot].type = type;
        type_memo[slot].tag = tag;
        type_memo[slot].immutable = immutable;
    }
    return immutable;
}

/* DLPack only: a capsule, or an object with __dlpack__.  1, 0, -1.
 * known_host and *legacy as call_dlpack's; a capsule found off the host
 * when known_host was given is given back, with 2 returned. */
static int parse_dlpack_as(PyObject *obj, ext_foreign *f, int known_host, int *legacy)
{
    if (PyCapsule_CheckExact(obj))
        return parse_capsule(obj, f);
    PyObject *cap = known_host && !*legacy ? dlpack_known_call(obj) : NULL;
    if (!cap && PyErr_Occurred())
        return -1;
    if (!cap) {
        PyObject *method = optional_attr(obj, N_DLPACK);
        if (!method)
            return PyErr_Occurred() ? -1 : 0;
        cap = call_dlpack(method, obj, known_host, legacy);
        Py_DECREF(method);
        if (!cap)
            return -1;
    }
    int rc = PyCapsule_CheckExact(cap)
        ? parse_capsule(cap, f)
        : (PyErr_Format(PyExc_TypeError, "%.100s.__dlpack__() returned %.100s, not a capsule",
                        Py_TYPE(obj)->tp_name, Py_TYPE(cap)->tp_name), -1);
    Py_DECREF(cap);
    if (rc == 1 && known_host && !dl_host_device(f->device_type)) {
        Py_CLEAR(f->owner); /* unused: the producer's deleter runs */
        return 2;
    }
    if (rc == 1 && immutable_producer(obj))
        f->readonly = 1;
    return rc;
}

static int parse_dlpack(PyObject *obj, ext_foreign *f)
{
    int legacy = 0;
    return parse_dlpack_as(obj, f, 0, &legacy);
}

/* The array interfaces, CUDA's first.  1, 0, -1. */
static int parse_interfaces(PyObject *obj, ext_foreign *f)
{
    for (int cuda = 1; cuda >= 0; cuda--) {
        PyObject *d = optional_attr(obj, cuda ? N_CUDA_INTERFACE : N_ARRAY_INTERFACE);
        if (d) {
            int rc = parse_interface(obj, d, cuda, f);
            Py_DECREF(d);
            if (rc < 0)
                Py_CLEAR(f->owner);
            return rc;
        }
        if (PyErr_Occurred())
            return -1;
    }
    return 0;
}

int ext_foreign_parse(PyObject *obj, ext_foreign *f)
{
    foreign_init(f);
    int rc = parse_dlpack(obj, f);
    return rc ? rc : parse_interfaces(obj, f);
}

/* ---- kernel arguments: what can be known before asking ---------------- */

/* A kernel argument is read on every call, so what stays true of a
 * producer is remembered; what may change (a tensor's pointer, shape and
 * strides after resize_, transpose_ or set_) is read again each call. */

/* DLPack producers met lately as kernel arguments whose memory was on the
 * host, by identity, and whether they refused max_version: such a producer
 * is not asked __dlpack_device__ again (its capsule still says where the
 * memory is, and one off the host is given back and the producer asked
 * afresh, with the stream a device needs).  A weak reference tells the
 * producer from a new object at a reused address; objects that take no
 * weak reference are not remembered.  Two ways per set, so the two
 * producers of one call never push each other out by their addresses. */
#define PRODUCER_SETS 32
#define PRODUCER_WAYS 2
static struct {
    PyObject *ref;
    int legacy;
} producer_memo[PRODUCER_SETS][PRODUCER_WAYS];

/* Whether ref (a weak reference, or NULL) refers to obj. */
static int refers_to(PyObject *ref, PyObject *obj)
{
    if (!ref)
        return 0;
#if PY_VERSION_HEX >= 0x030D0000
    PyObject *o = NULL;
    if (PyWeakref_GetRef(ref, &o) < 0)
        PyErr_Clear();
    Py_XDECREF(o); /* compared only: a live object stays alive (the caller has it) */
    return o == obj;
#else
    return PyWeakref_GET_OBJECT(ref) == obj;
#endif
}

/* obj's way in its set, or -1. */
static int producer_way(PyObject *obj, size_t set)
{
    for (int w = 0; w < PRODUCER_WAYS; w++)
        if (refers_to(producer_memo[set][w].ref, obj))
            return w;
    return -1;
}

/* Remembers obj in way 0 of its set, the older entry moving to way 1 (the
 * oldest is forgotten); NULL forgets way `way`. */
static void producer_remember(PyObject *obj, size_t set, int way, int legacy)
{
    if (!obj) {
        Py_CLEAR(producer_memo[set][way].ref);
        return;
    }
    PyObject *ref = PyWeakref_NewRef(obj, NULL);
    if (!ref) {
        PyErr_Clear(); /* no weak references: not remembered */
        return;
    }
    if (way < 0) {
        Py_XDECREF(producer_memo[set][PRODUCER_WAYS - 1].ref);
        for (int w = PRODUCER_WAYS - 1; w > 0; w--)
            producer_memo[set][w] = producer_memo[set][w - 1];
        producer_memo[set][0].ref = NULL;
        way = 0;
    }
    Py_XSETREF(producer_memo[set][way].ref, ref);
    producer_memo[set][way].legacy = legacy;
}

static int parse_dlpack_arg(PyObject *obj, ext_foreign *f)
{
    if (PyCapsule_CheckExact(obj))
        return parse_capsule(obj, f);
    size_t set = ((uintptr_t)obj >> 4) % PRODUCER_SETS;
    int way = producer_way(obj, set), known = way >= 0;
    int legacy = known ? producer_memo[set][way].legacy : 0;
    int rc = parse_dlpack_as(obj, f, known, &legacy);
    if (rc == 2) { /* the memory left the host since */
        known = 0;
        rc = parse_dlpack_as(obj, f, 0, &legacy);
    }
    if (rc == 1 && dl_host_device(f->device_type)) {
        if (!known || legacy != producer_memo[set][way].legacy)
            producer_remember(obj, set, way, legacy); /* way -1: a new entry */
    } else if (way >= 0) {
        producer_remember(NULL, set, way, 0);
    }
    return rc;
}

/* torch.Tensor, found by its name when a type so called is first met: its
 * CPU tensors are read through their own accessors, which cost a fraction
 * of its __dlpack__ and __dlpack_device__ (Python code).  Anything unusual
 * (a tensor that requires grad, off the CPU, not strided, with the negative
 * bit, of a dtype not in the table) takes the DLPack route, whose answer
 * (or refusal) is torch's own.  The conjugate bit needs no look: only
 * complex tensors have it, and no complex dtype is in the table. */
PyTypeObject *ext_torch_tensor;
static PyObject *torch_strided;
static const DLPackExchangeAPI *torch_api; /* NULL: torch before the C exchange API */
static struct {
    PyObject *dtype;
    DLDataType dl;
} torch_dtypes[12];

static int is_torch_tensor(PyTypeObject *type)
{
    if (ext_torch_tensor || strcmp(type->tp_name, "Tensor") ||
        !PyType_HasFeature(type, Py_TPFLAGS_HEAPTYPE))
        return type == ext_torch_tensor;
    PyObject *mod = PyDict_GetItemString(type->tp_dict, "__module__"); /* borrowed */
    if (!mod || !PyUnicode_Check(mod) || PyUnicode_CompareWithASCIIString(mod, "torch"))
        return 0;
    static const struct { const char *name; uint8_t code, bits; } table[12] = {
        {"bool", kDLBool, 8}, {"int8", kDLInt, 8}, {"int16", kDLInt, 16},
        {"int32", kDLInt, 32}, {"int64", kDLInt, 64}, {"uint8", kDLUInt, 8},
        {"uint16", kDLUInt, 16}, {"uint32", kDLUInt, 32}, {"uint64", kDLUInt, 64},
        {"float16", kDLFloat, 16}, {"float32", kDLFloat, 32}, {"float64", kDLFloat, 64}};
    PyObject *torch = PyImport_GetModule(mod);
    PyObject *strided = torch ? PyObject_GetAttrString(torch, "strided") : NULL;
    for (int i = 0; strided && i < 12; i++) {
        /* Older torch lacks the wider unsigned types: those stay empty. */
        torch_dtypes[i].dtype = PyObject_GetAttrString(torch, table[i].name);
        torch_dtypes[i].dl = (DLDataType){table[i].code, table[i].bits, 1};
    }
    PyErr_Clear();
    Py_XDECREF(torch);
    if (!strided)
        return 0;
    /* The spec puts the table on the type (a base's counts). */
    PyObject *api = PyObject_GetAttrString((PyObject *)type, "__dlpack_c_exchange_api__");
    PyErr_Clear();
    if (api && PyCapsule_IsValid(api, "dlpack_exchange_api")) {
        const DLPackExchangeAPIHeader *h = PyCapsule_GetPointer(api, "dlpack_exchange_api");
        while (h && h->version.major > DLPACK_MAJOR_VERSION)
            h = h->prev_api;
        if (h && h->version.major == DLPACK_MAJOR_VERSION && h->version.minor >= 2 &&
            ((const DLPackExchangeAPI *)h)->dltensor_from_py_object_no_sync)
            torch_api = (const DLPackExchangeAPI *)h; /* static in torch, for good */
    }
    Py_XDECREF(api);
    torch_strided = strided;
    ext_torch_tensor = (PyTypeObject *)Py_NewRef((PyObject *)type);
    return 1;
}

/* obj.<name i> (called when `call`), or NULL: *missing set when obj lacks
 * it (the DLPack route then reads the tensor), else an exception. */
static PyObject *torch_read(PyObject *obj, int i, int call, int *missing)
{
    if (call) {
        PyObject *self[1] = {obj};
        PyObject *r = PyObject_VectorcallMethod(name(i), self, 1 | PY_VECTORCALL_ARGUMENTS_OFFSET,
                                                NULL);
        if (!r && PyErr_ExceptionMatches(PyExc_AttributeError)) {
            PyErr_Clear();
            *missing = 1;
        }
        return r;
    }
    PyObject *r = optional_attr(obj, i);
    if (!r && !PyErr_Occurred())
        *missing = 1;
    return r;
}

/* A CPU tensor's view through the C exchange API; 1, 0 (the DLPack
 * route reads it, and refuses it in torch's words if it must), -1. */
static int torch_exchange(PyObject *obj, ext_foreign *f)
{
    DLTensor dl;
    memset(&dl, 0, sizeof dl);
    if (torch_api->dltensor_from_py_object_no_sync(obj, &dl) != 0) {
        PyErr_Clear();
        return 0;
    }
    if (dl.device.device_type != kDLCPU)
        return 0; /* device memory: __dlpack__ with the stream Tack runs on */
    if (describe_dltensor(&dl, 0, f) < 0)
        return -1;
    f->protocol = EXT_FOREIGN_DLPACK;
    f->owner = Py_NewRef(obj); /* the tensor keeps its memory */
    return 1;
}

/* The same through the tensor's accessors (torch without the exchange
 * API): requires_grad and is_neg() already read. */
static int torch_accessors(PyObject *obj, ext_foreign *f, int *missing)
{
    int rc = -1;
    PyObject *cpu = NULL, *layout = NULL, *dtype = NULL, *shape = NULL, *strides = NULL;
    PyObject *ptr = NULL;
    if (!(cpu = torch_read(obj, N_IS_CPU, 0, missing)) ||
        !(layout = torch_read(obj, N_LAYOUT, 0, missing)) ||
        !(dtype = torch_read(obj, N_DTYPE, 0, missing)))
        goto done;
    int t = -1;
    for (int i = 0; i < 12 && t < 0; i++)
        if (torch_dtypes[i].dtype == dtype)
            t = i;
    if (cpu != Py_True || layout != torch_strided || t < 0) {
        rc = 0;
        goto done;
    }
    if (!(shape = torch_read(obj, N_SHAPE, 0, missing)) ||
        !(strides = torch_read(obj, N_STRIDE, 1, missing)) ||
        !(ptr = torch_read(obj, N_DATA_PTR, 1, missing)))
        goto done;
    Py_ssize_t ndim = PyTuple_Check(shape) ? PyTuple_GET_SIZE(shape) : -1;
    if (ndim < 0 || ndim > TACK_MAX_NDIM || !PyTuple_Check(strides) ||
        PyTuple_GET_SIZE(strides) != ndim || !PyLong_Check(ptr)) {
        rc = 0; /* the DLPack route says what is wrong */
        goto done;
    }
    int64_t dims[TACK_MAX_NDIM], steps[TACK_MAX_NDIM];
    for (Py_ssize_t i = 0; i < ndim; i++) {
        dims[i] = PyLong_AsLongLong(PyTuple_GET_ITEM(shape, i));
        steps[i] = PyLong_AsLongLong(PyTuple_GET_ITEM(strides, i));
    }
    unsigned long long address = PyLong_AsUnsignedLongLong(ptr);
    if (PyErr_Occurred())
        goto done;
    DLTensor dl = {.data = (void *)(uintptr_t)address, .device = {kDLCPU, 0},
                   .ndim = (int32_t)ndim, .dtype = torch_dtypes[t].dl, .shape = dims,
                   .strides = steps, .byte_offset = 0};
    if (describe_dltensor(&dl, 0, f) < 0)
        goto done;
    f->protocol = EXT_FOREIGN_DLPACK;
    f->owner = Py_NewRef(obj); /* the tensor keeps its memory */
    rc = 1;
done:
    Py_XDECREF(cpu);
    Py_XDECREF(layout);
    Py_XDECREF(dtype);
    Py_XDECREF(shape);
    Py_XDECREF(strides);
    Py_XDECREF(ptr);
    return rc;
}

/* A CPU tensor into *f; 1 read, 0 one for the DLPack route, -1 error.
 * Neither the exchange API nor the accessors refuse what torch's
 * __dlpack__ refuses (a tensor that requires grad: a write would bypass
 * autograd), so that one takes the DLPack route and its error.  A tensor
 * with the negative bit (a lazy negation, as conj().imag gives) holds its
 * values negated in memory, which every route would hand over as they lie:
 * refused here. */
static int parse_torch(PyObject *obj, ext_foreign *f)
{
    int missing = 0, rc = -1;
    PyObject *grad = torch_read(obj, N_REQUIRES_GRAD, 0, &missing);
    PyObject *neg = grad == Py_False ? torch_read(obj, N_IS_NEG, 1, &missing) : NULL;
    if (grad && grad != Py_False)
        rc = 0;
    else if (neg && neg != Py_False)
        PyErr_SetString(PyExc_ValueError,
                        "the tensor has its negative bit set (a lazy negation, such as "
                        "conj().imag makes): its memory holds the values negated; pass "
                        "x.resolve_neg()");
    else if (neg)
        rc = torch_api ? torch_exchange(obj, f) : torch_accessors(obj, f, &missing);
    if (rc < 0 && missing)
        rc = 0;
    Py_XDECREF(grad);
    Py_XDECREF(neg);
    return rc;
}

int ext_foreign_parse_arg(PyObject *obj, ext_foreign *f)
{
    foreign_init(f);
    if (is_torch_tensor(Py_TYPE(obj))) {
        int rc = parse_torch(obj, f);
        if (rc)
            return rc;
        foreign_init(f);
    }
    int rc = parse_dlpack_arg(obj, f);
    return rc ? rc : parse_interfaces(obj, f);
}

/* ---- foreign memory as Tack's --------------------------------------- */

int ext_foreign_on_host(const ext_foreign *f)
{
    return dl_host_device(f->device_type);
}

PyObject *ext_foreign_device(const ext_foreign *f, const char *who)
{
    char spec[32];
    if (dl_host_device(f->device_type)) {
        snprintf(spec, sizeof spec, "cpu");
    } else if (f->device_type == kDLCUDA) {
        if (f->device_id < 0) {
            /* __cuda_array_interface__: the default device when it is a
             * CUDA device, else the first. */
            PyObject *d = ext_default_device();
            if (!d)
                return NULL;
            if (!strncmp(tack_device_name(((ext_DeviceObject *)d)->dev), "cuda:", 5))
                return Py_NewRef(d);
            snprintf(spec, sizeof spec, "cuda:0");
        } else {
            snprintf(spec, sizeof spec, "cuda:%d", f->device_id);
        }
    } else {
        PyErr_Format(PyExc_RuntimeError,
                     "%s: the array is in the memory of a %s device (DLPack device type %d), "
                     "which Tack cannot use; copy it to the host first", who,
                     dl_device_name(f->device_type), f->device_type);
        return NULL;
    }
    PyObject *name = PyUnicode_FromString(spec);
    PyObject *dev = name ? ext_device_from_object(name) : NULL;
    Py_XDECREF(name);
    if (!dev && f->device_type == kDLCUDA) {
        PyObject *t, *v, *tb;
        PyErr_Fetch(&t, &v, &tb);
        PyErr_NormalizeException(&t, &v, &tb);
        PyErr_Format(PyExc_RuntimeError,
                     "%s: the array is in the memory of a CUDA device, and Tack cannot use "
                     "device '%s' here: %S", who, spec, v ? v : Py_None);
        Py_XDECREF(t);
        Py_XDECREF(v);
        Py_XDECREF(tb);
    }
    return dev;
}

int ext_foreign_sync(const ext_foreign *f, PyObject *device)
{
    if (!f->has_stream)
        return 0;
    tack_error err;
    tack_status st;
    Py_BEGIN_ALLOW_THREADS
    st = tack_device_synchronize(((ext_DeviceObject *)device)->dev, &err);
    Py_END_ALLOW_THREADS
    if (st != TACK_OK) {
        ext_raise(&err);
        return -1;
    }
    return 0;
}

void *ext_foreign_handle(const ext_foreign *f, PyObject *device)
{
    tack_device *dev = ((ext_DeviceObject *)device)->dev;
    if (tack_device_host_memory(dev))
        return (void *)(uintptr_t)f->address;
    tack_error err;
    void *h = tack_device_wrap_mem(dev, f->address,
                                   (size_t)(foreign_size(f) * element_size(f)), &err);
    if (!h)
        ext_raise(&err);
    return h;
}

static PyObject *shape_tuple(int n, const int64_t *v)
{
    PyObject *t = PyTuple_New(n);
    for (int i = 0; t && i < n; i++) {
        PyObject *x = PyLong_FromLongLong(v[i]);
        if (!x) {
            Py_CLEAR(t);
            break;
        }
        PyTuple_SET_ITEM(t, i, x);
    }
    return t;
}

/* A NumPy view of f's host memory (any strides), keeping f's owner. */
static PyObject *host_view(const ext_foreign *f)
{
    npy_intp dims[TACK_MAX_NDIM], strides[TACK_MAX_NDIM];
    for (int i = 0; i < f->ndim; i++) {
        dims[i] = (npy_intp)f->shape[i];
        strides[i] = (npy_intp)f->strides[i];
    }
    PyObject *v = PyArray_New(&PyArray_Type, f->ndim, dims, ext_dtype_to_typenum(f->dtype),
                              strides, (void *)(uintptr_t)f->address, 0,
                              f->readonly ? 0 : NPY_ARRAY_WRITEABLE, NULL);
    if (v && PyArray_SetBaseObject((PyArrayObject *)v, Py_NewRef(f->owner)) < 0)
        Py_CLEAR(v);
    return v;
}

/* The error being raised, its message prefixed with `who` (the call) when
 * it is one of the plain kinds Tack raises; NULL. */
static PyObject *reraise_for(const char *who)
{
    PyObject *t, *v, *tb;
    PyErr_Fetch(&t, &v, &tb);
    PyErr_NormalizeException(&t, &v, &tb);
    PyObject *msg = v && (t == PyExc_ValueError || t == PyExc_TypeError ||
                          t == PyExc_BufferError || t == PyExc_RuntimeError)
        ? PyObject_Str(v) : NULL;
    const char *m = msg ? PyUnicode_AsUTF8(msg) : NULL;
    if (m && strncmp(m, who, strlen(who))) {
        PyErr_Format(t, "%s: %U", who, msg);
        Py_XDECREF(v);
        Py_XDECREF(tb);
        Py_DECREF(t);
    } else {
        PyErr_Clear();
        PyErr_Restore(t, v, tb);
    }
    Py_XDECREF(msg);
    return NULL;
}

/* A tack.Array sharing f's memory (taking f's owner), or with allow_copy a
 * C-contiguous copy when f's host memory is not.  `who` names the call.
 * tack.asarray copies NumPy arrays and buffers only (as NumPy's asarray
 * would); another library's strided tensor is refused there, since a
 * kernel's writes to a silent copy would never reach it. */
static PyObject *foreign_to_array(ext_foreign *f, const char *who, int allow_copy)
{
    PyObject *r = NULL;
    PyObject *device = ext_foreign_device(f, who);
    if (!device)
        goto done;
    if (!ext_foreign_contiguous(f)) {
        if (allow_copy && dl_host_device(f->device_type)) {
            PyObject *view = host_view(f);
            PyObject *args = view ? PyTuple_Pack(1, view) : NULL;
            r = args ? ext_array(NULL, args, NULL) : NULL;
            Py_XDECREF(args);
            Py_XDECREF(view);
            goto done;
        }
        PyObject *shape = shape_tuple(f->ndim, f->shape);
        PyObject *strides = shape ? shape_tuple(f->ndim, f->strides) : NULL;
        if (strides)
            PyErr_Format(PyExc_ValueError,
                         "%s: the array is not C-contiguous (shape %S, strides %S bytes) and "
                         "a tack.Array is, so it cannot share the memory; pass the array to "
                         "kernels directly (they take strides), or copy it with tack.array()",
                         who, shape, strides);
        Py_XDECREF(shape);
        Py_XDECREF(strides);
        goto done;
    }
    if (f->address % (uint64_t)element_size(f)) {
        PyErr_Format(PyExc_ValueError, "%s: the data is not aligned to its element size", who);
        goto done;
    }
    if (ext_foreign_sync(f, device) < 0)
        goto done;
    void *data = ext_foreign_handle(f, device);
    if (data)
        r = (PyObject *)ext_Array_wrap(device, data, f->dtype, 0, f->ndim, f->shape,
                                       f->readonly, f->owner);
done:
    Py_XDECREF(device);
    Py_CLEAR(f->owner);
    return r;
}

/* a as a `width`-component vector array or back (the same memory), when
 * the component and the trailing dimension agree; NULL without an error
 * when they do not. */
static PyObject *reinterpret_vectors(ext_ArrayObject *a, tack_dtype t, int width)
{
    if (t != a->dtype || (width == 0) == (a->vec_width == 0))
        return NULL;
    int sndim = ext_Array_STORAGE_NDIM(a);
    if (width && (sndim == 0 || a->shape[sndim - 1] != width))
        return NULL;
    int ndim = width ? sndim - 1 : sndim;
    return (PyObject *)ext_Array_wrap(a->device, a->data, t, width, ndim, a->shape,
                                      a->readonly, (PyObject *)a);
}

/* asarray's dtype and device: the same memory where it can be, else a
 * copy.  Steals arr. */
static PyObject *convert_shared(PyObject *arr, PyObject *dtype_obj, PyObject *device_obj)
{
    ext_ArrayObject *a = (ext_ArrayObject *)arr;
    if (dtype_obj != Py_None) {
        tack_dtype t;
        int width;
        if (ext_dtype_from_object_vec(dtype_obj, &t, &width) < 0)
            goto fail;
        if (t != a->dtype || width != a->vec_width) {
            PyObject *v = reinterpret_vectors(a, t, width);
            if (!v && PyErr_Occurred())
                goto fail;
            if (!v) {
                PyObject *args = PyTuple_Pack(1, arr);
                PyObject *kw = args ? Py_BuildValue("{s:O,s:O}", "dtype", dtype_obj,
                                                    "device", device_obj) : NULL;
                v = kw ? ext_array(NULL, args, kw) : NULL;
                Py_XDECREF(args);
                Py_XDECREF(kw);
                Py_DECREF(arr);
                return v;
            }
            Py_SETREF(arr, v);
            a = (ext_ArrayObject *)arr;
        }
    }
    if (device_obj != Py_None) {
        PyObject *dev = ext_device_from_object(device_obj);
        if (!dev)
            goto fail;
        if (dev != a->device) {
            PyObject *v;
            if (tack_device_host_memory(((ext_DeviceObject *)dev)->dev) && ext_Array_on_host(a)) {
                /* Another host-memory device (options): the same memory. */
                v = (PyObject *)ext_Array_wrap(dev, a->data, a->dtype, a->vec_width, a->ndim,
                                               a->shape, a->readonly, arr);
            } else {
                PyObject *args = PyTuple_Pack(1, arr);
                PyObject *kw = args ? Py_BuildValue("{s:O}", "device", dev) : NULL;
                v = kw ? ext_array(NULL, args, kw) : NULL;
                Py_XDECREF(args);
                Py_XDECREF(kw);
            }
            Py_DECREF(dev);
            Py_DECREF(arr);
            return v;
        }
        Py_DECREF(dev);
    }
    return arr;
fail:
    Py_DECREF(arr);
    return NULL;
}

/* tack.array(obj, dtype, device): a new array. */
static PyObject *array_copy(PyObject *obj, PyObject *dtype_obj, PyObject *device_obj)
{
    PyObject *args = PyTuple_Pack(3, obj, dtype_obj, device_obj);
    PyObject *r = args ? ext_array(NULL, args, NULL) : NULL;
    Py_XDECREF(args);
    return r;
}

PyObject *ext_asarray(PyObject *self, PyObject *args, PyObject *kwargs)
{
    (void)self;
    static char *kwlist[] = {"obj", "dtype", "device", NULL};
    PyObject *obj, *dtype_obj = Py_None, *device_obj = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|OO:asarray", kwlist, &obj, &dtype_obj,
                                     &device_obj))
        return NULL;
    const char *who = "tack.asarray()";
    PyObject *arr = NULL, *nd = NULL;
    ext_foreign f;
    foreign_init(&f);
    if (obj == Py_None) {
        PyErr_SetString(PyExc_TypeError, "tack.asarray(): None is not an array");
        return NULL;
    }
    if (ext_Array_Check(obj)) {
        arr = Py_NewRef(obj);
    } else if (PyArray_Check(obj)) {
        nd = Py_NewRef(obj);
    } else if (PyArray_IsScalar(obj, Generic) || PyList_Check(obj) || PyTuple_Check(obj)) {
        return array_copy(obj, dtype_obj, device_obj); /* a new array */
    } else {
        int rc = ext_foreign_parse(obj, &f);
        if (rc < 0)
            return reraise_for(who);
        if (rc)
            arr = foreign_to_array(&f, who, 0);
        else if (PyObject_CheckBuffer(obj))
            nd = PyArray_FromAny(obj, NULL, 0, 0, 0, NULL); /* a view of the buffer */
        else
            return array_copy(obj, dtype_obj, device_obj);
        if (!arr && !nd)
            return NULL;
    }
    if (nd) {
        if (describe_ndarray((PyArrayObject *)nd, &f) < 0) {
            /* A dtype or byte order Tack lacks: tack.array converts it
             * when asked to, and says why otherwise. */
            PyErr_Clear();
            arr = array_copy(nd, dtype_obj, device_obj);
            Py_DECREF(nd);
            return arr;
        }
        Py_DECREF(nd);
        arr = foreign_to_array(&f, who, 1);
        if (!arr)
            return NULL;
    }
    return convert_shared(arr, dtype_obj, device_obj);
}

PyObject *ext_from_dlpack(PyObject *self, PyObject *obj)
{
    (void)self;
    ext_foreign f;
    foreign_init(&f);
    int rc = parse_dlpack(obj, &f);
    if (rc == 0)
        PyErr_Format(PyExc_TypeError,
                     "tack.from_dlpack() takes an object with __dlpack__ (or a DLPack "
                     "capsule), not %.100s", Py_TYPE(obj)->tp_name);
    if (rc < 0)
        return reraise_for("tack.from_dlpack()");
    if (rc == 0)
        return NULL;
    return foreign_to_array(&f, "tack.from_dlpack()", 0);
}

PyObject *ext_share_foreign(PyObject *obj)
{
    if (PyArray_Check(obj) || ext_Array_Check(obj) || PyList_Check(obj) || PyTuple_Check(obj) ||
        PyArray_IsScalar(obj, Generic))
        return Py_NewRef(Py_None);
    int host_interface = 0;
    PyObject *m = optional_attr(obj, N_DLPACK);
    if (!m && !PyErr_Occurred())
        m = optional_attr(obj, N_CUDA_INTERFACE);
    if (!m && !PyErr_Occurred())
        host_interface = (m = optional_attr(obj, N_ARRAY_INTERFACE)) != NULL;
    if (!m)
        return PyErr_Occurred() ? NULL : Py_NewRef(Py_None);
    Py_DECREF(m);
    /* An __array_interface__ is read here too, so that a 'data' buffer
     * shorter than its shape is refused rather than copied from. */
    ext_foreign f;
    int rc = ext_foreign_parse(obj, &f);
    if (rc < 0 && host_interface && PyErr_ExceptionMatches(PyExc_TypeError)) {
        /* A dtype Tack lacks: NumPy converts it (the layout was checked). */
        PyErr_Clear();
        return Py_NewRef(Py_None);
    }
    if (rc <= 0)
        return rc < 0 ? reraise_for("tack.array()") : Py_NewRef(Py_None);
    return foreign_to_array(&f, "tack.array()", 1);
}

PyObject *ext_describe_foreign(PyObject *self, PyObject *obj)
{
    (void)self;
    ext_foreign f;
    int rc = ext_foreign_parse(obj, &f);
    if (rc <= 0) {
        if (rc == 0)
            PyErr_Format(PyExc_TypeError, "%.100s speaks none of DLPack and the array "
                         "interfaces", Py_TYPE(obj)->tp_name);
        return NULL;
    }
    static const char *const protocols[] = {
        [EXT_FOREIGN_DLPACK] = "dlpack", [EXT_FOREIGN_DLPACK_VERSIONED] = "dlpack_versioned",
        [EXT_FOREIGN_CUDA_INTERFACE] = "cuda_array_interface",
        [EXT_FOREIGN_ARRAY_INTERFACE] = "array_interface"};
    PyObject *shape = shape_tuple(f.ndim, f.shape);
    PyObject *strides = shape ? shape_tuple(f.ndim, f.strides) : NULL;
    PyObject *r = NULL;
    if (strides)
        r = Py_BuildValue(
            "{s:s,s:i,s:N,s:K,s:N,s:N,s:O,s:O,s:O,s:O,s:N}", "protocol", protocols[f.protocol],
            "device_type", f.device_type, "device_id",
            f.device_id < 0 ? Py_NewRef(Py_None) : PyLong_FromLong(f.device_id), "ptr",
            (unsigned long long)f.address, "shape", shape, "strides", strides, "dtype",
            ext_dtype_object(f.dtype), "readonly", f.readonly ? Py_True : Py_False,
            "strides_given", f.strides_given ? Py_True : Py_False, "contiguous",
            ext_foreign_contiguous(&f) ? Py_True : Py_False, "stream",
            f.has_stream ? PyLong_FromLongLong(f.stream) : Py_NewRef(Py_None));
    else
        Py_XDECREF(shape);
    Py_CLEAR(f.owner); /* a DLPack tensor's deleter runs here */
    return r;
}

/* ---- tack.Array as a producer ---------------------------------------- */

typedef enum { DEV_HOST, DEV_CUDA, DEV_OTHER } device_kind;

/* The array's device as DLPack names it. */
static device_kind array_device(const ext_ArrayObject *a, DLDevice *out)
{
    const char *name = tack_device_name(((ext_DeviceObject *)a->device)->dev);
    const char *colon = strchr(name, ':');
    out->device_id = colon ? atoi(colon + 1) : 0;
    if (ext_Array_on_host(a)) {
        out->device_type = kDLCPU;
        out->device_id = 0;
        return DEV_HOST;
    }
    if (!strncmp(name, "cuda:", 5)) {
        out->device_type = kDLCUDA;
        return DEV_CUDA;
    }
    out->device_type = !strncmp(name, "opencl:", 7) ? kDLOpenCL : kDLExtDev;
    return DEV_OTHER;
}

/* Launches on device arrays return queued (CUDA, HIP, OpenCL): before
 * another library reads the memory on a stream of its own, the device's
 * work is waited for, and a queued launch's failure raised.  0, -1. */
static int settle(ext_ArrayObject *a)
{
    tack_device *dev = ((ext_DeviceObject *)a->device)->dev;
    if (ext_Array_on_host(a))
        return 0;
    tack_error err;
    tack_status st;
    Py_BEGIN_ALLOW_THREADS
    st = tack_device_synchronize(dev, &err);
    Py_END_ALLOW_THREADS
    if (st != TACK_OK) {
        ext_raise(&err);
        return -1;
    }
    return 0;
}

static PyObject *interface_dict(ext_ArrayObject *a)
{
    char typestr[8];
    typestr_of(a->dtype, typestr);
    PyObject *shape = shape_tuple(ext_Array_STORAGE_NDIM(a), a->shape);
    if (!shape)
        return NULL;
    return Py_BuildValue("{s:N,s:s,s:(KO),s:O,s:i}", "shape", shape, "typestr", typestr,
                         "data", (unsigned long long)(uintptr_t)a->data,
                         a->readonly ? Py_True : Py_False, "strides", Py_None, "version", 3);
}

PyObject *ext_array_interface(PyObject *self, void *closure)
{
    (void)closure;
    ext_ArrayObject *a = (ext_ArrayObject *)self;
    if (!ext_Array_on_host(a)) {
        PyErr_Format(PyExc_AttributeError,
                     "__array_interface__: this tack.Array lives in the memory of device "
                     "'%s'; copy it to the host with .numpy()",
                     tack_device_name(((ext_DeviceObject *)a->device)->dev));
        return NULL;
    }
    return interface_dict(a);
}

PyObject *ext_cuda_array_interface(PyObject *self, void *closure)
{
    (void)closure;
    ext_ArrayObject *a = (ext_ArrayObject *)self;
    DLDevice dev;
    if (array_device(a, &dev) != DEV_CUDA) {
        PyErr_Format(PyExc_AttributeError,
                     "__cuda_array_interface__: this tack.Array is on device '%s', not a CUDA "
                     "device", tack_device_name(((ext_DeviceObject *)a->device)->dev));
        return NULL;
    }
    /* The queued work is waited for here, so the consumer's stream needs
     * no event: "stream" is None. */
    if (settle(a) < 0)
        return NULL;
    PyObject *d = interface_dict(a);
    if (d && PyDict_SetItemString(d, "stream", Py_None) < 0)
        Py_CLEAR(d);
    return d;
}

PyObject *ext_array_dlpack_device(PyObject *self, PyObject *unused)
{
    (void)unused;
    DLDevice dev;
    array_device((ext_ArrayObject *)self, &dev);
    return Py_BuildValue("(ii)", dev.device_type, dev.device_id);
}

/* One exported tensor: the managed struct first, so the deleter's pointer
 * is the block's. */
typedef struct {
    union {
        DLManagedTensor legacy;
        DLManagedTensorVersioned versioned;
    } m;
    int64_t shape[TACK_MAX_NDIM];
    int64_t strides[TACK_MAX_NDIM];
} export_block;

static void export_release(PyObject *array, void *block)
{
    /* Consumers may call the deleter from any thread, or after the
     * interpreter is gone (then the array is left to the exit). */
    if (Py_IsInitialized()) {
        PyGILState_STATE g = PyGILState_Ensure();
        Py_DECREF(array);
        PyGILState_Release(g);
    }
    PyMem_RawFree(block);
}

static void legacy_deleter(DLManagedTensor *m)
{
    export_release(m->manager_ctx, m);
}

static void versioned_deleter(DLManagedTensorVersioned *m)
{
    export_release(m->manager_ctx, m);
}

/* An unconsumed capsule frees its tensor; a consumed one was renamed and
 * its consumer calls the deleter. */
static void export_capsule_destructor(PyObject *cap)
{
    if (PyCapsule_IsValid(cap, "dltensor")) {
        DLManagedTensor *m = PyCapsule_GetPointer(cap, "dltensor");
        m->deleter(m);
    } else if (PyCapsule_IsValid(cap, "dltensor_versioned")) {
        DLManagedTensorVersioned *m = PyCapsule_GetPointer(cap, "dltensor_versioned");
        m->deleter(m);
    }
}

static PyObject *export_capsule(ext_ArrayObject *a, int versioned, int copied)
{
    if (!versioned && a->readonly) {
        PyErr_SetString(PyExc_BufferError,
                        "this tack.Array is read-only, which a DLPack 0.x tensor cannot say; "
                        "ask for DLPack 1.0 (max_version=(1, 0))");
        return NULL;
    }
    export_block *b = PyMem_RawCalloc(1, sizeof *b);
    if (!b)
        return PyErr_NoMemory();
    int ndim = ext_Array_STORAGE_NDIM(a);
    int64_t esize = (int64_t)tack_dtype_size(a->dtype);
    for (int i = 0; i < ndim; i++) {
        b->shape[i] = a->shape[i];
        b->strides[i] = a->strides[i] / esize; /* DLPack counts elements */
    }
    DLTensor *t = versioned ? &b->m.versioned.dl_tensor : &b->m.legacy.dl_tensor;
    t->data = a->data;
    array_device(a, &t->device);
    t->ndim = ndim;
    t->dtype = dl_from_dtype(a->dtype);
    t->shape = b->shape;
    t->strides = b->strides;
    t->byte_offset = 0;
    if (versioned) {
        b->m.versioned.version.major = DLPACK_MAJOR_VERSION;
        b->m.versioned.version.minor = DLPACK_MINOR_VERSION;
        b->m.versioned.manager_ctx = Py_NewRef((PyObject *)a);
        b->m.versioned.deleter = versioned_deleter;
        b->m.versioned.flags = (a->readonly ? DLPACK_FLAG_BITMASK_READ_ONLY : 0) |
                               (copied ? DLPACK_FLAG_BITMASK_IS_COPIED : 0);
    } else {
        b->m.legacy.manager_ctx = Py_NewRef((PyObject *)a);
        b->m.legacy.deleter = legacy_deleter;
    }
    PyObject *cap = PyCapsule_New(b, versioned ? "dltensor_versioned" : "dltensor",
                                  export_capsule_destructor);
    if (!cap) {
        Py_DECREF(a);
        PyMem_RawFree(b);
    }
    return cap;
}

PyObject *ext_array_dlpack(PyObject *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"stream", "max_version", "dl_device", "copy", NULL};
    PyObject *stream = Py_None, *max_version = Py_None, *dl_device = Py_None, *copy = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|$OOOO:__dlpack__", kwlist, &stream,
                                     &max_version, &dl_device, &copy))
        return NULL;
    ext_ArrayObject *a = (ext_ArrayObject *)self;
    /* Queued launches are waited for before the export (settle), so any
     * stream may read at once. */
    if (stream != Py_None && !PyLong_Check(stream)) {
        PyErr_Format(PyExc_TypeError, "__dlpack__(): stream must be None or an int, not %.100s",
                     Py_TYPE(stream)->tp_name);
        return NULL;
    }
    int versioned = 0;
    if (max_version != Py_None) {
        int major, minor;
        if (!PyTuple_Check(max_version) ||
            !PyArg_ParseTuple(max_version, "ii", &major, &minor)) {
            PyErr_Clear();
            PyErr_SetString(PyExc_TypeError,
                            "__dlpack__(): max_version must be a (major, minor) tuple");
            return NULL;
        }
        versioned = major >= 1;
    }
    int copy_flag = copy == Py_None ? -1 : PyObject_IsTrue(copy);
    if (copy_flag == -1 && PyErr_Occurred())
        return NULL;
    DLDevice own;
    device_kind kind = array_device(a, &own);
    int to_host = 0;
    if (dl_device != Py_None) {
        int type, id;
        if (!PyTuple_Check(dl_device) || !PyArg_ParseTuple(dl_device, "ii", &type, &id)) {
            PyErr_Clear();
            PyErr_SetString(PyExc_TypeError,
                            "__dlpack__(): dl_device must be a (device type, index) tuple");
            return NULL;
        }
        if (type != own.device_type || id != own.device_id) {
            if (type != kDLCPU || copy_flag == 0) {
                PyErr_Format(PyExc_BufferError,
                             "__dlpack__(): the array is on device (%d, %d) and can be "
                             "exported there%s, not to (%d, %d)",
                             own.device_type, own.device_id,
                             copy_flag == 0 ? "" : " or copied to the CPU (1, 0)", type, id);
                return NULL;
            }
            to_host = 1;
        }
    }
    if (kind == DEV_OTHER && !to_host) {
        PyErr_Format(PyExc_BufferError,
                     "__dlpack__(): device '%s' keeps arrays as driver objects, not addresses "
                     "DLPack can share; pass dl_device=(1, 0) for a copy on the CPU",
                     tack_device_name(((ext_DeviceObject *)a->device)->dev));
        return NULL;
    }
    if (copy_flag == 1 || to_host) {
        PyObject *cargs = PyTuple_Pack(1, self);
        PyObject *kw = cargs && to_host ? Py_BuildValue("{s:s}", "device", "cpu") : NULL;
        PyObject *c = cargs && (kw || !to_host) ? ext_array(NULL, cargs, kw) : NULL;
        Py_XDECREF(cargs);
        Py_XDECREF(kw);
        if (!c)
            return NULL;
        PyObject *cap = export_capsule((ext_ArrayObject *)c, versioned, 1);
        Py_DECREF(c);
        return cap;
    }
    if (settle(a) < 0)
        return NULL;
    return export_capsule(a, versioned, 0);
}
