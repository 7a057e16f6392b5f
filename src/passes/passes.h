/*
 * passes.h - the passes that turn a variant's private copy of the IR
 * template into fully typed IR for the code generator, and the facts about
 * a template that the runtime memoizes (which dimensions reach generated
 * code).  Each pass is one file; the runtime runs ir_verify after each.
 */
#ifndef TACK_PASSES_H
#define TACK_PASSES_H

#include "front/ast.h"
#include "ir/ir.h"

/* One baked-in dimension: parameter `param`, dimension `dim`. */
typedef struct shape_dep {
    int param, dim;
} shape_dep;

/* The dimensions whose values reach generated code: every IR_DIM outside
 * the parallel loop's end, and the trailing dimensions of every array that
 * is indexed with more than one index (row-major index arithmetic).
 * Sorted, without repeats.  Returns the count; fills deps (capacity cap). */
int shape_deps(const ir_func *f, shape_dep *deps, int cap);

/* resolve.c: substitutes the call's dimensions as literals everywhere but
 * the parallel loop's end (left for the runtime), and linearizes accesses
 * so that loads and stores carry one element index: row-major from the
 * dimensions for a C-contiguous array, and for each array with strided[p]
 * set, sum(index[d] * stride[d]) with its element strides read from hidden
 * i64 parameters.  Those are appended after every other parameter,
 * stride_param_count(p) per strided array in parameter order, named
 * "x.strides[d]"; the runtime fills their slots in the same order.  A
 * vector's components stay adjacent (stride 1).  Fails (TACK_ERR_VALUE)
 * when they would pass TACK_MAX_PARAMS parameters. */
tack_status pass_resolve_dims(ir_func *f, const int64_t (*dims)[TACK_MAX_NDIM],
                              const uint8_t *strided, tack_error *err);

/* The hidden stride parameters a strided array gets: one per index, but
 * none for a vector's component. */
static inline int stride_param_count(const ir_param *p) {
    return p->index_ndim ? p->index_ndim - (p->vec_width ? 1 : 0) : 0;
}

/* bounds.c: debug mode.  Adds the hidden errors and extents arrays after
 * every other parameter, reads every dimension from the extents array (so
 * no length is baked in), and guards every array access with a bounds
 * check that records the first failure (the lowest launch index wins) and
 * skips the access.  Runs on the IR template, after lowering. */
tack_status pass_bounds_checks(ir_func *f, tack_error *err);

/* launch_vars.c: a CompileError when the body assigns a launch variable
 * (the launch check proves accesses from its range). */
tack_status pass_launch_vars(const ir_func *f, tack_error *err);

/* Layout of the errors array (i64): */
enum {
    DEBUG_ERR_FIRST = 0,  /* lowest failing launch index, INT64_MAX if none */
    DEBUG_ERR_LOCK,       /* a spin lock for the details below */
    DEBUG_ERR_INDEX,      /* the launch index the details belong to */
    DEBUG_ERR_SITE,       /* ir_func.sites index */
    DEBUG_ERR_NDIM,       /* indices recorded */
    DEBUG_ERR_FLAG,       /* plain kernels' per-access checks: the greatest
                             failed site + 1 (ir.h IR_BOUNDS_FLAG), or 0 */
    DEBUG_ERR_VALUES,     /* the index per dimension (TACK_MAX_NDIM) */
    /* Per-access checks: parameter p's extent d at EXTENTS + p *
     * TACK_MAX_NDIM + d, written before the launch (read at run time, so
     * not in the variant key). */
    DEBUG_ERR_EXTENTS = DEBUG_ERR_VALUES + TACK_MAX_NDIM,
    DEBUG_ERR_LEN = DEBUG_ERR_EXTENTS + TACK_MAX_PARAMS * TACK_MAX_NDIM
};

/* launch_bounds.c: outside debug mode, the array accesses whose bounds
 * follow from the launch range, checked once per dispatch before anything
 * runs (runtime/launch_check.c).  One entry per array dimension indexed by
 * launch variable `axis` plus constants (lo..hi: the least and greatest)
 * and perhaps sign * scalar parameter, in accesses every iteration runs.
 * An index i - c over range(s, a.shape[d], step) with literals s >= c >= 0
 * and step > 0 (range(a.shape[d]) and a[i], the common case) needs no
 * entry.  Entries with the same index range form a group, so that a
 * dispatch computes each range once and then compares one extent per
 * entry; those with a scalar come last. */
