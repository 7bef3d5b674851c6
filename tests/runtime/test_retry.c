/* test_retry.c: the standard retry mode: which failures retry, full-jitter backoff from
 * an injected random source, attempts, and the retry quota's costs and refunds. */
#include <check.h>

#include "dl_check.h"
#include <pthread.h>
#include <stdlib.h>

#include "internal.h"

static double fixed_random(void *arg)
{
    return *(const double *)arg;
}

START_TEST(retryable_classification)
{
    const char *throttling[] = { "Throttling", "ThrottlingException", "ThrottledException",
        "RequestThrottledException", "TooManyRequestsException",
        "ProvisionedThroughputExceededException", "TransactionInProgressException",
        "RequestLimitExceeded", "BandwidthLimitExceeded", "LimitExceededException",
        "RequestThrottled", "SlowDown", "PriorRequestNotComplete", "EC2ThrottledException",
        "com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException" };
    for (size_t i = 0; i < sizeof throttling / sizeof throttling[0]; i++) {
        ck_assert_msg(ddb__retry_is_throttling(throttling[i]), "%s", throttling[i]);
        ck_assert_msg(ddb__retry_is_retryable(400, throttling[i], false), "%s", throttling[i]);
    }
    const char *transient[] = { "RequestTimeout", "RequestTimeoutException",
        "InternalServerError", "ServiceUnavailable", "TransactionConflictException",
        "com.amazonaws.dynamodb.v20120810#TransactionConflictException" };
    for (size_t i = 0; i < sizeof transient / sizeof transient[0]; i++) {
        ck_assert_msg(!ddb__retry_is_throttling(transient[i]), "%s", transient[i]);
        ck_assert_msg(ddb__retry_is_retryable(400, transient[i], false), "%s", transient[i]);
    }
    const char *final[] = { "ConditionalCheckFailedException", "ValidationException",
        "ResourceNotFoundException", "TransactionCanceledException", "AccessDeniedException",
        "ThrottlingExceptionX", "Throttl", "" };
    for (size_t i = 0; i < sizeof final / sizeof final[0]; i++)
        ck_assert_msg(!ddb__retry_is_retryable(400, final[i], false), "%s", final[i]);
    ck_assert(!ddb__retry_is_throttling(NULL));
    ck_assert(ddb__retry_is_retryable(500, NULL, false));
    ck_assert(ddb__retry_is_retryable(502, NULL, false));
    ck_assert(ddb__retry_is_retryable(503, NULL, false));
    ck_assert(ddb__retry_is_retryable(504, NULL, false));
    ck_assert(!ddb__retry_is_retryable(501, NULL, false));
    ck_assert(!ddb__retry_is_retryable(400, NULL, false));
    ck_assert(!ddb__retry_is_retryable(200, NULL, false));
    ck_assert(ddb__retry_is_retryable(0, NULL, true)); /* no answer: network */
}
END_TEST

START_TEST(attempts)
{
    ddb__retry_state *s = ddb__retry_state_new(NULL);
    ck_assert_int_eq(ddb__retry_max_attempts(s), 3);
    int64_t d;
    ck_assert(ddb__retry_next(s, 1, false, &d));
    ck_assert(ddb__retry_next(s, 2, false, &d));
    ck_assert(!ddb__retry_next(s, 3, false, &d));
    ck_assert(!ddb__retry_next(s, 0, false, &d));
    ddb__retry_state_free(s);

    s = ddb__retry_state_new(&(ddb_retry_options){ .max_attempts = DDB_NO_RETRIES });
    ck_assert_int_eq(ddb__retry_max_attempts(s), 1);
    ck_assert(!ddb__retry_next(s, 1, false, &d));
    ddb__retry_state_free(s);

    s = ddb__retry_state_new(&(ddb_retry_options){ .max_attempts = 10 });
    for (int a = 1; a < 10; a++)
        ck_assert(ddb__retry_next(s, a, true, &d));
    ck_assert(!ddb__retry_next(s, 10, true, &d));
    ddb__retry_state_free(s);
    ddb__retry_state_free(NULL);
}
END_TEST

