/* server.c: the HTTP side of libfakedb on libmicrohttpd (one event loop over poll(2) by
 * default, or a pool of them): start and stop, reading bodies up to DynamoDB's 16 MB
 * limit, routing to the DynamoDB protocol or the /fake/ endpoints, and suspending
 * connections that must wait (a delay fault, a clock long poll) without holding the
 * loop. A ticker thread resumes them when due, expires items with the system clock and
 * closes idle connections.
 *
 * Hostile clients: poll rather than epoll, because libmicrohttpd 0.9.75's edge-triggered
 * epoll misses a client's EOF that arrives with its last bytes (the connection then sat
 * in CLOSE-WAIT until the timeout). Every connection is tracked from accept to close;
 * those with no request in progress sit in a list, longest idle first, and are shut
 * down (shutdown(2): libmicrohttpd sees the EOF and closes them in its own thread) when
 * idle for longer than the idle timeout, or when the server nears its connection limit
 * and a new client needs the room. */
#include "server.h"

#include <buf.h>
#include <sigv4.h>
#include <dynalock/version.h>

#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netdb.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAX_HEADERS 64

enum { WAIT_NONE, WAIT_DELAY, WAIT_CLOCK, WAIT_REQUESTS };
/* How long fakedb_stop waits for the answers of the requests in progress. */
#define STOP_ANSWERS_MAX_S 2

/* How often the ticker looks for new requests while a console long poll waits: the
 * request path never wakes anyone, so that it pays nothing for an open console. */
#define REQUESTS_POLL_MS 50

#define DEFAULT_IDLE_TIMEOUT_MS 60000
#define MAX_DEFAULT_CONNECTIONS 16384u
#define RESERVED_FDS 64u    /* sqlite, the listening socket, the process's own */

/* One per connection (libmicrohttpd's socket context), from accept to close. */
typedef struct fakedb__conn {
    int fd;
    bool idle;              /* in db's idle list */
    int64_t idle_since_ms;  /* monotonic */
    struct fakedb__conn *prev, *next;
} fakedb__conn;

static void idle_unlink(fakedb *db, fakedb__conn *c)
{
    if (!c->idle)
        return;
    if (c->prev)
        c->prev->next = c->next;
    else
        db->idle_head = c->next;
    if (c->next)
        c->next->prev = c->prev;
    else
        db->idle_tail = c->prev;
    c->prev = c->next = NULL;
    c->idle = false;
}

static void idle_append(fakedb *db, fakedb__conn *c)
{
    idle_unlink(db, c);
    c->idle = true;
    c->idle_since_ms = fakedb__mono_ms();
    c->prev = db->idle_tail;
    c->next = NULL;
    if (db->idle_tail)
        db->idle_tail->next = c;
    else
        db->idle_head = c;
    db->idle_tail = c;
}

/* Shuts an idle connection down and forgets it as idle; conn_lock held. The socket is
 * still open: libmicrohttpd notifies the close (conn_lock) before it closes the fd. */
static void idle_evict(fakedb *db, fakedb__conn *c)
{
    idle_unlink(db, c);
    if (c->fd >= 0)
        shutdown(c->fd, SHUT_RDWR);
}

static void on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
                          enum MHD_ConnectionNotificationCode code)
{
    fakedb *db = cls;
    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
        fakedb__conn *c = calloc(1, sizeof *c);
        if (!c)
            return;
        const union MHD_ConnectionInfo *ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
        c->fd = ci ? ci->connect_fd : -1;
        *socket_context = c;
        pthread_mutex_lock(&db->conn_lock);
        db->conn_count++;
        /* Near the limit a new client takes the place of the longest idle one. */
        if (db->conn_count > db->conn_high_water && db->idle_head)
            idle_evict(db, db->idle_head);
        idle_append(db, c);
        pthread_mutex_unlock(&db->conn_lock);
    } else if (code == MHD_CONNECTION_NOTIFY_CLOSED) {
        fakedb__conn *c = *socket_context;
        if (!c)
            return;
        pthread_mutex_lock(&db->conn_lock);
        idle_unlink(db, c);
        db->conn_count--;
        pthread_mutex_unlock(&db->conn_lock);
        free(c);
        *socket_context = NULL;
    }
}

/* A request reached the handler (busy) or finished (idle again). */
static void conn_mark(fakedb *db, struct MHD_Connection *conn, bool busy)
{
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    fakedb__conn *c = ci ? ci->socket_context : NULL;
    if (!c)
        return;
    pthread_mutex_lock(&db->conn_lock);
    if (busy)
        idle_unlink(db, c);
    else
        idle_append(db, c);
    pthread_mutex_unlock(&db->conn_lock);
}

/* Closes the connections idle for longer than the idle timeout (also those that trickle
 * bytes without ever completing a request's headers). */
