/* codegen.c - typed IR -> LLVM IR -> object code (see cpu.h), at one of
 * two tiers: tier 0 runs no optimization pipeline and selects instructions
 * fast (a first call in milliseconds), tier 1 is LLVM's O3 (tier.c builds
 * it in the background).  Both start from the same LLVM IR, and nothing
 * in it allows a result to change: the tiers give the same bits.
 *
 * Floating point is strict IEEE: no fast-math flags are set and the target
 * does not contract multiplies into FMAs.  Integer arithmetic wraps (no nsw
 * flags) and every operation LLVM leaves undefined (division by zero,
 * INT_MIN / -1, oversized shifts, out-of-range float->int) is guarded to
 * give NumPy's answer. */
#include "cpu.h"
#include "backend/backend.h"
#include "passes/passes.h"

#include <llvm-c/Analysis.h>
#include <llvm-c/Core.h>
#include <llvm-c/DebugInfo.h> /* LLVMTemporaryMDNode: a loop's self-referencing ID */
#include <llvm-c/Target.h>
#include <llvm-c/TargetMachine.h>
#include <llvm-c/Transforms/PassBuilder.h>
#include <llvm/Config/llvm-config.h> /* LLVM_VERSION_STRING: plain macros, C-safe */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the target, created once ---- */

/* One target machine per tier (each used by one thread at a time: a
 * background tier-1 build never holds up a tier-0 build). */
static pthread_once_t target_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t target_lock[CPU_TIERS] = {PTHREAD_MUTEX_INITIALIZER,
                                                 PTHREAD_MUTEX_INITIALIZER};
static LLVMTargetMachineRef target_machine[CPU_TIERS];
static char target_error[512];
static char target_desc[4096];
static atomic_uint_fast64_t symbol_counter;

static void init_target(void) {
    LLVMInitializeNativeTarget();
    LLVMInitializeNativeAsmPrinter();
    char *triple = LLVMGetDefaultTargetTriple();
    char *cpu = LLVMGetHostCPUName();
    char *features = LLVMGetHostCPUFeatures();
    LLVMTargetRef target;
    char *msg = NULL;
    if (LLVMGetTargetFromTriple(triple, &target, &msg)) {
        snprintf(target_error, sizeof target_error, "LLVM has no target for %s: %s", triple,
                 msg ? msg : "");
        LLVMDisposeMessage(msg);
    } else {
        /* CodeGenLevelNone selects instructions with FastISel and
         * allocates registers fast; floating point is the same IEEE
         * operations either way (no FP-op fusion without contract flags). */
        target_machine[0] = LLVMCreateTargetMachine(target, triple, cpu, features,
                                                    LLVMCodeGenLevelNone, LLVMRelocPIC,
                                                    LLVMCodeModelSmall);
        target_machine[1] = LLVMCreateTargetMachine(target, triple, cpu, features,
                                                    LLVMCodeGenLevelDefault, LLVMRelocPIC,
                                                    LLVMCodeModelSmall);
        if (!target_machine[0] || !target_machine[1])
            snprintf(target_error, sizeof target_error, "no target machine");
    }
    snprintf(target_desc, sizeof target_desc, "%s:%s:%s", triple, cpu, features);
    LLVMDisposeMessage(triple);
    LLVMDisposeMessage(cpu);
    LLVMDisposeMessage(features);
}

const char *cpu_target_description(void) {
    pthread_once(&target_once, init_target);
    return target_desc;
}

/* ---- the generator ---- */

typedef struct loop_targets {
    LLVMBasicBlockRef cont, brk;
} loop_targets;

/* Where a `return` in an inlined device function goes. */
typedef struct inline_target {
    int id;
    LLVMBasicBlockRef exit;
} inline_target;

typedef struct gen {
    const ir_func *f;
    LLVMContextRef ctx;
    LLVMModuleRef mod;
    LLVMBuilderRef b;
    LLVMValueRef fn;
    LLVMValueRef *params;   /* impl: parameter values */
    LLVMValueRef *locals;   /* allocas */
    LLVMValueRef dims;      /* range function only */
    LLVMValueRef extent_loads[DEBUG_ERR_LEN - DEBUG_ERR_EXTENTS]; /* check_extent's, */
    LLVMValueRef extent_fn;                                       /* in this function */
    loop_targets *loops;     /* sized by count_nesting: never overflows */
    int nloops;
    inline_target *inlines;
    int ninlines;
    LLVMTypeRef i1, i8, i32, i64, f16, f32, f64, vd;
    LLVMValueRef *scratch;  /* impl: each tack.local array, on the stack */
    /* impl: per parameter, its chunk-private copy (private_atomics.c). */
    struct private_copy {
        int family;          /* CPU_PRIVATE_*: NONE for most arrays */
        LLVMValueRef copy;   /* [CPU_PRIVATE_MAX_ELEMENTS x T] on the stack */
        LLVMValueRef used;   /* i1: this chunk updates the copy */
        LLVMValueRef count;  /* i64: the array's elements */
        int lanes;           /* a reduction's lanes (reduction_lanes.c), else 0 */
        LLVMValueRef cur;    /* lanes: this iteration's lane, a scalar */
    } *priv;
    /* impl, a launch with lanes: the iteration's number in its block of
     * CPU_LANE_BLOCK (or in the remainder), which picks the lane. */
    LLVMValueRef lane;
    int want_lane;          /* the next counted_loop's counter is `lane`
                               (2: and the loop stays scalar) */
    int nomem;              /* an allocation of ours failed (print formats) */
    int lane_launch;        /* impl: the launch keeps reductions in lanes */
    /* impl: per parameter, atomic updates at offsets of the launch
     * variable (private_atomics.c), and whether the loop being emitted is
     * a chunk's interior, where they are plain updates. */
    cpu_offset_atomic *offs;
    int noffs;
    int interior;
} gen;

static LLVMTypeRef ty(gen *g, ir_type t) {
    switch (t) {
    case TACK_BOOL: return g->i1;
    case TACK_I8: case TACK_U8: return g->i8;
    case TACK_I16: case TACK_U16: return LLVMInt16TypeInContext(g->ctx);
    case TACK_I32: case TACK_U32: return g->i32;
    case TACK_F32: return g->f32;
    case TACK_F64: return g->f64;
    case TACK_F16: return g->f16; /* arrays' elements only (ir.h) */
    default: return g->i64;
    }
}

/* Arrays of bool are stored one byte per element. */
static LLVMTypeRef mem_ty(gen *g, ir_type t) { return t == TACK_BOOL ? g->i8 : ty(g, t); }

static LLVMValueRef intrinsic(gen *g, const char *base, ir_type t, LLVMValueRef *args, int n) {
    char name[64];
    const char *suffix = t == TACK_F32 ? "f32" : t == TACK_F64 ? "f64" : "";
    snprintf(name, sizeof name, "%s.%s", base, suffix);
    LLVMTypeRef at[3];
    for (int i = 0; i < n; i++) at[i] = LLVMTypeOf(args[i]);
    LLVMTypeRef ft = LLVMFunctionType(ty(g, t), at, n, 0);
    LLVMValueRef fn = LLVMGetNamedFunction(g->mod, name);
    if (!fn) fn = LLVMAddFunction(g->mod, name, ft);
    return LLVMBuildCall2(g->b, ft, fn, args, n, "");
}

/* A C math library function: sinf/sin, atan2f/atan2, ... */
static LLVMValueRef libm(gen *g, const char *base, ir_type t, LLVMValueRef *args, int n) {
    char name[64];
    snprintf(name, sizeof name, "%s%s", base, t == TACK_F32 ? "f" : "");
    LLVMTypeRef at[2] = {ty(g, t), ty(g, t)};
    LLVMTypeRef ft = LLVMFunctionType(ty(g, t), at, n, 0);
    LLVMValueRef fn = LLVMGetNamedFunction(g->mod, name);
    if (!fn) fn = LLVMAddFunction(g->mod, name, ft);
    return LLVMBuildCall2(g->b, ft, fn, args, n, "");
}

static LLVMValueRef cint(gen *g, ir_type t, int64_t v) {
    return LLVMConstInt(ty(g, t), (unsigned long long)v, 1);
}

static LLVMBasicBlockRef block(gen *g, const char *name) {
    return LLVMAppendBasicBlockInContext(g->ctx, g->fn, name);
}

static LLVMValueRef emit(gen *g, const ir_expr *e);
static void emit_block(gen *g, const ir_block *b);

/* Converts v from type `from` to `to` (both concrete). */
static LLVMValueRef convert(gen *g, LLVMValueRef v, ir_type from, ir_type to) {
    if (from == to) return v;
    LLVMTypeRef dst = ty(g, to);
    int ff = ir_type_is_float(from), tf = ir_type_is_float(to);
    if (to == TACK_BOOL) {
        if (ff) return LLVMBuildFCmp(g->b, LLVMRealUNE, v, LLVMConstReal(ty(g, from), 0), "");
        return LLVMBuildICmp(g->b, LLVMIntNE, v, LLVMConstInt(ty(g, from), 0, 0), "");
    }
    if (ff && tf)
        return ir_type_bits(to) > ir_type_bits(from) ? LLVMBuildFPExt(g->b, v, dst, "")
                                                     : LLVMBuildFPTrunc(g->b, v, dst, "");
    if (tf)
        return ir_type_is_signed(from) ? LLVMBuildSIToFP(g->b, v, dst, "")
                                       : LLVMBuildUIToFP(g->b, v, dst, "");
    if (ff) {
        /* Saturating, NaN -> 0: never undefined. */
        char name[64];
        snprintf(name, sizeof name, "llvm.fpto%ci.sat.i%d.%s", ir_type_is_signed(to) ? 's' : 'u',
                 ir_type_bits(to), from == TACK_F32 ? "f32" : "f64");
        LLVMTypeRef at = ty(g, from);
        LLVMTypeRef ft = LLVMFunctionType(dst, &at, 1, 0);
        LLVMValueRef fn = LLVMGetNamedFunction(g->mod, name);
        if (!fn) fn = LLVMAddFunction(g->mod, name, ft);
        return LLVMBuildCall2(g->b, ft, fn, &v, 1, "");
    }
    int fb = ir_type_bits(from), tb = ir_type_bits(to);
    if (tb < fb) return LLVMBuildTrunc(g->b, v, dst, "");
    if (tb == fb) return v;
    return ir_type_is_signed(from) && from != TACK_BOOL ? LLVMBuildSExt(g->b, v, dst, "")
                                                        : LLVMBuildZExt(g->b, v, dst, "");
}

/* An f32 or f64 value rounded once to half.  LLVM rounds f32 -> half
 * itself (F16C's vcvtps2ph, or a library call the JIT resolves: jit.c);
 * an f64 is first narrowed to f32 rounding to odd (truncate, then set the
 * lowest bit when inexact), which keeps the f32 -> half rounding exact
 * since f32 has more than two bits beyond a half's 11.  No f64 -> half
 * library call is needed, and the code vectorizes. */
static LLVMValueRef to_half(gen *g, LLVMValueRef v, ir_type from) {
    if (from == TACK_F64) {
        LLVMValueRef r = LLVMBuildFPTrunc(g->b, v, g->f32, "");
        LLVMValueRef back = LLVMBuildFPExt(g->b, r, g->f64, "");
        LLVMValueRef inexact = LLVMBuildFCmp(g->b, LLVMRealONE, back, v, ""); /* NaN: exact */
        LLVMValueRef mags[2] = {back, v};
        LLVMValueRef mag_back = intrinsic(g, "llvm.fabs", TACK_F64, &mags[0], 1);
        LLVMValueRef mag_v = intrinsic(g, "llvm.fabs", TACK_F64, &mags[1], 1);
        /* Rounded away from zero: one step back toward it (the bits are
         * sign and magnitude, so - 1 shrinks either sign), then odd. */
        LLVMValueRef away = LLVMBuildFCmp(g->b, LLVMRealOGT, mag_back, mag_v, "");
        LLVMValueRef bits = LLVMBuildBitCast(g->b, r, g->i32, "");
        LLVMValueRef toward = LLVMBuildSub(g->b, bits, LLVMBuildZExt(g->b, away, g->i32, ""), "");
        LLVMValueRef odd = LLVMBuildOr(g->b, toward, LLVMConstInt(g->i32, 1, 0), "");
        v = LLVMBuildBitCast(g->b, LLVMBuildSelect(g->b, inexact, odd, bits, ""), g->f32, "");
    }
    return LLVMBuildFPTrunc(g->b, v, g->f16, "");
}

static LLVMValueRef element_ptr(gen *g, int p, LLVMValueRef index) {
    LLVMTypeRef et = mem_ty(g, g->f->params[p].type);
    return LLVMBuildGEP2(g->b, et, g->params[p], &index, 1, "");
}

/* A tack.local array's element: its stack array, zeroed by the IR. */
static LLVMValueRef scratch_ptr(gen *g, int id, LLVMValueRef index) {
    return LLVMBuildGEP2(g->b, ty(g, g->f->scratch[id].type), g->scratch[id], &index, 1, "");
}

/* The per-access checks' extents (errors array slots written before the
 * launch, passes/bounds.c), loaded once in the entry block: a load under
 * an if cannot be hoisted by LLVM, and would keep the loop scalar. */
static LLVMValueRef check_extent(gen *g, const ir_expr *e) {
    const ir_func *f = g->f;
    const ir_expr *at = e->args[0];
    while (at->kind == IR_CAST) at = at->a;
    if (e->index != f->debug_errors || f->debug_extents >= 0 || at->kind != IR_CONST ||
        at->i < DEBUG_ERR_EXTENTS || at->i >= DEBUG_ERR_LEN)
        return NULL;
    if (g->extent_fn != g->fn) { /* loads of another function's entry */
        memset(g->extent_loads, 0, sizeof g->extent_loads);
        g->extent_fn = g->fn;
    }
    LLVMValueRef *slot = &g->extent_loads[at->i - DEBUG_ERR_EXTENTS];
    LLVMValueRef end = LLVMGetBasicBlockTerminator(LLVMGetEntryBasicBlock(g->fn));
    if (*slot || !end) return *slot;
    LLVMBasicBlockRef here = LLVMGetInsertBlock(g->b);
    LLVMPositionBuilderBefore(g->b, end);
    LLVMValueRef idx = LLVMConstInt(g->i64, (unsigned long long)at->i, 0);
    *slot = LLVMBuildLoad2(g->b, g->i64, LLVMBuildGEP2(g->b, g->i64, g->params[e->index], &idx, 1, ""), "");
    LLVMPositionBuilderAtEnd(g->b, here);
    return *slot;
}

static LLVMValueRef emit_load(gen *g, const ir_expr *e) {
    ir_type t = g->f->params[e->index].type;
    LLVMValueRef extent = check_extent(g, e);
    if (extent) return extent;
    LLVMValueRef idx = emit(g, e->args[0]);
    LLVMValueRef v = LLVMBuildLoad2(g->b, mem_ty(g, t), element_ptr(g, e->index, idx), "");
    LLVMSetAlignment(v, (unsigned)tack_dtype_size(t));
    if (t == TACK_BOOL) v = LLVMBuildICmp(g->b, LLVMIntNE, v, LLVMConstInt(g->i8, 0, 0), "");
    if (t == TACK_F16) v = LLVMBuildFPExt(g->b, v, g->f32, ""); /* exact */
    return v;
}

