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
    if (pass_resolve_dims(f, (const int64_t(*)[TACK_MAX_NDIM])info->dims, info->key.strided, err))
        return err->status;
    if (ir_verify(f, "resolve_dims", 0, err)) return err->status;
    if (pass_infer_types(f, err)) return err->status;
    if (ir_verify(f, "infer_types", 1, err)) return err->status;
    if (f->adjoint_n && (pass_adjoint_jumps(f, err) || pass_adjoint(f, f->adjoint_n, err))) return err->status;
    pass_strip_stop_gradient(f);
    return f->adjoint_n ? ir_verify(f, "adjoint", 1, err) : TACK_OK;
}

tack_status variant_post_pass_ir(const ir_template *t, const call_info *info, ir_func **out,
                                 tack_error *err) {
    *out = NULL;
    ir_func *f = ir_clone(t->ir);
    if (!f)
        return runtime_error(err, TACK_ERR_NOMEM, "out of memory compiling kernel '%s'", t->ir->name);
    f->default_float = TACK_F32;
    for (int i = 0; i < f->nparams; i++) {
        f->params[i].type = info->key.type[i];
        /* A reduction's own array does not count: its type follows from
         * the others (launch.c).  Nor do an adjoint's gradients (an f64
         * return.grad or scalar's gradient would make an f32 kernel's
         * adjoint recompute its forward in f64, not as the forward ran). */
        if (info->key.is_array[i] && info->key.type[i] == TACK_F64 && ir_reduction_of_param(f, i) < 0 &&
            !(f->adjoint_n && i >= f->adjoint_n))
            f->default_float = TACK_F64;
    }
    f->disjoint = info->key.disjoint;
    /* An adjoint given a float array for a float scalar's gradient (the
     * opt-in of kernel.backward(..., adj={"a": ga})) accumulates the
     * scalar's gradient into its element 0 (passes/adjoint.c). */
    for (int i = 0; i < f->adjoint_n && f->adjoint_n + i < f->nparams; i++) {
        ir_param *g = &f->params[f->adjoint_n + i];
        if (f->params[i].role == ROLE_SCALAR && ir_type_is_float(f->params[i].type) &&
            info->key.is_array[f->adjoint_n + i] && ir_type_is_float(g->type) &&
            g->role == ROLE_UNUSED) {
            g->role = ROLE_ARRAY;
            g->index_ndim = 1;
            g->written = 1;
            g->max_dim_read = -1;
        }
    }
    tack_status st = run_passes(f, info, err);
    if (st) {
        ir_func_free(f);
        return st;
    }
    *out = f;
    return TACK_OK;
}

static tack_compile_begin_fn compile_begin;
static tack_compile_end_fn compile_end;

void tack_set_compile_hooks(tack_compile_begin_fn begin, tack_compile_end_fn end) {
    compile_begin = begin;
    compile_end = end;
}

static atomic_ullong release_threshold_ns;

void tack_set_release_threshold(uint64_t ns) { atomic_store(&release_threshold_ns, ns); }
uint64_t host_release_threshold(void) {
    return atomic_load_explicit(&release_threshold_ns, memory_order_relaxed);
}

void *host_release(void) { return compile_begin ? compile_begin() : NULL; }
void host_reacquire(void *state) {
    if (compile_end) compile_end(state);
}

/* The variant's full identity: the kernel's source, every outside name
 * lowering resolved (with a digest of what it meant), the variant key and
 * the backend's target.  Its digest names the code's symbols, and it is
 * the disk cache's key. */
