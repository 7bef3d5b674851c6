/* test_gsi_update.c: UpdateTable's GlobalSecondaryIndexUpdates in fakedb over HTTP (issue
 * #25 item 4): DynamoDB's checks (empty updates, one index created or deleted per call,
 * definitions and their types, names, the 20-index limit, an update while an index
 * changes), the new index CREATING with Backfilling and then ACTIVE on the fake clock,
 * its backfilled contents, reads refused while it backfills, writes landing in it, and a
 * deleted index DELETING and then gone. */
#include "fdbt.h"

#include <check.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DELAY_MS 5000

static void setup(void)
{
    fdbt_start(NULL);
}

static void teardown(void)
{
    fdbt_stop();
}

__attribute__((format(printf, 2, 3)))
static fdbt_resp dc(const char *op, const char *fmt, ...)
{
    char body[16384];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(body, sizeof body, fmt, ap);
    va_end(ap);
    return fdbt_call(op, body);
}

static void ok(fdbt_resp r)
{
    ck_assert_msg(r.status == 200, "%ld %s", r.status, r.body ? r.body : "");
    fdbt_free(&r);
}

/* A call that must fail with `type` (after '#') and exactly the message `msg`. */
static void expect_err(fdbt_resp r, const char *type, const char *msg)
{
    ck_assert_msg(r.status == 400, "status %ld: %s", r.status, r.body ? r.body : "");
    ck_assert_str_eq(fdbt_error(&r), type);
    if (msg)
        ck_assert_str_eq(fdbt_message(&r), msg);
    fdbt_free(&r);
}

/* pk (S), on demand, with items k0..k3 (g S "v0"/"v1"), kn (g a number: not in an index
 * on g as S) and kx (no g). */
static void base_table(const char *name)
{
    fdbt_table(name, NULL, NULL);
    for (int i = 0; i < 4; i++)
        ok(dc("PutItem", "{\"TableName\":\"%s\",\"Item\":{\"pk\":{\"S\":\"k%d\"},\"g\":{\"S\":\"v%d\"}}}", name, i, i % 2));
    ok(dc("PutItem", "{\"TableName\":\"%s\",\"Item\":{\"pk\":{\"S\":\"kn\"},\"g\":{\"N\":\"5\"}}}", name));
    ok(dc("PutItem", "{\"TableName\":\"%s\",\"Item\":{\"pk\":{\"S\":\"kx\"}}}", name));
}

#define GSI_G(name) \
    "{\"IndexName\":\"" name "\",\"KeySchema\":[{\"AttributeName\":\"g\",\"KeyType\":\"HASH\"}],\"Projection\":{\"ProjectionType\":\"ALL\"}}"
#define DEF_G "\"AttributeDefinitions\":[{\"AttributeName\":\"g\",\"AttributeType\":\"S\"}]"

static fdbt_resp create_gsi(const char *table)
{
    return dc("UpdateTable", "{\"TableName\":\"%s\"," DEF_G ",\"GlobalSecondaryIndexUpdates\":[{\"Create\":" GSI_G("gidx") "}]}", table);
}

/* The index `name` of a description under `prefix` ("Table" or "TableDescription"). */
static json_object *gsi_of(fdbt_resp *r, const char *prefix, const char *name)
{
    json_object *list = fdbt_get(r->json, prefix);
    list = list ? fdbt_get(list, "GlobalSecondaryIndexes") : NULL;
    for (size_t i = 0; list && i < json_object_array_length(list); i++) {
        json_object *e = json_object_array_get_idx(list, i);
        json_object *n = fdbt_get(e, "IndexName");
        if (n && !strcmp(json_object_get_string(n), name))
            return e;
    }
    return NULL;
}

static const char *gsi_status(fdbt_resp *r, const char *prefix, const char *name)
{
    json_object *e = gsi_of(r, prefix, name);
    json_object *s = e ? fdbt_get(e, "IndexStatus") : NULL;
    return s ? json_object_get_string(s) : "(none)";
}

/* -1: no Backfilling member; else its value. */
static int backfilling(fdbt_resp *r, const char *prefix, const char *name)
{
    json_object *e = gsi_of(r, prefix, name);
    json_object *b = e ? fdbt_get(e, "Backfilling") : NULL;
    return b ? json_object_get_boolean(b) : -1;
}

