/*
 * ast.h - the front end: kernel source text (Python syntax) -> AST.
 *
 * lex.c turns text into tokens (with INDENT/DEDENT, Python's rules for
 * implicit line joining inside brackets and backslash continuation);
 * parse.c is a recursive-descent parser for the kernel subset of Python.
 * Anything outside the subset is a compile error naming file:line:col with
 * the offending line shown.  AST nodes live in an arena owned by the caller.
 */
#ifndef TACK_AST_H
#define TACK_AST_H

#include <stdint.h>
#include "../util/arena.h"
#include "tack.h"

/* ---- tokens ----------------------------------------------------------- */

typedef enum tok_kind {
    TOK_EOF = 0, TOK_NEWLINE, TOK_INDENT, TOK_DEDENT,
    TOK_NAME, TOK_INT, TOK_FLOAT, TOK_STRING,
    TOK_OP,      /* operators and punctuation; text in tok.text */
    TOK_KEYWORD  /* def if elif else while for in range-is-a-name ... */
} tok_kind;

typedef struct token {
    tok_kind kind;
    const char *text; /* NUL-terminated copy in the arena */
    int line, col;    /* 1-based, relative to the source text */
    uint64_t ival;    /* TOK_INT: value (exact up to 2^64-1) */
    int ival_overflow;/* TOK_INT: literal does not fit in 64 bits */
    double fval;      /* TOK_FLOAT */
    int imag;         /* TOK_FLOAT: an imaginary literal, 2j */
} token;

/* Where a compile error happened, shared by the front end and lowering:
 * the source text (to show the line), its file, and the file line of the
 * text's first line. */
typedef struct src_info {
    const char *text;
    const char *filename;
    int first_line;
    const char *kernel_name; /* may be NULL before the def is parsed */
    int is_function;         /* a @tack.func, not a kernel: messages say so */
} src_info;

/* Fills err with a TACK_ERR_COMPILE message
 *   "file:LINE:COL: kernel 'name': <msg>\n    <source line>\n    ^"
 * where LINE = first_line + line - 1.  Returns TACK_ERR_COMPILE. */
