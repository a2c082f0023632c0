// Small helpers for the views: making elements, and showing times, sizes and values.

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

export function when(ms) {
  if (ms === null || ms === undefined) return "—";
  const d = new Date(ms);
  return d.toISOString().replace("T", " ").replace("Z", "").slice(0, 23);
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
