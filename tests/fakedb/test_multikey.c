/* test_multikey.c: fakedb's multi-attribute keys of global secondary indexes over HTTP:
 * CreateTable and UpdateTable with up to four HASH and four RANGE attributes and each
 * limit, writes in and out of such an index, Query's key conditions valid and invalid,
 * order over mixed types, paging, filters on key attributes, Scan, updates and deletes. */
#include "fdbt.h"

#include <check.h>

#include "dl_check.h"
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The table's own key is id; byPlace: HASH shop (S), tier (N), RANGE yr (N), town (S),
 * tag (B), projection ALL; pair: HASH p1 (S), p2 (S), no RANGE, KEYS_ONLY. */
#define DEFS \
    "\"AttributeDefinitions\":[{\"AttributeName\":\"id\",\"AttributeType\":\"S\"}," \
    "{\"AttributeName\":\"shop\",\"AttributeType\":\"S\"},{\"AttributeName\":\"tier\",\"AttributeType\":\"N\"}," \
    "{\"AttributeName\":\"yr\",\"AttributeType\":\"N\"},{\"AttributeName\":\"town\",\"AttributeType\":\"S\"}," \
    "{\"AttributeName\":\"tag\",\"AttributeType\":\"B\"},{\"AttributeName\":\"p1\",\"AttributeType\":\"S\"}," \
    "{\"AttributeName\":\"p2\",\"AttributeType\":\"S\"}]"
#define PLACE_KS \
    "[{\"AttributeName\":\"shop\",\"KeyType\":\"HASH\"},{\"AttributeName\":\"tier\",\"KeyType\":\"HASH\"}," \
    "{\"AttributeName\":\"yr\",\"KeyType\":\"RANGE\"},{\"AttributeName\":\"town\",\"KeyType\":\"RANGE\"}," \
    "{\"AttributeName\":\"tag\",\"KeyType\":\"RANGE\"}]"

static char *callf_body;

