/* http.c: HTTP over libcurl, the one path every request of the library takes.
 *
 * - ddb__http_send: one blocking request (any method and URL, a cap on the answer, the
 *   header values asked for), on a connection the caller may keep between requests.
 *   The credential providers and the testing library's server clock send through it.
 * - ddb__http_post: the client's POSTs, on a pool of the same connections, one per
 *   request in flight and reused afterwards, so connections stay alive.
 * - ddb__http_async_*: the client's transfers side by side on one multi handle, driven
 *   by its scheduler thread.
 *
 * A blocking request runs its easy handle on a multi handle of its own and polls the
 * cancel token's eventfd beside curl's sockets, so a cancel aborts it within one poll
 * wakeup. Nothing here keeps global state but libcurl's global initialisation. */
#include "client.h"

#include "buf.h"

#include <curl/curl.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/eventfd.h>
#include <unistd.h>

/* Header lines a pooled POST carries (they are laid out on the stack). */
#define HTTP_MAX_POST_HEADER_LINES 16
/* The longest a blocking poll sleeps before asking curl again; curl shortens it to its
 * own next timeout, and the cancel eventfd wakes it at once. */
#define HTTP_POLL_MAX_MS 1000
/* The Date header a client answer keeps (an IMF-fixdate is 29 bytes). */
#define HTTP_DATE_MAX ((int)sizeof(((ddb__http_response *)0)->date))

/* ------------------------------------------------------------- one connection */

/* An easy handle on a multi handle of its own: the multi handle keeps the connection
 * alive between requests, and lets a request poll a cancel eventfd beside its sockets. */
struct ddb__http_conn {
    CURL *easy;
    CURLM *multi;
    struct ddb__http_conn *next;   /* a pool's idle list */
    char errbuf[CURL_ERROR_SIZE];
};
typedef struct ddb__http_conn slot;

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_rc;

