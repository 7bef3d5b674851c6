/* test_console_http.c: fakedb's console over real HTTP (libcurl against an in-process
 * server with a fake clock): the embedded page and its security headers, each JSON
 * endpoint under /fake/console/api/ (tables, items by page and prefix, an item's stream
 * history, lock items and how long each was unchanged on the fake clock, clock, faults,
 * recent requests), the refusal of changes a foreign page could forge, hostile arguments,
 * and the console under --credentials answering as the rest of /fake/ does. */
#include "dl_check.h"
#include "fdbt.h"
#include "protocol.h" /* the server's list of suspended requests */
#include "server.h"

#include <check.h>
#include <curl/curl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

typedef struct http {
    long status;
    char content_type[128];
    char csp[512];
    char nosniff[64];
    char *body;
    size_t len;
    json_object *json;
    int curl_rc;            /* curl's result: off the test's thread, asserted by the test */
} http;

static size_t on_body(char *p, size_t sz, size_t n, void *arg)
{
    http *h = arg;
    char *q = realloc(h->body, h->len + sz * n + 1);
    if (!q)
        return 0;
    memcpy(q + h->len, p, sz * n);
    h->body = q;
    h->len += sz * n;
    h->body[h->len] = 0;
    return sz * n;
}

static void header_value(const char *line, size_t n, const char *name, char *out, size_t cap)
{
    size_t k = strlen(name);
    if (n <= k + 1 || strncasecmp(line, name, k) || line[k] != ':')
        return;
    const char *v = line + k + 1;
    while (*v == ' ')
        v++;
    size_t len = (size_t)(line + n - v);
    while (len && (v[len - 1] == '\r' || v[len - 1] == '\n'))
        len--;
    snprintf(out, cap, "%.*s", (int)len, v);
}

static size_t on_header(char *p, size_t sz, size_t n, void *arg)
{
    http *h = arg;
    header_value(p, sz * n, "Content-Security-Policy", h->csp, sizeof h->csp);
    header_value(p, sz * n, "X-Content-Type-Options", h->nosniff, sizeof h->nosniff);
    return sz * n;
}

/* method path [body] with extra headers (NULL-terminated list of "Name: value"); curl's
 * result in curl_rc, unchecked: a thread other than the test's asserts nothing. */
static http req_any_thread(const char *method, const char *path, const char *body,
                           const char *const *headers)
{
    http h;
    memset(&h, 0, sizeof h);
    CURL *c = curl_easy_init();
    ck_assert_ptr_nonnull(c);
    char url[4096];
    snprintf(url, sizeof url, "%s%s", fakedb_endpoint(fdbt_db), path);
    struct curl_slist *hl = NULL;
    for (size_t i = 0; headers && headers[i]; i++)
        hl = curl_slist_append(hl, headers[i]);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    if (body) {
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)strlen(body));
    }
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, hl);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &h);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, &h);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 30L);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_PATH_AS_IS, 1L); /* send "/../" as it is */
    h.curl_rc = (int)curl_easy_perform(c);
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &h.status);
    char *ct = NULL;
    curl_easy_getinfo(c, CURLINFO_CONTENT_TYPE, &ct);
    snprintf(h.content_type, sizeof h.content_type, "%s", ct ? ct : "");
    curl_slist_free_all(hl);
    curl_easy_cleanup(c);
    if (h.body && !strncmp(h.content_type, "application/json", 16))
        h.json = json_tokener_parse(h.body);
    return h;
}

/* The same on the test's thread: curl must have had an answer. */
static http req(const char *method, const char *path, const char *body, const char *const *headers)
{
    http h = req_any_thread(method, path, body, headers);
    ck_assert_int_eq(h.curl_rc, CURLE_OK);
    return h;
}

static void http_free(http *h)
{
    free(h->body);
    json_object_put(h->json);
}

static http get(const char *path)
{
    return req("GET", path, NULL, NULL);
}

static const char *const k_console[] = { "X-Fakedb-Console: 1", "Content-Type: application/json", NULL };

static http change(const char *method, const char *path, const char *body)
{
    return req(method, path, body, k_console);
}

static int64_t now_ms(void)
{
    http h = get("/fake/console/api/clock");
    ck_assert_int_eq(h.status, 200);
    int64_t v = json_object_get_int64(fdbt_get(h.json, "now_ms"));
    http_free(&h);
    return v;
}

static void setup(void)
{
    fdbt_start(NULL);
}

static void teardown(void)
{
    fdbt_stop();
}

static char *read_source(const char *rel, size_t *len)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", DYNALOCK_SOURCE_DIR, rel);
    FILE *f = fopen(path, "rb");
    ck_assert_ptr_nonnull(f);
    char *buf = malloc(1 << 20);
    ck_assert_ptr_nonnull(buf);
    *len = fread(buf, 1, (1 << 20) - 1, f);
    buf[*len] = 0;
    fclose(f);
    return buf;
}

