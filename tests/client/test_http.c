/* test_http.c: http.c's requests against a scripted server on a loopback socket: the
 * blocking request (ddb__http_send) and the client's pooled POST (ddb__http_post). A
 * server that hangs is left by the cancel token's eventfd; an answer over the cap, a
 * header longer than a fixed field, too many header lines are refused with a clear error
 * and never cut; a header value is kept whole; a request waiting for the pool's only
 * connection is woken by the connection coming back, or by its cancel token; a lost
 * answer (reset or close) counts as sent, a refused connection as not, and a request is
 * never sent twice behind the caller's back. No test sleeps: each waits on an event of
 * the server or of the request. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "client_util.h"
#include "client.h"

/* What the server does with the request on each connection it accepts. */
typedef enum { ANSWER_OK, ANSWER_BIG, ANSWER_LONG_HEADERS, HANG, CLOSE, RESET } mode;

#define LONG_HEADER_LEN 5000   /* longer than any fixed field of the client's */
#define BIG_BODY_LEN 10000
#define ANSWER_CAP 1000

typedef struct server {
    int listen_fd;
    int port;
    mode modes[4];             /* one per connection, in order */
    int n_modes;
    ddb_cancel *cancel_on_request; /* HANG: set when the request has arrived */
    int arrived_fd;            /* an eventfd written once per request that arrived */
    pthread_t thread;
    char url[64];
} server;

static void write_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w <= 0)
            return;
        p += w;
        n -= (size_t)w;
    }
}

/* Reads a request's head and its body (by Content-Length). false when the peer left. */
static bool read_request(int fd)
{
    char buf[8192];
    size_t len = 0;
    for (;;) {
        ssize_t r = recv(fd, buf + len, sizeof buf - 1 - len, 0);
        if (r <= 0)
            return false;
        len += (size_t)r;
        buf[len] = '\0';
        char *end = strstr(buf, "\r\n\r\n");
        if (!end)
            continue;
        size_t body = 0;
        char *cl = strcasestr(buf, "content-length:");
        if (cl)
            body = strtoul(cl + 15, NULL, 10);
        size_t have = len - (size_t)(end + 4 - buf);
        while (have < body) {
            r = recv(fd, buf, sizeof buf, 0);
            if (r <= 0)
                return false;
            have += (size_t)r;
        }
        return true;
    }
}

static void answer(int fd, mode m)
{
    char *text = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&text, &n);
    switch (m) {
    case ANSWER_OK:
        fprintf(f, "HTTP/1.1 200 OK\r\nX-Thing:  some value \r\nx-amzn-RequestId: rid-1\r\n"
                   "Content-Length: 5\r\n\r\nhello");
        break;
    case ANSWER_BIG:
        fprintf(f, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n", BIG_BODY_LEN);
        for (int i = 0; i < BIG_BODY_LEN; i++)
            fputc('x', f);
        break;
    case ANSWER_LONG_HEADERS:
        fprintf(f, "HTTP/1.1 200 OK\r\nX-Long: ");
        for (int i = 0; i < LONG_HEADER_LEN; i++)
            fputc('a' + i % 26, f);
        fprintf(f, "\r\nx-amzn-RequestId: ");
        for (int i = 0; i < DDB_REQUEST_ID_MAX + 10; i++)
            fputc('r', f);
        fprintf(f, "\r\nContent-Length: 2\r\n\r\n{}");
        break;
    case HANG:
    case CLOSE:
    case RESET:
        break;
    }
    fclose(f);
    write_all(fd, text, n);
    free(text);
}

static void *server_main(void *arg)
{
    server *s = arg;
    int next = 0;
    while (next < s->n_modes) {
        int fd = accept(s->listen_fd, NULL, NULL);
        if (fd < 0)
            return NULL;
        /* The requests of a kept-alive connection, each answered by the next mode. */
        while (next < s->n_modes && read_request(fd)) {
            mode m = s->modes[next++];
            uint64_t one = 1;
            ssize_t w = write(s->arrived_fd, &one, sizeof one);
            (void)w;
            if (m == CLOSE || m == RESET) {
                /* The request has arrived (and would be applied); the answer is lost: an
                 * orderly close, or a reset (SO_LINGER 0). */
                if (m == RESET)
                    setsockopt(fd, SOL_SOCKET, SO_LINGER,
                               &(struct linger){ .l_onoff = 1, .l_linger = 0 },
                               sizeof(struct linger));
                break;
            }
            if (m == HANG) {
                if (s->cancel_on_request)
                    ddb_cancel_set(s->cancel_on_request);
                /* Hold the connection until the client leaves it. */
                char c;
                while (recv(fd, &c, 1, 0) > 0)
                    ;
                break;
            }
            answer(fd, m);
        }
        close(fd);
    }
    return NULL;
}

