/*
 * runtime.h - kernels, devices and the variant cache: what tack.h's objects
 * are, and the steps of a launch.
 *
 *   kernel.c   parsing at creation, the IR template (lowered once, lazily)
 *   device.c   devices: the shared one per spec, and devices with options
 *   key.c      checking a call's arguments and deriving its variant key
 *   variant.c  the per-device, per-kernel variant cache; compiling a miss
 *   writer.c   disk entries whose artifact is slow to make, on a thread
 *   launch.c   tack_kernel_launch: key -> variant -> range -> thread pool
 *   precompile.c  tack_precompile: several calls' variants compiled together
 *   launch_check.c  the launch's bounds checks, once per dispatch
 *   generate.c tack_kernel_generate: a call's variant as text for a target
 *   inspect.c  tack_kernel_inspect: a device's variant as text (IR, LLVM, asm)
 *   api.c      small public helpers (dtypes, argument builders, debug mode)
 *   stats.c    the counters (process-wide and per kernel), launch timing
 */
#ifndef TACK_RUNTIME_H
#define TACK_RUNTIME_H

#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

#include "backend/backend.h"
#include "front/ast.h"
#include "ir/ir.h"
#include "passes/passes.h"
#include "tack.h"

#define MAX_SHAPE_DEPS (TACK_MAX_PARAMS * TACK_MAX_NDIM)

#define MAX_TMPL_BYTES 1536 /* the encoded template structure of one call */
#define MAX_TMPL_TOKENS 16  /* classes named by one call's templates */
#define MAX_ARGS (TACK_MAX_PARAMS * 2) /* kernel arguments plus hidden ones */
#define MAX_LAUNCH_CHECKS LAUNCH_CHECKS_CAP /* per IR template: array dimensions x index forms */

/* The template-class part of a key (templates.c): each template argument's
 * class token, constants (type and bits), array attributes (dtype, full
 * shape, vector width) and scalar names, encoded as bytes; and the tokens,
 * so that retiring a class finds what names it. */
typedef struct tmpl_sig {
    int len;
    uint8_t bytes[MAX_TMPL_BYTES];
    int ntokens;
    uint64_t tokens[MAX_TMPL_TOKENS];
} tmpl_sig;

/* What selects an IR template: the facts that change what lowering emits.
 * Every one of them is in the variant key too. */
typedef struct template_key {
    int debug;                    /* bounds-checked: leads the key */
    uint8_t vec[TACK_MAX_PARAMS]; /* vector width per parameter, 0: none */
    /* ndim of the arrays of tack_kernel.row_params (a row c[i] they pass
     * to a device function is a row or an element by it), else 0 */
    uint8_t row_ndim[TACK_MAX_PARAMS];
    tmpl_sig tmpl;
} template_key;

/* The variant key, packed for comparison (see key.c). */
typedef struct variant_key {
    int nparams;
    uint8_t type[TACK_MAX_PARAMS];
    uint8_t is_array[TACK_MAX_PARAMS];
    uint8_t vec[TACK_MAX_PARAMS];
    uint8_t row_ndim[TACK_MAX_PARAMS]; /* the template key's */
    uint8_t is_texture[TACK_MAX_PARAMS];
    uint8_t is_template[TACK_MAX_PARAMS];
    int64_t texture_shape[TACK_MAX_PARAMS][3];
    tmpl_sig tmpl;
    int nshape;
    int64_t shape[MAX_SHAPE_DEPS];
    int disjoint;
    /* Arrays indexed through runtime strides (not C-contiguous): their
     * element strides are hidden scalar parameters (passes/resolve.c), so
     * only the layout's kind is keyed, never a stride's value. */
    uint8_t strided[TACK_MAX_PARAMS];
    /* Trailing parameters the public key leaves out: the errors array of
     * per-access checks (passes/bounds.c), which no call passes. */
    int hidden_tail;
} variant_key;

int variant_key_equal(const variant_key *a, const variant_key *b);
void variant_key_export(const variant_key *k, tack_variant_key *out);

/* A parameter a variant's code updates atomically, and the alignment each
 * call's storage must have for it. */
