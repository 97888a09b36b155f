// pi's own SessionManager (from npm) on sessionlog, through PiSession:
// SESSIONLOG_TEST_PI_DIR is a node_modules holding pi (go test ./clients
// installs it, with the Node pi needs, and runs this with that Node).
import { test } from "node:test";
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { existsSync } from "node:fs";
import { Client, PiSession } from "../src/index.js";

const url = process.env.SESSIONLOG_TEST_URL;
const dir = process.env.SESSIONLOG_TEST_PI_DIR;
const piEntry = dir && ["@earendil-works/pi-coding-agent", "@mariozechner/pi-coding-agent"].map((n) => join(dir, n, "dist/index.js")).find(existsSync);
const skip = !url ? "SESSIONLOG_TEST_URL is not set" : !piEntry ? "pi is not installed (SESSIONLOG_TEST_PI_DIR)" : false;
const creds = process.env.SESSIONLOG_TEST_USER ? { user: process.env.SESSIONLOG_TEST_USER, password: process.env.SESSIONLOG_TEST_PASSWORD } : {};

const usage = { input: 10, output: 5, cacheRead: 0, cacheWrite: 0, totalTokens: 15, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } };
const user = (text) => ({ role: "user", content: [{ type: "text", text }], timestamp: Date.now() });
const assistant = (text) => ({ role: "assistant", content: [{ type: "text", text }], api: "anthropic-messages", provider: "anthropic",
  model: "claude-sonnet-4-5", usage, stopReason: "stop", timestamp: Date.now() });

test("pi's SessionManager on sessionlog: context, resume, two writers", { skip }, async () => {
  const pi = await import(pathToFileURL(piEntry).href);
  const c = new Client(url, creds);
  const id = "pi-" + randomBytes(5).toString("hex");
  const a = await PiSession.open(c, id, { pi, cwd: "/work", create: true });
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
  const b = await PiSession.open(c, id, { pi, cwd: "/work" });
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
