/* dialect_metal.c - the Metal Shading Language (MSL 2.4, C++14 based) as
 * Apple's compiler takes it for compute kernels.  What MSL lacks, the
 * table says and the emitter works around or refuses:
 *
 *   - no goto: inlined bodies that `return` are do { } while (0) blocks
 *     left through a flag and breaks (no_goto);
 *   - no f64: a kernel that uses f64 anywhere is refused naming f64 and
 *     the line (type[TACK_F64] NULL);
 *   - no 64-bit atomics (no 64-bit compare-and-swap on Apple GPUs): 64-bit
 *     atomics and debug mode, whose error record is updated with them,
 *     are refused (cas64 NULL); 8- and 16-bit ones need a pointer's
 *     address as an integer, which MSL does not give, and are refused;
 *   - kernel parameters carry attributes: the pack is a `constant`
 *     reference at buffer 0, each array a `device` pointer at the next
 *     buffer, and the work item's position and the grid's size come from
 *     [[thread_position_in_grid]] and [[threads_per_grid]];
 *   - hex float literals are not in C++14: f32 literals are decimal with
 *     nine digits, which give the same float back;
 *   - no hypot: a scaled formula (tk_hypot, within 2 ulp).
 *
 * Precise math needs the compiler's fast math off (MTLCompileOptions's
 * mathMode safe / fastMathEnabled NO; `metal -fno-fast-math`): then / and
 * sqrt are correctly rounded and nothing is contracted.  Integer atomics
 * are relaxed atomic_fetch_*_explicit calls on the word cast to
 * atomic_int / atomic_uint; float ones are compare-and-swap loops, as on
 * CUDA.  Workgroup arrays are `threadgroup`, the barrier
 * threadgroup_barrier(mem_flags::mem_threadgroup). */
#include "backend/gpu/dialect.h"

