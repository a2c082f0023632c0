// The timeline of an instance: a lane per position, in the order the workflow reached
// them, on one time axis (the host's clock). A step's attempts are bars coloured by
// their outcome; a group's branches are lanes under it; a sleep and a wait are spans to
// their end, or while they last dashed on to their wake time or deadline; emits and the
// recorded helpers are marks; an update is a span from where the workflow took it to
// its handler's end; so are an earlier run's emitted events (continue-as-new)
// and the operator's moves. The attempts a restart from a step took from a position
// (the steps route's `earlier`) are bars too, hatched, in its lane before its own.
// Hovering an item shows its gist, a click all of it.
//
// Only what the steps route records is drawn: a position begins when the one before it
// ended (that entry's updated_at), a step's attempts carry their own times, and a
// group's sleeps and waits have none but the group's (dom.js's groupOf). "Now" is the
// latest host time the page has seen, not the browser's clock: the host's may differ
// (a test's fake clock, a skewed machine).
import {branchValue, childOf, consoleUrl, decode, duration, finished, groupOf, h, number,
        positionState, positionValue, show, when} from "./dom.js";
import {axis, laneEl, legend, panelFor, scaleOf} from "./timeline_draw.js";

const PENDING = new Set(["waiting", "sleeping", "retrying", "open"]);
const clock = (ms) => when(ms).slice(11);  // "04:11:08.919Z"; titles have the date

// -- what happened, and when -------------------------------------------------------------

function contextOf(doc) {
  const s = doc.status;
  let now = s.updated_at ?? 0;
  for (const st of doc.steps) {
    now = Math.max(now, st.updated_at ?? 0);
    for (const a of st.history || []) now = Math.max(now, a.ended_at ?? a.started_at);
  }
  return {status: s, now, end: finished(s) ? (s.finished_at ?? s.updated_at) : null,
          emitted: new Map((doc.events?.events || []).map((e) => [e.offset, e])),
          updateEnds: new Map(doc.steps.filter((st) => st.kind === "update" && st.state === "done")
                                .map((st) => [valueOf(st)?.[0], st]))};
}

const valueOf = (st) => decode(st.value ?? "")?.value;

function began(steps, i, ctx) {
  const st = steps[i], prev = steps[i - 1];
  if (st.kind === "step" && st.history?.length) return st.history[0].started_at;
  if (prev && prev.pos === st.pos - 1) return prev.updated_at;
  return st.pos === 0 && (ctx.status.runs ?? 1) === 1 ? ctx.status.created_at : st.updated_at;
}

function ended(st, ctx) {
  const state = positionState(st, ctx.status);
  return state === "ended" ? ctx.end : PENDING.has(state) ? ctx.now : st.updated_at;
}

// -- a lane's items: an attempt's bar, a span, a mark; each with a title and a detail ----

function attemptItem(st, a) {
  const who = a.branch === null || a.branch === undefined ? "" : ` (branch ${a.name ?? a.branch})`;
  const title = [`${st.name}${who}: attempt ${a.attempt}, ${a.outcome}`,
                 `duration ${duration(a.duration_ms)} · fuel ${number(a.fuel)}`,
                 a.error ? `error: ${a.error}` : null].filter(Boolean).join("\n");
  const rows = [["step", `${st.pos} ${st.name}`], ["attempt", a.attempt],
                ["branch", a.branch ?? "—"], ["outcome", a.outcome],
                ["started", when(a.started_at)], ["ended", when(a.ended_at)],
                ["duration", duration(a.duration_ms)], ["fuel", number(a.fuel)],
                ["memory grown", a.memory_grown === null ? "—" : `${number(a.memory_grown)} B`],
                ["error", a.error ?? "—"]];
  return {from: a.started_at, to: a.ended_at ?? a.started_at, cls: `bar outcome-${a.outcome}`,
          testid: "attempt", key: `${st.pos}/${a.branch ?? ""}/${a.attempt}`, title, rows,
          traceback: a.traceback, data: {step: a.name ?? st.name, attempt: a.attempt,
                                         outcome: a.outcome}};
}

