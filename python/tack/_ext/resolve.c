/*
 * resolve.c - answers the library's questions about outside names.
 *
 * A name in kernel source is looked up as Python would from the kernel
 * function: its closure cells, then its globals, then builtins.  What it
 * finds is described to the library as a tack_name: modules by name,
 * numbers by value, tuples of numbers as tables (their values; a list or
 * a tuple of anything else is OTHER, saying why), builtins by their own
 * name, device functions (@tack.func; a tack.Kernel is OTHER) by their
 * source and a context for
 * the names inside them; anything else found as OTHER (with what it is and
 * the fix), and a name found nowhere as UNDEFINED.  Never UNBOUND: that
 * would let the library's own builtins stand in for a user's `max`.  Texts handed out are owned by the kernel (its
 * contexts and its keep list), so they outlive the lowering that asked.
 * A template class's methods are asked with the class's context (made per
 * launch, like the contexts of the methods themselves): a @tack.func found
 * in the class's MRO is the method, anything else is none.
 *
 * The library may ask during a launch that runs without the GIL, so the
 * callback takes it.
 */
#define NO_IMPORT_ARRAY
#include "ext.h"

static PyObject *builtins_module;

ext_resolver_ctx *ext_ctx_for(ext_ctx_home *home, PyObject *func)
{
    for (ext_resolver_ctx *c = home->ctxs; c; c = c->next)
        if (c->func == func)
            return c;
    ext_resolver_ctx *c = PyMem_Calloc(1, sizeof *c);
    if (!c) {
        PyErr_NoMemory();
        return NULL;
    }
    c->func = Py_NewRef(func);
    c->home = home;
    if (ext_function_source(func, c) < 0) {
        Py_DECREF(c->func);
        PyMem_Free(c);
        return NULL;
    }
    c->next = home->ctxs;
    home->ctxs = c;
    return c;
}

void ext_ctx_free_all(ext_ctx_home *home)
{
    ext_resolver_ctx *c = home->ctxs;
    home->ctxs = NULL;
    while (c) {
        ext_resolver_ctx *next = c->next;
        Py_XDECREF(c->func);
        Py_XDECREF(c->source);
        Py_XDECREF(c->filename);
        PyMem_Free(c);
        c = next;
    }
    Py_CLEAR(home->keep);
}

/* The builtin `name` the way func sees builtins: a new reference, or NULL
 * (with no exception when there is none). */
static PyObject *lookup_builtin(PyObject *func, PyObject *name)
{
    PyObject *b = PyDict_GetItemString(PyFunction_GetGlobals(func), "__builtins__");
    if (b && PyDict_Check(b)) {
        PyObject *v = PyDict_GetItemWithError(b, name);
        return v ? Py_NewRef(v) : NULL;
    }
    if (!b)
        b = builtins_module;
    PyObject *v = PyObject_GetAttr(b, name);
    if (!v && PyErr_ExceptionMatches(PyExc_AttributeError))
        PyErr_Clear();
    return v;
}

/* The value `name` has as seen from func, in Python's order: closure
 * cells, globals, builtins.  A new reference, or NULL with no exception
 * when unbound, or NULL with an exception. */
static PyObject *lookup(PyObject *func, PyObject *name)
{
    PyObject *code = PyFunction_GetCode(func);
    PyObject *closure = PyFunction_GetClosure(func);
    if (closure && closure != Py_None) {
        PyObject *freevars = PyObject_GetAttrString(code, "co_freevars");
        if (!freevars)
            return NULL;
        Py_ssize_t n = PyTuple_Check(freevars) ? PyTuple_GET_SIZE(freevars) : 0;
        for (Py_ssize_t i = 0; i < n && i < PyTuple_GET_SIZE(closure); i++) {
            int eq = PyUnicode_Compare(PyTuple_GET_ITEM(freevars, i), name);
            if (eq == -1 && PyErr_Occurred()) {
                Py_DECREF(freevars);
                return NULL;
            }
            if (eq == 0) {
                Py_DECREF(freevars);
                PyObject *v = PyCell_GET(PyTuple_GET_ITEM(closure, i));
                return v ? Py_NewRef(v) : NULL; /* an empty cell is unbound */
            }
        }
        Py_DECREF(freevars);
    }
    PyObject *globals = PyFunction_GetGlobals(func);
    PyObject *v = PyDict_GetItemWithError(globals, name);
    if (v)
        return Py_NewRef(v);
    if (PyErr_Occurred())
        return NULL;
    return lookup_builtin(func, name);
}

