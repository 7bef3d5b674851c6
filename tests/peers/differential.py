#!/usr/bin/env python3
"""Sends the same DynamoDB requests to two servers (DynamoDB Local and fakedb) and reports
every difference in what they answer: HTTP status, error type, message, and body (less
the fields that differ by nature: ids, dates, sizes). Differences that are known and
explained (docs/fakedb.md, "Differences from DynamoDB Local") are listed in
differential_known.txt and reported but do not fail the run.
Usage: differential.py ENDPOINT_A ENDPOINT_B [--show-all] [--self]
--self: A is another fakedb (the sanitizer runs, which leave DynamoDB Local out): every
case still runs against the sanitized fakedb, and any difference between the two fails,
known or not (the known list is DynamoDB Local's)."""
import glob
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
            "ProvisionedThroughput", "BillingModeSummary", "OnDemandThroughput",
            # DynamoDB Streams: names, numbers and times that each server makes its own
            "LatestStreamLabel", "StreamArn", "StreamLabel", "LastEvaluatedStreamArn", "ShardId",
            "SequenceNumberRange", "ShardIterator", "NextShardIterator", "SequenceNumber",
            "eventID", "ApproximateCreationDateTime", "CreationRequestDateTime", "awsRegion",
            "SizeBytes", "eventVersion"}


def stream_refs(endpoint, v):
    """DynamoDB Streams cases name what each server makes its own by reference:
    {"$stream": TABLE} is that table's LatestStreamArn on this server, {"$shard": TABLE}
    its stream's first shard, {"$iterator": [TABLE, TYPE]} a fresh shard iterator."""
    if isinstance(v, list):
        return [stream_refs(endpoint, x) for x in v]
    if not isinstance(v, dict):
        return v
    if len(v) == 1 and next(iter(v)) in ("$stream", "$shard", "$iterator"):
        ref, arg = next(iter(v.items()))
        table, kind = (arg[0], arg[1]) if isinstance(arg, list) else (arg, None)
        arn = call(endpoint, "DescribeTable", {"TableName": table})[1].get("Table", {}).get("LatestStreamArn", "none")
        if ref == "$stream":
            return arn
        desc = call(endpoint, "DynamoDBStreams_20120810.DescribeStream", {"StreamArn": arn})[1]
        shard = (desc.get("StreamDescription", {}).get("Shards") or [{}])[0].get("ShardId", "none")
        if ref == "$shard":
            return shard
        return call(endpoint, "DynamoDBStreams_20120810.GetShardIterator",
                    {"StreamArn": arn, "ShardId": shard, "ShardIteratorType": kind})[1].get("ShardIterator", "none")
    return {k: stream_refs(endpoint, x) for k, x in v.items()}


def call(endpoint, op, body, raw=None):
    """op is a DynamoDB operation, or a full target ("DynamoDBStreams_20120810.GetRecords")."""
    data = raw if raw is not None else json.dumps(stream_refs(endpoint, body)).encode()
    req = urllib.request.Request(endpoint + "/", data=data, method="POST", headers={
        "Content-Type": "application/x-amz-json-1.0",
        "X-Amz-Target": op if "." in op else "DynamoDB_20120810." + op,
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


def capacity(v):
    """Keeps only an answer's ConsumedCapacity (a list in table order) and error type: the
    cases named ~capacity compare the units each server charges."""
    c = v.get("ConsumedCapacity")
    if isinstance(c, list):
        c = sorted(c, key=lambda x: x.get("TableName", ""))
    return {"ConsumedCapacity": c, "__type": v.get("__type", "").split("#")[-1]}


def scrub(v, top=True):
    """Drops the volatile fields and the namespace of __type. DynamoDB Local names an
    error's text "Message" where AWS says "message" (except in TransactionCanceledException,
    where AWS too says "Message"): a known difference (docs/fakedb.md) that would otherwise
    show in every error case, so the error body's top-level key is compared without its
    case. Nested keys (CancellationReasons' "Message") are compared as they are."""
    if isinstance(v, dict):
        out = {}
        for k, x in v.items():
            if k in VOLATILE:
                continue
            if k == "__type":
                x = x.split("#")[-1]
            if top and k == "Message":
                k = "message"
            out[k] = scrub(x, False)
        return out
    if isinstance(v, list):
        return [scrub(x, False) for x in v]
    return v


def diff_paths(a, b, path="", out=None):
    """The paths at which two answers differ, each with both values (shortened)."""
    out = [] if out is None else out
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(set(a) | set(b)):
            if key not in a or key not in b:
                out.append((path + "/" + key, a.get(key, "<absent>"), b.get(key, "<absent>")))
            else:
                diff_paths(a[key], b[key], path + "/" + key, out)
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b)):
            diff_paths(x, y, "%s/%d" % (path, i), out)
    elif a != b:
        out.append((path or "/", a, b))
    return out


T = "Diff"
KEY = [{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}]
ATTRS = [{"AttributeName": "pk", "AttributeType": "S"}, {"AttributeName": "sk", "AttributeType": "S"}]


V = "ExpressionAttributeValues"


def k(pk, sk="A"):
    return {"pk": {"S": pk}, "sk": {"S": sk}}


def nested(levels):
    """A map attribute of `levels` nested maps."""
    v = {"S": "leaf"}
    for _ in range(levels):
        v = {"M": {"m": v}}
    return v


