// Times pi's own SessionManager opening a session file and building its
// context (what `sessionlog bench -pi` compares with ours). The package is
// @earendil-works/pi-coding-agent (1.x) or, before its rename,
// @mariozechner/pi-coding-agent; the first one installed is used.
// usage: node piopen.mjs <node_modules dir> <file.jsonl> <runs> <expected messages>
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const [modules, file, runsArg, wantArg] = process.argv.slice(2);
const names = ["@earendil-works/pi-coding-agent", "@mariozechner/pi-coding-agent"];
const name = names.find((n) => existsSync(join(modules, n, "package.json")));
if (!name) {
  console.error(`none of ${names.join(", ")} is installed in ${modules}`);
  process.exit(1);
}
const version = JSON.parse(readFileSync(join(modules, name, "package.json"), "utf8")).version;
const pi = await import(pathToFileURL(join(modules, name, "dist/index.js")).href);
const runs = Number(runsArg), want = Number(wantArg);
let best = Infinity;
for (let i = 0; i < runs; i++) {
  const t0 = process.hrtime.bigint();
  const sm = pi.SessionManager.open(file, undefined, "/bench");
  const ctx = sm.buildSessionContext();
  const ms = Number(process.hrtime.bigint() - t0) / 1e6;
  if (ctx.messages.length !== want) {
    console.error(`pi built ${ctx.messages.length} messages, want ${want}`);
    process.exit(1);
  }
  best = Math.min(best, ms);
}
console.log(JSON.stringify({ bestMs: best, node: process.version, pi: `${name}@${version}` }));
