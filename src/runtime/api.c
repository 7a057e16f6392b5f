/* api.c - the small public helpers of tack.h: dtypes, argument builders,
 * debug mode, version. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime.h"

static atomic_int debug_mode = -1;

static const char *const dtype_names[TACK_DTYPE_COUNT] = {
    "bool", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "f32", "f64", "f16"};
static const size_t dtype_sizes[TACK_DTYPE_COUNT] = {1, 1, 2, 4, 8, 1, 2, 4, 8, 4, 8, 2};

const char *tack_dtype_name(tack_dtype t) {
    return (unsigned)t < TACK_DTYPE_COUNT ? dtype_names[t] : "?";
}
size_t tack_dtype_size(tack_dtype t) { return (unsigned)t < TACK_DTYPE_COUNT ? dtype_sizes[t] : 0; }
int tack_dtype_from_name(const char *name) {
    if (!name) return -1;
    for (int i = 0; i < TACK_DTYPE_COUNT; i++)
        if (!strcmp(name, dtype_names[i])) return i;
    return -1;
}

tack_arg tack_arg_array(void *data, tack_dtype dtype, int ndim, const int64_t *shape,
                        int writable) {
    tack_arg a;
    memset(&a, 0, sizeof a);
    a.kind = TACK_ARG_ARRAY;
    a.dtype = dtype;
    a.ndim = ndim;
    a.writable = writable;
    a.data = data;
    /* C order strides, in bytes. */
    int64_t stride = (int64_t)tack_dtype_size(dtype);
    for (int d = ndim - 1; d >= 0 && d < TACK_MAX_NDIM; d--) {
        a.shape[d] = shape[d];
        a.strides[d] = stride;
        stride *= shape[d];
    }
    return a;
}

tack_arg tack_arg_vector_array(void *data, tack_dtype component, int width, int ndim,
                               const int64_t *shape, int writable) {
    int64_t storage[TACK_MAX_NDIM + 1];
    for (int d = 0; d < ndim && d < TACK_MAX_NDIM; d++) storage[d] = shape[d];
    storage[ndim < TACK_MAX_NDIM ? ndim : TACK_MAX_NDIM] = tack_width_components(width);
    tack_arg a = tack_arg_array(data, component, ndim + 1, storage, writable);
    a.vec_width = width;
    return a;
}

/* Designated initializers zero every other field. */
tack_arg tack_arg_int(int64_t v) { return (tack_arg){.kind = TACK_ARG_INT, .i = v}; }
tack_arg tack_arg_uint(uint64_t v) { return (tack_arg){.kind = TACK_ARG_UINT, .u = v}; }
tack_arg tack_arg_float(double v) { return (tack_arg){.kind = TACK_ARG_FLOAT, .f = v}; }
tack_arg tack_arg_bool(int v) { return (tack_arg){.kind = TACK_ARG_BOOL, .i = v != 0}; }
tack_arg tack_arg_complex(double re, double im, tack_dtype part) {
    return (tack_arg){.kind = TACK_ARG_COMPLEX, .dtype = part, .f = re, .imag = im};
}

void tack_set_debug(int on) { atomic_store(&debug_mode, on != 0); }

/* The launches' random seeds: the SplitMix64 sequence from tack_seed's
 * value (a fixed one until then), one number per launch that draws. */
static _Atomic uint64_t seed_base = 0x853C49E6748FEA9Bull, seed_count;

void tack_seed(uint64_t seed) {
    atomic_store(&seed_base, seed);
    atomic_store(&seed_count, 0);
}

uint64_t runtime_next_seed(void) {
    uint64_t z = atomic_load(&seed_base) +
                 (atomic_fetch_add(&seed_count, 1) + 1) * 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
int tack_get_debug(void) {
    int d = atomic_load(&debug_mode);
    if (d < 0) {
        const char *env = getenv("TACK_DEBUG");
        d = env && env[0] && strcmp(env, "0") != 0;
        atomic_store(&debug_mode, d);
    }
    return d;
}

const char *tack_version(void) { return "0.1.0"; }

tack_status runtime_error(tack_error *err, tack_status st, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    err->status = st;
    err->lineno = 0;
    err->col = 0;
    err->filename[0] = 0;
    vsnprintf(err->message, sizeof err->message, fmt, ap);
    va_end(ap);
    return st;
}
