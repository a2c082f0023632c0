// An operator's moves on an instance, each behind a confirmation (the <dialog> of
// app.html): send an event or an update, pause, resume, rescue, restart, cancel, terminate.
import {clear, h} from "./dom.js";
import {act} from "./api.js";

const JSON_FIELD = "json";

// The states an instance ends in: it takes no event, cancel or terminate, nor a pause.
const FINISHED = new Set(["completed", "failed", "cancelled", "terminated"]);
const unfinished = (state) => !FINISHED.has(state);

// Each move: its button, the states that take it (the instance's own rules, in
// docs/workflow-protocol.md: a move offered in no other state), what the confirmation
// says, its fields, and the route's args.
const MOVES = [
  {action: "event", label: "Send event", offered: unfinished, text: "Record an event for the instance.",
   fields: [{name: "name", label: "event name", required: true},
            {name: "payload", label: "payload (JSON)", kind: JSON_FIELD, value: "null"}]},
  {action: "update", label: "Send update", offered: unfinished, text: "Send an update: the workflow's handler of that name runs once the instance takes it (its validator may refuse it first, recording nothing).",
   fields: [{name: "name", label: "update name", required: true},
            {name: "arg", label: "argument (JSON)", kind: JSON_FIELD, value: "null"},
            {name: "id", label: "update id (empty: a new one; the same id asks again)"}]},
  {action: "pause", label: "Pause",
   offered: (state) => ["running", "waiting", "compensating"].includes(state), text: "It starts no new work until resumed; it still records events."},
  {action: "resume", label: "Resume", offered: (state) => state === "paused", text: "A paused instance goes on where it stopped."},
  {action: "rescue", label: "Rescue",
   offered: (state) => state === "parked" || state === "failed", text: "A parked or failed instance runs again from its failing position, under the code deployed now."},
  {action: "restart", label: "Restart", offered: () => true, text: "Run again from a named step (keeping what was recorded before it), or from the start with a new run id.",
   fields: [{name: "step", label: "from the step named (empty: from the start)"},
            {name: "occurrence", label: "its occurrence", kind: "int"},
            {name: "input", label: "new input, from the start only (JSON; empty: keep)", kind: JSON_FIELD}]},
  {action: "cancel", label: "Cancel", offered: unfinished, text: "Cancel it; with compensation, its compensations run first.",
   fields: [{name: "compensate", label: "run the compensations", kind: "bool"}]},
  {action: "terminate", label: "Terminate", danger: true, offered: unfinished, text: "Stop it at once: no compensation; its children not detached are terminated too.",
   fields: [{name: "reason", label: "reason"}]},
];

const dialog = () => document.getElementById("confirm");

function input(f) {
  const id = `arg-${f.name}`;
  const el = f.kind === "bool"
    ? h("input", {type: "checkbox", id, name: f.name})
    : h(f.kind === JSON_FIELD ? "textarea" : "input",
        {id, name: f.name, required: f.required, rows: 2,
         type: f.kind === "int" ? "number" : null});
  if (f.value !== undefined) el.value = f.value;
  return h("label", {class: f.kind === "bool" ? "check" : "field", for: id}, f.label, el);
}

function argsOf(move, form) {
  const args = {};
  for (const f of move.fields || []) {
    const el = form.querySelector(`#arg-${f.name}`);
    if (f.kind === "bool") {
      if (el.checked) args[f.name] = true;
      continue;
    }
    const v = el.value.trim();
    if (!v) continue;
    if (f.kind === JSON_FIELD) {
      try {
        args[f.name] = JSON.parse(v);
      } catch {
        throw new Error(`${f.label}: not JSON`);
      }
    } else args[f.name] = f.kind === "int" ? Number(v) : v;
  }
  return args;
}

function ask(cls, id, move, done) {
  const d = dialog();
  const form = d.querySelector("#confirm-form");
  d.querySelector("#confirm-title").textContent = `${move.label}: ${cls}/${id}?`;
  d.querySelector("#confirm-text").textContent = move.text;
  clear(d.querySelector("#confirm-fields"), (move.fields || []).map(input));
  d.querySelector("#confirm-note").value = "";
  d.querySelector("#confirm-error").textContent = "";
  d.querySelector("#confirm-yes").textContent = move.label;
  form.onsubmit = async (e) => {
    if (e.submitter?.value !== "ok") return;  // Back: the dialog closes, nothing is sent
    e.preventDefault();
    try {
      const note = d.querySelector("#confirm-note").value;
      const out = await act(cls, id, move.action, argsOf(move, form), note);
      d.close();
      done(move, out);
    } catch (err) {
      d.querySelector("#confirm-error").textContent = err.message;
    }
  };
  d.showModal();
}

// A reader's session sees and may not act (the host refuses its moves too).
const READER = document.querySelector('meta[name="wk-role"]')?.content === "reader";

// The bar of the buttons an instance in `state` takes; `done(move, answer)` after each
// move the instance answered.
export function actionBar(cls, id, state, done) {
  if (READER) {
    return h("div", {class: "actions muted", id: "actions", dataset: {state}},
             "Read-only: this session's token is a reader's.");
  }
  return h("div", {class: "actions", id: "actions", dataset: {state}},
           MOVES.filter((m) => m.offered(state)).map((m) => h("button", {
             type: "button", class: m.danger ? "danger" : "", id: `action-${m.action}`,
             onclick: () => ask(cls, id, m, done)}, m.label)));
}
