// The client against a real node: SESSIONLOG_TEST_URL (and _USER,
// _PASSWORD), as `go test ./clients` sets them.
import { test, before } from "node:test";
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import * as sl from "../src/index.js";

const url = process.env.SESSIONLOG_TEST_URL;
const creds = process.env.SESSIONLOG_TEST_USER ? { user: process.env.SESSIONLOG_TEST_USER, password: process.env.SESSIONLOG_TEST_PASSWORD } : {};
const connect = () => new sl.Client(url, creds);
const sid = () => "ts-" + randomBytes(6).toString("hex");
const user = (content, id) => ({ type: "message", ...(id ? { id } : {}), message: { role: "user", content, timestamp: Date.now() } });
const assistant = (text) => ({ type: "message", message: { role: "assistant", content: [{ type: "text", text }], api: "anthropic-messages", provider: "anthropic", model: "claude-x",
  usage: { input: 1, output: 2, cacheRead: 0, cacheWrite: 0, totalTokens: 3, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } }, stopReason: "stop", timestamp: Date.now() } });

before(() => { if (!url) throw new Error("SESSIONLOG_TEST_URL is not set: run these tests through go test ./clients"); });

test("every operation", async () => {
  const c = connect(), id = sid();
  assert.equal((await c.create({ id, cwd: "/work", name: "ts session" })).session.id, id);
  const a = await c.append(id, [user("hello"), assistant("hi there")]);
  assert.equal(a.entries.length, 2);
  const first = a.entries[0].id;
  const one = await c.get(id, first);
  assert.equal(one.entry.id, first);
  assert.equal(one.entry.message.content, "hello");
  const ctx = await c.context(id);
  assert.deepEqual(ctx.messages.map((m) => m.role), ["user", "assistant"]);
  assert.deepEqual(ctx.model, { provider: "anthropic", modelId: "claude-x" });
  await c.label(id, first, "start");
  await c.name(id, "renamed");
  const opened = await c.open(id);
  assert.equal(opened.session.name, "renamed");
  assert.equal(opened.labels[0].label, "start");
  assert.ok((await c.tree(id)).nodes.length > 0);
  assert.equal((await c.entries(id)).entries.length, 5);
  assert.equal((await c.stats(id)).messages, 2);
  await c.move(id, first, { summary: "went back" });
  assert.deepEqual((await c.context(id)).messages.map((m) => m.role), ["user", "branchSummary"]);
  assert.equal((await c.fork(id, { id: id + "-fork", at: first })).session.id, id + "-fork");
  const ids = [];
  for await (const s of c.sessions(1)) ids.push(s.id);
  assert.ok(ids.includes(id) && ids.includes(id + "-fork"));
  assert.ok((await c.wait(id, opened.sequence)).leaf);
  await c.delete(id + "-fork");
  await assert.rejects(c.open(id + "-fork"), sl.NotFoundError);
});

test("typed errors", async () => {
  const c = connect(), id = sid();
  await assert.rejects(c.open("not a valid id"), sl.InvalidSessionIDError);
  await c.create({ id });
  await assert.rejects(c.create({ id }), sl.ExistsError);
  await assert.rejects(c.append(id, [{ type: "message", message: { role: "robot", content: "x", timestamp: 1 } }]),
    (e) => e instanceof sl.InvalidEntryError && e.field.includes("role"));
  await assert.rejects(c.getBlob("0".repeat(64)), sl.BlobNotFoundError);
});

test("a conflict carries where the session is; update loses nothing under 4 writers", async () => {
  const c = connect(), id = sid();
  await c.create({ id });
  const a = await c.append(id, [user("one")]);
  await c.append(id, [user("two")]);
  await assert.rejects(c.append(id, [user("stale")], { ifSequence: a.sequence }),
    (e) => e instanceof sl.ConflictError && e.sequence > a.sequence && Boolean(e.leaf));
  await Promise.all([0, 1, 2, 3].map(async (n) => {
    const w = connect();
    for (let k = 0; k < 10; k++) await w.update(id, () => [user(`w${n} k${k}`)]);
  }));
  const texts = (await c.entries(id, { limit: 100 })).entries.map((e) => e.message.content).filter((t) => t.startsWith("w"));
  assert.equal(new Set(texts).size, 40);
});

