/* internal.h: libddb's internal interfaces between its modules. What lib/coord may use
 * of them is in ddb_private.h (included here); lib/coord never includes this file.
 * Nothing here is exported from the shared library. */
#ifndef DDB_INTERNAL_H
#define DDB_INTERNAL_H

#ifdef DDB_COORD_SOURCE
#error "lib/coord uses ddb_private.h, not lib/ddb/internal.h"
#endif

#include "ddb_private.h"

#include <dynalock/ddb.h>
#include <stdarg.h>

/* ---- errors (error.c); ddb__fail is in ddb_private.h */
/* Maps an AWS error type ("ConditionalCheckFailedException", also with a
 * "namespace#" prefix or ":detail" suffix) to a DDB_E* code; with no known type, the HTTP
 * status decides (403 -> DDB_EACCESS, 0 -> DDB_ENETWORK, else DDB_ESERVICE). */
int ddb__code_for_aws_type(const char *aws_type, int http_status);

/* ---- clock (clock.c); waits and a call's scope are in ddb_private.h */
/* Declares that the calling thread, woken by a fake clock advance, has finished the work
 * the advance released without waiting on the clock again (e.g. a library call returns
 * to its caller). No effect on other clocks or on threads not woken by an advance. */
void ddb__clock_thread_idle(ddb_clock *c);
/* Fake clock: moves its wall time alone by ms (either way), as an NTP step or an
 * operator's date(1) would; monotonic time and waits are untouched. For the simulator. */
int ddb__fake_clock_jump_wall(ddb_clock *c, int64_t ms);
/* Fake clock: settle of its schedulers alone (not of the threads that wait on it), for a
 * caller inside a library call on that clock, which the whole settle would wait for. */
int ddb__fake_clock_settle_schedulers(ddb_clock *c, int64_t real_timeout_ms);
/* Timers behind ddb_cancel_after: sets `cancel` once the clock reaches deadline_mono_ns.
 * The clock keeps no reference to the token (a freed token's timers are removed
 * through its links). Fake clocks fire timers inside
 * ddb_fake_clock_advance, on the advancing thread; other clocks on one timer thread per
 * clock, started when needed and joined. Returns a timer id > 0, 0 when the deadline
 * has passed already (nothing added: the caller sets the token), or DDB_ENOMEM. */
struct ddb__timer_sched_ops;
long ddb__clock_timer_add(ddb_clock *c, int64_t deadline_mono_ns, ddb_cancel *cancel,
                          const struct ddb__timer_sched_ops *ops);
void ddb__clock_timer_remove(ddb_clock *c, long id);

/* ---- cancel (cancel.c, which calls no other file of the library) */
/* Takes a reference unless the token's count already reached zero (it is being freed):
 * lets a holder of a weak pointer (a timer) use the token safely. true when taken. */
bool ddb__cancel_try_ref(ddb_cancel *c);
/* Something a token keeps until it is set or freed (ddb_cancel_after's timers, which
 * live in clock.c): `drop` runs when the token is set, under its lock, and may run again
 * (it undoes once); `release` runs when the token is freed, and frees the link. */
typedef struct ddb__cancel_link {
    struct ddb__cancel_link *next;
    void (*drop)(struct ddb__cancel_link *l);
    void (*release)(struct ddb__cancel_link *l);
} ddb__cancel_link;
/* The token's lock, held around a push and whatever must not race with a set or a free
 * (the timer's creation). */
void ddb__cancel_lock(ddb_cancel *c);
void ddb__cancel_unlock(ddb_cancel *c);
/* Under the token's lock: adds l; removes it again while it is still the last added. */
void ddb__cancel_link_push_locked(ddb_cancel *c, ddb__cancel_link *l);
void ddb__cancel_link_pop_locked(ddb_cancel *c, ddb__cancel_link *l);

