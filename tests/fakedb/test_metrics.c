/* test_metrics.c: fakedb's own metrics, GET /fake/metrics, over HTTP: the format and its
 * content type, requests by operation and status and errors by type after known
 * requests, the histogram's invariants, the items and bytes of each table after puts,
 * deletes and expiry by time to live, faults fired by kind, open connections, label
 * escaping, and requests from several threads at once counted exactly. */
#include "dl_check.h"
#include "fdbt.h"

#include <arpa/inet.h>
#include <check.h>
#include <curl/curl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* metrics.c (internal to libfakedb): a label value escaped, malloc'd. */
char *fakedb__metrics_escape(const char *s);

static void setup(void)
{
    fdbt_start(NULL);
    fdbt_table("Shop", NULL, NULL);
}

static void teardown(void)
{
    fdbt_stop();
}

typedef struct scrape {
    long status;
    char content_type[128];
    char *text;
    size_t len;
} scrape;

static size_t on_text(char *p, size_t sz, size_t n, void *arg)
{
    scrape *s = arg;
    char *q = realloc(s->text, s->len + sz * n + 1);
    if (!q)
        return 0;
    memcpy(q + s->len, p, sz * n);
    s->text = q;
    s->len += sz * n;
    s->text[s->len] = 0;
    return sz * n;
}

/* One scrape of /fake/metrics; false when it failed. Any thread: it asserts nothing. */
static bool fetch_metrics(scrape *out)
{
    scrape s;
    memset(&s, 0, sizeof s);
    CURL *c = curl_easy_init();
    if (!c)
        return false;
    char url[256];
    snprintf(url, sizeof url, "%s/fake/metrics", fakedb_endpoint(fdbt_db));
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_text);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &s);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 30L);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    CURLcode rc = curl_easy_perform(c);
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &s.status);
    char *ct = NULL;
    curl_easy_getinfo(c, CURLINFO_CONTENT_TYPE, &ct);
    snprintf(s.content_type, sizeof s.content_type, "%s", ct ? ct : "");
    curl_easy_cleanup(c);
    *out = s;
    return rc == CURLE_OK && s.status == 200 && s.text;
}

/* One scrape, asserted: on the test's thread only. */
static scrape get_metrics(void)
{
    scrape s;
    ck_assert_msg(fetch_metrics(&s), "GET /fake/metrics: status %ld", s.status);
    return s;
}

/* The value of one series, e.g. `fakedb_requests_total{operation="GetItem",status="200"}`,
 * or -1 when the scrape has no such line. */
static double value_of(const scrape *s, const char *series)
{
    size_t n = strlen(series);
    for (const char *line = s->text; line && *line;) {
        const char *eol = strchr(line, '\n');
        if (!strncmp(line, series, n) && line[n] == ' ')
            return strtod(line + n + 1, NULL);
        line = eol ? eol + 1 : NULL;
    }
    return -1;
}

static double metric(const char *series)
{
    scrape s = get_metrics();
    double v = value_of(&s, series);
    free(s.text);
    return v;
}

static void put(const char *table, const char *pk, const char *data)
{
    char body[512];
    snprintf(body, sizeof body, "{\"TableName\":\"%s\",\"Item\":{\"pk\":{\"S\":\"%s\"},\"d\":{\"S\":\"%s\"}}}",
             table, pk, data);
    fdbt_expect_call("PutItem", body, 200, "");
}

static void get(const char *table, const char *pk, long status, const char *type)
{
    char body[256];
    snprintf(body, sizeof body, "{\"TableName\":\"%s\",\"Key\":{\"pk\":{\"S\":\"%s\"}}}", table, pk);
    fdbt_expect_call("GetItem", body, status, type);
}

