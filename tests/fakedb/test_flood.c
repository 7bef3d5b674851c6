/* test_flood.c: 2,000 idle connections to fakedb (default limits), then a GetItem that
 * is answered promptly. The test process holds both ends of every connection, so it
 * raises its RLIMIT_NOFILE first; where that is not allowed it exits 77 (skipped). */
#include "fdbt.h"
#include "dl_check.h"

#include <arpa/inet.h>
#include <check.h>
#include <curl/curl.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

enum { IDLE = 2000, FDS_NEEDED = 2 * IDLE + 512 };

static void get_item_within(int ms)
{
    int64_t t0 = dl_check_mono_ms();
    fdbt_resp r = fdbt_call("GetItem", "{\"TableName\":\"Locks\",\"Key\":{\"pk\":{\"S\":\"a\"}}}");
    int64_t took = dl_check_mono_ms() - t0;
    ck_assert_msg(r.status == 200, "GetItem: status %ld (curl %d)", r.status, r.curl_code);
    ck_assert_msg(took < ms, "GetItem took %lld ms", (long long)took);
    ck_assert_str_eq(fdbt_str(&r, "Item.pk.S"), "a");
    fdbt_free(&r);
}

/* Polls /fake/stats until the server holds at least n connections (60 s at most). */
static void wait_connections(long n)
{
    int64_t t0 = dl_check_mono_ms();
    long have = 0;
    while (dl_check_mono_ms() - t0 < 60000) {
        fdbt_resp r = fdbt_raw("GET", "/fake/stats", NULL, NULL, NULL, NULL, 0);
        ck_assert_int_eq(r.status, 200);
        have = json_object_get_int64(fdbt_get(r.json, "connections"));
        fdbt_free(&r);
        if (have >= n)
            return;
        struct timespec ts = { 0, 10 * 1000000L };
        nanosleep(&ts, NULL);
    }
    ck_abort_msg("the server holds %ld connections, want %ld", have, n);
}

START_TEST(two_thousand_idle_then_get_item)
{
    fdbt_start(NULL);
    fdbt_table("Locks", NULL, NULL);
    fdbt_resp r = fdbt_call("PutItem", "{\"TableName\":\"Locks\",\"Item\":{\"pk\":{\"S\":\"a\"}}}");
    ck_assert_int_eq(r.status, 200);
    fdbt_free(&r);
    static int fds[IDLE];
    for (int i = 0; i < IDLE; i++)
        fds[i] = fdbt_dial(fakedb_port(fdbt_db));
    /* The server has taken every idle connection (its stats count them): under a
     * sanitizer accepting 2,000 takes seconds, and that is not what is measured. */
    wait_connections(IDLE + 1);
    get_item_within(5000);
    /* And again with half of them gone and 1,000 fresh ones on top. */
    for (int i = 0; i < IDLE; i += 2)
        close(fds[i]);
    for (int i = 0; i < IDLE; i += 2)
        fds[i] = fdbt_dial(fakedb_port(fdbt_db));
    wait_connections(IDLE + 1);
    get_item_within(5000);
    for (int i = 0; i < IDLE; i++)
        close(fds[i]);
    get_item_within(5000);
    fdbt_stop();
}
END_TEST

int main(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0) {
        printf("test_flood: getrlimit failed; skipped\n");
        return 77;
    }
    if (rl.rlim_cur < FDS_NEEDED) {
        rlim_t want = rl.rlim_max == RLIM_INFINITY || rl.rlim_max >= FDS_NEEDED ? FDS_NEEDED : rl.rlim_max;
        rl.rlim_cur = want;
        if (want < FDS_NEEDED || setrlimit(RLIMIT_NOFILE, &rl) != 0) {
            printf("test_flood: needs %d file descriptors, the hard limit is %llu; skipped\n", FDS_NEEDED,
                   (unsigned long long)rl.rlim_max);
            return 77;
        }
    }
    signal(SIGPIPE, SIG_IGN);
    curl_global_init(CURL_GLOBAL_DEFAULT);
    Suite *s = suite_create("fakedb_flood");
    TCase *tc = tcase_create("flood");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, two_thousand_idle_then_get_item);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    curl_global_cleanup();
    return failed ? 1 : 0;
}
