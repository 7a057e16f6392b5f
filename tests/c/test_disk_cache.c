/* test_disk_cache.c - the disk cache against a temporary directory: round
 * trips, damaged entries (each counted bad and read as a miss), refused
 * directories, the size limit with an overridden clock, bundles, MPI
 * rules, the administration functions, concurrent processes and threads;
 * and the IR's binary form: round
 * trips of lowered and typed kernels, and a crash hunt over damaged bytes. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "front/ast.h"
#include "ir/serialize.h"
#include "lower/lower.h"
#include "passes/passes.h"
#include "runtime/disk_cache.h"

static char base[256];
static int ndirs;

/* A fresh cache root under the test's temporary directory. */
static void fresh_root(char *out, size_t n) { snprintf(out, n, "%s/c%d", base, ndirs++); }

static disk_cache *open_at(const char *root, disk_cache_mode mode, uint64_t limit, int64_t now) {
    disk_cache_settings s;
    memset(&s, 0, sizeof s);
    s.mode = mode;
    snprintf(s.root, sizeof s.root, "%s", root);
    s.size_limit = limit;
    s.mpi_size = 1;
    s.now = now;
    s.build_id = "test-build";
    char why[512] = "";
    disk_cache *c = disk_cache_open(&s, why, sizeof why);
    if (!c) fprintf(stderr, "open %s: %s\n", root, why);
    return c;
}

/* The path of the cache's only entry. */
static void entry_path(disk_cache *c, char *out, size_t n) {
    disk_cache_info info;
    disk_cache_get_info(c, &info);
    disk_cache_entry_info *v;
    size_t nv;
    out[0] = 0;
    if (disk_cache_list(c, &v, &nv) || !nv) return;
    snprintf(out, n, "%s/%s", info.dir, v[nv - 1].name);
    free(v);
}

static int load_str(disk_cache *c, const char *key, char *out, size_t n) {
    void *p;
    size_t len;
    int r = disk_cache_load(c, key, strlen(key), &p, &len);
    if (!r) {
        snprintf(out, n, "%.*s", (int)len, (const char *)p);
        free(p);
    }
    return r;
}

static void store_str(disk_cache *c, const char *key, const char *payload) {
    disk_cache_store(c, key, strlen(key), "kern", payload, strlen(payload));
}

/* ---- entries ---------------------------------------------------------- */

static void test_roundtrip(void) {
    char root[300], got[64];
    fresh_root(root, sizeof root);
    disk_cache *c = open_at(root, DISK_CACHE_WRITE, 1 << 20, 0);
    CHECK(c != NULL);
    if (!c) return;
    CHECK(load_str(c, "k1", got, sizeof got) == 1);
    store_str(c, "k1", "payload one");
    store_str(c, "k2", "payload two");
    CHECK(load_str(c, "k1", got, sizeof got) == 0 && !strcmp(got, "payload one"));
    CHECK(load_str(c, "k2", got, sizeof got) == 0 && !strcmp(got, "payload two"));
    CHECK(load_str(c, "k3", got, sizeof got) == 1);
    /* An empty payload is a payload. */
    disk_cache_store(c, "k0", 2, NULL, "", 0);
    void *p;
    size_t len = 99;
    CHECK(disk_cache_load(c, "k0", 2, &p, &len) == 0 && len == 0);
    free(p);
    disk_cache_counts n = disk_cache_counters(c);
    CHECK(n.hits == 3 && n.misses == 2 && n.bad == 0 && n.stores == 3);
    disk_cache_note_bad(c); /* the last hit did not decode */
    n = disk_cache_counters(c);
    CHECK(n.hits == 2 && n.misses == 3 && n.bad == 1);

    /* Another cache object (another process) reads what this one wrote. */
    disk_cache *d = open_at(root, DISK_CACHE_READ, 1 << 20, 0);
    CHECK(d && load_str(d, "k2", got, sizeof got) == 0 && !strcmp(got, "payload two"));
    /* Read mode stores nothing. */
    store_str(d, "k9", "x");
    CHECK(load_str(d, "k9", got, sizeof got) == 1);
    disk_cache_close(d);

    /* Directories and files are private. */
    struct stat st;
    disk_cache_info info;
    CHECK(disk_cache_get_info(c, &info) == 0);
    CHECK(info.entries == 3 && info.all_entries == 3 && info.versions == 1);
    CHECK(!stat(root, &st) && (st.st_mode & 0777) == 0700);
    CHECK(!stat(info.dir, &st) && (st.st_mode & 0777) == 0700);

    /* Another build (fingerprint) never sees these entries. */
    disk_cache_settings s;
    memset(&s, 0, sizeof s);
    s.mode = DISK_CACHE_WRITE;
    snprintf(s.root, sizeof s.root, "%s", root);
    s.size_limit = 1 << 20;
    s.mpi_size = 1;
    s.build_id = "another-build";
    disk_cache *o = disk_cache_open(&s, NULL, 0);
    CHECK(o && load_str(o, "k1", got, sizeof got) == 1);
    disk_cache_info oi;
    CHECK(o && disk_cache_get_info(o, &oi) == 0 && strcmp(oi.fingerprint, info.fingerprint) &&
          oi.entries == 0 && oi.all_entries == 3 && oi.versions == 2);
    disk_cache_close(o);
    disk_cache_close(c);
}

/* Damages the entry for key "victim" with fn, then expects a bad miss and
 * a clean recovery after storing again. */
