/* test_testing.c: libddb_testing -- the reference's two testing examples in C, and a
 * test for each helper and each rule of its semantics. Runs against the in-process fake
 * by default, and against any DynamoDB-compatible server (DynamoDB Local in CI) when
 * DYNALOCK_TEST_ENDPOINT is set; either way the clients share a fake clock, so leases,
 * heartbeats and polls move without sleeping. */
#include <check.h>

#include "dl_check.h"
#include <dynalock/testing.h>
#include <fakedb/fakedb.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define LEASE_MS 30000
#define REAL_WAIT_MS 20000

/* The world a test runs in: a server, a fake clock, a table, and up to three
 * "processes" (a client and a lock table each). */
typedef struct world {
    ddb_test_server *fake;        /* NULL against an external endpoint */
    ddb_clock *clock;
    char table_name[64];
    ddb_client *client[3];
    ddb_table *table[3];
    ddb_lock_table *locks[3];
} world;

static world w;
static int table_seq;

static ddb_client *new_client(void)
{
    ddb_error err;
    ddb_client *c;
    const char *endpoint = getenv("DYNALOCK_TEST_ENDPOINT");
    if (w.fake) {
        c = ddb_test_server_client_new(w.fake, NULL, &err);
    } else {
        c = ddb_client_new(&(ddb_client_options){.endpoint = endpoint, .region = "us-east-1",
                                                 .access_key_id = "AKIDTEST",
                                                 .secret_access_key = "test-secret",
                                                 .clock = w.clock, .imds_disabled = true,
                                                 .log_level = DDB_LOG_WARN},
                           &err);
    }
    ck_assert_msg(c != NULL, "client: %s", err.message);
    return c;
}

static void world_up(void)
{
    ddb_error err;
    memset(&w, 0, sizeof w);
    snprintf(w.table_name, sizeof w.table_name, "Shop%d_%d", (int)getpid(), ++table_seq);
    if (!getenv("DYNALOCK_TEST_ENDPOINT")) {
        w.fake = ddb_test_server_start(NULL, &err);
        ck_assert_msg(w.fake != NULL, "fake: %s", err.message);
        w.clock = ddb_clock_ref(ddb_test_server_clock(w.fake));
        ck_assert_int_eq(ddb_test_server_create_table(w.fake, w.table_name, "pk", "sk", &err), 0);
    } else {
        w.clock = ddb_fake_clock_new(1767225600000LL);
    }
    for (int i = 0; i < 3; i++) {
        w.client[i] = new_client();
        if (i == 0 && !w.fake) {
            ddb_key_schema ks = {.pk = "pk", .sk = "sk"};
            ck_assert_msg(ddb_client_create_table(w.client[0], w.table_name, &ks,
                                           &(ddb_create_table_options){.wait_active = true}, NULL,
                                           &err) == 0,
                          "create table: %s", err.message);
        }
        w.table[i] = ddb_table_open(w.client[i], w.table_name, "pk", "sk", &err);
        ck_assert_ptr_nonnull(w.table[i]);
        static const char *labels[] = {"this-pod", "other-pod", "third-pod"};
        w.locks[i] = ddb_lock_table_new(
            w.table[i], &(ddb_lock_table_options){.holder_label = labels[i]}, &err);
        ck_assert_msg(w.locks[i] != NULL, "lock table: %s", err.message);
    }
}

static void world_down(void)
{
    for (int i = 0; i < 3; i++) {
        ddb_lock_table_free(w.locks[i]);
        ddb_table_close(w.table[i]);
    }
    if (!w.fake && w.client[0])
        ddb_client_delete_table(w.client[0], w.table_name, NULL, NULL);
    for (int i = 0; i < 3; i++)
        ddb_client_free(w.client[i]);
    ddb_clock_unref(w.clock);
    ddb_test_server_stop(w.fake);
}