/* Python's floor division and modulo on integers, with NumPy's 0 for a
 * zero divisor and wrapping for INT_MIN // -1. */
static LLVMValueRef int_floordiv_mod(gen *g, ir_type t, LLVMValueRef a, LLVMValueRef b,
                                     int want_mod) {
    LLVMTypeRef T = ty(g, t);
    LLVMValueRef zero = LLVMConstInt(T, 0, 0), one = LLVMConstInt(T, 1, 0);
    LLVMValueRef bzero = LLVMBuildICmp(g->b, LLVMIntEQ, b, zero, "");
    if (!ir_type_is_signed(t)) {
        LLVMValueRef safe_b = LLVMBuildSelect(g->b, bzero, one, b, "");
        LLVMValueRef r = want_mod ? LLVMBuildURem(g->b, a, safe_b, "") : LLVMBuildUDiv(g->b, a, safe_b, "");
        return LLVMBuildSelect(g->b, bzero, zero, r, "");
    }
    LLVMValueRef minus1 = LLVMConstAllOnes(T);
    LLVMValueRef bm1 = LLVMBuildICmp(g->b, LLVMIntEQ, b, minus1, "");
    LLVMValueRef bad = LLVMBuildOr(g->b, bzero, bm1, "");
    LLVMValueRef safe_b = LLVMBuildSelect(g->b, bad, one, b, "");
    LLVMValueRef q = LLVMBuildSDiv(g->b, a, safe_b, "");
    LLVMValueRef r = LLVMBuildSRem(g->b, a, safe_b, "");
    /* Round toward negative infinity: adjust when the remainder's sign
     * differs from the divisor's. */
    LLVMValueRef rnz = LLVMBuildICmp(g->b, LLVMIntNE, r, zero, "");
    LLVMValueRef signs = LLVMBuildICmp(g->b, LLVMIntSLT, LLVMBuildXor(g->b, r, b, ""), zero, "");
    LLVMValueRef adjust = LLVMBuildAnd(g->b, rnz, signs, "");
    LLVMValueRef res;
    if (want_mod) {
        res = LLVMBuildSelect(g->b, adjust, LLVMBuildAdd(g->b, r, b, ""), r, "");
        res = LLVMBuildSelect(g->b, bm1, zero, res, "");
    } else {
        res = LLVMBuildSelect(g->b, adjust, LLVMBuildSub(g->b, q, one, ""), q, "");
        res = LLVMBuildSelect(g->b, bm1, LLVMBuildSub(g->b, zero, a, ""), res, "");
    }
    return LLVMBuildSelect(g->b, bzero, zero, res, "");
}

/* NumPy's floor_divide and remainder on floats. */
static LLVMValueRef float_floordiv_mod(gen *g, ir_type t, LLVMValueRef a, LLVMValueRef b,
                                       int want_mod) {
    LLVMTypeRef T = ty(g, t);
    LLVMValueRef zero = LLVMConstReal(T, 0), one = LLVMConstReal(T, 1);
    LLVMValueRef mod = LLVMBuildFRem(g->b, a, b, "");
    LLVMValueRef bzero = LLVMBuildFCmp(g->b, LLVMRealOEQ, b, zero, "");
    LLVMValueRef mod_nz = LLVMBuildFCmp(g->b, LLVMRealUNE, mod, zero, "");
    LLVMValueRef bneg = LLVMBuildFCmp(g->b, LLVMRealOLT, b, zero, "");
    LLVMValueRef modneg = LLVMBuildFCmp(g->b, LLVMRealOLT, mod, zero, "");
    LLVMValueRef differ = LLVMBuildAnd(g->b, mod_nz, LLVMBuildXor(g->b, bneg, modneg, ""), "");
    if (want_mod) {
        LLVMValueRef args[2] = {zero, b};
        LLVMValueRef signed_zero = intrinsic(g, "llvm.copysign", t, args, 2);
        LLVMValueRef m = LLVMBuildSelect(g->b, differ, LLVMBuildFAdd(g->b, mod, b, ""), mod, "");
        m = LLVMBuildSelect(g->b, mod_nz, m, signed_zero, "");
        return LLVMBuildSelect(g->b, bzero, mod, m, "");
    }
    LLVMValueRef div = LLVMBuildFDiv(g->b, LLVMBuildFSub(g->b, a, mod, ""), b, "");
    div = LLVMBuildSelect(g->b, differ, LLVMBuildFSub(g->b, div, one, ""), div, "");
    LLVMValueRef fl = intrinsic(g, "llvm.floor", t, &div, 1);
    LLVMValueRef frac_big = LLVMBuildFCmp(g->b, LLVMRealOGT, LLVMBuildFSub(g->b, div, fl, ""),
                                          LLVMConstReal(T, 0.5), "");
    fl = LLVMBuildSelect(g->b, frac_big, LLVMBuildFAdd(g->b, fl, one, ""), fl, "");
    LLVMValueRef div_zero = LLVMBuildFCmp(g->b, LLVMRealOEQ, div, zero, "");
    LLVMValueRef q = LLVMBuildFDiv(g->b, a, b, "");
    LLVMValueRef cs[2] = {zero, q};
    LLVMValueRef signed_zero = intrinsic(g, "llvm.copysign", t, cs, 2);
    fl = LLVMBuildSelect(g->b, div_zero, signed_zero, fl, "");
    return LLVMBuildSelect(g->b, bzero, q, fl, "");
}

/* Float power, the same bits at both tiers.  LLVM's O3 (its library-call
 * simplifier, with no fast-math flags) rewrites pow for some constant
 * operands: x ** 0.5 to sqrt (with fabs and the -inf case), x ** 2.0 to
 * x * x, x ** -1.0 to 1 / x, x ** 1.0 to x and 2.0 ** x to exp2, each
 * exact only if the C library's pow were correctly rounded, which glibc's
 * is not always (x ** 0.5 differs from sqrt in the last bit for about one
 * input in a thousand).  Tier 0 runs no pipeline, so it would call pow.
 * Those rewrites are made here, where both tiers see them; any other pow
 * goes through an internal function that is never inlined, whose call is
 * marked nobuiltin, so no pass finds a constant operand later (a local
 * folded by SROA, a vectorized splat) and rewrites it at tier 1 only. */
static LLVMValueRef float_pow(gen *g, ir_type t, LLVMValueRef a, LLVMValueRef b) {
    LLVMTypeRef T = ty(g, t);
    LLVMBool loses;
    if (LLVMIsAConstantFP(b)) {
        double e = LLVMConstRealGetDouble(b, &loses);
        if (e == 1.0) return a;
        if (e == 2.0) return LLVMBuildFMul(g->b, a, a, "square");
        if (e == -1.0) return LLVMBuildFDiv(g->b, LLVMConstReal(T, 1.0), a, "reciprocal");
        if (e == 0.5) {
            LLVMValueRef r = intrinsic(g, "llvm.sqrt", t, &a, 1);
            r = intrinsic(g, "llvm.fabs", t, &r, 1);
            LLVMValueRef minus_inf = LLVMBuildFCmp(g->b, LLVMRealOEQ, a,
                                                   LLVMConstReal(T, -__builtin_inf()), "");
            return LLVMBuildSelect(g->b, minus_inf, LLVMConstReal(T, __builtin_inf()), r, "");
        }
    }
    if (LLVMIsAConstantFP(a) && LLVMConstRealGetDouble(a, &loses) == 2.0)
        return intrinsic(g, "llvm.exp2", t, &b, 1);
    char name[32];
    snprintf(name, sizeof name, "tack.fpow.%s", tack_dtype_name(t));
    LLVMTypeRef at[2] = {T, T};
    LLVMTypeRef ft = LLVMFunctionType(T, at, 2, 0);
    LLVMValueRef fn = LLVMGetNamedFunction(g->mod, name);
    if (!fn) {
        fn = LLVMAddFunction(g->mod, name, ft);
        LLVMSetLinkage(fn, LLVMInternalLinkage);
        unsigned noinline = LLVMGetEnumAttributeKindForName("noinline", 8);
        LLVMAddAttributeAtIndex(fn, LLVMAttributeFunctionIndex,
                                LLVMCreateEnumAttribute(g->ctx, noinline, 0));
        LLVMBuilderRef saved = g->b;
        LLVMValueRef saved_fn = g->fn;
        g->b = LLVMCreateBuilderInContext(g->ctx);
        g->fn = fn;
        LLVMPositionBuilderAtEnd(g->b, block(g, "entry"));
        LLVMValueRef args[2] = {LLVMGetParam(fn, 0), LLVMGetParam(fn, 1)};
        LLVMValueRef call = intrinsic(g, "llvm.pow", t, args, 2);
        unsigned nobuiltin = LLVMGetEnumAttributeKindForName("nobuiltin", 9);
        LLVMAddCallSiteAttribute(call, LLVMAttributeFunctionIndex,
                                 LLVMCreateEnumAttribute(g->ctx, nobuiltin, 0));
        LLVMBuildRet(g->b, call);
        LLVMDisposeBuilder(g->b);
        g->b = saved;
        g->fn = saved_fn;
    }
    LLVMValueRef args[2] = {a, b};
    return LLVMBuildCall2(g->b, ft, fn, args, 2, "");
}

/* Integer power by squaring, emitted once per type as a helper. */
static LLVMValueRef int_pow(gen *g, ir_type t, LLVMValueRef a, LLVMValueRef b) {
    char name[32];
    snprintf(name, sizeof name, "tack.ipow.%s", tack_dtype_name(t));
    LLVMTypeRef T = ty(g, t);
    LLVMTypeRef at[2] = {T, T};
    LLVMTypeRef ft = LLVMFunctionType(T, at, 2, 0);
    LLVMValueRef fn = LLVMGetNamedFunction(g->mod, name);
    if (!fn) {
        fn = LLVMAddFunction(g->mod, name, ft);
        LLVMSetLinkage(fn, LLVMInternalLinkage);
        LLVMBuilderRef saved = g->b;
        LLVMValueRef saved_fn = g->fn;
        g->b = LLVMCreateBuilderInContext(g->ctx);
        g->fn = fn;
        LLVMBasicBlockRef entry = block(g, "entry"), neg = block(g, "neg"), loop = block(g, "loop"),
                          done = block(g, "done");
        LLVMValueRef base = LLVMGetParam(fn, 0), exp = LLVMGetParam(fn, 1);
        LLVMValueRef zero = LLVMConstInt(T, 0, 0), one = LLVMConstInt(T, 1, 0);
        LLVMPositionBuilderAtEnd(g->b, entry);
        LLVMValueRef is_neg = ir_type_is_signed(t) ? LLVMBuildICmp(g->b, LLVMIntSLT, exp, zero, "")
                                                    : LLVMConstInt(g->i1, 0, 0);
        LLVMBuildCondBr(g->b, is_neg, neg, loop);
        /* Negative exponent: 1 ** n = 1, (-1) ** n = +-1, otherwise 0. */
        LLVMPositionBuilderAtEnd(g->b, neg);
        LLVMValueRef is_one = LLVMBuildICmp(g->b, LLVMIntEQ, base, one, "");
        LLVMValueRef is_m1 = LLVMBuildICmp(g->b, LLVMIntEQ, base, LLVMConstAllOnes(T), "");
        LLVMValueRef odd = LLVMBuildTrunc(g->b, exp, g->i1, "");
        LLVMValueRef m1 = LLVMBuildSelect(g->b, odd, LLVMConstAllOnes(T), one, "");
        LLVMBuildRet(g->b, LLVMBuildSelect(g->b, is_one, one,
                                           LLVMBuildSelect(g->b, is_m1, m1, zero, ""), ""));
        LLVMPositionBuilderAtEnd(g->b, loop);
        LLVMValueRef r = LLVMBuildPhi(g->b, T, "r"), bs = LLVMBuildPhi(g->b, T, "b"),
                     ex = LLVMBuildPhi(g->b, T, "e");
        LLVMValueRef bit = LLVMBuildTrunc(g->b, ex, g->i1, "");
        LLVMValueRef r2 = LLVMBuildSelect(g->b, bit, LLVMBuildMul(g->b, r, bs, ""), r, "");
        LLVMValueRef b2 = LLVMBuildMul(g->b, bs, bs, "");
        LLVMValueRef e2 = LLVMBuildLShr(g->b, ex, one, "");
        LLVMValueRef more = LLVMBuildICmp(g->b, LLVMIntNE, e2, zero, "");
        LLVMBuildCondBr(g->b, more, loop, done);
        LLVMValueRef iv_r[2] = {one, r2}, iv_b[2] = {base, b2}, iv_e[2] = {exp, e2};
        LLVMBasicBlockRef from[2] = {entry, loop};
        LLVMAddIncoming(r, iv_r, from, 2);
        LLVMAddIncoming(bs, iv_b, from, 2);
        LLVMAddIncoming(ex, iv_e, from, 2);
        LLVMPositionBuilderAtEnd(g->b, done);
        LLVMValueRef res = LLVMBuildPhi(g->b, T, "");
        LLVMAddIncoming(res, &r2, &loop, 1);
        LLVMBuildRet(g->b, res);
        LLVMDisposeBuilder(g->b);
        g->b = saved;
        g->fn = saved_fn;
    }
    LLVMValueRef args[2] = {a, b};
    return LLVMBuildCall2(g->b, ft, fn, args, 2, "");
}

/* NumPy's shifts: a shift by the width or more (or negative) gives 0, or
 * the sign fill for >> of a negative signed value. */
static LLVMValueRef shift(gen *g, ir_type t, ir_op op, LLVMValueRef a, LLVMValueRef b) {
    LLVMTypeRef T = ty(g, t);
    int bits = ir_type_bits(t);
    LLVMValueRef too_big = LLVMBuildICmp(g->b, LLVMIntUGE, b, LLVMConstInt(T, bits, 0), "");
    LLVMValueRef safe = LLVMBuildSelect(g->b, too_big, LLVMConstInt(T, 0, 0), b, "");
    LLVMValueRef zero = LLVMConstInt(T, 0, 0);
    if (op == OP_SHL)
        return LLVMBuildSelect(g->b, too_big, zero, LLVMBuildShl(g->b, a, safe, ""), "");
    if (!ir_type_is_signed(t))
        return LLVMBuildSelect(g->b, too_big, zero, LLVMBuildLShr(g->b, a, safe, ""), "");
    LLVMValueRef fill = LLVMBuildAShr(g->b, a, LLVMConstInt(T, bits - 1, 0), "");
    return LLVMBuildSelect(g->b, too_big, fill, LLVMBuildAShr(g->b, a, safe, ""), "");
}

