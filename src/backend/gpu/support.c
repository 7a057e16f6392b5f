/* support.c - whether a device (or a dialect) can run a kernel at all:
 * f64 anywhere needs fp64, and a 64-bit atomic needs 64-bit atomics.  A
 * refusal is TACK_ERR_TYPE (the kernel is fine; its types are not for
 * this device) naming the parameter or variable, or the line of the first
 * use.  Shared by the OpenCL and Level Zero drivers and by the emitter for
 * a dialect without f64 (MSL). */
#include <stdarg.h>
#include <stdio.h>

#include "backend/gpu/gpu.h"
#include "front/ast.h"

typedef struct finder {
    int (*wanted)(const ir_expr *e);
    const ir_expr *hit;
} finder;

static void find_expr(finder *F, const ir_expr *e);
static void find_block(finder *F, const ir_block *b);

static void find_expr(finder *F, const ir_expr *e) {
    if (!e || F->hit) return;
    if (F->wanted(e)) {
        F->hit = e;
        return;
    }
    find_expr(F, e->a);
    find_expr(F, e->b);
    find_expr(F, e->cond);
    for (int i = 0; i < e->nargs && e->args; i++) find_expr(F, e->args[i]);
    if (e->body) find_block(F, e->body);
}

static void find_block(finder *F, const ir_block *b) {
    for (int i = 0; i < b->n && !F->hit; i++) {
        const ir_stmt *s = b->stmts[i];
        find_expr(F, s->value);
        for (int k = 0; k < s->nindices; k++) find_expr(F, s->indices[k]);
        find_expr(F, s->start);
        find_expr(F, s->stop);
        find_expr(F, s->step);
        find_block(F, &s->body);
        find_block(F, &s->orelse);
    }
}

static int is_f64(const ir_expr *e) { return e->type == TACK_F64; }
static int is_atomic64(const ir_expr *e) {
    return e->kind == IR_ATOMIC && e->type >= 0 && e->type < TACK_DTYPE_COUNT &&
           ir_type_bits(e->type) == 64;
}

static tack_status refuse(tack_error *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static tack_status refuse(tack_error *err, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->message, sizeof err->message, fmt, ap);
    va_end(ap);
    err->filename[0] = 0;
    err->lineno = err->col = 0;
    err->status = TACK_ERR_TYPE;
    return TACK_ERR_TYPE;
}

/* "<what>, but <who> has no <support> support", at e's line. */
static tack_status unsupported(const ir_func *f, const ir_expr *e, const char *what,
                               const char *who, const char *support, tack_error *err) {
    if (e->src >= 0 && e->src < f->nsources && f->sources[e->src].text) {
        const ir_source *s = &f->sources[e->src];
        src_info where = {s->text, s->filename, s->first_line, s->name, s->is_function};
        src_error(&where, e->line, e->col, err, "%s, but %s has no %s support", what, who, support);
        err->status = TACK_ERR_TYPE; /* a kernel fine elsewhere, wrong for this device */
        return TACK_ERR_TYPE;
    }
    return refuse(err, "kernel '%s', line %d: %s, but %s has no %s support", f->name,
                  f->first_line + e->line - 1, what, who, support);
}

tack_status gpu_check_support(const ir_func *f, int fp64, int atomics64, const char *who,
                              const char *atomics64_word, tack_error *err) {
    if (!fp64) {
        for (int p = 0; p < f->nparams; p++) {
            const ir_param *q = &f->params[p];
            if ((q->role == ROLE_SCALAR || q->role == ROLE_ARRAY) && q->type == TACK_F64)
                return refuse(err, "kernel '%s': parameter '%s' is f64 but %s has no fp64 support",
                              f->name, q->name, who);
        }
        finder F = {is_f64, NULL};
        find_block(&F, &f->body);
        if (F.hit) return unsupported(f, F.hit, "f64 arithmetic", who, "fp64", err);
        for (int i = 0; i < f->nlocals; i++)
            if (f->locals[i].type == TACK_F64)
                return refuse(err, "kernel '%s': variable '%s' is f64 but %s has no fp64 support",
                              f->name, f->locals[i].name, who);
        for (int i = 0; i < f->nscratch; i++)
            if (f->scratch[i].type == TACK_F64)
                return refuse(err, "kernel '%s': array '%s' is f64 but %s has no fp64 support",
                              f->name, f->scratch[i].name, who);
    }
    if (!atomics64) {
        finder F = {is_atomic64, NULL};
        find_block(&F, &f->body);
        if (F.hit) {
            char what[96];
            snprintf(what, sizeof what, "a 64-bit atomic (%s on %s)", ir_atomic_name(F.hit->atomic),
                     ir_type_name(F.hit->type));
            return unsupported(f, F.hit, what, who, atomics64_word, err);
        }
    }
    return TACK_OK;
}

/* Every GPU keeps a lane's tack.local arrays in its private memory, which
 * holds far less than a CPU thread's scratch area (PoCL's work-item stack
 * dies from 512 KiB, CUDA allows 512 KiB per thread with the spills).
 * Beyond GPU_PRIVATE_BYTES a kernel is refused before any driver sees it,
 * naming the largest array. */
tack_status gpu_check_private(const ir_func *f, const char *who, tack_error *err) {
    int64_t total = 0, most = -1;
    int big = -1;
    for (int i = 0; i < f->nscratch; i++) {
        if (f->scratch[i].shared) continue; /* workgroup memory: checked at launch */
        int64_t bytes = ir_scratch_size(&f->scratch[i]) * tack_dtype_size((tack_dtype)f->scratch[i].type);
        total += bytes;
        if (bytes > most) {
            most = bytes;
            big = i;
        }
    }
    if (total <= GPU_PRIVATE_BYTES) return TACK_OK;
    tack_status st = refuse(err,
                            "kernel '%s': local array '%s' holds %lld bytes (%lld with the kernel's "
                            "other local arrays), but %s devices hold at most %d bytes of local arrays per "
                            "iteration; keep them smaller or pass a larger array as an argument",
                            f->name, f->scratch[big].name, (long long)most, (long long)total, who,
                            GPU_PRIVATE_BYTES);
    err->status = TACK_ERR_VALUE;
    (void)st;
    return TACK_ERR_VALUE;
}
