/* test_databases.c: fakedb's databases per access key and region (separate_databases,
 * `fakedb --separate-databases`, DynamoDB Local without -sharedDb), over HTTP: keys and
 * regions see only their own tables, the shared default is unchanged, files beside --db
 * survive a restart, hostile keys, the admin API (reset, console, metrics) and the limit. */
#include "fdbt.h"

#include <check.h>

#include "dl_check.h"
#include <curl/curl.h>
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define CT "application/x-amz-json-1.0"
#define TABLE_PK "{\"TableName\":\"Tbl\",\"KeySchema\":[{\"AttributeName\":\"pk\",\"KeyType\":\"HASH\"}]," \
    "\"AttributeDefinitions\":[{\"AttributeName\":\"pk\",\"AttributeType\":\"S\"}],\"BillingMode\":\"PAY_PER_REQUEST\"}"
#define TABLE_PK_SK "{\"TableName\":\"Tbl\",\"KeySchema\":[{\"AttributeName\":\"id\",\"KeyType\":\"HASH\"}," \
    "{\"AttributeName\":\"n\",\"KeyType\":\"RANGE\"}],\"AttributeDefinitions\":[{\"AttributeName\":\"id\"," \
    "\"AttributeType\":\"S\"},{\"AttributeName\":\"n\",\"AttributeType\":\"N\"}],\"BillingMode\":\"PAY_PER_REQUEST\"}"
#define PUT_A "{\"TableName\":\"Tbl\",\"Item\":{\"pk\":{\"S\":\"k\"},\"who\":{\"S\":\"A\"}}}"
#define GET_A "{\"TableName\":\"Tbl\",\"Key\":{\"pk\":{\"S\":\"k\"}}}"
#define T "{\"TableName\":\"Tbl\"}"

static void start(bool separate, const char *path)
{
    fakedb_options o = { .fake_clock = true, .fake_clock_start_ms = 1700000000000LL, .db_path = path,
                         .threads = 2, .separate_databases = separate };
    fdbt_start_opts(&o);
}

static void setup_separate(void)
{
    start(true, NULL);
}

static void setup_shared(void)
{
    start(false, NULL);
}

static void teardown(void)
{
    fdbt_stop();
}

/* A request signed (as fakedb without credentials checks it) by `key` in `region`. */
static fdbt_resp as(const char *key, const char *region, const char *op, const char *body)
{
    char target[128], auth[512];
    snprintf(target, sizeof target, "DynamoDB_20120810.%s", op);
    snprintf(auth, sizeof auth, "AWS4-HMAC-SHA256 Credential=%s/20231114/%s/dynamodb/aws4_request, "
             "SignedHeaders=host;x-amz-date;x-amz-target, Signature=0123456789abcdef", key, region);
    return fdbt_raw("POST", "/", target, CT, auth, body, strlen(body));
}

static void ok(const char *key, const char *region, const char *op, const char *body)
{
    fdbt_resp r = as(key, region, op, body);
    ck_assert_msg(r.status == 200, "%s/%s %s: %ld %s", key, region, op, r.status, r.body);
    fdbt_free(&r);
}

/* The table names key/region lists, comma-separated. */
static void expect_tables(const char *key, const char *region, const char *want)
{
    fdbt_resp r = as(key, region, "ListTables", "{}");
    ck_assert_msg(r.status == 200, "%s", r.body);
    char got[256] = "";
    json_object *names = fdbt_get(r.json, "TableNames");
    for (size_t i = 0; i < json_object_array_length(names); i++)
        snprintf(got + strlen(got), sizeof got - strlen(got), "%s%s", i ? "," : "",
                 json_object_get_string(json_object_array_get_idx(names, i)));
    ck_assert_msg(!strcmp(got, want), "%s/%s lists [%s], want [%s]", key, region, got, want);
    fdbt_free(&r);
}

