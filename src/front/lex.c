/* lex.c - Python tokenization of kernel source text. */
#include "ast.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_INDENT 100 /* Python's own limit on indentation levels */
#define MAX_NEST 200   /* and on nested brackets */

typedef struct lexer {
    const src_info *src;
    arena *a;
    tack_error *err;
    const char *s;
    size_t pos, line_start;
    int line;
    token *toks;
    int n, cap;
    int indents[MAX_INDENT];
    int nind;
    char brackets[MAX_NEST];
    int bline[MAX_NEST], bcol[MAX_NEST];
    int depth;
    int end_line, end_col; /* just past the last real token */
} lexer;

static const char *const keywords[] = {
    "False", "None", "True", "and", "as", "assert", "async", "await",
    "break", "class", "continue", "def", "del", "elif", "else", "except",
    "finally", "for", "from", "global", "if", "import", "in", "is",
    "lambda", "nonlocal", "not", "or", "pass", "raise", "return", "try",
    "while", "with", "yield"};

static const char *const ops3[] = {"//=", "**=", "<<=", ">>="};
static const char *const ops2[] = {"**", "//", "<<", ">>", "<=", ">=", "==", "!=", "->",
                                   "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", ":=", "@="};
static const char ops1[] = "+-*/%@&|^~<>()[]{},:.;=";

static int col_of(const lexer *lx, size_t pos) { return (int)(pos - lx->line_start) + 1; }

static tack_status nomem(lexer *lx) {
    lx->err->status = TACK_ERR_NOMEM;
    snprintf(lx->err->message, sizeof lx->err->message, "out of memory while tokenizing");
    lx->err->filename[0] = 0;
    lx->err->lineno = 0;
    lx->err->col = 0;
    return TACK_ERR_NOMEM;
}

static token *push(lexer *lx, tok_kind kind, size_t start, size_t end, int line, int col) {
    if (lx->n == lx->cap) {
        int nc = lx->cap ? lx->cap * 2 : 64;
        token *nt = arena_grow(lx->a, lx->toks, (size_t)lx->n, (size_t)nc, sizeof(token));
        if (!nt) return NULL;
        lx->toks = nt;
        lx->cap = nc;
    }
    token *t = &lx->toks[lx->n];
    memset(t, 0, sizeof *t);
    t->kind = kind;
    t->text = arena_strndup(lx->a, lx->s + start, end - start);
    if (!t->text) return NULL;
    t->line = line;
    t->col = col;
    lx->n++;
    return t;
}

/* A token made up by the lexer (NEWLINE, INDENT, DEDENT, EOF) has empty text. */
static token *push_synth(lexer *lx, tok_kind kind, int line, int col) {
    return push(lx, kind, lx->pos, lx->pos, line, col);
}

static int is_nl(char c) { return c == '\n' || c == '\r'; }
static int is_id_start(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
static int is_digit(char c) { return c >= '0' && c <= '9'; }
static int is_id_char(char c) { return is_id_start(c) || is_digit(c); }

static void eat_newline(lexer *lx) {
    if (lx->s[lx->pos] == '\r' && lx->s[lx->pos + 1] == '\n') lx->pos++;
    lx->pos++;
    lx->line++;
    lx->line_start = lx->pos;
}

static void skip_comment(lexer *lx) {
    while (lx->s[lx->pos] && !is_nl(lx->s[lx->pos])) lx->pos++;
}

static tack_status bad_char(lexer *lx) {
    const unsigned char *u = (const unsigned char *)lx->s + lx->pos;
    int line = lx->line, col = col_of(lx, lx->pos);
    if (u[0] >= 0x20 && u[0] < 0x7f)
        return src_error(lx->src, line, col, lx->err, "invalid character '%c'", u[0]);
    /* Show a whole UTF-8 character when it is one. */
    int n = u[0] >= 0xf0 && u[0] < 0xf8 ? 4 : u[0] >= 0xe0 ? 3 : u[0] >= 0xc0 ? 2 : 0;
    for (int i = 1; i < n; i++)
        if ((u[i] & 0xc0) != 0x80) n = 0;
    if (n)
        return src_error(lx->src, line, col, lx->err, "invalid character '%.*s'", n,
                         (const char *)u);
    return src_error(lx->src, line, col, lx->err, "invalid character (byte 0x%02x)", u[0]);
}

static int is_string_prefix(const char *p, size_t n) {
    char a = n > 0 ? (char)(p[0] | 0x20) : 0, b = n > 1 ? (char)(p[1] | 0x20) : 0;
    if (n == 1) return a == 'r' || a == 'b' || a == 'u' || a == 'f';
    if (n == 2)
        return (a == 'r' && (b == 'b' || b == 'f')) || ((a == 'b' || a == 'f') && b == 'r');
    return 0;
}

/* lx->pos is at the opening quote; start is where the prefix began. */
static tack_status lex_string(lexer *lx, size_t start, int line, int col) {
    const char *s = lx->s;
    char q = s[lx->pos];
    int triple = s[lx->pos + 1] == q && s[lx->pos + 2] == q;
    lx->pos += triple ? 3 : 1;
    for (;;) {
        char c = s[lx->pos];
        if (!c)
            return src_error(lx->src, line, col, lx->err, "unterminated %sstring literal",
                             triple ? "triple-quoted " : "");
        if (c == '\\') {
            lx->pos++;
            if (!s[lx->pos]) continue; /* reported as unterminated above */
            if (is_nl(s[lx->pos]))
                eat_newline(lx);
            else
                lx->pos++;
        } else if (is_nl(c)) {
            if (!triple)
                return src_error(lx->src, line, col, lx->err, "unterminated string literal");
            eat_newline(lx);
        } else if (c == q && (!triple || (s[lx->pos + 1] == q && s[lx->pos + 2] == q))) {
            lx->pos += triple ? 3 : 1;
            break;
        } else {
            lx->pos++;
        }
    }
    token *t = push(lx, TOK_STRING, start, lx->pos, line, col);
    return t ? TACK_OK : nomem(lx);
}

static int digit_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return 99;
}