static void damaged(const char *what, void (*fn)(const char *path, disk_cache *c)) {
    char root[300], got[64], path[4400];
    fresh_root(root, sizeof root);
    disk_cache *c = open_at(root, DISK_CACHE_WRITE, 1 << 20, 0);
    CHECK(c != NULL);
    if (!c) return;
    store_str(c, "victim", "the right bytes");
    entry_path(c, path, sizeof path);
    fn(path, c);
    uint64_t bad0 = disk_cache_counters(c).bad;
    int r = load_str(c, "victim", got, sizeof got);
    if (r != 1 || disk_cache_counters(c).bad != bad0 + 1)
        fprintf(stderr, "damage '%s' not caught (r=%d)\n", what, r);
    CHECK(r == 1);
    CHECK(disk_cache_counters(c).bad == bad0 + 1);
    /* verify reports it too. */
    size_t checked, nbad;
    disk_cache_entry_info *bad;
    CHECK(disk_cache_verify(c, 0, &checked, &bad, &nbad) == 0 && nbad >= 1);
    free(bad);
    /* The recompile's store replaces it. */
    store_str(c, "victim", "the right bytes");
    CHECK(load_str(c, "victim", got, sizeof got) == 0 && !strcmp(got, "the right bytes"));
    CHECK(disk_cache_verify(c, 0, &checked, &bad, &nbad) == 0 && nbad == 0);
    free(bad);
    disk_cache_close(c);
}

static void truncate_half(const char *path, disk_cache *c) {
    (void)c;
    struct stat st;
    stat(path, &st);
    CHECK(truncate(path, st.st_size / 2) == 0);
}
static void truncate_zero(const char *path, disk_cache *c) {
    (void)c;
    CHECK(truncate(path, 0) == 0);
}
static void truncate_one(const char *path, disk_cache *c) {
    (void)c;
    struct stat st;
    stat(path, &st);
    CHECK(truncate(path, st.st_size - 1) == 0);
}
static void flip_at(const char *path, long where) {
    int fd = open(path, O_RDWR);
    struct stat st;
    fstat(fd, &st);
    off_t at = where >= 0 ? where : st.st_size + where;
    unsigned char b;
    CHECK(pread(fd, &b, 1, at) == 1);
    b ^= 0x20;
    CHECK(pwrite(fd, &b, 1, at) == 1);
    close(fd);
}
static void flip_payload(const char *path, disk_cache *c) { (void)c; flip_at(path, -3); }
static void flip_hash(const char *path, disk_cache *c) { (void)c; flip_at(path, 20); }
static void flip_key(const char *path, disk_cache *c) { (void)c; flip_at(path, 8 + 4 + 32 + 4 + 1); }
static void flip_version(const char *path, disk_cache *c) { (void)c; flip_at(path, 8); }
static void wrong_magic(const char *path, disk_cache *c) { (void)c; flip_at(path, 0); }
static void appended(const char *path, disk_cache *c) {
    (void)c;
    FILE *f = fopen(path, "ab");
    fputs("tail", f);
    fclose(f);
}
/* The victim's name now holds another key's (valid) entry. */
static void renamed(const char *path, disk_cache *c) {
    char other[4500], dir[4400];
    snprintf(dir, sizeof dir, "%s", path);
    *strrchr(dir, '/') = 0;
    store_str(c, "other key", "other bytes");
    disk_cache_entry_info *v;
    size_t n;
    CHECK(disk_cache_list(c, &v, &n) == 0 && n == 2);
    for (size_t i = 0; i < n; i++) {
        snprintf(other, sizeof other, "%s/%s", dir, v[i].name);
        if (strcmp(other, path)) break;
    }
    free(v);
    CHECK(rename(other, path) == 0);
}

static void test_damage(void) {
    damaged("truncated to half", truncate_half);
    damaged("truncated to nothing", truncate_zero);
    damaged("truncated by one byte", truncate_one);
    damaged("payload byte flipped", flip_payload);
    damaged("hash byte flipped", flip_hash);
    damaged("key byte flipped", flip_key);
    damaged("version changed", flip_version);
    damaged("wrong magic", wrong_magic);
    damaged("bytes appended", appended);
    damaged("renamed to another key's name", renamed);
}

/* ---- unsafe directories ----------------------------------------------- */

static int warnings;
static char last_warning[1024];
static void count_warning(const char *msg) {
    warnings++;
    snprintf(last_warning, sizeof last_warning, "%s", msg);
}

static void test_refused(void) {
    char root[300], why[512];
    fresh_root(root, sizeof root);
    CHECK(mkdir(root, 0700) == 0);
    CHECK(chmod(root, 0770) == 0);
    disk_cache_settings s;
    memset(&s, 0, sizeof s);
    s.mode = DISK_CACHE_WRITE;
    snprintf(s.root, sizeof s.root, "%s", root);
    s.mpi_size = 1;
    CHECK(disk_cache_open(&s, why, sizeof why) == NULL && strstr(why, "writable"));
    CHECK(chmod(root, 0702) == 0);
    CHECK(disk_cache_open(&s, why, sizeof why) == NULL && strstr(why, "others"));
    /* A private root with a shared version directory is refused too. */
    CHECK(chmod(root, 0700) == 0);
    disk_cache *c = disk_cache_open(&s, why, sizeof why);
    CHECK(c != NULL);
    disk_cache_info info;
    if (c) {
        disk_cache_get_info(c, &info);
        disk_cache_close(c);
        CHECK(chmod(info.dir, 0775) == 0);
        CHECK(disk_cache_open(&s, why, sizeof why) == NULL && strstr(why, info.dir));
        chmod(info.dir, 0700);
    }
    /* Not a directory. */
    char file[400];
    snprintf(file, sizeof file, "%s/plainfile", base);
    FILE *f = fopen(file, "w");
    fclose(f);
    snprintf(s.root, sizeof s.root, "%s", file);
    CHECK(disk_cache_open(&s, why, sizeof why) == NULL);
    /* Under umask 002 the cache still makes private directories. */
    fresh_root(root, sizeof root);
    snprintf(s.root, sizeof s.root, "%s/deeper/tack", root);
    mode_t old = umask(002);
    c = disk_cache_open(&s, why, sizeof why);
    umask(old);
    CHECK(c != NULL);
    disk_cache_close(c);

    /* The process's cache: refused with exactly one warning, then NULL. */
    fresh_root(root, sizeof root);
    CHECK(mkdir(root, 0700) == 0 && chmod(root, 0777) == 0);
    setenv("TACK_CACHE_DIR", root, 1);
    setenv("TACK_CACHE", "write", 1);
    disk_cache_set_warn(count_warning);
    warnings = 0;
    CHECK(disk_cache_set_host("test") == 0);
    CHECK(disk_cache_current() == NULL);
    CHECK(disk_cache_get() == NULL);
    CHECK(disk_cache_get() == NULL);
    CHECK(warnings == 1 && strstr(last_warning, root));
    if (warnings != 1) fprintf(stderr, "%d warnings, last: %s\n", warnings, last_warning);
    CHECK(disk_cache_set_host("late") == -1);
    /* NULL is a valid cache: every load misses, stores do nothing. */
    void *p;
    size_t len;
    CHECK(disk_cache_load(NULL, "k", 1, &p, &len) == 1 && p == NULL);
    disk_cache_store(NULL, "k", 1, "n", "v", 1);
    disk_cache_set_warn(NULL);
}

