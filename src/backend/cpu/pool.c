/* pool.c - a persistent pthreads pool for the parallel loop.  Workers spin
 * briefly after a launch (a following launch then starts without a wake-up)
 * and then sleep on a condition variable.  The calling thread takes chunks
 * too, and waits for every worker to check in before returning, so no
 * worker can touch the launch's context afterwards. */
#include "cpu.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

#define SPIN_ROUNDS 20000

struct cpu_pool {
    int nthreads; /* including the caller */
    pthread_t *threads;
    pthread_mutex_t m;
    pthread_cond_t cv;
    pthread_mutex_t launch; /* one launch at a time */
    atomic_uint gen;
    atomic_int stop;
    atomic_int pending; /* workers that have not finished this launch */
    /* The current launch. */
    void (*fn)(void *, int64_t, int64_t);
    void *ctx;
    int64_t total, chunk;
    /* Unsigned: each thread's last take overshoots total by up to a chunk,
     * which for launches near INT64_MAX would wrap a signed counter. */
    atomic_ullong next;
};

static inline void relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

static void take_chunks(cpu_pool *p) {
    for (;;) {
        uint64_t b = atomic_fetch_add(&p->next, (uint64_t)p->chunk);
        if (b >= (uint64_t)p->total) return;
        int64_t e = p->total - (int64_t)b > p->chunk ? (int64_t)b + p->chunk : p->total;
        p->fn(p->ctx, (int64_t)b, e);
    }
}

static void *worker(void *arg) {
    cpu_pool *p = arg;
    unsigned seen = 0;
    for (;;) {
        unsigned g = atomic_load(&p->gen);
        for (int i = 0; i < SPIN_ROUNDS && g == seen && !atomic_load(&p->stop); i++) {
            relax();
            g = atomic_load(&p->gen);
        }
        if (g == seen) {
            pthread_mutex_lock(&p->m);
            while ((g = atomic_load(&p->gen)) == seen && !atomic_load(&p->stop))
                pthread_cond_wait(&p->cv, &p->m);
            pthread_mutex_unlock(&p->m);
        }
        if (atomic_load(&p->stop)) return NULL;
        seen = g;
        take_chunks(p);
        atomic_fetch_sub(&p->pending, 1);
    }
}

cpu_pool *cpu_pool_create(int num_threads) {
    if (num_threads <= 0) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        num_threads = n > 0 ? (int)n : 1;
    }
    if (num_threads > 256) num_threads = 256;
    cpu_pool *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    p->nthreads = num_threads;
    pthread_mutex_init(&p->m, NULL);
    pthread_cond_init(&p->cv, NULL);
    pthread_mutex_init(&p->launch, NULL);
    p->threads = calloc(num_threads, sizeof *p->threads);
    if (!p->threads) {
        free(p);
        return NULL;
    }
    for (int i = 1; i < num_threads; i++)
        if (pthread_create(&p->threads[i], NULL, worker, p)) {
            p->nthreads = i; /* run with the workers we got */
            break;
        }
    return p;
}

void cpu_pool_free(cpu_pool *p) {
    if (!p) return;
    pthread_mutex_lock(&p->m);
    atomic_store(&p->stop, 1);
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->m);
    for (int i = 1; i < p->nthreads; i++) pthread_join(p->threads[i], NULL);
    pthread_mutex_destroy(&p->m);
    pthread_cond_destroy(&p->cv);
    pthread_mutex_destroy(&p->launch);
    free(p->threads);
    free(p);
}

int cpu_pool_size(const cpu_pool *p) { return p->nthreads; }

void cpu_pool_run(cpu_pool *p, int64_t n, int64_t grain, int chunks_per_thread,
                  void (*fn)(void *ctx, int64_t begin, int64_t end), void *ctx) {
    if (n <= 0) return;
    if (p->nthreads == 1 || n < grain) {
        fn(ctx, 0, n);
        return;
    }
    pthread_mutex_lock(&p->launch);
    p->fn = fn;
    p->ctx = ctx;
    p->total = n;
    int64_t chunks = (int64_t)p->nthreads * (chunks_per_thread > 0 ? chunks_per_thread : 1);
    p->chunk = n / chunks + (n % chunks != 0); /* rounded up without n + chunks - 1 */
    atomic_store(&p->next, 0);
    atomic_store(&p->pending, p->nthreads - 1);
    pthread_mutex_lock(&p->m);
    atomic_fetch_add(&p->gen, 1);
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->m);
    take_chunks(p);
    while (atomic_load(&p->pending) > 0) relax();
    pthread_mutex_unlock(&p->launch);
}
