#!/usr/bin/env python3
"""A scripted session of boto3 against fakedb with a global secondary index whose key has
several HASH and RANGE attributes (DynamoDB's multi-attribute keys, which DynamoDB Local
does not have): the table created and described, writes in and out of the index, queries
valid and refused, order and pages, a filter on a key attribute, Scan, updates, deletes.
Usage: boto3_multikey.py ENDPOINT"""
import sys
import uuid

import boto3
from botocore.config import Config
from botocore.exceptions import ClientError, ParamValidationError

endpoint = sys.argv[1]
ddb = boto3.client("dynamodb", endpoint_url=endpoint, region_name="us-east-1",
                   aws_access_key_id="AKIDPEER", aws_secret_access_key="peer-secret",
                   config=Config(retries={"max_attempts": 1}))
table = "Multikey" + uuid.uuid4().hex[:8]
steps = 0


def step(name, ok):
    global steps
    if not ok:
        print(f"boto3_multikey: FAILED at {name}")
        sys.exit(1)
    steps += 1


def error_of(fn, **args):
    try:
        fn(**args)
    except ClientError as e:
        return e.response["Error"]["Code"], e.response["Error"]["Message"]
    return None, None


key_schema = [{"AttributeName": "shop", "KeyType": "HASH"}, {"AttributeName": "tier", "KeyType": "HASH"},
              {"AttributeName": "yr", "KeyType": "RANGE"}, {"AttributeName": "town", "KeyType": "RANGE"}]
try:
    ddb.create_table(
        TableName=table,
        AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"},
                              {"AttributeName": "shop", "AttributeType": "S"},
                              {"AttributeName": "tier", "AttributeType": "N"},
                              {"AttributeName": "yr", "AttributeType": "N"},
                              {"AttributeName": "town", "AttributeType": "S"}],
        KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
        BillingMode="PAY_PER_REQUEST",
        GlobalSecondaryIndexes=[{"IndexName": "byPlace", "KeySchema": key_schema,
                                 "Projection": {"ProjectionType": "ALL"}}])
except ParamValidationError as e:
    # this botocore's model limits a KeySchema to two elements: nothing of the feature can
    # be sent through it
    print(f"boto3_multikey: botocore {boto3.__version__} refuses a KeySchema of 4 elements client-side ({e}); skipped")
    sys.exit(77)
ddb.get_waiter("table_exists").wait(TableName=table, WaiterConfig={"Delay": 1, "MaxAttempts": 30})
desc = ddb.describe_table(TableName=table)["Table"]
step("describe", desc["GlobalSecondaryIndexes"][0]["KeySchema"] == key_schema)

items = [("i1", "s1", "1", "10", "b"), ("i2", "s1", "1", "9", "z"), ("i3", "s1", "1", "10", "a"),
         ("i4", "s1", "1", "100", "a"), ("i5", "s1", "2", "10", "a"), ("i6", "s2", "1", "10", "a")]
for i, shop, tier, yr, town in items:
    ddb.put_item(TableName=table, Item={"id": {"S": i}, "shop": {"S": shop}, "tier": {"N": tier},
                                        "yr": {"N": yr}, "town": {"S": town}, "note": {"S": "n" + i}})
ddb.put_item(TableName=table, Item={"id": {"S": "o1"}, "shop": {"S": "s1"}, "tier": {"N": "1"}, "yr": {"N": "1"}})
code, msg = error_of(ddb.put_item, TableName=table, Item={"id": {"S": "w"}, "tier": {"S": "1"}})
step("wrong type refused", code == "ValidationException" and msg ==
     "One or more parameter values were invalid: Type mismatch for Index Key tier Expected: N Actual: S IndexName: byPlace")
step("scan counts the indexed", ddb.scan(TableName=table, IndexName="byPlace", Select="COUNT")["Count"] == 6)


def ids(kc, values, **more):
    out = ddb.query(TableName=table, IndexName="byPlace", KeyConditionExpression=kc,
                    ExpressionAttributeValues=values, **more)
    return [it["id"]["S"] for it in out["Items"]]


