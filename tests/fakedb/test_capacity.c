/* test_capacity.c: ReturnConsumedCapacity as DynamoDB computes it (issue #25 item 3), over
 * HTTP. Items are built to exact sizes (attribute name lengths plus value lengths), so
 * each expected number follows from AWS's documented rules: a write unit per started KB,
 * a read unit per started 4 KB, halves, doubles, per-item and per-page rounding. */
#include "fdbt.h"

#include <check.h>

#include "dl_check.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Tab: pk, sk (S), a keys-only GSI byG on g, a keys-only LSI byL on l. Two: pk only. */
static void setup(void)
{
    fdbt_start(NULL);
    fdbt_resp r = fdbt_call("CreateTable",
        "{\"TableName\":\"Tab\",\"BillingMode\":\"PAY_PER_REQUEST\","
        "\"KeySchema\":[{\"AttributeName\":\"pk\",\"KeyType\":\"HASH\"},{\"AttributeName\":\"sk\",\"KeyType\":\"RANGE\"}],"
        "\"AttributeDefinitions\":[{\"AttributeName\":\"pk\",\"AttributeType\":\"S\"},{\"AttributeName\":\"sk\",\"AttributeType\":\"S\"},"
        "{\"AttributeName\":\"g\",\"AttributeType\":\"S\"},{\"AttributeName\":\"l\",\"AttributeType\":\"S\"}],"
        "\"GlobalSecondaryIndexes\":[{\"IndexName\":\"byG\",\"KeySchema\":[{\"AttributeName\":\"g\",\"KeyType\":\"HASH\"}],"
        "\"Projection\":{\"ProjectionType\":\"KEYS_ONLY\"}}],"
        "\"LocalSecondaryIndexes\":[{\"IndexName\":\"byL\",\"KeySchema\":[{\"AttributeName\":\"pk\",\"KeyType\":\"HASH\"},"
        "{\"AttributeName\":\"l\",\"KeyType\":\"RANGE\"}],\"Projection\":{\"ProjectionType\":\"KEYS_ONLY\"}}]}");
    ck_assert_msg(r.status == 200, "%s", r.body);
    fdbt_free(&r);
    fdbt_table("Two", NULL, NULL);
}

static void teardown(void)
{
    fdbt_stop();
}

/* An Item map whose DynamoDB size is exactly `size` bytes: pk, sk, g, l when not NULL
 * and a padding attribute v. Freed by the caller. */
static char *item(const char *pk, const char *sk, const char *g, const char *l, size_t size)
{
    size_t fixed = 2 + strlen(pk) + 1; /* "pk" + value, "v" */
    fixed += sk ? 2 + strlen(sk) : 0;
    fixed += g ? 1 + strlen(g) : 0;
    fixed += l ? 1 + strlen(l) : 0;
    ck_assert(size > fixed && size < 500000);
    size_t pad = size - fixed;
    char *v = malloc(pad + 1), *o = malloc(pad + 256);
    ck_assert(v && o);
    memset(v, 'x', pad);
    v[pad] = 0;
    int n = snprintf(o, pad + 256, "{\"pk\":{\"S\":\"%s\"}", pk);
    if (sk)
        n += snprintf(o + n, pad + 256 - (size_t)n, ",\"sk\":{\"S\":\"%s\"}", sk);
    if (g)
        n += snprintf(o + n, pad + 256 - (size_t)n, ",\"g\":{\"S\":\"%s\"}", g);
    if (l)
        n += snprintf(o + n, pad + 256 - (size_t)n, ",\"l\":{\"S\":\"%s\"}", l);
    snprintf(o + n, pad + 256 - (size_t)n, ",\"v\":{\"S\":\"%s\"}}", v);
    free(v);
    return o;
}

/* A PutItem of `it` to Two asking for TOTAL. */
static fdbt_resp put_total(char *it)
{
    size_t n = strlen(it) + 128;
    char *body = malloc(n);
    ck_assert(body);
    snprintf(body, n, "{\"TableName\":\"Two\",\"Item\":%s,\"ReturnConsumedCapacity\":\"TOTAL\"}", it);
    fdbt_resp r = fdbt_call("PutItem", body);
    free(body);
    free(it);
    return r;
}