const gpu_dialect gpu_dialect_metal = {
    .name = "metal",
    .title = "Metal",
    .prelude =
        "#include <metal_stdlib>\n"
        "using namespace metal;\n"
        "#define TK_ATOMIC(op, T, A) static inline T tk_##op##_##T(device T *p, T v) { \\\n"
        "    return atomic_##op##_explicit((volatile device A *)p, v, memory_order_relaxed); }\n"
        "TK_ATOMIC(fetch_add, int, atomic_int) TK_ATOMIC(fetch_add, uint, atomic_uint)\n"
        "TK_ATOMIC(fetch_sub, int, atomic_int) TK_ATOMIC(fetch_sub, uint, atomic_uint)\n"
        "TK_ATOMIC(fetch_min, int, atomic_int) TK_ATOMIC(fetch_min, uint, atomic_uint)\n"
        "TK_ATOMIC(fetch_max, int, atomic_int) TK_ATOMIC(fetch_max, uint, atomic_uint)\n"
        "TK_ATOMIC(fetch_and, int, atomic_int) TK_ATOMIC(fetch_and, uint, atomic_uint)\n"
        "TK_ATOMIC(fetch_or, int, atomic_int) TK_ATOMIC(fetch_or, uint, atomic_uint)\n"
        "TK_ATOMIC(fetch_xor, int, atomic_int) TK_ATOMIC(fetch_xor, uint, atomic_uint)\n"
        "TK_ATOMIC(exchange, int, atomic_int) TK_ATOMIC(exchange, uint, atomic_uint)\n"
        "#undef TK_ATOMIC\n"
        /* MSL has only the weak compare-and-swap, which may fail without
         * another writer: retried until the word differs or it succeeds. */
        "static inline uint tk_cas32(volatile device uint *p, uint e, uint v) {\n"
        "    uint seen = e;\n"
        "    while (!atomic_compare_exchange_weak_explicit((volatile device atomic_uint *)p, &seen, v,\n"
        "                                                  memory_order_relaxed, memory_order_relaxed)) {\n"
        "        if (seen != e) return seen;\n"
        "        seen = e;\n"
        "    }\n"
        "    return e;\n}\n"
        "static inline float tk_hypot(float a, float b) {\n"
        "    a = fabs(a);\n"
        "    b = fabs(b);\n"
        "    if (isinf(a) || isinf(b)) return INFINITY;\n"
        "    float hi = fmax(a, b), lo = fmin(a, b);\n"
        "    if (isnan(a) || isnan(b) || hi == 0.0f) return a + b;\n"
        "    float r = lo / hi;\n"
        "    return hi * sqrt(1.0f + r * r);\n}\n",
    .fp64_prelude = "",
    .atomics64_prelude = "",
    .build_options = "-fno-fast-math",
    .kernel_qual = "kernel void",
    .func_qual = "static inline",
    .global_qual = "device ",
    .restrict_kw = "__restrict",
    .global_id = {"(long)tk_gid.x", "(long)tk_gid.y", "(long)tk_gid.z"},
    .global_size = {"(long)tk_gsize.x", "(long)tk_gsize.y", "(long)tk_gsize.z"},
    .type = {[TACK_BOOL] = "bool", [TACK_I8] = "char", [TACK_I16] = "short", [TACK_I32] = "int",
             [TACK_I64] = "long", [TACK_U8] = "uchar", [TACK_U16] = "ushort", [TACK_U32] = "uint",
             [TACK_U64] = "ulong", [TACK_F32] = "float", [TACK_F16] = "half"},
    .u64_suffix = "UL",
    .bits_to_f32 = "as_type<float>",
    .f32_to_bits = "as_type<uint>",
    .math = {[INTR_SQRT] = {"sqrt"}, [INTR_EXP] = {"exp"}, [INTR_LOG] = {"log"},
             [INTR_LOG2] = {"log2"}, [INTR_LOG10] = {"log10"}, [INTR_SIN] = {"sin"},
             [INTR_COS] = {"cos"}, [INTR_TAN] = {"tan"}, [INTR_ASIN] = {"asin"},
             [INTR_ACOS] = {"acos"}, [INTR_ATAN] = {"atan"}, [INTR_SINH] = {"sinh"},
             [INTR_COSH] = {"cosh"}, [INTR_TANH] = {"tanh"}, [INTR_FLOOR] = {"floor"},
             [INTR_CEIL] = {"ceil"}, [INTR_TRUNC] = {"trunc"}, [INTR_FABS] = {"fabs"},
             [INTR_ATAN2] = {"atan2"}, [INTR_POW] = {"pow"}, [INTR_COPYSIGN] = {"copysign"},
             [INTR_FMOD] = {"fmod"}, [INTR_HYPOT] = {"tk_hypot"},
             /* rint rounds half to even in the default rounding mode. */
             [INTR_ROUND] = {"rint"}},
#define M32(op) {[TACK_I32] = {"tk_" op "_int", TACK_I32}, [TACK_U32] = {"tk_" op "_uint", TACK_U32}}
    .atomic = {[ATOM_ADD] = M32("fetch_add"), [ATOM_SUB] = M32("fetch_sub"),
               [ATOM_MIN] = M32("fetch_min"), [ATOM_MAX] = M32("fetch_max"),
               [ATOM_AND] = M32("fetch_and"), [ATOM_OR] = M32("fetch_or"),
               [ATOM_XOR] = M32("fetch_xor"),
               [ATOM_EXCHANGE] = {[TACK_I32] = {"tk_exchange_int", TACK_I32},
                                  [TACK_U32] = {"tk_exchange_uint", TACK_U32},
                                  [TACK_F32] = {"tk_exchange_uint", TACK_U32}}},
#undef M32
    .cas32 = "tk_cas32",
    .fence = "atomic_thread_fence(mem_flags::mem_device, memory_order_seq_cst)",
    /* MSL's half: conversions from float round to nearest even and keep
     * subnormals. */
    .f16_helpers = "static inline float tk_f16_load(const device half *p, long i) {\n"
                   "    return (float)p[i];\n}\n"
                   "static inline void tk_f16_store(device half *p, long i, float v) {\n"
                   "    p[i] = (half)v;\n}\n"
                   "static inline float tk_f16_round(float v) {\n"
                   "    return (float)(half)v;\n}\n",
    .shared_qual = "threadgroup ",
    .barrier = "threadgroup_barrier(mem_flags::mem_threadgroup)",
    .pack_param = "constant %s_pack &pack [[buffer(0)]]",
    .buffer_attr = " [[buffer(%d)]]",
    .entry_extra = ", uint3 tk_gid [[thread_position_in_grid]], uint3 tk_gsize [[threads_per_grid]]",
    .no_goto = 1,
    .decimal_floats = 1,
    .no_subword_atomics = 1,
};
