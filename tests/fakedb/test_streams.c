/* test_streams.c: DynamoDB Streams in fakedb over HTTP: StreamSpecification on
 * CreateTable/UpdateTable/DescribeTable, every view type, a record for each write path
 * (PutItem, UpdateItem, DeleteItem, BatchWriteItem, TransactWriteItems, time to live) in
 * commit order and none for a write that changed nothing, the four shard iterator types,
 * paging, iterator expiry and retention on the fake clock, disable and enable again,
 * DeleteTable, ShardFilter, malformed and unknown stream ARNs, GetRecords' Limit bounds,
 * and the errors. */
#include "fdbt.h"

#include <check.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define AUTH "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20231114/us-east-1/dynamodb/aws4_request, SignedHeaders=host;x-amz-date;x-amz-target, Signature=0123456789abcdef"
#define CT "application/x-amz-json-1.0"
#define MIN_MS (60LL * 1000)
#define HOUR_MS (60 * MIN_MS)

static void setup(void)
{
    fdbt_start(NULL);
}

static void teardown(void)
{
    fdbt_stop();
}

__attribute__((format(printf, 3, 0)))
static fdbt_resp vcall(const char *service, const char *op, const char *fmt, va_list ap)
{
    char body[8192], target[128];
    vsnprintf(body, sizeof body, fmt, ap);
    snprintf(target, sizeof target, "%s.%s", service, op);
    return fdbt_raw("POST", "/", target, CT, AUTH, body, strlen(body));
}

/* A DynamoDB Streams call. */
__attribute__((format(printf, 2, 3)))
static fdbt_resp sc(const char *op, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fdbt_resp r = vcall("DynamoDBStreams_20120810", op, fmt, ap);
    va_end(ap);
    return r;
}

/* A DynamoDB call that must succeed. */
__attribute__((format(printf, 2, 3)))
static void ok(const char *op, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fdbt_resp r = vcall("DynamoDB_20120810", op, fmt, ap);
    va_end(ap);
    ck_assert_msg(r.status == 200, "%s: %ld %s", op, r.status, r.body ? r.body : "");
    fdbt_free(&r);
}

/* A call that must fail with `type` (after '#') and, when msg is not NULL, a message
 * containing msg. */
static void expect_err(fdbt_resp r, const char *type, const char *msg)
{
    fdbt_expect_answer(&r, 400, type, msg, NULL);
}

__attribute__((format(printf, 2, 3)))
static fdbt_resp dc(const char *op, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fdbt_resp r = vcall("DynamoDB_20120810", op, fmt, ap);
    va_end(ap);
    return r;
}

/* A table pk (S) with a stream of `view` (NULL: none). */
static void stream_table(const char *name, const char *view)
{
    char ss[200] = "";
    if (view)
        snprintf(ss, sizeof ss, ",\"StreamSpecification\":{\"StreamEnabled\":true,\"StreamViewType\":\"%s\"}", view);
    ok("CreateTable", "{\"TableName\":\"%s\",\"KeySchema\":[{\"AttributeName\":\"pk\",\"KeyType\":\"HASH\"}],"
                      "\"AttributeDefinitions\":[{\"AttributeName\":\"pk\",\"AttributeType\":\"S\"}],"
                      "\"BillingMode\":\"PAY_PER_REQUEST\"%s}", name, ss);
}

/* The table's LatestStreamArn (caller frees), NULL when none. */
static char *latest_arn(const char *table)
{
    fdbt_resp r = dc("DescribeTable", "{\"TableName\":\"%s\"}", table);
    ck_assert_int_eq(r.status, 200);
    const char *a = fdbt_str(&r, "Table.LatestStreamArn");
    char *arn = a ? strdup(a) : NULL;
    fdbt_free(&r);
    return arn;
}

static char *shard_of(const char *arn)
{
    fdbt_resp r = sc("DescribeStream", "{\"StreamArn\":\"%s\"}", arn);
    ck_assert_msg(r.status == 200, "%s", r.body);
    char *s = strdup(fdbt_str(&r, "StreamDescription.Shards.0.ShardId"));
    fdbt_free(&r);
    return s;
}

/* An iterator (caller frees) of `type`, with seq for the *_SEQUENCE_NUMBER types. */
static char *iter(const char *arn, const char *type, const char *seq)
{
    char *shard = shard_of(arn), extra[100] = "";
    if (seq)
        snprintf(extra, sizeof extra, ",\"SequenceNumber\":\"%s\"", seq);
    fdbt_resp r = sc("GetShardIterator", "{\"StreamArn\":\"%s\",\"ShardId\":\"%s\",\"ShardIteratorType\":\"%s\"%s}",
                     arn, shard, type, extra);
    ck_assert_msg(r.status == 200, "%s", r.body);
    char *it = strdup(fdbt_str(&r, "ShardIterator"));
    fdbt_free(&r);
    free(shard);
    return it;
}

static fdbt_resp records(const char *it, int limit)
{
    if (limit > 0)
        return sc("GetRecords", "{\"ShardIterator\":\"%s\",\"Limit\":%d}", it, limit);
    return sc("GetRecords", "{\"ShardIterator\":\"%s\"}", it);
}

/* Every record of the stream from TRIM_HORIZON (a new reference). */
static json_object *all_records(const char *arn)
{
    char *it = iter(arn, "TRIM_HORIZON", NULL);
    fdbt_resp r = records(it, 0);
    ck_assert_msg(r.status == 200, "%s", r.body);
    json_object *a = json_object_get(fdbt_get(r.json, "Records"));
    fdbt_free(&r);
    free(it);
    return a;
}

static const char *rec_str(json_object *recs, size_t i, const char *path)
{
    json_object *v = fdbt_get(json_object_array_get_idx(recs, i), path);
    return v ? json_object_get_string(v) : NULL;
}

/* The event names of recs joined by spaces. */
static void events(json_object *recs, char *out, size_t n)
{
    out[0] = 0;
    for (size_t i = 0; i < json_object_array_length(recs); i++) {
        strncat(out, i ? " " : "", n - strlen(out) - 1);
        strncat(out, rec_str(recs, i, "eventName"), n - strlen(out) - 1);
    }
}

