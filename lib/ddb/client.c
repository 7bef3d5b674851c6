/* client.c: the ddb_client (endpoint, region, credentials, clock, logger, telemetry)
 * and the request path every operation takes: encode, sign with SigV4, POST, read the
 * answer or the error, retry in the standard mode with waits on the client's clock,
 * and report a span and a duration metric per call. */
#include "client.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <curl/curl.h>

#include "sigv4.h"

#include <dynalock/version.h>

/* An operation name is at most this long (DynamoDB's longest is 32). */
#define CLIENT_OPERATION_MAX 64
/* "DynamoDB_20120810." and an operation name, with its NUL. */
#define CLIENT_TARGET_MAX (sizeof "DynamoDB_20120810." + CLIENT_OPERATION_MAX)
/* The header lines' fixed text besides their values ("Host: ", "Authorization: ", ...). */
#define CLIENT_HEADER_SLACK 160
/* A table name's length, as DynamoDB allows it. */
#define TABLE_NAME_MIN 3
#define TABLE_NAME_MAX 255
/* A correction of the clock's skew within this much of the last one is not new: a
 * second skew error with it is not the clock's fault. */
#define SKEW_SAME_MS 60000
#define HTTPS_PORT 443
#define HTTP_PORT 80

/* Splits an endpoint URL (libcurl's parser) into the pieces the client signs and
 * reports. http(s) only, no user info, no query or fragment; IPv6 literals in brackets. */
static int parse_endpoint(ddb_client *c, ddb_error *err)
{
    const char *e = c->endpoint;
    CURLU *u = curl_url();
    if (!u)
        return ddb__fail(err, DDB_ENOMEM, "out of memory");
    char *scheme = NULL, *host = NULL, *port = NULL, *path = NULL, *extra = NULL;
    int rc = 0;
    CURLUcode uc = curl_url_set(u, CURLUPART_URL, e, 0);
    if (uc != CURLUE_OK || curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK ||
        (strcasecmp(scheme, "http") != 0 && strcasecmp(scheme, "https") != 0)) {
        rc = ddb__fail(err, DDB_EINVAL, "the endpoint '%.200s' is not an http(s) URL%s%s", e,
                       uc != CURLUE_OK ? ": " : "", uc != CURLUE_OK ? curl_url_strerror(uc) : "");
        goto out;
    }
    if (curl_url_get(u, CURLUPART_USER, &extra, 0) == CURLUE_OK) {
        rc = ddb__fail(err, DDB_EINVAL, "the endpoint '%.200s' has user info; not allowed", e);
        goto out;
    }
    if (curl_url_get(u, CURLUPART_QUERY, &extra, 0) == CURLUE_OK ||
        curl_url_get(u, CURLUPART_FRAGMENT, &extra, 0) == CURLUE_OK) {
        rc = ddb__fail(err, DDB_EINVAL, "the endpoint '%.200s' has a query or fragment; not "
                                        "allowed", e);
        goto out;
    }
    if (curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK || !*host) {
        rc = ddb__fail(err, DDB_EINVAL, "the endpoint '%.200s' has no host", e);
        goto out;
    }
    curl_url_get(u, CURLUPART_PORT, &port, 0); /* only when given */
    curl_url_get(u, CURLUPART_PATH, &path, 0);
    bool https = strcasecmp(scheme, "https") == 0;
    c->server_port = port ? atoi(port) : https ? HTTPS_PORT : HTTP_PORT;
    if (port ? asprintf(&c->host_header, "%s:%s", host, port) < 0
             : !(c->host_header = strdup(host)))
        c->host_header = NULL;
    size_t hl = strlen(host);
    c->server_address = host[0] == '[' ? strndup(host + 1, hl - 2) : strdup(host);
    c->path = strdup(path && *path ? path : "/");
    if (c->host_header && c->path &&
        asprintf(&c->url, "%s://%s%s", https ? "https" : "http", c->host_header, c->path) < 0)
        c->url = NULL;
    if (!c->host_header || !c->server_address || !c->path || !c->url)
        rc = ddb__fail(err, DDB_ENOMEM, "out of memory");
out:
    curl_free(scheme);
    curl_free(host);
    curl_free(port);
    curl_free(path);
    curl_free(extra);
    curl_url_cleanup(u);
    return rc;
}

