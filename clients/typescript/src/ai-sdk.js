// Vercel AI SDK (`ai` 7) chats on sessionlog: UIMessages stored by chat
// id, a chat's regenerations and edits as branches of its tree; and
// resumable streams on sessionlog's generations (live.js) instead of
// Redis, as a drop-in for the resumable-stream package — plus a stop that
// ends a generation for every reader.
//
// A chat is a session ("ai-" and 40 hex digits of the SHA-256 of its id;
// the id in its metadata, ai_chat, with ai_user for the user). Each
// UIMessage is an entry: user and assistant messages as pi messages
// (text, reasoning as thinking, tool parts as tool calls), so the
// console, search and usage read them like any other; others as custom
// entries (ai_message). The UIMessage is kept whole beside (the
// message's uiMessage member, the custom entry's data): loadChat gives
// back exactly what was saved. An `ai_stream` custom entry marks a
// generation in progress: the chat's active stream is the one its branch
// ends with.

import { createHash } from "node:crypto";
import { isDeepStrictEqual } from "node:util";
import { createUIMessageStreamResponse, generateId, readUIMessageStream, toUIMessageStream } from "ai";
import { LiveWriter, liveState, readLive, stopLive } from "./live.js";
import { branchOf, changeBranch, readFrom } from "./pages.js";

const MESSAGE = "ai_message";
const STREAM = "ai_stream";

/**
 * resumable-stream's context, on sessionlog: the same four calls, with the
 * same answers, and stopStream. makeStream is given {signal}, aborted
 * when the generation is stopped.
 * @param {{client: import("./index.js").Client, waitUntil?: ((p: Promise<unknown>) => void) | null, keyPrefix?: string, ttlMs?: number}} opts
 */
export function createResumableStreamContext({ client, waitUntil, keyPrefix, ttlMs } = {}) {
  if (!client?.nats) throw new TypeError("createResumableStreamContext: give a client connected over NATS ({ client: await Client.connect(natsUrl) })");
  const wait = waitUntil ?? ((p) => p.catch(() => {}));
  const key = (streamId) => {
    if (typeof streamId !== "string" || streamId === "") throw new TypeError("a stream id must be a non-empty string");
    return `${keyPrefix || "resumable-stream"}:${streamId}`;
  };

  async function produce(writer, makeStream, onEnd) {
    const stop = new AbortController();
    let finished;
    wait(new Promise((resolve) => { finished = resolve; }));
    writer.onStop(() => stop.abort(new Error("the generation was stopped")));
    const reader = makeStream({ signal: stop.signal }).getReader();
    stop.signal.addEventListener("abort", () => reader.cancel(stop.signal.reason).catch(() => {}), { once: true });
    return new ReadableStream({
      start(controller) {
        (async () => {
          try {
            for (;;) {
              const { done, value } = await reader.read();
              if (done || stop.signal.aborted) break;
              writer.write(value);
              try { controller.enqueue(value); } catch { /* our reader went away: the generation goes on */ }
            }
          } catch (e) {
            writer.onError(e);
          }
          const state = await writer.end();
          try { controller.close(); } catch { /* closed already */ }
          if (onEnd) await Promise.resolve(onEnd({ chunks: writer.written, state })).catch((e) => writer.onError(e));
          finished();
        })();
      },
    });
  }

  // resumable-stream's createNewResumableStream writes over a stream of
  // the same id; here one id is one generation: a second joins the first.
  async function begin(streamId, makeStream, skipCharacters, opts) {
    const writer = new LiveWriter(client, key(streamId), { ttlMs });
    const r = await writer.start();
    if (r.started) {
      // opts.onStart runs once the generation can be joined and before
      // anything is streamed: what it records (a chat's active stream)
      // never names a generation a reader cannot yet find.
      try {
        await opts?.onStart?.();
      } catch (e) {
        await writer.end();
        throw e;
      }
      return produce(writer, makeStream, opts?.onEnd);
    }
    if (r.state === "running") return readLive(client, key(streamId), { skipCharacters, state: r });
    return null;
  }

  return {
    /** Runs makeStream and streams it if no generation of that id is
     * running, else joins the one running; null once it is done. */
    resumableStream: (streamId, makeStream, skipCharacters, opts) => begin(streamId, makeStream, skipCharacters, opts),
    /** Runs makeStream and streams it (joins one already running of
     * that id rather than run two; null for one done). opts.onEnd hears
     * of the end, with the chunks readers were given. */
    createNewResumableStream: (streamId, makeStream, skipCharacters, opts) => begin(streamId, makeStream, skipCharacters, opts),
    /** Joins a running generation; null once it ended, undefined if
     * there is none (never, or expired). */
    resumeExistingStream: (streamId, skipCharacters) => readLive(client, key(streamId), { skipCharacters }),
    /** null if there is none, true while it runs, "DONE" once ended. */
    hasExistingStream: async (streamId) => {
      const r = await liveState(client, key(streamId));
      return r.state === "none" ? null : r.state === "running" ? true : "DONE";
    },
    /** Ends the generation for everyone: its makeStream's signal aborts,
     * its readers end; its state after ("stopped", or "done" if it had
     * ended; "none" if there is none). */
    stopStream: async (streamId) => {
      try {
        return (await stopLive(client, key(streamId))).state;
      } catch (e) {
        if (e?.code === "not_found") return "none";
        throw e;
      }
    },
  };
}