static server srv;

static void server_start(const mode *modes, int n, ddb_cancel *cancel_on_request)
{
    memset(&srv, 0, sizeof srv);
    memcpy(srv.modes, modes, (size_t)n * sizeof *modes);
    srv.n_modes = n;
    srv.cancel_on_request = cancel_on_request;
    srv.arrived_fd = eventfd(0, EFD_CLOEXEC | EFD_SEMAPHORE);
    ck_assert_int_ge(srv.arrived_fd, 0);
    srv.listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    ck_assert_int_ge(srv.listen_fd, 0);
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    ck_assert_int_eq(bind(srv.listen_fd, (struct sockaddr *)&a, sizeof a), 0);
    ck_assert_int_eq(listen(srv.listen_fd, 8), 0);
    socklen_t al = sizeof a;
    ck_assert_int_eq(getsockname(srv.listen_fd, (struct sockaddr *)&a, &al), 0);
    srv.port = ntohs(a.sin_port);
    snprintf(srv.url, sizeof srv.url, "http://127.0.0.1:%d/", srv.port);
    ck_assert_int_eq(pthread_create(&srv.thread, NULL, server_main, &srv), 0);
}

/* Waits until the server has read one more request. */
static void server_wait_request(void)
{
    uint64_t v;
    ck_assert_int_eq(read(srv.arrived_fd, &v, sizeof v), (ssize_t)sizeof v);
}

static void server_stop(void)
{
    /* The server thread ends after its scripted connections. */
    pthread_join(srv.thread, NULL);
    close(srv.listen_fd);
    close(srv.arrived_fd);
}

/* ---------------------------------------------------------------- ddb__http_send */

START_TEST(send_keeps_wanted_headers_whole)
{
    server_start((mode[]){ ANSWER_OK, ANSWER_LONG_HEADERS }, 2, NULL);
    ddb_error err;
    ddb__http_conn *conn = ddb__http_conn_new(&err);
    ck_assert_ptr_nonnull(conn);
    const char *want[] = { "x-thing", "x-absent", "X-LONG" };
    ddb__http_request r = { .url = srv.url, .want_headers = want, .n_want_headers = 3 };
    ddb__http_answer a;
    ck_assert_int_eq(ddb__http_send(conn, &r, NULL, &a, &err), 0);
    ck_assert_int_eq(a.status, 200);
    ck_assert_str_eq(a.body, "hello");
    ck_assert_uint_eq(a.len, 5);
    ck_assert_uint_eq(a.n_header_values, 3);
    ck_assert_str_eq(a.header_values[0], "some value");
    ck_assert_ptr_null(a.header_values[1]);
    ck_assert_ptr_null(a.header_values[2]);
    ddb__http_answer_cleanup(&a);

    /* The same connection again: a header of 5000 bytes arrives whole. */
    ck_assert_int_eq(ddb__http_send(conn, &r, NULL, &a, &err), 0);
    ck_assert_ptr_nonnull(a.header_values[2]);
    ck_assert_uint_eq(strlen(a.header_values[2]), LONG_HEADER_LEN);
    ck_assert_int_eq(a.header_values[2][LONG_HEADER_LEN - 1], 'a' + (LONG_HEADER_LEN - 1) % 26);
    ck_assert_str_eq(a.body, "{}");
    ddb__http_answer_cleanup(&a);
    ddb__http_conn_free(conn);
    server_stop();
}
END_TEST