/* ---- credentials (credentials.c) */
typedef struct ddb__credentials {
    char *access_key_id;
    char *secret_access_key;
    char *session_token;     /* NULL when none */
    int64_t expires_wall_ms; /* 0 = never */
} ddb__credentials;
typedef struct ddb__cred_provider ddb__cred_provider;
/* The standard chain: explicit (opts), environment, shared files (profile), container
 * (AWS_CONTAINER_CREDENTIALS_FULL_URI / _RELATIVE_URI with AWS_CONTAINER_AUTHORIZATION_TOKEN
 * or _FILE), IMDSv2. Resolution is lazy. */
struct ddb__settings;
/* settings: the client's, resolved once (NULL: resolved here from opts). */
ddb__cred_provider *ddb__cred_provider_new(const ddb_client_options *opts,
                                           const struct ddb__settings *settings,
                                           ddb_clock *clock, ddb_error *err);
void ddb__cred_provider_free(ddb__cred_provider *p);
/* Copies current credentials into out (caller frees with ddb__credentials_cleanup),
 * refreshing those that expire within 5 minutes. DDB_ECREDENTIALS when none found. */
int ddb__cred_get(ddb__cred_provider *p, ddb__credentials *out, ddb_cancel *cancel,
                  ddb_error *err);
void ddb__credentials_cleanup(ddb__credentials *c);
/* Wipes the secret s, then frees it; NULL is fine. */
void ddb__free_secret(char *s);
/* Region from the shared config for a profile (malloc'd) or NULL. profile NULL means
 * AWS_PROFILE or "default". */
char *ddb__profile_region(const char *profile);
/* Tests only: the base URL that AWS_CONTAINER_CREDENTIALS_RELATIVE_URI is resolved
 * against (default http://169.254.170.2); NULL restores the default. Not thread-safe. */
void ddb__cred_set_container_base(const char *base_url);
/* Where the current credentials came from ("explicit", "environment", "shared-files",
 * "container", "imds"), or "" when none were resolved yet. Borrowed, static text. */
const char *ddb__cred_source(ddb__cred_provider *p);

/* ---- shared config and credentials files, settings (config.c) */
enum { DDB__SEC_PROFILE = 1, DDB__SEC_SSO_SESSION, DDB__SEC_SERVICES };
typedef struct ddb__config ddb__config;
/* A non-empty environment variable or NULL; "true" in any case. */
const char *ddb__env(const char *name);
bool ddb__truthy(const char *v);
/* A path from an environment variable (with "~/" expanded) or $HOME/.aws/<name>. */
char *ddb__aws_file_path(const char *env, const char *name);
/* Reads AWS_SHARED_CREDENTIALS_FILE (or ~/.aws/credentials) then AWS_CONFIG_FILE (or
 * ~/.aws/config); missing files are empty. NULL only when out of memory. */
ddb__config *ddb__config_load(void);
void ddb__config_free(ddb__config *c);
/* Why a config or credentials file was not read (too large), or NULL. */
const char *ddb__config_problem(const ddb__config *c);
/* Whether a section of that kind and name exists in either file. */
bool ddb__config_has(const ddb__config *c, int kind, const char *name);
/* A non-empty value (borrowed) of a section: the credentials file wins for profiles; a
 * nested key is "parent.key". NULL when c, name or the key is missing. */
const char *ddb__config_get(const ddb__config *c, int kind, const char *name, const char *key);
/* The profile in use: the option, else AWS_PROFILE, else "default"; and whether one was
 * named (a named profile that does not exist is an error; "default" may be absent). */
const char *ddb__config_profile_name(const char *explicit_profile);
bool ddb__config_profile_named(const char *explicit_profile);
/* botocore's rule: a region is a valid host label. */
bool ddb__region_valid(const char *region);
/* A service's endpoint (service_id as in AWS_ENDPOINT_URL_<ID>: "DynamoDB", "STS",
 * "SSO"): configured URLs first (environment, services section, profile), else the
 * regional endpoint with FIPS / dual-stack and the partition's domain. *out malloc'd. */
