/* test_server.c: fakedb's server over HTTP: protocol errors and bad input, SigV4, the
 * /fake/ endpoints (clock, long poll, faults, reset, stats), time to live on the fake
 * clock, injected faults including the lost response, durability of --db across a
 * restart and a SIGKILL, and the `fakedb` program's arguments and signals. */
#include "fdbt.h"
#include "dl_check.h"

#include <check.h>
#include <curl/curl.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sigv4.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef DYNALOCK_BINARY_DIR
#define DYNALOCK_BINARY_DIR "."
#endif

#define AUTH "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20231114/us-east-1/dynamodb/aws4_request, SignedHeaders=host;x-amz-date, Signature=00ff"
#define CT "application/x-amz-json-1.0"
#define LIST "DynamoDB_20120810.ListTables"

static void setup(void)
{
    fdbt_start(NULL);
    fdbt_table("Locks", NULL, NULL);
}

static void teardown(void)
{
    fdbt_stop();
}

static void assert_serving(void)
{
    fdbt_resp r = fdbt_raw("GET", "/fake/health", NULL, NULL, NULL, NULL, 0);
    ck_assert_int_eq(r.status, 200);
    ck_assert(json_object_get_boolean(fdbt_get(r.json, "ok")));
    fdbt_free(&r);
}

static void expect_raw(const char *target, const char *ct, const char *auth, const char *body,
                       size_t len, long status, const char *type, const char *msg)
{
    fdbt_resp r = fdbt_raw("POST", "/", target, ct, auth, body, len);
    fdbt_expect_answer(&r, status, type, msg, target);
    assert_serving();
}

START_TEST(protocol_errors)
{
    const char *ok = "{}";
    expect_raw(LIST, CT, NULL, ok, 2, 400, "MissingAuthenticationTokenException", "Request is missing Authentication Token");
    expect_raw(LIST, CT, "AWS4-HMAC-SHA256 Credential=x", ok, 2, 400, "IncompleteSignatureException", "Signature");
    expect_raw("DynamoDB_20120810.Frobnicate", CT, AUTH, ok, 2, 400, "UnknownOperationException", NULL);
    expect_raw(NULL, CT, AUTH, ok, 2, 400, "UnknownOperationException", NULL);
    expect_raw(LIST, CT, AUTH, "{\"Limit\":", 9, 400, "SerializationException", NULL);
    expect_raw(LIST, CT, AUTH, "[1]", 3, 400, "SerializationException", NULL);
    expect_raw(LIST, CT, AUTH, "", 0, 400, "SerializationException", NULL);
    expect_raw(LIST, CT, AUTH, "{} trailing", 11, 400, "SerializationException", NULL);
    const char bad_utf8[] = "{\"TableName\":\"T\xff\xfe\"}";
    expect_raw("DynamoDB_20120810.DescribeTable", CT, AUTH, bad_utf8, sizeof bad_utf8 - 1, 400, "SerializationException", NULL);
    size_t depth = 100000;
    char *deep = malloc(2 * depth + 1);
    memset(deep, '[', depth);
    memset(deep + depth, ']', depth);
    deep[2 * depth] = 0;
    expect_raw(LIST, CT, AUTH, deep, 2 * depth, 400, "SerializationException", NULL);
    free(deep);
    /* application/x-amz-json-1.1 is accepted, as DynamoDB does */
    fdbt_resp r = fdbt_raw("POST", "/", LIST, "application/x-amz-json-1.1", AUTH, ok, 2);
    ck_assert_int_eq(r.status, 200);
    ck_assert_ptr_nonnull(fdbt_get(r.json, "TableNames"));
    fdbt_free(&r);
    r = fdbt_raw("GET", "/", NULL, NULL, NULL, NULL, 0);
    ck_assert_int_eq(r.status, 200);
    ck_assert_ptr_nonnull(strstr(r.body, "healthy"));
    fdbt_free(&r);
}
END_TEST

START_TEST(request_over_16mb)
{
    size_t n = 16 * 1024 * 1024 + 10;
    char *big = malloc(n);
    memset(big, ' ', n);
    big[0] = '{';
    big[n - 1] = '}';
    fdbt_resp r = fdbt_raw("POST", "/", LIST, CT, AUTH, big, n);
    /* answered early (by Content-Length) with an error, or the upload was cut short */
    ck_assert_msg(r.status == 413 || r.status == 0, "status %ld", r.status);
    if (r.status)
        ck_assert_str_eq(fdbt_error(&r), "ValidationException");
    fdbt_free(&r);
    free(big);
    assert_serving();
}
END_TEST

static const char *secret_of(void *arg, const char *key)
{
    (void)arg;
    return strcmp(key, "AKID") ? NULL : "s3cret";
}

START_TEST(sigv4_verification)
{
    fdbt_stop();
    fakedb_error err;
    fakedb_options o = { .credentials = "AKID:s3cret", .threads = 1 };
    fdbt_db = fakedb_start(&o, &err);
    ck_assert_ptr_nonnull(fdbt_db);
    const char *body = "{}";
    char host[64], amz[17];
    snprintf(host, sizeof host, "127.0.0.1:%d", fakedb_port(fdbt_db));
    int64_t now = (int64_t)time(NULL);
    dl__sigv4_amz_date(now, amz);
    dl_sigv4_header hs[4] = { { "host", host }, { "x-amz-date", amz }, { "x-amz-target", LIST },
                              { "content-type", CT } };
    dl_sigv4_request rq = { .method = "POST", .path = "/", .headers = hs, .n_headers = 4,
                            .body = body, .body_len = 2 };
    dl_sigv4_credentials good = { "AKID", "s3cret", NULL }, bad = { "AKID", "wrong", NULL };
    for (int pass = 0; pass < 2; pass++) {
        dl_sigv4_result sr;
        memset(&sr, 0, sizeof sr);
        ck_assert_int_eq(dl__sigv4_sign(&rq, pass ? &bad : &good, "us-east-1", "dynamodb", now, &sr), 0);
        CURL *c = curl_easy_init();
        struct curl_slist *hl = NULL;
        char h[4][600], url[128];
        snprintf(h[0], sizeof h[0], "Authorization: %s", sr.authorization);
        snprintf(h[1], sizeof h[1], "X-Amz-Date: %s", amz);
        snprintf(h[2], sizeof h[2], "X-Amz-Target: %s", LIST);
        snprintf(h[3], sizeof h[3], "Content-Type: %s", CT);
        for (int i = 0; i < 4; i++)
            hl = curl_slist_append(hl, h[i]);
        hl = curl_slist_append(hl, "Expect:");
        hl = curl_slist_append(hl, "Accept:");
        snprintf(url, sizeof url, "http://%s/", host);
        curl_easy_setopt(c, CURLOPT_URL, url);
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(c, CURLOPT_HTTPHEADER, hl);
        FILE *sink = fopen("/dev/null", "w");
        curl_easy_setopt(c, CURLOPT_WRITEDATA, sink);
        ck_assert_int_eq(curl_easy_perform(c), CURLE_OK);
        long status = 0;
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
        ck_assert_int_eq(status, pass ? 400 : 200);
        fclose(sink);
        curl_slist_free_all(hl);
        curl_easy_cleanup(c);
        dl__sigv4_result_cleanup(&sr);
    }
    (void)secret_of;
    /* a dummy signature fails verification */
    fdbt_resp r = fdbt_raw("POST", "/", LIST, CT, AUTH, body, 2);
    ck_assert_int_eq(r.status, 400);
    ck_assert_str_ne(fdbt_error(&r), "");
    fdbt_free(&r);
}
END_TEST

