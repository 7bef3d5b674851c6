/* shape.c: the JSON types of a request's members, checked before any operation reads it,
 * as DynamoDB's deserializer does: a member of the wrong type (`"ExpressionAttributeNames":
 * {"#n": 7}`, a KeySchema given as an object) is a SerializationException, never read as
 * missing. AttributeValues are checked by values.c and are not entered here. One model
 * constraint every operation shares is checked here too: ReturnConsumedCapacity's values. */
#include "ops.h"

#include <string.h>

typedef enum { K_STRING, K_BOOL, K_LIST, K_STRING_LIST, K_STRING_MAP, K_OBJECT, K_ANY_MAP, K_OPAQUE } kind;

/* Members whose name has one type wherever it appears in DynamoDB's requests. */
static const struct {
    const char *name;
    kind k;
} k_members[] = {
    { "TableName", K_STRING }, { "IndexName", K_STRING }, { "ProjectionExpression", K_STRING },
    { "ConditionExpression", K_STRING }, { "UpdateExpression", K_STRING },
    { "FilterExpression", K_STRING }, { "KeyConditionExpression", K_STRING },
    { "ReturnValues", K_STRING }, { "ReturnConsumedCapacity", K_STRING },
    { "ReturnItemCollectionMetrics", K_STRING }, { "ReturnValuesOnConditionCheckFailure", K_STRING },
    { "Select", K_STRING }, { "ConditionalOperator", K_STRING }, { "BillingMode", K_STRING },
    { "AttributeName", K_STRING }, { "KeyType", K_STRING }, { "AttributeType", K_STRING },
    { "ProjectionType", K_STRING }, { "ClientRequestToken", K_STRING }, { "StreamViewType", K_STRING },
    { "TableClass", K_STRING }, { "ExclusiveStartTableName", K_STRING },
    { "ConsistentRead", K_BOOL }, { "ScanIndexForward", K_BOOL }, { "StreamEnabled", K_BOOL },
    { "DeletionProtectionEnabled", K_BOOL },
    { "KeySchema", K_LIST }, { "AttributeDefinitions", K_LIST }, { "GlobalSecondaryIndexes", K_LIST },
    { "LocalSecondaryIndexes", K_LIST }, { "TransactItems", K_LIST },
    { "GlobalSecondaryIndexUpdates", K_LIST },
    { "NonKeyAttributes", K_STRING_LIST }, { "AttributesToGet", K_STRING_LIST },
    { "ExpressionAttributeNames", K_STRING_MAP },
    { "Projection", K_OBJECT }, { "ProvisionedThroughput", K_OBJECT },
    { "StreamSpecification", K_OBJECT }, { "TimeToLiveSpecification", K_OBJECT },
    { "RequestItems", K_ANY_MAP },
    /* AttributeValues and the legacy conditions: values.c and legacy_ops.c check them */
    { "Item", K_OPAQUE }, { "Key", K_OPAQUE }, { "Keys", K_OPAQUE }, { "ExclusiveStartKey", K_OPAQUE },
    { "ExpressionAttributeValues", K_OPAQUE }, { "Expected", K_OPAQUE }, { "AttributeUpdates", K_OPAQUE },
    { "KeyConditions", K_OPAQUE }, { "QueryFilter", K_OPAQUE }, { "ScanFilter", K_OPAQUE },
    { "Parameters", K_OPAQUE }, { "Tags", K_OPAQUE },
};

/* DynamoDB's texts for a value where a `want` was expected. */
static int wrong(fakedb__reply *r, json_object *v, const char *want)
{
    if (json_object_is_type(v, json_type_object))
        return fakedb__reply_fail(r, FDB_E_SERIALIZATION, "Start of structure or map found where not expected.");
    if (json_object_is_type(v, json_type_array))
        return fakedb__reply_fail(r, FDB_E_SERIALIZATION, "Start of list found where not expected.");
    if (want && (json_object_is_type(v, json_type_int) || json_object_is_type(v, json_type_double)))
        return fakedb__reply_fail(r, FDB_E_SERIALIZATION, "NUMBER_VALUE cannot be converted to %s", want);
    if (want && json_object_is_type(v, json_type_boolean))
        return fakedb__reply_fail(r, FDB_E_SERIALIZATION, "%s cannot be converted to %s",
                                  json_object_get_boolean(v) ? "TRUE_VALUE" : "FALSE_VALUE", want);
    if (want && json_object_is_type(v, json_type_string))
        return fakedb__reply_fail(r, FDB_E_SERIALIZATION, "STRING_VALUE cannot be converted to %s", want);
    return fakedb__reply_fail(r, FDB_E_SERIALIZATION, "Unexpected value type in payload");
}

