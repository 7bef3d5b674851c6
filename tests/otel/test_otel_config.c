/* test_otel_config.c: libddb_otel's pure parts -- the OTEL_* variables with the
 * specification's precedence and path rules, percent-decoding of header and resource
 * lists, and W3C traceparent parsing (good and bad), and the remote parent and the
 * traceparent of a span through the public API. No network. */
#include <check.h>

#include "dl_check.h"
#include <stdio.h>
#include <string.h>

#include "otel_internal.h"

/* A fake environment: NULL-terminated name/value pairs. */
static const char *fenv(void *arg, const char *name)
{
    const char *const *e = arg;
    for (; e && e[0]; e += 2)
        if (strcmp(e[0], name) == 0)
            return e[1];
    return NULL;
}

static const char *res(const ddb__otel_config *c, const char *key)
{
    for (size_t i = 0; i < c->n_resource; i++)
        if (strcmp(c->resource[i].key, key) == 0)
            return c->resource[i].value;
    return NULL;
}

START_TEST(test_defaults)
{
    ddb__otel_config c;
    ck_assert_int_eq(ddb__otel_config_resolve(NULL, fenv, NULL, &c, NULL), 0);
    ck_assert_str_eq(c.traces_url, "http://localhost:4318/v1/traces");
    ck_assert_str_eq(c.metrics_url, "http://localhost:4318/v1/metrics");
    ck_assert_int_eq(c.traces_timeout_ms, 10000);
    ck_assert_int_eq(c.metrics_timeout_ms, 10000);
    ck_assert_int_eq(c.max_queue, 2048);
    ck_assert_int_eq(c.batch, 512);
    ck_assert_int_eq(c.delay_ms, 5000);
    ck_assert_int_eq(c.metric_interval_ms, 60000);
    ck_assert_uint_eq(c.n_trace_headers, 0);
    ck_assert_str_eq(c.resource[0].key, "service.name");
    ck_assert_str_eq(c.resource[0].value, "unknown_service");
    ck_assert_str_eq(res(&c, "telemetry.sdk.language"), "c");
    ddb__otel_config_cleanup(&c);
}
END_TEST

/* The base endpoint gets the signal's path after exactly one '/'; a per-signal endpoint
 * is used as it is and wins over the base; an option wins over both. */
START_TEST(test_endpoints)
{
    const char *env1[] = { "OTEL_EXPORTER_OTLP_ENDPOINT", "http://col:4318", NULL };
    const char *env2[] = { "OTEL_EXPORTER_OTLP_ENDPOINT", "https://col/base/", NULL };
    const char *env3[] = { "OTEL_EXPORTER_OTLP_ENDPOINT", "http://col:4318",
                           "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://t:1/custom", NULL };
    const char *env4[] = { "OTEL_EXPORTER_OTLP_ENDPOINT", "col:4318", NULL };
    ddb__otel_config c;
    ck_assert_int_eq(ddb__otel_config_resolve(NULL, fenv, env1, &c, NULL), 0);
    ck_assert_str_eq(c.traces_url, "http://col:4318/v1/traces");
    ck_assert_str_eq(c.metrics_url, "http://col:4318/v1/metrics");
    ddb__otel_config_cleanup(&c);
    ck_assert_int_eq(ddb__otel_config_resolve(NULL, fenv, env2, &c, NULL), 0);
    ck_assert_str_eq(c.traces_url, "https://col/base/v1/traces");
    ddb__otel_config_cleanup(&c);
    ck_assert_int_eq(ddb__otel_config_resolve(NULL, fenv, env3, &c, NULL), 0);
    ck_assert_str_eq(c.traces_url, "http://t:1/custom");
    ck_assert_str_eq(c.metrics_url, "http://col:4318/v1/metrics");
    ddb__otel_config_cleanup(&c);
    ddb_otel_options o = { .endpoint = "http://opt:9" };
    ck_assert_int_eq(ddb__otel_config_resolve(&o, fenv, env3, &c, NULL), 0);
    ck_assert_str_eq(c.traces_url, "http://opt:9/v1/traces"); /* the option beats the env */
    ddb__otel_config_cleanup(&c);
    o = (ddb_otel_options){ .metrics_endpoint = "http://m/x" };
    ck_assert_int_eq(ddb__otel_config_resolve(&o, fenv, env1, &c, NULL), 0);
    ck_assert_str_eq(c.metrics_url, "http://m/x");
    ck_assert_str_eq(c.traces_url, "http://col:4318/v1/traces");
    ddb__otel_config_cleanup(&c);
    o = (ddb_otel_options){ .ignore_environment = true };
    ck_assert_int_eq(ddb__otel_config_resolve(&o, fenv, env3, &c, NULL), 0);
    ck_assert_str_eq(c.traces_url, "http://localhost:4318/v1/traces");
    ddb__otel_config_cleanup(&c);
    ddb_error err;
    ck_assert_int_eq(ddb__otel_config_resolve(NULL, fenv, env4, &c, &err), DDB_EINVAL);
    ck_assert_int_eq(err.code, DDB_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.message, "col:4318"));
}
END_TEST

