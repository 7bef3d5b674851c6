/* internal.h: libddb's internal interfaces between its modules, and the few functions
 * it exports for libddb_coord and libddb_testing (marked DDB_API; not public API). */
#ifndef DDB_INTERNAL_H
#define DDB_INTERNAL_H

#include <dynalock/ddb.h>
#include <stdarg.h>

/* ---- errors (error.c) */
/* Fills err (if not NULL) with code and a printf-style message; returns code. The other
 * fields (aws_type, http_status, request_id, retries) are left as they are. */
DDB_API int ddb__fail(ddb_error *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Maps an AWS error type ("ConditionalCheckFailedException", also with a
 * "namespace#" prefix or ":detail" suffix) to a DDB_E* code; with no known type, the HTTP
 * status decides (403 -> DDB_EACCESS, 0 -> DDB_ENETWORK, else DDB_ESERVICE). */
DDB_API int ddb__code_for_aws_type(const char *aws_type, int http_status);

/* ---- clock (clock.c) */
/* Waits until mono deadline on the clock, or cancel is set. Marks the calling thread as
 * waiting for ddb_fake_clock_settle. 0 when the deadline passed, DDB_ECANCELED. */
DDB_API int ddb__clock_wait_until(ddb_clock *c, int64_t deadline_mono_ns, ddb_cancel *cancel);
/* Declares that the calling thread, woken by a fake clock advance, has finished the work
 * the advance released without waiting on the clock again (e.g. a library call returns
 * to its caller). No effect on other clocks or on threads not woken by an advance. */
DDB_API void ddb__clock_thread_idle(ddb_clock *c);
/* A library call that makes several requests and waits on the clock between them (an
 * acquire, an election, a renewal) holds the thread for a fake clock's settle: from
 * ddb__clock_hold to ddb__clock_unhold the thread counts as busy except while it waits
 * on the clock for a deadline not yet due, and the end of each request does not mark it
 * idle (ddb__clock_call_done). Nestable; unhold marks it idle at the outermost level. */
DDB_API void ddb__clock_hold(ddb_clock *c);
DDB_API void ddb__clock_unhold(ddb_clock *c);
/* Fake clock: moves its wall time alone by ms (either way), as an NTP step or an
 * operator's date(1) would; monotonic time and waits are untouched. For the simulator. */
DDB_API int ddb__fake_clock_jump_wall(ddb_clock *c, int64_t ms);
/* Fake clock: settle of its schedulers alone (not of the threads that wait on it), for a
 * caller inside a library call on that clock, which the whole settle would wait for. */
DDB_API int ddb__fake_clock_settle_schedulers(ddb_clock *c, int64_t real_timeout_ms);
/* The end of a public call of libddb: marks the thread idle unless a hold is on. */
void ddb__clock_call_done(ddb_clock *c);
/* Timers behind ddb_cancel_after: sets `cancel` once the clock reaches deadline_mono_ns.
 * The clock keeps no reference to the token (a freed token's timers are removed by
 * cancel.c through ddb__clock_timer_remove). Fake clocks fire timers inside
 * ddb_fake_clock_advance, on the advancing thread; other clocks on one timer thread per
 * clock, started when needed and joined. Returns a timer id > 0, 0 when the deadline
 * has passed already (nothing added: the caller sets the token), or DDB_ENOMEM. */
long ddb__clock_timer_add(ddb_clock *c, int64_t deadline_mono_ns, ddb_cancel *cancel);
void ddb__clock_timer_remove(ddb_clock *c, long id);

/* ---- cancel (cancel.c) */
/* Takes a reference unless the token's count already reached zero (it is being freed):
 * lets a holder of a weak pointer (a timer) use the token safely. true when taken. */
bool ddb__cancel_try_ref(ddb_cancel *c);

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
ddb__cred_provider *ddb__cred_provider_new(const ddb_client_options *opts, ddb_clock *clock,
                                           ddb_error *err);
void ddb__cred_provider_free(ddb__cred_provider *p);
/* Copies current credentials into out (caller frees with ddb__credentials_cleanup),
 * refreshing those that expire within 5 minutes. DDB_ECREDENTIALS when none found. */
int ddb__cred_get(ddb__cred_provider *p, ddb__credentials *out, ddb_cancel *cancel,
                  ddb_error *err);
void ddb__credentials_cleanup(ddb__credentials *c);
/* Region from the shared config for a profile (malloc'd) or NULL. profile NULL means
 * AWS_PROFILE or "default". */
char *ddb__profile_region(const char *profile);
/* Tests only: the base URL that AWS_CONTAINER_CREDENTIALS_RELATIVE_URI is resolved
 * against (default http://169.254.170.2); NULL restores the default. Not thread-safe. */
void ddb__cred_set_container_base(const char *base_url);
/* Where the current credentials came from ("explicit", "environment", "shared-files",
 * "container", "imds"), or "" when none were resolved yet. Borrowed, static text. */
const char *ddb__cred_source(ddb__cred_provider *p);

/* ---- retry policy (retry.c): AWS SDK "standard" mode */
typedef struct ddb__retry_state ddb__retry_state;  /* one per client: the quota */
ddb__retry_state *ddb__retry_state_new(const ddb_retry_options *o);
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
/* Tests: replaces the random source, a function returning a value in [0, 1). */
void ddb__retry_set_random(ddb__retry_state *s, double (*rand_fn)(void *arg), void *arg);

/* ---- logging, telemetry (log.c, telemetry.c) */
DDB_API bool ddb__client_log_enabled(ddb_client *c, int level);

/* ---- asynchronous single-item writes (ops.c), for libddb_coord's leases: the request
 * runs on the client's scheduler thread with the client's retries, and fn runs there
 * once with the outcome (res and err borrowed for the call; on DDB_ECONDITION with
 * return_old_on_condition_fail, res->item is the item as it is). o->cancel aborts it.
 * 0 when started (fn then runs exactly once), or an error (fn never runs). Any thread. */
typedef void (*ddb__item_reply_fn)(void *arg, int rc, ddb_result *res, ddb_error *err);
DDB_API int ddb__update_item_start(ddb_table *t, const ddb_item *key, const char *update,
                                   const ddb_write_options *o, ddb__item_reply_fn fn,
                                   void *arg, ddb_error *err);
/* Whether the calling thread is the scheduler thread of the table's client. */
DDB_API bool ddb__client_on_scheduler(ddb_client *c);

/* ---- transactions (tx.c): lets libddb_coord poison a transaction with an error, so
 * that its send fails with it. */
DDB_API void ddb__tx_set_error(ddb_tx *tx, const ddb_error *err);

#endif
