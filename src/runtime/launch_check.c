/* launch_check.c - the per-dispatch half of passes/launch_bounds.c: from
 * the evaluated launch range and the call's extents, refuses a launch whose
 * accesses would leave an array, before anything runs.  A few compares per
 * entry; no variant depends on it. */
#include <stdio.h>

#include "runtime.h"

/* 128 bits: a launch index plus offsets cannot overflow it. */
__extension__ typedef __int128 wide;
__extension__ typedef unsigned __int128 uwide;

/* Decimal text of v: past 64 bits when an offset pushed it there. */
static const char *wide_text(wide v, char buf[48]) {
    uwide u = v < 0 ? -(uwide)v : (uwide)v;
    char *p = buf + 47;
    *p = 0;
    do *--p = (char)('0' + (int)(u % 10));
    while (u /= 10);
    if (v < 0) *--p = '-';
    return p;
}

/* A scalar parameter's value as an index: exact in 128 bits, so a u64 past
 * INT64_MAX (which the kernel's i64 arithmetic would wrap negative) is the
 * huge index it is.  0 for a value that cannot be evaluated: the caller
 * then refuses the launch, never assumes it in bounds. */
static int scalar_value(const tack_arg *a, wide *v) {
    switch (a->kind) {
    case TACK_ARG_INT: *v = a->i; return 1;
    case TACK_ARG_BOOL: *v = a->i != 0; return 1;
    case TACK_ARG_UINT: *v = (wide)a->u; return 1;
    default: return 0;
    }
}

/* "kernel 'add': the launch writes out[0..15] but 'out' has shape (4,)" */
static tack_status refuse(const tack_kernel *k, const ir_func *f, const call_info *info,
                          const launch_check *c, wide lo, wide hi, tack_error *err) {
    const ir_param *p = &f->params[c->param];
    int nd = p->index_ndim - (p->vec_width ? 1 : 0); /* the logical shape */
    char index[128] = "", shape[128] = "";
    size_t il = 0, sl = 0;
    for (int d = 0; d < nd && il < sizeof index && sl < sizeof shape; d++) {
        const char *sep = d ? ", " : "";
        char a[48], b[48];
        if (d != c->dim) il += snprintf(index + il, sizeof index - il, "%s:", sep);
        else if (lo == hi) il += snprintf(index + il, sizeof index - il, "%s%s", sep, wide_text(lo, a));
        else
            il += snprintf(index + il, sizeof index - il, "%s%s..%s", sep, wide_text(lo, a),
                           wide_text(hi, b));
        if (sl < sizeof shape)
            sl += snprintf(shape + sl, sizeof shape - sl, "%s%lld", sep,
                           (long long)info->dims[c->param][d]);
    }
    return runtime_error(err, TACK_ERR_INDEX, "kernel '%s': the launch %s %s[%s] but '%s' has shape (%s%s)",
                         k->def->name, c->written ? "writes" : "reads", p->name, index, p->name,
                         shape, nd == 1 ? "," : "");
}

static int64_t floor_group(int64_t i) { return i >= 0 ? i / IR_WORKGROUP : -((-(i + 1)) / IR_WORKGROUP) - 1; }

/* Launch axis `axis`'s least and greatest value (0 and 0 for none), each
 * taken by some iteration.  All lie between start and stop, or inside an
 * inner extent: no overflow. */
static void axis_range(int axis, const int64_t *range, int64_t n, int64_t *min, int64_t *max) {
    *min = *max = 0;
    if (axis == 0 || axis == IR_AXIS_GROUP || axis == IR_AXIS_LANE) {
        /* Modulo 2^64: the true last index fits in 64 bits. */
        int64_t first = range[0];
        int64_t last = (int64_t)((uint64_t)first + (uint64_t)(n - 1) * (uint64_t)range[2]);
        *min = first < last ? first : last;
        *max = first < last ? last : first;
        if (axis == IR_AXIS_GROUP) { /* i >> 8 is monotonic in i */
            *min = floor_group(*min);
            *max = floor_group(*max);
        } else if (axis == IR_AXIS_LANE) {
            /* i & 255 repeats within 256 iterations: those give both ends. */
            int64_t m = n < IR_WORKGROUP ? n : range[2] == 1 ? 0 : IR_WORKGROUP;
            if (!m) { /* a whole group of consecutive lanes */
                *min = 0;
                *max = IR_WORKGROUP - 1;
                return;
            }
            *min = IR_WORKGROUP - 1;
            *max = 0;
            for (int64_t k = 0; k < m; k++) {
                int64_t lane = (int64_t)(((uint64_t)first + (uint64_t)k * (uint64_t)range[2]) &
                                         (IR_WORKGROUP - 1));
                if (lane < *min) *min = lane;
                if (lane > *max) *max = lane;
            }
        }
    } else if (axis > 0) {
        *max = range[2 + axis] - 1;
    }
}

/* Entry c's least and greatest index for this call, in 128 bits; 0 when
 * its scalar has no integer value. */
static int index_range(const launch_check *c, const call_info *info, const int64_t *range,
                       int64_t n, wide *lo, wide *hi) {
    wide s = 0;
    int64_t amin, amax;
    if (c->scalar >= 0 && !scalar_value(&info->args[c->scalar], &s)) return 0;
    axis_range(c->axis, range, n, &amin, &amax);
    *lo = (wide)amin + c->lo + (wide)c->sign * s;
    *hi = (wide)amax + c->hi + (wide)c->sign * s;
    return 1;
}

/* Every entry in 128 bits: the entries with a scalar parameter (kept last),
 * and a failed check, whose report names the first failing array and
 * dimension (writes first) whatever order the entries are kept in. */
tack_status launch_check_full(const tack_kernel *k, const ir_template *t, const call_info *info,
                              const int64_t *range, int64_t n, tack_error *err) {
    const launch_check *first = NULL;
    wide flo = 0, fhi = 0;
    for (int i = 0; i < t->nchecks; i++) {
        const launch_check *c = &t->checks[i];
        wide lo, hi;
        if (!index_range(c, info, range, n, &lo, &hi))
            return runtime_error(err, TACK_ERR_INDEX,
                                 "kernel '%s': an index into '%s' depends on parameter '%s', "
                                 "whose value is not an integer the launch can check",
                                 k->def->name, t->ir->params[c->param].name,
                                 t->ir->params[c->scalar].name);
        if (lo >= 0 && hi < info->dims[c->param][c->dim]) continue;
        if (first && (first->param != c->param ? first->param < c->param
                      : first->dim != c->dim   ? first->dim < c->dim
                                               : first->written >= c->written))
            continue;
        first = c;
        flo = lo;
        fhi = hi;
    }
    return first ? refuse(k, t->ir, info, first, flo, fhi, err) : TACK_OK;
}

int launch_check_quick(const ir_template *t, const call_info *info, const int64_t *range, int64_t n) {
    const int64_t *dims = &info->dims[0][0];
    for (const launch_check *c = t->checks, *end = c + t->nchecks; c < end;) {
        /* Each group's index range once (one that overflows is out of
         * bounds), then one compare per array dimension. */
        int64_t amin, amax, lo, hi;
        if (c->scalar >= 0) return 1;
        axis_range(c->axis, range, n, &amin, &amax);
        if (__builtin_add_overflow(amin, c->lo, &lo) | __builtin_add_overflow(amax, c->hi, &hi) ||
            lo < 0)
            return 1;
        for (const launch_check *g = c + c->group; c < g; c++)
            if (hi >= dims[c->slot]) return 1;
    }
    return 0;
}
