/* parse.c - recursive-descent parser for the kernel subset of Python.
 *
 * Every function returns NULL (or 0) after filling p->err; callers just
 * propagate.  Recursion is bounded (MAX_DEPTH for expressions, the lexer's
 * indentation limit for blocks) so hostile input cannot exhaust the stack. */
#include "ast.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define MAX_DEPTH 100

typedef struct parser {
    src_info src; /* a copy, so kernel_name can be set once the def is read */
    arena *a;
    tack_error *err;
    token *t;
    int n, i;
    int depth;
} parser;

/* ---- helpers ---------------------------------------------------------- */

static void *nomem(parser *p) {
    p->err->status = TACK_ERR_NOMEM;
    snprintf(p->err->message, sizeof p->err->message, "out of memory while parsing");
    p->err->filename[0] = 0;
    p->err->lineno = 0;
    p->err->col = 0;
    return NULL;
}

static void *perr(parser *p, const token *t, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void *perr(parser *p, const token *t, const char *fmt, ...) {
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    src_error(&p->src, t->line, t->col, p->err, "%s", buf);
    return NULL;
}

/* Grows an arena array by one slot; FAIL is what the caller returns. */
#define PUSH(P, ARR, N, CAP, ITEM, FAIL)                                              \
    do {                                                                              \
        if ((N) == (CAP)) {                                                           \
            int nc_ = (CAP) ? (CAP)*2 : 4;                                            \
            void *nv_ = arena_grow((P)->a, (ARR), (size_t)(N), (size_t)nc_, sizeof *(ARR)); \
            if (!nv_) {                                                               \
                nomem(P);                                                             \
                return FAIL;                                                          \
            }                                                                         \
            (ARR) = nv_;                                                              \
            (CAP) = nc_;                                                              \
        }                                                                             \
        (ARR)[(N)++] = (ITEM);                                                        \
    } while (0)

static token *cur(parser *p) { return &p->t[p->i]; }
static token *peek(parser *p, int k) {
    int j = p->i + k;
    return &p->t[j < p->n ? j : p->n - 1];
}
static token *advance(parser *p) {
    token *t = &p->t[p->i];
    if (t->kind != TOK_EOF) p->i++;
    return t;
}
static int is_op(const token *t, const char *s) {
    return t->kind == TOK_OP && !strcmp(t->text, s);
}
static int is_kw(const token *t, const char *s) {
    return t->kind == TOK_KEYWORD && !strcmp(t->text, s);
}

static const char *describe(const token *t) {
    switch (t->kind) {
    case TOK_NEWLINE: return "end of line";
    case TOK_EOF: return "end of input";
    case TOK_INDENT: return "an indent";
    case TOK_DEDENT: return "a dedent";
    default: return NULL;
    }
}

/* "unexpected X" with X quoted when it is real text. */
static void *unexpected(parser *p, const token *t, const char *what) {
    const char *d = describe(t);
    if (d) return perr(p, t, "%s, got %s", what, d);
    return perr(p, t, "%s, got '%s'", what, t->text);
}

static int expect_op(parser *p, const char *op) {
    if (is_op(cur(p), op)) {
        advance(p);
        return 1;
    }
    char what[32];
    snprintf(what, sizeof what, "expected '%s'", op);
    unexpected(p, cur(p), what);
    return 0;
}

static expr *new_expr(parser *p, expr_kind k, const token *t) {
    expr *e = arena_alloc(p->a, sizeof *e);
    if (!e) return nomem(p);
    e->kind = k;
    e->line = t->line;
    e->col = t->col;
    return e;
}

static stmt *new_stmt(parser *p, stmt_kind k, const token *t) {
    stmt *s = arena_alloc(p->a, sizeof *s);
    if (!s) return nomem(p);
    s->kind = k;
    s->line = t->line;
    s->col = t->col;
    return s;
}

static int enter(parser *p) {
    if (++p->depth > MAX_DEPTH) {
        perr(p, cur(p), "expression is too deeply nested");
        return 0;
    }
    return 1;
}

/* Can this token begin an expression?  Used after a trailing comma. */
static int starts_expr(const token *t) {
    switch (t->kind) {
    case TOK_NAME: case TOK_INT: case TOK_FLOAT: case TOK_STRING: return 1;
    case TOK_KEYWORD:
        return is_kw(t, "True") || is_kw(t, "False") || is_kw(t, "None") ||
               is_kw(t, "not") || is_kw(t, "lambda") || is_kw(t, "await") ||
               is_kw(t, "yield");
    case TOK_OP:
        return is_op(t, "(") || is_op(t, "[") || is_op(t, "{") || is_op(t, "-") ||
               is_op(t, "+") || is_op(t, "~") || is_op(t, "*");
    default: return 0;
    }
}

/* ---- expressions ------------------------------------------------------ */

static expr *p_test(parser *p);
static expr *p_factor(parser *p);

static expr *p_paren(parser *p) {
    token *open = advance(p);
    if (is_op(cur(p), ")")) return perr(p, open, "empty tuples are not supported in kernels");
    expr *first = p_test(p);
    if (!first) return NULL;
    if (is_kw(cur(p), "for"))
        return perr(p, cur(p), "generator expressions are not supported in kernels");
    if (!is_op(cur(p), ",")) return expect_op(p, ")") ? first : NULL;
    expr *tup = new_expr(p, EX_TUPLE, open);
    if (!tup) return NULL;
    int cap = 0;
    PUSH(p, tup->items, tup->nitems, cap, first, NULL);
    while (is_op(cur(p), ",")) {
        advance(p);
        if (is_op(cur(p), ")")) break;
        expr *e = p_test(p);
        if (!e) return NULL;
        PUSH(p, tup->items, tup->nitems, cap, e, NULL);
    }
    return expect_op(p, ")") ? tup : NULL;
}

/* ---- string literals and f-strings ------------------------------------ */

/* Adjacent literals are one ('a' f'{x}' 'b'): its parts so far. */
typedef struct str_parts {
    expr **items;        /* texts (EX_STR) and values, in order */
    int n, cap;
    char *text;          /* the text after the last value */
    size_t len, cap_text;
    const token *at;     /* where the literal starts */
} str_parts;

static int parts_text(parser *p, str_parts *sp, const char *s, size_t n) {
    if (sp->len + n + 1 > sp->cap_text) {
        size_t cap = sp->cap_text ? sp->cap_text : 32;
        while (cap < sp->len + n + 1) cap *= 2;
        char *t = arena_grow(p->a, sp->text, sp->len, cap, 1);
        if (!t) return nomem(p), -1;
        sp->text = t;
        sp->cap_text = cap;
    }
    memcpy(sp->text + sp->len, s, n);
    sp->len += n;
    sp->text[sp->len] = 0;
    return 0;
}

/* The pending text as an EX_STR node (an empty string when there is none). */
static expr *parts_take_text(parser *p, str_parts *sp) {
    expr *e = new_expr(p, EX_STR, sp->at);
    if (!e) return NULL;
    e->str = sp->text ? sp->text : "";
    e->len = sp->len;
    sp->text = NULL;
    sp->len = sp->cap_text = 0;
    return e;
}

static int parts_value(parser *p, str_parts *sp, expr *v) {
    if (sp->len) {
        expr *t = parts_take_text(p, sp);
        if (!t) return -1;
        PUSH(p, sp->items, sp->n, sp->cap, t, -1);
    }
    PUSH(p, sp->items, sp->n, sp->cap, v, -1);
    return 0;
}

/* Byte offset of token t in the source text. */
static size_t source_offset(const parser *p, const token *t) {
    const char *s = p->src.text;
    size_t off = 0;
    for (int line = 1; line < t->line && s[off]; off++)
        if (s[off] == '\n') line++;
    return off + (size_t)(t->col - 1);
}

/* The expression of an f-string's {...}, source bytes (open, close): it is
 * lexed and parsed from a copy of the source with everything else blanked
 * and the braces made parentheses, so its tokens keep their lines and
 * columns for messages. */
static expr *fstring_expr(parser *p, const token *at, size_t open, size_t close) {
    const char *text = p->src.text;
    size_t n = strlen(text);
    char *blank = arena_alloc(p->a, n + 1);
    if (!blank) return nomem(p);
    for (size_t i = 0; i < n; i++)
        blank[i] = (i > open && i < close) || text[i] == '\n' || text[i] == '\r' ? text[i] : ' ';
    blank[open] = '(';
    blank[close] = ')';
    blank[n] = 0;
    parser q = *p;
    q.src.text = blank;
    tack_error lex_err;
    if (lex_source(&q.src, q.a, &q.t, &q.n, &lex_err)) {
        if (lex_err.status == TACK_ERR_NOMEM) return nomem(p);
        return perr(p, at, "invalid expression in an f-string's {...}");
    }
    q.src.text = text; /* messages show the line as written */
    q.i = 0;
    if (cur(&q)->kind == TOK_INDENT) advance(&q);
    expr *e = p_test(&q);
    if (!e) return NULL;
    if (cur(&q)->kind != TOK_NEWLINE && cur(&q)->kind != TOK_EOF)
        return unexpected(&q, cur(&q), "expected the end of the f-string's {expression}");
    return e;
}

static int is_blank(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

/* The decoded text of a literal piece of an f-string. */
static int fstring_literal(parser *p, const token *t, str_parts *sp, const char *s, size_t n,
                           int raw) {
    char *o = arena_alloc(p->a, n + 1);
    if (!o) return nomem(p), -1;
    char bad = 0;
    long len = lex_unescape(s, n, raw, o, &bad);
    if (len < 0) return lex_escape_error(&p->src, t, bad, p->err), -1;
    return parts_text(p, sp, o, (size_t)len);
}

/* The parts of f-string token t: {{ and }} are braces; {expr} a value, and
 * {expr=} the expression's text and its value, as Python's. */
static int fstring_parts(parser *p, const token *t, const lex_string_form *form, str_parts *sp) {
    const char *b = t->text + form->body;
    size_t body = form->len, base = source_offset(p, t) + form->body, seg = 0;
    for (size_t i = 0; i <= body;) {
        if (i < body && b[i] != '{' && b[i] != '}') {
            i++;
            continue;
        }
        if (fstring_literal(p, t, sp, b + seg, i - seg, form->raw)) return -1;
        if (i == body) break;
        char c = b[i];
        if (i + 1 < body && b[i + 1] == c) { /* {{ or }} */
            if (parts_text(p, sp, &c, 1)) return -1;
            seg = i += 2;
            continue;
        }
        if (c == '}') return perr(p, t, "single '}' is not allowed in an f-string"), -1;
        size_t j = i + 1;
        int depth = 0;
        char quote = 0;
        for (; j < body; j++) {
            char d = b[j];
            if (quote) {
                if (d == quote) quote = 0;
            } else if (d == '\'' || d == '"') {
                quote = d;
            } else if (d == '(' || d == '[' || d == '{') {
                depth++;
            } else if (depth && (d == ')' || d == ']' || d == '}')) {
                depth--;
            } else if (!depth && (d == '}' || d == ':' || (d == '!' && b[j + 1] != '='))) {
                break;
            }
        }
        if (j >= body) return perr(p, t, "f-string: expecting '}'"), -1;
        if (b[j] != '}')
            return perr(p, t, "f-string format specifications and conversions ('%c...') are "
                        "not supported in kernels: print the value itself", b[j]), -1;
        size_t end = j, k = j;
        while (k > i + 1 && is_blank(b[k - 1])) k--;
        if (k > i + 1 && b[k - 1] == '=' && !(k > i + 2 && strchr("=!<>", b[k - 2]))) {
            if (parts_text(p, sp, b + i + 1, j - i - 1)) return -1; /* "x = " */
            end = k - 1;
        }
        size_t first = i + 1;
        while (first < end && is_blank(b[first])) first++;
        if (first == end) return perr(p, t, "f-string: empty expression not allowed"), -1;
        expr *v = fstring_expr(p, t, base + i, base + end);
        if (!v || parts_value(p, sp, v)) return -1;
        seg = i = j + 1;
    }
    return 0;
}

/* One or more adjacent string literals: EX_STR, or EX_FSTRING when one of
 * them is an f-string with values. */
static expr *p_strings(parser *p) {
    str_parts sp = {.at = cur(p)};
    for (; cur(p)->kind == TOK_STRING; advance(p)) {
        token *t = cur(p);
        lex_string_form form;
        lex_string_shape(t->text, &form);
        if (form.bytes) return perr(p, t, "bytes literals are not supported in kernels");
        if (form.f) {
            if (fstring_parts(p, t, &form, &sp)) return NULL;
            continue;
        }
        char *v;
        size_t n;
        if (lex_string_value(&p->src, t, p->a, &v, &n, p->err)) return NULL;
        if (parts_text(p, &sp, v, n)) return NULL;
    }
    if (!sp.n) return parts_take_text(p, &sp);
    if (sp.len) {
        expr *t = parts_take_text(p, &sp);
        if (!t) return NULL;
        PUSH(p, sp.items, sp.n, sp.cap, t, NULL);
    }
    expr *e = new_expr(p, EX_FSTRING, sp.at);
    if (!e) return NULL;
    e->items = sp.items;
    e->nitems = sp.n;
    return e;
}

/* [a, b, c]: a list literal, which kernels keep as a local array, as they
 * keep a tuple held in a name (lower/local_lists.c). */
static expr *p_list(parser *p) {
    token *open = advance(p);
    expr *e = new_expr(p, EX_TUPLE, open);
    if (!e) return NULL;
    e->is_list = 1;
    int cap = 0;
    if (is_op(cur(p), "]")) return perr(p, open, "an empty list has no length a kernel can know; "
                                        "write [0.0] * n or np.zeros(n)");
    while (!is_op(cur(p), "]")) {
        expr *item = p_test(p);
        if (!item) return NULL;
        if (is_kw(cur(p), "for"))
            return perr(p, cur(p), "list comprehensions are not supported in kernels");
        PUSH(p, e->items, e->nitems, cap, item, NULL);
        if (!is_op(cur(p), ",")) break;
        advance(p);
    }
    return expect_op(p, "]") ? e : NULL;
}

static expr *p_atom(parser *p) {
    token *t = cur(p);
    expr *e;
    switch (t->kind) {
    case TOK_NAME:
        if (is_op(peek(p, 1), ":="))
            return perr(p, peek(p, 1), "assignment expressions (:=) are not supported in kernels");
        if (!(e = new_expr(p, EX_NAME, t))) return NULL;
        e->name = t->text;
        advance(p);
        return e;
    case TOK_INT:
        if (!(e = new_expr(p, EX_INT, t))) return NULL;
        e->ival = t->ival;
        e->ival_overflow = t->ival_overflow;
        advance(p);
        return e;
    case TOK_FLOAT:
        if (!(e = new_expr(p, EX_FLOAT, t))) return NULL;
        e->fval = t->fval;
        e->imag = t->imag;
        advance(p);
        return e;
    case TOK_STRING:
        return p_strings(p);
    case TOK_KEYWORD:
        if (is_kw(t, "True") || is_kw(t, "False")) {
            if (!(e = new_expr(p, EX_BOOL, t))) return NULL;
            e->bval = is_kw(t, "True");
            advance(p);
            return e;
        }
        if (is_kw(t, "None")) {
            /* x[None]: a Taichi 0-D field's only element */
            int index = p->i > 0 && p->t[p->i - 1].kind == TOK_OP && !strcmp(p->t[p->i - 1].text, "[");
            return perr(p, t, index ? "x[None] (Taichi's 0-D field) is not supported in kernels: "
                                      "pass a 1-element array and use x[0]"
                                    : "None is not supported in kernels");
        }
        if (is_kw(t, "lambda")) return perr(p, t, "lambda expressions are not supported in kernels");
        if (is_kw(t, "yield")) return perr(p, t, "'yield' is not supported in kernels");
        if (is_kw(t, "await")) return perr(p, t, "'await' is not supported in kernels");
        return unexpected(p, t, "expected an expression");
    case TOK_OP:
        if (is_op(t, "(")) return p_paren(p);
        if (is_op(t, "[")) return p_list(p);
        if (is_op(t, "{"))
            return perr(p, t, "dict and set literals are not supported in kernels");
        if (is_op(t, "*") || is_op(t, "**"))
            return perr(p, t, "starred expressions are not supported in kernels");
        return unexpected(p, t, "expected an expression");
    default:
        return unexpected(p, t, "expected an expression");
    }
}

static expr *p_call(parser *p, expr *callee) {
    token *open = advance(p);
    expr *e = new_expr(p, EX_CALL, open);
    if (!e) return NULL;
    e->line = callee->line;
    e->col = callee->col;
    e->a = callee;
    int cap = 0, kcap = 0, kvcap = 0;
    while (!is_op(cur(p), ")")) {
        token *t = cur(p);
        if (is_op(t, "*") || is_op(t, "**"))
            return perr(p, t, "starred arguments are not supported in kernels");
        if (t->kind == TOK_NAME && is_op(peek(p, 1), "=")) {
            /* print's (lower/print.c) and the built-ins' (lower/calls.c) */
            advance(p);
            advance(p);
            expr *v = p_test(p);
            if (!v) return NULL;
            int nk = e->nkw;
            PUSH(p, e->kw_names, nk, kcap, t->text, NULL);
            PUSH(p, e->kw_values, e->nkw, kvcap, v, NULL);
            if (!is_op(cur(p), ",")) break;
            advance(p);
            continue;
        }
        if (e->nkw)
            return perr(p, t, "positional argument follows keyword argument");
        expr *arg = p_test(p);
        if (!arg) return NULL;
        if (is_kw(cur(p), "for"))
            return perr(p, cur(p), "generator expressions are not supported in kernels");
        PUSH(p, e->items, e->nitems, cap, arg, NULL);
        if (!is_op(cur(p), ",")) break;
        advance(p);
    }
    return expect_op(p, ")") ? e : NULL;
}

static expr *p_subscript(parser *p, expr *value) {
    token *open = advance(p);
    expr *e = new_expr(p, EX_SUBSCRIPT, open);
    if (!e) return NULL;
    e->line = value->line;
    e->col = value->col;
    e->a = value;
    int cap = 0;
    if (is_op(cur(p), "]")) return perr(p, cur(p), "empty subscript");
    while (!is_op(cur(p), "]")) {
        if (is_op(cur(p), ":")) return perr(p, cur(p), "slices are not supported");
        expr *ix = p_test(p);
        if (!ix) return NULL;
        if (is_op(cur(p), ":")) return perr(p, cur(p), "slices are not supported");
        PUSH(p, e->items, e->nitems, cap, ix, NULL);
        if (!is_op(cur(p), ",")) break;
        advance(p);
    }
    return expect_op(p, "]") ? e : NULL;
}

static expr *p_primary(parser *p) {
    expr *e = p_atom(p);
    while (e) {
        token *t = cur(p);
        if (is_op(t, ".")) {
            advance(p);
            token *nt = cur(p);
            if (nt->kind != TOK_NAME) return unexpected(p, nt, "expected an attribute name");
            advance(p);
            expr *at = new_expr(p, EX_ATTR, t);
            if (!at) return NULL;
            at->line = e->line;
            at->col = e->col;
            at->a = e;
            at->name = nt->text;
            e = at;
        } else if (is_op(t, "(")) {
            e = p_call(p, e);
        } else if (is_op(t, "[")) {
            e = p_subscript(p, e);
        } else {
            break;
        }
    }
    return e;
}

/* power: primary ['**' factor]; the right side may be unary (2**-1) and
 * '**' binds tighter than a unary minus on its left (-2**2 == -(2**2)). */
static expr *p_power(parser *p) {
    if (is_kw(cur(p), "await")) return perr(p, cur(p), "'await' is not supported in kernels");
    expr *base = p_primary(p);
    if (!base || !is_op(cur(p), "**")) return base;
    token *op = advance(p);
    expr *ex = p_factor(p);
    if (!ex) return NULL;
    expr *e = new_expr(p, EX_BINOP, op);
    if (!e) return NULL;
    e->op = op->text;
    e->a = base;
    e->b = ex;
    return e;
}

static expr *p_factor(parser *p) {
    token *t = cur(p);
    if (is_op(t, "-") || is_op(t, "+") || is_op(t, "~")) {
        if (!enter(p)) return NULL;
        advance(p);
        expr *x = p_factor(p);
        p->depth--;
        if (!x) return NULL;
        expr *e = new_expr(p, EX_UNARY, t);
        if (!e) return NULL;
        e->op = t->text;
        e->a = x;
        return e;
    }
    return p_power(p);
}

/* Binary levels from loosest to tightest; level 6 is factor. */
static const char *const bin_ops[6][5] = {
    {"|"}, {"^"}, {"&"}, {"<<", ">>"}, {"+", "-"}, {"*", "/", "//", "%", "@"}};

static expr *p_binary(parser *p, int level) {
    if (level == 6) return p_factor(p);
    expr *left = p_binary(p, level + 1);
    while (left) {
        token *t = cur(p);
        const char *op = NULL;
        for (int k = 0; k < 5 && bin_ops[level][k]; k++)
            if (is_op(t, bin_ops[level][k])) op = bin_ops[level][k];
        if (!op) break;
        advance(p);
        expr *right = p_binary(p, level + 1);
        if (!right) return NULL;
        expr *e = new_expr(p, EX_BINOP, t);
        if (!e) return NULL;
        e->op = t->text;
        e->a = left;
        e->b = right;
        left = e;
    }
    return left;
}

/* The comparison operator at the cursor (consumed), or NULL. */
static const char *compare_op(parser *p) {
    static const char *const ops[] = {"<", ">", "==", ">=", "<=", "!="};
    token *t = cur(p);
    for (size_t k = 0; k < sizeof ops / sizeof *ops; k++)
        if (is_op(t, ops[k])) {
            advance(p);
            return ops[k];
        }
    if (is_kw(t, "in")) {
        advance(p);
        return "in";
    }
    if (is_kw(t, "not") && is_kw(peek(p, 1), "in")) {
        p->i += 2;
        return "not in";
    }
    if (is_kw(t, "is")) {
        advance(p);
        if (is_kw(cur(p), "not")) {
            advance(p);
            return "is not";
        }
        return "is";
    }
    return NULL;
}

static expr *p_compare(parser *p) {
    expr *first = p_binary(p, 0);
    if (!first) return NULL;
    token *t = cur(p);
    const char *op = compare_op(p);
    if (!op) return first;
    expr *e = new_expr(p, EX_COMPARE, t);
    if (!e) return NULL;
    int icap = 0, ocap = 0, nops = 0;
    PUSH(p, e->items, e->nitems, icap, first, NULL);
    while (op) {
        PUSH(p, e->ops, nops, ocap, op, NULL);
        expr *x = p_binary(p, 0);
        if (!x) return NULL;
        PUSH(p, e->items, e->nitems, icap, x, NULL);
        op = compare_op(p);
    }
    return e;
}

static expr *p_not(parser *p) {
    token *t = cur(p);
    if (!is_kw(t, "not")) return p_compare(p);
    if (!enter(p)) return NULL;
    advance(p);
    expr *x = p_not(p);
    p->depth--;
    if (!x) return NULL;
    expr *e = new_expr(p, EX_UNARY, t);
    if (!e) return NULL;
    e->op = t->text;
    e->a = x;
    return e;
}

/* and / or: one BOOLOP over all operands of a run of the same operator. */
static expr *p_boolop(parser *p, int is_or) {
    const char *kw = is_or ? "or" : "and";
    expr *first = is_or ? p_boolop(p, 0) : p_not(p);
    if (!first || !is_kw(cur(p), kw)) return first;
    expr *e = new_expr(p, EX_BOOLOP, cur(p));
    if (!e) return NULL;
    e->op = cur(p)->text;
    int cap = 0;
    PUSH(p, e->items, e->nitems, cap, first, NULL);
    while (is_kw(cur(p), kw)) {
        advance(p);
        expr *x = is_or ? p_boolop(p, 0) : p_not(p);
        if (!x) return NULL;
        PUSH(p, e->items, e->nitems, cap, x, NULL);
    }
    return e;
}

/* test: or_test ['if' or_test 'else' test] */
static expr *p_test(parser *p) {
    token *t = cur(p);
    if (is_kw(t, "lambda")) return perr(p, t, "lambda expressions are not supported in kernels");
    if (!enter(p)) return NULL;
    expr *body = p_boolop(p, 1), *res = body;
    if (body && is_kw(cur(p), "if")) {
        token *ift = advance(p);
        expr *cond = p_boolop(p, 1), *orelse = NULL;
        if (cond && !is_kw(cur(p), "else"))
            unexpected(p, cur(p), "expected 'else' in conditional expression");
        else if (cond) {
            advance(p);
            orelse = p_test(p);
        }
        res = NULL;
        if (orelse && (res = new_expr(p, EX_IFEXP, ift))) {
            res->a = cond;
            res->b = body;
            res->c = orelse;
        }
    }
    p->depth--;
    return res;
}

/* test (',' test)* [','] - a bare tuple when there is a comma. */
static expr *p_testlist(parser *p) {
    token *start = cur(p);
    expr *first = p_test(p);
    if (!first || !is_op(cur(p), ",")) return first;
    expr *tup = new_expr(p, EX_TUPLE, start);
    if (!tup) return NULL;
    int cap = 0;
    PUSH(p, tup->items, tup->nitems, cap, first, NULL);
    while (is_op(cur(p), ",")) {
        advance(p);
        if (!starts_expr(cur(p))) break;
        expr *e = p_test(p);
        if (!e) return NULL;
        PUSH(p, tup->items, tup->nitems, cap, e, NULL);
    }
    return tup;
}

/* ---- statements ------------------------------------------------------- */

typedef struct stmt_list {
    stmt **v;
    int n, cap;
} stmt_list;

static int p_stmt(parser *p, stmt_list *out);

static int check_target(parser *p, expr *e, int allow_tuple) {
    const token pos = {.line = e->line, .col = e->col};
    switch (e->kind) {
    case EX_NAME: case EX_SUBSCRIPT: return 1;
    case EX_TUPLE:
        if (!allow_tuple) {
            perr(p, &pos, "nested tuple targets are not supported");
            return 0;
        }
        for (int k = 0; k < e->nitems; k++)
            if (!check_target(p, e->items[k], 0)) return 0;
        return 1;
    case EX_ATTR:
        /* A vector's component (v.x = s); lowering checks the value. */
        if (e->name[0] && strchr("xyzw", e->name[0]) && !e->name[1]) return 1;
        /* A field of a record (x[i].vel, x[i].inner.a): lowering checks it. */
        for (const expr *b = e->a; b; b = b->kind == EX_ATTR ? b->a : NULL)
            if (b->kind == EX_SUBSCRIPT) return 1;
        /* A field of a record held in a local (p.vel, p.inner.a), unless the
         * attribute is one arrays and matrices read only. */
        static const char *const read_only[] = {"T", "shape", "ndim", "size", "dtype", "real", "imag"};
        int named = 1;
        for (size_t k = 0; k < sizeof read_only / sizeof *read_only; k++)
            named &= strcmp(e->name, read_only[k]) != 0;
        for (const expr *b = e->a; named && b; b = b->kind == EX_ATTR ? b->a : NULL)
            if (b->kind == EX_NAME) return 1;
        perr(p, &pos, "cannot assign to attribute '%s'", e->name);
        return 0;
    case EX_CALL: perr(p, &pos, "cannot assign to a function call"); return 0;
    case EX_INT: case EX_FLOAT: case EX_BOOL: perr(p, &pos, "cannot assign to a literal"); return 0;
    default: perr(p, &pos, "cannot assign to an expression"); return 0;
    }
}

static const char *const aug_ops[] = {"+=", "-=", "*=", "/=", "//=", "%=", "**=",
                                      "&=", "|=", "^=", "<<=", ">>=", "@="};

static stmt *p_expr_stmt(parser *p) {
    token *start = cur(p);
    expr *e = p_testlist(p);
    if (!e) return NULL;
    token *t = cur(p);
    if (is_op(t, ":")) return perr(p, t, "annotated assignments are not supported in kernels");
    for (size_t k = 0; k < sizeof aug_ops / sizeof *aug_ops; k++) {
        if (!is_op(t, aug_ops[k])) continue;
        if (e->kind == EX_TUPLE) {
            const token pos = {.line = e->line, .col = e->col};
            return perr(p, &pos, "augmented assignment to a tuple is not supported");
        }
        if (!check_target(p, e, 0)) return NULL;
        advance(p);
        stmt *s = new_stmt(p, ST_AUGASSIGN, start);
        if (!s) return NULL;
        /* The operator without its '=' ("+=" -> "+"). */
        s->op = arena_strndup(p->a, t->text, strlen(t->text) - 1);
        if (!s->op) return nomem(p);
        int cap = 0;
        PUSH(p, s->targets, s->ntargets, cap, e, NULL);
        if (!(s->value = p_testlist(p))) return NULL;
        return s;
    }
    if (!is_op(t, "=")) {
        stmt *s = new_stmt(p, ST_EXPR, start);
        if (s) s->value = e;
        return s;
    }
    stmt *s = new_stmt(p, ST_ASSIGN, start);
    if (!s) return NULL;
    int cap = 0;
    while (is_op(cur(p), "=")) {
        if (!check_target(p, e, 1)) return NULL;
        PUSH(p, s->targets, s->ntargets, cap, e, NULL);
        advance(p);
        if (!(e = p_testlist(p))) return NULL;
    }
    s->value = e;
    return s;
}

static stmt *p_small_stmt(parser *p) {
    token *t = cur(p);
    if (t->kind == TOK_KEYWORD) {
        static const char *const unsupported[] = {"import", "from", "global", "nonlocal",
                                                  "del", "assert", "raise"};
        for (size_t k = 0; k < sizeof unsupported / sizeof *unsupported; k++)
            if (is_kw(t, unsupported[k]))
                return perr(p, t, "'%s' statements are not supported in kernels",
                            k == 1 ? "import" : unsupported[k]);
        if (is_kw(t, "pass") || is_kw(t, "break") || is_kw(t, "continue")) {
            advance(p);
            return new_stmt(p, is_kw(t, "pass") ? ST_PASS : is_kw(t, "break") ? ST_BREAK
                                                                               : ST_CONTINUE,
                            t);
        }
        if (is_kw(t, "return")) {
            advance(p);
            stmt *s = new_stmt(p, ST_RETURN, t);
            if (!s) return NULL;
            if (!starts_expr(cur(p))) return s;
            /* `return None` is a bare return (device functions without a value). */
            const token *nx = &p->t[p->i + 1];
            if (is_kw(cur(p), "None") && (nx->kind == TOK_NEWLINE || nx->kind == TOK_EOF ||
                                          is_op(nx, ";"))) {
                advance(p);
                return s;
            }
            if (!(s->value = p_testlist(p))) return NULL;
            return s;
        }
    }
    return p_expr_stmt(p);
}

/* simple_stmt (';' simple_stmt)* [';'] NEWLINE */
static int p_simple_line(parser *p, stmt_list *out) {
    for (;;) {
        stmt *s = p_small_stmt(p);
        if (!s) return 0;
        PUSH(p, out->v, out->n, out->cap, s, 0);
        if (!is_op(cur(p), ";")) break;
        advance(p);
        if (cur(p)->kind == TOK_NEWLINE) break;
    }
    if (cur(p)->kind != TOK_NEWLINE) {
        unexpected(p, cur(p), "expected end of line");
        return 0;
    }
    advance(p);
    return 1;
}

/* A string-only statement first in a function body is its docstring. */
static void skip_docstring(parser *p) {
    int j = p->i;
    while (p->t[j].kind == TOK_STRING) j++;
    if (j == p->i) return;
    if (p->t[j].kind == TOK_NEWLINE)
        p->i = j + 1;
    else if (p->t[j].kind == TOK_OP && !strcmp(p->t[j].text, ";")) {
        p->i = j + 1;
        if (cur(p)->kind == TOK_NEWLINE) advance(p);
    }
}

/* ':' already consumed.  Either NEWLINE INDENT stmts DEDENT, or simple
 * statements on the same line. */
static int p_block(parser *p, stmt ***body, int *nbody, int docstring) {
    stmt_list l = {0};
    if (cur(p)->kind == TOK_NEWLINE) {
        advance(p);
        if (cur(p)->kind != TOK_INDENT) {
            unexpected(p, cur(p), "expected an indented block");
            return 0;
        }
        advance(p);
        if (docstring) skip_docstring(p);
        while (cur(p)->kind != TOK_DEDENT && cur(p)->kind != TOK_EOF)
            if (!p_stmt(p, &l)) return 0;
        if (cur(p)->kind != TOK_DEDENT) {
            unexpected(p, cur(p), "expected a dedent");
            return 0;
        }
        advance(p);
    } else {
        int before = p->i;
        if (docstring) skip_docstring(p);
        /* A docstring alone on the def line has ended the line already. */
        if (!(docstring && p->i > before && p->t[p->i - 1].kind == TOK_NEWLINE)) {
            token *t = cur(p);
            if (is_kw(t, "if") || is_kw(t, "while") || is_kw(t, "for") || is_kw(t, "def") ||
                is_kw(t, "class") || is_kw(t, "with") || is_kw(t, "try")) {
                perr(p, t, "a compound statement must start on its own line");
                return 0;
            }
            if (!p_simple_line(p, &l)) return 0;
        }
    }
    *body = l.v;
    *nbody = l.n;
    return 1;
}

static int expect_colon(parser *p) { return expect_op(p, ":"); }

static stmt *p_if(parser *p) {
    stmt *top = NULL, *last = NULL;
    do {
        token *t = advance(p); /* 'if' or 'elif' */
        stmt *s = new_stmt(p, ST_IF, t);
        if (!s) return NULL;
        if (!(s->value = p_test(p)) || !expect_colon(p) || !p_block(p, &s->body, &s->nbody, 0))
            return NULL;
        if (!top) {
            top = s;
        } else {
            /* elif becomes an ST_IF alone in the previous orelse. */
            stmt **one = arena_alloc(p->a, sizeof *one);
            if (!one) return nomem(p);
            one[0] = s;
            last->orelse = one;
            last->norelse = 1;
        }
        last = s;
    } while (is_kw(cur(p), "elif"));
    if (is_kw(cur(p), "else")) {
        advance(p);
        if (!expect_colon(p) || !p_block(p, &last->orelse, &last->norelse, 0)) return NULL;
    }
    return top;
}

static stmt *p_while(parser *p) {
    stmt *s = new_stmt(p, ST_WHILE, advance(p));
    if (!s) return NULL;
    if (!(s->value = p_test(p)) || !expect_colon(p) || !p_block(p, &s->body, &s->nbody, 0))
        return NULL;
    if (is_kw(cur(p), "else"))
        return perr(p, cur(p), "'while ... else' is not supported in kernels");
    return s;
}

static stmt *p_for(parser *p) {
    stmt *s = new_stmt(p, ST_FOR, advance(p));
    if (!s) return NULL;
    /* Targets stop below comparisons so that 'in' is not read as an operator. */
    token *start = cur(p);
    expr *target = p_binary(p, 0);
    if (!target) return NULL;
    if (is_op(cur(p), ",")) {
        expr *tup = new_expr(p, EX_TUPLE, start);
        if (!tup) return NULL;
        int cap = 0;
        PUSH(p, tup->items, tup->nitems, cap, target, NULL);
        while (is_op(cur(p), ",")) {
            advance(p);
            if (is_kw(cur(p), "in")) break;
            expr *e = p_binary(p, 0);
            if (!e) return NULL;
            PUSH(p, tup->items, tup->nitems, cap, e, NULL);
        }
        target = tup;
    }
    int ok = target->kind == EX_NAME;
    if (target->kind == EX_TUPLE) {
        ok = 1;
        for (int k = 0; k < target->nitems; k++)
            if (target->items[k]->kind != EX_NAME) ok = 0;
    }
    if (!ok) {
        const token pos = {.line = target->line, .col = target->col};
        return perr(p, &pos, "a for-loop target must be a name or a tuple of names");
    }
    int cap = 0;
    PUSH(p, s->targets, s->ntargets, cap, target, NULL);
    if (!is_kw(cur(p), "in")) return unexpected(p, cur(p), "expected 'in'");
    advance(p);
    if (!(s->value = p_testlist(p)) || !expect_colon(p) || !p_block(p, &s->body, &s->nbody, 0))
        return NULL;
    if (is_kw(cur(p), "else"))
        return perr(p, cur(p), "'for ... else' is not supported in kernels");
    return s;
}

static int p_stmt(parser *p, stmt_list *out) {
    token *t = cur(p);
    stmt *s = NULL;
    if (t->kind == TOK_INDENT) {
        perr(p, t, "unexpected indent");
        return 0;
    }
    if (t->kind == TOK_KEYWORD) {
        if (is_kw(t, "if"))
            s = p_if(p);
        else if (is_kw(t, "while"))
            s = p_while(p);
        else if (is_kw(t, "for"))
            s = p_for(p);
        else if (is_kw(t, "def"))
            return perr(p, t, "nested function definitions are not supported in kernels"), 0;
        else if (is_kw(t, "class"))
            return perr(p, t, "class definitions are not supported in kernels"), 0;
        else if (is_kw(t, "with") || is_kw(t, "try") || is_kw(t, "async"))
            return perr(p, t, "'%s' statements are not supported in kernels", t->text), 0;
        else if (is_kw(t, "elif") || is_kw(t, "else") || is_kw(t, "except") ||
                 is_kw(t, "finally"))
            return perr(p, t, "'%s' without a matching statement", t->text), 0;
        else
            return p_simple_line(p, out);
        if (!s) return 0;
        PUSH(p, out->v, out->n, out->cap, s, 0);
        return 1;
    }
    return p_simple_line(p, out);
}

/* ---- the function ----------------------------------------------------- */

/* Skips an annotation (it is discarded, so anything balanced goes, strings
 * included) up to a stop token at bracket depth 0.  Returns 0 when empty. */
static int skip_annotation(parser *p, const char *const *stops, int nstops) {
    int depth = 0, start = p->i;
    for (;;) {
        token *t = cur(p);
        if (t->kind == TOK_EOF || t->kind == TOK_NEWLINE) break;
        if (!depth) {
            int stop = 0;
            for (int k = 0; k < nstops; k++) stop |= is_op(t, stops[k]);
            if (stop) break;
        }
        if (is_op(t, "(") || is_op(t, "[") || is_op(t, "{")) depth++;
        if (is_op(t, ")") || is_op(t, "]") || is_op(t, "}")) {
            if (!depth) break;
            depth--;
        }
        advance(p);
    }
    if (p->i == start) {
        unexpected(p, cur(p), "expected an annotation");
        return 0;
    }
    return 1;
}

static int p_params(parser *p, func_def *f) {
    static const char *const stops[] = {",", ")", "="};
    int cap = 0, lcap = 0, ccap = 0, nl = 0, nc = 0, star = -1;
    if (!expect_op(p, "(")) return 0;
    while (!is_op(cur(p), ")")) {
        token *t = cur(p);
        if (is_op(t, "*")) {
            token *nx = peek(p, 1);
            if (!is_op(nx, ",") && !is_op(nx, ")"))
                return perr(p, t, "*args parameters are not supported in %s",
                            p->src.is_function ? "device functions" : "kernels"), 0;
            /* A device function's keyword-only parameters are bound by name
             * where it is inlined; a kernel's arguments come positionally. */
            if (!p->src.is_function)
                return perr(p, t, "keyword-only parameters ('*') are not supported in kernels"), 0;
            if (star >= 0) return perr(p, t, "'*' may appear only once"), 0;
            star = f->nparams;
            advance(p);
            if (is_op(cur(p), ")"))
                return perr(p, t, "named arguments must follow bare '*'"), 0;
            advance(p);
            continue;
        }
        if (is_op(t, "**")) return perr(p, t, "**kwargs parameters are not supported in kernels"), 0;
        if (is_op(t, "/"))
            return perr(p, t, "positional-only parameters ('/') are not supported in kernels"), 0;
        if (t->kind != TOK_NAME) return unexpected(p, t, "expected a parameter name"), 0;
        for (int k = 0; k < f->nparams; k++)
            if (!strcmp(f->params[k], t->text))
                return perr(p, t, "duplicate parameter '%s'", t->text), 0;
        advance(p);
        if (is_op(cur(p), ":")) {
            advance(p);
            if (!skip_annotation(p, stops, 3)) return 0;
        }
        expr *dflt = NULL;
        if (is_op(cur(p), "=")) {
            /* A device function's defaults are bound where it is inlined;
             * a kernel's arguments all come from its call. */
            if (!p->src.is_function)
                return perr(p, cur(p), "default parameter values are not supported in kernels"), 0;
            advance(p);
            if (!(dflt = p_test(p))) return 0;
        } else if (f->defaults && star < 0) {
            for (int k = 0; k < f->nparams; k++)
                if (f->defaults[k])
                    return perr(p, t, "parameter '%s' without a default follows one with a default",
                                t->text), 0;
        }
        if (dflt && !f->defaults) {
            f->defaults = arena_alloc(p->a, 64 * sizeof *f->defaults); /* zeroed */
            if (!f->defaults) return nomem(p), 0;
        }
        if (f->defaults) {
            if (f->nparams >= 64) return perr(p, t, "a device function with defaults takes at most 64 parameters"), 0;
            f->defaults[f->nparams] = dflt;
        }
        PUSH(p, f->params, f->nparams, cap, t->text, 0);
        PUSH(p, f->param_lines, nl, lcap, t->line, 0);
        PUSH(p, f->param_cols, nc, ccap, t->col, 0);
        if (!is_op(cur(p), ",")) break;
        advance(p);
    }
    if (star >= 0) f->nkwonly = f->nparams - star;
    return expect_op(p, ")");
}

/* '@' dotted_name ['(' anything balanced ')'] NEWLINE */
static int p_decorator(parser *p, func_def *f, int *cap) {
    advance(p);
    if (cur(p)->kind != TOK_NAME) return unexpected(p, cur(p), "expected a decorator name"), 0;
    size_t len = 0;
    int j = p->i;
    for (;;) {
        len += strlen(p->t[j].text);
        if (!is_op(&p->t[j + 1], ".") || p->t[j + 2].kind != TOK_NAME) break;
        len += 1;
        j += 2;
    }
    char *text = arena_alloc(p->a, len + 1);
    if (!text) return nomem(p), 0;
    for (; p->i <= j; p->i++) strcat(text, p->t[p->i].text);
    PUSH(p, f->decorators, f->ndecorators, *cap, text, 0);
    if (is_op(cur(p), "(")) {
        /* Decorator arguments are evaluated by Python, not compiled. */
        int depth = 0;
        do {
            token *t = advance(p);
            if (t->kind == TOK_EOF) break;
            if (is_op(t, "(") || is_op(t, "[") || is_op(t, "{")) depth++;
            if (is_op(t, ")") || is_op(t, "]") || is_op(t, "}")) depth--;
        } while (depth > 0);
    }
    if (cur(p)->kind != TOK_NEWLINE) return unexpected(p, cur(p), "expected end of line after the decorator"), 0;
    advance(p);
    return 1;
}

/* Finds the name after the first `def` so lexer errors can name the kernel. */
static const char *guess_name(arena *a, const char *s) {
    while (s && *s) {
        while (*s == ' ' || *s == '\t') s++;
        if (!strncmp(s, "def", 3) && (s[3] == ' ' || s[3] == '\t')) {
            s += 3;
            while (*s == ' ' || *s == '\t') s++;
            size_t n = 0;
            while ((s[n] >= 'a' && s[n] <= 'z') || (s[n] >= 'A' && s[n] <= 'Z') || s[n] == '_' ||
                   (n && s[n] >= '0' && s[n] <= '9'))
                n++;
            return n ? arena_strndup(a, s, n) : NULL;
        }
        while (*s && *s != '\n') s++;
        if (*s) s++;
    }
    return NULL;
}

static func_def *p_function(parser *p) {
    func_def *f = arena_alloc(p->a, sizeof *f);
    if (!f) return nomem(p);
    while (cur(p)->kind == TOK_NEWLINE) advance(p);
    /* Source cut from an indented context may start indented as a whole. */
    int indented = cur(p)->kind == TOK_INDENT;
    if (indented) advance(p);
    int dcap = 0;
    while (is_op(cur(p), "@"))
        if (!p_decorator(p, f, &dcap)) return NULL;
    token *t = cur(p);
    if (!is_kw(t, "def"))
        return unexpected(p, t, "expected a function definition ('def')");
    advance(p);
    token *name = cur(p);
    if (name->kind != TOK_NAME) return unexpected(p, name, "expected a function name");
    advance(p);
    f->name = name->text;
    f->line = t->line;
    f->col = t->col;
    p->src.kernel_name = name->text;
    if (!p_params(p, f)) return NULL;
    if (is_op(cur(p), "->")) {
        static const char *const stops[] = {":"};
        advance(p);
        if (!skip_annotation(p, stops, 1)) return NULL;
    }
    if (!expect_colon(p) || !p_block(p, &f->body, &f->nbody, 1)) return NULL;
    if (indented && cur(p)->kind == TOK_DEDENT) advance(p);
    if (cur(p)->kind != TOK_EOF)
        return perr(p, cur(p), "unexpected code after the function; kernel source must hold exactly one def");
    return f;
}

tack_status parse_function(const src_info *src, arena *a, func_def **out, tack_error *err) {
    parser p = {0};
    p.src = *src;
    p.a = a;
    p.err = err;
    err->status = TACK_OK;
    if (!p.src.kernel_name) p.src.kernel_name = guess_name(a, src->text);
    tack_status st = lex_source(&p.src, a, &p.t, &p.n, err);
    if (st) return st;
    p.src.kernel_name = src->kernel_name; /* the guess was only for lexer errors */
    func_def *f = p_function(&p);
    if (!f) return err->status != TACK_OK ? err->status : TACK_ERR_INTERNAL;
    *out = f;
    return TACK_OK;
}
