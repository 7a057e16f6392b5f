/* ir_cache.c - the disk cache's first level: lowered IR templates.
 *
 * An entry is keyed on the kernel's source, file and first line, and the
 * IR template key (debug mode, vector widths, the template classes'
 * structure without their per-process tokens).  It holds the serialized
 * template, which records every outside name lowering resolved and a
 * digest of what it meant.  A stored template is used only if every name
 * still resolves to the same thing in its own scope: the kernel's, an
 * inlined device function's (reached again through the name that led to
 * it), or a template method's (through the call's template argument). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/serialize.h"
#include "lower/lower.h"
#include "runtime.h"
#include "runtime/disk_cache.h"

static void ir_key(const tack_kernel *k, const template_key *key, ser_writer *w) {
    ser_put_str(w, "tack-ir-5"); /* 5: width codes of matrices to 16x16 (complex is 0x21) */
    ser_put_u32(w, (uint32_t)k->stage);
    ser_put_str(w, k->filename);
    ser_put_u32(w, (uint32_t)k->first_line);
    ser_put_str(w, k->source);
    if (k->adjoint) ser_put_str(w, "adjoint");
    ser_put_u8(w, (uint8_t)key->debug);
    ser_put_bytes(w, key->vec, sizeof key->vec);
    ser_put_bytes(w, key->row_ndim, sizeof key->row_ndim);
    tmpl_sig_portable(&key->tmpl, w);
}

/* The template argument at parameter p, then down the attribute path. */
static const tack_struct *template_at(const tack_arg *args, int nargs, int p, const char *path) {
    if (p < 0 || p >= nargs || args[p].kind != TACK_ARG_STRUCT) return NULL;
    const tack_struct *s = args[p].tmpl;
    while (s && *path) {
        const char *dot = strchr(path, '.');
        size_t n = dot ? (size_t)(dot - path) : strlen(path);
        const tack_struct *next = NULL;
        for (int i = 0; i < s->nfields; i++)
            if (s->fields[i].role == TACK_FIELD_STRUCT && strlen(s->fields[i].name) == n &&
                !strncmp(s->fields[i].name, path, n))
                next = s->fields[i].nested;
        s = next;
        path = dot ? dot + 1 : path + n;
    }
    return s;
}

static const ir_resolution *recorded(const ir_func *f, int src, const char *name) {
    for (int i = 0; i < f->nresolved; i++)
        if (f->resolved[i].src == src && !strcmp(f->resolved[i].name, name)) return &f->resolved[i];
    return NULL;
}

static int same_digest(const tack_name *n, const ir_resolution *r) {
    char digest[65];
    return r && ir_name_digest(n, digest) == 0 && !strcmp(digest, r->digest);
}

/* Whether every name the template resolved still means the same. */
static int still_resolves(const tack_kernel *k, const ir_func *f, const tack_arg *args, int nargs) {
    if (f->nsources < 1) return 0;
    void **ctx = calloc(f->nsources, sizeof *ctx);
    if (!ctx) return 0;
    int ok = 1;
    ctx[0] = k->resolver_ctx;
    /* Each inlined function's scope, through the name that reached it
     * (sources are numbered in the order lowering reached them). */
    for (int s = 1; ok && s < f->nsources; s++) {
        const ir_source *src = &f->sources[s];
        tack_name n;
        if (src->parent < 0 || src->parent >= s) {
            ok = 0;
        } else if (src->via_param < 0) {
            ok = lower_resolve_name(k->resolver, ctx[src->parent], src->via, &n) == 0 &&
                 n.kind == TACK_NAME_FUNC;
        } else {
            const tack_struct *t = template_at(args, nargs, src->via_param, src->via_path);
            memset(&n, 0, sizeof n);
            ok = t && k->resolver && k->resolver(t->method_ctx, src->via, &n) == 0 &&
                 n.kind == TACK_NAME_FUNC && n.text;
            if (ok) { /* recorded in the caller as Class.method */
                char qualified[300];
                snprintf(qualified, sizeof qualified, "%s.%s", t->class_name ? t->class_name : "?",
                         src->via);
                ok = same_digest(&n, recorded(f, src->parent, qualified));
            }
        }
        if (ok) ctx[s] = n.func_ctx;
    }
    for (int i = 0; ok && i < f->nresolved; i++) {
        const ir_resolution *r = &f->resolved[i];
        if (strchr(r->name, '.')) continue; /* a method: checked above */
        tack_name n;
        lower_resolve_name(k->resolver, ctx[r->src], r->name, &n);
        ok = same_digest(&n, r);
    }
    free(ctx);
    return ok;
}

ir_func *ir_cache_load(const tack_kernel *k, const template_key *key, const tack_arg *args,
                       int nargs) {
    disk_cache *dc = disk_cache_get();
    if (!dc) return NULL;
    ser_writer w = {0};
    ir_key(k, key, &w);
    void *payload = NULL;
    size_t len;
    ir_func *f = NULL;
    if (!w.failed && disk_cache_load_ir(dc, w.data, w.len, &payload, &len) == 0) {
        ser_reader r = ser_reader_init(payload, len);
        tack_error err;
        if (ir_deserialize(&r, 0, &f, &err) != TACK_OK || ser_left(&r) != 0) {
            ir_func_free(f);
            f = NULL;
            disk_cache_note_bad(dc);
        } else if (!still_resolves(k, f, args, nargs)) {
            ir_func_free(f); /* a name means something else now: lower afresh */
            f = NULL;
        }
    }
    free(payload);
    ser_writer_free(&w);
    return f;
}

void ir_cache_store(const tack_kernel *k, const template_key *key, const ir_func *f) {
    disk_cache *dc = disk_cache_get();
    if (!dc) return;
    ser_writer w = {0}, ir = {0};
    ir_key(k, key, &w);
    ir_serialize(f, &ir);
    char name[300];
    snprintf(name, sizeof name, "%s [ir]", f->name); /* list shows the two levels apart */
    if (!w.failed && !ir.failed) disk_cache_store(dc, w.data, w.len, name, ir.data, ir.len);
    ser_writer_free(&w);
    ser_writer_free(&ir);
}
