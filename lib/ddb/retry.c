/* retry.c: the retry policy of the AWS SDKs' "standard" mode: which failures retry,
 * exponential backoff with full jitter, and the client-wide retry quota (a token bucket
 * that stops retry storms when the service is unhealthy). */
#include "internal.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define RETRY_COST 5
#define TIMEOUT_RETRY_COST 10
#define NO_RETRY_INCREMENT 1

struct ddb__retry_state {
    pthread_mutex_t mu;
    int max_attempts;
    int64_t base_delay_ms;
    int64_t max_backoff_ms;
    int quota_max;   /* < 0: no quota */
    int quota;
    uint64_t rng;    /* xorshift64* state */
    double (*rand_fn)(void *arg);
    void *rand_arg;
};

void ddb__policy_resolve(const ddb_client_options *o, int from_config, ddb__policy *out)
{
    ddb_client_options zero = { 0 };
    if (!o)
        o = &zero;
    const ddb_retry_options *r = &o->retry;
    *out = (ddb__policy){
        .connect_timeout_ms = o->connect_timeout_ms > 0 ? o->connect_timeout_ms
                                                        : DDB__DEFAULT_CONNECT_TIMEOUT_MS,
        .request_timeout_ms = o->request_timeout_ms > 0 ? o->request_timeout_ms
                                                        : DDB__DEFAULT_REQUEST_TIMEOUT_MS,
        .max_connections = o->max_connections > 0 ? o->max_connections
                                                  : DDB__DEFAULT_MAX_CONNECTIONS,
        .max_attempts = r->max_attempts > 0 ? r->max_attempts
                        : from_config > 0   ? from_config
                                            : DDB__DEFAULT_MAX_ATTEMPTS,
        .base_delay_ms = r->base_delay_ms > 0 ? r->base_delay_ms : DDB__DEFAULT_BASE_DELAY_MS,
        .max_backoff_ms = r->max_backoff_ms > 0 ? r->max_backoff_ms : DDB__DEFAULT_MAX_BACKOFF_MS,
        .retry_quota = r->quota == 0 ? DDB__DEFAULT_RETRY_QUOTA : r->quota,
    };
}

ddb__retry_state *ddb__retry_state_new(const ddb_retry_options *o)
{
    ddb__policy p;
    ddb__policy_resolve(o ? &(ddb_client_options){ .retry = *o } : NULL, 0, &p);
    return ddb__retry_state_new_policy(&p);
}

ddb__retry_state *ddb__retry_state_new_policy(const ddb__policy *p)
{
    ddb__retry_state *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    pthread_mutex_init(&s->mu, NULL);
    s->max_attempts = p->max_attempts;
    s->base_delay_ms = p->base_delay_ms;
    s->max_backoff_ms = p->max_backoff_ms;
    s->quota_max = p->retry_quota;
    s->quota = s->quota_max;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    s->rng = ((uint64_t)ts.tv_nsec << 20) ^ (uint64_t)ts.tv_sec ^ (uint64_t)(uintptr_t)s;
    if (s->rng == 0)
        s->rng = 0x9e3779b97f4a7c15u;
    return s;
}

void ddb__retry_state_free(ddb__retry_state *s)
{
    if (!s)
        return;
    pthread_mutex_destroy(&s->mu);
    free(s);
}

void ddb__retry_set_random(ddb__retry_state *s, double (*rand_fn)(void *arg), void *arg)
{
    pthread_mutex_lock(&s->mu);
    s->rand_fn = rand_fn;
    s->rand_arg = arg;
    pthread_mutex_unlock(&s->mu);
}

/* A uniform value in [0, 1); called with the lock held. */
static double next_random(ddb__retry_state *s)
{
    if (s->rand_fn) {
        double r = s->rand_fn(s->rand_arg);
        return r < 0 ? 0 : r >= 1 ? 0.9999999999 : r;
    }
    s->rng ^= s->rng >> 12;
    s->rng ^= s->rng << 25;
    s->rng ^= s->rng >> 27;
    uint64_t v = s->rng * 0x2545f4914f6cdd1dULL;
    return (double)(v >> 11) / 9007199254740992.0; /* 2^53 */
}

/* The error type without a "namespace#" prefix or a ":detail" suffix. */
static bool type_is(const char *aws_type, const char *name)
{
    const char *hash = strrchr(aws_type, '#');
    const char *t = hash ? hash + 1 : aws_type;
    size_t len = strcspn(t, ":");
    return strlen(name) == len && memcmp(t, name, len) == 0;
}

