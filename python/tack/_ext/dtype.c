/*
 * dtype.c - tack.dtype: one shared object per element type (tack.f32 ...)
 * and per vector element type (tack.vec2f ... tack.vec4i: 2-4 components of
 * f32, f64 or i32), and the mappings between Tack dtypes, NumPy type numbers
 * and buffer formats.
 */
#define NO_IMPORT_ARRAY
#include "ext.h"

/* Python attribute names of the dtype objects, in tack_dtype order. */
static const char *const py_names[TACK_DTYPE_COUNT] = {
    "bool_", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "f32", "f64", "f16"
};

static PyObject *dtype_objects[TACK_DTYPE_COUNT];

/* Vector dtypes: components f32 'f', f64 'd', i32 'i'; widths 2-4. */
#define NUM_VEC_COMPONENTS 3
#define NUM_VEC_WIDTHS (EXT_VEC_MAX - EXT_VEC_MIN + 1)
static const tack_dtype vec_components[NUM_VEC_COMPONENTS] = {TACK_F32, TACK_F64, TACK_I32};
/* "vec3f", "vec12d": filled by ext_dtype_init; widths above 4 are not
 * module attributes (tack.vector(n, dtype) returns them), but kernels read
 * the names (src/lower/lower.c). */
static char vec_names[NUM_VEC_COMPONENTS][NUM_VEC_WIDTHS][8];
static PyObject *vec_objects[NUM_VEC_COMPONENTS][NUM_VEC_WIDTHS];

/* Matrix dtypes: rows x cols, 2-16 each, of f32 'f' or f64 'd'; width is
 * TACK_MAT_WIDTH(rows, cols) (tack_arg.vec_width), storage rows*cols
 * components.  2x2, 3x3 and 4x4 are module attributes (tack.mat22f ...);
 * the others come from tack.matrix(rows, cols, dtype), named "mat8x8f" for
 * kernels (src/lower/matrices.c). */
#define NUM_MAT_COMPONENTS 2
#define NUM_MAT_SIDES (TACK_MAX_MAT_SIDE - 1)
#define MAT_NAMED_MAX 4
static char mat_names[NUM_MAT_COMPONENTS][NUM_MAT_SIDES][NUM_MAT_SIDES][12];
static PyObject *mat_objects[NUM_MAT_COMPONENTS][NUM_MAT_SIDES][NUM_MAT_SIDES];

static int mat_named(int rows, int cols) { return rows == cols && rows <= MAT_NAMED_MAX; }

/* Complex dtypes: NumPy's complex64 and complex128, pairs of f32 / f64
 * (width TACK_COMPLEX_WIDTH). */
static const char *const cx_names[2] = {"complex64", "complex128"};
static PyObject *cx_objects[2];

/* Quaternion dtypes: Warp's quat, four f32 / f64 components (x, y, z, w),
 * width TACK_QUAT_WIDTH; kernels read them as quaternions. */
static const char *const quat_names[2] = {"quatf", "quatd"};
static PyObject *quat_objects[2];

static const char *width_name(tack_dtype t, int width);

static int vec_component_index(tack_dtype t)
{
    for (int c = 0; c < NUM_VEC_COMPONENTS; c++)
        if (vec_components[c] == t)
            return c;
    return -1;
}

PyObject *ext_dtype_object(tack_dtype t)
{
    return dtype_objects[t];
}

PyObject *ext_vec_dtype_object(tack_dtype t, int width)
{
    if (width == 0)
        return dtype_objects[t];
    if (width == TACK_COMPLEX_WIDTH || width == TACK_QUAT_WIDTH) {
        int quat = width == TACK_QUAT_WIDTH;
        if (t != TACK_F32 && t != TACK_F64) {
            PyErr_Format(PyExc_TypeError, "there is no %s dtype of %s parts",
                         quat ? "quaternion" : "complex", tack_dtype_name(t));
            return NULL;
        }
        return (quat ? quat_objects : cx_objects)[t == TACK_F64];
    }
    int rows = tack_width_rows(width);
    if (rows) {
        if (!tack_width_valid(width) || (t != TACK_F32 && t != TACK_F64)) {
            PyErr_Format(PyExc_TypeError, "there is no matrix dtype of %s components",
                         tack_dtype_name(t));
            return NULL;
        }
        return mat_objects[t == TACK_F64][rows - 2][tack_width_cols(width) - 2];
    }
    int c = vec_component_index(t);
    if (c < 0 || width < EXT_VEC_MIN || width > EXT_VEC_MAX) {
        PyErr_Format(PyExc_TypeError,
                     "there is no vector dtype of %d %s components (vectors have 2-16 "
                     "f32, f64 or i32 components)", width, tack_dtype_name(t));
        return NULL;
    }
    return vec_objects[c][width - EXT_VEC_MIN];
}

