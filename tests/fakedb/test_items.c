/* test_items.c: fakedb's item operations over HTTP: GetItem, PutItem, UpdateItem,
 * DeleteItem with conditions and ReturnValues, AttributeValue validation, tables,
 * BatchGetItem/BatchWriteItem and transactions; ProvisionedThroughput's unit checks and
 * the Server header of DynamoDB's answers. */
#include "fdbt.h"

#include <check.h>
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static size_t discard(char *p, size_t sz, size_t n, void *arg)
{
    (void)p, (void)arg;
    return sz * n;
}

static void setup(void)
{
    fdbt_start(NULL);
    fdbt_table("Shop", "sk", "N");
    fdbt_table("Locks", NULL, NULL);
}

static void teardown(void)
{
    fdbt_stop();
}

/* DynamoDB's exact texts for malformed requests: an enum lists its set in DynamoDB's
 * order, key schemas name what they miss, nesting stops at 32 levels, and a number where
 * a string belongs is a SerializationException. */
START_TEST(request_error_texts)
{
    fdbt_resp r = fdbt_call("UpdateItem", "{\"TableName\":\"Locks\",\"Key\":{\"pk\":{\"S\":\"k\"}},\"ReturnValues\":\"EVERYTHING\"}");
    ck_assert_str_eq(fdbt_message(&r), "1 validation error detected: Value 'EVERYTHING' at 'returnValues' failed to satisfy constraint: "
                                       "Member must satisfy enum value set: [ALL_NEW, UPDATED_OLD, ALL_OLD, NONE, UPDATED_NEW]");
    fdbt_free(&r);
    r = fdbt_call("CreateTable", "{\"TableName\":\"NoDef\",\"KeySchema\":[{\"AttributeName\":\"pk\",\"KeyType\":\"HASH\"},{\"AttributeName\":\"sk\",\"KeyType\":\"RANGE\"}],"
                                 "\"AttributeDefinitions\":[{\"AttributeName\":\"pk\",\"AttributeType\":\"S\"}],\"BillingMode\":\"PAY_PER_REQUEST\"}");
    ck_assert_str_eq(fdbt_message(&r), "Invalid KeySchema: Some index key attribute have no definition");
    fdbt_free(&r);
    r = fdbt_call("CreateTable", "{\"TableName\":\"NoDef\",\"KeySchema\":[{\"AttributeName\":\"pk\",\"KeyType\":\"HASH\"}],"
                                 "\"AttributeDefinitions\":[{\"AttributeName\":\"pk\",\"AttributeType\":\"S\"},{\"AttributeName\":\"a\",\"AttributeType\":\"S\"}],"
                                 "\"BillingMode\":\"PAY_PER_REQUEST\",\"GlobalSecondaryIndexes\":[{\"IndexName\":\"byU\",\"KeySchema\":[{\"AttributeName\":\"u\",\"KeyType\":\"HASH\"}],"
                                 "\"Projection\":{\"ProjectionType\":\"ALL\"}}]}");
    ck_assert_str_eq(fdbt_message(&r), "One or more parameter values were invalid: Some index key attributes are not defined in AttributeDefinitions. "
                                       "Keys: [u], AttributeDefinitions: [a, pk]");
    fdbt_free(&r);
    char body[2048];
    for (int levels = 31; levels <= 32; levels++) {
        int o = snprintf(body, sizeof body, "{\"TableName\":\"Locks\",\"Item\":{\"pk\":{\"S\":\"deep\"},\"m\":");
        for (int i = 0; i < levels; i++)
            o += snprintf(body + o, sizeof body - (size_t)o, "{\"M\":{\"m\":");
        o += snprintf(body + o, sizeof body - (size_t)o, "{\"S\":\"leaf\"}");
        for (int i = 0; i < levels; i++)
            o += snprintf(body + o, sizeof body - (size_t)o, "}}");
        snprintf(body + o, sizeof body - (size_t)o, "}}");
        r = fdbt_call("PutItem", body);
        if (levels == 31)
            ck_assert_msg(r.status == 200, "%s", r.body);
        else
            ck_assert_str_eq(fdbt_message(&r), "Nesting Levels have exceeded supported limits: Attributes in the item have nested levels beyond supported limit");
        fdbt_free(&r);
    }
    fdbt_expect_error("GetItem", "{\"TableName\":5,\"Key\":{\"pk\":{\"S\":\"k\"}}}", "SerializationException", "NUMBER_VALUE cannot be converted to String");
}
END_TEST

START_TEST(put_get_roundtrip_normalises_numbers)
{
    fdbt_expect_ok("PutItem", "{\"TableName\":\"Shop\",\"Item\":{\"pk\":{\"S\":\"a\"},\"sk\":{\"N\":\"01.50\"},"
                              "\"n\":{\"N\":\"1e3\"},\"l\":{\"L\":[{\"BOOL\":true},{\"NULL\":true}]},\"m\":{\"M\":{\"x\":{\"SS\":[\"q\",\"p\"]}}}}}");
    fdbt_resp r = fdbt_call("GetItem", "{\"TableName\":\"Shop\",\"Key\":{\"pk\":{\"S\":\"a\"},\"sk\":{\"N\":\"1.5\"}}}");
    ck_assert_int_eq(r.status, 200);
    ck_assert_str_eq(fdbt_str(&r, "Item.sk.N"), "1.5");
    ck_assert_str_eq(fdbt_str(&r, "Item.n.N"), "1000");
    ck_assert_str_eq(fdbt_str(&r, "Item.m.M.x.SS.0"), "q");
    ck_assert_ptr_nonnull(r.request_id);
    ck_assert_uint_eq(strlen(r.request_id), 52);
    ck_assert_uint_gt(strlen(r.crc32), 0);
    fdbt_free(&r);
    r = fdbt_call("GetItem", "{\"TableName\":\"Shop\",\"Key\":{\"pk\":{\"S\":\"zz\"},\"sk\":{\"N\":\"1\"}}}");
    ck_assert_int_eq(r.status, 200);
    ck_assert_ptr_null(fdbt_get(r.json, "Item"));
    fdbt_free(&r);
}
END_TEST

START_TEST(projection_and_capacity)
{
    fdbt_expect_ok("PutItem", "{\"TableName\":\"Locks\",\"Item\":{\"pk\":{\"S\":\"a\"},\"x\":{\"S\":\"1\"},\"y\":{\"S\":\"2\"}}}");
    fdbt_resp r = fdbt_call("GetItem", "{\"TableName\":\"Locks\",\"Key\":{\"pk\":{\"S\":\"a\"}},\"ProjectionExpression\":\"#y\","
                                       "\"ExpressionAttributeNames\":{\"#y\":\"y\"},\"ReturnConsumedCapacity\":\"TOTAL\",\"ConsistentRead\":true}");
    ck_assert_int_eq(r.status, 200);
    ck_assert_str_eq(fdbt_str(&r, "Item.y.S"), "2");
    ck_assert_ptr_null(fdbt_get(r.json, "Item.x"));
    ck_assert_str_eq(fdbt_str(&r, "ConsumedCapacity.TableName"), "Locks");
    ck_assert(json_object_get_double(fdbt_get(r.json, "ConsumedCapacity.CapacityUnits")) == 1.0);
    fdbt_free(&r);
}
END_TEST

/* GetItem of a whole item answers its stored text as it is; asked for every attribute by
 * a projection, the item is parsed and written again. Both answers hold the same item and
 * charge the same capacity, for values whose writing could differ: escapes, a NUL,
 * non-ASCII text, every type, nesting, and an item over the 64 KiB past which a parse
 * gets a tokener of its own. */
static void expect_same_item(const char *key)
{
    char body[512];
    snprintf(body, sizeof body, "{\"TableName\":\"Locks\",\"Key\":{\"pk\":{\"S\":\"%s\"}},\"ReturnConsumedCapacity\":\"TOTAL\"}", key);
    fdbt_resp whole = fdbt_call("GetItem", body);
    snprintf(body, sizeof body,
             "{\"TableName\":\"Locks\",\"Key\":{\"pk\":{\"S\":\"%s\"}},\"ReturnConsumedCapacity\":\"TOTAL\","
             "\"ProjectionExpression\":\"pk, #s, n, b, ss, ns, bs, l, m, t, z, big\",\"ExpressionAttributeNames\":{\"#s\":\"s\"}}",
             key);
    fdbt_resp projected = fdbt_call("GetItem", body);
    ck_assert_int_eq(whole.status, 200);
    ck_assert_int_eq(projected.status, 200);
    json_object *a = fdbt_get(whole.json, "Item"), *b = fdbt_get(projected.json, "Item");
    ck_assert_ptr_nonnull(a);
    ck_assert_msg(json_object_equal(a, b), "whole %.300s\nprojected %.300s", whole.body, projected.body);
    ck_assert(json_object_get_double(fdbt_get(whole.json, "ConsumedCapacity.CapacityUnits")) ==
              json_object_get_double(fdbt_get(projected.json, "ConsumedCapacity.CapacityUnits")));
    fdbt_free(&whole);
    fdbt_free(&projected);
}

