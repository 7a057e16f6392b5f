/* variant.c - the variant cache: for each kernel, one slot per device,
 * holding that device's compiled variants.  Lookups take no lock (the list
 * is published with release stores and only grows); a miss compiles
 * without a lock, so two threads missing together may both compile, and
 * both results are correct. */
#include <stdlib.h>
#include <string.h>

#include "runtime.h"

kernel_slot *variant_slot(tack_kernel *k, tack_device *dev) {
    for (kernel_slot *s = atomic_load_explicit(&k->slots, memory_order_acquire); s; s = s->next)
        if (atomic_load_explicit(&s->dev, memory_order_relaxed) == dev) return s;
    pthread_mutex_lock(&k->lock);
    kernel_slot *s;
    for (s = atomic_load(&k->slots); s; s = s->next)
        if (atomic_load(&s->dev) == dev) break;
    if (!s && (s = calloc(1, sizeof *s))) {
        atomic_store(&s->dev, dev);
        s->next = atomic_load(&k->slots);
        atomic_store_explicit(&k->slots, s, memory_order_release);
    }
    pthread_mutex_unlock(&k->lock);
    return s;
}

variant *variant_find(tack_kernel *k, kernel_slot *s, const variant_key *key) {
    /* Counted as a reader: retirement frees nothing under a walker. */
    atomic_fetch_add(&k->readers, 1);
    variant *v = atomic_load_explicit(&s->head, memory_order_acquire);
    while (v && !variant_key_equal(&v->key, key)) v = v->next;
    atomic_fetch_sub(&k->readers, 1);
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

tack_status variant_compile(tack_kernel *k, const ir_template *t, const call_info *info,
                            kernel_slot *s, variant **out, tack_error *err) {
    *out = NULL;
    ir_func *f = ir_clone(t->ir);
    if (!f) return runtime_error(err, TACK_ERR_NOMEM, "out of memory compiling kernel '%s'", f->name);
    f->default_float = TACK_F32;
    for (int i = 0; i < f->nparams; i++) {
        f->params[i].type = info->key.type[i];
        if (info->key.is_array[i] && info->key.type[i] == TACK_F64) f->default_float = TACK_F64;
    }
    f->disjoint = info->key.disjoint;
    variant *v = NULL;
    cpu_object obj = {0};
    void *hook_state = compile_begin ? compile_begin() : NULL;
    tack_status st = run_passes(f, info, err);
    if (!st) st = cpu_codegen(f, &obj, err);
    if (!st && !(v = calloc(1, sizeof *v)))
        st = runtime_error(err, TACK_ERR_NOMEM, "out of memory compiling kernel '%s'", f->name);
    if (!st) st = cpu_jit_load(&obj, &v->code, &v->entry, &v->range, err);
    cpu_object_free(&obj);
    ir_func_free(f);
    if (compile_end) compile_end(hook_state);
    if (st) {
        free(v);
        return st;
    }
    v->key = info->key;
    atomic_fetch_add(&tack_counters.compiles, 1);
    /* Two threads that missed together both compiled: the first to publish
     * wins and the other's code is dropped (both are correct), so the cache
     * holds one variant per key. */
    pthread_mutex_lock(&k->lock);
    variant *existing = variant_find(k, s, &v->key);
    if (!existing && atomic_load(&s->dev)) {
        v->next = atomic_load(&s->head);
        atomic_store_explicit(&s->head, v, memory_order_release);
        atomic_fetch_add(&s->count, 1);
    }
    pthread_mutex_unlock(&k->lock);
    if (existing) {
        cpu_jit_unload(v->code);
        free(v);
        v = existing;
    }
    *out = v;
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

static kernel_slot *find_slot(const tack_kernel *k, const tack_device *dev) {
    for (kernel_slot *s = atomic_load(&k->slots); s; s = s->next)
        if (atomic_load(&s->dev) == dev) return s;
    return NULL;
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
    variant *v = atomic_load(&s->head);
    while (v && pos-- > 0) v = v->next;
    if (!v) return TACK_ERR_VALUE;
    variant_key_export(&v->key, out);
    return TACK_OK;
}
