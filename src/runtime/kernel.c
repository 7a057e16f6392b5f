/* kernel.c - kernel objects: parsed when created, lowered to an IR template
 * per template key on first use (once, under the kernel's lowering lock),
 * and registered so that freeing a device or retiring a template class can
 * drop what was kept for it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lower/lower.h"
#include "passes/passes.h"
#include "runtime.h"

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static tack_kernel *registry;

static char *dup_or_null(const char *s) {
    if (!s) return NULL;
    size_t n = strlen(s) + 1;
    char *p = malloc(n);
    if (p) memcpy(p, s, n);
    return p;
}

static tack_kernel *kernel_create(const char *source, const char *filename, int first_line,
                                  tack_resolver resolver, void *resolver_ctx, int stage,
                                  tack_error *err);

tack_kernel *tack_kernel_create(const char *source, const char *filename, int first_line,
                                tack_resolver resolver, void *resolver_ctx, tack_error *err) {
    ERR_OR_SCRATCH(err);
    tack_kernel *k = kernel_create(source, filename, first_line, resolver, resolver_ctx, 0, err);
    if (!k) return NULL;
    /* Several top-level loops: a kernel per further loop, lowered for it. */
    int n = lower_count_loops(k->def);
    k->nstages = 1;
    for (int s = 1; s < n && s < IR_MAX_STAGES; s++) {
        tack_kernel *st = kernel_create(source, filename, first_line, resolver, resolver_ctx, s, err);
        if (!st) {
            tack_kernel_free(k);
            return NULL;
        }
        st->owner = k;
        st->nstages = 1;
        k->stages[k->nstages++] = st;
    }
    return k;
}

static tack_kernel *kernel_create(const char *source, const char *filename, int first_line,
                                  tack_resolver resolver, void *resolver_ctx, int stage,
                                  tack_error *err) {
    ERR_OR_SCRATCH(err);
    memset(err, 0, sizeof *err);
    if (!source) {
        runtime_error(err, TACK_ERR_VALUE, "tack_kernel_create: source is NULL");
        return NULL;
    }
    tack_kernel *k = calloc(1, sizeof *k);
    if (!k) {
        runtime_error(err, TACK_ERR_NOMEM, "out of memory creating a kernel");
        return NULL;
    }
    k->source = dup_or_null(source);
    k->filename = dup_or_null(filename ? filename : "<string>");
    k->first_line = first_line > 0 ? first_line : 1;
    k->resolver = resolver;
    k->resolver_ctx = resolver_ctx;
    k->debug = -1;
    k->disk_cache = 1;
    k->stage = stage;
    arena_init(&k->ast);
    pthread_mutex_init(&k->lock, NULL);
    pthread_mutex_init(&k->lower_lock, NULL);
    if (!k->source || !k->filename) {
        runtime_error(err, TACK_ERR_NOMEM, "out of memory creating a kernel");
        tack_kernel_free(k);
        return NULL;
    }
    k->src = (src_info){k->source, k->filename, k->first_line, NULL, 0};
    if (parse_function(&k->src, &k->ast, &k->def, err) != TACK_OK) {
        tack_kernel_free(k);
        return NULL;
    }
    if (lower_wrap_thread_ids(k->def, &k->ast, &k->thread_dims) ||
        lower_wrap_top_statements(k->def, &k->ast)) {
        runtime_error(err, TACK_ERR_NOMEM, "out of memory creating a kernel");
        tack_kernel_free(k);
        return NULL;
    }
    k->src.kernel_name = k->def->name;
    matrix_args_scan(k);
    k->row_params = lower_row_params(k->def);
    pthread_mutex_lock(&registry_lock);
    k->next = registry;
    if (registry) registry->prev = k;
    registry = k;
    pthread_mutex_unlock(&registry_lock);
    return k;
}

void template_free(ir_template *t) {
    if (!t) return;
    ir_func_free(t->ir);
    free(t);
}

