/* test_observe.c: what the lock layer tells operators -- spans with their attributes and
 * parents, renewals as roots linked to their acquire, the four metrics without the lock
 * name, and the log events 40-49 in category dynalock.lock at the reference's levels. */
#include <check.h>

#include "dl_check.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coord_fixture.h"

#define LEASE 30000

/* An acquire's span is the parent of its requests; it carries the table, the lock name,
 * acquired, takeover and the fencing token. */
START_TEST(test_acquire_span_and_children)
{
    proc *a = cx_proc(NULL), *b = cx_proc(NULL);
    ddb_lease *held = NULL;
    ck_assert_int_eq(ddb_lock_acquire(a->locks, "job", LEASE, &held, NULL, NULL), 0);
    rec_span s;
    ck_assert_int_eq(rec_spans(a->rec, "Lock.Acquire", &s), 1);
    ck_assert(s.ended);
    ck_assert_str_eq(rec_span_attr(&s, "db.collection.name"), CX.shop);
    ck_assert_str_eq(rec_span_attr(&s, "dynalock.lock.name"), "job");
    ck_assert_str_eq(rec_span_attr(&s, "dynalock.lock.acquired"), "true");
    ck_assert_str_eq(rec_span_attr(&s, "dynalock.lock.takeover"), "false");
    ck_assert_str_eq(rec_span_attr(&s, "dynalock.lock.fencing_token"), "1");
    ck_assert_int_eq(rec_children(a->rec, s.id, "UpdateItem"), 1);

    /* A waiting contender's polls are GetItem spans under its Lock.Acquire. */
    bg w;
    bg_acquire(&w, b, "job", LEASE);
    proc_wait_refusals(b, 1);
    cx_advance(LEASE / 3);
    proc_wait_refusals(b, 2);
    cx_advance(LEASE / 3);
    proc_wait_refusals(b, 3);
    ddb_cancel_set(w.stop);
    bg_join(&w);
    ck_assert_int_eq(rec_spans(b->rec, "Lock.Acquire", &s), 1);
    ck_assert_int_eq(rec_children(b->rec, s.id, "GetItem"), 2);
    ck_assert_str_eq(rec_span_attr(&s, "dynalock.lock.acquired"), "false");
    ck_assert_ptr_null(rec_span_attr(&s, "dynalock.lock.fencing_token"));

    /* try_acquire has its own span name. */
    ddb_lease *none = NULL;
    ck_assert_int_eq(ddb_lock_try_acquire(b->locks, "job", LEASE, &none, NULL, NULL), 0);
    ck_assert_int_eq(rec_spans(b->rec, "Lock.TryAcquire", &s), 1);
    ck_assert_str_eq(rec_span_attr(&s, "dynalock.lock.acquired"), "false");
    ddb_lease_release(held);
    ck_assert_int_eq(rec_spans(a->rec, "Lock.Release", &s), 1);
    ck_assert_int_eq(rec_children(a->rec, s.id, "UpdateItem"), 1);
    cx_proc_free(a);
    cx_proc_free(b);
}
END_TEST

/* A renewal of the heartbeat is the root of its own trace, linked to the acquire's
 * span; a renewal by ddb_lease_renew is a Lock.Renew span too. */
START_TEST(test_renew_span_is_root_linked_to_acquire)
{
    proc *a = cx_proc(NULL);
    uint64_t outer = ddb__span_start(ddb_client_telemetry(a->client), "caller", 0, NULL, 0);
    uint64_t saved = ddb_telemetry_set_parent(outer); /* the caller's own span */
    ddb_lease *lease = NULL;
    ck_assert_int_eq(ddb_lock_acquire(a->locks, "job", LEASE, &lease, NULL, NULL), 0);
    ddb_telemetry_set_parent(saved);
    rec_span acq, renew;
    ck_assert_int_eq(rec_spans(a->rec, "Lock.Acquire", &acq), 1);
    ck_assert_uint_eq(acq.parent, outer);
    cx_advance(LEASE / 3);
    ck_assert_int_eq(rec_spans(a->rec, "Lock.Renew", &renew), 1);
    ck_assert_uint_eq(renew.parent, 0);
    ck_assert_uint_eq(renew.n_links, 1);
    ck_assert_uint_eq(renew.links[0], acq.id);
    ck_assert_int_eq(rec_children(a->rec, renew.id, "UpdateItem"), 1);
    bool held;
    ck_assert_int_eq(ddb_lease_renew(lease, &held, NULL, NULL), 0);
    ck_assert_int_eq(rec_spans(a->rec, "Lock.Renew", &renew), 2);
    ck_assert_uint_eq(renew.links[0], acq.id);
    ddb_lease_release(lease);
    cx_proc_free(a);
}
END_TEST