START_TEST(whole_item_answer_is_the_item)
{
    fdbt_expect_ok("PutItem",
                   "{\"TableName\":\"Locks\",\"Item\":{\"pk\":{\"S\":\"all\"},"
                   "\"s\":{\"S\":\"q\\\"b\\\\s/\\u00e9\\ud83d\\ude00\\u0001 nul\\u0000end\"},\"n\":{\"N\":\"-012.50\"},"
                   "\"b\":{\"B\":\"AAEC\"},\"ss\":{\"SS\":[\"y\",\"x\"]},\"ns\":{\"NS\":[\"2\",\"10\"]},\"bs\":{\"BS\":[\"AA==\",\"AQ==\"]},"
                   "\"l\":{\"L\":[{\"NULL\":true},{\"M\":{\"k\":{\"L\":[]}}}]},\"m\":{\"M\":{\"a b\":{\"BOOL\":false}}},"
                   "\"t\":{\"BOOL\":true},\"z\":{\"NULL\":true}}}");
    expect_same_item("all");
    fdbt_resp r = fdbt_call("GetItem", "{\"TableName\":\"Locks\",\"Key\":{\"pk\":{\"S\":\"all\"}}}");
    json_object *sv = fdbt_get(r.json, "Item.s.S");
    ck_assert_ptr_nonnull(sv);
    ck_assert_int_eq(json_object_get_string_len(sv), 21); /* the NUL and what follows it kept */
    ck_assert_ptr_nonnull(strstr(r.body, "\\u0000"));
    ck_assert_str_eq(fdbt_str(&r, "Item.n.N"), "-12.5");
    fdbt_free(&r);

    size_t n = 300000;
    char *big = malloc(n + 200);
    ck_assert_ptr_nonnull(big);
    int at = snprintf(big, 200, "{\"TableName\":\"Locks\",\"Item\":{\"pk\":{\"S\":\"big\"},\"big\":{\"S\":\"");
    memset(big + at, 'x', n);
    strcpy(big + at + n, "\"}}}");
    fdbt_expect_ok("PutItem", big);
    free(big);
    expect_same_item("big");
    r = fdbt_call("GetItem", "{\"TableName\":\"Locks\",\"Key\":{\"pk\":{\"S\":\"big\"}}}");
    ck_assert_int_eq(json_object_get_string_len(fdbt_get(r.json, "Item.big.S")), (int)n);
    fdbt_free(&r);
    expect_same_item("all"); /* and a small one again after it */
}
END_TEST

/* A body that is not JSON, one too deep, and one over 64 KiB that breaks off: each is
 * refused as DynamoDB refuses it, and the request after each is parsed whole. */
START_TEST(parse_errors_leave_the_parser_ready)
{
    fdbt_expect_ok("PutItem", "{\"TableName\":\"Locks\",\"Item\":{\"pk\":{\"S\":\"p\"},\"v\":{\"S\":\"1\"}}}");
    size_t n = 70000;
    char *longbad = malloc(n + 100);
    ck_assert_ptr_nonnull(longbad);
    int at = snprintf(longbad, 100, "{\"TableName\":\"Locks\",\"Key\":{\"pk\":{\"S\":\"");
    memset(longbad + at, 'y', n);
    strcpy(longbad + at + n, "\"}}"); /* one brace short */
    char deep[4096];
    size_t d = 0;
    d += (size_t)snprintf(deep, sizeof deep, "{\"TableName\":\"Locks\",\"Key\":{\"pk\":{\"S\":\"p\"}},\"x\":");
    for (int i = 0; i < 120; i++)
        deep[d++] = '[';
    for (int i = 0; i < 120; i++)
        deep[d++] = ']';
    deep[d++] = '}';
    deep[d] = '\0';
    const char *bad[] = { "{\"TableName\":\"Locks\",\"Key\":", deep, longbad, "{\"TableName\":\"Locks\"} trailing" };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        fdbt_resp r = fdbt_call("GetItem", bad[i]);
        ck_assert_msg(r.status == 400 && !strcmp(fdbt_error(&r), "SerializationException"), "body %zu: %ld %.200s", i,
                      r.status, r.body ? r.body : "");
        fdbt_free(&r);
        r = fdbt_call("GetItem", "{\"TableName\":\"Locks\",\"Key\":{\"pk\":{\"S\":\"p\"}}}");
        ck_assert_int_eq(r.status, 200);
        ck_assert_str_eq(fdbt_str(&r, "Item.v.S"), "1");
        fdbt_free(&r);
    }
    free(longbad);
}
END_TEST

START_TEST(conditional_put_fails_with_item)
{
    const char *put = "{\"TableName\":\"Locks\",\"Item\":{\"pk\":{\"S\":\"lock1\"},\"owner\":{\"S\":\"me\"}},"
                      "\"ConditionExpression\":\"attribute_not_exists(pk)\",\"ReturnValuesOnConditionCheckFailure\":\"ALL_OLD\"}";
    fdbt_expect_ok("PutItem", put);
    fdbt_resp r = fdbt_call("PutItem", put);
    ck_assert_int_eq(r.status, 400);
    ck_assert_str_eq(fdbt_error(&r), "ConditionalCheckFailedException");
    ck_assert_str_eq(fdbt_message(&r), "The conditional request failed");
    ck_assert_str_eq(fdbt_str(&r, "Item.owner.S"), "me");
    ck_assert_str_eq(json_object_get_string(fdbt_get(r.json, "__type")),
                     "com.amazonaws.dynamodb.v20120810#ConditionalCheckFailedException");
    fdbt_free(&r);
    fakedb_stats s = fakedb_get_stats(fdbt_db, "PutItem");
    ck_assert_int_eq(s.requests, 2);
    ck_assert_int_eq(s.condition_failures, 1);
}
END_TEST

START_TEST(update_return_values)
{
    fdbt_expect_ok("PutItem", "{\"TableName\":\"Locks\",\"Item\":{\"pk\":{\"S\":\"c\"},\"n\":{\"N\":\"5\"},\"k\":{\"S\":\"keep\"}}}");
#define UPD "{\"TableName\":\"Locks\",\"Key\":{\"pk\":{\"S\":\"c\"}},\"UpdateExpression\":\"SET n = n + :one\"," \
            "\"ExpressionAttributeValues\":{\":one\":{\"N\":\"1\"}},\"ReturnValues\":\"%s\"}"
    char body[512];
    const char *modes[4] = { "UPDATED_OLD", "UPDATED_NEW", "ALL_OLD", "ALL_NEW" };
    const char *want_n[4] = { "5", "7", "7", "9" };
    for (int i = 0; i < 4; i++) {
        snprintf(body, sizeof body, UPD, modes[i]);
        fdbt_resp r = fdbt_call("UpdateItem", body);
        ck_assert_int_eq(r.status, 200);
        ck_assert_str_eq(fdbt_str(&r, "Attributes.n.N"), want_n[i]);
        if (i < 2)
            ck_assert_ptr_null(fdbt_get(r.json, "Attributes.k"));
        else
            ck_assert_str_eq(fdbt_str(&r, "Attributes.k.S"), "keep");
        fdbt_free(&r);
    }
    snprintf(body, sizeof body, UPD, "NONE");
    fdbt_resp r = fdbt_call("UpdateItem", body);
    ck_assert_ptr_null(fdbt_get(r.json, "Attributes"));
    fdbt_free(&r);
    /* an update creates the item when it is missing */
    fdbt_expect_ok("UpdateItem", "{\"TableName\":\"Locks\",\"Key\":{\"pk\":{\"S\":\"new\"}},\"UpdateExpression\":\"SET v = :v\","
                                 "\"ExpressionAttributeValues\":{\":v\":{\"S\":\"x\"}}}");
    r = fdbt_call("GetItem", "{\"TableName\":\"Locks\",\"Key\":{\"pk\":{\"S\":\"new\"}}}");
    ck_assert_str_eq(fdbt_str(&r, "Item.v.S"), "x");
    fdbt_free(&r);
    fdbt_expect_error("UpdateItem", "{\"TableName\":\"Locks\",\"Key\":{\"pk\":{\"S\":\"c\"}},\"UpdateExpression\":\"SET pk = :v\","
                                    "\"ExpressionAttributeValues\":{\":v\":{\"S\":\"x\"}}}", "ValidationException", "part of the key");
    fdbt_expect_error("PutItem", "{\"TableName\":\"Locks\",\"Item\":{\"pk\":{\"S\":\"c\"}},\"ReturnValues\":\"ALL_NEW\"}",
                      "ValidationException", "ReturnValues can only be ALL_OLD or NONE");
}
END_TEST