ddb_client *ddb_client_new(const ddb_client_options *opts, ddb_error *err)
{
    ddb_client_options zero = { 0 };
    const ddb_client_options *o = opts ? opts : &zero;
    if (err)
        ddb_error_clear(err);
    if ((o->connect_timeout_ms < 0) || (o->request_timeout_ms < 0) || o->max_connections < 0 ||
        o->retry.max_attempts < 0 || o->retry.base_delay_ms < 0 || o->retry.max_backoff_ms < 0) {
        ddb__fail(err, DDB_EINVAL, "a client option is negative");
        return NULL;
    }
    if (o->log_level < 0 || o->log_level > DDB_LOG_OFF) {
        ddb__fail(err, DDB_EINVAL, "the log level %d is not a DDB_LOG_* level", o->log_level);
        return NULL;
    }
    ddb_client *c = calloc(1, sizeof *c);
    if (!c) {
        ddb__fail(err, DDB_ENOMEM, "out of memory");
        return NULL;
    }
    pthread_mutex_init(&c->sched_mu, NULL);
    c->clock = o->clock ? ddb_clock_ref(o->clock) : ddb_clock_system();
    c->log = o->log ? o->log : ddb_log_to_stderr;
    c->log_arg = o->log ? o->log_arg : NULL;
    c->log_level = o->log_level ? o->log_level : DDB_LOG_INFO;
    if (o->telemetry) {
        c->tel = *o->telemetry;
        c->has_tel = true;
    }
    /* The options, the environment and the shared files, read once; the region is a
     * valid host label before it is ever put in a URL. */
    ddb__settings set;
    int rc = ddb__settings_resolve(o, &set, err);
    if (rc != 0) {
        ddb_client_free(c);
        return NULL;
    }
    ddb__policy_resolve(o, set.max_attempts, &c->policy);
    c->creds = ddb__cred_provider_new(o, &set, c->clock, err);
    if (!c->creds) {
        rc = -1;
        goto fail;
    }
    c->region = set.region;
    c->endpoint = set.endpoint;
    set.region = set.endpoint = NULL;
    if ((rc = parse_endpoint(c, err)) != 0)
        goto fail;
    if (set.retry_adaptive && !(c->limiter = ddb__rate_limiter_new())) {
        rc = ddb__fail(err, DDB_ENOMEM, "out of memory");
        goto fail;
    }
    c->retry = ddb__retry_state_new_policy(&c->policy);
    if (!c->retry) {
        rc = ddb__fail(err, DDB_ENOMEM, "out of memory");
        goto fail;
    }
    ddb__http_options ho = {
        .url = c->url,
        .connect_timeout_ms = c->policy.connect_timeout_ms,
        .request_timeout_ms = c->policy.request_timeout_ms,
        .max_connections = c->policy.max_connections,
        .ca_bundle = set.ca_bundle,
    };
    c->http = ddb__http_new(&ho, err);
    if (!c->http) {
        rc = -1;
        goto fail;
    }
    ddb__settings_cleanup(&set);
    return c;
fail:
    (void)rc;
    ddb__settings_cleanup(&set);
    ddb_client_free(c);
    return NULL;
}

void ddb_client_free(ddb_client *c)
{
    if (!c)
        return;
    /* The scheduler first: its thread drives the asynchronous transfers. */
    ddb__sched_free(c->sched);
    ddb__http_async_free(c->async);
    pthread_mutex_destroy(&c->sched_mu);
    ddb__rate_limiter_free(c->limiter);
    ddb__http_free(c->http);
    ddb__retry_state_free(c->retry);
    ddb__cred_provider_free(c->creds);
    ddb_clock_unref(c->clock);
    free(c->endpoint);
    free(c->url);
    free(c->region);
    free(c->host_header);
    free(c->server_address);
    free(c->path);
    free(c);
}

ddb_clock *ddb_client_clock(ddb_client *c) { return c ? c->clock : NULL; }
const char *ddb_client_endpoint(const ddb_client *c) { return c ? c->endpoint : NULL; }
const char *ddb_client_region(const ddb_client *c) { return c ? c->region : NULL; }
const ddb_telemetry *ddb_client_telemetry(const ddb_client *c)
{
    return (c && c->has_tel) ? &c->tel : NULL;
}

long ddb__client_connections_opened(ddb_client *c)
{
    return c ? ddb__http_connections_opened(c->http) : 0;
}

bool ddb__client_log_enabled(ddb_client *c, int level)
{
    return c && level >= c->log_level && level < DDB_LOG_OFF && c->log;
}

void ddb__client_log(ddb_client *c, int level, int event_id, const char *category,
                    const char *message, const ddb_log_field *fields, size_t n)
{
    if (ddb__client_log_enabled(c, level))
        c->log(c->log_arg, level, event_id, category, message, fields, n);
}

/* ------------------------------------------------------------ telemetry */

static uint64_t span_begin(ddb_client *c, const ddb__call *call)
{
    uint64_t id = ddb__span_start(ddb_client_telemetry(c),
                                  call->operation, ddb_telemetry_get_parent(), NULL, 0);
    ddb__span_str(ddb_client_telemetry(c), id, "db.system.name", "aws.dynamodb");
    ddb__span_str(ddb_client_telemetry(c), id, "db.operation.name", call->operation);
    ddb__span_str(ddb_client_telemetry(c), id, "db.collection.name", call->table);
    ddb__span_str(ddb_client_telemetry(c),
                  id, "aws.dynamodb.table_names", call->table_names ? call->table_names : call->table);
    ddb__span_str(ddb_client_telemetry(c), id, "server.address", c->server_address);
    ddb__span_int(ddb_client_telemetry(c), id, "server.port", c->server_port);
    return id;
}

static void span_finish(ddb_client *c, uint64_t id, const ddb__call *call, int64_t start_ns,
                        const char *error_type, int retries)
{
    if (!c->has_tel)
        return;
    ddb__span_str(ddb_client_telemetry(c), id, "error.type", error_type);
    if (retries > 0)
        ddb__span_int(ddb_client_telemetry(c), id, "aws.dynamodb.retries", retries);
    ddb__span_end(ddb_client_telemetry(c), id, error_type);
    if (c->tel.metric) {
        double seconds = (double)(ddb_clock_mono_ns(c->clock) - start_ns) / 1e9;
        ddb_attr attrs[5];
        size_t n = 0;
        attrs[n++] = (ddb_attr){ .key = "db.system.name", .type = DDB_ATTR_STR, .v.s = "aws.dynamodb" };
        attrs[n++] = (ddb_attr){ .key = "db.operation.name", .type = DDB_ATTR_STR, .v.s = call->operation };
        if (call->table)
            attrs[n++] = (ddb_attr){ .key = "db.collection.name", .type = DDB_ATTR_STR, .v.s = call->table };
        attrs[n++] = (ddb_attr){ .key = "server.address", .type = DDB_ATTR_STR, .v.s = c->server_address };
        if (error_type)
            attrs[n++] = (ddb_attr){ .key = "error.type", .type = DDB_ATTR_STR, .v.s = error_type };
        c->tel.metric(c->tel.arg, "db.client.operation.duration", "s", seconds, attrs, n);
    }
}

