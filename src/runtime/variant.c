/* variant.c - the variant cache: for each kernel, one slot per device,
 * holding that device's compiled variants.  Lookups take no lock (walkers
 * are counted, so retiring a template class frees nothing under them); a
 * miss compiles without a lock, so two threads missing together may both
 * compile, and the first to publish wins.  Compiled code comes from the
 * disk cache when it has it. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ir/serialize.h"
#include "runtime.h"
#include "runtime/disk_cache.h"
#include "util/sha256.h"

static kernel_slot *find_slot(const tack_kernel *k, const tack_device *dev) {
    for (kernel_slot *s = atomic_load(&k->slots); s; s = s->next)
        if (atomic_load(&s->dev) == dev) return s;
    return NULL;
}

kernel_slot *variant_slot(tack_kernel *k, tack_device *dev) {
    kernel_slot *s = find_slot(k, dev);
    if (s) return s;
    pthread_mutex_lock(&k->lock);
    s = find_slot(k, dev); /* made meanwhile? */
    /* A freed device's slot is reused: devices made per call don't grow
     * the list (its variants were freed with the device). */
    if (!s)
        for (s = atomic_load(&k->slots); s; s = s->next)
            if (!atomic_load(&s->dev)) {
                atomic_store(&s->dev, dev);
                break;
            }
    if (!s && (s = calloc(1, sizeof *s))) {
        atomic_store(&s->dev, dev);
        s->next = atomic_load(&k->slots);
        atomic_store_explicit(&k->slots, s, memory_order_release);
    }
    pthread_mutex_unlock(&k->lock);
    return s;
}

static variant *find_in(kernel_slot *s, const variant_key *key) {
    variant *v = atomic_load(&s->head);
    while (v && !variant_key_equal(&v->key, key)) v = v->next;
    return v;
}

variant *variant_find(tack_kernel *k, kernel_slot *s, const variant_key *key) {
    /* Counted as a reader: retirement frees nothing under a walker. */
    readers_enter(k);
    variant *v = find_in(s, key);
    readers_exit(k);
    return v;
}

/* The passes, each followed by the verifier. */
static tack_status run_passes(ir_func *f, const call_info *info, tack_error *err) {
    if (pass_resolve_dims(f, (const int64_t(*)[TACK_MAX_NDIM])info->dims, err)) return err->status;
    if (ir_verify(f, "resolve_dims", 0, err)) return err->status;
    if (pass_infer_types(f, err)) return err->status;
    return ir_verify(f, "infer_types", 1, err);
}

static tack_compile_begin_fn compile_begin;
static tack_compile_end_fn compile_end;

void tack_set_compile_hooks(tack_compile_begin_fn begin, tack_compile_end_fn end) {
    compile_begin = begin;
    compile_end = end;
}

void *host_release(void) { return compile_begin ? compile_begin() : NULL; }
void host_reacquire(void *state) {
    if (compile_end) compile_end(state);
}

/* The variant's full identity: the kernel's source, every outside name
 * lowering resolved (with a digest of what it meant), the variant key and
 * the code generator's target.  Its digest names the code's symbols, and it
 * is the disk cache's key. */
static void full_key(const tack_kernel *k, const ir_template *t, const call_info *info,
                     ser_writer *w) {
    const variant_key *key = &info->key;
    ser_put_str(w, "tack-variant-1");
    ser_put_str(w, k->filename);
    ser_put_u32(w, (uint32_t)k->first_line);
    ser_put_str(w, k->source);
    const ir_func *f = t->ir;
    ser_put_u32(w, (uint32_t)f->nresolved);
    for (int i = 0; i < f->nresolved; i++) {
        ser_put_u32(w, (uint32_t)f->resolved[i].src);
        ser_put_str(w, f->resolved[i].name);
        ser_put_str(w, f->resolved[i].digest);
    }
    ser_put_u32(w, (uint32_t)key->nparams);
    for (int i = 0; i < key->nparams; i++) {
        ser_put_u8(w, key->type[i]);
        ser_put_u8(w, key->is_array[i]);
        ser_put_u8(w, key->vec[i]);
        ser_put_u8(w, key->is_texture[i]);
        ser_put_u8(w, key->is_template[i]);
        for (int d = 0; d < 3; d++) ser_put_i64(w, key->texture_shape[i][d]);
    }
    tmpl_sig_portable(&key->tmpl, w);
    ser_put_u32(w, (uint32_t)key->nshape);
    for (int i = 0; i < key->nshape; i++) ser_put_i64(w, key->shape[i]);
    ser_put_u8(w, (uint8_t)key->disjoint);
    ser_put_str(w, cpu_target_description());
}

