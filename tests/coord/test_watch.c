/* test_watch.c: finding and following the holder of a lock -- a lease's value written
 * with its acquire and renewals and removed on release, never part of a condition; how
 * long a reader has seen a record version unchanged; and the watch: a failover seen with
 * its new token and value, reads only (no write, no takeover hastened), throttling
 * ridden out, other errors returned. All on the fake clock, over HTTP. */
#include <check.h>

#include "dl_check.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "coord_fixture.h"

#define LEASE 30000

static ddb_lock_state state_of(proc *p, const char *name)
{
    ddb_lock_state st;
    ddb_error err;
    int rc = ddb_lock_table_get_state(p->locks, name, &st, NULL, &err);
    ck_assert_msg(rc == 0, "get_state %s: %s", name, err.message);
    return st;
}

/* Another writer sets the value attribute of the lock item (as an operator's script
 * might): a renewal, whose condition is the owner only, is not disturbed by it. */
static void foreign_value(proc *p, const char *name, const char *value)
{
    ddb_error err;
    ddb_item *key = ddb__lock_key(p->locks, name, &err);
    ck_assert_ptr_nonnull(key);
    ddb_item *values = ddb_item_new();
    ck_assert_int_eq(ddb_item_set_s(values, ":v", value), 0);
    static const char *const names[] = {"#v", DDB__LOCK_ATTR_VALUE, NULL};
    int rc = ddb_table_update_item(p->table, key, "SET #v = :v",
                                   &(ddb_write_options){.names = names, .values = values},
                                   NULL, NULL, &err);
    ck_assert_msg(rc == 0, "foreign write: %s", err.message);
    ddb_item_free(values);
    ddb_item_free(key);
}

START_TEST(test_value_written_renewed_released)
{
    proc *a = cx_proc(&(proc_options){.holder_label = "pod-a", .lease_value = "10.0.0.1:80"});
    proc *b = cx_proc(NULL);
    ddb_lease *lease = cx_take(a, "lead", LEASE);
    ddb_lock_state st = state_of(b, "lead");
    ck_assert(st.has_value);
    ck_assert_str_eq(st.value, "10.0.0.1:80");
    ck_assert_str_eq(st.owner, ddb_lease_owner(lease));
    ck_assert_int_eq(strlen(st.record_version), 32);

    /* A new value goes out with the next renewal, not before. */
    ddb_error err;
    ck_assert_int_eq(ddb_lease_set_value(lease, "10.0.0.2:80", &err), 0);
    ck_assert_str_eq(state_of(b, "lead").value, "10.0.0.1:80");
    cx_advance(LEASE / 3);
    st = state_of(b, "lead");
    ck_assert_str_eq(st.value, "10.0.0.2:80");
    ck_assert(!ddb_cancel_is_set(ddb_lease_ended(lease)));

    /* The value is no condition: a foreign value does not make the renewal fail, and
     * the renewal writes the lease's own again. */
    foreign_value(b, "lead", "forged");
    ck_assert_str_eq(state_of(b, "lead").value, "forged");
    bool held = false;
    ck_assert_int_eq(ddb_lease_renew(lease, &held, NULL, &err), 0);
    ck_assert(held);
    ck_assert_str_eq(state_of(b, "lead").value, "10.0.0.2:80");

    /* No value: ddb_lease_renew removes it at once. */
    ck_assert_int_eq(ddb_lease_set_value(lease, NULL, &err), 0);
    ck_assert_int_eq(ddb_lease_renew(lease, &held, NULL, &err), 0);
    st = state_of(b, "lead");
    ck_assert(!st.has_value);
    ck_assert_str_eq(st.value, "");

    /* Bad values are refused and the lease keeps its own. */
    char big[DDB_LEASE_VALUE_MAX_BYTES + 2];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    ck_assert_int_eq(ddb_lease_set_value(lease, "", &err), DDB_EINVAL);
    ck_assert_int_eq(ddb_lease_set_value(lease, big, &err), DDB_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.message, "1025 bytes"));
    ck_assert_int_eq(ddb_lease_set_value(lease, "bad \xC0\xAF", &err), DDB_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.message, "UTF-8"));
    ck_assert_int_eq(ddb_lease_set_value(NULL, "x", &err), DDB_EINVAL);
    ck_assert_int_eq(ddb_lease_renew(lease, &held, NULL, &err), 0);
    ck_assert(!state_of(b, "lead").has_value);

    /* A value of the longest, in multi-byte characters, comes back whole. */
    char longest[DDB_LEASE_VALUE_MAX_BYTES + 1];
    for (size_t i = 0; i + 4 <= DDB_LEASE_VALUE_MAX_BYTES; i += 4)
        memcpy(longest + i, "\xF0\x9F\x94\x91", 4); /* U+1F511, a key */
    longest[DDB_LEASE_VALUE_MAX_BYTES] = '\0';
    ck_assert_int_eq(ddb_lease_set_value(lease, longest, &err), 0);
    ck_assert_int_eq(ddb_lease_renew(lease, &held, NULL, &err), 0);
    ck_assert_str_eq(state_of(b, "lead").value, longest);

    /* The release removes the value with the holder. */
    ddb_lease_release(lease);
    st = state_of(b, "lead");
    ck_assert(st.exists && !st.is_held && !st.has_value);
    ck_assert_str_eq(st.owner, "");

    /* The next acquire by a lock table without a value removes none it finds. */
    foreign_value(b, "lead", "left over");
    lease = cx_take(b, "lead", LEASE);
    ck_assert(!state_of(a, "lead").has_value);
    ddb_lease_release(lease);

    /* The lock table's own value is checked. */
    ck_assert_ptr_null(ddb_lock_table_new(a->table, &(ddb_lock_table_options){.lease_value = ""},
                                          &err));
    ck_assert_int_eq(err.code, DDB_EINVAL);
    ck_assert_ptr_null(ddb_lock_table_new(a->table, &(ddb_lock_table_options){.lease_value = big},
                                          &err));
    cx_proc_free(a);
    cx_proc_free(b);
}
END_TEST

