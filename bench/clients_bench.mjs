// Times the TypeScript client (clients/typescript) against a gateway:
// appends of one user message and contexts of a session, one at a time;
// prints the p50s in milliseconds as JSON.
// usage: node clients_bench.mjs <clients/typescript dir> URL N [nats]
// (with "nats", URL is the node's NATS URL and the client goes over NATS)
import { pathToFileURL } from "node:url";
import { join } from "node:path";
import { randomBytes } from "node:crypto";

const [dir, url, nArg, mode] = process.argv.slice(2);
const { Client } = await import(pathToFileURL(join(dir, "src/index.js")).href);
const n = Number(nArg);
const c = mode === "nats" ? await Client.connect(url) : new Client(url);
const sid = "tsbench-" + randomBytes(4).toString("hex");
await c.create({ id: sid });
const msg = { type: "message", message: { role: "user", content: "x".repeat(900), timestamp: 1 } };
const median = (xs) => { const s = [...xs].sort((a, b) => a - b); return s[Math.floor(s.length / 2)]; };
const appends = [], contexts = [];
for (let i = 0; i < n; i++) { const t0 = performance.now(); await c.append(sid, [msg]); appends.push(performance.now() - t0); }
for (let i = 0; i < n; i++) { const t0 = performance.now(); await c.context(sid); contexts.push(performance.now() - t0); }
console.log(JSON.stringify({ append: median(appends), context: median(contexts) }));
await c.close();