/* ---- settings --------------------------------------------------------- */

static void test_settings(void) {
    static const char *const mpi_vars[] = {
        "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "PMI_RANK", "PMI_SIZE", "PMIX_RANK",
        "PMIX_SIZE", "MV2_COMM_WORLD_RANK", "MV2_COMM_WORLD_SIZE", "SLURM_PROCID",
        "SLURM_STEP_NUM_TASKS", "SLURM_NTASKS"};
    for (size_t i = 0; i < sizeof mpi_vars / sizeof *mpi_vars; i++) unsetenv(mpi_vars[i]);
    disk_cache_set_warn(count_warning);
    disk_cache_settings s;
    unsetenv("TACK_CACHE");
    unsetenv("TACK_CACHE_SIZE");
    unsetenv("TACK_CACHE_DIR");
    setenv("XDG_CACHE_HOME", "/xdg", 1);
    disk_cache_settings_from_env(&s);
    CHECK(s.mode == DISK_CACHE_WRITE && s.mpi_size == 1 && s.mpi_rank == 0);
    CHECK(s.size_limit == (uint64_t)1 << 30 && !strcmp(s.root, "/xdg/tack"));
    unsetenv("XDG_CACHE_HOME");
    setenv("HOME", "/home/someone", 1);
    disk_cache_settings_from_env(&s);
    CHECK(!strcmp(s.root, "/home/someone/.cache/tack"));
    struct { const char *text; uint64_t want; } sizes[] = {
        {"4096", 4096}, {"100K", 100 << 10}, {"512M", (uint64_t)512 << 20},
        {"2G", (uint64_t)2 << 30}, {"3g", (uint64_t)3 << 30}, {"1GiB", (uint64_t)1 << 30},
        {"64MB", (uint64_t)64 << 20}};
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
        setenv("TACK_CACHE_SIZE", sizes[i].text, 1);
        disk_cache_settings_from_env(&s);
        CHECK(s.size_limit == sizes[i].want);
    }
    int w0 = warnings;
    setenv("TACK_CACHE_SIZE", "lots", 1);
    disk_cache_settings_from_env(&s);
    CHECK(s.size_limit == (uint64_t)1 << 30 && warnings == w0 + 1);
    setenv("TACK_CACHE_SIZE", "99999999999999999999G", 1);
    disk_cache_settings_from_env(&s);
    CHECK(s.size_limit == (uint64_t)1 << 30 && warnings == w0 + 2);
    unsetenv("TACK_CACHE_SIZE");
    const char *modes[] = {"off", "read", "write", "bundle"};
    for (int m = 0; m < 4; m++) {
        setenv("TACK_CACHE", modes[m], 1);
        disk_cache_settings_from_env(&s);
        CHECK((int)s.mode == m);
    }
    setenv("TACK_CACHE", "sometimes", 1);
    disk_cache_settings_from_env(&s);
    CHECK(s.mode == DISK_CACHE_WRITE && warnings == w0 + 3);
    unsetenv("TACK_CACHE");
    /* MPI: a rank variable with a world size above one means bundle. */
    setenv("OMPI_COMM_WORLD_RANK", "3", 1);
    setenv("OMPI_COMM_WORLD_SIZE", "4", 1);
    disk_cache_settings_from_env(&s);
    CHECK(s.mode == DISK_CACHE_BUNDLE && s.mpi_rank == 3 && s.mpi_size == 4);
    setenv("OMPI_COMM_WORLD_SIZE", "1", 1);
    disk_cache_settings_from_env(&s);
    CHECK(s.mode == DISK_CACHE_WRITE && s.mpi_size == 1);
    unsetenv("OMPI_COMM_WORLD_RANK");
    unsetenv("OMPI_COMM_WORLD_SIZE");
    setenv("PMI_RANK", "0", 1);
    setenv("PMI_SIZE", "2", 1);
    setenv("TACK_CACHE", "write", 1); /* explicit beats the MPI default */
    disk_cache_settings_from_env(&s);
    CHECK(s.mode == DISK_CACHE_WRITE && s.mpi_rank == 0 && s.mpi_size == 2);
    unsetenv("PMI_RANK");
    unsetenv("PMI_SIZE");
    setenv("SLURM_PROCID", "1", 1);
    setenv("SLURM_NTASKS", "8", 1);
    disk_cache_settings_from_env(&s);
    CHECK(s.mpi_rank == 1 && s.mpi_size == 8);
    unsetenv("SLURM_PROCID");
    unsetenv("SLURM_NTASKS");
    unsetenv("TACK_CACHE");
    setenv("TACK_CACHE_NOW", "123456", 1);
    disk_cache_settings_from_env(&s);
    CHECK(s.now == 123456);
    unsetenv("TACK_CACHE_NOW");
    disk_cache_set_warn(NULL);
}