START_TEST(delete_all_old)
{
    fdbt_expect_ok("PutItem", "{\"TableName\":\"Locks\",\"Item\":{\"pk\":{\"S\":\"d\"},\"v\":{\"S\":\"1\"}}}");
    fdbt_expect_error("DeleteItem", "{\"TableName\":\"Locks\",\"Key\":{\"pk\":{\"S\":\"d\"}},\"ConditionExpression\":\"v = :x\","
                                    "\"ExpressionAttributeValues\":{\":x\":{\"S\":\"2\"}}}", "ConditionalCheckFailedException", "The conditional request failed");
    fdbt_resp r = fdbt_call("DeleteItem", "{\"TableName\":\"Locks\",\"Key\":{\"pk\":{\"S\":\"d\"}},\"ReturnValues\":\"ALL_OLD\"}");
    ck_assert_int_eq(r.status, 200);
    ck_assert_str_eq(fdbt_str(&r, "Attributes.v.S"), "1");
    fdbt_free(&r);
    r = fdbt_call("GetItem", "{\"TableName\":\"Locks\",\"Key\":{\"pk\":{\"S\":\"d\"}}}");
    ck_assert_ptr_null(fdbt_get(r.json, "Item"));
    fdbt_free(&r);
}
END_TEST

START_TEST(key_validation)
{
    fdbt_expect_error("PutItem", "{\"TableName\":\"Shop\",\"Item\":{\"pk\":{\"S\":\"a\"}}}", "ValidationException",
                      "One or more parameter values were invalid: Missing the key sk in the item");
    fdbt_expect_error("PutItem", "{\"TableName\":\"Shop\",\"Item\":{\"pk\":{\"S\":\"a\"},\"sk\":{\"S\":\"x\"}}}", "ValidationException",
                      "Type mismatch for key sk expected: N actual: S");
    fdbt_expect_error("PutItem", "{\"TableName\":\"Shop\",\"Item\":{\"pk\":{\"S\":\"\"},\"sk\":{\"N\":\"1\"}}}", "ValidationException",
                      "The AttributeValue for a key attribute cannot contain an empty string value. Key: pk");
    fdbt_expect_error("GetItem", "{\"TableName\":\"Shop\",\"Key\":{\"pk\":{\"S\":\"a\"}}}", "ValidationException",
                      "The provided key element does not match the schema");
    fdbt_expect_error("GetItem", "{\"TableName\":\"Shop\",\"Key\":{\"pk\":{\"S\":\"a\"},\"sk\":{\"N\":\"1\"},\"x\":{\"S\":\"1\"}}}",
                      "ValidationException", "The provided key element does not match the schema");
    fdbt_expect_error("GetItem", "{\"TableName\":\"Nope\",\"Key\":{\"pk\":{\"S\":\"a\"}}}", "ResourceNotFoundException",
                      "Requested resource not found");
}
END_TEST

START_TEST(value_validation)
{
    struct { const char *value, *msg; } cases[] = {
        { "{\"N\":\"1x\"}", "A value provided cannot be converted into a number" },
        { "{\"N\":\"1e200\"}", "Number overflow" },
        { "{\"N\":\"1e-200\"}", "Number underflow" },
        { "{\"N\":\"1.23456789012345678901234567890123456789\"}", "38 significant digits" },
        { "{\"SS\":[]}", "An string set  may not be empty" },
        { "{\"SS\":[\"a\",\"a\"]}", "contains duplicates" },
        { "{\"NS\":[\"1\",\"1.0\"]}", "Input collection contains duplicates" },
        { "{}", "Supplied AttributeValue is empty" },
        { "{\"S\":\"a\",\"N\":\"1\"}", "more than one datatypes" },
        { "{\"NULL\":false}", "Null attribute value types must have the value of true" },
    };
    char body[512];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        snprintf(body, sizeof body, "{\"TableName\":\"Locks\",\"Item\":{\"pk\":{\"S\":\"v\"},\"x\":%s}}", cases[i].value);
        fdbt_expect_error("PutItem", body, "ValidationException", cases[i].msg);
    }
    /* 400 KB */
    size_t big = 410 * 1024;
    char *huge = malloc(big + 200);
    int n = snprintf(huge, 200, "{\"TableName\":\"Locks\",\"Item\":{\"pk\":{\"S\":\"big\"},\"x\":{\"S\":\"");
    memset(huge + n, 'a', big);
    strcpy(huge + n + big, "\"}}}");
    fdbt_expect_error("PutItem", huge, "ValidationException", "Item size has exceeded the maximum allowed size");
    free(huge);
}
END_TEST

/* ProvisionedThroughput given without a unit, or with one below 1: each member named as
 * DynamoDB's validation names it; absent altogether with PROVISIONED: its own message. */
START_TEST(throughput_units_missing)
{
    static const char *const bodies[][2] = {
        { "{\"ReadCapacityUnits\":1}", "1 validation error detected: Value null at 'provisionedThroughput.writeCapacityUnits' failed to satisfy constraint: Member must not be null" },
        { "{\"WriteCapacityUnits\":1}", "1 validation error detected: Value null at 'provisionedThroughput.readCapacityUnits' failed to satisfy constraint: Member must not be null" },
        { "{}", "2 validation errors detected: Value null at 'provisionedThroughput.readCapacityUnits' failed to satisfy constraint: Member must not be null; "
                "Value null at 'provisionedThroughput.writeCapacityUnits' failed to satisfy constraint: Member must not be null" },
        { "{\"ReadCapacityUnits\":1,\"WriteCapacityUnits\":0}", "1 validation error detected: Value '0' at 'provisionedThroughput.writeCapacityUnits' failed to satisfy constraint: Member must have value greater than or equal to 1" },
        { "{\"ReadCapacityUnits\":-3}", "2 validation errors detected: Value '-3' at 'provisionedThroughput.readCapacityUnits' failed to satisfy constraint: Member must have value greater than or equal to 1; "
                "Value null at 'provisionedThroughput.writeCapacityUnits' failed to satisfy constraint: Member must not be null" },
    };
    char body[1024];
    for (size_t i = 0; i < sizeof bodies / sizeof bodies[0]; i++) {
        snprintf(body, sizeof body, "{\"TableName\":\"Prov\",\"KeySchema\":[{\"AttributeName\":\"pk\",\"KeyType\":\"HASH\"}],"
                 "\"AttributeDefinitions\":[{\"AttributeName\":\"pk\",\"AttributeType\":\"S\"}],\"ProvisionedThroughput\":%s}", bodies[i][0]);
        fdbt_resp r = fdbt_call("CreateTable", body);
        ck_assert_msg(r.status == 400 && !strcmp(fdbt_error(&r), "ValidationException") && !strcmp(fdbt_message(&r), bodies[i][1]),
                      "%s: %s", bodies[i][0], r.body);
        fdbt_free(&r);
        snprintf(body, sizeof body, "{\"TableName\":\"Shop\",\"BillingMode\":\"PROVISIONED\",\"ProvisionedThroughput\":%s}", bodies[i][0]);
        r = fdbt_call("UpdateTable", body);
        ck_assert_msg(r.status == 400 && !strcmp(fdbt_message(&r), bodies[i][1]), "UpdateTable %s: %s", bodies[i][0], r.body);
        fdbt_free(&r);
    }
    /* A global secondary index's throughput: the member is named (the path does not
     * number the index). */
    fdbt_expect_error("CreateTable", "{\"TableName\":\"Prov\",\"KeySchema\":[{\"AttributeName\":\"pk\",\"KeyType\":\"HASH\"}],"
                      "\"AttributeDefinitions\":[{\"AttributeName\":\"pk\",\"AttributeType\":\"S\"},{\"AttributeName\":\"g\",\"AttributeType\":\"S\"}],"
                      "\"ProvisionedThroughput\":{\"ReadCapacityUnits\":1,\"WriteCapacityUnits\":1},"
                      "\"GlobalSecondaryIndexes\":[{\"IndexName\":\"ByG\",\"KeySchema\":[{\"AttributeName\":\"g\",\"KeyType\":\"HASH\"}],"
                      "\"Projection\":{\"ProjectionType\":\"ALL\"},\"ProvisionedThroughput\":{\"WriteCapacityUnits\":1}}]}",
                      "ValidationException", "provisionedThroughput.readCapacityUnits' failed to satisfy constraint: Member must not be null");
    /* Both given and valid: created. */
    fdbt_expect_ok("CreateTable", "{\"TableName\":\"Prov\",\"KeySchema\":[{\"AttributeName\":\"pk\",\"KeyType\":\"HASH\"}],"
                   "\"AttributeDefinitions\":[{\"AttributeName\":\"pk\",\"AttributeType\":\"S\"}],\"ProvisionedThroughput\":{\"ReadCapacityUnits\":1,\"WriteCapacityUnits\":2}}");
}
END_TEST