START_TEST(admin_clock)
{
    fdbt_resp r = fdbt_raw("GET", "/fake/clock", NULL, NULL, NULL, NULL, 0);
    ck_assert_int_eq(r.status, 200);
    ck_assert_int_eq(json_object_get_int64(fdbt_get(r.json, "now_ms")), 1700000000000LL);
    ck_assert(json_object_get_boolean(fdbt_get(r.json, "fake")));
    fdbt_free(&r);
    r = fdbt_raw("POST", "/fake/clock/advance", NULL, "application/json", NULL, "{\"ms\":1500}", 11);
    ck_assert_int_eq(json_object_get_int64(fdbt_get(r.json, "now_ms")), 1700000001500LL);
    fdbt_free(&r);
    ck_assert_int_eq(fakedb_clock_now_ms(fdbt_db), 1700000001500LL);
    r = fdbt_raw("POST", "/fake/clock/set", NULL, "application/json", NULL, "{\"now_ms\":1700000000000}", 24);
    ck_assert_int_eq(r.status, 400);   /* backwards */
    fdbt_free(&r);
    r = fdbt_raw("POST", "/fake/clock/set", NULL, "application/json", NULL, "{\"now_ms\":1800000000000}", 24);
    ck_assert_int_eq(r.status, 200);
    fdbt_free(&r);
    ck_assert_int_eq(fakedb_clock_now_ms(fdbt_db), 1800000000000LL);
    ck_assert_int_eq(fakedb_clock_advance(fdbt_db, -1), FAKEDB_EINVAL);
    r = fdbt_raw("POST", "/fake/clock/advance", NULL, "application/json", NULL, "nonsense", 8);
    ck_assert_int_eq(r.status, 400);
    fdbt_free(&r);
    r = fdbt_raw("GET", "/fake/nothing", NULL, NULL, NULL, NULL, 0);
    ck_assert_int_eq(r.status, 404);
    fdbt_free(&r);
}
END_TEST

typedef struct waiter_arg {
    char path[128];
    fdbt_resp r;
} waiter_arg;

static void *waiter_main(void *p)
{
    waiter_arg *a = p;
    a->r = fdbt_raw("GET", a->path, NULL, NULL, NULL, NULL, 0);
    return NULL;
}

START_TEST(clock_long_poll)
{
    waiter_arg a;
    memset(&a, 0, sizeof a);
    snprintf(a.path, sizeof a.path, "/fake/clock/wait?until_ms=%lld&timeout_ms=20000", 1700000005000LL);
    pthread_t th;
    pthread_create(&th, NULL, waiter_main, &a);
    /* the poll answers once the clock gets there, whether it is parked before or after */
    for (int i = 0; i < 5; i++)
        ck_assert_int_eq(fakedb_clock_advance(fdbt_db, 1000), 0);
    pthread_join(th, NULL);
    ck_assert_int_eq(a.r.status, 200);
    ck_assert(json_object_get_boolean(fdbt_get(a.r.json, "reached")));
    ck_assert_int_ge(json_object_get_int64(fdbt_get(a.r.json, "now_ms")), 1700000005000LL);
    fdbt_free(&a.r);
    /* the timeout runs on real time */
    int64_t t0 = dl_check_mono_ms();
    fdbt_resp r = fdbt_raw("GET", "/fake/clock/wait?until_ms=1900000000000&timeout_ms=100", NULL, NULL, NULL, NULL, 0);
    ck_assert_int_eq(r.status, 200);
    ck_assert(!json_object_get_boolean(fdbt_get(r.json, "reached")));
    ck_assert_int_ge(dl_check_mono_ms() - t0, 100);
    fdbt_free(&r);
    r = fdbt_raw("GET", "/fake/clock/wait?timeout_ms=100", NULL, NULL, NULL, NULL, 0);
    ck_assert_int_eq(r.status, 400);
    fdbt_free(&r);
}
END_TEST

START_TEST(ttl_follows_clock)
{
    fdbt_resp r = fdbt_call("UpdateTimeToLive", "{\"TableName\":\"Locks\",\"TimeToLiveSpecification\":{\"Enabled\":true,\"AttributeName\":\"exp\"}}");
    ck_assert_int_eq(r.status, 200);
    ck_assert(json_object_get_boolean(fdbt_get(r.json, "TimeToLiveSpecification.Enabled")));
    fdbt_free(&r);
    r = fdbt_call("DescribeTimeToLive", "{\"TableName\":\"Locks\"}");
    ck_assert_str_eq(fdbt_str(&r, "TimeToLiveDescription.TimeToLiveStatus"), "ENABLED");
    ck_assert_str_eq(fdbt_str(&r, "TimeToLiveDescription.AttributeName"), "exp");
    fdbt_free(&r);
    r = fdbt_call("UpdateTimeToLive", "{\"TableName\":\"Locks\",\"TimeToLiveSpecification\":{\"Enabled\":true,\"AttributeName\":\"exp\"}}");
    ck_assert_str_eq(fdbt_error(&r), "ValidationException");
    fdbt_free(&r);
    r = fdbt_call("UpdateTimeToLive", "{\"TableName\":\"Locks\",\"TimeToLiveSpecification\":{\"Enabled\":false,\"AttributeName\":\"other\"}}");
    ck_assert_str_eq(fdbt_message(&r), "TimeToLive is active on a different AttributeName: current AttributeName is exp");
    fdbt_free(&r);
    r = fdbt_call("DescribeTimeToLive", "{\"TableName\":\"Nope\"}");
    ck_assert_str_eq(fdbt_error(&r), "ResourceNotFoundException");
    ck_assert_str_eq(fdbt_message(&r), "Requested resource not found: Table: Nope not found");
    fdbt_free(&r);
    int64_t now_s = 1700000000;
    char body[256];
    const char *names[3] = { "soon", "later", "notnum" };
    for (int i = 0; i < 3; i++) {
        if (i < 2)
            snprintf(body, sizeof body, "{\"TableName\":\"Locks\",\"Item\":{\"pk\":{\"S\":\"%s\"},\"exp\":{\"N\":\"%lld\"}}}",
                     names[i], (long long)(now_s + (i ? 600 : 60)));
        else
            snprintf(body, sizeof body, "{\"TableName\":\"Locks\",\"Item\":{\"pk\":{\"S\":\"%s\"},\"exp\":{\"S\":\"%lld\"}}}",
                     names[i], (long long)now_s);
        r = fdbt_call("PutItem", body);
        ck_assert_int_eq(r.status, 200);
        fdbt_free(&r);
    }
    ck_assert_int_eq(fakedb_clock_advance(fdbt_db, 59 * 1000), 0);
    r = fdbt_call("Scan", "{\"TableName\":\"Locks\",\"Select\":\"COUNT\"}");
    ck_assert_int_eq(json_object_get_int(fdbt_get(r.json, "Count")), 3);
    fdbt_free(&r);
    ck_assert_int_eq(fakedb_clock_advance(fdbt_db, 1000), 0);
    r = fdbt_call("Scan", "{\"TableName\":\"Locks\"}");
    ck_assert_int_eq(json_object_get_int(fdbt_get(r.json, "Count")), 2);
    fdbt_free(&r);
    r = fdbt_call("GetItem", "{\"TableName\":\"Locks\",\"Key\":{\"pk\":{\"S\":\"soon\"}}}");
    ck_assert_ptr_null(fdbt_get(r.json, "Item"));
    fdbt_free(&r);
}
END_TEST

