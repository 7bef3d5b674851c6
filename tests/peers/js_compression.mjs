// The AWS SDK for JavaScript v3 against fakedb with compressed bodies (issue #25 item 2),
// as boto3_compression.py does with boto3. @aws-sdk/client-dynamodb has no request
// compression of its own (it does not use @smithy/middleware-compression), so a build-step
// middleware, before signing, gzips or deflates each body with node's zlib and sets
// Content-Encoding; answers asked for with Accept-Encoding: gzip are inflated by a
// middleware below the deserializer. Garbage codings get fakedb's documented
// SerializationException. Usage: node js_compression.mjs ENDPOINT
import {
  DynamoDBClient, CreateTableCommand, PutItemCommand, GetItemCommand, QueryCommand,
  DeleteTableCommand,
} from "@aws-sdk/client-dynamodb";
import { Readable } from "node:stream";
import zlib from "node:zlib";

const endpoint = process.argv[2];
const cfg = {
  endpoint, region: "us-east-1", maxAttempts: 1,
  credentials: { accessKeyId: "AKIDPEER", secretAccessKey: "peer-secret" },
};
const table = "ZipJs" + Math.random().toString(16).slice(2, 10);
let steps = 0;
const step = (name, ok) => {
  if (!ok) { console.log(`js_compression: FAILED at ${name}`); process.exit(1); }
  steps++;
};
const header = (headers, name) => {
  for (const [k, v] of Object.entries(headers || {})) if (k.toLowerCase() === name) return v;
  return undefined;
};
const setHeader = (headers, name, value) => {
  for (const k of Object.keys(headers)) if (k.toLowerCase() === name) delete headers[k];
  headers[name] = value;
};

// A client whose request bodies are encoded by `encode` (bytes -> bytes) and sent with
// Content-Encoding `coding`, asking for gzipped answers when `acceptGzip`.
const seen = { sent: 0, gzippedAnswers: 0 };
const client = (coding, encode, acceptGzip) => {
  const c = new DynamoDBClient(cfg);
  c.middlewareStack.add((next) => async (args) => {
    const req = args.request;
    if (coding && req.body !== undefined) {
      // the serialized body: a string, or bytes (read as bytes, not through its string view)
      const raw = typeof req.body === "string" ? Buffer.from(req.body)
        : Buffer.from(req.body.buffer, req.body.byteOffset, req.body.byteLength);
      const body = encode(raw);
      req.body = body;
      setHeader(req.headers, "content-encoding", coding);
      setHeader(req.headers, "content-length", String(body.length));
      seen.sent++;
    }
    if (acceptGzip) setHeader(req.headers, "accept-encoding", "gzip");
    return next(args);
  }, { step: "build", priority: "low", name: "compressBody" });
  c.middlewareStack.add((next) => async (args) => {
    const out = await next(args);
    const res = out.response;
    if (header(res.headers, "content-encoding") === "gzip") {
      const chunks = [];
      for await (const chunk of res.body) chunks.push(chunk);
      const plain = zlib.gunzipSync(Buffer.concat(chunks));
      for (const k of Object.keys(res.headers)) {
        if (["content-encoding", "content-length"].includes(k.toLowerCase())) delete res.headers[k];
      }
      res.body = Readable.from([plain]);
      seen.gzippedAnswers++;
    }
    return out;
  }, { step: "deserialize", priority: "low", name: "gunzipAnswer" });
  return c;
};
const failure = async (c, cmd) => {
  try { await c.send(cmd); return null; } catch (e) { return e; }
};

const gz = client("gzip", (b) => zlib.gzipSync(b), true);
await gz.send(new CreateTableCommand({
  TableName: table, BillingMode: "PAY_PER_REQUEST",
  KeySchema: [{ AttributeName: "pk", KeyType: "HASH" }],
  AttributeDefinitions: [{ AttributeName: "pk", AttributeType: "S" }],
}));
const text = "gzipped \u00e9\u6f22\u{1F600} ".repeat(500);
await gz.send(new PutItemCommand({ TableName: table, Item: { pk: { S: "a" }, v: { S: text }, n: { N: "42" } } }));
let item = (await gz.send(new GetItemCommand({ TableName: table, Key: { pk: { S: "a" } }, ConsistentRead: true }))).Item;
step("gzip round trip", item.v.S === text && item.n.N === "42");
step("every request gzipped", seen.sent === 3);
step("answers gzipped when asked", seen.gzippedAnswers === 3);
const q = await gz.send(new QueryCommand({ TableName: table, KeyConditionExpression: "pk = :p",
  ExpressionAttributeValues: { ":p": { S: "a" } } }));
step("query", q.Count === 1 && q.Items[0].v.S === text);
let e = await failure(gz, new GetItemCommand({ TableName: "NopeZip", Key: { pk: { S: "a" } } }));
step("error through gzip keeps its type", e && e.name === "ResourceNotFoundException" && seen.gzippedAnswers === 5);

// deflate: the zlib format, and raw deflate as some clients send it; plain answers
const before = seen.gzippedAnswers;
for (const [name, enc] of [["zlib", (b) => zlib.deflateSync(b)], ["raw", (b) => zlib.deflateRawSync(b)]]) {
  const d = client("deflate", enc, false);
  await d.send(new PutItemCommand({ TableName: table, Item: { pk: { S: "d-" + name }, v: { S: text } } }));
  item = (await d.send(new GetItemCommand({ TableName: table, Key: { pk: { S: "d-" + name } }, ConsistentRead: true }))).Item;
  step("deflate " + name, item.v.S === text);
}
step("plain answers unless asked", seen.gzippedAnswers === before);

// garbage: the documented SerializationException, naming the reason; nothing written
const bad = async (coding, encode, why) => {
  const c = client(coding, encode, false);
  const err = await failure(c, new PutItemCommand({ TableName: table, Item: { pk: { S: "bad" } } }));
  step(`${coding} ${why}`, err && err.name === "SerializationException" && err.$metadata.httpStatusCode === 400 &&
       err.message === `The request body could not be decoded (Content-Encoding): ${why}`);
};
await bad("gzip", () => Buffer.from("this is not gzip at all"), "the compressed data is corrupt");
await bad("gzip", (b) => zlib.gzipSync(b).subarray(0, 20), "the compressed data is truncated");
await bad("gzip", (b) => Buffer.concat([zlib.gzipSync(b), Buffer.from("tail")]), "bytes follow the end of the compressed data");
await bad("deflate", () => Buffer.from([0x78, 0x9c, 0xff, 0xff, 0xff, 0xff]), "the compressed data is corrupt");
await bad("br", (b) => b, "the content coding is not supported (gzip, deflate and identity are)");
await bad("gzip, deflate", (b) => zlib.deflateSync(zlib.gzipSync(b)), "only one content coding is supported");
step("nothing written by garbage", (await gz.send(new GetItemCommand({ TableName: table, Key: { pk: { S: "bad" } } }))).Item === undefined);

await gz.send(new DeleteTableCommand({ TableName: table }));
console.log(`js_compression: ${steps} steps passed`);
