// The schedules of the class `wkhost serve --schedules` serves: each one's target, cron,
// state, next fires and counts. The list comes from the host's index (no event); a
// schedule is described (an event in it) once, then again only when its database has
// changed (its version, as the instance page's).
import {clear, consoleUrl, h, number, table, when} from "./dom.js";
import {get} from "./api.js";

const described = new Map();  // name -> the schedule's description, with its version

async function describe(list) {
  const wanted = list.schedules.filter((s) => described.get(s.name)?.version !== s.version
                                              || s.version === null);
  const docs = await Promise.all(wanted.map((s) => get("schedule", {id: s.name})
    .catch((e) => ({name: s.name, error: e.message}))));
  for (const d of docs) described.set(d.name, d);
  return list.schedules.map((s) => described.get(s.name));
}

function lastInstance(d) {
  if (!d.last_instance) return "—";
  return h("a", {href: consoleUrl("instance", {cls: d.target, id: d.last_instance})},
           d.last_instance);
}

function row(d) {
  if (d.error) {
    return h("tr", {"data-testid": "schedule-row", dataset: {name: d.name}},
             h("td", {}, d.name), h("td", {colspan: 7, class: "error"}, d.error));
  }
  return h("tr", {"data-testid": "schedule-row", dataset: {name: d.name}},
           h("td", {}, d.name), h("td", {}, d.target), h("td", {}, `${d.cron} (${d.tz})`),
           h("td", {"data-testid": "schedule-state"}, d.paused ? "paused" : "active"),
           h("td", {}, (d.next_fires || []).map(when).join(", ") || "—"),
           h("td", {}, lastInstance(d)),
           h("td", {class: "num"}, number(d.started)),
           h("td", {class: "num"}, `${number(d.skipped)} / ${number(d.missed)} / `
                                   + number(d.failed)));
}

function body(list, docs) {
  if (list.class === null) {
    return h("p", {class: "muted", id: "schedules-none"},
             "This host serves no schedule class (wkhost serve --schedules).");
  }
  return h("div", {id: "schedules-body"},
           docs.length
             ? table(["name", "target", "cron", "state", "next fires", "last instance",
                      "started", "skipped / missed / failed"], docs.map(row),
                     {id: "schedules", class: "grid"})
             : h("p", {class: "muted"}, `No schedule in ${list.class} yet `
                                        + "(wkhost schedule create ...)."),
           list.more ? h("p", {class: "muted"}, "Only the first 1,000 are shown.") : null);
}

export async function render(root) {
  const list = await get("schedules");
  clear(root, h("h1", {}, "Schedules"), body(list, await describe(list)));
}

export async function refresh(root) {
  const list = await get("schedules");
  const [, old] = root.children;
  old.replaceWith(body(list, await describe(list)));
}