static void curl_init(void)
{
    curl_init_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

static int curl_ready(ddb_error *err)
{
    pthread_once(&curl_once, curl_init);
    if (curl_init_rc != CURLE_OK)
        return ddb__fail(err, DDB_EIO, "libcurl could not be initialised: %s",
                         curl_easy_strerror(curl_init_rc));
    return 0;
}

static void slot_free(slot *s)
{
    if (!s)
        return;
    if (s->multi)
        curl_multi_cleanup(s->multi);
    if (s->easy)
        curl_easy_cleanup(s->easy);
    free(s);
}

static slot *slot_alloc(void)
{
    slot *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->easy = curl_easy_init();
    s->multi = curl_multi_init();
    if (!s->easy || !s->multi) {
        slot_free(s);
        return NULL;
    }
    return s;
}

ddb__http_conn *ddb__http_conn_new(ddb_error *err)
{
    if (curl_ready(err) != 0)
        return NULL;
    slot *s = slot_alloc();
    if (!s)
        ddb__fail(err, DDB_ENOMEM, "out of memory");
    return s;
}

void ddb__http_conn_free(ddb__http_conn *c)
{
    slot_free(c);
}

/* ------------------------------------------------------------------ answers */

/* Where the callbacks put an answer. */
typedef struct sink {
    dl_buf body;
    size_t max;                  /* the body's cap; 0: none */
    bool oom, too_big;           /* oom: a header's copy (the body's is body.oom) */
    /* a client answer's two headers, in fixed fields */
    char *request_id;            /* DDB_REQUEST_ID_MAX bytes, or NULL */
    char *date;                  /* HTTP_DATE_MAX bytes, or NULL */
    const char *too_long;        /* the header whose value did not fit its field */
    /* the headers a blocking request asked for, whole */
    const char *const *want;
    size_t n_want;
    char **got;                  /* n_want values (malloc'd), NULL when absent */
} sink;

static size_t on_body(char *data, size_t size, size_t nmemb, void *arg)
{
    sink *k = arg;
    size_t n = size * nmemb;
    if (k->max && n > k->max - k->body.len) {
        k->too_big = true;
        return 0;
    }
    dl__buf_put(&k->body, data, n);
    return k->body.oom ? 0 : n;
}

/* When the header line data[0..n) is header `name` (without its colon), its value
 * trimmed: *v and *vlen. */
static bool header_match(const char *data, size_t n, const char *name, const char **v,
                         size_t *vlen)
{
    size_t nl = strlen(name);
    if (n <= nl || strncasecmp(data, name, nl) != 0 || data[nl] != ':')
        return false;
    size_t i = nl + 1, end = n;
    while (i < end && (data[i] == ' ' || data[i] == '\t'))
        i++;
    while (end > i && (data[end - 1] == '\r' || data[end - 1] == '\n' || data[end - 1] == ' ' ||
                       data[end - 1] == '\t'))
        end--;
    *v = data + i;
    *vlen = end - i;
    return true;
}

/* Copies header `name`'s value into out (cap bytes) when the line is that header; a
 * value that does not fit is not cut but noted in k->too_long. */
static void header_fixed(sink *k, const char *data, size_t n, const char *name, char *out,
                         size_t cap)
{
    const char *v;
    size_t len;
    if (!out || !header_match(data, n, name, &v, &len))
        return;
    if (len >= cap) {
        k->too_long = name;
        return;
    }
    memcpy(out, v, len);
    out[len] = '\0';
}

static size_t on_header(char *data, size_t size, size_t nmemb, void *arg)
{
    sink *k = arg;
    size_t n = size * nmemb;
    header_fixed(k, data, n, "x-amzn-requestid", k->request_id, DDB_REQUEST_ID_MAX);
    header_fixed(k, data, n, "date", k->date, HTTP_DATE_MAX);
    for (size_t i = 0; i < k->n_want; i++) {
        const char *v;
        size_t len;
        if (!header_match(data, n, k->want[i], &v, &len))
            continue;
        char *copy = malloc(len + 1);
        if (!copy) {
            k->oom = true;
            return 0;
        }
        memcpy(copy, v, len);
        copy[len] = '\0';
        free(k->got[i]); /* a repeated header: the last one counts */
        k->got[i] = copy;
    }
    return n;
}

/* Whether a failed transfer may have delivered its request: false only when it failed
 * before any byte of the request was written -- the name did not resolve, the connection
 * or the TLS handshake failed, or a timeout or cancel came before the request went out
 * (curl counts no request bytes and no body bytes sent). Anything else (a reset, an early
 * EOF, a timeout while waiting for the answer) may have reached DynamoDB. */
static bool request_may_be_sent(CURL *e, CURLcode cc)
{
    switch (cc) {
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY:
    case CURLE_COULDNT_CONNECT:
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_CERTPROBLEM:
    case CURLE_SSL_CIPHER:
    case CURLE_SSL_CACERT_BADFILE:
    case CURLE_SSL_ISSUER_ERROR:
    case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
    case CURLE_SSL_ENGINE_NOTFOUND:
    case CURLE_SSL_ENGINE_SETFAILED:
    case CURLE_UNSUPPORTED_PROTOCOL:
    case CURLE_URL_MALFORMAT:
    case CURLE_OUT_OF_MEMORY:
        return false;
    default:
        break;
    }
    long header_bytes = 0;
    curl_off_t body_bytes = 0;
    if (curl_easy_getinfo(e, CURLINFO_REQUEST_SIZE, &header_bytes) != CURLE_OK ||
        curl_easy_getinfo(e, CURLINFO_SIZE_UPLOAD_T, &body_bytes) != CURLE_OK)
        return true;
    return header_bytes > 0 || body_bytes > 0 || cc != CURLE_OPERATION_TIMEDOUT;
}

static int code_for_curl(CURLcode cc)
{
    switch (cc) {
    case CURLE_OPERATION_TIMEDOUT:
        return DDB_ETIMEDOUT;
    case CURLE_OUT_OF_MEMORY:
        return DDB_ENOMEM;
    default:
        return DDB_ENETWORK;
    }
}

/* ------------------------------------------------------------ a request's body */

/* A POST body that libcurl sends once. libcurl silently sends a request again when a
 * reused connection closes before any answer; a DynamoDB write may then be applied twice
 * without anyone knowing that its first answer was lost, and the second answer (a failed
 * condition, say) is taken for the call's. Its pre-request callback runs before each
 * sending of the request on a connection: the second time, it aborts the transfer
 * (CURLE_ABORTED_BY_CALLBACK), a failure that the client sees and counts as a request
 * that was sent. The body stays in CURLOPT_POSTFIELDS, which curl sends with the
 * headers in one write. */
typedef struct resend_guard {
    int sends;   /* the request's sendings so far in this transfer */
} resend_guard;

static int on_prereq(void *arg, char *conn_primary_ip, char *conn_local_ip, int conn_primary_port,
                     int conn_local_port)
{
    (void)conn_primary_ip;
    (void)conn_local_ip;
    (void)conn_primary_port;
    (void)conn_local_port;
    resend_guard *b = arg;
    return ++b->sends > 1 ? CURL_PREREQFUNC_ABORT : CURL_PREREQFUNC_OK;
}

static void set_body(CURL *e, resend_guard *b, const char *body, size_t len)
{
    *b = (resend_guard){ 0 };
    curl_easy_setopt(e, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
    curl_easy_setopt(e, CURLOPT_PREREQFUNCTION, on_prereq);
    curl_easy_setopt(e, CURLOPT_PREREQDATA, b);
}

/* ---------------------------------------------------------- one blocking transfer */

/* Runs the transfer set up on s's easy handle to its end, or until cancel is set.
 * 0 when the transfer ended (an answer, or *cc says why not), DDB_ECANCELED, or
 * DDB_ENOMEM when curl's multi interface failed (*broken: the handle is suspect). */
static int slot_run(slot *s, ddb_cancel *cancel, CURLcode *cc, bool *broken)
{
    *cc = CURLE_OK;
    *broken = false;
    int fd = -1;
    if (cancel) {
        fd = ddb_cancel_fd(cancel);
        if (fd < 0)
            return DDB_EIO;
    }
    if (curl_multi_add_handle(s->multi, s->easy) != CURLM_OK) {
        *broken = true;
        return DDB_ENOMEM;
    }
    int rc = 0;
    for (;;) {
        int running = 0;
        if (curl_multi_perform(s->multi, &running) != CURLM_OK) {
            *broken = true;
            rc = DDB_ENOMEM;
            break;
        }
        if (!running) {
            int left;
            CURLMsg *m;
            while ((m = curl_multi_info_read(s->multi, &left)) != NULL)
                if (m->msg == CURLMSG_DONE)
                    *cc = m->data.result;
            break;
        }
        if (ddb_cancel_is_set(cancel)) {
            rc = DDB_ECANCELED;
            break;
        }
        struct curl_waitfd wfd = { .fd = fd, .events = CURL_WAIT_POLLIN };
        if (curl_multi_poll(s->multi, fd >= 0 ? &wfd : NULL, fd >= 0 ? 1 : 0, HTTP_POLL_MAX_MS,
                            NULL) != CURLM_OK) {
            *broken = true;
            rc = DDB_ENOMEM;
            break;
        }
    }
    /* Removing a handle mid-transfer closes its connection; the handle stays good. */
    curl_multi_remove_handle(s->multi, s->easy);
    return rc;
}

/* The error of a transfer that ended without an answer the caller can have. */
static int transfer_failed(const char *errbuf, int rc, CURLcode cc, const sink *k, ddb_error *err)
{
    if (rc == DDB_ECANCELED)
        return ddb__fail(err, rc, "the request was cancelled in flight");
    if (rc == DDB_EIO)
        return ddb__fail(err, rc, "no eventfd for the cancel token: %s", strerror(errno));
    if (rc != 0)
        return ddb__fail(err, rc, "libcurl's multi interface failed");
    if (k->oom || k->body.oom)
        return ddb__fail(err, DDB_ENOMEM, "out of memory reading the answer");
    if (k->too_big)
        return ddb__fail(err, DDB_EPROTOCOL, "the answer is larger than the %zu bytes allowed",
                         k->max);
    if (k->too_long)
        return ddb__fail(err, DDB_EPROTOCOL,
                         "the answer's %s header is longer than the client keeps", k->too_long);
    if (cc == CURLE_ABORTED_BY_CALLBACK) /* on_prereq: the only callback that aborts */
        return ddb__fail(err, DDB_ENETWORK, "the connection closed after the request was "
                         "sent, without an answer");
    if (cc != CURLE_OK) {
        int code = code_for_curl(cc);
        return ddb__fail(err, code, "%s", errbuf[0] ? errbuf : curl_easy_strerror(cc));
    }
    return 0;
}

/* Whether a transfer that ended (run: slot_run's result, 0 when curl finished it) may
 * have delivered its request. An answer means it did; a cancel or a failure is judged by
 * what curl sent before it. */
static bool transfer_sent(CURL *e, int run, CURLcode cc)
{
    if (run == DDB_ECANCELED)
        return request_may_be_sent(e, CURLE_OPERATION_TIMEDOUT);
    if (run != 0)
        return true; /* the multi interface failed mid-transfer: no telling */
    return cc == CURLE_OK || request_may_be_sent(e, cc);
}

/* ------------------------------------------------------------- ddb__http_send */

void ddb__http_answer_cleanup(ddb__http_answer *a)
{
    if (!a)
        return;
    free(a->body);
    if (a->header_values)
        for (size_t i = 0; i < a->n_header_values; i++)
            free(a->header_values[i]);
    free(a->header_values);
    memset(a, 0, sizeof *a);
}

int ddb__http_send(ddb__http_conn *conn, const ddb__http_request *r, ddb_cancel *cancel,
                   ddb__http_answer *out, ddb_error *err)
{
    memset(out, 0, sizeof *out);
    if (!r || !r->url)
        return ddb__fail(err, DDB_EINVAL, "an HTTP request needs a URL");
    if (ddb_cancel_is_set(cancel))
        return ddb__fail(err, DDB_ECANCELED, "the request was cancelled before it was sent");
    slot *own = NULL;
    if (!conn) {
        own = conn = ddb__http_conn_new(err);
        if (!conn)
            return err ? err->code : DDB_ENOMEM;
    }
    sink k = { .max = r->max_answer ? r->max_answer : DDB__HTTP_MAX_ANSWER,
               .want = r->want_headers, .n_want = r->n_want_headers };
    struct curl_slist *hl = NULL, *resolve = NULL;
    int rc = 0;
    if (k.n_want && !(k.got = calloc(k.n_want, sizeof *k.got)))
        rc = ddb__fail(err, DDB_ENOMEM, "out of memory");
    for (size_t i = 0; rc == 0 && i < r->n_headers; i++) {
        struct curl_slist *nl = curl_slist_append(hl, r->headers[i]);
        if (!nl)
            rc = ddb__fail(err, DDB_ENOMEM, "out of memory");
        else
            hl = nl;
    }
    if (rc == 0 && r->resolve && !(resolve = curl_slist_append(NULL, r->resolve)))
        rc = ddb__fail(err, DDB_ENOMEM, "out of memory");
    if (rc == 0) {
        CURL *e = conn->easy;
        const char *method = r->method ? r->method : r->body ? "POST" : "GET";
        conn->errbuf[0] = '\0';
        curl_easy_reset(e);
        curl_easy_setopt(e, CURLOPT_URL, r->url);
        curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(e, CURLOPT_TCP_NODELAY, 1L);
        curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L);
        curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
        curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS,
                         (long)(r->connect_timeout_ms > 0 ? r->connect_timeout_ms
                                                          : DDB__HTTP_CONNECT_TIMEOUT_MS));
        curl_easy_setopt(e, CURLOPT_TIMEOUT_MS,
                         (long)(r->timeout_ms > 0 ? r->timeout_ms : DDB__HTTP_REQUEST_TIMEOUT_MS));
        curl_easy_setopt(e, CURLOPT_ERRORBUFFER, conn->errbuf);
        curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
        curl_easy_setopt(e, CURLOPT_WRITEDATA, &k);
        curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
        curl_easy_setopt(e, CURLOPT_HEADERDATA, &k);
        curl_easy_setopt(e, CURLOPT_HTTPHEADER, hl);
        if (resolve)
            curl_easy_setopt(e, CURLOPT_RESOLVE, resolve);
        if (r->no_proxy)
            curl_easy_setopt(e, CURLOPT_NOPROXY, "*");
        if (r->ca_bundle)
            curl_easy_setopt(e, CURLOPT_CAINFO, r->ca_bundle);
        if (strcmp(method, "GET") == 0) {
            curl_easy_setopt(e, CURLOPT_HTTPGET, 1L);
        } else {
            curl_easy_setopt(e, CURLOPT_POSTFIELDS, r->body ? r->body : "");
            curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)(r->body ? r->body_len : 0));
            if (strcmp(method, "POST") != 0)
                curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, method);
        }
        CURLcode cc;
        bool broken;
        int run = slot_run(conn, cancel, &cc, &broken);
        rc = transfer_failed(conn->errbuf, run, cc, &k, err);
        if (rc == 0)
            curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &out->status);
        /* Nothing the handle keeps may point at this call's lists or sink. */
        curl_easy_setopt(e, CURLOPT_HTTPHEADER, NULL);
        curl_easy_setopt(e, CURLOPT_RESOLVE, NULL);
        curl_easy_setopt(e, CURLOPT_WRITEDATA, NULL);
        curl_easy_setopt(e, CURLOPT_HEADERDATA, NULL);
        if (broken && !own) {
            /* Start the caller's connection afresh rather than trust it again. */
            slot *fresh = slot_alloc();
            if (fresh) {
                curl_multi_cleanup(conn->multi);
                curl_easy_cleanup(conn->easy);
                conn->multi = fresh->multi;
                conn->easy = fresh->easy;
                free(fresh);
            }
        }
    }
    curl_slist_free_all(hl);
    curl_slist_free_all(resolve);
    slot_free(own);
    if (rc == 0 && !(out->body = dl__buf_take(&k.body, &out->len)))
        rc = ddb__fail(err, DDB_ENOMEM, "out of memory");
    if (rc != 0) {
        out->status = 0;
        dl__buf_cleanup(&k.body);
        for (size_t i = 0; k.got && i < k.n_want; i++)
            free(k.got[i]);
        free(k.got);
        return rc;
    }
    out->header_values = k.got;
    out->n_header_values = k.n_want;
    return 0;
}

