// The classes the host serves, with their access, whether they are workflow classes,
// and how many actors each has (from the host's index).
import {clear, consoleUrl, h, number, stateBadge, table} from "./dom.js";
import {get} from "./api.js";

// A workflow class's counts by state, each a link to its instances in that state.
function states(c) {
  return Object.entries(c.states || {}).map(([s, n]) => h("a", {
    href: consoleUrl("class", {cls: c.name, status: s}), class: "state-count",
    "data-testid": "state-count", dataset: {state: s}}, stateBadge(s), ` ${number(n)}`));
}

function row(c) {
  return h("tr", {"data-testid": "class-row", dataset: {cls: c.name}},
           h("td", {}, h("a", {href: consoleUrl("class", {cls: c.name})}, c.name)),
           h("td", {}, c.workflow ? "workflow" : "actor"),
           h("td", {}, c.access),
           h("td", {class: "num"}, number(c.actors)),
           h("td", {}, states(c)));
}

export async function render(root) {
  const doc = await get("classes");
  clear(root, h("h1", {}, "Classes"),
        table(["class", "kind", "access", "actors", "by state"], doc.classes.map(row),
              {id: "classes", class: "grid"}));
}

export const refresh = render;