static void test_mpi_store(void) {
    char root[300], got[16];
    fresh_root(root, sizeof root);
    disk_cache_settings s;
    memset(&s, 0, sizeof s);
    s.mode = DISK_CACHE_WRITE;
    snprintf(s.root, sizeof s.root, "%s", root);
    s.size_limit = 1 << 20;
    s.mpi_rank = 2;
    s.mpi_size = 4;
    disk_cache *r2 = disk_cache_open(&s, NULL, 0);
    s.mpi_rank = 0;
    disk_cache *r0 = disk_cache_open(&s, NULL, 0);
    CHECK(r0 && r2);
    if (!r0 || !r2) return;
    store_str(r2, "from rank 2", "x");
    CHECK(load_str(r0, "from rank 2", got, sizeof got) == 1);
    store_str(r0, "from rank 0", "y");
    CHECK(load_str(r2, "from rank 0", got, sizeof got) == 0 && !strcmp(got, "y"));
    disk_cache_close(r0);
    disk_cache_close(r2);
}

/* ---- the size limit --------------------------------------------------- */

static int present(disk_cache *c, int i) {
    char key[32];
    void *p;
    size_t len;
    snprintf(key, sizeof key, "entry %d", i);
    int r = disk_cache_load(c, key, strlen(key), &p, &len);
    if (!r) free(p);
    return !r;
}

static void test_size_limit(void) {
    char root[300], key[32];
    char payload[1000];
    memset(payload, 'p', sizeof payload);
    fresh_root(root, sizeof root);
    const int64_t t0 = 1000000;
    /* Room for about ten 1.1 KB entries. */
    disk_cache *c = open_at(root, DISK_CACHE_WRITE, 11000, t0);
    CHECK(c != NULL);
    if (!c) return;
    for (int i = 0; i < 20; i++) {
        disk_cache_set_now(c, t0 + i);
        snprintf(key, sizeof key, "entry %d", i);
        disk_cache_store(c, key, strlen(key), "k", payload, sizeof payload);
    }
    /* Scanned once at the first store; not again within the hour. */
    disk_cache_info info;
    disk_cache_get_info(c, &info);
    CHECK(info.entries == 20);
    uint64_t each = info.bytes / 20;
    /* An old entry read after an hour becomes recently used; a read
     * within the hour does not touch it. */
    disk_cache_set_now(c, t0 + 100);
    CHECK(present(c, 2));
    disk_cache_set_now(c, t0 + 2 * 3600);
    CHECK(present(c, 3));
    /* A store past the hour scans and prunes to 90% by age. */
    disk_cache_set_now(c, t0 + 2 * 3600 + 1);
    disk_cache_store(c, "entry 20", 8, "k", payload, sizeof payload);
    disk_cache_get_info(c, &info);
    uint64_t keep = 11000 * 9 / 10;
    CHECK(info.bytes <= keep && info.bytes + each > keep);
    CHECK(info.entries == keep / each);
    /* The survivors: the refreshed entry 3 and the newest ones. */
    CHECK(present(c, 3));
    CHECK(!present(c, 2) && !present(c, 0) && !present(c, 4));
    CHECK(present(c, 19) && present(c, 20));
    /* More stores within the hour: over the limit, but no scan. */
    for (int i = 21; i < 30; i++) {
        disk_cache_set_now(c, t0 + 2 * 3600 + i);
        snprintf(key, sizeof key, "entry %d", i);
        disk_cache_store(c, key, strlen(key), "k", payload, sizeof payload);
    }
    disk_cache_get_info(c, &info);
    CHECK(info.bytes > 11000);
    /* Another process an hour later prunes (the mark is shared). */
    disk_cache *d = open_at(root, DISK_CACHE_WRITE, 11000, t0 + 3 * 3600 + 100);
    store_str(d, "fresh", "f");
    disk_cache_get_info(c, &info);
    CHECK(info.bytes <= keep);
    /* Bundles are neither counted nor deleted. */
    size_t nb;
    uint64_t bb;
    CHECK(disk_cache_bundle(d, &nb, &bb) == 0 && nb > 0);
    uint64_t removed, freed;
    CHECK(disk_cache_prune(d, &removed, &freed) == 0 && removed == 0);
    disk_cache_get_info(c, &info);
    CHECK(info.has_bundle && info.bytes <= keep);
    /* Forced prune with a smaller limit: explicit prune ignores the hour. */
    disk_cache_close(d);
    d = open_at(root, DISK_CACHE_WRITE, 3000, t0 + 3 * 3600 + 200);
    CHECK(disk_cache_prune(d, &removed, &freed) == 0 && removed > 0 && freed > 0);
    disk_cache_get_info(d, &info);
    CHECK(info.bytes <= 2700 && info.has_bundle);
    /* A temporary file a dead writer left an hour ago goes too. */
    char tmp[4400];
    snprintf(tmp, sizeof tmp, "%s/.tmp-deadbeef-XXXXXX", info.dir);
    int fd = mkstemp(tmp);
    close(fd);
    struct timespec ts[2] = {{t0, 0}, {t0, 0}};
    utimensat(AT_FDCWD, tmp, ts, 0);
    CHECK(disk_cache_prune(d, &removed, &freed) == 0 && removed == 1);
    CHECK(access(tmp, F_OK) != 0);
    disk_cache_close(d);
    disk_cache_close(c);
}

/* ---- bundles and administration --------------------------------------- */

