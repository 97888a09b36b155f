// A real streamText with a scripted model (the AI SDK's
// MockLanguageModelV4), through route handlers as an app writes them on
// SessionlogChats: stored, resumed from another connection, stopped; and
// chats branched, listed and deleted.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { convertToModelMessages, readUIMessageStream, streamText } from "ai";
import { MockLanguageModelV4 } from "ai/test";
import { Client } from "@sessionlog/client";
import { SessionlogChats, chatSessionId } from "@sessionlog/client/ai-sdk";

const env = process.env;
let nodeA, nodeB;

before(async () => {
  const creds = { user: env.SESSIONLOG_TEST_USER, password: env.SESSIONLOG_TEST_PASSWORD };
  // Two connections: the app's instances a browser's requests may reach.
  nodeA = await Client.connect(env.SESSIONLOG_TEST_NATS_URL, creds);
  nodeB = await Client.connect(env.SESSIONLOG_TEST_NATS_URL, creds);
});

after(async () => {
  await nodeA?.close();
  await nodeB?.close();
});

const usage = { inputTokens: { total: 3, noCache: 3 }, outputTokens: { total: 5, text: 5 } };

/** A model whose reply the test releases delta by delta. */
function scriptedModel() {
  const m = { aborted: false, released: [] };
  let controller, started;
  const ready = new Promise((r) => { started = r; });
  m.model = new MockLanguageModelV4({
    doStream: async ({ abortSignal }) => {
      abortSignal?.addEventListener("abort", () => {
        m.aborted = true;
        try { controller.error(abortSignal.reason); } catch { /* closed */ }
      });
      return {
        stream: new ReadableStream({
          start(c) {
            controller = c;
            c.enqueue({ type: "stream-start", warnings: [] });
            c.enqueue({ type: "text-start", id: "t" });
            started();
          },
        }),
      };
    },
  });
  // The model is asked once the response is read from.
  m.say = async (delta) => { await ready; m.released.push(delta); controller.enqueue({ type: "text-delta", id: "t", delta }); };
  m.finish = async () => {
    await ready;
    controller.enqueue({ type: "text-end", id: "t" });
    controller.enqueue({ type: "finish", finishReason: { unified: "stop", raw: undefined }, usage });
    controller.close();
  };
  return m;
}

/** The app's route handlers on one connection. */
function app(client, model) {
  const chats = new SessionlogChats(client);
  return {
    chats,
    async post(req) {
      const { id, message, userId } = await req.json();
      const messages = await chats.saveChat(id, [...(await chats.loadChat(id)), message], { userId });
      const abort = new AbortController();
      const result = streamText({ model, messages: await convertToModelMessages(messages), abortSignal: abort.signal });
      return chats.respond(id, result.stream, { messages, abort, userId });
    },
    resume: (id) => chats.resume(id),
    stop: (id) => chats.stop(id),
  };
}

const userMessage = (id, text) => ({ id, role: "user", parts: [{ type: "text", text }] });
const post = (a, body) => a.post(new Request("http://app/api/chat", { method: "POST", body: JSON.stringify(body) }));

/** Reads an SSE response as the browser's transport does: its text,
 * chunk by chunk, to onText after each. */
async function readBody(res, onText = () => {}) {
  let text = "";
  const decoder = new TextDecoder();
  for await (const b of res.body) {
    text += decoder.decode(b, { stream: true });
    if (onText(text) === false) break;
  }
  return text;
}

/** The assistant message an SSE text makes. */
async function messageOf(sse) {
  const chunks = sse.split("\n\n").map((e) => e.replace(/^data: /, "")).filter((d) => d && d !== "[DONE]").map((d) => JSON.parse(d));
  let last;
  const stream = new ReadableStream({ start(c) { chunks.forEach((x) => c.enqueue(x)); c.close(); } });
  for await (const m of readUIMessageStream({ stream, terminateOnError: false })) last = m;
  return JSON.parse(JSON.stringify(last));
}

const until = async (what, fn, ms = 10000) => {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > end) throw new Error(`still not ${what} after ${ms} ms`);
    await new Promise((r) => setTimeout(r, 20));
  }
};