static LLVMValueRef compare(gen *g, ir_type t, ir_op op, LLVMValueRef a, LLVMValueRef b) {
    if (ir_type_is_float(t)) {
        static const LLVMRealPredicate fp[] = {LLVMRealOLT, LLVMRealOLE, LLVMRealOGT,
                                               LLVMRealOGE, LLVMRealOEQ, LLVMRealUNE};
        return LLVMBuildFCmp(g->b, fp[op - OP_LT], a, b, "");
    }
    static const LLVMIntPredicate sp[] = {LLVMIntSLT, LLVMIntSLE, LLVMIntSGT,
                                          LLVMIntSGE, LLVMIntEQ, LLVMIntNE};
    static const LLVMIntPredicate up[] = {LLVMIntULT, LLVMIntULE, LLVMIntUGT,
                                          LLVMIntUGE, LLVMIntEQ, LLVMIntNE};
    int is_signed = ir_type_is_signed(t) && t != TACK_BOOL;
    return LLVMBuildICmp(g->b, is_signed ? sp[op - OP_LT] : up[op - OP_LT], a, b, "");
}

static LLVMValueRef emit_binop(gen *g, const ir_expr *e) {
    ir_type t = e->a->type;
    LLVMValueRef a = emit(g, e->a), b = emit(g, e->b);
    int fl = ir_type_is_float(t);
    switch (e->op) {
    case OP_ADD:
        if (t == TACK_BOOL) return LLVMBuildOr(g->b, a, b, "");
        return fl ? LLVMBuildFAdd(g->b, a, b, "") : LLVMBuildAdd(g->b, a, b, "");
    case OP_SUB: return fl ? LLVMBuildFSub(g->b, a, b, "") : LLVMBuildSub(g->b, a, b, "");
    case OP_MUL: return fl ? LLVMBuildFMul(g->b, a, b, "") : LLVMBuildMul(g->b, a, b, "");
    case OP_DIV: return LLVMBuildFDiv(g->b, a, b, "");
    case OP_FLOORDIV:
    case OP_MOD:
        return fl ? float_floordiv_mod(g, t, a, b, e->op == OP_MOD)
                  : int_floordiv_mod(g, t, a, b, e->op == OP_MOD);
    case OP_POW: {
        if (fl) {
            return float_pow(g, t, a, b);
        }
        return int_pow(g, t, a, b);
    }
    case OP_AND: return LLVMBuildAnd(g->b, a, b, "");
    case OP_OR: return LLVMBuildOr(g->b, a, b, "");
    case OP_XOR: return LLVMBuildXor(g->b, a, b, "");
    case OP_SHL:
    case OP_SHR: return shift(g, t, e->op, a, b);
    default: return compare(g, t, e->op, a, b);
    }
}

/* Evaluates one of two expressions: a branch and a phi, so the side not
 * taken (perhaps an out-of-range load) never runs. */
static LLVMValueRef emit_choice(gen *g, LLVMValueRef cond, const ir_expr *then_e,
                                LLVMValueRef then_v, const ir_expr *else_e, LLVMValueRef else_v) {
    LLVMBasicBlockRef bt = block(g, "then"), be = block(g, "else"), join = block(g, "join");
    LLVMBuildCondBr(g->b, cond, bt, be);
    LLVMPositionBuilderAtEnd(g->b, bt);
    LLVMValueRef vt = then_e ? emit(g, then_e) : then_v;
    LLVMBasicBlockRef bt_end = LLVMGetInsertBlock(g->b);
    LLVMBuildBr(g->b, join);
    LLVMPositionBuilderAtEnd(g->b, be);
    LLVMValueRef ve = else_e ? emit(g, else_e) : else_v;
    LLVMBasicBlockRef be_end = LLVMGetInsertBlock(g->b);
    LLVMBuildBr(g->b, join);
    LLVMPositionBuilderAtEnd(g->b, join);
    LLVMValueRef phi = LLVMBuildPhi(g->b, LLVMTypeOf(vt), "");
    LLVMValueRef vals[2] = {vt, ve};
    LLVMBasicBlockRef froms[2] = {bt_end, be_end};
    LLVMAddIncoming(phi, vals, froms, 2);
    return phi;
}

static LLVMValueRef private_combine(gen *g, const ir_expr *e, LLVMValueRef old, LLVMValueRef v);

/* tack.atomic_*: one atomicrmw (or cmpxchg), sequentially consistent;
 * float min/max, which LLVM 14 lacks, and products (a reduction's, which
 * no atomicrmw has) retry a compare-exchange.  ptr and v are the
 * element's address and the operand. */
static LLVMValueRef atomic_at(gen *g, const ir_expr *e, LLVMValueRef ptr, LLVMValueRef v) {
    ir_type t = e->type;
    LLVMAtomicOrdering order = LLVMAtomicOrderingSequentiallyConsistent;
    int fl = ir_type_is_float(t), sgn = ir_type_is_signed(t);
    LLVMTypeRef bits = fl ? (t == TACK_F32 ? g->i32 : g->i64) : ty(g, t);
    if (e->atomic == ATOM_COMPARE_EXCHANGE || e->atomic == ATOM_MUL ||
        (fl && (e->atomic == ATOM_MIN || e->atomic == ATOM_MAX))) {
        LLVMValueRef iptr = fl ? LLVMBuildBitCast(g->b, ptr, LLVMPointerType(bits, 0), "") : ptr;
        if (e->atomic == ATOM_COMPARE_EXCHANGE) {
            LLVMValueRef desired = emit(g, e->b);
            LLVMValueRef cmp = fl ? LLVMBuildBitCast(g->b, v, bits, "") : v;
            LLVMValueRef nv = fl ? LLVMBuildBitCast(g->b, desired, bits, "") : desired;
            LLVMValueRef pair = LLVMBuildAtomicCmpXchg(g->b, iptr, cmp, nv, order, order, 0);
            LLVMValueRef old = LLVMBuildExtractValue(g->b, pair, 0, "");
            return fl ? LLVMBuildBitCast(g->b, old, ty(g, t), "") : old;
        }
        /* Float min/max: new = v if v < cur (> for max) else cur; a
         * product: cur * v. */
        LLVMBasicBlockRef pre = LLVMGetInsertBlock(g->b), loop = block(g, "amin"), done = block(g, "amin_done");
        LLVMValueRef first = LLVMBuildLoad2(g->b, bits, iptr, "");
        LLVMSetOrdering(first, LLVMAtomicOrderingMonotonic);
        LLVMSetAlignment(first, (unsigned)tack_dtype_size(t));
        LLVMBuildBr(g->b, loop);
        LLVMPositionBuilderAtEnd(g->b, loop);
        LLVMValueRef cur_bits = LLVMBuildPhi(g->b, bits, "");
        LLVMValueRef cur = LLVMBuildBitCast(g->b, cur_bits, ty(g, t), "");
        LLVMValueRef nv;
        if (e->atomic == ATOM_MUL) {
            nv = private_combine(g, e, cur, v);
        } else {
            LLVMValueRef better = compare(g, t, e->atomic == ATOM_MIN ? OP_LT : OP_GT, v, cur);
            nv = LLVMBuildSelect(g->b, better, v, cur, "");
        }
        LLVMValueRef next = LLVMBuildBitCast(g->b, nv, bits, "");
        LLVMValueRef pair = LLVMBuildAtomicCmpXchg(g->b, iptr, cur_bits, next, order, order, 0);
        LLVMValueRef seen = LLVMBuildExtractValue(g->b, pair, 0, "");
        LLVMValueRef ok = LLVMBuildExtractValue(g->b, pair, 1, "");
        LLVMBuildCondBr(g->b, ok, done, loop);
        LLVMValueRef in_vals[2] = {first, seen};
        LLVMBasicBlockRef in_blocks[2] = {pre, loop};
        LLVMAddIncoming(cur_bits, in_vals, in_blocks, 2);
        LLVMPositionBuilderAtEnd(g->b, done);
        return cur;
    }
    LLVMAtomicRMWBinOp op;
    switch (e->atomic) {
    case ATOM_ADD: op = fl ? LLVMAtomicRMWBinOpFAdd : LLVMAtomicRMWBinOpAdd; break;
    case ATOM_SUB: op = fl ? LLVMAtomicRMWBinOpFSub : LLVMAtomicRMWBinOpSub; break;
    case ATOM_MIN: op = sgn ? LLVMAtomicRMWBinOpMin : LLVMAtomicRMWBinOpUMin; break;
    case ATOM_MAX: op = sgn ? LLVMAtomicRMWBinOpMax : LLVMAtomicRMWBinOpUMax; break;
    case ATOM_AND: op = LLVMAtomicRMWBinOpAnd; break;
    case ATOM_OR: op = LLVMAtomicRMWBinOpOr; break;
    case ATOM_XOR: op = LLVMAtomicRMWBinOpXor; break;
    default:
        if (fl) { /* exchange floats through their bits */
            LLVMValueRef iptr = LLVMBuildBitCast(g->b, ptr, LLVMPointerType(bits, 0), "");
            LLVMValueRef old = LLVMBuildAtomicRMW(g->b, LLVMAtomicRMWBinOpXchg, iptr,
                                                  LLVMBuildBitCast(g->b, v, bits, ""), order, 0);
            return LLVMBuildBitCast(g->b, old, ty(g, t), "");
        }
        op = LLVMAtomicRMWBinOpXchg;
        break;
    }
    return LLVMBuildAtomicRMW(g->b, op, ptr, v, order, 0);
}

static LLVMValueRef emit_atomic(gen *g, const ir_expr *e) {
    LLVMValueRef ptr = element_ptr(g, e->index, emit(g, e->args[0]));
    return atomic_at(g, e, ptr, emit(g, e->a));
}

/* ---- chunk-private copies of arrays updated only atomically ---- */

/* The value that leaves an element unchanged under the family's operation. */
static LLVMValueRef private_identity(gen *g, int family, ir_type t) {
    LLVMTypeRef lt = ty(g, t);
    if (ir_type_is_float(t)) { /* x + -0.0 == x, -0.0 too; min, max, mul: reductions only */
        double inf = __builtin_inf();
        return LLVMConstReal(lt, family == CPU_PRIVATE_MIN ? inf : family == CPU_PRIVATE_MAX ? -inf
                                 : family == CPU_PRIVATE_MUL ? 1.0 : -0.0);
    }
    int sgn = ir_type_is_signed(t);
    switch (family) {
    case CPU_PRIVATE_AND: return LLVMConstAllOnes(lt);
    case CPU_PRIVATE_MUL: return LLVMConstInt(lt, 1, 0);
    case CPU_PRIVATE_MIN: return sgn ? LLVMConstLShr(LLVMConstAllOnes(lt), LLVMConstInt(lt, 1, 0))
                                     : LLVMConstAllOnes(lt);
    case CPU_PRIVATE_MAX: return sgn ? LLVMConstNot(LLVMConstLShr(LLVMConstAllOnes(lt),
                                                                  LLVMConstInt(lt, 1, 0)))
                                     : LLVMConstNull(lt);
    default: return LLVMConstNull(lt);
    }
}

/* A plain update of one private element: old op v. */
static LLVMValueRef private_combine(gen *g, const ir_expr *e, LLVMValueRef old, LLVMValueRef v) {
    ir_type t = e->type;
    int fl = ir_type_is_float(t), sgn = ir_type_is_signed(t);
    switch (e->atomic) {
    case ATOM_ADD: return fl ? LLVMBuildFAdd(g->b, old, v, "") : LLVMBuildAdd(g->b, old, v, "");
    case ATOM_SUB: return fl ? LLVMBuildFSub(g->b, old, v, "") : LLVMBuildSub(g->b, old, v, "");
    case ATOM_OR: return LLVMBuildOr(g->b, old, v, "");
    case ATOM_AND: return LLVMBuildAnd(g->b, old, v, "");
    case ATOM_XOR: return LLVMBuildXor(g->b, old, v, "");
    /* Integers wrap in their type, as NumPy's np.prod with that dtype. */
    case ATOM_MUL: return fl ? LLVMBuildFMul(g->b, old, v, "") : LLVMBuildMul(g->b, old, v, "");
    default: { /* min and max: v replaces old when it is less (greater) */
        if (fl) {
            LLVMValueRef better = LLVMBuildFCmp(g->b, e->atomic == ATOM_MIN ? LLVMRealOLT : LLVMRealOGT,
                                                v, old, "");
            return LLVMBuildSelect(g->b, better, v, old, "");
        }
        LLVMIntPredicate lt = sgn ? LLVMIntSLT : LLVMIntULT, gt = sgn ? LLVMIntSGT : LLVMIntUGT;
        LLVMValueRef better = LLVMBuildICmp(g->b, e->atomic == ATOM_MIN ? lt : gt, v, old, "");
        return LLVMBuildSelect(g->b, better, v, old, "");
    }
    }
}

/* `atomic(a, k, v)` as a statement on an array with a private copy: the
 * copy when this chunk uses one and k lies in it, else the atomic. */
static void emit_private_atomic(gen *g, const ir_expr *e) {
    const struct private_copy *pc = &g->priv[e->index];
    LLVMValueRef idx = emit(g, e->args[0]);
    LLVMValueRef v = emit(g, e->a);
    if (pc->lanes) { /* a reduction: this iteration's lane (lanes_load) */
        LLVMTypeRef et = ty(g, e->type);
        LLVMBuildStore(g->b, private_combine(g, e, LLVMBuildLoad2(g->b, et, pc->cur, ""), v), pc->cur);
        return;
    }
    LLVMValueRef inside = LLVMBuildAnd(g->b, pc->used,
                                       LLVMBuildICmp(g->b, LLVMIntULT, idx, pc->count, ""), "");
    LLVMBasicBlockRef local = block(g, "priv"), shared = block(g, "shared"), join = block(g, "priv_done");
    LLVMBuildCondBr(g->b, inside, local, shared);
    LLVMPositionBuilderAtEnd(g->b, local);
    LLVMTypeRef et = ty(g, e->type);
    LLVMValueRef slot = LLVMBuildGEP2(g->b, et, pc->copy, &idx, 1, "");
    LLVMBuildStore(g->b, private_combine(g, e, LLVMBuildLoad2(g->b, et, slot, ""), v), slot);
    LLVMBuildBr(g->b, join);
    LLVMPositionBuilderAtEnd(g->b, shared);
    atomic_at(g, e, element_ptr(g, e->index, idx), v);
    LLVMBuildBr(g->b, join);
    LLVMPositionBuilderAtEnd(g->b, join);
}

/* `atomic_add(a, k, v)` as a plain load, add and store: the element is
 * this chunk's alone (cpu_offset_atomics). */
static void emit_plain_update(gen *g, const ir_expr *e) {
    LLVMValueRef ptr = element_ptr(g, e->index, emit(g, e->args[0]));
    LLVMValueRef v = emit(g, e->a);
    LLVMTypeRef et = ty(g, e->type);
    LLVMValueRef old = LLVMBuildLoad2(g->b, et, ptr, "");
    LLVMSetAlignment(old, (unsigned)tack_dtype_size(e->type));
    LLVMValueRef st = LLVMBuildStore(g->b, private_combine(g, e, old, v), ptr);
    LLVMSetAlignment(st, (unsigned)tack_dtype_size(e->type));
}

