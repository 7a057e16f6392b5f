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

/* ---- code objects ------------------------------------------------------ */

tack_status cuda_code_from_ptx(backend *b, const ir_func *f, const char *ptx, size_t ptx_len,
                               const char *entry, size_t entry_len, backend_code **out,
                               tack_error *err) {
    *out = NULL;
    backend_code *c = gpu_code_new(sizeof *c, f, entry, entry_len, "CUDA", err);
    if (!c) return err->status;
    c->ptx = gpu_dup_n(ptx, ptx_len); /* the driver reads it NUL-terminated */
    size_t per_param = (f->nparams ? f->nparams : 1) * sizeof(int);
    c->textures = malloc(per_param);
    c->written = malloc(per_param);
    snprintf(c->arch, sizeof c->arch, "%s", b->arch);
    if (!c->ptx || !c->textures || !c->written) {
        cuda_release(b, c);
        return gpu_nomem_building(err, f->name, "CUDA");
    }
    c->pack_words = gpu_pack_words(f);
    for (int p = 0; p < f->nparams; p++) {
        if (f->params[p].role != ROLE_ARRAY) continue;
        if (gpu_hardware_texture(f, p, &gpu_dialect_cuda)) c->textures[c->ntextures++] = p;
        if (f->params[p].written) c->written[c->nwritten++] = p;
    }

    tack_status st = gpu_rt_module_load(b, f->name, c->ptx, c->g.entry, &c->module, &c->fn, err);
    if (st) cuda_release(b, c);
    else *out = c;
    return st;
}

void cuda_release(backend *b, backend_code *c) {
    if (!c) return;
    gpu_rt_module_unload(b, c->module);
    gpu_code_free(&c->g);
    free(c->ptx);
    free(c->textures);
    free(c->written);
    free(c);
}

/* ---- the artifact ------------------------------------------------------ */

void cuda_artifact_write(const char *entry, const char *arch, const char *ptx, ser_writer *w) {
    gpu_artifact_head(w, ARTIFACT_MAGIC, ARTIFACT_VERSION, entry, arch);
    ser_put_blob(w, ptx, strlen(ptx));
}

tack_status cuda_artifact_parse(const char *kernel_name, const void *bytes, size_t n,
                                cuda_record *out, tack_error *err) {
    memset(out, 0, sizeof *out);
    const void *ptx;
    int ok = gpu_artifact_read(bytes, n, ARTIFACT_MAGIC, ARTIFACT_VERSION, &out->head, 1, &ptx,
                               &out->ptx_len);
    out->ptx = ptx;
    /* PTX is text, and goes to the driver NUL-terminated. */
    if (!ok || !out->ptx_len || !out->ptx || memchr(out->ptx, 0, out->ptx_len)) {
        memset(out, 0, sizeof *out);
        return gpu_artifact_damaged(err, kernel_name, "CUDA");
    }
    return TACK_OK;
}

int cuda_artifact(backend *b, const backend_code *c, ser_writer *w) {
    (void)b;
    cuda_artifact_write(c->g.entry, c->arch, c->ptx, w);
    return w->failed ? -1 : 0;
}

tack_status cuda_load(backend *b, const ir_func *f, const void *bytes, size_t n,
                      backend_code **out, tack_error *err) {
    *out = NULL;
    cuda_record a;
    tack_status st = cuda_artifact_parse(f->name, bytes, n, &a, err);
    if (!st) st = gpu_artifact_check_target(err, f->name, "CUDA", "", &a.head, b->arch);
    if (st) return st;
    st = cuda_code_from_ptx(b, f, a.ptx, a.ptx_len, a.head.entry, a.head.entry_len, out, err);
    if (!st) atomic_fetch_add(&backend_stats.binary_loads, 1);
    return st;
}
