// Google ADK (`@google/adk` 2) sessions on sessionlog: a BaseSessionService
// whose sessions are sessionlog sessions and whose events are their
// entries.
//
// An ADK session (app, user, id) is a session "adk-" and 40 hex digits of
// the SHA-256 of the three, named in its metadata (adk_app, adk_user,
// adk_session). Events become pi messages where they map one to one —
// a user's text, a model's text, thoughts and function calls, one function
// response — so the console, search and usage read them; others are
// custom entries (adk_event). The event is kept whole beside (the
// message's adkEvent member, the custom entry's data): getSession gives
// back what was appended, as JSON. State is kept in ADK's scopes: the
// session's in its own entries (its initial state, then each event's
// delta), `app:` and `user:` keys in a session of the app's and one of the
// user's (adk_state entries, one per event that changes them), `temp:`
// never.
//
// A user's sessions are listed from a directory of the user's (a session
// of adk_dir entries: each created session, each deleted one; now and then
// a snapshot of them all), read from its end, however many sessions the
// tenant holds. A listed session's
// lastUpdateTime is when it was created, as ADK's DatabaseSessionService
// for JavaScript lists them; getSession gives its last event's.
//
// Concurrency: an append is conditional on the session being where the
// Session object last saw it. A stale object — another runner appended
// since — is brought up to date (its events and state read again) and its
// event appended after the others': nothing is lost or overwritten, as
// ADK's DatabaseSessionService for JavaScript does (the Python one refuses
// a stale session instead).

import { createHash, randomUUID } from "node:crypto";
import { isDeepStrictEqual } from "node:util";
import { BaseSessionService, State, createSession, mergeStates, trimTempDeltaState, trimTempState } from "@google/adk";
import { ConflictError } from "./errors.js";
import { branchOf, readFrom, readRange } from "./pages.js";

const EVENT = "adk_event";
const STATE = "adk_state";
const DIRECTORY = "adk_dir";
const DIRECTORY_SNAPSHOT = "adk_dir_snapshot";
// A directory is read back a page at a time from its end; past this many
// records after its newest snapshot, a new one is written.
const DIRECTORY_PAGE = 1000;
const SNAPSHOT_AFTER = 500;
const ATTEMPTS = 20;
// Where a Session object last saw its session (the stream sequence).
const SEQUENCE = Symbol("sessionlog.sequence");

const digest = (...parts) => createHash("sha256").update(parts.map(String).join("\0")).digest("hex");

/** The sessionlog session holding an ADK session. */
export function adkSessionId(appName, userId, sessionId) {
  return "adk-" + digest("session", appName, userId, sessionId).slice(0, 40);
}
const directoryId = (appName, userId) => "adk-dir-" + digest("dir", appName, userId).slice(0, 40);
const appStateId = (appName) => "adk-app-" + digest("app", appName).slice(0, 40);
const userStateId = (appName, userId) => "adk-user-" + digest("user", appName, userId).slice(0, 40);

export class SessionlogSessionService extends BaseSessionService {
  /** @param {import("./index.js").Client} client */
  constructor(client) {
    super();
    this.client = client;
    // The app's and users' states read so far: {offset, state} by session,
    // so that a read takes only the deltas since the last one.
    this.scoped = new Map();
  }