/* Python attribute name: "f32", "bool_", "vec3f". */
static const char *dtype_py_name(const ext_DTypeObject *d)
{
    if (d->width)
        return width_name(d->t, d->width);
    return py_names[d->t];
}

/* "vec3f", "mat33d": a vector or matrix dtype's name. */
static const char *width_name(tack_dtype t, int width)
{
    if (width == TACK_COMPLEX_WIDTH)
        return cx_names[t == TACK_F64];
    if (width == TACK_QUAT_WIDTH)
        return quat_names[t == TACK_F64];
    int rows = tack_width_rows(width);
    if (rows)
        return mat_names[t == TACK_F64][rows - 2][tack_width_cols(width) - 2];
    return vec_names[vec_component_index(t)][width - EXT_VEC_MIN];
}

/* .name and str(): "f32", "bool", "vec3f". */
static const char *dtype_name(const ext_DTypeObject *d)
{
    return d->width ? dtype_py_name(d) : tack_dtype_name(d->t);
}

/* The NumPy type number of elements of t, or of complex numbers of t parts. */
int ext_dtype_typenum(tack_dtype t, int width)
{
    if (width == TACK_COMPLEX_WIDTH)
        return t == TACK_F64 ? NPY_CDOUBLE : NPY_CFLOAT;
    return ext_dtype_to_typenum(t);
}

int ext_dtype_to_typenum(tack_dtype t)
{
    static const int typenums[TACK_DTYPE_COUNT] = {
        NPY_BOOL, NPY_INT8, NPY_INT16, NPY_INT32, NPY_INT64,
        NPY_UINT8, NPY_UINT16, NPY_UINT32, NPY_UINT64, NPY_FLOAT32, NPY_FLOAT64, NPY_HALF
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
    case NPY_HALF:      return TACK_F16;
    default:            return -1;
    }
#undef SINT
#undef UINT
}

const char *ext_dtype_format(tack_dtype t)
{
    static const char *const formats[TACK_DTYPE_COUNT] = {
        "?", "b", "h", "i", "q", "B", "H", "I", "Q", "f", "d", "e"
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
    case 'e':
        return itemsize == 2 ? TACK_F16 : -1;
    default:
        return -1;
    }
}

/* Both lookups; vectors: whether vector dtypes are accepted (for the
 * message; the caller refuses them). */
static int dtype_lookup(PyObject *obj, tack_dtype *out, int *width, int vectors)
{
    *width = 0;
    if (PyObject_TypeCheck(obj, &ext_DType_Type)) {
        *out = ((ext_DTypeObject *)obj)->t;
        *width = ((ext_DTypeObject *)obj)->width;
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
        for (int c = 0; c < NUM_VEC_COMPONENTS; c++) {
            for (int w = 0; w < NUM_VEC_WIDTHS; w++) {
                if (strcmp(s, vec_names[c][w]) == 0) {
                    *out = vec_components[c];
                    *width = w + EXT_VEC_MIN;
                    return 0;
                }
            }
        }
        for (int c = 0; c < 2; c++)
            if (strcmp(s, cx_names[c]) == 0 || strcmp(s, quat_names[c]) == 0) {
                *out = c ? TACK_F64 : TACK_F32;
                *width = strcmp(s, cx_names[c]) == 0 ? TACK_COMPLEX_WIDTH : TACK_QUAT_WIDTH;
                return 0;
            }
        for (int c = 0; c < NUM_MAT_COMPONENTS; c++)
            for (int r = 0; r < NUM_MAT_SIDES; r++)
                for (int k = 0; k < NUM_MAT_SIDES; k++)
                    if (strcmp(s, mat_names[c][r][k]) == 0) {
                        *out = c ? TACK_F64 : TACK_F32;
                        *width = TACK_MAT_WIDTH(r + 2, k + 2);
                        return 0;
                    }
    }
    /* NumPy's spellings: np.float32, np.dtype('i8'), "float64", float, ... */
    PyArray_Descr *descr = NULL;
    if (PyArray_DescrConverter2(obj, &descr) && descr) {
        int t = PyDataType_ISNOTSWAPPED(descr) ? ext_dtype_from_typenum(descr->type_num) : -1;
        if (PyDataType_ISNOTSWAPPED(descr) &&
            (descr->type_num == NPY_CFLOAT || descr->type_num == NPY_CDOUBLE)) {
            *out = descr->type_num == NPY_CFLOAT ? TACK_F32 : TACK_F64;
            *width = TACK_COMPLEX_WIDTH;
            Py_DECREF(descr);
            return 0;
        }
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
                     "u32, u64, f32, f64, f16%s)", r,
                     vectors ? ", vec2f-vec4f, vec2d-vec4d, vec2i-vec4i, mat22f-mat44f, "
                     "mat22d-mat44d, complex64, complex128, quatf, quatd" : "");
        Py_DECREF(r);
    }
    return -1;
}

