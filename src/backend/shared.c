/* shared.c - what every backend shares without linking any backend in:
 * the counts they keep for tack.stats(), their error reports, and the
 * filling of a dlopened driver's function table. */
#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "backend.h"

backend_counters backend_stats;

tack_status backend_error(tack_error *err, tack_status st, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->message, sizeof err->message, fmt, ap);
    va_end(ap);
    err->status = st;
    err->filename[0] = 0;
    err->lineno = err->col = 0;
    return st;
}

const char *backend_fill_symbols(void *lib, void *table, const backend_symbol *syms, size_t n) {
    for (size_t i = 0; i < n; i++) {
        /* POSIX guarantees dlsym's void * converts to a function pointer;
         * memcpy stores it without reading one type through another. */
        void *p = dlsym(lib, syms[i].name);
        if (!p) return syms[i].name;
        memcpy((char *)table + syms[i].offset, &p, sizeof p);
    }
    return NULL;
}

uint64_t backend_now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}
