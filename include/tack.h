/*
 * tack.h - the public C API of libtack.
 *
 * Tack compiles compute kernels written in a subset of Python syntax.  A
 * kernel is parsed when it is created, lowered to an IR template on its first
 * launch, and compiled once per variant (one combination of the facts baked
 * into machine code: argument types, baked-in array dimensions, whether the
 * arrays overlap).  Variants are kept per device; a warm launch only derives
 * the variant key and runs the code.
 *
 * Usage from C:
 *
 *     tack_error err;
 *     tack_device *dev = tack_device_get("cpu", &err);
 *     tack_kernel *k = tack_kernel_create(src, "scale.py", 1, NULL, NULL, &err);
 *     tack_arg args[3] = { tack_arg_array(x, TACK_F32, 1, shape, 0),
 *                          tack_arg_array(out, TACK_F32, 1, shape, 1),
 *                          tack_arg_float(2.0) };
 *     if (tack_kernel_launch(k, dev, args, 3, &err) != TACK_OK) puts(err.message);
 *
 * Every function that can fail returns a tack_status and fills a tack_error;
 * the library never exits or aborts on a caller's mistake.  A refused launch
 * writes nothing to any array.
 */
#ifndef TACK_H
#define TACK_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TACK_MAX_NDIM 8
#define TACK_MAX_PARAMS 64

typedef enum tack_status {
    TACK_OK = 0,
    TACK_ERR_COMPILE,  /* kernel source the language does not accept */
    TACK_ERR_TYPE,     /* an argument of the wrong kind or dtype */
    TACK_ERR_VALUE,    /* an argument with a bad value (range, layout, ...) */
    TACK_ERR_INDEX,    /* an out-of-bounds access: a launch refused before it
                          ran, or found in debug mode */
    TACK_ERR_INTERNAL, /* a bug in Tack: a verifier failure, LLVM error */
    TACK_ERR_NOMEM,
    TACK_ERR_DEVICE    /* a device or its driver is missing or failed: the
                          message names the call and the driver's error */
} tack_status;

typedef struct tack_error {
    tack_status status;
    char message[2048]; /* full text, names kernel, parameter or file:line */
    char filename[512]; /* for compile errors: the user's file */
    int lineno;         /* for compile errors: 1-based line in that file */
    int col;            /* 1-based column, 0 when unknown */
} tack_error;

/* Element types.  Values are stable: they appear in cache keys.
 * TACK_F16 (IEEE binary16) is a storage type only: an element read from
 * an f16 array is an f32 value, and a value stored into one is rounded to
 * the nearest half (ties to even).  Arrays of vectors and textures cannot
 * hold it, and atomics refuse it. */
typedef enum tack_dtype {
    TACK_BOOL = 0,
    TACK_I8, TACK_I16, TACK_I32, TACK_I64,
    TACK_U8, TACK_U16, TACK_U32, TACK_U64,
    TACK_F32, TACK_F64,
    TACK_F16,
    TACK_DTYPE_COUNT
} tack_dtype;

const char *tack_dtype_name(tack_dtype t); /* "f32", "i64", "bool", ... */
size_t tack_dtype_size(tack_dtype t);      /* bytes per element */
/* Parses a name from tack_dtype_name; returns -1 when unknown. */
int tack_dtype_from_name(const char *name);

/* ---- devices --------------------------------------------------------- */

typedef struct tack_device tack_device;

/* The shared device for a spec ("cpu"): the same object on every call, so
 * its compiled variants survive switching devices away and back. */
tack_device *tack_device_get(const char *spec, tack_error *err);
/* A new device with options and an empty variant cache.  num_threads <= 0
 * means one per core; a count (1 to 256) is for a device with a thread pool
 * (the CPU), TACK_ERR_VALUE elsewhere.  Free it with tack_device_free. */
tack_device *tack_device_create(const char *spec, int num_threads, tack_error *err);
void tack_device_free(tack_device *dev); /* ignores shared devices */
/* The canonical spec: "cpu", "opencl:0". */
const char *tack_device_name(const tack_device *dev);
int tack_device_num_threads(const tack_device *dev); /* compute units off the CPU */
/* Changes a CPU device's thread count (1 to 256, counting the launching
 * thread) in place: its compiled variants stay.  A launch running on
 * another thread finishes first; launches after it use the new count.
 * TACK_ERR_VALUE for a count out of range or a device without a thread
 * pool.  The shared "cpu" device starts with TACK_NUM_THREADS threads when
 * that is set (one per core otherwise). */
tack_status tack_device_set_num_threads(tack_device *dev, int num_threads, tack_error *err);
/* What the device's compiled code is for, e.g. the CPU's LLVM target
 * "x86_64-pc-linux-gnu:znver3:+avx2,..." (triple:cpu:features), or a GPU
 * device's name, driver and options; NULL when the backend names none. */
const char *tack_device_target(const tack_device *dev);
/* The device in words: its name, platform and driver. */
const char *tack_device_description(const tack_device *dev);
/* 1 when the device runs on host memory (NumPy arrays and plain pointers
 * run in place); 0 when arrays must live in its memory. */
