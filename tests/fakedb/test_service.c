/* test_service.c: fakedb as a network service that CI starts (issue #23, items 1-5), over
 * real sockets: a port in use is refused (library and program) while the first server
 * keeps every request; CORS preflights and headers, restricted by origin and off; the
 * /fake/ endpoints locked by --credentials (signed or bearer), fault rules' limits;
 * HTTP framing that could smuggle a request (CL+TE, other codings, malformed names) is
 * refused and the connection closed; the request log escapes control characters; lone
 * surrogate escapes never merge two keys. */
#include "fdbt.h"

#include <arpa/inet.h>
#include <check.h>
#include <curl/curl.h>

#include "dl_check.h"
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define PROMPT_MS dl_check_bound_ms(5000)
#define AUTH "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20231114/us-east-1/dynamodb/aws4_request, SignedHeaders=host;x-amz-date, Signature=00ff"
#define CT "application/x-amz-json-1.0"

static void teardown(void)
{
    fdbt_stop();
}

static void start_with(const fakedb_options *o)
{
    fakedb_options d = { .fake_clock = true, .fake_clock_start_ms = 1700000000000LL, .threads = 2 };
    fdbt_start_opts(o ? o : &d);
}

/* ---- HTTP with any headers: the answer's status, headers and body ---- */

typedef struct answer {
    long status;
    char headers[8192];
    char *body;
    size_t len;
} answer;

static size_t on_data(char *p, size_t sz, size_t n, void *arg)
{
    answer *a = arg;
    char *q = realloc(a->body, a->len + sz * n + 1);
    ck_assert_ptr_nonnull(q);
    memcpy(q + a->len, p, sz * n);
    a->body = q;
    a->len += sz * n;
    a->body[a->len] = 0;
    return sz * n;
}

static size_t on_head(char *p, size_t sz, size_t n, void *arg)
{
    answer *a = arg;
    size_t have = strlen(a->headers);
    if (have + sz * n < sizeof a->headers) {
        memcpy(a->headers + have, p, sz * n);
        a->headers[have + sz * n] = 0;
    }
    return sz * n;
}

/* method on path with headers (NULL-terminated, may be NULL); userpwd signs with SigV4. */
static answer http(const char *method, const char *path, const char *const *headers, const char *body,
                   const char *userpwd)
{
    answer a;
    memset(&a, 0, sizeof a);
    CURL *c = curl_easy_init();
    ck_assert_ptr_nonnull(c);
    char url[512];
    snprintf(url, sizeof url, "%s%s", fakedb_endpoint(fdbt_db), path);
    struct curl_slist *hl = NULL;
    for (size_t i = 0; headers && headers[i]; i++)
        hl = curl_slist_append(hl, headers[i]);
    if (!userpwd) /* curl 7.88 would sign the removed header */
        hl = curl_slist_append(hl, "Expect:");
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    if (body) {
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)strlen(body));
    }
    if (userpwd) {
        curl_easy_setopt(c, CURLOPT_AWS_SIGV4, "aws:amz:us-east-1:dynamodb");
        curl_easy_setopt(c, CURLOPT_USERPWD, userpwd);
    }
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, hl);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &a);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_head);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, &a);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)PROMPT_MS);
    if (curl_easy_perform(c) == CURLE_OK)
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &a.status);
    curl_slist_free_all(hl);
    curl_easy_cleanup(c);
    if (!a.body)
        a.body = calloc(1, 1);
    return a;
}

/* The value of header `name` in a (case-insensitive name), or NULL. */
static const char *header_of(const answer *a, const char *name, char *out, size_t cap)
{
    size_t nl = strlen(name);
    for (const char *l = a->headers; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
        if (!strncasecmp(l, name, nl) && l[nl] == ':') {
            const char *v = l + nl + 1;
            while (*v == ' ')
                v++;
            size_t n = strcspn(v, "\r\n");
            if (n >= cap)
                n = cap - 1;
            memcpy(out, v, n);
            out[n] = 0;
            return out;
        }
    }
    return NULL;
}

static void answer_free(answer *a)
{
    free(a->body);
    a->body = NULL;
}