START_TEST(format_and_content_type)
{
    put("Shop", "a", "x");
    scrape s = get_metrics();
    ck_assert_str_eq(s.content_type, "text/plain; version=0.0.4; charset=utf-8");
    const char *families[][2] = {
        { "fakedb_requests_total", "counter" },
        { "fakedb_request_errors_total", "counter" },
        { "fakedb_request_duration_seconds", "histogram" },
        { "fakedb_table_items", "gauge" },
        { "fakedb_table_bytes", "gauge" },
        { "fakedb_faults_fired_total", "counter" },
        { "fakedb_open_connections", "gauge" },
    };
    for (size_t i = 0; i < sizeof families / sizeof families[0]; i++) {
        char help[128], type[128];
        snprintf(help, sizeof help, "# HELP %s ", families[i][0]);
        snprintf(type, sizeof type, "\n# TYPE %s %s\n", families[i][0], families[i][1]);
        const char *h = strstr(s.text, help);
        ck_assert_msg(h != NULL, "no HELP for %s", families[i][0]);
        /* TYPE follows HELP on the next line, before any sample of the family */
        const char *t = strchr(h, '\n');
        ck_assert_msg(t && !strncmp(t, type, strlen(type)), "no TYPE after HELP for %s", families[i][0]);
    }
    /* Every line is a comment or `name{labels} value` / `name value`; the text ends
     * with a line feed. */
    ck_assert(s.len > 0 && s.text[s.len - 1] == '\n');
    int samples = 0; /* the loop checks something: as many sample lines as families, at least */
    for (char *line = s.text; *line;) {
        char *eol = strchr(line, '\n');
        ck_assert_ptr_nonnull(eol);
        if (line[0] != '#') {
            char *sp = memrchr(line, ' ', (size_t)(eol - line));
            ck_assert_msg(sp != NULL, "no value: %.*s", (int)(eol - line), line);
            char *end;
            strtod(sp + 1, &end);
            ck_assert_msg(end == eol, "bad value: %.*s", (int)(eol - line), line);
            ck_assert(!strncmp(line, "fakedb_", 7));
            samples++;
        }
        line = eol + 1;
    }
    ck_assert_int_ge(samples, (int)(sizeof families / sizeof families[0]));
    free(s.text);
}
END_TEST

START_TEST(requests_by_operation_status_and_error)
{
    put("Shop", "a", "x");
    put("Shop", "b", "y");
    put("Shop", "c", "z");
    get("Shop", "a", 200, "");
    get("Shop", "nope", 200, "");
    get("Missing", "a", 400, "ResourceNotFoundException");
    fdbt_expect_call("PutItem", "{\"TableName\":\"Shop\",\"Item\":{\"pk\":{\"S\":\"a\"}},"
                     "\"ConditionExpression\":\"attribute_not_exists(pk)\"}", 400, "ConditionalCheckFailedException");
    fdbt_expect_call("Frobnicate", "{}", 400, "UnknownOperationException");
    fdbt_resp r = fdbt_raw("POST", "/", "DynamoDB_20120810.ListTables", "application/x-amz-json-1.0",
                           NULL, "{}", 2);
    ck_assert_int_eq(r.status, 400);
    fdbt_free(&r);

    scrape s = get_metrics();
    ck_assert_double_eq(value_of(&s, "fakedb_requests_total{operation=\"PutItem\",status=\"200\"}"), 3);
    ck_assert_double_eq(value_of(&s, "fakedb_requests_total{operation=\"PutItem\",status=\"400\"}"), 1);
    ck_assert_double_eq(value_of(&s, "fakedb_requests_total{operation=\"GetItem\",status=\"200\"}"), 2);
    ck_assert_double_eq(value_of(&s, "fakedb_requests_total{operation=\"GetItem\",status=\"400\"}"), 1);
    /* an operation fakedb does not know, and a request refused before its operation is read */
    ck_assert_double_eq(value_of(&s, "fakedb_requests_total{operation=\"unknown\",status=\"400\"}"), 2);
    ck_assert_double_eq(value_of(&s, "fakedb_requests_total{operation=\"Scan\",status=\"200\"}"), -1);
    ck_assert_double_eq(value_of(&s, "fakedb_request_errors_total{operation=\"GetItem\",error_type=\"ResourceNotFoundException\"}"), 1);
    ck_assert_double_eq(value_of(&s, "fakedb_request_errors_total{operation=\"PutItem\",error_type=\"ConditionalCheckFailedException\"}"), 1);
    ck_assert_double_eq(value_of(&s, "fakedb_request_errors_total{operation=\"unknown\",error_type=\"UnknownOperationException\"}"), 1);
    ck_assert_double_eq(value_of(&s, "fakedb_request_errors_total{operation=\"unknown\",error_type=\"MissingAuthenticationTokenException\"}"), 1);
    /* success is not an error */
    ck_assert_ptr_null(strstr(s.text, "fakedb_request_errors_total{operation=\"PutItem\",error_type=\"\"}"));
    /* the admin endpoints are not DynamoDB requests */
    ck_assert_ptr_null(strstr(s.text, "operation=\"metrics\""));
    free(s.text);

    /* Counters count since start: fakedb_reset (the tests' reset between cases) leaves them. */
    fakedb_reset(fdbt_db);
    ck_assert_double_eq(metric("fakedb_requests_total{operation=\"PutItem\",status=\"200\"}"), 3);
}
END_TEST

