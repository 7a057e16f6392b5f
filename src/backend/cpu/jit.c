/* jit.c - links a variant's object code into the process with ORC's LLJIT.
 * One JIT serves the process; each variant's code has its own resource
 * tracker so that a dropped variant gives its memory back. */
#include "cpu.h"

#include <llvm-c/Core.h>
#include <llvm-c/Error.h>
#include <llvm-c/LLJIT.h>
#include <llvm-c/Orc.h>
#include <llvm-c/Target.h>
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
