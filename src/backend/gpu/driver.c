/* driver.c - the steps every GPU driver shares (driver.h): loading its
 * table, naming a failure, opening a device, a code object's common part,
 * the artifact's frame, the checks before an allocation and a launch, the
 * strided grid and print()'s record buffer. */
#define _DEFAULT_SOURCE
#include "driver.h"

#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- loading ----------------------------------------------------------- */

const void *gpu_table_load(const void *fake, pthread_once_t *once, void (*load)(void),
                           const void *const *loaded, const char *error, const char **why) {
    if (fake) {
        if (why) *why = NULL;
        return fake;
    }
    pthread_once(once, load);
    if (why) *why = *loaded ? NULL : error;
    return *loaded;
}

void *gpu_dlopen_first(const char *env, const char *const *names, size_t n) {
    const char *chosen = env ? getenv(env) : NULL;
    /* A library the user names replaces the search: no silent fallback. */
    if (chosen && *chosen) return dlopen(chosen, RTLD_NOW | RTLD_LOCAL);
    void *lib = NULL;
    for (size_t i = 0; !lib && i < n; i++) lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    return lib;
}

/* ---- errors ------------------------------------------------------------ */

tack_status gpu_fail(tack_error *err, tack_status st, const char *what, const char *call,
                     const char *name, const char *words) {
    return backend_error(err, st, "%s%s%s failed: %s%s%s%s", what ? what : "", what ? ": " : "",
                         call, name, words ? " (" : "", words ? words : "", words ? ")" : "");
}

/* ---- opening a device -------------------------------------------------- */

void gpu_spec(char spec[32], const char *prefix, int index) {
    if (index) snprintf(spec, 32, "%s:%d", prefix, index);
    else snprintf(spec, 32, "%s", prefix);
}

tack_status gpu_no_such_device(tack_error *err, const char *spec, const char *vendor,
                               const char *prefix, int index, int count,
                               void (*name_of)(const void *api, int i, char *name, size_t cap),
                               const void *api) {
    char names[1024] = "";
    size_t used = 0;
    for (int i = 0; i < count && used < sizeof names; i++) {
        char nm[256] = "?";
        name_of(api, i, nm, sizeof nm);
        int k = snprintf(names + used, sizeof names - used, "%s\"%s:%d\" is %s", i ? "; " : "",
                         prefix, i, nm);
        if (k < 0) break;
        used += (size_t)k;
    }
    return backend_error(err, TACK_ERR_VALUE,
                         "tack.device(\"%s\"): there is no %s device %d: %d device%s found (%s)",
                         spec, vendor, index, count, count == 1 ? "" : "s", names);
}

void gpu_caps_common(backend_caps *c, size_t total_mem, int local_mem, int max_workgroup,
                     int compute_units, int max_block[3], int64_t max_grid_dim[3]) {
    for (int d = 0; d < 3; d++) {
        if (max_block[d] < 1) max_block[d] = 1;
        if (max_grid_dim[d] < 1) max_grid_dim[d] = 1;
        /* Kernels stride over what the grid does not cover (gpu.h), so any
         * length runs; this is the work items one launch can have. */
        c->max_grid[d] = max_grid_dim[d] * max_block[d];
    }
    c->host_memory = 0;
    c->locked_dispatch = 0; /* launch state lives on the launching thread's stack */
    c->fp64 = 1;
    c->atomics64 = 1;
    c->local_mem_bytes = local_mem;
    c->max_workgroup = max_workgroup < 1 ? 1 : max_workgroup;
    c->global_mem_bytes = total_mem > (size_t)INT64_MAX ? INT64_MAX : (int64_t)total_mem;
    c->max_alloc_bytes = c->global_mem_bytes;
    c->compute_units = compute_units;
}

tack_status gpu_target_text(char **out, const char *vendor, tack_error *err, const char *fmt, ...) {
    va_list ap, again;
    va_start(ap, fmt);
    va_copy(again, ap);
    int len = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    *out = len < 0 ? NULL : malloc((size_t)len + 1);
    if (*out) vsnprintf(*out, (size_t)len + 1, fmt, again);
    va_end(again);
    if (!*out)
        return backend_error(err, TACK_ERR_NOMEM, "out of memory opening a %s device", vendor);
    return TACK_OK;
}

