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
 *   source.c   a kernel's or device function's source text
 *   template.c @tack.device_class, class tokens and their retirement
 *   cache.c    the disk cache's administration (python -m tack cache ...)
 *   generate.c _generate: a variant's code as text (tack.cuda.compile)
 *   precompile.c tack.precompile: several calls' variants compiled together
 *   interop.c  arrays shared with other libraries: DLPack, the array
 *              interfaces (NumPy's, CUDA's), tack.asarray, tack.from_dlpack
 *   stream.c   tack.Stream and tack.Event
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
static inline PyObject *Py_XNewRef(PyObject *o) { Py_XINCREF(o); return o; }
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

/* A scalar dtype (tack.f32: t = TACK_F32, width = 0) or a vector element
 * dtype (tack.vec3f: t = TACK_F32, the component, width = 3).  width follows
 * tack_arg.vec_width: 0 for scalars; Python's .width reads 1 for them. */
typedef struct {
    PyObject_HEAD
    tack_dtype t;
    int width;
} ext_DTypeObject;

extern PyTypeObject ext_DType_Type;

#define EXT_VEC_MIN 2
#define EXT_VEC_MAX TACK_MAX_VEC_WIDTH /* tack.vector(n, dtype); tack.vecNx names up to 4 */
#define EXT_VEC_NAMED_MAX 4

int ext_dtype_init(PyObject *module); /* creates tack.f32 etc.; -1 on error */
/* The shared dtype object for t (borrowed reference). */
PyObject *ext_dtype_object(tack_dtype t);
/* The shared dtype object for `width`-component vectors of t (width 0: the
 * scalar dtype); borrowed, NULL with TypeError when no such dtype exists
 * (vectors have f32, f64 or i32 components). */
PyObject *ext_vec_dtype_object(tack_dtype t, int width);
/* tack.f32, "f32", "float32", np.float32, np.dtype('f4'), float ... ->
 * *out; 0 on success, -1 with TypeError set (also for vector dtypes). */
int ext_dtype_from_object(PyObject *obj, tack_dtype *out);
/* As ext_dtype_from_object, and also tack.vec3f / "vec3f": *out is the
 * component and *width the width (0 for scalar dtypes). */
int ext_dtype_from_object_vec(PyObject *obj, tack_dtype *out, int *width);
/* tack.vector(length, dtype) */
PyObject *ext_vector_dtype(PyObject *self, PyObject *args, PyObject *kw);
PyObject *ext_matrix_dtype(PyObject *self, PyObject *args, PyObject *kw);
/* "vec7f", "mat33f" for a vector or matrix dtype object, else NULL. */
const char *ext_dtype_kernel_name(PyObject *obj);
/* NumPy type number -> tack dtype, -1 when Tack has no such dtype. */
int ext_dtype_from_typenum(int typenum);
int ext_dtype_to_typenum(tack_dtype t);
int ext_dtype_typenum(tack_dtype t, int width); /* complex: NPY_CFLOAT/CDOUBLE */
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
/* tack.synchronize(device=None): waits for work queued on device, or on
 * every device opened so far. */
PyObject *ext_synchronize(PyObject *self, PyObject *args, PyObject *kwargs);
/* tack.set_num_threads(n) / get_num_threads(): the shared CPU device's pool. */
PyObject *ext_set_num_threads(PyObject *self, PyObject *arg);
PyObject *ext_get_num_threads(PyObject *self, PyObject *unused);

/* ---- stream.c -------------------------------------------------------- */

/* Adds tack.Stream and tack.Event; -1 on error. */
int ext_stream_init(PyObject *module);

/* ---- array.c --------------------------------------------------------- */

/* Arrays of vectors (dtype tack.vec3f ...) have vec_width 2-4 and a logical
 * shape shape[0..ndim) of at most TACK_MAX_NDIM - 1 dimensions; the storage
 * has one more, shape[ndim] == vec_width with strides[ndim] the component
 * size, and that storage shape is what tack_arg, the buffer protocol and
 * numpy() see.  dtype is then the component type. */
typedef struct {
    PyObject_HEAD
    void *data;                          /* 64-byte aligned, owned unless base */
    tack_dtype dtype;                    /* element, or vector component */
    int vec_width;                       /* 0: scalars; 2-4: vectors */
    int ndim;                            /* logical dimensions */
    Py_ssize_t size;                     /* logical elements */
    Py_ssize_t nbytes;
    int64_t shape[TACK_MAX_NDIM];        /* storage shape (ndim + !!vec_width) */
    int64_t strides[TACK_MAX_NDIM];      /* bytes, C order */
    Py_ssize_t py_shape[TACK_MAX_NDIM];  /* for the buffer protocol */
    Py_ssize_t py_strides[TACK_MAX_NDIM];
    PyObject *device;                    /* tack.Device */
    PyObject *base;    /* NULL: Tack owns data; else the object that keeps
                          another library's memory alive (interop.c) */
    int readonly;      /* the producer's memory may not be written */
    PyObject *weakreflist;
    PyObject *grad;    /* requires_grad: its gradient, an Array like it (autodiff) */
} ext_ArrayObject;

