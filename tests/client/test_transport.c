/* test_transport.c: what lies under every operation, over HTTP against fakedb: retries
 * of throttling, server errors, lost responses and refused connections; cancellation
 * during a backoff and during a request; timeouts; keep-alive reuse; eight threads on
 * one client; signing checked by a verifying server; telemetry; configuration. */
#include <curl/curl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>

#include "client_util.h"
#include "client.h"

static ddb_client *client;
static ddb_table *tab;

static void open_client(const ddb_client_options *o)
{
    client = dl_fixture_client(&dl_fx, o);
    ck_assert_ptr_nonnull(client);
    ddb_error err;
    tab = ddb_table_open(client, "Tab", "pk", "sk", &err);
    ck_assert_ptr_nonnull(tab);
}

static void setup(void)
{
    dl_fixture_setup();
    ck_assert_int_eq(dl_fixture_create_table(&dl_fx, "Tab", "pk", "sk"), 0);
    open_client(&(ddb_client_options){ .retry.base_delay_ms = 1 });
}

static void setup_fake(void)
{
    dl_fixture_setup_fake_clock();
    ck_assert_int_eq(dl_fixture_create_table(&dl_fx, "Tab", "pk", "sk"), 0);
    open_client(NULL);
}

static void teardown(void)
{
    ddb_table_close(tab);
    tab = NULL;
    ddb_client_free(client);
    client = NULL;
    dl_fixture_teardown();
}

static int put_simple(ddb_table *t, const char *pk, ddb_result *res, ddb_cancel *cancel, ddb_error *err)
{
    ddb_item *it = key2(pk, "s");
    int rc = ddb_table_put_item(t, it, NULL, res, cancel, err);
    ddb_item_free(it);
    return rc;
}

/* ------------------------------------------------------------------ retries */

START_TEST(throttled_twice_then_success)
{
    ck_assert_int_gt(fakedb_fault_add(dl_fx.db, &(fakedb_fault){ .kind = FAKEDB_FAULT_ERROR,
        .operation = "PutItem", .count = 2 }), 0);
    ddb_result res = { 0 };
    ddb_error err;
    ck_assert_int_eq(put_simple(tab, "a", &res, NULL, &err), 0);
    ck_assert_int_eq(res.retries, 2);
    ck_assert_int_eq(fakedb_get_stats(dl_fx.db, "PutItem").requests, 3);
    /* The request loop ran on this thread: a blocking call makes no scheduler. */
    ck_assert_ptr_null(client->sched);
}
END_TEST

/* AWS_RETRY_MODE=adaptive: after a throttling answer the client limits its own rate
 * (the SDKs' client-side rate limiter); the standard mode never does. */
START_TEST(adaptive_mode_limits_after_throttling)
{
    ddb_table_close(tab);
    ddb_client_free(client);
    setenv("AWS_RETRY_MODE", "adaptive", 1);
    open_client(&(ddb_client_options){ .retry = { .max_attempts = DDB_NO_RETRIES } });
    unsetenv("AWS_RETRY_MODE");
    ck_assert_ptr_nonnull(client->limiter);
    ddb_error err;
    ck_assert_int_eq(put_simple(tab, "a", NULL, NULL, &err), 0);
    ck_assert(ddb__rate_limiter_fill_rate(client->limiter) == 0); /* not limiting yet */
    fakedb_fault_add(dl_fx.db, &(fakedb_fault){ .kind = FAKEDB_FAULT_ERROR, .operation = "PutItem",
                                               .count = 1 });
    ck_assert_int_eq(put_simple(tab, "b", NULL, NULL, &err), DDB_ETHROTTLED);
    ck_assert(ddb__rate_limiter_fill_rate(client->limiter) > 0); /* limiting now */
    ck_assert_int_eq(put_simple(tab, "c", NULL, NULL, &err), 0);
}
END_TEST

START_TEST(standard_mode_has_no_rate_limiter)
{
    ck_assert_ptr_null(client->limiter);
}
END_TEST