static void reap_idle(fakedb *db)
{
    int64_t now = fakedb__mono_ms();
    pthread_mutex_lock(&db->conn_lock);
    while (db->idle_head && now - db->idle_head->idle_since_ms >= db->idle_timeout_ms)
        idle_evict(db, db->idle_head);
    pthread_mutex_unlock(&db->conn_lock);
}

typedef struct conn_state {
    bool started;           /* the access handler has seen the request */
    char *query;            /* the raw query string (for SigV4), or NULL */
    dl_buf body;
    bool too_large;
    int waiting;            /* what the connection was suspended for */
    bool resumed;
    int64_t until_ms;
} conn_state;

static void *ticker_main(void *arg)
{
    fakedb *db = arg;
    int64_t next_sweep = fakedb__mono_ms() + 1000;
    int64_t next_purge = next_sweep;
    int64_t reap_every = db->idle_timeout_ms / 4 < 1000 ? db->idle_timeout_ms / 4 : 1000;
    if (reap_every < 10)
        reap_every = 10;
    int64_t next_reap = fakedb__mono_ms() + reap_every;
    pthread_mutex_lock(&db->wait_lock);
    while (!db->stopping) {
        int64_t next = fakedb__mono_ms() + 1000;
        bool has_clock_waiters = false, has_request_waiters = false;
        fakedb__waiter *due = fakedb__waiters_take_due(db, false, &next);
        for (fakedb__waiter *w = db->waiters; w; w = w->next) {
            has_clock_waiters = has_clock_waiters || w->until_ms != INT64_MAX;
            has_request_waiters = has_request_waiters || w->requests;
        }
        if (has_request_waiters && next > fakedb__mono_ms() + REQUESTS_POLL_MS)
            next = fakedb__mono_ms() + REQUESTS_POLL_MS;
        pthread_mutex_lock(&db->clock.lock);
        bool fake = db->clock.fake;
        pthread_mutex_unlock(&db->clock.lock);
        if (has_clock_waiters && !fake && next > fakedb__mono_ms() + 5)
            next = fakedb__mono_ms() + 5;   /* the system clock moves by itself */
        if (due) {
            pthread_mutex_unlock(&db->wait_lock);
            fakedb__waiters_resume(due);
            pthread_mutex_lock(&db->wait_lock);
            continue;
        }
        if (!fake && fakedb__mono_ms() >= next_sweep) {
            pthread_mutex_unlock(&db->wait_lock);
            fakedb__databases_each(db, fakedb__sweep_one, NULL);
            pthread_mutex_lock(&db->wait_lock);
            next_sweep = fakedb__mono_ms() + 1000;
            continue;
        }
        /* a deleted table's rows: a slice per database, then a millisecond for the
         * requests, until none is left; looked for once a second */
        if (!fake && fakedb__mono_ms() >= next_purge) {
            bool more = false;
            pthread_mutex_unlock(&db->wait_lock);
            fakedb__databases_each(db, fakedb__purge_one, &more);
            pthread_mutex_lock(&db->wait_lock);
            next_purge = fakedb__mono_ms() + (more ? 1 : 1000);
            continue;
        }
        if (fakedb__mono_ms() >= next_reap) {
            pthread_mutex_unlock(&db->wait_lock);
            reap_idle(db);
            pthread_mutex_lock(&db->wait_lock);
            next_reap = fakedb__mono_ms() + reap_every;
            continue;
        }
        if (next > next_reap)
            next = next_reap;
        if (!fake && next > next_sweep)
            next = next_sweep;
        if (!fake && next > next_purge)
            next = next_purge;
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        int64_t wait_ms = next - fakedb__mono_ms();
        if (wait_ms < 0)
            wait_ms = 0;
        ts.tv_sec += (time_t)(wait_ms / 1000);
        ts.tv_nsec += (long)(wait_ms % 1000) * 1000000L;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&db->wait_cond, &db->wait_lock, &ts);
    }
    pthread_mutex_unlock(&db->wait_lock);
    return NULL;
}

/* Registers a suspended connection; false when the server is stopping (then the caller
 * answers at once). Called from the access handler. until_ms: the clock time a clock
 * wait waits for, or the sequence number a console long poll waits to see passed. */
