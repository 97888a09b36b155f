// Times a LangGraph checkpoint saver: put, getTuple (the thread's latest)
// and list (limit 10) p50 and p99 in milliseconds, one call at a time, on
// a thread that grows to `ops` checkpoints with a write each, as a graph's
// steps make them. Run from an application that installed the savers:
//   node langgraph_bench.mjs sessionlog URL OPS        (the gateway, HTTP)
//   node langgraph_bench.mjs sessionlog-nats URL OPS   (the service, NATS)
//   node langgraph_bench.mjs postgres CONNSTRING OPS
// prints {"put":[p50,p99],"getTuple":[…],"list":[…]}, and for sessionlog
// "read": the client reading the thread's last entry, linearizably — the
// least a getTuple that sees every write must do (its floor).
import { uuid6 } from "@langchain/langgraph-checkpoint";

const [kind, where, opsArg] = process.argv.slice(2);
const ops = Number(opsArg);
let saver, client, close = async () => {};
if (kind.startsWith("sessionlog")) {
  const { Client } = await import("@sessionlog/client");
  const { SessionlogSaver } = await import("@sessionlog/client/langgraph");
  client = kind === "sessionlog-nats" ? await Client.connect(where) : new Client(where);
  saver = new SessionlogSaver(client, { namespace: "bench-" + Date.now() });
  close = () => client.close();
} else {
  const { PostgresSaver } = await import("@langchain/langgraph-checkpoint-postgres");
  saver = PostgresSaver.fromConnString(where);
  await saver.setup();
  close = () => saver.end();
}

const pct = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
};
const time = async (f) => {
  const t0 = process.hrtime.bigint();
  await f();
  return Number(process.hrtime.bigint() - t0) / 1e6;
};

const thread = "bench-" + uuid6(-1);
let config = { configurable: { thread_id: thread, checkpoint_ns: "" } };
const puts = [], gets = [], lists = [], reads = [];
let total = 0;
for (let i = 0; i < ops; i++) {
  const checkpoint = {
    v: 4, id: uuid6(i), ts: new Date().toISOString(),
    channel_values: { messages: [`step ${i}: ` + "x".repeat(200)], step: i },
    channel_versions: { messages: i + 1, step: i + 1 },
    versions_seen: { node: { messages: i } },
  };
  const metadata = { source: "loop", step: i, parents: {} };
  let next;
  puts.push(await time(async () => { next = await saver.put(config, checkpoint, metadata, { messages: i + 1, step: i + 1 }); }));
  config = next;
  await saver.putWrites(config, [["messages", `write ${i}`]], `task-${i}`);
  gets.push(await time(() => saver.getTuple({ configurable: { thread_id: thread, checkpoint_ns: "" } })));
  lists.push(await time(async () => { for await (const _ of saver.list({ configurable: { thread_id: thread } }, { limit: 10 })); }));
  if (client) {
    reads.push(await time(async () => {
      const page = await client.entries(saver.sessionId(thread), { offset: Math.max(0, total - 1) || undefined, limit: 1 });
      total = page.total;
    }));
  }
}
await close();
const out = { put: [pct(puts, 50), pct(puts, 99)], getTuple: [pct(gets, 50), pct(gets, 99)], list: [pct(lists, 50), pct(lists, 99)] };
if (reads.length) out.read = [pct(reads, 50), pct(reads, 99)];
console.log(JSON.stringify(out));
