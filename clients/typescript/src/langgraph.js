// LangGraph on sessionlog: a checkpoint saver whose threads are sessions.
//
// A thread is a session; each checkpoint is a `custom` entry
// (customType "langgraph_checkpoint") whose parent is its parent
// checkpoint's entry, so LangGraph's forks and time travel are branches of
// the session's tree. Pending writes are `custom` entries
// ("langgraph_writes") under the checkpoint they belong to. As LangGraph's
// Postgres saver does, a checkpoint stores the values of the channels that
// changed (newVersions) beside it, and a read gives each channel the value
// stored for the version the checkpoint names. Values are stored as
// LangGraph's serializer gives them: JSON as text, bytes as base64; large
// ones go to blob storage like any large member.
//
// Session ids: "lg-" and 40 hex digits of the SHA-256 of the saver's
// namespace and the thread id, so any thread id string works; the session's
// metadata holds both (langgraph_namespace, langgraph_thread), which is
// how list() finds a namespace's threads and gives back their ids.
// Checkpoint entries' ids are derived the same way from the checkpoint
// namespace and id, so a checkpoint's parent is found without a read.

import { createHash } from "node:crypto";
import { readFrom } from "./pages.js";
import {
  BaseCheckpointSaver,
  TASKS,
  WRITES_IDX_MAP,
  compareWritesSortKeys,
  copyCheckpoint,
  getCheckpointId,
  maxChannelVersion,
  writesSortKey,
} from "@langchain/langgraph-checkpoint";

const CHECKPOINT = "langgraph_checkpoint";
const WRITES = "langgraph_writes";
// CACHED_THREADS bounds the threads a saver keeps read (each holds its
// checkpoints as stored).
const CACHED_THREADS = 64;
// PARENT_WAIT_MS bounds how long pending writes wait for their
// checkpoint's put to begin before they are stored where the leaf is.
const PARENT_WAIT_MS = 2000;

const hex = (...parts) => createHash("sha256").update(JSON.stringify(parts)).digest("hex");

/** Adds one stored entry to a thread as read: a checkpoint (the latest put
 * of an id wins) with its channel values, or pending writes (a regular
 * write is kept once; special ones, by their negative index, replaced).
 * Entries not of that shape — another writer's, a damaged one — are passed
 * over rather than break the thread's reads. */
function apply(thread, e) {
  if (e.type !== "custom" || !e.data || typeof e.data !== "object" || typeof e.data.ns !== "string") return;
  const d = e.data;
  const stored = (v) => v && typeof v === "object" && typeof v.type === "string" && (typeof v.text === "string" || typeof v.base64 === "string");
  if (e.customType === CHECKPOINT) {
    if (typeof d.id !== "string" || !stored(d.checkpoint) || !stored(d.metadata)) return;
    if (!thread.checkpoints.has(d.ns)) thread.checkpoints.set(d.ns, new Map());
    thread.checkpoints.get(d.ns).set(d.id, d);
    for (const [ch, cv] of Object.entries(d.channels ?? {})) {
      if (Array.isArray(cv) && typeof cv[0] === "string" && stored(cv[1])) thread.channels.set(JSON.stringify([d.ns, ch, cv[0]]), cv[1]);
    }
  } else if (e.customType === WRITES) {
    if (typeof d.checkpoint !== "string" || typeof d.task !== "string" || !Array.isArray(d.writes)) return;
    const key = JSON.stringify([d.ns, d.checkpoint]);
    if (!thread.writes.has(key)) thread.writes.set(key, new Map());
    const byTask = thread.writes.get(key);
    for (const w of d.writes) {
      if (!Array.isArray(w) || !Number.isInteger(w[0]) || typeof w[1] !== "string" || !stored(w[2])) continue;
      const [idx, channel, value] = w;
      const k = `${d.task},${idx}`;
      if (idx >= 0 && byTask.has(k)) continue;
      byTask.set(k, { task: d.task, idx, channel, value, path: d.path ?? "" });
    }
  }
}