static int check_members(json_object *o, fakedb__reply *r, int depth);

/* A value whose name is not in the table: its members are checked if it is a structure
 * (or a list of them, as TransactItems' Put, Update...). */
static int check_any(json_object *v, fakedb__reply *r, int depth)
{
    if (json_object_is_type(v, json_type_object))
        return check_members(v, r, depth + 1);
    if (json_object_is_type(v, json_type_array))
        for (size_t i = 0, n = json_object_array_length(v); i < n; i++)
            if (check_any(json_object_array_get_idx(v, i), r, depth + 1))
                return -1;
    return 0;
}

static int check_member(const char *name, json_object *v, fakedb__reply *r, int depth)
{
    if (!v || json_object_is_type(v, json_type_null))
        return 0; /* null is absent */
    for (size_t i = 0; i < sizeof k_members / sizeof k_members[0]; i++) {
        if (strcmp(k_members[i].name, name))
            continue;
        switch (k_members[i].k) {
        case K_STRING:
            return json_object_is_type(v, json_type_string) ? 0 : wrong(r, v, "String");
        case K_BOOL:
            return json_object_is_type(v, json_type_boolean) ? 0 : wrong(r, v, "Boolean");
        case K_LIST:
            if (!json_object_is_type(v, json_type_array))
                return wrong(r, v, NULL);
            for (size_t j = 0, n = json_object_array_length(v); j < n; j++) {
                json_object *e = json_object_array_get_idx(v, j);
                if (e && !json_object_is_type(e, json_type_object))
                    return wrong(r, e, NULL);
                if (e && check_members(e, r, depth + 1))
                    return -1;
            }
            return 0;
        case K_STRING_LIST:
            if (!json_object_is_type(v, json_type_array))
                return wrong(r, v, NULL);
            for (size_t j = 0, n = json_object_array_length(v); j < n; j++) {
                json_object *e = json_object_array_get_idx(v, j);
                if (e && !json_object_is_type(e, json_type_string))
                    return wrong(r, e, "String");
            }
            return 0;
        case K_STRING_MAP:
            if (!json_object_is_type(v, json_type_object))
                return wrong(r, v, NULL);
            {
                json_object_object_foreach(v, k, e) {
                    (void)k;
                    if (e && !json_object_is_type(e, json_type_string))
                        return wrong(r, e, "String");
                }
            }
            return 0;
        case K_OBJECT:
            if (!json_object_is_type(v, json_type_object))
                return wrong(r, v, NULL);
            return check_members(v, r, depth + 1);
        case K_ANY_MAP:
            if (!json_object_is_type(v, json_type_object))
                return wrong(r, v, NULL);
            {
                json_object_object_foreach(v, k, e) {
                    (void)k;
                    if (e && check_any(e, r, depth + 1))
                        return -1;
                }
            }
            return 0;
        case K_OPAQUE:
            return 0;
        }
    }
    return check_any(v, r, depth);
}

static int check_members(json_object *o, fakedb__reply *r, int depth)
{
    if (depth > 8) /* no request structure is deeper; what is deeper is a value's */
        return 0;
    json_object_object_foreach(o, name, v) {
        if (check_member(name, v, r, depth))
            return -1;
    }
    return 0;
}

int fakedb__request_shape(json_object *req, fakedb__reply *r)
{
    if (check_members(req, r, 0))
        return -1;
    const char *rcc = fakedb__json_str(req, "ReturnConsumedCapacity");
    if (rcc && strcmp(rcc, "INDEXES") && strcmp(rcc, "TOTAL") && strcmp(rcc, "NONE"))
        return fakedb__reply_fail_validation(r, "1 validation error detected: Value '%s' at 'returnConsumedCapacity' failed to satisfy constraint: Member must satisfy enum value set: [INDEXES, TOTAL, NONE]", rcc);
    return 0;
}