static bool suspend(fakedb *db, struct MHD_Connection *conn, conn_state *cs, int kind,
                    int64_t until_ms, int64_t delay_ms)
{
    fakedb__waiter *w = calloc(1, sizeof *w);
    if (!w)
        return false;
    w->conn = conn;
    w->resumed = &cs->resumed;
    w->until_ms = kind == WAIT_CLOCK ? until_ms : INT64_MAX;
    w->requests = kind == WAIT_REQUESTS;
    w->after_seq = kind == WAIT_REQUESTS ? (uint64_t)until_ms : 0;
    w->deadline_mono_ms = fakedb__mono_ms() + delay_ms;
    pthread_mutex_lock(&db->wait_lock);
    if (db->stopping) {
        pthread_mutex_unlock(&db->wait_lock);
        free(w);
        return false;
    }
    cs->waiting = kind;
    cs->resumed = false;
    cs->until_ms = until_ms;
    MHD_suspend_connection(conn);
    w->next = db->waiters;
    db->waiters = w;
    pthread_cond_broadcast(&db->wait_cond);
    pthread_mutex_unlock(&db->wait_lock);
    /* the clock may have moved between the check and the registration */
    if (kind == WAIT_CLOCK)
        fakedb__wake_waiters(db);
    return true;
}

typedef struct header_vec {
    dl_sigv4_header h[MAX_HEADERS];
    size_t n;
} header_vec;

static enum MHD_Result collect_header(void *cls, enum MHD_ValueKind kind, const char *key,
                                      const char *value)
{
    header_vec *v = cls;
    (void)kind;
    if (v->n < MAX_HEADERS) {
        v->h[v->n].name = key;
        v->h[v->n].value = value ? value : "";
        v->n++;
    }
    return MHD_YES;
}

/* RFC 9110 5.6.2: a token's characters (ASCII, whatever the process's locale). */
static bool tchar(char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
           (c && strchr("!#$%&'*+-.^_`|~", c));
}

/* A field name is a token. */
static bool is_token(const char *s)
{
    if (!*s)
        return false;
    for (; *s; s++)
        if (!tchar(*s))
            return false;
    return true;
}

/* What the headers say of the body's framing (RFC 9112 6): the reason the request
 * must be refused, and its connection closed, or NULL. */
typedef struct framing {
    const char *content_length; /* the first */
    int transfer_encodings;
    const char *problem;
} framing;

static enum MHD_Result check_framing(void *cls, enum MHD_ValueKind kind, const char *key,
                                     const char *value)
{
    framing *f = cls;
    (void)kind;
    value = value ? value : "";
    const char *problem = NULL;
    if (!is_token(key)) {
        problem = "Malformed header name";
    } else if (!strcasecmp(key, MHD_HTTP_HEADER_CONTENT_LENGTH)) {
        if (!f->content_length)
            f->content_length = value;
        else if (strcmp(f->content_length, value) != 0)
            problem = "Conflicting Content-Length headers";
    } else if (!strcasecmp(key, MHD_HTTP_HEADER_TRANSFER_ENCODING)) {
        f->transfer_encodings++;
        if (strcasecmp(value, "chunked") != 0)
            problem = "Unsupported Transfer-Encoding (only chunked is)";
    }
    if (problem && !f->problem)
        f->problem = problem;
    return MHD_YES;
}

static const char *framing_problem(struct MHD_Connection *conn)
{
    framing f = { NULL, 0, NULL };
    MHD_get_connection_values(conn, MHD_HEADER_KIND, check_framing, &f);
    if (!f.problem && f.transfer_encodings > 1)
        f.problem = "Transfer-Encoding repeated";
    if (!f.problem && f.transfer_encodings && f.content_length)
        f.problem = "Both Content-Length and Transfer-Encoding";
    return f.problem;
}

/* ---- CORS: db->cors is NULL (off), "*" or a comma-separated list of origins */

#define CORS_EXPOSE "x-amzn-RequestId, x-amz-crc32, x-amz-id-2, Date"
#define CORS_METHODS "GET, POST, DELETE, OPTIONS"
#define CORS_HEADERS "authorization, content-type, x-amz-date, x-amz-target, x-amz-user-agent, " \
                     "x-amz-security-token, x-amz-content-sha256, amz-sdk-invocation-id, " \
                     "amz-sdk-request, x-amz-client-context"
#define CORS_MAX_AGE "1728000"

static bool origin_allowed(const fakedb *db, const char *origin)
{
    if (!db->cors || !origin || !*origin)
        return false;
    size_t n = strlen(origin);
    for (const char *p = db->cors; *p;) {
        while (*p == ' ' || *p == ',')
            p++;
        size_t k = strcspn(p, ",");
        size_t t = k;
        while (t && p[t - 1] == ' ')
            t--;
        if ((t == 1 && *p == '*') || (t == n && t && !strncasecmp(p, origin, n)))
            return true;
        p += k;
    }
    return false;
}

/* The headers of an answer to an allowed origin. */
static void add_cors(struct MHD_Response *resp, const fakedb *db, const char *origin)
{
    bool any = !strcmp(db->cors, "*");
    if (!any)
        MHD_add_response_header(resp, "Vary", "Origin");
    if (!origin_allowed(db, origin))
        return;
    MHD_add_response_header(resp, "Access-Control-Allow-Origin", any ? "*" : origin);
    MHD_add_response_header(resp, "Access-Control-Expose-Headers", CORS_EXPOSE);
}

