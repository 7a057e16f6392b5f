/* fuzz_kernel.c - libFuzzer target over kernel source text.
 *
 * The input is one kernel's source.  It is parsed (tack_kernel_create), and
 * what parses is lowered to an IR template as a first launch would, then
 * run through everything short of linking and running code: the shape
 * dependencies, the bounds pass, the serialized form read back, and the
 * variant passes for a made-up call (see fuzz_common.h).  With
 * TACK_FUZZ_CODEGEN=1 in the environment LLVM's code generation runs too
 * (about a hundred times slower).  Nothing is launched: a kernel from the
 * fuzzer may loop forever.
 *
 * Names outside the kernel resolve to a few fixed answers below, then to
 * the defaults (tack, math, numpy, builtins). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "lower/lower.h"
#include "runtime/runtime.h"

static int resolve(void *ctx, const char *name, tack_name *out) {
    (void)ctx;
    memset(out, 0, sizeof *out);
    if (!strcmp(name, "N")) {
        out->kind = TACK_NAME_INT;
        out->i = 16;
    } else if (!strcmp(name, "BIG")) {
        out->kind = TACK_NAME_INT;
        out->is_unsigned = 1;
        out->u = UINT64_MAX;
    } else if (!strcmp(name, "C")) {
        out->kind = TACK_NAME_FLOAT;
        out->f = 0.5;
    } else if (!strcmp(name, "FLAG")) {
        out->kind = TACK_NAME_BOOL;
        out->i = 1;
    } else if (!strcmp(name, "helper")) {
        out->kind = TACK_NAME_FUNC;
        out->text = "def helper(a, b):\n    return a * b + C\n";
    } else if (!strcmp(name, "twice")) {
        out->kind = TACK_NAME_FUNC;
        out->text = "def twice(v):\n    if v > 0:\n        return helper(v, v)\n    return -v\n";
    } else if (!strcmp(name, "forever")) { /* recursion must be refused */
        out->kind = TACK_NAME_FUNC;
        out->text = "def forever(n):\n    return forever(n - 1)\n";
    } else {
        return -1;
    }
    if (out->kind == TACK_NAME_FUNC) {
        out->filename = "funcs.py";
        out->first_line = 1;
    }
    return 0;
}

static int codegen;

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    setenv("TACK_CACHE", "off", 1); /* the fuzzer never touches the user's cache */
    const char *c = getenv("TACK_FUZZ_CODEGEN");
    codegen = c && c[0] == '1';
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *src = malloc(size + 1);
    if (!src) return 0;
    memcpy(src, data, size);
    src[size] = 0;
    tack_error err;
    tack_kernel *k = tack_kernel_create(src, "fuzz.py", 1, resolve, NULL, &err);
    free(src); /* the kernel keeps its own copy */
    if (!k) {
        fuzz_check_refusal("tack_kernel_create", err.status, &err);
        return 0;
    }
    lower_input in = {&k->src, k->def, NULL, NULL, resolve, NULL, 0, 0, NULL};
    ir_func *f = NULL;
    tack_status st = lower_kernel(&in, &f, &err);
    fuzz_check_refusal("lower_kernel", st, &err);
    if (st == TACK_OK) fuzz_template(f, codegen);
    ir_func_free(f);
    tack_kernel_free(k);
    return 0;
}