/* Moves the shared fake clock and waits until the work it released is done. */
static void advance(int64_t ms)
{
    if (w.fake) {
        ck_assert_int_eq(ddb_test_server_advance(w.fake, ms), 0);
    } else {
        ck_assert_int_eq(ddb_fake_clock_advance(w.clock, ms), 0);
        ck_assert_int_eq(ddb_fake_clock_settle(w.clock, REAL_WAIT_MS), 0);
    }
}

static ddb_lease *acquire(int who, const char *name)
{
    ddb_error err;
    ddb_lease *lease = NULL;
    int rc = ddb_lock_try_acquire(w.locks[who], name, LEASE_MS, &lease, NULL, &err);
    ck_assert_msg(rc == 0, "try_acquire: %s", err.message);
    return lease;
}

static ddb_lock_state state_of(const char *name)
{
    ddb_error err;
    ddb_lock_state s;
    ck_assert_msg(ddb_lock_get_state(w.locks[0], name, &s, &err) == 0, "state: %s", err.message);
    return s;
}

static ddb_lock_state held_by(const char *label, int64_t token)
{
    ddb_lock_state s = {.exists = true, .is_held = true, .lease_ms = LEASE_MS,
                        .fencing_token = token};
    snprintf(s.holder_label, sizeof s.holder_label, "%s", label);
    return s;
}

/* ---- the reference's first example: a renewal that finds another holder */
START_TEST(reference_example_simulated_holder)
{
    ddb_error err;
    ddb_lease *lease = acquire(0, "order-sweeper");
    ck_assert_ptr_nonnull(lease);
    int64_t token = 0;
    ck_assert_int_eq(ddb_lock_simulate_holder(w.locks[0], "order-sweeper", LEASE_MS,
                                              "another-pod", &token, &err),
                     0);
    ck_assert_int_eq(token, 2);
    bool held = true;
    ck_assert_int_eq(ddb_lease_renew(lease, &held, NULL, &err), 0);
    ck_assert(!held);
    ck_assert(ddb_cancel_is_set(ddb_lease_ended(lease)));
    ck_assert_int_eq(ddb_lease_loss_reason(lease), DDB_LOSS_TAKEN_OVER);
    ddb_lock_state expect = held_by("another-pod", 2);
    ddb_lock_state got = state_of("order-sweeper");
    ck_assert(ddb_lock_state_equal(&got, &expect));
    ddb_lease_release(lease);
}
END_TEST

/* ---- the reference's second example: a follower that is refused and waits */
typedef struct election {
    ddb_lock_table *locks;
    ddb_cancel *stop;
    int rc;
    int work_runs;
} election;

static int work_until_stopped(ddb_lease *lease, ddb_cancel *stop, void *arg, ddb_error *err)
{
    election *e = arg;
    e->work_runs++;
    ddb_clock_sleep(w.clock, -1, stop);
    return 0;
}

static void *run_election(void *arg)
{
    election *e = arg;
    ddb_error err;
    e->rc = ddb_lock_run_as_leader(e->locks, "order-sweeper", LEASE_MS, work_until_stopped, e,
                                   e->stop, &err);
    return NULL;
}

START_TEST(reference_example_follower_refused)
{
    ddb_error err;
    ddb_lease *held = acquire(0, "order-sweeper");
    ck_assert_ptr_nonnull(held);
    ddb_refusal_watch *refused = ddb_refusal_watch_new(w.locks[1], "order-sweeper", &err);
    ck_assert_ptr_nonnull(refused);
    election e = {.locks = w.locks[1], .stop = ddb_cancel_new()};
    pthread_t t;
    pthread_create(&t, NULL, run_election, &e);
    ck_assert_int_eq(ddb_refusal_watch_wait(refused, REAL_WAIT_MS, NULL), 0);
    ddb_cancel_set(e.stop);
    pthread_join(t, NULL);
    ck_assert_int_eq(e.rc, DDB_ECANCELED);
    ck_assert_int_eq(e.work_runs, 0);
    ddb_refusal_watch_free(refused);
    ddb_cancel_unref(e.stop);
    ddb_lease_release(held);
}
END_TEST

