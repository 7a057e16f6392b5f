/* shared.c - what every backend shares without linking any backend in:
 * the counts they keep for tack.stats(), and their error reports. */
#include <stdarg.h>
#include <stdio.h>

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
