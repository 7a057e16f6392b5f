/* program.c - a native binary or SPIR-V, fresh from ocloc or from the disk
 * cache, to a module and its kernel; a variant's code; and the artifact
 * the disk cache stores for it: the entry name, the device it was built
 * for, the native binary and the SPIR-V.  A second process loads the
 * native binary (about 0.2 ms) with the driver alone, without ocloc or
 * Tack's code generation; a binary the driver refuses (a newer driver, a
 * different stepping) loads from the SPIR-V, which the driver finalizes. */
#include "level_zero.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/gpu/dialect.h"
#include "backend/gpu/gpu.h"

/* "TL0Z" and the layout's version: bump on any change to the record. */
#define ARTIFACT_MAGIC 0x5a304c54u
#define ARTIFACT_VERSION 1u

/* zeModuleCreate; on a refusal, err says so with the driver's build log. */
static tack_status create_module(backend *b, const char *name, int format, const void *bytes,
                                 size_t n, ze_module_handle_t *m, tack_error *err) {
    const ze_api *ze = b->ze;
    ze_module_desc_t d = {.stype = ZE_STRUCTURE_TYPE_MODULE_DESC,
                          .format = format,
                          .inputSize = n,
                          .pInputModule = bytes,
                          /* The SPIR-V's finalization keeps IEEE division and sqrt. */
                          .pBuildFlags = format == ZE_MODULE_FORMAT_IL_SPIRV
                                             ? "-cl-fp32-correctly-rounded-divide-sqrt"
                                             : ""};
    ze_module_build_log_handle_t log = NULL;
    *m = NULL;
    ze_result_t r = ze->ModuleCreate(b->context, b->device, &d, m, &log);
    char *text = NULL;
    if (r != ZE_RESULT_SUCCESS && log) {
        size_t len = 0;
        if (ze->ModuleBuildLogGetString(log, &len, NULL) == ZE_RESULT_SUCCESS && len &&
            (text = calloc(1, len + 1)) && ze->ModuleBuildLogGetString(log, &len, text) != ZE_RESULT_SUCCESS)
            text[0] = 0;
    }
    if (log) ze->ModuleBuildLogDestroy(log);
    tack_status st = TACK_OK;
    if (r != ZE_RESULT_SUCCESS) {
        *m = NULL;
        char what[160];
        snprintf(what, sizeof what, "kernel '%s' (%s)", name,
                 format == ZE_MODULE_FORMAT_NATIVE ? "native binary" : "SPIR-V");
        st = l0_fail(err, what, "zeModuleCreate", r);
        if (text && *text) {
            size_t used = strlen(err->message);
            snprintf(err->message + used, sizeof err->message - used, ":\n%s", text);
        }
    }
    free(text);
    return st;
}

