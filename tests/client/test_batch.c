/* test_batch.c: BatchGetItem and BatchWriteItem over HTTP against fakedb: more keys
 * and writes than one request takes (chunks of 100 and 25), deletes by key, absent
 * keys, and a throttled batch that is retried. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "client_util.h"

static ddb_client *client;
static ddb_table *tab;

static void setup(void)
{
    dl_fixture_setup();
    ck_assert_int_eq(dl_fixture_create_table(&dl_fx, "Batch", "pk", "sk"), 0);
    client = dl_fixture_client(&dl_fx, &(ddb_client_options){ .retry.base_delay_ms = 1 });
    ck_assert_ptr_nonnull(client);
    ddb_error err;
    tab = ddb_table_open(client, "Batch", "pk", "sk", &err);
}

static void teardown(void)
{
    ddb_table_close(tab);
    ddb_client_free(client);
    dl_fixture_teardown();
}

static ddb_item *numbered(int i)
{
    char pk[16];
    snprintf(pk, sizeof pk, "k%03d", i);
    ddb_item *it = key2(pk, "s");
    ddb_item_set_i64(it, "i", i);
    return it;
}

START_TEST(write_then_get_in_chunks)
{
    enum { N = 130 };
    ddb_item *puts[N];
    for (int i = 0; i < N; i++)
        puts[i] = numbered(i);
    ddb_error err;
    ck_assert_int_eq(ddb_table_batch_write(tab, (const ddb_item *const *)puts, N, NULL, 0, NULL, &err), 0);
    /* 130 writes take 6 requests of at most 25. */
    ck_assert_int_eq(fakedb_get_stats(dl_fx.db, "BatchWriteItem").requests, 6);

    ddb_item *keys[N + 1];
    for (int i = 0; i < N; i++) {
        char pk[16];
        snprintf(pk, sizeof pk, "k%03d", i);
        keys[i] = key2(pk, "s");
    }
    keys[N] = key2("absent", "s");
    ddb_item **got = NULL;
    size_t n_got = 0;
    ck_assert_int_eq(ddb_table_batch_get(tab, (const ddb_item *const *)keys, N + 1, true, &got, &n_got, NULL, &err), 0);
    ck_assert_uint_eq(n_got, N);
    ck_assert_int_eq(fakedb_get_stats(dl_fx.db, "BatchGetItem").requests, 2);
    bool seen[N] = { false };
    for (size_t i = 0; i < n_got; i++) {
        int64_t v;
        ck_assert_int_eq(ddb_item_get_i64(got[i], "i", &v), 0);
        ck_assert(v >= 0 && v < N && !seen[v]);
        seen[v] = true;
        ck_assert(ddb_item_equal(got[i], puts[v]));
    }
    ddb_item_array_free(got, n_got);

    /* Deletes by key, mixed with puts. */
    ddb_item *extra = numbered(500);
    ck_assert_int_eq(ddb_table_batch_write(tab, (const ddb_item *const *)&extra, 1,
                                     (const ddb_item *const *)keys, 100, NULL, &err), 0);
    ck_assert_int_eq(ddb_table_batch_get(tab, (const ddb_item *const *)keys, N, false, &got, &n_got, NULL, &err), 0);
    ck_assert_uint_eq(n_got, N - 100);
    ddb_item_array_free(got, n_got);

    ddb_item_free(extra);
    for (int i = 0; i <= N; i++) {
        if (i < N)
            ddb_item_free(puts[i]);
        ddb_item_free(keys[i]);
    }
}
END_TEST

START_TEST(throttled_batch_is_retried)
{
    ck_assert_int_gt(fakedb_fault_add(dl_fx.db, &(fakedb_fault){ .kind = FAKEDB_FAULT_ERROR,
        .operation = "BatchWriteItem", .count = 2 }), 0);
    ddb_item *it = numbered(1);
    ddb_error err;
    ck_assert_int_eq(ddb_table_batch_write(tab, (const ddb_item *const *)&it, 1, NULL, 0, NULL, &err), 0);
    ck_assert_int_eq(fakedb_get_stats(dl_fx.db, "BatchWriteItem").requests, 3);
    ddb_item_free(it);
}
END_TEST