tack_status gpu_open_done(backend *b, tack_status st, backend **out, void (*close)(backend *b)) {
    if (st) {
        close(b);
        return st;
    }
    *out = b;
    return TACK_OK;
}

/* ---- code objects ------------------------------------------------------ */

char *gpu_dup_n(const void *s, size_t n) {
    char *d = malloc(n + 1);
    if (d) {
        if (n) memcpy(d, s, n);
        d[n] = 0;
    }
    return d;
}

int gpu_code_init(gpu_code *g, const ir_func *f, const char *entry, size_t entry_len) {
    g->f = gpu_keep_ir(f);
    g->entry = gpu_dup_n(entry, entry_len);
    g->arrays = malloc((f->nparams ? f->nparams : 1) * sizeof(int));
    if (!g->f || !g->entry || !g->arrays) return -1;
    for (int p = 0; p < f->nparams; p++)
        if (f->params[p].role == ROLE_ARRAY) g->arrays[g->narrays++] = p;
    return gpu_print_table_init(&g->prints, g->f) < 0 ? -1 : 0;
}

void *gpu_code_new(size_t size, const ir_func *f, const char *entry, size_t entry_len,
                   const char *vendor, tack_error *err) {
    gpu_code *g = calloc(1, size);
    if (g && gpu_code_init(g, f, entry, entry_len) == 0) return g;
    if (g) gpu_code_free(g);
    free(g);
    gpu_nomem_building(err, f->name, vendor);
    return NULL;
}

void gpu_code_free(gpu_code *g) {
    ir_func_free(g->f);
    free(g->entry);
    free(g->arrays);
    gpu_print_table_free(&g->prints);
}

tack_status gpu_nomem_building(tack_error *err, const char *kernel_name, const char *vendor) {
    return backend_error(err, TACK_ERR_NOMEM, "kernel '%s': out of memory building %s code",
                         kernel_name, vendor);
}

/* ---- the artifact ------------------------------------------------------ */

void gpu_artifact_head(ser_writer *w, uint32_t magic, uint32_t version, const char *entry,
                       const char *target) {
    ser_put_u32(w, magic);
    ser_put_u32(w, version);
    ser_put_str(w, entry);
    ser_put_str(w, target);
}

int gpu_artifact_read(const void *bytes, size_t n, uint32_t magic, uint32_t version,
                      gpu_record *out, int nblobs, const void **blob, size_t *len) {
    ser_reader r = ser_reader_init(bytes, n);
    int null_entry = 0, null_target = 0;
    uint32_t m = ser_get_u32(&r), v = ser_get_u32(&r);
    out->entry = ser_get_str(&r, &out->entry_len, &null_entry);
    out->target = ser_get_str(&r, &out->target_len, &null_target);
    int ok = !r.failed && m == magic && v == version && !null_entry && !null_target &&
             out->entry_len && out->target_len && !memchr(out->entry, 0, out->entry_len) &&
             !memchr(out->target, 0, out->target_len);
    for (int i = 0; i < nblobs; i++) blob[i] = ser_get_blob(&r, &len[i]);
    return ok && !r.failed && !ser_left(&r);
}

tack_status gpu_artifact_damaged(tack_error *err, const char *kernel_name, const char *vendor) {
    return backend_error(err, TACK_ERR_INTERNAL,
                         "kernel '%s': the stored %s code is damaged or from another version",
                         kernel_name, vendor);
}

tack_status gpu_artifact_check_target(tack_error *err, const char *kernel_name,
                                      const char *vendor, const char *for_what,
                                      const gpu_record *a, const char *mine) {
    if (a->target_len == strlen(mine) && !memcmp(a->target, mine, a->target_len)) return TACK_OK;
    return backend_error(err, TACK_ERR_INTERNAL,
                         "kernel '%s': the stored %s code is for %s%.*s, the device is %s",
                         kernel_name, vendor, for_what, (int)a->target_len, a->target, mine);
}

/* ---- memory ------------------------------------------------------------ */