tack_status l0_code_from(backend *b, const ir_func *f, const char *entry, size_t entry_len,
                         const void *native, size_t native_len, const void *spirv,
                         size_t spirv_len, backend_code **out, tack_error *err) {
    *out = NULL;
    backend_code *c = gpu_code_new(sizeof *c, f, entry, entry_len, "Level Zero", err);
    if (!c) return err->status;
    c->spirv = gpu_dup_n(spirv, spirv_len);
    c->spirv_len = spirv_len;
    if (!c->spirv) {
        l0_release(b, c);
        return gpu_nomem_building(err, f->name, "Level Zero");
    }
    tack_status st = TACK_ERR_DEVICE;
    tack_error native_err = {0};
    if (native && native_len) {
        st = create_module(b, f->name, ZE_MODULE_FORMAT_NATIVE, native, native_len, &c->module,
                           &native_err);
        if (!st && !(c->native = gpu_dup_n(native, native_len)))
            st = gpu_nomem_building(err, f->name, "Level Zero");
        c->native_len = c->native ? native_len : 0;
    }
    if (st && !c->module) {
        /* No binary, or one the driver refuses: the SPIR-V, finalized by
         * the driver; its native binary then goes in the artifact. */
        st = create_module(b, f->name, ZE_MODULE_FORMAT_IL_SPIRV, spirv, spirv_len, &c->module, err);
        c->from_spirv = 1;
        if (st && native_err.message[0]) {
            size_t used = strlen(err->message);
            snprintf(err->message + used, sizeof err->message - used, " (after the native binary: %s)",
                     native_err.message);
        }
        size_t n = 0;
        if (!st && b->ze->ModuleGetNativeBinary(c->module, &n, NULL) == ZE_RESULT_SUCCESS && n &&
            (c->native = malloc(n + 1)) &&
            b->ze->ModuleGetNativeBinary(c->module, &n, c->native) == ZE_RESULT_SUCCESS &&
            l0_is_native(c->native, n)) {
            c->native_len = n;
        } else if (c->native) {
            free(c->native);
            c->native = NULL;
        }
    }
    if (st) {
        l0_release(b, c);
        return st;
    }
    ze_kernel_desc_t kd = {.stype = ZE_STRUCTURE_TYPE_KERNEL_DESC, .pKernelName = c->g.entry};
    ze_result_t r = b->ze->KernelCreate(c->module, &kd, &c->kernel);
    if (r != ZE_RESULT_SUCCESS) {
        c->kernel = NULL;
        char what[160], call[192];
        snprintf(what, sizeof what, "kernel '%s'", f->name);
        snprintf(call, sizeof call, "zeKernelCreate(\"%s\")", c->g.entry);
        st = l0_fail(err, what, call, r);
        l0_release(b, c);
        return st;
    }
    *out = c;
    return TACK_OK;
}

void l0_release(backend *b, backend_code *c) {
    if (!c) return;
    if (c->kernel) b->ze->KernelDestroy(c->kernel);
    if (c->module) b->ze->ModuleDestroy(c->module);
    gpu_code_free(&c->g);
    free(c->native);
    free(c->spirv);
    free(c);
}

/* ---- the artifact ------------------------------------------------------ */

void l0_artifact_write(const char *entry, const char *device, const void *native,
                       size_t native_len, const void *spirv, size_t spirv_len, ser_writer *w) {
    gpu_artifact_head(w, ARTIFACT_MAGIC, ARTIFACT_VERSION, entry, device);
    ser_put_blob(w, native, native_len);
    ser_put_blob(w, spirv, spirv_len);
}

tack_status l0_artifact_parse(const char *kernel_name, const void *bytes, size_t n,
                              l0_record *out, tack_error *err) {
    memset(out, 0, sizeof *out);
    const void *blob[2];
    size_t len[2];
    int ok = gpu_artifact_read(bytes, n, ARTIFACT_MAGIC, ARTIFACT_VERSION, &out->head, 2, blob,
                               len);
    out->native = blob[0], out->native_len = len[0];
    out->spirv = blob[1], out->spirv_len = len[1];
    if (!ok || (out->native_len && !l0_is_native(out->native, out->native_len)) ||
        !l0_is_spirv(out->spirv, out->spirv_len)) {
        memset(out, 0, sizeof *out);
        return gpu_artifact_damaged(err, kernel_name, "Level Zero");
    }
    return TACK_OK;
}

int l0_artifact(backend *b, const backend_code *c, ser_writer *w) {
    l0_artifact_write(c->g.entry, b->ocloc_device, c->native, c->native_len, c->spirv,
                      c->spirv_len, w);
    return w->failed ? -1 : 0;
}

tack_status l0_load(backend *b, const ir_func *f, const void *bytes, size_t n, backend_code **out,
                    tack_error *err) {
    *out = NULL;
    l0_record a;
    tack_status st = l0_artifact_parse(f->name, bytes, n, &a, err);
    if (!st)
        st = gpu_artifact_check_target(err, f->name, "Level Zero", "device ", &a.head,
                                       b->ocloc_device);
    if (st) return st;
    /* A native binary that loads counts as a binary load; a module the
     * driver had to build from the SPIR-V, as a source build. */
    st = l0_code_from(b, f, a.head.entry, a.head.entry_len, a.native, a.native_len, a.spirv,
                      a.spirv_len, out, err);
    if (!st)
        atomic_fetch_add((*out)->from_spirv ? &backend_stats.source_builds : &backend_stats.binary_loads,
                         1);
    return st;
}
