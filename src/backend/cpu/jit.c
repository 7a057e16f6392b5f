/* jit.c - links a variant's object code into the process with ORC's LLJIT.
 * One JIT serves the process; each variant's code has its own resource
 * tracker so that a dropped variant gives its memory back. */
#include "cpu.h"
#include "util/half.h"

#include <llvm-c/Core.h>
#include <llvm-c/Error.h>
#include <llvm-c/LLJIT.h>
#include <llvm-c/Orc.h>
#include <llvm-c/Target.h>
#include <llvm/Config/llvm-config.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct cpu_code {
    LLVMOrcResourceTrackerRef tracker;
    char entry_symbol[64];
    cpu_entry_fn entry;
    cpu_range_fn range;
    int refs;
    struct cpu_code *next;
};

/* Linked code by entry symbol: a second load of the same symbols shares. */
static pthread_mutex_t loaded_lock = PTHREAD_MUTEX_INITIALIZER;
static cpu_code *loaded;

static pthread_once_t jit_once = PTHREAD_ONCE_INIT;
static LLVMOrcLLJITRef jit;
static char jit_error[512];

static void keep_error(LLVMErrorRef e, const char *what) {
    char *m = LLVMGetErrorMessage(e);
    snprintf(jit_error, sizeof jit_error, "%s: %s", what, m);
    LLVMDisposeErrorMessage(m);
}

/* The library calls LLVM makes for f16 <-> f32 on x86 without F16C
 * (codegen.c's f16 loads and stores), defined by us so they are always
 * there and exact: LLVM 14 calls __gnu_h2f_ieee / __gnu_f2h_ieee with the
 * half's bits in an integer register; LLVM 15 and newer __extendhfsf2 /
 * __truncsfhf2 with the half in a float register, which is C's _Float16. */
#if LLVM_VERSION_MAJOR <= 14
static float half_call_extend(uint16_t h) { return half_to_float(h); }
static uint16_t half_call_trunc(float f) { return half_from_float(f); }
#define HALF_CALLS 1
static const char *const half_call_names[2] = {"__gnu_h2f_ieee", "__gnu_f2h_ieee"};
#elif defined(__FLT16_MAX__)
static float half_call_extend(_Float16 h) {
    uint16_t b;
    memcpy(&b, &h, sizeof b);
    return half_to_float(b);
}
static _Float16 half_call_trunc(float f) {
    uint16_t b = half_from_float(f);
    _Float16 h;
    memcpy(&h, &b, sizeof h);
    return h;
}
#define HALF_CALLS 1
static const char *const half_call_names[2] = {"__extendhfsf2", "__truncsfhf2"};
#else
#define HALF_CALLS 0 /* the process's own (libgcc, compiler-rt) */
#endif

static void define_half_calls(void) {
#if HALF_CALLS
    LLVMOrcExecutionSessionRef es = LLVMOrcLLJITGetExecutionSession(jit);
    LLVMJITSymbolFlags flags = {LLVMJITSymbolGenericFlagsExported | LLVMJITSymbolGenericFlagsCallable, 0};
    LLVMJITCSymbolMapPair syms[2] = {
        {LLVMOrcExecutionSessionIntern(es, half_call_names[0]),
         {(LLVMOrcExecutorAddress)(uintptr_t)half_call_extend, flags}},
        {LLVMOrcExecutionSessionIntern(es, half_call_names[1]),
         {(LLVMOrcExecutorAddress)(uintptr_t)half_call_trunc, flags}}};
    LLVMOrcMaterializationUnitRef mu = LLVMOrcAbsoluteSymbols(syms, 2);
    LLVMErrorRef e = LLVMOrcJITDylibDefine(LLVMOrcLLJITGetMainJITDylib(jit), mu);
    if (e) { /* the unit stays ours when the definition fails */
        LLVMOrcDisposeMaterializationUnit(mu);
        keep_error(e, "could not define the half-precision conversions");
    }
#endif
}

void tack_cpu_print(const char *fmt, const uint64_t *vals); /* print_rt.c */
void tack_cpu_bounds_fail(int64_t *errors, int64_t key, int64_t site, int64_t n,
                          const int64_t *values); /* bounds_rt.c */

/* The calls kernels make into libtack (print_rt.c, bounds_rt.c), defined by
 * address: libtack's symbols need not be visible to the process's symbol
 * search. */
static void define_runtime_calls(void) {
    LLVMOrcExecutionSessionRef es = LLVMOrcLLJITGetExecutionSession(jit);
    LLVMJITSymbolFlags flags = {LLVMJITSymbolGenericFlagsExported | LLVMJITSymbolGenericFlagsCallable, 0};
    LLVMJITCSymbolMapPair sym[2] = {
        {LLVMOrcExecutionSessionIntern(es, "tack_cpu_print"),
         {(LLVMOrcExecutorAddress)(uintptr_t)tack_cpu_print, flags}},
        {LLVMOrcExecutionSessionIntern(es, "tack_cpu_bounds_fail"),
         {(LLVMOrcExecutorAddress)(uintptr_t)tack_cpu_bounds_fail, flags}}};
    LLVMOrcMaterializationUnitRef mu = LLVMOrcAbsoluteSymbols(sym, 2);
    LLVMErrorRef e = LLVMOrcJITDylibDefine(LLVMOrcLLJITGetMainJITDylib(jit), mu);
    if (e) {
        LLVMOrcDisposeMaterializationUnit(mu);
        keep_error(e, "could not define the runtime calls");
    }
}

