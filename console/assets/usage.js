// sessionlog console: usage across sessions — tokens and cost by day or
// month and model, by project and by agent, and per turn — drawn with
// Chart.js (vendor/, MIT) from the service's usage reports (GET
// /v1/usage), with the same figures in tables beneath. Chart labels are
// drawn on canvas, never parsed as HTML; they pass through visible() and
// are cut short like every other text the console shows.
"use strict";

const USAGE_FILTERS = [["since", "since (2026-01-02)"], ["until", "until (day, included)"], ["model", "model"], ["project", "project (directory)"], ["agent", "agent"]];
const PALETTE = ["#2458c6", "#d9822b", "#1b8a5a", "#b03a8c", "#6a5acd", "#c0392b", "#2a9fb0", "#8a6d1d", "#5c6b7a"];
const TOP = 8; // models, projects drawn apart; the rest summed as "other"

// label is how a dimension's value is shown: one line, at most 48
// characters, "(none)" for a value missing.
function label(v) {
  if (!v) return "(none)";
  const one = visible(String(v)).replace(/\s+/g, " ");
  return one.length > 48 ? one.slice(0, 47) + "…" : one;
}

const money = (x) => "$" + (x < 1 ? x.toFixed(4) : x.toLocaleString("en", { minimumFractionDigits: 2, maximumFractionDigits: 2 }));
// cost is a row's cost as people should read it: with the part of models
// the price table does not know said to be unknown, never taken as free.
const cost = (r) => (!r.unpricedCalls ? money(r.cost) : r.cost ? money(r.cost) + " + unknown" : "unknown");
const unpricedNote = (r) => (r.unpricedCalls ? `${count(r.unpricedCalls)} calls (${count(r.unpricedTokens)} tokens) of models without a price are not in the cost` : "");
const count = (x) => Math.round(x).toLocaleString("en");
const tick = (v) => "$" + Number(v).toLocaleString("en", { maximumSignificantDigits: 3 });

async function usageView(main, params) {
  const period = params.get("period") === "month" ? "month" : "day";
  const filters = {};
  for (const [k] of USAGE_FILTERS) if (params.get(k)) filters[k] = params.get(k);
  const form = h("form", { class: "filters", id: "usage-filters" },
    h("select", { name: "period", "aria-label": "period" }, ["day", "month"].map((p) => h("option", { value: p, selected: p === period }, "by " + p))),
    USAGE_FILTERS.map(([k, ph]) => h("input", { name: k, placeholder: ph, value: filters[k] || "", "aria-label": k })),
    h("button", { type: "submit" }, "Show"), h("a", { href: "#/usage" }, "clear"));
  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    const p = { period: form.elements.period.value };
    for (const [k] of USAGE_FILTERS) p[k] = form.elements[k].value.trim();
    location.hash = "#/usage?" + qs(p);
  });
  main.append(h("h2", {}, "Usage across sessions"), form);
  const get = (by) => api("GET", "/v1/usage?" + qs({ ...filters, by: by.join(",") }));
  const [byTime, byProject, byAgent, byModel] = await Promise.all([get([period, "model"]), get(["project"]), get(["agent"]), get(["model"])]);
  const t = byModel.total;
  main.append(h("div", { class: "cards", id: "usage-total" },
    card("cost", cost(t), unpricedNote(t)), card("tokens", count(t.tokens)), card("turns", count(t.turns)), card("other calls", count(t.calls)),
    card("sessions", count(byModel.sessions)), card("cost per turn", t.unpricedCalls ? "unknown" : money(t.costPerTurn)), card("tokens per turn", count(t.tokensPerTurn)),
    t.unpricedTokens ? card("tokens without a price", `${((100 * t.unpricedTokens) / t.tokens).toFixed(1)}%`, unpricedNote(t)) : null));
  if (!byModel.rows.length) {
    main.append(h("p", { class: "muted", id: "usage-none" }, "No model calls with usage match."));
    return {};
  }
  const charts = [];
  const grid = h("div", { class: "charts" });
  main.append(grid);
  const panel = (id, title) => {
    const canvas = h("canvas", { id, role: "img", "aria-label": title });
    grid.append(h("figure", { class: "chart" }, h("figcaption", {}, title), h("div", { class: "chart-box" }, canvas)));
    return canvas;
  };
  const plot = (canvas, config) => {
    if (typeof Chart === "undefined") return; // the tables below still say it all
    const style = getComputedStyle(document.body);
    Chart.defaults.color = style.color;
    Chart.defaults.borderColor = style.getPropertyValue("--line").trim() || "#ddd";
    charts.push(new Chart(canvas, { ...config, options: { responsive: true, maintainAspectRatio: false, animation: false, ...config.options } }));
  };

  // Cost over time, stacked by model: the models that cost most apart.
  // Every day (or month) from the first to the last is on the axis, so
  // time is spaced as it passed and a gap shows as one.
  const periods = timeAxis(byTime.rows.map((r) => r[period]), period);
  const models = topKeys(byModel.rows, "model");
  const series = new Map(models.map((m) => [m, new Array(periods.length).fill(0)]));
  const turnsAt = new Array(periods.length).fill(0), tokensAt = new Array(periods.length).fill(0);
  for (const r of byTime.rows) {
    const i = periods.indexOf(r[period]);
    if (i < 0) continue;
    const key = series.has(r.model || "") ? r.model || "" : "other";
    if (!series.has(key)) series.set(key, new Array(periods.length).fill(0));
    series.get(key)[i] += r.cost;
    turnsAt[i] += r.turns + r.calls;
    tokensAt[i] += r.tokens;
  }
  plot(panel("chart-cost", `Cost by ${period} and model`), {
    type: "bar",
    data: { labels: periods.map(label), datasets: [...series].map(([m, data], k) => ({ label: label(m), data, backgroundColor: PALETTE[k % PALETTE.length] })) },
    options: { scales: { x: { stacked: true }, y: { stacked: true, ticks: { callback: tick } } },
      plugins: { tooltip: { callbacks: { label: (c) => `${c.dataset.label}: ${money(c.parsed.y)}` } } } },
  });
  plot(panel("chart-per-turn", `Tokens per turn by ${period}`), {
    type: "line",
    data: { labels: periods.map(label), datasets: [{ label: "tokens per turn", data: tokensAt.map((x, i) => (turnsAt[i] ? x / turnsAt[i] : null)), borderColor: PALETTE[0], backgroundColor: PALETTE[0], spanGaps: false }] },
    options: { plugins: { legend: { display: false } }, scales: { y: { ticks: { callback: (v) => count(v) } } } },
  });
  // Projects by cost, most first; a click shows that project alone.
  const projects = [...byProject.rows].sort((a, b) => b.cost - a.cost).slice(0, 12);
  plot(panel("chart-projects", "Cost by project"), {
    type: "bar",
    data: { labels: projects.map((r) => label(r.project)), datasets: [{ label: "cost", data: projects.map((r) => r.cost), backgroundColor: PALETTE[1] }] },
    options: { indexAxis: "y", scales: { x: { ticks: { callback: tick } } }, plugins: { legend: { display: false }, tooltip: { callbacks: { label: (c) => money(c.parsed.x) } } },
      onClick: (_, els) => { if (els.length && projects[els[0].index].project) location.hash = "#/usage?" + qs({ ...filters, period, project: projects[els[0].index].project }); } },
  });
  plot(panel("chart-agents", "Cost by agent"), {
    type: "doughnut",
    data: { labels: byAgent.rows.map((r) => label(r.agent)), datasets: [{ data: byAgent.rows.map((r) => r.cost), backgroundColor: byAgent.rows.map((_, k) => PALETTE[k % PALETTE.length]) }] },
    options: { plugins: { tooltip: { callbacks: { label: (c) => `${c.label}: ${money(c.parsed)}` } } } },
  });

  main.append(h("div", {}, h("h3", {}, "By model"), usageTable("usage-by-model", "model", byModel),
    h("h3", {}, "By project"), usageTable("usage-by-project", "project", byProject),
    h("h3", {}, "By agent"), usageTable("usage-by-agent", "agent", byAgent)));
  return { close: () => charts.forEach((c) => c.destroy()) };
}

