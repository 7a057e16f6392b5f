/* device.c - opens the system's default Metal device, reads what it can do
 * and makes its command queue, and manages its memory: MTLBuffers in
 * shared storage (Apple silicon's unified memory), read and written by
 * the CPU through their contents. */
#include "metal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/gpu/dialect.h"
#include "backend/gpu/gpu.h"

const char *metal_error_text(const backend *b, objc_id error) {
    if (!error) return NULL;
    objc_id text = b->objc->id(error, b->s.localized);
    return text ? b->objc->cstr(text, b->s.utf8) : NULL;
}

/* NSString -> a bounded C copy ("" for nil). */
static void copy_string(const backend *b, objc_id str, char *out, size_t cap) {
    const char *s = str ? b->objc->cstr(str, b->s.utf8) : NULL;
    snprintf(out, cap, "%s", s ? s : "");
}

static tack_status read_caps(backend *b, tack_error *err) {
    const metal_objc_api *o = b->objc;
    const metal_sels *s = &b->s;
    copy_string(b, o->id(b->device, s->name), b->name, sizeof b->name);
    if (!*b->name) snprintf(b->name, sizeof b->name, "Metal device");
    /* The OS version names the Metal compiler that builds the MSL. */
    objc_id info = o->id(o->get_class("NSProcessInfo"), s->process_info);
    copy_string(b, info ? o->id(info, s->os_version) : NULL, b->os, sizeof b->os);
    b->max_threads = o->size(b->device, s->max_threads);
    if (b->max_threads.width < 1) b->max_threads.width = 1;
    if (b->max_threads.height < 1) b->max_threads.height = 1;
    if (b->max_threads.depth < 1) b->max_threads.depth = 1;
    /* dispatchThreads needs non-uniform threadgroups: Apple4 and newer,
     * every Mac2-family GPU. */
    b->nonuniform = o->bool_i64(b->device, s->supports_family, METAL_FAMILY_APPLE4) ||
                    o->bool_i64(b->device, s->supports_family, METAL_FAMILY_MAC2);
    uint64_t tg_memory = o->u64(b->device, s->max_tg_memory);
    uint64_t max_buffer = o->u64(b->device, s->max_buffer);
    uint64_t working_set = o->u64(b->device, s->working_set);
    backend_caps *c = &b->caps;
    memset(c, 0, sizeof *c);
    c->host_memory = 0;     /* arrays are MTLBuffers: tack.array(x, device=dev) */
    c->locked_dispatch = 0; /* a launch owns its arguments (metal.h) */
    c->fp64 = 0;            /* MSL has no double */
    c->atomics64 = 0;       /* no 64-bit compare-and-swap */
    c->images = 0;          /* textures are sampled in software */
    c->hardware_texture_filtering = 0;
    c->local_mem_bytes = tg_memory > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)tg_memory;
    c->max_workgroup = (int64_t)b->max_threads.width;
    /* Grid positions are 32-bit; launches past that stride (launch.c). */
    for (int d = 0; d < 3; d++) c->max_grid[d] = UINT32_MAX;
    c->global_mem_bytes = working_set > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)working_set;
    c->max_alloc_bytes = max_buffer > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)max_buffer;
    c->compute_units = 1; /* Metal does not say how many GPU cores there are */

    snprintf(b->description, sizeof b->description, "%s (Metal, %s, %llu KB threadgroup memory)",
             b->name, *b->os ? b->os : "unknown OS", (unsigned long long)(tg_memory >> 10));
    const char *opts = gpu_dialect_metal.build_options;
    size_t len = strlen(b->name) + strlen(b->os) + strlen(opts) + 96;
    if (!(b->target = malloc(len)))
        return backend_error(err, TACK_ERR_NOMEM, "out of memory opening a Metal device");
    snprintf(b->target, len, "metal; device=%s; os=%s; options=%s; nonuniform=%d", b->name, b->os,
             opts, b->nonuniform);
    return TACK_OK;
}

