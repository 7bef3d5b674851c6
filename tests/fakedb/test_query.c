/* test_query.c: fakedb's Query and Scan over HTTP: key order (numbers numerically, strings
 * by bytes), key conditions, ScanIndexForward, Limit and LastEvaluatedKey, filters,
 * Select=COUNT, parallel scan segments, sparse global and local secondary indexes, and the
 * pages copied from the items' stored JSON. */
#include "fdbt.h"

#include <check.h>

#include "dl_check.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void setup(void)
{
    fdbt_start(NULL);
    fdbt_resp r = fdbt_call("CreateTable",
        "{\"TableName\":\"Events\",\"KeySchema\":[{\"AttributeName\":\"pk\",\"KeyType\":\"HASH\"},{\"AttributeName\":\"sk\",\"KeyType\":\"RANGE\"}],"
        "\"AttributeDefinitions\":[{\"AttributeName\":\"pk\",\"AttributeType\":\"S\"},{\"AttributeName\":\"sk\",\"AttributeType\":\"N\"},"
        "{\"AttributeName\":\"g\",\"AttributeType\":\"S\"},{\"AttributeName\":\"gs\",\"AttributeType\":\"N\"},{\"AttributeName\":\"ls\",\"AttributeType\":\"S\"}],"
        "\"BillingMode\":\"PAY_PER_REQUEST\","
        "\"GlobalSecondaryIndexes\":[{\"IndexName\":\"byG\",\"KeySchema\":[{\"AttributeName\":\"g\",\"KeyType\":\"HASH\"},{\"AttributeName\":\"gs\",\"KeyType\":\"RANGE\"}],"
        "\"Projection\":{\"ProjectionType\":\"KEYS_ONLY\"}}],"
        "\"LocalSecondaryIndexes\":[{\"IndexName\":\"byL\",\"KeySchema\":[{\"AttributeName\":\"pk\",\"KeyType\":\"HASH\"},{\"AttributeName\":\"ls\",\"KeyType\":\"RANGE\"}],"
        "\"Projection\":{\"ProjectionType\":\"INCLUDE\",\"NonKeyAttributes\":[\"v\"]}}]}");
    ck_assert_msg(r.status == 200, "%s", r.body);
    fdbt_free(&r);
    /* numbers chosen so that text order differs from numeric order */
    const char *nums[] = { "-10", "-2.5", "0", "3", "20", "100" };
    char body[512];
    for (int i = 0; i < 6; i++) {
        snprintf(body, sizeof body,
                 "{\"TableName\":\"Events\",\"Item\":{\"pk\":{\"S\":\"p\"},\"sk\":{\"N\":\"%s\"},\"v\":{\"N\":\"%d\"},\"w\":{\"S\":\"w%d\"}%s%s}}",
                 nums[i], i, i,
                 i % 2 == 0 ? ",\"g\":{\"S\":\"even\"}" : "",
                 i % 2 == 0 ? (i == 0 ? ",\"gs\":{\"N\":\"9\"},\"ls\":{\"S\":\"z\"}" : i == 2 ? ",\"gs\":{\"N\":\"1\"},\"ls\":{\"S\":\"a\"}" : ",\"gs\":{\"N\":\"5\"}") : "");
        r = fdbt_call("PutItem", body);
        ck_assert_msg(r.status == 200, "%s", r.body);
        fdbt_free(&r);
    }
    r = fdbt_call("PutItem", "{\"TableName\":\"Events\",\"Item\":{\"pk\":{\"S\":\"other\"},\"sk\":{\"N\":\"1\"}}}");
    fdbt_free(&r);
}

static void teardown(void)
{
    fdbt_stop();
}

static void assert_sks(const fdbt_resp *r, const char *const *want, size_t n)
{
    json_object *items = fdbt_get(r->json, "Items");
    ck_assert_msg(items != NULL, "no Items: %s", r->body);
    ck_assert_uint_eq(json_object_array_length(items), n);
    for (size_t i = 0; i < n; i++)
        ck_assert_str_eq(json_object_get_string(fdbt_get(json_object_array_get_idx(items, i), "sk.N")), want[i]);
}

