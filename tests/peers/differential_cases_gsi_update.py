"""Differential cases for UpdateTable's GlobalSecondaryIndexUpdates (loaded by
differential.py): the checks of an index creation or deletion, each refused without
changing the table (DynamoDB Local builds an accepted index in the background, so that a
successful creation would make the cases after it depend on its timing; the statuses
and the backfill are in tests/fakedb/test_gsi_update.c and the SDK sessions)."""

GT = "DiffGsiUpdate"
GT20 = "DiffGsiUpdate20"
PK = [{"AttributeName": "pk", "KeyType": "HASH"}]
PKA = [{"AttributeName": "pk", "AttributeType": "S"}]
GA = [{"AttributeName": "g", "AttributeType": "S"}]
HA = [{"AttributeName": "h", "AttributeType": "S"}]


def create(name, attr):
    return {"Create": {"IndexName": name, "KeySchema": [{"AttributeName": attr, "KeyType": "HASH"}],
                       "Projection": {"ProjectionType": "ALL"}}}


def update(table, updates, defs=None):
    body = {"TableName": table, "GlobalSecondaryIndexUpdates": updates}
    if defs is not None:
        body["AttributeDefinitions"] = defs
    return body


CASES = [
    ("gsiu-create-table", "CreateTable", {"TableName": GT, "KeySchema": PK, "AttributeDefinitions": PKA + GA,
                                          "BillingMode": "PAY_PER_REQUEST", "GlobalSecondaryIndexes": [create("gidx", "g")["Create"]]}),
    ("gsiu-put", "PutItem", {"TableName": GT, "Item": {"pk": {"S": "a"}, "g": {"S": "x"}}}),
    ("gsiu-nothing", "UpdateTable", {"TableName": GT}),
    ("gsiu-empty-list", "UpdateTable", update(GT, [])),
    ("gsiu-definitions-only", "UpdateTable", {"TableName": GT, "AttributeDefinitions": HA}),
    ("gsiu-null-action", "UpdateTable", update(GT, [{}])),
    ("gsiu-two-creates", "UpdateTable", update(GT, [create("hidx", "h"), create("hidx2", "h")], HA)),
    ("gsiu-create-and-delete", "UpdateTable", update(GT, [create("hidx", "h"), {"Delete": {"IndexName": "gidx"}}], HA)),
    ("gsiu-create-delete-one-entry", "UpdateTable", update(GT, [dict(create("hidx", "h"), Delete={"IndexName": "gidx"})], HA)),
    ("gsiu-same-index-twice", "UpdateTable", update(GT, [{"Delete": {"IndexName": "gidx"}}, {"Delete": {"IndexName": "gidx"}}])),
    ("gsiu-type-conflict", "UpdateTable", update(GT, [create("pkidx", "pk")], [{"AttributeName": "pk", "AttributeType": "N"}])),
    ("gsiu-type-conflict-index-key", "UpdateTable", update(GT, [create("gnum", "g")], [{"AttributeName": "g", "AttributeType": "N"}])),
    ("gsiu-index-exists", "UpdateTable", update(GT, [create("gidx", "g")], GA)),
    ("gsiu-delete-unknown", "UpdateTable", update(GT, [{"Delete": {"IndexName": "nope"}}])),
    ("gsiu-no-definitions", "UpdateTable", update(GT, [create("hidx", "h")])),
    ("gsiu-missing-definition", "UpdateTable", update(GT, [create("hidx", "h")], GA)),
    ("gsiu-describe", "DescribeTable", {"TableName": GT}),
    ("gsiu-create-table-20~unordered", "CreateTable", {
        "TableName": GT20, "KeySchema": PK, "BillingMode": "PAY_PER_REQUEST",
        "AttributeDefinitions": PKA + [{"AttributeName": f"a{i}", "AttributeType": "S"} for i in range(20)],
        "GlobalSecondaryIndexes": [dict(create(f"idx{i}", f"a{i}")["Create"], Projection={"ProjectionType": "KEYS_ONLY"})
                                   for i in range(20)]}),
    ("gsiu-21st-index", "UpdateTable", update(GT20, [create("idx20", "a20")], [{"AttributeName": "a20", "AttributeType": "S"}])),
    ("gsiu-delete-table-20", "DeleteTable", {"TableName": GT20}),
    ("gsiu-delete-table", "DeleteTable", {"TableName": GT}),
]