/* The UTF-8 text of str s, kept alive by home for the library; NULL with
 * an exception on failure.  Steals s. */
static const char *keep_text(ext_ctx_home *home, PyObject *s)
{
    const char *r = s ? PyUnicode_AsUTF8(s) : NULL;
    if (r && !(home->keep || (home->keep = PyList_New(0))))
        r = NULL;
    if (r && PyList_Append(home->keep, s) < 0)
        r = NULL;
    Py_XDECREF(s);
    return r;
}

/* Module names the library knows; others are passed as they are (so that
 * `from tack import cache` is not taken for the module tack). */
static const char *module_text(ext_ctx_home *home, PyObject *module)
{
    PyObject *name = PyModule_GetNameObject(module);
    if (!name)
        return NULL;
    const char *s = PyUnicode_AsUTF8(name);
    if (!s) {
        Py_DECREF(name);
        return NULL;
    }
    const char *r = strcmp(s, "tack.math") == 0 || strcmp(s, "math") == 0 ? "math"
                    : strcmp(s, "tack") == 0                              ? "tack"
                    : strcmp(s, "numpy") == 0                             ? "numpy"
                                                                          : NULL;
    if (r) {
        Py_DECREF(name);
        return r;
    }
    return keep_text(home, name);
}

/* A builtin's own name when v is one (range, abs, int, ...), else NULL.
 * The texts are the interpreter's static names. */
static const char *builtin_text(PyObject *v)
{
    if (!builtins_module)
        return NULL;
    const char *s = NULL;
    if (PyCFunction_Check(v) && PyCFunction_GET_SELF(v) == builtins_module)
        return ((PyCFunctionObject *)v)->m_ml->ml_name;
    if (PyType_Check(v) && !(((PyTypeObject *)v)->tp_flags & Py_TPFLAGS_HEAPTYPE))
        s = ((PyTypeObject *)v)->tp_name;
    if (!s || strchr(s, '.'))
        return NULL;
    PyObject *same = PyObject_GetAttrString(builtins_module, s);
    if (!same) {
        PyErr_Clear();
        return NULL;
    }
    Py_DECREF(same);
    return same == v ? s : NULL;
}

/* Numba's prange (`from numba import prange`, a class of numba's): a
 * kernel's range, so a Numba loop runs as written; else NULL. */
static const char *numba_prange_text(PyObject *v)
{
    if (!PyType_Check(v) || strcmp(((PyTypeObject *)v)->tp_name, "prange") != 0)
        return NULL;
    PyObject *mod = PyObject_GetAttrString(v, "__module__");
    const char *m = mod && PyUnicode_Check(mod) ? PyUnicode_AsUTF8(mod) : NULL;
    int numba = m && !strncmp(m, "numba", 5) && (m[5] == 0 || m[5] == '.');
    Py_XDECREF(mod);
    PyErr_Clear();
    return numba ? "range" : NULL;
}

/* A function of math or a NumPy ufunc imported by its name (`from math
 * import log1p`): "math.log1p" or "numpy.log1p", which kernels read as the
 * module's function; else NULL (no exception). */
static const char *module_function_text(ext_ctx_home *home, PyObject *v)
{
    int ufunc = strcmp(Py_TYPE(v)->tp_name, "numpy.ufunc") == 0;
    if (!PyCFunction_Check(v) && !ufunc)
        return NULL;
    /* A ufunc is NumPy's when numpy.<its name> is it (NumPy before 2.1
     * gives ufuncs no __module__). */
    PyObject *mod = ufunc ? PyUnicode_FromString("numpy") : PyObject_GetAttrString(v, "__module__");
    PyObject *name = mod ? PyObject_GetAttrString(v, "__name__") : NULL;
    const char *r = NULL;
    if (name && PyUnicode_Check(mod) && PyUnicode_Check(name)) {
        const char *m = PyUnicode_AsUTF8(mod);
        int known = 0;
        if (m && ufunc) {
            PyObject *np = PyImport_ImportModule("numpy");
            PyObject *same = np ? PyObject_GetAttr(np, name) : NULL;
            known = same == v;
            Py_XDECREF(same);
            Py_XDECREF(np);
        } else if (m) {
            known = !strcmp(m, "math");
        }
        if (known)
            r = keep_text(home, PyUnicode_FromFormat("%U.%U", mod, name)); /* takes it */
    }
    PyErr_Clear();
    Py_XDECREF(mod);
    Py_XDECREF(name);
    return r;
}

