/* program.c - PTX, fresh from NVRTC or from the disk cache, to a loaded
 * module and its function; a variant's code object; and the artifact the
 * disk cache stores for it: the PTX with its entry name and architecture.
 * A second process loads the PTX with the driver alone (its JIT makes the
 * device's code), without NVRTC or Tack's code generation. */
#include "cuda.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/gpu/gpu.h"

/* "TCUD" and the layout's version: bump on any change to the record. */
#define ARTIFACT_MAGIC 0x44554354u
#define ARTIFACT_VERSION 1u

static tack_status nomem(tack_error *err, const char *kernel_name) {
    err->status = TACK_ERR_NOMEM;
    err->filename[0] = 0;
    err->lineno = err->col = 0;
    snprintf(err->message, sizeof err->message, "kernel '%s': out of memory building CUDA code",
             kernel_name);
    return TACK_ERR_NOMEM;
}

/* ---- code objects ------------------------------------------------------ */

static char *dup_n(const char *s, size_t n) {
    char *d = malloc(n + 1);
    if (d) {
        memcpy(d, s, n);
        d[n] = 0;
    }
    return d;
}

tack_status cuda_code_from_ptx(backend *b, const ir_func *f, const char *ptx, size_t ptx_len,
                               const char *entry, size_t entry_len, backend_code **out,
                               tack_error *err) {
    *out = NULL;
    backend_code *c = calloc(1, sizeof *c);
    if (!c) return nomem(err, f->name);
    c->f = gpu_keep_ir(f);
    c->entry = dup_n(entry, entry_len);
    c->ptx = dup_n(ptx, ptx_len); /* the driver reads it NUL-terminated */
    size_t per_param = (f->nparams ? f->nparams : 1) * sizeof(int);
    c->arrays = malloc(per_param);
    c->textures = malloc(per_param);
    c->written = malloc(per_param);
    snprintf(c->arch, sizeof c->arch, "%s", b->arch);
    if (!c->f || !c->entry || !c->ptx || !c->arrays || !c->textures || !c->written) {
        cuda_release(b, c);
        return nomem(err, f->name);
    }
    c->pack_words = gpu_pack_words(f);
    for (int p = 0; p < f->nparams; p++) {
        if (f->params[p].role != ROLE_ARRAY) continue;
        c->arrays[c->narrays++] = p;
        if (gpu_hardware_texture(f, p, &gpu_dialect_cuda)) c->textures[c->ntextures++] = p;
        if (f->params[p].written) c->written[c->nwritten++] = p;
    }
    if (gpu_print_table_init(&c->prints, c->f) < 0) {
        cuda_release(b, c);
        return nomem(err, f->name);
    }

    char what[160];
    snprintf(what, sizeof what, "kernel '%s'", f->name);
    tack_status st = cuda_enter(b, err);
    if (st) {
        cuda_release(b, c);
        return st;
    }
    /* The JIT's log says why PTX is refused (a PTX version newer than the
     * driver, most often). */
    char log[1024] = "";
    CUjit_option opts[2] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
    void *vals[2] = {log, (void *)(uintptr_t)(sizeof log - 1)};
    CUresult r = b->cu->ModuleLoadDataEx(&c->module, c->ptx, 2, opts, vals);
    if (r != CUDA_SUCCESS) {
        c->module = NULL;
        st = cuda_fail(b->cu, err, what, "cuModuleLoadData", r);
        size_t used = strlen(err->message);
        log[sizeof log - 1] = 0;
        if (r == CUDA_ERROR_UNSUPPORTED_PTX_VERSION || r == CUDA_ERROR_INVALID_PTX)
            snprintf(err->message + used, sizeof err->message - used,
                     "; the PTX is from NVRTC %s and driver %d.%d cannot load it: use an NVRTC "
                     "no newer than the driver (TACK_NVRTC=/path/to/libnvrtc.so.N)%s%s",
                     cuda_nvrtc_version(), b->driver_version / 1000,
                     b->driver_version % 1000 / 10, *log ? "\n" : "", log);
        else if (*log)
            snprintf(err->message + used, sizeof err->message - used, "\n%s", log);
        cuda_release(b, c);
        return st;
    }
    if ((r = b->cu->ModuleGetFunction(&c->fn, c->module, c->entry)) != CUDA_SUCCESS) {
        char call[192];
        snprintf(call, sizeof call, "cuModuleGetFunction(\"%s\")", c->entry);
        st = cuda_fail(b->cu, err, what, call, r);
        cuda_release(b, c);
        return st;
    }
    *out = c;
    return TACK_OK;
}