/* The value shows in lists too. */
START_TEST(test_list_shows_value_and_owner)
{
    proc *a = cx_proc(&(proc_options){.lease_value = "a:1"});
    proc *b = cx_proc(NULL);
    ddb_lease *lease = cx_take(a, "one", LEASE);
    cx_sim_holder(b, "two", LEASE, "ghost");
    ddb_error err;
    ddb_lock_list *list = ddb_lock_table_list(b->locks, NULL, NULL, &err);
    ck_assert_ptr_nonnull(list);
    const char *name;
    ddb_lock_state st;
    int seen = 0;
    while (ddb_lock_list_next(list, &name, &st, &err) == 1) {
        seen++;
        if (strcmp(name, "one") == 0) {
            ck_assert(st.has_value);
            ck_assert_str_eq(st.value, "a:1");
            ck_assert_str_eq(st.owner, ddb_lease_owner(lease));
        } else {
            ck_assert_str_eq(name, "two");
            ck_assert(!st.has_value);
            ck_assert_str_eq(st.holder_label, "ghost");
        }
    }
    ck_assert_int_eq(seen, 2);
    ddb_lock_list_free(list);
    ddb_lease_release(lease);
    cx_proc_free(a);
    cx_proc_free(b);
}
END_TEST

/* How long a reader has seen a record version unchanged: 0 at first, the time since
 * over later reads; past the lease for a holder that stopped, yet no takeover by the
 * same lock table before its acquires have seen the holder for a lease; back to 0 when
 * a live holder renews. */
START_TEST(test_unchanged_ms)
{
    proc *b = cx_proc(NULL);
    cx_sim_holder(b, "stuck", 5000, "crashed");
    ddb_lock_state st = state_of(b, "stuck");
    ck_assert_int_eq(st.unchanged_ms, 0);
    cx_advance(2000);
    ck_assert_int_eq(state_of(b, "stuck").unchanged_ms, 2000);
    cx_advance(4000);
    st = state_of(b, "stuck");
    ck_assert_int_eq(st.unchanged_ms, 6000);
    ck_assert_int_gt(st.unchanged_ms, st.lease_ms);
    ddb_lease *lease = NULL;
    ddb_error err;
    ck_assert_int_eq(ddb_lock_try_acquire(b->locks, "stuck", LEASE, &lease, NULL, &err), 0);
    ck_assert_ptr_null(lease);
    /* Now the acquire has seen it: a read counts from the earlier of the two. */
    cx_advance(1000);
    ck_assert_int_eq(state_of(b, "stuck").unchanged_ms, 7000);

    /* A live holder renews every third of its lease: a new record version each time. */
    proc *a = cx_proc(NULL);
    ddb_lease *live = cx_take(a, "live", LEASE);
    ck_assert_int_eq(state_of(b, "live").unchanged_ms, 0);
    cx_advance(LEASE / 3 - 1);
    ck_assert_int_eq(state_of(b, "live").unchanged_ms, LEASE / 3 - 1);
    cx_advance(1);
    ck_assert_int_eq(state_of(b, "live").unchanged_ms, 0);
    ddb_lease_release(live);
    st = state_of(b, "live");
    ck_assert_int_eq(st.unchanged_ms, 0);
    ck_assert_str_eq(st.record_version, "");
    cx_proc_free(a);
    cx_proc_free(b);
}
END_TEST