int tack_device_host_memory(const tack_device *dev);
/* 1 when tex.sample on f32 textures uses the GPU's texture unit (CUDA),
 * whose trilinear weights have 8 fractional bits: results then differ from
 * the exact filter by up to about 1/256 of the neighbouring texels'
 * differences.  0: every sample is exact in the texture's precision. */
int tack_device_hardware_texture_filtering(const tack_device *dev);

/* Device memory.  A handle from tack_device_alloc goes into tack_arg.data
 * with tack_arg.device set to the device.  Allocations larger than the
 * device allows fail with TACK_ERR_NOMEM naming the limit.  Copies are
 * synchronous; offsets and sizes are in bytes. */
void *tack_device_alloc(tack_device *dev, size_t bytes, tack_error *err);
void tack_device_free_mem(tack_device *dev, void *handle);
tack_status tack_device_write(tack_device *dev, void *handle, size_t offset, const void *src,
                              size_t n, tack_error *err);
tack_status tack_device_read(tack_device *dev, const void *handle, size_t offset, void *dst,
                             size_t n, tack_error *err);

/* Foreign memory: the handle for `bytes` at `address`, memory another
 * library allocated on dev (a CUDA device pointer from PyTorch or CuPy;
 * for a host-memory device, a host pointer), to put in tack_arg.data with
 * tack_arg.device set to dev.  Tack never frees it: the caller keeps the
 * memory alive while Tack uses it and does not pass the handle to
 * tack_device_free_mem.  TACK_ERR_VALUE for a device whose handles are not
 * addresses (OpenCL's are cl_mem objects). */
void *tack_device_wrap_mem(tack_device *dev, uint64_t address, size_t bytes, tack_error *err);
/* Waits until all work queued on the device has finished, other libraries'
 * work in the same context included (the CUDA context, the OpenCL queue);
 * nothing to wait for on the CPU.  A consumer of another library's arrays
 * calls it when the producer says its writes may still be in flight. */
tack_status tack_device_synchronize(tack_device *dev, tack_error *err);

/* ---- streams and events ---------------------------------------------- */

/* A launch on a device whose arrays are all in its memory may return once
 * queued (OpenCL, CUDA, HIP, Level Zero); copies (tack_device_read, tack_device_write) and
 * synchronization wait for it, and a failure the device reports later
 * names its kernel there.  Devices that run each launch to completion
 * (the CPU) take streams and events too, so one program runs everywhere.
 *
 * A stream is a queue of its own on dev: launches on it run in order after
 * each other, independently of the device's other queues.  A copy
 * (tack_device_read, tack_device_write) while a stream of dev is the
 * calling thread's current one (tack_stream_set_current) is queued on
 * that stream after its work and waits for it alone; otherwise copies wait
 * for every queue of the device.  An event marks the work queued on its
 * stream so far. */
typedef struct tack_stream tack_stream;
typedef struct tack_event tack_event;
tack_stream *tack_stream_create(tack_device *dev, tack_error *err);
/* A stream over another library's stream on dev (a CUstream or hipStream_t
 * as an integer: CuPy's Stream.ptr, PyTorch's cuda_stream): launches on it
 * are ordered with that library's work there.  Freeing it leaves their
 * stream alone.  TACK_ERR_VALUE where dev's streams are not another
 * library's (OpenCL, the CPU). */
tack_stream *tack_stream_wrap(tack_device *dev, uint64_t handle, tack_error *err);
/* The driver's stream handle of s (s NULL: of dev's own queue), for
 * another library to queue its work on; 0 where dev has none to share. */
uint64_t tack_stream_handle(tack_device *dev, const tack_stream *s);
/* Waits for the stream's work, then frees it. */
void tack_stream_free(tack_stream *s);
tack_device *tack_stream_device(const tack_stream *s);
/* The calling thread's current stream (NULL: each device's own queue);
 * launches of this thread on the stream's device go on it.  Returns the
 * one it replaces. */
tack_stream *tack_stream_set_current(tack_stream *s);
tack_stream *tack_stream_current(void);
tack_status tack_stream_synchronize(tack_stream *s, tack_error *err);
/* An event after the work queued on s so far (s NULL: the device's own
 * queue of dev; dev is ignored when s is given). */
tack_event *tack_event_record(tack_device *dev, tack_stream *s, tack_error *err);
/* Work queued on s after this call waits for e first. */
tack_status tack_stream_wait_event(tack_stream *s, tack_event *e, tack_error *err);
tack_status tack_event_synchronize(tack_event *e, tack_error *err);
/* Milliseconds from start to end, by the device's clock (the host's on
 * devices that run each launch to completion); both on one device. */
tack_status tack_event_elapsed(tack_event *start, tack_event *end, double *ms, tack_error *err);
void tack_event_free(tack_event *e);

/* ---- kernels and the names they use ---------------------------------- */

/* What an outside name in kernel source refers to.  The host (the Python
 * extension, or a C program) answers through a resolver callback.  Values
 * are stable: they are part of the disk cache's digests. */
