/*
 * dtype.c - tack.dtype: one shared object per element type (tack.f32 ...),
 * and the mappings between Tack dtypes, NumPy type numbers and buffer
 * formats.
 */
#define NO_IMPORT_ARRAY
#include "ext.h"

/* Python attribute names of the dtype objects, in tack_dtype order. */
static const char *const py_names[TACK_DTYPE_COUNT] = {
    "bool_", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "f32", "f64"
};

static PyObject *dtype_objects[TACK_DTYPE_COUNT];

PyObject *ext_dtype_object(tack_dtype t)
{
    return dtype_objects[t];
}

int ext_dtype_to_typenum(tack_dtype t)
{
    static const int typenums[TACK_DTYPE_COUNT] = {
        NPY_BOOL, NPY_INT8, NPY_INT16, NPY_INT32, NPY_INT64,
        NPY_UINT8, NPY_UINT16, NPY_UINT32, NPY_UINT64, NPY_FLOAT32, NPY_FLOAT64
    };
    return typenums[t];
}

int ext_dtype_from_typenum(int typenum)
{
    /* C type names rather than sized ones: NPY_LONG and NPY_LONGLONG are
     * distinct numbers of the same size on LP64. */
#define SINT(ctype) (sizeof(ctype) == 1 ? TACK_I8 : sizeof(ctype) == 2 ? TACK_I16 : \
                     sizeof(ctype) == 4 ? TACK_I32 : TACK_I64)
#define UINT(ctype) (sizeof(ctype) == 1 ? TACK_U8 : sizeof(ctype) == 2 ? TACK_U16 : \
                     sizeof(ctype) == 4 ? TACK_U32 : TACK_U64)
    switch (typenum) {
    case NPY_BOOL:      return TACK_BOOL;
    case NPY_BYTE:      return TACK_I8;
    case NPY_UBYTE:     return TACK_U8;
    case NPY_SHORT:     return SINT(short);
    case NPY_USHORT:    return UINT(unsigned short);
    case NPY_INT:       return SINT(int);
    case NPY_UINT:      return UINT(unsigned int);
    case NPY_LONG:      return SINT(long);
    case NPY_ULONG:     return UINT(unsigned long);
    case NPY_LONGLONG:  return SINT(long long);
    case NPY_ULONGLONG: return UINT(unsigned long long);
    case NPY_FLOAT:     return TACK_F32;
    case NPY_DOUBLE:    return TACK_F64;
    default:            return -1;
    }
#undef SINT
#undef UINT
}

const char *ext_dtype_format(tack_dtype t)
{
    static const char *const formats[TACK_DTYPE_COUNT] = {
        "?", "b", "h", "i", "q", "B", "H", "I", "Q", "f", "d"
    };
    return formats[t];
}

int ext_dtype_from_format(const char *format, Py_ssize_t itemsize)
{
    if (!format)
        return TACK_U8; /* PEP 3118: NULL means unsigned bytes */
    /* Native or little-endian standard sizes; the size comes from itemsize
     * so '=l' (4 bytes) and '@l' (8 bytes) both map right. */
    if (*format == '@' || *format == '=' || *format == '<')
        format++;
    else if (*format == '>' || *format == '!')
        return -1;
    if (!format[0] || format[1])
        return -1; /* structs, counts, ... */
    switch (format[0]) {
    case '?':
        return itemsize == 1 ? TACK_BOOL : -1;
    case 'b': case 'h': case 'i': case 'l': case 'q': case 'n':
        switch (itemsize) {
        case 1: return TACK_I8;
        case 2: return TACK_I16;
        case 4: return TACK_I32;
        case 8: return TACK_I64;
        default: return -1;
        }
    case 'B': case 'H': case 'I': case 'L': case 'Q': case 'N':
        switch (itemsize) {
        case 1: return TACK_U8;
        case 2: return TACK_U16;
        case 4: return TACK_U32;
        case 8: return TACK_U64;
        default: return -1;
        }
    case 'f':
        return itemsize == 4 ? TACK_F32 : -1;
    case 'd':
        return itemsize == 8 ? TACK_F64 : -1;
    default:
        return -1;
    }
}

int ext_dtype_from_object(PyObject *obj, tack_dtype *out)
{
    if (PyObject_TypeCheck(obj, &ext_DType_Type)) {
        *out = ((ext_DTypeObject *)obj)->t;
        return 0;
    }
    if (PyUnicode_Check(obj)) {
        const char *s = PyUnicode_AsUTF8(obj);
        if (!s)
            return -1;
        for (int t = 0; t < TACK_DTYPE_COUNT; t++) {
            if (strcmp(s, py_names[t]) == 0 || strcmp(s, tack_dtype_name((tack_dtype)t)) == 0) {
                *out = (tack_dtype)t;
                return 0;
            }
        }
    }
    /* NumPy's spellings: np.float32, np.dtype('i8'), "float64", float, ... */
    PyArray_Descr *descr = NULL;
    if (PyArray_DescrConverter2(obj, &descr) && descr) {
        int t = PyDataType_ISNOTSWAPPED(descr) ? ext_dtype_from_typenum(descr->type_num) : -1;
        Py_DECREF(descr);
        if (t >= 0) {
            *out = (tack_dtype)t;
            return 0;
        }
    }
    PyErr_Clear();
    PyObject *r = PyObject_Repr(obj);
    if (r) {
        PyErr_Format(PyExc_TypeError,
                     "%U is not a Tack dtype (bool_, i8, i16, i32, i64, u8, u16, "
                     "u32, u64, f32, f64)", r);
        Py_DECREF(r);
    }
    return -1;
}

