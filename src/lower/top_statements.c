/* top_statements.c - statements with effects around the parallel loops.
 *
 *   s = 0.0
 *   for i in range(n):        a launch
 *       s += x[i]
 *   out[0] = s                a store after the loop
 *   f(out)                    a device function call, an atomic, an if...
 *
 * Taichi's rule: a top-level statement runs once, in order.  Each run of
 * consecutive such statements (anything but a scalar assignment 'name =
 * value', 'pass', a loop or the final 'return') is wrapped, on the AST,
 * in a one-iteration loop 'for _ in range(1):', which is a stage of its
 * own like any other top-level loop: it is launched after the loops above
 * it finish (so it reads their reductions as a later loop's body does)
 * and before the ones below it start.  Scalar names assigned around the
 * loops keep their rules (reductions.c); a name assigned inside a wrapped
 * statement (under an 'if', say) is local to it. */
#include <string.h>

#include "lower.h"

/* Whether a top-level statement is one reductions.c handles itself. */
static int stays(const func_def *d, int i) {
    const stmt *s = d->body[i];
    switch (s->kind) {
    case ST_FOR: case ST_PASS: return 1;
    case ST_RETURN: return 1; /* checked (last, after the loops) there */
    case ST_ASSIGN:
        for (int t = 0; t < s->ntargets; t++) {
            const expr *e = s->targets[t];
            if (e->kind == EX_TUPLE)
                for (int m = 0; m < e->nitems; m++)
                    if (e->items[m]->kind != EX_NAME) return 0;
            if (e->kind != EX_NAME && e->kind != EX_TUPLE) return 0;
        }
        return 1;
    case ST_AUGASSIGN: return s->targets[0]->kind == EX_NAME;
    default: return 0;
    }
}

static expr *new_expr(arena *a, expr_kind k, int line, int col) {
    expr *e = arena_alloc(a, sizeof *e);
    if (!e) return NULL;
    memset(e, 0, sizeof *e);
    e->kind = k;
    e->line = line;
    e->col = col;
    return e;
}

/* for _tack_once in range(1): body[from..to) */
static stmt *once_loop(arena *a, stmt **body, int n) {
    int line = body[0]->line, col = body[0]->col;
    stmt *f = arena_alloc(a, sizeof *f);
    expr **targets = arena_alloc(a, sizeof *targets);
    expr **args = arena_alloc(a, sizeof *args);
    stmt **inner = arena_alloc(a, (size_t)n * sizeof *inner);
    expr *var = new_expr(a, EX_NAME, line, col), *call = new_expr(a, EX_CALL, line, col),
         *callee = new_expr(a, EX_NAME, line, col), *one = new_expr(a, EX_INT, line, col);
    if (!f || !targets || !args || !inner || !var || !call || !callee || !one) return NULL;
    memset(f, 0, sizeof *f);
    var->name = "_tack_once";
    callee->name = "range";
    one->ival = 1;
    args[0] = one;
    call->a = callee;
    call->items = args;
    call->nitems = 1;
    targets[0] = var;
    memcpy(inner, body, (size_t)n * sizeof *inner);
    f->kind = ST_FOR;
    f->line = line;
    f->col = col;
    f->targets = targets;
    f->ntargets = 1;
    f->value = call;
    f->body = inner;
    f->nbody = n;
    return f;
}

int lower_wrap_top_statements(func_def *d, arena *a) {
    int loops = 0;
    for (int i = 0; i < d->nbody; i++) loops += d->body[i]->kind == ST_FOR;
    if (!loops) return 0; /* reductions.c asks for the launch loop */
    stmt **out = arena_alloc(a, (size_t)(d->nbody ? d->nbody : 1) * sizeof *out);
    if (!out) return -1;
    int n = 0;
    for (int i = 0; i < d->nbody;) {
        if (stays(d, i)) {
            out[n++] = d->body[i++];
            continue;
        }
        int j = i;
        while (j < d->nbody && !stays(d, j)) j++;
        stmt *f = once_loop(a, d->body + i, j - i);
        if (!f) return -1;
        out[n++] = f;
        i = j;
    }
    d->body = out;
    d->nbody = n;
    return 0;
}
