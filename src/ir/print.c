/* print.c - a readable text form of the IR, for debugging and for tests
 * that compare the IR of two builds. */
#include "ir.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct out {
    char *buf;
    size_t len, cap;
} out;

static void put(out *o, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    char tmp[256];
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    if (o->len + n + 1 > o->cap) {
        size_t cap = (o->cap + n + 1) * 2;
        char *p = realloc(o->buf, cap);
        if (!p) return;
        o->buf = p;
        o->cap = cap;
    }
    memcpy(o->buf + o->len, tmp, n + 1 > (int)sizeof tmp ? sizeof tmp : (size_t)n + 1);
    o->len += n < (int)sizeof tmp ? (size_t)n : sizeof tmp - 1;
}

static const char *op_text[] = {"+", "-", "*", "/", "//", "%", "**", "&", "|", "^",
                                "<<", ">>", "-", "+", "~", "not ", "<", "<=", ">",
                                ">=", "==", "!="};

static void block(out *o, const ir_func *f, const ir_block *b, int depth);

static void expr(out *o, const ir_func *f, const ir_expr *e) {
    if (!e) {
        put(o, "<null>");
        return;
    }
    switch (e->kind) {
    case IR_CONST:
        if (ir_type_is_float(e->type)) put(o, "%.17g", e->f);
        else put(o, "%lld", (long long)e->i);
        break;
    case IR_PARAM: put(o, "%s", f->params[e->index].name); break;
    case IR_LOCAL: put(o, "%s", f->locals[e->index].name); break;
    case IR_DIM: put(o, "%s.shape[%d]", f->params[e->index].name, e->dim); break;
    case IR_LOAD:
    case IR_SLOAD:
        put(o, "%s[", e->kind == IR_LOAD ? f->params[e->index].name : f->scratch[e->index].name);
        for (int i = 0; i < e->nargs; i++) {
            if (i) put(o, ", ");
            expr(o, f, e->args[i]);
        }
        put(o, "]");
        break;
    case IR_BINOP:
        put(o, "(");
        expr(o, f, e->a);
        put(o, " %s ", op_text[e->op]);
        expr(o, f, e->b);
        put(o, ")");
        break;
    case IR_UNOP:
        put(o, "(%s", op_text[e->op]);
        expr(o, f, e->a);
        put(o, ")");
        break;
    case IR_ANDOR:
        put(o, "(");
        expr(o, f, e->a);
        put(o, e->op == OP_AND ? " and " : " or ");
        expr(o, f, e->b);
        put(o, ")");
        break;
    case IR_SELECT:
        put(o, "(");
        expr(o, f, e->a);
        put(o, " if ");
        expr(o, f, e->cond);
        put(o, " else ");
        expr(o, f, e->b);
        put(o, ")");
        break;
    case IR_CAST:
        put(o, "%s(", ir_type_name(e->type));
        expr(o, f, e->a);
        put(o, ")");
        break;
    case IR_ATOMIC:
        put(o, "atomic_%s(%s[", ir_atomic_name(e->atomic), f->params[e->index].name);
        for (int i = 0; i < e->nargs; i++) {
            if (i) put(o, ", ");
            expr(o, f, e->args[i]);
        }
        put(o, "], ");
        expr(o, f, e->a);
        if (e->b) {
            put(o, ", ");
            expr(o, f, e->b);
        }
        put(o, ")");
        break;
    case IR_VECTOR:
        put(o, "vector%d", e->nargs);
        break;
    case IR_INLINE:
        put(o, "inline#%d {\n", e->inline_id);
        block(o, f, e->body, 2);
        put(o, "} -> %s", e->index >= 0 ? f->locals[e->index].name : "None");
        break;
    case IR_CALL:
        put(o, "%s(", ir_intrinsic_name(e->fn));
        for (int i = 0; i < e->nargs; i++) {
            if (i) put(o, ", ");
            expr(o, f, e->args[i]);
        }
        put(o, ")");
        break;
    }
    if (e->kind != IR_CAST) put(o, ":%s", ir_type_name(e->type));
}

