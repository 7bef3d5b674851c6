/* ddb.h: libddb, a DynamoDB client in C.
 *
 * Ownership, stated once and always obeyed:
 *  - Strings and items passed in are copied at call time; the caller keeps its own.
 *  - Every pointer a function returns through an out parameter, or as its result, is
 *    owned by the caller and freed with the matching _free/_unref/_cleanup, unless the
 *    function's comment says "borrowed" (valid until the owner changes or is freed).
 *  - Every _free, _unref, _cleanup and _release accepts NULL and does nothing.
 *
 * Errors: functions return 0 or a negative DDB_E* code and, when `err` is not NULL,
 * fill the caller-owned ddb_error. Constructors return a pointer or NULL and fill err.
 * Codes are never renumbered.
 *
 * Outcomes: every failure of a call that writes says which of three it is.
 *  - Not applied: DynamoDB answered with an error (DDB_ECONDITION, DDB_EVALIDATION, ...),
 *    or nothing was sent: DDB_ENETWORK and DDB_ETIMEDOUT mean that the request failed
 *    before any byte of it was written (name resolution, connection, TLS handshake), and
 *    DDB_ECREDENTIALS, DDB_EINVAL and DDB_ENOMEM come before sending too.
 *  - Unknown: DDB_EINDOUBT. An attempt was sent and its answer never came (a reset, an
 *    early EOF, a timeout while waiting), and what followed could not tell whether it was
 *    applied: every retry failed too, or a retry was refused in a way the first attempt's
 *    success would explain (a failed condition, a table in use). aws_type and http_status
 *    then describe the last attempt, and the message says what is known. The writes of the
 *    lock layer and ddb_table_create resolve what they can by reading afterwards, and
 *    TransactWriteItems carries a ClientRequestToken that makes its retries idempotent, so
 *    they report DDB_EINDOUBT only when that read fails too.
 *  - DDB_ECANCELED: the caller's cancel token ended the call. The message says whether the
 *    request was "in flight" (then a write may have been applied) or not yet sent.
 * A read (GetItem, Query, Scan, BatchGetItem, TransactGetItems, Describe*, List*) applies
 * nothing, so a lost answer to one is DDB_ENETWORK or DDB_ETIMEDOUT as before.
 *
 * Threads: a ddb_client, its tables, clocks and cancel tokens may be used from any
 * thread at once. Items, iterators and transactions belong to one thread at a time.
 */
#ifndef DYNALOCK_DDB_H
#define DYNALOCK_DDB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <dynalock/export.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ----------------------------------------------------------------- version */

/* The version of the library the program runs with, "MAJOR.MINOR.PATCH"; static, never
 * NULL. The headers it was compiled against say theirs in <dynalock/version.h>
 * (DDB_VERSION_STRING, DDB_VERSION_NUM). Thread: any. */
DDB_API const char *ddb_version(void);

/* ------------------------------------------------------------------ errors */

enum {
    DDB_OK = 0,
    DDB_EINVAL = -1,        /* an argument is invalid (bad name, duration, option) */
    DDB_ENOMEM = -2,        /* out of memory */
    DDB_ECANCELED = -3,     /* the cancel token was set */
    DDB_ETIMEDOUT = -4,     /* a timeout of the client ran out */
    DDB_ENETWORK = -5,      /* could not connect, or the connection failed */
    DDB_ESERVICE = -6,      /* DynamoDB answered with an error (see aws_type) */
    DDB_ECONDITION = -7,    /* ConditionalCheckFailedException */
    DDB_ETXCANCELED = -8,   /* TransactionCanceledException (see ddb_tx_reason_for) */
    DDB_ENOTFOUND = -9,     /* ResourceNotFoundException: no such table or index */
    DDB_ETHROTTLED = -10,   /* throttling that outlasted the retries */
    DDB_ECREDENTIALS = -11, /* no credentials could be found or fetched */
    DDB_EPROTOCOL = -12,    /* the answer could not be understood */
    DDB_ESTATE = -13,       /* the object is not in a state for this call */
    DDB_EVALIDATION = -14,  /* ValidationException */
    DDB_EIO = -15,          /* a local file or system call failed */
    DDB_EACCESS = -16,      /* AccessDeniedException, UnrecognizedClientException, signature */
    DDB_EINUSE = -17,       /* ResourceInUseException */
    DDB_EWORK = -18,        /* the work of a leader failed (ddb_lock_run_as_leader) */
    DDB_ELOST = -19,        /* the lease is no longer held */
    DDB_EINDOUBT = -20,     /* a write whose outcome is in doubt: an attempt was sent and
                             * its answer lost, and it may or may not have been applied */
};

#define DDB_ERROR_TYPE_MAX 128
#define DDB_ERROR_MESSAGE_MAX 512
#define DDB_REQUEST_ID_MAX 96