/* A Python function of the tack package imported by its name (`from tack
 * import static`): "tack.static", which kernels read as tack.static is
 * read; else NULL (no exception).  Only when tack.<its name> is v itself. */
static const char *tack_function_text(ext_ctx_home *home, PyObject *v)
{
    if (!PyFunction_Check(v))
        return NULL;
    PyObject *name = PyObject_GetAttrString(v, "__name__");
    PyObject *tack = name ? PyImport_ImportModule("tack") : NULL;
    PyObject *same = tack && PyUnicode_Check(name) ? PyObject_GetAttr(tack, name) : NULL;
    const char *r = NULL;
    if (same == v)
        r = keep_text(home, PyUnicode_FromFormat("tack.%U", name)); /* takes it */
    PyErr_Clear();
    Py_XDECREF(same);
    Py_XDECREF(tack);
    Py_XDECREF(name);
    return r;
}

/* 1 when v is a Python function marked by @tack.func, 0 when not, -1 on
 * error. */
static int is_tack_func(PyObject *v)
{
    if (!PyFunction_Check(v))
        return 0;
    PyObject *mark = PyObject_GetAttrString(v, "__tack_func__");
    if (!mark) {
        if (!PyErr_ExceptionMatches(PyExc_AttributeError))
            return -1;
        PyErr_Clear();
        return 0;
    }
    int marked = PyObject_IsTrue(mark);
    Py_DECREF(mark);
    return marked;
}

/* The method `name` of a template class: the attribute as the class's MRO
 * holds it (a staticmethod or classmethod wrapper is not a method Tack can
 * bind self to); a new reference, or NULL with no exception when absent. */
static PyObject *class_attr(PyObject *cls, PyObject *name)
{
    PyObject *mro = ((PyTypeObject *)cls)->tp_mro;
    Py_ssize_t n = mro && PyTuple_Check(mro) ? PyTuple_GET_SIZE(mro) : 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *dict = ((PyTypeObject *)PyTuple_GET_ITEM(mro, i))->tp_dict;
        if (!dict)
            continue;
        PyObject *v = PyDict_GetItemWithError(dict, name);
        if (v)
            return Py_NewRef(v);
        if (PyErr_Occurred())
            return NULL;
    }
    return NULL;
}

/* A device function: its source, file and first line, and a resolver
 * context for the names inside it.  -1 when its text cannot be had. */
static int describe_func(ext_resolver_ctx *ctx, PyObject *func, tack_name *out)
{
    ext_resolver_ctx *fc = ext_ctx_for(ctx->home, func);
    if (!fc)
        return -1;
    out->kind = TACK_NAME_FUNC;
    out->text = PyUnicode_AsUTF8(fc->source);
    out->filename = PyUnicode_AsUTF8(fc->filename);
    out->first_line = fc->first_line;
    out->func_ctx = fc;
    return out->text && out->filename ? 0 : -1;
}

/* A method of a template class: a @tack.func function (self is its first
 * parameter), described like any device function; anything else is "no
 * such method" and the library says so. */
static int describe_method(ext_resolver_ctx *ctx, PyObject *v, tack_name *out)
{
    if (is_tack_func(v) <= 0)
        return -1;
    return describe_func(ctx, v, out);
}

/* One number of a table: an integer (bools too) into *i, or a float into
 * *f and *is_float set; -1 (no exception) when x is neither or an integer
 * beyond 64 bits (*too_big set). */