START_TEST(numeric_order_and_ranges)
{
    fdbt_resp r = fdbt_call("Query", "{\"TableName\":\"Events\",\"KeyConditionExpression\":\"pk = :p\",\"ExpressionAttributeValues\":{\":p\":{\"S\":\"p\"}}}");
    const char *all[] = { "-10", "-2.5", "0", "3", "20", "100" };
    assert_sks(&r, all, 6);
    fdbt_free(&r);
    r = fdbt_call("Query", "{\"TableName\":\"Events\",\"KeyConditionExpression\":\"pk = :p AND sk BETWEEN :a AND :b\","
                           "\"ExpressionAttributeValues\":{\":p\":{\"S\":\"p\"},\":a\":{\"N\":\"-2.5\"},\":b\":{\"N\":\"20\"}},\"ScanIndexForward\":false}");
    const char *mid[] = { "20", "3", "0", "-2.5" };
    assert_sks(&r, mid, 4);
    fdbt_free(&r);
    r = fdbt_call("Query", "{\"TableName\":\"Events\",\"KeyConditionExpression\":\"pk = :p AND sk < :a\","
                           "\"ExpressionAttributeValues\":{\":p\":{\"S\":\"p\"},\":a\":{\"N\":\"0\"}}}");
    const char *neg[] = { "-10", "-2.5" };
    assert_sks(&r, neg, 2);
    fdbt_free(&r);
    r = fdbt_call("Query", "{\"TableName\":\"Events\",\"KeyConditionExpression\":\"pk = :p AND sk = :a\","
                           "\"ExpressionAttributeValues\":{\":p\":{\"S\":\"p\"},\":a\":{\"S\":\"0\"}}}");
    ck_assert_str_eq(fdbt_error(&r), "ValidationException");
    fdbt_free(&r);
}
END_TEST

START_TEST(pagination_with_limit)
{
    const char *want[] = { "-10", "-2.5", "0", "3", "20", "100" };
    char body[1024];
    char start[256] = "";
    size_t seen = 0;
    int pages = 0;
    for (;;) {
        snprintf(body, sizeof body, "{\"TableName\":\"Events\",\"Limit\":4,\"KeyConditionExpression\":\"pk = :p\","
                                    "\"ExpressionAttributeValues\":{\":p\":{\"S\":\"p\"}}%s}", start);
        fdbt_resp r = fdbt_call("Query", body);
        ck_assert_int_eq(r.status, 200);
        json_object *items = fdbt_get(r.json, "Items");
        for (size_t i = 0; i < json_object_array_length(items); i++)
            ck_assert_str_eq(json_object_get_string(fdbt_get(json_object_array_get_idx(items, i), "sk.N")), want[seen++]);
        pages++;
        if (!fdbt_next_page(&r, start, sizeof start))
            break;
        ck_assert_int_lt(pages, 5);
    }
    ck_assert_uint_eq(seen, 6);
    ck_assert_int_eq(pages, 2);
}
END_TEST

START_TEST(filter_count_projection)
{
    fdbt_resp r = fdbt_call("Query", "{\"TableName\":\"Events\",\"KeyConditionExpression\":\"pk = :p\",\"FilterExpression\":\"v >= :three\","
                                     "\"ExpressionAttributeValues\":{\":p\":{\"S\":\"p\"},\":three\":{\"N\":\"3\"}},\"Select\":\"COUNT\"}");
    ck_assert_int_eq(r.status, 200);
    ck_assert_int_eq(json_object_get_int(fdbt_get(r.json, "Count")), 3);
    ck_assert_int_eq(json_object_get_int(fdbt_get(r.json, "ScannedCount")), 6);
    ck_assert_ptr_null(fdbt_get(r.json, "Items"));
    fdbt_free(&r);
    r = fdbt_call("Scan", "{\"TableName\":\"Events\",\"ProjectionExpression\":\"sk, w\"}");
    ck_assert_int_eq(json_object_get_int(fdbt_get(r.json, "Count")), 7);
    ck_assert_ptr_null(fdbt_get(r.json, "Items.0.pk"));
    fdbt_free(&r);
}
END_TEST

/* Query inputs DynamoDB refuses: a filter on a key attribute of what is queried (a Scan
 * may filter on keys), a start key in another partition, SPECIFIC_ATTRIBUTES with nothing
 * to project, ALL_PROJECTED_ATTRIBUTES on a table. */