  async createSession({ appName, userId, state, sessionId }) {
    checkKey(appName, userId);
    const id = sessionId || randomUUID();
    if (typeof id !== "string") throw new TypeError("SessionlogSessionService: sessionId must be a string");
    const { app, user, session } = split(state ? trimTempState(state) : {});
    // In the directory first: a create cut short lists a session that
    // getSession does not find until the create is made again, never the
    // other way round.
    await this.#appendTo(directoryId(appName, userId), { type: "custom", customType: DIRECTORY, data: { s: id, c: Date.now() } },
      { name: `adk sessions ${appName}/${userId}`.slice(0, 1024), metadata: { adk: "directory", adk_app: appName, adk_user: userId } });
    try {
      await this.client.create({
        id: adkSessionId(appName, userId, id), name: `adk ${appName}/${userId}/${id}`.slice(0, 1024),
        metadata: { adk: "session", adk_app: appName, adk_user: userId, adk_session: id },
      });
    } catch (e) {
      if (e?.code === "exists") throw new Error(`Session with id ${id} already exists.`);
      throw e;
    }
    // The session's own initial state, even empty: its first entry, whose
    // time is the session's until an event comes.
    const { sequence } = await this.client.append(adkSessionId(appName, userId, id), [{ type: "custom", customType: STATE, data: { delta: session } }]);
    await this.#writeScoped(appName, userId, `create ${id}`, app, user);
    const [appState, userState] = await this.#scopedStates(appName, userId);
    const s = createSession({ id, appName, userId, state: mergeStates(appState, userState, session), events: [], lastUpdateTime: Date.now() });
    setSequence(s, sequence);
    return s;
  }

  async getSession({ appName, userId, sessionId, config }) {
    checkKey(appName, userId);
    const [read, [appState, userState]] = await Promise.all([this.#read(appName, userId, sessionId), this.#scopedStates(appName, userId)]);
    if (!read) return undefined;
    let events = read.events;
    if (config?.numRecentEvents) events = events.slice(-config.numRecentEvents);
    if (config?.afterTimestamp) {
      // As InMemorySessionService: the events from the first at or after it.
      let i = events.length - 1;
      while (i >= 0 && !(events[i].timestamp < config.afterTimestamp)) i--;
      if (i >= 0) events = events.slice(i + 1);
    }
    const s = createSession({ id: sessionId, appName, userId, state: mergeStates(appState, userState, read.state), events, lastUpdateTime: read.lastUpdateTime });
    setSequence(s, read.sequence);
    return s;
  }

  async listSessions({ appName, userId, limit, offset, page, order }) {
    if (typeof appName !== "string") throw new TypeError("SessionlogSessionService: appName must be a string");
    const all = [];
    if (userId !== undefined) {
      for (const [id, created] of await this.#directory(appName, userId)) all.push(createSession({ id, appName, userId, state: {}, events: [], lastUpdateTime: created }));
      all.reverse();
    } else {
      // Every user's: the sessions of the app, as the store lists them.
      for await (const s of this.client.sessions(1000, { meta: { adk: "session", adk_app: appName } })) {
        all.push(createSession({ id: s.metadata?.adk_session, appName, userId: s.metadata?.adk_user, state: {}, events: [], lastUpdateTime: Date.parse(s.created) || 0 }));
      }
    }
    // Without an order, the most recently created first.
    if (order === "asc") all.sort((a, b) => a.lastUpdateTime - b.lastUpdateTime || a.id.localeCompare(b.id));
    else if (order === "desc") all.sort((a, b) => b.lastUpdateTime - a.lastUpdateTime || a.id.localeCompare(b.id));
    const totalItems = all.length;
    if (limit === undefined) {
      return { sessions: offset ? all.slice(offset) : all, page: 1, limit: totalItems, totalItems, totalPages: totalItems === 0 ? 0 : 1 };
    }
    const from = page !== undefined ? (page - 1) * limit : (offset ?? 0);
    return {
      sessions: all.slice(from, from + limit), page: page ?? (limit === 0 ? 1 : Math.floor(from / limit) + 1), limit, totalItems,
      totalPages: limit === 0 ? 0 : Math.ceil(totalItems / limit),
    };
  }

  async deleteSession({ appName, userId, sessionId }) {
    checkKey(appName, userId);
    try {
      await this.client.delete(adkSessionId(appName, userId, sessionId));
    } catch (e) {
      if (e?.code !== "not_found") throw e;
    }
    await this.#appendTo(directoryId(appName, userId), { type: "custom", customType: DIRECTORY, data: { s: sessionId, d: 1 } });
  }

  /** The user's sessions, oldest first, with the times they were made:
   * the directory's newest snapshot (read back from its end) and the
   * records after it. A reader that folded SNAPSHOT_AFTER records or more
   * past it writes a new one, if nobody wrote to the directory meanwhile. */
  async #directory(appName, userId) {
    const id = directoryId(appName, userId);
    let head;
    try {
      head = await this.client.entries(id, { limit: 1 });
    } catch (e) {
      if (e?.code === "not_found") return new Map();
      throw e;
    }
    let records = [], snapshot;
    for (let end = head.total; end > 0 && !snapshot; ) {
      const start = Math.max(0, end - DIRECTORY_PAGE);
      const page = await readRange(this.client, id, start, end);
      const at = page.findLastIndex((e) => e.type === "custom" && e.customType === DIRECTORY_SNAPSHOT && Array.isArray(e.data?.sessions));
      if (at >= 0) snapshot = page[at];
      records = page.slice(at + 1).concat(records);
      end = start;
    }
    const live = new Map(snapshot ? snapshot.data.sessions.filter((x) => Array.isArray(x) && typeof x[0] === "string") : []);
    for (const e of records) {
      if (e.type !== "custom" || e.customType !== DIRECTORY || typeof e.data?.s !== "string") continue;
      if (e.data.d) live.delete(e.data.s);
      else if (!live.has(e.data.s)) live.set(e.data.s, e.data.c);
    }
    if (records.length >= SNAPSHOT_AFTER) {
      await this.client.append(id, [{ type: "custom", customType: DIRECTORY_SNAPSHOT, data: { sessions: [...live] } }], { ifSequence: head.sequence })
        .catch((e) => { if (!(e instanceof ConflictError)) throw e; });
    }
    return live;
  }

  /** Appends entry to session id, making the session (named by meta)
   * when there is none; an entry whose id is there already counts as
   * appended. */
  async #appendTo(id, entry, meta) {
    for (let attempt = 0; ; attempt++) {
      try {
        await this.client.append(id, [entry]);
        return;
      } catch (e) {
        if (e?.code === "duplicate_id") return;
        if (e?.code !== "not_found" || attempt > 0) throw e;
        if (!meta) return; // nothing to record in a directory never made
        try {
          await this.client.create({ id, name: meta.name, metadata: meta.metadata });
        } catch (c) {
          if (c?.code !== "exists") throw c;
        }
      }
    }
  }

  async appendEvent({ session, event }) {
    if (event.partial) return event;
    event = trimTempDeltaState(event);
    const id = adkSessionId(session.appName, session.userId, session.id);
    const entry = toEntry(event);
    let sequence = session[SEQUENCE];
    for (let attempt = 0; ; attempt++) {
      if (sequence === undefined) {
        const read = await this.#read(session.appName, session.userId, session.id);
        if (!read) throw new Error(`Session ${session.id} not found for appendEvent`);
        // A stale Session object sees what it missed before its event.
        const [appState, userState] = await this.#scopedStates(session.appName, session.userId);
        session.events = read.events;
        session.state = mergeStates(appState, userState, read.state);
        sequence = read.sequence;
      }
      try {
        sequence = (await this.client.append(id, [entry], { ifSequence: sequence })).sequence;
        break;
      } catch (e) {
        if (e?.code === "not_found") throw new Error(`Session ${session.id} not found for appendEvent`);
        if (!(e instanceof ConflictError) || attempt >= ATTEMPTS) throw e;
        sequence = undefined;
      }
    }
    const { app, user } = split(event.actions?.stateDelta ?? {});
    await this.#writeScoped(session.appName, session.userId, `${session.id}\0${event.id}`, app, user);
    await super.appendEvent({ session, event });
    session.lastUpdateTime = event.timestamp;
    setSequence(session, sequence);
    return event;
  }

  /** The session's events (the branch from its root to its leaf, an
   * event appended again in its first place), its own state, the
   * sequence read and the time of its last event; undefined if none. */
  async #read(appName, userId, sessionId) {
    const read = await readFrom(this.client, adkSessionId(appName, userId, sessionId));
    if (!read) return undefined;
    const { branch } = branchOf(read.entries);
    const events = [];
    const at = new Map();
    const state = {};
    let lastUpdateTime = Date.parse(read.entries[0]?.timestamp) || 0;
    for (const e of branch) {
      if (e.type === "custom" && e.customType === STATE) Object.assign(state, e.data?.delta);
      const ev = eventOf(e);
      if (!ev) continue;
      const { session } = split(ev.actions?.stateDelta ?? {});
      Object.assign(state, session);
      if (at.has(ev.id)) events[at.get(ev.id)] = ev;
      else {
        at.set(ev.id, events.length);
        events.push(ev);
      }
      if (typeof ev.timestamp === "number") lastUpdateTime = ev.timestamp;
    }
    return { events, state, sequence: read.sequence, lastUpdateTime };
  }

  /** The app's and the user's states, each read from where the last
   * read of this service left it. */
  async #scopedStates(appName, userId) {
    return Promise.all([this.#scoped(appStateId(appName)), this.#scoped(userStateId(appName, userId))]);
  }

  async #scoped(id) {
    const known = this.scoped.get(id) ?? { offset: 0, state: {} };
    const read = await readFrom(this.client, id, known.offset);
    if (!read) return { ...known.state };
    const state = { ...known.state };
    for (const e of read.entries) if (e.type === "custom" && e.customType === STATE) Object.assign(state, e.data?.delta);
    this.scoped.set(id, { offset: known.offset + read.entries.length, state });
    return { ...state };
  }

  /** Writes an event's app and user deltas to their sessions; the entry's
   * id is the event's, so that an append sent again writes them once. */
  async #writeScoped(appName, userId, key, app, user) {
    const write = async (id, delta, meta) => {
      if (Object.keys(delta).length) await this.#appendTo(id, { type: "custom", id: digest(id, key).slice(0, 16), customType: STATE, data: { delta } }, meta);
    };
    await write(appStateId(appName), app, { name: `adk app state ${appName}`.slice(0, 1024), metadata: { adk: "app_state", adk_app: appName } });
    await write(userStateId(appName, userId), user, { name: `adk user state ${appName}/${userId}`.slice(0, 1024), metadata: { adk: "user_state", adk_app: appName, adk_user: userId } });
  }
}