static int table_number(PyObject *x, int64_t *i, double *f, int *is_float, int *too_big)
{
    *is_float = 0;
    if (PyArray_IsScalar(x, Bool)) {
        int t = PyObject_IsTrue(x);
        *i = t > 0;
        PyErr_Clear();
        return t < 0 ? -1 : 0;
    }
    if (PyLong_Check(x) || PyArray_IsScalar(x, Integer)) {
        PyObject *n = PyNumber_Index(x);
        int overflow = 0;
        long long v = n ? PyLong_AsLongLongAndOverflow(n, &overflow) : -1;
        Py_XDECREF(n);
        if (!n || overflow || (v == -1 && PyErr_Occurred())) {
            PyErr_Clear();
            *too_big = n != NULL;
            return -1;
        }
        *i = v;
        return 0;
    }
    if (PyFloat_Check(x) || PyArray_IsScalar(x, Floating)) {
        *f = PyFloat_AsDouble(x);
        if (*f == -1.0 && PyErr_Occurred()) {
            PyErr_Clear();
            return -1;
        }
        *is_float = 1;
        return 0;
    }
    return -1;
}

/* A module-level tuple of numbers (nested: 2-D) as a table: fills out,
 * its numbers kept alive by home, and returns NULL; or returns why v is no
 * table, a new str (NULL with an exception on failure: see *failed).
 * Lists are refused: the kernel reads a table once, when it compiles, and
 * a list can change afterwards without the name being rebound. */
static PyObject *table_of(ext_ctx_home *home, PyObject *v, tack_name *out, int *failed)
{
    *failed = 0;
    if (PyList_Check(v))
        return PyUnicode_FromString("a list, which can change after the kernel has compiled; "
                                    "kernels read a module-level table once, so make it a tuple");
    Py_ssize_t rows = PyTuple_GET_SIZE(v), cols = 1;
    if (rows == 0)
        return PyUnicode_FromString("an empty tuple, which kernels cannot use as a table");
    int nested = PyTuple_Check(PyTuple_GET_ITEM(v, 0)) || PyList_Check(PyTuple_GET_ITEM(v, 0));
    if (nested)
        cols = PySequence_Size(PyTuple_GET_ITEM(v, 0));
    for (Py_ssize_t r = 0; r < rows; r++) {
        PyObject *row = PyTuple_GET_ITEM(v, r);
        int is_row = PyTuple_Check(row) || PyList_Check(row);
        if (is_row != nested || (nested && (!PyTuple_Check(row) || PyTuple_GET_SIZE(row) != cols ||
                                            cols == 0)))
            return PyUnicode_FromFormat(
                "a tuple whose rows are not all tuples of one length (row %zd), which kernels "
                "cannot use as a table: a table is a tuple of numbers, or a tuple of equally "
                "long tuples of numbers", r);
    }
    if (rows > TACK_MAX_TABLE_ELEMENTS || cols > TACK_MAX_TABLE_ELEMENTS / rows)
        return PyUnicode_FromFormat("a table of %zd numbers, more than the %d kernels inline: "
                                    "pass it as an array argument", rows * cols,
                                    TACK_MAX_TABLE_ELEMENTS);
    Py_ssize_t n = rows * cols;
    PyObject *ints = PyBytes_FromStringAndSize(NULL, n * (Py_ssize_t)sizeof(int64_t));
    PyObject *floats = PyBytes_FromStringAndSize(NULL, n * (Py_ssize_t)sizeof(double));
    if (!ints || !floats) {
        Py_XDECREF(ints);
        Py_XDECREF(floats);
        *failed = 1;
        return NULL;
    }
    int64_t *iv = (int64_t *)PyBytes_AS_STRING(ints);
    double *fv = (double *)PyBytes_AS_STRING(floats);
    int any_float = 0;
    for (Py_ssize_t k = 0; k < n; k++) {
        PyObject *x = nested ? PyTuple_GET_ITEM(PyTuple_GET_ITEM(v, k / cols), k % cols)
                             : PyTuple_GET_ITEM(v, k);
        int is_float = 0, too_big = 0;
        if (table_number(x, &iv[k], &fv[k], &is_float, &too_big) < 0) {
            Py_DECREF(ints);
            Py_DECREF(floats);
            PyObject *at = nested ? PyUnicode_FromFormat("[%zd][%zd]", k / cols, k % cols)
                                  : PyUnicode_FromFormat("[%zd]", k);
            PyObject *why = !at ? NULL
                          : too_big ? PyUnicode_FromFormat("a tuple holding an integer that does "
                                                           "not fit in 64 bits (at %U), which "
                                                           "kernels cannot inline", at)
                                    : PyUnicode_FromFormat("a tuple holding a %s (at %U); kernels "
                                                           "use tuples of numbers (int, float, "
                                                           "bool) as tables",
                                                           Py_TYPE(x)->tp_name, at);
            Py_XDECREF(at);
            *failed = why == NULL;
            return why;
        }
        if (is_float)
            any_float = 1;
        else
            fv[k] = (double)iv[k];
    }
    /* Any float makes every number a float, as NumPy's array() would. */
    PyObject *kept = any_float ? floats : ints;
    int rc = (home->keep || (home->keep = PyList_New(0))) ? PyList_Append(home->keep, kept) : -1;
    Py_DECREF(ints);
    Py_DECREF(floats);
    if (rc < 0) {
        *failed = 1;
        return NULL;
    }
    out->kind = TACK_NAME_TABLE;
    out->table_ndim = nested ? 2 : 1;
    out->table_shape[0] = rows;
    out->table_shape[1] = nested ? cols : 0;
    out->table_ints = any_float ? NULL : iv;
    out->table_floats = any_float ? fv : NULL;
    return NULL;
}

