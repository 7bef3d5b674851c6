#!/usr/bin/env python3
"""Sends the same DynamoDB requests to two servers (DynamoDB Local and fakedb) and reports
every difference in what they answer: HTTP status, error type, message, and body (less
the fields that differ by nature: ids, dates, sizes). Differences that are known and
explained (docs/fakedb.md, "Differences from DynamoDB Local") are listed in
differential_known.txt and reported but do not fail the run.
Usage: differential.py ENDPOINT_A ENDPOINT_B [--show-all]"""
import json
import os
import sys
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
VOLATILE = {"CreationDateTime", "TableArn", "TableId", "TableSizeBytes", "ItemCount",
            "LastIncreaseDateTime", "LastDecreaseDateTime", "NumberOfDecreasesToday",
            "IndexArn", "IndexSizeBytes", "ConsumedCapacity", "LatestStreamArn",
            "WarmThroughput", "DeletionProtectionEnabled", "TableClassSummary",
            "ProvisionedThroughput", "BillingModeSummary", "OnDemandThroughput"}


def call(endpoint, op, body, raw=None):
    data = raw if raw is not None else json.dumps(body).encode()
    req = urllib.request.Request(endpoint + "/", data=data, method="POST", headers={
        "Content-Type": "application/x-amz-json-1.0",
        "X-Amz-Target": "DynamoDB_20120810." + op,
        "X-Amz-Date": "20260101T000000Z",
        "Authorization": "AWS4-HMAC-SHA256 Credential=AKIDDIFF/20260101/us-east-1/dynamodb/aws4_request, "
                         "SignedHeaders=content-type;host;x-amz-date;x-amz-target, Signature=" + "0" * 64})
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, json.loads(r.read() or b"{}")
    except urllib.error.HTTPError as e:
        text = e.read()
        try:
            return e.code, json.loads(text)
        except ValueError:
            return e.code, {"raw": text.decode(errors="replace")}


def unordered(v):
    """Sorts every list of items in an answer: for results whose order DynamoDB leaves
    unspecified (Scan, BatchGetItem, a GSI query among equal keys)."""
    if isinstance(v, dict):
        return {k: unordered(x) for k, x in v.items()}
    if isinstance(v, list):
        return sorted((unordered(x) for x in v), key=lambda x: json.dumps(x, sort_keys=True))
    return v


def shape(v):
    """Keeps only the shape of a page: its counts and whether it has a next page."""
    return {"Count": v.get("Count"), "ScannedCount": v.get("ScannedCount"),
            "has LastEvaluatedKey": "LastEvaluatedKey" in v} if "Count" in v else v


def scrub(v):
    if isinstance(v, dict):
        out = {}
        for k, x in v.items():
            if k in VOLATILE:
                continue
            if k == "__type":
                x = x.split("#")[-1]
            if k == "Message":
                k = "message"
            out[k] = scrub(x)
        return out
    if isinstance(v, list):
        items = [scrub(x) for x in v]
        return items
    return v


T = "Diff"
KEY = [{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}]
ATTRS = [{"AttributeName": "pk", "AttributeType": "S"}, {"AttributeName": "sk", "AttributeType": "S"}]


def k(pk, sk="A"):
    return {"pk": {"S": pk}, "sk": {"S": sk}}