static void put(const char *table, char *it)
{
    size_t n = strlen(table) + strlen(it) + 64;
    char *body = malloc(n);
    ck_assert(body);
    snprintf(body, n, "{\"TableName\":\"%s\",\"Item\":%s}", table, it);
    fdbt_resp r = fdbt_call("PutItem", body);
    ck_assert_msg(r.status == 200, "%s", r.body);
    fdbt_free(&r);
    free(body);
    free(it);
}

static double units_at(json_object *o, const char *path)
{
    json_object *v = fdbt_get(o, path);
    ck_assert_msg(v != NULL, "%s missing in %s", path, json_object_to_json_string(o));
    return json_object_get_double(v);
}

static double units(const fdbt_resp *r, const char *path)
{
    ck_assert_msg(r->status == 200, "%ld %s", r->status, r->body);
    return units_at(r->json, path);
}

/* The ConsumedCapacity entry of `table` in a batch's or transaction's list. */
static json_object *entry(const fdbt_resp *r, const char *table)
{
    ck_assert_msg(r->status == 200, "%ld %s", r->status, r->body);
    json_object *list = fdbt_get(r->json, "ConsumedCapacity");
    ck_assert_msg(list && json_object_is_type(list, json_type_array), "%s", r->body);
    json_object *found = NULL;
    for (size_t i = 0; i < json_object_array_length(list); i++) {
        json_object *e = json_object_array_get_idx(list, i);
        const char *name = json_object_get_string(fdbt_get(e, "TableName"));
        if (name && !strcmp(name, table)) {
            ck_assert_msg(!found, "%s listed twice: %s", table, r->body);
            found = e;
        }
    }
    ck_assert_msg(found, "%s missing: %s", table, r->body);
    return found;
}

static size_t entries(const fdbt_resp *r)
{
    json_object *list = fdbt_get(r->json, "ConsumedCapacity");
    return list ? json_object_array_length(list) : 0;
}

/* Single items at the boundaries: 1,024 bytes is a write unit, 1,025 two; 4,096 a read
 * unit, 4,097 two, halved when eventually consistent; a missing item still a unit. */
START_TEST(single_item_boundaries)
{
    fdbt_resp r = put_total(item("k1024", NULL, NULL, NULL, 1024));
    ck_assert(units(&r, "ConsumedCapacity.CapacityUnits") == 1);
    fdbt_free(&r);
    r = put_total(item("k1025", NULL, NULL, NULL, 1025));
    ck_assert(units(&r, "ConsumedCapacity.CapacityUnits") == 2);
    fdbt_free(&r);
    put("Two", item("k4096", NULL, NULL, NULL, 4096));
    put("Two", item("k4097", NULL, NULL, NULL, 4097));
    r = fdbt_call("GetItem", "{\"TableName\":\"Two\",\"Key\":{\"pk\":{\"S\":\"k4096\"}},\"ReturnConsumedCapacity\":\"TOTAL\"}");
    ck_assert(units(&r, "ConsumedCapacity.CapacityUnits") == 0.5);
    fdbt_free(&r);
    r = fdbt_call("GetItem", "{\"TableName\":\"Two\",\"Key\":{\"pk\":{\"S\":\"k4097\"}},\"ConsistentRead\":true,"
                  "\"ReturnConsumedCapacity\":\"TOTAL\"}");
    ck_assert(units(&r, "ConsumedCapacity.CapacityUnits") == 2);
    fdbt_free(&r);
    /* a projection does not reduce what is read */
    r = fdbt_call("GetItem", "{\"TableName\":\"Two\",\"Key\":{\"pk\":{\"S\":\"k4097\"}},\"ProjectionExpression\":\"pk\","
                  "\"ReturnConsumedCapacity\":\"TOTAL\"}");
    ck_assert(units(&r, "ConsumedCapacity.CapacityUnits") == 1);
    fdbt_free(&r);
    r = fdbt_call("GetItem", "{\"TableName\":\"Two\",\"Key\":{\"pk\":{\"S\":\"none\"}},\"ConsistentRead\":true,"
                  "\"ReturnConsumedCapacity\":\"TOTAL\"}");
    ck_assert(units(&r, "ConsumedCapacity.CapacityUnits") == 1);
    fdbt_free(&r);
}
END_TEST