/* Decimal digits with single underscores between them; returns the count,
 * or -1 on a misplaced underscore. */
static int scan_decimal(lexer *lx) {
    int count = 0;
    while (is_digit(lx->s[lx->pos])) {
        lx->pos++;
        count++;
        if (lx->s[lx->pos] == '_') {
            if (!is_digit(lx->s[lx->pos + 1])) return -1;
            lx->pos++;
        }
    }
    return count;
}

static tack_status lex_number(lexer *lx) {
    const char *s = lx->s;
    size_t start = lx->pos;
    int line = lx->line, col = col_of(lx, start);
    uint64_t v = 0;
    int overflow = 0;
    char c1 = (char)(s[start + 1] | 0x20);
    if (s[start] == '0' && (c1 == 'x' || c1 == 'o' || c1 == 'b')) {
        int base = c1 == 'x' ? 16 : c1 == 'o' ? 8 : 2;
        const char *what = base == 16 ? "hexadecimal" : base == 8 ? "octal" : "binary";
        lx->pos += 2;
        int count = 0;
        for (;;) {
            if (s[lx->pos] == '_') lx->pos++; /* 0x_ff is fine, 0x__ff is not */
            int d = digit_value(s[lx->pos]);
            if (d >= base) break;
            if (v > (UINT64_MAX - (uint64_t)d) / (uint64_t)base) overflow = 1;
            v = v * (uint64_t)base + (uint64_t)d;
            lx->pos++;
            count++;
        }
        if (!count || s[lx->pos - 1] == '_' || is_id_char(s[lx->pos]))
            return src_error(lx->src, line, col, lx->err, "invalid %s literal", what);
        token *t = push(lx, TOK_INT, start, lx->pos, line, col);
        if (!t) return nomem(lx);
        t->ival = overflow ? UINT64_MAX : v;
        t->ival_overflow = overflow;
        return TACK_OK;
    }
    int is_float = 0;
    int nint = scan_decimal(lx);
    if (nint < 0) return src_error(lx->src, line, col, lx->err, "invalid decimal literal");
    if (s[lx->pos] == '.') {
        is_float = 1;
        lx->pos++;
        if (scan_decimal(lx) < 0)
            return src_error(lx->src, line, col, lx->err, "invalid decimal literal");
    }
    if ((s[lx->pos] | 0x20) == 'e') {
        size_t p = lx->pos + 1;
        if (s[p] == '+' || s[p] == '-') p++;
        if (!is_digit(s[p]))
            return src_error(lx->src, line, col, lx->err, "invalid decimal literal");
        lx->pos = p;
        if (scan_decimal(lx) < 0)
            return src_error(lx->src, line, col, lx->err, "invalid decimal literal");
        is_float = 1;
    }
    int imag = (s[lx->pos] | 0x20) == 'j';
    if (imag) {
        lx->pos++;
        is_float = 1;
    }
    if (is_id_char(s[lx->pos]))
        return src_error(lx->src, line, col, lx->err, "invalid decimal literal");
    token *t = push(lx, is_float ? TOK_FLOAT : TOK_INT, start, lx->pos, line, col);
    if (!t) return nomem(lx);
    /* The token text without underscores, for strtod and the value. */
    size_t n = lx->pos - start, k = 0;
    char *clean = arena_alloc(lx->a, n + 1);
    if (!clean) return nomem(lx);
    for (size_t i = 0; i < n; i++)
        if (s[start + i] != '_') clean[k++] = s[start + i];
    clean[k] = 0;
    if (is_float) {
        t->fval = strtod(clean, NULL); /* stops at a 'j' */
        t->imag = imag;
        return TACK_OK;
    }
    for (size_t i = 0; i < k; i++) {
        uint64_t d = (uint64_t)(clean[i] - '0');
        if (v > (UINT64_MAX - d) / 10) overflow = 1;
        v = v * 10 + d;
    }
    if (clean[0] == '0' && v != 0)
        return src_error(lx->src, line, col, lx->err,
                         "leading zeros in decimal integer literals are not permitted");
    t->ival = overflow ? UINT64_MAX : v;
    t->ival_overflow = overflow;
    return TACK_OK;
}