CASES = [
    ("create", "CreateTable", {"TableName": T, "KeySchema": KEY, "AttributeDefinitions": ATTRS + [{"AttributeName": "g", "AttributeType": "S"}],
                               "GlobalSecondaryIndexes": [{"IndexName": "byG", "KeySchema": [{"AttributeName": "g", "KeyType": "HASH"}], "Projection": {"ProjectionType": "KEYS_ONLY"}}],
                               "BillingMode": "PAY_PER_REQUEST"}),
    ("create-again", "CreateTable", {"TableName": T, "KeySchema": KEY, "AttributeDefinitions": ATTRS, "BillingMode": "PAY_PER_REQUEST"}),
    ("create-bad-name", "CreateTable", {"TableName": "a", "KeySchema": KEY, "AttributeDefinitions": ATTRS, "BillingMode": "PAY_PER_REQUEST"}),
    ("create-missing-attr", "CreateTable", {"TableName": "X1", "KeySchema": KEY, "AttributeDefinitions": ATTRS[:1], "BillingMode": "PAY_PER_REQUEST"}),
    ("describe-missing", "DescribeTable", {"TableName": "Nope"}),
    ("put", "PutItem", {"TableName": T, "Item": {**k("a"), "n": {"N": "1.50"}, "s": {"SS": ["x", "y"]}, "g": {"S": "G1"}}}),
    ("put-missing-table", "PutItem", {"TableName": "Nope", "Item": k("a")}),
    ("put-missing-key", "PutItem", {"TableName": T, "Item": {"pk": {"S": "a"}}}),
    ("put-wrong-key-type", "PutItem", {"TableName": T, "Item": {"pk": {"N": "1"}, "sk": {"S": "A"}}}),
    ("put-empty-key", "PutItem", {"TableName": T, "Item": {"pk": {"S": ""}, "sk": {"S": "A"}}}),
    ("put-bad-number", "PutItem", {"TableName": T, "Item": {**k("b"), "n": {"N": "12abc"}}}),
    ("put-too-precise", "PutItem", {"TableName": T, "Item": {**k("b"), "n": {"N": "1.234567890123456789012345678901234567891"}}}),
    ("put-empty-set", "PutItem", {"TableName": T, "Item": {**k("b"), "s": {"SS": []}}}),
    ("put-dup-set", "PutItem", {"TableName": T, "Item": {**k("b"), "s": {"SS": ["x", "x"]}}}),
    ("get", "GetItem", {"TableName": T, "Key": k("a")}),
    ("get-missing", "GetItem", {"TableName": T, "Key": k("zz")}),
    ("get-projection", "GetItem", {"TableName": T, "Key": k("a"), "ProjectionExpression": "n, #s", "ExpressionAttributeNames": {"#s": "s"}}),
    ("get-unused-name", "GetItem", {"TableName": T, "Key": k("a"), "ProjectionExpression": "n", "ExpressionAttributeNames": {"#s": "s"}}),
    ("get-extra-key", "GetItem", {"TableName": T, "Key": {**k("a"), "n": {"N": "1"}}}),
    ("cond-fail", "PutItem", {"TableName": T, "Item": k("a"), "ConditionExpression": "attribute_not_exists(pk)"}),
    ("cond-fail-allold", "PutItem", {"TableName": T, "Item": k("a"), "ConditionExpression": "attribute_not_exists(pk)", "ReturnValuesOnConditionCheckFailure": "ALL_OLD"}),
    ("cond-syntax", "PutItem", {"TableName": T, "Item": k("a"), "ConditionExpression": "pk = = :v", "ExpressionAttributeValues": {":v": {"S": "a"}}}),
    ("cond-undefined-value", "PutItem", {"TableName": T, "Item": k("a"), "ConditionExpression": "pk = :v"}),
    ("cond-unused-value", "PutItem", {"TableName": T, "Item": k("a"), "ConditionExpression": "attribute_exists(pk)", "ExpressionAttributeValues": {":v": {"S": "a"}}}),
    ("cond-reserved", "PutItem", {"TableName": T, "Item": k("a"), "ConditionExpression": "size > :v", "ExpressionAttributeValues": {":v": {"N": "1"}}}),
    ("update-add", "UpdateItem", {"TableName": T, "Key": k("a"), "UpdateExpression": "ADD n :one SET t = :t", "ExpressionAttributeValues": {":one": {"N": "1"}, ":t": {"S": "x"}}, "ReturnValues": "UPDATED_NEW"}),
    ("update-old", "UpdateItem", {"TableName": T, "Key": k("a"), "UpdateExpression": "REMOVE t", "ReturnValues": "UPDATED_OLD"}),
    ("update-all-new", "UpdateItem", {"TableName": T, "Key": k("a"), "UpdateExpression": "SET l = list_append(if_not_exists(l, :e), :v)", "ExpressionAttributeValues": {":e": {"L": []}, ":v": {"L": [{"N": "1"}]}}, "ReturnValues": "ALL_NEW"}),
    ("update-key", "UpdateItem", {"TableName": T, "Key": k("a"), "UpdateExpression": "SET pk = :v", "ExpressionAttributeValues": {":v": {"S": "b"}}}),
    ("update-overlap", "UpdateItem", {"TableName": T, "Key": k("a"), "UpdateExpression": "SET m = :v, m.x = :v", "ExpressionAttributeValues": {":v": {"S": "b"}}}),
    ("update-twice", "UpdateItem", {"TableName": T, "Key": k("a"), "UpdateExpression": "SET a = :v SET b = :v", "ExpressionAttributeValues": {":v": {"S": "b"}}}),
    ("update-wrong-type", "UpdateItem", {"TableName": T, "Key": k("a"), "UpdateExpression": "SET n = n + :v", "ExpressionAttributeValues": {":v": {"S": "b"}}}),
    ("update-add-string", "UpdateItem", {"TableName": T, "Key": k("a"), "UpdateExpression": "ADD t2 :v", "ExpressionAttributeValues": {":v": {"S": "b"}}}),
    ("update-new-item", "UpdateItem", {"TableName": T, "Key": k("new"), "UpdateExpression": "SET v = :v ADD c :one", "ExpressionAttributeValues": {":v": {"S": "b"}, ":one": {"N": "1"}}, "ReturnValues": "ALL_NEW"}),
    ("update-cond-fail", "UpdateItem", {"TableName": T, "Key": k("a"), "UpdateExpression": "SET v = :v", "ConditionExpression": "v = :x", "ExpressionAttributeValues": {":v": {"S": "b"}, ":x": {"S": "no"}}, "ReturnValuesOnConditionCheckFailure": "ALL_OLD"}),
    ("delete-allold", "DeleteItem", {"TableName": T, "Key": k("new"), "ReturnValues": "ALL_OLD"}),
    ("delete-missing", "DeleteItem", {"TableName": T, "Key": k("new"), "ReturnValues": "ALL_OLD"}),
    ("put-q1", "PutItem", {"TableName": T, "Item": {**k("q", "1"), "g": {"S": "G1"}}}),
    ("put-q2", "PutItem", {"TableName": T, "Item": {**k("q", "2")}}),
    ("put-q3", "PutItem", {"TableName": T, "Item": {**k("q", "3"), "g": {"S": "G1"}}}),
    ("query", "Query", {"TableName": T, "KeyConditionExpression": "pk = :p AND sk > :s", "ExpressionAttributeValues": {":p": {"S": "q"}, ":s": {"S": "1"}}}),
    ("query-desc-limit", "Query", {"TableName": T, "KeyConditionExpression": "pk = :p", "ExpressionAttributeValues": {":p": {"S": "q"}}, "ScanIndexForward": False, "Limit": 2}),
    ("query-filter", "Query", {"TableName": T, "KeyConditionExpression": "pk = :p", "FilterExpression": "attribute_exists(g)", "ExpressionAttributeValues": {":p": {"S": "q"}}}),
    ("query-no-pk", "Query", {"TableName": T, "KeyConditionExpression": "sk = :s", "ExpressionAttributeValues": {":s": {"S": "1"}}}),
    ("query-gsi~unordered", "Query", {"TableName": T, "IndexName": "byG", "KeyConditionExpression": "g = :g", "ExpressionAttributeValues": {":g": {"S": "G1"}}}),
    ("query-gsi-consistent", "Query", {"TableName": T, "IndexName": "byG", "ConsistentRead": True, "KeyConditionExpression": "g = :g", "ExpressionAttributeValues": {":g": {"S": "G1"}}}),
    ("query-bad-index", "Query", {"TableName": T, "IndexName": "nope", "KeyConditionExpression": "g = :g", "ExpressionAttributeValues": {":g": {"S": "G1"}}}),
    ("scan-count~unordered", "Scan", {"TableName": T, "Select": "COUNT"}),
    ("scan-limit~shape", "Scan", {"TableName": T, "Limit": 1}),
    ("batch-get~unordered", "BatchGetItem", {"RequestItems": {T: {"Keys": [k("a"), k("q", "1"), k("zz")]}}}),
    ("batch-get-dup~unordered", "BatchGetItem", {"RequestItems": {T: {"Keys": [k("a"), k("a")]}}}),
    ("batch-write", "BatchWriteItem", {"RequestItems": {T: [{"PutRequest": {"Item": k("bw1")}}, {"DeleteRequest": {"Key": k("q", "2")}}]}}),
    ("batch-write-26", "BatchWriteItem", {"RequestItems": {T: [{"PutRequest": {"Item": k("bw%d" % i)}} for i in range(26)]}}),
    ("tx-cancel", "TransactWriteItems", {"TransactItems": [
        {"ConditionCheck": {"TableName": T, "Key": k("a"), "ConditionExpression": "attribute_not_exists(pk)"}},
        {"Put": {"TableName": T, "Item": k("tx1")}}]}),
    ("tx-cancel-allold", "TransactWriteItems", {"TransactItems": [
        {"Put": {"TableName": T, "Item": k("tx1")}},
        {"ConditionCheck": {"TableName": T, "Key": k("a"), "ConditionExpression": "attribute_not_exists(pk)", "ReturnValuesOnConditionCheckFailure": "ALL_OLD"}}]}),
    ("tx-same-item", "TransactWriteItems", {"TransactItems": [
        {"Put": {"TableName": T, "Item": k("tx1")}}, {"Delete": {"TableName": T, "Key": k("tx1")}}]}),
    ("tx-ok", "TransactWriteItems", {"TransactItems": [
        {"ConditionCheck": {"TableName": T, "Key": k("a"), "ConditionExpression": "attribute_exists(pk)"}},
        {"Update": {"TableName": T, "Key": k("tx2"), "UpdateExpression": "ADD c :one", "ExpressionAttributeValues": {":one": {"N": "1"}}}}]}),
    ("tx-get", "TransactGetItems", {"TransactItems": [{"Get": {"TableName": T, "Key": k("tx2")}}, {"Get": {"TableName": T, "Key": k("zz")}}]}),
    ("unknown-op", "Frobnicate", {}),
    ("list", "ListTables", {"Limit": 10}),
    ("ttl", "UpdateTimeToLive", {"TableName": T, "TimeToLiveSpecification": {"AttributeName": "exp", "Enabled": True}}),
    ("ttl-describe", "DescribeTimeToLive", {"TableName": T}),
    ("delete-table", "DeleteTable", {"TableName": T}),
]
RAW = [
    ("malformed-json", "GetItem", b"{not json"),
    ("wrong-type-field", "GetItem", json.dumps({"TableName": 5, "Key": k("a")}).encode()),
]


