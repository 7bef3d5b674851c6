#!/usr/bin/env python3
"""A scripted session of boto3 using DynamoDB's legacy (non-expression) parameters:
Expected with Exists/Value and ComparisonOperator, ConditionalOperator, AttributeUpdates,
KeyConditions, QueryFilter, ScanFilter and AttributesToGet, and the refusal to mix them
with expressions. Every step asserts what DynamoDB answers; it runs against fakedb and
DynamoDB Local alike. Usage: boto3_legacy.py ENDPOINT"""
import sys
import uuid

import boto3
from botocore.config import Config
from botocore.exceptions import ClientError

endpoint = sys.argv[1]
ddb = boto3.client("dynamodb", endpoint_url=endpoint, region_name="us-east-1",
                   aws_access_key_id="AKIDPEER", aws_secret_access_key="peer-secret",
                   config=Config(retries={"max_attempts": 1}))
table = "Legacy" + uuid.uuid4().hex[:8]
steps = 0


def step(name, ok):
    global steps
    if not ok:
        print(f"boto3 legacy: FAILED at {name}")
        sys.exit(1)
    steps += 1


def error(fn, **kw):
    try:
        fn(**kw)
    except ClientError as e:
        return e.response["Error"]["Code"], e.response["Error"].get("Message", "")
    return None, None


def cond(op, *values):
    c = {"ComparisonOperator": op}
    if values:
        c["AttributeValueList"] = list(values)
    return c


N = lambda v: {"N": str(v)}  # noqa: E731
S = lambda v: {"S": v}  # noqa: E731

ddb.create_table(
    TableName=table,
    AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}, {"AttributeName": "sk", "AttributeType": "N"}],
    KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
    BillingMode="PAY_PER_REQUEST")
ddb.get_waiter("table_exists").wait(TableName=table, WaiterConfig={"Delay": 1, "MaxAttempts": 30})

# Expected with Exists: a create-only put, then its refusal
ddb.put_item(TableName=table, Item={"pk": S("a"), "sk": N(1), "n": N(5), "s": S("hello"), "tags": {"SS": ["x", "y"]}},
             Expected={"pk": {"Exists": False}})
code, _ = error(ddb.put_item, TableName=table, Item={"pk": S("a"), "sk": N(1)}, Expected={"pk": {"Exists": False}})
step("exists false refuses an overwrite", code == "ConditionalCheckFailedException")

# Expected with Value, and every kind of ComparisonOperator
key = {"pk": S("a"), "sk": N(1)}
for expected, ok in [
        ({"n": {"Value": N(5)}}, True),
        ({"n": {"Value": N(6)}}, False),
        ({"n": cond("GT", N(4))}, True),
        ({"n": cond("LE", N(4))}, False),
        ({"n": cond("BETWEEN", N(1), N(9))}, True),
        ({"n": cond("IN", N(1), N(2))}, False),
        ({"s": cond("BEGINS_WITH", S("he"))}, True),
        ({"s": cond("CONTAINS", S("ell"))}, True),
        ({"tags": cond("CONTAINS", S("z"))}, False),
        ({"tags": cond("NOT_CONTAINS", S("z"))}, True),
        ({"missing": cond("NULL")}, True),
        ({"n": cond("NOT_NULL")}, True),
        ({"n": cond("NE", N(5))}, False)]:
    code, _ = error(ddb.update_item, TableName=table, Key=key, Expected=expected,
                    AttributeUpdates={"seen": {"Action": "ADD", "Value": N(1)}})
    step(f"Expected {expected}", (code is None) == ok and (ok or code == "ConditionalCheckFailedException"))

# ConditionalOperator OR
ddb.update_item(TableName=table, Key=key, ConditionalOperator="OR",
                Expected={"n": cond("EQ", N(0)), "s": cond("EQ", S("hello"))},
                AttributeUpdates={"s": {"Action": "PUT", "Value": S("bye")}})
item = ddb.get_item(TableName=table, Key=key, ConsistentRead=True)["Item"]
step("ConditionalOperator OR", item["s"] == S("bye") and item["seen"] == N(8))

# AttributeUpdates: ADD to a number and a set, DELETE of set elements and of an attribute
r = ddb.update_item(TableName=table, Key=key, ReturnValues="UPDATED_NEW", AttributeUpdates={
    "n": {"Action": "ADD", "Value": N("-2.5")},
    "tags": {"Action": "DELETE", "Value": {"SS": ["x"]}},
    "seen": {"Action": "DELETE"},
    "more": {"Action": "ADD", "Value": {"NS": ["1", "2"]}}})
attrs = r["Attributes"]
step("AttributeUpdates", attrs["n"] == N("2.5") and attrs["tags"] == {"SS": ["y"]} and "seen" not in attrs
     and sorted(attrs["more"]["NS"]) == ["1", "2"])
code, msg = error(ddb.update_item, TableName=table, Key=key, AttributeUpdates={"pk": {"Value": S("b")}})
step("key attribute", code == "ValidationException" and "Cannot update attribute pk. This attribute is part of the key" in msg)
code, msg = error(ddb.update_item, TableName=table, Key=key, AttributeUpdates={"s": {"Action": "ADD", "Value": S("x")}})
step("ADD of a string", code == "ValidationException" and "ADD action is not supported for the type" in msg)
code, msg = error(ddb.update_item, TableName=table, Key=key, AttributeUpdates={"s": {"Action": "PUT"}})
step("PUT without a value", code == "ValidationException" and "Only DELETE action is allowed when no attribute value is specified" in msg)

