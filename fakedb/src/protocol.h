/* protocol.h: layer 5 of libfakedb, the dispatcher. protocol.c checks a request the
 * way DynamoDB does, consults the faults (faults.c, which also counts requests), calls
 * the operation and renders its reply or error as the HTTP answer; metrics.c keeps the
 * server's own metrics (GET /fake/metrics). Holds the server
 * object, struct fakedb: its parts below (store, clock) are handed down, the fields
 * marked "server" are touched by layer 6 only. Calls operations, storage and values. */
#ifndef FAKEDB_PROTOCOL_H
#define FAKEDB_PROTOCOL_H

#include "ops.h"

#include <fakedb/fakedb.h>
#include <pthread.h>
#include <stdatomic.h>

typedef struct fakedb__waiter fakedb__waiter;

/* metrics.c: counters of the request path, added to with relaxed atomics. */
#define FDB_STATUS_SLOTS 501    /* 0: no answer; 1 + status - 100 for 100..599 */
#define FDB_DURATION_BUCKETS 16 /* finite bounds of the histogram; one more for +Inf */
typedef struct fakedb__error_count {
    int op;
    char type[128];
    unsigned long n;
    struct fakedb__error_count *next;
} fakedb__error_count;

typedef struct fakedb__metrics {
    /* [operation; FDB_OP_COUNT: unknown] */
    unsigned long requests[FDB_OP_COUNT + 1][FDB_STATUS_SLOTS];
    unsigned long duration[FDB_OP_COUNT + 1][FDB_DURATION_BUCKETS + 1]; /* not cumulative */
    uint64_t duration_ns[FDB_OP_COUNT + 1];
    unsigned long faults[FAKEDB_FAULT_LOST_REQUEST + 1];
    pthread_mutex_t error_lock;
    fakedb__error_count *errors; /* by operation and short error type (error_lock) */
} fakedb__metrics;

/* metrics.c: the last FDB_RECENT_SLOTS DynamoDB requests, for the console (console.c):
 * a fixed ring written under one short critical section per request. */
#define FDB_RECENT_SLOTS 512
typedef struct fakedb__recent_entry {
    uint64_t seq;               /* 1, 2, ...; 0: the slot was never written */
    int op;                     /* -1: unknown operation */
    int status;                 /* 0: no answer sent */
    uint64_t mono_ns;           /* when it was answered, fakedb__metrics_now_ns() */
    uint64_t latency_ns;
    char table[256];            /* its TableName, or "" */
    char error[128];            /* its error's short type, or "" */
} fakedb__recent_entry;

typedef struct fakedb__recent {
    pthread_mutex_t lock;
    uint64_t seq;               /* of the last entry written */
    fakedb__recent_entry e[FDB_RECENT_SLOTS];
} fakedb__recent;

typedef struct fakedb__fault_rec {
    long id;
    fakedb_fault f;             /* strings owned */
    int fired;
    struct fakedb__fault_rec *next;
} fakedb__fault_rec;

struct fakedb {
    char *host, *db_path, *cred_key, *cred_secret;
    char *cors;                 /* NULL: off; "*" or origins, comma-separated */
    bool log_requests;
    int threads;
    int port;
    char endpoint[96];
    struct MHD_Daemon *mhd;     /* server */

    fakedb__store store;        /* data: sqlite, tables (store.lock); the shared database */
    bool separate_dbs;          /* a database per access key and region (databases.c) */
    pthread_mutex_t dbs_lock;   /* dbs, n_dbs; taken before a store's lock, never after */
    struct fakedb__database *dbs;
    size_t n_dbs;
    fakedb__clock clock;

    pthread_mutex_t fault_lock;
    pthread_cond_t fault_fired;  /* a fault fired (guarded by fault_lock) */
    long faults_fired;           /* times any fault fired since start */
    fakedb__fault_rec *faults;
    long next_fault_id;

    pthread_mutex_t stats_lock;
    long stat_requests[FDB_OP_COUNT + 1];
    long stat_cond[FDB_OP_COUNT + 1];

