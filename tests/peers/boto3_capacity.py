#!/usr/bin/env python3
"""A scripted session of boto3 against fakedb asking for ReturnConsumedCapacity: items
built to exact sizes (attribute name lengths plus value lengths), and the units a user
reads from each call: single items, Query and Scan pages, batches, transactions, index
entries with INDEXES, and a failed condition that answers none. The numbers are AWS's
documented rules (docs/fakedb.md, "Consumed capacity"); DynamoDB Local charges some of
them otherwise (its differences are in the differential suite), so this runs on fakedb.
Usage: boto3_capacity.py ENDPOINT"""
import sys
import uuid

import boto3
from botocore.config import Config
from botocore.exceptions import ClientError

endpoint = sys.argv[1]
ddb = boto3.client("dynamodb", endpoint_url=endpoint, region_name="us-east-1", aws_access_key_id="AKIDPEER",
                   aws_secret_access_key="peer-secret", config=Config(retries={"max_attempts": 1}))
suffix = uuid.uuid4().hex[:8]
T, U = "Cap" + suffix, "CapU" + suffix
steps = 0


def step(name, ok):
    global steps
    if not ok:
        print(f"boto3_capacity: FAILED at {name}")
        sys.exit(1)
    steps += 1


def item(pk, sk, size, **extra):
    """An item of exactly `size` bytes, padded in v."""
    fixed = 2 + len(pk) + 2 + len(sk) + 1 + sum(len(n) + len(x) for n, x in extra.items())
    it = {"pk": {"S": pk}, "sk": {"S": sk}, "v": {"S": "x" * (size - fixed)}}
    it.update({n: {"S": x} for n, x in extra.items()})
    return it


def key(pk, sk):
    return {"pk": {"S": pk}, "sk": {"S": sk}}


def by_table(caps):
    return {c["TableName"]: c for c in caps}


for name, gsi in ((T, True), (U, False)):
    defs = [{"AttributeName": a, "AttributeType": "S"} for a in (("pk", "sk", "g") if gsi else ("pk", "sk"))]
    extra = {"GlobalSecondaryIndexes": [{"IndexName": "byG", "KeySchema": [{"AttributeName": "g", "KeyType": "HASH"}],
                                         "Projection": {"ProjectionType": "KEYS_ONLY"}}]} if gsi else {}
    ddb.create_table(TableName=name, BillingMode="PAY_PER_REQUEST", AttributeDefinitions=defs,
                     KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}], **extra)

# single items: a write unit per started KB, a read unit per started 4 KB
c = ddb.put_item(TableName=U, Item=item("a", "1", 1024), ReturnConsumedCapacity="TOTAL")["ConsumedCapacity"]
step("put 1024", c == {"TableName": U, "CapacityUnits": 1.0})
c = ddb.put_item(TableName=U, Item=item("a", "2", 1025), ReturnConsumedCapacity="TOTAL")["ConsumedCapacity"]
step("put 1025", c["CapacityUnits"] == 2.0)
c = ddb.put_item(TableName=T, Item=item("a", "3", 1025, g="G"), ReturnConsumedCapacity="INDEXES")["ConsumedCapacity"]
step("put with index", c["CapacityUnits"] == 3.0 and c["Table"]["CapacityUnits"] == 2.0
     and c["GlobalSecondaryIndexes"]["byG"]["CapacityUnits"] == 1.0)
c = ddb.update_item(TableName=T, Key=key("a", "3"), UpdateExpression="SET g = :g", ExpressionAttributeValues={":g": {"S": "H"}},
                    ReturnConsumedCapacity="INDEXES")["ConsumedCapacity"]
step("index key moved", c["GlobalSecondaryIndexes"]["byG"]["CapacityUnits"] == 2.0 and c["CapacityUnits"] == 4.0)
step("none", "ConsumedCapacity" not in ddb.put_item(TableName=U, Item=item("a", "4", 10), ReturnConsumedCapacity="NONE"))
ddb.put_item(TableName=U, Item=item("r", "s4096", 4096))
ddb.put_item(TableName=U, Item=item("r", "s4097", 4097))
step("get eventually", ddb.get_item(TableName=U, Key=key("r", "s4096"), ReturnConsumedCapacity="TOTAL")["ConsumedCapacity"]["CapacityUnits"] == 0.5)
step("get strongly", ddb.get_item(TableName=U, Key=key("r", "s4097"), ConsistentRead=True,
                                  ReturnConsumedCapacity="TOTAL")["ConsumedCapacity"]["CapacityUnits"] == 2.0)

# Query and Scan: the page's bytes summed and rounded once; filters do not reduce it
for i in range(5):
    ddb.put_item(TableName=U, Item=item("q", "s%d" % i, 1000))
