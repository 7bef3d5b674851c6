/* test_heartbeat.c: a lease's life -- renewals every third of the lease timed from the
 * send of the last one that succeeded, retries of failed renewals, the four ways a
 * lease is lost, ddb_lease_renew, the release, and one scheduler thread per client. */
#include <check.h>

#include "dl_check.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coord_fixture.h"

#define LEASE 30000

static int renewals(proc *p)
{
    return rec_metrics(p->rec, "dynalock.lock.renewals", NULL, NULL);
}

static int failed_renewals(proc *p)
{
    return rec_metrics(p->rec, "dynalock.lock.renewals", "error.type", NULL);
}

/* A lease renews itself every third of its duration. */
START_TEST(test_renews_every_third)
{
    proc *a = cx_proc(NULL);
    ddb_lease *lease = cx_take(a, "job", LEASE);
    cx_advance(LEASE / 3 - 1);
    ck_assert_int_eq(renewals(a), 0);
    cx_advance(1);
    ck_assert_int_eq(renewals(a), 1);
    cx_advance(LEASE / 3 - 1);
    ck_assert_int_eq(renewals(a), 1);
    cx_advance(1);
    ck_assert_int_eq(renewals(a), 2);
    ck_assert_int_eq(failed_renewals(a), 0);
    ddb_lease_release(lease);
    cx_proc_free(a);
}
END_TEST

/* Each renewal writes a new record version; owner and token stay. */
START_TEST(test_rvn_changes_on_renewal)
{
    proc *a = cx_proc(NULL);
    ddb_lease *lease = cx_take(a, "job", LEASE);
    ddb__lock_item before, after;
    cx_read(a, "job", &before);
    cx_advance(LEASE / 3);
    cx_read(a, "job", &after);
    ck_assert_str_ne(before.rvn, after.rvn);
    ck_assert_str_eq(before.owner, after.owner);
    ck_assert_int_eq(before.fence, after.fence);
    ck_assert_int_eq(after.lease_ms, LEASE);
    ddb__lock_item_cleanup(&before);
    ddb__lock_item_cleanup(&after);
    ddb_lease_release(lease);
    cx_proc_free(a);
}
END_TEST

/* The next renewal is sent a third of the lease after the last successful one was SENT,
 * not after its answer: a renewal whose answer takes 2 s does not push the next. */
START_TEST(test_next_renewal_timed_from_send)
{
    cx_late_update s;
    cx_late_update_init(&s);
    ddb_client *c = dl_fixture_client(&CX.fx, &(ddb_client_options){.telemetry = &s.tel});
    ddb_error err;
    ddb_table *t = ddb_table_open(c, CX.shop, "pk", "sk", &err);
    ddb_lock_table *locks = ddb_lock_table_new(t, NULL, &err);
    proc *watch = cx_proc(NULL);
    ddb_lease *lease = NULL;
    ck_assert_int_eq(ddb_lock_try_acquire(locks, "job", LEASE, &lease, NULL, &err), 0);
    ddb__lock_item first, second, third;
    cx_read(watch, "job", &first);
    cx_late_update_arm(&s, 2000);
    cx_advance(10000); /* the renewal is sent at 10 s, answered at 12 s */
    cx_read(watch, "job", &second);
    ck_assert_str_ne(first.rvn, second.rvn);
    ck_assert_int_eq(cx_mono_ms(), 12000);
    cx_advance(7999); /* 19.999 s: nothing yet */
    cx_read(watch, "job", &third);
    ck_assert_str_eq(second.rvn, third.rvn);
    ddb__lock_item_cleanup(&third);
    cx_advance(1); /* 20 s: a third after the send of the last, not after its answer */
    cx_read(watch, "job", &third);
    ck_assert_str_ne(second.rvn, third.rvn);
    ddb__lock_item_cleanup(&first);
    ddb__lock_item_cleanup(&second);
    ddb__lock_item_cleanup(&third);
    ddb_lease_release(lease);
    ddb_lock_table_free(locks);
    ddb_table_close(t);
    ddb_client_free(c);
    cx_proc_free(watch);
}
END_TEST

/* A renewal that fails is tried again after 100 ms, then twice as long each time, up to
 * a sixth of the lease; the lease outlives any number of failures that leave it time. */
