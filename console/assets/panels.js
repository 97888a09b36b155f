// sessionlog console: a session's side panel — the context as its model
// sees it, one entry's pi JSON with its images, and its stats. Content is
// shown through DOM nodes and textContent only.
"use strict";

function renderContent(c) {
  if (typeof c === "string") return [h("pre", {}, c)];
  const out = [];
  for (const b of c || []) {
    if (b.type === "text") out.push(h("pre", {}, b.text));
    else if (b.type === "thinking") out.push(h("pre", { class: "muted" }, b.thinking || "(thinking)"));
    else if (b.type === "toolCall") out.push(h("pre", {}, `${b.name}(${JSON.stringify(b.arguments)})`));
    else if (b.type === "image" && /^image\/(png|jpeg|gif|webp)$/.test(b.mimeType || "") && typeof b.data === "string") {
      out.push(h("img", { class: "content", alt: "image", src: `data:${b.mimeType};base64,${b.data}` }));
    } else out.push(h("pre", { class: "muted" }, `[${b.type}]`));
  }
  return out;
}

async function showContext(st, panel) {
  const at = st.selected >= 0 ? st.nodes[st.selected].id : "";
  const ctx = await api("GET", st.path + "/context?" + qs({ at }));
  // Agents that record no thinking level (Claude Code, Codex) still
  // think: the messages say so where the level does not.
  const thought = ctx.messages.some((m) => Array.isArray(m.content) && m.content.some((b) => b && b.type === "thinking"));
  const level = thought && (!ctx.thinkingLevel || ctx.thinkingLevel === "off") ? "on" : ctx.thinkingLevel;
  const head = h("p", { class: "muted", id: "context-head" }, `Context ${at ? "at " + at : "of the leaf"}: ${ctx.messages.length} message(s)` +
    (level ? ` · thinking ${level}` : "") + (ctx.model ? ` · ${ctx.model.provider}/${ctx.model.modelId}` : ""));
  const list = h("div", { id: "context" });
  ctx.messages.forEach((m, k) => {
    list.append(h("div", { class: "msg", "data-source": (ctx.sources || [])[k] || "" },
      h("span", { class: "role" }, m.role), " ", h("span", { class: "muted" }, m.model || ""),
      ...renderContent(m.content !== undefined ? m.content : m.summary)));
  });
  panel.replaceChildren(head, list);
}

async function showEntry(st, panel) {
  if (st.selected < 0) { panel.replaceChildren(h("p", { class: "muted" }, "Select an entry in the tree.")); return; }
  const page = await api("GET", st.path + "/entries?" + qs({ offset: st.selected, limit: 1 }));
  const e = page.entries[0];
  const body = [h("p", {}, h("strong", {}, e.type), " ", h("span", { class: "muted" }, `${e.id} · parent ${e.parentId || "none"} · ${e.timestamp}`))];
  if (e.message) body.push(...renderContent(e.message.content));
  body.push(h("pre", { id: "entry-json" }, JSON.stringify(e, null, 2)));
  panel.replaceChildren(...body);
}

// showStats: the totals, and tokens and cost by day and model (the
// service's timeline).
async function showStats(st, panel) {
  const s = await api("GET", st.path + "/stats?timeline=true");
  const u = s.usage || {};
  // Model calls are counted as the usage page counts them: each API call
  // once, however many lines of the agent's file repeat it.
  const n = (x) => count(x || 0);
  const rows = [["entries", n(s.entries)], ["messages", n(s.messages)], ["tool calls", n(s.toolCalls)], ["compactions", n(s.compactions)], ["branch summaries", n(s.branchSummaries)],
    ["model calls", `${n((u.turns || 0) + (u.calls || 0))} (${n(u.turns)} replies, ${n(u.calls)} outside the conversation)`],
    ["input tokens", n(u.input)], ["output tokens", n(u.output)], ["cache read", n(u.cacheRead)], ["cache write", n(u.cacheWrite)], ["tokens", n(u.totalTokens)],
    ["cost", cost({ cost: u.cost || 0, unpricedCalls: u.unpricedCalls, unpricedTokens: u.unpricedTokens })]];
  const out = [h("table", { id: "stats" }, h("tbody", {}, rows.map(([k, v]) => h("tr", {}, h("th", {}, k), h("td", {}, v)))))];
  const days = s.timeline || [];
  const t = h("table", { id: "stats-by-model" }, h("thead", {}, h("tr", {}, ["day", "model", "replies", "other calls", "input", "output", "cache read", "cache write", "tokens", "cost"].map((c) => h("th", {}, c)))));
  t.append(h("tbody", {}, days.map((d) => h("tr", {}, h("td", {}, d.day || "(no time)"), h("td", {}, d.model || "(no model)"),
    [d.replies, d.calls, d.input, d.output, d.cacheRead, d.cacheWrite, d.tokens].map((x) => h("td", { class: "num" }, n(x))),
    h("td", { class: "num", title: unpricedNote(d) }, cost(d))))));
  out.push(h("h3", {}, "Tokens and cost by day and model"), days.length ? t : h("p", { class: "muted" }, "No model calls with usage."));
  if (s.timelineCut) out.push(h("p", { class: "muted" }, "More days and models than shown (the first 1,000)."));
  panel.replaceChildren(...out);
}
