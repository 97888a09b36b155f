// The NATS transport: request/reply to the service's subjects, on the
// official client (@nats-io/transport-node), loaded when first used.
import { TimeoutError, UnavailableError, errorFromReply } from "./errors.js";

export async function connectNats(servers, { user, password, subject = "sessionlog.v1", timeoutMs = 30000 } = {}) {
  let mod;
  try {
    mod = await import("@nats-io/transport-node");
  } catch (e) {
    throw new Error(`the NATS transport needs @nats-io/transport-node (npm install @nats-io/transport-node): ${e.message}`);
  }
  const nc = await mod.connect({ servers, ...(user !== undefined ? { user, pass: password ?? "" } : {}) });
  return new NatsTransport(nc, subject, timeoutMs);
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
    const text = msg.string();
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