typedef struct launch_check {
    int64_t lo, hi;
    int16_t param;  /* the array */
    int16_t slot;   /* param * TACK_MAX_NDIM + dim: the call's extent */
    int16_t scalar; /* a scalar parameter added to the index, or -1 */
    int16_t group;  /* the group's first entry: its size (equal axis, lo, hi,
                       scalar and sign); 0 in the others */
    int8_t dim;     /* its dimension (the component of a vector: never) */
    int8_t axis;    /* -1 none (a constant index); 0 the launch variable;
                       1, 2 the inner tack.ndindex variables; IR_AXIS_GROUP,
                       IR_AXIS_LANE its workgroup and lane */
    int8_t sign;    /* the scalar's coefficient, +1 or -1 */
    int8_t written; /* a store or atomic (for the message) */
    int8_t loop;    /* the innermost inner loop around the access (an index
                       into launch_loops), or -1: it runs only when every
                       loop around it has trips */
    int8_t axis2;   /* an inner loop's axis (IR_AXIS_LOOP + l) added to
                       axis (x[i + k]), or -1 */
} launch_check;

/* An inner sequential `for` whose range is known at launch: start, stop
 * and step are each a literal, a scalar parameter or a dimension, plus or
 * minus literals (one parameter or dimension at most, so its type is the
 * expression's).  Its variable is axis IR_AXIS_LOOP + its index; entries
 * with such an axis or inside such a loop are checked with the loops'
 * ranges evaluated per dispatch (launch_check.c). */
#define IR_AXIS_LOOP 8
#define MAX_LAUNCH_LOOPS 16
typedef struct launch_loop {
    const ir_expr *start, *stop, *step; /* the template's, alive with it */
    int parent;                         /* the enclosing one, or -1 */
} launch_loop;

/* Fills out (capacity cap) and returns the count; none in debug mode, whose
 * own checks cover every access.  Entries past cap, or all of them when
 * memory runs out, are left unchecked as any other access.  The inner
 * loops the entries name go to loops (MAX_LAUNCH_LOOPS), their count to
 * *nloops. */
int launch_bounds(const ir_func *f, launch_check *out, int cap, launch_loop *loops, int *nloops);

/* An access (a load or atomic ir_expr *, a store ir_stmt *) and the
 * dimensions (bit d) that need no check of its own: launch_bounds checks
 * them before the launch, or the launch range proves them.  An access may
 * appear more than once (its bits add up). */
typedef struct launch_cover {
    const void *node;
    unsigned dims;
} launch_cover;

/* launch_bounds' entries are computed with this capacity, the runtime's
 * MAX_LAUNCH_CHECKS, so what it covers is what a launch checks. */
#define LAUNCH_CHECKS_CAP 64
/* Fills cov (capacity cap; what does not fit is checked per access) and
 * returns the count. */
int launch_covered(const ir_func *f, launch_cover *cov, int cap);

/* bounds.c, outside debug mode: every array access, parameter or
 * tack.local, whose dimensions launch_covered does not all cover gets a
 * guard on the others: a failed one is skipped and counted in a per-site
 * local (ir.h IR_BOUNDS_FLAG), and the launch raises IndexError naming
 * the line.  Extents are read from the errors array (DEBUG_ERR_EXTENTS),
 * so they stay out of the variant key.  Adds only the hidden errors array
 * (debug_extents stays -1); nothing when no access needs it.  Not for
 * collective kernels. */
tack_status pass_access_checks(ir_func *f, tack_error *err);

/* infer.c: gives every node and local a concrete type from the parameter
 * types (set by the caller on f->params[].type and f->default_float) and
 * inserts the conversions the numeric rules call for (docs/language.md).
 * Source that has no meaning for these types is a compile error naming the
 * line. */
tack_status pass_infer_types(ir_func *f, tack_error *err);

/* A collective kernel for a CPU (workgroup_loops.c): the typed body per
 * workgroup, lanes as loops split at the barriers; afterwards the launch
 * variable is the group's first iteration, stepped by IR_WORKGROUP. */
tack_status pass_workgroup_loops(ir_func *f, tack_error *err);
/* Adjoint kernels (adjoint.c).  On the template: gradient parameter n + i
 * of each array parameter i < n becomes a written array like it.  On a
 * typed variant: the body becomes its forward and reverse sweeps. */
void pass_adjoint_params(ir_func *f, int n);
tack_status pass_adjoint(ir_func *f, int n, tack_error *err);
/* Before it (adjoint_jumps.c): each loop's `break`/`continue` made flags. */
tack_status pass_adjoint_jumps(ir_func *f, tack_error *err);
/* Within it (adjoint_gather.c), after the overwrite checks: a stencil's
 * body made one copy per shifted read, so that its adjoint gathers into
 * each gradient element instead of scattering.  1 when rewritten, 0 when
 * the body keeps the scatter form, -1 out of memory. */
int pass_adjoint_gather(ir_func *f, int n);
/* tack.stop_gradient(v) -> v, once inference and the adjoint have run. */
void pass_strip_stop_gradient(ir_func *f);

#endif
