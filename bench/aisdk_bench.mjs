// Times resumable streams: a resuming reader's time to its first chunk,
// and how many chunks a second reach a reader from the start, on
// resumable-stream over Redis or on sessionlog's generations. Run from an
// application that installed resumable-stream, redis and the client:
//   node aisdk_bench.mjs redis REDIS_URL RESUMES CHUNKS
//   node aisdk_bench.mjs sessionlog NATS_URL RESUMES CHUNKS
// prints {"ttfb":[p50,p99],"chunksPerSecond":n,"bytesPerSecond":n}.
const [kind, where, resumesArg, chunksArg] = process.argv.slice(2);
const resumes = Number(resumesArg), total = Number(chunksArg);
let ctx, close;
if (kind === "redis") {
  const { createClient } = await import("redis");
  const { createResumableStreamContext } = await import("resumable-stream");
  const publisher = createClient({ url: where }), subscriber = createClient({ url: where });
  await Promise.all([publisher.connect(), subscriber.connect()]);
  ctx = createResumableStreamContext({ waitUntil: null, publisher, subscriber, keyPrefix: "bench-" + Date.now() });
  close = async () => { await publisher.quit(); await subscriber.quit(); };
} else {
  const { Client } = await import("@sessionlog/client");
  const { createResumableStreamContext } = await import("@sessionlog/client/ai-sdk");
  const client = await Client.connect(where);
  ctx = createResumableStreamContext({ client, keyPrefix: "bench-" + Date.now() });
  close = () => client.close();
}

const pct = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
};
// A UI message stream's text delta, as the AI SDK sends it.
const chunk = (i) => `data: {"type":"text-delta","id":"t","delta":"token ${i} "}\n\n`;

function producer() {
  let controller;
  const src = new ReadableStream({ start(c) { controller = c; } });
  return { src, push: (c) => controller.enqueue(c), end: () => controller.close() };
}
const drain = async (s) => { for await (const _ of s); };

// A generation 100 chunks in; each resume is timed to its first chunk.
const p = producer();
const own = await ctx.resumableStream("ttfb", () => p.src);
const owned = drain(own);
for (let i = 0; i < 100; i++) p.push(chunk(i));
await new Promise((r) => setTimeout(r, 300));
const ttfb = [];
for (let i = 0; i < resumes; i++) {
  const t0 = process.hrtime.bigint();
  const s = await ctx.resumeExistingStream("ttfb");
  const reader = s.getReader();
  await reader.read();
  ttfb.push(Number(process.hrtime.bigint() - t0) / 1e6);
  await reader.cancel();
}
p.end();
await owned;

// Throughput: a reader from the start; the writer pushes every chunk at once.
const q = producer();
const mine = await ctx.resumableStream("throughput", () => q.src);
const mineDone = drain(mine);
const reader = await ctx.resumeExistingStream("throughput");
let text = "";
const t0 = process.hrtime.bigint();
const readAll = (async () => { for await (const c of reader) text += c; })();
let bytes = 0;
for (let i = 0; i < total; i++) {
  const c = chunk(i);
  bytes += c.length;
  q.push(c);
  if (i % 256 === 255) await new Promise((r) => setImmediate(r)); // let the writer run, as a model's stream does
}
q.end();
await readAll;
const secs = Number(process.hrtime.bigint() - t0) / 1e9;
await mineDone;
if (!text.endsWith(chunk(total - 1))) throw new Error("the reader did not get every chunk");
await close();
console.log(JSON.stringify({ ttfb: [pct(ttfb, 50), pct(ttfb, 99)], chunksPerSecond: total / secs, bytesPerSecond: bytes / secs }));
process.exit(0);
