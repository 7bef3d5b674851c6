/* test_acquire.c: acquiring a lock -- try and wait, polls, takeover on the contender's
 * monotonic clock, what a wait costs in requests, lost answers and late answers. Over
 * real HTTP against the in-process fake (or DynamoDB Local), with a fake clock. */
#include <check.h>

#include "dl_check.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coord_fixture.h"

#define LEASE 30000

static bool try_once(proc *p, const char *name, int64_t lease_ms, ddb_lease **out)
{
    ddb_error err;
    int rc = ddb_lock_try_acquire(p->locks, name, lease_ms, out, NULL, &err);
    ck_assert_msg(rc == 0, "try_acquire: %s", err.message);
    return *out != NULL;
}

/* try_acquire returns no lease while another holder has the lock. */
START_TEST(test_try_returns_null_when_held)
{
    proc *a = cx_proc(NULL), *b = cx_proc(NULL);
    ddb_lease *held = cx_take(a, "cache-refresh", LEASE);
    ddb_lease *other = NULL;
    ck_assert(!try_once(b, "cache-refresh", LEASE, &other));
    ck_assert_ptr_null(other);
    ck_assert_int_eq(proc_refusals(b), 1);
    ddb_lease_release(held);
    ck_assert(try_once(b, "cache-refresh", LEASE, &other));
    ddb_lease_release(other);
    cx_proc_free(a);
    cx_proc_free(b);
}
END_TEST

/* A free lock costs one request: the lock table that has not seen it held writes at
 * once. */
START_TEST(test_free_lock_costs_one_request)
{
    CX_NEEDS_FAKEDB();
    proc *a = cx_proc(NULL);
    long before = cx_requests(NULL);
    ddb_lease *lease = NULL;
    ddb_error err;
    ck_assert_int_eq(ddb_lock_acquire(a->locks, "nightly-report", LEASE, &lease, NULL, &err), 0);
    ck_assert_int_eq(cx_requests(NULL) - before, 1);
    ck_assert_int_eq(ddb_lease_fencing_token(lease), 1);
    ddb_lease_release(lease);
    cx_proc_free(a);
}
END_TEST

/* While a live holder holds the lock, a waiting contender costs one strongly consistent
 * read per poll and no failed conditional write after the first meeting. */
START_TEST(test_waiting_costs_one_read_per_poll)
{
    CX_NEEDS_FAKEDB();
    proc *a = cx_proc(NULL), *b = cx_proc(NULL);
    ddb_lease *held = cx_take(a, "order-sweeper", LEASE);
    long reads0 = cx_requests("GetItem");
    long fails0 = cx_condition_failures("UpdateItem");
    long updates0 = cx_requests("UpdateItem");
    bg w;
    bg_acquire(&w, b, "order-sweeper", LEASE);
    proc_wait_refusals(b, 1);
    ck_assert_int_eq(cx_condition_failures("UpdateItem") - fails0, 1); /* the first meeting */
    for (int poll = 1; poll <= 6; poll++) {
        cx_advance(LEASE / 3); /* the holder renews, the contender polls */
        proc_wait_refusals(b, 1 + poll);
        ck_assert_int_eq(cx_requests("GetItem") - reads0, poll);
    }
    ck_assert_int_eq(cx_condition_failures("UpdateItem") - fails0, 1);
    /* The only writes besides the first: the holder's renewals. */
    ck_assert_int_eq(cx_requests("UpdateItem") - updates0, 1 + 6);
    ck_assert(!bg_done(&w));
    ddb_cancel_set(w.stop);
    ck_assert_int_eq(bg_join(&w), DDB_ECANCELED);
    ddb_lease_release(held);
    cx_proc_free(a);
    cx_proc_free(b);
}
END_TEST

/* A lock that is released is acquired at the next poll, a third of the holder's lease
 * after the last. */
