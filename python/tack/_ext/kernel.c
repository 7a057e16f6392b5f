/*
 * kernel.c - tack.Kernel: a decorated Python function and its tack_kernel.
 *
 * Decoration reads the function's source (inspect.getsource, dedented; the
 * first line is co_firstlineno, the first decorator's line, which is where
 * getsource starts) and parses it, so syntax errors surface as
 * tack.CompileError at the decorator.  A call converts the arguments and
 * launches on the device of the first tack.Array argument, or the default
 * device.
 */
#define NO_IMPORT_ARRAY
#include "ext.h"

/* A launch lets go of the GIL only while its run runs, and only when the
 * library expects the run to take this many times what letting go and
 * taking it back costs (measured at import): see ext_kernel_init.  The
 * library calls the compile hooks (module.c) for it, after lowering and
 * compiling (which keep the GIL: the resolver needs it) and after the
 * arguments were converted, so nothing in the run touches a Python object. */
#define GIL_RELEASE_MARGIN 8

static PyObject *kernel_vectorcall(PyObject *self, PyObject *const *args,
                                   size_t nargsf, PyObject *kwnames);

/* Copies what functools.update_wrapper copies, into the instance dict. */
static int copy_wrapper_attrs(ext_KernelObject *kern, PyObject *func)
{
    static const char *const names[] = {"__module__", "__name__", "__qualname__",
                                        "__doc__", NULL};
    for (int i = 0; names[i]; i++) {
        PyObject *v = PyObject_GetAttrString(func, names[i]);
        if (!v) {
            if (!PyErr_ExceptionMatches(PyExc_AttributeError))
                return -1;
            PyErr_Clear();
            continue;
        }
        int rc = PyDict_SetItemString(kern->dict, names[i], v);
        Py_DECREF(v);
        if (rc < 0)
            return -1;
    }
    return PyDict_SetItemString(kern->dict, "__wrapped__", func);
}

/* An option of True, False or None (not given): 1, 0 or -1; -2 with a
 * TypeError for anything else (a string such as 'yes' is a mistake). */
static int bool_option(PyObject *v, const char *what, const char *name)
{
    if (!v || v == Py_None)
        return -1;
    if (!PyBool_Check(v)) {
        PyErr_Format(PyExc_TypeError, "%s(%s=...) takes True or False, not %.100s",
                     what, name, Py_TYPE(v)->tp_name);
        return -2;
    }
    return v == Py_True;
}

/* source=: checked against func now (a clear error at the decorator), then
 * kept on the function, where every kernel that reads func's text finds it. */
static int take_source(PyObject *func, PyObject *source, const char *what)
{
    if (!source || source == Py_None)
        return 0;
    if (!PyUnicode_Check(source)) {
        PyErr_Format(PyExc_TypeError, "%s(source=...) takes the source text as a str, not %.100s",
                     what, Py_TYPE(source)->tp_name);
        return -1;
    }
    if (ext_check_source(func, source) < 0)
        return -1;
    /* The text read before (source.c keeps it) gives way to this one. */
    if (PyObject_HasAttrString(func, "__tack_source_read__") &&
        PyObject_DelAttrString(func, "__tack_source_read__") < 0)
        return -1;
    return PyObject_SetAttrString(func, "__tack_source__", source);
}

/* Whether func names an array among its globals or closure cells (cheap:
 * most kernels name none, and skip _allocations.plan). */
static int names_outside_arrays(PyObject *func)
{
    PyObject *code = PyFunction_GET_CODE(func), *globals = PyFunction_GET_GLOBALS(func);
    PyObject *names = PyObject_GetAttrString(code, "co_names");
    int found = 0;
    for (Py_ssize_t i = 0; names && PyTuple_Check(names) && i < PyTuple_GET_SIZE(names) && !found; i++) {
        PyObject *v = PyDict_GetItemWithError(globals, PyTuple_GET_ITEM(names, i));
        found = v && (PyArray_Check(v) || ext_Array_Check(v));
    }
    Py_XDECREF(names);
    PyObject *cells = PyFunction_GET_CLOSURE(func);
    for (Py_ssize_t i = 0; cells && PyTuple_Check(cells) && i < PyTuple_GET_SIZE(cells) && !found; i++) {
        PyObject *v = PyCell_GET(PyTuple_GET_ITEM(cells, i));
        found = v && (PyArray_Check(v) || ext_Array_Check(v));
    }
    PyErr_Clear();
    return found;
}

/* The text to compile: the function's own, or, when its body makes arrays
 * before its launch (np.empty(n), ...) or reads arrays by name, the one
 * _allocations.plan rewrites with those arrays as parameters; the plan is
 * kept on the kernel. */
static PyObject *allocation_plan(ext_KernelObject *kern, PyObject *source_ctx_text,
                                 PyObject *filename)
{
    /* only a text that names a NumPy maker can make an array, and only a
     * function that names globals or outer locals can read one */
    static const char *const makers[] = {"empty", "zeros", "ones", "full"};
    const char *s = PyUnicode_AsUTF8(source_ctx_text);
    if (!s)
        return NULL;
    int named = 0;
    for (size_t i = 0; i < sizeof makers / sizeof *makers; i++)
        named |= strstr(s, makers[i]) != NULL;
    named &= strstr(s, "np.") != NULL || strstr(s, "numpy.") != NULL;
    if (!named && !names_outside_arrays(kern->func))
        return Py_NewRef(source_ctx_text);
    PyObject *mod = PyImport_ImportModule("tack._allocations");
    PyObject *r = mod ? PyObject_CallMethod(mod, "plan", "OOO", kern->func, source_ctx_text,
                                            filename) : NULL;
    Py_XDECREF(mod);
    if (!r)
        return NULL;
    if (r == Py_None) {
        Py_DECREF(r);
        return Py_NewRef(source_ctx_text);
    }
    PyObject *text = NULL;
    if (PyTuple_Check(r) && PyTuple_GET_SIZE(r) == 2 &&
        PyDict_SetItemString(kern->dict, "_tack_allocations", PyTuple_GET_ITEM(r, 1)) == 0) {
        text = Py_NewRef(PyTuple_GET_ITEM(r, 0));
        kern->adds_args = 1;
    }
    Py_DECREF(r);
    return text;
}