/* ---- raw sockets ---- */

/* Sends raw and reads until the server closes; true when it closed within PROMPT_MS
 * (the answer in out), false when the connection stayed open. */
static bool exchange_until_closed(const char *raw, char *out, size_t cap)
{
    int fd = fdbt_dial(fakedb_port(fdbt_db));
    size_t n = strlen(raw);
    ck_assert_int_eq(send(fd, raw, n, MSG_NOSIGNAL), (ssize_t)n);
    size_t got = 0;
    out[0] = 0;
    bool closed = false;
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        clock_gettime(CLOCK_MONOTONIC, &t);
        int64_t left = PROMPT_MS - ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000);
        struct pollfd p = { .fd = fd, .events = POLLIN };
        if (left <= 0 || poll(&p, 1, (int)left) <= 0)
            break;
        char buf[4096];
        ssize_t k = recv(fd, buf, sizeof buf, 0);
        if (k <= 0) {
            closed = true;
            break;
        }
        size_t c = (size_t)k < cap - 1 - got ? (size_t)k : cap - 1 - got;
        memcpy(out + got, buf, c);
        got += c;
        out[got] = 0;
    }
    close(fd);
    return closed;
}

/* ---- 1. one server per port ---- */

START_TEST(port_in_use_is_refused)
{
    start_with(NULL);
    int port = fakedb_port(fdbt_db);
    char want[64];
    snprintf(want, sizeof want, "127.0.0.1:%d", port);
    /* The library: a second server on the port fails and says why. */
    fakedb_error err;
    fakedb *second = fakedb_start(&(fakedb_options){ .port = port }, &err);
    ck_assert_ptr_null(second);
    ck_assert_int_eq(err.code, FAKEDB_EIO);
    ck_assert_msg(strstr(err.message, want) && strstr(err.message, "Address already in use"), "%s", err.message);
    /* The program: exits non-zero, naming the address and the port. */
    int p[2];
    ck_assert_int_eq(pipe(p), 0);
    char portarg[16];
    snprintf(portarg, sizeof portarg, "%d", port);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        dup2(p[1], 2);
        dup2(p[1], 1);
        close(p[0]);
        close(p[1]);
        execl(fdbt_program(), fdbt_program(), "--port", portarg, (char *)NULL);
        _exit(127);
    }
    close(p[1]);
    char out[1024];
    size_t got = 0;
    ssize_t k;
    while (got < sizeof out - 1 && (k = read(p[0], out + got, sizeof out - 1 - got)) > 0)
        got += (size_t)k;
    out[got] = 0;
    close(p[0]);
    int st;
    waitpid(pid, &st, 0);
    ck_assert(WIFEXITED(st));
    ck_assert_int_eq(WEXITSTATUS(st), 1);
    ck_assert_msg(strstr(out, want) && strstr(out, "Address already in use") && !strstr(out, "listening"),
                  "output: %s", out);
    /* The first server gets every request, each on a connection of its own. */
    for (int i = 0; i < 8; i++) {
        answer a = http("POST", "/", (const char *const[]){ "X-Amz-Target: DynamoDB_20120810.ListTables",
                                                           "Content-Type: " CT, "Authorization: " AUTH,
                                                           "X-Amz-Date: 20231114T000000Z", NULL },
                        "{}", NULL);
        ck_assert_int_eq(a.status, 200);
        answer_free(&a);
    }
    ck_assert_int_eq(fakedb_get_stats(fdbt_db, "ListTables").requests, 8);
    /* A stopped server's port is taken again at once (TIME_WAIT does not hold it). */
    fdbt_stop();
    fdbt_start_opts(&(fakedb_options){ .port = port, .threads = 2 });
    ck_assert_int_eq(fakedb_port(fdbt_db), port);
}
END_TEST

/* ---- 2. CORS ---- */

static answer preflight(const char *path, const char *origin, const char *asked)
{
    char o[256], h[512];
    snprintf(o, sizeof o, "Origin: %s", origin);
    snprintf(h, sizeof h, "Access-Control-Request-Headers: %s", asked);
    return http("OPTIONS", path, (const char *const[]){ o, "Access-Control-Request-Method: POST", h, NULL }, NULL,
                NULL);
}

