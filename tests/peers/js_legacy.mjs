// A scripted session of the AWS SDK for JavaScript v3 using DynamoDB's legacy
// (non-expression) parameters: Expected and ConditionalOperator, AttributeUpdates,
// KeyConditions with QueryFilter, ScanFilter, AttributesToGet, and the refusal to mix
// them with expressions. Every step asserts what DynamoDB answers.
// Usage: run_js.sh js_legacy.mjs (ENDPOINT in $DYNALOCK_TEST_ENDPOINT)
import {
  DynamoDBClient, CreateTableCommand, PutItemCommand, GetItemCommand, UpdateItemCommand,
  DeleteItemCommand, QueryCommand, ScanCommand, DeleteTableCommand, waitUntilTableExists,
} from "@aws-sdk/client-dynamodb";

const endpoint = process.argv[2];
const ddb = new DynamoDBClient({
  endpoint, region: "us-east-1", maxAttempts: 1,
  credentials: { accessKeyId: "AKIDPEER", secretAccessKey: "peer-secret" },
});
const table = "LegacyJs" + Math.random().toString(16).slice(2, 10);
let steps = 0;
const step = (name, ok) => {
  if (!ok) { console.log(`js legacy: FAILED at ${name}`); process.exit(1); }
  steps++;
};
const errorOf = async (cmd) => {
  try { await ddb.send(cmd); return null; } catch (e) { return e; }
};
const cond = (op, ...values) => (values.length ? { ComparisonOperator: op, AttributeValueList: values } : { ComparisonOperator: op });
const N = (v) => ({ N: String(v) });
const S = (v) => ({ S: v });

await ddb.send(new CreateTableCommand({
  TableName: table,
  AttributeDefinitions: [{ AttributeName: "pk", AttributeType: "S" }, { AttributeName: "sk", AttributeType: "S" }],
  KeySchema: [{ AttributeName: "pk", KeyType: "HASH" }, { AttributeName: "sk", KeyType: "RANGE" }],
  BillingMode: "PAY_PER_REQUEST",
}));
await waitUntilTableExists({ client: ddb, maxWaitTime: 30, minDelay: 1 }, { TableName: table });

// a counter kept with AttributeUpdates ADD under an Expected guard
const key = { pk: S("counter"), sk: S("-") };
await ddb.send(new PutItemCommand({ TableName: table, Item: { ...key, n: N(0), owner: S("me") }, Expected: { pk: { Exists: false } } }));
for (let i = 0; i < 5; i++) {
  await ddb.send(new UpdateItemCommand({
    TableName: table, Key: key, Expected: { owner: { Value: S("me") }, n: cond("LT", N(100)) }, ConditionalOperator: "AND",
    AttributeUpdates: { n: { Action: "ADD", Value: N(3) }, log: { Action: "ADD", Value: { SS: [`e${i}`] } } },
  }));
}
let e = await errorOf(new UpdateItemCommand({
  TableName: table, Key: key, Expected: { owner: { Value: S("you") } }, AttributeUpdates: { n: { Action: "ADD", Value: N(1) } },
}));
step("guard refuses", e && e.name === "ConditionalCheckFailedException");
let item = (await ddb.send(new GetItemCommand({ TableName: table, Key: key, ConsistentRead: true }))).Item;
step("counter", item.n.N === "15" && item.log.SS.length === 5);
const r0 = await ddb.send(new UpdateItemCommand({
  TableName: table, Key: key, ReturnValues: "ALL_NEW",
  AttributeUpdates: { log: { Action: "DELETE", Value: { SS: ["e0", "e1", "nope"] } }, owner: { Action: "DELETE" } },
}));
step("DELETE actions", r0.Attributes.log.SS.length === 3 && r0.Attributes.owner === undefined);
e = await errorOf(new UpdateItemCommand({ TableName: table, Key: key, AttributeUpdates: { n: { Action: "DELETE", Value: N(1) } } }));
step("DELETE of a number", e && e.name === "ValidationException" && e.message.endsWith("DELETE action with value is not supported for the type N"));

// KeyConditions + QueryFilter + AttributesToGet; ScanFilter
for (let i = 0; i < 8; i++) {
  await ddb.send(new PutItemCommand({ TableName: table, Item: { pk: S("log"), sk: S(`2024-0${i + 1}`), level: S(i % 3 === 0 ? "error" : "info") } }));
}
const q = await ddb.send(new QueryCommand({
  TableName: table,
  KeyConditions: { pk: cond("EQ", S("log")), sk: cond("BEGINS_WITH", S("2024-0")) },
  QueryFilter: { level: cond("EQ", S("error")) }, AttributesToGet: ["sk"],
}));
step("query", q.Count === 3 && q.ScannedCount === 8 && q.Items.map((i) => i.sk.S).join(",") === "2024-01,2024-04,2024-07"
  && q.Items.every((i) => Object.keys(i).length === 1));
const sc = await ddb.send(new ScanCommand({
  TableName: table, ScanFilter: { level: cond("IN", S("error"), S("warn")), sk: cond("GT", S("2024-03")) }, ConditionalOperator: "AND",
}));
step("scan", sc.Count === 2);
e = await errorOf(new QueryCommand({ TableName: table, KeyConditions: { pk: cond("EQ", S("log")), sk: cond("CONTAINS", S("x")) } }));
step("not indexable", e && e.name === "ValidationException");
e = await errorOf(new ScanCommand({ TableName: table, ScanFilter: { level: cond("EQ", S("x")) }, FilterExpression: "level = :l",
  ExpressionAttributeValues: { ":l": S("x") } }));
step("mix scan", e && e.name === "ValidationException" && e.message ===
  "Can not use both expression and non-expression parameters in the same request: Non-expression parameters: {ScanFilter} Expression parameters: {FilterExpression}");
e = await errorOf(new DeleteItemCommand({ TableName: table, Key: key, Expected: { n: { Exists: false } }, ConditionExpression: "attribute_exists(n)" }));
step("mix delete", e && e.name === "ValidationException" && e.message.startsWith("Can not use both expression and non-expression parameters"));
await ddb.send(new DeleteItemCommand({ TableName: table, Key: key, Expected: { n: cond("EQ", N(15)) } }));
step("delete", (await ddb.send(new GetItemCommand({ TableName: table, Key: key, ConsistentRead: true }))).Item === undefined);

await ddb.send(new DeleteTableCommand({ TableName: table }));
console.log(`js legacy: ${steps} steps passed`);