/* ---- simulate_holder */
START_TEST(simulated_holder_tokens_rise)
{
    ddb_error err;
    int64_t t1 = 0, t2 = 0;
    ck_assert_int_eq(ddb_lock_simulate_holder(w.locks[0], "a", LEASE_MS, NULL, &t1, &err), 0);
    ck_assert_int_eq(ddb_lock_simulate_holder(w.locks[0], "a", LEASE_MS, "x", &t2, &err), 0);
    ck_assert_int_eq(t1, 1);
    ck_assert_int_eq(t2, 2);
    ddb_lock_state expect = held_by("x", 2);
    ddb_lock_state got = state_of("a");
    ck_assert(ddb_lock_state_equal(&got, &expect));
}
END_TEST

START_TEST(simulated_holder_lease_lost_at_next_renewal)
{
    ddb_error err;
    ddb_lease *lease = acquire(0, "a");
    ck_assert_int_eq(ddb_lock_simulate_holder(w.locks[1], "a", LEASE_MS, "crashed", NULL, &err),
                     0);
    ck_assert(!ddb_cancel_is_set(ddb_lease_ended(lease)));
    advance(LEASE_MS / 3); /* the heartbeat's renewal finds the other owner */
    ck_assert(ddb_cancel_is_set(ddb_lease_ended(lease)));
    ck_assert_int_eq(ddb_lease_loss_reason(lease), DDB_LOSS_TAKEN_OVER);
    ddb_lease_release(lease);
}
END_TEST

/* A renewal and a poll that meet a 500, with the client's default retries (a fake's
 * client keeps them), wait in backoff on the fake clock: ddb_test_server_advance returns, and
 * the next advance past the backoff finishes them. */
START_TEST(fake_advance_settles_retry_backoff)
{
    if (!w.fake) {
        dl_check_skip(__func__, "needs the fake server's faults");
        return;
    }
    ddb_error err;
    ddb_lease *lease = acquire(0, "a");
    ddb_lease *none = acquire(1, "a");
    ck_assert_ptr_null(none);
    struct fakedb *db = ddb_test_server_fakedb(w.fake);
    fakedb_fault_add(db, &(fakedb_fault){.kind = FAKEDB_FAULT_ERROR, .operation = "UpdateItem",
                                         .error_type = "InternalServerError", .count = 1});
    ddb_lock_state before = state_of("a");
    advance(LEASE_MS / 3); /* the renewal fails once and waits to retry */
    advance(100);          /* the retry renews it */
    ck_assert(!ddb_cancel_is_set(ddb_lease_ended(lease)));
    ck_assert_int_eq(fakedb_get_stats(db, "UpdateItem").requests, 4);
    ddb_lock_state after = state_of("a");
    ck_assert(ddb_lock_state_equal(&before, &after)); /* same holder, same token */
    ddb_lease_release(lease);
    (void)err;
}
END_TEST

START_TEST(simulated_holder_taken_over_after_a_whole_lease)
{
    ddb_error err;
    ck_assert_int_eq(ddb_lock_simulate_holder(w.locks[1], "a", LEASE_MS, "crashed", NULL, &err),
                     0);
    /* The first try sees the holder and starts counting on this process's clock. */
    ck_assert_ptr_null(acquire(0, "a"));
    advance(LEASE_MS - 1);
    ck_assert_ptr_null(acquire(0, "a")); /* not yet a whole lease */
    advance(1);
    ddb_lease *lease = acquire(0, "a");
    ck_assert_ptr_nonnull(lease);
    ck_assert(ddb_lease_takeover(lease));
    ck_assert_int_eq(ddb_lease_fencing_token(lease), 2);
    ddb_lease_release(lease);
}
END_TEST

