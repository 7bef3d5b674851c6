/* test_election.c: leader election -- who leads, the three ways a term ends, the lease
 * that is current for a term, transient errors ridden out with logs 44 and 49, errors
 * that end the election, and a hosted-service loop like the reference's. */
#include <check.h>

#include "dl_check.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coord_fixture.h"

#define LEASE 30000

/* What a test's work does and tells. */
typedef struct job {
    cx_event started;        /* signalled when the work starts */
    cx_event stopped;        /* signalled when the work saw its stop */
    int rc;                  /* returned when told to return */
    bool wait_for_stop;      /* wait on the stop token; else return at once */
    bool fail_after_stop;    /* return an error after the stop */
    ddb_lease *current;      /* ddb_lease_current() inside the work */
    ddb_lease *lease;        /* the lease given */
    int64_t token;
    int terms;
} job;

static void job_init(job *j)
{
    memset(j, 0, sizeof *j);
    cx_event_init(&j->started);
    cx_event_init(&j->stopped);
}

static void job_destroy(job *j)
{
    cx_event_destroy(&j->started);
    cx_event_destroy(&j->stopped);
}

static int work(ddb_lease *lease, ddb_cancel *stop, void *arg, ddb_error *err)
{
    job *j = arg;
    j->terms++;
    j->lease = lease;
    j->current = ddb_lease_current();
    j->token = ddb_lease_fencing_token(lease);
    cx_event_signal(&j->started);
    if (j->wait_for_stop) {
        /* Waits on the client's clock, as work of a leader would. */
        ddb_clock_sleep(CX.fx.clock, -1, stop);
        cx_event_signal(&j->stopped);
        if (j->fail_after_stop) {
            snprintf(err->aws_type, sizeof err->aws_type, "SweepFault");
            snprintf(err->message, sizeof err->message, "the sweep failed");
            err->code = DDB_EIO;
            return -1;
        }
        return 0;
    }
    if (j->rc) {
        snprintf(err->message, sizeof err->message, "a bad item");
        err->code = DDB_EIO;
    }
    return j->rc;
}

/* The work returns on its own: the lease is released and run_as_leader returns 0. */
START_TEST(test_term_work_returned)
{
    proc *a = cx_proc(&(proc_options){.holder_label = "pod-a"});
    job j;
    job_init(&j);
    ddb_error err;
    ck_assert_int_eq(ddb_lock_run_as_leader(a->locks, "sweeper", LEASE, work, &j, NULL, &err), 0);
    ck_assert_int_eq(j.terms, 1);
    ck_assert_ptr_eq(j.current, j.lease);
    ck_assert_ptr_null(ddb_lease_current()); /* never back to the caller */
    ddb__lock_item li;
    cx_read(a, "sweeper", &li);
    ck_assert(!li.held); /* released: a leader that is done hands the lock on */
    ddb__lock_item_cleanup(&li);
    rec_log l;
    ck_assert(rec_last_log(a->rec, 45, &l));
    ck_assert_int_eq(l.level, DDB_LOG_INFO);
    ck_assert_str_eq(rec_field(&l, "holder"), "pod-a");
    ck_assert_str_eq(rec_field(&l, "fencing_token"), "1");
    ck_assert(rec_last_log(a->rec, 46, &l));
    ck_assert_str_eq(rec_field(&l, "reason"), "work_returned");
    ck_assert_str_eq(rec_field(&l, "holder"), "pod-a");
    job_destroy(&j);
    cx_proc_free(a);
}
END_TEST

/* The work fails on its own: the lease is released and run_as_leader returns
 * DDB_EWORK with the work's error. */
START_TEST(test_term_work_failed)
{
    proc *a = cx_proc(NULL);
    job j;
    job_init(&j);
    j.rc = -1;
    ddb_error err;
    ck_assert_int_eq(ddb_lock_run_as_leader(a->locks, "sweeper", LEASE, work, &j, NULL, &err),
                     DDB_EWORK);
    ck_assert_str_eq(err.message, "a bad item");
    ddb__lock_item li;
    cx_read(a, "sweeper", &li);
    ck_assert(!li.held);
    ddb__lock_item_cleanup(&li);
    rec_log l;
    ck_assert(rec_last_log(a->rec, 46, &l));
    ck_assert_str_eq(rec_field(&l, "reason"), "work_failed");
    job_destroy(&j);
    cx_proc_free(a);
}
END_TEST

/* The caller cancels: the work's stop is set, the lease released, and run_as_leader
 * returns DDB_ECANCELED whatever the work returned (48 when it failed). */