tack_status gpu_mem_check(tack_error *err, size_t bytes, const backend_caps *caps,
                          const char *description) {
    if ((uint64_t)bytes <= (uint64_t)caps->global_mem_bytes) return TACK_OK;
    return backend_error(err, TACK_ERR_NOMEM,
                         "cannot allocate %zu bytes on %s: its global memory is %lld bytes", bytes,
                         description, (long long)caps->global_mem_bytes);
}

/* ---- launching --------------------------------------------------------- */

int gpu_launch_begin(const gpu_code *g, const backend_call *call, const int64_t *pack,
                     int nargs, int max_args, gpu_launch_shape *out, tack_error *err) {
    const ir_func *f = g->f;
    out->name = call->kernel_name ? call->kernel_name : f->name;
    out->ninner = f->ninner;
    out->count = pack[GPU_PACK_COUNT];
    out->inner0 = pack[GPU_PACK_INNER0];
    out->inner1 = pack[GPU_PACK_INNER1];
    if (out->count <= 0 || (f->ninner >= 1 && out->inner0 <= 0) ||
        (f->ninner >= 2 && out->inner1 <= 0))
        return 1;
    if (call->nparams != f->nparams || nargs > max_args) {
        backend_error(err, TACK_ERR_INTERNAL,
                      "internal error: kernel '%s': a launch with %d arguments for code built "
                      "for %d",
                      out->name, call->nparams, f->nparams);
        return -1;
    }
    return 0;
}

void gpu_grid_strided(int64_t items, const int max_block[3], const int64_t max_grid[3],
                      int64_t budget, int ninner, int64_t count, int64_t inner0, int64_t inner1,
                      uint32_t grid[3], uint32_t block[3]) {
    int64_t bx = items, by = 1, bz = 1;
    if (ninner == 1) {
        by = gpu_pow2_at_least(inner0, gpu_min64(items, max_block[1]));
        bx = items / by;
    } else if (ninner >= 2) {
        bz = gpu_pow2_at_least(inner1, gpu_min64(64, max_block[2]));
        by = gpu_pow2_at_least(inner0, gpu_min64(items / bz, max_block[1]));
        bx = items / (by * bz);
    }
    if (bx > max_block[0]) bx = max_block[0];
    int64_t gy = ninner >= 1 ? gpu_min64(gpu_cdiv(inner0, by), max_grid[1]) : 1;
    int64_t gz = ninner >= 2 ? gpu_min64(gpu_cdiv(inner1, bz), max_grid[2]) : 1;
    if (gy > budget) gy = budget;
    if (gz > budget / gy) gz = budget / gy > 0 ? budget / gy : 1;
    int64_t left = budget / (gy * gz) > 0 ? budget / (gy * gz) : 1;
    int64_t gx = gpu_min64(gpu_min64(gpu_cdiv(count, bx), left), max_grid[0]);
    grid[0] = (uint32_t)(gx > 0 ? gx : 1);
    grid[1] = (uint32_t)gy;
    grid[2] = (uint32_t)gz;
    block[0] = (uint32_t)bx;
    block[1] = (uint32_t)by;
    block[2] = (uint32_t)bz;
}

tack_status gpu_print_begin(backend *b, const backend_ops *m, const gpu_code *g, void **pbuf,
                            uint32_t *pcap, tack_error *err) {
    *pbuf = NULL;
    *pcap = 0;
    if (!g->prints.n) return TACK_OK;
    uint32_t header[GPU_PRINT_HEADER];
    *pcap = gpu_print_capacity();
    gpu_print_header(header, *pcap);
    tack_status st = m->mem_alloc(b, 4 * ((size_t)GPU_PRINT_HEADER + *pcap), pbuf, err);
    if (!st) st = m->mem_write(b, *pbuf, 0, header, sizeof header, err);
    if (st && *pbuf) {
        m->mem_free(b, *pbuf);
        *pbuf = NULL;
    }
    return st;
}