START_TEST(view_types)
{
    static const char *const views[] = { "KEYS_ONLY", "NEW_IMAGE", "OLD_IMAGE", "NEW_AND_OLD_IMAGES" };
    for (int v = 0; v < 4; v++) {
        char name[32];
        snprintf(name, sizeof name, "View%d", v);
        stream_table(name, views[v]);
        ok("PutItem", "{\"TableName\":\"%s\",\"Item\":{\"pk\":{\"S\":\"a\"},\"n\":{\"N\":\"1\"}}}", name);
        ok("UpdateItem", "{\"TableName\":\"%s\",\"Key\":{\"pk\":{\"S\":\"a\"}},\"UpdateExpression\":\"SET n = :v\","
                         "\"ExpressionAttributeValues\":{\":v\":{\"N\":\"2\"}}}", name);
        ok("DeleteItem", "{\"TableName\":\"%s\",\"Key\":{\"pk\":{\"S\":\"a\"}}}", name);
        char *arn = latest_arn(name);
        ck_assert_ptr_nonnull(arn);
        json_object *recs = all_records(arn);
        char ev[200];
        events(recs, ev, sizeof ev);
        ck_assert_str_eq(ev, "INSERT MODIFY REMOVE");
        bool has_new = v == 1 || v == 3, has_old = v == 2 || v == 3;
        for (size_t i = 0; i < 3; i++) {
            ck_assert_str_eq(rec_str(recs, i, "dynamodb.Keys.pk.S"), "a");
            ck_assert_ptr_null(fdbt_get(json_object_array_get_idx(recs, i), "dynamodb.Keys.n"));
            ck_assert_str_eq(rec_str(recs, i, "dynamodb.StreamViewType"), views[v]);
            ck_assert_str_eq(rec_str(recs, i, "eventSource"), "aws:dynamodb");
            ck_assert_str_eq(rec_str(recs, i, "eventVersion"), "1.1");
            ck_assert_str_eq(rec_str(recs, i, "awsRegion"), "us-east-1");
            ck_assert_int_eq(strlen(rec_str(recs, i, "eventID")), 32);
            ck_assert_int_eq(strlen(rec_str(recs, i, "dynamodb.SequenceNumber")), 21);
            ck_assert_int_eq(json_object_get_int64(fdbt_get(json_object_array_get_idx(recs, i), "dynamodb.ApproximateCreationDateTime")), 1700000000);
            ck_assert_int_gt(json_object_get_int64(fdbt_get(json_object_array_get_idx(recs, i), "dynamodb.SizeBytes")), 0);
            ck_assert_ptr_null(fdbt_get(json_object_array_get_idx(recs, i), "userIdentity"));
            if (i > 0)
                ck_assert_int_lt(strcmp(rec_str(recs, i - 1, "dynamodb.SequenceNumber"), rec_str(recs, i, "dynamodb.SequenceNumber")), 0);
        }
        /* INSERT has no old image, REMOVE no new one */
        ck_assert(!!rec_str(recs, 0, "dynamodb.NewImage.n.N") == has_new);
        ck_assert_ptr_null(rec_str(recs, 0, "dynamodb.OldImage.n.N"));
        if (has_new)
            ck_assert_str_eq(rec_str(recs, 1, "dynamodb.NewImage.n.N"), "2");
        else
            ck_assert_ptr_null(rec_str(recs, 1, "dynamodb.NewImage.n.N"));
        if (has_old) {
            ck_assert_str_eq(rec_str(recs, 1, "dynamodb.OldImage.n.N"), "1");
            ck_assert_str_eq(rec_str(recs, 2, "dynamodb.OldImage.n.N"), "2");
            ck_assert_str_eq(rec_str(recs, 2, "dynamodb.OldImage.pk.S"), "a");
        } else {
            ck_assert_ptr_null(rec_str(recs, 1, "dynamodb.OldImage.n.N"));
            ck_assert_ptr_null(rec_str(recs, 2, "dynamodb.OldImage.n.N"));
        }
        ck_assert_ptr_null(rec_str(recs, 2, "dynamodb.NewImage.pk.S"));
        json_object_put(recs);
        free(arn);
    }
}
END_TEST

START_TEST(write_paths_in_commit_order)
{
    stream_table("Paths", "NEW_AND_OLD_IMAGES");
    ok("PutItem", "{\"TableName\":\"Paths\",\"Item\":{\"pk\":{\"S\":\"p1\"},\"v\":{\"S\":\"x\"}}}");
    ok("BatchWriteItem", "{\"RequestItems\":{\"Paths\":[{\"PutRequest\":{\"Item\":{\"pk\":{\"S\":\"b1\"}}}},"
                         "{\"PutRequest\":{\"Item\":{\"pk\":{\"S\":\"b2\"}}}},{\"DeleteRequest\":{\"Key\":{\"pk\":{\"S\":\"p1\"}}}}]}}");
    ok("TransactWriteItems", "{\"TransactItems\":[{\"Put\":{\"TableName\":\"Paths\",\"Item\":{\"pk\":{\"S\":\"t1\"}}}},"
                             "{\"Update\":{\"TableName\":\"Paths\",\"Key\":{\"pk\":{\"S\":\"b1\"}},\"UpdateExpression\":\"SET w = :w\","
                             "\"ExpressionAttributeValues\":{\":w\":{\"N\":\"7\"}}}},"
                             "{\"Delete\":{\"TableName\":\"Paths\",\"Key\":{\"pk\":{\"S\":\"b2\"}}}},"
                             "{\"ConditionCheck\":{\"TableName\":\"Paths\",\"Key\":{\"pk\":{\"S\":\"zz\"}},"
                             "\"ConditionExpression\":\"attribute_not_exists(pk)\"}}]}");
    ok("UpdateItem", "{\"TableName\":\"Paths\",\"Key\":{\"pk\":{\"S\":\"u1\"}},\"UpdateExpression\":\"SET a = :a\","
                     "\"ExpressionAttributeValues\":{\":a\":{\"S\":\"new\"}}}");
    ok("DeleteItem", "{\"TableName\":\"Paths\",\"Key\":{\"pk\":{\"S\":\"u1\"}}}");

    /* writes that change nothing: no records */
    expect_err(dc("PutItem", "{\"TableName\":\"Paths\",\"Item\":{\"pk\":{\"S\":\"t1\"},\"v\":{\"S\":\"no\"}},"
                             "\"ConditionExpression\":\"attribute_not_exists(pk)\"}"), "ConditionalCheckFailedException", NULL);
    expect_err(dc("TransactWriteItems", "{\"TransactItems\":[{\"Put\":{\"TableName\":\"Paths\",\"Item\":{\"pk\":{\"S\":\"t9\"}}}},"
                                        "{\"ConditionCheck\":{\"TableName\":\"Paths\",\"Key\":{\"pk\":{\"S\":\"t1\"}},"
                                        "\"ConditionExpression\":\"attribute_not_exists(pk)\"}}]}"), "TransactionCanceledException", NULL);
    ok("DeleteItem", "{\"TableName\":\"Paths\",\"Key\":{\"pk\":{\"S\":\"missing\"}}}");
    ok("PutItem", "{\"TableName\":\"Paths\",\"Item\":{\"pk\":{\"S\":\"t1\"}}}");  /* the same item again */
    ok("UpdateItem", "{\"TableName\":\"Paths\",\"Key\":{\"pk\":{\"S\":\"t1\"}},\"UpdateExpression\":\"REMOVE nothere\"}");
    ok("UpdateItem", "{\"TableName\":\"Paths\",\"Key\":{\"pk\":{\"S\":\"gone\"}},\"UpdateExpression\":\"REMOVE a\"}");

    char *arn = latest_arn("Paths");
    json_object *recs = all_records(arn);
    char ev[400];
    events(recs, ev, sizeof ev);
    ck_assert_str_eq(ev, "INSERT INSERT INSERT REMOVE INSERT MODIFY REMOVE INSERT REMOVE");
    static const char *const keys[] = { "p1", "b1", "b2", "p1", "t1", "b1", "b2", "u1", "u1" };
    for (size_t i = 0; i < 9; i++)
        ck_assert_str_eq(rec_str(recs, i, "dynamodb.Keys.pk.S"), keys[i]);
    ck_assert_str_eq(rec_str(recs, 3, "dynamodb.OldImage.v.S"), "x");
    ck_assert_str_eq(rec_str(recs, 5, "dynamodb.NewImage.w.N"), "7");
    ck_assert_ptr_null(rec_str(recs, 5, "dynamodb.OldImage.w.N"));
    ck_assert_str_eq(rec_str(recs, 7, "dynamodb.NewImage.a.S"), "new");
    json_object_put(recs);
    free(arn);

    /* a table without a stream has none, and is not listed */
    stream_table("Plain", NULL);
    ok("PutItem", "{\"TableName\":\"Plain\",\"Item\":{\"pk\":{\"S\":\"a\"}}}");
    ck_assert_ptr_null(latest_arn("Plain"));
    fdbt_resp r = sc("ListStreams", "{\"TableName\":\"Plain\"}");
    ck_assert_int_eq(r.status, 200);
    ck_assert_int_eq(json_object_array_length(fdbt_get(r.json, "Streams")), 0);
    fdbt_free(&r);
}
END_TEST