typedef struct atomic_target {
    int param, align;
} atomic_target;

typedef struct variant {
    variant_key key;
    const backend_ops *ops; /* the device's backend, which built `code` */
    backend *b;
    backend_code *code;
    /* Facts of the post-pass IR that each call is checked against. */
    int requires_full_workgroups; /* collective: launches are whole
                                     workgroups (IR_WORKGROUP lanes) */
    int64_t shared_bytes;         /* its tack.shared arrays, per workgroup */
    int has_textures;
    int prints;                   /* print(): stdout is flushed after each launch */
    int nwritten;
    uint8_t written_arrays[MAX_ARGS]; /* parameters the code may store to */
    int natomic;
    atomic_target atomic_targets[MAX_ARGS];
    /* Held around a launch on backends whose code holds launch state
     * (backend_caps.locked_dispatch), so dispatches of other variants
     * still overlap. */
    pthread_mutex_t dispatch_lock;
    /* Run time per parallel-loop iteration, picoseconds, averaged over the
     * timed runs (0: none yet), and the runs counted for sampling
     * (launch.c).  Written by any launching thread: a lost update only
     * costs one sample. */
    atomic_ullong run_ps;
    atomic_uint runs;
    atomic_int launched; /* it has run once (writer.c waits for the first) */
    /* Per-access checks on a device without host memory (launch.c
     * run_checked_staged): the errors record kept in device memory between
     * launches, what it holds as far as the host knows (errors_known), and
     * who uses it now; a second launching thread stages its own. */
    void *errors_mem;
    int64_t *errors_held;
    int errors_known;
    atomic_int errors_busy;
    struct variant *_Atomic next;
    struct variant *dead_next; /* retirement's private list */
} variant;

/* One kernel's variants on one device. */
typedef struct kernel_slot {
    tack_device *_Atomic dev; /* NULL once the device is freed */
    variant *_Atomic head;    /* newest first; published with release */
    atomic_int count;
    struct kernel_slot *next;
} kernel_slot;

/* An IR template and what the runtime memoizes about it. */
typedef struct ir_template {
    template_key key;
    struct ir_template *_Atomic next;
    struct ir_template *dead_next; /* retirement's private list */
    ir_func *ir;
    int ndeps;
    shape_dep deps[MAX_SHAPE_DEPS];
    int has_inner_loops; /* the body loops: parallelize small launches too */
    int nchecks;         /* accesses checked against the launch range */
    launch_check checks[MAX_LAUNCH_CHECKS];
    int nloops; /* the inner loops whose ranges those checks use */
    launch_loop loops[MAX_LAUNCH_LOOPS];
} ir_template;

struct tack_kernel {
    char *source, *filename;
    int first_line;
    src_info src;
    arena ast;
    func_def *def;
    tack_resolver resolver;
    void *resolver_ctx;
    pthread_mutex_t lock;           /* publishing templates, slots, variants */
    pthread_mutex_t lower_lock;     /* lowering (which calls the host's resolver) */
    ir_template *_Atomic tmpl;      /* the IR templates, newest first */
    /* Threads walking the lists lock-free or running a launch: what was
     * unlinked waits in the graveyard (under `lock`) until none is left,
     * so no launch runs code or reads IR that was freed under it. */
    atomic_int readers;
    ir_template *dead_tmpl;
    struct variant *dead_variants;
    atomic_int has_dead;
    kernel_slot *_Atomic slots;
    struct tack_kernel *prev, *next; /* the registry of live kernels */
    int debug;      /* -1: as tack_get_debug(); 0/1: this kernel's own */
    int disk_cache; /* 0: this kernel stays out of the disk cache */
    /* tack.tid() kernels: the number of launch extents passed as hidden
     * trailing parameters (thread_ids.c); 0 for others. */
    int thread_dims;
    /* A kernel with several top-level loops: this one lowers loop `stage`
     * (0 here), and stages[] the others, each a kernel of the same source
     * whose owner is this one; a call launches them in order. */
    int stage, nstages;
    struct tack_kernel *stages[IR_MAX_STAGES];
    struct tack_kernel *owner;
    /* tack_kernel_stats' counters (relaxed: read as a snapshot). */
    atomic_ullong n_launches, n_compiles, n_lowerings, compile_ns, launch_ns;
    /* Automatic differentiation: this kernel is an adjoint (its def has
     * each parameter's gradient appended), or `adj` is this one's, made on
     * first use by tack_kernel_adjoint. */
    int adjoint;
    struct tack_kernel *adj;
    /* matrix_args.c: per parameter, bit k: subscripted with k indices where
     * the element is a value (mat_index) or anywhere (any_index); and one
     * past the greatest literal shape[d] read. */
    uint16_t mat_index[TACK_MAX_PARAMS], any_index[TACK_MAX_PARAMS];
    int8_t max_shape[TACK_MAX_PARAMS];
    /* lower_row_params: the parameters whose ndim the template key holds */
    uint64_t row_params;
};