/* ---------------------------------------------------------------- sending */

typedef struct doubt doubt;

typedef struct attempt_result {
    int code;                       /* 0, or DDB_E* */
    bool network;                   /* no answer (retryable transport failure) */
    ddb__http_response http;
    char aws_type[DDB_ERROR_TYPE_MAX];
    char message[DDB_ERROR_MESSAGE_MAX];
    json_object *body;              /* parsed answer or error body */
} attempt_result;

/* Reads __type ("com.amazonaws.dynamodb.v20120810#ResourceNotFoundException") and
 * message/Message out of an error body. */
static void read_error_body(attempt_result *r)
{
    if (r->body)
        return; /* read already */
    r->body = ddb__json_parse(r->http.body, r->http.len, DDB_EPROTOCOL, NULL);
    json_object *t, *m;
    if (r->body && json_object_is_type(r->body, json_type_object)) {
        if (json_object_object_get_ex(r->body, "__type", &t) && json_object_is_type(t, json_type_string)) {
            const char *s = json_object_get_string(t);
            const char *hash = strrchr(s, '#');
            snprintf(r->aws_type, sizeof r->aws_type, "%s", hash ? hash + 1 : s);
        }
        if ((json_object_object_get_ex(r->body, "message", &m) ||
             json_object_object_get_ex(r->body, "Message", &m)) &&
            json_object_is_type(m, json_type_string))
            snprintf(r->message, sizeof r->message, "%s", json_object_get_string(m));
    }
}

/* A transaction cancelled only because of conflicts with other transactions is worth
 * another try, as TransactionConflictException is. */
static bool tx_conflict_only(json_object *body)
{
    json_object *reasons;
    if (!body || !json_object_object_get_ex(body, "CancellationReasons", &reasons) ||
        !json_object_is_type(reasons, json_type_array))
        return false;
    bool conflict = false;
    size_t n = json_object_array_length(reasons);
    for (size_t i = 0; i < n; i++) {
        json_object *code;
        if (!json_object_object_get_ex(json_object_array_get_idx(reasons, i), "Code", &code))
            continue;
        const char *s = json_object_get_string(code);
        if (s && strcmp(s, "TransactionConflict") == 0)
            conflict = true;
        else if (s && strcmp(s, "None") != 0)
            return false;
    }
    return conflict;
}

static void attempt_cleanup(attempt_result *r)
{
    ddb__http_response_cleanup(&r->http);
    json_object_put(r->body);
    r->body = NULL;
}

void ddb__signed_cleanup(ddb__signed *s)
{
    if (s) {
        free(s->heap);
        s->heap = NULL;
        s->n_lines = 0;
    }
}

/* Appends "name: value" and its NUL at *p; returns the line. */
static const char *put_line(char **p, const char *name, size_t nl, const char *value, size_t vl)
{
    char *line = *p;
    memcpy(line, name, nl);
    memcpy(line + nl, value, vl);
    line[nl + vl] = '\0';
    *p = line + nl + vl + 1;
    return line;
}

int ddb__client_sign(ddb_client *c, const char *op, const char *body, size_t len,
                     const ddb__credentials *cred, int64_t epoch_s, ddb__signed *out,
                     ddb_error *err)
{
    out->n_lines = 0;
    out->heap = NULL;
    char amz_date[17];
    dl__sigv4_amz_date(epoch_s, amz_date);
    static const char target_prefix[] = "DynamoDB_20120810.";
    char target[CLIENT_TARGET_MAX];
    size_t ol = strlen(op);
    if (ol > sizeof target - sizeof target_prefix)
        return ddb__fail(err, DDB_EINVAL, "the operation name \"%.40s...\" is longer than "
                         "the %zu bytes of an X-Amz-Target", op,
                         sizeof target - sizeof target_prefix);
    memcpy(target, target_prefix, sizeof target_prefix - 1);
    memcpy(target + sizeof target_prefix - 1, op, ol);
    size_t tl = sizeof target_prefix - 1 + ol;
    target[tl] = '\0';
    dl_sigv4_header sh[5] = {
        { "host", c->host_header },
        { "content-type", "application/x-amz-json-1.0" },
        { "x-amz-date", amz_date },
        { "x-amz-target", target },
        { "x-amz-security-token", cred->session_token },
    };
    size_t n_sh = cred->session_token ? 5 : 4;
    dl_sigv4_request req = {
        .method = "POST", .path = c->path, .query = NULL,
        .headers = sh, .n_headers = n_sh, .body = body, .body_len = len,
    };
    dl_sigv4_credentials sc = { cred->access_key_id, cred->secret_access_key, cred->session_token };
    dl_sigv4_result sig = { 0 };
    if (dl__sigv4_sign(&req, &sc, c->region, "dynamodb", epoch_s, &sig) != 0) {
        dl__sigv4_result_cleanup(&sig);
        return ddb__fail(err, DDB_ENOMEM, "the request could not be signed");
    }

    size_t host_l = strlen(c->host_header), auth_l = strlen(sig.authorization);
    size_t tok_l = cred->session_token ? strlen(cred->session_token) : 0;
    size_t need = host_l + auth_l + tok_l + tl + CLIENT_HEADER_SLACK;
    char *p = out->inline_buf;
    if (need > sizeof out->inline_buf) {
        p = out->heap = malloc(need);
        if (!p) {
            dl__sigv4_result_cleanup(&sig);
            return ddb__fail(err, DDB_ENOMEM, "out of memory");
        }
    }
    size_t n = 0;
    out->lines[n++] = put_line(&p, "Host: ", 6, c->host_header, host_l);
    out->lines[n++] = "Content-Type: application/x-amz-json-1.0";
    out->lines[n++] = put_line(&p, "X-Amz-Date: ", 12, amz_date, 16);
    out->lines[n++] = put_line(&p, "X-Amz-Target: ", 14, target, tl);
    out->lines[n++] = put_line(&p, "Authorization: ", 15, sig.authorization, auth_l);
    if (cred->session_token)
        out->lines[n++] = put_line(&p, "X-Amz-Security-Token: ", 22, cred->session_token, tok_l);
    out->lines[n++] = "User-Agent: dynalock/" DDB_VERSION_STRING;
    out->lines[n++] = "Expect:";
    out->lines[n++] = "Accept:";
    out->n_lines = n;
    dl__sigv4_result_cleanup(&sig);
    return 0;
}