START_TEST(page_and_headers)
{
    static const struct { const char *path, *file, *type; } files[] = {
        { "/fake/console", "fakedb/console/index.html", "text/html; charset=utf-8" },
        { "/fake/console/", "fakedb/console/index.html", "text/html; charset=utf-8" },
        { "/fake/console/console.js", "fakedb/console/console.js", "text/javascript; charset=utf-8" },
        { "/fake/console/console.css", "fakedb/console/console.css", "text/css; charset=utf-8" },
        { "/fake/console/favicon.svg", "fakedb/console/favicon.svg", "image/svg+xml" },
    };
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        http h = get(files[i].path);
        ck_assert_int_eq(h.status, 200);
        ck_assert_str_eq(h.content_type, files[i].type);
        ck_assert_msg(strstr(h.csp, "default-src 'self'") && !strstr(h.csp, "unsafe-inline") &&
                      !strstr(h.csp, "unsafe-eval") && strstr(h.csp, "frame-ancestors 'none'"),
                      "CSP of %s: %s", files[i].path, h.csp);
        ck_assert_str_eq(h.nosniff, "nosniff");
        size_t n;
        char *src = read_source(files[i].file, &n);
        ck_assert_uint_eq(h.len, n);
        ck_assert_int_eq(memcmp(h.body, src, n), 0);
        free(src);
        http_free(&h);
    }
    /* the page has no inline script or handler for the policy to refuse */
    http h = get("/fake/console");
    ck_assert_ptr_null(strstr(h.body, "<script>"));
    ck_assert_ptr_null(strstr(h.body, "onclick"));
    ck_assert_ptr_null(strstr(h.body, "style="));
    http_free(&h);
    /* JSON answers carry the headers too */
    h = get("/fake/console/api/clock");
    ck_assert_str_eq(h.nosniff, "nosniff");
    ck_assert_ptr_nonnull(strstr(h.csp, "default-src 'self'"));
    http_free(&h);
    static const char *const missing[] = {
        "/fake/console/nope.js", "/fake/console/../health", "/fake/console/%2e%2e/health",
        "/fake/console/console.js/", "/fake/console/api/nope", "/fake/consolex",
        "/fake/console//console.js",
    };
    for (size_t i = 0; i < sizeof missing / sizeof missing[0]; i++) {
        h = get(missing[i]);
        ck_assert_msg(h.status == 404, "%s: %ld", missing[i], h.status);
        http_free(&h);
    }
    h = req("POST", "/fake/console", "{}", k_console);
    ck_assert_int_eq(h.status, 405);
    http_free(&h);
}
END_TEST

START_TEST(tables_and_items)
{
    fdbt_table("Shop", "sk", "S");
    fdbt_table("Other", NULL, NULL);
    fdbt_expect_ok("UpdateTimeToLive", "{\"TableName\":\"Shop\",\"TimeToLiveSpecification\":{\"Enabled\":true,\"AttributeName\":\"exp\"}}");
    const char *pks[] = { "a1", "a2", "b1", "<img src=x onerror=alert(1)>" };
    for (size_t i = 0; i < 4; i++) {
        char body[300];
        snprintf(body, sizeof body, "{\"TableName\":\"Shop\",\"Item\":{\"pk\":{\"S\":\"%s\"},\"sk\":{\"S\":\"x\"},\"n\":{\"N\":\"%zu\"}}}", pks[i], i);
        fdbt_expect_ok("PutItem", body);
    }
    http h = get("/fake/console/api/tables");
    ck_assert_int_eq(h.status, 200);
    json_object *list = fdbt_get(h.json, "tables");
    ck_assert_uint_eq(json_object_array_length(list), 2);
    bool seen = false;
    for (size_t i = 0; i < 2; i++) {
        json_object *e = json_object_array_get_idx(list, i);
        if (strcmp(json_object_get_string(fdbt_get(e, "table.TableName")), "Shop"))
            continue;
        seen = true;
        ck_assert_int_eq(json_object_get_int(fdbt_get(e, "table.ItemCount")), 4);
        ck_assert_str_eq(json_object_get_string(fdbt_get(e, "table.KeySchema.1.AttributeName")), "sk");
        ck_assert_str_eq(json_object_get_string(fdbt_get(e, "ttl.TimeToLiveStatus")), "ENABLED");
        ck_assert_str_eq(json_object_get_string(fdbt_get(e, "ttl.AttributeName")), "exp");
    }
    ck_assert(seen);
    http_free(&h);

    h = get("/fake/console/api/items?table=Shop&prefix=a");
    ck_assert_int_eq(h.status, 200);
    ck_assert_uint_eq(json_object_array_length(fdbt_get(h.json, "items")), 2);
    ck_assert(json_object_get_boolean(fdbt_get(h.json, "stream")) == 0);
    http_free(&h);
    h = get("/fake/console/api/items?table=Shop&prefix=%3Cimg");
    ck_assert_uint_eq(json_object_array_length(fdbt_get(h.json, "items")), 1);
    ck_assert_str_eq(json_object_get_string(fdbt_get(h.json, "items.0.pk.S")), "<img src=x onerror=alert(1)>");
    http_free(&h);

    /* pages of one item until the last */
    char start[1024] = "";
    size_t total = 0;
    for (int page = 0; page < 10; page++) {
        char path[2048];
        char *esc = NULL;
        if (start[0]) {
            CURL *c = curl_easy_init();
            esc = curl_easy_escape(c, start, 0);
            curl_easy_cleanup(c);
        }
        snprintf(path, sizeof path, "/fake/console/api/items?table=Shop&limit=1%s%s", esc ? "&start=" : "", esc ? esc : "");
        curl_free(esc);
        h = get(path);
        ck_assert_int_eq(h.status, 200);
        total += json_object_array_length(fdbt_get(h.json, "items"));
        json_object *next = fdbt_get(h.json, "next");
        if (!next) {
            http_free(&h);
            break;
        }
        snprintf(start, sizeof start, "%s", json_object_to_json_string(next));
        http_free(&h);
    }
    ck_assert_uint_eq(total, 4);

    static const struct { const char *path; long status; } bad[] = {
        { "/fake/console/api/items", 400 },
        { "/fake/console/api/items?table=Nope", 400 },
        { "/fake/console/api/items?table=Shop&limit=0", 400 },
        { "/fake/console/api/items?table=Shop&limit=1001", 400 },
        { "/fake/console/api/items?table=Shop&limit=5x", 400 },
        { "/fake/console/api/items?table=Shop&start=%5B1%5D", 400 },
        { "/fake/console/api/items?table=Shop&start=%7Bnot", 400 },
        { "/fake/console/api/items?table=Shop&start=%7B%22pk%22%3A%7B%22S%22%3A%22zz%22%7D%7D", 400 },
        { "/fake/console/api/items?table=%FF%FE", 400 },
        { "/fake/console/api/items?table=Shop&prefix=%FF%FE", 200 },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        h = get(bad[i].path);
        ck_assert_msg(h.status == bad[i].status, "%s: %ld %s", bad[i].path, h.status, h.body ? h.body : "");
        if (h.status != 200)
            ck_assert_ptr_nonnull(fdbt_get(h.json, "error"));
        http_free(&h);
    }
}
END_TEST

