# Differential cases for ReturnConsumedCapacity (issue #25 item 3): each case named
# ~capacity compares only the ConsumedCapacity each server answers. Items are built to
# exact sizes, so the numbers follow AWS's documented rules; differential_known_capacity.txt
# names the evidence where DynamoDB Local charges otherwise. Loaded by differential.py.
CT = "DiffCap"      # pk, sk; a keys-only GSI byG on g
CU = "DiffCapU"     # pk, sk
R = "ReturnConsumedCapacity"
V = "ExpressionAttributeValues"


def key(pk, sk):
    return {"pk": {"S": pk}, "sk": {"S": sk}}


def item(pk, sk, size, **extra):
    """An item of exactly `size` bytes (name lengths plus value lengths), padded in v."""
    fixed = 2 + len(pk) + 2 + len(sk) + 1 + sum(len(n) + len(x) for n, x in extra.items())
    it = {**key(pk, sk), "v": {"S": "x" * (size - fixed)}}
    it.update({n: {"S": x} for n, x in extra.items()})
    return it


def table(name, gsi):
    t = {"TableName": name, "BillingMode": "PAY_PER_REQUEST",
         "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
         "AttributeDefinitions": [{"AttributeName": a, "AttributeType": "S"} for a in (("pk", "sk", "g") if gsi else ("pk", "sk"))]}
    if gsi:
        t["GlobalSecondaryIndexes"] = [{"IndexName": "byG", "KeySchema": [{"AttributeName": "g", "KeyType": "HASH"}],
                                        "Projection": {"ProjectionType": "KEYS_ONLY"}}]
    return t


def q(extra):
    return {"TableName": CU, "KeyConditionExpression": "pk = :p", V: {":p": {"S": "q"}}, R: "TOTAL", **extra}


