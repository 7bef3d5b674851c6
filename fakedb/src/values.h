/* values.h: layer 1 of libfakedb, values. DynamoDB's limits and error names, errors as
 * data (fakedb__error), JSON in and out, AttributeValues checked and encoded into keys,
 * and the plain description of a table (key schema, indexes) that keys are made for.
 * Calls nothing of libfakedb above it; see docs/internals/fakedb.md for the layers. */
#ifndef FAKEDB_VALUES_H
#define FAKEDB_VALUES_H

#include <stdarg.h>
#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define FDB_MAX_REQUEST_BYTES (16L * 1024 * 1024)
#define FDB_MAX_ITEM_BYTES (400 * 1024)
#define FDB_PAGE_BYTES (1024 * 1024)
#define FDB_MAX_PK_BYTES 2048
#define FDB_MAX_SK_BYTES 1024
/* A global secondary index's key may have up to this many HASH and as many RANGE
 * attributes (multi-attribute keys); tables and LSIs have one of each at most. */
#define FDB_MAX_KEY_ATTRS 4
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
#define FDB_E_EXPIRED_ITERATOR FDB_NS_DDB "ExpiredIteratorException"
#define FDB_E_TRIMMED FDB_NS_DDB "TrimmedDataAccessException"

/* error.c: an error as data, DynamoDB's __type and message. The layers below the
 * dispatcher fill one; the dispatcher renders it (400, or 500 for InternalServerError). */
typedef struct fakedb__error {
    const char *type;           /* full __type; NULL when no error */
    char message[1024];
} fakedb__error;

