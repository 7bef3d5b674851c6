/* test_load.c: fakedb under load (issue 26). Writes from many connections at once, in
 * memory and with a file: every acknowledged write is there, before and after a restart;
 * a failed condition or a cancelled transaction leaves the writes around it alone;
 * TransactWriteItems stays all-or-nothing and isolated from TransactGetItems. Query and
 * Scan pages, whose items are copied from their stored JSON: the same items as GetItem
 * answers, hostile strings included, and the same pages. */
#include "fdbt.h"

#include "dl_check.h"

#include <check.h>
#include <curl/curl.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { THREADS = 6, ROUNDS = 40 };

static char g_dir[64], g_path[128];

/* Loop 0: in memory; loop 1: with a file. */
static void start(int loop)
{
    g_path[0] = 0;
    if (loop == 1) {
        snprintf(g_dir, sizeof g_dir, "/tmp/fakedb-load-XXXXXX");
        ck_assert_ptr_nonnull(mkdtemp(g_dir));
        snprintf(g_path, sizeof g_path, "%s/data.db", g_dir);
    }
    fakedb_options o = { .fake_clock = true, .fake_clock_start_ms = 1700000000000LL,
                         .db_path = g_path[0] ? g_path : NULL, .threads = 4 };
    fdbt_start_opts(&o);
}

static void restart(void)
{
    if (!g_path[0])
        return;
    fdbt_stop();
    fdbt_start(g_path);
}

static void finish(void)
{
    fdbt_stop();
    if (g_path[0]) {
        char cmd[128];
        snprintf(cmd, sizeof cmd, "rm -rf %s", g_dir);
        ck_assert_int_eq(system(cmd), 0);
    }
}

typedef struct worker {
    int id;
    int failures;           /* answers other than the expected one */
    int done;               /* successful transactions */
    char what[256];         /* the first failure */
} worker;

static void note_failure(worker *w, const char *what, const fdbt_resp *r)
{
    if (w->failures++ == 0)
        snprintf(w->what, sizeof w->what, "%s: %ld %s", what, r->status, r->body ? r->body : "");
}

static void *writes(void *arg)
{
    worker *w = arg;
    char body[512];
    for (int j = 0; j < ROUNDS; j++) {
        fdbt_resp r = fdbt_call("UpdateItem", "{\"TableName\":\"Grp\",\"Key\":{\"pk\":{\"S\":\"counter\"}},"
                                "\"UpdateExpression\":\"ADD n :one\","
                                "\"ExpressionAttributeValues\":{\":one\":{\"N\":\"1\"}}}");
        if (r.status != 200)
            note_failure(w, "UpdateItem", &r);
        fdbt_free(&r);
        snprintf(body, sizeof body, "{\"TableName\":\"Grp\",\"Item\":{\"pk\":{\"S\":\"t%d-%d\"},"
                 "\"v\":{\"N\":\"%d\"}}}", w->id, j, j);
        r = fdbt_call("PutItem", body);
        if (r.status != 200)
            note_failure(w, "PutItem", &r);
        fdbt_free(&r);
        /* fails its condition (the counter exists): rolled back alone */
        r = fdbt_call("PutItem", "{\"TableName\":\"Grp\",\"Item\":{\"pk\":{\"S\":\"counter\"},"
                      "\"n\":{\"N\":\"-1\"}},\"ConditionExpression\":\"attribute_not_exists(pk)\"}");
        if (r.status != 400 || strcmp(fdbt_error(&r), "ConditionalCheckFailedException"))
            note_failure(w, "conditional PutItem", &r);
        fdbt_free(&r);
    }
    return NULL;
}