tack_status metal_open(int index, int num_threads, backend **out, tack_error *err) {
    (void)num_threads;
    *out = NULL;
    char spec[32];
    if (index) snprintf(spec, sizeof spec, "metal:%d", index);
    else snprintf(spec, sizeof spec, "metal");
    const char *why = NULL;
    const metal_objc_api *o = metal_objc_load(&why);
    if (!o) return backend_error(err, TACK_ERR_DEVICE, "tack.device(\"%s\"): %s", spec, why);
    if (index != 0)
        return backend_error(err, TACK_ERR_VALUE,
                             "tack.device(\"%s\"): there is no Metal device %d: Tack opens the "
                             "system's default Metal device only (\"metal\" or \"metal:0\")",
                             spec, index);
    backend *b = calloc(1, sizeof *b);
    if (!b) return backend_error(err, TACK_ERR_NOMEM, "out of memory opening a Metal device");
    b->objc = o;
#define METAL_SEL_REGISTER(field, text) b->s.field = o->sel(text);
    METAL_SELECTORS(METAL_SEL_REGISTER)
#undef METAL_SEL_REGISTER
    tack_status st = TACK_OK;
    void *pool = o->pool_push();
    b->device = o->create_device();
    if (!b->device) {
        st = backend_error(err, TACK_ERR_DEVICE,
                           "tack.device(\"%s\"): no Metal device: MTLCreateSystemDefaultDevice "
                           "found no GPU",
                           spec);
        goto done;
    }
    if ((st = read_caps(b, err))) goto done;
    if (!(b->queue = o->id(b->device, b->s.new_queue))) {
        st = backend_error(err, TACK_ERR_DEVICE, "tack.device(\"%s\"): %s: newCommandQueue failed",
                           spec, b->name);
        goto done;
    }
    if (pthread_mutex_init(&b->lock, NULL)) {
        st = backend_error(err, TACK_ERR_NOMEM, "out of memory opening a Metal device");
        goto done;
    }
    b->lock_made = 1;
done:
    o->pool_pop(pool);
    if (st) {
        metal_close(b);
        return st;
    }
    *out = b;
    return TACK_OK;
}

void metal_close(backend *b) {
    if (!b) return;
    /* Every launch waited for its command buffer: nothing is in flight. */
    if (b->queue) b->objc->v(b->queue, b->s.release);
    if (b->device) b->objc->v(b->device, b->s.release);
    if (b->lock_made) pthread_mutex_destroy(&b->lock);
    free(b->target);
    free(b);
}

GPU_DRIVER_ACCESSORS(metal)

/* ---- memory ------------------------------------------------------------ */

tack_status metal_mem_alloc(backend *b, size_t bytes, void **handle, tack_error *err) {
    *handle = NULL;
    if (b->caps.max_alloc_bytes && (uint64_t)bytes > (uint64_t)b->caps.max_alloc_bytes)
        return backend_error(err, TACK_ERR_NOMEM,
                             "cannot allocate %zu bytes on %s: its largest buffer is %lld bytes",
                             bytes, b->description, (long long)b->caps.max_alloc_bytes);
    /* An empty array still gets a buffer (Metal has no empty ones), so a
     * handle is never NULL. */
    void *pool = b->objc->pool_push();
    objc_id buf = b->objc->id_u64_u64(b->device, b->s.new_buffer, bytes ? bytes : 1,
                                      METAL_STORAGE_SHARED);
    b->objc->pool_pop(pool);
    if (!buf)
        return backend_error(err, TACK_ERR_NOMEM,
                             "allocating %zu bytes on %s: newBufferWithLength:options: failed",
                             bytes, b->description);
    *handle = buf;
    return TACK_OK;
}

void metal_mem_free(backend *b, void *handle) {
    if (handle) b->objc->v((objc_id)handle, b->s.release);
}

/* Shared storage: the CPU reaches the buffer's bytes directly, and every
 * launch has finished before it returns, so no copy needs queuing. */
static char *contents(backend *b, const void *handle, const char *what, tack_error *err) {
    char *p = b->objc->ptr((objc_id)handle, b->s.contents);
    if (!p) backend_error(err, TACK_ERR_DEVICE, "%s on %s: the buffer has no contents", what,
                          b->description);
    return p;
}

tack_status metal_mem_write(backend *b, void *handle, size_t offset, const void *src, size_t n,
                            tack_error *err) {
    if (!n) return TACK_OK;
    char *p = contents(b, handle, "writing", err);
    if (!p) return err->status;
    memcpy(p + offset, src, n);
    return TACK_OK;
}

tack_status metal_mem_read(backend *b, const void *handle, size_t offset, void *dst, size_t n,
                           tack_error *err) {
    if (!n) return TACK_OK;
    char *p = contents(b, handle, "reading", err);
    if (!p) return err->status;
    memcpy(dst, p + offset, n);
    return TACK_OK;
}
