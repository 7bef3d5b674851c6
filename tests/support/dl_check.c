/* dl_check.c: the skips of a check suite, counted so that the suite reports them. */
#include "dl_check.h"

#include <stdio.h>
#include <string.h>
#include <sched.h>
#include <time.h>

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
    if (skipped && skipped >= run) {
        fprintf(stderr, "all %d tests skipped: the suite reports a skip\n", run);
        return DL_CHECK_SKIP;
    }
    /* Cases ran and passed: the suite passes, and says how many did not run. */
    printf("%d passed, 0 failed, %d skipped\n", run - skipped, skipped);
    return EXIT_SUCCESS;
}

int64_t dl_check_bound_ms(int64_t ms)
{
    const char *v = getenv("DYNALOCK_TEST_TIME_SCALE");
    long scale = v ? strtol(v, NULL, 10) : 1;
    return ms * (scale >= 1 ? scale : 1);
}

int64_t dl_check_mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The state letter of thread tid ('R', 'S', 'D', ...), or 0 when it cannot be read. */
static char thread_state(long tid)
{
    char path[64], line[512];
    snprintf(path, sizeof path, "/proc/self/task/%ld/stat", tid);
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    size_t n = fread(line, 1, sizeof line - 1, f);
    fclose(f);
    line[n] = '\0';
    const char *end = strrchr(line, ')'); /* the command name may hold spaces */
    return end && end[1] == ' ' ? end[2] : 0;
}

bool dl_check_wait_thread_sleeps(long tid, int64_t timeout_ms)
{
    struct timespec t0, now;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int64_t limit = dl_check_bound_ms(timeout_ms);
    for (;;) {
        if (thread_state(tid) == 'S')
            return true;
        clock_gettime(CLOCK_MONOTONIC, &now);
        if ((now.tv_sec - t0.tv_sec) * 1000 + (now.tv_nsec - t0.tv_nsec) / 1000000 > limit)
            return false;
        sched_yield();
    }
}