/* Marks the loop whose latch branch is `br` to stay as written: the
 * remainder of a launch with lanes, under CPU_LANE_BLOCK iterations, gains
 * nothing from vectorizing or unrolling but compile time. */
static void scalar_loop(gen *g, LLVMValueRef br) {
    LLVMMetadataRef self = LLVMTemporaryMDNode(g->ctx, NULL, 0);
    LLVMMetadataRef vec[2] = {LLVMMDStringInContext2(g->ctx, "llvm.loop.vectorize.enable", 26),
                              LLVMValueAsMetadata(LLVMConstInt(g->i1, 0, 0))};
    LLVMMetadataRef unroll = LLVMMDStringInContext2(g->ctx, "llvm.loop.unroll.disable", 24);
    LLVMMetadataRef ops[3] = {self, LLVMMDNodeInContext2(g->ctx, vec, 2),
                              LLVMMDNodeInContext2(g->ctx, &unroll, 1)};
    LLVMMetadataRef id = LLVMMDNodeInContext2(g->ctx, ops, 3);
    LLVMMetadataReplaceAllUsesWith(self, id); /* and frees the temporary */
    LLVMSetMetadata(br, LLVMGetMDKindIDInContext(g->ctx, "llvm.loop", 9), LLVMMetadataAsValue(g->ctx, id));
}

/* Iteration j's lane of each reduction, lane j mod K, is read into a
 * scalar at the iteration's start and written back at its end, on every
 * path: updates under an `if` then become selects of a scalar (as a
 * single accumulator's did), not stores on a branch, and the stores stay
 * unconditional for the vectorizer. */
static void lanes_access(gen *g, int store) {
    for (int p = 0; p < g->f->nparams; p++) {
        const struct private_copy *pc = &g->priv[p];
        if (!pc->lanes) continue;
        LLVMTypeRef et = ty(g, g->f->params[p].type);
        LLVMValueRef at = LLVMBuildAnd(g->b, g->lane, LLVMConstInt(g->i64, (uint64_t)pc->lanes - 1, 0), "lane");
        LLVMValueRef slot = LLVMBuildGEP2(g->b, et, pc->copy, &at, 1, "");
        if (store) LLVMBuildStore(g->b, LLVMBuildLoad2(g->b, et, pc->cur, ""), slot);
        else LLVMBuildStore(g->b, LLVMBuildLoad2(g->b, et, slot, ""), pc->cur);
    }
}

/* i = 0 .. count-1 over a copy's elements, leaving to `exit`: returns i,
 * with the builder in the loop's body; element_loop_end closes it. */
static LLVMValueRef element_loop_begin(gen *g, LLVMValueRef count, LLVMBasicBlockRef exit) {
    LLVMBasicBlockRef pre = LLVMGetInsertBlock(g->b), head = block(g, "elem"), body = block(g, "elem_body");
    LLVMBuildBr(g->b, head);
    LLVMPositionBuilderAtEnd(g->b, head);
    LLVMValueRef i = LLVMBuildPhi(g->b, g->i64, "");
    LLVMValueRef zero = LLVMConstInt(g->i64, 0, 0);
    LLVMAddIncoming(i, &zero, &pre, 1);
    LLVMBuildCondBr(g->b, LLVMBuildICmp(g->b, LLVMIntULT, i, count, ""), body, exit);
    LLVMPositionBuilderAtEnd(g->b, body);
    return i;
}

static void element_loop_end(gen *g, LLVMValueRef i) {
    LLVMValueRef next = LLVMBuildAdd(g->b, i, LLVMConstInt(g->i64, 1, 0), "");
    LLVMBasicBlockRef from = LLVMGetInsertBlock(g->b);
    LLVMBuildBr(g->b, LLVMGetInstructionParent(i));
    LLVMAddIncoming(i, &next, &from, 1);
}

/* In impl's entry block: each private copy, used by this chunk when the
 * array is small and the chunk's work at least as large, filled with the
 * identity. */
static void private_begin(gen *g, LLVMValueRef dims, LLVMValueRef work) {
    const ir_func *f = g->f;
    /* Every copy first, while still in the entry block: static allocas. */
    for (int p = 0; p < f->nparams; p++)
        if (g->priv[p].family) {
            int reduction = ir_reduction_of_param(f, p) >= 0;
            int n = g->priv[p].lanes ? g->priv[p].lanes : reduction ? 1 : CPU_PRIVATE_MAX_ELEMENTS;
            g->priv[p].copy = LLVMBuildArrayAlloca(g->b, ty(g, f->params[p].type),
                                                   LLVMConstInt(g->i64, (uint64_t)n, 0), "priv");
            if (g->priv[p].lanes) g->priv[p].cur = LLVMBuildAlloca(g->b, ty(g, f->params[p].type), "lane");
        }
    for (int p = 0; p < f->nparams; p++) {
        struct private_copy *pc = &g->priv[p];
        if (!pc->family) continue;
        ir_type t = f->params[p].type;
        LLVMTypeRef et = ty(g, t);
        if (ir_reduction_of_param(f, p) >= 0) {
            /* One element, always used: every chunk takes its turn. */
            pc->count = LLVMConstInt(g->i64, 1, 0);
            pc->used = LLVMConstInt(g->i1, 1, 0);
            for (int l = 0; l < (pc->lanes ? pc->lanes : 1); l++) {
                LLVMValueRef at = LLVMConstInt(g->i64, (uint64_t)l, 0);
                LLVMBuildStore(g->b, private_identity(g, pc->family, t),
                               LLVMBuildGEP2(g->b, et, pc->copy, &at, 1, ""));
            }
            continue;
        }
        LLVMValueRef count = LLVMConstInt(g->i64, 1, 0);
        for (int d = 0; d < f->params[p].index_ndim; d++) {
            LLVMValueRef at = LLVMConstInt(g->i64, (uint64_t)p * TACK_MAX_NDIM + d, 0);
            count = LLVMBuildMul(g->b, count, LLVMBuildLoad2(g->b, g->i64,
                                 LLVMBuildGEP2(g->b, g->i64, dims, &at, 1, ""), ""), "");
        }
        pc->count = count;
        LLVMValueRef max = LLVMConstInt(g->i64, CPU_PRIVATE_MAX_ELEMENTS, 0);
        pc->used = LLVMBuildAnd(g->b, LLVMBuildICmp(g->b, LLVMIntULE, count, max, ""),
                                LLVMBuildICmp(g->b, LLVMIntSLE, count, work, ""), "");
        LLVMBasicBlockRef fill = block(g, "priv_fill"), go = block(g, "priv_go");
        LLVMBuildCondBr(g->b, pc->used, fill, go);
        LLVMPositionBuilderAtEnd(g->b, fill);
        LLVMValueRef i = element_loop_begin(g, count, go);
        LLVMBuildStore(g->b, private_identity(g, pc->family, t),
                       LLVMBuildGEP2(g->b, et, pc->copy, &i, 1, ""));
        element_loop_end(g, i);
        LLVMPositionBuilderAtEnd(g->b, go);
    }
}

/* After the chunk: each used copy's changed elements combined into the
 * array, one atomic each (other chunks combine theirs at the same time). */
static LLVMValueRef c_call(gen *g, const char *name, LLVMTypeRef ret, LLVMValueRef *args, int n);

/* A reduction's partial, combined into its value in chunk order: the
 * chunk starting at `lo` waits until the turn word (the u64 after the
 * value, which the runtime zeroes) says lo, combines, and passes the turn
 * to `hi`.  Chunks are handed out in increasing order and each runs to
 * its end, so the wait always ends. */
static void reduction_end(gen *g, int p, LLVMValueRef lo, LLVMValueRef hi) {
    const struct private_copy *pc = &g->priv[p];
    ir_type t = g->f->params[p].type;
    LLVMTypeRef et = ty(g, t);
    static const ir_atomic_op combine[] = {
        [CPU_PRIVATE_ADD] = ATOM_ADD, [CPU_PRIVATE_OR] = ATOM_OR, [CPU_PRIVATE_AND] = ATOM_AND,
        [CPU_PRIVATE_XOR] = ATOM_XOR, [CPU_PRIVATE_MIN] = ATOM_MIN, [CPU_PRIVATE_MAX] = ATOM_MAX,
        [CPU_PRIVATE_MUL] = ATOM_MUL};
    ir_expr op = {.kind = IR_ATOMIC, .type = t, .index = p, .atomic = combine[pc->family]};
    /* The lanes in a fixed pairwise tree (lane l with lane l + w, as
     * halves of a vector), before the wait: the chunk's partial is lane 0. */
    LLVMValueRef part;
    if (pc->lanes) {
        LLVMTypeRef vt = LLVMVectorType(et, (unsigned)pc->lanes);
        LLVMValueRef v = LLVMBuildLoad2(g->b, vt, LLVMBuildBitCast(g->b, pc->copy, LLVMPointerType(vt, 0), ""), "");
        LLVMSetAlignment(v, (unsigned)tack_dtype_size((tack_dtype)t));
        for (int w = pc->lanes / 2; w >= 1; w /= 2) {
            LLVMValueRef lo[CPU_LANE_BLOCK / 2], hi[CPU_LANE_BLOCK / 2];
            for (int l = 0; l < w; l++) {
                lo[l] = LLVMConstInt(g->i32, (uint64_t)l, 0);
                hi[l] = LLVMConstInt(g->i32, (uint64_t)(l + w), 0);
            }
            LLVMValueRef undef = LLVMGetUndef(LLVMTypeOf(v));
            LLVMValueRef a = LLVMBuildShuffleVector(g->b, v, undef, LLVMConstVector(lo, (unsigned)w), "");
            LLVMValueRef b = LLVMBuildShuffleVector(g->b, v, undef, LLVMConstVector(hi, (unsigned)w), "");
            v = private_combine(g, &op, a, b);
        }
        part = LLVMBuildExtractElement(g->b, v, LLVMConstInt(g->i32, 0, 0), "");
    } else {
        part = LLVMBuildLoad2(g->b, et, pc->copy, "");
    }
    LLVMValueRef value = element_ptr(g, p, LLVMConstInt(g->i64, 0, 0));
    LLVMValueRef one = LLVMConstInt(g->i64, 1, 0);
    LLVMValueRef turn = LLVMBuildGEP2(g->b, g->i64,
                                      LLVMBuildBitCast(g->b, value, LLVMPointerType(g->i64, 0), ""),
                                      &one, 1, "turn");
    LLVMBasicBlockRef wait = block(g, "turn_wait"), yield = block(g, "turn_yield"), go = block(g, "turn_go");
    LLVMBuildBr(g->b, wait);
    LLVMPositionBuilderAtEnd(g->b, wait);
    LLVMValueRef now = LLVMBuildLoad2(g->b, g->i64, turn, "");
    LLVMSetOrdering(now, LLVMAtomicOrderingAcquire);
    LLVMSetAlignment(now, 8);
    LLVMBuildCondBr(g->b, LLVMBuildICmp(g->b, LLVMIntEQ, now, lo, ""), go, yield);
    LLVMPositionBuilderAtEnd(g->b, yield);
    c_call(g, "sched_yield", g->i32, NULL, 0);
    LLVMBuildBr(g->b, wait);
    LLVMPositionBuilderAtEnd(g->b, go);
    LLVMValueRef old = LLVMBuildLoad2(g->b, et, value, "");
    LLVMBuildStore(g->b, private_combine(g, &op, old, part), value);
    LLVMValueRef pass = LLVMBuildStore(g->b, hi, turn);
    LLVMSetOrdering(pass, LLVMAtomicOrderingRelease);
    LLVMSetAlignment(pass, 8);
}

static void private_end(gen *g, LLVMValueRef lo, LLVMValueRef hi) {
    const ir_func *f = g->f;
    for (int p = 0; p < f->nparams; p++) {
        const struct private_copy *pc = &g->priv[p];
        if (!pc->family) continue;
        if (ir_reduction_of_param(f, p) >= 0) {
            reduction_end(g, p, lo, hi);
            continue;
        }
        ir_type t = f->params[p].type;
        LLVMTypeRef et = ty(g, t), bits = ir_type_is_float(t) ? (t == TACK_F32 ? g->i32 : g->i64) : et;
        LLVMBasicBlockRef merge = block(g, "priv_merge"), done = block(g, "priv_merged");
        LLVMBuildCondBr(g->b, pc->used, merge, done);
        LLVMPositionBuilderAtEnd(g->b, merge);
        LLVMValueRef i = element_loop_begin(g, pc->count, done);
        LLVMBasicBlockRef changed = block(g, "priv_changed"), next = block(g, "priv_next");
        LLVMValueRef v = LLVMBuildLoad2(g->b, et, LLVMBuildGEP2(g->b, et, pc->copy, &i, 1, ""), "");
        LLVMValueRef id = private_identity(g, pc->family, t);
        LLVMValueRef same = LLVMBuildICmp(g->b, LLVMIntEQ, LLVMBuildBitCast(g->b, v, bits, ""),
                                          LLVMConstBitCast(id, bits), "");
        LLVMBuildCondBr(g->b, same, next, changed);
        LLVMPositionBuilderAtEnd(g->b, changed);
        /* A subtracting update's copy holds -(sum), so every family's
         * combination is its own operation (add for add and subtract). */
        ir_expr op = {.kind = IR_ATOMIC, .type = t, .index = p};
        static const ir_atomic_op combine[] = {
            [CPU_PRIVATE_ADD] = ATOM_ADD, [CPU_PRIVATE_OR] = ATOM_OR, [CPU_PRIVATE_AND] = ATOM_AND,
            [CPU_PRIVATE_XOR] = ATOM_XOR, [CPU_PRIVATE_MIN] = ATOM_MIN, [CPU_PRIVATE_MAX] = ATOM_MAX,
            [CPU_PRIVATE_MUL] = ATOM_MUL};
        op.atomic = combine[pc->family];
        atomic_at(g, &op, element_ptr(g, p, i), v);
        LLVMBuildBr(g->b, next);
        LLVMPositionBuilderAtEnd(g->b, next);
        element_loop_end(g, i);
        LLVMPositionBuilderAtEnd(g->b, done);
    }
}

/* A call to the C function `name` (the JIT finds libm's in the process). */
static LLVMValueRef c_call(gen *g, const char *name, LLVMTypeRef ret, LLVMValueRef *args, int n) {
    LLVMTypeRef at[3];
    for (int i = 0; i < n; i++) at[i] = LLVMTypeOf(args[i]);
    LLVMTypeRef ft = LLVMFunctionType(ret, at, n, 0);
    LLVMValueRef fn = LLVMGetNamedFunction(g->mod, name);
    if (!fn) fn = LLVMAddFunction(g->mod, name, ft);
    return LLVMBuildCall2(g->b, ft, fn, args, n, "");
}

/* Starts internal helper function `name` of type ft, or returns 0 when
 * the module has it already (*fn set either way); end_helper restores. */
