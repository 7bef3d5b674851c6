/* test_deadline.c: a lease ends at its deadline whatever DynamoDB does -- a renewal that
 * hangs, one stuck lease among many, retries in backoff -- and the current lease can be
 * handed to another thread. Time is the fake clock's; waits for work in flight wait on
 * the events the work records (spans, metrics), never on a sleep. */
#include <check.h>

#include "dl_check.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client.h"
#include "coord_fixture.h"

#define LEASE 30000
#define HANG_MS 600000 /* a delay fault longer than any test: the request hangs */

/* The next renewal of lock `name` hangs at the server. */
static long hang_renewals_of(const char *name)
{
    char key[64];
    snprintf(key, sizeof key, DDB__LOCK_PK_PREFIX "%s", name);
    return fakedb_fault_add(CX.fx.db, &(fakedb_fault){.kind = FAKEDB_FAULT_DELAY,
                                                      .operation = "UpdateItem",
                                                      .key = key,
                                                      .count = 1,
                                                      .delay_ms = HANG_MS});
}

/* When the ended token was set, on the fake clock. */
typedef struct ended_at {
    atomic_llong mono_ms;
} ended_at;

static void note_ended(void *arg)
{
    ended_at *e = arg;
    atomic_store(&e->mono_ms, (long long)cx_mono_ms());
}

/* A renewal that hangs does not stretch the lease: it is lost with `expired` at the
 * instant of its deadline (the send of the acquire plus the lease), its ended token set
 * then, the renewal in flight abandoned; and the lock is handed back at once, so a
 * contender need not wait a further lease. */
START_TEST(test_hung_renewal_ends_lease_at_deadline)
{
    CX_NEEDS_FAKEDB();
    proc *a = cx_proc(NULL), *b = cx_proc(NULL);
    int64_t sent_ms = cx_mono_ms();
    ddb_lease *lease = cx_take(a, "job", LEASE);
    ended_at at = {0};
    atomic_store(&at.mono_ms, -1);
    ck_assert_int_gt(ddb_cancel_on(ddb_lease_ended(lease), note_ended, &at), 0);
    long fired = fakedb_faults_fired(CX.fx.db);
    long fault = hang_renewals_of("job");

    /* The heartbeat sends its renewal at a third of the lease; it hangs at the server. */
    ck_assert_int_eq(ddb_fake_clock_advance(CX.fx.clock, LEASE / 3), 0);
    rec_wait_spans(a->rec, "Lock.Renew", 1);
    ck_assert_int_eq(fakedb_wait_faults_fired(CX.fx.db, fired + 1, 20000), 0);
    ck_assert(!ddb_cancel_is_set(ddb_lease_ended(lease)));

    /* A millisecond before the deadline it is still held. */
    ck_assert_int_eq(ddb_fake_clock_advance(CX.fx.clock, LEASE - LEASE / 3 - 1), 0);
    ck_assert(!ddb_cancel_is_set(ddb_lease_ended(lease)));
    ck_assert_int_eq(ddb_lease_loss_reason(lease), DDB_LOSS_NONE);

    /* At the deadline it is lost, whatever is in flight; settling returns because the
     * renewal was abandoned. */
    cx_advance(1);
    ck_assert(ddb_cancel_is_set(ddb_lease_ended(lease)));
    ck_assert_int_eq(ddb_lease_loss_reason(lease), DDB_LOSS_EXPIRED);
    ck_assert_int_eq(atomic_load(&at.mono_ms), sent_ms + LEASE);
    ck_assert_int_eq(rec_metrics(a->rec, "dynalock.lock.losses", "dynalock.lock.loss_reason",
                                 "expired"),
                     1);
    ck_assert_int_eq(rec_logs(a->rec, 40), 1);

    /* The lease is not revived: renewing says it has ended, without a request. */
    bool held = true;
    ddb_error err;
    ck_assert_int_eq(ddb_lease_renew(lease, &held, NULL, &err), 0);
    ck_assert(!held);

    /* Its item was handed back by a conditional release: another process acquires the
     * lock at once, without a takeover, with the next token. */
    ddb_lease *next = NULL;
    ck_assert_int_eq(ddb_lock_try_acquire(b->locks, "job", LEASE, &next, NULL, &err), 0);
    ck_assert_ptr_nonnull(next);
    ck_assert(!ddb_lease_takeover(next));
    ck_assert_int_eq(ddb_lease_fencing_token(next), ddb_lease_fencing_token(lease) + 1);
    fakedb_fault_remove(CX.fx.db, fault);
    ddb_lease_release(next);
    ddb_lease_release(lease);
    cx_proc_free(a);
    cx_proc_free(b);
}
END_TEST