static PyObject *kernel_create(PyTypeObject *type, PyObject *func, PyObject *source,
                               int debug, int disk_cache)
{
    if (!PyFunction_Check(func)) {
        PyErr_Format(PyExc_TypeError,
                     "tack.kernel expects a Python function, not %.100s",
                     Py_TYPE(func)->tp_name);
        return NULL;
    }
    if (ext_refuse_lambda(func, "tack.kernel") < 0 || take_source(func, source, "tack.kernel") < 0)
        return NULL;
    ext_KernelObject *kern = PyObject_GC_New(ext_KernelObject, type);
    if (!kern)
        return NULL;
    kern->vectorcall = kernel_vectorcall;
    kern->k = NULL;
    kern->warm = NULL;
    kern->warm_misses = kern->warm_backoff = kern->warm_wait = 0;
    kern->func = Py_NewRef(func);
    kern->name = NULL;
    kern->home.keep = PyList_New(0);
    kern->home.ctxs = NULL;
    kern->home.kern = kern;
    kern->resolve_error = NULL;
    kern->nparams = 0;
    kern->adds_args = 0;
    kern->dict = PyDict_New();
    kern->weakreflist = NULL;
    PyObject_GC_Track(kern);
    if (!kern->home.keep || !kern->dict || copy_wrapper_attrs(kern, func) < 0)
        goto fail;

    ext_resolver_ctx *ctx = ext_ctx_for(&kern->home, func);
    if (!ctx)
        goto fail;
    PyObject *text = allocation_plan(kern, ctx->source, ctx->filename);
    if (!text)
        goto fail;
    tack_error err;
    memset(&err, 0, sizeof err);
    kern->k = tack_kernel_create(PyUnicode_AsUTF8(text), PyUnicode_AsUTF8(ctx->filename),
                                 ctx->first_line, ext_resolve, ctx, &err);
    Py_DECREF(text);
    if (!kern->k) {
        if (err.status == TACK_OK) {
            err.status = TACK_ERR_INTERNAL;
            snprintf(err.message, sizeof err.message,
                     "tack_kernel_create failed without a message");
        }
        ext_raise(&err);
        goto fail;
    }
    tack_kernel_set_debug(kern->k, debug);
    tack_kernel_set_disk_cache(kern->k, disk_cache);
    kern->nparams = tack_kernel_num_params(kern->k);
    const char *name = tack_kernel_name(kern->k);
    kern->name = name ? PyUnicode_FromString(name) : PyObject_GetAttrString(func, "__name__");
    if (!kern->name)
        goto fail;
    return (PyObject *)kern;
fail:
    Py_DECREF(kern);
    return NULL;
}

PyObject *ext_kernel_fn(PyObject *self, PyObject *args, PyObject *kwargs)
{
    (void)self;
    static char *kwlist[] = {"func", "source", "cache", "debug", NULL};
    PyObject *func, *source = NULL, *cache = NULL, *debug = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|$OOO:kernel", kwlist, &func, &source,
                                     &cache, &debug))
        return NULL;
    int use_cache = bool_option(cache, "tack.kernel", "cache");
    int dbg = use_cache < -1 ? -2 : bool_option(debug, "tack.kernel", "debug");
    if (dbg < -1)
        return NULL;
    int options = (source && source != Py_None) || use_cache >= 0 || dbg >= 0;
    if (ext_Kernel_Check(func)) {
        if (!options)
            return Py_NewRef(func);
        func = ((ext_KernelObject *)func)->func; /* a new kernel with these options */
    }
    return kernel_create(&ext_KernelType, func, source, dbg, use_cache != 0);
}

PyObject *ext_func_fn(PyObject *self, PyObject *args, PyObject *kwargs)
{
    (void)self;
    static char *kwlist[] = {"f", "source", NULL};
    PyObject *func, *source = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|$O:func", kwlist, &func, &source))
        return NULL;
    if (!PyFunction_Check(func)) {
        PyErr_Format(PyExc_TypeError,
                     "tack.func expects a Python function, not %.100s",
                     Py_TYPE(func)->tp_name);
        return NULL;
    }
    if (ext_refuse_lambda(func, "tack.func") < 0 || take_source(func, source, "tack.func") < 0)
        return NULL;
    if (PyObject_SetAttrString(func, "__tack_func__", Py_True) < 0)
        return NULL;
    /* Its text now, as the kernel's is read at decoration (see source.c);
     * one that cannot be found yet is looked for again at its first use. */
    ext_resolver_ctx probe;
    memset(&probe, 0, sizeof probe);
    if (ext_function_source(func, &probe) < 0)
        PyErr_Clear();
    Py_XDECREF(probe.source);
    Py_XDECREF(probe.filename);
    return Py_NewRef(func);
}

static PyObject *kernel_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"func", NULL};
    PyObject *func;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O:Kernel", kwlist, &func))
        return NULL;
    return kernel_create(type, func, NULL, -1, 1);
}

/* "x, out, a" for messages. */
static PyObject *param_list(ext_KernelObject *kern)
{
    PyObject *names = PyList_New(0);
    if (!names)
        return NULL;
    for (int i = 0; i < kern->nparams; i++) {
        const char *p = tack_kernel_param_name(kern->k, i);
        PyObject *s = PyUnicode_FromString(p ? p : "?");
        if (!s || PyList_Append(names, s) < 0) {
            Py_XDECREF(s);
            Py_DECREF(names);
            return NULL;
        }
        Py_DECREF(s);
    }
    PyObject *sep = PyUnicode_FromString(", ");
    PyObject *r = sep ? PyUnicode_Join(sep, names) : NULL;
    Py_XDECREF(sep);
    Py_DECREF(names);
    return r;
}

/* "'a'", "'a' and 'b'", "'a', 'b', and 'c'": Python's list of missing names. */
static PyObject *missing_list(ext_KernelObject *kern, PyObject *const *bound)
{
    PyObject *names = PyList_New(0);
    if (!names)
        return NULL;
    for (int i = 0; i < kern->nparams; i++) {
        if (bound[i])
            continue;
        const char *p = tack_kernel_param_name(kern->k, i);
        PyObject *s = PyUnicode_FromFormat("'%s'", p ? p : "?");
        if (!s || PyList_Append(names, s) < 0) {
            Py_XDECREF(s);
            Py_DECREF(names);
            return NULL;
        }
        Py_DECREF(s);
    }
    Py_ssize_t n = PyList_GET_SIZE(names);
    PyObject *r = NULL;
    if (n == 1) {
        r = Py_NewRef(PyList_GET_ITEM(names, 0));
    } else {
        PyObject *head = PyList_GetSlice(names, 0, n - 1);
        PyObject *sep = PyUnicode_FromString(", ");
        PyObject *joined = head && sep ? PyUnicode_Join(sep, head) : NULL;
        if (joined)
            r = PyUnicode_FromFormat("%U%s and %U", joined, n > 2 ? "," : "",
                                     PyList_GET_ITEM(names, n - 1));
        Py_XDECREF(head);
        Py_XDECREF(sep);
        Py_XDECREF(joined);
    }
    Py_DECREF(names);
    return r;
}