qa = dict(TableName=U, KeyConditionExpression="pk = :p", ExpressionAttributeValues={":p": {"S": "q"}}, ReturnConsumedCapacity="TOTAL")
step("query", ddb.query(**qa)["ConsumedCapacity"]["CapacityUnits"] == 1.0)
page = ddb.query(**qa, ConsistentRead=True, FilterExpression="attribute_exists(nothing)")
step("query filtered", page["Count"] == 0 and page["ConsumedCapacity"]["CapacityUnits"] == 2.0)
page = ddb.query(**qa, ConsistentRead=True, Select="COUNT")
step("query count", page["Count"] == 5 and page["ConsumedCapacity"]["CapacityUnits"] == 2.0)
step("query limit", ddb.query(**qa, ConsistentRead=True, Limit=4)["ConsumedCapacity"]["CapacityUnits"] == 1.0)
step("query empty", ddb.query(**{**qa, "ExpressionAttributeValues": {":p": {"S": "nobody"}}})["ConsumedCapacity"]["CapacityUnits"] == 0.5)
# the table holds 1024 + 1025 + 10 + 4096 + 4097 + 5 x 1000 = 15,252 bytes: 4 units strongly
step("scan", ddb.scan(TableName=U, ReturnConsumedCapacity="TOTAL")["ConsumedCapacity"]["CapacityUnits"] == 2.0)
step("scan strongly", ddb.scan(TableName=U, ConsistentRead=True, ReturnConsumedCapacity="TOTAL")["ConsumedCapacity"]["CapacityUnits"] == 4.0)
c = ddb.query(TableName=T, IndexName="byG", KeyConditionExpression="g = :g", ExpressionAttributeValues={":g": {"S": "H"}},
              ReturnConsumedCapacity="INDEXES")["ConsumedCapacity"]
step("index query", c["CapacityUnits"] == 0.5 and c["Table"]["CapacityUnits"] == 0.0 and c["GlobalSecondaryIndexes"]["byG"]["CapacityUnits"] == 0.5)

# batches: a list, one entry per table; each read rounded on its own
r = ddb.batch_get_item(RequestItems={U: {"Keys": [key("r", "s4096"), key("r", "s4097"), key("r", "none")]},
                                     T: {"Keys": [key("a", "3")], "ConsistentRead": True}}, ReturnConsumedCapacity="INDEXES")
caps = by_table(r["ConsumedCapacity"])
step("batch get", len(r["ConsumedCapacity"]) == 2 and caps[U]["CapacityUnits"] == 2.0 and caps[U]["Table"]["CapacityUnits"] == 2.0
     and caps[T]["CapacityUnits"] == 1.0)
r = ddb.batch_write_item(RequestItems={U: [{"PutRequest": {"Item": item("w", "1", 2048)}}, {"DeleteRequest": {"Key": key("zz", "1")}}],
                                       T: [{"PutRequest": {"Item": item("w", "2", 1025, g="G")}}]}, ReturnConsumedCapacity="INDEXES")
caps = by_table(r["ConsumedCapacity"])
step("batch write", caps[U]["CapacityUnits"] == 3.0 and caps[T]["CapacityUnits"] == 3.0
     and caps[T]["GlobalSecondaryIndexes"]["byG"]["CapacityUnits"] == 1.0 and caps[T]["Table"]["CapacityUnits"] == 2.0)

# transactions: twice, index entries too, repeated as Write/ReadCapacityUnits
r = ddb.transact_write_items(TransactItems=[{"Put": {"TableName": T, "Item": item("t", "1", 1025, g="G")}},
                                            {"Put": {"TableName": U, "Item": item("t", "1", 100)}}], ReturnConsumedCapacity="INDEXES")
caps = by_table(r["ConsumedCapacity"])
step("transact write", caps[T]["CapacityUnits"] == 6.0 and caps[T]["WriteCapacityUnits"] == 6.0
     and caps[T]["GlobalSecondaryIndexes"]["byG"]["CapacityUnits"] == 2.0 and caps[U]["CapacityUnits"] == 2.0)
r = ddb.transact_get_items(TransactItems=[{"Get": {"TableName": U, "Key": key("r", "s4097")}},
                                          {"Get": {"TableName": U, "Key": key("r", "none")}}], ReturnConsumedCapacity="TOTAL")
step("transact get", r["ConsumedCapacity"] == [{"TableName": U, "CapacityUnits": 6.0, "ReadCapacityUnits": 6.0}])

# a failed condition: the error carries no ConsumedCapacity, the item is unchanged
try:
    ddb.put_item(TableName=U, Item=item("r", "s4096", 100), ConditionExpression="attribute_not_exists(pk)", ReturnConsumedCapacity="TOTAL")
    step("condition failed", False)
except ClientError as e:
    step("condition failed", e.response["Error"]["Code"] == "ConditionalCheckFailedException" and "ConsumedCapacity" not in e.response)
step("unchanged", len(ddb.get_item(TableName=U, Key=key("r", "s4096"))["Item"]["v"]["S"]) == 4096 - 11)
try:
    ddb.get_item(TableName=U, Key=key("r", "s4096"), ReturnConsumedCapacity="ALL")
    step("bad value", False)
except ClientError as e:
    step("bad value", e.response["Error"]["Code"] == "ValidationException")

ddb.delete_table(TableName=T)
ddb.delete_table(TableName=U)
print(f"boto3_capacity: {steps} steps passed")
