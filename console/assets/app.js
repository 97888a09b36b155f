// sessionlog console: a single page over the gateway's own API (same
// origin, same credentials). Everything a session holds is shown through
// textContent and DOM nodes, never as HTML.
"use strict";

const ROW = 24; // px per tree row
const PAGE = 50; // sessions per list page
const BLOCK = 200; // entries fetched at once for the tree's text

// h makes an element: h("td", {class: "x", onclick: f}, "text", child…).
// visible replaces the bidirectional embeddings, overrides and isolates
// in text a session holds, which would reorder what is shown around them
// (an "evil" that reads "live"), and control characters but for tabs and
// line ends (an escape sequence a tool printed): every text the console
// shows passes here.
function visible(s) {
  return s.replace(/[\u0000-\u0008\u000B\u000C\u000E-\u001F\u007F-\u009F\u202A-\u202E\u2066-\u2069]/g, "\uFFFD");
}

function h(tag, attrs, ...kids) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else if (k === "class") el.className = v;
    else if (k === "text") el.textContent = visible(String(v));
    else el.setAttribute(k, v === true ? "" : v);
  }
  for (const kid of kids.flat()) {
    if (kid === null || kid === undefined || kid === false) continue;
    el.append(kid instanceof Node ? kid : document.createTextNode(visible(String(kid))));
  }
  return el;
}

// ApiError carries the protocol's error object (code, message, leaf,
// sequence, field).
class ApiError extends Error {
  constructor(e, status) {
    super(e.message || String(status));
    Object.assign(this, e);
    this.status = status;
  }
}

async function api(method, path, body) {
  const res = await fetch(path, {
    method,
    credentials: "same-origin",
    headers: body ? { "Content-Type": "application/json" } : {},
    body: body ? JSON.stringify(body) : undefined,
  });
  let data = {};
  try { data = await res.json(); } catch (_) { /* not JSON: the status says it */ }
  if (!res.ok) throw new ApiError(data.error || { code: String(res.status), message: res.statusText }, res.status);
  return data;
}

function banner(text, ok) {
  const b = document.getElementById("banner");
  b.hidden = !text;
  b.className = ok ? "ok" : "";
  b.textContent = visible(text || "");
}

function explain(e) {
  if (e.code === "conflict") {
    return `Conflict: the session changed before this action was written (it is now at sequence ${e.sequence}` +
      (e.leaf ? `, leaf ${e.leaf}` : "") + "). Nothing was written. The view shows the session as it is now: look, then try again.";
  }
  return `${e.code || "error"}: ${e.message}` + (e.field ? ` (${e.field})` : "");
}

function qs(params) {
  const u = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) {
    for (const x of [].concat(v)) if (x !== undefined && x !== null && x !== "") u.append(k, x);
  }
  return u.toString();
}

function hashParams() {
  const [path, query] = location.hash.slice(1).split("?");
  return { path: path || "/", params: new URLSearchParams(query || "") };
}

let current = null; // the view shown: its close() is called on leaving

async function route() {
  if (current && current.close) current.close();
  current = null;
  banner("");
  const { path, params } = hashParams();
  const main = document.getElementById("main");
  main.replaceChildren();
  try {
    if (path.startsWith("/s/")) current = await sessionView(main, decodeURIComponent(path.slice(3)), params.get("entry"));
    else if (path === "/search") current = await searchView(main, params);
    else if (path === "/usage") current = await usageView(main, params);
    else current = await listView(main, params);
  } catch (e) {
    banner(explain(e));
  }
}

// callsOf are an assistant's tool calls as its agent showed them: with
// what each acted on (Read(src/App.tsx)), where the tree says.
function callsOf(n) {
  return n.calls && n.calls.length === n.tools.length ? n.calls : n.tools;
}

// ---- one session ----