int ext_bind_args(ext_KernelObject *kern, PyObject *const *args, Py_ssize_t nargs,
                  PyObject *kwnames, PyObject *const *kwvalues, PyObject *skip,
                  PyObject **bound)
{
    if (nargs > kern->nparams) {
        PyObject *params = param_list(kern);
        if (params)
            PyErr_Format(PyExc_TypeError,
                         "kernel '%U' takes %d argument%s (%U) but %zd %s given",
                         kern->name, kern->nparams, kern->nparams == 1 ? "" : "s",
                         params, nargs, nargs == 1 ? "was" : "were");
        Py_XDECREF(params);
        return -1;
    }
    for (int i = 0; i < kern->nparams; i++)
        bound[i] = i < nargs ? args[i] : NULL;
    Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    for (Py_ssize_t j = 0; j < nkw; j++) {
        PyObject *key = PyTuple_GET_ITEM(kwnames, j);
        if (key == skip)
            continue;
        const char *name = PyUnicode_AsUTF8(key);
        if (!name)
            return -1;
        int at = -1;
        for (int i = 0; i < kern->nparams && at < 0; i++) {
            const char *p = tack_kernel_param_name(kern->k, i);
            if (p && !strcmp(p, name))
                at = i;
        }
        if (at < 0) {
            PyErr_Format(PyExc_TypeError, "kernel '%U' got an unexpected keyword argument '%U'",
                         kern->name, key);
            return -1;
        }
        if (bound[at]) {
            PyErr_Format(PyExc_TypeError, "kernel '%U' got multiple values for argument '%U'",
                         kern->name, key);
            return -1;
        }
        bound[at] = kwvalues[j];
    }
    int missing = 0;
    for (int i = 0; i < kern->nparams; i++)
        missing += !bound[i];
    int dims = tack_kernel_thread_dims(kern->k);
    if (missing && dims && missing <= dims && nargs == kern->nparams - dims) {
        PyErr_Format(PyExc_TypeError,
                     "kernel '%U' asks for tack.tid() instead of looping, so it has no launch "
                     "size of its own: launch it as tack.launch(%U, dim=%s, inputs=[...]) (or "
                     "pass the extents after its arguments)",
                     kern->name, kern->name, dims == 1 ? "n" : dims == 2 ? "(n, m)" : "(n, m, l)");
        return -1;
    }
    if (missing) {
        PyObject *list = missing_list(kern, bound);
        if (list)
            PyErr_Format(PyExc_TypeError, "kernel '%U' missing %d required positional argument%s: %U",
                         kern->name, missing, missing == 1 ? "" : "s", list);
        Py_XDECREF(list);
        return -1;
    }
    return 0;
}

/* What a kernel returns: None, one Python scalar (int or float by the
 * reduction's dtype), or a tuple of them. */
static PyObject *result_value(const tack_results *r, int i)
{
    switch (r->dtype[i]) {
    case TACK_F32:
    case TACK_F64:
        return PyFloat_FromDouble(r->value[i].f);
    case TACK_U8:
    case TACK_U16:
    case TACK_U32:
    case TACK_U64:
        return PyLong_FromUnsignedLongLong(r->value[i].u);
    case TACK_BOOL:
        return PyBool_FromLong(r->value[i].i != 0);
    default:
        return PyLong_FromLongLong(r->value[i].i);
    }
}

/* A complex value: a Python complex (complex64's parts widened). */
static PyObject *result_complex(const tack_results *r, const tack_result_value *v)
{
    return PyComplex_FromDoubles(r->value[v->first].f, r->value[v->first + 1].f);
}

/* A vector or matrix value: a NumPy array of its shape and its
 * reduction's dtype, built from a list of the Python numbers. */
static PyObject *result_array(const tack_results *r, const tack_result_value *v)
{
    PyObject *list = PyList_New(v->count);
    if (!list)
        return NULL;
    for (int k = 0; k < v->count; k++) {
        PyObject *x = result_value(r, v->first + k);
        if (!x) {
            Py_DECREF(list);
            return NULL;
        }
        PyList_SET_ITEM(list, k, x);
    }
    PyObject *out = NULL, *np = PyImport_ImportModule("numpy");
    static const char *const names[TACK_DTYPE_COUNT] = {
        [TACK_BOOL] = "bool", [TACK_I8] = "int8", [TACK_I16] = "int16", [TACK_I32] = "int32",
        [TACK_I64] = "int64", [TACK_U8] = "uint8", [TACK_U16] = "uint16", [TACK_U32] = "uint32",
        [TACK_U64] = "uint64", [TACK_F32] = "float32", [TACK_F64] = "float64",
        [TACK_F16] = "float16"};
    tack_dtype dt = r->dtype[v->first];
    const char *dtype = (unsigned)dt < TACK_DTYPE_COUNT && names[dt] ? names[dt] : "float64";
    if (np) {
        PyObject *a = PyObject_CallMethod(np, "array", "Os", list, dtype);
        if (a && v->kind == TACK_RESULT_MATRIX) {
            out = PyObject_CallMethod(a, "reshape", "ii", v->rows, v->cols);
            Py_DECREF(a);
        } else {
            out = a;
        }
        Py_DECREF(np);
    }
    Py_DECREF(list);
    return out;
}

/* Value j: a scalar, a complex, or an array. */
static PyObject *result_object(const tack_results *r, int j)
{
    if (j >= r->nvalues) /* no grouping: each number is a value */
        return result_value(r, j);
    const tack_result_value *v = &r->values[j];
    switch (v->kind) {
    case TACK_RESULT_COMPLEX:
        return result_complex(r, v);
    case TACK_RESULT_VECTOR:
    case TACK_RESULT_MATRIX:
        return result_array(r, v);
    default:
        return result_value(r, v->first);
    }
}

PyObject *ext_results_to_python(const tack_results *r)
{
    int n = r->nvalues ? r->nvalues : r->n;
    if (r->n == 0)
        Py_RETURN_NONE;
    if (n == 1)
        return result_object(r, 0);
    PyObject *t = PyTuple_New(n);
    if (!t)
        return NULL;
    for (int i = 0; i < n; i++) {
        PyObject *v = result_object(r, i);
        if (!v) {
            Py_DECREF(t);
            return NULL;
        }
        PyTuple_SET_ITEM(t, i, v);
    }
    return t;
}

void ext_error_clear(tack_error *err)
{
    err->status = TACK_OK;
    err->message[0] = '\0';
    err->filename[0] = '\0';
    err->lineno = err->col = 0;
}

