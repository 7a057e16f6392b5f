/* inline.c - @tack.func device functions, inlined at each call.
 *
 * A call becomes an IR_INLINE expression: the arguments are bound, the
 * function's body is lowered in a fresh scope, each `return v` assigns the
 * call's result locals and leaves the body (IR_EXIT).  An argument that is
 * a bare kernel parameter is bound by reference (so an array parameter
 * stays the caller's array, and stores through it count as stores to that
 * array); any other argument is evaluated once into a local, as Python
 * evaluates arguments before the call. */
#include <stdio.h>
#include <string.h>

#include "lower_internal.h"

#define MAX_INLINE_DEPTH 32

/* Whether `name` is assigned anywhere in the statements. */
static int target_names(const expr *t, const char *name) {
    if (t->kind == EX_NAME) return !strcmp(t->name, name);
    if (t->kind == EX_TUPLE)
        for (int i = 0; i < t->nitems; i++)
            if (target_names(t->items[i], name)) return 1;
    return 0;
}

static int assigns(stmt *const *body, int n, const char *name) {
    for (int i = 0; i < n; i++) {
        const stmt *s = body[i];
        for (int t = 0; t < s->ntargets; t++)
            if (target_names(s->targets[t], name)) return 1;
        if (assigns(s->body, s->nbody, name) || assigns(s->orelse, s->norelse, name)) return 1;
    }
    return 0;
}

/* Whether every path through the statements ends in a return. */
static int always_returns(stmt *const *body, int n) {
    if (!n) return 0;
    const stmt *last = body[n - 1];
    if (last->kind == ST_RETURN) return 1;
    if (last->kind == ST_IF)
        return always_returns(last->body, last->nbody) && always_returns(last->orelse, last->norelse);
    return 0;
}

static int same_function(const scope *s, const tack_name *fn) {
    return s->inline_id >= 0 && !strcmp(s->src.text, fn->text) &&
           !strcmp(s->src.filename ? s->src.filename : "", fn->filename ? fn->filename : "") &&
           s->src.first_line == fn->first_line;
}

/* Binds parameter i of the callee to the caller's argument, appending any
 * evaluation to `body`.  Runs in the caller's scope. */
static int bind_argument(lowerer *L, scope *callee, ir_block *body, const func_def *def, int i,
                         const expr *arg) {
    const char *pname = def->params[i];
    tmpl_node *node;
    int field;
    int ref = template_ref(L, arg, &node, &field);
    if (ref < 0) return -1;
    if (ref == 1 && field < 0) { /* a template: bound by reference */
        if (scope_bind(L, callee, pname, BIND_TEMPLATE, -1)) return -1;
        callee->binds[callee->nbinds - 1].tmpl = node;
        return 0;
    }
    if (!assigns(def->body, def->nbody, pname)) {
        /* A kernel parameter (or a template's array) is bound by reference. */
        int p = arg->kind == EX_NAME ? -1 : array_param_of(L, arg);
        const binding *b = arg->kind == EX_NAME ? scope_find(L->sc, arg->name) : NULL;
        if (b && b->kind == BIND_PARAM) p = b->index;
        if (p >= 0) return scope_bind(L, callee, pname, BIND_PARAM, p);
        int rc = view_bind_parameter(L, callee, body, def, pname, arg);
        if (rc <= 0) return rc;
    }
    int rc = struct_bind_argument(L, callee, body, pname, arg);
    if (rc) return rc < 0 ? -1 : 0;
    return inline_bind_value(L, callee, body, pname, lower_expr(L, arg), arg);
}

/* Binds `pname` in the callee to a copy of the value v (lowered in the
 * caller's scope), the assignment appended to `body`. */
int inline_bind_value(lowerer *L, scope *callee, ir_block *body, const char *pname, ir_expr *v,
                      const expr *arg) {
    if (!v) return -1;
    if (vec_is(v)) {
        if (scope_bind(L, callee, pname, BIND_LOCAL, -1)) return -1;
        const stmt at = {.line = arg->line, .col = arg->col};
        return vec_assign_local(L, body, &callee->binds[callee->nbinds - 1], v, &at);
    }
    char name[256];
    snprintf(name, sizeof name, "%s@%d", pname, callee->inline_id);
    int local = ir_local_add(L->f, name);
    ir_stmt *s = ir_stmt_new(L->f, IR_ASSIGN, arg->line, arg->col);
    if (local < 0 || !s) return lower_oom(L);
    s->index = local;
    s->value = v;
    if (ir_block_push(L->f, body, s)) return lower_oom(L);
    return scope_bind(L, callee, pname, BIND_LOCAL, local);
}