static void full_key(const tack_kernel *k, const ir_template *t, const call_info *info,
                     const tack_device *dev, ser_writer *w) {
    const variant_key *key = &info->key;
    ser_put_str(w, "tack-variant-6"); /* 6: width codes of matrices to 16x16 (complex is 0x21) */
    ser_put_u32(w, (uint32_t)k->stage);
    ser_put_str(w, k->filename);
    ser_put_u32(w, (uint32_t)k->first_line);
    ser_put_str(w, k->source);
    if (k->adjoint) ser_put_str(w, "adjoint");
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
        ser_put_u8(w, key->row_ndim[i]);
        ser_put_u8(w, key->is_texture[i]);
        ser_put_u8(w, key->is_template[i]);
        ser_put_u8(w, key->strided[i]);
        for (int d = 0; d < 3; d++) ser_put_i64(w, key->texture_shape[i][d]);
    }
    tmpl_sig_portable(&key->tmpl, w);
    ser_put_u32(w, (uint32_t)key->nshape);
    for (int i = 0; i < key->nshape; i++) ser_put_i64(w, key->shape[i]);
    ser_put_u8(w, (uint8_t)key->disjoint);
    ser_put_str(w, dev->ops->name);
    const char *target = dev->ops->cache_target(dev->b);
    ser_put_str(w, target ? target : "");
}

int variant_symbol_base(const tack_kernel *k, const ir_template *t, const call_info *info,
                        const tack_device *dev, char out[65]) {
    ser_writer key = {0};
    full_key(k, t, info, dev, &key);
    int failed = key.failed;
    if (!failed) sha256_hex(key.data, key.len, out);
    out[32] = 0;
    ser_writer_free(&key);
    return failed ? -1 : 0;
}

#define PAYLOAD_VERSION 2

void variant_payload(ser_writer *w, const void *art, size_t artlen, const void *ir, size_t irlen) {
    ser_put_u32(w, PAYLOAD_VERSION);
    ser_put_blob(w, art, artlen);
    ser_put_blob(w, ir, irlen);
}

/* A disk entry: the backend's artifact, then the post-pass IR it was built
 * from (which GPU backends evaluate launch ranges on).  A backend whose
 * artifact is slow to make has it made on the writer thread (writer.c). */
static void payload_store(disk_cache *dc, const ser_writer *key, const ir_func *f,
                          const tack_device *dev, const backend_code *code) {
    if (!disk_cache_writes(dc)) return;
    ser_writer ir = {0}, art = {0}, w = {0};
    ir_serialize(f, &ir);
    if (ir.failed) {
        /* nothing to store */
    } else if (dev->ops->artifact_snapshot &&
               (!dev->ops->artifact_later || dev->ops->artifact_later(dev->b, code))) {
        void *snap = dev->ops->artifact_snapshot(dev->b, code);
        if (snap) writer_store(dc, dev->ops, snap, key->data, key->len, f->name, ir.data, ir.len);
    } else if (dev->ops->artifact(dev->b, code, &art) == 0) {
        variant_payload(&w, art.data, art.len, ir.data, ir.len);
        if (!w.failed && !art.failed)
            disk_cache_store(dc, key->data, key->len, f->name, w.data, w.len);
    }
    ser_writer_free(&ir);
    ser_writer_free(&art);
    ser_writer_free(&w);
}

/* Loads code found in the disk cache; 0 on success. */
static int load_from_disk(disk_cache *dc, const ser_writer *key, tack_device *dev, variant *v,
                          ir_func **post_pass) {
    void *payload;
    size_t len;
    if (disk_cache_load(dc, key->data, key->len, &payload, &len) != 0) return -1;
    ser_reader r = ser_reader_init(payload, len);
    size_t art_len = 0, ir_len = 0;
    const void *art = NULL, *ir = NULL;
    if (ser_get_u32(&r) == PAYLOAD_VERSION) {
        art = ser_get_blob(&r, &art_len);
        ir = ser_get_blob(&r, &ir_len);
    }
    tack_error err;
    ir_func *f = NULL;
    int ok = art && ir && !r.failed && !ser_left(&r);
    if (ok) {
        ser_reader ir_reader = ser_reader_init(ir, ir_len);
        ok = ir_deserialize(&ir_reader, 1, &f, &err) == TACK_OK &&
             dev->ops->load(dev->b, f, art, art_len, &v->code, &err) == TACK_OK;
    }
    if (!ok) {
        disk_cache_note_bad(dc);
        ir_func_free(f);
        f = NULL;
    }
    free(payload);
    *post_pass = f;
    return ok ? 0 : -1;
}

