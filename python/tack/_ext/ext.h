/*
 * ext.h - the CPython extension module tack._tack.
 *
 * The extension is a client of the public C API (include/tack.h): it turns
 * Python objects into tack_arg values, answers the library's name lookups
 * from a kernel function's closure, globals and builtins, and maps tack_error
 * statuses to Python exceptions.  One file per concern:
 *
 *   module.c   module init, error mapping, stats/debug/version functions
 *   dtype.c    tack.dtype objects and dtype lookups (NumPy <-> tack)
 *   device.c   tack.Device, tack.device(), the default device
 *   array.c    tack.Array (64-byte aligned C-contiguous storage), empty,
 *              zeros, array, copyto
 *   kernel.c   tack.Kernel: decoration, calls, introspection
 *   args.c     argument conversion for launches (the hot path)
 *   resolve.c  the tack_resolver callback
 *
 * NumPy's C API table is shared by all files through PY_ARRAY_UNIQUE_SYMBOL;
 * only module.c imports it (every other file defines NO_IMPORT_ARRAY first).
 */
#ifndef TACK_EXT_H
#define TACK_EXT_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#define PY_ARRAY_UNIQUE_SYMBOL tack_ext_ARRAY_API
#include <numpy/arrayobject.h>

#include "tack.h"

#if PY_VERSION_HEX < 0x030A0000  /* Python 3.9 */
static inline PyObject *Py_NewRef(PyObject *o) { Py_INCREF(o); return o; }
static inline int PyModule_AddObjectRef(PyObject *m, const char *name, PyObject *v)
{
    Py_INCREF(v);
    if (PyModule_AddObject(m, name, v) < 0) {
        Py_DECREF(v);
        return -1;
    }
    return 0;
}
#endif

/* ---- module.c -------------------------------------------------------- */

extern PyObject *ext_CompileError; /* tack.CompileError */

/* Raises the Python exception for a failed library call; returns NULL. */
PyObject *ext_raise(const tack_error *err);

/* ---- dtype.c --------------------------------------------------------- */

typedef struct {
    PyObject_HEAD
    tack_dtype t;
} ext_DTypeObject;

extern PyTypeObject ext_DType_Type;

int ext_dtype_init(PyObject *module); /* creates tack.f32 etc.; -1 on error */
/* The shared dtype object for t (borrowed reference). */
PyObject *ext_dtype_object(tack_dtype t);
/* tack.f32, "f32", "float32", np.float32, np.dtype('f4'), float ... ->
 * *out; 0 on success, -1 with TypeError set. */
int ext_dtype_from_object(PyObject *obj, tack_dtype *out);
/* NumPy type number -> tack dtype, -1 when Tack has no such dtype. */
int ext_dtype_from_typenum(int typenum);
int ext_dtype_to_typenum(tack_dtype t);
/* Buffer-protocol format (with itemsize) -> tack dtype, or -1. */
int ext_dtype_from_format(const char *format, Py_ssize_t itemsize);
const char *ext_dtype_format(tack_dtype t);

/* ---- device.c -------------------------------------------------------- */

typedef struct {
    PyObject_HEAD
    tack_device *dev;
    int owned; /* made by tack_device_create: freed on dealloc */
} ext_DeviceObject;

extern PyTypeObject ext_DeviceType;

int ext_device_init(PyObject *module);
/* The default device (borrowed reference), made on first use; NULL on error. */
PyObject *ext_default_device(void);
/* None -> default device, a tack.Device, or a spec string; new reference. */
PyObject *ext_device_from_object(PyObject *obj);

PyObject *ext_device_fn(PyObject *self, PyObject *args, PyObject *kwargs);
PyObject *ext_set_default_device(PyObject *self, PyObject *arg);
PyObject *ext_get_default_device(PyObject *self, PyObject *unused);

/* ---- array.c --------------------------------------------------------- */

typedef struct {
    PyObject_HEAD
    void *data;                          /* 64-byte aligned, owned */
    tack_dtype dtype;
    int ndim;
    Py_ssize_t size;                     /* elements */
    Py_ssize_t nbytes;
    int64_t shape[TACK_MAX_NDIM];
    int64_t strides[TACK_MAX_NDIM];      /* bytes, C order */
    Py_ssize_t py_shape[TACK_MAX_NDIM];  /* for the buffer protocol */
    Py_ssize_t py_strides[TACK_MAX_NDIM];
    PyObject *device;                    /* tack.Device */
    PyObject *weakreflist;
} ext_ArrayObject;

extern PyTypeObject ext_ArrayType;

#define ext_Array_Check(o) PyObject_TypeCheck((o), &ext_ArrayType)

PyObject *ext_empty(PyObject *self, PyObject *args, PyObject *kwargs);
PyObject *ext_zeros(PyObject *self, PyObject *args, PyObject *kwargs);
PyObject *ext_array(PyObject *self, PyObject *args, PyObject *kwargs);
PyObject *ext_copyto(PyObject *self, PyObject *args, PyObject *kwargs);

/* ---- kernel.c / resolve.c -------------------------------------------- */

struct ext_KernelObject;

/* What the resolver needs to look names up as seen from one Python function.
 * A kernel owns the contexts of its function and of every device function
 * lowering reached, so the texts handed to the library live as long as the
 * kernel. */
typedef struct ext_resolver_ctx {
    PyObject *func;       /* the Python function whose names are looked up */
    PyObject *source;     /* its dedented source (str), made on demand */
    PyObject *filename;   /* str */
    int first_line;
    struct ext_KernelObject *owner;   /* borrowed: the owner outlives us */
    struct ext_resolver_ctx *next;    /* owner's list */
} ext_resolver_ctx;

typedef struct ext_KernelObject {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    tack_kernel *k;
    PyObject *func;        /* the decorated Python function */
    PyObject *name;        /* str, for messages */
    PyObject *keep;        /* list: objects whose text the library holds */
    ext_resolver_ctx *ctxs;
    PyObject *resolve_error; /* first Python error met while resolving */
    int nparams;
    /* A launch succeeded with debug mode off / on, so the IR template a
     * plain call needs exists: lowering (which calls back into Python
     * through the resolver) will not run, and the GIL may be released. */
    unsigned char lowered[2];
    PyObject *dict;
    PyObject *weakreflist;
} ext_KernelObject;

extern PyTypeObject ext_KernelType;

#define ext_Kernel_Check(o) PyObject_TypeCheck((o), &ext_KernelType)

/* Source text, file and first line of a Python function, into ctx. */
int ext_function_source(PyObject *func, ext_resolver_ctx *ctx);
ext_resolver_ctx *ext_ctx_for(ext_KernelObject *owner, PyObject *func);
void ext_ctx_free_all(ext_KernelObject *owner);
int ext_resolve(void *ctx, const char *name, tack_name *out);

PyObject *ext_kernel_fn(PyObject *self, PyObject *func);
PyObject *ext_func_fn(PyObject *self, PyObject *func);

/* ---- args.c ---------------------------------------------------------- */

/* Holds what one launch's argument conversion borrowed. */
typedef struct {
    Py_buffer views[TACK_MAX_PARAMS];
    int nviews;
    PyObject *device;       /* borrowed: device of the first tack.Array */
    Py_ssize_t max_elems;   /* largest array argument, in elements */
} ext_launch_state;

/* Fills args[0..nargs) from the Python arguments.  0 on success; -1 with an
 * exception set (views already taken are released). */
int ext_convert_args(ext_KernelObject *kern, PyObject *const *objs,
                     Py_ssize_t nargs, tack_arg *args, ext_launch_state *st);
void ext_release_args(ext_launch_state *st);

#endif
