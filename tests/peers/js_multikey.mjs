// A scripted session of the AWS SDK for JavaScript v3 against fakedb with a global
// secondary index whose key has several HASH and RANGE attributes (DynamoDB's
// multi-attribute keys): creation, writes in and out, queries valid and refused, order,
// pages, a filter on a key attribute, updates and deletes. Usage: node js_multikey.mjs ENDPOINT
import {
  DynamoDBClient, CreateTableCommand, DescribeTableCommand, PutItemCommand, UpdateItemCommand,
  DeleteItemCommand, QueryCommand, ScanCommand, DeleteTableCommand,
} from "@aws-sdk/client-dynamodb";

const endpoint = process.argv[2];
const ddb = new DynamoDBClient({
  endpoint, region: "us-east-1", maxAttempts: 1,
  credentials: { accessKeyId: "AKIDPEER", secretAccessKey: "peer-secret" },
});
const table = "MultikeyJs" + Math.random().toString(16).slice(2, 10);
let steps = 0;
const step = (name, ok) => {
  if (!ok) { console.log(`js_multikey: FAILED at ${name}`); process.exit(1); }
  steps++;
};
const errorOf = async (cmd) => {
  try { await ddb.send(cmd); return null; } catch (e) { return e; }
};

const keySchema = [
  { AttributeName: "shop", KeyType: "HASH" }, { AttributeName: "tier", KeyType: "HASH" },
  { AttributeName: "yr", KeyType: "RANGE" }, { AttributeName: "town", KeyType: "RANGE" },
  { AttributeName: "tag", KeyType: "RANGE" },
];
const created = await errorOf(new CreateTableCommand({
  TableName: table,
  AttributeDefinitions: [
    { AttributeName: "id", AttributeType: "S" }, { AttributeName: "shop", AttributeType: "S" },
    { AttributeName: "tier", AttributeType: "N" }, { AttributeName: "yr", AttributeType: "N" },
    { AttributeName: "town", AttributeType: "S" }, { AttributeName: "tag", AttributeType: "B" },
  ],
  KeySchema: [{ AttributeName: "id", KeyType: "HASH" }],
  BillingMode: "PAY_PER_REQUEST",
  GlobalSecondaryIndexes: [{ IndexName: "byPlace", KeySchema: keySchema, Projection: { ProjectionType: "ALL" } }],
}));
if (created && created.$metadata?.httpStatusCode === undefined) {
  // refused before it was sent: this SDK would not carry the feature at all
  console.log(`js_multikey: the SDK refuses a KeySchema of 5 elements client-side (${created.message}); skipped`);
  process.exit(77);
}
step("create", created === null);
const desc = (await ddb.send(new DescribeTableCommand({ TableName: table }))).Table;
step("describe", JSON.stringify(desc.GlobalSecondaryIndexes[0].KeySchema) === JSON.stringify(keySchema));

const bin = (...bytes) => Uint8Array.from(bytes);
const items = [
  ["i1", "1", "10", "a", bin(0)], ["i2", "1", "10", "a", bin(0, 255)], ["i3", "1", "10", "a", bin(0, 0)],
  ["i4", "1", "10", "ab", bin(0)], ["i5", "1", "9", "z", bin(255)], ["i6", "2", "10", "a", bin(0)],
];
for (const [id, tier, yr, town, tag] of items) {
  await ddb.send(new PutItemCommand({ TableName: table, Item: {
    id: { S: id }, shop: { S: "s1" }, tier: { N: tier }, yr: { N: yr }, town: { S: town }, tag: { B: tag },
  } }));
}
await ddb.send(new PutItemCommand({ TableName: table, Item: { id: { S: "o1" }, shop: { S: "s1" }, tier: { N: "1" }, yr: { N: "10" } } }));
const wrong = await errorOf(new PutItemCommand({ TableName: table, Item: { id: { S: "w" }, tag: { S: "x" } } }));
step("wrong type", wrong && wrong.name === "ValidationException" &&
  wrong.message === "One or more parameter values were invalid: Type mismatch for Index Key tag Expected: B Actual: S IndexName: byPlace");