static void check_writes(void)
{
    fdbt_resp r = fdbt_call("GetItem", "{\"TableName\":\"Grp\",\"Key\":{\"pk\":{\"S\":\"counter\"}},\"ConsistentRead\":true}");
    ck_assert_int_eq(r.status, 200);
    ck_assert_int_eq(atoi(fdbt_str(&r, "Item.n.N")), THREADS * ROUNDS);
    fdbt_free(&r);
    r = fdbt_call("Scan", "{\"TableName\":\"Grp\",\"Select\":\"COUNT\"}");
    ck_assert_int_eq(r.status, 200);
    ck_assert_int_eq(json_object_get_int(fdbt_get(r.json, "Count")), THREADS * ROUNDS + 1);
    fdbt_free(&r);
    r = fdbt_call("DescribeTable", "{\"TableName\":\"Grp\"}");
    ck_assert_int_eq(json_object_get_int(fdbt_get(r.json, "Table.ItemCount")), THREADS * ROUNDS + 1);
    fdbt_free(&r);
    char body[256];
    for (int i = 0; i < THREADS; i++) {
        snprintf(body, sizeof body, "{\"TableName\":\"Grp\",\"Key\":{\"pk\":{\"S\":\"t%d-%d\"}}}", i, ROUNDS - 1);
        r = fdbt_call("GetItem", body);
        ck_assert_int_eq(atoi(fdbt_str(&r, "Item.v.N")), ROUNDS - 1);
        fdbt_free(&r);
    }
}

/* Writes from six connections at once, a third of them failing their condition: every
 * acknowledged write is there, and stays there across a restart on the same file. */
START_TEST(writes_from_many_connections)
{
    start(_i);
    fdbt_table("Grp", NULL, NULL);
    pthread_t th[THREADS];
    worker w[THREADS];
    memset(w, 0, sizeof w);
    for (int i = 0; i < THREADS; i++) {
        w[i].id = i;
        ck_assert_int_eq(pthread_create(&th[i], NULL, writes, &w[i]), 0);
    }
    for (int i = 0; i < THREADS; i++) {
        pthread_join(th[i], NULL);
        ck_assert_msg(w[i].failures == 0, "worker %d: %d failures, first %s", i, w[i].failures, w[i].what);
    }
    check_writes();
    restart();
    check_writes();
    finish();
}
END_TEST

#define TOTAL 1000

/* Moves 1 from x to y in one transaction; every other one also carries a Put of a
 * "ghost" item and a ConditionCheck that fails, so that none of it may be seen. */
static void *transfers(void *arg)
{
    worker *w = arg;
    for (int j = 0; j < ROUNDS; j++) {
        bool bad = (j + w->id) % 2 == 0;
        char body[1024];
        snprintf(body, sizeof body,
                 "{\"TransactItems\":["
                 "{\"Update\":{\"TableName\":\"Txn\",\"Key\":{\"pk\":{\"S\":\"x\"}},\"UpdateExpression\":\"SET v = v - :one\","
                 "\"ConditionExpression\":\"v >= :one\",\"ExpressionAttributeValues\":{\":one\":{\"N\":\"1\"}}}},"
                 "{\"Update\":{\"TableName\":\"Txn\",\"Key\":{\"pk\":{\"S\":\"y\"}},\"UpdateExpression\":\"SET v = v + :one\","
                 "\"ExpressionAttributeValues\":{\":one\":{\"N\":\"1\"}}}}%s]}",
                 bad ? ",{\"Put\":{\"TableName\":\"Txn\",\"Item\":{\"pk\":{\"S\":\"ghost\"}}}},"
                       "{\"ConditionCheck\":{\"TableName\":\"Txn\",\"Key\":{\"pk\":{\"S\":\"z\"}},"
                       "\"ConditionExpression\":\"attribute_exists(nothing)\"}}" : "");
        fdbt_resp r = fdbt_call("TransactWriteItems", body);
        if (!bad && r.status == 200)
            w->done++;
        else if (!bad || r.status != 400 || strcmp(fdbt_error(&r), "TransactionCanceledException"))
            note_failure(w, "TransactWriteItems", &r);
        fdbt_free(&r);
    }
    return NULL;
}

static int value_of(json_object *resp, int i)
{
    json_object *n = fdbt_get(resp, i == 0 ? "Responses.0.Item.v.N" : "Responses.1.Item.v.N");
    return n ? atoi(json_object_get_string(n)) : -1;
}

typedef struct reader {
    worker w;
    volatile int *stop;
    int reads;
} reader;

