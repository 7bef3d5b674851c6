// A scripted session of the AWS SDK for JavaScript v3 adding and removing a global
// secondary index with UpdateTable against fakedb started with a fake clock and
// --delay-transient-statuses=5000: the checks a user meets, the index CREATING with
// Backfilling while the table is UPDATING, reads of it refused, writes meanwhile, ACTIVE
// with the backfilled items once the clock moves (POST /fake/clock/advance), and a
// deleted index DELETING and then gone. Usage: node js_gsi_update.mjs ENDPOINT
import {
  DynamoDBClient, CreateTableCommand, DescribeTableCommand, PutItemCommand, DeleteItemCommand,
  UpdateTableCommand, QueryCommand, ScanCommand, DeleteTableCommand,
} from "@aws-sdk/client-dynamodb";

const endpoint = process.argv[2];
const ddb = new DynamoDBClient({
  endpoint, region: "us-east-1", maxAttempts: 1,
  credentials: { accessKeyId: "AKIDPEER", secretAccessKey: "peer-secret" },
});
const TableName = "GsiJs" + Math.random().toString(16).slice(2, 10);
const DELAY_MS = 5000;
let steps = 0;
const step = (name, ok) => {
  if (!ok) { console.log(`js_gsi_update: FAILED at ${name}`); process.exit(1); }
  steps++;
};
const errorOf = async (cmd) => {
  try { await ddb.send(cmd); return null; } catch (e) { return e; }
};
const advance = async (ms) => {
  const r = await fetch(endpoint.replace(/\/$/, "") + "/fake/clock/advance", {
    method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ ms }),
  });
  if (r.status !== 200) throw new Error(`clock advance: ${r.status}`);
};
const gsi = (d, name) => (d.GlobalSecondaryIndexes || []).find((g) => g.IndexName === name);
const create = (IndexName, AttributeName) => ({
  Create: { IndexName, KeySchema: [{ AttributeName, KeyType: "HASH" }], Projection: { ProjectionType: "ALL" } },
});
const G = [{ AttributeName: "g", AttributeType: "S" }];
const query = async (v) => (await ddb.send(new QueryCommand({
  TableName, IndexName: "gidx", KeyConditionExpression: "g = :v", ExpressionAttributeValues: { ":v": { S: v } },
}))).Items.map((i) => i.pk.S).sort().join(",");

await ddb.send(new CreateTableCommand({
  TableName, AttributeDefinitions: [{ AttributeName: "pk", AttributeType: "S" }],
  KeySchema: [{ AttributeName: "pk", KeyType: "HASH" }], BillingMode: "PAY_PER_REQUEST",
}));
await advance(DELAY_MS);
for (let i = 0; i < 4; i++)
  await ddb.send(new PutItemCommand({ TableName, Item: { pk: { S: `k${i}` }, g: { S: `v${i % 2}` } } }));
await ddb.send(new PutItemCommand({ TableName, Item: { pk: { S: "kn" }, g: { N: "5" } } }));

// the checks
let e = await errorOf(new UpdateTableCommand({ TableName, GlobalSecondaryIndexUpdates: [] }));
step("empty update", e && e.name === "ValidationException");
e = await errorOf(new UpdateTableCommand({
  TableName, AttributeDefinitions: [...G, { AttributeName: "h", AttributeType: "S" }],
  GlobalSecondaryIndexUpdates: [create("gidx", "g"), create("hidx", "h")],
}));
step("two creates", e && e.name === "LimitExceededException" &&
  e.message === "Subscriber limit exceeded: Only 1 online index can be created or deleted simultaneously per table");
e = await errorOf(new UpdateTableCommand({
  TableName, AttributeDefinitions: [{ AttributeName: "pk", AttributeType: "B" }],
  GlobalSecondaryIndexUpdates: [create("pkidx", "pk")],
}));
step("type conflict", e && e.name === "ValidationException" && /SchemaElement redefined/.test(e.message));
e = await errorOf(new UpdateTableCommand({ TableName, GlobalSecondaryIndexUpdates: [{ Delete: { IndexName: "nope" } }] }));
step("delete unknown", e && e.name === "ResourceNotFoundException");

// create: CREATING and backfilling
let d = (await ddb.send(new UpdateTableCommand({
  TableName, AttributeDefinitions: G, GlobalSecondaryIndexUpdates: [create("gidx", "g")],
}))).TableDescription;
step("updating", d.TableStatus === "UPDATING" && gsi(d, "gidx").IndexStatus === "CREATING" && gsi(d, "gidx").Backfilling === true);
e = await errorOf(new QueryCommand({
  TableName, IndexName: "gidx", KeyConditionExpression: "g = :v", ExpressionAttributeValues: { ":v": { S: "v0" } },
}));
step("query refused", e && e.name === "ValidationException" &&
  e.message === "Cannot read from backfilling global secondary index: gidx");
e = await errorOf(new ScanCommand({ TableName, IndexName: "gidx" }));
step("scan refused", e && e.name === "ValidationException");
await ddb.send(new PutItemCommand({ TableName, Item: { pk: { S: "k9" }, g: { S: "v1" } } }));
await ddb.send(new DeleteItemCommand({ TableName, Key: { pk: { S: "k0" } } }));
await advance(DELAY_MS);
d = (await ddb.send(new DescribeTableCommand({ TableName }))).Table;
step("active", d.TableStatus === "ACTIVE" && gsi(d, "gidx").IndexStatus === "ACTIVE" && gsi(d, "gidx").Backfilling === undefined);
step("backfilled", (await query("v0")) === "k2" && (await query("v1")) === "k1,k3,k9");

// delete: DELETING, then gone
d = (await ddb.send(new UpdateTableCommand({ TableName, GlobalSecondaryIndexUpdates: [{ Delete: { IndexName: "gidx" } }] }))).TableDescription;
step("deleting", d.TableStatus === "UPDATING" && gsi(d, "gidx").IndexStatus === "DELETING");
await advance(DELAY_MS);
d = (await ddb.send(new DescribeTableCommand({ TableName }))).Table;
step("gone", d.TableStatus === "ACTIVE" && d.GlobalSecondaryIndexes === undefined);

await ddb.send(new DeleteTableCommand({ TableName }));
console.log(`js_gsi_update: ${steps} steps passed`);