START_TEST(throttling_outlasts_retries)
{
    long id = fakedb_fault_add(dl_fx.db, &(fakedb_fault){ .kind = FAKEDB_FAULT_ERROR,
        .operation = "PutItem", .count = 0 });
    ddb_result res = { 0 };
    ddb_error err;
    ck_assert_int_eq(put_simple(tab, "a", &res, NULL, &err), DDB_ETHROTTLED);
    ck_assert_str_eq(err.aws_type, "ProvisionedThroughputExceededException");
    ck_assert_int_eq(err.http_status, 400);
    ck_assert_int_eq(err.retries, 2);
    ck_assert_int_eq(res.retries, 2);
    ck_assert_int_eq(fakedb_get_stats(dl_fx.db, "PutItem").requests, 3);

    /* One attempt only. */
    ddb_client *once = dl_fixture_client(&dl_fx, &(ddb_client_options){ .retry.max_attempts = DDB_NO_RETRIES });
    ddb_table *t1 = ddb_table_open(once, "Tab", "pk", "sk", &err);
    ck_assert_int_eq(put_simple(t1, "a", &res, NULL, &err), DDB_ETHROTTLED);
    ck_assert_int_eq(err.retries, 0);
    ck_assert_int_eq(fakedb_get_stats(dl_fx.db, "PutItem").requests, 4);
    ddb_table_close(t1);
    ddb_client_free(once);

    /* AWS_MAX_ATTEMPTS, read once when the client is made, when the options say none. */
    setenv("AWS_MAX_ATTEMPTS", "5", 1);
    ddb_client *five = dl_fixture_client(&dl_fx, NULL);
    unsetenv("AWS_MAX_ATTEMPTS");
    ddb_table *t5 = ddb_table_open(five, "Tab", "pk", "sk", &err);
    ck_assert_int_eq(put_simple(t5, "a", &res, NULL, &err), DDB_ETHROTTLED);
    ck_assert_int_eq(err.retries, 4);
    ck_assert_int_eq(fakedb_get_stats(dl_fx.db, "PutItem").requests, 9);
    ddb_table_close(t5);
    ddb_client_free(five);
    fakedb_fault_remove(dl_fx.db, id);
    ck_assert_int_eq(put_simple(tab, "a", &res, NULL, &err), 0);
    ck_assert_int_eq(res.retries, 0);
}
END_TEST

START_TEST(server_error_is_retried)
{
    ck_assert_int_gt(fakedb_fault_add(dl_fx.db, &(fakedb_fault){ .kind = FAKEDB_FAULT_ERROR,
        .operation = "GetItem", .error_type = "InternalServerError", .count = 1 }), 0);
    ddb_item *k = key2("a", "s");
    ddb_result res = { 0 };
    ddb_error err;
    ck_assert_int_eq(ddb_table_get_item(tab, k, NULL, &res, NULL, &err), 0);
    ck_assert_int_eq(res.retries, 1);
    /* A validation error is not retried. */
    ck_assert_int_eq(ddb_table_update_item(tab, k, "SET", NULL, &res, NULL, &err), DDB_EVALIDATION);
    ck_assert_int_eq(err.retries, 0);
    ck_assert_int_eq(fakedb_get_stats(dl_fx.db, "UpdateItem").requests, 1);
    ddb_item_free(k);
}
END_TEST

START_TEST(lost_response_then_retry)
{
    ck_assert_int_gt(fakedb_fault_add(dl_fx.db, &(fakedb_fault){ .kind = FAKEDB_FAULT_LOST_RESPONSE,
        .operation = "UpdateItem", .count = 1 }), 0);
    ddb_item *k = key2("lost", "s");
    ddb_item *vals = ddb_item_new();
    ddb_item_set_i64(vals, ":one", 1);
    ddb_result res = { 0 };
    ddb_error err;
    ck_assert_int_eq(ddb_table_update_item(tab, k, "ADD n :one", &(ddb_write_options){ .values = vals,
        .return_values = DDB_RETURN_ALL_NEW }, &res, NULL, &err), 0);
    ck_assert_int_eq(res.retries, 1);
    /* The lost attempt was applied too: the counter went up twice. */
    int64_t n;
    ck_assert_int_eq(ddb_item_get_i64(res.item, "n", &n), 0);
    ck_assert_int_eq(n, 2);
    ddb_result_cleanup(&res);
    ddb_item_free(vals);
    ddb_item_free(k);
}
END_TEST

/* A request lost on its way: the client sees a connection failure, retries, and the
 * write is applied once. */
