/* test_startup.c: the calls tools make at start-up, over HTTP: TagResource,
 * UntagResource and ListTagsOfResource (CreateTable's Tags, AWS's checks of ARNs, keys,
 * values, the alphabet, the reserved aws: prefix and the 50-tag limit, paging),
 * DescribeContinuousBackups and UpdateContinuousBackups on the fake clock,
 * DescribeLimits and DescribeEndpoints; and the errors of issue #11's items 3-4 that
 * came with them. */
#include "fdbt.h"

#include <check.h>

#include "dl_check.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define ARN "arn:aws:dynamodb:us-east-1:000000000000:table/Tagged"

static void setup(void)
{
    fdbt_start(NULL);
    fdbt_table("Tagged", NULL, NULL);
}

static void teardown(void)
{
    fdbt_stop();
}

/* The tags of the table as "k=v,k=v" in the order listed. */
static void tags_of(const char *arn, char *out, size_t cap)
{
    char body[512];
    snprintf(body, sizeof body, "{\"ResourceArn\":\"%s\"}", arn);
    fdbt_resp r = fdbt_call("ListTagsOfResource", body);
    ck_assert_msg(r.status == 200, "%s", r.body);
    json_object *tags = fdbt_get(r.json, "Tags");
    ck_assert_ptr_nonnull(tags);
    size_t o = 0;
    out[0] = 0;
    for (size_t i = 0; i < json_object_array_length(tags); i++) {
        json_object *t = json_object_array_get_idx(tags, i);
        o += (size_t)snprintf(out + o, cap - o, "%s%s=%s", i ? "," : "",
                              json_object_get_string(fdbt_get(t, "Key")), json_object_get_string(fdbt_get(t, "Value")));
        ck_assert_uint_lt(o, cap);
    }
    ck_assert_ptr_null(fdbt_get(r.json, "NextToken"));
    fdbt_free(&r);
}

static void tag_many(int from, int to, int status)
{
    char body[8192];
    size_t o = (size_t)snprintf(body, sizeof body, "{\"ResourceArn\":\"%s\",\"Tags\":[", ARN);
    for (int i = from; i < to; i++)
        o += (size_t)snprintf(body + o, sizeof body - o, "%s{\"Key\":\"k%d\",\"Value\":\"v%d\"}", i > from ? "," : "", i, i);
    snprintf(body + o, sizeof body - o, "]}");
    fdbt_resp r = fdbt_call("TagResource", body);
    ck_assert_msg(r.status == status, "%s", r.body);
    if (status != 200) {
        ck_assert_str_eq(fdbt_error(&r), "ValidationException");
        ck_assert_str_eq(fdbt_message(&r), "Number of Tags exceed the current limit for the provided ResourceArn");
    }
    fdbt_free(&r);
}

static size_t tag_count(void)
{
    fdbt_resp r = fdbt_call("ListTagsOfResource", "{\"ResourceArn\":\"" ARN "\"}");
    size_t n = json_object_array_length(fdbt_get(r.json, "Tags"));
    fdbt_free(&r);
    return n;
}

START_TEST(tags_round_trip)
{
    char got[2048];
    tags_of(ARN, got, sizeof got);
    ck_assert_str_eq(got, "");
    fdbt_expect_ok("TagResource", "{\"ResourceArn\":\"" ARN "\",\"Tags\":[{\"Key\":\"team\",\"Value\":\"core\"},"
                                  "{\"Key\":\"env\",\"Value\":\"ci\"},{\"Key\":\" \",\"Value\":\"\"}]}");
    tags_of(ARN, got, sizeof got);
    ck_assert_str_eq(got, " =,env=ci,team=core");
    /* a key twice in one call is refused whole; tagging a key again replaces its value */
    fdbt_expect_error("TagResource", "{\"ResourceArn\":\"" ARN "\",\"Tags\":[{\"Key\":\"env\",\"Value\":\"prod\"},"
                                     "{\"Key\":\"new\",\"Value\":\"x\"},{\"Key\":\"env\",\"Value\":\"prod2\"}]}",
                      "ValidationException", "Duplicate Tag Keys provided as input: Duplicate Tag Key found env");
    fdbt_expect_ok("TagResource", "{\"ResourceArn\":\"" ARN "\",\"Tags\":[{\"Key\":\"env\",\"Value\":\"prod2\"},"
                                  "{\"Key\":\"a:b/c=d+e-f.g_h\",\"Value\":\"x y\"}]}");
    tags_of(ARN, got, sizeof got);
    ck_assert_str_eq(got, " =,a:b/c=d+e-f.g_h=x y,env=prod2,team=core");
    /* removing a key that is not there is not an error */
    fdbt_expect_ok("UntagResource", "{\"ResourceArn\":\"" ARN "\",\"TagKeys\":[\"env\",\"absent\",\" \"]}");
    tags_of(ARN, got, sizeof got);
    ck_assert_str_eq(got, "a:b/c=d+e-f.g_h=x y,team=core");
    /* any region and account name the table */
    tags_of("arn:aws:dynamodb:eu-west-1:123456789012:table/Tagged", got, sizeof got);
    ck_assert_str_eq(got, "a:b/c=d+e-f.g_h=x y,team=core");
    /* DescribeTable does not show tags; deleting the table takes them with it */
    fdbt_resp r = fdbt_call("DescribeTable", "{\"TableName\":\"Tagged\"}");
    ck_assert_ptr_null(fdbt_get(r.json, "Table.Tags"));
    fdbt_free(&r);
    fdbt_expect_ok("DeleteTable", "{\"TableName\":\"Tagged\"}");
    fdbt_expect_error("ListTagsOfResource", "{\"ResourceArn\":\"" ARN "\"}", "ResourceNotFoundException",
                      "Requested resource not found: ResourcArn: " ARN " not found");
    fdbt_table("Tagged", NULL, NULL);
    tags_of(ARN, got, sizeof got);
    ck_assert_str_eq(got, "");
}
END_TEST

