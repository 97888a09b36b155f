// Generates pi session files with pi's own SessionManager, calling every
// append* method it has (and branch, resetLeaf, branchWithSummary) in a
// random order drawn from a seed, then reopens each file with pi and
// writes what pi reports of it beside it (<name>.expected.json: leaf,
// branch, context with message digests, labels, name, tree), the oracle
// sessiontest.CheckPi compares a store with.
//
//   node generate.mjs <node_modules with pi> <out dir> <seed> <count> [steps]
import { createHash } from "node:crypto";
import { mkdirSync, readdirSync, renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const [modules, out, seedArg, countArg, stepsArg] = process.argv.slice(2);
const pkg = join(modules, "@earendil-works/pi-coding-agent");
const pi = await import(pathToFileURL(join(pkg, "dist/index.js")).href);
const { version } = JSON.parse((await import("node:fs")).readFileSync(join(pkg, "package.json"), "utf8"));
const { SessionManager } = pi;

let seed = Number(seedArg) >>> 0;
function rand() {
  // mulberry32
  seed = (seed + 0x6d2b79f5) >>> 0;
  let t = seed;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}
const pick = (xs) => xs[Math.floor(rand() * xs.length)];
const chance = (p) => rand() < p;

const words = ["hello", "héllo wörld", "项目", "emoji 🎉", 'quote " and \\ slash', "tab\tnew\nline", "bell\u0007", "</summary>", "ok"];
const text = () => Array.from({ length: 1 + Math.floor(rand() * 4) }, () => pick(words)).join(" ");
const png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";
const now = () => 1767225600000 + Math.floor(rand() * 1e9);
const usage = () => {
  const u = { input: Math.floor(rand() * 5000), output: Math.floor(rand() * 900), cacheRead: Math.floor(rand() * 100), cacheWrite: 0 };
  if (chance(0.3)) u.reasoning = Math.floor(rand() * 50);
  u.totalTokens = u.input + u.output + u.cacheRead;
  u.cost = { input: u.input * 3e-6, output: u.output * 1.5e-5, cacheRead: 0.0003, cacheWrite: 0, total: u.input * 3e-6 + u.output * 1.5e-5 + 0.0003 };
  if (chance(0.3)) u.cost.totalFromProvider = chance(0.5);
  return u;
};
const userContent = () => (chance(0.5) ? text() : [{ type: "text", text: text() }, ...(chance(0.3) ? [{ type: "image", data: png, mimeType: "image/png" }] : [])]);
const toolCalls = [];

const messages = {
  user: () => ({ role: "user", content: userContent(), timestamp: now() }),
  assistant: () => {
    const content = [];
    if (chance(0.4)) content.push({ type: "thinking", thinking: text(), thinkingSignature: "sig" + Math.floor(rand() * 1e6) });
    content.push({ type: "text", text: text() });
    const stop = pick(["stop", "stop", "toolUse", "length", "error", "aborted"]);
    if (stop === "toolUse") {
      const id = "toolu_" + Math.floor(rand() * 1e9);
      toolCalls.push(id);
      content.push({ type: "toolCall", id, name: pick(["bash", "read", "edit"]), arguments: { path: text(), n: 1 } });
    }
    // As pi-ai's providers build it: the envelope, then what the stream
    // learns (responseId, durationMs) after the timestamp.
    const m = { role: "assistant", content, api: "anthropic-messages", provider: pick(["anthropic", "openrouter"]), model: pick(["claude-sonnet-4-5", "deepseek/deepseek-v3"]), usage: usage(), stopReason: stop, timestamp: now() };
    if (stop === "error") m.errorMessage = text();
    if (chance(0.7)) m.responseId = "msg_" + Math.floor(rand() * 1e9);
    if (chance(0.3)) m.thinkingLevel = pick(["low", "high"]);
    if (chance(0.8)) m.durationMs = Math.floor(rand() * 20000);
    return m;
  },
  toolResult: () => {
    const m = { role: "toolResult", toolCallId: toolCalls.pop() ?? "toolu_orphan", toolName: pick(["bash", "read"]), content: [{ type: "text", text: text() }, ...(chance(0.2) ? [{ type: "image", data: png, mimeType: "image/png" }] : [])], isError: chance(0.2), timestamp: now() };
    if (chance(0.5)) m.details = { exitCode: 0, lines: [text()] };
    if (chance(0.5)) m.durationMs = Math.floor(rand() * 900);
    return m;
  },
  system: () => {
    const m = { role: "system", content: chance(0.5) ? "You are pi. " + text() : [{ type: "text", text: "Be brief. " + text() }], timestamp: now() };
    if (chance(0.5)) m.sections = { rules: "<rules>" + text() + "</rules>", ...(chance(0.3) ? { old: null } : {}) };
    if (chance(0.4)) m.toolsAdded = [{ name: "grep", description: text(), parameters: { type: "object", properties: { q: { type: "string" } } } }];
    if (chance(0.2)) m.toolsRemoved = [{ name: "edit" }];
    return m;
  },
  bashExecution: () => ({ role: "bashExecution", command: "ls -la", output: text(), exitCode: pick([0, 1, null]), cancelled: chance(0.1), truncated: false, timestamp: now(), ...(chance(0.3) ? { excludeFromContext: true } : {}) }),
  custom: () => ({ role: "custom", customType: "ext-note", content: userContent(), display: chance(0.5), timestamp: now(), ...(chance(0.5) ? { details: { k: text() } } : {}) }),
};

function editable(sm) {
  return sm.getBranch().filter((e) => e.type === "custom_message" || (e.type === "message" && ["user", "assistant", "toolResult"].includes(e.message.role)));
}

const ops = [
  [8, (sm) => sm.appendMessage(messages[pick(["user", "user", "assistant", "assistant", "toolResult", "system", "bashExecution", "custom"])]())],
  [1, (sm) => sm.appendThinkingLevelChange(pick(["off", "minimal", "low", "medium", "high", "xhigh"]))],
  [1, (sm) => sm.appendModelChange(pick(["anthropic", "openai"]), pick(["claude-opus-4", "gpt-5"]))],
  [1, (sm) => sm.appendUsage(pick(["cache_warm", "title"]), "anthropic", "claude-haiku", usage(), chance(0.5) ? text() : undefined)],
  [1, (sm) => {
    const branch = sm.getBranch();
    const kept = branch.length && chance(0.8) ? pick(branch).id : null;
    sm.appendCompaction(text(), kept, Math.floor(rand() * 90000), chance(0.4) ? { files: [text()] } : undefined, chance(0.3) ? true : undefined, chance(0.5) ? usage() : undefined);
  }],
  [1, (sm) => sm.appendCustomEntry(pick(["ext-state", "todo"]), chance(0.7) ? { n: Math.floor(rand() * 9), s: text() } : undefined)],
  [1, (sm) => sm.appendSessionInfo(chance(0.8) ? text() : "")],
  [1, (sm) => sm.appendCustomMessageEntry("ext-msg", userContent(), chance(0.5), chance(0.5) ? { d: 1 } : undefined)],
  [2, (sm) => {
    const targets = editable(sm);
    if (!targets.length) return;
    const r = rand();
    const replacement = r < 0.3 ? null : r < 0.65 ? { content: text() + " (edited)" } : { content: [{ type: "text", text: text() + " (edited)" }] };
    sm.appendContextEdit(pick(targets).id, replacement);
  }],
  [1, (sm) => {
    const es = sm.getEntries();
    if (es.length) sm.appendLabelChange(pick(es).id, chance(0.75) ? pick(["checkpoint", "bug", "$HOME", "ünïcode"]) : undefined);
  }],
  [1, (sm) => {
    const es = sm.getEntries();
    if (es.length) sm.branch(pick(es).id);
  }],
  [0.2, (sm) => sm.resetLeaf()],
  [0.7, (sm) => {
    const es = sm.getEntries();
    sm.branchWithSummary(es.length && chance(0.9) ? pick(es).id : null, chance(0.9) ? text() : "", chance(0.4) ? { why: text() } : undefined, chance(0.3) ? true : undefined, chance(0.4) ? usage() : undefined);
  }],
];
const total = ops.reduce((s, [w]) => s + w, 0);
function step(sm) {
  let r = rand() * total;
  for (const [w, op] of ops) {
    if ((r -= w) < 0) return op(sm);
  }
}

// canonical JSON: JSON.stringify's escaping, keys sorted by UTF-16 code
// units, no whitespace, undefined members dropped.
function canonical(v) {
  if (v === null || typeof v !== "object") return JSON.stringify(v);
  if (Array.isArray(v)) return "[" + v.map((x) => (x === undefined ? "null" : canonical(x))).join(",") + "]";
  const keys = Object.keys(v).filter((k) => v[k] !== undefined).sort();
  return "{" + keys.map((k) => JSON.stringify(k) + ":" + canonical(v[k])).join(",") + "}";
}
const digest = (v) => createHash("sha256").update(canonical(v)).digest("hex");

function expected(file) {
  const sm = SessionManager.open(file, join(out, ".sessions"), "/w");
  const header = sm.getHeader();
  const ctx = sm.buildSessionContext();
  const nodes = [];
  const roots = sm.getTree();
  const stack = [...roots];
  while (stack.length) {
    const n = stack.pop();
    nodes.push({ id: n.entry.id, children: n.children.map((c) => c.entry.id) });
    stack.push(...n.children);
  }
  return {
    format: "pi-session-oracle/1",
    pi: version,
    header,
    entryCount: sm.getEntryCount(),
    leaf: sm.getLeafId(),
    branch: sm.getBranch().map((e) => e.id),
    context: {
      thinkingLevel: ctx.thinkingLevel,
      model: ctx.model,
      messageCount: ctx.messages.length,
      messages: ctx.messages.map((m) => ({
        role: m.role,
        digest: digest(m),
        contentDigest: digest(m.role === "compactionSummary" || m.role === "branchSummary" ? m.summary : (m.content ?? "")),
      })),
    },
    labels: [...sm.labelsById.entries()].filter(([id]) => sm.getEntry(id)).map(([id, label]) => ({ id, label, timestamp: sm.labelTimestampsById.get(id) })),
    name: sm.getSessionName() ?? null,
    tree: { roots: roots.map((r) => r.entry.id), nodes },
  };
}

mkdirSync(out, { recursive: true });
const count = Number(countArg);
const steps = Number(stepsArg ?? 40);
for (let i = 0; i < count; i++) {
  const dir = join(out, ".gen-" + i);
  const sm = SessionManager.create("/w", dir);
  sm.appendMessage(messages.user()); // pi writes a file once it holds a conversation
  for (let k = 0; k < steps; k++) step(sm);
  const [f] = readdirSync(dir);
  const name = `pi${version}-seed${seedArg}-${i}`;
  renameSync(join(dir, f), join(out, name + ".jsonl"));
  writeFileSync(join(out, name + ".expected.json"), JSON.stringify(expected(join(out, name + ".jsonl")), null, 1) + "\n");
}
