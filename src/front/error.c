/* error.c - compile errors that point at the user's file and show the line. */
#include "ast.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* Bounded appends: a message that does not fit is cut, never overflowed. */
typedef struct sbuf {
    char *b;
    size_t cap, len;
} sbuf;

static void sb_putc(sbuf *s, char c) {
    if (s->len + 1 < s->cap) {
        s->b[s->len++] = c;
        s->b[s->len] = 0;
    }
}

static void sb_printf(sbuf *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_printf(sbuf *s, const char *fmt, ...) {
    if (s->len + 1 >= s->cap) return;
    va_list ap;
    va_start(ap, fmt);
    int r = vsnprintf(s->b + s->len, s->cap - s->len, fmt, ap);
    va_end(ap);
    if (r < 0) {
        s->b[s->len] = 0;
        return;
    }
    size_t room = s->cap - 1 - s->len;
    s->len += (size_t)r < room ? (size_t)r : room;
}

/* Start of 1-based line `line`, counting \n, \r\n and \r as the lexer does. */
static const char *find_line(const char *text, int line, size_t *out_len) {
    if (!text || line < 1) return NULL;
    const char *p = text;
    for (int l = 1; l < line; l++) {
        while (*p && *p != '\n' && *p != '\r') p++;
        if (!*p) return NULL;
        if (p[0] == '\r' && p[1] == '\n') p++;
        p++;
    }
    const char *e = p;
    while (*e && *e != '\n' && *e != '\r') e++;
    *out_len = (size_t)(e - p);
    return p;
}

tack_status src_error(const src_info *src, int line, int col, tack_error *err,
                      const char *fmt, ...) {
    if (!err) return TACK_ERR_COMPILE;
    const char *fname = src && src->filename ? src->filename : "<string>";
    int first = src && src->first_line > 0 ? src->first_line : 1;
    /* Format first: an argument may point into err->message. */
    char msg[sizeof err->message];
    va_list ap;
    va_start(ap, fmt);
    int r = vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (r < 0) msg[0] = 0;

    err->status = TACK_ERR_COMPILE;
    snprintf(err->filename, sizeof err->filename, "%s", fname);
    err->lineno = line > 0 ? first + line - 1 : first;
    err->col = col > 0 ? col : 0;

    sbuf s = {err->message, sizeof err->message, 0};
    err->message[0] = 0;
    if (col > 0)
        sb_printf(&s, "%s:%d:%d: ", fname, err->lineno, col);
    else
        sb_printf(&s, "%s:%d: ", fname, err->lineno);
    if (src && src->kernel_name)
        sb_printf(&s, "%s '%s': ", src->is_function ? "device function" : "kernel", src->kernel_name);
    sb_printf(&s, "%s", msg);

    size_t n = 0;
    const char *l = find_line(src ? src->text : NULL, line, &n);
    if (l) {
        sb_printf(&s, "\n    %.*s", n > 400 ? 400 : (int)n, l);
        if (col > 0) {
            sb_printf(&s, "\n    ");
            /* Keep tabs under tabs so the caret lines up however they render. */
            for (int i = 0; i < col - 1 && i < 400; i++)
                sb_putc(&s, (size_t)i < n && l[i] == '\t' ? '\t' : ' ');
            sb_putc(&s, '^');
        }
    }
    return TACK_ERR_COMPILE;
}
