/*
 * runtime.h - kernels, devices and the variant cache: what tack.h's objects
 * are, and the steps of a launch.
 *
 *   kernel.c   parsing at creation, the IR template (lowered once, lazily)
 *   device.c   devices: the shared one per spec, and devices with options
 *   key.c      checking a call's arguments and deriving its variant key
 *   variant.c  the per-device, per-kernel variant cache; compiling a miss
 *   launch.c   tack_kernel_launch: key -> variant -> range -> thread pool
 *   api.c      small public helpers (dtypes, argument builders, stats)
 */
#ifndef TACK_RUNTIME_H
#define TACK_RUNTIME_H

#include <pthread.h>
#include <stdatomic.h>

#include "backend/cpu/cpu.h"
#include "front/ast.h"
#include "ir/ir.h"
#include "passes/passes.h"
#include "tack.h"

#define MAX_SHAPE_DEPS (TACK_MAX_PARAMS * TACK_MAX_NDIM)

/* What selects an IR template: the facts that change what lowering emits.
 * Every one of them is in the variant key too. */
typedef struct template_key {
    uint8_t vec[TACK_MAX_PARAMS]; /* vector width per parameter, 0: none */
} template_key;

/* The variant key, packed for comparison (see key.c). */
typedef struct variant_key {
    int nparams;
    uint8_t type[TACK_MAX_PARAMS];
    uint8_t is_array[TACK_MAX_PARAMS];
    uint8_t vec[TACK_MAX_PARAMS];
    uint8_t is_texture[TACK_MAX_PARAMS];
    int64_t texture_shape[TACK_MAX_PARAMS][3];
    int nshape;
    int64_t shape[MAX_SHAPE_DEPS];
    int disjoint;
} variant_key;

int variant_key_equal(const variant_key *a, const variant_key *b);
void variant_key_export(const variant_key *k, tack_variant_key *out);

typedef struct variant {
    variant_key key;
    cpu_code *code;
    cpu_entry_fn entry;
    cpu_range_fn range;
    struct variant *next;
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
    struct ir_template *next;
    ir_func *ir;
    int ndeps;
    shape_dep deps[MAX_SHAPE_DEPS];
    int has_inner_loops; /* the body loops: parallelize small launches too */
} ir_template;

struct tack_kernel {
    char *source, *filename;
    int first_line;
    src_info src;
    arena ast;
    func_def *def;
    tack_resolver resolver;
    void *resolver_ctx;
    pthread_mutex_t lock;           /* lowering and slot creation */
    ir_template *_Atomic tmpl;      /* the IR templates, newest first */
    kernel_slot *_Atomic slots;
    struct tack_kernel *prev, *next; /* the registry of live kernels */
};

struct tack_device {
    char name[16];
    int shared;
    cpu_pool *pool;
};

/* A call's arguments, checked and classified. */
typedef struct call_info {
    variant_key key;
    uint64_t slots[TACK_MAX_PARAMS];
    int64_t dims[TACK_MAX_PARAMS][TACK_MAX_NDIM];
} call_info;

/* kernel.c */
/* The template for `key`, lowered on first use (once, under the kernel's
 * lock).  template_key_of reads the key off a call's arguments. */
void template_key_of(const tack_arg *args, int nargs, template_key *key);
tack_status kernel_template(tack_kernel *k, const template_key *key, ir_template **out,
                            tack_error *err);
void kernel_registry_drop_device(tack_device *dev);

/* key.c: checks the arguments against the template and fills info. */
tack_status call_classify(const tack_kernel *k, const ir_template *t, const tack_arg *args,
                          int nargs, call_info *info, tack_error *err);

/* variant.c */
kernel_slot *variant_slot(tack_kernel *k, tack_device *dev); /* NULL: out of memory */
variant *variant_find(kernel_slot *s, const variant_key *key);
tack_status variant_compile(tack_kernel *k, const ir_template *t, const call_info *info,
                            kernel_slot *s, variant **out, tack_error *err);
void variant_free_all(kernel_slot *s);

/* explain.c: logs why a call needs a new variant (before compiling it). */
void explain_new_variant(const tack_kernel *k, const ir_template *t, kernel_slot *s,
                         const call_info *info, const tack_arg *args);

/* api.c: process-wide counters. */
typedef struct runtime_counters {
    atomic_ullong compiles, lowerings, launches, variant_hits;
} runtime_counters;
extern runtime_counters tack_counters;

tack_status runtime_error(tack_error *err, tack_status st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
