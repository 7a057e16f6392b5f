/* backend.c - the backends of this build, found by the name a device spec
 * starts with. */
#include <string.h>

#include "backend.h"

backend_counters backend_stats;

const backend_ops *const backend_table[] = {&backend_cpu, &backend_opencl, NULL};

const backend_ops *backend_find(const char *name, size_t len) {
    for (int i = 0; backend_table[i]; i++)
        if (strlen(backend_table[i]->name) == len && !memcmp(backend_table[i]->name, name, len))
            return backend_table[i];
    return NULL;
}