// An attempt a restart took away: drawn as the attempt was, hatched, and said so.
function earlierItem(st, a) {
  const it = attemptItem(st, a), restart = `before the ${a.move} at ${when(a.moved_at)}`;
  return {...it, cls: `${it.cls} earlier`, testid: "earlier-attempt",
          key: `${it.key}/restart/${a.moved_at}`, title: `${it.title}\n(${restart})`,
          rows: [...it.rows, ["restart", restart]],
          data: {...it.data, movedAt: a.moved_at}};
}

function spanItem(key, from, to, cls, title, rows, planned = false) {
  return {from, to, cls: `span ${cls}`, testid: "span", key, title, rows, planned,
          data: {kind: cls.split(" ")[0]}};
}

function markItem(key, at, cls, title, rows, planned = false) {
  return {from: at, to: null, cls, testid: "mark", key, title, rows, planned};
}

// A position's span from `b` to `e`; while it lasts, dashed on to its planned end.
function spanned(st, b, e, cls, title, rows, planned, ctx) {
  const state = positionState(st, ctx.status);
  const out = [spanItem(`${st.pos}/${cls}`, b, e, `${cls} state-${state}`, title, rows)];
  if (PENDING.has(state) && planned) {
    out.push(spanItem(`${st.pos}/planned`, ctx.now, planned, `${cls} planned`,
                      `${title}\n(planned: ${when(planned)})`, rows, true));
  }
  return out;
}

function facts(st, b, e, ctx, more = []) {
  const state = positionState(st, ctx.status);
  return [["position", `${st.pos} ${st.name}`], ["kind", st.kind], ["state", state],
          ["from", when(b)], ["to", PENDING.has(state) ? `${when(e)} (so far)` : when(e)],
          ["lasted", duration(e - b)], ...more];
}

// -- a lane per position (a group's: its own, then one per branch) ----------------------

function label(name) {  // a child's: a link to its page
  const child = childOf(name);
  return child ? h("a", {href: consoleUrl("instance", child), "data-testid": "child-link"}, name)
    : name;
}

function laneOf(st, ctx, note, items) {
  const undoes = st.name?.startsWith("compensate:");  // saga/: a step named so
  const tag = childOf(st.name) ? `child ${st.kind}` : undoes ? "compensation" : st.kind;
  return {pos: st.pos, name: st.name, kind: st.kind, state: positionState(st, ctx.status), tag,
          depth: 0, label: label(st.name), note, items, title: st.error || ""};
}

function stepLane(st, b, e, ctx) {
  const items = (st.history || []).map((a) => attemptItem(st, a));
  const state = positionState(st, ctx.status);
  if (!items.length) items.push(markItem(`${st.pos}/at`, e, "mark", st.name, facts(st, b, e, ctx)));
  if (st.next_attempt_at && state === "retrying") {
    items.push(markItem(`${st.pos}/next`, st.next_attempt_at, "next",
                        `next attempt at ${when(st.next_attempt_at)}`,
                        [["next attempt", when(st.next_attempt_at)]], true));
  }
  const more = st.history_more ? ` (+${st.history_more} earlier)` : "";
  const got = state === "done" ? `→ ${positionValue(st)}` : st.error ? `✗ ${st.error}` : "";
  return [laneOf(st, ctx, `×${st.attempts ?? 0}${more} ${got}`, items)];
}

function sleepLane(st, b, e, ctx) {
  const rows = facts(st, b, e, ctx, [["wakes at", when(st.wake_at)]]);
  return [laneOf(st, ctx, `until ${clock(st.wake_at)}`, spanned(
    st, b, e, "sleep", `sleep ${st.name}: wakes at ${when(st.wake_at)}`, rows, st.wake_at, ctx))];
}

