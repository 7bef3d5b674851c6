/* fuzz_partiql.c: libFuzzer target for fakedb's PartiQL. The first byte picks
 * ExecuteStatement, BatchExecuteStatement (the statement twice) or ExecuteTransaction,
 * the rest is the statement's text, bound to three fixed parameters, run as the server
 * runs a request against a table (with a GSI) holding a few items. Any text gets
 * DynamoDB's answer: nothing may crash, leak or corrupt the server. The statement is
 * put into the JSON body here, so that the fuzzer mutates PartiQL, not JSON escapes.
 * FUZZ_SHOW=1 prints each answer. */
#include <fakedb/fakedb.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FUZZ_FAKEDB
#include "fuzz_common.h"

static fakedb *db;

static void handle(const char *op, const char *body)
{
    fuzz_fakedb_handle(db, op, body, strlen(body));
}

static void setup(void)
{
    fakedb_error err;
    db = fakedb_start(&(fakedb_options){.fake_clock = true}, &err);
    if (!db)
        abort();
    handle("CreateTable",
           "{\"TableName\":\"Tab\",\"KeySchema\":[{\"AttributeName\":\"pk\",\"KeyType\":\"HASH\"},"
           "{\"AttributeName\":\"sk\",\"KeyType\":\"RANGE\"}],\"AttributeDefinitions\":["
           "{\"AttributeName\":\"pk\",\"AttributeType\":\"S\"},{\"AttributeName\":\"sk\","
           "\"AttributeType\":\"N\"},{\"AttributeName\":\"g\",\"AttributeType\":\"S\"}],"
           "\"GlobalSecondaryIndexes\":[{\"IndexName\":\"Gix\",\"KeySchema\":[{\"AttributeName\":"
           "\"g\",\"KeyType\":\"HASH\"}],\"Projection\":{\"ProjectionType\":\"ALL\"}}],"
           "\"BillingMode\":\"PAY_PER_REQUEST\"}");
    handle("PutItem",
           "{\"TableName\":\"Tab\",\"Item\":{\"pk\":{\"S\":\"a\"},\"sk\":{\"N\":\"1\"},"
           "\"g\":{\"S\":\"x\"},\"l\":{\"L\":[{\"N\":\"1\"}]},\"m\":{\"M\":{\"k\":{\"SS\":[\"v\"]}}}}}");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!db)
        setup();
    if (size < 1)
        return 0;
    json_object *stmt = json_object_new_object();
    json_object_object_add(stmt, "Statement", json_object_new_string_len((const char *)data + 1, (int)(size - 1)));
    json_object_object_add(stmt, "Parameters",
                           json_tokener_parse("[{\"S\":\"a\"},{\"N\":\"1\"},{\"L\":[{\"S\":\"x\"}]}]"));
    json_object *body = json_object_new_object();
    const char *op;
    switch (data[0] % 3) {
    case 0:
        op = "ExecuteStatement";
        json_object_put(body);
        body = json_object_get(stmt);
        break;
    case 1: {
        op = "BatchExecuteStatement";
        json_object *list = json_object_new_array();
        json_object_array_add(list, json_object_get(stmt));
        json_object_array_add(list, json_object_get(stmt));
        json_object_object_add(body, "Statements", list);
        break;
    }
    default: {
        op = "ExecuteTransaction";
        json_object *list = json_object_new_array();
        json_object_array_add(list, json_object_get(stmt));
        json_object_object_add(body, "TransactStatements", list);
        break;
    }
    }
    handle(op, json_object_to_json_string_ext(body, JSON_C_TO_STRING_PLAIN));
    json_object_put(body);
    json_object_put(stmt);
    return 0;
}
