// Types of the sessionlog client (src/index.js).

export type Json = null | boolean | number | string | Json[] | { [k: string]: Json };
/** An entry in pi's v3 JSON; id, parentId and timestamp may be left out when appending. */
export type Entry = { type: string; id?: string; parentId?: string | null; timestamp?: string; [k: string]: Json | undefined };

/** How current a read must be: "linearizable" (default) or "replica" within maxLagMs. */
export interface Freshness { consistency?: "linearizable" | "replica"; maxLagMs?: number }
export interface SessionInfo { id: string; cwd?: string; parentSession?: string; name?: string; created: string; updated: string; entries: number; leaf?: string }
export interface SessionReply { session: SessionInfo; header?: Json; labels?: { target: string; label: string }[]; sequence?: number; copied?: number; deleted?: Json }
export interface AppendReply { entries: { id: string; parentId: string }[]; leaf: string; sequence: number }
export interface ContextReply { thinkingLevel: string; model: { provider: string; modelId: string } | null; activeTools?: string[]; compaction?: string; messages: Json[]; sources: string[]; leaf: string; sequence: number; total: number; offset?: number; next?: number }
export interface ListReply { sessions: SessionInfo[]; next?: string }
export interface Event { id: number; kind: "entry" | "header" | string; data: Json }

export class SessionlogError extends Error {
  code: string; status: number; field?: string; leaf?: string; sequence?: number; retryAfterMs?: number;
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
  stats(session: string, opts?: Freshness): Promise<Record<string, Json>>;
  fork(session: string, opts?: { id?: string; at?: string; before?: string }): Promise<SessionReply>;
  list(opts?: ListOptions): Promise<ListReply>;
  search(query: string, opts?: { session?: string; limit?: number; offset?: number }): Promise<SearchReply>;
  sessions(page?: number, filters?: Omit<ListOptions, "limit" | "cursor">): AsyncGenerator<SessionInfo>;
  append(session: string, entries: Entry[], opts?: { parent?: string; ifSequence?: number }): Promise<AppendReply>;
  move(session: string, target: string, opts?: { summary?: string; details?: Json; ifSequence?: number }): Promise<AppendReply>;
  label(session: string, target: string, label: string, opts?: { ifSequence?: number }): Promise<AppendReply>;
  name(session: string, name: string, opts?: { ifSequence?: number }): Promise<AppendReply>;
  update(session: string, build: (leaf: string, sequence: number) => Entry[] | Promise<Entry[]>, attempts?: number): Promise<AppendReply>;
  context(session: string, opts?: { at?: string; offset?: number; refs?: boolean } & Freshness): Promise<ContextReply>;
  tree(session: string, opts?: { offset?: number } & Freshness): Promise<Record<string, Json>>;
  entries(session: string, opts?: { offset?: number; limit?: number; refs?: boolean } & Freshness): Promise<{ entries: Entry[]; next?: number }>;
  /** One entry of a session by its id. */
  get(session: string, entry: string, opts?: { refs?: boolean } & Freshness): Promise<{ entry: Entry; sequence: number }>;
  wait(session: string, sequence: number, opts?: { timeoutMs?: number }): Promise<{ leaf: string; sequence: number }>;
  putBlob(data: Uint8Array | string): Promise<{ blob: { $blob: string; size: number } }>;
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
}

export interface SearchReply {
  hits: SearchHit[];
  total: number;
}
