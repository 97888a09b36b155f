// ADK's own InMemorySessionService and SessionlogSessionService, given the
// same operations, give the same reads (sessions, events, merged state)
// and the same failures; where ours differs on purpose (docs), the
// difference is checked. A second process reads the same.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { after, before, test } from "node:test";
import { InMemorySessionService, createEvent, createEventActions } from "@google/adk";
import { Client } from "@sessionlog/client";
import { SessionlogSessionService } from "@sessionlog/client/adk";

const env = process.env;
let client;

before(() => {
  // Some tests go past the service's rate limit for one client: its
  // waits are waited out.
  client = new Client(env.SESSIONLOG_TEST_URL, { user: env.SESSIONLOG_TEST_USER, password: env.SESSIONLOG_TEST_PASSWORD, retries: 1000 });
});
after(() => client?.close());

/** A value as JSON has it: what a service that stores gives back. */
const plain = (v) => JSON.parse(JSON.stringify(v ?? null));
/** A session as both services should read it, less its update time. */
const view = (s) => s === undefined ? undefined : plain({ id: s.id, appName: s.appName, userId: s.userId, state: s.state, events: s.events });
const listView = (r) => plain({ ...r, sessions: r.sessions.map((s) => ({ id: s.id, appName: s.appName, userId: s.userId, state: s.state, events: s.events })) });

let clock = 1_800_000_000_000;
const event = (author, parts, extra = {}) => createEvent({
  invocationId: "inv-1", author, content: parts ? { role: author === "user" ? "user" : "model", parts } : undefined,
  actions: createEventActions(extra.actions ?? {}), timestamp: ++clock, ...(extra.id ? { id: extra.id } : {}), ...(extra.partial ? { partial: true } : {}),
});

/** Runs op on both services and returns both results. */
async function both(services, op) {
  return Promise.all(services.map(async (s) => {
    try {
      return { ok: await op(s.svc, s) };
    } catch (e) {
      return { error: e.message };
    }
  }));
}