export class SessionlogSaver extends BaseCheckpointSaver {
  /**
   * @param {import("./index.js").Client} client
   * @param {{namespace?: string, serde?: any}} [opts] Savers of different
   *   namespaces on one deployment never see each other's threads.
   */
  constructor(client, { namespace = "default", serde } = {}) {
    super(serde);
    if (typeof namespace !== "string" || namespace === "") throw new Error("SessionlogSaver: namespace must be a non-empty string");
    this.client = client;
    this.namespace = namespace;
    /** Threads this saver wrote to: listings may lag writes a moment, and a
     * saver lists what it wrote at once. */
    this.written = new Set();
  }

  /** The session id of a thread of this saver's namespace. */
  sessionId(threadId) {
    return "lg-" + hex(this.namespace, String(threadId)).slice(0, 40);
  }

  async getTuple(config) {
    const threadId = config.configurable?.thread_id;
    if (threadId === undefined) return undefined;
    const ns = config.configurable?.checkpoint_ns ?? "";
    const thread = await this.#load(threadId);
    if (!thread) return undefined;
    let checkpointId = getCheckpointId(config);
    const inNs = thread.checkpoints.get(ns);
    if (!inNs) return undefined;
    let saved;
    if (checkpointId) {
      saved = inNs.get(checkpointId);
      if (!saved) return undefined;
    } else {
      checkpointId = [...inNs.keys()].sort().reverse()[0];
      saved = inNs.get(checkpointId);
      config = { configurable: { thread_id: threadId, checkpoint_id: checkpointId, checkpoint_ns: ns } };
    }
    return this.#tuple(thread, threadId, ns, checkpointId, saved, config);
  }

  async *list(config, options = {}) {
    let { before, limit, filter } = options;
    const threadId = config.configurable?.thread_id;
    const wantNs = config.configurable?.checkpoint_ns;
    const wantId = config.configurable?.checkpoint_id;
    const threads = threadId !== undefined ? [threadId] : await this.#threads();
    for (const tid of threads) {
      const thread = await this.#load(tid);
      if (!thread) continue;
      for (const [ns, inNs] of thread.checkpoints) {
        if (wantNs !== undefined && ns !== wantNs) continue;
        for (const id of [...inNs.keys()].sort().reverse()) {
          if (wantId && id !== wantId) continue;
          if (before?.configurable?.checkpoint_id && id >= before.configurable.checkpoint_id) continue;
          const saved = inNs.get(id);
          const metadata = await this.#loads(saved.metadata);
          if (filter && !Object.entries(filter).every(([k, v]) => metadata[k] === v)) continue;
          if (limit !== undefined) {
            if (limit <= 0) return;
            limit -= 1;
          }
          yield await this.#tuple(thread, tid, ns, id, saved, { configurable: { thread_id: tid, checkpoint_ns: ns, checkpoint_id: id } }, metadata);
        }
      }
    }
  }