START_TEST(ttl_deletion_record)
{
    stream_table("Ttl", "OLD_IMAGE");
    ok("UpdateTimeToLive", "{\"TableName\":\"Ttl\",\"TimeToLiveSpecification\":{\"AttributeName\":\"exp\",\"Enabled\":true}}");
    ok("PutItem", "{\"TableName\":\"Ttl\",\"Item\":{\"pk\":{\"S\":\"a\"},\"exp\":{\"N\":\"1700000060\"}}}");
    ok("DeleteItem", "{\"TableName\":\"Ttl\",\"Key\":{\"pk\":{\"S\":\"b\"}}}");
    ck_assert_int_eq(fakedb_clock_advance(fdbt_db, 2 * MIN_MS), 0);
    char *arn = latest_arn("Ttl");
    json_object *recs = all_records(arn);
    char ev[100];
    events(recs, ev, sizeof ev);
    ck_assert_str_eq(ev, "INSERT REMOVE");
    ck_assert_ptr_null(fdbt_get(json_object_array_get_idx(recs, 0), "userIdentity"));
    ck_assert_str_eq(rec_str(recs, 1, "userIdentity.Type"), "Service");
    ck_assert_str_eq(rec_str(recs, 1, "userIdentity.PrincipalId"), "dynamodb.amazonaws.com");
    ck_assert_str_eq(rec_str(recs, 1, "dynamodb.OldImage.exp.N"), "1700000060");
    ck_assert_int_eq(json_object_get_int64(fdbt_get(json_object_array_get_idx(recs, 1), "dynamodb.ApproximateCreationDateTime")), 1700000120);
    json_object_put(recs);
    free(arn);
}
END_TEST

START_TEST(iterator_types_and_paging)
{
    stream_table("Iter", "KEYS_ONLY");
    for (int i = 0; i < 5; i++)
        ok("PutItem", "{\"TableName\":\"Iter\",\"Item\":{\"pk\":{\"S\":\"k%d\"}}}", i);
    char *arn = latest_arn("Iter");
    json_object *recs = all_records(arn);
    ck_assert_int_eq(json_object_array_length(recs), 5);
    char seq2[32];
    snprintf(seq2, sizeof seq2, "%s", rec_str(recs, 2, "dynamodb.SequenceNumber"));
    json_object_put(recs);

    char *it = iter(arn, "AT_SEQUENCE_NUMBER", seq2);
    fdbt_resp r = records(it, 0);
    ck_assert_int_eq(json_object_array_length(fdbt_get(r.json, "Records")), 3);
    ck_assert_str_eq(fdbt_str(&r, "Records.0.dynamodb.Keys.pk.S"), "k2");
    fdbt_free(&r);
    free(it);
    it = iter(arn, "AFTER_SEQUENCE_NUMBER", seq2);
    r = records(it, 0);
    ck_assert_int_eq(json_object_array_length(fdbt_get(r.json, "Records")), 2);
    ck_assert_str_eq(fdbt_str(&r, "Records.0.dynamodb.Keys.pk.S"), "k3");
    fdbt_free(&r);
    free(it);

    /* LATEST: only what comes after */
    char *latest = iter(arn, "LATEST", NULL);
    r = records(latest, 0);
    ck_assert_int_eq(json_object_array_length(fdbt_get(r.json, "Records")), 0);
    ck_assert_ptr_nonnull(fdbt_str(&r, "NextShardIterator"));
    fdbt_free(&r);
    ok("PutItem", "{\"TableName\":\"Iter\",\"Item\":{\"pk\":{\"S\":\"k5\"}}}");
    r = records(latest, 0);
    ck_assert_int_eq(json_object_array_length(fdbt_get(r.json, "Records")), 1);
    ck_assert_str_eq(fdbt_str(&r, "Records.0.dynamodb.Keys.pk.S"), "k5");
    fdbt_free(&r);
    free(latest);

    /* paging by Limit through NextShardIterator, then an empty page that still has one */
    it = iter(arn, "TRIM_HORIZON", NULL);
    char got[64] = "";
    for (int page = 0; page < 4; page++) {
        r = records(it, 2);
        ck_assert_int_eq(r.status, 200);
        json_object *a = fdbt_get(r.json, "Records");
        ck_assert_int_eq(json_object_array_length(a), page < 3 ? 2 : 0);
        for (size_t i = 0; i < json_object_array_length(a); i++)
            strcat(got, rec_str(a, i, "dynamodb.Keys.pk.S"));
        free(it);
        it = strdup(fdbt_str(&r, "NextShardIterator"));
        fdbt_free(&r);
    }
    ck_assert_str_eq(got, "k0k1k2k3k4k5");
    free(it);
    free(arn);
}
END_TEST