static int begin_helper(gen *g, const char *name, LLVMTypeRef ft, LLVMValueRef *fn,
                        LLVMBuilderRef *saved_b, LLVMValueRef *saved_fn) {
    if ((*fn = LLVMGetNamedFunction(g->mod, name))) return 0;
    *fn = LLVMAddFunction(g->mod, name, ft);
    LLVMSetLinkage(*fn, LLVMInternalLinkage);
    *saved_b = g->b;
    *saved_fn = g->fn;
    g->b = LLVMCreateBuilderInContext(g->ctx);
    g->fn = *fn;
    return 1;
}

static void end_helper(gen *g, LLVMBuilderRef saved_b, LLVMValueRef saved_fn) {
    LLVMDisposeBuilder(g->b);
    g->b = saved_b;
    g->fn = saved_fn;
}

/* lgamma through lgamma_r: plain lgamma writes the global signgam, a data
 * race between the pool's threads. */
static LLVMValueRef lgamma_call(gen *g, ir_type t, LLVMValueRef x) {
    LLVMTypeRef T = ty(g, t);
    LLVMTypeRef ft = LLVMFunctionType(T, &T, 1, 0);
    LLVMValueRef fn;
    LLVMBuilderRef sb;
    LLVMValueRef sf;
    if (begin_helper(g, t == TACK_F32 ? "tack.lgamma.f32" : "tack.lgamma.f64", ft, &fn, &sb, &sf)) {
        LLVMPositionBuilderAtEnd(g->b, block(g, "entry"));
        LLVMValueRef args[2] = {LLVMGetParam(fn, 0), LLVMBuildAlloca(g->b, g->i32, "sign")};
        LLVMBuildRet(g->b, c_call(g, t == TACK_F32 ? "lgammaf_r" : "lgamma_r", T, args, 2));
        end_helper(g, sb, sf);
    }
    return LLVMBuildCall2(g->b, ft, fn, &x, 1, "");
}

/* |v| as the unsigned value of the same width (|INT_MIN| included). */
static LLVMValueRef magnitude(gen *g, ir_type t, LLVMValueRef v) {
    if (!ir_type_is_signed(t)) return v;
    LLVMValueRef zero = cint(g, t, 0);
    return LLVMBuildSelect(g->b, LLVMBuildICmp(g->b, LLVMIntSLT, v, zero, ""),
                           LLVMBuildSub(g->b, zero, v, ""), v, "");
}

/* gcd by Euclid on the magnitudes, emitted once per type; lcm from it
 * (wrapping on overflow, as NumPy's). */
static LLVMValueRef gcd_lcm(gen *g, ir_type t, LLVMValueRef a, LLVMValueRef b, int lcm) {
    char name[32];
    snprintf(name, sizeof name, "tack.gcd.%s", tack_dtype_name(t));
    LLVMTypeRef T = ty(g, t);
    LLVMTypeRef at[2] = {T, T};
    LLVMTypeRef ft = LLVMFunctionType(T, at, 2, 0);
    LLVMValueRef fn;
    LLVMBuilderRef sb;
    LLVMValueRef sf;
    if (begin_helper(g, name, ft, &fn, &sb, &sf)) {
        LLVMBasicBlockRef entry = block(g, "entry"), head = block(g, "head"),
                          step = block(g, "step"), done = block(g, "done");
        LLVMPositionBuilderAtEnd(g->b, entry);
        LLVMValueRef ua = magnitude(g, t, LLVMGetParam(fn, 0));
        LLVMValueRef ub = magnitude(g, t, LLVMGetParam(fn, 1));
        LLVMBuildBr(g->b, head);
        LLVMPositionBuilderAtEnd(g->b, head);
        LLVMValueRef x = LLVMBuildPhi(g->b, T, "x"), y = LLVMBuildPhi(g->b, T, "y");
        LLVMBuildCondBr(g->b, LLVMBuildICmp(g->b, LLVMIntEQ, y, cint(g, t, 0), ""), done, step);
        LLVMPositionBuilderAtEnd(g->b, step);
        LLVMValueRef r = LLVMBuildURem(g->b, x, y, "");
        LLVMBuildBr(g->b, head);
        LLVMValueRef xs[2] = {ua, y}, ys[2] = {ub, r};
        LLVMBasicBlockRef from[2] = {entry, step};
        LLVMAddIncoming(x, xs, from, 2);
        LLVMAddIncoming(y, ys, from, 2);
        LLVMPositionBuilderAtEnd(g->b, done);
        LLVMBuildRet(g->b, x);
        end_helper(g, sb, sf);
    }
    LLVMValueRef args[2] = {a, b};
    LLVMValueRef d = LLVMBuildCall2(g->b, ft, fn, args, 2, "");
    if (!lcm) return d;
    LLVMValueRef zero = LLVMBuildICmp(g->b, LLVMIntEQ, d, cint(g, t, 0), "");
    LLVMValueRef div = LLVMBuildSelect(g->b, zero, cint(g, t, 1), d, "");
    LLVMValueRef m = LLVMBuildMul(g->b, LLVMBuildUDiv(g->b, magnitude(g, t, a), div, ""),
                                  magnitude(g, t, b), "");
    return LLVMBuildSelect(g->b, zero, cint(g, t, 0), m, "");
}

/* ldexp(x, n) for n of any integer type: n clamped to int's range first,
 * as NumPy does (the result, 0 or inf, is the same). */
static LLVMValueRef ldexp_call(gen *g, ir_type t, LLVMValueRef x, LLVMValueRef n, ir_type nt) {
    LLVMValueRef big = LLVMConstInt(g->i64, INT32_MAX, 0);
    LLVMValueRef wide;
    if (nt == TACK_U64) {
        wide = LLVMBuildSelect(g->b, LLVMBuildICmp(g->b, LLVMIntUGT, n, big, ""), big, n, "");
    } else {
        LLVMValueRef small = LLVMConstInt(g->i64, (unsigned long long)(int64_t)INT32_MIN, 1);
        wide = convert(g, n, nt, TACK_I64);
        wide = LLVMBuildSelect(g->b, LLVMBuildICmp(g->b, LLVMIntSGT, wide, big, ""), big, wide, "");
        wide = LLVMBuildSelect(g->b, LLVMBuildICmp(g->b, LLVMIntSLT, wide, small, ""), small, wide, "");
    }
    LLVMValueRef args[2] = {x, LLVMBuildTrunc(g->b, wide, g->i32, "")};
    return c_call(g, t == TACK_F32 ? "ldexpf" : "ldexp", ty(g, t), args, 2);
}

/* frexp's exponent: ilogb(x) + 1, and 0 for 0, inf and NaN (Python's). */
static LLVMValueRef frexp_exponent(gen *g, ir_type t, LLVMValueRef x) {
    LLVMValueRef e = c_call(g, t == TACK_F32 ? "ilogbf" : "ilogb", g->i32, &x, 1);
    e = LLVMBuildAdd(g->b, e, LLVMConstInt(g->i32, 1, 0), "");
    LLVMValueRef mag = intrinsic(g, "llvm.fabs", t, &x, 1);
    LLVMValueRef finite = LLVMBuildFCmp(g->b, LLVMRealOLT, mag, LLVMConstReal(ty(g, t), __builtin_inf()), "");
    LLVMValueRef nonzero = LLVMBuildFCmp(g->b, LLVMRealONE, x, LLVMConstReal(ty(g, t), 0), "");
    return LLVMBuildSelect(g->b, LLVMBuildAnd(g->b, finite, nonzero, ""), e,
                           LLVMConstInt(g->i32, 0, 0), "");
}

static LLVMValueRef emit_call(gen *g, const ir_expr *e) {
    ir_type t = e->type, at = e->args[0]->type;
    LLVMValueRef a[3];
    for (int i = 0; i < e->nargs && i < 3; i++) a[i] = emit(g, e->args[i]);
    switch (e->fn) {
    case INTR_SQRT: return intrinsic(g, "llvm.sqrt", t, a, 1);
    case INTR_EXP: return intrinsic(g, "llvm.exp", t, a, 1);
    case INTR_LOG: return intrinsic(g, "llvm.log", t, a, 1);
    case INTR_LOG2: return intrinsic(g, "llvm.log2", t, a, 1);
    case INTR_LOG10: return intrinsic(g, "llvm.log10", t, a, 1);
    case INTR_SIN: return intrinsic(g, "llvm.sin", t, a, 1);
    case INTR_COS: return intrinsic(g, "llvm.cos", t, a, 1);
    case INTR_FLOOR: return intrinsic(g, "llvm.floor", t, a, 1);
    case INTR_CEIL: return intrinsic(g, "llvm.ceil", t, a, 1);
    case INTR_TRUNC: return intrinsic(g, "llvm.trunc", t, a, 1);
    case INTR_FABS: return intrinsic(g, "llvm.fabs", t, a, 1);
    case INTR_POW: return float_pow(g, t, a[0], a[1]);
    case INTR_COPYSIGN: return intrinsic(g, "llvm.copysign", t, a, 2);
    case INTR_FMOD: return LLVMBuildFRem(g->b, a[0], a[1], "");
    case INTR_TAN: return libm(g, "tan", t, a, 1);
    case INTR_ASIN: return libm(g, "asin", t, a, 1);
    case INTR_ACOS: return libm(g, "acos", t, a, 1);
    case INTR_ATAN: return libm(g, "atan", t, a, 1);
    case INTR_SINH: return libm(g, "sinh", t, a, 1);
    case INTR_COSH: return libm(g, "cosh", t, a, 1);
    case INTR_TANH: return libm(g, "tanh", t, a, 1);
    case INTR_ATAN2: return libm(g, "atan2", t, a, 2);
    case INTR_HYPOT: return libm(g, "hypot", t, a, 2);
    case INTR_ASINH: return libm(g, "asinh", t, a, 1);
    case INTR_ACOSH: return libm(g, "acosh", t, a, 1);
    case INTR_ATANH: return libm(g, "atanh", t, a, 1);
    case INTR_EXP2: return libm(g, "exp2", t, a, 1);
    case INTR_EXPM1: return libm(g, "expm1", t, a, 1);
    case INTR_LOG1P: return libm(g, "log1p", t, a, 1);
    case INTR_CBRT: return libm(g, "cbrt", t, a, 1);
    case INTR_ERF: return libm(g, "erf", t, a, 1);
    case INTR_ERFC: return libm(g, "erfc", t, a, 1);
    case INTR_GAMMA: return libm(g, "tgamma", t, a, 1);
    case INTR_LGAMMA: return lgamma_call(g, t, a[0]);
    case INTR_REMAINDER: return libm(g, "remainder", t, a, 2);
    case INTR_NEXTAFTER: return libm(g, "nextafter", t, a, 2);
    case INTR_FMA: return intrinsic(g, "llvm.fma", t, a, 3);
    case INTR_DEGREES:
    case INTR_RADIANS:
        return LLVMBuildFMul(g->b, a[0], LLVMConstReal(ty(g, t), ir_angle_factor(e->fn, t)), "");
    case INTR_LDEXP: return ldexp_call(g, t, a[0], a[1], e->args[1]->type);
    case INTR_FREXP_EXP: return frexp_exponent(g, at, a[0]);
    case INTR_GCD:
    case INTR_LCM: return gcd_lcm(g, t, a[0], a[1], e->fn == INTR_LCM);
    case INTR_ISNAN:
        if (!ir_type_is_float(at)) return LLVMConstInt(g->i1, 0, 0);
        return LLVMBuildFCmp(g->b, LLVMRealUNO, a[0], a[0], "");
    case INTR_ISINF:
    case INTR_ISFINITE: {
        if (!ir_type_is_float(at)) return LLVMConstInt(g->i1, e->fn == INTR_ISFINITE, 0);
        LLVMValueRef mag = intrinsic(g, "llvm.fabs", at, a, 1);
        LLVMValueRef inf = LLVMConstReal(ty(g, at), __builtin_inf());
        return LLVMBuildFCmp(g->b, e->fn == INTR_ISINF ? LLVMRealOEQ : LLVMRealOLT, mag, inf, "");
    }
    case INTR_ABS:
        if (ir_type_is_float(t)) return intrinsic(g, "llvm.fabs", t, a, 1);
        if (!ir_type_is_signed(t)) return a[0];
        return LLVMBuildSelect(g->b, LLVMBuildICmp(g->b, LLVMIntSLT, a[0], cint(g, t, 0), ""),
                               LLVMBuildSub(g->b, cint(g, t, 0), a[0], ""), a[0], "");
    case INTR_MIN:
    case INTR_MAX: {
        /* Python's min/max: the first argument unless the second is
         * strictly smaller (larger); NaN handling follows from that. */
        LLVMValueRef better = compare(g, t, e->fn == INTR_MIN ? OP_LT : OP_GT, a[1], a[0]);
        return LLVMBuildSelect(g->b, better, a[1], a[0], "");
    }
    case INTR_ROUND:
        if (!ir_type_is_float(at)) return a[0];
        return convert(g, intrinsic(g, "llvm.roundeven", at, a, 1), at, t);
    case INTR_F16:
        return LLVMBuildFPExt(g->b, to_half(g, a[0], at), g->f32, "");
    default:
        return NULL;
    }
}

static LLVMValueRef emit(gen *g, const ir_expr *e) {
    switch (e->kind) {
    case IR_CONST:
        if (ir_type_is_float(e->type)) return LLVMConstReal(ty(g, e->type), e->f);
        return LLVMConstInt(ty(g, e->type), (unsigned long long)e->i, 1);
    case IR_PARAM:
        return g->params[e->index];
    case IR_LOCAL:
        return LLVMBuildLoad2(g->b, ty(g, e->type), g->locals[e->index], "");
    case IR_DIM: {
        LLVMValueRef idx = LLVMConstInt(g->i64, e->index * TACK_MAX_NDIM + e->dim, 0);
        LLVMValueRef p = LLVMBuildGEP2(g->b, g->i64, g->dims, &idx, 1, "");
        return LLVMBuildLoad2(g->b, g->i64, p, "");
    }
    case IR_SLOAD:
        return LLVMBuildLoad2(g->b, ty(g, e->type), scratch_ptr(g, e->index, emit(g, e->args[0])), "");
    case IR_LOAD:
        return emit_load(g, e);
    case IR_BINOP:
        return emit_binop(g, e);
    case IR_UNOP: {
        LLVMValueRef a = emit(g, e->a);
        switch (e->op) {
        case OP_NEG:
            return ir_type_is_float(e->type) ? LLVMBuildFNeg(g->b, a, "")
                                             : LLVMBuildSub(g->b, cint(g, e->type, 0), a, "");
        case OP_INVERT:
        case OP_NOT: return LLVMBuildXor(g->b, a, LLVMConstAllOnes(ty(g, e->type)), "");
        default: return a;
        }
    }
    case IR_ANDOR: {
        LLVMValueRef a = emit(g, e->a);
        LLVMValueRef truthy = convert(g, a, e->a->type, TACK_BOOL);
        if (e->op == OP_AND) return emit_choice(g, truthy, e->b, NULL, NULL, a);
        return emit_choice(g, truthy, NULL, a, e->b, NULL);
    }
    case IR_SELECT:
        return emit_choice(g, emit(g, e->cond), e->a, NULL, e->b, NULL);
    case IR_CAST:
        return convert(g, emit(g, e->a), e->a->type, e->type);
    case IR_CALL:
        return emit_call(g, e);
    case IR_ATOMIC:
        return emit_atomic(g, e);
    case IR_VECTOR: /* never survives lowering */
        return NULL;
    case IR_INLINE: {
        LLVMBasicBlockRef exit = block(g, "inline_end");
        g->inlines[g->ninlines++] = (inline_target){e->inline_id, exit};
        emit_block(g, e->body);
        g->ninlines--;
        if (!LLVMGetBasicBlockTerminator(LLVMGetInsertBlock(g->b))) LLVMBuildBr(g->b, exit);
        LLVMPositionBuilderAtEnd(g->b, exit);
        if (e->index < 0) return NULL;
        return LLVMBuildLoad2(g->b, ty(g, e->type), g->locals[e->index], "");
    }
    }
    return NULL;
}

