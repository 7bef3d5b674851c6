/* test_localcompat.c: what DynamoDB Local users expect of fakedb, over HTTP on the fake
 * clock: ARNs with the region of the request's SigV4 credential scope and a settable
 * account id (fakedb_account_id_set), and transient statuses on request
 * (fakedb_transient_statuses_set: CREATING, UPDATING, DELETING for a while). */
#include "fdbt.h"

#include <check.h>

#include "dl_check.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CT "application/x-amz-json-1.0"
#define TABLE_GSI "{\"TableName\":\"Orders\",\"KeySchema\":[{\"AttributeName\":\"pk\",\"KeyType\":\"HASH\"}]," \
    "\"AttributeDefinitions\":[{\"AttributeName\":\"pk\",\"AttributeType\":\"S\"},{\"AttributeName\":\"g\",\"AttributeType\":\"S\"}]," \
    "\"GlobalSecondaryIndexes\":[{\"IndexName\":\"ByG\",\"KeySchema\":[{\"AttributeName\":\"g\",\"KeyType\":\"HASH\"}],\"Projection\":{\"ProjectionType\":\"ALL\"}}]," \
    "\"BillingMode\":\"PAY_PER_REQUEST\"}"
#define ORDERS "{\"TableName\":\"Orders\"}"
#define PUT "{\"TableName\":\"Orders\",\"Item\":{\"pk\":{\"S\":\"o-1\"},\"g\":{\"S\":\"x\"}}}"
#define GET "{\"TableName\":\"Orders\",\"Key\":{\"pk\":{\"S\":\"o-1\"}}}"
#define QUERY_GSI "{\"TableName\":\"Orders\",\"IndexName\":\"ByG\",\"KeyConditionExpression\":\"g = :g\"," \
    "\"ExpressionAttributeValues\":{\":g\":{\"S\":\"x\"}}}"
#define TO_PROVISIONED "{\"TableName\":\"Orders\",\"BillingMode\":\"PROVISIONED\"," \
    "\"ProvisionedThroughput\":{\"ReadCapacityUnits\":1,\"WriteCapacityUnits\":1}}"
#define TO_ON_DEMAND "{\"TableName\":\"Orders\",\"BillingMode\":\"PAY_PER_REQUEST\"}"

static void setup(void)
{
    fdbt_start(NULL);
}

static void teardown(void)
{
    fdbt_stop();
}

/* A call signed (as far as fakedb without --credentials looks) with this credential scope. */
static fdbt_resp call_scoped(const char *scope, const char *op, const char *body)
{
    char target[128], auth[1024];
    snprintf(target, sizeof target, "DynamoDB_20120810.%s", op);
    snprintf(auth, sizeof auth, "AWS4-HMAC-SHA256 Credential=%s, SignedHeaders=host;x-amz-date;x-amz-target, "
             "Signature=0123456789abcdef", scope);
    return fdbt_raw("POST", "/", target, CT, auth, body, strlen(body));
}

/* DescribeTable's TableStatus (or the error type when it fails). */
static void expect_status(const char *want)
{
    fdbt_resp r = fdbt_call("DescribeTable", ORDERS);
    const char *got = r.status == 200 ? fdbt_str(&r, "Table.TableStatus") : fdbt_error(&r);
    ck_assert_msg(got && !strcmp(got, want), "want %s: %ld %s", want, r.status, r.body);
    fdbt_free(&r);
}

static void expect_listed(bool listed)
{
    fdbt_resp r = fdbt_call("ListTables", "{}");
    ck_assert_int_eq(r.status, 200);
    json_object *names = fdbt_get(r.json, "TableNames");
    ck_assert_int_eq(json_object_array_length(names), listed ? 1 : 0);
    if (listed)
        ck_assert_str_eq(json_object_get_string(json_object_array_get_idx(names, 0)), "Orders");
    fdbt_free(&r);
}