static tack_status lex_op(lexer *lx) {
    const char *p = lx->s + lx->pos;
    int line = lx->line, col = col_of(lx, lx->pos);
    size_t len = 0;
    for (size_t i = 0; !len && i < sizeof ops3 / sizeof *ops3; i++)
        if (!strncmp(p, ops3[i], 3)) len = 3;
    for (size_t i = 0; !len && i < sizeof ops2 / sizeof *ops2; i++)
        if (!strncmp(p, ops2[i], 2)) len = 2;
    if (!len && strchr(ops1, *p)) len = 1;
    if (!len) return bad_char(lx);
    char c = *p;
    if (len == 1 && (c == '(' || c == '[' || c == '{')) {
        if (lx->depth == MAX_NEST)
            return src_error(lx->src, line, col, lx->err, "too many nested parentheses");
        lx->brackets[lx->depth] = c;
        lx->bline[lx->depth] = line;
        lx->bcol[lx->depth] = col;
        lx->depth++;
    } else if (len == 1 && (c == ')' || c == ']' || c == '}')) {
        if (!lx->depth) return src_error(lx->src, line, col, lx->err, "unmatched '%c'", c);
        char open = lx->brackets[lx->depth - 1];
        if ((open == '(' ? ')' : open == '[' ? ']' : '}') != c)
            return src_error(lx->src, line, col, lx->err,
                             "closing parenthesis '%c' does not match opening parenthesis "
                             "'%c' on line %d",
                             c, open,
                             (lx->src->first_line > 0 ? lx->src->first_line : 1) +
                                 lx->bline[lx->depth - 1] - 1);
        lx->depth--;
    }
    token *t = push(lx, TOK_OP, lx->pos, lx->pos + len, line, col);
    if (!t) return nomem(lx);
    lx->pos += len;
    return TACK_OK;
}

/* Handles indentation at the start of a logical line.  Sets *blank when the
 * line holds nothing but whitespace and a comment (it yields no tokens). */
static tack_status line_start(lexer *lx, int *blank) {
    const char *s = lx->s;
    int w = 0;
    for (;; lx->pos++) {
        char c = s[lx->pos];
        if (c == ' ')
            w++;
        else if (c == '\t')
            w = (w / 8 + 1) * 8;
        else if (c == '\f')
            w = 0;
        else
            break;
        if (w > 1 << 20) w = 1 << 20; /* keep absurd widths from overflowing */
    }
    if (s[lx->pos] == '#') skip_comment(lx);
    *blank = !s[lx->pos] || is_nl(s[lx->pos]);
    if (*blank) return TACK_OK;
    int line = lx->line, col = col_of(lx, lx->pos);
    if (w > lx->indents[lx->nind - 1]) {
        if (lx->nind == MAX_INDENT)
            return src_error(lx->src, line, col, lx->err, "too many levels of indentation");
        lx->indents[lx->nind++] = w;
        if (!push_synth(lx, TOK_INDENT, line, col)) return nomem(lx);
    } else {
        while (lx->nind > 1 && w < lx->indents[lx->nind - 1]) {
            lx->nind--;
            if (!push_synth(lx, TOK_DEDENT, line, col)) return nomem(lx);
        }
        if (w != lx->indents[lx->nind - 1])
            return src_error(lx->src, line, col, lx->err,
                             "unindent does not match any outer indentation level");
    }
    return TACK_OK;
}