/* The sorted pk values a Query of gidx for g = v returns, "k0,k2"; "" when none. */
static void query_gidx(const char *table, const char *v, char *out, size_t cap)
{
    fdbt_resp r = dc("Query", "{\"TableName\":\"%s\",\"IndexName\":\"gidx\",\"KeyConditionExpression\":\"g = :v\","
                              "\"ExpressionAttributeValues\":{\":v\":{\"S\":\"%s\"}}}", table, v);
    ck_assert_msg(r.status == 200, "%ld %s", r.status, r.body);
    json_object *items = fdbt_get(r.json, "Items");
    size_t n = json_object_array_length(items);
    const char *keys[64];
    for (size_t i = 0; i < n && i < 64; i++)
        keys[i] = json_object_get_string(fdbt_get(json_object_array_get_idx(items, i), "pk.S"));
    for (size_t i = 1; i < n; i++)          /* insertion sort: a handful of keys */
        for (size_t j = i; j > 0 && strcmp(keys[j - 1], keys[j]) > 0; j--) {
            const char *t = keys[j];
            keys[j] = keys[j - 1];
            keys[j - 1] = t;
        }
    out[0] = 0;
    for (size_t i = 0; i < n; i++) {
        strncat(out, i ? "," : "", cap - strlen(out) - 1);
        strncat(out, keys[i], cap - strlen(out) - 1);
    }
    fdbt_free(&r);
}

START_TEST(empty_updates)
{
    base_table("Tbl");
    static const char *const msg = "At least one of ProvisionedThroughput, BillingMode, UpdateStreamEnabled, GlobalSecondaryIndexUpdates or SSESpecification or ReplicaUpdates is required";
    expect_err(dc("UpdateTable", "{\"TableName\":\"Tbl\"}"), "ValidationException", msg);
    expect_err(dc("UpdateTable", "{\"TableName\":\"Tbl\",\"GlobalSecondaryIndexUpdates\":[]}"), "ValidationException", msg);
    expect_err(dc("UpdateTable", "{\"TableName\":\"Tbl\"," DEF_G "}"), "ValidationException", msg);
    expect_err(dc("UpdateTable", "{\"TableName\":\"Tbl\",\"GlobalSecondaryIndexUpdates\":[{}]}"),
               "ValidationException", "Update global secondary index action is null");
    /* a list of the wrong JSON type is the deserializer's */
    expect_err(dc("UpdateTable", "{\"TableName\":\"Tbl\",\"GlobalSecondaryIndexUpdates\":{\"Create\":" GSI_G("gidx") "}}"),
               "SerializationException", NULL);
    /* nothing was changed by any of them */
    fdbt_resp r = dc("DescribeTable", "{\"TableName\":\"Tbl\"}");
    ck_assert_ptr_null(fdbt_get(r.json, "Table.GlobalSecondaryIndexes"));
    fdbt_free(&r);
}
END_TEST

START_TEST(one_online_index_per_call)
{
    base_table("Tbl");
    static const char *const limit = "Subscriber limit exceeded: Only 1 online index can be created or deleted simultaneously per table";
    expect_err(dc("UpdateTable", "{\"TableName\":\"Tbl\",\"AttributeDefinitions\":[{\"AttributeName\":\"g\",\"AttributeType\":\"S\"},"
                                 "{\"AttributeName\":\"h\",\"AttributeType\":\"S\"}],\"GlobalSecondaryIndexUpdates\":["
                                 "{\"Create\":" GSI_G("gidx") "},{\"Create\":{\"IndexName\":\"hidx\",\"KeySchema\":"
                                 "[{\"AttributeName\":\"h\",\"KeyType\":\"HASH\"}],\"Projection\":{\"ProjectionType\":\"ALL\"}}}]}"),
               "LimitExceededException", limit);
    ok(create_gsi("Tbl"));
    /* a create and a delete, in two entries or in one */
    expect_err(dc("UpdateTable", "{\"TableName\":\"Tbl\",\"AttributeDefinitions\":[{\"AttributeName\":\"h\",\"AttributeType\":\"S\"}],"
                                 "\"GlobalSecondaryIndexUpdates\":[{\"Create\":{\"IndexName\":\"hidx\",\"KeySchema\":"
                                 "[{\"AttributeName\":\"h\",\"KeyType\":\"HASH\"}],\"Projection\":{\"ProjectionType\":\"ALL\"}}},"
                                 "{\"Delete\":{\"IndexName\":\"gidx\"}}]}"),
               "LimitExceededException", limit);
    expect_err(dc("UpdateTable", "{\"TableName\":\"Tbl\",\"AttributeDefinitions\":[{\"AttributeName\":\"h\",\"AttributeType\":\"S\"}],"
                                 "\"GlobalSecondaryIndexUpdates\":[{\"Create\":{\"IndexName\":\"hidx\",\"KeySchema\":"
                                 "[{\"AttributeName\":\"h\",\"KeyType\":\"HASH\"}],\"Projection\":{\"ProjectionType\":\"ALL\"}},"
                                 "\"Delete\":{\"IndexName\":\"gidx\"}}]}"),
               "LimitExceededException", limit);
    /* the same index named twice comes first */
    expect_err(dc("UpdateTable", "{\"TableName\":\"Tbl\",\"GlobalSecondaryIndexUpdates\":[{\"Delete\":{\"IndexName\":\"gidx\"}},"
                                 "{\"Delete\":{\"IndexName\":\"gidx\"}}]}"),
               "ValidationException", "Only one global secondary index update per index is allowed simultaneously.");
    fdbt_resp r = dc("DescribeTable", "{\"TableName\":\"Tbl\"}");
    ck_assert_str_eq(gsi_status(&r, "Table", "gidx"), "ACTIVE");
    ck_assert_ptr_null(gsi_of(&r, "Table", "hidx"));
    fdbt_free(&r);
}
END_TEST

