"""Differential cases for DynamoDB's legacy (non-expression) parameters: Expected and
ConditionalOperator, AttributeUpdates, KeyConditions, QueryFilter, ScanFilter,
AttributesToGet, their validation and their mixing with expressions. Loaded by
differential.py, which provides k(), KEY and ATTRS; the cases run in order on their own
table (the main cases delete theirs)."""

L = "DiffLegacy"


def c(op, *values):
    d = {"ComparisonOperator": op}
    if values:
        d["AttributeValueList"] = list(values)
    return d


N = lambda v: {"N": str(v)}  # noqa: E731
S = lambda v: {"S": v}  # noqa: E731
KC = {"pk": c("EQ", S("q"))}

CASES = [
    ("legacy-create", "CreateTable", {"TableName": L, "KeySchema": KEY, "AttributeDefinitions": ATTRS, "BillingMode": "PAY_PER_REQUEST"}),
    ("legacy-put-exists-false", "PutItem", {"TableName": L, "Item": {**k("a"), "n": N(5), "s": S("hello"), "ss": {"SS": ["x", "y"]}, "l": {"L": [S("x")]}},
                                            "Expected": {"pk": {"Exists": False}}}),
    ("legacy-put-exists-false-again", "PutItem", {"TableName": L, "Item": k("a"), "Expected": {"pk": {"Exists": False}}}),
    ("legacy-put-value", "PutItem", {"TableName": L, "Item": {**k("a"), "n": N(5), "s": S("hello"), "ss": {"SS": ["x", "y"]}, "l": {"L": [S("x")]}},
                                     "Expected": {"n": {"Value": N("5.0")}, "s": {"Exists": True, "Value": S("hello")}}}),
    ("legacy-put-value-fails", "PutItem", {"TableName": L, "Item": k("a"), "Expected": {"n": {"Value": N(6)}}}),
]
# every operator, passing and failing, as an UpdateItem guard that counts the passes
_ops = [
    ("eq", {"n": c("EQ", N(5))}), ("eq-type", {"n": c("EQ", S("5"))}), ("eq-set", {"ss": c("EQ", {"SS": ["y", "x"]})}),
    ("ne", {"n": c("NE", N(6))}), ("ne-missing", {"zz": c("NE", N(6))}), ("le", {"n": c("LE", N(4))}),
    ("lt", {"n": c("LT", N(6))}), ("ge", {"n": c("GE", N(5))}), ("gt", {"s": c("GT", S("hella"))}),
    ("gt-missing", {"zz": c("GT", N(1))}), ("not-null", {"n": c("NOT_NULL")}), ("null", {"zz": c("NULL")}),
    ("null-present", {"n": c("NULL")}), ("contains-str", {"s": c("CONTAINS", S("ell"))}),
    ("contains-set", {"ss": c("CONTAINS", S("y"))}), ("contains-list", {"l": c("CONTAINS", S("x"))}),
    ("not-contains", {"ss": c("NOT_CONTAINS", S("z"))}), ("not-contains-missing", {"zz": c("NOT_CONTAINS", S("z"))}),
    ("begins-with", {"s": c("BEGINS_WITH", S("he"))}), ("in", {"n": c("IN", N(1), N(5))}),
    ("between", {"n": c("BETWEEN", N(5), N(6))}), ("value-with-op", {"n": {"ComparisonOperator": "GT", "Value": N(1)}}),
]
for name, expected in _ops:
    CASES.append((f"legacy-op-{name}", "UpdateItem", {"TableName": L, "Key": k("a"), "Expected": expected,
                                                      "AttributeUpdates": {"hits": {"Action": "ADD", "Value": N(1)}}}))
