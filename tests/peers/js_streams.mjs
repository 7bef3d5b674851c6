// A scripted session of the AWS SDK for JavaScript v3's DynamoDB Streams client against a
// DynamoDB endpoint: a table with a stream, writes by every path, the records read back
// with ListStreams, DescribeStream, GetShardIterator (each type) and GetRecords, the
// errors a consumer meets, and disabling and enabling the stream again. Every step
// asserts what DynamoDB answers. Usage: node js_streams.mjs ENDPOINT
import {
  DynamoDBClient, CreateTableCommand, DescribeTableCommand, PutItemCommand, UpdateItemCommand,
  DeleteItemCommand, BatchWriteItemCommand, TransactWriteItemsCommand, UpdateTableCommand,
  DeleteTableCommand,
} from "@aws-sdk/client-dynamodb";
// The streams client is a peer of its own (scripts/peers-package.json): skipped without it.
const streamsSdk = await import("@aws-sdk/client-dynamodb-streams").catch(() => null);
if (!streamsSdk) {
  console.log("js_streams: @aws-sdk/client-dynamodb-streams is not in .peers/ (scripts/peers.sh); skipped");
  process.exit(77);
}
const {
  DynamoDBStreamsClient, ListStreamsCommand, DescribeStreamCommand, GetShardIteratorCommand,
  GetRecordsCommand,
} = streamsSdk;

const endpoint = process.argv[2];
const cfg = {
  endpoint, region: "us-east-1", maxAttempts: 1,
  credentials: { accessKeyId: "AKIDPEER", secretAccessKey: "peer-secret" },
};
const ddb = new DynamoDBClient(cfg);
const streams = new DynamoDBStreamsClient(cfg);
const table = "StreamsJs" + Math.random().toString(16).slice(2, 10);
let steps = 0;
const step = (name, ok) => {
  if (!ok) { console.log(`js_streams: FAILED at ${name}`); process.exit(1); }
  steps++;
};
const errorOf = async (client, cmd) => {
  try { await client.send(cmd); return null; } catch (e) { return e; }
};
const iterator = async (StreamArn, ShardId, ShardIteratorType, SequenceNumber) =>
  (await streams.send(new GetShardIteratorCommand({ StreamArn, ShardId, ShardIteratorType, SequenceNumber }))).ShardIterator;
const readAll = async (arn, shard, type = "TRIM_HORIZON", seq = undefined, Limit = undefined) => {
  let it = await iterator(arn, shard, type, seq);
  const out = [];
  for (let i = 0; i < 20 && it; i++) {
    const page = await streams.send(new GetRecordsCommand({ ShardIterator: it, Limit }));
    out.push(...page.Records);
    it = page.NextShardIterator;
    if (page.Records.length === 0) break;
  }
  return out;
};

const created = await ddb.send(new CreateTableCommand({
  TableName: table,
  AttributeDefinitions: [{ AttributeName: "pk", AttributeType: "S" }],
  KeySchema: [{ AttributeName: "pk", KeyType: "HASH" }],
  BillingMode: "PAY_PER_REQUEST",
  StreamSpecification: { StreamEnabled: true, StreamViewType: "NEW_IMAGE" },
}));
const arn = created.TableDescription.LatestStreamArn;
step("create", arn && arn.includes(`:table/${table}/stream/`) &&
  created.TableDescription.StreamSpecification.StreamViewType === "NEW_IMAGE");

const listed = (await streams.send(new ListStreamsCommand({ TableName: table }))).Streams;
step("list", listed.length === 1 && listed[0].StreamArn === arn && listed[0].StreamLabel === arn.split("/stream/")[1]);
const sd = (await streams.send(new DescribeStreamCommand({ StreamArn: arn }))).StreamDescription;
const shard = sd.Shards[0].ShardId;
step("describe", sd.StreamStatus === "ENABLED" && sd.StreamViewType === "NEW_IMAGE" && sd.TableName === table &&
  sd.CreationRequestDateTime instanceof Date && sd.Shards[0].SequenceNumberRange.StartingSequenceNumber);

await ddb.send(new PutItemCommand({ TableName: table, Item: { pk: { S: "a" }, n: { N: "1" } } }));
await ddb.send(new UpdateItemCommand({
  TableName: table, Key: { pk: { S: "a" } }, UpdateExpression: "SET n = :n",
  ExpressionAttributeValues: { ":n": { N: "5" } },
}));
await ddb.send(new BatchWriteItemCommand({ RequestItems: { [table]: [{ PutRequest: { Item: { pk: { S: "b" } } } }] } }));
await ddb.send(new TransactWriteItemsCommand({
  TransactItems: [
    { Put: { TableName: table, Item: { pk: { S: "c" }, l: { L: [{ S: "x" }, { BOOL: true }] } } } },
    { Delete: { TableName: table, Key: { pk: { S: "b" } } } },
  ],
}));
await ddb.send(new DeleteItemCommand({ TableName: table, Key: { pk: { S: "a" } } }));
await ddb.send(new PutItemCommand({ TableName: table, Item: { pk: { S: "c" }, l: { L: [{ S: "x" }, { BOOL: true }] } } }));
const condErr = await errorOf(ddb, new PutItemCommand({
  TableName: table, Item: { pk: { S: "c" } }, ConditionExpression: "attribute_not_exists(pk)",
}));
step("condition", condErr && condErr.name === "ConditionalCheckFailedException");