/* Fills out for v; 0, or -1 (maybe with an exception) when v has no
 * meaning in a kernel. */
static int describe(ext_resolver_ctx *ctx, PyObject *v, tack_name *out)
{
    if (!PyModule_Check(v) && !PyType_Check(v) && PyObject_HasAttrString(v, "_tack_layout")) {
        /* a @tack.struct class (python/tack/_structs.py) */
        PyObject *layout = PyObject_GetAttrString(v, "_tack_layout");
        if (!layout || !PyUnicode_Check(layout)) {
            Py_XDECREF(layout);
            return -1;
        }
        out->text = keep_text(ctx->home, layout); /* takes it */
        if (!out->text)
            return -1;
        out->kind = TACK_NAME_STRUCT;
        return 0;
    }
    if (PyModule_Check(v)) {
        out->text = module_text(ctx->home, v);
        if (!out->text)
            return -1;
        out->kind = TACK_NAME_MODULE;
        return 0;
    }
    if (PyBool_Check(v) || PyArray_IsScalar(v, Bool)) {
        int t = PyObject_IsTrue(v);
        if (t < 0)
            return -1;
        out->kind = TACK_NAME_BOOL;
        out->i = t;
        return 0;
    }
    if (PyLong_Check(v) || PyArray_IsScalar(v, Integer)) {
        PyObject *n = PyNumber_Index(v);
        if (!n)
            return -1;
        int overflow = 0;
        long long i = PyLong_AsLongLongAndOverflow(n, &overflow);
        int rc = 0;
        if (overflow > 0) {
            unsigned long long u = PyLong_AsUnsignedLongLong(n);
            if (u == (unsigned long long)-1 && PyErr_Occurred()) {
                PyErr_Clear(); /* beyond u64: the library reports the name */
                rc = -1;
            } else {
                out->kind = TACK_NAME_INT;
                out->is_unsigned = 1;
                out->u = u;
            }
        } else if (overflow < 0 || (i == -1 && PyErr_Occurred())) {
            PyErr_Clear();
            rc = -1;
        } else {
            out->kind = TACK_NAME_INT;
            out->i = i;
        }
        Py_DECREF(n);
        return rc;
    }
    if (PyFloat_Check(v) || PyArray_IsScalar(v, Floating)) {
        double f = PyFloat_AsDouble(v);
        if (f == -1.0 && PyErr_Occurred())
            return -1;
        out->kind = TACK_NAME_FLOAT;
        out->f = f;
        return 0;
    }
    if (PyTuple_Check(v) || PyList_Check(v)) {
        int failed;
        PyObject *why = table_of(ctx->home, v, out, &failed);
        if (!why && !failed)
            return 0;
        Py_XDECREF(why); /* other_text asks again, for the message */
        return -1;
    }
    /* A kernel is a launch, not a device function: inlined, it would run
     * its whole loop in every iteration of the caller (other_text says
     * so). */
    if (ext_Kernel_Check(v))
        return -1;
    PyObject *func = NULL;
    int marked = is_tack_func(v);
    if (marked < 0)
        return -1;
    if (marked)
        func = v;
    if (func)
        return describe_func(ctx, func, out);
    const char *b = builtin_text(v);
    if (!b)
        b = numba_prange_text(v);
    if (!b)
        b = module_function_text(ctx->home, v);
    if (!b)
        b = tack_function_text(ctx->home, v);
    /* An alias of a vector or matrix dtype (vec7 = tack.vector(7, tack.f32))
     * constructs as tack.vec7f does. */
    const char *dn = b ? NULL : ext_dtype_kernel_name(v);
    if (dn)
        b = keep_text(ctx->home, PyUnicode_FromFormat("tack.%s", dn));
    if (b) {
        out->kind = TACK_NAME_BUILTIN;
        out->text = b;
        return 0;
    }
    return -1;
}