static void free_dead(ir_template *dead_t, variant *dead_v) {
    while (dead_t) {
        ir_template *next = dead_t->dead_next;
        template_free(dead_t);
        dead_t = next;
    }
    while (dead_v) {
        variant *next = dead_v->dead_next;
        variant_free(dead_v);
        dead_v = next;
    }
}

void tack_kernel_free(tack_kernel *k) {
    if (!k) return;
    tack_kernel_free(k->adj);
    for (int s = 1; s < k->nstages; s++) tack_kernel_free(k->stages[s]);
    fast_invalidate(); /* its entries, and a later kernel at its address */
    if (k->def) { /* registered only once parsed */
        pthread_mutex_lock(&registry_lock);
        /* Its launches stay in the process-wide count. */
        atomic_fetch_add(&tack_counters.launches, atomic_load(&k->n_launches));
        if (k->prev) k->prev->next = k->next;
        else if (registry == k) registry = k->next;
        if (k->next) k->next->prev = k->prev;
        pthread_mutex_unlock(&registry_lock);
    }
    kernel_slot *s = atomic_load(&k->slots);
    while (s) {
        kernel_slot *next = s->next;
        variant_free_all(s);
        free(s);
        s = next;
    }
    for (ir_template *t = atomic_load(&k->tmpl), *next; t; t = next) {
        next = t->next;
        template_free(t);
    }
    free_dead(k->dead_tmpl, k->dead_variants);
    arena_free(&k->ast);
    pthread_mutex_destroy(&k->lock);
    pthread_mutex_destroy(&k->lower_lock);
    free(k->source);
    free(k->filename);
    free(k);
}

void kernel_registry_drop_device(tack_device *dev) {
    fast_invalidate();
    pthread_mutex_lock(&registry_lock);
    for (tack_kernel *k = registry; k; k = k->next) {
        pthread_mutex_lock(&k->lock);
        for (kernel_slot *s = atomic_load(&k->slots); s; s = s->next)
            if (atomic_load(&s->dev) == dev) {
                atomic_store(&s->dev, NULL);
                variant_free_all(s);
            }
        pthread_mutex_unlock(&k->lock);
    }
    pthread_mutex_unlock(&registry_lock);
}

/* Takes the graveyard first and only then looks for readers: a launch
 * that found an entry before it was unlinked was counted before that, so
 * it is seen here; one counted later can no longer find it.  With readers
 * left, the graveyard goes back and the last of them sweeps it.  Never
 * waits, so a retirement inside a launch (or under the host's lock) cannot
 * deadlock against another launch. */
void graveyard_sweep(tack_kernel *k) {
    pthread_mutex_lock(&k->lock);
    ir_template *dead_t = k->dead_tmpl;
    variant *dead_v = k->dead_variants;
    k->dead_tmpl = NULL;
    k->dead_variants = NULL;
    atomic_store(&k->has_dead, 0);
    pthread_mutex_unlock(&k->lock);
    if (!dead_t && !dead_v) return;
    if (atomic_load(&k->readers) == 0) {
        free_dead(dead_t, dead_v);
        return;
    }
    pthread_mutex_lock(&k->lock);
    for (ir_template **end = &dead_t; ; end = &(*end)->dead_next)
        if (!*end) {
            *end = k->dead_tmpl;
            break;
        }
    for (variant **end = &dead_v; ; end = &(*end)->dead_next)
        if (!*end) {
            *end = k->dead_variants;
            break;
        }
    k->dead_tmpl = dead_t;
    k->dead_variants = dead_v;
    atomic_store(&k->has_dead, 1);
    pthread_mutex_unlock(&k->lock);
    /* The last reader may have left between the look and the put-back. */
    if (atomic_load(&k->readers) == 0) graveyard_sweep(k);
}

/* Unlinks what names a retired class under the kernel's lock into the
 * graveyard, freed once no launch or walker can hold it. */
