// The NATS transport: request/reply to the service's subjects, on the
// official client (@nats-io/transport-node), loaded when first used.
import { TimeoutError, UnauthorizedError, UnavailableError, errorFromReply, transportError } from "./errors.js";

export async function connectNats(servers, { user, password, subject, timeoutMs = 30000 } = {}) {
  let mod;
  try {
    mod = await import("@nats-io/transport-node");
  } catch (e) {
    throw new Error(`the NATS transport needs @nats-io/transport-node (npm install @nats-io/transport-node): ${e.message}`);
  }
  let nc;
  try {
    nc = await mod.connect({ servers, ...(user !== undefined ? { user, pass: password ?? "" } : {}) });
  } catch (e) {
    // As over HTTP: credentials refused are UnauthorizedError, a server
    // that cannot be reached UnavailableError.
    if (/authorization|authentication/i.test(String(e?.message ?? e))) {
      throw new UnauthorizedError("unauthorized", `${servers} refused the credentials: ${e?.message ?? e}`);
    }
    const err = transportError(e, `a connection to ${servers}`);
    throw err instanceof UnavailableError ? err : e;
  }
  let info;
  if (!subject) {
    // Service discovery: the sessionlog service says where it listens.
    try {
      info = await discover(nc, timeoutMs);
    } catch (e) {
      await nc.close();
      throw e;
    }
    subject = info.subject;
  }
  const t = new NatsTransport(nc, subject, timeoutMs);
  t.info = info;
  return t;
}

/** Asks the sessionlog service for its description ($SRV.INFO.sessionlog,
 * the NATS micro protocol) and returns it with the subject its operations
 * are under. */
async function discover(nc, timeoutMs) {
  let msg;
  try {
    msg = await nc.request("$SRV.INFO.sessionlog", "", { timeout: Math.min(timeoutMs, 10000) });
  } catch (e) {
    throw new UnavailableError("unavailable", `no sessionlog service answers on this NATS ($SRV.INFO.sessionlog): ${e?.message ?? e}`);
  }
  const info = JSON.parse(msg.string());
  const create = (info.endpoints ?? []).find((e) => e.subject?.endsWith(".create"));
  if (!create) throw new UnavailableError("unavailable", "the sessionlog service described no create endpoint");
  return { name: info.name, id: info.id, version: info.version, metadata: info.metadata ?? {}, subject: create.subject.slice(0, -".create".length) };
}

class NatsTransport {
  constructor(nc, subject, timeoutMs) {
    this.nc = nc;
    this.subject = subject;
    this.timeoutMs = timeoutMs;
  }

  async request(op, body) {
    let msg;
    try {
      msg = await this.nc.request(`${this.subject}.${op}`, JSON.stringify(body), { timeout: this.timeoutMs });
    } catch (e) {
      const text = String(e?.message ?? e);
      if (/no responders/i.test(text) || e?.code === "503") {
        throw new UnavailableError("unavailable", `no sessionlog service answers on ${this.subject}.${op}`);
      }
      throw new TimeoutError("timeout", `no reply to ${op}: ${text}`);
    }
    // Node's own UTF-8 decoding: several times TextDecoder's (msg.string())
    // on the megabytes a page of entries can hold.
    const text = Buffer.from(msg.data.buffer, msg.data.byteOffset, msg.data.byteLength).toString("utf8");
    let payload;
    try { payload = JSON.parse(text); } catch { payload = text; }
    if (msg.headers?.get("Nats-Service-Error-Code")) {
      throw errorFromReply(Number(msg.headers.get("Nats-Service-Error-Code")) || 0, payload);
    }
    return payload;
  }

  async close() {
    await this.nc.close();
  }
}