  async put(config, checkpoint, metadata, newVersions) {
    const threadId = config.configurable?.thread_id;
    if (threadId === undefined) throw new Error('Failed to put checkpoint: the config has no "thread_id" in its "configurable" property');
    const ns = config.configurable?.checkpoint_ns ?? "";
    const parent = config.configurable?.checkpoint_id;
    // LangGraph sends a checkpoint's writes without waiting for its put:
    // they wait for it (putWrites), so that they go under it.
    const key = this.sessionId(threadId) + "/" + this.#entryId(ns, checkpoint.id);
    const put = (async () => {
      const copy = copyCheckpoint(checkpoint);
      // Channel values apart, by version: only those of channels that
      // changed are stored; a value of a channel without a version stays in
      // the checkpoint.
      const versions = newVersions ?? copy.channel_versions ?? {};
      const values = {};
      const inline = {};
      for (const [ch, value] of Object.entries(copy.channel_values ?? {})) {
        if (copy.channel_versions?.[ch] === undefined) inline[ch] = value;
        else if (versions[ch] !== undefined) values[ch] = [String(versions[ch]), value];
      }
      copy.channel_values = inline;
      const channels = {};
      await Promise.all(Object.entries(values).map(async ([ch, [ver, value]]) => (channels[ch] = [ver, await this.#dumps(value)])));
      const [cp, meta] = await Promise.all([this.#dumps(copy), this.#dumps(metadata)]);
      const entry = {
        type: "custom",
        customType: CHECKPOINT,
        data: { ns, id: checkpoint.id, parent: parent ?? null, checkpoint: cp, channels, metadata: meta },
        id: this.#entryId(ns, checkpoint.id),
        parentId: parent !== undefined ? this.#entryId(ns, parent) : null,
      };
      await this.#append(threadId, entry);
    })();
    this.#puts.set(key, put);
    try {
      await put;
    } finally {
      if (this.#puts.get(key) === put) this.#puts.delete(key);
    }
    return { configurable: { thread_id: threadId, checkpoint_ns: ns, checkpoint_id: checkpoint.id } };
  }

  async putWrites(config, writes, taskId, taskPath = "") {
    const threadId = config.configurable?.thread_id;
    const ns = config.configurable?.checkpoint_ns ?? "";
    const checkpointId = config.configurable?.checkpoint_id;
    if (threadId === undefined) throw new Error('Failed to put writes: the config has no "thread_id" in its "configurable" property');
    if (checkpointId === undefined) throw new Error('Failed to put writes: the config has no "checkpoint_id" in its "configurable" property');
    const stored = await Promise.all(
      writes.map(async ([channel, value], idx) => [WRITES_IDX_MAP[channel] || idx, channel, await this.#dumps(value)]),
    );
    const entry = {
      type: "custom",
      customType: WRITES,
      data: { ns, checkpoint: checkpointId, task: taskId, path: taskPath, writes: stored },
      parentId: this.#entryId(ns, checkpointId),
    };
    // Its checkpoint first: a put under way, or one that comes in a moment
    // (LangGraph may call putWrites first).
    const key = this.sessionId(threadId) + "/" + entry.parentId;
    await this.#puts.get(key)?.catch(() => {});
    try {
      await this.#append(threadId, entry, true);
    } catch (e) {
      if (e?.code !== "parent_not_found") throw e;
      for (let waited = 0; !this.#puts.has(key) && waited < PARENT_WAIT_MS; waited += 20) await new Promise((r) => setTimeout(r, 20));
      await this.#puts.get(key)?.catch(() => {});
      await this.#append(threadId, entry);
    }
  }

  async deleteThread(threadId) {
    this.written.delete(String(threadId));
    this.#cache.delete(this.sessionId(threadId));
    try {
      await this.client.delete(this.sessionId(threadId));
    } catch (e) {
      if (e?.code !== "not_found") throw e;
    }
  }

  #entryId(ns, checkpointId) {
    return "cp-" + hex(ns, String(checkpointId)).slice(0, 32);
  }

  /** Appends one entry to the thread's session, making the session on the
   * first write and putting an entry whose parent is not there (a
   * checkpoint of another saver, a re-put) where it can go. */
  async #append(threadId, entry, parentFirst = false) {
    const id = this.sessionId(threadId);
    for (let attempt = 0; ; attempt++) {
      try {
        await this.client.append(id, [entry]);
        this.written.add(String(threadId));
        return;
      } catch (e) {
        if (attempt > 3) throw e;
        if (e?.code === "not_found") {
          try {
            await this.client.create({ id, name: `langgraph ${String(threadId)}`.slice(0, 1024), metadata: { langgraph_namespace: this.namespace, langgraph_thread: String(threadId) } });
          } catch (ce) {
            if (ce?.code !== "exists") throw ce;
          }
        } else if (e?.code === "parent_not_found") {
          if (parentFirst) throw e;
          entry = { ...entry, parentId: null }; // the parent checkpoint is not in this thread: a root
        } else if (e?.code === "duplicate_id") {
          // The same checkpoint put again: a new entry, the latest read.
          entry = { ...entry, id: entry.id + "-" + Date.now().toString(36) + Math.random().toString(36).slice(2, 8) };
        } else {
          throw e;
        }
      }
    }
  }

  /** The ids of this namespace's threads, most recently written first,
   * with those this saver wrote to that the listing does not show yet. */
  async #threads() {
    const out = new Set();
    for await (const s of this.client.sessions(100, { meta: { langgraph_namespace: this.namespace } })) {
      const thread = s.metadata?.langgraph_thread;
      if (typeof thread === "string") out.add(thread);
    }
    for (const t of this.written) out.add(t);
    return [...out];
  }

  /** Reads a thread: its checkpoints by namespace and id (the latest put of
   * each), the writes of each, in the order they were put, and the channel
   * values by version. A thread read before is read on from where the last
   * read ended — its last entry read again, to see that the session is the
   * same one (not deleted and made anew) — so a step reads what is new. */
  async #load(threadId) {
    const id = this.sessionId(threadId);
    let thread = this.#cache.get(id);
    const from = thread ? thread.count - 1 : 0;
    const read = await readFrom(this.client, id, from);
    if (!read) {
      this.#cache.delete(id);
      return undefined;
    }
    const fresh = read.entries;
    if (thread && fresh[0]?.id !== thread.lastId) return this.#reload(threadId);
    if (!thread) thread = { checkpoints: new Map(), writes: new Map(), channels: new Map(), count: 0, lastId: undefined };
    for (const e of thread.count > 0 ? fresh.slice(1) : fresh) apply(thread, e);
    // Applying is idempotent: two reads at once count the same entries.
    thread.count = from + fresh.length;
    thread.lastId = fresh.length ? fresh[fresh.length - 1].id : thread.lastId;
    this.#cache.delete(id); // most recently used last
    this.#cache.set(id, thread);
    while (this.#cache.size > CACHED_THREADS) this.#cache.delete(this.#cache.keys().next().value);
    return thread;
  }

  /** Reads a thread from its start. */
  #reload(threadId) {
    this.#cache.delete(this.sessionId(threadId));
    return this.#load(threadId);
  }

  /** Threads read, by session id, least recently used first. */
  #cache = new Map();

  /** Puts under way, by session id and entry id. */
  #puts = new Map();

  /** A checkpoint tuple as MemorySaver gives it. */
  async #tuple(thread, threadId, ns, checkpointId, saved, config, metadata) {
    const checkpoint = await this.#loads(saved.checkpoint);
    checkpoint.channel_values ??= {};
    for (const [ch, ver] of Object.entries(checkpoint.channel_versions ?? {})) {
      const stored = thread.channels.get(JSON.stringify([ns, ch, String(ver)]));
      if (stored) checkpoint.channel_values[ch] = await this.#loads(stored);
    }
    const parent = saved.parent ?? undefined;
    if (checkpoint.v < 4 && parent !== undefined) await this.#migratePendingSends(checkpoint, thread, ns, parent);
    const stored = [...(thread.writes.get(JSON.stringify([ns, checkpointId]))?.values() ?? [])];
    const keyed = stored.map((w) => ({ key: writesSortKey(w.path, w.task, w.idx), w }));
    keyed.sort((a, b) => compareWritesSortKeys(a.key, b.key));
    const pendingWrites = await Promise.all(keyed.map(async ({ w }) => [w.task, w.channel, await this.#loads(w.value)]));
    const tuple = {
      config,
      checkpoint,
      metadata: metadata ?? (await this.#loads(saved.metadata)),
      pendingWrites,
    };
    if (parent !== undefined) tuple.parentConfig = { configurable: { thread_id: threadId, checkpoint_ns: ns, checkpoint_id: parent } };
    return tuple;
  }

  /** Checkpoints before version 4 kept pending sends as their parent's
   * writes: moved into the checkpoint, as LangGraph's own savers do. */
  async #migratePendingSends(checkpoint, thread, ns, parent) {
    const parentWrites = [...(thread.writes.get(JSON.stringify([ns, parent]))?.values() ?? [])];
    const sends = await Promise.all(parentWrites.filter((w) => w.channel === TASKS).map((w) => this.#loads(w.value)));
    checkpoint.channel_values ??= {};
    checkpoint.channel_values[TASKS] = sends;
    checkpoint.channel_versions ??= {};
    checkpoint.channel_versions[TASKS] =
      Object.keys(checkpoint.channel_versions).length > 0
        ? maxChannelVersion(...Object.values(checkpoint.channel_versions))
        : this.getNextVersion(undefined);
  }

  /** A value as the serializer gives it: JSON kept as text, bytes as
   * base64. */
  async #dumps(value) {
    const [type, bytes] = await this.serde.dumpsTyped(value);
    if (type === "json") return { type, text: typeof bytes === "string" ? bytes : new TextDecoder().decode(bytes) };
    return { type, base64: Buffer.from(bytes).toString("base64") };
  }

  #loads(stored) {
    return this.serde.loadsTyped(stored.type, stored.text ?? new Uint8Array(Buffer.from(stored.base64, "base64")));
  }
}