START_TEST(item_history_from_stream)
{
    fdbt_expect_ok("CreateTable", "{\"TableName\":\"Str\",\"BillingMode\":\"PAY_PER_REQUEST\","
                                  "\"AttributeDefinitions\":[{\"AttributeName\":\"pk\",\"AttributeType\":\"S\"}],"
                                  "\"KeySchema\":[{\"AttributeName\":\"pk\",\"KeyType\":\"HASH\"}],"
                                  "\"StreamSpecification\":{\"StreamEnabled\":true,\"StreamViewType\":\"NEW_AND_OLD_IMAGES\"}}");
    fdbt_expect_ok("PutItem", "{\"TableName\":\"Str\",\"Item\":{\"pk\":{\"S\":\"k\"},\"v\":{\"N\":\"1\"}}}");
    fdbt_expect_ok("PutItem", "{\"TableName\":\"Str\",\"Item\":{\"pk\":{\"S\":\"other\"}}}");
    fdbt_expect_ok("UpdateItem", "{\"TableName\":\"Str\",\"Key\":{\"pk\":{\"S\":\"k\"}},\"UpdateExpression\":\"SET v = :v\","
                                 "\"ExpressionAttributeValues\":{\":v\":{\"N\":\"2\"}}}");
    fdbt_expect_ok("DeleteItem", "{\"TableName\":\"Str\",\"Key\":{\"pk\":{\"S\":\"k\"}}}");
    http h = get("/fake/console/api/history?table=Str&key=%7B%22pk%22%3A%7B%22S%22%3A%22k%22%7D%7D");
    ck_assert_int_eq(h.status, 200);
    ck_assert(json_object_get_boolean(fdbt_get(h.json, "stream")));
    json_object *recs = fdbt_get(h.json, "records");
    ck_assert_uint_eq(json_object_array_length(recs), 3);
    ck_assert_str_eq(json_object_get_string(fdbt_get(recs, "0.event")), "INSERT");
    ck_assert_str_eq(json_object_get_string(fdbt_get(recs, "1.event")), "MODIFY");
    ck_assert_str_eq(json_object_get_string(fdbt_get(recs, "1.new_image.v.N")), "2");
    ck_assert_str_eq(json_object_get_string(fdbt_get(recs, "1.old_image.v.N")), "1");
    ck_assert_str_eq(json_object_get_string(fdbt_get(recs, "2.event")), "REMOVE");
    ck_assert_int_eq(json_object_get_int64(fdbt_get(recs, "0.at_ms")), 1700000000000LL);
    http_free(&h);
    /* a table without a stream */
    fdbt_table("Plain", NULL, NULL);
    h = get("/fake/console/api/history?table=Plain&key=%7B%22pk%22%3A%7B%22S%22%3A%22k%22%7D%7D");
    ck_assert_int_eq(h.status, 200);
    ck_assert(!json_object_get_boolean(fdbt_get(h.json, "stream")));
    ck_assert_uint_eq(json_object_array_length(fdbt_get(h.json, "records")), 0);
    http_free(&h);
    h = get("/fake/console/api/history?table=Str&key=k");
    ck_assert_int_eq(h.status, 400);
    http_free(&h);
    h = get("/fake/console/api/history?key=%7B%7D");
    ck_assert_int_eq(h.status, 400);
    http_free(&h);
}
END_TEST

static json_object *lock_named(json_object *locks, const char *name)
{
    for (size_t i = 0; i < json_object_array_length(locks); i++) {
        json_object *l = json_object_array_get_idx(locks, i);
        if (!strcmp(json_object_get_string(fdbt_get(l, "name")), name))
            return l;
    }
    return NULL;
}

static void put_lock(const char *table, const char *pk, const char *sk, const char *rvn, bool held)
{
    char body[1024];
    snprintf(body, sizeof body,
             "{\"TableName\":\"%s\",\"Item\":{\"pk\":{\"S\":\"%s\"}%s%s%s,\"rvn\":{\"S\":\"%s\"},\"fence\":{\"N\":\"3\"}%s}}",
             table, pk, sk ? ",\"sk\":{\"S\":\"" : "", sk ? sk : "", sk ? "\"}" : "", rvn,
             held ? ",\"owner\":{\"S\":\"o1\"},\"leaseMs\":{\"N\":\"10000\"},\"holder\":{\"S\":\"<b>pod</b>\"},\"value\":{\"S\":\"v\"}" : "");
    fdbt_expect_ok("PutItem", body);
}

