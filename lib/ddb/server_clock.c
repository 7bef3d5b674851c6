/* server_clock.c: a ddb_clock that follows a fake server's clock over HTTP, so that
 * several processes talking to one `fakedb --clock fake` share time: a lease measured
 * by one and a takeover measured by another move together when the test advances the
 * server's clock, and nobody sleeps for a lease. */
#include "internal.h"
#include "sigv4.h"

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
    /* A server started with --credentials answers /fake/ with 403 unless the request is
     * signed: from the first 403 on, requests are signed with the standard chain's
     * credentials (environment, shared files, ...), at the server's time as its Date
     * header gives it (a fake clock may be far from ours). */
    pthread_mutex_t sign_lock; /* guards the three below */
    ddb__cred_provider *creds; /* NULL until a 403 */
    int64_t skew_ms;           /* the server's clock minus ours */
} server_clock;

typedef struct body {
    char data[ANSWER_MAX + 1];
    size_t len;
} body;

/* Signs a GET of url for the server (its headers into lines/buf); false without
 * credentials or memory. */
static bool sign_get(server_clock *sc, const char *url, const char *lines[4], char **buf)
{
    pthread_mutex_lock(&sc->sign_lock);
    ddb__cred_provider *p = sc->creds;
    int64_t skew = sc->skew_ms;
    pthread_mutex_unlock(&sc->sign_lock);
    ddb__credentials cred = { 0 };
    ddb_error err;
    ddb_error_clear(&err);
    if (!p || ddb__cred_get(p, &cred, NULL, &err) != 0)
        return false;
    /* url is http://HOST[:PORT]/fake/...[?QUERY] */
    const char *host = strstr(url, "://");
    host = host ? host + 3 : url;
    const char *path = strchr(host, '/');
    char host_h[256], path_h[URL_MAX];
    size_t hl = path ? (size_t)(path - host) : strlen(host);
    const char *q = path ? strchr(path, '?') : NULL;
    size_t pl = path ? (q ? (size_t)(q - path) : strlen(path)) : 0;
    bool ok = hl < sizeof host_h && pl < sizeof path_h;
    dl_sigv4_result sig = { 0 };
    if (ok) {
        memcpy(host_h, host, hl);
        host_h[hl] = '\0';
        memcpy(path_h, path ? path : "/", pl ? pl : 1);
        path_h[pl ? pl : 1] = '\0';
        int64_t epoch_s = (ddb_clock_wall_ms(ddb_clock_system()) + skew) / 1000;
        char amz_date[17];
        dl__sigv4_amz_date(epoch_s, amz_date);
        dl_sigv4_header sh[3] = { { "host", host_h }, { "x-amz-date", amz_date },
                                  { "x-amz-security-token", cred.session_token } };
        dl_sigv4_request req = { .method = "GET", .path = path_h, .query = q ? q + 1 : NULL,
                                 .headers = sh, .n_headers = cred.session_token ? 3 : 2 };
        dl_sigv4_credentials c = { cred.access_key_id, cred.secret_access_key, cred.session_token };
        ok = dl__sigv4_sign(&req, &c, "us-east-1", "dynamodb", epoch_s, &sig) == 0 &&
             asprintf(buf, "Host: %s%cX-Amz-Date: %s%cAuthorization: %s%cX-Amz-Security-Token: %s",
                      host_h, 0, amz_date, 0, sig.authorization, 0,
                      cred.session_token ? cred.session_token : "") >= 0;
        if (!ok)
            *buf = NULL;
    }
    if (ok) {
        lines[0] = *buf;
        for (int i = 1; i < 4; i++)
            lines[i] = lines[i - 1] + strlen(lines[i - 1]) + 1;
    }
    dl__sigv4_result_cleanup(&sig);
    ddb__credentials_cleanup(&cred);
    return ok;
}

/* After a 403: from now on sign, at the server's time (its Date). */
static bool start_signing(server_clock *sc, const char *date)
{
    int64_t server_ms = ddb__parse_http_date_ms(date);
    pthread_mutex_lock(&sc->sign_lock);
    if (server_ms > 0)
        sc->skew_ms = server_ms - ddb_clock_wall_ms(ddb_clock_system());
    if (!sc->creds)
        sc->creds = ddb__cred_provider_new(NULL, NULL, ddb_clock_system(), NULL);
    bool ok = sc->creds != NULL;
    pthread_mutex_unlock(&sc->sign_lock);
    return ok;
}

/* GETs url on conn (NULL: a connection of its own); fills b. 0 on a 200 answer,
 * DDB_ECANCELED when cancel was set, -2 when the server refuses the credentials (or
 * none were found), -1 otherwise. */
static int http_get(server_clock *sc, ddb__http_conn *conn, const char *url, body *b,
                    ddb_cancel *cancel, long timeout_ms)
{
    static const char *const want[] = { "Date" };
    int rc = -1;
    for (int attempt = 0; attempt < 2; attempt++) {
        b->len = 0;
        b->data[0] = '\0';
        const char *lines[4];
        char *buf = NULL;
        pthread_mutex_lock(&sc->sign_lock);
        bool sign = sc->creds != NULL;
        pthread_mutex_unlock(&sc->sign_lock);
        if (sign && !sign_get(sc, url, lines, &buf))
            return -2;
        bool token = buf && lines[3][strlen("X-Amz-Security-Token: ")] != '\0';
        ddb__http_request r = {
            .method = "GET",
            .url = url,
            .headers = buf ? lines : NULL,
            .n_headers = buf ? (token ? 4 : 3) : 0,
            .timeout_ms = timeout_ms,
            .max_answer = ANSWER_MAX,
            .want_headers = want,
            .n_want_headers = 1,
        };
        ddb__http_answer a;
        ddb_error err;
        ddb_error_clear(&err);
        rc = ddb__http_send(conn, &r, cancel, &a, &err);
        free(buf);
        if (rc != 0)
            return rc == DDB_ECANCELED ? rc : -1;
        bool retry = a.status == 403 && attempt == 0 &&
                     start_signing(sc, a.n_header_values ? a.header_values[0] : NULL);
        rc = a.status == 200 ? 0 : a.status == 403 ? -2 : -1;
        memcpy(b->data, a.body, a.len + 1);
        b->len = a.len;
        ddb__http_answer_cleanup(&a);
        if (!retry)
            break;
    }
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
    if (http_get(sc, sc->now_conn, url, &b, NULL, NOW_TIMEOUT_MS) == 0)
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
        int got = http_get(sc, conn, url, &b, cancel, LONG_POLL_MS + LONG_POLL_SLACK_MS);
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
    ddb__cred_provider_free(sc->creds);
    pthread_mutex_destroy(&sc->lock);
    pthread_mutex_destroy(&sc->sign_lock);
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
    pthread_mutex_init(&sc->sign_lock, NULL);
    /* Check once that the server answers and that its clock can be read. */
    char url[URL_MAX];
    snprintf(url, sizeof url, "%s/fake/clock", sc->endpoint);
    body b;
    int got = http_get(sc, sc->now_conn, url, &b, NULL, NOW_TIMEOUT_MS);
    if (got == -2) {
        ddb__fail(err, DDB_ECREDENTIALS, "the fake server at %s wants credentials (fakedb "
                  "--credentials) for its clock, and those found (environment, shared files) "
                  "are not its own", sc->endpoint);
        server_free(sc);
        return NULL;
    }
    if (got != 0 || field_i64(&b, "now_ms", -1) < 0) {
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