START_TEST(tag_lengths_and_unicode)
{
    char body[4096], key[300], got[4096];
    memset(key, 'x', 128);
    key[128] = 0;
    snprintf(body, sizeof body, "{\"ResourceArn\":\"%s\",\"Tags\":[{\"Key\":\"%s\",\"Value\":\"v\"}]}", ARN, key);
    fdbt_expect_ok("TagResource", body);
    key[128] = 'x';
    key[129] = 0;
    snprintf(body, sizeof body, "{\"ResourceArn\":\"%s\",\"Tags\":[{\"Key\":\"%s\",\"Value\":\"v\"}]}", ARN, key);
    fdbt_expect_error("TagResource", body, "ValidationException", "at 'tags.1.member.key' failed to satisfy constraint: Member must have length less than or equal to 128");
    /* 128 characters of two bytes each: the limit counts characters */
    key[0] = 0;
    for (int i = 0; i < 128; i++)
        strcat(key, "\xd7\x90");
    snprintf(body, sizeof body, "{\"ResourceArn\":\"%s\",\"Tags\":[{\"Key\":\"%s\",\"Value\":\"%s\"}]}", ARN, key, key);
    fdbt_expect_ok("TagResource", body);
    char value[300];
    memset(value, 'v', 256);
    value[256] = 0;
    snprintf(body, sizeof body, "{\"ResourceArn\":\"%s\",\"Tags\":[{\"Key\":\"long\",\"Value\":\"%s\"}]}", ARN, value);
    fdbt_expect_ok("TagResource", body);
    value[256] = 'v';
    value[257] = 0;
    snprintf(body, sizeof body, "{\"ResourceArn\":\"%s\",\"Tags\":[{\"Key\":\"long\",\"Value\":\"%s\"}]}", ARN, value);
    fdbt_expect_error("TagResource", body, "ValidationException", "at 'tags.1.member.value' failed to satisfy constraint: Member must have length less than or equal to 256");
    fdbt_expect_error("TagResource", "{\"ResourceArn\":\"" ARN "\",\"Tags\":[{\"Key\":\"ok\",\"Value\":\"v\"},{\"Key\":\"\",\"Value\":\"v\"}]}",
                      "ValidationException", "at 'tags.2.member.key' failed to satisfy constraint: Member must have length greater than or equal to 1");
    fdbt_expect_error("TagResource", "{\"ResourceArn\":\"" ARN "\",\"Tags\":[{\"Key\":\"dog\"}]}",
                      "ValidationException", "The Tag Value provided is invalid, Value: null");
    fdbt_expect_error("TagResource", "{\"ResourceArn\":\"" ARN "\",\"Tags\":[{\"Value\":\"dog\"}]}",
                      "ValidationException", "Value null at 'tags.1.member.key'");
    fdbt_expect_error("TagResource", "{\"ResourceArn\":\"" ARN "\",\"Tags\":[{\"Key\":7,\"Value\":\"dog\"}]}",
                      "SerializationException", "NUMBER_VALUE cannot be converted to String");
    fdbt_expect_error("TagResource", "{\"ResourceArn\":\"" ARN "\",\"Tags\":[{\"Key\":\"k\",\"Value\":false}]}",
                      "SerializationException", "FALSE_VALUE cannot be converted to String");
    fdbt_expect_error("TagResource", "{\"ResourceArn\":\"" ARN "\",\"Tags\":{\"Key\":\"a\",\"Value\":\"b\"}}",
                      "SerializationException", NULL);
    /* nothing refused was kept */
    tags_of(ARN, got, sizeof got);
    ck_assert_ptr_null(strstr(got, "dog"));
    ck_assert_ptr_nonnull(strstr(got, "long=vvvv"));
}
END_TEST

START_TEST(tag_alphabet_and_reserved_prefix)
{
    const char *bad[] = { "hi!", "d%g", "\\\"q\\\"", "a\\u0000b", "semi;colon", "at@sign", "tab\\tchar" };
    char body[512];
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        snprintf(body, sizeof body, "{\"ResourceArn\":\"%s\",\"Tags\":[{\"Key\":\"%s\",\"Value\":\"dog\"}]}", ARN, bad[i]);
        fdbt_expect_error("TagResource", body, "ValidationException", "The Tag Key provided is invalid, Key: ");
        snprintf(body, sizeof body, "{\"ResourceArn\":\"%s\",\"Tags\":[{\"Key\":\"dog\",\"Value\":\"%s\"}]}", ARN, bad[i]);
        fdbt_expect_error("TagResource", body, "ValidationException", "The Tag Value provided is invalid, Value: ");
    }
    fdbt_expect_error("TagResource", "{\"ResourceArn\":\"" ARN "\",\"Tags\":[{\"Key\":\"aws:cloudformation:stack\",\"Value\":\"s\"}]}",
                      "ValidationException", "Tag Key cannot be prefixed with aws:, Key: aws:cloudformation:stack");
    fdbt_expect_error("TagResource", "{\"ResourceArn\":\"" ARN "\",\"Tags\":[{\"Key\":\"AWS:x\",\"Value\":\"s\"}]}",
                      "ValidationException", "Tag Key cannot be prefixed with aws:, Key: AWS:x");
    fdbt_expect_error("UntagResource", "{\"ResourceArn\":\"" ARN "\",\"TagKeys\":[\"aws:x\"]}",
                      "ValidationException", "Tag Key cannot be prefixed with aws:, Key: aws:x");
    /* aws without the colon, and aws: inside a key, are ordinary */
    fdbt_expect_ok("TagResource", "{\"ResourceArn\":\"" ARN "\",\"Tags\":[{\"Key\":\"awsome\",\"Value\":\"aws:x\"},{\"Key\":\"x:aws:y\",\"Value\":\"\"}]}");
    ck_assert_uint_eq(tag_count(), 2);
}
END_TEST

START_TEST(fifty_tags_at_most)
{
    tag_many(0, 40, 200);
    /* 30..59 brings 20 new keys: 60 in all, refused whole */
    tag_many(30, 60, 400);
    ck_assert_uint_eq(tag_count(), 40);
    /* 30..49 brings 10 new keys: exactly 50 */
    tag_many(30, 50, 200);
    ck_assert_uint_eq(tag_count(), 50);
    /* retagging existing keys at the limit is fine; one more is not */
    tag_many(0, 10, 200);
    tag_many(50, 51, 400);
    fdbt_expect_ok("UntagResource", "{\"ResourceArn\":\"" ARN "\",\"TagKeys\":[\"k0\"]}");
    tag_many(50, 51, 200);
    ck_assert_uint_eq(tag_count(), 50);
}
END_TEST

