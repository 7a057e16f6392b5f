/* backend_cpu.c - the CPU as a backend (backend.h): LLVM object code
 * linked into the process (codegen.c, jit.c), launched on a thread pool
 * (pool.c), with arrays in host memory. */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend/backend.h"
#include "cpu.h"

struct backend {
    cpu_pool *pool; /* resized in place, never replaced: launches hold it */
};

struct backend_code {
    cpu_tiered run;     /* what launches call, and each tier's linked code */
    cpu_object obj;     /* optimized code for the disk cache's artifact
                           (built at tier 1 or loaded); tier 0's is not kept */
    cpu_tier_job *job;  /* the background tier-1 build (tier.c), or NULL */
    ir_func *range_ir;  /* range_check.c: a range that reads array elements */
    unsigned range_u64; /* range_check.c: bounds converted from u64 */
    int64_t scratch_bytes; /* each running thread's area (cpu_scratch_layout) */
    atomic_ullong tier0_ns; /* time its launches have run tier-0 code */
};

/* The optimized build runs on a nice-19 thread, which starves while the
 * kernel's own launches keep every core busy: a hot kernel then ran its
 * tier-0 code for seconds.  Once its tier-0 launches have taken this long,
 * the next launch waits for the optimized code (building it on the calling
 * thread if it has not started), which the time already spent repays. */
#define TIER0_PATIENCE_NS 20000000ull

/* Launches shorter than this many iterations run on the calling thread:
 * waking the pool costs more than a short loop.  Bodies with inner loops
 * are parallelized from a few iterations on. */
#define GRAIN_FLAT 32768
#define GRAIN_LOOPS 4

#define ARTIFACT_VERSION 1

static tack_status cpu_open(int index, int num_threads, backend **out, tack_error *err) {
    *out = NULL;
    if (index != 0) {
        err->status = TACK_ERR_VALUE;
        snprintf(err->message, sizeof err->message,
                 "device \"cpu:%d\": there is one CPU device, \"cpu\" (or \"cpu:0\")", index);
        return TACK_ERR_VALUE;
    }
    backend *b = calloc(1, sizeof *b);
    if (!b || !(b->pool = cpu_pool_create(num_threads))) {
        free(b);
        err->status = TACK_ERR_NOMEM;
        snprintf(err->message, sizeof err->message, "out of memory creating device \"cpu\"");
        return TACK_ERR_NOMEM;
    }
    *out = b;
    return TACK_OK;
}

static void cpu_close(backend *b) {
    if (!b) return;
    cpu_pool_free(b->pool);
    free(b);
}

static void cpu_caps(const backend *b, backend_caps *c) {
    memset(c, 0, sizeof *c);
    c->host_memory = 1;
    c->fp64 = c->atomics64 = 1;
    /* Workgroups run as lane loops (passes/workgroup_loops.c); shared
     * arrays live on a worker's stack, so they get what a GPU gives. */
    c->max_workgroup = IR_WORKGROUP;
    c->local_mem_bytes = 64 << 10;
    for (int d = 0; d < 3; d++) c->max_grid[d] = INT64_MAX;
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    c->global_mem_bytes = c->max_alloc_bytes = pages > 0 && page > 0 ? (int64_t)pages * page : INT64_MAX;
    c->compute_units = cpu_pool_size(b->pool);
}

/* Formatted per call (the thread count changes with set_num_threads) into
 * a per-thread buffer, so a resize never rewrites text being read. */
static const char *cpu_describe(const backend *b) {
    static _Thread_local char text[96];
    snprintf(text, sizeof text, "CPU, %d threads", cpu_pool_size(b->pool));
    return text;
}

static tack_status cpu_set_num_threads(backend *b, int n, tack_error *err) {
    if (cpu_pool_resize(b->pool, n) == 0) return TACK_OK;
    return backend_error(err, TACK_ERR_NOMEM, "out of memory resizing the CPU's thread pool to %d "
                         "threads", n);
}

/* The optimized LLVM IR or the assembly of what cpu_build compiles. */
static tack_status cpu_inspect(backend *b, const ir_func *f, const char *symbol_base,
                               tack_inspect_kind kind, char **text, tack_error *err) {
    (void)b;
    if (kind != TACK_INSPECT_LLVM && kind != TACK_INSPECT_ASM)
        return backend_error(err, TACK_ERR_VALUE, "kernel '%s': the CPU has no text of kind %d",
                             f->name, (int)kind);
    return cpu_codegen_text(f, symbol_base, kind == TACK_INSPECT_ASM, text, err);
}