void cuda_release(backend *b, backend_code *c) {
    if (!c) return;
    tack_error scratch;
    if (c->module && cuda_enter(b, &scratch) == TACK_OK) b->cu->ModuleUnload(c->module);
    ir_func_free(c->f);
    free(c->entry);
    free(c->ptx);
    free(c->arrays);
    free(c->textures);
    free(c->written);
    gpu_print_table_free(&c->prints);
    free(c);
}

/* ---- the artifact ------------------------------------------------------ */

void cuda_artifact_write(const char *entry, const char *arch, const char *ptx, ser_writer *w) {
    ser_put_u32(w, ARTIFACT_MAGIC);
    ser_put_u32(w, ARTIFACT_VERSION);
    ser_put_str(w, entry);
    ser_put_str(w, arch);
    ser_put_blob(w, ptx, strlen(ptx));
}

tack_status cuda_artifact_parse(const char *kernel_name, const void *bytes, size_t n,
                                cuda_record *out, tack_error *err) {
    memset(out, 0, sizeof *out);
    ser_reader r = ser_reader_init(bytes, n);
    int null_entry = 0, null_arch = 0;
    uint32_t magic = ser_get_u32(&r), version = ser_get_u32(&r);
    out->entry = ser_get_str(&r, &out->entry_len, &null_entry);
    out->arch = ser_get_str(&r, &out->arch_len, &null_arch);
    out->ptx = ser_get_blob(&r, &out->ptx_len);
    /* Strings go to the driver NUL-terminated: an embedded NUL is damage;
     * PTX is text, and starts with its comment header or a directive. */
    if (r.failed || magic != ARTIFACT_MAGIC || version != ARTIFACT_VERSION || null_entry ||
        null_arch || !out->entry_len || !out->arch_len || !out->ptx_len || !out->ptx ||
        memchr(out->entry, 0, out->entry_len) || memchr(out->arch, 0, out->arch_len) ||
        memchr(out->ptx, 0, out->ptx_len) || ser_left(&r)) {
        memset(out, 0, sizeof *out);
        err->status = TACK_ERR_INTERNAL;
        err->filename[0] = 0;
        err->lineno = err->col = 0;
        snprintf(err->message, sizeof err->message,
                 "kernel '%s': the stored CUDA code is damaged or from another version",
                 kernel_name);
        return TACK_ERR_INTERNAL;
    }
    return TACK_OK;
}

int cuda_artifact(backend *b, const backend_code *c, ser_writer *w) {
    (void)b;
    cuda_artifact_write(c->entry, c->arch, c->ptx, w);
    return w->failed ? -1 : 0;
}

tack_status cuda_load(backend *b, const ir_func *f, const void *bytes, size_t n,
                      backend_code **out, tack_error *err) {
    *out = NULL;
    cuda_record a;
    tack_status st = cuda_artifact_parse(f->name, bytes, n, &a, err);
    if (st) return st;
    /* The cache's key names the architecture already; a mismatch is damage. */
    if (a.arch_len != strlen(b->arch) || memcmp(a.arch, b->arch, a.arch_len)) {
        err->status = TACK_ERR_INTERNAL;
        err->filename[0] = 0;
        err->lineno = err->col = 0;
        snprintf(err->message, sizeof err->message,
                 "kernel '%s': the stored CUDA code is for %.*s, the device is %s", f->name,
                 (int)a.arch_len, a.arch, b->arch);
        return TACK_ERR_INTERNAL;
    }
    st = cuda_code_from_ptx(b, f, a.ptx, a.ptx_len, a.entry, a.entry_len, out, err);
    if (!st) atomic_fetch_add(&backend_stats.binary_loads, 1);
    return st;
}
