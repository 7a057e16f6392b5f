/*
 * module.c - tack._tack: module init, error mapping, process-wide functions.
 */
#include "ext.h"

PyObject *ext_CompileError;

PyObject *ext_raise(const tack_error *err)
{
    PyObject *msg = PyUnicode_DecodeUTF8(err->message, (Py_ssize_t)strlen(err->message),
                                         "replace");
    if (!msg)
        return NULL;
    PyObject *type;
    switch (err->status) {
    case TACK_ERR_COMPILE: {
        PyObject *exc = PyObject_CallOneArg(ext_CompileError, msg);
        Py_DECREF(msg);
        if (!exc)
            return NULL;
        PyObject *lineno = PyLong_FromLong(err->lineno);
        PyObject *col = PyLong_FromLong(err->col);
        PyObject *fname = err->filename[0]
            ? PyUnicode_DecodeFSDefault(err->filename) : Py_NewRef(Py_None);
        if (lineno && col && fname &&
            PyObject_SetAttrString(exc, "lineno", lineno) == 0 &&
            PyObject_SetAttrString(exc, "col", col) == 0 &&
            PyObject_SetAttrString(exc, "filename", fname) == 0)
            PyErr_SetObject(ext_CompileError, exc);
        Py_XDECREF(lineno);
        Py_XDECREF(col);
        Py_XDECREF(fname);
        Py_DECREF(exc);
        return NULL;
    }
    case TACK_ERR_TYPE:   type = PyExc_TypeError; break;
    case TACK_ERR_VALUE:  type = PyExc_ValueError; break;
    case TACK_ERR_INDEX:  type = PyExc_IndexError; break;
    case TACK_ERR_NOMEM:  type = PyExc_MemoryError; break;
    default:              type = PyExc_RuntimeError; break;
    }
    PyErr_SetObject(type, msg);
    Py_DECREF(msg);
    return NULL;
}

/* {name: counters} of the live kernels (kernels of one name together). */
static PyObject *kernel_stats_dict(void)
{
    PyObject *out = PyDict_New();
    tack_kernel_stats *all = NULL;
    int n = tack_get_kernel_stats(NULL, 0);
    /* Kernels made meanwhile (another thread) are left to the next call. */
    if (out && n > 0 && !(all = PyMem_Calloc((size_t)n, sizeof *all))) {
        Py_CLEAR(out);
        PyErr_NoMemory();
    }
    if (out && n > 0) {
        int got = tack_get_kernel_stats(all, n);
        for (int i = 0; i < (got < n ? got : n) && out; i++) {
            PyObject *name = PyUnicode_DecodeUTF8(all[i].name, (Py_ssize_t)strlen(all[i].name),
                                                  "replace");
            PyObject *entry = name ? PyDict_GetItemWithError(out, name) : NULL;
            int rc = -1;
            if (entry) {
                rc = ext_kernel_stats_into(entry, &all[i]);
            } else if (name && !PyErr_Occurred() && (entry = PyDict_New())) {
                rc = ext_kernel_stats_into(entry, &all[i]) < 0 ? -1
                   : PyDict_SetItem(out, name, entry);
                Py_DECREF(entry);
            }
            Py_XDECREF(name);
            if (rc < 0)
                Py_CLEAR(out);
        }
    }
    PyMem_Free(all);
    return out;
}

static PyObject *ext_stats(PyObject *self, PyObject *unused)
{
    (void)self; (void)unused;
    tack_stats s;
    memset(&s, 0, sizeof s);
    tack_get_stats(&s);
    PyObject *kernels = kernel_stats_dict();
    if (!kernels)
        return NULL;
    return Py_BuildValue("{s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:d,s:d,s:K,s:K,s:K,s:N}",
                         "compiles", (unsigned long long)s.compiles,
                         "lowerings", (unsigned long long)s.lowerings,
                         "launches", (unsigned long long)s.launches,
                         "variant_hits", (unsigned long long)s.variant_hits,
                         "fast_path_hits", (unsigned long long)s.fast_path_hits,
                         "disk_hits", (unsigned long long)s.disk_hits,
                         "disk_misses", (unsigned long long)s.disk_misses,
                         "disk_bad_entries", (unsigned long long)s.disk_bad_entries,
                         "disk_ir_hits", (unsigned long long)s.disk_ir_hits,
                         "disk_ir_misses", (unsigned long long)s.disk_ir_misses,
                         "compile_ms", s.compile_ns * 1e-6, "llvm_ms", s.llvm_ns * 1e-6,
                         "driver_binary_loads", (unsigned long long)s.driver_binary_loads,
                         "driver_source_builds", (unsigned long long)s.driver_source_builds,
                         "driver_program_builds", (unsigned long long)s.driver_program_builds,
                         "kernels", kernels);
}

