/* templates.c - template-class arguments (tack_struct): their part of the
 * keys, their expansion into hidden arguments, and retirement of what was
 * compiled for a class that is gone.
 *
 * The key encodes, per template argument: the class token, each field's
 * name and role, a constant's type and value bits (so 1 and 1.0 differ,
 * 0.0 and -0.0 differ, and a NaN equals itself), an array's dtype, full
 * shape, vector width and texture flag, and nested templates recursively.
 * Instance scalars are keyed by name only: their values are runtime
 * parameters. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/serialize.h"
#include "runtime.h"

#define MAX_DEPTH 8

/* Checked before lowering, which sizes its vector scalarization by it. */
static int vec_width_ok(int w) { return tack_width_valid(w); }

typedef struct encoder {
    tmpl_sig *sig;
    int overflow;
} encoder;

static void put(encoder *e, const void *p, size_t n) {
    if (n > (size_t)(MAX_TMPL_BYTES - e->sig->len)) {
        e->overflow = 1;
        return;
    }
    memcpy(e->sig->bytes + e->sig->len, p, n);
    e->sig->len += (int)n;
}

static void put_u8(encoder *e, unsigned v) {
    uint8_t b = (uint8_t)v;
    put(e, &b, 1);
}

static void put_u32(encoder *e, uint32_t v) { put(e, &v, sizeof v); }
static void put_u64(encoder *e, uint64_t v) { put(e, &v, sizeof v); }

/* Exact lengths: a name that does not fit overflows the key, which is
 * refused; cutting it would let two names share a key. */
static void put_str(encoder *e, const char *s) {
    size_t n = s ? strlen(s) : 0;
    if (n > MAX_TMPL_BYTES) {
        e->overflow = 1;
        return;
    }
    uint32_t len = (uint32_t)n;
    put(e, &len, sizeof len);
    put(e, s, n);
}

static void add_token(encoder *e, uint64_t token) {
    tmpl_sig *s = e->sig;
    for (int i = 0; i < s->ntokens; i++)
        if (s->tokens[i] == token) return;
    if (s->ntokens == MAX_TMPL_TOKENS) e->overflow = 1;
    else s->tokens[s->ntokens++] = token;
}

static int scalar_kind_ok(const tack_arg *a) {
    return a->kind == TACK_ARG_INT || a->kind == TACK_ARG_UINT || a->kind == TACK_ARG_FLOAT ||
           a->kind == TACK_ARG_BOOL;
}

static tack_status encode(encoder *e, const tack_kernel *k, const char *param,
                          const tack_struct *s, int depth, tack_error *err) {
    if (depth > MAX_DEPTH)
        return runtime_error(err, TACK_ERR_VALUE,
                             "kernel '%s': parameter '%s': templates nested more than %d deep",
                             tack_kernel_name(k), param, MAX_DEPTH);
    if (s->nfields < 0 || (s->nfields && !s->fields))
        return runtime_error(err, TACK_ERR_VALUE, "kernel '%s': parameter '%s': bad template "
                             "(%d attributes)", tack_kernel_name(k), param, s->nfields);
    put_u64(e, s->class_token);
    add_token(e, s->class_token);
    put_u32(e, (uint32_t)s->nfields);
    for (int i = 0; i < s->nfields; i++) {
        const tack_field *f = &s->fields[i];
        if (!f->name || !f->name[0])
            return runtime_error(err, TACK_ERR_VALUE, "kernel '%s': parameter '%s': a template "
                                 "attribute without a name", tack_kernel_name(k), param);
        put_str(e, f->name);
        put_u8(e, f->role);
        switch (f->role) {
        case TACK_FIELD_CONSTANT:
        case TACK_FIELD_SCALAR:
            if (!scalar_kind_ok(&f->value))
                return runtime_error(err, TACK_ERR_TYPE,
                                     "kernel '%s': parameter '%s': attribute '%s' must be a number",
                                     tack_kernel_name(k), param, f->name);
            if (f->role == TACK_FIELD_SCALAR) break; /* the value is a runtime parameter */
            put_u8(e, f->value.kind);
            if (f->value.kind == TACK_ARG_FLOAT) put(e, &f->value.f, 8); /* bits, not value */
            else if (f->value.kind == TACK_ARG_UINT) put_u64(e, f->value.u);
            else put_u64(e, (uint64_t)f->value.i);
            break;
        case TACK_FIELD_ARRAY: {
            const tack_arg *a = &f->value;
            if (a->kind != TACK_ARG_ARRAY || a->ndim < 0 || a->ndim > TACK_MAX_NDIM ||
                !vec_width_ok(a->vec_width))
                return runtime_error(err, TACK_ERR_TYPE,
                                     "kernel '%s': parameter '%s': attribute '%s' must be an array",
                                     tack_kernel_name(k), param, f->name);
            put_u8(e, a->dtype);
            put_u8(e, (unsigned)a->vec_width);
            put_u8(e, (unsigned)a->is_texture);
            put_u8(e, (unsigned)a->ndim);
            for (int d = 0; d < a->ndim; d++) put_u64(e, (uint64_t)a->shape[d]);
            break;
        }
        case TACK_FIELD_STRUCT:
            if (!f->nested)
                return runtime_error(err, TACK_ERR_VALUE,
                                     "kernel '%s': parameter '%s': attribute '%s' has no template",
                                     tack_kernel_name(k), param, f->name);
            if (encode(e, k, param, f->nested, depth + 1, err)) return err->status;
            break;
        default:
            return runtime_error(err, TACK_ERR_VALUE,
                                 "kernel '%s': parameter '%s': attribute '%s' has an unknown role",
                                 tack_kernel_name(k), param, f->name);
        }
    }
    return TACK_OK;
}