CASES += [
    ("legacy-op-count", "GetItem", {"TableName": L, "Key": k("a"), "AttributesToGet": ["hits"], "ConsistentRead": True}),
    ("legacy-condop-or", "UpdateItem", {"TableName": L, "Key": k("a"), "ConditionalOperator": "OR",
                                        "Expected": {"n": c("EQ", N(0)), "s": c("EQ", S("hello"))},
                                        "AttributeUpdates": {"s": {"Value": S("bye")}}, "ReturnValues": "UPDATED_OLD"}),
    ("legacy-condop-and-fails", "DeleteItem", {"TableName": L, "Key": k("a"), "ConditionalOperator": "AND",
                                               "Expected": {"n": c("EQ", N(5)), "s": c("EQ", S("hello"))}}),
    ("legacy-condop-alone", "PutItem", {"TableName": L, "Item": k("b"), "ConditionalOperator": "AND"}),
    ("legacy-condop-one", "PutItem", {"TableName": L, "Item": k("b"), "ConditionalOperator": "AND", "Expected": {"n": c("NULL")}}),
    ("legacy-condop-bad", "PutItem", {"TableName": L, "Item": k("b"), "ConditionalOperator": "XOR", "Expected": {"n": c("NULL"), "s": c("NULL")}}),
    # AttributeUpdates
    ("legacy-au-actions", "UpdateItem", {"TableName": L, "Key": k("a"), "ReturnValues": "ALL_NEW", "AttributeUpdates": {
        "n": {"Action": "ADD", "Value": N("-7.5")}, "ss": {"Action": "ADD", "Value": {"SS": ["z"]}},
        "l": {"Action": "ADD", "Value": {"L": [N(2)]}}, "hits": {"Action": "DELETE"}, "new": {"Action": "PUT", "Value": {"BOOL": True}}}}),
    ("legacy-au-delete-set", "UpdateItem", {"TableName": L, "Key": k("a"), "ReturnValues": "UPDATED_NEW",
                                            "AttributeUpdates": {"ss": {"Action": "DELETE", "Value": {"SS": ["x", "nope"]}}}}),
    ("legacy-au-delete-all", "UpdateItem", {"TableName": L, "Key": k("a"), "ReturnValues": "UPDATED_NEW",
                                            "AttributeUpdates": {"ss": {"Action": "DELETE", "Value": {"SS": ["y", "z"]}}}}),
    ("legacy-au-new-item", "UpdateItem", {"TableName": L, "Key": k("c"), "ReturnValues": "ALL_NEW",
                                          "AttributeUpdates": {"x": {"Action": "ADD", "Value": {"NS": ["1"]}}, "y": {"Action": "DELETE"}}}),
    ("legacy-au-delete-only-missing", "UpdateItem", {"TableName": L, "Key": k("d"), "AttributeUpdates": {"y": {"Action": "DELETE"}}}),
    ("legacy-au-delete-only-missing-get", "GetItem", {"TableName": L, "Key": k("d")}),
    ("legacy-au-delete-only-cleanup", "DeleteItem", {"TableName": L, "Key": k("d")}),
    ("legacy-au-key", "UpdateItem", {"TableName": L, "Key": k("a"), "AttributeUpdates": {"sk": {"Value": S("B")}}}),
    ("legacy-au-no-value", "UpdateItem", {"TableName": L, "Key": k("a"), "AttributeUpdates": {"x": {"Action": "ADD"}}}),
    ("legacy-au-add-string", "UpdateItem", {"TableName": L, "Key": k("a"), "AttributeUpdates": {"x": {"Action": "ADD", "Value": S("1")}}}),
    ("legacy-au-delete-number", "UpdateItem", {"TableName": L, "Key": k("a"), "AttributeUpdates": {"x": {"Action": "DELETE", "Value": N(1)}}}),
    ("legacy-au-bad-action", "UpdateItem", {"TableName": L, "Key": k("a"), "AttributeUpdates": {"x": {"Action": "SET", "Value": N(1)}}}),
    ("legacy-au-mismatch-add", "UpdateItem", {"TableName": L, "Key": k("a"), "AttributeUpdates": {"s": {"Action": "ADD", "Value": N(1)}}}),
    ("legacy-au-mismatch-delete", "UpdateItem", {"TableName": L, "Key": k("a"), "AttributeUpdates": {"n": {"Action": "DELETE", "Value": {"NS": ["1"]}}}}),
    ("legacy-au-updated-old", "UpdateItem", {"TableName": L, "Key": k("a"), "ReturnValues": "UPDATED_OLD",
                                             "AttributeUpdates": {"new": {"Action": "DELETE"}, "n": {"Action": "ADD", "Value": N(1)}}}),
    ("legacy-exp-null-key-new", "PutItem", {"TableName": L, "Item": k("e"), "Expected": {"pk": c("NULL")}}),
    ("legacy-exp-ne-new-item", "UpdateItem", {"TableName": L, "Key": k("f"), "Expected": {"n": c("NE", N(1))},
                                              "AttributeUpdates": {"n": {"Value": N(1)}}, "ReturnValues": "ALL_NEW"}),
    ("legacy-au-null-entry", "UpdateItem", {"TableName": L, "Key": k("a"), "AttributeUpdates": {"x": None}}),
    # Expected validation
    ("legacy-exp-no-value", "PutItem", {"TableName": L, "Item": k("b"), "Expected": {"a": {}}}),
    ("legacy-exp-exists-true", "PutItem", {"TableName": L, "Item": k("b"), "Expected": {"a": {"Exists": True}}}),
    ("legacy-exp-exists-false-value", "PutItem", {"TableName": L, "Item": k("b"), "Expected": {"a": {"Exists": False, "Value": S("x")}}}),
    ("legacy-exp-value-and-list", "PutItem", {"TableName": L, "Item": k("b"), "Expected": {"a": {"Value": S("x"), "ComparisonOperator": "EQ", "AttributeValueList": [S("x")]}}}),
    ("legacy-exp-exists-and-op", "PutItem", {"TableName": L, "Item": k("b"), "Expected": {"a": {"Exists": True, "ComparisonOperator": "EQ", "AttributeValueList": [S("x")]}}}),
    ("legacy-exp-op-no-value", "PutItem", {"TableName": L, "Item": k("b"), "Expected": {"a": c("EQ")}}),
    ("legacy-exp-list-no-op", "PutItem", {"TableName": L, "Item": k("b"), "Expected": {"a": {"AttributeValueList": [S("x")]}}}),
    ("legacy-exp-count", "PutItem", {"TableName": L, "Item": k("b"), "Expected": {"a": c("BETWEEN", N(1))}}),
    ("legacy-exp-types", "PutItem", {"TableName": L, "Item": k("b"), "Expected": {"a": c("IN", N(1), S("1"))}}),
    ("legacy-exp-between-order", "PutItem", {"TableName": L, "Item": k("b"), "Expected": {"a": c("BETWEEN", N(5), N(1))}}),
    ("legacy-exp-lt-set", "PutItem", {"TableName": L, "Item": k("b"), "Expected": {"a": c("LT", {"SS": ["x"]})}}),
    ("legacy-exp-contains-list", "PutItem", {"TableName": L, "Item": k("b"), "Expected": {"a": c("CONTAINS", {"L": [S("x")]})}}),
    ("legacy-exp-value-map", "PutItem", {"TableName": L, "Item": k("b"), "Expected": {"a": {"Value": {"M": {"x": S("y")}}}}}),
    ("legacy-exp-eq-list", "PutItem", {"TableName": L, "Item": k("b"), "Expected": {"a": c("EQ", {"L": [S("x")]})}}),
    ("legacy-exp-bad-op", "PutItem", {"TableName": L, "Item": k("b"), "Expected": {"a": c("LIKE", S("x"))}}),
    # KeyConditions, QueryFilter, ScanFilter
    ("legacy-put-q1", "PutItem", {"TableName": L, "Item": {**k("q", "1"), "v": N(1), "w": S("w1")}}),
    ("legacy-put-q2", "PutItem", {"TableName": L, "Item": {**k("q", "2"), "v": N(2)}}),
    ("legacy-put-q3", "PutItem", {"TableName": L, "Item": {**k("q", "3"), "v": N(3), "w": S("w3")}}),
    ("legacy-kc", "Query", {"TableName": L, "KeyConditions": KC}),
    ("legacy-kc-range", "Query", {"TableName": L, "KeyConditions": {**KC, "sk": c("GT", S("1"))}, "ScanIndexForward": False}),
    ("legacy-kc-between", "Query", {"TableName": L, "KeyConditions": {**KC, "sk": c("BETWEEN", S("1"), S("2"))}}),
    ("legacy-kc-begins", "Query", {"TableName": L, "KeyConditions": {**KC, "sk": c("BEGINS_WITH", S("3"))}}),
    ("legacy-kc-limit", "Query", {"TableName": L, "KeyConditions": {**KC, "sk": c("LE", S("3"))}, "Limit": 2}),
    ("legacy-kc-filter-expression", "Query", {"TableName": L, "KeyConditions": KC, "FilterExpression": "v > :v", "ExpressionAttributeValues": {":v": N(1)}}),
    ("legacy-kc-projection-expression", "Query", {"TableName": L, "KeyConditions": KC, "ProjectionExpression": "w"}),
    ("legacy-kc-missing-hash", "Query", {"TableName": L, "KeyConditions": {"sk": c("EQ", S("1"))}}),
    ("legacy-kc-missing-range", "Query", {"TableName": L, "KeyConditions": {**KC, "v": c("EQ", N(1))}}),
    ("legacy-kc-not-indexable", "Query", {"TableName": L, "KeyConditions": {"pk": c("NE", S("q"))}}),
    ("legacy-kc-hash-range-op", "Query", {"TableName": L, "KeyConditions": {"pk": c("GT", S("q"))}}),
    ("legacy-kc-type", "Query", {"TableName": L, "KeyConditions": {"pk": c("EQ", N(1))}}),
    ("legacy-kc-none", "Query", {"TableName": L}),
    ("legacy-kc-three", "Query", {"TableName": L, "KeyConditions": {**KC, "sk": c("EQ", S("1")), "v": c("EQ", N(1))}}),
    ("legacy-kc-range-only-op", "Query", {"TableName": L, "KeyConditions": {**KC, "sk": c("IN", S("1"), S("2"))}}),
    ("legacy-kc-condop", "Query", {"TableName": L, "KeyConditions": KC, "ConditionalOperator": "AND"}),
    ("legacy-kc-empty", "Query", {"TableName": L, "KeyConditions": {}}),
    ("legacy-qf", "Query", {"TableName": L, "KeyConditions": KC, "QueryFilter": {"w": c("NOT_NULL")}}),
    ("legacy-qf-or", "Query", {"TableName": L, "KeyConditions": KC, "QueryFilter": {"v": c("EQ", N(2)), "w": c("EQ", S("w3"))}, "ConditionalOperator": "OR"}),
    ("legacy-qf-key", "Query", {"TableName": L, "KeyConditions": KC, "QueryFilter": {"sk": c("EQ", S("1"))}}),
    ("legacy-qf-count", "Query", {"TableName": L, "KeyConditions": KC, "QueryFilter": {"v": c("IN", N(1), N(3))}, "Select": "COUNT"}),
    ("legacy-sf~unordered", "Scan", {"TableName": L, "ScanFilter": {"v": c("GE", N(2))}}),
    ("legacy-sf-contains~unordered", "Scan", {"TableName": L, "ScanFilter": {"w": c("CONTAINS", S("3"))}, "AttributesToGet": ["sk", "w"]}),
    ("legacy-sf-not-contains~unordered", "Scan", {"TableName": L, "ScanFilter": {"w": c("NOT_CONTAINS", S("3"))}, "AttributesToGet": ["sk"]}),
    ("legacy-sf-type", "Scan", {"TableName": L, "ScanFilter": {"v": c("LT", {"SS": ["a"]})}}),
    ("legacy-sf-eq-bool", "Scan", {"TableName": L, "ScanFilter": {"v": c("EQ", {"BOOL": True})}}),
    ("legacy-sf-ne-null~unordered", "Scan", {"TableName": L, "ScanFilter": {"w": c("NE", {"NULL": True})}}),
    ("legacy-sf-in-empty", "Scan", {"TableName": L, "ScanFilter": {"v": {"ComparisonOperator": "IN", "AttributeValueList": []}}}),
    ("legacy-sf-begins-n", "Scan", {"TableName": L, "ScanFilter": {"v": c("BEGINS_WITH", N(1))}}),
    ("legacy-sf-count", "Scan", {"TableName": L, "ScanFilter": {"v": c("NULL", N(1))}}),
    ("legacy-sf-no-op", "Scan", {"TableName": L, "ScanFilter": {"v": {"AttributeValueList": [N(1)]}}}),
    ("legacy-sf-condop-one", "Scan", {"TableName": L, "ScanFilter": {"v": c("NOT_NULL")}, "ConditionalOperator": "OR"}),
    ("legacy-sf-empty-condop", "Scan", {"TableName": L, "ScanFilter": {}, "ConditionalOperator": "OR"}),
    ("legacy-tx-expected", "TransactWriteItems", {"TransactItems": [{"Put": {"TableName": L, "Item": k("tx"), "Expected": {"pk": {"Exists": True, "Value": S("nope")}}}}]}),
    ("legacy-batch-write-expected", "BatchWriteItem", {"RequestItems": {L: [{"PutRequest": {"Item": k("bw"), "Expected": {"pk": {"Exists": True, "Value": S("nope")}}}}]}}),
    ("legacy-update-ccf-allold", "UpdateItem", {"TableName": L, "Key": k("q", "1"), "Expected": {"v": c("GT", N(5))}, "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
                                                "AttributeUpdates": {"v": {"Value": N(0)}}}),
    # AttributesToGet and Select
    ("legacy-atg-get", "GetItem", {"TableName": L, "Key": k("q", "1"), "AttributesToGet": ["v", "nope"]}),
    ("legacy-atg-batch~unordered", "BatchGetItem", {"RequestItems": {L: {"Keys": [k("q", "1"), k("q", "3")], "AttributesToGet": ["w"]}}}),
    ("legacy-atg-select", "Query", {"TableName": L, "KeyConditions": KC, "AttributesToGet": ["v"], "Select": "SPECIFIC_ATTRIBUTES"}),
    ("legacy-atg-select-all", "Scan", {"TableName": L, "AttributesToGet": ["v"], "Select": "ALL_ATTRIBUTES"}),
    ("legacy-atg-select-count", "Query", {"TableName": L, "KeyConditions": KC, "AttributesToGet": ["v"], "Select": "COUNT"}),
    ("legacy-atg-dup", "GetItem", {"TableName": L, "Key": k("q", "1"), "AttributesToGet": ["v", "v"]}),
    ("legacy-atg-empty", "GetItem", {"TableName": L, "Key": k("q", "1"), "AttributesToGet": []}),
    # mixing with expressions, and expression maps without expressions
    ("legacy-mix-put", "PutItem", {"TableName": L, "Item": k("b"), "Expected": {"pk": {"Exists": False}}, "ConditionExpression": "attribute_not_exists(pk)"}),
    ("legacy-mix-update", "UpdateItem", {"TableName": L, "Key": k("a"), "AttributeUpdates": {"x": {"Value": N(1)}}, "Expected": {"x": {"Exists": False}},
                                         "UpdateExpression": "SET y = :y", "ConditionExpression": "attribute_exists(pk)", "ExpressionAttributeValues": {":y": N(1)}}),
    ("legacy-mix-condop", "DeleteItem", {"TableName": L, "Key": k("a"), "ConditionalOperator": "AND", "ConditionExpression": "attribute_exists(pk)"}),
    ("legacy-mix-query", "Query", {"TableName": L, "KeyConditions": KC, "QueryFilter": {"v": c("NOT_NULL")}, "ConditionalOperator": "AND",
                                   "KeyConditionExpression": "pk = :p", "FilterExpression": "v > :v", "ProjectionExpression": "w",
                                   "ExpressionAttributeValues": {":p": S("q"), ":v": N(1)}}),
    ("legacy-mix-scan", "Scan", {"TableName": L, "AttributesToGet": ["v"], "ScanFilter": {"v": c("NOT_NULL")}, "ProjectionExpression": "w"}),
    ("legacy-mix-get", "GetItem", {"TableName": L, "Key": k("a"), "AttributesToGet": ["n"], "ProjectionExpression": "n"}),
    ("legacy-values-put", "PutItem", {"TableName": L, "Item": k("b"), "Expected": {"pk": {"Exists": False}}, "ExpressionAttributeValues": {":a": N(1)}}),
    ("legacy-values-update", "UpdateItem", {"TableName": L, "Key": k("a"), "AttributeUpdates": {"x": {"Value": N(1)}}, "ExpressionAttributeValues": {":a": N(1)}}),
    ("legacy-names-delete", "DeleteItem", {"TableName": L, "Key": k("b"), "Expected": {"pk": {"Exists": False}}, "ExpressionAttributeNames": {"#a": "a"}}),
    ("legacy-values-query", "Query", {"TableName": L, "KeyConditions": KC, "ExpressionAttributeValues": {":a": N(1)}}),
    ("legacy-values-scan", "Scan", {"TableName": L, "ScanFilter": {"v": c("NOT_NULL")}, "ExpressionAttributeValues": {":a": N(1)}}),
]