START_TEST(test_released_lock_acquired_at_next_poll)
{
    proc *a = cx_proc(NULL), *b = cx_proc(NULL);
    ddb_lease *held = cx_take(a, "order-sweeper", LEASE);
    bg w;
    bg_acquire(&w, b, "order-sweeper", LEASE);
    proc_wait_refusals(b, 1);
    ddb_lease_release(held);
    cx_advance(LEASE / 3 - 1);
    ck_assert(!bg_done(&w));
    cx_advance(1);
    ck_assert_int_eq(bg_join(&w), 0);
    ck_assert_ptr_nonnull(w.lease);
    ck_assert(!ddb_lease_takeover(w.lease));
    ck_assert_int_eq(ddb_lease_fencing_token(w.lease), 2);
    ddb_lease_release(w.lease);
    cx_proc_free(a);
    cx_proc_free(b);
}
END_TEST

/* Polls come every third of the holder's lease (not of the contender's). */
START_TEST(test_poll_every_third_of_holders_lease)
{
    proc *a = cx_proc(NULL), *b = cx_proc(NULL);
    cx_sim_holder(a, "job", 9000, "crashed-pod");
    bg w;
    bg_acquire(&w, b, "job", 24000);
    proc_wait_refusals(b, 1);
    cx_advance(2999);
    ck_assert_int_eq(proc_refusals(b), 1);
    cx_advance(1);
    proc_wait_refusals(b, 2);
    cx_advance(3000);
    proc_wait_refusals(b, 3);
    ck_assert(!bg_done(&w));
    cx_advance(3000); /* a whole 9 s lease of the holder: taken over */
    ck_assert_int_eq(bg_join(&w), 0);
    ck_assert(ddb_lease_takeover(w.lease));
    ck_assert_int_eq(ddb_lease_duration_ms(w.lease), 24000);
    ddb_lease_release(w.lease);
    cx_proc_free(a);
    cx_proc_free(b);
}
END_TEST

/* ... but at least every 10 s, and sooner when the holder's lease runs out before. */
START_TEST(test_poll_at_most_10s_and_sooner_at_lease_end)
{
    proc *a = cx_proc(NULL), *b = cx_proc(NULL);
    cx_sim_holder(a, "job", 45000, NULL);
    bg w;
    bg_acquire(&w, b, "job", LEASE);
    proc_wait_refusals(b, 1);
    for (int i = 1; i <= 4; i++) {
        cx_advance(9999);
        ck_assert_int_eq(proc_refusals(b), i);
        cx_advance(1);
        proc_wait_refusals(b, i + 1); /* at 10, 20, 30, 40 s */
    }
    /* The lease runs out at 45 s: the poll comes then, not at 50 s. */
    cx_advance(4999);
    ck_assert(!bg_done(&w));
    cx_advance(1);
    ck_assert_int_eq(bg_join(&w), 0);
    ck_assert(ddb_lease_takeover(w.lease));
    ddb_lease_release(w.lease);
    cx_proc_free(a);
    cx_proc_free(b);
}
END_TEST

/* A crashed holder is taken over after a whole lease from the first read of its record
 * version, on the contender's monotonic clock; the takeover raises the token. */
START_TEST(test_takeover_after_whole_lease_from_first_read)
{
    proc *a = cx_proc(NULL), *b = cx_proc(NULL);
    int64_t token = cx_sim_holder(a, "order-sweeper", LEASE, "crashed-pod");
    cx_advance(5000); /* time before the contender first reads counts for nothing */
    bg w;
    bg_acquire(&w, b, "order-sweeper", LEASE);
    proc_wait_refusals(b, 1);
    int64_t first_read = cx_mono_ms();
    cx_advance(10000);
    cx_advance(10000);
    cx_advance(9999);
    ck_assert(!bg_done(&w));
    cx_advance(1);
    ck_assert_int_eq(bg_join(&w), 0);
    ck_assert_int_eq(cx_mono_ms() - first_read, LEASE);
    ck_assert(ddb_lease_takeover(w.lease));
    ck_assert_int_eq(ddb_lease_fencing_token(w.lease), token + 1);
    ddb__lock_item li;
    cx_read(a, "order-sweeper", &li);
    ck_assert_str_eq(li.owner, ddb_lease_owner(w.lease));
    ck_assert_int_eq(li.fence, token + 1);
    ddb__lock_item_cleanup(&li);
    ddb_lease_release(w.lease);
    cx_proc_free(a);
    cx_proc_free(b);
}
END_TEST