START_TEST(test_term_cancelled)
{
    proc *a = cx_proc(NULL), *b = cx_proc(NULL);
    job j;
    job_init(&j);
    j.wait_for_stop = true;
    j.fail_after_stop = true;
    bg w;
    bg_leader(&w, a, "sweeper", LEASE, work, &j);
    cx_event_wait(&j.started, 1);
    ddb_cancel_set(w.stop);
    cx_event_wait(&j.stopped, 1);
    ck_assert_int_eq(bg_join(&w), DDB_ECANCELED);
    rec_log l;
    ck_assert(rec_last_log(a->rec, 46, &l));
    ck_assert_str_eq(rec_field(&l, "reason"), "cancelled");
    ck_assert(rec_last_log(a->rec, 48, &l));
    ck_assert_int_eq(l.level, DDB_LOG_DEBUG);
    ck_assert_str_eq(rec_field(&l, "error"), "SweepFault");
    ddb_lease *next = NULL;
    ck_assert_int_eq(ddb_lock_try_acquire(b->locks, "sweeper", LEASE, &next, NULL, NULL), 0);
    ck_assert_ptr_nonnull(next); /* released */
    ddb_lease_release(next);
    job_destroy(&j);
    cx_proc_free(a);
    cx_proc_free(b);
}
END_TEST

/* The lease is lost: the work's stop is set, the election waits for the work and
 * contends again (47 when the work failed after the loss). */
START_TEST(test_term_lost_contends_again)
{
    proc *a = cx_proc(NULL);
    job j;
    job_init(&j);
    j.wait_for_stop = true;
    j.fail_after_stop = true;
    bg w;
    bg_leader(&w, a, "sweeper", LEASE, work, &j);
    cx_event_wait(&j.started, 1);
    int64_t first = j.token;
    cx_sim_holder(a, "sweeper", LEASE, "other-pod");
    cx_advance(LEASE / 3); /* the renewal finds another owner */
    cx_event_wait(&j.stopped, 1);
    proc_wait_refusals(a, 1); /* contends again, finds it held */
    rec_log l;
    ck_assert(rec_last_log(a->rec, 46, &l));
    ck_assert_str_eq(rec_field(&l, "reason"), "lease_lost");
    ck_assert(rec_last_log(a->rec, 47, &l));
    ck_assert_int_eq(l.level, DDB_LOG_DEBUG);
    ck_assert(!bg_done(&w));
    /* The other holder crashed: a whole lease later this process leads again. */
    j.fail_after_stop = false;
    for (int i = 0; i < 3; i++)
        cx_advance(LEASE / 3);
    cx_event_wait(&j.started, 2);
    ck_assert_int_gt(j.token, first + 1);
    ddb_cancel_set(w.stop);
    ck_assert_int_eq(bg_join(&w), DDB_ECANCELED);
    job_destroy(&j);
    cx_proc_free(a);
}
END_TEST

/* The reference's example: a second instance contends and waits while the first leads;
 * when the leader stops, it takes over at its next poll. */
START_TEST(test_follower_takes_over_when_leader_stops)
{
    proc *a = cx_proc(&(proc_options){.holder_label = "pod-a"});
    proc *b = cx_proc(&(proc_options){.holder_label = "pod-b"});
    job ja, jb;
    job_init(&ja);
    job_init(&jb);
    ja.wait_for_stop = jb.wait_for_stop = true;
    bg wa, wb;
    bg_leader(&wa, a, "order-sweeper", LEASE, work, &ja);
    cx_event_wait(&ja.started, 1);
    bg_leader(&wb, b, "order-sweeper", LEASE, work, &jb);
    proc_wait_refusals(b, 1); /* tried, found it held, waits for the next poll */
    cx_advance(LEASE / 3);
    proc_wait_refusals(b, 2);
    ck_assert_int_eq(jb.terms, 0);
    ddb_cancel_set(wa.stop); /* shutdown: the lease is released */
    ck_assert_int_eq(bg_join(&wa), DDB_ECANCELED);
    cx_advance(LEASE / 3);
    cx_event_wait(&jb.started, 1);
    ck_assert_int_eq(jb.token, ja.token + 1);
    ddb_cancel_set(wb.stop);
    ck_assert_int_eq(bg_join(&wb), DDB_ECANCELED);
    job_destroy(&ja);
    job_destroy(&jb);
    cx_proc_free(a);
    cx_proc_free(b);
}
END_TEST

/* Transient errors of an acquire are ridden out: contends again every third of the lease,
 * log 44 once per outage, the metric on every one, and log 49 with the outage's length
 * and retries when DynamoDB answers again. */
/* A transient outage of the acquire -- `fault` answered to every UpdateItem, whose
 * error.type is `type` -- logs 44 once and counts every retry; the first answer after
 * it logs 49 with the outage's length and retries. */
