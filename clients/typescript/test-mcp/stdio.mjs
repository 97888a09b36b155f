// The MCP TypeScript SDK's own client (@modelcontextprotocol/sdk) starts
// `sessionlog mcp` over stdio, as an agent host does, and uses its tools:
//   node stdio.mjs SESSIONLOG_BINARY DATA_DIR SESSION WORD
// prints one JSON line: the tools listed, what a search found, and the
// context's text.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const [bin, data, session, word] = process.argv.slice(2);
const client = new Client({ name: "sessionlog-test", version: "1.0.0" });
await client.connect(new StdioClientTransport({ command: bin, args: ["mcp", "-data", data] }));
const server = client.getServerVersion();
const { tools } = await client.listTools();
const text = (r) => r.content.filter((c) => c.type === "text").map((c) => c.text).join("");
let search;
for (let i = 0; i < 100; i++) {
  search = await client.callTool({ name: "search_sessions", arguments: { query: word } });
  if (!search.isError && search.structuredContent?.hits?.length) break;
  await new Promise((r) => setTimeout(r, 100)); // the index follows the stream
}
const context = await client.callTool({ name: "get_context", arguments: { session, max_tokens: 500 } });
const missing = await client.callTool({ name: "get_tree", arguments: { session: "nosuch" } });
const { resourceTemplates } = await client.listResourceTemplates();
console.log(JSON.stringify({
  server, tools: tools.map((t) => t.name).sort(), hits: search.structuredContent?.hits ?? [], searchText: text(search),
  context: text(context), contextStructured: context.structuredContent, missing: { isError: missing.isError, text: text(missing) },
  templates: resourceTemplates.map((t) => t.uriTemplate),
}));
await client.close();