extern PyTypeObject ext_ArrayType;

#define ext_Array_Check(o) PyObject_TypeCheck((o), &ext_ArrayType)
/* Dimensions of the storage: ndim, plus one for arrays of vectors. */
#define ext_Array_STORAGE_NDIM(a) ((a)->ndim + ((a)->vec_width ? 1 : 0))

PyObject *ext_empty(PyObject *self, PyObject *args, PyObject *kwargs);
PyObject *ext_zeros(PyObject *self, PyObject *args, PyObject *kwargs);
PyObject *ext_array(PyObject *self, PyObject *args, PyObject *kwargs);
PyObject *ext_copyto(PyObject *self, PyObject *args, PyObject *kwargs);
/* Host memory (the CPU) or a device's; whole-array copies to and from a
 * host buffer of a->nbytes, through the device for device memory.  -1 with
 * an exception set on failure. */
int ext_Array_on_host(const ext_ArrayObject *a);
/* An array over memory Tack does not own (C-contiguous, aligned: the
 * caller checked): `data` is a host pointer or a device handle of
 * `device`; shape is the logical shape (vectors: without the width).
 * Holds a reference to base until it is deallocated. */
ext_ArrayObject *ext_Array_wrap(PyObject *device, void *data, tack_dtype dtype, int vec_width,
                                int ndim, const int64_t *shape, int readonly, PyObject *base);
/* Array.numpy(): a view on the host, a copy of device memory. */
PyObject *ext_Array_numpy(PyObject *self, PyObject *unused);
int ext_Array_write(ext_ArrayObject *a, const void *src);
int ext_Array_read(const ext_ArrayObject *a, void *dst);

/* ---- kernel.c / resolve.c -------------------------------------------- */

struct ext_KernelObject;
struct ext_resolver_ctx;

/* Where resolver contexts live, with the texts handed to the library: a
 * kernel's home lasts as long as the kernel; a launch's home (contexts for
 * template-class methods and what they call) lasts as long as the launch,
 * so a per-call class leaves nothing behind. */
typedef struct ext_ctx_home {
    struct ext_resolver_ctx *ctxs;
    PyObject *keep;                 /* list: objects whose text the library holds */
    struct ext_KernelObject *kern;  /* borrowed: receives resolve errors */
} ext_ctx_home;

/* What the resolver needs to look names up as seen from one Python function,
 * or (cls set, func NULL) the methods of a @tack.device_class class. */
typedef struct ext_resolver_ctx {
    PyObject *func;       /* the Python function whose names are looked up */
    PyObject *cls;        /* borrowed: a template class whose methods are asked */
    PyObject *source;     /* its dedented source (str), made on demand */
    PyObject *filename;   /* str */
    int first_line;
    ext_ctx_home *home;   /* borrowed: the home outlives us */
    struct ext_resolver_ctx *next;    /* home's list */
} ext_resolver_ctx;

typedef struct ext_KernelObject {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    tack_kernel *k;
    PyObject *func;        /* the decorated Python function */
    PyObject *name;        /* str, for messages */
    ext_ctx_home home;     /* the contexts of its function and device functions */
    PyObject *resolve_error; /* first Python error met while resolving */
    int nparams;
    PyObject *dict;
    PyObject *weakreflist;
    struct ext_warm *warm;  /* warm.c: the last simple call's layout, or NULL */
    int warm_misses, warm_backoff, warm_wait;
    /* Has arrays it is not passed (python/tack/_allocations.py): ones it
     * makes before its launch, or reads by name from its module; a call
     * without them goes through _allocations.call, which adds them. */
    int adds_args;
} ext_KernelObject;

extern PyTypeObject ext_KernelType;
int ext_kernel_init(void); /* the variant key type */

#define ext_Kernel_Check(o) PyObject_TypeCheck((o), &ext_KernelType)

/* source.c: the source text, file and first line of a Python function,
 * into ctx: text handed over (__tack_source__), inspect's (files and
 * linecache), or python -c's. */
int ext_function_source(PyObject *func, ext_resolver_ctx *ctx);
/* 0 when text defines func (ValueError otherwise): checked at decoration. */
int ext_check_source(PyObject *func, PyObject *text);
/* -1 with a TypeError naming the lambda's file:line when func is one. */
int ext_refuse_lambda(PyObject *func, const char *what);
ext_resolver_ctx *ext_ctx_for(ext_ctx_home *home, PyObject *func);
void ext_ctx_free_all(ext_ctx_home *home);
int ext_resolve(void *ctx, const char *name, tack_name *out);