/* A holder that renews is never taken over: each renewal is a new record version, and
 * the contender's wait starts again. */
START_TEST(test_live_holder_never_taken_over)
{
    proc *a = cx_proc(NULL), *b = cx_proc(NULL);
    ddb_lease *held = cx_take(a, "order-sweeper", LEASE);
    bg w;
    bg_acquire(&w, b, "order-sweeper", LEASE);
    proc_wait_refusals(b, 1);
    for (int i = 0; i < 12; i++)
        cx_advance(LEASE / 3);
    ck_assert(!bg_done(&w));
    ck_assert(!ddb_cancel_is_set(ddb_lease_ended(held)));
    ddb_cancel_set(w.stop);
    ck_assert_int_eq(bg_join(&w), DDB_ECANCELED);
    ddb_lease_release(held);
    cx_proc_free(a);
    cx_proc_free(b);
}
END_TEST

/* The contender measures on its own monotonic clock, whatever the wall clocks say: a
 * contender whose wall clock is a day ahead still waits a whole lease. */
START_TEST(test_takeover_ignores_wall_clock_offset)
{
    proc *a = cx_proc(NULL);
    ddb_clock *ahead = ddb_fake_clock_new(ddb_clock_wall_ms(CX.fx.clock) + 86400000LL);
    ddb_client *c = dl_fixture_client(&CX.fx, &(ddb_client_options){
                                                  .clock = ahead,
                                                  .retry = {.max_attempts = DDB_NO_RETRIES}});
    ddb_error err;
    ddb_table *t = ddb_table_open(c, CX.shop, "pk", "sk", &err);
    ddb_lock_table *locks = ddb_lock_table_new(t, NULL, &err);
    ck_assert_ptr_nonnull(locks);
    cx_sim_holder(a, "job", LEASE, NULL);
    ddb_lease *lease = NULL;
    ck_assert_int_eq(ddb_lock_try_acquire(locks, "job", LEASE, &lease, NULL, &err), 0);
    ck_assert_ptr_null(lease);
    ddb_fake_clock_advance(ahead, LEASE - 1);
    ck_assert_int_eq(ddb_lock_try_acquire(locks, "job", LEASE, &lease, NULL, &err), 0);
    ck_assert_ptr_null(lease);
    ddb_fake_clock_advance(ahead, 1);
    ck_assert_int_eq(ddb_lock_try_acquire(locks, "job", LEASE, &lease, NULL, &err), 0);
    ck_assert_ptr_nonnull(lease);
    ck_assert(ddb_lease_takeover(lease));
    ddb_lease_release(lease);
    ddb_lock_table_free(locks);
    ddb_table_close(t);
    ddb_client_free(c);
    ddb_clock_unref(ahead);
    cx_proc_free(a);
}
END_TEST

/* try_acquire takes over only once the same lock table has seen the holder unchanged
 * for a whole lease, over several calls. */
START_TEST(test_try_takeover_after_whole_lease_over_calls)
{
    proc *a = cx_proc(NULL), *b = cx_proc(NULL);
    cx_sim_holder(a, "cache-refresh", LEASE, NULL);
    ddb_lease *lease = NULL;
    ck_assert(!try_once(b, "cache-refresh", LEASE, &lease));
    cx_advance(LEASE / 2);
    ck_assert(!try_once(b, "cache-refresh", LEASE, &lease));
    cx_advance(LEASE / 2 - 1);
    ck_assert(!try_once(b, "cache-refresh", LEASE, &lease));
    cx_advance(1);
    ck_assert(try_once(b, "cache-refresh", LEASE, &lease));
    ck_assert(ddb_lease_takeover(lease));
    ck_assert_int_eq(ddb_lease_fencing_token(lease), 2);
    ddb_lease_release(lease);
    cx_proc_free(a);
    cx_proc_free(b);
}
END_TEST