test("the same operations read the same on InMemorySessionService and on sessionlog", async () => {
  const app = `app-${Date.now()}`;
  const services = [{ name: "memory", svc: new InMemorySessionService() }, { name: "sessionlog", svc: new SessionlogSessionService(client) }];
  const same = async (what, op, shape = view) => {
    const [m, s] = await both(services, op);
    const a = m.error ? { error: m.error } : shape(m.ok), b = s.error ? { error: s.error } : shape(s.ok);
    assert.deepStrictEqual(b, a, `${what}: sessionlog against InMemorySessionService`);
    return [m.ok, s.ok];
  };
  const [m1, s1] = await same("create", (svc) => svc.createSession({ appName: app, userId: "u1", sessionId: "s1", state: { count: 0, "temp:scratch": 1 } }));
  const sessions = { memory: m1, sessionlog: s1 };
  const append = (what, ev) => same(what, async (svc, s) => {
    const r = await svc.appendEvent({ session: sessions[s.name], event: structuredClone(ev) });
    return { id: r.id, state: sessions[s.name].state, events: sessions[s.name].events };
  }, plain);
  await append("a user's text", event("user", [{ text: "what is the weather in Paris? <b>&amp;</b> \u202e" }]));
  await append("a model's call", event("helper", [{ text: "let me look" }, { functionCall: { id: "c1", name: "get_weather", args: { city: "Paris" } } }], {
    actions: { stateDelta: { count: 1, "user:units": "metric", "app:calls": 1, "temp:t": "gone" } },
  }));
  await append("the function's response", event("helper", [{ functionResponse: { id: "c1", name: "get_weather", response: { result: "sunny" } } }]));
  await append("a thought and an answer", event("helper", [{ text: "it is sunny", thought: true }, { text: "Sunny in Paris." }], { actions: { stateDelta: { count: 2 } } }));
  await append("a state-only event", event("helper", undefined, { actions: { stateDelta: { "user:visits": 3, nested: { a: [1, { b: null }] } } } }));
  await append("a partial event (not kept)", event("helper", [{ text: "Sun" }], { partial: true }));
  await append("an event appended again (replaced in place)", event("user", [{ text: "replaced" }], { id: (await services[0].svc.getSession({ appName: app, userId: "u1", sessionId: "s1" })).events[0].id }));
  const [s1Read] = await same("get", (svc) => svc.getSession({ appName: app, userId: "u1", sessionId: "s1" }));
  await same("get, the last two", (svc) => svc.getSession({ appName: app, userId: "u1", sessionId: "s1", config: { numRecentEvents: 2 } }));
  await same("get, after a time", (svc) => svc.getSession({ appName: app, userId: "u1", sessionId: "s1", config: { afterTimestamp: clock - 2 } }));
  // Another session of the same user and app sees their state.
  await same("create another", (svc) => svc.createSession({ appName: app, userId: "u1", sessionId: "s2" }));
  await same("another user's", (svc) => svc.createSession({ appName: app, userId: "u2", sessionId: "s3", state: { mine: true } }));
  await same("get another", (svc) => svc.getSession({ appName: app, userId: "u1", sessionId: "s2" }));
  await same("get another user's", (svc) => svc.getSession({ appName: app, userId: "u2", sessionId: "s3" }));
  await same("get: no such session", (svc) => svc.getSession({ appName: app, userId: "u1", sessionId: "nope" }));
  await same("get: another user's id", (svc) => svc.getSession({ appName: app, userId: "u2", sessionId: "s1" }));
  const sorted = (r) => { const v = listView(r); v.sessions.sort((a, b) => a.id.localeCompare(b.id)); return v; };
  await same("list the app", (svc) => svc.listSessions({ appName: app }), sorted);
  await same("list a user's", (svc) => svc.listSessions({ appName: app, userId: "u1" }), sorted);
  await same("list: no such app", (svc) => svc.listSessions({ appName: `${app}-none` }), listView);
  await same("list: no such app, paged", (svc) => svc.listSessions({ appName: `${app}-none`, limit: 5, page: 2 }), listView);
  await same("list, newest first, paged", (svc) => svc.listSessions({ appName: app, limit: 2, page: 1, order: "desc" }), (r) => ({ ...listView(r), sessions: r.sessions.length }));
  await same("list, oldest first, by offset", (svc) => svc.listSessions({ appName: app, limit: 2, offset: 1, order: "asc" }), (r) => ({ ...listView(r), sessions: r.sessions.length }));
  await same("delete", (svc) => svc.deleteSession({ appName: app, userId: "u1", sessionId: "s2" }), plain);
  await same("delete again", (svc) => svc.deleteSession({ appName: app, userId: "u1", sessionId: "s2" }), plain);
  await same("get the deleted", (svc) => svc.getSession({ appName: app, userId: "u1", sessionId: "s2" }));
  await same("list after the delete", (svc) => svc.listSessions({ appName: app, userId: "u1" }), sorted);

  // Where ours differs on purpose: a session of an id that exists is not
  // replaced, and an event for a deleted session is not dropped silently.
  const [m, s] = await both(services, (svc) => svc.createSession({ appName: app, userId: "u1", sessionId: "s1" }));
  assert.ok(m.ok, "InMemorySessionService replaces it");
  assert.match(s.error, /Session with id s1 already exists/);
  const gone = await services[1].svc.createSession({ appName: app, userId: "u1", sessionId: "gone" });
  await services[1].svc.deleteSession({ appName: app, userId: "u1", sessionId: "gone" });
  await assert.rejects(services[1].svc.appendEvent({ session: gone, event: event("user", [{ text: "hi" }]) }), /Session gone not found for appendEvent/);

  // A second process reads the same.
  const other = execFileSync(process.execPath, ["-e", `
    import("@sessionlog/client").then(async ({ Client }) => {
      const { SessionlogSessionService } = await import("@sessionlog/client/adk");
      const c = new Client(process.env.SESSIONLOG_TEST_URL, { user: process.env.SESSIONLOG_TEST_USER, password: process.env.SESSIONLOG_TEST_PASSWORD });
      const s = await new SessionlogSessionService(c).getSession({ appName: ${JSON.stringify(app)}, userId: "u1", sessionId: "s1" });
      console.log(JSON.stringify({ id: s.id, appName: s.appName, userId: s.userId, state: s.state, events: s.events }));
      c.close();
    });`], { env: process.env, encoding: "utf8" });
  assert.deepStrictEqual(JSON.parse(other), view(s1Read), "another process's read");
});

test("a stale Session object's event is stored after those it missed, and the object brought up to date", async () => {
  const svc = new SessionlogSessionService(client);
  const app = `stale-${Date.now()}`;
  const a = await svc.createSession({ appName: app, userId: "u", sessionId: "s", state: { n: 0 } });
  const b = await svc.getSession({ appName: app, userId: "u", sessionId: "s" });
  await svc.appendEvent({ session: a, event: event("user", [{ text: "from A" }], { actions: { stateDelta: { n: 1, a: true } } }) });
  await svc.appendEvent({ session: b, event: event("user", [{ text: "from B" }], { actions: { stateDelta: { n: 2 } } }) });
  assert.deepStrictEqual(b.events.map((e) => e.content.parts[0].text), ["from A", "from B"]);
  assert.deepStrictEqual(plain(b.state), { n: 2, a: true });
  const read = await svc.getSession({ appName: app, userId: "u", sessionId: "s" });
  assert.deepStrictEqual(read.events.map((e) => e.content.parts[0].text), ["from A", "from B"]);
  assert.deepStrictEqual(plain(read.state), { n: 2, a: true });
  // Two appends at once, from two objects: both kept.
  const c = await svc.getSession({ appName: app, userId: "u", sessionId: "s" });
  const d = await svc.getSession({ appName: app, userId: "u", sessionId: "s" });
  await Promise.all([
    svc.appendEvent({ session: c, event: event("user", [{ text: "C" }]) }),
    svc.appendEvent({ session: d, event: event("user", [{ text: "D" }]) }),
  ]);
  const final = await svc.getSession({ appName: app, userId: "u", sessionId: "s" });
  assert.deepStrictEqual(final.events.map((e) => e.content.parts[0].text).slice(2).sort(), ["C", "D"]);
});