/* x + y read in one TransactGetItems is always TOTAL, and no ghost is ever there. */
static void *sums(void *arg)
{
    reader *rd = arg;
    while (!__atomic_load_n(rd->stop, __ATOMIC_ACQUIRE) || rd->reads == 0) {
        fdbt_resp r = fdbt_call("TransactGetItems", "{\"TransactItems\":["
                                "{\"Get\":{\"TableName\":\"Txn\",\"Key\":{\"pk\":{\"S\":\"x\"}}}},"
                                "{\"Get\":{\"TableName\":\"Txn\",\"Key\":{\"pk\":{\"S\":\"y\"}}}},"
                                "{\"Get\":{\"TableName\":\"Txn\",\"Key\":{\"pk\":{\"S\":\"ghost\"}}}}]}");
        if (r.status != 200 || value_of(r.json, 0) + value_of(r.json, 1) != TOTAL ||
            fdbt_get(r.json, "Responses.2.Item"))
            note_failure(&rd->w, "TransactGetItems", &r);
        rd->reads++;
        fdbt_free(&r);
    }
    return NULL;
}

static void check_transfers(int done)
{
    fdbt_resp r = fdbt_call("TransactGetItems", "{\"TransactItems\":["
                            "{\"Get\":{\"TableName\":\"Txn\",\"Key\":{\"pk\":{\"S\":\"x\"}}}},"
                            "{\"Get\":{\"TableName\":\"Txn\",\"Key\":{\"pk\":{\"S\":\"y\"}}}}]}");
    ck_assert_int_eq(r.status, 200);
    ck_assert_int_eq(value_of(r.json, 0), TOTAL - done);
    ck_assert_int_eq(value_of(r.json, 1), done);
    fdbt_free(&r);
    r = fdbt_call("GetItem", "{\"TableName\":\"Txn\",\"Key\":{\"pk\":{\"S\":\"ghost\"}}}");
    ck_assert_int_eq(r.status, 200);
    ck_assert_ptr_null(fdbt_get(r.json, "Item"));
    fdbt_free(&r);
}

/* TransactWriteItems from four connections while two others read both items in one
 * TransactGetItems: each reader always sees the sum whole, and the cancelled
 * transactions, interleaved with the others, leave nothing behind. */
START_TEST(transactions_isolated_under_load)
{
    start(_i);
    fdbt_table("Txn", NULL, NULL);
    fdbt_resp r = fdbt_call("PutItem", "{\"TableName\":\"Txn\",\"Item\":{\"pk\":{\"S\":\"x\"},\"v\":{\"N\":\"1000\"}}}");
    ck_assert_int_eq(r.status, 200);
    fdbt_free(&r);
    r = fdbt_call("PutItem", "{\"TableName\":\"Txn\",\"Item\":{\"pk\":{\"S\":\"y\"},\"v\":{\"N\":\"0\"}}}");
    ck_assert_int_eq(r.status, 200);
    fdbt_free(&r);
    enum { WRITERS = 4, READERS = 2 };
    pthread_t wt[WRITERS], rt[READERS];
    worker w[WRITERS];
    reader rd[READERS];
    volatile int stop = 0;
    memset(w, 0, sizeof w);
    memset(rd, 0, sizeof rd);
    for (int i = 0; i < READERS; i++) {
        rd[i].stop = &stop;
        ck_assert_int_eq(pthread_create(&rt[i], NULL, sums, &rd[i]), 0);
    }
    for (int i = 0; i < WRITERS; i++) {
        w[i].id = i;
        ck_assert_int_eq(pthread_create(&wt[i], NULL, transfers, &w[i]), 0);
    }
    int done = 0;
    for (int i = 0; i < WRITERS; i++) {
        pthread_join(wt[i], NULL);
        ck_assert_msg(w[i].failures == 0, "writer %d: %d failures, first %s", i, w[i].failures, w[i].what);
        done += w[i].done;
    }
    __atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
    for (int i = 0; i < READERS; i++) {
        pthread_join(rt[i], NULL);
        ck_assert_msg(rd[i].w.failures == 0, "reader %d: %d failures, first %s", i, rd[i].w.failures, rd[i].w.what);
        ck_assert_int_gt(rd[i].reads, 0);
    }
    ck_assert_int_eq(done, WRITERS * ROUNDS / 2);
    check_transfers(done);
    restart();
    check_transfers(done);
    finish();
}
END_TEST

