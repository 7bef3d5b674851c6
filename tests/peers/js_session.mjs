// A scripted session of the AWS SDK for JavaScript v3 against a DynamoDB endpoint:
// tables, items, conditions, a transaction with a cancellation, a paginated query on a
// GSI. Every step asserts what DynamoDB answers. Usage: node js_session.mjs ENDPOINT
import {
  DynamoDBClient, CreateTableCommand, DescribeTableCommand, ListTablesCommand, PutItemCommand,
  GetItemCommand, UpdateItemCommand, TransactWriteItemsCommand, BatchGetItemCommand,
  BatchWriteItemCommand, ScanCommand, DeleteTableCommand, paginateQuery, waitUntilTableExists,
} from "@aws-sdk/client-dynamodb";

const endpoint = process.argv[2];
const ddb = new DynamoDBClient({
  endpoint, region: "us-east-1", maxAttempts: 1,
  credentials: { accessKeyId: "AKIDPEER", secretAccessKey: "peer-secret" },
});
const table = "PeersJs" + Math.random().toString(16).slice(2, 10);
let steps = 0;
const step = (name, ok) => {
  if (!ok) { console.log(`js: FAILED at ${name}`); process.exit(1); }
  steps++;
};
const errorOf = async (cmd) => {
  try { await ddb.send(cmd); return null; } catch (e) { return e; }
};
const key = (sk) => ({ pk: { S: "order" }, sk: { S: sk } });

await ddb.send(new CreateTableCommand({
  TableName: table,
  AttributeDefinitions: ["pk", "sk", "status"].map((a) => ({ AttributeName: a, AttributeType: "S" })),
  KeySchema: [{ AttributeName: "pk", KeyType: "HASH" }, { AttributeName: "sk", KeyType: "RANGE" }],
  GlobalSecondaryIndexes: [{
    IndexName: "byStatus",
    KeySchema: [{ AttributeName: "status", KeyType: "HASH" }, { AttributeName: "sk", KeyType: "RANGE" }],
    Projection: { ProjectionType: "ALL" },
  }],
  BillingMode: "PAY_PER_REQUEST",
}));
await waitUntilTableExists({ client: ddb, maxWaitTime: 30, minDelay: 1 }, { TableName: table });
const desc = (await ddb.send(new DescribeTableCommand({ TableName: table }))).Table;
step("describe", desc.TableStatus === "ACTIVE" && desc.GlobalSecondaryIndexes[0].IndexName === "byStatus");
step("list", (await ddb.send(new ListTablesCommand({}))).TableNames.includes(table));

for (let i = 0; i < 25; i++) {
  await ddb.send(new PutItemCommand({
    TableName: table,
    Item: {
      ...key(String(i).padStart(3, "0")), status: { S: i % 2 === 0 ? "placed" : "shipped" },
      total: { N: String(i * 10 + 0.5) }, tags: { SS: ["a", "b"] },
      meta: { M: { n: { N: "1" }, l: { L: [{ BOOL: true }, { NULL: true }] } } },
      blob: { B: new Uint8Array([0, 1, 2]) },
    },
  }));
}
const got = (await ddb.send(new GetItemCommand({ TableName: table, Key: key("004"), ConsistentRead: true }))).Item;
step("get", got.total.N === "40.5" && got.blob.B.length === 3 && got.meta.M.l.L[0].BOOL === true);

let e = await errorOf(new PutItemCommand({
  TableName: table, Item: key("004"), ConditionExpression: "attribute_not_exists(pk)",
  ReturnValuesOnConditionCheckFailure: "ALL_OLD",
}));
step("condition fails", e && e.name === "ConditionalCheckFailedException" && e.Item && e.Item.sk.S === "004");

const upd = (await ddb.send(new UpdateItemCommand({
  TableName: table, Key: key("004"),
  UpdateExpression: "SET #t = #t + :d ADD tags :c REMOVE #b",
  ConditionExpression: "#s = :placed",
  ExpressionAttributeNames: { "#t": "total", "#s": "status", "#b": "blob" },
  ExpressionAttributeValues: { ":d": { N: "0.25" }, ":c": { SS: ["c"] }, ":placed": { S: "placed" } },
  ReturnValues: "ALL_NEW",
}))).Attributes;
step("update", upd.total.N === "40.75" && upd.tags.SS.length === 3 && !upd.blob);

e = await errorOf(new TransactWriteItemsCommand({
  TransactItems: [
    { ConditionCheck: { TableName: table, Key: key("001"), ConditionExpression: "#s = :placed",
        ExpressionAttributeNames: { "#s": "status" }, ExpressionAttributeValues: { ":placed": { S: "placed" } } } },
    { Put: { TableName: table, Item: key("900") } },
  ],
}));
step("transaction cancelled", e && e.name === "TransactionCanceledException" &&
  JSON.stringify(e.CancellationReasons.map((r) => r.Code)) === JSON.stringify(["ConditionalCheckFailed", "None"]));
step("cancelled put not applied", !(await ddb.send(new GetItemCommand({ TableName: table, Key: key("900") }))).Item);

let items = [], pages = 0;
for await (const page of paginateQuery({ client: ddb, pageSize: 4 }, {
  TableName: table, IndexName: "byStatus", KeyConditionExpression: "#s = :p AND begins_with(sk, :z)",
  ExpressionAttributeNames: { "#s": "status" }, ExpressionAttributeValues: { ":p": { S: "placed" }, ":z": { S: "0" } },
})) { pages++; items = items.concat(page.Items); }
step("paginated GSI query", items.length === 13 && pages >= 4);

const bg = await ddb.send(new BatchGetItemCommand({ RequestItems: { [table]: { Keys: [0, 1, 2].map((i) => key(String(i).padStart(3, "0"))) } } }));
step("batch get", bg.Responses[table].length === 3);
await ddb.send(new BatchWriteItemCommand({ RequestItems: { [table]: [0, 1].map((i) => ({ DeleteRequest: { Key: key(String(i).padStart(3, "0")) } })) } }));
step("batch write + scan count", (await ddb.send(new ScanCommand({ TableName: table, Select: "COUNT" }))).Count === 23);

await ddb.send(new DeleteTableCommand({ TableName: table }));
e = await errorOf(new DescribeTableCommand({ TableName: table }));
step("deleted", e && e.name === "ResourceNotFoundException");
console.log(`js: ${steps} passed, 0 failed`);