/* tack.timer's switch: launches are timed while a timer runs (nesting). */
static PyObject *ext_launch_timing(PyObject *self, PyObject *arg)
{
    (void)self;
    int on = PyObject_IsTrue(arg);
    if (on < 0)
        return NULL;
    tack_set_launch_timing(on);
    Py_RETURN_NONE;
}

static PyObject *ext_build_info(PyObject *self, PyObject *unused)
{
    (void)self; (void)unused;
    return Py_BuildValue("{s:s,s:s}", "version", tack_version(), "llvm_version",
                         tack_llvm_version());
}

/* Only a bool or 0/1: truthiness would take set_debug('no') for True. */
static PyObject *ext_set_debug(PyObject *self, PyObject *arg)
{
    (void)self;
    int on;
    if (PyBool_Check(arg) || PyArray_IsScalar(arg, Bool)) {
        on = PyObject_IsTrue(arg);
    } else if (PyLong_Check(arg) || PyArray_IsScalar(arg, Integer)) {
        PyObject *n = PyNumber_Index(arg);
        int overflow = 0;
        long v = n ? PyLong_AsLongAndOverflow(n, &overflow) : -1;
        Py_XDECREF(n);
        if (v == -1 && PyErr_Occurred())
            return NULL;
        if (overflow || (v != 0 && v != 1)) {
            PyErr_Format(PyExc_ValueError, "tack.set_debug() takes True or False (or 1 or 0), "
                         "not %R", arg);
            return NULL;
        }
        on = (int)v;
    } else {
        PyErr_Format(PyExc_TypeError, "tack.set_debug() takes True or False, not %.100s",
                     Py_TYPE(arg)->tp_name);
        return NULL;
    }
    if (on < 0)
        return NULL;
    tack_set_debug(on);
    Py_RETURN_NONE;
}

static PyObject *ext_seed(PyObject *self, PyObject *arg)
{
    (void)self;
    PyObject *n = PyNumber_Index(arg);
    if (!n) {
        PyErr_Clear();
        PyErr_Format(PyExc_TypeError, "tack.seed() takes an int, not %.100s", Py_TYPE(arg)->tp_name);
        return NULL;
    }
    /* 0..2**64-1 exactly: a larger or negative seed would otherwise be
     * folded onto another one's stream. */
    unsigned long long s = PyLong_AsUnsignedLongLong(n);
    if (s == (unsigned long long)-1 && PyErr_Occurred()) {
        PyErr_Clear();
        PyErr_Format(PyExc_ValueError, "tack.seed(): seed %S is outside 0..2**64-1", n);
        Py_DECREF(n);
        return NULL;
    }
    Py_DECREF(n);
    tack_seed((uint64_t)s);
    Py_RETURN_NONE;
}

static PyObject *ext_get_debug(PyObject *self, PyObject *unused)
{
    (void)self; (void)unused;
    return PyBool_FromLong(tack_get_debug());
}

/* tack.constant(v): marks a module-level value a kernel inlines.  The
 * resolver inlines int, float and bool globals anyway, so it only checks. */
static PyObject *ext_constant(PyObject *self, PyObject *v)
{
    (void)self;
    if (!(PyBool_Check(v) || PyLong_Check(v) || PyFloat_Check(v) ||
          PyArray_IsScalar(v, Integer) || PyArray_IsScalar(v, Floating) ||
          PyArray_IsScalar(v, Bool))) {
        PyErr_Format(PyExc_TypeError,
                     "tack.constant() takes an int, float or bool, not %.100s",
                     Py_TYPE(v)->tp_name);
        return NULL;
    }
    return Py_NewRef(v);
}

static PyObject *ext_jit_wait(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    Py_BEGIN_ALLOW_THREADS
    tack_jit_wait();
    Py_END_ALLOW_THREADS
    Py_RETURN_NONE;
}

static PyObject *ext_disk_cache_flush(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    Py_BEGIN_ALLOW_THREADS
    tack_disk_cache_flush();
    Py_END_ALLOW_THREADS
    Py_RETURN_NONE;
}