START_TEST(fault_error_and_count)
{
    fakedb_fault f = { .kind = FAKEDB_FAULT_ERROR, .operation = "PutItem", .table = "Locks", .key = "k1", .count = 2 };
    long id = fakedb_fault_add(fdbt_db, &f);
    ck_assert_int_gt(id, 0);
    const char *put1 = "{\"TableName\":\"Locks\",\"Item\":{\"pk\":{\"S\":\"k1\"}}}";
    const char *put2 = "{\"TableName\":\"Locks\",\"Item\":{\"pk\":{\"S\":\"k2\"}}}";
    fdbt_resp r = fdbt_call("PutItem", put2);
    ck_assert_int_eq(r.status, 200);    /* another key */
    fdbt_free(&r);
    for (int i = 0; i < 2; i++) {
        r = fdbt_call("PutItem", put1);
        ck_assert_int_eq(r.status, 400);
        ck_assert_str_eq(fdbt_error(&r), "ProvisionedThroughputExceededException");
        fdbt_free(&r);
    }
    r = fdbt_call("GetItem", "{\"TableName\":\"Locks\",\"Key\":{\"pk\":{\"S\":\"k1\"}}}");
    ck_assert_ptr_null(fdbt_get(r.json, "Item"));  /* not applied */
    fdbt_free(&r);
    r = fdbt_call("PutItem", put1);
    ck_assert_int_eq(r.status, 200);    /* the count is spent */
    fdbt_free(&r);
    /* 500 by the admin endpoint */
    const char *f500 = "{\"kind\":\"error\",\"operation\":\"GetItem\",\"error_type\":\"InternalServerError\"}";
    r = fdbt_raw("POST", "/fake/faults", NULL, "application/json", NULL, f500, strlen(f500));
    ck_assert_int_eq(r.status, 200);
    ck_assert_int_gt(json_object_get_int(fdbt_get(r.json, "id")), 0);
    fdbt_free(&r);
    r = fdbt_raw("GET", "/fake/faults", NULL, NULL, NULL, NULL, 0);
    ck_assert_int_eq(json_object_array_length(fdbt_get(r.json, "faults")), 1);
    fdbt_free(&r);
    r = fdbt_call("GetItem", "{\"TableName\":\"Locks\",\"Key\":{\"pk\":{\"S\":\"k1\"}}}");
    ck_assert_int_eq(r.status, 500);
    ck_assert_str_eq(fdbt_error(&r), "InternalServerError");
    fdbt_free(&r);
    r = fdbt_raw("DELETE", "/fake/faults", NULL, NULL, NULL, NULL, 0);
    fdbt_free(&r);
    r = fdbt_call("GetItem", "{\"TableName\":\"Locks\",\"Key\":{\"pk\":{\"S\":\"k1\"}}}");
    ck_assert_int_eq(r.status, 200);
    fdbt_free(&r);
    f.kind = 99;
    ck_assert_int_eq(fakedb_fault_add(fdbt_db, &f), FAKEDB_EINVAL);
}
END_TEST

START_TEST(fault_lost_response_applies_write)
{
    fakedb_fault f = { .kind = FAKEDB_FAULT_LOST_RESPONSE, .operation = "PutItem", .count = 1 };
    ck_assert_int_gt(fakedb_fault_add(fdbt_db, &f), 0);
    fdbt_resp r = fdbt_call("PutItem", "{\"TableName\":\"Locks\",\"Item\":{\"pk\":{\"S\":\"lost\"},\"v\":{\"S\":\"1\"}}}");
    ck_assert_int_eq(r.status, 0);
    ck_assert_int_ne(r.curl_code, CURLE_OK);
    fdbt_free(&r);
    r = fdbt_call("GetItem", "{\"TableName\":\"Locks\",\"Key\":{\"pk\":{\"S\":\"lost\"}}}");
    ck_assert_int_eq(r.status, 200);
    ck_assert_str_eq(fdbt_str(&r, "Item.v.S"), "1");
    fdbt_free(&r);
}
END_TEST

START_TEST(fault_delay_and_stats)
{
    fakedb_fault f = { .kind = FAKEDB_FAULT_DELAY, .operation = "GetItem", .delay_ms = 300, .count = 1 };
    ck_assert_int_gt(fakedb_fault_add(fdbt_db, &f), 0);
    int64_t t0 = dl_check_mono_ms();
    fdbt_resp r = fdbt_call("GetItem", "{\"TableName\":\"Locks\",\"Key\":{\"pk\":{\"S\":\"x\"}}}");
    ck_assert_int_eq(r.status, 200);
    ck_assert_int_ge(dl_check_mono_ms() - t0, 300);
    fdbt_free(&r);
    ck_assert_int_eq(fakedb_get_stats(fdbt_db, "GetItem").requests, 1);
    r = fdbt_raw("GET", "/fake/stats", NULL, NULL, NULL, NULL, 0);
    ck_assert_int_eq(json_object_get_int(fdbt_get(r.json, "operations.GetItem.requests")), 1);
    ck_assert_int_eq(json_object_get_int(fdbt_get(r.json, "operations.CreateTable.requests")), 1);
    fdbt_free(&r);
    r = fdbt_raw("POST", "/fake/reset", NULL, NULL, NULL, NULL, 0);
    ck_assert_int_eq(r.status, 200);
    fdbt_free(&r);
    ck_assert_int_eq(fakedb_get_stats(fdbt_db, NULL).requests, 0);
    r = fdbt_call("ListTables", "{}");
    ck_assert_int_eq(json_object_array_length(fdbt_get(r.json, "TableNames")), 0);
    fdbt_free(&r);
}
END_TEST

