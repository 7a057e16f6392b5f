/* generate.c - tack_kernel_generate: the code of the variant a call would
 * select, as text for a target, without a device.  The call is classified
 * as on a device without host memory (any array stands in for device
 * memory: only its dtype, shape and vector width matter), its post-pass IR
 * is made as variant.c makes it, and the backend layer writes the text
 * (backend_generate).  Nothing is cached: each call generates afresh. */
#include <stdlib.h>
#include <string.h>

#include "runtime.h"

/* The entry's name: "tack_" and the kernel's name as a C identifier. */
static void entry_name(const char *kernel, char *out, size_t cap) {
    size_t n = 0;
    const char *prefix = "tack_";
    while (*prefix && n + 1 < cap) out[n++] = *prefix++;
    for (const char *p = kernel; *p && n + 1 < cap; p++) {
        char ch = *p;
        int ok = ch == '_' || (ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'z') ||
                 (ch >= 'A' && ch <= 'Z');
        out[n++] = ok ? ch : '_';
    }
    out[n] = 0;
}

static tack_status generate_counted(tack_kernel *k, const char *target, const tack_arg *args,
                                    int nargs, char **text, size_t *len, tack_error *err) {
    if (backend_generate_check(target, err)) return err->status;
    retire_pending();
    if (call_arity(k, nargs, err)) return err->status;
    tack_arg mats[TACK_MAX_PARAMS];
    if (matrix_args(k, &args, nargs, mats, err)) return err->status;
    template_key tkey;
    if (template_key_of(k, args, nargs, kernel_debug(k), &tkey, err)) return err->status;
    ir_template *t;
    if (kernel_template(k, &tkey, args, &t, err)) return err->status;
    call_info info;
    if (template_expand(k, args, nargs, info.args, &info.nargs, err)) return err->status;
    info.nreductions = info.reductions_started = 0;
    if (launch_add_hidden(k, t, &info, NULL, 0, err)) return err->status;
    /* Debug mode's hidden arrays, as launch.c adds them; never read here. */
    static int64_t errors[DEBUG_ERR_LEN], extents[MAX_ARGS * TACK_MAX_NDIM];
    if (t->ir->debug_errors >= 0) {
        if (info.nargs + 2 > MAX_ARGS)
            return runtime_error(err, TACK_ERR_VALUE, "kernel '%s': too many arguments for debug mode",
                                 k->def->name);
        int64_t nerr = DEBUG_ERR_LEN, next = (int64_t)(info.nargs + 2) * TACK_MAX_NDIM;
        info.args[info.nargs++] = tack_arg_array(errors, TACK_I64, 1, &nerr, 1);
        if (t->ir->debug_extents >= 0)
            info.args[info.nargs++] = tack_arg_array(extents, TACK_I64, 1, &next, 0);
    }
    /* A stand-in device without host memory that owns every array, so the
     * key is a GPU device's (disjoint is never set). */
    tack_device gen;
    memset(&gen, 0, sizeof gen);
    memcpy(gen.name, target, strcspn(target, ":-") < sizeof gen.name - 1 ? strcspn(target, ":-")
                                                                          : sizeof gen.name - 1);
    static char stand_in[64] __attribute__((aligned(64)));
    for (int i = 0; i < info.nargs; i++)
        if (info.args[i].kind == TACK_ARG_ARRAY) {
            info.args[i].device = &gen;
            if (!info.args[i].data) info.args[i].data = stand_in;
        }
    if (call_classify(k, &gen, t, &info, &tkey, err)) return err->status;
    ir_func *f;
    if (variant_post_pass_ir(t, &info, &f, err)) return err->status;
    char entry[160];
    entry_name(k->def->name, entry, sizeof entry);
    tack_status st = backend_generate(target, f, entry, text, len, err);
    ir_func_free(f);
    return st;
}

/* Both entry points: text targets NUL-terminated, binary ones with a
 * length (binary: 1 for tack_kernel_generate_binary). */
static tack_status generate(tack_kernel *k, const char *target, const tack_arg *args, int nargs,
                            char **out, size_t *len, int binary, tack_error *err) {
    ERR_OR_SCRATCH(err);
    err->status = TACK_OK;
    if (out) *out = NULL;
    if (len) *len = 0;
    if (!k || !target || !out || (binary && !len) || (nargs && !args) || nargs < 0)
        return runtime_error(err, TACK_ERR_VALUE,
                             "tack_kernel_generate%s: NULL kernel, target, %s or arguments",
                             binary ? "_binary" : "", binary ? "data, size" : "text");
    if (!binary && backend_generate_binary(target))
        return runtime_error(err, TACK_ERR_VALUE,
                             "tack_kernel_generate: target '%s' gives binary code, which is not "
                             "text: use tack_kernel_generate_binary",
                             target);
    size_t n = 0;
    /* Counted as a reader: the template it finds is not freed under it. */
    readers_enter(k);
    tack_status st = generate_counted(k, target, args, nargs, out, &n, err);
    readers_exit(k);
    if (len) *len = n;
    return st;
}

tack_status tack_kernel_generate(tack_kernel *k, const char *target, const tack_arg *args,
                                 int nargs, char **text, tack_error *err) {
    return generate(k, target, args, nargs, text, NULL, 0, err);
}

tack_status tack_kernel_generate_binary(tack_kernel *k, const char *target, const tack_arg *args,
                                        int nargs, void **data, size_t *size, tack_error *err) {
    char *out = NULL;
    tack_status st = generate(k, target, args, nargs, data ? &out : NULL, size, 1, err);
    if (data) *data = out;
    return st;
}