/* A short-lived process that calls try_acquire once per run never takes over. */
START_TEST(test_try_fresh_lock_table_never_takes_over)
{
    proc *a = cx_proc(NULL);
    cx_sim_holder(a, "cache-refresh", LEASE, NULL);
    for (int run = 0; run < 4; run++) {
        proc *p = cx_proc(NULL);
        ddb_lease *lease = NULL;
        ck_assert(!try_once(p, "cache-refresh", LEASE, &lease));
        cx_proc_free(p);
        cx_advance(LEASE);
    }
    cx_proc_free(a);
}
END_TEST

/* A holder that renews restarts the try_acquire's count: a new record version. */
START_TEST(test_try_sees_renewal_as_new_version)
{
    proc *a = cx_proc(NULL), *b = cx_proc(NULL);
    ddb_lease *held = cx_take(a, "job", LEASE);
    ddb_lease *lease = NULL;
    for (int i = 0; i < 6; i++) {
        ck_assert(!try_once(b, "job", LEASE, &lease));
        cx_advance(LEASE / 3);
    }
    ck_assert(!try_once(b, "job", LEASE, &lease));
    ddb_lease_release(held);
    cx_proc_free(a);
    cx_proc_free(b);
}
END_TEST

/* The reference's pattern for a run-once process: acquire with a timeout a little longer
 * than a lease gives up on a live holder, and still takes over a crashed one. */
static void *acquire_with_timeout(void *arg)
{
    bg *b = arg;
    ddb_cancel *wait = ddb_cancel_new_linked(b->stop);
    ddb_cancel_after(wait, CX.fx.clock, 40000);
    b->rc = ddb_lock_acquire(b->p->locks, b->name, b->lease_ms, &b->lease, wait, &b->err);
    ddb_cancel_unref(wait);
    atomic_store(&b->done, true);
    return NULL;
}

static void start_with_timeout(bg *b, proc *p, const char *name)
{
    memset(b, 0, sizeof *b);
    b->p = p;
    b->name = name;
    b->lease_ms = LEASE;
    b->stop = ddb_cancel_new();
    ck_assert_int_eq(pthread_create(&b->th, NULL, acquire_with_timeout, b), 0);
}

START_TEST(test_acquire_with_timeout_live_and_crashed)
{
    proc *a = cx_proc(NULL), *b = cx_proc(NULL);
    /* A live holder: gives up after 40 s, with DDB_ECANCELED while ct is not set. */
    ddb_lease *held = cx_take(a, "nightly-report", LEASE);
    bg w;
    start_with_timeout(&w, b, "nightly-report");
    proc_wait_refusals(b, 1);
    for (int i = 0; i < 4; i++)
        cx_advance(10000);
    ck_assert_int_eq(bg_join(&w), DDB_ECANCELED);
    ck_assert_ptr_null(w.lease);
    ddb_lease_release(held);
    /* A crashed holder: taken over within the 40 s. */
    cx_sim_holder(a, "nightly-report-2", LEASE, NULL);
    long r = proc_refusals(b);
    start_with_timeout(&w, b, "nightly-report-2");
    proc_wait_refusals(b, r + 1);
    for (int i = 0; i < 3; i++)
        cx_advance(10000);
    ck_assert_int_eq(bg_join(&w), 0);
    ck_assert_ptr_nonnull(w.lease);
    ck_assert(ddb_lease_takeover(w.lease));
    ddb_lease_release(w.lease);
    cx_proc_free(a);
    cx_proc_free(b);
}
END_TEST