START_TEST(send_cancel_leaves_a_hanging_server)
{
    ddb_cancel *k = ddb_cancel_new();
    server_start((mode[]){ HANG }, 1, k);
    /* A minute of timeout: only the token can end the request in time for the suite. */
    ddb__http_request r = { .method = "POST", .url = srv.url, .body = "{}", .body_len = 2,
                            .timeout_ms = 60000 };
    ddb__http_answer a;
    ddb_error err;
    ddb_error_clear(&err);
    ck_assert_int_eq(ddb__http_send(NULL, &r, k, &a, &err), DDB_ECANCELED);
    ck_assert_int_eq(err.code, DDB_ECANCELED);
    ck_assert_ptr_nonnull(strstr(err.message, "cancelled in flight"));
    ck_assert_ptr_null(a.body);
    ck_assert_int_eq(a.status, 0);
    server_stop();
    ddb_cancel_unref(k);
}
END_TEST

START_TEST(send_cancelled_before_connects_nowhere)
{
    ddb_cancel *k = ddb_cancel_new();
    ddb_cancel_set(k);
    /* Port 1 on loopback: a request that went out would fail with ENETWORK. */
    ddb__http_request r = { .url = "http://127.0.0.1:1/" };
    ddb__http_answer a;
    ddb_error err;
    ck_assert_int_eq(ddb__http_send(NULL, &r, k, &a, &err), DDB_ECANCELED);
    ck_assert_ptr_nonnull(strstr(err.message, "before it was sent"));
    ddb_cancel_unref(k);
}
END_TEST

START_TEST(send_refuses_an_answer_over_the_cap)
{
    server_start((mode[]){ ANSWER_BIG, ANSWER_BIG }, 2, NULL);
    ddb__http_request r = { .url = srv.url, .max_answer = ANSWER_CAP };
    ddb__http_answer a;
    ddb_error err;
    ck_assert_int_eq(ddb__http_send(NULL, &r, NULL, &a, &err), DDB_EPROTOCOL);
    ck_assert_ptr_nonnull(strstr(err.message, "larger than the 1000 bytes allowed"));
    ck_assert_ptr_null(a.body);
    ck_assert_int_eq(a.status, 0);
    /* With room for it, the same answer arrives. */
    r.max_answer = BIG_BODY_LEN;
    ck_assert_int_eq(ddb__http_send(NULL, &r, NULL, &a, &err), 0);
    ck_assert_uint_eq(a.len, BIG_BODY_LEN);
    ddb__http_answer_cleanup(&a);
    server_stop();
}
END_TEST

START_TEST(send_no_answer_is_a_network_error)
{
    ddb__http_request r = { .url = "http://127.0.0.1:1/" };
    ddb__http_answer a;
    ddb_error err;
    ck_assert_int_eq(ddb__http_send(NULL, &r, NULL, &a, &err), DDB_ENETWORK);
    ck_assert_str_ne(err.message, "");
    ck_assert_int_eq(ddb__http_send(NULL, &(ddb__http_request){ 0 }, NULL, &a, &err), DDB_EINVAL);
}
END_TEST

/* ---------------------------------------------------------------- ddb__http_post */

static ddb__http *pool(int max_connections)
{
    ddb_error err;
    ddb__http *h = ddb__http_new(&(ddb__http_options){ .url = srv.url,
                                                       .connect_timeout_ms = 60000,
                                                       .request_timeout_ms = 60000,
                                                       .max_connections = max_connections },
                                 &err);
    ck_assert_ptr_nonnull(h);
    return h;
}

START_TEST(post_refuses_a_request_id_longer_than_its_field)
{
    server_start((mode[]){ ANSWER_LONG_HEADERS, ANSWER_OK }, 2, NULL);
    ddb__http *h = pool(1);
    ddb__http_response resp;
    ddb_error err;
    const char *lines[] = { "Content-Type: application/x-amz-json-1.0" };
    ck_assert_int_eq(ddb__http_post(h, lines, 1, "{}", 2, NULL, &resp, &err), DDB_EPROTOCOL);
    ck_assert_ptr_nonnull(strstr(err.message, "x-amzn-requestid header is longer"));
    ck_assert_ptr_null(resp.body);
    /* The handle stays good: the next answer is read whole. */
    ck_assert_int_eq(ddb__http_post(h, lines, 1, "{}", 2, NULL, &resp, &err), 0);
    ck_assert_int_eq(resp.status, 200);
    ck_assert_str_eq(resp.request_id, "rid-1");
    ck_assert_str_eq(resp.body, "hello");
    ddb__http_response_cleanup(&resp);
    ddb__http_free(h);
    server_stop();
}
END_TEST

