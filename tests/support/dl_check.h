/* dl_check.h: the main of every check suite: runs it (in the process when CK_FORK=no,
 * as ctest sets) and exits with EXIT_FAILURE when any test failed. */
#ifndef DL_CHECK_H
#define DL_CHECK_H

#include <check.h>
#include <stdlib.h>

static inline int dl_check_run(Suite *suite)
{
    SRunner *sr = srunner_create(suite);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

#endif