static PyMethodDef module_methods[] = {
    {"vector", (PyCFunction)(void (*)(void))ext_vector_dtype, METH_VARARGS | METH_KEYWORDS,
     "vector(length, dtype): the dtype of length-component vectors (2-16) of\n"
     "f32, f64 or i32 components (tack.vector(3, tack.f32) is tack.vec3f)."},
    {"matrix", (PyCFunction)(void (*)(void))ext_matrix_dtype, METH_VARARGS | METH_KEYWORDS,
     "matrix(rows, cols, dtype): the dtype of rows x cols matrices (2-16 each) of\n"
     "f32 or f64 components (tack.matrix(3, 3, tack.f32) is tack.mat33f)."},
    {"device", (PyCFunction)(void (*)(void))ext_device_fn, METH_VARARGS | METH_KEYWORDS,
     "device(spec='cpu', num_threads=None)\n--\n\n"
     "The device for spec.  Without options the same object every call; with\n"
     "num_threads (1 to 256, 0: one per core; the CPU only) a new device with\n"
     "an empty variant cache."},
    {"set_default_device", ext_set_default_device, METH_O,
     "set_default_device(spec_or_device)\n--\n\nSets the device kernels launch on."},
    {"synchronize", (PyCFunction)(void (*)(void))ext_synchronize, METH_VARARGS | METH_KEYWORDS,
     "synchronize(device=None)\n--\n\n"
     "Waits until the work queued on device, on all its queues (default: on\n"
     "every device opened so far), has finished.  GPU calls on device arrays\n"
     "return once queued; copies and .numpy() wait by themselves, so\n"
     "this is for timing (tack.timer), for memory shared with other\n"
     "libraries, and to raise a queued launch's failure, which names its\n"
     "kernel."},
    {"get_default_device", ext_get_default_device, METH_NOARGS,
     "get_default_device()\n--\n\nThe device kernels launch on by default."},
    {"set_num_threads", ext_set_num_threads, METH_O,
     "set_num_threads(n)\n--\n\n"
     "Runs the CPU device's launches on n threads (1-256, the caller included),\n"
     "keeping its compiled variants.  A launch running on another thread\n"
     "finishes first.  The starting count is TACK_NUM_THREADS, or one per core."},
    {"get_num_threads", ext_get_num_threads, METH_NOARGS,
     "get_num_threads()\n--\n\nThe number of threads the CPU device's launches run on."},
    {"_launch_timing", ext_launch_timing, METH_O,
     "_launch_timing(on)\n--\n\n"
     "Asks for launch timing (on=True) or takes one ask back (on=False);\n"
     "tack.timer's switch."},
    {"_build_info", ext_build_info, METH_NOARGS,
     "_build_info()\n--\n\nThe versions of Tack and LLVM (python -m tack info)."},
    {"empty", (PyCFunction)(void (*)(void))ext_empty, METH_VARARGS | METH_KEYWORDS,
     "empty(shape, dtype=tack.f32, device=None, *, requires_grad=False)\n--\n\n"
     "A new uninitialized array; requires_grad=True gives it a zeroed .grad."},
    {"zeros", (PyCFunction)(void (*)(void))ext_zeros, METH_VARARGS | METH_KEYWORDS,
     "zeros(shape, dtype=tack.f32, device=None, *, requires_grad=False)\n--\n\n"
     "A new zero-filled array; requires_grad=True gives it a zeroed .grad."},
    {"array", (PyCFunction)(void (*)(void))ext_array, METH_VARARGS | METH_KEYWORDS,
     "array(obj, dtype=None, device=None, *, requires_grad=False)\n--\n\n"
     "A new array holding a copy of obj (a NumPy array, buffer, list, ...).\n"
     "dtype defaults to obj's dtype; lists of Python floats become f32.\n"
     "requires_grad=True gives it a zeroed .grad (docs/autodiff.md)."},
    {"asarray", (PyCFunction)(void (*)(void))ext_asarray, METH_VARARGS | METH_KEYWORDS,
     "asarray(obj, dtype=None, device=None)\n--\n\n"
     "obj as a tack.Array, sharing its memory whenever it can: a tack.Array,\n"
     "a NumPy array, or any object with __dlpack__, __cuda_array_interface__,\n"
     "__array_interface__ or the buffer protocol.  It copies only when dtype\n"
     "or device asks for a change the memory cannot give, or when a NumPy\n"
     "array's (or buffer's) memory is not C-contiguous; another library's\n"
     "strided memory is a ValueError, since a kernel's writes to a copy would\n"
     "not reach it (kernels take it directly).  device=None keeps the data\n"
     "where it is (the CPU, or the CUDA device that holds it); lists and\n"
     "scalars become a new array as with tack.array."},
    {"from_dlpack", ext_from_dlpack, METH_O,
     "from_dlpack(obj)\n--\n\n"
     "A tack.Array sharing the memory of obj, an object with __dlpack__\n"
     "(or a DLPack capsule), without a copy.  RuntimeError when the memory is\n"
     "on a device Tack cannot use here; ValueError when it is not C-contiguous."},
    {"_describe_foreign", ext_describe_foreign, METH_O,
     "_describe_foreign(obj)\n--\n\n"
     "What Tack reads from obj's DLPack tensor or array interface, as a dict\n"
     "(for tests: no device is opened)."},
    {"copyto", (PyCFunction)(void (*)(void))ext_copyto, METH_VARARGS | METH_KEYWORDS,
     "copyto(dst, src)\n--\n\n"
     "Copies src into the tack.Array dst.  Shapes must match; dtypes convert\n"
     "with NumPy's 'same_kind' casting rule."},
    {"_set_tape", ext_set_tape, METH_O, "The recording tack.Tape, or None (autodiff.py)."},
    {"kernel", (PyCFunction)(void (*)(void))ext_kernel_fn, METH_VARARGS | METH_KEYWORDS,
     "kernel(func, *, source=None, cache=None, debug=None)\n--\n\n"
     "Compiles func as a Tack kernel (a decorator).  source: func's text when\n"
     "Python keeps none (exec, python -c); cache=False keeps this kernel out\n"
     "of the disk cache; debug=True/False bounds-checks this kernel or not,\n"
     "whatever tack.set_debug says (None: as it says)."},
    {"func", (PyCFunction)(void (*)(void))ext_func_fn, METH_VARARGS | METH_KEYWORDS,
     "func(f, *, source=None)\n--\n\n"
     "Marks f as a device function kernels may call.  source: f's text when\n"
     "Python keeps none (exec, python -c)."},
    {"device_class", ext_device_class_fn, METH_O,
     "device_class(cls)\n--\n\nMarks cls as a template class: its instances may be\n"
     "passed to kernels, which read their attributes and call their\n"
     "@tack.func methods."},
    {"constant", ext_constant, METH_O,
     "constant(value)\n--\n\nA numeric global that kernels inline by value."},
    {"stats", ext_stats, METH_NOARGS,
     "stats()\n--\n\nProcess-wide counters of compiles, lowerings, launches, hits;\n"
     "under \"kernels\", each live kernel's own (see Kernel.stats)."},
    {"seed", ext_seed, METH_O,
     "seed(s)\n--\n\nRestarts the sequence that seeds each launch's random streams "
     "(np.random.random() and the like inside kernels): after tack.seed(s), the same "
     "launches draw the same numbers on every device."},
    {"set_debug", ext_set_debug, METH_O,
     "set_debug(on)\n--\n\nTurns bounds-checked kernels on or off (True or False, or 1 or 0)."},
    {"get_debug", ext_get_debug, METH_NOARGS,
     "get_debug()\n--\n\nWhether debug (bounds-checked) mode is on."},
    {"precompile", (PyCFunction)(void (*)(void))ext_precompile, METH_VARARGS | METH_KEYWORDS,
     "precompile(calls, device=None)\n--\n\n"
     "Compiles the variants that calls would select, without running them:\n"
     "calls is a list of (kernel, args) or (kernel, args, kwargs).  The new\n"
     "variants of one device are built together (on OpenCL, one program for\n"
     "all); each is kept and stored in the disk cache as its first call would\n"
     "store it.  device: where they run (None: as each call picks it).  A call\n"
     "a launch would refuse for its arguments' types raises before anything is\n"
     "compiled; one refused for its ranges or lengths (which the compiled code\n"
     "evaluates), or a kernel that fails to compile, raises the first such\n"
     "error after the others are compiled and kept."},
    {"_jit_wait", ext_jit_wait, METH_NOARGS,
     "_jit_wait()\n--\n\n"
     "Waits until every optimized build the tiered JIT has queued is made and\n"
     "swapped in (TACK_JIT, docs/timing.md)."},
    {"_disk_cache_flush", ext_disk_cache_flush, METH_NOARGS,
     "_disk_cache_flush()\n--\n\n"
     "Waits until the disk-cache entries being made are written (run at exit,\n"
     "before the interpreter tears anything down)."},
    {"_generate", (PyCFunction)(void (*)(void))ext_generate, METH_FASTCALL,
     "_generate(kernel, target, args, binary=False)\n--\n\n"
     "The code of the variant args select for target: text (\"cuda:sm_90\",\n"
     "\"cuda-source\", \"opencl-source\", \"hip-source\", ...) or, with binary,\n"
     "bytes (\"hip:gfx90a\", ...); see tack.cuda.compile and tack.hip.compile."},
    {NULL, NULL, 0, NULL}
};