static answer list_tables_from(const char *origin)
{
    char o[256];
    snprintf(o, sizeof o, "Origin: %s", origin);
    return http("POST", "/", (const char *const[]){ o, "X-Amz-Target: DynamoDB_20120810.ListTables", "Content-Type: " CT,
                                                   "Authorization: " AUTH, "X-Amz-Date: 20231114T000000Z", NULL },
                "{}", NULL);
}

START_TEST(cors_any_origin_by_default)
{
    start_with(NULL);
    const char *sdk = "amz-sdk-invocation-id,amz-sdk-request,authorization,content-type,x-amz-date,"
                      "x-amz-target,x-amz-user-agent,x-amz-security-token";
    answer a = preflight("/", "http://localhost:3000", sdk);
    char v[1024];
    ck_assert_msg(a.status >= 200 && a.status < 300, "preflight: %ld %s", a.status, a.headers);
    ck_assert_str_eq(header_of(&a, "Access-Control-Allow-Origin", v, sizeof v), "*");
    ck_assert_ptr_nonnull(strstr(header_of(&a, "Access-Control-Allow-Methods", v, sizeof v), "POST"));
    ck_assert_str_eq(header_of(&a, "Access-Control-Allow-Headers", v, sizeof v), sdk);
    ck_assert_ptr_nonnull(header_of(&a, "Access-Control-Max-Age", v, sizeof v));
    answer_free(&a);
    /* Without Access-Control-Request-Headers: the headers the SDKs send. */
    a = http("OPTIONS", "/", (const char *const[]){ "Origin: http://x.test", "Access-Control-Request-Method: POST", NULL },
             NULL, NULL);
    ck_assert_int_eq(a.status, 200);
    header_of(&a, "Access-Control-Allow-Headers", v, sizeof v);
    ck_assert_msg(strstr(v, "x-amz-target") && strstr(v, "amz-sdk-invocation-id") && strstr(v, "x-amz-security-token"),
                  "%s", v);
    answer_free(&a);
    /* A request asked for headers that are not tokens: they are not echoed. */
    a = preflight("/", "http://x.test", "x-a;<script>");
    ck_assert_int_eq(a.status, 200);
    ck_assert_ptr_null(strstr(header_of(&a, "Access-Control-Allow-Headers", v, sizeof v), "script"));
    answer_free(&a);
    /* The answer itself: the origin allowed and the AWS headers exposed. */
    a = list_tables_from("http://localhost:3000");
    ck_assert_int_eq(a.status, 200);
    ck_assert_str_eq(header_of(&a, "Access-Control-Allow-Origin", v, sizeof v), "*");
    header_of(&a, "Access-Control-Expose-Headers", v, sizeof v);
    ck_assert_msg(strstr(v, "x-amzn-RequestId") && strstr(v, "x-amz-crc32") && strstr(v, "x-amz-id-2"), "%s", v);
    answer_free(&a);
    /* /fake/ too (a browser console), and a request without Origin gets no CORS headers. */
    a = preflight("/fake/reset", "http://localhost:3000", "content-type");
    ck_assert_int_eq(a.status, 200);
    answer_free(&a);
    a = http("GET", "/fake/health", NULL, NULL, NULL);
    ck_assert_ptr_null(header_of(&a, "Access-Control-Allow-Origin", v, sizeof v));
    answer_free(&a);
}
END_TEST