/* Checks every histogram of a scrape: buckets in increasing le, cumulative counts that
 * never decrease, +Inf last and equal to _count, a non-negative _sum. Returns the
 * number of operations seen. */
static int check_histograms(const scrape *s)
{
    const char *prefix = "fakedb_request_duration_seconds_bucket{operation=\"";
    int ops = 0;
    for (const char *p = strstr(s->text, prefix); p;) {
        const char *q = p + strlen(prefix);
        const char *qe = strchr(q, '"');
        ck_assert_ptr_nonnull(qe);
        char op[64];
        snprintf(op, sizeof op, "%.*s", (int)(qe - q), q);
        double last_le = -1, last = -1, inf = -1;
        const char *line = p;
        char want[160];
        snprintf(want, sizeof want, "%s%s\",le=\"", prefix, op);
        while (!strncmp(line, want, strlen(want))) {
            const char *le = line + strlen(want);
            double bound = !strncmp(le, "+Inf\"", 5) ? 1e300 : strtod(le, NULL);
            ck_assert_msg(bound > last_le, "%s: le not increasing", op);
            const char *sp = strchr(le, ' ');
            double v = strtod(sp + 1, NULL);
            ck_assert_msg(v >= last, "%s: bucket le=%g has %g < %g", op, bound, v, last);
            last = v;
            last_le = bound;
            if (bound == 1e300)
                inf = v;
            line = strchr(line, '\n') + 1;
        }
        ck_assert_msg(inf >= 1, "%s: no +Inf bucket", op);
        char series[160];
        snprintf(series, sizeof series, "fakedb_request_duration_seconds_count{operation=\"%s\"}", op);
        ck_assert_double_eq(value_of(s, series), inf);
        snprintf(series, sizeof series, "fakedb_request_duration_seconds_sum{operation=\"%s\"}", op);
        double sum = value_of(s, series);
        ck_assert_msg(sum >= 0, "%s: no _sum", op);
        ops++;
        p = strstr(line, prefix);
    }
    return ops;
}

START_TEST(histogram_invariants)
{
    for (int i = 0; i < 20; i++) {
        char pk[16];
        snprintf(pk, sizeof pk, "k%d", i);
        put("Shop", pk, "v");
        get("Shop", pk, 200, "");
    }
    get("Missing", "a", 400, "ResourceNotFoundException");
    /* A delay fault's request is counted once, when answered. */
    fakedb_fault f = { .kind = FAKEDB_FAULT_DELAY, .operation = "DeleteItem", .delay_ms = 20, .count = 1 };
    ck_assert_int_gt(fakedb_fault_add(fdbt_db, &f), 0);
    fdbt_expect_call("DeleteItem", "{\"TableName\":\"Shop\",\"Key\":{\"pk\":{\"S\":\"k1\"}}}", 200, "");
    scrape s = get_metrics();
    ck_assert_int_eq(check_histograms(&s), 4); /* with the fixture's CreateTable */
    /* _count is every answered request of the operation, whatever its status */
    ck_assert_double_eq(value_of(&s, "fakedb_request_duration_seconds_count{operation=\"GetItem\"}"), 21);
    ck_assert_double_eq(value_of(&s, "fakedb_request_duration_seconds_count{operation=\"PutItem\"}"), 20);
    ck_assert_double_eq(value_of(&s, "fakedb_request_duration_seconds_count{operation=\"DeleteItem\"}"), 1);
    ck_assert_double_eq(value_of(&s, "fakedb_requests_total{operation=\"DeleteItem\",status=\"200\"}"), 1);
    /* le values are Prometheus's floats, sub-millisecond first */
    ck_assert_ptr_nonnull(strstr(s.text, "fakedb_request_duration_seconds_bucket{operation=\"GetItem\",le=\"0.0001\"} "));
    ck_assert_ptr_nonnull(strstr(s.text, "fakedb_request_duration_seconds_bucket{operation=\"GetItem\",le=\"10\"} "));
    free(s.text);
}
END_TEST