/* ------------------------------------------------------------ the client's pool */

struct ddb__http {
    char *url;
    char *ca_bundle;     /* CURLOPT_CAINFO, or NULL for the system's */
    int64_t connect_timeout_ms, request_timeout_ms;
    size_t max_answer;   /* an answer's cap in bytes */
    int max_slots;
    pthread_mutex_t mu;
    slot *idle;          /* handles ready for reuse, most recently used first */
    int n_slots;         /* handles created */
    int waiters;         /* requests waiting for a handle */
    int free_fd;         /* an eventfd (semaphore): one count per handle given back
                          * while someone waited */
    atomic_long connects;
};

ddb__http *ddb__http_new(const ddb__http_options *o, ddb_error *err)
{
    if (curl_ready(err) != 0)
        return NULL;
    ddb__http *h = calloc(1, sizeof *h);
    if (!h || !(h->url = strdup(o->url)) || (o->ca_bundle && !(h->ca_bundle = strdup(o->ca_bundle)))) {
        if (h) {
            free(h->url);
            free(h);
        }
        ddb__fail(err, DDB_ENOMEM, "out of memory");
        return NULL;
    }
    h->free_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK | EFD_SEMAPHORE);
    if (h->free_fd < 0) {
        ddb__fail(err, DDB_EIO, "no eventfd for the connection pool: %s", strerror(errno));
        free(h->ca_bundle);
        free(h->url);
        free(h);
        return NULL;
    }
    h->connect_timeout_ms = o->connect_timeout_ms;
    h->request_timeout_ms = o->request_timeout_ms;
    h->max_answer = o->max_answer ? o->max_answer : DDB__CLIENT_MAX_ANSWER;
    h->max_slots = o->max_connections > 0 ? o->max_connections : DDB__DEFAULT_MAX_CONNECTIONS;
    pthread_mutex_init(&h->mu, NULL);
    atomic_init(&h->connects, 0);
    return h;
}

