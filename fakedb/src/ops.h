/* ops.h: layer 4 of libfakedb, operations. The DynamoDB operations by name (ops.c) and
 * their bodies: tables.c, items_ops.c (with the prepared write the batch and transaction
 * operations share), query.c, batch.c, txn.c. An operation reads a parsed request and
 * fills a fakedb__reply; it calls storage, expressions and values, never the
 * dispatcher, faults or the server. db->lock is not held when an operation starts. */
#ifndef FAKEDB_OPS_H
#define FAKEDB_OPS_H

#include "store.h"

struct fakedb__expr_ctx;
struct fakedb__expr;

/* The operations, in the order of the dispatch table (ops.c). */
typedef enum fakedb__op {
    FDB_OP_CREATE_TABLE, FDB_OP_UPDATE_TABLE, FDB_OP_DELETE_TABLE, FDB_OP_DESCRIBE_TABLE,
    FDB_OP_LIST_TABLES, FDB_OP_UPDATE_TTL, FDB_OP_DESCRIBE_TTL, FDB_OP_GET_ITEM,
    FDB_OP_PUT_ITEM, FDB_OP_UPDATE_ITEM, FDB_OP_DELETE_ITEM, FDB_OP_QUERY, FDB_OP_SCAN,
    FDB_OP_BATCH_GET, FDB_OP_BATCH_WRITE, FDB_OP_TRANSACT_WRITE, FDB_OP_TRANSACT_GET,
    FDB_OP_LIST_STREAMS, FDB_OP_DESCRIBE_STREAM, FDB_OP_GET_SHARD_ITERATOR, FDB_OP_GET_RECORDS,
    FDB_OP_TAG_RESOURCE, FDB_OP_UNTAG_RESOURCE, FDB_OP_LIST_TAGS, FDB_OP_DESCRIBE_BACKUPS,
    FDB_OP_UPDATE_BACKUPS, FDB_OP_DESCRIBE_LIMITS, FDB_OP_DESCRIBE_ENDPOINTS,
    FDB_OP_EXECUTE_STATEMENT, FDB_OP_BATCH_EXECUTE_STATEMENT, FDB_OP_EXECUTE_TRANSACTION,
    FDB_OP_COUNT
} fakedb__op;

const char *fakedb__op_name(int op);
int fakedb__op_lookup(const char *name); /* -1 when unknown */
/* Whether op belongs to DynamoDB Streams (target DynamoDBStreams_20120810), not DynamoDB. */
bool fakedb__op_is_streams(int op);

/* Whether a batch entry is to be left unprocessed: its table, the name of its
 * partition key and the attributes holding it. */
typedef bool (*fakedb__leave_out_fn)(const void *arg, const char *table, const char *pk,
                                     json_object *attrs);

/* What an operation answers: a body on success, or an error (and optional extra fields,
 * e.g. Item or CancellationReasons, in body). */
typedef struct fakedb__reply {
    fakedb__error err;
    json_object *body;          /* owned */
    bool condition_failure;
    fakedb__leave_out_fn leave_out; /* set by the caller for a batch, or NULL */
    const void *leave_out_arg;
    const char *host;           /* borrowed: the request's Host header (DescribeEndpoints
                                   only), or NULL */
    const char *region;         /* borrowed: the region of the request's SigV4 credential
                                   scope, or NULL (then us-east-1); it goes into ARNs */
    bool render_only;           /* set by the caller when the body is only rendered as
                                   JSON, never read: Query and Scan then copy the stored
                                   JSON of whole items instead of parsing each one */
} fakedb__reply;