#define PAYLOAD_VERSION 1

/* A disk entry: the object code with its symbols, then the post-pass IR. */
static int payload_read(const void *p, size_t n, cpu_object *obj) {
    ser_reader r = ser_reader_init(p, n);
    if (ser_get_u32(&r) != PAYLOAD_VERSION) return -1;
    size_t len;
    int is_null;
    const char *entry = ser_get_str(&r, &len, &is_null);
    if (!entry || len >= sizeof obj->entry_symbol) return -1;
    memcpy(obj->entry_symbol, entry, len);
    obj->entry_symbol[len] = 0;
    const char *range = ser_get_str(&r, &len, &is_null);
    if (!range || len >= sizeof obj->range_symbol) return -1;
    memcpy(obj->range_symbol, range, len);
    obj->range_symbol[len] = 0;
    obj->bytes = (unsigned char *)ser_get_blob(&r, &obj->size);
    size_t ir_len;
    ser_get_blob(&r, &ir_len); /* the post-pass IR, kept for tools */
    return obj->bytes && !r.failed && ser_left(&r) == 0 ? 0 : -1;
}

static void payload_store(disk_cache *dc, const ser_writer *key, const ir_func *f,
                          const cpu_object *obj) {
    ser_writer ir = {0}, w = {0};
    ir_serialize(f, &ir);
    ser_put_u32(&w, PAYLOAD_VERSION);
    ser_put_str(&w, obj->entry_symbol);
    ser_put_str(&w, obj->range_symbol);
    ser_put_blob(&w, obj->bytes, obj->size);
    ser_put_blob(&w, ir.data, ir.len);
    if (!w.failed && !ir.failed) disk_cache_store(dc, key->data, key->len, f->name, w.data, w.len);
    ser_writer_free(&ir);
    ser_writer_free(&w);
}

/* Links code found in the disk cache; 0 on success. */
static int load_from_disk(disk_cache *dc, const ser_writer *key, variant *v) {
    void *payload;
    size_t len;
    if (disk_cache_load(dc, key->data, key->len, &payload, &len) != 0) return -1;
    cpu_object obj = {0};
    tack_error err;
    int ok = payload_read(payload, len, &obj) == 0 &&
             cpu_jit_load(&obj, &v->code, &v->entry, &v->range, &err) == TACK_OK;
    if (!ok) disk_cache_note_bad(dc);
    free(payload);
    return ok ? 0 : -1;
}

/* Publishes v in the slot, unless a thread that missed at the same time
 * published first: then v is dropped (both are correct) so the cache holds
 * one variant per key. */
static variant *publish(tack_kernel *k, kernel_slot *s, variant *v) {
    pthread_mutex_lock(&k->lock);
    variant *existing = find_in(s, &v->key); /* the lock keeps the list still */
    if (!existing && atomic_load(&s->dev)) {
        v->next = atomic_load(&s->head);
        atomic_store_explicit(&s->head, v, memory_order_release);
        atomic_fetch_add(&s->count, 1);
    }
    pthread_mutex_unlock(&k->lock);
    /* Unpublished only if the device is being freed during this launch
     * (which tack.h forbids); the code then stays until the process ends. */
    if (!existing) return v;
    cpu_jit_unload(v->code);
    free(v);
    return existing;
}