static void test_bundle(void) {
    char root[300], got[64], key[32], val[32];
    fresh_root(root, sizeof root);
    disk_cache *w = open_at(root, DISK_CACHE_WRITE, 1 << 20, 0);
    CHECK(w != NULL);
    if (!w) return;
    for (int i = 0; i < 10; i++) {
        snprintf(key, sizeof key, "bk %d", i);
        snprintf(val, sizeof val, "bv %d", i);
        store_str(w, key, val);
    }
    size_t n;
    uint64_t bytes;
    CHECK(disk_cache_bundle(w, &n, &bytes) == 0 && n == 10 && bytes > 0);
    /* The per-kernel entries go: bundle mode must not need them. */
    uint64_t removed;
    disk_cache_info info;
    disk_cache_get_info(w, &info);
    disk_cache_entry_info *v;
    size_t nv;
    CHECK(disk_cache_list(w, &v, &nv) == 0 && nv == 10);
    for (size_t i = 0; i < nv; i++) {
        char p[4400];
        snprintf(p, sizeof p, "%s/%s", info.dir, v[i].name);
        CHECK(!strcmp(v[i].kernel, "kern") && v[i].size > 0 && !v[i].bad);
        unlink(p);
    }
    free(v);
    disk_cache *b = open_at(root, DISK_CACHE_BUNDLE, 1 << 20, 0);
    CHECK(b != NULL);
    for (int i = 0; b && i < 10; i++) {
        snprintf(key, sizeof key, "bk %d", i);
        snprintf(val, sizeof val, "bv %d", i);
        CHECK(load_str(b, key, got, sizeof got) == 0 && !strcmp(got, val));
    }
    CHECK(load_str(b, "not there", got, sizeof got) == 1);
    /* Bundle mode writes no per-kernel file. */
    store_str(b, "bk new", "v");
    disk_cache_get_info(b, &info);
    CHECK(info.entries == 0);
    /* Read once: a bundle replaced later is not seen by this process. */
    CHECK(disk_cache_bundle(w, &n, &bytes) == 0 && n == 0);
    CHECK(load_str(b, "bk 4", got, sizeof got) == 0);
    /* Installed too late. */
    CHECK(disk_cache_bundle_install(b, "x", 1) == -1);
    disk_cache_close(b);

    /* load_bundle(comm): bytes read by one, installed by others. */
    for (int i = 0; i < 3; i++) {
        snprintf(key, sizeof key, "bk %d", i);
        store_str(w, key, "again");
    }
    CHECK(disk_cache_bundle(w, &n, &bytes) == 0 && n == 3);
    void *bb;
    size_t blen;
    CHECK(disk_cache_bundle_read(w, &bb, &blen) == 0 && blen == bytes);
    disk_cache *r = open_at(root, DISK_CACHE_BUNDLE, 1 << 20, 0);
    CHECK(disk_cache_bundle_install(r, bb, blen) == 3);
    CHECK(disk_cache_bundle_install(r, bb, blen) == -1);
    CHECK(load_str(r, "bk 1", got, sizeof got) == 0 && !strcmp(got, "again"));
    disk_cache_close(r);
    /* A damaged record: counted bad, the others still served. */
    ((unsigned char *)bb)[blen - 2] ^= 1;
    r = open_at(root, DISK_CACHE_BUNDLE, 1 << 20, 0);
    CHECK(disk_cache_bundle_install(r, bb, blen) == 2);
    CHECK(disk_cache_counters(r).bad == 1);
    disk_cache_close(r);
    /* Not a bundle at all. */
    r = open_at(root, DISK_CACHE_BUNDLE, 1 << 20, 0);
    CHECK(disk_cache_bundle_install(r, "garbage!garbage!", 16) == -1);
    disk_cache_close(r);
    /* The same damage on disk: verify finds it and can delete it. */
    disk_cache_get_info(w, &info);
    char bpath[4400];
    snprintf(bpath, sizeof bpath, "%s/bundle.tack", info.dir);
    FILE *f = fopen(bpath, "wb");
    fwrite(bb, 1, blen, f);
    fclose(f);
    free(bb);
    size_t checked, nbad;
    disk_cache_entry_info *bad;
    CHECK(disk_cache_verify(w, 1, &checked, &bad, &nbad) == 0 && nbad == 1 &&
          !strcmp(bad[0].name, "bundle.tack"));
    free(bad);
    CHECK(access(bpath, F_OK) != 0);
    /* clear removes everything the cache names, and only that. */
    char keepme[4400];
    snprintf(keepme, sizeof keepme, "%s/notes.txt", info.dir);
    f = fopen(keepme, "w");
    fclose(f);
    CHECK(disk_cache_clear(w, &removed) == 0 && removed == 3);
    CHECK(access(keepme, F_OK) == 0);
    disk_cache_get_info(w, &info);
    CHECK(info.all_entries == 0 && !info.has_bundle);
    CHECK(load_str(w, "bk 1", got, sizeof got) == 1);
    store_str(w, "after clear", "ok");
    CHECK(load_str(w, "after clear", got, sizeof got) == 0);
    disk_cache_close(w);
}

/* ---- the IR's binary form --------------------------------------------- */

static const char *const KERNELS[] = {
    "@tack.kernel\n"
    "def scale(x, out, a):\n"
    "    for i in range(x.shape[0]):\n"
    "        out[i] = x[i] * a\n",

    "@tack.kernel\n"
    "def mixed(x, y, out, n):\n"
    "    for i in range(1, x.shape[0] - 1, 2):\n"
    "        s = 0.0\n"
    "        j = 0\n"
    "        while j < n:\n"
    "            if j % 3 == 0 and not (x[i] > 2.5 or y[i] < -1):\n"
    "                s += math.sqrt(abs(x[i - 1])) + min(x[i], y[i], 4.0)\n"
    "            elif j > 100:\n"
    "                break\n"
    "            else:\n"
    "                s -= 1 if x[i] > 0 else 2\n"
    "            j += 1\n"
    "        out[i] = s * 1e-3 + float(n >> 1) + (x[i] ** 2)\n",

    "@tack.kernel\n"
    "def grid(a, out):\n"
    "    for i, j in tack.ndindex(a.shape[0], a.shape[1]):\n"
    "        t = a[i, j]\n"
    "        for k in range(3):\n"
    "            if k == 1:\n"
    "                continue\n"
    "            t = t + k\n"
    "        out[i, j] = t\n",

    "@tack.kernel\n"
    "def counts(x, hist):\n"
    "    for i in range(x.shape[0]):\n"
    "        tack.atomic_add(hist, x[i] % 4, 1)\n",

    "@tack.kernel\n"
    "def calls(x, out):\n"
    "    for i in range(x.shape[0]):\n"
    "        out[i] = sq(x[i]) + sq(2.0)\n",
};

