/* test_fidelity.c: the remaining differences from DynamoDB of issue #25 item 1, over
 * HTTP: nested list_append refused, a parallel Scan restarted outside its segment, the
 * limits of attribute and TTL names, NonKeyAttributes, TransactWriteItems naming only
 * its first invalid action, DeleteTable's short answer, UPDATED_OLD/NEW of nested paths,
 * members of the wrong JSON type (SerializationException) and messages that name the
 * right thing. */
#include "fdbt.h"

#include <check.h>

#include "dl_check.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void setup(void)
{
    fdbt_start(NULL);
    fdbt_table("Fid", NULL, NULL);
}

static void teardown(void)
{
    fdbt_stop();
}

#define LA_VALUES "\"ExpressionAttributeValues\":{\":a\":{\"L\":[{\"N\":\"1\"}]},\":b\":{\"L\":[{\"N\":\"2\"}]},\":c\":{\"L\":[{\"N\":\"3\"}]}}"

START_TEST(nested_list_append_refused)
{
    const char *msg = "Invalid UpdateExpression: The function is not allowed to be used this way in an expression; function: list_append";
    fdbt_expect_error_exact("UpdateItem", "{\"TableName\":\"Fid\",\"Key\":{\"pk\":{\"S\":\"a\"}},"
                            "\"UpdateExpression\":\"SET l = list_append(list_append(:a, :b), :c)\"," LA_VALUES "}",
                            "ValidationException", msg);
    fdbt_expect_error_exact("UpdateItem", "{\"TableName\":\"Fid\",\"Key\":{\"pk\":{\"S\":\"a\"}},"
                            "\"UpdateExpression\":\"SET l = list_append(:a, list_append(:b, :c))\"," LA_VALUES "}",
                            "ValidationException", msg);
    fdbt_expect_error_exact("UpdateItem", "{\"TableName\":\"Fid\",\"Key\":{\"pk\":{\"S\":\"a\"}},"
                            "\"UpdateExpression\":\"SET l = if_not_exists(l, list_append(:a, :b))\","
                            "\"ExpressionAttributeValues\":{\":a\":{\"L\":[]},\":b\":{\"L\":[]}}}",
                            "ValidationException", msg);
    /* nothing was written; if_not_exists nests anywhere, as DynamoDB allows */
    fdbt_resp r = fdbt_call("GetItem", "{\"TableName\":\"Fid\",\"Key\":{\"pk\":{\"S\":\"a\"}}}");
    ck_assert_ptr_null(fdbt_get(r.json, "Item"));
    fdbt_free(&r);
    fdbt_expect_ok("UpdateItem", "{\"TableName\":\"Fid\",\"Key\":{\"pk\":{\"S\":\"a\"}},"
                   "\"UpdateExpression\":\"SET l = list_append(if_not_exists(l, :a), :b)\","
                   "\"ExpressionAttributeValues\":{\":a\":{\"L\":[{\"N\":\"1\"}]},\":b\":{\"L\":[{\"N\":\"2\"}]}}}");
    fdbt_expect_ok("UpdateItem", "{\"TableName\":\"Fid\",\"Key\":{\"pk\":{\"S\":\"a\"}},"
                   "\"UpdateExpression\":\"SET m = if_not_exists(m, if_not_exists(n, :a))\","
                   "\"ExpressionAttributeValues\":{\":a\":{\"L\":[]}}}");
    r = fdbt_call("GetItem", "{\"TableName\":\"Fid\",\"Key\":{\"pk\":{\"S\":\"a\"}}}");
    ck_assert_str_eq(fdbt_str(&r, "Item.l.L.1.N"), "2");
    ck_assert_ptr_nonnull(fdbt_get(r.json, "Item.m.L"));
    fdbt_free(&r);
}
END_TEST

