// A scripted session of the AWS SDK for JavaScript v3 against fakedb asking for
// ReturnConsumedCapacity: items built to exact sizes, and the units a user reads from each
// command (single items, Query and Scan pages, batches, transactions, index entries with
// INDEXES, a failed condition that answers none), by AWS's documented rules.
// Usage: node js_capacity.mjs ENDPOINT
import {
  DynamoDBClient, CreateTableCommand, DeleteTableCommand, PutItemCommand, UpdateItemCommand,
  GetItemCommand, QueryCommand, ScanCommand, BatchGetItemCommand, BatchWriteItemCommand,
  TransactWriteItemsCommand, TransactGetItemsCommand,
} from "@aws-sdk/client-dynamodb";

const endpoint = process.argv[2];
const ddb = new DynamoDBClient({
  endpoint, region: "us-east-1", maxAttempts: 1,
  credentials: { accessKeyId: "AKIDPEER", secretAccessKey: "peer-secret" },
});
const suffix = Math.random().toString(16).slice(2, 10);
const T = "CapJs" + suffix, U = "CapJsU" + suffix;
let steps = 0;
const step = (name, ok) => {
  if (!ok) { console.log(`js_capacity: FAILED at ${name}`); process.exit(1); }
  steps++;
};
const send = (cmd) => ddb.send(cmd);
// An item of exactly `size` bytes (name lengths plus value lengths), padded in v.
const item = (pk, sk, size, extra = {}) => {
  let fixed = 2 + pk.length + 2 + sk.length + 1;
  for (const [n, x] of Object.entries(extra)) fixed += n.length + x.length;
  const it = { pk: { S: pk }, sk: { S: sk }, v: { S: "x".repeat(size - fixed) } };
  for (const [n, x] of Object.entries(extra)) it[n] = { S: x };
  return it;
};
const key = (pk, sk) => ({ pk: { S: pk }, sk: { S: sk } });
const byTable = (caps) => Object.fromEntries(caps.map((c) => [c.TableName, c]));

for (const [name, gsi] of [[T, true], [U, false]]) {
  await send(new CreateTableCommand({
    TableName: name, BillingMode: "PAY_PER_REQUEST",
    KeySchema: [{ AttributeName: "pk", KeyType: "HASH" }, { AttributeName: "sk", KeyType: "RANGE" }],
    AttributeDefinitions: (gsi ? ["pk", "sk", "g"] : ["pk", "sk"]).map((a) => ({ AttributeName: a, AttributeType: "S" })),
    ...(gsi ? { GlobalSecondaryIndexes: [{ IndexName: "byG", KeySchema: [{ AttributeName: "g", KeyType: "HASH" }],
                                         Projection: { ProjectionType: "KEYS_ONLY" } }] } : {}),
  }));
}

// single items
let c = (await send(new PutItemCommand({ TableName: U, Item: item("a", "1", 1024), ReturnConsumedCapacity: "TOTAL" }))).ConsumedCapacity;
step("put 1024", c.TableName === U && c.CapacityUnits === 1);
c = (await send(new PutItemCommand({ TableName: U, Item: item("a", "2", 1025), ReturnConsumedCapacity: "TOTAL" }))).ConsumedCapacity;
step("put 1025", c.CapacityUnits === 2);
c = (await send(new PutItemCommand({ TableName: T, Item: item("a", "3", 1025, { g: "G" }), ReturnConsumedCapacity: "INDEXES" }))).ConsumedCapacity;
step("put with index", c.CapacityUnits === 3 && c.Table.CapacityUnits === 2 && c.GlobalSecondaryIndexes.byG.CapacityUnits === 1);
c = (await send(new UpdateItemCommand({ TableName: T, Key: key("a", "3"), UpdateExpression: "SET g = :g",
  ExpressionAttributeValues: { ":g": { S: "H" } }, ReturnConsumedCapacity: "INDEXES" }))).ConsumedCapacity;
step("index key moved", c.CapacityUnits === 4 && c.GlobalSecondaryIndexes.byG.CapacityUnits === 2);
await send(new PutItemCommand({ TableName: U, Item: item("r", "s4096", 4096) }));
await send(new PutItemCommand({ TableName: U, Item: item("r", "s4097", 4097) }));
c = (await send(new GetItemCommand({ TableName: U, Key: key("r", "s4096"), ReturnConsumedCapacity: "TOTAL" }))).ConsumedCapacity;
step("get eventually", c.CapacityUnits === 0.5);
c = (await send(new GetItemCommand({ TableName: U, Key: key("r", "s4097"), ConsistentRead: true, ReturnConsumedCapacity: "TOTAL" }))).ConsumedCapacity;
step("get strongly", c.CapacityUnits === 2);
step("none", (await send(new GetItemCommand({ TableName: U, Key: key("r", "s4097"), ReturnConsumedCapacity: "NONE" }))).ConsumedCapacity === undefined);

