// OpenAI Agents SDK sessions on sessionlog.
//
// A session of the SDK is a sessionlog session ("oa-" and 40 hex digits of
// the SHA-256 of its id; the id itself in the session's metadata,
// openai_session). Each item is an entry: user, assistant and system
// messages, function calls (an assistant message with a toolCall block) and
// their results (a toolResult) as pi messages, so the context, the console
// and search show the session like any other; other items as `custom`
// entries (openai_item). The SDK's item is kept whole beside (the
// message's `openaiItem` member, the custom entry's data), so getItems()
// gives back exactly what was added.
//
// History is a branch of the tree: getItems() reads the items from the
// root to the leaf. popItem, clearSession, replace_suffix, history
// mutations and compaction move the leaf and branch instead of destroying
// anything: the old items stay in the tree, out of what the session
// returns. Every change is conditional on the session being where the
// read that decided it left it; a lost race is read again and decided
// again. Transactions are recorded on the branch they change, with the
// change in one atomic batch, so a repeated operation id is recognised
// until the session is cleared.

import { createHash } from "node:crypto";
import { isDeepStrictEqual } from "node:util";
import { UserError, protocol } from "@openai/agents-core";
import { changeBranch, readFrom } from "./pages.js";

const ITEM = "openai_item";
const OPERATION = "openai_operation";

export class SessionlogSession {
  /**
   * @param {import("./index.js").Client} client
   * @param {{sessionId?: string}} [opts] the SDK's session id (any string;
   *   a random one when absent)
   */
  constructor(client, { sessionId } = {}) {
    this.client = client;
    this.sessionId = sessionId ?? crypto.randomUUID();
    if (typeof this.sessionId !== "string" || this.sessionId === "") throw new UserError("SessionlogSession: sessionId must be a non-empty string");
    /** The sessionlog session holding this one. */
    this.id = "oa-" + createHash("sha256").update(this.sessionId).digest("hex").slice(0, 40);
  }

  async getSessionId() {
    return this.sessionId;
  }

  async getItems(limit) {
    const { items } = await this.#branch();
    if (limit === undefined) return items.map((i) => i.item);
    if (limit <= 0) return [];
    return items.slice(Math.max(items.length - limit, 0)).map((i) => i.item);
  }

  async addItems(items) {
    if (items.length === 0) return;
    const entries = items.map(toEntry);
    await this.#change(async () => ({ entries }));
  }