static bool metric_has_no_lock_name(const rec_metric *m)
{
    for (size_t i = 0; i < m->n; i++)
        if (strcmp(m->keys[i], "dynalock.lock.name") == 0 || strcmp(m->values[i], "job") == 0)
            return false;
    return true;
}

/* The four metrics with their units and attributes, never the lock name, never the
 * holder label. */
START_TEST(test_metrics)
{
    proc *a = cx_proc(&(proc_options){.holder_label = "pod-a"}), *b = cx_proc(NULL);
    ddb_lease *lease = NULL;
    ck_assert_int_eq(ddb_lock_try_acquire(a->locks, "job", LEASE, &lease, NULL, NULL), 0);
    rec_metric m;
    ck_assert(rec_last_metric(a->rec, "dynalock.lock.acquisitions", &m));
    ck_assert_str_eq(m.unit, "{lease}");
    ck_assert_str_eq(rec_metric_attr(&m, "db.collection.name"), CX.shop);
    ck_assert_str_eq(rec_metric_attr(&m, "dynalock.lock.takeover"), "false");
    ck_assert(metric_has_no_lock_name(&m));
    cx_advance(LEASE / 3);
    ck_assert(rec_last_metric(a->rec, "dynalock.lock.renewals", &m));
    ck_assert_str_eq(m.unit, "{renewal}");
    ck_assert_ptr_null(rec_metric_attr(&m, "error.type"));
    ck_assert(metric_has_no_lock_name(&m));
    cx_sim_holder(b, "job", LEASE, NULL);
    cx_advance(LEASE / 3);
    ck_assert(rec_last_metric(a->rec, "dynalock.lock.renewals", &m));
    ck_assert_str_eq(rec_metric_attr(&m, "error.type"), "ConditionalCheckFailedException");
    ck_assert(rec_last_metric(a->rec, "dynalock.lock.losses", &m));
    ck_assert_str_eq(m.unit, "{lease}");
    ck_assert_str_eq(rec_metric_attr(&m, "dynalock.lock.loss_reason"), "taken_over");
    ck_assert_str_eq(rec_metric_attr(&m, "db.collection.name"), CX.shop);
    ck_assert(metric_has_no_lock_name(&m));
    /* Released leases are not losses. */
    ddb_lease_release(lease);
    ck_assert_int_eq(rec_metrics(a->rec, "dynalock.lock.losses", NULL, NULL), 1);
    /* Nothing carries the holder label. */
    pthread_mutex_lock(&a->rec->mu);
    for (size_t i = 0; i < a->rec->n_metrics; i++)
        for (size_t k = 0; k < a->rec->metrics[i].n; k++)
            ck_assert_str_ne(a->rec->metrics[i].values[k], "pod-a");
    for (size_t i = 0; i < a->rec->n_spans; i++)
        for (size_t k = 0; k < a->rec->spans[i].n; k++)
            ck_assert_str_ne(a->rec->spans[i].values[k], "pod-a");
    pthread_mutex_unlock(&a->rec->mu);
    cx_proc_free(a);
    cx_proc_free(b);
}
END_TEST

/* contention_retries has its unit and the error type. */
static int quick(ddb_lease *lease, ddb_cancel *stop, void *arg, ddb_error *err)
{
    return 0;
}

START_TEST(test_contention_retries_metric)
{
    CX_NEEDS_FAKEDB();
    proc *a = cx_proc(NULL);
    fakedb_fault_add(CX.fx.db, &(fakedb_fault){.kind = FAKEDB_FAULT_ERROR,
                                               .operation = "UpdateItem",
                                               .count = 1});
    bg w;
    bg_leader(&w, a, "job", LEASE, quick, NULL);
    rec_wait_metrics(a->rec, "dynalock.lock.contention_retries", 1);
    ck_assert_int_eq(ddb_fake_clock_wait_for_waiters(CX.fx.clock, 1, 20000), 0);
    cx_advance(LEASE / 3);
    ck_assert_int_eq(bg_join(&w), 0);
    rec_metric m;
    ck_assert(rec_last_metric(a->rec, "dynalock.lock.contention_retries", &m));
    ck_assert_str_eq(m.unit, "{retry}");
    ck_assert_str_eq(rec_metric_attr(&m, "error.type"), "ProvisionedThroughputExceededException");
    ck_assert_str_eq(rec_metric_attr(&m, "db.collection.name"), CX.shop);
    ck_assert(metric_has_no_lock_name(&m));
    cx_proc_free(a);
}
END_TEST

/* The log events: category, id and level as the reference gives them, with the holder
 * labels of both in a takeover (41). */