// Query and Scan: the page's bytes summed and rounded once
for (let i = 0; i < 5; i++) await send(new PutItemCommand({ TableName: U, Item: item("q", "s" + i, 1000) }));
const qa = { TableName: U, KeyConditionExpression: "pk = :p", ExpressionAttributeValues: { ":p": { S: "q" } }, ReturnConsumedCapacity: "TOTAL" };
step("query", (await send(new QueryCommand(qa))).ConsumedCapacity.CapacityUnits === 1);
let page = await send(new QueryCommand({ ...qa, ConsistentRead: true, FilterExpression: "attribute_exists(nothing)" }));
step("query filtered", page.Count === 0 && page.ConsumedCapacity.CapacityUnits === 2);
page = await send(new QueryCommand({ ...qa, ConsistentRead: true, ProjectionExpression: "pk" }));
step("query projected", page.Items.length === 5 && page.ConsumedCapacity.CapacityUnits === 2);
page = await send(new QueryCommand({ ...qa, ExpressionAttributeValues: { ":p": { S: "nobody" } }, ConsistentRead: true }));
step("query empty", page.Count === 0 && page.ConsumedCapacity.CapacityUnits === 1);
// 1024 + 1025 + 4096 + 4097 + 5 x 1000 = 15,242 bytes: 4 units strongly, 2 eventually
step("scan", (await send(new ScanCommand({ TableName: U, ReturnConsumedCapacity: "TOTAL" }))).ConsumedCapacity.CapacityUnits === 2);
step("scan strongly", (await send(new ScanCommand({ TableName: U, ConsistentRead: true, ReturnConsumedCapacity: "TOTAL" }))).ConsumedCapacity.CapacityUnits === 4);
c = (await send(new QueryCommand({ TableName: T, IndexName: "byG", KeyConditionExpression: "g = :g",
  ExpressionAttributeValues: { ":g": { S: "H" } }, ReturnConsumedCapacity: "INDEXES" }))).ConsumedCapacity;
step("index query", c.CapacityUnits === 0.5 && c.Table.CapacityUnits === 0 && c.GlobalSecondaryIndexes.byG.CapacityUnits === 0.5);

// batches: one entry per table, each read rounded on its own
let r = await send(new BatchGetItemCommand({ RequestItems: {
  [U]: { Keys: [key("r", "s4096"), key("r", "s4097"), key("r", "none")] },
  [T]: { Keys: [key("a", "3")], ConsistentRead: true } }, ReturnConsumedCapacity: "TOTAL" }));
let caps = byTable(r.ConsumedCapacity);
step("batch get", r.ConsumedCapacity.length === 2 && caps[U].CapacityUnits === 2 && caps[T].CapacityUnits === 1);
r = await send(new BatchWriteItemCommand({ RequestItems: {
  [U]: [{ PutRequest: { Item: item("w", "1", 2048) } }, { DeleteRequest: { Key: key("zz", "1") } }],
  [T]: [{ PutRequest: { Item: item("w", "2", 1025, { g: "G" }) } }] }, ReturnConsumedCapacity: "INDEXES" }));
caps = byTable(r.ConsumedCapacity);
step("batch write", caps[U].CapacityUnits === 3 && caps[T].CapacityUnits === 3 && caps[T].GlobalSecondaryIndexes.byG.CapacityUnits === 1);

// transactions: twice, index entries too
r = await send(new TransactWriteItemsCommand({ TransactItems: [
  { Put: { TableName: T, Item: item("t", "1", 1025, { g: "G" }) } },
  { Delete: { TableName: U, Key: key("a", "1") } }], ReturnConsumedCapacity: "INDEXES" }));
caps = byTable(r.ConsumedCapacity);
step("transact write", caps[T].CapacityUnits === 6 && caps[T].WriteCapacityUnits === 6 && caps[T].Table.CapacityUnits === 4
     && caps[T].GlobalSecondaryIndexes.byG.WriteCapacityUnits === 2 && caps[U].CapacityUnits === 2);
r = await send(new TransactGetItemsCommand({ TransactItems: [
  { Get: { TableName: U, Key: key("r", "s4097") } }, { Get: { TableName: U, Key: key("r", "none") } }], ReturnConsumedCapacity: "TOTAL" }));
step("transact get", r.ConsumedCapacity.length === 1 && r.ConsumedCapacity[0].CapacityUnits === 6 && r.ConsumedCapacity[0].ReadCapacityUnits === 6);

// a failed condition: no ConsumedCapacity on the error
try {
  await send(new PutItemCommand({ TableName: U, Item: item("r", "s4096", 100), ConditionExpression: "attribute_not_exists(pk)",
    ReturnConsumedCapacity: "TOTAL" }));
  step("condition failed", false);
} catch (e) {
  step("condition failed", e.name === "ConditionalCheckFailedException" && e.ConsumedCapacity === undefined);
}
try {
  await send(new GetItemCommand({ TableName: U, Key: key("r", "s4096"), ReturnConsumedCapacity: "ALL" }));
  step("bad value", false);
} catch (e) {
  step("bad value", e.name === "ValidationException");
}

await send(new DeleteTableCommand({ TableName: T }));
await send(new DeleteTableCommand({ TableName: U }));
console.log(`js_capacity: ${steps} steps passed`);