START_TEST(cors_restricted_and_off)
{
    start_with(&(fakedb_options){ .cors = "http://a.test, https://b.test:8443", .threads = 2 });
    char v[1024];
    answer a = preflight("/", "https://b.test:8443", "content-type");
    ck_assert_int_eq(a.status, 200);
    ck_assert_str_eq(header_of(&a, "Access-Control-Allow-Origin", v, sizeof v), "https://b.test:8443");
    ck_assert_str_eq(header_of(&a, "Vary", v, sizeof v), "Origin");
    answer_free(&a);
    a = preflight("/", "http://evil.test", "content-type");
    ck_assert_int_eq(a.status, 403);
    ck_assert_ptr_null(header_of(&a, "Access-Control-Allow-Origin", v, sizeof v));
    ck_assert_ptr_null(header_of(&a, "Access-Control-Allow-Methods", v, sizeof v));
    answer_free(&a);
    /* A prefix of an allowed origin is another origin. */
    a = list_tables_from("http://a.test.evil.test");
    ck_assert_int_eq(a.status, 200);
    ck_assert_ptr_null(header_of(&a, "Access-Control-Allow-Origin", v, sizeof v));
    answer_free(&a);
    a = list_tables_from("http://a.test");
    ck_assert_str_eq(header_of(&a, "Access-Control-Allow-Origin", v, sizeof v), "http://a.test");
    answer_free(&a);
    fdbt_stop();
    /* Off: no preflight answer (an OPTIONS is an unknown request again), no headers. */
    start_with(&(fakedb_options){ .cors = "", .threads = 2 });
    a = preflight("/", "http://a.test", "content-type");
    ck_assert_int_eq(a.status, 404);
    ck_assert_ptr_null(header_of(&a, "Access-Control-Allow-Origin", v, sizeof v));
    answer_free(&a);
    a = list_tables_from("http://a.test");
    ck_assert_int_eq(a.status, 200);
    ck_assert_ptr_null(header_of(&a, "Access-Control-Allow-Origin", v, sizeof v));
    answer_free(&a);
}
END_TEST

/* A caller built before fakedb_options grew passes the old size: the new members are
 * not read (here: garbage past the old size would make CORS restrictive). */
START_TEST(options_of_an_older_caller)
{
    fakedb_options o;
    memset(&o, 0xff, sizeof o);
    memset(&o, 0, offsetof(fakedb_options, max_connections) + sizeof(int));
    fakedb_error err;
    fdbt_db = fakedb_start_sized(offsetof(fakedb_options, max_connections) + sizeof(int), &o, &err);
    ck_assert_msg(fdbt_db != NULL, "%s", err.message);
    answer a = list_tables_from("http://any.test");
    char v[64];
    ck_assert_str_eq(header_of(&a, "Access-Control-Allow-Origin", v, sizeof v), "*");
    answer_free(&a);
}
END_TEST

/* ---- 3. /fake/ locked by --credentials; fault limits ---- */

START_TEST(admin_needs_credentials)
{
    start_with(&(fakedb_options){ .credentials = "AKIDADMIN:admin-secret", .fake_clock = true,
                                  .fake_clock_start_ms = 1700000000000LL, .threads = 2 });
    ck_assert_int_eq(fakedb_create_table(fdbt_db, "Kept", "pk", NULL, NULL), 0);
    const char *paths[][2] = { { "POST", "/fake/reset" },       { "GET", "/fake/clock" },
                               { "GET", "/fake/faults" },       { "DELETE", "/fake/faults" },
                               { "GET", "/fake/stats" },        { "GET", "/fake/metrics" },
                               { "POST", "/fake/clock/advance" }, { "GET", "/fake/console" },
                               { "GET", "/fake/" } };
    for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++) {
        answer a = http(paths[i][0], paths[i][1], NULL, NULL, NULL);
        ck_assert_msg(a.status == 403, "%s %s: %ld", paths[i][0], paths[i][1], a.status);
        json_object *o = json_tokener_parse(a.body);
        ck_assert_msg(o && strstr(fdbt_str(&(fdbt_resp){ .json = o }, "error"), "credentials"), "%s", a.body);
        json_object_put(o);
        answer_free(&a);
    }
    /* A wrong bearer token, a signature with another secret: refused too. */
    answer a = http("POST", "/fake/reset", (const char *const[]){ "Authorization: Bearer admin-secreT", NULL }, NULL, NULL);
    ck_assert_int_eq(a.status, 403);
    answer_free(&a);
    a = http("POST", "/fake/reset", NULL, "{}", "AKIDADMIN:wrong");
    ck_assert_int_eq(a.status, 403);
    ck_assert_msg(strstr(a.body, "InvalidSignature"), "%s", a.body);
    answer_free(&a);
    ck_assert_int_eq(fakedb_create_table(fdbt_db, "Kept", "pk", NULL, NULL), FAKEDB_EINUSE); /* not reset */
    /* The health check is open. */
    a = http("GET", "/fake/health", NULL, NULL, NULL);
    ck_assert_int_eq(a.status, 200);
    answer_free(&a);
    /* Bearer and SigV4 (at the server's fake time: 2023, far from now) are let in. */
    a = http("GET", "/fake/clock", (const char *const[]){ "Authorization: Bearer admin-secret", NULL }, NULL, NULL);
    ck_assert_int_eq(a.status, 200);
    answer_free(&a);
    /* curl signs with the system's time: move the fake clock there first. */
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ck_assert_int_eq(fakedb_clock_set(fdbt_db, (int64_t)ts.tv_sec * 1000), 0);
    /* (curl 7.88 signs the query as written, not sorted as SigV4 wants: sorted here.) */
    a = http("GET", "/fake/clock/wait?timeout_ms=0&until_ms=1", NULL, NULL, "AKIDADMIN:admin-secret");
    ck_assert_msg(a.status == 200, "%ld %s", a.status, a.body);
    answer_free(&a);
    a = http("POST", "/fake/reset", NULL, "{}", "AKIDADMIN:admin-secret");
    ck_assert_msg(a.status == 200, "%ld %s", a.status, a.body);
    answer_free(&a);
    ck_assert_int_eq(fakedb_create_table(fdbt_db, "Kept", "pk", NULL, NULL), 0); /* reset */
}
END_TEST