static int is_literal(const expr *e) {
    if (e->kind == EX_UNARY && (!strcmp(e->op, "-") || !strcmp(e->op, "+"))) e = e->a;
    return e->kind == EX_INT || e->kind == EX_FLOAT || e->kind == EX_BOOL;
}

/* args[i] for each parameter i >= first: the positional arguments, then
 * the keyword ones by name, then the defaults (literals, as Python would
 * have evaluated them once at the def). */
static int place_arguments(lowerer *L, const expr *call, const func_def *def, int first,
                           const char *what, const char *name, const expr **args) {
    int want = def->nparams - def->nkwonly - first;
    for (int i = 0; i < def->nparams; i++) args[i] = NULL;
    if (call->nitems > want && def->nkwonly) {
        ERR(L, call->line, call->col,
            "%s '%s' takes %d positional argument%s, got %d (the parameters after '*' are "
            "keyword-only: pass them by name)", what, name, want, want == 1 ? "" : "s",
            call->nitems);
        return -1;
    }
    if (call->nitems > want) {
        ERR(L, call->line, call->col, "%s '%s' takes %d argument%s, got %d", what, name, want,
            want == 1 ? "" : "s", call->nitems);
        return -1;
    }
    for (int k = 0; k < call->nitems; k++) args[first + k] = call->items[k];
    for (int k = 0; k < call->nkw; k++) {
        int at = -1;
        for (int i = first; i < def->nparams; i++)
            if (!strcmp(def->params[i], call->kw_names[k])) at = i;
        if (at < 0 || args[at]) {
            ERR(L, call->kw_values[k]->line, call->kw_values[k]->col,
                at < 0 ? "%s '%s' has no parameter '%s'" : "%s '%s' got two values for '%s'", what,
                name, call->kw_names[k]);
            return -1;
        }
        args[at] = call->kw_values[k];
    }
    for (int i = first; i < def->nparams; i++) {
        if (args[i]) continue;
        const expr *d = def->defaults ? def->defaults[i] : NULL;
        if (!d) {
            ERR(L, call->line, call->col, "%s '%s' is missing its %sargument '%s'", what, name,
                i >= def->nparams - def->nkwonly ? "keyword-only " : "", def->params[i]);
            return -1;
        }
        if (!is_literal(d)) {
            ERR(L, call->line, call->col, "%s '%s': the default of '%s' must be a number or a "
                "bool literal; pass '%s' here", what, name, def->params[i], def->params[i]);
            return -1;
        }
        args[i] = d;
    }
    return 0;
}

static ir_expr *inline_call(lowerer *L, const expr *call, const tack_name *fn, tmpl_node *self,
                            const int **results, int *nresults, const scope **callee_out) {
    const char *name = call->a->kind == EX_NAME || call->a->kind == EX_ATTR ? call->a->name : "?";
    *results = NULL;
    *nresults = 0;
    for (const scope *s = L->sc; s; s = s->parent)
        if (same_function(s, fn)) {
            ERR(L, call->line, call->col,
                "device function '%s' calls itself: recursion is not supported", name);
            return NULL;
        }
    if (L->depth >= MAX_INLINE_DEPTH) {
        ERR(L, call->line, call->col, "device functions nested more than %d calls deep",
            MAX_INLINE_DEPTH);
        return NULL;
    }
    scope *callee = arena_alloc(&L->scratch, sizeof *callee);
    ir_block *body = arena_alloc(&L->f->mem, sizeof *body);
    ir_expr *x = ir_expr_new(L->f, IR_INLINE, call->line, call->col);
    if (!callee || !body || !x) {
        lower_oom(L);
        return NULL;
    }
    /* is_function first: the parser's own messages say "device function" too. */
    callee->src = (src_info){fn->text, fn->filename, fn->first_line, NULL, 1};
    func_def *def;
    if (parse_function(&callee->src, &L->scratch, &def, L->err) != TACK_OK) {
        L->failed++;
        return NULL;
    }
    callee->src.kernel_name = def->name;
    callee->src.is_function = 1;
    int first = self ? 1 : 0; /* a method's self is bound, not passed */
    const expr **args = arena_alloc(&L->scratch, (size_t)(def->nparams + 1) * sizeof *args);
    if (!args) {
        lower_oom(L);
        return NULL;
    }
    if (place_arguments(L, call, def, first, self ? "method" : "device function", name, args))
        return NULL;
    callee->parent = L->sc;
    callee->def = def;
    callee->resolver_ctx = fn->func_ctx;
    callee->inline_id = L->f->ninlines++;
    callee->nresults = -1;
    callee->src_id = ir_source_add(L->f, fn->text, fn->filename, def->name, fn->first_line);
    if (callee->src_id < 0 ||
        ir_source_via(L->f, callee->src_id, L->f->cur_src, name, self ? self->param0 : -1,
                      self ? self->field_path : "")) {
        lower_oom(L);
        return NULL;
    }
    x->inline_id = callee->inline_id;
    x->body = body;
    x->index = -1;
    if (self) {
        if (scope_bind(L, callee, def->params[0], BIND_TEMPLATE, -1)) return NULL;
        callee->binds[callee->nbinds - 1].tmpl = self;
    }
    for (int i = first; i < def->nparams; i++)
        if (bind_argument(L, callee, body, def, i, args[i])) return NULL;

    /* Lower the body in the callee's scope; break/continue cannot cross. */
    scope *caller = L->sc;
    int caller_src = L->f->cur_src, caller_loops = L->loop_depth;
    L->sc = callee;
    L->f->cur_src = callee->src_id;
    L->loop_depth = 0;
    L->depth++;
    int rc = lower_declare_locals(L, def->body, def->nbody);
    if (!rc) rc = lower_block(L, body, def->body, def->nbody);
    if (!rc && callee->nresults > 0 && !always_returns(def->body, def->nbody)) {
        ERR(L, def->line, def->col,
            "device function '%s' can reach its end without returning a value", def->name);
        rc = -1;
    }
    L->depth--;
    L->loop_depth = caller_loops;
    L->f->cur_src = caller_src;
    L->sc = caller;
    if (rc) return NULL;
    if (callee_out) *callee_out = callee;
    if (callee->result_width) {
        *nresults = 1;
        ir_expr *v = vec_from_locals(L, x, callee->results, callee->result_width, callee->result_rows, call);
        if (v) {
            v->cplx = callee->result_cplx;
            v->quat = callee->result_quat;
        }
        return v;
    }
    if (callee->nresults > 0) x->index = callee->results[0];
    *results = callee->results;
    *nresults = callee->nresults > 0 ? callee->nresults : 0;
    return x;
}