static bool type_in(const char *aws_type, const char *const *list)
{
    if (!aws_type || !*aws_type)
        return false;
    for (; *list; list++)
        if (type_is(aws_type, *list))
            return true;
    return false;
}

static const char *const k_throttling[] = {
    "Throttling", "ThrottlingException", "ThrottledException", "RequestThrottledException",
    "TooManyRequestsException", "ProvisionedThroughputExceededException",
    "TransactionInProgressException", "RequestLimitExceeded", "BandwidthLimitExceeded",
    "LimitExceededException", "RequestThrottled", "SlowDown", "PriorRequestNotComplete",
    "EC2ThrottledException", NULL,
};

/* Transient errors of the standard mode, plus DynamoDB's TransactionConflictException,
 * which its SDKs retry. */
static const char *const k_transient[] = {
    "RequestTimeout", "RequestTimeoutException", "InternalServerError", "InternalFailure",
    "ServiceUnavailable", "TransactionConflictException", NULL,
};

bool ddb__retry_is_throttling(const char *aws_type)
{
    return type_in(aws_type, k_throttling);
}

bool ddb__retry_is_retryable(int http_status, const char *aws_type, bool network_error)
{
    if (network_error)
        return true;
    if (type_in(aws_type, k_throttling) || type_in(aws_type, k_transient))
        return true;
    return http_status == 500 || http_status == 502 || http_status == 503 ||
           http_status == 504;
}

/* Full jitter: rand * min(max_backoff, base * 2^attempt); called with the lock held. */
static int64_t jittered(ddb__retry_state *s, int attempt)
{
    int64_t ceiling = s->max_backoff_ms;
    int64_t exp = s->base_delay_ms;
    for (int i = 0; i < attempt && exp < ceiling; i++)
        exp = exp > INT64_MAX / 2 ? INT64_MAX : exp * 2;
    if (exp < ceiling)
        ceiling = exp;
    return (int64_t)(next_random(s) * (double)ceiling);
}

int64_t ddb__retry_backoff_ms(ddb__retry_state *s, int round)
{
    pthread_mutex_lock(&s->mu);
    int64_t delay = jittered(s, round);
    pthread_mutex_unlock(&s->mu);
    return delay;
}

bool ddb__retry_next_cost(ddb__retry_state *s, int attempt, bool throttling, bool timeout,
                          int64_t *delay_ms, int *cost)
{
    (void)throttling; /* the standard mode backs off the same for both, capped at 20 s */
    if (cost)
        *cost = 0;
    if (delay_ms)
        *delay_ms = 0;
    if (!s || attempt < 1 || attempt >= s->max_attempts)
        return false;
    int c = timeout ? TIMEOUT_RETRY_COST : RETRY_COST;
    pthread_mutex_lock(&s->mu);
    if (s->quota_max >= 0) {
        if (s->quota < c) {
            pthread_mutex_unlock(&s->mu);
            return false;
        }
        s->quota -= c;
    } else {
        c = 0;
    }
    int64_t delay = jittered(s, attempt);
    pthread_mutex_unlock(&s->mu);
    if (delay_ms)
        *delay_ms = delay;
    if (cost)
        *cost = c;
    return true;
}

bool ddb__retry_next(ddb__retry_state *s, int attempt, bool throttling, int64_t *delay_ms)
{
    return ddb__retry_next_cost(s, attempt, throttling, false, delay_ms, NULL);
}

void ddb__retry_refund(ddb__retry_state *s, int cost)
{
    if (!s || cost <= 0)
        return;
    pthread_mutex_lock(&s->mu);
    if (s->quota_max >= 0) {
        s->quota += cost;
        if (s->quota > s->quota_max)
            s->quota = s->quota_max;
    }
    pthread_mutex_unlock(&s->mu);
}

void ddb__retry_success(ddb__retry_state *s, bool was_retry)
{
    ddb__retry_refund(s, was_retry ? RETRY_COST : NO_RETRY_INCREMENT);
}

int ddb__retry_max_attempts(const ddb__retry_state *s)
{
    return s ? s->max_attempts : 1;
}

int ddb__retry_quota_left(ddb__retry_state *s)
{
    if (!s)
        return -1;
    pthread_mutex_lock(&s->mu);
    int q = s->quota_max >= 0 ? s->quota : -1;
    pthread_mutex_unlock(&s->mu);
    return q;
}
