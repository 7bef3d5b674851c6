/* test_fence.c: fencing -- ddb_tx_check_lease adds a check on the lock item's owner and
 * token, so a transaction commits only while the lease holds the lock; the marker tells
 * a lost lease from another reason; ddb_tx_check_current_lease uses the term's lease. */
#include <check.h>

#include "dl_check.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coord_fixture.h"

#define LEASE 30000

static ddb_item *order(const char *id, const char *status)
{
    ddb_item *it = ddb_item_new();
    ddb_item_set_s(it, "pk", id);
    ddb_item_set_s(it, "sk", "ORDER");
    ddb_item_set_s(it, "status", status);
    return it;
}

static int send_held(proc *p, ddb_lease *lease, const char *id, ddb_tx_marker *held,
                     ddb_tx **out)
{
    ddb_tx *tx = ddb_tx_new(p->client);
    ck_assert_int_eq(ddb_tx_check_lease(tx, lease, held, NULL), 0);
    ddb_item *it = order(id, "SHIPPED");
    ck_assert_int_eq(ddb_tx_put(tx, p->table, it, NULL, NULL, NULL), 0);
    ddb_item_free(it);
    ddb_error err;
    int rc = ddb_tx_send(tx, NULL, &err);
    *out = tx;
    return rc;
}

/* While the lease holds the lock, the transaction commits. */
START_TEST(test_is_held_commits_while_held)
{
    proc *a = cx_proc(NULL);
    ddb_lease *lease = NULL;
    ck_assert_int_eq(ddb_lock_acquire(a->locks, "nightly-report", LEASE, &lease, NULL, NULL), 0);
    ddb_tx *tx;
    ddb_tx_marker held;
    ck_assert_int_eq(send_held(a, lease, "ORDER#1", &held, &tx), 0);
    ck_assert_int_eq(ddb_tx_count(tx), 2);
    ddb_tx_free(tx);
    ddb_lease_release(lease);
    cx_proc_free(a);
}
END_TEST

/* A lease that was taken over (the holder paused, say) fails the check at DynamoDB: the
 * marker says ConditionalCheckFailed, and the write did not happen. */
START_TEST(test_is_held_refuses_old_holder)
{
    proc *a = cx_proc(NULL), *b = cx_proc(NULL);
    ddb_lease *old = NULL;
    ck_assert_int_eq(ddb_lock_try_acquire(a->locks, "job", LEASE, &old, NULL, NULL), 0);
    /* Another process takes the lock while a is paused and has not yet noticed. */
    int64_t token = cx_sim_holder(b, "job", LEASE, "b");
    ck_assert_int_eq(token, 2);
    ddb_tx *tx;
    ddb_tx_marker held, other;
    tx = ddb_tx_new(a->client);
    ddb_item *it = order("ORDER#2", "SHIPPED");
    ck_assert_int_eq(ddb_tx_put(tx, a->table, it, NULL, &other, NULL), 0);
    ddb_item_free(it);
    ck_assert_int_eq(ddb_tx_check_lease(tx, old, &held, NULL), 0);
    ddb_error err;
    ck_assert_int_eq(ddb_tx_send(tx, NULL, &err), DDB_ETXCANCELED);
    ck_assert_int_eq(ddb_tx_reason_for(tx, held), DDB_TXFAIL_CONDITIONAL_CHECK_FAILED);
    ck_assert_int_ne(ddb_tx_reason_for(tx, other), DDB_TXFAIL_CONDITIONAL_CHECK_FAILED);
    ddb_tx_free(tx);
    ddb_item *key = ddb_item_new();
    ddb_item_set_s(key, "pk", "ORDER#2");
    ddb_item_set_s(key, "sk", "ORDER");
    ddb_result res = {0};
    ck_assert_int_eq(ddb_table_get_item(a->table, key, &(ddb_get_options){.consistent_read = true},
                                  &res, NULL, NULL),
                     0);
    ck_assert_ptr_null(res.item);
    ddb_result_cleanup(&res);
    ddb_item_free(key);
    ddb_lease_release(old);
    cx_proc_free(a);
    cx_proc_free(b);
}
END_TEST