/* BatchWriteItem: one entry per table, each write as PutItem/DeleteItem counts it, index
 * entries listed under INDEXES. */
START_TEST(batch_write)
{
    put("Tab", item("p", "old", "G0", NULL, 100)); /* deleted below: removed from byG */
    size_t n = 4096;
    char *a1 = item("p", "s1", "G", "L", 1025), *a2 = item("p", "s2", NULL, NULL, 10), *b1 = item("b1", NULL, NULL, NULL, 2048);
    char *body = malloc(n * 3);
    ck_assert(body);
    snprintf(body, n * 3, "{\"RequestItems\":{\"Tab\":[{\"PutRequest\":{\"Item\":%s}},{\"PutRequest\":{\"Item\":%s}},"
             "{\"DeleteRequest\":{\"Key\":{\"pk\":{\"S\":\"p\"},\"sk\":{\"S\":\"old\"}}}}],"
             "\"Two\":[{\"PutRequest\":{\"Item\":%s}},{\"DeleteRequest\":{\"Key\":{\"pk\":{\"S\":\"none\"}}}}]},"
             "\"ReturnConsumedCapacity\":\"INDEXES\"}", a1, a2, b1);
    free(a1);
    free(a2);
    free(b1);
    fdbt_resp r = fdbt_call("BatchWriteItem", body);
    ck_assert_uint_eq(entries(&r), 2);
    /* Tab: 2 + 1 + 1 for the items; byG: s1's entry and old's removal; byL: s1's entry */
    json_object *a = entry(&r, "Tab"), *b = entry(&r, "Two");
    ck_assert(units_at(a, "Table.CapacityUnits") == 4);
    ck_assert(units_at(a, "GlobalSecondaryIndexes.byG.CapacityUnits") == 2);
    ck_assert(units_at(a, "LocalSecondaryIndexes.byL.CapacityUnits") == 1);
    ck_assert(units_at(a, "CapacityUnits") == 7);
    /* Two: 2 for the item of 2,048 bytes, 1 for deleting nothing */
    ck_assert(units_at(b, "Table.CapacityUnits") == 3);
    ck_assert(units_at(b, "CapacityUnits") == 3);
    ck_assert_ptr_null(fdbt_get(b, "GlobalSecondaryIndexes"));
    fdbt_free(&r);
    /* TOTAL: the same totals, nothing per index */
    char *re = strstr(body, "INDEXES");
    memcpy(re, "TOTAL\"}", 8);
    r = fdbt_call("BatchWriteItem", body);
    a = entry(&r, "Tab");
    /* s1 over itself 2, its entries in byG and byL 1 each, s2 1, old deleted again 1 */
    ck_assert(units_at(a, "CapacityUnits") == 6);
    ck_assert(units_at(entry(&r, "Two"), "CapacityUnits") == 3);
    ck_assert_ptr_null(fdbt_get(a, "Table"));
    ck_assert_ptr_null(fdbt_get(a, "GlobalSecondaryIndexes"));
    fdbt_free(&r);
    memcpy(strstr(body, "TOTAL"), "NONE\"}", 7);
    r = fdbt_call("BatchWriteItem", body);
    ck_assert_int_eq(r.status, 200);
    ck_assert_ptr_null(fdbt_get(r.json, "ConsumedCapacity"));
    fdbt_free(&r);
    free(body);
}
END_TEST

/* BatchGetItem: each item rounded up to 4 KB on its own, halves when eventually
 * consistent, a missing item a unit; one entry per table. */
