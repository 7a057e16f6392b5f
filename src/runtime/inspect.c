/* inspect.c - tack_kernel_inspect: the code of the variant a call selects,
 * as text for people (kernel.inspect_ir/llvm/asm in Python).  The call is
 * resolved as a launch resolves it, so the same variant is found, or
 * compiled and kept; then its post-pass IR is made again (the passes are
 * deterministic) and printed, or handed to the backend, which runs the
 * code generator that built the variant, under the same symbol names, and
 * returns text instead of code.  Nothing runs on the device. */
#include <stdlib.h>
#include <string.h>

#include "runtime.h"

static tack_status inspect_counted(tack_kernel *k, tack_device *dev, tack_inspect_kind kind,
                                   const tack_arg *args, int nargs, char **text,
                                   tack_error *err) {
    template_key tkey;
    ir_template *t;
    call_info info;
    info.nreductions = info.reductions_started = 0;
    variant *v;
    int64_t errors[DEBUG_ERR_LEN], extents[MAX_ARGS * TACK_MAX_NDIM];
    if (launch_resolve(k, dev, args, nargs, kernel_debug(k), &tkey, &t, &info, &v, errors,
                       extents, 0, err))
        return err->status;
    (void)v; /* compiled if it was missing; the text is made from its IR */
    if (kind != TACK_INSPECT_IR && !dev->ops->inspect)
        return runtime_error(err, TACK_ERR_VALUE,
                             "kernel '%s': device '%s' gives no text of its compiled code; "
                             "inspect_ir() shows Tack's IR", k->def->name, dev->name);
    ir_func *f;
    if (variant_post_pass_ir(t, &info, &f, err)) return err->status;
    tack_status st = TACK_OK;
    if (kind == TACK_INSPECT_IR) {
        *text = ir_print(f);
        if (!*text)
            st = runtime_error(err, TACK_ERR_NOMEM, "out of memory printing kernel '%s'",
                               k->def->name);
    } else {
        char symbol_base[65];
        if (variant_symbol_base(k, t, &info, dev, symbol_base))
            st = runtime_error(err, TACK_ERR_NOMEM, "out of memory inspecting kernel '%s'",
                               k->def->name);
        else
            st = dev->ops->inspect(dev->b, f, symbol_base, kind, text, err);
    }
    ir_func_free(f);
    return st;
}

tack_status tack_kernel_inspect(tack_kernel *k, tack_device *dev, tack_inspect_kind kind,
                                const tack_arg *args, int nargs, char **text, tack_error *err) {
    ERR_OR_SCRATCH(err);
    err->status = TACK_OK;
    if (text) *text = NULL;
    if (!k || !dev || !text || (nargs && !args) || nargs < 0)
        return runtime_error(err, TACK_ERR_VALUE,
                             "tack_kernel_inspect: NULL kernel, device, text or arguments");
    if (kind != TACK_INSPECT_IR && kind != TACK_INSPECT_LLVM && kind != TACK_INSPECT_ASM)
        return runtime_error(err, TACK_ERR_VALUE, "kernel '%s': unknown kind of text %d",
                             k->def->name, (int)kind);
    /* Counted as a reader: the template and variant it finds stay. */
    readers_enter(k);
    tack_status st = inspect_counted(k, dev, kind, args, nargs, text, err);
    readers_exit(k);
    return st;
}
