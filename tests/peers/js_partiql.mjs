// A scripted PartiQL session of the AWS SDK for JavaScript v3 against a DynamoDB
// endpoint: INSERT with parameters, SELECT by key and paged with NextToken, UPDATE with
// RETURNING, conditional failures, a batch and a transaction with a cancellation.
// Every step asserts what DynamoDB answers. Usage: run_js.sh js_partiql.mjs
import {
  DynamoDBClient, CreateTableCommand, DeleteTableCommand, ExecuteStatementCommand,
  BatchExecuteStatementCommand, ExecuteTransactionCommand, waitUntilTableExists,
} from "@aws-sdk/client-dynamodb";

const endpoint = process.argv[2];
const ddb = new DynamoDBClient({
  endpoint, region: "us-east-1", maxAttempts: 1,
  credentials: { accessKeyId: "AKIDPEER", secretAccessKey: "peer-secret" },
});
const table = "PeersJsPq" + Math.random().toString(16).slice(2, 10);
const q = `"${table}"`;
let steps = 0;
const step = (name, ok) => {
  if (!ok) { console.log(`js partiql: FAILED at ${name}`); process.exit(1); }
  steps++;
};
const errorOf = async (cmd) => {
  try { await ddb.send(cmd); return null; } catch (e) { return e; }
};
const es = (Statement, extra = {}) => ddb.send(new ExecuteStatementCommand({ Statement, ...extra }));

await ddb.send(new CreateTableCommand({
  TableName: table, BillingMode: "PAY_PER_REQUEST",
  AttributeDefinitions: [{ AttributeName: "pk", AttributeType: "S" }, { AttributeName: "sk", AttributeType: "N" }],
  KeySchema: [{ AttributeName: "pk", KeyType: "HASH" }, { AttributeName: "sk", KeyType: "RANGE" }],
}));
await waitUntilTableExists({ client: ddb, maxWaitTime: 30, minDelay: 1 }, { TableName: table });

for (let i = 0; i < 5; i++) {
  const r = await es(`INSERT INTO ${q} VALUE {'pk': ?, 'sk': ?, 'm': {'depth': [?]}}`,
    { Parameters: [{ S: "p" }, { N: String(i) }, { N: String(i * 2) }] });
  step("insert", r.Items.length === 0);
}
let e = await errorOf(new ExecuteStatementCommand({ Statement: `INSERT INTO ${q} VALUE {'pk': 'p', 'sk': 0}` }));
step("insert duplicate", e && ["DuplicateItemException", "DuplicateItem"].includes(e.name));

let r = await es(`SELECT m.depth[0] FROM ${q} WHERE pk = 'p' AND sk = 2`);
step("nested projection", r.Items.length === 1 && r.Items[0]["depth[0]"].N === "4");

const seen = [];
let token;
let pages = 0;
do {
  r = await es(`SELECT sk FROM ${q} WHERE pk = 'p'`, { Limit: 2, NextToken: token });
  seen.push(...r.Items.map((i) => Number(i.sk.N)));
  token = r.NextToken;
  pages++;
} while (token && pages < 10);
step("paging", seen.join(",") === "0,1,2,3,4" && pages >= 3);

r = await es(`UPDATE ${q} SET m.extra = 'x' WHERE pk = 'p' AND sk = 1 RETURNING MODIFIED NEW *`);
step("update returning", r.Items.length === 1);
e = await errorOf(new ExecuteStatementCommand({ Statement: `UPDATE ${q} SET n = 1 WHERE pk = 'p' AND sk = 77` }));
step("update missing", e && e.name === "ConditionalCheckFailedException");
e = await errorOf(new ExecuteStatementCommand({ Statement: `SELECT * FROM ${q} WHERE pk = ?` }));
step("too few parameters", e && e.name === "ValidationException");

r = await ddb.send(new BatchExecuteStatementCommand({ Statements: [
  { Statement: `SELECT * FROM ${q} WHERE pk = 'p' AND sk = 0` },
  { Statement: `SELECT * FROM ${q} WHERE pk = 'p' AND sk = 9` },
] }));
step("batch", r.Responses.length === 2 && r.Responses[0].Item.sk.N === "0" && !r.Responses[1].Item);

e = await errorOf(new ExecuteTransactionCommand({ TransactStatements: [
  { Statement: `INSERT INTO ${q} VALUE {'pk': 't', 'sk': 1}` },
  { Statement: `EXISTS(SELECT * FROM ${q} WHERE pk = 'p' AND sk = 3 AND attribute_not_exists(m))` },
] }));
step("transaction cancelled", e && e.name === "TransactionCanceledException" &&
  e.CancellationReasons.map((x) => x.Code).join(",") === "None,ConditionalCheckFailed");
await ddb.send(new ExecuteTransactionCommand({ TransactStatements: [
  { Statement: `INSERT INTO ${q} VALUE {'pk': 't', 'sk': 1}` },
  { Statement: `DELETE FROM ${q} WHERE pk = 'p' AND sk = 4` },
] }));
r = await es(`SELECT pk FROM ${q} WHERE pk = 't' OR sk = 4`);
step("transaction applied", r.Items.length === 1 && r.Items[0].pk.S === "t");

await ddb.send(new DeleteTableCommand({ TableName: table }));
console.log(`js partiql: ${steps} steps passed against ${endpoint}`);
