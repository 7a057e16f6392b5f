/* reduction_lanes.c - which launches keep their reductions in lanes.
 *
 * A reduction's chunk-private partial (private_atomics.c) updated in
 * iteration order is a chain of dependent operations: LLVM may not
 * reorder a float sum (strict IEEE), so the loop runs at one add latency
 * per element and never vectorizes.  Instead, where the launch is
 * one-dimensional and its body has no loops (the simple accumulations:
 * s += x[i] * y[i], s = min(s, v), p *= v, under ifs too), each chunk
 * keeps cpu_reduction_lanes(type) partials: the chunk's j-th iteration
 * (counted from its first) updates lane j mod K, the lanes are combined at
 * the chunk's end in a fixed pairwise tree (lane l with lane l + w, for
 * w = K/2, K/4, ..., 1), and the chunks' results in chunk order as
 * before.  Every operation's order is set by the chunk bounds alone, so a
 * float result still depends only on the thread count (and is the same
 * at every optimization level and on every target), while consecutive
 * iterations update independent lanes, which LLVM turns into vector
 * operations (codegen.c runs a chunk as blocks of CPU_LANE_BLOCK
 * iterations, with constant lane numbers, then the remainder). */
#include "cpu.h"

int cpu_reduction_lanes(ir_type t) { return tack_dtype_size((tack_dtype)t) == 8 ? 16 : 32; }

static int block_has_loops(const ir_block *b);

static int expr_has_loops(const ir_expr *e) {
    if (!e) return 0;
    if (e->body && block_has_loops(e->body)) return 1; /* an inlined device function */
    if (expr_has_loops(e->a) || expr_has_loops(e->b) || expr_has_loops(e->cond)) return 1;
    for (int i = 0; i < e->nargs; i++)
        if (expr_has_loops(e->args[i])) return 1;
    return 0;
}

static int block_has_loops(const ir_block *b) {
    for (int i = 0; i < b->n; i++) {
        const ir_stmt *s = b->stmts[i];
        if (s->kind == IR_FOR || s->kind == IR_WHILE) return 1;
        if (expr_has_loops(s->value)) return 1;
        for (int k = 0; k < s->nindices; k++)
            if (expr_has_loops(s->indices[k])) return 1;
        if (block_has_loops(&s->body) || block_has_loops(&s->orelse)) return 1;
    }
    return 0;
}

int cpu_launch_takes_lanes(const ir_func *f) {
    if (f->collective || f->ninner || !f->nreductions) return 0;
    return !block_has_loops(&f->body);
}
