/* test_net.c: fakedb against hostile and broken clients, over raw sockets: a client's
 * EOF closes its connection at once (nothing left in CLOSE-WAIT), idle connections and
 * clients that trickle bytes time out, a flood of idle connections past the connection
 * limit never stops a new client being answered, conflicting Content-Length headers,
 * requests of NUL bytes, ill-formed UTF-8 and integer members that are not integers;
 * with one event loop (the default: a client that stalls half-way holds up no other) and
 * with two. */
#include "fdbt.h"

#include <arpa/inet.h>
#include <check.h>
#include <curl/curl.h>

#include "dl_check.h"
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* "Promptly", with room for valgrind on a loaded machine: without the fixes these
 * requests are not answered at all (or only after the 60 s timeout). */
#define PROMPT_MS dl_check_bound_ms(5000)

#define AUTH "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20231114/us-east-1/dynamodb/aws4_request, SignedHeaders=host;x-amz-date, Signature=00ff"

/* The suite runs twice: with fakedb's default (one event loop, which a stalled client
 * must not hold) and with two loops. */
static int net_threads;

static void start_with(int idle_timeout_ms, int max_connections)
{
    fakedb_options o = { .fake_clock = true, .fake_clock_start_ms = 1700000000000LL, .threads = net_threads,
                         .idle_timeout_ms = idle_timeout_ms, .max_connections = max_connections };
    fdbt_start_opts(&o);
    fdbt_table("Locks", NULL, NULL);
}

static void teardown(void)
{
    fdbt_stop();
}

static void send_all(int fd, const void *p, size_t n)
{
    const char *c = p;
    while (n) {
        ssize_t k = send(fd, c, n, MSG_NOSIGNAL);
        ck_assert_msg(k > 0, "send: %s", strerror(errno));
        c += k;
        n -= (size_t)k;
    }
}

/* Reads until the server closes (EOF or reset) or `within_ms` pass; returns the ms it
 * took, or -1 if the connection was still open. The answer, if any, goes to out. */
static int64_t read_until_closed(int fd, int within_ms, char *out, size_t cap)
{
    int64_t t0 = dl_check_mono_ms();
    size_t got = 0;
    if (out && cap)
        out[0] = 0;
    for (;;) {
        int64_t left = within_ms - (dl_check_mono_ms() - t0);
        if (left <= 0)
            return -1;
        struct pollfd p = { .fd = fd, .events = POLLIN };
        int r = poll(&p, 1, (int)left);
        if (r == 0)
            return -1;
        ck_assert_int_eq(r, 1);
        char buf[4096];
        ssize_t k = recv(fd, buf, sizeof buf, 0);
        if (k <= 0)
            return dl_check_mono_ms() - t0;
        if (out && got + 1 < cap) {
            size_t c = (size_t)k < cap - 1 - got ? (size_t)k : cap - 1 - got;
            memcpy(out + got, buf, c);
            got += c;
            out[got] = 0;
        }
    }
}

static size_t request(char *out, size_t cap, const char *op, const char *extra_headers, const char *body,
                      size_t body_len)
{
    int n = snprintf(out, cap,
                     "POST / HTTP/1.1\r\nHost: x\r\nX-Amz-Target: DynamoDB_20120810.%s\r\n"
                     "Content-Type: application/x-amz-json-1.0\r\nX-Amz-Date: 20231114T000000Z\r\n"
                     "Authorization: " AUTH "\r\n%sContent-Length: %zu\r\n\r\n",
                     op, extra_headers, body_len);
    ck_assert(n > 0 && (size_t)n + body_len < cap);
    memcpy(out + n, body, body_len);
    return (size_t)n + body_len;
}

/* Sockets of this process's server port in CLOSE-WAIT (state 08 in /proc/net/tcp), or
 * -1 when /proc/net/tcp cannot be read here. */
static int close_wait_count(void)
{
    FILE *f = fopen("/proc/net/tcp", "r");
    if (!f)
        return -1;
    char line[512];
    int n = 0;
    unsigned port = (unsigned)fakedb_port(fdbt_db);
    while (fgets(line, sizeof line, f)) {
        unsigned lport, st;
        if (sscanf(line, " %*d: %*8x:%4x %*8x:%*4x %2x", &lport, &st) == 2 && lport == port && st == 0x08)
            n++;
    }
    fclose(f);
    return n;
}

static void assert_get_item_answers(int within_ms)
{
    int64_t t0 = dl_check_mono_ms();
    fdbt_resp r = fdbt_call("GetItem", "{\"TableName\":\"Locks\",\"Key\":{\"pk\":{\"S\":\"a\"}}}");
    int64_t took = dl_check_mono_ms() - t0;
    ck_assert_msg(r.status == 200, "GetItem: status %ld (curl %d) %s", r.status, r.curl_code, r.body ? r.body : "");
    ck_assert_msg(took < within_ms, "GetItem took %lld ms", (long long)took);
    fdbt_free(&r);
}

