#!/usr/bin/env python3
"""A scripted session of boto3 with the calls tools make at start-up: tags (CreateTable's
Tags, TagResource, UntagResource, ListTagsOfResource and its paginator), point-in-time
recovery (DescribeContinuousBackups, UpdateContinuousBackups), DescribeLimits and
DescribeEndpoints. Every step asserts what DynamoDB answers.

Usage: boto3_tags.py ENDPOINT [--ddblocal]
With --ddblocal only what DynamoDB Local supports is run (CreateTable with Tags and
DescribeLimits; it answers UnknownOperationException to the others, which is checked)."""
import sys
import uuid

import boto3
from botocore.config import Config
from botocore.exceptions import ClientError

endpoint = sys.argv[1]
local = "--ddblocal" in sys.argv[2:]
ddb = boto3.client("dynamodb", endpoint_url=endpoint, region_name="us-east-1",
                   aws_access_key_id="AKIDPEER", aws_secret_access_key="peer-secret",
                   config=Config(retries={"max_attempts": 1}))
table = "Tags" + uuid.uuid4().hex[:8]
steps = 0


def step(name, ok):
    global steps
    if not ok:
        print(f"boto3_tags: FAILED at {name}")
        sys.exit(1)
    steps += 1


def error(fn, **kw):
    try:
        fn(**kw)
    except ClientError as e:
        return e.response["Error"]["Code"], e.response["Error"].get("Message", "")
    return None, None


def tags(arn):
    out = {}
    for page in ddb.get_paginator("list_tags_of_resource").paginate(ResourceArn=arn):
        out.update({t["Key"]: t["Value"] for t in page["Tags"]})
    return out


desc = ddb.create_table(
    TableName=table,
    AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
    KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
    BillingMode="PAY_PER_REQUEST",
    Tags=[{"Key": "team", "Value": "core"}, {"Key": "env", "Value": "ci"}])["TableDescription"]
arn = desc["TableArn"]
ddb.get_waiter("table_exists").wait(TableName=table, WaiterConfig={"Delay": 1, "MaxAttempts": 30})

limits = ddb.describe_limits()
step("limits", (limits["AccountMaxReadCapacityUnits"], limits["AccountMaxWriteCapacityUnits"],
                limits["TableMaxReadCapacityUnits"], limits["TableMaxWriteCapacityUnits"]) == (80000, 80000, 40000, 40000))

if local:
    # DynamoDB Local accepts Tags on CreateTable but has none of the other calls.
    step("local tags", error(ddb.list_tags_of_resource, ResourceArn=arn)[0] == "UnknownOperationException")
    step("local backups", error(ddb.describe_continuous_backups, TableName=table)[0] == "UnknownOperationException")
    ddb.delete_table(TableName=table)
    print(f"boto3_tags: {steps} steps passed (DynamoDB Local's subset)")
    sys.exit(0)

step("tags from create", tags(arn) == {"team": "core", "env": "ci"})
ddb.tag_resource(ResourceArn=arn, Tags=[{"Key": "env", "Value": "prod"}, {"Key": "owner", "Value": "ops team"}])
step("tag", tags(arn) == {"team": "core", "env": "prod", "owner": "ops team"})
ddb.untag_resource(ResourceArn=arn, TagKeys=["team", "never-set"])
step("untag", tags(arn) == {"env": "prod", "owner": "ops team"})
step("describe has no tags", "Tags" not in ddb.describe_table(TableName=table)["Table"])

code, msg = error(ddb.tag_resource, ResourceArn=arn + "x", Tags=[{"Key": "a", "Value": "b"}])
step("missing table", code == "ResourceNotFoundException" and "ResourcArn" in msg)
index_arn = arn + "/index/none"
code, msg = error(ddb.list_tags_of_resource, ResourceArn=index_arn)
step("index arn", code == "ValidationException" and msg == "One or more parameter values were invalid: Invalid resource arn "
     "provided, only table or stream is accepted. Provided resource arn: " + index_arn)
code, msg = error(ddb.tag_resource, ResourceArn=arn, Tags=[{"Key": "aws:reserved", "Value": "x"}])
step("reserved prefix", code == "ValidationException" and msg == "Tag Key cannot be prefixed with aws:, Key: aws:reserved")
code, msg = error(ddb.tag_resource, ResourceArn=arn, Tags=[{"Key": "hi!", "Value": "x"}])
step("alphabet", code == "ValidationException" and msg == "The Tag Key provided is invalid, Key: hi!")
code, _ = error(ddb.tag_resource, ResourceArn=arn, Tags=[{"Key": "x" * 129, "Value": "x"}])
step("key length", code == "ValidationException")
code, msg = error(ddb.tag_resource, ResourceArn=arn, Tags=[{"Key": f"k{i}", "Value": "v"} for i in range(49)])
step("fifty", code == "ValidationException" and msg == "Number of Tags exceed the current limit for the provided ResourceArn"
     and len(tags(arn)) == 2)
ddb.tag_resource(ResourceArn=arn, Tags=[{"Key": f"k{i}", "Value": "v"} for i in range(48)])
step("fifty exactly", len(tags(arn)) == 50)

pitr = ddb.describe_continuous_backups(TableName=table)["ContinuousBackupsDescription"]
step("pitr off", pitr["ContinuousBackupsStatus"] == "ENABLED" and
     pitr["PointInTimeRecoveryDescription"] == {"PointInTimeRecoveryStatus": "DISABLED"})
pitr = ddb.update_continuous_backups(
    TableName=table, PointInTimeRecoverySpecification={"PointInTimeRecoveryEnabled": True, "RecoveryPeriodInDays": 10})
pd = pitr["ContinuousBackupsDescription"]["PointInTimeRecoveryDescription"]
step("pitr on", pd["PointInTimeRecoveryStatus"] == "ENABLED" and pd["RecoveryPeriodInDays"] == 10 and
     pd["EarliestRestorableDateTime"] <= pd["LatestRestorableDateTime"])
pd = ddb.describe_continuous_backups(TableName=arn)["ContinuousBackupsDescription"]["PointInTimeRecoveryDescription"]
step("pitr by arn", pd["PointInTimeRecoveryStatus"] == "ENABLED")
code, msg = error(ddb.describe_continuous_backups, TableName="NoSuchTable")
step("pitr missing table", code == "TableNotFoundException" and msg == "Table not found: NoSuchTable")
code, _ = error(ddb.update_continuous_backups, TableName="NoSuchTable",
                PointInTimeRecoverySpecification={"PointInTimeRecoveryEnabled": True})
step("pitr update missing table", code == "TableNotFoundException")
ddb.update_continuous_backups(TableName=table, PointInTimeRecoverySpecification={"PointInTimeRecoveryEnabled": False})
pd = ddb.describe_continuous_backups(TableName=table)["ContinuousBackupsDescription"]["PointInTimeRecoveryDescription"]
step("pitr off again", pd == {"PointInTimeRecoveryStatus": "DISABLED"})

eps = ddb.describe_endpoints()["Endpoints"]
step("endpoints", len(eps) == 1 and eps[0]["CachePeriodInMinutes"] == 1440 and
     eps[0]["Address"] == endpoint.split("://", 1)[1])

ddb.delete_table(TableName=table)
code, _ = error(ddb.list_tags_of_resource, ResourceArn=arn)
step("tags gone with the table", code == "ResourceNotFoundException")
print(f"boto3_tags: {steps} steps passed")