START_TEST(arns_name_the_request_region)
{
    fdbt_resp r = call_scoped("AKIDEXAMPLE/20231114/eu-west-3/dynamodb/aws4_request", "CreateTable", TABLE_GSI);
    ck_assert_msg(r.status == 200, "%s", r.body);
    ck_assert_str_eq(fdbt_str(&r, "TableDescription.TableArn"), "arn:aws:dynamodb:eu-west-3:000000000000:table/Orders");
    ck_assert_str_eq(fdbt_str(&r, "TableDescription.GlobalSecondaryIndexes.0.IndexArn"),
                     "arn:aws:dynamodb:eu-west-3:000000000000:table/Orders/index/ByG");
    fdbt_free(&r);
    /* The table's ARN follows each request's region; us-east-1 from fdbt_call's scope. */
    r = fdbt_call("DescribeTable", ORDERS);
    ck_assert_str_eq(fdbt_str(&r, "Table.TableArn"), "arn:aws:dynamodb:us-east-1:000000000000:table/Orders");
    fdbt_free(&r);
    r = call_scoped("AKIDEXAMPLE/20231114/ap-southeast-2/dynamodb/aws4_request", "DescribeTable", ORDERS);
    ck_assert_str_eq(fdbt_str(&r, "Table.TableArn"), "arn:aws:dynamodb:ap-southeast-2:000000000000:table/Orders");
    fdbt_free(&r);
    /* A scope that names no region, or not a region's name, falls back to us-east-1. */
    static const char *const odd[] = {
        "AKIDEXAMPLE/20231114", "AKIDEXAMPLE/20231114//dynamodb/aws4_request",
        "AKIDEXAMPLE/20231114/EU\"WEST/dynamodb/aws4_request",
        "AKIDEXAMPLE/20231114/eu-west-3:000000000000:table/X/dynamodb/aws4_request",
        "AKIDEXAMPLE/20231114/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa/dynamodb/aws4_request",
    };
    for (size_t i = 0; i < sizeof odd / sizeof *odd; i++) {
        r = call_scoped(odd[i], "DescribeTable", ORDERS);
        ck_assert_msg(r.status == 200, "%s: %s", odd[i], r.body);
        ck_assert_msg(!strcmp(fdbt_str(&r, "Table.TableArn"), "arn:aws:dynamodb:us-east-1:000000000000:table/Orders"),
                      "%s: %s", odd[i], r.body);
        fdbt_free(&r);
    }
}
END_TEST

