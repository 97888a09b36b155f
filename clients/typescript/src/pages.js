// Reading a session's entries page by page, from an offset, and changing
// its branch conditionally: what the framework adapters (langgraph.js,
// openai-agents.js, adk.js, ai-sdk.js) build their state from and write
// it with.
import { ConflictError } from "./errors.js";

const PAGE = 1000;
// The first page is smaller: most sessions fit in it, and for those that
// do not it says how many pages to ask for at once sooner.
const FIRST_PAGE = 250;

/** The entries of session id from offset on, in append order, and the
 * session's sequence as of the first page (undefined: no such session).
 * After the first page, which says how many there are, the others are
 * asked for at once; a page cut short by its size is read on from where
 * it ended. Entries appended meanwhile may be left out: the sequence is
 * that of what was read, so that a write conditional on it fails rather
 * than miss them. */
export async function readFrom(client, id, offset = 0) {
  let first;
  try {
    first = await client.entries(id, { offset: offset || undefined, limit: FIRST_PAGE });
  } catch (e) {
    if (e?.code === "not_found") return undefined;
    throw e;
  }
  const entries = [...first.entries];
  const total = first.total ?? 0;
  if (first.next && first.next < total) {
    const starts = [];
    for (let o = first.next; o < total; o += PAGE) starts.push(o);
    // The rest existed when the first page was read, linearizably: a
    // copy as fresh as that one has them, and the node that answered it
    // has just made its own that fresh (no read barrier to write again).
    // A page from a copy that has not got them yet is asked again.
    const pages = await Promise.all(starts.map(async (o) => {
      const page = await client.entries(id, { offset: o, limit: PAGE, consistency: "replica", maxLagMs: 1000 });
      return page.total >= total ? page : client.entries(id, { offset: o, limit: PAGE });
    }));
    for (let i = 0; i < pages.length; i++) {
      entries.push(...pages[i].entries);
      // A page cut by size: the rest of its stretch, read on.
      const end = i + 1 < starts.length ? starts[i + 1] : total;
      if (pages[i].next && pages[i].next < end) entries.push(...(await readRange(client, id, pages[i].next, end)));
    }
  }
  return { entries, sequence: first.sequence };
}

/** The entries of session id at offsets start to end (excluded), read on
 * where a page is cut by its size. */
export async function readRange(client, id, start, end) {
  const entries = [];
  for (let next = start; next < end; ) {
    const page = await client.entries(id, { offset: next || undefined, limit: Math.min(PAGE, end - next) });
    entries.push(...page.entries);
    if (!page.next || !page.entries.length) break;
    next = page.next;
  }
  return entries;
}

/** The branch entries make, root first, and its leaf: pi's rule — the
 * last entry is the leaf; a leaf entry points at it ("" before the first
 * entry). A parent that is missing ends the walk. */
export function branchOf(entries) {
  const byId = new Map();
  let leaf = "";
  for (const e of entries) {
    byId.set(e.id, e);
    leaf = e.type === "leaf" ? (e.parentId ?? "") : e.id;
  }
  const branch = [];
  for (let e = byId.get(leaf); e; e = e.parentId ? byId.get(e.parentId) : undefined) branch.push(e);
  return { branch: branch.reverse(), leaf };
}

/**
 * The optimistic loop an adapter changes session id by: read() its state
 * ({exists, leaf, sequence, …}), decide(state) a plan — entries to append
 * (under parent, else the leaf), or a move of the leaf to moveTo, or
 * nothing — and apply it conditional on the session being as read; when
 * another writer got there first, read and decide again. A session never
 * written is made by create() before anything is appended to it.
 */
export async function changeBranch(client, id, { read, decide, create, attempts = 20 }) {
  for (let attempt = 0; ; attempt++) {
    const state = await read();
    const plan = await decide(state);
    if (!plan) return;
    try {
      if (!state.exists) {
        if (!plan.entries?.length) return; // nothing to move in a session never written
        await create();
        continue; // decided again on the session as made
      }
      if (plan.entries?.length) await client.append(id, plan.entries, { parent: plan.parent, ifSequence: state.sequence });
      else if (plan.moveTo !== undefined && plan.moveTo !== state.leaf) await client.move(id, plan.moveTo, { ifSequence: state.sequence });
      return;
    } catch (e) {
      if (!(e instanceof ConflictError) || attempt >= attempts) throw e;
    }
  }
}