typedef struct server_seen {
    char value[128];
    int count;
} server_seen;

static size_t on_server_header(char *p, size_t sz, size_t n, void *arg)
{
    server_seen *s = arg;
    size_t len = sz * n;
    if (len > 7 && !strncasecmp(p, "Server:", 7)) {
        size_t b = 7, e = len;
        while (b < e && p[b] == ' ')
            b++;
        while (e > b && (p[e - 1] == '\r' || p[e - 1] == '\n'))
            e--;
        snprintf(s->value, sizeof s->value, "%.*s", (int)(e - b), p + b);
        s->count++;
    }
    return len;
}

/* The Server header of an answer to `target` (NULL: GET /fake/health). */
static server_seen server_header(const char *target, const char *body)
{
    server_seen s = { "", 0 };
    CURL *c = curl_easy_init();
    ck_assert_ptr_nonnull(c);
    char url[256], th[160];
    struct curl_slist *hl = NULL;
    snprintf(url, sizeof url, "%s%s", fakedb_endpoint(fdbt_db), target ? "/" : "/fake/health");
    if (target) {
        snprintf(th, sizeof th, "X-Amz-Target: %s", target);
        hl = curl_slist_append(hl, th);
        hl = curl_slist_append(hl, "Content-Type: application/x-amz-json-1.0");
        hl = curl_slist_append(hl, "X-Amz-Date: 20231114T221320Z");
        hl = curl_slist_append(hl, "Authorization: AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20231114/us-east-1/dynamodb/aws4_request, "
                                   "SignedHeaders=host;x-amz-date;x-amz-target, Signature=0123456789abcdef");
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
    }
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, hl);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_server_header);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, &s);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, discard);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 30L);
    ck_assert_int_eq(curl_easy_perform(c), CURLE_OK);
    curl_slist_free_all(hl);
    curl_easy_cleanup(c);
    return s;
}

/* DynamoDB names itself "Server" in every answer of its API, errors included. */
START_TEST(answers_name_the_server)
{
    server_seen s = server_header("DynamoDB_20120810.ListTables", "{}");
    ck_assert_int_eq(s.count, 1);
    ck_assert_str_eq(s.value, "Server");
    s = server_header("DynamoDB_20120810.DescribeTable", "{\"TableName\":\"Nope\"}");
    ck_assert_int_eq(s.count, 1);
    ck_assert_str_eq(s.value, "Server");
    s = server_header("DynamoDB_20120810.NoSuchThing", "{}");
    ck_assert_int_eq(s.count, 1);
    ck_assert_str_eq(s.value, "Server");
    s = server_header("DynamoDBStreams_20120810.ListStreams", "{}");
    ck_assert_str_eq(s.value, "Server");
    /* fakedb's own endpoints are not DynamoDB's answers. */
    s = server_header(NULL, NULL);
    ck_assert_int_eq(s.count, 0);
}
END_TEST

START_TEST(tables_lifecycle)
{
    fdbt_resp r = fdbt_call("DescribeTable", "{\"TableName\":\"Shop\"}");
    ck_assert_int_eq(r.status, 200);
    ck_assert_str_eq(fdbt_str(&r, "Table.TableStatus"), "ACTIVE");
    ck_assert_str_eq(fdbt_str(&r, "Table.KeySchema.1.AttributeName"), "sk");
    fdbt_free(&r);
    fdbt_expect_error("CreateTable", "{\"TableName\":\"Shop\",\"KeySchema\":[{\"AttributeName\":\"pk\",\"KeyType\":\"HASH\"}],"
                                     "\"AttributeDefinitions\":[{\"AttributeName\":\"pk\",\"AttributeType\":\"S\"}],\"BillingMode\":\"PAY_PER_REQUEST\"}",
                      "ResourceInUseException", "Table already exists: Shop");
    fdbt_expect_error("CreateTable", "{\"TableName\":\"ab\",\"KeySchema\":[{\"AttributeName\":\"pk\",\"KeyType\":\"HASH\"}],"
                                     "\"AttributeDefinitions\":[{\"AttributeName\":\"pk\",\"AttributeType\":\"S\"}],\"BillingMode\":\"PAY_PER_REQUEST\"}",
                      "ValidationException", "Member must have length greater than or equal to 3");
    fdbt_expect_error("CreateTable", "{\"TableName\":\"a b c\",\"KeySchema\":[{\"AttributeName\":\"pk\",\"KeyType\":\"HASH\"}],"
                                     "\"AttributeDefinitions\":[{\"AttributeName\":\"pk\",\"AttributeType\":\"S\"}],\"BillingMode\":\"PAY_PER_REQUEST\"}",
                      "ValidationException", "regular expression pattern");
    fdbt_expect_error("CreateTable", "{\"TableName\":\"T12\",\"KeySchema\":[{\"AttributeName\":\"pk\",\"KeyType\":\"HASH\"}],"
                                     "\"AttributeDefinitions\":[{\"AttributeName\":\"pk\",\"AttributeType\":\"S\"}]}",
                      "ValidationException", "ReadCapacityUnits and WriteCapacityUnits must both be specified");
    for (int i = 0; i < 5; i++) {
        char name[32];
        snprintf(name, sizeof name, "Tab%d", i);
        fakedb_error err;
        ck_assert_int_eq(fakedb_create_table(fdbt_db, name, "pk", NULL, &err), 0);
    }
    fakedb_error err;
    ck_assert_int_eq(fakedb_create_table(fdbt_db, "Tab0", "pk", NULL, &err), FAKEDB_EINUSE);
    /* 7 tables: Locks, Shop, Tab0..Tab4, paged by 3 */
    r = fdbt_call("ListTables", "{\"Limit\":3}");
    ck_assert_int_eq(json_object_array_length(fdbt_get(r.json, "TableNames")), 3);
    ck_assert_str_eq(fdbt_str(&r, "TableNames.0"), "Locks");
    ck_assert_str_eq(fdbt_str(&r, "LastEvaluatedTableName"), "Tab0");
    fdbt_free(&r);
    r = fdbt_call("ListTables", "{\"Limit\":3,\"ExclusiveStartTableName\":\"Tab2\"}");
    ck_assert_int_eq(json_object_array_length(fdbt_get(r.json, "TableNames")), 2);
    ck_assert_str_eq(fdbt_str(&r, "TableNames.1"), "Tab4");
    ck_assert_ptr_null(fdbt_get(r.json, "LastEvaluatedTableName"));
    fdbt_free(&r);
    r = fdbt_call("DeleteTable", "{\"TableName\":\"Tab1\"}");
    ck_assert_str_eq(fdbt_str(&r, "TableDescription.TableStatus"), "DELETING");
    fdbt_free(&r);
    fdbt_expect_error("DescribeTable", "{\"TableName\":\"Tab1\"}", "ResourceNotFoundException", "Table: Tab1 not found");
    r = fdbt_call("UpdateTable", "{\"TableName\":\"Tab2\",\"BillingMode\":\"PROVISIONED\",\"ProvisionedThroughput\":{\"ReadCapacityUnits\":5,\"WriteCapacityUnits\":6}}");
    ck_assert_int_eq(r.status, 200);
    ck_assert_int_eq(json_object_get_int(fdbt_get(r.json, "TableDescription.ProvisionedThroughput.WriteCapacityUnits")), 6);
    fdbt_free(&r);
    fdbt_expect_error("UpdateTable", "{\"TableName\":\"Tab2\"}", "ValidationException", "At least one of");
}
END_TEST