/* A token list ("a, b-c"), so that it may be echoed. */
static bool token_list(const char *s)
{
    if (!s || !*s || strlen(s) > 1024)
        return false;
    for (; *s; s++)
        if (!tchar(*s) && *s != ',' && *s != ' ')
            return false;
    return true;
}

/* Answers a CORS preflight: 200 with what may be sent, or 403 for an origin not allowed. */
static enum MHD_Result answer_preflight(struct MHD_Connection *conn, fakedb *db, const char *origin)
{
    bool ok = origin_allowed(db, origin);
    static char refused[] = "{\"error\":\"CORS: this origin is not allowed (fakedb --cors)\"}";
    struct MHD_Response *resp = MHD_create_response_from_buffer(ok ? 0 : strlen(refused), refused,
                                                                MHD_RESPMEM_PERSISTENT);
    if (!resp)
        return MHD_NO;
    add_cors(resp, db, origin);
    if (ok) {
        const char *asked = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Access-Control-Request-Headers");
        MHD_add_response_header(resp, "Access-Control-Allow-Methods", CORS_METHODS);
        MHD_add_response_header(resp, "Access-Control-Allow-Headers", token_list(asked) ? asked : CORS_HEADERS);
        MHD_add_response_header(resp, "Access-Control-Max-Age", CORS_MAX_AGE);
    } else {
        MHD_add_response_header(resp, "Content-Type", "application/json");
    }
    enum MHD_Result r = MHD_queue_response(conn, ok ? 200 : 403, resp);
    MHD_destroy_response(resp);
    return r;
}

static const char *get_arg(void *ctx, const char *name)
{
    return MHD_lookup_connection_value(ctx, MHD_GET_ARGUMENT_KIND, name);
}

/* The Date header's text for a second, made once a second by each thread. */
static const char *http_date(time_t s)
{
    static _Thread_local time_t made_for = -1;
    static _Thread_local char text[40];
    if (s != made_for) {
        struct tm tm;
        gmtime_r(&s, &tm);
        strftime(text, sizeof text, "%a, %d %b %Y %H:%M:%S GMT", &tm);
        made_for = s;
    }
    return text;
}

static enum MHD_Result send_resp(struct MHD_Connection *conn, fakedb *db, fakedb__http_resp *rs)
{
    struct MHD_Response *resp = MHD_create_response_from_buffer(rs->body_len, rs->body ? rs->body : (char *)"",
                                                                rs->body ? MHD_RESPMEM_MUST_FREE : MHD_RESPMEM_PERSISTENT);
    if (!resp) {
        free(rs->body);
        return MHD_NO;
    }
    rs->body = NULL;
    MHD_add_response_header(resp, "Content-Type", rs->content_type ? rs->content_type : "application/json");
    /* The server's clock (a fake one when it is fake), from which a client corrects its
     * clock skew. */
    MHD_add_response_header(resp, MHD_HTTP_HEADER_DATE, http_date((time_t)(fakedb__now_ms(&db->clock) / 1000)));
    if (rs->amz) {
        char id[53], crc[16];
        fakedb__request_id(db, id);
        MHD_add_response_header(resp, "x-amzn-RequestId", id);
        MHD_add_response_header(resp, "Server", "Server"); /* what DynamoDB names itself */
        snprintf(crc, sizeof crc, "%u", rs->crc32);
        MHD_add_response_header(resp, "x-amz-crc32", crc);
    }
    if (db->cors)
        add_cors(resp, db, MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Origin"));
    if (rs->close)
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONNECTION, "close");
    if (rs->gzip)
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_ENCODING, "gzip");
    if (rs->console)
        fakedb__console_headers(resp);
    enum MHD_Result r = MHD_queue_response(conn, (unsigned)rs->status, resp);
    MHD_destroy_response(resp);
    return r;
}

/* The admin endpoints' bodies are small JSON objects: a larger one is read and dropped
 * as it comes, never held, then refused (answered at once past 16 MB, as a DynamoDB
 * request is), so that no request under /fake/ costs more memory than this. Answering
 * before the body is read and closing would race the client's sending: its kernel
 * resets the connection and the answer is lost. */
#define ADMIN_MAX_BODY 65536

static bool is_admin(const char *url)
{
    return !strncmp(url, "/fake/", 6) || !strcmp(url, "/fake");
}