static double describe_bytes(const char *table)
{
    char body[128];
    snprintf(body, sizeof body, "{\"TableName\":\"%s\"}", table);
    fdbt_resp r = fdbt_call("DescribeTable", body);
    ck_assert_int_eq(r.status, 200);
    double v = json_object_get_double(fdbt_get(r.json, "Table.TableSizeBytes"));
    fdbt_free(&r);
    return v;
}

START_TEST(items_and_bytes_per_table)
{
    fdbt_table("Other", NULL, NULL);
    ck_assert_double_eq(metric("fakedb_table_items{table=\"Shop\"}"), 0);
    ck_assert_double_eq(metric("fakedb_table_bytes{table=\"Shop\"}"), 0);
    put("Shop", "a", "0123456789");
    put("Shop", "b", "0123456789");
    put("Shop", "c", "01234567890123456789");
    put("Other", "a", "x");
    scrape s = get_metrics();
    ck_assert_double_eq(value_of(&s, "fakedb_table_items{table=\"Shop\"}"), 3);
    ck_assert_double_eq(value_of(&s, "fakedb_table_items{table=\"Other\"}"), 1);
    /* DynamoDB's item size: the names' and values' bytes (pk+a, d+10 / d+20) */
    double bytes = value_of(&s, "fakedb_table_bytes{table=\"Shop\"}");
    ck_assert_double_eq(bytes, 3 + 11 + 3 + 11 + 3 + 21);
    ck_assert_double_eq(bytes, describe_bytes("Shop"));
    free(s.text);

    /* an overwrite changes the bytes, not the count */
    put("Shop", "a", "01234");
    ck_assert_double_eq(metric("fakedb_table_items{table=\"Shop\"}"), 3);
    ck_assert_double_eq(metric("fakedb_table_bytes{table=\"Shop\"}"), bytes - 5);
    fdbt_expect_call("DeleteItem", "{\"TableName\":\"Shop\",\"Key\":{\"pk\":{\"S\":\"c\"}}}", 200, "");
    ck_assert_double_eq(metric("fakedb_table_items{table=\"Shop\"}"), 2);
    ck_assert_double_eq(metric("fakedb_table_bytes{table=\"Shop\"}"), bytes - 5 - 24);
    ck_assert_double_eq(metric("fakedb_table_bytes{table=\"Shop\"}"), describe_bytes("Shop"));
    /* a failed conditional delete changes nothing */
    fdbt_expect_call("DeleteItem", "{\"TableName\":\"Shop\",\"Key\":{\"pk\":{\"S\":\"a\"}},"
                     "\"ConditionExpression\":\"attribute_not_exists(pk)\"}", 400, "ConditionalCheckFailedException");
    ck_assert_double_eq(metric("fakedb_table_items{table=\"Shop\"}"), 2);
    /* a deleted table has no series */
    fdbt_expect_call("DeleteTable", "{\"TableName\":\"Other\"}", 200, "");
    ck_assert_double_eq(metric("fakedb_table_items{table=\"Other\"}"), -1);
    ck_assert_double_eq(metric("fakedb_table_bytes{table=\"Other\"}"), -1);
    ck_assert_double_eq(metric("fakedb_table_items{table=\"Shop\"}"), 2);

    /* an item that time to live expires leaves the gauges when the clock passes it */
    fdbt_expect_call("UpdateTimeToLive", "{\"TableName\":\"Shop\",\"TimeToLiveSpecification\":"
                     "{\"Enabled\":true,\"AttributeName\":\"exp\"}}", 200, "");
    fdbt_expect_call("PutItem", "{\"TableName\":\"Shop\",\"Item\":{\"pk\":{\"S\":\"t\"},"
                     "\"exp\":{\"N\":\"1700000010\"}}}", 200, "");
    ck_assert_double_eq(metric("fakedb_table_items{table=\"Shop\"}"), 3);
    ck_assert_int_eq(fakedb_clock_advance(fdbt_db, 20000), 0);
    ck_assert_double_eq(metric("fakedb_table_items{table=\"Shop\"}"), 2);
    ck_assert_double_eq(metric("fakedb_table_bytes{table=\"Shop\"}"), describe_bytes("Shop"));
}
END_TEST