START_TEST(locks_and_unchanged_time)
{
    fdbt_table("Loc", NULL, NULL);
    fdbt_table("Lo2", "sk", "S");
    put_lock("Loc", "LOCK#a", NULL, "r1", true);
    fdbt_expect_ok("PutItem", "{\"TableName\":\"Loc\",\"Item\":{\"pk\":{\"S\":\"order#1\"},\"owner\":{\"S\":\"x\"}}}");
    put_lock("Lo2", "LOCK#b", "LOCK", "r1", true);
    put_lock("Lo2", "LOCK#c", "other", "r1", true);
    http h = get("/fake/console/api/locks");
    ck_assert_int_eq(h.status, 200);
    json_object *locks = fdbt_get(h.json, "locks");
    ck_assert_uint_eq(json_object_array_length(locks), 2);
    json_object *a = lock_named(locks, "a");
    ck_assert_ptr_nonnull(a);
    ck_assert_ptr_nonnull(lock_named(locks, "b"));
    ck_assert_ptr_null(lock_named(locks, "c"));
    ck_assert_str_eq(json_object_get_string(fdbt_get(a, "table")), "Loc");
    ck_assert_str_eq(json_object_get_string(fdbt_get(a, "owner")), "o1");
    ck_assert_str_eq(json_object_get_string(fdbt_get(a, "holder")), "<b>pod</b>");
    ck_assert_int_eq(json_object_get_int(fdbt_get(a, "fence")), 3);
    ck_assert_int_eq(json_object_get_int(fdbt_get(a, "lease_ms")), 10000);
    ck_assert_str_eq(json_object_get_string(fdbt_get(a, "value.S")), "v");
    ck_assert_int_eq(json_object_get_int(fdbt_get(a, "unchanged_ms")), 0);
    ck_assert(!json_object_get_boolean(fdbt_get(a, "past_due")));
    ck_assert(json_object_get_boolean(fdbt_get(a, "held")));
    http_free(&h);

    ck_assert_int_eq(fakedb_clock_advance(fdbt_db, 9999), 0);
    h = get("/fake/console/api/locks");
    a = lock_named(fdbt_get(h.json, "locks"), "a");
    ck_assert_int_eq(json_object_get_int(fdbt_get(a, "unchanged_ms")), 9999);
    ck_assert(!json_object_get_boolean(fdbt_get(a, "past_due")));
    http_free(&h);
    ck_assert_int_eq(fakedb_clock_advance(fdbt_db, 1), 0);
    h = get("/fake/console/api/locks");
    a = lock_named(fdbt_get(h.json, "locks"), "a");
    ck_assert_int_eq(json_object_get_int(fdbt_get(a, "unchanged_ms")), 10000);
    ck_assert(json_object_get_boolean(fdbt_get(a, "past_due")));
    ck_assert(!json_object_get_boolean(fdbt_get(a, "seen_change")));
    http_free(&h);

    /* a renewal (a new rvn) starts the count again */
    put_lock("Loc", "LOCK#a", NULL, "r2", true);
    int64_t t = now_ms();
    ck_assert_int_eq(fakedb_clock_advance(fdbt_db, 500), 0);
    h = get("/fake/console/api/locks");
    a = lock_named(fdbt_get(h.json, "locks"), "a");
    ck_assert_int_eq(json_object_get_int(fdbt_get(a, "unchanged_ms")), 0);
    ck_assert_int_eq(json_object_get_int64(fdbt_get(a, "unchanged_since_ms")), t + 500);
    ck_assert(json_object_get_boolean(fdbt_get(a, "seen_change")));
    ck_assert(!json_object_get_boolean(fdbt_get(a, "past_due")));
    http_free(&h);

    /* released: free, never past due */
    put_lock("Loc", "LOCK#a", NULL, "r2", false);
    ck_assert_int_eq(fakedb_clock_advance(fdbt_db, 60000), 0);
    h = get("/fake/console/api/locks");
    a = lock_named(fdbt_get(h.json, "locks"), "a");
    ck_assert(!json_object_get_boolean(fdbt_get(a, "held")));
    ck_assert(!json_object_get_boolean(fdbt_get(a, "past_due")));
    ck_assert_ptr_null(fdbt_get(a, "owner"));
    http_free(&h);

    /* deleted and put again: first seen anew */
    fdbt_expect_ok("DeleteItem", "{\"TableName\":\"Loc\",\"Key\":{\"pk\":{\"S\":\"LOCK#a\"}}}");
    h = get("/fake/console/api/locks");
    ck_assert_ptr_null(lock_named(fdbt_get(h.json, "locks"), "a"));
    http_free(&h);
    put_lock("Loc", "LOCK#a", NULL, "r2", true);
    h = get("/fake/console/api/locks");
    a = lock_named(fdbt_get(h.json, "locks"), "a");
    ck_assert_int_eq(json_object_get_int(fdbt_get(a, "unchanged_ms")), 0);
    ck_assert(!json_object_get_boolean(fdbt_get(a, "seen_change")));
    http_free(&h);
}
END_TEST

