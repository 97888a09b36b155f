// The same scripted scenarios against resumable-stream on a real Redis
// (REDIS_URL) and against @sessionlog/client/ai-sdk on sessionlog: every
// reader gets the same chunks, in the same order, from both.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { createClient } from "redis";
import { createResumableStreamContext as redisContext } from "resumable-stream";
import { Client } from "@sessionlog/client";
import { createResumableStreamContext as ourContext } from "@sessionlog/client/ai-sdk";

const env = process.env;
let client, redis, redisSub, redisStops;

before(async () => {
  client = await Client.connect(env.SESSIONLOG_TEST_NATS_URL, { user: env.SESSIONLOG_TEST_USER, password: env.SESSIONLOG_TEST_PASSWORD });
  redis = createClient({ url: env.REDIS_URL });
  await redis.connect();
  // resumable-stream's own clients, given so that they can be closed.
  redisSub = createClient({ url: env.REDIS_URL });
  await redisSub.connect();
  redisStops = createClient({ url: env.REDIS_URL });
  await redisStops.connect();
});

after(async () => {
  await client?.close();
  await redis?.quit();
  await redisSub?.quit();
  await redisStops?.quit();
});

/** A model's output the scenario writes chunk by chunk. */
function source() {
  let controller;
  const s = {
    stream: new ReadableStream({ start(c) { controller = c; } }),
    aborted: false,
    push: (c) => controller.enqueue(c),
    end: () => { try { controller.close(); } catch { /* stopped */ } },
  };
  return s;
}

/** Collects a stream's chunks as they come; done resolves at its end. */
function collect(stream) {
  const r = { chunks: [], next: [] };
  const reader = stream.getReader();
  r.reader = reader;
  r.done = (async () => {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return r.chunks;
      r.chunks.push(value);
      r.next.splice(0).forEach((f) => f());
    }
  })();
  /** Resolves once the reader holds n chunks. */
  r.has = (n) => new Promise((resolve, reject) => {
    const check = () => (r.chunks.length >= n ? resolve() : r.next.push(check));
    r.done.catch(reject);
    check();
  });
  return r;
}

const until = async (what, fn, ms = 10000) => {
  const end = Date.now() + ms;
  for (;;) {
    if (await fn()) return;
    if (Date.now() > end) throw new Error(`still not ${what} after ${ms} ms`);
    await new Promise((r) => setTimeout(r, 10));
  }
};

/** The two implementations, each with what a scenario needs beside the
 * context: wait until what was pushed is kept, expire a finished
 * stream, and stop one (for Redis, as applications do it today: the
 * producer listens for a stop message and ends its source). */
const backends = {
  redis: (name) => {
    const prefix = `t-${name}-${Date.now()}`;
    const ctx = redisContext({ waitUntil: null, keyPrefix: prefix, publisher: redis, subscriber: redisSub });
    return {
      ctx,
      kept: async () => { await new Promise((r) => setTimeout(r, 20)); },
      expire: async (id) => { await redis.del(`${prefix}:rs:sentinel:${id}`); },
      watchStop: async (id, src) => { await redisStops.subscribe(`${prefix}:stop:${id}`, () => { src.aborted = true; src.end(); }); },
      stop: async (id) => { await redis.publish(`${prefix}:stop:${id}`, "stop"); },
    };
  },
  sessionlog: (name) => {
    const keyPrefix = `t-${name}-${Date.now()}`;
    const ctx = ourContext({ client, keyPrefix, ttlMs: name === "expired" ? 1000 : undefined });
    let seq = 0;
    const state = (id) => client.call("livestate", { stream: `${keyPrefix}:${id}` });
    return {
      ctx,
      // Each push is put at once when nothing else is on its way.
      kept: async (id) => until("put", async () => {
        const s = await state(id);
        if (s.seq > seq) { seq = s.seq; return true; }
        return false;
      }),
      expire: async (id) => until("expired", async () => (await state(id)).state === "none"),
      watchStop: async () => {},
      stop: async (id) => { await ctx.stopStream(id); },
    };
  },
};

/** A producer of stream id on b, with a source the scenario writes. */
async function produce(b, id) {
  const src = source();
  await b.watchStop(id, src);
  const made = await b.ctx.resumableStream(id, (opts) => {
    opts?.signal?.addEventListener("abort", () => { src.aborted = true; src.end(); });
    return src.stream;
  });
  assert.ok(made, "the first resumableStream makes the stream");
  const own = collect(made);
  return { src, own, push: async (c) => { src.push(c); await own.has(own.chunks.length + 1); await b.kept(id); } };
}