START_TEST(faults_fired_by_kind)
{
    scrape s = get_metrics();
    const char *kinds[] = { "error", "delay", "lost_response", "unprocessed", "lost_request" };
    for (size_t i = 0; i < 5; i++) {
        char series[96];
        snprintf(series, sizeof series, "fakedb_faults_fired_total{kind=\"%s\"}", kinds[i]);
        ck_assert_double_eq(value_of(&s, series), 0);
    }
    free(s.text);
    fakedb_fault thr = { .kind = FAKEDB_FAULT_ERROR, .operation = "GetItem", .count = 2 };
    fakedb_fault unavail = { .kind = FAKEDB_FAULT_ERROR, .operation = "Query", .count = 1,
                             .error_type = "ServiceUnavailable", .status = 503 };
    fakedb_fault lost = { .kind = FAKEDB_FAULT_LOST_RESPONSE, .operation = "PutItem", .count = 1 };
    fakedb_fault gone = { .kind = FAKEDB_FAULT_LOST_REQUEST, .operation = "DeleteItem", .count = 1 };
    ck_assert_int_gt(fakedb_fault_add(fdbt_db, &thr), 0);
    ck_assert_int_gt(fakedb_fault_add(fdbt_db, &unavail), 0);
    ck_assert_int_gt(fakedb_fault_add(fdbt_db, &lost), 0);
    ck_assert_int_gt(fakedb_fault_add(fdbt_db, &gone), 0);
    get("Shop", "a", 400, "ProvisionedThroughputExceededException");
    get("Shop", "a", 400, "ProvisionedThroughputExceededException");
    get("Shop", "a", 200, "");
    fdbt_expect_call("Query", "{\"TableName\":\"Shop\",\"KeyConditionExpression\":\"pk = :p\","
                     "\"ExpressionAttributeValues\":{\":p\":{\"S\":\"a\"}}}", 503, "ServiceUnavailable");
    fdbt_resp r = fdbt_call("PutItem", "{\"TableName\":\"Shop\",\"Item\":{\"pk\":{\"S\":\"a\"}}}");
    ck_assert_int_eq(r.status, 0); /* no answer */
    fdbt_free(&r);
    r = fdbt_call("DeleteItem", "{\"TableName\":\"Shop\",\"Key\":{\"pk\":{\"S\":\"a\"}}}");
    ck_assert_int_eq(r.status, 0);
    fdbt_free(&r);

    s = get_metrics();
    ck_assert_double_eq(value_of(&s, "fakedb_faults_fired_total{kind=\"error\"}"), 3);
    ck_assert_double_eq(value_of(&s, "fakedb_faults_fired_total{kind=\"lost_response\"}"), 1);
    ck_assert_double_eq(value_of(&s, "fakedb_faults_fired_total{kind=\"lost_request\"}"), 1);
    ck_assert_double_eq(value_of(&s, "fakedb_faults_fired_total{kind=\"delay\"}"), 0);
    ck_assert_double_eq(value_of(&s, "fakedb_requests_total{operation=\"GetItem\",status=\"400\"}"), 2);
    ck_assert_double_eq(value_of(&s, "fakedb_requests_total{operation=\"GetItem\",status=\"200\"}"), 1);
    ck_assert_double_eq(value_of(&s, "fakedb_requests_total{operation=\"Query\",status=\"503\"}"), 1);
    ck_assert_double_eq(value_of(&s, "fakedb_requests_total{operation=\"PutItem\",status=\"none\"}"), 1);
    ck_assert_double_eq(value_of(&s, "fakedb_requests_total{operation=\"DeleteItem\",status=\"none\"}"), 1);
    ck_assert_double_eq(value_of(&s, "fakedb_request_errors_total{operation=\"GetItem\",error_type=\"ProvisionedThroughputExceededException\"}"), 2);
    ck_assert_double_eq(value_of(&s, "fakedb_request_errors_total{operation=\"Query\",error_type=\"ServiceUnavailable\"}"), 1);
    /* the lost response's item was written */
    ck_assert_double_eq(value_of(&s, "fakedb_table_items{table=\"Shop\"}"), 1);
    /* what fakedb_faults_fired says */
    ck_assert_int_eq(fakedb_faults_fired(fdbt_db), 5);
    free(s.text);
}
END_TEST