tack_status src_error(const src_info *src, int line, int col, tack_error *err,
                      const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

/* Tokenizes the whole text; returns an arena array ending in TOK_EOF. */
tack_status lex_source(const src_info *src, arena *a, token **out_tokens,
                       int *out_count, tack_error *err);

/* The value of TOK_STRING token t (strlit.c): Python's escapes decoded to
 * UTF-8 in a = arena copy ending in a NUL (*len excludes it; the text may
 * hold NULs).  f-strings and bytes are compile errors. */
tack_status lex_string_value(const src_info *src, const token *t, arena *a, char **out,
                             size_t *len, tack_error *err);
/* A string token's form: its prefixes, and where its body (between the
 * quotes) starts in the token's text and how long it is. */
typedef struct lex_string_form {
    int raw, bytes, f;
    size_t body, len;
} lex_string_form;
int lex_string_shape(const char *text, lex_string_form *out);
/* Decodes n bytes of string body at s (raw: no escapes) into o, which has
 * room for n + 1; the decoded length, or -1 with *bad the escape's letter
 * (report it with lex_escape_error). */
long lex_unescape(const char *s, size_t n, int raw, char *o, char *bad);
tack_status lex_escape_error(const src_info *src, const token *t, char bad, tack_error *err);

/* ---- AST -------------------------------------------------------------- */

typedef enum expr_kind {
    EX_NAME, EX_INT, EX_FLOAT, EX_BOOL,
    EX_BINOP,    /* op: + - * / // % ** & | ^ << >> */
    EX_UNARY,    /* op: - + ~ not */
    EX_COMPARE,  /* chained: a < b <= c; ops[] and items[] (n+1 operands) */
    EX_BOOLOP,   /* op: and / or, over items[] (>= 2) */
    EX_IFEXP,    /* items[0] if cond else items[1]: a=cond, b=body, c=orelse */
    EX_CALL,     /* func(args...) */
    EX_ATTR,     /* value.attr */
    EX_SUBSCRIPT,/* value[items...] (a[i, j] has two items) */
    EX_TUPLE,    /* (a, b) - only as an assignment target or return value */
    EX_STR,      /* a string literal (adjacent ones joined), escapes decoded:
                    str, len; only print() takes one */
    EX_FSTRING   /* an f-string (with any literals joined to it): items are
                    its parts in order, EX_STR texts and the values of its
                    {expressions}; only print() takes one */
} expr_kind;

typedef struct expr expr;
struct expr {
    expr_kind kind;
    int line, col;
    const char *op;      /* BINOP UNARY BOOLOP: operator text */
    const char *name;    /* NAME: identifier; ATTR: attribute name */
    uint64_t ival;       /* INT */
    int ival_overflow;   /* INT: too big for 64 bits */
    double fval;         /* FLOAT */
    int imag;            /* FLOAT: an imaginary literal (2j): 0 + fval*1j */
    int bval;            /* BOOL */
    expr *a, *b, *c;     /* UNARY: a; BINOP: a, b; IFEXP: a=cond b=then c=else;
                            CALL: a=callee; ATTR, SUBSCRIPT: a=value */
    expr **items;        /* COMPARE operands, BOOLOP operands, CALL args,
                            SUBSCRIPT indices, TUPLE elements */
    int nitems;
    const char **ops;    /* COMPARE: nitems-1 operators ("<", "==", "is not"...) */
    const char *str;     /* STR: the text, UTF-8 (may hold NULs: see len) */
    size_t len;          /* STR */
    /* CALL: keyword arguments: print()'s (sep=, end=, ...), and those of
     * built-in and NumPy calls, placed by lower/calls.c; every other call
     * refuses them while lowering. */
    const char **kw_names;
    expr **kw_values;
    int nkw;
    int is_list;         /* TUPLE: written as a list literal [a, b] */
};

typedef enum stmt_kind {
    ST_EXPR,     /* an expression statement (a call) */
    ST_ASSIGN,   /* targets[0] = targets[1] = ... = value; a target is a
                    NAME, SUBSCRIPT or TUPLE of those */
    ST_AUGASSIGN,/* target op= value; op without '=' ("+", "//", ...) */
    ST_IF,       /* if cond: body elif...: else: orelse (elif nests as an
                    ST_IF alone in orelse) */
    ST_WHILE,    /* while cond: body (no else) */
    ST_FOR,      /* for target in iter: body (no else) */
    ST_BREAK, ST_CONTINUE, ST_PASS,
    ST_RETURN    /* value may be NULL */
} stmt_kind;

typedef struct stmt stmt;
struct stmt {
    stmt_kind kind;
    int line, col;
    expr **targets;  /* ASSIGN: ntargets targets; AUGASSIGN, FOR: one */
    int ntargets;
    const char *op;  /* AUGASSIGN */
    expr *value;     /* EXPR, ASSIGN, AUGASSIGN, RETURN value; IF/WHILE cond;
                        FOR iter */
    stmt **body;
    int nbody;
    stmt **orelse;
    int norelse;
};

typedef struct func_def {
    const char *name;
    int line, col;
    const char **params;
    int nparams;
    int *param_lines, *param_cols;
    expr **defaults;   /* per parameter: its default value or NULL (device functions) */
    int nkwonly;       /* the last nkwonly parameters follow a bare '*' (device functions) */
    const char **decorators; /* dotted text of each decorator, e.g. "tack.kernel" */
    int ndecorators;
    stmt **body;   /* a leading docstring is dropped */
    int nbody;
} func_def;

/* Parses text holding exactly one (possibly decorated) `def`.  Decorators
 * are recorded and otherwise ignored.  Everything outside the subset is a
 * compile error. */
tack_status parse_function(const src_info *src, arena *a, func_def **out,
                           tack_error *err);

#endif