START_TEST(lost_request_then_retry)
{
    ck_assert_int_gt(fakedb_fault_add(dl_fx.db, &(fakedb_fault){ .kind = FAKEDB_FAULT_LOST_REQUEST,
        .operation = "UpdateItem", .count = 1 }), 0);
    ddb_item *k = key2("lost-request", "s");
    ddb_item *vals = ddb_item_new();
    ddb_item_set_i64(vals, ":one", 1);
    ddb_result res = { 0 };
    ddb_error err;
    ck_assert_int_eq(ddb_table_update_item(tab, k, "ADD n :one", &(ddb_write_options){ .values = vals,
        .return_values = DDB_RETURN_ALL_NEW }, &res, NULL, &err), 0);
    ck_assert_int_eq(res.retries, 1);
    int64_t n;
    ck_assert_int_eq(ddb_item_get_i64(res.item, "n", &n), 0);
    ck_assert_int_eq(n, 1); /* the lost attempt was not applied */
    ddb_result_cleanup(&res);
    ddb_item_free(vals);
    ddb_item_free(k);
}
END_TEST

START_TEST(refused_connection_is_retried)
{
    ddb_error err;
    ddb_client *c = ddb_client_new(&(ddb_client_options){ .endpoint = "http://127.0.0.1:1",
        .region = "us-east-1", .access_key_id = "a", .secret_access_key = "b",
        .retry.base_delay_ms = 1, .imds_disabled = true, .log_level = DDB_LOG_OFF }, &err);
    ck_assert_ptr_nonnull(c);
    ddb_table *t = ddb_table_open(c, "Tab", "pk", "sk", &err);
    ddb_result res = { 0 };
    ck_assert_int_eq(put_simple(t, "a", &res, NULL, &err), DDB_ENETWORK);
    ck_assert_int_eq(err.http_status, 0);
    ck_assert_int_eq(err.retries, 2);
    ck_assert_str_eq(err.aws_type, "");
    ddb_table_close(t);
    ddb_client_free(c);
}
END_TEST

START_TEST(request_timeout)
{
    ck_assert_int_gt(fakedb_fault_add(dl_fx.db, &(fakedb_fault){ .kind = FAKEDB_FAULT_DELAY,
        .operation = "GetItem", .delay_ms = 1500, .count = 1 }), 0);
    ddb_client *c = dl_fixture_client(&dl_fx, &(ddb_client_options){ .request_timeout_ms = 150,
        .retry.max_attempts = DDB_NO_RETRIES });
    ddb_error err;
    ddb_table *t = ddb_table_open(c, "Tab", "pk", "sk", &err);
    ddb_item *k = key2("a", "s");
    int64_t t0 = dl_check_mono_ms();
    ck_assert_int_eq(ddb_table_get_item(t, k, NULL, NULL, NULL, &err), DDB_ETIMEDOUT);
    ck_assert_int_lt(dl_check_mono_ms() - t0, dl_check_bound_ms(1200));
    ddb_item_free(k);
    ddb_table_close(t);
    ddb_client_free(c);
}
END_TEST

/* -------------------------------------------------------------- cancellation */

typedef struct call_arg {
    ddb_table *t;
    ddb_cancel *cancel;
    int rc;
    ddb_error err;
    int64_t done_ms;
    bool get;
} call_arg;

static void *call_thread(void *p)
{
    call_arg *a = p;
    if (a->get) {
        ddb_item *k = key2("slow", "s");
        a->rc = ddb_table_get_item(a->t, k, NULL, NULL, a->cancel, &a->err);
        ddb_item_free(k);
    } else {
        a->rc = put_simple(a->t, "a", NULL, a->cancel, &a->err);
    }
    a->done_ms = dl_check_mono_ms();
    return NULL;
}

START_TEST(cancel_during_backoff)
{
    /* Every attempt is throttled; the backoff waits on the fake clock, which never moves. */
    ck_assert_int_gt(fakedb_fault_add(dl_fx.db, &(fakedb_fault){ .kind = FAKEDB_FAULT_ERROR,
        .operation = "PutItem", .count = 0 }), 0);
    call_arg a = { .t = tab, .cancel = ddb_cancel_new() };
    pthread_t th;
    pthread_create(&th, NULL, call_thread, &a);
    /* A jittered delay may be 0 ms, so the call may be at its first or a later backoff. */
    int waited = ddb_fake_clock_wait_for_waiters(dl_fx.clock, 1, 10000);
    long sent = fakedb_get_stats(dl_fx.db, "PutItem").requests;
    int64_t t0 = dl_check_mono_ms();
    ddb_cancel_set(a.cancel);
    pthread_join(th, NULL); /* joined before any assertion, so a failure cannot hang */
    ck_assert_int_eq(waited, 0);
    ck_assert_int_ge(sent, 1);
    ck_assert_int_eq(a.rc, DDB_ECANCELED);
    ck_assert_int_eq(a.err.code, DDB_ECANCELED);
    ck_assert_msg(strstr(a.err.message, "PutItem was cancelled while waiting to retry"), "%s",
                  a.err.message);
    ck_assert_int_lt(a.done_ms - t0, dl_check_bound_ms(500));
    ck_assert_int_eq(fakedb_get_stats(dl_fx.db, "PutItem").requests, sent); /* none after */
    ck_assert_ptr_null(client->sched); /* the backoff was the caller's sleep, not a task */
    ck_assert_int_eq(ddb_fake_clock_waiters(dl_fx.clock), 0);
    ddb_cancel_unref(a.cancel);
}
END_TEST