START_TEST(arn_refusals)
{
    fdbt_expect_error("TagResource", "{\"Tags\":[{\"Key\":\"a\",\"Value\":\"b\"}]}", "ValidationException", "Invalid TableArn");
    fdbt_expect_error("UntagResource", "{\"TagKeys\":[\"a\"]}", "ValidationException", "Invalid TableArn");
    fdbt_expect_error("ListTagsOfResource", "{}", "ValidationException", "Invalid TableArn");
    fdbt_expect_error("ListTagsOfResource", "{\"ResourceArn\":5}", "SerializationException", NULL);
    /* AWS's text for each way an ARN is wrong */
    static const char *const pre = "One or more parameter values were invalid: ";
    const struct { const char *arn, *want; } bad[] = {
        { "I_do_not_exist", "ARNs must start with 'arn:': " },
        { "", "ARNs must start with 'arn:': " },
        { " ", "ARNs must start with 'arn:': " },
        { "arn:not/a/good/format", "Provided Arn is not a DynamoDB resource arn: " },
        { "arn:aws:s3:us-east-1:000000000000:table/Tagged", "Provided Arn is not a DynamoDB resource arn: " },
        { "arn:aws:dynamodb:us-east-1:000000000000:table/Tagged/index/byG", "Invalid resource arn provided, only table or stream is accepted. Provided resource arn: " },
        { "arn:aws:dynamodb:us-east-1:000000000000:backup/x", "Invalid resource arn provided, only table or stream is accepted. Provided resource arn: " },
        { "arn:aws:dynamodb:us-east-1:acct:table/Tagged", "Invalid TableArn: Invalid ResourceArn provided as input " },
        { "arn:aws:dynamodb:us-east-1:000000000000:table/ab", "Invalid TableArn: Invalid ResourceArn provided as input " },
        { "arn:aws:dynamodb:us-east-1:000000000000:table/bad name", "Invalid TableArn: Invalid ResourceArn provided as input " },
        { "arn:aws:dynamodb::000000000000:table/Tagged", "Invalid TableArn: Invalid ResourceArn provided as input " },
    };
    char body[512], want[512];
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        snprintf(want, sizeof want, "%s%s%s", strncmp(bad[i].want, "Invalid TableArn", 16) ? pre : "", bad[i].want, bad[i].arn);
        snprintf(body, sizeof body, "{\"ResourceArn\":\"%s\",\"Tags\":[{\"Key\":\"a\",\"Value\":\"b\"}]}", bad[i].arn);
        fdbt_expect_error("TagResource", body, "ValidationException", want);
        snprintf(body, sizeof body, "{\"ResourceArn\":\"%s\",\"TagKeys\":[\"a\"]}", bad[i].arn);
        fdbt_expect_error("UntagResource", body, "ValidationException", want);
        snprintf(body, sizeof body, "{\"ResourceArn\":\"%s\"}", bad[i].arn);
        fdbt_expect_error("ListTagsOfResource", body, "ValidationException", want);
    }
    /* a stream's ARN: AWS tags streams, fakedb has none */
    fdbt_expect_error("ListTagsOfResource", "{\"ResourceArn\":\"" ARN "/stream/2023-01-01T00:00:00.000\"}", "ResourceNotFoundException", NULL);
    /* a well-formed ARN of no table */
    fdbt_expect_error("TagResource", "{\"ResourceArn\":\"" ARN "x\",\"Tags\":[{\"Key\":\"a\",\"Value\":\"b\"}]}",
                      "ResourceNotFoundException", "Requested resource not found: ResourcArn: " ARN "x not found");
    fdbt_expect_error("UntagResource", "{\"ResourceArn\":\"" ARN "x\",\"TagKeys\":[\"a\"]}", "ResourceNotFoundException", NULL);
    /* the list members */
    fdbt_expect_error("TagResource", "{\"ResourceArn\":\"" ARN "\"}", "ValidationException",
                      "Value null at 'tags' failed to satisfy constraint: Member must not be null");
    fdbt_expect_error("TagResource", "{\"ResourceArn\":\"" ARN "\",\"Tags\":[]}", "ValidationException",
                      "Atleast one Tag needs to be provided as Input.");
    fdbt_expect_error("UntagResource", "{\"ResourceArn\":\"" ARN "\"}", "ValidationException",
                      "Value null at 'tagKeys' failed to satisfy constraint: Member must not be null");
    fdbt_expect_error("UntagResource", "{\"ResourceArn\":\"" ARN "\",\"TagKeys\":[]}", "ValidationException",
                      "Atleast one Tag Key needs to be provided as Input.");
    fdbt_expect_error("UntagResource", "{\"ResourceArn\":\"" ARN "\",\"TagKeys\":[\"\"]}", "ValidationException",
                      "at 'tagKeys.1.member' failed to satisfy constraint: Member must have length greater than or equal to 1");
    fdbt_expect_error("UntagResource", "{\"ResourceArn\":\"" ARN "\",\"TagKeys\":\"a\"}", "SerializationException", NULL);
}
END_TEST