async function sessionView(main, id, wantEntry) {
  const path = "/v1/sessions/" + encodeURIComponent(id);
  const [opened, tree] = await Promise.all([api("GET", path), fetchTree(path)]);
  performance.mark("tree-fetched");
  const st = {
    id, path, name: opened.session.name || "", nodes: [], byId: new Map(), kids: new Map(), leaf: tree.leaf, seq: tree.sequence,
    apart: apartOf(tree), collapsed: new Set(), selected: -1, texts: new Map(), blocks: new Set(), rows: [], onBranch: new Set(), tab: "context",
    view: "conversation", opened: new Set(),
  };
  for (const n of tree.nodes) addNode(st, n);

  // Named as the list names it: its name, else its first message.
  st.about = opened.session.firstMessage || "";
  const title = h("h2", { id: "session-title", title: id }, st.name || st.about || id);
  const live = h("span", { class: "live off", id: "live" }, "live");
  const act = (label, fn, idAttr) => h("button", { id: idAttr, onclick: () => fn().catch(async (e) => { banner(explain(e)); if (e.code === "conflict") await reload(); }) }, label);
  const toolbar = h("div", { class: "toolbar" },
    act("Rename", async () => {
      const name = prompt("Session name", st.name);
      if (name === null) return;
      await api("POST", path + "/name", { name, ifSequence: st.seq });
      banner("Renamed.", true);
    }, "act-name"),
    act("Label entry", async () => {
      const n = need(st);
      const label = prompt(`Label for ${n.id} (empty clears it)`, n.label || "");
      if (label === null) return;
      await api("POST", path + "/label", { target: n.id, label, ifSequence: st.seq });
      banner(`Labelled ${n.id}.`, true);
    }, "act-label"),
    act("Move leaf here", async () => {
      const n = need(st);
      await api("POST", path + "/move", { target: n.id, ifSequence: st.seq });
      banner(`Leaf moved to ${n.id}.`, true);
    }, "act-move"),
    act("Fork here", async () => {
      const n = need(st);
      const r = await api("POST", path + "/fork", { at: n.id });
      location.hash = "#/s/" + encodeURIComponent(r.session.id);
    }, "act-fork"),
    h("button", { id: "act-view", onclick: (ev) => {
      st.view = st.view === "conversation" ? "entries" : "conversation";
      ev.target.textContent = st.view === "conversation" ? "All entries" : "Conversation";
      relayout();
    } }, "All entries"),
    h("button", { onclick: () => { st.collapsed.clear(); relayout(); } }, "Expand all"),
    h("button", { onclick: () => { for (const [pid, k] of st.kids) if (k.length > 1) st.collapsed.add(pid); relayout(); } }, "Collapse branches"),
    // Search this session: its current branch, or the selected entry's.
    h("button", { id: "act-search", onclick: () => {
      const q = prompt("Search this session's branch for", "");
      if (!q) return;
      const at = st.selected >= 0 ? st.nodes[st.selected].id : "";
      location.hash = "#/search?" + qs({ q, session: id, scope: "branch", at });
    } }, "Search branch"),
    live);

  const treeBox = h("div", { class: "tree", id: "tree", tabindex: "0" });
  const spacer = h("div", { class: "spacer" });
  treeBox.append(spacer);
  const panel = h("div", { class: "panel", id: "panel" });
  const tabs = h("div", { class: "tabs" });
  for (const t of ["context", "entry", "stats"]) {
    tabs.append(h("button", { id: "tab-" + t, onclick: () => { st.tab = t; showTab(); } }, t));
  }
  const right = h("div", {}, tabs, panel);
  right.style.display = "flex"; right.style.flexDirection = "column";
  panel.style.flex = "1";
  const count = h("span", { id: "entry-count" }, String(st.nodes.length));
  main.append(h("div", {}, title, h("div", { class: "muted" }, `${id} · ${opened.session.cwd || ""} · `, count, " entries"), toolbar),
    h("div", { class: "session" }, treeBox, right));

  const relayout = () => { layout(st); spacer.style.height = st.rows.length * ROW + "px"; count.textContent = String(st.nodes.length); renderRows(); };
  let pendingFetch = null;
  function renderRows() {
    const first = Math.max(0, Math.floor(treeBox.scrollTop / ROW) - 10);
    const last = Math.min(st.rows.length, first + Math.ceil(treeBox.clientHeight / ROW) + 20);
    const out = [];
    const missing = [];
    for (let r = first; r < last; r++) {
      const row = st.rows[r], n = st.nodes[row.i];
      const text = row.text || st.nodes[row.i].summary || st.texts.get(row.i);
      if (text === undefined) missing.push(row.i);
      const kind = n.type === "message" ? n.role : n.customType || n.type;
      const folded = folding(row);
      const el = h("div", {
        class: "row" + (row.i === st.selected ? " selected" : "") + (st.onBranch.has(row.i) ? " onbranch" : "") + (row.member ? " member" : ""),
        "data-id": n.id, onclick: () => select(row.i),
      },
        h("span", { class: "toggle", onclick: (ev) => { ev.stopPropagation(); if (!row.kids) return; toggle(row, n); relayout(); } },
          row.kids ? (closed(row, n) ? "▸" : "▾") : ""),
        h("span", { class: "kind " + kind }, kind),
        n.label ? h("span", { class: "tag" }, n.label) : null,
        n.type === "label" ? `${n.label ? "label" : ""} → ${n.target}` : n.type === "leaf" ? `leaf moved to ${n.target}` : (text || ""),
        (row.member ? n.thinking : row.thought ?? n.thinking) ? h("span", { class: "muted note" }, "[thought]") : null,
        n.role === "assistant" && (row.calls || (n.tools ? callsOf(n) : [])).length ? h("span", { class: "tools" }, "→ " + (row.calls || callsOf(n)).join(", ") + (folded.results ? ` (${folded.results} result${folded.results > 1 ? "s" : ""}${folded.failed ? `, ${folded.failed} failed` : ""})` : "")) : null,
        folded.other ? h("span", { class: "folded", title: folded.kinds }, `+${folded.other}`) : null,
        (n.id === st.leaf || row.leaf) ? h("span", { class: "leafmark" }, "← leaf") : null,
        apartMark(st, row, n));
      el.style.top = r * ROW + "px";
      el.style.paddingLeft = 4 + Math.min(row.indent, 40) * 14 + "px";
      out.push(el);
    }
    spacer.replaceChildren(...out);
    // Only blocks never asked for are fetched, and only a fetch redraws:
    // a row whose text no block holds stays without it, never a loop.
    if (missing.length && !pendingFetch) {
      pendingFetch = fetchTexts(st, missing).then((fetched) => { pendingFetch = null; if (fetched) renderRows(); })
        .catch((e) => { pendingFetch = null; banner(explain(e)); });
    }
  }
  treeBox.addEventListener("scroll", () => requestAnimationFrame(renderRows));
  // A conversation row folds its other entries (results, the rest of a
  // turn, bookkeeping) until opened; in the entries view a node folds its
  // children.
  const closed = (row, n) => row.members ? !st.opened.has(n.id) : st.collapsed.has(n.id);
  const toggle = (row, n) => {
    const set = row.members ? st.opened : st.collapsed;
    set.has(n.id) ? set.delete(n.id) : set.add(n.id);
  };
  function folding(row) {
    const f = { results: 0, failed: 0, other: 0, kinds: "" };
    if (!row.members) return f;
    const kinds = new Map();
    for (const m of row.members) {
      const x = st.nodes[m];
      if (x.role === "toolResult") { f.results++; if (x.error) f.failed++; continue; }
      if (x.type === "message" && x.role === "assistant") continue; // the rest of the turn
      f.other++;
      const k = x.customType || x.type;
      kinds.set(k, (kinds.get(k) || 0) + 1);
    }
    f.kinds = [...kinds].sort((a, b) => b[1] - a[1]).map(([k, c]) => `${k} ${c}`).join(", ");
    return f;
  }
  // The keys of pi's /tree: ↑/↓ move, ← folds (or goes to the parent),
  // → unfolds (or goes to the first child), Enter shows the entry's
  // context, / searches.
  treeBox.addEventListener("keydown", (ev) => {
    const at = st.rows.findIndex((row) => row.i === st.selected);
    const go = (r) => {
      if (r < 0 || r >= st.rows.length) return;
      st.selected = st.rows[r].i;
      const top = r * ROW;
      if (top < treeBox.scrollTop) treeBox.scrollTop = top;
      else if (top + ROW > treeBox.scrollTop + treeBox.clientHeight) treeBox.scrollTop = top + ROW - treeBox.clientHeight;
      renderRows();
    };
    const n = at >= 0 ? st.nodes[st.rows[at].i] : null;
    switch (ev.key) {
      case "ArrowDown": go(at < 0 ? 0 : at + 1); break;
      case "ArrowUp": go(at < 0 ? 0 : at - 1); break;
      case "ArrowLeft":
        if (!n) return;
        if (st.rows[at].kids && !closed(st.rows[at], n)) { toggle(st.rows[at], n); relayout(); }
        else if (n.parentId && st.byId.has(n.parentId)) go(rowOf(st, st.byId.get(n.parentId)));
        break;
      case "ArrowRight":
        if (!n) return;
        if (st.rows[at].kids && closed(st.rows[at], n)) { toggle(st.rows[at], n); relayout(); }
        else if (st.rows[at].kids) go(at + 1);
        break;
      case "Enter":
        if (!n) return;
        st.tab = "context";
        select(st.selected);
        break;
      case "/":
        document.getElementById("search-q").focus();
        break;
      default:
        return;
    }
    ev.preventDefault();
  });

  async function select(i) {
    st.selected = i;
    renderRows();
    showTab();
  }
  async function showTab() {
    for (const b of tabs.children) b.classList.toggle("active", b.id === "tab-" + st.tab);
    panel.replaceChildren(h("p", { class: "muted" }, "loading…"));
    try {
      if (st.tab === "context") await showContext(st, panel);
      else if (st.tab === "entry") await showEntry(st, panel);
      else await showStats(st, panel);
    } catch (e) { panel.replaceChildren(h("p", {}, explain(e))); }
  }
  async function reload() {
    const t = await fetchTree(path);
    st.nodes = []; st.byId.clear(); st.kids.clear(); st.texts.clear(); st.blocks.clear(); st.leaf = t.leaf; st.seq = t.sequence;
    st.apart = apartOf(t);
    for (const n of t.nodes) addNode(st, n);
    relayout();
  }

  relayout();
  performance.mark("tree-rendered");
  if (wantEntry && st.byId.has(wantEntry)) {
    const i = st.byId.get(wantEntry);
    const r = st.rows.findIndex((row) => row.i === i);
    if (r >= 0) treeBox.scrollTop = Math.max(0, r * ROW - treeBox.clientHeight / 2);
    st.tab = "context";
    await select(i);
  } else {
    showTab();
  }

  // Live: entries appended after the tree's sequence, as they come.
  const es = new EventSource(path + "/events?" + qs({ after: st.seq }));
  let dirty = false, stale = false;
  es.addEventListener("open", () => { live.className = "live on"; live.textContent = "live"; });
  es.addEventListener("error", () => { live.className = "live off"; live.textContent = "reconnecting"; });
  es.addEventListener("entry", (ev) => {
    const e = JSON.parse(ev.data);
    st.seq = Math.max(st.seq, Number(ev.lastEventId) || 0);
    const n = { id: e.id, parentId: e.parentId || "", type: e.type, timestamp: e.timestamp, role: e.message ? e.message.role : "" };
    if (e.type === "label") { n.target = e.targetId; const t = st.byId.get(e.targetId); if (t !== undefined) st.nodes[t].label = e.label || ""; }
    if (e.type === "leaf") n.target = e.parentId || "";
    if (e.type === "session_info") { st.name = e.name || ""; title.textContent = visible(st.name || st.about || id); }
    if (st.byId.has(n.id)) return;
    const i = addNode(st, n);
    st.texts.set(i, textOf(e));
    // An entry that does not continue the leaf may be another node's,
    // written apart: the server decides the leaf then (origins), so the
    // tree is asked again.
    if (n.parentId !== st.leaf && e.type !== "leaf") stale = true;
    st.leaf = e.type === "leaf" ? n.target : n.id;
    if (!dirty) {
      dirty = true;
      setTimeout(async () => {
        dirty = false;
        if (stale) { stale = false; try { await reload(); } catch (err) { banner(explain(err)); } } else relayout();
        if (st.tab === "context" && st.selected < 0) showTab();
      }, 100);
    }
  });
  return { close: () => es.close() };
}

