# Differential cases for the calls tools make at start-up (tags, continuous backups,
# limits, endpoints) and the request errors of issue #11's items 3-4 that came with
# them. Loaded by differential.py, which provides k(), nested(), T, KEY and ATTRS.
# DynamoDB Local has DescribeLimits and CreateTable's Tags only; the other calls answer
# UnknownOperationException there (differential_known_startup.txt names the evidence
# for what AWS answers).
ARN = "arn:aws:dynamodb:us-east-1:000000000000:table/DiffTags"
ONE = [{"Key": "team", "Value": "core"}]
PK = [{"AttributeName": "pk", "KeyType": "HASH"}]
PK_DEF = [{"AttributeName": "pk", "AttributeType": "S"}]

CASES = [
    ("startup-limits", "DescribeLimits", {}),
    ("startup-create-tagged", "CreateTable", {"TableName": "DiffTags", "KeySchema": PK, "AttributeDefinitions": PK_DEF,
                                              "BillingMode": "PAY_PER_REQUEST", "Tags": ONE}),
    ("startup-create-tags-reserved", "CreateTable", {"TableName": "DiffTagsAws", "KeySchema": PK, "AttributeDefinitions": PK_DEF,
                                                     "BillingMode": "PAY_PER_REQUEST", "Tags": [{"Key": "aws:x", "Value": "v"}]}),
    ("startup-list-tags", "ListTagsOfResource", {"ResourceArn": ARN}),
    ("startup-tag", "TagResource", {"ResourceArn": ARN, "Tags": [{"Key": "env", "Value": "ci"}]}),
    ("startup-untag", "UntagResource", {"ResourceArn": ARN, "TagKeys": ["team", "absent"]}),
    ("startup-tag-no-arn", "TagResource", {"Tags": ONE}),
    ("startup-tag-not-arn", "TagResource", {"ResourceArn": "I_do_not_exist", "Tags": ONE}),
    ("startup-tag-index-arn", "ListTagsOfResource", {"ResourceArn": ARN + "/index/byG"}),
    ("startup-tag-missing-table", "TagResource", {"ResourceArn": ARN + "x", "Tags": ONE}),
    ("startup-tag-empty", "TagResource", {"ResourceArn": ARN, "Tags": []}),
    ("startup-tag-reserved", "TagResource", {"ResourceArn": ARN, "Tags": [{"Key": "aws:x", "Value": "v"}]}),
    ("startup-tag-bad-char", "TagResource", {"ResourceArn": ARN, "Tags": [{"Key": "hi!", "Value": "v"}]}),
    ("startup-tag-dup", "TagResource", {"ResourceArn": ARN, "Tags": [{"Key": "a", "Value": "1"}, {"Key": "a", "Value": "2"}]}),
    ("startup-tag-too-many", "TagResource", {"ResourceArn": ARN, "Tags": [{"Key": f"k{i}", "Value": "v"} for i in range(51)]}),
    ("startup-pitr-describe", "DescribeContinuousBackups", {"TableName": "DiffTags"}),
    ("startup-pitr-missing", "DescribeContinuousBackups", {"TableName": "Nope"}),
    ("startup-pitr-disable-days", "UpdateContinuousBackups", {"TableName": "DiffTags", "PointInTimeRecoverySpecification":
                                                              {"PointInTimeRecoveryEnabled": False, "RecoveryPeriodInDays": 7}}),
    ("startup-endpoints", "DescribeEndpoints", {}),
    # request errors of items 3-4
    ("startup-dup-attr-defs", "CreateTable", {"TableName": "DiffDupDefs", "KeySchema": PK, "BillingMode": "PAY_PER_REQUEST",
                                              "AttributeDefinitions": PK_DEF + [{"AttributeName": "pk", "AttributeType": "N"}]}),
    ("startup-hash-is-range", "CreateTable", {"TableName": "DiffHashRange", "BillingMode": "PAY_PER_REQUEST",
                                              "KeySchema": PK + [{"AttributeName": "pk", "KeyType": "RANGE"}], "AttributeDefinitions": PK_DEF}),
    ("startup-lsi-range-is-hash", "CreateTable", {
        "TableName": "DiffLsiSame", "BillingMode": "PAY_PER_REQUEST",
        "KeySchema": PK + [{"AttributeName": "sk", "KeyType": "RANGE"}],
        "AttributeDefinitions": PK_DEF + [{"AttributeName": "sk", "AttributeType": "S"}],
        "LocalSecondaryIndexes": [{"IndexName": "same", "KeySchema": PK + [{"AttributeName": "pk", "KeyType": "RANGE"}],
                                   "Projection": {"ProjectionType": "ALL"}}]}),
    ("startup-query-count-projection", "Query", {"TableName": "DiffTags", "KeyConditionExpression": "pk = :p",
                                                 "ExpressionAttributeValues": {":p": {"S": "a"}}, "Select": "COUNT",
                                                 "ProjectionExpression": "pk"}),
    ("startup-scan-all-projection", "Scan", {"TableName": "DiffTags", "Select": "ALL_ATTRIBUTES", "ProjectionExpression": "pk"}),
    ("startup-esk-table", "CreateTable", {"TableName": "DiffEsk", "BillingMode": "PAY_PER_REQUEST",
                                          "KeySchema": PK + [{"AttributeName": "sk", "KeyType": "RANGE"}],
                                          "AttributeDefinitions": PK_DEF + [{"AttributeName": "sk", "AttributeType": "S"}]}),
    ("startup-esk-range-outside", "Query", {"TableName": "DiffEsk", "KeyConditionExpression": "pk = :p AND sk BETWEEN :a AND :b",
                                            "ExpressionAttributeValues": {":p": {"S": "a"}, ":a": {"S": "1"}, ":b": {"S": "5"}},
                                            "ExclusiveStartKey": {"pk": {"S": "a"}, "sk": {"S": "9"}}}),
    ("startup-esk-range-other-partition", "Query", {"TableName": "DiffEsk", "KeyConditionExpression": "pk = :p AND sk BETWEEN :a AND :b",
                                                    "ExpressionAttributeValues": {":p": {"S": "a"}, ":a": {"S": "1"}, ":b": {"S": "5"}},
                                                    "ExclusiveStartKey": {"pk": {"S": "b"}, "sk": {"S": "3"}}}),
    ("startup-esk-range-inside", "Query", {"TableName": "DiffEsk", "KeyConditionExpression": "pk = :p AND begins_with(sk, :a)",
                                           "ExpressionAttributeValues": {":p": {"S": "a"}, ":a": {"S": "ab"}},
                                           "ExclusiveStartKey": {"pk": {"S": "a"}, "sk": {"S": "abc"}}}),
]

RAW = [
    ("startup-truncated-json", "DescribeLimits", b'{"TableName":'),
]
