/* otel_bench: what libddb_otel costs a process. CPU per span in the callbacks (a
 * request's span: start, six attributes, end), per metric point, and per exported span
 * (the JSON encoding and the POST to a collector, measured around ddb_otel_flush); the
 * memory of a full queue. Usage:
 *     otel_bench ENDPOINT [SPANS]        (ENDPOINT: an OTLP/HTTP receiver, e.g.
 *                                          tests/otel/receiver.py; see run.sh)
 * See bench/RESULTS.md for results. */
#include <dynalock/ddb.h>
#include <dynalock/otel.h>

#include <inttypes.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

static double cpu_s(void)
{
    struct rusage r;
    getrusage(RUSAGE_SELF, &r);
    return (double)(r.ru_utime.tv_sec + r.ru_stime.tv_sec) +
           (double)(r.ru_utime.tv_usec + r.ru_stime.tv_usec) / 1e6;
}

static double real_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* One span as the client makes one for a request. */
static void request_span(const ddb_telemetry *t, uint64_t id, uint64_t parent)
{
    t->span_start(t->arg, id, parent, "UpdateItem", NULL, 0);
    ddb_attr a[] = {
        {.key = "db.system.name", .type = DDB_ATTR_STR, .v.s = "aws.dynamodb"},
        {.key = "db.operation.name", .type = DDB_ATTR_STR, .v.s = "UpdateItem"},
        {.key = "db.collection.name", .type = DDB_ATTR_STR, .v.s = "Locks"},
        {.key = "aws.dynamodb.table_names", .type = DDB_ATTR_STR, .v.s = "Locks"},
        {.key = "server.address", .type = DDB_ATTR_STR, .v.s = "dynamodb.eu-west-1.amazonaws.com"},
        {.key = "server.port", .type = DDB_ATTR_INT, .v.i = 443},
    };
    for (size_t i = 0; i < sizeof a / sizeof *a; i++)
        t->span_attr(t->arg, id, &a[i]);
    t->span_end(t->arg, id, NULL);
}

static ddb_otel *exporter(const char *endpoint, int queue)
{
    ddb_error err;
    ddb_otel *o = ddb_otel_new(&(ddb_otel_options){
        .endpoint = endpoint, .ignore_environment = true, .max_queue_size = queue,
        .max_export_batch_size = queue, .schedule_delay_ms = 3600000,
        .metric_export_interval_ms = 3600000, .shutdown_timeout_ms = 30000 }, &err);
    if (!o) {
        fprintf(stderr, "otel_bench: %s\n", err.message);
        exit(1);
    }
    return o;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: otel_bench ENDPOINT [SPANS]\n");
        return 2;
    }
    const char *ep = argv[1];
    int n = argc > 2 ? atoi(argv[2]) : 20000;

    /* 1. The callbacks alone: a queue large enough for all, nothing exported. The batch
     * equals the queue, so the thread wakes only once it is full. */
    ddb_otel *o = exporter(ep, n + 1);
    const ddb_telemetry *t = ddb_otel_telemetry(o);
    double c0 = cpu_s(), r0 = real_s();
    for (int i = 0; i < n; i++)
        request_span(t, (uint64_t)i + 1, 0);
    double c1 = cpu_s(), r1 = real_s();
    printf("callbacks: %d request spans (start, 6 attributes, end): %.2f us CPU per span "
           "(%.2f us real)\n", n, (c1 - c0) * 1e6 / n, (r1 - r0) * 1e6 / n);

    /* 2. Export: JSON encoding and POST of everything queued, in batches of the queue's
     * size (one request), then a batch of 512 at a time. */
    c0 = cpu_s();
    r0 = real_s();
    ddb_error err;
    int rc = ddb_otel_flush(o, 120000, &err);
    c1 = cpu_s();
    r1 = real_s();
    ddb_otel_stats st;
    ddb_otel_get_stats(o, &st);
    printf("export of %d spans in one request: %s, %" PRIu64 " accepted; %.2f us CPU per span "
           "in this process (%.2f us real, collector included)\n", n, rc ? err.message : "ok",
           st.spans_exported, (c1 - c0) * 1e6 / n, (r1 - r0) * 1e6 / n);
    ddb_otel_free(o);

    o = exporter(ep, 512);
    t = ddb_otel_telemetry(o);
    int m = n / 4;
    c0 = cpu_s();
    r0 = real_s();
    for (int i = 0; i < m; i++) {
        request_span(t, (uint64_t)i + 1, 0);
        if ((i + 1) % 512 == 0)
            ddb_otel_flush(o, 60000, NULL); /* a batch at a time, on this thread */
    }
    ddb_otel_flush(o, 60000, NULL);
    c1 = cpu_s();
    r1 = real_s();
    ddb_otel_get_stats(o, &st);
    printf("spans through batches of 512, end to end: %d spans, %" PRIu64 " accepted: %.2f us "
           "CPU per span in this process (%.2f us real, collector included)\n", m,
           st.spans_exported, (c1 - c0) * 1e6 / m, (r1 - r0) * 1e6 / m);
    ddb_otel_free(o);

    /* 3. Metric points: the duration histogram with five attributes, over 8 streams. */
    o = exporter(ep, 16);
    t = ddb_otel_telemetry(o);
    const char *ops[] = {"GetItem", "PutItem", "UpdateItem", "DeleteItem",
                         "Query", "Scan", "TransactWriteItems", "BatchGetItem"};
    c0 = cpu_s();
    for (int i = 0; i < n; i++) {
        ddb_attr a[] = {
            {.key = "db.system.name", .type = DDB_ATTR_STR, .v.s = "aws.dynamodb"},
            {.key = "db.operation.name", .type = DDB_ATTR_STR, .v.s = ops[i % 8]},
            {.key = "db.collection.name", .type = DDB_ATTR_STR, .v.s = "Locks"},
            {.key = "server.address", .type = DDB_ATTR_STR, .v.s = "dynamodb.eu-west-1.amazonaws.com"},
        };
        t->metric(t->arg, "db.client.operation.duration", "s", 0.004 + (i % 100) * 0.0001, a, 4);
    }
    c1 = cpu_s();
    printf("metric points: %d histogram points over 8 attribute sets: %.2f us CPU per point\n",
           n, (c1 - c0) * 1e6 / n);
    ddb_otel_free(o);

    /* 4. Memory of a full queue (the default 2048): 2047 spans, one short of the batch
     * that would wake the thread to export them. */
    o = exporter(ep, 2048);
    t = ddb_otel_telemetry(o);
    size_t h0 = mallinfo2().uordblks;
    for (int i = 0; i < 2047; i++)
        request_span(t, (uint64_t)i + 1, 0);
    size_t h1 = mallinfo2().uordblks;
    printf("memory of a full queue of 2048 request spans: %.0f KiB of heap in use (%.0f "
           "bytes per span, with its entry in the table of span ids)\n",
           (double)(h1 - h0) / 1024.0, (double)(h1 - h0) / 2047);
    ddb_otel_free(o);
    return 0;
}