START_TEST(cancel_during_request)
{
    long fired = fakedb_faults_fired(dl_fx.db);
    ck_assert_int_gt(fakedb_fault_add(dl_fx.db, &(fakedb_fault){ .kind = FAKEDB_FAULT_DELAY,
        .operation = "GetItem", .delay_ms = 3000, .count = 1 }), 0);
    call_arg a = { .t = tab, .cancel = ddb_cancel_new(), .get = true };
    pthread_t th;
    pthread_create(&th, NULL, call_thread, &a);
    /* Wait until the server has the request: its delay fault fired. */
    bool arrived = fakedb_wait_faults_fired(dl_fx.db, fired + 1, dl_check_bound_ms(10000)) == 0;
    long answered = fakedb_get_stats(dl_fx.db, "GetItem").requests;
    int64_t t0 = dl_check_mono_ms();
    ddb_cancel_set(a.cancel);
    pthread_join(th, NULL); /* joined before any assertion, so a failure cannot hang */
    ck_assert(arrived);
    ck_assert_int_eq(answered, 0); /* the server still held it */
    ck_assert_int_eq(a.rc, DDB_ECANCELED);
    ck_assert_int_lt(a.done_ms - t0, dl_check_bound_ms(500));
    ddb_cancel_unref(a.cancel);

    /* The client still works afterwards, on a fresh connection. */
    ddb_error err;
    ddb_item *k = key2("after", "s");
    ck_assert_int_eq(ddb_table_get_item(tab, k, NULL, NULL, NULL, &err), 0);
    ddb_item_free(k);
}
END_TEST

START_TEST(cancelled_before_sending)
{
    ddb_cancel *c = ddb_cancel_new();
    ddb_cancel_set(c);
    ddb_error err;
    ck_assert_int_eq(put_simple(tab, "a", NULL, c, &err), DDB_ECANCELED);
    ck_assert_msg(strstr(err.message, "PutItem was cancelled before it was sent"), "%s",
                  err.message);
    ck_assert_int_eq(fakedb_get_stats(dl_fx.db, "PutItem").requests, 0);
    ddb_cancel_unref(c);
}
END_TEST

/* ------------------------------------------------------- connections, threads */

START_TEST(keep_alive_reuse)
{
    ddb_item *k = key2("k", "s");
    ddb_error err;
    for (int i = 0; i < 100; i++)
        ck_assert_int_eq(ddb_table_get_item(tab, k, NULL, NULL, NULL, &err), 0);
    ck_assert_int_eq(ddb__client_connections_opened(client), 1);
    ck_assert_int_eq(fakedb_get_stats(dl_fx.db, "GetItem").requests, 100);
    ddb_item_free(k);
}
END_TEST

#define THREADS 8
#define PER_THREAD 40

static void *worker(void *p)
{
    long id = (long)(intptr_t)p;
    char pk[32];
    snprintf(pk, sizeof pk, "w%ld", id);
    ddb_item *vals = ddb_item_new();
    ddb_item_set_i64(vals, ":one", 1);
    ddb_item *shared = key2("shared", "s");
    long failures = 0;
    for (int i = 0; i < PER_THREAD; i++) {
        ddb_item *it = key2(pk, "s");
        ddb_item_set_i64(it, "i", i);
        ddb_error err;
        ddb_result res = { 0 };
        if (ddb_table_put_item(tab, it, NULL, NULL, NULL, &err) != 0)
            failures++;
        ddb_item *k = key2(pk, "s");
        if (ddb_table_get_item(tab, k, NULL, &res, NULL, &err) != 0 || !ddb_item_equal(res.item, it))
            failures++;
        if (ddb_table_update_item(tab, shared, "ADD n :one", &(ddb_write_options){ .values = vals },
                            NULL, NULL, &err) != 0)
            failures++;
        ddb_result_cleanup(&res);
        ddb_item_free(k);
        ddb_item_free(it);
    }
    ddb_item_free(shared);
    ddb_item_free(vals);
    return (void *)(intptr_t)failures;
}

