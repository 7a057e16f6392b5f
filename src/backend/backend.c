/* backend.c - the backends of this build, found by the name a device spec
 * starts with. */
#include <pthread.h>
#include <string.h>

#include "backend.h"

#define MAX_BACKENDS 8

static pthread_mutex_t table_lock = PTHREAD_MUTEX_INITIALIZER;
static const backend_ops *table[MAX_BACKENDS + 1] = {&backend_cpu, &backend_opencl,
                                                        &backend_cuda, &backend_hip,
                                                        &backend_level_zero, &backend_metal,
                                                        NULL};

const backend_ops *backend_at(int i) {
    pthread_mutex_lock(&table_lock);
    const backend_ops *b = i >= 0 && i < MAX_BACKENDS ? table[i] : NULL;
    pthread_mutex_unlock(&table_lock);
    return b;
}

const backend_ops *backend_find(const char *name, size_t len) {
    const backend_ops *b;
    for (int i = 0; (b = backend_at(i)); i++)
        if (strlen(b->name) == len && !memcmp(b->name, name, len)) return b;
    return NULL;
}

int backend_register(const backend_ops *ops) {
    if (!ops || !ops->name || backend_find(ops->name, strlen(ops->name))) return -1;
    pthread_mutex_lock(&table_lock);
    int i = 0;
    while (i < MAX_BACKENDS && table[i]) i++;
    if (i < MAX_BACKENDS) table[i] = ops;
    pthread_mutex_unlock(&table_lock);
    return i < MAX_BACKENDS ? 0 : -1;
}