/* Headers: per-signal beats general; values percent-decoded; malformed lists refused. */
START_TEST(test_headers)
{
    const char *env[] = { "OTEL_EXPORTER_OTLP_HEADERS", " api-key = a%20b%2Cc , x=1,",
                          "OTEL_EXPORTER_OTLP_METRICS_HEADERS", "m=2", NULL };
    ddb__otel_config c;
    ck_assert_int_eq(ddb__otel_config_resolve(NULL, fenv, env, &c, NULL), 0);
    ck_assert_uint_eq(c.n_trace_headers, 2);
    ck_assert_str_eq(c.trace_headers[0].key, "api-key");
    ck_assert_str_eq(c.trace_headers[0].value, "a b,c");
    ck_assert_str_eq(c.trace_headers[1].key, "x");
    ck_assert_uint_eq(c.n_metric_headers, 1);
    ck_assert_str_eq(c.metric_headers[0].key, "m");
    ddb__otel_config_cleanup(&c);
    static const char *bads[] = { "novalue", "a=%zz", "a=x%0D%0Ay: z", "=v" };
    for (size_t i = 0; i < 4; i++) {
        const char *bad[] = { "OTEL_EXPORTER_OTLP_HEADERS", bads[i], NULL };
        ddb_error err;
        ck_assert_int_eq(ddb__otel_config_resolve(NULL, fenv, bad, &c, &err), DDB_EINVAL);
        ck_assert_ptr_nonnull(strstr(err.message, "OTEL_EXPORTER_OTLP_HEADERS"));
    }
}
END_TEST

/* service.name: the option, then OTEL_SERVICE_NAME, then the list's; the other resource
 * attributes percent-decoded; a malformed list dropped as a whole. */
START_TEST(test_resource)
{
    const char *env1[] = { "OTEL_RESOURCE_ATTRIBUTES",
                           "service.name=fromlist,deployment.environment=prod%2Feu,team=a%3Db",
                           NULL };
    const char *env2[] = { "OTEL_RESOURCE_ATTRIBUTES", "service.name=fromlist",
                           "OTEL_SERVICE_NAME", "fromvar", NULL };
    const char *env3[] = { "OTEL_RESOURCE_ATTRIBUTES", "a=1,broken,b=2",
                           "OTEL_SERVICE_NAME", "svc", NULL };
    ddb__otel_config c;
    ck_assert_int_eq(ddb__otel_config_resolve(NULL, fenv, env1, &c, NULL), 0);
    ck_assert_str_eq(c.resource[0].value, "fromlist");
    ck_assert_str_eq(res(&c, "deployment.environment"), "prod/eu");
    ck_assert_str_eq(res(&c, "team"), "a=b");
    ck_assert_uint_eq(c.n_resource, 6); /* no second service.name */
    ddb__otel_config_cleanup(&c);
    ck_assert_int_eq(ddb__otel_config_resolve(NULL, fenv, env2, &c, NULL), 0);
    ck_assert_str_eq(c.resource[0].value, "fromvar");
    ddb__otel_config_cleanup(&c);
    ddb_otel_options o = { .service_name = "opt" };
    ck_assert_int_eq(ddb__otel_config_resolve(&o, fenv, env2, &c, NULL), 0);
    ck_assert_str_eq(c.resource[0].value, "opt");
    ddb__otel_config_cleanup(&c);
    ck_assert_int_eq(ddb__otel_config_resolve(NULL, fenv, env3, &c, NULL), 0);
    ck_assert_str_eq(c.resource[0].value, "svc");
    ck_assert_ptr_null(res(&c, "a"));
    ck_assert_ptr_null(res(&c, "b"));
    ddb__otel_config_cleanup(&c);
}
END_TEST

