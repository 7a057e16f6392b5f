/*
 * disk_cache.h - compiled kernels kept on disk, so that another process (or
 * the thousandth rank of an MPI job) loads instead of compiling, and never
 * loads something wrong.
 *
 * The cache maps opaque key bytes to opaque payload bytes; what goes into a
 * key and a payload is the runtime's business (build both with ser_writer
 * from ir/serialize.h).  Everything below the key is this file's business:
 *
 *   <root>/                    TACK_CACHE_DIR, or $XDG_CACHE_HOME/tack, or
 *                              ~/.cache/tack; mode 0700, ours alone
 *   <root>/.pruned             its mtime: when a process last scanned sizes
 *   <root>/<fingerprint>/      one per Tack build (build id, format versions,
 *                              host language version, LLVM version)
 *   <root>/<fp>/<sha256(key)>  one entry per key (hex name, 64 chars)
 *   <root>/<fp>/bundle.tack    bundle mode: many entries in one file
 *
 * An entry file: magic "TACKENT\n", u32 DISK_CACHE_FORMAT_VERSION, SHA-256
 * of everything after it, then the key (u32 length + bytes), the kernel name
 * (u32 length + bytes, for `list`), the payload (u64 length + bytes).  A
 * read checks the magic, the version, the hash and that the stored key is
 * the requested one; any other file is counted as bad and read as a miss.
 * Writers write a temporary file in the same directory and rename it into
 * place, so readers see a whole entry or none; there are no locks, and two
 * processes storing one key write the same bytes.
 *
 * Because loading an entry runs its machine code, a root or fingerprint
 * directory that is not owned by the user or is writable by group or others
 * is refused: the process warns once and runs without a disk cache.
 *
 * All functions are thread-safe.  None exits or aborts.
 */
#ifndef TACK_DISK_CACHE_H
#define TACK_DISK_CACHE_H

#include <stddef.h>
#include <stdint.h>

/* Bump on any change to the entry or bundle file layout. */
#define DISK_CACHE_FORMAT_VERSION 1

typedef enum disk_cache_mode {
    DISK_CACHE_OFF = 0,
    DISK_CACHE_READ,   /* per-kernel entries: load, never store */
    DISK_CACHE_WRITE,  /* per-kernel entries: load and store (the default) */
    DISK_CACHE_BUNDLE  /* the bundle only, read once; nothing is stored */
} disk_cache_mode;

const char *disk_cache_mode_name(disk_cache_mode m); /* "off", "read", ... */

typedef struct disk_cache_settings {
    disk_cache_mode mode;
    char root[4096];      /* the cache directory */
    uint64_t size_limit;  /* bytes of entries, all versions together */
    int mpi_rank;         /* 0 when not under MPI */
    int mpi_size;         /* 1 when not under MPI */
    int64_t now;          /* TACK_CACHE_NOW: the clock for tests; 0 = real */
    /* Fingerprint inputs.  NULL means the defaults: TACK_BUILD_ID (a hash
     * of the sources taken at build time), the host version given to
     * disk_cache_set_host ("none" if never called), and the LLVM version
     * libtack was built against. */
    const char *build_id;
    const char *host_version;
    const char *llvm_version;
} disk_cache_settings;

/* Fills s from TACK_CACHE, TACK_CACHE_DIR, TACK_CACHE_SIZE, TACK_CACHE_NOW
 * and the MPI launchers' rank variables (Open MPI, MPICH/PMI, MVAPICH,
 * Slurm): the default mode is write, or bundle when the world size is above
 * one.  A value it cannot parse keeps the default and is reported through
 * the warning handler. */
void disk_cache_settings_from_env(disk_cache_settings *s);

typedef struct disk_cache disk_cache;

/* Opens a cache with the given settings, creating its directories (0700).
 * Returns NULL and a reason in why (may be NULL) when the mode is off, when
 * a directory cannot be made, or when it is refused as unsafe.  Tests and
 * the command line open their own; the runtime uses disk_cache_get. */
disk_cache *disk_cache_open(const disk_cache_settings *s, char *why, size_t whylen);
void disk_cache_close(disk_cache *c);

/* The process's cache, opened from the environment on first use.  NULL
 * when off or refused (the refusal is warned about once).  Never freed. */
disk_cache *disk_cache_get(void);
/* The process's cache if disk_cache_get has opened it, else NULL; opens
 * nothing (for tack.stats()). */
disk_cache *disk_cache_current(void);

/* Before the first disk_cache_get: the host language's version, which
 * goes into the fingerprint ("3.11" from the Python extension; C programs
 * need not call it).  Returns -1 once the process's cache exists. */
int disk_cache_set_host(const char *host_version);
/* Where warnings go (default: one line on stderr).  fn may be called from
 * any thread, once per problem. */
void disk_cache_set_warn(void (*fn)(const char *message));

/* ---- entries ---------------------------------------------------------- */