function waitLane(st, b, e, ctx) {
  const state = positionState(st, ctx.status), value = positionValue(st);
  const note = {done: `took ${value}`, "timed-out": `timed out at ${clock(e)}`,
                ended: `ended: the instance was ${ctx.status.state}`}[state]
    ?? (st.wake_at ? `deadline ${clock(st.wake_at)}` : "no deadline");
  const rows = facts(st, b, e, ctx, [["event", st.name], ["deadline", when(st.wake_at)],
                                     ["payload", state === "done" ? value : "—"]]);
  const items = spanned(st, b, e, "wait", `wait for ${st.name}: ${note}`, rows, st.wake_at, ctx);
  if (state === "done") items.push(markItem(`${st.pos}/took`, e, "mark took", `took ${value}`, rows));
  return [laneOf(st, ctx, note, items)];
}

function groupLanes(st, b, e, ctx) {
  const g = groupOf(st), value = positionValue(st), n = g.branches.length;
  const rows = facts(st, b, e, ctx, [["call", g.call], ["branches", n], ["value", value || "—"]]);
  const lane = laneOf(st, ctx, `${g.call} of ${n} ${value}`,
                      spanned(st, b, e, "group", `${st.name}: ${value}`, rows, null, ctx));
  return [lane, ...g.branches.map((br) => branchLane(st, br, b, e, ctx))];
}

// A branch: a step's attempts; a sleep's, a wait's or a child's span to the group's end
// (the steps route keeps a branch's own end only in its step's attempts), hatched.
function branchLane(st, br, b, e, ctx) {
  const state = positionState({state: br.state}, ctx.status), outcome = branchValue(br);
  const rows = [["group", `${st.pos} ${st.name}`], ["branch", `${br.idx} ${br.name}`],
                ["kind", br.kind], ["state", state], ["from", when(b)],
                [PENDING.has(state) ? "so far" : "settled by", when(e)], ["value", outcome]];
  const items = br.tries.length ? br.tries.map((a) => attemptItem(st, a))
    : [spanItem(`${st.pos}/${br.idx}`, b, e, `${br.kind} settled state-${state}`,
                `${br.name} (${br.kind}): ${state}, by ${when(e)}\n${outcome}`, rows)];
  return {pos: "", name: br.name, branch: br.name, kind: br.kind, state, depth: 1,
          tag: br.kind === "branch" ? "branch" : `${br.kind} branch`, label: label(br.name),
          note: `${br.tries.length ? `×${br.attempts} ` : ""}${outcome}`, items,
          title: br.error || ""};
}

// An emit (its payload, from the stream: its event_seq is its offset) or a recorded
// helper's value (now, random, uuid, patched), or a kind this page does not know.
function markLane(st, b, e, ctx) {
  const emitted = st.kind === "emit" ? ctx.emitted.get(st.event_seq) : null;
  const value = emitted ? show(emitted.payload) : positionValue(st);
  const rows = facts(st, e, e, ctx, [["value", value || "—"]]);
  return [laneOf(st, ctx, value, [markItem(`${st.pos}/at`, e, `mark kind-${st.kind}`,
                                           `${st.kind} ${st.name} at ${when(e)}: ${value}`, rows)])];
}

// An update (updates/taking.py): the position where the workflow took it (state
// "taken", value [id, arg, tagged, displaced]) and its handler's end, later (state
// "done", value [id, ok, answer or error, tagged]), drawn as one lane: a span from the
// taking to the end, or on while its handler runs. The end has no lane of its own.
function updateLanes(st, b, e, ctx) {
  if (st.state !== "taken") return [];
  const [id, arg] = valueOf(st) ?? [];
  const end = ctx.updateEnds.get(id), out = end ? valueOf(end) : null;
  const note = !end ? (finished(ctx.status) ? "its handler did not end" : "its handler runs")
    : out?.[1] ? `→ ${show(out[2])}` : `✗ ${out?.[2]}`;
  const to = end ? end.updated_at : (ctx.end ?? ctx.now);
  const rows = [["position", `${st.pos} update ${st.name}`], ["update id", id],
                ["arg", show(arg)], ["taken at", when(st.updated_at)],
                ["ended at", end ? `${when(end.updated_at)} (position ${end.pos})` : "—"],
                ["outcome", note]];
  const state = end ? (out?.[1] ? "done" : "failed") : "running";
  return [laneOf(st, ctx, note, [spanItem(`${st.pos}/update`, st.updated_at, to,
                                          `update state-${state}`,
                                          `update ${st.name} (${id}): ${note}`, rows)])];
}

