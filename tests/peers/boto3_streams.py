#!/usr/bin/env python3
"""A scripted session of boto3's 'dynamodbstreams' client against a DynamoDB endpoint: a
table with a stream, writes by every path, the records read back through ListStreams,
DescribeStream, GetShardIterator (each iterator type) and GetRecords, the errors a
consumer meets, and disabling and enabling the stream again. Every step asserts what
DynamoDB answers; the steps hold for fakedb and DynamoDB Local alike.
Usage: boto3_streams.py ENDPOINT"""
import datetime
import sys
import uuid

import boto3
from botocore.config import Config
from botocore.exceptions import ClientError

endpoint = sys.argv[1]
kw = dict(endpoint_url=endpoint, region_name="us-east-1", aws_access_key_id="AKIDPEER",
          aws_secret_access_key="peer-secret", config=Config(retries={"max_attempts": 1}))
ddb = boto3.client("dynamodb", **kw)
streams = boto3.client("dynamodbstreams", **kw)
table = "Streams" + uuid.uuid4().hex[:8]
steps = 0


def step(name, ok):
    global steps
    if not ok:
        print(f"boto3_streams: FAILED at {name}")
        sys.exit(1)
    steps += 1


def error_code(fn, **args):
    try:
        fn(**args)
    except ClientError as e:
        return e.response["Error"]["Code"]
    return None


def read(arn, shard, kind="TRIM_HORIZON", seq=None, limit=None):
    """Every record from an iterator of `kind`, following NextShardIterator until a page
    comes back empty (bounded)."""
    args = dict(StreamArn=arn, ShardId=shard, ShardIteratorType=kind)
    if seq:
        args["SequenceNumber"] = seq
    it = streams.get_shard_iterator(**args)["ShardIterator"]
    out = []
    for _ in range(20):
        page = streams.get_records(ShardIterator=it, **({"Limit": limit} if limit else {}))
        out += page["Records"]
        it = page.get("NextShardIterator")
        if not page["Records"] or not it:
            break
    return out


ddb.create_table(
    TableName=table,
    AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
    KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
    BillingMode="PAY_PER_REQUEST",
    StreamSpecification={"StreamEnabled": True, "StreamViewType": "NEW_AND_OLD_IMAGES"})
ddb.get_waiter("table_exists").wait(TableName=table, WaiterConfig={"Delay": 1, "MaxAttempts": 30})
desc = ddb.describe_table(TableName=table)["Table"]
arn = desc["LatestStreamArn"]
step("describe table", desc["StreamSpecification"] == {"StreamEnabled": True, "StreamViewType": "NEW_AND_OLD_IMAGES"}
     and arn.endswith("/stream/" + desc["LatestStreamLabel"]) and f":table/{table}/stream/" in arn)

listed = streams.list_streams(TableName=table)["Streams"]
step("list streams", [s["StreamArn"] for s in listed] == [arn] and listed[0]["TableName"] == table)
sd = streams.describe_stream(StreamArn=arn)["StreamDescription"]
shard = sd["Shards"][0]["ShardId"]
step("describe stream", sd["StreamStatus"] in ("ENABLED", "ENABLING") and sd["StreamViewType"] == "NEW_AND_OLD_IMAGES"
     and sd["TableName"] == table and sd["KeySchema"] == [{"AttributeName": "pk", "KeyType": "HASH"}]
     and "StartingSequenceNumber" in sd["Shards"][0]["SequenceNumberRange"])

# every write path, in order
ddb.put_item(TableName=table, Item={"pk": {"S": "a"}, "n": {"N": "1"}})
ddb.update_item(TableName=table, Key={"pk": {"S": "a"}}, UpdateExpression="SET n = n + :one",
                ExpressionAttributeValues={":one": {"N": "1"}})
ddb.batch_write_item(RequestItems={table: [{"PutRequest": {"Item": {"pk": {"S": "b"}}}},
                                           {"PutRequest": {"Item": {"pk": {"S": "c"}}}}]})
ddb.transact_write_items(TransactItems=[
    {"Delete": {"TableName": table, "Key": {"pk": {"S": "b"}}}},
    {"Put": {"TableName": table, "Item": {"pk": {"S": "d"}, "s": {"SS": ["x", "y"]}}}}])
ddb.delete_item(TableName=table, Key={"pk": {"S": "a"}})
# a write whose condition fails writes no record
step("condition fails", error_code(ddb.put_item, TableName=table, Item={"pk": {"S": "c"}},
                                   ConditionExpression="attribute_not_exists(pk)") == "ConditionalCheckFailedException")

recs = read(arn, shard)
step("events", [(r["eventName"], r["dynamodb"]["Keys"]["pk"]["S"]) for r in recs] ==
     [("INSERT", "a"), ("MODIFY", "a"), ("INSERT", "b"), ("INSERT", "c"), ("REMOVE", "b"), ("INSERT", "d"), ("REMOVE", "a")])