typedef enum tack_name_kind {
    TACK_NAME_UNBOUND = 0, /* the host has no binding: Tack's defaults apply */
    TACK_NAME_MODULE,      /* a module: text holds "tack", "math" or "numpy" */
    TACK_NAME_BUILTIN,     /* a Python builtin: text holds its name; or a
                              function of math or numpy bound to the name
                              (from math import log1p): "math.log1p" */
    TACK_NAME_INT,         /* a constant inlined by value */
    TACK_NAME_FLOAT,
    TACK_NAME_BOOL,
    TACK_NAME_FUNC,        /* a device function: text holds its source */
    /* The two answers below end the lookup: the defaults are not asked,
     * so a user's own `max` is never taken for the builtin.  Using the
     * name is a compile error. */
    TACK_NAME_OTHER,       /* bound to a value kernels cannot use (a plain
                              function, a string, ...): text, or NULL,
                              says what it is and how to fix it, e.g. "a
                              plain Python function, which kernels cannot
                              call: decorate it with @tack.func" */
    TACK_NAME_UNDEFINED,   /* defined nowhere, builtins included: for a
                              host that does the whole lookup, as Python's
                              does (closure, globals, builtins) */
    TACK_NAME_TABLE,       /* a table of numbers (Python: a module-level
                              tuple, nested for 2-D), inlined by value:
                              table_ndim, table_shape, and table_ints or
                              table_floats */
    TACK_NAME_STRUCT       /* a record type, called in kernels to make one:
                              text holds its layout, "Name{field:dtype,...}"
                              with a nested record's field written
                              "field:Inner{...}" and dtypes named as Tack's
                              ("f32", "vec3f", "mat22f") */
} tack_name_kind;

/* The most numbers a TACK_NAME_TABLE may hold; a larger one is refused. */
#define TACK_MAX_TABLE_ELEMENTS 1024

typedef struct tack_name {
    tack_name_kind kind;
    int64_t i;            /* TACK_NAME_INT / BOOL value */
    int is_unsigned;      /* TACK_NAME_INT: value stored in u */
    uint64_t u;
    double f;             /* TACK_NAME_FLOAT value */
    const char *text;     /* MODULE/BUILTIN name, FUNC source, OTHER description */
    const char *filename; /* FUNC: file of the source */
    int first_line;       /* FUNC: line of the source's first line */
    void *func_ctx;       /* FUNC: resolver context for names inside it */
    /* TABLE: 1 or 2 dimensions, each at least 1, and the numbers in row
     * order: integers (i64) in table_ints, or, when any is a float, all of
     * them in table_floats (the other pointer NULL). */
    int table_ndim;
    int64_t table_shape[2];
    const int64_t *table_ints;
    const double *table_floats;
} tack_name;

/* Looks up `name` as seen from the code that owns `ctx`.  Returns 0 and
 * fills *out, or returns -1 with *out left UNBOUND when the host has no
 * binding for it; then Tack's defaults apply (the modules tack, math,
 * numpy as numpy and np, and the builtins abs, min, max, int, float, bool,
 * round, len, range).  A name the host binds to something Tack cannot use
 * must be answered TACK_NAME_OTHER, not left UNBOUND: the defaults would
 * otherwise stand in for the host's own binding (Python's lookup order:
 * local names, then closure and globals, and only then builtins).  Text
 * pointers must stay valid until the lowering that asked has finished. */
typedef int (*tack_resolver)(void *ctx, const char *name, tack_name *out);

typedef struct tack_kernel tack_kernel;

/* Parses kernel source text (one `def`).  `first_line` is the line of the
 * `def` in `filename`, so errors point at the user's file.  A NULL resolver
 * knows the modules tack and math and Python's builtins. */
tack_kernel *tack_kernel_create(const char *source, const char *filename,
                                int first_line, tack_resolver resolver,
                                void *resolver_ctx, tack_error *err);
/* Frees the kernel and every variant compiled for it on every device. */
void tack_kernel_free(tack_kernel *k);
/* Reverse-mode automatic differentiation (docs/autodiff.md): k's adjoint
 * kernel, made on first use and owned by k.  Its parameters are k's, then
 * one gradient per parameter in the same order (a scalar's is ignored):
 * it adds d(loss)/d(input) into the inputs' gradients, reading the
 * outputs' gradients.  A kernel that returns values (`return s` of a sum,
 * min or max reduction) takes one more: a float array of 2 *
 * TACK_RETURN_VALUES numbers, the returned numbers' gradients in
 * tack_results' order, then from element TACK_RETURN_VALUES on the
 * numbers the forward launch returned (read by a min or max reduction's
 * adjoint: the elements equal to the extreme take its gradient).  NULL
 * with err filled when k cannot be differentiated. */
#define TACK_RETURN_VALUES 16
tack_kernel *tack_kernel_adjoint(tack_kernel *k, tack_error *err);
const char *tack_kernel_name(const tack_kernel *k);
int tack_kernel_num_params(const tack_kernel *k);
const char *tack_kernel_param_name(const tack_kernel *k, int index);
/* Warp's launches: a kernel whose body assigns `i = tack.tid()` (or `i, j
 * = tack.tid()`, up to 3 names) instead of looping takes the launch's
 * extents as its last this-many parameters ("_tack_dim0", ...: ints);
 * 0 for a kernel with a launch loop. */
int tack_kernel_thread_dims(const tack_kernel *k);