/* Converts nparams arguments (in parameter order) and launches. */
static PyObject *kernel_launch(ext_KernelObject *kern, PyObject *const *args, Py_ssize_t nargs)
{
    tack_arg targs[TACK_MAX_PARAMS];
    ext_launch_state st;
    ext_launch_init(&st, kern);
    if (ext_convert_args(kern, args, nargs, targs, &st) < 0)
        return NULL;
    PyObject *dev = st.device ? st.device : ext_default_device();
    if (!dev) {
        ext_release_args(&st);
        return NULL;
    }
    Py_INCREF(dev); /* another thread may switch the default during the launch */
    tack_device *d = ((ext_DeviceObject *)dev)->dev;
    tack_error err;
    ext_error_clear(&err);
    tack_results results;
    tack_status s;
    if (!ext_warm_converted_call(kern, targs, nargs, dev, &results, &err, &s))
        s = tack_kernel_call(kern->k, d, targs, (int)nargs, &results, &err);
    /* A queued launch over another library's memory finishes before the
     * call returns: that library may read it at once, on its own stream. */
    if (s == TACK_OK && st.foreign_device) {
        Py_BEGIN_ALLOW_THREADS
        s = tack_device_synchronize(d, &err);
        Py_END_ALLOW_THREADS
    }
    if (s == TACK_OK)
        ext_warm_learn(kern, args, nargs, targs, dev, &st);
    ext_release_args(&st);
    Py_DECREF(dev);
    if (s == TACK_OK) {
        Py_CLEAR(kern->resolve_error);
        return ext_results_to_python(&results);
    }
    return ext_raise_kernel_error(kern, s, &err);
}

static PyObject *taped(PyObject *kern, PyObject *result, PyObject *const *args, Py_ssize_t n);

/* A call of a kernel that has arrays it is not passed, without them:
 * _allocations.call makes or reads them and calls the kernel again with
 * them (kernel_vectorcall's own path). */
static PyObject *allocating_call(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                                 PyObject *kwnames)
{
    Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    static PyObject *call; /* _allocations.call, looked up once */
    if (!call) {
        PyObject *mod = PyImport_ImportModule("tack._allocations");
        call = mod ? PyObject_GetAttrString(mod, "call") : NULL;
        Py_XDECREF(mod);
        if (!call)
            return NULL;
    }
    PyObject *pos = PyTuple_New(nargs);
    PyObject *kw = pos ? PyDict_New() : NULL;
    PyObject *r = NULL;
    if (kw) {
        for (Py_ssize_t i = 0; i < nargs; i++)
            PyTuple_SET_ITEM(pos, i, Py_NewRef(args[i]));
        int ok = 1;
        for (Py_ssize_t j = 0; j < nkw && ok; j++)
            ok = PyDict_SetItem(kw, PyTuple_GET_ITEM(kwnames, j), args[nargs + j]) == 0;
        if (ok)
            r = PyObject_CallFunctionObjArgs(call, self, pos, kw, NULL);
    }
    Py_XDECREF(kw);
    Py_XDECREF(pos);
    return r;
}

/* A call: positional arguments go straight to the launch; keywords are
 * bound to parameters by name first (then the arguments are the same
 * array in the same order, so the same variant is selected). */
static PyObject *kernel_vectorcall(PyObject *self, PyObject *const *args,
                                   size_t nargsf, PyObject *kwnames)
{
    ext_KernelObject *kern = (ext_KernelObject *)self;
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if (kern->adds_args && (nargs != kern->nparams || (kwnames && PyTuple_GET_SIZE(kwnames))))
        return allocating_call(self, args, nargs, kwnames);
    if (kwnames && PyTuple_GET_SIZE(kwnames)) {
        PyObject *bound[TACK_MAX_PARAMS];
        if (ext_bind_args(kern, args, nargs, kwnames, args + nargs, NULL, bound) < 0)
            return NULL;
        return taped(self, kernel_launch(kern, bound, kern->nparams), bound, kern->nparams);
    }
    if (nargs != kern->nparams) {
        PyObject *bound[TACK_MAX_PARAMS];
        /* Too many, or too few: the binder's message names what is missing. */
        ext_bind_args(kern, args, nargs, NULL, NULL, NULL, bound);
        return NULL;
    }
    PyObject *result;
    if (!ext_warm_call(kern, args, nargs, &result))
        result = kernel_launch(kern, args, nargs);
    return taped(self, result, args, nargs);
}

/* The recording tack.Tape (autodiff.py), or NULL: each successful call
 * is handed to its _record(kernel, args, result), which returns the result
 * the caller gets. */
static PyObject *active_tape;

PyObject *ext_set_tape(PyObject *self, PyObject *tape)
{
    (void)self;
    PyObject *old = active_tape;
    active_tape = tape == Py_None ? NULL : Py_NewRef(tape);
    Py_XDECREF(old);
    Py_RETURN_NONE;
}

static PyObject *taped(PyObject *kern, PyObject *result, PyObject *const *args, Py_ssize_t n)
{
    if (!result || !active_tape)
        return result;
    PyObject *t = PyTuple_New(n);
    if (!t) {
        Py_DECREF(result);
        return NULL;
    }
    for (Py_ssize_t i = 0; i < n; i++)
        PyTuple_SET_ITEM(t, i, Py_NewRef(args[i]));
    /* _record may hand back the result as the tape's seed handle (a
     * returned float that tape.backward(loss) accepts). */
    PyObject *r = PyObject_CallMethod(active_tape, "_record", "OOO", kern, t, result);
    Py_DECREF(t);
    Py_DECREF(result);
    return r;
}

/* The kernel's adjoint (made on first use), or NULL with the exception. */
static tack_kernel *adjoint_of(ext_KernelObject *kern)
{
    tack_error err;
    memset(&err, 0, sizeof err);
    tack_kernel *adj = tack_kernel_adjoint(kern->k, &err);
    if (!adj)
        ext_raise_kernel_error(kern, err.status, &err);
    return adj;
}

/* kernel._adjoint_params(): how many arguments _adjoint takes (2n, and
 * one more for a kernel that returns values: their gradients). */
static PyObject *kernel_adjoint_params(PyObject *self, PyObject *unused)
{
    (void)unused;
    tack_kernel *adj = adjoint_of((ext_KernelObject *)self);
    return adj ? PyLong_FromLong(tack_kernel_num_params(adj)) : NULL;
}

/* kernel._param_names(): every parameter the compiled kernel takes, its
 * own, then the arrays _allocations adds, then a tack.tid() kernel's extents. */
