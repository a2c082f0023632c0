// A workflow instance: its status, input and output, the step timeline, its positions,
// the events it received and emitted, its children, its audit entries; the operator's
// moves, and a query form.
import {childOf, clear, consoleUrl, duration, groupOf, h, json, positionState, positionValue,
        show, stateBadge, table, when} from "./dom.js";
import {get} from "./api.js";
import {actionBar} from "./actions.js";
import {timeline} from "./timeline.js";

const AUDIT_ROWS = 50;

function facts(s) {
  const rows = [["run", s.run_id], ["runs", s.runs], ["positions", s.positions],
                ["created", when(s.created_at)], ["updated", when(s.updated_at)],
                ["finished", when(s.finished_at)], ["wakes at", when(s.wake_at)],
                ["waiting for", (s.waiting_for || []).join(", ") || "—"],
                ["events pending", s.events_pending]];
  if (s.paused_at) rows.push(["paused at", when(s.paused_at)]);
  if (s.parked_at) rows.push(["parked at", when(s.parked_at)]);
  if (s.previous_run_id) rows.push(["previous run", s.previous_run_id]);
  return h("dl", {class: "facts"},
           rows.map(([k, v]) => h("div", {}, h("dt", {}, k), h("dd", {}, v))));
}

function summary(doc) {
  const s = doc.status;
  return h("section", {id: "summary"},
           h("h1", {}, `${doc.cls} / ${doc.id} `, stateBadge(s.state)),
           s.error ? h("p", {class: "error", id: "status-error"}, s.error) : null,
           facts(s));
}

function io(s) {
  const input = "input" in s ? json(s.input) : "—";
  const output = "output" in s ? json(s.output) : s.state === "completed" ? "null" : "— (not completed)";
  return h("section", {id: "io", class: "pair"},
           h("div", {}, h("h2", {}, "Input"), h("pre", {id: "input"}, input)),
           h("div", {}, h("h2", {}, "Output"), h("pre", {id: "output"}, output)));
}

// A position's value as the workflow got it back (dom.js decodes the journal's form); an
// emit's is its payload, from the stream (its event_seq is its offset there).
function valueOf(st, doc) {
  const e = st.kind === "emit" ? (doc.events.events || []).find((x) => x.offset === st.event_seq) : null;
  return e ? show(e.payload) : positionValue(st);
}

// The attempts restarts and rescues took from the position (the steps route's earlier).
function earlierCount(st) {
  const n = (st.earlier?.length ?? 0) + (st.earlier_more ?? 0);
  return n ? h("span", {class: "muted", "data-testid": "earlier-count"},
               ` (+${n} before a restart or a rescue)`) : null;
}

function stepRow(st, doc) {
  const value = valueOf(st, doc);
  return h("tr", {"data-testid": "step-row", dataset: {pos: st.pos}},
           h("td", {class: "num"}, st.pos), h("td", {}, st.name), h("td", {}, st.kind),
           h("td", {}, stateBadge(positionState(st, doc.status))),
           h("td", {class: "num"}, st.attempts ?? "—", earlierCount(st)),
           h("td", {}, when(st.updated_at)), h("td", {class: "error"}, st.error || ""),
           h("td", {}, h("code", {class: "value", title: value, "data-testid": "value"}, value)));
}

function steps(doc) {
  return h("section", {id: "steps"}, h("h2", {}, "Positions"),
           h("div", {class: "scroll"},
             table(["pos", "name", "kind", "state", "attempts", "updated", "error", "value"],
                   doc.steps.map((st) => stepRow(st, doc)), {class: "grid"})),
           doc.steps_more ? h("p", {class: "muted"}, "Only the first positions are shown.") : null);
}

// Each event a wait took: a wait's position, or a wait branch of a group ("pos.branch").
function received(doc) {
  const out = [];
  for (const st of doc.steps) {
    if (st.kind === "wait" && st.state === "done" && !st.name.startsWith("child ")) {
      out.push([st.pos, st.name, positionValue(st)]);
    } else if (st.kind === "group") {
      for (const b of groupOf(st).branches) {
        if (b.kind === "wait" && b.state === "done") out.push([`${st.pos}.${b.idx}`, b.name, show(b.value)]);
      }
    }
  }
  return out;
}

function events(doc) {
  const taken = received(doc);
  const emitted = doc.events.events || [];
  return h("section", {id: "events", class: "pair"},
    h("div", {}, h("h2", {}, "Events received"),
      taken.length ? table(["pos", "name", "payload"], taken.map(([pos, name, payload]) =>
        h("tr", {"data-testid": "received"}, h("td", {class: "num"}, pos),
          h("td", {}, name), h("td", {}, h("code", {}, payload)))), {class: "grid"})
        : h("p", {class: "muted"}, "None taken by a wait yet."),
      doc.status.events_pending ? h("p", {class: "muted"},
        `${doc.status.events_pending} pending, not yet taken by a wait.`) : null),
    h("div", {}, h("h2", {}, "Events emitted"),
      emitted.length ? table(["offset", "name", "at", "run", "payload"], emitted.map((e) =>
        h("tr", {"data-testid": "emitted"}, h("td", {class: "num"}, e.offset), h("td", {}, e.name),
          h("td", {}, when(e.at)), h("td", {}, e.run_id === doc.status.run_id ? "this" : e.run_id),
          h("td", {}, h("code", {}, show(e.payload))))), {class: "grid"})
        : h("p", {class: "muted"}, "None.")));
}

