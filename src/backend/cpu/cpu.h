/*
 * cpu.h - the CPU backend: typed IR -> LLVM IR -> object code bytes
 * (codegen.c), object code -> callable functions in an ORC JIT (jit.c), and
 * the persistent thread pool that runs the parallel loop (pool.c).
 *
 * The object code of a variant defines two functions:
 *   void <sym>_range(const uint64_t *slots, const int64_t *dims, int64_t out[5])
 *       evaluates the launch for a call: the parallel loop's start, stop and
 *       step, and the extents of the inner ndindex dimensions (1 if none);
 *   void <sym>_entry(const uint64_t *slots, const int64_t range[5],
 *                    int64_t lo, int64_t hi)
 *       runs iterations [lo, hi) of the parallel loop: i = start + k * step,
 *       each over all inner dimensions.
 * slots[p] holds parameter p: an array's data pointer, or a scalar's value
 * in the low bytes; dims[p * TACK_MAX_NDIM + d] is a dimension.
 */
#ifndef TACK_CPU_H
#define TACK_CPU_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include "ir/ir.h"

#define CPU_RANGE_LEN 5
/* Runs iterations lo..hi-1 of the launch; dims are the call's extents
 * (param * TACK_MAX_NDIM + d), for the private copies' sizes. */
typedef void (*cpu_entry_fn)(const uint64_t *slots, const int64_t *range, int64_t lo, int64_t hi,
                             const int64_t *dims, void *scratch);
/* codegen.c: where a kernel's tack.local arrays live.  Those that fit
 * CPU_STACK_SCRATCH bytes together stay on the stack; the rest live in a
 * scratch area of the returned size (64-byte aligned offsets in offset[],
 * -1 for a stack array), one per thread running the launch, which the
 * entry's `scratch` argument points at.  Frames also get stack probes,
 * so none can jump a thread's guard page. */
#define CPU_STACK_SCRATCH (32 * 1024)
int64_t cpu_scratch_layout(const ir_func *f, int64_t *offset);
typedef void (*cpu_range_fn)(const uint64_t *slots, const int64_t *dims, int64_t *out);

/* range_check.c: the launch range's checks before anything runs.  A copy
 * of f to evaluate a range that reads array elements with each index
 * checked (NULL: it reads none, or debug mode guards them); the bounds
 * converted from u64 (bit i: range[i]); the refusals. */
ir_func *cpu_range_checked_ir(const ir_func *f);
tack_status cpu_range_check_reads(const ir_func *f, const uint64_t *slots,
                                  const int64_t (*dims)[TACK_MAX_NDIM], tack_error *err);
unsigned cpu_range_u64_mask(const ir_func *f);
tack_status cpu_range_refuse_u64(const char *kernel, unsigned mask, const int64_t *range,
                                 tack_error *err);

/* The code generator's tiers: 0 compiles fast (no optimization pipeline,
 * fast instruction selection), 1 is optimized (LLVM's O3).  They compile
 * the same LLVM IR with strict IEEE floating point, so results agree bit
 * for bit; tier 0's symbols carry a "_t0" so both can be linked at once. */
#define CPU_TIERS 2

typedef struct cpu_object {
    unsigned char *bytes; /* malloc'd object file */
    size_t size;
    int tier;
    uint64_t llvm_ns;     /* time in LLVM's optimizer and code generator */
    char entry_symbol[64];
    char range_symbol[64];
} cpu_object;

/* codegen.c: compiles typed IR to object code for this host at a tier
 * (above).  Symbols are
 * named tack_<symbol_base>_entry and _range: a base derived from the
 * variant's full key (so a process can load the same code from the disk
 * cache and share it between identical variants). */
tack_status cpu_codegen(const ir_func *f, const char *symbol_base, int tier, cpu_object *out,
                        tack_error *err);
void cpu_object_free(cpu_object *o);
/* The same compilation as text: the optimized module's LLVM IR, or (when
 * `assembly`) the native assembly the object code is emitted from.
 * *text is malloc'd. */
tack_status cpu_codegen_text(const ir_func *f, const char *symbol_base, int assembly, char **text,
                             tack_error *err);
/* private_atomics.c: per parameter, the kind of atomic update a chunk may
 * do in a private copy and combine at its end (CPU_PRIVATE_NONE: not
 * this array).  Returns how many arrays qualify (at most
 * CPU_PRIVATE_MAX_ARRAYS). */
