/* wire.c: the raw HTTP server of the security suite (wire.h). One thread accepts and
 * answers one request per connection ("Connection: close"); whatever else the client
 * sent on that connection (a second request smuggled through a header) is read too and
 * kept with the rest, so that wire_saw() finds it. */
#include "wire.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#define WIRE_LOG_MAX (256 * 1024)
#define WIRE_ROUTES 16
#define WIRE_PATHS 64

typedef struct route {
    char method[8], prefix[128];
    int status;
    char *body;
} route;

struct wire {
    int fd;
    char url[64];
    pthread_t thread;
    pthread_mutex_t mu;
    route routes[WIRE_ROUTES];
    int n_routes;
    char paths[WIRE_PATHS][256]; /* the path of each request, in order */
    int n_paths;
    char *log;
    size_t log_len;
};

static void keep(wire *w, const char *buf, size_t n)
{
    pthread_mutex_lock(&w->mu);
    if (w->log_len + n > WIRE_LOG_MAX)
        n = WIRE_LOG_MAX - w->log_len;
    memcpy(w->log + w->log_len, buf, n);
    w->log_len += n;
    pthread_mutex_unlock(&w->mu);
}

static void serve(wire *w, int c)
{
    char req[65536];
    req[0] = '\0';
    size_t n = 0;
    char *end = NULL;
    while (n < sizeof req - 1 && !(end = strstr(req, "\r\n\r\n"))) {
        ssize_t r = recv(c, req + n, sizeof req - 1 - n, 0);
        if (r <= 0)
            break;
        keep(w, req + n, (size_t)r);
        n += (size_t)r;
        req[n] = '\0';
    }
    if (!end)
        return;
    long clen = 0;
    for (char *h = strstr(req, "\r\n"); h && h < end; h = strstr(h + 2, "\r\n"))
        if (strncasecmp(h + 2, "Content-Length:", 15) == 0)
            clen = strtol(h + 17, NULL, 10);
    size_t want = (size_t)(end + 4 - req) + (size_t)(clen > 0 ? clen : 0);
    while (n < want && n < sizeof req - 1) {
        ssize_t r = recv(c, req + n, sizeof req - 1 - n, 0);
        if (r <= 0)
            break;
        keep(w, req + n, (size_t)r);
        n += (size_t)r;
        req[n] = '\0';
    }
    char method[8] = "", path[256] = "";
    sscanf(req, "%7s %255s", method, path);
    pthread_mutex_lock(&w->mu);
    if (w->n_paths < WIRE_PATHS)
        snprintf(w->paths[w->n_paths++], sizeof w->paths[0], "%s", path);
    int status = 404;
    const char *body = "{}";
    for (int i = 0; i < w->n_routes; i++)
        if (strcmp(w->routes[i].method, method) == 0 &&
            strncmp(path, w->routes[i].prefix, strlen(w->routes[i].prefix)) == 0) {
            status = w->routes[i].status;
            body = w->routes[i].body;
            break;
        }
    char head[256];
    int hl = snprintf(head, sizeof head, "HTTP/1.1 %d X\r\nContent-Length: %zu\r\n"
                      "Content-Type: application/octet-stream\r\nConnection: close\r\n\r\n",
                      status, strlen(body));
    size_t alen = (size_t)hl + strlen(body);
    char *answer = malloc(alen);
    if (answer) {
        memcpy(answer, head, (size_t)hl);
        memcpy(answer + hl, body, strlen(body));
    }
    pthread_mutex_unlock(&w->mu);
    if (answer) {
        ssize_t sent = send(c, answer, alen, MSG_NOSIGNAL);
        (void)sent;
        free(answer);
    }
    /* Anything more the client had sent on this connection. */
    shutdown(c, SHUT_WR);
    for (;;) {
        ssize_t r = recv(c, req, sizeof req, 0);
        if (r <= 0)
            break;
        keep(w, req, (size_t)r);
    }
}

static void *wire_main(void *arg)
{
    wire *w = arg;
    for (;;) {
        int c = accept(w->fd, NULL, NULL);
        if (c < 0) {
            if (errno == EINTR || errno == ECONNABORTED)
                continue;
            return NULL; /* the socket was shut down: wire_stop */
        }
        serve(w, c);
        close(c);
    }
}

wire *wire_start(void)
{
    wire *w = calloc(1, sizeof *w);
    if (!w || !(w->log = malloc(WIRE_LOG_MAX))) {
        free(w);
        return NULL;
    }
    pthread_mutex_init(&w->mu, NULL);
    w->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    socklen_t al = sizeof a;
    if (w->fd < 0 || bind(w->fd, (struct sockaddr *)&a, sizeof a) != 0 || listen(w->fd, 16) != 0 ||
        getsockname(w->fd, (struct sockaddr *)&a, &al) != 0) {
        if (w->fd >= 0)
            close(w->fd);
        free(w->log);
        free(w);
        return NULL;
    }
    snprintf(w->url, sizeof w->url, "http://127.0.0.1:%d", ntohs(a.sin_port));
    pthread_create(&w->thread, NULL, wire_main, w);
    return w;
}

void wire_stop(wire *w)
{
    if (!w)
        return;
    shutdown(w->fd, SHUT_RDWR);
    pthread_join(w->thread, NULL);
    close(w->fd);
    for (int i = 0; i < w->n_routes; i++)
        free(w->routes[i].body);
    pthread_mutex_destroy(&w->mu);
    free(w->log);
    free(w);
}

const char *wire_url(const wire *w)
{
    return w->url;
}

void wire_route(wire *w, const char *method, const char *prefix, int status, const char *body)
{
    pthread_mutex_lock(&w->mu);
    if (w->n_routes < WIRE_ROUTES) {
        route *r = &w->routes[w->n_routes++];
        snprintf(r->method, sizeof r->method, "%s", method);
        snprintf(r->prefix, sizeof r->prefix, "%s", prefix);
        r->status = status;
        r->body = strdup(body);
    }
    pthread_mutex_unlock(&w->mu);
}

int wire_count(wire *w, const char *prefix)
{
    pthread_mutex_lock(&w->mu);
    int n = 0;
    for (int i = 0; i < w->n_paths; i++)
        n += !prefix || strncmp(w->paths[i], prefix, strlen(prefix)) == 0;
    pthread_mutex_unlock(&w->mu);
    return n;
}

size_t wire_bytes(wire *w)
{
    pthread_mutex_lock(&w->mu);
    size_t n = w->log_len;
    pthread_mutex_unlock(&w->mu);
    return n;
}

int wire_saw(wire *w, const char *needle)
{
    pthread_mutex_lock(&w->mu);
    int found = memmem(w->log, w->log_len, needle, strlen(needle)) != NULL;
    pthread_mutex_unlock(&w->mu);
    return found;
}
