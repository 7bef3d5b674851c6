/* internal.h: what the modules of libfakedb share: the server object, tables held in
 * memory, encoded keys, the reply of an operation and DynamoDB's error names. Every
 * function that touches tables or items runs with db->lock held (one lock serialises
 * all data access, which makes every operation atomic and isolated). */
#ifndef FAKEDB_INTERNAL_H
#define FAKEDB_INTERNAL_H

#include <fakedb/fakedb.h>

#include <json-c/json.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <sqlite3.h>

#define FDB_MAX_REQUEST_BYTES (16L * 1024 * 1024)
#define FDB_MAX_ITEM_BYTES (400 * 1024)
#define FDB_PAGE_BYTES (1024 * 1024)
#define FDB_MAX_PK_BYTES 2048
#define FDB_MAX_SK_BYTES 1024
#define FDB_JSON_DEPTH 100
#define FDB_JSON_FLAGS (JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE)
#define FDB_TOKEN_TTL_MS (10 * 60 * 1000)

/* __type values, as DynamoDB spells them. */
#define FDB_NS_DDB "com.amazonaws.dynamodb.v20120810#"
#define FDB_NS_CORAL "com.amazon.coral.service#"
#define FDB_E_VALIDATION "com.amazon.coral.validate#ValidationException"
#define FDB_E_SERIALIZATION FDB_NS_CORAL "SerializationException"
#define FDB_E_UNKNOWN_OP FDB_NS_CORAL "UnknownOperationException"
#define FDB_E_MISSING_AUTH FDB_NS_CORAL "MissingAuthenticationTokenException"
#define FDB_E_INCOMPLETE_SIG FDB_NS_CORAL "IncompleteSignatureException"
#define FDB_E_INVALID_SIG FDB_NS_CORAL "InvalidSignatureException"
#define FDB_E_UNRECOGNIZED FDB_NS_CORAL "UnrecognizedClientException"
#define FDB_E_CCF FDB_NS_DDB "ConditionalCheckFailedException"
#define FDB_E_NOT_FOUND FDB_NS_DDB "ResourceNotFoundException"
#define FDB_E_IN_USE FDB_NS_DDB "ResourceInUseException"
#define FDB_E_TX_CANCELED FDB_NS_DDB "TransactionCanceledException"
#define FDB_E_IDEMPOTENT FDB_NS_DDB "IdempotentParameterMismatchException"
#define FDB_E_INTERNAL FDB_NS_DDB "InternalServerError"
#define FDB_E_LIMIT FDB_NS_DDB "LimitExceededException"

/* The operations, in the order of the dispatch table (protocol.c). */
typedef enum fakedb__op {
    FDB_OP_CREATE_TABLE, FDB_OP_UPDATE_TABLE, FDB_OP_DELETE_TABLE, FDB_OP_DESCRIBE_TABLE,
    FDB_OP_LIST_TABLES, FDB_OP_UPDATE_TTL, FDB_OP_DESCRIBE_TTL, FDB_OP_GET_ITEM,
    FDB_OP_PUT_ITEM, FDB_OP_UPDATE_ITEM, FDB_OP_DELETE_ITEM, FDB_OP_QUERY, FDB_OP_SCAN,
    FDB_OP_BATCH_GET, FDB_OP_BATCH_WRITE, FDB_OP_TRANSACT_WRITE, FDB_OP_TRANSACT_GET,
    FDB_OP_COUNT
} fakedb__op;

const char *fakedb__op_name(int op);
int fakedb__op_lookup(const char *name); /* -1 when unknown */

/* What an operation answers: a body on success, or an error type and message (and
 * optional extra fields, e.g. Item or CancellationReasons, in body). */
typedef struct fakedb__reply {
    int status;
    const char *type;           /* full __type; NULL on success */
    char message[1024];
    json_object *body;          /* owned */
    bool condition_failure;
    const struct fakedb__fault_hit *unprocessed; /* an unprocessed fault for this batch */
} fakedb__reply;