function checkKey(appName, userId) {
  if (typeof appName !== "string" || typeof userId !== "string") throw new TypeError("SessionlogSessionService: appName and userId must be strings");
}

function setSequence(session, sequence) {
  Object.defineProperty(session, SEQUENCE, { value: sequence, writable: true, configurable: true, enumerable: false });
}

/** A state (or delta) by scope, the app's and the user's keys without
 * their prefix; temp: keys dropped. */
function split(state) {
  const app = {}, user = {}, session = {};
  for (const [k, v] of Object.entries(state)) {
    if (k.startsWith(State.APP_PREFIX)) app[k.slice(State.APP_PREFIX.length)] = v;
    else if (k.startsWith(State.USER_PREFIX)) user[k.slice(State.USER_PREFIX.length)] = v;
    else if (!k.startsWith(State.TEMP_PREFIX)) session[k] = v;
  }
  return { app, user, session };
}

// What an event kept beside its pi message leaves out, said by members of
// the message (never of the event, whose members are anyone's):
// adkParts — its content's parts, which the message gives back exactly;
// adkDefaults — the members every event has (createEvent's), when empty.
const EMPTY_ACTIONS = ["stateDelta", "artifactDelta", "requestedAuthConfigs", "requestedToolConfirmations"];

/** ev without its empty default members, if putting them back gives ev
 * again (else undefined). */