/* Whether k's launches are bounds-checked now: its own setting, or the
 * process's debug mode. */
static inline int kernel_debug(const tack_kernel *k) {
    if (k->owner) k = k->owner; /* a stage follows its kernel's setting */
    return k->debug >= 0 ? k->debug : tack_get_debug();
}

/* One backend instance, with its own variant cache (the kernels' slots
 * that point at it). */
struct tack_device {
    char name[32]; /* the canonical spec: "cpu", "opencl:0" */
    int shared;
    const backend_ops *ops;
    backend *b;
    backend_caps caps;
    atomic_int num_threads; /* caps.compute_units, as set_num_threads changed it */
};

/* A call's arguments, checked and classified.  Template arguments are
 * expanded: their arrays and scalars follow the kernel's own arguments. */
typedef struct call_info {
    variant_key key;
    int nargs;                        /* after expansion */
    tack_arg args[MAX_ARGS];
    /* The backend's slots: one per argument, then the element strides of
     * each strided array (in parameter, then dimension order), nslots in
     * all: the variant's parameters. */
    int nslots;
    uint64_t slots[MAX_ARGS];
    int64_t dims[MAX_ARGS][TACK_MAX_NDIM];
    /* The reductions' one-element arrays (launch.c): host storage, and
     * on devices without host memory the device's handles. */
    int nreductions;
    uint64_t reduction_host[IR_MAX_REDUCTIONS][2]; /* the value, then the
                                                      CPU's turn word */
    void *reduction_handle[IR_MAX_REDUCTIONS];
    tack_dtype reduction_dtype[IR_MAX_REDUCTIONS];
    int reductions_started; /* a later stage: the values carry on */
} call_info;

/* Walking a kernel's template or variant lists without its lock, or
 * holding what was found there (a launch, from its first look-up to the
 * end of its run): counted, so that retirement frees nothing in use.  The
 * last one out frees what retirement left in the graveyard. */
void graveyard_sweep(tack_kernel *k);
static inline void readers_enter(const tack_kernel *k) {
    atomic_fetch_add(&((tack_kernel *)k)->readers, 1);
}
static inline void readers_exit(const tack_kernel *k) {
    tack_kernel *m = (tack_kernel *)k;
    /* Both sequentially consistent (a plain load on x86): a sweep that put
     * the graveyard back and saw this reader is then seen by it. */
    if (atomic_fetch_sub(&m->readers, 1) == 1 && atomic_load(&m->has_dead)) graveyard_sweep(m);
}

/* matrix_args.c: scans k's source for parameters used as matrices; and
 * points *args at buf holding the call's arguments with each array of
 * scalars the kernel uses as matrices made an array of matrices (args
 * unchanged when there is none).  buf holds TACK_MAX_PARAMS. */
void matrix_args_scan(tack_kernel *k);
tack_status matrix_args(const tack_kernel *k, const tack_arg **args, int nargs, tack_arg *buf,
                        tack_error *err);

/* kernel.c */
/* The template for `key`, lowered on first use (once, under the kernel's
 * lowering lock) from this call's arguments. */
tack_status kernel_template(tack_kernel *k, const template_key *key, const tack_arg *args,
                            ir_template **out, tack_error *err);
void template_free(ir_template *t);