START_TEST(batch_get)
{
    put("Tab", item("p", "s4096", NULL, NULL, 4096));
    put("Tab", item("p", "s4097", NULL, NULL, 4097));
    put("Two", item("b1", NULL, NULL, NULL, 100));
    put("Two", item("b2", NULL, NULL, NULL, 100));
    fdbt_resp r = fdbt_call("BatchGetItem",
        "{\"RequestItems\":{\"Tab\":{\"Keys\":[{\"pk\":{\"S\":\"p\"},\"sk\":{\"S\":\"s4096\"}},"
        "{\"pk\":{\"S\":\"p\"},\"sk\":{\"S\":\"s4097\"}},{\"pk\":{\"S\":\"p\"},\"sk\":{\"S\":\"none\"}}],"
        "\"ProjectionExpression\":\"pk\"},"
        "\"Two\":{\"Keys\":[{\"pk\":{\"S\":\"b1\"}},{\"pk\":{\"S\":\"b2\"}}],\"ConsistentRead\":true}},"
        "\"ReturnConsumedCapacity\":\"INDEXES\"}");
    ck_assert_uint_eq(entries(&r), 2);
    json_object *a = entry(&r, "Tab"), *b = entry(&r, "Two");
    ck_assert(units_at(a, "CapacityUnits") == 2); /* (1 + 2 + 1) / 2 */
    ck_assert(units_at(a, "Table.CapacityUnits") == 2);
    ck_assert(units_at(b, "CapacityUnits") == 2); /* 1 + 1, not 200 bytes rounded once */
    ck_assert(units_at(b, "Table.CapacityUnits") == 2);
    fdbt_free(&r);
}
END_TEST

/* TransactWriteItems: twice each action's units, index entries included and doubled;
 * a ConditionCheck writes no index entry. */
START_TEST(transact_write)
{
    put("Tab", item("p", "gone", "G0", NULL, 1500));
    put("Two", item("c", NULL, NULL, NULL, 3000));
    put("Two", item("u", NULL, NULL, NULL, 500));
    char *a1 = item("p", "s1", "G", NULL, 1025);
    size_t n = strlen(a1) + 2048;
    char *body = malloc(n);
    ck_assert(body);
    snprintf(body, n, "{\"TransactItems\":["
             "{\"Put\":{\"TableName\":\"Tab\",\"Item\":%s}},"
             "{\"Delete\":{\"TableName\":\"Tab\",\"Key\":{\"pk\":{\"S\":\"p\"},\"sk\":{\"S\":\"gone\"}}}},"
             "{\"ConditionCheck\":{\"TableName\":\"Two\",\"Key\":{\"pk\":{\"S\":\"c\"}},\"ConditionExpression\":\"attribute_exists(pk)\"}},"
             "{\"Update\":{\"TableName\":\"Two\",\"Key\":{\"pk\":{\"S\":\"u\"}},\"UpdateExpression\":\"SET n = :n\","
             "\"ExpressionAttributeValues\":{\":n\":{\"S\":\"y\"}}}}],"
             "\"ReturnConsumedCapacity\":\"INDEXES\"}", a1);
    free(a1);
    fdbt_resp r = fdbt_call("TransactWriteItems", body);
    free(body);
    ck_assert_uint_eq(entries(&r), 2);
    json_object *a = entry(&r, "Tab"), *b = entry(&r, "Two");
    /* Tab: 2 x (2 + 2) for the items, 2 x (1 + 1) in byG (s1 written, gone removed) */
    ck_assert(units_at(a, "Table.CapacityUnits") == 8);
    ck_assert(units_at(a, "GlobalSecondaryIndexes.byG.CapacityUnits") == 4);
    ck_assert(units_at(a, "CapacityUnits") == 12);
    ck_assert_ptr_null(fdbt_get(a, "LocalSecondaryIndexes"));
    /* repeated as write units, as DynamoDB's transactions answer */
    ck_assert(units_at(a, "WriteCapacityUnits") == 12);
    ck_assert(units_at(a, "GlobalSecondaryIndexes.byG.WriteCapacityUnits") == 4);
    ck_assert_ptr_null(fdbt_get(a, "ReadCapacityUnits"));
    /* Two: 2 x 3 for the check of 3,000 bytes, 2 x 1 for the update */
    ck_assert(units_at(b, "Table.CapacityUnits") == 8);
    ck_assert(units_at(b, "CapacityUnits") == 8);
    fdbt_free(&r);
}
END_TEST

