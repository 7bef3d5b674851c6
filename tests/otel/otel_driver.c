/* otel_driver.c: the scenarios test_otel.py runs against its OTLP receiver, one per
 * invocation: `otel_driver SCENARIO ENDPOINT [ARG]`. Each prints what the receiver
 * cannot see (the exporter's counts, a duration) as JSON lines on stdout. Time moves on
 * a fake clock; settle waits for the exporter's thread to have sent what an advance
 * released. */
#include <dynalock/coord.h>
#include <dynalock/ddb.h>
#include <dynalock/otel.h>
#include <dynalock/testing.h>

#include <curl/curl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CHECK(x)                                                                   \
    do {                                                                           \
        if (!(x)) {                                                                \
            fprintf(stderr, "otel_driver: %s:%d: %s failed\n", __FILE__, __LINE__, #x); \
            exit(1);                                                               \
        }                                                                          \
    } while (0)

static void print_stats(const char *stage, ddb_otel *o)
{
    ddb_otel_stats s;
    ddb_otel_get_stats(o, &s);
    printf("{\"stage\":\"%s\",\"spans_exported\":%" PRIu64 ",\"spans_queue_full\":%" PRIu64
           ",\"spans_failed\":%" PRIu64 ",\"metric_exports\":%" PRIu64 ",\"metric_failed\":%" PRIu64
           ",\"retries\":%" PRIu64 ",\"dropped\":%" PRIu64 ",\"last_http_status\":%d}\n",
           stage, s.spans_exported, s.spans_queue_full, s.spans_failed, s.metric_exports,
           s.metric_failed, s.retries, ddb_otel_dropped(o), s.last_http_status);
    fflush(stdout);
}

static int64_t real_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static size_t collect(char *p, size_t sz, size_t n, void *arg)
{
    char *buf = arg;
    size_t len = strlen(buf), add = sz * n;
    if (len + add < 64) {
        memcpy(buf + len, p, add);
        buf[len + add] = '\0';
    }
    return sz * n;
}

/* The receiver's count of requests received (answered or hanging). */
static int receiver_count(const char *endpoint)
{
    char url[512], buf[64] = "";
    snprintf(url, sizeof url, "%s/count", endpoint);
    CURL *c = curl_easy_init();
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, collect);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, buf);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 5000L);
    CURLcode rc = curl_easy_perform(c);
    curl_easy_cleanup(c);
    return rc == CURLE_OK ? atoi(buf) : -1;
}

/* Waits (real time, bounded) for the receiver to have seen n requests: an event the
 * exporter's thread causes, polled. */
static void wait_receiver(const char *endpoint, int n)
{
    int64_t end = real_ms() + 20000;
    while (receiver_count(endpoint) < n) {
        CHECK(real_ms() < end);
        struct timespec ts = { 0, 5000000 };
        nanosleep(&ts, NULL);
    }
}

static void own_spans(ddb_otel *o, int n)
{
    for (int i = 0; i < n; i++) {
        uint64_t id = ddb_otel_span_start(o, "work");
        CHECK(id);
        ddb_otel_span_attr(o, id, &(ddb_attr){ .key = "i", .type = DDB_ATTR_INT, .v.i = i });
        ddb_otel_span_end(o, id, NULL);
    }
}

static ddb_otel *new_exporter(const char *endpoint, ddb_clock *clock, int queue,
                              int attempts, int64_t shutdown_ms)
{
    ddb_error err;
    ddb_otel *o = ddb_otel_new(&(ddb_otel_options){
        .endpoint = endpoint, .ignore_environment = true, .service_name = "otel-driver",
        .clock = clock, .schedule_delay_ms = 5000, .metric_export_interval_ms = 60000,
        .max_queue_size = queue, .max_attempts = attempts, .retry_base_ms = 1000,
        .timeout_ms = 10000, .shutdown_timeout_ms = shutdown_ms }, &err);
    if (!o)
        fprintf(stderr, "otel_driver: %s\n", err.message);
    CHECK(o);
    /* its thread waits on the clock before the first advance, or the advance passes it by */
    CHECK(ddb_fake_clock_wait_for_waiters(clock, 1, 20000) == 0);
    return o;
}

