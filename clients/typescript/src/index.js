// sessionlog client over the HTTP gateway (Node >= 20; node:http with
// keep-alive, or a fetch given in the options). Every service operation is a method; errors are one class
// per protocol code (errors.js).
import { randomBytes } from "node:crypto";
import http from "node:http";
import https from "node:https";
import { ConflictError, RateLimitedError, SessionlogError, TimeoutError, UnavailableError, errorFromReply, transportError } from "./errors.js";
import { connectNats } from "./nats.js";

export * from "./errors.js";
export { PiSession, importPi } from "./pi.js";

/** A fresh entry id (8 hex digits, as pi draws them). Entries appended with
 * ids of the client's are safe to send again: the service recognises a
 * repeated append and stores it once. */
export function newId() {
  return randomBytes(4).toString("hex");
}

// A request body larger than this goes as an upload over NATS (requests
// are at most 1 MiB); a piece of an upload is this large before base64.
const INLINE_LIMIT = 768 << 10;
const UPLOAD_PIECE = 512 << 10;

const READS = new Set(["open", "context", "tree", "entries", "stats", "list", "wait", "search", "usage", "blob", "putblob"]);
// A generation's writes name the record they follow and carry the
// writer's token: the service recognises one sent again.
const LIVE = new Set(["livestart", "liveput", "liveend", "livestop", "livestate"]);

