/* http.c: HTTP over libcurl, the one transfer engine every request of the library takes.
 *
 * A transfer (ddb__http_xfer: an easy handle and what its callbacks fill) runs on a
 * multi handle, and ends in xfer_end, which reads its answer or its failure the same way
 * for every caller. Two ways to drive it, as libcurl's easy interface is its multi
 * interface plus a wait:
 * - with a wait (xfer_wait): on a multi handle of its own, polled on the caller's thread
 *   beside the cancel token's eventfd, so a cancel aborts it within one poll wakeup.
 *   ddb__http_send (any method and URL, a cap on the answer, the header values asked
 *   for, no proxy, short timeouts, a CA bundle: options of the one request) sends one on
 *   a connection the caller may keep (credential providers, the testing library's server
 *   clock); ddb__http_post sends the client's blocking POSTs on a pool of them, one per
 *   request in flight and reused afterwards, so connections stay alive;
 * - on the client's shared multi handle (ddb__http_async_*), driven by its scheduler
 *   thread, transfers side by side.
 * Nothing here keeps global state but libcurl's global initialisation. */
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

/* Header lines a blocking POST carries (borrowed from the caller, not copied). */
#define HTTP_MAX_POST_HEADER_LINES 16
/* The longest a blocking poll sleeps before asking curl again; curl shortens it to its
 * own next timeout, and the cancel eventfd wakes it at once. */
#define HTTP_POLL_MAX_MS 1000
/* The Date header a client answer keeps (an IMF-fixdate is 29 bytes). */
#define HTTP_DATE_MAX ((int)sizeof(((ddb__http_response *)0)->date))

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

/* ------------------------------------------------------------- the transfer */

/* One transfer: an easy handle, reused from request to request (libcurl keeps its
 * connection alive), and what its callbacks fill. */
struct ddb__http_xfer {
    CURL *easy;
    CURLM *multi;                 /* xfer_wait's multi handle of its own, or NULL for a
                                   * transfer on the client's shared one */
    sink k;
    resend_guard guard;
    struct curl_slist *headers;   /* the header lines, copied (freed by xfer_reset) */
    struct curl_slist nodes[HTTP_MAX_POST_HEADER_LINES]; /* or borrowed, for a wait */
    char request_id[DDB_REQUEST_ID_MAX];
    char date[HTTP_DATE_MAX];
    char errbuf[CURL_ERROR_SIZE];
    /* on the shared multi handle */
    ddb__http_done_fn done;
    void *arg;
    bool running;                 /* added to the multi */
    struct ddb__http_xfer *next;  /* an idle list, or the waiting queue */
};
typedef struct ddb__http_xfer xfer;

/* Points the handle's callbacks at x's sink and error buffer: once when x is made, and
 * again after any curl_easy_reset. */
static void xfer_bind(xfer *x)
{
    CURL *e = x->easy;
    curl_easy_setopt(e, CURLOPT_ERRORBUFFER, x->errbuf);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, &x->k);
    curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(e, CURLOPT_HEADERDATA, &x->k);
    curl_easy_setopt(e, CURLOPT_PRIVATE, x);
}

static void xfer_destroy(xfer *x)
{
    if (!x)
        return;
    if (x->multi)
        curl_multi_cleanup(x->multi);
    if (x->easy)
        curl_easy_cleanup(x->easy);
    curl_slist_free_all(x->headers);
    dl__buf_cleanup(&x->k.body);
    free(x);
}

/* A transfer; own_multi: with the multi handle its wait drives. */
static xfer *xfer_new(bool own_multi)
{
    xfer *x = calloc(1, sizeof *x);
    if (!x)
        return NULL;
    x->easy = curl_easy_init();
    if (own_multi)
        x->multi = curl_multi_init();
    if (!x->easy || (own_multi && !x->multi)) {
        xfer_destroy(x);
        return NULL;
    }
    xfer_bind(x);
    return x;
}

/* Readies x for a request: an empty sink with the body's cap (client: keep the request
 * id and the Date). */
static void xfer_arm(xfer *x, size_t max, bool client)
{
    dl__buf_cleanup(&x->k.body);
    memset(&x->k, 0, sizeof x->k);
    x->k.max = max;
    if (client) {
        x->k.request_id = x->request_id;
        x->k.date = x->date;
    }
    x->request_id[0] = '\0';
    x->date[0] = '\0';
    x->errbuf[0] = '\0';
}

/* The request's header lines: copied (they may go before the transfer ends), or
 * borrowed (n <= HTTP_MAX_POST_HEADER_LINES; they outlive the wait). 0 or DDB_ENOMEM. */