START_TEST(definitions)
{
    base_table("Tbl");
    expect_err(dc("UpdateTable", "{\"TableName\":\"Tbl\",\"GlobalSecondaryIndexUpdates\":[{\"Create\":" GSI_G("gidx") "}]}"),
               "ValidationException", "One or more parameter values were invalid: Some index key attributes are not defined in AttributeDefinitions. Keys: [g], AttributeDefinitions: []");
    expect_err(dc("UpdateTable", "{\"TableName\":\"Tbl\",\"AttributeDefinitions\":[{\"AttributeName\":\"h\",\"AttributeType\":\"S\"},"
                                 "{\"AttributeName\":\"b\",\"AttributeType\":\"S\"}],\"GlobalSecondaryIndexUpdates\":[{\"Create\":" GSI_G("gidx") "}]}"),
               "ValidationException", "One or more parameter values were invalid: Some index key attributes are not defined in AttributeDefinitions. Keys: [g], AttributeDefinitions: [b, h]");
    /* an index on the table's own key still needs its definition in the request */
    expect_err(dc("UpdateTable", "{\"TableName\":\"Tbl\"," DEF_G ",\"GlobalSecondaryIndexUpdates\":[{\"Create\":{\"IndexName\":\"gpk\","
                                 "\"KeySchema\":[{\"AttributeName\":\"g\",\"KeyType\":\"HASH\"},{\"AttributeName\":\"pk\",\"KeyType\":\"RANGE\"}],"
                                 "\"Projection\":{\"ProjectionType\":\"KEYS_ONLY\"}}}]}"),
               "ValidationException", "One or more parameter values were invalid: Some index key attributes are not defined in AttributeDefinitions. Keys: [pk], AttributeDefinitions: [g]");
    /* the table's pk is S: N is a conflict, S a repetition */
    expect_err(dc("UpdateTable", "{\"TableName\":\"Tbl\",\"AttributeDefinitions\":[{\"AttributeName\":\"pk\",\"AttributeType\":\"N\"},"
                                 "{\"AttributeName\":\"g\",\"AttributeType\":\"S\"}],\"GlobalSecondaryIndexUpdates\":[{\"Create\":{\"IndexName\":\"gpk\","
                                 "\"KeySchema\":[{\"AttributeName\":\"g\",\"KeyType\":\"HASH\"},{\"AttributeName\":\"pk\",\"KeyType\":\"RANGE\"}],"
                                 "\"Projection\":{\"ProjectionType\":\"KEYS_ONLY\"}}}]}"),
               "ValidationException", "invalid attribute, SchemaElement redefined should be of same type as previously defined");
    expect_err(dc("UpdateTable", "{\"TableName\":\"Tbl\",\"AttributeDefinitions\":[{\"AttributeName\":\"g\",\"AttributeType\":\"S\"},"
                                 "{\"AttributeName\":\"g\",\"AttributeType\":\"N\"}],\"GlobalSecondaryIndexUpdates\":[{\"Create\":" GSI_G("gidx") "}]}"),
               "ValidationException", "Attribute Name is duplicated: g");
    ok(dc("UpdateTable", "{\"TableName\":\"Tbl\",\"AttributeDefinitions\":[{\"AttributeName\":\"pk\",\"AttributeType\":\"S\"},"
                         "{\"AttributeName\":\"g\",\"AttributeType\":\"S\"}],\"GlobalSecondaryIndexUpdates\":[{\"Create\":{\"IndexName\":\"gpk\","
                         "\"KeySchema\":[{\"AttributeName\":\"g\",\"KeyType\":\"HASH\"},{\"AttributeName\":\"pk\",\"KeyType\":\"RANGE\"}],"
                         "\"Projection\":{\"ProjectionType\":\"KEYS_ONLY\"}}}]}"));
    /* g is now defined as S by the table: an index asking for g as N conflicts */
    expect_err(dc("UpdateTable", "{\"TableName\":\"Tbl\",\"AttributeDefinitions\":[{\"AttributeName\":\"g\",\"AttributeType\":\"N\"}],"
                                 "\"GlobalSecondaryIndexUpdates\":[{\"Create\":" GSI_G("gnum") "}]}"),
               "ValidationException", "invalid attribute, SchemaElement redefined should be of same type as previously defined");
    /* hostile names: the index name's constraint */
    expect_err(dc("UpdateTable", "{\"TableName\":\"Tbl\"," DEF_G ",\"GlobalSecondaryIndexUpdates\":[{\"Create\":" GSI_G("g/../x") "}]}"),
               "ValidationException", "1 validation error detected: Value 'g/../x' at 'indexName' failed to satisfy constraint: Member must satisfy regular expression pattern: [a-zA-Z0-9_.-]+");
}
END_TEST

