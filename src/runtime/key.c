/* key.c - checks a call's arguments against the kernel and derives the
 * variant key (param_sig, vec_sig, tmpl_key, shape_sig, disjoint).
 *
 * The key names every fact the passes bake into code: each parameter's type
 * and array-ness, the dimensions the body reads (the template's shape
 * dependencies), and whether the arrays are disjoint (noalias).  Scalar
 * values and the parallel loop's length are runtime values and never keyed.
 * Facts that are checked instead of keyed: an array's number of dimensions
 * must equal the number of indices the kernel uses, arrays must be
 * C-contiguous and aligned, and written arrays must be writable. */
#include <stdio.h>
#include <string.h>

#include "runtime.h"

int variant_key_equal(const variant_key *a, const variant_key *b) {
    if (a->nparams != b->nparams || a->nshape != b->nshape || a->disjoint != b->disjoint)
        return 0;
    return !memcmp(a->type, b->type, a->nparams) && !memcmp(a->is_array, b->is_array, a->nparams) &&
           !memcmp(a->vec, b->vec, a->nparams) &&
           !memcmp(a->is_texture, b->is_texture, a->nparams) &&
           !memcmp(a->texture_shape, b->texture_shape, a->nparams * sizeof a->texture_shape[0]) &&
           !memcmp(a->is_template, b->is_template, a->nparams) && tmpl_sig_equal(&a->tmpl, &b->tmpl) &&
           !memcmp(a->shape, b->shape, a->nshape * sizeof a->shape[0]);
}

void variant_key_export(const variant_key *k, tack_variant_key *out) {
    memset(out, 0, sizeof *out);
    out->num_params = k->nparams;
    for (int i = 0; i < k->nparams; i++) {
        out->params[i].type = (tack_dtype)k->type[i];
        out->params[i].is_array = k->is_array[i];
        out->params[i].is_texture = k->is_texture[i];
        out->params[i].is_template = k->is_template[i];
        memcpy(out->params[i].texture_shape, k->texture_shape[i], sizeof k->texture_shape[i]);
    }
    for (int i = 0; i < k->nparams; i++)
        if (k->vec[i]) {
            out->vec_param[out->num_vec] = i;
            out->vec_width[out->num_vec++] = k->vec[i];
        }
    tmpl_sig_text(&k->tmpl, out->tmpl, 8, &out->num_tmpl);
    out->num_shape = k->nshape;
    memcpy(out->shape, k->shape, k->nshape * sizeof k->shape[0]);
    out->disjoint = k->disjoint;
}

static const char *kname(const tack_kernel *k) { return k->def->name; }

int64_t array_nbytes(const tack_arg *a) {
    int64_t bytes = (int64_t)tack_dtype_size(a->dtype);
    for (int d = 0; d < a->ndim && d < TACK_MAX_NDIM; d++)
        if (a->shape[d] < 0 || __builtin_mul_overflow(bytes, a->shape[d], &bytes)) return -1;
    return bytes;
}

/* Integers are typed by value: i32 when it fits, else i64, else u64. */
static tack_dtype int_type(int64_t v) {
    return v >= INT32_MIN && v <= INT32_MAX ? TACK_I32 : TACK_I64;
}

/* An array runs on its own device: host memory on host-memory devices
 * (the CPU), the device's own memory elsewhere. */
static tack_status check_home(const tack_kernel *k, const tack_device *dev, const ir_param *p,
                              const tack_arg *a, tack_error *err) {
    if (dev->caps.host_memory) {
        if (!a->device || tack_device_host_memory(a->device)) return TACK_OK;
        return runtime_error(err, TACK_ERR_TYPE,
                             "kernel '%s': parameter '%s' is an array in the memory of device '%s', "
                             "but the kernel runs on '%s'; copy it back with .numpy() or run the "
                             "kernel on '%s'",
                             kname(k), p->name, tack_device_name(a->device), dev->name,
                             tack_device_name(a->device));
    }
    if (a->device == dev) return TACK_OK;
    if (!a->device)
        return runtime_error(err, TACK_ERR_TYPE,
                             "kernel '%s': parameter '%s' is a host array (NumPy or CPU memory), but "
                             "the kernel runs on device '%s'; make a device array with "
                             "tack.array(x, device=\"%s\") (C: tack_device_alloc)",
                             kname(k), p->name, dev->name, dev->name);
    return runtime_error(err, TACK_ERR_TYPE,
                         "kernel '%s': parameter '%s' is an array on device '%s', but the kernel "
                         "runs on '%s'; copy it with tack.array(x, device=\"%s\")",
                         kname(k), p->name, tack_device_name(a->device), dev->name, dev->name);
}