/* ir_cache.c: the disk cache's IR-template entries.  A load returns NULL
 * unless an entry exists and every name it resolved still means the same. */
ir_func *ir_cache_load(const tack_kernel *k, const template_key *key, const tack_arg *args,
                       int nargs);
void ir_cache_store(const tack_kernel *k, const template_key *key, const ir_func *f);

/* templates.c */
/* Reads the template key off a call's arguments (vector widths and the
 * template classes' structure); `debug` is the launch's mode, read once. */
tack_status template_key_of(const tack_kernel *k, const tack_arg *args, int nargs, int debug,
                            template_key *key, tack_error *err);
int tmpl_sig_equal(const tmpl_sig *a, const tmpl_sig *b);
void tmpl_sig_copy(tmpl_sig *to, const tmpl_sig *from); /* the used bytes only */
int tmpl_sig_names(const tmpl_sig *s, uint64_t token);
/* Appends each template argument's arrays and scalars, depth first in
 * field order, after the kernel's arguments; the same order lowering gives
 * the hidden parameters. */
tack_status template_expand(const tack_kernel *k, const tack_arg *args, int nargs, tack_arg *out,
                            int *nout, tack_error *err);
/* The key bytes without class tokens (for the disk cache's key). */
struct ser_writer;
void tmpl_sig_portable(const tmpl_sig *s, struct ser_writer *w);
/* One text per template argument, for tack_variant_key.tmpl. */
void tmpl_sig_text(const tmpl_sig *s, char text[][512], int max, int *n);
/* Carries out retirements asked for by tack_retire_class; called where no
 * lock is held (launches and introspection). */
void retire_pending(void);
void kernel_registry_drop_device(tack_device *dev);
/* Drops every IR template and variant naming one of the class tokens. */
void kernel_registry_retire(const uint64_t *tokens, int n);

/* key.c: checks the (expanded) arguments against the template and fills
 * info's key, slots and dims. */
tack_status call_arity(const tack_kernel *k, int nargs, tack_error *err);
/* An array's size in bytes; -1 for a negative dimension or overflow. */
int64_t array_nbytes(const tack_arg *a);
/* The bytes an array's elements occupy, from its lowest to one past its
 * highest addressed byte, whatever the strides' signs (lo == hi: none).
 * For an argument call_classify accepted. */
void array_span(const tack_arg *a, uintptr_t *lo, uintptr_t *hi);
typedef struct span {
    uintptr_t lo, hi;
    int written;
} span;
/* True when no written array's bytes overlap any other array's bytes.
 * Read-only arrays may overlap each other. */
int arrays_disjoint(const span *s, int n);
/* The slot bits of scalar argument a in the kernel type its call selected
 * (a 32-bit value in the low bytes, as the packed launch reads it). */
uint64_t scalar_slot(int type, const tack_arg *a);
/* call_classify for a call whose fast signature matched the variant key
 * `seen` (key.c): only what the signature leaves free is read. */
tack_status call_classify_warm(const tack_kernel *k, const tack_device *dev, const ir_template *t,
                               const variant_key *seen, call_info *info, tack_error *err);
tack_status call_classify(const tack_kernel *k, const tack_device *dev, const ir_template *t,
                          call_info *info,
                          const template_key *tkey, tack_error *err);

/* variant.c */
kernel_slot *variant_slot(tack_kernel *k, tack_device *dev); /* NULL: out of memory */
variant *variant_find(tack_kernel *k, kernel_slot *s, const variant_key *key);
tack_status variant_compile(tack_kernel *k, const ir_template *t, const call_info *info,
                            kernel_slot *s, variant **out, tack_error *err);
/* Several misses compiled together (tack_precompile): each job is found,
 * loaded from the disk cache, or built, and published; jobs for one
 * variant share it.  A backend with build_many builds all of a device's
 * at once.  Each job gets its variant (v) or its error (err, with v NULL);
 * returns the first failure's status in job order, or TACK_OK. */