static void admin_too_large(fakedb__http_resp *rs)
{
    static const char msg[] = "{\"error\":\"the body is larger than 65536 bytes, the limit of /fake/ requests\"}";
    memset(rs, 0, sizeof *rs);
    rs->status = 400;
    rs->body = strdup(msg);
    rs->body_len = rs->body ? strlen(msg) : 0;
    rs->content_type = "application/json";
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version,
                                  const char *upload_data, size_t *upload_size, void **con_cls)
{
    fakedb *db = cls;
    conn_state *cs = *con_cls;
    (void)version;
    if (!cs || !cs->started) {
        if (!cs) {
            cs = calloc(1, sizeof *cs);
            if (!cs)
                return MHD_NO;
            *con_cls = cs;
        }
        cs->started = true;
        atomic_fetch_add(&db->busy, 1);
        conn_mark(db, conn, true);
        const char *problem = framing_problem(conn);
        if (problem) {
            /* RFC 9112 6.1, 6.3: the framing is unknown or ambiguous, so where the next
             * request starts is too; answer and close before any of the body is read. */
            fakedb__http_resp rs;
            memset(&rs, 0, sizeof rs);
            fakedb__answer_error(&rs, 400, FDB_E_SERIALIZATION, problem);
            rs.crc32 = fakedb__crc32(rs.body, rs.body_len);
            rs.close = true;
            return send_resp(conn, db, &rs);
        }
        const char *origin = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Origin");
        if (db->cors && origin && !strcmp(method, "OPTIONS") &&
            MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Access-Control-Request-Method"))
            return answer_preflight(conn, db, origin);
        const char *cl = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
        if (is_admin(url) && cl && strtoll(cl, NULL, 10) > FDB_MAX_REQUEST_BYTES) {
            fakedb__http_resp rs;
            admin_too_large(&rs);
            return send_resp(conn, db, &rs);
        }
        if (cl && strtoll(cl, NULL, 10) > FDB_MAX_REQUEST_BYTES) {
            fakedb__http_req rq;
            fakedb__http_resp rs;
            memset(&rq, 0, sizeof rq);
            memset(&rs, 0, sizeof rs);
            rq.body_too_large = true;
            fakedb__handle_ddb(db, &rq, &rs, false);
            rs.crc32 = fakedb__crc32(rs.body, rs.body_len);
            return send_resp(conn, db, &rs);
        }
        return MHD_YES;
    }
    if (*upload_size) {
        size_t n = *upload_size;
        *upload_size = 0;
        if (cs->too_large)
            return MHD_YES;
        if (cs->body.len + n > (is_admin(url) ? (size_t)ADMIN_MAX_BODY : (size_t)FDB_MAX_REQUEST_BYTES)) {
            cs->too_large = true;
            dl__buf_cleanup(&cs->body);
            return MHD_YES;
        }
        dl__buf_put(&cs->body, upload_data, n);
        return cs->body.oom ? MHD_NO : MHD_YES;
    }

    header_vec hv;
    hv.n = 0;
    MHD_get_connection_values(conn, MHD_HEADER_KIND, collect_header, &hv);
    fakedb__http_req rq;
    fakedb__http_resp rs;
    memset(&rq, 0, sizeof rq);
    memset(&rs, 0, sizeof rs);
    rq.method = method;
    rq.url = url;
    rq.query = cs->query;
    rq.target = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "X-Amz-Target");
    rq.content_type = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE);
    rq.authorization = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
    rq.body = cs->body.p ? cs->body.p : "";
    rq.body_len = cs->body.len;
    rq.body_too_large = cs->too_large;
    rq.headers = hv.h;
    rq.n_headers = hv.n;
    rq.get_arg = get_arg;
    rq.arg_ctx = conn;

    if (cs->waiting == WAIT_CLOCK && cs->resumed) {
        fakedb__admin_wait_answer(db, cs->until_ms, &rs);
    } else if (is_admin(url) && cs->too_large) {
        admin_too_large(&rs);
    } else if (is_admin(url)) {
        int64_t until = 0, timeout = 0;
        rq.resumed = cs->waiting == WAIT_REQUESTS && cs->resumed;
        /* With credentials every /fake/ path but the health check needs them. */
        int k = 0;
        if (db->cred_key && strcmp(url, "/fake/health") != 0 && !fakedb__admin_authorized(db, &rq, &rs))
            k = 0; /* rs: 403 */
        else
            k = fakedb__handle_admin(db, &rq, &rs, &until, &timeout);
        if (k == 1) {
            if (suspend(db, conn, cs, WAIT_CLOCK, until, timeout))
                return MHD_YES;
            fakedb__admin_wait_answer(db, until, &rs);
        } else if (k == 2) {
            if (suspend(db, conn, cs, WAIT_REQUESTS, until, timeout))
                return MHD_YES;
            rq.resumed = true; /* stopping: answer what there is */
            fakedb__handle_admin(db, &rq, &rs, &until, &timeout);
        }
    } else if (!strcmp(method, "POST")) {
        bool after_delay = cs->waiting == WAIT_DELAY && cs->resumed;
        fakedb__handle_ddb(db, &rq, &rs, after_delay);
        if (rs.delay_ms > 0) {
            if (suspend(db, conn, cs, WAIT_DELAY, 0, rs.delay_ms))
                return MHD_YES;
            rs.delay_ms = 0;
            fakedb__handle_ddb(db, &rq, &rs, true);
        }
        rs.crc32 = fakedb__crc32(rs.body, rs.body_len);
        if (rs.lose) {
            free(rs.body);
            return MHD_NO;
        }
    } else if (!strcmp(method, "GET") && !strcmp(url, "/")) {
        static const char healthy[] = "healthy: dynamodb.us-east-1.amazonaws.com ";
        rs.status = 200;
        rs.body = strdup(healthy);
        rs.body_len = rs.body ? strlen(healthy) : 0;
        rs.content_type = "text/plain";
    } else {
        rs.status = 404;
        rs.body = strdup("{\"__type\":\"com.amazon.coral.service#UnknownOperationException\"}");
        rs.body_len = rs.body ? strlen(rs.body) : 0;
        rs.content_type = "application/x-amz-json-1.0";
    }
    return send_resp(conn, db, &rs);
}