START_TEST(create_table_tags)
{
    fdbt_expect_ok("CreateTable", "{\"TableName\":\"Born\",\"KeySchema\":[{\"AttributeName\":\"pk\",\"KeyType\":\"HASH\"}],"
                                  "\"AttributeDefinitions\":[{\"AttributeName\":\"pk\",\"AttributeType\":\"S\"}],\"BillingMode\":\"PAY_PER_REQUEST\","
                                  "\"Tags\":[{\"Key\":\"str1\",\"Value\":\"str2\"},{\"Key\":\"kkk\",\"Value\":\"vv\"}]}");
    char got[256];
    tags_of("arn:aws:dynamodb:us-east-1:000000000000:table/Born", got, sizeof got);
    ck_assert_str_eq(got, "kkk=vv,str1=str2");
    /* 51 tags, a bad key or a reserved one: no table */
    char body[8192];
    size_t o = (size_t)snprintf(body, sizeof body, "{\"TableName\":\"Refused\",\"KeySchema\":[{\"AttributeName\":\"pk\",\"KeyType\":\"HASH\"}],"
                                                   "\"AttributeDefinitions\":[{\"AttributeName\":\"pk\",\"AttributeType\":\"S\"}],\"BillingMode\":\"PAY_PER_REQUEST\",\"Tags\":[");
    for (int i = 0; i < 51; i++)
        o += (size_t)snprintf(body + o, sizeof body - o, "%s{\"Key\":\"%d\",\"Value\":\"%d\"}", i ? "," : "", i, i);
    snprintf(body + o, sizeof body - o, "]}");
    fdbt_expect_error("CreateTable", body, "ValidationException", "Number of Tags exceed the current limit for the provided ResourceArn");
    fdbt_expect_error("CreateTable", "{\"TableName\":\"Refused\",\"KeySchema\":[{\"AttributeName\":\"pk\",\"KeyType\":\"HASH\"}],"
                                     "\"AttributeDefinitions\":[{\"AttributeName\":\"pk\",\"AttributeType\":\"S\"}],\"BillingMode\":\"PAY_PER_REQUEST\","
                                     "\"Tags\":[{\"Key\":\"aws:x\",\"Value\":\"v\"}]}", "ValidationException", "Tag Key cannot be prefixed with aws:");
    fdbt_expect_error("CreateTable", "{\"TableName\":\"Refused\",\"KeySchema\":[{\"AttributeName\":\"pk\",\"KeyType\":\"HASH\"}],"
                                     "\"AttributeDefinitions\":[{\"AttributeName\":\"pk\",\"AttributeType\":\"S\"}],\"BillingMode\":\"PAY_PER_REQUEST\","
                                     "\"Tags\":[{\"Key\":\"k\",\"Value\":\"1\"},{\"Key\":\"k\",\"Value\":\"2\"}]}", "ValidationException",
                      "Duplicate Tag Keys provided as input: Duplicate Tag Key found k");
    fdbt_expect_error("CreateTable", "{\"TableName\":\"Refused\",\"KeySchema\":[{\"AttributeName\":\"pk\",\"KeyType\":\"HASH\"}],"
                                     "\"AttributeDefinitions\":[{\"AttributeName\":\"pk\",\"AttributeType\":\"S\"}],\"BillingMode\":\"PAY_PER_REQUEST\","
                                     "\"Tags\":[{\"Key\":\"k\"}]}", "ValidationException", "The Tag Value provided is invalid, Value: null");
    fdbt_expect_error("DescribeTable", "{\"TableName\":\"Refused\"}", "ResourceNotFoundException", NULL);
}
END_TEST

START_TEST(list_tags_next_token)
{
    fdbt_expect_ok("TagResource", "{\"ResourceArn\":\"" ARN "\",\"Tags\":[{\"Key\":\"c\",\"Value\":\"3\"},{\"Key\":\"a\",\"Value\":\"1\"},{\"Key\":\"b\",\"Value\":\"2\"}]}");
    /* every tag fits one page; a NextToken (the last key of a page) resumes after it */
    fdbt_resp r = fdbt_call("ListTagsOfResource", "{\"ResourceArn\":\"" ARN "\",\"NextToken\":\"a\"}");
    ck_assert_int_eq(r.status, 200);
    ck_assert_uint_eq(json_object_array_length(fdbt_get(r.json, "Tags")), 2);
    ck_assert_str_eq(fdbt_str(&r, "Tags.0.Key"), "b");
    ck_assert_ptr_null(fdbt_get(r.json, "NextToken"));
    fdbt_free(&r);
    r = fdbt_call("ListTagsOfResource", "{\"ResourceArn\":\"" ARN "\",\"NextToken\":\"c\"}");
    ck_assert_uint_eq(json_object_array_length(fdbt_get(r.json, "Tags")), 0);
    fdbt_free(&r);
    fdbt_expect_error("ListTagsOfResource", "{\"ResourceArn\":\"" ARN "\",\"NextToken\":[]}", "SerializationException", NULL);
}
END_TEST

START_TEST(tags_survive_restart)
{
    fdbt_stop();
    char dir[] = "/tmp/fdbt_startupXXXXXX", path[64];
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/db", dir);
    fdbt_start(path);
    fdbt_table("Tagged", NULL, NULL);
    fdbt_expect_ok("TagResource", "{\"ResourceArn\":\"" ARN "\",\"Tags\":[{\"Key\":\"keep\",\"Value\":\"me\"}]}");
    fdbt_expect_ok("UpdateContinuousBackups", "{\"TableName\":\"Tagged\",\"PointInTimeRecoverySpecification\":{\"PointInTimeRecoveryEnabled\":true}}");
    fdbt_stop();
    fdbt_start(path);
    char got[128];
    tags_of(ARN, got, sizeof got);
    ck_assert_str_eq(got, "keep=me");
    fdbt_resp r = fdbt_call("DescribeContinuousBackups", "{\"TableName\":\"Tagged\"}");
    ck_assert_str_eq(fdbt_str(&r, "ContinuousBackupsDescription.PointInTimeRecoveryDescription.PointInTimeRecoveryStatus"), "ENABLED");
    fdbt_free(&r);
    /* UpdateTable keeps them too */
    fdbt_expect_ok("UpdateTable", "{\"TableName\":\"Tagged\",\"BillingMode\":\"PROVISIONED\",\"ProvisionedThroughput\":{\"ReadCapacityUnits\":1,\"WriteCapacityUnits\":1}}");
    tags_of(ARN, got, sizeof got);
    ck_assert_str_eq(got, "keep=me");
    fdbt_stop();
    fdbt_remove_dir(dir);
    fdbt_start(NULL);   /* for teardown */
}
END_TEST

