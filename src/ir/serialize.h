/*
 * serialize.h - Tack's own versioned binary form of an IR function (for the
 * disk cache), and the little byte writer and bounds-checked reader it is
 * built on, which the runtime also uses to pack a variant's cache payload
 * (post-pass IR, launch facts, object code).
 *
 * The format is little-endian and positional: every field of ir_func,
 * ir_param, ir_local, ir_expr, ir_stmt and ir_block in a fixed order, strings
 * and arrays length-prefixed, absent pointers as a 0 tag.  There is no
 * self-description: a change to the order or the fields bumps
 * IR_FORMAT_VERSION, which the disk cache's fingerprint includes, so old
 * entries are never read by a new build.
 *
 * Reading never trusts its input: every read is bounds-checked, counts are
 * capped by the bytes left, recursion depth is capped, enum values and
 * indices are range-checked, and the result passes ir_verify.  Any problem
 * is an error, never a crash.
 */
#ifndef TACK_SERIALIZE_H
#define TACK_SERIALIZE_H

#include <stddef.h>
#include <stdint.h>

#include "ir/ir.h"

/* Bump on any change to what write_expr/write_stmt/... emit. */
/* 8: a plain template now holds its per-access bounds checks (bounds.c),
 * which version-6 and -7 entries lack: the same format, new content. */
#define IR_FORMAT_VERSION 9

/* ---- bytes out -------------------------------------------------------- */

/* A growable byte buffer.  A failed allocation sets `failed` and makes
 * every later append a no-op, so a caller checks once at the end. */
typedef struct ser_writer {
    unsigned char *data; /* malloc'd; take it or free it with ser_writer_free */
    size_t len, cap;
    int failed;
} ser_writer;

void ser_writer_free(ser_writer *w);
void ser_put_bytes(ser_writer *w, const void *p, size_t n);
void ser_put_u8(ser_writer *w, uint8_t v);
void ser_put_u32(ser_writer *w, uint32_t v);
void ser_put_u64(ser_writer *w, uint64_t v);
void ser_put_i64(ser_writer *w, int64_t v);
void ser_put_f64(ser_writer *w, double v);  /* by bit pattern */
void ser_put_str(ser_writer *w, const char *s); /* u32 length + bytes; NULL allowed */
void ser_put_blob(ser_writer *w, const void *p, size_t n); /* u64 length + bytes */

/* ---- bytes in --------------------------------------------------------- */

/* Reads from a borrowed buffer.  A read past the end, or a value the caller
 * rejects (ser_fail), sets `failed`; later reads return zeros. */
typedef struct ser_reader {
    const unsigned char *p;
    size_t len, pos;
    int failed;
} ser_reader;

ser_reader ser_reader_init(const void *p, size_t len);
void ser_fail(ser_reader *r);
size_t ser_left(const ser_reader *r);
/* A pointer to the next n bytes (borrowed), or NULL and failed. */
const void *ser_get_bytes(ser_reader *r, size_t n);
uint8_t ser_get_u8(ser_reader *r);
uint32_t ser_get_u32(ser_reader *r);
uint64_t ser_get_u64(ser_reader *r);
int64_t ser_get_i64(ser_reader *r);
double ser_get_f64(ser_reader *r);
/* An int in [lo, hi]; anything else fails the reader and returns lo. */
int ser_get_int(ser_reader *r, int lo, int hi);
/* A string written by ser_put_str, borrowed (not NUL-terminated): sets *n.
 * *is_null tells NULL from "".  Returns NULL on failure or NULL string. */
const char *ser_get_str(ser_reader *r, size_t *n, int *is_null);
/* The same, copied NUL-terminated into an arena; rejects embedded NULs.
 * A NULL string gives NULL without failing. */
char *ser_get_str_arena(ser_reader *r, arena *a);
/* A blob written by ser_put_blob, borrowed. */
const void *ser_get_blob(ser_reader *r, size_t *n);

/* ---- IR functions ----------------------------------------------------- */

/* Appends f (a template or a variant's post-pass IR) to w. */
void ir_serialize(const ir_func *f, ser_writer *w);

/* Reads one function written by ir_serialize into a fresh ir_func and
 * verifies it (typed: 0 for templates, 1 for post-pass IR).  On failure
 * returns TACK_ERR_INTERNAL (or TACK_ERR_NOMEM) with a message and leaves
 * *out NULL; the reader is then failed. */
tack_status ir_deserialize(ser_reader *r, int typed, ir_func **out, tack_error *err);

#endif