START_TEST(iterator_expiry)
{
    stream_table("Exp", "NEW_IMAGE");
    ok("PutItem", "{\"TableName\":\"Exp\",\"Item\":{\"pk\":{\"S\":\"a\"}}}");
    char *arn = latest_arn("Exp");
    char *it = iter(arn, "TRIM_HORIZON", NULL);
    ck_assert_int_eq(fakedb_clock_advance(fdbt_db, 15 * MIN_MS), 0);
    fdbt_resp r = records(it, 0);    /* 15 minutes old: still good */
    ck_assert_int_eq(r.status, 200);
    char *next = strdup(fdbt_str(&r, "NextShardIterator"));
    fdbt_free(&r);
    ck_assert_int_eq(fakedb_clock_advance(fdbt_db, 1), 0);
    expect_err(records(it, 0), "ExpiredIteratorException", "The provided iterator exceeds the maximum age allowed.");
    r = records(next, 0);            /* the next one was issued later */
    ck_assert_int_eq(r.status, 200);
    fdbt_free(&r);
    free(next);
    free(it);
    free(arn);
}
END_TEST

START_TEST(retention_trims)
{
    stream_table("Ret", "KEYS_ONLY");
    ok("PutItem", "{\"TableName\":\"Ret\",\"Item\":{\"pk\":{\"S\":\"old\"}}}");
    char *arn = latest_arn("Ret");
    json_object *recs = all_records(arn);
    char seq0[32];
    snprintf(seq0, sizeof seq0, "%s", rec_str(recs, 0, "dynamodb.SequenceNumber"));
    json_object_put(recs);
    ck_assert_int_eq(fakedb_clock_advance(fdbt_db, 23 * HOUR_MS), 0);
    ok("PutItem", "{\"TableName\":\"Ret\",\"Item\":{\"pk\":{\"S\":\"new\"}}}");
    ck_assert_int_eq(fakedb_clock_advance(fdbt_db, HOUR_MS - 10 * MIN_MS), 0);
    char *early = iter(arn, "TRIM_HORIZON", NULL);
    recs = all_records(arn);
    ck_assert_int_eq(json_object_array_length(recs), 2);    /* 23 h 50 min old: kept */
    json_object_put(recs);
    ck_assert_int_eq(fakedb_clock_advance(fdbt_db, 10 * MIN_MS + 1), 0);
    /* the first record is past 24 hours: trimmed; an iterator pointing at it cannot read */
    expect_err(records(early, 0), "TrimmedDataAccessException", "The data you are trying to access has been trimmed.");
    char *shard = shard_of(arn);
    expect_err(sc("GetShardIterator", "{\"StreamArn\":\"%s\",\"ShardId\":\"%s\",\"ShardIteratorType\":\"AT_SEQUENCE_NUMBER\","
                                      "\"SequenceNumber\":\"%s\"}", arn, shard, seq0), "TrimmedDataAccessException", NULL);
    recs = all_records(arn);
    ck_assert_int_eq(json_object_array_length(recs), 1);
    ck_assert_str_eq(rec_str(recs, 0, "dynamodb.Keys.pk.S"), "new");
    json_object_put(recs);
    free(shard);
    free(early);
    free(arn);
}
END_TEST

START_TEST(disable_and_enable_again)
{
    stream_table("Cycle", "NEW_IMAGE");
    char *first = latest_arn("Cycle");
    ok("PutItem", "{\"TableName\":\"Cycle\",\"Item\":{\"pk\":{\"S\":\"a\"}}}");
    char *open_it = iter(first, "TRIM_HORIZON", NULL);
    ok("UpdateTable", "{\"TableName\":\"Cycle\",\"StreamSpecification\":{\"StreamEnabled\":false}}");
    ok("PutItem", "{\"TableName\":\"Cycle\",\"Item\":{\"pk\":{\"S\":\"b\"}}}");   /* no stream: no record */

    fdbt_resp r = dc("DescribeTable", "{\"TableName\":\"Cycle\"}");
    ck_assert_ptr_null(fdbt_get(r.json, "Table.StreamSpecification"));
    ck_assert_str_eq(fdbt_str(&r, "Table.LatestStreamArn"), first);
    fdbt_free(&r);
    r = sc("DescribeStream", "{\"StreamArn\":\"%s\"}", first);
    ck_assert_str_eq(fdbt_str(&r, "StreamDescription.StreamStatus"), "DISABLED");
    ck_assert_str_eq(fdbt_str(&r, "StreamDescription.StreamViewType"), "NEW_IMAGE");
    ck_assert_str_eq(fdbt_str(&r, "StreamDescription.TableName"), "Cycle");
    ck_assert_str_eq(fdbt_str(&r, "StreamDescription.KeySchema.0.AttributeName"), "pk");
    ck_assert_ptr_nonnull(fdbt_str(&r, "StreamDescription.Shards.0.SequenceNumberRange.StartingSequenceNumber"));
    ck_assert_ptr_nonnull(fdbt_str(&r, "StreamDescription.Shards.0.SequenceNumberRange.EndingSequenceNumber"));
    fdbt_free(&r);

    /* still readable; read to the end of the closed shard, there is no next iterator */
    r = records(open_it, 0);
    ck_assert_int_eq(json_object_array_length(fdbt_get(r.json, "Records")), 1);
    ck_assert_ptr_null(fdbt_get(r.json, "NextShardIterator"));
    fdbt_free(&r);
    r = records(open_it, 1);   /* a page cut by Limit still has one */
    ck_assert_int_eq(json_object_array_length(fdbt_get(r.json, "Records")), 1);
    fdbt_free(&r);

    ck_assert_int_eq(fakedb_clock_advance(fdbt_db, 1000), 0);
    ok("UpdateTable", "{\"TableName\":\"Cycle\",\"StreamSpecification\":{\"StreamEnabled\":true,\"StreamViewType\":\"KEYS_ONLY\"}}");
    char *second = latest_arn("Cycle");
    ck_assert_str_ne(first, second);
    r = dc("DescribeTable", "{\"TableName\":\"Cycle\"}");
    ck_assert_str_eq(fdbt_str(&r, "Table.StreamSpecification.StreamViewType"), "KEYS_ONLY");
    ck_assert(json_object_get_boolean(fdbt_get(r.json, "Table.StreamSpecification.StreamEnabled")));
    ck_assert_str_eq(fdbt_str(&r, "Table.LatestStreamLabel"), strstr(second, "/stream/") + 8);
    fdbt_free(&r);
    ok("PutItem", "{\"TableName\":\"Cycle\",\"Item\":{\"pk\":{\"S\":\"c\"}}}");
    json_object *recs = all_records(second);
    ck_assert_int_eq(json_object_array_length(recs), 1);
    ck_assert_str_eq(rec_str(recs, 0, "dynamodb.Keys.pk.S"), "c");
    json_object_put(recs);

    /* ListStreams: both, oldest first; pages of one */
    r = sc("ListStreams", "{\"TableName\":\"Cycle\"}");
    ck_assert_int_eq(json_object_array_length(fdbt_get(r.json, "Streams")), 2);
    ck_assert_str_eq(fdbt_str(&r, "Streams.0.StreamArn"), first);
    ck_assert_str_eq(fdbt_str(&r, "Streams.1.StreamArn"), second);
    ck_assert_str_eq(fdbt_str(&r, "Streams.1.TableName"), "Cycle");
    ck_assert_ptr_null(fdbt_get(r.json, "LastEvaluatedStreamArn"));
    fdbt_free(&r);
    r = sc("ListStreams", "{\"Limit\":1}");
    ck_assert_int_eq(json_object_array_length(fdbt_get(r.json, "Streams")), 1);
    ck_assert_str_eq(fdbt_str(&r, "LastEvaluatedStreamArn"), first);
    fdbt_free(&r);
    r = sc("ListStreams", "{\"Limit\":1,\"ExclusiveStartStreamArn\":\"%s\"}", first);
    ck_assert_str_eq(fdbt_str(&r, "Streams.0.StreamArn"), second);
    fdbt_free(&r);

    /* 24 hours after it was disabled, the first stream is gone */
    ck_assert_int_eq(fakedb_clock_advance(fdbt_db, 24 * HOUR_MS), 0);
    expect_err(sc("DescribeStream", "{\"StreamArn\":\"%s\"}", first), "ResourceNotFoundException", "Requested resource not found: Stream: ");
    r = sc("ListStreams", "{}");
    ck_assert_int_eq(json_object_array_length(fdbt_get(r.json, "Streams")), 1);
    ck_assert_str_eq(fdbt_str(&r, "Streams.0.StreamArn"), second);
    fdbt_free(&r);
    free(open_it);
    free(first);
    free(second);
}
END_TEST