static void expect_query_error(const char *op, const char *body, const char *msg)
{
    fdbt_expect_error_exact(op, body, "ValidationException", msg);
}

START_TEST(query_refusals)
{
    expect_query_error("Query", "{\"TableName\":\"Events\",\"KeyConditionExpression\":\"pk = :p\",\"FilterExpression\":\"sk > :z\","
                                "\"ExpressionAttributeValues\":{\":p\":{\"S\":\"p\"},\":z\":{\"N\":\"0\"}}}",
                       "Filter Expression can only contain non-primary key attributes: Primary key attribute: sk");
    expect_query_error("Query", "{\"TableName\":\"Events\",\"IndexName\":\"byG\",\"KeyConditionExpression\":\"g = :g\",\"FilterExpression\":\"gs > :z\","
                                "\"ExpressionAttributeValues\":{\":g\":{\"S\":\"even\"},\":z\":{\"N\":\"0\"}}}",
                       "Filter Expression can only contain non-primary key attributes: Primary key attribute: gs");
    expect_query_error("Query", "{\"TableName\":\"Events\",\"KeyConditionExpression\":\"pk = :p\",\"ExpressionAttributeValues\":{\":p\":{\"S\":\"p\"}},"
                                "\"ExclusiveStartKey\":{\"pk\":{\"S\":\"other\"},\"sk\":{\"N\":\"1\"}}}",
                       "The provided starting key is outside query boundaries based on provided conditions");
    expect_query_error("Query", "{\"TableName\":\"Events\",\"Select\":\"SPECIFIC_ATTRIBUTES\",\"KeyConditionExpression\":\"pk = :p\","
                                "\"ExpressionAttributeValues\":{\":p\":{\"S\":\"p\"}}}",
                       "1 validation error detected: Must specify the AttributesToGet or ProjectionExpression when choosing to get SPECIFIC_ATTRIBUTES");
    expect_query_error("Scan", "{\"TableName\":\"Events\",\"Segment\":2,\"TotalSegments\":2}",
                       "The Segment parameter is zero-based and must be less than parameter TotalSegments: Segment: 2 is not less than TotalSegments: 2");
    expect_query_error("Scan", "{\"TableName\":\"Events\",\"Select\":\"SPECIFIC_ATTRIBUTES\"}",
                       "Must specify the AttributesToGet or ProjectionExpression when choosing to get SPECIFIC_ATTRIBUTES");
    expect_query_error("Query", "{\"TableName\":\"Events\",\"Select\":\"ALL_PROJECTED_ATTRIBUTES\",\"KeyConditionExpression\":\"pk = :p\","
                                "\"ExpressionAttributeValues\":{\":p\":{\"S\":\"p\"}}}",
                       "ALL_PROJECTED_ATTRIBUTES can be used only when Querying using an IndexName");
    /* a Scan filters on keys; a Query filters on other attributes and pages within its partition */
    fdbt_resp r = fdbt_call("Scan", "{\"TableName\":\"Events\",\"FilterExpression\":\"pk = :p\",\"ExpressionAttributeValues\":{\":p\":{\"S\":\"other\"}}}");
    ck_assert_int_eq(r.status, 200);
    ck_assert_int_eq(json_object_get_int(fdbt_get(r.json, "Count")), 1);
    fdbt_free(&r);
    r = fdbt_call("Query", "{\"TableName\":\"Events\",\"KeyConditionExpression\":\"pk = :p\",\"FilterExpression\":\"v > :z\","
                           "\"ExpressionAttributeValues\":{\":p\":{\"S\":\"p\"},\":z\":{\"N\":\"0\"}},"
                           "\"ExclusiveStartKey\":{\"pk\":{\"S\":\"p\"},\"sk\":{\"N\":\"20\"}}}");
    ck_assert_int_eq(r.status, 200);
    ck_assert_int_eq(json_object_get_int(fdbt_get(r.json, "Count")), 1);
    fdbt_free(&r);
}
END_TEST