/* The caller-owned description of the last failure of a call. */
typedef struct ddb_error {
    int code;                                /* DDB_E*, 0 when there is no error */
    char aws_type[DDB_ERROR_TYPE_MAX];       /* e.g. "ConditionalCheckFailedException" */
    char message[DDB_ERROR_MESSAGE_MAX];     /* one sentence */
    int http_status;                         /* 0 when no answer was received */
    char request_id[DDB_REQUEST_ID_MAX];     /* x-amzn-RequestId, "" if none */
    int retries;                             /* retries the client made for this call */
} ddb_error;

/* Static text for a code ("invalid argument"). Never NULL. Thread: any. */
DDB_API const char *ddb_error_string(int code);
/* The code's symbolic name ("DDB_EINVAL"). Never NULL. Thread: any. */
DDB_API const char *ddb_error_name(int code);
/* Clears err to "no error". Thread: any (err is the caller's). */
DDB_API void ddb_error_clear(ddb_error *err);
/* Fills err (if not NULL) as a failure of the caller's own: code (a DDB_E* code), a
 * printf-style message (NULL: ddb_error_string(code)), and the other fields cleared. Returns
 * code, so that a function can `return ddb_error_set(err, DDB_EINVAL, "...")`. For code
 * that reports through a ddb_error, e.g. an election's work function.
 * Thread: any (err is the caller's). */
