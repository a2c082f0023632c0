// The step timeline: a row per step, each attempt a bar on one time axis (host clock),
// coloured by its outcome; its error, duration and fuel on hover (title) and on click
// (the detail panel under the axis, with the traceback of an attempt that raised).
import {clear, duration, h, number, when} from "./dom.js";

const TICKS = 5;
let chosen = null;  // "pos/branch/attempt" of the attempt shown, kept across refreshes

function attemptsOf(steps) {
  return steps.filter((st) => st.kind === "step")
    .map((st) => ({st, tries: (st.history || [])}));
}

function span(rows) {
  const starts = [], ends = [];
  for (const {st, tries} of rows) {
    for (const a of tries) {
      starts.push(a.started_at);
      ends.push(a.ended_at ?? a.started_at);
    }
    if (st.next_attempt_at) ends.push(st.next_attempt_at);
  }
  if (!starts.length) return null;
  const t0 = Math.min(...starts), t1 = Math.max(...ends, t0 + 1);
  return {t0, t1, width: t1 - t0};
}

function key(st, a) {
  return `${st.pos}/${a.branch ?? ""}/${a.attempt}`;
}

function label(st, a) {
  const who = a.branch !== null && a.branch !== undefined ? ` (branch ${a.name ?? a.branch})` : "";
  return [`${st.name}${who}: attempt ${a.attempt}, ${a.outcome}`,
          `duration ${duration(a.duration_ms)} · fuel ${number(a.fuel)}`,
          a.error ? `error: ${a.error}` : null].filter(Boolean).join("\n");
}

function detail(st, a) {
  const rows = [["step", `${st.pos} ${st.name}`], ["attempt", a.attempt],
                ["branch", a.branch ?? "—"], ["outcome", a.outcome],
                ["started", when(a.started_at)], ["ended", when(a.ended_at)],
                ["duration", duration(a.duration_ms)], ["fuel", number(a.fuel)],
                ["memory grown", a.memory_grown === null ? "—" : `${number(a.memory_grown)} B`],
                ["error", a.error ?? "—"]];
  const facts = h("dl", {class: "detail", "data-testid": "attempt-detail"},
                  rows.map(([k, v]) => [h("dt", {}, k), h("dd", {dataset: {field: k}}, v)]));
  if (!a.traceback) return facts;
  // The attempt raised: its traceback, from the workflow's own code (core/tracebacks.py).
  return h("div", {}, facts,
           h("pre", {class: "traceback", "data-testid": "attempt-traceback"}, a.traceback));
}

function bar(st, a, s, panel) {
  const left = ((a.started_at - s.t0) / s.width) * 100;
  const wide = (((a.ended_at ?? a.started_at) - a.started_at) / s.width) * 100;
  const el = h("button", {
    type: "button", class: `bar outcome-${a.outcome}`, title: label(st, a),
    "data-testid": "attempt", dataset: {step: st.name, attempt: a.attempt, outcome: a.outcome},
    style: {left: `${Math.min(left, 99.4)}%`, width: `max(${wide}%, 6px)`},
  });
  el.addEventListener("click", () => {
    chosen = key(st, a);
    clear(panel, detail(st, a));
  });
  return el;
}

function axis(s) {
  const ticks = [];
  for (let i = 0; i <= TICKS; i++) {
    const at = s.t0 + (s.width * i) / TICKS;
    ticks.push(h("span", {class: "tick", style: {left: `${(100 * i) / TICKS}%`}},
                 i === 0 ? when(at).slice(11) : `+${duration(Math.round(at - s.t0))}`));
  }
  return h("div", {class: "axis"}, ticks);
}

function row(st, tries, s, panel) {
  const marks = tries.map((a) => bar(st, a, s, panel));
  if (st.next_attempt_at) {
    const left = ((st.next_attempt_at - s.t0) / s.width) * 100;
    marks.push(h("span", {class: "next", style: {left: `${left}%`},
                          title: `next attempt at ${when(st.next_attempt_at)}`}));
  }
  return h("div", {class: "lane", "data-testid": "lane", dataset: {step: st.name}},
           h("div", {class: "lane-name", title: st.error || ""},
             h("span", {class: "pos"}, st.pos), ` ${st.name} `,
             h("span", {class: `state state-${st.state}`}, st.state),
             h("span", {class: "muted"}, ` ×${st.attempts}`)),
           h("div", {class: "track"}, marks));
}

export function timeline(steps) {
  const rows = attemptsOf(steps);
  const s = span(rows);
  if (!s) return h("p", {class: "muted", id: "timeline"}, "No attempts recorded yet.");
  const panel = h("div", {class: "attempt-panel", id: "attempt-panel"},
                  h("p", {class: "muted"}, "Click an attempt for its detail."));
  for (const {st, tries} of rows) {
    const a = tries.find((t) => key(st, t) === chosen);
    if (a) clear(panel, detail(st, a));
  }
  return h("div", {id: "timeline"},
           h("div", {class: "lanes"}, rows.map(({st, tries}) => row(st, tries, s, panel)),
             h("div", {class: "lane axis-lane"}, h("div", {class: "lane-name muted"}, "host clock"),
               axis(s))),
           panel);
}
