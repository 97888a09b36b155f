// Generations being streamed (the service's live ops, docs/protocol.md):
// a writer that starts one, puts its chunks and ends it; readers that
// join it from its first chunk, or come back after a cut, on any node;
// and a stop that ends it for everyone. Readers consume its records from
// JetStream in the tenant's account (@nats-io/jetstream, over the
// client's NATS connection: Client.connect).
import { createHash, randomBytes } from "node:crypto";

// A put holds at most this many UTF-16 units of chunks: its JSON stays
// under a request (1 MiB) however the text escapes. A larger chunk goes
// in pieces, each put saying that it continues.
const PUT_UNITS = 128 << 10;
// How often a reader checks its generation: one with records the reader
// has not had (its consumer lost with a node) is read again from after
// the last it had; one that expired under it is closed.
const WATCHDOG_MS = 5000;
// How long a writer goes on sending a record the service cannot take
// now (its node lost, a leader being elected, a rate limit): every
// record is safe to send again.
const RIDE_MS = 60000;

export class LiveWriter {
  /**
   * @param {import("./index.js").Client} client
   * @param {string} id the generation's id (any string, up to 512 bytes)
   * @param {{ttlMs?: number, onError?: (e: Error) => void}} [opts]
   */
  constructor(client, id, { ttlMs, onError } = {}) {
    this.client = client;
    this.id = id;
    this.ttlMs = ttlMs;
    this.writer = randomBytes(12).toString("hex");
    this.onError = onError ?? ((e) => console.error(`sessionlog: generation ${JSON.stringify(id)}: ${e.message}`));
    this.seq = 0;
    this.queue = []; // chunks not yet put
    this.ended = false; // done, stopped, or failed: nothing more is put
    this.stopped = false;
    this.flushing = null;
    // The chunks put, whole: what readers were given.
    this.written = [];
    this.partial = "";
    this.stopWatch = null;
    this.stopHandlers = [];
  }

  /** Starts the generation: the reply says whether this writer started
   * it (state "running", started), or where the one that exists stands. */
  async start() {
    const r = await this.#call("livestart", drop({ stream: this.id, writer: this.writer, ttlMs: this.ttlMs }));
    if (r.started) {
      this.seq = r.seq;
      this.subject = r.subject;
      this.jetstream = r.jetstream;
    } else {
      this.ended = true;
    }
    return r;
  }

  /** Calls fn once, when someone stops the generation (watched from now). */
  onStop(fn) {
    this.stopHandlers.push(fn);
    if (!this.stopWatch) this.stopWatch = this.#watchStop();
  }

  /** Queues chunk; chunks are put in order, those that come while a put
   * is on its way together in the next. */
  write(chunk) {
    if (this.ended) return;
    this.queue.push(String(chunk));
    if (!this.flushing) this.flushing = this.#flush().finally(() => { this.flushing = null; });
  }

  /** Puts what is queued and ends the generation; its state after. */
  async end() {
    while (this.flushing) await this.flushing;
    this.#closeWatch();
    if (this.ended) return this.stopped ? "stopped" : "failed";
    this.ended = true;
    try {
      const r = await this.#call("liveend", drop({ stream: this.id, writer: this.writer, after: this.seq, ttlMs: this.ttlMs }));
      return r.state;
    } catch (e) {
      this.onError(e);
      return "failed";
    }
  }