typedef struct compile_job {
    tack_kernel *k;
    const ir_template *t;
    const call_info *info;
    kernel_slot *s;
    variant *v;
    tack_error err;
} compile_job;
tack_status variant_compile_many(compile_job *jobs, int n);
void variant_free(variant *v); /* its code too */
/* A call's post-pass IR: t's IR cloned, typed by the call's key, through
 * the passes (each verified).  What variant_compile hands the backend, and
 * what tack_kernel_generate (generate.c) emits. */
tack_status variant_post_pass_ir(const ir_template *t, const call_info *info, ir_func **out,
                                 tack_error *err);
void variant_free_all(kernel_slot *s);
/* The base of the symbols variant_compile names a call's code with (32
 * hex digits of the digest of its full key); -1 when out of memory. */
int variant_symbol_base(const tack_kernel *k, const ir_template *t, const call_info *info,
                        const tack_device *dev, char out[65]);
/* A variant's disk entry payload: the backend's artifact, then the
 * post-pass IR it was built from. */
void variant_payload(ser_writer *w, const void *art, size_t artlen, const void *ir, size_t irlen);

/* writer.c: stores a variant's entry (key, kernel name, serialized IR:
 * copied) from a backend's artifact snapshot (owned from here on) on the
 * writer thread, off the compiling call's path, once compiles pause.
 * writer_flush waits until every queued entry is stored (it runs at exit
 * too). */
typedef struct disk_cache disk_cache;
void writer_store(disk_cache *dc, const backend_ops *ops, void *snapshot, const void *key,
                  size_t keylen, const char *name, const void *ir, size_t irlen);
void writer_flush(void);
/* Around every compile, and a variant's first launch (a driver may
 * compile then): the writer thread waits until none has run for a moment
 * (writer.c). */
void writer_compile_begin(void);
void writer_compile_end(void);

/* fastpath.c: the dispatch fast path.  A call's signature (read straight
 * off its arguments) names its variant key, so a call whose signature was
 * seen before reuses what the slow path resolved.  fast_lookup returns 0
 * and the template and variant on a hit; fast_remember records a slow
 * path's result.  fast_invalidate forgets every entry (variants were
 * dropped or a kernel or device freed). */
#define FAST_SIG_WORDS 64
typedef struct fast_sig {
    int len; /* words */
    uint64_t hash;
    uint64_t words[FAST_SIG_WORDS];
} fast_sig;
/* -1: not describable (templates, or a debug launch: entries are plain only) */
int fast_signature(const tack_arg *args, int nargs, int debug, fast_sig *sig);
/* Which type a scalar's value selects, as the signature tells them apart:
 * an int within 32 bits or not; a u64 below 2^31, 2^63 or neither. */
int scalar_value_class(const tack_arg *a);
uint64_t fast_epoch(void);
/* The template for a seen signature, or NULL; then the variant for the
 * call's disjointness (NULL if that one was not seen yet). */
/* The template a signature selects, and its variants by disjointness
 * (either may be NULL). */
ir_template *fast_lookup(const tack_kernel *k, const tack_device *dev, const fast_sig *sig,
                         variant *v[2]);
/* Records what the slow path resolved; `epoch` is fast_epoch() from
 * before it started, so nothing freed meanwhile is remembered. */
void fast_remember(const tack_kernel *k, const tack_device *dev, const fast_sig *sig, int disjoint,
                   ir_template *t, variant *v, uint64_t epoch);
void fast_invalidate(void);

/* launch.c: classifies a call and finds (or compiles) its variant, for
 * the launch's debug mode (read once by the caller).  Debug mode's hidden
 * arrays point at `errors` (DEBUG_ERR_LEN) and `extents` (MAX_ARGS *
 * TACK_MAX_NDIM).  The caller is counted as a reader of k. */
tack_status launch_resolve(tack_kernel *k, tack_device *dev, const tack_arg *args, int nargs,
                           int debug_mode, template_key *tkey, ir_template **tp, call_info *info,
                           variant **vp, int64_t *errors, int64_t *extents, int stage,
                           tack_error *err);
/* Its first half: the call's template and classification, nothing found
 * or compiled yet (precompile.c gathers several before compiling). */
