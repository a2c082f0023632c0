// Small helpers for the views: making elements, and showing times, sizes, states and the
// values a workflow recorded.

// h("a", {href: "/x", class: "y"}, "text", child, ...): an element. Attributes that
// start with "on" are listeners, "style" takes a map of CSS properties; null and false
// children are left out.
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else if (k === "dataset") Object.assign(el.dataset, v);
    else if (k === "style") Object.assign(el.style, v);  // not an attribute: CSP allows it
    else el.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

export function clear(el, ...children) {
  el.replaceChildren(...children.flat(Infinity).filter((c) => c !== null && c !== false));
}

// A time of the host's clock, in UTC and saying so ("2026-12-07 04:11:08.919Z"), as
// the CLI prints times: the browser's zone may not be the server's, nor the operator's.
export function when(ms) {
  if (ms === null || ms === undefined) return "—";
  return new Date(ms).toISOString().replace("T", " ").slice(0, 23) + "Z";
}

export function duration(ms) {
  if (ms === null || ms === undefined) return "—";
  if (ms < 1000) return `${ms} ms`;
  const s = ms / 1000;
  if (s < 120) return `${s.toFixed(s < 10 ? 2 : 1)} s`;
  const m = s / 60;
  if (m < 120) return `${m.toFixed(1)} min`;
  const hr = m / 60;
  return hr < 48 ? `${hr.toFixed(1)} h` : `${(hr / 24).toFixed(1)} d`;
}

export function number(n) {
  return n === null || n === undefined ? "—" : Number(n).toLocaleString("en");
}

export function json(v) {
  return v === undefined ? "—" : JSON.stringify(v, null, 2);
}

export function stateBadge(state) {
  return h("span", {class: `state state-${state || "none"}`, "data-testid": "state"},
           state || "—");
}

export function consoleUrl(view, params) {
  const q = new URLSearchParams(params);
  return `/_wk/console/${view}${q.toString() ? "?" + q : ""}`;
}

export function table(headers, rows, attrs = {}) {
  return h("table", attrs,
           h("thead", {}, h("tr", {}, headers.map((t) => h("th", {}, t)))),
           h("tbody", {}, rows));
}

// -- states ------------------------------------------------------------------------------

const FINISHED = new Set(["completed", "failed", "cancelled", "terminated"]);
const PENDING = new Set(["waiting", "sleeping", "retrying", "open"]);

// A position's state as the views show it. The journal keeps a pending entry (a wait's
// "waiting") as it was when an operator ended the instance (terminate, cancel): it will
// never move on, so a pending position of a finished instance is "ended".
export function positionState(st, status) {
  return PENDING.has(st.state) && FINISHED.has(status?.state) ? "ended" : st.state;
}

export function finished(status) {
  return FINISHED.has(status?.state);
}

// -- recorded values ---------------------------------------------------------------------
// The steps route gives a position's value as the journal stores it (JSON text cut at
// the page's value_bytes; core/values.py): a string that starts with U+0000 is a tag
// ("\0b" + base64: bytes; "\0s" + s: a string that began with U+0000), and Python's json
// writes NaN and ±Infinity, which JSON.parse refuses. They are decoded here, in the view,
// so that neither the guest nor the host's API changes for it.

class Shown {  // a value JSON has no text for: shown as Python writes it
  constructor(text) { this.text = text; }
}

const NONFINITE = /"(?:[^"\\]|\\.)*"|-?Infinity|NaN/g;  // a string, or a bare non-finite
const SPECIAL = {"NaN": "nan", "Infinity": "inf", "-Infinity": "-inf"};
const ESCAPES = {9: "\\t", 10: "\\n", 13: "\\r", 39: "\\'", 92: "\\\\"};

function bytesText(b64) {  // Python's repr of bytes: b'\x00B\xff'
  let bin;
  try {
    bin = atob(b64);
  } catch {
    return `<bytes, base64 ${b64}>`;
  }
  const out = [...bin].map((c) => {
    const n = c.charCodeAt(0);
    if (ESCAPES[n]) return ESCAPES[n];
    return n >= 0x20 && n < 0x7f ? c : `\\x${n.toString(16).padStart(2, "0")}`;
  });
  return `b'${out.join("")}'`;
}

function revive(key, v, context) {
  // An int past 2**53 as recorded, not rounded (context.source: Chromium 114 and later).
  if (typeof v === "number" && Number.isInteger(v) && !Number.isSafeInteger(v)
      && context?.source) return new Shown(context.source);
  if (typeof v !== "string" || v[0] !== "\u0000") return v;
  const body = v.slice(2);
  if (v[1] === "s") return body;
  if (v[1] === "b") return new Shown(bytesText(body));
  if (v[1] === "f") return new Shown(SPECIAL[body]);  // our own tag: see decode
  return v;
}

// Stored JSON text -> {value}, or null where it does not parse (cut short).
export function decode(text) {
  if (text === null || text === undefined) return null;
  // A bare NaN or Infinity becomes a string tagged "\0f", which no stored value holds
  // (values.py tags only "b" and "s").
  const json = text.replace(NONFINITE, (m) => (m[0] === '"' ? m : `"\\u0000f${m}"`));
  try {
    return {value: JSON.parse(json, revive)};
  } catch {
    return null;
  }
}

