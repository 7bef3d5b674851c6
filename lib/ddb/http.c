/* http.c: HTTP POSTs over libcurl for the client. A pool of handles, one per request in
 * flight and reused afterwards, keeps connections alive between requests; each request
 * runs on its handle's own multi handle, polling the cancel token's fd as well, so a
 * cancel aborts it within a poll wakeup rather than at curl's next progress tick. */
#include "client.h"

#include <curl/curl.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

typedef struct slot {
    CURL *easy;
    CURLM *multi;
    struct slot *next;
    char errbuf[CURL_ERROR_SIZE];
} slot;

struct ddb__http {
    char *url;
    char *ca_bundle;     /* CURLOPT_CAINFO, or NULL for the system's */
    int64_t connect_timeout_ms, request_timeout_ms;
    int max_slots;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    slot *idle;          /* handles ready for reuse, most recently used first */
    int n_slots;         /* handles created */
    atomic_long connects;
};

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_rc;

static void curl_init(void)
{
    curl_init_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

ddb__http *ddb__http_new(const ddb__http_options *o, ddb_error *err)
{
    pthread_once(&curl_once, curl_init);
    if (curl_init_rc != CURLE_OK) {
        ddb__fail(err, DDB_EIO, "libcurl could not be initialised: %s",
                  curl_easy_strerror(curl_init_rc));
        return NULL;
    }
    ddb__http *h = calloc(1, sizeof *h);
    if (!h || !(h->url = strdup(o->url))) {
        free(h);
        ddb__fail(err, DDB_ENOMEM, "out of memory");
        return NULL;
    }
    if (o->ca_bundle && !(h->ca_bundle = strdup(o->ca_bundle))) {
        free(h->url);
        free(h);
        ddb__fail(err, DDB_ENOMEM, "out of memory");
        return NULL;
    }
    h->connect_timeout_ms = o->connect_timeout_ms;
    h->request_timeout_ms = o->request_timeout_ms;
    h->max_slots = o->max_connections > 0 ? o->max_connections : 32;
    pthread_mutex_init(&h->mu, NULL);
    pthread_cond_init(&h->cv, NULL);
    atomic_init(&h->connects, 0);
    return h;
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
    pthread_cond_destroy(&h->cv);
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

typedef struct sink {
    dl_buf body;
    char *request_id;
    char *date;          /* 40 bytes, or NULL */
} sink;

static size_t on_body(char *data, size_t size, size_t nmemb, void *arg)
{
    sink *k = arg;
    size_t n = size * nmemb;
    dl__buf_put(&k->body, data, n);
    return k->body.oom ? 0 : n;
}

/* Copies the value of header `name` (lower case, with its colon) into out (cap bytes),
 * when the line is that header. */
static void header_value(const char *data, size_t n, const char *name, char *out, size_t cap)
{
    size_t nl = strlen(name);
    if (!out || n <= nl || strncasecmp(data, name, nl) != 0)
        return;
    size_t i = nl, end = n;
    while (i < end && (data[i] == ' ' || data[i] == '\t'))
        i++;
    while (end > i && (data[end - 1] == '\r' || data[end - 1] == '\n' || data[end - 1] == ' '))
        end--;
    size_t len = end - i;
    if (len >= cap)
        len = cap - 1;
    memcpy(out, data + i, len);
    out[len] = '\0';
}

static size_t on_header(char *data, size_t size, size_t nmemb, void *arg)
{
    sink *k = arg;
    size_t n = size * nmemb;
    header_value(data, n, "x-amzn-requestid:", k->request_id, DDB_REQUEST_ID_MAX);
    header_value(data, n, "date:", k->date, 40);
    return n;
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
    slot *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->easy = curl_easy_init();
    s->multi = curl_multi_init();
    if (!s->easy || !s->multi) {
        slot_free(s);
        return NULL;
    }
    easy_setup(h, s->easy, s->errbuf);
    /* One connection per handle: the pool is the connection limit. */
    curl_easy_setopt(s->easy, CURLOPT_MAXCONNECTS, 1L);
    return s;
}

/* Takes an idle handle, or makes one, or waits for one while at the limit. */
static slot *slot_take(ddb__http *h, ddb_cancel *cancel, int *rc)
{
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
                pthread_cond_signal(&h->cv);
                pthread_mutex_unlock(&h->mu);
                *rc = DDB_ENOMEM;
            }
            return s;
        }
        if (cancel && ddb_cancel_is_set(cancel)) {
            pthread_mutex_unlock(&h->mu);
            *rc = DDB_ECANCELED;
            return NULL;
        }
        /* Wake now and then to notice a cancel while every connection is busy. */
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 20 * 1000000L;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&h->cv, &h->mu, &ts);
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
    pthread_cond_signal(&h->cv);
    pthread_mutex_unlock(&h->mu);
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

