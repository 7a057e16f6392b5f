/* dialect_hip.c - HIP C++ as hipRTC compiles it for AMD GPUs: CUDA's
 * table (blockIdx, atomicAdd, __uint_as_float, the math library) with
 * these differences.  Float arithmetic is the plain operators, because
 * hipRTC is told -ffp-contract=off (HIP's __fadd_rn family is not in every
 * ROCm); f32 sqrt goes through f64 (ROCm 5's sqrtf is v_sqrt_f32, 1 ulp;
 * the f64 one is correctly rounded, and 53 bits round a 24-bit square root
 * once); f16 conversions are clang's _Float16 instead of CUDA's PTX
 * assembly; some atomics differ; and every texture is sampled in software
 * (hardware images: not yet). */
#include <pthread.h>
#include <string.h>

#include "backend/gpu/dialect.h"

static gpu_dialect hip;
static pthread_once_t hip_once = PTHREAD_ONCE_INIT;

static void make_hip(void) {
    hip = gpu_dialect_cuda;
    hip.name = "hip";
    hip.prelude = "static __device__ __forceinline__ float tk_sqrtf(float x) {\n"
                  "    return (float)sqrt((double)x);\n}\n";
    /* No FMA contraction; subnormals kept (AMD GPUs flush f32 ones only
     * when asked).  f32 division is the correctly rounded v_div_scale /
     * v_div_fixup sequence without fast-math flags. */
    hip.build_options = "-ffp-contract=off -fno-gpu-flush-denormals-to-zero -O3";
    /* Plain C operators (no __fadd_rn), and fma rather than __fma_rn. */
    memset(hip.fop, 0, sizeof hip.fop);
    hip.math[INTR_SQRT][0] = "tk_sqrtf";
    hip.math[INTR_SQRT][1] = "sqrt";
    hip.math[INTR_FMA][0] = "fmaf";
    hip.math[INTR_FMA][1] = "fma";

    /* f64 add is a CAS loop, as CUDA's f32 one: AMD's float atomics may
     * flush subnormals.  ROCm 5 has no signed 64-bit min/max: CAS loops. */
    hip.atomic[ATOM_ADD][TACK_F64] = (gpu_atomic_fn){0};
    hip.atomic[ATOM_MIN][TACK_I64] = (gpu_atomic_fn){0};
    hip.atomic[ATOM_MAX][TACK_I64] = (gpu_atomic_fn){0};

    /* clang's _Float16: conversions round to nearest even, keep
     * subnormals, overflow to infinity; f64 -> half rounds once. */
    hip.f16_helpers =
        "static __device__ __forceinline__ float tk_f16_value(unsigned short h) {\n"
        "    return (float)__builtin_bit_cast(_Float16, h);\n}\n"
        "static __device__ __forceinline__ unsigned short tk_f16_bits(float v) {\n"
        "    return __builtin_bit_cast(unsigned short, (_Float16)v);\n}\n"
        "static __device__ __forceinline__ float tk_f16_load(const unsigned short *p, long long i) {\n"
        "    return tk_f16_value(p[i]);\n}\n"
        "static __device__ __forceinline__ void tk_f16_store(unsigned short *p, long long i, float v) {\n"
        "    p[i] = tk_f16_bits(v);\n}\n"
        "static __device__ __forceinline__ float tk_f16_round(float v) {\n"
        "    return tk_f16_value(tk_f16_bits(v));\n}\n";
    hip.f16_f64_helpers =
        "static __device__ __forceinline__ unsigned short tk_f16_bits_f64(double v) {\n"
        "    return __builtin_bit_cast(unsigned short, (_Float16)v);\n}\n"
        "static __device__ __forceinline__ void tk_f16_store_f64(unsigned short *p, long long i, double v) {\n"
        "    p[i] = tk_f16_bits_f64(v);\n}\n"
        "static __device__ __forceinline__ float tk_f16_round_f64(double v) {\n"
        "    return tk_f16_value(tk_f16_bits_f64(v));\n}\n";
    hip.texture3d_f32 = NULL;
    hip.texture_object = NULL;
}

const gpu_dialect *gpu_dialect_hip(void) {
    pthread_once(&hip_once, make_hip);
    return &hip;
}