/* libmicrohttpd's first sight of a request: its raw URI, whose query SigV4 signs as
 * sent (the access handler sees only the decoded arguments). The state made here is
 * the request's *con_cls. */
static void *on_uri(void *cls, const char *uri, struct MHD_Connection *conn)
{
    (void)cls;
    (void)conn;
    conn_state *cs = calloc(1, sizeof *cs);
    const char *q = uri ? strchr(uri, '?') : NULL;
    if (cs && q && q[1])
        cs->query = strdup(q + 1);
    return cs;
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    conn_state *cs = *con_cls;
    (void)toe;
    if (cs) {
        if (cs->started)
            conn_mark(cls, conn, false);
        if (cs->started) {
            /* fakedb_stop waits for the requests in progress: tell it when the last ends. */
            fakedb *db = cls;
            if (atomic_fetch_sub(&db->busy, 1) == 1 && __atomic_load_n(&db->stopping, __ATOMIC_SEQ_CST)) {
                pthread_mutex_lock(&db->wait_lock);
                pthread_cond_broadcast(&db->wait_cond);
                pthread_mutex_unlock(&db->wait_lock);
            }
        }
        dl__buf_cleanup(&cs->body);
        free(cs->query);
        free(cs);
        *con_cls = NULL;
    }
}

static void set_err(fakedb_error *err, int code, const char *msg)
{
    if (err) {
        err->code = code;
        fakedb__copy_str(err->message, sizeof err->message, msg);
    }
}

static void server_free(fakedb *db)
{
    if (db->ticker_started) {
        pthread_mutex_lock(&db->wait_lock);
        __atomic_store_n(&db->stopping, true, __ATOMIC_SEQ_CST);
        pthread_cond_broadcast(&db->wait_cond);
        pthread_mutex_unlock(&db->wait_lock);
        pthread_join(db->ticker, NULL);
    }
    fakedb__databases_free(db);
    pthread_mutex_destroy(&db->dbs_lock);
    fakedb__store_close(&db->store);
    fakedb__faults_free(db);
    pthread_mutex_destroy(&db->store.lock);
    pthread_mutex_destroy(&db->clock.lock);
    pthread_mutex_destroy(&db->fault_lock);
    pthread_cond_destroy(&db->fault_fired);
    pthread_mutex_destroy(&db->stats_lock);
    fakedb__metrics_cleanup(&db->metrics);
    fakedb__console_free(db);
    pthread_mutex_destroy(&db->recent.lock);
    pthread_mutex_destroy(&db->console_lock);
    pthread_mutex_destroy(&db->wait_lock);
    pthread_mutex_destroy(&db->conn_lock);
    pthread_cond_destroy(&db->wait_cond);
    free(db->host);
    free(db->db_path);
    free(db->cred_key);
    free(db->cred_secret);
    free(db->cors);
    free(db);
}

/* Why libmicrohttpd could not listen on the address (its errno is not kept): binds a
 * socket the way it does (SO_REUSEADDR, which lets a port in TIME_WAIT be taken again
 * but never a port another socket listens on). 0 when it could. */
static int why_no_bind(const struct addrinfo *ai)
{
    int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return errno;
    int one = 1, e = 0;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 || listen(fd, 1) != 0)
        e = errno;
    close(fd);
    return e;
}