/* ------------------------------------------------------------------- watch */

#define MAX_SEEN 16

typedef struct watcher {
    proc *p;
    const char *name;
    ddb_cancel *stop;
    pthread_t th;
    int rc;
    ddb_error err;
    int stop_after;           /* fn returns 1 after this many calls; 0 never */
    pthread_mutex_t mu;
    ddb_lock_state seen[MAX_SEEN];
    int n;
    int wrong_name, overflow; /* counted on the watch's thread, asserted in watch_stop */
    cx_event told;
} watcher;

static int on_change(void *arg, const char *name, const ddb_lock_state *st)
{
    watcher *w = arg;
    pthread_mutex_lock(&w->mu);
    if (strcmp(name, w->name) != 0)
        w->wrong_name++;
    if (w->n < MAX_SEEN)
        w->seen[w->n++] = *st;
    else
        w->overflow++;
    int n = w->n;
    pthread_mutex_unlock(&w->mu);
    cx_event_signal(&w->told);
    return w->stop_after && n >= w->stop_after;
}

static void *watch_main(void *arg)
{
    watcher *w = arg;
    w->rc = ddb_lock_table_watch(w->p->locks, w->name, NULL, on_change, w, w->stop, &w->err);
    return NULL;
}

static void watch_start(watcher *w, proc *p, const char *name)
{
    memset(w, 0, sizeof *w);
    w->p = p;
    w->name = name;
    w->stop = ddb_cancel_new();
    pthread_mutex_init(&w->mu, NULL);
    cx_event_init(&w->told);
    ck_assert_int_eq(pthread_create(&w->th, NULL, watch_main, w), 0);
}

/* The state told at call i (copied under the lock). */
static ddb_lock_state told(watcher *w, int i)
{
    pthread_mutex_lock(&w->mu);
    ddb_lock_state st = w->seen[i];
    pthread_mutex_unlock(&w->mu);
    return st;
}

static int told_count(watcher *w)
{
    pthread_mutex_lock(&w->mu);
    int n = w->n;
    pthread_mutex_unlock(&w->mu);
    return n;
}

static int watch_stop(watcher *w)
{
    ddb_cancel_set(w->stop);
    pthread_join(w->th, NULL);
    ck_assert_msg(w->wrong_name == 0, "the watch was told of another lock %d times",
                  w->wrong_name);
    ck_assert_msg(w->overflow == 0, "the watch was told more than %d times", MAX_SEEN);
    ddb_cancel_unref(w->stop);
    cx_event_destroy(&w->told);
    pthread_mutex_destroy(&w->mu);
    return w->rc;
}

/* A failover seen by a watch: the first leader with its value, then the next leader with
 * the token up by one and its own value -- the equivalent of etcdctl elect --listen. */