int ddb__config_endpoint(const ddb__config *cfg, const char *profile, const char *service_id,
                         const char *region, char **out, ddb_error *err);
/* "aws", "aws-cn", "aws-us-gov", "aws-iso", "aws-iso-b", "aws-iso-e", "aws-iso-f". */
const char *ddb__partition_name(const char *region);
/* AWS_CA_BUNDLE, else the profile's ca_bundle (malloc'd), or NULL. */
char *ddb__config_ca_bundle(const ddb__config *cfg, const char *profile);

/* What a client's creation reads of its options, the environment and the shared files,
 * resolved at once with one read of the files (config.c); the client and its credentials
 * provider read this struct, never the files again. */
typedef struct ddb__settings {
    char *profile;           /* the option, else AWS_PROFILE, else "default" */
    bool profile_named;      /* given by the option or AWS_PROFILE */
    bool profile_found;      /* in the shared config or credentials file */
    char *region;            /* option, AWS_REGION, AWS_DEFAULT_REGION, the profile's,
                                us-east-1; a valid host label */
    const char *region_from; /* which of those (static text) */
    char *endpoint;          /* the option, else the configured or regional endpoint */
    char *ca_bundle;         /* AWS_CA_BUNDLE, else the profile's ca_bundle; or NULL */
    int max_attempts;        /* AWS_MAX_ATTEMPTS, else the profile's; 0 when neither */
    bool retry_adaptive;     /* AWS_RETRY_MODE, else the profile's retry_mode, "adaptive" */
} ddb__settings;
/* Fills out (o may be NULL: the defaults); 0, or an error (a region that is not a host
 * label, an endpoint that cannot be made: DDB_EINVAL). Clean up with
 * ddb__settings_cleanup. */
int ddb__settings_resolve(const ddb_client_options *o, ddb__settings *out, ddb_error *err);
void ddb__settings_cleanup(ddb__settings *s);

/* ---- one HTTP request (http.c): the blocking request the credential providers and
 * the testing library's server clock send. The client's own POSTs take the same path
 * through a pool (client.h). */
/* What a request not told otherwise allows itself. */
#define DDB__HTTP_CONNECT_TIMEOUT_MS DDB__DEFAULT_CONNECT_TIMEOUT_MS
#define DDB__HTTP_REQUEST_TIMEOUT_MS DDB__DEFAULT_REQUEST_TIMEOUT_MS
#define DDB__HTTP_MAX_ANSWER ((size_t)1 << 20)
/* The cap of a DynamoDB answer to the client. The largest DynamoDB sends are a
 * BatchGetItem's (16 MB of items) and a TransactGetItems' (4 MB); past this, the answer
 * is not DynamoDB's and is refused rather than held in memory whole. */
#define DDB__CLIENT_MAX_ANSWER ((size_t)64 << 20)
/* A connection kept between requests (an easy handle on a multi handle of its own).
 * One thread at a time. */
