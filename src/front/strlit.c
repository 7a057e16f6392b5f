/* strlit.c - the value of a string literal token: prefix and quotes
 * removed, Python's escapes decoded to UTF-8.  Kernels take strings only
 * as print()'s arguments, so this is all the front end does with them. */
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

tack_status lex_string_value(const src_info *src, const token *t, arena *a, char **out,
                             size_t *len, tack_error *err) {
    const char *s = t->text;
    int raw = 0;
    while (*s != '"' && *s != '\'') {
        char c = (char)(*s | 0x20);
        if (c == 'f')
            return src_error(src, t->line, t->col, err,
                             "f-strings are not supported in kernels: give print() the text and "
                             "the values as separate arguments, print('x =', x)");
        if (c == 'b')
            return src_error(src, t->line, t->col, err,
                             "bytes literals are not supported in kernels");
        if (c == 'r') raw = 1;
        s++;
    }
    char q = *s;
    int quotes = s[1] == q && s[2] == q && s[3] ? 3 : 1;
    size_t body = strlen(s) - 2 * (size_t)quotes;
    if (quotes == 1 && s[1] == q) body = 0; /* '' */
    s += quotes;
    /* Decoding never grows the text: an escape is at least as long as the
     * UTF-8 it stands for. */
    char *o = arena_alloc(a, body + 1);
    if (!o) {
        err->status = TACK_ERR_NOMEM;
        snprintf(err->message, sizeof err->message, "out of memory while parsing");
        return TACK_ERR_NOMEM;
    }
    size_t n = 0;
    for (size_t i = 0; i < body;) {
        char c = s[i];
        if (c == '\r') { /* a newline in a triple-quoted string is '\n' */
            o[n++] = '\n';
            i += s[i + 1] == '\n' ? 2 : 1;
            continue;
        }
        if (c != '\\' || raw) {
            o[n++] = c;
            i++;
            if (c == '\\' && i < body) o[n++] = s[i++]; /* r'\'' keeps both */
            continue;
        }
        char e = s[i + 1];
        i += 2;
        switch (e) {
        case '\n': break; /* a continued line */
        case '\r': if (s[i] == '\n') i++; break;
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
            if (cp < 0 || put_utf8(o, &n, (unsigned long)cp))
                return src_error(src, t->line, t->col, err,
                                 "invalid \\%c escape in a string literal", e);
            i += (size_t)digits;
            break;
        }
        case 'N':
            return src_error(src, t->line, t->col, err,
                             "\\N{...} escapes are not supported in kernels; write the "
                             "character itself");
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
    *out = o;
    *len = n;
    return TACK_OK;
}