/* ------------------------------------------------------- outcomes in doubt */

/* Whether an operation writes. Reads apply nothing, so a lost answer to one is only a
 * failure; anything not known to read counts as a write (ExecuteStatement may be either). */
static bool op_writes(const char *op)
{
    static const char *const reads[] = { "GetItem", "BatchGetItem", "Query", "Scan",
                                         "TransactGetItems", "GetRecords", "GetShardIterator",
                                         NULL };
    if (strncmp(op, "Describe", 8) == 0 || strncmp(op, "List", 4) == 0)
        return false;
    for (size_t i = 0; reads[i]; i++)
        if (strcmp(op, reads[i]) == 0)
            return false;
    return true;
}

/* A call's memory of its attempts in doubt: the first that was sent and never answered. */
struct doubt {
    bool lost;
    char what[160];
};

static void doubt_note(doubt *d, int rc, const ddb_error *aerr)
{
    if (d->lost || rc == DDB_ENOMEM)
        return;
    d->lost = true;
    snprintf(d->what, sizeof d->what, "%.159s", aerr->message[0] ? aerr->message : ddb_error_string(rc));
}

/* A final failure that settles a write in doubt as not applied: one the attempt in doubt
 * would have met too (the same request is invalid), or a transaction refused although its
 * ClientRequestToken would have made the retry succeed had the first attempt been applied. */
static bool doubt_settled(const ddb__call *call, int rc)
{
    if (rc == DDB_EVALIDATION)
        return true;
    return rc == DDB_ETXCANCELED && strcmp(call->operation, "TransactWriteItems") == 0;
}

/* The error type of an error answer (read once: the body is kept for the outcome). */
static const char *read_type_only(attempt_result *out)
{
    if (out->http.body)
        read_error_body(out);
    return out->aws_type[0] ? out->aws_type : NULL;
}

/* A clock-skew error with the server's Date: the client signs with the server's time from
 * now on (the skew is kept), and the attempt is retried, as the AWS SDKs do. */
static bool skew_corrected(ddb_client *c, const attempt_result *out)
{
    if (!ddb__is_clock_skew_error(out->aws_type[0] ? out->aws_type : NULL) || !out->http.date[0])
        return false;
    int64_t server_ms = ddb__parse_http_date_ms(out->http.date);
    if (server_ms <= 0)
        return false;
    int64_t skew = server_ms - ddb_clock_wall_ms(c->clock);
    int64_t old = atomic_exchange(&c->skew_ms, skew);
    /* A second skew error with the same correction is not the clock's fault. */
    return old == 0 || (skew - old > SKEW_SAME_MS || old - skew > SKEW_SAME_MS);
}

/* Reads the outcome of one attempt (rc from the transport, the answer in out): 0 for a
 * success whose body parsed, else the error code; *retry says whether the standard mode
 * retries it, and *delay_ms how long it waits first (the quota is taken then). */
static int attempt_outcome(ddb_client *c, int attempt, int rc, attempt_result *out,
                           ddb_error *aerr, int *last_cost, bool *retry, int64_t *delay_ms,
                           doubt *d)
{
    *retry = false;
    *delay_ms = 0;
    if (rc != 0 && out->http.sent)
        doubt_note(d, rc, aerr);
    bool network = false, throttling = false, skew = false;
    if (c->limiter && (rc == 0 || rc == DDB_ENETWORK || rc == DDB_ETIMEDOUT))
        ddb__rate_limiter_update(c->limiter,
                                 rc == 0 && out->http.status >= 300 && out->http.status < 600 &&
                                     ddb__retry_is_throttling(read_type_only(out)),
                                 ddb_clock_mono_ns(c->clock));
    if (rc == 0 && out->http.status >= 200 && out->http.status < 300) {
        out->body = ddb__json_parse(out->http.body, out->http.len, DDB_EPROTOCOL, aerr);
        if (out->body) {
            if (attempt > 0)
                ddb__retry_refund(c->retry, *last_cost);
            else
                ddb__retry_success(c->retry, false);
            return 0;
        }
        rc = DDB_EPROTOCOL;
    } else if (rc == 0) {
        read_error_body(out);
        rc = ddb__code_for_aws_type(out->aws_type[0] ? out->aws_type : NULL, (int)out->http.status);
        if (rc == 0)
            rc = DDB_ESERVICE;
        throttling = ddb__retry_is_throttling(out->aws_type[0] ? out->aws_type : NULL);
        if (skew_corrected(c, out))
            skew = true;
    } else if (rc == DDB_ENETWORK || rc == DDB_ETIMEDOUT) {
        network = true;
    } else {
        return rc; /* cancelled, credentials, memory: not retried */
    }
    bool retryable = rc != DDB_EPROTOCOL &&
                     (skew || ddb__retry_is_retryable((int)out->http.status,
                                              out->aws_type[0] ? out->aws_type : NULL, network) ||
                      (strcmp(out->aws_type, "TransactionCanceledException") == 0 &&
                       tx_conflict_only(out->body)));
    *retry = retryable && ddb__retry_next_cost(c->retry, attempt + 1, throttling,
                                               rc == DDB_ETIMEDOUT, delay_ms, last_cost);
    if (*retry && skew)
        *delay_ms = 0; /* the cause is corrected: sign again at once */
    return rc;
}

