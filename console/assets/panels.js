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
  const head = h("p", { class: "muted" }, `Context ${at ? "at " + at : "of the leaf"}: ${ctx.messages.length} message(s)` +
    (ctx.thinkingLevel ? ` · thinking ${ctx.thinkingLevel}` : "") + (ctx.model ? ` · ${ctx.model.provider}/${ctx.model.modelId}` : ""));
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
  const rows = [["entries", s.entries], ["messages", s.messages], ["tool calls", s.toolCalls], ["compactions", s.compactions], ["branch summaries", s.branchSummaries],
    ["input tokens", u.input], ["output tokens", u.output], ["cache read", u.cacheRead], ["cache write", u.cacheWrite], ["cost", u.cost]];
  const out = [h("table", { id: "stats" }, h("tbody", {}, rows.map(([k, v]) => h("tr", {}, h("th", {}, k), h("td", {}, v === undefined ? "" : String(v))))))];
  const days = s.timeline || [];
  const t = h("table", { id: "stats-by-model" }, h("thead", {}, h("tr", {}, ["day", "model", "replies", "input", "output", "cost"].map((c) => h("th", {}, c)))));
  t.append(h("tbody", {}, days.map((d) => h("tr", {}, h("td", {}, d.day), h("td", {}, d.model), h("td", {}, String(d.replies)),
    h("td", {}, String(d.input)), h("td", {}, String(d.output)), h("td", {}, d.cost.toFixed(4))))));
  out.push(h("h3", {}, "Tokens and cost by day and model"), days.length ? t : h("p", { class: "muted" }, "No assistant replies with usage."));
  if (s.timelineCut) out.push(h("p", { class: "muted" }, "More days and models than shown (the first 1,000)."));
  panel.replaceChildren(...out);
}