/** The session holding chat id. */
export function chatSessionId(chatId) {
  return "ai-" + createHash("sha256").update(chatId).digest("hex").slice(0, 40);
}

export class SessionlogChats {
  /**
   * @param {import("./index.js").Client} client
   * @param {{waitUntil?: (p: Promise<unknown>) => void, ttlMs?: number}} [opts]
   *   waitUntil keeps a serverless function alive until a generation is
   *   streamed and stored (Next.js's after); ttlMs is how long a
   *   generation's chunks are kept (24 hours)
   */
  constructor(client, { waitUntil, ttlMs } = {}) {
    this.client = client;
    this.pending = new Set();
    // Chats are kept over HTTP or NATS; generations are read over NATS.
    this.waitUntil = waitUntil;
    this.streams = client.nats ? createResumableStreamContext({ client, ttlMs, waitUntil: (p) => this.#track(p) }) : null;
  }

  /** Keeps p in idle()'s count (and the caller's waitUntil) until it settles. */
  #track(p) {
    this.pending.add(p);
    p.finally(() => this.pending.delete(p)).catch(() => {});
    this.waitUntil?.(p);
    return p;
  }

  #live() {
    if (!this.streams) throw new TypeError("SessionlogChats: respond, resume and stop stream generations over NATS: make the client with Client.connect(natsUrl)");
    return this.streams;
  }

  /** Resolves once every generation this instance started is streamed
   * and its reply stored. */
  async idle() {
    while (this.pending.size) await Promise.allSettled([...this.pending]);
  }