// The children: its positions named "child CLS/ID" (api.py), and a group's child
// branches, which only the group's position names.
function childList(doc) {
  const out = doc.children.map((c) => ({...c, state: positionState(c, doc.status)}));
  for (const st of doc.steps.filter((x) => x.kind === "group")) {
    for (const b of groupOf(st).branches.filter((x) => x.kind === "child")) {
      out.push({...childOf(b.name), pos: `${st.pos}.${b.idx}`, kind: "branch", state: b.state});
    }
  }
  return out;
}

function children(doc) {
  const kids = childList(doc);
  return h("section", {id: "children"}, h("h2", {}, "Children"),
    kids.length ? h("ul", {}, kids.map((c) => h("li", {"data-testid": "child"},
      h("a", {href: consoleUrl("instance", {cls: c.cls, id: c.id})}, `${c.cls}/${c.id}`),
      ` (position ${c.pos}: ${c.kind} ${c.state})`)))
      : h("p", {class: "muted"}, "None."));
}

function audit(entries) {
  return h("section", {id: "audit"}, h("h2", {}, "Audit log"),
    entries.length ? table(["at", "who", "action", "status", "result", "state after", "note",
                            "took"],
      entries.map((e) => h("tr", {"data-testid": "audit-row", dataset: {action: e.action}},
        h("td", {}, when(e.at)), h("td", {}, e.who ?? "—"), h("td", {}, e.action),
        h("td", {class: "num"}, e.status),
        h("td", {}, e.result), h("td", {}, e.state ?? ""), h("td", {}, e.note ?? ""),
        h("td", {}, duration(e.took_ms)))), {class: "grid"})
      : h("p", {class: "muted"}, "No operator action on this instance yet."));
}

function queryForm(cls, id) {
  const out = h("pre", {id: "query-result"});
  const form = h("form", {id: "query", class: "filters"},
    h("label", {}, "query ", h("input", {name: "name", required: true, placeholder: "name"})),
    h("label", {}, "arg ", h("input", {name: "arg", placeholder: "JSON (empty: null)"})),
    h("button", {type: "submit"}, "Ask"), out);
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    const f = new FormData(form);
    try {
      out.textContent = json(await get("query", {cls, id, name: f.get("name"), arg: f.get("arg") || "null"}));
    } catch (err) {
      out.textContent = err.message;
    }
  });
  return h("section", {}, h("h2", {}, "Query"), form);
}

async function load(params) {
  const cls = params.get("cls"), id = params.get("id");
  const [doc, log] = await Promise.all([get("instance", {cls, id}),
    get("audit", {target: `${cls}/${id}`, limit: AUDIT_ROWS})]);
  return {doc, entries: log.entries};
}

function dynamic({doc, entries}) {
  return [summary(doc), io(doc.status),
          h("section", {id: "timeline-section"}, h("h2", {}, "Timeline"), timeline(doc, entries)),
          events(doc), children(doc), steps(doc), audit(entries)];
}

// The moves the instance's state takes, redrawn with it.
function moves(root, params, state) {
  const result = () => root.querySelector("#action-result");
  const done = async (move, out) => {
    result().className = out.error ? "error" : "ok";
    result().textContent = out.error ? `${move.label} refused: ${out.error}`
      : out.answer?.update ? `${move.label}: update ${out.answer.update.id} is ${out.answer.update.state}`
      : `${move.label}: done${out.answer?.state ? `, now ${out.answer.state}` : ""}`;
    await refresh(root, params);
  };
  return actionBar(params.get("cls"), params.get("id"), state, done);
}

export async function render(root, params) {
  const cls = params.get("cls"), id = params.get("id");
  const data = await load(params);
  root.dataset.version = data.doc.version || "";
  const [head, ...rest] = dynamic(data);
  clear(root, head, h("div", {id: "actions"}), h("p", {id: "action-result", role: "status"}),
        h("div", {id: "dynamic"}, rest), queryForm(cls, id));
  root.querySelector("#actions").replaceWith(moves(root, params, data.doc.status.state));
}

// Polled every few seconds: the instance is read again (events in it) only once its
// database has changed since the page last read it (api.py's version, no event).
export async function refresh(root, params) {
  const shown = root.dataset.version;
  if (shown) {
    const {version} = await get("version", {cls: params.get("cls"), id: params.get("id")});
    if (version === shown) return;
  }
  const data = await load(params);
  const [head, ...rest] = dynamic(data);
  root.querySelector("#summary").replaceWith(head);
  root.dataset.version = data.doc.version || "";
  const bar = root.querySelector("#actions");
  if (bar.dataset.state !== data.doc.status.state) {  // not under the user's pointer else
    bar.replaceWith(moves(root, params, data.doc.status.state));
  }
  clear(root.querySelector("#dynamic"), rest);
}
