/* program.c - a code object, fresh from hipRTC or from the disk cache, to
 * a loaded module and its function; a variant's code; and the artifact the
 * disk cache stores for it: the code object with its entry name and ISA.
 * A second process loads the code object with the runtime alone, without
 * hipRTC or Tack's code generation. */
#include "hip.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/gpu/gpu.h"

/* "THIP" and the layout's version: bump on any change to the record. */
#define ARTIFACT_MAGIC 0x50494854u
#define ARTIFACT_VERSION 1u

#define EM_AMDGPU 224

int hip_is_code_object(const void *bytes, size_t n) {
    const unsigned char *p = bytes;
    /* ELF magic, 64-bit, little-endian, and e_machine (offset 18). */
    return p && n >= 64 && p[0] == 0x7f && p[1] == 'E' && p[2] == 'L' && p[3] == 'F' &&
           p[4] == 2 && p[5] == 1 && (p[18] | p[19] << 8) == EM_AMDGPU;
}

tack_status hip_code_from_object(backend *b, const ir_func *f, const void *object, size_t len,
                                 const char *entry, size_t entry_len, backend_code **out,
                                 tack_error *err) {
    *out = NULL;
    backend_code *c = gpu_code_new(sizeof *c, f, entry, entry_len, "HIP", err);
    if (!c) return err->status;
    c->object = gpu_dup_n(object, len);
    c->object_len = len;
    c->arch = gpu_dup_n(b->arch, strlen(b->arch));
    if (!c->object || !c->arch) {
        hip_release(b, c);
        return gpu_nomem_building(err, f->name, "HIP");
    }

    tack_status st = gpu_rt_module_load(b, f->name, c->object, c->g.entry, &c->module, &c->fn, err);
    if (st) hip_release(b, c);
    else *out = c;
    return st;
}

void hip_release(backend *b, backend_code *c) {
    if (!c) return;
    gpu_rt_module_unload(b, c->module);
    gpu_code_free(&c->g);
    free(c->object);
    free(c->arch);
    free(c);
}

/* ---- the artifact ------------------------------------------------------ */

void hip_artifact_write(const char *entry, const char *arch, const void *object, size_t len,
                        ser_writer *w) {
    gpu_artifact_head(w, ARTIFACT_MAGIC, ARTIFACT_VERSION, entry, arch);
    ser_put_blob(w, object, len);
}

tack_status hip_artifact_parse(const char *kernel_name, const void *bytes, size_t n,
                               hip_record *out, tack_error *err) {
    memset(out, 0, sizeof *out);
    int ok = gpu_artifact_read(bytes, n, ARTIFACT_MAGIC, ARTIFACT_VERSION, &out->head, 1,
                               &out->object, &out->object_len);
    if (!ok || !out->object || !hip_is_code_object(out->object, out->object_len)) {
        memset(out, 0, sizeof *out);
        return gpu_artifact_damaged(err, kernel_name, "HIP");
    }
    return TACK_OK;
}

int hip_artifact(backend *b, const backend_code *c, ser_writer *w) {
    (void)b;
    hip_artifact_write(c->g.entry, c->arch, c->object, c->object_len, w);
    return w->failed ? -1 : 0;
}

tack_status hip_load(backend *b, const ir_func *f, const void *bytes, size_t n,
                     backend_code **out, tack_error *err) {
    *out = NULL;
    hip_record a;
    tack_status st = hip_artifact_parse(f->name, bytes, n, &a, err);
    if (!st) st = gpu_artifact_check_target(err, f->name, "HIP", "", &a.head, b->arch);
    if (st) return st;
    st = hip_code_from_object(b, f, a.object, a.object_len, a.head.entry, a.head.entry_len, out,
                              err);
    if (!st) atomic_fetch_add(&backend_stats.binary_loads, 1);
    return st;
}