// A decoded value as compact JSON (as the journal and the CLI show it), with bytes,
// nan, inf and big ints in Python's spelling.
export function show(v) {
  if (v instanceof Shown) return v.text;
  if (Array.isArray(v)) return `[${v.map(show).join(",")}]`;
  if (v && typeof v === "object") {
    return `{${Object.entries(v).map(([k, x]) => `${JSON.stringify(k)}:${show(x)}`).join(",")}}`;
  }
  return v === undefined ? "" : JSON.stringify(v);
}

// A group (wf.all, all_settled, any) and its branches, from its one position: the names
// from its recorded name ("all(a,b)", unless the code named the group) and its step
// branches' attempts; each branch's kind and outcome from the value, [decider,
// [[kind letter, result] or null, ...]] (core/kinds.py), once the group has settled. The
// steps route tells no more of an open group's sleeps, waits and children.
const LETTERS = {S: ["step", "done"], T: ["step", "done"], X: ["step", "failed"],
                 Z: ["sleep", "done"], E: ["wait", "done"], F: ["wait", "done"],
                 O: ["wait", "timed-out"]};

export function groupOf(st) {
  const sig = /^(all|all_settled|any)\((.*)\)$/s.exec(st.name || "");
  const got = decode(st.value)?.value;
  const [decider, outcomes] = Array.isArray(got) && Array.isArray(got[1]) ? got : [null, null];
  const names = sig ? sig[2].split(",") : [];
  const tries = st.history || [];
  const n = outcomes ? outcomes.length
    : Math.max(names.length, ...tries.map((a) => (a.branch ?? -1) + 1));
  const branches = [];
  for (let i = 0; i < n; i++) {
    const mine = tries.filter((a) => a.branch === i);
    const name = mine.find((a) => a.name)?.name
      ?? (names.length === n ? names[i] : `branch ${i}`);
    branches.push(branchOf(i, name, mine, outcomes?.[i], st.state));
  }
  return {call: sig ? sig[1] : "group", decider, branches, settled: outcomes !== null};
}

function branchOf(idx, name, tries, out, groupState) {
  const [kind, state] = out ? LETTERS[out[0]] || [out[0], "done"]
    : [tries.length ? "step" : "branch", groupState === "open" ? "open" : "abandoned"];
  const b = {idx, name, tries, state, value: undefined, error: null, attempts: tries.length,
             kind: name.startsWith("child ") ? "child" : kind};
  if (out && out[0] === "X" && Array.isArray(out[1])) [b.error, b.attempts] = out[1];
  else if (out) b.value = out[1];
  return b;
}

// What a branch ended with, for a cell or a note.
export function branchValue(b) {
  if (b.state === "failed") return `✗ ${b.error}`;
  return b.value === undefined ? "—" : show(b.value);
}

// A position's recorded value as the workflow got it back: a step's result, a wait's
// payload, a group's results in the order given (any: the winner's), the time wf.now()
// took; "" where none is recorded.
export function positionValue(st) {
  if (st.value === null || st.value === undefined) return "";
  const got = decode(st.value);
  if (!got) return `${st.value}… (cut short: as stored)`;
  const v = got.value;
  if (st.kind === "group") {
    const g = groupOf(st);
    if (g.call === "any" && g.decider !== null) {
      const b = g.branches[g.decider];
      return `won by ${b.name}: ${branchValue(b)}`;
    }
    return `[${g.branches.map(branchValue).join(", ")}]`;
  }
  if (st.state === "failed" && Array.isArray(v)) return `failed after ${v[1]} attempt(s)`;
  if (st.kind === "now" && typeof v === "number") return when(v);
  return show(v);
}

// A child's positions are named "child CLS/ID" (the steps route's name for them): its
// class and id, or null.
export function childOf(name) {
  const m = /^child ([^/]+)\/(.+)$/s.exec(name || "");
  return m ? {cls: m[1], id: m[2]} : null;
}

// -- a time axis -------------------------------------------------------------------------
// Ticks at a round step, as many as `px` pixels have room for (TICK_PX each, so no two
// labels meet), each an offset from the start in the unit duration() would give the
// whole span, with as many decimals as the step needs: no two labels say the same.
const TICK_PX = 110;
const NICE_MS = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1e3, 2e3, 5e3, 1e4, 15e3, 3e4, 6e4, 12e4,
                 3e5, 6e5, 9e5, 18e5, 36e5, 72e5, 108e5, 216e5, 432e5, 864e5, 1728e5, 6048e5];
const UNITS = [[1, "ms", 1e3], [1e3, "s", 12e4], [6e4, "min", 72e5], [36e5, "h", 1728e5],
               [864e5, "d", Infinity]];

export function ticksOf(width, px) {
  const most = Math.max(1, Math.floor(px / TICK_PX));
  const step = NICE_MS.find((ms) => width / ms <= most) ?? Math.ceil(width / most / 6048e5) * 6048e5;
  const [unit, name] = UNITS.find(([, , below]) => width < below);
  const q = step / unit;
  let d = 0;
  while (d < 3 && Math.abs(Math.round(q * 10 ** d) - q * 10 ** d) > 1e-9) d++;
  const out = [];
  for (let k = 0; k * step <= width; k++) {
    out.push({x: (k * step) / width, text: k ? `+${Number((k * q).toFixed(d))} ${name}` : "0"});
  }
  return out;
}
