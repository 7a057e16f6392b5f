/*
 * source.c - the text of a kernel or device function, its file and first
 * line, for the library to parse.
 *
 * In order: text the caller handed over (tack.kernel(fn, source=...),
 * kept on the function as __tack_source__); what inspect.getsource finds
 * (files, and the pseudo-files linecache knows: IPython's and notebooks'
 * cells); for a function defined by `python -c`, the command's text from
 * sys.orig_argv.  A text that is not a file's is searched for the def with
 * Python's own parser (the ast module), so that a source holding more than
 * the function works and line numbers count from the text's first line.
 */
#define NO_IMPORT_ARRAY
#include "ext.h"

/* getattr(o, name) as a C long; -1 with an exception on failure. */
static int attr_long(PyObject *o, const char *name, long *out)
{
    PyObject *v = PyObject_GetAttrString(o, name);
    if (!v)
        return -1;
    *out = PyLong_AsLong(v);
    Py_DECREF(v);
    return *out == -1 && PyErr_Occurred() ? -1 : 0;
}

/* The line a def starts on as Python counts it (co_firstlineno): its
 * first decorator's, else the def's own. */
static int def_start(PyObject *node, long *start)
{
    if (attr_long(node, "lineno", start) < 0)
        return -1;
    PyObject *decos = PyObject_GetAttrString(node, "decorator_list");
    if (!decos)
        return -1;
    Py_ssize_t n = PySequence_Size(decos);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *d = PySequence_GetItem(decos, i);
        long line;
        int rc = d ? attr_long(d, "lineno", &line) : -1;
        Py_XDECREF(d);
        if (rc < 0) {
            Py_DECREF(decos);
            return -1;
        }
        if (line < *start)
            *start = line;
    }
    Py_DECREF(decos);
    return n < 0 ? -1 : 0;
}

/* The defs named `name` in text (a list of ast nodes), or NULL with an
 * exception (a ValueError naming `what` when the text does not parse). */
static PyObject *find_defs(PyObject *text, PyObject *name, PyObject *qual, const char *what)
{
    PyObject *ast = PyImport_ImportModule("ast");
    if (!ast)
        return NULL;
    PyObject *found = NULL, *tree = PyObject_CallMethod(ast, "parse", "O", text);
    if (!tree) {
        if (PyErr_ExceptionMatches(PyExc_SyntaxError)) {
            PyObject *t, *v, *tb;
            PyErr_Fetch(&t, &v, &tb);
            PyErr_NormalizeException(&t, &v, &tb);
            PyErr_Format(PyExc_ValueError, "the %s for '%U' is not valid Python: %S",
                         what, qual, v ? v : Py_None);
            PyObject *t2, *v2, *tb2;
            PyErr_Fetch(&t2, &v2, &tb2);
            PyErr_NormalizeException(&t2, &v2, &tb2);
            if (v2 && v)
                PyException_SetCause(v2, Py_NewRef(v));
            PyErr_Restore(t2, v2, tb2);
            Py_XDECREF(t);
            Py_XDECREF(v);
            Py_XDECREF(tb);
        }
        goto done;
    }
    PyObject *fdef = PyObject_GetAttrString(ast, "FunctionDef");
    PyObject *adef = fdef ? PyObject_GetAttrString(ast, "AsyncFunctionDef") : NULL;
    PyObject *walk = adef ? PyObject_CallMethod(ast, "walk", "O", tree) : NULL;
    PyObject *it = walk ? PyObject_GetIter(walk) : NULL;
    found = it ? PyList_New(0) : NULL;
    PyObject *node;
    while (found && (node = PyIter_Next(it))) {
        int is_def = PyObject_IsInstance(node, fdef);
        if (is_def == 0)
            is_def = PyObject_IsInstance(node, adef);
        PyObject *nname = is_def > 0 ? PyObject_GetAttrString(node, "name") : NULL;
        int same = nname ? PyObject_RichCompareBool(nname, name, Py_EQ) : 0;
        if (is_def < 0 || (is_def > 0 && !nname) || same < 0 ||
            (same > 0 && PyList_Append(found, node) < 0))
            Py_CLEAR(found);
        Py_XDECREF(nname);
        Py_DECREF(node);
    }
    if (PyErr_Occurred())
        Py_CLEAR(found);
    Py_XDECREF(fdef);
    Py_XDECREF(adef);
    Py_XDECREF(walk);
    Py_XDECREF(it);
    Py_DECREF(tree);
done:
    Py_DECREF(ast);
    return found;
}