int ext_dtype_from_object(PyObject *obj, tack_dtype *out)
{
    int width;
    if (dtype_lookup(obj, out, &width, 0) < 0)
        return -1;
    if (width) {
        PyErr_Format(PyExc_TypeError,
                     "tack.%s is a %s dtype; a scalar dtype is needed here",
                     width_name(*out, width), width == TACK_COMPLEX_WIDTH ? "complex"
                     : width == TACK_QUAT_WIDTH ? "quaternion"
                     : tack_width_rows(width) ? "matrix" : "vector");
        return -1;
    }
    return 0;
}

/* tack.vector(length, dtype): the dtype of `length`-component vectors
 * (2-16) of f32, f64 or i32 components, one shared object per pair. */
PyObject *ext_vector_dtype(PyObject *self, PyObject *args, PyObject *kw)
{
    (void)self;
    static char *names[] = {"length", "dtype", NULL};
    int n;
    PyObject *dt;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "iO:vector", names, &n, &dt))
        return NULL;
    tack_dtype t;
    if (ext_dtype_from_object(dt, &t) < 0)
        return NULL;
    if (n < EXT_VEC_MIN || n > EXT_VEC_MAX) {
        PyErr_Format(PyExc_ValueError, "tack.vector: length must be 2-%d, got %d", EXT_VEC_MAX, n);
        return NULL;
    }
    PyObject *r = ext_vec_dtype_object(t, n);
    return r ? Py_NewRef(r) : NULL;
}

/* tack.matrix(rows, cols, dtype): the dtype of rows x cols matrices (2-16
 * each) of f32 or f64 components, one shared object per triple. */
PyObject *ext_matrix_dtype(PyObject *self, PyObject *args, PyObject *kw)
{
    (void)self;
    static char *names[] = {"rows", "cols", "dtype", NULL};
    int rows, cols;
    PyObject *dt;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "iiO:matrix", names, &rows, &cols, &dt))
        return NULL;
    tack_dtype t;
    if (ext_dtype_from_object(dt, &t) < 0)
        return NULL;
    if (rows < 2 || rows > TACK_MAX_MAT_SIDE || cols < 2 || cols > TACK_MAX_MAT_SIDE) {
        PyErr_Format(PyExc_ValueError, "tack.matrix: rows and cols must be 2-%d, got %d x %d",
                     TACK_MAX_MAT_SIDE, rows, cols);
        return NULL;
    }
    if (t != TACK_F32 && t != TACK_F64) {
        PyErr_Format(PyExc_TypeError, "tack.matrix: components are f32 or f64, not %s",
                     tack_dtype_name(t));
        return NULL;
    }
    PyObject *r = ext_vec_dtype_object(t, TACK_MAT_WIDTH(rows, cols));
    return r ? Py_NewRef(r) : NULL;
}

/* "vec7f", "mat33d": the name kernels read a vector or matrix dtype by
 * (a module-level alias of tack.vector(7, tack.f32)); NULL for others. */