START_TEST(continuous_backups)
{
    const char *pd = "ContinuousBackupsDescription.PointInTimeRecoveryDescription";
    char path[160];
    fdbt_resp r = fdbt_call("DescribeContinuousBackups", "{\"TableName\":\"Tagged\"}");
    ck_assert_int_eq(r.status, 200);
    ck_assert_str_eq(fdbt_str(&r, "ContinuousBackupsDescription.ContinuousBackupsStatus"), "ENABLED");
    snprintf(path, sizeof path, "%s.PointInTimeRecoveryStatus", pd);
    ck_assert_str_eq(fdbt_str(&r, path), "DISABLED");
    ck_assert_int_eq(json_object_object_length(fdbt_get(r.json, pd)), 1);
    fdbt_free(&r);

    r = fdbt_call("UpdateContinuousBackups", "{\"TableName\":\"Tagged\",\"PointInTimeRecoverySpecification\":{\"PointInTimeRecoveryEnabled\":true}}");
    ck_assert_msg(r.status == 200, "%s", r.body);
    ck_assert_str_eq(fdbt_str(&r, path), "ENABLED");
    snprintf(path, sizeof path, "%s.EarliestRestorableDateTime", pd);
    ck_assert_double_eq_tol(json_object_get_double(fdbt_get(r.json, path)), 1700000000.0, 0.001);
    snprintf(path, sizeof path, "%s.RecoveryPeriodInDays", pd);
    ck_assert_int_eq(json_object_get_int(fdbt_get(r.json, path)), 35);
    fdbt_free(&r);

    /* an hour on: the latest restorable time trails the clock by five minutes */
    ck_assert_int_eq(fakedb_clock_advance(fdbt_db, 3600 * 1000), 0);
    r = fdbt_call("DescribeContinuousBackups", "{\"TableName\":\"" ARN "\"}");
    ck_assert_msg(r.status == 200, "%s", r.body);
    snprintf(path, sizeof path, "%s.LatestRestorableDateTime", pd);
    ck_assert_double_eq_tol(json_object_get_double(fdbt_get(r.json, path)), 1700000000.0 + 3300, 0.001);
    snprintf(path, sizeof path, "%s.EarliestRestorableDateTime", pd);
    ck_assert_double_eq_tol(json_object_get_double(fdbt_get(r.json, path)), 1700000000.0, 0.001);
    fdbt_free(&r);

    /* a shorter period: after 8 days the window starts 7 days back */
    fdbt_expect_ok("UpdateContinuousBackups", "{\"TableName\":\"Tagged\",\"PointInTimeRecoverySpecification\":{\"PointInTimeRecoveryEnabled\":true,\"RecoveryPeriodInDays\":7}}");
    ck_assert_int_eq(fakedb_clock_advance(fdbt_db, 8LL * 86400 * 1000), 0);
    r = fdbt_call("DescribeContinuousBackups", "{\"TableName\":\"Tagged\"}");
    ck_assert_double_eq_tol(json_object_get_double(fdbt_get(r.json, path)), 1700000000.0 + 3600 + 86400, 0.001);
    snprintf(path, sizeof path, "%s.RecoveryPeriodInDays", pd);
    ck_assert_int_eq(json_object_get_int(fdbt_get(r.json, path)), 7);
    fdbt_free(&r);

    r = fdbt_call("UpdateContinuousBackups", "{\"TableName\":\"Tagged\",\"PointInTimeRecoverySpecification\":{\"PointInTimeRecoveryEnabled\":false}}");
    snprintf(path, sizeof path, "%s.PointInTimeRecoveryStatus", pd);
    ck_assert_str_eq(fdbt_str(&r, path), "DISABLED");
    fdbt_free(&r);
    r = fdbt_call("DescribeContinuousBackups", "{\"TableName\":\"Tagged\"}");
    ck_assert_str_eq(fdbt_str(&r, path), "DISABLED");
    fdbt_free(&r);
}
END_TEST

START_TEST(continuous_backups_refusals)
{
    fdbt_expect_error("DescribeContinuousBackups", "{\"TableName\":\"Nope\"}", "TableNotFoundException", "Table not found: Nope");
    fdbt_expect_error("DescribeContinuousBackups", "{}", "ValidationException", "Value null at 'tableName'");
    fdbt_expect_error("DescribeContinuousBackups", "{\"TableName\":\"arn:aws:dynamodb:us-east-1:000000000000:table/Nope\"}", "TableNotFoundException", NULL);
    fdbt_expect_error("UpdateContinuousBackups", "{\"TableName\":\"Nope\",\"PointInTimeRecoverySpecification\":{\"PointInTimeRecoveryEnabled\":true}}",
                      "TableNotFoundException", "Table not found: Nope");
    fdbt_expect_error("UpdateContinuousBackups", "{\"TableName\":\"Tagged\"}", "ValidationException",
                      "Value null at 'pointInTimeRecoverySpecification' failed to satisfy constraint: Member must not be null");
    fdbt_expect_error("UpdateContinuousBackups", "{\"TableName\":\"Tagged\",\"PointInTimeRecoverySpecification\":{}}", "ValidationException",
                      "Value null at 'pointInTimeRecoverySpecification.pointInTimeRecoveryEnabled'");
    fdbt_expect_error("UpdateContinuousBackups", "{\"TableName\":\"Tagged\",\"PointInTimeRecoverySpecification\":{\"PointInTimeRecoveryEnabled\":\"yes\"}}",
                      "SerializationException", "STRING_VALUE cannot be converted to Boolean");
    fdbt_expect_error("UpdateContinuousBackups", "{\"TableName\":\"Tagged\",\"PointInTimeRecoverySpecification\":{\"PointInTimeRecoveryEnabled\":true,\"RecoveryPeriodInDays\":36}}",
                      "ValidationException", "Member must have value less than or equal to 35");
    fdbt_expect_error("UpdateContinuousBackups", "{\"TableName\":\"Tagged\",\"PointInTimeRecoverySpecification\":{\"PointInTimeRecoveryEnabled\":true,\"RecoveryPeriodInDays\":0}}",
                      "ValidationException", "Member must have value greater than or equal to 1");
    fdbt_expect_error("UpdateContinuousBackups", "{\"TableName\":\"Tagged\",\"PointInTimeRecoverySpecification\":{\"PointInTimeRecoveryEnabled\":true,\"RecoveryPeriodInDays\":1.5}}",
                      "SerializationException", NULL);
    fdbt_expect_error("UpdateContinuousBackups", "{\"TableName\":\"Tagged\",\"PointInTimeRecoverySpecification\":[]}", "SerializationException", NULL);
    fdbt_expect_error("UpdateContinuousBackups", "{\"TableName\":\"Tagged\",\"PointInTimeRecoverySpecification\":{\"PointInTimeRecoveryEnabled\":false,\"RecoveryPeriodInDays\":7}}",
                      "ValidationException", "Invalid Request: Cannot specify RecoveryPeriodInDays when disabling point-in-time recovery.");
    /* nothing refused changed the setting */
    fdbt_resp r = fdbt_call("DescribeContinuousBackups", "{\"TableName\":\"Tagged\"}");
    ck_assert_str_eq(fdbt_str(&r, "ContinuousBackupsDescription.PointInTimeRecoveryDescription.PointInTimeRecoveryStatus"), "DISABLED");
    fdbt_free(&r);
}
END_TEST