/* Items whose stored JSON has every kind of escape, and 100 KB ones for the 1 MB page. */
static const char *const k_hostile[] = {
    "{\"S\":\"quote \\\" backslash \\\\ slash / tab \\t nl \\n ctl \\u0001 del \\u007f\"}",
    "{\"S\":\"\\u00e9t\\u00e9 \\u2028 \\ud83d\\ude00 \\u0000 end\"}",
    ("{\"M\":{\"a\":{\"L\":[{\"N\":\"-1.5\"},{\"B\":\"AAEC/w==\"},{\"NULL\":true},{\"BOOL\":false}]},"
     "\"\\\"k\\\"\":{\"SS\":[\"x\",\"y\"]}}}"),
};

static void put_page_items(int n_big)
{
    char body[512];
    for (size_t i = 0; i < sizeof k_hostile / sizeof *k_hostile; i++) {
        snprintf(body, sizeof body, "{\"TableName\":\"Pages\",\"Item\":{\"pk\":{\"S\":\"p\"},\"sk\":{\"N\":\"%zu\"},"
                 "\"v\":%s}}", i, k_hostile[i]);
        fdbt_resp r = fdbt_call("PutItem", body);
        ck_assert_msg(r.status == 200, "%s", r.body);
        fdbt_free(&r);
    }
    enum { BIG = 100 * 1024 };
    char *big = malloc(BIG + 256), *value = malloc(BIG + 1);
    ck_assert_ptr_nonnull(big);
    ck_assert_ptr_nonnull(value);
    memset(value, 'v', BIG);
    value[BIG] = 0;
    for (int i = 0; i < n_big; i++) {
        snprintf(big, BIG + 256, "{\"TableName\":\"Pages\",\"Item\":{\"pk\":{\"S\":\"q\"},\"sk\":{\"N\":\"%d\"},"
                 "\"v\":{\"S\":\"%s\"}}}", i, value);
        fdbt_resp r = fdbt_call("PutItem", big);
        ck_assert_int_eq(r.status, 200);
        fdbt_free(&r);
    }
    free(big);
    free(value);
}

/* A Query's items are those GetItem answers, byte for byte once parsed; Limit pages and
 * Select COUNT count as before; a projection (which reads the items) agrees. */