void variant_free(variant *v) {
    if (v->code) v->ops->release(v->b, v->code);
    if (v->errors_mem) v->ops->mem_free(v->b, v->errors_mem);
    free(v->errors_held);
    pthread_mutex_destroy(&v->dispatch_lock);
    free(v);
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
    variant_free(v);
    return existing;
}

static void note_access(variant *v, const ir_func *f, int param, int is_atomic) {
    if (is_atomic) {
        for (int i = 0; i < v->natomic; i++)
            if (v->atomic_targets[i].param == param) return;
        if (v->natomic < MAX_ARGS)
            v->atomic_targets[v->natomic++] =
                (atomic_target){param, (int)tack_dtype_size((tack_dtype)f->params[param].type)};
    }
    for (int i = 0; i < v->nwritten; i++)
        if (v->written_arrays[i] == param) return;
    if (v->nwritten < MAX_ARGS) v->written_arrays[v->nwritten++] = (uint8_t)param;
}

static void scan_expr(variant *v, const ir_func *f, const ir_expr *e);
static void scan_block(variant *v, const ir_func *f, const ir_block *b) {
    for (int i = 0; i < b->n; i++) {
        const ir_stmt *s = b->stmts[i];
        if (s->kind == IR_STORE) note_access(v, f, s->index, 0);
        if (s->kind == IR_PRINT) v->prints = 1;
        scan_expr(v, f, s->value);
        scan_expr(v, f, s->start);
        scan_expr(v, f, s->stop);
        scan_expr(v, f, s->step);
        for (int k = 0; k < s->nindices; k++) scan_expr(v, f, s->indices[k]);
        scan_block(v, f, &s->body);
        scan_block(v, f, &s->orelse);
    }
}
static void scan_expr(variant *v, const ir_func *f, const ir_expr *e) {
    if (!e) return;
    if (e->kind == IR_ATOMIC) note_access(v, f, e->index, 1);
    scan_expr(v, f, e->a);
    scan_expr(v, f, e->b);
    scan_expr(v, f, e->cond);
    for (int i = 0; i < e->nargs; i++) scan_expr(v, f, e->args[i]);
    if (e->body) scan_block(v, f, e->body);
}

/* What each call is checked against: the arrays the code stores to or
 * updates atomically (with the alignment atomics need), and textures. */
static void analyze(variant *v, const ir_func *f) {
    v->nwritten = v->natomic = 0;
    scan_block(v, f, &f->body);
    for (int p = 0; p < f->nparams; p++) v->has_textures |= f->params[p].sampled;
    v->requires_full_workgroups = f->collective;
    v->shared_bytes = 0;
    for (int i = 0; i < f->nscratch; i++)
        if (f->scratch[i].shared)
            v->shared_bytes += ir_scratch_size(&f->scratch[i]) *
                               (int64_t)tack_dtype_size((tack_dtype)f->scratch[i].type);
}

/* What compiling one job holds between its steps. */
typedef struct job_state {
    tack_device *dev;
    variant *v; /* not published yet */
    ser_writer key;
    char symbol_base[65];
    ir_func *f;    /* post-pass IR */
    disk_cache *dc;
    int dup_of;    /* >= 0: the same variant as that earlier job */
    int todo;      /* still to build */
} job_state;

/* A job's first step, with the host's lock held: found already, the same
 * as an earlier job, loaded from the disk cache (published), or to build. */