START_TEST(eight_threads_one_client)
{
    pthread_t th[THREADS];
    for (long i = 0; i < THREADS; i++)
        pthread_create(&th[i], NULL, worker, (void *)(intptr_t)i);
    long failures = 0;
    for (int i = 0; i < THREADS; i++) {
        void *r;
        pthread_join(th[i], &r);
        failures += (long)(intptr_t)r;
    }
    ck_assert_int_eq(failures, 0);
    ddb_item *shared = key2("shared", "s");
    ddb_result res = { 0 };
    ddb_error err;
    ck_assert_int_eq(ddb_table_get_item(tab, shared, NULL, &res, NULL, &err), 0);
    int64_t n;
    ck_assert_int_eq(ddb_item_get_i64(res.item, "n", &n), 0);
    ck_assert_int_eq(n, THREADS * PER_THREAD);
    ck_assert_int_le(ddb__client_connections_opened(client), THREADS);
    ck_assert_int_ge(ddb__client_connections_opened(client), 1);
    ddb_result_cleanup(&res);
    ddb_item_free(shared);
}
END_TEST

/* -------------------------------------------------------------- signing */

START_TEST(verifying_server_accepts_signed_requests)
{
    fakedb_error ferr;
    fakedb *db = fakedb_start(&(fakedb_options){ .credentials = "AKIDSIGNED:signed-secret" }, &ferr);
    ck_assert_ptr_nonnull(db);
    ck_assert_int_eq(fakedb_create_table(db, "Signed", "pk", NULL, &ferr), 0);
    const char *secrets[] = { "signed-secret", "wrong-secret" };
    for (int i = 0; i < 2; i++) {
        for (int with_token = 0; with_token < 2; with_token++) {
            ddb_error err;
            ddb_client *c = ddb_client_new(&(ddb_client_options){ .endpoint = fakedb_endpoint(db),
                .region = "eu-west-1", .access_key_id = "AKIDSIGNED", .secret_access_key = secrets[i],
                .session_token = with_token ? "session/token+==" : NULL, .imds_disabled = true,
                .log_level = DDB_LOG_OFF }, &err);
            ck_assert_ptr_nonnull(c);
            ddb_table *t = ddb_table_open(c, "Signed", "pk", NULL, &err);
            ddb_item *it = ddb_item_new();
            ddb_item_set_s(it, "pk", "signed ✓ \"quoted\"");
            int rc = ddb_table_put_item(t, it, NULL, NULL, NULL, &err);
            if (i == 0) {
                ck_assert_msg(rc == 0, "signed request refused: %s", err.message);
            } else {
                ck_assert_int_eq(rc, DDB_EACCESS);
                ck_assert_int_eq(err.http_status, 400);
                ck_assert_str_eq(err.aws_type, "InvalidSignatureException");
            }
            ddb_item_free(it);
            ddb_table_close(t);
            ddb_client_free(c);
        }
    }
    fakedb_stop(db);
}
END_TEST

/* A client whose wall clock is an hour behind the server's: its first signature is
 * refused as expired, it takes the server's time from the answer's Date, and the same
 * call then succeeds; later calls sign with the corrected time at once. */
