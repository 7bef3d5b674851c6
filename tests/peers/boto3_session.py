#!/usr/bin/env python3
"""A scripted session of boto3 (the AWS SDK for Python) against a DynamoDB endpoint:
tables, items, conditions, a transaction with a cancellation, a paginated query on a
GSI. Every step asserts what DynamoDB answers. Usage: boto3_session.py ENDPOINT"""
import sys
import uuid

import boto3
from botocore.config import Config
from botocore.exceptions import ClientError

endpoint = sys.argv[1]
ddb = boto3.client("dynamodb", endpoint_url=endpoint, region_name="us-east-1",
                   aws_access_key_id="AKIDPEER", aws_secret_access_key="peer-secret",
                   config=Config(retries={"max_attempts": 1}))
table = "Peers" + uuid.uuid4().hex[:8]
steps = 0


def step(name, ok):
    global steps
    if not ok:
        print(f"boto3: FAILED at {name}")
        sys.exit(1)
    steps += 1


def error_code(fn, **kw):
    try:
        fn(**kw)
    except ClientError as e:
        return e.response["Error"]["Code"], e.response
    return None, None


ddb.create_table(
    TableName=table,
    AttributeDefinitions=[{"AttributeName": a, "AttributeType": "S"} for a in ("pk", "sk", "status")],
    KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
    GlobalSecondaryIndexes=[{
        "IndexName": "byStatus",
        "KeySchema": [{"AttributeName": "status", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
        "Projection": {"ProjectionType": "ALL"},
    }],
    BillingMode="PAY_PER_REQUEST")
ddb.get_waiter("table_exists").wait(TableName=table, WaiterConfig={"Delay": 1, "MaxAttempts": 30})
desc = ddb.describe_table(TableName=table)["Table"]
step("describe", desc["TableStatus"] == "ACTIVE" and desc["GlobalSecondaryIndexes"][0]["IndexName"] == "byStatus")
# every page: the run's other tests share this DynamoDB Local, and their tables with it
step("list", table in [n for page in ddb.get_paginator("list_tables").paginate() for n in page["TableNames"]])

code, _ = error_code(ddb.create_table, TableName=table,
                     AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
                     KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}], BillingMode="PAY_PER_REQUEST")
step("create twice", code == "ResourceInUseException")

for i in range(25):
    ddb.put_item(TableName=table, Item={
        "pk": {"S": "order"}, "sk": {"S": f"{i:03d}"}, "status": {"S": "placed" if i % 2 == 0 else "shipped"},
        "total": {"N": str(i * 10 + 0.5)}, "tags": {"SS": ["a", "b"]}, "meta": {"M": {"n": {"N": "1"}, "l": {"L": [{"BOOL": True}, {"NULL": True}]}}},
        "blob": {"B": b"\x00\x01binary"}})
got = ddb.get_item(TableName=table, Key={"pk": {"S": "order"}, "sk": {"S": "004"}}, ConsistentRead=True)["Item"]
step("get", got["total"] == {"N": "40.5"} and got["blob"] == {"B": b"\x00\x01binary"} and got["meta"]["M"]["l"]["L"][0] == {"BOOL": True})

code, resp = error_code(ddb.put_item, TableName=table, Item={"pk": {"S": "order"}, "sk": {"S": "004"}},
                        ConditionExpression="attribute_not_exists(pk)",
                        ReturnValuesOnConditionCheckFailure="ALL_OLD")
step("condition fails", code == "ConditionalCheckFailedException" and resp.get("Item", {}).get("sk") == {"S": "004"})

upd = ddb.update_item(TableName=table, Key={"pk": {"S": "order"}, "sk": {"S": "004"}},
                      UpdateExpression="SET #t = #t + :d, notes = list_append(if_not_exists(notes, :empty), :n) ADD tags :c REMOVE #b",
                      ConditionExpression="#s = :placed",
                      ExpressionAttributeNames={"#t": "total", "#s": "status", "#b": "blob"},
                      ExpressionAttributeValues={":d": {"N": "0.25"}, ":empty": {"L": []}, ":n": {"L": [{"S": "gift"}]},
                                                 ":c": {"SS": ["c"]}, ":placed": {"S": "placed"}},
                      ReturnValues="ALL_NEW")["Attributes"]
step("update", upd["total"] == {"N": "40.75"} and upd["notes"] == {"L": [{"S": "gift"}]}
     and sorted(upd["tags"]["SS"]) == ["a", "b", "c"] and "blob" not in upd)

code, _ = error_code(ddb.update_item, TableName=table, Key={"pk": {"S": "order"}, "sk": {"S": "004"}},
                     UpdateExpression="SET status = :x", ExpressionAttributeValues={":x": {"S": "y"}})
step("reserved word", code == "ValidationException")

code, resp = error_code(ddb.transact_write_items, TransactItems=[
    {"ConditionCheck": {"TableName": table, "Key": {"pk": {"S": "order"}, "sk": {"S": "001"}},
                        "ConditionExpression": "#s = :placed", "ExpressionAttributeNames": {"#s": "status"},
                        "ExpressionAttributeValues": {":placed": {"S": "placed"}}}},
    {"Put": {"TableName": table, "Item": {"pk": {"S": "order"}, "sk": {"S": "900"}}}},
])
reasons = [r["Code"] for r in resp.get("CancellationReasons", [])] if resp else []
step("transaction cancelled", code == "TransactionCanceledException" and reasons == ["ConditionalCheckFailed", "None"])
step("cancelled put not applied", "Item" not in ddb.get_item(TableName=table, Key={"pk": {"S": "order"}, "sk": {"S": "900"}}))

ddb.transact_write_items(TransactItems=[
    {"ConditionCheck": {"TableName": table, "Key": {"pk": {"S": "order"}, "sk": {"S": "000"}},
                        "ConditionExpression": "attribute_exists(pk)"}},
    {"Put": {"TableName": table, "Item": {"pk": {"S": "order"}, "sk": {"S": "901"}, "status": {"S": "placed"}}}},
])
step("transaction", "Item" in ddb.get_item(TableName=table, Key={"pk": {"S": "order"}, "sk": {"S": "901"}}))

pages, items = 0, []
for page in ddb.get_paginator("query").paginate(
        TableName=table, IndexName="byStatus", KeyConditionExpression="#s = :p AND sk BETWEEN :a AND :b",
        ExpressionAttributeNames={"#s": "status"},
        ExpressionAttributeValues={":p": {"S": "placed"}, ":a": {"S": "000"}, ":b": {"S": "999"}},
        PaginationConfig={"PageSize": 4}):
    pages += 1
    items += page["Items"]
sks = [i["sk"]["S"] for i in items]
step("paginated GSI query", len(items) == 14 and pages >= 4 and sks == sorted(sks))

out = ddb.batch_get_item(RequestItems={table: {"Keys": [{"pk": {"S": "order"}, "sk": {"S": f"{i:03d}"}} for i in range(5)]}})
step("batch get", len(out["Responses"][table]) == 5)
ddb.batch_write_item(RequestItems={table: [{"DeleteRequest": {"Key": {"pk": {"S": "order"}, "sk": {"S": f"{i:03d}"}}}} for i in range(5)]})
cnt = ddb.scan(TableName=table, Select="COUNT")["Count"]
step("batch write + scan count", cnt == 21)

ddb.delete_table(TableName=table)
code, _ = error_code(ddb.describe_table, TableName=table)
step("deleted", code == "ResourceNotFoundException")
print(f"boto3: {steps} passed, 0 failed")