START_TEST(two_keys_create_the_same_table_name)
{
    ok("AKIDALPHA", "us-east-1", "CreateTable", TABLE_PK);
    ok("AKIDBETA", "us-east-1", "CreateTable", TABLE_PK_SK); /* the same name: no ResourceInUse */
    ok("AKIDALPHA", "us-east-1", "PutItem", PUT_A);
    /* Each sees its own table's schema and items. */
    fdbt_resp r = as("AKIDBETA", "us-east-1", "DescribeTable", T);
    ck_assert_int_eq(r.status, 200);
    ck_assert_str_eq(fdbt_str(&r, "Table.KeySchema.0.AttributeName"), "id");
    ck_assert_int_eq(json_object_get_int64(fdbt_get(r.json, "Table.ItemCount")), 0);
    fdbt_free(&r);
    r = as("AKIDALPHA", "us-east-1", "DescribeTable", T);
    ck_assert_str_eq(fdbt_str(&r, "Table.KeySchema.0.AttributeName"), "pk");
    fdbt_free(&r);
    r = as("AKIDALPHA", "us-east-1", "GetItem", GET_A);
    ck_assert_str_eq(fdbt_str(&r, "Item.who.S"), "A");
    fdbt_free(&r);
    /* B's table has other keys: A's item key does not fit it. */
    r = as("AKIDBETA", "us-east-1", "GetItem", GET_A);
    fdbt_expect_answer(&r, 400, "ValidationException", NULL, NULL);
    r = as("AKIDBETA", "us-east-1", "Scan", T);
    ck_assert_int_eq(json_object_get_int(fdbt_get(r.json, "Count")), 0);
    fdbt_free(&r);
    /* Deleting B's leaves A's. */
    ok("AKIDBETA", "us-east-1", "DeleteTable", T);
    expect_tables("AKIDBETA", "us-east-1", "");
    expect_tables("AKIDALPHA", "us-east-1", "Tbl");
}
END_TEST

START_TEST(a_third_key_sees_neither)
{
    ok("AKIDALPHA", "us-east-1", "CreateTable", TABLE_PK);
    ok("AKIDBETA", "us-east-1", "CreateTable", TABLE_PK_SK);
    expect_tables("AKIDGAMMA", "us-east-1", "");
    fdbt_resp r = as("AKIDGAMMA", "us-east-1", "DescribeTable", T);
    fdbt_expect_answer(&r, 400, "ResourceNotFoundException", NULL, NULL);
    r = as("AKIDGAMMA", "us-east-1", "PutItem", PUT_A);
    fdbt_expect_answer(&r, 400, "ResourceNotFoundException", NULL, NULL);
    /* The same letters in another case are another key. */
    expect_tables("akidalpha", "us-east-1", "");
    /* fdbt_call's own key (AKIDEXAMPLE) sees none of them either. */
    r = fdbt_call("ListTables", "{}");
    ck_assert_int_eq(json_object_array_length(fdbt_get(r.json, "TableNames")), 0);
    fdbt_free(&r);
}
END_TEST

START_TEST(regions_are_separate)
{
    ok("AKIDALPHA", "eu-west-1", "CreateTable", TABLE_PK);
    ok("AKIDALPHA", "eu-west-1", "PutItem", PUT_A);
    expect_tables("AKIDALPHA", "us-east-1", "");
    expect_tables("AKIDALPHA", "eu-west-1", "Tbl");
    ok("AKIDALPHA", "ap-south-1", "CreateTable", TABLE_PK_SK);
    fdbt_resp r = as("AKIDALPHA", "ap-south-1", "DescribeTable", T);
    ck_assert_str_eq(fdbt_str(&r, "Table.TableArn"), "arn:aws:dynamodb:ap-south-1:000000000000:table/Tbl");
    ck_assert_str_eq(fdbt_str(&r, "Table.KeySchema.0.AttributeName"), "id");
    fdbt_free(&r);
    r = as("AKIDALPHA", "eu-west-1", "GetItem", GET_A);
    ck_assert_str_eq(fdbt_str(&r, "Item.who.S"), "A");
    fdbt_free(&r);
}
END_TEST

