/* key.c - checks a call's arguments against the kernel and derives the
 * variant key (param_sig, vec_sig, tmpl_key, shape_sig, disjoint, strided).
 *
 * The key names every fact the passes bake into code: each parameter's type
 * and array-ness, the dimensions the body reads (the template's shape
 * dependencies), whether the arrays are disjoint (noalias), and which
 * indexed arrays are not C-contiguous (their accesses multiply by runtime
 * strides).  Scalar values, stride values and the parallel loop's length
 * are runtime values and never keyed.  Facts that are checked instead of
 * keyed: an array's number of dimensions must equal the number of indices
 * the kernel uses, arrays must be aligned (strides too), written arrays
 * must be writable and must not overlap themselves. */
#include <stdio.h>
#include <string.h>

#include "runtime.h"

int variant_key_equal(const variant_key *a, const variant_key *b) {
    if (a->nparams != b->nparams || a->nshape != b->nshape || a->disjoint != b->disjoint)
        return 0;
    return !memcmp(a->type, b->type, a->nparams) && !memcmp(a->is_array, b->is_array, a->nparams) &&
           !memcmp(a->vec, b->vec, a->nparams) && !memcmp(a->row_ndim, b->row_ndim, a->nparams) &&
           !memcmp(a->is_texture, b->is_texture, a->nparams) &&
           !memcmp(a->texture_shape, b->texture_shape, a->nparams * sizeof a->texture_shape[0]) &&
           !memcmp(a->is_template, b->is_template, a->nparams) &&
           !memcmp(a->strided, b->strided, a->nparams) && tmpl_sig_equal(&a->tmpl, &b->tmpl) &&
           !memcmp(a->shape, b->shape, a->nshape * sizeof a->shape[0]);
}