static tack_status check_array(const tack_kernel *k, const tack_device *dev, const ir_param *p,
                               const tack_arg *a, tack_error *err) {
    const char *pn = p->name;
    if (check_home(k, dev, p, a, err)) return err->status;
    if ((unsigned)a->dtype >= TACK_DTYPE_COUNT)
        return runtime_error(err, TACK_ERR_TYPE, "kernel '%s': parameter '%s': unsupported dtype",
                             kname(k), pn);
    if (a->ndim < 0 || a->ndim > TACK_MAX_NDIM)
        return runtime_error(err, TACK_ERR_VALUE,
                             "kernel '%s': parameter '%s': arrays have 0 to %d dimensions, got %d",
                             kname(k), pn, TACK_MAX_NDIM, a->ndim);
    if (p->index_ndim && a->ndim != p->index_ndim) {
        int comps = a->vec_width ? 1 : 0, n = p->index_ndim - comps, have = a->ndim - comps;
        return runtime_error(err, TACK_ERR_VALUE,
                             "kernel '%s': parameter '%s' is indexed with %d index%s but the array "
                             "has %d dimension%s",
                             kname(k), pn, n, n == 1 ? "" : "es", have, have == 1 ? "" : "s");
    }
    /* An array of vectors stores its components as a last dimension. */
    int logical = a->ndim;
    if (a->vec_width) {
        if (a->vec_width < 2 || a->vec_width > 4 || a->ndim < 2 ||
            a->shape[a->ndim - 1] != a->vec_width)
            return runtime_error(err, TACK_ERR_VALUE,
                                 "kernel '%s': parameter '%s': an array of %d-component vectors "
                                 "needs a last storage dimension of %d",
                                 kname(k), pn, a->vec_width, a->vec_width);
        logical--;
        if (a->dtype == TACK_F16)
            return runtime_error(err, TACK_ERR_TYPE,
                                 "kernel '%s': parameter '%s': arrays of vectors cannot hold f16 "
                                 "components (f16 is a storage type for arrays of scalars)",
                                 kname(k), pn);
    }
    if (p->max_dim_read >= logical)
        return runtime_error(err, TACK_ERR_VALUE,
                             "kernel '%s': parameter '%s': the kernel reads shape[%d] but the array "
                             "has %d dimension%s",
                             kname(k), pn, p->max_dim_read, logical, logical == 1 ? "" : "s");
    int64_t itemsize = (int64_t)tack_dtype_size(a->dtype);
    for (int d = 0; d < a->ndim; d++)
        if (a->shape[d] < 0)
            return runtime_error(err, TACK_ERR_VALUE,
                                 "kernel '%s': parameter '%s': negative dimension %lld", kname(k),
                                 pn, (long long)a->shape[d]);
    int64_t nbytes = array_nbytes(a);
    if (nbytes < 0)
        return runtime_error(err, TACK_ERR_VALUE,
                             "kernel '%s': parameter '%s': the array's size overflows 64 bits",
                             kname(k), pn);
    int64_t size = nbytes / itemsize;
    if (size > 0) {
        /* C order: each stride is the product of the later dimensions
         * (dimensions of length 1 may have any stride). */
        int64_t expect = itemsize;
        for (int d = a->ndim - 1; d >= 0; d--) {
            if (a->shape[d] != 1 && a->strides[d] != expect)
                return runtime_error(err, TACK_ERR_VALUE,
                                     "kernel '%s': parameter '%s': the array is not C-contiguous "
                                     "(strides must be row-major); pass a contiguous copy such as "
                                     "numpy.ascontiguousarray(...)",
                                     kname(k), pn);
            expect *= a->shape[d];
        }
        if (!a->data)
            return runtime_error(err, TACK_ERR_VALUE, "kernel '%s': parameter '%s': NULL data",
                                 kname(k), pn);
    }
    /* A device's memory handle is no address: nothing more to check. */
    if (size > 0 && dev->caps.host_memory) {
        uintptr_t end;
        if (__builtin_add_overflow((uintptr_t)a->data, (uintptr_t)nbytes, &end))
            return runtime_error(err, TACK_ERR_VALUE,
                                 "kernel '%s': parameter '%s': the array's %lld bytes at %p run "
                                 "past the end of the address space",
                                 kname(k), pn, (long long)nbytes, a->data);
        if ((uintptr_t)a->data % (uintptr_t)itemsize)
            return runtime_error(err, TACK_ERR_VALUE,
                                 "kernel '%s': parameter '%s': the array's data is not aligned to "
                                 "its %lld-byte elements",
                                 kname(k), pn, (long long)itemsize);
    }
    if (p->sampled && !a->is_texture)
        return runtime_error(err, TACK_ERR_TYPE,
                             "kernel '%s': parameter '%s' is sampled, so it must be a tack.Texture3D",
                             kname(k), pn);
    if (a->is_texture && (a->ndim != 3 || a->vec_width || !(a->dtype == TACK_F32 || a->dtype == TACK_F64)))
        return runtime_error(err, TACK_ERR_TYPE,
                             "kernel '%s': parameter '%s': a texture holds a 3-D array of f32 or f64",
                             kname(k), pn);
    if (p->written && !a->writable)
        return runtime_error(err, TACK_ERR_VALUE,
                             "kernel '%s' writes to parameter '%s', but the array is read-only",
                             kname(k), pn);
    return TACK_OK;
}