START_TEST(durable_file_survives_restart)
{
    char dir[] = "/tmp/fakedb-test-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    char path[128];
    snprintf(path, sizeof path, "%s/data.db", dir);
    fdbt_stop();
    fdbt_start(path);
    fdbt_table("Durable", "sk", "S");
    fdbt_resp r = fdbt_call("PutItem", "{\"TableName\":\"Durable\",\"Item\":{\"pk\":{\"S\":\"a\"},\"sk\":{\"S\":\"b\"},\"v\":{\"N\":\"42\"}}}");
    ck_assert_int_eq(r.status, 200);
    fdbt_free(&r);
    r = fdbt_call("UpdateTimeToLive", "{\"TableName\":\"Durable\",\"TimeToLiveSpecification\":{\"Enabled\":true,\"AttributeName\":\"exp\"}}");
    fdbt_free(&r);
    fdbt_stop();
    fdbt_start(path);
    r = fdbt_call("GetItem", "{\"TableName\":\"Durable\",\"Key\":{\"pk\":{\"S\":\"a\"},\"sk\":{\"S\":\"b\"}}}");
    ck_assert_int_eq(r.status, 200);
    ck_assert_str_eq(fdbt_str(&r, "Item.v.N"), "42");
    fdbt_free(&r);
    r = fdbt_call("DescribeTable", "{\"TableName\":\"Durable\"}");
    ck_assert_int_eq(json_object_get_int(fdbt_get(r.json, "Table.ItemCount")), 1);
    fdbt_free(&r);
    r = fdbt_call("DescribeTimeToLive", "{\"TableName\":\"Durable\"}");
    ck_assert_str_eq(fdbt_str(&r, "TimeToLiveDescription.TimeToLiveStatus"), "ENABLED");
    fdbt_free(&r);
    fdbt_stop();
    fdbt_start(NULL);
    fdbt_remove_dir(dir);
}
END_TEST

/* Enough writes for the WAL to pass the checkpointer's threshold (1,000 pages: 4.8 MB,
 * new keys only, so that no write reads a large old item and the test stays quick under
 * the sanitizers): every item reads back after a restart, and the stop (the main
 * connection closing last) still folds the WAL into the file and removes it. */
START_TEST(durable_file_past_checkpoints)
{
    char dir[] = "/tmp/fakedb-test-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    char path[128], wal[160];
    snprintf(path, sizeof path, "%s/data.db", dir);
    snprintf(wal, sizeof wal, "%s-wal", path);
    enum { ITEMS = 48, VALUE = 100 * 1024 };
    char *value = malloc(VALUE + 1), *body = malloc(VALUE + 256);
    ck_assert_ptr_nonnull(value);
    ck_assert_ptr_nonnull(body);
    fdbt_stop();
    fdbt_start(path);
    fdbt_table("Big", NULL, NULL);
    for (int i = 0; i < ITEMS; i++) {
        memset(value, 'a' + i % 26, VALUE);
        value[VALUE] = 0;
        snprintf(body, VALUE + 256, "{\"TableName\":\"Big\",\"Item\":{\"pk\":{\"S\":\"k%d\"},"
                 "\"n\":{\"N\":\"%d\"},\"v\":{\"S\":\"%s\"}}}", i, i, value);
        fdbt_resp r = fdbt_call("PutItem", body);
        ck_assert_int_eq(r.status, 200);
        fdbt_free(&r);
    }
    fdbt_stop();
    struct stat sb;
    ck_assert_int_ne(stat(path, &sb), -1);
    ck_assert_int_gt(sb.st_size, ITEMS * VALUE);  /* the data is in the file itself */
    ck_assert_int_eq(stat(wal, &sb), -1);         /* and the WAL is gone */
    fdbt_start(path);
    for (int i = 0; i < ITEMS; i++) {
        snprintf(body, VALUE + 256, "{\"TableName\":\"Big\",\"Key\":{\"pk\":{\"S\":\"k%d\"}}}", i);
        fdbt_resp r = fdbt_call("GetItem", body);
        ck_assert_int_eq(r.status, 200);
        char n[16];
        snprintf(n, sizeof n, "%d", i);
        ck_assert_str_eq(fdbt_str(&r, "Item.n.N"), n);
        const char *v = fdbt_str(&r, "Item.v.S");
        ck_assert_uint_eq(strlen(v), VALUE);
        ck_assert_int_eq(v[0], 'a' + i % 26);
        ck_assert_int_eq(v[VALUE - 1], 'a' + i % 26);
        fdbt_free(&r);
    }
    fdbt_resp r = fdbt_call("DescribeTable", "{\"TableName\":\"Big\"}");
    ck_assert_int_eq(json_object_get_int(fdbt_get(r.json, "Table.ItemCount")), ITEMS);
    fdbt_free(&r);
    free(value);
    free(body);
    fdbt_stop();
    fdbt_start(NULL);
    fdbt_remove_dir(dir);
}
END_TEST

/* ---- the program ---- */

static long http_put(int port, const char *op, const char *body, char **out)
{
    CURL *c = curl_easy_init();
    char url[64], target[128];
    snprintf(url, sizeof url, "http://127.0.0.1:%d/", port);
    snprintf(target, sizeof target, "X-Amz-Target: DynamoDB_20120810.%s", op);
    struct curl_slist *hl = NULL;
    hl = curl_slist_append(hl, target);
    hl = curl_slist_append(hl, "Content-Type: " CT);
    hl = curl_slist_append(hl, "Authorization: " AUTH);
    hl = curl_slist_append(hl, "X-Amz-Date: 20231114T221320Z");
    char *buf = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&buf, &len);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, hl);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, mem);
    long status = 0;
    if (curl_easy_perform(c) == CURLE_OK)
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    fclose(mem);
    curl_slist_free_all(hl);
    curl_easy_cleanup(c);
    if (out)
        *out = buf;
    else
        free(buf);
    return status;
}

