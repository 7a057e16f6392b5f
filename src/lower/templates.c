/* templates.c - template-class arguments in kernels (the template rewrite).
 *
 * A template argument expands into hidden parameters, one per array and
 * instance scalar attribute, depth first in field order (the runtime
 * expands each call's arguments in the same order).  `t.const` becomes a
 * literal of the constant's Python type; `t.scalar` reads its hidden
 * parameter; `t.arr[i]` indexes its hidden array; `t.method(...)` inlines
 * the class's @tack.func method with self bound to t. */
#include <stdio.h>
#include <string.h>

#include "lower_internal.h"

#define MAX_DEPTH 8

static tmpl_node *build(lowerer *L, const tack_struct *s, const char *path, int param0,
                        const char *field_path, int depth, int line, int col) {
    ir_func *f = L->f;
    tmpl_node *node = arena_alloc(&L->scratch, sizeof *node);
    int n = s->nfields;
    if (!node || !(node->param = arena_alloc(&L->scratch, (n ? n : 1) * sizeof *node->param)) ||
        !(node->sub = arena_alloc(&L->scratch, (n ? n : 1) * sizeof *node->sub)) ||
        !(node->path = arena_strdup(&L->scratch, path)) ||
        !(node->field_path = arena_strdup(&L->scratch, field_path))) {
        lower_oom(L);
        return NULL;
    }
    node->s = s;
    node->param0 = param0;
    for (int i = 0; i < n; i++) {
        const tack_field *fld = &s->fields[i];
        char name[512];
        node->param[i] = -1;
        if (snprintf(name, sizeof name, "%s.%s", path, fld->name) >= (int)sizeof name) {
            ERR(L, line, col, "attribute path '%s.%s' is too long", path, fld->name);
            return NULL;
        }
        if (fld->role == TACK_FIELD_STRUCT) {
            if (depth >= MAX_DEPTH) {
                ERR(L, line, col, "templates nested more than %d deep at '%s'", MAX_DEPTH, name);
                return NULL;
            }
            char sub_path[512];
            if (snprintf(sub_path, sizeof sub_path, "%s%s%s", field_path, field_path[0] ? "." : "",
                         fld->name) >= (int)sizeof sub_path) {
                ERR(L, line, col, "attribute path '%s' is too long", name);
                return NULL;
            }
            if (!(node->sub[i] = build(L, fld->nested, name, param0, sub_path, depth + 1, line, col)))
                return NULL;
            continue;
        }
        if (fld->role != TACK_FIELD_ARRAY && fld->role != TACK_FIELD_SCALAR) continue;
        if (f->nparams == TACK_MAX_PARAMS) {
            ERR(L, line, col, "the kernel's parameters and its templates' attributes add up to "
                "more than %d", TACK_MAX_PARAMS);
            return NULL;
        }
        int index = ir_param_add(f);
        ir_param *p = index >= 0 ? &f->params[index] : NULL;
        if (!p || !(p->name = arena_strdup(&f->mem, name))) {
            lower_oom(L);
            return NULL;
        }
        p->line = line;
        p->col = col;
        if (fld->role == TACK_FIELD_ARRAY) p->vec_width = fld->value.vec_width;
        node->param[i] = index;
    }
    return node;
}

int template_params(lowerer *L, scope *ks) {
    const func_def *d = ks->def;
    for (int i = 0; i < d->nparams && L->in->args; i++) {
        const tack_arg *a = &L->in->args[i];
        if (a->kind == TACK_ARG_COMPLEX) {
            /* its imaginary part, where runtime/templates.c passes it */
            char name[300];
            snprintf(name, sizeof name, "%s.imag", d->params[i]);
            int p = L->f->nparams < TACK_MAX_PARAMS ? ir_param_add(L->f) : -1;
            if (p < 0) {
                ERR(L, L->f->params[i].line, L->f->params[i].col, "the kernel's parameters and "
                    "its templates' attributes add up to more than %d", TACK_MAX_PARAMS);
                return -1;
            }
            ir_param *prm = &L->f->params[p];
            if (!(prm->name = arena_strdup(&L->f->mem, name))) return lower_oom(L);
            prm->max_dim_read = -1;
            prm->type = IRT_UNSET;
            prm->line = L->f->params[i].line;
            prm->col = L->f->params[i].col;
            L->cx_imag[i] = p + 1;
            L->f->params[i].vec_width = 0; /* a scalar: nothing indexes it */
            continue;
        }
        if (a->kind != TACK_ARG_STRUCT) continue;
        L->f->params[i].role = ROLE_TEMPLATE;
        tmpl_node *node = build(L, a->tmpl, d->params[i], i, "", 0, L->f->params[i].line,
                                L->f->params[i].col);
        if (!node || scope_bind(L, ks, d->params[i], BIND_TEMPLATE, i)) return -1;
        ks->binds[ks->nbinds - 1].tmpl = node;
    }
    return 0;
}