#undef fakedb_start
/* The options as first released, with fakedb_start: up to max_connections. */
#define FAKEDB_OPTIONS_V0_SIZE (offsetof(fakedb_options, max_connections) + sizeof(int))

fakedb *fakedb_start(const fakedb_options *o, fakedb_error *err)
{
    return fakedb_start_sized(FAKEDB_OPTIONS_V0_SIZE, o, err);
}

fakedb *fakedb_start_sized(size_t size, const fakedb_options *given, fakedb_error *err)
{
    /* A caller built with an older header passes a smaller struct: the members it does
     * not have keep their zero value, the default. */
    fakedb_options copy;
    memset(&copy, 0, sizeof copy);
    if (given)
        memcpy(&copy, given, size < sizeof copy ? size : sizeof copy);
    const fakedb_options *o = &copy;
    if (err) {
        err->code = 0;
        err->message[0] = 0;
    }
    if (o->port < 0 || o->port > 65535 || o->threads < 0 || o->threads > 256 || o->idle_timeout_ms < 0 ||
        o->max_connections < 0) {
        set_err(err, FAKEDB_EINVAL, "port must be 0..65535, threads 0..256, idle_timeout_ms and max_connections >= 0");
        return NULL;
    }
    if (o->credentials && (!strchr(o->credentials, ':') || o->credentials[0] == ':')) {
        set_err(err, FAKEDB_EINVAL, "credentials must be KEY:SECRET");
        return NULL;
    }
    fakedb *db = calloc(1, sizeof *db);
    if (!db) {
        set_err(err, FAKEDB_ENOMEM, "out of memory");
        return NULL;
    }
    pthread_mutex_init(&db->store.lock, NULL);
    pthread_mutex_init(&db->dbs_lock, NULL);
    pthread_mutex_init(&db->clock.lock, NULL);
    pthread_mutex_init(&db->fault_lock, NULL);
    pthread_condattr_t fca;
    pthread_condattr_init(&fca);
    pthread_condattr_setclock(&fca, CLOCK_MONOTONIC);
    pthread_cond_init(&db->fault_fired, &fca);
    pthread_condattr_destroy(&fca);
    pthread_mutex_init(&db->stats_lock, NULL);
    fakedb__metrics_init(&db->metrics);
    pthread_mutex_init(&db->recent.lock, NULL);
    pthread_mutex_init(&db->console_lock, NULL);
    pthread_mutex_init(&db->wait_lock, NULL);
    pthread_mutex_init(&db->conn_lock, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&db->wait_cond, &ca);
    pthread_condattr_destroy(&ca);
    db->cors = o->cors && !*o->cors ? NULL : strdup(o->cors ? o->cors : "*");
    db->host = strdup(o->host ? o->host : "127.0.0.1");
    db->db_path = o->db_path ? strdup(o->db_path) : NULL;
    db->threads = o->threads ? o->threads : 1;
    db->log_requests = o->log_requests;
    db->separate_dbs = o->separate_databases;
    db->clock.fake = o->fake_clock;
    db->idle_timeout_ms = o->idle_timeout_ms ? o->idle_timeout_ms : DEFAULT_IDLE_TIMEOUT_MS;
    if (o->max_connections) {
        db->conn_limit = (unsigned)o->max_connections;
    } else {
        /* Room for every connection up to the descriptor limit, less a reserve. */
        struct rlimit rl;
        rlim_t fds = getrlimit(RLIMIT_NOFILE, &rl) == 0 ? rl.rlim_cur : 1024;
        db->conn_limit = fds == RLIM_INFINITY || fds > MAX_DEFAULT_CONNECTIONS + RESERVED_FDS
            ? MAX_DEFAULT_CONNECTIONS
            : fds > 2 * RESERVED_FDS ? (unsigned)fds - RESERVED_FDS : (unsigned)fds / 2;
    }
    if (db->conn_limit < 4)
        db->conn_limit = 4;
    /* Eviction starts below the limit: each loop gets its share of the limit
     * from libmicrohttpd, and a new connection must find room in whichever accepts it. */
    db->conn_high_water = db->conn_limit - db->conn_limit / 4;
    if (o->fake_clock) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        db->clock.fake_now_ms = o->fake_clock_start_ms ? o->fake_clock_start_ms
                                                 : (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
    }
    if (o->credentials) {
        const char *colon = strchr(o->credentials, ':');
        db->cred_key = strndup(o->credentials, (size_t)(colon - o->credentials));
        db->cred_secret = strdup(colon + 1);
    }
    if (!db->host || (o->db_path && !db->db_path) || (!db->cors && (!o->cors || *o->cors))) {
        set_err(err, FAKEDB_ENOMEM, "out of memory");
        server_free(db);
        return NULL;
    }
    db->store.db_path = db->db_path;
    db->store.log_requests = db->log_requests;
    db->store.clock = &db->clock;
    pthread_mutex_lock(&db->store.lock);
    int rc = fakedb__store_open(&db->store, err);
    pthread_mutex_unlock(&db->store.lock);
    if (!rc)
        rc = fakedb__databases_open_existing(db, err);
    if (rc) {
        server_free(db);
        return NULL;
    }

    struct addrinfo hints, *ai = NULL;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
    char port[16];
    snprintf(port, sizeof port, "%d", o->port);
    if (getaddrinfo(db->host, port, &hints, &ai) != 0 || !ai) {
        char what[300];
        snprintf(what, sizeof what, "cannot resolve host %s", db->host);
        set_err(err, FAKEDB_EINVAL, what);
        server_free(db);
        return NULL;
    }
    unsigned flags = MHD_USE_POLL_INTERNAL_THREAD | MHD_ALLOW_SUSPEND_RESUME;
    unsigned timeout_s = (unsigned)((db->idle_timeout_ms + 999) / 1000);
    if (ai->ai_family == AF_INET6)
        flags |= MHD_USE_IPv6;
    db->mhd = MHD_start_daemon(flags, (uint16_t)o->port, NULL, NULL, on_request, db,
                               MHD_OPTION_SOCK_ADDR, ai->ai_addr,
                               MHD_OPTION_THREAD_POOL_SIZE, (unsigned)db->threads,
                               MHD_OPTION_NOTIFY_COMPLETED, on_completed, db,
                               MHD_OPTION_NOTIFY_CONNECTION, on_connection, db,
                               MHD_OPTION_URI_LOG_CALLBACK, on_uri, db,
                               MHD_OPTION_CONNECTION_TIMEOUT, timeout_s,
                               MHD_OPTION_CONNECTION_LIMIT, db->conn_limit,
                               MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)(32 * 1024),
                               MHD_OPTION_END);
    bool v6 = ai->ai_family == AF_INET6;
    int bind_errno = db->mhd ? 0 : why_no_bind(ai);
    freeaddrinfo(ai);
    if (!db->mhd) {
        char what[300];
        snprintf(what, sizeof what, v6 ? "cannot listen on [%s]:%d: %s" : "cannot listen on %s:%d: %s",
                 db->host, o->port, bind_errno ? strerror(bind_errno) : "the HTTP server did not start");
        set_err(err, FAKEDB_EIO, what);
        server_free(db);
        return NULL;
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(db->mhd, MHD_DAEMON_INFO_BIND_PORT);
    db->port = info ? info->port : o->port;
    snprintf(db->endpoint, sizeof db->endpoint, v6 ? "http://[%s]:%d" : "http://%s:%d", db->host, db->port);
    if (pthread_create(&db->ticker, NULL, ticker_main, db) != 0) {
        MHD_stop_daemon(db->mhd);
        set_err(err, FAKEDB_ENOMEM, "cannot start a thread");
        server_free(db);
        return NULL;
    }
    db->ticker_started = true;
    return db;
}