START_TEST(batch_get_and_write)
{
    char body[8192];
    size_t o = (size_t)snprintf(body, sizeof body, "{\"RequestItems\":{\"Locks\":[");
    for (int i = 0; i < 25; i++)
        o += (size_t)snprintf(body + o, sizeof body - o, "%s{\"PutRequest\":{\"Item\":{\"pk\":{\"S\":\"b%d\"}}}}", i ? "," : "", i);
    snprintf(body + o, sizeof body - o, "]}}");
    fdbt_resp r = fdbt_call("BatchWriteItem", body);
    ck_assert_int_eq(r.status, 200);
    ck_assert_int_eq(json_object_object_length(fdbt_get(r.json, "UnprocessedItems")), 0);
    fdbt_free(&r);
    /* 26 requests */
    o = (size_t)snprintf(body, sizeof body, "{\"RequestItems\":{\"Locks\":[");
    for (int i = 0; i < 26; i++)
        o += (size_t)snprintf(body + o, sizeof body - o, "%s{\"DeleteRequest\":{\"Key\":{\"pk\":{\"S\":\"b%d\"}}}}", i ? "," : "", i);
    snprintf(body + o, sizeof body - o, "]}}");
    fdbt_expect_error("BatchWriteItem", body, "ValidationException", "Member must have length less than or equal to 25");
    fdbt_expect_error("BatchWriteItem", "{\"RequestItems\":{\"Locks\":[{\"DeleteRequest\":{\"Key\":{\"pk\":{\"S\":\"b1\"}}}},"
                                        "{\"DeleteRequest\":{\"Key\":{\"pk\":{\"S\":\"b1\"}}}}]}}",
                      "ValidationException", "Provided list of item keys contains duplicates");
    fdbt_expect_ok("BatchWriteItem", "{\"RequestItems\":{\"Locks\":[{\"DeleteRequest\":{\"Key\":{\"pk\":{\"S\":\"b1\"}}}}]}}");
    r = fdbt_call("BatchGetItem", "{\"RequestItems\":{\"Locks\":{\"Keys\":[{\"pk\":{\"S\":\"b0\"}},{\"pk\":{\"S\":\"b1\"}},{\"pk\":{\"S\":\"b2\"}}]}}}");
    ck_assert_int_eq(r.status, 200);
    ck_assert_int_eq(json_object_array_length(fdbt_get(r.json, "Responses.Locks")), 2);
    fdbt_free(&r);
    o = (size_t)snprintf(body, sizeof body, "{\"RequestItems\":{\"Locks\":{\"Keys\":[");
    for (int i = 0; i < 101; i++)
        o += (size_t)snprintf(body + o, sizeof body - o, "%s{\"pk\":{\"S\":\"k%d\"}}", i ? "," : "", i);
    snprintf(body + o, sizeof body - o, "]}}}");
    fdbt_expect_error("BatchGetItem", body, "ValidationException", "Too many items requested for the BatchGetItem call");
}
END_TEST

START_TEST(transactions)
{
    fdbt_expect_ok("PutItem", "{\"TableName\":\"Locks\",\"Item\":{\"pk\":{\"S\":\"held\"},\"owner\":{\"S\":\"x\"}}}");
    const char *tx = "{\"TransactItems\":["
        "{\"ConditionCheck\":{\"TableName\":\"Locks\",\"Key\":{\"pk\":{\"S\":\"held\"}},\"ConditionExpression\":\"#o = :me\","
        "\"ExpressionAttributeNames\":{\"#o\":\"owner\"},\"ExpressionAttributeValues\":{\":me\":{\"S\":\"me\"}},"
        "\"ReturnValuesOnConditionCheckFailure\":\"ALL_OLD\"}},"
        "{\"Put\":{\"TableName\":\"Shop\",\"Item\":{\"pk\":{\"S\":\"order\"},\"sk\":{\"N\":\"1\"}}}}]}";
    fdbt_resp r = fdbt_call("TransactWriteItems", tx);
    ck_assert_int_eq(r.status, 400);
    ck_assert_str_eq(fdbt_error(&r), "TransactionCanceledException");
    /* DynamoDB spells this one exception's text "Message" */
    ck_assert_str_eq(fdbt_str(&r, "Message"), "Transaction cancelled, please refer cancellation reasons for specific reasons [ConditionalCheckFailed, None]");
    ck_assert_ptr_null(fdbt_get(r.json, "message"));
    ck_assert_str_eq(fdbt_str(&r, "CancellationReasons.0.Message"), "The conditional request failed");
    ck_assert_str_eq(fdbt_str(&r, "CancellationReasons.0.Code"), "ConditionalCheckFailed");
    ck_assert_str_eq(fdbt_str(&r, "CancellationReasons.0.Item.owner.S"), "x");
    ck_assert_str_eq(fdbt_str(&r, "CancellationReasons.1.Code"), "None");
    fdbt_free(&r);
    /* nothing applied */
    r = fdbt_call("GetItem", "{\"TableName\":\"Shop\",\"Key\":{\"pk\":{\"S\":\"order\"},\"sk\":{\"N\":\"1\"}}}");
    ck_assert_ptr_null(fdbt_get(r.json, "Item"));
    fdbt_free(&r);
    ck_assert_int_eq(fakedb_get_stats(fdbt_db, "TransactWriteItems").condition_failures, 1);
    /* An expression that does not parse in the second action: a ValidationException,
     * nothing applied, and nothing of the first action's expressions kept (the ASan and
     * valgrind runs of this suite see a leak here). */
    r = fdbt_call("TransactWriteItems", "{\"TransactItems\":["
        "{\"ConditionCheck\":{\"TableName\":\"Locks\",\"Key\":{\"pk\":{\"S\":\"held\"}},"
        "\"ConditionExpression\":\"attribute_exists(pk)\"}},"
        "{\"Put\":{\"TableName\":\"Shop\",\"Item\":{\"pk\":{\"S\":\"order\"},\"sk\":{\"N\":\"1\"}},"
        "\"ConditionExpression\":\"attribute_not_exists(pk\"}}]}");
    ck_assert_int_eq(r.status, 400);
    ck_assert_str_eq(fdbt_error(&r), "ValidationException");
    fdbt_free(&r);
    r = fdbt_call("GetItem", "{\"TableName\":\"Shop\",\"Key\":{\"pk\":{\"S\":\"order\"},\"sk\":{\"N\":\"1\"}}}");
    ck_assert_ptr_null(fdbt_get(r.json, "Item"));
    fdbt_free(&r);
    fdbt_expect_ok("PutItem", "{\"TableName\":\"Locks\",\"Item\":{\"pk\":{\"S\":\"held\"},\"owner\":{\"S\":\"me\"}}}");
    fdbt_expect_ok("TransactWriteItems", tx);
    r = fdbt_call("TransactGetItems", "{\"TransactItems\":[{\"Get\":{\"TableName\":\"Shop\",\"Key\":{\"pk\":{\"S\":\"order\"},\"sk\":{\"N\":\"1\"}}}},"
                                      "{\"Get\":{\"TableName\":\"Locks\",\"Key\":{\"pk\":{\"S\":\"none\"}}}}]}");
    ck_assert_int_eq(r.status, 200);
    ck_assert_str_eq(fdbt_str(&r, "Responses.0.Item.pk.S"), "order");
    ck_assert_ptr_null(fdbt_get(r.json, "Responses.1.Item"));
    fdbt_free(&r);
    fdbt_expect_error("TransactWriteItems", "{\"TransactItems\":[{\"Delete\":{\"TableName\":\"Locks\",\"Key\":{\"pk\":{\"S\":\"a\"}}}},"
                                            "{\"Delete\":{\"TableName\":\"Locks\",\"Key\":{\"pk\":{\"S\":\"a\"}}}}]}",
                      "ValidationException", "Transaction request cannot include multiple operations on one item");
    char *big = malloc(101 * 100 + 64);
    size_t o = (size_t)sprintf(big, "{\"TransactItems\":[");
    for (int i = 0; i < 101; i++)
        o += (size_t)sprintf(big + o, "%s{\"Delete\":{\"TableName\":\"Locks\",\"Key\":{\"pk\":{\"S\":\"t%d\"}}}}", i ? "," : "", i);
    sprintf(big + o, "]}");
    fdbt_expect_error("TransactWriteItems", big, "ValidationException", "less than or equal to 100");
    free(big);
}
END_TEST