enum {
    CPU_PRIVATE_NONE, CPU_PRIVATE_ADD, CPU_PRIVATE_OR, CPU_PRIVATE_AND, CPU_PRIVATE_XOR,
    CPU_PRIVATE_MIN, CPU_PRIVATE_MAX, CPU_PRIVATE_MUL /* reductions only */
};
#define CPU_PRIVATE_MAX_ARRAYS 4
/* The largest private copy, in elements (a stack array per chunk). */
#define CPU_PRIVATE_MAX_ELEMENTS 2048
int cpu_private_atomics(const ir_func *f, int *family);
/* private_atomics.c: arrays updated only by atomic adds and subtracts
 * (old value unused) at linear index a * i + c of the launch variable i,
 * one a per array (a != 0), with c from cmin to cmax.  An element such an
 * update reaches is reached only by iterations within (cmax - cmin) /
 * |a * step| of it, so a chunk's iterations that far from both of its ends
 * update elements no other chunk touches: codegen.c makes theirs plain
 * adds and keeps atomics at the chunk's edges.  Only for disjoint
 * variants (no written array overlaps another); returns how many arrays
 * qualify. */
typedef struct cpu_offset_atomic {
    int on;
    int64_t a, cmin, cmax;
} cpu_offset_atomic;
int cpu_offset_atomics(const ir_func *f, cpu_offset_atomic *out);
/* reduction_lanes.c: whether a launch's chunks keep each reduction's
 * partial in lanes (one-dimensional, no loops in the body), and how many
 * lanes a reduction of type t has (32, or 16 for 8-byte types: at most
 * CPU_LANE_BLOCK). */
#define CPU_LANE_BLOCK 32
int cpu_launch_takes_lanes(const ir_func *f);
int cpu_reduction_lanes(ir_type t);

/* "cpu-name:features" of the code generator's target, for cache keys. */
const char *cpu_target_description(void);

/* jit.c: links object code into the process.  Code already linked under
 * the same symbols (the same variant key) is shared, counted by reference;
 * unloading the last reference releases the code's memory. */
typedef struct cpu_code cpu_code;
tack_status cpu_jit_load(const cpu_object *o, cpu_code **code, cpu_entry_fn *entry,
                         cpu_range_fn *range, tack_error *err);
void cpu_jit_unload(cpu_code *code);

/* tier.c: the tiered JIT.  A variant's running code: the entry and range
 * functions launches call (swapped from tier 0 to tier 1 atomically, each
 * pointer stored only once its code is linked), which tier runs, and each
 * tier's linked code (tier 0's kept until the variant's code is released,
 * for launches that began on it). */
typedef struct cpu_tiered {
    _Atomic(cpu_entry_fn) entry;
    _Atomic(cpu_range_fn) range;
    atomic_int tier;
    cpu_code *code[CPU_TIERS];
} cpu_tiered;
/* TACK_JIT: unset (tiered: tier 0 now, tier 1 in the background), "o2"
 * (tier 1 on the calling thread, as before tiers), "o0" (tier 0 only). */
typedef enum { CPU_JIT_TIERED, CPU_JIT_O2, CPU_JIT_O0 } cpu_jit_mode;
cpu_jit_mode cpu_jit_mode_now(void);
typedef struct cpu_tier_job cpu_tier_job;
/* Queues the optimized build of f (copied whole: ir_clone_owned) and its
 * swap into target;
 * NULL when out of memory (target stays at tier 0). */
cpu_tier_job *cpu_tier_queue(const ir_func *f, const char *symbol_base, cpu_tiered *target);
/* The target's code is being released: no swap into it from now on
 * (a queued build is dropped unless a disk-cache snapshot waits for it;
 * the job's IR is its own copy, so a build may outlive the kernel), and
 * its reference goes. */
void cpu_tier_drop(cpu_tier_job *j);
void cpu_tier_ref(cpu_tier_job *j);
void cpu_tier_unref(cpu_tier_job *j);
/* The optimized object (fixed once made; valid while a reference is
 * held), or NULL: not built yet (wait = 0) or its build failed.  With
 * wait, builds a queued job on the calling thread. */
const cpu_object *cpu_tier_object(cpu_tier_job *j, int wait);
/* Returns when no optimized build is queued or in progress. */
void cpu_tier_wait_all(void);
unsigned long long cpu_tier_ups(void); /* optimized code swapped in so far */

/* pool.c: a persistent pthreads pool.  The caller runs a share of the
 * work; pool_run returns when every chunk is done. */
typedef struct cpu_pool cpu_pool;
#define CPU_POOL_MAX_THREADS 256
cpu_pool *cpu_pool_create(int num_threads); /* <= 0: one per core */
/* Changes the number of threads in place: waits for a running launch,
 * then replaces the workers.  -1 when out of memory (the pool then runs
 * on the calling thread alone). */
int cpu_pool_resize(cpu_pool *p, int num_threads);
void cpu_pool_free(cpu_pool *p);
int cpu_pool_size(const cpu_pool *p);
/* Calls fn(ctx, begin, end) over [0, n) in chunks_per_thread chunks per
 * thread (more balance uneven iterations; fewer cost less); runs inline
 * when n is below the grain.  One launch at a time per pool. */
/* At most max_threads threads (the caller included; <= 0: no limit) run
 * chunks of this launch. */
void cpu_pool_run(cpu_pool *p, int64_t n, int64_t grain, int chunks_per_thread, int max_threads,
                  void (*fn)(void *ctx, int64_t begin, int64_t end), void *ctx);

#endif