typedef struct ddb__http_conn ddb__http_conn;
ddb__http_conn *ddb__http_conn_new(ddb_error *err);
void ddb__http_conn_free(ddb__http_conn *c);
typedef struct ddb__http_request {
    const char *method;              /* NULL: "GET" without a body, "POST" with one */
    const char *url;
    const char *const *headers;      /* "Name: value" lines, copied */
    size_t n_headers;
    const char *body;                /* NULL: none */
    size_t body_len;
    int64_t connect_timeout_ms;      /* 0: DDB__HTTP_CONNECT_TIMEOUT_MS */
    int64_t timeout_ms;              /* the whole request; 0: DDB__HTTP_REQUEST_TIMEOUT_MS */
    size_t max_answer;               /* the body's cap in bytes; 0: DDB__HTTP_MAX_ANSWER */
    const char *ca_bundle;           /* CURLOPT_CAINFO, or NULL for the system's */
    bool no_proxy;                   /* never through a proxy (metadata endpoints) */
    const char *resolve;             /* a CURLOPT_RESOLVE entry ("host:port:addr"), or NULL */
    const char *const *want_headers; /* names (no colon, any case) whose values to keep */
    size_t n_want_headers;
} ddb__http_request;
typedef struct ddb__http_answer {
    long status;
    char *body;                      /* malloc'd, NUL-terminated */
    size_t len;
    char **header_values;            /* one per wanted header, whole (malloc'd), NULL when
                                      * absent; the last of a repeated header */
    size_t n_header_values;
} ddb__http_answer;
/* Sends r on conn (NULL: a connection made for this request alone) and waits for the
 * answer, or until cancel is set (its eventfd is polled beside the sockets). 0 when an
 * answer of any status arrived (out filled; free with ddb__http_answer_cleanup), else
 * DDB_ECANCELED, DDB_ETIMEDOUT, DDB_ENETWORK, DDB_EPROTOCOL (the answer is larger than
 * the cap), DDB_EINVAL, DDB_ENOMEM, DDB_EIO with err filled and out empty. Any thread;
 * conn one thread at a time. */
int ddb__http_send(ddb__http_conn *conn, const ddb__http_request *r, ddb_cancel *cancel,
                           ddb__http_answer *out, ddb_error *err);
void ddb__http_answer_cleanup(ddb__http_answer *a);

/* ---- credential providers (cred_*.c), walked by the chain in credentials.c. Each
 * returns 0 with out filled, or a DDB_E* code with ctx->err's message naming the
 * provider. None logs or puts a secret in an error. */
typedef struct ddb__cred_ctx {
    const ddb__config *cfg;
    const char *region;     /* for STS and the partition */
    const char *ca_bundle;  /* for STS and SSO (not metadata endpoints), or NULL */
    ddb_clock *clock;
    ddb_cancel *cancel;
    ddb_error *err;
} ddb__cred_ctx;
/* Sets out (copies); false when out of memory. */
bool ddb__creds_set(ddb__credentials *out, const char *akid, const char *secret,
                    const char *token, int64_t expires_wall_ms);
/* Whether s may be an HTTP header value: no control character but the tab (no CR, no
 * LF, no NUL), as RFC 9110 says. */
bool ddb__header_value_ok(const char *s);
struct json_object;
/* The text of a JSON string value, or NULL when v is not a string or holds a NUL
 * ("\u0000"), which C would silently cut the value at: a key "A\u0000B" is not "A". */
const char *ddb__json_text(struct json_object *v);
/* 0 when the access key id and session token of c can be sent as header values; else
 * c is cleared and the error (DDB_ECREDENTIALS) names `source` and the field, never
 * the value. */
int ddb__creds_check(ddb__credentials *c, const char *source, ddb_error *err);
/* The parsers of the providers' answers, each on its own for the fuzz targets:
 * the container and IMDS JSON (false when it holds no credentials), the output of a
 * credential_process, SSO's GetRoleCredentials answer (0, or an error naming `what`). */
bool ddb__parse_cred_json(const char *body, ddb__credentials *out);
int ddb__cred_process_parse(const ddb__cred_ctx *ctx, const char *what, const char *text,
                            ddb__credentials *out);
int ddb__sso_role_credentials(const ddb__cred_ctx *ctx, const char *what, const char *body,
                              ddb__credentials *out);
struct json_object;
/* Reads an SSO token cache file's text: *o the parsed JSON (json_object_put it, whatever
 * the result), *token its accessToken and *expires its expiresAt (borrowed from *o), and
 * *expires_ms that time. true when both are there and the time parses. */
bool ddb__sso_cache_parse(const char *text, struct json_object **o, const char **token,
                          const char **expires, int64_t *expires_ms);
/* One HTTP request of a provider. `metadata`: a link-local/loopback metadata endpoint
 * (short timeouts, never through a proxy); `resolve` a CURLOPT_RESOLVE entry pinning the
 * address checked, or NULL. Returns the status (0: no answer; why in transport_err). */