START_TEST(query_pages_copy_stored_items)
{
    start(_i);
    fdbt_table("Pages", "sk", "N");
    put_page_items(12);
    size_t n = sizeof k_hostile / sizeof *k_hostile;
    fdbt_resp q = fdbt_call("Query", "{\"TableName\":\"Pages\",\"KeyConditionExpression\":\"pk = :p\","
                            "\"ExpressionAttributeValues\":{\":p\":{\"S\":\"p\"}}}");
    ck_assert_int_eq(q.status, 200);
    json_object *items = fdbt_get(q.json, "Items");
    ck_assert_uint_eq(json_object_array_length(items), n);
    ck_assert_ptr_null(fdbt_get(q.json, "LastEvaluatedKey"));
    char body[256];
    for (size_t i = 0; i < n; i++) {
        snprintf(body, sizeof body, "{\"TableName\":\"Pages\",\"Key\":{\"pk\":{\"S\":\"p\"},\"sk\":{\"N\":\"%zu\"}}}", i);
        fdbt_resp g = fdbt_call("GetItem", body);
        ck_assert_int_eq(g.status, 200);
        ck_assert_msg(json_object_equal(json_object_array_get_idx(items, i), fdbt_get(g.json, "Item")),
                      "item %zu: %s against %s", i, json_object_to_json_string(json_object_array_get_idx(items, i)), g.body);
        json_object *expected = json_tokener_parse(k_hostile[i]);
        ck_assert_ptr_nonnull(expected);
        ck_assert_msg(json_object_equal(fdbt_get(json_object_array_get_idx(items, i), "v"), expected), "item %zu: %s",
                      i, json_object_to_json_string(fdbt_get(json_object_array_get_idx(items, i), "v")));
        json_object_put(expected);
        fdbt_free(&g);
    }
    fdbt_free(&q);
    /* pages of 2 by Limit, each with the key of its last item */
    const char *start_key = NULL;
    char *start_copy = NULL;
    size_t seen = 0;
    for (int page = 0; page < 3; page++) {
        char req[512];
        snprintf(req, sizeof req, "{\"TableName\":\"Pages\",\"KeyConditionExpression\":\"pk = :p\",\"Limit\":2,"
                 "\"ExpressionAttributeValues\":{\":p\":{\"S\":\"p\"}}%s%s%s}",
                 start_copy ? ",\"ExclusiveStartKey\":" : "", start_copy ? start_copy : "", "");
        fdbt_resp r = fdbt_call("Query", req);
        ck_assert_int_eq(r.status, 200);
        seen += json_object_array_length(fdbt_get(r.json, "Items"));
        json_object *lek = fdbt_get(r.json, "LastEvaluatedKey");
        free(start_copy);
        start_copy = NULL;
        if (lek) {
            char sk[16];
            snprintf(sk, sizeof sk, "%zu", seen - 1);
            ck_assert_str_eq(fdbt_str(&r, "LastEvaluatedKey.sk.N"), sk);
            start_key = json_object_to_json_string_ext(lek, JSON_C_TO_STRING_PLAIN);
            start_copy = strdup(start_key);
        }
        fdbt_free(&r);
        if (!start_copy)
            break;
    }
    free(start_copy);
    ck_assert_uint_eq(seen, n);
    /* COUNT, and a projection (the path that parses each item) */
    fdbt_resp c = fdbt_call("Query", "{\"TableName\":\"Pages\",\"KeyConditionExpression\":\"pk = :p\",\"Select\":\"COUNT\","
                            "\"ExpressionAttributeValues\":{\":p\":{\"S\":\"p\"}}}");
    ck_assert_int_eq(json_object_get_int(fdbt_get(c.json, "Count")), (int)n);
    ck_assert_ptr_null(fdbt_get(c.json, "Items"));
    fdbt_free(&c);
    fdbt_resp p = fdbt_call("Query", "{\"TableName\":\"Pages\",\"KeyConditionExpression\":\"pk = :p\",\"ProjectionExpression\":\"v\","
                            "\"ExpressionAttributeValues\":{\":p\":{\"S\":\"p\"}}}");
    ck_assert_int_eq(p.status, 200);
    json_object *first = json_tokener_parse(k_hostile[0]);
    ck_assert(json_object_equal(fdbt_get(p.json, "Items.0.v"), first));
    ck_assert_ptr_null(fdbt_get(p.json, "Items.0.pk"));
    json_object_put(first);
    fdbt_free(&p);
    /* a page stops past 1 MB of items (12 of 100 KB: after the 11th), its key the last one's */
    fdbt_resp b = fdbt_call("Query", "{\"TableName\":\"Pages\",\"KeyConditionExpression\":\"pk = :q\","
                            "\"ExpressionAttributeValues\":{\":q\":{\"S\":\"q\"}}}");
    ck_assert_int_eq(b.status, 200);
    int count = json_object_get_int(fdbt_get(b.json, "Count"));
    ck_assert_int_lt(count, 12);
    ck_assert_int_gt(count, 8);
    ck_assert_uint_eq(json_object_array_length(fdbt_get(b.json, "Items")), (size_t)count);
    char last[16];
    snprintf(last, sizeof last, "%d", count - 1);
    ck_assert_str_eq(fdbt_str(&b, "LastEvaluatedKey.sk.N"), last);
    ck_assert_uint_eq(strlen(fdbt_str(&b, "Items.0.v.S")), 100 * 1024);
    fdbt_free(&b);
    /* Scan too */
    fdbt_resp s = fdbt_call("Scan", "{\"TableName\":\"Pages\",\"Limit\":3}");
    ck_assert_int_eq(s.status, 200);
    ck_assert_uint_eq(json_object_array_length(fdbt_get(s.json, "Items")), 3);
    ck_assert_ptr_nonnull(fdbt_get(s.json, "LastEvaluatedKey"));
    fdbt_free(&s);
    finish();
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("fakedb_load");
    TCase *tc = tcase_create("load");
    tcase_set_timeout(tc, 120);
    tcase_add_loop_test(tc, writes_from_many_connections, 0, 2);
    tcase_add_loop_test(tc, transactions_isolated_under_load, 0, 2);
    tcase_add_loop_test(tc, query_pages_copy_stored_items, 0, 1);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    curl_global_init(CURL_GLOBAL_DEFAULT);
    SRunner *sr = srunner_create(suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    curl_global_cleanup();
    return failed ? 1 : 0;
}