const scenarios = {
  // A generation streamed to the one reader that made it.
  async one(b) {
    const p = await produce(b, "s");
    for (const c of ["Hel", "lo, ", "world"]) await p.push(c);
    p.src.end();
    return { own: await p.own.done };
  },
  // A reader joining mid-way gets what was streamed so far as one chunk,
  // then each chunk.
  async midway(b) {
    const p = await produce(b, "s");
    await p.push("a");
    await p.push("b");
    const r = collect(await b.ctx.resumeExistingStream("s"));
    await r.has(1);
    await p.push("c");
    await p.push("d");
    p.src.end();
    return { own: await p.own.done, reader: await r.done };
  },
  // A reader cut off comes back, skipping what it had.
  async reconnect(b) {
    const p = await produce(b, "s");
    await p.push("ab");
    await p.push("cd");
    const r1 = collect(await b.ctx.resumeExistingStream("s"));
    await r1.has(1);
    await r1.reader.cancel();
    await p.push("ef");
    const r2 = collect(await b.ctx.resumeExistingStream("s", r1.chunks.join("").length));
    await r2.has(1);
    await p.push("gh");
    p.src.end();
    return { own: await p.own.done, first: r1.chunks, again: await r2.done };
  },
  // Two readers, joining at different points; a resumableStream call
  // while it runs joins too, and makes nothing.
  async two(b) {
    const p = await produce(b, "s");
    await p.push("1");
    const r1 = collect(await b.ctx.resumeExistingStream("s"));
    await r1.has(1);
    await p.push("2");
    await p.push("3");
    let made = 0;
    const r2 = collect(await b.ctx.resumableStream("s", () => { made++; return new ReadableStream(); }));
    await r2.has(1);
    await p.push("4");
    p.src.end();
    const [a, c] = [await r1.done, await r2.done];
    return { own: await p.own.done, r1: a, r2: c, made, state: await b.ctx.hasExistingStream("s") };
  },
  // A finished stream: done, and not resumed, until it expires; then
  // nothing, and it can be made again.
  async expired(b) {
    const p = await produce(b, "s");
    await p.push("x");
    p.src.end();
    await p.own.done;
    const done = { has: await b.ctx.hasExistingStream("s"), resume: await b.ctx.resumeExistingStream("s"), again: await b.ctx.resumableStream("s", () => new ReadableStream()) };
    await b.expire("s");
    const gone = { has: await b.ctx.hasExistingStream("s"), resume: await b.ctx.resumeExistingStream("s") };
    const again = await produce(b, "s");
    await again.push("new");
    again.src.end();
    return { done, gone, again: await again.own.done };
  },
  // A stop ends the generation for every reader, and the source.
  async stop(b) {
    const p = await produce(b, "s");
    await p.push("a");
    await p.push("b");
    const r = collect(await b.ctx.resumeExistingStream("s"));
    await r.has(1);
    await p.push("c");
    await b.stop("s");
    const chunks = await r.done;
    await until("ended", async () => (await b.ctx.hasExistingStream("s")) === "DONE");
    return { reader: chunks, sourceAborted: p.src.aborted, state: await b.ctx.hasExistingStream("s") };
  },
};

const want = {
  one: { own: ["Hel", "lo, ", "world"] },
  midway: { own: ["a", "b", "c", "d"], reader: ["ab", "c", "d"] },
  reconnect: { own: ["ab", "cd", "ef", "gh"], first: ["abcd"], again: ["ef", "gh"] },
  two: { own: ["1", "2", "3", "4"], r1: ["1", "2", "3", "4"], r2: ["123", "4"], made: 0, state: "DONE" },
  expired: { done: { has: "DONE", resume: null, again: null }, gone: { has: null, resume: undefined }, again: ["new"] },
  stop: { reader: ["ab", "c"], sourceAborted: true, state: "DONE" },
};

for (const [name, run] of Object.entries(scenarios)) {
  test(name, async () => {
    const got = {};
    for (const [backend, make] of Object.entries(backends)) got[backend] = await run(make(name));
    assert.deepStrictEqual(got.redis, want[name], "resumable-stream on Redis");
    assert.deepStrictEqual(got.sessionlog, got.redis, "sessionlog, against resumable-stream on Redis");
  });
}
