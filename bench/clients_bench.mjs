// Times the TypeScript client (clients/typescript) against a gateway:
// appends of one user message and contexts of a session, one at a time;
// prints the p50s in milliseconds as JSON. Over HTTP it also times bare
// POSTs with node:http on a keep-alive agent, of the same append (the
// floor of any Node client) and of the same body to a route that does
// nothing (what Node's HTTP costs by itself).
// usage: node clients_bench.mjs <clients/typescript dir> URL N [nats]
// (with "nats", URL is the node's NATS URL and the client goes over NATS)
import { pathToFileURL } from "node:url";
import { join } from "node:path";
import { randomBytes } from "node:crypto";
import http from "node:http";

const [dir, url, nArg, mode] = process.argv.slice(2);
const { Client } = await import(pathToFileURL(join(dir, "src/index.js")).href);
const n = Number(nArg);
const c = mode === "nats" ? await Client.connect(url) : new Client(url);
const sid = "tsbench-" + randomBytes(4).toString("hex");
await c.create({ id: sid });
const msg = { type: "message", message: { role: "user", content: "x".repeat(900), timestamp: 1 } };
const median = (xs) => { const s = [...xs].sort((a, b) => a - b); return s[Math.floor(s.length / 2)]; };
const appends = [], contexts = [], bare = [], bareAppends = [];
for (let i = 0; i < n; i++) { const t0 = performance.now(); await c.append(sid, [msg]); appends.push(performance.now() - t0); }
for (let i = 0; i < n; i++) { const t0 = performance.now(); await c.context(sid); contexts.push(performance.now() - t0); }
const out = { append: median(appends), context: median(contexts) };
if (mode !== "nats") {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const body = JSON.stringify({ entries: [msg] });
  const post = (path) => new Promise((resolve, reject) => {
    const req = http.request(url + path, { method: "POST", agent, headers: { "content-type": "application/json", "content-length": Buffer.byteLength(body) } }, (res) => {
      res.on("data", () => {});
      res.on("end", resolve);
    });
    req.setNoDelay(true);
    req.on("error", reject);
    req.end(body);
  });
  for (let i = 0; i < n; i++) { const t0 = performance.now(); await post(`/v1/sessions/${sid}/entries`); bareAppends.push(performance.now() - t0); }
  for (let i = 0; i < n; i++) { const t0 = performance.now(); await post("/v1/bench/nothing"); bare.push(performance.now() - t0); }
  out.bareAppend = median(bareAppends);
  out.bare = median(bare);
  agent.destroy();
}
console.log(JSON.stringify(out));
await c.close();