static void retire_in_kernel(tack_kernel *k, const uint64_t *tokens, int n) {
    pthread_mutex_lock(&k->lock);
    ir_template *dead_t = k->dead_tmpl;
    variant *dead_v = k->dead_variants;
    for (ir_template *_Atomic *link = &k->tmpl; atomic_load(link);) {
        ir_template *t = atomic_load(link);
        int named = 0;
        for (int i = 0; i < n; i++) named |= tmpl_sig_names(&t->key.tmpl, tokens[i]);
        if (!named) {
            link = &t->next;
            continue;
        }
        /* t->next stays: a walker standing on t goes on to live entries. */
        atomic_store(link, t->next);
        t->dead_next = dead_t;
        dead_t = t;
    }
    for (kernel_slot *s = atomic_load(&k->slots); s; s = s->next)
        for (variant *_Atomic *link = &s->head; atomic_load(link);) {
            variant *v = atomic_load(link);
            int named = 0;
            for (int i = 0; i < n; i++) named |= tmpl_sig_names(&v->key.tmpl, tokens[i]);
            if (!named) {
                link = &v->next;
                continue;
            }
            atomic_store(link, v->next);
            atomic_fetch_sub(&s->count, 1);
            v->dead_next = dead_v;
            dead_v = v;
        }
    k->dead_tmpl = dead_t;
    k->dead_variants = dead_v;
    atomic_store(&k->has_dead, dead_t || dead_v);
    pthread_mutex_unlock(&k->lock);
    graveyard_sweep(k);
}

void kernel_registry_retire(const uint64_t *tokens, int n) {
    fast_invalidate();
    pthread_mutex_lock(&registry_lock);
    for (tack_kernel *k = registry; k; k = k->next) retire_in_kernel(k, tokens, n);
    pthread_mutex_unlock(&registry_lock);
}

static int body_has_loops(const ir_block *b) {
    for (int i = 0; i < b->n; i++) {
        const ir_stmt *s = b->stmts[i];
        if (s->kind == IR_FOR || s->kind == IR_WHILE) return 1;
        if (body_has_loops(&s->body) || body_has_loops(&s->orelse)) return 1;
    }
    return 0;
}

static int template_key_equal(const template_key *a, const template_key *b) {
    return a->debug == b->debug && !memcmp(a->vec, b->vec, sizeof a->vec) &&
           !memcmp(a->row_ndim, b->row_ndim, sizeof a->row_ndim) &&
           tmpl_sig_equal(&a->tmpl, &b->tmpl);
}

/* Lock-free: readers is counted so that retirement frees nothing that a
 * thread is walking past. */
static ir_template *find_template(tack_kernel *k, const template_key *key) {
    readers_enter(k);
    ir_template *t = atomic_load(&k->tmpl);
    while (t && !template_key_equal(&t->key, key)) t = t->next;
    readers_exit(k);
    return t;
}

