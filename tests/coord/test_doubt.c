/* test_doubt.c: writes whose answer is lost. fakedb applies the write and closes the
 * connection unanswered (FAKEDB_FAULT_LOST_RESPONSE), for the first answer or every one;
 * each call must then say truly what happened: applied, not applied, or DDB_EINDOUBT,
 * and an acquire that cannot tell hands back what it may hold. Over real HTTP, on the
 * fake clock (the client's retry backoff is moved by the test, never slept). */
#include <check.h>

#include "dl_check.h"
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coord_fixture.h"

#define LEASE 3000

static void lose_answers(const char *operation, int count)
{
    ck_assert_int_gt(fakedb_fault_add(CX.fx.db, &(fakedb_fault){.kind = FAKEDB_FAULT_LOST_RESPONSE,
                                                                 .operation = operation,
                                                                 .count = count}),
                     0);
}

/* The resolving read fails too: GetItem answers 500 (not retried: no retries). */
static void fail_reads(int count)
{
    ck_assert_int_gt(fakedb_fault_add(CX.fx.db, &(fakedb_fault){.kind = FAKEDB_FAULT_ERROR,
                                                                 .operation = "GetItem",
                                                                 .error_type = "InternalServerError",
                                                                 .count = count}),
                     0);
}

/* A call on a thread while the test moves the fake clock, a step at a time, each step
 * settled: the client's retries wait on that clock. */
typedef struct call {
    pthread_t th;
    int (*fn)(struct call *);
    proc *p;
    const char *name;
    int64_t token;
    bool released;
    ddb_error err;
    int rc;
    atomic_bool done;
} call;

static void *call_main(void *arg)
{
    call *c = arg;
    c->rc = c->fn(c);
    atomic_store(&c->done, true);
    return NULL;
}

static int run_moving_clock(call *c)
{
    ddb_error_clear(&c->err);
    ck_assert_int_eq(pthread_create(&c->th, NULL, call_main, c), 0);
    while (!atomic_load(&c->done)) {
        if (ddb_fake_clock_wait_for_waiters(CX.fx.clock, 1, 50) != 0)
            continue;
        ddb_fake_clock_advance(CX.fx.clock, 50);
        ck_assert_int_eq(ddb_fake_clock_settle(CX.fx.clock, 30000), 0);
    }
    pthread_join(c->th, NULL);
    return c->rc;
}

static ddb_item *lock_probe_item(const char *pk)
{
    ddb_item *it = ddb_item_new();
    ck_assert_ptr_nonnull(it);
    ck_assert_int_eq(ddb_item_set_s(it, "pk", pk), 0);
    ck_assert_int_eq(ddb_item_set_s(it, "sk", "x"), 0);
    return it;
}

/* ------------------------------------------------------------ the client */

static int put_if_absent(call *c)
{
    ddb_item *it = lock_probe_item(c->name);
    static const char *const names[] = {"#p", "pk", NULL};
    int rc = ddb_table_put_item(c->p->table, it,
                                &(ddb_write_options){.condition = "attribute_not_exists(#p)",
                                                     .names = names},
                                NULL, NULL, &c->err);
    ddb_item_free(it);
    return rc;
}

/* The first answer lost, the retry fails its condition because the first attempt was
 * applied: not "condition failed" but in doubt, with the last attempt's type. */
START_TEST(test_conditional_put_retried_into_condition_is_in_doubt)
{
    CX_NEEDS_FAKEDB();
    proc *p = cx_proc(&(proc_options){.max_attempts = 3});
    lose_answers("PutItem", 1);
    call c = {.fn = put_if_absent, .p = p, .name = "doubt-1"};
    ck_assert_int_eq(run_moving_clock(&c), DDB_EINDOUBT);
    ck_assert_str_eq(c.err.aws_type, "ConditionalCheckFailedException");
    ck_assert_int_eq(c.err.retries, 1);
    ck_assert_msg(strstr(c.err.message, "may or may not have been applied"), "%s", c.err.message);
    ck_assert_int_eq(cx_requests("PutItem"), 2);
    cx_proc_free(p);
}
END_TEST