/* This process's resident memory, in kB. */
#if defined(__has_include)
#if __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h>
#endif
#endif

static bool under_valgrind(void)
{
#ifdef RUNNING_ON_VALGRIND
    return RUNNING_ON_VALGRIND != 0;
#else
    return false;
#endif
}

static long rss_kb(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    long pages = -1, rss = -1;
    if (f) {
        if (fscanf(f, "%ld %ld", &pages, &rss) != 2)
            rss = -1;
        fclose(f);
    }
    return rss < 0 ? -1 : rss * (sysconf(_SC_PAGESIZE) / 1024);
}

START_TEST(fault_limits)
{
    start_with(NULL);
    size_t big = 10u << 20;
    char *body = malloc(big + 64);
    ck_assert_ptr_nonnull(body);
    int n = snprintf(body, 64, "{\"kind\":\"error\",\"error_type\":\"");
    memset(body + n, 'E', big);
    memcpy(body + n + big, "\"}", 3);
    long before = rss_kb();
    answer a;
    for (int i = 0; i < 12; i++) {
        a = http("POST", "/fake/faults", (const char *const[]){ "Content-Type: application/json", NULL }, body,
                        NULL);
        ck_assert_int_eq(a.status, 400);
        ck_assert_msg(strstr(a.body, "larger than 65536 bytes, the limit of /fake/ requests"), "%s", a.body);
        answer_free(&a);
        /* the same sent in chunks, with no length up front */
        a = http("POST", "/fake/faults", (const char *const[]){ "Transfer-Encoding: chunked", NULL }, body, NULL);
        ck_assert_int_eq(a.status, 400);
        ck_assert_msg(strstr(a.body, "larger than 65536 bytes"), "%s", a.body);
        answer_free(&a);
    }
    long after = rss_kb();
    free(body);
    ck_assert_int_eq(fakedb_faults_fired(fdbt_db), 0);
    a = http("GET", "/fake/faults", NULL, NULL, NULL);
    ck_assert_str_eq(a.body, "{\"faults\":[]}");
    answer_free(&a);
    /* Unbounded, 12 such faults held 144 MB more, and even refused, each body (and its
     * parse) was held whole: none is now, so the growth stays below one body (a few MB
     * of the sanitizers' own bookkeeping). */
    /* Under valgrind the resident size is mostly valgrind's own (its shadow memory grows
     * with every byte touched): the bound means nothing there, and memcheck watches the
     * memory itself. */
    if (before > 0 && after > 0 && !under_valgrind())
        ck_assert_msg(after - before < 10 * 1024, "memory grew from %ld kB to %ld kB", before, after);
    char et[300];
    snprintf(et, sizeof et, "{\"error_type\":\"%0200d\"}", 7);
    a = http("POST", "/fake/faults", NULL, et, NULL);
    ck_assert_int_eq(a.status, 400);
    ck_assert_msg(strstr(a.body, "error_type is longer than 127 bytes"), "%s", a.body);
    answer_free(&a);
    /* Each string's limit, by the library and over HTTP. */
    char key[FAKEDB_MAX_FAULT_KEY + 2];
    memset(key, 'k', sizeof key - 1);
    key[sizeof key - 1] = 0;
    ck_assert_int_eq(fakedb_fault_add(fdbt_db, &(fakedb_fault){ .kind = FAKEDB_FAULT_ERROR, .key = key }), FAKEDB_ELIMIT);
    key[FAKEDB_MAX_FAULT_KEY] = 0;
    long id = fakedb_fault_add(fdbt_db, &(fakedb_fault){ .kind = FAKEDB_FAULT_ERROR, .key = key });
    ck_assert_int_gt(id, 0);
    fakedb_fault_remove(fdbt_db, id);
    char tbl[400];
    snprintf(tbl, sizeof tbl, "{\"table\":\"%0300d\"}", 7);
    a = http("POST", "/fake/faults", NULL, tbl, NULL);
    ck_assert_int_eq(a.status, 400);
    ck_assert_msg(strstr(a.body, "table is longer than 255 bytes"), "%s", a.body);
    answer_free(&a);
    /* The count. */
    for (int i = 0; i < FAKEDB_MAX_FAULTS; i++)
        ck_assert_int_gt(fakedb_fault_add(fdbt_db, &(fakedb_fault){ .kind = FAKEDB_FAULT_DELAY, .table = "None" }), 0);
    ck_assert_int_eq(fakedb_fault_add(fdbt_db, &(fakedb_fault){ .kind = FAKEDB_FAULT_DELAY }), FAKEDB_ELIMIT);
    a = http("POST", "/fake/faults", NULL, "{\"kind\":\"delay\"}", NULL);
    ck_assert_int_eq(a.status, 400);
    ck_assert_msg(strstr(a.body, "at most 1000"), "%s", a.body);
    answer_free(&a);
    fakedb_fault_clear(fdbt_db);
    ck_assert_int_gt(fakedb_fault_add(fdbt_db, &(fakedb_fault){ .kind = FAKEDB_FAULT_DELAY }), 0);
}
END_TEST