tack_status kernel_template(tack_kernel *k, const template_key *key, const tack_arg *args,
                            ir_template **out, tack_error *err) {
    ir_template *t = find_template(k, key);
    if (t) {
        *out = t;
        return TACK_OK;
    }
    /* Lowering calls the host's resolver, which takes the host's lock (the
     * GIL): so never wait for lower_lock while holding it. */
    void *host = host_release();
    pthread_mutex_lock(&k->lower_lock);
    /* Another thread may have lowered it meanwhile. */
    t = find_template(k, key);
    if (!t) {
        /* From the disk cache when every name there still means the same. */
        ir_func *f = k->disk_cache ? ir_cache_load(k, key, args, k->def->nparams) : NULL;
        int lowered = !f;
        tack_status st = TACK_OK;
        if (!f) {
            lower_input in = {&k->src, k->def, key->vec, args, k->resolver, k->resolver_ctx,
                              k->stage, k->adjoint != 0, key->row_ndim};
            st = lower_kernel(&in, &f, err);
            if (st == TACK_OK && pass_launch_vars(f, err) != TACK_OK) {
                ir_func_free(f);
                st = err->status;
            }
            if (st == TACK_OK && key->debug && pass_bounds_checks(f, err) != TACK_OK) {
                ir_func_free(f);
                st = err->status;
            }
            if (st == TACK_OK && !key->debug && pass_access_checks(f, err) != TACK_OK) {
                ir_func_free(f);
                st = err->status;
            }
            if (st == TACK_OK && k->disk_cache) ir_cache_store(k, key, f);
        }
        if (st == TACK_OK && k->adjoint) pass_adjoint_params(f, k->def->nparams / 2);
        if (st == TACK_OK) {
            t = calloc(1, sizeof *t);
            if (!t) {
                ir_func_free(f);
                runtime_error(err, TACK_ERR_NOMEM, "out of memory lowering kernel '%s'",
                              k->def->name);
            } else {
                t->key = *key;
                t->ir = f;
                /* At most one per (parameter, dimension): MAX_SHAPE_DEPS. */
                t->ndeps = shape_deps(f, t->deps, MAX_SHAPE_DEPS);
                t->has_inner_loops = body_has_loops(&f->body);
                t->nchecks =
                    launch_bounds(f, t->checks, MAX_LAUNCH_CHECKS, t->loops, &t->nloops);
                pthread_mutex_lock(&k->lock);
                t->next = atomic_load(&k->tmpl);
                if (lowered) {
                    atomic_fetch_add(&tack_counters.lowerings, 1);
                    atomic_fetch_add(&k->n_lowerings, 1);
                }
                atomic_store_explicit(&k->tmpl, t, memory_order_release);
                pthread_mutex_unlock(&k->lock);
            }
        }
    }
    pthread_mutex_unlock(&k->lower_lock);
    host_reacquire(host);
    *out = t;
    return t ? TACK_OK : err->status;
}

/* The adjoint kernel: the same source, its def given each parameter's
 * gradient after the parameters ("x.grad", a name no kernel can spell). */
tack_kernel *tack_kernel_adjoint(tack_kernel *k, tack_error *err) {
    ERR_OR_SCRATCH(err);
    memset(err, 0, sizeof *err);
    pthread_mutex_lock(&k->lower_lock);
    tack_kernel *a = k->adj;
    pthread_mutex_unlock(&k->lower_lock);
    if (a) return a;
    if (k->nstages > 1) {
        runtime_error(err, TACK_ERR_COMPILE,
                      "kernel '%s': backward of a kernel with several top-level loops is not "
                      "supported yet (write one kernel per loop and record them on a tack.Tape)",
                      k->def->name);
        return NULL;
    }
    a = kernel_create(k->source, k->filename, k->first_line, k->resolver, k->resolver_ctx, 0, err);
    if (!a) return NULL;
    a->nstages = 1;
    a->adjoint = 1;
    a->disk_cache = k->disk_cache;
    a->debug = k->debug;
    func_def *d = a->def;
    int n = d->nparams;
    /* A kernel that returns (its reductions) takes the returned numbers'
     * gradients too, in one more array: "return.grad". */
    int ret = 0;
    for (int i = 0; i < d->nbody; i++)
        if (d->body[i]->kind == ST_RETURN && d->body[i]->value) ret = 1;
    if (2 * n + ret > TACK_MAX_PARAMS) {
        runtime_error(err, TACK_ERR_VALUE, "kernel '%s': too many parameters to differentiate",
                      d->name);
        tack_kernel_free(a);
        return NULL;
    }
    const char **names = arena_alloc(&a->ast, (2 * n + 1) * sizeof *names);
    int *lines = arena_alloc(&a->ast, (2 * n + 1) * sizeof *lines);
    int *cols = arena_alloc(&a->ast, (2 * n + 1) * sizeof *cols);
    if (!names || !lines || !cols) {
        runtime_error(err, TACK_ERR_NOMEM, "out of memory differentiating '%s'", d->name);
        tack_kernel_free(a);
        return NULL;
    }
    for (int i = 0; i < n; i++) {
        char buf[256];
        snprintf(buf, sizeof buf, "%s.grad", d->params[i]);
        names[i] = d->params[i];
        names[n + i] = arena_strdup(&a->ast, buf);
        lines[i] = lines[n + i] = d->param_lines[i];
        cols[i] = cols[n + i] = d->param_cols[i];
    }
    names[2 * n] = "return.grad";
    lines[2 * n] = d->line;
    cols[2 * n] = d->col;
    d->params = names;
    d->param_lines = lines;
    d->param_cols = cols;
    d->nparams = 2 * n + ret;
    /* A gradient is read as its parameter is (matrices or scalars). */
    for (int i = 0; i < n; i++) {
        a->mat_index[n + i] = a->mat_index[i];
        a->any_index[n + i] = a->any_index[i];
        a->max_shape[n + i] = a->max_shape[i];
    }
    pthread_mutex_lock(&k->lower_lock);
    if (k->adj) {
        tack_kernel_free(a);
        a = k->adj;
    } else {
        k->adj = a;
    }
    pthread_mutex_unlock(&k->lower_lock);
    return a;
}