function card(name, value, note) {
  return h("div", { class: "card", title: note || "" }, h("div", { class: "muted small" }, name), h("div", { class: "figure" }, value));
}

// MAX_AXIS bounds the days an axis holds: past it, months.
const MAX_AXIS = 1500;

// timeAxis is every day (YYYY-MM-DD) or month (YYYY-MM) from the first of
// values to the last, in order; values that are no such period (a call
// without a time) go first, as they are.
function timeAxis(values, period) {
  const odd = [...new Set(values.filter((v) => !isPeriod(v, period)))].sort();
  const good = values.filter((v) => isPeriod(v, period)).sort();
  if (!good.length) return odd;
  const out = [];
  const last = good[good.length - 1];
  if (period === "month") {
    let [y, m] = good[0].split("-").map(Number);
    for (let v = good[0]; v <= last && out.length <= MAX_AXIS; ) {
      out.push(v);
      m++;
      if (m > 12) (m = 1), y++;
      v = `${String(y).padStart(4, "0")}-${String(m).padStart(2, "0")}`;
    }
  } else {
    for (let d = new Date(good[0] + "T00:00:00Z"); out.length <= MAX_AXIS; d.setUTCDate(d.getUTCDate() + 1)) {
      const v = d.toISOString().slice(0, 10);
      if (v > last) break;
      out.push(v);
    }
  }
  // Too long a span for days: the days that have calls, as they are.
  return odd.concat(out.length > MAX_AXIS ? [...new Set(good)] : out);
}

function isPeriod(v, period) {
  return period === "month" ? /^\d{4}-\d{2}$/.test(v || "") : /^\d{4}-\d{2}-\d{2}$/.test(v || "");
}

// topKeys are the TOP values of dim that cost most, "" (none) included.
function topKeys(rows, dim) {
  return [...rows].sort((a, b) => b.cost - a.cost).slice(0, TOP).map((r) => r[dim] || "");
}

function usageTable(id, dim, rep) {
  const cols = [dim, "turns", "calls", "input", "output", "cache read", "cache write", "tokens", "cost", "tokens/turn", "cost/turn"];
  const rows = [...rep.rows].sort((a, b) => b.cost - a.cost);
  const t = h("table", { id, class: "usage" }, h("thead", {}, h("tr", {}, cols.map((c) => h("th", {}, c)))));
  t.append(h("tbody", {}, rows.map((r) => h("tr", {}, h("td", { title: visible(r[dim] || "") }, label(r[dim])),
    [r.turns, r.calls, r.input, r.output, r.cacheRead, r.cacheWrite, r.tokens].map((x) => h("td", { class: "num" }, count(x))),
    h("td", { class: "num", title: unpricedNote(r) }, cost(r)), h("td", { class: "num" }, count(r.tokensPerTurn)), h("td", { class: "num" }, r.unpricedCalls ? "unknown" : money(r.costPerTurn))))));
  return rep.cut ? [t, h("p", { class: "muted" }, `The ${rows.length} costliest of ${rep.groups}.`)] : t;
}
