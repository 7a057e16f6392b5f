/* tier.c - the tiered JIT: a variant first runs tier-0 code (codegen.c,
 * built on the calling thread in milliseconds), while its optimized build
 * (tier 1, LLVM's O3) is made here on one background thread and swapped
 * in when linked.
 *
 * The swap is one atomic store per function pointer (release; launches
 * load with acquire), made only after the optimized code is linked, so a
 * launch sees either tier's complete code.  A launch reads the entry once
 * and runs all its chunks with it; tier-0 code stays linked until the
 * variant's code is released (which the runtime does only when no launch
 * can be running it), so a launch that began on tier 0 finishes on it.
 *
 * A job is counted by reference: the queue or the thread building it, the
 * code it swaps into (until released), and disk-cache snapshots (the
 * writer thread stores the optimized object only, waiting for it).  A
 * thread that needs a queued job's result (a snapshot being written,
 * tack_jit_wait) builds it itself rather than wait behind the queue, so
 * nothing depends on the background thread still being there: at exit it
 * finishes the build in hand and stops (atexit joins it, before LLVM's own
 * static destructors, which were registered earlier); fork() waits for
 * the builds in progress and the child starts a thread of its own when
 * it queues one. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu.h"

#ifdef __linux__
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

enum { JOB_QUEUED, JOB_RUNNING, JOB_DONE, JOB_FAILED };

struct cpu_tier_job {
    int refs;       /* under lock */
    int state;      /* under lock */
    ir_func *f;     /* post-pass IR (a copy), until built */
    char base[65];
    cpu_tiered *target; /* NULL once its code is released (under lock) */
    cpu_object obj;     /* the optimized object, once JOB_DONE (then fixed) */
    struct cpu_tier_job *next;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wake = PTHREAD_COND_INITIALIZER; /* a job was queued, or stop */
static pthread_cond_t done = PTHREAD_COND_INITIALIZER; /* a job was finished */
static cpu_tier_job *head, *tail;
static int running;  /* jobs being built, by any thread */
static int started;  /* the background thread exists (in this process) */
static int stopping; /* exit: the thread takes no more jobs */
static pthread_t thread;
static atomic_ullong tier_ups; /* optimized code swapped in */

cpu_jit_mode cpu_jit_mode_now(void) {
    const char *m = getenv("TACK_JIT");
    if (!m || !*m) return CPU_JIT_TIERED;
    if (!strcmp(m, "o2") || !strcmp(m, "O2")) return CPU_JIT_O2;
    if (!strcmp(m, "o0") || !strcmp(m, "O0")) return CPU_JIT_O0;
    return CPU_JIT_TIERED;
}

unsigned long long cpu_tier_ups(void) { return atomic_load(&tier_ups); }

static void unref_locked(cpu_tier_job *j) {
    if (--j->refs) return;
    ir_func_free(j->f);
    cpu_object_free(&j->obj);
    free(j);
}

static void unqueue_locked(cpu_tier_job *j) {
    cpu_tier_job *prev = NULL;
    for (cpu_tier_job *q = head; q; prev = q, q = q->next)
        if (q == j) {
            if (prev) prev->next = j->next;
            else head = j->next;
            if (tail == j) tail = prev;
            j->next = NULL;
            return;
        }
}

/* Builds a job taken off the queue (its reference now the builder's):
 * called with the lock held, returns with it held. */
static void build_locked(cpu_tier_job *j) {
    j->state = JOB_RUNNING;
    running++;
    pthread_mutex_unlock(&lock);
    tack_error err = {0};
    cpu_object obj = {0};
    tack_status st = cpu_codegen(j->f, j->base, 1, &obj, &err);
    ir_func_free(j->f);
    j->f = NULL;
    pthread_mutex_lock(&lock);
    if (st) {
        j->state = JOB_FAILED; /* the variant keeps running tier 0 */
    } else {
        j->obj = obj;
        j->state = JOB_DONE;
        cpu_tiered *t = j->target;
        cpu_entry_fn entry;
        cpu_range_fn range;
        /* Under the lock: the code cannot be released meanwhile. */
        if (t && !t->code[1] && cpu_jit_load(&j->obj, &t->code[1], &entry, &range, &err) == TACK_OK) {
            atomic_store_explicit(&t->range, range, memory_order_release);
            atomic_store_explicit(&t->entry, entry, memory_order_release);
            atomic_store_explicit(&t->tier, 1, memory_order_release);
            atomic_fetch_add(&tier_ups, 1);
        }
    }
    running--;
    unref_locked(j);
    pthread_cond_broadcast(&done);
}