void ddb__http_free(ddb__http *h)
{
    if (!h)
        return;
    slot *s = h->idle;
    while (s) {
        slot *next = s->next;
        slot_free(s);
        s = next;
    }
    pthread_mutex_destroy(&h->mu);
    close(h->free_fd);
    free(h->ca_bundle);
    free(h->url);
    free(h);
}

long ddb__http_connections_opened(ddb__http *h)
{
    return h ? atomic_load(&h->connects) : 0;
}

void ddb__http_response_cleanup(ddb__http_response *r)
{
    if (!r)
        return;
    free(r->body);
    r->body = NULL;
    r->len = 0;
}

/* What every handle of the client's requests is set up with, pooled or asynchronous. */
static void easy_setup(ddb__http *h, CURL *e, char *errbuf)
{
    curl_easy_setopt(e, CURLOPT_URL, h->url);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_POST, 1L);
    curl_easy_setopt(e, CURLOPT_TCP_NODELAY, 1L);
    curl_easy_setopt(e, CURLOPT_TCP_KEEPALIVE, 1L);
    curl_easy_setopt(e, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, (long)h->connect_timeout_ms);
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, (long)h->request_timeout_ms);
    curl_easy_setopt(e, CURLOPT_ERRORBUFFER, errbuf);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
    if (h->ca_bundle)
        curl_easy_setopt(e, CURLOPT_CAINFO, h->ca_bundle);
}