/* TransactGetItems: twice a strongly consistent read of each item, per item. */
START_TEST(transact_get)
{
    put("Tab", item("p", "s4097", NULL, NULL, 4097));
    put("Two", item("b1", NULL, NULL, NULL, 10));
    fdbt_resp r = fdbt_call("TransactGetItems", "{\"TransactItems\":["
        "{\"Get\":{\"TableName\":\"Tab\",\"Key\":{\"pk\":{\"S\":\"p\"},\"sk\":{\"S\":\"s4097\"}}}},"
        "{\"Get\":{\"TableName\":\"Two\",\"Key\":{\"pk\":{\"S\":\"b1\"}}}},"
        "{\"Get\":{\"TableName\":\"Two\",\"Key\":{\"pk\":{\"S\":\"none\"}}}}],"
        "\"ReturnConsumedCapacity\":\"TOTAL\"}");
    ck_assert_uint_eq(entries(&r), 2);
    ck_assert(units_at(entry(&r, "Tab"), "CapacityUnits") == 4);
    ck_assert(units_at(entry(&r, "Two"), "CapacityUnits") == 4);
    ck_assert(units_at(entry(&r, "Two"), "ReadCapacityUnits") == 4);
    ck_assert_ptr_null(fdbt_get(entry(&r, "Two"), "WriteCapacityUnits"));
    ck_assert_ptr_null(fdbt_get(entry(&r, "Two"), "Table"));
    fdbt_free(&r);
}
END_TEST

static double query_units(const char *body, long *count)
{
    fdbt_resp r = fdbt_call(strstr(body, "KeyCondition") ? "Query" : "Scan", body);
    double u = units(&r, "ConsumedCapacity.CapacityUnits");
    if (count)
        *count = json_object_get_int64(fdbt_get(r.json, "Count"));
    fdbt_free(&r);
    return u;
}

#define Q_P "\"TableName\":\"Tab\",\"KeyConditionExpression\":\"pk = :p\",\"ReturnConsumedCapacity\":\"TOTAL\""

/* Query and Scan: the sizes of every item read summed and rounded up to 4 KB once for
 * the page, whatever the filter keeps or the projection returns; halves when eventually
 * consistent; a page that reads nothing still a unit (half); an index by its entries. */
START_TEST(query_and_scan)
{
    char sk[8];
    for (int i = 0; i < 5; i++) { /* 5 x 1,000 bytes: 5,000, 2 units (not 5) */
        snprintf(sk, sizeof sk, "s%d", i);
        put("Tab", item("p", sk, "G", NULL, 1000));
    }
    long count;
    ck_assert(query_units("{" Q_P ",\"ExpressionAttributeValues\":{\":p\":{\"S\":\"p\"}}}", &count) == 1);
    ck_assert_int_eq(count, 5);
    ck_assert(query_units("{" Q_P ",\"ConsistentRead\":true,\"ExpressionAttributeValues\":{\":p\":{\"S\":\"p\"}}}", NULL) == 2);
    /* a filter that keeps nothing, a projection of the key: the same */
    ck_assert(query_units("{" Q_P ",\"ConsistentRead\":true,\"FilterExpression\":\"attribute_exists(nothing)\","
                          "\"ExpressionAttributeValues\":{\":p\":{\"S\":\"p\"}}}", &count) == 2);
    ck_assert_int_eq(count, 0);
    ck_assert(query_units("{" Q_P ",\"ConsistentRead\":true,\"ProjectionExpression\":\"pk\","
                          "\"ExpressionAttributeValues\":{\":p\":{\"S\":\"p\"}}}", NULL) == 2);
    ck_assert(query_units("{" Q_P ",\"ConsistentRead\":true,\"Select\":\"COUNT\","
                          "\"ExpressionAttributeValues\":{\":p\":{\"S\":\"p\"}}}", &count) == 2);
    ck_assert_int_eq(count, 5);
    /* Limit 4: 4,000 bytes, a unit */
    ck_assert(query_units("{" Q_P ",\"ConsistentRead\":true,\"Limit\":4,"
                          "\"ExpressionAttributeValues\":{\":p\":{\"S\":\"p\"}}}", NULL) == 1);
    /* a sort key range of two items, and one reading nothing */
    ck_assert(query_units("{\"TableName\":\"Tab\",\"KeyConditionExpression\":\"pk = :p AND sk BETWEEN :a AND :b\","
                          "\"ReturnConsumedCapacity\":\"TOTAL\",\"ConsistentRead\":true,"
                          "\"ExpressionAttributeValues\":{\":p\":{\"S\":\"p\"},\":a\":{\"S\":\"s0\"},\":b\":{\"S\":\"s1\"}}}", NULL) == 1);
    ck_assert(query_units("{" Q_P ",\"ExpressionAttributeValues\":{\":p\":{\"S\":\"nobody\"}}}", NULL) == 0.5);
    ck_assert(query_units("{" Q_P ",\"ConsistentRead\":true,\"ExpressionAttributeValues\":{\":p\":{\"S\":\"nobody\"}}}", NULL) == 1);
    /* Scan: eventually consistent unless asked; 5,000 bytes */
    ck_assert(query_units("{\"TableName\":\"Tab\",\"ReturnConsumedCapacity\":\"TOTAL\"}", NULL) == 1);
    ck_assert(query_units("{\"TableName\":\"Tab\",\"ConsistentRead\":true,\"ReturnConsumedCapacity\":\"TOTAL\"}", NULL) == 2);
    ck_assert(query_units("{\"TableName\":\"Tab\",\"ConsistentRead\":true,\"Select\":\"COUNT\",\"FilterExpression\":\"sk = :s\","
                          "\"ExpressionAttributeValues\":{\":s\":{\"S\":\"s3\"}},\"ReturnConsumedCapacity\":\"TOTAL\"}", &count) == 2);
    ck_assert_int_eq(count, 1);
    ck_assert(query_units("{\"TableName\":\"Two\",\"ReturnConsumedCapacity\":\"TOTAL\"}", NULL) == 0.5);
    /* the keys-only index holds entries of 2+1 + 2+2 + 1+1 = 9 bytes: half a unit, not 1 */
    fdbt_resp r = fdbt_call("Query", "{\"TableName\":\"Tab\",\"IndexName\":\"byG\",\"KeyConditionExpression\":\"g = :g\","
                            "\"ExpressionAttributeValues\":{\":g\":{\"S\":\"G\"}},\"ReturnConsumedCapacity\":\"INDEXES\"}");
    ck_assert(units(&r, "ConsumedCapacity.CapacityUnits") == 0.5);
    ck_assert(units(&r, "ConsumedCapacity.GlobalSecondaryIndexes.byG.CapacityUnits") == 0.5);
    ck_assert(units(&r, "ConsumedCapacity.Table.CapacityUnits") == 0);
    ck_assert_int_eq(json_object_get_int(fdbt_get(r.json, "Count")), 5);
    fdbt_free(&r);
}
END_TEST

