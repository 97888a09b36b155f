// The OpenAI Agents SDK's own MemorySession and SessionlogSession, given
// the same operations, give the same reads and the same failures; a second
// process reads the same. Run by go test ./clients from an application
// that installed @openai/agents-core and @sessionlog/client as users do.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { MemorySession } from "@openai/agents-core";
import { Client } from "@sessionlog/client";
import { SessionlogSession } from "@sessionlog/client/openai-agents";

const url = process.env.SESSIONLOG_TEST_URL;
const creds = process.env.SESSIONLOG_TEST_USER ? { user: process.env.SESSIONLOG_TEST_USER, password: process.env.SESSIONLOG_TEST_PASSWORD } : {};
const skip = !url ? "SESSIONLOG_TEST_URL is not set" : false;

const user = (text) => ({ role: "user", content: text });
const userParts = (text) => ({ role: "user", content: [{ type: "input_text", text }, { type: "input_image", image: "data:image/png;base64,iVBORw0KGgo=" }] });
const assistant = (text) => ({ type: "message", role: "assistant", status: "completed", content: [{ type: "output_text", text }] });
const call = (id, args) => ({ type: "function_call", callId: id, name: "lookup", arguments: JSON.stringify(args), status: "completed" });
const result = (id, text) => ({ type: "function_call_result", callId: id, name: "lookup", status: "completed", output: { type: "text", text } });
const reasoning = (text) => ({ type: "reasoning", content: [{ type: "input_text", text }] });

// Each step runs on both sessions; what it returns or throws must be the
// same, and so must every read after it.
const steps = [
  ["addItems", [user("hello"), assistant("hi, what do you need?")]],
  ["addItems", [userParts("look at this, ünïcode 🎉"), call("c1", { q: "weather" }), result("c1", "sunny"), reasoning("thinking")]],
  ["addItems", []],
  ["popItem"],
  ["popItem"],
  ["addItems", [result("c1", "sunny again"), assistant("it is sunny")]],
  ["applyHistoryMutations", { mutations: [{ type: "replace_function_call", callId: "c1", replacement: call("c1", { q: "weather", where: "Paris" }) }] }],
  ["applyHistoryMutations", { mutations: [] }],
  ["applyHistoryTransaction", { operationId: "op-1", transaction: { type: "append_items", items: [user("and tomorrow?")] } }],
  ["applyHistoryTransaction", { operationId: "op-1", transaction: { type: "append_items", items: [user("and tomorrow?")] } }], // repeated: applied once
  ["applyHistoryTransaction", { operationId: "op-1", transaction: { type: "append_items", items: [user("something else")] } }], // reused id: fails
  ["applyHistoryTransaction", { operationId: "op-2", transaction: { type: "replace_suffix", expectedSuffix: [user("and tomorrow?")], replacement: [user("and the day after?"), assistant("rain")] } }],
  ["applyHistoryTransaction", { operationId: "op-3", transaction: { type: "replace_suffix", expectedSuffix: [user("not the suffix")], replacement: [] } }], // mismatch: fails
  ["applyHistoryTransaction", { operationId: "op-2", transaction: { type: "replace_suffix", expectedSuffix: [user("and tomorrow?")], replacement: [user("and the day after?"), assistant("rain")] } }], // repeated
  ["applyHistoryTransaction", { operationId: "", transaction: { type: "append_items", items: [] } }],
  ["applyHistoryTransaction", { operationId: "op-4", transaction: { type: "rewrite_everything", items: [] } }],
  ["applyHistoryTransaction", { operationId: "op-4", transaction: { type: "append_items", items: [{ role: "wizard" }] } }],
  ["applyHistoryTransaction", { operationId: "op-4", transaction: { type: "append_items", items: [], extra: 1 } }],
  ["applyHistoryTransaction", { operationId: "op-5", transaction: { type: "replace_suffix", expectedSuffix: [], replacement: [assistant("appended by an empty suffix")] } }],
  ["popItem"],
  ["clearSession"],
  ["popItem"],
  ["applyHistoryTransaction", { operationId: "op-1", transaction: { type: "append_items", items: [user("op-1 again, after the clear")] } }],
  ["addItems", [user("after the clear"), call("c2", {}), result("c2", "{}")]],
];

async function run(session, name, arg) {
  try {
    const out = arg === undefined ? await session[name]() : await session[name](arg);
    return { ok: out === undefined ? null : JSON.parse(JSON.stringify(out)) };
  } catch (e) {
    return { error: `${e.constructor.name}: ${e.message}` };
  }
}

const reads = async (s) => ({ all: await s.getItems(), last2: await s.getItems(2), none: await s.getItems(0), many: await s.getItems(100) });

test("SessionlogSession does what MemorySession does", { skip }, async () => {
  const sessionId = "agents session / " + randomBytes(4).toString("hex");
  const memory = new MemorySession({ sessionId });
  const ours = new SessionlogSession(new Client(url, creds), { sessionId });
  assert.equal(await ours.getSessionId(), sessionId);
  assert.deepEqual(await reads(ours), await reads(memory));
  let failures = 0;
  for (const [i, [name, arg]] of steps.entries()) {
    const want = await run(memory, name, arg);
    const got = await run(ours, name, arg);
    assert.deepEqual(got, want, `step ${i}: ${name}`);
    if (want.error) failures++;
    assert.deepEqual(JSON.parse(JSON.stringify(await reads(ours))), JSON.parse(JSON.stringify(await reads(memory))), `reads after step ${i}: ${name}`);
  }
  assert.ok(failures >= 6, `only ${failures} steps failed: the mismatches were not tried`);
  // What getItems gives back is what was added, byte for byte as JSON.
  assert.equal(JSON.stringify(await ours.getItems()), JSON.stringify(await memory.getItems()));
  // Another process, another SessionlogSession on the same id, reads the same.
  const child = `import { Client } from "@sessionlog/client"; import { SessionlogSession } from "@sessionlog/client/openai-agents";
    const s = new SessionlogSession(new Client(process.env.SESSIONLOG_TEST_URL, ${JSON.stringify(creds)}), { sessionId: process.argv[1] });
    console.log(JSON.stringify(await s.getItems()));`;
  const out = execFileSync(process.execPath, ["--input-type=module", "-e", child, sessionId], { encoding: "utf8" });
  assert.equal(out.trim(), JSON.stringify(await memory.getItems()));
  // The items are pi entries: the context shows the messages.
  const ctx = await ours.client.context(ours.id);
  assert.deepEqual(ctx.messages.map((m) => m.role), ["user", "user", "assistant", "toolResult"]);

  // A compaction replaces what the session returns; the items it replaced
  // stay in the tree, out of the history.
  const before = (await ours.client.entries(ours.id)).total;
  const compacted = [{ type: "compaction", encrypted_content: "opaque" }, user("after the clear")];
  await ours.replaceHistoryWithCompaction(compacted);
  assert.deepEqual(await ours.getItems(), compacted);
  const after = await ours.client.entries(ours.id);
  assert.equal(after.total, before + compacted.length);
  assert.ok(after.entries.some((e) => e.message?.openaiItem?.content === "op-1 again, after the clear"), "the replaced items are still in the tree");

  // What JSON cannot keep is refused, saying so, and nothing is stored.
  for (const bad of [{ role: "user", content: [{ type: "input_file", file: new Uint8Array([1, 2]) }] }, { role: "user", content: "x", when: new Date() }]) {
    await assert.rejects(ours.addItems([user("kept?"), bad]), /plain JSON data/);
  }
  assert.deepEqual(await ours.getItems(), compacted);
});
