// sessionlog console: the list of sessions (GET /v1/sessions), paged,
// sortable and filtered, each shown by what it is about.
"use strict";

// ago says how long ago an RFC 3339 time was, as a person would.
function ago(when, now = Date.now()) {
  const t = Date.parse(when);
  if (!Number.isFinite(t)) return when || "";
  const s = Math.max(0, Math.round((now - t) / 1000));
  const units = [[60, "s", 1], [3600, "min", 60], [86400, "h", 3600], [86400 * 30, "d", 86400], [86400 * 365, "mo", 86400 * 30]];
  for (const [limit, unit, size] of units) if (s < limit) return s < 10 && size === 1 ? "just now" : `${Math.floor(s / size)} ${unit} ago`;
  return `${Math.floor(s / (86400 * 365))} y ago`;
}

const FILTERS = [["name", "name contains"], ["cwd", "working dir"], ["label", "label(s), a,b"], ["meta", "meta k=v, …"], ["since", "since (RFC 3339)"], ["until", "until (RFC 3339)"]];

async function listView(main, params) {
  const form = h("form", { class: "filters", id: "filters" });
  for (const [k, ph] of FILTERS) form.append(h("input", { name: k, placeholder: ph, value: params.get(k) || "", "aria-label": k }));
  form.append(h("button", { type: "submit" }, "Filter"), h("a", { href: "#/" }, "clear"));
  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    const p = {};
    for (const [k] of FILTERS) p[k] = form.elements[k].value.trim();
    location.hash = "#/?" + qs(p);
  });
  const split = (v) => (v || "").split(",").map((s) => s.trim()).filter(Boolean);
  const query = { name: params.get("name"), cwd: params.get("cwd"), label: split(params.get("label")), meta: split(params.get("meta")), since: params.get("since"), until: params.get("until") };
  // A filtered page may come back short: read on until it is full.
  let sessions = [], next = params.get("cursor") || "";
  for (let i = 0; i < 20; i++) {
    const page = await api("GET", "/v1/sessions?" + qs({ ...query, limit: PAGE - sessions.length, cursor: next }));
    sessions = sessions.concat(page.sessions);
    next = page.next || "";
    if (!next || sessions.length >= PAGE) break;
  }
  const table = h("table", { id: "sessions" });
  let sortKey = "updated", asc = false;
  // What a session is about first, as pi's picker shows it: its name, or
  // its first user message; then what it used and when.
  const cols = [["about", "session"], ["model", "model"], ["entries", "entries"], ["tokens", "tokens"], ["cost", "cost"], ["updated", "updated"], ["labels", "labels"]];
  // A session's time is when it happened (its last entry's), not when it
  // was last written (an import's).
  for (const s of sessions) {
    s.about = s.name || s.firstMessage || s.id;
    s.when = s.lastActivity || s.updated;
  }
  // A subagent's session (a Claude Code Task's) sits under the session
  // that started it, when that one is on the page.
  const byId = new Map(sessions.map((s) => [s.id, s]));
  const subagent = (s) => s.parentSession && byId.has(s.parentSession) && s.id.startsWith(s.parentSession + "_");
  const render = () => {
    const order = (a, b) => {
      const k = sortKey === "updated" ? "when" : sortKey;
      const x = a[k] ?? "", y = b[k] ?? "";
      return (x < y ? -1 : x > y ? 1 : 0) * (asc ? 1 : -1);
    };
    const rows = [];
    for (const s of [...sessions].filter((s) => !subagent(s)).sort(order)) {
      rows.push([s, false]);
      for (const c of sessions.filter((c) => subagent(c) && c.parentSession === s.id).sort(order)) rows.push([c, true]);
    }
    table.replaceChildren(
      h("thead", {}, h("tr", {}, cols.map(([k, t]) => h("th", { onclick: () => { asc = sortKey === k ? !asc : true; sortKey = k; render(); } }, t + (sortKey === k ? (asc ? " ▲" : " ▼") : ""))))),
      h("tbody", {}, rows.map(([s, sub]) => h("tr", { class: sub ? "subagent" : "" },
        h("td", { class: "about" },
          sub ? h("span", { class: "muted small" }, "↳ subagent: ") : null,
          h("a", { href: "#/s/" + encodeURIComponent(s.id), class: "session-link", title: s.firstMessage || "" }, s.about),
          h("div", { class: "muted small" }, [s.id, s.cwd].filter(Boolean).join(" · "))),
        h("td", { class: "muted" }, s.model || ""),
        h("td", { class: "num" }, s.entries.toLocaleString("en")),
        h("td", { class: "num" }, s.tokens ? s.tokens.toLocaleString("en") : ""),
        h("td", { class: "num", title: s.unpricedTokens ? `${s.unpricedTokens.toLocaleString("en")} tokens of models without a price are not in the cost` : "" },
          s.unpricedTokens ? (s.cost ? money(s.cost) + " + unknown" : "unknown") : s.cost ? money(s.cost) : ""),
        h("td", { class: "muted updated", title: s.lastActivity ? `happened ${s.lastActivity}, written ${s.updated}` : s.updated }, ago(s.when)),
        h("td", {}, (s.labels || []).map((l) => h("span", { class: "tag" }, l)))))));
  };
  render();
  const more = next ? h("a", { href: "#/?" + qs({ ...Object.fromEntries(params), cursor: next }), id: "next-page" }, "next page →") : null;
  main.append(...[form, table, sessions.length ? null : h("p", { class: "muted" }, "No sessions match."), more].filter(Boolean));
  return {};
}