/* "mod.qualname" of v, or its type's, as a new str; NULL (no exception)
 * when it has none. */
static PyObject *qualified_name(PyObject *v)
{
    PyObject *mod = PyObject_GetAttrString(v, "__module__");
    PyObject *qual = mod ? PyObject_GetAttrString(v, "__qualname__") : NULL;
    PyObject *r = NULL;
    if (mod && qual && PyUnicode_Check(mod) && PyUnicode_Check(qual))
        r = PyUnicode_FromFormat("%U.%U", mod, qual);
    else if (qual && PyUnicode_Check(qual))
        r = Py_NewRef(qual);
    PyErr_Clear();
    Py_XDECREF(mod);
    Py_XDECREF(qual);
    return r;
}

/* What v is and how to fix it, for the library's message "'name' is ...".
 * A name that hides a builtin says that renaming it gives the builtin. */
static const char *other_text(ext_resolver_ctx *ctx, PyObject *key, PyObject *v)
{
    PyObject *et, *ev, *tb;
    PyErr_Fetch(&et, &ev, &tb); /* the cause, kept for the kernel below */
    PyObject *builtin = ctx->cls ? NULL : lookup_builtin(ctx->func, key);
    PyErr_Clear();
    /* A fix for a function (", or rename it ..."), and for anything else. */
    PyObject *rename = builtin ? PyUnicode_FromFormat(", or rename it so that the builtin %U() "
                                                      "is used", key)
                               : PyUnicode_FromString("");
    PyObject *rename_only = builtin ? PyUnicode_FromFormat(": rename it so that the builtin %U() "
                                                           "is used", key)
                                    : PyUnicode_FromString("");
    Py_XDECREF(builtin);
    PyObject *where = v ? qualified_name(v) : NULL;
    PyObject *text = NULL;
    int marked = v ? is_tack_func(v) : 0;
    PyErr_Clear();
    if (!rename || !rename_only) {
        text = NULL;
    } else if (!v) {
        text = PyUnicode_FromString("a name whose lookup raised an error (the cause below)");
    } else if (ext_Kernel_Check(v)) {
        ext_KernelObject *owner = ctx->home->kern;
        PyObject *caller = owner && owner->name ? owner->name : NULL;
        if (caller)
            text = PyUnicode_FromFormat("the @tack.kernel '%U', which kernel '%U' cannot call: a "
                                        "kernel is launched from Python, not from a kernel; "
                                        "decorate the shared code with @tack.func and call "
                                        "that (from both kernels if need be)",
                                        ((ext_KernelObject *)v)->name, caller);
        else
            text = PyUnicode_FromFormat("the @tack.kernel '%U', which a kernel cannot call: "
                                        "decorate the shared code with @tack.func and call that",
                                        ((ext_KernelObject *)v)->name);
    } else if (marked > 0) {
        text = PyUnicode_FromString("a device function whose source Tack cannot read "
                                    "(the cause below)");
    } else if (PyFunction_Check(v) || PyMethod_Check(v)) {
        text = PyUnicode_FromFormat("a plain Python function (%S), which kernels cannot call: "
                                    "decorate it with @tack.func%U",
                                    where ? where : key, rename);
    } else if (PyTuple_Check(v) || PyList_Check(v)) {
        tack_name unused;
        int failed;
        PyObject *why = table_of(ctx->home, v, &unused, &failed);
        text = why ? PyUnicode_FromFormat("%U%U", why, rename_only) : NULL;
        Py_XDECREF(why);
    } else if (PyArray_Check(v) || ext_Array_Check(v)) {
        /* a kernel's own body reads the arrays its function names when it
         * is decorated (python/tack/_allocations.py); not this one */
        text = PyUnicode_FromFormat("an array (%s) that this function cannot read by name: a "
                                    "kernel's body reads the module's (or enclosing function's) "
                                    "arrays that exist when it is decorated, and a device "
                                    "function none; pass it as an argument%U",
                                    Py_TYPE(v)->tp_name, rename_only);
    } else if (PyLong_Check(v) || PyArray_IsScalar(v, Integer)) {
        text = PyUnicode_FromFormat("an integer that does not fit in 64 bits, which kernels "
                                    "cannot inline%U", rename_only);
    } else if (where) {
        text = PyUnicode_FromFormat("a %s (%U), which kernels cannot use%U", Py_TYPE(v)->tp_name,
                                    where, rename_only);
    } else {
        text = PyUnicode_FromFormat("a %s, which kernels cannot use%U", Py_TYPE(v)->tp_name,
                                    rename_only);
    }
    Py_XDECREF(rename);
    Py_XDECREF(rename_only);
    Py_XDECREF(where);
    const char *r = text ? keep_text(ctx->home, text) : NULL;
    PyErr_Clear();
    PyErr_Restore(et, ev, tb);
    return r;
}