DDB_API int ddb_error_set(ddb_error *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* ------------------------------------------------------------------- clock */

/* Every time the library keeps (a lease's renewals, an acquire's polls, retry backoffs,
 * timeouts) is measured on a ddb_clock, so a fake clock moves them with no sleep. Two
 * kinds of wait stand behind it: a thread blocked on the clock inside a library call
 * (ddb_clock_sleep, a blocking call's poll or backoff), which
 * ddb_fake_clock_wait_for_waiters counts; and a timer of a client's scheduler (a held
 * lease's renewals, the backoffs and timeouts of its asynchronous requests), which no
 * thread waits in and which is not counted. ddb_fake_clock_settle waits for both.
 * Clocks are refcounted; any thread. */
typedef struct ddb_clock ddb_clock;
typedef struct ddb_cancel ddb_cancel;

/* The process's clock: CLOCK_MONOTONIC and CLOCK_REALTIME. A shared static instance;
 * ref/unref on it do nothing. Thread: any. */
DDB_API ddb_clock *ddb_clock_system(void);
/* A fake clock starting at mono 0 ns and wall `wall_ms` (ms since the epoch). */
DDB_API ddb_clock *ddb_fake_clock_new(int64_t wall_ms);
DDB_API ddb_clock *ddb_clock_ref(ddb_clock *c);
DDB_API void ddb_clock_unref(ddb_clock *c);

/* Monotonic now, in nanoseconds, for measuring intervals. Thread: any. */
DDB_API int64_t ddb_clock_mono_ns(ddb_clock *c);
/* Wall-clock now, in milliseconds since the Unix epoch. */
DDB_API int64_t ddb_clock_wall_ms(ddb_clock *c);
/* Blocks until `timeout_ms` have passed on the clock (0 on time), or `cancel` (may be
 * NULL) is set (DDB_ECANCELED). A negative timeout waits for the cancel alone. */
DDB_API int ddb_clock_sleep(ddb_clock *c, int64_t timeout_ms, ddb_cancel *cancel);
/* True when c is a fake clock. */
DDB_API bool ddb_clock_is_fake(ddb_clock *c);

/* Fake clock: move both monotonic and wall time forward by `ms` (>= 0), waking every
 * wait that is due. Returns DDB_EINVAL on a system clock or a negative ms.
 * Thread: any, usually the test's; settle and the waits for waiters never from a
 * callback the clock runs (they would wait for themselves). */
DDB_API int ddb_fake_clock_advance(ddb_clock *c, int64_t ms);
/* Fake clock: after an advance, block (in real time, at most `real_timeout_ms`) until
 * every thread that the advances woke has either waited on the clock again or gone
 * idle (returned from the library call that waited). This is how a test waits for the
 * work an advance released, such as a renewal and its answer. 0, or DDB_ETIMEDOUT. */
DDB_API int ddb_fake_clock_settle(ddb_clock *c, int64_t real_timeout_ms);
/* Fake clock: block (real time, at most real_timeout_ms) until at least `n` threads
 * are blocked on the clock: in ddb_clock_sleep or a waiting library call (an acquire
 * between polls, an election's pause). A lease's parked renewal is a scheduler timer,
 * not a waiter, and is never counted: a test that wants the next renewal advances the
 * clock to it (the renewal is parked as soon as the acquire has returned the lease)
 * and calls ddb_fake_clock_settle, which returns once it has been sent and answered and
 * the one after is parked (libddb_testing's ddb_test_server_advance does both).
 * 0 or DDB_ETIMEDOUT. */
DDB_API int ddb_fake_clock_wait_for_waiters(ddb_clock *c, int n, int64_t real_timeout_ms);
/* Fake clock: the number of threads blocked on it now (as counted above). */
DDB_API int ddb_fake_clock_waiters(ddb_clock *c);

/* Advanced: a clock whose time and waits are supplied by the caller, e.g. a clock that
 * follows a fake server's. `now_fn` fills mono_ns and wall_ms; `wait_fn` blocks until
 * mono time `deadline_mono_ns` or until the cancel is set (then returns DDB_ECANCELED),
 * and must return promptly once `cancel` is set. `free_fn` (may be NULL) frees arg.
 * Thread: any; the ops are called from any thread. */
typedef struct ddb_clock_ops {
    void (*now_fn)(void *arg, int64_t *mono_ns, int64_t *wall_ms);
    int (*wait_fn)(void *arg, int64_t deadline_mono_ns, ddb_cancel *cancel);
    void (*free_fn)(void *arg);
} ddb_clock_ops;
DDB_API ddb_clock *ddb_clock_new_custom(const ddb_clock_ops *ops, void *arg);
/* A clock that follows a fakedb server's clock (fakedb --clock fake), so that processes
 * that share the server share time: now reads GET /fake/clock, a wait long-polls
 * GET /fake/clock/wait. For tests of several processes, and the command's --clock
 * server. Reads the clock once; DDB_EINVAL on a bad endpoint, DDB_ENETWORK when no
 * server answers. A server started with --credentials answers 403 to unsigned
 * requests: the clock then signs them (SigV4) with the credentials of the standard
 * chain (environment, shared files, ...), at the server's time; DDB_ECREDENTIALS when
 * they are not the server's. Thread: any. */
DDB_API ddb_clock *ddb_clock_new_server(const char *endpoint, ddb_error *err);

/* ------------------------------------------------------------------ cancel */

/* A cancel token: set once, never reset. Refcounted. Thread: any, every function. */
DDB_API ddb_cancel *ddb_cancel_new(void);
/* A token that is set when `parent` is set (or when set itself). parent may be NULL. */
DDB_API ddb_cancel *ddb_cancel_new_linked(ddb_cancel *parent);
/* A token set when either a or b is set (either may be NULL). */
DDB_API ddb_cancel *ddb_cancel_new_linked2(ddb_cancel *a, ddb_cancel *b);
DDB_API ddb_cancel *ddb_cancel_ref(ddb_cancel *c);
DDB_API void ddb_cancel_unref(ddb_cancel *c);
/* Sets the token, then runs its callbacks and sets its linked tokens on the calling
 * thread before returning. Not for signal handlers: use ddb_cancel_set_from_signal. */
DDB_API void ddb_cancel_set(ddb_cancel *c);
/* Async-signal-safe set: stores an atomic and writes to eventfds only. is_set and the fd
 * of the token change at once; its callbacks and linked tokens follow on a dispatcher
 * thread of the library. */
DDB_API void ddb_cancel_set_from_signal(ddb_cancel *c);
DDB_API bool ddb_cancel_is_set(const ddb_cancel *c);
/* Waits in real time until set (0) or `timeout_ms` passes (DDB_ETIMEDOUT); <0 = forever. */
DDB_API int ddb_cancel_wait(ddb_cancel *c, int64_t timeout_ms);
/* A file descriptor that becomes readable once the token is set; owned by the token. */
DDB_API int ddb_cancel_fd(ddb_cancel *c);
/* Calls fn(arg) once when the token is set (at once if it already is). Returns a
 * registration id > 0 for ddb_cancel_off, or a negative DDB_E*. */
DDB_API long ddb_cancel_on(ddb_cancel *c, void (*fn)(void *arg), void *arg);
/* Removes a registration; when it returns, the callback is not running and will not run. */
DDB_API void ddb_cancel_off(ddb_cancel *c, long id);
/* Sets c once `ms` have passed on `clock` (a background timer; fake clocks honoured). */
DDB_API int ddb_cancel_after(ddb_cancel *c, ddb_clock *clock, int64_t ms);

/* ----------------------------------------------------------------- logging */

/* Levels start at 1 so that a zero level in an options struct means the default. */
enum { DDB_LOG_TRACE = 1, DDB_LOG_DEBUG = 2, DDB_LOG_INFO = 3, DDB_LOG_WARN = 4,
       DDB_LOG_ERROR = 5, DDB_LOG_OFF = 6 };

typedef struct ddb_log_field {
    const char *key;
    const char *value; /* rendered as text */
} ddb_log_field;

/* The event id of libddb's own log events; the lock library's are ddb_lock_event
 * (40-49, coord.h). */
#define DDB_EVENT_NONE 0

/* A log sink. Called on whichever thread logs; must be thread-safe. event_id is the
 * event's id: a ddb_lock_event (coord.h), or DDB_EVENT_NONE. */
typedef void (*ddb_log_fn)(void *arg, int level, int event_id, const char *category,
                           const char *message, const ddb_log_field *fields, size_t n);

typedef enum ddb_log_format { DDB_LOG_LOGFMT = 0, DDB_LOG_JSON = 1 } ddb_log_format;
/* The default sink: one line per event on stderr, logfmt or JSON. arg is a
 * (ddb_log_format *) or NULL for logfmt. Thread: any. */
DDB_API void ddb_log_to_stderr(void *arg, int level, int event_id, const char *category,
                               const char *message, const ddb_log_field *fields, size_t n);
/* The default sink with settings: arg is a (const ddb_log_stderr_options *), NULL for
 * the defaults. With a clock, `ts` is that clock's wall time: give the client's clock
 * (a fake one, or ddb_clock_new_server's) and a test's log reads in the time its leases
 * and polls use; the clock is read once per line. The options and the clock are
 * borrowed: they outlive every call. Thread: any. */
typedef struct ddb_log_stderr_options {
    ddb_log_format format;      /* 0: logfmt */
    ddb_clock *clock;           /* the time of `ts`; NULL: the system's real time */
} ddb_log_stderr_options;
DDB_API void ddb_log_to_stderr_with(void *arg, int level, int event_id, const char *category,
                                    const char *message, const ddb_log_field *fields,
                                    size_t n);
DDB_API const char *ddb_log_level_name(int level);

/* --------------------------------------------------------------- telemetry */

/* The type of an attribute's value (named at top level, so that C++ can name it too). */
typedef enum ddb_attr_type {
    DDB_ATTR_STR, DDB_ATTR_INT, DDB_ATTR_BOOL, DDB_ATTR_DOUBLE
} ddb_attr_type;

typedef struct ddb_attr {
    const char *key;
    ddb_attr_type type;
    union { const char *s; int64_t i; bool b; double d; } v;
} ddb_attr;

/* Telemetry callbacks, all optional, called on the thread doing the work. Span ids are
 * non-zero and unique per client. Names and attributes follow OpenTelemetry's database
 * conventions (db.system.name=aws.dynamodb, db.operation.name, db.collection.name,
 * error.type) and the lock layer's (dynalock.lock.*). */
typedef struct ddb_telemetry {
    void *arg;
    /* A span starts: parent 0 for a root; links (ids of related spans) may be empty. */
    void (*span_start)(void *arg, uint64_t span_id, uint64_t parent_id, const char *name,
                       const uint64_t *links, size_t n_links);
    /* An attribute is set on a live span. */
    void (*span_attr)(void *arg, uint64_t span_id, const ddb_attr *attr);
    /* A span ends; error_type is NULL on success. */
    void (*span_end)(void *arg, uint64_t span_id, const char *error_type);
    /* A metric point: counters give the increment, histograms the value. */
    void (*metric)(void *arg, const char *name, const char *unit, double value,
                   const ddb_attr *attrs, size_t n_attrs);
} ddb_telemetry;

/* The span that requests started on this thread become children of (0 for none).
 * Returns the previous one, to be restored.
 * Thread: any; the parent is the calling thread's own (thread-local). */
DDB_API uint64_t ddb_telemetry_set_parent(uint64_t span_id);
DDB_API uint64_t ddb_telemetry_get_parent(void);

/* ------------------------------------------------------------------ client */

typedef struct ddb_client ddb_client;
typedef struct ddb_table ddb_table;

/* Use DDB_NO_RETRIES for max_attempts to mean "one attempt". */
#define DDB_NO_RETRIES 1

typedef struct ddb_retry_options {
    int max_attempts;          /* 0 = 3 (standard mode); DDB_NO_RETRIES = 1 */
    int64_t base_delay_ms;     /* 0 = 50 ms (full jitter base) */
    int64_t max_backoff_ms;    /* 0 = 20 000 ms */
    int quota;                 /* 0 = 500 tokens; negative = no quota */
} ddb_retry_options;

typedef struct ddb_client_options {
    const char *endpoint;      /* NULL: AWS_ENDPOINT_URL_DYNAMODB, AWS_ENDPOINT_URL, or AWS */
    const char *region;        /* NULL: AWS_REGION, AWS_DEFAULT_REGION, profile, us-east-1 */
    const char *profile;       /* NULL: AWS_PROFILE, "default" */
    const char *access_key_id; /* explicit credentials; all three or none */
    const char *secret_access_key;
    const char *session_token;
    int64_t connect_timeout_ms; /* 0 = 3 000 */
    int64_t request_timeout_ms; /* 0 = 30 000, per attempt */
    int max_connections;        /* 0 = 32 */
    ddb_retry_options retry;
    ddb_clock *clock;           /* NULL = system clock; referenced, not copied */
    ddb_log_fn log;             /* NULL = ddb_log_to_stderr */
    void *log_arg;
    int log_level;              /* least level logged: 0 = DDB_LOG_INFO */
    const ddb_telemetry *telemetry; /* copied; NULL for none */
    /* Where credentials come from, for tests of the chain: NULL = the standard files
     * and the IMDS endpoint http://169.254.169.254 (AWS_EC2_METADATA_SERVICE_ENDPOINT). */
    const char *imds_endpoint;
    bool imds_disabled;         /* also AWS_EC2_METADATA_DISABLED=true */
} ddb_client_options;

/* Creates a client; does no I/O (credentials are resolved on first use). Thread: any. */
DDB_API ddb_client *ddb_client_new(const ddb_client_options *opts, ddb_error *err);
/* Frees the client; no request may be in flight. Tables opened on it must be closed. */
DDB_API void ddb_client_free(ddb_client *c);
/* Borrowed: the client's clock. */
DDB_API ddb_clock *ddb_client_clock(ddb_client *c);
/* The endpoint and region in use. Borrowed. */
DDB_API const char *ddb_client_endpoint(const ddb_client *c);
DDB_API const char *ddb_client_region(const ddb_client *c);
/* Borrowed: the telemetry callbacks, or NULL. */
DDB_API const ddb_telemetry *ddb_client_telemetry(const ddb_client *c);

/* A raw DynamoDB JSON request: signs, sends with retries, and returns the answer body
 * (caller frees with free()). `operation` is e.g. "GetItem". On an error answer, err
 * has the AWS type and message and *response_json holds the error body. Thread: any. */
DDB_API int ddb_client_call(ddb_client *c, const char *operation, const char *request_json,
                            char **response_json, ddb_cancel *cancel, ddb_error *err);

/* Opens a table handle: no I/O. sk may be NULL. The client must outlive the table.
 * Thread: any; ddb_table_close once no call on the table is in flight. */
DDB_API ddb_table *ddb_table_open(ddb_client *c, const char *name, const char *pk,
                                  const char *sk, ddb_error *err);
DDB_API void ddb_table_close(ddb_table *t);
DDB_API const char *ddb_table_name(const ddb_table *t);
DDB_API const char *ddb_table_pk(const ddb_table *t);
DDB_API const char *ddb_table_sk(const ddb_table *t); /* NULL when none */
DDB_API ddb_client *ddb_table_client(const ddb_table *t);

/* ------------------------------------------------------------ values, items */

typedef enum ddb_type {
    DDB_S = 1, DDB_N, DDB_B, DDB_BOOL, DDB_NULL, DDB_L, DDB_M, DDB_SS, DDB_NS, DDB_BS
} ddb_type;

typedef struct ddb_value ddb_value;  /* one AttributeValue */
typedef struct ddb_item ddb_item;    /* a map of attribute name -> value, in insertion order */

DDB_API ddb_value *ddb_value_s(const char *s);
DDB_API ddb_value *ddb_value_s_len(const char *s, size_t len);
/* A number from its decimal text; NULL if it is not a valid DynamoDB number.
 * Thread: one at a time per value. */
DDB_API ddb_value *ddb_value_n(const char *decimal);
DDB_API ddb_value *ddb_value_n_i64(int64_t n);
DDB_API ddb_value *ddb_value_b(const void *bytes, size_t len);
DDB_API ddb_value *ddb_value_bool(bool b);
DDB_API ddb_value *ddb_value_null(void);
DDB_API ddb_value *ddb_value_l(void);                 /* empty list */
DDB_API ddb_value *ddb_value_m(void);                 /* empty map */
DDB_API ddb_value *ddb_value_ss(void);                /* empty sets, filled with _add */
DDB_API ddb_value *ddb_value_ns(void);
DDB_API ddb_value *ddb_value_bs(void);
DDB_API ddb_value *ddb_value_copy(const ddb_value *v);
DDB_API void ddb_value_free(ddb_value *v);

DDB_API ddb_type ddb_value_type(const ddb_value *v);
/* S: the string (borrowed, NUL-terminated), len in *len if not NULL. NULL if not S.
 * Thread: one at a time per value; const calls may share it. */
DDB_API const char *ddb_value_get_s(const ddb_value *v, size_t *len);
/* N: the decimal text (borrowed). NULL if not N. */
DDB_API const char *ddb_value_get_n(const ddb_value *v);
/* N: as int64; DDB_EINVAL if not N, not integral, or out of range. */
DDB_API int ddb_value_get_i64(const ddb_value *v, int64_t *out);
DDB_API const void *ddb_value_get_b(const ddb_value *v, size_t *len);
DDB_API int ddb_value_get_bool(const ddb_value *v, bool *out);
/* L, SS, NS, BS: element count; M: entry count. */
DDB_API size_t ddb_value_count(const ddb_value *v);
/* L: element i (borrowed). SS/NS/BS: element i as an S/N/B value (borrowed). */
DDB_API const ddb_value *ddb_value_at(const ddb_value *v, size_t i);
/* M: the nested map as an item (borrowed); NULL if not M. */
DDB_API const ddb_item *ddb_value_get_m(const ddb_value *v);
DDB_API ddb_item *ddb_value_get_m_mut(ddb_value *v);
/* L: appends, taking ownership of elem. Sets: adds a string/number text/bytes copy. */
DDB_API int ddb_value_append(ddb_value *list, ddb_value *elem);
DDB_API int ddb_value_add_s(ddb_value *ss, const char *s);
DDB_API int ddb_value_add_n(ddb_value *ns, const char *decimal);
DDB_API int ddb_value_add_b(ddb_value *bs, const void *bytes, size_t len);
DDB_API bool ddb_value_equal(const ddb_value *a, const ddb_value *b);

DDB_API ddb_item *ddb_item_new(void);
DDB_API ddb_item *ddb_item_copy(const ddb_item *it);
DDB_API void ddb_item_free(ddb_item *it);
/* Sets name to v, taking ownership of v (also on failure). Replaces an existing value.
 * Thread: one at a time per item; const calls may share it. */
DDB_API int ddb_item_set(ddb_item *it, const char *name, ddb_value *v);
DDB_API int ddb_item_set_s(ddb_item *it, const char *name, const char *s);
DDB_API int ddb_item_set_n(ddb_item *it, const char *name, const char *decimal);
DDB_API int ddb_item_set_i64(ddb_item *it, const char *name, int64_t n);
DDB_API int ddb_item_set_b(ddb_item *it, const char *name, const void *b, size_t len);
DDB_API int ddb_item_set_bool(ddb_item *it, const char *name, bool b);
DDB_API int ddb_item_set_null(ddb_item *it, const char *name);
DDB_API int ddb_item_remove(ddb_item *it, const char *name);
/* Borrowed: the value of name, or NULL. */
DDB_API const ddb_value *ddb_item_get(const ddb_item *it, const char *name);
/* Typed getters: NULL / DDB_EINVAL when absent or of another type. */
DDB_API const char *ddb_item_get_s(const ddb_item *it, const char *name);
DDB_API const char *ddb_item_get_n(const ddb_item *it, const char *name);
DDB_API int ddb_item_get_i64(const ddb_item *it, const char *name, int64_t *out);
DDB_API int ddb_item_get_bool(const ddb_item *it, const char *name, bool *out);
DDB_API size_t ddb_item_count(const ddb_item *it);
/* The i-th attribute in insertion order; both borrowed. */
DDB_API const char *ddb_item_name_at(const ddb_item *it, size_t i);
DDB_API const ddb_value *ddb_item_value_at(const ddb_item *it, size_t i);
DDB_API bool ddb_item_equal(const ddb_item *a, const ddb_item *b);
/* DynamoDB JSON ({"pk":{"S":"a"}}), malloc'd, caller frees. */
DDB_API char *ddb_item_to_json(const ddb_item *it);
/* Parses DynamoDB JSON; NULL with err on malformed input. */
DDB_API ddb_item *ddb_item_from_json(const char *json, size_t len, ddb_error *err);
DDB_API char *ddb_value_to_json(const ddb_value *v);
DDB_API ddb_value *ddb_value_from_json(const char *json, size_t len, ddb_error *err);

/* -------------------------------------------------------------- operations */

/* Expression attribute names: a NULL-terminated list of pairs,
 * e.g. (const char *[]){"#o", "owner", "#t", "_type", NULL}. */
typedef const char *const *ddb_names;

typedef enum ddb_return_values {
    DDB_RETURN_NONE = 0, DDB_RETURN_ALL_OLD, DDB_RETURN_UPDATED_OLD,
    DDB_RETURN_ALL_NEW, DDB_RETURN_UPDATED_NEW
} ddb_return_values;

/* What an operation returns. Zero-initialise; free with ddb_result_cleanup.
 * Thread: the result's owner. */
typedef struct ddb_result {
    ddb_item *item;   /* GetItem: the item (NULL if none). Put/Update/Delete: Attributes
                         per return_values. On DDB_ECONDITION with
                         return_old_on_condition_fail: the item as it was (or NULL). */
    int retries;      /* retries made */
    double consumed_capacity; /* ConsumedCapacity.CapacityUnits, 0 if not returned */
} ddb_result;
DDB_API void ddb_result_cleanup(ddb_result *r);

typedef struct ddb_get_options {
    bool consistent_read;
    const char *projection;     /* ProjectionExpression, NULL for all attributes */
    ddb_names names;
} ddb_get_options;

typedef struct ddb_write_options {
    const char *condition;      /* ConditionExpression, NULL for none */
    ddb_names names;
    const ddb_item *values;     /* ExpressionAttributeValues (":v" -> value) */
    ddb_return_values return_values;
    bool return_old_on_condition_fail; /* ReturnValuesOnConditionCheckFailure=ALL_OLD */
} ddb_write_options;

/* Item operations. key holds the key attributes (pk, and sk if the table has one); o may
 * be NULL for the defaults; res may be NULL. cancel (may be NULL) aborts the request and
 * its retries (DDB_ECANCELED). Thread: any; a table is safe to share between threads. */
DDB_API int ddb_table_get_item(ddb_table *t, const ddb_item *key, const ddb_get_options *o,
                               ddb_result *res, ddb_cancel *cancel, ddb_error *err);
DDB_API int ddb_table_put_item(ddb_table *t, const ddb_item *item, const ddb_write_options *o,
                               ddb_result *res, ddb_cancel *cancel, ddb_error *err);
/* update is the UpdateExpression. */
DDB_API int ddb_table_update_item(ddb_table *t, const ddb_item *key, const char *update,
                                  const ddb_write_options *o, ddb_result *res,
                                  ddb_cancel *cancel, ddb_error *err);
DDB_API int ddb_table_delete_item(ddb_table *t, const ddb_item *key,
                                  const ddb_write_options *o, ddb_result *res,
                                  ddb_cancel *cancel, ddb_error *err);

/* Query and Scan: an iterator over pages. */
typedef struct ddb_pages ddb_pages;
typedef struct ddb_query_options {
    const char *index;          /* IndexName, NULL for the table */
    const char *key_condition;  /* KeyConditionExpression (Query only) */
    const char *filter;         /* FilterExpression */
    const char *projection;     /* ProjectionExpression */
    ddb_names names;
    const ddb_item *values;
    int limit;                  /* Limit per page, 0 = none */
    bool descending;            /* ScanIndexForward=false (Query only) */
    bool consistent_read;
    const ddb_item *start_key;  /* ExclusiveStartKey, NULL to start at the beginning */
    int segment, total_segments; /* parallel Scan; 0/0 for none */
} ddb_query_options;

/* No I/O until the first ddb_pages_next. cancel (may be NULL, referenced until the free)
 * aborts every page's request. Thread: any; one thread at a time per ddb_pages. */
DDB_API ddb_pages *ddb_table_query(ddb_table *t, const ddb_query_options *o,
                                   ddb_cancel *cancel, ddb_error *err);
DDB_API ddb_pages *ddb_table_scan(ddb_table *t, const ddb_query_options *o,
                                  ddb_cancel *cancel, ddb_error *err);
/* Fetches the next page: returns 1 with a page, 0 when there are no more pages, or a
 * negative DDB_E*. The page's items are borrowed until the next call or the free. */
DDB_API int ddb_pages_next(ddb_pages *p, ddb_error *err);
DDB_API size_t ddb_pages_count(const ddb_pages *p);           /* items in this page */
DDB_API const ddb_item *ddb_pages_item(const ddb_pages *p, size_t i);
DDB_API size_t ddb_pages_scanned(const ddb_pages *p);         /* ScannedCount */
/* LastEvaluatedKey of this page (borrowed), NULL at the end. */
DDB_API const ddb_item *ddb_pages_last_key(const ddb_pages *p);
DDB_API void ddb_pages_free(ddb_pages *p);

/* BatchGetItem on one table: fetches every key (retrying UnprocessedKeys with backoff)
 * and returns the items found, in no particular order, in *items (n in *n_items);
 * free each item and the array with ddb_item_array_free. Thread: any. */
DDB_API int ddb_table_batch_get(ddb_table *t, const ddb_item *const *keys, size_t n_keys,
                                bool consistent_read, ddb_item ***items, size_t *n_items,
                                ddb_cancel *cancel, ddb_error *err);
/* Frees n items (NULL entries allowed) and the array. Thread: any. */
DDB_API void ddb_item_array_free(ddb_item **items, size_t n);
/* BatchWriteItem on one table: puts and deletes (by key), in chunks of 25, retrying
 * UnprocessedItems with backoff until all are written. Thread: any. */
DDB_API int ddb_table_batch_write(ddb_table *t, const ddb_item *const *puts, size_t n_puts,
                                  const ddb_item *const *delete_keys, size_t n_deletes,
                                  ddb_cancel *cancel, ddb_error *err);

/* ------------------------------------------------------------ transactions */

typedef struct ddb_tx ddb_tx;
/* Identifies one action of a transaction, to ask for its cancellation reason. */
typedef struct ddb_tx_marker { int index; } ddb_tx_marker;

typedef enum ddb_tx_failure {
    DDB_TXFAIL_NONE = 0,
    DDB_TXFAIL_CONDITIONAL_CHECK_FAILED,
    DDB_TXFAIL_TRANSACTION_CONFLICT,
    DDB_TXFAIL_ITEM_COLLECTION_SIZE_LIMIT_EXCEEDED,
    DDB_TXFAIL_THROTTLING,
    DDB_TXFAIL_VALIDATION,
    DDB_TXFAIL_OTHER,
} ddb_tx_failure;

typedef struct ddb_tx_options {
    const char *condition;      /* per action ConditionExpression */
    ddb_names names;
    const ddb_item *values;
    bool return_old_on_condition_fail;
} ddb_tx_options;

/* A transaction is built and sent by one thread at a time; it does no I/O until
 * ddb_tx_send. Thread: one at a time per ddb_tx. */
DDB_API ddb_tx *ddb_tx_new(ddb_client *c);
DDB_API void ddb_tx_free(ddb_tx *tx);
/* Each adds one action; marker (may be NULL) receives its position. DDB_EINVAL (with a
 * sentence in err) for a bad action, e.g. the 101st or a check without a condition. */
DDB_API int ddb_tx_put(ddb_tx *tx, ddb_table *t, const ddb_item *item,
                       const ddb_tx_options *o, ddb_tx_marker *marker, ddb_error *err);
DDB_API int ddb_tx_update(ddb_tx *tx, ddb_table *t, const ddb_item *key, const char *update,
                          const ddb_tx_options *o, ddb_tx_marker *marker, ddb_error *err);
DDB_API int ddb_tx_delete(ddb_tx *tx, ddb_table *t, const ddb_item *key,
                          const ddb_tx_options *o, ddb_tx_marker *marker, ddb_error *err);
/* A ConditionCheck; o->condition is required. */
DDB_API int ddb_tx_check(ddb_tx *tx, ddb_table *t, const ddb_item *key,
                         const ddb_tx_options *o, ddb_tx_marker *marker, ddb_error *err);
/* ClientRequestToken for idempotency (copied). */
DDB_API int ddb_tx_set_token(ddb_tx *tx, const char *client_request_token);
/* Sends TransactWriteItems. DDB_ETXCANCELED when cancelled; then ddb_tx_reason_for
 * tells each action's reason. */
DDB_API int ddb_tx_send(ddb_tx *tx, ddb_cancel *cancel, ddb_error *err);
DDB_API ddb_tx_failure ddb_tx_reason_for(const ddb_tx *tx, ddb_tx_marker marker);
/* The item returned for the action on a failed condition (ALL_OLD), borrowed, or NULL. */
DDB_API const ddb_item *ddb_tx_item_for(const ddb_tx *tx, ddb_tx_marker marker);
DDB_API size_t ddb_tx_count(const ddb_tx *tx);

/* TransactGetItems: reads keys[i] of tables[i] atomically; items[i] is NULL when absent.
 * Free with ddb_item_array_free(items, n). Thread: any. */
DDB_API int ddb_client_transact_get(ddb_client *c, ddb_table *const *tables,
                                    const ddb_item *const *keys, size_t n, ddb_item ***items,
                                    ddb_cancel *cancel, ddb_error *err);

/* ---------------------------------------------------------- table admin */

typedef struct ddb_key_schema {
    const char *pk;             /* partition key attribute */
    ddb_type pk_type;           /* DDB_S (0 = S), DDB_N or DDB_B */
    const char *sk;             /* NULL for none */
    ddb_type sk_type;
} ddb_key_schema;

typedef enum ddb_projection { DDB_PROJECT_ALL = 0, DDB_PROJECT_KEYS_ONLY, DDB_PROJECT_INCLUDE } ddb_projection;

typedef struct ddb_index_def {
    const char *name;
    ddb_key_schema key;
    ddb_projection projection;
    const char *const *include; /* NULL-terminated, for DDB_PROJECT_INCLUDE */
} ddb_index_def;

typedef struct ddb_create_table_options {
    const ddb_index_def *gsi; size_t n_gsi;
    const ddb_index_def *lsi; size_t n_lsi;
    bool provisioned;           /* false: PAY_PER_REQUEST */
    int64_t read_capacity, write_capacity;
    const char *ttl_attribute;  /* UpdateTimeToLive after creation, NULL for none */
    bool wait_active;           /* wait until ACTIVE (polling DescribeTable on the clock) */
    bool exist_ok;              /* ResourceInUseException counts as success */
} ddb_create_table_options;

/* Table administration. Each is one request (with retries) unless it says otherwise.
 * Thread: any. */
DDB_API int ddb_client_create_table(ddb_client *c, const char *name, const ddb_key_schema *key,
                                    const ddb_create_table_options *o, ddb_cancel *cancel,
                                    ddb_error *err);
DDB_API int ddb_client_delete_table(ddb_client *c, const char *name, ddb_cancel *cancel,
                                    ddb_error *err);

/* Thread: any. */
typedef struct ddb_table_info {
    char status[32];            /* "ACTIVE", "CREATING", ... */
    char pk[256], sk[256];      /* sk "" when none */
    ddb_type pk_type, sk_type;
    int64_t item_count;
} ddb_table_info;
DDB_API int ddb_client_describe_table(ddb_client *c, const char *name, ddb_table_info *info,
                                      ddb_cancel *cancel, ddb_error *err);
/* Polls DescribeTable (on the client's clock) until ACTIVE or timeout_ms passes. */
DDB_API int ddb_client_wait_table_active(ddb_client *c, const char *name, int64_t timeout_ms,
                                         ddb_cancel *cancel, ddb_error *err);
DDB_API int ddb_client_update_ttl(ddb_client *c, const char *table, const char *attribute,
                                  bool enabled, ddb_cancel *cancel, ddb_error *err);

#ifdef __cplusplus
}
#endif
#endif