START_TEST(limits_and_endpoints)
{
    fdbt_resp r = fdbt_call("DescribeLimits", "{}");
    ck_assert_int_eq(r.status, 200);
    ck_assert_int_eq(json_object_get_int(fdbt_get(r.json, "AccountMaxReadCapacityUnits")), 80000);
    ck_assert_int_eq(json_object_get_int(fdbt_get(r.json, "AccountMaxWriteCapacityUnits")), 80000);
    ck_assert_int_eq(json_object_get_int(fdbt_get(r.json, "TableMaxReadCapacityUnits")), 40000);
    ck_assert_int_eq(json_object_get_int(fdbt_get(r.json, "TableMaxWriteCapacityUnits")), 40000);
    fdbt_free(&r);
    r = fdbt_call("DescribeEndpoints", "{}");
    ck_assert_int_eq(r.status, 200);
    json_object *eps = fdbt_get(r.json, "Endpoints");
    ck_assert_uint_eq(json_object_array_length(eps), 1);
    /* the address the client used, so that discovery stays on fakedb */
    const char *ep = fakedb_endpoint(fdbt_db);
    ck_assert_str_eq(fdbt_str(&r, "Endpoints.0.Address"), strstr(ep, "://") + 3);
    ck_assert_int_eq(json_object_get_int(fdbt_get(r.json, "Endpoints.0.CachePeriodInMinutes")), 1440);
    fdbt_free(&r);
    /* a body that is not JSON is refused before the operation */
    r = fdbt_call("DescribeLimits", "{");
    ck_assert_str_eq(fdbt_error(&r), "SerializationException");
    fdbt_free(&r);
}
END_TEST

/* ---- issue #11, items 3-4: AWS's classes and texts ---- */

#define CT_PK "{\"TableName\":\"Keys\",\"BillingMode\":\"PAY_PER_REQUEST\","

START_TEST(table_spec_texts)
{
    /* AttributeDefinitions naming one attribute twice */
    fdbt_expect_error("CreateTable", CT_PK "\"KeySchema\":[{\"AttributeName\":\"pk\",\"KeyType\":\"HASH\"}],"
                                     "\"AttributeDefinitions\":[{\"AttributeName\":\"pk\",\"AttributeType\":\"S\"},{\"AttributeName\":\"pk\",\"AttributeType\":\"S\"}]}",
                      "ValidationException", NULL);
    fdbt_resp r = fdbt_call("CreateTable", CT_PK "\"KeySchema\":[{\"AttributeName\":\"pk\",\"KeyType\":\"HASH\"}],"
                                           "\"AttributeDefinitions\":[{\"AttributeName\":\"pk\",\"AttributeType\":\"S\"},{\"AttributeName\":\"pk\",\"AttributeType\":\"N\"}]}");
    ck_assert_str_eq(fdbt_message(&r), "Attribute Name is duplicated: pk");
    fdbt_free(&r);
    /* a key schema naming one attribute as hash and range, the table's or an LSI's */
    r = fdbt_call("CreateTable", CT_PK "\"KeySchema\":[{\"AttributeName\":\"pk\",\"KeyType\":\"HASH\"},{\"AttributeName\":\"pk\",\"KeyType\":\"RANGE\"}],"
                                 "\"AttributeDefinitions\":[{\"AttributeName\":\"pk\",\"AttributeType\":\"S\"}]}");
    ck_assert_str_eq(fdbt_message(&r), "Both the Hash Key and the Range Key element in the KeySchema have the same name");
    fdbt_free(&r);
    r = fdbt_call("CreateTable", CT_PK "\"KeySchema\":[{\"AttributeName\":\"pk\",\"KeyType\":\"HASH\"},{\"AttributeName\":\"sk\",\"KeyType\":\"RANGE\"}],"
                                 "\"AttributeDefinitions\":[{\"AttributeName\":\"pk\",\"AttributeType\":\"S\"},{\"AttributeName\":\"sk\",\"AttributeType\":\"S\"}],"
                                 "\"LocalSecondaryIndexes\":[{\"IndexName\":\"same\",\"KeySchema\":[{\"AttributeName\":\"pk\",\"KeyType\":\"HASH\"},"
                                 "{\"AttributeName\":\"pk\",\"KeyType\":\"RANGE\"}],\"Projection\":{\"ProjectionType\":\"ALL\"}}]}");
    ck_assert_str_eq(fdbt_error(&r), "ValidationException");
    ck_assert_str_eq(fdbt_message(&r), "Both the Hash Key and the Range Key element in the KeySchema have the same name");
    fdbt_free(&r);
    fdbt_expect_error("DescribeTable", "{\"TableName\":\"Keys\"}", "ResourceNotFoundException", NULL);

    /* DeleteTable answers DELETING with AWS's short description (issue #25) */
    fdbt_table("Gone", "sk", "N");
    r = fdbt_call("PutItem", "{\"TableName\":\"Gone\",\"Item\":{\"pk\":{\"S\":\"a\"},\"sk\":{\"N\":\"1\"}}}");
    ck_assert_int_eq(r.status, 200);
    fdbt_free(&r);
    r = fdbt_call("DeleteTable", "{\"TableName\":\"Gone\"}");
    ck_assert_int_eq(r.status, 200);
    ck_assert_str_eq(fdbt_str(&r, "TableDescription.TableStatus"), "DELETING");
    ck_assert_str_eq(fdbt_str(&r, "TableDescription.TableName"), "Gone");
    ck_assert_int_eq(json_object_get_int(fdbt_get(r.json, "TableDescription.ItemCount")), 1);
    ck_assert_ptr_nonnull(fdbt_get(r.json, "TableDescription.TableSizeBytes"));
    ck_assert_ptr_nonnull(fdbt_get(r.json, "TableDescription.TableArn"));
    ck_assert_ptr_nonnull(fdbt_get(r.json, "TableDescription.TableId"));
    ck_assert_ptr_nonnull(fdbt_get(r.json, "TableDescription.ProvisionedThroughput.NumberOfDecreasesToday"));
    ck_assert_ptr_null(fdbt_get(r.json, "TableDescription.ProvisionedThroughput.LastIncreaseDateTime"));
    ck_assert_ptr_null(fdbt_get(r.json, "TableDescription.KeySchema"));
    ck_assert_ptr_null(fdbt_get(r.json, "TableDescription.AttributeDefinitions"));
    ck_assert_ptr_null(fdbt_get(r.json, "TableDescription.CreationDateTime"));
    ck_assert_int_eq(json_object_object_length(fdbt_get(r.json, "TableDescription")), 7);
    fdbt_free(&r);
}
END_TEST