START_TEST(simulated_holder_rejects_bad_input)
{
    ddb_error err;
    ck_assert_int_eq(ddb_lock_simulate_holder(w.locks[0], "a", 999, NULL, NULL, &err), DDB_EINVAL);
    ck_assert_int_eq(ddb_lock_simulate_holder(w.locks[0], "a", DDB_LEASE_MAX_MS + 1, NULL, NULL,
                                              &err),
                     DDB_EINVAL);
    ck_assert_int_eq(ddb_lock_simulate_holder(w.locks[0], "a", LEASE_MS, "", NULL, &err),
                     DDB_EINVAL);
    ck_assert_int_eq(ddb_lock_simulate_holder(w.locks[0], "", LEASE_MS, NULL, NULL, &err),
                     DDB_EINVAL);
    ddb_lock_state got = state_of("a");
    ck_assert(!got.exists);
}
END_TEST

/* ---- simulate_release */
START_TEST(simulated_release_frees_and_raises_token)
{
    ddb_error err;
    ddb_lease *lease = acquire(0, "a");
    ck_assert_int_eq(ddb_lease_fencing_token(lease), 1);
    ck_assert_int_eq(ddb_lock_simulate_release(w.locks[1], "a", &err), 0);
    ddb_lock_state got = state_of("a");
    ddb_lock_state expect = {.exists = true, .is_held = false, .fencing_token = 1};
    ck_assert(ddb_lock_state_equal(&got, &expect));
    /* The next acquire, by anyone, finds it free at once and raises the token. */
    ddb_lease *next = acquire(1, "a");
    ck_assert_ptr_nonnull(next);
    ck_assert(!ddb_lease_takeover(next));
    ck_assert_int_eq(ddb_lease_fencing_token(next), 2);
    /* This process's lease is lost, taken over. */
    bool held = true;
    ck_assert_int_eq(ddb_lease_renew(lease, &held, NULL, &err), 0);
    ck_assert(!held);
    ck_assert_int_eq(ddb_lease_loss_reason(lease), DDB_LOSS_TAKEN_OVER);
    ddb_lease_release(lease);
    ddb_lease_release(next);
}
END_TEST

START_TEST(simulated_release_of_missing_lock_creates_nothing)
{
    ddb_error err;
    ck_assert_int_eq(ddb_lock_simulate_release(w.locks[0], "never", &err), 0);
    ddb_lock_state got = state_of("never");
    ck_assert(!got.exists);
}
END_TEST

/* ---- simulate_delete */
START_TEST(simulated_delete_loses_lease_and_restarts_token)
{
    ddb_error err;
    ddb_lease *first = acquire(0, "a");
    ddb_lease_release(first);
    ddb_lease *lease = acquire(0, "a");
    ck_assert_int_eq(ddb_lease_fencing_token(lease), 2);
    ck_assert_int_eq(ddb_lock_simulate_delete(w.locks[1], "a", &err), 0);
    ddb_lock_state got = state_of("a");
    ck_assert(!got.exists);
    advance(LEASE_MS / 3);
    ck_assert(ddb_cancel_is_set(ddb_lease_ended(lease)));
    ck_assert_int_eq(ddb_lease_loss_reason(lease), DDB_LOSS_DELETED);
    ddb_lease *next = acquire(1, "a");
    ck_assert_int_eq(ddb_lease_fencing_token(next), 1);
    ddb_lease_release(lease);
    ddb_lease_release(next);
}
END_TEST

/* ---- get_state */
START_TEST(state_follows_the_lock)
{
    ddb_lock_state none = state_of("a");
    ddb_lock_state expect_none = {0};
    ck_assert(ddb_lock_state_equal(&none, &expect_none));
    ddb_lease *lease = acquire(2, "a");
    ddb_lock_state held = state_of("a");
    ddb_lock_state expect_held = held_by("third-pod", 1);
    ck_assert(ddb_lock_state_equal(&held, &expect_held));
    ddb_lease_release(lease);
    ddb_lock_state freed = state_of("a");
    ddb_lock_state expect_free = {.exists = true, .fencing_token = 1};
    ck_assert(ddb_lock_state_equal(&freed, &expect_free));
}
END_TEST