START_TEST(batch_errors)
{
    ddb_error err;
    ddb_item **got = NULL;
    size_t n = 7;
    ck_assert_int_eq(ddb_table_batch_get(tab, NULL, 0, false, &got, &n, NULL, &err), 0);
    ck_assert_uint_eq(n, 0);
    ck_assert_int_eq(ddb_table_batch_get(NULL, NULL, 0, false, &got, &n, NULL, &err), DDB_EINVAL);
    const ddb_item *nul = NULL;
    ck_assert_int_eq(ddb_table_batch_write(tab, &nul, 1, NULL, 0, NULL, &err), DDB_EINVAL);
    ddb_table *missing = ddb_table_open(client, "Missing", "pk", "sk", &err);
    ddb_item *it = numbered(2);
    ck_assert_int_eq(ddb_table_batch_write(missing, (const ddb_item *const *)&it, 1, NULL, 0, NULL, &err),
                     DDB_ENOTFOUND);
    ck_assert_int_eq(ddb_table_batch_get(missing, (const ddb_item *const *)&it, 1, false, &got, &n, NULL, &err),
                     DDB_ENOTFOUND);
    ck_assert_ptr_null(got);
    ddb_item_free(it);
    ddb_table_close(missing);
}
END_TEST

/* ------------------------------------------------------------------------
 * fakedb processes every batch whole, so leftovers come from a scripted server: it
 * answers requests on one loopback connection with canned bodies, in order, and keeps
 * the request bodies it received. */

#define SCRIPT_MAX 4

typedef struct script {
    int listen_fd;
    int port;
    const char *answers[SCRIPT_MAX];
    int n_answers;
    char *received[SCRIPT_MAX];
    int n_received;
    pthread_t th;
} script;

static bool read_request(int fd, char **body_out)
{
    char buf[65536];
    size_t len = 0;
    char *end = NULL;
    while (!end) {
        if (len + 1 >= sizeof buf)
            return false;
        ssize_t n = read(fd, buf + len, sizeof buf - 1 - len);
        if (n <= 0)
            return false;
        len += (size_t)n;
        buf[len] = '\0';
        end = strstr(buf, "\r\n\r\n");
    }
    size_t clen = 0;
    for (char *line = strstr(buf, "\r\n") + 2; line < end; line = strstr(line, "\r\n") + 2)
        if (strncasecmp(line, "Content-Length:", 15) == 0)
            clen = (size_t)strtoul(line + 15, NULL, 10);
    size_t have = len - (size_t)(end + 4 - buf);
    char *body = malloc(clen + 1);
    memcpy(body, end + 4, have);
    while (have < clen) {
        ssize_t n = read(fd, body + have, clen - have);
        if (n <= 0) {
            free(body);
            return false;
        }
        have += (size_t)n;
    }
    body[clen] = '\0';
    *body_out = body;
    return true;
}

static void *script_main(void *p)
{
    script *s = p;
    int fd = accept(s->listen_fd, NULL, NULL);
    while (fd >= 0 && s->n_received < s->n_answers) {
        char *body;
        if (!read_request(fd, &body))
            break;
        s->received[s->n_received] = body;
        const char *a = s->answers[s->n_received++];
        char head[256];
        int hl = snprintf(head, sizeof head, "HTTP/1.1 200 OK\r\nContent-Type: application/x-amz-json-1.0\r\n"
                          "Content-Length: %zu\r\n\r\n", strlen(a));
        if (write(fd, head, (size_t)hl) != hl || write(fd, a, strlen(a)) != (ssize_t)strlen(a))
            break;
    }
    if (fd >= 0)
        close(fd);
    return NULL;
}

static void script_start(script *s)
{
    s->listen_fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in addr = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    ck_assert_int_eq(bind(s->listen_fd, (struct sockaddr *)&addr, sizeof addr), 0);
    ck_assert_int_eq(listen(s->listen_fd, 4), 0);
    socklen_t al = sizeof addr;
    getsockname(s->listen_fd, (struct sockaddr *)&addr, &al);
    s->port = ntohs(addr.sin_port);
    pthread_create(&s->th, NULL, script_main, s);
}

static void script_finish(script *s)
{
    pthread_join(s->th, NULL);
    close(s->listen_fd);
}

static void script_free(script *s)
{
    for (int i = 0; i < s->n_received; i++)
        free(s->received[i]);
}

static ddb_client *scripted_client(script *s)
{
    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%d", s->port);
    ddb_error err;
    ddb_client *c = ddb_client_new(&(ddb_client_options){ .endpoint = url, .region = "us-east-1",
        .access_key_id = "a", .secret_access_key = "b", .retry.base_delay_ms = 1,
        .imds_disabled = true, .log_level = DDB_LOG_OFF }, &err);
    ck_assert_ptr_nonnull(c);
    return c;
}