START_TEST(parallel_scan_start_key_in_segment)
{
    char body[512];
    for (int i = 0; i < 40; i++) {
        snprintf(body, sizeof body, "{\"TableName\":\"Fid\",\"Item\":{\"pk\":{\"S\":\"k%d\"}}}", i);
        fdbt_expect_ok("PutItem", body);
    }
    /* each key lies in exactly one of 4 segments: restarting there scans, elsewhere is refused */
    for (int i = 0; i < 40; i += 7) {
        int ok = 0;
        for (int seg = 0; seg < 4; seg++) {
            snprintf(body, sizeof body, "{\"TableName\":\"Fid\",\"Segment\":%d,\"TotalSegments\":4,"
                     "\"ExclusiveStartKey\":{\"pk\":{\"S\":\"k%d\"}}}", seg, i);
            fdbt_resp r = fdbt_call("Scan", body);
            if (r.status == 200) {
                ok++;
            } else {
                ck_assert_str_eq(fdbt_error(&r), "ValidationException");
                ck_assert_str_eq(fdbt_message(&r), "Exclusive start key must lie within the segment");
            }
            fdbt_free(&r);
        }
        ck_assert_int_eq(ok, 1);
    }
    /* a page's LastEvaluatedKey always restarts its own segment */
    for (int seg = 0; seg < 4; seg++) {
        snprintf(body, sizeof body, "{\"TableName\":\"Fid\",\"Segment\":%d,\"TotalSegments\":4,\"Limit\":2}", seg);
        fdbt_resp r = fdbt_call("Scan", body);
        json_object *lek = fdbt_get(r.json, "LastEvaluatedKey");
        if (lek) {
            snprintf(body, sizeof body, "{\"TableName\":\"Fid\",\"Segment\":%d,\"TotalSegments\":4,"
                     "\"ExclusiveStartKey\":%s}", seg, json_object_to_json_string(lek));
            fdbt_expect_ok("Scan", body);
        }
        fdbt_free(&r);
    }
}
END_TEST

START_TEST(name_limits)
{
    /* a non-key attribute name: 65,535 bytes stored, one more refused */
    size_t n = 65536;
    char *name = malloc(n + 1), *body = malloc(n + 256);
    ck_assert_ptr_nonnull(name);
    ck_assert_ptr_nonnull(body);
    memset(name, 'n', n);
    name[n] = 0;
    snprintf(body, n + 256, "{\"TableName\":\"Fid\",\"Item\":{\"pk\":{\"S\":\"long\"},\"%s\":{\"S\":\"v\"}}}", name);
    fdbt_expect_error_exact("PutItem", body, "ValidationException", "Attribute name is too large, must be less than 65536 bytes");
    name[n - 1] = 0;
    snprintf(body, n + 256, "{\"TableName\":\"Fid\",\"Item\":{\"pk\":{\"S\":\"long\"},\"%s\":{\"S\":\"v\"}}}", name);
    fdbt_expect_ok("PutItem", body);
    free(name);
    free(body);

    /* a TTL attribute name: 255 characters (two bytes each here) accepted, 256 refused */
    char ttl[256 * 2 + 1], req[1024], msg[1024];
    for (int i = 0; i < 256; i++)
        memcpy(ttl + 2 * i, "\xc3\xa9", 2);
    ttl[512] = 0;
    snprintf(req, sizeof req, "{\"TableName\":\"Fid\",\"TimeToLiveSpecification\":{\"Enabled\":true,\"AttributeName\":\"%s\"}}", ttl);
    snprintf(msg, sizeof msg, "1 validation error detected: Value '%s' at 'timeToLiveSpecification.attributeName' failed to satisfy constraint: Member must have length less than or equal to 255", ttl);
    fdbt_expect_error_exact("UpdateTimeToLive", req, "ValidationException", msg);
    ttl[510] = 0;
    snprintf(req, sizeof req, "{\"TableName\":\"Fid\",\"TimeToLiveSpecification\":{\"Enabled\":true,\"AttributeName\":\"%s\"}}", ttl);
    fdbt_expect_ok("UpdateTimeToLive", req);
}
END_TEST

static void create_with_nka(const char *nka, const char *type, const char *msg)
{
    char body[1024];
    snprintf(body, sizeof body,
             "{\"TableName\":\"Nka\",\"KeySchema\":[{\"AttributeName\":\"pk\",\"KeyType\":\"HASH\"}],"
             "\"AttributeDefinitions\":[{\"AttributeName\":\"pk\",\"AttributeType\":\"S\"},{\"AttributeName\":\"g\",\"AttributeType\":\"S\"}],"
             "\"BillingMode\":\"PAY_PER_REQUEST\",\"GlobalSecondaryIndexes\":[{\"IndexName\":\"byG\","
             "\"KeySchema\":[{\"AttributeName\":\"g\",\"KeyType\":\"HASH\"}],"
             "\"Projection\":{\"ProjectionType\":\"INCLUDE\",\"NonKeyAttributes\":%s}}]}", nka);
    if (type)
        fdbt_expect_error_exact("CreateTable", body, type, msg);
    else
        fdbt_expect_ok("CreateTable", body);
}