START_TEST(scan_segments_partition_the_table)
{
    int total = 0;
    for (int seg = 0; seg < 3; seg++) {
        char body[256];
        snprintf(body, sizeof body, "{\"TableName\":\"Events\",\"Segment\":%d,\"TotalSegments\":3}", seg);
        fdbt_resp r = fdbt_call("Scan", body);
        ck_assert_int_eq(r.status, 200);
        total += json_object_get_int(fdbt_get(r.json, "Count"));
        fdbt_free(&r);
    }
    ck_assert_int_eq(total, 7);
    fdbt_resp r = fdbt_call("Scan", "{\"TableName\":\"Events\",\"Segment\":3,\"TotalSegments\":3}");
    ck_assert_str_eq(fdbt_error(&r), "ValidationException");
    fdbt_free(&r);
}
END_TEST

START_TEST(sparse_gsi_keys_only)
{
    fdbt_resp r = fdbt_call("Query", "{\"TableName\":\"Events\",\"IndexName\":\"byG\",\"KeyConditionExpression\":\"g = :g\","
                                     "\"ExpressionAttributeValues\":{\":g\":{\"S\":\"even\"}}}");
    ck_assert_int_eq(r.status, 200);
    /* ordered by gs: 1 (sk 0), 5 (sk 20), 9 (sk -10); keys only */
    const char *want[] = { "0", "20", "-10" };
    assert_sks(&r, want, 3);
    ck_assert_ptr_null(fdbt_get(r.json, "Items.0.v"));
    ck_assert_str_eq(fdbt_str(&r, "Items.0.gs.N"), "1");
    fdbt_free(&r);
    r = fdbt_call("Query", "{\"TableName\":\"Events\",\"IndexName\":\"byG\",\"Limit\":1,\"KeyConditionExpression\":\"g = :g\","
                           "\"ExpressionAttributeValues\":{\":g\":{\"S\":\"even\"}}}");
    json_object *lek = fdbt_get(r.json, "LastEvaluatedKey");
    ck_assert_ptr_nonnull(lek);
    ck_assert_int_eq(json_object_object_length(lek), 4);
    char body[1024];
    snprintf(body, sizeof body, "{\"TableName\":\"Events\",\"IndexName\":\"byG\",\"KeyConditionExpression\":\"g = :g\","
                                "\"ExpressionAttributeValues\":{\":g\":{\"S\":\"even\"}},\"ExclusiveStartKey\":%s}",
             json_object_to_json_string_ext(lek, JSON_C_TO_STRING_PLAIN));
    fdbt_free(&r);
    r = fdbt_call("Query", body);
    const char *rest[] = { "20", "-10" };
    assert_sks(&r, rest, 2);
    fdbt_free(&r);
    r = fdbt_call("Query", "{\"TableName\":\"Events\",\"IndexName\":\"byG\",\"ConsistentRead\":true,\"KeyConditionExpression\":\"g = :g\","
                           "\"ExpressionAttributeValues\":{\":g\":{\"S\":\"even\"}}}");
    ck_assert_str_eq(fdbt_error(&r), "ValidationException");
    fdbt_free(&r);
    /* an update that removes the index key takes the item out of the index */
    r = fdbt_call("UpdateItem", "{\"TableName\":\"Events\",\"Key\":{\"pk\":{\"S\":\"p\"},\"sk\":{\"N\":\"20\"}},\"UpdateExpression\":\"REMOVE g\"}");
    ck_assert_int_eq(r.status, 200);
    fdbt_free(&r);
    r = fdbt_call("Scan", "{\"TableName\":\"Events\",\"IndexName\":\"byG\"}");
    ck_assert_int_eq(json_object_get_int(fdbt_get(r.json, "Count")), 2);
    fdbt_free(&r);
    r = fdbt_call("PutItem", "{\"TableName\":\"Events\",\"Item\":{\"pk\":{\"S\":\"p\"},\"sk\":{\"N\":\"7\"},\"g\":{\"N\":\"1\"}}}");
    ck_assert_str_eq(fdbt_error(&r), "ValidationException");
    ck_assert_msg(strstr(fdbt_message(&r), "Type mismatch for Index Key g"), "%s", fdbt_message(&r));
    fdbt_free(&r);
}
END_TEST

/* A GSI that does not project everything refuses a projection naming what it lacks
 * (it answered items without those attributes before); its keys and the table's are
 * always there. An LSI fetches the rest from the table instead. */