    fakedb__metrics metrics;    /* since start; fakedb_reset leaves them */
    fakedb__recent recent;      /* the last requests, for the console */

    /* server (console.c): when the console last saw each lock item's rvn change */
    pthread_mutex_t console_lock;
    struct fakedb__lock_seen *lock_seen;

    /* server: */
    pthread_mutex_t wait_lock;  /* suspended connections and the ticker */
    pthread_cond_t wait_cond;
    atomic_int busy;            /* requests in progress: fakedb_stop answers them first */
    fakedb__waiter *waiters;
    bool stopping;
    bool ticker_started;

    pthread_mutex_t conn_lock;  /* the connections' list; never held with another lock */
    struct fakedb__conn *idle_head, *idle_tail; /* no request in progress, longest idle first */
    unsigned conn_count, conn_limit, conn_high_water;
    int64_t idle_timeout_ms;
    pthread_t ticker;
    unsigned long request_seq;
};

/* faults.c */
typedef struct fakedb__fault_hit {
    fakedb_fault_kind kind;
    char error_type[128];
    int status;
    int64_t delay_ms;
    char table[256];            /* the fault's filters; "" = any */
    char key[2100];
} fakedb__fault_hit;
/* Whether an unprocessed fault covers one batch entry (its table, and the attributes
 * holding its partition key `pk`); h is a fakedb__fault_hit. A fakedb__leave_out_fn. */
bool fakedb__fault_covers(const void *h, const char *table, const char *pk, json_object *attrs);
bool fakedb__fault_match(fakedb *db, const char *op, json_object *req,
                         fakedb_fault_kind kind, fakedb__fault_hit *hit);
json_object *fakedb__faults_json(fakedb *db);
/* The database whose tables a fault's key filter is read against, for the requests this
 * thread matches from now on (protocol.c sets it per request); NULL: db->store. */
void fakedb__faults_store_set(fakedb__store *st);
/* Adds the fault a JSON object describes (the body of POST /fake/faults): its id, or -1
 * (FAKEDB_ELIMIT for a string over its limit or too many faults, FAKEDB_ENOMEM) with *why
 * set to a static message. */
long fakedb__fault_add_json(fakedb *db, json_object *body, const char **why);
/* Which string of f is longer than its FAKEDB_MAX_FAULT_* ("error_type is longer than
 * 127 bytes"), or NULL. */
const char *fakedb__fault_too_long(const fakedb_fault *f);
void fakedb__faults_free(fakedb *db);

/* stats */
void fakedb__stat_count(fakedb *db, int op, bool condition_failure);

/* protocol.c */
typedef struct fakedb__http_req {
    const char *method, *url, *query;
    const char *target, *content_type, *authorization;
    const char *body;
    size_t body_len;
    bool body_too_large;
    const struct dl_sigv4_header *headers; /* every header, for SigV4 checks */
    size_t n_headers;
    const char *(*get_arg)(void *arg_ctx, const char *name); /* query arguments */
    void *arg_ctx;
    bool resumed;               /* a console long poll that has waited: answer now */
} fakedb__http_req;

typedef struct fakedb__http_resp {
    int status;
    char error_type[128];       /* an error's __type after the '#', for the metrics */
    char table[256];            /* the request's TableName (or ""), for the console */
    bool console;               /* a console answer: add its security headers */
    char *body;                 /* malloc'd */
    size_t body_len;
    const char *content_type;
    bool amz;                   /* add x-amzn-RequestId and x-amz-crc32 */
    bool lose;                  /* close the connection unanswered */
    bool close;                 /* answer, then close the connection */
    bool gzip;                  /* body is gzip: add Content-Encoding: gzip */
    int64_t delay_ms;           /* suspend before handling (fault) */
    uint32_t crc32;
} fakedb__http_resp;

void fakedb__handle_ddb(fakedb *db, fakedb__http_req *rq, fakedb__http_resp *rs,
                        bool after_delay);
