// Times an ADK session service: listing a user's SESSIONS sessions and
// loading one session of EVENTS events, p50 and p99 over 20 calls each.
// Run from an application that installed @google/adk (with
// @mikro-orm/postgresql for the database service) and the client:
//   node adk_bench.mjs sessionlog NATS_URL SESSIONS EVENTS
//   node adk_bench.mjs database postgres://… SESSIONS EVENTS
//   node adk_bench.mjs memory - SESSIONS EVENTS
// prints {"list":[p50,p99],"load":[p50,p99],"create":seconds,"append":seconds}.
import { DatabaseSessionService, InMemorySessionService, createEvent, createEventActions } from "@google/adk";

const [kind, where, sessionsArg, eventsArg] = process.argv.slice(2);
const sessions = Number(sessionsArg), events = Number(eventsArg);
let svc, close = async () => {};
if (kind === "sessionlog") {
  const { Client } = await import("@sessionlog/client");
  const { SessionlogSessionService } = await import("@sessionlog/client/adk");
  const client = await Client.connect(where);
  svc = new SessionlogSessionService(client);
  close = () => client.close();
} else if (kind === "database") {
  svc = new DatabaseSessionService(where);
  await svc.init();
  close = async () => { await svc.orm?.close(true); };
} else {
  svc = new InMemorySessionService();
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
const app = "bench-" + Date.now();

// SESSIONS sessions of one user, created 16 at a time after the first
// (ADK's database service makes the app's and user's state rows on a
// first create without a lock: two at once fail on a unique key).
let t0 = Date.now();
await svc.createSession({ appName: app, userId: "u", sessionId: "s-first", state: { n: -1 } });
for (let i = 0; i < sessions - 1; i += 16) {
  await Promise.all(Array.from({ length: Math.min(16, sessions - 1 - i) }, (_, j) => svc.createSession({ appName: app, userId: "u", sessionId: `s-${i + j}`, state: { n: i + j } })));
}
const create = (Date.now() - t0) / 1000;
const lists = [];
for (let i = 0; i < 20; i++) {
  lists.push(await time(async () => {
    const r = await svc.listSessions({ appName: app, userId: "u" });
    if (r.sessions.length !== sessions) throw new Error(`listed ${r.sessions.length} of ${sessions}`);
  }));
}

// One session of EVENTS events: a conversation of user and model turns.
const session = await svc.createSession({ appName: app, userId: "u2", sessionId: "long" });
t0 = Date.now();
for (let i = 0; i < events; i++) {
  const user = i % 2 === 0;
  await svc.appendEvent({
    session,
    event: createEvent({
      invocationId: `inv-${i >> 1}`, author: user ? "user" : "helper",
      content: { role: user ? "user" : "model", parts: [{ text: `${user ? "question" : "answer"} ${i}: ` + "lorem ipsum ".repeat(20) }] },
      actions: createEventActions({ stateDelta: user ? {} : { turn: i >> 1 } }),
    }),
  });
}
const append = (Date.now() - t0) / 1000;
const loads = [];
for (let i = 0; i < 20; i++) {
  loads.push(await time(async () => {
    const s = await svc.getSession({ appName: app, userId: "u2", sessionId: "long" });
    if (s.events.length !== events) throw new Error(`loaded ${s.events.length} of ${events} events`);
  }));
}
await close();
console.log(JSON.stringify({ list: [pct(lists, 50), pct(lists, 99)], load: [pct(loads, 50), pct(loads, 99)], create, append }));
process.exit(0);