/* A renewal whose answer comes after the deadline is not acted on: the answer is
 * abandoned at the deadline, and the lease stays lost. The answer is made late by moving
 * the clock while the request starts. */
START_TEST(test_late_renewal_answer_not_acted_on)
{
    cx_late_update l;
    cx_late_update_init(&l);
    ddb_client *c = dl_fixture_client(&CX.fx, &(ddb_client_options){.telemetry = &l.tel});
    ddb_error err;
    ddb_table *t = ddb_table_open(c, CX.shop, "pk", "sk", &err);
    ddb_lock_table *locks = ddb_lock_table_new(t, NULL, &err);
    proc *b = cx_proc(NULL);
    ddb_lease *lease = NULL;
    ck_assert_int_eq(ddb_lock_try_acquire(locks, "job", LEASE, &lease, NULL, &err), 0);
    cx_late_update_arm(&l, LEASE);
    cx_advance(LEASE / 3); /* sent at 10 s; by the time it is on its way, 40 s */
    ck_assert(ddb_cancel_is_set(ddb_lease_ended(lease)));
    ck_assert_int_eq(ddb_lease_loss_reason(lease), DDB_LOSS_EXPIRED);
    /* Whether or not DynamoDB applied it, the lock is free for another at once. */
    ddb_lease *next = NULL;
    ck_assert_int_eq(ddb_lock_try_acquire(b->locks, "job", LEASE, &next, NULL, &err), 0);
    ck_assert_ptr_nonnull(next);
    ck_assert(!ddb_lease_takeover(next));
    cx_advance(LEASE / 3); /* the next holder renews; the lost lease sends nothing */
    ck_assert(!ddb_cancel_is_set(ddb_lease_ended(next)));
    ddb_lease_release(next);
    ddb_lease_release(lease);
    ddb_lock_table_free(locks);
    ddb_table_close(t);
    ddb_client_free(c);
    cx_proc_free(b);
}
END_TEST

/* Renewals of different leases run side by side: one stuck renewal leaves the others
 * renewed on time, and only its own lease runs out. */