START_TEST(clock_changes_refuse_forgeries)
{
    int64_t t0 = now_ms();
    static const char *const no_mark[] = { "Content-Type: application/json", NULL };
    static const char *const wrong_mark[] = { "X-Fakedb-Console: yes", NULL };
    static const char *const cross_site[] = { "X-Fakedb-Console: 1", "Sec-Fetch-Site: cross-site", NULL };
    static const char *const same_site[] = { "X-Fakedb-Console: 1", "Sec-Fetch-Site: same-site", NULL };
    static const char *const foreign[] = { "X-Fakedb-Console: 1", "Origin: http://evil.example", NULL };
    static const char *const https_origin[] = { "X-Fakedb-Console: 1", "Origin: https://127.0.0.1", NULL };
    static const char *const null_origin[] = { "X-Fakedb-Console: 1", "Origin: null", NULL };
    const char *const *forged[] = { NULL, no_mark, wrong_mark, cross_site, same_site, foreign, https_origin, null_origin };
    for (size_t i = 0; i < sizeof forged / sizeof forged[0]; i++) {
        http h = req("POST", "/fake/console/api/clock/advance", "{\"ms\":1000}", forged[i]);
        ck_assert_msg(h.status == 403, "forgery %zu: %ld", i, h.status);
        ck_assert_ptr_nonnull(fdbt_get(h.json, "error"));
        http_free(&h);
    }
    ck_assert_int_eq(now_ms(), t0);

    http h = change("POST", "/fake/console/api/clock/advance", "{\"ms\":1000}");
    ck_assert_int_eq(h.status, 200);
    ck_assert_int_eq(json_object_get_int64(fdbt_get(h.json, "now_ms")), t0 + 1000);
    ck_assert(json_object_get_boolean(fdbt_get(h.json, "fake")));
    http_free(&h);

    /* the page's own origin, as a browser sends it */
    char origin[200], *hp = strstr(fakedb_endpoint(fdbt_db), "://");
    snprintf(origin, sizeof origin, "Origin: http://%s", hp + 3);
    const char *const own[] = { "X-Fakedb-Console: 1", "Sec-Fetch-Site: same-origin", origin, NULL };
    h = req("POST", "/fake/console/api/clock/advance", "{\"ms\":500}", own);
    ck_assert_int_eq(h.status, 200);
    http_free(&h);
    ck_assert_int_eq(now_ms(), t0 + 1500);

    static const char *const bodies[] = { "", "{}", "{\"ms\":-1}", "{\"ms\":\"5\"}", "{\"ms\":1.5}", "[1]", "{\"ms\":" };
    for (size_t i = 0; i < sizeof bodies / sizeof bodies[0]; i++) {
        h = change("POST", "/fake/console/api/clock/advance", bodies[i]);
        ck_assert_msg(h.status == 400, "body '%s': %ld", bodies[i], h.status);
        http_free(&h);
    }
    ck_assert_int_eq(now_ms(), t0 + 1500);
    h = change("POST", "/fake/console/api/clock/set", "{\"now_ms\":1}");
    ck_assert_int_eq(h.status, 404);
    http_free(&h);
}
END_TEST

START_TEST(clock_advance_refused_on_system_clock)
{
    fdbt_stop();
    fdbt_start_opts(&(fakedb_options){ .fake_clock = false });
    http h = change("POST", "/fake/console/api/clock/advance", "{\"ms\":1000}");
    ck_assert_int_eq(h.status, 400);
    http_free(&h);
    h = get("/fake/console/api/clock");
    ck_assert(!json_object_get_boolean(fdbt_get(h.json, "fake")));
    http_free(&h);
}
END_TEST

START_TEST(faults_add_fire_remove)
{
    fdbt_table("Flt", NULL, NULL);
    http h = req("POST", "/fake/console/api/faults", "{\"kind\":\"error\",\"operation\":\"GetItem\"}", NULL);
    ck_assert_int_eq(h.status, 403);
    http_free(&h);
    h = get("/fake/console/api/faults");
    ck_assert_uint_eq(json_object_array_length(fdbt_get(h.json, "faults")), 0);
    http_free(&h);

    h = change("POST", "/fake/console/api/faults", "{\"kind\":\"error\",\"operation\":\"GetItem\",\"table\":\"Flt\",\"count\":2}");
    ck_assert_int_eq(h.status, 200);
    long id = (long)json_object_get_int64(fdbt_get(h.json, "id"));
    ck_assert_str_eq(h.nosniff, "nosniff");
    http_free(&h);
    fdbt_resp r = fdbt_call("GetItem", "{\"TableName\":\"Flt\",\"Key\":{\"pk\":{\"S\":\"x\"}}}");
    ck_assert_int_eq(r.status, 400);
    ck_assert_str_eq(fdbt_error(&r), "ProvisionedThroughputExceededException");
    fdbt_free(&r);
    h = get("/fake/console/api/faults");
    ck_assert_uint_eq(json_object_array_length(fdbt_get(h.json, "faults")), 1);
    ck_assert_int_eq(json_object_get_int(fdbt_get(h.json, "faults.0.fired")), 1);
    ck_assert_str_eq(json_object_get_string(fdbt_get(h.json, "faults.0.table")), "Flt");
    ck_assert_int_eq(json_object_get_int(fdbt_get(h.json, "fired_total")), 1);
    http_free(&h);

    char path[64];
    snprintf(path, sizeof path, "/fake/console/api/faults/%ld", id);
    h = req("DELETE", path, NULL, NULL);
    ck_assert_int_eq(h.status, 403);
    http_free(&h);
    h = get("/fake/console/api/faults");
    ck_assert_uint_eq(json_object_array_length(fdbt_get(h.json, "faults")), 1);
    http_free(&h);
    h = change("DELETE", path, NULL);
    ck_assert_int_eq(h.status, 200);
    http_free(&h);
    h = get("/fake/console/api/faults");
    ck_assert_uint_eq(json_object_array_length(fdbt_get(h.json, "faults")), 0);
    http_free(&h);

    static const char *const bad[] = { "{\"kind\":\"explode\"}", "not json", "{\"kind\":\"error\",\"count\":-1}" };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        h = change("POST", "/fake/console/api/faults", bad[i]);
        ck_assert_msg(h.status == 400, "%s: %ld", bad[i], h.status);
        http_free(&h);
    }
    h = change("DELETE", "/fake/console/api/faults/x1", NULL);
    ck_assert_int_eq(h.status, 400);
    http_free(&h);
}
END_TEST