START_TEST(escaping)
{
    const char *cases[][2] = {
        { "plain", "plain" },
        { "", "" },
        { "a\"b", "a\\\"b" },
        { "back\\slash", "back\\\\slash" },
        { "line\nfeed", "line\\nfeed" },
        { "\\\"\n", "\\\\\\\"\\n" },
        { "tab\tand\rcr", "tab\tand\rcr" },          /* allowed as they are */
        { "caf\xc3\xa9 \xe2\x82\xac", "caf\xc3\xa9 \xe2\x82\xac" }, /* UTF-8 kept */
        { "bad\xff", "bad\xef\xbf\xbd" },            /* not UTF-8: U+FFFD */
        { "\xc0\x80", "\xef\xbf\xbd\xef\xbf\xbd" },  /* overlong NUL: one U+FFFD per byte */
        { "cut\xe2\x82", "cut\xef\xbf\xbd\xef\xbf\xbd" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *e = fakedb__metrics_escape(cases[i][0]);
        ck_assert_ptr_nonnull(e);
        ck_assert_msg(!strcmp(e, cases[i][1]), "case %zu: '%s', want '%s'", i, e, cases[i][1]);
        free(e);
    }
    char *e = fakedb__metrics_escape(NULL);
    ck_assert_str_eq(e, "");
    free(e);

    /* Over HTTP: an error type with a quote, a backslash and a line feed (table names
     * cannot have them; error types of injected faults can) comes out escaped, on one
     * line. */
    fakedb_fault f = { .kind = FAKEDB_FAULT_ERROR, .operation = "GetItem", .count = 1,
                       .error_type = "Odd\"Type\\With\nNewline", .status = 500 };
    ck_assert_int_gt(fakedb_fault_add(fdbt_db, &f), 0);
    get("Shop", "a", 500, "Odd\"Type\\With\nNewline");
    ck_assert_double_eq(metric("fakedb_request_errors_total{operation=\"GetItem\",error_type=\"Odd\\\"Type\\\\With\\nNewline\"}"), 1);
}
END_TEST

/* A connection that has had its answer and stays open (keep-alive). */
static int open_conn(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    ck_assert_int_ge(fd, 0);
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)fakedb_port(fdbt_db));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ck_assert_int_eq(connect(fd, (struct sockaddr *)&a, sizeof a), 0);
    const char req[] = "GET /fake/health HTTP/1.1\r\nHost: x\r\n\r\n";
    ck_assert_int_eq(send(fd, req, sizeof req - 1, 0), (ssize_t)(sizeof req - 1));
    char buf[1024];
    size_t got = 0;
    while (!memchr(buf, '}', got)) {
        ssize_t n = recv(fd, buf + got, sizeof buf - got, 0);
        ck_assert_int_gt(n, 0);
        got += (size_t)n;
    }
    return fd;
}

START_TEST(open_connections)
{
    int fds[3];
    for (int i = 0; i < 3; i++)
        fds[i] = open_conn();
    /* the three, and the scrape's own */
    ck_assert_double_ge(metric("fakedb_open_connections"), 4);
    for (int i = 0; i < 3; i++)
        close(fds[i]);
    /* The server sees the closes in its own threads: wait for the gauge to say so. */
    int64_t deadline = dl_check_mono_ms() + dl_check_bound_ms(20000);
    double v;
    while ((v = metric("fakedb_open_connections")) > 1 && dl_check_mono_ms() < deadline)
        ;
    ck_assert_double_eq(v, 1);
}
END_TEST