const char *ext_dtype_kernel_name(PyObject *obj)
{
    if (!PyObject_TypeCheck(obj, &ext_DType_Type))
        return NULL;
    const ext_DTypeObject *d = (const ext_DTypeObject *)obj;
    if (!d->width || d->width == TACK_COMPLEX_WIDTH)
        return NULL;
    return width_name(d->t, d->width);
}

int ext_dtype_from_object_vec(PyObject *obj, tack_dtype *out, int *width)
{
    return dtype_lookup(obj, out, width, 1);
}

/* ---- the tack.dtype type --------------------------------------------- */

static PyObject *dtype_repr(PyObject *self)
{
    const ext_DTypeObject *d = (const ext_DTypeObject *)self;
    /* Wide vectors are not module attributes: the repr names the call. */
    if (d->width > EXT_VEC_NAMED_MAX && d->width <= EXT_VEC_MAX)
        return PyUnicode_FromFormat("tack.vector(%d, tack.%s)", d->width, py_names[d->t]);
    int rows = tack_width_rows(d->width), cols = tack_width_cols(d->width);
    if (rows && !mat_named(rows, cols))
        return PyUnicode_FromFormat("tack.matrix(%d, %d, tack.%s)", rows, cols, py_names[d->t]);
    return PyUnicode_FromFormat("tack.%s", dtype_py_name((ext_DTypeObject *)self));
}

static PyObject *dtype_str(PyObject *self)
{
    return PyUnicode_FromString(dtype_name((ext_DTypeObject *)self));
}

static Py_hash_t dtype_hash(PyObject *self)
{
    ext_DTypeObject *d = (ext_DTypeObject *)self;
    return (Py_hash_t)0x7ac0 + d->t + 64 * d->width;
}

static PyObject *dtype_richcompare(PyObject *a, PyObject *b, int op)
{
    if (!PyObject_TypeCheck(b, &ext_DType_Type) || (op != Py_EQ && op != Py_NE))
        Py_RETURN_NOTIMPLEMENTED;
    ext_DTypeObject *x = (ext_DTypeObject *)a, *y = (ext_DTypeObject *)b;
    int eq = x->t == y->t && x->width == y->width;
    return PyBool_FromLong(op == Py_EQ ? eq : !eq);
}

/* Outside kernels a vector "constructor" returns a NumPy array of its
 * components: tack.vec3f(1, 2, 3) or tack.vec3f([1, 2, 3]). */
static PyObject *vec_call(ext_DTypeObject *d, PyObject *args, PyObject *kwargs)
{
    const char *name = dtype_py_name(d);
    if (kwargs && PyDict_GET_SIZE(kwargs)) {
        PyErr_Format(PyExc_TypeError, "tack.%s() takes no keyword arguments", name);
        return NULL;
    }
    Py_ssize_t n = PyTuple_GET_SIZE(args);
    int rows = tack_width_rows(d->width), comps = tack_width_components(d->width);
    PyObject *seq;
    if (rows && n == 0) { /* tack.mat33f(): zeros, as in kernels */
        npy_intp dims[2] = {rows, comps / rows};
        return PyArray_ZEROS(2, dims, ext_dtype_to_typenum(d->t), 0);
    }
    if (n == comps || (rows && n == rows))
        seq = args;
    else if (n == 1)
        seq = PyTuple_GET_ITEM(args, 0);
    else
        goto bad;
    PyArray_Descr *descr = PyArray_DescrFromType(ext_dtype_to_typenum(d->t));
    if (!descr)
        return NULL;
    /* Steals descr. */
    PyObject *r = PyArray_FromAny(seq, descr, 0, 0,
                                  NPY_ARRAY_FORCECAST | NPY_ARRAY_ENSURECOPY |
                                  NPY_ARRAY_DEFAULT, NULL);
    if (!r)
        return NULL;
    if (!rows && PyArray_NDIM((PyArrayObject *)r) == 1 && PyArray_DIM((PyArrayObject *)r, 0) == comps)
        return r;
    if (rows && PyArray_SIZE((PyArrayObject *)r) == comps &&
        (PyArray_NDIM((PyArrayObject *)r) == 1 ||
         (PyArray_NDIM((PyArrayObject *)r) == 2 && PyArray_DIM((PyArrayObject *)r, 0) == rows))) {
        /* Row by row: 9 scalars, 3 rows, or a 3x3 nested sequence. */
        npy_intp dims[2] = {rows, comps / rows};
        PyArray_Dims shape = {dims, 2};
        PyObject *m = PyArray_Newshape((PyArrayObject *)r, &shape, NPY_CORDER);
        Py_DECREF(r);
        return m;
    }
    Py_DECREF(r);
bad:
    if (rows) {
        PyErr_Format(PyExc_TypeError,
                     "tack.%s() takes no values (zeros), %d components row by row, %d rows, "
                     "or one %dx%d nested sequence", name, comps, rows, rows, comps / rows);
        return NULL;
    }
    PyErr_Format(PyExc_TypeError,
                 "tack.%s() takes %d components, or one sequence of %d", name, comps, comps);
    return NULL;
}