/* ---- 4. HTTP framing ---- */

#define REQ_HEAD "POST / HTTP/1.1\r\nHost: x\r\nContent-Type: " CT "\r\nAuthorization: " AUTH "\r\nX-Amz-Date: 20231114T000000Z\r\n"
#define SMUGGLED_BODY "{\"TableName\":\"Smuggled\",\"KeySchema\":[{\"AttributeName\":\"pk\",\"KeyType\":\"HASH\"}]," \
                      "\"AttributeDefinitions\":[{\"AttributeName\":\"pk\",\"AttributeType\":\"S\"}],\"BillingMode\":\"PAY_PER_REQUEST\"}"

/* A well-formed CreateTable of "Smuggled": sent alone, it creates the table. */
static const char *smuggled(void)
{
    static char r[1024];
    snprintf(r, sizeof r, "POST / HTTP/1.1\r\nHost: x\r\nContent-Type: " CT "\r\nAuthorization: " AUTH "\r\n"
             "X-Amz-Date: 20231114T000000Z\r\nX-Amz-Target: DynamoDB_20120810.CreateTable\r\n"
             "Content-Length: %zu\r\n\r\n%s", strlen(SMUGGLED_BODY), SMUGGLED_BODY);
    return r;
}

static void assert_not_smuggled(void)
{
    fdbt_resp r = fdbt_call("DescribeTable", "{\"TableName\":\"Smuggled\"}");
    ck_assert_msg(r.status == 400 && !strcmp(fdbt_error(&r), "ResourceNotFoundException"), "%ld %s", r.status, r.body);
    fdbt_free(&r);
    ck_assert_int_eq(fakedb_get_stats(fdbt_db, "CreateTable").requests, 0);
}

