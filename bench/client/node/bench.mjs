// bench.mjs: the loop of bench_client.c with @aws-sdk/client-dynamodb: GetItem and a
// conditional UpdateItem, with 1 and N requests in flight on one client (Node runs them
// on one thread), reporting requests/s and CPU (process.cpuUsage) per request.
import { DynamoDBClient, GetItemCommand, UpdateItemCommand, PutItemCommand } from "@aws-sdk/client-dynamodb";
import { NodeHttpHandler } from "@smithy/node-http-handler";
import http from "node:http";

const args = Object.fromEntries(process.argv.slice(2).reduce((acc, v, i, a) => {
  if (i % 2 === 0) acc.push([v.replace(/^--/, ""), a[i + 1]]);
  return acc;
}, []));
const endpoint = args.endpoint;
const seconds = Number(args.seconds ?? 3);
const concurrency = Number(args.threads ?? 8);
if (!endpoint) {
  console.error("usage: node bench.mjs --endpoint URL [--seconds S] [--threads N]");
  process.exit(2);
}

const client = new DynamoDBClient({
  endpoint, region: "us-east-1",
  credentials: { accessKeyId: "AKIDBENCH", secretAccessKey: "bench-secret" },
  requestHandler: new NodeHttpHandler({ httpAgent: new http.Agent({ keepAlive: true, maxSockets: 64 }) }),
});

function command(update, id, n) {
  const Key = { pk: { S: `bench-${id}` } };
  if (!update) return new GetItemCommand({ TableName: "Bench", Key });
  return new UpdateItemCommand({
    TableName: "Bench", Key,
    UpdateExpression: "SET #o = :owner, n = :n",
    ConditionExpression: "attribute_exists(pk) AND #o = :owner",
    ExpressionAttributeNames: { "#o": "owner" },
    ExpressionAttributeValues: { ":owner": { S: "bench" }, ":n": { N: String(n) } },
  });
}

async function measure(op, update, inFlight) {
  let stop = false, total = 0, failures = 0;
  const c0 = process.cpuUsage(), t0 = process.hrtime.bigint();
  const loops = [];
  for (let id = 0; id < inFlight; id++) {
    loops.push((async () => {
      let n = 0;
      while (!stop) {
        try { await client.send(command(update, id, n)); } catch (e) { failures++; }
        n++; total++;
      }
    })());
  }
  await new Promise((r) => setTimeout(r, seconds * 1000));
  stop = true;
  await Promise.all(loops);
  const wall = Number(process.hrtime.bigint() - t0) / 1e9;
  const cu = process.cpuUsage(c0);
  const cpu = (cu.user + cu.system) / 1e6;
  console.log(`client=js op=${op} threads=${inFlight} requests=${total} seconds=${wall.toFixed(2)} ` +
    `rps=${(total / wall).toFixed(0)} cpu_us_per_req=${(cpu / total * 1e6).toFixed(1)} ` +
    `rps_per_core=${(total / cpu).toFixed(0)} failures=${failures}`);
}

for (let id = 0; id < concurrency; id++) {
  await client.send(new PutItemCommand({ TableName: "Bench", Item: {
    pk: { S: `bench-${id}` }, owner: { S: "bench" }, n: { N: "0" },
    payload: { S: "a small item of about a hundred bytes, like a lock or a lease record" } } }));
}
// A short warm-up so the JIT has compiled the request path before measuring.
await measure("warmup", false, 1).catch(() => {});
await measure("GetItem", false, 1);
await measure("UpdateItem", true, 1);
await measure("GetItem", false, concurrency);
await measure("UpdateItem", true, concurrency);