START_TEST(eof_closes_at_once)
{
    start_with(0, 0);
    char req[2048];
    size_t n = request(req, sizeof req, "PutItem", "", "{\"TableName\":\"Locks\",\"Item\":{\"pk\":{\"S\":\"a\"}}}", 45);
    /* Part of the headers, part of the body, nothing: then EOF. The half-closed client
     * sees the server close at once (libmicrohttpd's epoll mode missed the EOF that came
     * with the last bytes: then the connection sat in CLOSE-WAIT until the timeout). */
    size_t cuts[3] = { 40, n - 10, 0 };
    for (int round = 0; round < 30; round++) {
        for (int c = 0; c < 3; c++) {
            int fd = fdbt_dial(fakedb_port(fdbt_db));
            if (cuts[c])
                send_all(fd, req, cuts[c]);
            shutdown(fd, SHUT_WR);
            int64_t took = read_until_closed(fd, PROMPT_MS, NULL, 0);
            ck_assert_msg(took >= 0, "round %d cut %zu: the server kept the connection open", round, cuts[c]);
            close(fd);
        }
    }
    /* Clients that close outright leave nothing in CLOSE-WAIT. */
    for (int i = 0; i < 100; i++) {
        int fd = fdbt_dial(fakedb_port(fdbt_db));
        send_all(fd, req, cuts[i % 2]);
        close(fd);
    }
    /* Linux always has /proc/net/tcp: a check that cannot read it fails, never passes. */
    int cw = close_wait_count();
    ck_assert_msg(cw >= 0, "cannot read /proc/net/tcp");
    int64_t t0 = dl_check_mono_ms();
    while ((cw = close_wait_count()) > 0 && dl_check_mono_ms() - t0 < PROMPT_MS) {
        struct pollfd none;
        poll(&none, 0, 10);
    }
    ck_assert_msg(cw == 0, "%d connections left in CLOSE-WAIT", cw);
    assert_get_item_answers(PROMPT_MS);
}
END_TEST

START_TEST(idle_connections_time_out)
{
    start_with(300, 0);
    /* A connection that never sends anything. */
    int fd = fdbt_dial(fakedb_port(fdbt_db));
    int64_t took = read_until_closed(fd, 15000, NULL, 0);
    ck_assert_msg(took >= 250 && took < 10000, "idle connection closed after %lld ms", (long long)took);
    close(fd);
    /* A keep-alive connection after a complete exchange. */
    char req[2048], out[4096];
    size_t n = request(req, sizeof req, "ListTables", "", "{}", 2);
    fd = fdbt_dial(fakedb_port(fdbt_db));
    send_all(fd, req, n);
    took = read_until_closed(fd, 15000, out, sizeof out);
    ck_assert_msg(strstr(out, "200 OK") && strstr(out, "Locks"), "answer: %s", out);
    ck_assert_msg(took >= 250 && took < 10000, "keep-alive connection closed after %lld ms", (long long)took);
    close(fd);
    /* A client that trickles header bytes keeps the socket busy but never completes a
     * request: it is closed all the same. */
    fd = fdbt_dial(fakedb_port(fdbt_db));
    int64_t t0 = dl_check_mono_ms();
    bool closed = false;
    for (size_t i = 0; i < n && dl_check_mono_ms() - t0 < 15000; i++) {
        if (i == n / 2)
            assert_get_item_answers(PROMPT_MS); /* the half-sent request holds up no one */
        if (send(fd, req + i, 1, MSG_NOSIGNAL) != 1) {
            closed = true;
            break;
        }
        struct pollfd p = { .fd = fd, .events = POLLIN };
        if (poll(&p, 1, 50) == 1) {
            char b[256];
            if (recv(fd, b, sizeof b, 0) <= 0) {
                closed = true;
                break;
            }
        }
    }
    ck_assert_msg(closed, "a trickling client was not closed");
    ck_assert_int_lt(dl_check_mono_ms() - t0, dl_check_bound_ms(10000));
    close(fd);
    assert_get_item_answers(PROMPT_MS);
}
END_TEST

