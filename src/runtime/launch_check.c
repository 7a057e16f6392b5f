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

/* A scalar parameter's value as the kernel's i64 index arithmetic sees it;
 * 0 for one that cannot be an index (the kernel would not compile). */
static int scalar_value(const tack_arg *a, int64_t *v) {
    switch (a->kind) {
    case TACK_ARG_INT: *v = a->i; return 1;
    case TACK_ARG_BOOL: *v = a->i != 0; return 1;
    case TACK_ARG_UINT:
        if (a->u > (uint64_t)INT64_MAX) return 0;
        *v = (int64_t)a->u;
        return 1;
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

tack_status launch_check_run(const tack_kernel *k, const ir_template *t, const call_info *info,
                             const int64_t *range, int64_t n, tack_error *err) {
    /* Each launch axis's least and greatest value over the n > 0 iterations. */
    wide first = range[0], last = first + (wide)(n - 1) * range[2];
    wide amin[3] = {first < last ? first : last, 0, 0};
    wide amax[3] = {first < last ? last : first, (wide)range[3] - 1, (wide)range[4] - 1};
    for (int i = 0; i < t->nchecks; i++) {
        const launch_check *c = &t->checks[i];
        wide lo = c->lo, hi = c->hi;
        if (c->axis >= 0) {
            lo += amin[c->axis];
            hi += amax[c->axis];
        }
        if (c->scalar >= 0) {
            int64_t s;
            if (!scalar_value(&info->args[c->scalar], &s)) continue;
            lo += (wide)c->sign * s;
            hi += (wide)c->sign * s;
        }
        if (lo < 0 || hi >= info->dims[c->param][c->dim])
            return refuse(k, t->ir, info, c, lo, hi, err);
    }
    return TACK_OK;
}
