/* test_print.c - print() through the C API: the line a launch writes to
 * stdout (read back through a temporary file on descriptor 1), flushed
 * before the launch returns, and the before-print hook, called once per
 * launch of a printing kernel and never for one that does not print. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "tack.h"

static int hook_calls;
static void count_hook(void) { hook_calls++; }

/* Runs the launch with descriptor 1 on a temporary file; what it wrote,
 * malloc'd (NULL on a failed launch). */
static char *captured_launch(tack_kernel *k, tack_device *dev, const tack_arg *a, int n) {
    fflush(stdout);
    FILE *tmp = tmpfile();
    int saved = dup(1);
    if (!tmp || saved < 0) return NULL;
    dup2(fileno(tmp), 1);
    tack_error err;
    tack_status st = tack_kernel_launch(k, dev, a, n, &err);
    /* Nothing flushes here: the launch must have. */
    dup2(saved, 1);
    close(saved);
    if (st != TACK_OK) {
        fprintf(stderr, "launch failed: %s\n", err.message);
        fclose(tmp);
        return NULL;
    }
    off_t size = lseek(fileno(tmp), 0, SEEK_END); /* fd 1 shared its offset */
    char *text = size >= 0 ? calloc(1, (size_t)size + 1) : NULL;
    if (text && pread(fileno(tmp), text, (size_t)size, 0) != size) text[0] = 0;
    fclose(tmp);
    return text;
}

int main(void) {
    tack_error err;
    tack_device *dev = tack_device_create("cpu", 2, &err);
    CHECK(dev != NULL);
    if (!dev) return CHECK_DONE();
    tack_set_before_print(count_hook);
    const char *src = "def show(x, n):\n"
                      "    for i in range(x.shape[0]):\n"
                      "        print('n%', n, x[i], x[i] > 0, 0.5, sep='|')\n";
    tack_kernel *k = tack_kernel_create(src, "test_print.py", 1, NULL, NULL, &err);
    CHECK(k != NULL);
    if (!k) {
        fprintf(stderr, "%s\n", err.message);
        return CHECK_DONE();
    }
    int64_t x[2] = {INT64_MIN, 5}, len = 2;
    tack_arg a[2] = {tack_arg_array(x, TACK_I64, 1, &len, 0), tack_arg_uint(UINT64_MAX)};
    for (int round = 0; round < 2; round++) { /* compiled, then warm */
        char *out = captured_launch(k, dev, a, 2);
        CHECK(out != NULL);
        const char *one = "n%|18446744073709551615|-9223372036854775808|False|0.5\n";
        const char *two = "n%|18446744073709551615|5|True|0.5\n";
        if (out) {
            /* Two whole lines, in either order. */
            CHECK(strlen(out) == strlen(one) + strlen(two));
            CHECK(strstr(out, one) != NULL);
            CHECK(strstr(out, two) != NULL);
        }
        free(out);
        CHECK(hook_calls == round + 1);
    }

    /* A kernel that does not print calls no hook. */
    const char *quiet = "def quiet(x):\n"
                        "    for i in range(x.shape[0]):\n"
                        "        x[i] = x[i] + 1\n";
    tack_kernel *q = tack_kernel_create(quiet, "test_print.py", 1, NULL, NULL, &err);
    CHECK(q != NULL);
    a[0] = tack_arg_array(x, TACK_I64, 1, &len, 1);
    if (q) CHECK(tack_kernel_launch(q, dev, a, 1, &err) == TACK_OK);
    CHECK(hook_calls == 2 && x[1] == 6);

    tack_set_before_print(NULL);
    char *out = captured_launch(k, dev, (tack_arg[]){tack_arg_array(x, TACK_I64, 1, &len, 0),
                                                     tack_arg_int(-7)}, 2);
    CHECK(out && strstr(out, "n%|-7|6|True|0.5\n"));
    free(out);
    CHECK(hook_calls == 2);
    tack_kernel_free(q);
    tack_kernel_free(k);
    tack_device_free(dev);
    return CHECK_DONE();
}