/* Two lock tables in one process contend like two processes. */
START_TEST(test_two_lock_tables_in_one_process_contend)
{
    proc *a = cx_proc(NULL);
    ddb_error err;
    ddb_lock_table *second = ddb_lock_table_new(a->table, NULL, &err);
    ck_assert_ptr_nonnull(second);
    ddb_lease *held = cx_take(a, "job", LEASE), *other = NULL;
    ck_assert_int_eq(ddb_lock_try_acquire(second, "job", LEASE, &other, NULL, &err), 0);
    ck_assert_ptr_null(other);
    ddb_lease_release(held);
    ck_assert_int_eq(ddb_lock_try_acquire(second, "job", LEASE, &other, NULL, &err), 0);
    ck_assert_ptr_nonnull(other);
    ddb_lease_release(other);
    ddb_lock_table_free(second);
    cx_proc_free(a);
}
END_TEST

/* Three processes contend for one lock: one holds it at a time, and each acquire raises
 * the token. */
START_TEST(test_three_processes_one_holder_at_a_time)
{
    proc *p[3] = {cx_proc(&(proc_options){.holder_label = "pod-a"}),
                  cx_proc(&(proc_options){.holder_label = "pod-b"}),
                  cx_proc(&(proc_options){.holder_label = "pod-c"})};
    ddb_lease *held = cx_take(p[0], "sweeper", LEASE);
    bg w[2];
    bg_acquire(&w[0], p[1], "sweeper", LEASE);
    bg_acquire(&w[1], p[2], "sweeper", LEASE);
    proc_wait_refusals(p[1], 1);
    proc_wait_refusals(p[2], 1);
    /* Both contenders wait on the clock (the holder's heartbeat is a task of its
     * client's scheduler, not a wait): an advance now releases their polls, and settling
     * waits for them. */
    ck_assert_int_eq(ddb_fake_clock_wait_for_waiters(CX.fx.clock, 2, 20000), 0);
    int64_t last = ddb_lease_fencing_token(held);
    ddb_lease_release(held);
    cx_advance(LEASE / 3); /* both read it free and write: one wins */
    ddb__lock_item li;
    cx_read(p[0], "sweeper", &li);
    ck_assert_msg(li.held, "fence %lld done %d %d refusals %ld %ld waiters %d",
                  (long long)li.fence, bg_done(&w[0]), bg_done(&w[1]), proc_refusals(p[1]),
                  proc_refusals(p[2]), ddb_fake_clock_waiters(CX.fx.clock));
    int winner = strcmp(li.holder, "pod-b") == 0 ? 0 : 1;
    ck_assert_str_eq(li.holder, winner == 0 ? "pod-b" : "pod-c");
    ddb__lock_item_cleanup(&li);
    int loser = 1 - winner;
    ck_assert_int_eq(bg_join(&w[winner]), 0);
    ck_assert_int_eq(ddb_lease_fencing_token(w[winner].lease), last + 1);
    proc_wait_refusals(p[1 + loser], 2); /* the loser found it held, and waits on */
    ck_assert(!bg_done(&w[loser]));
    ddb_lease_release(w[winner].lease);
    cx_advance(LEASE / 3);
    ck_assert_int_eq(bg_join(&w[loser]), 0);
    ck_assert_int_eq(ddb_lease_fencing_token(w[loser].lease), last + 2);
    ck_assert(!ddb_lease_takeover(w[loser].lease));
    ddb_lease_release(w[loser].lease);
    for (int i = 0; i < 3; i++)
        cx_proc_free(p[i]);
}
END_TEST

/* An acquire whose answer was lost is retried by the client; the retry finds its own
 * owner, and the lease is the one the first attempt took (its token, one write). */