static PyObject *kernel_param_names(PyObject *self, PyObject *unused)
{
    (void)unused;
    ext_KernelObject *kern = (ext_KernelObject *)self;
    PyObject *t = PyTuple_New(kern->nparams);
    for (int i = 0; t && i < kern->nparams; i++) {
        PyObject *name = PyUnicode_FromString(tack_kernel_param_name(kern->k, i));
        if (!name) {
            Py_CLEAR(t);
            break;
        }
        PyTuple_SET_ITEM(t, i, name);
    }
    return t;
}

/* kernel._thread_dims(): tack_kernel_thread_dims (tack.launch's check). */
static PyObject *kernel_thread_dims(PyObject *self, PyObject *unused)
{
    (void)unused;
    return PyLong_FromLong(tack_kernel_thread_dims(((ext_KernelObject *)self)->k));
}

/* kernel.backward(*args, adj=None): in python/tack/autodiff.py. */
static PyObject *kernel_backward(PyObject *self, PyObject *args, PyObject *kwargs)
{
    PyObject *mod = PyImport_ImportModule("tack.autodiff");
    if (!mod)
        return NULL;
    PyObject *fn = PyObject_GetAttrString(mod, "kernel_backward");
    Py_DECREF(mod);
    if (!fn)
        return NULL;
    PyObject *all = PyTuple_New(PyTuple_GET_SIZE(args) + 1);
    if (!all) {
        Py_DECREF(fn);
        return NULL;
    }
    PyTuple_SET_ITEM(all, 0, Py_NewRef(self));
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(args); i++)
        PyTuple_SET_ITEM(all, i + 1, Py_NewRef(PyTuple_GET_ITEM(args, i)));
    PyObject *r = PyObject_Call(fn, all, kwargs);
    Py_DECREF(all);
    Py_DECREF(fn);
    return r;
}

/* kernel._adjoint(*args, *grads): one launch of the adjoint kernel
 * (tack_kernel_adjoint), with the kernel's arguments then one gradient per
 * parameter; python/tack/autodiff.py builds kernel.backward and the tape on it. */
static PyObject *kernel_adjoint(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    ext_KernelObject *kern = (ext_KernelObject *)self;
    tack_kernel *adj = adjoint_of(kern);
    if (!adj)
        return NULL;
    if (nargs != tack_kernel_num_params(adj)) {
        PyErr_Format(PyExc_TypeError, "kernel '%U': _adjoint takes %d arguments, %zd given",
                     kern->name, tack_kernel_num_params(adj), nargs);
        return NULL;
    }
    Py_CLEAR(kern->resolve_error);
    /* The same object seen through the adjoint's parameters (messages name
     * "x.grad"); the resolver still writes into kern itself. */
    ext_KernelObject view = *kern;
    view.k = adj;
    view.nparams = (int)nargs;
    return kernel_launch(&view, args, nargs);
}

PyObject *ext_raise_kernel_error(ext_KernelObject *kern, tack_status s, tack_error *err)
{
    if (err->status == TACK_OK)
        err->status = s;
    ext_raise(err);
    if (kern->resolve_error) {
        /* A Python error while looking a name up explains the failure. */
        PyObject *t, *v, *tb;
        PyErr_Fetch(&t, &v, &tb);
        PyErr_NormalizeException(&t, &v, &tb);
        if (v)
            PyException_SetCause(v, kern->resolve_error); /* steals */
        else
            Py_DECREF(kern->resolve_error);
        kern->resolve_error = NULL;
        PyErr_Restore(t, v, tb);
    }
    return NULL;
}

/* ---- introspection --------------------------------------------------- */

static PyObject *int_tuple(int n, const int64_t *v)
{
    PyObject *t = PyTuple_New(n);
    if (!t)
        return NULL;
    for (int i = 0; i < n; i++) {
        PyObject *x = PyLong_FromLongLong(v[i]);
        if (!x) {
            Py_DECREF(t);
            return NULL;
        }
        PyTuple_SET_ITEM(t, i, x);
    }
    return t;
}


/* A variant's key as the reference spells it, a 5-tuple (param_sig,
 * vec_sig, tmpl_key, shape_sig, disjoint), carrying strided_sig (the
 * parameters indexed through strides) as an attribute beyond the tuple:
 * code that unpacks or compares five elements keeps working, and two keys
 * that differ only in strides stay distinguishable. */
static PyStructSequence_Field variant_key_fields[] = {
    {"param_sig", "per parameter: (type, is_array, is_texture, texture_shape)"},
    {"vec_sig", "(parameter, vector width) pairs"},
    {"tmpl_key", "the template classes' structure"},
    {"shape_sig", "the array dimensions the body reads, baked in"},
    {"disjoint", "True when the arrays do not overlap (noalias)"},
    {"strided_sig", "the parameters whose arrays are not C-contiguous"},
    {NULL, NULL},
};
static PyStructSequence_Desc variant_key_desc = {
    "tack.VariantKey",
    "The key of one compiled variant: (param_sig, vec_sig, tmpl_key, shape_sig,\n"
    "disjoint), with .strided_sig besides.",
    variant_key_fields, 5};
static PyTypeObject *variant_key_type;

/* What letting go of the GIL and taking it back costs, in ns, as the
 * compile hooks do it (uncontended, at import): the best of a few rounds. */
static uint64_t gil_release_ns(void)
{
    uint64_t best = UINT64_MAX;
    for (int round = 0; round < 8; round++) {
        struct timespec a, b;
        clock_gettime(CLOCK_MONOTONIC, &a);
        for (int i = 0; i < 32; i++) {
            PyThreadState *ts = PyGILState_Check() ? PyEval_SaveThread() : NULL;
            if (ts)
                PyEval_RestoreThread(ts);
        }
        clock_gettime(CLOCK_MONOTONIC, &b);
        uint64_t ns = (uint64_t)(b.tv_sec - a.tv_sec) * 1000000000u +
                      (uint64_t)b.tv_nsec - (uint64_t)a.tv_nsec;
        if (ns < best)
            best = ns;
    }
    return best / 32 ? best / 32 : 1;
}

int ext_kernel_init(void)
{
    variant_key_type = PyStructSequence_NewType(&variant_key_desc);
    if (!variant_key_type)
        return -1;
    tack_set_release_threshold(GIL_RELEASE_MARGIN * gil_release_ns());
    return 0;
}

