// Reading a session's entries page by page, from an offset: what the
// framework adapters (langgraph.js, openai-agents.js) build their state
// from.

const PAGE = 1000;

/** The entries of session id from offset on, in append order, and the
 * session's sequence as of the last page (undefined: no such session). */
export async function readFrom(client, id, offset = 0) {
  const entries = [];
  let sequence = 0;
  try {
    for (;;) {
      const page = await client.entries(id, { offset: offset || undefined, limit: PAGE });
      entries.push(...page.entries);
      sequence = page.sequence;
      if (!page.next) break;
      offset = page.next;
    }
  } catch (e) {
    if (e?.code === "not_found") return undefined;
    throw e;
  }
  return { entries, sequence };
}