START_TEST(recent_requests)
{
    fdbt_table("Req", NULL, NULL);
    fdbt_expect_ok("PutItem", "{\"TableName\":\"Req\",\"Item\":{\"pk\":{\"S\":\"a\"}}}");
    fdbt_resp r = fdbt_call("GetItem", "{\"TableName\":\"Missing\",\"Key\":{\"pk\":{\"S\":\"a\"}}}");
    ck_assert_int_eq(r.status, 400);
    fdbt_free(&r);
    http h = get("/fake/console/api/requests?after=0");
    ck_assert_int_eq(h.status, 200);
    json_object *list = fdbt_get(h.json, "requests");
    size_t n = json_object_array_length(list);
    ck_assert_uint_ge(n, 3);
    json_object *last = json_object_array_get_idx(list, n - 1), *put = json_object_array_get_idx(list, n - 2);
    ck_assert_str_eq(json_object_get_string(fdbt_get(last, "operation")), "GetItem");
    ck_assert_str_eq(json_object_get_string(fdbt_get(last, "table")), "Missing");
    ck_assert_int_eq(json_object_get_int(fdbt_get(last, "status")), 400);
    ck_assert_str_eq(json_object_get_string(fdbt_get(last, "error")), "ResourceNotFoundException");
    ck_assert_str_eq(json_object_get_string(fdbt_get(put, "operation")), "PutItem");
    ck_assert_str_eq(json_object_get_string(fdbt_get(put, "error")), "");
    ck_assert_int_eq(json_object_get_int(fdbt_get(put, "status")), 200);
    ck_assert_int_ge(json_object_get_int(fdbt_get(put, "latency_us")), 0);
    int64_t seq = json_object_get_int64(fdbt_get(h.json, "seq"));
    ck_assert_int_eq(json_object_get_int64(fdbt_get(last, "seq")), seq);
    ck_assert_int_eq(json_object_get_int(fdbt_get(h.json, "totals.GetItem")), 1);
    ck_assert_int_eq(json_object_get_int(fdbt_get(h.json, "totals.PutItem")), 1);
    http_free(&h);
    /* the console's own requests are not in the ring */
    char path[80];
    snprintf(path, sizeof path, "/fake/console/api/requests?after=%lld", (long long)seq);
    h = get(path);
    ck_assert_uint_eq(json_object_array_length(fdbt_get(h.json, "requests")), 0);
    http_free(&h);
    /* an unknown operation */
    r = fdbt_raw("POST", "/", "DynamoDB_20120810.Explode", "application/x-amz-json-1.0",
                 "AWS4-HMAC-SHA256 Credential=a/20230101/us-east-1/dynamodb/aws4_request, SignedHeaders=host, Signature=00",
                 "{}", 2);
    fdbt_free(&r);
    h = get(path);
    ck_assert_uint_eq(json_object_array_length(fdbt_get(h.json, "requests")), 1);
    ck_assert_str_eq(json_object_get_string(fdbt_get(h.json, "requests.0.operation")), "unknown");
    http_free(&h);

    /* the ring keeps the last 512, in order */
    for (int i = 0; i < 600; i++)
        fdbt_expect_ok("GetItem", "{\"TableName\":\"Req\",\"Key\":{\"pk\":{\"S\":\"a\"}}}");
    h = get("/fake/console/api/requests?after=0");
    list = fdbt_get(h.json, "requests");
    ck_assert_uint_eq(json_object_array_length(list), 512);
    int64_t top = json_object_get_int64(fdbt_get(h.json, "seq"));
    for (size_t i = 0; i < 512; i++)
        ck_assert_int_eq(json_object_get_int64(fdbt_get(json_object_array_get_idx(list, i), "seq")), top - 511 + (int64_t)i);
    http_free(&h);
    static const char *const bad[] = { "?after=x", "?after=", "?after=-1x" };
    for (size_t i = 0; i < 3; i++) {
        snprintf(path, sizeof path, "/fake/console/api/requests%s", bad[i]);
        h = get(path);
        ck_assert_msg(h.status == 400, "%s: %ld", bad[i], h.status);
        http_free(&h);
    }
}
END_TEST

START_TEST(table_name_longest_is_kept)
{
    char name[256], body[600];
    memset(name, 'n', 255);
    name[255] = 0;
    snprintf(body, sizeof body, "{\"TableName\":\"%s\",\"Key\":{\"pk\":{\"S\":\"a\"}}}", name);
    fdbt_resp r = fdbt_call("GetItem", body);
    fdbt_free(&r);
    http h = get("/fake/console/api/requests");
    json_object *list = fdbt_get(h.json, "requests");
    ck_assert_str_eq(json_object_get_string(fdbt_get(json_object_array_get_idx(list, json_object_array_length(list) - 1), "table")), name);
    http_free(&h);
}
END_TEST