static void init_jit(void) {
    LLVMInitializeNativeTarget();
    LLVMInitializeNativeAsmPrinter();
    LLVMErrorRef e = LLVMOrcCreateLLJIT(&jit, NULL);
    if (e) {
        keep_error(e, "could not create the JIT");
        jit = NULL;
        return;
    }
    /* Kernels call the C math library (tanf, atan2, ...): resolve undefined
     * symbols from the process. */
    LLVMOrcDefinitionGeneratorRef gen;
    e = LLVMOrcCreateDynamicLibrarySearchGeneratorForProcess(&gen, LLVMOrcLLJITGetGlobalPrefix(jit),
                                                             NULL, NULL);
    if (e) {
        keep_error(e, "could not search the process for symbols");
        return;
    }
    LLVMOrcJITDylibAddGenerator(LLVMOrcLLJITGetMainJITDylib(jit), gen);
    define_half_calls();
    define_runtime_calls();
}

static tack_status fail(tack_error *err, const char *what, LLVMErrorRef e) {
    err->status = TACK_ERR_INTERNAL;
    if (e) {
        char *m = LLVMGetErrorMessage(e);
        snprintf(err->message, sizeof err->message, "internal error: %s: %s", what, m);
        LLVMDisposeErrorMessage(m);
    } else {
        snprintf(err->message, sizeof err->message, "internal error: %s", what);
    }
    return TACK_ERR_INTERNAL;
}

static tack_status link_object(const cpu_object *o, cpu_code **code, cpu_entry_fn *entry,
                               cpu_range_fn *range, tack_error *err);
static void release(cpu_code *c);

tack_status cpu_jit_load(const cpu_object *o, cpu_code **code, cpu_entry_fn *entry,
                         cpu_range_fn *range, tack_error *err) {
    pthread_once(&jit_once, init_jit);
    *code = NULL;
    if (!jit) return fail(err, jit_error, NULL);
    pthread_mutex_lock(&loaded_lock);
    for (cpu_code *c = loaded; c; c = c->next)
        if (!strcmp(c->entry_symbol, o->entry_symbol)) {
            c->refs++;
            *entry = c->entry;
            *range = c->range;
            *code = c;
            pthread_mutex_unlock(&loaded_lock);
            return TACK_OK;
        }
    tack_status st = link_object(o, code, entry, range, err);
    pthread_mutex_unlock(&loaded_lock);
    return st;
}

static tack_status link_object(const cpu_object *o, cpu_code **code, cpu_entry_fn *entry,
                               cpu_range_fn *range, tack_error *err) {
    cpu_code *c = calloc(1, sizeof *c);
    if (!c) return fail(err, "out of memory", NULL);
    LLVMOrcJITDylibRef dylib = LLVMOrcLLJITGetMainJITDylib(jit);
    c->tracker = LLVMOrcJITDylibCreateResourceTracker(dylib);
    /* The JIT takes ownership of the buffer; it copies the bytes so the
     * caller keeps its own (the disk cache stores them). */
    LLVMMemoryBufferRef buf = LLVMCreateMemoryBufferWithMemoryRangeCopy(
        (const char *)o->bytes, o->size, o->entry_symbol);
    LLVMErrorRef e = LLVMOrcLLJITAddObjectFileWithRT(jit, c->tracker, buf);
    if (e) {
        LLVMOrcReleaseResourceTracker(c->tracker);
        free(c);
        return fail(err, "could not link the kernel's object code", e);
    }
    LLVMOrcExecutorAddress a_entry, a_range;
    e = LLVMOrcLLJITLookup(jit, &a_entry, o->entry_symbol);
    if (!e) e = LLVMOrcLLJITLookup(jit, &a_range, o->range_symbol);
    if (e) {
        release(c);
        return fail(err, "could not find the kernel's entry point", e);
    }
    *entry = c->entry = (cpu_entry_fn)(uintptr_t)a_entry;
    *range = c->range = (cpu_range_fn)(uintptr_t)a_range;
    snprintf(c->entry_symbol, sizeof c->entry_symbol, "%s", o->entry_symbol);
    c->refs = 1;
    c->next = loaded;
    loaded = c;
    *code = c;
    return TACK_OK;
}

static void release(cpu_code *c) {
    LLVMErrorRef e = LLVMOrcResourceTrackerRemove(c->tracker);
    if (e) LLVMConsumeError(e);
    LLVMOrcReleaseResourceTracker(c->tracker);
    free(c);
}

void cpu_jit_unload(cpu_code *c) {
    if (!c) return;
    pthread_mutex_lock(&loaded_lock);
    if (--c->refs == 0) {
        for (cpu_code **link = &loaded; *link; link = &(*link)->next)
            if (*link == c) {
                *link = c->next;
                break;
            }
        release(c);
    }
    pthread_mutex_unlock(&loaded_lock);
}