START_TEST(ambiguous_framing_refused_and_closed)
{
    start_with(NULL);
    const char *framings[] = {
        /* CL + TE: a proxy reading 5 bytes and fakedb reading chunks disagree */
        "X-Amz-Target: DynamoDB_20120810.ListTables\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n",
        "X-Amz-Target: DynamoDB_20120810.ListTables\r\nTransfer-Encoding: chunked\r\nContent-Length: 2\r\n\r\n2\r\n{}\r\n0\r\n\r\n",
        "X-Amz-Target: DynamoDB_20120810.ListTables\r\nTransfer-Encoding : chunked\r\nContent-Length: 2\r\n\r\n{}",
        "X-Amz-Target: DynamoDB_20120810.ListTables\r\nTransfer-Encoding: gzip, chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n",
        "X-Amz-Target: DynamoDB_20120810.ListTables\r\nTransfer-Encoding: identity\r\nContent-Length: 2\r\n\r\n{}",
        "X-Amz-Target: DynamoDB_20120810.ListTables\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n",
        "X-Amz-Target: DynamoDB_20120810.ListTables\r\nX-Bad\tName: 1\r\nContent-Length: 2\r\n\r\n{}",
    };
    char raw[4096], out[8192];
    for (size_t i = 0; i < sizeof framings / sizeof framings[0]; i++) {
        snprintf(raw, sizeof raw, "%s%s%s", REQ_HEAD, framings[i], smuggled());
        bool closed = exchange_until_closed(raw, out, sizeof out);
        ck_assert_msg(closed, "framing %zu: the connection stayed open: %s", i, out);
        ck_assert_msg(!strncmp(out, "HTTP/1.1 400", 12), "framing %zu: %s", i, out);
        ck_assert_msg(strstr(out, "Connection: close"), "framing %zu: %s", i, out);
        ck_assert_msg(!strstr(out + 12, "HTTP/1.1"), "framing %zu: a second answer: %s", i, out);
        assert_not_smuggled();
    }
    ck_assert_int_eq(fakedb_get_stats(fdbt_db, "ListTables").requests, 0);
    /* Chunked alone is fine, and the connection is kept for the next request. */
    snprintf(raw, sizeof raw, "%sX-Amz-Target: DynamoDB_20120810.ListTables\r\nTransfer-Encoding: chunked\r\n\r\n"
                              "2\r\n{}\r\n0\r\n\r\n%s", REQ_HEAD, smuggled());
    int fd = fdbt_dial(fakedb_port(fdbt_db));
    ck_assert_int_eq(send(fd, raw, strlen(raw), MSG_NOSIGNAL), (ssize_t)strlen(raw));
    shutdown(fd, SHUT_WR);
    size_t got = 0;
    ssize_t k;
    while (got < sizeof out - 1 && (k = recv(fd, out + got, sizeof out - 1 - got, 0)) > 0)
        got += (size_t)k;
    out[got] = 0;
    close(fd);
    ck_assert_msg(!strncmp(out, "HTTP/1.1 200", 12) && strstr(out + 12, "HTTP/1.1 200"), "%s", out);
    ck_assert_int_eq(fakedb_get_stats(fdbt_db, "CreateTable").requests, 1);
}
END_TEST

START_TEST(request_log_escapes_control_characters)
{
    start_with(&(fakedb_options){ .log_requests = true, .threads = 2 });
    char path[] = "/tmp/fakedb-log-XXXXXX";
    int lf = mkstemp(path);
    ck_assert_int_ge(lf, 0);
    unlink(path);
    fflush(stderr);
    int saved = dup(2);
    dup2(lf, 2);
    fdbt_resp r = fdbt_call("DescribeTable", "{\"TableName\":\"T\\u001b[2J\\r\\nfakedb: forged\\u202e\"}");
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    ck_assert_int_eq(r.status, 400);
    fdbt_free(&r);
    char log[4096];
    ssize_t n = pread(lf, log, sizeof log - 1, 0);
    close(lf);
    ck_assert_int_gt(n, 0);
    log[n] = 0;
    ck_assert_msg(strstr(log, "DescribeTable T\\x1b[2J\\x0d\\x0afakedb: forged\\xe2\\x80\\xae 400"), "log: %s", log);
    ck_assert_ptr_null(strchr(log, 0x1b));
    ck_assert_ptr_null(strchr(log, '\r'));
    ck_assert_ptr_eq(strchr(log, '\n'), log + n - 1); /* one line */
}
END_TEST