test("events are pi messages where they map one to one", async () => {
  const svc = new SessionlogSessionService(client);
  const app = `pi-${Date.now()}`;
  const s = await svc.createSession({ appName: app, userId: "u", sessionId: "s" });
  await svc.appendEvent({ session: s, event: event("user", [{ text: "weather?" }]) });
  await svc.appendEvent({ session: s, event: event("helper", [{ functionCall: { id: "c1", name: "get_weather", args: { city: "Paris" } } }]) });
  await svc.appendEvent({ session: s, event: event("helper", [{ functionResponse: { id: "c1", name: "get_weather", response: { result: "sunny" } } }]) });
  await svc.appendEvent({ session: s, event: event("helper", [{ text: "Sunny." }]) });
  const { adkSessionId } = await import("@sessionlog/client/adk");
  const ctx = await client.context(adkSessionId(app, "u", "s"));
  assert.deepStrictEqual(ctx.messages.map((m) => m.role), ["user", "assistant", "toolResult", "assistant"]);
  assert.equal(ctx.messages[1].content[0].type, "toolCall");
});

test("a user's directory lists the same across its snapshots, creates and deletes", async () => {
  const ours = new SessionlogSessionService(client);
  const memory = new InMemorySessionService();
  const app = `dir-${Date.now()}`;
  const ids = (r) => r.sessions.map((s) => s.id).sort();
  const create = async (n, from) => {
    for (let i = from; i < from + n; i += 8) {
      await Promise.all(Array.from({ length: Math.min(8, from + n - i) }, async (_, j) => {
        const req = { appName: app, userId: "u", sessionId: `s-${i + j}` };
        await ours.createSession(req);
        await memory.createSession(req);
      }));
    }
  };
  await ours.createSession({ appName: app, userId: "u", sessionId: "first" });
  await memory.createSession({ appName: app, userId: "u", sessionId: "first" });
  await create(600, 0);
  const first = await ours.listSessions({ appName: app, userId: "u" }); // writes a snapshot
  assert.deepStrictEqual(ids(first), ids(await memory.listSessions({ appName: app, userId: "u" })));
  assert.equal(first.sessions.at(-1).id, "first", "the oldest last");
  for (const i of [3, 300, 599]) {
    await ours.deleteSession({ appName: app, userId: "u", sessionId: `s-${i}` });
    await memory.deleteSession({ appName: app, userId: "u", sessionId: `s-${i}` });
  }
  await create(10, 5000);
  const again = await new SessionlogSessionService(client).listSessions({ appName: app, userId: "u", limit: 100, page: 2 });
  const want = await memory.listSessions({ appName: app, userId: "u" });
  assert.equal(again.totalItems, want.totalItems);
  assert.equal(again.sessions.length, 100);
  assert.deepStrictEqual(ids(await ours.listSessions({ appName: app, userId: "u" })), ids(want));
  const dir = (await client.list({ meta: { adk: "directory", adk_app: app } })).sessions[0];
  const entries = await client.entries(dir.id, { limit: 1000, offset: 500 });
  assert.ok(entries.entries.some((e) => e.customType === "adk_dir_snapshot"), "a snapshot was written");
});

test("entries another client wrote in another shape are passed over", async () => {
  const svc = new SessionlogSessionService(client);
  const app = `damaged-${Date.now()}`;
  const s = await svc.createSession({ appName: app, userId: "u", sessionId: "s" });
  await svc.appendEvent({ session: s, event: event("user", [{ text: "kept" }]) });
  const { adkSessionId } = await import("@sessionlog/client/adk");
  await client.append(adkSessionId(app, "u", "s"), [
    { type: "custom", customType: "adk_event", data: "not an event" },
    { type: "custom", customType: "adk_event", data: [1, 2] },
    { type: "message", message: { role: "user", content: "x", timestamp: 1, adkEvent: 5 } },
    { type: "message", message: { role: "toolResult", toolCallId: "c", toolName: "t", content: [{ type: "text", text: "{not json" }], isError: false, timestamp: 1, adkParts: true, adkEvent: { id: "e1", content: { role: "user" } } } },
    { type: "custom", customType: "adk_state", data: "not a delta" },
  ]);
  await svc.appendEvent({ session: await svc.getSession({ appName: app, userId: "u", sessionId: "s" }), event: event("user", [{ text: "after" }]) });
  const read = await svc.getSession({ appName: app, userId: "u", sessionId: "s" });
  assert.deepStrictEqual(read.events.map((e) => e.content.parts[0].text), ["kept", "after"]);
});