START_TEST(full_jitter_backoff)
{
    ddb__retry_state *s = ddb__retry_state_new(&(ddb_retry_options){ .max_attempts = 30 });
    double r = 0.5;
    ddb__retry_set_random(s, fixed_random, &r);
    int64_t d;
    /* rand * min(20 000, 50 * 2^attempt) */
    ck_assert(ddb__retry_next(s, 1, false, &d));
    ck_assert_int_eq(d, 50);
    ck_assert(ddb__retry_next(s, 2, false, &d));
    ck_assert_int_eq(d, 100);
    ck_assert(ddb__retry_next(s, 3, true, &d));
    ck_assert_int_eq(d, 200);
    ck_assert(ddb__retry_next(s, 9, false, &d));
    ck_assert_int_eq(d, 10000); /* 50 * 512 = 25 600, capped at 20 000 */
    ck_assert(ddb__retry_next(s, 25, false, &d));
    ck_assert_int_eq(d, 10000);
    r = 0.0;
    ck_assert(ddb__retry_next(s, 4, false, &d));
    ck_assert_int_eq(d, 0);
    r = 0.999;
    ck_assert(ddb__retry_next(s, 1, false, &d));
    ck_assert_int_eq(d, 99);
    ddb__retry_state_free(s);

    s = ddb__retry_state_new(&(ddb_retry_options){ .max_attempts = 5, .base_delay_ms = 10,
                                                    .max_backoff_ms = 30 });
    r = 0.5;
    ddb__retry_set_random(s, fixed_random, &r);
    ck_assert(ddb__retry_next(s, 1, false, &d));
    ck_assert_int_eq(d, 10);
    ck_assert(ddb__retry_next(s, 2, false, &d));
    ck_assert_int_eq(d, 15);
    ddb__retry_state_free(s);

    /* The default source stays within the bound and is not constant. */
    s = ddb__retry_state_new(NULL);
    int64_t first = -1;
    bool varied = false;
    for (int i = 0; i < 50; i++) {
        ck_assert(ddb__retry_next(s, 1, false, &d));
        ck_assert_int_ge(d, 0);
        ck_assert_int_lt(d, 100);
        if (first < 0)
            first = d;
        else if (d != first)
            varied = true;
        ddb__retry_success(s, true);
    }
    ck_assert(varied);
    ddb__retry_state_free(s);
}
END_TEST

START_TEST(batch_backoff_from_the_injected_source)
{
    ddb__retry_state *s = ddb__retry_state_new(&(ddb_retry_options){ .base_delay_ms = 10,
                                                                      .max_backoff_ms = 50,
                                                                      .quota = 5 });
    double r = 0.5;
    ddb__retry_set_random(s, fixed_random, &r);
    /* Full jitter over min(cap, base * 2^round). */
    ck_assert_int_eq(ddb__retry_backoff_ms(s, 0), 5);
    ck_assert_int_eq(ddb__retry_backoff_ms(s, 1), 10);
    ck_assert_int_eq(ddb__retry_backoff_ms(s, 2), 20);
    ck_assert_int_eq(ddb__retry_backoff_ms(s, 3), 25);
    ck_assert_int_eq(ddb__retry_backoff_ms(s, 1000), 25);
    r = 0.999;
    ck_assert_int_eq(ddb__retry_backoff_ms(s, 1000), 49);
    r = 0;
    ck_assert_int_eq(ddb__retry_backoff_ms(s, 3), 0);
    /* Rounds take no quota and have no limit of attempts. */
    for (int i = 0; i < 100; i++)
        (void)ddb__retry_backoff_ms(s, i);
    ck_assert_int_eq(ddb__retry_quota_left(s), 5);
    /* A cap near the largest duration does not overflow the doubling. */
    ddb__retry_state_free(s);
    s = ddb__retry_state_new(&(ddb_retry_options){ .base_delay_ms = 3,
                                                   .max_backoff_ms = INT64_MAX });
    r = 0.5;
    ddb__retry_set_random(s, fixed_random, &r);
    ck_assert_int_gt(ddb__retry_backoff_ms(s, 200), 0);
    ddb__retry_state_free(s);
}
END_TEST

START_TEST(policy_defaults_written_once)
{
    unsetenv("AWS_MAX_ATTEMPTS");
    setenv("AWS_CONFIG_FILE", "/nonexistent/dynalock-test-config", 1);
    ddb__policy p;
    ddb__policy_resolve(NULL, 0, &p);
    ck_assert_int_eq(p.connect_timeout_ms, DDB__DEFAULT_CONNECT_TIMEOUT_MS);
    ck_assert_int_eq(p.request_timeout_ms, DDB__DEFAULT_REQUEST_TIMEOUT_MS);
    ck_assert_int_eq(p.max_connections, DDB__DEFAULT_MAX_CONNECTIONS);
    ck_assert_int_eq(p.max_attempts, DDB__DEFAULT_MAX_ATTEMPTS);
    ck_assert_int_eq(p.base_delay_ms, DDB__DEFAULT_BASE_DELAY_MS);
    ck_assert_int_eq(p.max_backoff_ms, DDB__DEFAULT_MAX_BACKOFF_MS);
    ck_assert_int_eq(p.retry_quota, DDB__DEFAULT_RETRY_QUOTA);
    /* The documented values of ddb.h's options. */
    ck_assert_int_eq(p.max_attempts, 3);
    ck_assert_int_eq(p.base_delay_ms, 50);
    ck_assert_int_eq(p.max_backoff_ms, 20000);
    ck_assert_int_eq(p.retry_quota, 500);
    /* Options given win; the configured attempts (AWS_MAX_ATTEMPTS or the profile's,
     * resolved once in the client's settings) come before the default. */
    ddb_client_options o = { .connect_timeout_ms = 7, .request_timeout_ms = 8,
                             .max_connections = 2,
                             .retry = { .base_delay_ms = 9, .max_backoff_ms = 10, .quota = -1 } };
    ddb__policy_resolve(&o, 6, &p);
    ck_assert_int_eq(p.connect_timeout_ms, 7);
    ck_assert_int_eq(p.request_timeout_ms, 8);
    ck_assert_int_eq(p.max_connections, 2);
    ck_assert_int_eq(p.max_attempts, 6);
    ck_assert_int_eq(p.base_delay_ms, 9);
    ck_assert_int_eq(p.max_backoff_ms, 10);
    ck_assert_int_lt(p.retry_quota, 0);
    o.retry.max_attempts = 4;
    ddb__policy_resolve(&o, 6, &p);
    ck_assert_int_eq(p.max_attempts, 4);
    /* The retry state made from retry options alone has the defaults: it reads no
     * configuration. */
    setenv("AWS_MAX_ATTEMPTS", "6", 1);
    ddb__retry_state *s = ddb__retry_state_new(NULL);
    ck_assert_int_eq(ddb__retry_max_attempts(s), 3);
    ddb__retry_state_free(s);
    unsetenv("AWS_MAX_ATTEMPTS");
    unsetenv("AWS_CONFIG_FILE");
}
END_TEST