static void job_prepare(compile_job *jobs, job_state *qs, int i) {
    compile_job *j = &jobs[i];
    job_state *q = &qs[i];
    const variant_key *vk = &j->info->key;
    q->dup_of = -1;
    for (int e = 0; e < i; e++)
        if (jobs[e].s == j->s && variant_key_equal(&jobs[e].info->key, vk)) {
            q->dup_of = e;
            return;
        }
    if ((j->v = variant_find(j->k, j->s, vk))) return;
    tack_device *dev = q->dev = atomic_load(&j->s->dev);
    variant *v = calloc(1, sizeof *v);
    if (dev) full_key(j->k, j->t, j->info, dev, &q->key);
    if (!v || !dev || q->key.failed) {
        free(v);
        ser_writer_free(&q->key);
        runtime_error(&j->err, TACK_ERR_NOMEM, "out of memory compiling kernel '%s'",
                      j->t->ir->name);
        return;
    }
    pthread_mutex_init(&v->dispatch_lock, NULL);
    v->key = *vk;
    v->ops = dev->ops;
    v->b = dev->b;
    sha256_hex(q->key.data, q->key.len, q->symbol_base);
    q->symbol_base[32] = 0;
    /* Only backends that name their target store code; the others keep the
     * IR level alone. */
    q->dc = j->k->disk_cache && dev->ops->cache_target(dev->b) ? disk_cache_get() : NULL;
    ir_func *loaded = NULL;
    if (q->dc && load_from_disk(q->dc, &q->key, dev, v, &loaded) == 0) {
        analyze(v, loaded);
        ir_func_free(loaded);
        ser_writer_free(&q->key);
        j->v = publish(j->k, j->s, v);
        return;
    }
    q->v = v;
    q->todo = 1;
}

/* Builds the jobs still to build: together where the device's backend
 * builds several at once (and there are several), else one by one. */
static void jobs_build(compile_job *jobs, job_state *qs, int n, uint64_t *compiler_ns) {
    int m = 0;
    for (int i = 0; i < n; i++) m += qs[i].todo;
    int first = 0;
    while (first < n && !qs[first].todo) first++;
    tack_device *dev = first < n ? qs[first].dev : NULL;
    const ir_func **fs = NULL;
    const char **bases = NULL;
    backend_code **outs = NULL;
    tack_error *errs = NULL;
    int *at = NULL;
    if (m >= 2 && dev->ops->build_many) {
        fs = malloc((size_t)m * sizeof *fs);
        bases = malloc((size_t)m * sizeof *bases);
        outs = malloc((size_t)m * sizeof *outs);
        errs = malloc((size_t)m * sizeof *errs);
        at = malloc((size_t)m * sizeof *at);
    }
    if (at && outs && errs && bases && fs) {
        int c = 0;
        for (int i = 0; i < n; i++)
            if (qs[i].todo && qs[i].dev == dev) {
                fs[c] = qs[i].f;
                bases[c] = qs[i].symbol_base;
                at[c++] = i;
            }
        dev->ops->build_many(dev->b, c, fs, bases, outs, compiler_ns, errs);
        for (int e = 0; e < c; e++) {
            job_state *q = &qs[at[e]];
            q->todo = 0;
            if ((q->v->code = outs[e])) continue;
            jobs[at[e]].err = errs[e];
            if (!jobs[at[e]].err.status) jobs[at[e]].err.status = TACK_ERR_INTERNAL;
        }
    }
    free(fs);
    free(bases);
    free(outs);
    free(errs);
    free(at);
    /* One by one: the others (another device's, or no batch build). */
    for (int i = 0; i < n; i++) {
        job_state *q = &qs[i];
        if (!q->todo) continue;
        q->todo = 0;
        q->dev->ops->build(q->dev->b, q->f, q->symbol_base, &q->v->code, compiler_ns,
                           &jobs[i].err);
    }
}