static void log_retry(ddb_client *c, const ddb__call *call, int attempt, int64_t delay_ms,
                      const attempt_result *out, int rc)
{
    if (!ddb__client_log_enabled(c, DDB_LOG_DEBUG))
        return;
    char a[16], d[24];
    snprintf(a, sizeof a, "%d", attempt + 1);
    snprintf(d, sizeof d, "%lld", (long long)delay_ms);
    ddb_log_field f[] = {
        { "operation", call->operation },
        { "attempt", a },
        { "delay_ms", d },
        { "error", out->aws_type[0] ? out->aws_type : ddb_error_name(rc) },
    };
    ddb__client_log(c, DDB_LOG_DEBUG, DDB_EVENT_NONE, "dynalock.ddb", "retrying a request", f, 4);
}

/* Fills err with the final failure of a call and returns the error.type for telemetry.
 * A write with an attempt in doubt ends in DDB_EINDOUBT unless its last failure is one the
 * first attempt would have met as well (doubt_settled). */
static const char *call_error(const ddb__call *call, int *rcp, const attempt_result *out,
                              const ddb_error *aerr, int retries, const doubt *d,
                              ddb_error *err)
{
    int rc = *rcp;
    if (rc == DDB_ECANCELED && d->lost && op_writes(call->operation)) {
        ddb__fail(err, rc, "%s was cancelled after an attempt was sent; it may or may not "
                  "have been applied", call->operation);
        if (err)
            err->retries = retries;
        return ddb_error_name(rc);
    }
    if (d->lost && rc != DDB_ECANCELED && op_writes(call->operation) && !doubt_settled(call, rc)) {
        *rcp = DDB_EINDOUBT;
        const char *last = out->aws_type[0] ? (out->message[0] ? out->message : out->aws_type)
                                            : aerr->message[0] ? aerr->message
                                                               : ddb_error_string(rc);
        ddb__fail(err, DDB_EINDOUBT,
                  "%s may or may not have been applied: the answer to an attempt was lost "
                  "(%s)%s%s", call->operation, d->what,
                  retries > 0 ? "; the last attempt: " : "", retries > 0 ? last : "");
        if (err) {
            snprintf(err->aws_type, sizeof err->aws_type, "%s", out->aws_type);
            err->http_status = (int)out->http.status;
            snprintf(err->request_id, sizeof err->request_id, "%s", out->http.request_id);
            err->retries = retries;
        }
        return ddb_error_name(DDB_EINDOUBT);
    }
    const char *etype;
    if (out->aws_type[0]) {
        ddb__fail(err, rc, "%s", out->message[0] ? out->message : out->aws_type);
        if (err) {
            snprintf(err->aws_type, sizeof err->aws_type, "%s", out->aws_type);
            err->http_status = (int)out->http.status;
            snprintf(err->request_id, sizeof err->request_id, "%s", out->http.request_id);
        }
        etype = out->aws_type;
    } else {
        if (err) {
            *err = *aerr;
            err->code = rc;
            if (out->http.status) {
                err->http_status = (int)out->http.status;
                snprintf(err->request_id, sizeof err->request_id, "%s", out->http.request_id);
                if (!aerr->message[0])
                    snprintf(err->message, sizeof err->message,
                             "%s failed with HTTP status %ld", call->operation, out->http.status);
            }
        }
        etype = ddb_error_name(rc);
    }
    if (err)
        err->retries = retries;
    return etype;
}

/* ------------------------------------------------------------------ tables */

ddb_table *ddb_table_open(ddb_client *c, const char *name, const char *pk, const char *sk,
                          ddb_error *err)
{
    ddb__err_reset(err);
    if (!c || !name || !*name || !pk || !*pk || (sk && !*sk)) {
        ddb__fail(err, DDB_EINVAL, "a table needs a client, a name and a partition key");
        return NULL;
    }
    size_t nl = strlen(name);
    if (nl < TABLE_NAME_MIN || nl > TABLE_NAME_MAX) {
        ddb__fail(err, DDB_EINVAL, "the table name '%.255s' must be %d to %d characters", name,
                  TABLE_NAME_MIN, TABLE_NAME_MAX);
        return NULL;
    }
    ddb_table *t = calloc(1, sizeof *t);
    if (!t || !(t->name = strdup(name)) || !(t->pk = strdup(pk)) || (sk && !(t->sk = strdup(sk)))) {
        ddb_table_close(t);
        ddb__fail(err, DDB_ENOMEM, "out of memory");
        return NULL;
    }
    t->client = c;
    return t;
}

void ddb_table_close(ddb_table *t)
{
    if (!t)
        return;
    free(t->name);
    free(t->pk);
    free(t->sk);
    free(t);
}