START_TEST(program_args_and_sigterm)
{
    char *bad[] = { fdbt_program(), "--port", "seventy", NULL };
    int fd;
    pid_t pid = fdbt_spawn(bad, &fd);
    int st;
    waitpid(pid, &st, 0);
    close(fd);
    ck_assert(WIFEXITED(st));
    ck_assert_int_eq(WEXITSTATUS(st), 64);
    char *unknown[] = { fdbt_program(), "--frob", NULL };
    pid = fdbt_spawn(unknown, &fd);
    waitpid(pid, &st, 0);
    close(fd);
    ck_assert_int_eq(WEXITSTATUS(st), 64);
    char *ver[] = { fdbt_program(), "--version", NULL };
    pid = fdbt_spawn(ver, &fd);
    waitpid(pid, &st, 0);
    close(fd);
    ck_assert_int_eq(WEXITSTATUS(st), 0);

    char pf[] = "/tmp/fakedb-port-XXXXXX";
    int pfd = mkstemp(pf);
    close(pfd);
    char *run[] = { fdbt_program(), "--port", "0", "--port-file", pf, "--clock", "fake:1700000000000", NULL };
    pid = fdbt_spawn(run, &fd);
    int port = fdbt_read_port(fd);
    ck_assert_int_gt(port, 0);
    FILE *f = fopen(pf, "r");
    int fport = 0;
    ck_assert_int_eq(fscanf(f, "%d", &fport), 1);
    fclose(f);
    unlink(pf);
    ck_assert_int_eq(fport, port);
    ck_assert_int_eq(http_put(port, "ListTables", "{}", NULL), 200);
    fdbt_stop_program(pid, fd);
}
END_TEST

/* POST /fake/clock/advance by ms on the program's server. */
static void advance(int port, long ms)
{
    CURL *c = curl_easy_init();
    char url[64], body[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%d/fake/clock/advance", port);
    snprintf(body, sizeof body, "{\"ms\":%ld}", ms);
    FILE *null = fopen("/dev/null", "w");
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, null);
    long status = 0;
    ck_assert_int_eq(curl_easy_perform(c), CURLE_OK);
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    ck_assert_int_eq(status, 200);
    fclose(null);
    curl_easy_cleanup(c);
}

/* DescribeTable's TableStatus and TableArn, as "STATUS ARN". */
static void describe(int port, const char *table, char *out, size_t n)
{
    char body[128], *text = NULL;
    snprintf(body, sizeof body, "{\"TableName\":\"%s\"}", table);
    ck_assert_int_eq(http_put(port, "DescribeTable", body, &text), 200);
    json_object *o = json_tokener_parse(text);
    snprintf(out, n, "%s %s", json_object_get_string(fdbt_get(o, "Table.TableStatus")),
             json_object_get_string(fdbt_get(o, "Table.TableArn")));
    json_object_put(o);
    free(text);
}

/* Whether a listener could take 127.0.0.1:port now. */
static bool port_free(int port)
{
    int s = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                             .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    bool ok = s >= 0 && bind(s, (struct sockaddr *)&a, sizeof a) == 0;
    if (s >= 0)
        close(s);
    return ok;
}

#define ORDERS_TABLE "{\"TableName\":\"Orders\",\"KeySchema\":[{\"AttributeName\":\"pk\",\"KeyType\":\"HASH\"}]," \
    "\"AttributeDefinitions\":[{\"AttributeName\":\"pk\",\"AttributeType\":\"S\"}],\"BillingMode\":\"PAY_PER_REQUEST\"}"

START_TEST(program_local_options)
{
    static char bad[][3][32] = {
        { "--account-id", "12345" }, { "--account-id", "12345678901x" },
        { "--delay-transient-statuses=0" }, { "--delay-transient-statuses=5s" }, { "--account-id" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        char *argv[] = { fdbt_program(), bad[i][0], bad[i][1][0] ? bad[i][1] : NULL, NULL };
        int fd, st;
        pid_t pid = fdbt_spawn(argv, &fd);
        waitpid(pid, &st, 0);
        close(fd);
        ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 64, "%s %s", bad[i][0], bad[i][1]);
    }
    /* --account-id and --delay-transient-statuses=MS, on the fake clock. */
    char *run[] = { fdbt_program(), "--port", "0", "--clock", "fake:1700000000000", "--account-id", "123456789012",
                    "--delay-transient-statuses=2000", NULL };
    int fd;
    pid_t pid = fdbt_spawn(run, &fd);
    int port = fdbt_read_port(fd);
    char got[512];
    ck_assert_int_eq(http_put(port, "CreateTable", ORDERS_TABLE, NULL), 200);
    describe(port, "Orders", got, sizeof got);
    ck_assert_str_eq(got, "CREATING arn:aws:dynamodb:us-east-1:123456789012:table/Orders");
    advance(port, 1999);
    describe(port, "Orders", got, sizeof got);
    ck_assert_str_eq(got, "CREATING arn:aws:dynamodb:us-east-1:123456789012:table/Orders");
    advance(port, 1);
    describe(port, "Orders", got, sizeof got);
    ck_assert_str_eq(got, "ACTIVE arn:aws:dynamodb:us-east-1:123456789012:table/Orders");
    fdbt_stop_program(pid, fd);
    /* The flag alone holds 5000 ms; no --port means DynamoDB Local's 8000 (checked when
     * 8000 is free on this machine). */
    bool default_port = port_free(8000);
    if (!default_port)
        fprintf(stderr, "program_local_options: 127.0.0.1:8000 is in use here; the default port is not checked\n");
    char *flag[] = { fdbt_program(), "--clock", "fake:1700000000000", "--delay-transient-statuses",
                     default_port ? NULL : "--port", "0", NULL };
    pid = fdbt_spawn(flag, &fd);
    port = fdbt_read_port(fd);
    if (default_port)
        ck_assert_int_eq(port, 8000);
    ck_assert_int_eq(http_put(port, "CreateTable", ORDERS_TABLE, NULL), 200);
    advance(port, 4999);
    describe(port, "Orders", got, sizeof got);
    ck_assert_str_eq(got, "CREATING arn:aws:dynamodb:us-east-1:000000000000:table/Orders");
    advance(port, 1);
    describe(port, "Orders", got, sizeof got);
    ck_assert_str_eq(got, "ACTIVE arn:aws:dynamodb:us-east-1:000000000000:table/Orders");
    fdbt_stop_program(pid, fd);
}
END_TEST

