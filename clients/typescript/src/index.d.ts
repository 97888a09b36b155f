// Types of the sessionlog client (src/index.js).

export type Json = null | boolean | number | string | Json[] | { [k: string]: Json };
/** An entry in pi's v3 JSON; id, parentId and timestamp may be left out when appending. */
export type Entry = { type: string; id?: string; parentId?: string | null; timestamp?: string; [k: string]: Json | undefined };

/** How current a read must be: "linearizable" (default) or "replica" within maxLagMs. */
export interface Freshness { consistency?: "linearizable" | "replica"; maxLagMs?: number }
/** A session as a listing shows it (the protocol's Listing). */
export interface Listing {
  id: string; cwd?: string; parentSession?: string; name?: string; created: string; updated: string; entries: number; leaf?: string;
  /** The labels in force, the most recently set, distinct, in the order set. */
  labels?: string[]; metadata?: Json;
  /** The start of the first user message: what a picker shows of a session without a name. */
  firstMessage?: string; model?: string; tokens?: number; cost?: number;
  /** Tokens of models without a price (not in cost), where the service keeps a usage index. */
  unpricedTokens?: number;
  /** When the session happened: its last entry's time (updated is when it was last written). */
  lastActivity?: string;
}
/** @deprecated The protocol calls it Listing. */
export type SessionInfo = Listing;
export interface LabelReply { id: string; label: string; timestamp: string }
export interface DeletedReply { messages: number; snapshots: number; blobsDeleted: number; blobsShared: number; blobsYoung: number }
export interface SessionReply { session: Listing; header?: Json; labels?: LabelReply[]; sequence?: number; copied?: number; deleted?: DeletedReply }
export interface Appended { id: string; parentId: string }
export interface AppendReply { entries: Appended[]; leaf: string; sequence: number }
export interface ModelReply { provider: string; modelId: string }
/** A branch another node wrote while apart, off the current branch. */
export interface Apart { origin: string; leaf: string; at: string }
export interface ContextReply { thinkingLevel: string; model: ModelReply | null; activeTools?: string[]; compaction?: string; messages: Json[]; sources: string[]; leaf: string; sequence: number; apart?: Apart[]; total: number; offset?: number; next?: number }
export interface ListReply { sessions: Listing[]; next?: string }
export interface TreeNode {
  id: string; parentId?: string; type: string; timestamp: string; role?: string; label?: string; target?: string; summary?: string;
  customType?: string; tools?: string[]; calls?: string[]; turn?: string; thinking?: boolean; error?: boolean; row: number; head?: boolean; depth?: number; branch?: boolean;
}
export interface TreeReply { leaf: string; sequence: number; nodes: TreeNode[]; total: number; next?: number; apart?: Apart[] }
export interface GetReply { entry: Entry; sequence: number }
export interface EntriesReply { entries: Entry[]; total: number; next?: number; sequence: number }
/**
 * A session's usage: each API call once (however many lines of the agent's file repeat it). `cost` leaves out
 * the calls of a model without a price, which `unpricedCalls` counts: then the cost is known only in part.
 */
export interface UsageReply {
  input: number; output: number; cacheRead: number; cacheWrite: number; totalTokens: number; cost: number;
  turns: number; calls: number; unpricedCalls?: number; unpricedTokens?: number;
}
export interface UsageDay {
  day: string; model: string; replies: number; input: number; output: number; cost: number;
  calls?: number; cacheRead?: number; cacheWrite?: number; tokens?: number; unpricedCalls?: number; unpricedTokens?: number;
}
export interface StatsReply {
  entries: number; byType: Record<string, number>; messages: number; byRole: Record<string, number>; toolCalls: number; compactions: number;
  branchSummaries: number; redactions: number; usage: UsageReply; sequence: number; timeline?: UsageDay[]; timelineCut?: boolean;
}
export interface WaitReply { leaf: string; sequence: number }
/** A reference to content stored apart. */
export interface BlobRef { $blob: string; size: number; [k: string]: Json }
export interface BlobReply { blob: BlobRef }
export interface Event { id: number; kind: "entry" | "header" | string; data: Json }