/* ---- 5. lone surrogates ---- */

START_TEST(lone_surrogates_never_merge_keys)
{
    start_with(NULL);
    fdbt_table("Sur", NULL, NULL);
    const char *lone[] = { "k\\ud800", "k\\udc00", "k\\uD800x", "k\\udbff\\u0041", "k\\ude00\\ud83d" };
    for (size_t i = 0; i < sizeof lone / sizeof lone[0]; i++) {
        char body[256];
        snprintf(body, sizeof body, "{\"TableName\":\"Sur\",\"Item\":{\"pk\":{\"S\":\"%s\"}}}", lone[i]);
        fdbt_resp r = fdbt_call("PutItem", body);
        ck_assert_msg(r.status == 400 && !strcmp(fdbt_error(&r), "SerializationException"), "%s: %ld %s", lone[i],
                      r.status, r.body);
        fdbt_free(&r);
        /* in a name too */
        snprintf(body, sizeof body, "{\"TableName\":\"Sur\",\"Item\":{\"pk\":{\"S\":\"a\"},\"n%s\":{\"S\":\"v\"}}}", lone[i]);
        r = fdbt_call("PutItem", body);
        ck_assert_int_eq(r.status, 400);
        fdbt_free(&r);
    }
    fdbt_resp r = fdbt_call("Scan", "{\"TableName\":\"Sur\"}");
    ck_assert_int_eq(json_object_get_int(fdbt_get(r.json, "Count")), 0);
    fdbt_free(&r);
    /* A pair is one character; U+FFFD is another; an escaped backslash before "ud800" is
     * no escape: three items. */
    const char *fine[] = { "k\\ud83d\\ude00", "k\\ufffd", "k\\\\ud800" };
    for (size_t i = 0; i < 3; i++) {
        char body[256];
        snprintf(body, sizeof body, "{\"TableName\":\"Sur\",\"Item\":{\"pk\":{\"S\":\"%s\"}}}", fine[i]);
        r = fdbt_call("PutItem", body);
        ck_assert_msg(r.status == 200, "%s: %s", fine[i], r.body);
        fdbt_free(&r);
    }
    r = fdbt_call("Scan", "{\"TableName\":\"Sur\"}");
    ck_assert_int_eq(json_object_get_int(fdbt_get(r.json, "Count")), 3);
    fdbt_free(&r);
    r = fdbt_call("GetItem", "{\"TableName\":\"Sur\",\"Key\":{\"pk\":{\"S\":\"k\\\\ud800\"}}}");
    ck_assert_str_eq(fdbt_str(&r, "Item.pk.S"), "k\\ud800");
    fdbt_free(&r);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("fakedb_service");
    TCase *tc = tcase_create("service");
    tcase_set_timeout(tc, 120);
    tcase_add_checked_fixture(tc, NULL, teardown);
    tcase_add_test(tc, port_in_use_is_refused);
    tcase_add_test(tc, cors_any_origin_by_default);
    tcase_add_test(tc, cors_restricted_and_off);
    tcase_add_test(tc, options_of_an_older_caller);
    tcase_add_test(tc, admin_needs_credentials);
    tcase_add_test(tc, fault_limits);
    tcase_add_test(tc, ambiguous_framing_refused_and_closed);
    tcase_add_test(tc, request_log_escapes_control_characters);
    tcase_add_test(tc, lone_surrogates_never_merge_keys);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    curl_global_init(CURL_GLOBAL_ALL);
    int rc = dl_check_run(suite());
    curl_global_cleanup();
    return rc;
}