/* ---- the tack.dtype type --------------------------------------------- */

static PyObject *dtype_repr(PyObject *self)
{
    return PyUnicode_FromFormat("tack.%s", py_names[((ext_DTypeObject *)self)->t]);
}

static PyObject *dtype_str(PyObject *self)
{
    return PyUnicode_FromString(tack_dtype_name(((ext_DTypeObject *)self)->t));
}

static Py_hash_t dtype_hash(PyObject *self)
{
    return (Py_hash_t)0x7ac0 + ((ext_DTypeObject *)self)->t;
}

static PyObject *dtype_richcompare(PyObject *a, PyObject *b, int op)
{
    if (!PyObject_TypeCheck(b, &ext_DType_Type) || (op != Py_EQ && op != Py_NE))
        Py_RETURN_NOTIMPLEMENTED;
    int eq = ((ext_DTypeObject *)a)->t == ((ext_DTypeObject *)b)->t;
    return PyBool_FromLong(op == Py_EQ ? eq : !eq);
}

/* Outside kernels a cast returns the NumPy scalar: tack.f32(3.7) is
 * numpy.float32(3.7). */
static PyObject *dtype_call(PyObject *self, PyObject *args, PyObject *kwargs)
{
    PyArray_Descr *descr = PyArray_DescrFromType(
        ext_dtype_to_typenum(((ext_DTypeObject *)self)->t));
    if (!descr)
        return NULL;
    PyObject *r = PyObject_Call((PyObject *)descr->typeobj, args, kwargs);
    Py_DECREF(descr);
    return r;
}

static PyObject *dtype_get_name(PyObject *self, void *closure)
{
    (void)closure;
    return PyUnicode_FromString(tack_dtype_name(((ext_DTypeObject *)self)->t));
}

static PyObject *dtype_get_itemsize(PyObject *self, void *closure)
{
    (void)closure;
    return PyLong_FromSize_t(tack_dtype_size(((ext_DTypeObject *)self)->t));
}

static PyObject *dtype_get_numpy(PyObject *self, void *closure)
{
    (void)closure;
    return (PyObject *)PyArray_DescrFromType(
        ext_dtype_to_typenum(((ext_DTypeObject *)self)->t));
}

static PyObject *dtype_reduce(PyObject *self, PyObject *unused)
{
    (void)unused;
    return PyUnicode_FromString(py_names[((ext_DTypeObject *)self)->t]);
}

static PyGetSetDef dtype_getset[] = {
    {"name", dtype_get_name, NULL, "The dtype's name: 'f32', 'i64', 'bool', ...", NULL},
    {"itemsize", dtype_get_itemsize, NULL, "Bytes per element.", NULL},
    {"numpy", dtype_get_numpy, NULL, "The equivalent numpy.dtype.", NULL},
    {NULL, NULL, NULL, NULL, NULL}
};

static PyMethodDef dtype_methods[] = {
    {"__reduce__", dtype_reduce, METH_NOARGS, NULL},
    {NULL, NULL, 0, NULL}
};

PyTypeObject ext_DType_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "tack.dtype",
    .tp_basicsize = sizeof(ext_DTypeObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "An element type (tack.f32, tack.i64, ...).  Inside kernels calling\n"
              "it casts; outside it returns the NumPy scalar.",
    .tp_repr = dtype_repr,
    .tp_str = dtype_str,
    .tp_hash = dtype_hash,
    .tp_richcompare = dtype_richcompare,
    .tp_call = dtype_call,
    .tp_getset = dtype_getset,
    .tp_methods = dtype_methods,
};

int ext_dtype_init(PyObject *module)
{
    if (PyType_Ready(&ext_DType_Type) < 0)
        return -1;
    if (PyModule_AddObjectRef(module, "dtype", (PyObject *)&ext_DType_Type) < 0)
        return -1;
    for (int t = 0; t < TACK_DTYPE_COUNT; t++) {
        ext_DTypeObject *d = PyObject_New(ext_DTypeObject, &ext_DType_Type);
        if (!d)
            return -1;
        d->t = (tack_dtype)t;
        dtype_objects[t] = (PyObject *)d; /* the module table keeps this ref */
        if (PyModule_AddObjectRef(module, py_names[t], (PyObject *)d) < 0)
            return -1;
    }
    return 0;
}
