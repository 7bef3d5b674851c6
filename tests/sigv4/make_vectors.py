#!/usr/bin/env python3
"""make_vectors.py: writes the SigV4 test vectors in vectors/<case>/ from a second,
independent implementation of the algorithm as AWS documents it ("Create a canonical
request", "Create a string to sign", "Calculate the signature"), so that the C signer is
checked against something it shares no code with. Run it from anywhere:
    python3 tests/sigv4/make_vectors.py
Each case folder holds request.txt (the raw request), canonical-request.txt,
string-to-sign.txt, signature.txt, authorization.txt and, when it differs from the suite's
defaults (AKIDEXAMPLE, us-east-1, service "service", 20150830T123600Z), context.txt."""
import hashlib
import hmac
import os
import re
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT = {
    "access_key_id": "AKIDEXAMPLE",
    "secret_access_key": "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
    "region": "us-east-1",
    "service": "service",
    "amz_date": "20150830T123600Z",
}
HOST = ("Host", "example.amazonaws.com")
DATE = ("X-Amz-Date", "20150830T123600Z")
UNRESERVED = "-._~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"


def enc(s):
    """URI-encode every byte except the unreserved characters, upper-case hex."""
    return urllib.parse.quote(s, safe="-_.~")


def canonical_path(path):
    # remove empty and dot segments, keep a trailing slash, encode each segment
    parts = path.split("/")
    out = []
    trailing = False
    for i, p in enumerate(parts):
        last = i == len(parts) - 1
        if p in ("", "."):
            trailing = trailing or last
            continue
        if p == "..":
            if out:
                out.pop()
            trailing = trailing or last
            continue
        out.append(p)
        if last:
            trailing = False
    s = "/" + "/".join(enc(p) for p in out)
    if out and trailing:
        s += "/"
    return s


def canonical_query(query):
    if not query:
        return ""
    pairs = []
    for piece in query.split("&"):
        if not piece:
            continue
        k, _, v = piece.partition("=")
        pairs.append((enc(urllib.parse.unquote(k)), enc(urllib.parse.unquote(v))))
    pairs.sort()
    return "&".join(k + "=" + v for k, v in pairs)


def canonical_headers(headers):
    merged = {}
    for name, value in headers:
        v = re.sub(r"[ \t\r\n]+", " ", value.strip(" \t\r\n"))
        merged.setdefault(name.lower(), []).append(v)
    names = sorted(merged)
    ch = "".join(n + ":" + ",".join(merged[n]) + "\n" for n in names)
    return ch, ";".join(names)


def sign(method, path, query, headers, body, ctx):
    ch, sh = canonical_headers(headers)
    payload = hashlib.sha256(body.encode()).hexdigest()
    creq = "\n".join([method, canonical_path(path), canonical_query(query), ch, sh, payload])
    date8 = ctx["amz_date"][:8]
    scope = "/".join([date8, ctx["region"], ctx["service"], "aws4_request"])
    sts = "\n".join(["AWS4-HMAC-SHA256", ctx["amz_date"], scope,
                     hashlib.sha256(creq.encode()).hexdigest()])
    k = ("AWS4" + ctx["secret_access_key"]).encode()
    for part in (date8, ctx["region"], ctx["service"], "aws4_request"):
        k = hmac.new(k, part.encode(), hashlib.sha256).digest()
    sig = hmac.new(k, sts.encode(), hashlib.sha256).hexdigest()
    auth = "AWS4-HMAC-SHA256 Credential=%s/%s, SignedHeaders=%s, Signature=%s" % (
        ctx["access_key_id"], scope, sh, sig)
    return creq, sts, sig, auth


def case(name, method, target, headers, body="", **ctx_over):
    return dict(name=name, method=method, target=target, headers=headers, body=body,
                ctx=ctx_over)


DDB_BODY = '{"TableName":"Shop","Key":{"pk":{"S":"order#1"},"sk":{"S":"line#2"}}}'
DDB_PUT = ('{"TableName":"Locks","Item":{"pk":{"S":"nightly-report"},"owner":{"S":"host-a"},'
           '"fence":{"N":"42"}},"ConditionExpression":"attribute_not_exists(pk)"}')
TOKEN = "IQoJb3JpZ2luX2VjEXAMPLEtokenFORtestsONLY/sessionTOKEN+value=="

