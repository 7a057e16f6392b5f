/* check.h - a minimal test harness for the C tests: CHECK records a
 * failure with its line and goes on; CHECK_DONE prints the summary line and
 * returns the exit status. */
#ifndef TACK_CHECK_H
#define TACK_CHECK_H
#include <stdio.h>

static int check_failures, check_count;
#define CHECK(cond)                                                        \
    do {                                                                   \
        check_count++;                                                     \
        if (!(cond)) {                                                     \
            check_failures++;                                              \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, \
                    #cond);                                                \
        }                                                                  \
    } while (0)
#define CHECK_DONE()                                                       \
    (printf("%d checks, %d failed\n", check_count, check_failures),        \
     check_failures ? 1 : 0)
#endif
