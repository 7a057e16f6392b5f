/* fuzz_cache_entry.c - libFuzzer target over disk cache entry files.
 *
 * The input is an entry file's bytes.  It is parsed as a load and as a
 * listing would (disk_cache_parse_entry with and without the hash check),
 * then again with its SHA-256 made right: the hash guards against damage,
 * not against a writer that means harm or a Tack that wrote a bad entry,
 * so what follows the hash must be parsed as carefully as if there were
 * none.  A parsed entry's payload then goes where an IR-template entry's
 * goes (ir_deserialize, then the runtime's use of the template; see
 * fuzz_common.h).  Variant entries hold object code, which only LLVM's
 * linker reads: their payload is not fuzzed here. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "runtime/disk_cache.h"
#include "util/sha256.h"

#define HEADER_SIZE (8 + 4 + 32) /* magic, version, SHA-256 */

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    setenv("TACK_CACHE", "off", 1);
    return 0;
}

/* The parts lie inside the input and fill it after the header. */
static void check_parts(const uint8_t *b, size_t n, const disk_cache_entry *e) {
    const uint8_t *end = b + n;
    if (e->key < b + HEADER_SIZE || e->key + e->keylen > end || e->name + e->namelen > end ||
        e->payload + e->len > end)
        fuzz_bug("entry parts outside the file", NULL);
}

static void payload(const unsigned char *p, size_t n) {
    for (int typed = 0; typed < 2; typed++) {
        ser_reader r = ser_reader_init(p, n);
        ir_func *f = NULL;
        tack_error err = {0};
        tack_status st = ir_deserialize(&r, typed, &f, &err);
        if (st != TACK_OK && f) fuzz_bug("ir_deserialize failed but returned a function", &err);
        if (st == TACK_OK) {
            /* What passed the reader's checks is trusted from here on. */
            fuzz_roundtrip(f, typed);
            if (!typed) fuzz_template(f, 0);
        }
        ir_func_free(f);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    disk_cache_entry e;
    if (disk_cache_parse_entry(data, size, 1, &e) == 0) check_parts(data, size, &e);
    if (disk_cache_parse_entry(data, size, 0, &e) == 0) check_parts(data, size, &e);
    if (size < HEADER_SIZE) return 0;
    unsigned char *b = malloc(size); /* exactly sized: ASan sees any overread */
    if (!b) return 0;
    memcpy(b, data, size);
    sha256(b + HEADER_SIZE, size - HEADER_SIZE, b + 12);
    if (disk_cache_parse_entry(b, size, 1, &e) == 0) {
        check_parts(b, size, &e);
        payload(e.payload, e.len);
    }
    free(b);
    return 0;
}