START_TEST(test_lost_response_retry_keeps_first_lease)
{
    CX_NEEDS_FAKEDB();
    proc *a = cx_proc(&(proc_options){.max_attempts = 3});
    cx_sim_holder(a, "job", LEASE, NULL);
    cx_sim_release(a, "job"); /* token 1, free */
    fakedb_fault_add(CX.fx.db, &(fakedb_fault){.kind = FAKEDB_FAULT_LOST_RESPONSE,
                                               .operation = "UpdateItem",
                                               .count = 1});
    /* The client's retry backoff waits on the fake clock: move it from another thread,
     * a step at a time, each step settled (once the lease exists its heartbeat waits on
     * the clock too, and its renewals must keep up however slow the machine is). */
    bg w;
    bg_acquire(&w, a, "job", LEASE);
    while (!bg_done(&w)) {
        if (ddb_fake_clock_wait_for_waiters(CX.fx.clock, 1, 50) != 0)
            continue;
        ddb_fake_clock_advance(CX.fx.clock, 50);
        ck_assert_int_eq(ddb_fake_clock_settle(CX.fx.clock, 30000), 0);
    }
    ck_assert_int_eq(bg_join(&w), 0);
    ck_assert_ptr_nonnull(w.lease);
    ck_assert_int_eq(ddb_lease_fencing_token(w.lease), 2);
    ddb__lock_item li;
    cx_read(a, "job", &li);
    ck_assert_int_eq(li.fence, 2);
    ck_assert_str_eq(li.owner, ddb_lease_owner(w.lease));
    ddb__lock_item_cleanup(&li);
    ck_assert(!ddb_cancel_is_set(ddb_lease_ended(w.lease)));
    bool held = false;
    ck_assert_int_eq(ddb_lease_renew(w.lease, &held, NULL, NULL), 0);
    ck_assert(held);
    ddb_lease_release(w.lease);
    cx_proc_free(a);
}
END_TEST

/* An acquire whose answer never came (and no retry) is resolved by a read: the item names
 * this acquire's owner id, so the write was applied and the caller gets its lease; the
 * lock is never left blocked by a holder that does not know it holds it. */
START_TEST(test_unanswered_acquire_is_resolved_by_read)
{
    CX_NEEDS_FAKEDB();
    proc *a = cx_proc(NULL), *b = cx_proc(NULL);
    fakedb_fault_add(CX.fx.db, &(fakedb_fault){.kind = FAKEDB_FAULT_LOST_RESPONSE,
                                               .operation = "UpdateItem",
                                               .count = 1});
    long reads = cx_requests("GetItem");
    ddb_lease *lease = NULL;
    ddb_error err;
    ck_assert_int_eq(ddb_lock_try_acquire(a->locks, "job", LEASE, &lease, NULL, &err), 0);
    ck_assert_ptr_nonnull(lease);
    ck_assert_int_eq(ddb_lease_fencing_token(lease), 1);
    ck_assert_int_eq(cx_requests("GetItem"), reads + 1);
    ddb__lock_item li;
    cx_read(b, "job", &li);
    ck_assert(li.held);
    ck_assert_str_eq(li.owner, ddb_lease_owner(lease));
    ddb__lock_item_cleanup(&li);
    ddb_lease *other = NULL;
    ck_assert(!try_once(b, "job", LEASE, &other));
    ddb_lease_release(lease);
    ck_assert(try_once(b, "job", LEASE, &other));
    ck_assert_int_eq(ddb_lease_fencing_token(other), 2);
    ddb_lease_release(other);
    cx_proc_free(a);
    cx_proc_free(b);
}
END_TEST

/* An acquire whose answer arrives only after a whole lease hands out a lease that has
 * ended already. The clock is moved while the write is on its way. */
START_TEST(test_acquire_answered_after_lease_is_ended)
{
    cx_late_update l;
    cx_late_update_init(&l);
    cx_late_update_arm(&l, LEASE);
    ddb_client *c = dl_fixture_client(&CX.fx, &(ddb_client_options){.telemetry = &l.tel});
    ddb_error err;
    ddb_table *t = ddb_table_open(c, CX.shop, "pk", "sk", &err);
    ddb_lock_table *locks = ddb_lock_table_new(t, NULL, &err);
    ddb_lease *lease = NULL;
    ck_assert_int_eq(ddb_lock_try_acquire(locks, "job", LEASE, &lease, NULL, &err), 0);
    ck_assert_int_eq(atomic_load(&l.fired), 1);
    ck_assert_ptr_nonnull(lease);
    ck_assert(ddb_cancel_is_set(ddb_lease_ended(lease)));
    ck_assert_int_eq(ddb_lease_loss_reason(lease), DDB_LOSS_EXPIRED);
    bool held = true;
    ck_assert_int_eq(ddb_lease_renew(lease, &held, NULL, &err), 0);
    ck_assert(!held);
    ddb_lease_release(lease);
    /* A little less than a lease late is still a lease. */
    cx_late_update_arm(&l, LEASE - 1);
    ck_assert_int_eq(ddb_lock_try_acquire(locks, "job2", LEASE, &lease, NULL, &err), 0);
    ck_assert(!ddb_cancel_is_set(ddb_lease_ended(lease)));
    ddb_lease_release(lease);
    ddb_lock_table_free(locks);
    ddb_table_close(t);
    ddb_client_free(c);
}
END_TEST