START_TEST(gsi_refuses_unprojected_attributes)
{
    fdbt_resp r = fdbt_call("Query", "{\"TableName\":\"Events\",\"IndexName\":\"byG\",\"KeyConditionExpression\":\"g = :g\","
                                     "\"ExpressionAttributeValues\":{\":g\":{\"S\":\"even\"}},\"ProjectionExpression\":\"v, pk, w\"}");
    ck_assert_str_eq(fdbt_error(&r), "ValidationException");
    ck_assert_str_eq(fdbt_message(&r), "One or more parameter values were invalid: Global secondary index byG does not project [v, w]");
    fdbt_free(&r);
    r = fdbt_call("Scan", "{\"TableName\":\"Events\",\"IndexName\":\"byG\",\"AttributesToGet\":[\"pk\",\"v\"]}");
    ck_assert_str_eq(fdbt_message(&r), "One or more parameter values were invalid: Global secondary index byG does not project [v]");
    fdbt_free(&r);
    r = fdbt_call("Query", "{\"TableName\":\"Events\",\"IndexName\":\"byG\",\"KeyConditionExpression\":\"g = :g\","
                           "\"ExpressionAttributeValues\":{\":g\":{\"S\":\"even\"}},\"ProjectionExpression\":\"pk, sk, g, gs\"}");
    ck_assert_int_eq(r.status, 200);
    ck_assert_int_eq(json_object_get_int(fdbt_get(r.json, "Count")), 3);
    fdbt_free(&r);
    r = fdbt_call("Query", "{\"TableName\":\"Events\",\"IndexName\":\"byL\",\"KeyConditionExpression\":\"pk = :p\","
                           "\"ExpressionAttributeValues\":{\":p\":{\"S\":\"p\"}},\"ProjectionExpression\":\"w\"}");
    ck_assert_int_eq(r.status, 200);
    ck_assert_str_eq(fdbt_str(&r, "Items.0.w.S"), "w2");
    fdbt_free(&r);
}
END_TEST

START_TEST(lsi_include)
{
    fdbt_resp r = fdbt_call("Query", "{\"TableName\":\"Events\",\"IndexName\":\"byL\",\"KeyConditionExpression\":\"pk = :p AND begins_with(ls, :a)\","
                                     "\"ExpressionAttributeValues\":{\":p\":{\"S\":\"p\"},\":a\":{\"S\":\"a\"}}}");
    ck_assert_int_eq(r.status, 200);
    const char *want[] = { "0" };
    assert_sks(&r, want, 1);
    ck_assert_str_eq(fdbt_str(&r, "Items.0.v.N"), "2");
    ck_assert_ptr_null(fdbt_get(r.json, "Items.0.w"));
    fdbt_free(&r);
    r = fdbt_call("Query", "{\"TableName\":\"Events\",\"IndexName\":\"nope\",\"KeyConditionExpression\":\"pk = :p\","
                           "\"ExpressionAttributeValues\":{\":p\":{\"S\":\"p\"}}}");
    ck_assert_str_eq(fdbt_error(&r), "ValidationException");
    ck_assert_str_eq(fdbt_message(&r), "The table does not have the specified index: nope");
    fdbt_free(&r);
}
END_TEST

START_TEST(update_table_adds_gsi)
{
    fdbt_resp r = fdbt_call("UpdateTable", "{\"TableName\":\"Events\",\"AttributeDefinitions\":[{\"AttributeName\":\"w\",\"AttributeType\":\"S\"}],"
                                           "\"GlobalSecondaryIndexUpdates\":[{\"Create\":{\"IndexName\":\"byW\",\"KeySchema\":[{\"AttributeName\":\"w\",\"KeyType\":\"HASH\"}],"
                                           "\"Projection\":{\"ProjectionType\":\"ALL\"}}}]}");
    ck_assert_msg(r.status == 200, "%s", r.body);
    fdbt_free(&r);
    r = fdbt_call("Query", "{\"TableName\":\"Events\",\"IndexName\":\"byW\",\"KeyConditionExpression\":\"w = :w\","
                           "\"ExpressionAttributeValues\":{\":w\":{\"S\":\"w3\"}}}");
    ck_assert_int_eq(json_object_get_int(fdbt_get(r.json, "Count")), 1);
    ck_assert_str_eq(fdbt_str(&r, "Items.0.sk.N"), "3");
    fdbt_free(&r);
    r = fdbt_call("UpdateTable", "{\"TableName\":\"Events\",\"GlobalSecondaryIndexUpdates\":[{\"Delete\":{\"IndexName\":\"byW\"}}]}");
    ck_assert_int_eq(r.status, 200);
    fdbt_free(&r);
    r = fdbt_call("DescribeTable", "{\"TableName\":\"Events\"}");
    ck_assert_int_eq(json_object_array_length(fdbt_get(r.json, "Table.GlobalSecondaryIndexes")), 1);
    fdbt_free(&r);
}
END_TEST

