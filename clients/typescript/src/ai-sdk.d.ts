import type { UIMessage } from "ai";
import type { Client } from "./index.js";

/** resumable-stream's context, on sessionlog's generations (src/ai-sdk.js). */
export interface ResumableStreamContext {
  /** Runs makeStream and streams it if no generation of that id is
   * running, else joins the one running; null once it is done. */
  resumableStream(streamId: string, makeStream: (opts: { signal: AbortSignal }) => ReadableStream<string>, skipCharacters?: number,
    opts?: { onStart?: () => unknown; onEnd?: (end: { chunks: string[]; state: string }) => unknown }): Promise<ReadableStream<string> | null>;
  /** The same; opts.onStart runs once the generation can be joined, before anything is streamed (a throw ends it); opts.onEnd hears of the end, with the chunks readers were given. */
  createNewResumableStream(streamId: string, makeStream: (opts: { signal: AbortSignal }) => ReadableStream<string>, skipCharacters?: number,
    opts?: { onStart?: () => unknown; onEnd?: (end: { chunks: string[]; state: string }) => unknown }): Promise<ReadableStream<string> | null>;
  /** Joins a running generation; null once it ended, undefined if there is none. */
  resumeExistingStream(streamId: string, skipCharacters?: number): Promise<ReadableStream<string> | null | undefined>;
  /** null if there is none, true while it runs, "DONE" once ended. */
  hasExistingStream(streamId: string): Promise<null | true | "DONE">;
  /** Ends the generation for every reader and its writer's makeStream. */
  stopStream(streamId: string): Promise<"stopped" | "done" | "none">;
}

export function createResumableStreamContext(opts: {
  client: Client;
  waitUntil?: ((promise: Promise<unknown>) => void) | null;
  keyPrefix?: string;
  /** How long a generation's records are kept (default 24 hours). */
  ttlMs?: number;
}): ResumableStreamContext;

/** The sessionlog session holding a chat. */
export function chatSessionId(chatId: string): string;

export interface ChatSummary {
  chatId: string;
  title: string;
  userId?: string;
  updatedAt?: string;
  createdAt?: string;
}

/** AI SDK chats kept in sessionlog: UIMessages as entries of a session's
 * tree; regenerations and edits branch it. */
export class SessionlogChats {
  constructor(client: Client, opts?: { waitUntil?: (promise: Promise<unknown>) => void; ttlMs?: number });
  /** Resolves once every generation this instance started is streamed and its reply stored. */
  idle(): Promise<void>;
  loadChat(chatId: string): Promise<UIMessage[]>;
  saveChat(chatId: string, messages: UIMessage[], opts?: { userId?: string; title?: string }): Promise<UIMessage[]>;
  listChats(opts?: { userId?: string; limit?: number; cursor?: string }): Promise<{ chats: ChatSummary[]; next?: string }>;
  deleteChat(chatId: string): Promise<void>;
  activeStreamId(chatId: string): Promise<string | null>;
  /** The POST handler's response: the model's stream (streamText's
   * result.stream), resumable, its reply stored as it was streamed. */
  respond(chatId: string, modelStream: ReadableStream<unknown>, opts: { messages: UIMessage[]; abort?: AbortController; userId?: string; streamId?: string }): Response;
  /** The GET handler's response: the running generation from its start, or 204. */
  resume(chatId: string): Promise<Response>;
  /** Stops the chat's running generation for every reader. */
  stop(chatId: string): Promise<"stopped" | "done" | "none">;
}
