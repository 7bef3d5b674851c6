/* test_server_clock.c: the testing library's server clock (ddb_clock_new_server) against
 * an in-process fakedb whose clock is fake: its time is the server's, a wait ends when
 * the server's clock is advanced past its deadline, a wait ends with DDB_ECANCELED when
 * its token is set (through the cancel token's eventfd of http.c's request), and a server
 * that is not there is refused with a clear error, and a server with --credentials is
 * answered with signed requests. No test sleeps. */
#include <check.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <dynalock/testing.h>

#include "dl_check.h"
#include "dl_fixture.h"
#include "internal.h"

#define HOUR_NS (3600 * INT64_C(1000000000))

static dl_fixture fx;

static void setup(void)
{
    ck_assert_int_eq(dl_fixture_start(&fx, &(dl_fixture_options){ .server_fake_clock = true }), 0);
}

static void teardown(void)
{
    dl_fixture_stop(&fx);
}

typedef struct sleeper {
    ddb_clock *clock;
    int64_t deadline_ns;  /* on the clock's monotonic time, fixed before the thread runs */
    ddb_cancel *cancel;
    int rc;
    atomic_long tid; /* the waiting thread, once it runs */
} sleeper;

static void *sleep_thread(void *arg)
{
    sleeper *s = arg;
    atomic_store(&s->tid, (long)syscall(SYS_gettid));
    s->rc = ddb__clock_wait_until(s->clock, s->deadline_ns, s->cancel);
    return NULL;
}

START_TEST(follows_the_servers_time)
{
    ddb_error err;
    ddb_clock *c = ddb_clock_new_server(fx.endpoint, &err);
    ck_assert_msg(c != NULL, "%s", err.message);
    int64_t t0 = ddb_clock_wall_ms(c);
    ck_assert_int_eq(fakedb_clock_advance(fx.db, 5000), 0);
    ck_assert_int_eq(ddb_clock_wall_ms(c) - t0, 5000);

    /* A wait of an hour ends once the server's clock has moved an hour. */
    sleeper s = { .clock = c, .deadline_ns = ddb_clock_mono_ns(c) + HOUR_NS };
    pthread_t t;
    ck_assert_int_eq(pthread_create(&t, NULL, sleep_thread, &s), 0);
    ck_assert_int_eq(fakedb_clock_advance(fx.db, 3600 * 1000), 0);
    pthread_join(t, NULL);
    ck_assert_int_eq(s.rc, 0);
    ddb_clock_unref(c);
}
END_TEST

START_TEST(a_wait_ends_with_its_token)
{
    ddb_error err;
    ddb_clock *c = ddb_clock_new_server(fx.endpoint, &err);
    ck_assert_msg(c != NULL, "%s", err.message);
    ddb_cancel *k = ddb_cancel_new();
    /* The server's time never reaches the deadline: only the token ends the wait. */
    sleeper s = { .clock = c, .deadline_ns = ddb_clock_mono_ns(c) + HOUR_NS, .cancel = k };
    pthread_t t;
    ck_assert_int_eq(pthread_create(&t, NULL, sleep_thread, &s), 0);
    /* The set wakes a wait that sleeps (on the server's long poll), rather than finding
     * the token set before the wait began. */
    while (atomic_load(&s.tid) == 0)
        sched_yield();
    ck_assert_msg(dl_check_wait_thread_sleeps(atomic_load(&s.tid), 10000),
                  "the waiting thread never slept");
    ddb_cancel_set(k);
    pthread_join(t, NULL);
    ck_assert_int_eq(s.rc, DDB_ECANCELED);
    ddb_cancel_unref(k);
    ddb_clock_unref(c);
}
END_TEST

START_TEST(no_server_is_refused)
{
    ddb_error err;
    ck_assert_ptr_null(ddb_clock_new_server("http://127.0.0.1:1", &err));
    ck_assert_int_eq(err.code, DDB_ENETWORK);
    ck_assert_ptr_nonnull(strstr(err.message, "no fake server clock answers at http://127.0.0.1:1"));
    ck_assert_ptr_null(ddb_clock_new_server("ftp://x", &err));
    ck_assert_int_eq(err.code, DDB_EINVAL);
}
END_TEST

/* A server with --credentials answers /fake/ only to signed requests: the clock signs
 * with the credentials of the environment, at the server's time (a fake 2023, far from
 * the signing time a client would pick), and is refused clearly with others. */
START_TEST(signs_for_a_server_with_credentials)
{
    fakedb_error ferr;
    fakedb *db = fakedb_start(&(fakedb_options){ .credentials = "AKIDCLOCK:clock-secret", .fake_clock = true,
                                                 .fake_clock_start_ms = 1700000000000LL }, &ferr);
    ck_assert_msg(db != NULL, "%s", ferr.message);
    setenv("AWS_EC2_METADATA_DISABLED", "true", 1);
    setenv("AWS_ACCESS_KEY_ID", "AKIDCLOCK", 1);
    setenv("AWS_SECRET_ACCESS_KEY", "not-the-secret", 1);
    ddb_error err;
    ck_assert_ptr_null(ddb_clock_new_server(fakedb_endpoint(db), &err));
    ck_assert_int_eq(err.code, DDB_ECREDENTIALS);
    ck_assert_msg(strstr(err.message, "wants credentials"), "%s", err.message);
    setenv("AWS_SECRET_ACCESS_KEY", "clock-secret", 1);
    ddb_clock *c = ddb_clock_new_server(fakedb_endpoint(db), &err);
    ck_assert_msg(c != NULL, "%s", err.message);
    ck_assert_int_eq(ddb_clock_wall_ms(c), 1700000000000LL);
    ck_assert_int_eq(fakedb_clock_advance(db, 5000), 0);
    ck_assert_int_eq(ddb_clock_wall_ms(c), 1700000005000LL);
    sleeper s = { .clock = c, .deadline_ns = ddb_clock_mono_ns(c) + HOUR_NS };
    pthread_t t;
    ck_assert_int_eq(pthread_create(&t, NULL, sleep_thread, &s), 0);
    ck_assert_int_eq(fakedb_clock_advance(db, 3600 * 1000), 0);
    pthread_join(t, NULL);
    ck_assert_int_eq(s.rc, 0);
    ddb_clock_unref(c);
    unsetenv("AWS_ACCESS_KEY_ID");
    unsetenv("AWS_SECRET_ACCESS_KEY");
    fakedb_stop(db);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("server_clock");
    TCase *tc = tcase_create("server_clock");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, follows_the_servers_time);
    tcase_add_test(tc, a_wait_ends_with_its_token);
    tcase_add_test(tc, no_server_is_refused);
    tcase_add_test(tc, signs_for_a_server_with_credentials);
    suite_add_tcase(s, tc);
    return dl_check_run(s);
}
