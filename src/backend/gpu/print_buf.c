/* print_buf.c - print() on GPU devices, lowered to records in a device
 * buffer that the host formats after the launch (issue 26: the drivers'
 * printf mixed lines of different work items, and Metal has none).
 *
 * A kernel with print() takes one more argument after its arrays and
 * textures: a buffer of 32-bit words (gpu.h's GPU_PRINT_* layout).  Each
 * print reserves its record with one atomic add on the offset word; a
 * record is the statement's id, then each value as 64 raw bits (two
 * words, low first).  A record that does not fit is not written and the
 * dropped count goes up instead.  After the launch the host reads the
 * buffer back and formats every record with the CPU's formatter
 * (tack_print_line), so every device prints the same text, in whole lines. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "backend/gpu/gpu.h"

typedef struct walk {
    const ir_stmt **s;
    int n, cap, failed;
} walk;

/* Each print statement once, in the order the walk meets them (its
 * record's id); nonzero stops the walk when there is no memory. */
static int note_print(void *ctx, const ir_stmt *s) {
    walk *w = ctx;
    if (s->kind != IR_PRINT) return 0;
    for (int k = 0; k < w->n; k++)
        if (w->s[k] == s) return 0;
    if (w->n == w->cap) {
        int cap = w->cap ? 2 * w->cap : 8;
        const ir_stmt **t = realloc(w->s, (size_t)cap * sizeof *t);
        if (!t) return w->failed = 1;
        w->s = t;
        w->cap = cap;
    }
    w->s[w->n++] = s;
    return 0;
}

int gpu_print_statements(const ir_func *f, const ir_stmt ***out) {
    walk w = {0};
    ir_walk_block(&(ir_walker){.stmt = note_print, .ctx = &w}, &f->body);
    if (w.failed) {
        free(w.s);
        *out = NULL;
        return -1;
    }
    *out = w.s;
    return w.n;
}

void gpu_print_table_free(gpu_print_table *t) {
    for (int i = 0; i < t->n; i++) {
        free(t->fmts[i]);
        free(t->types[i]);
    }
    free(t->fmts);
    free(t->types);
    free(t->nvals);
    memset(t, 0, sizeof *t);
}

int gpu_print_table_init(gpu_print_table *t, const ir_func *f) {
    memset(t, 0, sizeof *t);
    const ir_stmt **s;
    int n = gpu_print_statements(f, &s);
    if (n <= 0) return n;
    t->fmts = calloc((size_t)n, sizeof *t->fmts);
    t->types = calloc((size_t)n, sizeof *t->types);
    t->nvals = calloc((size_t)n, sizeof *t->nvals);
    if (!t->fmts || !t->types || !t->nvals) goto fail;
    t->n = n;
    for (int i = 0; i < n; i++) {
        t->fmts[i] = backend_print_format(s[i], "%lld", "%llu", NULL);
        t->nvals[i] = s[i]->nindices;
        t->types[i] = malloc((size_t)(s[i]->nindices + 1) * sizeof **t->types);
        if (!t->fmts[i] || !t->types[i]) goto fail;
        for (int k = 0; k < s[i]->nindices; k++) t->types[i][k] = s[i]->indices[k]->type;
    }
    free(s);
    return n;
fail:
    free(s);
    gpu_print_table_free(t);
    return -1;
}

uint32_t gpu_print_capacity(void) {
    /* Bytes of records per launch; TACK_PRINT_BUFFER overrides. */
    unsigned long long bytes = 64ull << 20;
    const char *e = getenv("TACK_PRINT_BUFFER");
    if (e && *e) {
        char *end;
        unsigned long long v = strtoull(e, &end, 10);
        if (!*end && v >= 4 * GPU_PRINT_HEADER) bytes = v;
    }
    if (bytes > (1ull << 31)) bytes = 1ull << 31; /* offsets are 32-bit words */
    return (uint32_t)(bytes / 4) - GPU_PRINT_HEADER;
}

void gpu_print_header(uint32_t header[GPU_PRINT_HEADER], uint32_t capacity) {
    memset(header, 0, GPU_PRINT_HEADER * sizeof *header);
    header[GPU_PRINT_CAPACITY] = capacity;
}

/* A record's value slot as tack_print_line reads it: 64-bit integers,
 * an f64's bits, an f32 widened to an f64's bits, a bool 0 / 1. */
static uint64_t slot(ir_type t, uint64_t raw) {
    switch (t) {
    case TACK_BOOL: return raw != 0;
    case TACK_I8: return (uint64_t)(int64_t)(int8_t)raw;
    case TACK_I16: return (uint64_t)(int64_t)(int16_t)raw;
    case TACK_I32: return (uint64_t)(int64_t)(int32_t)raw;
    case TACK_U8: return (uint8_t)raw;
    case TACK_U16: return (uint16_t)raw;
    case TACK_U32: return (uint32_t)raw;
    case TACK_F16:
    case TACK_F32: {
        float f;
        uint32_t b = (uint32_t)raw;
        memcpy(&f, &b, sizeof f);
        double d = f;
        memcpy(&raw, &d, sizeof raw);
        return raw;
    }
    default: return raw;
    }
}

int gpu_print_output(const gpu_print_table *t, const char *kernel, const uint32_t *buf) {
    uint32_t used = buf[GPU_PRINT_OFFSET], cap = buf[GPU_PRINT_CAPACITY];
    uint32_t dropped = buf[GPU_PRINT_DROPPED];
    if (used > cap) used = cap; /* reservations past the end wrote nothing */
    const uint32_t *w = buf + GPU_PRINT_HEADER;
    uint64_t vals[1024]; /* lower/print.c allows 512 */
    char *out = NULL;
    size_t len = 0, ocap = 0;
    int bad = 0;
    for (uint32_t at = 0; at < used;) {
        uint32_t id = w[at];
        if (id >= (uint32_t)t->n || t->nvals[id] > 1024 || (uint64_t)at + 1 + 2 * (uint64_t)t->nvals[id] > used) {
            bad = 1; /* never happens: records are written whole */
            break;
        }
        int n = t->nvals[id];
        for (int k = 0; k < n; k++) {
            uint64_t raw = w[at + 1 + 2 * k] | (uint64_t)w[at + 2 + 2 * k] << 32;
            vals[k] = slot(t->types[id][k], raw);
        }
        at += 1 + 2 * (uint32_t)n;
        size_t n_line;
        char *line = tack_print_line(t->fmts[id], vals, &n_line);
        if (!line) {
            bad = 1;
            break;
        }
        if (len + n_line > ocap) {
            size_t c = ocap ? ocap : 4096;
            while (c < len + n_line) c *= 2;
            char *o = realloc(out, c);
            if (!o) {
                free(line);
                bad = 1;
                break;
            }
            out = o;
            ocap = c;
        }
        memcpy(out + len, line, n_line);
        len += n_line;
        free(line);
    }
    if (len) fwrite(out, 1, len, stdout);
    free(out);
    fflush(stdout);
    if (dropped)
        fprintf(stderr,
                "tack: kernel '%s': its print buffer (%llu bytes) was full: %lu line%s dropped "
                "(set TACK_PRINT_BUFFER to more bytes)\n",
                kernel, 4ull * (GPU_PRINT_HEADER + (unsigned long long)cap), (unsigned long)dropped,
                dropped == 1 ? "" : "s");
    return bad ? -1 : 0;
}