CASES = [
    ("cap-create", "CreateTable", table(CT, True)),
    ("cap-create-u", "CreateTable", table(CU, False)),
    # writes: a unit per started KB; an index entry written, or moved (twice)
    ("cap-put-1024~capacity", "PutItem", {"TableName": CT, "Item": item("a", "1", 1024), R: "TOTAL"}),
    ("cap-put-1024-indexes~capacity", "PutItem", {"TableName": CT, "Item": item("a", "1", 1024), R: "INDEXES"}),
    ("cap-put-1025~capacity", "PutItem", {"TableName": CT, "Item": item("a", "2", 1025), R: "TOTAL"}),
    ("cap-put-gsi~capacity", "PutItem", {"TableName": CT, "Item": item("a", "3", 1025, g="G"), R: "INDEXES"}),
    ("cap-update-gsi-move~capacity", "UpdateItem", {"TableName": CT, "Key": key("a", "3"), "UpdateExpression": "SET g = :g",
                                                    V: {":g": {"S": "H"}}, R: "INDEXES"}),
    ("cap-delete-missing~capacity", "DeleteItem", {"TableName": CT, "Key": key("zz", "1"), R: "TOTAL"}),
    ("cap-none~capacity", "PutItem", {"TableName": CT, "Item": item("a", "4", 100), R: "NONE"}),
    # reads: a unit per started 4 KB, halves; a missing item still a unit
    *[("cap-put-q%d" % i, "PutItem", {"TableName": CU, "Item": item("q", "s%d" % i, 1000)}) for i in range(5)],
    ("cap-put-4096", "PutItem", {"TableName": CU, "Item": item("r", "s4096", 4096)}),
    ("cap-put-4097", "PutItem", {"TableName": CU, "Item": item("r", "s4097", 4097)}),
    ("cap-get-4096~capacity", "GetItem", {"TableName": CU, "Key": key("r", "s4096"), R: "TOTAL"}),
    ("cap-get-4097-strong~capacity", "GetItem", {"TableName": CU, "Key": key("r", "s4097"), "ConsistentRead": True, R: "TOTAL"}),
    ("cap-get-missing-strong~capacity", "GetItem", {"TableName": CU, "Key": key("r", "none"), "ConsistentRead": True, R: "TOTAL"}),
    ("cap-get-indexes~capacity", "GetItem", {"TableName": CU, "Key": key("r", "s4097"), R: "INDEXES"}),
    # Query and Scan: the page's bytes summed, then rounded; filters and projections do not reduce it
    ("cap-query~capacity", "Query", q({})),
    ("cap-query-strong~capacity", "Query", q({"ConsistentRead": True})),
    ("cap-query-filter~capacity", "Query", q({"ConsistentRead": True, "FilterExpression": "attribute_exists(nothing)"})),
    ("cap-query-projection~capacity", "Query", q({"ConsistentRead": True, "ProjectionExpression": "pk"})),
    ("cap-query-count~capacity", "Query", q({"ConsistentRead": True, "Select": "COUNT"})),
    ("cap-query-limit~capacity", "Query", q({"ConsistentRead": True, "Limit": 4})),
    ("cap-query-indexes~capacity", "Query", q({R: "INDEXES"})),
    ("cap-query-empty~capacity", "Query", {"TableName": CU, "KeyConditionExpression": "pk = :p", V: {":p": {"S": "nobody"}}, R: "TOTAL"}),
    ("cap-scan~capacity", "Scan", {"TableName": CU, R: "TOTAL"}),
    ("cap-scan-strong~capacity", "Scan", {"TableName": CU, "ConsistentRead": True, R: "TOTAL"}),
    ("cap-query-gsi~capacity", "Query", {"TableName": CT, "IndexName": "byG", "KeyConditionExpression": "g = :g",
                                         V: {":g": {"S": "H"}}, R: "INDEXES"}),
    # batches: one entry per table, each item on its own
    ("cap-batch-get~capacity", "BatchGetItem", {"RequestItems": {CU: {"Keys": [key("r", "s4096"), key("r", "s4097")]},
                                                                 CT: {"Keys": [key("a", "1")], "ConsistentRead": True}}, R: "TOTAL"}),
    ("cap-batch-get-indexes~capacity", "BatchGetItem", {"RequestItems": {CU: {"Keys": [key("q", "s0"), key("q", "s1")],
                                                                              "ConsistentRead": True}}, R: "INDEXES"}),
    ("cap-batch-get-missing~capacity", "BatchGetItem", {"RequestItems": {CU: {"Keys": [key("r", "none")]}}, R: "TOTAL"}),
    ("cap-batch-write~capacity", "BatchWriteItem", {"RequestItems": {CU: [{"PutRequest": {"Item": item("w", "1", 2048)}}],
                                                                     CT: [{"PutRequest": {"Item": item("w", "1", 1025)}}]}, R: "TOTAL"}),
    ("cap-batch-write-gsi~capacity", "BatchWriteItem", {"RequestItems": {CT: [{"PutRequest": {"Item": item("w", "2", 1025, g="G")}}]},
                                                        R: "INDEXES"}),
    ("cap-batch-write-delete-missing~capacity", "BatchWriteItem", {"RequestItems": {CU: [{"DeleteRequest": {"Key": key("zz", "1")}}]},
                                                                   R: "TOTAL"}),
    # transactions: twice the units
    ("cap-tx-get~capacity", "TransactGetItems", {"TransactItems": [{"Get": {"TableName": CU, "Key": key("r", "s4097")}},
                                                                   {"Get": {"TableName": CU, "Key": key("r", "none")}},
                                                                   {"Get": {"TableName": CT, "Key": key("a", "1")}}], R: "TOTAL"}),
    ("cap-tx-put~capacity", "TransactWriteItems", {"TransactItems": [{"Put": {"TableName": CU, "Item": item("t", "1", 1025)}}], R: "INDEXES"}),
    ("cap-tx-put-gsi~capacity", "TransactWriteItems", {"TransactItems": [{"Put": {"TableName": CT, "Item": item("t", "2", 100, g="G")}}],
                                                       R: "INDEXES"}),
    # a failed condition: the error carries no ConsumedCapacity; the tables go (their answers
    # are compared by fid-delete-table)
    ("cap-cond-fail~capacity", "PutItem", {"TableName": CU, "Item": item("r", "s4096", 100),
                                           "ConditionExpression": "attribute_not_exists(pk)", R: "TOTAL"}),
    ("cap-tx-cancel~capacity", "TransactWriteItems", {"TransactItems": [{"ConditionCheck": {"TableName": CU, "Key": key("r", "s4097"),
                                                                                            "ConditionExpression": "attribute_not_exists(pk)"}}], R: "TOTAL"}),
    ("cap-delete-table~capacity", "DeleteTable", {"TableName": CT}),
    ("cap-delete-table-u~capacity", "DeleteTable", {"TableName": CU}),
]