/* Resolves `sq` to a device function; everything else by default. */
static int resolve_sq(void *ctx, const char *name, tack_name *out) {
    (void)ctx;
    if (!strcmp(name, "sq")) {
        memset(out, 0, sizeof *out);
        out->kind = TACK_NAME_FUNC;
        out->text = "@tack.func\ndef sq(v):\n    if v < 0:\n        return -v * v\n    return v * v\n";
        out->filename = "dev.py";
        out->first_line = 7;
        return 0;
    }
    return lower_default_resolve(name, out);
}

static ir_func *lower_src(const char *text, arena *a) {
    static src_info src;
    src = (src_info){text, "test_disk_cache.py", 1, NULL, 0};
    func_def *def;
    tack_error err;
    memset(&err, 0, sizeof err);
    if (parse_function(&src, a, &def, &err) != TACK_OK) {
        fprintf(stderr, "parse: %s\n", err.message);
        return NULL;
    }
    src.kernel_name = def->name;
    lower_input in = {.src = &src, .def = def, .resolver = resolve_sq, .resolver_ctx = NULL};
    ir_func *f = NULL;
    if (lower_kernel(&in, &f, &err) != TACK_OK) {
        fprintf(stderr, "lower: %s\n", err.message);
        return NULL;
    }
    return f;
}

/* A variant's post-pass IR: every array f32 with the given dims, scalars
 * i64. */
static ir_func *typed_copy(const ir_func *t) {
    ir_func *f = ir_clone(t);
    if (!f) return NULL;
    int64_t dims[TACK_MAX_PARAMS][TACK_MAX_NDIM];
    for (int p = 0; p < TACK_MAX_PARAMS; p++)
        for (int d = 0; d < TACK_MAX_NDIM; d++) dims[p][d] = 8;
    for (int i = 0; i < f->nparams; i++)
        f->params[i].type = f->params[i].role == ROLE_ARRAY ? TACK_F32 : TACK_I64;
    /* An atomic histogram of counts wants an integer array. */
    if (!strcmp(f->name, "counts")) f->params[0].type = f->params[1].type = TACK_I32;
    f->default_float = TACK_F32;
    f->disjoint = 1;
    tack_error err;
    memset(&err, 0, sizeof err);
    if (pass_resolve_dims(f, (const int64_t(*)[TACK_MAX_NDIM])dims, NULL, &err) ||
        pass_infer_types(f, &err) || ir_verify(f, "infer", 1, &err)) {
        fprintf(stderr, "passes on %s: %s\n", t->name, err.message);
        ir_func_free(f);
        return NULL;
    }
    return f;
}

static int same_ir(const ir_func *a, const ir_func *b) {
    char *pa = ir_print(a), *pb = ir_print(b);
    int same = pa && pb && !strcmp(pa, pb);
    if (!same) fprintf(stderr, "IR differs:\n%s\n---\n%s\n", pa ? pa : "?", pb ? pb : "?");
    free(pa);
    free(pb);
    return same;
}

/* Debug mode's bounds pass appends two hidden arrays to a template.  A
 * clone or a read-back function holds exactly its own parameters, so the
 * pass must grow the array, not write past it (the fuzzer found that). */
static void check_bounds_on_copy(const ir_func *f, ir_func *copy) {
    int n = copy->nparams;
    tack_error err;
    memset(&err, 0, sizeof err);
    tack_status st = pass_bounds_checks(copy, &err);
    if (st) fprintf(stderr, "bounds on a copy of %s: %s\n", f->name, err.message);
    CHECK(st == TACK_OK && copy->nparams == n + 2);
    if (st || copy->nparams != n + 2) return;
    CHECK(!strcmp(copy->params[n].name, "__errors__") &&
          !strcmp(copy->params[n + 1].name, "__extents__"));
    for (int i = 0; i < n; i++) CHECK(!strcmp(copy->params[i].name, f->params[i].name));
    for (int i = 0; i < f->nlocals; i++) CHECK(!strcmp(copy->locals[i].name, f->locals[i].name));
}

/* Serializes f, reads it back, and checks the result prints the same and
 * serializes to the same bytes; returns the bytes (for fuzzing). */
static ser_writer roundtrip(const ir_func *f, int typed) {
    ser_writer w = {0};
    ir_serialize(f, &w);
    CHECK(!w.failed && w.len > 0);
    ser_reader r = ser_reader_init(w.data, w.len);
    ir_func *g = NULL;
    tack_error err;
    memset(&err, 0, sizeof err);
    tack_status st = ir_deserialize(&r, typed, &g, &err);
    if (st) fprintf(stderr, "deserialize %s: %s\n", f->name, err.message);
    CHECK(st == TACK_OK && g != NULL && ser_left(&r) == 0);
    if (g) {
        CHECK(same_ir(f, g));
        CHECK(g->nsources == f->nsources && g->ninlines == f->ninlines);
        CHECK(g->first_line == f->first_line && g->loop_var == f->loop_var);
        CHECK(!strcmp(g->source ? g->source : "", f->source ? f->source : ""));
        ser_writer w2 = {0};
        ir_serialize(g, &w2);
        CHECK(w2.len == w.len && !memcmp(w2.data, w.data, w.len));
        ser_writer_free(&w2);
        /* The copy is a working IR function: it clones and grows. */
        ir_func *h = ir_clone(g);
        CHECK(h && ir_local_add(h, "fresh_local") == g->nlocals);
        ir_func_free(h);
        if (!typed) {
            h = ir_clone(f);
            CHECK(h != NULL);
            if (h) check_bounds_on_copy(f, h);
            ir_func_free(h);
            check_bounds_on_copy(f, g);
        }
        ir_func_free(g);
    }
    return w;
}

static uint32_t rng = 12345;
static uint32_t next_rand(void) {
    rng ^= rng << 13;
    rng ^= rng >> 17;
    rng ^= rng << 5;
    return rng;
}

