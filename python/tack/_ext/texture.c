/* texture.c - tack.Texture3D: a read-only 3-D array of f32 or f64 that
 * kernels sample with tex.sample(u, v, w) (trilinear, normalized
 * coordinates, clamp to edge; see src/lower/textures.c).  It keeps its data
 * in a tack.Array; a launch passes that array flagged as a texture. */
#define NO_IMPORT_ARRAY
#include "ext.h"

static PyObject *texture_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"data", "dtype", NULL};
    PyObject *data, *dtype = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|O:Texture3D", kwlist, &data, &dtype))
        return NULL;
    /* f64 data stays f64; anything else becomes f32 unless dtype says.  A
     * tack.Array is asked directly: a device array has no host buffer. */
    int is_f64;
    if (ext_Array_Check(data)) {
        is_f64 = ((ext_ArrayObject *)data)->dtype == TACK_F64;
    } else {
        PyObject *np = PyArray_FROM_O(data);
        if (!np)
            return NULL;
        is_f64 = PyArray_TYPE((PyArrayObject *)np) == NPY_FLOAT64;
        Py_DECREF(np);
    }
    PyObject *want = dtype != Py_None ? dtype : ext_dtype_object(is_f64 ? TACK_F64 : TACK_F32);
    PyObject *call_args = Py_BuildValue("(O)", data);
    PyObject *call_kw = call_args ? Py_BuildValue("{s:O}", "dtype", want) : NULL;
    PyObject *arr = call_kw ? ext_array(NULL, call_args, call_kw) : NULL;
    Py_XDECREF(call_args);
    Py_XDECREF(call_kw);
    if (!arr)
        return NULL;
    ext_ArrayObject *a = (ext_ArrayObject *)arr;
    if (a->ndim != 3 || a->vec_width || (a->dtype != TACK_F32 && a->dtype != TACK_F64)) {
        Py_DECREF(arr);
        PyErr_SetString(PyExc_ValueError,
                        "tack.Texture3D needs 3-D data of f32 or f64 values");
        return NULL;
    }
    ext_TextureObject *self = (ext_TextureObject *)type->tp_alloc(type, 0);
    if (!self) {
        Py_DECREF(arr);
        return NULL;
    }
    self->array = arr;
    return (PyObject *)self;
}

static void texture_dealloc(ext_TextureObject *self)
{
    Py_XDECREF(self->array);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *texture_shape_3d(ext_TextureObject *self, void *closure)
{
    (void)closure;
    ext_ArrayObject *a = (ext_ArrayObject *)self->array;
    return Py_BuildValue("(LLL)", (long long)a->shape[0], (long long)a->shape[1],
                         (long long)a->shape[2]);
}

static PyObject *texture_dtype(ext_TextureObject *self, void *closure)
{
    (void)closure;
    PyObject *d = ext_dtype_object(((ext_ArrayObject *)self->array)->dtype);
    Py_XINCREF(d);
    return d;
}

static PyObject *texture_data(ext_TextureObject *self, void *closure)
{
    (void)closure;
    Py_INCREF(self->array);
    return self->array;
}

static PyObject *texture_numpy(ext_TextureObject *self, PyObject *unused)
{
    (void)unused;
    /* Array.numpy() views host memory; a texture's numpy() stays a copy. */
    PyObject *v = ext_Array_numpy(self->array, NULL);
    if (!v || !ext_Array_on_host((ext_ArrayObject *)self->array))
        return v;
    PyObject *c = PyArray_NewCopy((PyArrayObject *)v, NPY_CORDER);
    Py_DECREF(v);
    return c;
}

static PyObject *texture_repr(ext_TextureObject *self)
{
    ext_ArrayObject *a = (ext_ArrayObject *)self->array;
    return PyUnicode_FromFormat("tack.Texture3D(shape_3d=(%lld, %lld, %lld), dtype=%s)",
                                (long long)a->shape[0], (long long)a->shape[1],
                                (long long)a->shape[2], tack_dtype_name(a->dtype));
}

static PyGetSetDef texture_getset[] = {
    {"shape_3d", (getter)texture_shape_3d, NULL, "the three extents", NULL},
    {"dtype", (getter)texture_dtype, NULL, "f32 or f64", NULL},
    {"data", (getter)texture_data, NULL, "the tack.Array holding the texels", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyMethodDef texture_methods[] = {
    {"numpy", (PyCFunction)texture_numpy, METH_NOARGS, "A NumPy copy of the texels."},
    {NULL, NULL, 0, NULL},
};

PyTypeObject ext_TextureType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "tack.Texture3D",
    .tp_basicsize = sizeof(ext_TextureObject),
    .tp_dealloc = (destructor)texture_dealloc,
    .tp_repr = (reprfunc)texture_repr,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Texture3D(data, dtype=None): 3-D texels sampled in kernels with\n"
              "tex.sample(u, v, w): trilinear, coordinates in [0, 1] along axes\n"
              "0, 1, 2 of data, clamped to the edge.  Where\n"
              "Device.hardware_texture_filtering is True (CUDA), f32 textures are\n"
              "filtered by the texture unit, with 8-bit interpolation weights.",
    .tp_methods = texture_methods,
    .tp_getset = texture_getset,
    .tp_new = texture_new,
};