START_TEST(shared_by_default)
{
    ok("AKIDALPHA", "us-east-1", "CreateTable", TABLE_PK);
    ok("AKIDALPHA", "us-east-1", "PutItem", PUT_A);
    expect_tables("AKIDBETA", "eu-west-1", "Tbl");
    fdbt_resp r = as("AKIDBETA", "eu-west-1", "GetItem", GET_A);
    ck_assert_str_eq(fdbt_str(&r, "Item.who.S"), "A");
    fdbt_free(&r);
    r = as("AKIDBETA", "eu-west-1", "CreateTable", TABLE_PK_SK);
    fdbt_expect_answer(&r, 400, "ResourceInUseException", NULL, NULL);
    /* Any key is accepted, letters and digits or not. */
    expect_tables("AKID-WITH.DOTS", "us-east-1", "Tbl");
    fakedb_error err;
    ck_assert_int_eq(fakedb_create_table(fdbt_db, "Other", "pk", NULL, &err), 0);
    expect_tables("AKIDGAMMA", "us-east-1", "Other,Tbl");
}
END_TEST

START_TEST(hostile_keys_and_regions)
{
    static const char *const bad[] = { "..", "AK.ID", "AK-ID", "AK%2FID", "AK\xc3\xa9ID", "AK_ID", NULL };
    for (int i = 0; bad[i]; i++) {
        fdbt_resp r = as(bad[i], "us-east-1", "ListTables", "{}");
        ck_assert_msg(r.status == 400 && !strcmp(fdbt_error(&r), "UnrecognizedClientException") &&
                          !strcmp(fdbt_message(&r), "The Access Key ID or security token is invalid."),
                      "%s: %ld %s", bad[i], r.status, r.body);
        fdbt_free(&r);
    }
    char longest[130];
    memset(longest, 'K', 128);
    longest[128] = 0;
    expect_tables(longest, "us-east-1", "");
    longest[128] = 'K';
    longest[129] = 0;
    fdbt_resp r = as(longest, "us-east-1", "ListTables", "{}");
    fdbt_expect_answer(&r, 400, "UnrecognizedClientException", NULL, NULL);
    /* A region that is no region's name is us-east-1, as in ARNs. */
    ok("AKIDALPHA", "../../etc", "CreateTable", TABLE_PK);
    expect_tables("AKIDALPHA", "us-east-1", "Tbl");
    /* No credential scope at all: DynamoDB's answer for an unsigned request. */
    r = fdbt_raw("POST", "/", "DynamoDB_20120810.ListTables", CT, NULL, "{}", 2);
    fdbt_expect_answer(&r, 400, "MissingAuthenticationTokenException", NULL, NULL);
    /* A table for the embedding program names no database. */
    fakedb_error err;
    ck_assert_int_eq(fakedb_create_table(fdbt_db, "X", "pk", NULL, &err), FAKEDB_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.message, "separate databases"));
}
END_TEST

START_TEST(reset_empties_every_database)
{
    ok("AKIDALPHA", "us-east-1", "CreateTable", TABLE_PK);
    ok("AKIDBETA", "eu-west-1", "CreateTable", TABLE_PK);
    fdbt_resp r = fdbt_raw("POST", "/fake/reset", NULL, NULL, NULL, NULL, 0);
    ck_assert_int_eq(r.status, 200);
    fdbt_free(&r);
    expect_tables("AKIDALPHA", "us-east-1", "");
    expect_tables("AKIDBETA", "eu-west-1", "");
    ok("AKIDBETA", "eu-west-1", "CreateTable", TABLE_PK);
    fakedb_reset(fdbt_db);
    expect_tables("AKIDBETA", "eu-west-1", "");
}
END_TEST