tack_status launch_classify(tack_kernel *k, tack_device *dev, const tack_arg *args, int nargs,
                            int debug_mode, template_key *tkey, ir_template **tp, call_info *info,
                            int64_t *errors, int64_t *extents, int stage, tack_error *err);

/* What the kernel returns, read back after its run (launch.c). */
tack_status read_results(const ir_template *t, tack_device *dev, call_info *info,
                         tack_results *out, tack_error *err);
/* Runs variant v for a classified call (launch.c): the range is
 * evaluated and checked first, so a refused call runs nothing. */
tack_status run_variant(const tack_kernel *k, const ir_template *t, variant *v,
                        const call_info *info, tack_device *dev, tack_error *err);

/* What a launch refuses once its variant exists (launch.c): the range
 * (evaluated into range[BACKEND_RANGE_LEN], its count in *n), whole
 * workgroups and the bounds checks below; precompile refuses the same. */
tack_status launch_precheck(const tack_kernel *k, const ir_template *t, variant *v,
                            const call_info *info, tack_device *dev, int64_t *range, int64_t *n,
                            tack_error *err);

/* launch_check.c: the launch's bounds checks for n > 0 outer iterations
 * over `range` (the range function's output).  launch_check_quick is the
 * per-dispatch part: 0 when every entry without a scalar parameter holds
 * and none has one.  Otherwise launch_check_full checks every entry and
 * refuses (IndexError) the launch when one fails, naming the kernel, the
 * array, the indices and the shape. */
int launch_check_quick(const ir_template *t, const call_info *info, const int64_t *range, int64_t n);
tack_status launch_check_full(const tack_kernel *k, const ir_template *t, const call_info *info,
                              const int64_t *range, int64_t n, tack_error *err);

/* explain.c: logs why a call needs a new variant (before compiling it). */
void explain_new_variant(const tack_kernel *k, const ir_template *t, kernel_slot *s,
                         const call_info *info, const tack_arg *args);

/* variant.c: the host's compile hooks (tack_set_compile_hooks).  A thread
 * lets go of the host's lock (the GIL) before waiting for a lock that a
 * thread calling back into the host may hold. */
void *host_release(void);
void host_reacquire(void *state);
/* tack_set_release_threshold's value (0: off). */
uint64_t host_release_threshold(void);

/* stats.c: process-wide counters. */
typedef struct runtime_counters {
    atomic_ullong compiles, lowerings, launches, variant_hits, fast_path_hits;
    atomic_ullong compile_ns, llvm_ns;
} runtime_counters;
extern runtime_counters tack_counters; /* launches: of freed kernels only */
extern atomic_int launch_timing;        /* > 0: launches are timed */
/* kernel.c: calls fn on every live kernel, under the registry's lock. */
void kernel_registry_walk(void (*fn)(const tack_kernel *k, void *ctx), void *ctx);

/* CLOCK_MONOTONIC in nanoseconds (a vDSO read: about 15 ns). */
/* stream.c: the queue the calling thread's launches on dev go on (the
 * current stream's when it is dev's; NULL: the device's own). */
void *stream_queue_for(const tack_device *dev);

static inline uint64_t runtime_clock_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

/* A caller may pass err = NULL: errors then go to a scratch record. */
#define ERR_OR_SCRATCH(err)                                                    \
    tack_error err##_scratch;                                                  \
    if (!(err)) (err) = &err##_scratch

tack_status runtime_error(tack_error *err, tack_status st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* api.c: the next launch's seed for its random streams (tack_seed). */
uint64_t runtime_next_seed(void);
/* launch.c: the hidden arguments after the template's (before debug
 * mode's arrays): each reduction's one-element array, holding its initial
 * value (in dev's memory when dev has no host memory; dev NULL: host
 * storage; stage 0: host storage, for classifying only), then the seed of a kernel that draws
 * Numba-style random numbers.  launch_release_hidden frees what it took
 * (info->nreductions must start at 0). */
tack_status launch_add_hidden(const tack_kernel *k, const ir_template *t, call_info *info,
                              tack_device *dev, int stage, tack_error *err);
void launch_release_hidden(tack_device *dev, call_info *info);

#endif
