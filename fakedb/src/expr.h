/* expr.h: DynamoDB's expression language for the fake server: condition, filter, key
 * condition, projection and update expressions, parsed once per request and evaluated
 * on items held as json-c objects in DynamoDB JSON ({"name": {"S": "x"}, ...}).
 *
 * Error texts are DynamoDB's ValidationException messages, so the server returns them
 * as they are. */
#ifndef FAKEDB_EXPR_H
#define FAKEDB_EXPR_H

#include <stdbool.h>
#include <stddef.h>

#include <json-c/json.h>

#define FAKEDB_EXPR_ERR_MAX 512

typedef enum fakedb__expr_kind {
    FAKEDB_EXPR_CONDITION,      /* ConditionExpression */
    FAKEDB_EXPR_FILTER,         /* FilterExpression */
    FAKEDB_EXPR_KEY_CONDITION,  /* KeyConditionExpression */
    FAKEDB_EXPR_PROJECTION,     /* ProjectionExpression */
    FAKEDB_EXPR_UPDATE,         /* UpdateExpression */
} fakedb__expr_kind;

/* The names and values of one request, shared by all its expressions, which records
 * which of them the expressions used (for "unused" validation). */
typedef struct fakedb__expr_ctx fakedb__expr_ctx;
typedef struct fakedb__expr fakedb__expr;

/* names and values are the request's ExpressionAttributeNames / Values objects, or NULL;
 * borrowed for the life of the context. Returns NULL with err filled when they are
 * malformed (e.g. an empty map: "ExpressionAttributeNames must not be empty"). */
fakedb__expr_ctx *fakedb__expr_ctx_new(json_object *names, json_object *values,
                                       char err[FAKEDB_EXPR_ERR_MAX]);
void fakedb__expr_ctx_free(fakedb__expr_ctx *ctx);

/* Parses `text` as an expression of `kind`, resolving #names and :values in ctx.
 * Returns NULL with DynamoDB's message in err (e.g. "Invalid UpdateExpression: Syntax
 * error; token: \"=\", near: \"SET = \"", "Value provided in ExpressionAttributeValues
 * unused in expressions: keys: {:x}" is checked later, by check_unused). */
fakedb__expr *fakedb__expr_parse(fakedb__expr_ctx *ctx, fakedb__expr_kind kind,
                                 const char *text, char err[FAKEDB_EXPR_ERR_MAX]);
void fakedb__expr_free(fakedb__expr *e);

/* After every expression of the request is parsed: 0, or -1 with DynamoDB's message for
 * names or values that no expression used. */
int fakedb__expr_check_unused(const fakedb__expr_ctx *ctx, char err[FAKEDB_EXPR_ERR_MAX]);

/* Condition or filter: *result is whether `item` (NULL = no item) satisfies it.
 * Returns 0, or -1 with a message for a runtime error DynamoDB reports. */
int fakedb__expr_eval(const fakedb__expr *e, json_object *item, bool *result,
                      char err[FAKEDB_EXPR_ERR_MAX]);

/* Update: applies the expression to *item (a json object, possibly holding only the key
 * for a new item), in place. key_names lists the table's key attributes (NULL-terminated)
 * that may not be changed. Returns 0, or -1 with DynamoDB's message (e.g. "Cannot update
 * attribute pk. This attribute is part of the key", "An operand in the update expression
 * has an incorrect data type"). The item is unchanged on failure. */
int fakedb__expr_apply_update(const fakedb__expr *e, json_object *item,
                              const char *const *key_names, char err[FAKEDB_EXPR_ERR_MAX]);

/* The top-level attribute names an update expression assigns or removes (for
 * UPDATED_OLD/UPDATED_NEW): a NULL-terminated array borrowed from e. */
const char *const *fakedb__expr_update_targets(const fakedb__expr *e);

/* The paths an update expression assigns or removes, projected from item as a projection
 * would (nested paths and list indexes in their structure): UPDATED_OLD/UPDATED_NEW. A
 * new object; empty when none exists in item. */
json_object *fakedb__expr_update_project(const fakedb__expr *e, json_object *item);

/* Whether every action of an update is REMOVE or DELETE: on a missing item such an
 * update creates nothing (DynamoDB). */
bool fakedb__expr_update_removes_only(const fakedb__expr *e);

/* Projection: a new object with only the projected paths of item (nested paths and
 * list indexes kept in their structure, as DynamoDB returns them). */