START_TEST(test_failed_renewals_back_off_and_lease_outlives_them)
{
    CX_NEEDS_FAKEDB();
    proc *a = cx_proc(NULL);
    ddb_lease *lease = cx_take(a, "job", LEASE);
    long fault = fakedb_fault_add(CX.fx.db, &(fakedb_fault){.kind = FAKEDB_FAULT_ERROR,
                                                            .operation = "UpdateItem",
                                                            .error_type = "InternalServerError",
                                                            .status = 500});
    ck_assert_int_gt(fault, 0);
    cx_advance(LEASE / 3);
    ck_assert_int_eq(failed_renewals(a), 1);
    ck_assert_int_eq(rec_logs(a->rec, 42), 1);
    const int64_t waits[] = {100, 200, 400, 800, 1600, 3200, 5000};
    int attempts = 1;
    for (size_t i = 0; i < sizeof waits / sizeof waits[0]; i++) {
        cx_advance(waits[i] - 1);
        ck_assert_int_eq(failed_renewals(a), attempts);
        cx_advance(1);
        ck_assert_int_eq(failed_renewals(a), ++attempts);
    }
    rec_log l;
    ck_assert(rec_last_log(a->rec, 42, &l));
    ck_assert_int_eq(l.level, DDB_LOG_WARN);
    ck_assert_str_eq(rec_field(&l, "retry_in_ms"), "5000");
    /* 21.3 s into the lease; DynamoDB answers again at 26.3 s, before it runs out. */
    fakedb_fault_remove(CX.fx.db, fault);
    cx_advance(5000);
    ck_assert_int_eq(renewals(a), attempts + 1);
    ck_assert(!ddb_cancel_is_set(ddb_lease_ended(lease)));
    for (int i = 0; i < 3; i++)
        cx_advance(LEASE / 3);
    ck_assert(!ddb_cancel_is_set(ddb_lease_ended(lease)));
    ddb_lease_release(lease);
    cx_proc_free(a);
}
END_TEST

/* A lease that runs out on the monotonic clock without a renewal that succeeded is lost
 * (expired). */
START_TEST(test_lost_expired)
{
    CX_NEEDS_FAKEDB();
    proc *a = cx_proc(NULL);
    ddb_lease *lease = cx_take(a, "job", LEASE);
    fakedb_fault_add(CX.fx.db, &(fakedb_fault){.kind = FAKEDB_FAULT_ERROR,
                                               .operation = "UpdateItem"});
    for (int i = 0; i < 29; i++)
        cx_advance(1000);
    ck_assert(!ddb_cancel_is_set(ddb_lease_ended(lease)));
    cx_advance(999);
    ck_assert(!ddb_cancel_is_set(ddb_lease_ended(lease)));
    cx_advance(1);
    ck_assert(ddb_cancel_is_set(ddb_lease_ended(lease)));
    ck_assert_int_eq(ddb_lease_loss_reason(lease), DDB_LOSS_EXPIRED);
    ck_assert_int_eq(rec_metrics(a->rec, "dynalock.lock.losses", "dynalock.lock.loss_reason",
                                 "expired"),
                     1);
    rec_log l;
    ck_assert(rec_last_log(a->rec, 40, &l));
    ck_assert_str_eq(rec_field(&l, "reason"), "expired");
    ddb_lease_release(lease);
    cx_proc_free(a);
}
END_TEST

/* A renewal that finds another owner loses the lease (taken_over); so does one that
 * finds the lock released by someone else. */
START_TEST(test_lost_taken_over)
{
    proc *a = cx_proc(NULL);
    ddb_lease *lease = cx_take(a, "job", LEASE);
    int64_t token = cx_sim_holder(a, "job", LEASE, "another-pod");
    ck_assert_int_eq(token, 2);
    cx_advance(LEASE / 3);
    ck_assert(ddb_cancel_is_set(ddb_lease_ended(lease)));
    ck_assert_int_eq(ddb_lease_loss_reason(lease), DDB_LOSS_TAKEN_OVER);
    ck_assert_str_eq(ddb_loss_reason_name(ddb_lease_loss_reason(lease)), "taken_over");
    ddb_lease_release(lease);
    ddb__lock_item li;
    cx_read(a, "job", &li);
    ck_assert_str_eq(li.holder, "another-pod"); /* the release left it alone */
    ddb__lock_item_cleanup(&li);

    lease = cx_take(a, "job2", LEASE);
    cx_sim_release(a, "job2");
    bool held = true;
    ck_assert_int_eq(ddb_lease_renew(lease, &held, NULL, NULL), 0);
    ck_assert(!held);
    ck_assert_int_eq(ddb_lease_loss_reason(lease), DDB_LOSS_TAKEN_OVER);
    ddb_lease_release(lease);
    cx_proc_free(a);
}
END_TEST