static struct PyModuleDef tack_module = {
    PyModuleDef_HEAD_INIT, "tack._tack",
    "The C extension behind the tack package.", -1, module_methods,
    NULL, NULL, NULL, NULL
};

static PyObject *make_compile_error(void)
{
    PyObject *dict = Py_BuildValue("{s:O,s:O,s:O}", "lineno", Py_None,
                                   "filename", Py_None, "col", Py_None);
    if (!dict)
        return NULL;
    PyObject *exc = PyErr_NewExceptionWithDoc(
        "tack.CompileError",
        "Kernel source the Tack language does not accept.  .filename and\n"
        ".lineno point into the user's file; .col is 0 when unknown.",
        PyExc_Exception, dict);
    Py_DECREF(dict);
    return exc;
}

/* Routes libtack's compile messages to the logging logger "tack". */
static PyObject *tack_logger;

static void log_to_python(void *ctx, tack_log_level level, const char *message)
{
    (void)ctx;
    PyGILState_STATE gil = PyGILState_Ensure();
    PyObject *r = PyObject_CallMethod(tack_logger, level == TACK_LOG_WARNING ? "warning" : "info",
                                      "ss", "%s", message);
    if (!r)
        PyErr_WriteUnraisable(tack_logger);
    Py_XDECREF(r);
    PyGILState_Release(gil);
}