export class SessionlogError extends Error {
  code: string; status: number; field?: string; leaf?: string; sequence?: number; retryAfterMs?: number;
  /** The request's id in the node's log, where the node keeps the cause (internal errors). */
  request?: string;
}
export class BadRequestError extends SessionlogError {}
export class InvalidSessionIDError extends SessionlogError {}
export class InvalidEntryError extends SessionlogError {}
export class NotFoundError extends SessionlogError {}
export class EntryNotFoundError extends SessionlogError {}
export class ExistsError extends SessionlogError {}
export class DuplicateIDError extends SessionlogError {}
export class ParentNotFoundError extends SessionlogError {}
export class InvalidTargetError extends SessionlogError {}
/** The session moved on: .leaf and .sequence say where it is now. */
export class ConflictError extends SessionlogError {}
export class TooLargeError extends SessionlogError {}
export class BlobNotFoundError extends SessionlogError {}
export class UploadNotFoundError extends SessionlogError {}
export class RateLimitedError extends SessionlogError {}
export class TimeoutError extends SessionlogError {}
export class UnavailableError extends SessionlogError {}
export class InternalError extends SessionlogError {}
export class UnauthorizedError extends SessionlogError {}
export const errorClasses: Record<string, typeof SessionlogError>;
export function errorFromReply(status: number, body: unknown): SessionlogError;

export function newId(): string;
export function idempotent(op: string, body: Record<string, unknown>): boolean;
export function parseEvents(body: AsyncIterable<Uint8Array>): AsyncGenerator<Event>;

export interface ClientOptions { user?: string; password?: string; retries?: number; timeoutMs?: number; fetch?: typeof fetch }

export interface NatsOptions extends ClientOptions { subject?: string; http?: string }

export class Client {
  constructor(url: string, opts?: ClientOptions);
  /** A client over NATS (needs @nats-io/transport-node); opts.http is the gateway, for events(). */
  static connect(natsUrl: string, opts?: NatsOptions): Promise<Client>;
  /** Over NATS without opts.subject: what service discovery found. */
  readonly service?: { name: string; id: string; version: string; metadata: Record<string, string>; subject: string };
  close(): Promise<void>;
  call<T = Json>(op: string, body: Record<string, unknown>): Promise<T>;
  create(opts?: { id?: string; cwd?: string; name?: string; metadata?: Json; parentSession?: string }): Promise<SessionReply>;
  /** Reads take Freshness: "replica" accepts an answer up to maxLagMs (default 1000) stale. */
  open(session: string, opts?: Freshness): Promise<SessionReply>;
  delete(session: string): Promise<SessionReply>;
  stats(session: string, opts?: Freshness): Promise<StatsReply>;
  fork(session: string, opts?: { id?: string; at?: string; before?: string }): Promise<SessionReply>;
  list(opts?: ListOptions): Promise<ListReply>;
  /** Within a session, its current branch unless scope says otherwise: "subtree" (at and all under it) or "session" (every branch). */
  search(query: string, opts?: { session?: string; scope?: "branch" | "subtree" | "session"; at?: string; limit?: number; offset?: number } & SearchFilters): Promise<SearchReply>;
  /** Tokens and cost across sessions, grouped by `by` (default day and model; [] the total alone). */
  usage(opts?: UsageOptions): Promise<UsageReport>;
  sessions(page?: number, filters?: Omit<ListOptions, "limit" | "cursor">): AsyncGenerator<Listing>;
  append(session: string, entries: Entry[], opts?: { parent?: string; ifSequence?: number }): Promise<AppendReply>;
  move(session: string, target: string, opts?: { summary?: string; details?: Json; ifSequence?: number }): Promise<AppendReply>;
  label(session: string, target: string, label: string, opts?: { ifSequence?: number }): Promise<AppendReply>;
  name(session: string, name: string, opts?: { ifSequence?: number }): Promise<AppendReply>;
  update(session: string, build: (leaf: string, sequence: number) => Entry[] | Promise<Entry[]>, attempts?: number): Promise<AppendReply>;
  context(session: string, opts?: { at?: string; offset?: number; refs?: boolean } & Freshness): Promise<ContextReply>;
  tree(session: string, opts?: { offset?: number } & Freshness): Promise<TreeReply>;
  entries(session: string, opts?: { offset?: number; limit?: number; refs?: boolean } & Freshness): Promise<EntriesReply>;
  /** One entry of a session by its id. */
  get(session: string, entry: string, opts?: { refs?: boolean } & Freshness): Promise<GetReply>;
  wait(session: string, sequence: number, opts?: { timeoutMs?: number }): Promise<WaitReply>;
  putBlob(data: Uint8Array | string): Promise<BlobReply>;
  getBlob(sha256: string): Promise<Uint8Array>;
  events(session: string, opts?: { after?: number; refs?: boolean; signal?: AbortSignal }): AsyncGenerator<Event>;
}