START_TEST(program_db_survives_sigkill)
{
    char dir[] = "/tmp/fakedb-kill-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    char path[128];
    snprintf(path, sizeof path, "%s/d.db", dir);
    char *run[] = { fdbt_program(), "--port", "0", "--db", path, NULL };
    int fd, st;
    pid_t pid = fdbt_spawn(run, &fd);
    int port = fdbt_read_port(fd);
    ck_assert_int_eq(http_put(port, "CreateTable", "{\"TableName\":\"K9s\",\"KeySchema\":[{\"AttributeName\":\"pk\",\"KeyType\":\"HASH\"}],"
                                                   "\"AttributeDefinitions\":[{\"AttributeName\":\"pk\",\"AttributeType\":\"S\"}],\"BillingMode\":\"PAY_PER_REQUEST\"}", NULL), 200);
    ck_assert_int_eq(http_put(port, "PutItem", "{\"TableName\":\"K9s\",\"Item\":{\"pk\":{\"S\":\"rex\"},\"v\":{\"S\":\"acked\"}}}", NULL), 200);
    kill(pid, SIGKILL);
    waitpid(pid, &st, 0);
    close(fd);
    pid = fdbt_spawn(run, &fd);
    port = fdbt_read_port(fd);
    char *out = NULL;
    ck_assert_int_eq(http_put(port, "GetItem", "{\"TableName\":\"K9s\",\"Key\":{\"pk\":{\"S\":\"rex\"}}}", &out), 200);
    ck_assert_ptr_nonnull(strstr(out, "acked"));
    free(out);
    kill(pid, SIGTERM);
    waitpid(pid, &st, 0);
    close(fd);
    ck_assert_int_eq(WEXITSTATUS(st), 0);
    fdbt_remove_dir(dir);
}
END_TEST


/* An unprocessed fault leaves the matching batch entries unapplied and returns them in
 * UnprocessedItems/UnprocessedKeys as sent; the client's retry of them then succeeds. */
START_TEST(fault_unprocessed_batches)
{
    fakedb_fault f = { .kind = FAKEDB_FAULT_UNPROCESSED, .operation = "BatchWriteItem", .table = "Locks", .key = "b", .count = 1 };
    ck_assert_int_gt(fakedb_fault_add(fdbt_db, &f), 0);
    const char *batch = "{\"RequestItems\":{\"Locks\":[{\"PutRequest\":{\"Item\":{\"pk\":{\"S\":\"a\"}}}},"
                        "{\"PutRequest\":{\"Item\":{\"pk\":{\"S\":\"b\"},\"v\":{\"N\":\"2\"}}}},{\"PutRequest\":{\"Item\":{\"pk\":{\"S\":\"c\"}}}}]}}";
    fdbt_resp r = fdbt_call("BatchWriteItem", batch);
    ck_assert_int_eq(r.status, 200);
    json_object *left = fdbt_get(r.json, "UnprocessedItems.Locks");
    ck_assert_ptr_nonnull(left);
    ck_assert_int_eq((int)json_object_array_length(left), 1);
    ck_assert_str_eq(json_object_get_string(fdbt_get(json_object_array_get_idx(left, 0), "PutRequest.Item.pk.S")), "b");
    ck_assert_str_eq(json_object_get_string(fdbt_get(json_object_array_get_idx(left, 0), "PutRequest.Item.v.N")), "2");
    /* the retry: the UnprocessedItems as the next request */
    json_object *retry = json_object_new_object();
    json_object_object_add(retry, "RequestItems", json_object_get(fdbt_get(r.json, "UnprocessedItems")));
    fdbt_free(&r);
    r = fdbt_call("Scan", "{\"TableName\":\"Locks\",\"Select\":\"COUNT\"}");
    ck_assert_int_eq(json_object_get_int(fdbt_get(r.json, "Count")), 2); /* a and c only */
    fdbt_free(&r);
    r = fdbt_call("BatchWriteItem", json_object_to_json_string(retry));
    json_object_put(retry);
    ck_assert_int_eq(r.status, 200);
    ck_assert_int_eq(json_object_object_length(fdbt_get(r.json, "UnprocessedItems")), 0);
    fdbt_free(&r);
    r = fdbt_call("GetItem", "{\"TableName\":\"Locks\",\"Key\":{\"pk\":{\"S\":\"b\"}}}");
    ck_assert_str_eq(fdbt_str(&r, "Item.v.N"), "2");
    fdbt_free(&r);

    /* BatchGetItem, through the admin endpoint, every key of the request: the keys come
     * back with the table's other parameters. */
    const char *fk = "{\"kind\":\"unprocessed\",\"operation\":\"BatchGetItem\",\"count\":1}";
    r = fdbt_raw("POST", "/fake/faults", NULL, "application/json", NULL, fk, strlen(fk));
    ck_assert_int_eq(r.status, 200);
    fdbt_free(&r);
    r = fdbt_raw("GET", "/fake/faults", NULL, NULL, NULL, NULL, 0);
    ck_assert_str_eq(json_object_get_string(fdbt_get(json_object_array_get_idx(fdbt_get(r.json, "faults"), 0), "kind")), "unprocessed");
    fdbt_free(&r);
    const char *get = "{\"RequestItems\":{\"Locks\":{\"Keys\":[{\"pk\":{\"S\":\"a\"}},{\"pk\":{\"S\":\"b\"}}],\"ProjectionExpression\":\"pk, v\",\"ConsistentRead\":true}}}";
    r = fdbt_call("BatchGetItem", get);
    ck_assert_int_eq(r.status, 200);
    ck_assert_int_eq((int)json_object_array_length(fdbt_get(r.json, "Responses.Locks")), 0);
    ck_assert_int_eq((int)json_object_array_length(fdbt_get(r.json, "UnprocessedKeys.Locks.Keys")), 2);
    ck_assert_str_eq(fdbt_str(&r, "UnprocessedKeys.Locks.ProjectionExpression"), "pk, v");
    ck_assert(json_object_get_boolean(fdbt_get(r.json, "UnprocessedKeys.Locks.ConsistentRead")));
    retry = json_object_new_object();
    json_object_object_add(retry, "RequestItems", json_object_get(fdbt_get(r.json, "UnprocessedKeys")));
    fdbt_free(&r);
    r = fdbt_call("BatchGetItem", json_object_to_json_string(retry));
    json_object_put(retry);
    ck_assert_int_eq((int)json_object_array_length(fdbt_get(r.json, "Responses.Locks")), 2);
    ck_assert_int_eq(json_object_object_length(fdbt_get(r.json, "UnprocessedKeys")), 0);
    fdbt_free(&r);
    /* A fault for another table or key leaves a batch alone (and is not spent). */
    fakedb_fault other = { .kind = FAKEDB_FAULT_UNPROCESSED, .table = "Other", .count = 1 };
    ck_assert_int_gt(fakedb_fault_add(fdbt_db, &other), 0);
    r = fdbt_call("BatchGetItem", get);
    ck_assert_int_eq((int)json_object_array_length(fdbt_get(r.json, "Responses.Locks")), 2);
    fdbt_free(&r);
    r = fdbt_raw("GET", "/fake/faults", NULL, NULL, NULL, NULL, 0);
    ck_assert_int_eq(json_object_get_int(fdbt_get(json_object_array_get_idx(fdbt_get(r.json, "faults"), 0), "fired")), 0);
    fdbt_free(&r);
}
END_TEST