CASES = [
    ("create", "CreateTable", {"TableName": T, "KeySchema": KEY, "AttributeDefinitions": ATTRS + [{"AttributeName": "g", "AttributeType": "S"}],
                               "GlobalSecondaryIndexes": [{"IndexName": "byG", "KeySchema": [{"AttributeName": "g", "KeyType": "HASH"}], "Projection": {"ProjectionType": "KEYS_ONLY"}}],
                               "BillingMode": "PAY_PER_REQUEST"}),
    ("create-again", "CreateTable", {"TableName": T, "KeySchema": KEY, "AttributeDefinitions": ATTRS, "BillingMode": "PAY_PER_REQUEST"}),
    ("create-bad-name", "CreateTable", {"TableName": "a", "KeySchema": KEY, "AttributeDefinitions": ATTRS, "BillingMode": "PAY_PER_REQUEST"}),
    ("create-missing-attr", "CreateTable", {"TableName": "DiffMissingAttr", "KeySchema": KEY, "AttributeDefinitions": ATTRS[:1], "BillingMode": "PAY_PER_REQUEST"}),
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
    # Common validation errors of every operation.
    ("create-no-keyschema", "CreateTable", {"TableName": "DiffNoKeys", "AttributeDefinitions": ATTRS, "BillingMode": "PAY_PER_REQUEST"}),
    ("create-bad-attr-type", "CreateTable", {"TableName": "DiffBadType", "KeySchema": KEY[:1], "AttributeDefinitions": [{"AttributeName": "pk", "AttributeType": "X"}], "BillingMode": "PAY_PER_REQUEST"}),
    ("create-gsi-missing-attr", "CreateTable", {"TableName": "DiffGsiAttr", "KeySchema": KEY[:1], "AttributeDefinitions": ATTRS[:1] + [{"AttributeName": "x", "AttributeType": "S"}], "BillingMode": "PAY_PER_REQUEST", "GlobalSecondaryIndexes": [{"IndexName": "byU", "KeySchema": [{"AttributeName": "u", "KeyType": "HASH"}], "Projection": {"ProjectionType": "ALL"}}]}),
    ("create-unused-attr", "CreateTable", {"TableName": "DiffUnused", "KeySchema": KEY[:1], "AttributeDefinitions": ATTRS, "BillingMode": "PAY_PER_REQUEST"}),
    ("create-provisioned-no-throughput", "CreateTable", {"TableName": "DiffProv", "KeySchema": KEY[:1], "AttributeDefinitions": ATTRS[:1], "BillingMode": "PROVISIONED"}),
    ("create-throughput-no-write", "CreateTable", {"TableName": "DiffProv", "KeySchema": KEY[:1], "AttributeDefinitions": ATTRS[:1], "ProvisionedThroughput": {"ReadCapacityUnits": 1}}),
    ("create-2", "CreateTable", {"TableName": "Diff2", "KeySchema": [{"AttributeName": "id", "KeyType": "HASH"}], "AttributeDefinitions": [{"AttributeName": "id", "AttributeType": "N"}], "BillingMode": "PAY_PER_REQUEST"}),
    ("create-3", "CreateTable", {"TableName": "Diff3", "KeySchema": KEY[:1], "AttributeDefinitions": [{"AttributeName": "pk", "AttributeType": "B"}], "BillingMode": "PAY_PER_REQUEST"}),
    ("list-page-1", "ListTables", {"Limit": 1}),
    ("list-page-2", "ListTables", {"Limit": 1, "ExclusiveStartTableName": "Diff"}),
    ("list-page-last", "ListTables", {"Limit": 5, "ExclusiveStartTableName": "Diff2"}),
    ("list-limit-0", "ListTables", {"Limit": 0}),
    ("describe-no-name", "DescribeTable", {}),
    ("delete-table-missing", "DeleteTable", {"TableName": "Nope"}),
    ("put-no-table-name", "PutItem", {"Item": k("a")}),
    ("put-no-item", "PutItem", {"TableName": T}),
    ("get-no-table-name", "GetItem", {"Key": k("a")}),
    ("get-no-key", "GetItem", {"TableName": T}),
    ("delete-no-key", "DeleteItem", {"TableName": T}),
    ("update-no-key", "UpdateItem", {"TableName": T, "UpdateExpression": "SET a = :v", V: {":v": {"S": "x"}}}),
    ("query-no-table-name", "Query", {"KeyConditionExpression": "pk = :p", V: {":p": {"S": "q"}}}),
    ("query-no-keycond", "Query", {"TableName": T}),
    ("scan-no-table-name", "Scan", {}),
    ("query-limit-0", "Query", {"TableName": T, "KeyConditionExpression": "pk = :p", V: {":p": {"S": "q"}}, "Limit": 0}),
    ("scan-limit-0", "Scan", {"TableName": T, "Limit": 0}),
    ("put-returnvalues-all-new", "PutItem", {"TableName": T, "Item": k("rv"), "ReturnValues": "ALL_NEW"}),
    ("update-returnvalues-bad", "UpdateItem", {"TableName": T, "Key": k("rv"), "UpdateExpression": "SET a = :v", V: {":v": {"S": "x"}}, "ReturnValues": "EVERYTHING"}),
    ("delete-returnvalues-updated", "DeleteItem", {"TableName": T, "Key": k("rv"), "ReturnValues": "UPDATED_OLD"}),
    ("scan-select-bad", "Scan", {"TableName": T, "Select": "SOME"}),
    ("query-select-specific-no-projection", "Query", {"TableName": T, "Select": "SPECIFIC_ATTRIBUTES", "KeyConditionExpression": "pk = :p", V: {":p": {"S": "q"}}}),
    ("scan-select-specific-no-projection", "Scan", {"TableName": T, "Select": "SPECIFIC_ATTRIBUTES"}),
    ("query-select-all-projected-table", "Query", {"TableName": T, "Select": "ALL_PROJECTED_ATTRIBUTES", "KeyConditionExpression": "pk = :p", V: {":p": {"S": "q"}}}),
    ("scan-esk-partial", "Scan", {"TableName": T, "ExclusiveStartKey": {"pk": {"S": "a"}}}),
    ("scan-esk-wrong-type", "Scan", {"TableName": T, "ExclusiveStartKey": {"pk": {"N": "1"}, "sk": {"S": "A"}}}),
    ("query-esk-other-partition", "Query", {"TableName": T, "KeyConditionExpression": "pk = :p", V: {":p": {"S": "q"}}, "ExclusiveStartKey": k("a")}),
    ("query-esk-next", "Query", {"TableName": T, "KeyConditionExpression": "pk = :p", V: {":p": {"S": "q"}}, "ExclusiveStartKey": k("q", "1")}),
    ("scan-segment-too-big", "Scan", {"TableName": T, "Segment": 2, "TotalSegments": 2}),
    ("scan-segment-alone", "Scan", {"TableName": T, "Segment": 0}),
    ("get-projection-undefined-name", "GetItem", {"TableName": T, "Key": k("a"), "ProjectionExpression": "#nope"}),
    ("get-projection-reserved", "GetItem", {"TableName": T, "Key": k("a"), "ProjectionExpression": "name"}),
    ("get-projection-nested~unordered", "GetItem", {"TableName": T, "Key": k("a"), "ProjectionExpression": "l[0], s, pk"}),
    ("query-keycond-lt-on-pk", "Query", {"TableName": T, "KeyConditionExpression": "pk < :p", V: {":p": {"S": "q"}}}),
    ("query-keycond-nonkey", "Query", {"TableName": T, "KeyConditionExpression": "pk = :p AND n = :n", V: {":p": {"S": "q"}, ":n": {"N": "1"}}}),
    ("query-keycond-begins-with", "Query", {"TableName": T, "KeyConditionExpression": "pk = :p AND begins_with(sk, :s)", V: {":p": {"S": "q"}, ":s": {"S": "1"}}}),
    ("query-keycond-between", "Query", {"TableName": T, "KeyConditionExpression": "pk = :p AND sk BETWEEN :a AND :b", V: {":p": {"S": "q"}, ":a": {"S": "1"}, ":b": {"S": "3"}}}),
    ("query-keycond-between-reversed", "Query", {"TableName": T, "KeyConditionExpression": "pk = :p AND sk BETWEEN :a AND :b", V: {":p": {"S": "q"}, ":a": {"S": "3"}, ":b": {"S": "1"}}}),
    ("query-filter-on-sort-key", "Query", {"TableName": T, "KeyConditionExpression": "pk = :p", "FilterExpression": "begins_with(sk, :s)", V: {":p": {"S": "q"}, ":s": {"S": "1"}}}),
    ("query-gsi-filter-on-index-key", "Query", {"TableName": T, "IndexName": "byG", "KeyConditionExpression": "g = :g", "FilterExpression": "g <> :x", V: {":g": {"S": "G1"}, ":x": {"S": "G2"}}}),
    ("scan-filter-on-key~unordered", "Scan", {"TableName": T, "FilterExpression": "pk = :p", V: {":p": {"S": "q"}}}),
    ("query-keycond-wrong-type", "Query", {"TableName": T, "KeyConditionExpression": "pk = :p", V: {":p": {"N": "1"}}}),
    # Update expressions: key attributes, lists, sets.
    ("update-key-nested", "UpdateItem", {"TableName": T, "Key": k("a"), "UpdateExpression": "SET pk.x = :v", V: {":v": {"S": "b"}}}),
    ("update-remove-key", "UpdateItem", {"TableName": T, "Key": k("a"), "UpdateExpression": "REMOVE sk"}),
    ("update-list-index-past-end", "UpdateItem", {"TableName": T, "Key": k("a"), "UpdateExpression": "SET l[5] = :v", V: {":v": {"S": "end"}}, "ReturnValues": "UPDATED_NEW"}),
    ("update-list-index-on-non-list", "UpdateItem", {"TableName": T, "Key": k("a"), "UpdateExpression": "SET n[0] = :v", V: {":v": {"S": "x"}}}),
    ("update-list-remove-index", "UpdateItem", {"TableName": T, "Key": k("a"), "UpdateExpression": "REMOVE l[0]", "ReturnValues": "ALL_NEW"}),
    ("update-map-path-missing-parent", "UpdateItem", {"TableName": T, "Key": k("a"), "UpdateExpression": "SET nomap.x = :v", V: {":v": {"S": "x"}}}),
    ("update-add-set-wrong-type", "UpdateItem", {"TableName": T, "Key": k("a"), "UpdateExpression": "ADD s :v", V: {":v": {"NS": ["1"]}}}),
    ("update-add-set", "UpdateItem", {"TableName": T, "Key": k("a"), "UpdateExpression": "ADD s :v", V: {":v": {"SS": ["z", "x"]}}, "ReturnValues": "UPDATED_NEW"}),
    ("update-delete-from-set", "UpdateItem", {"TableName": T, "Key": k("a"), "UpdateExpression": "DELETE s :v", V: {":v": {"SS": ["x", "nothere"]}}, "ReturnValues": "UPDATED_NEW"}),
    ("update-delete-set-wrong-type", "UpdateItem", {"TableName": T, "Key": k("a"), "UpdateExpression": "DELETE s :v", V: {":v": {"S": "x"}}}),
    ("update-delete-whole-set", "UpdateItem", {"TableName": T, "Key": k("a"), "UpdateExpression": "DELETE s2 :v", V: {":v": {"NS": ["1"]}}, "ReturnValues": "ALL_NEW"}),
    ("update-list-append-non-list", "UpdateItem", {"TableName": T, "Key": k("a"), "UpdateExpression": "SET l2 = list_append(g, :v)", V: {":v": {"L": []}}}),
    ("update-if-not-exists", "UpdateItem", {"TableName": T, "Key": k("a"), "UpdateExpression": "SET g = if_not_exists(g, :v), h = if_not_exists(h, :v)", V: {":v": {"S": "new"}}, "ReturnValues": "UPDATED_NEW"}),
    ("put-arith", "PutItem", {"TableName": T, "Item": {**k("arith"), "n": {"N": "2.5"}}}),
    ("update-arith", "UpdateItem", {"TableName": T, "Key": k("arith"), "UpdateExpression": "SET n = n - :v, n2 = :v + :v", V: {":v": {"N": "0.5"}}, "ReturnValues": "UPDATED_NEW"}),
    ("update-arith-exact", "UpdateItem", {"TableName": T, "Key": k("arith"), "UpdateExpression": "SET n3 = :a + :b", V: {":a": {"N": "0.25"}, ":b": {"N": "1"}}, "ReturnValues": "UPDATED_NEW"}),
    ("update-syntax", "UpdateItem", {"TableName": T, "Key": k("a"), "UpdateExpression": "SET = :v", V: {":v": {"S": "x"}}}),
    ("update-unused-name", "UpdateItem", {"TableName": T, "Key": k("a"), "UpdateExpression": "SET a = :v", V: {":v": {"S": "x"}}, "ExpressionAttributeNames": {"#u": "u"}}),
    # Functions and comparators on sets and lists.
    ("filter-size-set", "Query", {"TableName": T, "KeyConditionExpression": "pk = :p", "FilterExpression": "size(s) = :n", V: {":p": {"S": "a"}, ":n": {"N": "3"}}}),
    ("filter-size-list", "Query", {"TableName": T, "KeyConditionExpression": "pk = :p", "FilterExpression": "size(l) > :n", V: {":p": {"S": "a"}, ":n": {"N": "0"}}}),
    ("filter-contains-set", "Query", {"TableName": T, "KeyConditionExpression": "pk = :p", "FilterExpression": "contains(s, :x)", V: {":p": {"S": "a"}, ":x": {"S": "z"}}}),
    ("filter-contains-list", "Query", {"TableName": T, "KeyConditionExpression": "pk = :p", "FilterExpression": "contains(l, :x)", V: {":p": {"S": "a"}, ":x": {"S": "end"}}}),
    ("filter-contains-set-other-type", "Query", {"TableName": T, "KeyConditionExpression": "pk = :p", "FilterExpression": "contains(s, :x)", V: {":p": {"S": "a"}, ":x": {"N": "1"}}}),
    ("filter-between-reversed", "Query", {"TableName": T, "KeyConditionExpression": "pk = :p", "FilterExpression": "n BETWEEN :hi AND :lo", V: {":p": {"S": "a"}, ":hi": {"N": "5"}, ":lo": {"N": "1"}}}),
    ("filter-between-mixed-types", "Query", {"TableName": T, "KeyConditionExpression": "pk = :p", "FilterExpression": "n BETWEEN :lo AND :hi", V: {":p": {"S": "a"}, ":lo": {"N": "1"}, ":hi": {"S": "5"}}}),
    ("filter-in", "Query", {"TableName": T, "KeyConditionExpression": "pk = :p", "FilterExpression": "g IN (:a, :b)", V: {":p": {"S": "q"}, ":a": {"S": "G1"}, ":b": {"S": "G2"}}}),
    ("filter-begins-with-number", "Query", {"TableName": T, "KeyConditionExpression": "pk = :p", "FilterExpression": "begins_with(n, :x)", V: {":p": {"S": "a"}, ":x": {"N": "1"}}}),
    ("filter-attribute-type", "Query", {"TableName": T, "KeyConditionExpression": "pk = :p", "FilterExpression": "attribute_type(s, :t)", V: {":p": {"S": "a"}, ":t": {"S": "SS"}}}),
    ("filter-attribute-type-bad", "Query", {"TableName": T, "KeyConditionExpression": "pk = :p", "FilterExpression": "attribute_type(s, :t)", V: {":p": {"S": "a"}, ":t": {"S": "XX"}}}),
    ("filter-on-key", "Query", {"TableName": T, "KeyConditionExpression": "pk = :p", "FilterExpression": "sk = :s", V: {":p": {"S": "q"}, ":s": {"S": "1"}}}),
    # Values: numbers, empty strings and binaries, nesting, size.
    ("put-numbers", "PutItem", {"TableName": T, "Item": {**k("num"), "a": {"N": "0.0"}, "b": {"N": "-0"}, "c": {"N": "1E+2"}, "d": {"N": "00012.3400"}, "e": {"N": "-1.50e-3"}, "f": {"NS": ["1", "10.0", "0.1"]}}}),
    ("get-numbers~unordered", "GetItem", {"TableName": T, "Key": k("num")}),
    ("put-ns-dup-after-normalising", "PutItem", {"TableName": T, "Item": {**k("num2"), "f": {"NS": ["1", "1.0"]}}}),
    ("put-number-overflow", "PutItem", {"TableName": T, "Item": {**k("num2"), "f": {"N": "1E+126"}}}),
    ("put-number-underflow", "PutItem", {"TableName": T, "Item": {**k("num2"), "f": {"N": "1E-131"}}}),
    ("put-number-limits", "PutItem", {"TableName": T, "Item": {**k("num3"), "hi": {"N": "9.9999999999999999999999999999999999999E+125"}, "lo": {"N": "-1E-130"}}}),
    ("get-number-limits", "GetItem", {"TableName": T, "Key": k("num3")}),
    ("put-number-empty", "PutItem", {"TableName": T, "Item": {**k("num2"), "f": {"N": ""}}}),
    ("put-empty-nonkey", "PutItem", {"TableName": T, "Item": {**k("empty"), "s": {"S": ""}, "b": {"B": ""}, "l": {"L": []}, "m": {"M": {}}}}),
    ("get-empty-nonkey", "GetItem", {"TableName": T, "Key": k("empty")}),
    ("put-empty-in-set", "PutItem", {"TableName": T, "Item": {**k("empty2"), "s": {"SS": [""]}}}),
    ("put-empty-binary-key", "PutItem", {"TableName": "Diff3", "Item": {"pk": {"B": ""}}}),
    ("put-binary-key", "PutItem", {"TableName": "Diff3", "Item": {"pk": {"B": "AAE="}, "e": {"B": ""}}}),
    ("get-binary-key", "GetItem", {"TableName": "Diff3", "Key": {"pk": {"B": "AAE="}}}),
    ("put-two-types", "PutItem", {"TableName": T, "Item": {**k("t2"), "x": {"S": "a", "N": "1"}}}),
    ("put-no-type", "PutItem", {"TableName": T, "Item": {**k("t2"), "x": {}}}),
    ("put-nested-31", "PutItem", {"TableName": T, "Item": {**k("deep"), "m": nested(31)}}),
    ("put-nested-32", "PutItem", {"TableName": T, "Item": {**k("deep"), "m": nested(32)}}),
    ("put-nested-33", "PutItem", {"TableName": T, "Item": {**k("deep"), "m": nested(33)}}),
    ("get-nested-deep", "GetItem", {"TableName": T, "Key": k("deep")}),
    ("query-nested-deep", "Query", {"TableName": T, "KeyConditionExpression": "pk = :p", V: {":p": {"S": "deep"}}}),
    ("update-remove-missing", "UpdateItem", {"TableName": T, "Key": k("rm1"), "UpdateExpression": "REMOVE a", "ReturnValues": "ALL_NEW"}),
    ("update-delete-missing", "UpdateItem", {"TableName": T, "Key": k("rm1"), "UpdateExpression": "DELETE s :v", V: {":v": {"SS": ["x"]}}}),
    ("update-remove-nested-missing", "UpdateItem", {"TableName": T, "Key": k("rm2"), "UpdateExpression": "REMOVE a.b.c, l[2]"}),
    ("get-after-removes-missing", "GetItem", {"TableName": T, "Key": k("rm1")}),
    ("get-after-remove-nested-missing", "GetItem", {"TableName": T, "Key": k("rm2")}),
    ("put-list-for-appends", "PutItem", {"TableName": T, "Item": {**k("lst"), "l": {"L": [{"N": "0"}, {"N": "1"}, {"N": "2"}]}}}),
    ("update-list-appends-order", "UpdateItem", {"TableName": T, "Key": k("lst"), "UpdateExpression": "SET l[84] = :x, l[37] = :y, l[1] = :w, l[17] = :z",
                                                 V: {":x": {"S": "x"}, ":y": {"S": "y"}, ":z": {"S": "z"}, ":w": {"S": "w"}}}),
    ("get-list-appends-order", "GetItem", {"TableName": T, "Key": k("lst")}),
    ("put-nul-names", "PutItem", {"TableName": T, "Item": {**k("nul\u0000x"), "a": {"S": "1"}, "a\u0000b": {"S": "2"},
                                                         "m": {"M": {"k": {"N": "1"}, "k\u0000z": {"N": "2"}}}}}),
    ("update-nul-name", "UpdateItem", {"TableName": T, "Key": k("nul\u0000x"), "UpdateExpression": "SET #n = :v", "ExpressionAttributeNames": {"#n": "a\u0000b"},
                                       V: {":v": {"S": "3\u00004"}}, "ReturnValues": "UPDATED_NEW"}),
    ("get-nul-names", "GetItem", {"TableName": T, "Key": k("nul\u0000x")}),
    ("get-nul-cut-key", "GetItem", {"TableName": T, "Key": k("nul")}),
    ("put-over-400kb", "PutItem", {"TableName": T, "Item": {**k("big"), "x": {"S": "x" * (400 * 1024)}}}),
    ("put-just-under-400kb", "PutItem", {"TableName": T, "Item": {**k("big"), "x": {"S": "x" * (400 * 1024 - 100)}}}),
    ("update-over-400kb", "UpdateItem", {"TableName": T, "Key": k("big"), "UpdateExpression": "SET y = :v", V: {":v": {"S": "y" * 200}}}),
    ("put-pk-too-long", "PutItem", {"TableName": T, "Item": k("p" * 2049)}),
    ("put-sk-too-long", "PutItem", {"TableName": T, "Item": k("p", "s" * 1025)}),
    ("put-bool-null-nested", "PutItem", {"TableName": T, "Item": {**k("doc"), "t": {"BOOL": True}, "z": {"NULL": True}, "m": {"M": {"l": {"L": [{"N": "1"}, {"S": "x"}, {"M": {}}]}}}}}),
    ("get-bool-null-nested", "GetItem", {"TableName": T, "Key": k("doc"), "ProjectionExpression": "t, z, m.l[1], m.l[2]"}),
    # Batches and transactions.
    ("batch-get-missing-table", "BatchGetItem", {"RequestItems": {"Nope": {"Keys": [k("a")]}}}),
    ("batch-write-missing-table", "BatchWriteItem", {"RequestItems": {"Nope": [{"PutRequest": {"Item": k("a")}}]}}),
    ("batch-get-101", "BatchGetItem", {"RequestItems": {T: {"Keys": [k("bg%d" % i) for i in range(101)]}}}),
    ("batch-write-dup", "BatchWriteItem", {"RequestItems": {T: [{"PutRequest": {"Item": k("d")}}, {"DeleteRequest": {"Key": k("d")}}]}}),
    ("batch-write-empty", "BatchWriteItem", {"RequestItems": {}}),
    ("batch-write-bad-key", "BatchWriteItem", {"RequestItems": {T: [{"DeleteRequest": {"Key": {"pk": {"S": "a"}}}}]}}),
    ("tx-101", "TransactWriteItems", {"TransactItems": [{"Put": {"TableName": T, "Item": k("t%d" % i)}} for i in range(101)]}),
    ("tx-empty", "TransactWriteItems", {"TransactItems": []}),
    ("tx-two-kinds", "TransactWriteItems", {"TransactItems": [{"Put": {"TableName": T, "Item": k("tk")}, "Delete": {"TableName": T, "Key": k("tk")}}]}),
    ("tx-check-and-put-same-item", "TransactWriteItems", {"TransactItems": [
        {"ConditionCheck": {"TableName": T, "Key": k("a"), "ConditionExpression": "attribute_exists(pk)"}},
        {"Update": {"TableName": T, "Key": k("a"), "UpdateExpression": "SET w = :v", V: {":v": {"S": "x"}}}}]}),
    ("tx-missing-table", "TransactWriteItems", {"TransactItems": [{"Put": {"TableName": "Nope", "Item": k("a")}}]}),
    ("tx-get-missing-table", "TransactGetItems", {"TransactItems": [{"Get": {"TableName": "Nope", "Key": k("a")}}]}),
    ("tx-get-bad-key", "TransactGetItems", {"TransactItems": [{"Get": {"TableName": T, "Key": {"pk": {"S": "a"}}}}]}),
    ("tx-get-projection", "TransactGetItems", {"TransactItems": [{"Get": {"TableName": T, "Key": k("a"), "ProjectionExpression": "g, #n", "ExpressionAttributeNames": {"#n": "n"}}}]}),
    ("tx-update-cond-fail", "TransactWriteItems", {"TransactItems": [
        {"Update": {"TableName": T, "Key": k("a"), "UpdateExpression": "SET w = :v", "ConditionExpression": "w = :v", V: {":v": {"S": "no"}}}}]}),
    ("tx-token-reuse-1", "TransactWriteItems", {"ClientRequestToken": "tok-1", "TransactItems": [{"Put": {"TableName": T, "Item": k("tok")}}]}),
    ("tx-token-reuse-same", "TransactWriteItems", {"ClientRequestToken": "tok-1", "TransactItems": [{"Put": {"TableName": T, "Item": k("tok")}}]}),
    ("tx-token-reuse-other", "TransactWriteItems", {"ClientRequestToken": "tok-1", "TransactItems": [{"Put": {"TableName": T, "Item": k("tok2")}}]}),
    ("delete-cond-fail", "DeleteItem", {"TableName": T, "Key": k("a"), "ConditionExpression": "attribute_not_exists(pk)"}),
    # Time to live.
    ("ttl-twice", "UpdateTimeToLive", {"TableName": T, "TimeToLiveSpecification": {"AttributeName": "exp", "Enabled": True}}),
    ("ttl-disable-other-attr", "UpdateTimeToLive", {"TableName": T, "TimeToLiveSpecification": {"AttributeName": "other", "Enabled": False}}),
    ("ttl-disable", "UpdateTimeToLive", {"TableName": T, "TimeToLiveSpecification": {"AttributeName": "exp", "Enabled": False}}),
    ("ttl-disable-twice", "UpdateTimeToLive", {"TableName": T, "TimeToLiveSpecification": {"AttributeName": "exp", "Enabled": False}}),
    ("ttl-missing-table", "UpdateTimeToLive", {"TableName": "Nope", "TimeToLiveSpecification": {"AttributeName": "exp", "Enabled": True}}),
    ("ttl-describe-missing-table", "DescribeTimeToLive", {"TableName": "Nope"}),
    ("ttl-describe-fresh", "DescribeTimeToLive", {"TableName": "Diff3"}),
    ("create-raw", "CreateTable", {"TableName": "DiffRaw", "KeySchema": KEY, "AttributeDefinitions": ATTRS, "BillingMode": "PAY_PER_REQUEST"}),
    ("tx-over-4mb", "TransactWriteItems", {"TransactItems": [{"Put": {"TableName": "DiffRaw", "Item": {**k("t%d" % i), "v": {"S": "x" * (390 * 1024)}}}}
                                                              for i in range(11)]}),
    ("tx-wrong-key-type", "TransactWriteItems", {"TransactItems": [{"Put": {"TableName": "DiffRaw", "Item": k("tw")}},
                                                                   {"Put": {"TableName": "DiffRaw", "Item": {"pk": {"N": "1"}, "sk": {"S": "A"}}}}]}),
    ("tx-update-missing-operand", "TransactWriteItems", {"TransactItems": [{"Put": {"TableName": "DiffRaw", "Item": k("tm")}},
                                                                           {"Update": {"TableName": "DiffRaw", "Key": k("tm2"), "UpdateExpression": "SET x = y + :one",
                                                                                       V: {":one": {"N": "1"}}}}]}),
    ("tx-update-too-big", "TransactWriteItems", {"TransactItems": [{"Put": {"TableName": "DiffRaw", "Item": k("tm")}},
                                                                   {"Update": {"TableName": "DiffRaw", "Key": k("tm2"), "UpdateExpression": "SET x = :s",
                                                                               V: {":s": {"S": "q" * (410 * 1024)}}}}]}),
    ("get-after-failed-tx", "GetItem", {"TableName": "DiffRaw", "Key": k("tm")}),
    ("tx-items-object", "TransactWriteItems", {"TransactItems": {"Put": {"TableName": "DiffRaw", "Item": k("tw")}}}),
    ("batch-get-keys-object", "BatchGetItem", {"RequestItems": {"DiffRaw": {"Keys": k("tw")}}}),
    ("ttl-enabled-string", "UpdateTimeToLive", {"TableName": "DiffRaw", "TimeToLiveSpecification": {"Enabled": "yes", "AttributeName": "exp"}}),
    ("ttl-enabled-number", "UpdateTimeToLive", {"TableName": "DiffRaw", "TimeToLiveSpecification": {"Enabled": 1, "AttributeName": "exp"}}),
    ("cond-size-of-size", "PutItem", {"TableName": "DiffRaw", "Item": k("fn"), "ConditionExpression": "size(size(a)) > :z", V: {":z": {"N": "1"}}}),
    ("cond-contains-same-path", "PutItem", {"TableName": "DiffRaw", "Item": k("fn"), "ConditionExpression": "contains(a, a)"}),
    ("cond-attribute-type-of-value", "PutItem", {"TableName": "DiffRaw", "Item": k("fn"), "ConditionExpression": "attribute_type(:v, :t)",
                                                 V: {":v": {"S": "x"}, ":t": {"S": "S"}}}),
    ("query-gsi-unprojected", "Query", {"TableName": T, "IndexName": "byG", "KeyConditionExpression": "g = :g", V: {":g": {"S": "G1"}},
                                        "ProjectionExpression": "n, pk, g"}),
    ("scan-gsi-unprojected", "Scan", {"TableName": T, "IndexName": "byG", "ProjectionExpression": "pk, s"}),
    ("query-gsi-projected-keys~unordered", "Query", {"TableName": T, "IndexName": "byG", "KeyConditionExpression": "g = :g", V: {":g": {"S": "G1"}},
                                           "ProjectionExpression": "pk, sk, g"}),
    ("create-gsi-empty-projection", "CreateTable", {"TableName": "DiffGsiP", "KeySchema": KEY[:1], "AttributeDefinitions": ATTRS[:1] + [{"AttributeName": "g", "AttributeType": "S"}],
                                                    "GlobalSecondaryIndexes": [{"IndexName": "byG", "KeySchema": [{"AttributeName": "g", "KeyType": "HASH"}], "Projection": {}}],
                                                    "BillingMode": "PAY_PER_REQUEST"}),
    ("create-key-name-256", "CreateTable", {"TableName": "DiffLong", "KeySchema": [{"AttributeName": "p" * 256, "KeyType": "HASH"}],
                                            "AttributeDefinitions": [{"AttributeName": "p" * 256, "AttributeType": "S"}], "BillingMode": "PAY_PER_REQUEST"}),
    ("create-key-name-255", "CreateTable", {"TableName": "DiffLong", "KeySchema": [{"AttributeName": "p" * 255, "KeyType": "HASH"}],
                                            "AttributeDefinitions": [{"AttributeName": "p" * 255, "AttributeType": "S"}], "BillingMode": "PAY_PER_REQUEST"}),
    ("delete-table", "DeleteTable", {"TableName": T}),
]
RAW = [
    ("malformed-json", "GetItem", b"{not json"),
    ("wrong-type-field", "GetItem", json.dumps({"TableName": 5, "Key": k("a")}).encode()),
    ("scan-limit-fraction", "Scan", b'{"TableName": "DiffRaw", "Limit": 1.5}'),
    ("scan-limit-1e400", "Scan", b'{"TableName": "DiffRaw", "Limit": 1e400}'),
    ("scan-limit-1000-digits", "Scan", b'{"TableName": "DiffRaw", "Limit": ' + b"1" * 1000 + b"}"),
    ("query-limit-past-int32", "Query", b'{"TableName": "DiffRaw", "Limit": 2147483648, "KeyConditionExpression": "pk = :v", '
                                        b'"ExpressionAttributeValues": {":v": {"S": "a"}}}'),
    ("put-overlong-utf8", "PutItem", b'{"TableName": "DiffRaw", "Item": {"pk": {"S": "utf\xc0\xaf"}, "sk": {"S": "A"}}}'),
    ("put-surrogate-utf8", "PutItem", b'{"TableName": "DiffRaw", "Item": {"pk": {"S": "utf\xed\xa0\x80"}, "sk": {"S": "A"}}}'),
    ("scan-after-bad-utf8~unordered", "Scan", b'{"TableName": "DiffRaw", "FilterExpression": "begins_with(pk, :u)", '
                                             b'"ExpressionAttributeValues": {":u": {"S": "utf"}}}'),
]