test("a retried append with client ids is stored once", async () => {
  const c = connect(), id = sid();
  await c.create({ id });
  const batch = [user("once", sl.newId())];
  await c.append(id, batch, { parent: "" });
  await c.append(id, batch, { parent: "" });
  assert.equal((await c.entries(id)).entries.length, 1);
});

test("blobs", async () => {
  const c = connect();
  const data = randomBytes(300000);
  const { blob } = await c.putBlob(data);
  assert.equal(blob.size, data.length);
  assert.deepEqual(Buffer.from(await c.getBlob(blob.$blob)), data);
});

test("events follow a session and resume", async () => {
  const c = connect(), id = sid();
  await c.create({ id });
  await c.append(id, [user("before")]);
  const seen = [];
  for await (const ev of c.events(id, { after: 0 })) {
    if (ev.kind !== "entry") continue;
    seen.push(ev);
    if (seen.length === 1) await connect().append(id, [user("after")]);
    if (seen.length === 2) break;
  }
  assert.deepEqual(seen.map((e) => e.data.message.content), ["before", "after"]);
  for await (const ev of c.events(id, { after: seen[0].id })) {
    assert.equal(ev.data.message.content, "after");
    break;
  }
});

test("content larger than a request, over HTTP", async () => {
  const c = connect(), id = sid();
  await c.create({ id });
  const data = randomBytes(3 << 20).toString("base64");
  await c.append(id, [{ type: "message", message: { role: "user", timestamp: 1, content: [{ type: "image", data, mimeType: "image/png" }] } }]);
  assert.equal((await c.context(id)).messages[0].content[0].data, data);
});

