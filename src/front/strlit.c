/* strlit.c - the value of a string literal token: prefix and quotes
 * removed, Python's escapes decoded to UTF-8 (for an f-string, parse.c
 * decodes its literal pieces here).  Kernels take strings only as
 * print()'s arguments, so this is all the front end does with them. */
#include "ast.h"

#include <stdio.h>
#include <string.h>

static int hex_digit(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    c = (char)(c | 0x20);
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
}

/* Appends code point cp as UTF-8; 0, or -1 when it is no character. */
static int put_utf8(char *o, size_t *n, unsigned long cp) {
    if (cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return -1;
    if (cp < 0x80) {
        o[(*n)++] = (char)cp;
    } else if (cp < 0x800) {
        o[(*n)++] = (char)(0xc0 | (cp >> 6));
        o[(*n)++] = (char)(0x80 | (cp & 0x3f));
    } else if (cp < 0x10000) {
        o[(*n)++] = (char)(0xe0 | (cp >> 12));
        o[(*n)++] = (char)(0x80 | ((cp >> 6) & 0x3f));
        o[(*n)++] = (char)(0x80 | (cp & 0x3f));
    } else {
        o[(*n)++] = (char)(0xf0 | (cp >> 18));
        o[(*n)++] = (char)(0x80 | ((cp >> 12) & 0x3f));
        o[(*n)++] = (char)(0x80 | ((cp >> 6) & 0x3f));
        o[(*n)++] = (char)(0x80 | (cp & 0x3f));
    }
    return 0;
}

/* Reads `digits` hex digits at s; the value, or -1. */
static long hex_value(const char *s, int digits) {
    long v = 0;
    for (int i = 0; i < digits; i++) {
        int d = hex_digit(s[i]);
        if (d < 0) return -1;
        v = v * 16 + d;
    }
    return v;
}

int lex_string_shape(const char *text, lex_string_form *out) {
    const char *s = text;
    memset(out, 0, sizeof *out);
    while (*s != '"' && *s != '\'') {
        char c = (char)(*s | 0x20);
        out->raw |= c == 'r';
        out->bytes |= c == 'b';
        out->f |= c == 'f';
        s++;
    }
    char q = *s;
    size_t quotes = s[1] == q && s[2] == q && s[3] ? 3 : 1;
    size_t len = strlen(s);
    out->body = (size_t)(s - text) + quotes;
    out->len = len >= 2 * quotes ? len - 2 * quotes : 0;
    return 0;
}

long lex_unescape(const char *s, size_t body, int raw, char *o, char *bad) {
    size_t n = 0;
    for (size_t i = 0; i < body;) {
        char c = s[i];
        if (c == '\r') { /* a newline in a triple-quoted string is '\n' */
            o[n++] = '\n';
            i += i + 1 < body && s[i + 1] == '\n' ? 2 : 1;
            continue;
        }
        if (c != '\\' || raw) {
            o[n++] = c;
            i++;
            if (c == '\\' && i < body) o[n++] = s[i++]; /* r'\'' keeps both */
            continue;
        }
        char e = i + 1 < body ? s[i + 1] : 0;
        i += 2;
        switch (e) {
        case '\n': break; /* a continued line */
        case '\r': if (i < body && s[i] == '\n') i++; break;
        case '\\': o[n++] = '\\'; break;
        case '\'': o[n++] = '\''; break;
        case '"': o[n++] = '"'; break;
        case 'a': o[n++] = '\a'; break;
        case 'b': o[n++] = '\b'; break;
        case 'f': o[n++] = '\f'; break;
        case 'n': o[n++] = '\n'; break;
        case 'r': o[n++] = '\r'; break;
        case 't': o[n++] = '\t'; break;
        case 'v': o[n++] = '\v'; break;
        case 'x': case 'u': case 'U': {
            int digits = e == 'x' ? 2 : e == 'u' ? 4 : 8;
            long cp = i + (size_t)digits <= body ? hex_value(s + i, digits) : -1;
            if (cp < 0 || put_utf8(o, &n, (unsigned long)cp)) {
                *bad = e;
                return -1;
            }
            i += (size_t)digits;
            break;
        }
        case 'N':
            *bad = 'N';
            return -1;
        default:
            if (e >= '0' && e <= '7') { /* up to three octal digits */
                unsigned cp = (unsigned)(e - '0');
                for (int k = 0; k < 2 && i < body && s[i] >= '0' && s[i] <= '7'; k++)
                    cp = cp * 8 + (unsigned)(s[i++] - '0');
                put_utf8(o, &n, cp);
            } else { /* Python keeps an unknown escape as it is */
                o[n++] = '\\';
                i--;
            }
        }
    }
    o[n] = 0;
    return (long)n;
}

tack_status lex_escape_error(const src_info *src, const token *t, char bad, tack_error *err) {
    if (bad == 'N')
        return src_error(src, t->line, t->col, err,
                         "\\N{...} escapes are not supported in kernels; write the character "
                         "itself");
    return src_error(src, t->line, t->col, err, "invalid \\%c escape in a string literal", bad);
}

tack_status lex_string_value(const src_info *src, const token *t, arena *a, char **out,
                             size_t *len, tack_error *err) {
    lex_string_form form;
    lex_string_shape(t->text, &form);
    if (form.f) /* parse.c splits those into parts */
        return src_error(src, t->line, t->col, err, "an f-string where a plain string is needed");
    if (form.bytes)
        return src_error(src, t->line, t->col, err, "bytes literals are not supported in kernels");
    /* Decoding never grows the text: an escape is at least as long as the
     * UTF-8 it stands for. */
    char *o = arena_alloc(a, form.len + 1);
    if (!o) {
        err->status = TACK_ERR_NOMEM;
        snprintf(err->message, sizeof err->message, "out of memory while parsing");
        return TACK_ERR_NOMEM;
    }
    char bad = 0;
    long n = lex_unescape(t->text + form.body, form.len, form.raw, o, &bad);
    if (n < 0) return lex_escape_error(src, t, bad, err);
    *out = o;
    *len = (size_t)n;
    return TACK_OK;
}