START_TEST(names)
{
    ok(dc("CreateTable", "{\"TableName\":\"Tbl\",\"KeySchema\":[{\"AttributeName\":\"pk\",\"KeyType\":\"HASH\"},{\"AttributeName\":\"sk\",\"KeyType\":\"RANGE\"}],"
                         "\"AttributeDefinitions\":[{\"AttributeName\":\"pk\",\"AttributeType\":\"S\"},{\"AttributeName\":\"sk\",\"AttributeType\":\"S\"},"
                         "{\"AttributeName\":\"l\",\"AttributeType\":\"S\"}],\"BillingMode\":\"PAY_PER_REQUEST\","
                         "\"LocalSecondaryIndexes\":[{\"IndexName\":\"lidx\",\"KeySchema\":[{\"AttributeName\":\"pk\",\"KeyType\":\"HASH\"},"
                         "{\"AttributeName\":\"l\",\"KeyType\":\"RANGE\"}],\"Projection\":{\"ProjectionType\":\"ALL\"}}]}"));
    ok(create_gsi("Tbl"));
    static const char *const exists = "Attempting to create an index which already exists";
    expect_err(create_gsi("Tbl"), "ValidationException", exists);
    expect_err(dc("UpdateTable", "{\"TableName\":\"Tbl\"," DEF_G ",\"GlobalSecondaryIndexUpdates\":[{\"Create\":" GSI_G("lidx") "}]}"),
               "ValidationException", exists);
    expect_err(dc("UpdateTable", "{\"TableName\":\"Tbl\",\"GlobalSecondaryIndexUpdates\":[{\"Delete\":{\"IndexName\":\"nope\"}}]}"),
               "ResourceNotFoundException", "Requested resource not found");
    /* a local index is not deleted by a global index update */
    expect_err(dc("UpdateTable", "{\"TableName\":\"Tbl\",\"GlobalSecondaryIndexUpdates\":[{\"Delete\":{\"IndexName\":\"lidx\"}}]}"),
               "ResourceNotFoundException", "Requested resource not found");
    expect_err(dc("UpdateTable", "{\"TableName\":\"Tbl\",\"GlobalSecondaryIndexUpdates\":[{\"Update\":{\"IndexName\":\"nope\"}}]}"),
               "ResourceNotFoundException", NULL);
    /* hostile and malformed names */
    expect_err(dc("UpdateTable", "{\"TableName\":\"Tbl\",\"GlobalSecondaryIndexUpdates\":[{\"Delete\":{\"IndexName\":5}}]}"),
               "SerializationException", "NUMBER_VALUE cannot be converted to String");
    expect_err(dc("UpdateTable", "{\"TableName\":\"Tbl\",\"GlobalSecondaryIndexUpdates\":[{\"Delete\":{}}]}"),
               "ValidationException", "1 validation error detected: Value null at 'globalSecondaryIndexUpdates.1.member.delete.indexName' failed to satisfy constraint: Member must not be null");
    expect_err(dc("UpdateTable", "{\"TableName\":\"Tbl\",\"GlobalSecondaryIndexUpdates\":[{\"Delete\":{\"IndexName\":\"gidx\"}},{\"Update\":{}}]}"),
               "ValidationException", "1 validation error detected: Value null at 'globalSecondaryIndexUpdates.2.member.update.indexName' failed to satisfy constraint: Member must not be null");
    expect_err(dc("UpdateTable", "{\"TableName\":\"Tbl\",\"GlobalSecondaryIndexUpdates\":[{\"Delete\":{\"IndexName\":\"gidx\\u0000x\"}}]}"),
               "ResourceNotFoundException", "Requested resource not found");
    expect_err(dc("UpdateTable", "{\"TableName\":\"Tbl\",\"GlobalSecondaryIndexUpdates\":[\"gidx\"]}"),
               "SerializationException", NULL);
    char longname[400];
    memset(longname, 'x', 300);
    longname[300] = 0;
    fdbt_resp r = dc("UpdateTable", "{\"TableName\":\"Tbl\"," DEF_G ",\"GlobalSecondaryIndexUpdates\":[{\"Create\":{\"IndexName\":\"%s\","
                                    "\"KeySchema\":[{\"AttributeName\":\"g\",\"KeyType\":\"HASH\"}],\"Projection\":{\"ProjectionType\":\"ALL\"}}}]}", longname);
    ck_assert_str_eq(fdbt_error(&r), "ValidationException");
    ck_assert_ptr_nonnull(strstr(fdbt_message(&r), "Member must have length less than or equal to 255"));
    fdbt_free(&r);
    /* gidx is still there and ACTIVE */
    r = dc("DescribeTable", "{\"TableName\":\"Tbl\"}");
    ck_assert_str_eq(gsi_status(&r, "Table", "gidx"), "ACTIVE");
    fdbt_free(&r);
    expect_err(dc("UpdateTable", "{\"TableName\":\"Nope\",\"GlobalSecondaryIndexUpdates\":[{\"Delete\":{\"IndexName\":\"gidx\"}}]}"),
               "ResourceNotFoundException", "Requested resource not found");
}
END_TEST