/* Damaged bytes must give an error or a verified function, never a crash. */
static void fuzz(const ser_writer *w, int typed) {
    tack_error err;
    ir_func *g;
    int ok_truncations = 0;
    for (size_t n = 0; n < w->len; n++) {
        ser_reader r = ser_reader_init(w->data, n);
        if (ir_deserialize(&r, typed, &g, &err) == TACK_OK) {
            ok_truncations++;
            ir_func_free(g);
        }
    }
    CHECK(ok_truncations == 0);
    unsigned char *b = malloc(w->len);
    static const unsigned char masks[] = {0x01, 0x80, 0xff, 0x10};
    for (size_t i = 0; i < w->len; i++) {
        for (size_t m = 0; m < sizeof masks; m++) {
            memcpy(b, w->data, w->len);
            b[i] ^= masks[m];
            ser_reader r = ser_reader_init(b, w->len);
            if (ir_deserialize(&r, typed, &g, &err) == TACK_OK) ir_func_free(g);
        }
    }
    for (int round = 0; round < 2000; round++) {
        memcpy(b, w->data, w->len);
        int nflips = 1 + (int)(next_rand() % 8);
        for (int k = 0; k < nflips; k++) b[next_rand() % w->len] = (unsigned char)next_rand();
        size_t len = next_rand() % 4 ? w->len : next_rand() % w->len;
        ser_reader r = ser_reader_init(b, len);
        if (ir_deserialize(&r, typed, &g, &err) == TACK_OK) ir_func_free(g);
    }
    free(b);
}

static void test_ir(void) {
    for (size_t k = 0; k < sizeof KERNELS / sizeof *KERNELS; k++) {
        arena a;
        arena_init(&a);
        ir_func *f = lower_src(KERNELS[k], &a);
        CHECK(f != NULL);
        if (f) {
            ser_writer w = roundtrip(f, 0);
            fuzz(&w, 0);
            ser_writer_free(&w);
            ir_func *t = typed_copy(f);
            CHECK(t != NULL);
            if (t) {
                w = roundtrip(t, 1);
                fuzz(&w, 1);
                ser_writer_free(&w);
                /* Typed data read as a template is fine; a template read as
                 * typed IR is refused by the verifier. */
                ser_writer u = {0};
                ir_serialize(f, &u);
                ser_reader r = ser_reader_init(u.data, u.len);
                ir_func *g;
                tack_error err;
                CHECK(ir_deserialize(&r, 1, &g, &err) == TACK_ERR_INTERNAL && !g);
                ser_writer_free(&u);
                ir_func_free(t);
            }
            ir_func_free(f);
        }
        arena_free(&a);
    }
}

/* A nesting far deeper than any kernel: refused, not a stack overflow. */
static void test_ir_deep(void) {
    ser_writer w = {0};
    ser_put_u32(&w, 0x52495454u);
    ser_put_u32(&w, IR_FORMAT_VERSION);
    ser_put_u32(&w, 0); /* sources */
    ser_put_u32(&w, 0); /* ninlines */
    ser_put_u32(&w, 0); /* cur_src */
    ser_put_str(&w, "deep");
    ser_put_str(&w, NULL);
    ser_put_u32(&w, 1);
    ser_put_str(&w, NULL);
    ser_put_u32(&w, 0); /* params */
    ser_put_u32(&w, 0); /* locals */
    ser_put_u32(&w, 0); /* loop var */
    for (int i = 0; i < 200000; i++) {
        ser_put_u8(&w, 1);
        ser_put_u32(&w, IR_UNOP);
        ser_put_u32(&w, (uint32_t)IRT_UNSET);
        for (int k = 0; k < 7; k++) ser_put_u32(&w, 0);
        ser_put_i64(&w, 0);
        ser_put_f64(&w, 0);
    }
    ser_reader r = ser_reader_init(w.data, w.len);
    ir_func *g;
    tack_error err;
    CHECK(ir_deserialize(&r, 0, &g, &err) == TACK_ERR_INTERNAL && !g);
    ser_writer_free(&w);

    /* Byte helpers: bounds and values. */
    ser_writer b = {0};
    ser_put_u32(&b, 0xdeadbeef);
    ser_put_i64(&b, -5);
    ser_put_str(&b, "");
    ser_put_str(&b, NULL);
    ser_put_blob(&b, "abc", 3);
    ser_put_f64(&b, -0.0);
    ser_reader q = ser_reader_init(b.data, b.len);
    CHECK(ser_get_u32(&q) == 0xdeadbeef && ser_get_i64(&q) == -5);
    size_t n;
    int is_null;
    CHECK(ser_get_str(&q, &n, &is_null) != NULL && n == 0 && !is_null);
    CHECK(ser_get_str(&q, &n, &is_null) == NULL && is_null && !q.failed);
    const char *blob = ser_get_blob(&q, &n);
    CHECK(blob && n == 3 && !memcmp(blob, "abc", 3));
    double z = ser_get_f64(&q);
    CHECK(z == 0 && 1 / z < 0 && ser_left(&q) == 0 && !q.failed);
    CHECK(ser_get_u8(&q) == 0 && q.failed && ser_left(&q) == 0);
    ser_reader q2 = ser_reader_init(b.data, 2);
    CHECK(ser_get_u32(&q2) == 0 && q2.failed);
    ser_writer_free(&b);
}

/* ---- a variant-sized entry through the cache ------------------------- */