const stored = (chats, id, n) => until(`${n} messages stored`, async () => {
  const m = await chats.loadChat(id);
  return m.length >= n && m;
});

test("a reply is streamed, stored as streamed, and the chat is no longer active", async () => {
  const m = scriptedModel();
  const a = app(nodeA, m.model);
  const id = `chat-${Date.now()}-1`;
  const res = await post(a, { id, message: userMessage("u1", "hello"), userId: "alice" });
  assert.equal(res.headers.get("x-vercel-ai-ui-message-stream"), "v1");
  const reading = readBody(res);
  await m.say("Hello");
  await m.say(", world");
  await m.finish();
  const sse = await reading;
  const messages = await stored(a.chats, id, 2);
  assert.deepEqual(messages[0], userMessage("u1", "hello"));
  assert.deepEqual(messages[1], await messageOf(sse));
  assert.equal(messages[1].parts.find((p) => p.type === "text").text, "Hello, world");
  assert.equal(await a.chats.activeStreamId(id), null);
  assert.equal((await a.resume(id)).status, 204);
  // pi's view of it: a user and an assistant message.
  const ctx = await nodeA.context(chatSessionId(id));
  assert.deepEqual(ctx.messages.map((x) => x.role), ["user", "assistant"]);
});

test("a browser cut off mid-generation resumes on another node, from the start", async () => {
  const m = scriptedModel();
  const a = app(nodeA, m.model);
  const b = app(nodeB, m.model);
  const id = `chat-${Date.now()}-2`;
  const res = await post(a, { id, message: userMessage("u1", "write a poem") });
  await m.say("Roses ");
  await readBody(res, (t) => !t.includes("Roses")); // then the connection is cut
  const resumed = await until("active", () => b.chats.activeStreamId(id));
  assert.ok(resumed);
  const again = await b.resume(id);
  assert.equal(again.status, 200);
  const reading = readBody(again);
  await m.say("are red");
  await m.finish();
  const sse = await reading;
  const replayed = await messageOf(sse);
  assert.equal(replayed.parts.find((p) => p.type === "text").text, "Roses are red");
  const messages = await stored(b.chats, id, 2);
  assert.deepEqual(messages[1], replayed);
});

test("the moment a chat names its generation active, another node can resume it", async () => {
  const m = scriptedModel();
  const b = app(nodeB, m.model);
  const id = `chat-${Date.now()}-2b`;
  // Node A's client, asking node B to resume the instant the ai_stream
  // entry is stored: before anything else node A does.
  const statuses = [];
  const append = async (sid, entries, opts) => {
    const r = await nodeA.append(sid, entries, opts);
    if (entries.some((e) => e.customType === "ai_stream")) {
      const res = await b.resume(id);
      statuses.push(res.status);
      res.body?.cancel().catch(() => {});
    }
    return r;
  };
  const spied = new Proxy(nodeA, {
    get: (c, k) => (k === "append" ? append : typeof c[k] === "function" ? c[k].bind(c) : c[k]),
  });
  const a = app(spied, m.model);
  const res = await post(a, { id, message: userMessage("u1", "now") });
  const reading = readBody(res);
  await m.say("at once");
  await m.finish();
  await reading;
  await stored(a.chats, id, 2);
  assert.deepEqual(statuses, [200]);
});

test("a stop ends the generation for every reader, the model's request included, and stores what was streamed", async () => {
  const m = scriptedModel();
  const a = app(nodeA, m.model);
  const b = app(nodeB, m.model);
  const id = `chat-${Date.now()}-3`;
  const res = await post(a, { id, message: userMessage("u1", "count") });
  const first = readBody(res);
  await m.say("one ");
  await until("active", () => b.chats.activeStreamId(id));
  const watcher = readBody(await b.resume(id));
  await m.say("two ");
  await until("two streamed", async () => (await nodeA.call("livestate", { stream: `resumable-stream:${await a.chats.activeStreamId(id)}` })).seq > 0);
  assert.equal(await b.stop(id), "stopped");
  const [sseA, sseB] = await Promise.all([first, watcher]);
  await until("the model aborted", () => m.aborted);
  const messages = await stored(a.chats, id, 2);
  const streamedB = await messageOf(sseB);
  assert.deepEqual(messages[1].parts.filter((p) => p.type === "text").map((p) => p.text), streamedB.parts.filter((p) => p.type === "text").map((p) => p.text));
  assert.ok(sseA.length > 0);
  assert.equal(await a.chats.activeStreamId(id), null);
});