START_TEST(twenty_indexes)
{
    char defs[4096] = "{\"AttributeName\":\"pk\",\"AttributeType\":\"S\"}", gsis[16384] = "";
    for (int i = 0; i < 20; i++) {
        char d[128], g[512];
        snprintf(d, sizeof d, ",{\"AttributeName\":\"a%d\",\"AttributeType\":\"S\"}", i);
        snprintf(g, sizeof g, "%s{\"IndexName\":\"idx%d\",\"KeySchema\":[{\"AttributeName\":\"a%d\",\"KeyType\":\"HASH\"}],"
                              "\"Projection\":{\"ProjectionType\":\"KEYS_ONLY\"}}", i ? "," : "", i, i);
        strcat(defs, d);
        strcat(gsis, g);
    }
    ok(dc("CreateTable", "{\"TableName\":\"Tbl\",\"KeySchema\":[{\"AttributeName\":\"pk\",\"KeyType\":\"HASH\"}],"
                         "\"AttributeDefinitions\":[%s],\"BillingMode\":\"PAY_PER_REQUEST\",\"GlobalSecondaryIndexes\":[%s]}", defs, gsis));
    static const char *const add = "{\"TableName\":\"Tbl\",\"AttributeDefinitions\":[{\"AttributeName\":\"z\",\"AttributeType\":\"S\"}],"
                                   "\"GlobalSecondaryIndexUpdates\":[{\"Create\":{\"IndexName\":\"zidx\",\"KeySchema\":"
                                   "[{\"AttributeName\":\"z\",\"KeyType\":\"HASH\"}],\"Projection\":{\"ProjectionType\":\"ALL\"}}}]}";
    expect_err(fdbt_call("UpdateTable", add), "LimitExceededException", "Number of global secondary indexes exceeds per-table limit");
    ok(dc("UpdateTable", "{\"TableName\":\"Tbl\",\"GlobalSecondaryIndexUpdates\":[{\"Delete\":{\"IndexName\":\"idx7\"}}]}"));
    ok(fdbt_call("UpdateTable", add));
    fdbt_resp r = dc("DescribeTable", "{\"TableName\":\"Tbl\"}");
    ck_assert_uint_eq(json_object_array_length(fdbt_get(r.json, "Table.GlobalSecondaryIndexes")), 20);
    ck_assert_ptr_null(gsi_of(&r, "Table", "idx7"));
    ck_assert_str_eq(gsi_status(&r, "Table", "zidx"), "ACTIVE");
    fdbt_free(&r);
}
END_TEST

/* Without --delay-transient-statuses (the default) the index is ACTIVE at once. */
START_TEST(immediate_by_default)
{
    base_table("Tbl");
    fdbt_resp r = create_gsi("Tbl");
    ck_assert_int_eq(r.status, 200);
    ck_assert_str_eq(fdbt_str(&r, "TableDescription.TableStatus"), "ACTIVE");
    ck_assert_str_eq(gsi_status(&r, "TableDescription", "gidx"), "ACTIVE");
    ck_assert_int_eq(backfilling(&r, "TableDescription", "gidx"), -1);
    fdbt_free(&r);
    char keys[256];
    query_gidx("Tbl", "v0", keys, sizeof keys);
    ck_assert_str_eq(keys, "k0,k2");
    ok(dc("UpdateTable", "{\"TableName\":\"Tbl\",\"GlobalSecondaryIndexUpdates\":[{\"Delete\":{\"IndexName\":\"gidx\"}}]}"));
    r = dc("DescribeTable", "{\"TableName\":\"Tbl\"}");
    ck_assert_str_eq(fdbt_str(&r, "Table.TableStatus"), "ACTIVE");
    ck_assert_ptr_null(fdbt_get(r.json, "Table.GlobalSecondaryIndexes"));
    fdbt_free(&r);
}
END_TEST