/* ---- a lock table freed while one of its leases is held */
START_TEST(lock_table_freed_with_lease_held)
{
    ddb_error err;
    ddb_lease *lease = acquire(0, "a");
    ddb_lock_table_free(w.locks[0]);
    w.locks[0] = NULL;
    /* The lease ended and its lock is free... */
    ck_assert(ddb_cancel_is_set(ddb_lease_ended(lease)));
    ddb_lock_state got;
    ck_assert_int_eq(ddb_lock_get_state(w.locks[1], "a", &got, &err), 0);
    ck_assert(got.exists && !got.is_held);
    /* ...and the lease is still the holder's to release. */
    ck_assert_int_eq(ddb_lease_fencing_token(lease), 1);
    ddb_lease_release(lease);
}
END_TEST

/* ---- wait_for_refusal */
START_TEST(refusal_by_try_acquire)
{
    ddb_error err;
    ddb_lease *lease = acquire(0, "a");
    ddb_refusal_watch *watch = ddb_refusal_watch_new(w.locks[1], "a", &err);
    ck_assert(!ddb_refusal_watch_happened(watch));
    ck_assert_ptr_null(acquire(1, "a"));
    ck_assert(ddb_refusal_watch_happened(watch));
    ck_assert_int_eq(ddb_refusal_watch_wait(watch, 0, NULL), 0);
    ddb_refusal_watch_free(watch);
    ddb_lease_release(lease);
}
END_TEST

START_TEST(no_refusal_when_free_or_other_lock)
{
    ddb_error err;
    ddb_lease *other = acquire(0, "b");
    ddb_refusal_watch *watch = ddb_refusal_watch_new(w.locks[1], "a", &err);
    ddb_lease *lease = acquire(1, "a"); /* free: acquired, not refused */
    ck_assert_ptr_nonnull(lease);
    ck_assert_ptr_null(acquire(1, "b")); /* refused, but on another lock */
    ck_assert(!ddb_refusal_watch_happened(watch));
    ck_assert_int_eq(ddb_refusal_watch_wait(watch, 0, NULL), DDB_ETIMEDOUT);
    ddb_cancel *c = ddb_cancel_new();
    ddb_cancel_set(c);
    ck_assert_int_eq(ddb_refusal_watch_wait(watch, REAL_WAIT_MS, c), DDB_ECANCELED);
    ddb_cancel_unref(c);
    ddb_refusal_watch_free(watch);
    ddb_lease_release(lease);
    ddb_lease_release(other);
}
END_TEST

typedef struct contender {
    ddb_lock_table *locks;
    ddb_cancel *stop;
    ddb_lease *lease;
    int rc;
} contender;

static void *run_acquire(void *arg)
{
    contender *c = arg;
    ddb_error err;
    c->rc = ddb_lock_acquire(c->locks, "a", LEASE_MS, &c->lease, c->stop, &err);
    return NULL;
}