START_TEST(test_watch_sees_failover)
{
    proc *a = cx_proc(&(proc_options){.holder_label = "leader-a", .lease_value = "10.0.0.1:80"});
    proc *c = cx_proc(&(proc_options){.holder_label = "leader-c", .lease_value = "10.0.0.3:80"});
    proc *w = cx_proc(NULL);
    watcher wt;
    watch_start(&wt, w, "lead");
    cx_event_wait(&wt.told, 1);
    ddb_lock_state st = told(&wt, 0);
    ck_assert(!st.exists);

    ddb_lease *la = cx_take(a, "lead", LEASE);
    bg contender;
    bg_acquire(&contender, c, "lead", LEASE);
    proc_wait_refusals(c, 1);
    /* A free lock is read every second. */
    cx_advance(1000);
    cx_event_wait(&wt.told, 2);
    st = told(&wt, 1);
    ck_assert(st.is_held);
    ck_assert_str_eq(st.holder_label, "leader-a");
    ck_assert_str_eq(st.value, "10.0.0.1:80");
    ck_assert_int_eq(st.fencing_token, 1);
    ck_assert_int_eq(st.unchanged_ms, 0);

    /* Renewals change the record version, not the holder: nothing is told. (A third
     * of the lease at a time, as the heartbeat renews.) */
    for (int i = 0; i < 3; i++)
        cx_advance(LEASE / 3);
    ck_assert_int_eq(told_count(&wt), 2);

    /* The leader crashes: it stops renewing (its heartbeat is stopped, its lock stays). */
    dl_heartbeat_stop(la);
    for (int i = 0; i < 8 && !bg_done(&contender); i++)
        cx_advance(LEASE / 3);
    ck_assert_int_eq(bg_join(&contender), 0);
    ddb_lease *lc = contender.lease;
    ck_assert(ddb_lease_takeover(lc));
    for (int i = 0; i < 4 && told_count(&wt) < 3; i++)
        cx_advance(LEASE / 3);
    cx_event_wait(&wt.told, 3);
    st = told(&wt, 2);
    ck_assert(st.is_held);
    ck_assert_str_eq(st.holder_label, "leader-c");
    ck_assert_str_eq(st.value, "10.0.0.3:80");
    ck_assert_int_eq(st.fencing_token, 2);
    ck_assert_str_eq(st.owner, ddb_lease_owner(lc));

    /* A new value is a change. */
    ddb_error err;
    ck_assert_int_eq(ddb_lease_set_value(lc, "10.0.0.4:80", &err), 0);
    bool held = false;
    ck_assert_int_eq(ddb_lease_renew(lc, &held, NULL, &err), 0);
    cx_advance(LEASE / 3);
    cx_event_wait(&wt.told, 4);
    ck_assert_str_eq(told(&wt, 3).value, "10.0.0.4:80");
    ck_assert_int_eq(told(&wt, 3).fencing_token, 2);

    ck_assert_int_eq(watch_stop(&wt), DDB_ECANCELED);
    ddb_lease_release(lc);
    ddb_lease_release(la);
    cx_proc_free(a);
    cx_proc_free(c);
    cx_proc_free(w);
}
END_TEST

/* A watch reads and only reads: a holder that stopped renewing, watched for many leases,
 * is not written and not taken over by the watch's lock table before its own acquires
 * have seen the holder for a lease. fn's non-zero return ends the watch with 0. */
START_TEST(test_watch_is_a_reader)
{
    CX_NEEDS_FAKEDB();
    proc *w = cx_proc(NULL);
    int64_t token = cx_sim_holder(w, "job", 3000, "crashed");
    long writes = cx_requests("UpdateItem") + cx_requests("PutItem") + cx_requests("DeleteItem");
    long gets = cx_requests("GetItem");
    watcher wt;
    watch_start(&wt, w, "job");
    cx_event_wait(&wt.told, 1);
    for (int i = 0; i < 30; i++)
        cx_advance(1000);
    ck_assert_int_eq(told_count(&wt), 1);
    ck_assert_int_eq(told(&wt, 0).fencing_token, token);
    /* Every third of the 3 s lease: 30 s make 30 reads, and the first. */
    ck_assert_int_eq(cx_requests("GetItem") - gets, 31);
    ck_assert_int_eq(cx_requests("UpdateItem") + cx_requests("PutItem") +
                         cx_requests("DeleteItem"),
                     writes);
    ck_assert_int_eq(state_of(w, "job").fencing_token, token);
    ddb_lease *lease = NULL;
    ddb_error err;
    ck_assert_int_eq(ddb_lock_try_acquire(w->locks, "job", LEASE, &lease, NULL, &err), 0);
    ck_assert_ptr_null(lease);
    ck_assert_int_eq(watch_stop(&wt), DDB_ECANCELED);

    /* fn asks to stop: 0. */
    watcher again;
    memset(&again, 0, sizeof again);
    again.p = w;
    again.name = "job";
    again.stop_after = 1;
    pthread_mutex_init(&again.mu, NULL);
    cx_event_init(&again.told);
    ck_assert_int_eq(ddb_lock_table_watch(w->locks, "job", NULL, on_change, &again, NULL,
                                          &again.err),
                     0);
    ck_assert_int_eq(again.n, 1);
    cx_event_destroy(&again.told);
    pthread_mutex_destroy(&again.mu);

    /* Bad arguments, before any request. */
    ck_assert_int_eq(ddb_lock_table_watch(NULL, "job", NULL, on_change, &again, NULL, &err),
                     DDB_EINVAL);
    ck_assert_int_eq(ddb_lock_table_watch(w->locks, "job", NULL, NULL, NULL, NULL, &err),
                     DDB_EINVAL);
    ck_assert_int_eq(ddb_lock_table_watch(w->locks, "bad name", NULL, on_change, &again, NULL,
                                          &err),
                     DDB_EINVAL);
    ck_assert_int_eq(ddb_lock_table_watch(w->locks, "job",
                                          &(ddb_lock_watch_options){.free_poll_ms = -1},
                                          on_change, &again, NULL, &err),
                     DDB_EINVAL);
    cx_proc_free(w);
}
END_TEST