tack_status template_key_of(const tack_kernel *k, const tack_arg *args, int nargs, int debug,
                            template_key *key, tack_error *err) {
    key->debug = debug != 0;
    memset(key->vec, 0, sizeof key->vec);
    memset(key->row_ndim, 0, sizeof key->row_ndim);
    key->tmpl.len = key->tmpl.ntokens = 0;
    encoder e = {&key->tmpl, 0};
    for (int i = 0; i < nargs && i < TACK_MAX_PARAMS; i++) {
        const tack_arg *a = &args[i];
        if (a->kind == TACK_ARG_ARRAY && !vec_width_ok(a->vec_width))
            return runtime_error(err, TACK_ERR_VALUE,
                                 "kernel '%s': parameter '%s': vector width %d (vectors have 2 to 4 "
                                 "components; matrices are 2x2, 3x3 or 4x4)", tack_kernel_name(k),
                                 tack_kernel_param_name(k, i), a->vec_width);
        if (a->kind == TACK_ARG_ARRAY && a->vec_width > 0) key->vec[i] = (uint8_t)a->vec_width;
        if (a->kind == TACK_ARG_COMPLEX) { /* lowering reads it as a complex value */
            if (a->dtype != TACK_F32 && a->dtype != TACK_F64)
                return runtime_error(err, TACK_ERR_VALUE, "kernel '%s': parameter '%s': a complex "
                                     "number's parts are f32 or f64", tack_kernel_name(k),
                                     tack_kernel_param_name(k, i));
            key->vec[i] = TACK_COMPLEX_WIDTH;
        }
        /* A row of it reaches a call: its ndim decides row or element. */
        if (a->kind == TACK_ARG_ARRAY && (k->row_params >> i & 1) && !a->is_texture &&
            !tack_width_rows(a->vec_width) && a->ndim > 0 && a->ndim <= TACK_MAX_NDIM)
            key->row_ndim[i] = (uint8_t)a->ndim;
        if (a->kind != TACK_ARG_STRUCT) continue;
        const char *pname = tack_kernel_param_name(k, i);
        if (!a->tmpl)
            return runtime_error(err, TACK_ERR_VALUE, "kernel '%s': parameter '%s': NULL template",
                                 tack_kernel_name(k), pname ? pname : "?");
        put_u8(&e, 'T');
        put_u8(&e, (unsigned)i);
        if (encode(&e, k, pname ? pname : "?", a->tmpl, 0, err)) return err->status;
    }
    if (e.overflow)
        return runtime_error(err, TACK_ERR_VALUE,
                             "kernel '%s': template arguments too large to key (at most %d "
                             "classes and about %d bytes of structure)",
                             tack_kernel_name(k), MAX_TMPL_TOKENS, MAX_TMPL_BYTES);
    return TACK_OK;
}

void tmpl_sig_copy(tmpl_sig *to, const tmpl_sig *from) {
    to->len = from->len;
    to->ntokens = from->ntokens;
    memcpy(to->bytes, from->bytes, from->len);
    memcpy(to->tokens, from->tokens, from->ntokens * sizeof from->tokens[0]);
}

int tmpl_sig_equal(const tmpl_sig *a, const tmpl_sig *b) {
    return a->len == b->len && !memcmp(a->bytes, b->bytes, a->len);
}

int tmpl_sig_names(const tmpl_sig *s, uint64_t token) {
    for (int i = 0; i < s->ntokens; i++)
        if (s->tokens[i] == token) return 1;
    return 0;
}