START_TEST(delete_table_disables_stream)
{
    stream_table("Gone", "NEW_AND_OLD_IMAGES");
    ok("PutItem", "{\"TableName\":\"Gone\",\"Item\":{\"pk\":{\"S\":\"a\"}}}");
    char *arn = latest_arn("Gone");
    fdbt_resp r = dc("DeleteTable", "{\"TableName\":\"Gone\"}");   /* answered as it was */
    ck_assert_str_eq(fdbt_str(&r, "TableDescription.TableStatus"), "DELETING");
    ck_assert_str_eq(fdbt_str(&r, "TableDescription.StreamSpecification.StreamViewType"), "NEW_AND_OLD_IMAGES");
    ck_assert_str_eq(fdbt_str(&r, "TableDescription.LatestStreamArn"), arn);
    fdbt_free(&r);
    r = sc("DescribeStream", "{\"StreamArn\":\"%s\"}", arn);
    ck_assert_str_eq(fdbt_str(&r, "StreamDescription.StreamStatus"), "DISABLED");
    fdbt_free(&r);
    json_object *recs = all_records(arn);   /* no REMOVE records for the table's items */
    ck_assert_int_eq(json_object_array_length(recs), 1);
    json_object_put(recs);
    /* a new table of the same name has a new stream */
    stream_table("Gone", "KEYS_ONLY");
    char *again = latest_arn("Gone");
    ck_assert_str_ne(arn, again);
    free(again);
    free(arn);
}
END_TEST

START_TEST(stream_specification_errors)
{
    stream_table("Spec", NULL);
#define UPD(ss) dc("UpdateTable", "{\"TableName\":\"Spec\",\"StreamSpecification\":%s}", ss)
    expect_err(UPD("{\"StreamEnabled\":false}"), "ValidationException", "Table has no stream to disable: TableName: Spec");
    expect_err(UPD("{\"StreamEnabled\":true}"), "ValidationException", "If stream is being enabled then UpdateViewType is required");
    expect_err(UPD("{\"StreamViewType\":\"KEYS_ONLY\"}"), "ValidationException", "streamSpecification.streamEnabled");
    expect_err(UPD("{\"StreamEnabled\":true,\"StreamViewType\":\"ALL\"}"), "ValidationException", "Member must satisfy enum value set: [NEW_IMAGE, OLD_IMAGE, NEW_AND_OLD_IMAGES, KEYS_ONLY]");
    expect_err(UPD("{\"StreamEnabled\":\"yes\",\"StreamViewType\":\"KEYS_ONLY\"}"), "SerializationException", NULL);
    expect_err(UPD("[]"), "SerializationException", NULL);
    ck_assert_ptr_null(latest_arn("Spec"));
    ok("UpdateTable", "{\"TableName\":\"Spec\",\"StreamSpecification\":{\"StreamEnabled\":true,\"StreamViewType\":\"OLD_IMAGE\"}}");
    expect_err(UPD("{\"StreamEnabled\":true,\"StreamViewType\":\"OLD_IMAGE\"}"), "ValidationException", "Table already has an enabled stream: TableName: Spec");
    expect_err(UPD("{\"StreamEnabled\":false,\"StreamViewType\":\"OLD_IMAGE\"}"), "ValidationException", "If stream is being disabled, then UpdateViewType must not be specified");
#undef UPD
#define CRE(ss) dc("CreateTable", "{\"TableName\":\"Spec2\",\"KeySchema\":[{\"AttributeName\":\"pk\",\"KeyType\":\"HASH\"}]," \
                          "\"AttributeDefinitions\":[{\"AttributeName\":\"pk\",\"AttributeType\":\"S\"}]," \
                          "\"BillingMode\":\"PAY_PER_REQUEST\",\"StreamSpecification\":%s}", ss)
    expect_err(CRE("{\"StreamEnabled\":true}"), "ValidationException", "Table is being created with a stream enabled, UpdateViewType is required");
    expect_err(CRE("{\"StreamEnabled\":false,\"StreamViewType\":\"NEW_IMAGE\"}"), "ValidationException", "Table is being created with a stream disabled, UpdateViewType should not be specified");
    fdbt_resp r = CRE("{\"StreamEnabled\":false}");   /* no stream */
    ck_assert_int_eq(r.status, 200);
    ck_assert_ptr_null(fdbt_get(r.json, "TableDescription.LatestStreamArn"));
    ck_assert_ptr_null(fdbt_get(r.json, "TableDescription.StreamSpecification"));
    fdbt_free(&r);
#undef CRE
}
END_TEST

