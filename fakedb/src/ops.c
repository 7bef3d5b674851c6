/* ops.c: the operations by name: the dispatch table the dispatcher calls through, the
 * top of the operations layer (nothing in the layer calls back into it). */
#include "ops.h"

#include <string.h>

typedef int (*op_fn)(fakedb__store *, json_object *, fakedb__reply *);

static const struct {
    const char *name;
    op_fn fn;
} k_ops[FDB_OP_COUNT] = {
    { "CreateTable", fakedb__op_create_table },
    { "UpdateTable", fakedb__op_update_table },
    { "DeleteTable", fakedb__op_delete_table },
    { "DescribeTable", fakedb__op_describe_table },
    { "ListTables", fakedb__op_list_tables },
    { "UpdateTimeToLive", fakedb__op_update_ttl },
    { "DescribeTimeToLive", fakedb__op_describe_ttl },
    { "GetItem", fakedb__op_get_item },
    { "PutItem", fakedb__op_put_item },
    { "UpdateItem", fakedb__op_update_item },
    { "DeleteItem", fakedb__op_delete_item },
    { "Query", fakedb__op_query },
    { "Scan", fakedb__op_scan },
    { "BatchGetItem", fakedb__op_batch_get },
    { "BatchWriteItem", fakedb__op_batch_write },
    { "TransactWriteItems", fakedb__op_transact_write },
    { "TransactGetItems", fakedb__op_transact_get },
    { "ListStreams", fakedb__op_list_streams },
    { "DescribeStream", fakedb__op_describe_stream },
    { "GetShardIterator", fakedb__op_get_shard_iterator },
    { "GetRecords", fakedb__op_get_records },
    { "TagResource", fakedb__op_tag_resource },
    { "UntagResource", fakedb__op_untag_resource },
    { "ListTagsOfResource", fakedb__op_list_tags },
    { "DescribeContinuousBackups", fakedb__op_describe_backups },
    { "UpdateContinuousBackups", fakedb__op_update_backups },
    { "DescribeLimits", fakedb__op_describe_limits },
    { "DescribeEndpoints", fakedb__op_describe_endpoints },
    { "ExecuteStatement", fakedb__op_execute_statement },
    { "BatchExecuteStatement", fakedb__op_batch_execute_statement },
    { "ExecuteTransaction", fakedb__op_execute_transaction },
};

const char *fakedb__op_name(int op)
{
    return op >= 0 && op < FDB_OP_COUNT ? k_ops[op].name : "Unknown";
}

int fakedb__op_lookup(const char *name)
{
    for (int i = 0; i < FDB_OP_COUNT; i++)
        if (!strcmp(k_ops[i].name, name))
            return i;
    return -1;
}

bool fakedb__op_is_streams(int op)
{
    return op >= FDB_OP_LIST_STREAMS && op <= FDB_OP_GET_RECORDS;
}

int fakedb__op_call(int op, fakedb__store *db, json_object *req, fakedb__reply *r)
{
    if (fakedb__request_shape(req, r))
        return -1;
    return k_ops[op].fn(db, req, r);
}