/* Per-kernel settings, made before the kernel's first launch.  debug: -1
 * follows tack_set_debug (the default), 0 never bounds-checked, 1 always.
 * disk_cache 0 keeps this kernel's IR templates and variants out of the
 * disk cache (neither read nor written); 1, the default, uses it as
 * TACK_CACHE says. */
void tack_kernel_set_debug(tack_kernel *k, int debug);
void tack_kernel_set_disk_cache(tack_kernel *k, int on);
/* Waits until every disk-cache entry still being made is written.  A
 * backend whose entries are slow to make (OpenCL: the driver compiles a
 * program again to hand out its binary) makes them on a thread of its own
 * once compiles pause; exit waits for them too, but a host that tears
 * drivers down before exit (Python's finalization) calls this first. */
void tack_disk_cache_flush(void);
/* Whether this kernel's next launch is bounds-checked. */
int tack_kernel_debug(const tack_kernel *k);

/* ---- arguments and launches ------------------------------------------ */

typedef enum tack_arg_kind {
    TACK_ARG_ARRAY = 1,
    TACK_ARG_INT,   /* typed by value: i32 when it fits, else i64 */
    TACK_ARG_UINT,  /* an unsigned value (u64 when past INT64_MAX) */
    TACK_ARG_FLOAT, /* f32, or f64 when any array argument is f64 */
    TACK_ARG_BOOL,
    TACK_ARG_STRUCT, /* an instance of a template class: see tack_struct */
    TACK_ARG_COMPLEX /* a complex number: dtype TACK_F32 (complex64) or TACK_F64
                        (complex128) for its parts, f the real part, imag the
                        imaginary part; its precision is in the variant key */
} tack_arg_kind;

typedef struct tack_struct tack_struct;

/* tack_arg.vec_width of an array of rows x cols matrices (2-16 each), and
 * what a vec_width means: components per element (the last storage
 * dimension's extent) and a matrix's rows and columns (0: a vector or a
 * scalar).  Vectors have 2-TACK_MAX_VEC_WIDTH components; a matrix's width
 * is above that and fits a byte (the variant key's): 16 * rows + cols, a
 * count of 16 written as 1 in the rows' nibble and as 0 in the columns'
 * (0x33 is 3x3, 0x1c 16x12, 0x40 4x16), and 16x16 is 0x11. */
#define TACK_MAX_VEC_WIDTH 16
#define TACK_MAX_MAT_SIDE 16
#define TACK_MAT_WIDTH(rows, cols) \
    ((rows) == 16 && (cols) == 16 ? 0x11 : 16 * ((rows) == 16 ? 1 : (rows)) + ((cols) & 15))
/* tack_arg.vec_width of an array of complex numbers (NumPy's complex64 and
 * complex128: dtype TACK_F32 or TACK_F64): two components, the real part
 * then the imaginary part, read in kernels as complex values.  (Its low
 * nibble, 1, is no matrix's: a matrix has 2 or more columns.) */
#define TACK_COMPLEX_WIDTH 0x21
/* tack_arg.vec_width of an array of quaternions (Warp's quat: x, y, z, then
 * w the real part; dtype TACK_F32 or TACK_F64): four components, read in
 * kernels as quaternions, whose product is Hamilton's.  (Low nibble 1, as
 * the complex width's.) */
#define TACK_QUAT_WIDTH 0x41
static inline int tack_width_rows(int vec_width) {
    if (vec_width <= TACK_MAX_VEC_WIDTH || vec_width == TACK_COMPLEX_WIDTH ||
        vec_width == TACK_QUAT_WIDTH)
        return 0;
    return (vec_width >> 4) == 1 ? 16 : vec_width >> 4;
}
static inline int tack_width_cols(int vec_width) {
    if (!tack_width_rows(vec_width)) return 0;
    return (vec_width & 15) <= 1 ? 16 : vec_width & 15;
}
static inline int tack_width_components(int vec_width) {
    if (vec_width == TACK_COMPLEX_WIDTH) return 2;
    if (vec_width == TACK_QUAT_WIDTH) return 4;
    return tack_width_rows(vec_width) ? tack_width_rows(vec_width) * tack_width_cols(vec_width)
                                      : vec_width;
}
/* A vec_width Tack accepts: 0, 2-16 (tack.vector(n, dtype)), a matrix's of
 * 2-16 rows and columns (tack.matrix(rows, cols, dtype)), TACK_COMPLEX_WIDTH
 * or TACK_QUAT_WIDTH. */
static inline int tack_width_valid(int vec_width) {
    if (vec_width == 0 || (vec_width >= 2 && vec_width <= TACK_MAX_VEC_WIDTH) ||
        vec_width == TACK_COMPLEX_WIDTH || vec_width == TACK_QUAT_WIDTH)
        return 1;
    int r = tack_width_rows(vec_width), c = tack_width_cols(vec_width);
    return vec_width > 0 && vec_width < 256 && r >= 2 && c >= 2 && TACK_MAT_WIDTH(r, c) == vec_width;
}