typedef struct ddb__cred_http_req {
    const char *method, *url;
    const char *const *headers;
    size_t n_headers;
    const char *body;
    bool metadata;
    const char *resolve;
} ddb__cred_http_req;
long ddb__cred_http(const ddb__cred_ctx *ctx, const ddb__cred_http_req *r, char **body,
                    char *transport_err, size_t n);
/* "2024-01-02T03:04:05Z" (fraction, offset allowed) in ms since the epoch; 0 when bad. */
int64_t ddb__parse_iso8601_ms(const char *s);
/* The text of the first <tag> inside the first <within> of an XML document, entities
 * decoded (malloc'd), or NULL. */
char *ddb__xml_text(const char *doc, const char *within, const char *tag);
/* Appends key=value, form-encoded, to the malloc'd string *buf, which it grows. false
 * when out of memory. */
bool ddb__form_add(char **buf, const char *key, const char *value);
/* Reads a small text file (at most max bytes) trimmed; NULL with errno set on failure. */
char *ddb__read_small_file(const char *path, size_t max);

/* STS (cred_sts.c): AssumeRoleWithWebIdentity (unsigned) and AssumeRole (signed with
 * src). `what` names the provider in errors. */
typedef struct ddb__assume_role {
    const char *role_arn, *session_name, *external_id;
    int duration_s;         /* 0: STS's default */
    const char *profile;    /* for the STS endpoint settings */
} ddb__assume_role;
int ddb__sts_web_identity(const ddb__cred_ctx *ctx, const char *what,
                          const ddb__assume_role *a, const char *token_file,
                          ddb__credentials *out);
int ddb__sts_assume_role(const ddb__cred_ctx *ctx, const char *what, const ddb__assume_role *a,
                         const ddb__credentials *src, ddb__credentials *out);
/* credential_process (cred_process.c): runs command with sh -c, bounded in time. */
int ddb__cred_process(const ddb__cred_ctx *ctx, const char *profile, const char *command,
                      ddb__credentials *out);
/* Tests only: the time a credential_process may take (default 60 s). */
void ddb__cred_set_process_timeout_ms(int64_t ms);
/* SSO (cred_sso.c): the cached token of the profile's sso_session or sso_start_url, then
 * the portal's GetRoleCredentials. */
int ddb__cred_sso(const ddb__cred_ctx *ctx, const char *profile, ddb__credentials *out);
/* The container endpoint's host check (credentials.c): an http URL's host must resolve
 * only to loopback or the ECS/EKS addresses. 0 and a CURLOPT_RESOLVE entry in
 * resolve (malloc'd, NULL for https), or DDB_ECREDENTIALS with err filled. */
int ddb__container_url_check(const char *url, char **resolve, ddb_error *err);

/* ---- the client's policy (retry.c): what a zero option means, written here only, and
 * the options resolved against it once, when a client is made */
#define DDB__DEFAULT_CONNECT_TIMEOUT_MS 3000
#define DDB__DEFAULT_REQUEST_TIMEOUT_MS 30000
#define DDB__DEFAULT_MAX_CONNECTIONS 32
#define DDB__DEFAULT_MAX_ATTEMPTS 3
#define DDB__DEFAULT_BASE_DELAY_MS 50
#define DDB__DEFAULT_MAX_BACKOFF_MS 20000
#define DDB__DEFAULT_RETRY_QUOTA 500
typedef struct ddb__policy {
    int64_t connect_timeout_ms, request_timeout_ms;
    int max_connections;
    int max_attempts;        /* the option, else AWS_MAX_ATTEMPTS / the profile, else 3 */
    int64_t base_delay_ms, max_backoff_ms;
    int retry_quota;         /* < 0: no quota */
} ddb__policy;
/* Resolves o (NULL: all defaults) with the defaults above; max_attempts, when o leaves
 * it 0, is from_config (ddb__settings.max_attempts) if that is > 0. */