static void outage_logs_44_once_and_49(const fakedb_fault *fault_spec, const char *type)
{
    proc *a = cx_proc(NULL);
    long fault = fakedb_fault_add(CX.fx.db, fault_spec);
    job j;
    job_init(&j);
    j.wait_for_stop = true;
    bg w;
    bg_leader(&w, a, "sweeper", LEASE, work, &j);
    for (int i = 1; i <= 4; i++) {
        rec_wait_metrics(a->rec, "dynalock.lock.contention_retries", i);
        if (i < 4)
            cx_advance(LEASE / 3);
    }
    ck_assert_int_eq(rec_logs(a->rec, 44), 1);
    ck_assert_int_eq(rec_metrics(a->rec, "dynalock.lock.contention_retries", "error.type", type),
                     4);
    rec_log l;
    ck_assert(rec_last_log(a->rec, 44, &l));
    ck_assert_int_eq(l.level, DDB_LOG_WARN);
    fakedb_fault_remove(CX.fx.db, fault);
    cx_advance(LEASE / 3);
    cx_event_wait(&j.started, 1);
    ck_assert(rec_last_log(a->rec, 49, &l));
    ck_assert_int_eq(l.level, DDB_LOG_INFO);
    ck_assert_str_eq(rec_field(&l, "retries"), "4");
    ck_assert_str_eq(rec_field(&l, "outage_ms"), "40000");
    ddb_cancel_set(w.stop);
    ck_assert_int_eq(bg_join(&w), DDB_ECANCELED);
    job_destroy(&j);
    cx_proc_free(a);
}

START_TEST(test_transient_outage_logs_44_once_and_49)
{
    CX_NEEDS_FAKEDB();
    outage_logs_44_once_and_49(&(fakedb_fault){.kind = FAKEDB_FAULT_ERROR,
                                               .operation = "UpdateItem"},
                               "ProvisionedThroughputExceededException");
}
END_TEST

/* A 5xx answer is as transient as throttling. */
START_TEST(test_server_error_outage_is_transient)
{
    CX_NEEDS_FAKEDB();
    outage_logs_44_once_and_49(&(fakedb_fault){.kind = FAKEDB_FAULT_ERROR,
                                               .operation = "UpdateItem",
                                               .error_type = "InternalServerError",
                                               .status = 500},
                               "InternalServerError");
}
END_TEST

/* An error that is not transient ends the election (here: no such table). */
START_TEST(test_non_transient_error_ends_election)
{
    proc *a = cx_proc(&(proc_options){.table = "NoSuchTable"});
    job j;
    job_init(&j);
    ddb_error err;
    ck_assert_int_eq(ddb_lock_run_as_leader(a->locks, "sweeper", LEASE, work, &j, NULL, &err),
                     DDB_ENOTFOUND);
    ck_assert_int_eq(j.terms, 0);
    ck_assert_int_eq(rec_logs(a->rec, 44), 0);
    job_destroy(&j);
    cx_proc_free(a);
}
END_TEST

/* A lease that has ended by the time its acquire answers starts no term; the election
 * contends again. */
START_TEST(test_late_lease_starts_no_term)
{
    cx_late_update lt;
    cx_late_update_init(&lt);
    cx_late_update_arm(&lt, LEASE);
    ddb_client *c = dl_fixture_client(&CX.fx, &(ddb_client_options){.telemetry = &lt.tel});
    ddb_error err;
    ddb_table *t = ddb_table_open(c, CX.shop, "pk", "sk", &err);
    ddb_lock_table *locks = ddb_lock_table_new(t, NULL, &err);
    job j;
    job_init(&j);
    ck_assert_int_eq(ddb_lock_run_as_leader(locks, "sweeper", LEASE, work, &j, NULL, &err), 0);
    ck_assert_int_eq(j.terms, 1);
    ck_assert_int_eq(j.token, 2); /* the first, late, lease started no term */
    job_destroy(&j);
    ddb_lock_table_free(locks);
    ddb_table_close(t);
    ddb_client_free(c);
}
END_TEST

/* The current lease: set on the work's thread for the term, cleared after; a thread the
 * work starts does not inherit it unless handed on; a lease from acquire is never
 * current; an inner election makes its own lease current and gives back the outer. */
typedef struct nested {
    proc *p;
    ddb_lease *outer, *inner_seen, *after_inner, *thread_seen, *handed_seen;
} nested;

static void *look(void *arg)
{
    ddb_lease **out = arg;
    *out = ddb_lease_current();
    return NULL;
}

static void *look_handed(void *arg)
{
    nested *n = arg;
    ddb_lease_set_current(n->outer);
    n->handed_seen = ddb_lease_current();
    ddb_lease_set_current(NULL);
    return NULL;
}