static int field_index(const tack_struct *s, const char *name) {
    for (int i = 0; i < s->nfields; i++)
        if (!strcmp(s->fields[i].name, name)) return i;
    return -1;
}

int template_ref(lowerer *L, const expr *e, tmpl_node **node, int *field) {
    if (e->kind == EX_NAME) {
        const binding *b = scope_find(L->sc, e->name);
        if (!b || b->kind != BIND_TEMPLATE) return 0;
        *node = b->tmpl;
        *field = -1;
        return 1;
    }
    if (e->kind != EX_ATTR) return 0;
    int r = template_ref(L, e->a, node, field);
    if (r != 1) return r;
    if (*field >= 0) return 0; /* an attribute of a field: x.shape, v.x, ... */
    int i = field_index((*node)->s, e->name);
    if (i < 0) {
        ERR(L, e->line, e->col, "'%s' (a %s) has no attribute '%s'", (*node)->path,
            (*node)->s->class_name ? (*node)->s->class_name : "template", e->name);
        return -1;
    }
    if ((*node)->s->fields[i].role == TACK_FIELD_STRUCT) {
        *node = (*node)->sub[i];
        return 1;
    }
    *field = i;
    return 1;
}

int array_param_of(lowerer *L, const expr *e) {
    if (e->kind == EX_NAME) {
        const binding *b = scope_find(L->sc, e->name);
        return b && b->kind == BIND_PARAM ? b->index : -1;
    }
    tmpl_node *node;
    int field;
    if (template_ref(L, e, &node, &field) != 1 || field < 0) return -1;
    return node->s->fields[field].role == TACK_FIELD_ARRAY ? node->param[field] : -1;
}

ir_expr *template_field_value(lowerer *L, tmpl_node *node, int field, const expr *at) {
    const tack_field *fld = &node->s->fields[field];
    ir_func *f = L->f;
    ir_expr *x = NULL;
    if (fld->role == TACK_FIELD_CONSTANT) {
        /* Inlined with its Python type: 1 is an int literal, 1.0 a float. */
        const tack_arg *v = &fld->value;
        if (v->kind == TACK_ARG_FLOAT) x = ir_const_float(f, v->f, IRT_WEAK_FLOAT, at->line, at->col);
        else if (v->kind == TACK_ARG_BOOL) x = ir_const_int(f, v->i != 0, TACK_BOOL, at->line, at->col);
        else if (v->kind == TACK_ARG_UINT && v->u > (uint64_t)INT64_MAX)
            x = ir_const_int(f, (int64_t)v->u, TACK_U64, at->line, at->col);
        else
            x = ir_const_int(f, v->kind == TACK_ARG_UINT ? (int64_t)v->u : v->i, IRT_WEAK_INT,
                             at->line, at->col);
    } else if (fld->role == TACK_FIELD_SCALAR) {
        int p = node->param[field];
        ir_param *prm = &f->params[p];
        if (prm->role == ROLE_ARRAY) {
            ERR(L, at->line, at->col, "'%s' is used as an array elsewhere", prm->name);
            return NULL;
        }
        prm->role = ROLE_SCALAR;
        x = ir_expr_new(f, IR_PARAM, at->line, at->col);
        if (x) x->index = p;
    } else {
        ERR(L, at->line, at->col, "'%s.%s' is an array: index it or read its shape", node->path,
            fld->name);
        return NULL;
    }
    if (!x) lower_oom(L);
    return x;
}

ir_expr *template_method_call(lowerer *L, const expr *call, tmpl_node *self) {
    const char *name = call->a->name;
    tack_name fn;
    memset(&fn, 0, sizeof fn);
    int found = L->in->resolver && self->s->method_ctx &&
                L->in->resolver(self->s->method_ctx, name, &fn) == 0 && fn.kind == TACK_NAME_FUNC;
    char qualified[300];
    snprintf(qualified, sizeof qualified, "%s.%s", self->s->class_name ? self->s->class_name : "?",
             name);
    if (ir_record_resolution(L->f, L->f->cur_src, qualified, &fn)) lower_oom(L);
    if (!found && fn.kind == TACK_NAME_OTHER && fn.text) {
        ERR(L, call->line, call->col, "method '%s' is %s", qualified, fn.text);
        return NULL;
    }
    if (!found) {
        ERR(L, call->line, call->col, "%s has no @tack.func method '%s'",
            self->s->class_name ? self->s->class_name : "the template", name);
        return NULL;
    }
    const int *results;
    int n;
    ir_expr *x = lower_method_call(L, call, &fn, self, &results, &n);
    if (x && n > 1 && !vec_is(x)) {
        ERR(L, call->line, call->col, "'%s' returns %d values; unpack them", name, n);
        return NULL;
    }
    return x;
}