int ext_resolve(void *vctx, const char *name, tack_name *out)
{
    ext_resolver_ctx *ctx = vctx;
    memset(out, 0, sizeof *out);
    out->kind = TACK_NAME_UNBOUND;
    if (!ctx || !name)
        return -1;

    PyGILState_STATE gil = PyGILState_Ensure();
    PyObject *et, *ev, *tb;
    PyErr_Fetch(&et, &ev, &tb); /* leave a caller's pending error alone */
    int rc = -1;
    if (!builtins_module)
        builtins_module = PyImport_ImportModule("builtins");
    /* "mod.f" (a device function called through a module): the module by
     * its first name, then attributes of modules only. */
    const char *dot = ctx->cls ? NULL : strchr(name, '.');
    PyObject *key = dot ? PyUnicode_FromStringAndSize(name, dot - name) : PyUnicode_FromString(name);
    PyObject *v = NULL;
    if (key && builtins_module)
        v = ctx->cls ? class_attr(ctx->cls, key) : lookup(ctx->func, key);
    while (v && dot) {
        const char *next = strchr(dot + 1, '.');
        PyObject *part = next ? PyUnicode_FromStringAndSize(dot + 1, next - dot - 1)
                              : PyUnicode_FromString(dot + 1);
        PyObject *inner = part && PyModule_Check(v) ? PyObject_GetAttr(v, part) : NULL;
        if (!inner)
            PyErr_Clear(); /* no such function: UNDEFINED below, as a missing name */
        Py_XDECREF(part);
        Py_SETREF(v, inner);
        dot = next;
    }
    if (v)
        rc = ctx->cls ? describe_method(ctx, v, out) : describe(ctx, v, out);
    if (rc < 0) {
        /* Found, or the lookup failed: either way the name is the user's,
         * and the library must not stand its own builtin in for it.  Only
         * a method the class lacks is left UNBOUND ("no such method"). */
        memset(out, 0, sizeof *out);
        if (v || PyErr_Occurred()) {
            out->kind = TACK_NAME_OTHER;
            out->text = key ? other_text(ctx, key, v) : NULL;
            rc = 0;
        } else if (key && !ctx->cls && builtins_module) {
            out->kind = TACK_NAME_UNDEFINED; /* as Python's NameError */
            rc = 0;
        } else {
            out->kind = TACK_NAME_UNBOUND;
        }
    }
    Py_XDECREF(v);
    Py_XDECREF(key);
    if (PyErr_Occurred()) {
        /* Keep the first such error: the kernel chains it to the
         * CompileError the library then reports for this name. */
        ext_KernelObject *owner = ctx->home->kern;
        if (owner && !owner->resolve_error) {
            PyObject *t2, *v2, *tb2;
            PyErr_Fetch(&t2, &v2, &tb2);
            PyErr_NormalizeException(&t2, &v2, &tb2);
            if (tb2 && v2)
                PyException_SetTraceback(v2, tb2);
            owner->resolve_error = v2;
            Py_XDECREF(t2);
            Py_XDECREF(tb2);
        }
        PyErr_Clear();
    }
    PyErr_Restore(et, ev, tb);
    PyGILState_Release(gil);
    return rc;
}