/* A renewal that finds the item deleted loses the lease (deleted), and the next acquire
 * starts the token at 1 again. */
START_TEST(test_lost_deleted_and_token_restarts)
{
    proc *a = cx_proc(NULL);
    ddb_lease *lease = cx_take(a, "job", LEASE);
    ddb_lease_release(lease);
    lease = cx_take(a, "job", LEASE);
    ck_assert_int_eq(ddb_lease_fencing_token(lease), 2);
    cx_sim_delete(a, "job");
    cx_advance(LEASE / 3);
    ck_assert_int_eq(ddb_lease_loss_reason(lease), DDB_LOSS_DELETED);
    ck_assert_int_eq(rec_metrics(a->rec, "dynalock.lock.losses", "dynalock.lock.loss_reason",
                                 "deleted"),
                     1);
    ddb_lease_release(lease);
    lease = cx_take(a, "job", LEASE);
    ck_assert_int_eq(ddb_lease_fencing_token(lease), 1);
    ddb_lease_release(lease);
    cx_proc_free(a);
}
END_TEST

/* DynamoDB answering a renewal with ResourceNotFoundException loses the lease
 * (table_not_found). */
START_TEST(test_lost_table_not_found)
{
    proc *a = cx_proc(NULL);
    ddb_lease *lease = cx_take(a, "job", LEASE);
    ddb_error err;
    ck_assert_int_eq(ddb_client_delete_table(a->client, CX.shop, NULL, &err), 0);
    cx_advance(LEASE / 3);
    ck_assert(ddb_cancel_is_set(ddb_lease_ended(lease)));
    ck_assert_int_eq(ddb_lease_loss_reason(lease), DDB_LOSS_TABLE_NOT_FOUND);
    ddb_lease_release(lease);
    cx_proc_free(a);
}
END_TEST

/* Losing is final: the lease stays lost even when the item comes back to its owner's
 * state, and a renewal says false. */
START_TEST(test_loss_is_final)
{
    proc *a = cx_proc(NULL);
    ddb_lease *lease = cx_take(a, "job", LEASE);
    cx_sim_holder(a, "job", LEASE, NULL);
    cx_advance(LEASE / 3);
    ck_assert(ddb_cancel_is_set(ddb_lease_ended(lease)));
    cx_sim_release(a, "job");
    bool held = true;
    ck_assert_int_eq(ddb_lease_renew(lease, &held, NULL, NULL), 0);
    ck_assert(!held);
    int before = renewals(a);
    cx_advance(LEASE);
    ck_assert_int_eq(renewals(a), before); /* no heartbeat after a loss */
    ck_assert_int_eq(ddb_lease_loss_reason(lease), DDB_LOSS_TAKEN_OVER);
    ddb_lease_release(lease);
    cx_proc_free(a);
}
END_TEST

/* ddb_lease_renew renews at once and moves the heartbeat: the next renewal comes a third
 * after it. */
START_TEST(test_renew_now_moves_heartbeat)
{
    proc *a = cx_proc(NULL);
    ddb_lease *lease = cx_take(a, "job", LEASE);
    cx_advance(5000);
    bool held = false;
    ddb_error err;
    ck_assert_int_eq(ddb_lease_renew(lease, &held, NULL, &err), 0);
    ck_assert(held);
    ck_assert_int_eq(renewals(a), 1);
    cx_advance(9999); /* 14.999 s */
    ck_assert_int_eq(renewals(a), 1);
    cx_advance(1); /* 15 s = 5 s + a third */
    ck_assert_int_eq(renewals(a), 2);
    ddb_lease_release(lease);
    cx_proc_free(a);
}
END_TEST

/* A renewal by ddb_lease_renew that fails returns the error and leaves the lease to its
 * heartbeat. */
