/* pool.c - a persistent pthreads pool for the parallel loop.  Workers spin
 * briefly after a launch (a following launch then starts without a wake-up)
 * and then sleep on a condition variable.  The calling thread takes chunks
 * too.  A worker joins a launch before it touches the launch's context;
 * once the caller's own chunks run out it closes the launch to late
 * joiners and waits only for the workers inside.  (Waiting for every
 * worker instead cost milliseconds per launch whenever the machine was
 * oversubscribed: a descheduled worker held up a launch whose chunks were
 * all done.)
 *
 * The pool is resized in place (tack.set_num_threads): the resize takes the
 * launch lock, so it waits for a running launch to finish and no launch
 * starts meanwhile; it then stops and joins the workers and starts the new
 * number.  The pool object itself stays, so a launch that read the device's
 * pool pointer before the resize still finds a valid pool. */
#include "cpu.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

#define SPIN_ROUNDS 20000
#define LAUNCH_CLOSED (1ull << 31)

struct cpu_pool {
    /* Including the caller.  Atomic: a launch reads it before taking the
     * launch lock (to run short loops inline), while a resize may write it;
     * launches re-read it under the lock. */
    atomic_int nthreads;
    pthread_t *threads;
    pthread_mutex_t m;
    pthread_cond_t cv;
    pthread_mutex_t launch; /* one launch at a time */
    atomic_uint gen;
    unsigned spawn_gen; /* gen when the workers were started (under `launch`) */
    atomic_int stop;
    /* Admission to the current launch: its generation in the high 32 bits,
     * LAUNCH_CLOSED, and the number of workers inside in the low bits. */
    atomic_ullong admission;
    /* The current launch. */
    void (*fn)(void *, int64_t, int64_t);
    void *ctx;
    int64_t total, chunk;
    int max_workers; /* workers admitted at once (the caller runs too) */
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

/* 1 when this worker entered launch `g` (which then waits for it), 0 when
 * that launch is closed or already replaced by a newer one. */
static int join_launch(cpu_pool *p, unsigned g) {
    unsigned long long s = atomic_load(&p->admission);
    do {
        if ((unsigned)(s >> 32) != g || (s & LAUNCH_CLOSED) ||
            (int)(s & (LAUNCH_CLOSED - 1)) >= p->max_workers)
            return 0;
    } while (!atomic_compare_exchange_weak(&p->admission, &s, s + 1));
    return 1;
}

static void *worker(void *arg) {
    cpu_pool *p = arg;
    /* Launches before this worker existed are not its to join: it starts
     * from the generation its resize saw (gen cannot move until the
     * resize releases the launch lock, so this read is not racy). */
    unsigned seen = p->spawn_gen;
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
        if (join_launch(p, g)) {
            take_chunks(p);
            atomic_fetch_sub(&p->admission, 1);
        }
    }
}

/* Starts workers 1..n-1; nthreads becomes the number of threads that run
 * (fewer when the system refuses a thread).  Called with no workers
 * running and, after creation, under the launch lock. */
static int start_workers(cpu_pool *p, int n) {
    pthread_t *threads = realloc(p->threads, (size_t)n * sizeof *threads);
    if (!threads) return -1;
    p->threads = threads;
    atomic_store(&p->stop, 0);
    p->spawn_gen = atomic_load(&p->gen);
    int started = 1;
    for (int i = 1; i < n; i++, started++)
        if (pthread_create(&p->threads[i], NULL, worker, p)) break; /* run with those we got */
    atomic_store(&p->nthreads, started);
    return 0;
}

static void stop_workers(cpu_pool *p) {
    pthread_mutex_lock(&p->m);
    atomic_store(&p->stop, 1);
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->m);
    int n = atomic_load(&p->nthreads);
    for (int i = 1; i < n; i++) pthread_join(p->threads[i], NULL);
    atomic_store(&p->nthreads, 1);
}

static int threads_wanted(int num_threads) {
    if (num_threads <= 0) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        num_threads = n > 0 ? (int)n : 1;
    }
    return num_threads > CPU_POOL_MAX_THREADS ? CPU_POOL_MAX_THREADS : num_threads;
}

cpu_pool *cpu_pool_create(int num_threads) {
    cpu_pool *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    pthread_mutex_init(&p->m, NULL);
    pthread_cond_init(&p->cv, NULL);
    pthread_mutex_init(&p->launch, NULL);
    if (start_workers(p, threads_wanted(num_threads))) {
        cpu_pool_free(p);
        return NULL;
    }
    return p;
}

int cpu_pool_resize(cpu_pool *p, int num_threads) {
    int n = threads_wanted(num_threads);
    /* The launch lock: a running launch finishes first, none starts until
     * the new workers are in place. */
    pthread_mutex_lock(&p->launch);
    int rc = 0;
    if (n != atomic_load(&p->nthreads)) {
        stop_workers(p);
        rc = start_workers(p, n);
    }
    pthread_mutex_unlock(&p->launch);
    return rc;
}

void cpu_pool_free(cpu_pool *p) {
    if (!p) return;
    stop_workers(p);
    pthread_mutex_destroy(&p->m);
    pthread_cond_destroy(&p->cv);
    pthread_mutex_destroy(&p->launch);
    free(p->threads);
    free(p);
}

int cpu_pool_size(const cpu_pool *p) { return atomic_load(&((cpu_pool *)p)->nthreads); }

void cpu_pool_run(cpu_pool *p, int64_t n, int64_t grain, int chunks_per_thread, int max_threads,
                  void (*fn)(void *ctx, int64_t begin, int64_t end), void *ctx) {
    if (n <= 0) return;
    if (atomic_load_explicit(&p->nthreads, memory_order_relaxed) == 1 || n < grain) {
        fn(ctx, 0, n);
        return;
    }
    pthread_mutex_lock(&p->launch);
    int nthreads = atomic_load(&p->nthreads); /* a resize may have run meanwhile */
    if (nthreads == 1) {
        pthread_mutex_unlock(&p->launch);
        fn(ctx, 0, n);
        return;
    }
    p->fn = fn;
    p->ctx = ctx;
    p->total = n;
    p->max_workers = max_threads > 0 && max_threads < nthreads ? max_threads - 1 : nthreads;
    int64_t chunks = (int64_t)nthreads * (chunks_per_thread > 0 ? chunks_per_thread : 1);
    p->chunk = n / chunks + (n % chunks != 0); /* rounded up without n + chunks - 1 */
    atomic_store(&p->next, 0);
    /* The fields above are published by the admission word a worker must
     * join through before reading them. */
    unsigned g = atomic_load(&p->gen) + 1;
    atomic_store(&p->admission, (unsigned long long)g << 32);
    pthread_mutex_lock(&p->m);
    atomic_store(&p->gen, g);
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->m);
    take_chunks(p);
    unsigned long long s = atomic_fetch_or(&p->admission, LAUNCH_CLOSED);
    while (s & (LAUNCH_CLOSED - 1)) {
        relax();
        s = atomic_load(&p->admission);
    }
    pthread_mutex_unlock(&p->launch);
}
