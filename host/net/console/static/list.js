// A class's actors (for a workflow class: its instances), filtered and paged by the host
// (GET /_wk/actors/{cls}'s query: status, label, prefix, since, until, order, after,
// limit). The page's URL holds the same keys, a label once per K=V, so it bookmarks.
import {clear, consoleUrl, duration, h, number, stateBadge, table, when} from "./dom.js";
import {get} from "./api.js";
import {compatSection} from "./compat.js";

const STATES = ["running", "waiting", "compensating", "paused", "completed", "failed",
                "cancelled", "terminated", "parked"];
const ORDERS = [["id", "id"], ["-updated", "newest first"], ["updated", "oldest first"]];
const KEYS = ["status", "prefix", "since", "until", "order", "after"];

// The listing's query for the page's URL: pairs, so that each label is its own `label`.
function query(params) {
  const q = [["cls", params.get("cls")], ["count", "1"], ["limit", params.get("limit") || "50"]];
  for (const k of KEYS) if (params.get(k)) q.push([k, params.get(k)]);
  for (const label of params.getAll("label")) if (label) q.push(["label", label]);
  return q;
}

// The label field's text (K=V, K2=V2) as its labels, and back.
function labelsOf(text) {
  return text.split(",").map((l) => l.trim()).filter((l) => l);
}

function localValue(ms) {  // ms since the epoch -> a datetime-local input's value (UTC)
  return ms ? new Date(Number(ms)).toISOString().slice(0, 16) : "";
}

function select(name, options, value) {
  return h("select", {name, id: `filter-${name}`},
           options.map(([v, label]) => h("option", {value: v, selected: v === value}, label)));
}

// The states chosen (any of them: the host's `status=S1,S2`); none chosen, any state.
function statesSelect(params) {
  const chosen = new Set((params.get("status") || "").split(",").filter((s) => s));
  return h("select", {name: "status", id: "filter-status", multiple: true,
                      size: Math.min(STATES.length, 5), title: "any of those chosen"},
           STATES.map((s) => h("option", {value: s, selected: chosen.has(s)}, s)));
}

function filters(params) {
  const form = h("form", {id: "filters", class: "filters"},
    h("label", {}, "status ", statesSelect(params)),
    h("label", {}, "id ", h("input", {name: "prefix", id: "filter-prefix", type: "search",
                                      placeholder: "begins with",
                                      value: params.get("prefix") || ""})),
    h("label", {}, "labels ", h("input", {name: "label", id: "filter-label",
                                          placeholder: "K=V, K2=V2",
                                          value: params.getAll("label").join(", ")})),
    h("label", {}, "since ", h("input", {type: "datetime-local", name: "since",
      id: "filter-since", value: localValue(params.get("since"))})),
    h("label", {}, "until ", h("input", {type: "datetime-local", name: "until",
      id: "filter-until", value: localValue(params.get("until"))})),
    h("label", {}, "order ", select("order", ORDERS, params.get("order") || "id")),
    h("label", {}, "per page ", h("input", {type: "number", name: "limit", min: 1,
      max: 1000, id: "filter-limit", value: params.get("limit") || "50"})),
    h("button", {type: "submit", id: "filter-apply"}, "Apply"));
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    const q = [["cls", params.get("cls")]];
    const data = new FormData(form);
    const states = data.getAll("status").filter((s) => s);
    if (states.length) q.push(["status", states.join(",")]);
    for (const [k, v] of data) {
      if (!v || k === "status") continue;
      if (k === "label") for (const label of labelsOf(v)) q.push([k, label]);
      else q.push([k, k === "since" || k === "until" ? String(Date.parse(v + "Z")) : v]);
    }
    location.assign(consoleUrl("class", q));
  });
  return form;
}

// A label shown on a row: a link to the class's actors that carry it.
function labelLink(cls, k, v) {
  return h("a", {href: consoleUrl("class", [["cls", cls], ["label", `${k}=${v}`]]),
                 "data-testid": "label", title: `only those labelled ${k}=${v}`},
           h("code", {}, `${k}=${v}`));
}

const FINISHED = new Set(["completed", "failed", "cancelled", "terminated"]);

// When it started (its first publish: null for one listed before that was kept), when it
// ended (a finished state began as it ended) and how long it ran.
function span(a) {
  const ended = FINISHED.has(a.status) ? a.updated_ms : null;
  const ran = ended !== null && a.first_ms != null ? duration(ended - a.first_ms) : "—";
  return [h("td", {"data-testid": "started"}, when(a.first_ms)),
          h("td", {"data-testid": "ended"}, when(ended)),
          h("td", {class: "num", "data-testid": "ran"}, ran)];
}

function row(cls, a, workflow) {
  const id = workflow ? h("a", {href: consoleUrl("instance", {cls, id: a.id})}, a.id) : a.id;
  const labels = Object.entries(a.labels || {}).map(([k, v]) => labelLink(cls, k, v));
  return h("tr", {"data-testid": "actor-row", dataset: {id: a.id}},
           h("td", {}, id), h("td", {}, stateBadge(a.status)),
           h("td", {}, when(a.updated_ms)), workflow ? span(a) : null,
           h("td", {class: "labels"}, labels));
}

function pager(params, next) {
  const links = [];
  const rest = [...params].filter(([k]) => k !== "after");  // every label kept
  if (params.get("after")) {
    links.push(h("a", {href: consoleUrl("class", rest), id: "page-first"}, "← first page"));
  }
  if (next) {
    links.push(h("a", {href: consoleUrl("class", [...rest, ["after", next]]), id: "page-next"},
                 "next page →"));
  }
  return h("p", {class: "pager"}, links);
}

let workflowClass = null;

async function isWorkflow(cls) {
  if (workflowClass === null) {
    const doc = await get("classes");
    workflowClass = doc.classes.some((c) => c.name === cls && c.workflow);
  }
  return workflowClass;
}

function results(params, page, workflow) {
  const cls = params.get("cls");
  return h("section", {id: "results"},
    h("p", {class: "muted", id: "match-count"},
      `${number(page.count)} match · ${page.actors.length} on this page`),
    table(["id", "status", "since", ...(workflow ? ["started", "ended", "ran"] : []), "labels"],
          page.actors.map((a) => row(cls, a, workflow)),
          {id: "actors", class: "grid"}),
    pager(params, page.next));
}

export async function render(root, params) {
  const cls = params.get("cls");
  const [page, workflow] = await Promise.all([get("actors", query(params)), isWorkflow(cls)]);
  clear(root, h("h1", {}, workflow ? `Workflow instances of ${cls}` : `Actors of ${cls}`),
        filters(params), results(params, page, workflow),
        workflow ? compatSection(cls) : null);
}

export async function refresh(root, params) {
  const page = await get("actors", query(params));
  root.querySelector("#results").replaceWith(results(params, page, await isWorkflow(params.get("cls"))));
}