  async #flush() {
    while (this.queue.length && !this.ended) {
      const { chunks, continues, taken } = takePut(this.queue);
      let r;
      try {
        r = await this.#call("liveput", drop({ stream: this.id, writer: this.writer, after: this.seq, ttlMs: this.ttlMs, chunks, continues: continues || undefined }));
      } catch (e) {
        this.ended = true;
        this.queue = [];
        this.onError(e);
        // Readers are not left waiting for an end that will not come.
        await this.client.call("livestop", { stream: this.id }).catch(() => {});
        return;
      }
      if (r.state !== "running") {
        this.#stopped();
        return;
      }
      this.seq = r.seq;
      const put = [...chunks];
      put[0] = this.partial + put[0];
      this.partial = continues ? put.pop() : "";
      this.written.push(...put);
      this.queue.splice(0, taken);
      if (continues) this.queue[0] = this.queue[0].slice(chunks.at(-1).length);
    }
  }

  /** A call sent again while the service cannot take it now. */
  #call(op, body) {
    return this.client.call(op, body, { retryForMs: RIDE_MS });
  }

  #stopped() {
    if (this.stopped) return;
    this.stopped = this.ended = true;
    this.queue = [];
    this.#closeWatch();
    for (const fn of this.stopHandlers.splice(0)) fn();
  }

  async #watchStop() {
    this.stopMessages = await consume(this.client, this.jetstream, this.subject.slice(0, -1) + "x");
    if (this.ended && !this.stopped) return this.#closeWatch();
    for await (const m of this.stopMessages) {
      if (m.headers?.get("Sessionlog-Live") === "stop") {
        this.#stopped();
        break;
      }
    }
  }

  #closeWatch() {
    this.stopMessages?.stop();
    this.stopMessages = undefined;
  }
}

/** The chunks of the next put from the front of queue: whole chunks up
 * to PUT_UNITS, or a piece of the first when it alone is larger. */
function takePut(queue) {
  const chunks = [];
  let units = 0;
  for (const c of queue) {
    if (units + c.length > PUT_UNITS) break;
    chunks.push(c);
    units += c.length;
  }
  if (chunks.length) return { chunks, continues: false, taken: chunks.length };
  let cut = PUT_UNITS;
  // Never between the two halves of a surrogate pair.
  const code = queue[0].charCodeAt(cut - 1);
  if (code >= 0xd800 && code <= 0xdbff) cut--;
  return { chunks: [queue[0].slice(0, cut)], continues: true, taken: 0 };
}

/** Where generation id stands: {state: "none"|"running"|"done"|"stopped", seq, jetstream, subject}. */
export function liveState(client, id) {
  return client.call("livestate", { stream: id });
}

/** Stops generation id for everyone: its writer is told, its readers end. */
export function stopLive(client, id) {
  return client.call("livestop", { stream: id });
}

/**
 * A reader of generation id from its first chunk, as resumable-stream
 * gives one: what was streamed so far as one chunk (less its first
 * skipCharacters), then each chunk as it comes, closed at the end or the
 * stop. undefined when there is no such generation, null when it ended.
 * @returns {Promise<ReadableStream<string> | null | undefined>}
 */