int ddb__http_post(ddb__http *h, const char *const *headers, size_t n_headers,
                   const char *body, size_t len, ddb_cancel *cancel,
                   ddb__http_response *out, ddb_error *err)
{
    memset(out, 0, sizeof *out);
    if (cancel && ddb_cancel_is_set(cancel))
        return ddb__fail(err, DDB_ECANCELED, "the request was cancelled before it was sent");

    int rc = 0;
    slot *s = slot_take(h, cancel, &rc);
    if (!s) {
        if (rc == DDB_ECANCELED)
            return ddb__fail(err, rc, "the request was cancelled while waiting for a connection");
        return ddb__fail(err, DDB_ENOMEM, "out of memory");
    }

    /* The header list lives on the stack: curl reads it during the transfer only. */
    struct curl_slist nodes[16];
    if (n_headers > 16)
        n_headers = 16;
    for (size_t i = 0; i < n_headers; i++) {
        nodes[i].data = (char *)(uintptr_t)headers[i];
        nodes[i].next = i + 1 < n_headers ? &nodes[i + 1] : NULL;
    }

    sink k = { .request_id = out->request_id, .date = out->date };
    CURL *e = s->easy;
    s->errbuf[0] = '\0';
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, n_headers ? nodes : NULL);
    curl_easy_setopt(e, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, &k);
    curl_easy_setopt(e, CURLOPT_HEADERDATA, &k);

    CURLcode cc = CURLE_OK;
    bool canceled = false, broken = false;
    if (curl_multi_add_handle(s->multi, e) != CURLM_OK) {
        slot_give(h, s, true);
        return ddb__fail(err, DDB_ENOMEM, "could not start the request");
    }
    int fd = cancel ? ddb_cancel_fd(cancel) : -1;
    for (;;) {
        int running = 0;
        CURLMcode mc = curl_multi_perform(s->multi, &running);
        if (mc != CURLM_OK) {
            cc = CURLE_OUT_OF_MEMORY;
            broken = true;
            break;
        }
        if (!running) {
            int left;
            CURLMsg *m;
            while ((m = curl_multi_info_read(s->multi, &left)) != NULL)
                if (m->msg == CURLMSG_DONE)
                    cc = m->data.result;
            break;
        }
        if (cancel && ddb_cancel_is_set(cancel)) {
            canceled = true;
            break;
        }
        struct curl_waitfd wfd = { .fd = fd, .events = CURL_WAIT_POLLIN };
        bool use_fd = fd >= 0;
        /* Without a cancel fd, poll briefly so a set token is still seen soon. */
        int timeout_ms = cancel && !use_fd ? 5 : 1000;
        mc = curl_multi_poll(s->multi, use_fd ? &wfd : NULL, use_fd ? 1 : 0, timeout_ms, NULL);
        if (mc != CURLM_OK) {
            cc = CURLE_OUT_OF_MEMORY;
            broken = true;
            break;
        }
    }
    curl_multi_remove_handle(s->multi, e);
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, NULL);

    long connects = 0;
    if (curl_easy_getinfo(e, CURLINFO_NUM_CONNECTS, &connects) == CURLE_OK && connects > 0)
        atomic_fetch_add(&h->connects, connects);

    if (canceled) {
        /* Removing a handle mid-transfer closes its connection; the handle stays good. */
        slot_give(h, s, false);
        dl__buf_cleanup(&k.body);
        return ddb__fail(err, DDB_ECANCELED, "the request was cancelled in flight");
    }
    if (k.body.oom) {
        slot_give(h, s, false);
        dl__buf_cleanup(&k.body);
        return ddb__fail(err, DDB_ENOMEM, "out of memory reading the answer");
    }
    if (cc != CURLE_OK) {
        int code = code_for_curl(cc);
        ddb__fail(err, code, "%s", s->errbuf[0] ? s->errbuf : curl_easy_strerror(cc));
        slot_give(h, s, broken);
        dl__buf_cleanup(&k.body);
        return code;
    }
    long status = 0;
    curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &status);
    slot_give(h, s, false);
    out->body = dl__buf_take(&k.body, &out->len);
    if (!out->body)
        return ddb__fail(err, DDB_ENOMEM, "out of memory");
    out->status = status;
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
    struct curl_slist *headers;
    sink k;
    char request_id[DDB_REQUEST_ID_MAX];
    char date[40];
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
    x->request_id[0] = '\0';
    x->date[0] = '\0';
    x->errbuf[0] = '\0';
    x->done = done;
    x->arg = arg;
    curl_easy_setopt(x->easy, CURLOPT_HTTPHEADER, x->headers);
    curl_easy_setopt(x->easy, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(x->easy, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
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
    if (x->k.body.oom) {
        rc = ddb__fail(&e, DDB_ENOMEM, "out of memory reading the answer");
    } else if (cc != CURLE_OK) {
        rc = ddb__fail(&e, code_for_curl(cc), "%s", x->errbuf[0] ? x->errbuf : curl_easy_strerror(cc));
    } else {
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
    done(arg, rc, rc == 0 ? &resp : NULL, &e);
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
            done(arg, DDB_ENOMEM, NULL, &e);
        }
    }
}

void ddb__http_async_abort(ddb__http_async *a, ddb__http_xfer *x)
{
    if (x->running) {
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
    done(arg, DDB_ECANCELED, NULL, &e);
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
