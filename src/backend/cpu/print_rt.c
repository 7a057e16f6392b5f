/* print_rt.c - the CPU's print(): the kernel stores a print's values in a
 * stack buffer of 64-bit slots and calls tack_cpu_print with the statement's
 * printf format (backend_print_format with "%lld" / "%llu").  This function
 * formats the line and writes it with one fwrite under the stream's lock, so
 * a line comes out whole.  It replaces one variadic printf call: LLVM's SLP
 * vectorizer took minutes on a call of 256 or more float arguments (issue 26),
 * and a call through a buffer compiles in time linear in its values.
 * tack_print_line formats one line for the GPU devices' print records too
 * (gpu/print_buf.c), so every device prints the same text. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"

typedef struct line_buf {
    char *s;
    size_t len, cap;
    int failed;
} line_buf;

static void put(line_buf *b, const char *s, size_t n) {
    if (b->failed) return;
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + n + 1) cap *= 2;
        char *t = realloc(b->s, cap);
        if (!t) {
            b->failed = 1;
            return;
        }
        b->s = t;
        b->cap = cap;
    }
    memcpy(b->s + b->len, s, n);
    b->len += n;
}

/* A float as backend_print_format shows it: %.9g / %.17g, NaN unsigned,
 * ".0" after an integral value under the bound. */
static void put_float(line_buf *b, double v, int is_f32) {
    char t[64];
    double mag = fabs(v);
    int n = snprintf(t, sizeof t, is_f32 ? "%.9g" : "%.17g", isnan(v) ? mag : v);
    put(b, t, (size_t)n);
    if (v == trunc(v) && mag < backend_print_integral_bound(is_f32 ? TACK_F32 : TACK_F64))
        put(b, ".0", 2);
}

char *tack_print_line(const char *fmt, const uint64_t *vals, size_t *len) {
    line_buf b = {0};
    char t[32];
    for (const char *c = fmt; *c;) {
        if (*c != '%') {
            const char *e = strchr(c, '%');
            size_t n = e ? (size_t)(e - c) : strlen(c);
            put(&b, c, n);
            c += n;
            continue;
        }
        /* The directives backend_print_format writes, each one slot. */
        static const char *const dirs[] = {"%%", "%s", "%.9g%s", "%.17g%s", "%lld", "%llu"};
        int d = 0;
        while (d < 6 && strncmp(c, dirs[d], strlen(dirs[d]))) d++;
        if (d == 6) break; /* not ours: never happens */
        c += strlen(dirs[d]);
        uint64_t v = d ? *vals++ : 0;
        double f;
        memcpy(&f, &v, sizeof f);
        switch (d) {
        case 0: put(&b, "%", 1); break;
        case 1: v ? put(&b, "True", 4) : put(&b, "False", 5); break;
        case 2: put_float(&b, f, 1); break;
        case 3: put_float(&b, f, 0); break;
        case 4: put(&b, t, (size_t)snprintf(t, sizeof t, "%lld", (long long)v)); break;
        case 5: put(&b, t, (size_t)snprintf(t, sizeof t, "%llu", (unsigned long long)v)); break;
        }
    }
    put(&b, "", 0); /* an empty line still gets its buffer */
    if (b.failed) {
        free(b.s);
        return NULL;
    }
    *len = b.len;
    return b.s;
}

void tack_cpu_print(const char *fmt, const uint64_t *vals) {
    size_t n;
    char *s = tack_print_line(fmt, vals, &n);
    if (s && n) fwrite(s, 1, n, stdout); /* stdio locks stdout per call */
    free(s);
}