START_TEST(non_key_attributes)
{
    create_with_nka("[\"a\",\"b\",\"a\"]", "ValidationException", "Cannot have two attributes with the same name");
    create_with_nka("[\"a\",5]", "SerializationException", "NUMBER_VALUE cannot be converted to String");
    create_with_nka("[\"a\",true]", "SerializationException", "TRUE_VALUE cannot be converted to String");
    create_with_nka("[\"a\",{}]", "SerializationException", "Start of structure or map found where not expected.");
    create_with_nka("\"a\"", "SerializationException", NULL);
    fdbt_resp r = fdbt_call("DescribeTable", "{\"TableName\":\"Nka\"}");
    ck_assert_str_eq(fdbt_error(&r), "ResourceNotFoundException");
    fdbt_free(&r);
    create_with_nka("[\"a\",\"b\"]", NULL, NULL);
}
END_TEST

#define TX_PUT(key) "{\"Put\":{\"TableName\":\"Fid\",\"Item\":{\"pk\":" key "}}}"

START_TEST(transaction_names_first_invalid_action)
{
    fdbt_resp r = fdbt_call("TransactWriteItems", "{\"TransactItems\":[" TX_PUT("{\"S\":\"ok\"}") ","
                            TX_PUT("{\"N\":\"1\"}") "," TX_PUT("{\"S\":\"ok2\"}") "," TX_PUT("{\"B\":\"AQ==\"}") "]}");
    ck_assert_int_eq(r.status, 400);
    ck_assert_str_eq(fdbt_error(&r), "TransactionCanceledException");
    ck_assert_str_eq(fdbt_str(&r, "Message"), "Transaction cancelled, please refer cancellation reasons for specific reasons [None, ValidationError, None, None]");
    json_object *reasons = fdbt_get(r.json, "CancellationReasons");
    ck_assert_int_eq(json_object_array_length(reasons), 4);
    ck_assert_str_eq(fdbt_str(&r, "CancellationReasons.1.Code"), "ValidationError");
    ck_assert_ptr_nonnull(strstr(fdbt_str(&r, "CancellationReasons.1.Message"), "Type mismatch for key"));
    ck_assert_str_eq(fdbt_str(&r, "CancellationReasons.3.Code"), "None");
    ck_assert_ptr_null(fdbt_get(r.json, "CancellationReasons.3.Message"));
    fdbt_free(&r);
    /* a malformed action after the invalid key fails the whole request first */
    fdbt_expect_error_exact("TransactWriteItems", "{\"TransactItems\":[" TX_PUT("{\"N\":\"1\"}") ","
                            "{\"Put\":{\"TableName\":\"Fid\",\"Item\":{\"pk\":{\"S\":\"x\"}},\"ConditionExpression\":\"a = = b\"}}]}",
                            "ValidationException", NULL);
    /* nothing was written */
    r = fdbt_call("GetItem", "{\"TableName\":\"Fid\",\"Key\":{\"pk\":{\"S\":\"ok\"}}}");
    ck_assert_ptr_null(fdbt_get(r.json, "Item"));
    fdbt_free(&r);
}
END_TEST

