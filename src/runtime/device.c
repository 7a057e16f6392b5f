/* device.c - devices.  A spec is a backend's name with an optional device
 * index ("cpu", "opencl", "opencl:1").  tack_device_get returns one shared
 * device per spec (its variants live as long as the process);
 * tack_device_create makes a private device with options and an empty
 * variant cache.  Either is one instance of a backend (backend.h). */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime.h"

#define MAX_SHARED 16

static pthread_mutex_t shared_lock = PTHREAD_MUTEX_INITIALIZER;
static tack_device *shared[MAX_SHARED];

/* "name[:N]" -> the backend and N; the canonical name is "cpu" for the
 * CPU's only device and "name:N" for the others. */
static tack_status parse_spec(const char *spec, const backend_ops **ops, int *index, char *canon,
                              size_t cap, tack_error *err) {
    if (!spec) return runtime_error(err, TACK_ERR_VALUE, "device spec is NULL");
    const char *colon = strchr(spec, ':');
    size_t len = colon ? (size_t)(colon - spec) : strlen(spec);
    *ops = backend_find(spec, len);
    *index = 0;
    if (colon) {
        char *end;
        long n = strtol(colon + 1, &end, 10);
        /* Digits only: strtol alone takes "opencl: 0" and "opencl:-0". */
        if (!isdigit((unsigned char)colon[1]) || *end || n < 0 || n > 1 << 20)
            return runtime_error(err, TACK_ERR_VALUE,
                                 "device '%s': the index after ':' must be a number such as "
                                 "\"opencl:0\"", spec);
        *index = (int)n;
    }
    if (!*ops) {
        char names[128] = "";
        size_t at = 0;
        for (int i = 0; backend_at(i) && at < sizeof names; i++)
            at += snprintf(names + at, sizeof names - at, "%s\"%s\"", i ? ", " : "",
                           backend_at(i)->name);
        return runtime_error(err, TACK_ERR_VALUE, "unknown device '%s': this build of Tack has %s",
                             spec, names);
    }
    if (*ops == &backend_cpu && *index == 0) snprintf(canon, cap, "cpu");
    else snprintf(canon, cap, "%s:%d", (*ops)->name, *index);
    return TACK_OK;
}

#define MAX_THREADS 256

/* TACK_NUM_THREADS for the shared device of a backend with a thread pool:
 * 0 when unset (one per core), -1 with err filled when it is not a count. */
static int threads_from_env(const char *spec, tack_error *err) {
    const char *env = getenv("TACK_NUM_THREADS");
    if (!env || !env[0]) return 0;
    char *end;
    long n = strtol(env, &end, 10);
    while (*end == ' ' || *end == '\t' || *end == '\n') end++;
    if (end == env || *end || n < 1 || n > MAX_THREADS) {
        runtime_error(err, TACK_ERR_VALUE,
                      "TACK_NUM_THREADS must be a number of threads from 1 to %d, got '%.40s' "
                      "(device '%s')", MAX_THREADS, env, spec);
        return -1;
    }
    return (int)n;
}

static tack_device *make_device(const char *spec, int num_threads, int is_shared, tack_error *err) {
    const backend_ops *ops;
    int index;
    char canon[32];
    if (parse_spec(spec, &ops, &index, canon, sizeof canon, err)) return NULL;
    /* A count asked of a device that has no thread pool would be dropped. */
    if (num_threads > 0 && !ops->set_num_threads) {
        runtime_error(err, TACK_ERR_VALUE,
                      "device '%s' has no thread pool: num_threads applies to the CPU", canon);
        return NULL;
    }
    if (is_shared && ops->set_num_threads && (num_threads = threads_from_env(canon, err)) < 0)
        return NULL;
    tack_device *d = calloc(1, sizeof *d);
    if (!d) {
        runtime_error(err, TACK_ERR_NOMEM, "out of memory creating device '%s'", spec);
        return NULL;
    }
    if (ops->open(index, num_threads, &d->b, err) != TACK_OK) {
        free(d);
        return NULL;
    }
    d->ops = ops;
    ops->caps(d->b, &d->caps);
    atomic_store(&d->num_threads, d->caps.compute_units);
    snprintf(d->name, sizeof d->name, "%s", canon);
    d->shared = is_shared;
    return d;
}

tack_device *tack_device_get(const char *spec, tack_error *err) {
    ERR_OR_SCRATCH(err);
    err->status = TACK_OK;
    const backend_ops *ops;
    int index;
    char canon[32];
    if (parse_spec(spec, &ops, &index, canon, sizeof canon, err)) return NULL;
    pthread_mutex_lock(&shared_lock);
    tack_device *d = NULL;
    int i = 0;
    for (; i < MAX_SHARED && shared[i]; i++)
        if (!strcmp(shared[i]->name, canon)) {
            d = shared[i];
            break;
        }
    if (!d && i == MAX_SHARED)
        runtime_error(err, TACK_ERR_VALUE, "device '%s': more than %d shared devices", spec, MAX_SHARED);
    else if (!d && (d = make_device(canon, 0, 1, err)))
        shared[i] = d;
    pthread_mutex_unlock(&shared_lock);
    return d;
}

tack_device *tack_device_create(const char *spec, int num_threads, tack_error *err) {
    ERR_OR_SCRATCH(err);
    err->status = TACK_OK;
    if (num_threads > MAX_THREADS) {
        runtime_error(err, TACK_ERR_VALUE, "num_threads must be from 1 to %d (0: one per core), got %d",
                      MAX_THREADS, num_threads);
        return NULL;
    }
    return make_device(spec, num_threads, 0, err);
}