# DeleteItem with Expected
ddb.put_item(TableName=table, Item={"pk": S("a"), "sk": N(2), "n": N(10)})
code, _ = error(ddb.delete_item, TableName=table, Key={"pk": S("a"), "sk": N(2)}, Expected={"n": cond("LT", N(10))})
step("delete refused", code == "ConditionalCheckFailedException")
ddb.delete_item(TableName=table, Key={"pk": S("a"), "sk": N(2)}, Expected={"n": cond("GE", N(10))})
step("delete done", "Item" not in ddb.get_item(TableName=table, Key={"pk": S("a"), "sk": N(2)}, ConsistentRead=True))

# KeyConditions, QueryFilter, ScanFilter, AttributesToGet, pages
for i in range(10):
    ddb.put_item(TableName=table, Item={"pk": S("q"), "sk": N(i), "v": N(i * i), "odd": {"BOOL": i % 2 == 1}})
r = ddb.query(TableName=table, KeyConditions={"pk": cond("EQ", S("q")), "sk": cond("BETWEEN", N(2), N(7))},
              QueryFilter={"v": cond("GT", N(10))},
              AttributesToGet=["sk"], ScanIndexForward=False)
step("query", [it["sk"]["N"] for it in r["Items"]] == ["7", "6", "5", "4"] and r["ScannedCount"] == 6
     and all(list(it) == ["sk"] for it in r["Items"]))
seen, start = [], None
while True:
    kw = {"ExclusiveStartKey": start} if start else {}
    r = ddb.query(TableName=table, KeyConditions={"pk": cond("EQ", S("q")), "sk": cond("GE", N(3))}, Limit=3, **kw)
    seen += [it["sk"]["N"] for it in r["Items"]]
    start = r.get("LastEvaluatedKey")
    if not start:
        break
step("query pages", seen == [str(i) for i in range(3, 10)])
r = ddb.scan(TableName=table, ScanFilter={"v": cond("LT", N(5)), "pk": cond("EQ", S("q"))}, ConditionalOperator="AND")
step("scan", r["Count"] == 3)
r = ddb.scan(TableName=table, ScanFilter={"v": cond("LT", N(5)), "s": cond("NOT_NULL")}, ConditionalOperator="OR",
             Select="COUNT")
step("scan OR count", r["Count"] == 4 and "Items" not in r)
r = ddb.get_item(TableName=table, Key=key, AttributesToGet=["n", "nothing"])
step("get AttributesToGet", r["Item"] == {"n": N("2.5")})
r = ddb.batch_get_item(RequestItems={table: {"Keys": [key], "AttributesToGet": ["s"]}})
step("batch AttributesToGet", r["Responses"][table] == [{"s": S("bye")}])

# validation
code, msg = error(ddb.query, TableName=table, KeyConditions={"pk": cond("BEGINS_WITH", S("q"))})
step("hash key BEGINS_WITH", code == "ValidationException")
code, msg = error(ddb.scan, TableName=table, ScanFilter={"v": cond("BETWEEN", N(1))})
step("BETWEEN one value", code == "ValidationException" and "Invalid number of argument(s) for the BETWEEN ComparisonOperator" in msg)
code, msg = error(ddb.put_item, TableName=table, Item={"pk": S("z"), "sk": N(0)}, Expected={"a": {"Exists": True}})
step("Exists true without Value", code == "ValidationException" and "Value must be provided when Exists is true for Attribute: a" in msg)

# mixing with expressions
mix = "Can not use both expression and non-expression parameters in the same request: "
code, msg = error(ddb.put_item, TableName=table, Item={"pk": S("z"), "sk": N(0)}, Expected={"pk": {"Exists": False}},
                  ConditionExpression="attribute_not_exists(pk)")
step("mix put", code == "ValidationException" and msg == mix + "Non-expression parameters: {Expected} Expression parameters: {ConditionExpression}")
code, msg = error(ddb.update_item, TableName=table, Key=key, AttributeUpdates={"a": {"Value": S("1")}},
                  UpdateExpression="SET b = :b", ExpressionAttributeValues={":b": S("2")})
step("mix update", code == "ValidationException" and msg == mix + "Non-expression parameters: {AttributeUpdates} Expression parameters: {UpdateExpression}")
code, msg = error(ddb.query, TableName=table, KeyConditionExpression="pk = :p", ExpressionAttributeValues={":p": S("q")},
                  QueryFilter={"v": cond("NOT_NULL")})
step("mix query", code == "ValidationException" and msg == mix + "Non-expression parameters: {QueryFilter} Expression parameters: {KeyConditionExpression}")
code, msg = error(ddb.get_item, TableName=table, Key=key, AttributesToGet=["n"], ProjectionExpression="n")
step("mix get", code == "ValidationException" and msg == mix + "Non-expression parameters: {AttributesToGet} Expression parameters: {ProjectionExpression}")
r = ddb.query(TableName=table, KeyConditions={"pk": cond("EQ", S("q"))}, FilterExpression="v > :v",
              ExpressionAttributeValues={":v": N(50)})
step("KeyConditions with FilterExpression", r["Count"] == 2)

ddb.delete_table(TableName=table)
print(f"boto3 legacy: {steps} steps passed")