START_TEST(test_renew_error_left_to_heartbeat)
{
    CX_NEEDS_FAKEDB();
    proc *a = cx_proc(NULL);
    ddb_lease *lease = cx_take(a, "job", LEASE);
    fakedb_fault_add(CX.fx.db, &(fakedb_fault){.kind = FAKEDB_FAULT_ERROR,
                                               .operation = "UpdateItem",
                                               .count = 1});
    bool held = false;
    ddb_error err;
    ck_assert_int_eq(ddb_lease_renew(lease, &held, NULL, &err), DDB_ETHROTTLED);
    ck_assert(held);
    ck_assert(!ddb_cancel_is_set(ddb_lease_ended(lease)));
    cx_advance(LEASE / 3);
    ck_assert_int_eq(renewals(a) - failed_renewals(a), 1);
    ck_assert(!ddb_cancel_is_set(ddb_lease_ended(lease)));
    ddb_lease_release(lease);
    cx_proc_free(a);
}
END_TEST

/* A release is one conditional UpdateItem that removes owner, leaseMs and holder and
 * keeps the item and its token; it sets the ended token. */
START_TEST(test_release_is_one_conditional_update)
{
    CX_NEEDS_FAKEDB();
    proc *a = cx_proc(&(proc_options){.holder_label = "pod-1"});
    ddb_lease *lease = cx_take(a, "job", LEASE);
    ddb_cancel *ended = ddb_cancel_ref(ddb_lease_ended(lease));
    long before = cx_requests(NULL), updates = cx_requests("UpdateItem");
    ddb_lease_release(lease);
    ck_assert_int_eq(cx_requests(NULL) - before, 1);
    ck_assert_int_eq(cx_requests("UpdateItem") - updates, 1);
    ck_assert(ddb_cancel_is_set(ended));
    ddb_cancel_unref(ended);
    ddb__lock_item li;
    cx_read(a, "job", &li);
    ck_assert(li.exists);
    ck_assert(!li.held);
    ck_assert_ptr_null(li.holder);
    ck_assert_int_eq(li.lease_ms, 0);
    ck_assert_int_eq(li.fence, 1);
    ddb__lock_item_cleanup(&li);
    int before_renewals = renewals(a);
    cx_advance(LEASE);
    ck_assert_int_eq(renewals(a), before_renewals);
    cx_proc_free(a);
}
END_TEST

/* A release that fails is logged (43), never returned; the lock is free once its lease
 * runs out. */
START_TEST(test_release_failure_logged)
{
    CX_NEEDS_FAKEDB();
    proc *a = cx_proc(NULL), *b = cx_proc(NULL);
    ddb_lease *lease = cx_take(a, "job", LEASE);
    fakedb_fault_add(CX.fx.db, &(fakedb_fault){.kind = FAKEDB_FAULT_ERROR,
                                               .operation = "UpdateItem",
                                               .error_type = "InternalServerError",
                                               .status = 500,
                                               .count = 1});
    ddb_lease_release(lease);
    rec_log l;
    ck_assert(rec_last_log(a->rec, 43, &l));
    ck_assert_int_eq(l.level, DDB_LOG_WARN);
    ck_assert_str_eq(l.category, "dynalock.lock");
    ck_assert_str_eq(rec_field(&l, "lock"), "job");
    ddb_lease *next = NULL;
    ck_assert_int_eq(ddb_lock_try_acquire(b->locks, "job", LEASE, &next, NULL, NULL), 0);
    ck_assert_ptr_null(next);
    cx_advance(LEASE);
    ck_assert_int_eq(ddb_lock_try_acquire(b->locks, "job", LEASE, &next, NULL, NULL), 0);
    ck_assert_ptr_nonnull(next);
    ddb_lease_release(next);
    cx_proc_free(a);
    cx_proc_free(b);
}
END_TEST

/* A lease never released is renewed for as long as the process runs. */
START_TEST(test_unreleased_lease_renewed_for_life)
{
    proc *a = cx_proc(NULL);
    ddb_lease *lease = cx_take(a, "job", 3000);
    for (int i = 1; i <= 90; i++)
        cx_advance(1000);
    ck_assert_int_eq(renewals(a), 90);
    ck_assert(!ddb_cancel_is_set(ddb_lease_ended(lease)));
    cx_proc_free(a); /* freeing the lock table releases the lock still held... */
    ck_assert(ddb_cancel_is_set(ddb_lease_ended(lease)));
    ddb_lease_release(lease); /* ...and the holder frees its lease */
}
END_TEST

