// Drawing the timeline (timeline.js makes its lanes): the scale of its axis, the axis with
// ticks that fit its width, the legend, a lane's element with its items, and the detail
// of the item chosen, kept across refreshes.
import {clear, h, ticksOf, when} from "./dom.js";

let chosen = null;  // the key of the item whose detail is shown, kept across refreshes
// A planned time (a wake, a deadline, a next attempt) more than FAR spans of what has
// happened past its end stays off the axis, or a day's deadline would squeeze seconds
// into a pixel: its item stops at the end, with an arrow, and its title says when.
const FAR = 3;
const MIN_SPAN_MS = 10;
const clock = (ms) => when(ms).slice(11);  // "04:11:08.919Z"; titles have the date

export function scaleOf(lanes, ctx) {
  let t0 = Infinity, t1 = -Infinity;
  const planned = [];
  for (const it of lanes.flatMap((l) => l.items)) {
    if (it.planned) planned.push(it.to ?? it.from);
    else [t0, t1] = [Math.min(t0, it.from), Math.max(t1, it.to ?? it.from)];
  }
  if (t0 === Infinity) return null;
  t1 = Math.max(t1, ctx.now);
  const reach = t1 + FAR * Math.max(t1 - t0, 1000);
  for (const t of planned) if (t <= reach) t1 = Math.max(t1, t);
  t1 = Math.max(t1, t0 + MIN_SPAN_MS);
  return {t0, t1, width: t1 - t0, pct: (t) => ((Math.min(t, t1) - t0) / (t1 - t0)) * 100};
}

// Calls draw(px) with el's width once it is laid out and whenever the width changes, until
// el leaves the page (a refresh draws the timeline anew).
function onWidth(el, draw) {
  let px = 0;
  const watch = new ResizeObserver(([entry]) => {
    if (!el.isConnected) watch.disconnect();
    else if (entry.contentRect.width > 0 && entry.contentRect.width !== px) {
      px = entry.contentRect.width;
      draw(px);
    }
  });
  watch.observe(el);
}

// The axis's ticks fit its width (dom.js's ticksOf), drawn again whenever it changes.
export function axis(s) {
  const el = h("div", {class: "axis", "data-testid": "axis"});
  const draw = (px) => clear(el, ticksOf(s.width, px).map(({x, text}) => h("span", {
    class: `tick${x ? "" : " tick-start"}${x * px > px - 40 ? " tick-end" : ""}`,
    "data-testid": "tick", style: {left: `${x * 100}%`}}, text)));
  draw(600);  // until it is laid out
  onWidth(el, draw);
  return h("div", {class: "lane axis-lane"},
           h("div", {class: "lane-name muted", title: when(s.t0)}, "host clock (UTC) from ",
             h("span", {"data-testid": "axis-start"}, clock(s.t0))), el);
}

const LEGEND = [["bar outcome-returned", "attempt returned"], ["bar outcome-failed", "failed"],
                ["bar outcome-timed-out", "timed out"], ["bar outcome-cut", "cut"],
                ["bar outcome-failed earlier", "before a restart or a rescue"],
                ["next", "next attempt"], ["span group", "group"], ["span sleep", "sleep"],
                ["span wait", "wait"], ["span update", "update, taken to its handler's end"],
                ["span settled", "branch, settled by the group's end"],
                ["span planned", "until its wake time or deadline"],
                ["span state-ended", "ended with the instance"], ["mark took", "event taken"],
                ["mark", "emit, recorded value"], ["mark op", "operator's move"]];

export function legend() {
  return h("ul", {class: "legend", "data-testid": "legend"},
           LEGEND.map(([cls, text]) => h("li", {}, h("span", {class: `swatch ${cls}`}), text)));
}

function detail(panel, it) {
  const attempt = it.testid === "attempt" || it.testid === "earlier-attempt";
  const rows = h("dl", {class: "detail", "data-testid": attempt ? "attempt-detail" : "item-detail"},
                 it.rows.map(([k, v]) => [h("dt", {}, k), h("dd", {dataset: {field: k}}, v)]));
  // An attempt that raised: its traceback, from the workflow's own code (core/tracebacks.py).
  clear(panel, rows, it.traceback
    ? h("pre", {class: "traceback", "data-testid": "attempt-traceback"}, it.traceback) : null);
}

function itemEl(it, s, panel) {
  const left = Math.min(s.pct(it.from), 99.4), to = it.to ?? null;
  const style = to === null ? {left: `${left}%`}
    : {left: `${left}%`, width: `max(${s.pct(to) - left}%, 6px)`};
  const el = h("button", {type: "button", class: `${it.cls}${(to ?? it.from) > s.t1 ? " beyond" : ""}`,
                          title: it.title, "data-testid": it.testid, dataset: it.data, style});
  el.addEventListener("click", () => {
    chosen = it.key;
    detail(panel, it);
  });
  return el;
}

// Items close in time would cover each other (a bar is at least 6px wide, a mark 11px), and
// one covered could not be clicked: an item that would leave less than SHOWN_PX of one
// before it in view goes down to the next row, and the track grows to hold its rows. Later
// items are drawn over earlier ones, so an item placed is whole; only earlier ones shrink.
const ROW_PX = 18, SHOWN_PX = 5;

function shownBeside(l, r) {  // what of [pl, pr] an item on [l, r] leaves in view
  return ([pl, pr]) => (r <= pl || l >= pr ? pr - pl : Math.max(l - pl, pr - r, 0));
}

function narrowed(l, r) {  // [pl, pr] less its widest part that [l, r] covers
  return ([pl, pr]) => (r <= pl || l >= pr ? [pl, pr]
    : l - pl >= pr - r ? [pl, Math.max(pl, l)] : [Math.min(r, pr), pr]);
}

function stack(track) {
  const rows = [];  // each row: the parts in view of the items placed in it
  for (const el of track.children) {
    const l = el.offsetLeft, r = l + Math.max(el.offsetWidth, 2);
    let row = rows.findIndex((placed) => placed.every((p) => shownBeside(l, r)(p) >= SHOWN_PX));
    if (row < 0) row = rows.push([]) - 1;
    rows[row] = [...rows[row].map(narrowed(l, r)), [l, r]];
    el.style.marginTop = row ? `${row * ROW_PX}px` : "";
  }
  track.style.height = `${Math.max(rows.length, 1) * ROW_PX}px`;
}

export function laneEl(l, s, panel) {
  const track = h("div", {class: "track"}, l.items.map((it) => itemEl(it, s, panel)));
  onWidth(track, () => stack(track));
  return h("div", {class: `lane depth-${l.depth} kind-${l.kind}`,
                   "data-testid": l.depth ? "branch" : "lane",
                   dataset: {step: l.name, kind: l.kind, state: l.state, branch: l.branch}},
           h("div", {class: "lane-name", title: [l.name, l.note, l.title].filter(Boolean).join("\n")},
             h("div", {}, h("span", {class: "pos"}, l.pos), " ", l.label, " ",
               l.state ? h("span", {class: `state state-${l.state}`}, l.state) : null, " ",
               h("span", {class: "tag"}, l.tag)),
             l.note ? h("div", {class: "lane-note", "data-testid": "note"}, l.note) : null),
           track);
}

// The panel under the axis, showing the detail of the item chosen before, if it is still
// drawn.
export function panelFor(lanes) {
  const panel = h("div", {class: "attempt-panel", id: "attempt-panel"},
                  h("p", {class: "muted"}, "Click an attempt, a span or a mark for its detail."));
  for (const it of lanes.flatMap((l) => l.items)) if (it.key === chosen) detail(panel, it);
  return panel;
}