/* With --credentials, the console answers an unsigned request exactly as the other
 * endpoints of /fake/ (but health) do: it is routed through the same dispatch. */
START_TEST(credentials_same_rule_as_fake)
{
    fdbt_stop();
    fdbt_start_opts(&(fakedb_options){ .fake_clock = true, .credentials = "AKID:secret" });
    http ref = get("/fake/clock");
    static const char *const paths[] = { "/fake/console", "/fake/console/api/clock", "/fake/console/api/tables",
                                         "/fake/console/api/locks", "/fake/console/api/requests" };
    for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++) {
        http h = get(paths[i]);
        ck_assert_msg(h.status == ref.status, "%s: %ld, /fake/clock: %ld", paths[i], h.status, ref.status);
        http_free(&h);
    }
    http_free(&ref);
    ref = req("POST", "/fake/clock/advance", "{\"ms\":0}", k_console);
    http h = change("POST", "/fake/console/api/clock/advance", "{\"ms\":0}");
    ck_assert_int_eq(h.status, ref.status);
    http_free(&h);
    http_free(&ref);
    /* and the forgery rule holds with credentials too */
    h = req("POST", "/fake/console/api/clock/advance", "{\"ms\":0}", NULL);
    ck_assert_int_ge(h.status, 400);
    http_free(&h);
}
END_TEST


/* Requests from several threads while the console reads the ring and the locks: every
 * request is recorded once, in sequence order, none torn. */
#define WRITERS 4
#define PER_WRITER 150

static void *writer(void *arg)
{
    char body[200];
    snprintf(body, sizeof body, "{\"TableName\":\"Con\",\"Key\":{\"pk\":{\"S\":\"w%ld\"}}}", (long)(intptr_t)arg);
    for (int i = 0; i < PER_WRITER; i++) {
        fdbt_resp r = fdbt_call("GetItem", body);
        if (r.status != 200)
            fprintf(stderr, "writer: %ld\n", r.status);
        fdbt_free(&r);
    }
    return NULL;
}

START_TEST(concurrent_requests_and_console)
{
    fdbt_table("Con", NULL, NULL);
    put_lock("Con", "LOCK#w", NULL, "r1", true);
    pthread_t th[WRITERS];
    for (long i = 0; i < WRITERS; i++)
        ck_assert_int_eq(pthread_create(&th[i], NULL, writer, (void *)(intptr_t)i), 0);
    int64_t after = 0, seen = 0;
    bool done = false;
    while (!done) {
        char path[80];
        snprintf(path, sizeof path, "/fake/console/api/requests?after=%lld", (long long)after);
        http h = get(path);
        ck_assert_int_eq(h.status, 200);
        json_object *list = fdbt_get(h.json, "requests");
        for (size_t i = 0; i < json_object_array_length(list); i++) {
            json_object *e = json_object_array_get_idx(list, i);
            int64_t seq = json_object_get_int64(fdbt_get(e, "seq"));
            if (i > 0)
                ck_assert_int_eq(seq, after + 1); /* one answer: consecutive entries */
            else
                ck_assert_int_gt(seq, after);
            after = seq;
            if (!strcmp(json_object_get_string(fdbt_get(e, "operation")), "GetItem")) {
                ck_assert_str_eq(json_object_get_string(fdbt_get(e, "table")), "Con");
                ck_assert_int_eq(json_object_get_int(fdbt_get(e, "status")), 200);
                seen++;
            }
        }
        done = json_object_get_int(fdbt_get(h.json, "totals.GetItem")) == WRITERS * PER_WRITER;
        http_free(&h);
        h = get("/fake/console/api/locks");
        ck_assert_int_eq(h.status, 200);
        ck_assert_uint_eq(json_object_array_length(fdbt_get(h.json, "locks")), 1);
        http_free(&h);
    }
    for (int i = 0; i < WRITERS; i++)
        pthread_join(th[i], NULL);
    /* the last read may have been before the last entries: read what is left */
    char path[80];
    snprintf(path, sizeof path, "/fake/console/api/requests?after=%lld", (long long)after);
    http h = get(path);
    seen += (int64_t)json_object_array_length(fdbt_get(h.json, "requests"));
    http_free(&h);
    /* the ring keeps 512: the reader saw every one it did not fall behind on, at most all */
    ck_assert_int_le(seen, WRITERS * PER_WRITER);
    ck_assert_int_gt(seen, 0);
}
END_TEST

typedef struct poll_arg {
    char path[128];
    atomic_long tid;
    http answer;
    int64_t took_ms;
} poll_arg;

static void *long_poll(void *arg)
{
    poll_arg *p = arg;
    atomic_store(&p->tid, (long)syscall(SYS_gettid));
    int64_t t0 = dl_check_mono_ms();
    p->answer = req_any_thread("GET", p->path, NULL, NULL);
    p->took_ms = dl_check_mono_ms() - t0;
    return NULL;
}

/* GET /fake/console/api/requests?wait_ms=N: waits, holding no worker thread, until a
 * request is made after `after`, or N ms pass. */