/* The longest lease, a day, is renewed every 8 hours. */
START_TEST(test_day_lease_renewed_every_8_hours)
{
    proc *a = cx_proc(NULL);
    ddb_lease *lease = cx_take(a, "job", DDB_LEASE_MAX_MS);
    cx_advance(8LL * 3600 * 1000 - 1);
    ck_assert_int_eq(renewals(a), 0);
    cx_advance(1);
    ck_assert_int_eq(renewals(a), 1);
    ddb_lease_release(lease);
    cx_proc_free(a);
}
END_TEST

/* Every lease of a client is renewed by one scheduler thread, however many. */
START_TEST(test_one_scheduler_thread_per_client)
{
    proc *a = cx_proc(NULL);
    ddb_error err;
    ddb_lock_table *second = ddb_lock_table_new(a->table, NULL, &err);
    enum { N = 300 };
    ddb_lease *leases[N];
    for (int i = 0; i < N; i++) {
        char name[32];
        snprintf(name, sizeof name, "entity-%d", i);
        ck_assert_int_eq(ddb_lock_try_acquire(i % 2 ? second : a->locks, name,
                                              LEASE + (i % 7) * 1000, &leases[i], NULL, &err),
                         0);
        ck_assert_ptr_nonnull(leases[i]);
    }
    ck_assert_int_eq(ddb__sched_workers(), 1);
    for (int i = 0; i < 3; i++)
        cx_advance(LEASE / 3);
    for (int i = 0; i < N; i++)
        ck_assert(!ddb_cancel_is_set(ddb_lease_ended(leases[i])));
    ck_assert_int_ge(renewals(a), N);
    for (int i = 0; i < N; i++)
        ddb_lease_release(leases[i]);
    ddb_lock_table_free(second);
    cx_proc_free(a);
    ck_assert_int_eq(ddb__sched_workers(), 0);
}
END_TEST

/* A lease that expired is still released: its item may still name it. */
START_TEST(test_expired_lease_release_frees_lock)
{
    CX_NEEDS_FAKEDB();
    proc *a = cx_proc(NULL), *b = cx_proc(NULL);
    ddb_lease *lease = cx_take(a, "job", LEASE);
    long fault = fakedb_fault_add(CX.fx.db, &(fakedb_fault){.kind = FAKEDB_FAULT_ERROR,
                                                            .operation = "UpdateItem"});
    for (int i = 0; i < 6; i++)
        cx_advance(LEASE / 6);
    ck_assert_int_eq(ddb_lease_loss_reason(lease), DDB_LOSS_EXPIRED);
    fakedb_fault_remove(CX.fx.db, fault);
    ddb_lease_release(lease);
    ddb_lease *next = NULL;
    ck_assert_int_eq(ddb_lock_try_acquire(b->locks, "job", LEASE, &next, NULL, NULL), 0);
    ck_assert_ptr_nonnull(next);
    ck_assert(!ddb_lease_takeover(next));
    ddb_lease_release(next);
    cx_proc_free(a);
    cx_proc_free(b);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("heartbeat");
    TCase *tc = tcase_create("heartbeat");
    tcase_add_checked_fixture(tc, cx_setup, cx_teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_renews_every_third);
    tcase_add_test(tc, test_rvn_changes_on_renewal);
    tcase_add_test(tc, test_next_renewal_timed_from_send);
    tcase_add_test(tc, test_failed_renewals_back_off_and_lease_outlives_them);
    tcase_add_test(tc, test_lost_expired);
    tcase_add_test(tc, test_lost_taken_over);
    tcase_add_test(tc, test_lost_deleted_and_token_restarts);
    tcase_add_test(tc, test_lost_table_not_found);
    tcase_add_test(tc, test_loss_is_final);
    tcase_add_test(tc, test_renew_now_moves_heartbeat);
    tcase_add_test(tc, test_renew_error_left_to_heartbeat);
    tcase_add_test(tc, test_release_is_one_conditional_update);
    tcase_add_test(tc, test_release_failure_logged);
    tcase_add_test(tc, test_unreleased_lease_renewed_for_life);
    tcase_add_test(tc, test_day_lease_renewed_every_8_hours);
    tcase_add_test(tc, test_one_scheduler_thread_per_client);
    tcase_add_test(tc, test_expired_lease_release_frees_lock);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return dl_check_run(suite());
}