/* An answer larger than the client's cap is refused, not held whole; the pool goes on. */
START_TEST(post_refuses_an_answer_over_the_cap)
{
    server_start((mode[]){ ANSWER_BIG, ANSWER_OK }, 2, NULL);
    ddb_error err;
    ddb__http *h = ddb__http_new(&(ddb__http_options){ .url = srv.url,
                                                       .connect_timeout_ms = 60000,
                                                       .request_timeout_ms = 60000,
                                                       .max_connections = 1,
                                                       .max_answer = ANSWER_CAP },
                                 &err);
    ck_assert_ptr_nonnull(h);
    ddb__http_response resp;
    const char *lines[] = { "Content-Type: application/x-amz-json-1.0" };
    ck_assert_int_eq(ddb__http_post(h, lines, 1, "{}", 2, NULL, &resp, &err), DDB_EPROTOCOL);
    ck_assert_ptr_nonnull(strstr(err.message, "larger than the 1000 bytes allowed"));
    ck_assert_ptr_null(resp.body);
    ck_assert_int_eq(ddb__http_post(h, lines, 1, "{}", 2, NULL, &resp, &err), 0);
    ck_assert_str_eq(resp.body, "hello");
    ddb__http_response_cleanup(&resp);
    ddb__http_free(h);
    server_stop();
}
END_TEST

START_TEST(post_refuses_too_many_header_lines)
{
    srv.url[0] = '\0';
    snprintf(srv.url, sizeof srv.url, "http://127.0.0.1:1/");
    ddb__http *h = pool(1);
    const char *lines[17];
    for (int i = 0; i < 17; i++)
        lines[i] = "X-A: b";
    ddb__http_response resp;
    ddb_error err;
    ck_assert_int_eq(ddb__http_post(h, lines, 17, "{}", 2, NULL, &resp, &err), DDB_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.message, "17 header lines"));
    ddb__http_free(h);
}
END_TEST

typedef struct post_call {
    ddb__http *h;
    ddb_cancel *cancel;
    int rc;
    long status;
    ddb_error err;
} post_call;

static void *post_thread(void *arg)
{
    post_call *c = arg;
    ddb__http_response resp;
    c->rc = ddb__http_post(c->h, NULL, 0, "{}", 2, c->cancel, &resp, &c->err);
    c->status = resp.status;
    if (c->rc == 0)
        ddb__http_response_cleanup(&resp);
    return NULL;
}

START_TEST(post_waiting_for_the_connection_is_cancelled)
{
    /* The pool's one connection hangs in the first request. */
    server_start((mode[]){ HANG, ANSWER_OK }, 2, NULL);
    ddb__http *h = pool(1);
    ddb_cancel *first_k = ddb_cancel_new(), *second_k = ddb_cancel_new();
    post_call first = { .h = h, .cancel = first_k }, second = { .h = h, .cancel = second_k };
    pthread_t t1, t2;
    ck_assert_int_eq(pthread_create(&t1, NULL, post_thread, &first), 0);
    server_wait_request();
    /* The second waits for the connection until its token is set. */
    ck_assert_int_eq(pthread_create(&t2, NULL, post_thread, &second), 0);
    ddb_cancel_set(second_k);
    pthread_join(t2, NULL);
    ck_assert_int_eq(second.rc, DDB_ECANCELED);
    /* Either message: the token may be seen before the wait begins. */
    ck_assert(strstr(second.err.message, "waiting for a connection") ||
              strstr(second.err.message, "before it was sent"));
    /* A third waits without a token; the first's cancel gives the connection back and
     * wakes it, and it is answered. */
    post_call third = { .h = h };
    pthread_t t3;
    ck_assert_int_eq(pthread_create(&t3, NULL, post_thread, &third), 0);
    ddb_cancel_set(first_k);
    pthread_join(t1, NULL);
    ck_assert_int_eq(first.rc, DDB_ECANCELED);
    pthread_join(t3, NULL);
    ck_assert_int_eq(third.rc, 0);
    ck_assert_int_eq(third.status, 200);
    ddb__http_free(h);
    server_stop();
    ddb_cancel_unref(first_k);
    ddb_cancel_unref(second_k);
}
END_TEST

