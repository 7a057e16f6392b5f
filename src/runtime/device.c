/* device.c - devices.  tack_device_get returns one shared device per spec
 * (its variants live as long as the process); tack_device_create makes a
 * private device with options and an empty variant cache. */
#include <stdlib.h>
#include <string.h>

#include "runtime.h"

static pthread_mutex_t shared_lock = PTHREAD_MUTEX_INITIALIZER;
static tack_device *shared_cpu;

static tack_device *make_device(const char *spec, int num_threads, int shared, tack_error *err) {
    if (!spec || strcmp(spec, "cpu") != 0) {
        runtime_error(err, TACK_ERR_VALUE,
                      "unknown device '%s': this build of Tack has the device \"cpu\"",
                      spec ? spec : "(null)");
        return NULL;
    }
    tack_device *d = calloc(1, sizeof *d);
    if (!d || !(d->pool = cpu_pool_create(num_threads))) {
        free(d);
        runtime_error(err, TACK_ERR_NOMEM, "out of memory creating device '%s'", spec);
        return NULL;
    }
    strcpy(d->name, "cpu");
    d->shared = shared;
    return d;
}

tack_device *tack_device_get(const char *spec, tack_error *err) {
    ERR_OR_SCRATCH(err);
    err->status = TACK_OK;
    pthread_mutex_lock(&shared_lock);
    if (!shared_cpu && spec && !strcmp(spec, "cpu")) shared_cpu = make_device(spec, 0, 1, err);
    tack_device *d = spec && !strcmp(spec, "cpu") ? shared_cpu : NULL;
    pthread_mutex_unlock(&shared_lock);
    if (!d && err->status == TACK_OK) make_device(spec, 0, 1, err); /* reports the bad spec */
    return d;
}

tack_device *tack_device_create(const char *spec, int num_threads, tack_error *err) {
    ERR_OR_SCRATCH(err);
    if (num_threads > 256) {
        runtime_error(err, TACK_ERR_VALUE, "num_threads must be at most 256 (0: one per core), got %d",
                      num_threads);
        return NULL;
    }
    return make_device(spec, num_threads, 0, err);
}

void tack_device_free(tack_device *d) {
    if (!d || d->shared) return;
    kernel_registry_drop_device(d);
    cpu_pool_free(d->pool);
    free(d);
}

const char *tack_device_name(const tack_device *d) { return d->name; }
int tack_device_num_threads(const tack_device *d) { return cpu_pool_size(d->pool); }