/* Compiling takes milliseconds: let other Python threads run meanwhile
 * (when this thread holds the GIL; a large launch has released it). */
static void *compile_begin(void)
{
    return PyGILState_Check() ? (void *)PyEval_SaveThread() : NULL;
}

static void compile_end(void *state)
{
    if (state)
        PyEval_RestoreThread((PyThreadState *)state);
}

/* Before a kernel prints: what Python has buffered for sys.stdout goes
 * out first, so that its lines and the kernel's keep their order.  A
 * failing flush is not the launch's error. */
static void flush_python_stdout(void)
{
    PyGILState_STATE g = PyGILState_Ensure();
    PyObject *et, *ev, *tb;
    PyErr_Fetch(&et, &ev, &tb);
    PyObject *out = PySys_GetObject("stdout"); /* borrowed */
    if (out && out != Py_None) {
        PyObject *r = PyObject_CallMethod(out, "flush", NULL);
        Py_XDECREF(r);
        PyErr_Clear();
    }
    PyErr_Restore(et, ev, tb);
    PyGILState_Release(g);
}

static int install_logger(void)
{
    PyObject *logging = PyImport_ImportModule("logging");
    if (!logging)
        return -1;
    tack_logger = PyObject_CallMethod(logging, "getLogger", "s", "tack");
    Py_DECREF(logging);
    if (!tack_logger)
        return -1;
    tack_set_log_handler(log_to_python, NULL);
    tack_set_compile_hooks(compile_begin, compile_end);
    tack_set_before_print(flush_python_stdout);
    return 0;
}

PyMODINIT_FUNC PyInit__tack(void)
{
    import_array();

    PyObject *m = PyModule_Create(&tack_module);
    if (!m)
        return NULL;
    if (PyType_Ready(&ext_ArrayType) < 0 || PyType_Ready(&ext_KernelType) < 0 ||
        ext_kernel_init() < 0)
        goto fail;
    if (ext_dtype_init(m) < 0 || ext_device_init(m) < 0 || ext_stream_init(m) < 0)
        goto fail;
    if (PyModule_AddObjectRef(m, "Array", (PyObject *)&ext_ArrayType) < 0 ||
        PyModule_AddObjectRef(m, "Kernel", (PyObject *)&ext_KernelType) < 0 ||
        PyType_Ready(&ext_TextureType) < 0 ||
        PyModule_AddObjectRef(m, "Texture3D", (PyObject *)&ext_TextureType) < 0)
        goto fail;
    ext_CompileError = make_compile_error();
    if (!ext_CompileError ||
        PyModule_AddObjectRef(m, "CompileError", ext_CompileError) < 0)
        goto fail;
    if (PyModule_AddStringConstant(m, "__version__", tack_version()) < 0)
        goto fail;
    if (install_logger() < 0)
        goto fail;
    if (ext_cache_init(m) < 0)
        goto fail;
    return m;
fail:
    Py_DECREF(m);
    return NULL;
}