const recs = await readAll(arn, shard);
step("events", recs.map((r) => `${r.eventName}:${r.dynamodb.Keys.pk.S}`).join(" ") ===
  "INSERT:a MODIFY:a INSERT:b INSERT:c REMOVE:b REMOVE:a");
step("shape", recs.every((r) => r.eventSource === "aws:dynamodb" && r.awsRegion === "us-east-1" &&
  r.dynamodb.StreamViewType === "NEW_IMAGE" && r.dynamodb.ApproximateCreationDateTime instanceof Date &&
  r.dynamodb.SizeBytes > 0 && !r.dynamodb.OldImage));
step("images", recs[1].dynamodb.NewImage.n.N === "5" && recs[3].dynamodb.NewImage.l.L[1].BOOL === true &&
  !recs[5].dynamodb.NewImage);
const seqs = recs.map((r) => r.dynamodb.SequenceNumber);
step("order", seqs.every((s, i) => i === 0 || BigInt(seqs[i - 1]) < BigInt(s)));
step("at", (await readAll(arn, shard, "AT_SEQUENCE_NUMBER", seqs[2])).map((r) => r.dynamodb.SequenceNumber).join() === seqs.slice(2).join());
step("after", (await readAll(arn, shard, "AFTER_SEQUENCE_NUMBER", seqs[2])).map((r) => r.dynamodb.SequenceNumber).join() === seqs.slice(3).join());
step("pages", (await readAll(arn, shard, "TRIM_HORIZON", undefined, 1)).length === 6);
const latest = await iterator(arn, shard, "LATEST");
step("latest", (await streams.send(new GetRecordsCommand({ ShardIterator: latest }))).Records.length === 0);

const missing = arn.split("/stream/")[0] + "/stream/2001-01-01T00:00:00.000";
const nf = await errorOf(streams, new DescribeStreamCommand({ StreamArn: missing }));
step("not found", nf && nf.name === "ResourceNotFoundException" && nf.message.includes(missing));
const badShard = await errorOf(streams, new GetShardIteratorCommand({
  StreamArn: arn, ShardId: "shardId-00000000000000000000-00000000", ShardIteratorType: "LATEST",
}));
step("bad shard", badShard && badShard.name === "ResourceNotFoundException");
const badIt = await errorOf(streams, new GetRecordsCommand({ ShardIterator: "not-an-iterator" }));
step("bad iterator", badIt && badIt.name === "ValidationException");
const twice = await errorOf(ddb, new UpdateTableCommand({
  TableName: table, StreamSpecification: { StreamEnabled: true, StreamViewType: "KEYS_ONLY" },
}));
step("enable twice", twice && twice.name === "ValidationException" && twice.message.includes("already has an enabled stream"));

await ddb.send(new UpdateTableCommand({ TableName: table, StreamSpecification: { StreamEnabled: false } }));
const off = (await streams.send(new DescribeStreamCommand({ StreamArn: arn }))).StreamDescription;
step("disabled", off.StreamStatus === "DISABLED" && off.Shards[0].SequenceNumberRange.EndingSequenceNumber);
step("readable", (await readAll(arn, shard)).length === 6);
await ddb.send(new UpdateTableCommand({
  TableName: table, StreamSpecification: { StreamEnabled: true, StreamViewType: "OLD_IMAGE" },
}));
const t2 = (await ddb.send(new DescribeTableCommand({ TableName: table }))).Table;
step("new stream", t2.LatestStreamArn !== arn && t2.StreamSpecification.StreamViewType === "OLD_IMAGE");
await ddb.send(new DeleteItemCommand({ TableName: table, Key: { pk: { S: "c" } } }));
const shard2 = (await streams.send(new DescribeStreamCommand({ StreamArn: t2.LatestStreamArn }))).StreamDescription.Shards[0].ShardId;
const recs2 = await readAll(t2.LatestStreamArn, shard2);
step("old image", recs2.length === 1 && recs2[0].eventName === "REMOVE" && recs2[0].dynamodb.OldImage.l.L[0].S === "x");

await ddb.send(new DeleteTableCommand({ TableName: table }));
console.log(`js_streams: ${steps} steps passed`);
