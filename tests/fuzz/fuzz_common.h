/*
 * fuzz_common.h - what the fuzz targets share: the per-variant passes run
 * for one made-up call, and the checks that turn "Tack reported a bug in
 * itself" into a crash the fuzzer keeps.
 *
 * An input may be refused (a compile error, a bad cache entry) but never
 * crash, leak, or end in TACK_ERR_INTERNAL: that status means a verifier
 * or LLVM rejected what Tack itself produced.
 */
#ifndef TACK_FUZZ_COMMON_H
#define TACK_FUZZ_COMMON_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/serialize.h"
#include "passes/passes.h"
#include "backend/cpu/cpu.h"
#include "tack.h"

#define MAX_PARAMS_ALL (TACK_MAX_PARAMS * 2)

static void fuzz_bug(const char *where, const tack_error *err) {
    fprintf(stderr, "fuzz: %s: status %d: %s\n", where, err ? (int)err->status : -1,
            err ? err->message : "");
    abort();
}

/* A refusal must say why; only an internal error is a finding. */
static void fuzz_check_refusal(const char *where, tack_status st, const tack_error *err) {
    if (st == TACK_OK) return;
    if (st == TACK_ERR_INTERNAL || !err->message[0]) fuzz_bug(where, err);
}

/* The serialized form of verified IR must read back (as a disk cache load
 * would) and verify again. */
static void fuzz_roundtrip(const ir_func *f, int typed) {
    ser_writer w = {0};
    ir_serialize(f, &w);
    if (w.failed) {
        ser_writer_free(&w);
        return; /* out of memory */
    }
    ser_reader r = ser_reader_init(w.data, w.len);
    ir_func *g = NULL;
    tack_error err = {0};
    tack_status st = ir_deserialize(&r, typed, &g, &err);
    if (st == TACK_ERR_NOMEM) {
        ser_writer_free(&w);
        return;
    }
    if (st != TACK_OK || ser_left(&r) != 0) fuzz_bug("serialized IR does not read back", &err);
    ir_func_free(g);
    ser_writer_free(&w);
}

/* The passes a variant runs before code generation (variant.c's
 * run_passes), for a call that gives each array f32 elements (i32 when its
 * name starts with i..n, Fortran's rule, so integer paths run too) and
 * every dimension 8, and each scalar the same types. */
static void fuzz_variant_passes(const ir_func *tmpl, int codegen) {
    ir_func *f = ir_clone(tmpl);
    if (!f) return;
    static int64_t dims[MAX_PARAMS_ALL][TACK_MAX_NDIM];
    for (int i = 0; i < MAX_PARAMS_ALL; i++)
        for (int d = 0; d < TACK_MAX_NDIM; d++) dims[i][d] = 8;
    f->default_float = TACK_F32;
    for (int i = 0; i < f->nparams; i++) {
        const char *n = f->params[i].name;
        f->params[i].type = n && n[0] >= 'i' && n[0] <= 'n' ? TACK_I32 : TACK_F32;
    }
    f->disjoint = 1;
    tack_error err = {0};
    tack_status st = pass_resolve_dims(f, (const int64_t(*)[TACK_MAX_NDIM])dims, NULL, &err);
    if (!st) st = ir_verify(f, "resolve_dims", 0, &err);
    if (!st) st = pass_infer_types(f, &err);
    if (!st) st = ir_verify(f, "infer_types", 1, &err);
    fuzz_check_refusal("variant passes", st, &err);
    if (!st) fuzz_roundtrip(f, 1);
    if (!st && codegen) {
        cpu_object obj = {0};
        st = cpu_codegen(f, NULL, 1, &obj, &err);
        fuzz_check_refusal("code generation", st, &err);
        cpu_object_free(&obj);
    }
    ir_func_free(f);
}

/* Everything the runtime does with an IR template before a variant's
 * passes: the shape dependencies, debug mode's bounds pass, the disk
 * cache's form. */
static void fuzz_template(const ir_func *tmpl, int codegen) {
    shape_dep deps[MAX_PARAMS_ALL * TACK_MAX_NDIM];
    shape_deps(tmpl, deps, MAX_PARAMS_ALL * TACK_MAX_NDIM);
    fuzz_roundtrip(tmpl, 0);
    fuzz_variant_passes(tmpl, codegen);
    ir_func *dbg = ir_clone(tmpl);
    if (dbg) {
        tack_error err = {0};
        tack_status st = pass_bounds_checks(dbg, &err);
        fuzz_check_refusal("bounds checks", st, &err);
        ir_func_free(dbg);
    }
}

#endif