static void stmt(out *o, const ir_func *f, const ir_stmt *s, int depth) {
    put(o, "%*s", depth * 4, "");
    switch (s->kind) {
    case IR_ASSIGN:
        put(o, "%s = ", f->locals[s->index].name);
        expr(o, f, s->value);
        put(o, "\n");
        break;
    case IR_STORE:
    case IR_SSTORE:
        put(o, "%s[", s->kind == IR_STORE ? f->params[s->index].name : f->scratch[s->index].name);
        for (int i = 0; i < s->nindices; i++) {
            if (i) put(o, ", ");
            expr(o, f, s->indices[i]);
        }
        put(o, "] = ");
        expr(o, f, s->value);
        put(o, "\n");
        break;
    case IR_IF:
    case IR_WHILE:
        put(o, s->kind == IR_IF ? "if " : "while ");
        expr(o, f, s->value);
        put(o, ":\n");
        block(o, f, &s->body, depth + 1);
        if (s->orelse.n) {
            put(o, "%*selse:\n", depth * 4, "");
            block(o, f, &s->orelse, depth + 1);
        }
        break;
    case IR_FOR:
        put(o, "for %s in range(", f->locals[s->index].name);
        expr(o, f, s->start);
        put(o, ", ");
        expr(o, f, s->stop);
        put(o, ", ");
        expr(o, f, s->step);
        put(o, "):\n");
        block(o, f, &s->body, depth + 1);
        break;
    case IR_BREAK: put(o, "break\n"); break;
    case IR_EVAL:
        expr(o, f, s->value);
        put(o, "\n");
        break;
    case IR_EXIT: put(o, "return from inline#%d\n", s->index); break;
    case IR_BOUNDS_FAIL: put(o, "bounds_fail(site %d)\n", s->index); break;
    case IR_BARRIER: put(o, "barrier()\n"); break;
    case IR_PRINT: /* print("text", value, "text", ...) with texts quoted */
        put(o, "print(");
        for (int i = 0; i <= s->nindices; i++) {
            put(o, "%s\"", i ? ", " : "");
            for (const char *c = s->texts[i]; *c; c++)
                put(o, *c == '\n' ? "\\n" : *c == '"' || *c == '\\' ? "\\%c" : "%c", *c);
            put(o, "\"");
            if (i < s->nindices) {
                put(o, ", ");
                expr(o, f, s->indices[i]);
            }
        }
        put(o, ")\n");
        break;
    case IR_CONTINUE: put(o, "continue\n"); break;
    }
}

static void block(out *o, const ir_func *f, const ir_block *b, int depth) {
    for (int i = 0; i < b->n; i++) stmt(o, f, b->stmts[i], depth);
}

char *ir_print(const ir_func *f) {
    out o = {0};
    put(&o, "kernel %s(", f->name);
    for (int i = 0; i < f->nparams; i++)
        put(&o, "%s%s: %s%s", i ? ", " : "", f->params[i].name,
            f->params[i].role == ROLE_ARRAY ? "array " : "", ir_type_name(f->params[i].type));
    put(&o, ") disjoint=%d\nparallel for %s in range(", f->disjoint,
        f->locals[f->loop_var].name);
    expr(&o, f, f->start);
    put(&o, ", ");
    expr(&o, f, f->stop);
    put(&o, ", ");
    expr(&o, f, f->step);
    put(&o, "):\n");
    for (int i = 0; i < f->nscratch; i++) {
        const ir_scratch *a = &f->scratch[i];
        put(&o, "    %s = %s(", a->name, a->shared ? "shared" : "local");
        for (int d = 0; d < a->ndim; d++) put(&o, "%s%lld", d ? ", " : "", (long long)a->dims[d]);
        put(&o, "): %s\n", ir_type_name(a->type));
    }
    block(&o, f, &f->body, 1);
    return o.buf;
}