/* Outside kernels a cast returns the NumPy scalar: tack.f32(3.7) is
 * numpy.float32(3.7). */
static PyObject *dtype_call(PyObject *self, PyObject *args, PyObject *kwargs)
{
    ext_DTypeObject *d = (ext_DTypeObject *)self;
    if (d->width && d->width != TACK_COMPLEX_WIDTH)
        return vec_call(d, args, kwargs);
    PyArray_Descr *descr = PyArray_DescrFromType(ext_dtype_typenum(d->t, d->width));
    if (!descr)
        return NULL;
    PyObject *r = PyObject_Call((PyObject *)descr->typeobj, args, kwargs);
    Py_DECREF(descr);
    return r;
}

static PyObject *dtype_get_name(PyObject *self, void *closure)
{
    (void)closure;
    return PyUnicode_FromString(dtype_name((ext_DTypeObject *)self));
}

static PyObject *dtype_get_itemsize(PyObject *self, void *closure)
{
    (void)closure;
    ext_DTypeObject *d = (ext_DTypeObject *)self;
    return PyLong_FromSize_t(tack_dtype_size(d->t) *
                             (size_t)(d->width ? tack_width_components(d->width) : 1));
}

static PyObject *dtype_get_width(PyObject *self, void *closure)
{
    (void)closure;
    ext_DTypeObject *d = (ext_DTypeObject *)self;
    return PyLong_FromLong(d->width ? tack_width_components(d->width) : 1);
}

static PyObject *dtype_get_component(PyObject *self, void *closure)
{
    (void)closure;
    return Py_NewRef(ext_dtype_object(((ext_DTypeObject *)self)->t));
}

static PyObject *dtype_get_numpy(PyObject *self, void *closure)
{
    (void)closure;
    ext_DTypeObject *d = (ext_DTypeObject *)self;
    PyArray_Descr *descr = PyArray_DescrFromType(ext_dtype_typenum(d->t, d->width));
    if (!descr || !d->width || d->width == TACK_COMPLEX_WIDTH)
        return (PyObject *)descr;
    /* np.dtype((np.float32, (3,))), matrices (3, 3) */
    int rows = tack_width_rows(d->width);
    PyObject *spec = rows ? Py_BuildValue("(N(ii))", (PyObject *)descr, rows,
                                          tack_width_components(d->width) / rows)
                          : Py_BuildValue("(N(i))", (PyObject *)descr,
                                          tack_width_components(d->width));
    if (!spec)
        return NULL;
    PyArray_Descr *sub = NULL;
    int ok = PyArray_DescrConverter(spec, &sub);
    Py_DECREF(spec);
    return ok ? (PyObject *)sub : NULL;
}

static PyObject *dtype_reduce(PyObject *self, PyObject *unused)
{
    (void)unused;
    const ext_DTypeObject *d = (const ext_DTypeObject *)self;
    int rows = tack_width_rows(d->width), cols = tack_width_cols(d->width);
    int wide = d->width > EXT_VEC_NAMED_MAX && d->width <= EXT_VEC_MAX;
    if (wide || (rows && !mat_named(rows, cols))) {
        /* No module attribute names it: pickled as the call that makes it. */
        PyObject *mod = PyImport_ImportModule("tack");
        PyObject *fn = mod ? PyObject_GetAttrString(mod, rows ? "matrix" : "vector") : NULL;
        Py_XDECREF(mod);
        if (!fn)
            return NULL;
        PyObject *comp = ext_dtype_object(d->t);
        return rows ? Py_BuildValue("(N(iiO))", fn, rows, cols, comp)
                    : Py_BuildValue("(N(iO))", fn, d->width, comp);
    }
    return PyUnicode_FromString(dtype_py_name(d));
}