function withoutDefaults(ev) {
  const out = { ...ev };
  if (ev.actions && typeof ev.actions === "object") {
    out.actions = { ...ev.actions };
    for (const k of EMPTY_ACTIONS) if (isDeepStrictEqual(out.actions[k], {})) delete out.actions[k];
  }
  if (Array.isArray(ev.longRunningToolIds) && ev.longRunningToolIds.length === 0) delete out.longRunningToolIds;
  return isDeepStrictEqual(withDefaults(JSON.parse(JSON.stringify(out))), ev) ? out : undefined;
}

/** An event as it was before withoutDefaults. */
function withDefaults(ev) {
  if (ev.actions && typeof ev.actions === "object") for (const k of EMPTY_ACTIONS) if (!(k in ev.actions)) ev.actions[k] = {};
  if (!("longRunningToolIds" in ev)) ev.longRunningToolIds = [];
  return ev;
}

/** The event an entry holds, if any. */
function eventOf(e) {
  // Entries of these types that another client wrote in another shape
  // are passed over: the session still reads.
  if (e.type === "message" && isEvent(e.message?.adkEvent)) {
    const ev = e.message.adkEvent;
    if (e.message.adkDefaults === true) withDefaults(ev);
    if (e.message.adkParts === true && ev.content && typeof ev.content === "object") {
      try {
        ev.content.parts = partsOf(e.message);
      } catch {
        return undefined;
      }
    }
    return ev;
  }
  if (e.type === "custom" && e.customType === EVENT && isEvent(e.data)) return e.data;
  return undefined;
}