static const char *cpu_cache_target(const backend *b) {
    (void)b;
    return cpu_target_description();
}

static void code_free(backend_code *c) {
    if (!c) return;
    cpu_tier_drop(c->job); /* first: no swap into c from now on */
    for (int t = 0; t < CPU_TIERS; t++)
        if (c->run.code[t]) cpu_jit_unload(c->run.code[t]);
    if (c->range_ir) ir_func_free(c->range_ir);
    cpu_object_free(&c->obj);
    free(c);
}

/* Links o as the code's running tier. */
static tack_status link_code(const ir_func *f, backend_code *c, const cpu_object *o,
                             backend_code **out, tack_error *err) {
    c->range_u64 = cpu_range_u64_mask(f);
    c->scratch_bytes = cpu_scratch_layout(f, NULL);
    c->range_ir = cpu_range_checked_ir(f);
    cpu_entry_fn entry;
    cpu_range_fn range;
    tack_status st = cpu_jit_load(o, &c->run.code[o->tier], &entry, &range, err);
    if (st) {
        code_free(c);
        return st;
    }
    atomic_init(&c->run.entry, entry);
    atomic_init(&c->run.range, range);
    atomic_init(&c->run.tier, o->tier);
    *out = c;
    return TACK_OK;
}

/* TACK_JIT (tier.c): tiered (tier 0 now, the optimized build queued to
 * be swapped in), o2 (optimized now), o0 (tier 0 only). */
static tack_status cpu_build(backend *b, const ir_func *f, const char *symbol_base,
                             backend_code **out, uint64_t *compiler_ns, tack_error *err) {
    (void)b;
    *out = NULL;
    backend_code *c = calloc(1, sizeof *c);
    if (!c) {
        err->status = TACK_ERR_NOMEM;
        snprintf(err->message, sizeof err->message, "out of memory compiling kernel '%s'", f->name);
        return TACK_ERR_NOMEM;
    }
    cpu_jit_mode mode = cpu_jit_mode_now();
    if (mode == CPU_JIT_O2) {
        tack_status st = cpu_codegen(f, symbol_base, 1, &c->obj, err);
        *compiler_ns += c->obj.llvm_ns;
        if (st) {
            code_free(c);
            return st;
        }
        return link_code(f, c, &c->obj, out, err);
    }
    cpu_object t0;
    tack_status st = cpu_codegen(f, symbol_base, 0, &t0, err);
    *compiler_ns += t0.llvm_ns;
    if (!st) st = link_code(f, c, &t0, out, err); /* frees c on failure */
    else code_free(c);
    cpu_object_free(&t0); /* the JIT has its copy; tier 0 is never stored */
    if (st) return st;
    if (mode == CPU_JIT_TIERED) c->job = cpu_tier_queue(f, symbol_base, &c->run);
    return TACK_OK;
}

/* The optimized object for the disk cache: built (or loaded) already, or
 * the background build's once done (wait: built now if still queued).
 * NULL: none (tier 0 only, or the build failed). */
static const cpu_object *stored_object(const backend_code *c, int wait) {
    if (c->obj.bytes) return &c->obj;
    return c->job ? cpu_tier_object(c->job, wait) : NULL;
}

static int write_object(const cpu_object *o, ser_writer *w) {
    ser_put_u32(w, ARTIFACT_VERSION);
    ser_put_str(w, o->entry_symbol);
    ser_put_str(w, o->range_symbol);
    ser_put_blob(w, o->bytes, o->size);
    return w->failed ? -1 : 0;
}

/* Only optimized code is ever stored: a tier-0 variant's entry is made on
 * the writer thread (runtime/writer.c) from a snapshot that waits for the
 * optimized build. */
static int cpu_artifact_later(backend *b, const backend_code *c) {
    (void)b;
    return !c->obj.bytes && c->job && !cpu_tier_object(c->job, 0);
}

static void *cpu_artifact_snapshot(backend *b, const backend_code *c) {
    (void)b;
    if (!c->job) return NULL; /* tier 0 only: nothing to store */
    cpu_tier_ref(c->job);
    return c->job;
}

static int cpu_artifact_write(void *snapshot, ser_writer *w) {
    const cpu_object *o = cpu_tier_object(snapshot, 1);
    return o ? write_object(o, w) : -1;
}

static void cpu_artifact_free(void *snapshot) { cpu_tier_unref(snapshot); }

static int cpu_code_tier(backend *b, const backend_code *c) {
    (void)b;
    return atomic_load_explicit(&((backend_code *)c)->run.tier, memory_order_acquire);
}