/* ---- expansion ---- */

static int expand(const tack_struct *s, tack_arg *out, int *n, int depth) {
    for (int i = 0; i < s->nfields && depth <= MAX_DEPTH; i++) {
        const tack_field *f = &s->fields[i];
        if (f->role == TACK_FIELD_STRUCT) {
            if (expand(f->nested, out, n, depth + 1)) return -1;
        } else if (f->role == TACK_FIELD_ARRAY || f->role == TACK_FIELD_SCALAR) {
            if (*n == TACK_MAX_PARAMS) return -1;
            out[(*n)++] = f->value;
        }
    }
    return 0;
}

tack_status template_expand(const tack_kernel *k, const tack_arg *args, int nargs, tack_arg *out,
                            int *nout, tack_error *err) {
    if (nargs > TACK_MAX_PARAMS)
        return runtime_error(err, TACK_ERR_TYPE, "kernel '%s': too many arguments (%d)",
                             tack_kernel_name(k), nargs);
    memcpy(out, args, nargs * sizeof *args);
    int n = nargs;
    for (int i = 0; i < nargs; i++) {
        int full = 0;
        if (args[i].kind == TACK_ARG_STRUCT) full = expand(args[i].tmpl, out, &n, 0);
        /* A complex number's imaginary part is a hidden parameter of its
         * own (lower.c adds it in this order), typed as the real part. */
        else if (args[i].kind == TACK_ARG_COMPLEX && !(full = n == TACK_MAX_PARAMS))
            out[n++] = (tack_arg){.kind = TACK_ARG_COMPLEX, .dtype = args[i].dtype,
                                  .f = args[i].imag};
        if (full)
            return runtime_error(err, TACK_ERR_VALUE,
                                 "kernel '%s': the arguments and their templates' arrays and "
                                 "scalars add up to more than %d parameters",
                                 tack_kernel_name(k), TACK_MAX_PARAMS);
    }
    *nout = n;
    return TACK_OK;
}

/* ---- text ---- */

typedef struct decoder {
    const tmpl_sig *s;
    int pos, bad;
    char *out;
    size_t len, cap;
} decoder;

static void get(decoder *d, void *p, size_t n) {
    if (n > (size_t)(d->s->len - d->pos)) {
        d->bad = 1;
        memset(p, 0, n);
        return;
    }
    memcpy(p, d->s->bytes + d->pos, n);
    d->pos += (int)n;
}

static unsigned get_u8(decoder *d) {
    uint8_t b;
    get(d, &b, 1);
    return b;
}

static uint32_t get_u32(decoder *d) {
    uint32_t v;
    get(d, &v, sizeof v);
    return v;
}

/* A name as put_str wrote it: borrowed from the key's bytes (no copy, so
 * no length limit), with its exact length. */
static const char *get_name(decoder *d, uint32_t *len) {
    *len = get_u32(d);
    if (*len > (uint32_t)(d->s->len - d->pos)) {
        d->bad = 1;
        *len = 0;
        return "";
    }
    const char *name = (const char *)d->s->bytes + d->pos;
    d->pos += (int)*len;
    return name;
}