json_object *fakedb__expr_project(const fakedb__expr *e, json_object *item);
/* The top-level attribute name of a projection's i-th path, or NULL past the last. */
const char *fakedb__expr_projection_name(const fakedb__expr *e, int i);

/* Whether a condition or filter refers to the top-level attribute `name` (through any
 * path that starts with it): Query refuses a filter on a key attribute. */
bool fakedb__expr_refers_to(const fakedb__expr *e, const char *name);

/* Key condition, resolved against the key schema of the table or index being queried. */
typedef enum fakedb__key_op {
    FAKEDB_KEY_NONE = 0, FAKEDB_KEY_EQ, FAKEDB_KEY_LT, FAKEDB_KEY_LE, FAKEDB_KEY_GT,
    FAKEDB_KEY_GE, FAKEDB_KEY_BETWEEN, FAKEDB_KEY_BEGINS_WITH
} fakedb__key_op;

typedef struct fakedb__key_cond {
    json_object *pk_value;      /* borrowed AttributeValue of the partition key */
    fakedb__key_op sk_op;       /* FAKEDB_KEY_NONE when there is no sort key condition */
    json_object *sk_value1;     /* borrowed */
    json_object *sk_value2;     /* BETWEEN's upper bound */
} fakedb__key_cond;

/* Matches the key condition to the key schema (sk_name NULL when there is none) and the
 * types of the key attributes ('S', 'N' or 'B'). 0, or -1 with DynamoDB's message, e.g.
 * "Query condition missed key schema element: pk", "Query key condition not supported". */
int fakedb__expr_key_condition(const fakedb__expr *e, const char *pk_name, char pk_type,
                               const char *sk_name, char sk_type, fakedb__key_cond *out,
                               char err[FAKEDB_EXPR_ERR_MAX]);

/* A key with several HASH and RANGE attributes (a GSI's multi-attribute key), in key
 * order with their types; borrowed names. */
#define FAKEDB_KEY_ATTRS_MAX 4
typedef struct fakedb__key_schema {
    size_t n_hash, n_range;
    const char *const *hash, *const *range;
    const char *hash_type, *range_type;
} fakedb__key_schema;

/* A key condition matched to such a key: every HASH attribute by =, then the first
 * n_range RANGE attributes left to right, each by = but the last, which has last_op. */
typedef struct fakedb__key_conds {
    json_object *hash_value[FAKEDB_KEY_ATTRS_MAX];  /* borrowed, in key order */
    size_t n_range;
    json_object *range_value[FAKEDB_KEY_ATTRS_MAX]; /* borrowed; the last: last_op's first */
    fakedb__key_op last_op;     /* FAKEDB_KEY_NONE when n_range is 0 */
    json_object *last_value2;   /* BETWEEN's upper bound */
} fakedb__key_conds;

/* fakedb__expr_key_condition for a multi-attribute key. 0, or -1 with the message:
 * "Query condition missed key schema element: X" for a HASH attribute missing or a
 * RANGE attribute skipped, "Query key condition not supported: ..." for a HASH attribute
 * not given by =, an attribute not of the key, or a condition after a RANGE attribute
 * not given by =. */
int fakedb__expr_key_conditions(const fakedb__expr *e, const fakedb__key_schema *ks,
                                fakedb__key_conds *out, char err[FAKEDB_EXPR_ERR_MAX]);

/* ---- PartiQL (expr_partiql.c) ----
 * A PartiQL statement of the forms DynamoDB runs (SELECT, INSERT, UPDATE, DELETE, and
 * EXISTS in a transaction), parsed and translated into this language: its WHERE into a
 * condition, its SET/REMOVE into an update expression, each attribute name into a #pN
 * name and each literal or `?` parameter into a :vN value of `names`/`values`, so that
 * the operations parse them with fakedb__expr_parse like any request's expressions. */
typedef enum fakedb__pq_kind {
    FAKEDB_PQ_SELECT, FAKEDB_PQ_INSERT, FAKEDB_PQ_UPDATE, FAKEDB_PQ_DELETE, FAKEDB_PQ_EXISTS
} fakedb__pq_kind;

typedef enum fakedb__pq_returning {
    FAKEDB_PQ_RET_NONE, FAKEDB_PQ_RET_ALL_OLD, FAKEDB_PQ_RET_ALL_NEW,
    FAKEDB_PQ_RET_MODIFIED_OLD, FAKEDB_PQ_RET_MODIFIED_NEW
} fakedb__pq_returning;

/* One conjunct at the top of WHERE that compares a top-level attribute with values
 * (attr = v, attr < v, ..., attr BETWEEN v1 AND v2, begins_with(attr, v)). */