const count = await ddb.send(new ScanCommand({ TableName: table, IndexName: "byPlace", Select: "COUNT" }));
step("scan", count.Count === 6);

const hv = { ":s": { S: "s1" }, ":t": { N: "1" } };
const ids = async (kc, values, more = {}) => (await ddb.send(new QueryCommand({
  TableName: table, IndexName: "byPlace", KeyConditionExpression: kc, ExpressionAttributeValues: values, ...more,
}))).Items.map((it) => it.id.S).join(",");
// binary bytewise: 00 < 00 00 < 00 FF < FF, and "a" < "ab" whatever follows
step("ordered", await ids("shop = :s AND tier = :t", hv) === "i5,i1,i3,i2,i4");
step("reversed", await ids("shop = :s AND tier = :t", hv, { ScanIndexForward: false }) === "i4,i2,i3,i1,i5");
step("begins_with on binary", await ids("shop = :s AND tier = :t AND yr = :y AND town = :c AND begins_with(tag, :g)",
  { ...hv, ":y": { N: "10" }, ":c": { S: "a" }, ":g": { B: bin(0) } }) === "i1,i3,i2");
step("range below", await ids("shop = :s AND tier = :t AND yr < :y", { ...hv, ":y": { N: "10" } }) === "i5");
for (const [kc, values, want] of [
  ["tier = :t", { ":t": { N: "1" } }, "Query condition missed key schema element: shop"],
  ["shop = :s AND tier >= :t", hv, "must be given by equality"],
  ["shop = :s AND tier = :t AND tag = :g", { ...hv, ":g": { B: bin(0) } }, "Query condition missed key schema element: yr"],
  ["shop = :s AND tier = :t AND yr <= :y AND town = :c", { ...hv, ":y": { N: "1" }, ":c": { S: "a" } }, "has a condition other than equality"],
]) {
  const e = await errorOf(new QueryCommand({ TableName: table, IndexName: "byPlace", KeyConditionExpression: kc, ExpressionAttributeValues: values }));
  step(`refused: ${kc}`, e && e.name === "ValidationException" && e.message.includes(want));
}
const filt = await errorOf(new QueryCommand({ TableName: table, IndexName: "byPlace", KeyConditionExpression: "shop = :s AND tier = :t",
  FilterExpression: "tag = :g", ExpressionAttributeValues: { ...hv, ":g": { B: bin(0) } } }));
step("filter on a key attribute", filt && filt.message === "Filter Expression can only contain non-primary key attributes: Primary key attribute: tag");

// pages of two, restarted from each LastEvaluatedKey
let got = [], start;
for (let i = 0; i < 10; i++) {
  const page = await ddb.send(new QueryCommand({ TableName: table, IndexName: "byPlace", KeyConditionExpression: "shop = :s AND tier = :t",
    ExpressionAttributeValues: hv, Limit: 2, ExclusiveStartKey: start }));
  got.push(...page.Items.map((it) => it.id.S));
  start = page.LastEvaluatedKey;
  if (!start) break;
  step("last key", Object.keys(start).sort().join(",") === "id,shop,tag,tier,town,yr");
}
step("paged", got.join(",") === "i5,i1,i3,i2,i4");

await ddb.send(new UpdateItemCommand({ TableName: table, Key: { id: { S: "o1" } }, UpdateExpression: "SET town = :c, tag = :g",
  ExpressionAttributeValues: { ":c": { S: "a" }, ":g": { B: bin(0, 1) } } }));
step("in", await ids("shop = :s AND tier = :t", hv) === "i5,i1,i3,o1,i2,i4");
await ddb.send(new UpdateItemCommand({ TableName: table, Key: { id: { S: "i1" } }, UpdateExpression: "REMOVE yr" }));
await ddb.send(new DeleteItemCommand({ TableName: table, Key: { id: { S: "i2" } } }));
step("out", await ids("shop = :s AND tier = :t", hv) === "i5,i3,o1,i4");

await ddb.send(new DeleteTableCommand({ TableName: table }));
console.log(`js_multikey: ${steps} steps passed`);