/* Every answer lost: in doubt, after the SDKs' retries; nothing is called refused. */
START_TEST(test_every_answer_lost_is_in_doubt)
{
    CX_NEEDS_FAKEDB();
    proc *p = cx_proc(&(proc_options){.max_attempts = 3});
    lose_answers("PutItem", 0);
    call c = {.fn = put_if_absent, .p = p, .name = "doubt-2"};
    ck_assert_int_eq(run_moving_clock(&c), DDB_EINDOUBT);
    ck_assert_int_eq(c.err.retries, 2);
    ck_assert_int_eq(c.err.http_status, 0);
    ck_assert_int_eq(cx_requests("PutItem"), 3);
    cx_proc_free(p);
}
END_TEST

/* A read whose answer is lost applied nothing: a network failure, not a doubt. A request
 * that could not connect was never sent: a network failure too. */
START_TEST(test_reads_and_unsent_requests_are_not_in_doubt)
{
    CX_NEEDS_FAKEDB();
    proc *p = cx_proc(NULL);
    lose_answers("GetItem", 1);
    ddb_item *key = lock_probe_item("doubt-3");
    ddb_result res = {0};
    ddb_error err;
    ck_assert_int_eq(ddb_table_get_item(p->table, key, NULL, &res, NULL, &err), DDB_ENETWORK);
    ddb_result_cleanup(&res);

    /* A port nobody listens on: the connection is refused before a byte is written. */
    ddb_client *gone = ddb_client_new(&(ddb_client_options){.endpoint = "http://127.0.0.1:9",
                                                            .region = "us-east-1",
                                                            .access_key_id = "AKIDTEST",
                                                            .secret_access_key = "secret",
                                                            .clock = CX.fx.clock,
                                                            .retry = {.max_attempts = DDB_NO_RETRIES}},
                                      &err);
    ck_assert_ptr_nonnull(gone);
    ddb_table *t = ddb_table_open(gone, CX.shop, "pk", "sk", &err);
    ck_assert_int_eq(ddb_table_put_item(t, key, NULL, NULL, NULL, &err), DDB_ENETWORK);
    ddb_table_close(t);
    ddb_client_free(gone);
    ddb_item_free(key);
    cx_proc_free(p);
}
END_TEST

static int tx_put_if_absent(call *c)
{
    ddb_tx *tx = ddb_tx_new(c->p->client);
    ddb_item *it = lock_probe_item(c->name);
    static const char *const names[] = {"#p", "pk", NULL};
    int rc = ddb_tx_put(tx, c->p->table, it,
                        &(ddb_tx_options){.condition = "attribute_not_exists(#p)", .names = names},
                        NULL, &c->err);
    if (rc == 0)
        rc = ddb_tx_send(tx, NULL, &c->err);
    ddb_item_free(it);
    ddb_tx_free(tx);
    return rc;
}

/* A transaction carries a ClientRequestToken that its retries reuse: the retry of one that
 * was applied while its answer was lost succeeds, and the write happened once. */
START_TEST(test_transaction_retry_is_idempotent)
{
    CX_NEEDS_FAKEDB();
    proc *p = cx_proc(&(proc_options){.max_attempts = 3});
    lose_answers("TransactWriteItems", 1);
    call c = {.fn = tx_put_if_absent, .p = p, .name = "doubt-4"};
    ck_assert_msg(run_moving_clock(&c) == 0, "%s", c.err.message);
    ck_assert_int_eq(cx_requests("TransactWriteItems"), 2);
    /* A new send is a new transaction: its condition fails now. */
    call again = {.fn = tx_put_if_absent, .p = p, .name = "doubt-4"};
    ck_assert_int_eq(run_moving_clock(&again), DDB_ETXCANCELED);
    cx_proc_free(p);
}
END_TEST

static int create_table(call *c)
{
    return ddb_client_create_table(c->p->client, c->name,
                                   &(ddb_key_schema){.pk = "id", .sk = c->token ? "other" : NULL},
                                   NULL, NULL, &c->err);
}