START_TEST(flood_past_the_limit_evicts_idle)
{
    /* 64 connections at most; 300 idle clients come first. */
    start_with(0, 64);
    enum { N = 300 };
    int fds[N];
    for (int i = 0; i < N; i++)
        fds[i] = fdbt_dial(fakedb_port(fdbt_db));
    assert_get_item_answers(PROMPT_MS);
    /* The longest idle were closed to make room; the server did not hold more than its
     * limit. */
    int open = 0;
    for (int i = 0; i < N; i++) {
        struct pollfd p = { .fd = fds[i], .events = POLLIN };
        char b[16];
        if (poll(&p, 1, 0) == 0 || recv(fds[i], b, sizeof b, MSG_DONTWAIT) > 0)
            open++;
    }
    ck_assert_msg(open <= 64, "%d of %d idle connections still open with a limit of 64", open, N);
    /* A busy client is never evicted: a request sent on the newest connection after the
     * flood is answered. */
    char req[2048], out[4096];
    size_t n = request(req, sizeof req, "ListTables", "", "{}", 2);
    send_all(fds[N - 1], req, n);
    struct pollfd p = { .fd = fds[N - 1], .events = POLLIN };
    ck_assert_int_eq(poll(&p, 1, PROMPT_MS), 1);
    ssize_t k = recv(fds[N - 1], out, sizeof out - 1, 0);
    ck_assert_int_gt(k, 0);
    out[k] = 0;
    ck_assert_msg(strstr(out, "200 OK"), "answer: %s", out);
    for (int i = 0; i < N; i++)
        close(fds[i]);
    assert_get_item_answers(PROMPT_MS);
}
END_TEST

START_TEST(conflicting_content_length_refused)
{
    start_with(0, 0);
    char req[2048], out[4096];
    const char *body = "{\"TableName\":\"Locks\",\"Item\":{\"pk\":{\"S\":\"cl\"}}}";
    size_t n = request(req, sizeof req, "PutItem", "Content-Length: 5\r\n", body, strlen(body));
    int fd = fdbt_dial(fakedb_port(fdbt_db));
    send_all(fd, req, n);
    int64_t took = read_until_closed(fd, PROMPT_MS, out, sizeof out);
    ck_assert_msg(took >= 0, "the connection stayed open");
    ck_assert_msg(!strncmp(out, "HTTP/1.1 400", 12) && strstr(out, "SerializationException"), "answer: %s", out);
    close(fd);
    fdbt_resp r = fdbt_call("GetItem", "{\"TableName\":\"Locks\",\"Key\":{\"pk\":{\"S\":\"cl\"}}}");
    ck_assert_int_eq(r.status, 200);
    ck_assert_ptr_null(fdbt_get(r.json, "Item"));
    fdbt_free(&r);
    /* The same length twice is one length (RFC 9110 8.6). */
    char same[64];
    snprintf(same, sizeof same, "Content-Length: %zu\r\n", strlen(body));
    n = request(req, sizeof req, "PutItem", same, body, strlen(body));
    fd = fdbt_dial(fakedb_port(fdbt_db));
    send_all(fd, req, n);
    shutdown(fd, SHUT_WR);
    read_until_closed(fd, PROMPT_MS, out, sizeof out);
    ck_assert_msg(!strncmp(out, "HTTP/1.1 200", 12), "answer: %s", out);
    close(fd);
}
END_TEST

START_TEST(nul_bytes_answered_or_closed)
{
    start_with(300, 0);
    char nul[65536];
    memset(nul, 0, sizeof nul);
    char out[4096];
    /* NUL bytes then EOF: closed at once. */
    int fd = fdbt_dial(fakedb_port(fdbt_db));
    send_all(fd, nul, 200);
    shutdown(fd, SHUT_WR);
    ck_assert_int_ge(read_until_closed(fd, PROMPT_MS, NULL, 0), 0);
    close(fd);
    /* NUL bytes, and the client waits: closed by the idle timeout. */
    fd = fdbt_dial(fakedb_port(fdbt_db));
    send_all(fd, nul, 200);
    ck_assert_int_ge(read_until_closed(fd, PROMPT_MS, NULL, 0), 0);
    close(fd);
    /* NUL bytes with line ends, and the client waits: closed too. */
    fd = fdbt_dial(fakedb_port(fdbt_db));
    send_all(fd, nul, 100);
    send_all(fd, "\r\n\r\n", 4);
    ck_assert_int_ge(read_until_closed(fd, PROMPT_MS, NULL, 0), 0);
    close(fd);
    /* 64 KB of NUL bytes overflow the header buffer: an error answer, then closed. */
    fd = fdbt_dial(fakedb_port(fdbt_db));
    send(fd, nul, sizeof nul, MSG_NOSIGNAL);
    ck_assert_int_ge(read_until_closed(fd, PROMPT_MS, out, sizeof out), 0);
    ck_assert_msg(out[0] == 0 || !strncmp(out, "HTTP/1.1 4", 10), "answer: %s", out);
    close(fd);
    assert_get_item_answers(PROMPT_MS);
}
END_TEST

static void expect_put_refused(const char *raw_body)
{
    fdbt_resp r = fdbt_raw("POST", "/", "DynamoDB_20120810.PutItem", "application/x-amz-json-1.0", AUTH, raw_body,
                           strlen(raw_body));
    fdbt_expect_answer(&r, 400, "SerializationException", NULL, raw_body);
}

