#!/usr/bin/env python3
"""A scripted PartiQL session of boto3 (the AWS SDK for Python) against a DynamoDB
endpoint: INSERT, SELECT by key and by scan with parameters, paging with NextToken,
UPDATE and DELETE with RETURNING, their conditional failures, a batch and a transaction
with a cancellation. Every step asserts what DynamoDB answers; it runs against fakedb
and DynamoDB Local alike. Usage: boto3_partiql.py ENDPOINT"""
import sys
import uuid

import boto3
from botocore.config import Config
from botocore.exceptions import ClientError

endpoint = sys.argv[1]
ddb = boto3.client("dynamodb", endpoint_url=endpoint, region_name="us-east-1",
                   aws_access_key_id="AKIDPEER", aws_secret_access_key="peer-secret",
                   config=Config(retries={"max_attempts": 1}))
table = "PeersPq" + uuid.uuid4().hex[:8]
q = '"%s"' % table
steps = 0


def step(name, ok):
    global steps
    if not ok:
        print(f"boto3 partiql: FAILED at {name}")
        sys.exit(1)
    steps += 1


def error_of(fn, **kw):
    try:
        fn(**kw)
    except ClientError as e:
        return e.response["Error"]["Code"], e.response
    return None, None


ddb.create_table(TableName=table, BillingMode="PAY_PER_REQUEST",
                 KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
                 AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}, {"AttributeName": "sk", "AttributeType": "N"}])
ddb.get_waiter("table_exists").wait(TableName=table, WaiterConfig={"Delay": 1})

for i in range(5):
    r = ddb.execute_statement(Statement=f"INSERT INTO {q} VALUE {{'pk': ?, 'sk': ?, 'n': ?, 'tags': <<'a', 'b'>>}}",
                              Parameters=[{"S": "p"}, {"N": str(i)}, {"N": str(i * 10)}])
    step("insert", r["Items"] == [])
code, _ = error_of(ddb.execute_statement, Statement=f"INSERT INTO {q} VALUE {{'pk': 'p', 'sk': 0}}")
# AWS names it DuplicateItemException; DynamoDB Local says DuplicateItem
step("insert duplicate", code in ("DuplicateItemException", "DuplicateItem"))

r = ddb.execute_statement(Statement=f"SELECT n FROM {q} WHERE pk = ? AND sk = ?", Parameters=[{"S": "p"}, {"N": "3"}])
step("select by key", r["Items"] == [{"n": {"N": "30"}}])
r = ddb.execute_statement(Statement=f"SELECT sk FROM {q} WHERE pk = 'p' AND sk >= 2", ConsistentRead=True)
step("select range", sorted(int(i["sk"]["N"]) for i in r["Items"]) == [2, 3, 4])

seen, token, pages = [], None, 0
while True:
    kw = {"NextToken": token} if token else {}
    r = ddb.execute_statement(Statement=f"SELECT * FROM {q} WHERE n >= 10", Limit=2, **kw)
    seen += [int(i["sk"]["N"]) for i in r["Items"]]
    pages += 1
    token = r.get("NextToken")
    if not token or pages > 10:
        break
step("paging", sorted(seen) == [1, 2, 3, 4] and pages >= 2)

r = ddb.execute_statement(Statement=f"UPDATE {q} SET n = n + 1 REMOVE tags WHERE pk = 'p' AND sk = 1 RETURNING ALL NEW *")
step("update returning", r["Items"][0]["n"] == {"N": "11"} and "tags" not in r["Items"][0])
code, _ = error_of(ddb.execute_statement, Statement=f"UPDATE {q} SET n = 0 WHERE pk = 'p' AND sk = 99")
step("update missing item", code == "ConditionalCheckFailedException")
code, resp = error_of(ddb.execute_statement, Statement=f"UPDATE {q} SET n = 0 WHERE pk = 'p' AND sk = 1 AND n = 5",
                      ReturnValuesOnConditionCheckFailure="ALL_OLD")
step("update condition", code == "ConditionalCheckFailedException" and resp.get("Item", {}).get("n") == {"N": "11"})
code, _ = error_of(ddb.execute_statement, Statement=f"UPDATE {q} SET n = 0 WHERE pk = 'p'")
step("update partial key", code == "ValidationException")
r = ddb.execute_statement(Statement=f"DELETE FROM {q} WHERE pk = 'p' AND sk = 4 RETURNING ALL OLD *")
step("delete returning", r["Items"][0]["n"] == {"N": "40"})
r = ddb.execute_statement(Statement=f"DELETE FROM {q} WHERE pk = 'p' AND sk = 4")
step("delete missing", r["Items"] == [])
code, _ = error_of(ddb.execute_statement, Statement=f"SELEC * FROM {q}")
step("syntax error", code == "ValidationException")

r = ddb.batch_execute_statement(Statements=[
    {"Statement": f"SELECT * FROM {q} WHERE pk = 'p' AND sk = 0"},
    {"Statement": f"SELECT * FROM {q} WHERE pk = 'p' AND sk = ?", "Parameters": [{"N": "42"}]},
    {"Statement": f"SELECT * FROM {q} WHERE pk = 'p'"}])["Responses"]
step("batch reads", r[0]["Item"]["n"] == {"N": "0"} and "Item" not in r[1] and r[1]["TableName"] == table
     and r[2]["Error"]["Code"] == "ValidationError")
r = ddb.batch_execute_statement(Statements=[
    {"Statement": f"INSERT INTO {q} VALUE {{'pk': 'q', 'sk': 1}}"},
    {"Statement": f"UPDATE {q} SET n = 1 WHERE pk = 'nope' AND sk = 1"}])["Responses"]
step("batch writes", "Error" not in r[0] and r[1]["Error"]["Code"] == "ConditionalCheckFailed")

code, resp = error_of(ddb.execute_transaction, TransactStatements=[
    {"Statement": f"INSERT INTO {q} VALUE {{'pk': 't', 'sk': 1}}"},
    {"Statement": f"UPDATE {q} SET n = 1 WHERE pk = 'nope' AND sk = 1"}])
reasons = [x["Code"] for x in resp.get("CancellationReasons", [])] if resp else []
step("transaction cancelled", code == "TransactionCanceledException" and reasons == ["None", "ConditionalCheckFailed"])
r = ddb.execute_statement(Statement=f"SELECT * FROM {q} WHERE pk = 't'")
step("nothing of it kept", r["Items"] == [])
ddb.execute_transaction(ClientRequestToken="partiql-token-1", TransactStatements=[
    {"Statement": f"INSERT INTO {q} VALUE {{'pk': 't', 'sk': 1}}"},
    {"Statement": f"UPDATE {q} SET n = n + 100 WHERE pk = 'p' AND sk = 0"},
    {"Statement": f"EXISTS(SELECT * FROM {q} WHERE pk = 'q' AND sk = 1 AND attribute_not_exists(n))"}])
r = ddb.execute_transaction(TransactStatements=[
    {"Statement": f"SELECT n FROM {q} WHERE pk = 'p' AND sk = 0"},
    {"Statement": f"SELECT * FROM {q} WHERE pk = 't' AND sk = 1"}])["Responses"]
step("transaction reads", r[0]["Item"] == {"n": {"N": "100"}} and r[1]["Item"]["pk"] == {"S": "t"})

ddb.delete_table(TableName=table)
print(f"boto3 partiql: {steps} steps passed against {endpoint}")