static int is_line_token(const lexer *lx) {
    if (!lx->n) return 0;
    tok_kind k = lx->toks[lx->n - 1].kind;
    return k != TOK_NEWLINE && k != TOK_INDENT && k != TOK_DEDENT;
}

static tack_status lex_all(lexer *lx) {
    const char *s = lx->s;
    tack_status st;
    int bol = 1;
    for (;;) {
        if (bol) {
            int blank;
            if ((st = line_start(lx, &blank))) return st;
            if (blank) {
                if (!s[lx->pos]) break;
                eat_newline(lx);
                continue;
            }
            bol = 0;
        }
        char c = s[lx->pos];
        if (c == ' ' || c == '\t' || c == '\f') {
            lx->pos++;
        } else if (c == '#') {
            skip_comment(lx);
        } else if (!c) {
            break;
        } else if (is_nl(c)) {
            if (!lx->depth && is_line_token(lx)) {
                if (!push_synth(lx, TOK_NEWLINE, lx->line, col_of(lx, lx->pos)))
                    return nomem(lx);
            }
            eat_newline(lx);
            if (!lx->depth) bol = 1;
        } else if (c == '\\') {
            int col = col_of(lx, lx->pos);
            lx->pos++;
            if (is_nl(s[lx->pos])) {
                eat_newline(lx);
            } else if (!s[lx->pos]) {
                return src_error(lx->src, lx->line, col, lx->err,
                                 "unexpected end of input after line continuation");
            } else {
                return src_error(lx->src, lx->line, col, lx->err,
                                 "unexpected character after line continuation character");
            }
        } else {
            size_t start = lx->pos;
            int line = lx->line, col = col_of(lx, start);
            if (is_id_start(c)) {
                while (is_id_char(s[lx->pos])) lx->pos++;
                size_t n = lx->pos - start;
                if ((s[lx->pos] == '"' || s[lx->pos] == '\'') && is_string_prefix(s + start, n)) {
                    st = lex_string(lx, start, line, col);
                } else {
                    token *t = push(lx, TOK_NAME, start, lx->pos, line, col);
                    if (!t) return nomem(lx);
                    for (size_t i = 0; i < sizeof keywords / sizeof *keywords; i++)
                        if (!strcmp(t->text, keywords[i])) t->kind = TOK_KEYWORD;
                    st = TACK_OK;
                }
            } else if (is_digit(c) || (c == '.' && is_digit(s[lx->pos + 1]))) {
                st = lex_number(lx);
            } else if (c == '"' || c == '\'') {
                st = lex_string(lx, start, line, col);
            } else {
                st = lex_op(lx);
            }
            if (st) return st;
            lx->end_line = lx->line;
            lx->end_col = col_of(lx, lx->pos);
        }
    }
    if (lx->depth) {
        int d = lx->depth - 1;
        return src_error(lx->src, lx->bline[d], lx->bcol[d], lx->err, "'%c' was never closed",
                         lx->brackets[d]);
    }
    /* The closing tokens sit just past the last real one, so an error
     * reported on them shows a real line. */
    int line = lx->end_line ? lx->end_line : 1, col = lx->end_line ? lx->end_col : 1;
    if (is_line_token(lx) && !push_synth(lx, TOK_NEWLINE, line, col)) return nomem(lx);
    while (lx->nind > 1) {
        lx->nind--;
        if (!push_synth(lx, TOK_DEDENT, line, col)) return nomem(lx);
    }
    if (!push_synth(lx, TOK_EOF, line, col)) return nomem(lx);
    return TACK_OK;
}

tack_status lex_source(const src_info *src, arena *a, token **out_tokens, int *out_count,
                       tack_error *err) {
    lexer *lx = calloc(1, sizeof *lx); /* kept off the stack: it is a few KB */
    if (!lx) {
        err->status = TACK_ERR_NOMEM;
        snprintf(err->message, sizeof err->message, "out of memory while tokenizing");
        return TACK_ERR_NOMEM;
    }
    lx->src = src;
    lx->a = a;
    lx->err = err;
    lx->s = src->text ? src->text : "";
    lx->line = 1;
    lx->nind = 1;
    tack_status st = lex_all(lx);
    if (!st) {
        *out_tokens = lx->toks;
        *out_count = lx->n;
    }
    free(lx);
    return st;
}