/* Sets e and returns -1. */
int fakedb__fail(fakedb__error *e, const char *type, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
int fakedb__fail_validation(fakedb__error *e, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* The same with a va_list, for the layers above that keep an error of their own. */
int fakedb__error_vset(fakedb__error *e, const char *type, const char *fmt, va_list ap)
    __attribute__((format(printf, 3, 0)));
/* The HTTP status DynamoDB answers an error with: 500 for InternalServerError, else 400. */
int fakedb__error_status(const fakedb__error *e);

/* A stream's view type (StreamViewType); 0 means no enabled stream. */
enum { FDB_STREAM_NONE, FDB_STREAM_KEYS_ONLY, FDB_STREAM_NEW_IMAGE, FDB_STREAM_OLD_IMAGE,
       FDB_STREAM_NEW_AND_OLD_IMAGES };

/* A primary key (or index key) encoded so that memcmp order is DynamoDB's order. A single
 * attribute is its value's encoding (at most FDB_MAX_PK_BYTES / FDB_MAX_SK_BYTES); the
 * HASH attributes of a multi-attribute key are each prefixed by their 2-byte length, its
 * RANGE attributes each escaped (0x00 as 00 FF) and closed by 00 01, so that memcmp order
 * is the order of the attributes left to right: hence the larger buffers. */
#define FDB_KEY_PK_CAP (FDB_MAX_PK_BYTES + 2 * FDB_MAX_KEY_ATTRS)
#define FDB_KEY_SK_CAP (2 * FDB_MAX_SK_BYTES + 2 * FDB_MAX_KEY_ATTRS)
typedef struct fakedb__key {
    size_t pk_len, sk_len;
    uint8_t pk[FDB_KEY_PK_CAP];
    uint8_t sk[FDB_KEY_SK_CAP];
} fakedb__key;

enum { FDB_PROJ_ALL, FDB_PROJ_KEYS_ONLY, FDB_PROJ_INCLUDE };

typedef struct fakedb__index {
    char *name;
    bool global;
    /* The key's HASH attributes (1..FDB_MAX_KEY_ATTRS) and RANGE attributes
     * (0..FDB_MAX_KEY_ATTRS) in key order, each with its type ('S', 'N', 'B'); owned. More
     * than one of either only in a GSI (a multi-attribute key: multi below). */
    size_t n_hash, n_range;
    char *hash[FDB_MAX_KEY_ATTRS], *range[FDB_MAX_KEY_ATTRS];
    char hash_type[FDB_MAX_KEY_ATTRS], range_type[FDB_MAX_KEY_ATTRS];
    /* The first of each, as the single-attribute code reads them: pk is hash[0], sk is
     * range[0] or NULL (borrowed). */
    const char *pk, *sk;
    char pk_type, sk_type;
    bool multi;                 /* n_hash > 1 || n_range > 1 */
    int projection;
    char **include;
    size_t n_include;
} fakedb__index;

/* A table as the layers above see it (built by schema.c, kept by store.c). */
typedef struct fakedb__table {
    int64_t id;
    char *name;
    char *pk, *sk;
    char pk_type, sk_type;
    json_object *spec;          /* AttributeDefinitions, KeySchema, indexes, billing */
    fakedb__index *idx;
    size_t n_idx;
    char *ttl_attr;             /* NULL when TTL is off */
    int stream_view;            /* FDB_STREAM_*: the enabled stream's view, 0 when none */
    int64_t stream_id;          /* the latest stream (enabled or not), 0 when none */
    char *stream_arn, *stream_label; /* the latest stream's, NULL when none */
    int64_t created_ms;
    int64_t item_count, size_bytes;
    const char *busy;           /* "CREATING" or "UPDATING" until busy_until_ms on the
                                   server's clock (--delay-transient-statuses), or NULL */
    int64_t busy_until_ms;
    /* while busy after an UpdateTable of its global indexes (index_update.c): the index
     * being created (CREATING, Backfilling) and the deleted one's description (DELETING);
     * owned, NULL when none */
    char *creating_index;
    json_object *deleting_index;
    struct fakedb__table *next;
} fakedb__table;

/* values.c */
int fakedb__item_validate(json_object *item, fakedb__error *r);
int fakedb__values_validate(json_object *values, fakedb__error *r);
/* One AttributeValue (e.g. of a legacy condition), numbers normalised in place. */
int fakedb__av_validate(json_object *av, fakedb__error *r);
char fakedb__av_scalar(json_object *av);      /* 'S','N','B' for scalars, 0 otherwise */
int fakedb__encode_scalar(json_object *av, char type, uint8_t *buf, size_t cap,
                          size_t *len);
enum { FDB_KEY_PARAM, FDB_KEY_ITEM };
int fakedb__key_make(const fakedb__table *t, json_object *attrs, int mode,
                     fakedb__key *out, fakedb__error *r);
/* 1 = the item is in the index, 0 = not (sparse: an attribute of its key is missing),
 * -1 = an attribute of its key has the wrong type or is empty or too large (r filled) */
int fakedb__index_key(const fakedb__index *ix, json_object *item, fakedb__key *out,
                      fakedb__error *r);
/* Encodes the index key of obj without the checks of fakedb__index_key: 0, or -1 when
 * an attribute is missing, of another type, or too large (an ExclusiveStartKey). */
int fakedb__index_key_encode(const fakedb__index *ix, json_object *obj, fakedb__key *out);
/* Encodes n AttributeValues of the given types as the HASH part (hash) or the RANGE part
 * of a multi-attribute key into out (FDB_KEY_PK_CAP / FDB_KEY_SK_CAP bytes); the last
 * RANGE value left open with open_last (a begins_with prefix). 0; -1 when one is missing
 * or of another type; -2 when their aggregated size is over the limit of the part. */
int fakedb__key_part_encode(json_object *const *avs, const char *types, size_t n, bool hash,
                            bool open_last, uint8_t *out, size_t *len);
/* Whether `name` is one of ix's key attributes. */
bool fakedb__index_has_key_attr(const fakedb__index *ix, const char *name);
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
/* A tokener (FDB_JSON_DEPTH deep, reset, with these json_tokener flags) for a text of len
 * bytes: this thread's own, lent until fakedb__tokener_put, or a new one. NULL when out of
 * memory. Give it back with fakedb__tokener_put and the same len. */
json_tokener *fakedb__tokener_get(size_t len, int flags);
void fakedb__tokener_put(json_tokener *tok, size_t len);
/* `len` bytes of text as a JSON object (at most FDB_JSON_DEPTH deep), or NULL when they are
 * not one. Caller puts it. */
json_object *fakedb__json_object_from(const char *text, size_t len);
int fakedb__json_int_param(json_object *req, const char *key, int64_t *out, fakedb__error *r);
json_object *fakedb__json_copy(json_object *o);
/* Copies src into dst (n bytes), truncating. */
void fakedb__copy_str(char *dst, size_t n, const char *src);
/* Text from a request made safe for the request log (--log), as the dynalock command
 * escapes what it prints: each byte of a control character (C0, DEL, C1), of the
 * bidirectional controls and line separators (U+202A..E, U+2066..9, U+2028/9) and each
 * byte that is not valid UTF-8 is written as \xNN. Into buf (always terminated, cut at
 * a whole escape); returns buf. */
char *fakedb__log_text(const char *s, char *buf, size_t size);

#endif