START_TEST(updated_values_of_nested_paths)
{
    fdbt_expect_ok("PutItem", "{\"TableName\":\"Fid\",\"Item\":{\"pk\":{\"S\":\"u\"},\"a\":{\"M\":{\"b\":{\"S\":\"1\"},\"c\":{\"S\":\"2\"}}},"
                   "\"l\":{\"L\":[{\"N\":\"1\"},{\"N\":\"2\"},{\"N\":\"3\"}]},\"t\":{\"S\":\"top\"}}}");
    fdbt_resp r = fdbt_call("UpdateItem", "{\"TableName\":\"Fid\",\"Key\":{\"pk\":{\"S\":\"u\"}},"
                            "\"UpdateExpression\":\"SET a.b = :v, l[1] = :v\",\"ExpressionAttributeValues\":{\":v\":{\"S\":\"9\"}},"
                            "\"ReturnValues\":\"UPDATED_OLD\"}");
    ck_assert_int_eq(r.status, 200);
    ck_assert_str_eq(json_object_to_json_string_ext(fdbt_get(r.json, "Attributes"), JSON_C_TO_STRING_PLAIN),
                     "{\"a\":{\"M\":{\"b\":{\"S\":\"1\"}}},\"l\":{\"L\":[{\"N\":\"2\"}]}}");
    fdbt_free(&r);
    r = fdbt_call("UpdateItem", "{\"TableName\":\"Fid\",\"Key\":{\"pk\":{\"S\":\"u\"}},"
                  "\"UpdateExpression\":\"SET a.b = :w REMOVE a.c\",\"ExpressionAttributeValues\":{\":w\":{\"S\":\"8\"}},"
                  "\"ReturnValues\":\"UPDATED_NEW\"}");
    ck_assert_str_eq(json_object_to_json_string_ext(fdbt_get(r.json, "Attributes"), JSON_C_TO_STRING_PLAIN),
                     "{\"a\":{\"M\":{\"b\":{\"S\":\"8\"}}}}");
    fdbt_free(&r);
    /* a top-level attribute is returned whole, as before */
    r = fdbt_call("UpdateItem", "{\"TableName\":\"Fid\",\"Key\":{\"pk\":{\"S\":\"u\"}},"
                  "\"UpdateExpression\":\"SET t = :w\",\"ExpressionAttributeValues\":{\":w\":{\"S\":\"new\"}},"
                  "\"ReturnValues\":\"UPDATED_OLD\"}");
    ck_assert_str_eq(json_object_to_json_string_ext(fdbt_get(r.json, "Attributes"), JSON_C_TO_STRING_PLAIN),
                     "{\"t\":{\"S\":\"top\"}}");
    fdbt_free(&r);
}
END_TEST

