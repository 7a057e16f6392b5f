/*
 * lower.h - AST -> IR template.  Lowering resolves every name (parameters,
 * locals, and outside names through the host's resolver), turns Python
 * constructs into IR nodes and records how each parameter is used.  Of a
 * call's arguments it sees only what the IR template key names (vector
 * widths, template structure): the result is shared by all its variants.
 */
#ifndef TACK_LOWER_H
#define TACK_LOWER_H

#include "front/ast.h"
#include "ir/ir.h"

typedef struct lower_input {
    const src_info *src;
    const func_def *def;
    const uint8_t *vec_width; /* per parameter: tack_arg.vec_width (vectors 2-16, matrices, complex), else 0 */
    const tack_arg *args;     /* the call being lowered for: template arguments'
                                 structure (identical for every call that
                                 shares this IR template) */
    tack_resolver resolver; /* NULL: only tack, math, numpy and builtins */
    void *resolver_ctx;
    int stage; /* which top-level loop: a kernel with several is one IR
                  function per loop, launched in order */
    int adjoint; /* lowered for the kernel's adjoint (passes/adjoint.c): an
                    update `a[k] += v` keeps its atomic form, whose gradient
                    needs no old value; the adjoint never runs it */
    /* Per parameter: the number of dimensions of the call's array for the
     * parameters lower_row_params names (part of the IR template key),
     * else 0.  NULL: none known. */
    const uint8_t *row_ndim;
} lower_input;

/* The kernel parameters a call receives as an argument, whole (f(c)) or
 * as a row (f(c[i])), bit p for parameter p.  Whether c[i] reaches a
 * device function as a row or as an element hangs on c's number of
 * dimensions where the kernel indexes c with one index only, so the IR
 * template key carries these parameters' ndim (lower_input.row_ndim). */
uint64_t lower_row_params(const func_def *def);

/* Warp's `i, j = tack.tid()` kernels: the body becomes a launch loop over
 * hidden trailing parameters _tack_dim0... (thread_ids.c); *dims is their
 * count, 0 for a kernel without tack.tid().  0, or -1 out of memory. */
int lower_wrap_thread_ids(func_def *d, arena *a, int *dims);

/* The kernel's top-level loops (its stages). */
int lower_count_loops(const func_def *d);
/* Wraps each run of top-level statements with effects (stores, calls,
 * atomics, ifs) in a one-iteration loop: a stage that runs once, in
 * order (top_statements.c).  0, or -1 out of memory. */
int lower_wrap_top_statements(func_def *d, arena *a);

/* Scalar names assigned again after the last top-level loop become new
 * names, and the assignments that end the kernel fold into its return
 * (top_renames.c).  0, or -1 out of memory. */
int lower_rename_top_scalars(func_def *d, arena *a);

tack_status lower_kernel(const lower_input *in, ir_func **out, tack_error *err);

/* Resolves `name` as lowering does: the host's resolver (with ctx), then
 * the defaults where the host has no binding (UNBOUND); an answer naming
 * nothing counts as none.  0, or -1 with out->kind UNBOUND, or OTHER or
 * UNDEFINED as the host answered (which the defaults never override). */
int lower_resolve_name(tack_resolver resolver, void *ctx, const char *name, tack_name *out);

/* The fallback for names no resolver knows: the modules tack, math, numpy
 * (and np) and Python's builtins. */
int lower_default_resolve(const char *name, tack_name *out);

/* Where source `src` of f is (an inlined function's, or the kernel's when
 * src is none of f's), for an error at an IR node made from it: lowering,
 * the passes and the GPU range evaluation report through it. */
src_info lower_source_info(const ir_func *f, int src);

#endif