tack_status gpu_print_end(backend *b, const backend_ops *m, const gpu_code *g, const char *name,
                          void *pbuf, uint32_t pcap, tack_status st, tack_error *err) {
    if (!pbuf) return st;
    if (!st) {
        uint32_t header[GPU_PRINT_HEADER];
        st = m->mem_read(b, pbuf, 0, header, sizeof header, err);
        size_t used = header[GPU_PRINT_OFFSET] < pcap ? header[GPU_PRINT_OFFSET] : pcap;
        uint32_t *all = st ? NULL : malloc(4 * (GPU_PRINT_HEADER + used));
        if (!st && !all)
            st = backend_error(err, TACK_ERR_NOMEM,
                               "kernel '%s': out of memory reading its print()s", name);
        if (all) {
            memcpy(all, header, sizeof header);
            if (used)
                st = m->mem_read(b, pbuf, sizeof header, all + GPU_PRINT_HEADER, 4 * used, err);
            if (!st) gpu_print_output(&g->prints, name, all);
            free(all);
        }
    }
    m->mem_free(b, pbuf);
    return st;
}

tack_status gpu_pack_and_launch(backend *b, backend_code *c, const backend_call *call,
                                gpu_launch_fn launch, tack_error *err) {
    int64_t pack[GPU_PACK_MAX_WORDS];
    const gpu_code *g = (const gpu_code *)c; /* every driver's code starts with one */
    if (gpu_pack_from_range(g->f, call->range, call->slots, pack, err)) return err->status;
    return launch(b, c, call, pack, err);
}

tack_status gpu_driver_range(backend *b, backend_code *c, const backend_call *call,
                             tack_status (*read)(backend *, const void *, size_t, void *, size_t,
                                                 tack_error *),
                             int64_t out[BACKEND_RANGE_LEN], tack_error *err) {
    const gpu_code *g = (const gpu_code *)c;
    gpu_device_read rd = {read, b}; /* array elements: range(n[0]) */
    return gpu_range_eval(g->f, call->slots, call->dims, &rd, out, err);
}

/* ---- queued launches --------------------------------------------------- */

void gpu_queue_init(gpu_queue *q) {
    memset(q, 0, sizeof *q);
    pthread_mutex_init(&q->lock, NULL);
}

void gpu_queue_destroy(gpu_queue *q) { pthread_mutex_destroy(&q->lock); }

void gpu_queue_note(gpu_queue *q, const char *name) {
    pthread_mutex_lock(&q->lock);
    snprintf(q->names[q->next++ % GPU_QUEUE_NAMES], GPU_NAME_LEN, "%s", name ? name : "?");
    pthread_mutex_unlock(&q->lock);
}

uint64_t gpu_queue_mark(gpu_queue *q) {
    pthread_mutex_lock(&q->lock);
    uint64_t m = q->next;
    pthread_mutex_unlock(&q->lock);
    return m;
}

int gpu_queue_busy(gpu_queue *q) {
    pthread_mutex_lock(&q->lock);
    int busy = q->next != q->done;
    pthread_mutex_unlock(&q->lock);
    return busy;
}

tack_status gpu_queue_waited(gpu_queue *q, uint64_t mark, tack_status st, tack_error *err) {
    char names[GPU_QUEUE_NAMES * (GPU_NAME_LEN + 4)] = "";
    uint64_t n = 0;
    pthread_mutex_lock(&q->lock);
    if (mark > q->done) {
        n = mark - q->done;
        if (st) {
            /* The names of the launches the wait covered, the oldest the
             * ring still holds first, each once. */
            size_t used = 0;
            uint64_t first = n > GPU_QUEUE_NAMES ? mark - GPU_QUEUE_NAMES : q->done;
            for (uint64_t i = first; i < mark; i++) {
                const char *nm = q->names[i % GPU_QUEUE_NAMES];
                char quoted[GPU_NAME_LEN + 4];
                snprintf(quoted, sizeof quoted, "'%s'", nm);
                if (strstr(names, quoted)) continue;
                used += (size_t)snprintf(names + used, sizeof names - used, "%s%s",
                                         used ? ", " : "", quoted);
            }
        }
        q->done = mark;
    }
    pthread_mutex_unlock(&q->lock);
    if (!st || !n) return st;
    char full[sizeof names + sizeof err->message + 128];
    if (!strchr(names, ','))
        snprintf(full, sizeof full, "kernel %s (queued earlier, reported at synchronization): %s",
                 names, err->message);
    else
        snprintf(full, sizeof full,
                 "one of the kernels %s (queued since the last synchronization, reported "
                 "there): %s",
                 names, err->message);
    size_t len = strlen(full);
    if (len >= sizeof err->message) len = sizeof err->message - 1;
    memcpy(err->message, full, len);
    err->message[len] = 0;
    return st;
}