static PyObject *variant_key_tuple(const tack_variant_key *key)
{
    PyObject *params = PyTuple_New(key->num_params);
    if (!params)
        return NULL;
    for (int i = 0; i < key->num_params; i++) {
        const tack_param_sig *p = &key->params[i];
        PyObject *e;
        if (p->is_template) {
            e = Py_BuildValue("(sOOO)", "template", Py_False, Py_False, Py_None);
        } else {
            PyObject *tex = p->is_texture ? int_tuple(3, p->texture_shape)
                                          : Py_NewRef(Py_None);
            /* an array of complex numbers shows as its NumPy dtype */
            const char *tname = tack_dtype_name(p->type);
            for (int v = 0; v < key->num_vec; v++)
                if (key->vec_param[v] == i && key->vec_width[v] == TACK_COMPLEX_WIDTH)
                    tname = p->type == TACK_F32 ? "complex64" : "complex128";
            e = tex ? Py_BuildValue("(sNNN)", tname,
                                    PyBool_FromLong(p->is_array),
                                    PyBool_FromLong(p->is_texture), tex)
                    : NULL;
        }
        if (!e) {
            Py_DECREF(params);
            return NULL;
        }
        PyTuple_SET_ITEM(params, i, e);
    }
    int nvec = 0;
    for (int i = 0; i < key->num_vec; i++)
        nvec += key->vec_width[i] != TACK_COMPLEX_WIDTH; /* complex: in param_sig's type */
    PyObject *vec = PyTuple_New(nvec);
    if (!vec) {
        Py_DECREF(params);
        return NULL;
    }
    for (int i = 0, j = 0; i < key->num_vec; i++) {
        if (key->vec_width[i] == TACK_COMPLEX_WIDTH)
            continue;
        PyObject *e = Py_BuildValue("(ii)", key->vec_param[i], key->vec_width[i]);
        if (!e) {
            Py_DECREF(params);
            Py_DECREF(vec);
            return NULL;
        }
        PyTuple_SET_ITEM(vec, j++, e);
    }
    int ntmpl = key->num_tmpl < 0 ? 0 : key->num_tmpl;
    int maxtmpl = (int)(sizeof key->tmpl / sizeof key->tmpl[0]);
    if (ntmpl > maxtmpl)
        ntmpl = maxtmpl;
    PyObject *tmpl = PyTuple_New(ntmpl);
    if (!tmpl) {
        Py_DECREF(params);
        Py_DECREF(vec);
        return NULL;
    }
    for (int i = 0; i < ntmpl; i++) {
        PyObject *e = PyUnicode_DecodeUTF8(key->tmpl[i],
                                           (Py_ssize_t)strnlen(key->tmpl[i],
                                                               sizeof key->tmpl[i]),
                                           "replace");
        if (!e) {
            Py_DECREF(params);
            Py_DECREF(vec);
            Py_DECREF(tmpl);
            return NULL;
        }
        PyTuple_SET_ITEM(tmpl, i, e);
    }
    PyObject *shape = int_tuple(key->num_shape, key->shape);
    /* strided_sig: the parameters whose arrays are indexed through strides. */
    int64_t strided[TACK_MAX_PARAMS];
    int nstrided = 0;
    for (int i = 0; i < key->num_params; i++)
        if (key->params[i].is_strided)
            strided[nstrided++] = i;
    PyObject *strided_sig = shape ? int_tuple(nstrided, strided) : NULL;
    if (!strided_sig) {
        Py_DECREF(params);
        Py_DECREF(vec);
        Py_DECREF(tmpl);
        Py_XDECREF(shape);
        return NULL;
    }
    PyObject *out = PyStructSequence_New(variant_key_type);
    PyObject *items[6] = {params, vec, tmpl, shape, PyBool_FromLong(key->disjoint), strided_sig};
    for (int i = 0; i < 6; i++) {
        if (out && items[i])
            PyStructSequence_SetItem(out, i, items[i]); /* steals */
        else
            Py_XDECREF(items[i]);
    }
    return out;
}

static PyObject *kernel_variants(PyObject *self, PyObject *args, PyObject *kwargs)
{
    ext_KernelObject *kern = (ext_KernelObject *)self;
    static char *kwlist[] = {"device", NULL};
    PyObject *device_obj = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|O:variants", kwlist, &device_obj))
        return NULL;
    PyObject *dev = ext_device_from_object(device_obj);
    if (!dev)
        return NULL;
    tack_device *d = ((ext_DeviceObject *)dev)->dev;
    int n = tack_kernel_num_variants(kern->k, d);
    PyObject *list = PyList_New(0);
    tack_variant_key *key = PyMem_Malloc(sizeof *key);
    if (!list || !key) {
        if (!key)
            PyErr_NoMemory();
        goto fail;
    }
    for (int i = 0; i < n; i++) {
        memset(key, 0, sizeof *key);
        if (tack_kernel_variant_key(kern->k, d, i, key) != TACK_OK)
            continue; /* dropped between the count and the read */
        PyObject *t = variant_key_tuple(key);
        if (!t || PyList_Append(list, t) < 0) {
            Py_XDECREF(t);
            goto fail;
        }
        Py_DECREF(t);
    }
    PyMem_Free(key);
    Py_DECREF(dev);
    return list;
fail:
    PyMem_Free(key);
    Py_XDECREF(list);
    Py_DECREF(dev);
    return NULL;
}

static PyObject *kernel_variant_tiers(PyObject *self, PyObject *args, PyObject *kwargs)
{
    ext_KernelObject *kern = (ext_KernelObject *)self;
    static char *kwlist[] = {"device", NULL};
    PyObject *device_obj = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|O:variant_tiers", kwlist, &device_obj))
        return NULL;
    PyObject *dev = ext_device_from_object(device_obj);
    if (!dev)
        return NULL;
    tack_device *d = ((ext_DeviceObject *)dev)->dev;
    int n = tack_kernel_num_variants(kern->k, d);
    PyObject *list = PyList_New(0);
    for (int i = 0; list && i < n; i++) {
        int tier = tack_kernel_variant_tier(kern->k, d, i);
        if (tier < 0)
            continue; /* dropped between the count and the read */
        PyObject *t = PyLong_FromLong(tier);
        if (!t || PyList_Append(list, t) < 0)
            Py_CLEAR(list);
        Py_XDECREF(t);
    }
    Py_DECREF(dev);
    return list;
}