uint32_t fakedb__crc32(const void *data, size_t len);
void fakedb__request_id(fakedb *db, char out[53]);
void fakedb__answer_error(fakedb__http_resp *rs, int status, const char *type, const char *msg);
void fakedb__resp_json(fakedb__http_resp *rs, int status, json_object *o);
/* Whether rq is signed with the server's credentials as a DynamoDB request must be
 * (the same checks); when not, why (DynamoDB's message) goes to why. */
bool fakedb__signed(fakedb *db, fakedb__http_req *rq, char *why, size_t n);

/* databases.c: a database per access key and region (separate_dbs). The keys are letters
 * and digits, the regions lower-case letters, digits and '-'. */
#define FDB_DB_KEY_MAX 128
#define FDB_DB_REGION_MAX 32
#define FDB_MAX_DATABASES 256
/* The store a DynamoDB request acts on: db->store when databases are shared, else that
 * of its credential scope, made on first use; NULL with *why set: FAKEDB_EINVAL for a
 * key that is not letters and digits, FAKEDB_ELIMIT past FDB_MAX_DATABASES, else the
 * database could not be opened. */
fakedb__store *fakedb__database_for(fakedb *db, const char *authorization, fakedb_error *why);
/* Database (key, region) if it exists (db->store when shared), else NULL. */
fakedb__store *fakedb__database_named(fakedb *db, const char *key, const char *region);
/* Calls fn for every database (the shared one: key and region NULL), in creation order. */
void fakedb__databases_each(fakedb *db, void (*fn)(void *arg, fakedb__store *st, const char *key,
                                                   const char *region),
                            void *arg);
/* With separate_dbs and a file: opens the FILE.KEY_REGION.sqlite beside it. */
int fakedb__databases_open_existing(fakedb *db, fakedb_error *err);
void fakedb__databases_free(fakedb *db);
/* encoding.c. Decodes a body sent with Content-Encoding `coding` (NULL or identity: *out
 * stays NULL, the body is used as it is; gzip, x-gzip, deflate in the zlib format or
 * raw): 0 with *out (malloc'd, NUL-terminated) and *out_len, FDB_DECODE_TOO_LARGE once
 * more than `limit` bytes would come out (no more is inflated), FDB_DECODE_BAD with *why
 * (static text) for an unknown coding or data that is corrupt or truncated. */
enum { FDB_DECODE_TOO_LARGE = 1, FDB_DECODE_BAD = 2 };
int fakedb__body_decode(const char *coding, const char *in, size_t len, size_t limit,
                        char **out, size_t *out_len, const char **why);
/* Whether an Accept-Encoding header asks for gzip (named, or `*`, with a q above 0). */
bool fakedb__accepts_gzip(const char *accept_encoding);
/* in as gzip into *out (malloc'd); 0, or -1 when out of memory. */
int fakedb__gzip(const char *in, size_t len, char **out, size_t *out_len);

/* metrics.c. A request is counted once it is answered (or lost): op -1 for an unknown
 * operation, status 0 when no answer was sent, error_type "" or NULL on success. */
void fakedb__metrics_init(fakedb__metrics *m);
void fakedb__metrics_cleanup(fakedb__metrics *m);
uint64_t fakedb__metrics_now_ns(void);
void fakedb__metrics_request(fakedb__metrics *m, int op, int status, const char *error_type,
                             uint64_t ns);
void fakedb__metrics_fault(fakedb__metrics *m, fakedb_fault_kind kind);
/* The text exposition (Prometheus 0.0.4) of db's metrics, malloc'd (NULL when out of
 * memory); open_connections comes from the server layer. */
char *fakedb__metrics_text(fakedb *db, unsigned open_connections, size_t *len);
/* Adds a request answered to db->recent (one short critical section). */
void fakedb__recent_add(fakedb__recent *r, int op, int status, const char *table,
                        const char *error_type, uint64_t now_ns, uint64_t latency_ns);
/* A label value escaped as the text format wants it, malloc'd. */
char *fakedb__metrics_escape(const char *s);

#endif