/* CreateTable retried into ResourceInUseException: the table with the asked key schema is
 * this call's; one with another key schema is the refusal it is. */
START_TEST(test_create_table_answer_lost)
{
    CX_NEEDS_FAKEDB();
    proc *p = cx_proc(&(proc_options){.max_attempts = 3});
    lose_answers("CreateTable", 1);
    call c = {.fn = create_table, .p = p, .name = "doubt_table"};
    ck_assert_msg(run_moving_clock(&c) == 0, "%s", c.err.message);
    ck_assert_int_eq(cx_requests("CreateTable"), 2);
    call other = {.fn = create_table, .p = p, .name = "doubt_table", .token = 1};
    lose_answers("CreateTable", 1);
    ck_assert_int_eq(run_moving_clock(&other), DDB_EINUSE);
    cx_proc_free(p);
}
END_TEST

/* ------------------------------------------------------------- the locks */

/* Every answer to the acquire lost, and the read that would tell fails too: in doubt, and
 * the acquire hands back what it may hold, so the lock is free at once, not after a lease. */
START_TEST(test_acquire_in_doubt_hands_back)
{
    CX_NEEDS_FAKEDB();
    proc *a = cx_proc(NULL), *b = cx_proc(NULL);
    lose_answers("UpdateItem", 1);
    fail_reads(1);
    ddb_lease *lease = NULL;
    ddb_error err;
    ck_assert_int_eq(ddb_lock_try_acquire(a->locks, "job", LEASE, &lease, NULL, &err),
                     DDB_EINDOUBT);
    ck_assert_ptr_null(lease);
    ck_assert_msg(strstr(err.message, "in doubt") && strstr(err.message, "free again"), "%s",
                  err.message);
    ddb__lock_item li;
    cx_read(b, "job", &li);
    ck_assert(!li.held);
    ck_assert_int_eq(li.fence, 1);
    ddb__lock_item_cleanup(&li);
    ddb_lease *other = NULL;
    ck_assert_int_eq(ddb_lock_try_acquire(b->locks, "job", LEASE, &other, NULL, &err), 0);
    ck_assert_ptr_nonnull(other);
    ck_assert_int_eq(ddb_lease_fencing_token(other), 2);
    ddb_lease_release(other);
    cx_proc_free(a);
    cx_proc_free(b);
}
END_TEST

/* The bad day: the hand-back's answer is lost too. The error says so; the hand-back was
 * applied all the same, and the item shows it. */
START_TEST(test_acquire_in_doubt_hand_back_lost_too)
{
    CX_NEEDS_FAKEDB();
    proc *a = cx_proc(NULL), *b = cx_proc(NULL);
    lose_answers("UpdateItem", 2);
    fail_reads(1);
    ddb_lease *lease = NULL;
    ddb_error err;
    ck_assert_int_eq(ddb_lock_try_acquire(a->locks, "job", LEASE, &lease, NULL, &err),
                     DDB_EINDOUBT);
    ck_assert_msg(strstr(err.message, "failed too"), "%s", err.message);
    ddb__lock_item li;
    cx_read(b, "job", &li);
    ck_assert(!li.held);
    ddb__lock_item_cleanup(&li);
    cx_proc_free(a);
    cx_proc_free(b);
}
END_TEST

static int release_if(call *c)
{
    return ddb_lock_release_if(c->p->locks, c->name, NULL, c->token, &c->released, NULL,
                               &c->err);
}

/* The first answer lost, the retry fails its condition because the first released it:
 * released, not "taken over since". */
START_TEST(test_release_if_first_answer_lost)
{
    CX_NEEDS_FAKEDB();
    proc *p = cx_proc(&(proc_options){.max_attempts = 3});
    int64_t token = cx_sim_holder(p, "job", LEASE, "stuck");
    lose_answers("UpdateItem", 1);
    call c = {.fn = release_if, .p = p, .name = "job", .token = token};
    ck_assert_msg(run_moving_clock(&c) == 0, "%s", c.err.message);
    ck_assert(c.released);
    ck_assert_int_eq(cx_requests("UpdateItem") >= 2, 1);
    /* A token that is not the holder's is still refused, answer lost or not. */
    int64_t again = cx_sim_holder(p, "job", LEASE, "next");
    lose_answers("UpdateItem", 1);
    call stale = {.fn = release_if, .p = p, .name = "job", .token = token};
    ck_assert_int_eq(run_moving_clock(&stale), 0);
    ck_assert(!stale.released);
    ddb__lock_item li;
    cx_read(p, "job", &li);
    ck_assert(li.held);
    ck_assert_int_eq(li.fence, again);
    ddb__lock_item_cleanup(&li);
    cx_proc_free(p);
}
END_TEST

