"""Differential cases for DynamoDB Streams (loaded by differential.py): StreamSpecification
on CreateTable/UpdateTable/DescribeTable, records of each write path read back through
the streams target, and the errors. Values each server makes its own (ARNs, shard ids,
iterators, sequence numbers) are named by reference ({"$stream": T}, {"$shard": T},
{"$iterator": [T, TYPE]}) and left out of the comparison (differential.py's VOLATILE)."""

S = "DynamoDBStreams_20120810."
ST = "DiffStreams"
PK = [{"AttributeName": "pk", "KeyType": "HASH"}]
PKA = [{"AttributeName": "pk", "AttributeType": "S"}]
MISSING = "arn:aws:dynamodb:us-east-1:000000000000:table/DiffStreams/stream/2001-01-01T00:00:00.000"


def table(name, spec):
    return {"TableName": name, "KeySchema": PK, "AttributeDefinitions": PKA,
            "BillingMode": "PAY_PER_REQUEST", "StreamSpecification": spec}


def item(pk, **attrs):
    out = {"pk": {"S": pk}}
    out.update(attrs)
    return out


CASES = [
    ("streams-create-enabled-no-view", "CreateTable", table("DiffStreamsBad", {"StreamEnabled": True})),
    ("streams-create-disabled-with-view", "CreateTable", table("DiffStreamsBad", {"StreamEnabled": False, "StreamViewType": "KEYS_ONLY"})),
    ("streams-create-bad-view", "CreateTable", table("DiffStreamsBad", {"StreamEnabled": True, "StreamViewType": "ALL"})),
    ("streams-create-disabled", "CreateTable", table("DiffStreamsOff", {"StreamEnabled": False})),
    ("streams-disable-none", "UpdateTable", {"TableName": "DiffStreamsOff", "StreamSpecification": {"StreamEnabled": False}}),
    ("streams-delete-off", "DeleteTable", {"TableName": "DiffStreamsOff"}),
    ("streams-create", "CreateTable", table(ST, {"StreamEnabled": True, "StreamViewType": "NEW_AND_OLD_IMAGES"})),
    ("streams-describe-table", "DescribeTable", {"TableName": ST}),
    ("streams-put-a", "PutItem", {"TableName": ST, "Item": item("a", n={"N": "1"})}),
    ("streams-update-a", "UpdateItem", {"TableName": ST, "Key": item("a"), "UpdateExpression": "SET n = n + :one",
                                         "ExpressionAttributeValues": {":one": {"N": "1"}}}),
    ("streams-put-same", "PutItem", {"TableName": ST, "Item": item("a", n={"N": "2"})}),
    ("streams-put-fails", "PutItem", {"TableName": ST, "Item": item("a"), "ConditionExpression": "attribute_not_exists(pk)"}),
    ("streams-batch", "BatchWriteItem", {"RequestItems": {ST: [{"PutRequest": {"Item": item("b")}},
                                                               {"PutRequest": {"Item": item("c", l={"L": [{"S": "x"}]})}}]}}),
    ("streams-transact", "TransactWriteItems", {"TransactItems": [
        {"Delete": {"TableName": ST, "Key": item("b")}},
        {"Update": {"TableName": ST, "Key": item("c"), "UpdateExpression": "SET m = :m",
                    "ExpressionAttributeValues": {":m": {"M": {"k": {"BOOL": True}}}}}}]}),
    ("streams-delete-missing", "DeleteItem", {"TableName": ST, "Key": item("nothere")}),
    ("streams-delete-a", "DeleteItem", {"TableName": ST, "Key": item("a")}),
    ("streams-list", S + "ListStreams", {"TableName": ST}),
    ("streams-list-limit-0", S + "ListStreams", {"Limit": 0}),
    ("streams-describe", S + "DescribeStream", {"StreamArn": {"$stream": ST}}),
    ("streams-records", S + "GetRecords", {"ShardIterator": {"$iterator": [ST, "TRIM_HORIZON"]}}),
    ("streams-records-limit-2", S + "GetRecords", {"ShardIterator": {"$iterator": [ST, "TRIM_HORIZON"]}, "Limit": 2}),
    ("streams-records-latest", S + "GetRecords", {"ShardIterator": {"$iterator": [ST, "LATEST"]}}),
    ("streams-records-limit-0", S + "GetRecords", {"ShardIterator": {"$iterator": [ST, "LATEST"]}, "Limit": 0}),
    ("streams-records-limit-1001", S + "GetRecords", {"ShardIterator": {"$iterator": [ST, "LATEST"]}, "Limit": 1001}),
    ("streams-records-bad-iterator", S + "GetRecords", {"ShardIterator": "not-an-iterator"}),
    ("streams-iterator-bad-type", S + "GetShardIterator", {"StreamArn": {"$stream": ST}, "ShardId": {"$shard": ST},
                                                           "ShardIteratorType": "OLDEST"}),
    ("streams-iterator-bad-shard", S + "GetShardIterator", {"StreamArn": {"$stream": ST},
                                                            "ShardId": "shardId-00000000000000000000-00000000",
                                                            "ShardIteratorType": "LATEST"}),
    ("streams-iterator-short-seq", S + "GetShardIterator", {"StreamArn": {"$stream": ST}, "ShardId": {"$shard": ST},
                                                            "ShardIteratorType": "AT_SEQUENCE_NUMBER", "SequenceNumber": "12"}),
    ("streams-describe-missing", S + "DescribeStream", {"StreamArn": MISSING}),
    ("streams-describe-malformed-arn", S + "DescribeStream", {"StreamArn": "x" * 40}),
    ("streams-iterator-malformed-arn", S + "GetShardIterator", {"StreamArn": MISSING.replace("2001-01-01T00:00:00.000", "notalabel"),
                                                                "ShardId": "shardId-00000000000000000000-00000000",
                                                                "ShardIteratorType": "LATEST"}),
    ("streams-describe-child-shards", S + "DescribeStream", {"StreamArn": {"$stream": ST},
                                                             "ShardFilter": {"Type": "CHILD_SHARDS", "ShardId": {"$shard": ST}}}),
    ("streams-describe-filter-bad-type", S + "DescribeStream", {"StreamArn": {"$stream": ST},
                                                                "ShardFilter": {"Type": "PARENT_SHARDS", "ShardId": {"$shard": ST}}}),
    ("streams-describe-no-arn", S + "DescribeStream", {}),
    ("streams-unknown-op", S + "ListShards", {}),
    ("streams-op-on-dynamodb-target", "GetRecords", {"ShardIterator": "x"}),
    ("streams-enable-twice", "UpdateTable", {"TableName": ST, "StreamSpecification": {"StreamEnabled": True, "StreamViewType": "KEYS_ONLY"}}),
    ("streams-update-no-view", "UpdateTable", {"TableName": ST, "StreamSpecification": {"StreamEnabled": True}}),
    ("streams-update-disable-with-view", "UpdateTable", {"TableName": ST, "StreamSpecification": {"StreamEnabled": False, "StreamViewType": "KEYS_ONLY"}}),
    ("streams-disable", "UpdateTable", {"TableName": ST, "StreamSpecification": {"StreamEnabled": False}}),
    ("streams-describe-disabled", S + "DescribeStream", {"StreamArn": {"$stream": ST}}),
    ("streams-records-disabled", S + "GetRecords", {"ShardIterator": {"$iterator": [ST, "TRIM_HORIZON"]}}),
    ("streams-put-after-disable", "PutItem", {"TableName": ST, "Item": item("z")}),
    ("streams-enable-again", "UpdateTable", {"TableName": ST, "StreamSpecification": {"StreamEnabled": True, "StreamViewType": "KEYS_ONLY"}}),
    ("streams-put-keys-only", "PutItem", {"TableName": ST, "Item": item("k", big={"S": "x" * 50})}),
    ("streams-records-keys-only", S + "GetRecords", {"ShardIterator": {"$iterator": [ST, "TRIM_HORIZON"]}}),
    ("streams-delete-table", "DeleteTable", {"TableName": ST}),
]
