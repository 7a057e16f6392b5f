/*
 * dialect.h - what differs between the C-family languages the GPU emitter
 * writes (OpenCL C 1.2, CUDA C++, HIP C++, MSL): one table per language (dialects.c),
 * read only by emit.c.  Everything else in the generated source (the
 * structure, the exact integer and float semantics, the helpers) is
 * written once, from these words.
 */
#ifndef TACK_GPU_DIALECT_H
#define TACK_GPU_DIALECT_H

#include "backend/gpu/gpu.h"

/* A native atomic: the function, and the element type it must be called
 * with (its pointer and operand are cast to it). */
typedef struct gpu_atomic_fn {
    const char *name;  /* NULL: no native form, the emitter loops on a CAS */
    tack_dtype as;     /* the type the call takes: TACK_I32, TACK_U64, ... */
} gpu_atomic_fn;

struct gpu_dialect {
    const char *name;            /* "opencl", "cuda" */
    /* Text at the top of every kernel (pragmas: no FP contraction). */
    const char *prelude;
    const char *fp64_prelude;     /* when the kernel uses f64 */
    const char *atomics64_prelude; /* when it uses 64-bit atomics */
    /* Options the driver must pass to its compiler for the strict IEEE
     * semantics the emitted code relies on (documented here, applied by
     * the driver). */
    const char *build_options;
    const char *kernel_qual;     /* before the entry's name */
    const char *func_qual;       /* before each helper function */
    const char *global_qual;     /* pointer address space: "__global " */
    const char *restrict_kw;     /* for the disjoint variant's pointers */
    /* This work item's index and the launch's items, per dimension;
     * dimension 0 varies fastest between neighbouring items (the emitter
     * gives it the innermost index). */
    const char *global_id[3];
    const char *global_size[3];
    /* 1: the driver's launches cover the whole range (in several pieces,
     * with offsets, where one launch cannot), so each work item runs at
     * most one iteration, behind a bound check.  0: the grid may be smaller
     * than the range, and items stride over it in grid-stride loops. */
    int covering_grid;
    /* With covering_grid: 1 runs the innermost index of an ndindex launch
     * as a loop inside each work item, over one index fewer in the grid
     * (a CPU device: PoCL vectorizes that loop, a row per item, where one
     * item per element ran a 2048^2 Jacobi step 7x slower). */
    int serial_innermost;
    const char *type[TACK_DTYPE_COUNT]; /* scalar type names (bool: the
                                  language's bool; arrays of bool are bytes) */
    const char *u64_suffix;      /* an unsigned 64-bit literal: "UL", "ULL" */
    /* Bit reinterpretation: f32 <-> u32, f64 <-> i64 (e.g. as_float). */
    const char *bits_to_f32, *f32_to_bits, *bits_to_f64, *f64_to_bits;
    /* Float + - * / per precision (0: f32, 1: f64); NULL: the C operator
     * (enough where the pragma forbids contraction).  CUDA spells them as
     * __fadd_rn etc., which nvcc never fuses into an FMA. */
    const char *fop[4][2];
    /* Math functions per intrinsic and precision; NULL where the emitter
     * writes its own code (min, max, abs, isnan, round, ...). */
    const char *math[INTR_COUNT][2];
    /* Native atomics per operation and element type; missing ones (and
     * every float min/max) become compare-and-swap loops on the 32- or
     * 64-bit word holding the element, always returning the old value. */
    gpu_atomic_fn atomic[ATOM_COUNT][TACK_DTYPE_COUNT];
    /* Compare-and-swap on a 32- and a 64-bit unsigned word: returns the old
     * word; called as NAME((volatile GLOBAL U *)p, expected, desired). */
    const char *cas32, *cas64;
    /* A full fence on global memory (before a spin lock's release). */
    const char *fence;
    /* Hardware trilinear filtering of f32 Texture3Ds: the fetch, called as
     * NAME(object, x, y, z) with x along the data's innermost axis and
     * normalized coordinates (clamp to edge, texel centers at (i + 0.5) / n:
     * tex.sample's convention), and the object parameter's type.  NULL:
     * every texture is sampled in software (lower/textures.c). */
    const char *texture3d_f32, *texture_object;
    /* f16 arrays (type[TACK_F16] is their element type: OpenCL's half,
     * which only pointers may have without cl_khr_fp16; CUDA's 16 bits).
     * Helper definitions, emitted when a kernel uses f16: tk_f16_load(p, i)
     * gives the f32 value of element i; tk_f16_store(p, i, v) stores the f32
     * v rounded to the nearest half (ties to even, overflow to inf, NaN
     * kept); tk_f16_round(v) is v rounded to half, as an f32.  The _f64
     * ones (emitted after the fp64 prelude, when the kernel rounds an f64)
     * take an f64 and round it once. */
    const char *f16_helpers;
    const char *f16_f64_helpers;
    /* Workgroups (collective kernels): the qualifier of a tack.shared
     * array ("__local ") and the barrier statement; NULL where the
     * language has none (such kernels are refused). */
    const char *shared_qual;
    const char *barrier;
    /* What a language without parts of C needs (MSL); NULL or 0 in the
     * others, which keep C's spelling. */
    const char *title;       /* its devices in refusals: "Metal"; set only by
                                a dialect without f64 (type[TACK_F64] NULL)
                                or 64-bit atomics (cas64 NULL) */
    const char *pack_param;  /* the pack parameter, a format given the entry's
                                name; NULL: "%s_pack pack" (by value) */
    const char *buffer_attr; /* after each array parameter, a format given its
                                argument index (the pack is 0) */
    const char *entry_extra; /* parameters after the arrays */
    int no_goto;             /* inlined bodies are do { } while (0) that a
                                return leaves with flags and breaks */
    int decimal_floats;      /* f32 literals in decimal: no hex floats */
    int no_subword_atomics;  /* no pointer-to-integer casts, which 8- and
                                16-bit atomics need to find their word */
};

#endif
