// The client over NATS (request/reply, no gateway): SESSIONLOG_TEST_NATS_URL
// (and _USER, _PASSWORD), as `go test ./clients` sets them.
import { test } from "node:test";
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import * as sl from "../src/index.js";

const url = process.env.SESSIONLOG_TEST_NATS_URL;
let skip = url ? false : "SESSIONLOG_TEST_NATS_URL is not set";
if (!skip) {
  try { await import("@nats-io/transport-node"); } catch { skip = "@nats-io/transport-node is not installed (npm install)"; }
}
const opts = process.env.SESSIONLOG_TEST_USER ? { user: process.env.SESSIONLOG_TEST_USER, password: process.env.SESSIONLOG_TEST_PASSWORD } : {};
const user = (content) => ({ type: "message", message: { role: "user", content, timestamp: Date.now() } });

test("over NATS: operations, typed errors, the conflict loop, blobs", { skip }, async () => {
  const c = await sl.Client.connect(url, opts);
  try {
    // Found by service discovery ($SRV.INFO), not configured.
    assert.equal(c.service.subject, "sessionlog.v1");
    assert.equal(c.service.name, "sessionlog");
    const id = "tsn-" + randomBytes(6).toString("hex");
    await c.create({ id });
    await assert.rejects(c.create({ id }), sl.ExistsError);
    const a = await c.append(id, [user("one")]);
    await c.append(id, [user("two")]);
    await assert.rejects(c.append(id, [user("stale")], { ifSequence: a.sequence }), sl.ConflictError);
    await Promise.all([0, 1, 2].map((n) => c.update(id, () => [user(`w${n}`)])));
    const ctx = await c.context(id);
    assert.equal(ctx.messages.length, 5);
    await assert.rejects(c.open("nope-" + id), sl.NotFoundError);
    const data = randomBytes(3 << 20);
    const { blob } = await c.putBlob(data);
    assert.deepEqual(Buffer.from(await c.getBlob(blob.$blob)), data);
    const img = data.toString("base64");
    await c.append(id, [{ type: "message", message: { role: "user", timestamp: 1, content: [{ type: "image", data: img, mimeType: "image/png" }] } }]);
    const last = (await c.context(id)).messages.at(-1);
    assert.equal(last.content[0].data, img);
  } finally {
    await c.close();
  }
});