void tack_device_free(tack_device *d) {
    if (!d || d->shared) return;
    kernel_registry_drop_device(d);
    d->ops->close(d->b);
    free(d);
}

const char *tack_device_name(const tack_device *d) { return d->name; }
int tack_device_num_threads(const tack_device *d) {
    return atomic_load(&((tack_device *)d)->num_threads);
}

tack_status tack_device_set_num_threads(tack_device *d, int num_threads, tack_error *err) {
    ERR_OR_SCRATCH(err);
    err->status = TACK_OK;
    if (!d) return runtime_error(err, TACK_ERR_VALUE, "tack_device_set_num_threads: NULL device");
    if (!d->ops->set_num_threads)
        return runtime_error(err, TACK_ERR_VALUE,
                             "device '%s' has no thread pool: the number of threads applies to "
                             "the CPU", d->name);
    if (num_threads < 1 || num_threads > MAX_THREADS)
        return runtime_error(err, TACK_ERR_VALUE,
                             "device '%s': the number of threads must be from 1 to %d, got %d",
                             d->name, MAX_THREADS, num_threads);
    /* The backend waits for a running launch; variants are untouched (they
     * hang off the kernels, keyed by this device, which stays). */
    tack_status st = d->ops->set_num_threads(d->b, num_threads, err);
    backend_caps caps;
    d->ops->caps(d->b, &caps);
    atomic_store(&d->num_threads, caps.compute_units);
    return st;
}

const char *tack_device_target(const tack_device *d) {
    return d ? d->ops->cache_target(d->b) : NULL;
}
const char *tack_device_description(const tack_device *d) { return d->ops->describe(d->b); }
int tack_device_host_memory(const tack_device *d) { return d->caps.host_memory; }
int tack_device_hardware_texture_filtering(const tack_device *d) {
    return d->caps.hardware_texture_filtering;
}

/* ---- device memory ---- */

void *tack_device_alloc(tack_device *d, size_t bytes, tack_error *err) {
    ERR_OR_SCRATCH(err);
    err->status = TACK_OK;
    if (!d) {
        runtime_error(err, TACK_ERR_VALUE, "tack_device_alloc: NULL device");
        return NULL;
    }
    if ((int64_t)bytes < 0 || (d->caps.max_alloc_bytes && (int64_t)bytes > d->caps.max_alloc_bytes)) {
        runtime_error(err, TACK_ERR_NOMEM,
                      "device '%s': cannot allocate %zu bytes: the largest allocation it allows is "
                      "%lld bytes", d->name, bytes, (long long)d->caps.max_alloc_bytes);
        return NULL;
    }
    void *h = NULL;
    if (d->ops->mem_alloc(d->b, bytes, &h, err) != TACK_OK) return NULL;
    return h;
}

void tack_device_free_mem(tack_device *d, void *handle) {
    if (d && handle) d->ops->mem_free(d->b, handle);
}

tack_status tack_device_write(tack_device *d, void *handle, size_t offset, const void *src, size_t n,
                              tack_error *err) {
    ERR_OR_SCRATCH(err);
    err->status = TACK_OK;
    if (!d || (n && (!handle || !src)))
        return runtime_error(err, TACK_ERR_VALUE, "tack_device_write: NULL device, memory or source");
    if (!n) return TACK_OK;
    /* Under `with stream:` the copy goes on that stream, after its launches. */
    void *q = stream_queue_for(d);
    if (q && d->ops->queue_mem_write)
        return d->ops->queue_mem_write(d->b, q, handle, offset, src, n, err);
    return d->ops->mem_write(d->b, handle, offset, src, n, err);
}

tack_status tack_device_read(tack_device *d, const void *handle, size_t offset, void *dst, size_t n,
                             tack_error *err) {
    ERR_OR_SCRATCH(err);
    err->status = TACK_OK;
    if (!d || (n && (!handle || !dst)))
        return runtime_error(err, TACK_ERR_VALUE, "tack_device_read: NULL device, memory or target");
    if (!n) return TACK_OK;
    void *q = stream_queue_for(d);
    if (q && d->ops->queue_mem_read)
        return d->ops->queue_mem_read(d->b, q, handle, offset, dst, n, err);
    return d->ops->mem_read(d->b, handle, offset, dst, n, err);
}

void *tack_device_wrap_mem(tack_device *d, uint64_t address, size_t bytes, tack_error *err) {
    ERR_OR_SCRATCH(err);
    err->status = TACK_OK;
    if (!d || !address) {
        runtime_error(err, TACK_ERR_VALUE, "tack_device_wrap_mem: NULL device or address");
        return NULL;
    }
    if (d->caps.host_memory) return (void *)(uintptr_t)address; /* handles are pointers */
    if (!d->ops->mem_wrap) {
        runtime_error(err, TACK_ERR_VALUE,
                      "device '%s' cannot use memory another library allocated: its memory "
                      "handles are not addresses", d->name);
        return NULL;
    }
    void *h = NULL;
    if (d->ops->mem_wrap(d->b, address, bytes, &h, err) != TACK_OK) return NULL;
    return h;
}

tack_status tack_device_synchronize(tack_device *d, tack_error *err) {
    ERR_OR_SCRATCH(err);
    err->status = TACK_OK;
    if (!d) return runtime_error(err, TACK_ERR_VALUE, "tack_device_synchronize: NULL device");
    /* A backend without the op returns finished from every call. */
    return d->ops->synchronize ? d->ops->synchronize(d->b, err) : TACK_OK;
}