/* One lease's life under a caller's span continued from a remote parent: acquire, a
 * heartbeat renewal, a failed request, release; then the scheduled export of spans and
 * metrics. */
static int lease(const char *endpoint, const char *traceparent)
{
    ddb_error err;
    ddb_test_server *srv = ddb_test_server_start(NULL, &err);
    CHECK(srv);
    CHECK(ddb_test_server_create_table(srv, "Locks", "pk", NULL, &err) == 0);
    int waiters = ddb_fake_clock_waiters(ddb_test_server_clock(srv));
    ddb_otel *o = ddb_otel_new(&(ddb_otel_options){
        .endpoint = endpoint, .ignore_environment = true, .service_name = "otel-test",
        .resource_attributes = "deployment.environment=test%2Fci",
        .headers = "x-api-key=s%20ecret", .clock = ddb_test_server_clock(srv),
        .schedule_delay_ms = 5000, .metric_export_interval_ms = 60000 }, &err);
    CHECK(o);
    CHECK(ddb_fake_clock_wait_for_waiters(ddb_test_server_clock(srv), waiters + 1, 20000) == 0);
    ddb_client *c = ddb_test_server_client_new(
        srv, &(ddb_client_options){ .telemetry = ddb_otel_telemetry(o) }, &err);
    CHECK(c);
    ddb_table *t = ddb_table_open(c, "Locks", "pk", NULL, &err);
    ddb_lock_table *locks = ddb_lock_table_new(t, NULL, &err);
    CHECK(locks);
    CHECK(ddb_otel_set_remote_parent(o, traceparent, &err) == 0);
    uint64_t job = ddb_otel_span_start(o, "job");
    ddb_lease *l = NULL;
    CHECK(ddb_lock_acquire(locks, "nightly", 3000, &l, NULL, &err) == 0);
    char tp[DDB_OTEL_TRACEPARENT_SIZE];
    CHECK(ddb_otel_traceparent(o, 0, tp) == 0);
    printf("{\"stage\":\"job\",\"traceparent\":\"%s\"}\n", tp);
    CHECK(ddb_test_server_advance(srv, 1000) == 0); /* the heartbeat renews at lease/3 */
    ddb_table *missing = ddb_table_open(c, "Missing", "pk", NULL, &err);
    ddb_item *key = ddb_item_new();
    ddb_item_set_s(key, "pk", "x");
    ddb_result r = { 0 };
    CHECK(ddb_table_get_item(missing, key, NULL, &r, NULL, &err) == DDB_ENOTFOUND);
    ddb_result_cleanup(&r);
    ddb_item_free(key);
    ddb_table_close(missing);
    ddb_lease_release(l);
    /* A second lease, lost: its item is deleted under it, and its next renewal fails. */
    ddb_lease *w = NULL;
    CHECK(ddb_lock_acquire(locks, "weekly", 3000, &w, NULL, &err) == 0);
    CHECK(ddb_lock_simulate_delete(locks, "weekly", &err) == 0);
    CHECK(ddb_test_server_advance(srv, 1000) == 0);
    CHECK(ddb_cancel_is_set(ddb_lease_ended(w)));
    ddb_lease_release(w);
    ddb_otel_span_end(o, job, NULL);
    CHECK(ddb_test_server_advance(srv, 60000) == 0); /* the schedule: spans and metrics */
    print_stats("exported", o);
    ddb_lock_table_free(locks);
    ddb_table_close(t);
    ddb_client_free(c);
    ddb_otel_free(o);
    ddb_test_server_stop(srv);
    return 0;
}

/* The receiver answers as test_otel.py scripted it; the exporter retries what may be.
 * After the first attempt, `steps` times: advance to just before `step_ms`, then to it
 * (a Retry-After of the receiver's makes the step exact; a step longer than any backoff
 * makes each one exactly one more attempt). */