/* Another reason of cancellation is told apart: a put that fails its own condition. */
START_TEST(test_marker_tells_other_reason)
{
    proc *a = cx_proc(NULL);
    ddb_lease *lease = NULL;
    ck_assert_int_eq(ddb_lock_try_acquire(a->locks, "job", LEASE, &lease, NULL, NULL), 0);
    ddb_tx *tx;
    ddb_tx_marker held, put;
    ck_assert_int_eq(send_held(a, lease, "ORDER#3", &held, &tx), 0);
    ddb_tx_free(tx);
    tx = ddb_tx_new(a->client);
    ck_assert_int_eq(ddb_tx_check_lease(tx, lease, &held, NULL), 0);
    ddb_item *it = order("ORDER#3", "PLACED");
    ck_assert_int_eq(ddb_tx_put(tx, a->table, it,
                                &(ddb_tx_options){.condition = "attribute_not_exists(pk)"},
                                &put, NULL),
                     0);
    ddb_item_free(it);
    ck_assert_int_eq(ddb_tx_send(tx, NULL, NULL), DDB_ETXCANCELED);
    ck_assert_int_eq(ddb_tx_reason_for(tx, put), DDB_TXFAIL_CONDITIONAL_CHECK_FAILED);
    ck_assert_int_ne(ddb_tx_reason_for(tx, held), DDB_TXFAIL_CONDITIONAL_CHECK_FAILED);
    ddb_tx_free(tx);
    ddb_lease_release(lease);
    cx_proc_free(a);
}
END_TEST

/* After the item was deleted and the lock taken again with token 1, an old lease with
 * token 1 still fails: the check compares the owner too. */
START_TEST(test_is_held_compares_owner_after_delete)
{
    proc *a = cx_proc(NULL), *b = cx_proc(NULL);
    ddb_lease *old = NULL, *fresh = NULL;
    ck_assert_int_eq(ddb_lock_try_acquire(a->locks, "job", LEASE, &old, NULL, NULL), 0);
    cx_sim_delete(a, "job");
    ck_assert_int_eq(ddb_lock_try_acquire(b->locks, "job", LEASE, &fresh, NULL, NULL), 0);
    ck_assert_int_eq(ddb_lease_fencing_token(fresh), ddb_lease_fencing_token(old));
    ddb_tx *tx;
    ddb_tx_marker held;
    ck_assert_int_eq(send_held(a, old, "ORDER#4", &held, &tx), DDB_ETXCANCELED);
    ck_assert_int_eq(ddb_tx_reason_for(tx, held), DDB_TXFAIL_CONDITIONAL_CHECK_FAILED);
    ddb_tx_free(tx);
    ck_assert_int_eq(send_held(b, fresh, "ORDER#4", &held, &tx), 0);
    ddb_tx_free(tx);
    ddb_lease_release(old);
    ddb_lease_release(fresh);
    cx_proc_free(a);
    cx_proc_free(b);
}
END_TEST

/* Without a current lease, ddb_tx_check_current_lease fails with the reference's message,
 * and the transaction fails its send with it. */
START_TEST(test_is_held_current_without_lease)
{
    proc *a = cx_proc(NULL);
    ddb_tx *tx = ddb_tx_new(a->client);
    ddb_error err;
    ddb_tx_marker m;
    ck_assert_int_eq(ddb_tx_check_current_lease(tx, &m, &err), DDB_ESTATE);
    ck_assert_str_eq(err.message, "No lease is current; pass the lease, or start this work "
                                  "inside ddb_lock_run_as_leader");
    ddb_item *it = order("ORDER#5", "SHIPPED");
    ddb_tx_put(tx, a->table, it, NULL, NULL, NULL);
    ddb_item_free(it);
    ddb_error serr;
    ck_assert_int_eq(ddb_tx_send(tx, NULL, &serr), DDB_ESTATE);
    ck_assert_str_eq(serr.message, err.message);
    ddb_tx_free(tx);
    ck_assert_int_eq(ddb_tx_check_lease(NULL, NULL, NULL, NULL), DDB_EINVAL);
    cx_proc_free(a);
}
END_TEST

