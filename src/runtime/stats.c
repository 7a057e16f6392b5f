/* stats.c - the counters of tack.h: process-wide (tack_get_stats) and per
 * kernel (tack_kernel_get_stats), and the switch for timing launches.
 * Launches are counted per kernel only, so a warm launch pays one counter:
 * the process-wide count is the live kernels' sum plus what freed kernels
 * left in tack_counters.launches. */
#include <stdio.h>
#include <string.h>

#include "runtime.h"
#include "runtime/disk_cache.h"

runtime_counters tack_counters;
atomic_int launch_timing;

void tack_set_launch_timing(int on) { atomic_fetch_add(&launch_timing, on ? 1 : -1); }
int tack_get_launch_timing(void) { return atomic_load(&launch_timing) > 0; }

static void add_launches(const tack_kernel *k, void *ctx) {
    *(uint64_t *)ctx += atomic_load_explicit(&((tack_kernel *)k)->n_launches, memory_order_relaxed);
}

void tack_get_stats(tack_stats *out) {
    memset(out, 0, sizeof *out);
    out->compiles = atomic_load(&tack_counters.compiles);
    out->lowerings = atomic_load(&tack_counters.lowerings);
    uint64_t live = 0;
    kernel_registry_walk(add_launches, &live);
    out->launches = atomic_load(&tack_counters.launches) + live;
    out->variant_hits = atomic_load(&tack_counters.variant_hits);
    out->fast_path_hits = atomic_load(&tack_counters.fast_path_hits);
    out->compile_ns = atomic_load(&tack_counters.compile_ns);
    out->llvm_ns = atomic_load(&tack_counters.llvm_ns);
    out->driver_binary_loads = atomic_load(&backend_stats.binary_loads);
    out->driver_source_builds = atomic_load(&backend_stats.source_builds);
    out->driver_program_builds = atomic_load(&backend_stats.program_builds);
    disk_cache *dc = disk_cache_current();
    if (dc) {
        disk_cache_counts c = disk_cache_counters(dc);
        out->disk_hits = c.hits;
        out->disk_misses = c.misses;
        out->disk_bad_entries = c.bad;
        out->disk_ir_hits = c.ir_hits;
        out->disk_ir_misses = c.ir_misses;
    }
}

void tack_kernel_get_stats(const tack_kernel *k, tack_kernel_stats *out) {
    memset(out, 0, sizeof *out);
    if (!k) return;
    snprintf(out->name, sizeof out->name, "%s", k->def->name);
    tack_kernel *m = (tack_kernel *)k; /* atomic loads take non-const */
    out->launches = atomic_load_explicit(&m->n_launches, memory_order_relaxed);
    out->compiles = atomic_load_explicit(&m->n_compiles, memory_order_relaxed);
    out->lowerings = atomic_load_explicit(&m->n_lowerings, memory_order_relaxed);
    out->compile_ns = atomic_load_explicit(&m->compile_ns, memory_order_relaxed);
    out->launch_ns = atomic_load_explicit(&m->launch_ns, memory_order_relaxed);
}

typedef struct {
    tack_kernel_stats *out;
    int max, n;
} stats_walk;

static void copy_stats(const tack_kernel *k, void *ctx) {
    stats_walk *w = ctx;
    if (w->out && w->n < w->max) tack_kernel_get_stats(k, &w->out[w->n]);
    w->n++;
}

int tack_get_kernel_stats(tack_kernel_stats *out, int max) {
    stats_walk w = {out, max, 0};
    kernel_registry_walk(copy_stats, &w);
    return w.n;
}
