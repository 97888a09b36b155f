// Reads every session named on the command line with the TypeScript
// client over HTTP — its tree, entries and context, page by page — and
// prints what it read of each as one JSON line.
// Usage: node read.mjs CLIENT_INDEX_JS URL ID...
const [index, url, ...ids] = process.argv.slice(2);
const { Client } = await import(index);
const c = new Client(url);
const out = {};
for (const id of ids) {
  const got = { tree: 0, entries: 0, context: 0 };
  for (let offset = 0; ;) {
    const p = await c.tree(id, { offset });
    got.tree += p.nodes.length;
    if (!p.next) break;
    offset = p.next;
  }
  for (let offset = 0; ;) {
    const p = await c.entries(id, { offset, limit: 1000 });
    got.entries += p.entries.length;
    if (!p.next) break;
    offset = p.next;
  }
  let at;
  for (let offset = 0; ;) {
    const p = await c.context(id, { at, offset });
    got.context += p.messages.length;
    at = at || p.leaf || undefined;
    if (!p.next) break;
    offset = p.next;
  }
  out[id] = got;
}
await c.close();
console.log(JSON.stringify(out));