test("regenerating and editing branch the chat; the messages replaced stay in the tree", async () => {
  const chats = new SessionlogChats(nodeA);
  const id = `chat-${Date.now()}-4`;
  const u1 = userMessage("u1", "hi");
  const a1 = { id: "a1", role: "assistant", parts: [{ type: "text", text: "first answer" }] };
  const a1b = { id: "a1b", role: "assistant", parts: [{ type: "text", text: "second answer" }] };
  await chats.saveChat(id, [u1, a1]);
  await chats.saveChat(id, [u1, a1]); // nothing new
  await chats.saveChat(id, [u1, a1b]); // regenerated
  assert.deepEqual(await chats.loadChat(id), [u1, a1b]);
  const u1e = userMessage("u1e", "hello, edited");
  await chats.saveChat(id, [u1e]); // the first message edited
  assert.deepEqual(await chats.loadChat(id), [u1e]);
  await chats.saveChat(id, []); // cleared
  assert.deepEqual(await chats.loadChat(id), []);
  const tree = await nodeA.entries(chatSessionId(id));
  const kept = tree.entries.filter((e) => e.type === "message").map((e) => e.message.uiMessage.id);
  assert.deepEqual(kept, ["u1", "a1", "a1b", "u1e"]);
  await assert.rejects(chats.saveChat(id, [{ role: "user" }]), /messages\[0\] is not a UIMessage/);
  await chats.deleteChat(id);
  assert.deepEqual(await chats.loadChat(id), []);
});

test("a user's chats are listed newest first, page by page, and no one else's", async () => {
  const chats = new SessionlogChats(nodeA);
  const user = `user-${Date.now()}`;
  const ids = [];
  for (let i = 0; i < 5; i++) {
    const id = `${user}-chat-${i}`;
    ids.push(id);
    await chats.saveChat(id, [userMessage("u", `question ${i} <b>&</b>`)], { userId: user });
  }
  await chats.saveChat(`${user}-other`, [userMessage("u", "not yours")], { userId: `${user}-other` });
  const seen = [];
  let cursor;
  do {
    const page = await chats.listChats({ userId: user, limit: 2, cursor });
    assert.ok(page.chats.length <= 2);
    seen.push(...page.chats);
    cursor = page.next;
  } while (cursor);
  assert.deepEqual(seen.map((c) => c.chatId), [...ids].reverse());
  assert.equal(seen[0].title, "question 4 <b>&</b>");
  assert.ok(seen.every((c) => c.userId === user));
});

test("entries another client wrote in another shape are passed over", async () => {
  const chats = new SessionlogChats(nodeA);
  const id = `chat-${Date.now()}-damaged`;
  const u1 = userMessage("u1", "kept");
  await chats.saveChat(id, [u1]);
  await nodeA.append(chatSessionId(id), [
    { type: "message", message: { role: "user", content: "x", timestamp: 1, uiMessage: 5 } },
    { type: "message", message: { role: "user", content: "y", timestamp: 1, uiMessage: { id: 7, role: "user", parts: [] } } },
    { type: "custom", customType: "ai_message", data: "not a message" },
    { type: "custom", customType: "ai_stream", data: { streamId: 42 } },
  ]);
  assert.deepEqual(await chats.loadChat(id), [u1]);
  assert.equal(await chats.activeStreamId(id), null);
  const a1 = { id: "a1", role: "assistant", parts: [{ type: "text", text: "after" }] };
  await chats.saveChat(id, [u1, a1]);
  assert.deepEqual(await chats.loadChat(id), [u1, a1]);
});