static PyObject *kernel_ir_templates(PyObject *self, PyObject *unused)
{
    (void)unused;
    ext_KernelObject *kern = (ext_KernelObject *)self;
    int n = tack_kernel_num_ir_templates(kern->k);
    PyObject *list = PyList_New(n < 0 ? 0 : n);
    if (!list)
        return NULL;
    for (int i = 0; i < n; i++) {
        /* The key's parts as a tuple of strings: ("debug", "vec=0:3", ...),
         * () for the plain template. */
        char text[8192];
        PyObject *key = NULL;
        if (tack_kernel_ir_template_key(kern->k, i, text, sizeof text) == 0) {
            if (!text[0]) {
                key = PyTuple_New(0);
            } else {
                PyObject *str = PyUnicode_FromString(text);
                PyObject *sep = PyUnicode_FromString(";");
                PyObject *split = str && sep ? PyUnicode_Split(str, sep, -1) : NULL;
                key = split ? PyList_AsTuple(split) : NULL;
                Py_XDECREF(str);
                Py_XDECREF(sep);
                Py_XDECREF(split);
            }
        } else {
            key = PyTuple_New(0); /* retired meanwhile */
        }
        if (!key) {
            Py_DECREF(list);
            return NULL;
        }
        PyList_SET_ITEM(list, i, key);
    }
    return list;
}

/* One kernel's counters as tack.stats()["kernels"] and Kernel.stats() give
 * them; `into`, when given, is such a dict to add them to (two live kernels
 * of one name are reported together). */
int ext_kernel_stats_into(PyObject *dict, const tack_kernel_stats *s)
{
    static const char *const counts[] = {"launches", "compiles", "lowerings"};
    static const char *const times[] = {"compile_ms", "launch_ms"};
    const uint64_t cv[] = {s->launches, s->compiles, s->lowerings};
    const double tv[] = {s->compile_ns * 1e-6, s->launch_ns * 1e-6};
    for (int i = 0; i < 3; i++) {
        PyObject *old = PyDict_GetItemString(dict, counts[i]);
        unsigned long long base = old ? PyLong_AsUnsignedLongLong(old) : 0;
        PyObject *v = PyLong_FromUnsignedLongLong(base + cv[i]);
        if (!v || PyDict_SetItemString(dict, counts[i], v) < 0) {
            Py_XDECREF(v);
            return -1;
        }
        Py_DECREF(v);
    }
    for (int i = 0; i < 2; i++) {
        PyObject *old = PyDict_GetItemString(dict, times[i]);
        PyObject *v = PyFloat_FromDouble((old ? PyFloat_AsDouble(old) : 0.0) + tv[i]);
        if (!v || PyDict_SetItemString(dict, times[i], v) < 0) {
            Py_XDECREF(v);
            return -1;
        }
        Py_DECREF(v);
    }
    return 0;
}

static PyObject *kernel_stats(PyObject *self, PyObject *unused)
{
    (void)unused;
    tack_kernel_stats s;
    tack_kernel_get_stats(((ext_KernelObject *)self)->k, &s);
    PyObject *d = PyDict_New();
    if (d && ext_kernel_stats_into(d, &s) < 0)
        Py_CLEAR(d);
    return d;
}

/* inspect_ir / inspect_llvm / inspect_asm(*args, device=None, **kwargs):
 * the arguments bind as for a call; `device` picks the device unless the
 * kernel has a parameter of that name (then it is that argument, and the
 * device is chosen as for a call: the first tack.Array's, or the default). */
static PyObject *kernel_inspect(ext_KernelObject *kern, tack_inspect_kind kind,
                                PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    PyObject *device_key = NULL, *device_obj = NULL;
    Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    int has_device_param = 0;
    for (int i = 0; i < kern->nparams; i++) {
        const char *p = tack_kernel_param_name(kern->k, i);
        has_device_param |= p && !strcmp(p, "device");
    }
    for (Py_ssize_t j = 0; j < nkw && !has_device_param; j++) {
        PyObject *key = PyTuple_GET_ITEM(kwnames, j);
        if (PyUnicode_CompareWithASCIIString(key, "device") == 0) {
            device_key = key;
            device_obj = args[nargs + j];
        }
    }
    PyObject *bound[TACK_MAX_PARAMS];
    if (ext_bind_args(kern, args, nargs, kwnames, args + nargs, device_key, bound) < 0)
        return NULL;
    tack_arg targs[TACK_MAX_PARAMS];
    ext_launch_state st;
    ext_launch_init(&st, kern);
    if (ext_convert_args(kern, bound, kern->nparams, targs, &st) < 0)
        return NULL;
    PyObject *dev = device_obj && device_obj != Py_None ? ext_device_from_object(device_obj)
                  : st.device ? Py_NewRef(st.device)
                  : ext_device_from_object(NULL);
    if (!dev) {
        ext_release_args(&st);
        return NULL;
    }
    tack_error err;
    memset(&err, 0, sizeof err);
    char *text = NULL;
    /* The GIL stays held: lowering may call the resolver (a compile lets
     * it go through the library's compile hooks). */
    tack_status s = tack_kernel_inspect(kern->k, ((ext_DeviceObject *)dev)->dev, kind, targs,
                                        kern->nparams, &text, &err);
    ext_release_args(&st);
    Py_DECREF(dev);
    if (s != TACK_OK)
        return ext_raise_kernel_error(kern, s, &err);
    PyObject *r = PyUnicode_DecodeUTF8(text, (Py_ssize_t)strlen(text), "replace");
    free(text);
    return r;
}

static PyObject *kernel_inspect_ir(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                                   PyObject *kwnames)
{
    return kernel_inspect((ext_KernelObject *)self, TACK_INSPECT_IR, args, nargs, kwnames);
}

static PyObject *kernel_inspect_llvm(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                                     PyObject *kwnames)
{
    return kernel_inspect((ext_KernelObject *)self, TACK_INSPECT_LLVM, args, nargs, kwnames);
}

static PyObject *kernel_inspect_asm(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                                    PyObject *kwnames)
{
    return kernel_inspect((ext_KernelObject *)self, TACK_INSPECT_ASM, args, nargs, kwnames);
}

/* ---- the tack.Kernel type -------------------------------------------- */

static int kernel_traverse(PyObject *self, visitproc visit, void *arg)
{
    ext_KernelObject *kern = (ext_KernelObject *)self;
    Py_VISIT(kern->func);
    Py_VISIT(kern->home.keep);
    Py_VISIT(kern->dict);
    Py_VISIT(kern->resolve_error);
    for (ext_resolver_ctx *c = kern->home.ctxs; c; c = c->next)
        Py_VISIT(c->func);
    return 0;
}

static int kernel_clear(PyObject *self)
{
    ext_KernelObject *kern = (ext_KernelObject *)self;
    Py_CLEAR(kern->dict);
    Py_CLEAR(kern->resolve_error);
    /* func, keep and the contexts stay until dealloc: the library may hold
     * their texts until the kernel is freed. */
    return 0;
}