/* ---- statements ---- */

/* An alloca in the function's entry block: one slot array per statement,
 * not one per iteration. */
static LLVMValueRef entry_alloca(gen *g, LLVMTypeRef t, const char *name) {
    LLVMBasicBlockRef here = LLVMGetInsertBlock(g->b);
    LLVMBasicBlockRef entry = LLVMGetEntryBasicBlock(LLVMGetBasicBlockParent(here));
    LLVMValueRef first = LLVMGetFirstInstruction(entry);
    if (first) LLVMPositionBuilderBefore(g->b, first);
    else LLVMPositionBuilderAtEnd(g->b, entry);
    LLVMValueRef buf = LLVMBuildAlloca(g->b, t, name);
    LLVMPositionBuilderAtEnd(g->b, here);
    return buf;
}

/* A failed bounds check of debug mode calls tack_cpu_bounds_fail
 * (bounds_rt.c, cold) with the launch index, the site and the indices.
 * Only a call: no lock loop inside the kernel's loops. */
static void emit_bounds_fail(gen *g, const ir_stmt *s) {
    const ir_func *f = g->f;
    LLVMTypeRef at = LLVMArrayType(g->i64, TACK_MAX_NDIM);
    LLVMValueRef buf = entry_alloca(g, at, "bounds.values");
    int n = s->nindices < TACK_MAX_NDIM ? s->nindices : TACK_MAX_NDIM;
    for (int k = 0; k < n; k++) {
        LLVMValueRef idx[2] = {LLVMConstInt(g->i64, 0, 0), LLVMConstInt(g->i64, (unsigned)k, 0)};
        LLVMBuildStore(g->b, convert(g, emit(g, s->indices[k]), s->indices[k]->type, TACK_I64),
                       LLVMBuildInBoundsGEP2(g->b, at, buf, idx, 2, ""));
    }
    LLVMTypeRef i64p = LLVMPointerType(g->i64, 0);
    LLVMTypeRef ps[5] = {i64p, g->i64, g->i64, g->i64, i64p};
    LLVMTypeRef ft = LLVMFunctionType(g->vd, ps, 5, 0);
    LLVMValueRef fn = LLVMGetNamedFunction(g->mod, "tack_cpu_bounds_fail");
    if (!fn) {
        fn = LLVMAddFunction(g->mod, "tack_cpu_bounds_fail", ft);
        unsigned cold = LLVMGetEnumAttributeKindForName("cold", 4);
        LLVMAddAttributeAtIndex(fn, LLVMAttributeFunctionIndex, LLVMCreateEnumAttribute(g->ctx, cold, 0));
    }
    LLVMValueRef args[5] = {LLVMBuildBitCast(g->b, g->params[f->debug_errors], i64p, ""),
                            LLVMBuildLoad2(g->b, g->i64, g->locals[f->loop_var], ""),
                            LLVMConstInt(g->i64, (unsigned)s->index, 0),
                            LLVMConstInt(g->i64, (unsigned)n, 0), LLVMBuildBitCast(g->b, buf, i64p, "")};
    LLVMBuildCall2(g->b, ft, fn, args, 5, "");
}

/* After the chunk's last iteration: the per-access checks' flag (ir.h)
 * goes to the errors array in one atomic max.  Unconditional: a branch on
 * the flag would let LLVM thread the loop on it, which no longer
 * vectorizes. */
static void record_bounds_flag(gen *g) {
    const ir_func *f = g->f;
    for (int l = 0; l < f->nlocals && f->debug_errors >= 0; l++) {
        int site = ir_bounds_flag_site(f, l);
        if (site < 0) continue;
        LLVMValueRef count = LLVMBuildLoad2(g->b, ty(g, f->locals[l].type), g->locals[l], "");
        LLVMValueRef zero = LLVMConstNull(ty(g, f->locals[l].type));
        LLVMValueRef flag = LLVMBuildSelect(g->b, LLVMBuildICmp(g->b, LLVMIntNE, count, zero, ""),
                                            LLVMConstInt(g->i64, (unsigned)site + 1, 0),
                                            LLVMConstInt(g->i64, 0, 0), "");
        LLVMValueRef at = LLVMConstInt(g->i64, DEBUG_ERR_FLAG, 0);
        LLVMBuildAtomicRMW(g->b, LLVMAtomicRMWBinOpUMax,
                           LLVMBuildGEP2(g->b, g->i64, g->params[f->debug_errors], &at, 1, ""),
                           flag, LLVMAtomicOrderingMonotonic, 0);
    }
}

/* Number of iterations of range(start, stop, step); 0 for a zero step. */
static LLVMValueRef trip_count(gen *g, LLVMValueRef start, LLVMValueRef stop, LLVMValueRef step) {
    LLVMValueRef zero = LLVMConstInt(g->i64, 0, 0), one = LLVMConstInt(g->i64, 1, 0);
    LLVMValueRef pos = LLVMBuildICmp(g->b, LLVMIntSGT, step, zero, "");
    LLVMValueRef lo = LLVMBuildSelect(g->b, pos, start, stop, "");
    LLVMValueRef hi = LLVMBuildSelect(g->b, pos, stop, start, "");
    LLVMValueRef mag = LLVMBuildSelect(g->b, pos, step, LLVMBuildSub(g->b, zero, step, ""), "");
    LLVMValueRef step_zero = LLVMBuildICmp(g->b, LLVMIntEQ, step, zero, "");
    mag = LLVMBuildSelect(g->b, step_zero, one, mag, "");
    LLVMValueRef span = LLVMBuildSub(g->b, LLVMBuildSub(g->b, hi, lo, ""), one, "");
    LLVMValueRef n = LLVMBuildAdd(g->b, LLVMBuildUDiv(g->b, span, mag, ""), one, "");
    LLVMValueRef any = LLVMBuildAnd(g->b, LLVMBuildICmp(g->b, LLVMIntSGT, hi, lo, ""),
                                    LLVMBuildNot(g->b, step_zero, ""), "");
    return LLVMBuildSelect(g->b, any, n, zero, "");
}

typedef void (*body_fn)(gen *g, const void *ctx);

static void body_block(gen *g, const void *b) { emit_block(g, b); }

/* A counted loop k = first .. end-1 with var = start + k * step, the shape
 * the vectorizer recognizes.  body(g, ctx) emits the loop body. */
static void counted_loop(gen *g, LLVMValueRef first, LLVMValueRef end, int var,
                         LLVMValueRef start, LLVMValueRef step, body_fn body, const void *ctx) {
    LLVMBasicBlockRef pre = LLVMGetInsertBlock(g->b);
    LLVMBasicBlockRef head = block(g, "loop"), bodyb = block(g, "body"), latch = block(g, "next"),
                      exit = block(g, "exit");
    LLVMValueRef any = LLVMBuildICmp(g->b, LLVMIntSLT, first, end, "");
    LLVMBuildCondBr(g->b, any, head, exit);
    LLVMPositionBuilderAtEnd(g->b, head);
    LLVMValueRef k = LLVMBuildPhi(g->b, g->i64, "k");
    int lanes = g->want_lane; /* the launch's loop over a block of lanes */
    if (lanes) {
        g->lane = k;
        g->want_lane = 0;
    }
    LLVMBuildBr(g->b, bodyb);
    LLVMPositionBuilderAtEnd(g->b, bodyb);
    LLVMValueRef v = LLVMBuildAdd(g->b, start, LLVMBuildMul(g->b, k, step, ""), "");
    LLVMBuildStore(g->b, v, g->locals[var]);
    if (lanes) lanes_access(g, 0);
    g->loops[g->nloops++] = (loop_targets){latch, exit};
    body(g, ctx);
    g->nloops--;
    if (!LLVMGetBasicBlockTerminator(LLVMGetInsertBlock(g->b))) LLVMBuildBr(g->b, latch);
    LLVMPositionBuilderAtEnd(g->b, latch);
    if (lanes) lanes_access(g, 1);
    LLVMValueRef k2 = LLVMBuildAdd(g->b, k, LLVMConstInt(g->i64, 1, 0), "");
    LLVMValueRef more = LLVMBuildICmp(g->b, LLVMIntSLT, k2, end, "");
    LLVMValueRef br = LLVMBuildCondBr(g->b, more, head, exit);
    if (lanes == 2) scalar_loop(g, br);
    LLVMValueRef vals[2] = {first, k2};
    LLVMBasicBlockRef froms[2] = {pre, latch};
    LLVMAddIncoming(k, vals, froms, 2);
    LLVMPositionBuilderAtEnd(g->b, exit);
}

/* After break/continue the rest of a block is unreachable: emit it into a
 * fresh block that nothing branches to. */
static void ensure_open_block(gen *g) {
    if (LLVMGetBasicBlockTerminator(LLVMGetInsertBlock(g->b)))
        LLVMPositionBuilderAtEnd(g->b, block(g, "dead"));
}

/* print(): the values go to a stack buffer of 64-bit slots (a float as
 * the bits of its f64 value, a bool as 0 / 1) and one call of
 * tack_cpu_print (print_rt.c) formats and writes the whole line; the launch
 * flushes stdout (backend_cpu.c).  Not a variadic printf: LLVM's SLP
 * vectorizer took minutes on a printf of 256 float arguments (issue 26). */
static void emit_print(gen *g, const ir_stmt *s) {
    char *fmt = backend_print_format(s, "%lld", "%llu", NULL);
    if (!fmt) {
        g->nomem = 1;
        return;
    }
    LLVMTypeRef i64 = LLVMInt64TypeInContext(LLVMGetModuleContext(g->mod));
    unsigned n = s->nindices ? (unsigned)s->nindices : 1;
    LLVMTypeRef at = LLVMArrayType(i64, n);
    LLVMValueRef buf = entry_alloca(g, at, "print.values");
    LLVMValueRef zero = LLVMConstInt(i64, 0, 0);
    for (int i = 0; i < s->nindices; i++) {
        ir_type t = s->indices[i]->type;
        LLVMValueRef v = emit(g, s->indices[i]);
        if (t == TACK_BOOL) v = LLVMBuildZExt(g->b, v, i64, "");
        else if (ir_type_is_float(t))
            v = LLVMBuildBitCast(g->b, t == TACK_F32 ? LLVMBuildFPExt(g->b, v, g->f64, "") : v, i64, "");
        else v = convert(g, v, t, ir_type_is_signed(t) ? TACK_I64 : TACK_U64);
        LLVMValueRef idx[2] = {zero, LLVMConstInt(i64, (unsigned long long)i, 0)};
        LLVMBuildStore(g->b, v, LLVMBuildInBoundsGEP2(g->b, at, buf, idx, 2, ""));
    }
    LLVMTypeRef i8p = LLVMPointerType(g->i8, 0), i64p = LLVMPointerType(i64, 0);
    LLVMTypeRef ps[2] = {i8p, i64p};
    LLVMTypeRef ft = LLVMFunctionType(LLVMVoidTypeInContext(LLVMGetModuleContext(g->mod)), ps, 2, 0);
    LLVMValueRef fn = LLVMGetNamedFunction(g->mod, "tack_cpu_print");
    if (!fn) fn = LLVMAddFunction(g->mod, "tack_cpu_print", ft);
    LLVMValueRef args[2] = {LLVMBuildGlobalStringPtr(g->b, fmt, "print.format"),
                            LLVMBuildBitCast(g->b, buf, i64p, "")};
    LLVMBuildCall2(g->b, ft, fn, args, 2, "");
    free(fmt);
}

static void emit_stmt(gen *g, const ir_stmt *s) {
    ensure_open_block(g);
    switch (s->kind) {
    case IR_ASSIGN:
        LLVMBuildStore(g->b, emit(g, s->value), g->locals[s->index]);
        break;
    case IR_STORE: {
        ir_type t = g->f->params[s->index].type;
        LLVMValueRef v = emit(g, s->value);
        LLVMValueRef idx = emit(g, s->indices[0]);
        if (t == TACK_BOOL) v = LLVMBuildZExt(g->b, v, g->i8, "");
        if (t == TACK_F16) v = to_half(g, v, s->value->type);
        LLVMValueRef st = LLVMBuildStore(g->b, v, element_ptr(g, s->index, idx));
        LLVMSetAlignment(st, (unsigned)tack_dtype_size(t));
        break;
    }
    case IR_IF: {
        LLVMBasicBlockRef bt = block(g, "if"), be = block(g, "else"), join = block(g, "endif");
        LLVMBuildCondBr(g->b, emit(g, s->value), bt, be);
        LLVMPositionBuilderAtEnd(g->b, bt);
        emit_block(g, &s->body);
        if (!LLVMGetBasicBlockTerminator(LLVMGetInsertBlock(g->b))) LLVMBuildBr(g->b, join);
        LLVMPositionBuilderAtEnd(g->b, be);
        emit_block(g, &s->orelse);
        if (!LLVMGetBasicBlockTerminator(LLVMGetInsertBlock(g->b))) LLVMBuildBr(g->b, join);
        LLVMPositionBuilderAtEnd(g->b, join);
        break;
    }
    case IR_WHILE: {
        LLVMBasicBlockRef head = block(g, "while"), body = block(g, "wbody"), exit = block(g, "wend");
        LLVMBuildBr(g->b, head);
        LLVMPositionBuilderAtEnd(g->b, head);
        LLVMBuildCondBr(g->b, emit(g, s->value), body, exit);
        LLVMPositionBuilderAtEnd(g->b, body);
        g->loops[g->nloops++] = (loop_targets){head, exit};
        emit_block(g, &s->body);
        g->nloops--;
        if (!LLVMGetBasicBlockTerminator(LLVMGetInsertBlock(g->b))) LLVMBuildBr(g->b, head);
        LLVMPositionBuilderAtEnd(g->b, exit);
        break;
    }
    case IR_FOR: {
        LLVMValueRef start = emit(g, s->start), stop = emit(g, s->stop), step = emit(g, s->step);
        LLVMValueRef n = trip_count(g, start, stop, step);
        counted_loop(g, LLVMConstInt(g->i64, 0, 0), n, s->index, start, step, body_block, &s->body);
        break;
    }
    case IR_BREAK:
        LLVMBuildBr(g->b, g->loops[g->nloops - 1].brk);
        break;
    case IR_CONTINUE:
        LLVMBuildBr(g->b, g->loops[g->nloops - 1].cont);
        break;
    case IR_EVAL:
        if (s->value->kind == IR_ATOMIC && g->interior && g->offs[s->value->index].on)
            emit_plain_update(g, s->value);
        else if (s->value->kind == IR_ATOMIC && g->priv && g->priv[s->value->index].family)
            emit_private_atomic(g, s->value);
        else
            emit(g, s->value);
        break;
    case IR_BOUNDS_FAIL:
        emit_bounds_fail(g, s);
        break;
    case IR_SSTORE: {
        LLVMValueRef v = emit(g, s->value);
        LLVMBuildStore(g->b, v, scratch_ptr(g, s->index, emit(g, s->indices[0])));
        break;
    }
    case IR_BARRIER: /* never here: pass_workgroup_loops removed them */
        break;
    case IR_PRINT:
        emit_print(g, s);
        break;
    case IR_EXIT:
        for (int i = g->ninlines - 1; i >= 0; i--)
            if (g->inlines[i].id == s->index) {
                LLVMBuildBr(g->b, g->inlines[i].exit);
                break;
            }
        break;
    }
}

