/* ratelimit.c: the client-side rate limiter of the AWS SDKs' "adaptive" retry mode
 * (AWS_RETRY_MODE=adaptive): a token bucket whose fill rate follows CUBIC, cut on each
 * throttling answer and grown back after, measured against the rate actually sent.
 * Time is the client's clock; the limiter says how long to wait, the caller waits. */
#include "internal.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define BETA 0.7
#define SCALE_CONSTANT 0.4
#define MIN_FILL_RATE 0.5
#define MIN_CAPACITY 1.0
#define SMOOTH 0.8

/* The little arithmetic needed, without libm. */
static double dmin(double a, double b) { return a < b ? a : b; }
static double dmax(double a, double b) { return a > b ? a : b; }
static double half_floor(double x) /* x >= 0, down to a multiple of 0.5 */
{
    return (double)(int64_t)(x * 2.0) / 2.0;
}
static double cube_root(double x) /* x >= 0 */
{
    if (x <= 0)
        return 0;
    double y = x > 1 ? x / 3 : 1;
    for (int i = 0; i < 60; i++)
        y = (2 * y + x / (y * y)) / 3;
    return y;
}

struct ddb__rate_limiter {
    pthread_mutex_t mu;
    bool enabled;          /* the bucket only limits after a first throttle */
    double fill_rate;      /* tokens per second */
    double max_capacity;
    double capacity;       /* may go below zero: tokens owed by callers told to wait */
    double last_refill_s;
    bool have_refill;
    double measured_rate;  /* smoothed requests per second sent */
    double last_bucket_s;
    int request_count;
    double last_max_rate;
    double last_throttle_s;
    double time_window;
};

ddb__rate_limiter *ddb__rate_limiter_new(void)
{
    ddb__rate_limiter *r = calloc(1, sizeof *r);
    if (!r)
        return NULL;
    pthread_mutex_init(&r->mu, NULL);
    r->fill_rate = MIN_FILL_RATE;
    r->max_capacity = MIN_CAPACITY;
    return r;
}

void ddb__rate_limiter_free(ddb__rate_limiter *r)
{
    if (!r)
        return;
    pthread_mutex_destroy(&r->mu);
    free(r);
}

static void refill(ddb__rate_limiter *r, double now)
{
    if (r->have_refill) {
        r->capacity += (now - r->last_refill_s) * r->fill_rate;
        if (r->capacity > r->max_capacity)
            r->capacity = r->max_capacity;
    }
    r->last_refill_s = now;
    r->have_refill = true;
}

int64_t ddb__rate_limiter_acquire(ddb__rate_limiter *r, int64_t now_mono_ns)
{
    pthread_mutex_lock(&r->mu);
    int64_t wait_ms = 0;
    if (r->enabled) {
        refill(r, (double)now_mono_ns / 1e9);
        r->capacity -= 1.0;
        if (r->capacity < 0)
            wait_ms = (int64_t)(-r->capacity / r->fill_rate * 1000.0) + 1;
    }
    pthread_mutex_unlock(&r->mu);
    return wait_ms;
}

static void measure(ddb__rate_limiter *r, double now)
{
    double bucket = half_floor(now);
    r->request_count++;
    if (bucket > r->last_bucket_s) {
        double rate = r->request_count / (bucket - r->last_bucket_s);
        r->measured_rate = rate * SMOOTH + r->measured_rate * (1.0 - SMOOTH);
        r->request_count = 0;
        r->last_bucket_s = bucket;
    }
}

void ddb__rate_limiter_update(ddb__rate_limiter *r, bool throttled, int64_t now_mono_ns)
{
    double now = (double)now_mono_ns / 1e9;
    pthread_mutex_lock(&r->mu);
    measure(r, now);
    double rate;
    if (throttled) {
        double use = r->enabled ? dmin(r->measured_rate, r->fill_rate) : r->measured_rate;
        r->last_max_rate = use;
        r->time_window = cube_root(r->last_max_rate * (1.0 - BETA) / SCALE_CONSTANT);
        r->last_throttle_s = now;
        rate = use * BETA;
        r->enabled = true;
    } else {
        r->time_window = cube_root(r->last_max_rate * (1.0 - BETA) / SCALE_CONSTANT);
        double dt = now - r->last_throttle_s - r->time_window;
        rate = SCALE_CONSTANT * dt * dt * dt + r->last_max_rate;
    }
    double new_rate = dmin(rate, 2.0 * r->measured_rate);
    refill(r, now);
    r->fill_rate = dmax(new_rate, MIN_FILL_RATE);
    r->max_capacity = dmax(new_rate, MIN_CAPACITY);
    if (r->capacity > r->max_capacity)
        r->capacity = r->max_capacity;
    pthread_mutex_unlock(&r->mu);
}

double ddb__rate_limiter_fill_rate(ddb__rate_limiter *r)
{
    pthread_mutex_lock(&r->mu);
    double f = r->enabled ? r->fill_rate : 0.0;
    pthread_mutex_unlock(&r->mu);
    return f;
}

/* ---- clock skew */

int64_t ddb__parse_http_date_ms(const char *s)
{
    /* IMF-fixdate, as in a Date header: "Tue, 01 Dec 2026 02:24:42 GMT". */
    static const char months[] = "JanFebMarAprMayJunJulAugSepOctNovDec";
    char mon[4] = "";
    int day, year, h, m, sec;
    if (!s || sscanf(s, "%*3s, %2d %3s %4d %2d:%2d:%2d GMT", &day, mon, &year, &h, &m, &sec) != 6)
        return 0;
    int mi = -1;
    for (int i = 0; i < 12; i++)
        if (mon[0] == months[3 * i] && mon[1] == months[3 * i + 1] && mon[2] == months[3 * i + 2])
            mi = i;
    if (mi < 0 || day < 1 || day > 31 || h > 23 || m > 59 || sec > 60 || year < 1970)
        return 0;
    struct tm tm = { .tm_year = year - 1900, .tm_mon = mi, .tm_mday = day,
                     .tm_hour = h, .tm_min = m, .tm_sec = sec };
    return (int64_t)timegm(&tm) * 1000;
}

bool ddb__is_clock_skew_error(const char *aws_type)
{
    static const char *const types[] = { "RequestTimeTooSkewed", "RequestExpired",
                                         "InvalidSignatureException", "SignatureDoesNotMatch",
                                         "RequestInTheFuture", "AuthFailure" };
    for (size_t i = 0; aws_type && i < sizeof types / sizeof types[0]; i++)
        if (strcmp(aws_type, types[i]) == 0)
            return true;
    return false;
}