/** A pi SessionManager whose history is a sessionlog session (src/pi.js). */
export class PiSession {
  static open(client: Client, id: string, opts?: { pi?: unknown; cwd?: string; create?: boolean }): Promise<PiSession>;
  readonly id: string;
  /** pi's SessionManager (in memory) holding the session. */
  manager: any;
  /** How many syncs found another writer first. */
  conflicts: number;
  /** The entries pi appended that sessionlog does not hold yet. */
  pending(): Entry[];
  /** Sends them, in order, as one atomic batch. */
  sync(): Promise<AppendReply | null>;
  /** A fresh manager with the session as sessionlog has it now. */
  reload(): Promise<any>;
}
/** The pi module the application uses (@earendil-works/pi-coding-agent, or @mariozechner/pi-coding-agent), found in its node_modules, then beside the client. */
export function importPi(): Promise<any>;

export interface ListOptions {
  limit?: number;
  cursor?: string;
  name?: string;
  cwd?: string;
  labels?: string[];
  meta?: Record<string, string>;
  since?: string;
  until?: string;
}

/** Narrow a search: an entry's role, a tool it called or answered, a file its tool calls named (or a directory above one), its model (provider/model), its session's agent and working directory (or one above), its label, its time (RFC 3339: since <= t < until). */
export interface SearchFilters { role?: string; tool?: string; path?: string; model?: string; agent?: string; cwd?: string; label?: string; since?: string; until?: string }

export interface SearchHit {
  session: string;
  entry: string;
  type: string;
  role?: string;
  timestamp: string;
  score: number;
  snippet: string;
  /** Ranges [start, end) of the matched words in snippet, in bytes of its
   * UTF-8 (new TextEncoder().encode(snippet).subarray(start, end)). */
  matches: [number, number][];
  /** In a search of a branch: an entry a compaction summarized, which the session's model no longer sees. */
  outsideContext?: boolean;
}

export interface SearchReply {
  hits: SearchHit[];
  total: number;
  /** Total is an estimate: common words search the newest entries first, and count the older at their rate. */
  totalEstimated?: boolean;
}

export type UsageDimension = "day" | "month" | "model" | "project" | "agent" | "session";

/** Since and until are days (2026-01-02, UTC), both included; model is provider/model or the model's name; project a working directory, its sessions and those below. */
export interface UsageOptions { by?: UsageDimension[]; since?: string; until?: string; model?: string; project?: string; agent?: string; session?: string; limit?: number }

/** One group's usage: its values of the dimensions asked for, what its calls consumed, and averages per turn. */
export interface UsageRow {
  day?: string;
  month?: string;
  model?: string;
  project?: string;
  agent?: string;
  session?: string;
  /** Assistant replies; calls are usage entries (models called outside the conversation). */
  turns: number;
  calls: number;
  input: number;
  output: number;
  cacheRead: number;
  cacheWrite: number;
  tokens: number;
  /** Dollars: recorded by the agent, or priced from the table; calls of a model without a price are left out and counted in unpricedCalls. */
  cost: number;
  unpricedCalls?: number;
  unpricedTokens?: number;
  tokensPerTurn: number;
  costPerTurn: number;
}

export interface UsageReport {
  by: UsageDimension[];
  /** Ordered by the dimensions, days and months oldest first; at most limit. */
  rows: UsageRow[];
  /** Every row summed, those past the limit included. */
  total: UsageRow;
  sessions: number;
  groups: number;
  cut?: boolean;
}