START_TEST(console_names_the_database)
{
    ok("AKIDALPHA", "us-east-1", "CreateTable", TABLE_PK);
    ok("AKIDALPHA", "us-east-1", "PutItem", PUT_A);
    ok("AKIDBETA", "eu-west-1", "CreateTable", TABLE_PK_SK);
    fdbt_resp r = fdbt_raw("GET", "/fake/console/api/tables", NULL, NULL, NULL, NULL, 0);
    ck_assert_int_eq(r.status, 400);
    ck_assert_ptr_nonnull(strstr(r.body, "access_key"));
    fdbt_free(&r);
    r = fdbt_raw("GET", "/fake/console/api/databases", NULL, NULL, NULL, NULL, 0);
    ck_assert_int_eq(r.status, 200);
    ck_assert_int_eq(json_object_array_length(fdbt_get(r.json, "databases")), 2);
    ck_assert_str_eq(json_object_get_string(fdbt_get(r.json, "databases.1.access_key")), "AKIDBETA");
    ck_assert_str_eq(json_object_get_string(fdbt_get(r.json, "databases.1.region")), "eu-west-1");
    fdbt_free(&r);
    r = fdbt_raw("GET", "/fake/console/api/items?table=Tbl&access_key=AKIDALPHA&region=us-east-1", NULL, NULL,
                 NULL, NULL, 0);
    ck_assert_msg(r.status == 200 && strstr(r.body, "\"A\""), "%ld %s", r.status, r.body);
    fdbt_free(&r);
    r = fdbt_raw("GET", "/fake/console/api/items?table=Tbl&access_key=AKIDBETA&region=eu-west-1", NULL, NULL,
                 NULL, NULL, 0);
    ck_assert_msg(r.status == 200 && !strstr(r.body, "\"A\""), "%ld %s", r.status, r.body);
    fdbt_free(&r);
    r = fdbt_raw("GET", "/fake/console/api/tables?access_key=AKIDGAMMA&region=us-east-1", NULL, NULL, NULL,
                 NULL, 0);
    ck_assert_int_eq(r.status, 404);
    fdbt_free(&r);
    r = fdbt_raw("GET", "/fake/console/api/tables?access_key=..%2F&region=us-east-1", NULL, NULL, NULL, NULL, 0);
    ck_assert_int_eq(r.status, 404);
    fdbt_free(&r);
}
END_TEST

typedef struct text {
    char *p;
    size_t n;
} text;

static size_t on_text(char *p, size_t sz, size_t n, void *arg)
{
    text *t = arg;
    char *q = realloc(t->p, t->n + sz * n + 1);
    if (!q)
        return 0;
    memcpy(q + t->n, p, sz * n);
    t->p = q;
    t->n += sz * n;
    t->p[t->n] = 0;
    return sz * n;
}

START_TEST(metrics_name_each_database)
{
    ok("AKIDALPHA", "us-east-1", "CreateTable", TABLE_PK);
    ok("AKIDALPHA", "us-east-1", "PutItem", PUT_A);
    ok("AKIDBETA", "eu-west-1", "CreateTable", TABLE_PK);
    text t = { NULL, 0 };
    CURL *c = curl_easy_init();
    char url[256];
    snprintf(url, sizeof url, "%s/fake/metrics", fakedb_endpoint(fdbt_db));
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_text);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &t);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    ck_assert_int_eq(curl_easy_perform(c), CURLE_OK);
    curl_easy_cleanup(c);
    ck_assert_ptr_nonnull(t.p);
    ck_assert_msg(strstr(t.p, "fakedb_table_items{access_key=\"AKIDALPHA\",region=\"us-east-1\",table=\"Tbl\"} 1\n"),
                  "%s", t.p);
    ck_assert_msg(strstr(t.p, "fakedb_table_items{access_key=\"AKIDBETA\",region=\"eu-west-1\",table=\"Tbl\"} 0\n"),
                  "%s", t.p);
    free(t.p);
}
END_TEST

/* Keys that arrive at once each get one database: 8 threads, two per key, each creating
 * a table of its own name while the metrics walk the databases. */
static void *first_requests(void *arg)
{
    int i = (int)(intptr_t)arg;
    char key[32], body[512];
    snprintf(key, sizeof key, "AKIDRACE%d", i / 2);
    snprintf(body, sizeof body, "{\"TableName\":\"Tbl%d\",\"KeySchema\":[{\"AttributeName\":\"pk\",\"KeyType\":\"HASH\"}],"
             "\"AttributeDefinitions\":[{\"AttributeName\":\"pk\",\"AttributeType\":\"S\"}],\"BillingMode\":\"PAY_PER_REQUEST\"}", i % 2);
    fdbt_resp r = as(key, "us-east-1", "CreateTable", body);
    long status = r.status;
    fdbt_free(&r);
    return (void *)(intptr_t)status;
}