  async popItem() {
    let popped;
    await this.#change(async ({ items }) => {
      const last = items.at(-1);
      popped = last?.item;
      if (!last) return null;
      return { moveTo: last.parent ?? "" };
    });
    return popped;
  }

  async clearSession() {
    await this.#change(async ({ leaf }) => (leaf === "" ? null : { moveTo: "" }));
  }

  async applyHistoryMutations({ mutations }) {
    if (!mutations?.length) return;
    await this.#change(async ({ items, leaf }) => {
      let next = items.map((i) => i.item);
      for (const m of mutations) {
        if (m.type !== "replace_function_call") continue;
        const out = [];
        let kept = false;
        for (const item of next) {
          if (item.type === "function_call" && item.callId === m.callId) {
            if (!kept) out.push(structuredClone(m.replacement));
            kept = true;
            continue;
          }
          out.push(item);
        }
        next = out;
      }
      return rebranch(items, next, leaf);
    });
  }

  async replaceHistoryWithCompaction(items) {
    const entries = items.map(toEntry);
    await this.#change(async () => (entries.length ? { parent: "", entries } : { moveTo: "" }));
  }

  async applyHistoryTransaction(args) {
    const { operationId, transaction } = snapshotArgs(args);
    await this.#change(async (state) => {
      const { items, operations } = state;
      const seen = operations.get(operationId);
      if (seen) {
        if (!isDeepStrictEqual(seen, transaction)) throw new UserError("Session history operation was already applied with a different transaction.");
        return null;
      }
      const op = { type: "custom", customType: OPERATION, data: { operationId, transaction } };
      if (transaction.type === "append_items") return { entries: [op, ...transaction.items.map(toEntry)] };
      const { expectedSuffix, replacement } = transaction;
      const start = items.length - expectedSuffix.length;
      if (start < 0 || !isDeepStrictEqual(items.slice(start).map((i) => plain(i.item)), expectedSuffix)) {
        throw new UserError("Session history suffix no longer matches the transaction precondition.");
      }
      // The replacement branches off where the suffix began.
      const at = start < items.length ? items[start].parent : state.leaf;
      return { parent: at, entries: [op, ...replacement.map(toEntry)] };
    });
  }

  /** Reads the session and applies what decide returns, in one request
   * (pages.js changeBranch). */
  #change(decide) {
    return changeBranch(this.client, this.id, { read: () => this.#branch(), decide, create: () => this.#create() });
  }

  async #create() {
    try {
      await this.client.create({ id: this.id, name: `openai-agents ${this.sessionId}`.slice(0, 1024), metadata: { openai_session: this.sessionId } });
    } catch (e) {
      if (e?.code !== "exists") throw e;
    }
  }

  /** The session's branch: its items from the root to the leaf (with
   * their entries' ids and parents), the leaf, the sequence read, and the
   * operations recorded since the session was last cleared. */
  async #branch() {
    const read = await readFrom(this.client, this.id);
    if (!read) return { exists: false, items: [], operations: new Map(), leaf: "", sequence: 0 };
    const byId = new Map();
    const operations = new Map();
    let leaf = "";
    for (const e of read.entries) {
      byId.set(e.id, e);
      // pi's rule: the last entry is the leaf; a leaf entry points at it.
      leaf = e.type === "leaf" ? (e.parentId ?? "") : e.id;
      if (e.type === "leaf" && !e.parentId) operations.clear(); // clearSession
      if (e.type === "custom" && e.customType === OPERATION && !operations.has(e.data?.operationId)) operations.set(e.data.operationId, e.data.transaction);
    }
    const items = [];
    for (let id = leaf; id; ) {
      const e = byId.get(id);
      if (!e) break;
      const item = itemOf(e);
      if (item !== undefined) items.push({ id: e.id, parent: e.parentId ?? "", item });
      id = e.parentId;
    }
    items.reverse();
    return { exists: true, items, operations, leaf, sequence: read.sequence };
  }
}

/** A plan that makes next the branch: the common prefix with items kept,
 * the rest appended from where they part (or the leaf moved there). */
function rebranch(items, next, leaf) {
  let k = 0;
  while (k < items.length && k < next.length && isDeepStrictEqual(plain(items[k].item), plain(next[k]))) k++;
  if (k === items.length && k === next.length) return null;
  const at = k < items.length ? items[k].parent : leaf;
  return next.length > k ? { parent: at, entries: next.slice(k).map(toEntry) } : { moveTo: at };
}

/** The SDK item an entry holds, if any. */
function itemOf(e) {
  if (e.type === "message" && e.message?.openaiItem !== undefined) return e.message.openaiItem;
  if (e.type === "custom" && e.customType === ITEM) return e.data;
  return undefined;
}

const text = (s) => typeof s === "string" && s !== "";

/** The entry of an item: a pi message where it maps one to one, a custom
 * entry otherwise; the item kept whole either way. */
function toEntry(item) {
  if (!isPlain(item, new Set(), true)) {
    throw new UserError("SessionlogSession: an item must be plain JSON data (objects, arrays, strings, finite numbers, booleans, null): binary values, class instances and cycles cannot be stored; encode bytes as base64");
  }
  const message = piMessage(item);
  if (message) return { type: "message", message: { ...message, timestamp: Date.now(), openaiItem: item } };
  return { type: "custom", customType: ITEM, data: item };
}