const isEvent = (v) => v !== null && typeof v === "object" && !Array.isArray(v) && typeof v.id === "string";

/** The ADK parts a pi message made from an event's content stands for. */
function partsOf(m) {
  if (m.role === "toolResult") {
    return [{ functionResponse: { id: m.toolCallId, name: m.toolName, response: JSON.parse(m.content[0].text) } }];
  }
  return m.content.map((b) => {
    switch (b.type) {
      case "text": return { text: b.text };
      case "thinking": return { text: b.thinking, thought: true };
      case "image": return { inlineData: { mimeType: b.mimeType, data: b.data } };
      case "toolCall": return { functionCall: { id: b.id, name: b.name, args: b.arguments } };
    }
    return b;
  });
}

const nonEmpty = (s) => typeof s === "string" && s !== "";

/** The entry of an event: a pi message where it maps one to one, a
 * custom entry otherwise; the event kept whole either way. */
function toEntry(event) {
  let ev = JSON.parse(JSON.stringify(event));
  const message = piMessage(ev);
  if (!message) return { type: "custom", customType: EVENT, data: ev };
  // Kept once, in the message, where the message gives it back as it was.
  const lean = withoutDefaults(ev);
  if (lean) {
    ev = lean;
    message.adkDefaults = true;
  }
  if (isDeepStrictEqual(partsOf(message), ev.content.parts)) {
    ev = { ...ev, content: { ...ev.content } };
    delete ev.content.parts;
    message.adkParts = true;
  }
  return { type: "message", message: { ...message, timestamp: Number.isSafeInteger(ev.timestamp) && ev.timestamp >= 0 ? ev.timestamp : Date.now(), adkEvent: ev } };
}

function piMessage(ev) {
  const parts = ev.content?.parts;
  if (!Array.isArray(parts) || parts.length === 0) return undefined;
  if (ev.author === "user") {
    const blocks = [];
    for (const p of parts) {
      if (typeof p?.text === "string" && !p.thought) blocks.push({ type: "text", text: p.text });
      else if (typeof p?.inlineData?.data === "string" && /^image\/[\w.+-]+$/.test(p.inlineData.mimeType ?? "")) blocks.push({ type: "image", data: p.inlineData.data, mimeType: p.inlineData.mimeType });
      else return undefined;
    }
    return { role: "user", content: blocks };
  }
  if (parts.length === 1 && parts[0]?.functionResponse) {
    const r = parts[0].functionResponse;
    if (!nonEmpty(r.id) || !nonEmpty(r.name)) return undefined;
    return { role: "toolResult", toolCallId: r.id, toolName: r.name, content: [{ type: "text", text: JSON.stringify(r.response ?? null) }], isError: false };
  }
  if (ev.content?.role !== "model") return undefined;
  const blocks = [];
  for (const p of parts) {
    if (typeof p?.text === "string") blocks.push(p.thought ? { type: "thinking", thinking: p.text } : { type: "text", text: p.text });
    else if (p?.functionCall && nonEmpty(p.functionCall.id) && nonEmpty(p.functionCall.name)) {
      const args = p.functionCall.args && typeof p.functionCall.args === "object" && !Array.isArray(p.functionCall.args) ? p.functionCall.args : {};
      blocks.push({ type: "toolCall", id: p.functionCall.id, name: p.functionCall.name, arguments: args });
    } else return undefined;
  }
  return {
    role: "assistant", content: blocks, api: "adk", provider: "google", model: nonEmpty(ev.modelVersion) ? ev.modelVersion : "unknown",
    stopReason: blocks.some((b) => b.type === "toolCall") ? "toolUse" : "stop",
  };
}