static int xfer_lines(xfer *x, const char *const *lines, size_t n, bool copy)
{
    struct curl_slist *list = NULL;
    if (copy) {
        for (size_t i = 0; i < n; i++) {
            struct curl_slist *l = curl_slist_append(x->headers, lines[i]);
            if (!l)
                return DDB_ENOMEM;
            x->headers = l;
        }
        list = x->headers;
    } else if (n > 0) {
        for (size_t i = 0; i < n; i++) {
            x->nodes[i].data = (char *)(uintptr_t)lines[i];
            x->nodes[i].next = i + 1 < n ? &x->nodes[i + 1] : NULL;
        }
        list = x->nodes;
    }
    curl_easy_setopt(x->easy, CURLOPT_HTTPHEADER, list);
    return 0;
}

/* After a request: nothing the handle keeps points at its lines or its answer. */
static void xfer_reset(xfer *x)
{
    curl_easy_setopt(x->easy, CURLOPT_HTTPHEADER, NULL);
    curl_slist_free_all(x->headers);
    x->headers = NULL;
    dl__buf_cleanup(&x->k.body);
    memset(&x->k, 0, sizeof x->k);
    x->done = NULL;
    x->arg = NULL;
}

/* The wait: runs x on its own multi handle to its end, or until cancel is set.
 * 0 when the transfer ended (an answer, or *cc says why not), DDB_ECANCELED, DDB_EIO (no
 * eventfd for the token), or DDB_ENOMEM when curl's multi interface failed (*broken: the
 * handles are suspect). */
