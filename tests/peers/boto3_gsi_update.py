#!/usr/bin/env python3
"""A scripted session of boto3 adding and removing a global secondary index with
UpdateTable against fakedb started with a fake clock and --delay-transient-statuses=5000:
the checks a user meets (an empty update, two index changes at once, key types,
definitions, names), the new index CREATING with Backfilling while the table is UPDATING,
reads of it refused, writes meanwhile, then ACTIVE with the backfilled items once the
clock moves (POST /fake/clock/advance); a deleted index DELETING and then gone.
Usage: boto3_gsi_update.py ENDPOINT"""
import json
import sys
import urllib.request
import uuid

import boto3
from botocore.config import Config
from botocore.exceptions import ClientError

endpoint = sys.argv[1]
ddb = boto3.client("dynamodb", endpoint_url=endpoint, region_name="us-east-1", aws_access_key_id="AKIDPEER",
                   aws_secret_access_key="peer-secret", config=Config(retries={"max_attempts": 1}))
table = "Gsi" + uuid.uuid4().hex[:8]
DELAY_MS = 5000
steps = 0


def step(name, ok):
    global steps
    if not ok:
        print(f"boto3_gsi_update: FAILED at {name}")
        sys.exit(1)
    steps += 1


def error(fn, **args):
    """(code, message) of the ClientError fn raises, or None."""
    try:
        fn(**args)
    except ClientError as e:
        return e.response["Error"]["Code"], e.response["Error"]["Message"]
    return None


def advance(ms):
    req = urllib.request.Request(endpoint.rstrip("/") + "/fake/clock/advance", data=json.dumps({"ms": ms}).encode(),
                                 headers={"Content-Type": "application/json"}, method="POST")
    with urllib.request.urlopen(req) as r:
        r.read()


def gsi(desc, name):
    return next((g for g in desc.get("GlobalSecondaryIndexes", []) if g["IndexName"] == name), None)


def create_action(name, attr):
    return {"Create": {"IndexName": name, "KeySchema": [{"AttributeName": attr, "KeyType": "HASH"}],
                       "Projection": {"ProjectionType": "ALL"}}}


def query(v):
    items = ddb.query(TableName=table, IndexName="gidx", KeyConditionExpression="g = :v",
                      ExpressionAttributeValues={":v": {"S": v}})["Items"]
    return sorted(i["pk"]["S"] for i in items)


ddb.create_table(TableName=table, AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
                 KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}], BillingMode="PAY_PER_REQUEST")
advance(DELAY_MS)
step("table active", ddb.describe_table(TableName=table)["Table"]["TableStatus"] == "ACTIVE")
for i in range(4):
    ddb.put_item(TableName=table, Item={"pk": {"S": f"k{i}"}, "g": {"S": f"v{i % 2}"}})
ddb.put_item(TableName=table, Item={"pk": {"S": "kn"}, "g": {"N": "5"}})
ddb.put_item(TableName=table, Item={"pk": {"S": "kx"}})

# the checks
G = [{"AttributeName": "g", "AttributeType": "S"}]
step("empty update", error(ddb.update_table, TableName=table, GlobalSecondaryIndexUpdates=[])[0] == "ValidationException")
step("two creates", error(ddb.update_table, TableName=table, AttributeDefinitions=G + [{"AttributeName": "h", "AttributeType": "S"}],
                          GlobalSecondaryIndexUpdates=[create_action("gidx", "g"), create_action("hidx", "h")])
     == ("LimitExceededException", "Subscriber limit exceeded: Only 1 online index can be created or deleted simultaneously per table"))
step("no definition", error(ddb.update_table, TableName=table, GlobalSecondaryIndexUpdates=[create_action("gidx", "g")])[0]
     == "ValidationException")
step("type conflict", error(ddb.update_table, TableName=table, AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "N"}],
                            GlobalSecondaryIndexUpdates=[create_action("pkidx", "pk")])
     == ("ValidationException", "invalid attribute, SchemaElement redefined should be of same type as previously defined"))
step("delete unknown", error(ddb.update_table, TableName=table, GlobalSecondaryIndexUpdates=[{"Delete": {"IndexName": "nope"}}])[0]
     == "ResourceNotFoundException")

# create: CREATING and backfilling, the table UPDATING
d = ddb.update_table(TableName=table, AttributeDefinitions=G, GlobalSecondaryIndexUpdates=[create_action("gidx", "g")])["TableDescription"]
step("updating", d["TableStatus"] == "UPDATING" and gsi(d, "gidx")["IndexStatus"] == "CREATING" and gsi(d, "gidx")["Backfilling"] is True)
step("query refused", error(ddb.query, TableName=table, IndexName="gidx", KeyConditionExpression="g = :v",
                            ExpressionAttributeValues={":v": {"S": "v0"}})
     == ("ValidationException", "Cannot read from backfilling global secondary index: gidx"))
step("scan refused", error(ddb.scan, TableName=table, IndexName="gidx")[0] == "ValidationException")
step("in use", error(ddb.update_table, TableName=table, AttributeDefinitions=G, GlobalSecondaryIndexUpdates=[create_action("gidx2", "g")])[0]
     == "ResourceInUseException")
ddb.put_item(TableName=table, Item={"pk": {"S": "k9"}, "g": {"S": "v0"}})
ddb.delete_item(TableName=table, Key={"pk": {"S": "k2"}})
advance(DELAY_MS)
d = ddb.describe_table(TableName=table)["Table"]
step("active", d["TableStatus"] == "ACTIVE" and gsi(d, "gidx")["IndexStatus"] == "ACTIVE" and "Backfilling" not in gsi(d, "gidx"))
step("backfilled", query("v0") == ["k0", "k9"] and query("v1") == ["k1", "k3"])
step("item count", gsi(d, "gidx")["ItemCount"] == 4)
step("exists again", error(ddb.update_table, TableName=table, AttributeDefinitions=G,
                           GlobalSecondaryIndexUpdates=[create_action("gidx", "g")])[0] == "ValidationException")

# delete: DELETING, then gone
d = ddb.update_table(TableName=table, GlobalSecondaryIndexUpdates=[{"Delete": {"IndexName": "gidx"}}])["TableDescription"]
step("deleting", d["TableStatus"] == "UPDATING" and gsi(d, "gidx")["IndexStatus"] == "DELETING")
step("deleted not queried", error(ddb.scan, TableName=table, IndexName="gidx")[0] == "ValidationException")
advance(DELAY_MS)
d = ddb.describe_table(TableName=table)["Table"]
step("gone", d["TableStatus"] == "ACTIVE" and "GlobalSecondaryIndexes" not in d)

ddb.delete_table(TableName=table)
print(f"boto3_gsi_update: {steps} steps passed")