static void emit_block(gen *g, const ir_block *b) {
    for (int i = 0; i < b->n; i++) emit_stmt(g, b->stmts[i]);
}

/* Counts loops and inlined calls anywhere in the IR: a bound on how deeply
 * they can nest, which sizes the generator's stacks. */
static int count_nesting_block(const ir_block *b);

static int count_nesting_expr(const ir_expr *e) {
    if (!e) return 0;
    int n = count_nesting_expr(e->a) + count_nesting_expr(e->b) + count_nesting_expr(e->cond);
    for (int i = 0; i < e->nargs; i++) n += count_nesting_expr(e->args[i]);
    if (e->body) n += 1 + count_nesting_block(e->body);
    return n;
}

static int count_nesting_block(const ir_block *b) {
    int n = 0;
    for (int i = 0; i < b->n; i++) {
        const ir_stmt *s = b->stmts[i];
        n += s->kind == IR_FOR || s->kind == IR_WHILE;
        n += count_nesting_expr(s->value) + count_nesting_expr(s->start) +
             count_nesting_expr(s->stop) + count_nesting_expr(s->step);
        for (int k = 0; k < s->nindices; k++) n += count_nesting_expr(s->indices[k]);
        n += count_nesting_block(&s->body) + count_nesting_block(&s->orelse);
    }
    return n;
}

/* ---- the three functions ---- */

static LLVMTypeRef param_type(gen *g, const ir_param *p) {
    if (p->role == ROLE_ARRAY) return LLVMPointerType(mem_ty(g, p->type), 0);
    if (p->role == ROLE_SCALAR) return ty(g, p->type);
    return g->i64; /* unused: passed but never read */
}

static void alloc_locals(gen *g) {
    for (int i = 0; i < g->f->nlocals; i++) {
        LLVMTypeRef t = ty(g, g->f->locals[i].type);
        g->locals[i] = LLVMBuildAlloca(g->b, t, g->f->locals[i].name);
        /* Zero-initialized so a read before any assignment is defined. */
        LLVMBuildStore(g->b, LLVMConstNull(t), g->locals[i]);
    }
}

/* Loads parameter p from the slots array. */
static LLVMValueRef load_slot(gen *g, LLVMValueRef slots, int p) {
    const ir_param *prm = &g->f->params[p];
    LLVMValueRef idx = LLVMConstInt(g->i64, p, 0);
    LLVMValueRef addr = LLVMBuildGEP2(g->b, g->i64, slots, &idx, 1, "");
    LLVMTypeRef t = param_type(g, prm);
    if (prm->role == ROLE_ARRAY) {
        LLVMValueRef bits = LLVMBuildLoad2(g->b, g->i64, addr, prm->name);
        return LLVMBuildIntToPtr(g->b, bits, t, "");
    }
    if (prm->role == ROLE_SCALAR && prm->type == TACK_BOOL) {
        LLVMValueRef byte = LLVMBuildLoad2(g->b, g->i8, LLVMBuildBitCast(g->b, addr,
                                           LLVMPointerType(g->i8, 0), ""), prm->name);
        return LLVMBuildICmp(g->b, LLVMIntNE, byte, LLVMConstInt(g->i8, 0, 0), "");
    }
    LLVMValueRef typed = LLVMBuildBitCast(g->b, addr, LLVMPointerType(t, 0), "");
    return LLVMBuildLoad2(g->b, t, typed, prm->name);
}

/* The inner ndindex dimensions, then the body; ctx points at the level. */
typedef struct launch_level {
    int level;
    LLVMValueRef extents[2];
} launch_level;

static void launch_body(gen *g, const void *ctx) {
    const launch_level *lv = ctx;
    if (lv->level == g->f->ninner) {
        emit_block(g, &g->f->body);
        return;
    }
    launch_level next = *lv;
    next.level++;
    LLVMValueRef zero = LLVMConstInt(g->i64, 0, 0), one = LLVMConstInt(g->i64, 1, 0);
    counted_loop(g, zero, lv->extents[lv->level], g->f->inner_var[lv->level], zero, one,
                 launch_body, &next);
}

/* A launch with reduction lanes (reduction_lanes.c): the chunk's
 * iterations first..end-1 as whole blocks of CPU_LANE_BLOCK, each a loop
 * of constant trip count whose counter is the lane number (LLVM unrolls
 * it and vectorizes the lanes' updates), then the remainder, counted from
 * 0 again.  Iteration j of the chunk thus updates lane j mod K of every
 * reduction (K divides the block).  The body is emitted twice. */
static void lane_loops(gen *g, LLVMValueRef first, LLVMValueRef end, LLVMValueRef start,
                       LLVMValueRef step, const launch_level *top) {
    LLVMValueRef zero = LLVMConstInt(g->i64, 0, 0), blk = LLVMConstInt(g->i64, CPU_LANE_BLOCK, 0);
    LLVMValueRef n = LLVMBuildSub(g->b, end, first, "");
    n = LLVMBuildSelect(g->b, LLVMBuildICmp(g->b, LLVMIntSLT, n, zero, ""), zero, n, "");
    LLVMValueRef nblocks = LLVMBuildUDiv(g->b, n, blk, "blocks");
    LLVMBasicBlockRef pre = LLVMGetInsertBlock(g->b), head = block(g, "lanes"),
                      latch = block(g, "lanes_next"), rest = block(g, "lanes_rest");
    LLVMBuildCondBr(g->b, LLVMBuildICmp(g->b, LLVMIntNE, nblocks, zero, ""), head, rest);
    LLVMPositionBuilderAtEnd(g->b, head);
    LLVMValueRef bi = LLVMBuildPhi(g->b, g->i64, "block");
    /* This block's first launch value: start + (first + 32 bi) * step. */
    LLVMValueRef k0 = LLVMBuildAdd(g->b, first, LLVMBuildMul(g->b, bi, blk, ""), "");
    LLVMValueRef s0 = LLVMBuildAdd(g->b, start, LLVMBuildMul(g->b, k0, step, ""), "");
    g->want_lane = 1;
    counted_loop(g, zero, blk, g->f->loop_var, s0, step, launch_body, top);
    LLVMBuildBr(g->b, latch);
    LLVMPositionBuilderAtEnd(g->b, latch);
    LLVMValueRef bi2 = LLVMBuildAdd(g->b, bi, LLVMConstInt(g->i64, 1, 0), "");
    LLVMBuildCondBr(g->b, LLVMBuildICmp(g->b, LLVMIntULT, bi2, nblocks, ""), head, rest);
    LLVMValueRef vals[2] = {zero, bi2};
    LLVMBasicBlockRef froms[2] = {pre, latch};
    LLVMAddIncoming(bi, vals, froms, 2);
    LLVMPositionBuilderAtEnd(g->b, rest);
    LLVMValueRef done = LLVMBuildMul(g->b, nblocks, blk, "");
    LLVMValueRef k1 = LLVMBuildAdd(g->b, first, done, "");
    LLVMValueRef s1 = LLVMBuildAdd(g->b, start, LLVMBuildMul(g->b, k1, step, ""), "");
    g->want_lane = 2; /* the remainder: a scalar loop */
    counted_loop(g, zero, LLVMBuildSub(g->b, n, done, ""), g->f->loop_var, s1, step, launch_body, top);
}

/* A launch with atomic updates at offsets of the launch variable
 * (cpu_offset_atomics): the chunk's iterations first..end-1 as three
 * loops, the middle one's updates plain.  Iteration k's element a * i + c
 * is also reached by iterations k' with |k' - k| <= K = (cmax - cmin) /
 * |a * step|, all in this chunk when first + K <= k < end - K.  The body
 * is emitted three times. */
static void offset_loops(gen *g, LLVMValueRef first, LLVMValueRef end, LLVMValueRef start,
                         LLVMValueRef step, const launch_level *top) {
    LLVMValueRef zero = LLVMConstInt(g->i64, 0, 0), one = LLVMConstInt(g->i64, 1, 0);
    LLVMValueRef mag = LLVMBuildSelect(g->b, LLVMBuildICmp(g->b, LLVMIntSLT, step, zero, ""),
                                       LLVMBuildSub(g->b, zero, step, ""), step, "");
    mag = LLVMBuildSelect(g->b, LLVMBuildICmp(g->b, LLVMIntEQ, mag, zero, ""), one, mag, "");
    LLVMValueRef K = zero;
    for (int p = 0; p < g->f->nparams; p++) {
        const cpu_offset_atomic *o = &g->offs[p];
        if (!o->on) continue;
        uint64_t per = (uint64_t)(o->cmax - o->cmin) / (uint64_t)(o->a < 0 ? -o->a : o->a);
        LLVMValueRef kp = LLVMBuildUDiv(g->b, LLVMConstInt(g->i64, per, 0), mag, "");
        K = LLVMBuildSelect(g->b, LLVMBuildICmp(g->b, LLVMIntUGT, kp, K, ""), kp, K, "");
    }
    LLVMValueRef lo = LLVMBuildAdd(g->b, first, K, "");
    lo = LLVMBuildSelect(g->b, LLVMBuildICmp(g->b, LLVMIntSGT, lo, end, ""), end, lo, "edge_lo");
    LLVMValueRef hi = LLVMBuildSub(g->b, end, K, "");
    hi = LLVMBuildSelect(g->b, LLVMBuildICmp(g->b, LLVMIntSLT, hi, lo, ""), lo, hi, "edge_hi");
    counted_loop(g, first, lo, g->f->loop_var, start, step, launch_body, top);
    g->interior = 1;
    counted_loop(g, lo, hi, g->f->loop_var, start, step, launch_body, top);
    g->interior = 0;
    counted_loop(g, hi, end, g->f->loop_var, start, step, launch_body, top);
}

/* impl(params..., start, step, e1, e2, lo, hi, dims, scratch) */
#define IMPL_EXTRA 8

/* cpu.h: in order, each array stays on the stack while the stack's share
 * stays within CPU_STACK_SCRATCH (a thread's stack may be small: a Python
 * thread's, or a worker's); the rest go to the per-thread area. */
int64_t cpu_scratch_layout(const ir_func *f, int64_t *offset) {
    int64_t stack = 0, far = 0;
    for (int i = 0; i < f->nscratch; i++) {
        int64_t bytes = ir_scratch_size(&f->scratch[i]) * tack_dtype_size((tack_dtype)f->scratch[i].type);
        int here = stack + bytes <= CPU_STACK_SCRATCH;
        if (offset) offset[i] = here ? -1 : far;
        if (here) stack += bytes;
        else far += (bytes + 63) / 64 * 64;
    }
    return far;
}

/* Stack probes (LLVM's inline-asm probing, as Rust and clang's
 * -fstack-clash-protection use): a frame larger than a page touches each
 * page in turn, so it meets the guard page instead of jumping it. */
static void probe_stack(gen *g, LLVMValueRef fn) {
    LLVMAddAttributeAtIndex(fn, LLVMAttributeFunctionIndex,
                            LLVMCreateStringAttribute(g->ctx, "probe-stack", 11, "inline-asm", 10));
}

static LLVMValueRef build_impl(gen *g, const char *name) {
    const ir_func *f = g->f;
    int n = f->nparams;
    LLVMTypeRef *pt = calloc(n + IMPL_EXTRA, sizeof *pt);
    for (int i = 0; i < n; i++) pt[i] = param_type(g, &f->params[i]);
    for (int i = 0; i < IMPL_EXTRA; i++) pt[n + i] = g->i64;
    pt[n + 6] = LLVMPointerType(g->i64, 0);
    pt[n + 7] = LLVMPointerType(g->i8, 0);
    LLVMTypeRef ft = LLVMFunctionType(g->vd, pt, n + IMPL_EXTRA, 0);
    free(pt);
    LLVMValueRef fn = LLVMAddFunction(g->mod, name, ft);
    probe_stack(g, fn);
    LLVMSetLinkage(fn, LLVMInternalLinkage);
    unsigned noinline = LLVMGetEnumAttributeKindForName("noinline", 8);
    LLVMAddAttributeAtIndex(fn, LLVMAttributeFunctionIndex, LLVMCreateEnumAttribute(g->ctx, noinline, 0));
    if (f->disjoint) {
        /* Only the disjoint variant promises LLVM that arrays do not alias. */
        unsigned noalias = LLVMGetEnumAttributeKindForName("noalias", 7);
        for (int i = 0; i < n; i++)
            if (f->params[i].role == ROLE_ARRAY)
                LLVMAddAttributeAtIndex(fn, i + 1, LLVMCreateEnumAttribute(g->ctx, noalias, 0));
    }
    g->fn = fn;
    for (int i = 0; i < n; i++) {
        g->params[i] = LLVMGetParam(fn, i);
        /* The kernel's own names, for people reading the IR (inspect_llvm);
         * value names do not reach the object code. */
        if (f->params[i].name)
            LLVMSetValueName2(g->params[i], f->params[i].name, strlen(f->params[i].name));
    }
    LLVMPositionBuilderAtEnd(g->b, block(g, "entry"));
    alloc_locals(g);
    int64_t offset[IR_MAX_SCRATCH];
    cpu_scratch_layout(f, offset);
    for (int i = 0; i < f->nscratch; i++) {
        if (offset[i] < 0) {
            g->scratch[i] = LLVMBuildArrayAlloca(g->b, ty(g, f->scratch[i].type),
                                                 LLVMConstInt(g->i64, (uint64_t)ir_scratch_size(&f->scratch[i]), 0),
                                                 f->scratch[i].name);
            continue;
        }
        /* A big array: its place in this thread's scratch area. */
        LLVMValueRef at = LLVMConstInt(g->i64, (uint64_t)offset[i], 0);
        LLVMValueRef p = LLVMBuildGEP2(g->b, g->i8, LLVMGetParam(fn, n + 7), &at, 1, "");
        g->scratch[i] = LLVMBuildBitCast(g->b, p, LLVMPointerType(ty(g, f->scratch[i].type), 0),
                                         f->scratch[i].name);
    }
    /* Constant start and step (the common range(n)) are used directly so
     * the vectorizer sees a unit stride. */
    LLVMValueRef start = f->start->kind == IR_CONST ? emit(g, f->start) : LLVMGetParam(fn, n);
    LLVMValueRef step = f->step->kind == IR_CONST ? emit(g, f->step) : LLVMGetParam(fn, n + 1);
    launch_level top = {0, {LLVMGetParam(fn, n + 2), LLVMGetParam(fn, n + 3)}};
    /* The chunk's work: its outer iterations times the inner extents. */
    LLVMValueRef work = LLVMBuildSub(g->b, LLVMGetParam(fn, n + 5), LLVMGetParam(fn, n + 4), "");
    for (int d = 0; d < f->ninner; d++) work = LLVMBuildMul(g->b, work, top.extents[d], "");
    private_begin(g, LLVMGetParam(fn, n + 6), work);
    LLVMValueRef first = LLVMGetParam(fn, n + 4), end = LLVMGetParam(fn, n + 5);
    if (f->collective) {
        /* Each group runs whole in the chunk that holds its first lane
         * (launches are whole groups): loop_var is that lane's index. */
        LLVMValueRef up = LLVMConstInt(g->i64, IR_WORKGROUP - 1, 0), sh = LLVMConstInt(g->i64, 8, 0);
        first = LLVMBuildLShr(g->b, LLVMBuildAdd(g->b, first, up, ""), sh, "");
        end = LLVMBuildLShr(g->b, LLVMBuildAdd(g->b, end, up, ""), sh, "");
        start = LLVMConstInt(g->i64, 0, 0);
        step = LLVMConstInt(g->i64, IR_WORKGROUP, 0);
    }
    if (g->lane_launch)
        lane_loops(g, first, end, start, step, &top);
    else if (g->noffs)
        offset_loops(g, first, end, start, step, &top);
    else
        counted_loop(g, first, end, f->loop_var, start, step, launch_body, &top);
    record_bounds_flag(g);
    private_end(g, LLVMGetParam(fn, n + 4), LLVMGetParam(fn, n + 5));
    LLVMBuildRetVoid(g->b);
    return fn;
}