/* Lines [start, end] (1-based) of text, dedented. */
static PyObject *block_text(PyObject *text, long start, long end)
{
    PyObject *lines = PyObject_CallMethod(text, "splitlines", "O", Py_True);
    PyObject *part = lines ? PyList_GetSlice(lines, start - 1, end) : NULL;
    PyObject *empty = part ? PyUnicode_FromString("") : NULL;
    PyObject *joined = empty ? PyUnicode_Join(empty, part) : NULL;
    PyObject *textwrap = joined ? PyImport_ImportModule("textwrap") : NULL;
    PyObject *r = textwrap ? PyObject_CallMethod(textwrap, "dedent", "O", joined) : NULL;
    Py_XDECREF(lines);
    Py_XDECREF(part);
    Py_XDECREF(empty);
    Py_XDECREF(joined);
    Py_XDECREF(textwrap);
    return r;
}

/* Finds func's def in text and fills ctx.  exact: only a def starting at
 * func's own first line counts, and finding none returns 1 with no
 * exception (the caller has other ways); otherwise a single def of that
 * name anywhere in the text is taken too, and finding none is a
 * ValueError.  `what` names the text in messages. */
static int source_from_text(PyObject *func, PyObject *text, int exact, const char *what,
                            ext_resolver_ctx *ctx)
{
    PyObject *code = NULL, *name = NULL, *qual = NULL, *fname = NULL, *defs = NULL;
    PyObject *src = NULL, *chosen = NULL;
    int rc = -1;
    long first, start = 0, end, argc, posonly = 0;
    if (!PyUnicode_Check(text)) {
        PyErr_Format(PyExc_TypeError, "the source of a kernel must be a str, not %.100s",
                     Py_TYPE(text)->tp_name);
        return -1;
    }
    code = PyObject_GetAttrString(func, "__code__");
    name = code ? PyObject_GetAttrString(func, "__name__") : NULL;
    qual = name ? PyObject_GetAttrString(func, "__qualname__") : NULL;
    fname = qual ? PyObject_GetAttrString(code, "co_filename") : NULL;
    if (!fname || attr_long(code, "co_firstlineno", &first) < 0 ||
        attr_long(code, "co_argcount", &argc) < 0)
        goto done;
    defs = find_defs(text, name, qual, what);
    if (!defs) {
        if (exact && PyErr_ExceptionMatches(PyExc_ValueError)) {
            PyErr_Clear();
            rc = 1;
        }
        goto done;
    }
    Py_ssize_t n = PyList_GET_SIZE(defs);
    for (Py_ssize_t i = 0; i < n; i++) {
        long s;
        if (def_start(PyList_GET_ITEM(defs, i), &s) < 0)
            goto done;
        if (s == first) {
            chosen = PyList_GET_ITEM(defs, i);
            start = s;
        }
    }
    if (!chosen && !exact && n == 1) {
        chosen = PyList_GET_ITEM(defs, 0);
        if (def_start(chosen, &start) < 0)
            goto done;
    }
    if (!chosen) {
        if (exact)
            rc = 1;
        else if (n == 0)
            PyErr_Format(PyExc_ValueError, "the %s for '%U' does not define a function named '%U'",
                         what, qual, name);
        else
            PyErr_Format(PyExc_ValueError,
                         "the %s for '%U' defines '%U' %zd times, none of them at line %ld "
                         "where the function starts: hand over the text it was made from",
                         what, qual, name, n, first);
        goto done;
    }
    if (attr_long(chosen, "end_lineno", &end) < 0)
        goto done;
    /* A text about another function of the same name is a mistake that
     * would compile the wrong code: its parameter count at least must agree. */
    PyObject *args = PyObject_GetAttrString(chosen, "args");
    PyObject *plain = args ? PyObject_GetAttrString(args, "args") : NULL;
    PyObject *po = plain ? PyObject_GetAttrString(args, "posonlyargs") : NULL;
    if (!po && plain && PyErr_ExceptionMatches(PyExc_AttributeError))
        PyErr_Clear(); /* no positional-only parameters before Python 3.8 */
    else if (po)
        posonly = (long)PySequence_Size(po);
    long nparams = plain ? (long)PySequence_Size(plain) + posonly : -1;
    Py_XDECREF(args);
    Py_XDECREF(plain);
    Py_XDECREF(po);
    if (PyErr_Occurred())
        goto done;
    if (nparams != argc) {
        PyErr_Format(PyExc_ValueError,
                     "the %s for '%U' defines it with %ld parameter%s at line %ld, but the "
                     "function has %ld",
                     what, qual, nparams, nparams == 1 ? "" : "s", start, argc);
        goto done;
    }
    src = block_text(text, start, end);
    if (!src)
        goto done;
    /* Line numbers count from the text's first line: name the function's
     * own file only when the text is that file's (same line, or a
     * pseudo-file such as <string> that has no other text). */
    const char *f = PyUnicode_AsUTF8(fname);
    if (!f)
        goto done;
    if (start != first && f[0] != '<')
        Py_SETREF(fname, PyUnicode_FromFormat("<source of %U>", qual));
    if (!fname || !PyUnicode_AsUTF8(src))
        goto done;
    Py_XSETREF(ctx->source, Py_NewRef(src));
    Py_XSETREF(ctx->filename, Py_NewRef(fname));
    ctx->first_line = (int)start;
    rc = 0;
done:
    Py_XDECREF(code);
    Py_XDECREF(name);
    Py_XDECREF(qual);
    Py_XDECREF(fname);
    Py_XDECREF(defs);
    Py_XDECREF(src);
    return rc;
}

