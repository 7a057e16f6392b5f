/* replay.c - runs a fuzz target over files without libFuzzer, so that the
 * seed corpora and the inputs of past findings are replayed by every
 * build's ctest (plain and ASan+UBSan), compiler aside.
 *
 * Usage: fuzz_<name>_replay PATH...  (a file, or a directory of files).
 * A target that finds a bug aborts; so a clean exit means every input
 * passed. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        perror(path);
        return -1;
    }
    size_t cap = 4096, n = 0;
    uint8_t *b = malloc(cap);
    size_t got;
    while (b && (got = fread(b + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap) {
            uint8_t *nb = realloc(b, cap *= 2);
            if (!nb) free(b);
            b = nb;
        }
    }
    fclose(f);
    if (!b) return -1;
    /* An exactly sized copy, as libFuzzer passes: ASan then sees overreads. */
    uint8_t *exact = malloc(n ? n : 1);
    if (!exact) {
        free(b);
        return -1;
    }
    memcpy(exact, b, n);
    free(b);
    LLVMFuzzerTestOneInput(exact, n);
    free(exact);
    return 0;
}

static int cmp(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int run_path(const char *path, int *count) {
    struct stat st;
    if (stat(path, &st)) {
        perror(path);
        return -1;
    }
    if (!S_ISDIR(st.st_mode)) {
        ++*count;
        return run_file(path);
    }
    DIR *d = opendir(path);
    if (!d) {
        perror(path);
        return -1;
    }
    char **names = NULL;
    size_t n = 0;
    int rc = 0;
    for (struct dirent *e; (e = readdir(d));) {
        if (e->d_name[0] == '.') continue;
        char **nn = realloc(names, (n + 1) * sizeof *names);
        if (!nn) {
            rc = -1;
            break;
        }
        names = nn;
        size_t len = strlen(path) + strlen(e->d_name) + 2;
        if (!(names[n] = malloc(len))) {
            rc = -1;
            break;
        }
        snprintf(names[n++], len, "%s/%s", path, e->d_name);
    }
    closedir(d);
    qsort(names, n, sizeof *names, cmp);
    for (size_t i = 0; i < n; i++) {
        if (!rc) rc = run_path(names[i], count);
        free(names[i]);
    }
    free(names);
    return rc;
}

int main(int argc, char **argv) {
    LLVMFuzzerInitialize(&argc, &argv);
    int count = 0;
    for (int i = 1; i < argc; i++)
        if (run_path(argv[i], &count)) return 1;
    printf("replayed %d inputs\n", count);
    return count > 0 ? 0 : 1; /* an empty corpus would test nothing */
}