START_TEST(test_stuck_renewal_leaves_others_on_time)
{
    CX_NEEDS_FAKEDB();
    enum { N = 8 };
    proc *a = cx_proc(NULL), *watch = cx_proc(NULL);
    ddb_lease *leases[N];
    ddb__lock_item before[N];
    for (int i = 0; i < N; i++) {
        char name[16];
        snprintf(name, sizeof name, "job-%d", i);
        leases[i] = cx_take(a, name, LEASE);
        cx_read(watch, name, &before[i]);
    }
    long fired = fakedb_faults_fired(CX.fx.db);
    long fault = hang_renewals_of("job-0");
    ck_assert_int_eq(ddb_fake_clock_advance(CX.fx.clock, LEASE / 3), 0);
    ck_assert_int_eq(fakedb_wait_faults_fired(CX.fx.db, fired + 1, 20000), 0);
    /* The other seven answer while the first hangs. */
    rec_wait_metrics(a->rec, "dynalock.lock.renewals", N - 1);
    for (int i = 1; i < N; i++) {
        char name[16];
        snprintf(name, sizeof name, "job-%d", i);
        ddb__lock_item now;
        cx_read(watch, name, &now);
        ck_assert_str_ne(before[i].rvn, now.rvn);
        ddb__lock_item_cleanup(&now);
    }
    ck_assert_int_eq(rec_metrics(a->rec, "dynalock.lock.renewals", "error.type", NULL), 0);
    /* At the first lease's deadline it alone is lost; the others renew again. */
    cx_advance(LEASE - LEASE / 3);
    ck_assert_int_eq(ddb_lease_loss_reason(leases[0]), DDB_LOSS_EXPIRED);
    for (int i = 1; i < N; i++)
        ck_assert_int_eq(ddb_lease_loss_reason(leases[i]), DDB_LOSS_NONE);
    ck_assert_int_ge(rec_metrics(a->rec, "dynalock.lock.renewals", NULL, NULL), 2 * (N - 1));
    fakedb_fault_remove(CX.fx.db, fault);
    for (int i = 0; i < N; i++) {
        ddb_lease_release(leases[i]);
        ddb__lock_item_cleanup(&before[i]);
    }
    cx_proc_free(a);
    cx_proc_free(watch);
}
END_TEST

/* A renewal that meets a 500 waits in the client's backoff, with the client's default
 * retries, as a task on the fake clock: an advance settles, and the next advance past the
 * backoff sends the retry. */
static double half(void *arg)
{
    (void)arg;
    return 0.5; /* the first backoff is then 50 ms, never 0 */
}

START_TEST(test_renewal_backoff_settles)
{
    CX_NEEDS_FAKEDB();
    proc *a = cx_proc(&(proc_options){.max_attempts = 3}), *watch = cx_proc(NULL);
    ddb__retry_set_random(a->client->retry, half, NULL);
    ddb_lease *lease = cx_take(a, "job", LEASE);
    ddb__lock_item before, after;
    cx_read(watch, "job", &before);
    fakedb_fault_add(CX.fx.db, &(fakedb_fault){.kind = FAKEDB_FAULT_ERROR,
                                               .operation = "UpdateItem",
                                               .error_type = "InternalServerError",
                                               .count = 1});
    cx_advance(LEASE / 3); /* the renewal fails once and waits to retry: settled */
    ck_assert_int_eq(rec_metrics(a->rec, "dynalock.lock.renewals", NULL, NULL), 0);
    cx_advance(100); /* past the first backoff (at most 100 ms in the standard mode) */
    ck_assert_int_eq(rec_metrics(a->rec, "dynalock.lock.renewals", NULL, NULL), 1);
    ck_assert_int_eq(rec_metrics(a->rec, "dynalock.lock.renewals", "error.type", NULL), 0);
    cx_read(watch, "job", &after);
    ck_assert_str_ne(before.rvn, after.rvn);
    ck_assert(!ddb_cancel_is_set(ddb_lease_ended(lease)));
    ddb__lock_item_cleanup(&before);
    ddb__lock_item_cleanup(&after);
    ddb_lease_release(lease);
    cx_proc_free(a);
    cx_proc_free(watch);
}
END_TEST

/* A contender whose poll meets a throttle waits in the client's backoff on the clock:
 * settling returns, and the poll goes on after the backoff. */
START_TEST(test_poll_backoff_settles)
{
    CX_NEEDS_FAKEDB();
    proc *a = cx_proc(NULL), *b = cx_proc(&(proc_options){.max_attempts = 3});
    ddb__retry_set_random(b->client->retry, half, NULL);
    ddb_lease *held = cx_take(a, "job", LEASE);
    bg w;
    bg_acquire(&w, b, "job", LEASE);
    proc_wait_refusals(b, 1);
    fakedb_fault_add(CX.fx.db, &(fakedb_fault){.kind = FAKEDB_FAULT_ERROR,
                                               .operation = "GetItem",
                                               .count = 1}); /* a throttle */
    cx_advance(LEASE / 3); /* the poll is throttled once: it waits in backoff, settled */
    ck_assert_int_eq(proc_refusals(b), 1);
    cx_advance(100);
    ck_assert_int_eq(proc_refusals(b), 2); /* the retried poll found it held */
    ck_assert(!bg_done(&w));
    ddb_lease_release(held);
    cx_advance(LEASE / 3);
    ck_assert_int_eq(bg_join(&w), 0);
    ddb_lease_release(w.lease);
    cx_proc_free(a);
    cx_proc_free(b);
}
END_TEST

