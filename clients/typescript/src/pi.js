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

import { existsSync, readFileSync, realpathSync } from "node:fs";
import { dirname, join } from "node:path";
import { pathToFileURL } from "node:url";
import { ConflictError } from "./errors.js";

const piPackages = ["@earendil-works/pi-coding-agent", "@mariozechner/pi-coding-agent"];

/** The pi module the application uses: @earendil-works/pi-coding-agent
 * (1.x), or the older @mariozechner/pi-coding-agent, found in the
 * application's own node_modules (beside its main script, or the working
 * directory's), then beside this client. The client is often installed
 * from its folder (npm links it): a plain import would look for pi beside
 * the client's real path, not in the application. PiSession needs 1.x:
 * 0.73's SessionManager.inMemory takes no history, and open says so. */
export async function importPi() {
  const bases = [];
  if (process.argv[1]) {
    try {
      bases.push(dirname(realpathSync(process.argv[1])));
    } catch {
      bases.push(dirname(process.argv[1]));
    }
  }
  bases.push(process.cwd());
  for (const name of piPackages) {
    for (const base of bases) {
      const dir = findPackage(base, name);
      if (dir) return importPackage(dir, name);
    }
  }
  for (const name of piPackages) {
    try {
      return await import(name);
    } catch (e) {
      if (e?.code !== "ERR_MODULE_NOT_FOUND") throw e;
    }
  }
  throw new Error("pi is not installed beside the application (looked up from " + bases.join(" and ") +
    "): npm install @earendil-works/pi-coding-agent (on Node >= 22.19), or pass { pi } to PiSession.open");
}

/** The directory of package name in a node_modules at or above base. */
function findPackage(base, name) {
  for (let dir = base; ; dir = dirname(dir)) {
    const candidate = join(dir, "node_modules", name);
    if (existsSync(join(candidate, "package.json"))) return candidate;
    if (dirname(dir) === dir) return null;
  }
}

/** Imports the package in dir by its entry point, refusing a Node older
 * than the package says it needs. */
async function importPackage(dir, name) {
  const pkg = JSON.parse(readFileSync(join(dir, "package.json"), "utf8"));
  const need = /^>=\s*(\d+)\.(\d+)(?:\.(\d+))?$/.exec(pkg.engines?.node ?? "");
  if (need) {
    const have = process.versions.node.split(".").map(Number);
    const want = need.slice(1).map((x) => Number(x ?? 0));
    for (let i = 0; i < 3; i++) {
      if (have[i] > want[i]) break;
      if (have[i] < want[i]) {
        throw new Error(`${name} ${pkg.version} needs Node ${pkg.engines.node}; this is Node ${process.version}`);
      }
    }
  }
  const root = pkg.exports?.["."] ?? pkg.exports;
  const entry = typeof root === "string" ? root : root?.import ?? root?.default ?? pkg.module ?? pkg.main ?? "index.js";
  return import(pathToFileURL(join(dir, entry)).href);
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
