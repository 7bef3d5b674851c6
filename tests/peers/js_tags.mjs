// A scripted session of the AWS SDK for JavaScript v3 with the calls tools make at
// start-up: tags (CreateTable's Tags, TagResource, UntagResource, ListTagsOfResource
// paged by NextToken), point-in-time recovery, DescribeLimits and DescribeEndpoints.
// Every step asserts what DynamoDB answers. Usage: run_js.sh js_tags.mjs (ENDPOINT from
// $DYNALOCK_TEST_ENDPOINT)
import {
  DynamoDBClient, CreateTableCommand, DeleteTableCommand, DescribeTableCommand,
  TagResourceCommand, UntagResourceCommand, ListTagsOfResourceCommand,
  DescribeContinuousBackupsCommand, UpdateContinuousBackupsCommand, DescribeLimitsCommand,
  DescribeEndpointsCommand, waitUntilTableExists,
} from "@aws-sdk/client-dynamodb";

const endpoint = process.argv[2];
const ddb = new DynamoDBClient({
  endpoint, region: "us-east-1", maxAttempts: 1,
  credentials: { accessKeyId: "AKIDPEER", secretAccessKey: "peer-secret" },
});
const table = "TagsJs" + Math.random().toString(16).slice(2, 10);
let steps = 0;
const step = (name, ok) => {
  if (!ok) { console.log(`js_tags: FAILED at ${name}`); process.exit(1); }
  steps++;
};
const errorOf = async (cmd) => {
  try { await ddb.send(cmd); return null; } catch (e) { return e; }
};
const tagsOf = async (arn) => {
  const out = {};
  let token;
  do {
    const page = await ddb.send(new ListTagsOfResourceCommand({ ResourceArn: arn, NextToken: token }));
    for (const t of page.Tags) out[t.Key] = t.Value;
    token = page.NextToken;
  } while (token);
  return out;
};
const same = (a, b) => JSON.stringify(Object.entries(a).sort()) === JSON.stringify(Object.entries(b).sort());

const created = await ddb.send(new CreateTableCommand({
  TableName: table,
  AttributeDefinitions: [{ AttributeName: "pk", AttributeType: "S" }],
  KeySchema: [{ AttributeName: "pk", KeyType: "HASH" }],
  BillingMode: "PAY_PER_REQUEST",
  Tags: [{ Key: "app", Value: "dynalock" }],
}));
const arn = created.TableDescription.TableArn;
await waitUntilTableExists({ client: ddb, maxWaitTime: 30, minDelay: 1 }, { TableName: table });

step("tags from create", same(await tagsOf(arn), { app: "dynalock" }));
await ddb.send(new TagResourceCommand({ ResourceArn: arn, Tags: [{ Key: "stage", Value: "test" }, { Key: "app", Value: "lock" }] }));
step("tag", same(await tagsOf(arn), { app: "lock", stage: "test" }));
await ddb.send(new UntagResourceCommand({ ResourceArn: arn, TagKeys: ["app"] }));
step("untag", same(await tagsOf(arn), { stage: "test" }));
step("describe has no tags", (await ddb.send(new DescribeTableCommand({ TableName: table }))).Table.Tags === undefined);

let e = await errorOf(new TagResourceCommand({ ResourceArn: arn + "x", Tags: [{ Key: "a", Value: "b" }] }));
step("missing table", e && e.name === "ResourceNotFoundException");
e = await errorOf(new ListTagsOfResourceCommand({ ResourceArn: "not-an-arn" }));
step("bad arn", e && e.name === "ValidationException" &&
  e.message === "One or more parameter values were invalid: ARNs must start with 'arn:': not-an-arn");
e = await errorOf(new TagResourceCommand({ ResourceArn: arn, Tags: [{ Key: "aws:x", Value: "b" }] }));
step("reserved prefix", e && e.name === "ValidationException");
e = await errorOf(new TagResourceCommand({ ResourceArn: arn, Tags: [] }));
step("no tags", e && e.name === "ValidationException" && e.message === "Atleast one Tag needs to be provided as Input.");
e = await errorOf(new TagResourceCommand({
  ResourceArn: arn, Tags: Array.from({ length: 50 }, (_, i) => ({ Key: `k${i}`, Value: "v" })),
}));
step("fifty", e && e.name === "ValidationException" && Object.keys(await tagsOf(arn)).length === 1);

let d = (await ddb.send(new DescribeContinuousBackupsCommand({ TableName: table }))).ContinuousBackupsDescription;
step("pitr off", d.ContinuousBackupsStatus === "ENABLED" && d.PointInTimeRecoveryDescription.PointInTimeRecoveryStatus === "DISABLED");
d = (await ddb.send(new UpdateContinuousBackupsCommand({
  TableName: table, PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true },
}))).ContinuousBackupsDescription;
const pd = d.PointInTimeRecoveryDescription;
step("pitr on", pd.PointInTimeRecoveryStatus === "ENABLED" && pd.EarliestRestorableDateTime instanceof Date &&
  pd.LatestRestorableDateTime >= pd.EarliestRestorableDateTime && pd.RecoveryPeriodInDays === 35);
e = await errorOf(new DescribeContinuousBackupsCommand({ TableName: "NoSuchTable" }));
step("pitr missing table", e && e.name === "TableNotFoundException");

const limits = await ddb.send(new DescribeLimitsCommand({}));
step("limits", limits.AccountMaxReadCapacityUnits === 80000 && limits.TableMaxWriteCapacityUnits === 40000);
const eps = (await ddb.send(new DescribeEndpointsCommand({}))).Endpoints;
step("endpoints", eps.length === 1 && eps[0].CachePeriodInMinutes === 1440 && eps[0].Address === new URL(endpoint).host);

await ddb.send(new DeleteTableCommand({ TableName: table }));
e = await errorOf(new ListTagsOfResourceCommand({ ResourceArn: arn }));
step("tags gone with the table", e && e.name === "ResourceNotFoundException");
console.log(`js_tags: ${steps} steps passed`);
