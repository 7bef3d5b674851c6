/* dl_check.h: the main of every check suite: runs it (in the process when CK_FORK=no,
 * as ctest sets) and exits with EXIT_FAILURE when any test failed, DL_CHECK_SKIP (77,
 * ctest's SKIP_RETURN_CODE) when none failed and every one skipped, else EXIT_SUCCESS
 * after printing how many passed and how many skipped. */
#ifndef DL_CHECK_H
#define DL_CHECK_H

#include <check.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#define DL_CHECK_SKIP 77

/* Runs the suite; the exit status of the test program. */
int dl_check_run(Suite *suite);
/* Records that `test` did not run its checks, and why; call it, then return. The count
 * lives in the process: it needs CK_FORK=no (as ctest runs the suites). */
void dl_check_skip(const char *test, const char *why);

/* A real-time upper bound of a test, scaled for slow runs: DYNALOCK_TEST_TIME_SCALE (an
 * integer >= 1, set by the build for valgrind and the sanitizers) times ms. Bounds that
 * prove something happened promptly use it; bounds that prove a wait lasted do not. */
int64_t dl_check_bound_ms(int64_t ms);
/* The monotonic clock (CLOCK_MONOTONIC) in ms: real time, for the bounds above. */
int64_t dl_check_mono_ms(void);
/* Waits (polling the kernel's view of the thread, at most timeout_ms of real time, scaled)
 * until thread `tid` of this process is asleep ('S' in /proc/self/task/TID/stat):
 * blocked in a call. true when it is; false when the time ran out. */
bool dl_check_wait_thread_sleeps(long tid, int64_t timeout_ms);

#endif