/* The current lease handed to a thread the work starts: the work takes a reference
 * before it starts the thread and returns at once; the thread uses the lease after the
 * term is over (its fenced write refused), then drops its reference. */
typedef struct handoff {
    proc *p;
    ddb_cancel *term_over;
    pthread_t th;
    int tx_rc;
    ddb_tx_failure reason;
    int64_t token;
} handoff;

typedef struct handed {
    handoff *h;
    ddb_lease *lease;
} handed;

static void *use_handed(void *arg)
{
    handed *hd = arg;
    handoff *h = hd->h;
    ddb_cancel_wait(h->term_over, -1);
    ddb_lease_set_current(hd->lease);
    ddb_tx *tx = ddb_tx_new(h->p->client);
    ddb_tx_marker held;
    ddb_error err;
    ddb_tx_check_current_lease(tx, &held, &err);
    ddb_item *item = ddb_item_new();
    ddb_item_set_s(item, "pk", "ORDER#1");
    ddb_item_set_s(item, "sk", "ORDER");
    ddb_tx_put(tx, h->p->table, item, NULL, NULL, NULL);
    h->tx_rc = ddb_tx_send(tx, NULL, &err);
    h->reason = ddb_tx_reason_for(tx, held);
    h->token = ddb_lease_fencing_token(hd->lease);
    ddb_item_free(item);
    ddb_tx_free(tx);
    ddb_lease_set_current(NULL);
    ddb_lease_unref(hd->lease);
    free(hd);
    return NULL;
}

static int start_and_return(ddb_lease *lease, ddb_cancel *stop, void *arg, ddb_error *err)
{
    (void)stop;
    (void)err;
    handoff *h = arg;
    handed *hd = malloc(sizeof *hd);
    hd->h = h;
    hd->lease = ddb_lease_ref(ddb_lease_current()); /* before the thread starts */
    ck_assert_ptr_eq(hd->lease, lease);
    pthread_create(&h->th, NULL, use_handed, hd);
    return 0; /* the term ends; the thread goes on */
}

START_TEST(test_current_lease_handed_to_thread)
{
    proc *a = cx_proc(NULL);
    handoff h = {.p = a, .term_over = ddb_cancel_new()};
    ddb_error err;
    ck_assert_int_eq(ddb_lock_run_as_leader(a->locks, "sweeper", LEASE, start_and_return, &h,
                                            NULL, &err),
                     0);
    ddb_cancel_set(h.term_over); /* the lease was released: now the thread writes */
    pthread_join(h.th, NULL);
    ck_assert_int_eq(h.tx_rc, DDB_ETXCANCELED);
    ck_assert_int_eq(h.reason, DDB_TXFAIL_CONDITIONAL_CHECK_FAILED);
    ck_assert_int_eq(h.token, 1);
    ddb_cancel_unref(h.term_over);
    cx_proc_free(a);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("deadline");
    TCase *tc = tcase_create("deadline");
    tcase_add_checked_fixture(tc, cx_setup, cx_teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_hung_renewal_ends_lease_at_deadline);
    tcase_add_test(tc, test_late_renewal_answer_not_acted_on);
    tcase_add_test(tc, test_stuck_renewal_leaves_others_on_time);
    tcase_add_test(tc, test_renewal_backoff_settles);
    tcase_add_test(tc, test_poll_backoff_settles);
    tcase_add_test(tc, test_current_lease_handed_to_thread);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return dl_check_run(suite());
}
