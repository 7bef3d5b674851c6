/* fuzz_request.c: libFuzzer target for fakedb's request handler. The first byte picks
 * an operation, the rest is the JSON body, handled as the server handles a request that
 * came over HTTP, against a server with one table (with a GSI) and a few items. Any
 * body gets DynamoDB's answer: nothing may crash, leak or corrupt the server.
 * FUZZ_SHOW=1 prints each answer, to check that a corpus reaches past validation. */
#include <fakedb/fakedb.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FUZZ_FAKEDB
#include "fuzz_common.h"

static const char *const OPS[] = {
    "GetItem", "PutItem", "UpdateItem", "DeleteItem", "Query", "Scan", "BatchGetItem",
    "BatchWriteItem", "TransactWriteItems", "TransactGetItems", "CreateTable",
    "DescribeTable", "UpdateTable", "ListTables", "UpdateTimeToLive", "DescribeTimeToLive",
    "DeleteTable", "Unknown",
    /* DynamoDB Streams, on its own target */
    "DynamoDBStreams_20120810.ListStreams", "DynamoDBStreams_20120810.DescribeStream",
    "DynamoDBStreams_20120810.GetShardIterator", "DynamoDBStreams_20120810.GetRecords",
    /* the start-up calls (tags, continuous backups, limits, endpoints) */
    "TagResource", "UntagResource", "ListTagsOfResource", "DescribeContinuousBackups",
    "UpdateContinuousBackups", "DescribeLimits", "DescribeEndpoints",
    /* PartiQL */
    "ExecuteStatement", "BatchExecuteStatement", "ExecuteTransaction"};
#define N_OPS (sizeof OPS / sizeof OPS[0])

static fakedb *db;

static void handle(const char *op, const char *body, size_t len)
{
    fuzz_fakedb_handle(db, op, body, len);
}

static void setup(void)
{
    fakedb_error err;
    /* a fixed clock: the table's stream ARN, and so the seeds' iterators, are known */
    db = fakedb_start(&(fakedb_options){.fake_clock = true, .fake_clock_start_ms = 1700000000000}, &err);
    if (!db)
        abort();
    static const char create[] =
        "{\"TableName\":\"Tab\",\"KeySchema\":[{\"AttributeName\":\"pk\",\"KeyType\":\"HASH\"},"
        "{\"AttributeName\":\"sk\",\"KeyType\":\"RANGE\"}],\"AttributeDefinitions\":["
        "{\"AttributeName\":\"pk\",\"AttributeType\":\"S\"},{\"AttributeName\":\"sk\","
        "\"AttributeType\":\"N\"},{\"AttributeName\":\"g\",\"AttributeType\":\"S\"}],"
        "\"GlobalSecondaryIndexes\":[{\"IndexName\":\"Gix\",\"KeySchema\":[{\"AttributeName\":"
        "\"g\",\"KeyType\":\"HASH\"}],\"Projection\":{\"ProjectionType\":\"ALL\"}}],"
        "\"BillingMode\":\"PAY_PER_REQUEST\",\"StreamSpecification\":{\"StreamEnabled\":true,"
        "\"StreamViewType\":\"NEW_AND_OLD_IMAGES\"}}";
    handle("CreateTable", create, sizeof create - 1);
    static const char put[] =
        "{\"TableName\":\"Tab\",\"Item\":{\"pk\":{\"S\":\"a\"},\"sk\":{\"N\":\"1\"},"
        "\"g\":{\"S\":\"x\"},\"l\":{\"L\":[{\"N\":\"1\"}]},\"m\":{\"M\":{\"k\":{\"SS\":[\"v\"]}}}}}";
    handle("PutItem", put, sizeof put - 1);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!db)
        setup();
    if (size < 1)
        return 0;
    const char *op = OPS[data[0] % N_OPS];
    /* Keep the table: a DeleteTable would make the rest of the run shallow. */
    if (!strcmp(op, "DeleteTable"))
        op = "DescribeTable";
    handle(op, (const char *)data + 1, size - 1);
    return 0;
}
