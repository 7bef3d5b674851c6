/* fakedb.h: libfakedb, a fake DynamoDB server that runs inside a test's process (or as
 * the `fakedb` program). It speaks DynamoDB's JSON protocol over real HTTP on a loopback
 * port, so any DynamoDB client can be pointed at it.
 *
 * Ownership: strings passed in are copied; fakedb_stop frees the server. Every function
 * may be called from any thread, while the server runs.
 */
#ifndef FAKEDB_FAKEDB_H
#define FAKEDB_FAKEDB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <dynalock/export.h>

#ifdef __cplusplus
extern "C" {
#endif

enum {
    FAKEDB_OK = 0,
    FAKEDB_EINVAL = -1,   /* a bad option or argument */
    FAKEDB_ENOMEM = -2,
    FAKEDB_EIO = -3,      /* the database file or a socket failed */
    FAKEDB_ENOTFOUND = -4,
    FAKEDB_EINUSE = -5,   /* the table exists already */
    FAKEDB_ETIMEDOUT = -6, /* a wait ran out */
    FAKEDB_ELIMIT = -7,   /* a limit below was reached */
};

/* Fault rules at once, and the longest of each of their strings, in bytes. */
#define FAKEDB_MAX_FAULTS 1000
#define FAKEDB_MAX_FAULT_OPERATION 64
#define FAKEDB_MAX_FAULT_TABLE 255
#define FAKEDB_MAX_FAULT_KEY 2048
#define FAKEDB_MAX_FAULT_ERROR_TYPE 127

typedef struct fakedb_error {
    int code;
    char message[256];
} fakedb_error;

typedef struct fakedb fakedb;

typedef struct fakedb_options {
    const char *host;          /* NULL = "127.0.0.1" */
    int port;                  /* 0 = an ephemeral port */
    const char *db_path;       /* NULL = in memory; a path = durable sqlite file (WAL) */
    bool fake_clock;           /* the server's clock is fake, moved only by advance/set */
    int64_t fake_clock_start_ms; /* with fake_clock: its start (ms since epoch); 0 = now */
    const char *credentials;   /* "KEY:SECRET": verify SigV4; NULL = accept any signature */
    int threads;               /* HTTP event loops, each serving its share of the
                                  connections; 0 = 1 (see docs/fakedb.md) */
    bool log_requests;         /* one line per request on stderr */
    int idle_timeout_ms;       /* a connection with no request in progress for this long,
                                  or a request that stalls this long, is closed; 0 = 60000 */
    int max_connections;       /* open connections at most; 0 = from RLIMIT_NOFILE (at most
                                  16384). Near the limit the longest-idle connections are
                                  closed so that a new client is always answered */
    /* Members added later are read only when the caller was built with them (see
     * fakedb_start below); their zero value is the old behaviour. */
    const char *cors;          /* CORS: the origins allowed, comma-separated, "*" = any;
                                  NULL = "*"; "" = no CORS (no preflight answers, no
                                  Access-Control headers) */
    bool separate_databases;   /* a database per access key and region of the requests'
                                  SigV4 credential scope, as DynamoDB Local without
                                  -sharedDb (keys: letters and digits); false = one
                                  database shared by all. With db_path, database (KEY,
                                  REGION) is the file db_path.KEY_REGION.sqlite; those
                                  present are opened at start. fakedb_reset and the
                                  clock act on every database; fakedb_create_table is
                                  refused (FAKEDB_EINVAL) as it names none */
} fakedb_options;

/* Starts a server; returns NULL and fills err on failure. A port in use (by any other
 * socket) is refused with FAKEDB_EIO and "cannot listen on HOST:PORT: Address already in
 * use". `size` is sizeof(fakedb_options) as the caller was built: the macro fakedb_start
 * passes it.
 * Thread: any; fakedb_stop once, from a thread that is not serving a request. */
FAKEDB_API fakedb *fakedb_start_sized(size_t size, const fakedb_options *o, fakedb_error *err);
/* fakedb_start as first released: the options up to max_connections. Thread: any. */
FAKEDB_API fakedb *fakedb_start(const fakedb_options *o, fakedb_error *err);
/* Variadic, so that a compound literal's commas pass through. */
#define fakedb_start(...) fakedb_start_sized(sizeof(fakedb_options), __VA_ARGS__)
/* Finishes in-flight requests, stops and frees the server. NULL is a no-op. */
FAKEDB_API void fakedb_stop(fakedb *db);
FAKEDB_API int fakedb_port(const fakedb *db);
/* "http://127.0.0.1:PORT", borrowed. */
FAKEDB_API const char *fakedb_endpoint(const fakedb *db);

/* The server's clock, in ms since the epoch. Thread: any. */
FAKEDB_API int64_t fakedb_clock_now_ms(fakedb *db);
/* Fake clock only: moves it (FAKEDB_EINVAL on a system clock or a move backwards). Items
 * whose time to live is due are deleted, and clock long polls answered, before these
 * return. */
FAKEDB_API int fakedb_clock_advance(fakedb *db, int64_t ms);
FAKEDB_API int fakedb_clock_set(fakedb *db, int64_t epoch_ms);

/* Creates a table with string keys (sk may be NULL), on demand billing, ACTIVE at once
 * (CREATING for a while after fakedb_transient_statuses_set).
 * Thread: any. */
FAKEDB_API int fakedb_create_table(fakedb *db, const char *name, const char *pk,
                                   const char *sk, fakedb_error *err);
/* Deletes every table and fault. */
FAKEDB_API void fakedb_reset(fakedb *db);

/* The account id in the ARNs fakedb answers (TableArn, IndexArn, stream ARNs made from
 * now on): 12 digits; "000000000000" until set, as DynamoDB Local. The region in them is
 * the one of each request's SigV4 credential scope (us-east-1 when it has none).
 * FAKEDB_EINVAL when not 12 digits. Thread: any. */
FAKEDB_API int fakedb_account_id_set(fakedb *db, const char *account_id);
/* Transient statuses, as DynamoDB's (DynamoDB Local's -delayTransientStatuses): from now
 * on a created table is CREATING (item requests get ResourceNotFoundException), an
 * updated one UPDATING, a deleted one DELETING (still listed and described, its items
 * gone) for `ms` of the server's clock; 0 (the default) keeps every table ACTIVE at once.
 * Call it, and fakedb_account_id_set, before handing out the endpoint.
 * FAKEDB_EINVAL when ms < 0. Thread: any. */
FAKEDB_API int fakedb_transient_statuses_set(fakedb *db, int64_t ms);

/* Fault injection: requests that match (NULL/empty fields match anything) get the fault
 * instead of, or in addition to, their normal handling, `count` times (0 = always). */
typedef enum fakedb_fault_kind {
    FAKEDB_FAULT_ERROR = 1,    /* answer with error_type/status, the request not applied */
    FAKEDB_FAULT_DELAY,        /* wait delay_ms (on real time) before handling */
    FAKEDB_FAULT_LOST_RESPONSE, /* apply the request, then close the connection unanswered */
    FAKEDB_FAULT_UNPROCESSED,  /* BatchWriteItem/BatchGetItem: the entries that match (by
                                  table and key; all when neither is set) are not applied
                                  and come back in UnprocessedItems/UnprocessedKeys; the
                                  others are applied. `count` counts requests */
    FAKEDB_FAULT_LOST_REQUEST  /* close the connection unanswered, the request not applied */
} fakedb_fault_kind;

typedef struct fakedb_fault {
    fakedb_fault_kind kind;
    const char *operation;     /* e.g. "UpdateItem" */
    const char *table;
    const char *key;           /* the value of the partition key, as a string */
    int count;                 /* times to fire; 0 = until removed */
    const char *error_type;    /* FAKEDB_FAULT_ERROR: e.g.
                                  "ProvisionedThroughputExceededException" (the default);
                                  "InternalServerError" */
    int status;                /* 0 = 400 for throttling, 500 for InternalServerError */
    int64_t delay_ms;          /* FAKEDB_FAULT_DELAY */
} fakedb_fault;

/* Adds a fault; returns its id (> 0) or a negative FAKEDB_E*: FAKEDB_ELIMIT when
 * FAKEDB_MAX_FAULTS are set or a string is longer than its FAKEDB_MAX_FAULT_*.
 * Thread: any. */
FAKEDB_API long fakedb_fault_add(fakedb *db, const fakedb_fault *f);
FAKEDB_API void fakedb_fault_remove(fakedb *db, long id);
FAKEDB_API void fakedb_fault_clear(fakedb *db);
/* Times any fault has fired since start: a request matched it (a delay fault fires when
 * the request arrives, before it waits). */
FAKEDB_API long fakedb_faults_fired(fakedb *db);
/* Blocks until faults have fired at least n times in all, or timeout_ms of real time
 * passes: 0 or FAKEDB_ETIMEDOUT. How a test knows that a request it made hang has
 * reached the server. */
FAKEDB_API int fakedb_wait_faults_fired(fakedb *db, long n, int64_t timeout_ms);

/* Counters since start (or reset): requests received for an operation (NULL = all), and
 * of those, the ones that failed a condition (ConditionalCheckFailed or a transaction
 * cancelled for a condition). Thread: any. */
typedef struct fakedb_stats {
    long requests;
    long condition_failures;
} fakedb_stats;
FAKEDB_API fakedb_stats fakedb_get_stats(fakedb *db, const char *operation);

/* Thread: any. */
FAKEDB_API const char *fakedb_version(void);

#ifdef __cplusplus
}
#endif
#endif