START_TEST(stream_arns_and_records_name_the_region)
{
    ck_assert_int_eq(fakedb_account_id_set(fdbt_db, "123456789012"), FAKEDB_OK);
    fdbt_resp r = call_scoped("AKIDEXAMPLE/20231114/eu-central-1/dynamodb/aws4_request", "CreateTable",
        "{\"TableName\":\"Orders\",\"KeySchema\":[{\"AttributeName\":\"pk\",\"KeyType\":\"HASH\"}],"
        "\"AttributeDefinitions\":[{\"AttributeName\":\"pk\",\"AttributeType\":\"S\"}],\"BillingMode\":\"PAY_PER_REQUEST\","
        "\"StreamSpecification\":{\"StreamEnabled\":true,\"StreamViewType\":\"KEYS_ONLY\"}}");
    ck_assert_msg(r.status == 200, "%s", r.body);
    const char *arn = fdbt_str(&r, "TableDescription.LatestStreamArn");
    ck_assert_ptr_nonnull(arn);
    static const char want[] = "arn:aws:dynamodb:eu-central-1:123456789012:table/Orders/stream/";
    ck_assert_msg(!strncmp(arn, want, strlen(want)), "%s", arn);
    char body[1024], ds[800];
    snprintf(body, sizeof body, "{\"StreamArn\":\"%s\",\"ShardIteratorType\":\"TRIM_HORIZON\",\"ShardId\":\"", arn);
    snprintf(ds, sizeof ds, "{\"StreamArn\":\"%s\"}", arn);
    fdbt_free(&r);
    fdbt_expect_call("PutItem", "{\"TableName\":\"Orders\",\"Item\":{\"pk\":{\"S\":\"o-1\"}}}", 200, "");
    /* The record says the region of the stream. */
    r = fdbt_raw("POST", "/", "DynamoDBStreams_20120810.DescribeStream", CT,
                 "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20231114/eu-central-1/dynamodb/aws4_request, "
                 "SignedHeaders=host, Signature=00", ds, strlen(ds));
    ck_assert_msg(r.status == 200, "%s", r.body);
    const char *shard = fdbt_str(&r, "StreamDescription.Shards.0.ShardId");
    ck_assert_ptr_nonnull(shard);
    size_t n = strlen(body);
    snprintf(body + n, sizeof body - n, "%s\"}", shard);
    fdbt_free(&r);
    r = fdbt_raw("POST", "/", "DynamoDBStreams_20120810.GetShardIterator", CT,
                 "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20231114/eu-central-1/dynamodb/aws4_request, "
                 "SignedHeaders=host, Signature=00", body, strlen(body));
    ck_assert_msg(r.status == 200, "%s", r.body);
    snprintf(body, sizeof body, "{\"ShardIterator\":\"%s\"}", fdbt_str(&r, "ShardIterator"));
    fdbt_free(&r);
    r = fdbt_raw("POST", "/", "DynamoDBStreams_20120810.GetRecords", CT,
                 "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20231114/eu-central-1/dynamodb/aws4_request, "
                 "SignedHeaders=host, Signature=00", body, strlen(body));
    ck_assert_msg(r.status == 200, "%s", r.body);
    ck_assert_str_eq(fdbt_str(&r, "Records.0.awsRegion"), "eu-central-1");
    fdbt_free(&r);
}
END_TEST

START_TEST(account_id_is_settable_and_checked)
{
    fdbt_table("Orders", NULL, NULL);
    ck_assert_int_eq(fakedb_account_id_set(fdbt_db, "123456789012"), FAKEDB_OK);
    fdbt_resp r = fdbt_call("DescribeTable", ORDERS);
    ck_assert_str_eq(fdbt_str(&r, "Table.TableArn"), "arn:aws:dynamodb:us-east-1:123456789012:table/Orders");
    fdbt_free(&r);
    static const char *const bad[] = { "", "12345678901", "1234567890123", "12345678901a", "-12345678901",
                                       "12345678901\n" };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        ck_assert_int_eq(fakedb_account_id_set(fdbt_db, bad[i]), FAKEDB_EINVAL);
    ck_assert_int_eq(fakedb_account_id_set(fdbt_db, NULL), FAKEDB_EINVAL);
    r = fdbt_call("DescribeTable", ORDERS);
    ck_assert_str_eq(fdbt_str(&r, "Table.TableArn"), "arn:aws:dynamodb:us-east-1:123456789012:table/Orders");
    fdbt_free(&r);
    /* TagResource takes the ARN it answers. */
    fdbt_expect_call("TagResource", "{\"ResourceArn\":\"arn:aws:dynamodb:us-east-1:123456789012:table/Orders\","
                                    "\"Tags\":[{\"Key\":\"team\",\"Value\":\"a\"}]}", 200, "");
}
END_TEST