CASES = [
    case("get-vanilla", "GET", "/", [HOST, DATE]),
    case("get-vanilla-query", "GET", "/", [HOST, DATE]),
    case("get-vanilla-query-order-key-case", "GET", "/?Param2=value2&Param1=value1", [HOST, DATE]),
    case("get-vanilla-query-order-key", "GET", "/?Param1=value2&Param1=Value1", [HOST, DATE]),
    case("get-vanilla-query-order-value", "GET", "/?Param1=value2&Param1=value1", [HOST, DATE]),
    case("get-vanilla-query-unreserved", "GET", "/?%s=%s" % (UNRESERVED, UNRESERVED), [HOST, DATE]),
    case("get-vanilla-utf8-query", "GET", "/?\u1234=bar", [HOST, DATE]),
    case("get-vanilla-empty-query-key", "GET", "/?Param1=value1", [HOST, DATE]),
    case("get-vanilla-query-encoded-space", "GET", "/?Param1=value%201&Param2", [HOST, DATE]),
    case("get-header-value-trim", "GET", "/",
         [HOST, ("My-Header1", " value1"), ("My-Header2", ' "a   b   c"'), DATE]),
    case("get-header-key-duplicate", "GET", "/",
         [HOST, ("My-Header1", "value2"), ("My-Header1", "value2"), ("My-Header1", "value1"), DATE]),
    case("get-header-value-order", "GET", "/",
         [HOST, ("My-Header1", "value4"), ("My-Header1", "value1"), ("My-Header1", "value3"),
          ("My-Header1", "value2"), DATE]),
    case("get-unreserved", "GET", "/" + UNRESERVED, [HOST, DATE]),
    case("get-utf8", "GET", "/\u1234", [HOST, DATE]),
    case("get-space", "GET", "/example space/", [HOST, DATE]),
    case("get-relative", "GET", "/example/..", [HOST, DATE]),
    case("get-relative-relative", "GET", "/example1/example2/../..", [HOST, DATE]),
    case("get-slash", "GET", "//", [HOST, DATE]),
    case("get-slash-dot-slash", "GET", "/./", [HOST, DATE]),
    case("get-slashes", "GET", "//example//", [HOST, DATE]),
    case("get-slash-pointless-dot", "GET", "/./example", [HOST, DATE]),
    case("post-vanilla", "POST", "/", [HOST, DATE]),
    case("post-vanilla-query", "POST", "/?Param1=value1", [HOST, DATE]),
    case("post-header-key-case", "POST", "/", [("HOST", "example.amazonaws.com"),
                                              ("X-AMZ-DATE", "20150830T123600Z")]),
    case("post-header-key-sort", "POST", "/", [HOST, ("My-Header1", "value1"), DATE]),
    case("post-header-value-case", "POST", "/", [HOST, ("My-Header1", "VALUE1"), DATE]),
    case("post-x-www-form-urlencoded", "POST", "/",
         [("Content-Type", "application/x-www-form-urlencoded"), HOST, DATE], "Param1=value1"),
    case("post-x-www-form-urlencoded-parameters", "POST", "/",
         [("Content-Type", "application/x-www-form-urlencoded; charset=utf8"), HOST, DATE],
         "Param1=value1"),
    case("post-sts-header-before", "POST", "/",
         [HOST, DATE, ("X-Amz-Security-Token", TOKEN)]),
    case("dynamodb-get-item", "POST", "/",
         [("Host", "dynamodb.us-east-1.amazonaws.com"),
          ("Content-Type", "application/x-amz-json-1.0"),
          ("X-Amz-Date", "20240229T235959Z"),
          ("X-Amz-Target", "DynamoDB_20120810.GetItem")],
         DDB_BODY, service="dynamodb", amz_date="20240229T235959Z"),
    case("dynamodb-put-item-session-token", "POST", "/",
         [("host", "dynamodb.eu-west-1.amazonaws.com"),
          ("content-type", "application/x-amz-json-1.0"),
          ("x-amz-date", "20251130T044600Z"),
          ("x-amz-security-token", TOKEN),
          ("x-amz-target", "DynamoDB_20120810.PutItem")],
         DDB_PUT, service="dynamodb", region="eu-west-1", amz_date="20251130T044600Z",
         access_key_id="ASIAEXAMPLEKEY123456",
         secret_access_key="je7MtGbClwBF/2Zp9Utk/h3yCo8nvbEXAMPLEKEY"),
    case("dynamodb-local-endpoint", "POST", "/",
         [("Host", "127.0.0.1:8000"), ("Content-Type", "application/x-amz-json-1.0"),
          ("X-Amz-Date", "20150830T123600Z"),
          ("X-Amz-Target", "DynamoDB_20120810.DescribeTable")],
         '{"TableName":"Shop"}', service="dynamodb"),
]


def write(path, text):
    with open(path, "w", encoding="utf-8", newline="") as f:
        f.write(text)


def main():
    root = os.path.join(HERE, "vectors")
    for c in CASES:
        ctx = dict(DEFAULT)
        ctx.update(c["ctx"])
        path, _, query = c["target"].partition("?")
        creq, sts, sig, auth = sign(c["method"], path, query, c["headers"], c["body"], ctx)
        d = os.path.join(root, c["name"])
        os.makedirs(d, exist_ok=True)
        req = "%s %s HTTP/1.1\n" % (c["method"], c["target"])
        req += "".join("%s:%s\n" % h for h in c["headers"])
        req += "\n" + c["body"]
        write(os.path.join(d, "request.txt"), req)
        write(os.path.join(d, "canonical-request.txt"), creq)
        write(os.path.join(d, "string-to-sign.txt"), sts)
        write(os.path.join(d, "signature.txt"), sig)
        write(os.path.join(d, "authorization.txt"), auth)
        if c["ctx"]:
            write(os.path.join(d, "context.txt"),
                  "".join("%s=%s\n" % (k, ctx[k]) for k in sorted(ctx)))
        print(c["name"], sig)


if __name__ == "__main__":
    main()
