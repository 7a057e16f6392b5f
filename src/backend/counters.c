/* counters.c - the counts backends keep for tack.stats(); a file of its
 * own, so that reading them links no backend in. */
#include "backend.h"

backend_counters backend_stats;