const char *ddb_table_name(const ddb_table *t) { return t ? t->name : NULL; }
const char *ddb_table_pk(const ddb_table *t) { return t ? t->pk : NULL; }
const char *ddb_table_sk(const ddb_table *t) { return t ? t->sk : NULL; }
ddb_client *ddb_table_client(const ddb_table *t) { return t ? t->client : NULL; }

/* ------------------------------------------------------------- JSON helpers */

json_object *ddb__jadd(json_object *o, const char *key, json_object *v)
{
    if (!o || !v || json_object_object_add(o, key, v) != 0) {
        json_object_put(v);
        return NULL;
    }
    return v;
}

bool ddb__jadd_str(json_object *o, const char *key, const char *s)
{
    json_object *v = json_object_new_string(s);
    if (!v || json_object_object_add(o, key, v) != 0) {
        json_object_put(v);
        return false;
    }
    return true;
}

int ddb__jadd_expr(json_object *o, ddb_names names, const ddb_item *values, ddb_error *err)
{
    if (names && names[0]) {
        json_object *n = json_object_new_object();
        if (!n)
            return ddb__fail(err, DDB_ENOMEM, "out of memory");
        for (size_t i = 0; names[i]; i += 2) {
            if (!names[i + 1]) {
                json_object_put(n);
                return ddb__fail(err, DDB_EINVAL, "expression name '%.64s' has no attribute", names[i]);
            }
            if (!ddb__jadd_str(n, names[i], names[i + 1])) {
                json_object_put(n);
                return ddb__fail(err, DDB_ENOMEM, "out of memory");
            }
        }
        if (json_object_object_add(o, "ExpressionAttributeNames", n) != 0) {
            json_object_put(n);
            return ddb__fail(err, DDB_ENOMEM, "out of memory");
        }
    }
    if (values && values->n > 0)
        return ddb__jadd_item(o, "ExpressionAttributeValues", values, err);
    return 0;
}

int ddb__jadd_item(json_object *o, const char *key, const ddb_item *it, ddb_error *err)
{
    json_object *j = ddb__item_to_jobj(it);
    if (!j || json_object_object_add(o, key, j) != 0) {
        json_object_put(j);
        return ddb__fail(err, DDB_ENOMEM, "out of memory");
    }
    return 0;
}

int ddb__jget_item(json_object *o, const char *key, ddb_item **out, ddb_error *err)
{
    json_object *j;
    *out = NULL;
    if (!o || !json_object_object_get_ex(o, key, &j) || json_object_is_type(j, json_type_null))
        return 0;
    ddb_item *it = ddb__item_from_jobj(j, err);
    if (!it)
        return err && err->code ? err->code : DDB_EPROTOCOL;
    *out = it;
    return 0;
}

/* ---------------------------------------------------------- the request loop */

/* The client's scheduler and its asynchronous transfers, made on first use. */
ddb__sched *ddb__client_sched(ddb_client *c, ddb_error *err)
{
    pthread_mutex_lock(&c->sched_mu);
    if (!c->sched) {
        c->async = ddb__http_async_new(c->http, err);
        if (c->async) {
            c->sched = ddb__sched_new(c->clock, &ddb__http_async_io, c->async, err);
            if (!c->sched) {
                ddb__http_async_free(c->async);
                c->async = NULL;
            }
        }
    }
    ddb__sched *s = c->sched;
    pthread_mutex_unlock(&c->sched_mu);
    return s;
}

/* One call and its attempts, in the client's one request loop. Its steps -- areq_step
 * (the rate limit, credentials, signing, the POST), areq_answer (the attempt's outcome,
 * the retry decision and its backoff) and areq_finish (the final error, the outcome in
 * doubt, the span) -- run under one of two drivers, as libcurl's easy interface is its
 * multi interface plus a wait:
 * - asynchronous (ddb__client_start): on the scheduler's thread; a wait is a task on the
 *   client's clock, the POST a transfer on the shared multi handle, and the cancel token
 *   aborts through a callback it registers;
 * - blocking (areq_run: ddb__client_send_text, ddb_client_call): on the caller's thread;
 *   a wait is ddb_clock_sleep with the caller's token and the POST http.c's transfer plus
 *   a wait, so a fake clock sees the call as busy in flight and parked in its backoff. */
struct ddb__areq {
    ddb_client *c;
    ddb__call call;
    bool blocking;                /* driven by areq_run on the caller's thread */
    bool done;                    /* blocking: finished, with rc and out for the caller */
    int rc;
    char *op, *table;             /* asynchronous: the call's strings, copied */
    const char *body;
    char *owned_body;             /* asynchronous: the body, taken */
    size_t len;
    ddb_cancel *cancel;           /* asynchronous: referenced; blocking: borrowed */
    long cancel_reg;
    int64_t start_ns;
    uint64_t span;
    int attempt, retries, last_cost;
    int64_t sleep_ms;             /* blocking: the wait before the next step */
    attempt_result out;
    ddb_error aerr;
    ddb_error *err;               /* blocking: the caller's error (may be NULL) */
    doubt doubt;                  /* an attempt whose answer was lost */
    ddb__http_xfer *xfer;         /* asynchronous: the attempt in flight, or NULL */
    ddb__task step;               /* asynchronous: starts the next attempt */
    ddb__task stop;               /* asynchronous: the cancel token was set: abort */
    bool limited;                 /* waited for the rate limit before this attempt */
    ddb__reply_fn reply;
    void *arg;
};

static void areq_free(ddb__areq *r)
{
    attempt_cleanup(&r->out);
    ddb_cancel_unref(r->cancel);
    free(r->op);
    free(r->table);
    free(r->owned_body);
    free(r);
}

