/* print.c - print(...) in kernels, lowered to one IR_PRINT statement.
 *
 * The line is built here as Python's print builds it: the items joined by
 * `sep` (' ') and followed by `end` ('\n').  String literals and the
 * separators become fixed texts; each scalar value becomes a slot between
 * two texts, formatted by its type once inference has typed it (the
 * backends: cpu/codegen.c, gpu/emit.c); a vector is printed as the tuple
 * of its components, "(x, y, z)"; an f-string's parts are items joined
 * without `sep` (f"x = {x}").  Every value is evaluated first, left to
 * right, into a temporary, so a vector's setup and the effects of calls
 * run in Python's order before anything is printed. */
#include <string.h>

#include "lower_internal.h"

/* The most values one print() shows (docs/language.md, "Printing"). */
#define PRINT_MAX_VALUES 512

typedef struct line_builder {
    lowerer *L;
    const expr *at;      /* the call, for messages */
    char *text;          /* the text being built after the last value */
    size_t len, cap;
    const char **texts;  /* finished texts, one more than values */
    ir_expr **values;
    int nvalues, cap_values;
} line_builder;

static int add_text(line_builder *B, const char *s, size_t n) {
    if (memchr(s, 0, n)) { /* printf formats are C strings */
        ERR(B->L, B->at->line, B->at->col, "print() in a kernel cannot print a NUL character");
        return -1;
    }
    if (B->len + n + 1 > B->cap) {
        size_t cap = B->cap ? B->cap : 64;
        while (cap < B->len + n + 1) cap *= 2;
        char *t = arena_grow(&B->L->f->mem, B->text, B->len, cap, 1);
        if (!t) return lower_oom(B->L);
        B->text = t;
        B->cap = cap;
    }
    memcpy(B->text + B->len, s, n);
    B->len += n;
    B->text[B->len] = 0;
    return 0;
}

/* Ends the current text and makes `v` the next slot. */
static int add_value(line_builder *B, ir_expr *v) {
    if (B->nvalues == B->cap_values) {
        int cap = B->cap_values ? B->cap_values * 2 : 8;
        const char **t = arena_grow(&B->L->f->mem, B->texts, B->nvalues, cap + 1, sizeof *t);
        if (!t) return lower_oom(B->L);
        B->texts = t;
        ir_expr **x = arena_grow(&B->L->f->mem, B->values, B->nvalues, cap, sizeof *x);
        if (!x) return lower_oom(B->L);
        B->values = x;
        B->cap_values = cap;
    }
    if (add_text(B, "", 0)) return -1; /* an empty text is still a string */
    B->texts[B->nvalues] = B->text;
    B->values[B->nvalues++] = v;
    B->text = NULL;
    B->len = B->cap = 0;
    return 0;
}

/* A keyword argument that must be a string literal: sep= and end=. */
static int keyword_text(lowerer *L, const expr *call, int k, const char **out, size_t *len) {
    const expr *v = call->kw_values[k];
    if (v->kind != EX_STR) {
        ERR(L, v->line, v->col, "print()'s %s= must be a string literal in a kernel",
            call->kw_names[k]);
        return -1;
    }
    *out = v->str;
    *len = v->len;
    return 0;
}

/* Why argument `a` is not a value print() can show, or NULL. */
static const char *not_printable(lowerer *L, const expr *a) {
    if (a->kind != EX_NAME) return NULL;
    const binding *b = scope_find(L->sc, a->name);
    if (!b) return NULL;
    if (b->kind == BIND_SCRATCH || b->kind == BIND_ROW) return "an array";
    if (b->kind == BIND_PARAM && L->f->params[b->index].role == ROLE_ARRAY) return "an array";
    return NULL;
}

/* Evaluates one scalar into a fresh local and reads it back. */
static ir_expr *hoisted(lowerer *L, ir_block *b, ir_expr *v, const expr *at) {
    int t = lower_temp(L, "p");
    if (t < 0 || lower_set_local(L, b, t, v, at)) return NULL;
    return lower_read_local(L, t, at);
}