void fakedb_stop(fakedb *db)
{
    if (!db)
        return;
    pthread_mutex_lock(&db->wait_lock);
    __atomic_store_n(&db->stopping, true, __ATOMIC_SEQ_CST); /* on_completed reads it unlocked */
    fakedb__waiter *all = fakedb__waiters_take_due(db, true, NULL);
    pthread_cond_broadcast(&db->wait_cond);
    pthread_mutex_unlock(&db->wait_lock);
    fakedb__waiters_resume(all);
    pthread_join(db->ticker, NULL);
    db->ticker_started = false;
    /* The requests in progress (the long polls resumed above among them, answering what
     * there is) are answered before the daemon stops and closes their connections; a
     * bound in case a client has gone or keeps sending. */
    pthread_mutex_lock(&db->wait_lock);
    struct timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    until.tv_sec += STOP_ANSWERS_MAX_S;
    while (atomic_load(&db->busy) > 0 &&
           pthread_cond_timedwait(&db->wait_cond, &db->wait_lock, &until) == 0)
        ;
    pthread_mutex_unlock(&db->wait_lock);
    /* No new connections; those in flight finish. With internal threads the listening
     * socket may still be in a worker's epoll set until the daemon stops, so it is
     * closed only after MHD_stop_daemon (closing it first races their removal of it). */
    MHD_socket s = MHD_quiesce_daemon(db->mhd);
    MHD_stop_daemon(db->mhd);
    if (s != MHD_INVALID_SOCKET)
        close(s);
    db->mhd = NULL;
    server_free(db);
}

int fakedb_port(const fakedb *db)
{
    return db ? db->port : 0;
}

const char *fakedb_endpoint(const fakedb *db)
{
    return db ? db->endpoint : NULL;
}