hv = {":s": {"S": "s1"}, ":t": {"N": "1"}}
step("hash only, ordered", ids("shop = :s AND tier = :t", hv) == ["i2", "i3", "i1", "i4"])
step("reversed", ids("shop = :s AND tier = :t", hv, ScanIndexForward=False) == ["i4", "i1", "i3", "i2"])
step("range equality then comparison",
     ids("shop = :s AND tier = :t AND yr = :y AND town > :c", {**hv, ":y": {"N": "10"}, ":c": {"S": "a"}}) == ["i1"])
step("first range attribute between",
     ids("shop = :s AND tier = :t AND yr BETWEEN :a AND :b", {**hv, ":a": {"N": "9"}, ":b": {"N": "10"}}) == ["i2", "i3", "i1"])
for kc, vals, want in [
        ("shop = :s", {":s": {"S": "s1"}}, "Query condition missed key schema element: tier"),
        ("shop = :s AND tier = :t AND town = :c", {**hv, ":c": {"S": "a"}}, "Query condition missed key schema element: yr"),
        ("shop = :s AND tier = :t AND yr > :y AND town = :c", {**hv, ":y": {"N": "1"}, ":c": {"S": "a"}},
         "has a condition other than equality"),
        ("shop = :s AND tier = :t AND note = :n", {**hv, ":n": {"S": "x"}}, "note is not a key attribute of the index")]:
    code, msg = error_of(ddb.query, TableName=table, IndexName="byPlace", KeyConditionExpression=kc,
                         ExpressionAttributeValues=vals)
    step(f"refused: {kc}", code == "ValidationException" and want in msg)
code, msg = error_of(ddb.query, TableName=table, IndexName="byPlace", KeyConditionExpression="shop = :s AND tier = :t",
                     FilterExpression="town = :c", ExpressionAttributeValues={**hv, ":c": {"S": "a"}})
step("filter on a key attribute", msg == "Filter Expression can only contain non-primary key attributes: Primary key attribute: town")

# pages of one item: each LastEvaluatedKey holds the table's key and the index's four
got, start = [], None
while True:
    args = {"ExclusiveStartKey": start} if start else {}
    page = ddb.query(TableName=table, IndexName="byPlace", KeyConditionExpression="shop = :s AND tier = :t",
                     ExpressionAttributeValues=hv, Limit=1, **args)
    got += [it["id"]["S"] for it in page["Items"]]
    start = page.get("LastEvaluatedKey")
    if not start:
        break
    step("last key", set(start) == {"id", "shop", "tier", "yr", "town"})
step("paged", got == ["i2", "i3", "i1", "i4"])

# an update moves an item out of the index and back, a delete takes it out
ddb.update_item(TableName=table, Key={"id": {"S": "i3"}}, UpdateExpression="REMOVE town")
step("out", ids("shop = :s AND tier = :t", hv) == ["i2", "i1", "i4"])
ddb.update_item(TableName=table, Key={"id": {"S": "o1"}}, UpdateExpression="SET town = :c",
                ExpressionAttributeValues={":c": {"S": "q"}})
step("in", ids("shop = :s AND tier = :t", hv) == ["o1", "i2", "i1", "i4"])
ddb.delete_item(TableName=table, Key={"id": {"S": "i2"}})
step("deleted", ids("shop = :s AND tier = :t", hv) == ["o1", "i1", "i4"])
code, msg = error_of(ddb.create_table, TableName=table + "x",
                     AttributeDefinitions=[{"AttributeName": n, "AttributeType": "S"} for n in "abcdef"],
                     KeySchema=[{"AttributeName": "a", "KeyType": "HASH"}], BillingMode="PAY_PER_REQUEST",
                     GlobalSecondaryIndexes=[{"IndexName": "many", "Projection": {"ProjectionType": "ALL"},
                                              "KeySchema": [{"AttributeName": n, "KeyType": "HASH"} for n in "bcdef"]}])
step("five HASH refused", code == "ValidationException" and "at most 4 HASH key elements" in msg)
ddb.delete_table(TableName=table)
print(f"boto3_multikey: {steps} steps passed")