/* The stop token ends a wait at once. */
START_TEST(test_acquire_cancelled_while_waiting)
{
    proc *a = cx_proc(NULL), *b = cx_proc(NULL);
    ddb_lease *held = cx_take(a, "job", LEASE);
    bg w;
    bg_acquire(&w, b, "job", LEASE);
    proc_wait_refusals(b, 1);
    ddb_cancel_set(w.stop);
    ck_assert_int_eq(bg_join(&w), DDB_ECANCELED);
    ck_assert_ptr_null(w.lease);
    ddb_lease_release(held);
    cx_proc_free(a);
    cx_proc_free(b);
}
END_TEST

/* An item at the lock's key with an owner but not a lock's attributes is an error that
 * names the lock and the table, for try, acquire and run_as_leader alike. */
static int never(ddb_lease *lease, ddb_cancel *stop, void *arg, ddb_error *err)
{
    ck_abort_msg("the work must not run");
    return 0;
}

START_TEST(test_entity_at_key_is_estate)
{
    proc *a = cx_proc(NULL);
    cx_put_raw(a, "user-7", DDB__LOCK_ATTR_OWNER, "alice");
    ddb_lease *lease = NULL;
    ddb_error err;
    ck_assert_int_eq(ddb_lock_try_acquire(a->locks, "user-7", LEASE, &lease, NULL, &err),
                     DDB_ESTATE);
    ck_assert_ptr_nonnull(strstr(err.message, "\"user-7\""));
    ck_assert_ptr_nonnull(strstr(err.message, CX.shop));
    ck_assert_int_eq(ddb_lock_acquire(a->locks, "user-7", LEASE, &lease, NULL, &err),
                     DDB_ESTATE);
    ck_assert_ptr_nonnull(strstr(err.message, "\"user-7\""));
    ck_assert_int_eq(ddb_lock_run_as_leader(a->locks, "user-7", LEASE, never, NULL, NULL, &err),
                     DDB_ESTATE);
    ck_assert_ptr_nonnull(strstr(err.message, CX.shop));
    cx_proc_free(a);
}
END_TEST

/* The lease bounds: 1 s to 1 day, with a message that says so. */
START_TEST(test_lease_bounds)
{
    proc *a = cx_proc(NULL);
    ddb_lease *lease = NULL;
    ddb_error err;
    ck_assert_int_eq(ddb_lock_try_acquire(a->locks, "x", DDB_LEASE_MIN_MS - 1, &lease, NULL,
                                          &err),
                     DDB_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.message, "999 ms"));
    ck_assert_int_eq(ddb_lock_acquire(a->locks, "x", DDB_LEASE_MAX_MS + 1, &lease, NULL, &err),
                     DDB_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.message, "1 day"));
    ck_assert_int_eq(ddb_lock_run_as_leader(a->locks, "x", 0, never, NULL, NULL, &err),
                     DDB_EINVAL);
    ck_assert_int_eq(ddb_lock_try_acquire(a->locks, "x", DDB_LEASE_MIN_MS, &lease, NULL, &err),
                     0);
    ddb_lease_release(lease);
    ck_assert_int_eq(ddb_lock_try_acquire(a->locks, "y", DDB_LEASE_MAX_MS, &lease, NULL, &err),
                     0);
    ddb_lease_release(lease);
    cx_proc_free(a);
}
END_TEST

