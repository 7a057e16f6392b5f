/* writer.c - disk entries whose artifact is slow to make, stored on one
 * writer thread so that the call that compiled the variant does not wait
 * for them (backend.h's artifact_snapshot: an OpenCL driver compiles a
 * program again to hand out its binary).
 *
 * The thread waits for a quiet moment: no compile in flight and none
 * ended in the last QUIET_NS.  A driver's compiler is often one lock for
 * the process (PoCL's LLVM), so making a binary while the next variant
 * compiles would hold that compile up by as long; a burst of first calls
 * therefore runs at the speed of a process that stores nothing, and its
 * entries are written when it pauses, or at exit.
 *
 * The entry is the one variant.c would store at once, with the same key
 * and payload; until it is written, another lookup of the key misses and
 * compiles (correct, only slower).  The queue is drained at exit, so a
 * process that ends normally leaves every entry it made.  fork() waits
 * for the job being written (a driver's lock held by the thread across
 * the fork would deadlock the child's next driver call), and the child
 * drops the parent's queue (the parent writes those entries). */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "runtime/disk_cache.h"
#include "runtime/runtime.h"

typedef struct job {
    struct job *next;
    disk_cache *dc; /* the process's cache: never freed */
    const backend_ops *ops;
    void *snapshot;
    void *key, *ir;
    size_t keylen, irlen;
    char *name;
} job;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wake = PTHREAD_COND_INITIALIZER; /* a job was queued */
static pthread_cond_t idle = PTHREAD_COND_INITIALIZER; /* a job was written */
static job *head, *tail;
static int busy;    /* the thread is writing a job it took off the queue */
static int started; /* the thread exists (in this process) */
static int flushing; /* writer_flush waits: no quiet moment awaited */

#define QUIET_NS 200000000ull /* 0.2 s without a compile */
#define POLL_NS 50000000ull   /* how often a waiting thread looks again */
static atomic_int compiling;             /* compiles in flight */
static _Atomic uint64_t last_compile_ns; /* when the last one ended */

void writer_compile_begin(void) { atomic_fetch_add(&compiling, 1); }

void writer_compile_end(void) {
    atomic_store(&last_compile_ns, runtime_clock_ns());
    atomic_fetch_sub(&compiling, 1);
}

static int quiet(void) {
    return atomic_load(&compiling) == 0 &&
           runtime_clock_ns() - atomic_load(&last_compile_ns) >= QUIET_NS;
}

static void job_free(job *j) {
    if (j->snapshot) j->ops->artifact_free(j->snapshot);
    free(j->key);
    free(j->ir);
    free(j->name);
    free(j);
}

static void job_run(job *j) {
    ser_writer art = {0}, w = {0};
    if (j->ops->artifact_write(j->snapshot, &art) == 0 && !art.failed) {
        variant_payload(&w, art.data, art.len, j->ir, j->irlen);
        if (!w.failed) disk_cache_store(j->dc, j->key, j->keylen, j->name, w.data, w.len);
    }
    ser_writer_free(&art);
    ser_writer_free(&w);
}

static void *worker(void *arg) {
    (void)arg;
    pthread_mutex_lock(&lock);
    for (;;) {
        while (!head) pthread_cond_wait(&wake, &lock);
        /* A quiet moment (or a flush): looked for again before each job. */
        while (head && !flushing && !quiet()) {
            struct timespec until;
            clock_gettime(CLOCK_REALTIME, &until);
            uint64_t ns = (uint64_t)until.tv_nsec + POLL_NS;
            until.tv_sec += (time_t)(ns / 1000000000u);
            until.tv_nsec = (long)(ns % 1000000000u);
            pthread_cond_timedwait(&wake, &lock, &until);
        }
        if (!head) continue;
        job *j = head;
        head = j->next;
        if (!head) tail = NULL;
        busy = 1;
        pthread_mutex_unlock(&lock);
        job_run(j);
        job_free(j);
        pthread_mutex_lock(&lock);
        busy = 0;
        pthread_cond_broadcast(&idle);
    }
    return NULL;
}

/* Before fork: no job in the driver's hands, and none started until the
 * fork is done (the lock is held across it). */
static void before_fork(void) {
    pthread_mutex_lock(&lock);
    while (busy) pthread_cond_wait(&idle, &lock);
}

static void after_fork_parent(void) { pthread_mutex_unlock(&lock); }

/* The child starts with no queue and no thread; the parent's jobs are the
 * parent's to write (their snapshots are leaked here, never released
 * twice). */
static void after_fork_child(void) {
    pthread_mutex_init(&lock, NULL);
    pthread_cond_init(&wake, NULL);
    pthread_cond_init(&idle, NULL);
    head = tail = NULL;
    busy = started = flushing = 0;
    atomic_store(&compiling, 0); /* only the forking thread lives on */
}

static void at_exit(void) { writer_flush(); }

void tack_disk_cache_flush(void) { writer_flush(); }

static void setup_once(void) {
    pthread_atfork(before_fork, after_fork_parent, after_fork_child);
    atexit(at_exit);
}

void writer_flush(void) {
    pthread_mutex_lock(&lock);
    flushing++;
    pthread_cond_broadcast(&wake);
    while (started && (head || busy)) pthread_cond_wait(&idle, &lock);
    flushing--;
    pthread_mutex_unlock(&lock);
}

void writer_store(disk_cache *dc, const backend_ops *ops, void *snapshot, const void *key,
                  size_t keylen, const char *name, const void *ir, size_t irlen) {
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, setup_once);
    job *j = calloc(1, sizeof *j);
    if (j) {
        j->dc = dc;
        j->ops = ops;
        j->snapshot = snapshot;
        j->key = malloc(keylen ? keylen : 1);
        j->ir = malloc(irlen ? irlen : 1);
        j->name = strdup(name ? name : "");
        j->keylen = keylen;
        j->irlen = irlen;
    }
    if (!j || !j->key || !j->ir || !j->name) {
        /* Out of memory: the entry is only an optimization. */
        if (j) job_free(j);
        else ops->artifact_free(snapshot);
        return;
    }
    memcpy(j->key, key, keylen);
    memcpy(j->ir, ir, irlen);
    pthread_mutex_lock(&lock);
    if (!started) {
        pthread_t t;
        pthread_attr_t a;
        pthread_attr_init(&a);
        pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
        started = pthread_create(&t, &a, worker, NULL) == 0;
        pthread_attr_destroy(&a);
    }
    if (!started) {
        /* No thread to be had: write it now, as without a writer. */
        pthread_mutex_unlock(&lock);
        job_run(j);
        job_free(j);
        return;
    }
    if (tail) tail->next = j;
    else head = j;
    tail = j;
    pthread_cond_signal(&wake);
    pthread_mutex_unlock(&lock);
}
