/* client.h: the inside of a ddb_client and ddb_table, and the request path that every
 * operation module (ops.c, pages.c, batch.c, tx.c, admin.c) sends through: client.c
 * signs, sends over http.c, retries, and reports telemetry. */
#ifndef DDB_CLIENT_H
#define DDB_CLIENT_H

#include <pthread.h>
#include <stdatomic.h>
#include <json-c/json.h>

#include "buf.h"
#include "internal.h"
#include "items.h"
#include "scheduler.h"

/* ---- HTTP (http.c): a pool of libcurl handles that keep their connections alive */
typedef struct ddb__http ddb__http;

typedef struct ddb__http_options {
    const char *url;
    int64_t connect_timeout_ms;
    int64_t request_timeout_ms;
    int max_connections;
    char *ca_bundle;   /* AWS_CA_BUNDLE / ca_bundle: CURLOPT_CAINFO, or NULL; copy it */
    size_t max_answer; /* an answer's cap in bytes; 0: DDB__CLIENT_MAX_ANSWER */
} ddb__http_options;

typedef struct ddb__http_response {
    long status;                        /* 0 when no answer arrived */
    char *body;                         /* malloc'd, NUL-terminated */
    size_t len;
    char request_id[DDB_REQUEST_ID_MAX];
    char date[40];                      /* the Date header, "" if none */
    bool sent;                          /* the request may have reached the server: true
                                         * with an answer, and after a failure that came
                                         * once any byte of it was written */
} ddb__http_response;

ddb__http *ddb__http_new(const ddb__http_options *o, ddb_error *err);
void ddb__http_free(ddb__http *h);
/* POSTs body with the given header lines ("Name: value"). Returns 0 when an answer of
 * any status arrived (out filled), or DDB_ECANCELED, DDB_ETIMEDOUT, DDB_ENETWORK,
 * DDB_ENOMEM with err filled and out->sent saying whether the request may have reached
 * the server all the same. Any thread. */
int ddb__http_post(ddb__http *h, const char *const *headers, size_t n_headers,
                   const char *body, size_t len, ddb_cancel *cancel,
                   ddb__http_response *out, ddb_error *err);
void ddb__http_response_cleanup(ddb__http_response *r);
long ddb__http_connections_opened(ddb__http *h);

/* Asynchronous transfers on one multi handle, driven by the client's scheduler thread
 * (the scheduler's I/O source). Every function but _new and _free runs on that thread;
 * `done` runs there too, once per started transfer: rc 0 with the answer (borrowed for
 * the call), or a DDB_E* with err and resp->sent (resp is never NULL). */
typedef struct ddb__http_async ddb__http_async;
typedef struct ddb__http_xfer ddb__http_xfer;
typedef void (*ddb__http_done_fn)(void *arg, int rc, ddb__http_response *resp, ddb_error *err);
ddb__http_async *ddb__http_async_new(ddb__http *h, ddb_error *err);
void ddb__http_async_free(ddb__http_async *a);
/* Starts a POST (header lines and body as for ddb__http_post; the headers are copied,
 * the body must stay until done). *out names the transfer for ddb__http_async_abort. */
int ddb__http_async_start(ddb__http_async *a, const char *const *headers, size_t n_headers,
                          const char *body, size_t len, ddb__http_done_fn done, void *arg,
                          ddb__http_xfer **out, ddb_error *err);
/* Stops a transfer that has not finished: its done runs now, with DDB_ECANCELED. */
void ddb__http_async_abort(ddb__http_async *a, ddb__http_xfer *x);
extern const ddb__sched_io ddb__http_async_io;

/* ---- client (client.c) */
struct ddb_client {
    char *endpoint;           /* as given or resolved */
    char *url;                /* endpoint with a path */
    char *region;
    char *host_header;        /* host[:port] as in the URL */
    char *server_address;     /* host alone, for telemetry */
    int server_port;
    char *path;               /* the URL's path, "/" by default */
    ddb_clock *clock;
    ddb_log_fn log;
    void *log_arg;
    int log_level;
    ddb_telemetry tel;
    bool has_tel;
    ddb__cred_provider *creds;
    ddb__retry_state *retry;
    ddb__policy policy;        /* the options resolved, once */
    ddb__http *http;
    ddb__rate_limiter *limiter; /* AWS_RETRY_MODE=adaptive, else NULL */
    atomic_int_fast64_t skew_ms; /* the server's clock minus ours, learnt from a skew error */
    pthread_mutex_t sched_mu;  /* guards the making of what follows */
    ddb__sched *sched;         /* background time: made on first use */
    ddb__http_async *async;    /* its transfers */
};

struct ddb_table {
    ddb_client *client;
    char *name, *pk, *sk;
};

/* One DynamoDB call: the operation and, for telemetry, the table it is on (NULL when
 * several or none; `table_names` then lists them, comma-separated, or NULL). */