static void cpu_finish_builds(void) { cpu_tier_wait_all(); }

/* The optimized object code with its two symbols; -1 when there is
 * none (yet: cpu_artifact_later). */
static int cpu_artifact(backend *b, const backend_code *c, ser_writer *w) {
    (void)b;
    const cpu_object *o = stored_object(c, 0);
    return o ? write_object(o, w) : -1;
}

static int read_symbol(ser_reader *r, char *out, size_t cap) {
    size_t len;
    int is_null;
    const char *s = ser_get_str(r, &len, &is_null);
    if (!s || len >= cap) return -1;
    memcpy(out, s, len);
    out[len] = 0;
    return 0;
}

static tack_status cpu_load(backend *b, const ir_func *f, const void *bytes, size_t n,
                            backend_code **out, tack_error *err) {
    (void)b;
    *out = NULL;
    backend_code *c = calloc(1, sizeof *c);
    ser_reader r = ser_reader_init(bytes, n);
    size_t size = 0;
    const void *obj = NULL;
    if (c && ser_get_u32(&r) == ARTIFACT_VERSION &&
        !read_symbol(&r, c->obj.entry_symbol, sizeof c->obj.entry_symbol) &&
        !read_symbol(&r, c->obj.range_symbol, sizeof c->obj.range_symbol))
        obj = ser_get_blob(&r, &size);
    if (!obj || r.failed || ser_left(&r) || !(c->obj.bytes = malloc(size ? size : 1))) {
        code_free(c);
        err->status = TACK_ERR_INTERNAL;
        snprintf(err->message, sizeof err->message, "kernel '%s': unreadable CPU code in the cache",
                 f->name);
        return TACK_ERR_INTERNAL;
    }
    memcpy(c->obj.bytes, obj, size);
    c->obj.size = size;
    c->obj.tier = 1; /* only optimized code is stored */
    return link_code(f, c, &c->obj, out, err);
}

static void cpu_release(backend *b, backend_code *c) {
    (void)b;
    code_free(c);
}

typedef struct chunk_ctx {
    cpu_entry_fn entry;
    const uint64_t *slots;
    const int64_t *range;
    const int64_t *dims;
    /* The launch's scratch areas, one per thread that runs at once (the
     * pool admits no more): a chunk takes a free one for its run. */
    char *scratch;
    int64_t bytes;
    int nareas;
    atomic_char taken[CPU_POOL_MAX_THREADS];
} chunk_ctx;

static void run_chunk(void *arg, int64_t lo, int64_t hi) {
    chunk_ctx *c = arg;
    if (!c->bytes) {
        c->entry(c->slots, c->range, lo, hi, c->dims, NULL);
        return;
    }
    for (int a = 0;; a = (a + 1) % c->nareas) {
        char no = 0;
        if (atomic_compare_exchange_strong(&c->taken[a], &no, 1)) {
            c->entry(c->slots, c->range, lo, hi, c->dims, c->scratch + (size_t)a * (size_t)c->bytes);
            atomic_store(&c->taken[a], 0);
            return;
        }
    }
}

/* The code's own range function (codegen.c). */
static tack_status cpu_range(backend *b, backend_code *code, const backend_call *call,
                             int64_t out[BACKEND_RANGE_LEN], tack_error *err) {
    (void)b;
    if (code->range_ir && cpu_range_check_reads(code->range_ir, call->slots, call->dims, err))
        return err->status;
    cpu_range_fn range = atomic_load_explicit(&code->run.range, memory_order_acquire);
    range(call->slots, &call->dims[0][0], out);
    return code->range_u64 ? cpu_range_refuse_u64(call->kernel_name, code->range_u64, out, err)
                           : TACK_OK;
}