/* ShardFilter CHILD_SHARDS: a stream's one shard has no children; the filter's form. */
START_TEST(shard_filter)
{
    stream_table("Filt", "KEYS_ONLY");
    char *arn = latest_arn("Filt"), *shard = shard_of(arn);
    fdbt_resp r = sc("DescribeStream", "{\"StreamArn\":\"%s\",\"ShardFilter\":{\"Type\":\"CHILD_SHARDS\",\"ShardId\":\"%s\"}}", arn, shard);
    ck_assert_msg(r.status == 200, "%s", r.body);
    ck_assert_int_eq(json_object_array_length(fdbt_get(r.json, "StreamDescription.Shards")), 0);
    ck_assert_str_eq(fdbt_str(&r, "StreamDescription.StreamArn"), arn);
    fdbt_free(&r);
    /* A shard of no stream has no children either. */
    r = sc("DescribeStream", "{\"StreamArn\":\"%s\",\"ShardFilter\":{\"Type\":\"CHILD_SHARDS\",\"ShardId\":\"shardId-00000000000000000000-00000000\"}}", arn);
    ck_assert_int_eq(r.status, 200);
    ck_assert_int_eq(json_object_array_length(fdbt_get(r.json, "StreamDescription.Shards")), 0);
    fdbt_free(&r);
    /* Without the filter the shard is there. */
    r = sc("DescribeStream", "{\"StreamArn\":\"%s\"}", arn);
    ck_assert_int_eq(json_object_array_length(fdbt_get(r.json, "StreamDescription.Shards")), 1);
    ck_assert_str_eq(fdbt_str(&r, "StreamDescription.Shards.0.ShardId"), shard);
    fdbt_free(&r);
    expect_err(sc("DescribeStream", "{\"StreamArn\":\"%s\",\"ShardFilter\":{\"Type\":\"PARENT_SHARDS\",\"ShardId\":\"%s\"}}", arn, shard),
               "ValidationException", "Value 'PARENT_SHARDS' at 'shardFilter.type' failed to satisfy constraint: Member must satisfy enum value set: [CHILD_SHARDS]");
    expect_err(sc("DescribeStream", "{\"StreamArn\":\"%s\",\"ShardFilter\":{\"Type\":\"CHILD_SHARDS\",\"ShardId\":\"shardId-1\"}}", arn),
               "ValidationException", "at 'shardFilter.shardId' failed to satisfy constraint: Member must have length greater than or equal to 28");
    char longid[80];
    memset(longid, '7', 66);
    longid[66] = 0;
    expect_err(sc("DescribeStream", "{\"StreamArn\":\"%s\",\"ShardFilter\":{\"Type\":\"CHILD_SHARDS\",\"ShardId\":\"%s\"}}", arn, longid),
               "ValidationException", "Member must have length less than or equal to 65");
    expect_err(sc("DescribeStream", "{\"StreamArn\":\"%s\",\"ShardFilter\":{\"Type\":\"CHILD_SHARDS\"}}", arn),
               "ValidationException", "ShardFilter needs both Type (CHILD_SHARDS) and ShardId");
    expect_err(sc("DescribeStream", "{\"StreamArn\":\"%s\",\"ShardFilter\":{\"ShardId\":\"%s\"}}", arn, shard),
               "ValidationException", "ShardFilter needs both");
    expect_err(sc("DescribeStream", "{\"StreamArn\":\"%s\",\"ShardFilter\":\"CHILD_SHARDS\"}", arn), "SerializationException", NULL);
    expect_err(sc("DescribeStream", "{\"StreamArn\":\"%s\",\"ShardFilter\":{\"Type\":7,\"ShardId\":\"%s\"}}", arn, shard),
               "SerializationException", NULL);
    free(arn);
    free(shard);
}
END_TEST

/* What is no stream ARN is a ValidationException ("Invalid StreamArn"); a stream ARN
 * that names no stream, ResourceNotFoundException; in each API that takes one. */
START_TEST(malformed_and_unknown_stream_arns)
{
    stream_table("Arns", "KEYS_ONLY");
    char *arn = latest_arn("Arns"), *shard = shard_of(arn);
    const char *label = strstr(arn, "/stream/") + 8;
    char bad[12][700];
    snprintf(bad[0], sizeof bad[0], "%s", "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx");
    snprintf(bad[1], sizeof bad[1], "arn:aws:dynamodb:us-east-1:000000000000:table/Arns"); /* the table's ARN, padded */
    strcat(bad[1], "/index/ByKeyxxxxx");
    snprintf(bad[2], sizeof bad[2], "arn:aws:dynamodb:us-east-1:000000000000:table/Arns/stream/notalabel");
    snprintf(bad[3], sizeof bad[3], "arn:aws:dynamodb:us-east-1:12345:table/Arns/stream/%s", label);
    snprintf(bad[4], sizeof bad[4], "arn:aws:kinesis:us-east-1:000000000000:table/Arns/stream/%s", label);
    snprintf(bad[5], sizeof bad[5], "arn:aws:dynamodb::000000000000:table/Arns/stream/%s", label);
    snprintf(bad[6], sizeof bad[6], "arn:aws:dynamodb:us-east-1:000000000000:table/A/stream/%s", label);
    snprintf(bad[7], sizeof bad[7], "%s ", arn);
    snprintf(bad[8], sizeof bad[8], "arn:aws:dynamodb:us-east-1:000000000000:table/Ar ns/stream/%s", label);
    snprintf(bad[9], sizeof bad[9], "arn:aws:dynamodb:us-east-1:000000000000:table/Arns/stream/%.22s", label);
    snprintf(bad[10], sizeof bad[10], "arn:aws:dynamodb:us-east-1:000000000000:table/Arns/stream/%sZ", label);
    snprintf(bad[11], sizeof bad[11], "arn:aws:dynamodb:us-east-1:000000000000:table/Arns/stream/%s\\u00e9", label);
    for (int i = 0; i < 12; i++) {
        expect_err(sc("DescribeStream", "{\"StreamArn\":\"%s\"}", bad[i]), "ValidationException", "Invalid StreamArn");
        expect_err(sc("GetShardIterator", "{\"StreamArn\":\"%s\",\"ShardId\":\"%s\",\"ShardIteratorType\":\"LATEST\"}", bad[i], shard),
                   "ValidationException", "Invalid StreamArn");
        expect_err(sc("ListStreams", "{\"ExclusiveStartStreamArn\":\"%s\"}", bad[i]), "ValidationException", "Invalid StreamArn");
    }
    /* Well formed, no such stream: another label, table, region, account, partition. */
    char unknown[5][700];
    snprintf(unknown[0], sizeof unknown[0], "arn:aws:dynamodb:us-east-1:000000000000:table/Arns/stream/2001-01-01T00:00:00.000");
    snprintf(unknown[1], sizeof unknown[1], "arn:aws:dynamodb:us-east-1:000000000000:table/Other/stream/%s", label);
    snprintf(unknown[2], sizeof unknown[2], "arn:aws:dynamodb:eu-west-1:000000000000:table/Arns/stream/%s", label);
    snprintf(unknown[3], sizeof unknown[3], "arn:aws:dynamodb:us-east-1:123456789012:table/Arns/stream/%s", label);
    snprintf(unknown[4], sizeof unknown[4], "arn:aws-cn:dynamodb:cn-north-1:000000000000:table/Arns/stream/%s", label);
    for (int i = 0; i < 5; i++) {
        expect_err(sc("DescribeStream", "{\"StreamArn\":\"%s\"}", unknown[i]), "ResourceNotFoundException", unknown[i]);
        expect_err(sc("GetShardIterator", "{\"StreamArn\":\"%s\",\"ShardId\":\"%s\",\"ShardIteratorType\":\"LATEST\"}", unknown[i], shard),
                   "ResourceNotFoundException", NULL);
        expect_err(sc("ListStreams", "{\"ExclusiveStartStreamArn\":\"%s\"}", unknown[i]), "ResourceNotFoundException", NULL);
    }
    /* The real one still works everywhere. */
    fdbt_resp r = sc("DescribeStream", "{\"StreamArn\":\"%s\"}", arn);
    ck_assert_int_eq(r.status, 200);
    fdbt_free(&r);
    r = sc("ListStreams", "{\"ExclusiveStartStreamArn\":\"%s\"}", arn);
    ck_assert_int_eq(r.status, 200);
    fdbt_free(&r);
    free(arn);
    free(shard);
}
END_TEST