static int retry(const char *endpoint, int attempts, int64_t step_ms, int steps)
{
    ddb_clock *clock = ddb_fake_clock_new(1700000000000);
    ddb_otel *o = new_exporter(endpoint, clock, 0, attempts, 2000);
    own_spans(o, 3);
    print_stats("queued", o);
    CHECK(ddb_fake_clock_advance(clock, 5000) == 0);
    CHECK(ddb_fake_clock_settle(clock, 20000) == 0);
    print_stats("first", o);
    for (int i = 0; i < steps; i++) {
        CHECK(ddb_fake_clock_advance(clock, step_ms - 1) == 0);
        CHECK(ddb_fake_clock_settle(clock, 20000) == 0);
        print_stats("before", o);
        CHECK(ddb_fake_clock_advance(clock, 1) == 0);
        CHECK(ddb_fake_clock_settle(clock, 20000) == 0);
        print_stats("after", o);
    }
    ddb_otel_free(o);
    ddb_clock_unref(clock);
    return 0;
}

/* A collector that never answers: ddb_otel_free is bounded by the shutdown timeout,
 * also while the background thread is inside a send. */
static int hang(const char *endpoint)
{
    ddb_clock *clock = ddb_fake_clock_new(1700000000000);
    ddb_otel *o = new_exporter(endpoint, clock, 0, 0, 500);
    own_spans(o, 2);
    CHECK(ddb_fake_clock_advance(clock, 5000) == 0); /* the thread sends, and hangs */
    wait_receiver(endpoint, 1);
    own_spans(o, 2);
    int64_t t0 = real_ms();
    ddb_otel_free(o);
    printf("{\"stage\":\"free\",\"elapsed_ms\":%" PRId64 "}\n", real_ms() - t0);
    ddb_clock_unref(clock);
    return 0;
}

/* The queue's bound: while the thread is held by a hanging collector, the queue fills
 * and every further span is dropped and counted. */
static int queue(const char *endpoint)
{
    ddb_clock *clock = ddb_fake_clock_new(1700000000000);
    ddb_otel *o = new_exporter(endpoint, clock, 10, 0, 300);
    own_spans(o, 10); /* a full batch wakes the thread, which sends and hangs */
    wait_receiver(endpoint, 1);
    own_spans(o, 25);
    print_stats("full", o);
    ddb_otel_free(o);
    ddb_clock_unref(clock);
    return 0;
}

/* ddb_otel_flush: what is queued leaves now, on the calling thread, with the clock never
 * advanced; its result is the collector's answer (test_otel.py scripts it). */
static int flush(const char *endpoint)
{
    ddb_clock *clock = ddb_fake_clock_new(1700000000000);
    ddb_otel *o = new_exporter(endpoint, clock, 0, 1, 2000);
    own_spans(o, 3);
    ddb_error err = {0};
    int rc = ddb_otel_flush(o, 5000, &err);
    printf("{\"stage\":\"flush\",\"ok\":%s,\"service\":%s,\"http_status\":%d}\n",
           rc == 0 ? "true" : "false", rc == DDB_ESERVICE ? "true" : "false",
           rc ? err.http_status : 0);
    print_stats("flushed", o);
    ddb_otel_free(o);
    ddb_clock_unref(clock);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: otel_driver lease ENDPOINT TRACEPARENT | retry ENDPOINT ATTEMPTS STEP_MS STEPS | hang ENDPOINT | queue ENDPOINT | flush ENDPOINT\n");
        return 2;
    }
    curl_global_init(CURL_GLOBAL_DEFAULT);
    int rc = 2;
    if (strcmp(argv[1], "lease") == 0 && argc > 3)
        rc = lease(argv[2], argv[3]);
    else if (strcmp(argv[1], "retry") == 0 && argc > 5)
        rc = retry(argv[2], atoi(argv[3]), atoll(argv[4]), atoi(argv[5]));
    else if (strcmp(argv[1], "hang") == 0)
        rc = hang(argv[2]);
    else if (strcmp(argv[1], "queue") == 0)
        rc = queue(argv[2]);
    else if (strcmp(argv[1], "flush") == 0)
        rc = flush(argv[2]);
    curl_global_cleanup();
    return rc;
}