static void test_ir_entry(void) {
    char root[300];
    fresh_root(root, sizeof root);
    disk_cache *c = open_at(root, DISK_CACHE_WRITE, 1 << 20, 0);
    arena a;
    arena_init(&a);
    ir_func *f = lower_src(KERNELS[1], &a);
    CHECK(c && f);
    if (c && f) {
        /* The payload the runtime would pack: IR, a fact, object bytes. */
        ser_writer p = {0};
        ir_serialize(f, &p);
        ser_put_u32(&p, 1);
        ser_put_blob(&p, "\x7f" "ELF....", 8);
        ser_writer key = {0};
        ser_put_str(&key, "variant");
        ser_put_str(&key, f->source);
        disk_cache_store(c, key.data, key.len, f->name, p.data, p.len);
        void *got;
        size_t len;
        CHECK(disk_cache_load(c, key.data, key.len, &got, &len) == 0 && len == p.len);
        ser_reader r = ser_reader_init(got, len);
        ir_func *g;
        tack_error err;
        CHECK(ir_deserialize(&r, 0, &g, &err) == TACK_OK);
        CHECK(ser_get_u32(&r) == 1);
        size_t n;
        const void *obj = ser_get_blob(&r, &n);
        CHECK(obj && n == 8 && ser_left(&r) == 0 && !r.failed);
        if (g) {
            CHECK(same_ir(f, g));
            ir_func_free(g);
        }
        free(got);
        disk_cache_entry_info *v;
        size_t nv;
        CHECK(disk_cache_list(c, &v, &nv) == 0 && nv == 1 && !strcmp(v[0].kernel, "mixed"));
        free(v);
        ser_writer_free(&p);
        ser_writer_free(&key);
    }
    ir_func_free(f);
    arena_free(&a);
    disk_cache_close(c);
}

/* ---- many writers ----------------------------------------------------- */

/* Eight processes started together on an empty cache store and load the
 * same twenty keys: every load that hits has the right bytes, and no
 * entry is bad afterwards. */
static void test_processes(void) {
    char root[300];
    fresh_root(root, sizeof root);
    disk_cache *c = open_at(root, DISK_CACHE_WRITE, 1 << 20, 0);
    CHECK(c != NULL);
    if (!c) return;
    pid_t kids[8];
    for (int k = 0; k < 8; k++) {
        kids[k] = fork();
        if (kids[k] == 0) {
            disk_cache *d = open_at(root, DISK_CACHE_WRITE, 1 << 20, 0);
            int wrong = !d;
            char key[32], want[512], got[512];
            for (int round = 0; round < 5 && d; round++)
                for (int i = 0; i < 20; i++) {
                    snprintf(key, sizeof key, "kernel %d", i);
                    snprintf(want, sizeof want, "code of kernel %d, %0400d", i, i);
                    if (load_str(d, key, got, sizeof got) == 0) {
                        wrong |= strcmp(got, want) != 0;
                    } else {
                        store_str(d, key, want);
                    }
                }
            wrong |= d && disk_cache_counters(d).bad != 0;
            disk_cache_close(d);
            _exit(wrong);
        }
    }
    int all_ok = 1;
    for (int k = 0; k < 8; k++) {
        int status = 1;
        if (kids[k] < 0 || waitpid(kids[k], &status, 0) != kids[k]) all_ok = 0;
        else all_ok &= WIFEXITED(status) && WEXITSTATUS(status) == 0;
    }
    CHECK(all_ok);
    size_t checked, nbad;
    disk_cache_entry_info *bad;
    CHECK(disk_cache_verify(c, 0, &checked, &bad, &nbad) == 0 && checked == 20 && nbad == 0);
    free(bad);
    disk_cache_info info;
    disk_cache_get_info(c, &info);
    CHECK(info.entries == 20);
    disk_cache_close(c);
}

/* Threads of one process share a cache object; the first bundle-mode
 * load reads the bundle exactly once while the others wait for it. */
typedef struct thread_arg {
    disk_cache *c;
    int ok;
} thread_arg;

static void *thread_body(void *p) {
    thread_arg *t = p;
    char key[32], want[32], got[64];
    t->ok = 1;
    for (int round = 0; round < 50; round++)
        for (int i = 0; i < 10; i++) {
            snprintf(key, sizeof key, "tk %d", i);
            snprintf(want, sizeof want, "tv %d", i);
            t->ok &= load_str(t->c, key, got, sizeof got) == 0 && !strcmp(got, want);
        }
    return NULL;
}

static void test_threads(void) {
    char root[300], key[32], val[32];
    fresh_root(root, sizeof root);
    disk_cache *w = open_at(root, DISK_CACHE_WRITE, 1 << 20, 0);
    for (int i = 0; w && i < 10; i++) {
        snprintf(key, sizeof key, "tk %d", i);
        snprintf(val, sizeof val, "tv %d", i);
        store_str(w, key, val);
    }
    size_t n;
    uint64_t bytes;
    CHECK(w && disk_cache_bundle(w, &n, &bytes) == 0 && n == 10);
    for (int mode = 0; mode < 2; mode++) {
        disk_cache *c = open_at(root, mode ? DISK_CACHE_BUNDLE : DISK_CACHE_WRITE, 1 << 20, 0);
        pthread_t th[8];
        thread_arg args[8];
        for (int i = 0; i < 8; i++) {
            args[i].c = c;
            pthread_create(&th[i], NULL, thread_body, &args[i]);
        }
        int ok = 1;
        for (int i = 0; i < 8; i++) {
            pthread_join(th[i], NULL);
            ok &= args[i].ok;
        }
        CHECK(ok);
        disk_cache_counts k = disk_cache_counters(c);
        CHECK(k.hits == 8 * 50 * 10 && k.misses == 0 && k.bad == 0);
        disk_cache_close(c);
    }
    disk_cache_close(w);
}

static void remove_tree(const char *path) {
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", path);
    if (system(cmd)) fprintf(stderr, "could not remove %s\n", path);
}

int main(void) {
    snprintf(base, sizeof base, "%s/tack-dc-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(base)) {
        perror("mkdtemp");
        return 1;
    }
    test_roundtrip();
    test_damage();
    test_settings();
    test_mpi_store();
    test_size_limit();
    test_bundle();
    test_ir();
    test_ir_deep();
    test_ir_entry();
    test_processes();
    test_threads();
    test_refused(); /* last: it opens the process's cache for good */
    remove_tree(base);
    return CHECK_DONE();
}