START_TEST(off_by_default)
{
    ck_assert_int_eq(fakedb_transient_statuses_set(fdbt_db, -1), FAKEDB_EINVAL);
    fdbt_resp r = fdbt_call("CreateTable", TABLE_GSI);
    ck_assert_str_eq(fdbt_str(&r, "TableDescription.TableStatus"), "ACTIVE");
    ck_assert_str_eq(fdbt_str(&r, "TableDescription.GlobalSecondaryIndexes.0.IndexStatus"), "ACTIVE");
    fdbt_free(&r);
    fdbt_expect_call("PutItem", PUT, 200, "");
    r = fdbt_call("UpdateTable", TO_PROVISIONED);
    ck_assert_str_eq(fdbt_str(&r, "TableDescription.TableStatus"), "ACTIVE");
    fdbt_free(&r);
    r = fdbt_call("DeleteTable", ORDERS);
    ck_assert_str_eq(fdbt_str(&r, "TableDescription.TableStatus"), "DELETING");
    fdbt_free(&r);
    expect_listed(false);
    expect_status("ResourceNotFoundException");
}
END_TEST

START_TEST(creating_refuses_items_until_its_time)
{
    ck_assert_int_eq(fakedb_transient_statuses_set(fdbt_db, 5000), FAKEDB_OK);
    fdbt_resp r = fdbt_call("CreateTable", TABLE_GSI);
    ck_assert_msg(r.status == 200, "%s", r.body);
    ck_assert_str_eq(fdbt_str(&r, "TableDescription.TableStatus"), "CREATING");
    ck_assert_str_eq(fdbt_str(&r, "TableDescription.GlobalSecondaryIndexes.0.IndexStatus"), "CREATING");
    fdbt_free(&r);
    expect_status("CREATING");
    expect_listed(true);
    /* Items: not found yet, as DynamoDB answers for a table being created. */
    fdbt_expect_call("PutItem", PUT, 400, "ResourceNotFoundException");
    fdbt_expect_call("GetItem", GET, 400, "ResourceNotFoundException");
    fdbt_expect_call("Query", QUERY_GSI, 400, "ResourceNotFoundException");
    fdbt_expect_call("Scan", ORDERS, 400, "ResourceNotFoundException");
    fdbt_expect_call("BatchWriteItem", "{\"RequestItems\":{\"Orders\":[{\"PutRequest\":{\"Item\":{\"pk\":{\"S\":\"a\"}}}}]}}",
                     400, "ResourceNotFoundException");
    fdbt_expect_call("TransactWriteItems", "{\"TransactItems\":[{\"Put\":" PUT "}]}", 400, "ResourceNotFoundException");
    fdbt_expect_call("ExecuteStatement", "{\"Statement\":\"SELECT * FROM \\\"Orders\\\"\"}", 400, "ResourceNotFoundException");
    /* The table itself: still being created. */
    fdbt_expect_call("UpdateTable", TO_PROVISIONED, 400, "ResourceInUseException");
    fdbt_expect_call("DeleteTable", ORDERS, 400, "ResourceInUseException");
    fdbt_expect_call("CreateTable", TABLE_GSI, 400, "ResourceInUseException");
    fakedb_clock_advance(fdbt_db, 4999);
    expect_status("CREATING");
    fdbt_expect_call("PutItem", PUT, 400, "ResourceNotFoundException");
    fakedb_clock_advance(fdbt_db, 1);
    expect_status("ACTIVE");
    r = fdbt_call("DescribeTable", ORDERS);
    ck_assert_str_eq(fdbt_str(&r, "Table.GlobalSecondaryIndexes.0.IndexStatus"), "ACTIVE");
    fdbt_free(&r);
    fdbt_expect_call("PutItem", PUT, 200, "");
    r = fdbt_call("Query", QUERY_GSI);
    ck_assert_int_eq(json_object_get_int(fdbt_get(r.json, "Count")), 1);
    fdbt_free(&r);
}
END_TEST