START_TEST(transaction_idempotency)
{
    const char *tx = "{\"ClientRequestToken\":\"tok-1\",\"TransactItems\":[{\"Update\":{\"TableName\":\"Locks\","
                     "\"Key\":{\"pk\":{\"S\":\"ctr\"}},\"UpdateExpression\":\"ADD n :one\",\"ExpressionAttributeValues\":{\":one\":{\"N\":\"1\"}}}}]}";
    fdbt_expect_ok("TransactWriteItems", tx);
    fdbt_expect_ok("TransactWriteItems", tx);
    fdbt_resp r = fdbt_call("GetItem", "{\"TableName\":\"Locks\",\"Key\":{\"pk\":{\"S\":\"ctr\"}}}");
    ck_assert_str_eq(fdbt_str(&r, "Item.n.N"), "1");
    fdbt_free(&r);
    fdbt_expect_error("TransactWriteItems", "{\"ClientRequestToken\":\"tok-1\",\"TransactItems\":[{\"Delete\":{\"TableName\":\"Locks\","
                                            "\"Key\":{\"pk\":{\"S\":\"ctr\"}}}}]}", "IdempotentParameterMismatchException", NULL);
    /* after ten minutes of the server clock the token is forgotten */
    ck_assert_int_eq(fakedb_clock_advance(fdbt_db, 10 * 60 * 1000 + 1), 0);
    fdbt_expect_ok("TransactWriteItems", tx);
    r = fdbt_call("GetItem", "{\"TableName\":\"Locks\",\"Key\":{\"pk\":{\"S\":\"ctr\"}}}");
    ck_assert_str_eq(fdbt_str(&r, "Item.n.N"), "2");
    fdbt_free(&r);
}
END_TEST


static json_object *get_item(const char *pk)
{
    char body[512];
    snprintf(body, sizeof body, "{\"TableName\":\"Locks\",\"Key\":{\"pk\":{\"S\":\"%s\"}},\"ConsistentRead\":true}", pk);
    fdbt_resp r = fdbt_call("GetItem", body);
    ck_assert_msg(r.status == 200, "GetItem: %ld %s", r.status, r.body ? r.body : "");
    json_object *item = json_object_get(fdbt_get(r.json, "Item"));
    fdbt_free(&r);
    return item;
}

/* An update of only REMOVE and DELETE actions on a missing item creates nothing, and a
 * REMOVE of a nested path there is no error; with a SET it creates the item. */
START_TEST(update_removes_only_creates_nothing)
{
    fdbt_expect_ok("UpdateItem", "{\"TableName\":\"Locks\",\"Key\":{\"pk\":{\"S\":\"r1\"}},\"UpdateExpression\":\"REMOVE a\"}");
    ck_assert_ptr_null(get_item("r1"));
    fdbt_expect_ok("UpdateItem", "{\"TableName\":\"Locks\",\"Key\":{\"pk\":{\"S\":\"r1\"}},\"UpdateExpression\":\"DELETE s :v\","
                                 "\"ExpressionAttributeValues\":{\":v\":{\"SS\":[\"x\"]}}}");
    ck_assert_ptr_null(get_item("r1"));
    fdbt_resp r = fdbt_call("UpdateItem", "{\"TableName\":\"Locks\",\"Key\":{\"pk\":{\"S\":\"r1\"}},\"UpdateExpression\":\"REMOVE a.b.c, l[3] DELETE s :v\","
                                          "\"ExpressionAttributeValues\":{\":v\":{\"SS\":[\"x\"]}},\"ReturnValues\":\"ALL_NEW\"}");
    ck_assert_msg(r.status == 200, "%ld %s", r.status, r.body ? r.body : "");
    ck_assert_ptr_null(fdbt_get(r.json, "Attributes"));
    fdbt_free(&r);
    ck_assert_ptr_null(get_item("r1"));
    /* A key attribute is still not removable. */
    fdbt_expect_error("UpdateItem", "{\"TableName\":\"Locks\",\"Key\":{\"pk\":{\"S\":\"r1\"}},\"UpdateExpression\":\"REMOVE pk\"}",
                      "ValidationException", "Cannot update attribute pk");
    /* A condition on the missing item is still evaluated. */
    fdbt_expect_error("UpdateItem", "{\"TableName\":\"Locks\",\"Key\":{\"pk\":{\"S\":\"r1\"}},\"UpdateExpression\":\"REMOVE a\","
                                    "\"ConditionExpression\":\"attribute_exists(pk)\"}",
                      "ConditionalCheckFailedException", NULL);
    /* With a SET the item is created. */
    fdbt_expect_ok("UpdateItem", "{\"TableName\":\"Locks\",\"Key\":{\"pk\":{\"S\":\"r1\"}},\"UpdateExpression\":\"SET x = :x REMOVE a\","
                                 "\"ExpressionAttributeValues\":{\":x\":{\"N\":\"1\"}}}");
    json_object *item = get_item("r1");
    ck_assert_ptr_nonnull(item);
    ck_assert_str_eq(json_object_get_string(fdbt_get(item, "x.N")), "1");
    json_object_put(item);
    /* On an existing item REMOVE works as before. */
    fdbt_expect_ok("UpdateItem", "{\"TableName\":\"Locks\",\"Key\":{\"pk\":{\"S\":\"r1\"}},\"UpdateExpression\":\"REMOVE x\"}");
    item = get_item("r1");
    ck_assert_ptr_nonnull(item);
    ck_assert_ptr_null(fdbt_get(item, "x"));
    json_object_put(item);
}
END_TEST

/* SET of several indexes past the end of a list appends them in ascending index order,
 * whatever the order written; an index inside the list replaces in place. */
START_TEST(update_list_appends_ascending)
{
    fdbt_expect_ok("PutItem", "{\"TableName\":\"Locks\",\"Item\":{\"pk\":{\"S\":\"l1\"},\"l\":{\"L\":[{\"N\":\"0\"},{\"N\":\"1\"},{\"N\":\"2\"}]}}}");
    fdbt_expect_ok("UpdateItem", "{\"TableName\":\"Locks\",\"Key\":{\"pk\":{\"S\":\"l1\"}},"
                                 "\"UpdateExpression\":\"SET l[84] = :x, l[37] = :y, l[1] = :w, l[17] = :z\","
                                 "\"ExpressionAttributeValues\":{\":x\":{\"S\":\"x\"},\":y\":{\"S\":\"y\"},\":z\":{\"S\":\"z\"},\":w\":{\"S\":\"w\"}}}");
    json_object *item = get_item("l1");
    json_object *l = fdbt_get(item, "l.L");
    ck_assert_int_eq((int)json_object_array_length(l), 6);
    const char *want[6][2] = { { "N", "0" }, { "S", "w" }, { "N", "2" }, { "S", "z" }, { "S", "y" }, { "S", "x" } };
    for (size_t i = 0; i < 6; i++) {
        json_object *v = fdbt_get(json_object_array_get_idx(l, i), want[i][0]);
        ck_assert_msg(v && !strcmp(json_object_get_string(v), want[i][1]), "l[%zu] is %s", i,
                      json_object_to_json_string(json_object_array_get_idx(l, i)));
    }
    json_object_put(item);
}
END_TEST

/* A NUL character (\u0000) in an attribute name, a map key, a string value or a name in
 * ExpressionAttributeNames is kept whole: "a\u0000b" does not overwrite "a". */