static int inner_work(ddb_lease *lease, ddb_cancel *stop, void *arg, ddb_error *err)
{
    nested *n = arg;
    n->inner_seen = ddb_lease_current();
    ck_assert_ptr_eq(n->inner_seen, lease);
    return 0;
}

static int outer_work(ddb_lease *lease, ddb_cancel *stop, void *arg, ddb_error *err)
{
    nested *n = arg;
    n->outer = ddb_lease_current();
    pthread_t th;
    pthread_create(&th, NULL, look, &n->thread_seen);
    pthread_join(th, NULL);
    pthread_create(&th, NULL, look_handed, n);
    pthread_join(th, NULL);
    ck_assert_int_eq(ddb_lock_run_as_leader(n->p->locks, "inner", LEASE, inner_work, n, NULL,
                                            err),
                     0);
    n->after_inner = ddb_lease_current();
    return 0;
}

START_TEST(test_current_lease_for_term)
{
    proc *a = cx_proc(NULL);
    ddb_lease *lease = NULL;
    ck_assert_int_eq(ddb_lock_acquire(a->locks, "plain", LEASE, &lease, NULL, NULL), 0);
    ck_assert_ptr_null(ddb_lease_current()); /* acquire never makes a lease current */
    ddb_lease_release(lease);
    nested n = {.p = a};
    ck_assert_int_eq(ddb_lock_run_as_leader(a->locks, "outer", LEASE, outer_work, &n, NULL,
                                            NULL),
                     0);
    ck_assert_ptr_nonnull(n.outer);
    ck_assert_ptr_null(n.thread_seen);
    ck_assert_ptr_eq(n.handed_seen, n.outer);
    ck_assert_ptr_nonnull(n.inner_seen);
    ck_assert_ptr_ne(n.inner_seen, n.outer);
    ck_assert_ptr_eq(n.after_inner, n.outer);
    ck_assert_ptr_null(ddb_lease_current());
    cx_proc_free(a);
}
END_TEST

/* The hosted-service loop of the reference: a fault of the work is caught inside the
 * work (the loop pauses and contends again), an error of the election leaves the loop,
 * and shutdown ends it without an error. */
typedef struct service {
    int rounds;
    bool fault;
} service;

static int sweep(ddb_lease *lease, ddb_cancel *stop, void *arg, ddb_error *err)
{
    service *s = arg;
    s->rounds++;
    if (s->rounds == 1 && !ddb_cancel_is_set(stop)) {
        s->fault = true; /* a fault of the work: noted, and the work returns */
        return 0;
    }
    return 0;
}

START_TEST(test_hosted_service_loop)
{
    proc *a = cx_proc(NULL);
    ddb_cancel *stopping = ddb_cancel_new();
    service s = {0};
    int election_error = 0;
    for (int loop = 0; loop < 3 && !ddb_cancel_is_set(stopping); loop++) {
        s.fault = false;
        ddb_error err;
        int rc = ddb_lock_run_as_leader(a->locks, "order-sweeper", LEASE, sweep, &s, stopping,
                                        &err);
        if (rc == DDB_ECANCELED && ddb_cancel_is_set(stopping))
            break;
        if (rc != 0) {
            election_error = rc;
            break;
        }
        if (s.fault)
            ck_assert_int_eq(ddb_clock_sleep(CX.fx.clock, 0, stopping), 0); /* pause */
        if (loop == 1)
            ddb_cancel_set(stopping);
    }
    ck_assert_int_eq(election_error, 0);
    ck_assert_int_eq(s.rounds, 2);
    ddb_cancel_unref(stopping);
    /* An error of the election reaches the loop. */
    proc *b = cx_proc(&(proc_options){.table = "Missing"});
    ck_assert_int_eq(ddb_lock_run_as_leader(b->locks, "order-sweeper", LEASE, sweep, &s, NULL,
                                            NULL),
                     DDB_ENOTFOUND);
    cx_proc_free(a);
    cx_proc_free(b);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("election");
    TCase *tc = tcase_create("election");
    tcase_add_checked_fixture(tc, cx_setup, cx_teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_term_work_returned);
    tcase_add_test(tc, test_term_work_failed);
    tcase_add_test(tc, test_term_cancelled);
    tcase_add_test(tc, test_term_lost_contends_again);
    tcase_add_test(tc, test_follower_takes_over_when_leader_stops);
    tcase_add_test(tc, test_transient_outage_logs_44_once_and_49);
    tcase_add_test(tc, test_server_error_outage_is_transient);
    tcase_add_test(tc, test_non_transient_error_ends_election);
    tcase_add_test(tc, test_late_lease_starts_no_term);
    tcase_add_test(tc, test_current_lease_for_term);
    tcase_add_test(tc, test_hosted_service_loop);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return dl_check_run(suite());
}
