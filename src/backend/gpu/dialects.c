/* dialects.c - the dialect tables (see dialect.h): OpenCL C 1.2 and
 * CUDA C++. */
#include <pthread.h>

#include "backend/gpu/dialect.h"

/* Math functions whose name is the same in both precisions (OpenCL's
 * overloads). */
#define SAME(n) {n, n}

const gpu_dialect gpu_dialect_opencl = {
    .name = "opencl",
    /* Strict IEEE: no a*b+c fused into an FMA. */
    .prelude = "#pragma OPENCL FP_CONTRACT OFF\n",
    .fp64_prelude = "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n",
    .atomics64_prelude = "#pragma OPENCL EXTENSION cl_khr_int64_base_atomics : enable\n"
                         "#pragma OPENCL EXTENSION cl_khr_int64_extended_atomics : enable\n",
    /* Single-precision / and sqrt may be 2.5-3 ulp without this. */
    .build_options = "-cl-std=CL1.2 -cl-fp32-correctly-rounded-divide-sqrt",
    .kernel_qual = "__kernel void",
    .func_qual = "static inline",
    .global_qual = "__global ",
    .restrict_kw = "restrict",
    .global_id = {"(long)get_global_id(0)", "(long)get_global_id(1)", "(long)get_global_id(2)"},
    .global_size = {"(long)get_global_size(0)", "(long)get_global_size(1)",
                    "(long)get_global_size(2)"},
    /* opencl_grid covers the range (global offsets past a launch's cap). */
    .covering_grid = 1,
    .type = {[TACK_BOOL] = "bool", [TACK_I8] = "char", [TACK_I16] = "short", [TACK_I32] = "int",
             [TACK_I64] = "long", [TACK_U8] = "uchar", [TACK_U16] = "ushort", [TACK_U32] = "uint",
             [TACK_U64] = "ulong", [TACK_F32] = "float", [TACK_F64] = "double",
             [TACK_F16] = "half"},
    .u64_suffix = "UL",
    .bits_to_f32 = "as_float",
    .f32_to_bits = "as_uint",
    .bits_to_f64 = "as_double",
    .f64_to_bits = "as_long",
    .math = {[INTR_SQRT] = SAME("sqrt"), [INTR_EXP] = SAME("exp"), [INTR_LOG] = SAME("log"),
             [INTR_LOG2] = SAME("log2"), [INTR_LOG10] = SAME("log10"), [INTR_SIN] = SAME("sin"),
             [INTR_COS] = SAME("cos"), [INTR_TAN] = SAME("tan"), [INTR_ASIN] = SAME("asin"),
             [INTR_ACOS] = SAME("acos"), [INTR_ATAN] = SAME("atan"), [INTR_SINH] = SAME("sinh"),
             [INTR_COSH] = SAME("cosh"), [INTR_TANH] = SAME("tanh"), [INTR_FLOOR] = SAME("floor"),
             [INTR_CEIL] = SAME("ceil"), [INTR_TRUNC] = SAME("trunc"), [INTR_FABS] = SAME("fabs"),
             [INTR_ATAN2] = SAME("atan2"), [INTR_POW] = SAME("pow"),
             [INTR_COPYSIGN] = SAME("copysign"), [INTR_FMOD] = SAME("fmod"),
             [INTR_HYPOT] = SAME("hypot"),
             /* rint rounds half to even in the default rounding mode. */
             [INTR_ROUND] = SAME("rint"), [INTR_ASINH] = SAME("asinh"),
             [INTR_ACOSH] = SAME("acosh"), [INTR_ATANH] = SAME("atanh"),
             [INTR_EXP2] = SAME("exp2"), [INTR_EXPM1] = SAME("expm1"),
             [INTR_LOG1P] = SAME("log1p"), [INTR_CBRT] = SAME("cbrt"), [INTR_ERF] = SAME("erf"),
             [INTR_ERFC] = SAME("erfc"), [INTR_GAMMA] = SAME("tgamma"),
             [INTR_LGAMMA] = SAME("lgamma"), [INTR_REMAINDER] = SAME("remainder"),
             [INTR_NEXTAFTER] = SAME("nextafter"), [INTR_LDEXP] = SAME("ldexp"),
             [INTR_FMA] = SAME("fma"),
             /* frexp's exponent is built on ilogb. */
             [INTR_FREXP_EXP] = SAME("ilogb")},
    /* OpenCL 1.2: 32-bit integer atomics in core; 64-bit ones from
     * cl_khr_int64_base_atomics (add sub xchg cmpxchg) and
     * cl_khr_int64_extended_atomics (min max and or xor). */
#define CL32(n) {[TACK_I32] = {n, TACK_I32}, [TACK_U32] = {n, TACK_U32}}
#define CL32_64(n, m)                                                             \
    {[TACK_I32] = {n, TACK_I32}, [TACK_U32] = {n, TACK_U32}, [TACK_I64] = {m, TACK_I64}, \
     [TACK_U64] = {m, TACK_U64}}
    .atomic = {[ATOM_ADD] = CL32_64("atomic_add", "atom_add"),
               [ATOM_SUB] = CL32_64("atomic_sub", "atom_sub"),
               [ATOM_MIN] = CL32_64("atomic_min", "atom_min"),
               [ATOM_MAX] = CL32_64("atomic_max", "atom_max"),
               [ATOM_AND] = CL32_64("atomic_and", "atom_and"),
               [ATOM_OR] = CL32_64("atomic_or", "atom_or"),
               [ATOM_XOR] = CL32_64("atomic_xor", "atom_xor"),
               [ATOM_EXCHANGE] = {[TACK_I32] = {"atomic_xchg", TACK_I32},
                                  [TACK_U32] = {"atomic_xchg", TACK_U32},
                                  [TACK_I64] = {"atom_xchg", TACK_I64},
                                  [TACK_U64] = {"atom_xchg", TACK_U64},
                                  [TACK_F32] = {"atomic_xchg", TACK_U32},
                                  [TACK_F64] = {"atom_xchg", TACK_U64}},
               [ATOM_COMPARE_EXCHANGE] = CL32_64("atomic_cmpxchg", "atom_cmpxchg")},
#undef CL32
#undef CL32_64
    .cas32 = "atomic_cmpxchg",
    .cas64 = "atom_cmpxchg",
    .fence = "mem_fence(CLK_GLOBAL_MEM_FENCE)",
    /* OpenCL 1.2 core: vload_half / vstore_half_rte on half pointers (a
     * private ushort stands in for a half variable). */
    .f16_helpers =
        "static inline float tk_f16_load(const __global half *p, long i) {\n"
        "    return vload_half((size_t)i, p);\n}\n"
        "static inline void tk_f16_store(__global half *p, long i, float v) {\n"
        "    vstore_half_rte(v, (size_t)i, p);\n}\n"
        "static inline float tk_f16_round(float v) {\n"
        "    ushort h;\n"
        "    vstore_half_rte(v, 0, (half *)&h);\n"
        "    return vload_half(0, (const half *)&h);\n}\n",
    .f16_f64_helpers =
        "static inline void tk_f16_store_f64(__global half *p, long i, double v) {\n"
        "    vstore_half_rte(v, (size_t)i, p);\n}\n"
        "static inline float tk_f16_round_f64(double v) {\n"
        "    ushort h;\n"
        "    vstore_half_rte(v, 0, (half *)&h);\n"
        "    return vload_half(0, (const half *)&h);\n}\n",
    .shared_qual = "__local ",
    .barrier = "barrier(CLK_LOCAL_MEM_FENCE)",
};