static void say(decoder *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(decoder *d, const char *fmt, ...) {
    if (d->len >= d->cap) return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(d->out + d->len, d->cap - d->len, fmt, ap);
    va_end(ap);
    if (n > 0) d->len += (size_t)n < d->cap - d->len ? (size_t)n : d->cap - d->len - 1;
}

static void describe(decoder *d, int depth) {
    uint64_t token;
    get(d, &token, 8);
    say(d, "class=%" PRIu64, token);
    uint32_t nfields = get_u32(d);
    for (uint32_t i = 0; i < nfields && !d->bad && depth <= MAX_DEPTH; i++) {
        uint32_t len;
        const char *name = get_name(d, &len);
        unsigned role = get_u8(d);
        if (role == TACK_FIELD_CONSTANT) {
            unsigned kind = get_u8(d);
            uint64_t bits;
            get(d, &bits, 8);
            const char *type = kind == TACK_ARG_FLOAT ? "float" : kind == TACK_ARG_BOOL ? "bool" : "int";
            if (kind == TACK_ARG_FLOAT)
                say(d, " const=%.*s:%s:%016" PRIx64, (int)len, name, type, bits);
            else if (kind == TACK_ARG_UINT)
                say(d, " const=%.*s:%s:%" PRIu64, (int)len, name, type, bits);
            else say(d, " const=%.*s:%s:%" PRId64, (int)len, name, type, (int64_t)bits);
        } else if (role == TACK_FIELD_SCALAR) {
            say(d, " scalar=%.*s", (int)len, name);
        } else if (role == TACK_FIELD_ARRAY) {
            unsigned dtype = get_u8(d), vec = get_u8(d), tex = get_u8(d), ndim = get_u8(d);
            say(d, " %s=%.*s:%s:(", tex ? "texture" : "array", (int)len, name,
                tack_dtype_name(dtype));
            for (unsigned k = 0; k < ndim && k < TACK_MAX_NDIM; k++) {
                int64_t extent;
                get(d, &extent, 8);
                say(d, "%s%" PRId64, k ? "," : "", extent);
            }
            say(d, "):%u", vec);
        } else {
            say(d, " struct=%.*s{", (int)len, name);
            describe(d, depth + 1);
            say(d, "}");
        }
    }
}

void tmpl_sig_text(const tmpl_sig *s, char text[][512], int max, int *n) {
    decoder d = {s, 0, 0, NULL, 0, 0};
    *n = 0;
    while (d.pos < s->len && !d.bad && *n < max) {
        get_u8(&d); /* 'T' */
        unsigned param = get_u8(&d);
        d.out = text[*n];
        d.len = 0;
        d.cap = 512;
        text[*n][0] = 0;
        say(&d, "tmpl_%u ", param);
        describe(&d, 0);
        (*n)++;
    }
}

/* ---- the portable form ---- */

/* The encoding without class tokens, which are per process.  What a class
 * bakes into code is all still there: its constants here, its methods'
 * sources among the names lowering resolved. */
static void copy_struct(decoder *d, ser_writer *w, int depth) {
    uint64_t token;
    get(d, &token, 8); /* dropped */
    uint32_t nfields = get_u32(d);
    ser_put_u32(w, nfields);
    for (uint32_t i = 0; i < nfields && !d->bad && depth <= MAX_DEPTH; i++) {
        uint32_t len;
        const char *name = get_name(d, &len);
        ser_put_u32(w, len);
        ser_put_bytes(w, name, len);
        unsigned role = get_u8(d);
        ser_put_u8(w, (uint8_t)role);
        if (role == TACK_FIELD_CONSTANT) {
            uint8_t rest[9];
            get(d, rest, sizeof rest);
            ser_put_bytes(w, rest, sizeof rest);
        } else if (role == TACK_FIELD_ARRAY) {
            uint8_t head[4];
            get(d, head, sizeof head);
            ser_put_bytes(w, head, sizeof head);
            for (unsigned k = 0; k < head[3] && k < TACK_MAX_NDIM; k++) {
                uint8_t extent[8];
                get(d, extent, 8);
                ser_put_bytes(w, extent, 8);
            }
        } else if (role == TACK_FIELD_STRUCT) {
            copy_struct(d, w, depth + 1);
        }
    }
}

void tmpl_sig_portable(const tmpl_sig *s, ser_writer *w) {
    decoder d = {s, 0, 0, NULL, 0, 0};
    while (d.pos < s->len && !d.bad) {
        uint8_t head[2] = {(uint8_t)get_u8(&d), (uint8_t)get_u8(&d)}; /* 'T', parameter */
        ser_put_bytes(w, head, 2);
        copy_struct(&d, w, 0);
    }
    if (d.bad) w->failed = 1;
}

/* ---- retirement ---- */

static pthread_mutex_t pending_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t *pending;
static int npending, cap_pending;
static atomic_int any_pending;

/* Called from the host's finalizer for the class, perhaps in the middle of
 * a launch on this very thread (a garbage collection inside a resolver
 * callback): so it only queues, and the work happens at the next launch. */
void tack_retire_class(uint64_t token) {
    pthread_mutex_lock(&pending_lock);
    if (npending == cap_pending) {
        int cap = cap_pending ? cap_pending * 2 : 16;
        uint64_t *p = realloc(pending, cap * sizeof *p);
        if (p) {
            pending = p;
            cap_pending = cap;
        }
    }
    if (npending < cap_pending) pending[npending++] = token;
    atomic_store(&any_pending, 1);
    pthread_mutex_unlock(&pending_lock);
}

void retire_pending(void) {
    if (!atomic_load_explicit(&any_pending, memory_order_acquire)) return;
    pthread_mutex_lock(&pending_lock);
    uint64_t *tokens = pending;
    int n = npending;
    pending = NULL;
    npending = cap_pending = 0;
    atomic_store(&any_pending, 0);
    pthread_mutex_unlock(&pending_lock);
    if (n) kernel_registry_retire(tokens, n);
    free(tokens);
}
