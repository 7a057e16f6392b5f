/*
 * cache.c - the disk cache seen from Python: the functions behind
 * `python -m tack cache info|list|clear|prune|verify|bundle` (each returns
 * plain Python data; __main__.py prints it), and the two halves of
 * tack.cache.load_bundle(comm): the bundle's bytes on rank 0, installed on
 * every rank.
 *
 * The administration functions open their own cache object from the
 * environment, so they work with TACK_CACHE=off too; the bundle functions
 * act on the process's cache, the one kernels load from.
 */
#define NO_IMPORT_ARRAY
#include "ext.h"

#include <errno.h>

#include "../../../src/runtime/disk_cache.h"

/* A cache for administration: the process's settings, but never off. */
static disk_cache *admin_open(void)
{
    disk_cache_settings s;
    disk_cache_settings_from_env(&s);
    if (s.mode == DISK_CACHE_OFF)
        s.mode = DISK_CACHE_WRITE;
    char why[1024] = "";
    disk_cache *c = disk_cache_open(&s, why, sizeof why);
    if (!c)
        PyErr_Format(PyExc_RuntimeError, "tack cache: %s", why);
    return c;
}

static PyObject *entry_dict(const disk_cache_entry_info *e)
{
    return Py_BuildValue("{s:s,s:s,s:K,s:L,s:O}", "name", e->name, "kernel", e->kernel,
                         "size", (unsigned long long)e->size, "age", (long long)e->age,
                         "bad", e->bad ? Py_True : Py_False);
}

static PyObject *entry_list(const disk_cache_entry_info *v, size_t n)
{
    PyObject *list = PyList_New((Py_ssize_t)n);
    for (size_t i = 0; list && i < n; i++) {
        PyObject *d = entry_dict(&v[i]);
        if (!d) {
            Py_CLEAR(list);
            break;
        }
        PyList_SET_ITEM(list, (Py_ssize_t)i, d);
    }
    return list;
}

static PyObject *cache_info(PyObject *self, PyObject *unused)
{
    (void)self; (void)unused;
    disk_cache *c = admin_open();
    if (!c)
        return NULL;
    disk_cache_info in;
    disk_cache_settings env;
    int r;
    Py_BEGIN_ALLOW_THREADS
    r = disk_cache_get_info(c, &in);
    disk_cache_close(c);
    Py_END_ALLOW_THREADS
    if (r)
        return PyErr_Format(PyExc_OSError, "tack cache: cannot read %s", in.root);
    disk_cache_settings_from_env(&env); /* the mode as a process would run */
    return Py_BuildValue("{s:s,s:s,s:s,s:s,s:K,s:K,s:K,s:K,s:K,s:i,s:N}",
                         "root", in.root, "dir", in.dir, "fingerprint", in.fingerprint,
                         "mode", disk_cache_mode_name(env.mode),
                         "size_limit", (unsigned long long)in.size_limit,
                         "entries", (unsigned long long)in.entries,
                         "bytes", (unsigned long long)in.bytes,
                         "all_entries", (unsigned long long)in.all_entries,
                         "all_bytes", (unsigned long long)in.all_bytes,
                         "versions", in.versions,
                         "bundle_bytes", in.has_bundle
                             ? PyLong_FromUnsignedLongLong(in.bundle_bytes)
                             : Py_NewRef(Py_None));
}

static PyObject *cache_list(PyObject *self, PyObject *unused)
{
    (void)self; (void)unused;
    disk_cache *c = admin_open();
    if (!c)
        return NULL;
    disk_cache_entry_info *v;
    size_t n;
    int r;
    Py_BEGIN_ALLOW_THREADS
    r = disk_cache_list(c, &v, &n);
    disk_cache_close(c);
    Py_END_ALLOW_THREADS
    if (r)
        return PyErr_Format(PyExc_OSError, "tack cache: cannot list the cache");
    PyObject *list = entry_list(v, n);
    free(v);
    return list;
}

static PyObject *cache_clear(PyObject *self, PyObject *unused)
{
    (void)self; (void)unused;
    disk_cache *c = admin_open();
    if (!c)
        return NULL;
    uint64_t removed;
    int r;
    Py_BEGIN_ALLOW_THREADS
    r = disk_cache_clear(c, &removed);
    disk_cache_close(c);
    Py_END_ALLOW_THREADS
    if (r)
        return PyErr_Format(PyExc_OSError, "tack cache: could not clear everything");
    return PyLong_FromUnsignedLongLong(removed);
}

static PyObject *cache_prune(PyObject *self, PyObject *unused)
{
    (void)self; (void)unused;
    disk_cache *c = admin_open();
    if (!c)
        return NULL;
    uint64_t removed, freed;
    int r;
    Py_BEGIN_ALLOW_THREADS
    r = disk_cache_prune(c, &removed, &freed);
    disk_cache_close(c);
    Py_END_ALLOW_THREADS
    if (r)
        return PyErr_Format(PyExc_OSError, "tack cache: could not scan the cache");
    return Py_BuildValue("{s:K,s:K}", "removed", (unsigned long long)removed,
                         "freed", (unsigned long long)freed);
}