static slot *slot_new(ddb__http *h)
{
    slot *s = slot_alloc();
    if (!s)
        return NULL;
    easy_setup(h, s->easy, s->errbuf);
    /* One connection per handle: the pool is the connection limit. */
    curl_easy_setopt(s->easy, CURLOPT_MAXCONNECTS, 1L);
    return s;
}

/* Takes an idle handle, or makes one, or waits for one while at the limit: on the
 * pool's eventfd and the cancel token's together, so neither is noticed late. */
static slot *slot_take(ddb__http *h, ddb_cancel *cancel, int *rc)
{
    int cfd = -1;
    pthread_mutex_lock(&h->mu);
    for (;;) {
        if (h->idle) {
            slot *s = h->idle;
            h->idle = s->next;
            pthread_mutex_unlock(&h->mu);
            s->next = NULL;
            return s;
        }
        if (h->n_slots < h->max_slots) {
            h->n_slots++;
            pthread_mutex_unlock(&h->mu);
            slot *s = slot_new(h);
            if (!s) {
                pthread_mutex_lock(&h->mu);
                h->n_slots--;
                pthread_mutex_unlock(&h->mu);
                *rc = DDB_ENOMEM;
            }
            return s;
        }
        if (ddb_cancel_is_set(cancel)) {
            pthread_mutex_unlock(&h->mu);
            *rc = DDB_ECANCELED;
            return NULL;
        }
        if (cancel && cfd < 0 && (cfd = ddb_cancel_fd(cancel)) < 0) {
            pthread_mutex_unlock(&h->mu);
            *rc = DDB_EIO;
            return NULL;
        }
        /* A handle given back from here on writes the eventfd, since waiters > 0. */
        h->waiters++;
        pthread_mutex_unlock(&h->mu);
        struct pollfd p[2] = { { .fd = h->free_fd, .events = POLLIN },
                               { .fd = cfd, .events = POLLIN } };
        int n = poll(p, cfd >= 0 ? 2 : 1, -1);
        uint64_t one;
        /* Take one count at most, and look again; a count another waiter took first
         * leaves this one to wait again. */
        if (n > 0 && (p[0].revents & POLLIN) && read(h->free_fd, &one, sizeof one) < 0 &&
            errno != EAGAIN)
            n = -1;
        pthread_mutex_lock(&h->mu);
        h->waiters--;
        if (n < 0 && errno != EINTR) {
            pthread_mutex_unlock(&h->mu);
            *rc = DDB_EIO;
            return NULL;
        }
    }
}