/* One item: a text, or a value evaluated into b (a vector as a tuple). */
static int add_item(line_builder *B, ir_block *b, const expr *a) {
    lowerer *L = B->L;
    if (a->kind == EX_STR) return add_text(B, a->str, a->len);
    const char *why = not_printable(L, a);
    if (why) {
        ERR(L, a->line, a->col, "print() cannot print '%s', %s: print its elements "
            "(%s[i]) instead", a->name, why, a->name);
        return -1;
    }
    ir_expr *v = lower_expr(L, a);
    if (!v) return -1;
    if (!vec_is(v)) {
        ir_expr *x = hoisted(L, b, v, a);
        return !x || add_value(B, x) ? -1 : 0;
    }
    /* A vector: its components as a tuple, "(x, y, z)". */
    if (vec_eval(L, b, v) || add_text(B, "(", 1)) return -1;
    for (int k = 0; k < v->nargs; k++) {
        if (k && add_text(B, ", ", 2)) return -1;
        ir_expr *x = lower_read_local(L, v->args[k]->index, a);
        if (!x || add_value(B, x)) return -1;
    }
    return add_text(B, ")", 1);
}

int lower_print(lowerer *L, ir_block *b, const expr *call) {
    const char *sep = " ", *end = "\n";
    size_t sep_len = 1, end_len = 1;
    for (int k = 0; k < call->nkw; k++) {
        const char *name = call->kw_names[k];
        for (int j = 0; j < k; j++)
            if (!strcmp(call->kw_names[j], name)) {
                ERR(L, call->kw_values[k]->line, call->kw_values[k]->col,
                    "print() got keyword argument '%s' twice", name);
                return -1;
            }
        if (!strcmp(name, "sep")) {
            if (keyword_text(L, call, k, &sep, &sep_len)) return -1;
        } else if (!strcmp(name, "end")) {
            if (keyword_text(L, call, k, &end, &end_len)) return -1;
        } else if (!strcmp(name, "flush")) {
            /* Output is always flushed before the launch returns. */
            if (call->kw_values[k]->kind != EX_BOOL) {
                ERR(L, call->kw_values[k]->line, call->kw_values[k]->col,
                    "print()'s flush= must be True or False in a kernel");
                return -1;
            }
        } else if (!strcmp(name, "file")) {
            ERR(L, call->kw_values[k]->line, call->kw_values[k]->col,
                "print() in a kernel writes to standard output only: file= is not supported");
            return -1;
        } else {
            ERR(L, call->kw_values[k]->line, call->kw_values[k]->col,
                "print() got an unexpected keyword argument '%s'", name);
            return -1;
        }
    }
    line_builder B = {.L = L, .at = call};
    if (add_text(&B, "", 0)) return -1;
    for (int i = 0; i < call->nitems; i++) {
        const expr *a = call->items[i];
        if (i && add_text(&B, sep, sep_len)) return -1;
        if (a->kind != EX_FSTRING) {
            if (add_item(&B, b, a)) return -1;
            continue;
        }
        for (int k = 0; k < a->nitems; k++) /* f"x = {x}": its texts and values */
            if (add_item(&B, b, a->items[k])) return -1;
    }
    if (add_text(&B, end, end_len)) return -1;
    /* Every device's compile time stays short up to here (issue 26). */
    if (B.nvalues > PRINT_MAX_VALUES) {
        ERR(L, call->line, call->col,
            "print() in a kernel shows at most %d values; this one has %d (print in parts)",
            PRINT_MAX_VALUES, B.nvalues);
        return -1;
    }
    if (!B.texts && !(B.texts = arena_alloc(&L->f->mem, sizeof *B.texts))) return lower_oom(L);
    B.texts[B.nvalues] = B.text;
    ir_stmt *s = ir_stmt_new(L->f, IR_PRINT, call->line, call->col);
    if (!s) return lower_oom(L);
    s->indices = B.values;
    s->nindices = B.nvalues;
    s->texts = B.texts;
    if (ir_block_push(L->f, b, s)) return lower_oom(L);
    return 0;
}