/** Whether a request may be sent again when its outcome is unknown. */
export function idempotent(op, body) {
  if (READS.has(op) || LIVE.has(op)) return true;
  if (op === "append") return (body.entries ?? []).every((e) => e && typeof e === "object" && e.id);
  return false;
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// Node's fetch costs some 0.7 ms a request more than node:http with a
// keep-alive agent (appends through the gateway, measured side by side:
// BENCHMARKS.md, Clients): the client's requests go through node:http,
// on its own agents, unless it is given a fetch.
function nodePost(agents) {
  return (url, headers, body, timeoutMs) => new Promise((resolve, reject) => {
    const u = new URL(url);
    const secure = u.protocol === "https:";
    const req = (secure ? https : http).request(u, {
      method: "POST", agent: secure ? agents.https : agents.http,
      headers: { ...headers, "content-length": Buffer.byteLength(body) },
    }, (res) => {
      const chunks = [];
      res.on("data", (c) => chunks.push(c));
      res.on("error", fail);
      res.on("end", () => { clearTimeout(timer); resolve({ status: res.statusCode, text: Buffer.concat(chunks).toString("utf8") }); });
    });
    const timer = setTimeout(() => req.destroy(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
    function fail(e) { clearTimeout(timer); reject(e); }
    req.on("error", fail);
    req.end(body);
  });
}

// fetchPost is the same over a fetch (browsers, or one the caller gave).
function fetchPost(fetch) {
  return async (url, headers, body, timeoutMs) => {
    const res = await fetch(url, { method: "POST", headers, body, signal: AbortSignal.timeout(timeoutMs) });
    return { status: res.status, text: await res.text() };
  };
}
const drop = (o) => Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined && v !== null && v !== false));

export class Client {
  /**
   * @param {string} url the gateway, e.g. http://127.0.0.1:8080; credentials
   *   in it (http://user:password@host:8080) are used as opts.user and
   *   opts.password are, and never sent in the URL.
   * @param {{user?: string, password?: string, retries?: number, timeoutMs?: number, fetch?: typeof fetch}} [opts]
   */
  constructor(url, opts = {}) {
    if (typeof url !== "string") throw new TypeError("sessionlog: a Client needs the gateway's URL, such as http://127.0.0.1:8080 (or Client.connect(natsUrl))");
    if (/^https?:\/\/[^/]*@/.test(url)) {
      const u = new URL(url);
      opts = { ...opts, user: opts.user ?? decodeURIComponent(u.username), password: opts.password ?? decodeURIComponent(u.password) };
      u.username = u.password = "";
      url = u.toString();
    }
    this.base = url.replace(/\/+$/, "");
    this.retries = opts.retries ?? 3;
    this.timeoutMs = opts.timeoutMs ?? 30000;
    this.fetch = opts.fetch ?? globalThis.fetch;
    if (opts.fetch === undefined && typeof process !== "undefined" && process.versions?.node) {
      this.agents = { http: new http.Agent({ keepAlive: true }), https: new https.Agent({ keepAlive: true }) };
      this.post = nodePost(this.agents);
    } else {
      this.post = fetchPost(this.fetch);
    }
    this.headers = { "content-type": "application/json" };
    if (opts.user !== undefined) {
      this.headers.authorization = "Basic " + Buffer.from(`${opts.user}:${opts.password ?? ""}`).toString("base64");
    }
  }

  /** A client of the service over NATS (request/reply to
   * `sessionlog.v1.<op>`: no gateway hop), e.g. `nats://127.0.0.1:4222`.
   * Needs `@nats-io/transport-node`. `events()` needs the gateway: pass
   * its URL as `opts.http`. Close it when done. */
  static async connect(natsUrl, opts = {}) {
    if (typeof natsUrl === "string" && /^(nats|tls):\/\/[^/]*@/.test(natsUrl)) {
      // Credentials in the URL (nats://user:password@host:4222), as over HTTP.
      const u = new URL(natsUrl);
      opts = { ...opts, user: opts.user ?? decodeURIComponent(u.username), password: opts.password ?? decodeURIComponent(u.password) };
      natsUrl = `${u.protocol}//${u.host}`;
    }
    const c = new Client(opts.http ?? "", opts);
    c.nats = await connectNats(natsUrl, opts);
    return c;
  }

  /** Over NATS, what service discovery found: the service's name, id,
   * version, metadata (its tenant) and subject; undefined otherwise. */
  get service() {
    return this.nats?.info;
  }

  /** Closes a NATS client's connection, and an HTTP client's idle
   * keep-alive connections. */
  async close() {
    if (this.nats) await this.nats.close();
    this.agents?.http.destroy();
    this.agents?.https.destroy();
  }

  /** Any operation by name, body as the service takes it; rate limits are
   * waited out, and safe requests sent again when the outcome is unknown
   * (the client's retries, and with retryForMs for that long as well). */
  call(op, body, { retryForMs } = {}) {
    return this.#retry(idempotent(op, body), () =>
      this.nats ? this.nats.request(op, body) : this.#http(`/v1/ops/${op}`, JSON.stringify(body)), retryForMs);
  }

  async #retry(again, send, retryForMs = 0) {
    const until = Date.now() + retryForMs;
    for (let attempt = 0; ; attempt++) {
      let err;
      try {
        return await send();
      } catch (e) {
        // No reply (a timeout, a dropped connection): the outcome is unknown.
        err = transportError(e);
      }
      const retry = err instanceof RateLimitedError || (again && (err instanceof UnavailableError || err instanceof TimeoutError));
      if (!retry || (attempt >= this.retries && Date.now() >= until)) throw err;
      await sleep(err instanceof RateLimitedError && err.retryAfterMs ? err.retryAfterMs : Math.min(2000, 50 * 2 ** attempt));
    }
  }

  async #http(path, body, contentType = "application/json") {
    const res = await this.post(`${this.base}${path}`, { ...this.headers, "content-type": contentType }, body, this.timeoutMs);
    let payload;
    try { payload = JSON.parse(res.text); } catch { payload = res.text; }
    if (res.status >= 200 && res.status < 300) return payload;
    throw errorFromReply(res.status, payload);
  }

  /** Stages bytes larger than a request as an upload over NATS, piece by
   * piece, and returns its name. */
  async #upload(bytes) {
    const upload = "up-" + randomBytes(8).toString("hex");
    for (let offset = 0; offset < bytes.length || offset === 0; offset += UPLOAD_PIECE) {
      const data = Buffer.from(bytes.subarray(offset, offset + UPLOAD_PIECE)).toString("base64");
      await this.call("upload", { upload, offset, data });
      if (bytes.length === 0) break;
    }
    return upload;
  }

  create({ id, cwd, name, metadata, parentSession } = {}) { return this.call("create", drop({ id, cwd, name, metadata, parentSession })); }
  /** Reads take { consistency, maxLagMs }: "linearizable" (the default)
   * sees every acknowledged append; "replica" accepts an answer up to
   * maxLagMs (default 1000) stale and is then answered without a write to
   * the stream while the service's copy is that fresh. */
  open(session, { consistency, maxLagMs } = {}) { return this.call("open", drop({ session, consistency, maxLagMs })); }
  delete(session) { return this.call("delete", { session }); }
  stats(session, { consistency, maxLagMs } = {}) { return this.call("stats", drop({ session, consistency, maxLagMs })); }
  fork(session, { id, at, before } = {}) { return this.call("fork", drop({ session, id, at, before })); }
  /** A page of sessions, most recently updated first, filtered by name
   * (a part, any case), cwd (that directory or below), labels (all),
   * meta ({k: "v"}), since and until (RFC 3339). A filtered page may be
   * short, even empty, with a next: follow it (sessions() does). */
  list({ limit, cursor, name, cwd, labels, meta, since, until } = {}) {
    return this.call("list", drop({ limit, cursor, name, cwd, labels, meta, since, until }));
  }

  /** Messages whose text has every word of query (in double quotes: the
   * phrase), best first: {hits: [{session, entry, snippet, matches, …}], total}. */
  search(query, { session, scope, at, limit, offset, ...filters } = {}) { return this.call("search", drop({ query, session, scope, at, limit, offset, ...filters })); }

  /** Tokens and cost summed across sessions, grouped by `by` (of "day",
   * "month", "model", "project", "agent", "session"; default day and
   * model; [] the total alone) and narrowed by since and until (days,
   * both included), model, project (a directory and below), agent and
   * session: {by, rows, total, sessions, groups, cut}. */
  usage({ by, since, until, model, project, agent, session, limit } = {}) {
    return this.call("usage", drop({ by, since, until, model, project, agent, session, limit }));
  }

  /** Every session, most recently updated first. */
  async *sessions(page = 100, filters = {}) {
    let cursor;
    do {
      const r = await this.list({ ...filters, limit: page, cursor });
      yield* r.sessions ?? [];
      cursor = r.next;
    } while (cursor);
  }

  /** Appends entries (pi v3 JSON; id, parentId and timestamp may be left
   * out) as one atomic batch; with ifSequence only if the session is still
   * there (ConflictError otherwise, with .leaf and .sequence). */
  async append(session, entries, { parent, ifSequence } = {}) {
    const body = drop({ entries, parent, ifSequence });
    const again = idempotent("append", body);
    const json = JSON.stringify(body);
    if (!this.nats) {
      // The gateway sends a body larger than a request on as an upload.
      return this.#retry(again, () => this.#http(`/v1/sessions/${session}/entries`, json));
    }
    if (json.length <= INLINE_LIMIT) return this.call("append", { session, ...body });
    const upload = await this.#upload(Buffer.from(JSON.stringify({ session, ...body })));
    return this.#retry(again, () => this.nats.request("append", { session, upload }));
  }
  move(session, target, { summary, details, ifSequence } = {}) { return this.call("move", drop({ session, target, summary, details, ifSequence })); }
  label(session, target, label, { ifSequence } = {}) { return this.call("label", { ...drop({ session, target, ifSequence }), label }); }
  name(session, name, { ifSequence } = {}) { return this.call("name", { ...drop({ session, ifSequence }), name }); }

  /** The optimistic-concurrency loop: build(leaf, sequence) makes the
   * entries to append on the session as it is; when another writer got
   * there first it is called again on the new state, after a short random
   * pause (without it the last winner keeps winning). */
  async update(session, build, attempts = 20) {
    const s = await this.open(session);
    let leaf = s.session?.leaf ?? "", seq = s.sequence ?? 0;
    for (let attempt = 0; attempt < attempts; attempt++) {
      try {
        return await this.append(session, await build(leaf, seq), { ifSequence: seq });
      } catch (e) {
        if (!(e instanceof ConflictError)) throw e;
        leaf = e.leaf ?? "";
        seq = e.sequence ?? 0;
        await sleep(Math.random() * Math.min(200, 5 * 2 ** attempt));
      }
    }
    throw new ConflictError("conflict", `${session}: still contended after ${attempts} attempts`);
  }

  context(session, { at, offset, refs, consistency, maxLagMs } = {}) { return this.call("context", drop({ session, at, offset: offset || undefined, refs, consistency, maxLagMs })); }
  tree(session, { offset, consistency, maxLagMs } = {}) { return this.call("tree", drop({ session, offset: offset || undefined, consistency, maxLagMs })); }
  /** One entry of a session by its id: {entry, sequence}. */
  get(session, entry, { refs, consistency, maxLagMs } = {}) { return this.call("get", drop({ session, entry, refs, consistency, maxLagMs })); }
  entries(session, { offset, limit, refs, consistency, maxLagMs } = {}) { return this.call("entries", drop({ session, offset: offset || undefined, limit, refs, consistency, maxLagMs })); }
  /** Resolves once the service reflects sequence (read-your-writes). */
  wait(session, sequence, { timeoutMs } = {}) { return this.call("wait", drop({ session, sequence, timeoutMs })); }

  /** Stores content apart; the reply's .blob is the reference to place in
   * an entry where the content would be. */
  async putBlob(data) {
    const bytes = Buffer.from(data);
    if (!this.nats) return this.#retry(true, () => this.#http("/v1/blobs", bytes, "application/octet-stream"));
    if (bytes.length <= INLINE_LIMIT / 2) return this.call("putblob", { data: bytes.toString("base64") });
    return this.call("putblob", { upload: await this.#upload(bytes) });
  }
  async getBlob(sha256) {
    if (this.nats) {
      // Piece by piece, each as large as a reply can hold.
      const parts = [];
      let offset = 0, cursor;
      for (;;) {
        const r = await this.call("blob", drop({ sha256, offset: offset || undefined, cursor }));
        parts.push(Buffer.from(r.data ?? "", "base64"));
        if (!r.next) return new Uint8Array(Buffer.concat(parts));
        offset = r.next;
        cursor = r.cursor;
      }
    }
    const res = await this.fetch(`${this.base}/v1/blobs/${sha256}`, { headers: this.headers, signal: AbortSignal.timeout(this.timeoutMs) });
    if (!res.ok) throw errorFromReply(res.status, await res.json().catch(() => null));
    return new Uint8Array(await res.arrayBuffer());
  }

  /** The session's entries as they are appended, as {id, kind, data}:
   * after the stream sequence `after` (0: from the start, header first),
   * or from now on; resuming from the last event after a cut. Stop with
   * `signal`, or by breaking out of the loop. */
  async *events(session, { after, refs, signal } = {}) {
    let last = after;
    for (;;) {
      const q = new URLSearchParams();
      if (last !== undefined && last !== null) q.set("after", String(last));
      if (refs) q.set("refs", "true");
      const res = await this.fetch(`${this.base}/v1/sessions/${session}/events?${q}`, { headers: this.headers, signal });
      if (!res.ok) throw errorFromReply(res.status, await res.json().catch(() => null));
      let resume = false;
      for await (const ev of parseEvents(res.body)) {
        if (ev.kind === "error") {
          if (ev.data?.code === "slow_reader") { last = ev.data.lastEventId; resume = true; break; }
          throw errorFromReply(0, { error: ev.data });
        }
        last = ev.id;
        yield ev;
      }
      if (!resume) return;
    }
  }
}

/** Server-sent events of a response body. */
export async function* parseEvents(body) {
  const decoder = new TextDecoder();
  let buf = "", kind = "message", id, data = [];
  for await (const chunk of body) {
    buf += decoder.decode(chunk, { stream: true });
    let nl;
    while ((nl = buf.indexOf("\n")) >= 0) {
      const line = buf.slice(0, nl).replace(/\r$/, "");
      buf = buf.slice(nl + 1);
      if (line === "") {
        if (data.length) yield { id: id ? Number(id) : 0, kind, data: JSON.parse(data.join("\n")) };
        kind = "message"; id = undefined; data = [];
      } else if (!line.startsWith(":")) {
        const i = line.indexOf(":");
        const field = i < 0 ? line : line.slice(0, i);
        const value = i < 0 ? "" : line.slice(i + 1).replace(/^ /, "");
        if (field === "event") kind = value;
        else if (field === "id") id = value;
        else if (field === "data") data.push(value);
      }
    }
  }
}