step("record shape", all(r["eventSource"] == "aws:dynamodb" and r["eventVersion"] and r["eventID"]
                         and r["dynamodb"]["StreamViewType"] == "NEW_AND_OLD_IMAGES"
                         and isinstance(r["dynamodb"]["ApproximateCreationDateTime"], datetime.datetime)
                         and r["dynamodb"]["SizeBytes"] > 0 for r in recs))
step("images", recs[1]["dynamodb"]["OldImage"]["n"] == {"N": "1"} and recs[1]["dynamodb"]["NewImage"]["n"] == {"N": "2"}
     and "OldImage" not in recs[0]["dynamodb"] and "NewImage" not in recs[6]["dynamodb"]
     and recs[6]["dynamodb"]["OldImage"]["n"] == {"N": "2"} and sorted(recs[5]["dynamodb"]["NewImage"]["s"]["SS"]) == ["x", "y"])
seqs = [r["dynamodb"]["SequenceNumber"] for r in recs]
step("sequence order", all(int(a) < int(b) for a, b in zip(seqs, seqs[1:])))

# the iterator types
step("at sequence", [r["dynamodb"]["SequenceNumber"] for r in read(arn, shard, "AT_SEQUENCE_NUMBER", seqs[3])] == seqs[3:])
step("after sequence", [r["dynamodb"]["SequenceNumber"] for r in read(arn, shard, "AFTER_SEQUENCE_NUMBER", seqs[3])] == seqs[4:])
step("limit pages", [r["dynamodb"]["SequenceNumber"] for r in read(arn, shard, limit=2)] == seqs)
latest = streams.get_shard_iterator(StreamArn=arn, ShardId=shard, ShardIteratorType="LATEST")["ShardIterator"]
step("latest empty", streams.get_records(ShardIterator=latest)["Records"] == [])
ddb.put_item(TableName=table, Item={"pk": {"S": "e"}})
step("latest sees new", [r["dynamodb"]["Keys"]["pk"]["S"] for r in streams.get_records(ShardIterator=latest)["Records"]] == ["e"])

# the errors a consumer meets
missing = arn.rsplit("/", 1)[0] + "/2001-01-01T00:00:00.000"
step("unknown stream", error_code(streams.describe_stream, StreamArn=missing) == "ResourceNotFoundException")
step("unknown shard", error_code(streams.get_shard_iterator, StreamArn=arn, ShardId="shardId-00000000000000000000-00000000",
                                 ShardIteratorType="LATEST") == "ResourceNotFoundException")
step("bad iterator type", error_code(streams.get_shard_iterator, StreamArn=arn, ShardId=shard,
                                     ShardIteratorType="OLDEST") == "ValidationException")
# AWS: LimitExceededException (the GetRecords reference); DynamoDB Local: ValidationException
step("limit over 1000", error_code(streams.get_records, ShardIterator=latest, Limit=1001) in ("LimitExceededException", "ValidationException"))
step("enable twice", error_code(ddb.update_table, TableName=table,
                                StreamSpecification={"StreamEnabled": True, "StreamViewType": "KEYS_ONLY"}) == "ValidationException")

# disable: the stream stays readable; enable again: a new stream
ddb.update_table(TableName=table, StreamSpecification={"StreamEnabled": False})
sd = streams.describe_stream(StreamArn=arn)["StreamDescription"]
step("disabled", sd["StreamStatus"] in ("DISABLED", "DISABLING") and "StreamSpecification" not in ddb.describe_table(TableName=table)["Table"])
step("still readable", len(read(arn, shard)) == 8)
step("disable twice", error_code(ddb.update_table, TableName=table, StreamSpecification={"StreamEnabled": False}) == "ValidationException")
ddb.update_table(TableName=table, StreamSpecification={"StreamEnabled": True, "StreamViewType": "KEYS_ONLY"})
arn2 = ddb.describe_table(TableName=table)["Table"]["LatestStreamArn"]
# (the order of ListStreams, and whether it still lists a disabled stream, is left open)
step("new stream", arn2 != arn and arn2 in [s["StreamArn"] for s in streams.list_streams(TableName=table)["Streams"]])
ddb.put_item(TableName=table, Item={"pk": {"S": "f"}, "big": {"S": "x" * 100}})
shard2 = streams.describe_stream(StreamArn=arn2)["StreamDescription"]["Shards"][0]["ShardId"]
recs2 = read(arn2, shard2)
step("keys only", [r["dynamodb"]["Keys"] for r in recs2] == [{"pk": {"S": "f"}}]
     and "NewImage" not in recs2[0]["dynamodb"] and recs2[0]["dynamodb"]["StreamViewType"] == "KEYS_ONLY")

ddb.delete_table(TableName=table)
print(f"boto3_streams: {steps} steps passed")