static void build_entry(gen *g, LLVMValueRef impl, const char *name) {
    const ir_func *f = g->f;
    LLVMTypeRef p64 = LLVMPointerType(g->i64, 0);
    LLVMTypeRef pt[6] = {p64, p64, g->i64, g->i64, p64, LLVMPointerType(g->i8, 0)};
    LLVMValueRef fn = LLVMAddFunction(g->mod, name, LLVMFunctionType(g->vd, pt, 6, 0));
    probe_stack(g, fn);
    g->fn = fn;
    LLVMPositionBuilderAtEnd(g->b, block(g, "entry"));
    int n = f->nparams;
    LLVMValueRef *args = calloc(n + IMPL_EXTRA, sizeof *args);
    for (int i = 0; i < n; i++) args[i] = load_slot(g, LLVMGetParam(fn, 0), i);
    /* range[] = start, stop, step, e1, e2: pass start, step, e1, e2. */
    static const int from_range[4] = {0, 2, 3, 4};
    for (int i = 0; i < 4; i++) {
        LLVMValueRef idx = LLVMConstInt(g->i64, from_range[i], 0);
        LLVMValueRef p = LLVMBuildGEP2(g->b, g->i64, LLVMGetParam(fn, 1), &idx, 1, "");
        args[n + i] = LLVMBuildLoad2(g->b, g->i64, p, "");
    }
    args[n + 4] = LLVMGetParam(fn, 2);
    args[n + 5] = LLVMGetParam(fn, 3);
    args[n + 6] = LLVMGetParam(fn, 4);
    args[n + 7] = LLVMGetParam(fn, 5);
    LLVMBuildCall2(g->b, LLVMGlobalGetValueType(impl), impl, args, n + IMPL_EXTRA, "");
    free(args);
    LLVMBuildRetVoid(g->b);
}

static void build_range(gen *g, const char *name) {
    const ir_func *f = g->f;
    LLVMTypeRef p64 = LLVMPointerType(g->i64, 0);
    LLVMTypeRef pt[3] = {p64, p64, p64};
    LLVMValueRef fn = LLVMAddFunction(g->mod, name, LLVMFunctionType(g->vd, pt, 3, 0));
    probe_stack(g, fn);
    g->fn = fn;
    LLVMPositionBuilderAtEnd(g->b, block(g, "entry"));
    /* Debug mode guards an element the range reads (range(n[0])) with
     * locals of its own: this function's, not the chunk function's. */
    if (f->debug_errors >= 0) alloc_locals(g);
    for (int i = 0; i < f->nparams; i++)
        g->params[i] = load_slot(g, LLVMGetParam(fn, 0), i);
    g->dims = LLVMGetParam(fn, 1);
    const ir_expr *v[CPU_RANGE_LEN] = {f->start, f->stop, f->step, f->inner_stop[0], f->inner_stop[1]};
    for (int i = 0; i < CPU_RANGE_LEN; i++) {
        LLVMValueRef idx = LLVMConstInt(g->i64, i, 0);
        LLVMValueRef out = LLVMBuildGEP2(g->b, g->i64, LLVMGetParam(fn, 2), &idx, 1, "");
        LLVMValueRef value = i < 3 || i - 3 < f->ninner ? emit(g, v[i]) : LLVMConstInt(g->i64, 1, 0);
        LLVMBuildStore(g->b, value, out);
    }
    LLVMBuildRetVoid(g->b);
}

static tack_status llvm_fail(tack_error *err, const ir_func *f, const char *what, const char *msg) {
    err->status = TACK_ERR_INTERNAL;
    snprintf(err->message, sizeof err->message, "internal error compiling kernel '%s': %s%s%s",
             f->name, what, msg ? ": " : "", msg ? msg : "");
    return TACK_ERR_INTERNAL;
}

/* What one compilation produces: the object code a variant runs, or the
 * same compilation as text for people (cpu_codegen_text). */
typedef enum codegen_output { OUTPUT_OBJECT, OUTPUT_LLVM_TEXT, OUTPUT_ASM_TEXT } codegen_output;

/* A copy of an LLVM buffer's bytes as a NUL-terminated string. */
static char *buffer_text(LLVMMemoryBufferRef buf) {
    size_t n = LLVMGetBufferSize(buf);
    char *text = malloc(n + 1);
    if (text) {
        memcpy(text, LLVMGetBufferStart(buf), n);
        text[n] = 0;
    }
    return text;
}

static tack_status codegen(const ir_func *f, const char *symbol_base, int tier,
                           codegen_output output, cpu_object *out, char **text, tack_error *err) {
    memset(out, 0, sizeof *out);
    /* Workgroups: the body per group, lanes as loops (workgroup_loops.c). */
    ir_func *grouped = NULL;
    if (f->collective) {
        if (!(grouped = ir_clone(f))) return llvm_fail(err, f, "out of memory", NULL);
        if (pass_workgroup_loops(grouped, err)) {
            ir_func_free(grouped);
            return err->status;
        }
        f = grouped;
    }
    pthread_once(&target_once, init_target);
    tier = tier ? 1 : 0;
    LLVMTargetMachineRef tm = target_machine[tier];
    if (!target_machine[0] || !target_machine[1]) {
        ir_func_free(grouped);
        return llvm_fail(err, f, target_error, NULL);
    }
    char base[48];
    if (symbol_base) snprintf(base, sizeof base, "%.40s", symbol_base);
    else snprintf(base, sizeof base, "k%llu", (unsigned long long)atomic_fetch_add(&symbol_counter, 1));
    char impl_name[64];
    /* Tier 0's symbols are its own: both tiers' code lives in one JIT. */
    const char *t0 = tier ? "" : "_t0";
    snprintf(out->entry_symbol, sizeof out->entry_symbol, "tack_%s%s_entry", base, t0);
    snprintf(out->range_symbol, sizeof out->range_symbol, "tack_%s%s_range", base, t0);
    snprintf(impl_name, sizeof impl_name, "tack_%s%s_impl", base, t0);
    out->tier = tier;

    gen g = {0};
    g.f = f;
    g.ctx = LLVMContextCreate();
    g.mod = LLVMModuleCreateWithNameInContext(f->name, g.ctx);
    g.b = LLVMCreateBuilderInContext(g.ctx);
    g.i1 = LLVMInt1TypeInContext(g.ctx);
    g.i8 = LLVMInt8TypeInContext(g.ctx);
    g.i32 = LLVMInt32TypeInContext(g.ctx);
    g.i64 = LLVMInt64TypeInContext(g.ctx);
    g.f16 = LLVMHalfTypeInContext(g.ctx);
    g.f32 = LLVMFloatTypeInContext(g.ctx);
    g.f64 = LLVMDoubleTypeInContext(g.ctx);
    g.vd = LLVMVoidTypeInContext(g.ctx);
    g.params = calloc(f->nparams + 1, sizeof *g.params);
    g.locals = calloc(f->nlocals + 1, sizeof *g.locals);
    int nesting = count_nesting_block(&f->body) + f->ninner + 2;
    g.loops = calloc(nesting, sizeof *g.loops);
    g.inlines = calloc(nesting, sizeof *g.inlines);
    g.priv = calloc(f->nparams + 1, sizeof *g.priv);
    g.scratch = calloc(f->nscratch + 1, sizeof *g.scratch);
    int *family = calloc(f->nparams + 1, sizeof *family);
    if (g.priv && family) {
        cpu_private_atomics(f, family);
        for (int p = 0; p < f->nparams; p++) g.priv[p].family = family[p];
        int lanes = cpu_launch_takes_lanes(f);
        for (int p = 0; p < f->nparams && lanes; p++)
            if (family[p] && ir_reduction_of_param(f, p) >= 0)
                g.lane_launch = g.priv[p].lanes = cpu_reduction_lanes(f->params[p].type);
    }
    free(family);
    g.offs = calloc(f->nparams + 1, sizeof *g.offs);
    if (g.offs && !g.lane_launch) {
        g.noffs = cpu_offset_atomics(f, g.offs);
        /* plain inside a chunk beats a private copy: no combining pass */
        for (int p = 0; p < f->nparams && g.priv; p++)
            if (g.offs[p].on) g.priv[p].family = CPU_PRIVATE_NONE;
    }
    if (!g.offs) g.nomem = 1;
    tack_status st = TACK_OK;

    pthread_mutex_lock(&target_lock[tier]);
    LLVMTargetDataRef layout = LLVMCreateTargetDataLayout(tm);
    char *dl = LLVMCopyStringRepOfTargetData(layout);
    LLVMDisposeTargetData(layout);
    LLVMSetDataLayout(g.mod, dl);
    LLVMDisposeMessage(dl);
    char *triple = LLVMGetTargetMachineTriple(tm);
    LLVMSetTarget(g.mod, triple);
    LLVMDisposeMessage(triple);

    LLVMValueRef impl = build_impl(&g, impl_name);
    build_entry(&g, impl, out->entry_symbol);
    build_range(&g, out->range_symbol);
    if (g.nomem) {
        st = llvm_fail(err, f, "out of memory", NULL);
        goto done;
    }

    char *msg = NULL;
    if (LLVMVerifyModule(g.mod, LLVMReturnStatusAction, &msg)) {
        st = llvm_fail(err, f, "LLVM rejected the generated module", msg);
        goto done;
    }
    LLVMDisposeMessage(msg);
    msg = NULL;
    uint64_t llvm_start = backend_now_ns();
    LLVMErrorRef e = NULL;
    if (tier) {
        LLVMPassBuilderOptionsRef opts = LLVMCreatePassBuilderOptions();
        LLVMPassBuilderOptionsSetLoopVectorization(opts, 1);
        LLVMPassBuilderOptionsSetSLPVectorization(opts, 1);
        LLVMPassBuilderOptionsSetLoopUnrolling(opts, 1);
        e = LLVMRunPasses(g.mod, "default<O3>", tm, opts);
        LLVMDisposePassBuilderOptions(opts);
    } /* tier 0 runs no pipeline: "default<O0>" or sroa measured no faster
       * to a first result than FastISel on the module as built */
    if (e) {
        /* An error's message is new[]'d, not malloc'd: it has its own dispose. */
        char *m = LLVMGetErrorMessage(e);
        st = llvm_fail(err, f, "LLVM's optimizer failed", m);
        LLVMDisposeErrorMessage(m);
        goto done;
    }
    if (output == OUTPUT_LLVM_TEXT) {
        char *ir = LLVMPrintModuleToString(g.mod);
        *text = ir ? strdup(ir) : NULL;
        LLVMDisposeMessage(ir);
        if (!*text) st = llvm_fail(err, f, "out of memory", NULL);
        goto done;
    }
    LLVMMemoryBufferRef buf = NULL;
    LLVMCodeGenFileType file = output == OUTPUT_ASM_TEXT ? LLVMAssemblyFile : LLVMObjectFile;
    if (LLVMTargetMachineEmitToMemoryBuffer(tm, g.mod, file, &msg, &buf)) {
        st = llvm_fail(err, f, "LLVM could not emit code", msg);
        goto done;
    }
    if (output == OUTPUT_ASM_TEXT) {
        *text = buffer_text(buf);
        LLVMDisposeMemoryBuffer(buf);
        if (!*text) st = llvm_fail(err, f, "out of memory", NULL);
        goto done;
    }
    out->llvm_ns = backend_now_ns() - llvm_start;
    out->size = LLVMGetBufferSize(buf);
    out->bytes = malloc(out->size);
    if (out->bytes) memcpy(out->bytes, LLVMGetBufferStart(buf), out->size);
    LLVMDisposeMemoryBuffer(buf);
    if (!out->bytes) st = llvm_fail(err, f, "out of memory", NULL);
done:
    pthread_mutex_unlock(&target_lock[tier]);
    if (msg) LLVMDisposeMessage(msg);
    LLVMDisposeBuilder(g.b);
    LLVMDisposeModule(g.mod);
    LLVMContextDispose(g.ctx);
    free(g.params);
    free(g.locals);
    free(g.loops);
    free(g.inlines);
    free(g.priv);
    free(g.offs);
    free(g.scratch);
    ir_func_free(grouped);
    return st;
}

tack_status cpu_codegen(const ir_func *f, const char *symbol_base, int tier, cpu_object *out,
                        tack_error *err) {
    return codegen(f, symbol_base, tier, OUTPUT_OBJECT, out, NULL, err);
}

tack_status cpu_codegen_text(const ir_func *f, const char *symbol_base, int assembly, char **text,
                             tack_error *err) {
    cpu_object unused;
    *text = NULL;
    return codegen(f, symbol_base, 1, assembly ? OUTPUT_ASM_TEXT : OUTPUT_LLVM_TEXT, &unused, text,
                   err);
}

/* Public (tack.h), defined here: this is the file that knows LLVM. */
const char *tack_llvm_version(void) { return LLVM_VERSION_STRING; }

void cpu_object_free(cpu_object *o) {
    free(o->bytes);
    o->bytes = NULL;
    o->size = 0;
}