/* Bad lock names are refused without a request. */
START_TEST(test_bad_names)
{
    proc *a = cx_proc(NULL);
    ddb_lease *lease = NULL;
    ddb_error err;
    char longname[300];
    memset(longname, 'a', sizeof longname - 1);
    longname[sizeof longname - 1] = '\0';
    const char *bad[] = {"", "with space", "tab\tname", "bad\xff", longname};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ck_assert_int_eq(ddb_lock_try_acquire(a->locks, bad[i], LEASE, &lease, NULL, &err),
                         DDB_EINVAL);
        ck_assert_ptr_null(lease);
    }
    ck_assert_int_eq(ddb_lock_try_acquire(a->locks, NULL, LEASE, &lease, NULL, &err),
                     DDB_EINVAL);
    ck_assert_int_eq(ddb_lock_try_acquire(NULL, "x", LEASE, &lease, NULL, &err), DDB_EINVAL);
    ck_assert_int_eq(ddb_lock_try_acquire(a->locks, "orders/42:ok", LEASE, &lease, NULL, &err),
                     0);
    ddb_lease_release(lease);
    cx_proc_free(a);
}
END_TEST

/* The refusal hook fires for a try that is turned away and for each poll that waits on,
 * never for an acquire that gets the lock. */
START_TEST(test_refusal_hook_fires_for_try_and_poll)
{
    proc *a = cx_proc(NULL), *b = cx_proc(NULL);
    ddb_lease *lease = cx_take(b, "free-lock", LEASE);
    ck_assert_int_eq(proc_refusals(b), 0);
    ddb_lease_release(lease);
    ddb_lease *held = cx_take(a, "job", LEASE);
    ck_assert(!try_once(b, "job", LEASE, &lease));
    ck_assert_int_eq(proc_refusals(b), 1);
    bg w;
    bg_acquire(&w, b, "job", LEASE);
    proc_wait_refusals(b, 2);
    cx_advance(LEASE / 3);
    proc_wait_refusals(b, 3);
    ddb_cancel_set(w.stop);
    bg_join(&w);
    ddb_lease_release(held);
    cx_proc_free(a);
    cx_proc_free(b);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("acquire");
    TCase *tc = tcase_create("acquire");
    tcase_add_checked_fixture(tc, cx_setup, cx_teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_try_returns_null_when_held);
    tcase_add_test(tc, test_free_lock_costs_one_request);
    tcase_add_test(tc, test_waiting_costs_one_read_per_poll);
    tcase_add_test(tc, test_released_lock_acquired_at_next_poll);
    tcase_add_test(tc, test_poll_every_third_of_holders_lease);
    tcase_add_test(tc, test_poll_at_most_10s_and_sooner_at_lease_end);
    tcase_add_test(tc, test_takeover_after_whole_lease_from_first_read);
    tcase_add_test(tc, test_live_holder_never_taken_over);
    tcase_add_test(tc, test_takeover_ignores_wall_clock_offset);
    tcase_add_test(tc, test_try_takeover_after_whole_lease_over_calls);
    tcase_add_test(tc, test_try_fresh_lock_table_never_takes_over);
    tcase_add_test(tc, test_try_sees_renewal_as_new_version);
    tcase_add_test(tc, test_acquire_with_timeout_live_and_crashed);
    tcase_add_test(tc, test_two_lock_tables_in_one_process_contend);
    tcase_add_test(tc, test_three_processes_one_holder_at_a_time);
    tcase_add_test(tc, test_lost_response_retry_keeps_first_lease);
    tcase_add_test(tc, test_unanswered_acquire_is_resolved_by_read);
    tcase_add_test(tc, test_acquire_answered_after_lease_is_ended);
    tcase_add_test(tc, test_acquire_cancelled_while_waiting);
    tcase_add_test(tc, test_entity_at_key_is_estate);
    tcase_add_test(tc, test_lease_bounds);
    tcase_add_test(tc, test_bad_names);
    tcase_add_test(tc, test_refusal_hook_fires_for_try_and_poll);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return dl_check_run(suite());
}