static void *scrape_metrics(void *arg)
{
    (void)arg;
    for (int i = 0; i < 4; i++) {
        fdbt_resp r = fdbt_raw("GET", "/fake/metrics", NULL, NULL, NULL, NULL, 0);
        fdbt_free(&r);
        r = fdbt_raw("GET", "/fake/console/api/databases", NULL, NULL, NULL, NULL, 0);
        fdbt_free(&r);
    }
    return NULL;
}

START_TEST(keys_arriving_at_once)
{
    pthread_t th[8], scraper;
    ck_assert_int_eq(pthread_create(&scraper, NULL, scrape_metrics, NULL), 0);
    for (int i = 0; i < 8; i++)
        ck_assert_int_eq(pthread_create(&th[i], NULL, first_requests, (void *)(intptr_t)i), 0);
    for (int i = 0; i < 8; i++) {
        void *status;
        pthread_join(th[i], &status);
        ck_assert_int_eq((int)(intptr_t)status, 200);
    }
    pthread_join(scraper, NULL);
    char key[32];
    for (int k = 0; k < 4; k++) {
        snprintf(key, sizeof key, "AKIDRACE%d", k);
        expect_tables(key, "us-east-1", "Tbl0,Tbl1");
    }
    fdbt_resp r = fdbt_raw("GET", "/fake/console/api/databases", NULL, NULL, NULL, NULL, 0);
    ck_assert_int_eq(json_object_array_length(fdbt_get(r.json, "databases")), 4);
    fdbt_free(&r);
}
END_TEST

START_TEST(databases_are_limited)
{
    char key[32];
    for (int i = 0; i < 256; i++) {
        snprintf(key, sizeof key, "AKID%d", i);
        fdbt_resp r = as(key, "us-east-1", "ListTables", "{}");
        ck_assert_msg(r.status == 200, "%s: %s", key, r.body);
        fdbt_free(&r);
    }
    fdbt_resp r = as("AKIDONEMORE", "us-east-1", "ListTables", "{}");
    ck_assert_msg(r.status == 400 && !strcmp(fdbt_error(&r), "LimitExceededException"), "%s", r.body);
    fdbt_free(&r);
    expect_tables("AKID7", "us-east-1", ""); /* the ones there are still answer */
}
END_TEST

static void remove_dir(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *e;
    char p[512];
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
            snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
            unlink(p);
        }
    closedir(d);
    rmdir(dir);
}

START_TEST(files_beside_db_survive_a_restart)
{
    char dir[] = "/tmp/fakedb-dbs-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    char path[128], file[256];
    snprintf(path, sizeof path, "%s/data.db", dir);
    start(true, path);
    ok("AKIDALPHA", "us-east-1", "CreateTable", TABLE_PK);
    ok("AKIDALPHA", "us-east-1", "PutItem", PUT_A);
    ok("AKIDBETA", "eu-west-1", "CreateTable", TABLE_PK_SK);
    fdbt_stop();
    struct stat sb;
    snprintf(file, sizeof file, "%s.AKIDALPHA_us-east-1.sqlite", path);
    ck_assert_int_eq(stat(file, &sb), 0);
    snprintf(file, sizeof file, "%s.AKIDBETA_eu-west-1.sqlite", path);
    ck_assert_int_eq(stat(file, &sb), 0);
    /* Files that are not databases of this path are left alone. */
    snprintf(file, sizeof file, "%s/other.db.AKIDX_us-east-1.sqlite", dir);
    FILE *f = fopen(file, "w");
    ck_assert_ptr_nonnull(f);
    fclose(f);
    snprintf(file, sizeof file, "%s.AK.ID_us-east-1.sqlite", path);
    f = fopen(file, "w");
    ck_assert_ptr_nonnull(f);
    fclose(f);

    start(true, path);
    /* Opened at start: the console lists them before any request. */
    fdbt_resp r = fdbt_raw("GET", "/fake/console/api/databases", NULL, NULL, NULL, NULL, 0);
    ck_assert_msg(r.status == 200 && json_object_array_length(fdbt_get(r.json, "databases")) == 2, "%s", r.body);
    fdbt_free(&r);
    r = as("AKIDALPHA", "us-east-1", "GetItem", GET_A);
    ck_assert_str_eq(fdbt_str(&r, "Item.who.S"), "A");
    fdbt_free(&r);
    expect_tables("AKIDBETA", "eu-west-1", "Tbl");
    expect_tables("AKIDBETA", "us-east-1", "");
    /* A reset empties the files too. */
    fakedb_reset(fdbt_db);
    fdbt_stop();
    start(true, path);
    expect_tables("AKIDALPHA", "us-east-1", "");
    fdbt_stop();
    /* The same file without the option: the shared database, which holds none of them. */
    start(false, path);
    expect_tables("AKIDALPHA", "us-east-1", "");
    fdbt_stop();
    remove_dir(dir);
}
END_TEST

