/* dl_check.c: the skips of a check suite, counted so that the suite reports them. */
#include "dl_check.h"

#include <stdio.h>

static int skipped;

void dl_check_skip(const char *test, const char *why)
{
    skipped++;
    fprintf(stderr, "%s: skipped (%s)\n", test, why);
}

int dl_check_run(Suite *suite)
{
    SRunner *sr = srunner_create(suite);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    int run = srunner_ntests_run(sr);
    srunner_free(sr);
    if (failed)
        return EXIT_FAILURE;
    if (skipped) {
        fprintf(stderr, "%d of %d tests skipped: the suite reports a skip\n", skipped, run);
        return DL_CHECK_SKIP;
    }
    return EXIT_SUCCESS;
}