START_TEST(select_and_start_key_texts)
{
    fdbt_table("Rows", "sk", "S");
    fdbt_expect_ok("PutItem", "{\"TableName\":\"Rows\",\"Item\":{\"pk\":{\"S\":\"a\"},\"sk\":{\"S\":\"1\"}}}");
    const char *q = "{\"TableName\":\"Rows\",\"KeyConditionExpression\":\"pk = :p\",\"ExpressionAttributeValues\":{\":p\":{\"S\":\"a\"}},";
    char body[512];
    snprintf(body, sizeof body, "%s\"Select\":\"COUNT\",\"ProjectionExpression\":\"sk\"}", q);
    fdbt_resp r = fdbt_call("Query", body);
    ck_assert_str_eq(fdbt_message(&r), "1 validation error detected: Cannot specify the ProjectionExpression when choosing to get only the Count");
    fdbt_free(&r);
    r = fdbt_call("Scan", "{\"TableName\":\"Rows\",\"Select\":\"ALL_ATTRIBUTES\",\"ProjectionExpression\":\"sk\"}");
    ck_assert_str_eq(fdbt_message(&r), "1 validation error detected: Cannot specify the ProjectionExpression when choosing to get ALL_ATTRIBUTES");
    fdbt_free(&r);
    /* both rules broken: the projection's is reported */
    r = fdbt_call("Scan", "{\"TableName\":\"Rows\",\"Select\":\"ALL_PROJECTED_ATTRIBUTES\",\"ProjectionExpression\":\"sk\"}");
    ck_assert_str_eq(fdbt_message(&r), "1 validation error detected: Cannot specify the ProjectionExpression when choosing to get ALL_PROJECTED_ATTRIBUTES");
    fdbt_free(&r);
    r = fdbt_call("Scan", "{\"TableName\":\"Rows\",\"Select\":\"ALL_PROJECTED_ATTRIBUTES\"}");
    ck_assert_str_eq(fdbt_message(&r), "ALL_PROJECTED_ATTRIBUTES can be used only when Querying using an IndexName");
    fdbt_free(&r);
    snprintf(body, sizeof body, "%s\"Select\":\"SPECIFIC_ATTRIBUTES\"}", q);
    r = fdbt_call("Query", body);
    ck_assert_str_eq(fdbt_error(&r), "ValidationException");
    ck_assert_ptr_nonnull(strstr(fdbt_message(&r), "Must specify the AttributesToGet or ProjectionExpression when choosing to get SPECIFIC_ATTRIBUTES"));
    fdbt_free(&r);
    snprintf(body, sizeof body, "%s\"Select\":\"SPECIFIC_ATTRIBUTES\",\"ProjectionExpression\":\"sk\"}", q);
    fdbt_expect_ok("Query", body);

    /* ExclusiveStartKey: not the table's key, or outside the key condition */
    r = fdbt_call("Scan", "{\"TableName\":\"Rows\",\"ExclusiveStartKey\":{\"pk\":{\"S\":\"a\"}}}");
    ck_assert_str_eq(fdbt_message(&r), "The provided starting key is invalid: The provided key element does not match the schema");
    fdbt_free(&r);
    r = fdbt_call("Scan", "{\"TableName\":\"Rows\",\"ExclusiveStartKey\":{\"pk\":{\"N\":\"1\"},\"sk\":{\"S\":\"1\"}}}");
    ck_assert_str_eq(fdbt_message(&r), "The provided starting key is invalid: The provided key element does not match the schema");
    fdbt_free(&r);
    snprintf(body, sizeof body, "%s\"ExclusiveStartKey\":{\"pk\":{\"S\":\"b\"},\"sk\":{\"S\":\"1\"}}}", q);
    r = fdbt_call("Query", body);
    ck_assert_str_eq(fdbt_message(&r), "The provided starting key is outside query boundaries based on provided conditions");
    fdbt_free(&r);
    /* with a sort key condition: the sort key is checked first, then the partition */
    const char *rq = "{\"TableName\":\"Rows\",\"KeyConditionExpression\":\"pk = :p AND sk BETWEEN :a AND :b\","
                     "\"ExpressionAttributeValues\":{\":p\":{\"S\":\"a\"},\":a\":{\"S\":\"1\"},\":b\":{\"S\":\"5\"}},";
    snprintf(body, sizeof body, "%s\"ExclusiveStartKey\":{\"pk\":{\"S\":\"a\"},\"sk\":{\"S\":\"9\"}}}", rq);
    r = fdbt_call("Query", body);
    ck_assert_str_eq(fdbt_message(&r), "The provided starting key does not match the range key predicate");
    fdbt_free(&r);
    snprintf(body, sizeof body, "%s\"ExclusiveStartKey\":{\"pk\":{\"S\":\"b\"},\"sk\":{\"S\":\"9\"}}}", rq);
    r = fdbt_call("Query", body);
    ck_assert_str_eq(fdbt_message(&r), "The provided starting key does not match the range key predicate");
    fdbt_free(&r);
    snprintf(body, sizeof body, "%s\"ExclusiveStartKey\":{\"pk\":{\"S\":\"b\"},\"sk\":{\"S\":\"3\"}}}", rq);
    r = fdbt_call("Query", body);
    ck_assert_str_eq(fdbt_message(&r), "The query can return at most one row and cannot be restarted");
    fdbt_free(&r);
    /* inside the range, at either bound, pages on */
    const char *inside[] = { "1", "3", "5" };
    for (size_t i = 0; i < 3; i++) {
        snprintf(body, sizeof body, "%s\"ExclusiveStartKey\":{\"pk\":{\"S\":\"a\"},\"sk\":{\"S\":\"%s\"}}}", rq, inside[i]);
        fdbt_expect_ok("Query", body);
    }
    const struct { const char *cond, *v, *esk; bool ok; } ops[] = {
        { "sk < :v", "3", "2", true }, { "sk < :v", "3", "3", false }, { "sk <= :v", "3", "3", true },
        { "sk > :v", "3", "3", false }, { "sk > :v", "3", "4", true }, { "sk >= :v", "3", "3", true },
        { "sk = :v", "3", "3", true }, { "sk = :v", "3", "4", false },
        { "begins_with(sk, :v)", "ab", "abz", true }, { "begins_with(sk, :v)", "ab", "ac", false },
        { "begins_with(sk, :v)", "ab", "a", false },
    };
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
        snprintf(body, sizeof body, "{\"TableName\":\"Rows\",\"KeyConditionExpression\":\"pk = :p AND %s\","
                 "\"ExpressionAttributeValues\":{\":p\":{\"S\":\"a\"},\":v\":{\"S\":\"%s\"}},"
                 "\"ExclusiveStartKey\":{\"pk\":{\"S\":\"a\"},\"sk\":{\"S\":\"%s\"}}}", ops[i].cond, ops[i].v, ops[i].esk);
        r = fdbt_call("Query", body);
        ck_assert_msg((r.status == 200) == ops[i].ok, "%s with %s: %s", ops[i].cond, ops[i].esk, r.body);
        fdbt_free(&r);
    }
}
END_TEST