static int xfer_wait(xfer *x, ddb_cancel *cancel, CURLcode *cc, bool *broken)
{
    *cc = CURLE_OK;
    *broken = false;
    int fd = -1;
    if (cancel) {
        fd = ddb_cancel_fd(cancel);
        if (fd < 0)
            return DDB_EIO;
    }
    if (curl_multi_add_handle(x->multi, x->easy) != CURLM_OK) {
        *broken = true;
        return DDB_ENOMEM;
    }
    int rc = 0;
    for (;;) {
        int running = 0;
        if (curl_multi_perform(x->multi, &running) != CURLM_OK) {
            *broken = true;
            rc = DDB_ENOMEM;
            break;
        }
        if (!running) {
            int left;
            CURLMsg *m;
            while ((m = curl_multi_info_read(x->multi, &left)) != NULL)
                if (m->msg == CURLMSG_DONE)
                    *cc = m->data.result;
            break;
        }
        if (ddb_cancel_is_set(cancel)) {
            rc = DDB_ECANCELED;
            break;
        }
        struct curl_waitfd wfd = { .fd = fd, .events = CURL_WAIT_POLLIN };
        if (curl_multi_poll(x->multi, fd >= 0 ? &wfd : NULL, fd >= 0 ? 1 : 0, HTTP_POLL_MAX_MS,
                            NULL) != CURLM_OK) {
            *broken = true;
            rc = DDB_ENOMEM;
            break;
        }
    }
    /* Removing a handle mid-transfer closes its connection; the handle stays good. */
    curl_multi_remove_handle(x->multi, x->easy);
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

/* Whether a transfer that ended (run: xfer_wait's result, 0 when curl finished it) may
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


/* The end of a transfer, however it was driven (run: the wait's result, 0 when curl
 * finished it): its answer in out (the body taken from the sink), or its failure in err
 * with out->sent. Counts the connections it opened into *connects (may be NULL). */
static int xfer_end(xfer *x, int run, CURLcode cc, atomic_long *connects,
                    ddb__http_response *out, ddb_error *err)
{
    memset(out, 0, sizeof *out);
    long opened = 0;
    if (connects && curl_easy_getinfo(x->easy, CURLINFO_NUM_CONNECTS, &opened) == CURLE_OK &&
        opened > 0)
        atomic_fetch_add(connects, opened);
    int rc = transfer_failed(x->errbuf, run, cc, &x->k, err);
    bool sent = transfer_sent(x->easy, run, cc);
    if (rc == 0) {
        curl_easy_getinfo(x->easy, CURLINFO_RESPONSE_CODE, &out->status);
        if (!(out->body = dl__buf_take(&x->k.body, &out->len)))
            rc = ddb__fail(err, DDB_ENOMEM, "out of memory");
    }
    if (rc != 0) {
        dl__buf_cleanup(&x->k.body);
        memset(out, 0, sizeof *out);
        out->sent = sent;
        return rc;
    }
    memcpy(out->request_id, x->request_id, sizeof out->request_id);
    memcpy(out->date, x->date, sizeof out->date);
    out->sent = true;
    return 0;
}

/* ------------------------------------------------------------- ddb__http_send */

/* A connection kept between requests: a transfer with its own multi handle. */
struct ddb__http_conn {
    xfer *x;
};

ddb__http_conn *ddb__http_conn_new(ddb_error *err)
{
    if (curl_ready(err) != 0)
        return NULL;
    ddb__http_conn *c = calloc(1, sizeof *c);
    if (!c || !(c->x = xfer_new(true))) {
        free(c);
        ddb__fail(err, DDB_ENOMEM, "out of memory");
        return NULL;
    }
    return c;
}

void ddb__http_conn_free(ddb__http_conn *c)
{
    if (!c)
        return;
    xfer_destroy(c->x);
    free(c);
}

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

/* The options of one request of ddb__http_send, on a handle reset for it. */
static void send_options(CURL *e, const ddb__http_request *r, struct curl_slist *resolve)
{
    const char *method = r->method ? r->method : r->body ? "POST" : "GET";
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
}

int ddb__http_send(ddb__http_conn *conn, const ddb__http_request *r, ddb_cancel *cancel,
                   ddb__http_answer *out, ddb_error *err)
{
    memset(out, 0, sizeof *out);
    if (!r || !r->url)
        return ddb__fail(err, DDB_EINVAL, "an HTTP request needs a URL");
    if (ddb_cancel_is_set(cancel))
        return ddb__fail(err, DDB_ECANCELED, "the request was cancelled before it was sent");
    ddb__http_conn *own = NULL;
    if (!conn) {
        own = conn = ddb__http_conn_new(err);
        if (!conn)
            return err ? err->code : DDB_ENOMEM;
    }
    xfer *x = conn->x;
    curl_easy_reset(x->easy);
    xfer_bind(x);
    xfer_arm(x, r->max_answer ? r->max_answer : DDB__HTTP_MAX_ANSWER, false);
    x->k.want = r->want_headers;
    x->k.n_want = r->n_want_headers;
    struct curl_slist *resolve = NULL;
    int rc = 0;
    if (x->k.n_want && !(x->k.got = calloc(x->k.n_want, sizeof *x->k.got)))
        rc = ddb__fail(err, DDB_ENOMEM, "out of memory");
    if (rc == 0 && xfer_lines(x, r->headers, r->n_headers, true) != 0)
        rc = ddb__fail(err, DDB_ENOMEM, "out of memory");
    if (rc == 0 && r->resolve && !(resolve = curl_slist_append(NULL, r->resolve)))
        rc = ddb__fail(err, DDB_ENOMEM, "out of memory");
    ddb__http_response resp = { 0 };
    if (rc == 0) {
        send_options(x->easy, r, resolve);
        CURLcode cc;
        bool broken;
        int run = xfer_wait(x, cancel, &cc, &broken);
        rc = xfer_end(x, run, cc, NULL, &resp, err);
        curl_easy_setopt(x->easy, CURLOPT_RESOLVE, NULL);
        if (broken && !own) {
            /* Start the caller's connection afresh rather than trust it again. */
            xfer *fresh = xfer_new(true);
            if (fresh) {
                char **got = x->k.got;
                x->k.got = NULL;
                xfer_destroy(x);
                conn->x = x = fresh;
                x->k.want = r->want_headers;
                x->k.n_want = r->n_want_headers;
                x->k.got = got;
            }
        }
    }
    curl_slist_free_all(resolve);
    char **got = x->k.got;
    x->k.got = NULL;
    xfer_reset(x);
    ddb__http_conn_free(own);
    if (rc != 0) {
        for (size_t i = 0; got && i < r->n_want_headers; i++)
            free(got[i]);
        free(got);
        return rc;
    }
    out->status = resp.status;
    out->body = resp.body;
    out->len = resp.len;
    out->header_values = got;
    out->n_header_values = r->n_want_headers;
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
    xfer *idle;          /* transfers ready for reuse, most recently used first */
    int n_slots;         /* transfers created */
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
    xfer *s = h->idle;
    while (s) {
        xfer *next = s->next;
        xfer_destroy(s);
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
/* What every transfer of the client's requests is made with, blocking or asynchronous;
 * own_multi: for the blocking wait. */
static xfer *client_xfer_new(ddb__http *h, bool own_multi)
{
    xfer *x = xfer_new(own_multi);
    if (!x)
        return NULL;
    CURL *e = x->easy;
    curl_easy_setopt(e, CURLOPT_URL, h->url);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_POST, 1L);
    curl_easy_setopt(e, CURLOPT_TCP_NODELAY, 1L);
    curl_easy_setopt(e, CURLOPT_TCP_KEEPALIVE, 1L);
    curl_easy_setopt(e, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, (long)h->connect_timeout_ms);
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, (long)h->request_timeout_ms);
    curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
    if (h->ca_bundle)
        curl_easy_setopt(e, CURLOPT_CAINFO, h->ca_bundle);
    return x;
}

/* A client request's transfer, ready: its lines (copied or borrowed) and its body. */
static int client_xfer_start(ddb__http *h, xfer *x, const char *const *headers,
                             size_t n_headers, bool copy, const char *body, size_t len)
{
    xfer_arm(x, h->max_answer, true);
    set_body(x->easy, &x->guard, body, len);
    return xfer_lines(x, headers, n_headers, copy);
}

static xfer *slot_new(ddb__http *h)
{
    xfer *s = client_xfer_new(h, true);
    /* One connection per transfer of the pool: the pool is the connection limit. */
    if (s)
        curl_easy_setopt(s->easy, CURLOPT_MAXCONNECTS, 1L);
    return s;
}

/* Takes an idle handle, or makes one, or waits for one while at the limit: on the
 * pool's eventfd and the cancel token's together, so neither is noticed late. */
static xfer *slot_take(ddb__http *h, ddb_cancel *cancel, int *rc)
{
    int cfd = -1;
    pthread_mutex_lock(&h->mu);
    for (;;) {
        if (h->idle) {
            xfer *s = h->idle;
            h->idle = s->next;
            pthread_mutex_unlock(&h->mu);
            s->next = NULL;
            return s;
        }
        if (h->n_slots < h->max_slots) {
            h->n_slots++;
            pthread_mutex_unlock(&h->mu);
            xfer *s = slot_new(h);
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

static void slot_give(ddb__http *h, xfer *s, bool broken)
{
    if (broken) {
        xfer_destroy(s);
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
    xfer *s = slot_take(h, cancel, &rc);
    if (!s) {
        if (rc == DDB_ECANCELED)
            return ddb__fail(err, rc, "the request was cancelled while waiting for a connection");
        if (rc == DDB_EIO)
            return ddb__fail(err, rc, "could not wait for a connection: %s", strerror(errno));
        return ddb__fail(err, DDB_ENOMEM, "out of memory");
    }
    /* The lines are borrowed: the caller's, until the wait returns. */
    client_xfer_start(h, s, headers, n_headers, false, body, len);
    CURLcode cc;
    bool broken;
    int run = xfer_wait(s, cancel, &cc, &broken);
    rc = xfer_end(s, run, cc, &h->connects, out, err);
    xfer_reset(s);
    slot_give(h, s, broken);
    return rc;
}

/* ------------------------------------------------------- asynchronous transfers */

/* Transfers that run side by side on one multi handle, driven by the client's
 * scheduler thread (ddb__http_async_io): the requests of leases, whose heartbeat must
 * not wait for one slow request before it sends the next. Transfers are kept for reuse;
 * the multi handle keeps the connections alive between them. */
struct ddb__http_async {
    ddb__http *http;
    CURLM *multi;
    xfer *idle;                   /* finished transfers, their handles kept */
    xfer *queue, **queue_tail;    /* started beyond the limit, waiting */
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

void ddb__http_async_free(ddb__http_async *a)
{
    if (!a)
        return;
    /* The owner has finished or aborted every transfer by now. */
    xfer *x = a->idle;
    while (x) {
        xfer *next = x->next;
        xfer_destroy(x);
        x = next;
    }
    curl_multi_cleanup(a->multi);
    free(a);
}

static xfer *xfer_take(ddb__http_async *a)
{
    xfer *x = a->idle;
    if (x) {
        a->idle = x->next;
        x->next = NULL;
        return x;
    }
    return client_xfer_new(a->http, false);
}

static void xfer_give(ddb__http_async *a, xfer *x)
{
    xfer_reset(x);
    x->next = a->idle;
    a->idle = x;
}

/* Puts a transfer on the multi. 0, or DDB_ENOMEM (the transfer is then not running). */
static int xfer_run(ddb__http_async *a, xfer *x)
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
    xfer *x = xfer_take(a);
    if (!x)
        return ddb__fail(err, DDB_ENOMEM, "out of memory");
    /* The lines are copied: the caller's go before the transfer ends. */
    if (client_xfer_start(a->http, x, headers, n_headers, true, body, len) != 0) {
        xfer_give(a, x);
        return ddb__fail(err, DDB_ENOMEM, "out of memory");
    }
    x->done = done;
    x->arg = arg;
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
static void xfer_finish(ddb__http_async *a, xfer *x, CURLcode cc)
{
    ddb__http_response resp;
    ddb_error e;
    ddb_error_clear(&e);
    int rc = xfer_end(x, 0, cc, &a->http->connects, &resp, &e);
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