// fetchTree reads a session's tree in the service's own pages, all but
// the first at once: a large tree (100,000 entries is three pages of some
// 40,000 nodes) arrives in about the time of its largest page. A page that
// ends short of the next one asked for leaves a gap, read on its own.
// apartOf maps the tip of each branch written apart (on another node,
// while the nodes could not reach each other) to its origin and time.
function apartOf(tree) { return new Map((tree.apart || []).map((a) => [a.leaf, a])); }

// apartMark marks a row holding such a tip.
function apartMark(st, row, n) {
  const ids = row.members ? row.members.map((m) => st.nodes[m].id) : [n.id];
  const a = ids.map((id) => st.apart.get(id)).find(Boolean);
  return a ? h("span", { class: "apartmark", title: `written on ${a.origin} at ${a.at} while apart; the leaf is the branch written last` }, "⑂ apart: " + a.origin) : null;
}

async function fetchTree(path) {
  const first = await api("GET", path + "/tree?offset=0");
  if (!first.next) return first;
  const size = Math.max(1, first.nodes.length);
  const pages = new Map([[0, first.nodes]]);
  const offsets = [];
  for (let o = first.next; o < first.total; o += size) offsets.push(o);
  const got = await Promise.all(offsets.map((o) => api("GET", `${path}/tree?offset=${o}`)));
  offsets.forEach((o, k) => pages.set(o, got[k].nodes));
  const nodes = [];
  while (nodes.length < first.total) {
    const at = nodes.length;
    let part = pages.get(at);
    if (!part) {
      for (const [o, p] of pages) if (o < at && at < o + p.length) part = p.slice(at - o);
    }
    if (!part) part = (await api("GET", `${path}/tree?offset=${at}`)).nodes;
    if (!part.length) break; // the session shrank under us: what is there is the tree
    nodes.push(...part.slice(0, first.total - at));
  }
  return { ...first, nodes, next: 0 };
}