START_TEST(clock_skew_is_corrected_from_the_servers_date)
{
    fakedb_error ferr;
    int64_t server_ms = 1767225600000LL; /* 2026-01-01 */
    fakedb *db = fakedb_start(&(fakedb_options){ .credentials = "AKIDSKEW:skew-secret",
                                                 .fake_clock = true,
                                                 .fake_clock_start_ms = server_ms }, &ferr);
    ck_assert_ptr_nonnull(db);
    ck_assert_int_eq(fakedb_create_table(db, "Skew", "pk", NULL, &ferr), 0);
    ddb_clock *behind = ddb_fake_clock_new(server_ms - 3600 * 1000);
    ddb_error err;
    ddb_client *c = ddb_client_new(&(ddb_client_options){ .endpoint = fakedb_endpoint(db),
        .region = "eu-west-1", .access_key_id = "AKIDSKEW", .secret_access_key = "skew-secret",
        .clock = behind, .imds_disabled = true, .log_level = DDB_LOG_OFF,
        .retry.max_attempts = 2 }, &err);
    ck_assert_ptr_nonnull(c);
    ddb_table *t = ddb_table_open(c, "Skew", "pk", NULL, &err);
    ddb_item *it = ddb_item_new();
    ddb_item_set_s(it, "pk", "a");
    ddb_result res = { 0 };
    ck_assert_msg(ddb_table_put_item(t, it, NULL, &res, NULL, &err) == 0, "%s", err.message);
    ck_assert_int_eq(res.retries, 1); /* refused once as expired, then signed anew */
    ddb_result_cleanup(&res);
    ck_assert_int_eq(ddb_table_put_item(t, it, NULL, &res, NULL, &err), 0);
    ck_assert_int_eq(res.retries, 0);
    ddb_result_cleanup(&res);
    ddb_item_free(it);
    ddb_table_close(t);
    ddb_client_free(c);
    ddb_clock_unref(behind);
    fakedb_stop(db);
}
END_TEST

/* A verifying server refuses a signature more than 5 minutes off its clock with AWS's
 * error, and without the client's correction (one attempt) that is the call's error. */
START_TEST(verifying_server_refuses_an_expired_signature)
{
    fakedb_error ferr;
    int64_t server_ms = 1767225600000LL;
    fakedb *db = fakedb_start(&(fakedb_options){ .credentials = "AKIDSKEW:skew-secret",
                                                 .fake_clock = true,
                                                 .fake_clock_start_ms = server_ms }, &ferr);
    ck_assert_ptr_nonnull(db);
    ck_assert_int_eq(fakedb_create_table(db, "Skew", "pk", NULL, &ferr), 0);
    ddb_clock *behind = ddb_fake_clock_new(server_ms - 6 * 60 * 1000);
    ddb_error err;
    ddb_client *c = ddb_client_new(&(ddb_client_options){ .endpoint = fakedb_endpoint(db),
        .region = "eu-west-1", .access_key_id = "AKIDSKEW", .secret_access_key = "skew-secret",
        .clock = behind, .imds_disabled = true, .log_level = DDB_LOG_OFF,
        .retry.max_attempts = DDB_NO_RETRIES }, &err);
    ddb_table *t = ddb_table_open(c, "Skew", "pk", NULL, &err);
    ddb_item *it = ddb_item_new();
    ddb_item_set_s(it, "pk", "a");
    ck_assert_int_eq(ddb_table_put_item(t, it, NULL, NULL, NULL, &err), DDB_EACCESS);
    ck_assert_str_eq(err.aws_type, "InvalidSignatureException");
    ck_assert_msg(strstr(err.message, "Signature expired: 20251231T235400Z is now earlier than "
                                      "20251231T235500Z (20260101T000000Z - 5 min.)") != NULL,
                  "%s", err.message);
    ddb_item_free(it);
    ddb_table_close(t);
    ddb_client_free(c);
    ddb_clock_unref(behind);
    fakedb_stop(db);
}
END_TEST

/* -------------------------------------------------------------- telemetry */

typedef struct tel_log {
    pthread_mutex_t mu;
    int starts, ends, metrics;
    uint64_t span, parent;
    char name[64], op[64], table[64], system[64], address[64], error_type[128], end_error[128];
    char metric_name[64], metric_unit[8], metric_error[128];
    double metric_value;
} tel_log;

static tel_log tl = { .mu = PTHREAD_MUTEX_INITIALIZER };

static void t_start(void *arg, uint64_t id, uint64_t parent, const char *name, const uint64_t *links, size_t n)
{
    pthread_mutex_lock(&tl.mu);
    tl.starts++;
    tl.span = id;
    tl.parent = parent;
    snprintf(tl.name, sizeof tl.name, "%s", name);
    tl.error_type[0] = '\0';
    pthread_mutex_unlock(&tl.mu);
}

static void t_attr(void *arg, uint64_t id, const ddb_attr *a)
{
    pthread_mutex_lock(&tl.mu);
    char *dst = NULL;
    size_t cap = 64;
    if (strcmp(a->key, "db.operation.name") == 0)
        dst = tl.op;
    else if (strcmp(a->key, "db.collection.name") == 0)
        dst = tl.table;
    else if (strcmp(a->key, "db.system.name") == 0)
        dst = tl.system;
    else if (strcmp(a->key, "server.address") == 0)
        dst = tl.address;
    else if (strcmp(a->key, "error.type") == 0)
        dst = tl.error_type, cap = sizeof tl.error_type;
    if (dst && a->type == DDB_ATTR_STR && id == tl.span)
        snprintf(dst, cap, "%s", a->v.s);
    pthread_mutex_unlock(&tl.mu);
}