static void *worker(void *arg) {
    (void)arg;
#ifdef __linux__
    /* Below the threads that launch: the optimized build is made with what
     * they leave (a per-thread nice value on Linux), not at the expense of
     * the first call it is made for. */
    if (setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), 19)) { /* only slower */
    }
#endif
    pthread_mutex_lock(&lock);
    for (;;) {
        while (!head && !stopping) pthread_cond_wait(&wake, &lock);
        if (stopping) break;
        cpu_tier_job *j = head;
        unqueue_locked(j);
        build_locked(j);
    }
    pthread_mutex_unlock(&lock);
    return NULL;
}

/* At exit: the build in hand is finished, nothing more is started. */
static void stop_at_exit(void) {
    pthread_mutex_lock(&lock);
    int joinable = started;
    stopping = 1;
    pthread_cond_broadcast(&wake);
    pthread_mutex_unlock(&lock);
    if (joinable) pthread_join(thread, NULL);
}

static void before_fork(void) {
    pthread_mutex_lock(&lock);
    while (running) pthread_cond_wait(&done, &lock);
}

static void after_fork_parent(void) { pthread_mutex_unlock(&lock); }

/* The child has no background thread; its queue (the parent's jobs, in
 * the child's copy of memory) is built by the thread it starts when it
 * queues a job, or by whoever waits. */
static void after_fork_child(void) {
    pthread_mutex_init(&lock, NULL);
    pthread_cond_init(&wake, NULL);
    pthread_cond_init(&done, NULL);
    started = 0;
    running = 0;
}

static void setup_once(void) {
    pthread_atfork(before_fork, after_fork_parent, after_fork_child);
    atexit(stop_at_exit);
}

cpu_tier_job *cpu_tier_queue(const ir_func *f, const char *symbol_base, cpu_tiered *target) {
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, setup_once);
    cpu_tier_job *j = calloc(1, sizeof *j);
    if (!j) return NULL;
    if (!(j->f = ir_clone_owned(f))) { /* f and its template may go first */
        free(j);
        return NULL;
    }
    snprintf(j->base, sizeof j->base, "%s", symbol_base ? symbol_base : "");
    j->target = target;
    j->refs = 2; /* the queue's and the code's */
    j->state = JOB_QUEUED;
    pthread_mutex_lock(&lock);
    if (!started && !stopping) started = pthread_create(&thread, NULL, worker, NULL) == 0;
    if (tail) tail->next = j;
    else head = j;
    tail = j;
    if (started && !stopping) pthread_cond_signal(&wake);
    else build_locked((unqueue_locked(j), j)); /* no thread to be had: build it now */
    pthread_mutex_unlock(&lock);
    return j;
}

/* The job's IR is its own (ir_clone_owned), so a build under way goes on
 * after the code is released, and swaps into nothing. */
void cpu_tier_drop(cpu_tier_job *j) {
    if (!j) return;
    pthread_mutex_lock(&lock);
    j->target = NULL;
    /* Queued with no one else waiting for it (a disk-cache snapshot):
     * never built, and the queue's reference goes too. */
    if (j->state == JOB_QUEUED && j->refs == 2) {
        unqueue_locked(j);
        j->state = JOB_FAILED;
        j->refs--; /* the code's reference is still held: not the last */
        pthread_cond_broadcast(&done);
    }
    unref_locked(j);
    pthread_mutex_unlock(&lock);
}

void cpu_tier_ref(cpu_tier_job *j) {
    pthread_mutex_lock(&lock);
    j->refs++;
    pthread_mutex_unlock(&lock);
}

void cpu_tier_unref(cpu_tier_job *j) {
    pthread_mutex_lock(&lock);
    unref_locked(j);
    pthread_mutex_unlock(&lock);
}

const cpu_object *cpu_tier_object(cpu_tier_job *j, int wait) {
    pthread_mutex_lock(&lock);
    while (wait && (j->state == JOB_QUEUED || j->state == JOB_RUNNING)) {
        if (j->state == JOB_QUEUED) {
            unqueue_locked(j);
            build_locked(j); /* drops the queue's reference: ours holds it */
        } else {
            pthread_cond_wait(&done, &lock);
        }
    }
    const cpu_object *o = j->state == JOB_DONE ? &j->obj : NULL;
    pthread_mutex_unlock(&lock);
    return o;
}

void cpu_tier_wait_all(void) {
    pthread_mutex_lock(&lock);
    while (head || running) {
        if (head) {
            cpu_tier_job *j = head;
            unqueue_locked(j);
            build_locked(j);
        } else {
            pthread_cond_wait(&done, &lock);
        }
    }
    pthread_mutex_unlock(&lock);
}