function need(st) {
  if (st.selected < 0) throw new ApiError({ code: "no_selection", message: "select an entry in the tree first" }, 0);
  return st.nodes[st.selected];
}

function addNode(st, n) {
  const i = st.nodes.length;
  st.nodes.push(n);
  st.byId.set(n.id, i);
  const p = n.parentId || "";
  if (!st.kids.has(p)) st.kids.set(p, []);
  st.kids.get(p).push(i);
  return i;
}

// rowOf is the row showing node i: its own, or in the conversation view
// the row it is folded into.
function rowOf(st, i) {
  const r = st.rows.findIndex((row) => row.i === i);
  if (r >= 0 || st.view !== "conversation") return r;
  return st.rows.findIndex((row) => row.members && row.members.includes(i));
}

// conversationLayout lays out the rows of the service's outline (package
// outline, in the tree's nodes: row, head, depth): a row a message, its
// results, the rest of its turn and the bookkeeping beside it folded in
// until opened. Nodes the outline does not know yet (appended live) are
// rows of their own at the end.
function conversationLayout(st) {
  const groups = new Map();
  const late = [];
  for (let i = 0; i < st.nodes.length; i++) {
    const n = st.nodes[i];
    if (typeof n.row !== "number") { late.push(i); continue; }
    let g = groups.get(n.row);
    if (!g) groups.set(n.row, (g = { head: -1, members: [] }));
    if (n.head && g.head < 0) g.head = i; else g.members.push(i);
  }
  const rows = [];
  for (const r of [...groups.keys()].sort((a, b) => a - b)) {
    const g = groups.get(r);
    const head = g.head >= 0 ? g.head : g.members.shift();
    const n = st.nodes[head];
    const leaf = g.members.some((m) => st.nodes[m].id === st.leaf);
    // A turn's text, thinking and tool calls may be lines of their own
    // (Claude Code writes a line per block of a message): the row says
    // what all of them say.
    let text = n.summary || "", thought = !!n.thinking;
    const calls = n.role === "assistant" && n.tools ? [...callsOf(n)] : [];
    for (const m of g.members) {
      const x = st.nodes[m];
      if (x.role !== "assistant") continue;
      if (x.summary) text = text ? text + " " + x.summary : x.summary;
      thought = thought || !!x.thinking;
      if (x.tools) calls.push(...callsOf(x));
    }
    rows.push({ i: head, indent: n.depth || 0, kids: g.members.length, members: g.members, leaf, text, thought, calls });
    if (st.opened.has(n.id)) for (const m of g.members) rows.push({ i: m, indent: (n.depth || 0) + 1, kids: 0, member: true });
  }
  for (const i of late) rows.push({ i, indent: 0, kids: 0 });
  return rows;
}