/* Inside the work of a leader, ddb_tx_check_current_lease checks the term's lease; work that
 * outlives its term -- a thread the work started and handed the lease to, still running
 * after the term -- keeps the lease that ended, and fencing refuses its write. */
typedef struct held_work {
    proc *p;
    int rc_in_term;
    ddb_lease *lease;
    pthread_t th;
    cx_event handed, go;
    int late_check_rc; /* recorded on the late thread, asserted on the test's */
    int late_rc;
    ddb_tx_failure late_reason;
} held_work;

static void *late_writer(void *arg)
{
    held_work *h = arg;
    ddb_lease_set_current(h->lease); /* the thread holds it from here on */
    cx_event_signal(&h->handed);
    cx_event_wait(&h->go, 1);
    ddb_tx *tx = ddb_tx_new(h->p->client);
    ddb_tx_marker m;
    h->late_check_rc = ddb_tx_check_current_lease(tx, &m, NULL);
    ddb_item *it = order("ORDER#7", "SHIPPED");
    ddb_tx_put(tx, h->p->table, it, NULL, NULL, NULL);
    ddb_item_free(it);
    h->late_rc = ddb_tx_send(tx, NULL, NULL);
    h->late_reason = ddb_tx_reason_for(tx, m);
    ddb_tx_free(tx);
    return NULL; /* the thread's end lets go of the lease */
}

static int leader_writes(ddb_lease *lease, ddb_cancel *stop, void *arg, ddb_error *err)
{
    held_work *h = arg;
    ddb_tx *tx = ddb_tx_new(h->p->client);
    ddb_tx_marker m;
    ck_assert_int_eq(ddb_tx_check_current_lease(tx, &m, NULL), 0);
    ddb_item *it = order("ORDER#6", "SHIPPED");
    ddb_tx_put(tx, h->p->table, it, NULL, NULL, NULL);
    ddb_item_free(it);
    h->rc_in_term = ddb_tx_send(tx, stop, NULL);
    ddb_tx_free(tx);
    h->lease = lease;
    pthread_create(&h->th, NULL, late_writer, h);
    cx_event_wait(&h->handed, 1);
    return 0; /* the term ends; the thread it started does not */
}

START_TEST(test_is_held_current_in_term_and_after)
{
    proc *a = cx_proc(NULL);
    held_work h = {.p = a};
    cx_event_init(&h.handed);
    cx_event_init(&h.go);
    ck_assert_int_eq(ddb_lock_run_as_leader(a->locks, "sweeper", LEASE, leader_writes, &h, NULL,
                                            NULL),
                     0);
    ck_assert_int_eq(h.rc_in_term, 0);
    cx_event_signal(&h.go);
    pthread_join(h.th, NULL);
    ck_assert_int_eq(h.late_check_rc, 0);
    ck_assert_int_eq(h.late_rc, DDB_ETXCANCELED);
    ck_assert_int_eq(h.late_reason, DDB_TXFAIL_CONDITIONAL_CHECK_FAILED);
    cx_event_destroy(&h.handed);
    cx_event_destroy(&h.go);
    cx_proc_free(a);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("fence");
    TCase *tc = tcase_create("fence");
    tcase_add_checked_fixture(tc, cx_setup, cx_teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_is_held_commits_while_held);
    tcase_add_test(tc, test_is_held_refuses_old_holder);
    tcase_add_test(tc, test_marker_tells_other_reason);
    tcase_add_test(tc, test_is_held_compares_owner_after_delete);
    tcase_add_test(tc, test_is_held_current_without_lease);
    tcase_add_test(tc, test_is_held_current_in_term_and_after);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return dl_check_run(suite());
}