START_TEST(refusal_by_acquire_poll_then_takeover_of_crashed_holder)
{
    ddb_error err;
    ck_assert_int_eq(ddb_lock_simulate_holder(w.locks[0], "a", LEASE_MS, "crashed", NULL, &err),
                     0);
    ddb_refusal_watch *watch = ddb_refusal_watch_new(w.locks[1], "a", &err);
    contender c = {.locks = w.locks[1], .stop = ddb_cancel_new()};
    pthread_t t;
    pthread_create(&t, NULL, run_acquire, &c);
    ck_assert_int_eq(ddb_refusal_watch_wait(watch, REAL_WAIT_MS, NULL), 0);
    /* It polls every third of the holder's lease, and takes over after a whole one. */
    for (int i = 0; i < 3; i++)
        advance(LEASE_MS / 3);
    pthread_join(t, NULL);
    ck_assert_int_eq(c.rc, 0);
    ck_assert(ddb_lease_takeover(c.lease));
    ddb_lock_state got = state_of("a");
    ddb_lock_state expect = held_by("other-pod", 2);
    ck_assert(ddb_lock_state_equal(&got, &expect));
    ddb_lease_release(c.lease);
    ddb_cancel_unref(c.stop);
    ddb_refusal_watch_free(watch);
}
END_TEST

/* ---- ddb_lock_state_equal: each compared field, on its own, makes two states differ */
START_TEST(lock_state_equal_compares_each_field)
{
    ddb_lock_state base = {.exists = true, .is_held = true, .lease_ms = LEASE_MS,
                           .fencing_token = 7};
    snprintf(base.holder_label, sizeof base.holder_label, "this-pod");
    ddb_lock_state same = base;
    ck_assert(ddb_lock_state_equal(&base, &same));
    ddb_lock_state d = base;
    d.exists = false;
    ck_assert(!ddb_lock_state_equal(&base, &d));
    d = base;
    d.is_held = false;
    ck_assert(!ddb_lock_state_equal(&base, &d));
    d = base;
    d.lease_ms = LEASE_MS + 1;
    ck_assert(!ddb_lock_state_equal(&base, &d));
    d = base;
    d.fencing_token = 8;
    ck_assert(!ddb_lock_state_equal(&base, &d));
    d = base;
    snprintf(d.holder_label, sizeof d.holder_label, "this-pod2");
    ck_assert(!ddb_lock_state_equal(&base, &d));
    /* what changes with each renewal is not compared */
    d = base;
    snprintf(d.record_version, sizeof d.record_version, "rv-2");
    snprintf(d.owner, sizeof d.owner, "owner-2");
    d.unchanged_ms = 5;
    ck_assert(ddb_lock_state_equal(&base, &d));
    ck_assert(ddb_lock_state_equal(NULL, NULL));
    ck_assert(!ddb_lock_state_equal(&base, NULL));
    ck_assert(!ddb_lock_state_equal(NULL, &base));
}
END_TEST

static Suite *testing_suite(void)
{
    Suite *s = suite_create("testing");
    TCase *tc = tcase_create("helpers");
    tcase_add_checked_fixture(tc, world_up, world_down);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, reference_example_simulated_holder);
    tcase_add_test(tc, reference_example_follower_refused);
    tcase_add_test(tc, simulated_holder_tokens_rise);
    tcase_add_test(tc, simulated_holder_lease_lost_at_next_renewal);
    tcase_add_test(tc, simulated_holder_taken_over_after_a_whole_lease);
    tcase_add_test(tc, fake_advance_settles_retry_backoff);
    tcase_add_test(tc, simulated_holder_rejects_bad_input);
    tcase_add_test(tc, simulated_release_frees_and_raises_token);
    tcase_add_test(tc, simulated_release_of_missing_lock_creates_nothing);
    tcase_add_test(tc, simulated_delete_loses_lease_and_restarts_token);
    tcase_add_test(tc, state_follows_the_lock);
    tcase_add_test(tc, lock_table_freed_with_lease_held);
    tcase_add_test(tc, refusal_by_try_acquire);
    tcase_add_test(tc, no_refusal_when_free_or_other_lock);
    tcase_add_test(tc, refusal_by_acquire_poll_then_takeover_of_crashed_holder);
    suite_add_tcase(s, tc);
    TCase *values = tcase_create("values");
    tcase_add_test(values, lock_state_equal_compares_each_field);
    suite_add_tcase(s, values);
    return s;
}

int main(void)
{
    return dl_check_run(testing_suite());
}