/* Every answer lost and the read failing too: in doubt, never "not released". */
START_TEST(test_release_if_in_doubt)
{
    CX_NEEDS_FAKEDB();
    proc *p = cx_proc(NULL);
    int64_t token = cx_sim_holder(p, "job", LEASE, "stuck");
    lose_answers("UpdateItem", 1);
    fail_reads(1);
    bool released = true;
    ddb_error err;
    ck_assert_int_eq(ddb_lock_release_if(p->locks, "job", NULL, token, &released, NULL, &err),
                     DDB_EINDOUBT);
    ck_assert(!released);
    ck_assert_msg(strstr(err.message, "failed too"), "%s", err.message);
    cx_proc_free(p);
}
END_TEST

/* A forced holder (the testing library's simulated holder) whose answer was lost: its
 * owner id in the item says it was applied, with the token it got. */
START_TEST(test_force_hold_answer_lost)
{
    CX_NEEDS_FAKEDB();
    proc *p = cx_proc(NULL);
    lose_answers("UpdateItem", 1);
    int64_t token = 0;
    ddb_error err;
    ck_assert_msg(ddb_lock_force_hold(p->locks, "job", LEASE, "sim", &token, NULL, &err) == 0,
                  "%s", err.message);
    ck_assert_int_eq(token, 1);
    lose_answers("UpdateItem", 1);
    ck_assert_int_eq(ddb_lock_force_release(p->locks, "job", NULL, &err), 0);
    lose_answers("DeleteItem", 1);
    ck_assert_int_eq(ddb_lock_force_delete(p->locks, "job", NULL, &err), 0);
    ddb__lock_item li;
    cx_read(p, "job", &li);
    ck_assert(!li.exists);
    ddb__lock_item_cleanup(&li);
    cx_proc_free(p);
}
END_TEST

/* A lease's release whose answer is lost (and whose retry finds the lock released): the
 * lock is free, and no "release failed" warning is logged. */
START_TEST(test_lease_release_answer_lost)
{
    CX_NEEDS_FAKEDB();
    proc *p = cx_proc(NULL);
    ddb_lease *lease = cx_take(p, "job", LEASE);
    lose_answers("UpdateItem", 1);
    ddb_lease_release(lease);
    ck_assert_int_eq(rec_logs(p->rec, DDB_EVENT_RELEASE_FAILED), 0);
    ddb__lock_item li;
    cx_read(p, "job", &li);
    ck_assert(!li.held);
    ddb__lock_item_cleanup(&li);
    cx_proc_free(p);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("doubt");
    TCase *tc = tcase_create("doubt");
    tcase_add_checked_fixture(tc, cx_setup, cx_teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_conditional_put_retried_into_condition_is_in_doubt);
    tcase_add_test(tc, test_every_answer_lost_is_in_doubt);
    tcase_add_test(tc, test_reads_and_unsent_requests_are_not_in_doubt);
    tcase_add_test(tc, test_transaction_retry_is_idempotent);
    tcase_add_test(tc, test_create_table_answer_lost);
    tcase_add_test(tc, test_acquire_in_doubt_hands_back);
    tcase_add_test(tc, test_acquire_in_doubt_hand_back_lost_too);
    tcase_add_test(tc, test_release_if_first_answer_lost);
    tcase_add_test(tc, test_release_if_in_doubt);
    tcase_add_test(tc, test_force_hold_answer_lost);
    tcase_add_test(tc, test_lease_release_answer_lost);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return dl_check_run(suite());
}