/* The next step in delay_ms: a task on the clock, or the blocking driver's sleep. */
static int areq_later(ddb__areq *r, int64_t delay_ms)
{
    if (r->blocking) {
        r->sleep_ms = delay_ms;
        return 0;
    }
    return ddb__sched_at(r->c->sched, &r->step,
                         ddb_clock_mono_ns(r->c->clock) + delay_ms * 1000000);
}

static void areq_finish(ddb__areq *r, int rc)
{
    ddb_client *c = r->c;
    if (!r->blocking) {
        ddb__sched_cancel(c->sched, &r->step);
        if (r->cancel_reg > 0)
            ddb_cancel_off(r->cancel, r->cancel_reg); /* after this, on_cancel does not run */
        r->cancel_reg = 0;
        ddb__sched_cancel(c->sched, &r->stop);
    }
    ddb_error local;
    if (!r->blocking)
        ddb_error_clear(&local);
    ddb_error *err = r->blocking ? r->err : &local;
    const char *etype = rc != 0 ? call_error(&r->call, &rc, &r->out, &r->aerr, r->retries,
                                             &r->doubt, err) : NULL;
    span_finish(c, r->span, &r->call, r->start_ns, etype, r->retries);
    if (r->blocking) {
        r->rc = rc;
        r->done = true; /* the driver hands out what the call keeps */
        return;
    }
    json_object *body = rc == 0 || r->out.body ? r->out.body : NULL;
    r->out.body = NULL;
    r->reply(r->arg, rc, body, r->retries, &local);
    json_object_put(body);
    areq_free(r);
}

/* The call ends because its token was set while it waited to (re)try. */
static void areq_cancelled(ddb__areq *r)
{
    attempt_cleanup(&r->out);
    memset(&r->out, 0, sizeof r->out);
    areq_finish(r, ddb__fail(&r->aerr, DDB_ECANCELED,
                             r->limited ? "%s was cancelled while waiting for the client's "
                                          "rate limit"
                             : r->attempt > 0 ? "%s was cancelled while waiting to retry"
                                              : "%s was cancelled before it was sent",
                             r->call.operation));
}

/* The end of an attempt: rc and resp from the transport (resp's body is taken), or the
 * failure to get credentials or to sign. */
static void areq_answer(void *arg, int rc, ddb__http_response *resp, ddb_error *err)
{
    ddb__areq *r = arg;
    r->xfer = NULL;
    r->out.http = *resp;
    *resp = (ddb__http_response){ 0 }; /* the attempt keeps the body */
    if (rc != 0 && err != &r->aerr)
        r->aerr = *err;
    /* The blocking driver's transport watches the token itself and says how it ended. */
    if (rc == DDB_ECANCELED || (!r->blocking && ddb_cancel_is_set(r->cancel))) {
        if (r->out.http.sent)
            doubt_note(&r->doubt, DDB_ECANCELED, &r->aerr);
        areq_finish(r, r->blocking ? DDB_ECANCELED
                                   : ddb__fail(&r->aerr, DDB_ECANCELED,
                                               "%s was cancelled in flight", r->call.operation));
        return;
    }
    bool retry;
    int64_t delay_ms;
    rc = attempt_outcome(r->c, r->attempt, rc, &r->out, &r->aerr, &r->last_cost, &retry,
                         &delay_ms, &r->doubt);
    if (rc == 0 || !retry) {
        areq_finish(r, rc);
        return;
    }
    log_retry(r->c, &r->call, r->attempt, delay_ms, &r->out, rc);
    r->retries++;
    r->attempt++;
    if (areq_later(r, delay_ms) != 0)
        areq_finish(r, rc);
}

static void areq_step(void *arg)
{
    ddb__areq *r = arg;
    ddb_client *c = r->c;
    if (ddb_cancel_is_set(r->cancel)) {
        areq_cancelled(r);
        return;
    }
    /* Adaptive mode: the client's own rate limit, as a wait on the clock. */
    if (c->limiter && !r->limited) {
        int64_t wait_ms = ddb__rate_limiter_acquire(c->limiter, ddb_clock_mono_ns(c->clock));
        if (wait_ms > 0) {
            r->limited = true;
            if (areq_later(r, wait_ms) == 0)
                return;
        }
    }
    r->limited = false;
    attempt_cleanup(&r->out);
    memset(&r->out, 0, sizeof r->out);
    ddb_error_clear(&r->aerr);
    ddb__credentials cred = { 0 };
    int rc = ddb__cred_get(c->creds, &cred, r->cancel, &r->aerr);
    ddb__signed s = { 0 };
    if (rc == 0) {
        int64_t epoch_s = (ddb_clock_wall_ms(c->clock) + atomic_load(&c->skew_ms)) / 1000;
        rc = ddb__client_sign(c, r->call.operation, r->body, r->len, &cred, epoch_s, &s, &r->aerr);
        ddb__credentials_cleanup(&cred);
    }
    ddb__http_response none = { 0 };
    if (rc != 0) {
        /* Judged as an attempt that sent nothing (a network failure of a provider is
         * retried as the POST's would be). */
        areq_answer(r, rc, &none, &r->aerr);
        return;
    }
    if (r->blocking) {
        /* The transfer plus its wait, on this thread; the answer comes back here. */
        rc = ddb__http_post(c->http, s.lines, s.n_lines, r->body, r->len, r->cancel, &none,
                            &r->aerr);
        ddb__signed_cleanup(&s);
        areq_answer(r, rc, &none, &r->aerr);
        return;
    }
    rc = ddb__http_async_start(c->async, s.lines, s.n_lines, r->body, r->len, areq_answer, r,
                               &r->xfer, &r->aerr);
    ddb__signed_cleanup(&s);
    if (rc != 0)
        areq_finish(r, rc);
}

