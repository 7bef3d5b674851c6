/* dl_check.h: the main of every check suite: runs it (in the process when CK_FORK=no,
 * as ctest sets) and exits with EXIT_FAILURE when any test failed, DL_CHECK_SKIP (77,
 * ctest's SKIP_RETURN_CODE) when none failed but some skipped, else EXIT_SUCCESS. */
#ifndef DL_CHECK_H
#define DL_CHECK_H

#include <check.h>
#include <stdlib.h>

#define DL_CHECK_SKIP 77

/* Runs the suite; the exit status of the test program. */
int dl_check_run(Suite *suite);
/* Records that `test` did not run its checks, and why; call it, then return. The count
 * lives in the process: it needs CK_FORK=no (as ctest runs the suites). */
void dl_check_skip(const char *test, const char *why);

#endif