/* Timeouts and the batch settings: per-signal beats general; a value that is not a
 * non-negative integer is ignored (the default); a negative option is refused. */
START_TEST(test_numbers)
{
    const char *env[] = { "OTEL_EXPORTER_OTLP_TIMEOUT", "2500",
                          "OTEL_EXPORTER_OTLP_METRICS_TIMEOUT", "700",
                          "OTEL_BSP_MAX_QUEUE_SIZE", "100", "OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "400",
                          "OTEL_BSP_SCHEDULE_DELAY", "abc", "OTEL_METRIC_EXPORT_INTERVAL", "15000",
                          NULL };
    ddb__otel_config c;
    ck_assert_int_eq(ddb__otel_config_resolve(NULL, fenv, env, &c, NULL), 0);
    ck_assert_int_eq(c.traces_timeout_ms, 2500);
    ck_assert_int_eq(c.metrics_timeout_ms, 700);
    ck_assert_int_eq(c.max_queue, 100);
    ck_assert_int_eq(c.batch, 100); /* never more than the queue */
    ck_assert_int_eq(c.delay_ms, 5000);
    ck_assert_int_eq(c.metric_interval_ms, 15000);
    ddb__otel_config_cleanup(&c);
    ddb_otel_options o = { .timeout_ms = 42, .metric_export_interval_ms = 10 };
    ck_assert_int_eq(ddb__otel_config_resolve(&o, fenv, env, &c, NULL), 0);
    ck_assert_int_eq(c.traces_timeout_ms, 42);
    ck_assert_int_eq(c.metrics_timeout_ms, 42);
    ck_assert_int_eq(c.metric_interval_ms, 10);
    ddb__otel_config_cleanup(&c);
    o = (ddb_otel_options){ .timeout_ms = -1 };
    ck_assert_int_eq(ddb__otel_config_resolve(&o, fenv, env, &c, NULL), DDB_EINVAL);
}
END_TEST

START_TEST(test_percent_decode)
{
    char *s = ddb__otel_percent_decode("a%41%2c%2C%25", 13);
    ck_assert_str_eq(s, "aA,,%");
    free(s);
    ck_assert_ptr_null(ddb__otel_percent_decode("%4", 2));
    ck_assert_ptr_null(ddb__otel_percent_decode("%", 1));
    ck_assert_ptr_null(ddb__otel_percent_decode("%g1", 3));
    ck_assert_ptr_null(ddb__otel_percent_decode("%00", 3));
}
END_TEST

START_TEST(test_traceparent_good)
{
    uint8_t t[16], s[8], f = 9;
    const char *tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    ck_assert_int_eq(ddb__otel_parse_traceparent(tp, t, s, &f), 0);
    ck_assert_uint_eq(t[0], 0x4b);
    ck_assert_uint_eq(t[15], 0x36);
    ck_assert_uint_eq(s[0], 0x00);
    ck_assert_uint_eq(s[7], 0xb7);
    ck_assert_uint_eq(f, 1);
    char out[DDB_OTEL_TRACEPARENT_SIZE];
    ddb__otel_format_traceparent(t, s, f, out);
    ck_assert_str_eq(out, tp);
    ck_assert_int_eq(ddb__otel_parse_traceparent(
                         "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00", t, s, &f), 0);
    ck_assert_uint_eq(f, 0);
}
END_TEST

START_TEST(test_traceparent_bad)
{
    static const char *bad[] = {
        "",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",          /* no flags */
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-",      /* longer */
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-1",        /* short flags */
        "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",       /* version */
        "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",       /* invalid version */
        "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",       /* uppercase */
        "00-00000000000000000000000000000000-00f067aa0ba902b7-01",       /* zero trace */
        "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",       /* zero parent */
        "00-4bf92f3577b34da6a3ce929d0e0e473-600f067aa0ba902b7-01",       /* dash misplaced */
        "00-4bf92f3577b34da6a3ce929d0e0e473g-00f067aa0ba902b7-01",       /* not hex */
        "00_4bf92f3577b34da6a3ce929d0e0e4736_00f067aa0ba902b7_01",       /* separators */
        " 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0",       /* space */
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0x",       /* flags not hex */
    };
    uint8_t t[16], s[8], f;
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        ck_assert_msg(ddb__otel_parse_traceparent(bad[i], t, s, &f) != 0, "accepted %s", bad[i]);
    ck_assert_int_eq(ddb__otel_parse_traceparent(NULL, t, s, &f), -1);
}
END_TEST