START_TEST(backfill_on_the_fake_clock)
{
    base_table("Tbl");
    ck_assert_int_eq(fakedb_transient_statuses_set(fdbt_db, DELAY_MS), FAKEDB_OK);
    fdbt_resp r = create_gsi("Tbl");
    ck_assert_int_eq(r.status, 200);
    ck_assert_str_eq(fdbt_str(&r, "TableDescription.TableStatus"), "UPDATING");
    ck_assert_str_eq(gsi_status(&r, "TableDescription", "gidx"), "CREATING");
    ck_assert_int_eq(backfilling(&r, "TableDescription", "gidx"), 1);
    fdbt_free(&r);

    /* reads of the index are refused; of the table, served */
    expect_err(dc("Query", "{\"TableName\":\"Tbl\",\"IndexName\":\"gidx\",\"KeyConditionExpression\":\"g = :v\","
                           "\"ExpressionAttributeValues\":{\":v\":{\"S\":\"v0\"}}}"),
               "ValidationException", "Cannot read from backfilling global secondary index: gidx");
    expect_err(dc("Scan", "{\"TableName\":\"Tbl\",\"IndexName\":\"gidx\"}"),
               "ValidationException", "Cannot read from backfilling global secondary index: gidx");
    r = dc("Scan", "{\"TableName\":\"Tbl\",\"Select\":\"COUNT\"}");
    ck_assert_int_eq(r.status, 200);
    ck_assert_int_eq(json_object_get_int(fdbt_get(r.json, "Count")), 6);
    fdbt_free(&r);

    /* no other change meanwhile */
    expect_err(dc("UpdateTable", "{\"TableName\":\"Tbl\",\"BillingMode\":\"PAY_PER_REQUEST\"}"),
               "ResourceInUseException", "Attempt to change a resource which is still in use: Index is being created.");

    /* writes during the backfill land in the index: a new item, a key changed, one removed,
     * one of the wrong type */
    ok(dc("PutItem", "{\"TableName\":\"Tbl\",\"Item\":{\"pk\":{\"S\":\"k9\"},\"g\":{\"S\":\"v0\"}}}"));
    ok(dc("UpdateItem", "{\"TableName\":\"Tbl\",\"Key\":{\"pk\":{\"S\":\"kx\"}},\"UpdateExpression\":\"SET g = :v\","
                        "\"ExpressionAttributeValues\":{\":v\":{\"S\":\"v0\"}}}"));
    ok(dc("UpdateItem", "{\"TableName\":\"Tbl\",\"Key\":{\"pk\":{\"S\":\"k1\"}},\"UpdateExpression\":\"SET g = :v\","
                        "\"ExpressionAttributeValues\":{\":v\":{\"S\":\"v0\"}}}"));
    ok(dc("DeleteItem", "{\"TableName\":\"Tbl\",\"Key\":{\"pk\":{\"S\":\"k2\"}}}"));

    fakedb_clock_advance(fdbt_db, DELAY_MS - 1);
    r = dc("DescribeTable", "{\"TableName\":\"Tbl\"}");
    ck_assert_str_eq(fdbt_str(&r, "Table.TableStatus"), "UPDATING");
    ck_assert_str_eq(gsi_status(&r, "Table", "gidx"), "CREATING");
    fdbt_free(&r);
    expect_err(dc("Scan", "{\"TableName\":\"Tbl\",\"IndexName\":\"gidx\"}"), "ValidationException", NULL);

    fakedb_clock_advance(fdbt_db, 1);
    r = dc("DescribeTable", "{\"TableName\":\"Tbl\"}");
    ck_assert_str_eq(fdbt_str(&r, "Table.TableStatus"), "ACTIVE");
    ck_assert_str_eq(gsi_status(&r, "Table", "gidx"), "ACTIVE");
    ck_assert_int_eq(backfilling(&r, "Table", "gidx"), -1);
    /* k0, k1, k3, k9, kx: kn's g is a number, k2 is gone */
    ck_assert_int_eq(json_object_get_int(fdbt_get(gsi_of(&r, "Table", "gidx"), "ItemCount")), 5);
    fdbt_free(&r);
    char keys[256];
    query_gidx("Tbl", "v0", keys, sizeof keys);
    ck_assert_str_eq(keys, "k0,k1,k9,kx");
    query_gidx("Tbl", "v1", keys, sizeof keys);
    ck_assert_str_eq(keys, "k3");
    r = dc("Scan", "{\"TableName\":\"Tbl\",\"IndexName\":\"gidx\"}");
    ck_assert_int_eq(r.status, 200);
    ck_assert_int_eq(json_object_get_int(fdbt_get(r.json, "Count")), 5);
    fdbt_free(&r);
    /* a write of the wrong type for the index key is refused now, as for any index */
    r = dc("PutItem", "{\"TableName\":\"Tbl\",\"Item\":{\"pk\":{\"S\":\"kb\"},\"g\":{\"B\":\"AA==\"}}}");
    ck_assert_int_eq(r.status, 400);
    fdbt_free(&r);
    /* and the table takes changes again */
    ok(dc("UpdateTable", "{\"TableName\":\"Tbl\",\"BillingMode\":\"PAY_PER_REQUEST\"}"));
}
END_TEST