/* GetRecords' Limit: 1 to 1000 (below: the shape's constraint; above: the service's). */
START_TEST(get_records_limit_bounds)
{
    stream_table("Lim", "KEYS_ONLY");
    for (int i = 0; i < 3; i++)
        ok("PutItem", "{\"TableName\":\"Lim\",\"Item\":{\"pk\":{\"S\":\"k%d\"}}}", i);
    char *arn = latest_arn("Lim");
    char *it = iter(arn, "TRIM_HORIZON", NULL);
    fdbt_resp r = records(it, 1);
    ck_assert_int_eq(r.status, 200);
    ck_assert_int_eq(json_object_array_length(fdbt_get(r.json, "Records")), 1);
    fdbt_free(&r);
    r = records(it, 1000);
    ck_assert_int_eq(r.status, 200);
    ck_assert_int_eq(json_object_array_length(fdbt_get(r.json, "Records")), 3);
    fdbt_free(&r);
    expect_err(records(it, 1001), "LimitExceededException",
               "GetRecords was called with a value of more than 1000 for the limit request parameter");
    expect_err(records(it, 2147483647), "LimitExceededException", "more than 1000");
    expect_err(sc("GetRecords", "{\"ShardIterator\":\"%s\",\"Limit\":0}", it), "ValidationException",
               "1 validation error detected: Value '0' at 'limit' failed to satisfy constraint: Member must have value greater than or equal to 1");
    expect_err(sc("GetRecords", "{\"ShardIterator\":\"%s\",\"Limit\":-5}", it), "ValidationException", "Value '-5' at 'limit'");
    expect_err(sc("GetRecords", "{\"ShardIterator\":\"%s\",\"Limit\":2147483648}", it), "SerializationException", NULL);
    free(it);
    free(arn);
}
END_TEST

START_TEST(streams_api_errors)
{
    stream_table("Err", "KEYS_ONLY");
    ok("PutItem", "{\"TableName\":\"Err\",\"Item\":{\"pk\":{\"S\":\"a\"}}}");
    char *arn = latest_arn("Err"), *shard = shard_of(arn);
    const char *nope = "arn:aws:dynamodb:us-east-1:000000000000:table/Err/stream/2001-01-01T00:00:00.000";
    expect_err(sc("DescribeStream", "{\"StreamArn\":\"%s\"}", nope), "ResourceNotFoundException", nope);
    expect_err(sc("DescribeStream", "{}"), "ValidationException", "Value null at 'streamArn'");
    expect_err(sc("DescribeStream", "{\"StreamArn\":\"short\"}"), "ValidationException", "length greater than or equal to 37");
    expect_err(sc("GetShardIterator", "{\"StreamArn\":\"%s\",\"ShardId\":\"%s\",\"ShardIteratorType\":\"LATEST\"}", nope, shard),
               "ResourceNotFoundException", NULL);
    expect_err(sc("GetShardIterator", "{\"StreamArn\":\"%s\",\"ShardId\":\"shardId-00000000000000000000-00000000\",\"ShardIteratorType\":\"LATEST\"}", arn),
               "ResourceNotFoundException", "Shard does not exist");
    expect_err(sc("GetShardIterator", "{\"StreamArn\":\"%s\",\"ShardId\":\"%s\",\"ShardIteratorType\":\"OLDEST\"}", arn, shard),
               "ValidationException", "shardIteratorType");
    expect_err(sc("GetShardIterator", "{\"StreamArn\":\"%s\",\"ShardId\":\"%s\",\"ShardIteratorType\":\"AT_SEQUENCE_NUMBER\"}", arn, shard),
               "ValidationException", "SequenceNumber");
    expect_err(sc("GetShardIterator", "{\"StreamArn\":\"%s\",\"ShardId\":\"%s\",\"ShardIteratorType\":\"LATEST\",\"SequenceNumber\":\"000000000000000000001\"}", arn, shard),
               "ValidationException", "SequenceNumber");
    expect_err(sc("GetShardIterator", "{\"StreamArn\":\"%s\",\"ShardId\":\"%s\",\"ShardIteratorType\":\"AT_SEQUENCE_NUMBER\",\"SequenceNumber\":\"12\"}", arn, shard),
               "ValidationException", "length greater than or equal to 21");
    expect_err(sc("GetShardIterator", "{\"StreamArn\":\"%s\",\"ShardId\":\"%s\",\"ShardIteratorType\":\"AT_SEQUENCE_NUMBER\",\"SequenceNumber\":\"000000000000000000000\"}", arn, shard),
               "ValidationException", "Invalid SequenceNumber");
    expect_err(sc("GetRecords", "{\"ShardIterator\":\"garbage\"}"), "ValidationException", "Invalid ShardIterator");
    char *it = iter(arn, "TRIM_HORIZON", NULL);
    char forged[2200];
    snprintf(forged, sizeof forged, "%s", it);
    forged[strlen(forged) - 1] = forged[strlen(forged) - 1] == '0' ? '1' : '0';
    expect_err(sc("GetRecords", "{\"ShardIterator\":\"%s\"}", forged), "ValidationException", "Invalid ShardIterator");
    expect_err(records(it, 1001), "LimitExceededException",
               "GetRecords was called with a value of more than 1000 for the limit request parameter");
    expect_err(sc("GetRecords", "{\"ShardIterator\":\"%s\",\"Limit\":0}", it), "ValidationException", "greater than or equal to 1");
    expect_err(sc("GetRecords", "{\"ShardIterator\":\"%s\",\"Limit\":\"5\"}", it), "SerializationException", NULL);
    expect_err(sc("ListStreams", "{\"Limit\":101}"), "ValidationException", "less than or equal to 100");
    expect_err(sc("ListStreams", "{\"ExclusiveStartStreamArn\":\"%s\"}", nope), "ResourceNotFoundException", NULL);
    /* each API on its own target only; what fakedb does not have is refused */
    expect_err(dc("GetRecords", "{\"ShardIterator\":\"%s\"}", it), "UnknownOperationException", NULL);
    expect_err(sc("GetItem", "{\"TableName\":\"Err\",\"Key\":{\"pk\":{\"S\":\"a\"}}}"), "UnknownOperationException", NULL);
    expect_err(sc("DescribeTable", "{\"TableName\":\"Err\"}"), "UnknownOperationException", NULL);
    expect_err(sc("ListShards", "{}"), "UnknownOperationException", NULL);
    free(it);
    free(shard);
    free(arn);
}
END_TEST