START_TEST(nul_in_names_kept_whole)
{
    fdbt_expect_ok("PutItem", "{\"TableName\":\"Locks\",\"Item\":{\"pk\":{\"S\":\"n\\u0000x\"},\"a\":{\"S\":\"1\"},\"a\\u0000b\":{\"S\":\"2\"},"
                              "\"m\":{\"M\":{\"k\":{\"N\":\"1\"},\"k\\u0000z\":{\"N\":\"2\"}}},\"ss\":{\"SS\":[\"p\\u0000q\",\"p\"]}}}");
    fdbt_resp r = fdbt_call("GetItem", "{\"TableName\":\"Locks\",\"Key\":{\"pk\":{\"S\":\"n\\u0000x\"}}}");
    ck_assert_int_eq(r.status, 200);
    json_object *item = fdbt_get(r.json, "Item");
    ck_assert_ptr_nonnull(item);
    /* json-c reads the answer's keys as C strings too: the raw body shows them whole. */
    ck_assert_msg(strstr(r.body, "\"a\":{\"S\":\"1\"}"), "%s", r.body);
    ck_assert_msg(strstr(r.body, "\"a\\u0000b\":{\"S\":\"2\"}"), "%s", r.body);
    ck_assert_msg(strstr(r.body, "\"k\\u0000z\":{\"N\":\"2\"}"), "%s", r.body);
    ck_assert_msg(strstr(r.body, "\"k\":{\"N\":\"1\"}"), "%s", r.body);
    ck_assert_msg(strstr(r.body, "\"p\\u0000q\""), "%s", r.body);
    fdbt_free(&r);
    /* The item "n" (the key cut at the NUL) does not exist. */
    ck_assert_ptr_null(get_item("n"));
    /* An expression name with a NUL names that attribute, not "a". */
    r = fdbt_call("UpdateItem", "{\"TableName\":\"Locks\",\"Key\":{\"pk\":{\"S\":\"n\\u0000x\"}},\"UpdateExpression\":\"SET #n = :v\","
                                "\"ExpressionAttributeNames\":{\"#n\":\"a\\u0000b\"},\"ExpressionAttributeValues\":{\":v\":{\"S\":\"3\"}},"
                                "\"ReturnValues\":\"UPDATED_NEW\"}");
    ck_assert_int_eq(r.status, 200);
    ck_assert_msg(strstr(r.body, "{\"Attributes\":{\"a\\u0000b\":{\"S\":\"3\"}}}"), "%s", r.body);
    fdbt_free(&r);
    r = fdbt_call("GetItem", "{\"TableName\":\"Locks\",\"Key\":{\"pk\":{\"S\":\"n\\u0000x\"}},\"ProjectionExpression\":\"a\"}");
    ck_assert_msg(strstr(r.body, "{\"Item\":{\"a\":{\"S\":\"1\"}}}"), "%s", r.body);
    fdbt_free(&r);
    /* A table name with a NUL is not the table before it. */
    r = fdbt_call("GetItem", "{\"TableName\":\"Locks\\u0000x\",\"Key\":{\"pk\":{\"S\":\"a\"}}}");
    ck_assert_str_eq(fdbt_error(&r), "ValidationException");
    ck_assert_msg(strstr(r.body, "Value 'Locks\\u0000x' at 'tableName' failed to satisfy constraint: Member must satisfy regular expression pattern"),
                  "%s", r.body);
    fdbt_free(&r);
    fdbt_expect_error("BatchGetItem", "{\"RequestItems\":{\"Locks\\u0000x\":{\"Keys\":[{\"pk\":{\"S\":\"a\"}}]}}}", "ValidationException", NULL);
}
END_TEST

static void nested_json(char *out, size_t cap, int levels)
{
    size_t o = 0;
    for (int i = 0; i < levels; i++)
        o += (size_t)snprintf(out + o, cap - o, i % 2 ? "{\"L\":[" : "{\"M\":{\"m\":");
    o += (size_t)snprintf(out + o, cap - o, "{\"S\":\"leaf\"}");
    for (int i = levels - 1; i >= 0; i--)
        o += (size_t)snprintf(out + o, cap - o, i % 2 ? "]}" : "}}");
    ck_assert_uint_lt(o, cap);
}

/* Nesting stops at DynamoDB's limit (an attribute of 31 nested maps or lists is the
 * deepest accepted, as DynamoDB Local and AWS's "32 levels" count it), and whatever is
 * accepted reads back (json-c's default depth made deep items unreadable: HTTP 500). */
START_TEST(deep_nesting_limit_and_readable)
{
    char v[4096], body[8192];
    for (int levels = 14; levels <= 31; levels += 17) {
        nested_json(v, sizeof v, levels);
        snprintf(body, sizeof body, "{\"TableName\":\"Locks\",\"Item\":{\"pk\":{\"S\":\"deep%d\"},\"d\":%s}}", levels, v);
        fdbt_expect_ok("PutItem", body);
        char key[32];
        snprintf(key, sizeof key, "deep%d", levels);
        json_object *item = get_item(key);
        ck_assert_ptr_nonnull(item);
        ck_assert_str_eq(json_object_to_json_string_ext(fdbt_get(item, "d"), JSON_C_TO_STRING_PLAIN), v);
        json_object_put(item);
    }
    fdbt_expect_ok("Scan", "{\"TableName\":\"Locks\"}");
    fdbt_expect_ok("Query", "{\"TableName\":\"Locks\",\"KeyConditionExpression\":\"pk = :p\",\"ExpressionAttributeValues\":{\":p\":{\"S\":\"deep31\"}}}");
    fdbt_expect_ok("BatchGetItem", "{\"RequestItems\":{\"Locks\":{\"Keys\":[{\"pk\":{\"S\":\"deep31\"}}]}}}");
    fdbt_expect_ok("TransactGetItems", "{\"TransactItems\":[{\"Get\":{\"TableName\":\"Locks\",\"Key\":{\"pk\":{\"S\":\"deep31\"}}}}]}");
    nested_json(v, sizeof v, 32);
    snprintf(body, sizeof body, "{\"TableName\":\"Locks\",\"Item\":{\"pk\":{\"S\":\"deep32\"},\"d\":%s}}", v);
    fdbt_expect_error("PutItem", body, "ValidationException", "Nesting Levels have exceeded supported limits");
    /* An update that nests deeper is refused, or else its item still reads back. */
    nested_json(v, sizeof v, 1);
    snprintf(body, sizeof body, "{\"TableName\":\"Locks\",\"Key\":{\"pk\":{\"S\":\"deep31\"}},\"UpdateExpression\":\"SET d.m[0].m[0].m[0].m[0].m[0].m[0].m[0].m[0].m[0].m[0].m[0].m[0].m[0].m[0].m[0].x = :v\","
                                "\"ExpressionAttributeValues\":{\":v\":%s}}", v);
    fdbt_resp r = fdbt_call("UpdateItem", body);
    ck_assert_msg(r.status == 400 || r.status == 200, "%ld %s", r.status, r.body ? r.body : "");
    fdbt_free(&r);
    json_object *item = get_item("deep31");
    ck_assert_ptr_nonnull(item);
    json_object_put(item);
}
END_TEST


/* Limits and error classes: a transaction's 4 MB, a key of the wrong type inside a
 * transaction (cancelled with a ValidationError reason), JSON of the wrong shape
 * (SerializationException), UpdateTimeToLive's Enabled a boolean, and the function
 * argument rules of the expression language. */