  /** The chat's messages, from its first to its latest ([] for a chat
   * never saved). */
  async loadChat(chatId) {
    return (await this.#branch(chatId)).messages.map((m) => m.message);
  }

  /** Saves the chat as messages: those it holds already are kept, the
   * rest appended where they part from it — a regenerated or edited
   * message is a branch, the messages it replaces stay in the tree. */
  async saveChat(chatId, messages, { userId, title } = {}) {
    checkMessages(messages);
    await this.#change(chatId, { userId, title: title ?? titleOf(messages) }, (state) => rebranch(state, messages));
    return messages;
  }

  /** The chats of userId (every chat without one), most recently
   * updated first: {chats: [{chatId, title, userId, updatedAt, createdAt}], next}. */
  async listChats({ userId, limit = 20, cursor } = {}) {
    const meta = { ai_sdk: "chat", ...(userId !== undefined ? { ai_user: String(userId) } : {}) };
    const r = await this.client.list({ meta, limit, cursor });
    const chats = (r.sessions ?? []).map((s) => ({
      chatId: s.metadata?.ai_chat, title: s.name ?? "", userId: s.metadata?.ai_user || undefined,
      updatedAt: s.updated ?? s.updatedAt, createdAt: s.created ?? s.createdAt,
    }));
    return { chats, next: r.next };
  }

  /** Deletes the chat (its whole tree). */
  async deleteChat(chatId) {
    try {
      await this.client.delete(chatSessionId(chatId));
    } catch (e) {
      if (e?.code !== "not_found") throw e;
    }
  }

  /** The id of the stream generating the chat's next message, if one
   * is (null otherwise). */
  async activeStreamId(chatId) {
    return (await this.#branch(chatId)).active;
  }

  /**
   * The POST handler's answer: the model's stream (streamText's
   * result.stream) as the UI message stream response, made resumable,
   * with the chat's new assistant message stored when it ends — what
   * readers were streamed, up to a stop if there was one.
   * @param {string} chatId
   * @param {ReadableStream} modelStream
   * @param {{messages: object[], abort?: AbortController, userId?: string, streamId?: string}} opts
   *   messages the chat as saved before the reply; abort, aborted on a
   *   stop (the one given to streamText)
   */
  respond(chatId, modelStream, { messages, abort, userId, streamId = generateId() }) {
    const streams = this.#live();
    return createUIMessageStreamResponse({
      stream: toUIMessageStream({ stream: modelStream, originalMessages: messages, generateMessageId: generateId }),
      consumeSseStream: ({ stream }) => this.#track((async () => {
        // The generation is started before the chat names it active, so
        // a resume that finds it active always finds it running or done.
        const mine = await streams.createNewResumableStream(streamId, ({ signal }) => {
          signal.addEventListener("abort", () => abort?.abort(signal.reason), { once: true });
          return stream;
        }, undefined, {
          onStart: () => this.#change(chatId, { userId }, () => ({ entries: [{ type: "custom", customType: STREAM, data: { streamId } }] })),
          onEnd: ({ chunks }) => this.#saveStreamed(chatId, streamId, chunks),
        });
        // Nobody reads this copy: the generation goes on for readers.
        await mine?.cancel?.();
      })()),
    });
  }

  /** The GET handler's answer: the chat's running generation from its
   * start, or 204 when there is none. */
  async resume(chatId) {
    const active = await this.activeStreamId(chatId);
    const stream = active ? await this.#live().resumeExistingStream(active) : null;
    if (!stream) return new Response(null, { status: 204 });
    return new Response(stream.pipeThrough(new TextEncoderStream()), {
      headers: { "content-type": "text/event-stream", "cache-control": "no-cache", connection: "keep-alive", "x-vercel-ai-ui-message-stream": "v1", "x-accel-buffering": "no" },
    });
  }

  /** Stops the chat's running generation for every reader; what was
   * streamed up to the stop is stored as its message. */
  async stop(chatId) {
    const active = await this.activeStreamId(chatId);
    return active ? this.#live().stopStream(active) : "none";
  }

  /** Stores the assistant message the chunks of a generation make, after
   * its ai_stream entry. */
  async #saveStreamed(chatId, streamId, chunks) {
    const message = await assistantOf(chunks);
    if (!message) return;
    await this.#change(chatId, {}, (state) => {
      const at = state.entries.findLast((e) => e.type === "custom" && e.customType === STREAM && e.data?.streamId === streamId);
      if (!at) return null;
      return { parent: at.id, entries: [toEntry(message)] };
    });
  }

  /** Reads the chat and applies what decide returns (pages.js
   * changeBranch), making the chat's session first if it has none. */
  #change(chatId, meta, decide) {
    return changeBranch(this.client, chatSessionId(chatId), {
      read: () => this.#branch(chatId), decide, create: () => this.#create(chatId, meta),
    });
  }

  async #create(chatId, { userId, title }) {
    try {
      await this.client.create({
        id: chatSessionId(chatId), name: (title || `chat ${chatId}`).slice(0, 200),
        metadata: { ai_sdk: "chat", ai_chat: chatId, ai_user: userId === undefined ? "" : String(userId) },
      });
    } catch (e) {
      if (e?.code !== "exists") throw e;
    }
  }

  /** The chat's branch: its messages root to leaf (with their entries),
   * the active stream, every entry, the leaf and the sequence read. */
  async #branch(chatId) {
    const read = await readFrom(this.client, chatSessionId(chatId));
    if (!read) return { exists: false, messages: [], entries: [], active: null, leaf: "", sequence: 0 };
    const { branch, leaf } = branchOf(read.entries);
    const messages = [];
    let active = null;
    for (const e of branch) {
      const m = messageOf(e);
      if (m !== undefined) {
        messages.push({ id: e.id, parent: e.parentId ?? "", message: m });
        active = null;
      } else if (e.type === "custom" && e.customType === STREAM && typeof e.data?.streamId === "string") {
        active = e.data.streamId;
      }
    }
    return { exists: true, messages, entries: read.entries, active, leaf, sequence: read.sequence };
  }
}

/** A plan that makes next the chat: the common prefix kept, the rest
 * appended where they part. */
