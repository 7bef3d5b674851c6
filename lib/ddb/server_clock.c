/* server_clock.c: a ddb_clock that follows a fake server's clock over HTTP, so that
 * several processes talking to one `fakedb --clock fake` share time: a lease measured
 * by one and a takeover measured by another move together when the test advances the
 * server's clock, and nobody sleeps for a lease. */
#include "internal.h"

#include <dynalock/ddb.h>

#include <json-c/json.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>


/* A long poll asks the server to answer within this much real time, so that a wait
 * notices a cancel or a server that went away. */
#define LONG_POLL_MS 1000
/* Pause before asking again when the server did not answer at all. */
#define RETRY_PAUSE_MS 100

/* The clock's answers are small JSON objects; a larger one is refused. */
#define ANSWER_MAX 4096
/* How long a read of the clock may take before the system's time stands in. */
#define NOW_TIMEOUT_MS 5000
/* A long poll's request may take this much longer than the poll itself. */
#define LONG_POLL_SLACK_MS 5000
/* URLs of the fake server's clock endpoints (the endpoint itself is given). */
#define URL_MAX 1024

typedef struct server_clock {
    char *endpoint;
    pthread_mutex_t lock;      /* guards now_conn */
    ddb__http_conn *now_conn;  /* reused for "now", so reads keep their connection */
} server_clock;

typedef struct body {
    char data[ANSWER_MAX + 1];
    size_t len;
} body;

/* GETs url on conn (NULL: a connection of its own); fills b. 0 on a 200 answer,
 * DDB_ECANCELED when cancel was set, -1 otherwise. */
static int http_get(ddb__http_conn *conn, const char *url, body *b, ddb_cancel *cancel,
                    long timeout_ms)
{
    b->len = 0;
    b->data[0] = '\0';
    ddb__http_request r = {
        .method = "GET",
        .url = url,
        .timeout_ms = timeout_ms,
        .max_answer = ANSWER_MAX,
    };
    ddb__http_answer a;
    ddb_error err;
    ddb_error_clear(&err);
    int rc = ddb__http_send(conn, &r, cancel, &a, &err);
    if (rc != 0)
        return rc == DDB_ECANCELED ? rc : -1;
    rc = a.status == 200 ? 0 : -1;
    memcpy(b->data, a.body, a.len + 1);
    b->len = a.len;
    ddb__http_answer_cleanup(&a);
    return rc;
}

static int64_t field_i64(const body *b, const char *name, int64_t fallback)
{
    json_object *o = json_tokener_parse(b->data);
    json_object *v = NULL;
    int64_t out = fallback;
    if (o && json_object_object_get_ex(o, name, &v))
        out = json_object_get_int64(v);
    json_object_put(o);
    return out;
}

static bool field_bool(const body *b, const char *name)
{
    json_object *o = json_tokener_parse(b->data);
    json_object *v = NULL;
    bool out = o && json_object_object_get_ex(o, name, &v) && json_object_get_boolean(v);
    json_object_put(o);
    return out;
}

static void server_now(void *arg, int64_t *mono_ns, int64_t *wall_ms)
{
    server_clock *sc = arg;
    char url[URL_MAX];
    snprintf(url, sizeof url, "%s/fake/clock", sc->endpoint);
    body b;
    int64_t now_ms = -1;
    pthread_mutex_lock(&sc->lock);
    if (http_get(sc->now_conn, url, &b, NULL, NOW_TIMEOUT_MS) == 0)
        now_ms = field_i64(&b, "now_ms", -1);
    pthread_mutex_unlock(&sc->lock);
    if (now_ms < 0) {
        /* The server is gone: fall back to the system's time rather than stop time. */
        now_ms = ddb_clock_wall_ms(ddb_clock_system());
    }
    *mono_ns = now_ms * 1000000;
    *wall_ms = now_ms;
}

static int server_wait(void *arg, int64_t deadline_mono_ns, ddb_cancel *cancel)
{
    server_clock *sc = arg;
    /* A deadline past any clock's reach (INT64_MAX: "until cancelled") asks the server
     * for the latest time it can name. */
    int64_t until_ms = deadline_mono_ns > INT64_MAX - 999999 ? INT64_MAX / 1000000
                                                               : (deadline_mono_ns + 999999) / 1000000;
    char url[URL_MAX];
    snprintf(url, sizeof url, "%s/fake/clock/wait?until_ms=%lld&timeout_ms=%d", sc->endpoint,
             (long long)until_ms, LONG_POLL_MS);
    ddb__http_conn *conn = ddb__http_conn_new(NULL);
    if (!conn)
        return DDB_ENOMEM;
    int rc = 0;
    for (;;) {
        if (cancel && ddb_cancel_is_set(cancel)) {
            rc = DDB_ECANCELED;
            break;
        }
        body b;
        int got = http_get(conn, url, &b, cancel, LONG_POLL_MS + LONG_POLL_SLACK_MS);
        if (got == DDB_ECANCELED) {
            rc = got;
            break;
        }
        if (got == 0) {
            if (field_bool(&b, "reached"))
                break;
            continue;
        }
        /* No answer: the server is restarting or gone. Try again after a pause. */
        if (cancel) {
            if (ddb_cancel_wait(cancel, RETRY_PAUSE_MS) == 0) {
                rc = DDB_ECANCELED;
                break;
            }
        } else {
            nanosleep(&(struct timespec){.tv_nsec = RETRY_PAUSE_MS * 1000000L}, NULL);
        }
    }
    ddb__http_conn_free(conn);
    return rc;
}

static void server_free(void *arg)
{
    server_clock *sc = arg;
    ddb__http_conn_free(sc->now_conn);
    pthread_mutex_destroy(&sc->lock);
    free(sc->endpoint);
    free(sc);
}

ddb_clock *ddb_clock_new_server(const char *endpoint, ddb_error *err)
{
    if (!endpoint || strncmp(endpoint, "http", 4) != 0) {
        ddb__fail(err, DDB_EINVAL, "the server clock needs the fake server's http endpoint");
        return NULL;
    }
    server_clock *sc = calloc(1, sizeof *sc);
    if (!sc || !(sc->endpoint = strdup(endpoint)) || !(sc->now_conn = ddb__http_conn_new(NULL))) {
        if (sc) {
            free(sc->endpoint);
            free(sc);
        }
        ddb__fail(err, DDB_ENOMEM, "out of memory");
        return NULL;
    }
    size_t len = strlen(sc->endpoint);
    while (len > 0 && sc->endpoint[len - 1] == '/')
        sc->endpoint[--len] = '\0';
    pthread_mutex_init(&sc->lock, NULL);
    /* Check once that the server answers and that its clock can be read. */
    char url[URL_MAX];
    snprintf(url, sizeof url, "%s/fake/clock", sc->endpoint);
    body b;
    if (http_get(sc->now_conn, url, &b, NULL, NOW_TIMEOUT_MS) != 0 || field_i64(&b, "now_ms", -1) < 0) {
        ddb__fail(err, DDB_ENETWORK, "no fake server clock answers at %s/fake/clock", sc->endpoint);
        server_free(sc);
        return NULL;
    }
    ddb_clock *c = ddb_clock_new_custom(
        &(ddb_clock_ops){.now_fn = server_now, .wait_fn = server_wait, .free_fn = server_free},
        sc);
    if (!c) {
        server_free(sc);
        ddb__fail(err, DDB_ENOMEM, "out of memory");
    }
    return c;
}