tack_status variant_compile_many(compile_job *jobs, int n) {
    for (int i = 0; i < n; i++) {
        jobs[i].v = NULL;
        jobs[i].err.status = TACK_OK;
    }
    job_state *qs = calloc(n > 0 ? (size_t)n : 1, sizeof *qs);
    if (!qs) {
        for (int i = 0; i < n; i++)
            runtime_error(&jobs[i].err, TACK_ERR_NOMEM, "out of memory compiling kernel '%s'",
                          jobs[i].t->ir->name);
        return n ? TACK_ERR_NOMEM : TACK_OK;
    }
    for (int i = 0; i < n; i++) job_prepare(jobs, qs, i);

    struct timespec start;
    clock_gettime(CLOCK_MONOTONIC, &start);
    uint64_t compiler_ns = 0;
    writer_compile_begin();
    void *hook_state = host_release();
    for (int i = 0; i < n; i++)
        if (qs[i].todo && variant_post_pass_ir(jobs[i].t, jobs[i].info, &qs[i].f, &jobs[i].err))
            qs[i].todo = 0;
    jobs_build(jobs, qs, n, &compiler_ns);
    for (int i = 0; i < n; i++) {
        job_state *q = &qs[i];
        if (q->v && !jobs[i].err.status) {
            analyze(q->v, q->f);
            if (q->dc) payload_store(q->dc, &q->key, q->f, q->dev, q->v->code);
        }
        ir_func_free(q->f);
        q->f = NULL;
        ser_writer_free(&q->key);
    }
    host_reacquire(hook_state);
    writer_compile_end();
    struct timespec end;
    clock_gettime(CLOCK_MONOTONIC, &end);
    uint64_t took = (uint64_t)((end.tv_sec - start.tv_sec) * 1000000000ll + (end.tv_nsec - start.tv_nsec));
    int ok = 0;
    for (int i = 0; i < n; i++) ok += qs[i].v && !jobs[i].err.status;
    if (ok) atomic_fetch_add(&tack_counters.llvm_ns, compiler_ns);
    /* A shared build's time is split evenly among its variants. */
    uint64_t share = ok ? took / (uint64_t)ok : 0;
    tack_status first = TACK_OK;
    for (int i = 0; i < n; i++) {
        compile_job *j = &jobs[i];
        job_state *q = &qs[i];
        if (q->dup_of >= 0) {
            j->v = jobs[q->dup_of].v;
            j->err = jobs[q->dup_of].err;
        } else if (q->v && j->err.status) {
            variant_free(q->v);
        } else if (q->v) {
            atomic_fetch_add(&tack_counters.compiles, 1);
            atomic_fetch_add(&j->k->n_compiles, 1);
            atomic_fetch_add(&tack_counters.compile_ns, share);
            atomic_fetch_add(&j->k->compile_ns, share);
            j->v = publish(j->k, j->s, q->v);
        }
        if (!first && j->err.status) first = j->err.status;
    }
    free(qs);
    return first;
}

tack_status variant_compile(tack_kernel *k, const ir_template *t, const call_info *info,
                            kernel_slot *s, variant **out, tack_error *err) {
    compile_job job = {.k = k, .t = t, .info = info, .s = s};
    tack_status st = variant_compile_many(&job, 1);
    *out = job.v;
    if (st) *err = job.err;
    return st;
}

void variant_free_all(kernel_slot *s) {
    variant *v = atomic_exchange(&s->head, NULL);
    atomic_store(&s->count, 0);
    while (v) {
        variant *next = v->next;
        variant_free(v);
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

int tack_kernel_variant_tier(const tack_kernel *k, const tack_device *dev, int index) {
    retire_pending();
    kernel_slot *s = find_slot(k, dev);
    int n = s ? atomic_load(&s->count) : 0;
    if (index < 0 || index >= n) return -1;
    int pos = n - 1 - index; /* newest first, as tack_kernel_variant_key */
    readers_enter(k);
    variant *v = atomic_load(&s->head);
    while (v && pos-- > 0) v = v->next;
    int tier = !v ? -1 : v->ops->code_tier ? v->ops->code_tier(v->b, v->code) : 1;
    readers_exit(k);
    return tier;
}

void tack_jit_wait(void) {
    for (int i = 0; backend_at(i); i++)
        if (backend_at(i)->finish_builds) backend_at(i)->finish_builds();
}