static PyGetSetDef dtype_getset[] = {
    {"name", dtype_get_name, NULL, "The dtype's name: 'f32', 'i64', 'bool', 'vec3f', ...",
     NULL},
    {"itemsize", dtype_get_itemsize, NULL,
     "Bytes per element (for vectors: width * component size).", NULL},
    {"width", dtype_get_width, NULL,
     "Components per element: 2-4 for vector dtypes, rows*cols for matrix dtypes, 1 for "
     "scalar dtypes.", NULL},
    {"component", dtype_get_component, NULL,
     "The scalar component dtype: tack.f32 for tack.vec3f; itself for scalar dtypes.",
     NULL},
    {"numpy", dtype_get_numpy, NULL,
     "The equivalent numpy.dtype (for vectors a subarray dtype such as ('<f4', (3,))).",
     NULL},
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
    .tp_doc = "An element type (tack.f32, tack.i64, ...) or vector element type\n"
              "(tack.vec3f, ...).  Inside kernels calling it casts or builds a vector;\n"
              "outside it returns the NumPy scalar (for vectors a NumPy array of the\n"
              "components).",
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
        d->width = 0;
        dtype_objects[t] = (PyObject *)d; /* the module table keeps this ref */
        if (PyModule_AddObjectRef(module, py_names[t], (PyObject *)d) < 0)
            return -1;
    }
    for (int c = 0; c < NUM_VEC_COMPONENTS; c++) {
        for (int w = 0; w < NUM_VEC_WIDTHS; w++) {
            ext_DTypeObject *d = PyObject_New(ext_DTypeObject, &ext_DType_Type);
            if (!d)
                return -1;
            d->t = vec_components[c];
            d->width = w + EXT_VEC_MIN;
            snprintf(vec_names[c][w], sizeof vec_names[c][w], "vec%d%c", d->width, "fdi"[c]);
            vec_objects[c][w] = (PyObject *)d; /* this table keeps the ref */
            if (d->width <= EXT_VEC_NAMED_MAX &&
                PyModule_AddObjectRef(module, vec_names[c][w], (PyObject *)d) < 0)
                return -1;
        }
    }
    for (int c = 0; c < NUM_MAT_COMPONENTS; c++) {
        for (int r = 2; r <= TACK_MAX_MAT_SIDE; r++) {
            for (int k = 2; k <= TACK_MAX_MAT_SIDE; k++) {
                ext_DTypeObject *d = PyObject_New(ext_DTypeObject, &ext_DType_Type);
                if (!d)
                    return -1;
                d->t = c ? TACK_F64 : TACK_F32;
                d->width = TACK_MAT_WIDTH(r, k);
                char *name = mat_names[c][r - 2][k - 2];
                if (mat_named(r, k))
                    snprintf(name, sizeof mat_names[0][0][0], "mat%d%d%c", r, k, "fd"[c]);
                else
                    snprintf(name, sizeof mat_names[0][0][0], "mat%dx%d%c", r, k, "fd"[c]);
                mat_objects[c][r - 2][k - 2] = (PyObject *)d; /* this table keeps the ref */
                if (mat_named(r, k) && PyModule_AddObjectRef(module, name, (PyObject *)d) < 0)
                    return -1;
            }
        }
    }
    for (int c = 0; c < 2; c++) {
        ext_DTypeObject *d = PyObject_New(ext_DTypeObject, &ext_DType_Type);
        if (!d)
            return -1;
        d->t = c ? TACK_F64 : TACK_F32;
        d->width = TACK_COMPLEX_WIDTH;
        cx_objects[c] = (PyObject *)d; /* the module table keeps this ref */
        if (PyModule_AddObjectRef(module, cx_names[c], (PyObject *)d) < 0)
            return -1;
        ext_DTypeObject *q = PyObject_New(ext_DTypeObject, &ext_DType_Type);
        if (!q)
            return -1;
        q->t = d->t;
        q->width = TACK_QUAT_WIDTH;
        quat_objects[c] = (PyObject *)q; /* this table keeps the ref */
        if (PyModule_AddObjectRef(module, quat_names[c], (PyObject *)q) < 0)
            return -1;
    }
    return 0;
}