/* Sets the reply's error, drops any body built so far and returns -1. */
int fakedb__reply_fail(fakedb__reply *r, const char *type, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
int fakedb__reply_fail_validation(fakedb__reply *r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* The list `member` of a request (TransactItems, Statements...): present, a JSON array,
 * of 1 to max entries, or the error DynamoDB gives, naming it as `label` (its name in
 * AWS's constraint messages, e.g. "transactItems"). 0 with *out borrowed, or -1. */
int fakedb__reply_need_list(json_object *req, const char *member, const char *label,
                            size_t max, json_object **out, fakedb__reply *r);

/* shape.c: the JSON types of req's members (strings, booleans, lists, maps of strings)
 * as DynamoDB's deserializer checks them before the operation: 0, or -1 with r's error
 * a SerializationException. fakedb__op_call runs it first. */
int fakedb__request_shape(json_object *req, fakedb__reply *r);

/* Runs operation op (0 <= op < FDB_OP_COUNT), its request's shape checked first. */
int fakedb__op_call(int op, fakedb__store *db, json_object *req, fakedb__reply *r);

/* tables.c */
/* "arn:aws:dynamodb:REGION:ACCOUNT:table/NAME": the request's region, db's account. */
void fakedb__table_arn(const fakedb__store *db, const fakedb__reply *r, const char *name,
                       char *out, size_t n);
int fakedb__table_lookup(fakedb__store *db, json_object *req, fakedb__table **out,
                         fakedb__reply *r);
int fakedb__valid_name(const char *name, const char *what, fakedb__reply *r);

/* index_update.c: UpdateTable's GlobalSecondaryIndexUpdates (db->lock held) */
/* DynamoDB's checks of the updates against table t: 0, or -1 with r's error. */
int fakedb__gsi_updates_check(fakedb__table *t, json_object *req, fakedb__reply *r);
/* The AttributeNames of an AttributeDefinitions list, sorted, joined by ", " into out
 * (cut at cap), for the messages that list them. index_update.c. */
void fakedb__def_names(json_object *defs, char *out, size_t cap);
/* While t's index is CREATING or DELETING: -1 with ResourceInUseException, or 1 for the
 * one change allowed then (deleting the index being created); 0 when no index changes. */
int fakedb__gsi_update_busy(fakedb__store *db, fakedb__table *t, json_object *req, fakedb__reply *r);
/* After a successful UpdateTable: the index it created (Backfilling) and the description
 * of the one it deleted (taken: a reference), for as long as the table stays UPDATING;
 * nothing is kept without --delay-transient-statuses. */
void fakedb__gsi_update_mark(fakedb__store *db, fakedb__table *t, const char *created,
                             json_object *deleted_desc);
/* Whether index `name` of t is still backfilling: Query and Scan refuse it. */
bool fakedb__index_backfilling(fakedb__store *db, const fakedb__table *t, const char *name);
/* The DELETING description of t's deleted index while it shows (borrowed), or NULL. */
json_object *fakedb__index_deleting(fakedb__store *db, const fakedb__table *t);

/* the operations (items_ops.c, query.c, batch.c, txn.c, tables.c) */
int fakedb__op_create_table(fakedb__store *db, json_object *req, fakedb__reply *r);
int fakedb__op_update_table(fakedb__store *db, json_object *req, fakedb__reply *r);
int fakedb__op_delete_table(fakedb__store *db, json_object *req, fakedb__reply *r);
int fakedb__op_describe_table(fakedb__store *db, json_object *req, fakedb__reply *r);
int fakedb__op_list_tables(fakedb__store *db, json_object *req, fakedb__reply *r);
int fakedb__op_update_ttl(fakedb__store *db, json_object *req, fakedb__reply *r);
int fakedb__op_describe_ttl(fakedb__store *db, json_object *req, fakedb__reply *r);
int fakedb__op_get_item(fakedb__store *db, json_object *req, fakedb__reply *r);
int fakedb__op_put_item(fakedb__store *db, json_object *req, fakedb__reply *r);
int fakedb__op_update_item(fakedb__store *db, json_object *req, fakedb__reply *r);
int fakedb__op_delete_item(fakedb__store *db, json_object *req, fakedb__reply *r);
int fakedb__op_query(fakedb__store *db, json_object *req, fakedb__reply *r);
int fakedb__op_scan(fakedb__store *db, json_object *req, fakedb__reply *r);
int fakedb__op_batch_get(fakedb__store *db, json_object *req, fakedb__reply *r);
int fakedb__op_batch_write(fakedb__store *db, json_object *req, fakedb__reply *r);
int fakedb__op_transact_write(fakedb__store *db, json_object *req, fakedb__reply *r);
int fakedb__op_transact_get(fakedb__store *db, json_object *req, fakedb__reply *r);
/* streams.c: DynamoDB Streams */
int fakedb__op_list_streams(fakedb__store *db, json_object *req, fakedb__reply *r);
int fakedb__op_describe_stream(fakedb__store *db, json_object *req, fakedb__reply *r);
int fakedb__op_get_shard_iterator(fakedb__store *db, json_object *req, fakedb__reply *r);
int fakedb__op_get_records(fakedb__store *db, json_object *req, fakedb__reply *r);

/* meta.c: tags, continuous backups, limits and endpoints */
int fakedb__op_tag_resource(fakedb__store *db, json_object *req, fakedb__reply *r);
int fakedb__op_untag_resource(fakedb__store *db, json_object *req, fakedb__reply *r);
int fakedb__op_list_tags(fakedb__store *db, json_object *req, fakedb__reply *r);
int fakedb__op_describe_backups(fakedb__store *db, json_object *req, fakedb__reply *r);
int fakedb__op_update_backups(fakedb__store *db, json_object *req, fakedb__reply *r);
int fakedb__op_describe_limits(fakedb__store *db, json_object *req, fakedb__reply *r);
int fakedb__op_describe_endpoints(fakedb__store *db, json_object *req, fakedb__reply *r);
/* CreateTable's Tags checked as TagResource checks them, sorted by key and without
 * repeated keys: a new array (empty without Tags), or NULL with r filled. */
json_object *fakedb__tags_for_create(json_object *req, fakedb__reply *r);
/* partiql.c: PartiQL, translated into the requests above */
int fakedb__op_execute_statement(fakedb__store *db, json_object *req, fakedb__reply *r);
int fakedb__op_batch_execute_statement(fakedb__store *db, json_object *req, fakedb__reply *r);
int fakedb__op_execute_transaction(fakedb__store *db, json_object *req, fakedb__reply *r);

/* query.c: PartiQL's SELECT run as a Query or Scan. req is a Query or Scan request
 * (TableName, IndexName, the key condition with its names and values, Limit,
 * ExclusiveStartKey, ConsistentRead, ScanIndexForward); `where` (may name key
 * attributes) filters every item read, and `project` makes each answered item. */
typedef struct fakedb__pq_select {
    const struct fakedb__expr *where;
    json_object *(*project)(const void *arg, json_object *item);
    const void *arg;
} fakedb__pq_select;
int fakedb__query_partiql(fakedb__store *db, json_object *req, bool scan, const fakedb__pq_select *pq,
                          fakedb__reply *r);

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
int fakedb__write_prepare(fakedb__store *db, fakedb__wkind kind, json_object *req,
                          fakedb__write *w, fakedb__reply *r);
/* Reads the old item, evaluates the condition, computes the new item. Returns 0, 1 when
 * the condition failed, or -1 on an error (r filled). */
int fakedb__write_eval(fakedb__store *db, fakedb__write *w, fakedb__reply *r);
int fakedb__write_apply(fakedb__store *db, fakedb__write *w);
void fakedb__write_cleanup(fakedb__write *w);
int fakedb__parse_projection(json_object *req, struct fakedb__expr_ctx *ctx,
                             struct fakedb__expr **out, fakedb__reply *r);
json_object *fakedb__apply_projection(struct fakedb__expr *proj, json_object *attrs_to_get,
                                      json_object *item);

/* capacity.c: consumed capacity. Units for a read or a write of `bytes` (a started 4 KB
 * or KB; a read of nothing is still a unit, half when eventually consistent). */
double fakedb__read_units(size_t bytes, bool consistent);
double fakedb__write_units(size_t bytes);
/* Whether the request asks for ConsumedCapacity (TOTAL or INDEXES). */
bool fakedb__capacity_wanted(json_object *req);
/* The write units of w (evaluated) for its table, returned, and for each index of its
 * table in ix_units (w->table->n_idx of them): an index entry written or removed by the
 * size the index projects, twice when its key changes; a ConditionCheck writes none. */
double fakedb__write_capacity(const fakedb__write *w, double *ix_units);
/* resp.ConsumedCapacity for a request of one table, when req asks for it: units in
 * total and, for INDEXES, as the table's own. */
void fakedb__add_capacity(json_object *req, json_object *resp, const char *table,
                          double units);
/* The same with the units of t's indexes (ix_units[i] for t->idx[i]; 0: not touched) in
 * the total and, for INDEXES, listed under GlobalSecondaryIndexes and
 * LocalSecondaryIndexes beside the table's own. */
void fakedb__add_capacity_ix(json_object *req, json_object *resp, const fakedb__table *t,
                             double table_units, const double *ix_units);
/* Batches and transactions: adds the units to t's entry of list (a JSON array, one entry
 * per table, made on t's first units), when req asks for capacity. ix_units may be NULL.
 * kind, when not NULL ("ReadCapacityUnits", "WriteCapacityUnits", as transactions answer),
 * repeats each number under that name. */
void fakedb__capacity_list_add(json_object *req, json_object *list, const fakedb__table *t,
                               const char *kind, double table_units, const double *ix_units);

/* Expression helpers shared by the request modules (items_ops.c). */
int fakedb__expr_setup(json_object *req, const char *const *params,
                       struct fakedb__expr_ctx **ctx, fakedb__reply *r);
int fakedb__expr_parse_param(struct fakedb__expr_ctx *ctx, json_object *req,
                             const char *param, int kind, struct fakedb__expr **out,
                             fakedb__reply *r);
int fakedb__expr_unused(struct fakedb__expr_ctx *ctx, fakedb__reply *r);

/* legacy_ops.c: the legacy (non-expression) parameters, translated into expressions. */
/* DynamoDB's refusal of a request that has both kinds: expr_params and legacy_params
 * (NULL-terminated) in the order its message lists them. */
int fakedb__legacy_mixing(json_object *req, const char *const *expr_params,
                          const char *const *legacy_params, fakedb__reply *r);
/* The condition map `param` (Expected, QueryFilter, ScanFilter, KeyConditions) as an
 * expression of kind (fakedb__expr_kind), joined by the request's ConditionalOperator
 * when conditional_operator is set; *out NULL when the request has none. */
int fakedb__legacy_condition_param(json_object *req, const char *param, int kind,
                                   bool conditional_operator, struct fakedb__expr **out,
                                   fakedb__reply *r);
/* AttributeUpdates as an update expression; *out NULL when the request has none. */
int fakedb__legacy_update_param(json_object *req, struct fakedb__expr **out, fakedb__reply *r);
/* The request's KeyConditions against the key schema queried. */
int fakedb__legacy_key_check(json_object *req, const char *pk, char pk_type, const char *sk,
                             char sk_type, fakedb__reply *r);
/* AttributesToGet (may be NULL): a non-empty list of distinct names. */
int fakedb__legacy_attrs_to_get(json_object *atg, fakedb__reply *r);

#endif