/* Raises a failed launch's (or generation's) error, chained to the Python
 * error met while resolving names, if any; returns NULL. */
PyObject *ext_raise_kernel_error(ext_KernelObject *kern, tack_status s, tack_error *err);
PyObject *ext_set_tape(PyObject *self, PyObject *tape); /* _tack._set_tape */
PyObject *ext_kernel_fn(PyObject *self, PyObject *args, PyObject *kwargs);
/* Adds one kernel's counters to a tack.stats()["kernels"] entry. */
int ext_kernel_stats_into(PyObject *dict, const tack_kernel_stats *s);
/* Binds a call's positional and keyword arguments to the kernel's
 * parameters by name, as Python binds a function's: bound[i] (borrowed) is
 * parameter i's argument.  A keyword name equal (same object) to `skip` is
 * left out (inspect_*'s device=).  0, or -1 with a TypeError naming the
 * kernel and the parameter (too many, unknown, duplicate or missing). */
int ext_bind_args(ext_KernelObject *kern, PyObject *const *args, Py_ssize_t nargs,
                  PyObject *kwnames, PyObject *const *kwvalues, PyObject *skip,
                  PyObject **bound);

/* ---- texture.c -------------------------------------------------------- */

typedef struct {
    PyObject_HEAD
    PyObject *array; /* ext_ArrayObject: 3-D f32 or f64 */
} ext_TextureObject;

extern PyTypeObject ext_TextureType;
#define ext_Texture_Check(o) PyObject_TypeCheck(o, &ext_TextureType)
PyObject *ext_func_fn(PyObject *self, PyObject *args, PyObject *kwargs);

/* ---- args.c ---------------------------------------------------------- */

/* One template instance converted for one launch (args.c). */
typedef struct ext_tmpl_block ext_tmpl_block;

/* Holds what one launch's argument conversion borrowed. */
typedef struct {
    Py_buffer views[TACK_MAX_PARAMS];
    int nviews;
    PyObject *device;       /* borrowed: device of the first tack.Array */
    ext_tmpl_block *blocks; /* template instances' structs, freed after */
    ext_ctx_home home;      /* resolver contexts of template methods */
    /* What keeps other libraries' arrays (and their devices) alive during
     * the launch: no allocation, so the protocols cost the launch little. */
    PyObject *owners[2 * TACK_MAX_PARAMS];
    int nowners;
    /* Another library's device memory is an argument: its owner reads it
     * on a stream of its own, so the launch is waited for (kernel.c). */
    int foreign_device;
} ext_launch_state;

void ext_launch_init(ext_launch_state *st, ext_KernelObject *kern);
/* Fills args[0..nargs) from the Python arguments.  0 on success; -1 with an
 * exception set (what was taken is released). */
int ext_convert_args(ext_KernelObject *kern, PyObject *const *objs,
                     Py_ssize_t nargs, tack_arg *args, ext_launch_state *st);
void ext_release_args(ext_launch_state *st);

/* A type's version tag, 0 when it has none: it changes whenever the class
 * or a base changes and is never reused, so (type, tag) memos of what a
 * type's instances are (args.c, interop.c) cannot match a changed or
 * another type. */
static inline unsigned int ext_type_tag(PyTypeObject *t)
{
    return PyType_HasFeature(t, Py_TPFLAGS_VALID_VERSION_TAG) ? t->tp_version_tag : 0;
}

/* kernel.c: an error record with nothing in it, for a launch to fill. */
void ext_error_clear(tack_error *err);
/* kernel.c: what a kernel returned, as Python values (None for nothing). */
PyObject *ext_results_to_python(const tack_results *r);

/* ---- warm.c: repeated calls with one layout ---------------------------- */

typedef struct ext_warm ext_warm;
/* 1 when the call was taken (*result: its value, or NULL with the error
 * set); 0 when it must take the ordinary path. */
int ext_warm_call(ext_KernelObject *kern, PyObject *const *objs, Py_ssize_t nargs,
                  PyObject **result);
/* An ordinary call's converted arguments, when the learned layout has
 * arguments only conversion reads (another library's arrays): 1 when
 * they have that layout and ran (*status says how). */
int ext_warm_converted_call(ext_KernelObject *kern, const tack_arg *targs, Py_ssize_t nargs,
                            PyObject *device, tack_results *results, tack_error *err,
                            tack_status *status);
/* After a successful ordinary call, before its arguments are released:
 * remembers its layout when it can take the warm path. */
void ext_warm_learn(ext_KernelObject *kern, PyObject *const *objs, Py_ssize_t nargs,
                    const tack_arg *targs, PyObject *device, const ext_launch_state *st);