/* An answer lost after the request arrived, by a reset or a close: a network failure
 * whose request was sent (it may have been applied). */
START_TEST(post_answer_lost_was_sent)
{
    server_start((mode[]){ RESET, CLOSE }, 2, NULL);
    ddb__http *h = pool(1);
    ddb__http_response resp;
    ddb_error err;
    const char *lines[] = { "Content-Type: application/x-amz-json-1.0" };
    ck_assert_int_eq(ddb__http_post(h, lines, 1, "{}", 2, NULL, &resp, &err), DDB_ENETWORK);
    ck_assert(resp.sent);
    ck_assert_int_eq(resp.status, 0);
    ck_assert_int_eq(ddb__http_post(h, lines, 1, "{}", 2, NULL, &resp, &err), DDB_ENETWORK);
    ck_assert(resp.sent);
    ddb__http_free(h);
    server_stop();
}
END_TEST

/* A connection refused: nothing was sent. */
START_TEST(post_refused_connection_was_not_sent)
{
    snprintf(srv.url, sizeof srv.url, "http://127.0.0.1:1/");
    ddb__http *h = pool(1);
    ddb__http_response resp;
    ddb_error err;
    const char *lines[] = { "Content-Type: application/x-amz-json-1.0" };
    ck_assert_int_eq(ddb__http_post(h, lines, 1, "{}", 2, NULL, &resp, &err), DDB_ENETWORK);
    ck_assert(!resp.sent);
    ddb__http_free(h);
}
END_TEST

/* A kept-alive connection that closes after the request, before any answer: libcurl
 * would send the request again on a new connection without telling. It must not: the
 * client sees the lost answer (and decides), and the server gets the request once. */
START_TEST(post_is_never_resent_silently)
{
    server_start((mode[]){ ANSWER_OK, CLOSE, ANSWER_OK }, 3, NULL);
    ddb__http *h = pool(1);
    ddb__http_response resp;
    ddb_error err;
    const char *lines[] = { "Content-Type: application/x-amz-json-1.0" };
    ck_assert_int_eq(ddb__http_post(h, lines, 1, "{\"a\":1}", 7, NULL, &resp, &err), 0);
    ddb__http_response_cleanup(&resp);
    ck_assert_int_eq(ddb__http_post(h, lines, 1, "{\"a\":2}", 7, NULL, &resp, &err),
                     DDB_ENETWORK);
    ck_assert(resp.sent);
    /* The third mode answers the third request, not a silent resend of the second. */
    ck_assert_int_eq(ddb__http_post(h, lines, 1, "{\"a\":3}", 7, NULL, &resp, &err), 0);
    ck_assert_int_eq(resp.status, 200);
    ddb__http_response_cleanup(&resp);
    ddb__http_free(h);
    server_stop();
}
END_TEST

int main(void)
{
    Suite *s = suite_create("http");
    TCase *tc = tcase_create("send");
    tcase_add_test(tc, send_keeps_wanted_headers_whole);
    tcase_add_test(tc, send_cancel_leaves_a_hanging_server);
    tcase_add_test(tc, send_cancelled_before_connects_nowhere);
    tcase_add_test(tc, send_refuses_an_answer_over_the_cap);
    tcase_add_test(tc, send_no_answer_is_a_network_error);
    suite_add_tcase(s, tc);
    tc = tcase_create("post");
    tcase_add_test(tc, post_refuses_a_request_id_longer_than_its_field);
    tcase_add_test(tc, post_refuses_an_answer_over_the_cap);
    tcase_add_test(tc, post_refuses_too_many_header_lines);
    tcase_add_test(tc, post_waiting_for_the_connection_is_cancelled);
    tcase_add_test(tc, post_answer_lost_was_sent);
    tcase_add_test(tc, post_refused_connection_was_not_sent);
    tcase_add_test(tc, post_is_never_resent_silently);
    suite_add_tcase(s, tc);
    return dl_check_run(s);
}