/* n items into table, 25 per BatchWriteItem: item(i, arg) writes the i-th item's JSON. */
static void batch_put(const char *table, int n, void (*item)(char *out, size_t cap, int i, const void *arg),
                      const void *arg)
{
    char body[8192];
    for (int i = 0; i < n;) {
        size_t len = (size_t)snprintf(body, sizeof body, "{\"RequestItems\":{\"%s\":[", table);
        for (int j = 0; j < 25 && i < n; j++, i++) {
            len += (size_t)snprintf(body + len, sizeof body - len, "%s{\"PutRequest\":{\"Item\":", j ? "," : "");
            item(body + len, sizeof body - len, i, arg);
            len += strlen(body + len);
            len += (size_t)snprintf(body + len, sizeof body - len, "}}");
        }
        ck_assert_uint_lt(len + 3, sizeof body);
        snprintf(body + len, sizeof body - len, "]}}");
        fdbt_resp r = fdbt_call("BatchWriteItem", body);
        ck_assert_int_eq(r.status, 200);
        ck_assert_int_eq((int)json_object_object_length(fdbt_get(r.json, "UnprocessedItems")), 0);
        fdbt_free(&r);
    }
}

typedef struct expiring {
    const char *prefix;
    long long exp_s;
} expiring;

static void expiring_item(char *out, size_t cap, int i, const void *arg)
{
    const expiring *e = arg;
    snprintf(out, cap, "{\"pk\":{\"S\":\"%s%d\"},\"exp\":{\"N\":\"%lld\"}}", e->prefix, i, e->exp_s);
}

/* n items in table with exp = exp_s. */
static void put_expiring(const char *table, const char *prefix, int n, long long exp_s)
{
    expiring e = { prefix, exp_s };
    batch_put(table, n, expiring_item, &e);
}

static int scan_count(const char *table)
{
    char body[128];
    snprintf(body, sizeof body, "{\"TableName\":\"%s\",\"Select\":\"COUNT\"}", table);
    fdbt_resp r = fdbt_call("Scan", body);
    ck_assert_int_eq(r.status, 200);
    int n = json_object_get_int(fdbt_get(r.json, "Count"));
    fdbt_free(&r);
    return n;
}

/* The sweep deletes 1,000 items per transaction: 2,300 due items of one table (three
 * slices) and those of a second table all go at one clock move; one not yet due stays. */
START_TEST(ttl_sweeps_in_slices)
{
    fdbt_table("Second", NULL, NULL);
#define TTL_ON(t) "{\"TableName\":\"" t "\",\"TimeToLiveSpecification\":{\"Enabled\":true,\"AttributeName\":\"exp\"}}"
    fdbt_expect_ok("UpdateTimeToLive", TTL_ON("Locks"));
    fdbt_expect_ok("UpdateTimeToLive", TTL_ON("Second"));
#undef TTL_ON
    long long now_s = 1700000000;
    put_expiring("Locks", "due", 2300, now_s + 10);
    put_expiring("Locks", "later", 1, now_s + 3600);
    put_expiring("Second", "due", 7, now_s + 10);
    ck_assert_int_eq(scan_count("Locks"), 2301);
    ck_assert_int_eq(fakedb_clock_advance(fdbt_db, 10 * 1000), 0);
    ck_assert_int_eq(scan_count("Locks"), 1);
    ck_assert_int_eq(scan_count("Second"), 0);
    fdbt_resp r = fdbt_call("GetItem", "{\"TableName\":\"Locks\",\"Key\":{\"pk\":{\"S\":\"later0\"}}}");
    ck_assert_ptr_nonnull(fdbt_get(r.json, "Item"));
    fdbt_free(&r);
}
END_TEST

/* fakedb_deleted_items_pending from GET /fake/metrics; -1 when the scrape failed or has
 * no such line. Any thread: it asserts nothing. */
static long long pending_items(void)
{
    fdbt_resp r = fdbt_raw("GET", "/fake/metrics", NULL, NULL, NULL, NULL, 0);
    long long n = -1;
    const char *line = r.status == 200 && r.body ? strstr(r.body, "\nfakedb_deleted_items_pending ") : NULL;
    if (line)
        n = strtoll(line + strlen("\nfakedb_deleted_items_pending "), NULL, 10);
    fdbt_free(&r);
    return n;
}

static void gone_item(char *out, size_t cap, int i, const void *arg)
{
    (void)arg;
    snprintf(out, cap, "{\"pk\":{\"S\":\"p%d\"},\"sk\":{\"S\":\"s\"},\"g\":{\"S\":\"g%d\"}}", i, i % 7);
}

/* A table Gone (pk, sk) with an index on g and n items, each in the index. */
static void make_gone(int n)
{
    fdbt_expect_ok("CreateTable",
                   "{\"TableName\":\"Gone\",\"AttributeDefinitions\":[{\"AttributeName\":\"pk\",\"AttributeType\":\"S\"},"
                   "{\"AttributeName\":\"sk\",\"AttributeType\":\"S\"},{\"AttributeName\":\"g\",\"AttributeType\":\"S\"}],"
                   "\"KeySchema\":[{\"AttributeName\":\"pk\",\"KeyType\":\"HASH\"},{\"AttributeName\":\"sk\",\"KeyType\":\"RANGE\"}],"
                   "\"GlobalSecondaryIndexes\":[{\"IndexName\":\"byG\",\"KeySchema\":[{\"AttributeName\":\"g\",\"KeyType\":\"HASH\"}],"
                   "\"Projection\":{\"ProjectionType\":\"KEYS_ONLY\"}}],\"BillingMode\":\"PAY_PER_REQUEST\"}");
    batch_put("Gone", n, gone_item, NULL);
}