/* Throttling and a 500 are ridden out (the client here does not retry: each one reaches
 * the watch), and a change after them is still seen; a table that is gone ends the watch
 * with its error. */
START_TEST(test_watch_rides_out_throttling)
{
    CX_NEEDS_FAKEDB();
    proc *w = cx_proc(NULL);
    proc *a = cx_proc(&(proc_options){.lease_value = "v1"});
    watcher wt;
    watch_start(&wt, w, "svc");
    cx_event_wait(&wt.told, 1);
    long fired = fakedb_faults_fired(CX.fx.db);
    ck_assert_int_gt(fakedb_fault_add(CX.fx.db, &(fakedb_fault){.kind = FAKEDB_FAULT_ERROR,
                                                                .operation = "GetItem",
                                                                .count = 2}),
                     0);
    ck_assert_int_gt(fakedb_fault_add(CX.fx.db,
                                      &(fakedb_fault){.kind = FAKEDB_FAULT_ERROR,
                                                      .operation = "GetItem",
                                                      .error_type = "InternalServerError",
                                                      .count = 1}),
                     0);
    ddb_lease *lease = cx_take(a, "svc", LEASE);
    for (int i = 0; i < 6 && told_count(&wt) < 2; i++)
        cx_advance(1000);
    ck_assert_int_eq(fakedb_faults_fired(CX.fx.db) - fired, 3);
    cx_event_wait(&wt.told, 2);
    ck_assert_str_eq(told(&wt, 1).value, "v1");
    ddb_lease_release(lease);

    ck_assert_int_gt(fakedb_fault_add(CX.fx.db, &(fakedb_fault){.kind = FAKEDB_FAULT_ERROR,
                                                                .operation = "GetItem",
                                                                .error_type =
                                                                    "ResourceNotFoundException",
                                                                .count = 1}),
                     0);
    cx_advance(LEASE / 3);
    pthread_join(wt.th, NULL);
    ck_assert_int_eq(wt.rc, DDB_ENOTFOUND);
    ddb_cancel_unref(wt.stop);
    cx_event_destroy(&wt.told);
    pthread_mutex_destroy(&wt.mu);
    cx_proc_free(a);
    cx_proc_free(w);
}
END_TEST

/* A read that hangs at the server: the watch waits on it, and its stop token cuts it
 * short at once -- DDB_ECANCELED, nothing told after the first state. */
START_TEST(test_watch_stopped_during_a_hung_read)
{
    CX_NEEDS_FAKEDB();
    proc *w = cx_proc(NULL);
    cx_sim_holder(w, "hung", 3000, "crashed");
    watcher wt;
    watch_start(&wt, w, "hung");
    cx_event_wait(&wt.told, 1);
    long fired = fakedb_faults_fired(CX.fx.db);
    ck_assert_int_gt(fakedb_fault_add(CX.fx.db, &(fakedb_fault){.kind = FAKEDB_FAULT_DELAY,
                                                                .operation = "GetItem",
                                                                .count = 1,
                                                                .delay_ms = 600000}),
                     0);
    /* The next poll, a third of the lease on, reaches the server and hangs there. */
    ck_assert_int_eq(ddb_fake_clock_advance(CX.fx.clock, 1000), 0);
    ck_assert_int_eq(fakedb_wait_faults_fired(CX.fx.db, fired + 1, 20000), 0);
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    ck_assert_int_eq(watch_stop(&wt), DDB_ECANCELED);
    clock_gettime(CLOCK_MONOTONIC, &b);
    int64_t took_ms = (b.tv_sec - a.tv_sec) * 1000 + (b.tv_nsec - a.tv_nsec) / 1000000;
    ck_assert_int_le(took_ms, dl_check_bound_ms(2000));
    ck_assert_int_eq(wt.n, 1);
    fakedb_fault_clear(CX.fx.db);
    cx_proc_free(w);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("coord_watch");
    TCase *tc = tcase_create("watch");
    tcase_add_checked_fixture(tc, cx_setup, cx_teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_value_written_renewed_released);
    tcase_add_test(tc, test_list_shows_value_and_owner);
    tcase_add_test(tc, test_unchanged_ms);
    tcase_add_test(tc, test_watch_sees_failover);
    tcase_add_test(tc, test_watch_is_a_reader);
    tcase_add_test(tc, test_watch_rides_out_throttling);
    tcase_add_test(tc, test_watch_stopped_during_a_hung_read);
    suite_add_tcase(s, tc);
    return dl_check_run(s);
}
