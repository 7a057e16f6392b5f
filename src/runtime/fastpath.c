/* fastpath.c - the dispatch fast path (see runtime.h).
 *
 * The signature holds everything of a call that the variant key depends
 * on: each argument's kind; an array's dtype, vector width, texture flag,
 * number of dimensions, shape and strides; a scalar's type as its value
 * selects it.  Equal signatures of one kernel on one device therefore mean
 * an equal key, but for the disjoint bit, which is decided per call and
 * selects one of the entry's two variants.  Template arguments (described
 * by their classes) and debug mode take the slow path.
 *
 * The table is per thread, so that the warm path takes no lock and writes
 * nothing shared: 256 entries, direct mapped by the signature's hash (a
 * full table refills as it goes).  Entries carry the global epoch, which
 * anything that frees variants advances: a stale entry never matches. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "runtime.h"

#define FAST_ENTRIES 256

typedef struct fast_entry {
    uint64_t epoch;
    const tack_kernel *k;
    const tack_device *dev;
    fast_sig sig;
    ir_template *t;
    variant *v[2]; /* by disjointness */
} fast_entry;

static atomic_ullong epoch = 1;
static pthread_key_t table_key;
static pthread_once_t table_once = PTHREAD_ONCE_INIT;
static _Thread_local fast_entry *table;

static void make_key(void) { pthread_key_create(&table_key, free); }

static fast_entry *thread_table(void) {
    if (!table) {
        pthread_once(&table_once, make_key);
        table = calloc(FAST_ENTRIES, sizeof *table);
        if (table) pthread_setspecific(table_key, table); /* freed at thread exit */
    }
    return table;
}

void fast_invalidate(void) { atomic_fetch_add(&epoch, 1); }

/* The signature is a list of 64-bit words, hashed as it is written (one
 * multiply per word): a word per argument's kind and layout, then an
 * array's shape and strides. */
/* runtime.h */
int scalar_value_class(const tack_arg *a) {
    if (a->kind == TACK_ARG_INT) return a->i >= INT32_MIN && a->i <= INT32_MAX;
    if (a->kind == TACK_ARG_UINT) return a->u <= INT32_MAX ? 0 : a->u <= (uint64_t)INT64_MAX ? 1 : 2;
    return 0;
}

#define FAST_MIX(h, w) ((h) = ((h) ^ (w)) * 0xff51afd7ed558ccdull, (h) ^= (h) >> 29)

int fast_signature(const tack_arg *args, int nargs, int debug, fast_sig *sig) {
    if (debug || nargs < 0 || nargs >= FAST_SIG_WORDS) return -1;
    uint64_t *w = sig->words, h = 0x9e3779b97f4a7c15ull;
    int n = 0;
    w[n++] = (uint64_t)nargs;
    for (int i = 0; i < nargs; i++) {
        const tack_arg *a = &args[i];
        uint64_t head = (uint64_t)a->kind;
        switch (a->kind) {
        case TACK_ARG_ARRAY:
            if (a->ndim < 0 || a->ndim > TACK_MAX_NDIM || n + 1 + 2 * a->ndim > FAST_SIG_WORDS)
                return -1;
            head |= (uint64_t)(uint8_t)a->dtype << 8 | (uint64_t)(uint16_t)a->vec_width << 16 |
                    (uint64_t)(a->is_texture != 0) << 32 | (uint64_t)a->ndim << 40 |
                    (uint64_t)(a->writable != 0) << 48;
            w[n++] = head;
            for (int d = 0; d < a->ndim; d++) {
                w[n++] = (uint64_t)a->shape[d];
                w[n++] = (uint64_t)a->strides[d];
            }
            continue;
        case TACK_ARG_INT: /* the type the value selects */
        case TACK_ARG_UINT:
            head |= (uint64_t)scalar_value_class(a) << 8;
            break;
        case TACK_ARG_FLOAT:
        case TACK_ARG_BOOL:
            break;
        default:
            return -1; /* templates and anything unknown */
        }
        if (n == FAST_SIG_WORDS) return -1;
        w[n++] = head;
    }
    for (int i = 0; i < n; i++) FAST_MIX(h, w[i]);
    sig->len = n;
    sig->hash = h;
    return 0;
}

static fast_entry *slot_for(const tack_kernel *k, const tack_device *dev, const fast_sig *sig) {
    fast_entry *t = thread_table();
    if (!t) return NULL;
    uint64_t h = sig->hash ^ (uint64_t)(uintptr_t)k * 0x9e3779b97f4a7c15ull ^ (uint64_t)(uintptr_t)dev;
    return &t[(h >> 7) % FAST_ENTRIES];
}

/* Sequentially consistent: a launch counted as a reader that then reads an
 * epoch older than a retirement's is seen in flight by the graveyard sweep. */
uint64_t fast_epoch(void) { return atomic_load(&epoch); }

static fast_entry *find(const tack_kernel *k, const tack_device *dev, const fast_sig *sig) {
    fast_entry *e = slot_for(k, dev, sig);
    if (!e || e->epoch != fast_epoch() || e->k != k || e->dev != dev || e->sig.hash != sig->hash ||
        e->sig.len != sig->len || memcmp(e->sig.words, sig->words, (size_t)sig->len * 8))
        return NULL;
    return e;
}

ir_template *fast_lookup(const tack_kernel *k, const tack_device *dev, const fast_sig *sig,
                         variant *v[2]) {
    fast_entry *e = find(k, dev, sig);
    v[0] = e ? e->v[0] : NULL;
    v[1] = e ? e->v[1] : NULL;
    return e ? e->t : NULL;
}

void fast_remember(const tack_kernel *k, const tack_device *dev, const fast_sig *sig, int disjoint,
                   ir_template *t, variant *v, uint64_t at_epoch) {
    fast_entry *e = slot_for(k, dev, sig);
    if (!e || at_epoch != fast_epoch()) return;
    if (!find(k, dev, sig)) {
        e->epoch = at_epoch;
        e->k = k;
        e->dev = dev;
        e->sig.len = sig->len;
        e->sig.hash = sig->hash;
        memcpy(e->sig.words, sig->words, (size_t)sig->len * 8);
        e->v[0] = e->v[1] = NULL;
    }
    e->t = t;
    e->v[disjoint != 0] = v;
}