START_TEST(request_class_texts)
{
    /* UpdateTimeToLive with an Enabled that is not a boolean */
    fdbt_expect_error("UpdateTimeToLive", "{\"TableName\":\"Tagged\",\"TimeToLiveSpecification\":{\"AttributeName\":\"exp\",\"Enabled\":\"yes\"}}",
                      "SerializationException", "STRING_VALUE cannot be converted to Boolean");
    fdbt_expect_error("UpdateTimeToLive", "{\"TableName\":\"Tagged\",\"TimeToLiveSpecification\":{\"AttributeName\":\"exp\",\"Enabled\":1}}",
                      "SerializationException", "NUMBER_VALUE cannot be converted to Boolean");
    /* an update naming a missing operand fails the whole request and writes nothing */
    fdbt_expect_ok("PutItem", "{\"TableName\":\"Tagged\",\"Item\":{\"pk\":{\"S\":\"u\"},\"n\":{\"N\":\"1\"}}}");
    fdbt_expect_error("UpdateItem", "{\"TableName\":\"Tagged\",\"Key\":{\"pk\":{\"S\":\"u\"}},\"UpdateExpression\":\"SET n = :one, m = absent + :one\","
                                    "\"ExpressionAttributeValues\":{\":one\":{\"N\":\"1\"}}}",
                      "ValidationException", "The provided expression refers to an attribute that does not exist in the item");
    fdbt_resp r = fdbt_call("GetItem", "{\"TableName\":\"Tagged\",\"Key\":{\"pk\":{\"S\":\"u\"}}}");
    ck_assert_str_eq(fdbt_str(&r, "Item.n.N"), "1");
    ck_assert_ptr_null(fdbt_get(r.json, "Item.m"));
    fdbt_free(&r);
    /* an invalid number */
    fdbt_expect_error("PutItem", "{\"TableName\":\"Tagged\",\"Item\":{\"pk\":{\"S\":\"v\"},\"n\":{\"N\":\"12abc\"}}}",
                      "ValidationException", "A value provided cannot be converted into a number");
    /* a body that is not JSON: the __type alone, as AWS answers */
    const char *bad[] = { "{not json", "{\"TableName\":", "{} trailing" };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        r = fdbt_call("DescribeTable", bad[i]);
        ck_assert_int_eq(r.status, 400);
        ck_assert_str_eq(r.body, "{\"__type\":\"com.amazon.coral.service#SerializationException\"}");
        fdbt_free(&r);
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("fakedb_startup");
    TCase *tc = tcase_create("startup");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, tags_round_trip);
    tcase_add_test(tc, tag_lengths_and_unicode);
    tcase_add_test(tc, tag_alphabet_and_reserved_prefix);
    tcase_add_test(tc, fifty_tags_at_most);
    tcase_add_test(tc, arn_refusals);
    tcase_add_test(tc, create_table_tags);
    tcase_add_test(tc, list_tags_next_token);
    tcase_add_test(tc, tags_survive_restart);
    tcase_add_test(tc, continuous_backups);
    tcase_add_test(tc, continuous_backups_refusals);
    tcase_add_test(tc, limits_and_endpoints);
    tcase_add_test(tc, table_spec_texts);
    tcase_add_test(tc, select_and_start_key_texts);
    tcase_add_test(tc, request_class_texts);
    suite_add_tcase(s, tc);
    return dl_check_run(s);
}