typedef struct fakedb__pq_term {
    char *attr;
    fakedb__key_op op;
    json_object *v1, *v2;       /* borrowed from the statement's values */
} fakedb__pq_term;

/* A projected path, for the flat answer PartiQL gives ("l[1]", "k" for m.k). */
typedef struct fakedb__pq_proj {
    char *label;
    int n;
    char **names;               /* NULL at a list index */
    long *index;
} fakedb__pq_proj;

typedef struct fakedb__pq_stmt {
    fakedb__pq_kind kind;
    char *table, *index;        /* index NULL when none */
    json_object *names, *values;/* owned; NULL when empty */
    char *where;                /* condition text; NULL without WHERE */
    fakedb__pq_term *terms;     /* the WHERE's top-level conjuncts of the simple form */
    int nterms;
    int nconjuncts;             /* all top-level conjuncts of WHERE */
    char *projection;           /* projection text; NULL for * */
    fakedb__pq_proj *proj;
    int nproj;
    char *update;               /* UPDATE: the update expression */
    json_object *item;          /* INSERT: the item (owned) */
    fakedb__pq_returning returning;
    char *order_by;             /* ORDER BY attribute, or NULL */
    bool order_desc;
} fakedb__pq_stmt;

/* Parses `text`, binding each `?` to the next of `params` (a json array of
 * AttributeValues, or NULL; fewer than the `?` is an error, more are ignored, as
 * DynamoDB Local does). Returns 0, or -1 with DynamoDB's message in err:
 * "Statement wasn't well formed, can't be processed: ...", "Number of parameters in
 * request and statement don't match.", or the refusal of what fakedb does not run. */
int fakedb__pq_parse(const char *text, json_object *params, fakedb__pq_stmt *out,
                     char err[FAKEDB_EXPR_ERR_MAX]);
void fakedb__pq_free(fakedb__pq_stmt *s);
/* The value of a projected path in item, or NULL (borrowed). */
json_object *fakedb__pq_resolve(json_object *item, const fakedb__pq_proj *p);
/* Legacy (non-expression) parameters (expr_legacy.c), translated into the same tree as
 * the expressions so that evaluation is shared. The AttributeValues they hold are
 * borrowed from the request and must be validated by the caller first. Each returns 0
 * (with *out NULL when the map is empty), -1 with DynamoDB's message in err, or -2 when
 * the JSON does not have the API's shape (a SerializationException).
 *
 * conds is an Expected, QueryFilter, ScanFilter or KeyConditions map; param is its name
 * as DynamoDB's messages spell it ("expected", "queryFilter", "scanFilter",
 * "keyConditions"): "expected" takes Exists/Value as well as ComparisonOperator, the
 * others require ComparisonOperator and check the operators' value types. use_or joins
 * the conditions with OR (ConditionalOperator OR) instead of AND. kind is the kind of
 * expression the result stands for (CONDITION, FILTER or KEY_CONDITION). */
int fakedb__legacy_conditions(json_object *conds, const char *param, bool use_or,
                              fakedb__expr_kind kind, fakedb__expr **out,
                              char err[FAKEDB_EXPR_ERR_MAX]);
/* KeyConditions against the key schema of the table or index queried: 0, or -1 with
 * DynamoDB's message ("Query condition missed key schema element: pk", "Attempted
 * conditional constraint is not an indexable operation", "Query key condition not
 * supported"). Call after fakedb__legacy_conditions accepted kc. */
int fakedb__legacy_key_schema(json_object *kc, const char *pk_name, char pk_type,
                              const char *sk_name, char sk_type, char err[FAKEDB_EXPR_ERR_MAX]);
/* AttributeUpdates as an update: PUT sets, ADD adds to a number or set (or appends to a
 * list), DELETE with a set value removes its elements, DELETE without a value removes the
 * attribute. Type mismatches when applied are "Type mismatch for attribute to update". */
int fakedb__legacy_updates(json_object *updates, fakedb__expr **out, char err[FAKEDB_EXPR_ERR_MAX]);

/* Ordering and equality of AttributeValues as DynamoDB compares them (S and B by bytes,
 * N numerically). Returns <0, 0, >0, or 2 when the types differ or are not ordered. */
int fakedb__av_compare(json_object *a, json_object *b);
bool fakedb__av_equal(json_object *a, json_object *b);

/* The size in bytes DynamoDB counts for an item (names + values), for the 400 KB limit. */
size_t fakedb__item_size(json_object *item);

#endif