/* Sets a 400 error (500 for InternalServerError) and returns -1. */
int fakedb__fail(fakedb__reply *r, const char *type, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
int fakedb__fail_validation(fakedb__reply *r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* A primary key (or index key) encoded so that memcmp order is DynamoDB's order. */
typedef struct fakedb__key {
    size_t pk_len, sk_len;
    uint8_t pk[FDB_MAX_PK_BYTES];
    uint8_t sk[FDB_MAX_SK_BYTES];
} fakedb__key;

enum { FDB_PROJ_ALL, FDB_PROJ_KEYS_ONLY, FDB_PROJ_INCLUDE };

typedef struct fakedb__index {
    char *name;
    bool global;
    char *pk, *sk;              /* sk NULL when none */
    char pk_type, sk_type;
    int projection;
    char **include;
    size_t n_include;
} fakedb__index;

typedef struct fakedb__table {
    int64_t id;
    char *name;
    char *pk, *sk;
    char pk_type, sk_type;
    json_object *spec;          /* AttributeDefinitions, KeySchema, indexes, billing */
    fakedb__index *idx;
    size_t n_idx;
    char *ttl_attr;             /* NULL when TTL is off */
    int64_t created_ms;
    int64_t item_count, size_bytes;
    struct fakedb__table *next;
} fakedb__table;

typedef struct fakedb__waiter fakedb__waiter;

typedef struct fakedb__fault_rec {
    long id;
    fakedb_fault f;             /* strings owned */
    int fired;
    struct fakedb__fault_rec *next;
} fakedb__fault_rec;

struct fakedb {
    char *host, *db_path, *cred_key, *cred_secret;
    bool log_requests;
    int threads;
    int port;
    char endpoint[96];
    struct MHD_Daemon *mhd;

    pthread_mutex_t lock;       /* data: sqlite, tables */
    sqlite3 *sql;
    struct fakedb__stmt_cache *stmts;
    fakedb__table *tables;
    int64_t next_table_id;

    pthread_mutex_t clock_lock;
    bool fake_clock;
    int64_t fake_now_ms;
    int64_t last_ttl_sweep_ms;

    pthread_mutex_t fault_lock;
    pthread_cond_t fault_fired;  /* a fault fired (guarded by fault_lock) */
    long faults_fired;           /* times any fault fired since start */
    fakedb__fault_rec *faults;
    long next_fault_id;

    pthread_mutex_t stats_lock;
    long stat_requests[FDB_OP_COUNT + 1];
    long stat_cond[FDB_OP_COUNT + 1];

    pthread_mutex_t wait_lock;  /* suspended connections and the ticker */
    pthread_cond_t wait_cond;
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

/* clock.c */
int64_t fakedb__now_ms(fakedb *db);
int64_t fakedb__mono_ms(void);

/* store.c (db->lock held) */
int fakedb__store_open(fakedb *db, fakedb_error *err);
void fakedb__store_close(fakedb *db);
sqlite3_stmt *fakedb__stmt(fakedb *db, const char *sql);
bool fakedb__key_from_row(sqlite3_stmt *st, fakedb__key *k);
int fakedb__tx_begin(fakedb *db);
int fakedb__tx_commit(fakedb *db);
void fakedb__tx_rollback(fakedb *db);
int fakedb__item_get(fakedb *db, const fakedb__table *t, const fakedb__key *k,
                     json_object **out);
int fakedb__item_write(fakedb *db, fakedb__table *t, const fakedb__key *k,
                       json_object *old_item, json_object *new_item);
int fakedb__item_remove(fakedb *db, fakedb__table *t, const fakedb__key *k,
                        json_object *old_item);
int fakedb__table_save(fakedb *db, fakedb__table *t);
int fakedb__table_drop(fakedb *db, fakedb__table *t);
int fakedb__index_fill(fakedb *db, fakedb__table *t, const fakedb__index *ix);
int fakedb__index_drop(fakedb *db, fakedb__table *t, const char *iname);
int fakedb__ttl_refresh(fakedb *db, fakedb__table *t);
int fakedb__store_reset(fakedb *db);
int fakedb__token_lookup(fakedb *db, const char *token, int64_t now_ms, char *digest,
                         size_t n);
int fakedb__token_save(fakedb *db, const char *token, const char *digest,
                       int64_t expires_ms);
int64_t fakedb__ttl_of(const fakedb__table *t, json_object *item);

/* tables.c (db->lock held unless said) */
fakedb__table *fakedb__table_find(fakedb *db, const char *name);
int fakedb__table_lookup(fakedb *db, json_object *req, fakedb__table **out,
                         fakedb__reply *r);
void fakedb__table_free(fakedb__table *t);
fakedb__table *fakedb__table_from_spec(const char *name, json_object *spec);
void fakedb__tables_clear(fakedb *db);
const fakedb__index *fakedb__index_find(const fakedb__table *t, const char *name);
int fakedb__valid_name(const char *name, const char *what, fakedb__reply *r);

/* values.c */
int fakedb__item_validate(json_object *item, fakedb__reply *r);
int fakedb__values_validate(json_object *values, fakedb__reply *r);
char fakedb__av_scalar(json_object *av);      /* 'S','N','B' for scalars, 0 otherwise */
int fakedb__encode_scalar(json_object *av, char type, uint8_t *buf, size_t cap,
                          size_t *len);
enum { FDB_KEY_PARAM, FDB_KEY_ITEM };
int fakedb__key_make(const fakedb__table *t, json_object *attrs, int mode,
                     fakedb__key *out, fakedb__reply *r);
/* 1 = the item is in the index, 0 = not (sparse), -1 = wrong type (r filled) */
int fakedb__index_key(const fakedb__index *ix, json_object *item, fakedb__key *out,
                      fakedb__reply *r);
json_object *fakedb__key_of(const fakedb__table *t, json_object *item);
json_object *fakedb__project_index(const fakedb__table *t, const fakedb__index *ix,
                                   json_object *item);
json_object *fakedb__json_get(json_object *o, const char *key);
const char *fakedb__json_str(json_object *o, const char *key);
/* An Integer member (Limit, Segment, ...): absent leaves *out as it is; a non-integer, a
 * string or a number outside int32 is a SerializationException. */
/* Parses stored JSON (an item, a table spec) with the request's depth limit: json-c's
 * default of 32 is less than the JSON depth of an item nested 32 levels. */
json_object *fakedb__json_from_text(const char *text);
int fakedb__json_int_param(json_object *req, const char *key, int64_t *out, fakedb__reply *r);
json_object *fakedb__json_copy(json_object *o);
/* Copies src into dst (n bytes), truncating. */
void fakedb__copy_str(char *dst, size_t n, const char *src);

/* Capacity: units for a read/write of `bytes`. */
double fakedb__read_units(size_t bytes, bool consistent);
double fakedb__write_units(size_t bytes);
void fakedb__add_capacity(json_object *req, json_object *resp, const char *table,
                          double units);

/* requests (items_ops.c, query.c, batch.c, txn.c, tables.c): db->lock NOT held */
int fakedb__op_create_table(fakedb *db, json_object *req, fakedb__reply *r);
int fakedb__op_update_table(fakedb *db, json_object *req, fakedb__reply *r);
int fakedb__op_delete_table(fakedb *db, json_object *req, fakedb__reply *r);
int fakedb__op_describe_table(fakedb *db, json_object *req, fakedb__reply *r);
int fakedb__op_list_tables(fakedb *db, json_object *req, fakedb__reply *r);
int fakedb__op_update_ttl(fakedb *db, json_object *req, fakedb__reply *r);
int fakedb__op_describe_ttl(fakedb *db, json_object *req, fakedb__reply *r);
int fakedb__op_get_item(fakedb *db, json_object *req, fakedb__reply *r);
int fakedb__op_put_item(fakedb *db, json_object *req, fakedb__reply *r);
int fakedb__op_update_item(fakedb *db, json_object *req, fakedb__reply *r);
int fakedb__op_delete_item(fakedb *db, json_object *req, fakedb__reply *r);
int fakedb__op_query(fakedb *db, json_object *req, fakedb__reply *r);
int fakedb__op_scan(fakedb *db, json_object *req, fakedb__reply *r);
int fakedb__op_batch_get(fakedb *db, json_object *req, fakedb__reply *r);
int fakedb__op_batch_write(fakedb *db, json_object *req, fakedb__reply *r);
int fakedb__op_transact_write(fakedb *db, json_object *req, fakedb__reply *r);
int fakedb__op_transact_get(fakedb *db, json_object *req, fakedb__reply *r);

/* items_ops.c: one prepared write (Put, Update, Delete or ConditionCheck), shared by
 * the single-item operations, BatchWriteItem and TransactWriteItems. */
typedef enum { FDB_W_PUT, FDB_W_UPDATE, FDB_W_DELETE, FDB_W_CHECK } fakedb__wkind;
typedef struct fakedb__write {
    fakedb__wkind kind;
    fakedb__table *table;
    fakedb__key key;
    json_object *key_attrs;      /* borrowed: Key, or the key part of Item */
    json_object *item;           /* borrowed Item for Put */
    struct fakedb__expr_ctx *ctx;
    struct fakedb__expr *cond, *update;
    bool return_old_on_fail;
    /* filled by fakedb__write_eval */
    json_object *old_item;       /* owned */
    json_object *new_item;       /* owned; NULL for delete/check */
} fakedb__write;

/* Parses and validates one write request object (the body of PutItem etc., or of a
 * transaction/batch entry). db->lock held (looks up the table). */
int fakedb__write_prepare(fakedb *db, fakedb__wkind kind, json_object *req,
                          fakedb__write *w, fakedb__reply *r);
/* Reads the old item, evaluates the condition, computes the new item. Returns 0, 1 when
 * the condition failed, or -1 on an error (r filled). */
int fakedb__write_eval(fakedb *db, fakedb__write *w, fakedb__reply *r);
int fakedb__write_apply(fakedb *db, fakedb__write *w);
void fakedb__write_cleanup(fakedb__write *w);
int fakedb__parse_projection(json_object *req, struct fakedb__expr_ctx *ctx,
                             struct fakedb__expr **out, fakedb__reply *r);
json_object *fakedb__apply_projection(struct fakedb__expr *proj, json_object *attrs_to_get,
                                      json_object *item);

/* Expression helpers shared by the request modules (items_ops.c). */
int fakedb__expr_setup(json_object *req, const char *const *params,
                       struct fakedb__expr_ctx **ctx, fakedb__reply *r);
int fakedb__expr_parse_param(struct fakedb__expr_ctx *ctx, json_object *req,
                             const char *param, int kind, struct fakedb__expr **out,
                             fakedb__reply *r);
int fakedb__expr_unused(struct fakedb__expr_ctx *ctx, fakedb__reply *r);

/* ttl.c */
int fakedb__ttl_sweep(fakedb *db);       /* takes db->lock */

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
 * holding its partition key `pk`). */
bool fakedb__fault_covers(const fakedb__fault_hit *h, const char *table, const char *pk, json_object *attrs);
bool fakedb__fault_match(fakedb *db, const char *op, json_object *req,
                         fakedb_fault_kind kind, fakedb__fault_hit *hit);
json_object *fakedb__faults_json(fakedb *db);
void fakedb__faults_free(fakedb *db);

/* stats */
void fakedb__stat_count(fakedb *db, int op, bool condition_failure);

/* server.c: the suspended-connection registry used by delays and clock waits. */
void fakedb__wake_waiters(fakedb *db);

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
} fakedb__http_req;

typedef struct fakedb__http_resp {
    int status;
    char *body;                 /* malloc'd */
    size_t body_len;
    const char *content_type;
    bool amz;                   /* add x-amzn-RequestId and x-amz-crc32 */
    bool lose;                  /* close the connection unanswered */
    bool close;                 /* answer, then close the connection */
    int64_t delay_ms;           /* suspend before handling (fault) */
    uint32_t crc32;
} fakedb__http_resp;

void fakedb__handle_ddb(fakedb *db, fakedb__http_req *rq, fakedb__http_resp *rs,
                        bool after_delay);
uint32_t fakedb__crc32(const void *data, size_t len);
void fakedb__request_id(fakedb *db, char out[53]);

/* admin.c: returns 1 when the request is a clock wait to suspend (until_ms and
 * timeout_ms filled), 0 when rs is the answer. */
int fakedb__handle_admin(fakedb *db, fakedb__http_req *rq, fakedb__http_resp *rs,
                         int64_t *until_ms, int64_t *timeout_ms);
void fakedb__admin_wait_answer(fakedb *db, int64_t until_ms, fakedb__http_resp *rs);
void fakedb__answer_error(fakedb__http_resp *rs, int status, const char *type, const char *msg);
void fakedb__resp_json(fakedb__http_resp *rs, int status, json_object *o);

#endif