static void areq_stop(void *arg)
{
    ddb__areq *r = arg;
    if (r->xfer)
        ddb__http_async_abort(r->c->async, r->xfer); /* answers with DDB_ECANCELED */
    else if (r->step.queued)
        areq_step(r); /* in backoff: it sees the token and ends */
}

static void areq_on_cancel(void *arg)
{
    ddb__areq *r = arg;
    ddb__sched_at(r->c->sched, &r->stop, INT64_MIN);
}

int ddb__client_start(ddb_client *c, const ddb__call *call, char *body, size_t len,
                      ddb_cancel *cancel, ddb__reply_fn reply, void *arg, ddb_error *err)
{
    ddb__areq *r = calloc(1, sizeof *r);
    if (!r || !ddb__client_sched(c, err)) {
        free(r);
        free(body);
        return err && err->code ? err->code : ddb__fail(err, DDB_ENOMEM, "out of memory");
    }
    r->c = c;
    r->op = strdup(call->operation);
    r->table = call->table ? strdup(call->table) : NULL;
    r->body = r->owned_body = body;
    r->len = len;
    if (!r->op || (call->table && !r->table)) {
        areq_free(r);
        return ddb__fail(err, DDB_ENOMEM, "out of memory");
    }
    r->call = (ddb__call){ .operation = r->op, .table = r->table };
    r->cancel = cancel ? ddb_cancel_ref(cancel) : NULL;
    r->reply = reply;
    r->arg = arg;
    r->step = (ddb__task){ .fn = areq_step, .arg = r };
    r->stop = (ddb__task){ .fn = areq_stop, .arg = r };
    r->start_ns = ddb_clock_mono_ns(c->clock);
    r->span = span_begin(c, &r->call);
    if (cancel) {
        long reg = ddb_cancel_on(cancel, areq_on_cancel, r);
        if (reg < 0) {
            span_finish(c, r->span, &r->call, r->start_ns, ddb_error_name(DDB_ENOMEM), 0);
            areq_free(r);
            return ddb__fail(err, DDB_ENOMEM, "out of memory");
        }
        r->cancel_reg = reg;
    }
    if (ddb__sched_at(c->sched, &r->step, INT64_MIN) != 0) {
        if (r->cancel_reg > 0)
            ddb_cancel_off(cancel, r->cancel_reg);
        ddb__sched_cancel(c->sched, &r->stop);
        span_finish(c, r->span, &r->call, r->start_ns, ddb_error_name(DDB_ENOMEM), 0);
        areq_free(r);
        return ddb__fail(err, DDB_ENOMEM, "out of memory");
    }
    return 0;
}

/* The blocking driver: the same steps on the caller's thread, each wait a sleep on the
 * client's clock with the caller's token. *out keeps the last attempt's answer (its
 * parsed and raw bodies) for the caller; err gets the final error. */
static int areq_run(ddb_client *c, const ddb__call *call, const char *body, size_t len,
                    ddb_cancel *cancel, attempt_result *out, int *retries, ddb_error *err)
{
    ddb__areq r = { .c = c, .call = *call, .blocking = true, .body = body, .len = len,
                    .cancel = cancel, .err = err };
    r.start_ns = ddb_clock_mono_ns(c->clock);
    r.span = span_begin(c, &r.call);
    areq_step(&r);
    while (!r.done) {
        if (ddb_clock_sleep(c->clock, r.sleep_ms, cancel) != 0)
            areq_cancelled(&r);
        else
            areq_step(&r);
    }
    *out = r.out;
    if (retries)
        *retries = r.retries;
    return r.rc;
}

int ddb__client_send_text(ddb_client *c, const ddb__call *call, const char *body, size_t len,
                          json_object **resp, ddb_cancel *cancel, int *retries, ddb_error *err)
{
    *resp = NULL;
    if (retries)
        *retries = 0;
    if (!body)
        return ddb__fail(err, DDB_ENOMEM, "out of memory");
    attempt_result r;
    int rc = areq_run(c, call, body, len, cancel, &r, retries, err);
    *resp = r.body;
    r.body = NULL;
    attempt_cleanup(&r);
    return rc;
}

int ddb__client_send(ddb_client *c, const ddb__call *call, json_object *req,
                     json_object **resp, ddb_cancel *cancel, int *retries, ddb_error *err)
{
    size_t len = 0;
    const char *body = json_object_to_json_string_length(
        req, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, &len);
    return ddb__client_send_text(c, call, body, len, resp, cancel, retries, err);
}

int ddb_client_call(ddb_client *c, const char *operation, const char *request_json,
                    char **response_json, ddb_cancel *cancel, ddb_error *err)
{
    ddb__err_reset(err);
    if (response_json)
        *response_json = NULL;
    if (!c || !operation || !request_json || !*operation ||
        strlen(operation) > CLIENT_OPERATION_MAX)
        return ddb__fail(err, DDB_EINVAL, "ddb_client_call needs a client, an operation and a body");
    DDB__CALL_SCOPE(c->clock);
    ddb__call call = { .operation = operation };
    attempt_result r;
    int rc = areq_run(c, &call, request_json, strlen(request_json), cancel, &r, NULL, err);
    if (response_json && r.http.body) {
        *response_json = r.http.body;
        r.http.body = NULL;
    }
    attempt_cleanup(&r);
    return rc;
}