typedef struct tack_arg {
    tack_arg_kind kind;
    tack_dtype dtype;        /* arrays: element (or vector component) type */
    int vec_width;           /* arrays of vectors (vec2f ... vec4i,
                                tack.vector(n, dtype)): 2-16,
                                and the last of ndim dimensions is this
                                width; arrays of matrices (mat22f ...):
                                TACK_MAT_WIDTH(rows, cols), and the last
                                dimension holds rows*cols components, row
                                by row; 0 for arrays of scalars */
    int ndim;                /* arrays: dimensions of the storage */
    int is_texture;          /* a tack.Texture3D: 3-D, f32 or f64, sampled
                                by tex.sample(u, v, w) */
    int writable;            /* arrays: 0 refuses a kernel that stores to it */
    void *data;              /* arrays: element (0, ..., 0); for device
                                memory, the handle tack_device_alloc
                                returned */
    const tack_device *device; /* arrays: the device whose memory holds it
                                  (tack_device_alloc); NULL: host memory,
                                  which only host-memory devices (the CPU)
                                  can run on */
    int64_t shape[TACK_MAX_NDIM];
    int64_t strides[TACK_MAX_NDIM]; /* bytes, any sign: the step from one
                                       element to the next along each
                                       dimension (see "strided arrays" below) */
    int64_t i;               /* INT, BOOL */
    uint64_t u;              /* UINT */
    double f;                /* FLOAT; COMPLEX: the real part */
    double imag;             /* COMPLEX: the imaginary part */
    const tack_struct *tmpl; /* STRUCT */
} tack_arg;

/* ---- template classes (Python's @tack.device_class) -------------------
 *
 * A structured argument: named fields and methods.  A kernel reads
 * `t.field`, `t.field[i]`, `t.inner.field` and calls `t.method(args)`.
 * Class constants are inlined into code, so their types and values are in
 * the key; instance scalars are runtime values (only their names are
 * keyed); arrays are keyed by dtype, full shape and vector width; the class
 * itself by its token. */
typedef enum tack_field_role {
    TACK_FIELD_CONSTANT = 1, /* value: INT, UINT, FLOAT or BOOL; inlined */
    TACK_FIELD_SCALAR,       /* value: INT, UINT, FLOAT or BOOL; a runtime parameter */
    TACK_FIELD_ARRAY,        /* value: an array (TACK_ARG_ARRAY) */
    TACK_FIELD_STRUCT        /* nested: another template instance */
} tack_field_role;

typedef struct tack_field {
    const char *name;
    tack_field_role role;
    tack_arg value;
    const tack_struct *nested;
} tack_field;

struct tack_struct {
    /* The class's identity: never reused while a kernel keyed on it lives
     * (the host calls tack_retire_class when the class goes away). */
    uint64_t class_token;
    const char *class_name;  /* for messages */
    /* Methods: the kernel's resolver is asked for the method's name with
     * this context; it answers TACK_NAME_FUNC, whose first parameter is
     * self, or anything else for "no such method". */
    void *method_ctx;
    int nfields;
    const tack_field *fields; /* the same order on every call (sorted by name) */
};

/* Drops every IR template and variant keyed on the class, in every kernel
 * and on every device: call it when the class is collected (no launch with
 * an instance of it may be running).  The work is done at the next launch
 * or introspection call, so it is safe from any callback. */
void tack_retire_class(uint64_t class_token);

/* Strided arrays.  The builders below fill C-order strides; a caller may
 * then set any strides (NumPy's, in bytes): a[::2], a[::-1], a.T, Fortran
 * order, a column of a matrix, np.broadcast_to's zero strides.  Each
 * stride must be a multiple of the element size, a vector's components
 * adjacent (the last stride is the component size), and an array in device
 * memory has no negative stride.  An array the kernel writes must not
 * place two elements at one address (a zero stride), or the launch is
 * refused.  Whether each indexed array is C-contiguous is part of the
 * variant key; stride values are passed at run time, so a[::2] and a[::3]
 * share one variant and C-contiguous arrays keep their code. */
tack_arg tack_arg_array(void *data, tack_dtype dtype, int ndim,
                        const int64_t *shape, int writable);
/* An array of `width`-component vectors with logical shape shape[0..ndim):
 * the storage is C-contiguous with a trailing dimension of `width` (its
 * logical dimensions' strides may be changed as above).  With width
 * TACK_MAT_WIDTH(n, n) an array of n x n matrices, whose trailing dimension
 * holds the n*n components row by row.  An f32/f64 array of scalars of
 * shape (..., n, n) is read as this array of matrices when the kernel's
 * body uses its elements as matrices (docs/language.md, "Matrices"). */
tack_arg tack_arg_vector_array(void *data, tack_dtype component, int width, int ndim,
                               const int64_t *shape, int writable);
tack_arg tack_arg_int(int64_t v);
tack_arg tack_arg_uint(uint64_t v);
tack_arg tack_arg_float(double v);
tack_arg tack_arg_bool(int v);
/* A complex scalar: part TACK_F32 (NumPy's complex64) or TACK_F64
 * (complex128, Python's complex). */
tack_arg tack_arg_complex(double re, double im, tack_dtype part);

/* Compiles on a miss, then runs the kernel.  The caller's thread runs a
 * share of the parallel loop and returns when all of it is done.  A launch
 * whose range would take an access indexed by the launch variable (out[i],
 * a[i + 1]) outside its array is refused with TACK_ERR_INDEX before any of
 * it runs (docs/language.md says which accesses). */
