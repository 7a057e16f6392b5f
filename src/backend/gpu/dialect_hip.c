/* dialect_hip.c - HIP C++ as hipRTC compiles it for AMD GPUs: CUDA C's
 * spellings (blockIdx, atomicAdd, __uint_as_float) with three
 * differences.  Float arithmetic is the plain operators, because hipRTC is
 * told -ffp-contract=off (HIP's __fadd_rn family is not in every ROCm);
 * f32 sqrt goes through f64 (ROCm 5's sqrtf is v_sqrt_f32, 1 ulp; the
 * f64 one is correctly rounded, and 53 bits round a 24-bit square root
 * once); and f16
 * conversions are clang's _Float16 (the GPU's v_cvt_f16_f32 rounds to
 * nearest even) instead of CUDA's PTX assembly.  Every texture is sampled
 * in software (hardware images: not yet). */
#include "backend/gpu/dialect.h"

const gpu_dialect gpu_dialect_hip = {
    .name = "hip",
    .prelude = "static __device__ __forceinline__ float tk_sqrtf(float x) {\n"
               "    return (float)sqrt((double)x);\n}\n",
    .fp64_prelude = "",
    .atomics64_prelude = "",
    /* No FMA contraction; subnormals kept (AMD GPUs flush f32 ones only
     * when asked).  f32 division is the correctly rounded v_div_scale /
     * v_div_fixup sequence without fast-math flags. */
    .build_options = "-ffp-contract=off -fno-gpu-flush-denormals-to-zero -O3",
    .kernel_qual = "extern \"C\" __global__ void",
    .func_qual = "static __device__ __forceinline__",
    .global_qual = "",
    .restrict_kw = "__restrict__",
    .global_id = {"((long long)blockIdx.x * blockDim.x + threadIdx.x)",
                  "((long long)blockIdx.y * blockDim.y + threadIdx.y)",
                  "((long long)blockIdx.z * blockDim.z + threadIdx.z)"},
    .global_size = {"((long long)gridDim.x * blockDim.x)", "((long long)gridDim.y * blockDim.y)",
                    "((long long)gridDim.z * blockDim.z)"},
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
    .math = {[INTR_SQRT] = {"tk_sqrtf", "sqrt"}, [INTR_EXP] = {"expf", "exp"},
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
             [INTR_FMA] = {"fmaf", "fma"},
             /* frexp's exponent is built on ilogb. */
             [INTR_FREXP_EXP] = {"ilogbf", "ilogb"}},
    /* HIP's integer atomics; 64-bit signed ones through the unsigned forms
     * (the same bits).  Float add is a CAS loop, as on CUDA: AMD's float
     * atomics may flush subnormals. */
#define H32(n) {[TACK_I32] = {n, TACK_I32}, [TACK_U32] = {n, TACK_U32}}
#define H64(n, s) {[TACK_I32] = {n, TACK_I32}, [TACK_U32] = {n, TACK_U32}, \
                   [TACK_I64] = {n, s}, [TACK_U64] = {n, TACK_U64}}
    .atomic = {[ATOM_ADD] = H64("atomicAdd", TACK_U64),
               [ATOM_SUB] = H32("atomicSub"),
               /* No signed 64-bit min/max in ROCm 5: a CAS loop. */
               [ATOM_MIN] = {[TACK_I32] = {"atomicMin", TACK_I32},
                             [TACK_U32] = {"atomicMin", TACK_U32},
                             [TACK_U64] = {"atomicMin", TACK_U64}},
               [ATOM_MAX] = {[TACK_I32] = {"atomicMax", TACK_I32},
                             [TACK_U32] = {"atomicMax", TACK_U32},
                             [TACK_U64] = {"atomicMax", TACK_U64}},
               [ATOM_AND] = H64("atomicAnd", TACK_U64),
               [ATOM_OR] = H64("atomicOr", TACK_U64),
               [ATOM_XOR] = H64("atomicXor", TACK_U64),
               [ATOM_EXCHANGE] = {[TACK_I32] = {"atomicExch", TACK_I32},
                                  [TACK_U32] = {"atomicExch", TACK_U32},
                                  [TACK_I64] = {"atomicExch", TACK_U64},
                                  [TACK_U64] = {"atomicExch", TACK_U64},
                                  [TACK_F32] = {"atomicExch", TACK_U32},
                                  [TACK_F64] = {"atomicExch", TACK_U64}},
               [ATOM_COMPARE_EXCHANGE] = H64("atomicCAS", TACK_U64)},
#undef H32
#undef H64
    .cas32 = "atomicCAS",
    .cas64 = "atomicCAS",
    .fence = "__threadfence()",
    /* clang's _Float16: conversions round to nearest even, keep
     * subnormals, overflow to infinity; f64 -> half rounds once. */
    .f16_helpers =
        "static __device__ __forceinline__ float tk_f16_value(unsigned short h) {\n"
        "    return (float)__builtin_bit_cast(_Float16, h);\n}\n"
        "static __device__ __forceinline__ unsigned short tk_f16_bits(float v) {\n"
        "    return __builtin_bit_cast(unsigned short, (_Float16)v);\n}\n"
        "static __device__ __forceinline__ float tk_f16_load(const unsigned short *p, long long i) {\n"
        "    return tk_f16_value(p[i]);\n}\n"
        "static __device__ __forceinline__ void tk_f16_store(unsigned short *p, long long i, float v) {\n"
        "    p[i] = tk_f16_bits(v);\n}\n"
        "static __device__ __forceinline__ float tk_f16_round(float v) {\n"
        "    return tk_f16_value(tk_f16_bits(v));\n}\n",
    .f16_f64_helpers =
        "static __device__ __forceinline__ unsigned short tk_f16_bits_f64(double v) {\n"
        "    return __builtin_bit_cast(unsigned short, (_Float16)v);\n}\n"
        "static __device__ __forceinline__ void tk_f16_store_f64(unsigned short *p, long long i, double v) {\n"
        "    p[i] = tk_f16_bits_f64(v);\n}\n"
        "static __device__ __forceinline__ float tk_f16_round_f64(double v) {\n"
        "    return tk_f16_value(tk_f16_bits_f64(v));\n}\n",
    /* Workgroups: LDS arrays and s_barrier, as CUDA spells them. */
    .shared_qual = "__shared__ ",
    .barrier = "__syncthreads()",
    .printf_fn = "printf", /* HIP's device printf */
    .print_i64 = "%lld",
    .print_u64 = "%llu",
};