START_TEST(page_is_one_megabyte)
{
    char *body = malloc(120 * 1024);
    for (int i = 0; i < 12; i++) {
        int n = sprintf(body, "{\"TableName\":\"Events\",\"Item\":{\"pk\":{\"S\":\"big\"},\"sk\":{\"N\":\"%d\"},\"x\":{\"S\":\"", i);
        memset(body + n, 'x', 100 * 1024);
        strcpy(body + n + 100 * 1024, "\"}}}");
        fdbt_resp r = fdbt_call("PutItem", body);
        ck_assert_int_eq(r.status, 200);
        fdbt_free(&r);
    }
    free(body);
    fdbt_resp r = fdbt_call("Query", "{\"TableName\":\"Events\",\"KeyConditionExpression\":\"pk = :p\",\"Select\":\"COUNT\","
                                     "\"ExpressionAttributeValues\":{\":p\":{\"S\":\"big\"}}}");
    int first = json_object_get_int(fdbt_get(r.json, "Count"));
    ck_assert_int_lt(first, 12);
    ck_assert_int_ge(first, 10);
    ck_assert_ptr_nonnull(fdbt_get(r.json, "LastEvaluatedKey"));
    fdbt_free(&r);
}
END_TEST

/* The copied pages (Query and Scan with no filter or projection write the stored JSON of
 * the items into one text, query.c): every item whole, in order, and the same as
 * GetItem gives it; strings with quotes, backslashes, control characters and multi-byte
 * UTF-8 survive the copy; a page cut at 1 MB ends at the item its LastEvaluatedKey names
 * and the next page starts after it; an empty page is an empty list. */
