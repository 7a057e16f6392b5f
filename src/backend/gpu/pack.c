/* pack.c - a call's scalar pack (see gpu.h): the launch range evaluated on
 * the host, its trip count, the ndindex extents and each scalar's bits. */
#include <stdio.h>
#include <string.h>

#include "util/arena.h"

#include "backend/backend.h"
#include "backend/gpu/gpu.h"

static int own_str(arena *a, const char **s) {
    if (!*s) return 1;
    *s = arena_strdup(a, *s);
    return *s != NULL;
}

ir_func *gpu_keep_ir(const ir_func *f) {
    ir_func *c = ir_clone(f);
    if (!c) return NULL;
    arena *a = &c->mem;
    int ok = own_str(a, &c->filename) && own_str(a, &c->source) && own_str(a, &c->name);
    for (int p = 0; ok && p < c->nparams; p++) ok = own_str(a, &c->params[p].name);
    if (ok && c->nsources) {
        ir_source *s = arena_alloc(a, c->nsources * sizeof *s);
        ok = s != NULL;
        if (ok) memcpy(s, f->sources, c->nsources * sizeof *s);
        for (int i = 0; ok && i < c->nsources; i++)
            ok = own_str(a, &s[i].text) && own_str(a, &s[i].filename) &&
                 own_str(a, &s[i].name) && own_str(a, &s[i].via) && own_str(a, &s[i].via_path);
        c->sources = s;
    }
    if (ok && c->nsites) {
        ir_site *s = arena_alloc(a, c->nsites * sizeof *s);
        ok = s != NULL;
        if (ok) memcpy(s, f->sites, c->nsites * sizeof *s);
        c->sites = s;
    }
    c->resolved = NULL; /* what names meant matters to the disk cache only */
    c->nresolved = 0;
    if (!ok) {
        ir_func_free(c);
        return NULL;
    }
    return c;
}

tack_status gpu_pack_from_range(const ir_func *f, const int64_t range[5], const uint64_t *slots,
                                int64_t *pack, tack_error *err) {
    if (gpu_pack_words(f) > GPU_PACK_MAX_WORDS) {
        err->status = TACK_ERR_INTERNAL;
        snprintf(err->message, sizeof err->message,
                 "kernel '%s': %d parameters, more than a launch can take", f->name, f->nparams);
        return TACK_ERR_INTERNAL;
    }
    pack[GPU_PACK_START] = range[0];
    pack[GPU_PACK_STEP] = range[2];
    pack[GPU_PACK_COUNT] = backend_launch_count(range);
    pack[GPU_PACK_INNER0] = range[3];
    pack[GPU_PACK_INNER1] = range[4];
    for (int p = 0; p < f->nparams; p++)
        pack[GPU_PACK_SCALARS + p] = f->params[p].role == ROLE_SCALAR ? (int64_t)slots[p] : 0;
    return TACK_OK;
}

tack_status gpu_pack_fill(const ir_func *f, const uint64_t *slots,
                          const int64_t (*dims)[TACK_MAX_NDIM], const gpu_device_read *rd,
                          int64_t *pack, tack_error *err) {
    int64_t r[5];
    if (gpu_range_eval(f, slots, dims, rd, r, err)) return err->status;
    if (r[2] == 0) {
        err->status = TACK_ERR_VALUE;
        snprintf(err->message, sizeof err->message,
                 "kernel '%s': the parallel loop's range() step must not be zero", f->name);
        return TACK_ERR_VALUE;
    }
    return gpu_pack_from_range(f, r, slots, pack, err);
}
