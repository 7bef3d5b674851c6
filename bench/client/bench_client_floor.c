/* bench_client_floor.c: the floor under bench_client's numbers. One thread sends GetItem
 * to the server over a plain keep-alive socket, with the client library's own encoding,
 * signing and decoding but none of libcurl: the request head is written by hand and the
 * answer read by Content-Length. What it costs per request (user and system CPU of the
 * process) is what any client pays on this machine; bench_client minus this is the
 * price of the HTTP library. Not a client: no TLS, retries, chunked answers or proxies. */
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "client.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void cpu_s(double *user, double *sys)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    *user = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6;
    *sys = (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

static int connect_to(const char *host, const char *port)
{
    struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM }, *ai;
    if (getaddrinfo(host, port, &hints, &ai) != 0)
        return -1;
    int fd = socket(ai->ai_family, SOCK_STREAM, 0);
    if (fd >= 0 && connect(fd, ai->ai_addr, ai->ai_addrlen) != 0) {
        close(fd);
        fd = -1;
    }
    freeaddrinfo(ai);
    int one = 1;
    if (fd >= 0)
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return fd;
}

/* Reads one answer into buf (cap bytes); returns its status, and the
 * body in *body, its length in *len. */
static int read_answer(int fd, char *buf, size_t cap, const char **body, size_t *len)
{
    size_t have = 0;
    char *end = NULL;
    while (!end) {
        ssize_t n = recv(fd, buf + have, cap - 1 - have, 0);
        if (n <= 0)
            return -1;
        have += (size_t)n;
        buf[have] = '\0';
        end = strstr(buf, "\r\n\r\n");
        if (!end && have + 1 >= cap)
            return -1;
    }
    size_t head = (size_t)(end - buf) + 4;
    const char *cl = strcasestr(buf, "\r\ncontent-length:");
    if (!cl || cl > end || strncmp(buf, "HTTP/1.1 ", 9) != 0)
        return -1;
    size_t want = head + strtoul(cl + 17, NULL, 10);
    if (want >= cap)
        return -1;
    while (have < want) {
        ssize_t n = recv(fd, buf + have, want - have, 0);
        if (n <= 0)
            return -1;
        have += (size_t)n;
    }
    *body = buf + head;
    *len = want - head;
    return atoi(buf + 9);
}

int main(int argc, char **argv)
{
    const char *endpoint = NULL;
    double seconds = 3;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--endpoint"))
            endpoint = argv[i + 1];
        else if (!strcmp(argv[i], "--seconds"))
            seconds = atof(argv[i + 1]);
    }
    if (!endpoint || strncmp(endpoint, "http://", 7) != 0 || seconds <= 0) {
        fprintf(stderr, "usage: bench_client_floor --endpoint http://HOST:PORT [--seconds S]\n");
        return 2;
    }
    ddb_error err;
    ddb_client *c = ddb_client_new(&(ddb_client_options){ .endpoint = endpoint, .region = "us-east-1",
        .access_key_id = "AKIDBENCH", .secret_access_key = "bench-secret", .imds_disabled = true }, &err);
    ddb_table *t = c ? ddb_table_open(c, "Bench", "pk", NULL, &err) : NULL;
    ddb__credentials cred = { 0 };
    if (!t || ddb__cred_get(c->creds, &cred, NULL, &err) != 0) {
        fprintf(stderr, "setup: %s\n", err.message);
        return 1;
    }
    char port[8];
    snprintf(port, sizeof port, "%d", c->server_port);
    int fd = connect_to(c->server_address, port);
    if (fd < 0) {
        fprintf(stderr, "cannot connect to %s\n", endpoint);
        return 1;
    }
    ddb_item *key = ddb_item_new();
    ddb_item_set_s(key, "pk", "bench-0");
    dl_buf body = { 0 };
    static char buf[65536];
    long n = 0, failures = 0;
    double u0, s0, u1, s1, t0 = now_s();
    cpu_s(&u0, &s0);
    while (now_s() - t0 < seconds) {
        ddb__signed sg;
        if (ddb__get_request(t, key, NULL, &body, &err) != 0 ||
            ddb__client_sign(c, "GetItem", body.p, body.len, &cred,
                             ddb_clock_wall_ms(c->clock) / 1000, &sg, &err) != 0) {
            fprintf(stderr, "request: %s\n", err.message);
            return 1;
        }
        char head[2048];
        size_t hl = (size_t)snprintf(head, sizeof head, "POST %s HTTP/1.1\r\n", c->path);
        for (size_t i = 0; i < sg.n_lines; i++)
            hl += (size_t)snprintf(head + hl, sizeof head - hl, "%s\r\n", sg.lines[i]);
        hl += (size_t)snprintf(head + hl, sizeof head - hl, "Content-Length: %zu\r\n\r\n", body.len);
        ddb__signed_cleanup(&sg);
        struct iovec iov[2] = { { head, hl }, { body.p, body.len } };
        const char *ab;
        size_t al;
        if (writev(fd, iov, 2) != (ssize_t)(hl + body.len) ||
            read_answer(fd, buf, sizeof buf, &ab, &al) != 200) {
            fprintf(stderr, "the exchange failed\n");
            return 1;
        }
        json_object *resp = ddb__json_parse(ab, al, DDB_EPROTOCOL, &err);
        ddb_result res = { 0 };
        if (!resp || ddb__item_answer(resp, "Item", &res, &err) != 0 || !res.item)
            failures++;
        json_object_put(resp);
        ddb_result_cleanup(&res);
        n++;
    }
    double wall = now_s() - t0;
    cpu_s(&u1, &s1);
    double user = u1 - u0, sys = s1 - s0;
    printf("client=floor op=GetItem threads=1 requests=%ld seconds=%.2f rps=%.0f cpu_us_per_req=%.1f "
           "user_us_per_req=%.1f sys_us_per_req=%.1f failures=%ld\n",
           n, wall, (double)n / wall, (user + sys) / (double)n * 1e6, user / (double)n * 1e6,
           sys / (double)n * 1e6, failures);
    close(fd);
    dl__buf_cleanup(&body);
    ddb_item_free(key);
    ddb__credentials_cleanup(&cred);
    ddb_table_close(t);
    ddb_client_free(c);
    return 0;
}
