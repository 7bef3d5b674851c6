#!/usr/bin/env python3
"""boto3 against fakedb with compressed bodies (issue #25 item 2). fakedb runs with
credentials, so every SigV4 signature is checked. boto3 gzips each request body before
it is signed, as the SDKs' request compression does: the session works, and a body
gzipped after signing is refused (the signature covers the bytes sent). A raw client,
signed with botocore's SigV4, asks for gzip with Accept-Encoding and gets a gzipped
answer whose x-amz-crc32 is of the bytes received; without it, the answer is plain.

Usage: boto3_compression.py FAKEDB_BINARY"""
import gzip
import json
import os
import sys
import tempfile
import urllib.request
import zlib

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
import fakedb_proc  # noqa: E402

try:
    import boto3
    from botocore.auth import SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.config import Config
    from botocore.credentials import Credentials
    from botocore.exceptions import ClientError
except ImportError:
    print("boto3_compression: boto3 is not installed (python3-boto3); skipped")
    sys.exit(77)

KEY, SECRET = "AKIDZIP", "zip-secret"
steps = 0


def step(name, ok):
    global steps
    if not ok:
        print(f"boto3_compression: FAILED at {name}")
        sys.exit(1)
    steps += 1


def start(binary, tmp):
    proc, endpoint = fakedb_proc.start(binary, tmp, "--credentials", f"{KEY}:{SECRET}")
    if endpoint is None:
        print("boto3_compression: fakedb did not start")
        sys.exit(1)
    return proc, endpoint


def main():
    proc, endpoint = start(sys.argv[1], tempfile.mkdtemp())
    try:
        session(endpoint)
    finally:
        proc.terminate()
        proc.wait()
    print(f"boto3_compression: {steps} steps passed")


def session(endpoint):
    ddb = boto3.client("dynamodb", endpoint_url=endpoint, region_name="us-east-1",
                       aws_access_key_id=KEY, aws_secret_access_key=SECRET,
                       config=Config(retries={"max_attempts": 1}))
    compressed = []

    def gzip_before_signing(request, **_):
        body = request.body if isinstance(request.body, bytes) else (request.body or "").encode()
        request.data = gzip.compress(body)
        request.headers["Content-Encoding"] = "gzip"
        compressed.append(len(body))

    ddb.meta.events.register("before-sign.dynamodb.*", gzip_before_signing)
    ddb.create_table(TableName="Zip", KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
                     AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
                     BillingMode="PAY_PER_REQUEST")
    text = "gzipped \u00e9\u6f22\U0001F600 " * 500
    ddb.put_item(TableName="Zip", Item={"pk": {"S": "a"}, "v": {"S": text}, "n": {"N": "42"}})
    item = ddb.get_item(TableName="Zip", Key={"pk": {"S": "a"}}, ConsistentRead=True)["Item"]
    step("round trip through gzip bodies", item["v"]["S"] == text and item["n"]["N"] == "42")
    step("every request was compressed", len(compressed) == 3)
    q = ddb.query(TableName="Zip", KeyConditionExpression="pk = :p", ExpressionAttributeValues={":p": {"S": "a"}})
    step("query", q["Count"] == 1)
    # an error answer to a compressed request keeps its type
    try:
        ddb.get_item(TableName="Nope", Key={"pk": {"S": "a"}})
        step("missing table refused", False)
    except ClientError as e:
        step("missing table refused", e.response["Error"]["Code"] == "ResourceNotFoundException")
    ddb.meta.events.unregister("before-sign.dynamodb.*", gzip_before_signing)

    # gzipped after the signature: the bytes sent are not those signed
    def gzip_after_signing(request, **_):
        request.body = gzip.compress(request.body if isinstance(request.body, bytes) else request.body.encode())
        request.headers["Content-Encoding"] = "gzip"
        request.headers["Content-Length"] = str(len(request.body))

    ddb.meta.events.register("before-send.dynamodb.*", gzip_after_signing)
    try:
        ddb.get_item(TableName="Zip", Key={"pk": {"S": "a"}})
        step("body changed after signing refused", False)
    except ClientError as e:
        step("body changed after signing refused", e.response["Error"]["Code"] == "InvalidSignatureException")
    ddb.meta.events.unregister("before-send.dynamodb.*", gzip_after_signing)

    # Accept-Encoding from a raw client (botocore asks for none and decodes none)
    def raw(accept):
        body = json.dumps({"TableName": "Zip", "Key": {"pk": {"S": "a"}}}).encode()
        req = AWSRequest(method="POST", url=endpoint + "/", data=body, headers={
            "Content-Type": "application/x-amz-json-1.0", "X-Amz-Target": "DynamoDB_20120810.GetItem"})
        if accept:
            req.headers["Accept-Encoding"] = accept
        SigV4Auth(Credentials(KEY, SECRET), "dynamodb", "us-east-1").add_auth(req)
        r = urllib.request.urlopen(urllib.request.Request(endpoint + "/", data=body, method="POST",
                                                          headers=dict(req.headers.items())), timeout=30)
        return r.headers, r.read()

    headers, data = raw("gzip, deflate")
    step("gzipped answer", headers.get("Content-Encoding") == "gzip")
    step("crc32 of the bytes received", int(headers["x-amz-crc32"]) == zlib.crc32(data))
    step("gzipped answer decodes", json.loads(gzip.decompress(data))["Item"]["v"]["S"] == text)
    step("gzipped answer is smaller", len(data) < len(gzip.decompress(data)) // 4)
    headers, data = raw(None)
    step("plain answer by default", headers.get("Content-Encoding") is None and
         json.loads(data)["Item"]["n"]["N"] == "42" and int(headers["x-amz-crc32"]) == zlib.crc32(data))
    headers, data = raw("identity, gzip;q=0")
    step("gzip;q=0 refuses gzip", headers.get("Content-Encoding") is None and json.loads(data)["Item"])


if __name__ == "__main__":
    main()
