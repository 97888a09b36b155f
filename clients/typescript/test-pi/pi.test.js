// pi's own SessionManager (from npm) on sessionlog, through PiSession, in
// an application that installed pi and @sessionlog/client as users do
// (go test ./clients makes one, with the Node pi needs, and runs this
// file from its directory): PiSession finds pi there by itself.
import { test } from "node:test";
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { Client, PiSession } from "@sessionlog/client";

const url = process.env.SESSIONLOG_TEST_URL;
const skip = !url ? "SESSIONLOG_TEST_URL is not set" : false;
const creds = process.env.SESSIONLOG_TEST_USER ? { user: process.env.SESSIONLOG_TEST_USER, password: process.env.SESSIONLOG_TEST_PASSWORD } : {};

const usage = { input: 10, output: 5, cacheRead: 0, cacheWrite: 0, totalTokens: 15, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } };
const user = (text) => ({ role: "user", content: [{ type: "text", text }], timestamp: Date.now() });
const assistant = (text) => ({ role: "assistant", content: [{ type: "text", text }], api: "anthropic-messages", provider: "anthropic",
  model: "claude-sonnet-4-5", usage, stopReason: "stop", timestamp: Date.now() });

test("pi's SessionManager on sessionlog: context, resume, two writers", { skip }, async () => {
  const c = new Client(url, creds);
  const id = "pi-" + randomBytes(5).toString("hex");
  const a = await PiSession.open(c, id, { cwd: "/work", create: true });
  const sm = a.manager;
  const first = sm.appendMessage(user("hello"));
  sm.appendMessage(assistant("hi, what shall we do?"));
  sm.appendModelChange("openai", "gpt-5");
  sm.appendThinkingLevelChange("high");
  const second = sm.appendMessage(user("add retries"));
  sm.appendLabelChange(second, "checkpoint");
  sm.appendSessionInfo("pi on sessionlog");
  sm.appendCustomEntry("my-extension", { step: 1 });
  sm.appendMessage(assistant("done"));
  sm.branchWithSummary(first, "tried retries, went back");
  const kept = sm.appendMessage(user("try backoff instead"));
  sm.appendMessage(assistant("backoff added"));
  sm.appendCompaction("the work so far: backoff", kept, 1234);
  sm.appendMessage(user("and tests"));
  assert.equal(a.pending().length, sm.getEntries().length);
  await a.sync();
  assert.equal(a.pending().length, 0);

  // sessionlog's context is pi's.
  const want = sm.buildSessionContext();
  const got = await c.context(id);
  assert.deepEqual(got.messages, JSON.parse(JSON.stringify(want.messages)));
  assert.equal(got.thinkingLevel, want.thinkingLevel);
  assert.deepEqual(got.model, want.model);

  // A second process resuming the session sees the same.
  const b = await PiSession.open(c, id, { cwd: "/work" });
  assert.deepEqual(JSON.parse(JSON.stringify(b.manager.buildSessionContext())), JSON.parse(JSON.stringify(want)));
  assert.equal(b.manager.getSessionName(), "pi on sessionlog");
  assert.equal(b.manager.getLabel(second), "checkpoint");

  // Two processes append at once: the second to sync finds the first
  // there, and its entries become a branch of their own; none is lost.
  a.manager.appendMessage(user("from a"));
  a.manager.appendMessage(assistant("a's reply"));
  b.manager.appendMessage(user("from b"));
  await a.sync();
  await b.sync();
  assert.equal(b.conflicts, 1);
  const stored = [];
  for (let offset = 0; ;) {
    const page = await c.entries(id, { offset, limit: 1000 });
    stored.push(...page.entries);
    if (!page.next) break;
    offset = page.next;
  }
  const texts = stored.filter((e) => e.type === "message").map((e) => e.message.content[0]?.text);
  for (const t of ["from a", "a's reply", "from b"]) assert.equal(texts.filter((x) => x === t).length, 1, t);
  const ia = stored.findIndex((e) => e.message?.content?.[0]?.text === "from a");
  assert.equal(stored[ia + 1].message.content[0].text, "a's reply", "a's two entries are not interleaved");
  const fromB = stored.find((e) => e.message?.content?.[0]?.text === "from b");
  assert.equal(fromB.parentId, stored[ia - 1].id, "b's entry keeps pi's parent: a branch beside a's");
  // After a reload, each sees both branches.
  const reloaded = await a.reload();
  assert.equal(reloaded.getEntries().length, stored.length);
});

// pi 1.6's own entries sync and give pi's context: a system message, usage
// entries, context edits that replace and remove, a compaction carrying
// the system prompt, an entry of a type sessionlog does not know.
test("pi 1.6's entries on sessionlog: usage, context_edit, system messages", { skip }, async () => {
  const c = new Client(url, creds);
  const id = "pi16-" + randomBytes(5).toString("hex");
  const s = await PiSession.open(c, id, { cwd: "/work", create: true });
  const sm = s.manager;
  sm.appendMessage({ role: "system", content: "You are pi.", sections: { rules: "<rules>be brief</rules>" }, timestamp: Date.now() });
  const hello = sm.appendMessage(user("hello"));
  const reply = sm.appendMessage({ ...assistant("hi"), responseId: "msg_1", durationMs: 812 });
  sm.appendUsage("cache_warm", "anthropic", "claude-haiku", usage, "kept the cache warm");
  sm.appendContextEdit(hello, { content: "hello (edited)" });
  sm.appendContextEdit(reply, { content: "hi (edited)" });
  const gone = sm.appendMessage(user("never mind"));
  sm.appendContextEdit(gone, null);
  await s.sync();
  const check = async () => {
    const want = JSON.parse(JSON.stringify(sm.buildSessionContext()));
    const got = await c.context(id);
    assert.deepEqual(got.messages, want.messages);
    assert.equal(got.thinkingLevel, want.thinkingLevel);
    assert.deepEqual(got.model, want.model);
    return want;
  };
  const edited = await check();
  assert.deepEqual(edited.messages.map((m) => m.role), ["system", "user", "assistant"]);
  assert.equal(edited.messages[1].content, "hello (edited)");

  // A compaction keeps the edits after its first kept entry and carries
  // the system prompt in force; pi's later entries sync on top.
  sm.appendCompaction("we said hello", reply, 4321, undefined, undefined, usage);
  sm.appendMessage(user("after the compaction"));
  await s.sync();
  const compacted = await check();
  assert.equal(compacted.messages[0].role, "system");
  assert.equal(compacted.messages[1].role, "compactionSummary");

  // The stored entries are pi's, member for member, and a new process
  // gives pi the same.
  const stored = (await c.entries(id, { offset: 0, limit: 1000 })).entries;
  assert.deepEqual(stored, JSON.parse(JSON.stringify(sm.getEntries())));
  const again = await PiSession.open(c, id, { cwd: "/work" });
  assert.deepEqual(JSON.parse(JSON.stringify(again.manager.buildSessionContext())), compacted);
});