enum { THREADS = 4, PER_THREAD = 150 };

static void *hammer(void *arg)
{
    long *failures = arg;
    for (int i = 0; i < PER_THREAD; i++) {
        fdbt_resp r = fdbt_call("GetItem", "{\"TableName\":\"Shop\",\"Key\":{\"pk\":{\"S\":\"a\"}}}");
        if (r.status != 200)
            (*failures)++;
        fdbt_free(&r);
        r = fdbt_call("GetItem", "{\"TableName\":\"Gone\",\"Key\":{\"pk\":{\"S\":\"a\"}}}");
        if (r.status != 400)
            (*failures)++;
        fdbt_free(&r);
    }
    return NULL;
}

START_TEST(concurrent_requests_counted_exactly)
{
    pthread_t th[THREADS];
    long failures[THREADS] = { 0 };
    for (int i = 0; i < THREADS; i++)
        ck_assert_int_eq(pthread_create(&th[i], NULL, hammer, &failures[i]), 0);
    for (int i = 0; i < THREADS; i++) {
        pthread_join(th[i], NULL);
        ck_assert_int_eq(failures[i], 0);
    }
    scrape s = get_metrics();
    ck_assert_double_eq(value_of(&s, "fakedb_requests_total{operation=\"GetItem\",status=\"200\"}"), THREADS * PER_THREAD);
    ck_assert_double_eq(value_of(&s, "fakedb_requests_total{operation=\"GetItem\",status=\"400\"}"), THREADS * PER_THREAD);
    ck_assert_double_eq(value_of(&s, "fakedb_request_errors_total{operation=\"GetItem\",error_type=\"ResourceNotFoundException\"}"), THREADS * PER_THREAD);
    ck_assert_double_eq(value_of(&s, "fakedb_request_duration_seconds_count{operation=\"GetItem\"}"), 2 * THREADS * PER_THREAD);
    ck_assert_int_ge(check_histograms(&s), 2); /* CreateTable and GetItem at least */
    free(s.text);
    ck_assert_int_eq(fakedb_get_stats(fdbt_db, "GetItem").requests, 2 * THREADS * PER_THREAD);
}
END_TEST

/* Scrapes while requests run: every scrape is well formed (the histogram's +Inf equal
 * to its _count) and the counters never go back. */
static void *scraper(void *arg)
{
    int *bad = arg;
    double last = 0;
    for (int i = 0; i < 40; i++) {
        scrape s;
        if (!fetch_metrics(&s)) {
            (*bad)++;
            free(s.text);
            continue;
        }
        double v = value_of(&s, "fakedb_requests_total{operation=\"GetItem\",status=\"200\"}");
        if (v >= 0 && v < last)
            (*bad)++;
        if (v > last)
            last = v;
        free(s.text);
    }
    return NULL;
}

START_TEST(scrapes_during_load)
{
    pthread_t w, sc;
    long failures = 0;
    int bad = 0;
    ck_assert_int_eq(pthread_create(&w, NULL, hammer, &failures), 0);
    ck_assert_int_eq(pthread_create(&sc, NULL, scraper, &bad), 0);
    pthread_join(w, NULL);
    pthread_join(sc, NULL);
    ck_assert_int_eq(failures, 0);
    ck_assert_int_eq(bad, 0);
    scrape s = get_metrics();
    ck_assert_int_ge(check_histograms(&s), 1);
    free(s.text);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("fakedb_metrics");
    TCase *tc = tcase_create("metrics");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, format_and_content_type);
    tcase_add_test(tc, requests_by_operation_status_and_error);
    tcase_add_test(tc, histogram_invariants);
    tcase_add_test(tc, items_and_bytes_per_table);
    tcase_add_test(tc, faults_fired_by_kind);
    tcase_add_test(tc, escaping);
    tcase_add_test(tc, open_connections);
    tcase_add_test(tc, concurrent_requests_counted_exactly);
    tcase_add_test(tc, scrapes_during_load);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    curl_global_init(CURL_GLOBAL_DEFAULT);
    int rc = dl_check_run(suite());
    curl_global_cleanup();
    return rc;
}
