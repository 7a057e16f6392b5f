/* program.c - MSL, fresh from the emitter or from the disk cache, to a
 * library, its kernel function and a compute pipeline; a variant's code;
 * and the artifact the disk cache stores for it: the MSL with its entry
 * name, array parameters and pack length (the reference's table: Metal's
 * artifact is its source, which newLibraryWithSource compiles again on a
 * load, fast through macOS's own shader cache). */
#include "metal.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/gpu/gpu.h"

/* "TMTL" and the layout's version: bump on any change to the record. */
#define ARTIFACT_MAGIC 0x4c544d54u
#define ARTIFACT_VERSION 1u

/* library -> function -> pipeline, inside the caller's pool. */
static tack_status compile(backend *b, backend_code *c, tack_error *err) {
    const metal_objc_api *o = b->objc;
    const metal_sels *s = &b->s;
    const char *kname = c->g.f->name;
    objc_id nsstring = o->get_class("NSString");
    objc_id source = o->id_cstr(nsstring, s->string_utf8, c->source);
    objc_id entry = o->id_cstr(nsstring, s->string_utf8, c->g.entry);
    objc_id options = o->id(o->id(o->get_class("MTLCompileOptions"), s->alloc), s->init);
    if (!source || !entry || !options) {
        if (options) o->v(options, s->release);
        return gpu_nomem_building(err, kname, "Metal");
    }
    /* The dialect's numerics need fast math off (dialect_metal.c). */
    o->v_bool(options, s->set_fast_math, 0);
    objc_id error = NULL;
    objc_id library = o->id_id_id_err(b->device, s->new_library, source, options, &error);
    o->v(options, s->release);
    if (!library) {
        const char *why = metal_error_text(b, error);
        return backend_error(err, TACK_ERR_COMPILE,
                             "kernel '%s': Metal's compiler refused the MSL "
                             "(newLibraryWithSource): %s",
                             kname, why ? why : "no reason given");
    }
    objc_id fn = o->id_id(library, s->new_function, entry);
    o->v(library, s->release); /* the function keeps what it needs */
    if (!fn)
        return backend_error(err, TACK_ERR_INTERNAL,
                             "internal error: kernel '%s': the compiled MSL has no function '%s'",
                             kname, c->g.entry);
    error = NULL;
    c->pipeline = o->id_id_err(b->device, s->new_pipeline, fn, &error);
    o->v(fn, s->release);
    if (!c->pipeline) {
        const char *why = metal_error_text(b, error);
        return backend_error(err, TACK_ERR_DEVICE,
                             "kernel '%s': newComputePipelineStateWithFunction failed on %s: %s",
                             kname, b->name, why ? why : "no reason given");
    }
    c->max_threads = o->u64(c->pipeline, s->max_total_threads);
    return TACK_OK;
}

tack_status metal_code_from_source(backend *b, const ir_func *f, const char *source,
                                   size_t source_len, const char *entry, size_t entry_len,
                                   backend_code **out, tack_error *err) {
    *out = NULL;
    backend_code *c = gpu_code_new(sizeof *c, f, entry, entry_len, "Metal", err);
    if (!c) return err->status;
    c->source = gpu_dup_n(source, source_len);
    if (!c->source) {
        metal_release(b, c);
        return gpu_nomem_building(err, f->name, "Metal");
    }
    void *pool = b->objc->pool_push();
    tack_status st = compile(b, c, err); /* err is filled before the pool goes */
    b->objc->pool_pop(pool);
    if (st) {
        metal_release(b, c);
        return st;
    }
    *out = c;
    return TACK_OK;
}

void metal_release(backend *b, backend_code *c) {
    if (!c) return;
    if (c->pipeline) b->objc->v(c->pipeline, b->s.release);
    gpu_code_free(&c->g);
    free(c->source);
    free(c);
}

/* ---- the artifact ------------------------------------------------------ */

void metal_artifact_write(const backend_code *c, ser_writer *w) {
    ser_put_u32(w, ARTIFACT_MAGIC);
    ser_put_u32(w, ARTIFACT_VERSION);
    ser_put_str(w, c->g.entry);
    ser_put_blob(w, c->source, strlen(c->source));
    ser_put_u32(w, (uint32_t)gpu_pack_words(c->g.f));
    ser_put_u32(w, (uint32_t)c->g.narrays);
    for (int a = 0; a < c->g.narrays; a++) ser_put_u32(w, (uint32_t)c->g.arrays[a]);
}

tack_status metal_artifact_parse(const ir_func *f, const void *bytes, size_t n,
                                 metal_record *out, tack_error *err) {
    memset(out, 0, sizeof *out);
    ser_reader r = ser_reader_init(bytes, n);
    int null_entry = 0;
    uint32_t magic = ser_get_u32(&r), version = ser_get_u32(&r);
    out->entry = ser_get_str(&r, &out->entry_len, &null_entry);
    out->source = ser_get_blob(&r, &out->source_len);
    out->pack_words = ser_get_u32(&r);
    out->narrays = ser_get_u32(&r);
    /* The layout the MSL was made for must be the IR's: its arrays, in
     * order, at buffers 1, 2, ..., and its pack's length. */
    int ok = !r.failed && magic == ARTIFACT_MAGIC && version == ARTIFACT_VERSION && !null_entry &&
             out->entry_len && out->source && out->source_len &&
             !memchr(out->entry, 0, out->entry_len) && !memchr(out->source, 0, out->source_len) &&
             out->pack_words == (uint32_t)gpu_pack_words(f);
    uint32_t a = 0;
    for (int p = 0; ok && p < f->nparams; p++)
        if (f->params[p].role == ROLE_ARRAY) ok = a++ < out->narrays && ser_get_u32(&r) == (uint32_t)p;
    if (!ok || a != out->narrays || r.failed || ser_left(&r)) {
        memset(out, 0, sizeof *out);
        return gpu_artifact_damaged(err, f->name, "Metal");
    }
    return TACK_OK;
}

int metal_artifact(backend *b, const backend_code *c, ser_writer *w) {
    (void)b;
    metal_artifact_write(c, w);
    return w->failed ? -1 : 0;
}

tack_status metal_load(backend *b, const ir_func *f, const void *bytes, size_t n,
                       backend_code **out, tack_error *err) {
    *out = NULL;
    metal_record a;
    tack_status st = metal_artifact_parse(f, bytes, n, &a, err);
    if (st) return st;
    st = metal_code_from_source(b, f, a.source, a.source_len, a.entry, a.entry_len, out, err);
    /* The artifact is source: Metal compiles it again (its own cache
     * makes that fast), which the counters call a source build. */
    if (!st) atomic_fetch_add(&backend_stats.source_builds, 1);
    return st;
}