/* Many items on one page: 300 items of 1,000 bytes are 300,000 bytes, 74 units (a
 * per-item rounding would make 300). */
START_TEST(query_page_sum)
{
    char sk[16];
    for (int i = 0; i < 300; i++) {
        snprintf(sk, sizeof sk, "m%03d", i);
        put("Tab", item("m", sk, NULL, NULL, 1000));
    }
    ck_assert(query_units("{" Q_P ",\"ConsistentRead\":true,\"ExpressionAttributeValues\":{\":p\":{\"S\":\"m\"}}}", NULL) == 74);
    ck_assert(query_units("{" Q_P ",\"ExpressionAttributeValues\":{\":p\":{\"S\":\"m\"}}}", NULL) == 37);
}
END_TEST

/* A local index whose entries lack what the query asks for fetches each item from the
 * table: the entries are charged to the index as a page, each fetched item on its own
 * (rounded up to 4 KB) to the table. Three items of 5,000 bytes whose keys-only entries
 * are 3 + 4 + 2 = 9 bytes: the index a unit (strongly consistent), the table 3 x 2. */
START_TEST(local_index_fetch)
{
    const char *ls[3] = { "a", "b", "c" };
    char sk[8];
    for (int i = 0; i < 3; i++) {
        snprintf(sk, sizeof sk, "s%d", i);
        put("Tab", item("f", sk, NULL, ls[i], 5000));
    }
#define Q_L "\"TableName\":\"Tab\",\"IndexName\":\"byL\",\"KeyConditionExpression\":\"pk = :p\"," \
            "\"ExpressionAttributeValues\":{\":p\":{\"S\":\"f\"}},\"ReturnConsumedCapacity\":\"INDEXES\""
    fdbt_resp r = fdbt_call("Query", "{" Q_L ",\"ConsistentRead\":true,\"Select\":\"ALL_ATTRIBUTES\"}");
    ck_assert(units(&r, "ConsumedCapacity.CapacityUnits") == 7);
    ck_assert(units(&r, "ConsumedCapacity.Table.CapacityUnits") == 6);
    ck_assert(units(&r, "ConsumedCapacity.LocalSecondaryIndexes.byL.CapacityUnits") == 1);
    ck_assert_int_eq(json_object_get_int(fdbt_get(r.json, "Count")), 3);
    ck_assert_ptr_nonnull(fdbt_get(r.json, "Items.0.v")); /* fetched: the whole item */
    fdbt_free(&r);
    /* eventually consistent: halves of each */
    r = fdbt_call("Query", "{" Q_L ",\"ProjectionExpression\":\"v\"}");
    ck_assert(units(&r, "ConsumedCapacity.CapacityUnits") == 3.5);
    ck_assert(units(&r, "ConsumedCapacity.Table.CapacityUnits") == 3);
    ck_assert(units(&r, "ConsumedCapacity.LocalSecondaryIndexes.byL.CapacityUnits") == 0.5);
    fdbt_free(&r);
    /* what the entries hold: the index alone */
    r = fdbt_call("Query", "{" Q_L ",\"ConsistentRead\":true}");
    ck_assert(units(&r, "ConsumedCapacity.CapacityUnits") == 1);
    ck_assert(units(&r, "ConsumedCapacity.Table.CapacityUnits") == 0);
    ck_assert_ptr_null(fdbt_get(r.json, "Items.0.v"));
    fdbt_free(&r);
#undef Q_L
}
END_TEST

