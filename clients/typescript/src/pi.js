// pi on sessionlog: a pi SessionManager whose history comes from a
// sessionlog session and whose new entries go back to it.
//
// pi's SessionManager appends synchronously (to its file, or memory);
// sessionlog's appends are requests. So the manager is pi's own, in
// memory (SessionManager.inMemory with the session's entries: pi's public
// way to restore external history), and sync() sends what pi appended
// since the last sync, in order, as one atomic batch with pi's own ids.
// Call it after each turn (or each append).
//
// Two processes on one session: each sync is conditional on the session
// being where this process last saw it. When another process got there
// first (ConflictError), sync sends the same entries unconditionally: pi
// chained them onto an entry the session holds, so they become a branch of
// their own beside the other process's entries — nothing interleaves,
// nothing is lost — and the session's leaf is the last written. Then
// reload() gives a manager with both.

import { ConflictError } from "./errors.js";

/** The pi module: @earendil-works/pi-coding-agent (1.x), or the older
 * @mariozechner/pi-coding-agent, whichever is installed (PiSession needs
 * 1.x: 0.73's SessionManager.inMemory takes no history, and open says so). */
export async function importPi() {
  for (const name of ["@earendil-works/pi-coding-agent", "@mariozechner/pi-coding-agent"]) {
    try {
      return await import(name);
    } catch (e) {
      if (e?.code !== "ERR_MODULE_NOT_FOUND") throw e;
    }
  }
  throw new Error("pi is not installed: npm install @earendil-works/pi-coding-agent");
}

export class PiSession {
  /** Opens (or, with create, creates) session id and gives pi its history.
   * @param {import("./index.js").Client} client
   * @param {string} id
   * @param {{pi?: any, cwd?: string, create?: boolean}} [opts] */
  static async open(client, id, opts = {}) {
    const pi = opts.pi ?? (await importPi());
    const cwd = opts.cwd ?? process.cwd();
    let opened;
    try {
      opened = await client.open(id);
    } catch (e) {
      if (!opts.create || e?.code !== "not_found") throw e;
      await client.create({ id, cwd });
      opened = await client.open(id);
    }
    const s = new PiSession(client, id, pi, cwd);
    await s.#load(opened);
    return s;
  }

  constructor(client, id, pi, cwd) {
    this.client = client;
    this.id = id;
    this.pi = pi;
    this.cwd = cwd;
    /** How many syncs found another writer first. */
    this.conflicts = 0;
  }

  async #load(opened) {
    const entries = [];
    for (let offset = 0; ;) {
      const page = await this.client.entries(this.id, { offset, limit: 1000 });
      entries.push(...page.entries);
      if (!page.next) break;
      offset = page.next;
    }
    const header = opened.header ?? { type: "session", version: 3, id: this.id, timestamp: opened.session.created, cwd: this.cwd };
    /** pi's SessionManager, in memory, holding the session. */
    this.manager = this.pi.SessionManager.inMemory(this.cwd, undefined, [header, ...entries]);
    if (this.manager.getEntries().length !== entries.length || this.manager.getSessionId?.() !== header.id) {
      // pi before 1.x (0.73) has inMemory(cwd) only: it cannot be given a
      // history, and a session it started would not be this one.
      throw new Error("this pi cannot be given a session's history (SessionManager.inMemory takes no entries): PiSession needs @earendil-works/pi-coding-agent 1.x");
    }
    this.sent = new Set(entries.map((e) => e.id));
    this.sequence = opened.sequence ?? 0;
  }

  /** The entries pi appended that sessionlog does not hold yet, in order. */
  pending() {
    return this.manager.getEntries().filter((e) => !this.sent.has(e.id));
  }

  /** Sends what pi appended since the last sync (see the top of pi.js for
   * what happens when another process wrote meanwhile). Returns the
   * append's reply, or null when there was nothing to send. */
  async sync() {
    const batch = this.pending();
    if (batch.length === 0) return null;
    let reply;
    try {
      reply = await this.client.append(this.id, batch, { ifSequence: this.sequence || undefined });
    } catch (e) {
      if (!(e instanceof ConflictError)) throw e;
      this.conflicts++;
      // pi's ids and parents are kept: a branch beside the other writer's.
      reply = await this.client.append(this.id, batch);
    }
    for (const e of batch) this.sent.add(e.id);
    this.sequence = reply.sequence;
    return reply;
  }

  /** A fresh manager holding the session as sessionlog has it now (after
   * another process wrote): what to give pi next. */
  async reload() {
    await this.#load(await this.client.open(this.id));
    return this.manager;
  }
}