tack_status tack_kernel_launch(tack_kernel *k, tack_device *dev,
                               const tack_arg *args, int nargs,
                               tack_error *err);

/* What a kernel returns: `return s` or `return s, t` after its parallel
 * loop, where s and t are reductions or expressions of them
 * (docs/language.md).  The numbers are flat in value[]: n of them, each
 * with its reduction's dtype: signed integers (and bool) in i, unsigned in
 * u, floats in f (an f32 widened exactly).
 *
 * A returned value may be several numbers: a complex reduction is two
 * (real, imaginary), a vector reduction its components, a matrix its
 * components row by row.  values[] groups the numbers into the nvalues
 * values the kernel's `return` names, in order: value j is the `count`
 * numbers from value[first], of `kind`, with `rows` x `cols` for a matrix
 * (rows 0 and cols = count for a vector).  A kernel returning only
 * scalars has nvalues == n and value j is number j, as before these
 * fields were added: code that reads n, dtype[] and value[] alone still
 * works for it (it must be recompiled: the struct grew). */
#define TACK_MAX_RESULTS 16      /* numbers: a mat44 is 16 */
#define TACK_MAX_RESULT_VALUES 8 /* values in one `return` */
typedef enum tack_result_kind {
    TACK_RESULT_SCALAR = 0,
    TACK_RESULT_COMPLEX = 1, /* 2 numbers: real, imaginary */
    TACK_RESULT_VECTOR = 2,
    TACK_RESULT_MATRIX = 3   /* row-major */
} tack_result_kind;
typedef struct tack_result_value {
    tack_result_kind kind;
    int first, count; /* its numbers in value[] */
    int rows, cols;   /* a matrix's shape; a vector: 0, count */
} tack_result_value;
typedef struct tack_results {
    int n; /* numbers; 0: the kernel returns nothing */
    tack_dtype dtype[TACK_MAX_RESULTS];
    union {
        int64_t i;
        uint64_t u;
        double f;
    } value[TACK_MAX_RESULTS];
    int nvalues;
    tack_result_value values[TACK_MAX_RESULT_VALUES];
} tack_results;

/* tack_kernel_launch, filling *results (NULL: not wanted) with what the
 * kernel returns. */
tack_status tack_kernel_call(tack_kernel *k, tack_device *dev, const tack_arg *args, int nargs,
                             tack_results *results, tack_error *err);

/* print() in a kernel writes to C's stdout, which every launch of a
 * printing kernel flushes before it returns.  A host with its own buffered
 * output (Python's sys.stdout) sets a hook, called on the launching thread
 * before each such launch, that writes that output out first, so lines
 * keep the order they were printed in.  NULL (the default): none. */
void tack_set_before_print(void (*hook)(void));

/* A prepared launch, for a caller that launches one kernel in a loop: the
 * variant is resolved once; tack_launch_run re-checks the arguments (any
 * values, same types, shapes and layout as far as the variant depends on
 * them) and runs it, taking the full path whenever they differ.  The handle
 * must not outlive its kernel or device. */
typedef struct tack_launch tack_launch;
tack_launch *tack_launch_prepare(tack_kernel *k, tack_device *dev, const tack_arg *args,
                                 int nargs, tack_error *err);
tack_status tack_launch_run(tack_launch *l, const tack_arg *args, int nargs, tack_error *err);
/* tack_launch_run, with what the kernel returns (as tack_kernel_call).
 * Arguments with the prepared call's layout (each one's kind; an array's
 * dtype, width, shape, strides, writability and device; a scalar's type
 * as its value selects it) take the warm path, which only writes this
 * call's addresses and values into the prepared launch: a binding that
 * calls a kernel in a loop keeps one handle per call site. */
tack_status tack_launch_call(tack_launch *l, const tack_arg *args, int nargs,
                             tack_results *results, tack_error *err);
/* 1 while calls with the prepared layout take the warm path: the call was
 * simple (no templates nor complex values, one top-level loop, not in
 * debug mode) and no variant was freed since. */
int tack_launch_is_warm(const tack_launch *l);
/* 1 when these arguments take the warm path: l is warm and they have its
 * prepared layout (the check tack_launch_call makes first). */
int tack_launch_accepts(const tack_launch *l, const tack_arg *args, int nargs);
void tack_launch_free(tack_launch *l);

/* Compiles, without running anything, the variants that these calls on
 * `dev` would select, together: on OpenCL one program holds all the new
 * ones (one driver build, as a user of OpenCL puts many kernels in one
 * source); elsewhere each is compiled as its first launch would.  Each
 * variant is kept and stored in the disk cache under the key its launch
 * uses, so the calls' later launches (in this process or another) find
 * it.  Every call is classified first: a call a launch would refuse
 * (wrong arity, types, shapes) compiles nothing and is returned.  A
 * variant that fails to compile does not stop the others.  On the CPU it
 * returns with the optimized code swapped in (tack_jit_wait) and the disk
 * entries stored.  Returns the
 * first failure in call order (*failed its index, -1 when none; failed
 * may be NULL), or TACK_OK. */
typedef struct tack_precompile_call {
    tack_kernel *kernel;
    const tack_arg *args;
    int nargs;
} tack_precompile_call;
tack_status tack_precompile(tack_device *dev, const tack_precompile_call *calls, int n,
                            int *failed, tack_error *err);