void ext_warm_forget(ext_KernelObject *kern);

/* ---- interop.c ------------------------------------------------------- */

/* An array another library produced, as one of the protocols describes it:
 * DLPack (__dlpack__, or a capsule), __cuda_array_interface__ or
 * __array_interface__. */
typedef enum {
    EXT_FOREIGN_DLPACK = 1,      /* a "dltensor" capsule (DLPack 0.x) */
    EXT_FOREIGN_DLPACK_VERSIONED, /* "dltensor_versioned" (DLPack 1.x) */
    EXT_FOREIGN_CUDA_INTERFACE,
    EXT_FOREIGN_ARRAY_INTERFACE
} ext_foreign_protocol;

typedef struct {
    ext_foreign_protocol protocol;
    int device_type;   /* DLPack's codes: kDLCPU (host memory), kDLCUDA, ... */
    int device_id;
    uint64_t address;  /* first element (byte offsets applied) */
    tack_dtype dtype;
    int ndim;
    int64_t shape[TACK_MAX_NDIM];
    int64_t strides[TACK_MAX_NDIM]; /* bytes, always filled */
    int strides_given; /* the producer gave strides (else C order) */
    int readonly;
    int has_stream;    /* __cuda_array_interface__: writes may be in flight */
    int64_t stream;
    PyObject *owner;   /* new reference: keeps the memory alive; for DLPack
                          its release calls the producer's deleter */
} ext_foreign;

/* 1: obj speaks one of the protocols and *f describes it (f->owner set);
 * 0: it speaks none (nothing set); -1: an exception is set. */
int ext_foreign_parse(PyObject *obj, ext_foreign *f);
/* The same for a kernel argument, read on every call: what stays true of a
 * producer is remembered, and PyTorch's CPU tensors are read through their
 * own accessors rather than DLPack. */
int ext_foreign_parse_arg(PyObject *obj, ext_foreign *f);
/* torch.Tensor once one was met (kernel arguments look for it early). */
extern PyTypeObject *ext_torch_tensor;
/* Whether f's memory is host memory (the CPU reads it). */
int ext_foreign_on_host(const ext_foreign *f);
/* Whether f's memory is C-contiguous. */
int ext_foreign_contiguous(const ext_foreign *f);
/* The tack.Device for a foreign device (new reference), or NULL with
 * RuntimeError naming the device when Tack has none such here; `who`
 * starts the message ("tack.from_dlpack()"). */
PyObject *ext_foreign_device(const ext_foreign *f, const char *who);
/* Waits for f's producer when it said writes may be in flight. */
int ext_foreign_sync(const ext_foreign *f, PyObject *device);
/* What tack_arg.data holds for f's memory on device (a host pointer, or a
 * wrapped device address); NULL with an exception. */
void *ext_foreign_handle(const ext_foreign *f, PyObject *device);
/* For tack.array(): an Array sharing obj's memory when obj is a DLPack or
 * __cuda_array_interface__ producer; None (new reference) when it is
 * neither; NULL on error. */
PyObject *ext_share_foreign(PyObject *obj);

PyObject *ext_asarray(PyObject *self, PyObject *args, PyObject *kwargs);
PyObject *ext_from_dlpack(PyObject *self, PyObject *obj);
PyObject *ext_describe_foreign(PyObject *self, PyObject *obj);
/* tack.Array's protocol members (getters and methods). */
PyObject *ext_array_interface(PyObject *self, void *closure);
PyObject *ext_cuda_array_interface(PyObject *self, void *closure);
PyObject *ext_array_dlpack(PyObject *self, PyObject *args, PyObject *kwargs);
PyObject *ext_array_dlpack_device(PyObject *self, PyObject *unused);

/* ---- generate.c ------------------------------------------------------ */

/* precompile(calls, device=None) (precompile.c). */
PyObject *ext_precompile(PyObject *self, PyObject *args, PyObject *kwargs);

/* _generate(kernel, target, args) -> str (tack_kernel_generate). */
PyObject *ext_generate(PyObject *self, PyObject *const *args, Py_ssize_t nargs);

/* ---- template.c ------------------------------------------------------ */

PyObject *ext_device_class_fn(PyObject *self, PyObject *cls);
/* 1 when o is an instance of a @tack.device_class class, else 0. */
int ext_is_device_class(PyObject *o);
/* The class's token, made on first use; 0 with an exception on error. */
uint64_t ext_class_token(PyObject *cls);
/* ---- cache.c --------------------------------------------------------- */

/* Adds the _cache_* functions and gives the disk cache Python's version
 * (before any kernel can open it); -1 on error. */
int ext_cache_init(PyObject *module);

#endif