START_TEST(quota)
{
    ddb__retry_state *s = ddb__retry_state_new(NULL);
    ck_assert_int_eq(ddb__retry_quota_left(s), 500);
    int64_t d;
    int cost;
    ck_assert(ddb__retry_next_cost(s, 1, false, false, &d, &cost));
    ck_assert_int_eq(cost, 5);
    ck_assert_int_eq(ddb__retry_quota_left(s), 495);
    ck_assert(ddb__retry_next_cost(s, 1, false, true, &d, &cost));
    ck_assert_int_eq(cost, 10);
    ck_assert_int_eq(ddb__retry_quota_left(s), 485);
    ddb__retry_refund(s, cost);
    ck_assert_int_eq(ddb__retry_quota_left(s), 495);
    ddb__retry_success(s, true);
    ck_assert_int_eq(ddb__retry_quota_left(s), 500);
    ddb__retry_success(s, false); /* capped at the maximum */
    ck_assert_int_eq(ddb__retry_quota_left(s), 500);
    /* Drain it: 100 retries of 5. */
    for (int i = 0; i < 100; i++)
        ck_assert(ddb__retry_next(s, 1, false, &d));
    ck_assert_int_eq(ddb__retry_quota_left(s), 0);
    ck_assert(!ddb__retry_next(s, 1, false, &d));
    /* Successes without a retry give one token each: five to allow a retry. */
    for (int i = 0; i < 4; i++)
        ddb__retry_success(s, false);
    ck_assert(!ddb__retry_next(s, 1, false, &d));
    ddb__retry_success(s, false);
    ck_assert(ddb__retry_next(s, 1, false, &d));
    ck_assert(!ddb__retry_next_cost(s, 1, false, true, &d, &cost));
    ck_assert_int_eq(cost, 0);
    ddb__retry_state_free(s);

    s = ddb__retry_state_new(&(ddb_retry_options){ .quota = 12 });
    ck_assert(ddb__retry_next(s, 1, false, &d));
    ck_assert(ddb__retry_next(s, 1, false, &d));
    ck_assert(!ddb__retry_next(s, 1, false, &d));
    ddb__retry_state_free(s);

    s = ddb__retry_state_new(&(ddb_retry_options){ .quota = -1 });
    ck_assert_int_eq(ddb__retry_quota_left(s), -1);
    for (int i = 0; i < 1000; i++)
        ck_assert(ddb__retry_next(s, 1, false, &d));
    ddb__retry_state_free(s);
}
END_TEST

static void *take_and_refund(void *arg)
{
    ddb__retry_state *s = arg;
    for (int i = 0; i < 1000; i++) {
        int64_t d;
        int cost;
        if (ddb__retry_next_cost(s, 1, false, i % 2 == 0, &d, &cost))
            ddb__retry_refund(s, cost);
    }
    return NULL;
}

START_TEST(quota_is_thread_safe)
{
    ddb__retry_state *s = ddb__retry_state_new(NULL);
    pthread_t th[8];
    for (int i = 0; i < 8; i++)
        pthread_create(&th[i], NULL, take_and_refund, s);
    for (int i = 0; i < 8; i++)
        pthread_join(th[i], NULL);
    ck_assert_int_eq(ddb__retry_quota_left(s), 500);
    ddb__retry_state_free(s);
}
END_TEST

static Suite *retry_suite(void)
{
    Suite *s = suite_create("retry");
    TCase *tc = tcase_create("standard");
    tcase_add_test(tc, retryable_classification);
    tcase_add_test(tc, attempts);
    tcase_add_test(tc, full_jitter_backoff);
    tcase_add_test(tc, batch_backoff_from_the_injected_source);
    tcase_add_test(tc, policy_defaults_written_once);
    tcase_add_test(tc, quota);
    tcase_add_test(tc, quota_is_thread_safe);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return dl_check_run(retry_suite());
}