typedef struct ddb__call {
    const char *operation;
    const char *table;
    const char *table_names;
} ddb__call;

/* ---- request text (json.c), written into a dl_buf (common/buf.h): a failed
 * allocation sticks in its `oom` and is reported once at the end. */
/* s (n bytes) as a JSON string, quoted and escaped as json-c does (no '/' escaping). */
void ddb__text_json_str(dl_buf *t, const char *s, size_t n);
/* The item as DynamoDB JSON ({"pk":{"S":"a"}}). */
void ddb__text_item(dl_buf *t, const ddb_item *it);

/* ---- signing (client.c): the header lines of one signed attempt. Lines point into
 * `inline_buf` (or `heap` when a long session token does not fit). */
typedef struct ddb__signed {
    const char *lines[12];
    size_t n_lines;
    char *heap;
    char inline_buf[768];
} ddb__signed;
/* Signs a POST of body for operation op at epoch_s with cred. 0 or DDB_ENOMEM. */
int ddb__client_sign(ddb_client *c, const char *op, const char *body, size_t len,
                     const ddb__credentials *cred, int64_t epoch_s, ddb__signed *out,
                     ddb_error *err);
void ddb__signed_cleanup(ddb__signed *s);

/* Sends a request built as JSON text, with retries; as ddb__client_send otherwise. */
int ddb__client_send_text(ddb_client *c, const ddb__call *call, const char *body, size_t len,
                          json_object **resp, ddb_cancel *cancel, int *retries, ddb_error *err);

/* ---- single-item requests (ops.c), also used by bench/client to time the encoding
 * and decoding stages alone. The builders fill out (emptied first) with the request
 * text; ddb__item_answer reads `item_key` and ConsumedCapacity of an answer into res. */
int ddb__get_request(const ddb_table *t, const ddb_item *key, const ddb_get_options *o,
                     dl_buf *out, ddb_error *err);
int ddb__update_request(const ddb_table *t, const ddb_item *key, const char *update,
                        const ddb_write_options *o, dl_buf *out, ddb_error *err);
int ddb__item_answer(json_object *resp, const char *item_key, ddb_result *res, ddb_error *err);

/* Sends a request built as JSON, with retries. On success *resp is the parsed answer
 * (caller puts). On an error answer, *resp is the parsed error body if there was one.
 * *retries (may be NULL) receives the retries made. */
int ddb__client_send(ddb_client *c, const ddb__call *call, json_object *req,
                     json_object **resp, ddb_cancel *cancel, int *retries, ddb_error *err);
/* Clears err at the start of a public call, so no field of an old error lingers. */
static inline void ddb__err_reset(ddb_error *err)
{
    if (err)
        ddb_error_clear(err);
}
/* ---- asynchronous requests (client.c), for work that must not block the scheduler:
 * the renewals and releases of leases. */
typedef struct ddb__areq ddb__areq;
/* The end of an asynchronous call, on the scheduler's thread: rc 0 with the parsed
 * answer (borrowed for the call), or an error in err (resp then holds the parsed error
 * body, if any). */
typedef void (*ddb__reply_fn)(void *arg, int rc, json_object *resp, int retries,
                              ddb_error *err);
/* Sends the request text `body` (taken: freed by the call, also on failure) with the
 * client's retries, on the scheduler; `reply` runs exactly once when it returns 0.
 * Setting `cancel` (referenced) aborts the attempt in flight or the backoff, and reply
 * gets DDB_ECANCELED. The span's parent is the calling thread's. Any thread. */
int ddb__client_start(ddb_client *c, const ddb__call *call, char *body, size_t len,
                      ddb_cancel *cancel, ddb__reply_fn reply, void *arg, ddb_error *err);


/* ---- small JSON helpers: the requests other than ops.c's are json-c trees built with
 * these, each add checked */
/* Adds key -> v to o, taking v (put on failure, also when o is NULL). Returns v, borrowed,
 * or NULL when out of memory, so that a chain of adds stops at the first failure. */
json_object *ddb__jadd(json_object *o, const char *key, json_object *v);
/* Adds key -> a new string; false when out of memory. */
bool ddb__jadd_str(json_object *o, const char *key, const char *s);
/* Adds ExpressionAttributeNames from pairs and ExpressionAttributeValues from values. */
int ddb__jadd_expr(json_object *o, ddb_names names, const ddb_item *values, ddb_error *err);
/* Adds key -> the item as DynamoDB JSON. */
int ddb__jadd_item(json_object *o, const char *key, const ddb_item *it, ddb_error *err);
/* The item under key in o, or NULL (absent); DDB_EPROTOCOL when malformed. */
int ddb__jget_item(json_object *o, const char *key, ddb_item **out, ddb_error *err);

#endif