START_TEST(requests_long_poll)
{
    fdbt_table("Lpo", NULL, NULL);
    http h = get("/fake/console/api/requests");
    int64_t seq = json_object_get_int64(fdbt_get(h.json, "seq"));
    http_free(&h);

    /* nothing new: answers empty once the wait is over */
    char path[128];
    snprintf(path, sizeof path, "/fake/console/api/requests?after=%lld&wait_ms=200", (long long)seq);
    int64_t t0 = dl_check_mono_ms();
    h = get(path);
    int64_t took = dl_check_mono_ms() - t0;
    ck_assert_int_eq(h.status, 200);
    ck_assert_uint_eq(json_object_array_length(fdbt_get(h.json, "requests")), 0);
    ck_assert_int_ge(took, 190);
    http_free(&h);

    /* something already there: at once */
    snprintf(path, sizeof path, "/fake/console/api/requests?after=%lld&wait_ms=30000", (long long)seq - 1);
    t0 = dl_check_mono_ms();
    h = get(path);
    ck_assert_uint_eq(json_object_array_length(fdbt_get(h.json, "requests")), 1);
    ck_assert_int_lt(dl_check_mono_ms() - t0, dl_check_bound_ms(10000));
    http_free(&h);

    /* a poll that waits is answered by the next request, long before its wait is over */
    poll_arg p;
    memset(&p, 0, sizeof p);
    snprintf(p.path, sizeof p.path, "/fake/console/api/requests?after=%lld&wait_ms=60000", (long long)seq);
    pthread_t th;
    ck_assert_int_eq(pthread_create(&th, NULL, long_poll, &p), 0);
    while (!atomic_load(&p.tid))
        sched_yield();
    ck_assert(dl_check_wait_thread_sleeps(atomic_load(&p.tid), 10000));
    /* while it waits, the server serves others */
    h = get("/fake/console/api/clock");
    ck_assert_int_eq(h.status, 200);
    http_free(&h);
    fdbt_expect_ok("GetItem", "{\"TableName\":\"Lpo\",\"Key\":{\"pk\":{\"S\":\"a\"}}}");
    pthread_join(th, NULL);
    ck_assert_int_eq(p.answer.curl_rc, CURLE_OK);
    ck_assert_int_eq(p.answer.status, 200);
    ck_assert_uint_eq(json_object_array_length(fdbt_get(p.answer.json, "requests")), 1);
    ck_assert_str_eq(json_object_get_string(fdbt_get(p.answer.json, "requests.0.operation")), "GetItem");
    ck_assert_int_lt(p.took_ms, dl_check_bound_ms(30000));
    http_free(&p.answer);

    static const char *const bad[] = { "wait_ms=x", "wait_ms=-1", "wait_ms=60001", "wait_ms=" };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        snprintf(path, sizeof path, "/fake/console/api/requests?%s", bad[i]);
        h = get(path);
        ck_assert_msg(h.status == 400, "%s: %ld", bad[i], h.status);
        http_free(&h);
    }
}
END_TEST

/* True once the server holds a console long poll suspended (read from the server's own
 * list: the client thread asleep only says that its request was sent, and a request not
 * yet read when the server stops is closed unanswered, as a server's stop does). */
static bool long_poll_suspended(void)
{
    bool any = false;
    pthread_mutex_lock(&fdbt_db->wait_lock);
    for (const fakedb__waiter *w = fdbt_db->waiters; w; w = w->next)
        any = any || w->requests;
    pthread_mutex_unlock(&fdbt_db->wait_lock);
    return any;
}

/* A long poll still waiting when the server stops is answered, not left hanging. */
START_TEST(requests_long_poll_at_stop)
{
    http h = get("/fake/console/api/requests");
    int64_t seq = json_object_get_int64(fdbt_get(h.json, "seq"));
    http_free(&h);
    poll_arg p;
    memset(&p, 0, sizeof p);
    snprintf(p.path, sizeof p.path, "/fake/console/api/requests?after=%lld&wait_ms=60000", (long long)seq);
    pthread_t th;
    ck_assert_int_eq(pthread_create(&th, NULL, long_poll, &p), 0);
    while (!atomic_load(&p.tid))
        sched_yield();
    ck_assert(dl_check_wait_thread_sleeps(atomic_load(&p.tid), 10000));
    int64_t until = dl_check_mono_ms() + dl_check_bound_ms(10000);
    while (!long_poll_suspended() && dl_check_mono_ms() < until)
        sched_yield();
    ck_assert_msg(long_poll_suspended(), "the server never suspended the long poll");
    fakedb_stop(fdbt_db);
    fdbt_db = NULL;
    pthread_join(th, NULL);
    ck_assert_int_eq(p.answer.curl_rc, CURLE_OK);
    ck_assert_int_eq(p.answer.status, 200);
    ck_assert_uint_eq(json_object_array_length(fdbt_get(p.answer.json, "requests")), 0);
    ck_assert_int_lt(p.took_ms, dl_check_bound_ms(30000));
    http_free(&p.answer);
}
END_TEST

int main(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
    Suite *s = suite_create("fakedb_console");
    TCase *tc = tcase_create("console");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, page_and_headers);
    tcase_add_test(tc, tables_and_items);
    tcase_add_test(tc, item_history_from_stream);
    tcase_add_test(tc, locks_and_unchanged_time);
    tcase_add_test(tc, clock_changes_refuse_forgeries);
    tcase_add_test(tc, clock_advance_refused_on_system_clock);
    tcase_add_test(tc, faults_add_fire_remove);
    tcase_add_test(tc, recent_requests);
    tcase_add_test(tc, table_name_longest_is_kept);
    tcase_add_test(tc, credentials_same_rule_as_fake);
    tcase_add_test(tc, concurrent_requests_and_console);
    tcase_add_test(tc, requests_long_poll);
    tcase_add_test(tc, requests_long_poll_at_stop);
    suite_add_tcase(s, tc);
    int rc = dl_check_run(s);
    curl_global_cleanup();
    return rc;
}