/* Looks a key up.  Returns 0 on a hit with *payload a malloc'd copy (free
 * it with free) of *len bytes; 1 on a miss, including a bad entry (which
 * also counts as bad).  c may be NULL (a miss that counts nothing).  In
 * bundle mode the first call reads the bundle into memory. */
/* The same for an IR-template entry, counted in ir_hits and ir_misses. */
int disk_cache_load_ir(disk_cache *c, const void *key, size_t keylen, void **payload,
                       size_t *len);
int disk_cache_load(disk_cache *c, const void *key, size_t keylen, void **payload,
                    size_t *len);

/* Stores an entry (write mode, and only on rank 0 under MPI; otherwise
 * nothing).  Failures are silent: the cache is only an optimization.  May
 * prune the cache (at most once an hour across processes). */
void disk_cache_store(disk_cache *c, const void *key, size_t keylen, const char *kernel_name,
                      const void *payload, size_t len);

/* 1 when disk_cache_store would store (write mode, rank 0); c may be
 * NULL. */
int disk_cache_writes(const disk_cache *c);

/* An entry file's parts, borrowed from its bytes. */
typedef struct disk_cache_entry {
    const unsigned char *key, *name, *payload;
    size_t keylen, namelen, len;
} disk_cache_entry;

/* Parses an entry file's bytes b[0..n): the magic, the version, the hash
 * (unless check_hash is 0, which only listing uses) and parts that fill
 * the file exactly.  Returns 0 and fills *out, or -1 for anything else.
 * Every reader of entries (loads, bundles, list, verify) goes through it. */
int disk_cache_parse_entry(const void *b, size_t n, int check_hash, disk_cache_entry *out);

typedef struct disk_cache_counts {
    uint64_t hits, misses, bad, stores; /* variant entries (bad: any entry) */
    uint64_t ir_hits, ir_misses;        /* IR-template entries */
} disk_cache_counts;
/* The counters of c (zeros for NULL). */
disk_cache_counts disk_cache_counters(const disk_cache *c);

/* Counts a hit whose payload the caller could not use (it passed the hash
 * but did not decode): one more bad entry, and the hit becomes a miss. */
void disk_cache_note_bad(disk_cache *c);

/* The overridden clock, for tests (0: the real one). */
void disk_cache_set_now(disk_cache *c, int64_t now);

/* ---- bundles ---------------------------------------------------------- */

/* Packs every valid entry of this fingerprint into bundle.tack (written
 * through a temporary file and a rename).  Returns 0, or -1 with errno. */
int disk_cache_bundle(disk_cache *c, size_t *entries, uint64_t *bytes);

/* For tack.cache.load_bundle(comm): rank 0 reads the bundle file's bytes
 * (malloc'd; -1 when there is none), broadcasts them, and every rank
 * installs them, so only one process touches the file system.  Install
 * works once per cache object, before its first bundle-mode load; it
 * returns the number of valid entries, or -1 (already loaded, or not a
 * bundle). */
int disk_cache_bundle_read(disk_cache *c, void **bytes, size_t *len);
int disk_cache_bundle_install(disk_cache *c, const void *bytes, size_t len);

/* ---- administration (python -m tack cache ...) ------------------------ */

typedef struct disk_cache_info {
    char root[4096];
    char dir[4200];            /* root/fingerprint */
    char fingerprint[65];
    disk_cache_mode mode;
    uint64_t size_limit;
    uint64_t entries, bytes;         /* this fingerprint's entries */
    uint64_t all_entries, all_bytes; /* every version's, as the limit counts */
    int versions;                    /* fingerprint directories */
    int has_bundle;
    uint64_t bundle_bytes;
} disk_cache_info;
int disk_cache_get_info(disk_cache *c, disk_cache_info *out);

typedef struct disk_cache_entry_info {
    char name[65];   /* the file name: hex SHA-256 of the key */
    char kernel[128];
    uint64_t size;   /* bytes on disk */
    int64_t age;     /* seconds since last written or refreshed by a hit */
    int bad;         /* verify: failed a check */
} disk_cache_entry_info;

/* This fingerprint's entries, oldest first; *out is malloc'd (free it).
 * Headers are read, hashes are not checked.  Returns 0 or -1. */
int disk_cache_list(disk_cache *c, disk_cache_entry_info **out, size_t *n);

/* Re-checks every entry of this fingerprint and the bundle's records; the
 * bad ones go to *bad (malloc'd) and the bad counter, and are deleted when
 * remove_bad.  Returns 0 or -1. */
int disk_cache_verify(disk_cache *c, int remove_bad, size_t *checked,
                      disk_cache_entry_info **bad, size_t *nbad);

/* Deletes every entry, bundle, temporary file and mark of every version
 * (only files the cache names; anything else stays). */
int disk_cache_clear(disk_cache *c, uint64_t *removed);

/* Runs the size limit now: past it, deletes the least recently used
 * entries of all versions until 90% is left; also deletes temporary files
 * abandoned for an hour.  Returns 0 or -1. */
int disk_cache_prune(disk_cache *c, uint64_t *removed, uint64_t *freed);

#endif