START_TEST(sort_key_enable_later_and_reset)
{
    fdbt_table("Sorted", "sk", "N");
    ok("PutItem", "{\"TableName\":\"Sorted\",\"Item\":{\"pk\":{\"S\":\"before\"},\"sk\":{\"N\":\"1\"}}}");
    ok("UpdateTable", "{\"TableName\":\"Sorted\",\"StreamSpecification\":{\"StreamEnabled\":true,\"StreamViewType\":\"KEYS_ONLY\"}}");
    ok("PutItem", "{\"TableName\":\"Sorted\",\"Item\":{\"pk\":{\"S\":\"a\"},\"sk\":{\"N\":\"2.50\"},\"x\":{\"S\":\"y\"}}}");
    char *arn = latest_arn("Sorted");
    json_object *recs = all_records(arn);   /* nothing from before the stream */
    ck_assert_int_eq(json_object_array_length(recs), 1);
    ck_assert_str_eq(rec_str(recs, 0, "dynamodb.Keys.pk.S"), "a");
    ck_assert_str_eq(rec_str(recs, 0, "dynamodb.Keys.sk.N"), "2.5");
    ck_assert_ptr_null(rec_str(recs, 0, "dynamodb.Keys.x.S"));
    ck_assert_ptr_null(rec_str(recs, 0, "dynamodb.NewImage.x.S"));
    json_object_put(recs);
    fdbt_resp r = sc("DescribeStream", "{\"StreamArn\":\"%s\"}", arn);
    ck_assert_str_eq(fdbt_str(&r, "StreamDescription.KeySchema.1.AttributeName"), "sk");
    ck_assert_str_eq(fdbt_str(&r, "StreamDescription.KeySchema.1.KeyType"), "RANGE");
    fdbt_free(&r);
    /* a reset drops streams too */
    fakedb_reset(fdbt_db);
    expect_err(sc("DescribeStream", "{\"StreamArn\":\"%s\"}", arn), "ResourceNotFoundException", NULL);
    r = sc("ListStreams", "{}");
    ck_assert_int_eq(json_object_array_length(fdbt_get(r.json, "Streams")), 0);
    fdbt_free(&r);
    free(arn);
}
END_TEST

#define WRITERS 4
#define WRITES 25

static void *writer(void *arg)
{
    long w = (long)arg;
    for (int i = 1; i <= WRITES; i++)
        ok("PutItem", "{\"TableName\":\"Busy\",\"Item\":{\"pk\":{\"S\":\"w%ld\"},\"v\":{\"N\":\"%d\"}}}", w, i);
    return NULL;
}

START_TEST(concurrent_writers_in_commit_order)
{
    /* writers on their own items at once: every write has its record, and each item's
     * records come in the order its writes were made */
    stream_table("Busy", "NEW_IMAGE");
    pthread_t th[WRITERS];
    for (long w = 0; w < WRITERS; w++)
        ck_assert_int_eq(pthread_create(&th[w], NULL, writer, (void *)w), 0);
    for (int w = 0; w < WRITERS; w++)
        pthread_join(th[w], NULL);
    char *arn = latest_arn("Busy");
    json_object *recs = all_records(arn);
    ck_assert_int_eq(json_object_array_length(recs), WRITERS * WRITES);
    int last[WRITERS] = { 0 };
    for (size_t i = 0; i < json_object_array_length(recs); i++) {
        int w = atoi(rec_str(recs, i, "dynamodb.Keys.pk.S") + 1), v = atoi(rec_str(recs, i, "dynamodb.NewImage.v.N"));
        ck_assert_int_eq(v, last[w] + 1);
        ck_assert_str_eq(rec_str(recs, i, "eventName"), v == 1 ? "INSERT" : "MODIFY");
        last[w] = v;
    }
    json_object_put(recs);
    free(arn);
}
END_TEST

START_TEST(records_survive_restart)
{
    /* with a file, streams and records are kept across a restart */
    char path[] = "/tmp/fakedb-streams-XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    close(fd);
    fdbt_stop();
    fdbt_start(path);
    stream_table("Keep", "NEW_IMAGE");
    ok("PutItem", "{\"TableName\":\"Keep\",\"Item\":{\"pk\":{\"S\":\"a\"}}}");
    char *arn = latest_arn("Keep");
    fdbt_stop();
    fdbt_start(path);
    char *again = latest_arn("Keep");
    ck_assert_str_eq(arn, again);
    ok("PutItem", "{\"TableName\":\"Keep\",\"Item\":{\"pk\":{\"S\":\"b\"}}}");
    json_object *recs = all_records(arn);
    ck_assert_int_eq(json_object_array_length(recs), 2);
    ck_assert_int_lt(strcmp(rec_str(recs, 0, "dynamodb.SequenceNumber"), rec_str(recs, 1, "dynamodb.SequenceNumber")), 0);
    json_object_put(recs);
    free(again);
    free(arn);
    fdbt_stop();
    unlink(path);
    char side[64];
    snprintf(side, sizeof side, "%s-wal", path);
    unlink(side);
    snprintf(side, sizeof side, "%s-shm", path);
    unlink(side);
    fdbt_start(NULL);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("fakedb_streams");
    TCase *tc = tcase_create("streams");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, view_types);
    tcase_add_test(tc, write_paths_in_commit_order);
    tcase_add_test(tc, ttl_deletion_record);
    tcase_add_test(tc, iterator_types_and_paging);
    tcase_add_test(tc, iterator_expiry);
    tcase_add_test(tc, retention_trims);
    tcase_add_test(tc, disable_and_enable_again);
    tcase_add_test(tc, delete_table_disables_stream);
    tcase_add_test(tc, stream_specification_errors);
    tcase_add_test(tc, streams_api_errors);
    tcase_add_test(tc, shard_filter);
    tcase_add_test(tc, malformed_and_unknown_stream_arns);
    tcase_add_test(tc, get_records_limit_bounds);
    tcase_add_test(tc, sort_key_enable_later_and_reset);
    tcase_add_test(tc, concurrent_writers_in_commit_order);
    tcase_add_test(tc, records_survive_restart);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