// layout flattens the tree into rows: children in append order, indented
// only where a node has more than one child (a chain stays flat), the
// descendants of collapsed nodes left out. Iterative: a chain may be
// 100,000 long.
function layout(st) {
  if (st.view === "conversation") {
    st.rows = conversationLayout(st);
    markBranch(st);
    return;
  }
  const rows = [];
  const roots = [];
  for (let i = 0; i < st.nodes.length; i++) {
    const p = st.nodes[i].parentId;
    if (!p || !st.byId.has(p)) roots.push(i);
  }
  const stack = [];
  for (let r = roots.length - 1; r >= 0; r--) stack.push([roots[r], roots.length > 1 ? 1 : 0]);
  while (stack.length) {
    const [i, indent] = stack.pop();
    const kids = st.kids.get(st.nodes[i].id) || [];
    rows.push({ i, indent, kids: kids.length });
    if (st.collapsed.has(st.nodes[i].id)) continue;
    const next = kids.length > 1 ? indent + 1 : indent;
    for (let k = kids.length - 1; k >= 0; k--) stack.push([kids[k], next]);
  }
  st.rows = rows;
  markBranch(st);
}

function markBranch(st) {
  st.onBranch = new Set();
  for (let i = st.byId.get(st.leaf); i !== undefined;) {
    st.onBranch.add(i);
    const p = st.nodes[i].parentId;
    i = p ? st.byId.get(p) : undefined;
  }
}

