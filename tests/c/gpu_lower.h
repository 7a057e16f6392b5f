/* gpu_lower.h - for the GPU emitter's tests: a kernel's post-pass IR for a
 * call, as the runtime builds it (kernel.c's lowering, key.c's
 * classification, variant.c's passes), with the call's slots and dims. */
#ifndef TACK_TEST_GPU_LOWER_H
#define TACK_TEST_GPU_LOWER_H

#include <stdio.h>
#include <string.h>

#include "front/ast.h"
#include "lower/lower.h"
#include "passes/passes.h"

/* Device functions the test kernels call. */
static const struct {
    const char *name, *text;
} gl_funcs[] = {
    {"find", "@tack.func\ndef find(a, v):\n    for j in range(a.shape[0]):\n"
             "        if a[j] == v:\n            return j\n    return -1\n"},
    {"collatz", "@tack.func\ndef collatz(n):\n    c = 0\n    while n != 1:\n"
                "        if n % 2 == 0:\n            n = n // 2\n        else:\n"
                "            n = 3 * n + 1\n        c += 1\n    return c\n"},
    {"clamp", "@tack.func\ndef clamp(v, lo, hi):\n    if v < lo:\n        return lo\n"
              "    if v > hi:\n        return hi\n    return v\n"},
};

static inline int gl_resolve(void *ctx, const char *name, tack_name *out) {
    (void)ctx;
    for (size_t i = 0; i < sizeof gl_funcs / sizeof gl_funcs[0]; i++)
        if (!strcmp(name, gl_funcs[i].name)) {
            memset(out, 0, sizeof *out);
            out->kind = TACK_NAME_FUNC;
            out->text = gl_funcs[i].text;
            out->filename = "funcs.py";
            out->first_line = 1;
            return 0;
        }
    return lower_default_resolve(name, out);
}

/* key.c's typing of a scalar argument, and its slot bits. */
static tack_dtype gl_scalar(const tack_arg *a, int any_f64, uint64_t *slot) {
    *slot = 0;
    switch (a->kind) {
    case TACK_ARG_INT:
        if (a->i >= INT32_MIN && a->i <= INT32_MAX) {
            int32_t v = (int32_t)a->i;
            memcpy(slot, &v, sizeof v);
            return TACK_I32;
        }
        memcpy(slot, &a->i, sizeof a->i);
        return TACK_I64;
    case TACK_ARG_UINT:
        if (a->u <= (uint64_t)INT32_MAX) {
            *slot = a->u;
            return TACK_I32;
        }
        *slot = a->u;
        return a->u <= (uint64_t)INT64_MAX ? TACK_I64 : TACK_U64;
    case TACK_ARG_FLOAT:
        if (any_f64) {
            memcpy(slot, &a->f, sizeof a->f);
            return TACK_F64;
        } else {
            float v = (float)a->f;
            memcpy(slot, &v, sizeof v);
            return TACK_F32;
        }
    case TACK_ARG_BOOL:
        *slot = a->i != 0;
        return TACK_BOOL;
    default:
        return TACK_I64;
    }
}

/* C order (length-1 dimensions may have any stride). */
static inline int gl_c_order(const tack_arg *a) {
    int64_t expect = (int64_t)tack_dtype_size(a->dtype);
    for (int d = a->ndim - 1; d >= 0; d--) {
        if (a->shape[d] != 1 && a->strides[d] != expect) return 0;
        expect *= a->shape[d];
    }
    return 1;
}

/* Lowers `text` (its AST in `ast`, which must outlive the result) for the
 * call `args`; debug mode adds the hidden errors and extents arrays, whose
 * slots and dims follow the arguments (nargs + 2 entries then). */
static inline ir_func *gl_variant(const char *text, arena *ast, const tack_arg *args, int nargs, int debug,
                           uint64_t *slots, int64_t (*dims)[TACK_MAX_NDIM], tack_error *err) {
    static src_info src;
    memset(err, 0, sizeof *err);
    src = (src_info){text, "kernels.py", 1, NULL, 0};
    func_def *def;
    if (parse_function(&src, ast, &def, err) != TACK_OK) return NULL;
    src.kernel_name = def->name;
    uint8_t vec[TACK_MAX_PARAMS] = {0};
    for (int i = 0; i < nargs; i++)
        if (args[i].kind == TACK_ARG_ARRAY) vec[i] = (uint8_t)args[i].vec_width;
    lower_input in = {.src = &src, .def = def, .vec_width = vec, .args = args,
                      .resolver = gl_resolve, .resolver_ctx = NULL};
    ir_func *f = NULL;
    if (lower_kernel(&in, &f, err) != TACK_OK) return NULL;
    if (debug && pass_bounds_checks(f, err) != TACK_OK) {
        ir_func_free(f);
        return NULL;
    }
    int any_f64 = 0;
    for (int i = 0; i < nargs; i++) any_f64 |= args[i].kind == TACK_ARG_ARRAY && args[i].dtype == TACK_F64;
    f->default_float = any_f64 ? TACK_F64 : TACK_F32;
    for (int i = 0; i < f->nparams; i++) {
        memset(dims[i], 0, sizeof dims[i]);
        slots[i] = 0;
        if (i >= nargs) { /* debug mode's hidden i64 arrays */
            f->params[i].type = TACK_I64;
            dims[i][0] = i == f->debug_errors ? DEBUG_ERR_LEN : (int64_t)f->nparams * TACK_MAX_NDIM;
            for (int d = 1; d < TACK_MAX_NDIM; d++) dims[i][d] = 1;
            continue;
        }
        const tack_arg *a = &args[i];
        if (a->kind == TACK_ARG_ARRAY) {
            f->params[i].type = a->dtype;
            for (int d = 0; d < TACK_MAX_NDIM; d++) dims[i][d] = d < a->ndim ? a->shape[d] : 1;
        } else {
            f->params[i].type = gl_scalar(a, any_f64, &slots[i]);
        }
    }
    f->disjoint = 0;
    /* key.c's strided bit: an indexed array that is not in C order. */
    uint8_t strided[TACK_MAX_PARAMS] = {0};
    int n = f->nparams;
    for (int i = 0; i < nargs && i < n; i++)
        strided[i] = args[i].kind == TACK_ARG_ARRAY && f->params[i].index_ndim > 0 &&
                     !gl_c_order(&args[i]);
    if (pass_resolve_dims(f, (const int64_t(*)[TACK_MAX_NDIM])dims, strided, err) ||
        ir_verify(f, "resolve_dims", 0, err) || pass_infer_types(f, err) ||
        ir_verify(f, "infer_types", 1, err)) {
        ir_func_free(f);
        return NULL;
    }
    /* The hidden stride parameters' slots, in key.c's order. */
    for (int i = 0, q = n; i < n; i++) {
        if (!strided[i]) continue;
        int64_t sz = (int64_t)tack_dtype_size(args[i].dtype);
        for (int d = 0; d < stride_param_count(&f->params[i]); d++, q++) {
            slots[q] = (uint64_t)(args[i].shape[d] > 1 ? args[i].strides[d] / sz : 0);
            memset(dims[q], 0, sizeof dims[q]);
        }
    }
    return f;
}

#endif