function rebranch(state, next) {
  const have = state.messages;
  let k = 0;
  while (k < have.length && k < next.length && isDeepStrictEqual(plain(have[k].message), plain(next[k]))) k++;
  if (k === have.length && k === next.length) return null;
  // Fewer messages than the chat holds: the leaf goes back to where
  // they end (the rest stays in the tree).
  if (k === next.length) return { moveTo: have[k].parent };
  return { parent: k < have.length ? have[k].parent : state.leaf, entries: next.slice(k).map(toEntry) };
}

/** The UIMessage an entry holds, if any. */
function messageOf(e) {
  // Entries of these types that another client wrote in another shape
  // are passed over: the chat still reads.
  if (e.type === "message" && isUIMessage(e.message?.uiMessage)) return e.message.uiMessage;
  if (e.type === "custom" && e.customType === MESSAGE && isUIMessage(e.data)) return e.data;
  return undefined;
}

const isUIMessage = (m) => m !== null && typeof m === "object" && typeof m.id === "string" && typeof m.role === "string" && Array.isArray(m.parts);

function checkMessages(messages) {
  if (!Array.isArray(messages)) throw new TypeError("saveChat: messages must be an array of UIMessages");
  messages.forEach((m, i) => {
    if (!isUIMessage(m)) {
      throw new TypeError(`saveChat: messages[${i}] is not a UIMessage (id, role and parts are required)`);
    }
  });
}

const titleOf = (messages) => {
  const first = messages.find((m) => m.role === "user");
  const text = first?.parts?.filter((p) => p?.type === "text").map((p) => p.text).join(" ") ?? "";
  return text.replace(/\s+/g, " ").trim().slice(0, 80);
};

/** The entry of a UIMessage: a pi message for user and assistant, a
 * custom entry otherwise; the UIMessage kept whole either way. */
function toEntry(message) {
  const m = plain(message);
  const blocks = [];
  for (const p of m.parts) {
    if (p?.type === "text" && typeof p.text === "string") blocks.push({ type: "text", text: p.text });
    else if (p?.type === "reasoning" && typeof p.text === "string" && m.role === "assistant") blocks.push({ type: "thinking", thinking: p.text });
    else if (m.role === "assistant" && typeof p?.type === "string" && (p.type.startsWith("tool-") || p.type === "dynamic-tool") && typeof p.toolCallId === "string") {
      const name = p.type === "dynamic-tool" ? p.toolName : p.type.slice(5);
      const args = p.input && typeof p.input === "object" && !Array.isArray(p.input) ? p.input : {};
      blocks.push({ type: "toolCall", id: p.toolCallId, name: String(name ?? "tool"), arguments: args });
    }
  }
  const timestamp = Date.now();
  if (m.role === "user") return { type: "message", message: { role: "user", content: blocks.length ? blocks : "", timestamp, uiMessage: m } };
  if (m.role === "assistant") {
    const meta = m.metadata && typeof m.metadata === "object" ? m.metadata : {};
    return {
      type: "message",
      message: {
        role: "assistant", content: blocks, api: "ai-sdk", provider: typeof meta.provider === "string" ? meta.provider : "ai-sdk",
        model: typeof meta.model === "string" ? meta.model : "unknown", stopReason: blocks.some((b) => b.type === "toolCall") ? "toolUse" : "stop",
        timestamp, uiMessage: m,
      },
    };
  }
  return { type: "custom", customType: MESSAGE, data: m };
}

/** The assistant UIMessage the SSE chunks of a UI message stream make. */
async function assistantOf(chunks) {
  const parsed = [];
  for (const event of chunks.join("").split("\n\n")) {
    const data = event.split("\n").filter((l) => l.startsWith("data: ")).map((l) => l.slice(6)).join("\n");
    if (!data || data === "[DONE]") continue;
    try {
      parsed.push(JSON.parse(data));
    } catch { /* not a chunk of the UI stream */ }
  }
  if (!parsed.length) return undefined;
  let last;
  const stream = new ReadableStream({ start(c) { parsed.forEach((p) => c.enqueue(p)); c.close(); } });
  try {
    for await (const m of readUIMessageStream({ stream, terminateOnError: false })) last = m;
  } catch { /* a stream cut off: what was read stands */ }
  return last ? plain(last) : undefined;
}

/** A value as JSON gives it back. */
function plain(v) {
  return JSON.parse(JSON.stringify(v));
}