static void t_end(void *arg, uint64_t id, const char *error_type)
{
    pthread_mutex_lock(&tl.mu);
    tl.ends++;
    snprintf(tl.end_error, sizeof tl.end_error, "%s", error_type ? error_type : "");
    pthread_mutex_unlock(&tl.mu);
}

static void t_metric(void *arg, const char *name, const char *unit, double value, const ddb_attr *attrs, size_t n)
{
    pthread_mutex_lock(&tl.mu);
    tl.metrics++;
    snprintf(tl.metric_name, sizeof tl.metric_name, "%s", name);
    snprintf(tl.metric_unit, sizeof tl.metric_unit, "%s", unit);
    tl.metric_value = value;
    tl.metric_error[0] = '\0';
    for (size_t i = 0; i < n; i++)
        if (strcmp(attrs[i].key, "error.type") == 0)
            snprintf(tl.metric_error, sizeof tl.metric_error, "%s", attrs[i].v.s);
    pthread_mutex_unlock(&tl.mu);
}

START_TEST(request_spans_and_metrics)
{
    ddb_telemetry tel = { .span_start = t_start, .span_attr = t_attr, .span_end = t_end, .metric = t_metric };
    ddb_client *c = dl_fixture_client(&dl_fx, &(ddb_client_options){ .telemetry = &tel });
    ck_assert(ddb_client_telemetry(c)->span_start == t_start);
    ddb_error err;
    ddb_table *t = ddb_table_open(c, "Tab", "pk", "sk", &err);
    ddb_item *k = key2("x", "s");
    uint64_t prev = ddb_telemetry_set_parent(4242);
    ck_assert_int_eq(ddb_table_get_item(t, k, NULL, NULL, NULL, &err), 0);
    ck_assert_int_eq(tl.starts, 1);
    ck_assert_int_eq(tl.ends, 1);
    ck_assert_str_eq(tl.name, "GetItem");
    ck_assert(tl.parent == 4242);
    ck_assert(tl.span != 0);
    ck_assert_str_eq(tl.system, "aws.dynamodb");
    ck_assert_str_eq(tl.op, "GetItem");
    ck_assert_str_eq(tl.table, "Tab");
    ck_assert_str_eq(tl.address, "127.0.0.1");
    ck_assert_str_eq(tl.error_type, "");
    ck_assert_str_eq(tl.end_error, "");
    ck_assert_int_eq(tl.metrics, 1);
    ck_assert_str_eq(tl.metric_name, "db.client.operation.duration");
    ck_assert_str_eq(tl.metric_unit, "s");
    ck_assert(tl.metric_value >= 0);
    uint64_t first = tl.span;

    ddb_table *missing = ddb_table_open(c, "Missing", "pk", "sk", &err);
    ddb_telemetry_set_parent(0);
    ck_assert_int_eq(ddb_table_put_item(missing, k, NULL, NULL, NULL, &err), DDB_ENOTFOUND);
    ck_assert_int_eq(tl.starts, 2);
    ck_assert_str_eq(tl.name, "PutItem");
    ck_assert(tl.parent == 0);
    ck_assert(tl.span != first);
    ck_assert_str_eq(tl.error_type, "ResourceNotFoundException");
    ck_assert_str_eq(tl.end_error, "ResourceNotFoundException");
    ck_assert_str_eq(tl.metric_error, "ResourceNotFoundException");
    ddb_telemetry_set_parent(prev);
    ddb_table_close(missing);
    ddb_item_free(k);
    ddb_table_close(t);
    ddb_client_free(c);
}
END_TEST

/* ------------------------------------------------------------ configuration */

static void clear_env(void)
{
    const char *vars[] = { "AWS_ENDPOINT_URL_DYNAMODB", "AWS_ENDPOINT_URL", "AWS_REGION",
                           "AWS_DEFAULT_REGION", "AWS_PROFILE" };
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
        unsetenv(vars[i]);
    setenv("AWS_CONFIG_FILE", "/nonexistent/dynalock/config", 1);
    setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent/dynalock/credentials", 1);
}