/* One integer from the file's sqlite (the server stopped). */
static long long file_count(const char *path, const char *sql)
{
    sqlite3 *f = NULL;
    sqlite3_stmt *st = NULL;
    ck_assert_int_eq(sqlite3_open_v2(path, &f, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    ck_assert_msg(sqlite3_prepare_v2(f, sql, -1, &st, NULL) == SQLITE_OK, "%s: %s", sql, sqlite3_errmsg(f));
    ck_assert_int_eq(sqlite3_step(st), SQLITE_ROW);
    long long n = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(f);
    return n;
}

#define ORPHAN_ITEMS "SELECT count(*) FROM fdb_items WHERE tid NOT IN (SELECT id FROM fdb_tables)"
#define ORPHAN_INDEX "SELECT count(*) FROM fdb_index WHERE tid NOT IN (SELECT id FROM fdb_tables)"

/* DeleteTable answers without removing the rows; on the fake clock they go at the next
 * clock move, in slices of 1,000 (2,100 items and 2,100 index rows: three of each). Until
 * then the mark survives a restart, and no table is given the deleted one's id: the
 * table made again after the restart (the deleted one had the only id) is empty. */
START_TEST(deleted_table_rows_go_on_clock_move)
{
    char dir[] = "/tmp/fakedb-test-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    char path[128];
    snprintf(path, sizeof path, "%s/data.db", dir);
    fdbt_stop();
    fdbt_start(path);
    ck_assert_int_eq(pending_items(), 0);
    make_gone(2100);
    fdbt_expect_ok("DeleteTable", "{\"TableName\":\"Gone\"}");
    ck_assert_int_eq(pending_items(), 2100);
    fdbt_stop();
    ck_assert_int_eq(file_count(path, "SELECT count(*) FROM fdb_tables"), 0);
    ck_assert_int_eq(file_count(path, ORPHAN_ITEMS), 2100);
    ck_assert_int_eq(file_count(path, ORPHAN_INDEX), 2100);
    long long gone_id = file_count(path, "SELECT tid FROM fdb_purge");

    fdbt_start(path);
    ck_assert_int_eq(pending_items(), 2100);
    fdbt_table("Gone", "sk", "S");
    fdbt_resp r = fdbt_call("Scan", "{\"TableName\":\"Gone\"}");
    ck_assert_int_eq(json_object_get_int(fdbt_get(r.json, "Count")), 0);
    fdbt_free(&r);
    fdbt_expect_ok("PutItem", "{\"TableName\":\"Gone\",\"Item\":{\"pk\":{\"S\":\"p1\"},\"sk\":{\"S\":\"new\"}}}");
    r = fdbt_raw("POST", "/fake/clock/advance", NULL, "application/json", NULL, "{\"ms\":0}", 8);
    ck_assert_int_eq(r.status, 200);
    fdbt_free(&r);
    ck_assert_int_eq(pending_items(), 0);
    r = fdbt_call("Scan", "{\"TableName\":\"Gone\"}");
    ck_assert_int_eq(json_object_get_int(fdbt_get(r.json, "Count")), 1);
    ck_assert_str_eq(fdbt_str(&r, "Items.0.sk.S"), "new");
    fdbt_free(&r);
    fdbt_stop();
    ck_assert_int_eq(file_count(path, ORPHAN_ITEMS), 0);
    ck_assert_int_eq(file_count(path, ORPHAN_INDEX), 0);
    ck_assert_int_eq(file_count(path, "SELECT count(*) FROM fdb_purge"), 0);
    ck_assert_int_gt(file_count(path, "SELECT id FROM fdb_tables WHERE name = 'Gone'"), gone_id);
    ck_assert_int_eq(file_count(path, "SELECT count(*) FROM fdb_items"), 1);
    fdbt_start(NULL);
    fdbt_remove_dir(dir);
}
END_TEST

/* With the system clock the server removes them by itself (it looks once a second): the
 * test waits for the gauge to reach 0, up to 30 s. /fake/reset drops the marks too. */
START_TEST(deleted_table_rows_go_by_themselves)
{
    fdbt_stop();
    fakedb_options o = { 0 };
    fdbt_start_opts(&o);
    make_gone(1500);
    fdbt_expect_ok("DeleteTable", "{\"TableName\":\"Gone\"}");
    long long n = pending_items();
    ck_assert_int_ge(n, 0);
    ck_assert_int_le(n, 1500);
    struct timespec start, now;
    clock_gettime(CLOCK_MONOTONIC, &start);
    const struct timespec tick = { 0, 20 * 1000000L };
    while ((n = pending_items()) > 0) {
        clock_gettime(CLOCK_MONOTONIC, &now);
        ck_assert_msg(now.tv_sec - start.tv_sec < 30, "%lld items of the deleted table are still there after 30 s", n);
        nanosleep(&tick, NULL);
    }
    ck_assert_int_eq(n, 0);
    make_gone(10);
    fdbt_expect_ok("DeleteTable", "{\"TableName\":\"Gone\"}");
    fdbt_resp r = fdbt_raw("POST", "/fake/reset", NULL, NULL, NULL, NULL, 0);
    ck_assert_int_eq(r.status, 200);
    fdbt_free(&r);
    ck_assert_int_eq(pending_items(), 0);
    fdbt_stop();
    fdbt_start(NULL);
}
END_TEST

static Suite *protocol_suite(void)
{
    Suite *s = suite_create("fakedb_protocol");
    TCase *tc = tcase_create("protocol");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, protocol_errors);
    tcase_add_test(tc, request_over_16mb);
    tcase_add_test(tc, sigv4_verification);
    suite_add_tcase(s, tc);
    return s;
}

static Suite *admin_suite(void)
{
    Suite *s = suite_create("fakedb_admin");
    TCase *tc = tcase_create("admin");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, admin_clock);
    tcase_add_test(tc, clock_long_poll);
    tcase_add_test(tc, ttl_follows_clock);
    tcase_add_test(tc, ttl_sweeps_in_slices);
    tcase_add_test(tc, fault_error_and_count);
    tcase_add_test(tc, fault_lost_response_applies_write);
    tcase_add_test(tc, fault_delay_and_stats);
    tcase_add_test(tc, fault_unprocessed_batches);
    tcase_add_test(tc, durable_file_survives_restart);
    tcase_add_test(tc, durable_file_past_checkpoints);
    tcase_add_test(tc, deleted_table_rows_go_on_clock_move);
    tcase_add_test(tc, deleted_table_rows_go_by_themselves);
    suite_add_tcase(s, tc);
    return s;
}

static Suite *program_suite(void)
{
    Suite *s = suite_create("fakedb_program");
    TCase *tc = tcase_create("program");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, program_args_and_sigterm);
    tcase_add_test(tc, program_db_survives_sigkill);
    tcase_add_test(tc, program_local_options);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    curl_global_init(CURL_GLOBAL_DEFAULT);
    SRunner *sr = srunner_create(protocol_suite());
    srunner_add_suite(sr, admin_suite());
    srunner_add_suite(sr, program_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    curl_global_cleanup();
    return failed ? 1 : 0;
}