tack_status variant_compile(tack_kernel *k, const ir_template *t, const call_info *info,
                            kernel_slot *s, variant **out, tack_error *err) {
    *out = NULL;
    variant *v = calloc(1, sizeof *v);
    ser_writer key = {0};
    full_key(k, t, info, &key);
    if (!v || key.failed) {
        free(v);
        ser_writer_free(&key);
        return runtime_error(err, TACK_ERR_NOMEM, "out of memory compiling kernel '%s'", t->ir->name);
    }
    v->key = info->key;
    char symbol_base[65];
    sha256_hex(key.data, key.len, symbol_base);
    symbol_base[32] = 0;
    disk_cache *dc = disk_cache_get();
    if (dc && load_from_disk(dc, &key, v) == 0) {
        ser_writer_free(&key);
        *out = publish(k, s, v);
        return TACK_OK;
    }

    struct timespec start;
    clock_gettime(CLOCK_MONOTONIC, &start);
    ir_func *f = ir_clone(t->ir);
    if (!f) {
        free(v);
        ser_writer_free(&key);
        return runtime_error(err, TACK_ERR_NOMEM, "out of memory compiling kernel '%s'", t->ir->name);
    }
    f->default_float = TACK_F32;
    for (int i = 0; i < f->nparams; i++) {
        f->params[i].type = info->key.type[i];
        if (info->key.is_array[i] && info->key.type[i] == TACK_F64) f->default_float = TACK_F64;
    }
    f->disjoint = info->key.disjoint;
    cpu_object obj = {0};
    void *hook_state = host_release();
    tack_status st = run_passes(f, info, err);
    if (!st) st = cpu_codegen(f, symbol_base, &obj, err);
    uint64_t llvm_ns = obj.llvm_ns;
    if (!st) st = cpu_jit_load(&obj, &v->code, &v->entry, &v->range, err);
    if (!st && dc) payload_store(dc, &key, f, &obj);
    cpu_object_free(&obj);
    ir_func_free(f);
    ser_writer_free(&key);
    host_reacquire(hook_state);
    if (st) {
        free(v);
        return st;
    }
    atomic_fetch_add(&tack_counters.compiles, 1);
    struct timespec end;
    clock_gettime(CLOCK_MONOTONIC, &end);
    atomic_fetch_add(&tack_counters.compile_ns, (uint64_t)((end.tv_sec - start.tv_sec) * 1000000000ll +
                                                           (end.tv_nsec - start.tv_nsec)));
    atomic_fetch_add(&tack_counters.llvm_ns, llvm_ns);
    *out = publish(k, s, v);
    return TACK_OK;
}

void variant_free_all(kernel_slot *s) {
    variant *v = atomic_exchange(&s->head, NULL);
    atomic_store(&s->count, 0);
    while (v) {
        variant *next = v->next;
        cpu_jit_unload(v->code);
        free(v);
        v = next;
    }
}

int tack_kernel_num_variants(const tack_kernel *k, const tack_device *dev) {
    retire_pending();
    kernel_slot *s = find_slot(k, dev);
    return s ? atomic_load(&s->count) : 0;
}

tack_status tack_kernel_variant_key(const tack_kernel *k, const tack_device *dev, int index,
                                    tack_variant_key *out) {
    retire_pending();
    kernel_slot *s = find_slot(k, dev);
    int n = s ? atomic_load(&s->count) : 0;
    if (index < 0 || index >= n) return TACK_ERR_VALUE;
    /* The list is newest first; index 0 is the first compiled. */
    int pos = n - 1 - index;
    readers_enter(k);
    variant *v = atomic_load(&s->head);
    while (v && pos-- > 0) v = v->next;
    if (v) variant_key_export(&v->key, out);
    readers_exit(k);
    return v ? TACK_OK : TACK_ERR_VALUE;
}