START_TEST(updating_serves_items_and_refuses_updates)
{
    ck_assert_int_eq(fakedb_transient_statuses_set(fdbt_db, 2000), FAKEDB_OK);
    fdbt_expect_call("CreateTable", TABLE_GSI, 200, "");
    fakedb_clock_advance(fdbt_db, 2000);
    fdbt_resp r = fdbt_call("UpdateTable", TO_PROVISIONED);
    ck_assert_msg(r.status == 200, "%s", r.body);
    ck_assert_str_eq(fdbt_str(&r, "TableDescription.TableStatus"), "UPDATING");
    fdbt_free(&r);
    expect_status("UPDATING");
    fdbt_expect_call("PutItem", PUT, 200, "");
    fdbt_expect_call("GetItem", GET, 200, "");
    r = fdbt_call("UpdateTable", TO_ON_DEMAND);
    ck_assert_int_eq(r.status, 400);
    ck_assert_str_eq(fdbt_error(&r), "ResourceInUseException");
    ck_assert_str_eq(fdbt_message(&r), "Attempt to change a resource which is still in use: Table is being updated: Orders");
    fdbt_free(&r);
    fakedb_clock_advance(fdbt_db, 1999);
    expect_status("UPDATING");
    fakedb_clock_advance(fdbt_db, 1);
    expect_status("ACTIVE");
    fdbt_expect_call("UpdateTable", TO_ON_DEMAND, 200, "");
    /* A table may be deleted while UPDATING. */
    fdbt_expect_call("DeleteTable", ORDERS, 200, "");
}
END_TEST

START_TEST(deleting_is_listed_until_gone)
{
    ck_assert_int_eq(fakedb_transient_statuses_set(fdbt_db, 3000), FAKEDB_OK);
    fdbt_expect_call("CreateTable", TABLE_GSI, 200, "");
    fakedb_clock_advance(fdbt_db, 3000);
    fdbt_expect_call("PutItem", PUT, 200, "");
    fdbt_resp r = fdbt_call("DeleteTable", ORDERS);
    ck_assert_msg(r.status == 200, "%s", r.body);
    ck_assert_str_eq(fdbt_str(&r, "TableDescription.TableStatus"), "DELETING");
    fdbt_free(&r);
    expect_status("DELETING");
    expect_listed(true);
    fdbt_expect_call("GetItem", GET, 400, "ResourceNotFoundException");
    fdbt_expect_call("PutItem", PUT, 400, "ResourceNotFoundException");
    fdbt_expect_call("DeleteTable", ORDERS, 400, "ResourceNotFoundException");
    r = fdbt_call("CreateTable", TABLE_GSI);
    ck_assert_str_eq(fdbt_error(&r), "ResourceInUseException");
    ck_assert_str_eq(fdbt_message(&r), "Table already exists: Orders");
    fdbt_free(&r);
    fakedb_clock_advance(fdbt_db, 2999);
    expect_status("DELETING");
    fakedb_clock_advance(fdbt_db, 1);
    expect_status("ResourceNotFoundException");
    expect_listed(false);
    /* The name is free again, and the new table has none of the old items. */
    fdbt_expect_call("CreateTable", TABLE_GSI, 200, "");
    fakedb_clock_advance(fdbt_db, 3000);
    r = fdbt_call("GetItem", GET);
    ck_assert_int_eq(r.status, 200);
    ck_assert_ptr_null(fdbt_get(r.json, "Item"));
    fdbt_free(&r);
    /* A reset forgets DELETING tables too. */
    fdbt_expect_call("DeleteTable", ORDERS, 200, "");
    expect_listed(true);
    fakedb_reset(fdbt_db);
    expect_listed(false);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("fakedb_localcompat");
    TCase *tc = tcase_create("arns");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, arns_name_the_request_region);
    tcase_add_test(tc, stream_arns_and_records_name_the_region);
    tcase_add_test(tc, account_id_is_settable_and_checked);
    suite_add_tcase(s, tc);
    tc = tcase_create("transient");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, off_by_default);
    tcase_add_test(tc, creating_refuses_items_until_its_time);
    tcase_add_test(tc, updating_serves_items_and_refuses_updates);
    tcase_add_test(tc, deleting_is_listed_until_gone);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return dl_check_run(suite());
}