/* The interpreter's own command line (a new reference to a list of str):
 * sys.orig_argv, which Python 3.10 added; before it, /proc/self/cmdline. */
static PyObject *interpreter_argv(PyObject *sys)
{
    PyObject *orig = PyObject_GetAttrString(sys, "orig_argv");
    if (orig || !PyErr_ExceptionMatches(PyExc_AttributeError))
        return orig;
    PyErr_Clear();
    FILE *f = fopen("/proc/self/cmdline", "rb");
    if (!f)
        return NULL;
    char buf[1 << 16];
    size_t len = fread(buf, 1, sizeof buf, f);
    int whole = feof(f);
    fclose(f);
    if (!whole) /* longer than the buffer: no partial -c text */
        return NULL;
    PyObject *list = PyList_New(0);
    for (size_t at = 0; list && at < len;) {
        size_t n = strnlen(buf + at, len - at);
        PyObject *s = PyUnicode_DecodeFSDefaultAndSize(buf + at, (Py_ssize_t)n);
        if (!s || PyList_Append(list, s) < 0)
            Py_CLEAR(list);
        Py_XDECREF(s);
        at += n + 1;
    }
    return list;
}

/* The text of `python -c TEXT` when func was defined by it (a new
 * reference), or NULL with no exception. */
static PyObject *command_text(PyObject *func)
{
    PyObject *sys = PyImport_ImportModule("sys");
    PyObject *argv = sys ? PyObject_GetAttrString(sys, "argv") : NULL;
    PyObject *orig = argv ? interpreter_argv(sys) : NULL;
    PyObject *r = NULL;
    PyObject *a0 = argv && PyList_Check(argv) && PyList_GET_SIZE(argv) ? PyList_GET_ITEM(argv, 0)
                                                                       : NULL;
    PyObject *mod = PyObject_GetAttrString(func, "__module__");
    int from_main = mod && PyUnicode_Check(mod) &&
                    PyUnicode_CompareWithASCIIString(mod, "__main__") == 0;
    Py_XDECREF(mod);
    if (from_main && orig && PyList_Check(orig) && a0 && PyUnicode_Check(a0) &&
        PyUnicode_CompareWithASCIIString(a0, "-c") == 0) {
        Py_ssize_t n = PyList_GET_SIZE(orig);
        for (Py_ssize_t i = 1; i < n && !r; i++) {
            PyObject *s = PyList_GET_ITEM(orig, i);
            const char *a = PyUnicode_Check(s) ? PyUnicode_AsUTF8(s) : NULL;
            if (!a)
                break;
            if (!strcmp(a, "-c"))
                r = i + 1 < n ? Py_NewRef(PyList_GET_ITEM(orig, i + 1)) : NULL;
            else if (!strncmp(a, "-c", 2))
                r = PyUnicode_FromString(a + 2);
            else if (a[0] != '-')
                break; /* a script's name: no -c before it */
        }
    }
    PyErr_Clear();
    Py_XDECREF(sys);
    Py_XDECREF(argv);
    Py_XDECREF(orig);
    return r;
}

