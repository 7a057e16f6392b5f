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

/* v as the kernel's arithmetic in type t leaves it, made i64 (the loop
 * bounds' type): wrapped to t's width, then sign- or zero-extended. */
static wide wrap_to(wide v, tack_dtype t) {
    int bits = 64, sgn = 1;
    switch (t) {
    case TACK_BOOL: return v != 0;
    case TACK_I8: bits = 8; break;
    case TACK_I16: bits = 16; break;
    case TACK_I32: bits = 32; break;
    case TACK_U8: bits = 8; sgn = 0; break;
    case TACK_U16: bits = 16; sgn = 0; break;
    case TACK_U32: bits = 32; sgn = 0; break;
    default: break; /* i64, and u64 read back as i64 */
    }
    uwide m = ((uwide)1 << bits) - 1, u = (uwide)v & m;
    if (sgn && bits < 128 && (u >> (bits - 1)) & 1) return (wide)u - ((wide)1 << bits);
    return (wide)u;
}

/* A loop bound (launch_known in passes/launch_bounds.c: literals and at
 * most one scalar or dimension) as the kernel computes it; 0 when a
 * scalar has no integer value. */
static int bound_value(const ir_func *f, const ir_expr *e, const call_info *info, wide *v,
                       int *typed) {
    wide a, b;
    switch (e->kind) {
    case IR_CONST: *v = e->i; return 1;
    case IR_PARAM:
        *typed = info->key.type[e->index];
        return scalar_value(&info->args[e->index], v);
    case IR_DIM: *typed = TACK_I64; *v = info->dims[e->index][e->dim]; return 1;
    case IR_UNOP:
        if (!bound_value(f, e->a, info, &a, typed)) return 0;
        *v = e->op == OP_NEG ? -a : a;
        break;
    default: /* + - * */
        if (!bound_value(f, e->a, info, &a, typed) || !bound_value(f, e->b, info, &b, typed))
            return 0;
        /* Both within 2^64 after wrapping: the product fits 128 bits. */
        *v = e->op == OP_ADD ? a + b : e->op == OP_SUB ? a - b : a * b;
        break;
    }
    *v = wrap_to(*v, *typed >= 0 ? (tack_dtype)*typed : TACK_I64);
    return 1;
}

/* Each inner loop's least and greatest variable value this call, and
 * whether it runs at all (and every loop around it); 0 when a bound has
 * no integer value (the loop named in *bad). */
static int loop_ranges(const ir_template *t, const call_info *info, wide *min, wide *max,
                       int *live, int *bad) {
    for (int l = 0; l < t->nloops; l++) {
        const launch_loop *lp = &t->loops[l];
        wide r[3];
        const ir_expr *e[3] = {lp->start, lp->stop, lp->step};
        for (int k = 0; k < 3; k++) {
            int typed = -1;
            if (!bound_value(t->ir, e[k], info, &r[k], &typed)) {
                *bad = l;
                return 0;
            }
            r[k] = wrap_to(r[k], TACK_I64);
        }
        wide trips = r[2] > 0 ? (r[1] > r[0] ? (r[1] - r[0] + r[2] - 1) / r[2] : 0)
                     : r[2] < 0 ? (r[0] > r[1] ? (r[0] - r[1] - r[2] - 1) / -r[2] : 0)
                                : 1; /* a zero step: at least its start is read */
        wide last = r[0] + (trips > 0 ? trips - 1 : 0) * r[2];
        live[l] = trips > 0 && (lp->parent < 0 || live[lp->parent]);
        min[l] = r[0] < last ? r[0] : last;
        max[l] = r[0] < last ? last : r[0];
    }
    return 1;
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
                       int64_t n, const wide *lmin, const wide *lmax, wide *lo, wide *hi) {
    wide s = 0, amin, amax;
    if (c->scalar >= 0 && !scalar_value(&info->args[c->scalar], &s)) return 0;
    if (c->axis >= IR_AXIS_LOOP) {
        amin = lmin[c->axis - IR_AXIS_LOOP];
        amax = lmax[c->axis - IR_AXIS_LOOP];
    } else {
        int64_t a, b;
        axis_range(c->axis, range, n, &a, &b);
        amin = a;
        amax = b;
    }
    if (c->axis2 >= 0) {
        amin += lmin[c->axis2 - IR_AXIS_LOOP];
        amax += lmax[c->axis2 - IR_AXIS_LOOP];
    }
    *lo = amin + c->lo + (wide)c->sign * s;
    *hi = amax + c->hi + (wide)c->sign * s;
    return 1;
}

/* Every entry in 128 bits: the entries with a scalar parameter (kept last),
 * and a failed check, whose report names the first failing array and
 * dimension (writes first) whatever order the entries are kept in. */
tack_status launch_check_full(const tack_kernel *k, const ir_template *t, const call_info *info,
                              const int64_t *range, int64_t n, tack_error *err) {
    const launch_check *first = NULL;
    wide flo = 0, fhi = 0, lmin[MAX_LAUNCH_LOOPS], lmax[MAX_LAUNCH_LOOPS];
    int live[MAX_LAUNCH_LOOPS], bad = 0;
    if (!loop_ranges(t, info, lmin, lmax, live, &bad))
        return runtime_error(err, TACK_ERR_INDEX,
                             "kernel '%s': the range of the loop at line %d depends on a parameter "
                             "whose value is not an integer the launch can check",
                             k->def->name, t->loops[bad].stop->line);
    for (int i = 0; i < t->nchecks; i++) {
        const launch_check *c = &t->checks[i];
        wide lo, hi;
        if (c->loop >= 0 && !live[c->loop]) continue; /* never runs this call */
        if (!index_range(c, info, range, n, lmin, lmax, &lo, &hi))
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
        if (c->scalar >= 0 || c->loop >= 0) return 1;
        axis_range(c->axis, range, n, &amin, &amax);
        if (__builtin_add_overflow(amin, c->lo, &lo) | __builtin_add_overflow(amax, c->hi, &hi) ||
            lo < 0)
            return 1;
        for (const launch_check *g = c + c->group; c < g; c++)
            if (hi >= dims[c->slot]) return 1;
    }
    return 0;
}