function textOf(e) {
  const parts = [];
  const add = (c) => {
    if (typeof c === "string") parts.push(c);
    else if (Array.isArray(c)) for (const b of c) { if (b.type === "text") parts.push(b.text); else if (b.type === "image") parts.push("[image]"); } // tool calls: the row's own span
  };
  if (e.message) add(e.message.content);
  if (e.content) add(e.content);
  if (e.summary) parts.push(e.summary);
  if (e.type === "model_change") parts.push(`${e.provider}/${e.modelId}`);
  if (e.type === "thinking_level_change") parts.push(e.thinkingLevel);
  if (e.type === "session_info") parts.push(e.name || "");
  if (e.type === "custom") parts.push(e.customType);
  return parts.join(" ").replace(/\s+/g, " ").slice(0, 200);
}

// fetchTexts loads the entries of the blocks holding the given positions
// that were never asked for, and says whether there were any.
async function fetchTexts(st, positions) {
  const blocks = [...new Set(positions.map((i) => Math.floor(i / BLOCK)))].filter((b) => !st.blocks.has(b));
  if (!blocks.length) return false;
  for (const b of blocks) {
    st.blocks.add(b);
    const page = await api("GET", st.path + "/entries?" + qs({ offset: b * BLOCK, limit: BLOCK }));
    page.entries.forEach((e, k) => {
      const i = st.byId.get(e.id);
      st.texts.set(i === undefined ? b * BLOCK + k : i, textOf(e));
    });
  }
  return true;
}

document.getElementById("search-form").addEventListener("submit", (ev) => {
  ev.preventDefault();
  location.hash = "#/search?" + qs({ q: document.getElementById("search-q").value });
});
window.addEventListener("hashchange", route);
// Once every script has run: views live in more than one file.
document.addEventListener("DOMContentLoaded", route);