START_TEST(wrong_json_types_are_serialization_errors)
{
    static const struct { const char *op, *body, *msg; } cases[] = {
        { "GetItem", "{\"TableName\":\"Fid\",\"Key\":{\"pk\":{\"S\":\"a\"}},\"ProjectionExpression\":\"#n\",\"ExpressionAttributeNames\":{\"#n\":7}}",
          "NUMBER_VALUE cannot be converted to String" },
        { "GetItem", "{\"TableName\":\"Fid\",\"Key\":{\"pk\":{\"S\":\"a\"}},\"ProjectionExpression\":\"#n\",\"ExpressionAttributeNames\":{\"#n\":{}}}",
          "Start of structure or map found where not expected." },
        { "GetItem", "{\"TableName\":\"Fid\",\"Key\":{\"pk\":{\"S\":\"a\"}},\"ProjectionExpression\":\"#n\",\"ExpressionAttributeNames\":[\"x\"]}",
          "Start of list found where not expected." },
        { "GetItem", "{\"TableName\":\"Fid\",\"Key\":{\"pk\":{\"S\":\"a\"}},\"ConsistentRead\":\"yes\"}",
          "STRING_VALUE cannot be converted to Boolean" },
        { "Query", "{\"TableName\":\"Fid\",\"KeyConditionExpression\":\"pk = :p\",\"ExpressionAttributeValues\":{\":p\":{\"S\":\"a\"}},\"ScanIndexForward\":1}",
          "NUMBER_VALUE cannot be converted to Boolean" },
        { "CreateTable", "{\"TableName\":\"Obj\",\"KeySchema\":{\"AttributeName\":\"pk\",\"KeyType\":\"HASH\"},"
          "\"AttributeDefinitions\":[{\"AttributeName\":\"pk\",\"AttributeType\":\"S\"}],\"BillingMode\":\"PAY_PER_REQUEST\"}",
          "Start of structure or map found where not expected." },
        { "CreateTable", "{\"TableName\":\"Obj\",\"KeySchema\":[{\"AttributeName\":5,\"KeyType\":\"HASH\"}],"
          "\"AttributeDefinitions\":[{\"AttributeName\":\"pk\",\"AttributeType\":\"S\"}],\"BillingMode\":\"PAY_PER_REQUEST\"}",
          "NUMBER_VALUE cannot be converted to String" },
        { "CreateTable", "{\"TableName\":\"Obj\",\"KeySchema\":[\"pk\"],"
          "\"AttributeDefinitions\":[{\"AttributeName\":\"pk\",\"AttributeType\":\"S\"}],\"BillingMode\":\"PAY_PER_REQUEST\"}",
          "Unexpected value type in payload" },
        { "TransactWriteItems", "{\"TransactItems\":[{\"Update\":{\"TableName\":\"Fid\",\"Key\":{\"pk\":{\"S\":\"a\"}},"
          "\"UpdateExpression\":\"SET #n = :v\",\"ExpressionAttributeNames\":{\"#n\":false},\"ExpressionAttributeValues\":{\":v\":{\"S\":\"x\"}}}}]}",
          "FALSE_VALUE cannot be converted to String" },
        { "BatchGetItem", "{\"RequestItems\":{\"Fid\":{\"Keys\":[{\"pk\":{\"S\":\"a\"}}],\"ConsistentRead\":\"no\"}}}",
          "STRING_VALUE cannot be converted to Boolean" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        fdbt_expect_error_exact(cases[i].op, cases[i].body, "SerializationException", cases[i].msg);
    /* null is absent; a user's attribute named like a member is a value, not a member */
    fdbt_expect_ok("GetItem", "{\"TableName\":\"Fid\",\"Key\":{\"pk\":{\"S\":\"a\"}},\"ExpressionAttributeNames\":null}");
    fdbt_expect_ok("PutItem", "{\"TableName\":\"Fid\",\"Item\":{\"pk\":{\"S\":\"m\"},\"TableName\":{\"N\":\"5\"},"
                   "\"KeySchema\":{\"M\":{\"ConsistentRead\":{\"S\":\"x\"}}}}}");
    fdbt_expect_ok("BatchGetItem", "{\"RequestItems\":{\"Fid\":{\"Keys\":[{\"pk\":{\"S\":\"m\"}}]}}}");
}
END_TEST

START_TEST(messages_name_the_right_thing)
{
    /* index p (HASH) + x (RANGE) */
    fdbt_expect_ok("CreateTable", "{\"TableName\":\"Idx\",\"KeySchema\":[{\"AttributeName\":\"pk\",\"KeyType\":\"HASH\"}],"
                   "\"AttributeDefinitions\":[{\"AttributeName\":\"pk\",\"AttributeType\":\"S\"},{\"AttributeName\":\"p\",\"AttributeType\":\"S\"},"
                   "{\"AttributeName\":\"x\",\"AttributeType\":\"S\"}],\"BillingMode\":\"PAY_PER_REQUEST\","
                   "\"GlobalSecondaryIndexes\":[{\"IndexName\":\"byPX\",\"KeySchema\":[{\"AttributeName\":\"p\",\"KeyType\":\"HASH\"},"
                   "{\"AttributeName\":\"x\",\"KeyType\":\"RANGE\"}],\"Projection\":{\"ProjectionType\":\"ALL\"}}]}");
    fdbt_expect_ok("Query", "{\"TableName\":\"Idx\",\"IndexName\":\"byPX\",\"KeyConditionExpression\":\"x = :x AND p = :p\","
                   "\"ExpressionAttributeValues\":{\":x\":{\"S\":\"1\"},\":p\":{\"S\":\"2\"}}}");
    /* pk is no key of the index: the element missing is x, which is not named wrongly as p */
    fdbt_expect_error_exact("Query", "{\"TableName\":\"Idx\",\"IndexName\":\"byPX\",\"KeyConditionExpression\":\"pk = :x AND p = :p\","
                            "\"ExpressionAttributeValues\":{\":x\":{\"S\":\"1\"},\":p\":{\"S\":\"2\"}}}",
                            "ValidationException", "Query condition missed key schema element: x");
    fdbt_expect_error_exact("Query", "{\"TableName\":\"Idx\",\"IndexName\":\"byPX\",\"KeyConditionExpression\":\"y = :x AND x = :p\","
                            "\"ExpressionAttributeValues\":{\":x\":{\"S\":\"1\"},\":p\":{\"S\":\"2\"}}}",
                            "ValidationException", "Query condition missed key schema element: p");
    /* every key element there, and one more attribute */
    fdbt_expect_error_exact("Query", "{\"TableName\":\"Idx\",\"KeyConditionExpression\":\"x = :x AND pk = :p\","
                            "\"ExpressionAttributeValues\":{\":x\":{\"S\":\"1\"},\":p\":{\"S\":\"2\"}}}",
                            "ValidationException", "Query key condition not supported");
    /* an AttributeDefinition without its name or type: the model's message, before the key schema's */
    fdbt_expect_error_exact("CreateTable", "{\"TableName\":\"NoName\",\"KeySchema\":[{\"AttributeName\":\"pk\",\"KeyType\":\"HASH\"}],"
                            "\"AttributeDefinitions\":[{\"AttributeType\":\"S\"}],\"BillingMode\":\"PAY_PER_REQUEST\"}", "ValidationException",
                            "1 validation error detected: Value null at 'attributeDefinitions.1.member.attributeName' failed to satisfy constraint: Member must not be null");
    fdbt_expect_error_exact("CreateTable", "{\"TableName\":\"NoName\",\"KeySchema\":[{\"AttributeName\":\"pk\",\"KeyType\":\"HASH\"}],"
                            "\"AttributeDefinitions\":[{\"AttributeName\":\"pk\",\"AttributeType\":\"S\"},{\"AttributeName\":\"q\"}],\"BillingMode\":\"PAY_PER_REQUEST\"}", "ValidationException",
                            "1 validation error detected: Value null at 'attributeDefinitions.2.member.attributeType' failed to satisfy constraint: Member must not be null");
}
END_TEST

START_TEST(delete_table_short_description)
{
    fdbt_expect_ok("PutItem", "{\"TableName\":\"Fid\",\"Item\":{\"pk\":{\"S\":\"a\"}}}");
    fdbt_resp r = fdbt_call("DeleteTable", "{\"TableName\":\"Fid\"}");
    ck_assert_int_eq(r.status, 200);
    json_object *d = fdbt_get(r.json, "TableDescription");
    ck_assert_str_eq(fdbt_str(&r, "TableDescription.TableStatus"), "DELETING");
    ck_assert_int_eq(json_object_get_int(fdbt_get(d, "ItemCount")), 1);
    static const char *const want[] = { "TableName", "TableStatus", "ProvisionedThroughput", "TableSizeBytes",
                                        "ItemCount", "TableArn", "TableId" };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        ck_assert_msg(fdbt_get(d, want[i]) != NULL, "%s missing", want[i]);
    ck_assert_int_eq(json_object_object_length(d), 7);
    fdbt_free(&r);
}
END_TEST

static double units(const fdbt_resp *r, const char *path)
{
    json_object *v = fdbt_get(r->json, path);
    ck_assert_msg(v != NULL, "%s missing: %s", path, r->body);
    return json_object_get_double(v);
}

/* ReturnConsumedCapacity (issue #25 item 3, in part): bad values refused, writes by the
 * larger of the item's sizes with each index written, index reads counted to the index. */
START_TEST(consumed_capacity)
{
    fdbt_expect_ok("CreateTable", "{\"TableName\":\"Cap\",\"KeySchema\":[{\"AttributeName\":\"pk\",\"KeyType\":\"HASH\"}],"
                   "\"AttributeDefinitions\":[{\"AttributeName\":\"pk\",\"AttributeType\":\"S\"},{\"AttributeName\":\"g\",\"AttributeType\":\"S\"}],"
                   "\"BillingMode\":\"PAY_PER_REQUEST\",\"GlobalSecondaryIndexes\":[{\"IndexName\":\"byG\","
                   "\"KeySchema\":[{\"AttributeName\":\"g\",\"KeyType\":\"HASH\"}],\"Projection\":{\"ProjectionType\":\"KEYS_ONLY\"}}]}");
    fdbt_expect_error_exact("GetItem", "{\"TableName\":\"Cap\",\"Key\":{\"pk\":{\"S\":\"a\"}},\"ReturnConsumedCapacity\":\"ALL\"}",
                            "ValidationException", "1 validation error detected: Value 'ALL' at 'returnConsumedCapacity' failed to satisfy constraint: Member must satisfy enum value set: [INDEXES, TOTAL, NONE]");
    /* an item of 3,205 bytes: 4 units; in the index (keys only, small): 1 more */
    char big[3200], body[4096];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = 0;
    snprintf(body, sizeof body, "{\"TableName\":\"Cap\",\"Item\":{\"pk\":{\"S\":\"a\"},\"g\":{\"S\":\"G\"},\"v\":{\"S\":\"%s\"}},"
             "\"ReturnConsumedCapacity\":\"INDEXES\"}", big);
    fdbt_resp r = fdbt_call("PutItem", body);
    ck_assert_int_eq(r.status, 200);
    ck_assert(units(&r, "ConsumedCapacity.Table.CapacityUnits") == 4);
    ck_assert(units(&r, "ConsumedCapacity.GlobalSecondaryIndexes.byG.CapacityUnits") == 1);
    ck_assert(units(&r, "ConsumedCapacity.CapacityUnits") == 5);
    fdbt_free(&r);
    /* replaced by a small item out of the index: the larger size is charged, and the index entry's removal */
    r = fdbt_call("PutItem", "{\"TableName\":\"Cap\",\"Item\":{\"pk\":{\"S\":\"a\"}},\"ReturnConsumedCapacity\":\"TOTAL\"}");
    ck_assert(units(&r, "ConsumedCapacity.CapacityUnits") == 5);
    ck_assert_ptr_null(fdbt_get(r.json, "ConsumedCapacity.Table"));
    fdbt_free(&r);
    /* an index key that changes: a delete and a put in the index */
    fdbt_expect_ok("PutItem", "{\"TableName\":\"Cap\",\"Item\":{\"pk\":{\"S\":\"b\"},\"g\":{\"S\":\"G1\"}}}");
    r = fdbt_call("UpdateItem", "{\"TableName\":\"Cap\",\"Key\":{\"pk\":{\"S\":\"b\"}},\"UpdateExpression\":\"SET g = :g\","
                  "\"ExpressionAttributeValues\":{\":g\":{\"S\":\"G2\"}},\"ReturnConsumedCapacity\":\"INDEXES\"}");
    ck_assert(units(&r, "ConsumedCapacity.Table.CapacityUnits") == 1);
    ck_assert(units(&r, "ConsumedCapacity.GlobalSecondaryIndexes.byG.CapacityUnits") == 2);
    fdbt_free(&r);
    /* a query of the index is counted to the index, the table's own is 0 */
    r = fdbt_call("Query", "{\"TableName\":\"Cap\",\"IndexName\":\"byG\",\"KeyConditionExpression\":\"g = :g\","
                  "\"ExpressionAttributeValues\":{\":g\":{\"S\":\"G2\"}},\"ReturnConsumedCapacity\":\"INDEXES\"}");
    ck_assert(units(&r, "ConsumedCapacity.Table.CapacityUnits") == 0);
    ck_assert(units(&r, "ConsumedCapacity.GlobalSecondaryIndexes.byG.CapacityUnits") == 0.5);
    ck_assert(units(&r, "ConsumedCapacity.CapacityUnits") == 0.5);
    fdbt_free(&r);
    /* NONE and no member: nothing */
    r = fdbt_call("DeleteItem", "{\"TableName\":\"Cap\",\"Key\":{\"pk\":{\"S\":\"b\"}},\"ReturnConsumedCapacity\":\"NONE\"}");
    ck_assert_ptr_null(fdbt_get(r.json, "ConsumedCapacity"));
    fdbt_free(&r);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("fakedb_fidelity");
    TCase *tc = tcase_create("fidelity");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, nested_list_append_refused);
    tcase_add_test(tc, parallel_scan_start_key_in_segment);
    tcase_add_test(tc, name_limits);
    tcase_add_test(tc, non_key_attributes);
    tcase_add_test(tc, transaction_names_first_invalid_action);
    tcase_add_test(tc, updated_values_of_nested_paths);
    tcase_add_test(tc, wrong_json_types_are_serialization_errors);
    tcase_add_test(tc, messages_name_the_right_thing);
    tcase_add_test(tc, delete_table_short_description);
    tcase_add_test(tc, consumed_capacity);
    suite_add_tcase(s, tc);
    return dl_check_run(s);
}