/* The index answers as one created with the table would. */
START_TEST(backfill_matches_create_table)
{
    base_table("Tbl");
    ck_assert_int_eq(fakedb_transient_statuses_set(fdbt_db, DELAY_MS), FAKEDB_OK);
    ok(dc("CreateTable", "{\"TableName\":\"Ubl\",\"KeySchema\":[{\"AttributeName\":\"pk\",\"KeyType\":\"HASH\"}],"
                         "\"AttributeDefinitions\":[{\"AttributeName\":\"pk\",\"AttributeType\":\"S\"},{\"AttributeName\":\"g\",\"AttributeType\":\"S\"}],"
                         "\"BillingMode\":\"PAY_PER_REQUEST\",\"GlobalSecondaryIndexes\":[" GSI_G("gidx") "]}"));
    fakedb_clock_advance(fdbt_db, DELAY_MS);
    for (int i = 0; i < 4; i++)
        ok(dc("PutItem", "{\"TableName\":\"Ubl\",\"Item\":{\"pk\":{\"S\":\"k%d\"},\"g\":{\"S\":\"v%d\"}}}", i, i % 2));
    ok(dc("PutItem", "{\"TableName\":\"Ubl\",\"Item\":{\"pk\":{\"S\":\"kx\"}}}"));
    ok(create_gsi("Tbl"));
    fakedb_clock_advance(fdbt_db, DELAY_MS);
    for (int v = 0; v < 2; v++) {
        char a[256], b[256], val[8];
        snprintf(val, sizeof val, "v%d", v);
        query_gidx("Tbl", val, a, sizeof a);
        query_gidx("Ubl", val, b, sizeof b);
        ck_assert_str_eq(a, b);
    }
}
END_TEST

START_TEST(delete_on_the_fake_clock)
{
    base_table("Tbl");
    ok(create_gsi("Tbl"));                        /* ACTIVE at once: no delay yet */
    ck_assert_int_eq(fakedb_transient_statuses_set(fdbt_db, DELAY_MS), FAKEDB_OK);
    fdbt_resp r = dc("UpdateTable", "{\"TableName\":\"Tbl\",\"GlobalSecondaryIndexUpdates\":[{\"Delete\":{\"IndexName\":\"gidx\"}}]}");
    ck_assert_int_eq(r.status, 200);
    ck_assert_str_eq(fdbt_str(&r, "TableDescription.TableStatus"), "UPDATING");
    ck_assert_str_eq(gsi_status(&r, "TableDescription", "gidx"), "DELETING");
    ck_assert_int_eq(backfilling(&r, "TableDescription", "gidx"), -1);
    fdbt_free(&r);
    expect_err(dc("Query", "{\"TableName\":\"Tbl\",\"IndexName\":\"gidx\",\"KeyConditionExpression\":\"g = :v\","
                           "\"ExpressionAttributeValues\":{\":v\":{\"S\":\"v0\"}}}"),
               "ValidationException", "The table does not have the specified index: gidx");
    expect_err(create_gsi("Tbl"), "ResourceInUseException", "Attempt to change a resource which is still in use: Index is being deleted.");
    fakedb_clock_advance(fdbt_db, DELAY_MS - 1);
    r = dc("DescribeTable", "{\"TableName\":\"Tbl\"}");
    ck_assert_str_eq(gsi_status(&r, "Table", "gidx"), "DELETING");
    fdbt_free(&r);
    fakedb_clock_advance(fdbt_db, 1);
    r = dc("DescribeTable", "{\"TableName\":\"Tbl\"}");
    ck_assert_str_eq(fdbt_str(&r, "Table.TableStatus"), "ACTIVE");
    ck_assert_ptr_null(fdbt_get(r.json, "Table.GlobalSecondaryIndexes"));
    fdbt_free(&r);
    /* and it may be created again, backfilled anew */
    ok(create_gsi("Tbl"));
    fakedb_clock_advance(fdbt_db, DELAY_MS);
    char keys[256];
    query_gidx("Tbl", "v1", keys, sizeof keys);
    ck_assert_str_eq(keys, "k1,k3");
}
END_TEST

/* DynamoDB lets an index be deleted while it backfills. */
START_TEST(delete_while_backfilling)
{
    base_table("Tbl");
    ck_assert_int_eq(fakedb_transient_statuses_set(fdbt_db, DELAY_MS), FAKEDB_OK);
    ok(create_gsi("Tbl"));
    fakedb_clock_advance(fdbt_db, 1000);
    /* another index may not be deleted meanwhile, this one may */
    expect_err(dc("UpdateTable", "{\"TableName\":\"Tbl\",\"GlobalSecondaryIndexUpdates\":[{\"Delete\":{\"IndexName\":\"other\"}}]}"),
               "ResourceInUseException", "Attempt to change a resource which is still in use: Index is being created.");
    fdbt_resp r = dc("UpdateTable", "{\"TableName\":\"Tbl\",\"GlobalSecondaryIndexUpdates\":[{\"Delete\":{\"IndexName\":\"gidx\"}}]}");
    ck_assert_msg(r.status == 200, "%s", r.body);
    ck_assert_str_eq(gsi_status(&r, "TableDescription", "gidx"), "DELETING");
    ck_assert_int_eq(backfilling(&r, "TableDescription", "gidx"), -1);
    fdbt_free(&r);
    fakedb_clock_advance(fdbt_db, DELAY_MS);
    r = dc("DescribeTable", "{\"TableName\":\"Tbl\"}");
    ck_assert_ptr_null(fdbt_get(r.json, "Table.GlobalSecondaryIndexes"));
    fdbt_free(&r);
    expect_err(dc("Scan", "{\"TableName\":\"Tbl\",\"IndexName\":\"gidx\"}"), "ValidationException",
               "The table does not have the specified index: gidx");
}
END_TEST