/* ---- streams and events ------------------------------------------------ */

void gpu_streams_init(gpu_streams *all) {
    pthread_mutex_init(&all->lock, NULL);
    all->list = NULL;
}

void gpu_streams_destroy(gpu_streams *all) { pthread_mutex_destroy(&all->lock); }

tack_status gpu_stream_create(backend *b, const gpu_stream_api *api, gpu_streams *all,
                              uint64_t handle, void **queue, tack_error *err) {
    *queue = NULL;
    gpu_stream *s = calloc(1, sizeof *s);
    if (!s) return backend_error(err, TACK_ERR_NOMEM, "out of memory making a stream");
    if (handle) {
        s->handle = (void *)(uintptr_t)handle;
        s->foreign = 1;
    } else {
        tack_status st = api->create(b, &s->handle, err);
        if (st) {
            free(s);
            return st;
        }
    }
    gpu_queue_init(&s->queue);
    pthread_mutex_lock(&all->lock);
    s->next = all->list;
    if (all->list) all->list->prev = s;
    all->list = s;
    pthread_mutex_unlock(&all->lock);
    *queue = s;
    return TACK_OK;
}

void gpu_stream_destroy(backend *b, const gpu_stream_api *api, gpu_streams *all, void *queue) {
    gpu_stream *s = queue;
    if (!s) return;
    pthread_mutex_lock(&all->lock);
    if (s->prev) s->prev->next = s->next;
    else all->list = s->next;
    if (s->next) s->next->prev = s->prev;
    pthread_mutex_unlock(&all->lock);
    /* Its launches finish first; an unreported failure has nobody left to
     * hear it.  Another library's stream stays theirs. */
    tack_error ignored;
    gpu_stream_sync(b, api, s, "releasing a stream", &ignored);
    if (!s->foreign) api->destroy(b, s->handle);
    gpu_queue_destroy(&s->queue);
    free(s);
}

tack_status gpu_stream_sync(backend *b, const gpu_stream_api *api, gpu_stream *s,
                            const char *what, tack_error *err) {
    uint64_t mark = gpu_queue_mark(&s->queue);
    return gpu_queue_waited(&s->queue, mark, api->sync(b, s->handle, what, err), err);
}

tack_status gpu_streams_sync(backend *b, const gpu_stream_api *api, gpu_streams *all,
                             const char *what, tack_error *err) {
    tack_status st = TACK_OK;
    pthread_mutex_lock(&all->lock);
    for (gpu_stream *s = all->list; s; s = s->next) {
        if (!gpu_queue_busy(&s->queue)) continue;
        tack_error e2;
        tack_status s2 = gpu_stream_sync(b, api, s, what, st ? &e2 : err);
        if (!st) st = s2;
    }
    pthread_mutex_unlock(&all->lock);
    return st;
}

/* ---- the backend table ------------------------------------------------ */

tack_status gpu_inspect_source(const ir_func *f, const gpu_dialect *d, const char *symbol_base,
                               tack_inspect_kind kind, const char *vendor, const char *what,
                               const char *hint, char **text, tack_error *err) {
    *text = NULL;
    if (kind != TACK_INSPECT_LLVM)
        return backend_error(err, TACK_ERR_VALUE,
                             "kernel '%s': %s has only its source%s as text (kind %d)%s", f->name,
                             vendor, what, (int)kind, hint);
    char entry[GPU_ENTRY_LEN];
    return gpu_emit_variant(f, d, symbol_base, entry, text, err);
}

tack_status gpu_mem_wrap_address(backend *b, uint64_t address, size_t bytes, void **handle,
                                 tack_error *err) {
    (void)b, (void)bytes, (void)err;
    *handle = (void *)(uintptr_t)address;
    return TACK_OK;
}

tack_status gpu_nothing_in_flight(backend *b, tack_error *err) {
    (void)b, (void)err;
    return TACK_OK;
}