static void kernel_dealloc(PyObject *self)
{
    ext_KernelObject *kern = (ext_KernelObject *)self;
    PyObject_GC_UnTrack(self);
    if (kern->weakreflist)
        PyObject_ClearWeakRefs(self);
    ext_warm_forget(kern); /* its prepared launch goes before the kernel */
    if (kern->k)
        tack_kernel_free(kern->k);
    kern->k = NULL;
    ext_ctx_free_all(&kern->home);
    Py_CLEAR(kern->func);
    Py_CLEAR(kern->name);
    Py_CLEAR(kern->dict);
    Py_CLEAR(kern->resolve_error);
    Py_TYPE(self)->tp_free(self);
}

static PyObject *kernel_repr(PyObject *self)
{
    ext_KernelObject *kern = (ext_KernelObject *)self;
    return PyUnicode_FromFormat("<tack.Kernel %U>", kern->name);
}

static PyObject *kernel_get_func(PyObject *self, void *closure)
{
    (void)closure;
    return Py_NewRef(((ext_KernelObject *)self)->func);
}

/* Accessing a kernel through an instance of a @tack.device_class binds
 * it, as a method: sim.step(out) is step(sim, out), the instance being the
 * kernel's template argument (Taichi's data-oriented classes).  Through
 * anything else it is the kernel itself: kernels are plain functions of
 * their arguments. */
static PyObject *kernel_descr_get(PyObject *self, PyObject *obj, PyObject *type)
{
    (void)type;
    if (obj && obj != Py_None && ext_is_device_class(obj))
        return PyMethod_New(self, obj);
    return Py_NewRef(self);
}

static PyGetSetDef kernel_getset[] = {
    {"func", kernel_get_func, NULL, "The decorated Python function.", NULL},
    {"__dict__", PyObject_GenericGetDict, PyObject_GenericSetDict, NULL, NULL},
    {NULL, NULL, NULL, NULL, NULL}
};

static PyMethodDef kernel_methods[] = {
    {"backward", (PyCFunction)(void (*)(void))kernel_backward, METH_VARARGS | METH_KEYWORDS,
     "backward(*args, adj=None)\n--\n\nOne launch of the kernel's adjoint with the forward call's\n"
     "arguments: adds d(loss)/d(input) into each input's gradient, reading the\n"
     "outputs' (adj={array: grad}, else each array's .grad).  See docs/autodiff.md."},
    {"_param_names", kernel_param_names, METH_NOARGS,
     "_param_names()\n--\n\nEvery parameter the compiled kernel takes (the added ones too)."},
    {"_thread_dims", kernel_thread_dims, METH_NOARGS,
     "_thread_dims()\n--\n\nHow many launch extents a tack.tid() kernel takes last (0: none)."},
    {"_adjoint_params", kernel_adjoint_params, METH_NOARGS,
     "_adjoint_params()\n--\n\nHow many arguments _adjoint takes."},
    {"_adjoint", (PyCFunction)(void (*)(void))kernel_adjoint, METH_FASTCALL,
     "_adjoint(*args, *grads)\n--\n\nOne launch of the kernel's adjoint (use kernel.backward)."},
    {"variants", (PyCFunction)(void (*)(void))kernel_variants,
     METH_VARARGS | METH_KEYWORDS,
     "variants(device=None)\n--\n\n"
     "The keys of the variants compiled on device (default: the default\n"
     "device), as 5-tuples (param_sig, vec_sig, tmpl_key, shape_sig, disjoint)\n"
     "whose .strided_sig names the parameters indexed through strides."},
    {"stats", kernel_stats, METH_NOARGS,
     "stats()\n--\n\n"
     "This kernel's counters: launches, compiles, lowerings, compile_ms (time\n"
     "compiling variants) and launch_ms (time its launches ran).  See\n"
     "docs/timing.md."},
    {"variant_tiers", (PyCFunction)(void (*)(void))kernel_variant_tiers,
     METH_VARARGS | METH_KEYWORDS,
     "variant_tiers(device=None)\n--\n\n"
     "Which tier each variant of variants(device) runs: 0, code compiled fast\n"
     "while its optimized build is made in the background (the CPU's tiered\n"
     "JIT), or 1, optimized.  tack._jit_wait() waits for the optimized builds."},
    {"ir_templates", kernel_ir_templates, METH_NOARGS,
     "ir_templates()\n--\n\nThe keys of the IR templates lowered so far."},
    {"inspect_ir", (PyCFunction)(void (*)(void))kernel_inspect_ir,
     METH_FASTCALL | METH_KEYWORDS,
     "inspect_ir(*args, device=None, **kwargs)\n--\n\n"
     "Tack's typed IR (after the passes) of the variant these arguments select\n"
     "on device (default: as a call chooses), compiling it if it is new.\n"
     "Nothing runs.  See docs/inspect.md."},
    {"inspect_llvm", (PyCFunction)(void (*)(void))kernel_inspect_llvm,
     METH_FASTCALL | METH_KEYWORDS,
     "inspect_llvm(*args, device=None, **kwargs)\n--\n\n"
     "The optimized LLVM IR of the CPU variant these arguments select; on an\n"
     "OpenCL device the OpenCL C, on a CUDA device the CUDA C the driver\n"
     "compiles.  Compiles the variant if it is new; nothing runs."},
    {"inspect_asm", (PyCFunction)(void (*)(void))kernel_inspect_asm,
     METH_FASTCALL | METH_KEYWORDS,
     "inspect_asm(*args, device=None, **kwargs)\n--\n\n"
     "The native assembly of the CPU variant these arguments select; on a\n"
     "CUDA device its PTX (OpenCL drivers give none: ValueError).  Compiles\n"
     "the variant if it is new; nothing runs."},
    {NULL, NULL, 0, NULL}
};

PyTypeObject ext_KernelType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "tack.Kernel",
    .tp_basicsize = sizeof(ext_KernelObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_doc = "A compiled kernel: call it with the function's arguments; the call returns None, or\n"
               "what the kernel returns after its parallel loop (its reductions, as Python scalars).",
    .tp_new = kernel_new,
    .tp_dealloc = kernel_dealloc,
    .tp_traverse = kernel_traverse,
    .tp_clear = kernel_clear,
    .tp_repr = kernel_repr,
    .tp_call = PyVectorcall_Call,
    .tp_vectorcall_offset = offsetof(ext_KernelObject, vectorcall),
    .tp_descr_get = kernel_descr_get,
    .tp_dictoffset = offsetof(ext_KernelObject, dict),
    .tp_weaklistoffset = offsetof(ext_KernelObject, weakreflist),
    .tp_getset = kernel_getset,
    .tp_methods = kernel_methods,
};