/* ---- offline code generation ----------------------------------------- */

/* The code of the variant `args` select, as text for `target`, without a
 * device (no GPU or driver is needed):
 *   "cuda:sm_90"     PTX for that architecture ("cuda:sm_80", "cuda:sm_90a",
 *                    ...), compiled by NVRTC (libnvrtc.so, found through
 *                    TACK_NVRTC, $CUDA_PATH, $CUDA_HOME, /usr/local/cuda or
 *                    the loader path; TACK_ERR_DEVICE when it is missing)
 *   "cuda-source"    the CUDA C that NVRTC would compile
 *   "opencl-source"  the OpenCL C an OpenCL device would build
 *   "hip-source"     the HIP C++ hipRTC would compile
 *   "hip:gfx90a"     an AMDGPU code object (ELF) for that ISA ("hip:gfx1030",
 *                    "hip:gfx90a:xnack-", ...), compiled by hipRTC (from
 *                    libhiprtc.so or ROCm 5's libamdhip64.so, or TACK_HIPRTC):
 *                    binary, so only through tack_kernel_generate_binary
 *   "level_zero:spirv"  SPIR-V for any Intel GPU, and "level_zero:dg2" a
 *                    native binary for one ("level_zero:tgllp", "...:pvc",
 *                    "...:0x56a0"), from Intel's ocloc (run as a child
 *                    process; TACK_OCLOC or PATH): binary
 *   "metal-source"   the MSL a Metal device would compile
 * The variant is chosen as on a GPU device: arrays may be host arrays or
 * any device's (only their dtype, shape and vector width matter), and
 * `disjoint` is never set; debug mode (tack_set_debug) gives the
 * bounds-checked variant.  The kernel function is named "tack_" followed
 * by the kernel's name.  On success *text is a NUL-terminated string the
 * caller frees with free().  A compiler's refusal of the generated code is
 * TACK_ERR_COMPILE with its log; an unknown target TACK_ERR_VALUE. */
tack_status tack_kernel_generate(tack_kernel *k, const char *target, const tack_arg *args,
                                 int nargs, char **text, tack_error *err);
/* The same for any target, binary ones included: *data (malloc'd, the
 * caller frees it) holds *size bytes, followed by a NUL that *size does
 * not count. */
tack_status tack_kernel_generate_binary(tack_kernel *k, const char *target, const tack_arg *args,
                                        int nargs, void **data, size_t *size, tack_error *err);

/* ---- introspection ---------------------------------------------------- */

/* What tack_kernel_inspect shows of a variant. */
typedef enum tack_inspect_kind {
    TACK_INSPECT_IR = 0, /* Tack's typed IR after the passes (any device) */
    TACK_INSPECT_LLVM,   /* CPU: the optimized LLVM IR; OpenCL: the OpenCL C
                            the driver builds; CUDA: the CUDA C NVRTC compiles */
    TACK_INSPECT_ASM     /* CPU: the native assembly; CUDA: the PTX for the
                            device's architecture; OpenCL: none
                            (TACK_ERR_VALUE: drivers give no text form) */
} tack_inspect_kind;

/* The code of the variant `args` select on `dev`, as text: the same
 * classification as tack_kernel_launch, and the variant is compiled (and
 * kept) when it does not exist yet, but nothing runs.  The text is made
 * again from the variant's post-pass IR by the same code generator, so it
 * is the code the variant runs.  On success *text is a NUL-terminated
 * string the caller frees with free(). */
tack_status tack_kernel_inspect(tack_kernel *k, tack_device *dev, tack_inspect_kind kind,
                                const tack_arg *args, int nargs, char **text, tack_error *err);

/* One parameter of a variant key: (type, is_array, is_texture, texture_shape). */
typedef struct tack_param_sig {
    tack_dtype type;
    int is_template;  /* a template argument, expanded into hidden parameters */
    int is_array;
    int is_texture;
    int64_t texture_shape[3];
    int is_strided;   /* an indexed array that is not C-contiguous: the
                         variant reads its strides at run time (Python's
                         strided_sig lists these parameters) */
} tack_param_sig;

/* The variant key (param_sig, vec_sig, tmpl_key, shape_sig, disjoint,
 * strided_sig). */
typedef struct tack_variant_key {
    int num_params;
    tack_param_sig params[TACK_MAX_PARAMS];
    int num_vec;                      /* vec_sig: (param, width) pairs */
    int vec_param[TACK_MAX_PARAMS];
    int vec_width[TACK_MAX_PARAMS];
    /* tmpl_key: one text per template parameter, e.g.
     * "tmpl_0 class=7 const=factor:float:4000000000000000 array=data:f32:(16):0
     *  scalar=offset"; empty when there is none. */
    int num_tmpl;
    char tmpl[8][512];
    int num_shape;                    /* shape_sig: baked-in sizes */
    int64_t shape[TACK_MAX_PARAMS * TACK_MAX_NDIM];
    int disjoint;
} tack_variant_key;

int tack_kernel_num_variants(const tack_kernel *k, const tack_device *dev);
/* Copies the key of variant `index` (0-based, in compile order). */
tack_status tack_kernel_variant_key(const tack_kernel *k, const tack_device *dev,
                                    int index, tack_variant_key *out);