/* Leaves the inlined body: the end of every return. */
static int push_exit(lowerer *L, ir_block *b, const stmt *s) {
    ir_stmt *exit = ir_stmt_new(L->f, IR_EXIT, s->line, s->col);
    if (!exit) return lower_oom(L);
    exit->index = L->sc->inline_id;
    return ir_block_push(L->f, b, exit) ? lower_oom(L) : 0;
}

ir_expr *lower_device_call(lowerer *L, const expr *call, const tack_name *fn,
                           const int **results, int *nresults) {
    return inline_call(L, call, fn, NULL, results, nresults, NULL);
}

ir_expr *lower_device_call_slots(lowerer *L, const expr *call, const tack_name *fn,
                                 const scope **callee) {
    const int *results;
    int n;
    *callee = NULL;
    return inline_call(L, call, fn, NULL, &results, &n, callee);
}

ir_expr *lower_method_call(lowerer *L, const expr *call, const tack_name *fn, tmpl_node *self,
                           const int **results, int *nresults) {
    return inline_call(L, call, fn, self, results, nresults, NULL);
}

int lower_return(lowerer *L, ir_block *b, const stmt *s) {
    scope *sc = L->sc;
    const expr *v = s->value;
    int n = !v ? 0 : v->kind == EX_TUPLE ? v->nitems : 1;
    if (n > MAX_RESULTS) {
        ERR(L, s->line, s->col, "a device function returns at most %d values", MAX_RESULTS);
        return -1;
    }
    if (n == 1 && v->kind != EX_TUPLE) {
        /* A vector result fills one result local per component. */
        L->record_call = v; /* return f(...) of a record */
        ir_expr *value = lower_expr(L, v);
        const scope *rec = L->record_callee;
        L->record_call = NULL;
        L->record_callee = NULL;
        if (!value) return -1;
        if (rec) return struct_return_call(L, b, s, value, rec);
        if (sc->result_record) {
            char sname[128];
            struct_name(sc->result_record->s, sname, sizeof sname);
            ERR(L, s->line, s->col, "'%s' returns a record of struct '%s' elsewhere, not this value",
                sc->def->name, sname);
            return -1;
        }
        if (vec_is(value)) {
            if (sc->nresults < 0) {
                sc->nresults = 1;
                sc->result_width = value->nargs;
                sc->result_rows = value->dim;
                sc->result_cplx = value->cplx;
                sc->result_quat = value->quat; /* the first return's decides */
                for (int k = 0; k < value->nargs; k++)
                    if ((sc->results[k] = lower_temp(L, "ret")) < 0) return -1;
            } else if (sc->result_width != value->nargs || sc->result_rows != value->dim ||
                       sc->result_cplx != value->cplx) {
                char what[64];
                vec_shape_name(value, what, sizeof what);
                ERR(L, s->line, s->col, "'%s' returns a %s here but not elsewhere",
                    sc->def->name, what);
                return -1;
            }
            sc->slot_first[0] = 0, sc->slot_width[0] = value->nargs, sc->slot_rows[0] = value->dim;
            sc->slot_cplx[0] = value->cplx;
            if (vec_eval(L, b, value)) return -1;
            for (int k = 0; k < value->nargs; k++) {
                ir_stmt *a = ir_stmt_new(L->f, IR_ASSIGN, s->line, s->col);
                ir_expr *r = ir_expr_new(L->f, IR_LOCAL, s->line, s->col);
                if (!a || !r) return lower_oom(L);
                r->index = value->args[k]->index;
                a->index = sc->results[k];
                a->value = r;
                if (ir_block_push(L->f, b, a)) return lower_oom(L);
            }
            return push_exit(L, b, s);
        }
        if (sc->result_width) {
            ERR(L, s->line, s->col, "'%s' returns a vector elsewhere, not a scalar", sc->def->name);
            return -1;
        }
        if (sc->nresults < 0) {
            sc->nresults = 1;
            sc->slot_first[0] = sc->slot_width[0] = sc->slot_rows[0] = 0;
            if ((sc->results[0] = lower_temp(L, "ret")) < 0) return -1;
        } else if (sc->nresults != 1) {
            ERR(L, s->line, s->col, "'%s' returns 1 value here but %d elsewhere", sc->def->name,
                sc->nresults);
            return -1;
        }
        ir_stmt *a = ir_stmt_new(L->f, IR_ASSIGN, s->line, s->col);
        if (!a) return lower_oom(L);
        a->index = sc->results[0];
        a->value = value;
        if (ir_block_push(L->f, b, a)) return lower_oom(L);
        return push_exit(L, b, s);
    }
    if (sc->result_width) {
        ERR(L, s->line, s->col, "'%s' returns a vector elsewhere", sc->def->name);
        return -1;
    }
    ir_expr *values[MAX_RESULTS];
    for (int k = 0; k < n; k++)
        if (!(values[k] = lower_expr(L, v->kind == EX_TUPLE ? v->items[k] : v))) return -1;
    return inline_return_values(L, b, s, values, n);
}