void variant_key_export(const variant_key *k, tack_variant_key *out) {
    memset(out, 0, sizeof *out);
    out->num_params = k->nparams - k->hidden_tail;
    for (int i = 0; i < k->nparams; i++) {
        out->params[i].type = (tack_dtype)k->type[i];
        out->params[i].is_array = k->is_array[i];
        out->params[i].is_texture = k->is_texture[i];
        out->params[i].is_template = k->is_template[i];
        out->params[i].is_strided = k->strided[i];
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

/* 128 bits: a stride times an extent cannot overflow it. */
__extension__ typedef __int128 wide;

/* The least and greatest byte offset from the first element that the
 * array's elements cover: [lo, hi), hi - lo >= one element (size > 0). */
static void span_offsets(const tack_arg *a, wide *lo, wide *hi) {
    *lo = 0;
    *hi = (wide)tack_dtype_size(a->dtype);
    for (int d = 0; d < a->ndim; d++) {
        if (a->shape[d] <= 1) continue; /* a length-1 dimension's stride is never used */
        wide reach = (wide)a->strides[d] * (a->shape[d] - 1);
        if (reach < 0) *lo += reach;
        else *hi += reach;
    }
}

void array_span(const tack_arg *a, uintptr_t *lo, uintptr_t *hi) {
    *lo = *hi = (uintptr_t)a->data;
    if (array_nbytes(a) <= 0) return;
    wide l, h;
    span_offsets(a, &l, &h);
    *lo = (uintptr_t)((wide)(uintptr_t)a->data + l);
    *hi = (uintptr_t)((wide)(uintptr_t)a->data + h);
}

/* C order: each stride the product of the later dimensions (dimensions of
 * length 1 may have any stride).  For a non-empty array. */
static int c_contiguous(const tack_arg *a, int64_t itemsize) {
    int64_t expect = itemsize;
    for (int d = a->ndim - 1; d >= 0; d--) {
        if (a->shape[d] != 1 && a->strides[d] != expect) return 0;
        expect *= a->shape[d];
    }
    return 1;
}

/* "(8, -4)" */
static const char *strides_text(const tack_arg *a, char buf[128]) {
    size_t n = 0;
    n += snprintf(buf + n, 128 - n, "(");
    for (int d = 0; d < a->ndim && n < 128; d++)
        n += snprintf(buf + n, 128 - n, "%s%lld", d ? ", " : "", (long long)a->strides[d]);
    if (n < 128) snprintf(buf + n, 128 - n, "%s)", a->ndim == 1 ? "," : "");
    return buf;
}

/* True when two elements of the array may share an address: with the
 * dimensions ordered by stride magnitude, each stride must step past
 * everything the smaller ones reach.  A sufficient test for distinct
 * addresses (exotic interleavings it cannot prove are refused). */
static int may_overlap_itself(const tack_arg *a, int64_t itemsize) {
    wide mag[TACK_MAX_NDIM];
    int64_t len[TACK_MAX_NDIM];
    int n = 0;
    for (int d = 0; d < a->ndim; d++) {
        if (a->shape[d] <= 1) continue;
        wide m = a->strides[d] < 0 ? -(wide)a->strides[d] : (wide)a->strides[d];
        int j = n++;
        for (; j > 0 && mag[j - 1] > m; j--) { /* insertion sort: four at most */
            mag[j] = mag[j - 1];
            len[j] = len[j - 1];
        }
        mag[j] = m;
        len[j] = a->shape[d];
    }
    wide reach = itemsize;
    for (int i = 0; i < n; i++) {
        if (mag[i] < reach) return 1;
        reach += mag[i] * (len[i] - 1);
    }
    return 0;
}

/* A layout other than C order, which kernels index through runtime
 * strides: strides in whole elements, a vector's components adjacent, no
 * negative stride in device memory (a handle addresses the allocation's
 * start, so the first element must be its lowest), and for an array the
 * kernel writes, no two elements at one address (the writes would race). */
static tack_status check_strides(const tack_kernel *k, const tack_device *dev, const ir_param *p,
                                 const tack_arg *a, int64_t itemsize, tack_error *err) {
    const char *pn = p->name;
    char st[128];
    if (a->is_texture)
        return runtime_error(err, TACK_ERR_VALUE,
                             "kernel '%s': parameter '%s': a texture must be C-contiguous, got "
                             "strides %s",
                             kname(k), pn, strides_text(a, st));
    for (int d = 0; d < a->ndim; d++) {
        if (a->shape[d] <= 1) continue;
        if (a->strides[d] % itemsize)
            return runtime_error(err, TACK_ERR_VALUE,
                                 "kernel '%s': parameter '%s': strides %s: %lld is not a multiple "
                                 "of the %lld-byte element size",
                                 kname(k), pn, strides_text(a, st), (long long)a->strides[d],
                                 (long long)itemsize);
        /* tack_kernel_generate's stand-in device (no driver) has no memory. */
        if (a->strides[d] < 0 && !dev->caps.host_memory && dev->ops)
            return runtime_error(err, TACK_ERR_VALUE,
                                 "kernel '%s': parameter '%s': strides %s: an array in device "
                                 "memory cannot have negative strides (its handle addresses the "
                                 "lowest element)",
                                 kname(k), pn, strides_text(a, st));
    }
    if (a->vec_width && a->strides[a->ndim - 1] != itemsize)
        return runtime_error(err, TACK_ERR_VALUE,
                             "kernel '%s': parameter '%s': strides %s: the components of each "
                             "vector must be adjacent (the last stride must be %lld bytes)",
                             kname(k), pn, strides_text(a, st), (long long)itemsize);
    if (p->written && may_overlap_itself(a, itemsize))
        return runtime_error(err, TACK_ERR_VALUE,
                             "kernel '%s' writes to parameter '%s', but its strides %s place "
                             "more than one element at the same address (a zero stride, as "
                             "numpy.broadcast_to makes, or overlapping dimensions), so the "
                             "writes would race; pass a copy such as numpy.array(...)",
                             kname(k), pn, strides_text(a, st));
    return TACK_OK;
}

static tack_status check_array(const tack_kernel *k, const tack_device *dev, const ir_param *p,
                               const tack_arg *a, int *contiguous, tack_error *err) {
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
        int comps = tack_width_components(a->vec_width);
        if (!tack_width_valid(a->vec_width) || a->ndim < 2 || a->shape[a->ndim - 1] != comps)
            return runtime_error(err, TACK_ERR_VALUE,
                                 "kernel '%s': parameter '%s': an array of %d-component %s "
                                 "needs a last storage dimension of %d",
                                 kname(k), pn, comps, tack_width_rows(a->vec_width) ? "matrices"
                                 : "vectors", comps);
        logical--;
        if ((a->vec_width == TACK_COMPLEX_WIDTH || a->vec_width == TACK_QUAT_WIDTH) &&
            a->dtype != TACK_F32 && a->dtype != TACK_F64)
            return runtime_error(err, TACK_ERR_TYPE,
                                 "kernel '%s': parameter '%s': an array of %s holds f32 or f64 "
                                 "parts, not %s", kname(k), pn,
                                 a->vec_width == TACK_QUAT_WIDTH ? "quaternions" : "complex numbers",
                                 tack_dtype_name(a->dtype));
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
    *contiguous = 1;
    if (size > 0) {
        if (!a->data)
            return runtime_error(err, TACK_ERR_VALUE, "kernel '%s': parameter '%s': NULL data",
                                 kname(k), pn);
        *contiguous = c_contiguous(a, itemsize);
        if (!*contiguous && check_strides(k, dev, p, a, itemsize, err)) return err->status;
    }
    /* A device's memory handle is no address: nothing more to check. */
    if (size > 0 && dev->caps.host_memory) {
        wide lo, hi;
        span_offsets(a, &lo, &hi);
        if ((wide)(uintptr_t)a->data + lo < 0 || (wide)(uintptr_t)a->data + hi > (wide)UINTPTR_MAX)
            return runtime_error(err, TACK_ERR_VALUE,
                                 "kernel '%s': parameter '%s': the array's elements at %p run "
                                 "past the %s of the address space",
                                 kname(k), pn, a->data,
                                 (wide)(uintptr_t)a->data + lo < 0 ? "start" : "end");
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

/* runtime.h */
int arrays_disjoint(const span *s, int n) {
    for (int i = 0; i < n; i++) {
        if (!s[i].written || s[i].lo == s[i].hi) continue;
        for (int j = 0; j < n; j++)
            if (j != i && s[j].lo < s[i].hi && s[i].lo < s[j].hi) return 0;
    }
    return 1;
}

/* Appends each strided array's element strides to the slots, in the
 * order passes/resolve.c gives their hidden parameters. */
static tack_status stride_slots(const tack_kernel *k, const ir_func *f, call_info *info,
                                tack_error *err) {
    int n = info->nargs;
    for (int i = 0; i < info->nargs; i++) {
        if (!info->key.strided[i]) continue;
        const tack_arg *a = &info->args[i];
        int64_t itemsize = (int64_t)tack_dtype_size(a->dtype);
        int count = stride_param_count(&f->params[i]);
        if (n + count > TACK_MAX_PARAMS)
            return runtime_error(err, TACK_ERR_VALUE,
                                 "kernel '%s': its strided arrays need more than %d parameters "
                                 "with their strides; pass C-contiguous copies of some "
                                 "(numpy.ascontiguousarray)",
                                 kname(k), TACK_MAX_PARAMS);
        for (int d = 0; d < count; d++, n++) {
            /* A length-1 dimension is only ever indexed by 0. */
            int64_t s = a->shape[d] > 1 ? a->strides[d] / itemsize : 0;
            info->slots[n] = (uint64_t)s;
            memset(info->dims[n], 0, sizeof info->dims[n]);
        }
    }
    info->nslots = n;
    return TACK_OK;
}

/* runtime.h */
uint64_t scalar_slot(int type, const tack_arg *a) {
    uint64_t slot = 0;
    int64_t i = a->kind == TACK_ARG_UINT ? (int64_t)a->u : a->i; /* u64: the same bits */
    switch (type) {
    case TACK_I32: {
        int32_t v = (int32_t)i;
        memcpy(&slot, &v, sizeof v);
        break;
    }
    case TACK_F32: {
        float v = (float)a->f;
        memcpy(&slot, &v, sizeof v);
        break;
    }
    case TACK_F64: memcpy(&slot, &a->f, sizeof a->f); break;
    case TACK_BOOL: slot = a->i != 0; break;
    default: memcpy(&slot, &i, sizeof i); /* i64 and u64 */
    }
    return slot;
}

/* Whether argument i is a scalar value (not an array, nor a template). */
static int is_scalar_arg(const ir_func *f, const tack_arg *a, int i) {
    return a->kind != TACK_ARG_ARRAY && a->kind != TACK_ARG_STRUCT &&
           f->params[i].role != ROLE_TEMPLATE;
}

/* runtime.h: a call whose fast signature was classified before.  The
 * signature fixes every argument's kind, dtype, width, shape, strides and
 * writability, and each scalar's type, so the key of that call (`seen`)
 * holds for this one but for the disjoint bit; what can still differ is
 * where each array lives (its device, address and alignment) and the
 * scalars' values, which is all this reads. */
tack_status call_classify_warm(const tack_kernel *k, const tack_device *dev, const ir_template *t,
                               const variant_key *seen, call_info *info, tack_error *err) {
    const ir_func *f = t->ir;
    const tack_arg *args = info->args;
    int nargs = info->nargs;
    if (nargs != f->nparams || seen->nparams != nargs)
        return runtime_error(err, TACK_ERR_INTERNAL,
                             "internal error: kernel '%s' expands to %d arguments for %d parameters",
                             kname(k), nargs, f->nparams);
    span spans[TACK_MAX_PARAMS];
    int nspans = 0, nstrided = 0;
    for (int i = 0; i < nargs; i++) {
        const tack_arg *a = &args[i];
        info->slots[i] = 0;
        if (f->params[i].role == ROLE_TEMPLATE) {
            memset(info->dims[i], 0, sizeof info->dims[i]);
            continue;
        }
        if (a->kind == TACK_ARG_ARRAY) {
            const ir_param *p = &f->params[i];
            if (check_home(k, dev, p, a, err)) return err->status;
            int64_t itemsize = (int64_t)tack_dtype_size(a->dtype);
            int64_t nbytes = array_nbytes(a);
            if (nbytes > 0 && !a->data)
                return runtime_error(err, TACK_ERR_VALUE, "kernel '%s': parameter '%s': NULL data",
                                     kname(k), p->name);
            if (nbytes > 0 && dev->caps.host_memory) {
                span *sp = &spans[nspans++];
                array_span(a, &sp->lo, &sp->hi);
                sp->written = p->written;
                /* array_span wraps where the elements run past either end
                 * of the address space (call_classify names which). */
                if (sp->hi <= sp->lo || sp->lo > (uintptr_t)a->data ||
                    (uintptr_t)a->data % (uintptr_t)itemsize)
                    return call_classify(k, dev, t, info, &(template_key){0}, err);
            }
            info->slots[i] = (uint64_t)(uintptr_t)a->data;
            for (int d = 0; d < TACK_MAX_NDIM; d++) info->dims[i][d] = d < a->ndim ? a->shape[d] : 1;
            nstrided += seen->strided[i];
            continue;
        }
        memset(info->dims[i], 0, sizeof info->dims[i]);
        info->slots[i] = scalar_slot(seen->type[i], a);
    }
    /* Only the fields a launch reads (the whole key is kilobytes): the
     * types (launch_check.c), the strided layouts (stride_slots) and the
     * disjoint bit that picks the variant. */
    variant_key *key = &info->key;
    key->nparams = seen->nparams;
    key->hidden_tail = seen->hidden_tail;
    memcpy(key->type, seen->type, (size_t)nargs);
    memcpy(key->strided, seen->strided, (size_t)nargs);
    info->key.disjoint = dev->caps.host_memory && arrays_disjoint(spans, nspans);
    info->nslots = nargs;
    return nstrided ? stride_slots(k, f, info, err) : TACK_OK;
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
    key->hidden_tail = f->debug_errors >= 0 && f->debug_extents < 0;
    tmpl_sig_copy(&key->tmpl, &tkey->tmpl);
    memcpy(key->row_ndim, tkey->row_ndim, (size_t)f->nparams < sizeof key->row_ndim
                                              ? (size_t)f->nparams : sizeof key->row_ndim);
    span spans[TACK_MAX_PARAMS];
    int nspans = 0, any_f64 = 0, nstrided = 0;
    for (int i = 0; i < nargs; i++) {
        const ir_param *p = &f->params[i];
        const tack_arg *a = &args[i];
        int is_array = a->kind == TACK_ARG_ARRAY;
        key->is_template[i] = a->kind == TACK_ARG_STRUCT;
        if (p->role == ROLE_TEMPLATE || a->kind == TACK_ARG_STRUCT) {
            /* Lowering gave every template argument this role. */
            key->type[i] = 0;
            key->is_array[i] = key->vec[i] = key->is_texture[i] = key->strided[i] = 0;
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
            int contiguous = 1;
            if (check_array(k, dev, p, a, &contiguous, err)) return err->status;
            key->type[i] = (uint8_t)a->dtype;
            /* Only accesses use strides: an array whose shape alone is read
             * needs no strided variant. */
            key->strided[i] = (uint8_t)(!contiguous && p->index_ndim > 0);
            nstrided += key->strided[i];
            /* an adjoint's gradients do not count: its forward sweep must
             * compute as the forward did (an f64 return.grad of an f32 kernel) */
            if (!(f->adjoint_n && i >= f->adjoint_n)) any_f64 |= a->dtype == TACK_F64;
            info->slots[i] = (uint64_t)(uintptr_t)a->data;
            for (int d = 0; d < TACK_MAX_NDIM; d++) info->dims[i][d] = d < a->ndim ? a->shape[d] : 1;
            if (dev->caps.host_memory) {
                span *sp = &spans[nspans++];
                array_span(a, &sp->lo, &sp->hi);
                sp->written = p->written;
            }
            continue;
        }
        key->strided[i] = 0;
        memset(info->dims[i], 0, sizeof info->dims[i]);
        info->slots[i] = 0;
        switch (a->kind) {
        case TACK_ARG_INT: key->type[i] = (uint8_t)int_type(a->i); break;
        case TACK_ARG_UINT:
            key->type[i] = a->u <= (uint64_t)INT64_MAX ? (uint8_t)int_type((int64_t)a->u) : TACK_U64;
            break;
        case TACK_ARG_FLOAT:
            key->type[i] = TACK_F32; /* f64 decided below, once all arrays are seen */
            break;
        case TACK_ARG_BOOL: key->type[i] = TACK_BOOL; break;
        case TACK_ARG_COMPLEX: /* a part (template_expand), typed by the number's precision */
            if (a->dtype != TACK_F32 && a->dtype != TACK_F64)
                return runtime_error(err, TACK_ERR_TYPE, "kernel '%s': parameter '%s': a complex "
                                     "number's parts are f32 or f64", kname(k), p->name);
            key->type[i] = (uint8_t)a->dtype;
            key->vec[i] = TACK_COMPLEX_WIDTH;
            break;
        default:
            return runtime_error(err, TACK_ERR_TYPE,
                                 "kernel '%s': parameter '%s': unsupported argument kind %d",
                                 kname(k), p->name, (int)a->kind);
        }
    }
    /* Python floats are f32, or f64 when any array argument is f64. */
    for (int i = 0; i < nargs; i++) {
        if (!is_scalar_arg(f, &args[i], i)) continue;
        if (args[i].kind == TACK_ARG_FLOAT && any_f64) key->type[i] = TACK_F64;
        info->slots[i] = scalar_slot(key->type[i], &args[i]);
    }
    key->nshape = t->ndeps;
    for (int i = 0; i < t->ndeps; i++) key->shape[i] = info->dims[t->deps[i].param][t->deps[i].dim];
    /* noalias only where the CPU can use it: GPU code is correct for any
     * overlap by construction, so it has one variant either way. */
    key->disjoint = dev->caps.host_memory && arrays_disjoint(spans, nspans);
    info->nslots = nargs;
    return nstrided ? stride_slots(k, f, info, err) : TACK_OK;
}