/* A failed condition: DynamoDB charges the write but the error carries no
 * ConsumedCapacity; a cancelled transaction none either. */
START_TEST(failed_condition)
{
    put("Two", item("c", NULL, NULL, NULL, 2000));
    fdbt_resp r = fdbt_call("PutItem", "{\"TableName\":\"Two\",\"Item\":{\"pk\":{\"S\":\"c\"}},\"ConditionExpression\":\"attribute_not_exists(pk)\","
                            "\"ReturnValuesOnConditionCheckFailure\":\"ALL_OLD\",\"ReturnConsumedCapacity\":\"TOTAL\"}");
    ck_assert_int_eq(r.status, 400);
    ck_assert_str_eq(fdbt_error(&r), "ConditionalCheckFailedException");
    ck_assert_ptr_nonnull(fdbt_get(r.json, "Item.pk"));
    ck_assert_ptr_null(fdbt_get(r.json, "ConsumedCapacity"));
    fdbt_free(&r);
    r = fdbt_call("TransactWriteItems", "{\"TransactItems\":[{\"ConditionCheck\":{\"TableName\":\"Two\",\"Key\":{\"pk\":{\"S\":\"c\"}},"
                  "\"ConditionExpression\":\"attribute_not_exists(pk)\"}}],\"ReturnConsumedCapacity\":\"INDEXES\"}");
    ck_assert_int_eq(r.status, 400);
    ck_assert_str_eq(fdbt_error(&r), "TransactionCanceledException");
    ck_assert_ptr_null(fdbt_get(r.json, "ConsumedCapacity"));
    fdbt_free(&r);
    /* the item is as it was: a read still finds 2,000 bytes (a unit strongly consistent) */
    r = fdbt_call("GetItem", "{\"TableName\":\"Two\",\"Key\":{\"pk\":{\"S\":\"c\"}},\"ConsistentRead\":true,\"ReturnConsumedCapacity\":\"TOTAL\"}");
    ck_assert(units(&r, "ConsumedCapacity.CapacityUnits") == 1);
    ck_assert_ptr_nonnull(fdbt_get(r.json, "Item.v"));
    fdbt_free(&r);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("fakedb_capacity");
    TCase *tc = tcase_create("capacity");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, single_item_boundaries);
    tcase_add_test(tc, batch_write);
    tcase_add_test(tc, batch_get);
    tcase_add_test(tc, transact_write);
    tcase_add_test(tc, transact_get);
    tcase_add_test(tc, query_and_scan);
    tcase_add_test(tc, query_page_sum);
    tcase_add_test(tc, local_index_fetch);
    tcase_add_test(tc, failed_condition);
    suite_add_tcase(s, tc);
    return dl_check_run(s);
}