static ddb_client *new_plain(const char *endpoint, const char *region, ddb_error *err)
{
    return ddb_client_new(&(ddb_client_options){ .endpoint = endpoint, .region = region,
        .imds_disabled = true, .log_level = DDB_LOG_OFF }, err);
}

START_TEST(endpoint_and_region_resolution)
{
    clear_env();
    ddb_error err;
    ddb_client *c = new_plain(NULL, NULL, &err);
    ck_assert_ptr_nonnull(c);
    ck_assert_str_eq(ddb_client_region(c), "us-east-1");
    ck_assert_str_eq(ddb_client_endpoint(c), "https://dynamodb.us-east-1.amazonaws.com");
    ddb_client_free(c);

    setenv("AWS_DEFAULT_REGION", "eu-west-3", 1);
    c = new_plain(NULL, NULL, &err);
    ck_assert_str_eq(ddb_client_region(c), "eu-west-3");
    ck_assert_str_eq(ddb_client_endpoint(c), "https://dynamodb.eu-west-3.amazonaws.com");
    ddb_client_free(c);

    setenv("AWS_REGION", "ap-south-1", 1);
    setenv("AWS_ENDPOINT_URL", "http://general:1234", 1);
    c = new_plain(NULL, NULL, &err);
    ck_assert_str_eq(ddb_client_region(c), "ap-south-1");
    ck_assert_str_eq(ddb_client_endpoint(c), "http://general:1234");
    ddb_client_free(c);

    setenv("AWS_ENDPOINT_URL_DYNAMODB", "http://dynamo-only:4321", 1);
    c = new_plain(NULL, NULL, &err);
    ck_assert_str_eq(ddb_client_endpoint(c), "http://dynamo-only:4321");
    ddb_client_free(c);

    c = new_plain("http://explicit:1", "explicit-region", &err);
    ck_assert_str_eq(ddb_client_endpoint(c), "http://explicit:1");
    ck_assert_str_eq(ddb_client_region(c), "explicit-region");
    ck_assert_ptr_eq(ddb_client_clock(c), ddb_clock_system());
    ck_assert_int_eq(ddb__client_connections_opened(c), 0); /* no I/O in new */
    ddb_client_free(c);

    const char *bad[] = { "ftp://x", "no-scheme", "http://", "http://h:99999", "http://h:x" };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ck_assert_ptr_null(new_plain(bad[i], NULL, &err));
        ck_assert_int_eq(err.code, DDB_EINVAL);
    }
    ck_assert_ptr_null(ddb_client_new(&(ddb_client_options){ .connect_timeout_ms = -1 }, &err));
    ck_assert_int_eq(err.code, DDB_EINVAL);
    clear_env();
    ddb_client_free(NULL);
}
END_TEST

static Suite *transport_suite(void)
{
    Suite *s = suite_create("client_transport");
    TCase *tc = tcase_create("system_clock");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, throttled_twice_then_success);
    tcase_add_test(tc, adaptive_mode_limits_after_throttling);
    tcase_add_test(tc, standard_mode_has_no_rate_limiter);
    tcase_add_test(tc, clock_skew_is_corrected_from_the_servers_date);
    tcase_add_test(tc, verifying_server_refuses_an_expired_signature);
    tcase_add_test(tc, throttling_outlasts_retries);
    tcase_add_test(tc, server_error_is_retried);
    tcase_add_test(tc, lost_response_then_retry);
    tcase_add_test(tc, lost_request_then_retry);
    tcase_add_test(tc, refused_connection_is_retried);
    tcase_add_test(tc, request_timeout);
    tcase_add_test(tc, cancel_during_request);
    tcase_add_test(tc, cancelled_before_sending);
    tcase_add_test(tc, keep_alive_reuse);
    tcase_add_test(tc, eight_threads_one_client);
    tcase_add_test(tc, request_spans_and_metrics);
    suite_add_tcase(s, tc);

    TCase *fake = tcase_create("fake_clock");
    tcase_add_checked_fixture(fake, setup_fake, teardown);
    tcase_set_timeout(fake, 60);
    tcase_add_test(fake, cancel_during_backoff);
    suite_add_tcase(s, fake);

    TCase *alone = tcase_create("standalone");
    tcase_set_timeout(alone, 60);
    tcase_add_test(alone, verifying_server_accepts_signed_requests);
    tcase_add_test(alone, endpoint_and_region_resolution);
    suite_add_tcase(s, alone);
    return s;
}

int main(void)
{
    return dl_check_run(transport_suite());
}