START_TEST(test_takeover_log_41)
{
    proc *a = cx_proc(NULL), *b = cx_proc(&(proc_options){.holder_label = "pod-b"});
    cx_sim_holder(a, "job", LEASE, "crashed-pod");
    ddb_lease *lease = NULL;
    ck_assert_int_eq(ddb_lock_try_acquire(b->locks, "job", LEASE, &lease, NULL, NULL), 0);
    cx_advance(LEASE);
    ck_assert_int_eq(ddb_lock_try_acquire(b->locks, "job", LEASE, &lease, NULL, NULL), 0);
    ck_assert_ptr_nonnull(lease);
    rec_log l;
    ck_assert(rec_last_log(b->rec, 41, &l));
    ck_assert_int_eq(l.level, DDB_LOG_INFO);
    ck_assert_str_eq(l.category, "dynalock.lock");
    ck_assert_str_eq(rec_field(&l, "previous_holder"), "crashed-pod");
    ck_assert_str_eq(rec_field(&l, "holder"), "pod-b");
    ck_assert_str_eq(rec_field(&l, "lock"), "job");
    rec_metric m;
    ck_assert(rec_last_metric(b->rec, "dynalock.lock.acquisitions", &m));
    ck_assert_str_eq(rec_metric_attr(&m, "dynalock.lock.takeover"), "true");
    rec_span s;
    rec_spans(b->rec, "Lock.TryAcquire", &s);
    ck_assert_str_eq(rec_span_attr(&s, "dynalock.lock.takeover"), "true");
    ck_assert_str_eq(rec_span_attr(&s, "dynalock.lock.fencing_token"), "2");
    ddb_lease_release(lease);
    cx_proc_free(a);
    cx_proc_free(b);
}
END_TEST

/* Log 40 is a warning with the reason; every lock log is in category dynalock.lock. */
START_TEST(test_loss_log_40_and_category)
{
    proc *a = cx_proc(&(proc_options){.holder_label = "pod-a"});
    ddb_lease *lease = NULL;
    ck_assert_int_eq(ddb_lock_try_acquire(a->locks, "job", LEASE, &lease, NULL, NULL), 0);
    cx_sim_delete(a, "job");
    cx_advance(LEASE / 3);
    rec_log l;
    ck_assert(rec_last_log(a->rec, 40, &l));
    ck_assert_int_eq(l.level, DDB_LOG_WARN);
    ck_assert_str_eq(rec_field(&l, "reason"), "deleted");
    ck_assert_str_eq(rec_field(&l, "holder"), "pod-a");
    pthread_mutex_lock(&a->rec->mu);
    for (size_t i = 0; i < a->rec->n_logs; i++)
        if (a->rec->logs[i].event_id >= 40 && a->rec->logs[i].event_id <= 49)
            ck_assert_str_eq(a->rec->logs[i].category, "dynalock.lock");
    pthread_mutex_unlock(&a->rec->mu);
    ddb_lease_release(lease);
    cx_proc_free(a);
}
END_TEST

/* Logs below the client's level are not sent. */
START_TEST(test_log_level_respected)
{
    proc *a = cx_proc(&(proc_options){.log_level = DDB_LOG_WARN});
    ddb_lease *lease = NULL, *none = NULL;
    ck_assert_int_eq(ddb_lock_try_acquire(a->locks, "job", LEASE, &lease, NULL, NULL), 0);
    cx_sim_holder(a, "job", LEASE, NULL);
    cx_advance(LEASE / 3);
    ck_assert_int_eq(rec_logs(a->rec, 40), 1);
    ck_assert_int_eq(ddb_lock_try_acquire(a->locks, "job", LEASE, &none, NULL, NULL), 0);
    cx_advance(LEASE);
    ck_assert_int_eq(ddb_lock_try_acquire(a->locks, "job", LEASE, &none, NULL, NULL), 0);
    ck_assert_ptr_nonnull(none); /* a takeover: log 41 is information, below WARN */
    ck_assert_int_eq(rec_logs(a->rec, 41), 0);
    pthread_mutex_lock(&a->rec->mu);
    for (size_t i = 0; i < a->rec->n_logs; i++)
        ck_assert_int_ge(a->rec->logs[i].level, DDB_LOG_WARN);
    pthread_mutex_unlock(&a->rec->mu);
    ddb_lease_release(none);
    ddb_lease_release(lease);
    cx_proc_free(a);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("observe");
    TCase *tc = tcase_create("observe");
    tcase_add_checked_fixture(tc, cx_setup, cx_teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_acquire_span_and_children);
    tcase_add_test(tc, test_renew_span_is_root_linked_to_acquire);
    tcase_add_test(tc, test_metrics);
    tcase_add_test(tc, test_contention_retries_metric);
    tcase_add_test(tc, test_takeover_log_41);
    tcase_add_test(tc, test_loss_log_40_and_category);
    tcase_add_test(tc, test_log_level_respected);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return dl_check_run(suite());
}
