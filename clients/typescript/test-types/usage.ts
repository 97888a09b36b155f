// A program a user of the client writes, type-checked by `tsc --noEmit`
// against the declarations (clients/types_test.go runs it): every reply is
// used through its declared type, so a declaration that drifts from what
// the service answers, or that does not compile, fails.
import {
  Client, ConflictError, errorClasses, errorFromReply, newId, SessionlogError,
  type AppendReply, type ContextReply, type EntriesReply, type Entry, type GetReply, type Listing, type ListReply,
  type SessionReply, type StatsReply, type TreeReply, type WaitReply, type BlobReply, type SearchReply, type UsageReport,
} from "@sessionlog/client";
import type { SessionlogSaver } from "@sessionlog/client/langgraph";
import type { SessionlogSession } from "@sessionlog/client/openai-agents";

export async function use(c: Client): Promise<string[]> {
  const out: string[] = [];
  const created: SessionReply = await c.create({ cwd: "/w", name: "n" });
  const s: Listing = created.session;
  out.push(s.id, s.created, s.updated, String(s.entries), s.name ?? "", (s.labels ?? []).join(","));
  if (created.deleted) out.push(String(created.deleted.blobsYoung));
  const entries: Entry[] = [{ type: "message", message: { role: "user", content: "hi", timestamp: 1 } }];
  const a: AppendReply = await c.append(s.id, entries, { ifSequence: created.sequence ?? 0 });
  out.push(a.leaf, String(a.sequence), ...a.entries.map((e) => e.id + "<-" + e.parentId));
  const ctx: ContextReply = await c.context(s.id, { consistency: "replica", maxLagMs: 500 });
  out.push(ctx.thinkingLevel, ctx.model?.modelId ?? "", String(ctx.messages.length), String(ctx.total), ...(ctx.apart ?? []).map((p) => p.origin));
  const st: StatsReply = await c.stats(s.id);
  out.push(String(st.usage.totalTokens), String(st.byRole["user"] ?? 0), String(st.timeline?.[0]?.cost ?? 0));
  const tree: TreeReply = await c.tree(s.id);
  out.push(...tree.nodes.map((n) => `${n.row}:${n.id}:${n.parentId ?? ""}:${n.depth ?? 0}`));
  const es: EntriesReply = await c.entries(s.id, { limit: 10 });
  out.push(String(es.total), String(es.next ?? -1), ...es.entries.map((e) => e.type));
  const one: GetReply = await c.get(s.id, a.entries[0]!.id);
  out.push(one.entry.type, String(one.sequence));
  const w: WaitReply = await c.wait(s.id, a.sequence);
  out.push(w.leaf);
  const list: ListReply = await c.list({ limit: 5, labels: ["x"] });
  out.push(...list.sessions.map((l) => l.firstMessage ?? l.id), list.next ?? "");
  for await (const l of c.sessions(50, { cwd: "/w" })) out.push(l.id);
  const found: SearchReply = await c.search("hi", { limit: 3 });
  out.push(...found.hits.map((h) => `${h.session}/${h.entry} ${h.snippet.slice(h.matches[0]?.[0] ?? 0)}`));
  const mine: SearchReply = await c.search("hi", { session: s.id, scope: "subtree", at: a.leaf });
  const spent: UsageReport = await c.usage({ by: ["month", "agent"], since: "2026-01-01", project: "/work" });
  const perTurn: number = spent.total.costPerTurn + (spent.rows[0]?.tokensPerTurn ?? 0) + (spent.cut ? 1 : 0);
  console.log(perTurn, spent.rows.map((r) => r.day ?? r.month));
  out.push(...mine.hits.filter((h) => !h.outsideContext).map((h) => h.entry));
  const blob: BlobReply = await c.putBlob("data");
  out.push(blob.blob.$blob, String(blob.blob.size));
  try {
    await c.update(s.id, (leaf) => [{ type: "label", id: newId(), parentId: leaf, targetId: leaf, label: "l" }]);
  } catch (err) {
    if (err instanceof ConflictError) out.push(err.leaf ?? "", String(err.sequence ?? 0));
    else if (err instanceof SessionlogError) out.push(err.code, String(err.status));
  }
  out.push(errorFromReply(409, { error: { code: "conflict" } }).code, String(Object.keys(errorClasses).length));
  for await (const ev of c.events(s.id, { after: 0 })) {
    out.push(String(ev.id), ev.kind);
    break;
  }
  return out;
}

export function adapters(saver: SessionlogSaver, session: SessionlogSession): string[] {
  return [saver.namespace, saver.sessionId("t"), session.sessionId, session.id];
}
