/* test_ratelimit.c: the adaptive retry mode's rate limiter (CUBIC on a token bucket) on
 * a simulated clock, and the clock-skew helpers (Date header, skew error types). */
#include <check.h>

#include "dl_check.h"
#include <stdlib.h>

#include "internal.h"

#define S 1000000000LL /* one second in ns */

/* Sends n requests at rate rps from *t, all answered without throttling. */
static void send_ok(ddb__rate_limiter *r, int64_t *t, int n, int rps)
{
    for (int i = 0; i < n; i++) {
        *t += S / rps;
        ck_assert_int_eq(ddb__rate_limiter_acquire(r, *t), 0);
        ddb__rate_limiter_update(r, false, *t);
    }
}

START_TEST(no_limit_before_the_first_throttle)
{
    ddb__rate_limiter *r = ddb__rate_limiter_new();
    int64_t t = 100 * S;
    send_ok(r, &t, 200, 50);
    ck_assert(ddb__rate_limiter_fill_rate(r) == 0.0);
    ddb__rate_limiter_free(r);
    ddb__rate_limiter_free(NULL);
}
END_TEST

START_TEST(a_throttle_cuts_the_rate_and_success_grows_it_back)
{
    ddb__rate_limiter *r = ddb__rate_limiter_new();
    int64_t t = 100 * S;
    send_ok(r, &t, 100, 20); /* about 20 requests a second measured */
    t += S / 20;
    ddb__rate_limiter_acquire(r, t);
    ddb__rate_limiter_update(r, true, t);
    double cut = ddb__rate_limiter_fill_rate(r);
    ck_assert_msg(cut > 10.0 && cut < 16.0, "fill rate after a throttle: %f", cut); /* 0.7 x */
    /* Sending faster than the bucket fills makes callers wait. */
    int64_t waited = 0;
    for (int i = 0; i < 40; i++)
        waited += ddb__rate_limiter_acquire(r, t);
    ck_assert_int_gt(waited, 1000);
    /* A client that keeps sending as fast as the bucket lets it, with every answer a
     * success: the rate climbs back along the cubic curve, past the cut. */
    double top = 0;
    for (int i = 0; i < 400; i++) {
        int64_t w = ddb__rate_limiter_acquire(r, t);
        t += w * 1000000 + S / 40;
        ddb__rate_limiter_update(r, false, t);
        double now = ddb__rate_limiter_fill_rate(r);
        if (now > top)
            top = now;
    }
    ck_assert_msg(top > cut * 1.2, "no growth: %f after a cut to %f", top, cut);
    ddb__rate_limiter_free(r);
}
END_TEST

START_TEST(repeated_throttles_keep_cutting)
{
    ddb__rate_limiter *r = ddb__rate_limiter_new();
    int64_t t = 100 * S;
    send_ok(r, &t, 100, 20);
    double last = 1e9;
    for (int i = 0; i < 5; i++) {
        t += S / 4;
        ddb__rate_limiter_update(r, true, t);
        double now = ddb__rate_limiter_fill_rate(r);
        ck_assert_msg(now <= last, "throttle %d: %f after %f", i, now, last);
        ck_assert(now >= 0.5); /* the floor */
        last = now;
    }
    ddb__rate_limiter_free(r);
}
END_TEST

START_TEST(http_dates_and_skew_errors)
{
    ck_assert_int_eq(ddb__parse_http_date_ms("Tue, 01 Dec 2026 02:24:42 GMT"), 1796091882000LL);
    ck_assert_int_eq(ddb__parse_http_date_ms("Tue, 01 Foo 2026 02:24:42 GMT"), 0);
    ck_assert_int_eq(ddb__parse_http_date_ms("yesterday"), 0);
    ck_assert_int_eq(ddb__parse_http_date_ms(NULL), 0);
    ck_assert(ddb__is_clock_skew_error("RequestTimeTooSkewed"));
    ck_assert(ddb__is_clock_skew_error("InvalidSignatureException"));
    ck_assert(!ddb__is_clock_skew_error("ThrottlingException"));
    ck_assert(!ddb__is_clock_skew_error(NULL));
}
END_TEST

/* The client's settings say the adaptive mode. */
static bool retry_adaptive(void)
{
    ddb__settings s;
    ddb_error err;
    ck_assert_int_eq(ddb__settings_resolve(NULL, &s, &err), 0);
    bool adaptive = s.retry_adaptive;
    ddb__settings_cleanup(&s);
    return adaptive;
}

START_TEST(retry_mode_setting)
{
    unsetenv("AWS_RETRY_MODE");
    setenv("AWS_CONFIG_FILE", "/nonexistent/config", 1);
    ck_assert(!retry_adaptive());
    setenv("AWS_RETRY_MODE", "adaptive", 1);
    ck_assert(retry_adaptive());
    setenv("AWS_RETRY_MODE", "standard", 1);
    ck_assert(!retry_adaptive());
    unsetenv("AWS_RETRY_MODE");
    unsetenv("AWS_CONFIG_FILE");
}
END_TEST

static Suite *ratelimit_suite(void)
{
    Suite *s = suite_create("ratelimit");
    TCase *tc = tcase_create("adaptive");
    tcase_add_test(tc, no_limit_before_the_first_throttle);
    tcase_add_test(tc, a_throttle_cuts_the_rate_and_success_grows_it_back);
    tcase_add_test(tc, repeated_throttles_keep_cutting);
    tcase_add_test(tc, http_dates_and_skew_errors);
    tcase_add_test(tc, retry_mode_setting);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return dl_check_run(ratelimit_suite());
}
