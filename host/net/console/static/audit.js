// The audit log across the host's actors: who did what, newest first, filtered and paged
// by the host (GET /_wk/audit's filter: target, action, since; the page's cursor).
import {clear, consoleUrl, h, table, when} from "./dom.js";
import {get} from "./api.js";

const KEYS = ["target", "action", "since", "before"];
const ROWS = 100;

const UNIT_MS = {s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000};

// "15m", "2h", "7d" (before now, as the host's route takes them: negative ms), an ISO
// time ("2026-12-07T10:00Z"), or ms since the epoch.
export function sinceMs(text) {
  const ago = /^(\d+)([smhd])$/.exec(text);
  if (ago) return String(-Number(ago[1]) * UNIT_MS[ago[2]]);
  if (/^\d+$/.test(text)) return text;
  const at = Date.parse(text);
  if (Number.isNaN(at)) throw new Error(`since: ${text} is not 15m, 2h, 7d, an ISO time or ms`);
  return String(at);
}

function query(params) {
  const q = {limit: ROWS};
  for (const k of KEYS) if (params.get(k)) q[k] = params.get(k);
  if (q.since) q.since = sinceMs(q.since);
  return q;
}

// An entry's target, linked to its instance's page when it names one.
function target(e) {
  if (!e.actor_id) return e.target || "(host)";
  return h("a", {href: consoleUrl("instance", {cls: e.cls, id: e.actor_id})}, e.target);
}

function row(e) {
  return h("tr", {"data-testid": "audit-row", dataset: {action: e.action}},
           h("td", {}, when(e.at)), h("td", {}, e.who || "—"), h("td", {}, e.action),
           h("td", {}, target(e)), h("td", {class: "num"}, e.status),
           h("td", {}, e.state || "—"), h("td", {}, e.result), h("td", {}, e.note || ""));
}

function filters(params) {
  const field = (name, placeholder) => h("label", {}, `${name} `, h("input", {
    name, id: `filter-${name}`, placeholder, value: params.get(name) || ""}));
  const form = h("form", {id: "filters", class: "filters"},
    field("target", "class or class/id"), field("action", "start, event, cancel..."),
    field("since", "15m, 2h, or ms"),
    h("button", {type: "submit", id: "filter-apply"}, "Apply"));
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    const q = {};
    for (const [k, v] of new FormData(form)) if (String(v).trim()) q[k] = String(v).trim();
    location.assign(consoleUrl("audit", q));  // bookmarkable: the filters are the URL
  });
  return form;
}

function body(params, doc) {
  const older = doc.next
    ? h("a", {id: "audit-older", href: consoleUrl("audit", {...Object.fromEntries(params),
                                                           before: doc.next})}, "older →")
    : null;
  const behind = doc.unflushed?.length
    ? h("p", {class: "muted"}, `Process(es) ${doc.unflushed.join(", ")} did not answer: `
                               + "their newest actions may be missing.")
    : null;
  return h("div", {id: "audit-body"},
           doc.entries.length
             ? table(["at", "who", "action", "target", "status", "state after", "result",
                      "note"], doc.entries.map(row), {id: "audit", class: "grid"})
             : h("p", {class: "muted", id: "audit-empty"}, "No action matches."),
           behind, older);
}

export async function render(root, params) {
  const doc = await get("audit", query(params));
  clear(root, h("h1", {}, "Audit log"), filters(params), body(params, doc));
}

// The log only grows: a page without a cursor shows the newest again.
export async function refresh(root, params) {
  if (params.get("before")) return;
  root.querySelector("#audit-body").replaceWith(body(params, await get("audit", query(params))));
}