/* Replaces inspect's OSError with Tack's message (keeping it as the
 * cause): what is missing and how to hand the text over. */
static void explain_missing_source(PyObject *func)
{
    PyObject *t, *v, *tb;
    PyErr_Fetch(&t, &v, &tb);
    PyErr_NormalizeException(&t, &v, &tb);
    if (tb && v)
        PyException_SetTraceback(v, tb);
    PyObject *qual = PyObject_GetAttrString(func, "__qualname__");
    PyObject *code = qual ? PyObject_GetAttrString(func, "__code__") : NULL;
    PyObject *fname = code ? PyObject_GetAttrString(code, "co_filename") : NULL;
    if (fname) {
        int marked = ext_Kernel_Check(func) ? 0 : PyObject_HasAttrString(func, "__tack_func__");
        PyErr_Format(PyExc_OSError,
                     "tack cannot read the source of '%U': it was defined in %U, whose text "
                     "Python does not keep (exec, or python -c); hand the text over: "
                     "%s(%U, source=text) or @%s(source=text)",
                     qual, fname, marked ? "tack.func" : "tack.kernel", qual,
                     marked ? "tack.func" : "tack.kernel");
        PyObject *t2, *v2, *tb2;
        PyErr_Fetch(&t2, &v2, &tb2);
        PyErr_NormalizeException(&t2, &v2, &tb2);
        if (v2 && v)
            PyException_SetCause(v2, Py_NewRef(v));
        PyErr_Restore(t2, v2, tb2);
    }
    Py_XDECREF(qual);
    Py_XDECREF(code);
    Py_XDECREF(fname);
    Py_XDECREF(t);
    Py_XDECREF(v);
    Py_XDECREF(tb);
}

/* The text a function was first compiled from, kept on it: a file edited
 * while the process runs must not change what later variants compile (the
 * function's bytecode is still the old text's). */
#define SOURCE_MEMO "__tack_source_read__"

static int source_from_memo(PyObject *func, ext_resolver_ctx *ctx)
{
    PyObject *memo = PyObject_GetAttrString(func, SOURCE_MEMO);
    if (!memo) {
        if (!PyErr_ExceptionMatches(PyExc_AttributeError))
            return -1;
        PyErr_Clear();
        return 1;
    }
    long first;
    if (!PyTuple_Check(memo) || PyTuple_GET_SIZE(memo) != 3 ||
        !PyUnicode_Check(PyTuple_GET_ITEM(memo, 0)) || !PyUnicode_Check(PyTuple_GET_ITEM(memo, 1)) ||
        (first = PyLong_AsLong(PyTuple_GET_ITEM(memo, 2))) == -1) {
        Py_DECREF(memo);
        PyErr_Clear();
        return 1; /* not ours (a user's attribute of that name): read again */
    }
    Py_XSETREF(ctx->source, Py_NewRef(PyTuple_GET_ITEM(memo, 0)));
    Py_XSETREF(ctx->filename, Py_NewRef(PyTuple_GET_ITEM(memo, 1)));
    ctx->first_line = (int)first;
    Py_DECREF(memo);
    return 0;
}

static int read_function_source(PyObject *func, ext_resolver_ctx *ctx);

int ext_function_source(PyObject *func, ext_resolver_ctx *ctx)
{
    int rc = source_from_memo(func, ctx);
    if (rc <= 0)
        return rc;
    if (read_function_source(func, ctx) < 0)
        return -1;
    PyObject *memo = Py_BuildValue("(OOi)", ctx->source, ctx->filename, ctx->first_line);
    if (!memo || PyObject_SetAttrString(func, SOURCE_MEMO, memo) < 0)
        PyErr_Clear(); /* an object that takes no attributes reads its file each time */
    Py_XDECREF(memo);
    return 0;
}