START_TEST(index_throughput)
{
    ok(dc("CreateTable", "{\"TableName\":\"Pbl\",\"KeySchema\":[{\"AttributeName\":\"pk\",\"KeyType\":\"HASH\"}],"
                         "\"AttributeDefinitions\":[{\"AttributeName\":\"pk\",\"AttributeType\":\"S\"},{\"AttributeName\":\"g\",\"AttributeType\":\"S\"}],"
                         "\"ProvisionedThroughput\":{\"ReadCapacityUnits\":1,\"WriteCapacityUnits\":1},"
                         "\"GlobalSecondaryIndexes\":[{\"IndexName\":\"gidx\",\"KeySchema\":[{\"AttributeName\":\"g\",\"KeyType\":\"HASH\"}],"
                         "\"Projection\":{\"ProjectionType\":\"ALL\"},\"ProvisionedThroughput\":{\"ReadCapacityUnits\":1,\"WriteCapacityUnits\":1}}]}"));
    fdbt_resp r = dc("UpdateTable", "{\"TableName\":\"Pbl\",\"GlobalSecondaryIndexUpdates\":[{\"Update\":{\"IndexName\":\"gidx\","
                                    "\"ProvisionedThroughput\":{\"ReadCapacityUnits\":7,\"WriteCapacityUnits\":3}}}]}");
    ck_assert_msg(r.status == 200, "%s", r.body);
    json_object *g = gsi_of(&r, "TableDescription", "gidx");
    ck_assert_int_eq(json_object_get_int(fdbt_get(g, "ProvisionedThroughput.ReadCapacityUnits")), 7);
    ck_assert_int_eq(json_object_get_int(fdbt_get(g, "ProvisionedThroughput.WriteCapacityUnits")), 3);
    fdbt_free(&r);
    expect_err(dc("UpdateTable", "{\"TableName\":\"Pbl\",\"GlobalSecondaryIndexUpdates\":[{\"Update\":{\"IndexName\":\"gidx\"}}]}"),
               "ValidationException", "One or more parameter values were invalid: ReadCapacityUnits and WriteCapacityUnits must both be specified when BillingMode is PROVISIONED");
    expect_err(dc("UpdateTable", "{\"TableName\":\"Pbl\",\"GlobalSecondaryIndexUpdates\":[{\"Update\":{\"IndexName\":\"gidx\","
                                 "\"ProvisionedThroughput\":{\"ReadCapacityUnits\":0,\"WriteCapacityUnits\":3}}}]}"),
               "ValidationException", NULL);
    /* a new index of a PROVISIONED table needs its throughput */
    expect_err(dc("UpdateTable", "{\"TableName\":\"Pbl\",\"AttributeDefinitions\":[{\"AttributeName\":\"h\",\"AttributeType\":\"S\"}],"
                                 "\"GlobalSecondaryIndexUpdates\":[{\"Create\":{\"IndexName\":\"hidx\",\"KeySchema\":"
                                 "[{\"AttributeName\":\"h\",\"KeyType\":\"HASH\"}],\"Projection\":{\"ProjectionType\":\"ALL\"}}}]}"),
               "ValidationException", "One or more parameter values were invalid: ReadCapacityUnits and WriteCapacityUnits must both be specified when BillingMode is PROVISIONED");
    /* on demand: no throughput to change */
    base_table("Tbl");
    ok(create_gsi("Tbl"));
    expect_err(dc("UpdateTable", "{\"TableName\":\"Tbl\",\"GlobalSecondaryIndexUpdates\":[{\"Update\":{\"IndexName\":\"gidx\","
                                 "\"ProvisionedThroughput\":{\"ReadCapacityUnits\":2,\"WriteCapacityUnits\":2}}}]}"),
               "ValidationException", "One or more parameter values were invalid: Neither ReadCapacityUnits nor WriteCapacityUnits can be specified when BillingMode is PAY_PER_REQUEST");
}
END_TEST

int main(void)
{
    Suite *s = suite_create("fakedb_gsi_update");
    TCase *tc = tcase_create("gsi_update");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, empty_updates);
    tcase_add_test(tc, one_online_index_per_call);
    tcase_add_test(tc, definitions);
    tcase_add_test(tc, names);
    tcase_add_test(tc, twenty_indexes);
    tcase_add_test(tc, immediate_by_default);
    tcase_add_test(tc, backfill_on_the_fake_clock);
    tcase_add_test(tc, backfill_matches_create_table);
    tcase_add_test(tc, delete_on_the_fake_clock);
    tcase_add_test(tc, delete_while_backfilling);
    tcase_add_test(tc, index_throughput);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