static void slot_give(ddb__http *h, slot *s, bool broken)
{
    if (broken) {
        slot_free(s);
        pthread_mutex_lock(&h->mu);
        h->n_slots--;
    } else {
        pthread_mutex_lock(&h->mu);
        s->next = h->idle;
        h->idle = s;
    }
    if (h->waiters > 0) {
        uint64_t one = 1;
        ssize_t w = write(h->free_fd, &one, sizeof one);
        (void)w; /* a full counter (2^64 - 2) cannot happen: one count per handle given */
    }
    pthread_mutex_unlock(&h->mu);
}

int ddb__http_post(ddb__http *h, const char *const *headers, size_t n_headers,
                   const char *body, size_t len, ddb_cancel *cancel,
                   ddb__http_response *out, ddb_error *err)
{
    memset(out, 0, sizeof *out);
    if (n_headers > HTTP_MAX_POST_HEADER_LINES)
        return ddb__fail(err, DDB_EINVAL, "%zu header lines, more than the %d a request carries",
                         n_headers, HTTP_MAX_POST_HEADER_LINES);
    if (ddb_cancel_is_set(cancel))
        return ddb__fail(err, DDB_ECANCELED, "the request was cancelled before it was sent");

    int rc = 0;
    slot *s = slot_take(h, cancel, &rc);
    if (!s) {
        if (rc == DDB_ECANCELED)
            return ddb__fail(err, rc, "the request was cancelled while waiting for a connection");
        if (rc == DDB_EIO)
            return ddb__fail(err, rc, "could not wait for a connection: %s", strerror(errno));
        return ddb__fail(err, DDB_ENOMEM, "out of memory");
    }

    /* The header list lives on the stack: curl reads it during the transfer only. */
    struct curl_slist nodes[HTTP_MAX_POST_HEADER_LINES];
    for (size_t i = 0; i < n_headers; i++) {
        nodes[i].data = (char *)(uintptr_t)headers[i];
        nodes[i].next = i + 1 < n_headers ? &nodes[i + 1] : NULL;
    }

    sink k = { .request_id = out->request_id, .date = out->date, .max = h->max_answer };
    CURL *e = s->easy;
    s->errbuf[0] = '\0';
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, n_headers ? nodes : NULL);
    resend_guard guard;
    set_body(e, &guard, body, len);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, &k);
    curl_easy_setopt(e, CURLOPT_HEADERDATA, &k);

    CURLcode cc;
    bool broken;
    int run = slot_run(s, cancel, &cc, &broken);
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, NULL);

    long connects = 0;
    if (curl_easy_getinfo(e, CURLINFO_NUM_CONNECTS, &connects) == CURLE_OK && connects > 0)
        atomic_fetch_add(&h->connects, connects);

    rc = transfer_failed(s->errbuf, run, cc, &k, err);
    bool sent = transfer_sent(e, run, cc);
    if (rc == 0)
        curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &out->status);
    slot_give(h, s, broken);
    if (rc == 0 && !(out->body = dl__buf_take(&k.body, &out->len)))
        rc = ddb__fail(err, DDB_ENOMEM, "out of memory");
    if (rc != 0) {
        dl__buf_cleanup(&k.body);
        memset(out, 0, sizeof *out);
        out->sent = sent;
        return rc;
    }
    out->sent = true;
    return 0;
}

/* ------------------------------------------------------- asynchronous transfers */

/* Transfers that run side by side on one multi handle, driven by the client's
 * scheduler thread (ddb__http_async_io): the requests of leases, whose heartbeat must
 * not wait for one slow request before it sends the next. Handles are kept for reuse;
 * the multi handle keeps the connections alive between transfers. */
struct ddb__http_xfer {
    ddb__http_async *owner;
    CURL *easy;
    resend_guard guard;
    struct curl_slist *headers;
    sink k;
    char request_id[DDB_REQUEST_ID_MAX];
    char date[HTTP_DATE_MAX];
    char errbuf[CURL_ERROR_SIZE];
    ddb__http_done_fn done;
    void *arg;
    bool running;                 /* added to the multi */
    struct ddb__http_xfer *next;  /* the idle list, or the waiting queue */
};