const gpu_dialect gpu_dialect_cuda = {
    .name = "cuda",
    .prelude = "",
    .fp64_prelude = "",
    .atomics64_prelude = "",
    /* nvcc/NVRTC fuse a*b+c unless told not to; the emitted code also
     * spells float arithmetic as __fadd_rn etc., which are never fused. */
    .build_options = "--fmad=false -prec-div=true -prec-sqrt=true -ftz=false",
    .kernel_qual = "extern \"C\" __global__ void",
    .func_qual = "static __device__ __forceinline__",
    .global_qual = "",
    .restrict_kw = "__restrict__",
    .global_id = {"((long long)blockIdx.x * blockDim.x + threadIdx.x)",
                  "((long long)blockIdx.y * blockDim.y + threadIdx.y)",
                  "((long long)blockIdx.z * blockDim.z + threadIdx.z)"},
    .global_size = {"((long long)gridDim.x * blockDim.x)", "((long long)gridDim.y * blockDim.y)",
                    "((long long)gridDim.z * blockDim.z)"},
    /* cuda_grid launches a few blocks per SM; threads stride past that. */
    .covering_grid = 0,
    .type = {[TACK_BOOL] = "bool", [TACK_I8] = "signed char", [TACK_I16] = "short",
             [TACK_I32] = "int", [TACK_I64] = "long long", [TACK_U8] = "unsigned char",
             [TACK_U16] = "unsigned short", [TACK_U32] = "unsigned int",
             [TACK_U64] = "unsigned long long", [TACK_F32] = "float", [TACK_F64] = "double",
             [TACK_F16] = "unsigned short"},
    .u64_suffix = "ULL",
    .bits_to_f32 = "__uint_as_float",
    .f32_to_bits = "__float_as_uint",
    .bits_to_f64 = "__longlong_as_double",
    .f64_to_bits = "__double_as_longlong",
    .fop = {{"__fadd_rn", "__dadd_rn"}, {"__fsub_rn", "__dsub_rn"}, {"__fmul_rn", "__dmul_rn"},
            {"__fdiv_rn", "__ddiv_rn"}},
    .math = {[INTR_SQRT] = {"__fsqrt_rn", "__dsqrt_rn"}, [INTR_EXP] = {"expf", "exp"},
             [INTR_LOG] = {"logf", "log"}, [INTR_LOG2] = {"log2f", "log2"},
             [INTR_LOG10] = {"log10f", "log10"}, [INTR_SIN] = {"sinf", "sin"},
             [INTR_COS] = {"cosf", "cos"}, [INTR_TAN] = {"tanf", "tan"},
             [INTR_ASIN] = {"asinf", "asin"}, [INTR_ACOS] = {"acosf", "acos"},
             [INTR_ATAN] = {"atanf", "atan"}, [INTR_SINH] = {"sinhf", "sinh"},
             [INTR_COSH] = {"coshf", "cosh"}, [INTR_TANH] = {"tanhf", "tanh"},
             [INTR_FLOOR] = {"floorf", "floor"}, [INTR_CEIL] = {"ceilf", "ceil"},
             [INTR_TRUNC] = {"truncf", "trunc"}, [INTR_FABS] = {"fabsf", "fabs"},
             [INTR_ATAN2] = {"atan2f", "atan2"}, [INTR_POW] = {"powf", "pow"},
             [INTR_COPYSIGN] = {"copysignf", "copysign"}, [INTR_FMOD] = {"fmodf", "fmod"},
             [INTR_HYPOT] = {"hypotf", "hypot"}, [INTR_ROUND] = {"rintf", "rint"},
             [INTR_ASINH] = {"asinhf", "asinh"}, [INTR_ACOSH] = {"acoshf", "acosh"},
             [INTR_ATANH] = {"atanhf", "atanh"}, [INTR_EXP2] = {"exp2f", "exp2"},
             [INTR_EXPM1] = {"expm1f", "expm1"}, [INTR_LOG1P] = {"log1pf", "log1p"},
             [INTR_CBRT] = {"cbrtf", "cbrt"}, [INTR_ERF] = {"erff", "erf"},
             [INTR_ERFC] = {"erfcf", "erfc"}, [INTR_GAMMA] = {"tgammaf", "tgamma"},
             [INTR_LGAMMA] = {"lgammaf", "lgamma"}, [INTR_REMAINDER] = {"remainderf", "remainder"},
             [INTR_NEXTAFTER] = {"nextafterf", "nextafter"}, [INTR_LDEXP] = {"ldexpf", "ldexp"},
             /* __fma_rn: one rounding, never contracted differently. */
             [INTR_FMA] = {"__fmaf_rn", "__fma_rn"},
             /* frexp's exponent is built on ilogb. */
             [INTR_FREXP_EXP] = {"ilogbf", "ilogb"}},
    /* 64-bit signed add/and/or/xor/exchange/CAS go through the unsigned
     * forms (the same bits); there is no 64-bit atomicSub.  f32 atomicAdd
     * flushes subnormals (PTX atom.add.f32), so it is a CAS loop; f64's
     * does not (sm_60 and newer). */
#define CU32(n) {[TACK_I32] = {n, TACK_I32}, [TACK_U32] = {n, TACK_U32}}
#define CU64(n, s) {[TACK_I32] = {n, TACK_I32}, [TACK_U32] = {n, TACK_U32}, \
                    [TACK_I64] = {n, s}, [TACK_U64] = {n, TACK_U64}}
    .atomic = {[ATOM_ADD] = {[TACK_I32] = {"atomicAdd", TACK_I32}, [TACK_U32] = {"atomicAdd", TACK_U32},
                             [TACK_I64] = {"atomicAdd", TACK_U64}, [TACK_U64] = {"atomicAdd", TACK_U64},
                             [TACK_F64] = {"atomicAdd", TACK_F64}},
               [ATOM_SUB] = CU32("atomicSub"),
               [ATOM_MIN] = CU64("atomicMin", TACK_I64),
               [ATOM_MAX] = CU64("atomicMax", TACK_I64),
               [ATOM_AND] = CU64("atomicAnd", TACK_U64),
               [ATOM_OR] = CU64("atomicOr", TACK_U64),
               [ATOM_XOR] = CU64("atomicXor", TACK_U64),
               [ATOM_EXCHANGE] = {[TACK_I32] = {"atomicExch", TACK_I32},
                                  [TACK_U32] = {"atomicExch", TACK_U32},
                                  [TACK_I64] = {"atomicExch", TACK_U64},
                                  [TACK_U64] = {"atomicExch", TACK_U64},
                                  [TACK_F32] = {"atomicExch", TACK_U32},
                                  [TACK_F64] = {"atomicExch", TACK_U64}},
               [ATOM_COMPARE_EXCHANGE] = CU64("atomicCAS", TACK_U64)},