void ddb__policy_resolve(const ddb_client_options *o, int from_config, ddb__policy *out);

/* ---- retry policy (retry.c): AWS SDK "standard" mode */
typedef struct ddb__retry_state ddb__retry_state;  /* one per client: the quota */
/* From retry options alone (NULL: the defaults); see ddb__retry_state_new_policy. */
ddb__retry_state *ddb__retry_state_new(const ddb_retry_options *o);
ddb__retry_state *ddb__retry_state_new_policy(const ddb__policy *p);
void ddb__retry_state_free(ddb__retry_state *s);
/* Whether an attempt's outcome is retryable: http_status (0 = no answer, network
 * failure), aws_type (NULL if none), curl-level transient flag. */
bool ddb__retry_is_retryable(int http_status, const char *aws_type, bool network_error);
bool ddb__retry_is_throttling(const char *aws_type);
/* Before retry number `attempt` (1 = first retry): takes quota, computes the delay with
 * full jitter (rand in [0, min(max_backoff, base * 2^attempt))). Returns false when no
 * more retries are allowed (attempts or quota). */
bool ddb__retry_next(ddb__retry_state *s, int attempt, bool throttling, int64_t *delay_ms);
/* After a success: returns quota per the standard mode (1 token when the call needed no
 * retry, else the 5 tokens of an ordinary retry; see ddb__retry_refund for timeouts). */
void ddb__retry_success(ddb__retry_state *s, bool was_retry);
int ddb__retry_max_attempts(const ddb__retry_state *s);
/* Like ddb__retry_next, with the cost of the standard mode: 10 tokens when the attempt
 * timed out, else 5. *cost (may be NULL) receives the tokens taken, to give back with
 * ddb__retry_refund when the call then succeeds (instead of ddb__retry_success). */
bool ddb__retry_next_cost(ddb__retry_state *s, int attempt, bool throttling, bool timeout,
                          int64_t *delay_ms, int *cost);
void ddb__retry_refund(ddb__retry_state *s, int cost);
/* Tokens left in the quota (-1 when the quota is disabled). */
int ddb__retry_quota_left(ddb__retry_state *s);
/* The full-jitter delay before round `round` of a loop that retries outside the quota
 * (rand in [0, min(max_backoff, base * 2^round))): a batch's unprocessed items, whose
 * rounds end when all is done or the caller cancels, and an STS call of the credential
 * providers, whose state has its own attempts. Takes no quota. */
int64_t ddb__retry_backoff_ms(ddb__retry_state *s, int round);
/* Tests: replaces the random source (of ddb__retry_next and the batch backoff), a
 * function returning a value in [0, 1). */
void ddb__retry_set_random(ddb__retry_state *s, double (*rand_fn)(void *arg), void *arg);

/* ---- adaptive retry mode and clock skew (ratelimit.c), for the request path. Before
 * each attempt: wait ddb__rate_limiter_acquire's ms on the client's clock; after each
 * answer: ddb__rate_limiter_update (throttled = ddb__retry_is_throttling). The bucket
 * limits only after a first throttle. Any thread. */
typedef struct ddb__rate_limiter ddb__rate_limiter;
ddb__rate_limiter *ddb__rate_limiter_new(void);
void ddb__rate_limiter_free(ddb__rate_limiter *r);
int64_t ddb__rate_limiter_acquire(ddb__rate_limiter *r, int64_t now_mono_ns);
void ddb__rate_limiter_update(ddb__rate_limiter *r, bool throttled, int64_t now_mono_ns);
/* The bucket's fill rate (requests per second), 0 while it does not limit. */
double ddb__rate_limiter_fill_rate(ddb__rate_limiter *r);
/* A Date header (IMF-fixdate) in ms since the epoch; 0 when unparsable. */
int64_t ddb__parse_http_date_ms(const char *s);
/* An error type the SDKs correct the clock skew for and retry. */
bool ddb__is_clock_skew_error(const char *aws_type);

#endif