START_TEST(ill_formed_utf8_refused)
{
    start_with(0, 0);
    /* Overlong '/', an encoded surrogate, past U+10FFFF, a truncated sequence, a stray
     * continuation byte. */
    expect_put_refused("{\"TableName\":\"Locks\",\"Item\":{\"pk\":{\"S\":\"a\xc0\xaf\"}}}");
    expect_put_refused("{\"TableName\":\"Locks\",\"Item\":{\"pk\":{\"S\":\"a\xed\xa0\x80\"}}}");
    expect_put_refused("{\"TableName\":\"Locks\",\"Item\":{\"pk\":{\"S\":\"a\xf4\x90\x80\x80\"}}}");
    expect_put_refused("{\"TableName\":\"Locks\",\"Item\":{\"pk\":{\"S\":\"a\xe2\x82\"}}}");
    expect_put_refused("{\"TableName\":\"Locks\",\"Item\":{\"pk\":{\"S\":\"a\x80\"}}}");
    expect_put_refused("{\"TableName\":\"Locks\",\"Item\":{\"pk\":{\"S\":\"a\xe0\x80\xaf\"}}}");
    fdbt_resp r = fdbt_call("Scan", "{\"TableName\":\"Locks\"}");
    ck_assert_int_eq(r.status, 200);
    ck_assert_int_eq(json_object_get_int(fdbt_get(r.json, "Count")), 0);
    fdbt_free(&r);
    /* Well-formed multi-byte UTF-8 (2, 3 and 4 bytes, the last code point) is kept whole. */
    const char *ok = "{\"TableName\":\"Locks\",\"Item\":{\"pk\":{\"S\":\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x94\x92\xf4\x8f\xbf\xbf\"}}}";
    r = fdbt_call("PutItem", ok);
    ck_assert_int_eq(r.status, 200);
    fdbt_free(&r);
    r = fdbt_call("Scan", "{\"TableName\":\"Locks\"}");
    ck_assert_str_eq(fdbt_str(&r, "Items.0.pk.S"), "\xc3\xa9\xe2\x82\xac\xf0\x9f\x94\x92\xf4\x8f\xbf\xbf");
    fdbt_free(&r);
}
END_TEST

START_TEST(integer_members_must_be_integers)
{
    start_with(0, 0);
    char digits[1001];
    memset(digits, '1', 1000);
    digits[1000] = 0;
    const char *bad[] = { "1.5", "1e400", digits, "2147483648", "\"5\"", "true" };
    char body[2048];
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        const char *before[] = { "{\"TableName\":\"Locks\",\"Limit\":", "{\"TableName\":\"Locks\",\"Limit\":",
                                 "{\"Limit\":", "{\"TableName\":\"Locks\",\"Segment\":" };
        const char *after[] = { "}", ",\"KeyConditionExpression\":\"pk = :v\",\"ExpressionAttributeValues\":{\":v\":{\"S\":\"a\"}}}",
                                "}", ",\"TotalSegments\":4}" };
        const char *ops[] = { "Scan", "Query", "ListTables", "Scan" };
        for (int k = 0; k < 4; k++) {
            snprintf(body, sizeof body, "%s%s%s", before[k], bad[i], after[k]);
            fdbt_resp r = fdbt_call(ops[k], body);
            ck_assert_msg(r.status == 400 && !strcmp(fdbt_error(&r), "SerializationException"),
                          "%s %.40s: %ld %s", ops[k], bad[i], r.status, r.body ? r.body : "");
            fdbt_free(&r);
        }
    }
    fdbt_resp r = fdbt_call("Scan", "{\"TableName\":\"Locks\",\"Limit\":2147483647}");
    ck_assert_int_eq(r.status, 200);
    fdbt_free(&r);
}
END_TEST

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    curl_global_init(CURL_GLOBAL_DEFAULT);
    Suite *s = suite_create("fakedb_net");
    TCase *tc = tcase_create("hostile");
    tcase_add_checked_fixture(tc, NULL, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, eof_closes_at_once);
    tcase_add_test(tc, idle_connections_time_out);
    tcase_add_test(tc, flood_past_the_limit_evicts_idle);
    tcase_add_test(tc, conflicting_content_length_refused);
    tcase_add_test(tc, nul_bytes_answered_or_closed);
    tcase_add_test(tc, ill_formed_utf8_refused);
    tcase_add_test(tc, integer_members_must_be_integers);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    for (net_threads = 0; net_threads <= 2; net_threads += 2) { /* the default (one loop), then two */
        printf("fakedb_net: %s\n", net_threads ? "two event loops" : "one event loop (the default)");
        srunner_run_all(sr, CK_NORMAL);
    }
    int failed = srunner_ntests_failed(sr); /* over both runs: the runner keeps every result */
    srunner_free(sr);
    curl_global_cleanup();
    return failed ? 1 : 0;
}