START_TEST(limits_and_error_classes)
{
    size_t cap = 5 * 1024 * 1024;
    char *big = malloc(cap);
    ck_assert_ptr_nonnull(big);
    size_t o = (size_t)snprintf(big, cap, "{\"TransactItems\":[");
    for (int i = 0; i < 11; i++) {
        o += (size_t)snprintf(big + o, cap - o, "%s{\"Put\":{\"TableName\":\"Locks\",\"Item\":{\"pk\":{\"S\":\"t%d\"},\"v\":{\"S\":\"", i ? "," : "", i);
        memset(big + o, 'x', 390 * 1024);
        o += 390 * 1024;
        o += (size_t)snprintf(big + o, cap - o, "\"}}}}");
    }
    snprintf(big + o, cap - o, "]}");
    fdbt_expect_error("TransactWriteItems", big, "ValidationException", "Transaction payload size cannot exceed 4MB. Payload Size: 4393016");
    free(big);

    fdbt_resp r = fdbt_call("TransactWriteItems", "{\"TransactItems\":[{\"Put\":{\"TableName\":\"Locks\",\"Item\":{\"pk\":{\"S\":\"a\"}}}},"
                                                  "{\"Put\":{\"TableName\":\"Locks\",\"Item\":{\"pk\":{\"N\":\"1\"}}}}]}");
    ck_assert_int_eq(r.status, 400);
    ck_assert_str_eq(fdbt_error(&r), "TransactionCanceledException");
    ck_assert_str_eq(fdbt_str(&r, "Message"), "Transaction cancelled, please refer cancellation reasons for specific reasons [None, ValidationError]");
    ck_assert_str_eq(fdbt_str(&r, "CancellationReasons.0.Code"), "None");
    ck_assert_str_eq(fdbt_str(&r, "CancellationReasons.1.Code"), "ValidationError");
    ck_assert_msg(strstr(fdbt_str(&r, "CancellationReasons.1.Message"), "Type mismatch for key"), "%s", r.body);
    fdbt_free(&r);
    r = fdbt_call("GetItem", "{\"TableName\":\"Locks\",\"Key\":{\"pk\":{\"S\":\"a\"}}}");
    ck_assert_ptr_null(fdbt_get(r.json, "Item")); /* nothing applied */
    fdbt_free(&r);

    /* An update that cannot be evaluated fails the whole request instead. */
    fdbt_expect_error("TransactWriteItems", "{\"TransactItems\":[{\"Put\":{\"TableName\":\"Locks\",\"Item\":{\"pk\":{\"S\":\"a\"}}}},"
                                            "{\"Update\":{\"TableName\":\"Locks\",\"Key\":{\"pk\":{\"S\":\"b\"}},\"UpdateExpression\":\"SET x = y + :one\","
                                            "\"ExpressionAttributeValues\":{\":one\":{\"N\":\"1\"}}}}]}",
                      "ValidationException", "The provided expression refers to an attribute that does not exist in the item");
    r = fdbt_call("GetItem", "{\"TableName\":\"Locks\",\"Key\":{\"pk\":{\"S\":\"a\"}}}");
    ck_assert_ptr_null(fdbt_get(r.json, "Item"));
    fdbt_free(&r);
    fdbt_expect_error("TransactWriteItems", "{\"TransactItems\":{\"Put\":{}}}", "SerializationException", "Start of structure or map found where not expected.");
    fdbt_expect_error("BatchGetItem", "{\"RequestItems\":{\"Locks\":{\"Keys\":{\"pk\":{\"S\":\"a\"}}}}}", "SerializationException",
                      "Start of structure or map found where not expected.");
    fdbt_expect_error("UpdateTimeToLive", "{\"TableName\":\"Locks\",\"TimeToLiveSpecification\":{\"Enabled\":\"yes\",\"AttributeName\":\"exp\"}}",
                      "SerializationException", NULL);
    fdbt_expect_error("UpdateTimeToLive", "{\"TableName\":\"Locks\",\"TimeToLiveSpecification\":{\"Enabled\":1,\"AttributeName\":\"exp\"}}",
                      "SerializationException", NULL);
    r = fdbt_call("DescribeTimeToLive", "{\"TableName\":\"Locks\"}");
    ck_assert_str_eq(fdbt_str(&r, "TimeToLiveDescription.TimeToLiveStatus"), "DISABLED");
    fdbt_free(&r);

    fdbt_expect_error("PutItem", "{\"TableName\":\"Locks\",\"Item\":{\"pk\":{\"S\":\"f\"}},\"ConditionExpression\":\"size(size(a)) > :z\","
                                 "\"ExpressionAttributeValues\":{\":z\":{\"N\":\"1\"}}}",
                      "ValidationException", "Incorrect operand type for operator or function; operator or function: size, operand type: N");
    fdbt_expect_error("PutItem", "{\"TableName\":\"Locks\",\"Item\":{\"pk\":{\"S\":\"f\"}},\"ConditionExpression\":\"contains(a, a)\"}",
                      "ValidationException", "The first operand must be distinct from the remaining operands for this operator or function; operator: contains");
    fdbt_expect_ok("PutItem", "{\"TableName\":\"Locks\",\"Item\":{\"pk\":{\"S\":\"f\"}},\"ConditionExpression\":\"attribute_type(:v, :t)\","
                              "\"ExpressionAttributeValues\":{\":v\":{\"S\":\"x\"},\":t\":{\"S\":\"S\"}}}");
    fdbt_expect_error("PutItem", "{\"TableName\":\"Locks\",\"Item\":{\"pk\":{\"S\":\"f\"}},\"ConditionExpression\":\"attribute_type(:v, :t)\","
                                 "\"ExpressionAttributeValues\":{\":v\":{\"S\":\"x\"},\":t\":{\"S\":\"N\"}}}",
                      "ConditionalCheckFailedException", NULL);
}
END_TEST


/* An index needs a projection type, and key attribute names (and projected ones) are
 * 1 to 255 characters. */
START_TEST(table_projection_and_name_limits)
{
    char body[4096], name[300];
    fdbt_expect_error("CreateTable", "{\"TableName\":\"GsiP\",\"KeySchema\":[{\"AttributeName\":\"pk\",\"KeyType\":\"HASH\"}],"
                                     "\"AttributeDefinitions\":[{\"AttributeName\":\"pk\",\"AttributeType\":\"S\"},{\"AttributeName\":\"g\",\"AttributeType\":\"S\"}],"
                                     "\"GlobalSecondaryIndexes\":[{\"IndexName\":\"byG\",\"KeySchema\":[{\"AttributeName\":\"g\",\"KeyType\":\"HASH\"}],\"Projection\":{}}],"
                                     "\"BillingMode\":\"PAY_PER_REQUEST\"}",
                      "ValidationException", "Indexes must have a projection specified");
    for (int len = 256; len >= 255; len--) {
        memset(name, 'p', (size_t)len);
        name[len] = 0;
        snprintf(body, sizeof body, "{\"TableName\":\"Long%d\",\"KeySchema\":[{\"AttributeName\":\"%s\",\"KeyType\":\"HASH\"}],"
                                    "\"AttributeDefinitions\":[{\"AttributeName\":\"%s\",\"AttributeType\":\"S\"}],\"BillingMode\":\"PAY_PER_REQUEST\"}",
                 len, name, name);
        if (len == 256)
            fdbt_expect_error("CreateTable", body, "ValidationException", "must be between 1 and 255 characters, inclusive");
        else
            fdbt_expect_ok("CreateTable", body);
    }
    snprintf(body, sizeof body, "{\"TableName\":\"GsiI\",\"KeySchema\":[{\"AttributeName\":\"pk\",\"KeyType\":\"HASH\"}],"
                                "\"AttributeDefinitions\":[{\"AttributeName\":\"pk\",\"AttributeType\":\"S\"},{\"AttributeName\":\"g\",\"AttributeType\":\"S\"}],"
                                "\"GlobalSecondaryIndexes\":[{\"IndexName\":\"byG\",\"KeySchema\":[{\"AttributeName\":\"g\",\"KeyType\":\"HASH\"}],"
                                "\"Projection\":{\"ProjectionType\":\"INCLUDE\",\"NonKeyAttributes\":[\"%sp\"]}}],\"BillingMode\":\"PAY_PER_REQUEST\"}",
             name);
    fdbt_expect_error("CreateTable", body, "ValidationException", "must be between 1 and 255 characters, inclusive");
}
END_TEST

static Suite *items_suite(void)
{
    Suite *s = suite_create("fakedb_items");
    TCase *tc = tcase_create("items");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, put_get_roundtrip_normalises_numbers);
    tcase_add_test(tc, request_error_texts);
    tcase_add_test(tc, projection_and_capacity);
    tcase_add_test(tc, whole_item_answer_is_the_item);
    tcase_add_test(tc, parse_errors_leave_the_parser_ready);
    tcase_add_test(tc, conditional_put_fails_with_item);
    tcase_add_test(tc, update_return_values);
    tcase_add_test(tc, delete_all_old);
    tcase_add_test(tc, key_validation);
    tcase_add_test(tc, value_validation);
    tcase_add_test(tc, update_removes_only_creates_nothing);
    tcase_add_test(tc, update_list_appends_ascending);
    tcase_add_test(tc, nul_in_names_kept_whole);
    tcase_add_test(tc, deep_nesting_limit_and_readable);
    tcase_add_test(tc, limits_and_error_classes);
    suite_add_tcase(s, tc);
    return s;
}

static Suite *tables_suite(void)
{
    Suite *s = suite_create("fakedb_tables");
    TCase *tc = tcase_create("tables");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, tables_lifecycle);
    tcase_add_test(tc, throughput_units_missing);
    tcase_add_test(tc, answers_name_the_server);
    tcase_add_test(tc, table_projection_and_name_limits);
    suite_add_tcase(s, tc);
    return s;
}

static Suite *batch_txn_suite(void)
{
    Suite *s = suite_create("fakedb_batch_txn");
    TCase *tc = tcase_create("batch_txn");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, batch_get_and_write);
    tcase_add_test(tc, transactions);
    tcase_add_test(tc, transaction_idempotency);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(items_suite());
    srunner_add_suite(sr, tables_suite());
    srunner_add_suite(sr, batch_txn_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