START_TEST(copied_pages_are_whole_items)
{
    /* 12 items of 100 KB plus one with hostile text, in partition "big" */
    char *body = malloc(120 * 1024);
    for (int i = 0; i < 12; i++) {
        int n = sprintf(body, "{\"TableName\":\"Events\",\"Item\":{\"pk\":{\"S\":\"big\"},\"sk\":{\"N\":\"%d\"},\"x\":{\"S\":\"", i);
        memset(body + n, 'a' + i, 100 * 1024);
        strcpy(body + n + 100 * 1024, "\"}}}");
        fdbt_expect_ok("PutItem", body);
    }
    free(body);
    fdbt_expect_ok("PutItem", "{\"TableName\":\"Events\",\"Item\":{\"pk\":{\"S\":\"odd\"},\"sk\":{\"N\":\"1\"},"
                              "\"t\":{\"S\":\"q\\\"b\\\\s\\u0001\\n\\u00e9\\u4e2d\\ud83d\\ude00]},[\"},"
                              "\"m\":{\"M\":{\"k]\":{\"L\":[{\"S\":\",\"},{\"B\":\"AAE=\"}]}}}}}");
    fdbt_resp g = fdbt_call("GetItem", "{\"TableName\":\"Events\",\"Key\":{\"pk\":{\"S\":\"odd\"},\"sk\":{\"N\":\"1\"}}}");
    ck_assert_int_eq(g.status, 200);
    fdbt_resp r = fdbt_call("Query", "{\"TableName\":\"Events\",\"KeyConditionExpression\":\"pk = :p\","
                                     "\"ExpressionAttributeValues\":{\":p\":{\"S\":\"odd\"}}}");
    ck_assert_int_eq(r.status, 200);
    ck_assert_int_eq(json_object_get_int(fdbt_get(r.json, "Count")), 1);
    ck_assert_msg(json_object_equal(fdbt_get(r.json, "Items.0"), fdbt_get(g.json, "Item")), "%s", r.body);
    ck_assert_str_eq(json_object_get_string(fdbt_get(r.json, "Items.0.t.S")), "q\"b\\s\001\n\xc3\xa9\xe4\xb8\xad\xf0\x9f\x98\x80]},[");
    fdbt_free(&r);
    fdbt_free(&g);

    /* the 1 MB page, then the rest after its LastEvaluatedKey: every item once, whole */
    char start[256] = "", req[1024];
    int seen = 0, pages = 0;
    for (;;) {
        snprintf(req, sizeof req, "{\"TableName\":\"Events\",\"KeyConditionExpression\":\"pk = :p\","
                                  "\"ExpressionAttributeValues\":{\":p\":{\"S\":\"big\"}}%s}", start);
        r = fdbt_call("Query", req);
        ck_assert_msg(r.status == 200 && r.json, "%.300s", r.body);
        json_object *items = fdbt_get(r.json, "Items");
        ck_assert_ptr_nonnull(items);
        ck_assert_int_eq((int)json_object_array_length(items), json_object_get_int(fdbt_get(r.json, "Count")));
        for (size_t i = 0; i < json_object_array_length(items); i++, seen++) {
            json_object *it = json_object_array_get_idx(items, i);
            ck_assert_int_eq(json_object_get_int(fdbt_get(it, "sk.N")), seen);
            const char *x = json_object_get_string(fdbt_get(it, "x.S"));
            ck_assert_uint_eq(strlen(x), 100 * 1024);
            ck_assert_int_eq(x[0], 'a' + seen);
            ck_assert_int_eq(x[100 * 1024 - 1], 'a' + seen);
        }
        pages++;
        json_object *lek = fdbt_get(r.json, "LastEvaluatedKey");
        if (lek)
            ck_assert_int_eq(json_object_get_int(fdbt_get(lek, "sk.N")), seen - 1);
        if (!fdbt_next_page(&r, start, sizeof start))
            break;
        ck_assert_int_lt(pages, 3);
    }
    ck_assert_int_eq(seen, 12);
    ck_assert_int_eq(pages, 2);

    /* no item: an empty list; a Scan copies too (all 6 + 1 + 12 + 1 items) */
    r = fdbt_call("Query", "{\"TableName\":\"Events\",\"KeyConditionExpression\":\"pk = :p\","
                           "\"ExpressionAttributeValues\":{\":p\":{\"S\":\"none\"}}}");
    ck_assert_int_eq(r.status, 200);
    ck_assert_int_eq(json_object_get_int(fdbt_get(r.json, "Count")), 0);
    ck_assert(json_object_is_type(fdbt_get(r.json, "Items"), json_type_array));
    ck_assert_uint_eq(json_object_array_length(fdbt_get(r.json, "Items")), 0);
    fdbt_free(&r);
    int scanned = 0;
    start[0] = '\0';
    for (pages = 0; pages < 4; pages++) {
        snprintf(req, sizeof req, "{\"TableName\":\"Events\"%s}", start);
        r = fdbt_call("Scan", req);
        ck_assert_msg(r.status == 200 && r.json, "%.300s", r.body);
        ck_assert_int_eq((int)json_object_array_length(fdbt_get(r.json, "Items")), json_object_get_int(fdbt_get(r.json, "Count")));
        scanned += json_object_get_int(fdbt_get(r.json, "Count"));
        if (!fdbt_next_page(&r, start, sizeof start))
            break;
    }
    ck_assert_int_eq(scanned, 20);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("fakedb_query");
    TCase *tc = tcase_create("query");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, numeric_order_and_ranges);
    tcase_add_test(tc, pagination_with_limit);
    tcase_add_test(tc, filter_count_projection);
    tcase_add_test(tc, query_refusals);
    tcase_add_test(tc, scan_segments_partition_the_table);
    tcase_add_test(tc, sparse_gsi_keys_only);
    tcase_add_test(tc, lsi_include);
    tcase_add_test(tc, gsi_refuses_unprojected_attributes);
    tcase_add_test(tc, update_table_adds_gsi);
    tcase_add_test(tc, page_is_one_megabyte);
    tcase_add_test(tc, copied_pages_are_whole_items);
    suite_add_tcase(s, tc);
    return dl_check_run(s);
}