struct ddb__http_async {
    ddb__http *http;
    CURLM *multi;
    ddb__http_xfer *idle;         /* finished transfers, their handles kept */
    ddb__http_xfer *queue, **queue_tail; /* started beyond the limit, waiting */
    int running;                  /* transfers on the multi */
    int limit;
    atomic_int busy;              /* running + queued, read by any thread */
};

ddb__http_async *ddb__http_async_new(ddb__http *h, ddb_error *err)
{
    ddb__http_async *a = calloc(1, sizeof *a);
    if (!a || !(a->multi = curl_multi_init())) {
        free(a);
        ddb__fail(err, DDB_ENOMEM, "out of memory");
        return NULL;
    }
    a->http = h;
    a->limit = h->max_slots;
    a->queue_tail = &a->queue;
    atomic_init(&a->busy, 0);
    curl_multi_setopt(a->multi, CURLMOPT_MAX_HOST_CONNECTIONS, (long)h->max_slots);
    curl_multi_setopt(a->multi, CURLMOPT_MAXCONNECTS, (long)h->max_slots);
    return a;
}

static void xfer_destroy(ddb__http_xfer *x)
{
    if (!x)
        return;
    if (x->easy)
        curl_easy_cleanup(x->easy);
    curl_slist_free_all(x->headers);
    dl__buf_cleanup(&x->k.body);
    free(x);
}

void ddb__http_async_free(ddb__http_async *a)
{
    if (!a)
        return;
    /* The owner has finished or aborted every transfer by now. */
    ddb__http_xfer *x = a->idle;
    while (x) {
        ddb__http_xfer *next = x->next;
        xfer_destroy(x);
        x = next;
    }
    curl_multi_cleanup(a->multi);
    free(a);
}

static ddb__http_xfer *xfer_take(ddb__http_async *a)
{
    ddb__http_xfer *x = a->idle;
    if (x) {
        a->idle = x->next;
        x->next = NULL;
        return x;
    }
    x = calloc(1, sizeof *x);
    if (!x)
        return NULL;
    x->owner = a;
    x->easy = curl_easy_init();
    if (!x->easy) {
        free(x);
        return NULL;
    }
    CURL *e = x->easy;
    easy_setup(a->http, e, x->errbuf);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, &x->k);
    curl_easy_setopt(e, CURLOPT_HEADERDATA, &x->k);
    curl_easy_setopt(e, CURLOPT_PRIVATE, x);
    return x;
}

static void xfer_give(ddb__http_async *a, ddb__http_xfer *x)
{
    curl_easy_setopt(x->easy, CURLOPT_HTTPHEADER, NULL);
    curl_slist_free_all(x->headers);
    x->headers = NULL;
    dl__buf_cleanup(&x->k.body);
    memset(&x->k, 0, sizeof x->k);
    x->done = NULL;
    x->arg = NULL;
    x->next = a->idle;
    a->idle = x;
}

/* Puts a transfer on the multi. 0, or DDB_ENOMEM (the transfer is then not running). */
static int xfer_run(ddb__http_async *a, ddb__http_xfer *x)
{
    if (curl_multi_add_handle(a->multi, x->easy) != CURLM_OK)
        return DDB_ENOMEM;
    x->running = true;
    a->running++;
    return 0;
}

int ddb__http_async_start(ddb__http_async *a, const char *const *headers, size_t n_headers,
                          const char *body, size_t len, ddb__http_done_fn done, void *arg,
                          ddb__http_xfer **out, ddb_error *err)
{
    *out = NULL;
    ddb__http_xfer *x = xfer_take(a);
    if (!x)
        return ddb__fail(err, DDB_ENOMEM, "out of memory");
    for (size_t i = 0; i < n_headers; i++) {
        struct curl_slist *l = curl_slist_append(x->headers, headers[i]);
        if (!l) {
            xfer_give(a, x);
            return ddb__fail(err, DDB_ENOMEM, "out of memory");
        }
        x->headers = l;
    }
    x->k.request_id = x->request_id;
    x->k.date = x->date;
    x->k.max = a->http->max_answer;
    x->request_id[0] = '\0';
    x->date[0] = '\0';
    x->errbuf[0] = '\0';
    x->done = done;
    x->arg = arg;
    curl_easy_setopt(x->easy, CURLOPT_HTTPHEADER, x->headers);
    set_body(x->easy, &x->guard, body, len);
    if (a->running < a->limit) {
        if (xfer_run(a, x) != 0) {
            xfer_give(a, x);
            return ddb__fail(err, DDB_ENOMEM, "could not start the request");
        }
    } else {
        *a->queue_tail = x;
        a->queue_tail = &x->next;
    }
    atomic_fetch_add(&a->busy, 1);
    *out = x;
    return 0;
}

