/* items.h: the representation of DynamoDB values and items inside libddb, shared by
 * item.c (construction, access, equality) and json.c (DynamoDB JSON both ways). */
#ifndef DDB_ITEMS_H
#define DDB_ITEMS_H

#include <dynalock/ddb.h>
#include <json-c/json.h>

struct ddb_value {
    ddb_type type;
    union {
        struct { char *p; size_t len; } buf;                 /* S, N (text), B */
        bool b;                                              /* BOOL */
        struct { ddb_value **v; size_t n, cap; } list;       /* L, SS, NS, BS */
        ddb_item *m;                                         /* M */
    } u;
};

typedef struct ddb__attr {
    char *name;
    ddb_value *value;
} ddb__attr;

struct ddb_item {
    ddb__attr *attrs;  /* insertion order */
    size_t n, cap;
};

/* DynamoDB JSON as json-c objects (json.c). The to_ functions return a new reference
 * or NULL when out of memory; the from_ functions fill err on malformed input. */
json_object *ddb__value_to_jobj(const ddb_value *v);
json_object *ddb__item_to_jobj(const ddb_item *it);
ddb_item *ddb__item_from_jobj(json_object *o, ddb_error *err);
/* Parses text into a json-c object; NULL with err (DDB_EPROTOCOL, or `bad_code`) when it
 * is not one complete JSON document. */
json_object *ddb__json_parse(const char *text, size_t len, int bad_code, ddb_error *err);

/* True when text is a valid DynamoDB number (common/decimal.h). */
bool ddb__number_valid(const char *text, size_t len);

#endif