int inline_return_values(lowerer *L, ir_block *b, const stmt *s, ir_expr **values, int n) {
    scope *sc = L->sc;
    const expr *v = s->value;
    if (sc->nresults < 0) { /* the first return sets each value's shape */
        int used = 0;
        for (int k = 0; k < n; k++) {
            int width = vec_is(values[k]) ? values[k]->nargs : 0;
            if (used + (width ? width : 1) > MAX_RESULT_LOCALS) {
                ERR(L, s->line, s->col, "a device function returns at most %d numbers in all",
                    MAX_RESULT_LOCALS);
                return -1;
            }
            sc->slot_first[k] = used;
            sc->slot_width[k] = width;
            sc->slot_rows[k] = width ? values[k]->dim : 0;
            sc->slot_cplx[k] = width ? values[k]->cplx : 0;
            sc->slot_quat[k] = width ? values[k]->quat : 0;
            for (int c = 0; c < (width ? width : 1); c++)
                if ((sc->results[used++] = lower_temp(L, "ret")) < 0) return -1;
        }
        sc->nresults = n;
    } else if (sc->nresults != n) {
        ERR(L, s->line, s->col, "'%s' returns %d value%s here but %d elsewhere", sc->def->name, n,
            n == 1 ? "" : "s", sc->nresults);
        return -1;
    }
    for (int k = 0; k < n; k++) {
        ir_expr *value = values[k];
        int width = vec_is(value) ? value->nargs : 0, first = sc->slot_first[k];
        if (width != sc->slot_width[k] ||
            (width && (value->dim != sc->slot_rows[k] || value->cplx != sc->slot_cplx[k]))) {
            ERR(L, s->line, s->col, "'%s' returns value %d with another shape elsewhere",
                sc->def->name, k + 1);
            return -1;
        }
        if (width && vec_eval(L, b, value)) return -1;
        for (int c = 0; c < (width ? width : 1); c++) {
            ir_stmt *a = ir_stmt_new(L->f, IR_ASSIGN, s->line, s->col);
            ir_expr *part = width ? lower_read_local(L, value->args[c]->index, v) : value;
            if (!a || !part) return lower_oom(L);
            a->index = sc->results[first + c];
            a->value = part;
            if (ir_block_push(L->f, b, a)) return lower_oom(L);
        }
    }
    return push_exit(L, b, s);
}
