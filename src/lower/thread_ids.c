/* thread_ids.c - Warp's launches: a kernel whose body asks for its thread
 * index instead of looping,
 *
 *   def k(x, out):                        def k(x, out, _tack_dim0, _tack_dim1):
 *       i, j = tack.tid()        ->           for i, j in tack.ndindex(_tack_dim0, _tack_dim1):
 *       out[i, j] = x[i, j]                       out[i, j] = x[i, j]
 *
 * is rewritten, on the AST, to the launch loop every other kernel has, over
 * extents given as hidden trailing parameters (tack.launch(k, dim=(n, m),
 * inputs=[...]) passes them).  The names tack.tid() is assigned to become
 * the loop's variables, so x[i, j] is this iteration's own element as in
 * any launch; the statements before and after it run in each iteration (a
 * `return` ends the iteration, as Warp's does). */
#include <stdio.h>
#include <string.h>

#include "lower.h"

/* The number of names `s` assigns tack.tid() (wp.tid(), tid()) to, or 0. */
static int tid_names(const stmt *s) {
    if (s->kind != ST_ASSIGN || s->ntargets != 1 || !s->value || s->value->kind != EX_CALL ||
        s->value->nitems || s->value->nkw)
        return 0;
    const expr *f = s->value->a;
    int named = (f->kind == EX_NAME || (f->kind == EX_ATTR && f->a->kind == EX_NAME)) &&
                !strcmp(f->name, "tid");
    if (!named) return 0;
    const expr *t = s->targets[0];
    if (t->kind == EX_NAME) return 1;
    if (t->kind != EX_TUPLE || t->nitems < 1 || t->nitems > 3) return 0;
    for (int i = 0; i < t->nitems; i++)
        if (t->items[i]->kind != EX_NAME) return 0;
    return t->nitems;
}

static expr *node(arena *a, expr_kind k, const stmt *at) {
    expr *e = arena_alloc(a, sizeof *e);
    if (e) {
        memset(e, 0, sizeof *e);
        e->kind = k;
        e->line = at->line;
        e->col = at->col;
    }
    return e;
}

int lower_wrap_thread_ids(func_def *d, arena *a, int *dims) {
    *dims = 0;
    int at = -1;
    for (int i = 0; i < d->nbody && at < 0; i++)
        if (tid_names(d->body[i])) at = i;
    if (at < 0) return 0;
    const stmt *tid = d->body[at];
    int n = tid_names(tid);
    /* The hidden extents, after the parameters. */
    int np = d->nparams + n;
    const char **params = arena_alloc(a, (size_t)np * sizeof *params);
    int *lines = arena_alloc(a, (size_t)np * sizeof *lines);
    int *cols = arena_alloc(a, (size_t)np * sizeof *cols);
    expr **defaults = arena_alloc(a, (size_t)np * sizeof *defaults);
    expr **extents = arena_alloc(a, (size_t)n * sizeof *extents);
    stmt *loop = arena_alloc(a, sizeof *loop);
    stmt **body = arena_alloc(a, (size_t)(d->nbody > 1 ? d->nbody - 1 : 1) * sizeof *body);
    stmt **top = arena_alloc(a, sizeof *top);
    expr *call = node(a, EX_CALL, tid), *callee = node(a, EX_ATTR, tid),
         *module = node(a, EX_NAME, tid);
    if (!params || !lines || !cols || !defaults || !extents || !loop || !body || !top || !call ||
        !callee || !module)
        return -1;
    for (int i = 0; i < np; i++) {
        int own = i < d->nparams;
        params[i] = own ? d->params[i] : NULL;
        lines[i] = own ? d->param_lines[i] : tid->line;
        cols[i] = own ? d->param_cols[i] : tid->col;
        defaults[i] = own && d->defaults ? d->defaults[i] : NULL;
    }
    for (int k = 0; k < n; k++) {
        char name[32];
        snprintf(name, sizeof name, "_tack_dim%d", k);
        params[d->nparams + k] = arena_strdup(a, name);
        if (!params[d->nparams + k] || !(extents[k] = node(a, EX_NAME, tid))) return -1;
        extents[k]->name = params[d->nparams + k];
    }
    /* for <tid's names> in tack.ndindex(_tack_dim0, ...): the rest of the body */
    module->name = "tack";
    callee->name = "ndindex";
    callee->a = module;
    call->a = callee;
    call->items = extents;
    call->nitems = n;
    memset(loop, 0, sizeof *loop);
    loop->kind = ST_FOR;
    loop->line = tid->line;
    loop->col = tid->col;
    loop->targets = tid->targets;
    loop->ntargets = 1;
    loop->value = call;
    int nb = 0;
    for (int i = 0; i < d->nbody; i++)
        if (i != at) body[nb++] = d->body[i];
    loop->body = body;
    loop->nbody = nb;
    top[0] = loop;
    d->params = params;
    d->param_lines = lines;
    d->param_cols = cols;
    d->defaults = defaults;
    d->nparams = np;
    d->body = top;
    d->nbody = 1;
    *dims = n;
    return 0;
}