/* Splits the parallel loop across the pool. */
static tack_status cpu_launch(backend *b, backend_code *code, const backend_call *call,
                              tack_error *err) {
    const int64_t *range = call->range;
    int64_t n = backend_trip_count(range[0], range[1], range[2]);
    /* Work per outer iteration: the inner ndindex extents. */
    int64_t inner = 1;
    for (int d = 3; d < CPU_RANGE_LEN; d++) {
        if (range[d] <= 0) n = 0;
        else inner = inner > INT64_MAX / range[d] ? INT64_MAX : inner * range[d];
    }
    int64_t grain = call->has_inner_loops ? GRAIN_LOOPS
                                          : GRAIN_FLAT / (inner < GRAIN_FLAT ? inner : GRAIN_FLAT);
    int tier0 = code->job && atomic_load_explicit(&code->run.tier, memory_order_acquire) == 0;
    if (tier0 && atomic_load_explicit(&code->tier0_ns, memory_order_relaxed) > TIER0_PATIENCE_NS) {
        cpu_tier_object(code->job, 1); /* swaps the optimized entry in */
        tier0 = 0;
    }
    uint64_t t0 = tier0 ? backend_now_ns() : 0;
    /* One entry for the whole launch (a tier-up meanwhile takes the next). */
    chunk_ctx c = {atomic_load_explicit(&code->run.entry, memory_order_acquire), call->slots, range, &call->dims[0][0], NULL, code->scratch_bytes, 0, {0}};
    if (c.bytes && n > 0) {
        /* Sized before anything runs: a launch that cannot have them is
         * refused whole. */
        c.nareas = cpu_pool_size(b->pool);
        if (c.nareas > CPU_POOL_MAX_THREADS) c.nareas = CPU_POOL_MAX_THREADS;
        size_t total = (size_t)c.nareas * (size_t)c.bytes;
        c.scratch = total / (size_t)c.nareas == (size_t)c.bytes ? aligned_alloc(64, total) : NULL;
        if (!c.scratch)
            return backend_error(err, TACK_ERR_NOMEM,
                                 "kernel '%s': out of memory for its tack.local arrays: %lld bytes "
                                 "for each of %d threads",
                                 call->kernel_name, (long long)c.bytes, c.nareas);
        for (int a = 0; a < c.nareas; a++) atomic_init(&c.taken[a], 0);
    }
    /* Iterations with inner loops vary in cost (an escape-time loop, a
     * triangular nest): finer chunks balance them. */
    cpu_pool_run(b->pool, n, grain, call->has_inner_loops ? 32 : 4, c.bytes ? c.nareas : 0, run_chunk,
                 &c);
    free(c.scratch);
    if (tier0)
        atomic_fetch_add_explicit(&code->tier0_ns, backend_now_ns() - t0, memory_order_relaxed);
    return TACK_OK;
}

/* Host memory: a handle is the data pointer, 64-byte aligned. */
static tack_status cpu_mem_alloc(backend *b, size_t bytes, void **handle, tack_error *err) {
    (void)b;
    size_t rounded = (bytes + 63) / 64 * 64;
    *handle = rounded >= bytes ? aligned_alloc(64, rounded ? rounded : 64) : NULL;
    if (*handle) return TACK_OK;
    err->status = TACK_ERR_NOMEM;
    snprintf(err->message, sizeof err->message, "out of memory allocating %zu bytes on the CPU", bytes);
    return TACK_ERR_NOMEM;
}

static void cpu_mem_free(backend *b, void *handle) {
    (void)b;
    free(handle);
}

static tack_status cpu_mem_write(backend *b, void *handle, size_t offset, const void *src, size_t n,
                                 tack_error *err) {
    (void)b, (void)err;
    if (n) memmove((char *)handle + offset, src, n);
    return TACK_OK;
}

static tack_status cpu_mem_read(backend *b, const void *handle, size_t offset, void *dst, size_t n,
                                tack_error *err) {
    (void)b, (void)err;
    if (n) memmove(dst, (const char *)handle + offset, n);
    return TACK_OK;
}

static tack_status cpu_synchronize(backend *b, tack_error *err) {
    (void)b, (void)err; /* launches return finished */
    return TACK_OK;
}

const backend_ops backend_cpu = {
    .name = "cpu",
    .open = cpu_open,
    .close = cpu_close,
    .caps = cpu_caps,
    .describe = cpu_describe,
    .cache_target = cpu_cache_target,
    .build = cpu_build,
    .artifact = cpu_artifact,
    .artifact_later = cpu_artifact_later,
    .artifact_snapshot = cpu_artifact_snapshot,
    .artifact_write = cpu_artifact_write,
    .artifact_free = cpu_artifact_free,
    .code_tier = cpu_code_tier,
    .finish_builds = cpu_finish_builds,
    .load = cpu_load,
    .release = cpu_release,
    .range = cpu_range,
    .launch = cpu_launch,
    .set_num_threads = cpu_set_num_threads,
    .inspect = cpu_inspect,
    .mem_alloc = cpu_mem_alloc,
    .mem_free = cpu_mem_free,
    .mem_write = cpu_mem_write,
    .mem_read = cpu_mem_read,
    .synchronize = cpu_synchronize,
};