def main():
    a, b = sys.argv[1], sys.argv[2]
    known = {}
    with open(os.path.join(HERE, "differential_known.txt")) as f:
        for line in f:
            line = line.strip()
            if line and not line.startswith("#"):
                case, _, why = line.partition(" ")
                known[case] = why.strip()
    diffs, unknown = 0, 0
    runs = [(n, op, body, None) for n, op, body in CASES] + [(n, op, None, raw) for n, op, raw in RAW]
    for name, op, body, raw in runs:
        ra = call(a, op, body, raw)
        rb = call(b, op, body, raw)
        name, _, mode = name.partition("~")
        norm = {"unordered": unordered, "shape": shape}.get(mode, lambda v: v)
        sa, sb = (ra[0], norm(scrub(ra[1]))), (rb[0], norm(scrub(rb[1])))
        if sa != sb:
            diffs += 1
            tag = "known" if name in known else "DIFF"
            if name not in known:
                unknown += 1
            print(f"{tag} {name} ({op}): {known.get(name, '')}")
            print(f"   A {sa[0]} {json.dumps(sa[1], sort_keys=True)[:400]}")
            print(f"   B {sb[0]} {json.dumps(sb[1], sort_keys=True)[:400]}")
    print(f"differential: {len(runs)} cases, {diffs} differences, {unknown} not explained")
    print(f"{len(runs) - unknown} passed, {unknown} failed")
    return 1 if unknown else 0


if __name__ == "__main__":
    sys.exit(main())