/* Through the API: the remote parent is the parent of a span started without one, its
 * trace carries on, and a span's traceparent comes back out. No network: nothing is
 * exported before ddb_otel_free, whose flush fails fast on a closed port. */
START_TEST(test_remote_parent_api)
{
    ddb_clock *clock = ddb_fake_clock_new(1700000000000);
    ddb_otel *o = ddb_otel_new(&(ddb_otel_options){ .endpoint = "http://127.0.0.1:9",
                                                    .ignore_environment = true,
                                                    .shutdown_timeout_ms = 200,
                                                    .clock = clock }, NULL);
    ck_assert_ptr_nonnull(o);
    char tp[DDB_OTEL_TRACEPARENT_SIZE];
    ck_assert_int_eq(ddb_otel_traceparent(o, 0, tp), DDB_ENOTFOUND);
    ddb_error err;
    ck_assert_int_eq(ddb_otel_set_remote_parent(o, "00-0af7651916cd43dd8448eb211c80319c-zz", &err),
                     DDB_EINVAL);
    ck_assert_int_eq(err.code, DDB_EINVAL);
    const char *remote = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
    ck_assert_int_eq(ddb_otel_set_remote_parent(o, remote, &err), 0);
    ck_assert_int_eq(ddb_otel_traceparent(o, 0, tp), 0);
    ck_assert_str_eq(tp, remote);
    uint64_t id = ddb_otel_span_start(o, "job");
    ck_assert_uint_ne(id, 0);
    ck_assert_uint_eq(ddb_telemetry_get_parent(), id);
    ck_assert_int_eq(ddb_otel_traceparent(o, 0, tp), 0);
    ck_assert_int_eq(strncmp(tp, "00-0af7651916cd43dd8448eb211c80319c-", 36), 0);
    ck_assert_str_ne(tp + 36, "b7ad6b7169203331-01");
    /* a library span under it inherits the trace */
    const ddb_telemetry *tel = ddb_otel_telemetry(o);
    tel->span_start(tel->arg, 7, id, "GetItem", NULL, 0);
    char child[DDB_OTEL_TRACEPARENT_SIZE];
    ck_assert_int_eq(ddb_otel_traceparent(o, 7, child), 0);
    ck_assert_int_eq(strncmp(child, tp, 36), 0);
    tel->span_end(tel->arg, 7, NULL);
    ck_assert_int_eq(ddb_otel_traceparent(o, 7, child), 0); /* kept after its end */
    ddb_otel_span_end(o, id, NULL);
    ck_assert_uint_eq(ddb_telemetry_get_parent(), 0);
    ck_assert_int_eq(ddb_otel_set_remote_parent(o, NULL, NULL), 0);
    ck_assert_int_eq(ddb_otel_traceparent(o, 0, tp), DDB_ENOTFOUND);
    ck_assert_int_eq(ddb_otel_traceparent(o, 12345, tp), DDB_ENOTFOUND);
    ddb_otel_free(o);
    ddb_clock_unref(clock);
}
END_TEST

START_TEST(test_new_refuses_bad_options)
{
    ddb_error err;
    ck_assert_ptr_null(ddb_otel_new(&(ddb_otel_options){ .endpoint = "ftp://x",
                                                         .ignore_environment = true }, &err));
    ck_assert_int_eq(err.code, DDB_EINVAL);
    ck_assert_ptr_null(ddb_otel_new(&(ddb_otel_options){ .headers = "a",
                                                         .ignore_environment = true }, &err));
    ck_assert_int_eq(err.code, DDB_EINVAL);
    ddb_otel_free(NULL);
    ck_assert_uint_eq(ddb_otel_dropped(NULL), 0);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("otel_config");
    TCase *tc = tcase_create("config");
    tcase_add_test(tc, test_defaults);
    tcase_add_test(tc, test_endpoints);
    tcase_add_test(tc, test_headers);
    tcase_add_test(tc, test_resource);
    tcase_add_test(tc, test_numbers);
    tcase_add_test(tc, test_percent_decode);
    tcase_add_test(tc, test_traceparent_good);
    tcase_add_test(tc, test_traceparent_bad);
    tcase_add_test(tc, test_remote_parent_api);
    tcase_add_test(tc, test_new_refuses_bad_options);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return dl_check_run(suite());
}