/* A call whose body is formatted. */
static fdbt_resp callf(const char *op, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static fdbt_resp callf(const char *op, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    ck_assert_int_ge(n, 0);
    free(callf_body);
    callf_body = malloc((size_t)n + 1);
    ck_assert_ptr_nonnull(callf_body);
    va_start(ap, fmt);
    vsnprintf(callf_body, (size_t)n + 1, fmt, ap);
    va_end(ap);
    return fdbt_call(op, callf_body);
}

static void ok(fdbt_resp *r)
{
    ck_assert_msg(r->status == 200, "%s", r->body);
    fdbt_free(r);
}

/* A ValidationException whose message holds `part`. */
static void refused(fdbt_resp *r, const char *part)
{
    ck_assert_msg(!strcmp(fdbt_error(r), "ValidationException"), "not refused: %s", r->body);
    ck_assert_msg(strstr(fdbt_message(r), part) != NULL, "message '%s' lacks '%s'", fdbt_message(r), part);
    fdbt_free(r);
}

/* The items of the partition shop s1, tier 1 and others: id, yr, town (JSON text), tag. */
static const struct { const char *id, *shop, *tier, *yr, *town, *tag; } k_items[] = {
    { "i1", "s1", "1", "10", "a", "AA==" },        /* tag 00 */
    { "i2", "s1", "1", "10", "a", "AP8=" },        /* 00 FF */
    { "i3", "s1", "1", "10", "a", "AAA=" },        /* 00 00 */
    { "i4", "s1", "1", "10", "ab", "AA==" },
    { "i5", "s1", "1", "10", "a", "/w==" },        /* FF */
    { "i6", "s1", "1", "9", "z", "/w==" },
    { "i7", "s1", "1", "100", "a", "AA==" },
    { "i8", "s1", "1", "-5", "m", "AQ==" },
    { "i9", "s1", "1", "10", "b", "AA==" },
    { "i10", "s1", "1", "10", "a\\u0000", "AA==" }, /* "a" NUL: between "a" and "ab" */
    { "i11", "s1", "2", "10", "a", "AA==" },       /* another tier */
    { "i12", "s2", "1", "10", "a", "AA==" },       /* another shop */
};
#define N_ITEMS (sizeof k_items / sizeof k_items[0])
/* byPlace's order of the partition s1/1 */
static const char k_order[] = "i8,i6,i1,i3,i2,i5,i10,i4,i9,i7";

static void setup(void)
{
    fdbt_start(NULL);
    fdbt_resp r = fdbt_call("CreateTable",
        "{\"TableName\":\"Orders\",\"KeySchema\":[{\"AttributeName\":\"id\",\"KeyType\":\"HASH\"}]," DEFS ","
        "\"BillingMode\":\"PAY_PER_REQUEST\",\"GlobalSecondaryIndexes\":["
        "{\"IndexName\":\"byPlace\",\"KeySchema\":" PLACE_KS ",\"Projection\":{\"ProjectionType\":\"ALL\"}},"
        "{\"IndexName\":\"pair\",\"KeySchema\":[{\"AttributeName\":\"p1\",\"KeyType\":\"HASH\"},{\"AttributeName\":\"p2\",\"KeyType\":\"HASH\"}],"
        "\"Projection\":{\"ProjectionType\":\"KEYS_ONLY\"}}]}");
    ok(&r);
    for (size_t i = 0; i < N_ITEMS; i++) {
        r = callf("PutItem", "{\"TableName\":\"Orders\",\"Item\":{\"id\":{\"S\":\"%s\"},\"shop\":{\"S\":\"%s\"},\"tier\":{\"N\":\"%s\"},"
                             "\"yr\":{\"N\":\"%s\"},\"town\":{\"S\":\"%s\"},\"tag\":{\"B\":\"%s\"},\"note\":{\"S\":\"n%zu\"}}}",
                  k_items[i].id, k_items[i].shop, k_items[i].tier, k_items[i].yr, k_items[i].town, k_items[i].tag, i);
        ok(&r);
    }
    /* missing tag, missing shop: not in byPlace */
    r = fdbt_call("PutItem", "{\"TableName\":\"Orders\",\"Item\":{\"id\":{\"S\":\"o1\"},\"shop\":{\"S\":\"s1\"},\"tier\":{\"N\":\"1\"},\"yr\":{\"N\":\"10\"},\"town\":{\"S\":\"a\"}}}");
    ok(&r);
    r = fdbt_call("PutItem", "{\"TableName\":\"Orders\",\"Item\":{\"id\":{\"S\":\"o2\"},\"tier\":{\"N\":\"1\"},\"yr\":{\"N\":\"10\"},\"town\":{\"S\":\"a\"},\"tag\":{\"B\":\"AA==\"}}}");
    ok(&r);
}

static void teardown(void)
{
    fdbt_stop();
    free(callf_body);
    callf_body = NULL;
}

/* The ids of the answer's Items, comma separated. */
static void ids_of(const fdbt_resp *r, char *out, size_t n)
{
    json_object *items = fdbt_get(r->json, "Items");
    ck_assert_msg(items != NULL, "no Items: %s", r->body);
    out[0] = 0;
    for (size_t i = 0; i < json_object_array_length(items); i++) {
        const char *id = json_object_get_string(fdbt_get(json_object_array_get_idx(items, i), "id.S"));
        size_t o = strlen(out);
        snprintf(out + o, n - o, "%s%s", i ? "," : "", id ? id : "?");
    }
}

/* Queries byPlace with shop = s1 AND tier = 1 [AND more] and checks the ids in order. */
static void query_ids(const char *more, const char *values, bool forward, const char *want)
{
    fdbt_resp r = callf("Query", "{\"TableName\":\"Orders\",\"IndexName\":\"byPlace\",\"ScanIndexForward\":%s,"
                                 "\"KeyConditionExpression\":\"shop = :s AND tier = :t%s%s\","
                                 "\"ExpressionAttributeValues\":{\":s\":{\"S\":\"s1\"},\":t\":{\"N\":\"1\"}%s%s}}",
                        forward ? "true" : "false", more[0] ? " AND " : "", more, values[0] ? "," : "", values);
    char got[512];
    ck_assert_msg(r.status == 200, "%s: %s", more, r.body);
    ids_of(&r, got, sizeof got);
    ck_assert_msg(!strcmp(got, want), "%s: got %s, want %s", more, got, want);
    fdbt_free(&r);
}

/* Queries byPlace with the key condition `kc` and checks the refusal. */
static void query_refused(const char *kc, const char *values, const char *part)
{
    fdbt_resp r = callf("Query", "{\"TableName\":\"Orders\",\"IndexName\":\"byPlace\",\"KeyConditionExpression\":\"%s\","
                                 "\"ExpressionAttributeValues\":{%s}}", kc, values);
    ck_assert_msg(!strcmp(fdbt_error(&r), "ValidationException"), "%s: not refused: %s", kc, r.body);
    refused(&r, part);
}

START_TEST(describe_returns_key_schema)
{
    fdbt_resp r = fdbt_call("DescribeTable", "{\"TableName\":\"Orders\"}");
    ck_assert_int_eq(r.status, 200);
    json_object *want = json_tokener_parse(PLACE_KS);
    json_object *got = fdbt_get(r.json, "Table.GlobalSecondaryIndexes.0.KeySchema");
    ck_assert_msg(json_object_equal(want, got), "%s", json_object_to_json_string(got));
    ck_assert_str_eq(json_object_get_string(fdbt_get(r.json, "Table.GlobalSecondaryIndexes.0.IndexName")), "byPlace");
    ck_assert_int_eq(json_object_get_int(fdbt_get(r.json, "Table.GlobalSecondaryIndexes.0.ItemCount")), 12);
    ck_assert_int_eq(json_object_array_length(fdbt_get(r.json, "Table.GlobalSecondaryIndexes.1.KeySchema")), 2);
    json_object_put(want);
    fdbt_free(&r);
}
END_TEST

/* A CreateTable of table T2 whose one GSI has the KeySchema ks. */
static fdbt_resp create_gsi(const char *ks)
{
    return callf("CreateTable", "{\"TableName\":\"Tab2\",\"KeySchema\":[{\"AttributeName\":\"id\",\"KeyType\":\"HASH\"}],"
                                "\"AttributeDefinitions\":[{\"AttributeName\":\"id\",\"AttributeType\":\"S\"},"
                                "{\"AttributeName\":\"a\",\"AttributeType\":\"S\"},{\"AttributeName\":\"b\",\"AttributeType\":\"N\"},"
                                "{\"AttributeName\":\"c\",\"AttributeType\":\"B\"},{\"AttributeName\":\"d\",\"AttributeType\":\"S\"},"
                                "{\"AttributeName\":\"e\",\"AttributeType\":\"S\"}],\"BillingMode\":\"PAY_PER_REQUEST\","
                                "\"GlobalSecondaryIndexes\":[{\"IndexName\":\"gsi1\",\"KeySchema\":%s,\"Projection\":{\"ProjectionType\":\"ALL\"}}]}",
                 ks);
}

#define H(x) "{\"AttributeName\":\"" x "\",\"KeyType\":\"HASH\"}"
#define R(x) "{\"AttributeName\":\"" x "\",\"KeyType\":\"RANGE\"}"

START_TEST(create_limits)
{
    /* the largest: four and four (id may be an index key attribute too) */
    fdbt_resp r = create_gsi("[" H("a") "," H("b") "," H("c") "," H("d") "," R("e") "," R("id") "]");
    ok(&r);
    r = fdbt_call("DeleteTable", "{\"TableName\":\"Tab2\"}");
    ok(&r);
    r = create_gsi("[" H("a") "," H("b") "," H("c") "," H("d") "," H("e") "]");
    refused(&r, "at most 4 HASH key elements");
    r = create_gsi("[" H("id") "," R("a") "," R("b") "," R("c") "," R("d") "," R("e") "]");
    refused(&r, "at most 4 RANGE key elements");
    r = create_gsi("[" H("a") "," H("b") "," H("c") "," H("d") "," R("e") "," R("id") "," R("x") "," R("y") "," R("z") "]");
    refused(&r, "Member must have length less than or equal to 8");
    r = create_gsi("[" H("a") "," R("b") "," R("a") "]");
    refused(&r, "The attribute a appears more than once in the KeySchema");
    r = create_gsi("[" H("a") "," H("b") "," H("a") "]");
    refused(&r, "The attribute a appears more than once in the KeySchema");
    r = create_gsi("[" H("a") "," R("b") "," H("c") "]");
    refused(&r, "The HASH key elements must come before the RANGE key elements");
    r = create_gsi("[" R("a") "," R("b") "]");
    refused(&r, "The first KeySchemaElement is not a HASH key type");
    r = create_gsi("[" H("a") "," H("nodef") "]");
    refused(&r, "Some index key attributes are not defined in AttributeDefinitions. Keys: [nodef]");
    /* the table's own key and an LSI keep one HASH and at most one RANGE */
    r = fdbt_call("CreateTable", "{\"TableName\":\"Tab3\",\"KeySchema\":[" H("a") "," H("b") "],"
                                 "\"AttributeDefinitions\":[{\"AttributeName\":\"a\",\"AttributeType\":\"S\"},{\"AttributeName\":\"b\",\"AttributeType\":\"S\"}],"
                                 "\"BillingMode\":\"PAY_PER_REQUEST\"}");
    refused(&r, "The first KeySchemaElement is not a HASH key type");
    r = fdbt_call("CreateTable", "{\"TableName\":\"Tab3\",\"KeySchema\":[" H("a") "," R("b") "," R("c") "],"
                                 "\"AttributeDefinitions\":[{\"AttributeName\":\"a\",\"AttributeType\":\"S\"},{\"AttributeName\":\"b\",\"AttributeType\":\"S\"},"
                                 "{\"AttributeName\":\"c\",\"AttributeType\":\"S\"}],\"BillingMode\":\"PAY_PER_REQUEST\"}");
    refused(&r, "Member must have length less than or equal to 2");
    r = fdbt_call("CreateTable", "{\"TableName\":\"Tab3\",\"KeySchema\":[" H("a") "," R("b") "],"
                                 "\"AttributeDefinitions\":[{\"AttributeName\":\"a\",\"AttributeType\":\"S\"},{\"AttributeName\":\"b\",\"AttributeType\":\"S\"},"
                                 "{\"AttributeName\":\"c\",\"AttributeType\":\"S\"},{\"AttributeName\":\"d\",\"AttributeType\":\"S\"}],\"BillingMode\":\"PAY_PER_REQUEST\","
                                 "\"LocalSecondaryIndexes\":[{\"IndexName\":\"lsi1\",\"KeySchema\":[" H("a") "," R("c") "," R("d") "],"
                                 "\"Projection\":{\"ProjectionType\":\"ALL\"}}]}");
    refused(&r, "Member must have length less than or equal to 2");
    /* no table was made by the refusals */
    r = fdbt_call("ListTables", "{}");
    ck_assert_int_eq(json_object_array_length(fdbt_get(r.json, "TableNames")), 1);
    fdbt_free(&r);
}
END_TEST

START_TEST(update_table_creates_multikey_gsi)
{
    fdbt_resp r = fdbt_call("UpdateTable", "{\"TableName\":\"Orders\",\"AttributeDefinitions\":[{\"AttributeName\":\"tier\",\"AttributeType\":\"N\"},"
                                           "{\"AttributeName\":\"yr\",\"AttributeType\":\"N\"},{\"AttributeName\":\"town\",\"AttributeType\":\"S\"}],"
                                           "\"GlobalSecondaryIndexUpdates\":[{\"Create\":{\"IndexName\":\"byTier\",\"KeySchema\":["
                                           H("tier") "," R("yr") "," R("town") "],\"Projection\":{\"ProjectionType\":\"KEYS_ONLY\"}}}]}");
    ok(&r);
    /* the index holds the items there were: tier 1, yr 10, towns from "a" on */
    r = fdbt_call("Query", "{\"TableName\":\"Orders\",\"IndexName\":\"byTier\",\"KeyConditionExpression\":\"tier = :t AND yr = :y AND town >= :c\","
                           "\"ExpressionAttributeValues\":{\":t\":{\"N\":\"1\"},\":y\":{\"N\":\"10\"},\":c\":{\"S\":\"ab\"}}}");
    char got[256];
    ck_assert_msg(r.status == 200, "%s", r.body);
    ids_of(&r, got, sizeof got);
    ck_assert_str_eq(got, "i4,i9");
    /* KEYS_ONLY: the table's key and the index's three */
    ck_assert_int_eq(json_object_object_length(json_object_array_get_idx(fdbt_get(r.json, "Items"), 0)), 4);
    fdbt_free(&r);
    /* (every key attribute defined in the request, which UpdateTable checks first) */
    r = fdbt_call("UpdateTable", "{\"TableName\":\"Orders\",\"AttributeDefinitions\":[{\"AttributeName\":\"tier\",\"AttributeType\":\"N\"},"
                                 "{\"AttributeName\":\"yr\",\"AttributeType\":\"N\"}],"
                                 "\"GlobalSecondaryIndexUpdates\":[{\"Create\":{\"IndexName\":\"bad\",\"KeySchema\":["
                                 R("tier") "," H("yr") "],\"Projection\":{\"ProjectionType\":\"ALL\"}}}]}");
    refused(&r, "The first KeySchemaElement is not a HASH key type");
}
END_TEST

START_TEST(writes_in_and_out_of_the_index)
{
    /* o1 (no tag) and o2 (no shop) are not in byPlace; the 12 others are */
    fdbt_resp r = fdbt_call("Scan", "{\"TableName\":\"Orders\",\"IndexName\":\"byPlace\",\"Select\":\"COUNT\"}");
    ck_assert_int_eq(json_object_get_int(fdbt_get(r.json, "Count")), 12);
    fdbt_free(&r);
    /* a wrong type on any key attribute is refused, present or not the others */
    r = fdbt_call("PutItem", "{\"TableName\":\"Orders\",\"Item\":{\"id\":{\"S\":\"w1\"},\"shop\":{\"S\":\"s1\"},\"tier\":{\"S\":\"1\"},"
                             "\"yr\":{\"N\":\"1\"},\"town\":{\"S\":\"a\"},\"tag\":{\"B\":\"AA==\"}}}");
    ck_assert_str_eq(fdbt_message(&r), "One or more parameter values were invalid: Type mismatch for Index Key tier Expected: N Actual: S IndexName: byPlace");
    refused(&r, "tier");
    r = fdbt_call("PutItem", "{\"TableName\":\"Orders\",\"Item\":{\"id\":{\"S\":\"w1\"},\"tag\":{\"S\":\"x\"}}}");
    refused(&r, "Type mismatch for Index Key tag Expected: B Actual: S IndexName: byPlace");
    r = fdbt_call("PutItem", "{\"TableName\":\"Orders\",\"Item\":{\"id\":{\"S\":\"w1\"},\"yr\":{\"NS\":[\"1\"]}}}");
    refused(&r, "Type mismatch for Index Key yr Expected: N Actual: NS IndexName: byPlace");
    r = fdbt_call("PutItem", "{\"TableName\":\"Orders\",\"Item\":{\"id\":{\"S\":\"w1\"},\"town\":{\"S\":\"\"}}}");
    refused(&r, "cannot contain an empty string value. IndexName: byPlace, IndexKey: town");
    r = fdbt_call("GetItem", "{\"TableName\":\"Orders\",\"Key\":{\"id\":{\"S\":\"w1\"}}}");
    ck_assert_ptr_null(fdbt_get(r.json, "Item"));
    fdbt_free(&r);
    /* the range attributes together at most 1024 bytes, as one range attribute */
    char town[1100];
    memset(town, 'x', 1024);
    town[1000] = 0;
    r = callf("PutItem", "{\"TableName\":\"Orders\",\"Item\":{\"id\":{\"S\":\"w2\"},\"shop\":{\"S\":\"s9\"},\"tier\":{\"N\":\"1\"},"
                         "\"yr\":{\"N\":\"1\"},\"town\":{\"S\":\"%s\"},\"tag\":{\"B\":\"AA==\"}}}", town);
    ok(&r);
    town[1000] = 'x';
    town[1024] = 0;
    r = callf("PutItem", "{\"TableName\":\"Orders\",\"Item\":{\"id\":{\"S\":\"w3\"},\"shop\":{\"S\":\"s9\"},\"tier\":{\"N\":\"1\"},"
                         "\"yr\":{\"N\":\"1\"},\"town\":{\"S\":\"%s\"},\"tag\":{\"B\":\"AA==\"}}}", town);
    refused(&r, "Aggregated size of all range keys has exceeded the size limit of 1024 bytes");
    /* the pair index: two HASH attributes, no RANGE; ("a","bc") and ("ab","c") differ */
    r = fdbt_call("PutItem", "{\"TableName\":\"Orders\",\"Item\":{\"id\":{\"S\":\"x1\"},\"p1\":{\"S\":\"a\"},\"p2\":{\"S\":\"bc\"},\"note\":{\"S\":\"n\"}}}");
    ok(&r);
    r = fdbt_call("PutItem", "{\"TableName\":\"Orders\",\"Item\":{\"id\":{\"S\":\"x2\"},\"p1\":{\"S\":\"ab\"},\"p2\":{\"S\":\"c\"}}}");
    ok(&r);
    r = fdbt_call("PutItem", "{\"TableName\":\"Orders\",\"Item\":{\"id\":{\"S\":\"x3\"},\"p1\":{\"S\":\"a\"}}}");
    ok(&r);
    r = fdbt_call("Query", "{\"TableName\":\"Orders\",\"IndexName\":\"pair\",\"KeyConditionExpression\":\"p2 = :b AND p1 = :a\","
                           "\"ExpressionAttributeValues\":{\":a\":{\"S\":\"a\"},\":b\":{\"S\":\"bc\"}}}");
    char got[128];
    ck_assert_msg(r.status == 200, "%s", r.body);
    ids_of(&r, got, sizeof got);
    ck_assert_str_eq(got, "x1");
    /* KEYS_ONLY: id, p1, p2 */
    ck_assert_int_eq(json_object_object_length(json_object_array_get_idx(fdbt_get(r.json, "Items"), 0)), 3);
    fdbt_free(&r);
    r = fdbt_call("Query", "{\"TableName\":\"Orders\",\"IndexName\":\"pair\",\"KeyConditionExpression\":\"p1 = :a\","
                           "\"ExpressionAttributeValues\":{\":a\":{\"S\":\"a\"}}}");
    refused(&r, "Query condition missed key schema element: p2");
}
END_TEST

START_TEST(query_valid_forms)
{
    query_ids("", "", true, k_order);
    query_ids("", "", false, "i7,i9,i4,i10,i5,i2,i3,i1,i6,i8");
    query_ids("yr = :y", "\":y\":{\"N\":\"10\"}", true, "i1,i3,i2,i5,i10,i4,i9");
    query_ids("yr = :y AND town = :c", "\":y\":{\"N\":\"10\"},\":c\":{\"S\":\"a\"}", true, "i1,i3,i2,i5");
    query_ids("yr = :y AND begins_with(town, :c)", "\":y\":{\"N\":\"10\"},\":c\":{\"S\":\"a\"}", true, "i1,i3,i2,i5,i10,i4");
    query_ids("yr = :y AND town > :c", "\":y\":{\"N\":\"10\"},\":c\":{\"S\":\"a\"}", true, "i10,i4,i9");
    query_ids("yr = :y AND town >= :c", "\":y\":{\"N\":\"10\"},\":c\":{\"S\":\"ab\"}", true, "i4,i9");
    query_ids("yr = :y AND town < :c", "\":y\":{\"N\":\"10\"},\":c\":{\"S\":\"ab\"}", true, "i1,i3,i2,i5,i10");
    query_ids("yr = :y AND town <= :c", "\":y\":{\"N\":\"10\"},\":c\":{\"S\":\"ab\"}", false, "i4,i10,i5,i2,i3,i1");
    query_ids("yr = :y AND town BETWEEN :c AND :d", "\":y\":{\"N\":\"10\"},\":c\":{\"S\":\"a\\u0000\"},\":d\":{\"S\":\"b\"}", true, "i10,i4,i9");
    const char *eq_a = "\":y\":{\"N\":\"10\"},\":c\":{\"S\":\"a\"}";
    char v[256];
    snprintf(v, sizeof v, "%s,\":g\":{\"B\":\"AA==\"}", eq_a);
    query_ids("yr = :y AND town = :c AND tag > :g", v, true, "i3,i2,i5");
    query_ids("yr = :y AND town = :c AND tag = :g", v, true, "i1");
    query_ids("yr = :y AND town = :c AND begins_with(tag, :g)", v, true, "i1,i3,i2");
    snprintf(v, sizeof v, "%s,\":g\":{\"B\":\"AAA=\"}", eq_a);
    query_ids("yr = :y AND town = :c AND tag >= :g", v, true, "i3,i2,i5");
    snprintf(v, sizeof v, "%s,\":g\":{\"B\":\"AP8=\"}", eq_a);
    query_ids("yr = :y AND town = :c AND tag < :g", v, true, "i1,i3");
    query_ids("yr = :y AND town = :c AND tag <= :g", v, true, "i1,i3,i2");
    snprintf(v, sizeof v, "%s,\":g\":{\"B\":\"AAA=\"},\":h\":{\"B\":\"AP8=\"}", eq_a);
    query_ids("yr = :y AND town = :c AND tag BETWEEN :g AND :h", v, true, "i3,i2");
    /* numbers numerically, the value on either side */
    query_ids("yr > :y", "\":y\":{\"N\":\"9\"}", true, "i1,i3,i2,i5,i10,i4,i9,i7");
    query_ids(":y < yr", "\":y\":{\"N\":\"9\"}", true, "i1,i3,i2,i5,i10,i4,i9,i7");
    query_ids("yr >= :y", "\":y\":{\"N\":\"10\"}", true, "i1,i3,i2,i5,i10,i4,i9,i7");
    query_ids("yr < :y", "\":y\":{\"N\":\"10\"}", true, "i8,i6");
    query_ids("yr <= :y", "\":y\":{\"N\":\"10\"}", false, "i9,i4,i10,i5,i2,i3,i1,i6,i8");
    query_ids("yr BETWEEN :a AND :b", "\":a\":{\"N\":\"-5\"},\":b\":{\"N\":\"9.0\"}", true, "i8,i6");
    /* a partition with nothing */
    fdbt_resp r = fdbt_call("Query", "{\"TableName\":\"Orders\",\"IndexName\":\"byPlace\",\"KeyConditionExpression\":\"shop = :s AND tier = :t\","
                                     "\"ExpressionAttributeValues\":{\":s\":{\"S\":\"s1\"},\":t\":{\"N\":\"3\"}}}");
    ck_assert_int_eq(json_object_get_int(fdbt_get(r.json, "Count")), 0);
    fdbt_free(&r);
    /* the legacy KeyConditions keeps its two conditions at most: enough for pair, not
     * for byPlace's two HASH attributes and a RANGE one */
    r = fdbt_call("Query", "{\"TableName\":\"Orders\",\"IndexName\":\"byPlace\",\"KeyConditions\":{"
                           "\"shop\":{\"ComparisonOperator\":\"EQ\",\"AttributeValueList\":[{\"S\":\"s1\"}]},"
                           "\"tier\":{\"ComparisonOperator\":\"EQ\",\"AttributeValueList\":[{\"N\":\"1\"}]},"
                           "\"yr\":{\"ComparisonOperator\":\"LT\",\"AttributeValueList\":[{\"N\":\"10\"}]}}}");
    refused(&r, "Conditions can be of length 1 or 2 only");
    r = fdbt_call("Query", "{\"TableName\":\"Orders\",\"IndexName\":\"byPlace\",\"KeyConditions\":{"
                           "\"shop\":{\"ComparisonOperator\":\"EQ\",\"AttributeValueList\":[{\"S\":\"s1\"}]},"
                           "\"tier\":{\"ComparisonOperator\":\"EQ\",\"AttributeValueList\":[{\"N\":\"1\"}]}}}");
    char got[128];
    ck_assert_msg(r.status == 200, "%s", r.body);
    ids_of(&r, got, sizeof got);
    ck_assert_str_eq(got, k_order);
    fdbt_free(&r);
}
END_TEST

START_TEST(query_invalid_forms)
{
    const char *st = "\":s\":{\"S\":\"s1\"},\":t\":{\"N\":\"1\"}";
    char v[256];
    query_refused("shop = :s", "\":s\":{\"S\":\"s1\"}", "Query condition missed key schema element: tier");
    query_refused("tier = :t", "\":t\":{\"N\":\"1\"}", "Query condition missed key schema element: shop");
    query_refused("shop = :s AND tier > :t", st, "Query key condition not supported: the partition key attribute tier must be given by equality (=)");
    snprintf(v, sizeof v, "%s,\":c\":{\"S\":\"a\"}", st);
    query_refused("shop = :s AND tier = :t AND town = :c", v, "Query condition missed key schema element: yr");
    snprintf(v, sizeof v, "%s,\":y\":{\"N\":\"1\"},\":g\":{\"B\":\"AA==\"}", st);
    query_refused("shop = :s AND tier = :t AND yr = :y AND tag = :g", v, "Query condition missed key schema element: town");
    snprintf(v, sizeof v, "%s,\":y\":{\"N\":\"1\"},\":c\":{\"S\":\"a\"}", st);
    query_refused("shop = :s AND tier = :t AND yr > :y AND town = :c", v,
                  "Query key condition not supported: the sort key attribute yr has a condition other than equality (=) and is followed by a condition on town");
    snprintf(v, sizeof v, "%s,\":y\":{\"N\":\"1\"},\":c\":{\"S\":\"a\"},\":g\":{\"B\":\"AA==\"}", st);
    query_refused("tag = :g AND shop = :s AND tier = :t AND yr = :y AND begins_with(town, :c)", v,
                  "Query key condition not supported: the sort key attribute town has a condition other than equality (=) and is followed by a condition on tag");
    snprintf(v, sizeof v, "%s,\":n\":{\"S\":\"n1\"}", st);
    query_refused("shop = :s AND tier = :t AND note = :n", v, "Query key condition not supported: note is not a key attribute of the index");
    snprintf(v, sizeof v, "%s,\":y\":{\"N\":\"1\"}", st);
    query_refused("shop = :s AND tier = :t AND yr = :y AND yr = :y", v, "KeyConditionExpressions must only contain one condition per key");
    query_refused("shop = :s AND tier = :t AND begins_with(yr, :y)", v, "operator or function: begins_with, operand type: N");
    query_refused("shop = :s AND tier = :s", "\":s\":{\"S\":\"s1\"}", "Condition parameter type does not match schema type");
    query_refused("shop = :s OR tier = :t", st, "Invalid operator used in KeyConditionExpression: OR");
    snprintf(v, sizeof v, "%s,\":a\":{\"N\":\"5\"},\":b\":{\"N\":\"1\"}", st);
    query_refused("shop = :s AND tier = :t AND yr BETWEEN :a AND :b", v, "The BETWEEN operator requires upper bound to be greater than or equal to lower bound");
    snprintf(v, sizeof v, "%s,\":y\":{\"N\":\"1\"}", st);
    query_refused("shop = :s AND tier = :t AND yr = :y AND yr = :y AND yr = :y AND yr = :y AND yr = :y AND yr = :y", v,
                  "KeyConditionExpressions must only contain one condition per key");
    /* a filter may not name a key attribute of the index (nor of the table: id is not one) */
    fdbt_resp r = fdbt_call("Query", "{\"TableName\":\"Orders\",\"IndexName\":\"byPlace\",\"KeyConditionExpression\":\"shop = :s AND tier = :t\","
                                     "\"FilterExpression\":\"town = :c\",\"ExpressionAttributeValues\":{\":s\":{\"S\":\"s1\"},\":t\":{\"N\":\"1\"},\":c\":{\"S\":\"a\"}}}");
    ck_assert_str_eq(fdbt_message(&r), "Filter Expression can only contain non-primary key attributes: Primary key attribute: town");
    fdbt_free(&r);
    r = fdbt_call("Query", "{\"TableName\":\"Orders\",\"IndexName\":\"byPlace\",\"KeyConditionExpression\":\"shop = :s AND tier = :t\","
                           "\"FilterExpression\":\"note = :n OR tier > :t\",\"ExpressionAttributeValues\":{\":s\":{\"S\":\"s1\"},\":t\":{\"N\":\"1\"},\":n\":{\"S\":\"x\"}}}");
    refused(&r, "Filter Expression can only contain non-primary key attributes: Primary key attribute: tier");
    r = fdbt_call("Query", "{\"TableName\":\"Orders\",\"IndexName\":\"byPlace\",\"KeyConditions\":{"
                           "\"shop\":{\"ComparisonOperator\":\"EQ\",\"AttributeValueList\":[{\"S\":\"s1\"}]},"
                           "\"tier\":{\"ComparisonOperator\":\"EQ\",\"AttributeValueList\":[{\"N\":\"1\"}]}},"
                           "\"QueryFilter\":{\"tag\":{\"ComparisonOperator\":\"NOT_NULL\"}}}");
    refused(&r, "QueryFilter can only contain non-primary key attributes: Primary key attribute: tag");
    /* a filter on a non-key attribute, and on the table's key id */
    r = fdbt_call("Query", "{\"TableName\":\"Orders\",\"IndexName\":\"byPlace\",\"KeyConditionExpression\":\"shop = :s AND tier = :t\","
                           "\"FilterExpression\":\"note = :n OR id = :i\",\"ExpressionAttributeValues\":{\":s\":{\"S\":\"s1\"},\":t\":{\"N\":\"1\"},"
                           "\":n\":{\"S\":\"n0\"},\":i\":{\"S\":\"i7\"}}}");
    char got[128];
    ck_assert_msg(r.status == 200, "%s", r.body);
    ids_of(&r, got, sizeof got);
    ck_assert_str_eq(got, "i1,i7");
    ck_assert_int_eq(json_object_get_int(fdbt_get(r.json, "ScannedCount")), 10);
    fdbt_free(&r);
}
END_TEST

/* Pages of Query (scan false) or Scan of byPlace with Limit `limit`, following
 * LastEvaluatedKey, into ids; each LastEvaluatedKey has the 6 key attributes. */
static void pages(bool scan, bool forward, int limit, char *ids, size_t n)
{
    json_object *esk = NULL;
    ids[0] = 0;
    for (int page = 0; page < 50; page++) {
        fdbt_resp r = callf(scan ? "Scan" : "Query",
                            "{\"TableName\":\"Orders\",\"IndexName\":\"byPlace\",\"Limit\":%d%s%s%s%s}",
                            limit,
                            scan ? "" : forward ? ",\"ScanIndexForward\":true" : ",\"ScanIndexForward\":false",
                            scan ? "" : ",\"KeyConditionExpression\":\"shop = :s AND tier = :t\","
                                        "\"ExpressionAttributeValues\":{\":s\":{\"S\":\"s1\"},\":t\":{\"N\":\"1\"}}",
                            esk ? ",\"ExclusiveStartKey\":" : "", esk ? json_object_to_json_string_ext(esk, JSON_C_TO_STRING_PLAIN) : "");
        ck_assert_msg(r.status == 200, "%s", r.body);
        char got[256];
        ids_of(&r, got, sizeof got);
        if (got[0]) {
            size_t o = strlen(ids);
            snprintf(ids + o, n - o, "%s%s", ids[0] ? "," : "", got);
        }
        json_object_put(esk);
        esk = fdbt_get(r.json, "LastEvaluatedKey");
        if (esk) {
            ck_assert_int_eq(json_object_object_length(esk), 6);
            const char *keys[] = { "id", "shop", "tier", "yr", "town", "tag" };
            for (int i = 0; i < 6; i++)
                ck_assert_msg(fdbt_get(esk, keys[i]) != NULL, "LastEvaluatedKey lacks %s", keys[i]);
            esk = json_object_get(esk);
        }
        fdbt_free(&r);
        if (!esk)
            return;
    }
    ck_abort_msg("paging does not end");
}

START_TEST(paging_with_limit_and_start_key)
{
    char ids[512];
    pages(false, true, 3, ids, sizeof ids);
    ck_assert_str_eq(ids, k_order);
    pages(false, false, 4, ids, sizeof ids);
    ck_assert_str_eq(ids, "i7,i9,i4,i10,i5,i2,i3,i1,i6,i8");
    pages(false, true, 1, ids, sizeof ids);
    ck_assert_str_eq(ids, k_order);
    /* Scan of the index, by pages: each indexed item once */
    pages(true, true, 5, ids, sizeof ids);
    size_t commas = 0;
    for (const char *p = ids; *p; p++)
        commas += *p == ',';
    ck_assert_uint_eq(commas + 1, 12);
    for (size_t i = 0; i < N_ITEMS; i++) {
        char want[16];
        snprintf(want, sizeof want, ",%s,", k_items[i].id);
        char wrapped[520];
        snprintf(wrapped, sizeof wrapped, ",%s,", ids);
        ck_assert_msg(strstr(wrapped, want) != NULL, "%s not in %s", k_items[i].id, ids);
    }
    /* start keys checked like the LastEvaluatedKeys they stand for */
    const char *kc = "\"KeyConditionExpression\":\"shop = :s AND tier = :t\","
                     "\"ExpressionAttributeValues\":{\":s\":{\"S\":\"s1\"},\":t\":{\"N\":\"1\"}}";
    fdbt_resp r = callf("Query", "{\"TableName\":\"Orders\",\"IndexName\":\"byPlace\",%s,\"ExclusiveStartKey\":{\"id\":{\"S\":\"i1\"},"
                                 "\"shop\":{\"S\":\"s1\"},\"tier\":{\"N\":\"1\"},\"yr\":{\"N\":\"10\"},\"town\":{\"S\":\"a\"}}}", kc);
    refused(&r, "The provided starting key is invalid: The provided key element does not match the schema");
    r = callf("Query", "{\"TableName\":\"Orders\",\"IndexName\":\"byPlace\",%s,\"ExclusiveStartKey\":{\"id\":{\"S\":\"i1\"},"
                       "\"shop\":{\"S\":\"s1\"},\"tier\":{\"S\":\"1\"},\"yr\":{\"N\":\"10\"},\"town\":{\"S\":\"a\"},\"tag\":{\"B\":\"AA==\"}}}", kc);
    refused(&r, "The provided starting key is invalid");
    r = callf("Query", "{\"TableName\":\"Orders\",\"IndexName\":\"byPlace\",%s,\"ExclusiveStartKey\":{\"id\":{\"S\":\"i1\"},"
                       "\"shop\":{\"S\":\"s1\"},\"tier\":{\"N\":\"1\"},\"yr\":{\"N\":\"10\"},\"town\":{\"S\":\"a\"},\"tag\":{\"B\":\"AA==\"},\"note\":{\"S\":\"x\"}}}", kc);
    refused(&r, "The provided starting key is invalid");
    r = callf("Query", "{\"TableName\":\"Orders\",\"IndexName\":\"byPlace\",%s,\"ExclusiveStartKey\":{\"id\":{\"S\":\"i12\"},"
                       "\"shop\":{\"S\":\"s2\"},\"tier\":{\"N\":\"1\"},\"yr\":{\"N\":\"10\"},\"town\":{\"S\":\"a\"},\"tag\":{\"B\":\"AA==\"}}}", kc);
    refused(&r, "The provided starting key is outside query boundaries based on provided conditions");
    r = fdbt_call("Query", "{\"TableName\":\"Orders\",\"IndexName\":\"byPlace\",\"KeyConditionExpression\":\"shop = :s AND tier = :t AND yr < :y\","
                           "\"ExpressionAttributeValues\":{\":s\":{\"S\":\"s1\"},\":t\":{\"N\":\"1\"},\":y\":{\"N\":\"10\"}},"
                           "\"ExclusiveStartKey\":{\"id\":{\"S\":\"i1\"},\"shop\":{\"S\":\"s1\"},\"tier\":{\"N\":\"1\"},\"yr\":{\"N\":\"10\"},"
                           "\"town\":{\"S\":\"a\"},\"tag\":{\"B\":\"AA==\"}}}");
    refused(&r, "The provided starting key does not match the range key predicate");
    /* a start key inside the range: what follows it */
    r = fdbt_call("Query", "{\"TableName\":\"Orders\",\"IndexName\":\"byPlace\",\"KeyConditionExpression\":\"shop = :s AND tier = :t AND yr = :y\","
                           "\"ExpressionAttributeValues\":{\":s\":{\"S\":\"s1\"},\":t\":{\"N\":\"1\"},\":y\":{\"N\":\"10\"}},"
                           "\"ExclusiveStartKey\":{\"id\":{\"S\":\"i2\"},\"shop\":{\"S\":\"s1\"},\"tier\":{\"N\":\"1\"},\"yr\":{\"N\":\"10\"},"
                           "\"town\":{\"S\":\"a\"},\"tag\":{\"B\":\"AP8=\"}}}");
    ck_assert_msg(r.status == 200, "%s", r.body);
    ids_of(&r, ids, sizeof ids);
    ck_assert_str_eq(ids, "i5,i10,i4,i9");
    fdbt_free(&r);
}
END_TEST

START_TEST(updates_move_items_in_and_out)
{
    fdbt_resp r = fdbt_call("UpdateItem", "{\"TableName\":\"Orders\",\"Key\":{\"id\":{\"S\":\"i1\"}},\"UpdateExpression\":\"REMOVE town\"}");
    ok(&r);
    query_ids("", "", true, "i8,i6,i3,i2,i5,i10,i4,i9,i7");
    r = fdbt_call("UpdateItem", "{\"TableName\":\"Orders\",\"Key\":{\"id\":{\"S\":\"i1\"}},\"UpdateExpression\":\"SET town = :c\","
                                "\"ExpressionAttributeValues\":{\":c\":{\"S\":\"zz\"}}}");
    ok(&r);
    query_ids("", "", true, "i8,i6,i3,i2,i5,i10,i4,i9,i1,i7");
    /* o1 gets its tag: into the index */
    r = fdbt_call("UpdateItem", "{\"TableName\":\"Orders\",\"Key\":{\"id\":{\"S\":\"o1\"}},\"UpdateExpression\":\"SET tag = :g\","
                                "\"ExpressionAttributeValues\":{\":g\":{\"B\":\"AA8=\"}}}");
    ok(&r);
    query_ids("yr = :y AND town = :c", "\":y\":{\"N\":\"10\"},\":c\":{\"S\":\"a\"}", true, "i3,o1,i2,i5");
    /* i7 moves to the front, i6 to another partition */
    r = fdbt_call("UpdateItem", "{\"TableName\":\"Orders\",\"Key\":{\"id\":{\"S\":\"i7\"}},\"UpdateExpression\":\"SET yr = :y\","
                                "\"ExpressionAttributeValues\":{\":y\":{\"N\":\"-10\"}}}");
    ok(&r);
    r = fdbt_call("UpdateItem", "{\"TableName\":\"Orders\",\"Key\":{\"id\":{\"S\":\"i6\"}},\"UpdateExpression\":\"ADD tier :one\","
                                "\"ExpressionAttributeValues\":{\":one\":{\"N\":\"1\"}}}");
    ok(&r);
    query_ids("", "", true, "i7,i8,i3,o1,i2,i5,i10,i4,i9,i1");
    /* a wrong type refused, the item as it was */
    r = fdbt_call("UpdateItem", "{\"TableName\":\"Orders\",\"Key\":{\"id\":{\"S\":\"i8\"}},\"UpdateExpression\":\"SET yr = :y\","
                                "\"ExpressionAttributeValues\":{\":y\":{\"S\":\"x\"}}}");
    refused(&r, "Type mismatch for Index Key yr Expected: N Actual: S IndexName: byPlace");
    /* delete: out of the index */
    r = fdbt_call("DeleteItem", "{\"TableName\":\"Orders\",\"Key\":{\"id\":{\"S\":\"i8\"}}}");
    ok(&r);
    query_ids("", "", true, "i7,i3,o1,i2,i5,i10,i4,i9,i1");
    r = fdbt_call("Scan", "{\"TableName\":\"Orders\",\"IndexName\":\"byPlace\",\"Select\":\"COUNT\"}");
    ck_assert_int_eq(json_object_get_int(fdbt_get(r.json, "Count")), 12);
    fdbt_free(&r);
    /* a batch write and a transaction keep the index too */
    r = fdbt_call("BatchWriteItem", "{\"RequestItems\":{\"Orders\":[{\"DeleteRequest\":{\"Key\":{\"id\":{\"S\":\"i3\"}}}},"
                                    "{\"PutRequest\":{\"Item\":{\"id\":{\"S\":\"b1\"},\"shop\":{\"S\":\"s1\"},\"tier\":{\"N\":\"1\"},"
                                    "\"yr\":{\"N\":\"-20\"},\"town\":{\"S\":\"q\"},\"tag\":{\"B\":\"AA==\"}}}}]}}");
    ok(&r);
    r = fdbt_call("TransactWriteItems", "{\"TransactItems\":[{\"Update\":{\"TableName\":\"Orders\",\"Key\":{\"id\":{\"S\":\"i4\"}},"
                                        "\"UpdateExpression\":\"REMOVE tag\"}}]}");
    ok(&r);
    query_ids("", "", true, "b1,i7,o1,i2,i5,i10,i9,i1");
}
END_TEST

START_TEST(partiql_select_reads_the_index)
{
    fdbt_resp r = fdbt_call("ExecuteStatement", "{\"Statement\":\"SELECT id FROM \\\"Orders\\\".\\\"byPlace\\\" WHERE shop = 's1' AND tier = 1 AND yr < 10\"}");
    ck_assert_msg(r.status == 200, "%s", r.body);
    ck_assert_int_eq(json_object_array_length(fdbt_get(r.json, "Items")), 2);
    fdbt_free(&r);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("fakedb_multikey");
    TCase *tc = tcase_create("multikey");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, describe_returns_key_schema);
    tcase_add_test(tc, create_limits);
    tcase_add_test(tc, update_table_creates_multikey_gsi);
    tcase_add_test(tc, writes_in_and_out_of_the_index);
    tcase_add_test(tc, query_valid_forms);
    tcase_add_test(tc, query_invalid_forms);
    tcase_add_test(tc, paging_with_limit_and_start_key);
    tcase_add_test(tc, updates_move_items_in_and_out);
    tcase_add_test(tc, partiql_select_reads_the_index);
    suite_add_tcase(s, tc);
    return dl_check_run(s);
}