static long program_call(int port, const char *key, const char *op, const char *body, char **out)
{
    CURL *c = curl_easy_init();
    char url[64], target[128], auth[300];
    snprintf(url, sizeof url, "http://127.0.0.1:%d/", port);
    snprintf(target, sizeof target, "X-Amz-Target: DynamoDB_20120810.%s", op);
    snprintf(auth, sizeof auth, "Authorization: AWS4-HMAC-SHA256 Credential=%s/20231114/us-east-1/dynamodb/aws4_request, "
             "SignedHeaders=host;x-amz-date;x-amz-target, Signature=0123456789abcdef", key);
    struct curl_slist *hl = curl_slist_append(NULL, target);
    hl = curl_slist_append(hl, "Content-Type: " CT);
    hl = curl_slist_append(hl, auth);
    hl = curl_slist_append(hl, "X-Amz-Date: 20231114T221320Z");
    text t = { NULL, 0 };
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, hl);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_text);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &t);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    long status = 0;
    if (curl_easy_perform(c) == CURLE_OK)
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    curl_slist_free_all(hl);
    curl_easy_cleanup(c);
    *out = t.p;
    return status;
}

/* The program: --separate-databases takes no value; with it, keys see their own tables. */
START_TEST(program_option)
{
    char *program = fdbt_program();
    int fd, st;
    char *valued[] = { program, "--separate-databases=yes", NULL };
    pid_t pid = fdbt_spawn(valued, &fd);
    waitpid(pid, &st, 0);
    close(fd);
    ck_assert(WIFEXITED(st));
    ck_assert_int_eq(WEXITSTATUS(st), 64);

    char *run[] = { program, "--port", "0", "--separate-databases", NULL };
    pid = fdbt_spawn(run, &fd);
    int port = fdbt_read_port(fd);
    char *out = NULL;
    ck_assert_int_eq(program_call(port, "AKIDALPHA", "CreateTable", TABLE_PK, &out), 200);
    free(out);
    ck_assert_int_eq(program_call(port, "AKIDBETA", "ListTables", "{}", &out), 200);
    ck_assert_msg(strstr(out, "\"TableNames\":[]"), "%s", out);
    free(out);
    ck_assert_int_eq(program_call(port, "AKIDALPHA", "ListTables", "{}", &out), 200);
    ck_assert_msg(strstr(out, "\"TableNames\":[\"Tbl\"]"), "%s", out);
    free(out);
    fdbt_stop_program(pid, fd);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("fakedb_databases");
    TCase *tc = tcase_create("separate");
    tcase_add_checked_fixture(tc, setup_separate, teardown);
    tcase_add_test(tc, two_keys_create_the_same_table_name);
    tcase_add_test(tc, a_third_key_sees_neither);
    tcase_add_test(tc, regions_are_separate);
    tcase_add_test(tc, hostile_keys_and_regions);
    tcase_add_test(tc, reset_empties_every_database);
    tcase_add_test(tc, console_names_the_database);
    tcase_add_test(tc, metrics_name_each_database);
    tcase_add_test(tc, databases_are_limited);
    tcase_add_test(tc, keys_arriving_at_once);
    suite_add_tcase(s, tc);
    tc = tcase_create("shared");
    tcase_add_checked_fixture(tc, setup_shared, teardown);
    tcase_add_test(tc, shared_by_default);
    suite_add_tcase(s, tc);
    tc = tcase_create("files");
    tcase_add_test(tc, files_beside_db_survive_a_restart);
    tcase_add_test(tc, program_option);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return dl_check_run(suite());
}