const LANES = {step: stepLane, sleep: sleepLane, wait: waitLane, group: groupLanes,
               update: updateLanes};

function positionLanes(steps, ctx) {
  return steps.flatMap((st, i) => withEarlier(st, (LANES[st.kind] || markLane)(
    st, began(steps, i, ctx), ended(st, ctx), ctx)));
}

// A position's lane (a group's own) with the attempts restarts and rescues took from it,
// and their count first in its note: "×3 before the restart · ×1 → ...".
function withEarlier(st, [lane, ...rest]) {
  if (!lane) return [];  // a position drawn in another's lane (an update's end)
  const before = (st.earlier || []).map((a) => earlierItem(st, a));
  if (!before.length) return [lane, ...rest];
  const n = before.length + (st.earlier_more ?? 0);
  const moves = new Set(st.earlier.map((a) => a.moved_at)).size;
  const which = moves > 1 ? `before ${moves} moves` : `before the ${st.earlier[0].move}`;
  return [{...lane, items: [...before, ...lane.items], note: `×${n} ${which} · ${lane.note}`},
          ...rest];
}

// The runs before a continue-as-new: their positions went with it, their emits stay.
function earlierRuns(doc, ctx) {
  const runs = Map.groupBy((doc.events?.events || []).filter((e) => e.run_id !== ctx.status.run_id),
                           (e) => e.run_id);
  return [...runs].map(([run, es]) => ({
    pos: "", name: `run ${run}`, kind: "run", state: "", tag: "earlier run", depth: 0,
    label: `run ${run}`, note: "continued as new: its emitted events", title: "",
    items: es.map((e) => markItem(`run/${e.offset}`, e.at, "mark kind-emit",
      `${e.name} (run ${run}) at ${when(e.at)}: ${show(e.payload)}`,
      [["run", run], ["event", `${e.offset} ${e.name}`], ["at", when(e.at)],
       ["payload", show(e.payload)]])),
  }));
}

// The audit log's entries, newest first: a restart or a terminate explains the lanes.
function operatorLane(entries) {
  if (!entries.length) return [];
  const items = entries.map((e) => markItem(`op/${e.at}/${e.action}`, e.at,
    `mark op${e.status >= 300 ? " refused" : ""}`,
    `${e.action} at ${when(e.at)}: ${e.status} ${e.result ?? ""} ${e.note ?? ""}`,
    [["move", e.action], ["at", when(e.at)], ["status", e.status], ["result", e.result ?? "—"],
     ["state after", e.state ?? "—"], ["note", e.note ?? "—"]]));
  return [{pos: "", name: "operator", kind: "operator", state: "", tag: "audit log", depth: 0,
           label: "operator's moves", note: entries.map((e) => e.action).reverse().join(", "),
           title: "", items}];
}

function runNote(status) {
  if ((status.runs ?? 1) < 2) return null;
  return h("p", {class: "muted", "data-testid": "run-note"},
           `Run ${status.runs} (${status.run_id}), continued as new from run `,
           h("code", {}, status.previous_run_id), ": the positions are this run's; the ",
           "earlier runs' emitted events are lanes of their own.");
}

// `entries`: the instance's audit entries, newest first (instance.js reads them).
export function timeline(doc, entries = []) {
  const ctx = contextOf(doc);
  const lanes = [...earlierRuns(doc, ctx), ...positionLanes(doc.steps, ctx),
                 ...operatorLane(entries)];
  const s = scaleOf(lanes, ctx);
  if (!s) return h("p", {class: "muted", id: "timeline"}, "Nothing recorded yet.");
  const panel = panelFor(lanes);
  return h("div", {id: "timeline"}, runNote(ctx.status), legend(),
           h("div", {class: "lanes"}, lanes.map((l) => laneEl(l, s, panel)), axis(s)), panel);
}