#undef CU32
#undef CU64
    .cas32 = "atomicCAS",
    .cas64 = "atomicCAS",
    .fence = "__threadfence()",
    /* A CUtexObject over a 3-D CUDA array (cuda/texture.c). */
    .texture3d_f32 = "tex3D<float>",
    .texture_object = "unsigned long long",
    /* PTX's conversions, so no header is needed (NVRTC's cuda_fp16.h is
     * not built in everywhere): cvt.rn rounds to nearest even and, without
     * .ftz, keeps subnormals. */
    .f16_helpers =
        "static __device__ __forceinline__ float tk_f16_value(unsigned short h) {\n"
        "    float f;\n"
        "    asm(\"cvt.f32.f16 %0, %1;\" : \"=f\"(f) : \"h\"(h));\n"
        "    return f;\n}\n"
        "static __device__ __forceinline__ unsigned short tk_f16_bits(float v) {\n"
        "    unsigned short h;\n"
        "    asm(\"cvt.rn.f16.f32 %0, %1;\" : \"=h\"(h) : \"f\"(v));\n"
        "    return h;\n}\n"
        "static __device__ __forceinline__ float tk_f16_load(const unsigned short *p, long long i) {\n"
        "    return tk_f16_value(p[i]);\n}\n"
        "static __device__ __forceinline__ void tk_f16_store(unsigned short *p, long long i, float v) {\n"
        "    p[i] = tk_f16_bits(v);\n}\n"
        "static __device__ __forceinline__ float tk_f16_round(float v) {\n"
        "    return tk_f16_value(tk_f16_bits(v));\n}\n",
    .f16_f64_helpers =
        "static __device__ __forceinline__ unsigned short tk_f16_bits_f64(double v) {\n"
        "    unsigned short h;\n"
        "    asm(\"cvt.rn.f16.f64 %0, %1;\" : \"=h\"(h) : \"d\"(v));\n"
        "    return h;\n}\n"
        "static __device__ __forceinline__ void tk_f16_store_f64(unsigned short *p, long long i, double v) {\n"
        "    p[i] = tk_f16_bits_f64(v);\n}\n"
        "static __device__ __forceinline__ float tk_f16_round_f64(double v) {\n"
        "    return tk_f16_value(tk_f16_bits_f64(v));\n}\n",
    .shared_qual = "__shared__ ",
    .barrier = "__syncthreads()",
};

static gpu_dialect level_zero, opencl_cpu;
static pthread_once_t derived_once = PTHREAD_ONCE_INIT;

static void make_derived(void) {
    level_zero = gpu_dialect_opencl;
    level_zero.name = "level_zero";
    level_zero.covering_grid = 0;
    opencl_cpu = gpu_dialect_opencl;
    opencl_cpu.serial_innermost = 1;
}

const gpu_dialect *gpu_dialect_level_zero(void) {
    pthread_once(&derived_once, make_derived);
    return &level_zero;
}

const gpu_dialect *gpu_dialect_opencl_cpu(void) {
    pthread_once(&derived_once, make_derived);
    return &opencl_cpu;
}