test("PiSession refuses a pi whose SessionManager cannot be given a history (pi 0.73)", async () => {
  // pi 0.73's inMemory(cwd) ignores entries: it starts a session of its own.
  const pi073 = { SessionManager: { inMemory: () => ({ getEntries: () => [], getSessionId: () => "fresh-session" }) } };
  const c = connect(), id = sid();
  await c.create({ id });
  await c.append(id, [user("hello")]);
  await assert.rejects(sl.PiSession.open(c, id, { pi: pi073 }), /cannot be given a session's history/);
});

test("search and listing filters", async () => {
  const c = connect(), id = sid();
  await c.create({ id, cwd: "/work/ts-search", metadata: { team: "ts" } });
  const a = await c.append(id, [user("a naïve quixotic plan"), assistant("noted")]);
  await c.label(id, a.entries[0].id, "found");
  let r;
  for (let i = 0; i < 200; i++) { // the index follows the stream: within moments
    r = await c.search("quixotic", { session: id });
    if (r.total) break;
    await new Promise((ok) => setTimeout(ok, 50));
  }
  assert.equal(r.hits[0].entry, a.entries[0].id);
  const [s, e] = r.hits[0].matches[0];
  assert.equal(new TextDecoder().decode(new TextEncoder().encode(r.hits[0].snippet).subarray(s, e)), "quixotic"); // bytes, past "ï"
  await assert.rejects(c.search("  "), sl.BadRequestError);
  // Within a session: its current branch, unless the scope says otherwise.
  const first = a.entries[0].id;
  const left = (await c.append(id, [user("a quixotic branch left behind")])).entries[0].id;
  await c.move(id, first);
  for (let i = 0; i < 200 && (await c.search("quixotic", { session: id, scope: "session" })).total !== 2; i++) {
    await new Promise((ok) => setTimeout(ok, 50));
  }
  assert.deepEqual((await c.search("quixotic", { session: id })).hits.map((h) => h.entry), [first]);
  assert.deepEqual((await c.search("quixotic", { session: id, scope: "subtree", at: first })).hits.map((h) => h.entry).sort(), [first, left].sort());
  await assert.rejects(c.search("quixotic", { session: id, scope: "subtree" }), sl.BadRequestError);
  assert.equal((await c.search("quixotic", { session: id, scope: "session", role: "user" })).total, 2);
  assert.equal((await c.search("quixotic", { session: id, scope: "session", role: "assistant" })).total, 0);
  assert.equal((await c.search("quixot~", { session: id, scope: "session", since: "2000-01-01T00:00:00Z" })).total, 2);
  await assert.rejects(c.search("quixotic", { since: "yesterday" }), sl.BadRequestError);
  // Usage across sessions: this session's one reply, by model, in its
  // project; the total alone with by [].
  let u;
  for (let i = 0; i < 200; i++) {
    u = await c.usage({ by: ["model", "project"], project: "/work/ts-search" });
    if (u.sessions) break;
    await new Promise((ok) => setTimeout(ok, 50));
  }
  assert.deepEqual(u.rows.map((r) => [r.model, r.project, r.turns, r.tokens]), [["anthropic/claude-x", "/work/ts-search", 1, 3]]);
  assert.equal(u.total.tokensPerTurn, 3);
  const total = await c.usage({ by: [], session: id });
  assert.deepEqual([total.by, total.rows.length, total.total.turns], [[], 1, 1]);
  await assert.rejects(c.usage({ by: ["week"] }), (e) => e instanceof sl.BadRequestError && e.field === "/by");
  // The listing's record follows the label within a second or so.
  let listed = [];
  for (let i = 0; i < 100 && listed.length === 0; i++) {
    listed = [];
    for await (const x of c.sessions(1, { labels: ["found"], meta: { team: "ts" } })) listed.push(x);
    if (!listed.length) await new Promise((ok) => setTimeout(ok, 50));
  }
  assert.deepEqual(listed.map((x) => x.id), [id]);
  assert.deepEqual(listed[0].metadata, { team: "ts" });
});

test("credentials in the URL are used, and never sent in it", async () => {
  if (!creds.user) return; // the gateway asks for none
  const seen = [];
  const spy = (input, init) => {
    seen.push(String(input));
    return fetch(input, init);
  };
  const withCreds = url.replace("://", `://${encodeURIComponent(creds.user)}:${encodeURIComponent(creds.password)}@`);
  const c = new sl.Client(withCreds, { fetch: spy });
  const id = sid();
  await c.create({ id });
  assert.equal((await c.open(id)).session.id, id);
  assert.ok(seen.length > 0 && seen.every((u) => !u.includes("@")), seen.join(" "));
  await assert.rejects(new sl.Client(url.replace("://", "://nobody:wrong@")).open(id), (e) => e.code === "unauthorized" || e.status === 401);
});

test("replica reads: their own append seen, bad freshness refused naming the member", async () => {
  const c = connect(), id = sid();
  await c.create({ id });
  const a = await c.append(id, [user("fresh")]);
  const opened = await c.open(id, { consistency: "replica", maxLagMs: 5000 });
  assert.equal(opened.session.leaf, a.leaf);
  assert.deepEqual((await c.context(id, { consistency: "replica" })).messages.map((m) => m.content), ["fresh"]);
  assert.equal((await c.get(id, a.leaf, { consistency: "replica" })).entry.id, a.leaf);
  assert.equal((await c.entries(id, { consistency: "linearizable" })).entries.length, 1);
  await assert.rejects(c.tree(id, { consistency: "eventual" }), (e) => e instanceof sl.BadRequestError && e.field === "/consistency");
  await assert.rejects(c.stats(id, { consistency: "replica", maxLagMs: 60001 }), (e) => e instanceof sl.BadRequestError && e.field === "/maxLagMs");
});

test("a refused connection is UnavailableError over HTTP and over NATS alike", async () => {
  // A port nothing listens on: bound, then closed.
  const net = await import("node:net");
  const port = await new Promise((resolve) => { const s = net.createServer().listen(0, "127.0.0.1", () => { const p = s.address().port; s.close(() => resolve(p)); }); });
  const c = new sl.Client(`http://127.0.0.1:${port}`, { retries: 0 });
  await assert.rejects(c.list(), (e) => e instanceof sl.UnavailableError && /cannot connect/.test(e.message));
  let nats = true;
  try { await import("@nats-io/transport-node"); } catch { nats = false; }
  if (nats) {
    await assert.rejects(sl.Client.connect(`nats://127.0.0.1:${port}`, { reconnect: false }), (e) => e instanceof sl.UnavailableError);
  }
});