def extra_cases():
    """Appends the cases of each differential_cases_*.py beside this file (one per area
    of the API: legacy parameters, PartiQL, streams...). Each module may define CASES and
    RAW lists of the same form as above, and use k(), nested() and T from this module."""
    import importlib.util
    for path in sorted(glob.glob(os.path.join(HERE, "differential_cases_*.py"))):
        spec = importlib.util.spec_from_file_location(os.path.basename(path)[:-3], path)
        mod = importlib.util.module_from_spec(spec)
        mod.__dict__.update({"k": k, "nested": nested, "T": T, "KEY": KEY, "ATTRS": ATTRS})
        spec.loader.exec_module(mod)
        CASES.extend(getattr(mod, "CASES", []))
        RAW.extend(getattr(mod, "RAW", []))


def main():
    extra_cases()
    a, b = sys.argv[1], sys.argv[2]
    show_all = "--show-all" in sys.argv[3:]
    self_check = "--self" in sys.argv[3:]
    known, bad_lines = {}, 0
    known_files = [os.path.join(HERE, "differential_known.txt")] + \
        sorted(glob.glob(os.path.join(HERE, "differential_known_*.txt")))
    for known_file in known_files:
        for line in open(known_file):
            line = line.strip()
            if line and not line.startswith("#"):
                case, _, why = line.partition(" ")
                if not why.strip():
                    print(f"{os.path.basename(known_file)}: '{case}' has no reason")
                    bad_lines += 1
                known[case] = why.strip()
    if self_check:
        known = {}
        VOLATILE.add("Address")  # DescribeEndpoints names each server's own port
    diffs, unknown, seen = 0, 0, set()
    runs = [(n, op, body, None) for n, op, body in CASES] + [(n, op, None, raw) for n, op, raw in RAW]
    names = [n.partition("~")[0] for n, _, _, _ in runs]
    for dup in sorted({n for n in names if names.count(n) > 1}):
        print(f"case name used twice: {dup}")
        bad_lines += 1
    for name, op, body, raw in runs:
        ra = call(a, op, body, raw)
        rb = call(b, op, body, raw)
        name, _, mode = name.partition("~")
        norm = {"unordered": unordered, "shape": shape}.get(mode, lambda v: v)
        if mode == "capacity":
            sa, sb = (ra[0], capacity(ra[1])), (rb[0], capacity(rb[1]))
        else:
            sa, sb = (ra[0], norm(scrub(ra[1]))), (rb[0], norm(scrub(rb[1])))
        # The case of the error text's key, which scrub() evens out, checked on fakedb
        # alone: AWS writes "Message" in TransactionCanceledException, "message" elsewhere.
        # An unparseable body is answered with the __type alone, as AWS does.
        if isinstance(rb[1], dict) and "__type" in rb[1] and rb[1] != {"__type": "com.amazon.coral.service#SerializationException"}:
            want = "Message" if rb[1]["__type"].endswith("#TransactionCanceledException") else "message"
            if want not in rb[1]:
                print(f"DIFF {name.partition('~')[0]} ({op}): fakedb's error body lacks \"{want}\"")
                unknown += 1
        if sa != sb:
            diffs += 1
            seen.add(name)
            tag = "known" if name in known else "DIFF"
            if name not in known:
                unknown += 1
            print(f"{tag} {name} ({op}): {known.get(name, '')}")
            if sa[0] != sb[0]:
                print(f"   status: A {sa[0]}  B {sb[0]}")
            for where, va, vb in diff_paths(sa[1], sb[1])[:8]:
                print(f"   {where}:")
                print(f"      A {json.dumps(va, sort_keys=True)[:300]}")
                print(f"      B {json.dumps(vb, sort_keys=True)[:300]}")
        elif show_all:
            print(f"same {name} ({op}): {sa[0]} {json.dumps(sa[1], sort_keys=True)[:300]}")
    stale = sorted(set(known) - seen)
    doc = open(os.path.join(HERE, "..", "..", "docs", "fakedb.md")).read()
    section = doc.partition("## Differences from DynamoDB Local")[2].partition("\n## ")[0]
    if self_check:
        print(f"differential (fakedb against fakedb): {len(runs)} cases, {diffs} differences")
        print(f"{len(runs) - unknown} passed, {unknown} failed")
        return 1 if unknown or bad_lines else 0
    for case in sorted(known):
        if f"`{case}`" not in section:
            print(f"docs/fakedb.md: known case '{case}' is not in \"Differences from DynamoDB Local\"")
            bad_lines += 1
    for case in stale:
        print(f"differential_known.txt: '{case}' no longer differs (or is no case); remove it")
    print(f"differential: {len(runs)} cases, {diffs} differences ({diffs - unknown} known), "
          f"{unknown} not explained, {len(stale)} stale known lines")
    print(f"{len(runs) - unknown} passed, {unknown} failed")
    return 1 if unknown or stale or bad_lines else 0


if __name__ == "__main__":
    sys.exit(main())