START_TEST(unprocessed_writes_are_sent_again)
{
    script s = { .n_answers = 2, .answers = {
        "{\"UnprocessedItems\":{\"Scripted\":[{\"PutRequest\":{\"Item\":{\"pk\":{\"S\":\"left\"}}}}]}}",
        "{\"UnprocessedItems\":{}}" } };
    script_start(&s);
    ddb_client *c = scripted_client(&s);
    ddb_error err;
    ddb_table *t = ddb_table_open(c, "Scripted", "pk", NULL, &err);
    ddb_item *a = ddb_item_new(), *b = ddb_item_new();
    ddb_item_set_s(a, "pk", "done");
    ddb_item_set_s(b, "pk", "left");
    const ddb_item *puts[] = { a, b };
    int rc = ddb_table_batch_write(t, puts, 2, NULL, 0, NULL, &err);
    script_finish(&s);
    ck_assert_int_eq(rc, 0);
    ck_assert_int_eq(s.n_received, 2);
    ck_assert_ptr_nonnull(strstr(s.received[0], "\"done\""));
    ck_assert_ptr_nonnull(strstr(s.received[0], "\"left\""));
    ck_assert_ptr_null(strstr(s.received[1], "\"done\""));   /* only the leftover again */
    ck_assert_ptr_nonnull(strstr(s.received[1], "\"left\""));
    script_free(&s);
    ddb_item_free(a);
    ddb_item_free(b);
    ddb_table_close(t);
    ddb_client_free(c);
}
END_TEST

START_TEST(unprocessed_keys_are_fetched_again)
{
    script s = { .n_answers = 2, .answers = {
        "{\"Responses\":{\"Scripted\":[{\"pk\":{\"S\":\"one\"},\"v\":{\"N\":\"1\"}}]},"
        "\"UnprocessedKeys\":{\"Scripted\":{\"Keys\":[{\"pk\":{\"S\":\"two\"}}]}}}",
        "{\"Responses\":{\"Scripted\":[{\"pk\":{\"S\":\"two\"},\"v\":{\"N\":\"2\"}}]},\"UnprocessedKeys\":{}}" } };
    script_start(&s);
    ddb_client *c = scripted_client(&s);
    ddb_error err;
    ddb_table *t = ddb_table_open(c, "Scripted", "pk", NULL, &err);
    ddb_item *k1 = ddb_item_new(), *k2 = ddb_item_new();
    ddb_item_set_s(k1, "pk", "one");
    ddb_item_set_s(k2, "pk", "two");
    const ddb_item *keys[] = { k1, k2 };
    ddb_item **got = NULL;
    size_t n = 0;
    int rc = ddb_table_batch_get(t, keys, 2, false, &got, &n, NULL, &err);
    script_finish(&s);
    ck_assert_int_eq(rc, 0);
    ck_assert_uint_eq(n, 2);
    ck_assert_int_eq(s.n_received, 2);
    ck_assert_ptr_null(strstr(s.received[1], "\"one\""));
    ck_assert_ptr_nonnull(strstr(s.received[1], "\"two\""));
    int64_t sum = 0;
    for (size_t i = 0; i < n; i++) {
        int64_t v;
        ck_assert_int_eq(ddb_item_get_i64(got[i], "v", &v), 0);
        sum += v;
    }
    ck_assert_int_eq(sum, 3);
    ddb_item_array_free(got, n);
    script_free(&s);
    ddb_item_free(k1);
    ddb_item_free(k2);
    ddb_table_close(t);
    ddb_client_free(c);
}
END_TEST

static Suite *batch_suite(void)
{
    Suite *s = suite_create("client_batch");
    TCase *tc = tcase_create("batch");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, write_then_get_in_chunks);
    tcase_add_test(tc, throttled_batch_is_retried);
    tcase_add_test(tc, batch_errors);
    suite_add_tcase(s, tc);
    TCase *scripted = tcase_create("unprocessed");
    tcase_set_timeout(scripted, 30);
    tcase_add_test(scripted, unprocessed_writes_are_sent_again);
    tcase_add_test(scripted, unprocessed_keys_are_fetched_again);
    suite_add_tcase(s, scripted);
    return s;
}

int main(void)
{
    return dl_check_run(batch_suite());
}
