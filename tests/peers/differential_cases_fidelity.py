# Differential cases for the remaining differences of issue #25 item 1: nested functions
# in SET, a parallel Scan restarted outside its segment, name limits, NonKeyAttributes,
# the first invalid action of a transaction, DeleteTable's answer, UPDATED_OLD of a
# nested path, members of the wrong JSON type, and messages that name the right key.
# Loaded by differential.py, which provides k(), T, KEY and ATTRS;
# differential_known_fidelity.txt names the evidence where DynamoDB Local differs.
FT = "DiffFid"
PK = [{"AttributeName": "pk", "KeyType": "HASH"}]
PK_DEF = [{"AttributeName": "pk", "AttributeType": "S"}]
L3 = {":a": {"L": [{"N": "1"}]}, ":b": {"L": [{"N": "2"}]}, ":c": {"L": [{"N": "3"}]}}


def fkey(pk):
    return {"pk": {"S": pk}}


def gsi_table(name, nka):
    return {"TableName": name, "KeySchema": PK, "BillingMode": "PAY_PER_REQUEST",
            "AttributeDefinitions": PK_DEF + [{"AttributeName": "g", "AttributeType": "S"}],
            "GlobalSecondaryIndexes": [{"IndexName": "byG", "KeySchema": [{"AttributeName": "g", "KeyType": "HASH"}],
                                        "Projection": {"ProjectionType": "INCLUDE", "NonKeyAttributes": nka}}]}


CASES = [
    ("fid-create", "CreateTable", {"TableName": FT, "KeySchema": PK, "BillingMode": "PAY_PER_REQUEST",
                                   "AttributeDefinitions": PK_DEF + [{"AttributeName": "p", "AttributeType": "S"},
                                                                     {"AttributeName": "x", "AttributeType": "S"}],
                                   "GlobalSecondaryIndexes": [{"IndexName": "byPX", "Projection": {"ProjectionType": "ALL"},
                                                               "KeySchema": [{"AttributeName": "p", "KeyType": "HASH"},
                                                                             {"AttributeName": "x", "KeyType": "RANGE"}]}]}),
    # nested functions in SET: if_not_exists nests, list_append does not
    ("fid-nested-list-append", "UpdateItem", {"TableName": FT, "Key": fkey("a"), "ExpressionAttributeValues": L3,
                                              "UpdateExpression": "SET l = list_append(list_append(:a, :b), :c)"}),
    ("fid-list-append-in-if-not-exists", "UpdateItem", {"TableName": FT, "Key": fkey("a"),
                                                        "ExpressionAttributeValues": {":a": L3[":a"], ":b": L3[":b"]},
                                                        "UpdateExpression": "SET l = if_not_exists(l, list_append(:a, :b))"}),
    ("fid-if-not-exists-nested", "UpdateItem", {"TableName": FT, "Key": fkey("a"), "ExpressionAttributeValues": {":a": L3[":a"]},
                                                "UpdateExpression": "SET l = if_not_exists(l, if_not_exists(m, :a))"}),
    ("fid-get-nested", "GetItem", {"TableName": FT, "Key": fkey("a")}),
    # a parallel scan restarted outside its segment (1 in 1,000,000: the key is elsewhere on both)
    ("fid-scan-outside-segment", "Scan", {"TableName": FT, "Segment": 0, "TotalSegments": 1000000,
                                          "ExclusiveStartKey": fkey("a")}),
    # names past their limits
    ("fid-attr-name-too-long", "PutItem", {"TableName": FT, "Item": {**fkey("n"), "n" * 65536: {"S": "v"}}}),
    ("fid-attr-name-longest", "PutItem", {"TableName": FT, "Item": {**fkey("n"), "n" * 65535: {"S": "v"}}}),
    ("fid-ttl-name-too-long", "UpdateTimeToLive", {"TableName": FT, "TimeToLiveSpecification": {"Enabled": True, "AttributeName": "t" * 256}}),
    ("fid-ttl-name-longest", "UpdateTimeToLive", {"TableName": FT, "TimeToLiveSpecification": {"Enabled": True, "AttributeName": "t" * 255}}),
    # NonKeyAttributes
    ("fid-nka-duplicate", "CreateTable", gsi_table("DiffFidNka", ["a", "b", "a"])),
    ("fid-nka-number", "CreateTable", gsi_table("DiffFidNka2", ["a", 5])),
    # a transaction with two invalid keys names the first
    ("fid-tx-two-invalid", "TransactWriteItems", {"TransactItems": [
        {"Put": {"TableName": FT, "Item": fkey("t1")}},
        {"Put": {"TableName": FT, "Item": {"pk": {"N": "1"}}}},
        {"Put": {"TableName": FT, "Item": {"pk": {"B": "AQ=="}}}}]}),
    # UPDATED_OLD / UPDATED_NEW of a nested path
    ("fid-put-nested", "PutItem", {"TableName": FT, "Item": {**fkey("u"), "a": {"M": {"b": {"S": "1"}, "c": {"S": "2"}}}}}),
    ("fid-updated-old-nested", "UpdateItem", {"TableName": FT, "Key": fkey("u"), "UpdateExpression": "SET a.b = :v",
                                              "ExpressionAttributeValues": {":v": {"S": "9"}}, "ReturnValues": "UPDATED_OLD"}),
    ("fid-updated-new-nested", "UpdateItem", {"TableName": FT, "Key": fkey("u"), "UpdateExpression": "SET a.b = :v",
                                              "ExpressionAttributeValues": {":v": {"S": "8"}}, "ReturnValues": "UPDATED_NEW"}),
    # members of the wrong JSON type
    ("fid-names-number", "GetItem", {"TableName": FT, "Key": fkey("u"), "ProjectionExpression": "#n",
                                     "ExpressionAttributeNames": {"#n": 7}}),
    ("fid-names-list", "GetItem", {"TableName": FT, "Key": fkey("u"), "ProjectionExpression": "#n",
                                   "ExpressionAttributeNames": ["x"]}),
    ("fid-keyschema-object", "CreateTable", {"TableName": "DiffFidObj", "KeySchema": PK[0], "AttributeDefinitions": PK_DEF,
                                             "BillingMode": "PAY_PER_REQUEST"}),
    # key conditions: the element actually missing
    ("fid-gsi-query-both", "Query", {"TableName": FT, "IndexName": "byPX", "KeyConditionExpression": "x = :x AND p = :p",
                                     "ExpressionAttributeValues": {":x": {"S": "1"}, ":p": {"S": "2"}}}),
    ("fid-gsi-query-missed-range", "Query", {"TableName": FT, "IndexName": "byPX", "KeyConditionExpression": "pk = :x AND p = :p",
                                             "ExpressionAttributeValues": {":x": {"S": "1"}, ":p": {"S": "2"}}}),
    ("fid-query-extra-attr", "Query", {"TableName": FT, "KeyConditionExpression": "x = :x AND pk = :p",
                                       "ExpressionAttributeValues": {":x": {"S": "1"}, ":p": {"S": "2"}}}),
    ("fid-attrdef-no-name", "CreateTable", {"TableName": "DiffFidDef", "KeySchema": PK, "AttributeDefinitions": [{"AttributeType": "S"}],
                                            "BillingMode": "PAY_PER_REQUEST"}),
    # ReturnConsumedCapacity (its figures are volatile here; a bad value is not)
    ("fid-capacity-bad-value", "GetItem", {"TableName": FT, "Key": fkey("u"), "ReturnConsumedCapacity": "ALL"}),
    ("fid-delete-table", "DeleteTable", {"TableName": FT}),
]