typedef struct span {
    uintptr_t lo, hi;
    int written;
} span;

/* True when no written array's bytes overlap any other array's bytes.
 * Read-only arrays may overlap each other. */
static int arrays_disjoint(span *s, int n) {
    for (int i = 0; i < n; i++) {
        if (!s[i].written || s[i].lo == s[i].hi) continue;
        for (int j = 0; j < n; j++)
            if (j != i && s[j].lo < s[i].hi && s[i].lo < s[j].hi) return 0;
    }
    return 1;
}

tack_status call_arity(const tack_kernel *k, int nargs, tack_error *err) {
    const func_def *d = k->def;
    if (nargs == d->nparams) return TACK_OK;
    char names[512] = "";
    size_t len = 0;
    for (int i = 0; i < d->nparams && len < sizeof names; i++)
        len += snprintf(names + len, sizeof names - len, "%s%s", i ? ", " : "", d->params[i]);
    return runtime_error(err, TACK_ERR_TYPE, "kernel '%s' takes %d argument%s (%s) but %d %s given",
                         kname(k), d->nparams, d->nparams == 1 ? "" : "s", names, nargs,
                         nargs == 1 ? "was" : "were");
}

tack_status call_classify(const tack_kernel *k, const tack_device *dev, const ir_template *t,
                          call_info *info,
                          const template_key *tkey, tack_error *err) {
    const ir_func *f = t->ir;
    const tack_arg *args = info->args;
    int nargs = info->nargs;
    if (nargs != f->nparams)
        return runtime_error(err, TACK_ERR_INTERNAL,
                             "internal error: kernel '%s' expands to %d arguments for %d parameters",
                             kname(k), nargs, f->nparams);
    variant_key *key = &info->key;
    key->nparams = f->nparams;
    tmpl_sig_copy(&key->tmpl, &tkey->tmpl);
    span spans[TACK_MAX_PARAMS];
    int nspans = 0, any_f64 = 0;
    for (int i = 0; i < nargs; i++) {
        const ir_param *p = &f->params[i];
        const tack_arg *a = &args[i];
        int is_array = a->kind == TACK_ARG_ARRAY;
        key->is_template[i] = a->kind == TACK_ARG_STRUCT;
        if (p->role == ROLE_TEMPLATE || a->kind == TACK_ARG_STRUCT) {
            /* Lowering gave every template argument this role. */
            key->type[i] = 0;
            key->is_array[i] = key->vec[i] = key->is_texture[i] = 0;
            memset(key->texture_shape[i], 0, sizeof key->texture_shape[i]);
            info->slots[i] = 0;
            memset(info->dims[i], 0, sizeof info->dims[i]);
            continue;
        }
        if (p->role == ROLE_ARRAY && !is_array)
            return runtime_error(err, TACK_ERR_TYPE,
                                 "kernel '%s': parameter '%s' must be an array (the kernel indexes "
                                 "it or reads its shape), got a scalar",
                                 kname(k), p->name);
        if (p->role == ROLE_SCALAR && is_array)
            return runtime_error(err, TACK_ERR_TYPE,
                                 "kernel '%s': parameter '%s' is used as a scalar value, got an array",
                                 kname(k), p->name);
        key->is_array[i] = (uint8_t)is_array;
        key->vec[i] = (uint8_t)(is_array ? a->vec_width : 0);
        key->is_texture[i] = (uint8_t)(is_array && a->is_texture);
        for (int d = 0; d < 3; d++)
            key->texture_shape[i][d] = key->is_texture[i] ? a->shape[d] : 0;
        if (is_array) {
            if (check_array(k, dev, p, a, err)) return err->status;
            key->type[i] = (uint8_t)a->dtype;
            any_f64 |= a->dtype == TACK_F64;
            info->slots[i] = (uint64_t)(uintptr_t)a->data;
            for (int d = 0; d < TACK_MAX_NDIM; d++) info->dims[i][d] = d < a->ndim ? a->shape[d] : 1;
            if (dev->caps.host_memory)
                spans[nspans++] = (span){(uintptr_t)a->data,
                                         (uintptr_t)a->data + (uintptr_t)array_nbytes(a), p->written};
            continue;
        }
        memset(info->dims[i], 0, sizeof info->dims[i]);
        info->slots[i] = 0;
        switch (a->kind) {
        case TACK_ARG_INT:
            key->type[i] = (uint8_t)int_type(a->i);
            if (key->type[i] == TACK_I32) {
                int32_t v = (int32_t)a->i;
                memcpy(&info->slots[i], &v, sizeof v);
            } else {
                memcpy(&info->slots[i], &a->i, sizeof a->i);
            }
            break;
        case TACK_ARG_UINT:
            if (a->u <= (uint64_t)INT64_MAX) {
                key->type[i] = (uint8_t)int_type((int64_t)a->u);
                if (key->type[i] == TACK_I32) {
                    int32_t v = (int32_t)a->u;
                    memcpy(&info->slots[i], &v, sizeof v);
                    break;
                }
            } else {
                key->type[i] = TACK_U64;
            }
            memcpy(&info->slots[i], &a->u, sizeof a->u);
            break;
        case TACK_ARG_FLOAT:
            key->type[i] = TACK_F32; /* f64 decided below, once all arrays are seen */
            break;
        case TACK_ARG_BOOL:
            key->type[i] = TACK_BOOL;
            info->slots[i] = a->i != 0;
            break;
        default:
            return runtime_error(err, TACK_ERR_TYPE,
                                 "kernel '%s': parameter '%s': unsupported argument kind %d",
                                 kname(k), p->name, (int)a->kind);
        }
    }
    /* Python floats are f32, or f64 when any array argument is f64. */
    for (int i = 0; i < nargs; i++) {
        if (args[i].kind != TACK_ARG_FLOAT) continue;
        if (any_f64) {
            key->type[i] = TACK_F64;
            memcpy(&info->slots[i], &args[i].f, sizeof(double));
        } else {
            float v = (float)args[i].f;
            info->slots[i] = 0;
            memcpy(&info->slots[i], &v, sizeof v);
        }
    }
    key->nshape = t->ndeps;
    for (int i = 0; i < t->ndeps; i++) key->shape[i] = info->dims[t->deps[i].param][t->deps[i].dim];
    /* noalias only where the CPU can use it: GPU code is correct for any
     * overlap by construction, so it has one variant either way. */
    key->disjoint = dev->caps.host_memory && arrays_disjoint(spans, nspans);
    return TACK_OK;
}