const char *tack_kernel_name(const tack_kernel *k) { return k->def->name; }

void tack_kernel_set_debug(tack_kernel *k, int debug) {
    if (k) k->debug = debug < 0 ? -1 : debug != 0;
}
void tack_kernel_set_disk_cache(tack_kernel *k, int on) {
    if (!k) return;
    k->disk_cache = on != 0;
    for (int s = 1; s < k->nstages; s++) k->stages[s]->disk_cache = on != 0;
}
int tack_kernel_debug(const tack_kernel *k) { return k ? kernel_debug(k) : tack_get_debug(); }

void kernel_registry_walk(void (*fn)(const tack_kernel *k, void *ctx), void *ctx) {
    pthread_mutex_lock(&registry_lock);
    for (tack_kernel *k = registry; k; k = k->next) fn(k, ctx);
    pthread_mutex_unlock(&registry_lock);
}
int tack_kernel_num_params(const tack_kernel *k) { return k->def->nparams; }

int tack_kernel_thread_dims(const tack_kernel *k) { return k->thread_dims; }
const char *tack_kernel_param_name(const tack_kernel *k, int i) {
    return i >= 0 && i < k->def->nparams ? k->def->params[i] : NULL;
}
int tack_kernel_ir_template_key(const tack_kernel *k, int index, char *buf, size_t size) {
    retire_pending();
    int n = tack_kernel_num_ir_templates(k);
    if (index < 0 || index >= n || !buf || !size) return -1;
    readers_enter(k);
    ir_template *t = atomic_load(&k->tmpl);
    for (int pos = n - 1 - index; t && pos > 0; pos--) t = t->next; /* newest first */
    if (!t) {
        readers_exit(k);
        return -1;
    }
    size_t len = 0;
    buf[0] = 0;
#define PART(...) \
    if (len < size) len += (size_t)snprintf(buf + len, size - len, __VA_ARGS__)
    if (t->key.debug) PART("debug");
    for (int i = 0; i < TACK_MAX_PARAMS; i++)
        if (t->key.vec[i]) PART("%svec=%d:%d", len ? ";" : "", i, t->key.vec[i]);
    for (int i = 0; i < TACK_MAX_PARAMS; i++)
        if (t->key.row_ndim[i]) PART("%sndim=%d:%d", len ? ";" : "", i, t->key.row_ndim[i]);
    char text[8][512];
    int ntext;
    tmpl_sig_text(&t->key.tmpl, text, 8, &ntext);
    for (int i = 0; i < ntext; i++) PART("%s%s", len ? ";" : "", text[i]);
#undef PART
    readers_exit(k);
    return 0;
}

int tack_kernel_num_ir_templates(const tack_kernel *k) {
    retire_pending();
    int n = 0;
    readers_enter(k);
    for (ir_template *t = atomic_load(&k->tmpl); t; t = t->next) n++;
    readers_exit(k);
    return n;
}
