// sessionlog console: search across sessions (GET /v1/search) with its
// filters and, within a session, its scope; hits grouped by session, best
// session first, each hit's matches marked and linked to its entry in the
// session's tree. Snippets are shown as text: matches are byte ranges of
// their UTF-8, cut out and wrapped in <mark> as DOM nodes.
"use strict";

const SEARCH_FILTERS = [["tool", "tool"], ["path", "file or directory"], ["model", "provider/model"], ["agent", "agent"], ["cwd", "working dir"],
  ["label", "label"], ["since", "since (RFC 3339)"], ["until", "until (RFC 3339)"]];
const ROLES = ["", "user", "assistant", "toolResult"];
const HITS = 50;

async function searchView(main, params) {
  const q = params.get("q") || "", session = params.get("session") || "";
  const offset = Math.max(0, parseInt(params.get("offset") || "0", 10) || 0);
  document.getElementById("search-q").value = q;
  const form = h("form", { class: "filters", id: "search-filters" },
    h("select", { name: "role", "aria-label": "role" }, ROLES.map((r) => h("option", { value: r, selected: r === (params.get("role") || "") }, r || "any role"))),
    SEARCH_FILTERS.map(([k, ph]) => h("input", { name: k, placeholder: ph, value: params.get(k) || "", "aria-label": k })),
    session ? [h("input", { name: "session", value: session, "aria-label": "session", readonly: true }),
      h("select", { name: "scope", "aria-label": "scope" }, [["branch", "its current branch"], ["subtree", "the subtree at…"], ["session", "every branch"]]
        .map(([v, t]) => h("option", { value: v, selected: v === (params.get("scope") || "branch") }, t))),
      h("input", { name: "at", placeholder: "at entry", value: params.get("at") || "", "aria-label": "at" })] : null,
    h("button", { type: "submit" }, "Search"));
  const query = () => {
    const p = { q: document.getElementById("search-q").value, role: form.elements.role.value };
    for (const [k] of SEARCH_FILTERS) p[k] = form.elements[k].value.trim();
    if (session) Object.assign(p, { session, scope: form.elements.scope.value, at: form.elements.at.value.trim() });
    return p;
  };
  form.addEventListener("submit", (ev) => { ev.preventDefault(); location.hash = "#/search?" + qs(query()); });
  main.append(form);
  if (!q.trim()) return {};
  const asked = {};
  for (const k of ["q", "role", "session", "scope", "at", ...SEARCH_FILTERS.map(([k]) => k)]) if (params.get(k)) asked[k] = params.get(k);
  const res = await api("GET", "/v1/search?" + qs({ ...asked, limit: HITS, offset }));
  main.append(h("p", { class: "muted", id: "search-summary" }, `${res.totalEstimated ? "about " : ""}${res.total} hit(s) for “${q}”` + (res.total > HITS ? `, ${offset + 1}–${offset + res.hits.length} shown` : "")));
  // Grouped by session, the sessions in the order of their best hits.
  const groups = new Map();
  for (const hit of res.hits) {
    if (!groups.has(hit.session)) groups.set(hit.session, []);
    groups.get(hit.session).push(hit);
  }
  // Each group is named as the list names its session: its name, else
  // its first message (the id beneath).
  const titles = new Map(await Promise.all([...groups.keys()].map((sid) =>
    api("GET", "/v1/sessions/" + encodeURIComponent(sid)).then((r) => [sid, r.session.name || r.session.firstMessage || ""], () => [sid, ""]))));
  const list = h("div", { id: "hits" });
  for (const [sid, hits] of groups) {
    const link = "#/s/" + encodeURIComponent(sid);
    list.append(h("section", { class: "hit-group", "data-session": sid },
      h("h3", {}, h("a", { href: link, title: sid }, titles.get(sid) || sid), " ", h("span", { class: "muted small" }, `${titles.get(sid) ? sid + " · " : ""}${hits.length} hit(s)`)),
      hits.map((hit) => h("div", { class: "hit" + (hit.outsideContext ? " outside" : ""), onclick: () => { location.hash = link + "?entry=" + encodeURIComponent(hit.entry); } },
        h("div", {}, h("a", { href: link + "?entry=" + encodeURIComponent(hit.entry), class: "entry-link" }, hit.entry), " ",
          h("span", { class: "muted" }, `${hit.role || hit.type} · ${hit.timestamp}`),
          hit.outsideContext ? h("span", { class: "tag" }, "summarized: outside the context") : null),
        snippet(hit)))));
  }
  main.append(list);
  const pages = h("div", { class: "toolbar" });
  if (offset > 0) pages.append(h("a", { href: "#/search?" + qs({ ...asked, offset: Math.max(0, offset - HITS) }), id: "prev-hits" }, "← previous"));
  if (offset + res.hits.length < Math.min(res.total, 1000)) pages.append(h("a", { href: "#/search?" + qs({ ...asked, offset: offset + HITS }), id: "next-hits" }, "next →"));
  main.append(pages);
  return {};
}

// snippet is a hit's text with its matches marked (byte ranges of its
// UTF-8).
function snippet(hit) {
  const bytes = new TextEncoder().encode(hit.snippet), dec = new TextDecoder();
  const part = (a, b) => dec.decode(bytes.subarray(a, b));
  const out = h("div", { class: "snippet" });
  let at = 0;
  for (const [s, e] of hit.matches) {
    if (s < at || e > bytes.length) continue;
    out.append(part(at, s), h("mark", {}, part(s, e)));
    at = e;
  }
  out.append(part(at, bytes.length));
  return out;
}