function piMessage(item) {
  if (!item || typeof item !== "object") return undefined;
  const role = item.role;
  if ((item.type === undefined || item.type === "message") && (role === "user" || role === "system")) {
    if (text(item.content)) return { role, content: item.content };
    if (!Array.isArray(item.content)) return undefined;
    const blocks = [];
    for (const c of item.content) {
      if (c?.type === "input_text" && typeof c.text === "string") blocks.push({ type: "text", text: c.text });
      else if (role === "user" && c?.type === "input_image" && typeof c.image === "string" && /^data:image\/[\w.+-]+;base64,/.test(c.image)) {
        const [head, data] = c.image.split(",", 2);
        blocks.push({ type: "image", data, mimeType: head.slice(5, head.indexOf(";")) });
      } else return undefined;
    }
    return blocks.length ? { role, content: blocks } : undefined;
  }
  const assistant = (content, stopReason) => ({
    role: "assistant", content, api: "openai-agents", provider: text(item.providerData?.provider) ? item.providerData.provider : "openai",
    model: text(item.providerData?.model) ? item.providerData.model : "unknown", stopReason,
  });
  if ((item.type === undefined || item.type === "message") && role === "assistant" && Array.isArray(item.content)) {
    const blocks = [];
    for (const c of item.content) {
      if (c?.type === "output_text" && typeof c.text === "string") blocks.push({ type: "text", text: c.text });
      else if (c?.type === "refusal" && typeof c.refusal === "string") blocks.push({ type: "text", text: c.refusal });
      else return undefined;
    }
    return assistant(blocks, "stop");
  }
  if (item.type === "function_call" && text(item.callId) && text(item.name) && typeof item.arguments === "string") {
    let args;
    try {
      args = JSON.parse(item.arguments);
    } catch {
      args = undefined;
    }
    if (!args || typeof args !== "object" || Array.isArray(args)) args = {};
    return assistant([{ type: "toolCall", id: item.callId, name: item.name, arguments: args }], "toolUse");
  }
  if (item.type === "function_call_result" && text(item.callId) && text(item.name)) {
    const out = item.output;
    const t = typeof out === "string" ? out : out?.type === "text" && typeof out.text === "string" ? out.text : JSON.stringify(out ?? null);
    return { role: "toolResult", toolCallId: item.callId, toolName: item.name, content: [{ type: "text", text: t }], isError: false };
  }
  return undefined;
}

/** A value as JSON gives it back: what is stored is compared. */
function plain(v) {
  return JSON.parse(JSON.stringify(v));
}

/** The transaction arguments, checked as the SDK's MemorySession checks
 * them (the same errors), and as stored: plain JSON. */
function snapshotArgs(args) {
  let operationId, transaction;
  try {
    if (!args || typeof args !== "object") throw new Error();
    operationId = Reflect.get(args, "operationId");
    transaction = Reflect.get(args, "transaction");
  } catch {
    throw new UserError("Session history transaction arguments are invalid.");
  }
  if (typeof operationId !== "string" || !operationId.trim()) throw new UserError("Session history transaction operationId must be a non-empty string.");
  if (!transaction || typeof transaction !== "object") throw new UserError("Session history transaction must be an object.");
  if (!isPlain(transaction)) throw new UserError("Session history transaction items contain invalid or unsupported data.");
  const keys = Object.keys(transaction);
  const items = (list) => {
    if (!list.every((i) => protocol.ModelItem.safeParse(i).success)) throw new UserError("Session history transaction items contain invalid or unsupported data.");
    return plain(list);
  };
  if (transaction.type === "append_items") {
    if (keys.length !== 2 || !Array.isArray(transaction.items)) throw new UserError("Session history append transaction fields are invalid.");
    return { operationId, transaction: { type: "append_items", items: items(transaction.items) } };
  }
  if (transaction.type !== "replace_suffix") throw new UserError("Unsupported session history transaction type.");
  if (keys.length !== 3 || !Array.isArray(transaction.expectedSuffix) || !Array.isArray(transaction.replacement)) {
    throw new UserError("Session history suffix transaction fields are invalid.");
  }
  return { operationId, transaction: { type: "replace_suffix", expectedSuffix: items(transaction.expectedSuffix), replacement: items(transaction.replacement) } };
}

/** Whether v is made of what JSON keeps as it is: plain objects, arrays,
 * strings, finite numbers, booleans and null, without cycles — and, with
 * undefinedMembers, members that are undefined (JSON leaves them out, as
 * the SDK's items do). */
function isPlain(v, seen = new Set(), undefinedMembers = false) {
  if (v === null || typeof v === "string" || typeof v === "boolean") return true;
  if (typeof v === "number") return Number.isFinite(v);
  if (typeof v !== "object" || seen.has(v)) return false;
  const proto = Object.getPrototypeOf(v);
  if (!Array.isArray(v) && proto !== Object.prototype && proto !== null) return false;
  seen.add(v);
  const ok = Object.values(v).every((x) => (x === undefined ? undefinedMembers && !Array.isArray(v) : isPlain(x, seen, undefinedMembers)));
  seen.delete(v);
  return ok;
}