export async function readLive(client, id, { skipCharacters = 0, state } = {}) {
  // Where the deployment keeps generations is the same for all of them:
  // once known, the consumer is made while the state is asked.
  const names = liveNames.get(client);
  const early = !state && names ? consume(client, names.jetstream, names.prefix + "." + liveKey(id) + ".*") : undefined;
  early?.catch(() => {});
  let st;
  try {
    st = state ?? (await liveState(client, id));
  } catch (e) {
    (await early?.catch(() => undefined))?.stop();
    throw e;
  }
  liveNames.set(client, { jetstream: st.jetstream, prefix: st.subject.slice(0, st.subject.lastIndexOf(".", st.subject.length - 3)) });
  if (st.state !== "running") {
    (await early?.catch(() => undefined))?.stop();
    return st.state === "none" ? undefined : null;
  }
  let messages = early ? await early.catch(() => undefined) : undefined;
  if (!messages || early && (names.jetstream !== st.jetstream || `${names.prefix}.${liveKey(id)}.*` !== st.subject)) {
    messages?.stop();
    messages = await consume(client, st.jetstream, st.subject);
  }
  let timer;
  const finish = () => {
    clearTimeout(timer);
    messages.stop();
  };
  return new ReadableStream({
    start(controller) {
      let backlog = [], live = false, piece = "", closed = false, last = 0;
      const close = () => {
        if (closed) return;
        closed = true;
        finish();
        try { controller.close(); } catch { /* the reader went away */ }
      };
      const fail = (e) => {
        if (closed) return;
        closed = true;
        finish();
        controller.error(e);
      };
      const emit = (s) => {
        try { controller.enqueue(s); } catch { close(); }
      };
      const take = (m) => {
        last = m.seq;
        const kind = m.headers?.get("Sessionlog-Live");
        if (kind === "chunks") {
          const chunks = m.json();
          const continues = m.headers.get("Sessionlog-Live-Continues") === "1";
          chunks[0] = piece + chunks[0];
          piece = continues ? chunks.pop() : "";
          if (live) chunks.forEach(emit);
          else backlog.push(...chunks);
        }
        if (!live && (m.seq >= st.seq || m.info.pending === 0)) {
          // What is joined holds a chunk begun; the rest of it comes as
          // one chunk.
          backlog.push(piece);
          piece = "";
          live = true;
          emit(backlog.join("").slice(skipCharacters));
          backlog = null;
        }
        return kind === "done" || kind === "stop";
      };
      // The watchdog: a generation the consumer stopped delivering (its
      // node lost, say) is read again from after the last record taken;
      // one that expired under the reader has no end record to read.
      let quiet = 0;
      const watch = () => {
        timer = setTimeout(async () => {
          try {
            const now = await liveState(client, id);
            if (now.state === "none") return close();
            quiet = now.seq > last ? quiet + 1 : 0;
            if (quiet >= 1) messages.stop(); // the loop below reads on, from after the last taken
          } catch { /* a failed check is no verdict */ }
          if (!closed) watch();
        }, WATCHDOG_MS);
      };
      watch();
      (async () => {
        for (let attempt = 0; !closed; attempt++) {
          try {
            for await (const m of messages) {
              attempt = 0;
              if (take(m)) return close();
            }
          } catch (e) {
            if (attempt >= 20) return fail(e);
          }
          if (closed) return;
          // The consumer ended without the end record: another, from
          // after the last record taken, on whichever node answers now.
          await new Promise((r) => setTimeout(r, Math.min(1000, 50 * 2 ** attempt)));
          try {
            messages = await consume(client, st.jetstream, st.subject, last + 1);
            quiet = 0;
          } catch (e) {
            if (attempt >= 20) return fail(e);
          }
        }
      })();
    },
    cancel() {
      finish();
    },
  });
}

const jetStreams = new WeakMap();
// The generations' JetStream stream and subject prefix, by client.
const liveNames = new WeakMap();

/** A generation's subject token (stream/live's Key): the first 16 bytes
 * of the SHA-256 of its id, in hex. */
function liveKey(id) {
  return createHash("sha256").update(id).digest("hex").slice(0, 32);
}

/** The records of subject from sequence from on (the first by
 * default), on an ordered consumer. */
async function consume(client, jetstream, subject, from = 0) {
  const js = await jetStreamOf(client);
  const opts = { filter_subjects: [subject] };
  if (from > 0) Object.assign(opts, { deliver_policy: "by_start_sequence", opt_start_seq: from });
  const consumer = await js.consumers.get(jetstream, opts);
  return consumer.consume();
}

/** The JetStream client on client's NATS connection. */
async function jetStreamOf(client) {
  if (!client.nats) throw new Error("sessionlog: generations are read over NATS: make the client with Client.connect(natsUrl)");
  let js = jetStreams.get(client);
  if (!js) {
    let mod;
    try {
      mod = await import("@nats-io/jetstream");
    } catch (e) {
      throw new Error(`sessionlog: reading generations needs @nats-io/jetstream (npm install @nats-io/jetstream): ${e.message}`);
    }
    js = mod.jetstream(client.nats.nc);
    jetStreams.set(client, js);
  }
  return js;
}

const drop = (o) => Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined && v !== null));