/* Delivers a finished transfer: its answer, or the failure. */
static void xfer_finish(ddb__http_async *a, ddb__http_xfer *x, CURLcode cc)
{
    ddb__http_response resp = { 0 };
    ddb_error e;
    ddb_error_clear(&e);
    int rc = 0;
    long connects = 0;
    if (curl_easy_getinfo(x->easy, CURLINFO_NUM_CONNECTS, &connects) == CURLE_OK && connects > 0)
        atomic_fetch_add(&a->http->connects, connects);
    rc = transfer_failed(x->errbuf, 0, cc, &x->k, &e);
    resp.sent = transfer_sent(x->easy, 0, cc);
    if (rc == 0) {
        curl_easy_getinfo(x->easy, CURLINFO_RESPONSE_CODE, &resp.status);
        resp.body = dl__buf_take(&x->k.body, &resp.len);
        memcpy(resp.request_id, x->request_id, sizeof resp.request_id);
        memcpy(resp.date, x->date, sizeof resp.date);
        if (!resp.body)
            rc = ddb__fail(&e, DDB_ENOMEM, "out of memory");
    }
    ddb__http_done_fn done = x->done;
    void *arg = x->arg;
    xfer_give(a, x);
    atomic_fetch_sub(&a->busy, 1);
    done(arg, rc, &resp, &e);
    ddb__http_response_cleanup(&resp);
}

static void start_queued(ddb__http_async *a)
{
    while (a->queue && a->running < a->limit) {
        ddb__http_xfer *x = a->queue;
        a->queue = x->next;
        if (!a->queue)
            a->queue_tail = &a->queue;
        x->next = NULL;
        if (xfer_run(a, x) != 0) {
            ddb_error e;
            ddb_error_clear(&e);
            ddb__fail(&e, DDB_ENOMEM, "could not start the request");
            ddb__http_done_fn done = x->done;
            void *arg = x->arg;
            xfer_give(a, x);
            atomic_fetch_sub(&a->busy, 1);
            done(arg, DDB_ENOMEM, &(ddb__http_response){ 0 }, &e);
        }
    }
}

void ddb__http_async_abort(ddb__http_async *a, ddb__http_xfer *x)
{
    ddb__http_response resp = { 0 };
    if (x->running) {
        resp.sent = request_may_be_sent(x->easy, CURLE_OPERATION_TIMEDOUT);
        /* Removing a handle mid-transfer closes its connection; the handle stays good. */
        curl_multi_remove_handle(a->multi, x->easy);
        x->running = false;
        a->running--;
    } else {
        for (ddb__http_xfer **p = &a->queue; *p; p = &(*p)->next) {
            if (*p == x) {
                *p = x->next;
                if (!a->queue)
                    a->queue_tail = &a->queue;
                else if (a->queue_tail == &x->next)
                    a->queue_tail = p;
                break;
            }
        }
        x->next = NULL;
    }
    ddb_error e;
    ddb_error_clear(&e);
    ddb__fail(&e, DDB_ECANCELED, "the request was cancelled in flight");
    ddb__http_done_fn done = x->done;
    void *arg = x->arg;
    xfer_give(a, x);
    atomic_fetch_sub(&a->busy, 1);
    done(arg, DDB_ECANCELED, &resp, &e);
    start_queued(a);
}

static void async_wait(void *arg, int wake_fd, int64_t timeout_ms)
{
    ddb__http_async *a = arg;
    struct curl_waitfd wfd = { .fd = wake_fd, .events = CURL_WAIT_POLLIN };
    int t = timeout_ms < 0 || timeout_ms > INT32_MAX ? INT32_MAX : (int)timeout_ms;
    if (a->running == 0) {
        /* Nothing on the multi: a plain poll (curl_multi_poll caps its own timeout). */
        struct pollfd p = { .fd = wake_fd, .events = POLLIN };
        poll(&p, 1, timeout_ms < 0 ? -1 : t);
        return;
    }
    curl_multi_poll(a->multi, &wfd, 1, t, NULL);
}

static void async_run(void *arg)
{
    ddb__http_async *a = arg;
    if (a->running == 0)
        return;
    int still = 0;
    curl_multi_perform(a->multi, &still);
    CURLMsg *m;
    int left;
    while ((m = curl_multi_info_read(a->multi, &left)) != NULL) {
        if (m->msg != CURLMSG_DONE)
            continue;
        ddb__http_xfer *x = NULL;
        curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&x);
        CURLcode cc = m->data.result;
        curl_multi_remove_handle(a->multi, m->easy_handle);
        x->running = false;
        a->running--;
        xfer_finish(a, x, cc);
    }
    start_queued(a);
}

static int async_busy(void *arg)
{
    ddb__http_async *a = arg;
    return atomic_load(&a->busy);
}

const ddb__sched_io ddb__http_async_io = {
    .wait = async_wait,
    .run = async_run,
    .busy = async_busy,
};