static int read_function_source(PyObject *func, ext_resolver_ctx *ctx)
{
    PyObject *given = PyObject_GetAttrString(func, "__tack_source__");
    if (given) {
        int rc = source_from_text(func, given, 0, "source given", ctx);
        Py_DECREF(given);
        return rc;
    }
    if (!PyErr_ExceptionMatches(PyExc_AttributeError))
        return -1;
    PyErr_Clear();

    PyObject *inspect = NULL, *textwrap = NULL, *raw = NULL, *src = NULL;
    PyObject *fname = NULL, *code = NULL;
    int rc = -1;
    long first;

    inspect = PyImport_ImportModule("inspect");
    textwrap = inspect ? PyImport_ImportModule("textwrap") : NULL;
    if (!textwrap)
        goto done;
    raw = PyObject_CallMethod(inspect, "getsource", "O", func);
    if (!raw) {
        if (PyErr_ExceptionMatches(PyExc_OSError)) {
            PyObject *t, *v, *tb;
            PyErr_Fetch(&t, &v, &tb);
            PyObject *text = command_text(func);
            rc = text ? source_from_text(func, text, 1, "python -c text", ctx) : 1;
            Py_XDECREF(text);
            if (rc != 1) { /* found it there, or a Python error meanwhile */
                Py_XDECREF(t);
                Py_XDECREF(v);
                Py_XDECREF(tb);
                goto done;
            }
            rc = -1;
            PyErr_Restore(t, v, tb);
            explain_missing_source(func);
        }
        goto done;
    }
    src = PyObject_CallMethod(textwrap, "dedent", "O", raw);
    if (!src)
        goto done;
    if (!PyUnicode_Check(src)) {
        PyErr_SetString(PyExc_TypeError, "textwrap.dedent() did not return a str");
        goto done;
    }
    code = PyObject_GetAttrString(func, "__code__");
    if (!code)
        goto done;
    fname = PyObject_CallMethod(inspect, "getsourcefile", "O", func);
    if (!fname || !PyUnicode_Check(fname)) {
        PyErr_Clear();
        Py_XDECREF(fname);
        fname = PyObject_GetAttrString(code, "co_filename");
        if (!fname)
            goto done;
    }
    if (attr_long(code, "co_firstlineno", &first) < 0)
        goto done;
    /* The library reads these as UTF-8; fail here rather than later. */
    if (!PyUnicode_AsUTF8(src) || !PyUnicode_AsUTF8(fname))
        goto done;
    Py_XSETREF(ctx->source, Py_NewRef(src));
    Py_XSETREF(ctx->filename, Py_NewRef(fname));
    ctx->first_line = (int)first;
    rc = 0;
done:
    Py_XDECREF(inspect);
    Py_XDECREF(textwrap);
    Py_XDECREF(raw);
    Py_XDECREF(src);
    Py_XDECREF(fname);
    Py_XDECREF(code);
    return rc;
}

int ext_check_source(PyObject *func, PyObject *text)
{
    ext_resolver_ctx probe;
    memset(&probe, 0, sizeof probe);
    int rc = source_from_text(func, text, 0, "source given", &probe);
    Py_XDECREF(probe.source);
    Py_XDECREF(probe.filename);
    return rc < 0 ? -1 : 0;
}

int ext_refuse_lambda(PyObject *func, const char *what)
{
    PyObject *name = PyObject_GetAttrString(func, "__name__");
    if (!name)
        return -1;
    int is_lambda = PyUnicode_Check(name) &&
                    PyUnicode_CompareWithASCIIString(name, "<lambda>") == 0;
    Py_DECREF(name);
    if (!is_lambda)
        return 0;
    PyObject *code = PyObject_GetAttrString(func, "__code__");
    PyObject *fname = code ? PyObject_GetAttrString(code, "co_filename") : NULL;
    long line = 0;
    if (fname && attr_long(code, "co_firstlineno", &line) == 0)
        PyErr_Format(PyExc_TypeError,
                     "%s: %s must be def functions, not lambdas (the lambda at %U:%ld)",
                     what, !strcmp(what, "tack.func") ? "device functions" : "kernels",
                     fname, line);
    Py_XDECREF(code);
    Py_XDECREF(fname);
    return -1;
}