static PyObject *cache_verify(PyObject *self, PyObject *args, PyObject *kwargs)
{
    (void)self;
    static char *kwlist[] = {"remove", NULL};
    int remove = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|p", kwlist, &remove))
        return NULL;
    disk_cache *c = admin_open();
    if (!c)
        return NULL;
    size_t checked, nbad;
    disk_cache_entry_info *bad;
    int r;
    Py_BEGIN_ALLOW_THREADS
    r = disk_cache_verify(c, remove, &checked, &bad, &nbad);
    disk_cache_close(c);
    Py_END_ALLOW_THREADS
    if (r)
        return PyErr_Format(PyExc_OSError, "tack cache: could not read the cache");
    PyObject *list = entry_list(bad, nbad);
    free(bad);
    if (!list)
        return NULL;
    return Py_BuildValue("{s:n,s:N,s:O}", "checked", (Py_ssize_t)checked, "bad", list,
                         "removed", remove ? Py_True : Py_False);
}

static PyObject *cache_bundle(PyObject *self, PyObject *unused)
{
    (void)self; (void)unused;
    disk_cache *c = admin_open();
    if (!c)
        return NULL;
    size_t n;
    uint64_t bytes;
    disk_cache_info in;
    int r, e = 0;
    Py_BEGIN_ALLOW_THREADS
    r = disk_cache_bundle(c, &n, &bytes);
    e = errno;
    disk_cache_get_info(c, &in);
    disk_cache_close(c);
    Py_END_ALLOW_THREADS
    if (r) {
        errno = e;
        return PyErr_SetFromErrno(PyExc_OSError);
    }
    return Py_BuildValue("{s:n,s:K,s:s}", "entries", (Py_ssize_t)n,
                         "bytes", (unsigned long long)bytes, "dir", in.dir);
}

/* load_bundle(comm), rank 0: the bytes to broadcast, or None. */
static PyObject *cache_bundle_bytes(PyObject *self, PyObject *unused)
{
    (void)self; (void)unused;
    void *b = NULL;
    size_t n = 0;
    int r;
    Py_BEGIN_ALLOW_THREADS
    r = disk_cache_bundle_read(disk_cache_get(), &b, &n);
    Py_END_ALLOW_THREADS
    if (r)
        Py_RETURN_NONE;
    PyObject *o = PyBytes_FromStringAndSize(b, (Py_ssize_t)n);
    free(b);
    return o;
}

/* load_bundle(comm), every rank: installs the broadcast bytes.  Returns the
 * number of entries, or -1 (no cache, already loaded, not a bundle). */
static PyObject *cache_bundle_install(PyObject *self, PyObject *arg)
{
    (void)self;
    Py_buffer view;
    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) < 0)
        return NULL;
    int n;
    Py_BEGIN_ALLOW_THREADS
    n = disk_cache_bundle_install(disk_cache_get(), view.buf, (size_t)view.len);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&view);
    return PyLong_FromLong(n);
}

static PyMethodDef cache_methods[] = {
    {"_cache_info", cache_info, METH_NOARGS,
     "_cache_info()\n--\n\nThe disk cache's directory, fingerprint, mode, sizes and counts."},
    {"_cache_list", cache_list, METH_NOARGS,
     "_cache_list()\n--\n\nThis build's entries, oldest first: name, kernel, size, age."},
    {"_cache_clear", cache_clear, METH_NOARGS,
     "_cache_clear()\n--\n\nDeletes every version's entries and bundles; returns the count."},
    {"_cache_prune", cache_prune, METH_NOARGS,
     "_cache_prune()\n--\n\nApplies TACK_CACHE_SIZE now (least recently used first)."},
    {"_cache_verify", (PyCFunction)(void (*)(void))cache_verify, METH_VARARGS | METH_KEYWORDS,
     "_cache_verify(remove=False)\n--\n\nRe-checks every entry's hash; lists the bad ones."},
    {"_cache_bundle", cache_bundle, METH_NOARGS,
     "_cache_bundle()\n--\n\nPacks this build's entries into its bundle file."},
    {"_cache_bundle_bytes", cache_bundle_bytes, METH_NOARGS,
     "_cache_bundle_bytes()\n--\n\nThe bundle file's bytes (None if absent or no cache)."},
    {"_cache_bundle_install", cache_bundle_install, METH_O,
     "_cache_bundle_install(data)\n--\n\n"
     "Makes data (a bundle's bytes) this process's bundle; entries or -1."},
    {NULL, NULL, 0, NULL}
};

int ext_cache_init(PyObject *module)
{
    /* Entries hold names resolved through this Python: its minor version
     * is part of the fingerprint. */
    char v[32];
    snprintf(v, sizeof v, "python%d.%d", PY_MAJOR_VERSION, PY_MINOR_VERSION);
    disk_cache_set_host(v);
    return PyModule_AddFunctions(module, cache_methods);
}