/* Which tier variant `index` runs: 0, code built fast while its optimized
 * build is made in the background, or 1, optimized; -1 for a bad index.
 * The CPU tiers its variants unless TACK_JIT says otherwise (TACK_JIT=o2:
 * optimized at once, o0: tier 0 only); other devices run tier 1. */
int tack_kernel_variant_tier(const tack_kernel *k, const tack_device *dev, int index);
/* Waits until no optimized build is queued or in progress (each is then
 * swapped in), building queued ones on the calling thread. */
void tack_jit_wait(void);
int tack_kernel_num_ir_templates(const tack_kernel *k);
/* The key of IR template `index` (0-based, oldest first) as text: its
 * parts separated by ';', e.g. "debug;vec=0:3", "" for the plain template.
 * Returns 0, or -1 for a bad index. */
int tack_kernel_ir_template_key(const tack_kernel *k, int index, char *buf, size_t size);

/* Process-wide counters. */
typedef struct tack_stats {
    uint64_t compiles;      /* variants compiled to machine code */
    uint64_t lowerings;     /* IR templates lowered */
    uint64_t launches;
    uint64_t variant_hits;  /* launches that found their variant in memory */
    uint64_t fast_path_hits;
    uint64_t disk_hits, disk_misses, disk_bad_entries; /* variant entries */
    uint64_t disk_ir_hits, disk_ir_misses;             /* IR-template entries */
    /* Time spent compiling variants, in nanoseconds: all of it (from the
     * miss to the linked code), and LLVM's optimizer and code generator's
     * share of it; the rest is Tack's (passes, IR building, linking). */
    uint64_t compile_ns, llvm_ns;
    /* Variants loaded from the disk cache as a driver's binary (OpenCL),
     * and those the driver rebuilt from the entry's source instead. */
    uint64_t driver_binary_loads, driver_source_builds;
    /* Programs an OpenCL driver built from source: one per compiled
     * variant, or one per tack_precompile batch of new variants. */
    uint64_t driver_program_builds;
} tack_stats;
void tack_get_stats(tack_stats *out);

/* One kernel's counters since it was created.  launch_ns is the time its
 * launches ran on the device (the backend's launch call, which returns
 * finished: neither argument checks nor compiles), counted only while
 * launch timing is on; compile_ns and lowerings as in tack_stats, for this
 * kernel. */
typedef struct tack_kernel_stats {
    char name[128]; /* the kernel's name (cut at 127 bytes) */
    uint64_t launches, compiles, lowerings;
    uint64_t compile_ns, launch_ns;
} tack_kernel_stats;
void tack_kernel_get_stats(const tack_kernel *k, tack_kernel_stats *out);
/* The counters of every live kernel, newest first, into out[0..max);
 * returns how many kernels there are (more than max: call again). */
int tack_get_kernel_stats(tack_kernel_stats *out, int max);
/* Launch timing: each launch reads the clock twice while it is on (about
 * 30 ns, a fifth of a warm dispatch), so it is off unless asked for.
 * Calls nest: on=1 asks, on=0 takes one ask back. */
void tack_set_launch_timing(int on);
int tack_get_launch_timing(void);

/* Messages about compilation.  Each new variant logs (TACK_LOG_INFO) why it
 * was needed: the key elements that differ from the nearest existing
 * variant, in words.  A kernel that passes 32 variants logs one warning
 * naming the element that keeps changing.  With TACK_LOG=compile in the
 * environment the messages also go to stderr. */
typedef enum tack_log_level { TACK_LOG_INFO = 0, TACK_LOG_WARNING = 1 } tack_log_level;
typedef void (*tack_log_fn)(void *ctx, tack_log_level level, const char *message);
void tack_set_log_handler(tack_log_fn fn, void *ctx);

/* Called on the launching thread around the part of a compile that makes
 * no host callbacks (the passes and LLVM), so a host can release its own
 * lock meanwhile: the Python extension releases the GIL.  begin's result
 * is handed to end. */
typedef void *(*tack_compile_begin_fn)(void);
typedef void (*tack_compile_end_fn)(void *state);
void tack_set_compile_hooks(tack_compile_begin_fn begin, tack_compile_end_fn end);

/* Launches call the same hooks around a run expected to take at least ns
 * nanoseconds, so other host threads go on meanwhile (the Python extension
 * measures what releasing the GIL costs and asks for a multiple of it).
 * The expectation is per variant: its time per iteration of the parallel
 * loop, averaged over the runs it lets go for and a sample of the others,
 * times this run's iterations.  0 (the default): runs never call them. */
void tack_set_release_threshold(uint64_t ns);

/* Debug mode: bounds-checked kernels (also TACK_DEBUG=1). */
void tack_set_debug(int on);
int tack_get_debug(void);

/* Restarts the process-wide sequence that seeds each launch's random
 * streams (np.random.random() and the like in kernels): after the same
 * seed, the same launches draw the same numbers. */
void tack_seed(uint64_t seed);

const char *tack_version(void);
const char *tack_llvm_version(void); /* "14.0.6": the LLVM this build links */

#ifdef __cplusplus
}
#endif
#endif
